/*
 * cli/cmd_ladder.c -- `headscope ladder`: the chapter's ablation ladder on a
 * corpus (hs_ladder_run, tasks/ladder.c) into an output folder (hs_outdir):
 * ladder.json, a bar figure of the held-out perplexity per row, each row's
 * model and the BPE they share; the table on stdout. Thin: parses, calls,
 * writes, prints.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "expout.h"
#include "output/output.h"
#include "tasks/text.h"
#include "util.h"

static const char LADDER_HELP[] =
    "usage: headscope ladder --corpus FILE... --out DIR [--tokenizer FILE | --vocab-size N]\n"
    "                        [--steps N] [--d-model D] [--ctx T] [--batch B] [--lr X]\n"
    "                        [--seed S] [--val-fraction X] [--threads N] [figure options]\n"
    "\n"
    "The chapter's ablation ladder: one-block text models on the corpus, each row\n"
    "adding one piece to the row above (no context; uniform causal average; +\n"
    "positions; average added, not replacing; one learned head replacing; one head\n"
    "added; four heads; + MLP; + LayerNorm), their parameters and held-out\n"
    "perplexity. The \"replacing\" rows (1, 2, 4) train with attn_replace: the\n"
    "attention's output replaces the residual instead of being added to it.\n"
    "  --corpus FILE...   text files (UTF-8)\n"
    "  --tokenizer FILE   a tokenizer.json; default a BPE of --vocab-size (1024)\n"
    "  --steps N          steps a row (default 3000, the chapter's)\n"
    "  --d-model D        the residual width d_model (default 128)\n"
    "  --ctx T            window length (default 128)\n"
    "  --batch B          windows a step (default 32: the whole ladder took 21 min on\n"
    "                     2 cores, README; the chapter's 64 takes 28-32 min by CPU / 2,\n"
    "                     bench/ladder_time.sh)\n"
    "  --lr X             peak learning rate (default 1e-3)\n"
    "  --seed S           initialisation and batch seed (default 0)\n"
    "  --val-fraction X   held out: the last X of each file (default 0.1)\n"
    "  --threads N        rows trained at once, one thread each (default every CPU;\n"
    "                     1: one row at a time); the same numbers at every N\n"
    "Writes DIR/ladder.json, DIR/ladder_perplexity.{png,svg,json}, DIR/row-R.safetensors\n"
    "and DIR/tokenizer.json (listed in DIR/index.json).\n";

/* A row's progress: a log line every log_every steps and at the end (two
 * rows' lines interleave when they train at once: each names its row). */
static void ladder_progress(void *ctx, int row, const hs_train_progress *p)
{
    (void)ctx;
    if (!p->logged) return;
    fprintf(stderr, "  row %d step %d/%d loss %.4f %.1f steps/s ETA %.0fs\n", row, p->step, p->steps,
            p->loss, p->steps_per_s, p->eta_s);
}

/* Registers the rows' models and the BPE (written into the working folder)
 * in the index, then ladder.json and the figure. */
