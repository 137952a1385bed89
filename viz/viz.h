/*
 * viz/viz.h -- figures, data files and terminal rows for headscope.
 *
 * Owns: turning plain arrays + labels + titles into
 *   - figures as PNG (drawn by cairo; rows deflated by zlib in strips on the
 *     worker pool, libpng writing the chunks with the dpi in pHYs),
 *     PDF (cairo; the font embedded as a subset) and SVG (written here: text
 *     as <text>, a <g id> per panel, the colour bar as one gradient), all
 *     three from one display list, so they show the same picture. Text is
 *     DejaVu Sans shaped by HarfBuzz (kerning on) and every output draws the
 *     glyph positions the layout measured;
 *   - JSON (cJSON) holding every number behind a figure, with tokens, shapes
 *     and titles; attention in the shape CircuitsVis' attention_heads() takes,
 *   - the chapter's terminal rows (`L0  the:0.00 animal:0.70 ...`).
 * May call: common/common.h (status, errors, atomic writes, text, the worker
 * pool), cairo, HarfBuzz, libpng, zlib, libdeflate (adler32), fontconfig, cJSON, libc. It never sees a model: it does
 * not include model/, probe/ or tasks/.
 *
 * Numbering (DESIGN.md): layers, heads and positions count from 0.
 *
 * Shapes legend: T = number of tokens, H = heads per layer, L = layers,
 * R x C = rows x columns of a signed matrix, N = number of bars, n_nodes and
 * n_edges = a graph's nodes and edges.
 * Every array is row-major float32 and is only read.
 *
 * Figures are built in two steps: a pure step lays the figure out into an
 * hs_viz_figure (a display list of rectangles, gradients, hatched cells, curves and
 * shaped text runs in groups, in pixel units at the chosen dpi), then an edge
 * step writes it as PNG, PDF or SVG (or rasterises it into an RGB buffer).
 *
 * Width is a promise (hs_viz_options.width_in): the PDF and SVG are exactly
 * that wide, the PNG to a pixel (its pHYs states the width to the nearest
 * pixel per metre), and the figure shows every token label, header and
 * annotation asked for; labels are never thinned, dropped or shrunk below
 * font_min_pt. The PDF and SVG are laid out at 600 dpi whatever the dpi, so
 * their size does not move with it (the PNG is laid out at its dpi: the two
 * agree to its pixel rounding). A grid without a layout asked takes the first
 * of the caller's arrangement and those of fewer columns that fits the width.
 * When the labels cannot fit, the call fails with one line naming the width
 * that fits (and the largest font size, never under HS_VIZ_FONT_FLOOR_PT,
 * that fits the width asked). With width_in = 0 a
 * single panel or bar chart is a column wide (HS_VIZ_COLUMN_IN) and a grid a
 * page (HS_VIZ_PAGE_IN), wider only when its labels need it (at font_pt;
 * hs_viz_figure_grown_from_in then says which default it outgrew), up to
 * HS_VIZ_GRID_MAX_IN. A line plot with width_in = 0 has a 4.5 in plot and
 * wraps its title to that. Values written in cells and at bars are 0.8 x the label
 * size but never under 6 pt (unless the labels are).
 *
 * Caps (documented limits; inputs beyond them get HS_ERR_INPUT):
 *   tokens per axis 1..HS_VIZ_MAX_TOKENS, layers 1..HS_VIZ_MAX_LAYERS,
 *   heads 1..HS_VIZ_MAX_HEADS, bars 1..HS_VIZ_MAX_BARS. Labels are UTF-8;
 *   labels longer than HS_VIZ_MAX_LABEL code points are shortened to
 *   HS_VIZ_MAX_LABEL - 1 code points plus "…" in figures (JSON keeps them
 *   whole), and a special token `<|NAME|>` is shown as `⟨name⟩` in every
 *   figure (GPT-2's `<|endoftext|>` BOS as `⟨bos⟩`; JSON keeps the token). Grids label their outer axes (shared axes: every token left of
 *   each row of panels and under the lowest panel of each column; L<l> row
 *   and H<h> column headers, or each panel named over it when rearranged).
 *   A canvas is at most HS_VIZ_MAX_PX pixels on a side.
 *
 * Errors: every function returns hs_status (HS_OK = 0) and, on failure,
 * fills the caller's hs_error with one line naming the problem. Nothing
 * prints or exits. Writes are atomic (temp file + rename): on failure the
 * file at the path is left as it was.
 */
#ifndef HS_VIZ_H
#define HS_VIZ_H

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "common/common.h"

#define HS_VIZ_MAX_TOKENS 128
#define HS_VIZ_MAX_LAYERS 32
#define HS_VIZ_MAX_HEADS 32
#define HS_VIZ_MAX_BARS 256
#define HS_VIZ_MAX_LABEL 24   /* code points shown in a figure label */
#define HS_VIZ_MAX_WHOLE_LABEL 48 /* ... with hs_viz_options.whole_labels */
#define HS_VIZ_GRID_MAX_IN 24.0 /* inches: the widest figure (asked or grown to) */
#define HS_VIZ_MAX_PX 16384   /* pixels: canvas cap per side */
#define HS_VIZ_COLUMN_IN 3.25 /* inches: one column of a two-column paper */
#define HS_VIZ_PAGE_IN 6.75   /* inches: the text width of a page */
#define HS_VIZ_FONT_FLOOR_PT 6.0 /* points: the smallest text a hint suggests */
#define HS_VIZ_MAX_HEIGHT_IN 9.0 /* inches: the tallest grid drawn without a layout asked
                                    (hs_viz_options.max_height_in) */

/* Colour maps. DEFAULT = viridis for [0,1]-style data (attention),
 * diverging blue-white-red for signed data. */
typedef enum {
    HS_VIZ_CMAP_DEFAULT = 0,
    HS_VIZ_CMAP_VIRIDIS,   /* sequential, perceptually uniform (matplotlib's table) */
    HS_VIZ_CMAP_GREYS,     /* sequential, white (low) to black (high) */
    HS_VIZ_CMAP_DIVERGING, /* blue (negative) - white (0) - red (positive), ColorBrewer RdBu */
} hs_viz_cmap;

/* Value range of the colour scale. */
typedef enum {
    HS_VIZ_RANGE_FIXED = 0, /* [vmin, vmax] from the options (default [0, 1];
                               signed figures use [-vmax, vmax] with vmax > 0) */
    HS_VIZ_RANGE_AUTO,      /* per figure: [min, max] of the data (signed:
                               [-m, m] with m = max |value|, so 0 stays white) */
} hs_viz_range;

