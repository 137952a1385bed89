/*
 * experiments/inspect_figs.c -- the attention figures of an inspect run
 * (experiments.h, hs_inspect_run): the grid of every head (or of the only
 * heads), one figure per head and per layer mean, cropped with the query row
 * framed; the query row of every head; a pair of sentences on one scale and
 * their difference. Each is written through the run's output folder with its
 * JSON (the context of insp_context added).
 */
#include "experiments/inspect_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hs_status oom(hs_error *err) { return hs_fail(err, HS_ERR_NOMEM, "out of memory"); }

const char *insp_title(const insp_run *x, const char *dflt, int main_fig)
{
    if (x->o->no_title) return NULL;
    if (main_fig && x->o->title) return x->o->title;
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

/* The attention JSON of n panels of [T, T] with labels toks, packed for the
 * page (hs_viz_attention_json_packed) or nested for the file, with the
 * context, "first_position" when cropped (first >= 0) and extra's keys. */
static hs_status attention_data(const insp_run *x, int packed, const float *pat, size_t n,
                                size_t T, const char *const *toks, const char *const *names,
                                const char *title, const cJSON *extra, int first, cJSON **out,
                                hs_error *err)
{
    cJSON *j = NULL;
    hs_status s = packed ? hs_viz_attention_json_packed(&j, pat, n, T, toks, names, title, err)
                         : hs_viz_attention_json(&j, pat, n, T, toks, names, title, err);
    if (s != HS_OK) return s;
    int ok = insp_context(j, x, 0) &&
             (first < 0 || cJSON_AddNumberToObject(j, "first_position", first));
    for (const cJSON *it = extra ? extra->child : NULL; ok && it; it = it->next) {
        cJSON *dup = cJSON_Duplicate(it, 1);
        ok = dup && cJSON_AddItemToObject(j, it->string, dup);
        if (!ok) cJSON_Delete(dup);
    }
    if (!ok) {
        cJSON_Delete(j);
        return oom(err);
    }
    *out = j;
    return HS_OK;
}

/* What an attention figure set is: its panels, their headers and names. */
typedef struct {
    const char *stem;
    size_t rows, cols;                /* panels */
    const char *const *row_h, *const *col_h; /* grid headers (NULL: L<l> / H<h>) */
    const char *const *names;         /* rows * cols panel names */
    const char *title, *shows;
    const cJSON *extra;               /* keys added to its JSON, or NULL */
    const char *const *toks;          /* T labels, or NULL for sentence A's */
    int data_only;                    /* 1: its JSON alone (its picture is another figure's) */
} att_fig;

/* One attention figure set of rows x cols patterns pat [n, T, T]: a grid or
 * a single pattern, and its JSON; cropped to x->a..x->b with the query row
 * framed. A figure over the caps, or one the width cannot hold, is written
 * as JSON only with a note naming its files (hs_outdir_unfit). */
/* One font size per run (a reviewer's checklist): with no --font-size, the
 * first figure drawn takes the largest size its labels fit at (8 pt down to
 * 6); every later figure of the run is drawn at that size and no smaller,
 * thinning its labels where they do not fit (a default-model grid at 7.5 pt
 * in a column had its heads, strip and bars at 8). */
static void insp_pin_font(const insp_run *x, const hs_viz_figure *fig)
{
    const double pt = hs_viz_figure_label_pt(fig);
    if (fig && x->fo && x->fo->viz.font_min_pt > 0 && pt > 0) {
        x->fo->viz.font_pt = pt;
        x->fo->viz.font_min_pt = 0;
    }
}

static hs_status write_attention(const insp_run *x, const att_fig *f, const float *pat,
                                 hs_error *err)
{
    hs_outdir *od = x->od;
    size_t T = (size_t)x->T, n = f->rows * f->cols, S = (size_t)(x->b - x->a + 1);
    const char *const *toks = f->toks ? f->toks : x->lab;
    hs_viz_figure *fig = NULL;
    cJSON *j = NULL;
    hs_status s = HS_OK;
    float *cp = NULL;
    if (S != T) {
        cp = malloc(n * S * S * sizeof *cp);
        if (!cp) return oom(err);
        crop(cp, pat, n, T, x->a, x->b);
        pat = cp;
        toks += x->a;
        T = S;
    }
    if (hs_figopts_images(od->fo) && !f->data_only) {
        hs_viz_options vo = hs_figopts_for(od->fo, HS_FIG_ATTENTION, 0);
        vo.highlight_row = x->pos - x->a;
        char note[128];
        if (cp && !x->o->no_title) { /* the crop drops sources: say so on the figure */
            snprintf(note, sizeof note, "positions %d..%d of 0..%d: rows shown need not sum to 1",
                     x->a, x->b, x->T - 1);
            vo.note = note;
        }
        if (T > HS_VIZ_MAX_TOKENS || f->rows > HS_VIZ_MAX_LAYERS || f->cols > HS_VIZ_MAX_HEADS) {
            hs_note(x->notes, HS_NOTE_CMD, "note: %s is %zu x %zu panels of %zu tokens, over the "
                    "figure caps (%d x %d of %d); writing its JSON only", f->stem, f->rows, f->cols,
                    T, HS_VIZ_MAX_LAYERS, HS_VIZ_MAX_HEADS, HS_VIZ_MAX_TOKENS);
        } else {
            hs_error fe = {0};
            if (n == 1) s = hs_viz_attention_figure(&fig, pat, T, toks, f->title, &vo, &fe);
            else s = hs_viz_grid_figure_labeled(&fig, pat, f->rows, f->cols, T, toks, f->row_h,
                                                f->col_h, f->title, &vo, &fe);
            if (s == HS_OK) insp_pin_font(x, fig);
            s = hs_outdir_unfit(od, f->stem, s, &fe, err);
        }
    }
    const int first = cp ? x->a : -1;
    if (s == HS_OK && hs_outdir_page_wants(od, f->stem)) { /* the page's packed form first */
        cJSON *pj = NULL;
        s = attention_data(x, 1, pat, n, T, toks, f->names, f->title, f->extra, first, &pj, err);
        if (s == HS_OK) s = hs_outdir_page(od, f->stem, pj, err);
    }
    /* the file's nested form only for --format json: the page has its packed one */
    if (s == HS_OK && od->fo->json)
        s = attention_data(x, 0, pat, n, T, toks, f->names, f->title, f->extra, first, &j, err);
    if (s == HS_OK) s = hs_outdir_figure(od, f->stem, &fig, j, f->shows, err);
    hs_viz_figure_destroy(fig);
    cJSON_Delete(j);
    free(cp);
    return s;
}

/* The differences' colour scale: [-lim, lim] fixed (lim > 0), or per figure
 * (lim 0, an explicit --range auto), into vo; the same into j's
 * "colour_scale" when j. 0 when memory ran out. */
static int diff_scale(const insp_run *x, double lim, hs_viz_options *vo, cJSON *j)
{
    if (vo) {
        *vo = hs_figopts_for(x->od->fo, HS_FIG_SIGNED, lim);
        if (lim > 0) { /* vmin/vmax are attention's: the difference keeps its own */
            vo->range = HS_VIZ_RANGE_FIXED;
            vo->vmin = -lim;
            vo->vmax = lim;
        }
    }
    if (!j) return 1;
    cJSON *o = cJSON_AddObjectToObject(j, "colour_scale");
    return o && cJSON_AddStringToObject(o, "cmap", "diverging") &&
           cJSON_AddStringToObject(o, "range", lim > 0 ? "fixed" : "auto") &&
           (!(lim > 0) || (cJSON_AddNumberToObject(o, "vmin", -lim) &&
                           cJSON_AddNumberToObject(o, "vmax", lim)));
}

/* What a difference is: B - A as the words that differ ("wet − tired"),
 * the shared colour scale lim (0: per figure). */
typedef struct {
    const char *minus;
    double lim;
} diff_def;

/* B - A of two patterns d [T, T] as a diverging map centred on 0 with the
 * causal triangle masked, cropped like the attention figures, on dd's scale.
 * toks: T labels. */
static hs_status write_diff(const insp_run *x, const char *stem, const float *d,
                            const char *const *toks, const char *title, const char *shows,
                            const diff_def *dd, hs_error *err)
{
    hs_outdir *od = x->od;
    size_t T = (size_t)x->T, S = (size_t)(x->b - x->a + 1);
    float *m = malloc(S * S * sizeof *m);
    unsigned char *mask = malloc(S * S);
    char *qty = hs_strfmt("attention weight, %s", dd->minus);
    if (!m || !mask || !qty) {
        free(m);
        free(mask);
        free(qty);
        return oom(err);
    }
    crop(m, d, 1, T, x->a, x->b);
    for (size_t i = 0; i < S; i++)
        for (size_t j = 0; j < S; j++) mask[i * S + j] = j > i;
    toks += x->a;
    hs_viz_figure *fig = NULL;
    cJSON *j = NULL;
    hs_status s = HS_OK;
    if (hs_figopts_images(od->fo)) {
        hs_viz_options vo;
        diff_scale(x, dd->lim, &vo, NULL);
        vo.value_label = qty;
        char note[96];
        if (S != T && !x->o->no_title) {
            snprintf(note, sizeof note, "positions %d..%d of 0..%zu", x->a, x->b, T - 1);
            vo.note = note;
        }
        hs_error fe = {0};
        hs_status fs = HS_ERR_INPUT;
        if (S <= HS_VIZ_MAX_TOKENS)
            fs = hs_viz_signed_figure_masked(&fig, m, mask, S, S, toks, toks, title,
                                             "source (key)", "destination (query)", &vo, &fe);
        else
            hs_fail(&fe, HS_ERR_INPUT, "%zu tokens, over the figure cap of %d", S,
                    HS_VIZ_MAX_TOKENS);
        s = hs_outdir_unfit(od, stem, fs, &fe, err);
    }
    if (s == HS_OK && hs_figopts_data(od->fo)) {
        s = hs_viz_signed_json_masked(&j, m, mask, S, S, toks, toks, title, "source (key)",
                                      "destination (query)", err);
        if (s == HS_OK && !(insp_context(j, x, 1) && diff_scale(x, dd->lim, NULL, j) &&
                            cJSON_AddStringToObject(j, "difference", dd->minus) &&
                            cJSON_AddStringToObject(j, "sentence2", x->o->sentence2)))
            s = oom(err);
    }
    if (s == HS_OK) s = hs_outdir_figure(od, stem, &fig, j, shows, err);
    hs_viz_figure_destroy(fig);
    cJSON_Delete(j);
    free(m);
    free(mask);
    free(qty);
    return s;
}

/* The note under a query-row strip cropped to sources c0..c1 of 0..pos. */
static const char *crop_row_note(char *note, size_t n, int c0, int c1, int pos)
{
    snprintf(note, n, "sources %d..%d of 0..%d: rows shown need not sum to 1", c0, c1, pos);
    return note;
}

/* The query position's row of every head as one heatmap strip: rows = heads,
 * columns = sources a..min(b, pos) (the crop). pats: [R, T, T], names: R
 * head names. */
static hs_status write_query_row(const insp_run *x, const float *pats, size_t R,
                                 const char *const *names, hs_error *err)
{
    hs_outdir *od = x->od;
    const int c0 = x->a, c1 = x->b < x->pos ? x->b : x->pos;
    if (c1 < c0) {
        hs_note(x->notes, HS_NOTE_CMD, "note: query_row: the crop %d..%d holds no source of "
                "position %d; not written", x->a, x->b, x->pos);
        return HS_OK;
    }
    size_t T = (size_t)x->T, S = (size_t)(c1 - c0 + 1);
    float *m = malloc(R * S * sizeof *m);
    /* the token is the user's text: no fixed buffer; quoted as the axes show it */
    char *q = insp_tok_shown(x->tok, x->ta->ids[x->pos]);
    char *title = q ? hs_strfmt("attention from position %d ('%s'), by head%s", x->pos, q,
                                x->tag ? x->tag : "")
                    : NULL;
    free(q);
    char *shows = hs_strfmt("attention row of each head at query position %d over sources %d..%d "
                            "[head, src]", x->pos, c0, c1);
    hs_viz_figure *fig = NULL;
    cJSON *j = NULL;
    hs_status s = !m || !title || !shows ? oom(err) : HS_OK;
    for (size_t k = 0; s == HS_OK && k < R; k++)
        memcpy(m + k * S, pats + (k * T + (size_t)x->pos) * T + (size_t)c0, S * sizeof *m);
    const char *t = insp_title(x, title, 0), *const *cols = x->lab + c0;
    if (s == HS_OK && hs_figopts_images(od->fo)) {
        hs_viz_options vo = hs_figopts_for(od->fo, HS_FIG_ATTENTION, 0);
        vo.value_label = "attention weight";
        char note[128];
        if ((c0 > 0 || c1 < x->pos) && !x->o->no_title) /* the crop drops sources: say so */
            vo.note = crop_row_note(note, sizeof note, c0, c1, x->pos);
        hs_error fe = {0};
        hs_status fs = HS_ERR_INPUT;
        if (R <= HS_VIZ_MAX_TOKENS && S <= HS_VIZ_MAX_TOKENS)
            fs = hs_viz_matrix_figure(&fig, m, R, S, names, cols, t, "source (key)", "head", &vo,
                                      &fe);
        else if (!x->o->n_only && R == (size_t)x->L * x->H && S <= HS_VIZ_MAX_TOKENS &&
                 x->L <= HS_VIZ_MAX_LAYERS && x->H <= HS_VIZ_MAX_HEADS)
            /* more heads than a matrix's rows (GPT-2's 144): a block per layer */
            fs = hs_viz_rows_blocks_figure(&fig, m, (size_t)x->L, (size_t)x->H, S, cols, t,
                                           "source (key)", &vo, &fe);
        else
            hs_fail(&fe, HS_ERR_INPUT, "%zu heads x %zu sources, over the figure cap of %d", R, S,
                    HS_VIZ_MAX_TOKENS);
        s = hs_outdir_unfit(od, "query_row", fs, &fe, err);
    }
    if (s == HS_OK && hs_figopts_data(od->fo)) {
        s = hs_viz_signed_json(&j, m, R, S, names, cols, t, "source (key)", "head", err);
        if (s == HS_OK && !(insp_context(j, x, 1) &&
                            (c0 == 0 || cJSON_AddNumberToObject(j, "first_position", c0))))
            s = oom(err);
        /* the page draws attention on the figure's fixed [0, 1] */
        if (s == HS_OK) s = hs_figopts_add_scale(j, od->fo, HS_FIG_ATTENTION, 0, err);
    }
    if (s == HS_OK) s = hs_outdir_figure(od, "query_row", &fig, j, shows, err);
    hs_viz_figure_destroy(fig);
    cJSON_Delete(j);
    free(m);
    free(title);
    free(shows);
    return s;
}

/* The grid (every head, or only's side by side) and the query row. */
static hs_status fig_grid(const insp_run *x, hs_error *err)
{
    const hs_inspect_opts *o = x->o;
    const int L = x->L, H = x->H, n = o->n_only ? o->n_only : L * H;
    const size_t TT = (size_t)x->T * x->T;
    hs_labels names;
    hs_labels_init(&names, (size_t)n);
    for (int i = 0; i < n; i++)
        if (o->n_only) hs_labels_set(&names, (size_t)i, "L%dH%d", o->only[i].layer, o->only[i].head);
        else hs_labels_set(&names, (size_t)i, "L%dH%d", i / H, i % H);
    float *sel = o->n_only ? malloc((size_t)n * TT * sizeof *sel) : NULL;
    hs_buf title = {0}, list = {0};
    char *shows = NULL;
    hs_status s = names.oom || (o->n_only && !sel) ? oom(err) : HS_OK;
    const char *const empty[1] = {""};
    att_fig f = {.stem = "attention_grid", .names = names.at};
    if (s == HS_OK && !o->n_only) {
        shows = hs_strfmt("attention pattern of every head, %d layers x %d heads "
                          "[dest (query), src (key)]", L, H);
        f.rows = (size_t)L;
        f.cols = (size_t)H;
        hs_buf_puts(&title, "attention of every head");
    } else if (s == HS_OK) {
        for (int i = 0; i < n; i++) {
            const hs_head *h = &o->only[i];
            memcpy(sel + (size_t)i * TT, x->pats + ((size_t)h->layer * H + h->head) * TT,
                   TT * sizeof *sel);
            hs_buf_printf(&list, "%s%s", i ? "," : "", names.at[i]);
        }
        shows = hs_strfmt("attention patterns of the selected heads (--only %s)",
                          o->only_text ? o->only_text : list.s ? list.s : "");
        /* the title names the heads: one head, or their list */
        if (n == 1) {
            hs_buf_printf(&title, "%s attention", names.at[0]);
        } else {
            hs_buf_puts(&title, "attention of ");
            for (int i = 0; i < n; i++) hs_buf_printf(&title, "%s%s", i ? ", " : "", names.at[i]);
        }
        f.rows = 1;
        f.cols = (size_t)n;
        f.row_h = empty;
        f.col_h = names.at;
        f.data_only = n == 1; /* one head: L<l>H<h> is its picture, and the main figure */
    }
    hs_buf_puts(&title, x->tag ? x->tag : "");
    if (title.oom || list.oom) s = oom(err);
    f.title = insp_title(x, title.s, n > 1 || !o->n_only);
    f.shows = shows;
    if (s == HS_OK && !shows) s = oom(err);
    if (s == HS_OK) s = write_attention(x, &f, sel ? sel : x->pats, err);
    if (s == HS_OK) s = write_query_row(x, sel ? sel : x->pats, (size_t)n, names.at, err);
    free(sel);
    free(shows);
    hs_buf_free(&title);
    hs_buf_free(&list);
    hs_labels_free(&names);
    return s;
}

/* 1 when head (l, h) is drawn on its own: every head, or one of only. */
static int wanted(const hs_inspect_opts *o, int l, int h)
{
    int want = o->n_only == 0;
    for (int i = 0; i < o->n_only; i++) want |= o->only[i].layer == l && o->only[i].head == h;
    return want;
}

/* One figure per head (every head, or only's; every head of a model over
 * HS_INSPECT_PER_HEAD_MAX heads only under all_heads), then the
 * head-averaged pattern of each layer. */
static hs_status fig_heads(const insp_run *x, hs_error *err)
{
    const int L = x->L, H = x->H;
    const size_t TT = (size_t)x->T * x->T;
    char nm[32], shows[128], *title = NULL;
    const char *tag = x->tag ? x->tag : ""; /* user text: no fixed buffer */
    const char *np[1] = {nm};
    hs_status s = HS_OK;
    /* a large model: per-head files only when asked (--only, --all-heads) */
    const int per_head = x->o->n_only > 0 || x->o->all_heads || L * H <= HS_INSPECT_PER_HEAD_MAX;
    if (!per_head)
        hs_note(x->notes, HS_NOTE_CMD, "note: %d heads (over %d): no figure per head (L<l>H<h>); "
                "attention_grid.json holds every head's pattern; ask for heads with --only L0H1,... "
                "or for all of them with --all-heads", L * H, HS_INSPECT_PER_HEAD_MAX);
    for (int l = 0; per_head && s == HS_OK && l < L; l++)
        for (int h = 0; s == HS_OK && h < H; h++) {
            if (!wanted(x->o, l, h)) continue;
            snprintf(nm, sizeof nm, "L%dH%d", l, h);
            free(title);
            if (!(title = hs_strfmt("L%dH%d attention%s", l, h, tag))) s = oom(err);
            snprintf(shows, sizeof shows, "attention pattern of head L%dH%d [dest, src]", l, h);
            att_fig f = {.stem = nm, .rows = 1, .cols = 1, .names = np,
                         .title = insp_title(x, title, x->o->n_only == 1), .shows = shows};
            if (s == HS_OK) s = write_attention(x, &f, x->pats + ((size_t)l * H + h) * TT, err);
        }
    float *mean = malloc(TT * sizeof *mean);
    if (s == HS_OK && !mean) s = oom(err);
    for (int l = 0; s == HS_OK && l < L; l++) {
        for (size_t k = 0; k < TT; k++) {
            double sum = 0;
            for (int h = 0; h < H; h++) sum += x->pats[((size_t)l * H + h) * TT + k];
            mean[k] = (float)(sum / H);
        }
        snprintf(nm, sizeof nm, "L%d_mean", l);
        free(title);
        if (!(title = hs_strfmt("L%d attention, mean of its %d heads%s", l, H, tag))) {
            s = oom(err);
            break;
        }
        snprintf(shows, sizeof shows, "attention pattern of layer %d averaged over its %d heads",
                 l, H);
        cJSON *extra = cJSON_CreateObject();
        cJSON *of = cJSON_AddArrayToObject(extra, "mean_of");
        int ok = of != NULL;
        for (int h = 0; ok && h < H; h++) {
            char hn[32];
            snprintf(hn, sizeof hn, "L%dH%d", l, h);
            ok = cJSON_AddItemToArray(of, cJSON_CreateString(hn));
        }
        att_fig f = {.stem = nm, .rows = 1, .cols = 1, .names = np,
                     .title = insp_title(x, title, 0), .shows = shows, .extra = extra};
        s = ok ? write_attention(x, &f, mean, err) : oom(err);
        cJSON_Delete(extra);
    }
    free(mean);
    free(title);
    return s;
}

/* Layer l's mean (h < 0) or head (l, h) of A, B and B - A into pair [3, T, T]. */
static void pair_fill(const insp_run *x, int l, int h, float *pair)
{
    const int H = x->H, h0 = h < 0 ? 0 : h, h1 = h < 0 ? H : h + 1;
    const size_t TT = (size_t)x->T * x->T;
    for (size_t q = 0; q < TT; q++) {
        double sa = 0, sb = 0;
        for (int hh = h0; hh < h1; hh++) {
            sa += x->pats[((size_t)l * H + hh) * TT + q];
            sb += x->pats2[((size_t)l * H + hh) * TT + q];
        }
        pair[q] = (float)(sa / (h1 - h0));
        pair[TT + q] = (float)(sb / (h1 - h0));
        pair[2 * TT + q] = (float)(sb / (h1 - h0) - sa / (h1 - h0));
    }
}

/* The pair's figures of layer l's mean (h < 0) or head (l, h): A and B on
 * one scale, side by side (stacked in a narrower width than a page), and B -
 * A on dd's scale. pair: scratch [3, T, T]; pl: T pair labels ("tired/wet");
 * hdr: the two sentences' names ("tired", "wet"). */
static hs_status fig_pair_one(const insp_run *x, int l, int h, float *pair,
                              const char *const *pl, const char *const *hdr, const diff_def *dd,
                              hs_error *err)
{
    const size_t TT = (size_t)x->T * x->T;
    char nm[48], st[64], who[48];
    if (h < 0) snprintf(nm, sizeof nm, "L%d_mean", l);
    else snprintf(nm, sizeof nm, "L%dH%d", l, h);
    pair_fill(x, l, h, pair);
    if (h < 0) snprintf(who, sizeof who, "L%d mean", l);
    else snprintf(who, sizeof who, "%s", nm);
    const char *s1 = x->o->sentence, *s2 = x->o->sentence2;
    char *t1 = hs_strfmt("%s attention: %s and %s on one scale", who, hdr[0], hdr[1]);
    char *w1 = hs_strfmt("%s attention for sentence A (%s) and B (%s) side by side on one colour "
                         "scale", nm, s1, s2);
    char *t2 = hs_strfmt("%s attention: %s", who, dd->minus);
    char *w2 = hs_strfmt("%s attention of sentence B (%s) minus sentence A (%s); masked = causal "
                         "(source after destination)", nm, s2, s1);
    hs_status s = !t1 || !w1 || !t2 || !w2 ? oom(err) : HS_OK;
    /* side by side on a page; one above the other in a narrower width (a column) */
    const double w = x->od->fo->viz.width_in;
    const int stack = w > 0 && w < HS_VIZ_PAGE_IN;
    const char *const empty[1] = {""};
    snprintf(st, sizeof st, "pair_%s", nm);
    att_fig f = {.stem = st, .rows = stack ? 2 : 1, .cols = stack ? 1 : 2,
                 .row_h = stack ? hdr : empty, .col_h = stack ? empty : hdr, .names = hdr,
                 .title = insp_title(x, t1, 0), .shows = w1, .toks = pl};
    if (s == HS_OK) s = write_attention(x, &f, pair, err);
    snprintf(st, sizeof st, "diff_%s", nm);
    if (s == HS_OK)
        s = write_diff(x, st, pair + 2 * TT, pl, insp_title(x, t2, 0), w2, dd, err);
    free(t1);
    free(w1);
    free(t2);
    free(w2);
    return s;
}

/* The pair's figures in order: k < L layer k's mean, then the only heads;
 * 0 when k is not drawn. */
static int pair_at(const insp_run *x, int k, int *l, int *h)
{
    *l = k < x->L ? k : (k - x->L) / x->H;
    *h = k < x->L ? -1 : (k - x->L) % x->H;
    return *h < 0 || (x->o->n_only > 0 && wanted(x->o, *l, *h));
}

/* The differences' shared scale: o's diff_max, else the largest |B - A| of
 * the figures drawn (inside the crop, the causal triangle) rounded up to a
 * multiple of 0.05 (a colour bar ends at a round number); 0 = per figure
 * (an explicit --range auto). pair: scratch [3, T, T]. */
static double diff_limit(const insp_run *x, float *pair)
{
    if (x->o->diff_max > 0) return x->o->diff_max;
    if (x->od->fo->range_set && x->od->fo->viz.range == HS_VIZ_RANGE_AUTO) return 0;
    const size_t T = (size_t)x->T, TT = T * T;
    double big = 0;
    for (int k = 0, l, h; k < x->L + x->L * x->H; k++) {
        if (!pair_at(x, k, &l, &h)) continue;
        pair_fill(x, l, h, pair);
        for (size_t i = 0; i < T; i++) /* the crop's, and the query row's (the strip) */
            for (size_t j = (size_t)x->a; j <= i && j <= (size_t)x->b; j++)
                if (i == (size_t)x->pos || (i >= (size_t)x->a && i <= (size_t)x->b))
                    big = fmax(big, fabs(pair[2 * TT + i * T + j]));
    }
    double lim = ceil(big * 20 - 1e-6) / 20;
    return lim < 0.05 ? 0.05 : lim;
}

void insp_pair_names(const insp_run *x, char **na, char **nb)
{
    int nd = 0;
    for (int i = 0; i < x->T; i++) nd += x->ta->ids[i] != x->ids2[i];
    if (nd < 1 || nd > 3) {
        *na = hs_strdup("sentence 1");
        *nb = hs_strdup("sentence 2");
        return;
    }
    hs_buf a = {0}, b = {0};
    if (nd > 1) hs_buf_puts(&a, "("), hs_buf_puts(&b, "(");
    for (int i = 0, k = 0; i < x->T; i++) {
        if (x->ta->ids[i] == x->ids2[i]) continue;
        hs_buf_printf(&a, "%s%s", k ? ", " : "", x->lab[i]);
        hs_buf_printf(&b, "%s%s", k++ ? ", " : "", x->lab2[i]);
    }
    if (nd > 1) hs_buf_puts(&a, ")"), hs_buf_puts(&b, ")");
    *na = hs_buf_take(&a);
    *nb = hs_buf_take(&b);
}

/* query_row_pair: the query row of each layer's mean (or of each only
 * head) in sentence A and B, and B - A under them, as one strip over the
 * sources a..min(b, pos); pl: T pair labels, hdr: the sentences' names. */
static hs_status write_query_row_pair(const insp_run *x, const char *const *pl,
                                      const char *const *hdr, const diff_def *dd, hs_error *err)
{
    hs_outdir *od = x->od;
    const int n = x->o->n_only ? x->o->n_only : x->L, c0 = x->a, c1 = x->b < x->pos ? x->b : x->pos;
    const size_t T = (size_t)x->T, TT = T * T, C = c1 >= c0 ? (size_t)(c1 - c0 + 1) : 0;
    if (C == 0) {
        hs_note(x->notes, HS_NOTE_CMD, "note: query_row_pair: the crop %d..%d holds no source of "
                "position %d; not written", x->a, x->b, x->pos);
        return HS_OK;
    }
    float *rows = malloc((size_t)3 * n * C * sizeof *rows), *diff = rows + (size_t)2 * n * C;
    float *pair = malloc(3 * TT * sizeof *pair);
    hs_labels rl, dl;
    hs_labels_init(&rl, (size_t)2 * n);
    hs_labels_init(&dl, (size_t)n);
    char *title = hs_strfmt("attention from position %d ('%s'): %s, %s and %s", x->pos, pl[x->pos],
                            hdr[0], hdr[1], dd->minus);
    char *shows = hs_strfmt("query row at position %d of sentence A, B and B - A per %s over "
                            "sources %d..%d [row, src]", x->pos, x->o->n_only ? "head" : "layer "
                            "(head-averaged)", c0, c1);
    hs_status s = !rows || !pair || rl.oom || dl.oom || !title || !shows ? oom(err) : HS_OK;
    for (int k = 0; s == HS_OK && k < n; k++) {
        int l = x->o->n_only ? x->o->only[k].layer : k, h = x->o->n_only ? x->o->only[k].head : -1;
        pair_fill(x, l, h, pair);
        for (int w = 0; w < 3; w++) {
            float *dst = w < 2 ? rows + ((size_t)2 * k + (size_t)w) * C : diff + (size_t)k * C;
            memcpy(dst, pair + (size_t)w * TT + (size_t)x->pos * T + (size_t)c0, C * sizeof *dst);
        }
        char nm[32];
        if (h < 0) snprintf(nm, sizeof nm, "L%d", l);
        else snprintf(nm, sizeof nm, "L%dH%d", l, h);
        hs_labels_set(&rl, (size_t)2 * k, "%s %s", nm, hdr[0]);
        hs_labels_set(&rl, (size_t)2 * k + 1, "%s %s", nm, hdr[1]);
        hs_labels_set(&dl, (size_t)k, "%s %s", nm, dd->minus);
    }
    if (s == HS_OK && (rl.oom || dl.oom)) s = oom(err);
    const char *t = insp_title(x, title, 0), *const *cols = pl + c0;
    hs_viz_figure *fig = NULL;
    cJSON *j = NULL, *jd = NULL;
    double lim = dd->lim, big = 0; /* per figure (--range auto): its own largest |B - A| */
    for (size_t i = 0; i < (size_t)n * C; i++) big = fmax(big, fabs(diff[i]));
    if (!(lim > 0)) lim = fmax(ceil(big * 20 - 1e-6) / 20, 0.05);
    if (s == HS_OK && hs_figopts_images(od->fo)) {
        hs_viz_options vo = hs_figopts_for(od->fo, HS_FIG_ATTENTION, 0);
        char note[128];
        if ((c0 > 0 || c1 < x->pos) && !x->o->no_title)
            vo.note = crop_row_note(note, sizeof note, c0, c1, x->pos);
        hs_error fe = {0};
        hs_status fs = hs_viz_rows_pair_figure(&fig, rows, (size_t)2 * n, rl.at, diff, (size_t)n,
                                               dl.at, C, cols, t, "source (key)", lim,
                                               dd->minus, &vo, &fe);
        s = hs_outdir_unfit(od, "query_row_pair", fs, &fe, err);
    }
    if (s == HS_OK && hs_figopts_data(od->fo)) {
        s = hs_viz_signed_json(&j, rows, (size_t)2 * n, C, rl.at, cols, t, "source (key)", "row",
                               err);
        if (s == HS_OK) s = hs_viz_signed_json(&jd, diff, (size_t)n, C, dl.at, cols, dd->minus,
                                               "source (key)", "row", err);
        if (s == HS_OK && !(insp_context(j, x, 1) && diff_scale(x, lim, NULL, jd) &&
                            cJSON_AddNumberToObject(j, "first_position", c0) &&
                            cJSON_AddItemToObject(j, "difference", jd)))
            s = oom(err);
        else if (s == HS_OK) jd = NULL;
        if (s == HS_OK) s = hs_figopts_add_scale(j, od->fo, HS_FIG_ATTENTION, 0, err);
    }
    if (s == HS_OK) s = hs_outdir_figure(od, "query_row_pair", &fig, j, shows, err);
    hs_viz_figure_destroy(fig);
    cJSON_Delete(j);
    cJSON_Delete(jd);
    free(rows);
    free(pair);
    free(title);
    free(shows);
    hs_labels_free(&rl);
    hs_labels_free(&dl);
    return s;
}

/* The pair of sentences: per layer mean, then per only head. */
static hs_status fig_pairs(const insp_run *x, hs_error *err)
{
    const int T = x->T;
    float *pair = malloc(3 * (size_t)T * T * sizeof *pair);
    hs_labels pl;
    hs_labels_init(&pl, (size_t)T);
    for (int i = 0; i < T; i++) {
        if (x->ta->ids[i] == x->ids2[i]) hs_labels_set(&pl, (size_t)i, "%s", x->lab[i]);
        else hs_labels_set(&pl, (size_t)i, "%s/%s", x->lab[i], x->lab2[i]);
    }
    char *na = NULL, *nb = NULL;
    insp_pair_names(x, &na, &nb);
    char *minus = na && nb ? hs_strfmt("%s − %s", nb, na) : NULL;
    const char *hdr[2] = {na, nb};
    hs_status s = !pair || pl.oom || !minus ? oom(err) : HS_OK;
    diff_def dd = {minus, s == HS_OK ? diff_limit(x, pair) : 0};
    for (int k = 0, l, h; s == HS_OK && k < x->L + x->L * x->H; k++)
        if (pair_at(x, k, &l, &h)) s = fig_pair_one(x, l, h, pair, pl.at, hdr, &dd, err);
    if (s == HS_OK) s = write_query_row_pair(x, pl.at, hdr, &dd, err);
    free(pair);
    free(na);
    free(nb);
    free(minus);
    hs_labels_free(&pl);
    return s;
}

hs_status insp_figures(const insp_run *x, hs_error *err)
{
    insp_run y = *x;
    char *na = NULL, *nb = NULL, *tag = NULL;
    if (x->pats2) {
        insp_pair_names(x, &na, &nb);
        if (!na || !nb || !(tag = hs_strfmt(" (%s)", na))) {
            free(na);
            free(nb);
            return oom(err);
        }
        y.tag = tag;
    }
    hs_status s = fig_grid(&y, err);
    if (s == HS_OK) s = fig_heads(&y, err);
    if (s == HS_OK && x->pats2) s = fig_pairs(x, err);
    free(na);
    free(nb);
    free(tag);
    return s;
}
