/*
 * viz/viz_internal.h -- the figure's scene (rectangles + text items in pixel
 * units), the layout machinery the figure kinds share, the font helper and
 * the colour tables, shared by the viz sources and reached by tests
 * (geometry checks). Not part of the public API.
 */
#ifndef HS_VIZ_INTERNAL_H
#define HS_VIZ_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include <cairo.h>

#include "viz/viz.h"

/* Text roles (also the SVG class of each <text>). */
typedef enum {
    VZ_T_TITLE = 0,
    VZ_T_XTICK,   /* token/column label under a map (rotated 90) */
    VZ_T_YTICK,   /* token/row label left of a map */
    VZ_T_HEADER,  /* grid row/column header (L0, H3) */
    VZ_T_CBAR,    /* colour-bar / x-axis tick label */
    VZ_T_AXIS,    /* axis title */
    VZ_T_ANNOT,   /* value written inside a cell */
    VZ_T_LABEL,   /* bar label, legend text */
    VZ_T_VALUE,   /* value at a bar's end */
    VZ_T_NROLES
} vz_role;

typedef enum { VZ_A_START = 0, VZ_A_MIDDLE, VZ_A_END } vz_anchor;

/* What a rectangle is; the renderers draw each kind its own way. */
typedef enum {
    VZ_R_PLAIN = 0, /* filled with rgb (frames, ticks, swatches, lines) */
    VZ_R_CELL,      /* a heatmap cell, filled with rgb */
    VZ_R_MASKED,    /* a masked heatmap cell: rgb (vz_mask_rgb) with dark hatching */
    VZ_R_CBAR,      /* a colour bar: one vertical gradient of cmap, top = 1, bottom = 0 */
    VZ_R_BAR,       /* a bar of a bar chart, filled with rgb */
} vz_rect_kind;

/* A filled axis-aligned rectangle, integer pixels, [x, x+w) x [y, y+h). */
typedef struct {
    int x, y, w, h;
    unsigned char rgb[3];
    vz_rect_kind kind;
    hs_viz_cmap cmap; /* VZ_R_CBAR: the colour map of the gradient */
    int vertical;     /* VZ_R_CBAR: 1 = vmin at the bottom to vmax at the top, 0 = left to right */
    int panel;     /* heatmap panel index (layer * H + head), -1 otherwise */
    int row, col;  /* cell row/column in its panel (bar: row), -1 otherwise */
    int group;     /* index into hs_viz_figure.groups */
} vz_rect;

/* A stroked cubic Bezier curve, canvas px: from (x0, y0) with control points
 * (x1, y1) and (x2, y2) to (x3, y3) (a straight line when the controls lie on
 * it), width px wide with butt ends, solid or dashed (dash_on px drawn,
 * dash_off px left out, along the curve from its start). The graph's edges
 * and its legend's samples. */
typedef struct {
    double x0, y0, x1, y1, x2, y2, x3, y3;
    double width;
    double dash_on, dash_off; /* 0, 0 = solid */
    unsigned char rgb[3];
    int group;     /* index into hs_viz_figure.groups */
    int joined;    /* 1: continues the curve before it (of its group) as one stroked
                      path, its start that curve's end, drawn with that curve's width,
                      dashes (running on along the path) and colour */
    int filled;    /* 1 (on a path's first curve): the path closed and filled with rgb,
                      not stroked (an arrowhead); width unused */
} vz_curve;

/* One shaped glyph: glyph id and its origin relative to the pen start on the
 * baseline, in px (x along the text, y down). */
typedef struct {
    uint32_t id;
    double x, y;
    uint32_t cluster; /* byte offset in the string of the text this glyph shows */
    int face;         /* 0 = the primary font, k >= 1 = the font's fallback face k */
} vz_glyph;

/* A shaped string (HarfBuzz, kerning on): glyphs, the advance width and the
 * ink extents relative to the pen start on the baseline, px: ink_l..ink_r
 * along the text, ink_t above and ink_b below the baseline (both >= 0). */
typedef struct {
    vz_glyph *g;
    size_t n;
    double adv, ink_l, ink_r, ink_t, ink_b;
} vz_run;

/* A text item. (x, y, w, h) is its box on the canvas (after rotation): the
 * advance width and the font's line height (ascender - descender). rot is 0
 * or 90 (reads bottom to top). The anchor says which end of the text is
 * pinned (for SVG, whose renderer may use other font metrics). */
