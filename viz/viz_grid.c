/*
 * viz/viz_grid.c -- the layers x heads grid: one attention heatmap panel per
 * head (viz_heatmap.c's panels) in the caller's L x H arrangement (row and
 * column headers: L0, H3, or the caller's) or in any rows x cols one (each
 * panel named over it, e.g. L1H0, filled row by row), shared axes (token
 * labels down the left column and under the lowest panel of each column),
 * and a horizontal colour bar with the legend (masked cells, the query
 * row's frame) under the grid.
 * Without a layout asked, the first of the caller's arrangement and the
 * ones with fewer columns (grid_layouts) that fits the width and the height
 * budget is drawn; when none does, the caller's arrangement with every k-th
 * token label (or none), said in the note under the title.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "viz/viz_internal.h"

/* A grid panel's group id: row header + column header ("L1H0"), or "L<l>H<h>"
 * when both are empty. */
static const char *panel_id(char *buf, size_t n, const char *const *rh, const char *const *ch,
                            size_t l, size_t h)
{
    char r[32], c[32];
    if (rh) snprintf(r, sizeof r, "%s", rh[l]);
    else snprintf(r, sizeof r, "L%zu", l);
    if (ch) snprintf(c, sizeof c, "%s", ch[h]);
    else snprintf(c, sizeof c, "H%zu", h);
    if (!r[0] && !c[0]) snprintf(buf, n, "L%zuH%zu", l, h);
    else snprintf(buf, n, "%s%s", r, c);
    return buf;
}

typedef struct {
    const float *patterns;
    size_t L, H, T;
    const char *const *tokens, *const *row_headers, *const *col_headers;
    const char *title;
    size_t R, C; /* the panels' arrangement: R x C slots, panel k at (k / C, k % C) */
    int thin;    /* 1: token labels thinned to every k-th as the width and height need */
    double hmax; /* thin: the height budget, inches */
} vz_grid_args;

/* Whether the panels stand in the caller's L x H arrangement (row and
 * column headers) rather than rearranged (each panel named over it). */
static int natural(const vz_grid_args *a) { return a->R == a->L && a->C == a->H; }

/* The grid's plan: the token labels as shown and the panels' geometry. */
typedef struct {
    char **tl;        /* token labels as shown [T] (owned) */
    int tmax;         /* the widest, px */
    int rh_w;         /* the widest row header, px */
    int left, top;    /* the first panel's top-left, px */
    int cell, P, gap; /* a cell's side, a panel's, the gap between panels */
    int vgap;         /* the gap between rows of panels (a panel's name over each, rearranged) */
    int gridW, gridH; /* the panels' extent */
    size_t every;     /* token labels at positions 0, every, 2 every, ...; > T: none */
    int cell_max;     /* thinned: the cell the height budget allows, px (0 = none) */
    int pitch;        /* the pitch labels need side by side, px */
} grid_plan;

/* Whether token label i is drawn: every k-th from the first, and
 * (thinned) none that would meet the first label of the next panel. */
static int label_shown(const grid_plan *g, size_t i, size_t T)
{
    if (g->every == 1) return 1;
    if (g->every > T || i % g->every) return 0;
    return i == 0 || (double)(T - i) * g->cell + g->gap >= g->pitch;
}

/* Top-left of panel k's slot, px. */
static int panel_x(const vz_grid_args *a, const grid_plan *g, size_t k)
{
    return g->left + (int)(k % a->C) * (g->P + g->gap);
}
static int panel_y(const vz_grid_args *a, const grid_plan *g, size_t k)
{
    return g->top + (int)(k / a->C) * (g->P + g->vgap);
}

/* Headers: in the caller's arrangement column headers over the top row and
 * row headers left of each row; rearranged, each panel's name over it. */
