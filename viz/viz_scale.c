/*
 * viz/viz_scale.c -- what reads a value off a figure: nice ticks and their
 * number formats (axes, colour bars), the colour bar of a scale (a gradient
 * with its end values, ticks between and the quantity it shows) and the
 * masked-cell legend.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "viz/viz_internal.h"

/* ------------------------------------------------------------------------ */
/* Ticks and number formats                                                 */

/* The multiples of step in [lo, hi] into t (vz_ticks, viz_internal.h; step,
 * decimals and sci set too). */
void vz_ticks_at(double lo, double hi, double step, vz_ticks *t)
{
    t->n = 0;
    t->step = step;
    int dec = (int)-floor(log10(step) + 1e-9);
    t->decimals = dec < 0 ? 0 : dec;
    double amax = fmax(fabs(lo), fabs(hi));
    t->sci = amax >= 1e4 || (amax > 0 && amax < 1e-3);
    double first = ceil(lo / step - 1e-9) * step;
    for (double v = first; v <= hi + step * 1e-9 && t->n < 32; v += step) {
        double q = fabs(v) < step * 1e-9 ? 0.0 : v;
        t->v[t->n++] = q;
    }
}

/* Nice ticks over [lo, hi]: step in {1, 2, 5} x 10^k, about target of them. */
void vz_nice_ticks(double lo, double hi, int target, vz_ticks *t)
{
    double span = hi - lo;
    if (!(span > 0)) span = fabs(hi) > 0 ? fabs(hi) : 1.0;
    if (target < 1) target = 1;
    double raw = span / target, mag = pow(10.0, floor(log10(raw))), step;
    double r = raw / mag;
    if (r <= 1.0) step = mag;
    else if (r <= 2.0) step = 2 * mag;
    else if (r <= 5.0) step = 5 * mag;
    else step = 10 * mag;
    vz_ticks_at(lo, hi, step, t);
}

/* The one sign rule of every figure label: a number that prints as zero at
 * its precision has no sign ("-0.00", "+0.00" -> "0.00"; "+0.00" was on
 * GPT-2's DLA bars), and each remaining hyphen-minus is U+2212. */
void vz_minus_sign(char *buf, size_t n)
{
    const char *d = buf + 1;
    if ((buf[0] == '-' || buf[0] == '+') && d[0] && strspn(d, "0.") == strcspn(d, "eE"))
        memmove(buf, buf + 1, strlen(buf));
    char out[64];
    size_t k = 0;
    for (const char *p = buf; *p && k + 4 < sizeof out; p++) {
        if (*p == '-') {
            memcpy(out + k, "\xe2\x88\x92", 3); /* U+2212 MINUS SIGN */
            k += 3;
        } else {
            out[k++] = *p;
        }
    }
    out[k] = '\0';
    snprintf(buf, n, "%s", out);
}

/* Shortens an exponent: "1.5e-06" -> "1.5e-6", "2e+05" -> "2e5". */
void vz_short_exp(char *buf)
{
    char *e = strchr(buf, 'e');
    if (!e) return;
    char *p = e + 1, sign = 0;
    if (*p == '+' || *p == '-') sign = *p++;
    char *q = p;
    while (*q == '0' && q[1]) q++;
    char tail[16];
    snprintf(tail, sizeof tail, "%s%s", sign == '-' ? "-" : "", q);
    snprintf(e + 1, 16, "%s", tail);
}

void hs_viz_fmt_value(char *buf, size_t n, double v)
{
    const double a = fabs(v);
    if (!isfinite(v)) snprintf(buf, n, "%g", v);
    else if (a == 0.0 || (a >= 1e-3 && a < 1e5)) snprintf(buf, n, "%.3f", v);
    else snprintf(buf, n, "%.3e", v);
    vz_short_exp(buf);
    vz_minus_sign(buf, n);
}

/* One tick label: fixed decimals, or scientific with enough digits to tell
 * neighbouring ticks apart. */
