/*
 * cli/cmd_inspect.c -- `headscope inspect`: every head's attention on one
 * sentence (figures + JSON + the chapter's text rows), each component's direct
 * logit attribution at a query position, and the top predictions there.
 * Thin: parses the options, loads the checkpoint while the font opens on the
 * pool, runs hs_inspect_run (experiments/) and prints its report.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "expout.h"
#include "experiments/experiments.h"
#include "util.h"
#include "viz/viz.h"

static const char INSPECT_HELP[] =
    "usage: headscope inspect --model FILE --sentence \"...\" [options]\n"
    "\n"
    "Runs the model on one sentence and writes, into the output folder: the layers\n"
    "x heads grid of attention patterns (attention_grid), one figure per head\n"
    "(L<l>H<h>; by default only for models of at most %d heads in all, e.g. the\n"
    "default 2 x 4: GPT-2's 144 get them for --only's heads or with --all-heads),\n"
    "the head-averaged pattern of each layer (L<l>_mean), every\n"
    "component's direct logit attribution to the predicted token at the query\n"
    "position (dla; with --vs, dla_vs for the logit difference), the top\n"
    "predictions (predictions.json) and index.json listing every file. Each figure\n"
    "is a PNG and an SVG with a JSON beside it holding every number (CircuitsVis'\n"
    "attention_heads shape for attention). Prints the chapter's rows for the query\n"
    "position: one line per layer, head-averaged (L0  the:0.00 animal:0.70 ...).\n"
    "Layers, heads and positions count from 0.\n"
    "\n"
    "  --model PATH           a Hugging Face GPT-2 folder or a checkpoint (.safetensors\n"
    "                         with its vocabulary)\n"
    CLI_VOCAB_HELP
    "  --sentence TEXT        the text: a BPE model's (GPT-2's) as its tokenizer reads\n"
    "                         it; a word vocabulary's words, `,` and `.` split off,\n"
    "                         case folded to lower\n"
    "  --out DIR              output folder (default inspect-out; created if missing,\n"
    "                         its parent must exist). Only files an earlier run wrote\n"
    "                         and nobody changed are replaced; a failed run changes nothing\n"
    "  --position P           query position (default: the last token; negative\n"
    "                         counts from the end, -1 = last)\n"
    "  --vs WORD              also attribute the logit difference predicted - WORD\n"
    "                         (one token; GPT-2: \" Mary\" with its space, or \"Mary\")\n"
    "  --heads                also print one row per head (L0H1 ...)\n"
    "  --only LIST            only these heads, e.g. L1H0,L0H1: their figures and a\n"
    "                         grid of just them, in that order (and their rows); one\n"
    "                         head: its figure, attention_grid its JSON alone\n"
    "  --all-heads            one figure per head at any model size (GPT-2 small: 432\n"
    "                         files); without it a model of more than %d heads gets\n"
    "                         none (a note says so), attention_grid.json holds them all\n"
    "  --top K                predictions to show (default 5)\n"
    "  --sentence TEXT (again) a second sentence of the same length (e.g. the tired /\n"
    "                         wet pair): pair_* shows both on one scale, diff_* B − A\n"
    "                         (titled by the words that differ: wet − tired), every\n"
    "                         difference of the run on one symmetric colour scale\n"
    "  --diff-max X           that scale is [-X, X] (default: the run's largest\n"
    "                         |B − A|, rounded up to 0.05); --vmin/--vmax leave it alone\n"
    "  --positions A:B        crop the attention figures (sources and destinations;\n"
    "                         labels from the cropped slice) and the query-row strips\n"
    "                         to positions A:B, a Python slice: half-open (8:12 is\n"
    "                         8..11), negatives count from the end, an end may be\n"
    "                         left open (8:, :5, 8:-1)\n"
    "  --title TEXT           the title of the main figure: attention_grid, or under\n"
    "                         one --only head that head's figure (L<l>H<h>)\n"
    "  --no-title             no titles (papers caption instead)\n"
    "  --threads N            worker threads drawing and encoding the figures, 0 = every\n"
    "                         CPU (default); the files are the same for any N\n"
    "Figures: the grid, one per head and per layer mean frame the query row;\n"
    "query_row is the query position's row of every head (or --only's) as a heatmap strip.\n"
    "A figure over the caps (%d tokens, %d heads per row) or wider than the auto\n"
    "width allows is written as JSON only, with a note.\n"
    "PNGs default to 150 dpi (PNG encoding is most of the run time); use --dpi 300\n"
    "or more for print.\n"
    "\n";

/* The command line: the run's options, where a checkpoint without a
 * vocabulary gets one, the --only heads, the worker threads. */