/* Options a paper figure needs. Fill with hs_viz_options_default() and
 * change fields. Strings are borrowed for the duration of the call. */
typedef struct {
    double dpi;            /* pixels per inch; recorded in the PNG (pHYs). Default 300; 36..1200 */
    double width_in;       /* figure width, inches, a promise: the PDF and SVG are exactly this
                              wide, the PNG to one pixel, with every label, or the call fails with
                              HS_ERR_INPUT naming the width that fits (and the largest font
                              size that fits this one). 0 = auto: HS_VIZ_COLUMN_IN for one
                              panel or a bar chart, HS_VIZ_PAGE_IN for a grid, wider only when
                              the labels need it at font_pt. 0..HS_VIZ_GRID_MAX_IN */
    double font_pt;        /* label font size, points (title is 1.2x). Default 8; 4..36 */
    double font_min_pt;    /* when the labels do not fit at font_pt, smaller sizes down to this
                              one are tried (0.5 pt steps) before the width is refused or grown;
                              0 or >= font_pt = font_pt only. Default 6 */
    const char *value_label; /* the quantity (and unit) the colour bar shows, e.g. "logit";
                              NULL = "attention weight" for attention figures, none otherwise */
    int highlight_row;     /* attention figures: a frame around this destination row (the
                              query position) in every panel, named in the legend ("query
                              row"); -1 (default) = none */
    const char *note;      /* one line under the title in dark red, e.g. why the numbers are
                              not usable; NULL = none */
    hs_viz_cmap cmap;      /* colour map; DEFAULT picks per figure kind */
    hs_viz_range range;    /* FIXED or AUTO, see hs_viz_range */
    double vmin, vmax;     /* the FIXED range; defaults 0 and 1 */
    int annotate;          /* nonzero: write each cell's value in the cell (%.2f;
                              signed %.2g); cells grow to hold them (part of the width promise) */
    int causal_mask;       /* attention figures: nonzero (default) draws src > dest
                              as masked (light lilac HS_VIZ_MASK_RGB with dark hatching, so
                              grey print tells it from every value), with a legend swatch */
    const char *font_path; /* TrueType font; NULL = $HS_FONT, then fontconfig's
                              "DejaVu Sans", then /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf */
    struct hs_viz_font *font; /* an opened font (hs_viz_font_open) used instead of font_path:
                              borrowed; each figure keeps its own reference. NULL (default) =
                              font_path is opened for each layout */
    int log_x;             /* line plots (hs_viz_lines_figure): nonzero puts x on a log10 axis
                              (every x must be > 0); other figures ignore it. Default 0 */
    int markers_only;      /* line plots: nonzero draws each point as its marker with no line
                              joining it to the next (a scatter: points that are not samples
                              of one curve, e.g. models of other shapes); other figures
                              ignore it. Default 0 */
    int y_cover;           /* line plots: nonzero makes a panel's ymin < ymax a range the axis
                              covers rather than fixes: [min(ymin, data), max(ymax, data)],
                              padded by 5% (faithfulness: [min(0, f), max(1, f)]). Default 0 */
    double mark_y;         /* a reference value on the value axis. Line plots: a dashed
                              horizontal line at y = mark_y through every panel whose range
                              holds it (e.g. faithfulness 1, the full model). Bar charts: a
                              dashed black line across the bars at the value mark_y, the
                              axis widened to hold it (e.g. the ladder's unigram
                              perplexity). NAN (default) = none */
    const char *mark_y_label; /* the text at mark_y's line: line plots at its left end above
                              it, bar charts over the bars centred on it; NULL (default) =
                              none */
    int whole_labels;      /* nonzero: labels (names a program writes, e.g. the ladder's
                              rows) shown whole up to HS_VIZ_MAX_WHOLE_LABEL code points
                              rather than shortened past HS_VIZ_MAX_LABEL. Default 0 */
    size_t layout_rows, layout_cols; /* grids (hs_viz_grid_figure*): the panels in rows x cols
                              slots filled row by row, each panel named over it (the
                              caller's L x H keeps its row and column headers); rows x cols
                              must hold the panels with no row empty. 0 x 0 (default) = the
                              caller's L x H when it fits the width, else the first of
                              fewer columns that does (8 heads at a column: 4 x 2) */
    int title_markup;      /* nonzero: the title's "_{...}" is drawn as a subscript (0.7x
                              the title's size, lowered 0.25 em) and "^{...}" as a
                              superscript (0.7x, raised 0.35 em), e.g. "W_{E} W_{QK} W_{E}^{T}";
                              an unclosed brace and everything else stay literal. Only for
                              titles a program writes: 0 (default) draws the title as it is
                              (titles holding tokens or a user's --title) */
    int grey_accents;      /* nonzero: the accents (masked cells' fill under their hatching,
                              the query row's frame) are grey as under cmap GREYS whatever
                              map the cells take: a signed figure under the CLI's --cmap
                              greys keeps its blue-white-red cells (a sequential map would
                              hide the sign) and the rest of it prints grey. Default 0 */
    double max_height_in;  /* grids with no layout asked: the tallest figure an arrangement
                              may make (a page's text height); when every arrangement that
                              shows every token label is taller (GPT-2's 144 heads: 36 x 4
                              panels, 59 in), the caller's L x H is drawn with every k-th
                              token label (the smallest k whose labels do not meet, labels
                              that would meet a neighbour panel's left out), said in the
                              note under the title, or as unlabelled thumbnails.
                              0 (default) = HS_VIZ_MAX_HEIGHT_IN */
    int magnitude;         /* bar charts: nonzero for a quantity with no sign (a perplexity,
                              a loss, a count): every bar one neutral grey, value labels
                              without "+", the axis from 0; a negative value is HS_ERR_INPUT.
                              0 (default): signed bars, red >= 0 and blue < 0 */
    int bars_add_up;       /* bar charts held to the height budget: nonzero when the bars are
                              terms of one sum (DLA: they add up to the logit difference), so
                              the bars left out are drawn as one bar "other n" of their sum;
                              0 (default): they are left out, "not shown" in the note */
} hs_viz_options;

/* Fills o with the defaults above. */
void hs_viz_options_default(hs_viz_options *o);

/* The font file every figure would use for font_path (NULL = the search
 * above: $HS_FONT, the Debian path /usr/share/fonts/truetype/dejavu/
 * DejaVuSans.ttf when it is there, else fontconfig's DejaVu Sans), into a
 * malloc'd *path (caller frees). A caller drawing many figures resolves it
 * once and passes it as font_path: the fontconfig lookup costs a few ms.
 * Errors: HS_ERR_IO (no usable font), HS_ERR_NOMEM. */
