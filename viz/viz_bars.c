/*
 * viz/viz_bars.c -- the horizontal bar chart: one labelled bar a value from a
 * zero line (diverging blue for < 0, red for >= 0), each value written at
 * its bar's end in one number format (a magnitude chart: every bar grey,
 * no "+"), a dashed reference line at a value (opt->mark_y, labelled
 * over the bars), and an x axis with nice ticks that
 * ends on ticks (a fixed range widens it, never clips it) and its title
 * under it, wrapped at spaces to the axis's length.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viz/viz_internal.h"

/* A bar's value label: fixed decimals (dec), or scientific when sci; a
 * negative number with U+2212; "+" before a positive one unless unsig. */
static void fmt_bar(char *buf, size_t n, double v, int dec, int sci, int unsig)
{
    if (sci && v == 0.0) {
        snprintf(buf, n, "0");
    } else if (sci) {
        snprintf(buf, n, unsig ? "%.2e" : "%+.2e", v);
        vz_short_exp(buf);
    } else {
        snprintf(buf, n, unsig ? "%.*f" : "%+.*f", dec, v);
    }
    vz_minus_sign(buf, n); /* U+2212, as every figure label */
}

typedef struct {
    const float *values;
    size_t N;
    const char *const *labels;
    const char *title, *xlabel;
    int explicit_range; /* opt was given: a FIXED range widens the axis */
} vz_bars_args;

/* A bar chart's x axis: its ticks, its ends (values, on ticks) and where it
 * lies on the canvas. */
typedef struct {
    vz_ticks tk;
    double alo, ahi; /* the axis's ends */
    int ax0, PW;     /* its left end and its length, px */
    int edge;        /* half the widest tick label: the room it takes past an end */
} bar_axis;

/* Canvas x (px) of the value v. */
static int bar_x(const bar_axis *ax, double v)
{
    return ax->ax0 + (int)lround((v - ax->alo) / (ax->ahi - ax->alo) * (double)ax->PW);
}

/* The axis over [lo, hi]: as many ticks as fit without their labels meeting
 * (>= 2), the axis ending on ticks, as long as avail px leave beside the
 * value labels (padL, padR px) or the end ticks' labels, whichever is wider.
 * ax0 is left to the caller. */
static void plan_bar_axis(vz_ctx *c, double lo, double hi, int avail, int padL, int padR,
                          bar_axis *ax)
{
    char buf[64];
    ax->alo = lo, ax->ahi = hi;
    ax->PW = 0, ax->edge = 0;
    for (int want = 6; want >= 1; want--) {
        vz_nice_ticks(lo, hi, want, &ax->tk);
        ax->alo = floor(lo / ax->tk.step + 1e-9) * ax->tk.step;
        ax->ahi = ceil(hi / ax->tk.step - 1e-9) * ax->tk.step;
        vz_ticks_at(ax->alo, ax->ahi, ax->tk.step, &ax->tk); /* the axis ends on ticks */
        int tw = 0;
        for (int k = 0; k < ax->tk.n; k++) {
            vz_fmt_tick(buf, sizeof buf, ax->tk.v[k], &ax->tk);
            tw = vz_imax(tw, vz_text_len(c, buf, c->fpx));
        }
        ax->edge = tw / 2;
        ax->PW = avail - vz_imax(padL, ax->edge) - vz_imax(padR, ax->edge);
        double spacing = ax->tk.n > 1 ? ax->PW * ax->tk.step / (ax->ahi - ax->alo) : ax->PW;
        if (spacing >= tw + 2 * c->pad || want == 1) break;
    }
}

/* The zero line down the bars (top, PH px high), the axis under them with
 * its ticks and their labels, in group "axis"; *right grows to the labels'
 * right end, *bottom gets their lowest. */
