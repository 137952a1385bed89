/*
 * viz/viz_render.c -- drawing a laid-out figure with cairo: into an RGB
 * buffer (an image surface; viz_png.c encodes it) and into a PDF (a PDF
 * surface; the font is embedded as a subset by cairo). Both draw the same
 * display list in the same order with the glyph positions HarfBuzz gave the
 * layout, so the PNG and the PDF show the same picture; viz_svg.c writes the
 * same list as SVG.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cairo-pdf.h>

#include "viz/viz_internal.h"

static void set_rgb(cairo_t *cr, const unsigned char rgb[3])
{
    cairo_set_source_rgb(cr, rgb[0] / 255.0, rgb[1] / 255.0, rgb[2] / 255.0);
}

/* The colour bar's gradient: 256 stops of cmap, t = 0 at the bottom (vertical)
 * or the left. */
static void draw_cbar(cairo_t *cr, const vz_rect *r)
{
    cairo_pattern_t *g = r->vertical ? cairo_pattern_create_linear(0, r->y + r->h, 0, r->y)
                                     : cairo_pattern_create_linear(r->x, 0, r->x + r->w, 0);
    for (int i = 0; i < 256; i++) {
        unsigned char c[3];
        hs_viz_cmap_rgb(r->cmap, i / 255.0, c);
        cairo_pattern_add_color_stop_rgb(g, i / 255.0, c[0] / 255.0, c[1] / 255.0, c[2] / 255.0);
    }
    cairo_rectangle(cr, r->x, r->y, r->w, r->h);
    cairo_set_source(cr, g);
    cairo_fill(cr);
    cairo_pattern_destroy(g);
}

void vz_hatch_geometry(int cell, double *spacing, double *width)
{
    *spacing = fmax(3.0, round(cell / 3.0)); /* whole pixels: a raster tile repeats exactly */
    *width = fmax(0.6, cell / 24.0);
}

/* The hatching as one tile (spacing px square, whole pixels) to repeat from
 * the canvas origin: the same tile the SVG's <pattern> holds. */
static cairo_pattern_t *hatch_tile(const unsigned char rgb[3], double sp, double lw)
{
    cairo_rectangle_t ext = {0, 0, sp, sp};
    cairo_surface_t *tile = cairo_recording_surface_create(CAIRO_CONTENT_COLOR, &ext);
    cairo_t *tc = cairo_create(tile);
    set_rgb(tc, rgb);
    cairo_paint(tc);
    set_rgb(tc, VZ_HATCH_RGB);
    cairo_set_line_width(tc, lw);
    /* x + y = 0, sp and 2 sp cross the tile */
    cairo_move_to(tc, -lw, lw);
    cairo_line_to(tc, lw, -lw);
    cairo_move_to(tc, 0, sp);
    cairo_line_to(tc, sp, 0);
    cairo_move_to(tc, sp - lw, sp + lw);
    cairo_line_to(tc, sp + lw, sp - lw);
    cairo_stroke(tc);
    cairo_destroy(tc);
    cairo_pattern_t *pat = cairo_pattern_create_for_surface(tile);
    cairo_pattern_set_extend(pat, CAIRO_EXTEND_REPEAT);
    cairo_surface_destroy(tile); /* the pattern holds it */
    return pat;
}

/* Masked cells: the mask colour with dark diagonal hatching (lines at 45
 * degrees in canvas coordinates, x + y = k * spacing), so they read as "no
 * value" in colour and in grey print. Every masked cell of the group of
 * rects[first] with its side is drawn at once; done[] marks them. A raster
 * fills them with the repeated tile (fast); a vector surface (PDF) gets the
 * cells and whole lines through them (a viewer's tiling seams would show). */