void vz_fmt_tick(char *buf, size_t n, double v, const vz_ticks *t)
{
    if (t->sci && v == 0.0) {
        snprintf(buf, n, "0");
        return;
    }
    if (t->sci) {
        int dig = (int)floor(log10(fabs(v))) - (int)floor(log10(t->step) + 1e-9);
        if (dig < 0) dig = 0;
        if (dig > 6) dig = 6;
        snprintf(buf, n, "%.*e", dig, v);
        vz_short_exp(buf);
    } else {
        snprintf(buf, n, "%.*f", t->decimals, v);
    }
    vz_minus_sign(buf, n);
}

/* The decimals, from dec up to dec + 3, that write v exactly (a round end
 * needs no more than its ticks). */
static int decimals_for(double v, int dec)
{
    for (int d = dec; d < dec + 3; d++) {
        double x = v * pow(10.0, d);
        if (fabs(x - round(x)) < 1e-6) return d;
    }
    return dec + 3;
}

double vz_round_out(double v, double span, int up)
{
    if (v == 0.0 || !isfinite(v) || !(span > 0)) return v;
    double q = pow(10.0, floor(log10(span)) - 1), x = v / q;
    /* float32 data's tolerance: 0.4f / 0.01 is 40.0000006 */
    double r = up ? ceil(x - 1e-4) : floor(x + 1e-4);
    return r * q;
}

double hs_viz_round_limit(double lim)
{
    return lim > 0 && isfinite(lim) ? vz_round_out(lim, 2 * lim, 1) : lim;
}

/* An end value of a scale with the ticks' decimals (dec), or 3 significant
 * digits in scientific notation (sci). */
static void fmt_end(char *buf, size_t n, double v, int sci, int dec)
{
    if (sci && v != 0.0) {
        snprintf(buf, n, "%.2e", v);
        char *e = strchr(buf, 'e'), *z = e;
        while (z > buf && z[-1] == '0') z--;
        if (z > buf && z[-1] == '.') z--;
        memmove(z, e, strlen(e) + 1);
        vz_short_exp(buf);
    } else {
        snprintf(buf, n, "%.*f", dec, v);
    }
    vz_minus_sign(buf, n);
}

/* ------------------------------------------------------------------------ */
/* Colour bars                                                              */

/* A scale's labelled values: the two ends (always, so a reader sees the
 * range) and the nice ticks between them at least min_gap (a fraction of
 * the scale) away from each end. */
typedef struct {
    double v[34];
    char s[34][32];
    int n;
} vz_scale_ticks;

static void scale_ticks(const vz_scale *sc, double min_gap, vz_scale_ticks *out)
{
    vz_ticks tk;
    /* about one tick per min_gap of the scale, at most 5 */
    int target = min_gap > 0 ? (int)floor(1.0 / min_gap) : 5;
    vz_nice_ticks(sc->vmin, sc->vmax, target < 1 ? 1 : target > 5 ? 5 : target, &tk);
    double span = sc->vmax - sc->vmin;
    /* one precision for every label: the ticks', or more when an end needs it */
    int dec = tk.decimals;
    dec = vz_imax(dec, decimals_for(sc->vmin, tk.decimals));
    dec = vz_imax(dec, decimals_for(sc->vmax, tk.decimals));
    vz_ticks fixed = tk;
    fixed.decimals = dec;
    out->n = 0;
    out->v[out->n] = sc->vmin;
    fmt_end(out->s[out->n++], 32, sc->vmin, tk.sci, dec);
    for (int i = 0; i < tk.n; i++) {
        /* (1e-9: a tick exactly min_gap from an end keeps its label; in float
           (1 - 0.8) / 1 is 0.19999999999999996, which dropped GPT-2's 0.8) */
        if ((tk.v[i] - sc->vmin) / span < min_gap - 1e-9 || (sc->vmax - tk.v[i]) / span < min_gap - 1e-9)
            continue;
        out->v[out->n] = tk.v[i];
        vz_fmt_tick(out->s[out->n++], 32, tk.v[i], &fixed);
    }
    out->v[out->n] = sc->vmax;
    fmt_end(out->s[out->n++], 32, sc->vmax, tk.sci, dec);
}

