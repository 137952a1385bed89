/*
 * viz/viz_heatmap.c -- heatmaps: a panel of coloured cells (masked cells
 * hatched, values written in when asked, the query row framed), the
 * attention colour scale, and the labelled single-heatmap figures laid out
 * around it: one attention pattern, the signed (diverging) and non-negative
 * (sequential) matrices, each optionally masked. The layers x heads grid
 * (viz_grid.c) is made of the same panels.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "viz/viz_internal.h"

/* ------------------------------------------------------------------------ */
/* Panels of cells, shared with the grid                                    */

static void scale_rgb(const vz_scale *s, double v, unsigned char rgb[3])
{
    double t = (v - s->vmin) / (s->vmax - s->vmin);
    hs_viz_cmap_rgb(s->cmap, t, rgb);
}

static int luminance_dark(const unsigned char rgb[3])
{
    return 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2] < 128.0;
}

/* One heatmap panel: R x C cells of size cell at (x0, y0). data [R, C];
 * masked(i, j) = (causal && j > i) || (mask && mask[i*C+j]). annotate: fmt for
 * cell values or NULL. */
hs_status vz_add_heatmap(vz_ctx *c, const float *data, const unsigned char *mask, size_t R,
                         size_t C, int x0, int y0, int cell, const vz_scale *sc, int causal,
                         int panel, const char *annot_fmt, const char *gid)
{
    hs_status s = vz_begin_group(c, gid);
    for (size_t i = 0; i < R && !s; i++) {
        for (size_t j = 0; j < C && !s; j++) {
            int masked = (causal && j > i) || (mask && mask[i * C + j]);
            unsigned char rgb[3];
            double v = data[i * C + j];
            if (masked) memcpy(rgb, vz_mask_rgb(c), 3);
            else scale_rgb(sc, v, rgb);
            int x = x0 + (int)j * cell, y = y0 + (int)i * cell;
            s = vz_add_rect_kind(c, x, y, cell, cell, rgb, masked ? VZ_R_MASKED : VZ_R_CELL, panel,
                                 (int)i, (int)j);
            if (!s && annot_fmt && !masked) {
                char buf[32];
                snprintf(buf, sizeof buf, annot_fmt, v);
                vz_minus_sign(buf, sizeof buf); /* no "-0.00" */
                int tw = vz_text_len(c, buf, c->apx);
                s = vz_add_text(c, buf, c->apx, 0, x + (cell - tw) / 2, y + (cell - c->alh) / 2,
                                VZ_A_MIDDLE, VZ_T_ANNOT, luminance_dark(rgb) ? VZ_WHITE : VZ_BLACK);
            }
        }
    }
    if (!s) s = vz_add_frame(c, x0, y0, (int)C * cell, (int)R * cell, VZ_FRAME);
    if (!s && vz_query_frame_on(c, R)) /* the query row */
        s = vz_add_query_frame(c, sc, x0, y0 + c->o.highlight_row * cell, (int)C * cell, cell);
    return s;
}

/* Range of an attention figure's colour scale. */
static hs_status attention_scale(const vz_ctx *c, const float *p, size_t n_panels, size_t T,
                                 vz_scale *sc, hs_error *err)
{
    double lo = INFINITY, hi = -INFINITY;
    int causal = c->o.causal_mask;
    for (size_t k = 0; k < n_panels; k++)
        for (size_t i = 0; i < T; i++)
            for (size_t j = 0; j < T; j++) {
                if (causal && j > i) continue;
                double v = p[(k * T + i) * T + j];
                if (!isfinite(v))
                    return hs_fail(err, HS_ERR_NUMERIC,
                                   "attention value [%zu, %zu, %zu] is not finite (%g)", k, i, j, v);
                if (v < lo) lo = v;
                if (v > hi) hi = v;
            }
    sc->cmap = c->o.cmap == HS_VIZ_CMAP_DEFAULT ? HS_VIZ_CMAP_VIRIDIS : c->o.cmap;
    sc->label = c->o.value_label ? c->o.value_label : "attention weight";
    if (c->o.range == HS_VIZ_RANGE_AUTO) { /* the data's range, its ends round */
        sc->vmin = vz_round_out(lo, hi - lo, 0);
        sc->vmax = vz_round_out(hi, hi - lo, 1);
    } else {
        sc->vmin = c->o.vmin;
        sc->vmax = c->o.vmax;
    }
    if (!(sc->vmax > sc->vmin)) {
        if (c->o.range == HS_VIZ_RANGE_FIXED)
            return hs_fail(err, HS_ERR_INPUT, "fixed value range [%g, %g] is empty", sc->vmin,
                           sc->vmax);
        sc->vmax = sc->vmin + 1.0;
    }
    return HS_OK;
}