static void draw_masked(cairo_t *cr, const hs_viz_figure *f, size_t first, unsigned char *done)
{
    const vz_rect *r0 = &f->rects[first];
    int side = r0->w < r0->h ? r0->w : r0->h;
    double sp, lw, x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
    vz_hatch_geometry(side, &sp, &lw);
    int raster = cairo_surface_get_type(cairo_get_target(cr)) == CAIRO_SURFACE_TYPE_IMAGE;
    cairo_new_path(cr);
    for (size_t i = first; i < f->n_rects; i++) {
        const vz_rect *r = &f->rects[i];
        if (r->kind != VZ_R_MASKED || r->group != r0->group || (r->w < r->h ? r->w : r->h) != side)
            continue;
        if (done) done[i] = 1;
        cairo_rectangle(cr, r->x, r->y, r->w, r->h);
        x0 = fmin(x0, r->x);
        y0 = fmin(y0, r->y);
        x1 = fmax(x1, r->x + r->w);
        y1 = fmax(y1, r->y + r->h);
        if (!done) break;
    }
    if (raster) {
        cairo_pattern_t *pat = hatch_tile(r0->rgb, sp, lw);
        cairo_set_source(cr, pat);
        cairo_fill(cr);
        cairo_pattern_destroy(pat);
        return;
    }
    set_rgb(cr, r0->rgb);
    cairo_fill_preserve(cr);
    cairo_save(cr);
    cairo_clip(cr);
    set_rgb(cr, VZ_HATCH_RGB);
    cairo_set_line_width(cr, lw);
    for (double k = floor((x0 + y0) / sp); k <= ceil((x1 + y1) / sp); k++) {
        double s = k * sp; /* the line x + y = s across the cells' bounding box */
        cairo_move_to(cr, s - y0, y0);
        cairo_line_to(cr, s - y1, y1);
    }
    cairo_stroke(cr);
    cairo_restore(cr);
}

cairo_surface_t *vz_cells_image(const hs_viz_figure *f, size_t first, unsigned char *done,
                                int *x0, int *y0, int *cell, int *R, int *C)
{
    const vz_rect *r0 = &f->rects[first];
    const int side = r0->w;
    int xa = INT32_MAX, ya = INT32_MAX, xb = INT32_MIN, yb = INT32_MIN;
    size_t n = 0;
    for (size_t i = first; i < f->n_rects; i++) {
        const vz_rect *r = &f->rects[i];
        if (r->group != r0->group || r->panel != r0->panel ||
            (r->kind != VZ_R_CELL && r->kind != VZ_R_MASKED))
            continue;
        if (r->w != side || r->h != side) return NULL; /* not one grid: cell by cell */
        n += r->kind == VZ_R_CELL;
        xa = r->x < xa ? r->x : xa;
        ya = r->y < ya ? r->y : ya;
        xb = r->x + side > xb ? r->x + side : xb;
        yb = r->y + side > yb ? r->y + side : yb;
    }
    if (side < 1 || (xb - xa) % side || (yb - ya) % side) return NULL;
    const int cols = (xb - xa) / side, rows = (yb - ya) / side;
    /* every cell plain: opaque RGB (no soft mask in a PDF); else the others stay clear */
    cairo_surface_t *img = cairo_image_surface_create(
        n == (size_t)rows * cols ? CAIRO_FORMAT_RGB24 : CAIRO_FORMAT_ARGB32, cols, rows);
    if (cairo_surface_status(img) != CAIRO_STATUS_SUCCESS) {
        cairo_surface_destroy(img);
        return NULL;
    }
    cairo_surface_flush(img);
    unsigned char *data = cairo_image_surface_get_data(img);
    const int stride = cairo_image_surface_get_stride(img);
    memset(data, 0, (size_t)stride * rows);
    for (size_t i = first; i < f->n_rects; i++) {
        const vz_rect *r = &f->rects[i];
        if (r->group != r0->group || r->panel != r0->panel ||
            (r->kind != VZ_R_CELL && r->kind != VZ_R_MASKED))
            continue;
        if (r->kind != VZ_R_CELL) continue; /* masked cells: clear, hatched on their own */
        const int cx = (r->x - xa) / side, cy = (r->y - ya) / side;
        uint32_t *px = (uint32_t *)(data + (size_t)cy * stride) + cx;
        *px = 0xff000000u | (uint32_t)r->rgb[0] << 16 | (uint32_t)r->rgb[1] << 8 | r->rgb[2];
        if (done) done[i] = 1;
    }
    cairo_surface_mark_dirty(img);
    *x0 = xa;
    *y0 = ya;
    *cell = side;
    *R = rows;
    *C = cols;
    return img;
}