typedef struct {
    char *s;       /* UTF-8, owned */
    int x, y, w, h;
    int ix, iy, iw, ih; /* ink box on the canvas (what a reader sees; overlap checks) */
    vz_run run;    /* shaped glyphs (owned): every renderer draws these positions */
    int group;     /* index into hs_viz_figure.groups */
    int rot;
    double px;     /* font size in pixels (em) */
    vz_anchor anchor;
    vz_role role;
    unsigned char rgb[3];
} vz_text;

/* The font (viz_font.c): HarfBuzz face and font, cairo face, a shaping
 * buffer; hs_viz_font is the same struct. */
typedef struct hs_viz_font vz_font;

struct hs_viz_figure {
    int width, height;
    double dpi;
    vz_rect *rects;
    size_t n_rects, cap_rects;
    vz_text *texts;
    size_t n_texts, cap_texts;
    vz_curve *curves;
    size_t n_curves, cap_curves;
    char **groups;     /* group ids (SVG <g id>; owned): "title", "L1H0", "colorbar", ... */
    size_t n_groups;
    char *title;       /* the figure's title (owned, may be NULL): SVG <title>, PDF metadata */
    char *desc;        /* one line saying what it shows (owned, may be NULL): SVG <desc> */
    double grown_from_in; /* the default width it outgrew (hs_viz_figure_grown_from_in), or 0 */
    char *font_file;   /* resolved font path (owned) */
    vz_font *font;
    double width_in;   /* its physical width, inches: the width asked, else width / dpi */
    struct hs_viz_figure *vec; /* the layout at VZ_VECTOR_DPI the PDF and SVG draw (owned),
                                  of which this one is the PNG's copy scaled to its dpi;
                                  NULL: this one is drawn by all three, scaled to width_in */
};

/* The resolution every figure kind that keeps the width promise
 * (vz_fit_width) is laid out at, whatever the PNG's dpi: the figure is laid
 * out once, the PDF and SVG draw that layout, and the PNG a copy of it
 * scaled to its dpi (rectangles snapped to whole pixels, both edges
 * rounded, so cells still tile and nothing that was apart touches), so the
 * three are one size to a pixel and fit or refuse together at every dpi. */
#define VZ_VECTOR_DPI 600.0

/* Pixels per inch of f's outputs: its width over its physical width (the
 * PNG's pHYs to the nearest pixel per metre; the PDF and SVG exactly). */
static inline double vz_figure_ppi(const hs_viz_figure *f)
{
    return f->width_in > 0 ? f->width / f->width_in : f->dpi;
}

/* ---- colour (viz_color.c) ---- */
extern const unsigned char vz_viridis[256][3];
extern const unsigned char vz_diverging[256][3];

/* ---- font (viz_font.c) ---- */
/* Resolves the font path: explicit, $HS_FONT, Debian path, fontconfig.
 * *path malloc'd. */
hs_status vz_font_find(const char *explicit_path, char **path, hs_error *err);
hs_status vz_font_open(vz_font **f, const char *path, hs_error *err);
/* A copy of src for one figure: the same file, HarfBuzz font and cairo face
 * (references: src may be closed first), its own shaping buffer, so figures
 * sharing a font can be laid out and drawn on several threads at once.
 * Errors: HS_ERR_NOMEM. */
hs_status vz_font_share(vz_font **f, const vz_font *src, hs_error *err);
/* The font's file (borrowed). */
const char *vz_font_file(const vz_font *f);
/* Closes f (NULL is a no-op); the objects it shares live while other copies do. */
void vz_font_close(vz_font *f);
/* Shapes UTF-8 s at size px (em, pixels) into *run (caller frees with
 * vz_run_free). Errors: HS_ERR_NOMEM (no message set). */
hs_status vz_font_shape(vz_font *f, const char *s, double px, vz_run *run);
void vz_run_free(vz_run *run);
/* Width (px, rounded up) of s at size px: the advance, or the ink's right
 * end when a glyph overhangs it; line height and ascender (px) at that size. */
int vz_font_width(vz_font *f, const char *s, double px);
int vz_font_line(vz_font *f, double px);
int vz_font_ascender(vz_font *f, double px);
/* The cairo font face of a glyph's face (0 = the primary font, k >= 1 its
 * fallback face k; borrowed, lives as long as f) and that face's family
 * name (SVG's font-family). */