static hs_status add_grid_headers(vz_ctx *c, const vz_grid_args *a, const grid_plan *g)
{
    const int m = c->margin, pad = c->pad, lh = c->lh, lw = c->lw, P = g->P;
    char hb[32], id[64];
    hs_status s = HS_OK;
    if (!natural(a)) {
        for (size_t k = 0; k < a->L * a->H && !s; k++) {
            const char *nm = panel_id(id, sizeof id, a->row_headers, a->col_headers, k / a->H, k % a->H);
            int w = vz_text_len(c, nm, c->fpx);
            s = vz_add_text(c, nm, c->fpx, 0, panel_x(a, g, k) + P / 2 - w / 2,
                            panel_y(a, g, k) - lw - pad / 2 - lh, VZ_A_MIDDLE, VZ_T_HEADER, VZ_BLACK);
        }
        return s;
    }
    /* column headers wider than a panel's pitch (12 heads in a column): every k-th */
    int hw = 0;
    for (size_t h = 0; h < a->H; h++) {
        snprintf(hb, sizeof hb, "H%zu", h);
        hw = vz_imax(hw, vz_text_len(c, a->col_headers ? a->col_headers[h] : hb, c->fpx));
    }
    const size_t step = hw + pad <= P + g->gap ? 1 : (size_t)((hw + pad + P + g->gap - 1) / (P + g->gap));
    for (size_t h = 0; h < a->H && !s; h++) {
        snprintf(hb, sizeof hb, "H%zu", h);
        const char *ht = a->col_headers ? a->col_headers[h] : hb;
        if (!ht[0] || h % step) continue;
        int w = vz_text_len(c, ht, c->fpx);
        s = vz_add_text(c, ht, c->fpx, 0, panel_x(a, g, h) + P / 2 - w / 2,
                        g->top - lw - pad / 2 - lh, VZ_A_MIDDLE, VZ_T_HEADER, VZ_BLACK);
    }
    for (size_t l = 0; l < a->L && !s; l++) {
        snprintf(hb, sizeof hb, "L%zu", l);
        const char *rt = a->row_headers ? a->row_headers[l] : hb;
        int w = vz_text_len(c, rt, c->fpx);
        if (rt[0])
            s = vz_add_text(c, rt, c->fpx, 0, m + lh + pad + g->rh_w - w,
                            panel_y(a, g, l * a->H) + P / 2 - lh / 2, VZ_A_END, VZ_T_HEADER,
                            VZ_BLACK);
    }
    return s;
}

/* Shared axes: token labels left of the first panel of each row and
 * (rotated) under the lowest panel of each column; *bottom gets their
 * lowest end. */
static hs_status add_grid_labels(vz_ctx *c, const vz_grid_args *a, const grid_plan *g, int *bottom)
{
    const int pad = c->pad, lh = c->lh, lw = c->lw, cell = g->cell;
    const size_t n = a->L * a->H, T = a->T;
    hs_status s = vz_begin_group(c, "labels");
    if (!s) s = add_grid_headers(c, a, g);
    *bottom = 0;
    for (size_t k = 0; k < n && !s; k += a->C)
        for (size_t i = 0; i < T && !s; i++) {
            if (!label_shown(g, i, T)) continue;
            int tw = vz_text_len(c, g->tl[i], c->fpx);
            s = vz_add_text(c, g->tl[i], c->fpx, 0, g->left - lw - pad - tw,
                            panel_y(a, g, k) + (int)i * cell + (cell - lh) / 2, VZ_A_END, VZ_T_YTICK,
                            VZ_BLACK);
        }
    for (size_t k = 0; k < n && !s; k++) {
        if (k + a->C < n) continue; /* a panel below holds this column's labels */
        int ybelow = panel_y(a, g, k) + g->P + lw + pad;
        for (size_t j = 0; j < T && !s; j++)
            if (label_shown(g, j, T))
                s = vz_add_text(c, g->tl[j], c->fpx, 90, panel_x(a, g, k) + (int)j * cell + (cell - lh) / 2,
                            ybelow, VZ_A_END, VZ_T_XTICK, VZ_BLACK);
        *bottom = vz_imax(*bottom, ybelow + (g->every > T ? 0 : g->tmax));
    }
    return s;
}

/* The colour bar under the grid (a page's width goes to the panels), the
 * masked swatch right of it, below *bottom; *right and *bottom grow to
 * their extent. target: the width planned for, px. */
