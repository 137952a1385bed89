/*
 * viz/viz_layout.c -- the shared machinery every figure kind lays out with:
 * options, label checks and clean-up, the layout context (font sizes and
 * spacing from the dpi), the display list it fills (groups, rectangles,
 * curves, shaped text items, frames), the title block, and a figure's
 * lifetime. The figure kinds live in viz_heatmap.c, viz_grid.c, viz_bars.c,
 * viz_lines.c and viz_graph.c; ticks and colour bars in viz_scale.c; the
 * width promise in viz_fit.c. No file I/O here.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "viz/viz_internal.h"

/* ------------------------------------------------------------------------ */
/* UTF-8 and labels                                                         */

size_t vz_utf8_len(const char *s)
{
    size_t n = 0, len = strlen(s), k;
    uint32_t cp;
    for (size_t i = 0; i < len; i += k ? k : 1, n++)
        k = hs_utf8_decode((const unsigned char *)s + i, len - i, &cp);
    return n;
}

/* A special token's short symbol, or NULL: a whole label `<|NAME|>` (NAME
 * of ASCII letters, digits and '_', as GPT-2, GPT-NeoX, Llama 3 and Qwen
 * spell their special tokens) is shown as `⟨name⟩`, the beginning and end of
 * text by their usual names (GPT-2's `<|endoftext|>`, the BOS TransformerLens
 * prepends, as `⟨bos⟩`: 5 code points for 13, the longest label of every
 * GPT-2 figure); so is one after a position, `12 <|NAME|>` (digits and one
 * space, as the prompt sets' position axes label a token), as `12 ⟨name⟩`.
 * Written into buf (at least 48 bytes). */
static const char *special_short(const char *s, char *buf, size_t n)
{
    static const char *const ALIAS[][2] = {
        {"endoftext", "bos"}, {"begin_of_text", "bos"}, {"startoftext", "bos"},
        {"end_of_text", "eos"}, {"eot_id", "eot"},
    };
    size_t pos = 0; /* the digits and space of a position before the token */
    while (pos < 8 && s[pos] >= '0' && s[pos] <= '9') pos++;
    if (pos > 0 && s[pos] == ' ') pos++;
    else pos = 0;
    s += pos;
    size_t len = strlen(s);
    if (len < 5 || len > 28 || strncmp(s, "<|", 2) != 0 || strcmp(s + len - 2, "|>") != 0) return NULL;
    for (size_t i = 2; i < len - 2; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_'))
            return NULL;
    }
    char name[32];
    snprintf(name, sizeof name, "%.*s", (int)(len - 4), s + 2);
    const char *shown = name;
    for (size_t k = 0; k < sizeof ALIAS / sizeof *ALIAS; k++)
        if (strcmp(name, ALIAS[k][0]) == 0) shown = ALIAS[k][1];
    snprintf(buf, n, "%.*s\xe2\x9f\xa8%s\xe2\x9f\xa9", (int)pos, s - pos, shown); /* U+27E8 .. U+27E9 */
    return buf;
}

/* The label as shown in a figure (every figure kind's labels come through
 * here): a special token as its short symbol (special_short), control
 * characters become '?', more than HS_VIZ_MAX_LABEL code points become
 * HS_VIZ_MAX_LABEL-1 plus "…". The JSON keeps the label itself. */
char *vz_display_label(const char *s) { return vz_display_label_max(s, HS_VIZ_MAX_LABEL); }