cairo_font_face_t *vz_font_cairo(const vz_font *f, int face);
const char *vz_font_family(const vz_font *f, int face);

/* ---- fallback fonts (viz_fallback.c) ----
 * The faces a font falls back to for code points it lacks (fontconfig's
 * best scalable monochrome font having each), opened once and shared by
 * every copy of the font (reference-counted; thread-safe). */
typedef struct vz_fallbacks vz_fallbacks;
/* A new empty set (NULL on OOM); a reference more; one fewer (frees at 0). */
vz_fallbacks *vz_fallbacks_new(void);
void vz_fallbacks_ref(vz_fallbacks *fb);
void vz_fallbacks_unref(vz_fallbacks *fb);
/* The face k >= 1 that draws cp (opened at its first use), 0 when no font has it. */
int vz_fallbacks_face(vz_fallbacks *fb, uint32_t cp);
/* Whether face k has a glyph for cp; its HarfBuzz font (scale = units per
 * em), units per em, cairo face and family (all borrowed). */
int vz_fallbacks_has(const vz_fallbacks *fb, int k, uint32_t cp);
struct hb_font_t *vz_fallbacks_hb(const vz_fallbacks *fb, int k);
double vz_fallbacks_upem(const vz_fallbacks *fb, int k);
cairo_font_face_t *vz_fallbacks_cairo(const vz_fallbacks *fb, int k);
const char *vz_fallbacks_family(const vz_fallbacks *fb, int k);

/* ---- layout: the machinery the figure kinds share ----
 * viz_layout.c: options, labels, the context and its display list, the
 * title block, a figure's lifetime; viz_scale.c: ticks, number formats,
 * colour bars; viz_fit.c: the width promise; viz_heatmap.c: heatmap panels
 * (also the grid's). The kinds: viz_heatmap.c (attention pattern,
 * matrices), viz_grid.c (layers x heads), viz_bars.c, viz_lines.c,
 * viz_graph.c (the circuit graph). */

/* The width promise's record, between a layout and vz_fit_width. */
typedef struct {
    int extra;   /* in: px to take off the planned panel width (a retry's correction) */
    int cramped; /* out: cells or plot at their minimum: the labels need this width */
    int nofit;   /* out: the layout is wider than the target */
    int W;       /* out: the width the layout took, px */
    double png_dpi; /* in: the PNG's dpi when the layout is at VZ_VECTOR_DPI (the canvas
                       cap applies to the PNG), 0 = the layout's own */
} vz_fit;

typedef struct {
    hs_viz_figure *f;
    hs_viz_options o;
    double fpx, tpx, apx;  /* label, title, annotation font sizes (px) */
    int lh, tlh, alh;      /* their line heights */
    int pad, margin, lw;   /* spacing, line width */
    int group;             /* group of the items added next */
    vz_fit *fit;           /* the width promise's record (see vz_fit_width); NULL = none */
    int attention;         /* an attention figure (the query row may be highlighted) */
} vz_ctx;

/* A colour scale: value vmin..vmax onto cmap. */
typedef struct {
    double vmin, vmax;
    hs_viz_cmap cmap;
    const char *label; /* the quantity (and unit) the colour bar shows, or NULL */
} vz_scale;

/* Nice ticks over [lo, hi]: step in {1, 2, 5} x 10^k, about `target` of
 * them. sci: the magnitudes need scientific notation (|values| >= 1e4, or
 * all below 1e-3). */
typedef struct {
    double v[34];
    int n;
    double step;
    int decimals;
    int sci;
} vz_ticks;

/* Text, frames and lines: black, white, the frame's dark grey; the bars of a
 * magnitude chart, grey (viz_color.c). */
extern const unsigned char VZ_BLACK[3], VZ_WHITE[3], VZ_FRAME[3], VZ_BAR_GREY[3];

static inline int vz_imax(int a, int b) { return a > b ? a : b; }
static inline int vz_imin(int a, int b) { return a < b ? a : b; }

/* Options in range (dpi, font sizes, width, map, range mode; UTF-8 note). */
hs_status vz_check_options(const hs_viz_options *o, hs_error *err);
/* Checks the options, opens the font, sizes fonts and spacing from dpi. */
hs_status vz_ctx_init(vz_ctx *c, const hs_viz_options *opt, hs_error *err);
/* Starts a group (SVG <g id>, unique valid XML id) for the items added next. */
hs_status vz_begin_group(vz_ctx *c, const char *id);
/* Doubles f's room for rectangles (the slow half of vz_add_rect_kind). */
hs_status vz_grow_rects(hs_viz_figure *f);
/* A rectangle of a kind (panel, row, col: -1 when none) in the current
 * group; inline, as a heatmap adds one a cell. HS_ERR_NOMEM or HS_OK. */