hs_status vz_attention_init(vz_ctx *c, const hs_viz_options *o, vz_fit *fit, const float *p,
                            size_t n_panels, size_t T, vz_scale *sc, hs_error *err)
{
    hs_status s = vz_ctx_init(c, o, err);
    if (s) return s;
    c->fit = fit;
    c->attention = 1;
    s = attention_scale(c, p, n_panels, T, sc, err);
    if (s) {
        hs_viz_figure_destroy(c->f);
        c->f = NULL;
    }
    return s;
}

/* Annotation cell width: widest of the strings annot_fmt gives over data. */
int vz_annot_width(vz_ctx *c, const float *d, size_t n, const char *fmt)
{
    int w = 0;
    char buf[32];
    for (size_t i = 0; i < n; i++) {
        snprintf(buf, sizeof buf, fmt, (double)d[i]);
        vz_minus_sign(buf, sizeof buf);
        int tw = vz_text_len(c, buf, c->apx);
        if (tw > w) w = tw;
    }
    return w;
}

/* ------------------------------------------------------------------------ */
/* Heatmap with labels: shared by the single pattern and the matrices.      */

typedef struct {
    const float *data;
    size_t R, C;
    const char *const *row_labels, *const *col_labels;
    const char *title, *xlabel, *ylabel;
    int causal;
    const char *annot_fmt;
    const unsigned char *mask; /* [R, C] nonzero = masked, or NULL */
    int thin; /* 1: every k-th row and column label, the smallest k the width allows (issue 35) */
} vz_heat_spec;

