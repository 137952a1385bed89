/*
 * viz/viz_lines.c -- line plots over a shared x axis (e.g. training steps):
 * stacked panels, one coloured line (with point markers) per series, a
 * legend right of each panel, y ticks per panel, x ticks and label under the
 * last panel, and an optional dashed vertical marker (e.g. the step of a
 * phase change) and a dashed horizontal one (opt->mark_y: e.g. a
 * faithfulness of 1). Lines are drawn with the scene's rectangles: one column of
 * pixels at a time along x (runs of equal columns merged), so PNG and SVG
 * share the geometry like every other figure. Either axis may be log10
 * (opt->log_x, hs_viz_panel.log_y): positions are then taken in decades
 * (axis units = log10 of the value) and ticks sit at powers of ten. JSON:
 * every number.
 */
#include "viz/viz_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* matplotlib's tab10: distinguishable categorical colours. */
static const unsigned char TAB10[10][3] = {
    {0x1f, 0x77, 0xb4}, {0xff, 0x7f, 0x0e}, {0x2c, 0xa0, 0x2c}, {0xd6, 0x27, 0x28}, {0x94, 0x67, 0xbd},
    {0x8c, 0x56, 0x4b}, {0xe3, 0x77, 0xc2}, {0x7f, 0x7f, 0x7f}, {0xbc, 0xbd, 0x22}, {0x17, 0xbe, 0xcf}};
static const unsigned char AXIS_RGB[3] = {0x40, 0x40, 0x40};
static const unsigned char MARK_RGB[3] = {0x90, 0x90, 0x90};

void hs_viz_series_rgb(size_t i, unsigned char rgb[3])
{
    memcpy(rgb, TAB10[i % 10], 3);
}

/* An axis of the plot: linear (nice ticks) or log10. Axis units are the
 * value itself or its log10; the ticks t.v are values (not axis units). */
typedef struct {
    int log;
    vz_ticks t;
} axis;

static double ax_pos(const axis *a, double v)
{
    return a->log ? log10(v) : v;
}

/* A log axis's slack, decades: a float end such as 0.1f (log10 =
 * -0.9999999935) still holds the tick at 0.1. */
#define LOG_EPS 1e-6

/* Ticks over [lo, hi] (axis units), about target of them when linear; log:
 * the powers of ten inside (every k-th when there are more than 8 decades),
 * with 2x and 5x each when fewer than three powers fall inside. */
static void ax_ticks(axis *a, double lo, double hi, int target)
{
    if (!a->log) {
        vz_nice_ticks(lo, hi, target, &a->t);
        return;
    }
    static const double MUL[3] = {1.0, 2.0, 5.0};
    const int e0 = (int)floor(lo), e1 = (int)ceil(hi);
    int powers = 0;
    for (int e = e0; e <= e1; e++) powers += e >= lo - LOG_EPS && e <= hi + LOG_EPS;
    const int n_mul = powers < 3 ? 3 : 1, every = powers > 8 ? (powers + 7) / 8 : 1;
    a->t.n = 0;
    for (int e = e0; e <= e1; e++) {
        if (((e % every) + every) % every) continue;
        for (int k = 0; k < n_mul; k++) {
            double v = MUL[k] * pow(10.0, e), u = log10(v);
            if (u >= lo - LOG_EPS && u <= hi + LOG_EPS && a->t.n < (int)(sizeof a->t.v / sizeof a->t.v[0]))
                a->t.v[a->t.n++] = v;
        }
    }
}

/* One tick's text: the linear axis's format, or on a log axis the value
 * written out from 0.001 to 100000 and as 1e6, 2e-5 beyond. */
static void ax_text(char *buf, size_t n, double v, const axis *a)
{
    if (!a->log) {
        vz_fmt_tick(buf, n, v, &a->t);
        return;
    }
    int e = (int)floor(log10(v) + 1e-9);
    if (e >= -3 && e <= 5)
        snprintf(buf, n, "%.*f", e < 0 ? -e : 0, v);
    else
        snprintf(buf, n, "%de%d", (int)lround(v / pow(10.0, e)), e);
    vz_minus_sign(buf, n);
}