static inline hs_status vz_add_rect_kind(vz_ctx *c, int x, int y, int w, int h,
                                         const unsigned char rgb[3], vz_rect_kind kind, int panel,
                                         int row, int col)
{
    hs_viz_figure *f = c->f;
    if (f->n_rects == f->cap_rects && vz_grow_rects(f)) return HS_ERR_NOMEM;
    vz_rect *r = &f->rects[f->n_rects++];
    memset(r, 0, sizeof *r);
    r->x = x; r->y = y; r->w = w; r->h = h;
    memcpy(r->rgb, rgb, 3);
    r->kind = kind; r->panel = panel; r->row = row; r->col = col;
    r->group = c->group;
    return HS_OK;
}
/* A plain filled rectangle. HS_ERR_NOMEM or HS_OK. */
static inline hs_status vz_add_rect(vz_ctx *c, int x, int y, int w, int h, const unsigned char rgb[3])
{
    return vz_add_rect_kind(c, x, y, w, h, rgb, VZ_R_PLAIN, -1, -1, -1);
}
/* A curve (vz_curve's fields; dash_on = 0: solid) in the current group.
 * HS_ERR_NOMEM or HS_OK. */
hs_status vz_add_curve(vz_ctx *c, const double xy[8], double width, double dash_on,
                       double dash_off, const unsigned char rgb[3]);
/* A path through pts[n] (x, y pairs, n >= 2) of straight runs, each inner
 * corner rounded with radius radius[i] (px; 0 = sharp; radius[0] unused),
 * as joined curves (vz_curve.joined). HS_ERR_NOMEM or HS_OK. */
hs_status vz_add_path(vz_ctx *c, const double *pts, size_t n, const double *radius, double width,
                      double dash_on, double dash_off, const unsigned char rgb[3]);
/* A filled polygon through pts[n] (x, y pairs, n >= 3; closed back to its
 * first point) in rgb: joined straight curves, the first one filled
 * (vz_curve.filled). HS_ERR_NOMEM or HS_OK. */
hs_status vz_add_polygon(vz_ctx *c, const double *pts, size_t n, const unsigned char rgb[3]);
/* A text item, its box's top-left at (x, y). HS_ERR_NOMEM or HS_OK. */
hs_status vz_add_text(vz_ctx *c, const char *s, double px, int rot, int x, int y, vz_anchor anchor,
                      vz_role role, const unsigned char rgb[3]);
/* Width (px) of s at size px in the figure's font. */
static inline int vz_text_len(vz_ctx *c, const char *s, double px)
{
    return vz_font_width(c->f->font, s, px);
}
/* The outline of [x, x+w) x [y, y+h), outside it, c->lw wide. */
hs_status vz_add_frame(vz_ctx *c, int x, int y, int w, int h, const unsigned char rgb[3]);

/* Label / title checks (NULL, UTF-8) and a label as shown (shortened; malloc'd). */
hs_status vz_check_labels(const char *const *labels, size_t n, const char *what, hs_error *err);
hs_status vz_check_title(const char *t, const char *what, hs_error *err);
char *vz_display_label(const char *s);
/* vz_display_label shortening past max (>= 2) code points rather than
 * HS_VIZ_MAX_LABEL (hs_viz_options.whole_labels). */
char *vz_display_label_max(const char *s, size_t max);
/* Labels as shown into shown[n] (owned; HS_ERR_NOMEM) and the widest; frees
 * them and shown (NULL is a no-op); the pitch (px) they need side by side. */
hs_status vz_prepare_labels(vz_ctx *c, const char *const *in, size_t n, char **shown, int *maxw);
void vz_free_labels(char **shown, size_t n);
int vz_label_pitch(vz_ctx *c, char *const *shown, size_t n);
/* Height of the title block (title, note) and its width; the block itself over a canvas W wide. */
int vz_title_block(vz_ctx *c, const char *title, int *w);
hs_status vz_add_title(vz_ctx *c, const char *title, int W);
/* The widest word of s (split at spaces) at px, px: the narrowest s can wrap to. */
int vz_widest_word(vz_ctx *c, const char *s, double px);
/* s (an axis title) at the label size, broken at spaces into lines no wider
 * than maxw px (a longer word stays whole), each centred on cx, the first
 * line's top at y; add = 0 only measures. Returns the lines' height, px;
 * *widest gets the widest line, *st HS_ERR_NOMEM or HS_OK. */