hs_status hs_viz_font_path(const char *font_path, char **path, hs_error *err);

/* An opened font that many figures share (hs_viz_options.font): the file
 * read and its tables parsed once (HarfBuzz), one cairo font face, so
 * cairo's cache of rasterised glyphs outlives each figure, and one cache of
 * shaped texts by (text, size) (a layout is tried several times and labels
 * repeat across figures: inspect shapes 294 distinct texts 5170 times).
 * Figures laid out with it hold their own references, so it may be closed
 * while they live; figures sharing it may be laid out and written on several
 * threads at once. The figures are the same as with a font opened per
 * layout (font_path), pixel for pixel. */
typedef struct hs_viz_font hs_viz_font;

/* Opens the font font_path names (NULL = the search of hs_viz_font_path)
 * into *out (close with hs_viz_font_close). Errors: HS_ERR_IO (no usable
 * font, or not a scalable font), HS_ERR_NOMEM. */
hs_status hs_viz_font_open(const char *font_path, hs_viz_font **out, hs_error *err);
/* Drops the caller's reference to f (NULL is a no-op): figures laid out with
 * it keep theirs. */
void hs_viz_font_close(hs_viz_font *f);

/* Maps t in [0, 1] (clamped; NaN -> 0) through colour map cmap (DEFAULT =
 * viridis) into rgb[3]. The 256-entry table lookup used by every figure:
 * index = round(t * 255). */
void hs_viz_cmap_rgb(hs_viz_cmap cmap, double t, unsigned char rgb[3]);

/* The colour of masked cells (causal src > dest, unreported): a light lilac no colour map has. */
extern const unsigned char HS_VIZ_MASK_RGB[3];

/* ------------------------------------------------------------------------ */
/* Figures                                                                  */

/* A laid-out figure: rectangles and text items in pixels. Opaque; free with
 * hs_viz_figure_destroy(). */
typedef struct hs_viz_figure hs_viz_figure;

/* One head's attention pattern.
 * pattern: [T, T] = [dest (query), src (key)], weights in [0, 1] (not checked
 *          against the range; values outside are clamped to the colour bar).
 *          Cells with src > dest are drawn as masked when opt->causal_mask;
 *          their values are ignored (may be 0, NaN or anything).
 * tokens:  T UTF-8 labels (destination labels on the left axis, source labels
 *          rotated 90 degrees under the map). title: UTF-8, may be NULL,
 *          e.g. "L1H3 attention".
 * opt: NULL = defaults. When every token label cannot be shown at a width
 * asked of a column or more (and no --annotate), every k-th label is drawn
 * (or none) with a note under the title saying so, within the width and the
 * height budget (issue 35: a 20-token GPT-2 head in a column).
 * On success *out is a new figure (caller destroys).
 * Errors: HS_ERR_INPUT (T out of 1..HS_VIZ_MAX_TOKENS, NULL or invalid UTF-8
 * label, bad option), HS_ERR_NUMERIC (non-finite unmasked value),
 * HS_ERR_IO (no usable font), HS_ERR_NOMEM. */
hs_status hs_viz_attention_figure(hs_viz_figure **out, const float *pattern, size_t T,
                                  const char *const *tokens, const char *title,
                                  const hs_viz_options *opt, hs_error *err);

/* A layers x heads grid of attention patterns sharing one colour scale.
 * patterns: [L, H, T, T] = [layer, head, dest, src]. Row headers L0.., column
 * headers H0..; tokens label the outer axes only. opt->layout_rows x
 * layout_cols puts the L * H panels in that arrangement (row by row, each
 * named over it); without one, the first of L x H and the arrangements of
 * fewer columns (C columns, ceil(L * H / C) rows, fewer empty slots than rows)
 * that fits the width is drawn, and with no width asked and none fitting the
 * default, L x H grows. Other arguments and errors as hs_viz_attention_figure
 * (L in 1..HS_VIZ_MAX_LAYERS, H in 1..HS_VIZ_MAX_HEADS); a layout that does not
 * suit the panels (rows x cols must hold them, at most L * H rows and columns,
 * no row empty): HS_ERR_CONFIG, so a caller stops rather than skip the figure. */
hs_status hs_viz_grid_figure(hs_viz_figure **out, const float *patterns, size_t L, size_t H,
                             size_t T, const char *const *tokens, const char *title,
                             const hs_viz_options *opt, hs_error *err);

/* As hs_viz_grid_figure, with the headers given: row_headers L labels (NULL =
 * "L0".."L<L-1>"), col_headers H labels (NULL = "H0".."H<H-1>"); an empty
 * string leaves that header out. For a selection of heads shown side by side
 * (a paper's L1H0 and L0H1): L = 1, row_headers = {""}, col_headers = the
 * head names. Errors as hs_viz_grid_figure. */
hs_status hs_viz_grid_figure_labeled(hs_viz_figure **out, const float *patterns, size_t L,
                                     size_t H, size_t T, const char *const *tokens,
                                     const char *const *row_headers,
                                     const char *const *col_headers, const char *title,
                                     const hs_viz_options *opt, hs_error *err);

/* A signed matrix (virtual weights, composition scores, attributions) with a
 * diverging colour map centred on zero (opt->cmap DEFAULT = diverging).
 * m: [R, C] row-major. row_labels: R labels (left axis), col_labels: C labels
 * (rotated, under the map); xlabel/ylabel: axis titles, may be NULL (the
 * y title along the map, rotated, or level over the row labels when it is
 * longer than the map is tall: a lens's 3 rows).
 * Range: AUTO = [-max|m|, max|m|] (default for this figure when opt is NULL),
 * FIXED = [-opt->vmax, opt->vmax]. Errors as above (R, C in 1..HS_VIZ_MAX_TOKENS). */
hs_status hs_viz_signed_figure(hs_viz_figure **out, const float *m, size_t R, size_t C,
                               const char *const *row_labels, const char *const *col_labels,
                               const char *title, const char *xlabel, const char *ylabel,
                               const hs_viz_options *opt, hs_error *err);

/* As hs_viz_signed_figure, with masked cells: mask [R, C] (NULL = none), nonzero = not
 * reported (e.g. a composition score of a within-layer pair); those cells are
 * drawn like causally masked attention (HS_VIZ_MASK_RGB, "masked" legend swatch) and
 * their values are ignored (may be NaN); they do not count for the AUTO range. */