/* The next line of label from byte *at: as many whole words (split at
 * spaces; "A − B" one word: a lone U+2212 minus joins its neighbours) as fit in len
 * px, at least one; into line (cap bytes, cut there if longer). 0 when the
 * label is done. */
static int wrap_next(vz_ctx *c, const char *label, size_t *at, int len, char *line, size_t cap)
{
    size_t i = *at, n = strlen(label);
    while (i < n && label[i] == ' ') i++;
    if (i >= n) return 0;
    size_t end = i, best = 0;
    while (end < n) {
        size_t e = end;
        while (e < n && label[e] == ' ') e++;
        while (e < n && label[e] != ' ') e++;
        /* a difference "wet − tired" stays one piece: a lone minus takes the
           word before it and the word after it along */
        for (;;) {
            size_t m = e;
            while (m < n && label[m] == ' ') m++;
            if (!(n - m > 3 && memcmp(label + m, "\xe2\x88\x92 ", 4) == 0)) break;
            e = m + 3;
            while (e < n && label[e] == ' ') e++;
            while (e < n && label[e] != ' ') e++;
        }
        size_t k = e - i < cap - 1 ? e - i : cap - 1;
        memcpy(line, label + i, k);
        line[k] = '\0';
        if (best && vz_text_len(c, line, c->fpx) > len) break;
        best = e;
        end = e;
    }
    size_t k = best - i < cap - 1 ? best - i : cap - 1;
    memcpy(line, label + i, k);
    line[k] = '\0';
    *at = best;
    return 1;
}

/* Colour bar at (x, y), size bw x bh, in its own group "colorbar".
 * Vertical: top = vmax, tick labels on its right and the quantity
 * (sc->label, rotated) right of them. Horizontal: left = vmin, tick labels
 * below and the quantity under them. *right / *bottom get the extent. */