static hs_status add_grid_colorbar(vz_ctx *c, const vz_scale *sc, const grid_plan *g, size_t T,
                                   int target, int *right, int *bottom)
{
    const int m = c->margin, pad = c->pad, lh = c->lh;
    const double dpi = c->o.dpi;
    const int left = g->left, gridW = g->gridW;
    int bh = vz_imax((int)lround(0.6 * lh), (int)lround(0.06 * dpi));
    const int masked = c->o.causal_mask && T > 1, query = vz_query_frame_on(c, T);
    const int legend = masked || query;
    int legend_w = legend ? vz_legend_width(c, masked, query) + 3 * pad : 0;
    /* the strip under the grid: the grid's width or the rest of the target's */
    int strip = vz_imax(gridW, target - left - m);
    int cbw = vz_imax(vz_imin((int)lround(2.5 * dpi), strip - legend_w), (int)lround(1.0 * dpi));
    /* as wide as its quantity label */
    cbw = vz_imax(cbw, sc->label ? vz_text_len(c, sc->label, c->fpx) : 0);
    int cbx = left + vz_imax(0, (vz_imin(strip, vz_imax(gridW, cbw + legend_w)) - cbw - legend_w) / 2);
    int cby = *bottom + 2 * pad, cbr = 0, cbb = 0;
    hs_status s = vz_add_colorbar(c, sc, 0, cbx, cby, cbw, bh, &cbr, &cbb);
    *right = vz_imax(*right, cbr);
    *bottom = vz_imax(*bottom, cbb);
    if (!s && legend) {
        int lr, lb;
        s = vz_add_legend(c, sc, masked, query, cbx + cbw + 3 * pad, cby + bh / 2 - lh / 2, &lr, &lb);
        *right = vz_imax(*right, lr);
        *bottom = vz_imax(*bottom, lb);
    }
    return s;
}

