/*
 * viz/viz_layout.c -- the pure part of every figure: options, label
 * clean-up, colour scales, and laying a figure out into rectangles and text
 * items (pixel units at the figure's dpi). No file I/O here.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "viz/viz_internal.h"

/* ------------------------------------------------------------------------ */
/* UTF-8                                                                    */

size_t vz_utf8_len(const char *s)
{
    size_t n = 0, len = strlen(s), k;
    uint32_t cp;
    for (size_t i = 0; i < len; i += k ? k : 1, n++)
        k = hs_utf8_decode((const unsigned char *)s + i, len - i, &cp);
    return n;
}

/* The label as shown in a figure: control characters become '?', more than
 * HS_VIZ_MAX_LABEL code points become HS_VIZ_MAX_LABEL-1 plus "…". */
static char *display_label(const char *s)
{
    size_t n = strlen(s);
    char *d = malloc(n + 4);
    if (!d) return NULL;
    size_t cps = 0, total = vz_utf8_len(s), o = 0, i = 0;
    while (i < n) {
        if (total > HS_VIZ_MAX_LABEL && cps == HS_VIZ_MAX_LABEL - 1) {
            memcpy(d + o, "\xe2\x80\xa6", 3);
            o += 3;
            break;
        }
        uint32_t cp = '?';
        size_t k = hs_utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if (k == 0) k = 1; /* labels are checked valid first */
        if (cp < 0x20 || cp == 0x7f) d[o++] = '?';
        else {
            memcpy(d + o, s + i, k);
            o += k;
        }
        i += k;
        cps++;
    }
    d[o] = '\0';
    return d;
}

static hs_status check_labels(const char *const *labels, size_t n, const char *what,
                              hs_error *err)
{
    if (labels == NULL) return hs_fail(err, HS_ERR_INPUT, "%s: labels are NULL", what);
    for (size_t i = 0; i < n; i++) {
        if (labels[i] == NULL)
            return hs_fail(err, HS_ERR_INPUT, "%s: label %zu is NULL", what, i);
        if (!hs_utf8_valid(labels[i]))
            return hs_fail(err, HS_ERR_INPUT, "%s: label %zu is not valid UTF-8", what, i);
    }
    return HS_OK;
}