static hs_status heat_figure(vz_ctx *c, const vz_heat_spec *hs, const vz_scale *sc,
                             hs_viz_figure **out, hs_error *err)
{
    hs_status s = HS_OK;
    char **rl = calloc(hs->R, sizeof *rl), **cl = calloc(hs->C, sizeof *cl);
    if (!rl || !cl) { s = HS_ERR_NOMEM; goto done; }
    int rmax, cmax;
    s = vz_prepare_labels(c, hs->row_labels, hs->R, rl, &rmax);
    if (!s) s = vz_prepare_labels(c, hs->col_labels, hs->C, cl, &cmax);
    if (s) goto done;

    int m = c->margin, pad = c->pad, lh = c->lh, lw = c->lw;
    size_t nmax = hs->R > hs->C ? hs->R : hs->C;
    int cell_min = vz_imax(vz_label_pitch(c, rl, hs->R), vz_label_pitch(c, cl, hs->C));
    if (hs->annot_fmt)
        cell_min = vz_imax(cell_min, vz_annot_width(c, hs->data, hs->R * hs->C, hs->annot_fmt) + pad);
    int ylab_w = hs->ylabel && hs->ylabel[0] ? vz_text_len(c, hs->ylabel, c->fpx) : 0;
    int xlab_w = hs->xlabel && hs->xlabel[0] ? vz_text_len(c, hs->xlabel, c->fpx) : 0;
    /* the y title along the map, rotated; one longer than the map is tall
       (lens_final's "residual stream" beside 3 rows) lies level over the
       row labels instead, its right end at theirs (ylevel) */
    int ylevel = 0;
    int left = m + (ylab_w ? lh + pad : 0) + rmax + pad + lw;
    int bw = vz_imax(lh, (int)lround(0.12 * c->o.dpi));
    int cgap = 2 * pad;
    int any_mask = 0;
    for (size_t i = 0; hs->mask && i < hs->R * hs->C; i++) any_mask |= hs->mask[i] != 0;
    const int masked = (hs->causal && hs->R > 1 && hs->C > 1) || any_mask;
    const int query = vz_query_frame_on(c, hs->R), legend = masked || query;
    int legend_w = vz_legend_width(c, masked, query);
    /* the colour bar is as tall as the map (a reviewer marks a taller one),
       at least its two end labels apart; its quantity label wraps onto as
       many lines as keep each within the bar, and the cells give up the
       width the extra lines take; with a word longer than the bar (a short
       map's "probability") the label lies level over the bar, the map one
       line lower. Thinned (hs->thin): labels at 0, k, 2k, ... on both axes
       (the cells are square), k the smallest whose labels fit the cells the
       width leaves; one note under the title names it */
    const int cb_min = vz_colorbar_min_len(c); /* its ends and a tick between them */
    const int cell_min_all = cell_min;
    int cell = 0, lines = 1, cramped = 0;
    size_t every = 1;
    for (;;) { /* the rotated y title; once more level when it is longer than the map */
        for (int pass = 0; pass < 4; pass++) {
            int rest = left + lw + cgap + vz_imax(bw + lw + vz_colorbar_label_width(c, sc, lines, bw + lw), legend_w) + m;
            int avail = (int)lround(c->o.width_in * c->o.dpi) - c->fit->extra - rest;
            cell = avail / (int)nmax;
            every = 1;
            cell_min = cell_min_all;
            if (hs->thin && !hs->annot_fmt && cell < cell_min) {
                int c1 = cell < 1 ? 1 : cell;
                every = (size_t)((cell_min + c1 - 1) / c1);
                if (every > nmax) every = nmax;
                cell_min = (cell_min + (int)every - 1) / (int)every;
            }
            cramped = cell < cell_min;
            if (cramped) cell = cell_min;
            int need = vz_colorbar_label_lines(c, sc, vz_imax((int)hs->R * cell, cb_min));
            if (need == lines || (need >= 0 && need < lines) || (need < 0 && lines < 0)) break;
            lines = need < 0 ? -1 : need;
        }
        if (ylevel || ylab_w <= (int)hs->R * cell) break;
        ylevel = 1;
        left = m + vz_imax(rmax, ylab_w) + pad + lw;
        lines = 1;
    }
    char note[256];
    if (every > 1) {
        const char *sfx = every % 10 == 2 && every % 100 != 12 ? "nd"
                        : every % 10 == 3 && every % 100 != 13 ? "rd" : "th";
        snprintf(note, sizeof note, "%s%severy %zu%s label shown", c->o.note ? c->o.note : "",
                 c->o.note ? "; " : "", every, sfx);
        c->o.note = note;
        cmax = 0;
        for (size_t j = 0; j < hs->C; j += every) cmax = vz_imax(cmax, vz_text_len(c, cl[j], c->fpx));
    }
    int title_w, title_h = vz_title_block(c, hs->title, &title_w);
    int top = m + title_h + lh / 2;
    if (cramped) c->fit->cramped = 1;
    if (lines < 0 || ylevel) top += VZ_CBAR_TITLE_H(c);
    if (title_w + 2 * m > (int)lround(c->o.width_in * c->o.dpi)) c->fit->cramped = 1;
    int PW = (int)hs->C * cell, PH = (int)hs->R * cell;

    s = vz_add_heatmap(c, hs->data, hs->mask, hs->R, hs->C, left, top, cell, sc, hs->causal, 0,
                       hs->annot_fmt, "panel");
    /* row labels, right-aligned against the map */
    for (size_t i = 0; i < hs->R && !s; i += every) {
        int w = vz_text_len(c, rl[i], c->fpx);
        s = vz_add_text(c, rl[i], c->fpx, 0, left - lw - pad - w,
                        top + (int)i * cell + (cell - lh) / 2, VZ_A_END, VZ_T_YTICK, VZ_BLACK);
    }
    /* column labels: level and centred under their columns when each fits its
       column with a pad to spare (a layer x head matrix's "H0".."H3"), else
       rotated, their ends against the map (tokens); thinned, every k-th */
    int ybelow = top + PH + lw + pad, level = cmax + pad <= cell * (int)every;
    for (size_t j = 0; j < hs->C && !s; j += every) {
        if (level) {
            int w = vz_text_len(c, cl[j], c->fpx);
            s = vz_add_text(c, cl[j], c->fpx, 0, left + (int)j * cell + (cell - w) / 2, ybelow,
                            VZ_A_MIDDLE, VZ_T_XTICK, VZ_BLACK);
        } else {
            s = vz_add_text(c, cl[j], c->fpx, 90, left + (int)j * cell + (cell - lh) / 2, ybelow,
                            VZ_A_END, VZ_T_XTICK, VZ_BLACK);
        }
    }
    int bottom = ybelow + (level ? lh : cmax);
    if (!s) s = vz_begin_group(c, "axes");
    if (!s && xlab_w) {
        s = vz_add_text(c, hs->xlabel, c->fpx, 0, left + PW / 2 - xlab_w / 2, bottom + pad,
                        VZ_A_MIDDLE, VZ_T_AXIS, VZ_BLACK);
        bottom += pad + lh;
    }
    if (!s && ylab_w && ylevel) {
        s = vz_add_text(c, hs->ylabel, c->fpx, 0, left - lw - pad - ylab_w, top - lh - lh / 4 - lw,
                        VZ_A_END, VZ_T_AXIS, VZ_BLACK);
    } else if (!s && ylab_w) {
        int yy = top + PH / 2 - ylab_w / 2;
        if (yy < top) yy = top;
        s = vz_add_text(c, hs->ylabel, c->fpx, 90, m, yy, VZ_A_MIDDLE, VZ_T_AXIS, VZ_BLACK);
        bottom = vz_imax(bottom, yy + ylab_w);
    }
    int right = left + PW + lw;
    int cbx = left + PW + lw + cgap;
    int cbh = vz_imax(PH, cb_min), cbb = 0;
    if (!s) s = vz_add_colorbar(c, sc, 1, cbx, top, bw, cbh, &right, &cbb);
    bottom = vz_imax(bottom, cbb);
    if (!s && legend) {
        int lr, lb;
        /* below the colour bar's lowest tick label */
        s = vz_add_legend(c, sc, masked, query, cbx, top + cbh + lh / 2 + pad, &lr, &lb);
        right = vz_imax(right, lr);
        bottom = vz_imax(bottom, lb);
    }
    bottom = vz_imax(bottom, top + cbh + lh / 2 + lh % 2);
    if (!s) s = vz_finish_titled(c, hs->title, title_w, title_h, right, bottom, out, err);
done:
    vz_free_labels(rl, hs->R);
    vz_free_labels(cl, hs->C);
    if (s == HS_ERR_NOMEM) hs_fail(err, s, "out of memory laying out a figure");
    return s;
}

