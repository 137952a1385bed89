/*
 * cli/cmd_heads.c -- `headscope heads`: every head's detector scores
 * (previous-token, duplicate-token, induction, first-noun, a user's target
 * pattern) over a prompt set or one sentence (tasks/ hs_heads_run on the
 * experiment engine): a table on stdout (or the JSON with --json), and with
 * --out DIR heads.json and one layers x heads figure per detector.
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

static const char HEADS_HELP[] =
    "usage: headscope heads --model FILE (--data FILE.jsonl | --sentence S) [options]\n"
    "\n"
    "Scores every attention head with the head detectors of TransformerLens\n"
    "(head_detector.py, detect_head) over a prompt set: previous-token (D[i,i-1]),\n"
    "duplicate-token (D[i,j] = 1 when j < i holds the same token), induction\n"
    "(D[i,j] = 1 when the token before j equals token i), first-noun (every\n"
    "position from the first of the task's nouns on attends to it; computed when\n"
    "the vocabulary has such nouns, a BPE's with their leading space, \" animal\",\n"
    "and a prompt holds one) and, with --target, your own pattern. A\n"
    "head's score is the mean over the prompts of\n"
    "  mul: sum(A * D) / sum(A)                  (TL's default)\n"
    "  abs: 1 - round(sum |A - D| / t, 3)\n"
    "with A its attention pattern [dest, src] and D the detection pattern.\n"
    "Layers and heads count from 0.\n"
    "\n"
    "options:\n"
    "  --model PATH          a Hugging Face GPT-2 folder or a checkpoint (.safetensors)\n"
    CLI_VOCAB_HELP
    "  --data FILE           prompt set: JSONL, one {\"prompt\": \"...\"} a line (other\n"
    "                        keys of the format are read and checked, not needed);\n"
    "                        every prompt has the same number of tokens\n"
    "  --sentence S          one sentence instead of a set\n"
    "  --target FILE         your detection pattern: a JSON array of t rows of t\n"
    "                        numbers [dest][src], zero above the diagonal\n"
    "  --metric mul|abs      the score (default mul)\n"
    "  --exclude-bos         zero column 0 of A (and of |A - D|) first\n"
    "  --exclude-current     zero the diagonal first\n"
    "  --out DIR             write heads.json and heads_<detector>.{png,svg,json}\n"
    "                        (layers x heads) into DIR (created if missing; its\n"
    "                        parent must exist)\n"
    "  --json                print the scores as JSON instead of the table\n"
    "  --threads N           worker threads, 0 = every CPU (default); the scores are\n"
    "                        bit-identical for every count\n"
    "\n"
    "Prompt-set errors name the file and line (unknown word, lengths that differ,\n"
    "a bad key). Exit status: 0 ok, 1 user error, 2 usage error.\n";

int cmd_heads(int argc, char **argv)
{
    enum { O_TARGET = 256, O_METRIC, O_EBOS, O_ECUR };
    static const struct option opts[] = {{"target", required_argument, 0, O_TARGET},
                                         {"metric", required_argument, 0, O_METRIC},
                                         {"exclude-bos", no_argument, 0, O_EBOS},
                                         {"exclude-current", no_argument, 0, O_ECUR},
                                         CLI_HELP_OPT,
                                         CLI_EXP_SENTENCE_LONGOPT,
                                         CLI_EXP_LONGOPTS,
                                         {0, 0, 0, 0}};
    const char *C = "heads", *target_path = NULL;
    int ebos = 0, ecur = 0, c;
    hs_detect_metric metric = HS_DETECT_MUL;
    cli_exp x;
    cli_exp_init(&x, C);
    cli_opts op = {.cmd = C, .help = HEADS_HELP, .exp = &x};
    while ((c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END) {
        switch (c) {
        case CLI_OPT_EXIT: return op.status;
        case O_TARGET: target_path = optarg; break;
        case O_METRIC:
            if (strcmp(optarg, "mul") == 0) metric = HS_DETECT_MUL;
            else if (strcmp(optarg, "abs") == 0) metric = HS_DETECT_ABS;
            else return cli_usage_error(C, "--metric needs mul or abs, got '%s'", optarg);
            break;
        case O_EBOS: ebos = 1; break;
        case O_ECUR: ecur = 1; break;
        }
    }
    if (cli_exp_check(&x, argc, argv, 1)) return 2;
    hs_error err = {0};
    int rc = 1;
    float *target = NULL;
    cJSON *j = NULL;
    hs_buf text = {0};
    hs_heads_report *r = calloc(1, sizeof *r);
    if (r == NULL) {
        fprintf(stderr, "headscope %s: out of memory\n", C);
        goto done;
    }
    if (cli_exp_open(&x, HS_PROMPTS_TEXT_ONLY)) goto done;
    hs_status st = target_path ? hs_target_pattern_load(target_path, x.p.t, &target, &err) : HS_OK;
    if (st == HS_OK)
        st = hs_heads_run(x.Ld.model, x.Ld.vocab, x.pool, &x.p, hs_wg_nouns, HS_WG_N_NOUNS, target, metric, ebos, ecur, r, &err);
    if (st != HS_OK) {
        rc = cli_error(C, &err);
        goto done;
    }
    if ((j = hs_heads_json(r)) == NULL) {
        fprintf(stderr, "headscope %s: out of memory\n", C);
        goto done;
    }
    if (x.out && hs_heads_figures(r, &x.Ld.model->cfg, x.model, &x.od, &err) != HS_OK) {
        rc = cli_error(C, &err);
        goto done;
    }
    hs_heads_summary(r, &text);
    rc = cli_exp_finish(&x, j, "heads",
                        "every head's detector scores (TL detect_head), layers x heads, with the metric and the "
                        "prompt count", &text);
done:
    hs_buf_free(&text);
    cJSON_Delete(j);
    free(target);
    free(r);
    cli_exp_close(&x);
    return rc;
}