int vz_add_wrapped(vz_ctx *c, const char *s, int maxw, int cx, int y, int add, int *widest,
                   hs_status *st);

/* Ticks at the multiples of step in [lo, hi]; about target nice ticks over
 * [lo, hi]; one tick's text; an exponent shortened ("1.5e-06" -> "1.5e-6"). */
void vz_ticks_at(double lo, double hi, double step, vz_ticks *t);
void vz_nice_ticks(double lo, double hi, int target, vz_ticks *t);
void vz_fmt_tick(char *buf, size_t n, double v, const vz_ticks *t);
/* A number's text typeset in place, within n bytes: no sign on a number that
 * prints as zero ("-0.00", "+0.00" -> "0.00"), each hyphen-minus as U+2212
 * MINUS SIGN. Every number on a figure goes through it. */
void vz_minus_sign(char *buf, size_t n);
/* v rounded outward (up: towards +inf, else towards -inf) to a hundredth
 * of span's decade, so an auto colour bar's ends read round: 0.873 over a
 * span of 0.86 -> 0.88. */
double vz_round_out(double v, double span, int up);
void vz_short_exp(char *buf);
/* The colour bar of sc at (x, y), bw x bh, vertical or horizontal, with its
 * labels, in group "colorbar"; *right / *bottom get its extent. A vertical
 * bar's quantity label runs along it, wrapped at spaces onto as many lines
 * as keep each within bh, or lies level over the bar when a word is longer
 * than bh (vz_colorbar_label_lines). The width a vertical
 * bar's labels take right of it with its quantity on `lines` lines. The
 * masked-cell swatch and its word at (x, y), in group "legend". */
hs_status vz_add_colorbar(vz_ctx *c, const vz_scale *sc, int vertical, int x, int y, int bw, int bh,
                          int *right, int *bottom);
int vz_colorbar_label_width(vz_ctx *c, const vz_scale *sc, int lines, int bar_w);
/* The least length (px) of a vertical colour bar, so it shows its two ends
 * and the tick between them (0 of a difference's symmetric scale) as every
 * longer bar does: a bar beside a block of one or two rows is drawn this
 * long, past the block. */
int vz_colorbar_min_len(const vz_ctx *c);
/* Lines sc's quantity label takes along a vertical bar len px tall (1 when
 * it fits; 0 without a label; -1 when a word of it is longer than the bar:
 * the label then lies level over the bar, as its title, in the
 * VZ_CBAR_TITLE_H px above the bar the caller keeps free). */
#define VZ_CBAR_TITLE_H(c) ((c)->lh + (c)->lh / 2 + (c)->pad / 4) /* clear of the top tick label, centred on the bar top */
int vz_colorbar_label_lines(vz_ctx *c, const vz_scale *sc, int len);
/* Whether c's attention panels of rows rows frame a query row
 * (hs_viz_options.highlight_row within them). */
int vz_query_frame_on(const vz_ctx *c, size_t rows);
/* The query row's frame (red-orange, 2 line widths; black with a white
 * inner line when the accents are grey) around the w x h px rectangle at
 * (x0, y): drawn outside it. */
hs_status vz_add_query_frame(vz_ctx *c, const vz_scale *sc, int x0, int y, int w, int h);
/* The legend of an attention figure's marks, one entry a line from (x, y)
 * down: a masked cell's swatch "masked" (masked nonzero), the query row's
 * frame "query row" (query nonzero); *right and *bottom get its extent.
 * vz_legend_width: its width, px. */
int vz_legend_width(vz_ctx *c, int masked, int query);
hs_status vz_add_legend(vz_ctx *c, const vz_scale *sc, int masked, int query, int x, int y, int *right,
                        int *bottom);
/* Whether c's accents are grey: cmap GREYS or hs_viz_options.grey_accents. */
int vz_grey_accents(const vz_ctx *c);
/* The fill of masked cells (under VZ_HATCH_RGB's hatching) that stays apart
 * from c's colour map: HS_VIZ_MASK_RGB's lilac, white when the accents are
 * grey (vz_grey_accents). */