hs_status hs_viz_signed_figure_masked(hs_viz_figure **out, const float *m,
                                      const unsigned char *mask, size_t R, size_t C,
                                      const char *const *row_labels,
                                      const char *const *col_labels, const char *title,
                                      const char *xlabel, const char *ylabel,
                                      const hs_viz_options *opt, hs_error *err);

/* A non-negative matrix (mean attention rows, weight norms) with a sequential
 * colour map from 0 (opt->cmap DEFAULT or DIVERGING = viridis; GREYS kept).
 * Arguments as hs_viz_signed_figure. Range: FIXED = [opt->vmin, opt->vmax]
 * (defaults [0, 1], right for attention), AUTO = [0, max value] (default
 * when opt is NULL). Annotations %.2f. Errors as hs_viz_signed_figure. */
hs_status hs_viz_matrix_figure(hs_viz_figure **out, const float *m, size_t R, size_t C,
                               const char *const *row_labels, const char *const *col_labels,
                               const char *title, const char *xlabel, const char *ylabel,
                               const hs_viz_options *opt, hs_error *err);
/* As hs_viz_matrix_figure with masked cells (mask [R, C] or NULL, nonzero = not
 * reported), drawn and handled as in hs_viz_signed_figure_masked. */
hs_status hs_viz_matrix_figure_masked(hs_viz_figure **out, const float *m,
                                      const unsigned char *mask, size_t R, size_t C,
                                      const char *const *row_labels,
                                      const char *const *col_labels, const char *title,
                                      const char *xlabel, const char *ylabel,
                                      const hs_viz_options *opt, hs_error *err);

/* A horizontal bar chart of per-component contributions (e.g. direct logit
 * attribution). values: [N], labels: N component names ("embed", "L0H1",
 * "mlp0", ...) on the left; positive bars point right in red, negative left
 * in blue, each with its value at its end (one number of decimals per chart:
 * 3 significant digits for the largest |value|, 0..4 decimals; scientific
 * notation when the largest |value| is below 1e-3 or from 1e5); a zero line;
 * x ticks as many as fit without meeting. The axis is fitted to the data
 * (rounded out to a tick); an explicit FIXED [vmin, vmax] widens it, never clips.
 * xlabel: axis title (units), may be NULL. Held to the height budget
 * (opt->max_height_in, default HS_VIZ_MAX_HEIGHT_IN): a chart taller than it
 * shows the largest bars by |value| in their order, as many as fit, and
 * says so in the note under the title: with opt->bars_add_up the k - 1
 * largest and one bar "other n" summing the rest (GPT-2's 172 DLA
 * components: 44 and the other 128 summed), else the k largest and "the
 * other n not shown" (separate runs or scores, whose sum means nothing).
 * Errors as above (N in 1..HS_VIZ_MAX_BARS). */
hs_status hs_viz_bars_figure(hs_viz_figure **out, const float *values, size_t N,
                             const char *const *labels, const char *title, const char *xlabel,
                             const hs_viz_options *opt, hs_error *err);

/* Rows of many heads as layers x heads blocks (inspect's query row of GPT-2's
 * 144 heads, over the HS_VIZ_MAX_TOKENS rows of one matrix): rows [L * H, S]
 * (head l * H + h's row over S sources, attention weights), one block of H
 * rows x S columns per layer named "L<l>" over it, the blocks in the
 * arrangement (columns of blocks from L down to 1) whose square cells are
 * largest within the width (default a page, HS_VIZ_PAGE_IN) and the height
 * budget (opt->max_height_in, default HS_VIZ_MAX_HEIGHT_IN); head names H<h>
 * left of each row of blocks, col_labels [S] under the lowest block of each
 * column, every k-th of both (the smallest k whose labels fit the cells)
 * with a note under the title when they cannot all be shown; a horizontal
 * colour bar under them (opt's cmap and range, as hs_viz_matrix_figure).
 * xlabel may be NULL. Errors: HS_ERR_INPUT (NULL rows, L, H or S out of
 * 1..HS_VIZ_MAX_LAYERS / _HEADS / _TOKENS, bad labels, an empty fixed range,
 * no cell of a pixel at the width), HS_ERR_NUMERIC (a value not finite),
 * HS_ERR_NOMEM. */
hs_status hs_viz_rows_blocks_figure(hs_viz_figure **out, const float *rows, size_t L, size_t H,
                                    size_t S, const char *const *col_labels, const char *title,
                                    const char *xlabel, const hs_viz_options *opt, hs_error *err);

/* A value as a figure's title states it (the bar charts' and ticks' rules):
 * three decimals for 1e-3 <= |v| < 1e5 and for 0, else scientific with
 * four significant digits and a short exponent ("8.302e30", not the 31
 * digits %.3f writes for a logit of 1e30 scale), a minus as U+2212, no sign
 * on a value that prints as zero. Writes at most n bytes (n >= 24 holds any
 * double). */
void hs_viz_fmt_value(char *buf, size_t n, double v);

/* Canvas size in pixels, and the dpi it was laid out for. */
size_t hs_viz_figure_width(const hs_viz_figure *f);
size_t hs_viz_figure_height(const hs_viz_figure *f);
double hs_viz_figure_dpi(const hs_viz_figure *f);

/* Pure rasterisation: *rgb = malloc'd [height, width, 3] bytes (caller frees),
 * *w and *h its size. Errors: HS_ERR_NOMEM. */
hs_status hs_viz_figure_rgb(const hs_viz_figure *f, unsigned char **rgb, size_t *w, size_t *h,
                            hs_error *err);

/* Writes the figure as an 8-bit RGB PNG with its dpi in pHYs, atomically.
 * cairo draws it; its rows are deflated in strips of a size fixed by the
 * image (viz_png.c) as jobs on pool, or on the caller's thread when pool is
 * NULL: the file's bytes are the same for any pool. Must not be called from
 * inside a job of the same pool (hs_pool_for is not reentrant: pass NULL
 * there). Errors: HS_ERR_IO (path unwritable, a libpng, zlib or disk error),
 * HS_ERR_NOMEM. */
hs_status hs_viz_figure_write_png(const hs_viz_figure *f, const char *path, hs_pool *pool,
                                  hs_error *err);

