/*
 * tests/viz_check.h -- what the viz tests share: a temp path, running a tool,
 * reading a PNG back (pixels and pHYs), and the layout geometry check (every
 * label's ink inside the canvas, no two overlapping, none over a heatmap,
 * values inside their cells, no label under 6 pt), and a circuit in MIB's
 * graph for the graph figure. Static inline functions: include it once per
 * test program.
 */
#ifndef HS_TESTS_VIZ_CHECK_H
#define HS_TESTS_VIZ_CHECK_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>
#include <png.h>

#include "discovery/discovery.h"
#include "viz/viz.h"
#include "viz/viz_internal.h"

static inline char *tmp_path(const char *name)
{
    const char *dir = getenv("HS_TEST_TMP");
    if (dir == NULL || dir[0] == '\0') dir = "/tmp";
    mkdir(dir, 0777);
    char *p = hs_path_join(dir, name);
    assert_non_null(p);
    return p;
}

static inline int run(const char *cmd)
{
    int r = system(cmd);
    return r == -1 ? -1 : WEXITSTATUS(r);
}

static inline void need_tool(const char *tool)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
    if (run(cmd) != 0) fail_msg("%s is not installed; it is required by this test", tool);
}

typedef struct {
    unsigned char *rgb;
    int w, h;
    png_uint_32 ppm_x, ppm_y;
    int unit;
} image;

static inline void read_png(const char *path, image *im)
{
    memset(im, 0, sizeof *im);
    FILE *fp = fopen(path, "rb");
    if (!fp) fail_msg("cannot open %s", path);
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    assert_non_null(png);
    assert_non_null(info);
    if (setjmp(png_jmpbuf(png))) {
        fclose(fp);
        fail_msg("libpng cannot read %s", path);
    }
    png_init_io(png, fp);
    png_read_info(png, info);
    im->w = (int)png_get_image_width(png, info);
    im->h = (int)png_get_image_height(png, info);
    assert_int_equal(png_get_color_type(png, info), PNG_COLOR_TYPE_RGB);
    assert_int_equal(png_get_bit_depth(png, info), 8);
    assert_true(png_get_pHYs(png, info, &im->ppm_x, &im->ppm_y, &im->unit) != 0);
    im->rgb = malloc((size_t)im->w * (size_t)im->h * 3);
    assert_non_null(im->rgb);
    for (int y = 0; y < im->h; y++) png_read_row(png, im->rgb + (size_t)y * (size_t)im->w * 3, NULL);
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &info, NULL);
    fclose(fp);
}

static inline const unsigned char *px(const image *im, int x, int y)
{
    assert_true(x >= 0 && y >= 0 && x < im->w && y < im->h);
    return im->rgb + ((size_t)y * (size_t)im->w + (size_t)x) * 3;
}

static inline int overlap(int ax, int ay, int aw, int ah, int bx, int by, int bw, int bh)
{
    return ax < bx + bw && bx < ax + aw && ay < by + bh && by < ay + ah;
}

