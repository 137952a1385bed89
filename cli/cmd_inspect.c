/*
 * cli/cmd_inspect.c -- `headscope inspect`: every head's attention on one
 * sentence (figures + JSON + the chapter's text rows), each component's direct
 * logit attribution at a query position, and the top predictions there.
 * Thin: tokenizer (tasks), run_with_cache + DLA (probe), figures (viz).
 */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "expout.h"
#include "figopts.h"
#include "probe/probe.h"
#include "util.h"
#include "viz/viz.h"

static const char INSPECT_HELP[] =
    "usage: headscope inspect --model FILE --sentence \"...\" [options]\n"
    "\n"
    "Runs the model on one sentence and writes, into the output folder: the layers\n"
    "x heads grid of attention patterns (attention_grid), one figure per head\n"
    "(L<l>H<h>), the head-averaged pattern of each layer (L<l>_mean), every\n"
    "component's direct logit attribution to the predicted token at the query\n"
    "position (dla; with --vs, dla_vs for the logit difference), the top\n"
    "predictions (predictions.json) and index.json listing every file. Each figure\n"
    "is a PNG and an SVG with a JSON beside it holding every number (CircuitsVis'\n"
    "attention_heads shape for attention). Prints the chapter's rows for the query\n"
    "position: one line per layer, head-averaged (L0  the:0.00 animal:0.70 ...).\n"
    "Layers, heads and positions count from 0.\n"
    "\n"
    "  --model FILE           checkpoint (.safetensors with its vocabulary)\n"
    CLI_VOCAB_HELP
    "  --sentence TEXT        words of the model's vocabulary; `,` and `.` split off,\n"
    "                         case folded to lower\n"
    "  --out DIR              output folder (default inspect-out; created if missing,\n"
    "                         its parent must exist). Only files an earlier run wrote\n"
    "                         and nobody changed are replaced; a failed run changes nothing\n"
    "  --position P           query position (default: the last token; negative\n"
    "                         counts from the end, -1 = last)\n"
    "  --vs WORD              also attribute the logit difference predicted - WORD\n"
    "  --heads                also print one row per head (L0H1 ...)\n"
    "  --only LIST            only these heads, e.g. L1H0,L0H1: their figures and a\n"
    "                         grid of just them, in that order (and their rows)\n"
    "  --top K                predictions to show (default 5)\n"
    "  --sentence TEXT (again) a second sentence of the same length (e.g. the tired /\n"
    "                         wet pair): pair_* shows both on one scale, diff_* B - A\n"
    "  --positions A:B        crop the attention figures to positions A..B (sources\n"
    "                         and destinations; labels from the cropped slice)\n"
    "  --title TEXT           the title of the main figure (attention_grid)\n"
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

#define MAX_SEL (HS_MAX_LAYERS * HS_VIZ_MAX_HEADS)

/* The font opened on the pool's lane while the model loads and runs. */
typedef struct {
    hs_figopts *fo;
    hs_status st;
    hs_error err;
} font_job;

static void font_job_run(void *arg)
{
    font_job *j;
    memcpy(&j, arg, sizeof j);
    j->st = hs_figopts_font_open(j->fo, &j->err);
}

/* Parses "L1H0,L0H1" into sel; 0 ok, -1 syntax error. */
static int parse_heads(const char *s, hs_head *sel, int *n)
{
    *n = 0;
    const char *p = s;
    while (1) {
        int l, h, used = 0;
        if (sscanf(p, "L%dH%d%n", &l, &h, &used) != 2 || used == 0 || l < 0 || h < 0) return -1;
        /* no signs or spaces inside a name */
        for (int k = 0; k < used; k++)
            if (p[k] == '-' || p[k] == '+' || p[k] == ' ') return -1;
        if (*n >= MAX_SEL) return -1;
        sel[*n].layer = l;
        sel[*n].head = h;
        (*n)++;
        p += used;
        if (*p == '\0') return 0;
        if (*p != ',') return -1;
        p++;
    }
}

typedef struct {
    const char *model_path, *sentence;
    const hs_config *cfg;
    const hs_tokens *tok;
    int pos;
    int a, b;          /* attention figures show positions a..b (--positions) */
    const char *title; /* --title: the main figure's title, or NULL */
    int no_title;      /* --no-title */
} insp_ctx;

/* The title a figure gets: none with --no-title, --title for the main one. */
static const char *pick_title(const insp_ctx *x, const char *dflt, int main_fig)
{
    if (x->no_title) return NULL;
    if (main_fig && x->title) return x->title;
    return dflt;
}

/* pat [n, T, T] cropped to positions a..b into out [n, b-a+1, b-a+1]. */
static void crop(float *out, const float *pat, size_t n, size_t T, int a, int b)
{
    size_t S = (size_t)(b - a + 1);
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < S; i++)
            memcpy(out + (k * S + i) * S, pat + (k * T + (size_t)a + i) * T + (size_t)a,
                   S * sizeof *out);
}

/* Adds the context every JSON carries: model path + config, sentence, tokens,
 * query position. Returns 0 on OOM. */
static int add_context(cJSON *o, const insp_ctx *x, int with_tokens)
{
    if (!o) return 0;
    cJSON *cfg = hs_config_to_json(x->cfg, HS_CONFIG_JSON_ALL);
    if (!cfg) return 0;
    cJSON_AddItemToObject(o, "config", cfg);
    cJSON_AddStringToObject(o, "model", x->model_path);
    cJSON_AddStringToObject(o, "sentence", x->sentence);
    if (with_tokens) {
        cJSON *t = cJSON_CreateStringArray((const char *const *)x->tok->strs, (int)x->tok->n);
        if (!t) return 0;
        cJSON_AddItemToObject(o, "tokens", t);
    }
    cJSON *ids = cJSON_CreateIntArray(x->tok->ids, (int)x->tok->n);
    if (!ids) return 0;
    cJSON_AddItemToObject(o, "token_ids", ids);
    cJSON_AddNumberToObject(o, "query_position", x->pos);
    return 1;
}