static hs_status check_input(const float *x, size_t N, const hs_viz_panel *panels, size_t n_panels,
                             int log_x, hs_error *err)
{
    if (x == NULL || panels == NULL) return hs_fail(err, HS_ERR_INPUT, "line plot: x or panels are NULL");
    if (N < 1 || N > HS_VIZ_MAX_POINTS)
        return hs_fail(err, HS_ERR_INPUT, "line plot: %zu points; a plot takes 1..%d", N, HS_VIZ_MAX_POINTS);
    if (n_panels < 1 || n_panels > HS_VIZ_MAX_PANELS)
        return hs_fail(err, HS_ERR_INPUT, "line plot: %zu panels; a plot takes 1..%d", n_panels,
                       HS_VIZ_MAX_PANELS);
    for (size_t i = 0; i < N; i++) {
        if (!isfinite(x[i])) return hs_fail(err, HS_ERR_NUMERIC, "line plot: x[%zu] is not finite", i);
        if (log_x && !(x[i] > 0))
            return hs_fail(err, HS_ERR_INPUT, "line plot: x[%zu] = %g on a log axis; it needs x > 0", i,
                           (double)x[i]);
        if (i > 0 && !(x[i] > x[i - 1]))
            return hs_fail(err, HS_ERR_INPUT, "line plot: x must increase (x[%zu] = %g after %g)", i,
                           (double)x[i], (double)x[i - 1]);
    }
    for (size_t p = 0; p < n_panels; p++) {
        const hs_viz_panel *P = &panels[p];
        if (P->y == NULL || P->n_series < 1 || P->n_series > HS_VIZ_MAX_BARS)
            return hs_fail(err, HS_ERR_INPUT, "line plot: panel %zu needs 1..%d series", p, HS_VIZ_MAX_BARS);
        hs_status s = vz_check_labels(P->labels, P->n_series, "series labels", err);
        if (!s) s = vz_check_title(P->title, "panel title", err);
        if (!s) s = vz_check_title(P->ylabel, "y label", err);
        if (s) return s;
        for (size_t k = 0; k < P->n_series * N; k++) {
            if (isinf(P->y[k]))
                return hs_fail(err, HS_ERR_NUMERIC, "line plot: panel %zu value %zu is infinite", p, k);
            if (P->log_y && !isnan(P->y[k]) && !(P->y[k] > 0))
                return hs_fail(err, HS_ERR_INPUT, "line plot: panel %zu value %zu = %g on a log axis; it needs y > 0",
                               p, k, (double)P->y[k]);
        }
        if (P->log_y && P->ymin < P->ymax && !(P->ymin > 0))
            return hs_fail(err, HS_ERR_INPUT, "line plot: panel %zu: ymin %g on a log axis; it needs ymin > 0", p,
                           P->ymin);
    }
    return HS_OK;
}

/* The y range of a panel in axis units: fixed, or the data's (NaN skipped)
 * padded by 5%; with cover, the data's and [ymin, ymax] together, padded. */
static void panel_range(const hs_viz_panel *P, const axis *ya, size_t N, int cover, double *lo,
                        double *hi)
{
    const int fixed = P->ymin < P->ymax;
    if (fixed && !cover) {
        *lo = ax_pos(ya, P->ymin);
        *hi = ax_pos(ya, P->ymax);
        return;
    }
    double a = fixed ? ax_pos(ya, P->ymin) : INFINITY, b = fixed ? ax_pos(ya, P->ymax) : -INFINITY;
    for (size_t k = 0; k < P->n_series * N; k++)
        if (!isnan(P->y[k])) a = fmin(a, ax_pos(ya, P->y[k])), b = fmax(b, ax_pos(ya, P->y[k]));
    if (!isfinite(a)) a = 0, b = 1;
    if (b - a < 1e-12) a -= 0.5, b += 0.5;
    double pad = 0.05 * (b - a);
    *lo = a - pad;
    *hi = b + pad;
}

/* A line from (x0, y0) to (x1, y1) (x0 < x1) of thickness t: one column of
 * pixels per x, columns with the same vertical extent merged. */
