/*
 * cli/cmd_ablate.c -- `headscope ablate`: zero, mean or resample ablation of
 * every head, every layer's attention and every MLP over a prompt set
 * (tasks/ hs_ablate_run on the experiment engine): a table on stdout (or the
 * JSON with --json), and with --out DIR ablate.json and a bar figure of the
 * metric change.
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

static const char ABLATE_HELP[] =
    "usage: headscope ablate --model FILE --data FILE.jsonl [options]\n"
    "\n"
    "Ablates, one at a time, every head (its blocks.l.attn.hook_z), every\n"
    "layer's attention (blocks.l.hook_attn_out: all its heads and b_O, as\n"
    "TransformerLens names it) and every MLP (blocks.l.hook_mlp_out),\n"
    "and reports the metric and the accuracy (top-1 = answer) at each prompt's\n"
    "position, with their change from the clean run. The metric is the mean\n"
    "logit difference answer - wrong, or the mean answer logit when the set has\n"
    "no \"wrong\". Layers and heads count from 0. Components are named as in\n"
    "dla and inspect (TransformerLens' decompose_resid style): L0H1, L0_attn_out\n"
    "(layer 0's hook_attn_out, b_O included), L0_mlp_out.\n"
    "\n"
    "options:\n"
    "  --model PATH          a Hugging Face GPT-2 folder or a checkpoint (.safetensors)\n"
    CLI_VOCAB_HELP
    "  --data FILE           prompt set: JSONL, one {\"prompt\", \"answer\", ...} a line\n"
    "  --method M            zero | mean (default: the position-wise mean over the\n"
    "                        reference prompts) | resample (prompt i takes the value\n"
    "                        of reference prompt (i + n/2) mod n)\n"
    "  --ref FILE            reference prompt set for mean and resample (default:\n"
    "                        the prompts themselves; the same number of tokens)\n"
    "  --out DIR             write ablate.json and ablate_change.{png,svg,json}\n"
    "                        into DIR (created if missing; its parent must exist)\n"
    "  --json                print every number as JSON instead of the table\n"
    "  --threads N           worker threads, 0 = every CPU (default)\n"
    "\n"
    "Exit status: 0 ok, 1 user error, 2 usage error.\n";

int cmd_ablate(int argc, char **argv)
{
    enum { O_METHOD = 256, O_REF };
    static const struct option opts[] = {{"method", required_argument, 0, O_METHOD},
                                         {"ref", required_argument, 0, O_REF},
                                         CLI_HELP_OPT,
                                         CLI_EXP_LONGOPTS,
                                         {0, 0, 0, 0}};
    const char *C = "ablate", *ref_path = NULL;
    hs_ablate_method method = HS_ABLATE_MEAN;
    int c;
    cli_exp x;
    cli_exp_init(&x, C);
    cli_opts op = {.cmd = C, .help = ABLATE_HELP, .exp = &x};
    while ((c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END) {
        switch (c) {
        case CLI_OPT_EXIT: return op.status;
        case O_METHOD: {
            int k = -1;
            for (int i = 0; i < 3; i++)
                if (strcmp(optarg, hs_ablate_method_names[i]) == 0) k = i;
            if (k < 0) return cli_usage_error(C, "--method needs zero, mean or resample, got '%s'", optarg);
            method = (hs_ablate_method)k;
            break;
        }
        case O_REF: ref_path = optarg; break;
        }
    }
    if (cli_exp_check(&x, argc, argv, 0)) return 2;
    hs_error err = {0};
    int rc = 1;
    cJSON *j = NULL;
    hs_buf text = {0};
    hs_prompts ref = {0};
    hs_ablate_report r = {0};
    if (cli_exp_open(&x, 0)) goto done;
    if (ref_path && hs_prompts_load(ref_path, x.Ld.vocab, x.Ld.model->cfg.n_ctx, HS_PROMPTS_TEXT_ONLY, &ref, &err) != HS_OK) {
        rc = cli_error(C, &err);
        goto done;
    }
    if (hs_ablate_run(x.Ld.model, x.pool, &x.p, ref_path ? &ref : NULL, method, &r, &err) != HS_OK) {
        rc = cli_error(C, &err);
        goto done;
    }
    if ((j = hs_ablate_json(&r)) == NULL) {
        fprintf(stderr, "headscope %s: out of memory\n", C);
        goto done;
    }
    if (x.out && hs_ablate_figures(&r, &x.Ld.model->cfg, x.model, &x.od, &err) != HS_OK) {
        rc = cli_error(C, &err);
        goto done;
    }
    hs_ablate_summary(&r, &text);
    rc = cli_exp_finish(&x, j, "ablate", "every ablation number: the metric and accuracy with each head, each "
                                         "layer's attention and each MLP ablated, and their change", &text);
done:
    hs_buf_free(&text);
    cJSON_Delete(j);
    hs_ablate_report_free(&r);
    hs_prompts_free(&ref);
    cli_exp_close(&x);
    return rc;
}
