/*
 * cli/cmd_lens.c -- `headscope lens`: the logit lens per layer on a sentence
 * or a prompt set (tasks/ hs_lens_run on the experiment engine): a table on
 * stdout (or the JSON with --json), and with --out DIR lens.json and a
 * points x positions figure.
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

static const char LENS_HELP[] =
    "usage: headscope lens --model FILE (--data FILE.jsonl | --sentence S) [options]\n"
    "\n"
    "The logit lens: the model's output head applied to the residual stream\n"
    "before each layer (blocks.l.hook_resid_pre) and after the last\n"
    "(blocks.L-1.hook_resid_post, whose lens is the model's own logits). The\n"
    "final norm's statistics (mean, scale) are recomputed from each residual,\n"
    "not taken from the last layer's run. For each point: the probability and\n"
    "logit of the answer at each prompt's position, how often it is the top-1,\n"
    "and answer - wrong (when the set has \"wrong\"), averaged over the prompts;\n"
    "the first prompt's top-1 token at every position; and, per position, the\n"
    "probability the lens gives to the model's own final prediction there.\n"
    "\n"
    "options:\n"
    "  --model PATH          a Hugging Face GPT-2 folder or a checkpoint (.safetensors)\n"
    CLI_VOCAB_HELP
    "  --data FILE           prompt set: JSONL, one {\"prompt\", \"answer\", ...} a\n"
    "                        line (answer optional; same length for every prompt)\n"
    "  --sentence S          one sentence instead of a set\n"
    "  --out DIR             write lens.json and lens_final.{png,svg,json} (points x\n"
    "                        positions) into DIR (created if missing; its parent\n"
    "                        must exist)\n"
    "  --json                print every number as JSON instead of the table\n"
    "  --threads N           worker threads, 0 = every CPU (default)\n"
    "\n"
    "Exit status: 0 ok, 1 user error, 2 usage error.\n";

int cmd_lens(int argc, char **argv)
{
    static const struct option opts[] = {CLI_HELP_OPT,
                                         CLI_EXP_SENTENCE_LONGOPT,
                                         CLI_EXP_LONGOPTS,
                                         {0, 0, 0, 0}};
    const char *C = "lens";
    int c;
    cli_exp x;
    cli_exp_init(&x, C);
    cli_opts op = {.cmd = C, .help = LENS_HELP, .exp = &x};
    while ((c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END)
        if (c == CLI_OPT_EXIT) return op.status; /* lens has no options of its own */
    if (cli_exp_check(&x, argc, argv, 1)) return 2;
    hs_error err = {0};
    int rc = 1;
    cJSON *j = NULL;
    hs_buf text = {0};
    hs_lens_report r = {0};
    if (cli_exp_open(&x, HS_PROMPTS_TEXT_ONLY)) goto done;
    if (hs_lens_run(x.Ld.model, x.pool, &x.p, &r, &err) != HS_OK) {
        rc = cli_error(C, &err);
        goto done;
    }
    if ((j = hs_lens_json(&r, x.Ld.vocab)) == NULL) {
        fprintf(stderr, "headscope %s: out of memory\n", C);
        goto done;
    }
    if (x.out && hs_lens_figures(&r, &x.p, x.Ld.vocab, &x.Ld.model->cfg, x.model, &x.od, &err) != HS_OK) {
        rc = cli_error(C, &err);
        goto done;
    }
    hs_lens_summary(&r, x.Ld.vocab, &text);
    rc = cli_exp_finish(&x, j, "lens", "every logit-lens number: per point the answer's probability, logit, "
                                       "top-1 rate and LD; per position the final prediction's probability",
                        &text);
done:
    hs_buf_free(&text);
    cJSON_Delete(j);
    hs_lens_report_free(&r);
    cli_exp_close(&x);
    return rc;
}