static hs_status check_title(const char *t, const char *what, hs_error *err)
{
    if (t != NULL && !hs_utf8_valid(t))
        return hs_fail(err, HS_ERR_INPUT, "%s is not valid UTF-8", what);
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* Options                                                                  */

void hs_viz_options_default(hs_viz_options *o)
{
    memset(o, 0, sizeof *o);
    o->dpi = 300.0;
    o->width_in = 0.0;
    o->font_pt = 8.0;
    o->font_min_pt = 6.0;
    o->cmap = HS_VIZ_CMAP_DEFAULT;
    o->range = HS_VIZ_RANGE_FIXED;
    o->vmin = 0.0;
    o->vmax = 1.0;
    o->annotate = 0;
    o->causal_mask = 1;
    o->highlight_row = -1;
    o->font_path = NULL;
    o->font = NULL;
}

static hs_status check_options(const hs_viz_options *o, hs_error *err)
{
    if (!(o->dpi >= 36.0 && o->dpi <= 1200.0))
        return hs_fail(err, HS_ERR_INPUT, "dpi %g is out of range (36..1200)", o->dpi);
    if (!(o->font_pt >= 4.0 && o->font_pt <= 36.0))
        return hs_fail(err, HS_ERR_INPUT, "font size %g pt is out of range (4..36)", o->font_pt);
    if ((o->note && !hs_utf8_valid(o->note)) || (o->value_label && !hs_utf8_valid(o->value_label)))
        return hs_fail(err, HS_ERR_INPUT, "figure note or value label is not valid UTF-8");
    if (!(o->font_min_pt >= 0.0 && o->font_min_pt <= 36.0))
        return hs_fail(err, HS_ERR_INPUT, "smallest font size %g pt is out of range (0..36)",
                       o->font_min_pt);
    if (!(o->width_in >= 0.0 && o->width_in <= HS_VIZ_GRID_MAX_IN))
        return hs_fail(err, HS_ERR_INPUT, "figure width %g in is out of range (0 = auto, up to %g)",
                       o->width_in, HS_VIZ_GRID_MAX_IN);
    if ((int)o->cmap < 0 || o->cmap > HS_VIZ_CMAP_DIVERGING)
        return hs_fail(err, HS_ERR_INPUT, "unknown colour map %d", (int)o->cmap);
    if (o->range != HS_VIZ_RANGE_FIXED && o->range != HS_VIZ_RANGE_AUTO)
        return hs_fail(err, HS_ERR_INPUT, "unknown value range mode %d", (int)o->range);
    if (o->range == HS_VIZ_RANGE_FIXED && !(isfinite(o->vmin) && isfinite(o->vmax)))
        return hs_fail(err, HS_ERR_INPUT, "fixed value range [%g, %g] is not finite", o->vmin,
                       o->vmax);
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* Figure building blocks                                                   */

typedef struct {
    double vmin, vmax;
    hs_viz_cmap cmap;
    const char *label; /* the quantity (and unit) the colour bar shows, or NULL */
} vz_scale;

static void scale_rgb(const vz_scale *s, double v, unsigned char rgb[3])
{
    double t = (v - s->vmin) / (s->vmax - s->vmin);
    hs_viz_cmap_rgb(s->cmap, t, rgb);
}

static int imax(int a, int b) { return a > b ? a : b; }
static int imin(int a, int b) { return a < b ? a : b; }

static const unsigned char BLACK[3] = {0, 0, 0};
static const unsigned char WHITE[3] = {255, 255, 255};
static const unsigned char FRAME[3] = {0x40, 0x40, 0x40};

static hs_status begin_group(vz_ctx *c, const char *id);

static hs_status ctx_init(vz_ctx *c, const hs_viz_options *opt, hs_error *err)
{
    memset(c, 0, sizeof *c);
    if (opt) c->o = *opt;
    else hs_viz_options_default(&c->o);
    hs_status s = check_options(&c->o, err);
    if (s != HS_OK) return s;
    hs_viz_figure *f = calloc(1, sizeof *f);
    if (!f) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    c->f = f;
    f->dpi = c->o.dpi;
    if (c->o.font) { /* opened once by the caller (hs_viz_font_open) */
        s = vz_font_share(&f->font, c->o.font, err);
        if (s == HS_OK && !(f->font_file = hs_strdup(vz_font_file(f->font))))
            s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    } else {
        s = vz_font_find(c->o.font_path, &f->font_file, err);
        if (s == HS_OK) s = vz_font_open(&f->font, f->font_file, err);
    }
    if (s != HS_OK) {
        hs_viz_figure_destroy(f);
        c->f = NULL;
        return s;
    }
    c->fpx = c->o.font_pt * c->o.dpi / 72.0;
    c->tpx = c->fpx * 1.2;
    /* values in cells and at bars: 0.8 x the labels, never under 6 pt (unless
       the labels themselves are) */
    c->apx = fmax(c->fpx * 0.8, fmin(c->fpx, 6.0 * c->o.dpi / 72.0));
    c->lh = vz_font_line(f->font, c->fpx);
    c->tlh = vz_font_line(f->font, c->tpx);
    c->alh = vz_font_line(f->font, c->apx);
    c->pad = (int)lround(c->fpx * 0.4);
    if (c->pad < 2) c->pad = 2;
    c->margin = (int)lround(c->fpx * 0.6);
    c->lw = (int)lround(c->o.dpi / 150.0);
    if (c->lw < 1) c->lw = 1;
    if (begin_group(c, "plot")) {
        hs_viz_figure_destroy(f);
        c->f = NULL;
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    return HS_OK;
}

/* Starts a new group (SVG <g id>) for the items added next. id is made a
 * valid, unique XML id: characters outside [A-Za-z0-9_-] become '_', a
 * leading digit gets "g", a repeat gets "-2", "-3", ... */
static hs_status begin_group(vz_ctx *c, const char *id)
{
    hs_viz_figure *f = c->f;
    hs_buf b = {0};
    if (!(id[0] >= 'A' && id[0] <= 'Z') && !(id[0] >= 'a' && id[0] <= 'z')) hs_buf_puts(&b, "g");
    for (const char *p = id; *p; p++) {
        char ch = *p;
        int ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
                 ch == '-' || ch == '_';
        hs_buf_append(&b, ok ? p : "_", 1);
    }
    size_t base = b.len;
    for (int k = 2;; k++) {
        int dup = 0;
        for (size_t i = 0; i < f->n_groups && !dup && b.s; i++) dup = strcmp(f->groups[i], b.s) == 0;
        if (!dup) break;
        b.len = base;
        hs_buf_printf(&b, "-%d", k);
    }
    char *name = hs_buf_take(&b);
    char **g = name ? realloc(f->groups, (f->n_groups + 1) * sizeof *g) : NULL;
    if (!g) {
        free(name);
        return HS_ERR_NOMEM;
    }
    f->groups = g;
    f->groups[f->n_groups] = name;
    c->group = (int)f->n_groups++;
    return HS_OK;
}

static hs_status add_rect(vz_ctx *c, int x, int y, int w, int h, const unsigned char rgb[3],
                          vz_rect_kind kind, int panel, int row, int col)
{
    hs_viz_figure *f = c->f;
    if (f->n_rects == f->cap_rects) {
        size_t nc = f->cap_rects ? f->cap_rects * 2 : 256;
        vz_rect *r = realloc(f->rects, nc * sizeof *r);
        if (!r) return HS_ERR_NOMEM;
        f->rects = r;
        f->cap_rects = nc;
    }
    vz_rect *r = &f->rects[f->n_rects++];
    memset(r, 0, sizeof *r);
    r->x = x; r->y = y; r->w = w; r->h = h;
    memcpy(r->rgb, rgb, 3);
    r->kind = kind; r->panel = panel; r->row = row; r->col = col;
    r->group = c->group;
    return HS_OK;
}

static int text_len(vz_ctx *c, const char *s, double px)
{
    return vz_font_width(c->f->font, s, px);
}

/* Adds text s with its box's top-left at (x, y). Returns HS_ERR_NOMEM or HS_OK. */
static hs_status add_text(vz_ctx *c, const char *s, double px, int rot, int x, int y,
                          vz_anchor anchor, vz_role role, const unsigned char rgb[3])
{
    hs_viz_figure *f = c->f;
    if (f->n_texts == f->cap_texts) {
        size_t nc = f->cap_texts ? f->cap_texts * 2 : 64;
        vz_text *t = realloc(f->texts, nc * sizeof *t);
        if (!t) return HS_ERR_NOMEM;
        f->texts = t;
        f->cap_texts = nc;
    }
    vz_run run;
    if (vz_font_shape(f->font, s, px, &run) != HS_OK) return HS_ERR_NOMEM;
    char *d = hs_strdup(s);
    if (!d) {
        vz_run_free(&run);
        return HS_ERR_NOMEM;
    }
    int len = (int)ceil(fmax(run.adv, run.ink_r) - 1e-9), line = vz_font_line(f->font, px);
    double asc = vz_font_ascender(f->font, px);
    vz_text *t = &f->texts[f->n_texts++];
    memset(t, 0, sizeof *t);
    t->s = d;
    t->run = run;
    t->group = c->group;
    t->x = x; t->y = y;
    t->w = rot == 90 ? line : len;
    t->h = rot == 90 ? len : line;
    /* ink box: along the text ink_l..ink_r from the pen start, across it
       ink_t above and ink_b below the baseline (asc below the box's top) */
    int a0 = (int)floor(run.ink_l), a1 = (int)ceil(run.ink_r);
    int c0 = (int)floor(asc - run.ink_t), c1 = (int)ceil(asc + run.ink_b);
    if (rot == 90) {
        t->ix = x + c0; t->iw = c1 - c0;
        t->iy = y + len - a1; t->ih = a1 - a0;
    } else {
        t->ix = x + a0; t->iw = a1 - a0;
        t->iy = y + c0; t->ih = c1 - c0;
    }
    t->rot = rot;
    t->px = px;
    t->anchor = anchor;
    t->role = role;
    memcpy(t->rgb, rgb, 3);
    return HS_OK;
}

/* Outline of [x, x+w) x [y, y+h), drawn outside it with line width lw. */
static hs_status add_frame(vz_ctx *c, int x, int y, int w, int h, const unsigned char rgb[3])
{
    int lw = c->lw;
    hs_status s = HS_OK;
    if (!s) s = add_rect(c, x - lw, y - lw, w + 2 * lw, lw, rgb, VZ_R_PLAIN, -1, -1, -1);
    if (!s) s = add_rect(c, x - lw, y + h, w + 2 * lw, lw, rgb, VZ_R_PLAIN, -1, -1, -1);
    if (!s) s = add_rect(c, x - lw, y, lw, h, rgb, VZ_R_PLAIN, -1, -1, -1);
    if (!s) s = add_rect(c, x + w, y, lw, h, rgb, VZ_R_PLAIN, -1, -1, -1);
    return s;
}

/* The multiples of step in [lo, hi] into t (vz_ticks, viz_internal.h; step,
 * decimals and sci set too). */
static void ticks_at(double lo, double hi, double step, vz_ticks *t)
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
static void nice_ticks(double lo, double hi, int target, vz_ticks *t)
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
    ticks_at(lo, hi, step, t);
}

/* Drops a "-" from a number that prints as zero ("-0.00" -> "0.00"). */
static void no_minus_zero(char *buf)
{
    const char *d = buf + 1;
    if (buf[0] == '-' && strspn(d, "0.") == strcspn(d, "e"))
        memmove(buf, buf + 1, strlen(buf));
}

/* Shortens an exponent: "1.5e-06" -> "1.5e-6", "2e+05" -> "2e5". */
static void short_exp(char *buf)
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

/* One tick label: fixed decimals, or scientific with enough digits to tell
 * neighbouring ticks apart. */
static void fmt_tick(char *buf, size_t n, double v, const vz_ticks *t)
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
        short_exp(buf);
    } else {
        snprintf(buf, n, "%.*f", t->decimals, v);
    }
    no_minus_zero(buf);
}

/* An end value of a scale: 3 significant digits, trailing zeros dropped. */
static void fmt_end(char *buf, size_t n, double v, int sci)
{
    if (sci && v != 0.0) {
        snprintf(buf, n, "%.2e", v);
        char *e = strchr(buf, 'e'), *z = e;
        while (z > buf && z[-1] == '0') z--;
        if (z > buf && z[-1] == '.') z--;
        memmove(z, e, strlen(e) + 1);
        short_exp(buf);
    } else {
        snprintf(buf, n, "%.3g", v);
        if (strchr(buf, 'e')) snprintf(buf, n, "%.*f", fabs(v) >= 1 ? 0 : 3, v);
    }
    no_minus_zero(buf);
}

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
    nice_ticks(sc->vmin, sc->vmax, target < 1 ? 1 : target > 5 ? 5 : target, &tk);
    double span = sc->vmax - sc->vmin;
    out->n = 0;
    out->v[out->n] = sc->vmin;
    fmt_end(out->s[out->n++], 32, sc->vmin, tk.sci);
    for (int i = 0; i < tk.n; i++) {
        if ((tk.v[i] - sc->vmin) / span < min_gap || (sc->vmax - tk.v[i]) / span < min_gap) continue;
        out->v[out->n] = tk.v[i];
        fmt_tick(out->s[out->n++], 32, tk.v[i], &tk);
    }
    out->v[out->n] = sc->vmax;
    fmt_end(out->s[out->n++], 32, sc->vmax, tk.sci);
}

/* Colour bar at (x, y), size bw x bh, in its own group "colorbar".
 * Vertical: top = vmax, tick labels on its right and the quantity
 * (sc->label, rotated) right of them. Horizontal: left = vmin, tick labels
 * below and the quantity under them. *right / *bottom get the extent. */