static hs_status build_grid(hs_viz_figure **out, const void *args, const hs_viz_options *opt,
                            vz_fit *fit, hs_error *err)
{
    const vz_grid_args *a = args;
    const float *patterns = a->patterns;
    size_t L = a->L, H = a->H, T = a->T;
    const char *const *row_headers = a->row_headers, *const *col_headers = a->col_headers;
    const char *title = a->title;
    vz_ctx c;
    vz_scale sc;
    hs_status s = vz_attention_init(&c, opt, fit, patterns, L * H, T, &sc, err);
    if (s) return s;

    grid_plan g = {0};
    if (!(g.tl = calloc(T, sizeof *g.tl))) { s = HS_ERR_NOMEM; goto done; }
    s = vz_prepare_labels(&c, a->tokens, T, g.tl, &g.tmax);
    if (s) goto done;

    int m = c.margin, pad = c.pad, lh = c.lh, lw = c.lw;
    double dpi = c.o.dpi;
    int pitch = vz_label_pitch(&c, g.tl, T);
    g.pitch = pitch;
    g.every = 1;
    g.gap = vz_imax(2 * pad, (int)lround(0.05 * dpi)) + 2 * lw;
    const int R = (int)a->R, C = (int)a->C;
    const char *ylab = "destination (query)", *xlab = "source (key)";
    int ylab_w = vz_text_len(&c, ylab, c.fpx), xlab_w = vz_text_len(&c, xlab, c.fpx);
    char hb[32];
    for (size_t l = 0; l < L && natural(a); l++) {
        snprintf(hb, sizeof hb, "L%zu", l);
        g.rh_w = vz_imax(g.rh_w, vz_text_len(&c, row_headers ? row_headers[l] : hb, c.fpx));
    }
    /* a clear gap between the L<l> row headers and the longest token label,
     * so "L0" does not read as part of a token ("L0 because") */
    int hgap = g.rh_w ? vz_imax(2 * pad, lh) : 0;
    char note[256];
    if (a->thin) {
        /* every k-th token label: the smallest k whose labels fit the cells
           the width leaves (no labels: thumbnails when even one cell in T is
           too narrow, and the labels' room goes to the panels) */
        const int left0 = m + lh + pad + g.rh_w + hgap + pad + lw;
        /* the cell the width and the height budget leave beside and under
           labels tm px long (the panels' rows, their labels, axis title and
           colour bar under them) */
#define GRID_CELL(tm)                                                                              \
    vz_imin((int)((lround(c.o.width_in * dpi) - fit->extra - left0 - (tm) - lw - m -               \
                   (C - 1) * g.gap) / (C * (long)T)),                                              \
            (int)((lround(a->hmax * dpi) - (m + 2 * c.tlh + 2 * lh + pad) -                        \
                   ((tm) + 6 * pad + 4 * lh + (int)lround(0.06 * dpi) + m) - (R - 1) * g.gap) /    \
                  (R * (long)T)))
        int cell = GRID_CELL(g.tmax);
        if (cell < 1) cell = 1;
        if (cell < pitch) g.every = (size_t)((pitch + cell - 1) / cell);
        if (g.every > T) { /* thumbnails: a frame around a row a hair tall would hide it */
            g.every = T + 1, g.tmax = 0;
            c.o.highlight_row = -1;
        }
        if (g.every > 1 && g.every <= T) { /* room for the labels drawn only */
            g.tmax = 0;
            for (size_t i = 0; i < T; i += g.every) g.tmax = vz_imax(g.tmax, vz_text_len(&c, g.tl[i], c.fpx));
        }
        /* the room the labels left drawn do not take goes to the panels
           (thumbnails: all of it); k stays, the cells only grow */
        g.cell_max = GRID_CELL(g.tmax);
#undef GRID_CELL
        if (g.every > 1) {
            const char *sfx = g.every % 10 == 2 && g.every % 100 != 12 ? "nd"
                            : g.every % 10 == 3 && g.every % 100 != 13 ? "rd" : "th";
            if (g.every > T)
                snprintf(note, sizeof note, "%s%sno token labels: %zu tokens too many for the width",
                         c.o.note ? c.o.note : "", c.o.note ? "; " : "", T);
            else
                snprintf(note, sizeof note, "%s%severy %zu%s token label shown", c.o.note ? c.o.note : "",
                         c.o.note ? "; " : "", g.every, sfx);
            c.o.note = note;
        }
    }
    int title_w, title_h = vz_title_block(&c, title, &title_w);
    g.left = m + lh + pad + g.rh_w + hgap + g.tmax + pad + lw;
    g.top = m + title_h + lh + pad;
    g.vgap = natural(a) ? g.gap : g.gap + lh + pad;
    int target = (int)lround(c.o.width_in * dpi) - fit->extra;
    int cell_min = g.every > T ? 1 : (pitch + (int)g.every - 1) / (int)g.every;
    int annot = c.o.annotate;
    if (annot) cell_min = vz_imax(cell_min, vz_annot_width(&c, patterns, L * H * T * T, "%.2f") + pad);
    int availW = target - g.left - lw - m - (C - 1) * g.gap;
    g.cell = availW / (C * (int)T);
    /* panels no taller than 2 in: a grid of a few tokens stays a grid */
    g.cell = vz_imin(g.cell, vz_imax(cell_min, (int)(2.0 * dpi / (double)T)));
    if (g.cell_max > 0) g.cell = vz_imin(g.cell, vz_imax(cell_min, g.cell_max));
    if (g.cell < cell_min) {
        g.cell = cell_min;
        fit->cramped = 1;
    }
    if (title_w + 2 * m > (int)lround(c.o.width_in * dpi)) fit->cramped = 1; /* the canvas, not the retry plan */
    g.P = (int)T * g.cell;
    g.gridW = C * g.P + (C - 1) * g.gap, g.gridH = R * g.P + (R - 1) * g.vgap;
    char gidb[64];
    for (size_t k = 0; k < L * H && !s; k++)
        s = vz_add_heatmap(&c, patterns + k * T * T, NULL, T, T, panel_x(a, &g, k),
                           panel_y(a, &g, k), g.cell, &sc, c.o.causal_mask, (int)k,
                           annot ? "%.2f" : NULL,
                           panel_id(gidb, sizeof gidb, row_headers, col_headers, k / H, k % H));
    int bottom = 0;
    if (!s) s = add_grid_labels(&c, a, &g, &bottom);
    if (!s) s = vz_begin_group(&c, "axes");
    if (!s) s = vz_add_text(&c, xlab, c.fpx, 0, g.left + g.gridW / 2 - xlab_w / 2, bottom + pad,
                            VZ_A_MIDDLE, VZ_T_AXIS, VZ_BLACK);
    bottom += pad + lh;
    int yy = g.top + g.gridH / 2 - ylab_w / 2;
    if (yy < g.top) yy = g.top;
    if (!s) s = vz_add_text(&c, ylab, c.fpx, 90, m, yy, VZ_A_MIDDLE, VZ_T_AXIS, VZ_BLACK);
    bottom = vz_imax(bottom, yy + ylab_w);
    int right = g.left + g.gridW + lw;
    if (!s) s = add_grid_colorbar(&c, &sc, &g, T, target, &right, &bottom);
    if (!s) s = vz_finish_titled(&c, title, title_w, title_h, right, bottom, out, err);
done:
    vz_free_labels(g.tl, T);
    hs_viz_figure_destroy(c.f);
    if (s == HS_ERR_NOMEM) hs_fail(err, s, "out of memory laying out a figure");
    return s;
}