typedef struct {
    const float *pattern;
    size_t T;
    const char *const *tokens;
    const char *title;
} vz_attn_args;

static hs_status build_attention(hs_viz_figure **out, const void *args, const hs_viz_options *o,
                                 vz_fit *fit, hs_error *err)
{
    const vz_attn_args *a = args;
    vz_ctx c;
    vz_scale sc;
    hs_status s = vz_attention_init(&c, o, fit, a->pattern, 1, a->T, &sc, err);
    if (s) return s;
    vz_heat_spec hs = {a->pattern, a->T, a->T, a->tokens, a->tokens, a->title,
                       "source (key)", "destination (query)", c.o.causal_mask,
                       c.o.annotate ? "%.2f" : NULL, NULL, 0};
    s = heat_figure(&c, &hs, &sc, out, err);
    hs_viz_figure_destroy(c.f);
    return s;
}

hs_status hs_viz_attention_figure(hs_viz_figure **out, const float *pattern, size_t T,
                                  const char *const *tokens, const char *title,
                                  const hs_viz_options *opt, hs_error *err)
{
    *out = NULL;
    if (pattern == NULL) return hs_fail(err, HS_ERR_INPUT, "attention pattern is NULL");
    if (T < 1 || T > HS_VIZ_MAX_TOKENS)
        return hs_fail(err, HS_ERR_INPUT, "%zu tokens: a figure takes 1..%d", T, HS_VIZ_MAX_TOKENS);
    hs_status s = vz_check_labels(tokens, T, "tokens", err);
    if (!s) s = vz_check_title(title, "title", err);
    if (s) return s;
    vz_attn_args a = {pattern, T, tokens, title};
    s = vz_fit_width(out, build_attention, &a, opt, HS_VIZ_COLUMN_IN, "attention pattern", err);
    /* every label cannot be shown at the width asked (a column or wider):
     * every k-th label within the width (issue 35: a 20-token head in a
     * column, a 60-token head on a page) */
    if (s == HS_ERR_INPUT && opt && opt->width_in >= HS_VIZ_COLUMN_IN - 1e-9 && !opt->annotate) {
        hs_viz_figure *t = NULL;
        hs_error e2 = {0};
        if (vz_attention_thinned(&t, pattern, T, tokens, title, opt, &e2) == HS_OK) {
            *out = t;
            return HS_OK;
        }
    }
    return s;
}

typedef struct {
    const float *m;
    const unsigned char *mask;
    size_t R, C;
    const char *const *row_labels, *const *col_labels;
    const char *title, *xlabel, *ylabel;
    int seq; /* 0: signed (diverging, symmetric range); 1: non-negative (sequential, from 0) */
    int thin; /* 1: every k-th label (vz_heat_spec.thin) */
} vz_matrix_args;