static hs_status add_colorbar(vz_ctx *c, const vz_scale *sc, int vertical, int x, int y, int bw,
                              int bh, int *right, int *bottom)
{
    if (begin_group(c, "colorbar")) return HS_ERR_NOMEM;
    hs_status s = add_rect(c, x, y, bw, bh, WHITE, VZ_R_CBAR, -1, -1, -1);
    if (!s) {
        c->f->rects[c->f->n_rects - 1].cmap = sc->cmap;
        c->f->rects[c->f->n_rects - 1].vertical = vertical;
    }
    if (!s) s = add_frame(c, x, y, bw, bh, FRAME);
    int len = vertical ? bh : bw, tl = (int)lround(c->fpx * 0.3);
    vz_scale_ticks tk;
    /* labels need their line (vertical) or about 4 em (horizontal) between them */
    double gap = (vertical ? 1.2 * c->lh : 4.5 * c->fpx) / (len > 1 ? len : 1);
    scale_ticks(sc, gap, &tk);
    int mx = x + bw + c->lw, my = y + bh + c->lw;
    for (int i = 0; i < tk.n && !s; i++) {
        double t = (tk.v[i] - sc->vmin) / (sc->vmax - sc->vmin);
        int w = text_len(c, tk.s[i], c->fpx);
        if (vertical) {
            int ty = y + (int)lround((1.0 - t) * (bh - 1));
            s = add_rect(c, x + bw + c->lw, ty - c->lw / 2, tl, c->lw, FRAME, VZ_R_PLAIN, -1, -1, -1);
            int tx = x + bw + c->lw + tl + c->pad / 2;
            if (!s) s = add_text(c, tk.s[i], c->fpx, 0, tx, ty - c->lh / 2, VZ_A_START, VZ_T_CBAR, BLACK);
            mx = imax(mx, tx + w);
        } else {
            int tx = x + (int)lround(t * (bw - 1));
            s = add_rect(c, tx - c->lw / 2, y + bh + c->lw, c->lw, tl, FRAME, VZ_R_PLAIN, -1, -1, -1);
            /* ends stay inside the bar's span, the rest centred on their tick */
            int lx = i == 0 ? tx - c->lw : i == tk.n - 1 ? tx + c->lw - w : tx - w / 2;
            int ty = y + bh + c->lw + tl + c->pad / 4;
            if (!s) s = add_text(c, tk.s[i], c->fpx, 0, lx, ty, VZ_A_MIDDLE, VZ_T_CBAR, BLACK);
            my = imax(my, ty + c->lh);
            mx = imax(mx, lx + w);
        }
    }
    if (!s && sc->label && sc->label[0]) {
        int w = text_len(c, sc->label, c->fpx);
        if (vertical) {
            int ly = y + bh / 2 - w / 2;
            if (ly < y) ly = y;
            s = add_text(c, sc->label, c->fpx, 90, mx + c->pad / 2, ly, VZ_A_MIDDLE, VZ_T_AXIS, BLACK);
            mx += c->pad / 2 + c->lh;
            my = imax(my, ly + w);
        } else {
            s = add_text(c, sc->label, c->fpx, 0, x + bw / 2 - w / 2, my + c->pad / 4, VZ_A_MIDDLE,
                         VZ_T_AXIS, BLACK);
            my += c->pad / 4 + c->lh;
            mx = imax(mx, x + bw / 2 - w / 2 + w);
        }
    }
    *right = mx;
    *bottom = my;
    return s;
}

/* Width a vertical colour bar's labels take right of the bar (ticks and the
 * quantity), for planning a layout. */
static int colorbar_label_width(vz_ctx *c, const vz_scale *sc)
{
    vz_scale_ticks tk;
    scale_ticks(sc, 0.0, &tk);
    int w = 0;
    for (int i = 0; i < tk.n; i++) w = imax(w, text_len(c, tk.s[i], c->fpx));
    w += (int)lround(c->fpx * 0.3) + c->pad / 2 + c->lw;
    if (sc->label && sc->label[0]) w += c->pad / 2 + c->lh;
    return w;
}

/* Masked-cell legend swatch at (x, y); *right and *bottom get its extent. */
static hs_status add_mask_legend(vz_ctx *c, int x, int y, int *right, int *bottom)
{
    int sw = c->lh;
    if (begin_group(c, "legend")) return HS_ERR_NOMEM;
    hs_status s = add_rect(c, x, y, sw, sw, HS_VIZ_MASK_RGB, VZ_R_MASKED, -1, -1, -1);
    if (!s) s = add_frame(c, x, y, sw, sw, FRAME);
    int tx = x + sw + c->lw + c->pad / 2;
    if (!s) s = add_text(c, "masked", c->fpx, 0, tx, y, VZ_A_START, VZ_T_LABEL, BLACK);
    *right = tx + text_len(c, "masked", c->fpx);
    *bottom = y + sw + c->lw;
    return s;
}

static int luminance_dark(const unsigned char rgb[3])
{
    return 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2] < 128.0;
}

/* One heatmap panel: R x C cells of size cell at (x0, y0). data [R, C];
 * masked(i, j) = (causal && j > i) || (mask && mask[i*C+j]). annotate: fmt for
 * cell values or NULL. */
static hs_status add_heatmap(vz_ctx *c, const float *data, const unsigned char *mask, size_t R,
                             size_t C, int x0, int y0, int cell, const vz_scale *sc, int causal,
                             int panel, const char *annot_fmt, const char *gid)
{
    hs_status s = begin_group(c, gid);
    for (size_t i = 0; i < R && !s; i++) {
        for (size_t j = 0; j < C && !s; j++) {
            int masked = (causal && j > i) || (mask && mask[i * C + j]);
            unsigned char rgb[3];
            double v = data[i * C + j];
            if (masked) memcpy(rgb, HS_VIZ_MASK_RGB, 3);
            else scale_rgb(sc, v, rgb);
            int x = x0 + (int)j * cell, y = y0 + (int)i * cell;
            s = add_rect(c, x, y, cell, cell, rgb, masked ? VZ_R_MASKED : VZ_R_CELL, panel, (int)i, (int)j);
            if (!s && annot_fmt && !masked) {
                char buf[32];
                snprintf(buf, sizeof buf, annot_fmt, v == 0.0 ? 0.0 : v);
                if (buf[0] == '-' && strspn(buf + 1, "0.") == strlen(buf + 1))
                    memmove(buf, buf + 1, strlen(buf)); /* no "-0" */
                int tw = text_len(c, buf, c->apx);
                s = add_text(c, buf, c->apx, 0, x + (cell - tw) / 2, y + (cell - c->alh) / 2,
                             VZ_A_MIDDLE, VZ_T_ANNOT, luminance_dark(rgb) ? WHITE : BLACK);
            }
        }
    }
    if (!s) s = add_frame(c, x0, y0, (int)C * cell, (int)R * cell, FRAME);
    if (!s && c->attention && c->o.highlight_row >= 0 && (size_t)c->o.highlight_row < R) {
        /* the query row: a frame of twice the line width, red-orange (no colour map has it) */
        static const unsigned char HILITE[3] = {0xff, 0x45, 0x00};
        int lw = c->lw, y = y0 + c->o.highlight_row * cell, w = (int)C * cell;
        s = add_rect(c, x0 - 2 * lw, y - 2 * lw, w + 4 * lw, 2 * lw, HILITE, VZ_R_PLAIN, -1, -1, -1);
        if (!s) s = add_rect(c, x0 - 2 * lw, y + cell, w + 4 * lw, 2 * lw, HILITE, VZ_R_PLAIN, -1, -1, -1);
        if (!s) s = add_rect(c, x0 - 2 * lw, y, 2 * lw, cell, HILITE, VZ_R_PLAIN, -1, -1, -1);
        if (!s) s = add_rect(c, x0 + w, y, 2 * lw, cell, HILITE, VZ_R_PLAIN, -1, -1, -1);
    }
    return s;
}

/* Widest display label (px at the label size); fills shown[] (owned strings). */
static hs_status prepare_labels(vz_ctx *c, const char *const *in, size_t n, char **shown,
                                int *maxw)
{
    *maxw = 0;
    for (size_t i = 0; i < n; i++) {
        shown[i] = display_label(in[i]);
        if (!shown[i]) return HS_ERR_NOMEM;
        int w = text_len(c, shown[i], c->fpx);
        if (w > *maxw) *maxw = w;
    }
    return HS_OK;
}