/* No layout asked: the caller's L x H arrangement when it fits the width
 * (asked, or the default one), else the first with fewer columns that does
 * (C columns, ceil(n / C) rows, fewer empty slots than rows: 8 panels go 2 x 4,
 * 3 x 3, 4 x 2, 8 x 1). When none fits, a width asked is refused with the
 * one-column layout's message (the narrowest), and the auto width grows the
 * caller's arrangement (vz_fit_width). */
static hs_status grid_auto(hs_viz_figure **out, vz_grid_args *a, const hs_viz_options *opt,
                           double auto_in, hs_error *err)
{
    hs_viz_options o;
    if (opt) o = *opt;
    else hs_viz_options_default(&o);
    const int asked = o.width_in > 0;
    if (!asked) o.width_in = auto_in;
    const size_t n = a->L * a->H;
    const double hmax = o.max_height_in > 0 ? o.max_height_in : HS_VIZ_MAX_HEIGHT_IN;
    hs_error e = {0};
    hs_status s = HS_ERR_INPUT;
    hs_viz_figure *tall = NULL; /* the first arrangement that fitted the width, not the height */
    for (size_t C = a->H + 1; C-- > 1;) {
        size_t R = (n + C - 1) / C;
        if (C == a->H) R = a->L;
        else if (C > n || R * C - n >= R) continue;
        a->R = R, a->C = C;
        s = vz_fit_width(out, build_grid, a, &o, auto_in, "attention grid", &e);
        if (s == HS_OK && (*out)->height / (*out)->dpi > hmax + 1e-9) {
            if (!tall) tall = *out;
            else hs_viz_figure_destroy(*out);
            *out = NULL;
            s = HS_ERR_INPUT;
            continue;
        }
        if (s != HS_ERR_INPUT) break;
    }
    if (s != HS_ERR_INPUT) { /* one fits both, or a failure that is not the fit */
        hs_viz_figure_destroy(tall);
        if (s != HS_OK && err) *err = e;
        return s;
    }
    if (n > 1) {
        /* none fits both: the caller's L x H with every k-th token label (or
           none), else the first that fitted the width however tall */
        a->R = a->L, a->C = a->H, a->thin = 1, a->hmax = hmax;
        hs_error e2 = {0};
        hs_status s2 = vz_fit_width(out, build_grid, a, &o, auto_in, "attention grid", &e2);
        a->thin = 0;
        if (s2 == HS_OK && (*out)->height / (*out)->dpi > hmax + 1e-9 && tall) {
            hs_viz_figure_destroy(*out);
            *out = NULL;
            s2 = HS_ERR_INPUT;
        }
        if (s2 == HS_OK) {
            hs_viz_figure_destroy(tall);
            return s2;
        }
        if (s2 != HS_ERR_INPUT) {
            hs_viz_figure_destroy(tall);
            if (err) *err = e2;
            return s2;
        }
    }
    if (tall) {
        *out = tall;
        return HS_OK;
    }
    if (s == HS_ERR_INPUT && !asked) {
        a->R = a->L, a->C = a->H;
        return vz_fit_width(out, build_grid, a, opt, auto_in, "attention grid", err);
    }
    if (s != HS_OK && err) *err = e;
    return s;
}