static hs_status build_matrix(hs_viz_figure **out, const void *args, const hs_viz_options *o,
                              vz_fit *fit, hs_error *err)
{
    const vz_matrix_args *a = args;
    size_t R = a->R, C = a->C;
    const float *m = a->m;
    const unsigned char *mask = a->mask;
    vz_ctx c;
    hs_status s = vz_ctx_init(&c, o, err);
    if (s) return s;
    c.fit = fit;
    double amax = 0;
    for (size_t i = 0; i < R * C; i++) {
        if (mask && mask[i]) continue;
        if (!isfinite(m[i])) {
            hs_viz_figure_destroy(c.f);
            return hs_fail(err, HS_ERR_NUMERIC, "matrix value [%zu, %zu] is not finite (%g)",
                           i / C, i % C, (double)m[i]);
        }
        if (fabs(m[i]) > amax) amax = fabs(m[i]);
    }
    vz_scale sc;
    sc.label = o->value_label;
    if (a->seq) {
        /* a sequential map from 0: a diverging map would invent a sign */
        sc.cmap = (o->cmap == HS_VIZ_CMAP_DEFAULT || o->cmap == HS_VIZ_CMAP_DIVERGING)
                      ? HS_VIZ_CMAP_VIRIDIS
                      : o->cmap;
        if (o->range == HS_VIZ_RANGE_AUTO) {
            sc.vmin = 0.0;
            sc.vmax = amax > 0 ? vz_round_out(amax, amax, 1) : 1.0;
        } else {
            sc.vmin = o->vmin;
            sc.vmax = o->vmax;
            if (!(sc.vmax > sc.vmin)) {
                hs_viz_figure_destroy(c.f);
                return hs_fail(err, HS_ERR_INPUT, "fixed value range [%g, %g] is empty", sc.vmin,
                               sc.vmax);
            }
        }
    } else {
        sc.cmap = o->cmap == HS_VIZ_CMAP_DEFAULT ? HS_VIZ_CMAP_DIVERGING : o->cmap;
        double lim = o->range == HS_VIZ_RANGE_AUTO ? vz_round_out(amax, 2 * amax, 1) : o->vmax;
        if (o->range == HS_VIZ_RANGE_FIXED && !(lim > 0)) {
            hs_viz_figure_destroy(c.f);
            return hs_fail(err, HS_ERR_INPUT, "signed figure: fixed vmax %g must be > 0", lim);
        }
        if (!(lim > 0)) lim = 1.0;
        sc.vmin = -lim;
        sc.vmax = lim;
    }
    /* annotation widths must not see masked (possibly NaN) values */
    float *shown = NULL;
    const float *data = m;
    if (mask) {
        shown = malloc(R * C * sizeof *shown);
        if (!shown) {
            hs_viz_figure_destroy(c.f);
            return hs_fail(err, HS_ERR_NOMEM, "out of memory laying out a figure");
        }
        for (size_t i = 0; i < R * C; i++) shown[i] = mask[i] ? 0.0f : m[i];
        data = shown;
    }
    vz_heat_spec hs = {data, R, C, a->row_labels, a->col_labels, a->title, a->xlabel, a->ylabel, 0,
                       o->annotate ? (a->seq ? "%.2f" : "%.2g") : NULL, mask, a->thin};
    s = heat_figure(&c, &hs, &sc, out, err);
    hs_viz_figure_destroy(c.f);
    free(shown);
    return s;
}

static hs_status matrix_figure(hs_viz_figure **out, const vz_matrix_args *a,
                               const hs_viz_options *opt, hs_error *err)
{
    *out = NULL;
    if (a->m == NULL) return hs_fail(err, HS_ERR_INPUT, "matrix is NULL");
    if (a->R < 1 || a->R > HS_VIZ_MAX_TOKENS || a->C < 1 || a->C > HS_VIZ_MAX_TOKENS)
        return hs_fail(err, HS_ERR_INPUT, "matrix is %zu x %zu: a figure takes 1..%d per side",
                       a->R, a->C, HS_VIZ_MAX_TOKENS);
    hs_status s = vz_check_labels(a->row_labels, a->R, "row labels", err);
    if (!s) s = vz_check_labels(a->col_labels, a->C, "column labels", err);
    if (!s) s = vz_check_title(a->title, "title", err);
    if (!s) s = vz_check_title(a->xlabel, "x label", err);
    if (!s) s = vz_check_title(a->ylabel, "y label", err);
    if (s) return s;
    hs_viz_options o;
    if (opt) o = *opt;
    else {
        hs_viz_options_default(&o);
        o.range = HS_VIZ_RANGE_AUTO;
    }
    const char *what = a->title ? a->title : "matrix";
    hs_status s2 = vz_fit_width(out, build_matrix, a, &o, HS_VIZ_COLUMN_IN, what, err);
    /* every label cannot be shown at the width asked (a column or wider):
     * every k-th label within it (issue 35: the lens's 20 positions in a
     * column, patch's 60 on a page), as hs_viz_attention_figure does */
    if (s2 == HS_ERR_INPUT && o.width_in >= HS_VIZ_COLUMN_IN - 1e-9 && !o.annotate) {
        vz_matrix_args t = *a;
        t.thin = 1;
        hs_viz_figure *f = NULL;
        hs_error e2 = {0};
        if (vz_fit_width(&f, build_matrix, &t, &o, HS_VIZ_COLUMN_IN, what, &e2) == HS_OK) {
            *out = f;
            return HS_OK;
        }
    }
    return s2;
}

hs_status hs_viz_signed_figure(hs_viz_figure **out, const float *m, size_t R, size_t C,
                               const char *const *row_labels, const char *const *col_labels,
                               const char *title, const char *xlabel, const char *ylabel,
                               const hs_viz_options *opt, hs_error *err)
{
    return hs_viz_signed_figure_masked(out, m, NULL, R, C, row_labels, col_labels, title, xlabel,
                                       ylabel, opt, err);
}

hs_status hs_viz_signed_figure_masked(hs_viz_figure **out, const float *m,
                                      const unsigned char *mask, size_t R, size_t C,
                                      const char *const *row_labels,
                                      const char *const *col_labels, const char *title,
                                      const char *xlabel, const char *ylabel,
                                      const hs_viz_options *opt, hs_error *err)
{
    vz_matrix_args a = {m, mask, R, C, row_labels, col_labels, title, xlabel, ylabel, 0, 0};
    return matrix_figure(out, &a, opt, err);
}