static void free_labels(char **shown, size_t n)
{
    if (!shown) return;
    for (size_t i = 0; i < n; i++) free(shown[i]);
    free(shown);
}


/* s broken at spaces into lines no wider than maxw px at size px (a word
 * wider than that stays whole on its line). Calls fn(arg, line, width) per
 * line; returns the number of lines, or -1 on OOM. */
static int wrap_lines(vz_ctx *c, const char *s, double px, int maxw,
                      hs_status (*fn)(vz_ctx *, void *, const char *, int), void *arg)
{
    hs_buf line = {0}, cand = {0};
    int n = 0;
    const char *p = s;
    while (*p) {
        while (*p == ' ') p++;
        const char *e = p;
        while (*e && *e != ' ') e++;
        if (e == p) break;
        cand.len = 0;
        if (line.len) hs_buf_printf(&cand, "%s %.*s", line.s, (int)(e - p), p);
        else hs_buf_printf(&cand, "%.*s", (int)(e - p), p);
        if (cand.oom) break;
        if (line.len && text_len(c, cand.s, px) > maxw) {
            if (fn && fn(c, arg, line.s, text_len(c, line.s, px))) break;
            n++;
            line.len = 0;
            hs_buf_printf(&line, "%.*s", (int)(e - p), p);
        } else {
            line.len = 0;
            hs_buf_puts(&line, cand.s);
        }
        p = e;
    }
    int ok = !line.oom && !cand.oom && *p == '\0';
    if (ok && line.len) {
        if (fn && fn(c, arg, line.s, text_len(c, line.s, px))) ok = 0;
        else n++;
    }
    hs_buf_free(&line);
    hs_buf_free(&cand);
    return ok ? n : -1;
}

typedef struct {
    int W, y, widest;
    double px;
    vz_role role;
    const unsigned char *rgb;
    int line_h;
} vz_title_pen;

static hs_status title_line(vz_ctx *c, void *arg, const char *line, int w)
{
    vz_title_pen *t = arg;
    hs_status s = HS_OK;
    if (t->W > 0)
        s = add_text(c, line, t->px, 0, (t->W - w) / 2, t->y, VZ_A_MIDDLE, t->role, t->rgb);
    t->y += t->line_h;
    t->widest = imax(t->widest, w);
    return s;
}

static const unsigned char NOTE_RGB[3] = {0xb0, 0x10, 0x10};

/* Lays out (W > 0: adds) the title block: the title (1.2x, wrapped to the
 * target width) and the note (dark red, wrapped). Returns its height; *w gets
 * its widest line. */
static int title_lines(vz_ctx *c, const char *title, int W, int *w, hs_status *st)
{
    int maxw = (int)lround(c->o.width_in * c->o.dpi) - 2 * c->margin;
    vz_title_pen t = {W, c->margin, 0, c->tpx, VZ_T_TITLE, BLACK, c->tlh};
    *st = HS_OK;
    if (title && title[0] && wrap_lines(c, title, c->tpx, maxw, title_line, &t) < 0)
        *st = HS_ERR_NOMEM;
    if (t.y > c->margin) t.y += c->pad;
    int y_note = t.y;
    t.px = c->fpx;
    t.role = VZ_T_LABEL;
    t.rgb = NOTE_RGB;
    t.line_h = c->lh;
    if (!*st && c->o.note && c->o.note[0] && wrap_lines(c, c->o.note, c->fpx, maxw, title_line, &t) < 0)
        *st = HS_ERR_NOMEM;
    if (t.y > y_note) t.y += c->pad;
    *w = t.widest;
    return t.y - c->margin;
}

/* The title block, centred over a canvas W px wide, in its own group. */
static hs_status add_title(vz_ctx *c, const char *title, int W)
{
    hs_status s = begin_group(c, "title");
    int w;
    if (!s) title_lines(c, title, W, &w, &s);
    if (!s && title && title[0] && !c->f->title && !(c->f->title = hs_strdup(title)))
        s = HS_ERR_NOMEM;
    return s;
}

/* Height (px) of the title block and its widest line. */
static int title_block(vz_ctx *c, const char *title, int *w)
{
    hs_status st;
    return title_lines(c, title, 0, w, &st);
}

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

/* ------------------------------------------------------------------------ */
/* Width: the promise. A layout plans its cells for the target width; when
 * its labels need more than that it lays out at their minimum and says so
 * (cramped); the driver (fit_width) then tries smaller fonts down to
 * font_min_pt, and otherwise refuses with the width that fits. */

typedef struct vz_fit_s {
    int extra;   /* in: px to take off the planned panel width (a retry's correction) */
    int cramped; /* out: cells or plot at their minimum: the labels need this width */
    int nofit;   /* out: the layout is wider than the target */
    int W;       /* out: the width the layout took, px */
} vz_fit;

/* Moves everything laid out so far dx px right. */
static void shift_items(vz_ctx *c, int dx)
{
    for (size_t i = 0; i < c->f->n_rects; i++) c->f->rects[i].x += dx;
    for (size_t i = 0; i < c->f->n_texts; i++) {
        c->f->texts[i].x += dx;
        c->f->texts[i].ix += dx;
    }
}

/* Finishes a figure: holds it to the target width (centred when narrower;
 * refused through fit->nofit when wider), checks the canvas cap, hands it out. */
static hs_status finish(vz_ctx *c, int W, int H, hs_viz_figure **out, hs_error *err)
{
    int target = (int)lround(c->o.width_in * c->o.dpi);
    if (c->fit) c->fit->W = W;
    if (c->o.width_in > 0 && W > target) {
        if (c->fit) c->fit->nofit = 1;
        hs_viz_figure_destroy(c->f);
        c->f = NULL;
        return hs_fail(err, HS_ERR_INPUT, "figure needs %.2f in, wider than %.2f in",
                       W / c->o.dpi, c->o.width_in);
    }
    if (c->o.width_in > 0 && W < target) {
        shift_items(c, (target - W) / 2);
        W = target;
    }
    if (W > HS_VIZ_MAX_PX || H > HS_VIZ_MAX_PX) {
        hs_viz_figure_destroy(c->f);
        c->f = NULL;
        return hs_fail(err, HS_ERR_INPUT,
                       "figure would be %d x %d px, over the %d px cap; "
                       "HINT: lower the dpi or the font size", W, H, HS_VIZ_MAX_PX);
    }
    c->f->width = W;
    c->f->height = H;
    *out = c->f;
    c->f = NULL;
    return HS_OK;
}

/* Lays a figure out: validated arguments in args, options o (width_in > 0,
 * font_pt set), the fit record; ends in finish(). */
typedef hs_status (*vz_build)(hs_viz_figure **out, const void *args, const hs_viz_options *o,
                              vz_fit *fit, hs_error *err);

/* One font size: up to 4 layouts, each taking the previous one's excess off
 * its plan. HS_OK, or fit->nofit with fit->W the width the labels need. */
static hs_status try_font(hs_viz_figure **out, vz_build build, const void *args,
                          const hs_viz_options *o, vz_fit *fit, hs_error *err)
{
    int target = (int)lround(o->width_in * o->dpi);
    memset(fit, 0, sizeof *fit);
    for (int k = 0; k < 4; k++) {
        int extra = fit->extra;
        memset(fit, 0, sizeof *fit);
        fit->extra = extra;
        hs_status s = build(out, args, o, fit, err);
        if (s == HS_OK || !fit->nofit) return s;
        if (fit->cramped) return s;
        fit->extra += fit->W - target;
    }
    return HS_ERR_INPUT;
}