/* A vector surface's panel of cells (the group and panel of rects[first]) as
 * one image, a pixel a cell, scaled up without smoothing: abutting vector
 * rectangles leave hairline seams in viewers that antialias each edge. 0
 * when the cells are not one grid (the caller draws them one by one). */
static int draw_cells(cairo_t *cr, const hs_viz_figure *f, size_t first, unsigned char *done)
{
    int x0, y0, cell, R, C;
    cairo_surface_t *img = vz_cells_image(f, first, done, &x0, &y0, &cell, &R, &C);
    if (!img) return 0;
    cairo_save(cr);
    cairo_translate(cr, x0, y0);
    cairo_scale(cr, cell, cell);
    cairo_set_source_surface(cr, img, 0, 0);
    cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
    cairo_rectangle(cr, 0, 0, C, R);
    cairo_fill(cr);
    cairo_restore(cr);
    cairo_surface_destroy(img);
    return 1;
}

/* Draws glyphs [i0, i1) of t, all of one face, with the bytes [b0, b1) of
 * its text they show (clusters from HarfBuzz), so a PDF's text extracts as
 * the string even through ligatures ("fi"); glyphs only where the clusters
 * do not map onto those bytes in order (right-to-left text). */
static void draw_piece(cairo_t *cr, const vz_text *t, size_t i0, size_t i1, uint32_t b0,
                       uint32_t b1, cairo_glyph_t *g, cairo_text_cluster_t *cl)
{
    size_t n = i1 - i0;
    int ncl = 0;
    const vz_glyph *rg = t->run.g + i0;
    for (size_t i = 0; i < n; i++) {
        g[i].index = rg[i].id;
        g[i].x = rg[i].x;
        g[i].y = rg[i].y;
        if (i == 0 || rg[i].cluster != rg[i - 1].cluster) {
            cl[ncl].num_glyphs = 0;
            cl[ncl++].num_bytes = 0;
        }
        cl[ncl - 1].num_glyphs++;
    }
    /* bytes of each cluster: up to the next cluster's start (left-to-right text) */
    for (int c = 0, i = 0; c < ncl; i += cl[c++].num_glyphs) {
        uint32_t start = rg[i].cluster;
        uint32_t end = c + 1 < ncl ? rg[i + cl[c].num_glyphs].cluster : b1;
        cl[c].num_bytes = end > start ? (int)(end - start) : 0;
    }
    int bytes = 0, ok = rg[0].cluster == b0;
    for (int c = 0; c < ncl; c++) {
        ok &= cl[c].num_bytes > 0;
        bytes += cl[c].num_bytes;
    }
    if (ok && bytes == (int)(b1 - b0))
        cairo_show_text_glyphs(cr, t->s + b0, bytes, g, (int)n, cl, ncl, 0);
    else cairo_show_glyphs(cr, g, (int)n); /* clusters cairo would refuse: glyphs only */
}

/* Draws t's shaped glyphs, each maximal piece of one face in that face. */
static void draw_text(cairo_t *cr, const hs_viz_figure *f, const vz_text *t)
{
    size_t n = t->run.n;
    if (n == 0) return;
    cairo_glyph_t *g = malloc(n * sizeof *g);
    cairo_text_cluster_t *cl = malloc(n * sizeof *cl);
    if (!g || !cl) {
        free(g);
        free(cl);
        return;
    }
    uint32_t len = (uint32_t)strlen(t->s);
    int asc = vz_font_ascender(f->font, t->px);
    cairo_save(cr);
    set_rgb(cr, t->rgb);
    if (t->rot == 90) {
        cairo_translate(cr, t->x + asc, t->y + t->h);
        cairo_rotate(cr, -2.0 * atan(1.0)); /* -90 degrees */
    } else {
        cairo_translate(cr, t->x, t->y + asc);
    }
    for (size_t i0 = 0, i1; i0 < n; i0 = i1) {
        int face = t->run.g[i0].face;
        for (i1 = i0 + 1; i1 < n && t->run.g[i1].face == face; i1++) {}
        cairo_set_font_face(cr, vz_font_cairo(f->font, face));
        cairo_set_font_size(cr, t->px);
        uint32_t b0 = i0 == 0 ? 0 : t->run.g[i0].cluster;
        uint32_t b1 = i1 < n ? t->run.g[i1].cluster : len;
        draw_piece(cr, t, i0, i1, b0, b1 > b0 && b1 <= len ? b1 : b0, g, cl);
    }
    cairo_restore(cr);
    free(g);
    free(cl);
}