static hs_status add_segment(vz_ctx *c, double x0, double y0, double x1, double y1, int t,
                             const unsigned char rgb[3])
{
    int xa = (int)lround(x0), xb = (int)lround(x1);
    if (xb <= xa) return vz_add_rect(c, xa - t / 2, (int)lround(fmin(y0, y1)) - t / 2, t,
                                     (int)lround(fabs(y1 - y0)) + t, rgb);
    int run_x = xa, run_top = 0, run_bot = 0, have = 0;
    hs_status s = HS_OK;
    for (int px = xa; px <= xb && !s; px++) {
        double u0 = (px - 0.5 - x0) / (x1 - x0), u1 = (px + 0.5 - x0) / (x1 - x0);
        u0 = fmax(0.0, fmin(1.0, u0));
        u1 = fmax(0.0, fmin(1.0, u1));
        double ya = y0 + u0 * (y1 - y0), yb = y0 + u1 * (y1 - y0);
        int top = (int)lround(fmin(ya, yb)) - t / 2, bot = (int)lround(fmax(ya, yb)) - t / 2 + t;
        if (have && top == run_top && bot == run_bot) continue;
        if (have) s = vz_add_rect(c, run_x, run_top, px - run_x, run_bot - run_top, rgb);
        run_x = px, run_top = top, run_bot = bot, have = 1;
    }
    if (!s && have) s = vz_add_rect(c, run_x, run_top, xb + 1 - run_x, run_bot - run_top, rgb);
    return s;
}

/* A line plot's plan, shared by its steps: the axes and their ranges (axis
 * units), the sizes of marks, and the plot's pixel geometry. */
typedef struct {
    vz_ctx *c;
    const float *x;
    size_t N;
    const hs_viz_panel *panels;
    size_t n_panels;
    axis xa;
    double xlo, xhi;
    axis ya[HS_VIZ_MAX_PANELS];
    double ylo[HS_VIZ_MAX_PANELS], yhi[HS_VIZ_MAX_PANELS];
    int thick;            /* line thickness, px */
    int mk;               /* point marker side, px */
    int tl;               /* tick length, px */
    int ytick_w;          /* the widest y tick label of any panel */
    int legend_w;         /* the widest series label of any panel */
    int swatch;           /* a legend swatch's side */
    int left;             /* the plots' left edge */
    int PW, PH;           /* a plot's width and height */
    int legend_total;     /* the legend's width right of a plot */
} lines_plan;

/* One panel's vertical frame: its plot's top (px) and y range (axis units). */
typedef struct {
    int top;
    double lo, hi;
} lines_frame;

/* Canvas x (px) of the value v on the x axis. */
static double x_px(const lines_plan *pl, double v)
{
    return pl->left + (ax_pos(&pl->xa, v) - pl->xlo) / (pl->xhi - pl->xlo) * (double)pl->PW;
}

/* Canvas y (px) of u (axis units) in a panel. */
static double y_px(const lines_plan *pl, const lines_frame *f, double u)
{
    return f->top + (f->hi - u) / (f->hi - f->lo) * (double)pl->PH;
}

/* The axes: x's range (a scatter's padded off the frame) and ticks, each
 * panel's y range and ticks; the widest y tick label and series label.
 * HS_ERR_NOMEM or HS_OK. */
static hs_status plan_axes(lines_plan *pl)
{
    vz_ctx *c = pl->c;
    const float *x = pl->x;
    pl->xa = (axis){c->o.log_x != 0, {{0}, 0, 0, 0, 0}};
    pl->xlo = ax_pos(&pl->xa, x[0]), pl->xhi = ax_pos(&pl->xa, x[pl->N - 1]);
    if (pl->xhi == pl->xlo) pl->xlo -= 0.5, pl->xhi += 0.5;
    if (c->o.markers_only) { /* no point on the frame */
        const double d = 0.05 * (pl->xhi - pl->xlo);
        pl->xlo -= d, pl->xhi += d;
    }
    ax_ticks(&pl->xa, pl->xlo, pl->xhi, 6);
    char buf[64];

    /* left gutter: y label (rotated) + the widest y tick of any panel */
    pl->ytick_w = 0, pl->legend_w = 0;
    for (size_t p = 0; p < pl->n_panels; p++) {
        const hs_viz_panel *P = &pl->panels[p];
        axis *ya = &pl->ya[p];
        ya->log = P->log_y != 0;
        panel_range(P, ya, pl->N, c->o.y_cover, &pl->ylo[p], &pl->yhi[p]);
        if (c->o.markers_only) {
            const double d = 0.06 * (pl->yhi[p] - pl->ylo[p]);
            pl->ylo[p] -= d, pl->yhi[p] += d;
        }
        ax_ticks(ya, pl->ylo[p], pl->yhi[p], 4);
        for (int k = 0; k < ya->t.n; k++) {
            ax_text(buf, sizeof buf, ya->t.v[k], ya);
            pl->ytick_w = vz_imax(pl->ytick_w, vz_text_len(c, buf, c->fpx));
        }
        for (size_t i = 0; i < P->n_series; i++) {
            char *d = vz_display_label(P->labels[i]);
            if (!d) return HS_ERR_NOMEM;
            int w = vz_text_len(c, d, c->fpx);
            free(d);
            pl->legend_w = vz_imax(pl->legend_w, w);
        }
    }
    return HS_OK;
}