static hs_status fit_width(hs_viz_figure **out, vz_build build, const void *args,
                           const hs_viz_options *opt, double auto_in, const char *what,
                           hs_error *err)
{
    *out = NULL;
    hs_viz_options o;
    if (opt) o = *opt;
    else hs_viz_options_default(&o);
    hs_status s = check_options(&o, err);
    if (s) return s;
    char *font = NULL;
    if (!o.font) { /* resolved once for every layout tried */
        s = vz_font_find(o.font_path, &font, err);
        if (s) return s;
        o.font_path = font;
    }
    double fmax = o.font_pt;
    double fmin = o.font_min_pt > 0 && o.font_min_pt < fmax ? o.font_min_pt : fmax;
    int auto_w = !(o.width_in > 0);
    o.width_in = auto_w ? auto_in : o.width_in;
    vz_fit fit;
    int need_min = 0; /* px the labels need at the smallest font tried */
    int target = (int)lround(o.width_in * o.dpi);
    for (double f = fmax; f >= fmin - 1e-9;) {
        o.font_pt = f;
        s = try_font(out, build, args, &o, &fit, err);
        if (s == HS_OK || !fit.nofit) goto done;
        need_min = fit.W;
        /* a figure's width scales about with its font: skip the sizes that
           cannot come close (a large grid would be laid out five times) */
        if (f > fmin && fit.W * (fmin / f) > 1.15 * target) f = fmin;
        else f -= 0.5;
    }
    if (auto_w) {
        /* no width asked: grow to what the labels need at the font size */
        o.font_pt = fmax;
        memset(&fit, 0, sizeof fit);
        double w_in = need_min / o.dpi;
        /* a layout's width moves with its plan (tick counts, rounding), so
           each retry adds a little slack: it converges, centred */
        for (int k = 0; k < 8; k++) {
            o.width_in = w_in;
            if (o.width_in > HS_VIZ_GRID_MAX_IN) break;
            s = try_font(out, build, args, &o, &fit, err);
            if (s == HS_OK) (*out)->grown_from_in = auto_in;
            if (s == HS_OK || !fit.nofit) goto done;
            w_in = fit.W / o.dpi + 0.02 * (k + 1);
        }
        double need_in = ceil(imax(need_min, fit.W) / o.dpi * 100.0 - 1e-9) / 100.0;
        if (o.width_in > HS_VIZ_GRID_MAX_IN)
            s = hs_fail(err, HS_ERR_INPUT,
                        "%s needs %.2f in to show every label at %g pt, over the %g in cap; "
                        "HINT: fewer tokens or heads, or --positions A:B", what, need_in, fmax,
                        HS_VIZ_GRID_MAX_IN);
        else
            s = hs_fail(err, HS_ERR_INPUT,
                        "%s needs %.2f in to show every label at %g pt, wider than its default "
                        "%.2f in; HINT: --width %.2f", what, need_in, fmax, auto_in, need_in);
        goto done;
    }
    /* the largest font size that fits the width asked, for the hint */
    double fits = 0;
    for (double f = fmin - 0.5; f >= 4.0 - 1e-9 && fits == 0; f -= 0.5) {
        o.font_pt = f;
        hs_error e2 = {0};
        hs_viz_figure *probe = NULL;
        if (try_font(&probe, build, args, &o, &fit, &e2) == HS_OK) fits = f;
        hs_viz_figure_destroy(probe);
    }
    char hint[96] = "";
    if (fits > 0) snprintf(hint, sizeof hint, " or --font-size %g", fits);
    double need_in = ceil(need_min / o.dpi * 100.0 - 1e-9) / 100.0; /* rounded up: it fits */
    s = hs_fail(err, HS_ERR_INPUT,
                "%s cannot show every label in %.2f in at %g pt: it needs %.2f in; "
                "HINT: --width %.2f%s", what, opt->width_in, fmin, need_in, need_in, hint);
done:
    free(font);
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
    if (c->o.range == HS_VIZ_RANGE_AUTO) {
        sc->vmin = lo;
        sc->vmax = hi;
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

/* Annotation cell width: widest of the strings annot_fmt gives over data. */
static int annot_width(vz_ctx *c, const float *d, size_t n, const char *fmt)
{
    int w = 0;
    char buf[32];
    for (size_t i = 0; i < n; i++) {
        snprintf(buf, sizeof buf, fmt, (double)d[i]);
        int tw = text_len(c, buf, c->apx);
        if (tw > w) w = tw;
    }
    return w;
}

/* The pitch (px) labels need side by side without their ink touching: the
 * tallest ink of any of them (ascender to descender) plus 0.15 em. */
static int label_pitch(vz_ctx *c, char *const *shown, size_t n)
{
    double ink = 0;
    for (size_t i = 0; i < n; i++) {
        vz_run r;
        if (vz_font_shape(c->f->font, shown[i], c->fpx, &r) != HS_OK) return c->lh;
        ink = fmax(ink, r.ink_t + r.ink_b);
        vz_run_free(&r);
    }
    return (int)ceil(ink + 0.15 * c->fpx);
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
} vz_heat_spec;

static hs_status heat_figure(vz_ctx *c, const vz_heat_spec *hs, const vz_scale *sc,
                             hs_viz_figure **out, hs_error *err)
{
    hs_status s = HS_OK;
    char **rl = calloc(hs->R, sizeof *rl), **cl = calloc(hs->C, sizeof *cl);
    if (!rl || !cl) { s = HS_ERR_NOMEM; goto done; }
    int rmax, cmax;
    s = prepare_labels(c, hs->row_labels, hs->R, rl, &rmax);
    if (!s) s = prepare_labels(c, hs->col_labels, hs->C, cl, &cmax);
    if (s) goto done;

    int m = c->margin, pad = c->pad, lh = c->lh, lw = c->lw;
    size_t nmax = hs->R > hs->C ? hs->R : hs->C;
    int cell_min = imax(label_pitch(c, rl, hs->R), label_pitch(c, cl, hs->C));
    if (hs->annot_fmt)
        cell_min = imax(cell_min, annot_width(c, hs->data, hs->R * hs->C, hs->annot_fmt) + pad);
    int title_w, title_h = title_block(c, hs->title, &title_w);
    int ylab_w = hs->ylabel && hs->ylabel[0] ? text_len(c, hs->ylabel, c->fpx) : 0;
    int xlab_w = hs->xlabel && hs->xlabel[0] ? text_len(c, hs->xlabel, c->fpx) : 0;
    int top = m + title_h + lh / 2;
    int left = m + (ylab_w ? lh + pad : 0) + rmax + pad + lw;
    int bw = imax(lh, (int)lround(0.12 * c->o.dpi));
    int cgap = 2 * pad;
    int any_mask = 0;
    for (size_t i = 0; hs->mask && i < hs->R * hs->C; i++) any_mask |= hs->mask[i] != 0;
    int legend = (hs->causal && hs->R > 1 && hs->C > 1) || any_mask;
    int legend_w = legend ? lh + lw + pad / 2 + text_len(c, "masked", c->fpx) : 0;
    int rest = left + lw + cgap + imax(bw + lw + colorbar_label_width(c, sc), legend_w) + m;
    int avail = (int)lround(c->o.width_in * c->o.dpi) - c->fit->extra - rest;
    int cell = avail / (int)nmax;
    if (cell < cell_min) {
        cell = cell_min;
        c->fit->cramped = 1;
    }
    if (title_w + 2 * m > (int)lround(c->o.width_in * c->o.dpi)) c->fit->cramped = 1;
    int PW = (int)hs->C * cell, PH = (int)hs->R * cell;

    s = add_heatmap(c, hs->data, hs->mask, hs->R, hs->C, left, top, cell, sc, hs->causal, 0,
                    hs->annot_fmt, "panel");
    /* row labels, right-aligned against the map */
    for (size_t i = 0; i < hs->R && !s; i++) {
        int w = text_len(c, rl[i], c->fpx);
        s = add_text(c, rl[i], c->fpx, 0, left - lw - pad - w,
                     top + (int)i * cell + (cell - lh) / 2, VZ_A_END, VZ_T_YTICK, BLACK);
    }
    /* column labels, rotated, their ends against the map */
    int ybelow = top + PH + lw + pad;
    for (size_t j = 0; j < hs->C && !s; j++)
        s = add_text(c, cl[j], c->fpx, 90, left + (int)j * cell + (cell - lh) / 2, ybelow,
                     VZ_A_END, VZ_T_XTICK, BLACK);
    int bottom = ybelow + cmax;
    if (!s) s = begin_group(c, "axes");
    if (!s && xlab_w) {
        s = add_text(c, hs->xlabel, c->fpx, 0, left + PW / 2 - xlab_w / 2, bottom + pad,
                     VZ_A_MIDDLE, VZ_T_AXIS, BLACK);
        bottom += pad + lh;
    }
    if (!s && ylab_w) {
        int yy = top + PH / 2 - ylab_w / 2;
        if (yy < top) yy = top;
        s = add_text(c, hs->ylabel, c->fpx, 90, m, yy, VZ_A_MIDDLE, VZ_T_AXIS, BLACK);
        bottom = imax(bottom, yy + ylab_w);
    }
    int right = left + PW + lw;
    int cbx = left + PW + lw + cgap;
    /* the bar is at least as tall as its quantity label, which runs along it */
    int cbh = imax(imax(PH, (int)lround(0.8 * c->o.dpi)), sc->label ? text_len(c, sc->label, c->fpx) : 0), cbb = 0;
    if (!s) s = add_colorbar(c, sc, 1, cbx, top, bw, cbh, &right, &cbb);
    bottom = imax(bottom, cbb);
    if (!s && legend) {
        int lr, lb;
        /* below the colour bar's lowest tick label */
        s = add_mask_legend(c, cbx, top + cbh + lh / 2 + pad, &lr, &lb);
        right = imax(right, lr);
        bottom = imax(bottom, lb);
    }
    bottom = imax(bottom, top + cbh + lh / 2 + lh % 2);
    int W = imax(right + m, title_w + 2 * m);
    shift_items(c, (W - right - m) / 2); /* the body centred under a wider title */
    if (!s && title_h) s = add_title(c, hs->title, W);
    int H = bottom + m;
    if (s) goto done;
    s = finish(c, W, H, out, err);
done:
    free_labels(rl, hs->R);
    free_labels(cl, hs->C);
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
    hs_status s = ctx_init(&c, o, err);
    if (s) return s;
    c.fit = fit;
    c.attention = 1;
    vz_scale sc;
    s = attention_scale(&c, a->pattern, 1, a->T, &sc, err);
    if (!s) {
        vz_heat_spec hs = {a->pattern, a->T, a->T, a->tokens, a->tokens, a->title,
                           "source (key)", "destination (query)", c.o.causal_mask,
                           c.o.annotate ? "%.2f" : NULL, NULL};
        s = heat_figure(&c, &hs, &sc, out, err);
    }
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
    hs_status s = check_labels(tokens, T, "tokens", err);
    if (!s) s = check_title(title, "title", err);
    if (s) return s;
    vz_attn_args a = {pattern, T, tokens, title};
    return fit_width(out, build_attention, &a, opt, HS_VIZ_COLUMN_IN, "attention pattern", err);
}

typedef struct {
    const float *m;
    const unsigned char *mask;
    size_t R, C;
    const char *const *row_labels, *const *col_labels;
    const char *title, *xlabel, *ylabel;
    int seq; /* 0: signed (diverging, symmetric range); 1: non-negative (sequential, from 0) */
} vz_matrix_args;

static hs_status build_matrix(hs_viz_figure **out, const void *args, const hs_viz_options *o,
                              vz_fit *fit, hs_error *err)
{
    const vz_matrix_args *a = args;
    size_t R = a->R, C = a->C;
    const float *m = a->m;
    const unsigned char *mask = a->mask;
    vz_ctx c;
    hs_status s = ctx_init(&c, o, err);
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
            sc.vmax = amax > 0 ? amax : 1.0;
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
        double lim = o->range == HS_VIZ_RANGE_AUTO ? amax : o->vmax;
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
                       o->annotate ? (a->seq ? "%.2f" : "%.2g") : NULL, mask};
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
    hs_status s = check_labels(a->row_labels, a->R, "row labels", err);
    if (!s) s = check_labels(a->col_labels, a->C, "column labels", err);
    if (!s) s = check_title(a->title, "title", err);
    if (!s) s = check_title(a->xlabel, "x label", err);
    if (!s) s = check_title(a->ylabel, "y label", err);
    if (s) return s;
    hs_viz_options o;
    if (opt) o = *opt;
    else {
        hs_viz_options_default(&o);
        o.range = HS_VIZ_RANGE_AUTO;
    }
    return fit_width(out, build_matrix, a, &o, HS_VIZ_COLUMN_IN, a->title ? a->title : "matrix",
                     err);
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
    vz_matrix_args a = {m, mask, R, C, row_labels, col_labels, title, xlabel, ylabel, 0};
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
    vz_matrix_args a = {m, mask, R, C, row_labels, col_labels, title, xlabel, ylabel, 1};
    return matrix_figure(out, &a, opt, err);
}

/* ------------------------------------------------------------------------ */
/* Grid                                                                     */

typedef struct {
    const float *patterns;
    size_t L, H, T;
    const char *const *tokens, *const *row_headers, *const *col_headers;
    const char *title;
} vz_grid_args;

static hs_status build_grid(hs_viz_figure **out, const void *args, const hs_viz_options *opt,
                            vz_fit *fit, hs_error *err)
{
    const vz_grid_args *a = args;
    const float *patterns = a->patterns;
    size_t L = a->L, H = a->H, T = a->T;
    const char *const *row_headers = a->row_headers, *const *col_headers = a->col_headers;
    const char *title = a->title;
    vz_ctx c;
    hs_status s = ctx_init(&c, opt, err);
    if (s) return s;
    c.fit = fit;
    c.attention = 1;
    vz_scale sc;
    s = attention_scale(&c, patterns, L * H, T, &sc, err);
    if (s) { hs_viz_figure_destroy(c.f); return s; }

    char **tl = calloc(T, sizeof *tl);
    int tmax = 0;
    if (!tl) { s = HS_ERR_NOMEM; goto done; }
    s = prepare_labels(&c, a->tokens, T, tl, &tmax);
    if (s) goto done;

    int m = c.margin, pad = c.pad, lh = c.lh, lw = c.lw;
    double dpi = c.o.dpi;
    int pitch = label_pitch(&c, tl, T);
    int gap = imax(2 * pad, (int)lround(0.05 * dpi)) + 2 * lw;
    int title_w, title_h = title_block(&c, title, &title_w);
    const char *ylab = "destination (query)", *xlab = "source (key)";
    int ylab_w = text_len(&c, ylab, c.fpx), xlab_w = text_len(&c, xlab, c.fpx);
    char hb[32];
    int rh_w = 0;
    for (size_t l = 0; l < L; l++) {
        snprintf(hb, sizeof hb, "L%zu", l);
        rh_w = imax(rh_w, text_len(&c, row_headers ? row_headers[l] : hb, c.fpx));
    }
    /* a clear gap between the L<l> row headers and the longest token label,
     * so "L0" does not read as part of a token ("L0 because") */
    int hgap = rh_w ? imax(2 * pad, lh) : 0;
    int left = m + lh + pad + rh_w + hgap + tmax + pad + lw;
    int top = m + title_h + lh + pad;
    int target = (int)lround(c.o.width_in * dpi) - fit->extra;
    int cell_min = pitch;
    int annot = c.o.annotate;
    if (annot) cell_min = imax(cell_min, annot_width(&c, patterns, L * H * T * T, "%.2f") + pad);
    int availW = target - left - lw - m - (int)(H - 1) * gap;
    int cell = availW / (int)(H * T);
    /* panels no taller than 2 in: a grid of a few tokens stays a grid */
    cell = imin(cell, imax(cell_min, (int)(2.0 * dpi / (double)T)));
    if (cell < cell_min) {
        cell = cell_min;
        fit->cramped = 1;
    }
    if (title_w + 2 * m > (int)lround(c.o.width_in * dpi)) fit->cramped = 1; /* the canvas, not the retry plan */
    int P = (int)T * cell;
    char gidb[64];
    for (size_t l = 0; l < L && !s; l++)
        for (size_t h = 0; h < H && !s; h++)
            s = add_heatmap(&c, patterns + (l * H + h) * T * T, NULL, T, T,
                            left + (int)h * (P + gap), top + (int)l * (P + gap), cell, &sc,
                            c.o.causal_mask, (int)(l * H + h), annot ? "%.2f" : NULL,
                            panel_id(gidb, sizeof gidb, row_headers, col_headers, l, h));
    if (!s) s = begin_group(&c, "labels");
    int gridW = (int)H * P + (int)(H - 1) * gap, gridH = (int)L * P + (int)(L - 1) * gap;
    /* column headers */
    for (size_t h = 0; h < H && !s; h++) {
        snprintf(hb, sizeof hb, "H%zu", h);
        const char *ht = col_headers ? col_headers[h] : hb;
        if (!ht[0]) continue;
        int w = text_len(&c, ht, c.fpx);
        s = add_text(&c, ht, c.fpx, 0, left + (int)h * (P + gap) + P / 2 - w / 2,
                     top - lw - pad / 2 - lh, VZ_A_MIDDLE, VZ_T_HEADER, BLACK);
    }
    /* row headers and y tick labels (left column) */
    for (size_t l = 0; l < L && !s; l++) {
        int py = top + (int)l * (P + gap);
        snprintf(hb, sizeof hb, "L%zu", l);
        const char *rt = row_headers ? row_headers[l] : hb;
        int w = text_len(&c, rt, c.fpx);
        if (rt[0])
            s = add_text(&c, rt, c.fpx, 0, m + lh + pad + rh_w - w, py + P / 2 - lh / 2,
                         VZ_A_END, VZ_T_HEADER, BLACK);
        for (size_t i = 0; i < T && !s; i++) {
            int tw = text_len(&c, tl[i], c.fpx);
            s = add_text(&c, tl[i], c.fpx, 0, left - lw - pad - tw,
                         py + (int)i * cell + (cell - lh) / 2, VZ_A_END, VZ_T_YTICK, BLACK);
        }
    }
    /* x tick labels under every panel of the bottom row */
    int ybelow = top + gridH + lw + pad;
    for (size_t h = 0; h < H && !s; h++)
        for (size_t j = 0; j < T && !s; j++)
            s = add_text(&c, tl[j], c.fpx, 90,
                         left + (int)h * (P + gap) + (int)j * cell + (cell - lh) / 2, ybelow,
                         VZ_A_END, VZ_T_XTICK, BLACK);
    int bottom = ybelow + tmax;
    if (!s) s = begin_group(&c, "axes");
    if (!s) s = add_text(&c, xlab, c.fpx, 0, left + gridW / 2 - xlab_w / 2, bottom + pad,
                         VZ_A_MIDDLE, VZ_T_AXIS, BLACK);
    bottom += pad + lh;
    int yy = top + gridH / 2 - ylab_w / 2;
    if (yy < top) yy = top;
    if (!s) s = add_text(&c, ylab, c.fpx, 90, m, yy, VZ_A_MIDDLE, VZ_T_AXIS, BLACK);
    bottom = imax(bottom, yy + ylab_w);
    /* the colour bar lies under the grid (a page's width goes to the panels),
       the masked swatch right of it */
    int right = left + gridW + lw;
    int bh = imax((int)lround(0.6 * lh), (int)lround(0.06 * dpi));
    int legend = c.o.causal_mask && T > 1;
    int legend_w = legend ? lh + lw + pad / 2 + text_len(&c, "masked", c.fpx) + 3 * pad : 0;
    /* the strip under the grid: the grid's width or the rest of the target's */
    int strip = imax(gridW, target - left - m);
    int cbw = imax(imin((int)lround(2.5 * dpi), strip - legend_w), (int)lround(1.0 * dpi));
    cbw = imax(cbw, sc.label ? text_len(&c, sc.label, c.fpx) : 0); /* as wide as its quantity label */
    int cbx = left + imax(0, (imin(strip, imax(gridW, cbw + legend_w)) - cbw - legend_w) / 2);
    int cby = bottom + 2 * pad, cbr = 0, cbb = 0;
    if (!s) s = add_colorbar(&c, &sc, 0, cbx, cby, cbw, bh, &cbr, &cbb);
    right = imax(right, cbr);
    bottom = imax(bottom, cbb);
    if (!s && legend) {
        int lr, lb;
        s = add_mask_legend(&c, cbx + cbw + 3 * pad, cby + bh / 2 - lh / 2, &lr, &lb);
        right = imax(right, lr);
        bottom = imax(bottom, lb);
    }
    int W = imax(right + m, title_w + 2 * m);
    shift_items(&c, (W - right - m) / 2); /* the body centred under a wider title */
    if (!s && title_h) s = add_title(&c, title, W);
    if (s) goto done;
    s = finish(&c, W, bottom + m, out, err);
done:
    free_labels(tl, T);
    hs_viz_figure_destroy(c.f);
    if (s == HS_ERR_NOMEM) hs_fail(err, s, "out of memory laying out a figure");
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
    hs_status s = check_labels(tokens, T, "tokens", err);
    if (!s) s = check_title(title, "title", err);
    if (!s && row_headers) s = check_labels(row_headers, L, "row headers", err);
    if (!s && col_headers) s = check_labels(col_headers, H, "column headers", err);
    if (s) return s;
    vz_grid_args a = {patterns, L, H, T, tokens, row_headers, col_headers, title};
    return fit_width(out, build_grid, &a, opt, L * H > 1 ? HS_VIZ_PAGE_IN : HS_VIZ_COLUMN_IN,
                     "attention grid", err);
}

/* ------------------------------------------------------------------------ */
/* Bars                                                                     */

/* A bar's value label: fixed decimals (dec), or scientific when sci. */
static void fmt_bar(char *buf, size_t n, double v, int dec, int sci)
{
    if (sci && v == 0.0) {
        snprintf(buf, n, "0");
    } else if (sci) {
        snprintf(buf, n, "%+.2e", v);
        short_exp(buf);
    } else {
        snprintf(buf, n, "%+.*f", dec, v);
    }
}

typedef struct {
    const float *values;
    size_t N;
    const char *const *labels;
    const char *title, *xlabel;
    int explicit_range; /* opt was given: a FIXED range widens the axis */
} vz_bars_args;

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
    hs_status s = ctx_init(&c, opt, err);
    if (s) return s;
    c.fit = fit;
    if (c.o.range == HS_VIZ_RANGE_FIXED && a->explicit_range && c.o.vmax > c.o.vmin) {
        /* a fixed range widens (never clips) the axis */
        if (c.o.vmin < lo) lo = c.o.vmin;
        if (c.o.vmax > hi) hi = c.o.vmax;
    }
    if (hi == lo) hi = lo + (lo != 0 ? fabs(lo) : 1.0);

    char **bl = calloc(N, sizeof *bl);
    int lmax = 0;
    if (!bl) { s = HS_ERR_NOMEM; goto done; }
    s = prepare_labels(&c, a->labels, N, bl, &lmax);
    if (s) goto done;
    int m = c.margin, pad = c.pad, lh = c.lh, lw = c.lw;
    double dpi = c.o.dpi;
    int vw = 0;
    char buf[64];
    for (size_t i = 0; i < N; i++) {
        fmt_bar(buf, sizeof buf, values[i], bar_dec, bar_sci);
        vw = imax(vw, text_len(&c, buf, c.apx));
    }
    int row = imax((int)ceil(lh * 1.3), label_pitch(&c, bl, N)), bar = (int)lround(row * 0.7);
    int title_w, title_h = title_block(&c, title, &title_w);
    int xlab_w = xlabel && xlabel[0] ? text_len(&c, xlabel, c.fpx) : 0;
    /* value labels sit right of bars >= 0 (zero included) and left of bars < 0 */
    int any_neg = lo < 0, any_nonneg = 0;
    for (size_t i = 0; i < N; i++) any_nonneg |= values[i] >= 0;
    int padL = any_neg ? vw + pad : 0, padR = any_nonneg ? vw + pad : 0;
    int left = m + lmax + pad;
    int top = m + title_h;
    int target = (int)lround(c.o.width_in * dpi) - fit->extra;
    /* ticks: as many as fit without their labels meeting (>= 2) */
    vz_ticks tk;
    double alo = lo, ahi = hi;
    int PW = 0, edge = 0;
    for (int want = 6; want >= 1; want--) {
        nice_ticks(lo, hi, want, &tk);
        alo = floor(lo / tk.step + 1e-9) * tk.step;
        ahi = ceil(hi / tk.step - 1e-9) * tk.step;
        ticks_at(alo, ahi, tk.step, &tk); /* the axis ends on ticks */
        int tw = 0;
        for (int k = 0; k < tk.n; k++) {
            fmt_tick(buf, sizeof buf, tk.v[k], &tk);
            tw = imax(tw, text_len(&c, buf, c.fpx));
        }
        edge = tw / 2;
        PW = target - left - imax(padL, edge) - imax(padR, edge) - m;
        double spacing = tk.n > 1 ? PW * tk.step / (ahi - alo) : PW;
        if (spacing >= tw + 2 * pad || want == 1) break;
    }
    /* the x label is centred under the axis: the axis is at least as wide */
    int PW_min = imax((int)lround(1.0 * dpi), xlab_w);
    if (PW < PW_min) {
        PW = PW_min;
        fit->cramped = 1;
    }
    if (title_w + 2 * m > (int)lround(c.o.width_in * dpi)) fit->cramped = 1; /* the canvas, not the retry plan */
    int ax0 = left + imax(padL, edge), ax1 = ax0 + PW; /* data axis pixels */
#define XOF(v) (ax0 + (int)lround(((v) - alo) / (ahi - alo) * (double)PW))
    int x0 = XOF(0.0);
    int PH = (int)N * row;
    unsigned char pos[3], neg[3];
    memcpy(pos, vz_diverging[220], 3);
    memcpy(neg, vz_diverging[35], 3);
    for (size_t i = 0; i < N && !s; i++) {
        int y = top + (int)i * row;
        int tw = text_len(&c, bl[i], c.fpx);
        s = add_text(&c, bl[i], c.fpx, 0, left - pad - tw, y + (row - lh) / 2, VZ_A_END,
                     VZ_T_LABEL, BLACK);
        double v = values[i];
        int xv = XOF(v);
        int bx = v >= 0 ? x0 : xv, bwid = abs(xv - x0);
        if (!s && bwid > 0)
            s = add_rect(&c, bx, y + (row - bar) / 2, bwid, bar, v >= 0 ? pos : neg, VZ_R_BAR, -1,
                         (int)i, -1);
        fmt_bar(buf, sizeof buf, v, bar_dec, bar_sci);
        int vtw = text_len(&c, buf, c.apx);
        int vx = v >= 0 ? xv + pad / 2 : xv - pad / 2 - vtw;
        if (!s) s = add_text(&c, buf, c.apx, 0, vx, y + (row - c.alh) / 2,
                             v >= 0 ? VZ_A_START : VZ_A_END, VZ_T_VALUE, BLACK);
    }
    /* zero line and axis */
    if (!s) s = begin_group(&c, "axis");
    if (!s) s = add_rect(&c, x0 - lw / 2, top, lw, PH, FRAME, VZ_R_PLAIN, -1, -1, -1);
    int ay = top + PH + pad / 2;
    if (!s) s = add_rect(&c, ax0, ay, PW + lw, lw, FRAME, VZ_R_PLAIN, -1, -1, -1);
    int tl = (int)lround(c.fpx * 0.3);
    int right = ax1 + padR;
    for (int k = 0; k < tk.n && !s; k++) {
        int tx = XOF(tk.v[k]);
        s = add_rect(&c, tx - lw / 2, ay + lw, lw, tl, FRAME, VZ_R_PLAIN, -1, -1, -1);
        fmt_tick(buf, sizeof buf, tk.v[k], &tk);
        int w = text_len(&c, buf, c.fpx);
        if (!s) s = add_text(&c, buf, c.fpx, 0, tx - w / 2, ay + lw + tl + pad / 4, VZ_A_MIDDLE,
                             VZ_T_CBAR, BLACK);
        right = imax(right, tx - w / 2 + w);
    }
#undef XOF
    int bottom = ay + lw + tl + pad / 4 + lh;
    if (!s && xlab_w) {
        s = add_text(&c, xlabel, c.fpx, 0, ax0 + PW / 2 - xlab_w / 2, bottom + pad, VZ_A_MIDDLE,
                     VZ_T_AXIS, BLACK);
        bottom += pad + lh;
        right = imax(right, ax0 + PW / 2 - xlab_w / 2 + xlab_w);
    }
    int W = imax(right + m, title_w + 2 * m);
    shift_items(&c, (W - right - m) / 2); /* the body centred under a wider title */
    if (!s && title_h) s = add_title(&c, title, W);
    if (s) goto done;
    s = finish(&c, W, bottom + m, out, err);
done:
    free_labels(bl, N);
    hs_viz_figure_destroy(c.f);
    if (s == HS_ERR_NOMEM) hs_fail(err, s, "out of memory laying out a figure");
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
    hs_status s = check_labels(labels, N, "bar labels", err);
    if (!s) s = check_title(title, "title", err);
    if (!s) s = check_title(xlabel, "x label", err);
    if (s) return s;
    for (size_t i = 0; i < N; i++)
        if (!isfinite(values[i]))
            return hs_fail(err, HS_ERR_NUMERIC, "bar value %zu is not finite (%g)", i,
                           (double)values[i]);
    vz_bars_args a = {values, N, labels, title, xlabel, opt != NULL};
    return fit_width(out, build_bars, &a, opt, HS_VIZ_COLUMN_IN, "bar chart", err);
}