/* Curve i and the curves joined to it: one path stroked with butt ends
 * (round joins), dashed from its start when asked; or closed and filled
 * (vz_curve.filled). */
static void draw_curve(cairo_t *cr, const hs_viz_figure *f, size_t i)
{
    const vz_curve *k = &f->curves[i];
    cairo_save(cr);
    set_rgb(cr, k->rgb);
    cairo_set_line_width(cr, k->width);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    if (k->dash_on > 0) {
        const double d[2] = {k->dash_on, k->dash_off};
        cairo_set_dash(cr, d, 2, 0);
    }
    cairo_move_to(cr, k->x0, k->y0);
    for (size_t j = i; j < f->n_curves && (j == i || f->curves[j].joined); j++) {
        const vz_curve *q = &f->curves[j];
        cairo_curve_to(cr, q->x1, q->y1, q->x2, q->y2, q->x3, q->y3);
    }
    if (k->filled) {
        cairo_close_path(cr);
        cairo_fill(cr);
    } else {
        cairo_stroke(cr);
    }
    cairo_restore(cr);
}

void vz_render(cairo_t *cr, const hs_viz_figure *f)
{
    cairo_font_options_t *fo = cairo_font_options_create();
    cairo_font_options_set_hint_style(fo, CAIRO_HINT_STYLE_NONE);
    cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_OFF);
    cairo_font_options_set_antialias(fo, CAIRO_ANTIALIAS_GRAY);
    cairo_set_font_options(cr, fo);
    cairo_font_options_destroy(fo);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    unsigned char *done = calloc(f->n_rects ? f->n_rects : 1, 1); /* NULL: one cell at a time */
    /* a raster draws cells as they are (exact pixels); a vector surface, each panel as one image */
    const int vector = cairo_surface_get_type(cairo_get_target(cr)) != CAIRO_SURFACE_TYPE_IMAGE;
    for (size_t g = 0; g < f->n_groups; g++) {
        for (size_t i = 0; i < f->n_rects; i++) {
            const vz_rect *r = &f->rects[i];
            if (r->group != (int)g || (done && done[i])) continue;
            if (vector && done && r->kind == VZ_R_CELL && r->panel >= 0 && draw_cells(cr, f, i, done))
                continue;
            if (r->kind == VZ_R_CBAR) draw_cbar(cr, r);
            else if (r->kind == VZ_R_MASKED) draw_masked(cr, f, i, done);
            else {
                set_rgb(cr, r->rgb);
                cairo_rectangle(cr, r->x, r->y, r->w, r->h);
                cairo_fill(cr);
            }
        }
        for (size_t i = 0; i < f->n_curves; i++)
            if (f->curves[i].group == (int)g && !f->curves[i].joined) draw_curve(cr, f, i);
        for (size_t i = 0; i < f->n_texts; i++)
            if (f->texts[i].group == (int)g) draw_text(cr, f, &f->texts[i]);
    }
    free(done);
}

hs_status vz_render_image(const hs_viz_figure *f, cairo_surface_t **out, hs_error *err)
{
    *out = NULL;
    cairo_surface_t *sf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, f->width, f->height);
    if (cairo_surface_status(sf) != CAIRO_STATUS_SUCCESS) {
        cairo_surface_destroy(sf);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory for a %d x %d image", f->width,
                       f->height);
    }
    cairo_t *cr = cairo_create(sf);
    vz_render(cr, f);
    cairo_status_t cs = cairo_status(cr);
    cairo_destroy(cr);
    cairo_surface_flush(sf);
    if (cs != CAIRO_STATUS_SUCCESS) {
        cairo_surface_destroy(sf);
        return hs_fail(err, HS_ERR_NOMEM, "drawing a %d x %d image: %s", f->width, f->height,
                       cairo_status_to_string(cs));
    }
    *out = sf;
    return HS_OK;
}