char *vz_display_label_max(const char *s, size_t max)
{
    char sp[48];
    const char *short_form = special_short(s, sp, sizeof sp);
    if (short_form) return hs_strdup(short_form);
    size_t n = strlen(s);
    char *d = malloc(n + 4);
    if (!d) return NULL;
    size_t cps = 0, total = vz_utf8_len(s), o = 0, i = 0;
    while (i < n) {
        if (total > max && cps == max - 1) {
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

hs_status vz_check_labels(const char *const *labels, size_t n, const char *what, hs_error *err)
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

hs_status vz_check_title(const char *t, const char *what, hs_error *err)
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
    o->mark_y = NAN;
}

hs_status vz_check_options(const hs_viz_options *o, hs_error *err)
{
    if (!(o->dpi >= 36.0 && o->dpi <= 1200.0))
        return hs_fail(err, HS_ERR_INPUT, "dpi %g is out of range (36..1200)", o->dpi);
    if (!(o->font_pt >= 4.0 && o->font_pt <= 36.0))
        return hs_fail(err, HS_ERR_INPUT, "font size %g pt is out of range (4..36)", o->font_pt);
    if ((o->note && !hs_utf8_valid(o->note)) || (o->value_label && !hs_utf8_valid(o->value_label)) ||
        (o->mark_y_label && !hs_utf8_valid(o->mark_y_label)))
        return hs_fail(err, HS_ERR_INPUT, "figure note, value label or y mark label is not valid UTF-8");
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
/* The layout context and its display list                                  */

hs_status vz_ctx_init(vz_ctx *c, const hs_viz_options *opt, hs_error *err)
{
    memset(c, 0, sizeof *c);
    if (opt) c->o = *opt;
    else hs_viz_options_default(&c->o);
    hs_status s = vz_check_options(&c->o, err);
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
    if (vz_begin_group(c, "plot")) {
        hs_viz_figure_destroy(f);
        c->f = NULL;
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    return HS_OK;
}

/* Starts a new group (SVG <g id>) for the items added next. id is made a
 * valid, unique XML id: characters outside [A-Za-z0-9_-] become '_', a
 * leading digit gets "g", a repeat gets "-2", "-3", ... */
hs_status vz_begin_group(vz_ctx *c, const char *id)
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

/* The slow half of vz_add_rect_kind (viz_internal.h): room for more. */
hs_status vz_grow_rects(hs_viz_figure *f)
{
    size_t nc = f->cap_rects ? f->cap_rects * 2 : 256;
    vz_rect *r = realloc(f->rects, nc * sizeof *r);
    if (!r) return HS_ERR_NOMEM;
    f->rects = r;
    f->cap_rects = nc;
    return HS_OK;
}

hs_status vz_add_curve(vz_ctx *c, const double xy[8], double width, double dash_on,
                       double dash_off, const unsigned char rgb[3])
{
    hs_viz_figure *f = c->f;
    if (f->n_curves == f->cap_curves) {
        size_t nc = f->cap_curves ? f->cap_curves * 2 : 64;
        vz_curve *k = realloc(f->curves, nc * sizeof *k);
        if (!k) return HS_ERR_NOMEM;
        f->curves = k;
        f->cap_curves = nc;
    }
    vz_curve *k = &f->curves[f->n_curves++];
    k->x0 = xy[0], k->y0 = xy[1], k->x1 = xy[2], k->y1 = xy[3];
    k->x2 = xy[4], k->y2 = xy[5], k->x3 = xy[6], k->y3 = xy[7];
    k->width = width;
    k->dash_on = dash_on > 0 ? dash_on : 0;
    k->dash_off = dash_on > 0 ? dash_off : 0;
    memcpy(k->rgb, rgb, 3);
    k->group = c->group;
    k->joined = 0;
    k->filled = 0;
    return HS_OK;
}

/* A straight run a -> b as a curve (controls at its thirds), joined to the
 * one before unless it is the first. */
static hs_status add_run(vz_ctx *c, double ax, double ay, double bx, double by, int first,
                         double width, double on, double off, const unsigned char rgb[3])
{
    const double xy[8] = {ax, ay, ax + (bx - ax) / 3, ay + (by - ay) / 3,
                          ax + 2 * (bx - ax) / 3, ay + 2 * (by - ay) / 3, bx, by};
    hs_status s = vz_add_curve(c, xy, width, on, off, rgb);
    if (!s && !first) c->f->curves[c->f->n_curves - 1].joined = 1;
    return s;
}

hs_status vz_add_polygon(vz_ctx *c, const double *pts, size_t n, const unsigned char rgb[3])
{
    hs_status s = HS_OK;
    for (size_t i = 1; i < n && !s; i++)
        s = add_run(c, pts[2 * i - 2], pts[2 * i - 1], pts[2 * i], pts[2 * i + 1], i == 1, 0, 0, 0, rgb);
    if (!s) c->f->curves[c->f->n_curves - (n - 1)].filled = 1;
    return s;
}

hs_status vz_add_path(vz_ctx *c, const double *pts, size_t n, const double *radius, double width,
                      double dash_on, double dash_off, const unsigned char rgb[3])
{
    /* a quarter circle's cubic: controls 0.5523 of the radius from each end towards the corner */
    const double kappa = 0.5522847498;
    double cx = pts[0], cy = pts[1];
    int first = 1;
    hs_status s = HS_OK;
    for (size_t i = 1; i + 1 < n && !s; i++) {
        const double px = pts[2 * i], py = pts[2 * i + 1];
        const double l0 = hypot(px - cx, py - cy), l1 = hypot(pts[2 * i + 2] - px, pts[2 * i + 3] - py);
        const double r = fmin(radius[i], fmin(l0, 0.5 * l1));
        if (!(r > 0) || l0 <= 0 || l1 <= 0) {
            if (l0 > 0) s = add_run(c, cx, cy, px, py, first, width, dash_on, dash_off, rgb), first = 0;
            cx = px, cy = py;
            continue;
        }
        const double ax = px - r * (px - cx) / l0, ay = py - r * (py - cy) / l0;
        const double bx = px + r * (pts[2 * i + 2] - px) / l1, by = py + r * (pts[2 * i + 3] - py) / l1;
        if (hypot(ax - cx, ay - cy) > 1e-9)
            s = add_run(c, cx, cy, ax, ay, first, width, dash_on, dash_off, rgb), first = 0;
        const double xy[8] = {ax, ay, ax + kappa * (px - ax), ay + kappa * (py - ay),
                              bx + kappa * (px - bx), by + kappa * (py - by), bx, by};
        if (!s) s = vz_add_curve(c, xy, width, dash_on, dash_off, rgb);
        if (!s && !first) c->f->curves[c->f->n_curves - 1].joined = 1;
        first = 0;
        cx = bx, cy = by;
    }
    if (!s) s = add_run(c, cx, cy, pts[2 * n - 2], pts[2 * n - 1], first, width, dash_on, dash_off, rgb);
    return s;
}

/* Adds text s with its box's top-left at (x, y). Returns HS_ERR_NOMEM or HS_OK. */
hs_status vz_add_text(vz_ctx *c, const char *s, double px, int rot, int x, int y,
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
hs_status vz_add_frame(vz_ctx *c, int x, int y, int w, int h, const unsigned char rgb[3])
{
    int lw = c->lw;
    hs_status s = HS_OK;
    if (!s) s = vz_add_rect(c, x - lw, y - lw, w + 2 * lw, lw, rgb);
    if (!s) s = vz_add_rect(c, x - lw, y + h, w + 2 * lw, lw, rgb);
    if (!s) s = vz_add_rect(c, x - lw, y, lw, h, rgb);
    if (!s) s = vz_add_rect(c, x + w, y, lw, h, rgb);
    return s;
}

/* ------------------------------------------------------------------------ */
/* Labels as shown                                                          */

/* Widest display label (px at the label size); fills shown[] (owned strings). */
hs_status vz_prepare_labels(vz_ctx *c, const char *const *in, size_t n, char **shown, int *maxw)
{
    *maxw = 0;
    for (size_t i = 0; i < n; i++) {
        shown[i] = vz_display_label_max(in[i], c->o.whole_labels ? HS_VIZ_MAX_WHOLE_LABEL : HS_VIZ_MAX_LABEL);
        if (!shown[i]) return HS_ERR_NOMEM;
        int w = vz_text_len(c, shown[i], c->fpx);
        if (w > *maxw) *maxw = w;
    }
    return HS_OK;
}

void vz_free_labels(char **shown, size_t n)
{
    if (!shown) return;
    for (size_t i = 0; i < n; i++) free(shown[i]);
    free(shown);
}

/* The pitch (px) labels need side by side without their ink touching: the
 * tallest ink of any of them (ascender to descender) plus 0.15 em. */
int vz_label_pitch(vz_ctx *c, char *const *shown, size_t n)
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
/* The title block                                                          */

/* Width (px) of a title line: as marked up (its runs) when markup. */
static int line_len(vz_ctx *c, const char *s, double px, int markup)
{
    return markup ? vz_markup_width(c, s, px) : vz_text_len(c, s, px);
}

/* s broken at spaces into lines no wider than maxw px at size px (a word
 * wider than that stays whole on its line), measured as marked up when
 * markup. Calls fn(arg, line, width) per line; returns the number of lines,
 * or -1 on OOM. */
static int wrap_lines(vz_ctx *c, const char *s, double px, int maxw, int markup,
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
        if (line.len && line_len(c, cand.s, px, markup) > maxw) {
            if (fn && fn(c, arg, line.s, line_len(c, line.s, px, markup))) break;
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
        if (fn && fn(c, arg, line.s, line_len(c, line.s, px, markup))) ok = 0;
        else n++;
    }
    hs_buf_free(&line);
    hs_buf_free(&cand);
    return ok ? n : -1;
}

typedef struct {
    int W, y, widest; /* W: the canvas the lines centre on, px (0 = measure only) */
    double px;
    vz_role role;
    const unsigned char *rgb;
    int line_h;
    int cx; /* >= 0: the lines centre on x = cx instead */
    int markup; /* the line is marked up (hs_viz_options.title_markup) */
} vz_title_pen;

static hs_status title_line(vz_ctx *c, void *arg, const char *line, int w)
{
    vz_title_pen *t = arg;
    hs_status s = HS_OK;
    const int x0 = t->cx >= 0 ? t->cx - w / 2 : (t->W - w) / 2;
    if (t->W > 0 && t->markup)
        s = vz_add_markup(c, line, t->px, x0, t->y, t->role, t->rgb);
    else if (t->W > 0)
        s = vz_add_text(c, line, t->px, 0, x0, t->y, VZ_A_MIDDLE, t->role, t->rgb);
    t->y += t->line_h;
    t->widest = vz_imax(t->widest, w);
    return s;
}

static const unsigned char NOTE_RGB[3] = {0xb0, 0x10, 0x10};

/* Lays out (W > 0: adds) the title block: the title (1.2x, wrapped to the
 * target width) and the note (dark red, wrapped). Returns its height; *w gets
 * its widest line. */
static int title_lines(vz_ctx *c, const char *title, int W, int *w, hs_status *st)
{
    int maxw = (int)lround(c->o.width_in * c->o.dpi) - 2 * c->margin;
    vz_title_pen t = {W, c->margin, 0, c->tpx, VZ_T_TITLE, VZ_BLACK, c->tlh, -1,
                      c->o.title_markup};
    *st = HS_OK;
    if (title && title[0] && wrap_lines(c, title, c->tpx, maxw, t.markup, title_line, &t) < 0)
        *st = HS_ERR_NOMEM;
    if (t.y > c->margin) t.y += c->pad;
    int y_note = t.y;
    t.px = c->fpx;
    t.role = VZ_T_LABEL;
    t.rgb = NOTE_RGB;
    t.line_h = c->lh;
    t.markup = 0;
    if (!*st && c->o.note && c->o.note[0] && wrap_lines(c, c->o.note, c->fpx, maxw, 0, title_line, &t) < 0)
        *st = HS_ERR_NOMEM;
    if (t.y > y_note) t.y += c->pad;
    *w = t.widest;
    return t.y - c->margin;
}

/* The title block, centred over a canvas W px wide, in its own group. */
hs_status vz_add_title(vz_ctx *c, const char *title, int W)
{
    hs_status s = vz_begin_group(c, "title");
    int w;
    if (!s) title_lines(c, title, W, &w, &s);
    if (!s && title && title[0] && !c->f->title &&
        !(c->f->title = c->o.title_markup ? hs_viz_title_plain(title) : hs_strdup(title)))
        s = HS_ERR_NOMEM;
    return s;
}

/* Height (px) of the title block and its widest line. */
int vz_title_block(vz_ctx *c, const char *title, int *w)
{
    hs_status st;
    return title_lines(c, title, 0, w, &st);
}

int vz_widest_word(vz_ctx *c, const char *s, double px)
{
    int w = 0;
    char word[256];
    for (const char *p = s; *p;) {
        while (*p == ' ') p++;
        const char *e = p;
        while (*e && *e != ' ') e++;
        if (e == p) break;
        snprintf(word, sizeof word, "%.*s", (int)(e - p), p);
        w = vz_imax(w, vz_text_len(c, word, px));
        p = e;
    }
    return w;
}

int vz_add_wrapped(vz_ctx *c, const char *s, int maxw, int cx, int y, int add, int *widest,
                   hs_status *st)
{
    vz_title_pen t = {add, y, 0, c->fpx, VZ_T_AXIS, VZ_BLACK, c->lh, cx, 0};
    *st = wrap_lines(c, s, c->fpx, maxw, 0, title_line, &t) < 0 ? HS_ERR_NOMEM : HS_OK;
    *widest = t.widest;
    return t.y - y;
}

/* ------------------------------------------------------------------------ */
/* A figure's lifetime                                                      */

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
    free(f->curves);
    free(f->font_file);
    vz_font_close(f->font);
    hs_viz_figure_destroy(f->vec);
    free(f);
}

double hs_viz_figure_grown_from_in(const hs_viz_figure *f) { return f ? f->grown_from_in : 0; }

double hs_viz_figure_label_pt(const hs_viz_figure *f)
{
    for (size_t i = 0; f && i < f->n_texts; i++) {
        const vz_text *t = &f->texts[i];
        if (t->role != VZ_T_TITLE && t->role != VZ_T_ANNOT && t->role != VZ_T_VALUE)
            return round(t->px * 72.0 / f->dpi * 100.0) / 100.0; /* to 0.01 pt: no float noise */
    }
    return 0;
}
double hs_viz_figure_width_in(const hs_viz_figure *f) { return f ? f->width_in : 0; }

