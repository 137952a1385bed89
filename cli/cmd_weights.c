/*
 * cli/cmd_weights.c -- `headscope weights`: what the weights say without
 * running a sentence. Every head's full QK and OV circuits over the
 * vocabulary, the cross-layer virtual-weight products, the Q/K/V composition
 * scores with their random baseline, and each head's copying score.
 * Thin: it parses the options, loads the checkpoint, runs hs_weights_run
 * (experiments/weights_run.c: the figures, the JSON, the folder) and prints
 * the copying and composition summary.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "expout.h"
#include "experiments/experiments.h"
#include "util.h"

/* HS_INSPECT_PER_HEAD_MAX in the help text */
#define STR_(x) #x
#define STR(x) STR_(x)

static const char WEIGHTS_HELP[] =
    "usage: headscope weights --model FILE [--out DIR] [--fold ln|none] [options]\n"
    "\n"
    "Reads the model's weights (no sentence) and writes, into the output folder:\n"
    "  L<l>H<h>_QK     full QK circuit W_E W_QK W_E^T over the vocabulary\n"
    "                  [query token, key token] (not for uniform attention)\n"
    "  L<l>H<h>_OV     full OV circuit W_E W_OV W_U [attended token, output logit]\n"
    "                  (both by default only for models of at most "
    STR(HS_INSPECT_PER_HEAD_MAX) " heads in\n"
    "                  all, e.g. the default 2 x 4: GPT-2's 144 get them for\n"
    "                  --only's heads or with --all-heads)\n"
    "  virtual_weights Frobenius norms of W_O^A W_Q^B, W_O^A W_K^B, W_O^A W_V^B for\n"
    "                  every head A and head B of a later layer (the JSON also holds\n"
    "                  each [d_head, d_head] product)\n"
    "  composition_Q/K/V  composition scores [L*H x L*H] minus the random baseline;\n"
    "                  pairs that are not reported (B not in a later layer) are\n"
    "                  masked in the figure and null in the JSON\n"
    "  copying         each head's eigenvalue copying score (also printed)\n"
    "  index.json      every file written and what it shows\n"
    "Each figure is a PNG and an SVG with a JSON beside it holding every number.\n"
    "Layers and heads count from 0.\n"
    "\n"
    "  --model PATH           a Hugging Face GPT-2 folder or a checkpoint (.safetensors)\n"
    CLI_VOCAB_HELP
    "                         (without either, tokens are labelled by id: #0, #1, ...)\n"
    "  --out DIR              output folder (default weights-out; created if missing,\n"
    "                         its parent must exist). Only files an earlier run wrote\n"
    "                         and nobody changed are replaced; a failed run changes nothing\n"
    "  --fold ln|none         fold the norms' weights (and LayerNorm's centring) into\n"
    "                         the reading matrices (ln, default) or use the stored\n"
    "                         matrices as they are (none)\n"
    "  --comp-draws N         random pairs for the composition baseline (default 300,\n"
    "                         as circuit's --comp-draws: the same cell, the same value)\n"
    "  --tokens FILE          the QK/OV circuits over these tokens only: one token a line\n"
    "                         (GPT-2: \" Mary\" with its leading space), at most 1024\n"
    "  --top-tokens N         or over the N tokens with the largest embedding norm\n"
    "                         (1..1024). A vocabulary over 1024 tokens (GPT-2's\n"
    "                         50,257) needs one of the two for a head's circuits; the\n"
    "                         composition, virtual\n"
    "                         weights and copying scores are always every head's\n"
    "  --only LIST            the full circuits of these heads only, e.g. L1H0,L0H1\n"
    "  --all-heads            every head's full circuits at any model size (GPT-2\n"
    "                         small: 288 figures); without it a model of more than\n"
    "                         " STR(HS_INSPECT_PER_HEAD_MAX) " heads gets none (a note says so)\n"
    "  --threads N            worker threads computing the heads and head pairs and\n"
    "                         drawing the figures, 0 = every CPU (default); the\n"
    "                         numbers and files are the same for any N\n"
    "\n";

/* What a run skipped, as the command says it on stdout (also before the
 * error of a run that failed after it). */
static void say_skipped(const hs_weights_report *r)
{
    if (r->skip_cross_layer) printf("one layer: no cross-layer virtual weights or composition scores\n");
    if (r->skip_qk)
        printf("uniform attention: no W_Q/W_K, so no QK circuits and no Q/K products or "
               "composition (skipped)\n");
}

/* The copying scores and the top composition pair of each kind. */
static void print_summary(const hs_weights_report *r, const char *fold)
{
    const int NH = r->H, NA = r->L * r->H;
    printf("copying score per head (fold %s; 1 = the head copies the token it attends to, "
           "-1 = it suppresses it):\n", fold);
    printf("  head   copying  positive eigenvalues\n");
    for (int i = 0; i < NA; i++) {
        char name[32];
        snprintf(name, sizeof name, "L%dH%d", i / NH, i % NH);
        char c[HS_FIXED_BUF];
        printf("  %-6s %7s  %5.1f%%\n", name, hs_fmt_fixed(c, r->copying[i], 3, 1), 100.0 * r->copying_pos[i]);
    }
    if (r->L < 2) return;
    printf("composition scores (random baseline %.3f +- %.3f); top pairs:\n", r->comp.baseline,
           r->comp.baseline_std);
    const float *src[3] = {r->comp.q, r->comp.k, r->comp.v};
    for (int k = 0; k < 3; k++) {
        const int bi = r->comp_best[k], a = bi / NA, b = bi % NA;
        if (bi >= 0)
            printf("  %c: L%dH%d -> L%dH%d  %.3f\n", "QKV"[k], a / NH, a % NH, b / NH, b % NH,
                   (double)src[k][bi]);
    }
}