/* The figure as an SVG document: *svg = malloc'd NUL-terminated text (caller
 * frees), *len its length. <title> (the figure's title) and <desc>; one <g>
 * per group with its id ("panel" or the grid's "L1H0" ..., "labels", "axes",
 * "colorbar", "legend", "title"); a panel's cells are one <g class="cells"
 * data-panel data-rows data-cols>: a <path> square per plain cell in its
 * colour, then masked cells as <rect class="masked" data-panel data-row
 * data-col> filled with one hatch <pattern>, each square grown by half a
 * cell under the neighbours written after it (no viewer shows seams between
 * cells, and no renderer smooths them); the colour bar is one <rect> filled
 * with one <linearGradient> (the map's entries within 1/255); each label one <text> (class "xtick", "ytick", "title",
 * "header", "cbar", "axis", "annot", "label", "value"), XML-escaped.
 * Errors: HS_ERR_NOMEM. */
hs_status hs_viz_figure_svg(const hs_viz_figure *f, char **svg, size_t *len, hs_error *err);

/* Appends s to b as XML 1.0 character data or attribute value: & < > " ' as
 * entities, and every code point XML 1.0 (or a conforming reader) refuses or
 * discourages as U+FFFD: controls other than tab, LF and CR (C0, DEL, C1),
 * noncharacters (U+FDD0..U+FDEF, U+xxFFFE/U+xxFFFF), and each byte that is
 * not UTF-8. Everything else (private use, format, bidi) is kept as is, so the
 * output is well-formed whatever a label holds. The one XML escaping of
 * every SVG (and HTML) headscope writes. Same returns as hs_buf_append. */
int hs_viz_xml_escape(hs_buf *b, const char *s);

/* Writes the figure as a one-page PDF (cairo) of exactly the figure's
 * physical size (media box = width / dpi inches), each heatmap panel one
 * image of a pixel per cell scaled with nearest-neighbour filtering (no
 * seams between cells in any viewer), text with the font embedded as a
 * subset, the title in the document info, atomically.
 * Shows the same picture as the PNG. The creation date is the time of
 * writing, or SOURCE_DATE_EPOCH (seconds since 1970 UTC, the
 * reproducible-builds convention) when that is set: the same figure is then
 * the same bytes. Errors: HS_ERR_IO, HS_ERR_NOMEM. */
hs_status hs_viz_figure_write_pdf(const hs_viz_figure *f, const char *path, hs_error *err);

/* Writes hs_viz_figure_svg()'s text to path atomically. Errors: HS_ERR_IO, HS_ERR_NOMEM. */
hs_status hs_viz_figure_write_svg(const hs_viz_figure *f, const char *path, hs_error *err);

/* Frees a figure; NULL is allowed. */
void hs_viz_figure_destroy(hs_viz_figure *f);

/* The default width (inches) a figure outgrew: > 0 when no width was asked
 * and the kind's default (column or page) could not hold every label at the
 * font size, so the figure came out wider (its width is f's canvas width /
 * dpi); 0 when it kept its default or a width was asked. The CLI says so. */
double hs_viz_figure_grown_from_in(const hs_viz_figure *f);
/* The size, pt, f's labels (ticks, headers, axis titles, notes) were laid
 * out at: font_pt, or the smaller size vz_fit_width took to fit the width
 * (font_min_pt..font_pt); 0 for NULL or a figure without labels. A command
 * drawing several figures reads it off the first to draw the rest at that
 * one size (inspect: one font size per run). */
double hs_viz_figure_label_pt(const hs_viz_figure *f);

/* The figure's width in inches: the width asked (what the PDF and SVG are),
 * else canvas px / dpi. */
double hs_viz_figure_width_in(const hs_viz_figure *f);

/* ------------------------------------------------------------------------ */
/* JSON (cJSON). Numbers are written with the fewest digits (up to 9
 * significant) that read back as the same float32, so parse -> (float) gives
 * the array back exactly. Non-finite values are refused (HS_ERR_NUMERIC). */

/* The attention object: {"title": ..., "shape": [heads, T, T],
 * "tokens": [...], "attention": [head][dest][src] (masked zeros included),
 * "attention_head_names": [...]}. The last three are CircuitsVis'
 * attention_heads(attention, tokens, attention_head_names) arguments.
 * attention: [n_heads, T, T]; head_names: n_heads names ("L0H0", ...), or
 * NULL for "H0".."H<n-1>"; title may be NULL. *out: new cJSON object (caller
 * frees with cJSON_Delete); callers may add keys (e.g. the model config).
 * Errors: HS_ERR_INPUT, HS_ERR_NUMERIC, HS_ERR_NOMEM. */
hs_status hs_viz_attention_json(cJSON **out, const float *attention, size_t n_heads, size_t T,
                                const char *const *tokens, const char *const *head_names,
                                const char *title, hs_error *err);

/* As hs_viz_attention_json, with "attention" in the HTML page's packed form
 * (exact float32, little-endian, base64; only src <= dest when the upper
 * triangle is all zero), for data that goes into a page rather than a file:
 * at 12 heads x 12 layers x 256 tokens the nested arrays would be ~9.4 M
 * cJSON items. See hs_viz_html_page. Errors as hs_viz_attention_json. */
hs_status hs_viz_attention_json_packed(cJSON **out, const float *attention, size_t n_heads,
                                       size_t T, const char *const *tokens,
                                       const char *const *head_names, const char *title,
                                       hs_error *err);

/* A signed matrix: {"title", "shape": [R, C], "row_labels", "col_labels",
 * "xlabel", "ylabel", "values": [R][C]}. m: [R, C]. As above. */
hs_status hs_viz_signed_json(cJSON **out, const float *m, size_t R, size_t C,
                             const char *const *row_labels, const char *const *col_labels,
                             const char *title, const char *xlabel, const char *ylabel,
                             hs_error *err);

/* As hs_viz_signed_json with masked cells written as null (mask [R, C],
 * nonzero = masked; their values are ignored and may be NaN). */
hs_status hs_viz_signed_json_masked(cJSON **out, const float *m, const unsigned char *mask,
                                    size_t R, size_t C, const char *const *row_labels,
                                    const char *const *col_labels, const char *title,
                                    const char *xlabel, const char *ylabel, hs_error *err);

/* Bars: {"title", "shape": [N], "labels", "xlabel", "values": [N]}. As above. */
hs_status hs_viz_bars_json(cJSON **out, const float *values, size_t N,
                           const char *const *labels, const char *title, const char *xlabel,
                           hs_error *err);

/* Writes json as common's hs_json_print prints it (the one JSON printer:
 * cJSON_Print's layout, numbers in the one float format), with a trailing
 * newline, to path atomically. json is only read. Errors: HS_ERR_IO,
 * HS_ERR_NOMEM, HS_ERR_INPUT (an item that cannot be printed). */