static int oom(const char *C)
{
    fprintf(stderr, "headscope %s: out of memory\n", C);
    return 1;
}

/* The attention JSON of n panels of [T, T] with labels toks, packed for the
 * page (hs_viz_attention_json_packed) or nested for the file, with the context,
 * "first_position" when cropped (first >= 0) and extra's keys; NULL after
 * printing. */
static cJSON *attention_data(const char *C, const insp_ctx *x, int packed, const float *pat,
                             size_t n, size_t T, const char *const *toks,
                             const char *const *names, const char *title, const cJSON *extra,
                             int first)
{
    hs_error err = {0};
    cJSON *j = NULL;
    hs_status s = packed ? hs_viz_attention_json_packed(&j, pat, n, T, toks, names, title, &err)
                         : hs_viz_attention_json(&j, pat, n, T, toks, names, title, &err);
    if (s != HS_OK) {
        cli_error(C, &err);
        return NULL;
    }
    if (!add_context(j, x, 0) || (first >= 0 && !cJSON_AddNumberToObject(j, "first_position", first))) {
        cJSON_Delete(j);
        oom(C);
        return NULL;
    }
    for (const cJSON *it = extra ? extra->child : NULL; it; it = it->next)
        cJSON_AddItemToObject(j, it->string, cJSON_Duplicate(it, 1));
    return j;
}

/* One attention figure set (n panels of [T,T]): a grid (rows x cols with the
 * given headers) or a single pattern, + its JSON; cropped to x->a..x->b with
 * the query row framed. toks: T labels (NULL = the sentence's). A figure over
 * the caps, or one the auto width cannot hold, is written as JSON only with a
 * note; a width the user asked for that cannot hold it is an error.
 * 0 ok, 1 printed. */
static int write_attention(hs_outdir *od, const insp_ctx *x, const char *stem, const float *pat,
                           size_t rows, size_t cols, const char *const *row_h,
                           const char *const *col_h, const char *const *names,
                           const char *title, const char *shows, const cJSON *extra,
                           const char *const *toks)
{
    const char *C = od->cmd;
    size_t T = x->tok->n, n = rows * cols, S = (size_t)(x->b - x->a + 1);
    if (!toks) toks = (const char *const *)x->tok->strs;
    hs_error err = {0};
    hs_viz_figure *fig = NULL;
    cJSON *j = NULL;
    hs_status s = HS_OK;
    float *cp = NULL;
    if (S != T) {
        cp = malloc(n * S * S * sizeof *cp);
        if (!cp) return oom(C);
        crop(cp, pat, n, T, x->a, x->b);
        pat = cp;
        toks += x->a;
        T = S;
    }
    if (hs_figopts_images(od->fo)) {
        hs_viz_options o = hs_figopts_for(od->fo, HS_FIG_ATTENTION, 0);
        o.highlight_row = x->pos - x->a;
        char note[128];
        if (cp && !x->no_title) { /* the crop drops sources: say so on the figure */
            snprintf(note, sizeof note, "positions %d..%d of 0..%zu: rows shown need not sum to 1",
                     x->a, x->b, x->tok->n - 1);
            o.note = note;
        }
        if (T > HS_VIZ_MAX_TOKENS || rows > HS_VIZ_MAX_LAYERS || cols > HS_VIZ_MAX_HEADS) {
            fprintf(stderr, "headscope %s: note: %s is %zu x %zu panels of %zu tokens, over the "
                            "figure caps (%d x %d of %d); writing its JSON only\n", C, stem, rows,
                    cols, T, HS_VIZ_MAX_LAYERS, HS_VIZ_MAX_HEADS, HS_VIZ_MAX_TOKENS);
        } else {
            if (n == 1) s = hs_viz_attention_figure(&fig, pat, T, toks, title, &o, &err);
            else s = hs_viz_grid_figure_labeled(&fig, pat, rows, cols, T, toks, row_h, col_h,
                                                title, &o, &err);
            if (s == HS_ERR_INPUT && !(od->fo->viz.width_in > 0)) {
                fprintf(stderr, "headscope %s: note: %s: %s; writing its JSON only\n", C, stem,
                        err.msg);
                s = HS_OK;
            }
            if (s != HS_OK) {
                free(cp);
                return cli_error(C, &err);
            }
        }
    }
    if (od->page && hs_page_keeps(C, stem)) { /* the page's packed form, before the file's */
        cJSON *pj = attention_data(C, x, 1, pat, n, T, toks, names, title, extra, cp ? x->a : -1);
        if (!pj || cli_out_page(od, stem, pj)) {
            hs_viz_figure_destroy(fig);
            free(cp);
            return 1;
        }
    }
    /* the file's nested form only for --format json: the page has its packed one */
    if (od->fo->json && !(j = attention_data(C, x, 0, pat, n, T, toks, names, title, extra,
                                             cp ? x->a : -1))) {
        hs_viz_figure_destroy(fig);
        free(cp);
        return 1;
    }
    int rc = cli_out_figure(od, stem, &fig, j, shows);
    hs_viz_figure_destroy(fig);
    cJSON_Delete(j);
    free(cp);
    return rc;
}

/* B - A of two patterns [T, T] as a diverging map centred on 0 with the
 * causal triangle masked, cropped like the attention figures. 0 ok, 1 printed. */