static inline void check_geometry(const hs_viz_figure *f, const char *what)
{
    int W = f->width, H = f->height;
    if (W < 1 || H < 1 || W > HS_VIZ_MAX_PX || H > HS_VIZ_MAX_PX)
        fail_msg("%s: canvas %d x %d out of range", what, W, H);
    /* a label's box is its ink (what a reader sees), from the shaped glyphs */
    for (size_t i = 0; i < f->n_texts; i++) {
        const vz_text *a = &f->texts[i];
        if (a->ix < 0 || a->iy < 0 || a->ix + a->iw > W || a->iy + a->ih > H)
            fail_msg("%s: label '%s' box (%d,%d %dx%d) leaves the %dx%d canvas", what, a->s, a->ix,
                     a->iy, a->iw, a->ih, W, H);
        if (a->px * 72.0 / f->dpi < 6.0 - 1e-9)
            fail_msg("%s: label '%s' is %.2f pt, under 6 pt", what, a->s, a->px * 72.0 / f->dpi);
        for (size_t j = i + 1; j < f->n_texts; j++) {
            const vz_text *b = &f->texts[j];
            if (overlap(a->ix, a->iy, a->iw, a->ih, b->ix, b->iy, b->iw, b->ih))
                fail_msg("%s: labels '%s' (%d,%d %dx%d) and '%s' (%d,%d %dx%d) overlap", what,
                         a->s, a->ix, a->iy, a->iw, a->ih, b->s, b->ix, b->iy, b->iw, b->ih);
        }
    }
    /* a colour bar's quantity label runs along the bar, never past its ends;
       level over a vertical bar (its title: a word longer than the bar), it
       starts at the bar's left edge and ends above the bar */
    for (size_t k = 0; k < f->n_rects; k++) {
        const vz_rect *r = &f->rects[k];
        if (r->kind != VZ_R_CBAR) continue;
        for (size_t i = 0; i < f->n_texts; i++) {
            const vz_text *a = &f->texts[i];
            if (a->role != VZ_T_AXIS || strcmp(f->groups[a->group], "colorbar") != 0) continue;
            int in = r->vertical && a->rot == 0 ? a->ix >= r->x - 2 && a->ix <= r->x + r->w && a->iy + a->ih <= r->y
                     : r->vertical                ? a->iy >= r->y && a->iy + a->ih <= r->y + r->h
                                                  : a->ix >= r->x && a->ix + a->iw <= r->x + r->w;
            if (!in)
                fail_msg("%s: colour bar label '%s' (%d,%d %dx%d) runs past the bar (%d,%d %dx%d)",
                         what, a->s, a->ix, a->iy, a->iw, a->ih, r->x, r->y, r->w, r->h);
        }
    }
    /* label boxes vs heatmap panels (union box of each panel's cells) */
    int np = 0;
    for (size_t k = 0; k < f->n_rects; k++)
        if (f->rects[k].panel + 1 > np) np = f->rects[k].panel + 1;
    for (int p = 0; p < np; p++) {
        int x0 = 1 << 30, y0 = 1 << 30, x1 = -1, y1 = -1;
        for (size_t k = 0; k < f->n_rects; k++) {
            const vz_rect *r = &f->rects[k];
            if (r->panel != p) continue;
            if (r->x < x0) x0 = r->x;
            if (r->y < y0) y0 = r->y;
            if (r->x + r->w > x1) x1 = r->x + r->w;
            if (r->y + r->h > y1) y1 = r->y + r->h;
        }
        for (size_t i = 0; i < f->n_texts; i++) {
            const vz_text *a = &f->texts[i];
            if (a->role == VZ_T_ANNOT) continue;
            if (overlap(a->ix, a->iy, a->iw, a->ih, x0, y0, x1 - x0, y1 - y0))
                fail_msg("%s: label '%s' covers heatmap panel %d", what, a->s, p);
        }
    }
    /* annotations stay inside their cell */
    for (size_t i = 0; i < f->n_texts; i++) {
        const vz_text *a = &f->texts[i];
        if (a->role != VZ_T_ANNOT) continue;
        int inside = 0;
        for (size_t k = 0; k < f->n_rects && !inside; k++) {
            const vz_rect *r = &f->rects[k];
            if (r->kind == VZ_R_CELL && a->ix >= r->x && a->iy >= r->y &&
                a->ix + a->iw <= r->x + r->w && a->iy + a->ih <= r->y + r->h)
                inside = 1;
        }
        if (!inside) fail_msg("%s: value '%s' is not inside a cell", what, a->s);
    }
}

static inline size_t count_role(const hs_viz_figure *f, vz_role role)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n_texts; i++) n += f->texts[i].role == role;
    return n;
}

/* A circuit in the graph of an L x H model with MLPs (experiments/graph.c):
 * the n edges named (MIB names, e.g. "a0.h1->a1.h2<k>") in it with their
 * scores, every other edge out with score 0. *g, *scores and *in are the
 * caller's (hs_graph_free, free, free). */
static inline void circuit_fixture(int L, int H, const char *const *edges, const double *sc, size_t n,
                                   hs_graph *g, double **scores, unsigned char **in)
{
    hs_config cfg = hs_config_default();
    cfg.n_layers = L;
    cfg.n_heads = H;
    cfg.d_mlp = 4 * cfg.d_model;
    hs_error err = {0};
    if (hs_graph_build(&cfg, g, &err) != HS_OK) fail_msg("graph: %s", err.msg);
    *scores = calloc(g->n_edges, sizeof **scores);
    *in = calloc(g->n_edges, 1);
    assert_non_null(*scores);
    assert_non_null(*in);
    for (size_t i = 0; i < n; i++) {
        long e = hs_graph_find_edge(g, edges[i]);
        if (e < 0) fail_msg("no edge %s in a %d x %d graph", edges[i], L, H);
        (*in)[e] = 1;
        (*scores)[e] = sc[i];
    }
}

#endif /* HS_TESTS_VIZ_CHECK_H */