typedef struct {
    hs_inspect_opts o;
    hs_load_source from;
    hs_head sel[CLI_MAX_HEADS];
    int threads;
} insp_args;

/* One end of --positions: empty is open; 0 ok, -1 not an integer. */
static int slice_arg(const char *s, size_t n, long *v)
{
    *v = HS_INSPECT_OPEN;
    if (n == 0) return 0;
    char buf[32], *e = NULL;
    if (n >= sizeof buf) return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    long x = strtol(buf, &e, 10);
    if (e == buf || *e != '\0' || x < -100000 || x > 100000) return -1;
    *v = x;
    return 0;
}

/* --positions A:B (a Python slice: "8:", ":5", "8:-1", "-4:") into o; 0 ok,
 * 2 after the usage error. */
static int parse_crop(const char *C, const char *arg, hs_inspect_opts *o)
{
    const char *colon = strchr(arg, ':');
    if (!colon || strchr(colon + 1, ':') || slice_arg(arg, (size_t)(colon - arg), &o->crop_a) ||
        slice_arg(colon + 1, strlen(colon + 1), &o->crop_b))
        return cli_usage_error(C, "--positions takes a Python slice A:B (8:12, 8:, :5, 8:-1), "
                               "not '%s'", arg);
    return 0;
}

/* --position P into o (any integer: one beyond the sentence is refused by
 * the run, naming the range); 0 ok, 2 after the usage error. */
static int parse_position(const char *C, const char *arg, hs_inspect_opts *o)
{
    if (cli_parse_int(arg, LONG_MIN, LONG_MAX, &o->position)) {
        char *end;
        o->position = strtol(arg, &end, 10); /* ERANGE: clamped, still outside */
        if (end == arg || *end != '\0')
            return cli_usage_error(C, "--position must be an integer, not '%s'", arg);
    }
    o->position_text = arg;
    o->has_position = 1;
    return 0;
}

/* The options into a (figure options into fo): -1 to run, else the exit
 * status (0 after --help, 2 after a usage error). */