hs_status vz_add_colorbar(vz_ctx *c, const vz_scale *sc, int vertical, int x, int y, int bw, int bh,
                          int *right, int *bottom)
{
    if (vz_begin_group(c, "colorbar")) return HS_ERR_NOMEM;
    hs_status s = vz_add_rect_kind(c, x, y, bw, bh, VZ_WHITE, VZ_R_CBAR, -1, -1, -1);
    if (!s) {
        c->f->rects[c->f->n_rects - 1].cmap = sc->cmap;
        c->f->rects[c->f->n_rects - 1].vertical = vertical;
    }
    if (!s) s = vz_add_frame(c, x, y, bw, bh, VZ_FRAME);
    int len = vertical ? bh : bw, tl = (int)lround(c->fpx * 0.3);
    vz_scale_ticks tk;
    /* labels need their line (vertical) or about 4 em (horizontal) between them */
    double gap = (vertical ? 1.2 * c->lh : 4.5 * c->fpx) / (len > 1 ? len : 1);
    scale_ticks(sc, gap, &tk);
    int mx = x + bw + c->lw, my = y + bh + c->lw;
    for (int i = 0; i < tk.n && !s; i++) {
        double t = (tk.v[i] - sc->vmin) / (sc->vmax - sc->vmin);
        int w = vz_text_len(c, tk.s[i], c->fpx);
        if (vertical) {
            int ty = y + (int)lround((1.0 - t) * (bh - 1));
            s = vz_add_rect(c, x + bw + c->lw, ty - c->lw / 2, tl, c->lw, VZ_FRAME);
            int tx = x + bw + c->lw + tl + c->pad / 2;
            if (!s)
                s = vz_add_text(c, tk.s[i], c->fpx, 0, tx, ty - c->lh / 2, VZ_A_START, VZ_T_CBAR,
                                VZ_BLACK);
            mx = vz_imax(mx, tx + w);
        } else {
            int tx = x + (int)lround(t * (bw - 1));
            s = vz_add_rect(c, tx - c->lw / 2, y + bh + c->lw, c->lw, tl, VZ_FRAME);
            /* ends stay inside the bar's span, the rest centred on their tick */
            int lx = i == 0 ? tx - c->lw : i == tk.n - 1 ? tx + c->lw - w : tx - w / 2;
            int ty = y + bh + c->lw + tl + c->pad / 4;
            if (!s) s = vz_add_text(c, tk.s[i], c->fpx, 0, lx, ty, VZ_A_MIDDLE, VZ_T_CBAR, VZ_BLACK);
            my = vz_imax(my, ty + c->lh);
            mx = vz_imax(mx, lx + w);
        }
    }
    if (!s && sc->label && sc->label[0]) {
        int w = vz_text_len(c, sc->label, c->fpx);
        if (vertical && vz_widest_word(c, sc->label, c->fpx) > bh) {
            /* a word longer than the bar (a short map's "probability"): the
               label level over the bar, as its title (the caller keeps the
               line above the bar free: VZ_CBAR_TITLE_H) */
            s = vz_add_text(c, sc->label, c->fpx, 0, x, y - VZ_CBAR_TITLE_H(c), VZ_A_START, VZ_T_AXIS, VZ_BLACK);
            mx = vz_imax(mx, x + w);
        } else if (vertical) { /* line k of the wrapped label k line heights right of the first */
            char line[256];
            size_t at = 0;
            int k = 0;
            while (!s && wrap_next(c, sc->label, &at, bh, line, sizeof line)) {
                int lw_k = vz_text_len(c, line, c->fpx);
                int ly = y + bh / 2 - lw_k / 2;
                if (ly < y) ly = y;
                s = vz_add_text(c, line, c->fpx, 90, mx + c->pad / 2 + k * c->lh, ly, VZ_A_MIDDLE,
                                VZ_T_AXIS, VZ_BLACK);
                my = vz_imax(my, ly + lw_k);
                k++;
            }
            mx += c->pad / 2 + k * c->lh;
        } else {
            s = vz_add_text(c, sc->label, c->fpx, 0, x + bw / 2 - w / 2, my + c->pad / 4, VZ_A_MIDDLE,
                            VZ_T_AXIS, VZ_BLACK);
            my += c->pad / 4 + c->lh;
            mx = vz_imax(mx, x + bw / 2 - w / 2 + w);
        }
    }
    *right = mx;
    *bottom = my;
    return s;
}

int vz_colorbar_min_len(const vz_ctx *c)
{
    /* vz_add_colorbar keeps vertical labels 1.2 lines apart: the middle tick
       half the bar from each end (0 of a symmetric scale) needs 2.4 lines */
    return (int)ceil(2.4 * c->lh) + 1;
}

/* Width a vertical colour bar's labels take right of the bar (ticks and the
 * quantity on `lines` lines; -1: level over the bar, bar_w px wide), for
 * planning a layout. */
int vz_colorbar_label_width(vz_ctx *c, const vz_scale *sc, int lines, int bar_w)
{
    vz_scale_ticks tk;
    scale_ticks(sc, 0.0, &tk);
    int w = 0;
    for (int i = 0; i < tk.n; i++) w = vz_imax(w, vz_text_len(c, tk.s[i], c->fpx));
    w += (int)lround(c->fpx * 0.3) + c->pad / 2 + c->lw;
    if (sc->label && sc->label[0] && lines >= 0) w += c->pad / 2 + vz_imax(lines, 1) * c->lh;
    if (sc->label && sc->label[0] && lines < 0) /* over the bar, from its left edge */
        w = vz_imax(w, vz_text_len(c, sc->label, c->fpx) - bar_w);
    return w;
}

int vz_colorbar_label_lines(vz_ctx *c, const vz_scale *sc, int len)
{
    if (!sc->label || !sc->label[0]) return 0;
    if (vz_widest_word(c, sc->label, c->fpx) > len) return -1;
    char line[256];
    size_t at = 0;
    int k = 0;
    while (wrap_next(c, sc->label, &at, len, line, sizeof line)) k++;
    return k;
}

int vz_grey_accents(const vz_ctx *c)
{
    return c->o.cmap == HS_VIZ_CMAP_GREYS || c->o.grey_accents;
}