static hs_status add_bar_axis(vz_ctx *c, const bar_axis *ax, int top, int PH, int *right,
                              int *bottom)
{
    const int pad = c->pad, lw = c->lw;
    char buf[64];
    int x0 = bar_x(ax, 0.0);
    hs_status s = vz_begin_group(c, "axis");
    if (!s) s = vz_add_rect(c, x0 - lw / 2, top, lw, PH, VZ_FRAME);
    int ay = top + PH + pad / 2;
    if (!s) s = vz_add_rect(c, ax->ax0, ay, ax->PW + lw, lw, VZ_FRAME);
    int tl = (int)lround(c->fpx * 0.3);
    for (int k = 0; k < ax->tk.n && !s; k++) {
        int tx = bar_x(ax, ax->tk.v[k]);
        s = vz_add_rect(c, tx - lw / 2, ay + lw, lw, tl, VZ_FRAME);
        vz_fmt_tick(buf, sizeof buf, ax->tk.v[k], &ax->tk);
        int w = vz_text_len(c, buf, c->fpx);
        if (!s) s = vz_add_text(c, buf, c->fpx, 0, tx - w / 2, ay + lw + tl + pad / 4, VZ_A_MIDDLE,
                                VZ_T_CBAR, VZ_BLACK);
        *right = vz_imax(*right, tx - w / 2 + w);
    }
    *bottom = ay + lw + tl + pad / 4 + c->lh;
    return s;
}

/* The reference line (opt->mark_y): dashed, black, across the bars (top,
 * PH px high) at its value, in group "reference"; its label (lab, may be
 * NULL) over the bars centred on it, kept within [left, right). */
static hs_status add_bar_mark(vz_ctx *c, const bar_axis *ax, const char *lab, int top, int PH, int left,
                              int right)
{
    const int x = bar_x(ax, c->o.mark_y), t = c->lw, dash = (int)lround(c->lh * 0.4);
    hs_status s = vz_begin_group(c, "reference");
    for (int y = top; y < top + PH && !s; y += 2 * dash)
        s = vz_add_rect(c, x - t / 2, y, t, y + dash > top + PH ? top + PH - y : dash, VZ_BLACK);
    if (!s && lab) {
        const int w = vz_text_len(c, lab, c->apx);
        const int lx = vz_imax(left, vz_imin(x - w / 2, right - w));
        s = vz_add_text(c, lab, c->apx, 0, lx, top - c->alh - c->pad / 4, VZ_A_MIDDLE, VZ_T_LABEL, VZ_BLACK);
    }
    return s;
}