/* A panel's frame, y ticks with their labels, and y label. */
static hs_status add_y_axis(const lines_plan *pl, size_t p, const lines_frame *fr)
{
    vz_ctx *c = pl->c;
    const hs_viz_panel *P = &pl->panels[p];
    const axis *ya = &pl->ya[p];
    const int m = c->margin, pad = c->pad, lh = c->lh, lw = c->lw, tl = pl->tl;
    const int left = pl->left, top = fr->top, PW = pl->PW, PH = pl->PH;
    char buf[64];
    /* frame, y ticks and gridless axes */
    hs_status s = vz_add_rect(c, left - lw, top, lw, PH + lw, AXIS_RGB);
    if (!s) s = vz_add_rect(c, left - lw, top + PH, PW + lw, lw, AXIS_RGB);
    for (int k = 0; k < ya->t.n && !s; k++) {
        double v = ya->t.v[k], u = ax_pos(ya, v);
        if (u < fr->lo - 1e-12 || u > fr->hi + 1e-12) continue;
        int ty = (int)lround(y_px(pl, fr, u));
        s = vz_add_rect(c, left - lw - tl, ty - lw / 2, tl, lw, AXIS_RGB);
        ax_text(buf, sizeof buf, v, ya);
        int w = vz_text_len(c, buf, c->fpx);
        if (!s)
            s = vz_add_text(c, buf, c->fpx, 0, left - lw - tl - pad / 2 - w, ty - lh / 2, VZ_A_END,
                            VZ_T_CBAR, VZ_BLACK);
    }
    if (!s && P->ylabel && P->ylabel[0]) {
        int w = vz_text_len(c, P->ylabel, c->fpx);
        s = vz_add_text(c, P->ylabel, c->fpx, 90, m, top + PH / 2 - w / 2, VZ_A_MIDDLE, VZ_T_AXIS,
                        VZ_BLACK);
    }
    return s;
}

/* The dashed vertical marker at mark_x through a panel (when on the x axis),
 * labelled in the first panel (p == 0). */
static hs_status add_marker(const lines_plan *pl, size_t p, const lines_frame *fr, double mark_x,
                            const char *mark_label)
{
    vz_ctx *c = pl->c;
    const int pad = c->pad, lw = c->lw, top = fr->top, PH = pl->PH;
    hs_status s = HS_OK;
    if (!(isfinite(mark_x) && (!pl->xa.log || mark_x > 0) && ax_pos(&pl->xa, mark_x) >= pl->xlo &&
          ax_pos(&pl->xa, mark_x) <= pl->xhi))
        return s;
    int mx = (int)lround(x_px(pl, mark_x)), dash = (int)lround(c->lh * 0.5);
    for (int yy = top; yy < top + PH && !s; yy += 2 * dash)
        s = vz_add_rect(c, mx - lw / 2, yy, lw > 1 ? lw : 1, yy + dash > top + PH ? top + PH - yy : dash,
                        MARK_RGB);
    if (!s && p == 0 && mark_label && mark_label[0])
        s = vz_add_text(c, mark_label, c->apx, 0, mx + pad / 2, top + pad / 2, VZ_A_START, VZ_T_LABEL,
                        VZ_BLACK);
    return s;
}

/* The dashed horizontal line at opt->mark_y through a panel (when its range
 * holds it), its label at the left end above the line (where a rising curve,
 * such as faithfulness over circuit size, is still low). */