static int write_diff(hs_outdir *od, const insp_ctx *x, const char *stem, const float *d,
                      const char *const *toks, const char *title, const char *shows)
{
    const char *C = od->cmd;
    size_t T = x->tok->n, S = (size_t)(x->b - x->a + 1);
    float *m = malloc(S * S * sizeof *m);
    unsigned char *mask = malloc(S * S);
    if (!m || !mask) {
        free(m);
        free(mask);
        return oom(C);
    }
    crop(m, d, 1, T, x->a, x->b);
    double lim = 0;
    for (size_t i = 0; i < S; i++)
        for (size_t j = 0; j < S; j++) {
            mask[i * S + j] = j > i;
            if (j <= i) lim = fmax(lim, fabs(m[i * S + j]));
        }
    toks += x->a;
    hs_error err = {0};
    hs_viz_figure *fig = NULL;
    cJSON *j = NULL;
    int rc = 0;
    if (hs_figopts_images(od->fo)) {
        hs_viz_options o = hs_figopts_for(od->fo, HS_FIG_SIGNED, lim > 0 ? lim : 1.0);
        o.value_label = "attention weight, B - A";
        char note[96];
        if (S != T && !x->no_title) {
            snprintf(note, sizeof note, "positions %d..%d of 0..%zu", x->a, x->b, T - 1);
            o.note = note;
        }
        hs_status s = HS_ERR_INPUT;
        if (S <= HS_VIZ_MAX_TOKENS)
            s = hs_viz_signed_figure_masked(&fig, m, mask, S, S, toks, toks, title,
                                            "source (key)", "destination (query)", &o, &err);
        else
            hs_fail(&err, HS_ERR_INPUT, "%zu tokens, over the figure cap of %d", S,
                    HS_VIZ_MAX_TOKENS);
        if (s == HS_ERR_INPUT && !(od->fo->viz.width_in > 0)) {
            fprintf(stderr, "headscope %s: note: %s: %s; writing its JSON only\n", C, stem, err.msg);
            s = HS_OK;
        }
        if (s != HS_OK) rc = cli_error(C, &err);
    }
    if (!rc && hs_figopts_data(od->fo)) {
        if (hs_viz_signed_json_masked(&j, m, mask, S, S, toks, toks, title, "source (key)",
                                      "destination (query)", &err) != HS_OK)
            rc = cli_error(C, &err);
        else if (!add_context(j, x, 1))
            rc = oom(C);
    }
    if (!rc) rc = cli_out_figure(od, stem, &fig, j, shows);
    hs_viz_figure_destroy(fig);
    cJSON_Delete(j);
    free(m);
    free(mask);
    return rc;
}

/* The query position's row of every head as one heatmap strip: rows = heads,
 * columns = sources 0..pos. pats: [R, T, T], names: R head names. 0 ok, 1 printed. */
static int write_query_row(hs_outdir *od, const insp_ctx *x, const float *pats, size_t R,
                           const char *const *names)
{
    const char *C = od->cmd;
    size_t T = x->tok->n, S = (size_t)x->pos + 1;
    float *m = malloc(R * S * sizeof *m);
    /* the token is the user's text: no fixed buffer */
    char *title = hs_strfmt("attention from position %d ('%s'), by head", x->pos, x->tok->strs[x->pos]);
    char *shows = hs_strfmt("attention row of each head at query position %d over sources 0..%d [head, src]",
                            x->pos, x->pos);
    if (!m || !title || !shows) {
        free(m);
        free(title);
        free(shows);
        return oom(C);
    }
    for (size_t k = 0; k < R; k++)
        memcpy(m + k * S, pats + (k * T + (size_t)x->pos) * T, S * sizeof *m);
    const char *t = pick_title(x, title, 0);
    const char *const *toks = (const char *const *)x->tok->strs;
    hs_error err = {0};
    hs_viz_figure *fig = NULL;
    cJSON *j = NULL;
    int rc = 0;
    if (hs_figopts_images(od->fo)) {
        hs_viz_options o = hs_figopts_for(od->fo, HS_FIG_ATTENTION, 0);
        o.value_label = "attention weight";
        hs_status s = HS_ERR_INPUT;
        if (R <= HS_VIZ_MAX_TOKENS && S <= HS_VIZ_MAX_TOKENS)
            s = hs_viz_matrix_figure(&fig, m, R, S, names, toks, t, "source (key)", "head", &o,
                                     &err);
        else
            hs_fail(&err, HS_ERR_INPUT, "%zu heads x %zu sources, over the figure cap of %d", R, S,
                    HS_VIZ_MAX_TOKENS);
        if (s == HS_ERR_INPUT && !(od->fo->viz.width_in > 0)) {
            fprintf(stderr, "headscope %s: note: query_row: %s; writing its JSON only\n", C,
                    err.msg);
            s = HS_OK;
        }
        if (s != HS_OK) rc = cli_error(C, &err);
    }
    if (!rc && hs_figopts_data(od->fo)) {
        if (hs_viz_signed_json(&j, m, R, S, names, toks, t, "source (key)", "head", &err) != HS_OK)
            rc = cli_error(C, &err);
        else if (!add_context(j, x, 1) || cli_add_scale(j, od->fo, HS_FIG_ATTENTION, 0))
            rc = oom(C); /* the page draws attention on the figure's fixed [0, 1] */
    }
    if (!rc) rc = cli_out_figure(od, "query_row", &fig, j, shows);
    hs_viz_figure_destroy(fig);
    cJSON_Delete(j);
    free(m);
    free(title);
    free(shows);
    return rc;
}