const unsigned char *vz_mask_rgb(const vz_ctx *c);

/* One heatmap panel of R x C cells (data [R, C]) at (x0, y0) in group gid;
 * masked(i, j) = (causal && j > i) || (mask && mask[i*C+j]); annot_fmt: the
 * cells' values written in, or NULL. */
hs_status vz_add_heatmap(vz_ctx *c, const float *data, const unsigned char *mask, size_t R,
                         size_t C, int x0, int y0, int cell, const vz_scale *sc, int causal,
                         int panel, const char *annot_fmt, const char *gid);
/* The context of an attention figure (vz_ctx_init; its query row may be
 * framed) and the colour scale of its n_panels patterns p [n_panels, T, T].
 * Errors: as vz_ctx_init, HS_ERR_NUMERIC (a value not finite), HS_ERR_INPUT
 * (an empty fixed range); then c->f is NULL. */
hs_status vz_attention_init(vz_ctx *c, const hs_viz_options *o, vz_fit *fit, const float *p,
                            size_t n_panels, size_t T, vz_scale *sc, hs_error *err);
/* The widest of the strings fmt gives over d[n] at the annotation size, px. */
int vz_annot_width(vz_ctx *c, const float *d, size_t n, const char *fmt);

/* Holds the figure to the target width (centred when narrower; refused when
 * wider, through c->fit->nofit), checks the canvas cap and hands it out
 * (c->f becomes NULL). */
hs_status vz_finish(vz_ctx *c, int W, int H, hs_viz_figure **out, hs_error *err);
/* Ends a figure whose body reaches right and bottom (px): the canvas as wide
 * as the body or its title block (title_w x title_h, vz_title_block), the
 * body centred under a wider title, the title block over it (when title_h),
 * then vz_finish on a canvas bottom + margin high. */
hs_status vz_finish_titled(vz_ctx *c, const char *title, int title_w, int title_h, int right,
                           int bottom, hs_viz_figure **out, hs_error *err);
/* Lays a figure out: validated arguments in args, options o (width_in > 0,
 * font_pt set), the fit record; ends in vz_finish(). */
typedef hs_status (*vz_build)(hs_viz_figure **out, const void *args, const hs_viz_options *o,
                              vz_fit *fit, hs_error *err);
/* Keeps the width promise for build: at the width asked (or auto_in when
 * none) with the font from font_pt down to font_min_pt; with no width asked,
 * grows to what the labels need and records auto_in as outgrown; otherwise
 * refuses naming what (e.g. "bar chart") and the width that fits. */
hs_status vz_fit_width(hs_viz_figure **out, vz_build build, const void *args,
                       const hs_viz_options *opt, double auto_in, const char *what, hs_error *err);

/* A single attention pattern [T, T] that cannot show every token label at the
 * width asked: laid out as a 1 x 1 grid with every k-th token label (or
 * none), said under the title, within the width and the height budget
 * (viz_grid.c).
 * Errors as hs_viz_attention_figure; HS_ERR_INPUT when even that does not fit. */
hs_status vz_attention_thinned(hs_viz_figure **out, const float *pattern, size_t T,
                               const char *const *tokens, const char *title,
                               const hs_viz_options *opt, hs_error *err);

/* ---- the circuit graph: viz_graph.c (checks, sizes, rows, the figure, its
 * JSON) over viz_graph_route.c (edge routes) and viz_graph_draw.c (nodes,
 * edges, arrowheads, legend); route and draw never call each other ---- */

/* Rows a graph figure may draw: a graph's rows, each wrapped onto at most
 * VZ_GRAPH_MAX_WRAP rows when its columns are too many for the width. */
#define VZ_GRAPH_MAX_WRAP 4
#define VZ_GRAPH_ROWS_DRAWN (VZ_GRAPH_MAX_WRAP * HS_VIZ_MAX_GRAPH_ROWS)

/* One legend entry: a sample (a line, a faint box, the q k v letters) and its words. */
typedef enum { VZ_LEG_LINE = 0, VZ_LEG_FAINT_BOX, VZ_LEG_PORTS } vz_leg_kind;
typedef struct {
    char text[64];
    vz_leg_kind kind;
    double width_px; /* a line's width */
    int dashed;
    unsigned char rgb[3];
} vz_leg_item;