static hs_status add_y_marker(const lines_plan *pl, size_t p, const lines_frame *fr)
{
    vz_ctx *c = pl->c;
    const double v = c->o.mark_y;
    if (!isfinite(v) || (pl->ya[p].log && !(v > 0))) return HS_OK;
    const double u = ax_pos(&pl->ya[p], v);
    if (u < fr->lo || u > fr->hi) return HS_OK;
    const int lw = c->lw, pad = c->pad, my = (int)lround(y_px(pl, fr, u));
    const int dash = (int)lround(c->lh * 0.5), t = lw > 1 ? lw : 1;
    hs_status s = HS_OK;
    for (int xx = pl->left; xx < pl->left + pl->PW && !s; xx += 2 * dash)
        s = vz_add_rect(c, xx, my - t / 2, xx + dash > pl->left + pl->PW ? pl->left + pl->PW - xx : dash,
                        t, MARK_RGB);
    const char *lab = c->o.mark_y_label;
    if (!s && lab && lab[0]) {
        s = vz_add_text(c, lab, c->apx, 0, pl->left + pad / 2, my - t / 2 - c->alh, VZ_A_START,
                        VZ_T_LABEL, VZ_BLACK);
    }
    return s;
}

/* Series i's point marker, side mk centred on (cx, cy): a filled square,
 * an open square or a plus by i mod 3, so that series stay told apart
 * without their colours (issue 35: methods overlaid differed by colour
 * only). */
static hs_status add_point(vz_ctx *c, int cx, int cy, int mk, size_t i, const unsigned char rgb[3])
{
    const int x = cx - mk / 2, y = cy - mk / 2;
    switch (i % 3) {
    case 0: return vz_add_rect(c, x, y, mk, mk, rgb);
    case 1: { /* open: a white square in a frame a third of its side thick */
        const int t = mk / 3 > 1 ? mk / 3 : 1;
        hs_status s = vz_add_rect(c, x, y, mk, mk, rgb);
        return s ? s : vz_add_rect(c, x + t, y + t, mk - 2 * t, mk - 2 * t, VZ_WHITE);
    }
    default: { /* a plus, a little wider than the square */
        const int t = mk / 3 > 1 ? mk / 3 : 1, w = mk + mk / 3;
        hs_status s = vz_add_rect(c, cx - w / 2, cy - t / 2, w, t, rgb);
        return s ? s : vz_add_rect(c, cx - t / 2, cy - w / 2, t, w, rgb);
    }
    }
}

/* Series i of panel p: its line (unless markers only) and point markers,
 * clamped to the panel's range, NaN points left out; then its legend entry:
 * a piece of its line with its marker. */
static hs_status add_series(const lines_plan *pl, size_t p, const lines_frame *fr, size_t i)
{
    vz_ctx *c = pl->c;
    const hs_viz_panel *P = &pl->panels[p];
    const float *x = pl->x;
    const size_t N = pl->N;
    const double lo = fr->lo, hi = fr->hi;
    const int pad = c->pad, lh = c->lh, mk = pl->mk;
    unsigned char rgb[3];
    hs_viz_series_rgb(i, rgb);
    const float *yy = P->y + i * N;
    hs_status s = HS_OK;
    for (size_t k = 0; k < N && !s; k++) {
        if (isnan(yy[k])) continue;
        double cy = fmax(lo, fmin(hi, ax_pos(&pl->ya[p], yy[k])));
        if (!c->o.markers_only && k + 1 < N && !isnan(yy[k + 1])) {
            double ny = fmax(lo, fmin(hi, ax_pos(&pl->ya[p], yy[k + 1])));
            s = add_segment(c, x_px(pl, x[k]), y_px(pl, fr, cy), x_px(pl, x[k + 1]), y_px(pl, fr, ny),
                            pl->thick, rgb);
        }
        if (!s) s = add_point(c, (int)lround(x_px(pl, x[k])), (int)lround(y_px(pl, fr, cy)), mk, i, rgb);
    }
    int ly = fr->top + (int)i * (lh + pad / 2);
    int lx = pl->left + pl->PW + 2 * pad;
    if (!s && !c->o.markers_only)
        s = vz_add_rect(c, lx, ly + lh / 2 - pl->thick / 2, pl->swatch, pl->thick, rgb);
    if (!s) s = add_point(c, lx + pl->swatch / 2, ly + lh / 2, mk, i, rgb);
    char *d = vz_display_label(P->labels[i]);
    if (!d) s = HS_ERR_NOMEM;
    if (!s)
        s = vz_add_text(c, d, c->fpx, 0, lx + pl->swatch + pad, ly, VZ_A_START, VZ_T_LABEL, VZ_BLACK);
    free(d);
    return s;
}

/* Panel p in its group, its title's top at *y: the title, axes, marker and
 * series. *y moves under it. */