/* The DLA bar chart towards tok_a (or tok_a - tok_b). 0 ok, 1 printed. */
static int write_dla(hs_outdir *od, const insp_ctx *x, const hs_model *m, const hs_cache *cache,
                     const hs_tokenizer *v, int tok_a, int tok_b, const char *stem)
{
    const char *C = od->cmd;
    hs_error err = {0};
    hs_dla d = {0};
    if (hs_logit_attribution(m, cache, 0, x->pos, tok_a, tok_b, &d, &err) != HS_OK)
        return cli_error(C, &err);
    int V = m->cfg.d_vocab, T = (int)x->tok->n;
    const float *logits = hs_cache_get(cache, "logits")->data + (size_t)x->pos * V;
    const float *bU = m->params.b_U;
    double bu = bU ? (double)bU[tok_a] - (tok_b >= 0 ? (double)bU[tok_b] : 0.0) : 0.0;
    double value = (double)logits[tok_a] - (tok_b >= 0 ? (double)logits[tok_b] : 0.0);
    int has_const = m->cfg.ln_final && m->cfg.bias && m->cfg.norm == HS_NORM_LAYERNORM;
    int n = d.n + has_const + (bU != NULL);
    float *vals = malloc((size_t)n * sizeof *vals);
    const char **labels = malloc((size_t)n * sizeof *labels);
    if (!vals || !labels) {
        free(vals);
        free(labels);
        hs_dla_free(&d);
        return oom(C);
    }
    for (int i = 0; i < d.n; i++) {
        vals[i] = (float)d.attr[i];
        labels[i] = d.labels[i];
    }
    int k = d.n;
    if (has_const) {
        vals[k] = (float)d.constant;
        labels[k++] = "ln_final.b";
    }
    if (bU) {
        vals[k] = (float)bu;
        labels[k++] = "unembed.b_U";
    }
    const char *wa = hs_tok_str(v, tok_a), *wb = tok_b >= 0 ? hs_tok_str(v, tok_b) : NULL;
    /* vocabulary words and the prompt's tokens are user text: no fixed buffers */
    char *title, *xlabel, *shows;
    if (tok_b >= 0) {
        title = hs_strfmt("logit difference '%s' - '%s' at position %d ('%s'): %.3f", wa, wb, x->pos,
                          x->tok->strs[x->pos], value);
        xlabel = hs_strfmt("direct contribution to logit('%s') - logit('%s')", wa, wb);
        shows = hs_strfmt("direct logit attribution of each component to logit('%s') - logit('%s') "
                          "at position %d", wa, wb, x->pos);
    } else {
        title = hs_strfmt("direct logit attribution to '%s' at position %d ('%s'): %.3f", wa, x->pos,
                          x->tok->strs[x->pos], value);
        xlabel = hs_strfmt("direct contribution to logit('%s')", wa);
        shows = hs_strfmt("direct logit attribution of each component to the predicted token '%s' "
                          "at position %d", wa, x->pos);
    }
    hs_viz_figure *fig = NULL;
    cJSON *j = NULL;
    int rc = !title || !xlabel || !shows ? oom(C) : 0;
    hs_viz_options bo = hs_figopts_for(od->fo, HS_FIG_BARS, 0);
    const char *t = pick_title(x, title, 0);
    if (!rc && hs_figopts_images(od->fo) &&
        hs_viz_bars_figure(&fig, vals, (size_t)n, labels, t, xlabel, &bo, &err) != HS_OK)
        rc = cli_error(C, &err);
    if (!rc && hs_figopts_data(od->fo)) {
        if (hs_viz_bars_json(&j, vals, (size_t)n, labels, t, xlabel, &err) != HS_OK) {
            rc = cli_error(C, &err);
        } else if (!add_context(j, x, 1)) {
            rc = oom(C);
        } else {
            cJSON_AddStringToObject(j, "target_token", wa);
            cJSON_AddNumberToObject(j, "target_id", tok_a);
            if (tok_b >= 0) {
                cJSON_AddStringToObject(j, "vs_token", wb);
                cJSON_AddNumberToObject(j, "vs_id", tok_b);
            }
            /* the identity a reader can check: sum(values) = metric */
            cJSON_AddStringToObject(j, "metric", tok_b >= 0 ? "logit_diff" : "logit");
            cJSON_AddNumberToObject(j, tok_b >= 0 ? "logit_diff" : "logit", value);
            double sum = 0;
            for (int i = 0; i < n; i++) sum += vals[i];
            cJSON_AddNumberToObject(j, "sum_of_values", sum);
            cJSON_AddNumberToObject(j, "ln_final_bias_term", d.constant);
            cJSON_AddNumberToObject(j, "unembed_bias_term", bu);
            cJSON_AddStringToObject(j, "note",
                                    "values[i] = component i of the final residual stream at "
                                    "query_position, through the final norm with its scale "
                                    "frozen from this run, dotted with the unembedding "
                                    "direction; with the norm's bias (ln_final.b) and b_U they "
                                    "sum to the metric");
            (void)T;
        }
    }
    if (!rc) rc = cli_out_figure(od, stem, &fig, j, shows);
    hs_viz_figure_destroy(fig);
    cJSON_Delete(j);
    free(title);
    free(xlabel);
    free(shows);
    free(vals);
    free(labels);
    hs_dla_free(&d);
    return rc;
}