/* A graph figure's plan: which nodes are the circuit's, the boxes, rows,
 * columns and the edges' routes. */
typedef struct {
    vz_ctx *c;
    const hs_viz_graph *g;
    int R, C;
    unsigned char *strong;    /* [n_nodes] in the circuit (drawn over the edges) */
    unsigned char *port_used; /* [n_nodes * 4] an edge ends at that port */
    char **shown;             /* [n_nodes] labels as shown (owned) */
    int *bx, *by, *bw, *bh;   /* [n_nodes] boxes, px */
    int colw;                 /* a column node's box width */
    int left, pitch, span;    /* the columns' left edge, pitch, total width */
    int *rtop, *rbot;         /* [R] each row's band (canvas y, top down) */
    int *gap_h;               /* [R] the gap's height above row r (r < R - 1), px */
    int *chan;                /* [n_edges] the column boundary an edge climbs in, -1 none */
    double *y1, *y2, *xc;     /* [n_edges] its tracks: leaving, arriving (y); climbing (x) */
    double *xs, *xr;          /* [n_edges] where it leaves its sender and enters its receiver */
    double maxabs;
    int mixed;                /* edges of both signs are drawn: the negative ones dashed */
    vz_leg_item leg[7];
    int n_leg, sample;        /* legend entries, a sample's length */
} vz_gplan;

/* An arrowhead's half-width and length (px) on an edge w px wide: 0.75 w +
 * 0.6 pt each side (at least 1.5 pt), so it stands out of the thickest
 * edge (3 pt: 2.85 pt) and shows on the thinnest; 1.5 times as long, at
 * least 3 pt (its tip at the receiver's port, the edge's stroke ending
 * inside it). */
static inline double vz_arrow_half(const vz_ctx *c, double w)
{
    const double k = c->o.dpi / 72.0, h = 0.75 * w + 0.6 * k;
    return h > 1.5 * k ? h : 1.5 * k;
}
static inline double vz_arrow_len(const vz_ctx *c, double w)
{
    const double k = c->o.dpi / 72.0, l = 1.5 * vz_arrow_half(c, w);
    return l > 3.0 * k ? l : 3.0 * k;
}

/* viz_graph_route.c: edges never cross a box but their own two. Each sets
 * the plan's route arrays from its boxes (bx.., rtop, rbot). */
/* Every edge's ends at its sender's top centre and its receiver's port (or
 * bottom centre). */
void vz_graph_centre_ends(vz_gplan *p);
/* The channel of every edge that skips rows and the tracks each gap needs:
 * tracks[R]. */
void vz_graph_route_channels(vz_gplan *p, int *tracks);
/* Spreads the edges leaving (entering a node of one input) one node over
 * its top (bottom). HS_ERR_NOMEM or HS_OK. */
hs_status vz_graph_route_ends(vz_gplan *p);
/* Every edge's tracks and lane; wmax: the widest edge, px (lines kept half
 * of it off the boxes, arriving runs an arrowhead of it under the row).
 * HS_ERR_NOMEM or HS_OK. */
hs_status vz_graph_route_lanes(vz_gplan *p, double wmax);

/* viz_graph_draw.c. */
/* "", "q", "k", "v": a port's letter (hs_viz_port). */
extern const char *const VZ_PORT_NAME[4];
/* An edge's colour: the diverging map's end of its sign. */
void vz_graph_sign_rgb(float s, unsigned char rgb[3]);
/* An edge's width in points: HS_VIZ_EDGE_MIN_PT + (MAX - MIN) |score| / maxabs. */
double vz_graph_edge_pt(double abs_score, double maxabs);
/* The legend's entries (p->leg): the signs present, the weakest and
 * strongest |score|, a faint box when a node is outside the circuit, the
 * q k v letters when a head of the circuit has one. */
void vz_graph_plan_legend(vz_gplan *p);
/* The nodes outside the circuit, the edges weakest first (each with its
 * arrowhead), the circuit's nodes over them. HS_ERR_NOMEM or HS_OK. */
hs_status vz_graph_add_body(vz_gplan *p);
/* The legend under the graph from y, wrapping at the columns' width;
 * returns its bottom; *st the status. */
int vz_graph_add_legend(vz_gplan *p, int y, hs_status *st);

/* ---- utf-8 (viz_layout.c, over common's hs_utf8_decode) ---- */
/* Number of code points in valid UTF-8 s. */
size_t vz_utf8_len(const char *s);