hs_status hs_viz_write_json(const cJSON *json, const char *path, hs_error *err);

/* ------------------------------------------------------------------------ */
/* HTML: one self-contained page (viz/html/viewer.{html,css,js},
 * viewer_graph.js and viewer_report.js, inlined at build time) that shows the JSON of one or more
 * output folders interactively: attention grids, heads and tokens, bars,
 * matrices, the circuit report, and a found circuit: a run file in the MIB /
 * EAP-IG graph.json shape ({"cfg", "nodes": {name: {"in_graph", "score"?}},
 * "edges": {"u->v<k>": {"score", "in_graph"}}}) is drawn as the graph
 * figure's layout with a threshold slider over |score|, each edge's and
 * node's score on hover or focus, and a head's attention pattern on a click
 * when a file of the run holds hs_viz_attention_json's shape
 * ("attention" [heads][T][T], "attention_head_names" "L1H0" or "a1.h0",
 * "tokens"). No request leaves the page (no CDN, no fetch): it opens from
 * file:// with no network. Its Content-Security-Policy lets only its own
 * scripts run, pinned by their SHA-256 (computed at build time,
 * cmake/embed.cmake), and forbids forms and <base>. */

/* Replaces, in place, every "attention" member of data (at any depth) that is
 * a [H][T][T] array of numbers with its packed form (see
 * hs_viz_attention_json_packed), so JSON read back from a file goes into a
 * page as compactly as data built for one. Other members are left alone.
 * Errors: HS_ERR_INPUT (an "attention" array that is ragged or holds a
 * non-number), HS_ERR_NOMEM. */
hs_status hs_viz_html_pack(cJSON *data, hs_error *err);

/* The page: *html = malloc'd NUL-terminated text (caller frees), *len its
 * length. data (only read) goes into the page as JSON under "data" with each
 * run file reduced to the members the viewer reads (an attention object's
 * "attention", "attention_head_names", "tokens", "config", "first_position",
 * "query_position", "title"; a matrix's "values", labels, axis titles and
 * "colour_scale"; ...; a graph or report whole; a file the viewer does not
 * draw left out), beside
 * "colormaps": the 256-entry tables of hs_viz_cmap_rgb for viridis, greys
 * and diverging, the line plots' series colours (hs_viz_series_rgb, 10) and
 * the masked-cell colour, as hex strings, so the page
 * colours cells exactly as the PNG/SVG figures do, and "shown": {string:
 * display form} for every string of data of at most HS_VIZ_MAX_LABEL code
 * points the figures show otherwise (their own function: `<|endoftext|>` as
 * `⟨bos⟩`), which the page shows (a longer one shortened as they do). Inside the page's
 * <script type="application/json"> element '<', '>', '&', U+2028 and U+2029
 * are written as \u escapes, so no string in data can end the element.
 * title: the page's <title> (UTF-8; HTML-escaped), may be NULL.
 * The shape of data is the viewer's contract (docs/DESIGN.md, Outputs):
 * {"runs": [{"dir", "command", "index": index.json, "files": {stem: JSON}}],
 *  "cmap": "viridis" | "greys"}.
 * Every run file is checked as the viewer will draw it, and refused in one
 * line naming it ("DIR/STEM.json: ...") and the field: an attention object
 * ("attention" [H][T][T] or packed, weights in [0, 1]; T "tokens"; H
 * "attention_head_names" when given), bars ("values" as many as "labels",
 * finite), a matrix (R rows of C numbers or null, R "row_labels", C
 * "col_labels"), line plots (each series' "y" as long as "x"), the
 * predictions ("prob" in [0, 1]).
 * Errors: HS_ERR_FORMAT (a file as above), HS_ERR_INPUT (title not UTF-8; a
 * file or the whole data over the HS_VIZ_PAGE_MAX_* limits), HS_ERR_NOMEM. */
hs_status hs_viz_html_page(char **html, size_t *len, const cJSON *data, const char *title,
                           hs_error *err);

/* Writes hs_viz_html_page()'s text to path atomically. Errors: as above, HS_ERR_IO. */
hs_status hs_viz_write_html(const cJSON *data, const char *title, const char *path,
                            hs_error *err);

/* ------------------------------------------------------------------------ */
/* Terminal rows, the chapter's format:
 *   L0  the:0.00 animal:0.70 did:0.00 not:0.00 ...
 *   L1  the:0.00 ...
 * rows: [n_rows, T] weights (e.g. head-averaged attention of one destination
 * position over its sources); row_labels: n_rows labels, or NULL for
 * "L0".."L<n-1>" (0-based layers); tokens: T labels. Each item is
 * "<token>:<value %.2f>" (the token as hs_buf_put_visible shows it: a control,
 * format, bidi or private-use character as <U+XXXX>), items separated by one space; a line longer than
 * width columns (code points; 0 = no wrapping, minimum 20) wraps, and
 * continuation lines are indented to where the items start. Every line ends
 * with '\n'. */

/* Into a malloc'd NUL-terminated string *text (caller frees), *len its length.
 * Errors: HS_ERR_INPUT (n_rows or T is 0, NULL/invalid UTF-8 label),
 * HS_ERR_NUMERIC (non-finite weight), HS_ERR_NOMEM. */
hs_status hs_viz_rows_format(char **text, size_t *len, const float *rows, size_t n_rows,
                             size_t T, const char *const *row_labels,
                             const char *const *tokens, size_t width, hs_error *err);

/* Into fp (e.g. stdout). Errors as above plus HS_ERR_IO when a write fails. */
hs_status hs_viz_rows_write(FILE *fp, const float *rows, size_t n_rows, size_t T,
                            const char *const *row_labels, const char *const *tokens,
                            size_t width, hs_error *err);

/* ------------------------------------------------------------------------ */
/* Line plots over a shared x axis (viz_lines.c), e.g. scores over training */

#define HS_VIZ_MAX_POINTS 4096 /* points per series */
#define HS_VIZ_MAX_PANELS 8

/* One panel: n_series lines over the plot's x. y: [n_series, N] (NaN = no
 * point there: the line breaks); labels: n_series legend entries (right of
 * the panel, in series order, colours hs_viz_series_rgb(i)); title and
 * ylabel may be NULL; ymin < ymax fixes the y range (values outside are
 * drawn at the edge), else the data's range padded by 5%. log_y nonzero:
 * y on a log10 axis (every y that is not NaN, and a fixed ymin, > 0; the
 * padding is 5% of the decades shown), ticks at the powers of ten (and at
 * 2 and 5 times them when fewer than three powers fall in the range). */