hs_status vz_attention_thinned(hs_viz_figure **out, const float *pattern, size_t T,
                               const char *const *tokens, const char *title,
                               const hs_viz_options *opt, hs_error *err)
{
    static const char *const none[1] = {""};
    hs_viz_options o;
    if (opt) o = *opt;
    else hs_viz_options_default(&o);
    const double hmax = o.max_height_in > 0 ? o.max_height_in : HS_VIZ_MAX_HEIGHT_IN;
    if (!(o.width_in > 0)) o.width_in = HS_VIZ_COLUMN_IN;
    vz_grid_args a = {pattern, 1, 1, T, tokens, none, none, title, 1, 1, 1, hmax};
    hs_status s = vz_fit_width(out, build_grid, &a, &o, o.width_in, "attention pattern", err);
    if (s == HS_OK && (*out)->height / (*out)->dpi > hmax + 1e-9) {
        hs_viz_figure_destroy(*out);
        *out = NULL;
        s = hs_fail(err, HS_ERR_INPUT, "attention pattern of %zu tokens: over the %g in height budget "
                    "even with its labels thinned", T, hmax);
    }
    return s;
}

hs_status hs_viz_grid_figure(hs_viz_figure **out, const float *patterns, size_t L, size_t H,
                             size_t T, const char *const *tokens, const char *title,
                             const hs_viz_options *opt, hs_error *err)
{
    return hs_viz_grid_figure_labeled(out, patterns, L, H, T, tokens, NULL, NULL, title, opt, err);
}

hs_status hs_viz_grid_figure_labeled(hs_viz_figure **out, const float *patterns, size_t L,
                                     size_t H, size_t T, const char *const *tokens,
                                     const char *const *row_headers,
                                     const char *const *col_headers, const char *title,
                                     const hs_viz_options *opt, hs_error *err)
{
    *out = NULL;
    if (patterns == NULL) return hs_fail(err, HS_ERR_INPUT, "attention patterns are NULL");
    if (T < 1 || T > HS_VIZ_MAX_TOKENS)
        return hs_fail(err, HS_ERR_INPUT, "%zu tokens: a figure takes 1..%d", T, HS_VIZ_MAX_TOKENS);
    if (L < 1 || L > HS_VIZ_MAX_LAYERS || H < 1 || H > HS_VIZ_MAX_HEADS)
        return hs_fail(err, HS_ERR_INPUT, "grid of %zu layers x %zu heads: takes 1..%d x 1..%d", L,
                       H, HS_VIZ_MAX_LAYERS, HS_VIZ_MAX_HEADS);
    hs_status s = vz_check_labels(tokens, T, "tokens", err);
    if (!s) s = vz_check_title(title, "title", err);
    if (!s && row_headers) s = vz_check_labels(row_headers, L, "row headers", err);
    if (!s && col_headers) s = vz_check_labels(col_headers, H, "column headers", err);
    if (s) return s;
    vz_grid_args a = {patterns, L, H, T, tokens, row_headers, col_headers, title, L, H, 0, 0};
    const double auto_in = L * H > 1 ? HS_VIZ_PAGE_IN : HS_VIZ_COLUMN_IN;
    if (opt && (opt->layout_rows || opt->layout_cols)) {
        size_t R = opt->layout_rows, C = opt->layout_cols, n = L * H;
        if (R < 1 || C < 1 || R > n || C > n || R * C < n || (R - 1) * C >= n)
            return hs_fail(err, HS_ERR_CONFIG, "--layout %zux%zu does not suit %zu panels: rows x "
                           "cols must hold them, with at most %zu rows and %zu columns and no row "
                           "left empty", R, C, n, n, n);
        a.R = R, a.C = C;
        return vz_fit_width(out, build_grid, &a, opt, auto_in, "attention grid", err);
    }
    return grid_auto(out, &a, opt, auto_in, err);
}