/* ---- rendering (viz_render.c) ---- */
/* Hatching of masked cells: dark lines x + y = k * spacing (canvas px), of
 * width px, for a cell of side cell px; the same in PNG, PDF and SVG. */
extern const unsigned char VZ_HATCH_RGB[3];
void vz_hatch_geometry(int cell, double *spacing, double *width);
/* Draws the figure on cr in its pixel units (the caller sets the scale):
 * white background, then group by group its rectangles, curves and texts. */
void vz_render(cairo_t *cr, const hs_viz_figure *f);
/* The figure drawn into a new RGB24 cairo image surface (caller destroys).
 * Errors: HS_ERR_NOMEM. */
hs_status vz_render_image(const hs_viz_figure *f, cairo_surface_t **out, hs_error *err);

/* base64 (RFC 4648, with padding) of n bytes into a malloc'd string; NULL on
 * OOM. The one encoder of the page's packed data and the SVG's images
 * (viz_html.c). */
char *vz_base64(const unsigned char *p, size_t n);

/* The panel of heatmap cells of rects[first] (a VZ_R_CELL; the cells and
 * masked cells of its group and panel from there on, of one size on one
 * grid) as an image of one pixel per cell (masked and absent cells
 * transparent: masked ones are hatched on their own), what PDF and SVG
 * draw scaled up without smoothing; *x0, *y0 its top left, *cell the cell
 * side (px), *R x *C its size. Marks the plain cells in done (when not
 * NULL). NULL when the cells are not one grid or memory ran out (draw them
 * one by one). The caller destroys the surface. (viz_render.c) */
cairo_surface_t *vz_cells_image(const hs_viz_figure *f, size_t first, unsigned char *done,
                                int *x0, int *y0, int *cell, int *R, int *C);

/* ---- PNG (viz_png.c) ---- */
/* PNG encoder settings (the bench compares them; the library uses the defaults). */
typedef struct {
    int level;    /* zlib level 0..9 */
    int strategy; /* zlib strategy (Z_DEFAULT_STRATEGY, Z_RLE, ...) */
    int filter;   /* PNG_FILTER_* mask: one bit is that filter for every row;
                   * several, per row the one of least sum of |signed byte|
                   * (libpng's heuristic; ties to the lower filter type) */
} vz_png_params;
extern const vz_png_params VZ_PNG_DEFAULT;
/* Filtered bytes (rows of 1 + 3 w) per deflate strip: the strips, and so the
 * file's bytes, depend on the image's size only, never on the thread count.
 * An image of fewer bytes is one strip, encoded on the caller's thread. */
#define VZ_PNG_STRIP_BYTES (512u * 1024u)
/* Writes rgb [h, w, 3] as a PNG with dpi in pHYs to path, atomically, its
 * strips deflated on pool (NULL: on the caller's thread; same bytes).
 * Errors as hs_viz_figure_write_png; HS_ERR_IO names zlib when it refuses
 * the settings. */
hs_status vz_png_write_rgb(const char *path, const unsigned char *rgb, int w, int h, double dpi,
                           const vz_png_params *pp, hs_pool *pool, hs_error *err);

/* ---- HTML (viz_html.c) ---- */
/* The page's packed form of attention [H, T, T] (hs_viz_attention_json_packed):
 * {"dtype": "float32", "shape": [H, T, T], "causal": bool, "base64": "..."},
 * the float32 values little-endian, base64 (RFC 4648); when every src > dest
 * value is exactly 0, causal is true and only the cells src <= dest are
 * stored, row by row (row d holds d + 1 values). NULL on OOM. */
cJSON *vz_attention_packed(const float *attention, size_t H, size_t T);

/* ---- title markup (viz_markup.c; hs_viz_options.title_markup) ---- */
/* Width (px, rounded up) of marked-up s with base size px, its runs
 * measured as drawn. */
int vz_markup_width(vz_ctx *c, const char *s, double px);
/* Marked-up s as runs, each a text item (anchored at its start): the base
 * text's box top-left at (x, y), scripts at 0.7 px lowered 0.25 em or
 * raised 0.35 em from its baseline. HS_ERR_NOMEM or HS_OK. */
hs_status vz_add_markup(vz_ctx *c, const char *s, double px, int x, int y, vz_role role,
                        const unsigned char rgb[3]);

#endif /* HS_VIZ_INTERNAL_H */