typedef struct {
    const float *y;
    size_t n_series;
    const char *const *labels;
    const char *title;
    const char *ylabel;
    double ymin, ymax;
    int log_y;
} hs_viz_panel;

/* The colour of series i (matplotlib's tab10, cycled). */
void hs_viz_series_rgb(size_t i, unsigned char rgb[3]);

/* Stacked panels sharing x [N] (finite, strictly increasing, e.g. training
 * steps): each a framed plot with y ticks, lines with point markers, a
 * legend; x ticks and xlabel under the last panel; mark_x (NAN = none) a
 * dashed vertical line through every panel labelled mark_label (may be NULL).
 * Width: opt->width_in (legend included); 0 = a column (HS_VIZ_COLUMN_IN)
 * for one panel, wider only when the plot would be under 1.5 in beside its
 * labels, and a 4.5 in plot for several; each panel 1.7 in.
 * opt->log_x: x on a log10 axis, ticks as a log_y panel's (e.g. time against
 * FLOPs, log-log: a power law is a straight line). opt->y_cover: a panel's
 * ymin < ymax is covered, not fixed (the range holds it and every value);
 * opt->mark_y: a dashed horizontal line at that y, labelled
 * opt->mark_y_label at its left end (e.g. faithfulness 1, "full model").
 * Errors: HS_ERR_INPUT (N out of 1..HS_VIZ_MAX_POINTS, panels out of
 * 1..HS_VIZ_MAX_PANELS, series out of 1..HS_VIZ_MAX_BARS, x not increasing,
 * bad labels, a value <= 0 on a log axis), HS_ERR_NUMERIC (non-finite x,
 * infinite y), HS_ERR_IO, HS_ERR_NOMEM. */
hs_status hs_viz_lines_figure(hs_viz_figure **out, const float *x, size_t N,
                              const hs_viz_panel *panels, size_t n_panels, const char *title,
                              const char *xlabel, double mark_x, const char *mark_label,
                              const hs_viz_options *opt, hs_error *err);

/* The numbers: {"title", "xlabel", "x": [N], "panels": [{"title", "ylabel",
 * "series": [{"label", "y": [N] (null for NaN)}]}]}. Errors as above. */
hs_status hs_viz_lines_json(cJSON **out, const float *x, size_t N, const hs_viz_panel *panels,
                            size_t n_panels, const char *title, const char *xlabel,
                            hs_error *err);

/* ------------------------------------------------------------------------ */
/* The circuit graph (viz_graph.c, viz_graph_route.c, viz_graph_draw.c): a circuit found in a model, as a layered
 * drawing a paper can use. viz knows no model: the caller places each node
 * on a row (0 = bottom) and a column and says which nodes take three inputs
 * (q, k, v: attention heads); experiments/ (hs_graph_figure) places MIB's
 * graph: input on row 0, layer l's heads a{l}.h{h} side by side on the row
 * above, its MLP m{l} in the last column on the row above them, logits on
 * top.
 *
 * The drawing: each node a labelled box. Nodes in the circuit (flagged, or
 * touched by an edge) have a dark frame and black text; the others are kept
 * faint (light grey frame and text, drawn under the edges) so the model's
 * shape stays readable and a reader can find any head. A node with ports
 * shows "q k v" under its name, and its three inputs are three points on
 * its bottom edge, under those letters (left q, middle k, right v): an edge
 * into a head's k ends under its "k" (K-composition reads at a glance), the
 * letter black when an edge ends there. Every edge given is drawn, under
 * the circuit's boxes, weakest first, routed so that it crosses no box but
 * its own two ends: it leaves its sender's top upward (the edges leaving
 * one node spread over its top), runs sideways in the gap above the
 * sender's row on a track of its own, climbs past the rows it skips in the
 * channel between two columns (the nearest with a lane to spare), and
 * rises into its receiver's port from the gap under the receiver's row (a
 * node of one input: the edges spread over its bottom); straight runs with
 * rounded corners, one stroked path per edge, ending in a filled arrowhead
 * whose tip touches the port (edges point from the earlier component to the
 * later; 0.75 w + 0.6 pt each side of an edge w wide, at least 1.5 pt, 1.5
 * times as long, at least 3 pt). The gaps between rows grow
 * with their tracks (0.04 in apart, up to twice the least gap). Colour by
 * sign: score >= 0 the diverging map's positive end (hs_viz_cmap_rgb(
 * DIVERGING, 1), dark red), score < 0 its negative end (t = 0, dark blue),
 * and when both signs are drawn the negative ones dashed (a dash at most a
 * quarter of its edge), so grey print still tells them apart. Width by |score|,
 * linear: HS_VIZ_EDGE_MIN_PT + (HS_VIZ_EDGE_MAX_PT - HS_VIZ_EDGE_MIN_PT) *
 * |score| / max |score| points (max over the edges drawn), so a wider edge
 * always has the larger |score|. A legend under the graph names the colours
 * and the widths of the weakest and strongest |score| (samples with their
 * arrowheads), the q k v letters (a sample, k and v grey: "a head's inputs
 * (grey: no edge)") when a head of the circuit is drawn, and a faint box
 * ("not in the circuit") when a node is outside it. Every text but the
 * title at the one label size (the q k v letters too).
 *
 * SVG: a <g id> per node (its name made an XML id: "a1_h0", "m1", "input")
 * and per edge ("e-" + sender + "-" + receiver, then "-" + its port for a
 * head: "e-a0_h2-a1_h0-k", "e-a1_h3-m1"), each edge one <path>.
 *
 * Width: the promise of every figure (width_in exact, labels >= font_min_pt,
 * or a refusal naming the width that fits); width_in = 0 is a column
 * (HS_VIZ_COLUMN_IN) up to 6 columns of nodes, else a page (HS_VIZ_PAGE_IN).
 * Column pitch: the width shared out; a node box fits its widest column
 * label. Height follows the rows. */

#define HS_VIZ_MAX_EDGES 1024       /* edges a graph figure draws */
#define HS_VIZ_MAX_GRAPH_ROWS (2 * HS_VIZ_MAX_LAYERS + 2)
#define HS_VIZ_MAX_GRAPH_COLS (HS_VIZ_MAX_HEADS + 1)
#define HS_VIZ_EDGE_MIN_PT 0.5      /* the width of an edge of |score| 0, points */
#define HS_VIZ_EDGE_MAX_PT 3.0      /* the width of the edge of the largest |score|, points */