int cmd_weights(int argc, char **argv)
{
    enum { O_MODEL = 256, O_OUT, O_FOLD, O_DRAWS, O_TOKENS, O_TOP, O_THREADS, O_ONLY, O_ALL };
    static const struct option opts[] = {{"model", required_argument, 0, O_MODEL},
                                         {"out", required_argument, 0, O_OUT},
                                         {"fold", required_argument, 0, O_FOLD},
                                         {"comp-draws", required_argument, 0, O_DRAWS},
                                         {"tokens", required_argument, 0, O_TOKENS},
                                         {"top-tokens", required_argument, 0, O_TOP},
                                         {"threads", required_argument, 0, O_THREADS},
                                         {"only", required_argument, 0, O_ONLY},
                                         {"all-heads", no_argument, 0, O_ALL},
                                         CLI_HELP_OPT,
                                         CLI_VOCAB_OPT,
                                         CLI_FIGOPTS_LONGOPTS,
                                         {0, 0, 0, 0}};
    const char *C = "weights";
    hs_weights_opts wo = hs_weights_opts_default();
    long draws = wo.comp_draws, top = 0;
    int c, threads = 0;
    static hs_head sel[CLI_MAX_HEADS];
    hs_load_source from = {0};
    hs_figopts fo;
    hs_figopts_default(&fo, 300);
    cli_opts op = {.cmd = C, .help = WEIGHTS_HELP, .src = &from, .fo = &fo};
    while ((c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END) {
        switch (c) {
        case CLI_OPT_EXIT: return op.status;
        case O_MODEL: wo.model_path = optarg; break;
        case O_OUT: wo.out = optarg; break;
        case O_FOLD:
            if (strcmp(optarg, "ln") == 0) wo.fold = HS_FOLD_LN;
            else if (strcmp(optarg, "none") == 0) wo.fold = HS_FOLD_NONE;
            else return cli_usage_error(C, "unknown --fold '%s' (ln, none)", optarg);
            break;
        case O_DRAWS:
            if (cli_parse_int(optarg, 2, 100000, &draws))
                return cli_usage_error(C, "--comp-draws needs an integer in [2, 100000], got '%s'",
                                       optarg);
            break;
        case O_TOKENS: wo.tokens_path = optarg; break;
        case O_TOP:
            if (cli_parse_int(optarg, 1, HS_WEIGHTS_MAX_TOKENS, &top))
                return cli_usage_error(C, "--top-tokens needs an integer in [1, %d], got '%s'",
                                       HS_WEIGHTS_MAX_TOKENS, optarg);
            break;
        case O_THREADS:
            if (cli_parse_threads(C, optarg, &threads)) return 2;
            break;
        case O_ONLY:
            if (cli_parse_heads(optarg, sel, &wo.n_only))
                return cli_usage_error(C, "--only takes heads like L1H0,L0H1, not '%s'", optarg);
            wo.only = sel;
            break;
        case O_ALL: wo.all_heads = 1; break;
        }
    }
    int rest = cli_args_end(C, argc, argv, optind, wo.model_path);
    if (rest) return rest;
    wo.comp_draws = (int)draws;
    wo.top_tokens = (int)top;
    if (wo.tokens_path && top) return cli_usage_error(C, "give --tokens FILE or --top-tokens N, not both");
    if (wo.n_only && wo.all_heads) return cli_usage_error(C, "give --only LIST or --all-heads, not both");

    hs_loaded L;
    int rc = cli_load_src(C, wo.model_path, 0, &from, &L);
    if (rc) return rc;
    wo.vocab_is_ids = L.vocab_is_ids;
    hs_error err = {0};
    hs_weights_report r;
    const hs_notes notes = cli_notes(C);
    /* the workers of the heads, the head pairs and the figures, carrying the
     * progress printer */
    hs_pool *pool = NULL;
    cli_progress prog;
    cli_say_threads(C, threads);
    if (hs_pool_create(threads, &pool, &err) != HS_OK) {
        hs_loaded_free(&L);
        hs_figopts_free(&fo);
        return cli_error(C, &err);
    }
    cli_progress_init(&prog, C);
    hs_pool_set_progress(pool, cli_progress_print, &prog);
    if (hs_weights_run(L.model, L.vocab, &wo, &fo, pool, &notes, &r, &err) != HS_OK) {
        say_skipped(&r);
        rc = cli_error(C, &err);
    } else {
        say_skipped(&r);
        print_summary(&r, wo.fold == HS_FOLD_LN ? "ln" : "none");
        printf("wrote %d files to %s (listed in %s/index.json)\n", r.n_files, wo.out, wo.out);
        rc = cli_stdout_done(C);
    }
    hs_weights_report_free(&r);
    hs_pool_destroy(pool);
    hs_figopts_free(&fo);
    hs_loaded_free(&L);
    return rc;
}