static hs_status write_folder(hs_outdir *od, const hs_ladder_report *r, hs_error *err)
{
    hs_status s = HS_OK;
    float vals[HS_LADDER_ROWS];
    const char *labels[HS_LADDER_ROWS];
    size_t n = 0;
    for (int i = 0; i < HS_LADDER_ROWS && s == HS_OK; i++) {
        char name[32];
        snprintf(name, sizeof name, "row-%d.safetensors", i);
        char *path = hs_path_join(od->stage, name);
        unsigned char *data = NULL;
        size_t len = 0;
        s = path ? hs_read_file(path, &data, &len, err) : hs_fail(err, HS_ERR_NOMEM, "out of memory");
        char *shows = hs_strfmt("the model of ladder row %d, %s", i, r->rows[i].name);
        if (s == HS_OK) s = hs_outdir_file(od, name, "safetensors", data, len, shows, err);
        free(shows);
        free(data);
        free(path);
        vals[n] = (float)r->rows[i].perplexity;
        labels[n++] = r->rows[i].name; /* whole: the chapter's row names */
    }
    if (s == HS_OK)
        s = hs_outdir_file(od, "tokenizer.json", "json", r->tokenizer_json, r->tokenizer_json_len,
                           "the byte-level BPE every row uses (Hugging Face tokenizer.json)", err);
    cJSON *j = hs_ladder_json(r);
    if (s == HS_OK)
        s = j ? hs_outdir_json(od, "ladder", j, "each row's parameters and held-out perplexity", err)
              : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    cJSON_Delete(j);
    /* the bars against the unigram baseline the chapter compares every row
       with (a labelled reference line), the row names whole */
    /* the title's second part: the run it shows, each number kept with its
       noun by a no-break space (U+00A0) where the title wraps */
    const hs_ladder_opts *lo = &r->opts;
    const char *c0 = lo->n_corpus ? strrchr(lo->corpus[0], '/') : NULL;
    char *title = hs_strfmt("the ladder: held-out perplexity per row (%d\u00a0steps of batch\u00a0%d, "
                            "d_model\u00a0%d, context\u00a0%d; corpus %s%s%zu\u00a0file%s)", lo->steps,
                            lo->batch, lo->d_model,
                            lo->ctx, lo->n_corpus == 1 ? (c0 ? c0 + 1 : lo->corpus[0]) : "",
                            lo->n_corpus == 1 ? ", " : "", lo->n_corpus, lo->n_corpus == 1 ? "" : "s");
    const char *xl = "held-out perplexity";
    if (s == HS_OK && !title) s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    char ref[64];
    snprintf(ref, sizeof ref, "unigram baseline %.1f", r->unigram_perplexity);
    hs_viz_options vo = hs_figopts_for(od->fo, HS_FIG_BARS_MAGNITUDE, 0.0);
    vo.value_label = "perplexity";
    vo.mark_y = r->unigram_perplexity;
    vo.mark_y_label = ref;
    vo.whole_labels = 1;
    hs_viz_figure *fig = NULL;
    hs_error fe = {0};
    if (s == HS_OK && hs_figopts_images(od->fo))
        s = hs_outdir_unfit(od, "ladder_perplexity",
                            hs_viz_bars_figure(&fig, vals, n, labels, title, xl, &vo, &fe), &fe, err);
    cJSON *bj = NULL;
    if (s == HS_OK && hs_figopts_data(od->fo) &&
        (s = hs_viz_bars_json(&bj, vals, n, labels, title, xl, err)) == HS_OK &&
        !cJSON_AddNumberToObject(bj, "unigram_perplexity", r->unigram_perplexity))
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (s == HS_OK)
        s = hs_outdir_figure(od, "ladder_perplexity", &fig, bj, "held-out perplexity of each ladder row, "
                             "the unigram baseline a dashed line", err);
    cJSON_Delete(bj);
    hs_viz_figure_destroy(fig);
    free(title);
    return s;
}