/* The input of a node an edge enters: a head's q, k or v, or the one input
 * of any other node. */
typedef enum { HS_VIZ_PORT_WHOLE = 0, HS_VIZ_PORT_Q, HS_VIZ_PORT_K, HS_VIZ_PORT_V } hs_viz_port;

/* A graph to draw; every array is only read. */
typedef struct {
    size_t n_nodes;                  /* 1.. HS_VIZ_MAX_GRAPH_ROWS x HS_VIZ_MAX_GRAPH_COLS */
    const char *const *names;        /* [n_nodes] labels, UTF-8 ("a1.h0", "m1", "input") */
    const int *row;                  /* [n_nodes] 0 (bottom) .. HS_VIZ_MAX_GRAPH_ROWS - 1 */
    const int *col;                  /* [n_nodes] 0 .. HS_VIZ_MAX_GRAPH_COLS - 1, or -1:
                                        centred over every column, alone on its row */
    const unsigned char *ports;      /* [n_nodes] nonzero: q, k, v inputs (a head) */
    const unsigned char *in_circuit; /* [n_nodes] nonzero: in the circuit; NULL: the
                                        nodes an edge touches */
    size_t n_edges;                  /* 0 .. HS_VIZ_MAX_EDGES, each drawn */
    const int *from, *to;            /* [n_edges] node indices, row[from] < row[to] */
    const float *score;              /* [n_edges] finite */
    const unsigned char *port;       /* [n_edges] hs_viz_port at `to`: Q, K or V when to has
                                        ports, WHOLE when it has not */
} hs_viz_graph;

/* The circuit graph figure of g (above) with title (may be NULL; wrapped to
 * the width) and opt's width, dpi, font, font sizes and note (the colour map
 * and range options do not apply: the colours are the diverging map's ends).
 * *out: the figure (hs_viz_figure_destroy). Errors: HS_ERR_INPUT (a count,
 * row or column out of range, two nodes in one place, a label not UTF-8, an
 * edge that does not run upward or names a node that is not there, a port
 * that does not match its node, the width promise), HS_ERR_NUMERIC (a score
 * not finite), HS_ERR_IO (no font), HS_ERR_NOMEM. */
hs_status hs_viz_graph_figure(const hs_viz_graph *g, const char *title, const hs_viz_options *opt,
                              hs_viz_figure **out, hs_error *err);

/* Its numbers: {"title", "nodes": [{"name", "row", "col", "ports",
 * "in_circuit"}], "edges": [{"from", "to" (node names), "port": "q"|"k"|"v"
 * or null, "score"}], "edge_width_pt": {"min", "max", "max_abs_score"} (the
 * scale above), "colours": {"positive", "negative"} ("#rrggbb")}; in_circuit
 * as the figure draws it. *out: new cJSON object (cJSON_Delete). Errors as
 * hs_viz_graph_figure (no width or font). */
hs_status hs_viz_graph_json(const hs_viz_graph *g, const char *title, cJSON **out, hs_error *err);

/* ------------------------------------------------------------------------ */
/* Two sentences' attention rows and their difference (viz_heatmap.c)      */

/* One strip a paper prints for a pair of sentences (the chapter's tired /
 * wet rows): rows [R1, C] on the attention scale (opt's cmap, vmin/vmax or
 * the rows' range under AUTO, value_label or "attention": one line beside
 * a few rows, level over the bar when even that is longer; no causal
 * mask), and under it, after a gap, diff [R2, C] on the diverging map
 * [-diff_lim, diff_lim] (its colour bar labelled diff_label, may be NULL);
 * the two colour bars side by side on the right. row_labels R1 and
 * diff_labels R2 on the left, col_labels C (rotated) under the difference;
 * xlabel under them (may be NULL). SVG groups "rows" and "difference" hold
 * the cells (data-panel 0 and 1). Width as every figure (auto: a column).
 * Errors: HS_ERR_INPUT (R1, R2 >= 1 with R1 + R2 and C in 1..HS_VIZ_MAX_TOKENS,
 * diff_lim > 0, an empty fixed range, NULL or invalid UTF-8 labels, the width
 * promise), HS_ERR_NUMERIC (a non-finite value), HS_ERR_IO, HS_ERR_NOMEM. */
hs_status hs_viz_rows_pair_figure(hs_viz_figure **out, const float *rows, size_t R1,
                                  const char *const *row_labels, const float *diff, size_t R2,
                                  const char *const *diff_labels, size_t C,
                                  const char *const *col_labels, const char *title,
                                  const char *xlabel, double diff_lim, const char *diff_label,
                                  const hs_viz_options *opt, hs_error *err);

/* What one HTML page (hs_viz_html_page) may hold, so it loads in seconds
 * (a 100,000-bar file took 18.6 s): the page's data as JSON text, the
 * positions of one attention object, the bars of one bar chart (or rows of
 * the predictions table), a matrix's side and cells, the points of one file's
 * line plots. */
#define HS_VIZ_PAGE_MAX_BYTES (64 << 20)
#define HS_VIZ_PAGE_MAX_TOKENS 1024
#define HS_VIZ_PAGE_MAX_BARS 1024
#define HS_VIZ_PAGE_MAX_SIDE 2048
#define HS_VIZ_PAGE_MAX_CELLS (1 << 20)
#define HS_VIZ_PAGE_MAX_POINTS 20000

/* The plain form of a title in hs_viz_options.title_markup's markup, for
 * JSON, SVG <title> and PDF metadata: "_{...}" as "_..." and "^{...}" as
 * "^..." ("W_{E} W_{QK} W_{E}^{T}" -> "W_E W_QK W_E^T"); the rest as it is.
 * Returns a malloc'd string (caller frees), NULL when out of memory. */
char *hs_viz_title_plain(const char *title);

/* 1 when the HTML page draws the JSON f of a file named stem (an attention
 * object, line plots, bars, a matrix, the predictions table, a circuit graph
 * or report: viz/html/viewer.js's renderRun), 0 when it leaves it out. */
int hs_viz_page_draws(const char *stem, const cJSON *f);

/* A colour scale's limit taken from data (a shared |max|), rounded outward
 * as an auto range is (to a hundredth of the decade of 2 * lim, with float32's
 * tolerance: 4.63 -> 4.7, 0.2371 -> 0.24), so a colour bar ends at a round value
 * rather than the raw maximum. lim <= 0 or not finite is returned as it is. */
double hs_viz_round_limit(double lim);

#endif /* HS_VIZ_H */