hs_status hs_viz_matrix_figure(hs_viz_figure **out, const float *m, size_t R, size_t C,
                               const char *const *row_labels, const char *const *col_labels,
                               const char *title, const char *xlabel, const char *ylabel,
                               const hs_viz_options *opt, hs_error *err)
{
    return hs_viz_matrix_figure_masked(out, m, NULL, R, C, row_labels, col_labels, title, xlabel,
                                       ylabel, opt, err);
}

hs_status hs_viz_matrix_figure_masked(hs_viz_figure **out, const float *m,
                                      const unsigned char *mask, size_t R, size_t C,
                                      const char *const *row_labels,
                                      const char *const *col_labels, const char *title,
                                      const char *xlabel, const char *ylabel,
                                      const hs_viz_options *opt, hs_error *err)
{
    vz_matrix_args a = {m, mask, R, C, row_labels, col_labels, title, xlabel, ylabel, 1, 0};
    return matrix_figure(out, &a, opt, err);
}



/* ------------------------------------------------------------------------ */
/* Two sentences' rows and their difference as one strip                    */

typedef struct {
    const float *top, *diff;
    size_t R1, R2, C;
    const char *const *top_labels, *const *diff_labels, *const *col_labels;
    const char *title, *xlabel, *diff_label;
    double diff_lim;
    double hmax; /* the height budget, inches */
    int thin;    /* 1: every k-th row and column label, the smallest k the width and height allow */
} vz_strip_args;

/* The rows' labels (top block then difference block) prepared into rl
 * [R1 + R2]; their widest into *rmax. */
static hs_status strip_labels(vz_ctx *c, const vz_strip_args *a, char **rl, int *rmax)
{
    int w1, w2;
    hs_status s = vz_prepare_labels(c, a->top_labels, a->R1, rl, &w1);
    if (!s) s = vz_prepare_labels(c, a->diff_labels, a->R2, rl + a->R1, &w2);
    *rmax = vz_imax(w1, w2);
    return s;
}

/* The strip: the sentences' rows over their difference, square cells as
 * large as the width and the height budget allow, each block's colour bar
 * beside it and as tall as it (at least vz_colorbar_min_len: its ends and
 * the tick between them), the two
 * bars one above the other; thinned (a->thin), every k-th row and column
 * label with one note under the title. */