static int parse_args(int argc, char **argv, insp_args *a, hs_figopts *fo)
{
    enum { O_MODEL = 256, O_SENT, O_OUT, O_POS, O_VS, O_HEADS, O_ONLY, O_TOP, O_HELP, O_POSS,
           O_TITLE, O_NOTITLE, O_THREADS, O_DIFFMAX, O_ALLHEADS };
    static const struct option opts[] = {{"model", required_argument, 0, O_MODEL},
                                         {"sentence", required_argument, 0, O_SENT},
                                         {"out", required_argument, 0, O_OUT},
                                         {"position", required_argument, 0, O_POS},
                                         {"vs", required_argument, 0, O_VS},
                                         {"heads", no_argument, 0, O_HEADS},
                                         {"only", required_argument, 0, O_ONLY},
                                         {"all-heads", no_argument, 0, O_ALLHEADS},
                                         {"top", required_argument, 0, O_TOP},
                                         {"positions", required_argument, 0, O_POSS},
                                         {"title", required_argument, 0, O_TITLE},
                                         {"no-title", no_argument, 0, O_NOTITLE},
                                         {"threads", required_argument, 0, O_THREADS},
                                         {"diff-max", required_argument, 0, O_DIFFMAX},
                                         {"help", no_argument, 0, O_HELP},
                                         CLI_VOCAB_OPT,
                                         CLI_FIGOPTS_LONGOPTS,
                                         {0, 0, 0, 0}};
    const char *C = "inspect";
    hs_inspect_opts *o = &a->o;
    memset(a, 0, sizeof *a);
    hs_inspect_opts_default(o);
    long top = o->top;
    int c, r = 0;
    cli_opts op = {.cmd = C, .src = &a->from, .fo = fo};
    while (r == 0 && (c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END) {
        switch (c) {
        case CLI_OPT_EXIT: return op.status;
        case O_HELP:
            printf(INSPECT_HELP, HS_INSPECT_PER_HEAD_MAX, HS_INSPECT_PER_HEAD_MAX, HS_VIZ_MAX_TOKENS,
                   HS_VIZ_MAX_HEADS);
            fputs(CLI_FIGOPTS_HELP, stdout);
            return 0;
        case O_MODEL: o->model_path = optarg; break;
        case O_SENT:
            if (o->sentence2) return cli_usage_error(C, "--sentence takes one or two sentences");
            if (o->sentence) o->sentence2 = optarg;
            else o->sentence = optarg;
            break;
        case O_POSS: r = parse_crop(C, optarg, o); break;
        case O_TITLE: o->title = optarg; break;
        case O_NOTITLE: o->no_title = 1; break;
        case O_DIFFMAX:
            if (cli_parse_float(optarg, 1e-6, 1e6, &o->diff_max))
                return cli_usage_error(C, "--diff-max takes a number above 0, not '%s'", optarg);
            break;
        case O_THREADS: r = cli_parse_threads(C, optarg, &a->threads); break;
        case O_OUT: o->out_dir = optarg; break;
        case O_POS: r = parse_position(C, optarg, o); break;
        case O_VS: o->vs = optarg; break;
        case O_HEADS: o->head_rows = 1; break;
        case O_ONLY: o->only_text = optarg; break;
        case O_ALLHEADS: o->all_heads = 1; break;
        case O_TOP:
            if (cli_parse_int(optarg, 1, 1000000, &top))
                return cli_usage_error(C, "--top must be a positive integer, not '%s'", optarg);
            o->top = (int)top;
            break;
        }
    }
    if (r) return r;
    int rest = cli_args_end(C, argc, argv, optind, o->model_path);
    if (rest) return rest;
    if (!o->sentence) return cli_usage_error(C, "--sentence \"...\" is required");
    if (o->only_text && cli_parse_heads(o->only_text, a->sel, &o->n_only))
        return cli_usage_error(C, "--only takes heads like L1H0,L0H1, not '%s'", o->only_text);
    o->only = o->n_only ? a->sel : NULL;
    for (int i = 0; i < o->n_only; i++)
        for (int k = 0; k < i; k++)
            if (a->sel[i].layer == a->sel[k].layer && a->sel[i].head == a->sel[k].head)
                return cli_usage_error(C, "--only lists L%dH%d twice", a->sel[i].layer,
                                       a->sel[i].head);
    return -1;
}

/* Token id as a terminal shows it: its display form (hs_tok_display) with
 * every character that could change the line shown as <U+XXXX>; NULL on OOM. */
static char *shown(const hs_tokenizer *v, int id)
{
    hs_buf d = {0};
    hs_tok_display(v, id, &d);
    char *w = d.oom ? NULL : hs_visible_dup(d.s ? d.s : "");
    hs_buf_free(&d);
    return w;
}

/* The n top predictions ids, probs at pos, one a line. 0, or 1 after
 * printing the error. */
static int print_top(const char *C, const hs_tokenizer *v, int pos, int n, const int *ids,
                     const double *probs)
{
    printf("top predictions at position %d:\n", pos);
    /* one column for the probabilities: tokens padded to the widest shown (in
       terminal columns, cli_term_prefix: a CJK character is two; at least 10),
       one wider than TOP_COLS cut with an ellipsis */
    enum { TOP_COLS = 24 };
    size_t cols = 10;
    for (int i = 0; i < n; i++) {
        char *w = shown(v, ids[i]);
        if (!w) return cli_error(C, &(hs_error){HS_ERR_NOMEM, "out of memory"});
        size_t k;
        cli_term_prefix(w, SIZE_MAX, &k);
        cols = k > cols ? (k > TOP_COLS ? TOP_COLS : k) : cols;
        free(w);
    }
    for (int i = 0; i < n; i++) {
        char *w = shown(v, ids[i]);
        if (!w) return cli_error(C, &(hs_error){HS_ERR_NOMEM, "out of memory"});
        size_t k, m;
        cli_term_prefix(w, SIZE_MAX, &k);
        if (k > cols) { /* cut at a code point within cols - 1 columns, then "…" */
            w[cli_term_prefix(w, cols - 1, &m)] = '\0';
            printf("  %s\u2026%*s %.4f\n", w, (int)(cols - 1 - m), "", probs[i]);
        } else {
            printf("  %s%*s %.4f\n", w, (int)(cols - k), "", probs[i]);
        }
        free(w);
    }
    return 0;
}

/* What inspect prints: the chapter's rows and the predictions (a pair: each
 * sentence's under its name), the logit difference, the files written. 0,
 * or 1 after printing the error. */
static int print_report(const char *C, const hs_inspect_opts *o, const hs_tokenizer *v,
                        const hs_inspect_report *r)
{
    hs_error err = {0};
    char *qv = hs_visible_dup(r->labels[r->pos]);
    if (!qv) return cli_error(C, &(hs_error){HS_ERR_NOMEM, "out of memory"});
    printf("attention from position %d ('%s') over positions 0..%d%s:\n", r->pos, qv, r->pos,
           o->head_rows ? " (per layer, head-averaged; then per head)" : " (per layer, head-averaged)");
    free(qv);
    for (int k = 0; k < (r->rows2 ? 2 : 1); k++) {
        if (r->rows2) {
            char *nm = hs_visible_dup(k ? r->name_b : r->name_a);
            if (!nm) return cli_error(C, &(hs_error){HS_ERR_NOMEM, "out of memory"});
            printf("sentence %c (%s):\n", k ? 'B' : 'A', nm);
            free(nm);
        }
        if (hs_viz_rows_write(stdout, k ? r->rows2 : r->rows, (size_t)r->n_rows,
                              (size_t)r->n_cols, (const char *const *)r->row_labels,
                              (const char *const *)(k ? r->labels2 : r->labels), 0,
                              &err) != HS_OK)
            return cli_error(C, &err);
        if (print_top(C, v, r->pos, r->n_top, k ? r->top_ids2 : r->top_ids,
                      k ? r->top_probs2 : r->top_probs))
            return 1;
        if (k == 0 && r->vs_id >= 0) { /* sentence A's */
            char *wp = shown(v, r->top_ids[0]), *wv = shown(v, r->vs_id);
            char ld[HS_FIXED_BUF];
            if (wp && wv) printf("logit difference %s - %s: %s\n", wp, wv, hs_fmt_fixed(ld, r->logit_diff, 4, 0));
            free(wp);
            free(wv);
            if (!wp || !wv) return cli_error(C, &(hs_error){HS_ERR_NOMEM, "out of memory"});
        }
    }
    printf("wrote %d files to %s (listed in %s/index.json)\n", r->n_files, o->out_dir, o->out_dir);
    return cli_stdout_done(C);
}

int cmd_inspect(int argc, char **argv)
{
    const char *C = "inspect";
    insp_args a;
    hs_figopts fo;
    hs_figopts_default(&fo, 150);
    int rc = parse_args(argc, argv, &a, &fo);
    if (rc >= 0) {
        hs_figopts_free(&fo);
        return rc;
    }
    /* the pool first: the font is resolved (fontconfig) and opened on its
       lane while this thread loads the model and runs it */
    hs_pool *pool = NULL;
    hs_error err = {0};
    if (hs_pool_create(a.threads, &pool, &err) != HS_OK) {
        hs_figopts_free(&fo);
        return cli_error(C, &err);
    }
    hs_figopts_font_start(&fo, pool);
    hs_loaded L;
    rc = cli_load_src(C, a.o.model_path, HS_NEED_VOCAB, &a.from, &L);
    if (rc == 0) {
        const hs_notes notes = cli_notes(C);
        hs_inspect_report r;
        if (hs_inspect_run(L.model, L.vocab, &a.o, &fo, pool, &notes, &r, &err) != HS_OK)
            rc = cli_error(C, &err);
        else
            rc = print_report(C, &a.o, L.vocab, &r);
        hs_inspect_report_free(&r);
        hs_loaded_free(&L);
    }
    hs_pool_destroy(pool); /* after the font job */
    hs_figopts_free(&fo);
    return rc;
}