int cmd_inspect(int argc, char **argv)
{
    enum { O_MODEL = 256, O_SENT, O_OUT, O_POS, O_VS, O_HEADS, O_ONLY, O_TOP, O_HELP, O_POSS,
           O_TITLE, O_NOTITLE, O_THREADS };
    static const struct option opts[] = {{"model", required_argument, 0, O_MODEL},
                                         {"sentence", required_argument, 0, O_SENT},
                                         {"out", required_argument, 0, O_OUT},
                                         {"position", required_argument, 0, O_POS},
                                         {"vs", required_argument, 0, O_VS},
                                         {"heads", no_argument, 0, O_HEADS},
                                         {"only", required_argument, 0, O_ONLY},
                                         {"top", required_argument, 0, O_TOP},
                                         {"positions", required_argument, 0, O_POSS},
                                         {"title", required_argument, 0, O_TITLE},
                                         {"no-title", no_argument, 0, O_NOTITLE},
                                         {"threads", required_argument, 0, O_THREADS},
                                         {"help", no_argument, 0, O_HELP},
                                         CLI_VOCAB_OPT,
                                         CLI_FIGOPTS_LONGOPTS,
                                         {0, 0, 0, 0}};
    const char *C = "inspect", *model = NULL, *sentence = NULL, *out = "inspect-out",
               *vs = NULL, *only = NULL, *sentence2 = NULL, *title_opt = NULL;
    long position = 0, top = 5, crop_a = -1, crop_b = -1;
    const char *pos_arg = NULL; /* --position as typed, for the message */
    int have_pos = 0, heads_rows = 0, no_title = 0, threads = 0, c;
    hs_load_source from = {0};
    hs_figopts fo;
    hs_figopts_default(&fo, 150);
    cli_opts op = {.cmd = C, .src = &from, .fo = &fo};
    while ((c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END) {
        switch (c) {
        case CLI_OPT_EXIT: return op.status;
        case O_HELP:
            printf(INSPECT_HELP, HS_VIZ_MAX_TOKENS, HS_VIZ_MAX_HEADS);
            fputs(CLI_FIGOPTS_HELP, stdout);
            return 0;
        case O_MODEL: model = optarg; break;
        case O_SENT:
            if (sentence2) return cli_usage_error(C, "--sentence takes one or two sentences");
            if (sentence) sentence2 = optarg;
            else sentence = optarg;
            break;
        case O_POSS: {
            char *e = NULL;
            crop_a = strtol(optarg, &e, 10);
            if (e == optarg || *e != ':' || crop_a < 0 ||
                cli_parse_int(e + 1, crop_a, 100000, &crop_b))
                return cli_usage_error(C, "--positions takes A:B with 0 <= A <= B, not '%s'",
                                       optarg);
            break;
        }
        case O_TITLE: title_opt = optarg; break;
        case O_NOTITLE: no_title = 1; break;
        case O_THREADS:
            if (cli_parse_threads(C, optarg, &threads)) return 2;
            break;
        case O_OUT: out = optarg; break;
        case O_POS:
            /* any integer: one beyond the sentence is refused below, naming the range */
            if (cli_parse_int(optarg, LONG_MIN, LONG_MAX, &position)) {
                char *end;
                position = strtol(optarg, &end, 10); /* ERANGE: clamped, still outside */
                if (end == optarg || *end != '\0')
                    return cli_usage_error(C, "--position must be an integer, not '%s'", optarg);
            }
            pos_arg = optarg;
            have_pos = 1;
            break;
        case O_VS: vs = optarg; break;
        case O_HEADS: heads_rows = 1; break;
        case O_ONLY: only = optarg; break;
        case O_TOP:
            if (cli_parse_int(optarg, 1, 1000000, &top))
                return cli_usage_error(C, "--top must be a positive integer, not '%s'", optarg);
            break;
        }
    }
    int rest = cli_args_end(C, argc, argv, optind, model);
    if (rest) return rest;
    if (!sentence) return cli_usage_error(C, "--sentence \"...\" is required");
    hs_head sel[MAX_SEL];
    int n_sel = 0;
    if (only && parse_heads(only, sel, &n_sel))
        return cli_usage_error(C, "--only takes heads like L1H0,L0H1, not '%s'", only);
    for (int i = 0; i < n_sel; i++)
        for (int k = 0; k < i; k++)
            if (sel[i].layer == sel[k].layer && sel[i].head == sel[k].head)
                return cli_usage_error(C, "--only lists L%dH%d twice", sel[i].layer, sel[i].head);

    /* the pool first: the font is resolved (fontconfig) and opened on its
       lane while this thread loads the model and runs it */
    hs_pool *pool = NULL;
    font_job fj = {&fo, HS_OK, {0}};
    {
        hs_error perr = {0};
        if (hs_pool_create(threads, &pool, &perr) != HS_OK) {
            hs_figopts_free(&fo);
            return cli_error(C, &perr);
        }
        const font_job *fjp = &fj;
        hs_pool_async(pool, font_job_run, &fjp, sizeof fjp);
    }
    hs_loaded L;
    int lrc = cli_load_src(C, model, HS_NEED_VOCAB, &from, &L);
    if (lrc) {
        hs_pool_destroy(pool); /* after the font job */
        hs_figopts_free(&fo);
        return lrc;
    }
    const hs_model *m = L.model;
    const hs_config *cfg = &m->cfg;
    int NL = cfg->n_layers, NH = cfg->n_heads, V = cfg->d_vocab;
    hs_error err = {0};
    hs_tokens tok = {0}, vtok = {0}, tok2 = {0};
    hs_acts *acts = NULL;
    hs_cache cache;
    hs_cache_init(&cache);
    hs_outdir od = {0};
    float *pats = NULL, *buf = NULL, *rows = NULL, *pats2 = NULL, *pair = NULL;
    char **pair_labels = NULL;
    char **row_labels = NULL;
    int rc = 1;

    for (int i = 0; i < n_sel; i++)
        if (sel[i].layer >= NL || sel[i].head >= NH) {
            fprintf(stderr, "headscope %s: head L%dH%d is not in the model (%d layers x %d heads: "
                            "L0H0..L%dH%d)\n", C, sel[i].layer, sel[i].head, NL, NH, NL - 1, NH - 1);
            goto done;
        }
    if (n_sel > HS_VIZ_MAX_HEADS) {
        fprintf(stderr, "headscope %s: --only lists %d heads; a figure shows at most %d\n", C,
                n_sel, HS_VIZ_MAX_HEADS);
        goto done;
    }
    if (hs_tok_encode(L.vocab, sentence, (size_t)cfg->n_ctx, &tok, &err) != HS_OK) {
        cli_error(C, &err);
        goto done;
    }
    if (tok.folded)
        fprintf(stderr, "headscope %s: note: folded the sentence to lower case\n", C);
    int T = (int)tok.n;
    if (sentence2) {
        if (hs_tok_encode(L.vocab, sentence2, (size_t)cfg->n_ctx, &tok2, &err) != HS_OK) {
            fprintf(stderr, "headscope %s: second --sentence: %s\n", C, err.msg);
            goto done;
        }
        if (tok2.n != tok.n) {
            fprintf(stderr, "headscope %s: the two sentences have %zu and %zu tokens; a pair and "
                            "its difference need the same number\n", C, tok.n, tok2.n);
            goto done;
        }
    }
    if (crop_a >= 0 && crop_b >= T) {
        fprintf(stderr, "headscope %s: --positions %ld:%ld is outside the sentence's %d tokens "
                        "(0..%d)\n", C, crop_a, crop_b, T, T - 1);
        goto done;
    }
    int pos = T - 1;
    if (have_pos) {
        if (position < -T || position >= T) {
            fprintf(stderr, "headscope %s: --position %s is outside the sentence's %d tokens "
                            "(0..%d, or -1..-%d from the end)\n", C, pos_arg, T, T - 1, T);
            goto done;
        }
        pos = position < 0 ? T + (int)position : (int)position;
    }
    int vs_id = -1;
    if (vs) {
        if (hs_tok_encode(L.vocab, vs, 0, &vtok, &err) != HS_OK) {
            fprintf(stderr, "headscope %s: --vs: %s\n", C, err.msg);
            goto done;
        }
        if (vtok.n != 1) {
            char *w = hs_visible_dup(vs);
            fprintf(stderr, "headscope %s: --vs takes one word of the vocabulary, not %zu ('%s')\n",
                    C, vtok.n, w ? w : "?");
            free(w);
            goto done;
        }
        vs_id = vtok.ids[0];
    }
    if (top > V) top = V;

    /* run with cache */
    static const char *const filters[] = {"blocks.*.attn.hook_pattern", "hook_embed",
                                          "?hook_pos_embed", "blocks.0.hook_resid_pre",
                                          "blocks.*.attn.hook_z", "?blocks.*.hook_mlp_out",
                                          "?ln_final.hook_scale", "logits"};
    if (hs_acts_create(cfg, 1, T, 0, &acts, &err) != HS_OK ||
        hs_run_with_cache(m, acts, tok.ids, 1, T, filters, 8, NULL, &cache, &err) != HS_OK) {
        cli_error(C, &err);
        goto done;
    }
    size_t TT = (size_t)T * T;
    pats = malloc((size_t)NL * NH * TT * sizeof *pats);
    buf = malloc((size_t)(NL > n_sel ? NL : n_sel) * TT * sizeof *buf);
    rows = malloc((size_t)(NL + NL * NH) * T * sizeof *rows);
    row_labels = calloc((size_t)(NL + NL * NH), sizeof *row_labels);
    if (!pats || !buf || !rows || !row_labels) {
        oom(C);
        goto done;
    }
    for (int l = 0; l < NL; l++) {
        const hs_cache_entry *e = hs_cache_getf(&cache, "blocks.%d.attn.hook_pattern", l);
        HS_ASSERT(e && e->numel == (size_t)NH * TT);
        memcpy(pats + (size_t)l * NH * TT, e->data, (size_t)NH * TT * sizeof *pats);
    }
    if (sentence2) {
        /* the second sentence's patterns (same length: the same acts fit) */
        hs_cache c2;
        hs_cache_init(&c2);
        pats2 = malloc((size_t)NL * NH * TT * sizeof *pats2);
        if (!pats2 || hs_run_with_cache(m, acts, tok2.ids, 1, T, filters, 1, NULL, &c2, &err) !=
                          HS_OK) {
            hs_cache_free(&c2);
            if (!pats2) oom(C);
            else cli_error(C, &err);
            goto done;
        }
        for (int l = 0; l < NL; l++) {
            const hs_cache_entry *e = hs_cache_getf(&c2, "blocks.%d.attn.hook_pattern", l);
            HS_ASSERT(e && e->numel == (size_t)NH * TT);
            memcpy(pats2 + (size_t)l * NH * TT, e->data, (size_t)NH * TT * sizeof *pats2);
        }
        hs_cache_free(&c2);
    }
    const float *logits = hs_cache_get(&cache, "logits")->data + (size_t)pos * V;
    for (int i = 0; i < V; i++)
        if (!isfinite(logits[i])) { /* refused before anything is written */
            char *w = hs_visible_dup(hs_tok_str(L.vocab, i));
            fprintf(stderr, "headscope %s: the logit of '%s' at position %d is %s: the weights "
                            "overflow float32\n", C, w ? w : "?", pos,
                    isnan(logits[i]) ? "NaN" : logits[i] > 0 ? "+inf" : "-inf");
            free(w);
            goto done;
        }

    /* predictions: softmax at pos, top K (probe: hs_top_k) */
    int order[HS_VIZ_MAX_BARS > 4096 ? HS_VIZ_MAX_BARS : 4096];
    double prob[sizeof order / sizeof order[0]];
    const int nk = hs_top_k(logits, V, top > 4096 ? 4096 : (int)top, order, prob);
    int pred = order[0];

    insp_ctx x = {model, sentence, cfg, &tok, pos, crop_a >= 0 ? (int)crop_a : 0,
                  crop_a >= 0 ? (int)crop_b : T - 1, title_opt, no_title};
    const char *const inputs[] = {model, NULL}; /* never replaced or removed */
    hs_pool_wait_all(pool); /* the font job */
    if (fj.st != HS_OK) {
        cli_error(C, &fj.err);
        goto done;
    }
    if (cli_outdir_open(&od, C, out, &fo, inputs)) goto done;
    od.pool = pool;
    const char *const *toks = (const char *const *)tok.strs;
    char names[MAX_SEL][32], title[256], shows[256];
    const char *name_p[MAX_SEL];

    /* the grid: every head, or the selected ones side by side */
    if (n_sel == 0) {
        for (int i = 0; i < NL * NH; i++) {
            snprintf(names[i], sizeof names[i], "L%dH%d", i / NH, i % NH);
            name_p[i] = names[i];
        }
        snprintf(shows, sizeof shows, "attention pattern of every head, %d layers x %d heads "
                                      "[dest (query), src (key)]", NL, NH);
        if (write_attention(&od, &x, "attention_grid", pats, (size_t)NL, (size_t)NH, NULL, NULL,
                            name_p, pick_title(&x, "attention patterns of every head (hook_pattern)", 1),
                            shows, NULL, NULL))
            goto done;
        if (write_query_row(&od, &x, pats, (size_t)NL * NH, name_p)) goto done;
    } else {
        for (int i = 0; i < n_sel; i++) {
            snprintf(names[i], sizeof names[i], "L%dH%d", sel[i].layer, sel[i].head);
            name_p[i] = names[i];
            memcpy(buf + (size_t)i * TT,
                   pats + ((size_t)sel[i].layer * NH + sel[i].head) * TT, TT * sizeof *buf);
        }
        const char *empty[1] = {""};
        snprintf(shows, sizeof shows, "attention patterns of the selected heads (--only %s)", only);
        /* the title names the heads: one head is its hook; several, their list */
        if (n_sel == 1) {
            snprintf(title, sizeof title, "%s · blocks.%d.attn.hook_pattern", names[0], sel[0].layer);
        } else {
            size_t k = (size_t)snprintf(title, sizeof title, "attention patterns of ");
            for (int i = 0; i < n_sel && k < sizeof title; i++)
                k += (size_t)snprintf(title + k, sizeof title - k, "%s%s", i ? ", " : "", names[i]);
        }
        if (write_attention(&od, &x, "attention_grid", buf, 1, (size_t)n_sel, empty, name_p,
                            name_p, pick_title(&x, title, 1), shows, NULL, NULL))
            goto done;
        if (write_query_row(&od, &x, buf, (size_t)n_sel, name_p)) goto done;
    }
    /* one figure per head */
    for (int l = 0; l < NL; l++)
        for (int h = 0; h < NH; h++) {
            int want = n_sel == 0;
            for (int i = 0; i < n_sel; i++) want |= sel[i].layer == l && sel[i].head == h;
            if (!want) continue;
            char nm[32];
            snprintf(nm, sizeof nm, "L%dH%d", l, h);
            const char *np[1] = {nm};
            snprintf(title, sizeof title, "L%dH%d · blocks.%d.attn.hook_pattern", l, h, l);
            snprintf(shows, sizeof shows, "attention pattern of head L%dH%d [dest, src]", l, h);
            if (write_attention(&od, &x, nm, pats + ((size_t)l * NH + h) * TT, 1, 1, NULL, NULL,
                                np, pick_title(&x, title, 0), shows, NULL, NULL))
                goto done;
        }
    /* head-averaged pattern per layer */
    for (int l = 0; l < NL; l++) {
        float *mean = buf + (size_t)l * TT;
        for (size_t k = 0; k < TT; k++) {
            double s = 0;
            for (int h = 0; h < NH; h++) s += pats[((size_t)l * NH + h) * TT + k];
            mean[k] = (float)(s / NH);
        }
        char nm[32];
        snprintf(nm, sizeof nm, "L%d_mean", l);
        const char *np[1] = {nm};
        snprintf(title, sizeof title, "L%d, mean over its %d heads", l, NH);
        snprintf(shows, sizeof shows, "attention pattern of layer %d averaged over its %d heads", l,
                 NH);
        cJSON *extra = cJSON_CreateObject();
        cJSON *of = cJSON_AddArrayToObject(extra, "mean_of");
        for (int h = 0; h < NH; h++) {
            char hn[32];
            snprintf(hn, sizeof hn, "L%dH%d", l, h);
            cJSON_AddItemToArray(of, cJSON_CreateString(hn));
        }
        int r = write_attention(&od, &x, nm, mean, 1, 1, NULL, NULL, np, pick_title(&x, title, 0),
                                shows, extra, NULL);
        cJSON_Delete(extra);
        if (r) goto done;
    }
    /* the pair of sentences: per layer mean (and per --only head) */
    if (sentence2) {
        pair = malloc(3 * TT * sizeof *pair);
        pair_labels = calloc((size_t)T + 2, sizeof *pair_labels);
        if (!pair || !pair_labels) {
            oom(C);
            goto done;
        }
        int first_diff = -1;
        for (int i = 0; i < T; i++) {
            int same = strcmp(tok.strs[i], tok2.strs[i]) == 0;
            if (!same && first_diff < 0) first_diff = i;
            size_t n = strlen(tok.strs[i]) + strlen(tok2.strs[i]) + 2;
            pair_labels[i] = malloc(n);
            if (!pair_labels[i]) {
                oom(C);
                goto done;
            }
            if (same) snprintf(pair_labels[i], n, "%s", tok.strs[i]);
            else snprintf(pair_labels[i], n, "%s/%s", tok.strs[i], tok2.strs[i]);
        }
        char ha[64], hb[64];
        if (first_diff >= 0) {
            snprintf(ha, sizeof ha, "A: %s", tok.strs[first_diff]);
            snprintf(hb, sizeof hb, "B: %s", tok2.strs[first_diff]);
        } else {
            snprintf(ha, sizeof ha, "A");
            snprintf(hb, sizeof hb, "B");
        }
        const char *hdr[2] = {ha, hb}, *empty[1] = {""};
        for (int k = 0; k < NL + NL * NH; k++) {
            int l = k < NL ? k : (k - NL) / NH, h = k < NL ? -1 : (k - NL) % NH;
            int want = h < 0;
            for (int i = 0; i < n_sel && h >= 0; i++) want |= sel[i].layer == l && sel[i].head == h;
            if (!want) continue;
            char nm[48], st[64];
            if (h < 0) snprintf(nm, sizeof nm, "L%d_mean", l);
            else snprintf(nm, sizeof nm, "L%dH%d", l, h);
            for (size_t q = 0; q < TT; q++) {
                double sa = 0, sb = 0;
                for (int hh = (h < 0 ? 0 : h); hh < (h < 0 ? NH : h + 1); hh++) {
                    sa += pats[((size_t)l * NH + hh) * TT + q];
                    sb += pats2[((size_t)l * NH + hh) * TT + q];
                }
                int cnt = h < 0 ? NH : 1;
                pair[q] = (float)(sa / cnt);
                pair[TT + q] = (float)(sb / cnt);
                pair[2 * TT + q] = (float)(sb / cnt - sa / cnt);
            }
            const char *pn[2] = {ha, hb};
            snprintf(st, sizeof st, "pair_%s", nm);
            char who[48];
            if (h < 0) snprintf(who, sizeof who, "L%d, mean of its heads", l);
            else snprintf(who, sizeof who, "%s", nm);
            snprintf(title, sizeof title, "%s: sentences A and B on one scale", who);
            snprintf(shows, sizeof shows, "%s attention for sentence A (%s) and B (%s) side by "
                     "side on one colour scale", nm, sentence, sentence2);
            /* side by side on a page; one above the other in a narrower width (a column) */
            int stack = fo.viz.width_in > 0 && fo.viz.width_in < HS_VIZ_PAGE_IN;
            if (write_attention(&od, &x, st, pair, stack ? 2 : 1, stack ? 1 : 2, stack ? hdr : empty,
                                stack ? empty : hdr, pn, pick_title(&x, title, 0), shows, NULL,
                                (const char *const *)pair_labels))
                goto done;
            snprintf(st, sizeof st, "diff_%s", nm);
            snprintf(title, sizeof title, "%s: attention B - A", who);
            snprintf(shows, sizeof shows, "%s attention of sentence B (%s) minus sentence A (%s); "
                     "masked = causal (source after destination)", nm, sentence2, sentence);
            if (write_diff(&od, &x, st, pair + 2 * TT, (const char *const *)pair_labels,
                           pick_title(&x, title, 0), shows))
                goto done;
        }
    }
    /* direct logit attribution */
    if (write_dla(&od, &x, m, &cache, L.vocab, pred, -1, "dla")) goto done;
    if (vs_id >= 0) {
        if (vs_id == pred)
        {
            char *w = hs_visible_dup(hs_tok_str(L.vocab, vs_id));
            fprintf(stderr, "headscope %s: note: --vs %s is the predicted token; the logit "
                            "difference is 0\n", C, w ? w : "?");
            free(w);
        }
        if (write_dla(&od, &x, m, &cache, L.vocab, pred, vs_id, "dla_vs")) goto done;
    }
    /* predictions */
    {
        cJSON *pj = cJSON_CreateObject();
        if (!add_context(pj, &x, 1)) {
            cJSON_Delete(pj);
            oom(C);
            goto done;
        }
        cJSON_AddStringToObject(pj, "query_token", tok.strs[pos]);
        cJSON *arr = cJSON_AddArrayToObject(pj, "predictions");
        for (int i = 0; i < nk; i++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "token", hs_tok_str(L.vocab, order[i]));
            cJSON_AddNumberToObject(e, "id", order[i]);
            cJSON_AddNumberToObject(e, "prob", prob[i]);
            cJSON_AddNumberToObject(e, "logit", logits[order[i]]);
            cJSON_AddItemToArray(arr, e);
        }
        snprintf(shows, sizeof shows, "top %d next-token predictions at position %d with "
                                      "probabilities", nk, pos);
        int r = cli_out_json(&od, "predictions", pj, shows);
        cJSON_Delete(pj);
        if (r) goto done;
    }
    {
        cJSON *extra = cJSON_CreateObject();
        add_context(extra, &x, 1);
        int r = cli_out_index(&od, extra);
        cJSON_Delete(extra);
        if (r) goto done;
    }

    /* the chapter's rows at the query position */
    int S = pos + 1, nr = 0;
    for (int l = 0; l < NL; l++) {
        for (int j = 0; j < S; j++) {
            double s = 0;
            for (int h = 0; h < NH; h++)
                s += pats[(((size_t)l * NH + h) * T + pos) * T + j];
            rows[(size_t)nr * S + j] = (float)(s / NH);
        }
        row_labels[nr] = malloc(32);
        if (!row_labels[nr]) { oom(C); goto done; }
        snprintf(row_labels[nr], 32, "L%d", l);
        nr++;
    }
    /* per-head rows: the --only heads in the user's order, else every head */
    for (int i = 0; heads_rows && i < (n_sel ? n_sel : NL * NH); i++) {
        int l = n_sel ? sel[i].layer : i / NH, h = n_sel ? sel[i].head : i % NH;
        memcpy(rows + (size_t)nr * S, pats + (((size_t)l * NH + h) * T + pos) * T,
               (size_t)S * sizeof *rows);
        row_labels[nr] = malloc(32);
        if (!row_labels[nr]) { oom(C); goto done; }
        snprintf(row_labels[nr], 32, "L%dH%d", l, h);
        nr++;
    }
    char *qv = hs_visible_dup(tok.strs[pos]);
    if (!qv) { oom(C); goto done; }
    printf("attention from position %d ('%s') over positions 0..%d%s:\n", pos, qv, pos,
           heads_rows ? " (per layer, head-averaged; then per head)" : " (per layer, head-averaged)");
    free(qv);
    if (hs_viz_rows_write(stdout, rows, (size_t)nr, (size_t)S, (const char *const *)row_labels,
                          toks, 0, &err) != HS_OK) {
        cli_error(C, &err);
        goto done;
    }
    printf("top predictions at position %d:\n", pos);
    for (int i = 0; i < nk; i++) {
        char *w = hs_visible_dup(hs_tok_str(L.vocab, order[i]));
        if (!w) { oom(C); goto done; }
        printf("  %-10s %.4f\n", w, prob[i]);
        free(w);
    }
    if (vs_id >= 0) {
        char *wp = hs_visible_dup(hs_tok_str(L.vocab, pred));
        char *wv = hs_visible_dup(hs_tok_str(L.vocab, vs_id));
        if (wp && wv)
            printf("logit difference %s - %s: %.4f\n", wp, wv,
                   (double)logits[pred] - logits[vs_id]);
        free(wp);
        free(wv);
        if (!wp || !wv) { oom(C); goto done; }
    }
    cli_out_say_wrote(&od, NULL);
    rc = cli_stdout_done(C);
done:
    hs_outdir_close(&od);
    hs_pool_destroy(pool);
    hs_figopts_free(&fo);
    if (row_labels)
        for (int i = 0; i < NL + NL * NH; i++) free(row_labels[i]);
    free(row_labels);
    free(rows);
    free(buf);
    free(pats);
    hs_cache_free(&cache);
    hs_acts_destroy(acts);
    if (pair_labels) /* before tok is freed: it holds their count */
        for (int i = 0; i < (int)tok.n; i++) free(pair_labels[i]);
    free(pair_labels);
    hs_tokens_free(&vtok);
    hs_tokens_free(&tok);
    hs_tokens_free(&tok2);
    free(pats2);
    free(pair);
    hs_loaded_free(&L);
    return rc;
}