static hs_status build_bars(hs_viz_figure **out, const void *args, const hs_viz_options *opt,
                            vz_fit *fit, hs_error *err)
{
    const vz_bars_args *a = args;
    const float *values = a->values;
    size_t N = a->N;
    const char *title = a->title, *xlabel = a->xlabel;
    double lo = 0, hi = 0;
    for (size_t i = 0; i < N; i++) {
        if (values[i] < lo) lo = values[i];
        if (values[i] > hi) hi = values[i];
    }
    /* one number format for every value label of the chart (3 significant
       digits for the largest |value|), so "+3.00" stands next to "+1.66" */
    double vabs = fmax(fabs(lo), fabs(hi));
    int bar_sci = vabs >= 1e5 || (vabs > 0 && vabs < 1e-3);
    int bar_dec = vabs > 0 ? 2 - (int)floor(log10(vabs)) : 2;
    if (bar_dec < 0) bar_dec = 0;
    if (bar_dec > 4) bar_dec = 4;
    vz_ctx c;
    hs_status s = vz_ctx_init(&c, opt, err);
    if (s) return s;
    c.fit = fit;

    const int mark = isfinite(c.o.mark_y); /* the reference line: the axis holds it */
    if (mark) lo = fmin(lo, c.o.mark_y), hi = fmax(hi, c.o.mark_y);
    if (c.o.range == HS_VIZ_RANGE_FIXED && a->explicit_range && c.o.vmax > c.o.vmin) {
        /* a fixed range widens (never clips) the axis */
        if (c.o.vmin < lo) lo = c.o.vmin;
        if (c.o.vmax > hi) hi = c.o.vmax;
    }
    if (hi == lo) hi = lo + (lo != 0 ? fabs(lo) : 1.0);

    char **bl = calloc(N, sizeof *bl);
    int lmax = 0;
    if (!bl) { s = HS_ERR_NOMEM; goto done; }
    s = vz_prepare_labels(&c, a->labels, N, bl, &lmax);
    if (s) goto done;
    int m = c.margin, pad = c.pad, lh = c.lh;
    double dpi = c.o.dpi;
    int vw = 0;
    char buf[64];
    for (size_t i = 0; i < N; i++) {
        fmt_bar(buf, sizeof buf, values[i], bar_dec, bar_sci, c.o.magnitude);
        vw = vz_imax(vw, vz_text_len(&c, buf, c.apx));
    }
    int row = vz_imax((int)ceil(lh * 1.3), vz_label_pitch(&c, bl, N)), bar = (int)lround(row * 0.7);
    int title_w, title_h = vz_title_block(&c, title, &title_w);
    /* the axis title wraps at spaces to the axis: its widest word sets the least */
    int xlab_w = xlabel && xlabel[0] ? vz_widest_word(&c, xlabel, c.fpx) : 0;
    /* value labels sit right of bars >= 0 (zero included) and left of bars < 0 */
    int any_neg = lo < 0, any_nonneg = 0;
    for (size_t i = 0; i < N; i++) any_nonneg |= values[i] >= 0;
    int padL = any_neg ? vw + pad : 0, padR = any_nonneg ? vw + pad : 0;
    int left = m + lmax + pad;
    /* the reference line's label over the bars */
    const char *mark_lab = mark && c.o.mark_y_label && c.o.mark_y_label[0] ? c.o.mark_y_label : NULL;
    int top = m + title_h + (mark_lab ? c.alh + pad / 2 : 0);
    int target = (int)lround(c.o.width_in * dpi) - fit->extra;
    bar_axis ax;
    plan_bar_axis(&c, lo, hi, target - left - m, padL, padR, &ax);
    /* the x label is centred under the axis: the axis is at least as wide */
    int PW_min = vz_imax((int)lround(1.0 * dpi), xlab_w);
    if (ax.PW < PW_min) {
        ax.PW = PW_min;
        fit->cramped = 1;
    }
    if (title_w + 2 * m > (int)lround(c.o.width_in * dpi)) fit->cramped = 1; /* the canvas, not the retry plan */
    ax.ax0 = left + vz_imax(padL, ax.edge); /* data axis pixels */
    int x0 = bar_x(&ax, 0.0);
    int PH = (int)N * row;
    unsigned char pos[3], neg[3];
    memcpy(pos, vz_diverging[220], 3);
    memcpy(neg, vz_diverging[35], 3);
    if (c.o.magnitude) memcpy(pos, VZ_BAR_GREY, 3); /* no sign: no diverging colour */
    for (size_t i = 0; i < N && !s; i++) {
        int y = top + (int)i * row;
        int tw = vz_text_len(&c, bl[i], c.fpx);
        s = vz_add_text(&c, bl[i], c.fpx, 0, left - pad - tw, y + (row - lh) / 2, VZ_A_END,
                        VZ_T_LABEL, VZ_BLACK);
        double v = values[i];
        int xv = bar_x(&ax, v);
        int bx = v >= 0 ? x0 : xv, bwid = abs(xv - x0);
        if (!s && bwid > 0)
            s = vz_add_rect_kind(&c, bx, y + (row - bar) / 2, bwid, bar, v >= 0 ? pos : neg,
                                 VZ_R_BAR, -1, (int)i, -1);
        fmt_bar(buf, sizeof buf, v, bar_dec, bar_sci, c.o.magnitude);
        int vtw = vz_text_len(&c, buf, c.apx);
        int vx = v >= 0 ? xv + pad / 2 : xv - pad / 2 - vtw;
        if (!s) s = vz_add_text(&c, buf, c.apx, 0, vx, y + (row - c.alh) / 2,
                                v >= 0 ? VZ_A_START : VZ_A_END, VZ_T_VALUE, VZ_BLACK);
    }
    int right = ax.ax0 + ax.PW + padR, bottom = 0;
    if (!s && mark) s = add_bar_mark(&c, &ax, mark_lab, top, PH, left, right);
    if (!s) s = add_bar_axis(&c, &ax, top, PH, &right, &bottom);
    if (!s && xlab_w) {
        int cx = ax.ax0 + ax.PW / 2, ww;
        bottom += pad + vz_add_wrapped(&c, xlabel, ax.PW, cx, bottom + pad, 1, &ww, &s);
        right = vz_imax(right, cx - ww / 2 + ww);
    }
    if (!s) s = vz_finish_titled(&c, title, title_w, title_h, right, bottom, out, err);
done:
    vz_free_labels(bl, N);
    hs_viz_figure_destroy(c.f);
    if (s == HS_ERR_NOMEM) hs_fail(err, s, "out of memory laying out a figure");
    return s;
}

/* A bar by |value| descending, then by index. */
typedef struct {
    float a;
    size_t i;
} abs_key;

