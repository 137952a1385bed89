/*
 * cli/cmd_dla.c -- `headscope dla`: direct logit attribution averaged over a
 * prompt set (tasks/ hs_dla_set_run on the experiment engine; the final
 * norm's scale frozen from each run): a table (or --json), and with --out
 * DIR dla.json and a bar figure.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "expout.h"
#include "figopts.h"
#include "util.h"

static const char DLA_HELP[] =
    "usage: headscope dla --model FILE --data FILE.jsonl [options]\n"
    "\n"
    "Direct logit attribution over a prompt set: each component's write into\n"
    "the residual stream (embeddings, every head's hook_result, every MLP,\n"
    "biases), through the final norm with its scale frozen from the prompt's own\n"
    "run (the norm is not recomputed per component: said in the JSON), dotted\n"
    "with W_U[:, answer] - W_U[:, wrong] (or W_U[:, answer] without \"wrong\"),\n"
    "at each prompt's position, averaged over the prompts. The components, the\n"
    "norm's bias term and b_U's sum to the logit difference (with --process tl,\n"
    "TransformerLens' processing moves the norm's bias into b_U). Components are\n"
    "named in TransformerLens' decompose_resid style, layer first: embed,\n"
    "pos_embed, L0H1, L0_b_O, L0_mlp_out, and ln_final_b for the norm's bias term.\n"
    "\n"
    "--by-position adds, per component and source position q, what the component\n"
    "writes at q read at the prompt's position (TransformerLens decompose_resid /\n"
    "stack_head_results with pos_slice = q, then apply_ln_to_stack and logit_attrs\n"
    "with the read position's frozen scale and its answer - wrong direction), the\n"
    "mean over the prompts. At the read position it is the attribution above; at\n"
    "other positions it does not sum to the logits (a write at q reaches them only\n"
    "through later attention; positions after a read position never do).\n"
    "\n"
    "options:\n"
    "  --model PATH          a Hugging Face GPT-2 folder or a checkpoint (.safetensors)\n"
    CLI_VOCAB_HELP
    "  --data FILE           prompt set: JSONL, one {\"prompt\", \"answer\", ...} a line\n"
    "  --out DIR             write dla.json and dla_bars.{png,svg,json} into DIR\n"
    "  --json                print every number as JSON instead of the table\n"
    "  --by-position         also every component at every source position (and,\n"
    "                        with --out, dla_by_position.{png,svg,json})\n"
    "  --threads N           worker threads, 0 = every CPU (default)\n"
    "\n"
    "Exit status: 0 ok, 1 user error, 2 usage error.\n";

int cmd_dla(int argc, char **argv)
{
    enum { O_BYPOS = 256 };
    static const struct option opts[] = {CLI_HELP_OPT,
                                         {"by-position", no_argument, 0, O_BYPOS},
                                         CLI_EXP_LONGOPTS,
                                         {0, 0, 0, 0}};
    const char *C = "dla";
    int c, by_pos = 0;
    cli_exp x;
    cli_exp_init(&x, C);
    cli_opts op = {.cmd = C, .help = DLA_HELP, .exp = &x};
    while ((c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END) {
        if (c == CLI_OPT_EXIT) return op.status;
        if (c == O_BYPOS) by_pos = 1;
    }
    if (cli_exp_check(&x, argc, argv, 0)) return 2;
    hs_error err = {0};
    int rc = 1;
    cJSON *j = NULL;
    hs_buf text = {0};
    hs_dla_set r = {0};
    if (cli_exp_open(&x, 0)) goto done;
    if (hs_dla_set_run(x.Ld.model, x.pool, &x.p, by_pos, &r, &err) != HS_OK) {
        rc = cli_error(C, &err);
        goto done;
    }
    if ((j = hs_dla_set_json(&r)) == NULL) {
        fprintf(stderr, "headscope %s: out of memory\n", C);
        goto done;
    }
    if (x.out && hs_dla_set_figures(&r, &x.Ld.model->cfg, x.model, &x.od, &err) != HS_OK) {
        rc = cli_error(C, &err);
        goto done;
    }
    hs_dla_set_summary(&r, &text);
    rc = cli_exp_finish(&x, j, "dla", "every component's mean direct logit attribution, the norm's bias term "
                                      "and the target they sum to", &text);
done:
    hs_buf_free(&text);
    cJSON_Delete(j);
    hs_dla_set_free(&r);
    cli_exp_close(&x);
    return rc;
}