/* ------------------------------------------------------------------------ */

size_t hs_viz_figure_width(const hs_viz_figure *f) { return (size_t)f->width; }
size_t hs_viz_figure_height(const hs_viz_figure *f) { return (size_t)f->height; }
double hs_viz_figure_dpi(const hs_viz_figure *f) { return f->dpi; }

void hs_viz_figure_destroy(hs_viz_figure *f)
{
    if (f == NULL) return;
    for (size_t i = 0; i < f->n_texts; i++) {
        free(f->texts[i].s);
        vz_run_free(&f->texts[i].run);
    }
    free(f->texts);
    for (size_t i = 0; i < f->n_groups; i++) free(f->groups[i]);
    free(f->groups);
    free(f->title);
    free(f->desc);
    free(f->rects);
    free(f->font_file);
    vz_font_close(f->font);
    free(f);
}

/* ------------------------------------------------------------------------ */
/* The building blocks for figure kinds laid out in other files (viz_internal.h) */

hs_status vz_ctx_init(vz_ctx *c, const hs_viz_options *opt, hs_error *err) { return ctx_init(c, opt, err); }
hs_status vz_begin_group(vz_ctx *c, const char *id) { return begin_group(c, id); }
hs_status vz_add_rect(vz_ctx *c, int x, int y, int w, int h, const unsigned char rgb[3])
{
    return add_rect(c, x, y, w, h, rgb, VZ_R_PLAIN, -1, -1, -1);
}
hs_status vz_add_text(vz_ctx *c, const char *s, double px, int rot, int x, int y, vz_anchor anchor,
                      vz_role role)
{
    return add_text(c, s, px, rot, x, y, anchor, role, BLACK);
}
int vz_text_len(vz_ctx *c, const char *s, double px) { return text_len(c, s, px); }
void vz_nice_ticks(double lo, double hi, int target, vz_ticks *t) { nice_ticks(lo, hi, target, t); }
void vz_fmt_tick(char *buf, size_t n, double v, const vz_ticks *t) { fmt_tick(buf, n, v, t); }
hs_status vz_check_labels(const char *const *labels, size_t n, const char *what, hs_error *err)
{
    return check_labels(labels, n, what, err);
}
hs_status vz_check_title(const char *t, const char *what, hs_error *err) { return check_title(t, what, err); }
char *vz_display_label(const char *s) { return display_label(s); }
int vz_title_block(vz_ctx *c, const char *title, int *w) { return title_block(c, title, w); }
hs_status vz_add_title(vz_ctx *c, const char *title, int W) { return add_title(c, title, W); }
hs_status vz_finish(vz_ctx *c, int W, int H, hs_viz_figure **out, hs_error *err)
{
    return finish(c, W, H, out, err);
}

double hs_viz_figure_grown_from_in(const hs_viz_figure *f) { return f ? f->grown_from_in : 0; }
double hs_viz_figure_width_in(const hs_viz_figure *f) { return f && f->dpi > 0 ? f->width / f->dpi : 0; }