static int cmp_abs_desc(const void *x, const void *y)
{
    const abs_key *a = x, *b = y;
    if (a->a != b->a) return a->a > b->a ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* *out (taller than hmax in) redrawn with the largest bars by |value| in
 * their order, the most whose chart is within hmax, a note under the title
 * saying so: with opt->bars_add_up the top k - 1 and one bar summing the
 * rest (the terms of one sum), else the top k and the rest not shown. */
static hs_status bars_top(hs_viz_figure **out, const float *values, size_t N,
                          const char *const *labels, const char *title, const char *xlabel,
                          const hs_viz_options *opt, double hmax, hs_error *err)
{
    abs_key *ord = malloc(N * sizeof *ord);
    float *v = malloc(N * sizeof *v);
    const char **lb = malloc(N * sizeof *lb);
    unsigned char *keep = calloc(N, 1);
    hs_status s = HS_OK;
    if (!ord || !v || !lb || !keep) {
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < N; i++) ord[i] = (abs_key){fabsf(values[i]), i};
    qsort(ord, N, sizeof *ord, cmp_abs_desc);
    hs_viz_options o;
    if (opt) o = *opt;
    else hs_viz_options_default(&o);
    char note[256], rest[64];
    size_t k = (size_t)((double)N * hmax / ((*out)->height / (*out)->dpi));
    for (; k >= 2; k = k * 9 / 10) {
        const size_t shown = o.bars_add_up ? k - 1 : k; /* k rows either way */
        memset(keep, 0, N);
        for (size_t i = 0; i < shown; i++) keep[ord[i].i] = 1;
        size_t n = 0;
        double sum = 0;
        for (size_t i = 0; i < N; i++) {
            if (keep[i]) v[n] = values[i], lb[n++] = labels[i];
            else sum += values[i];
        }
        if (o.bars_add_up) {
            snprintf(rest, sizeof rest, "other %zu", N - shown);
            v[n] = (float)sum, lb[n++] = rest;
        }
        snprintf(note, sizeof note, "%s%sthe %zu largest of %zu by |value|; the other %zu %s",
                 o.note ? o.note : "", o.note ? "; " : "", shown, N, N - shown,
                 o.bars_add_up ? "summed" : "not shown");
        hs_viz_options o2 = o;
        o2.note = note;
        vz_bars_args a = {v, n, lb, title, xlabel, opt != NULL};
        hs_viz_figure *f = NULL;
        hs_error e = {0};
        if (vz_fit_width(&f, build_bars, &a, &o2, HS_VIZ_COLUMN_IN, "bar chart", &e) == HS_OK &&
            f->height / f->dpi <= hmax + 1e-9) {
            hs_viz_figure_destroy(*out);
            *out = f;
            break;
        }
        hs_viz_figure_destroy(f);
    }
done:
    free(ord);
    free(v);
    free(lb);
    free(keep);
    return s;
}

hs_status hs_viz_bars_figure(hs_viz_figure **out, const float *values, size_t N,
                             const char *const *labels, const char *title, const char *xlabel,
                             const hs_viz_options *opt, hs_error *err)
{
    *out = NULL;
    if (values == NULL) return hs_fail(err, HS_ERR_INPUT, "bar values are NULL");
    if (N < 1 || N > HS_VIZ_MAX_BARS)
        return hs_fail(err, HS_ERR_INPUT, "%zu bars: a chart takes 1..%d", N, HS_VIZ_MAX_BARS);
    hs_status s = vz_check_labels(labels, N, "bar labels", err);
    if (!s) s = vz_check_title(title, "title", err);
    if (!s) s = vz_check_title(xlabel, "x label", err);
    if (s) return s;
    for (size_t i = 0; i < N; i++) {
        if (!isfinite(values[i]))
            return hs_fail(err, HS_ERR_NUMERIC, "bar value %zu is not finite (%g)", i,
                           (double)values[i]);
        if (opt && opt->magnitude && values[i] < 0)
            return hs_fail(err, HS_ERR_INPUT, "bar value %zu is negative (%g) in a chart of a quantity "
                           "with no sign", i, (double)values[i]);
    }
    vz_bars_args a = {values, N, labels, title, xlabel, opt != NULL};
    s = vz_fit_width(out, build_bars, &a, opt, HS_VIZ_COLUMN_IN, "bar chart", err);
    const double hmax = opt && opt->max_height_in > 0 ? opt->max_height_in : HS_VIZ_MAX_HEIGHT_IN;
    if (s != HS_OK || (*out)->height / (*out)->dpi <= hmax + 1e-9 || N < 3) return s;
    return bars_top(out, values, N, labels, title, xlabel, opt, hmax, err);
}