static hs_status add_panel(const lines_plan *pl, size_t p, int *y, double mark_x,
                           const char *mark_label)
{
    vz_ctx *c = pl->c;
    const hs_viz_panel *P = &pl->panels[p];
    char gid[32];
    snprintf(gid, sizeof gid, "panel%zu", p);
    hs_status s = vz_begin_group(c, gid);
    if (!s && P->title && P->title[0]) {
        s = vz_add_text(c, P->title, c->fpx, 0, pl->left, *y, VZ_A_START, VZ_T_HEADER, VZ_BLACK);
        *y += c->lh + c->pad / 2;
    }
    const lines_frame fr = {*y, pl->ylo[p], pl->yhi[p]};
    if (!s) s = add_y_axis(pl, p, &fr);
    if (!s) s = add_marker(pl, p, &fr, mark_x, mark_label);
    if (!s) s = add_y_marker(pl, p, &fr);
    /* lines and markers, then the legend */
    for (size_t i = 0; i < P->n_series && !s; i++) s = add_series(pl, p, &fr, i);
    int legend_h = (int)P->n_series * (c->lh + c->pad / 2);
    *y = fr.top + (pl->PH > legend_h ? pl->PH : legend_h) + c->lw + c->pad;
    return s;
}

/* x ticks with their labels and the x label under the last panel, whose
 * bottom edge is ay; *bottom gets the lowest text's end. */
static hs_status add_x_axis(const lines_plan *pl, int ay, const char *xlabel, int *bottom)
{
    vz_ctx *c = pl->c;
    const int pad = c->pad, lh = c->lh, lw = c->lw, tl = pl->tl;
    const axis *xa = &pl->xa;
    char buf[64];
    hs_status s = HS_OK;
    for (int k = 0; k < xa->t.n && !s; k++) {
        const double u = ax_pos(xa, xa->t.v[k]);
        const double eps = xa->log ? LOG_EPS : 1e-9;
        if (u < pl->xlo - eps || u > pl->xhi + eps) continue;
        int tx = (int)lround(x_px(pl, xa->t.v[k]));
        s = vz_add_rect(c, tx - lw / 2, ay, lw, tl, AXIS_RGB);
        ax_text(buf, sizeof buf, xa->t.v[k], xa);
        int w = vz_text_len(c, buf, c->fpx);
        if (!s)
            s = vz_add_text(c, buf, c->fpx, 0, tx - w / 2, ay + tl + pad / 4, VZ_A_MIDDLE, VZ_T_CBAR,
                            VZ_BLACK);
    }
    *bottom = ay + tl + pad / 4 + lh;
    if (!s && xlabel && xlabel[0]) {
        int w = vz_text_len(c, xlabel, c->fpx);
        s = vz_add_text(c, xlabel, c->fpx, 0, pl->left + pl->PW / 2 - w / 2, *bottom + pad / 2,
                        VZ_A_MIDDLE, VZ_T_AXIS, VZ_BLACK);
        *bottom += pad / 2 + lh;
    }
    return s;
}