const unsigned char *vz_mask_rgb(const vz_ctx *c)
{
    /* greys: white paper under the grey hatching (a grey figure stays grey;
       the hatching tells it from a value 0) */
    static const unsigned char PAPER[3] = {0xff, 0xff, 0xff};
    return vz_grey_accents(c) ? PAPER : HS_VIZ_MASK_RGB;
}

int vz_query_frame_on(const vz_ctx *c, size_t rows)
{
    return c->attention && c->o.highlight_row >= 0 && (size_t)c->o.highlight_row < rows;
}

hs_status vz_add_query_frame(vz_ctx *c, const vz_scale *sc, int x0, int y, int w, int h)
{
    /* a frame of twice the line width, red-orange (viridis has it nowhere);
       under greys black with a white inner line, seen on any grey */
    static const unsigned char HILITE[3] = {0xff, 0x45, 0x00}, BLACK[3] = {0, 0, 0};
    const int greys = sc->cmap == HS_VIZ_CMAP_GREYS || vz_grey_accents(c);
    const unsigned char *fc = greys ? BLACK : HILITE;
    const int lw = c->lw;
    hs_status s = vz_add_rect(c, x0 - 2 * lw, y - 2 * lw, w + 4 * lw, 2 * lw, fc);
    if (!s) s = vz_add_rect(c, x0 - 2 * lw, y + h, w + 4 * lw, 2 * lw, fc);
    if (!s) s = vz_add_rect(c, x0 - 2 * lw, y, 2 * lw, h, fc);
    if (!s) s = vz_add_rect(c, x0 + w, y, 2 * lw, h, fc);
    if (!s && greys && lw > 0) { /* the white line: the band's inner half */
        s = vz_add_rect(c, x0 - lw, y - lw, w + 2 * lw, lw, VZ_WHITE);
        if (!s) s = vz_add_rect(c, x0 - lw, y + h, w + 2 * lw, lw, VZ_WHITE);
        if (!s) s = vz_add_rect(c, x0 - lw, y, lw, h, VZ_WHITE);
        if (!s) s = vz_add_rect(c, x0 + w, y, lw, h, VZ_WHITE);
    }
    return s;
}

static const char *const LEGEND_TEXT[2] = {"masked", "query row"};

int vz_legend_width(vz_ctx *c, int masked, int query)
{
    int w = 0;
    for (int k = 0; k < 2; k++)
        if (k == 0 ? masked : query)
            w = vz_imax(w, c->lh + c->lw + c->pad / 2 + vz_text_len(c, LEGEND_TEXT[k], c->fpx));
    return w;
}

hs_status vz_add_legend(vz_ctx *c, const vz_scale *sc, int masked, int query, int x, int y, int *right,
                        int *bottom)
{
    const int sw = c->lh, lw = c->lw, tx = x + sw + lw + c->pad / 2;
    if (vz_begin_group(c, "legend")) return HS_ERR_NOMEM;
    hs_status s = HS_OK;
    *right = x, *bottom = y;
    for (int k = 0; k < 2 && !s; k++) {
        if (!(k == 0 ? masked : query)) continue;
        if (k == 0) { /* a masked cell */
            s = vz_add_rect_kind(c, x, y, sw, sw, vz_mask_rgb(c), VZ_R_MASKED, -1, -1, -1);
            if (!s) s = vz_add_frame(c, x, y, sw, sw, VZ_FRAME);
        } else { /* the query row's frame around an empty cell */
            s = vz_add_query_frame(c, sc, x + 2 * lw, y + 2 * lw, sw - 4 * lw, sw - 4 * lw);
        }
        if (!s) s = vz_add_text(c, LEGEND_TEXT[k], c->fpx, 0, tx, y, VZ_A_START, VZ_T_LABEL, VZ_BLACK);
        *right = vz_imax(*right, tx + vz_text_len(c, LEGEND_TEXT[k], c->fpx));
        *bottom = y + sw + lw;
        y += sw + c->pad;
    }
    return s;
}