static hs_status build_strip(hs_viz_figure **out, const void *args, const hs_viz_options *o,
                             vz_fit *fit, hs_error *err)
{
    const vz_strip_args *a = args;
    const size_t R = a->R1 + a->R2;
    vz_ctx c;
    vz_scale s1, s2;
    hs_status s = vz_ctx_init(&c, o, err);
    if (s) return s;
    c.fit = fit;
    s1 = (vz_scale){o->vmin, o->vmax, o->cmap == HS_VIZ_CMAP_DEFAULT ? HS_VIZ_CMAP_VIRIDIS : o->cmap,
                    o->value_label ? o->value_label : "attention"}; /* one line beside a few rows */
    if (o->range == HS_VIZ_RANGE_AUTO) {
        s1.vmin = INFINITY;
        s1.vmax = -INFINITY;
        for (size_t i = 0; i < a->R1 * a->C; i++) {
            s1.vmin = fmin(s1.vmin, a->top[i]);
            s1.vmax = fmax(s1.vmax, a->top[i]);
        }
        double span = s1.vmax - s1.vmin;
        s1.vmin = vz_round_out(s1.vmin, span, 0);
        s1.vmax = vz_round_out(s1.vmax, span, 1);
        if (!(s1.vmax > s1.vmin)) s1.vmax = s1.vmin + 1.0;
    }
    s2 = (vz_scale){-a->diff_lim, a->diff_lim, HS_VIZ_CMAP_DIVERGING, a->diff_label};
    char **rl = calloc(R, sizeof *rl), **cl = calloc(a->C, sizeof *cl);
    int rmax = 0, cmax = 0;
    if (!rl || !cl) s = HS_ERR_NOMEM;
    if (!s) s = strip_labels(&c, a, rl, &rmax);
    if (!s) s = vz_prepare_labels(&c, a->col_labels, a->C, cl, &cmax);
    if (s) goto done;
    const int m = c.margin, pad = c.pad, lh = c.lh, lw = c.lw, cb_min = vz_colorbar_min_len(&c);
    const int cell_min_all = vz_imax(vz_label_pitch(&c, rl, R), vz_label_pitch(&c, cl, a->C));
    const int bw = vz_imax(lh, (int)lround(0.12 * c.o.dpi)), cgap = 2 * pad;
    const int xw = a->xlabel && a->xlabel[0] ? vz_text_len(&c, a->xlabel, c.fpx) : 0;
    const int left = m + rmax + pad + lw, target = (int)lround(c.o.width_in * c.o.dpi) - c.fit->extra;
    const int hbud = (int)lround(a->hmax * c.o.dpi);
    const char *note0 = c.o.note;
    char note[256];
    int title_w = 0, title_h = 0, cell = 0, top = 0, gap = 0, cramped = 0, l1 = 1, l2 = 1, cshown = cmax;
    size_t every = 1;
    for (int pass = 0; pass < 4; pass++) {
        title_h = vz_title_block(&c, a->title, &title_w);
        int bars = bw + lw + vz_imax(vz_colorbar_label_width(&c, &s1, l1, bw + lw),
                                     vz_colorbar_label_width(&c, &s2, l2, bw + lw));
        cell = (target - left - lw - cgap - bars - m) / (int)a->C;
        /* a level bar title needs the line above its bar */
        top = m + title_h + lh / 2 + (l1 < 0 ? VZ_CBAR_TITLE_H(&c) : 0);
        gap = lh + pad + (l2 < 0 ? VZ_CBAR_TITLE_H(&c) : 0);
        int below = lw + pad + cshown + (xw ? pad + lh : 0) + m;
        if (hbud > 0) cell = vz_imin(cell, (hbud - top - gap - below) / (int)R);
        every = 1;
        int cell_min = cell_min_all;
        if (a->thin && cell < cell_min) {
            int c1 = cell < 1 ? 1 : cell;
            every = (size_t)((cell_min + c1 - 1) / c1);
            cell_min = (cell_min + (int)every - 1) / (int)every;
        }
        cramped = cell < cell_min;
        if (cramped) cell = cell_min;
        c.o.note = note0;
        cshown = 0;
        for (size_t j = 0; j < a->C; j += every) cshown = vz_imax(cshown, vz_text_len(&c, cl[j], c.fpx));
        if (every > 1) {
            const char *sfx = every % 10 == 2 && every % 100 != 12 ? "nd"
                            : every % 10 == 3 && every % 100 != 13 ? "rd" : "th";
            snprintf(note, sizeof note, "%s%severy %zu%s label shown", note0 ? note0 : "",
                     note0 ? "; " : "", every, sfx);
            c.o.note = note;
        }
        int n1 = vz_colorbar_label_lines(&c, &s1, vz_imax((int)a->R1 * cell, cb_min));
        int n2 = vz_colorbar_label_lines(&c, &s2, vz_imax((int)a->R2 * cell, cb_min));
        int t2 = vz_title_block(&c, a->title, &title_w);
        if (n1 == l1 && n2 == l2 && t2 == title_h) break;
        l1 = n1, l2 = n2;
    }
    if (cramped) c.fit->cramped = 1;
    if (title_w + 2 * m > (int)lround(c.o.width_in * c.o.dpi)) c.fit->cramped = 1;
    const int PW = (int)a->C * cell, bh1 = vz_imax((int)a->R1 * cell, cb_min);
    const int bh2 = vz_imax((int)a->R2 * cell, cb_min);
    const int y2 = top + vz_imax((int)a->R1 * cell, bh1) + gap;
    s = vz_add_heatmap(&c, a->top, NULL, a->R1, a->C, left, top, cell, &s1, 0, 0, NULL, "rows");
    if (!s) s = vz_add_heatmap(&c, a->diff, NULL, a->R2, a->C, left, y2, cell, &s2, 0, 1, NULL,
                               "difference");
    for (size_t i = 0; i < R && !s; i++) {
        size_t k = i < a->R1 ? i : i - a->R1; /* every k-th of each block from its first */
        if (k % every) continue;
        int y = i < a->R1 ? top + (int)i * cell : y2 + (int)(i - a->R1) * cell;
        s = vz_add_text(&c, rl[i], c.fpx, 0, left - lw - pad - vz_text_len(&c, rl[i], c.fpx),
                        y + (cell - lh) / 2, VZ_A_END, VZ_T_YTICK, VZ_BLACK);
    }
    const int ybelow = y2 + (int)a->R2 * cell + lw + pad;
    for (size_t j = 0; j < a->C && !s; j += every)
        s = vz_add_text(&c, cl[j], c.fpx, 90, left + (int)j * cell + (cell - lh) / 2, ybelow,
                        VZ_A_END, VZ_T_XTICK, VZ_BLACK);
    int bottom = ybelow + cshown, right = left + PW + lw, r1 = 0, b1 = 0, b2 = 0;
    if (!s) s = vz_begin_group(&c, "axes");
    if (!s && xw) {
        s = vz_add_text(&c, a->xlabel, c.fpx, 0, left + PW / 2 - xw / 2, bottom + pad,
                        VZ_A_MIDDLE, VZ_T_AXIS, VZ_BLACK);
        bottom += pad + lh;
    }
    const int bx = left + PW + lw + cgap;
    if (!s) s = vz_add_colorbar(&c, &s1, 1, bx, top, bw, bh1, &r1, &b1);
    if (!s) s = vz_add_colorbar(&c, &s2, 1, bx, y2, bw, bh2, &right, &b2);
    right = vz_imax(right, r1);
    bottom = vz_imax(vz_imax(bottom, b1), vz_imax(b2, y2 + bh2 + lh / 2 + lh % 2));
    if (!s) s = vz_finish_titled(&c, a->title, title_w, title_h, right, bottom, out, err);
done:
    vz_free_labels(rl, R);
    vz_free_labels(cl, a->C);
    hs_viz_figure_destroy(c.f);
    if (s == HS_ERR_NOMEM) hs_fail(err, s, "out of memory laying out a figure");
    return s;
}