hs_status hs_viz_lines_figure(hs_viz_figure **out, const float *x, size_t N, const hs_viz_panel *panels,
                              size_t n_panels, const char *title, const char *xlabel, double mark_x,
                              const char *mark_label, const hs_viz_options *opt, hs_error *err)
{
    *out = NULL;
    hs_status s = check_input(x, N, panels, n_panels, opt && opt->log_x, err);
    if (!s) s = vz_check_title(title, "title", err);
    if (!s) s = vz_check_title(xlabel, "x label", err);
    if (!s) s = vz_check_title(mark_label, "marker label", err);
    if (s) return s;
    vz_ctx c;
    if ((s = vz_ctx_init(&c, opt, err)) != HS_OK) return s;
    const int m = c.margin, pad = c.pad, lh = c.lh, lw = c.lw;
    const double dpi = c.o.dpi;
    lines_plan pl = {.c = &c, .x = x, .N = N, .panels = panels, .n_panels = n_panels};
    pl.thick = lw * 2 < 2 ? 2 : lw * 2;
    /* a scatter's markers carry the figure alone: twice a line plot's */
    pl.mk = (pl.thick + 2 * lw + 1) * (c.o.markers_only ? 2 : 1);
    pl.tl = (int)lround(c.fpx * 0.3);
    s = plan_axes(&pl);
    if (s) goto done;
    pl.swatch = (int)lround(lh * 1.6); /* a piece of line, its marker in the middle */
    pl.left = m + lh + pad + pl.ytick_w + pad + pl.tl;
    pl.PW = (int)lround(4.5 * dpi);
    pl.legend_total = pad * 2 + pl.swatch + pad + pl.legend_w;
    /* no width asked: one panel is a column wide, as every one-panel figure
     * (hs_viz_options.width_in), wider only when the plot would be under its
     * 1.5 in floor beside the labels; several stacked panels keep the natural
     * 4.5 in plot. The title wraps to that width, not to 0. */
    const int auto_w = !(c.o.width_in > 0);
    if (auto_w)
        c.o.width_in = n_panels == 1 ? HS_VIZ_COLUMN_IN
                                     : (pl.left + pl.PW + pl.legend_total + m) / dpi;
    int title_w = 0;
    const int title_h = vz_title_block(&c, title, &title_w);
    if (c.o.width_in > 0) {
        int rest = pl.left + pl.legend_total + m;
        pl.PW = (int)lround(c.o.width_in * dpi) - rest;
        if (pl.PW < (int)lround(1.5 * dpi)) pl.PW = (int)lround(1.5 * dpi);
    }
    pl.PH = (int)lround(1.7 * dpi);
    int y = m + title_h;
    for (size_t p = 0; p < n_panels && !s; p++) s = add_panel(&pl, p, &y, mark_x, mark_label);
    int bottom = 0;
    if (!s) s = add_x_axis(&pl, y - pad, xlabel, &bottom);
    int W = pl.left + pl.PW + pl.legend_total + m;
    if (title_w + 2 * m > W) W = title_w + 2 * m;
    /* a word longer than the plot, or the plot's floor, widens it */
    if (auto_w && W != (int)lround(c.o.width_in * dpi)) c.o.width_in = W / dpi;
    if (!s) s = vz_add_title(&c, title, W);
    if (!s) s = vz_finish(&c, W, bottom + m, out, err);
done:
    hs_viz_figure_destroy(c.f);
    if (s == HS_ERR_NOMEM) hs_fail(err, s, "out of memory laying out a figure");
    return s;
}

static cJSON *float_array(const float *v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++) {
        cJSON *x = isnan(v[i]) ? cJSON_CreateNull() : cJSON_CreateNumber(hs_f32_shortest(v[i]));
        if (!x || !cJSON_AddItemToArray(a, x)) {
            cJSON_Delete(x);
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

hs_status hs_viz_lines_json(cJSON **out, const float *x, size_t N, const hs_viz_panel *panels,
                            size_t n_panels, const char *title, const char *xlabel, hs_error *err)
{
    *out = NULL;
    hs_status s = check_input(x, N, panels, n_panels, 0, err);
    if (s) return s;
    cJSON *o = cJSON_CreateObject();
    int ok = o && (!title || cJSON_AddStringToObject(o, "title", title)) &&
             (!xlabel || cJSON_AddStringToObject(o, "xlabel", xlabel)) &&
             cJSON_AddItemToObject(o, "x", float_array(x, N));
    cJSON *ps = ok ? cJSON_AddArrayToObject(o, "panels") : NULL;
    ok = ps != NULL;
    for (size_t p = 0; ok && p < n_panels; p++) {
        const hs_viz_panel *P = &panels[p];
        cJSON *po = cJSON_CreateObject();
        ok = po && cJSON_AddItemToArray(ps, po);
        if (!ok) {
            cJSON_Delete(po);
            break;
        }
        ok = (!P->title || cJSON_AddStringToObject(po, "title", P->title)) &&
             (!P->ylabel || cJSON_AddStringToObject(po, "ylabel", P->ylabel));
        cJSON *ss = ok ? cJSON_AddArrayToObject(po, "series") : NULL;
        ok = ss != NULL;
        for (size_t i = 0; ok && i < P->n_series; i++) {
            cJSON *so = cJSON_CreateObject();
            ok = so && cJSON_AddItemToArray(ss, so) && cJSON_AddStringToObject(so, "label", P->labels[i]);
            cJSON *ya = ok ? float_array(P->y + i * N, N) : NULL;
            ok = ok && ya && cJSON_AddItemToObject(so, "y", ya);
        }
    }
    if (!ok) {
        cJSON_Delete(o);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    *out = o;
    return HS_OK;
}