hs_status hs_viz_figure_rgb(const hs_viz_figure *f, unsigned char **rgb, size_t *w, size_t *h,
                            hs_error *err)
{
    *rgb = NULL;
    cairo_surface_t *sf;
    hs_status s = vz_render_image(f, &sf, err);
    if (s != HS_OK) return s;
    size_t n = (size_t)f->width * (size_t)f->height * 3;
    unsigned char *buf = malloc(n ? n : 1);
    if (!buf) {
        cairo_surface_destroy(sf);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory for a %d x %d image", f->width,
                       f->height);
    }
    const unsigned char *data = cairo_image_surface_get_data(sf);
    int stride = cairo_image_surface_get_stride(sf);
    for (int y = 0; y < f->height; y++) {
        const uint32_t *row = (const uint32_t *)(data + (size_t)y * (size_t)stride);
        unsigned char *o = buf + (size_t)y * (size_t)f->width * 3;
        for (int x = 0; x < f->width; x++) {
            uint32_t p = row[x]; /* xRGB in native endianness */
            o[3 * x] = (unsigned char)(p >> 16);
            o[3 * x + 1] = (unsigned char)(p >> 8);
            o[3 * x + 2] = (unsigned char)p;
        }
    }
    cairo_surface_destroy(sf);
    *rgb = buf;
    *w = (size_t)f->width;
    *h = (size_t)f->height;
    return HS_OK;
}

static cairo_status_t write_fp(void *closure, const unsigned char *data, unsigned int n)
{
    FILE *fp = closure;
    return fwrite(data, 1, n, fp) == n ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_WRITE_ERROR;
}

/* SOURCE_DATE_EPOCH (reproducible-builds.org: seconds since 1970, UTC) as
 * the ISO 8601 date cairo records, into buf; 0 when unset or not a whole
 * number of seconds. */
static int source_date(char *buf, size_t cap)
{
    const char *s = getenv("SOURCE_DATE_EPOCH");
    char *end = NULL;
    errno = 0;
    long long v = s && *s ? strtoll(s, &end, 10) : -1;
    if (v < 0 || errno || *end != '\0') return 0;
    time_t t = (time_t)v;
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL) return 0;
    return strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) > 0;
}

hs_status hs_viz_figure_write_pdf(const hs_viz_figure *f, const char *path, hs_error *err)
{
    if (f == NULL) return hs_fail(err, HS_ERR_INPUT, "figure is NULL");
    hs_status s = hs_check_out_path(path, err);
    if (s != HS_OK) return s;
    hs_atomic_file af;
    s = hs_atomic_open(&af, path, err);
    if (s != HS_OK) return s;
    if (f->vec) f = f->vec; /* laid out at VZ_VECTOR_DPI: the same size at every dpi */
    double k = 72.0 / vz_figure_ppi(f); /* points per pixel: exactly the width asked */
    errno = 0;
    cairo_surface_t *sf =
        cairo_pdf_surface_create_for_stream(write_fp, af.fp, f->width * k, f->height * k);
    if (f->title) cairo_pdf_surface_set_metadata(sf, CAIRO_PDF_METADATA_TITLE, f->title);
    cairo_pdf_surface_set_metadata(sf, CAIRO_PDF_METADATA_CREATOR, "headscope");
    char date[32];
    if (source_date(date, sizeof date))
        cairo_pdf_surface_set_metadata(sf, CAIRO_PDF_METADATA_CREATE_DATE, date);
    cairo_t *cr = cairo_create(sf);
    cairo_scale(cr, k, k);
    vz_render(cr, f);
    cairo_status_t cs = cairo_status(cr);
    cairo_destroy(cr);
    cairo_surface_finish(sf);
    if (cs == CAIRO_STATUS_SUCCESS) cs = cairo_surface_status(sf);
    cairo_surface_destroy(sf);
    if (cs != CAIRO_STATUS_SUCCESS) {
        int e = errno;
        hs_atomic_abort(&af);
        return hs_fail(err, HS_ERR_IO, "%s: cannot write the PDF: %s", path,
                       cs == CAIRO_STATUS_WRITE_ERROR && e ? strerror(e)
                                                           : cairo_status_to_string(cs));
    }
    return hs_atomic_commit(&af, err);
}