hs_status hs_viz_rows_pair_figure(hs_viz_figure **out, const float *rows, size_t R1,
                                  const char *const *row_labels, const float *diff, size_t R2,
                                  const char *const *diff_labels, size_t C,
                                  const char *const *col_labels, const char *title,
                                  const char *xlabel, double diff_lim, const char *diff_label,
                                  const hs_viz_options *opt, hs_error *err)
{
    *out = NULL;
    if (!rows || !diff) return hs_fail(err, HS_ERR_INPUT, "rows strip: NULL values");
    if (R1 < 1 || R2 < 1 || R1 + R2 > HS_VIZ_MAX_TOKENS || C < 1 || C > HS_VIZ_MAX_TOKENS)
        return hs_fail(err, HS_ERR_INPUT, "rows strip is %zu + %zu x %zu: a figure takes 1..%d "
                       "per side", R1, R2, C, HS_VIZ_MAX_TOKENS);
    if (!(diff_lim > 0) || !isfinite(diff_lim))
        return hs_fail(err, HS_ERR_INPUT, "rows strip: difference scale %g must be > 0", diff_lim);
    for (size_t i = 0; i < R1 * C; i++)
        if (!isfinite(rows[i]))
            return hs_fail(err, HS_ERR_NUMERIC, "row value [%zu, %zu] is not finite (%g)", i / C,
                           i % C, (double)rows[i]);
    if (opt && opt->range == HS_VIZ_RANGE_FIXED && !(opt->vmax > opt->vmin))
        return hs_fail(err, HS_ERR_INPUT, "fixed value range [%g, %g] is empty", opt->vmin,
                       opt->vmax);
    for (size_t i = 0; i < R2 * C; i++)
        if (!isfinite(diff[i]))
            return hs_fail(err, HS_ERR_NUMERIC, "difference value [%zu, %zu] is not finite (%g)",
                           i / C, i % C, (double)diff[i]);
    hs_status s = vz_check_labels(row_labels, R1, "row labels", err);
    if (!s) s = vz_check_labels(diff_labels, R2, "difference labels", err);
    if (!s) s = vz_check_labels(col_labels, C, "column labels", err);
    if (!s) s = vz_check_title(title, "title", err);
    if (!s) s = vz_check_title(xlabel, "x label", err);
    if (!s) s = vz_check_title(diff_label, "difference label", err);
    if (s) return s;
    hs_viz_options o;
    if (opt) o = *opt;
    else hs_viz_options_default(&o);
    o.causal_mask = 0;
    const double hmax = o.max_height_in > 0 ? o.max_height_in : HS_VIZ_MAX_HEIGHT_IN;
    vz_strip_args a = {rows, diff, R1, R2, C, row_labels, diff_labels, col_labels, title,
                       xlabel, diff_label, diff_lim, hmax, 0};
    s = vz_fit_width(out, build_strip, &a, &o, HS_VIZ_COLUMN_IN, "rows strip", err);
    if (s == HS_OK && (*out)->height / (*out)->dpi <= hmax + 1e-9) return s;
    /* every label cannot be shown within the width and the height budget
       (a pair's 20 tokens in a column, its 36 rows on a page): every k-th
       label, as the matrices do; without a width asked, at a column */
    if ((s == HS_OK || s == HS_ERR_INPUT) && !o.annotate) {
        hs_viz_options t = o;
        if (!(t.width_in > 0)) t.width_in = HS_VIZ_COLUMN_IN;
        a.thin = 1;
        hs_viz_figure *f = NULL;
        hs_error e2 = {0};
        if (vz_fit_width(&f, build_strip, &a, &t, HS_VIZ_COLUMN_IN, "rows strip", &e2) == HS_OK &&
            f->height / f->dpi <= hmax + 1e-9) {
            hs_viz_figure_destroy(*out);
            *out = f;
            return HS_OK;
        }
        hs_viz_figure_destroy(f);
    }
    return s;
}