int cmd_ladder(int argc, char **argv)
{
    enum { O_CORPUS = 256, O_OUT, O_TOK, O_VOCAB, O_STEPS, O_DMODEL, O_CTX, O_BATCH, O_LR, O_SEED,
           O_VAL, O_THREADS };
    static const struct option opts[] = {{"corpus", required_argument, 0, O_CORPUS},
                                         {"out", required_argument, 0, O_OUT},
                                         {"tokenizer", required_argument, 0, O_TOK},
                                         {"vocab-size", required_argument, 0, O_VOCAB},
                                         {"steps", required_argument, 0, O_STEPS},
                                         {"d-model", required_argument, 0, O_DMODEL},
                                         {"ctx", required_argument, 0, O_CTX},
                                         {"batch", required_argument, 0, O_BATCH},
                                         {"lr", required_argument, 0, O_LR},
                                         {"seed", required_argument, 0, O_SEED},
                                         {"val-fraction", required_argument, 0, O_VAL},
                                         {"threads", required_argument, 0, O_THREADS},
                                         CLI_FIGOPTS_LONGOPTS,
                                         CLI_HELP_OPT,
                                         {0, 0, 0, 0}};
    const char *C = "ladder", *out = NULL;
    hs_ladder_opts lo = hs_ladder_opts_default();
    hs_figopts fo;
    hs_figopts_default(&fo, 300);
    const char **given = calloc((size_t)argc + 1, sizeof *given);
    int n_given = 0, c;
    long v;
    double d;
    if (!given) return cli_usage_error(C, "out of memory");
    cli_opts op = {.cmd = C, .help = LADDER_HELP, .fo = &fo};
#define INT_OPT(field, lo_, hi_, name)                                                    \
    if (cli_parse_int(optarg, lo_, hi_, &v)) {                                            \
        free(given);                                                                      \
        return cli_usage_error(C, "--%s needs an integer in [%ld, %ld], got '%s'", name,  \
                               (long)(lo_), (long)(hi_), optarg);                         \
    }                                                                                     \
    field = (int)v;
    while ((c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END) {
        switch (c) {
        case CLI_OPT_EXIT: free(given); return op.status;
        case O_CORPUS: given[n_given++] = optarg; break;
        case O_OUT: out = optarg; break;
        case O_TOK: lo.tokenizer = optarg; break;
        case O_VOCAB: INT_OPT(lo.vocab_size, 257, HS_BPE_TRAIN_MAX_VOCAB, "vocab-size") break;
        case O_STEPS: INT_OPT(lo.steps, 1, 10000000, "steps") break;
        case O_DMODEL: INT_OPT(lo.d_model, 4, 4096, "d-model") break;
        case O_CTX: INT_OPT(lo.ctx, 2, 4096, "ctx") break;
        case O_BATCH: INT_OPT(lo.batch, 1, 4096, "batch") break;
        case O_LR:
            if (cli_parse_float(optarg, 1e-9, 10.0, &d)) {
                free(given);
                return cli_usage_error(C, "--lr needs a number in (0, 10], got '%s'", optarg);
            }
            lo.lr = (float)d;
            break;
        case O_SEED:
            if (cli_parse_u64(optarg, &lo.seed)) {
                free(given);
                return cli_usage_error(C, "--seed needs a non-negative integer, got '%s'", optarg);
            }
            break;
        case O_VAL:
            if (cli_parse_float(optarg, 0.01, 0.5, &lo.val_fraction)) {
                free(given);
                return cli_usage_error(C, "--val-fraction needs a number in [0.01, 0.5], got '%s'", optarg);
            }
            break;
        case O_THREADS:
            if (cli_parse_threads(C, optarg, &lo.threads)) {
                free(given);
                return 2;
            }
            break;
        }
    }
#undef INT_OPT
    const char **files = NULL;
    const int n = cli_corpus_files(C, given, n_given, argc, argv, optind, &files);
    free(given);
    if (n < 0) return 2;
    if (out == NULL) {
        free(files);
        return cli_usage_error(C, "--out DIR is required");
    }
    lo.corpus = files;
    lo.n_corpus = (size_t)n;
    lo.progress = ladder_progress;
    hs_error err = {0};
    const hs_notes notes = cli_notes(C);
    hs_outdir od;
    memset(&od, 0, sizeof od);
    hs_ladder_report r;
    memset(&r, 0, sizeof r);
    hs_status s = hs_figopts_font_open(&fo, &err);
    if (s == HS_OK) s = hs_outdir_open(&od, C, out, &fo, files, NULL, &notes, &err);
    lo.models_dir = od.stage;
    if (s == HS_OK) s = hs_ladder_run(&lo, &notes, &r, &err);
    if (s == HS_OK) s = write_folder(&od, &r, &err);
    if (s == HS_OK) s = hs_outdir_commit(&od, NULL, &err);
    if (s != HS_OK) {
        hs_outdir_close(&od);
        hs_ladder_report_free(&r);
        hs_figopts_free(&fo);
        free(files);
        return cli_error(C, &err);
    }
    printf("%-30s %10s %12s\n", "row", "params", "perplexity");
    for (int i = 0; i < HS_LADDER_ROWS; i++) {
        const hs_ladder_row *w = &r.rows[i];
        printf("%-30s %10zu %12.2f\n", w->name, w->n_params, w->perplexity);
    }
    printf("unigram baseline %.2f; %d steps, d_model %d, ctx %d, batch %d, lr %g, vocabulary %zu\n",
           r.unigram_perplexity, lo.steps, lo.d_model, lo.ctx, lo.batch, (double)lo.lr, r.V);
    printf("wrote %d files to %s (listed in %s/index.json)\n", hs_outdir_n_files(&od), out, out);
    hs_outdir_close(&od);
    hs_ladder_report_free(&r);
    hs_figopts_free(&fo);
    free(files);
    cli_say_threads(C, lo.threads);
    return cli_stdout_done(C);
}
