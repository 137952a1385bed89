/*
 * tests/test_viz.c -- viz/: PNG figures read back with libpng (size, dpi,
 * cell colours = colour map, ink in label boxes, masked triangle), pngcheck
 * on every PNG written, SVG through xmllint (one <text> per token label),
 * JSON round trips, terminal rows, atomic writes and errors.
 * Layout geometry over the documented caps is in test_viz_geometry.c.
 * Outputs go to $HS_TEST_TMP.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <math.h>

#include <cmocka.h>
#include <png.h>
#include <zlib.h>
#include <ft2build.h>
#include FT_FREETYPE_H

#include "viz/viz.h"
#include "viz/viz_internal.h"
#include "viz_check.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static const char *TOKS[18] = {"the", "animal", "did", "not", "cross", "the",
                               "street", "because", "it", "was", "too", "tired",
                               ",", "so", "the", "animal", "waited", "."};
#define T18 18

/* pngcheck must pass on every PNG the tests write. */
static void assert_pngcheck(const char *path)
{
    need_tool("pngcheck");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "pngcheck -q '%s' >/dev/null 2>&1", path);
    if (run(cmd) != 0) fail_msg("pngcheck fails on %s", path);
}

static void assert_rgb(const unsigned char *got, const unsigned char *want, const char *what)
{
    if (memcmp(got, want, 3) != 0)
        fail_msg("%s: got #%02x%02x%02x, want #%02x%02x%02x", what, got[0], got[1], got[2],
                 want[0], want[1], want[2]);
}

static const vz_rect *find_cell(const hs_viz_figure *f, int panel, int row, int col)
{
    for (size_t i = 0; i < f->n_rects; i++) {
        const vz_rect *r = &f->rects[i];
        if ((r->kind == 1 || r->kind == 2) && r->panel == panel && r->row == row && r->col == col)
            return r;
    }
    fail_msg("no cell panel %d (%d, %d)", panel, row, col);
    return NULL;
}

static long ink_in_box(const image *im, int x, int y, int w, int h)
{
    long n = 0;
    for (int yy = y; yy < y + h; yy++)
        for (int xx = x; xx < x + w; xx++) {
            const unsigned char *p = px(im, xx, yy);
            if (p[0] < 160 && p[1] < 160 && p[2] < 160) n++;
        }
    return n;
}


/* A causal pattern with known values: row i puts 1 - 0.05 i on source 0
 * (or 1.0 on row 0) and the rest evenly on sources 1..i; masked cells hold 0. */
/* A masked cell shows the mask colour and the dark hatching (so it reads as
 * "no value" in grey print too), and nothing else but their blends. */
static void assert_masked(const image *im, const vz_rect *r, const char *what)
{
    long mask = 0, hatch = 0;
    for (int y = r->y + 1; y < r->y + r->h - 1; y++)
        for (int x = r->x + 1; x < r->x + r->w - 1; x++) {
            const unsigned char *q = px(im, x, y);
            mask += memcmp(q, HS_VIZ_MASK_RGB, 3) == 0;
            hatch += abs(q[0] - VZ_HATCH_RGB[0]) + abs(q[1] - VZ_HATCH_RGB[1]) +
                         abs(q[2] - VZ_HATCH_RGB[2]) < 60;
        }
    if (mask == 0 || hatch == 0)
        fail_msg("%s: masked cell has %ld mask and %ld hatch pixels", what, mask, hatch);
}

static void known_pattern(float *p, size_t T)
{
    for (size_t i = 0; i < T; i++)
        for (size_t j = 0; j < T; j++) {
            float v = 0.0f;
            if (i == 0) v = j == 0 ? 1.0f : 0.0f;
            else if (j == 0) v = 1.0f - 0.05f * (float)i;
            else if (j <= i) v = 0.05f * (float)i / (float)i;
            p[i * T + j] = v;
        }
}

/* ------------------------------------------------------------------------ */
/* Colour maps                                                               */

static void viridis_table_has_published_values(void **state)
{
    (void)state;
    unsigned char c[3];
    static const unsigned char v0[3] = {0x44, 0x01, 0x54}, vh[3] = {0x21, 0x91, 0x8c},
                               v1[3] = {0xfd, 0xe7, 0x25};
    hs_viz_cmap_rgb(HS_VIZ_CMAP_VIRIDIS, 0.0, c);
    assert_rgb(c, v0, "viridis(0)");
    hs_viz_cmap_rgb(HS_VIZ_CMAP_VIRIDIS, 0.5, c);
    assert_rgb(c, vh, "viridis(0.5)");
    hs_viz_cmap_rgb(HS_VIZ_CMAP_VIRIDIS, 1.0, c);
    assert_rgb(c, v1, "viridis(1)");
    hs_viz_cmap_rgb(HS_VIZ_CMAP_VIRIDIS, 7.0, c); /* clamped */
    assert_rgb(c, v1, "viridis(7)");
    /* diverging: blue end, near-white centre, red end */
    static const unsigned char d0[3] = {0x05, 0x30, 0x61}, d1[3] = {0x67, 0x00, 0x1f};
    hs_viz_cmap_rgb(HS_VIZ_CMAP_DIVERGING, 0.0, c);
    assert_rgb(c, d0, "diverging(0)");
    hs_viz_cmap_rgb(HS_VIZ_CMAP_DIVERGING, 1.0, c);
    assert_rgb(c, d1, "diverging(1)");
    hs_viz_cmap_rgb(HS_VIZ_CMAP_DIVERGING, 0.5, c);
    assert_true(c[0] >= 240 && c[1] >= 240 && c[2] >= 240);
    /* the mask grey is no colour of viridis */
    for (int i = 0; i < 256; i++)
        assert_false(memcmp(vz_viridis[i], HS_VIZ_MASK_RGB, 3) == 0);
}

/* ------------------------------------------------------------------------ */
/* PNG                                                                       */

static void attention_png_reads_back_with_cells_labels_and_mask(void **state)
{
    (void)state;
    float p[T18 * T18];
    known_pattern(p, T18);
    p[7 * T18 + 3] = 0.5f; /* a mid value */
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    const char *title = "L1H3 \xc2\xb7 blocks.1.attn.hook_pattern";
    assert_int_equal(hs_viz_attention_figure(&f, p, T18, TOKS, title, NULL, &err), HS_OK);
    char *path = tmp_path("viz_head.png");
    hs_status st = hs_viz_figure_write_png(f, path, NULL, &err);
    if (st != HS_OK) fail_msg("%s", err.msg);
    assert_pngcheck(path);

    image im;
    read_png(path, &im);
    assert_int_equal(im.w, (int)hs_viz_figure_width(f));
    assert_int_equal(im.h, (int)hs_viz_figure_height(f));
    assert_int_equal(im.unit, PNG_RESOLUTION_METER);
    assert_int_equal(im.ppm_x, 11811); /* 300 dpi */
    assert_int_equal(im.ppm_y, 11811);

    /* every cell: centre colour = colour map at the value, or mask grey */
    for (int i = 0; i < T18; i++)
        for (int j = 0; j < T18; j++) {
            const vz_rect *r = find_cell(f, 0, i, j);
            const unsigned char *got = px(&im, r->x + r->w / 2, r->y + r->h / 2);
            unsigned char want[3];
            char what[64];
            snprintf(what, sizeof what, "cell (%d, %d)", i, j);
            if (j > i) {
                assert_masked(&im, r, what);
                continue;
            }
            hs_viz_cmap_rgb(HS_VIZ_CMAP_VIRIDIS, p[i * T18 + j], want);
            assert_rgb(got, want, what);
        }
    /* known cells against the published viridis values, independent of the table code */
    static const unsigned char one[3] = {0xfd, 0xe7, 0x25}, half[3] = {0x21, 0x91, 0x8c},
                               zero[3] = {0x44, 0x01, 0x54};
    const vz_rect *r = find_cell(f, 0, 0, 0);
    assert_rgb(px(&im, r->x + r->w / 2, r->y + r->h / 2), one, "cell (0,0) = 1.0");
    r = find_cell(f, 0, 7, 3);
    assert_rgb(px(&im, r->x + r->w / 2, r->y + r->h / 2), half, "cell (7,3) = 0.5");
    r = find_cell(f, 0, 0, 5); /* masked, value 0: must not be viridis(0) */
    assert_false(memcmp(px(&im, r->x + r->w / 2, r->y + r->h / 2), zero, 3) == 0);

    /* every token label, the title and the colour-bar labels hold ink */
    assert_int_equal(count_role(f, VZ_T_XTICK), T18);
    assert_int_equal(count_role(f, VZ_T_YTICK), T18);
    assert_int_equal(count_role(f, VZ_T_TITLE), 1);
    assert_true(count_role(f, VZ_T_CBAR) >= 3);
    for (size_t k = 0; k < f->n_texts; k++) {
        const vz_text *t = &f->texts[k];
        if (ink_in_box(&im, t->x, t->y, t->w, t->h) == 0) fail_msg("label '%s' has no ink", t->s);
    }
    /* the canvas corners stay white (no ink outside the layout) */
    static const unsigned char white[3] = {255, 255, 255};
    assert_rgb(px(&im, 0, 0), white, "top-left corner");
    assert_rgb(px(&im, im.w - 1, im.h - 1), white, "bottom-right corner");

    /* colour bar: top = viridis(1), bottom = viridis(0) */
    int top = -1, bottom = -1, cbx = -1;
    for (size_t k = 0; k < f->n_rects; k++) {
        const vz_rect *c = &f->rects[k];
        if (c->kind != 3) continue;
        if (top < 0 || c->y < top) top = c->y;
        if (c->y + c->h - 1 > bottom) bottom = c->y + c->h - 1;
        cbx = c->x + c->w / 2;
    }
    assert_true(top >= 0);
    assert_rgb(px(&im, cbx, top), one, "colour bar top");
    assert_rgb(px(&im, cbx, bottom), zero, "colour bar bottom");

    /* the middle dot of the title has a glyph in the font */
    FT_Library lib;
    FT_Face face;
    assert_int_equal(FT_Init_FreeType(&lib), 0);
    assert_int_equal(FT_New_Face(lib, f->font_file, 0, &face), 0);
    assert_true(FT_Get_Char_Index(face, 0xB7) != 0);
    FT_Done_Face(face);
    FT_Done_FreeType(lib);

    free(im.rgb);
    free(path);
    hs_viz_figure_destroy(f);
}

static void grid_png_shares_one_scale_and_has_headers(void **state)
{
    (void)state;
    enum { L = 2, H = 4 };
    static float p[L * H * T18 * T18];
    for (int k = 0; k < L * H; k++) known_pattern(p + k * T18 * T18, T18);
    /* panel 5 (L1H1): cell (4, 2) = 0.5 */
    p[5 * T18 * T18 + 4 * T18 + 2] = 0.5f;
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    hs_viz_options o; /* the layers x heads arrangement asked: its headers */
    hs_viz_options_default(&o);
    o.layout_rows = L;
    o.layout_cols = H;
    assert_int_equal(hs_viz_grid_figure(&f, p, L, H, T18, TOKS, "attention", &o, &err), HS_OK);
    char *path = tmp_path("viz_grid.png");
    assert_int_equal(hs_viz_figure_write_png(f, path, NULL, &err), HS_OK);
    assert_pngcheck(path);
    image im;
    read_png(path, &im);
    assert_int_equal(im.w, (int)hs_viz_figure_width(f));
    for (int k = 0; k < L * H; k++)
        for (int i = 0; i < T18; i += 3)
            for (int j = 0; j < T18; j += 2) {
                const vz_rect *r = find_cell(f, k, i, j);
                unsigned char want[3];
                if (j > i) {
                    assert_masked(&im, r, "grid cell");
                    continue;
                }
                hs_viz_cmap_rgb(HS_VIZ_CMAP_VIRIDIS, p[(k * T18 + i) * T18 + j], want);
                assert_rgb(px(&im, r->x + r->w / 2, r->y + r->h / 2), want, "grid cell");
            }
    static const unsigned char half[3] = {0x21, 0x91, 0x8c};
    const vz_rect *r = find_cell(f, 5, 4, 2);
    assert_rgb(px(&im, r->x + r->w / 2, r->y + r->h / 2), half, "L1H1 (4,2) = 0.5");
    /* headers L0, L1, H0..H3 */
    assert_int_equal(count_role(f, VZ_T_HEADER), L + H);
    const char *want_hdr[] = {"H0", "H1", "H2", "H3", "L0", "L1"};
    for (int k = 0; k < 6; k++) {
        int found = 0;
        for (size_t i = 0; i < f->n_texts; i++)
            if (f->texts[i].role == VZ_T_HEADER && strcmp(f->texts[i].s, want_hdr[k]) == 0) {
                found = 1;
                assert_true(ink_in_box(&im, f->texts[i].x, f->texts[i].y, f->texts[i].w,
                                       f->texts[i].h) > 0);
            }
        if (!found) fail_msg("header %s missing", want_hdr[k]);
    }
    /* outer axes only: y labels once per layer row, x labels once per head column */
    assert_int_equal(count_role(f, VZ_T_YTICK), L * T18);
    assert_int_equal(count_role(f, VZ_T_XTICK), H * T18);
    free(im.rgb);
    free(path);
    hs_viz_figure_destroy(f);
}

static void signed_png_is_centred_on_zero(void **state)
{
    (void)state;
    float m[3 * 4] = {-2.0f, 0.0f, 2.0f, 1.0f, 0.5f, -0.5f, 0.0f, 0.0f, 1.5f, -1.0f, 0.25f, 0.0f};
    const char *rl[] = {"L0H0", "L0H1", "embed"};
    const char *cl[] = {"L1H0 Q", "L1H0 K", "L1H0 V", "a very long column label!!"};
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    hs_viz_options o;
    hs_viz_options_default(&o);
    o.range = HS_VIZ_RANGE_AUTO;
    o.annotate = 1;
    assert_int_equal(hs_viz_signed_figure(&f, m, 3, 4, rl, cl, "W_O W_Q", "to", "from", &o, &err),
                     HS_OK);
    char *path = tmp_path("viz_signed.png");
    assert_int_equal(hs_viz_figure_write_png(f, path, NULL, &err), HS_OK);
    assert_pngcheck(path);
    image im;
    read_png(path, &im);
    static const unsigned char blue[3] = {0x05, 0x30, 0x61}, red[3] = {0x67, 0x00, 0x1f};
    unsigned char mid[3];
    hs_viz_cmap_rgb(HS_VIZ_CMAP_DIVERGING, 0.5, mid);
    /* sample off-centre (the annotation text sits in the middle) */
    const vz_rect *r = find_cell(f, 0, 0, 0);
    assert_rgb(px(&im, r->x + 2, r->y + 2), blue, "-max is the blue end");
    r = find_cell(f, 0, 0, 2);
    assert_rgb(px(&im, r->x + 2, r->y + 2), red, "+max is the red end");
    r = find_cell(f, 0, 0, 1);
    assert_rgb(px(&im, r->x + 2, r->y + 2), mid, "0 is the centre");
    assert_int_equal(count_role(f, VZ_T_ANNOT), 12);
    assert_int_equal(count_role(f, VZ_T_AXIS), 2);
    for (size_t k = 0; k < f->n_texts; k++) {
        const vz_text *t = &f->texts[k];
        if (ink_in_box(&im, t->x, t->y, t->w, t->h) == 0 && t->role != VZ_T_ANNOT)
            fail_msg("label '%s' has no ink", t->s);
    }
    /* the long label was shortened to 24 code points with an ellipsis */
    int found = 0;
    for (size_t k = 0; k < f->n_texts; k++)
        if (f->texts[k].role == VZ_T_XTICK && strncmp(f->texts[k].s, "a very long", 11) == 0) {
            assert_int_equal(vz_utf8_len(f->texts[k].s), HS_VIZ_MAX_LABEL);
            assert_non_null(strstr(f->texts[k].s, "\xe2\x80\xa6"));
            found = 1;
        }
    assert_true(found);
    free(im.rgb);
    free(path);
    hs_viz_figure_destroy(f);
}

static void bars_png_has_signed_bars_and_labels(void **state)
{
    (void)state;
    float v[5] = {1.5f, -0.75f, 0.0f, 3.0f, -2.0f};
    const char *lb[] = {"embed", "L0H0", "L0H1", "L1H0", "mlp1"};
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    assert_int_equal(hs_viz_bars_figure(&f, v, 5, lb, "DLA", "logit diff", NULL, &err), HS_OK);
    char *path = tmp_path("viz_bars.png");
    assert_int_equal(hs_viz_figure_write_png(f, path, NULL, &err), HS_OK);
    assert_pngcheck(path);
    image im;
    read_png(path, &im);
    int nbars = 0;
    for (size_t k = 0; k < f->n_rects; k++) {
        const vz_rect *r = &f->rects[k];
        if (r->kind != 4) continue;
        nbars++;
        float val = v[r->row];
        const unsigned char *c = px(&im, r->x + r->w / 2, r->y + r->h / 2);
        if (val > 0) assert_true(c[0] > c[2]); /* red */
        else assert_true(c[2] > c[0]);         /* blue */
    }
    assert_int_equal(nbars, 4); /* the zero bar has no width */
    /* bar lengths are proportional to the values */
    int len3 = 0, len0 = 0;
    for (size_t k = 0; k < f->n_rects; k++) {
        if (f->rects[k].kind != 4) continue;
        if (f->rects[k].row == 3) len3 = f->rects[k].w;
        if (f->rects[k].row == 0) len0 = f->rects[k].w;
    }
    assert_true(abs(len3 - 2 * len0) <= 2);
    assert_int_equal(count_role(f, VZ_T_LABEL), 5);
    assert_int_equal(count_role(f, VZ_T_VALUE), 5);
    for (size_t k = 0; k < f->n_texts; k++) {
        const vz_text *t = &f->texts[k];
        if (ink_in_box(&im, t->x, t->y, t->w, t->h) == 0) fail_msg("label '%s' has no ink", t->s);
    }
    free(im.rgb);
    free(path);
    hs_viz_figure_destroy(f);
}

static void options_change_dpi_size_and_colour_map(void **state)
{
    (void)state;
    float p[4 * 4];
    known_pattern(p, 4);
    const char *t4[] = {"a", "b", "c", "d"};
    hs_viz_options o;
    hs_viz_options_default(&o);
    o.dpi = 150;
    o.cmap = HS_VIZ_CMAP_GREYS;
    o.width_in = 4.0;
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    assert_int_equal(hs_viz_attention_figure(&f, p, 4, t4, NULL, &o, &err), HS_OK);
    assert_true(labs((long)hs_viz_figure_width(f) - 600) <= 40); /* 4 in at 150 dpi */
    char *path = tmp_path("viz_opts.png");
    assert_int_equal(hs_viz_figure_write_png(f, path, NULL, &err), HS_OK);
    assert_pngcheck(path);
    image im;
    read_png(path, &im);
    assert_int_equal(im.ppm_x, 5906); /* 150 dpi */
    const vz_rect *r = find_cell(f, 0, 0, 0);
    static const unsigned char black[3] = {0, 0, 0};
    assert_rgb(px(&im, r->x + r->w / 2, r->y + r->h / 2), black, "greys(1) is black");
    free(im.rgb);
    free(path);
    hs_viz_figure_destroy(f);

    /* auto range: the largest value gets the top colour */
    float q[2 * 2] = {0.2f, 0.0f, 0.1f, 0.4f};
    hs_viz_options_default(&o);
    o.range = HS_VIZ_RANGE_AUTO;
    assert_int_equal(hs_viz_attention_figure(&f, q, 2, t4, NULL, &o, &err), HS_OK);
    unsigned char *rgb;
    size_t w, h;
    assert_int_equal(hs_viz_figure_rgb(f, &rgb, &w, &h, &err), HS_OK);
    r = find_cell(f, 0, 1, 1);
    static const unsigned char one[3] = {0xfd, 0xe7, 0x25};
    assert_rgb(rgb + ((size_t)(r->y + r->h / 2) * w + (size_t)(r->x + r->w / 2)) * 3, one,
               "auto max");
    free(rgb);
    hs_viz_figure_destroy(f);
}

/* The file's bytes, malloc'd (*n its size). */
static unsigned char *slurp(const char *path, size_t *n)
{
    unsigned char *b = NULL;
    hs_error err = {0};
    if (hs_read_file(path, &b, n, &err) != HS_OK) fail_msg("%s", err.msg);
    return b;
}

/* Number of IDAT chunks in a PNG file's bytes (one per deflate strip). */
static int count_idat(const unsigned char *b, size_t n)
{
    int k = 0;
    for (size_t at = 8; at + 12 <= n;) {
        size_t len = (size_t)b[at] << 24 | (size_t)b[at + 1] << 16 | (size_t)b[at + 2] << 8 |
                     b[at + 3];
        k += memcmp(b + at + 4, "IDAT", 4) == 0;
        at += 12 + len;
    }
    return k;
}

/* The strip encoder: a 300 dpi grid (13 MB of rows, many strips) decodes to
 * exactly the pixels cairo drew, and the file's bytes are the same on no
 * pool, a pool of 1 and a pool of 2; so are every filter's, whose rows
 * reach back across the strip cuts; a small figure is one strip. */
static void png_strips_decode_to_cairo_pixels_for_any_thread_count(void **state)
{
    (void)state;
    enum { L = 2, H = 4 };
    float p[L * H * T18 * T18];
    for (int k = 0; k < L * H; k++) {
        known_pattern(p + k * T18 * T18, T18);
        p[k * T18 * T18 + 9 * T18 + (k % 9)] = 0.125f * (float)k; /* panels differ */
    }
    hs_viz_options o;
    hs_viz_options_default(&o);
    o.dpi = 300;
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    assert_int_equal(hs_viz_grid_figure(&f, p, L, H, T18, TOKS, "strips", &o, &err), HS_OK);
    unsigned char *rgb;
    size_t w, h;
    assert_int_equal(hs_viz_figure_rgb(f, &rgb, &w, &h, &err), HS_OK);
    assert_true(w * h * 3 > 8 * VZ_PNG_STRIP_BYTES);
    hs_pool *p1 = NULL, *p2 = NULL;
    assert_int_equal(hs_pool_create(1, &p1, &err), HS_OK);
    assert_int_equal(hs_pool_create(2, &p2, &err), HS_OK);
    hs_pool *pools[3] = {NULL, p1, p2};
    char *path = tmp_path("viz_strips.png");
    unsigned char *ref = NULL;
    size_t nref = 0;
    for (int k = 0; k < 3; k++) {
        assert_int_equal(hs_viz_figure_write_png(f, path, pools[k], &err), HS_OK);
        size_t n;
        unsigned char *b = slurp(path, &n);
        if (k == 0) {
            assert_pngcheck(path);
            assert_true(count_idat(b, n) > 8);
            image im;
            read_png(path, &im);
            assert_int_equal(im.w, (int)w);
            assert_int_equal(im.h, (int)h);
            assert_int_equal(im.ppm_x, 11811); /* 300 dpi */
            assert_memory_equal(im.rgb, rgb, w * h * 3);
            free(im.rgb);
            ref = b;
            nref = n;
            continue;
        }
        assert_int_equal(n, nref);
        assert_memory_equal(b, ref, n);
        free(b);
    }
    free(ref);
    /* every filter and the adaptive choice, from RGB bytes: pixels and bytes */
    static const int filters[] = {PNG_FILTER_SUB, PNG_FILTER_UP, PNG_FILTER_AVG, PNG_FILTER_PAETH,
                                  PNG_ALL_FILTERS};
    for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++) {
        vz_png_params pp = {1, Z_DEFAULT_STRATEGY, filters[i]};
        assert_int_equal(vz_png_write_rgb(path, rgb, (int)w, (int)h, 300, &pp, p1, &err), HS_OK);
        unsigned char *a = slurp(path, &nref);
        assert_pngcheck(path);
        image im;
        read_png(path, &im);
        assert_memory_equal(im.rgb, rgb, w * h * 3);
        free(im.rgb);
        assert_int_equal(vz_png_write_rgb(path, rgb, (int)w, (int)h, 300, &pp, p2, &err), HS_OK);
        size_t n;
        unsigned char *b = slurp(path, &n);
        assert_int_equal(n, nref);
        assert_memory_equal(a, b, n);
        free(a);
        free(b);
    }
    free(rgb);
    hs_viz_figure_destroy(f);
    /* a small figure: one strip (one IDAT), the same on the pool */
    float q[2 * 2] = {1, 0, 0.5f, 0.5f};
    const char *t2[] = {"a", "b"};
    o.dpi = 72;
    assert_int_equal(hs_viz_attention_figure(&f, q, 2, t2, NULL, &o, &err), HS_OK);
    assert_true(hs_viz_figure_width(f) * hs_viz_figure_height(f) * 3 < VZ_PNG_STRIP_BYTES);
    assert_int_equal(hs_viz_figure_write_png(f, path, p2, &err), HS_OK);
    unsigned char *b = slurp(path, &nref);
    assert_int_equal(count_idat(b, nref), 1);
    free(b);
    assert_int_equal(hs_viz_figure_rgb(f, &rgb, &w, &h, &err), HS_OK);
    image im;
    read_png(path, &im);
    assert_memory_equal(im.rgb, rgb, w * h * 3);
    free(im.rgb);
    free(rgb);
    hs_viz_figure_destroy(f);
    hs_pool_destroy(p1);
    hs_pool_destroy(p2);
    free(path);
}

/* ------------------------------------------------------------------------ */
/* SVG                                                                       */

static void svg_parses_and_has_one_text_per_token_label(void **state)
{
    (void)state;
    need_tool("xmllint");
    const char *toks[5] = {"<b>", "a&b", "\"q\"", "it's", "\xc3\xa9t\xc3\xa9"};
    float p[5 * 5];
    known_pattern(p, 5);
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    assert_int_equal(
        hs_viz_attention_figure(&f, p, 5, toks, "L0H0 \xc2\xb7 <pattern> & more", NULL, &err),
        HS_OK);
    char *path = tmp_path("viz_head.svg");
    assert_int_equal(hs_viz_figure_write_svg(f, path, &err), HS_OK);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "xmllint --noout '%s' 2>/dev/null", path);
    assert_int_equal(run(cmd), 0);
    const char *cls[2] = {"xtick", "ytick"};
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd,
                 "test \"$(xmllint --xpath \"count(//*[local-name()='text'][@class='%s'])\" '%s')\" = 5",
                 cls[k], path);
        if (run(cmd) != 0) fail_msg("SVG does not hold 5 %s text elements", cls[k]);
        /* each label's text content is the label itself (escaping round-trips) */
        for (int i = 0; i < 5; i++) {
            char out[256];
            snprintf(out, sizeof out, "%s.txt", path);
            snprintf(cmd, sizeof cmd,
                     "xmllint --xpath \"string((//*[local-name()='text'][@class='%s'])[%d])\" '%s' > '%s'",
                     cls[k], i + 1, path, out);
            assert_int_equal(run(cmd), 0);
            FILE *fp = fopen(out, "rb");
            assert_non_null(fp);
            char got[128] = {0};
            size_t n = fread(got, 1, sizeof got - 1, fp);
            fclose(fp);
            while (n > 0 && got[n - 1] == '\n') got[--n] = '\0';
            assert_string_equal(got, toks[i]);
            unlink(out);
        }
    }
    /* the cells as one group: runs of one colour in cell units (at most the 15
       plain cells, at least a row's worth: the known pattern's rows differ),
       then the 10 hatched masked cells; no image */
    snprintf(cmd, sizeof cmd,
             "n=$(xmllint --xpath \"count(//*[local-name()='g'][@class='cells'][@data-rows='5']"
             "[@data-cols='5']/*[1]/*[local-name()='path'])\" '%s') && test $n -ge 5 && test $n -le 15 && "
             "test \"$(xmllint --xpath \"count(//*[local-name()='g'][@class='cells']"
             "/*[position() > 1][local-name()='rect'][@class='masked'])\" '%s')\" = 10 && "
             "test \"$(xmllint --xpath \"count(//*[local-name()='image'])\" '%s')\" = 0 && "
             "test \"$(xmllint --xpath \"count(//*[local-name()='rect'][@class='masked'])\" '%s')\" = 10",
             path, path, path, path);
    assert_int_equal(run(cmd), 0);
    free(path);

    /* a grid, a signed matrix and bars also parse */
    hs_viz_figure_destroy(f);
    static float g[2 * 3 * 5 * 5];
    for (int k = 0; k < 6; k++) known_pattern(g + k * 25, 5);
    assert_int_equal(hs_viz_grid_figure(&f, g, 2, 3, 5, toks, "grid", NULL, &err), HS_OK);
    path = tmp_path("viz_grid.svg");
    assert_int_equal(hs_viz_figure_write_svg(f, path, &err), HS_OK);
    snprintf(cmd, sizeof cmd, "xmllint --noout '%s' 2>/dev/null", path);
    assert_int_equal(run(cmd), 0);
    free(path);
    hs_viz_figure_destroy(f);
    float v[3] = {1, -1, 0.5f};
    assert_int_equal(hs_viz_bars_figure(&f, v, 3, toks, "b<a>rs", NULL, NULL, &err), HS_OK);
    path = tmp_path("viz_bars.svg");
    assert_int_equal(hs_viz_figure_write_svg(f, path, &err), HS_OK);
    snprintf(cmd, sizeof cmd, "xmllint --noout '%s' 2>/dev/null", path);
    assert_int_equal(run(cmd), 0);
    free(path);
    hs_viz_figure_destroy(f);
}

/* A 5,000-character title, axis label and bar label go through the figure,
 * SVG and JSON writers: the figure refuses a title it cannot fit, with a
 * reason; the SVG stays well-formed XML (no escape cut in half; tick labels
 * are shortened with an ellipsis by design); the JSON carries each text whole
 * (no fixed buffer on the way). */
static void long_texts_reach_every_figure_writer(void **state)
{
    (void)state;
    need_tool("xmllint");
    char *big = malloc(5001);
    assert_non_null(big);
    for (int i = 0; i < 5000; i++) big[i] = "a<&b"[i % 4]; /* escapes that grow in XML */
    big[4996] = 'E', big[4997] = 'N', big[4998] = 'D', big[4999] = '!';
    big[5000] = '\0';
    const char *labels[2] = {big, "short"};
    const float v[2] = {0.5f, -1.0f};
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    /* a title that long wraps past the canvas cap: a clear error, not a cut title */
    assert_int_equal(hs_viz_bars_figure(&f, v, 2, labels, big, NULL, NULL, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "cap"));
    if (hs_viz_bars_figure(&f, v, 2, labels, "long label", "units", NULL, &err) != HS_OK)
        fail_msg("%s", err.msg);
    char *path = tmp_path("viz_long.svg");
    assert_int_equal(hs_viz_figure_write_svg(f, path, &err), HS_OK);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "xmllint --noout '%s' 2>/dev/null", path);
    assert_int_equal(run(cmd), 0);
    unlink(path);
    free(path);
    hs_viz_figure_destroy(f);
    cJSON *j = NULL;
    assert_int_equal(hs_viz_bars_json(&j, v, 2, labels, big, big, &err), HS_OK);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "title")), big);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(j, "xlabel")), big);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "labels"), 0)), big);
    cJSON_Delete(j);
    free(big);
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                      */

static float rnd(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / 16777216.0f;
}

static void json_attention_round_trips_exactly(void **state)
{
    (void)state;
    enum { NH = 3, T = 7 };
    float a[NH * T * T];
    uint32_t seed = 12345;
    for (int i = 0; i < NH * T * T; i++) a[i] = rnd(&seed);
    a[0] = 0.1f;
    a[1] = 1.0f / 3.0f;
    a[2] = 1e-8f;
    a[3] = 0.0f;
    a[4] = 1.17549435e-38f;  /* FLT_MIN */
    a[5] = 16777217.0f;      /* rounds to 16777216 in float */
    a[6] = -0.7f;
    const char *names[NH] = {"L0H0", "L0H1", "L1H0"};
    const char *toks[T] = {"the", "\"q\"", "a\\b", "\xc3\xa9", "x", "y", "."};
    cJSON *j = NULL;
    hs_error err = {0};
    assert_int_equal(hs_viz_attention_json(&j, a, NH, T, toks, names, "t \xc2\xb7 u", &err), HS_OK);
    char *path = tmp_path("viz_attn.json");
    assert_int_equal(hs_viz_write_json(j, path, &err), HS_OK);
    cJSON_Delete(j);

    unsigned char *text;
    size_t n;
    assert_int_equal(hs_read_file(path, &text, &n, &err), HS_OK);
    cJSON *back = cJSON_ParseWithLengthOpts((const char *)text, n, NULL, 0);
    assert_non_null(back);
    cJSON *shape = cJSON_GetObjectItemCaseSensitive(back, "shape");
    assert_int_equal(cJSON_GetArraySize(shape), 3);
    assert_int_equal(cJSON_GetArrayItem(shape, 0)->valueint, NH);
    assert_int_equal(cJSON_GetArrayItem(shape, 1)->valueint, T);
    assert_int_equal(cJSON_GetArrayItem(shape, 2)->valueint, T);
    cJSON *tk = cJSON_GetObjectItemCaseSensitive(back, "tokens");
    assert_int_equal(cJSON_GetArraySize(tk), T);
    for (int i = 0; i < T; i++) assert_string_equal(cJSON_GetArrayItem(tk, i)->valuestring, toks[i]);
    cJSON *hn = cJSON_GetObjectItemCaseSensitive(back, "attention_head_names");
    assert_int_equal(cJSON_GetArraySize(hn), NH);
    assert_string_equal(cJSON_GetArrayItem(hn, 2)->valuestring, "L1H0");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(back, "title")->valuestring, "t \xc2\xb7 u");
    cJSON *att = cJSON_GetObjectItemCaseSensitive(back, "attention");
    assert_int_equal(cJSON_GetArraySize(att), NH);
    for (int h = 0; h < NH; h++) {
        cJSON *hd = cJSON_GetArrayItem(att, h);
        assert_int_equal(cJSON_GetArraySize(hd), T);
        for (int d = 0; d < T; d++) {
            cJSON *row = cJSON_GetArrayItem(hd, d);
            assert_int_equal(cJSON_GetArraySize(row), T);
            for (int s = 0; s < T; s++) {
                float got = (float)cJSON_GetArrayItem(row, s)->valuedouble;
                float want = a[(h * T + d) * T + s];
                if (got != want)
                    fail_msg("attention[%d][%d][%d]: %.9g != %.9g", h, d, s, got, want);
            }
        }
    }
    /* short numbers, not float noise: 0.1f is printed as 0.1 */
    assert_non_null(strstr((const char *)text, "0.1,"));
    assert_null(strstr((const char *)text, "0.100000001"));
    cJSON_Delete(back);
    free(text);
    free(path);
}

static void json_signed_and_bars_round_trip(void **state)
{
    (void)state;
    float m[2 * 3] = {-1.5f, 0.333333343f, 2e-5f, 1e6f, -0.0f, 7.25f};
    const char *rl[] = {"r0", "r1"}, *cl[] = {"c0", "c1", "c2"};
    cJSON *j = NULL;
    hs_error err = {0};
    assert_int_equal(hs_viz_signed_json(&j, m, 2, 3, rl, cl, "M", "x", NULL, &err), HS_OK);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    cJSON *b = cJSON_Parse(s);
    assert_non_null(b);
    cJSON *vals = cJSON_GetObjectItemCaseSensitive(b, "values");
    assert_int_equal(cJSON_GetArraySize(vals), 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(cJSON_GetArraySize(cJSON_GetArrayItem(vals, i)), 3);
        for (int k = 0; k < 3; k++)
            assert_true((float)cJSON_GetArrayItem(cJSON_GetArrayItem(vals, i), k)->valuedouble ==
                        m[i * 3 + k]);
    }
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(b, "ylabel")));
    cJSON_Delete(b);
    cJSON_free(s);

    float v[3] = {0.3f, -12.5f, 1e-3f};
    const char *bl[] = {"a", "b", "c"};
    assert_int_equal(hs_viz_bars_json(&j, v, 3, bl, "DLA", "logit", &err), HS_OK);
    s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    b = cJSON_Parse(s);
    vals = cJSON_GetObjectItemCaseSensitive(b, "values");
    assert_int_equal(cJSON_GetArraySize(vals), 3);
    for (int k = 0; k < 3; k++) assert_true((float)cJSON_GetArrayItem(vals, k)->valuedouble == v[k]);
    cJSON_Delete(b);
    cJSON_free(s);

    /* non-finite numbers are refused */
    m[1] = NAN;
    assert_int_equal(hs_viz_signed_json(&j, m, 2, 3, rl, cl, NULL, NULL, NULL, &err),
                     HS_ERR_NUMERIC);
    assert_null(j);
}

/* ------------------------------------------------------------------------ */
/* Terminal rows                                                             */

static void rows_match_the_chapter_format_and_wrap(void **state)
{
    (void)state;
    const char *toks[4] = {"the", "animal", "did", "not"};
    float r[2 * 4] = {0.0f, 0.7f, 0.004f, 0.296f, 1.0f, 0.0f, -0.001f, 0.0f};
    char *text;
    size_t n;
    hs_error err = {0};
    assert_int_equal(hs_viz_rows_format(&text, &n, r, 2, 4, NULL, toks, 0, &err), HS_OK);
    assert_string_equal(text, "L0  the:0.00 animal:0.70 did:0.00 not:0.30\n"
                              "L1  the:1.00 animal:0.00 did:0.00 not:0.00\n");
    assert_int_equal(n, strlen(text));
    free(text);

    /* wrapped at 24 columns; continuation lines indented under the items */
    assert_int_equal(hs_viz_rows_format(&text, &n, r, 2, 4, NULL, toks, 24, &err), HS_OK);
    assert_string_equal(text, "L0  the:0.00 animal:0.70\n"
                              "    did:0.00 not:0.30\n"
                              "L1  the:1.00 animal:0.00\n"
                              "    did:0.00 not:0.00\n");
    free(text);

    /* 18 tokens at width 60: no line is longer than 60 columns */
    float r18[T18];
    for (int i = 0; i < T18; i++) r18[i] = (float)i / 17.0f;
    const char *lab[1] = {"L1 (head mean)"};
    assert_int_equal(hs_viz_rows_format(&text, &n, r18, 1, T18, lab, TOKS, 60, &err), HS_OK);
    int lines = 0;
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl);
        assert_true(nl - line <= 60);
        if (lines > 0) assert_true(strncmp(line, "                ", 16) == 0);
        lines++;
        line = nl + 1;
    }
    assert_true(lines >= 3);
    free(text);

    /* to a FILE*, and a failing stream is reported */
    FILE *fp = tmpfile();
    assert_non_null(fp);
    assert_int_equal(hs_viz_rows_write(fp, r, 2, 4, NULL, toks, 0, &err), HS_OK);
    assert_int_equal(ftell(fp), 86);
    fclose(fp);
    fp = fopen("/dev/full", "w");
    if (fp != NULL) {
        assert_int_equal(hs_viz_rows_write(fp, r, 2, 4, NULL, toks, 0, &err), HS_ERR_IO);
        fclose(fp);
    }
    r[3] = INFINITY;
    assert_int_equal(hs_viz_rows_format(&text, &n, r, 2, 4, NULL, toks, 0, &err), HS_ERR_NUMERIC);
}

/* ------------------------------------------------------------------------ */
/* Errors and atomic writes                                                  */

static void bad_inputs_get_clear_errors(void **state)
{
    (void)state;
    float p[3 * 3];
    known_pattern(p, 3);
    const char *t3[] = {"a", "b", "c"};
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    hs_viz_options o;
    hs_viz_options_default(&o);
    o.dpi = 0;
    assert_int_equal(hs_viz_attention_figure(&f, p, 3, t3, NULL, &o, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "dpi"));
    assert_null(f);
    assert_int_equal(hs_viz_attention_figure(&f, p, 0, t3, NULL, NULL, &err), HS_ERR_INPUT);
    const char *bad[] = {"a", "\xff\xfe", "c"};
    assert_int_equal(hs_viz_attention_figure(&f, p, 3, bad, NULL, NULL, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "UTF-8"));
    /* NaN in a masked cell is ignored, in a visible cell refused */
    p[0 * 3 + 2] = NAN;
    assert_int_equal(hs_viz_attention_figure(&f, p, 3, t3, NULL, NULL, &err), HS_OK);
    hs_viz_figure_destroy(f);
    p[2 * 3 + 1] = NAN;
    assert_int_equal(hs_viz_attention_figure(&f, p, 3, t3, NULL, NULL, &err), HS_ERR_NUMERIC);
    /* a missing font is an I/O error naming it */
    known_pattern(p, 3);
    hs_viz_options_default(&o);
    o.font_path = "/nonexistent/font.ttf";
    assert_int_equal(hs_viz_attention_figure(&f, p, 3, t3, NULL, &o, &err), HS_ERR_IO);
    assert_non_null(strstr(err.msg, "/nonexistent/font.ttf"));
    /* $HS_FONT overrides fontconfig */
    const char *mono = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf";
    if (access(mono, R_OK) == 0) {
        setenv("HS_FONT", mono, 1);
        assert_int_equal(hs_viz_attention_figure(&f, p, 3, t3, NULL, NULL, &err), HS_OK);
        assert_string_equal(f->font_file, mono);
        hs_viz_figure_destroy(f);
        unsetenv("HS_FONT");
    }
    assert_int_equal(hs_viz_attention_figure(&f, p, 3, t3, NULL, NULL, &err), HS_OK);
    assert_non_null(strstr(f->font_file, "DejaVuSans"));
    hs_viz_figure_destroy(f);
}

static void writes_are_atomic_and_unwritable_paths_fail_clearly(void **state)
{
    (void)state;
    float p[2 * 2] = {1, 0, 0.5f, 0.5f};
    const char *t2[] = {"a", "b"};
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    assert_int_equal(hs_viz_attention_figure(&f, p, 2, t2, NULL, NULL, &err), HS_OK);
    assert_int_equal(hs_viz_figure_write_png(f, "/nonexistent-dir/x.png", NULL, &err), HS_ERR_IO);
    assert_non_null(strstr(err.msg, "/nonexistent-dir/x.png"));
    assert_int_equal(hs_viz_figure_write_svg(f, "/nonexistent-dir/x.svg", &err), HS_ERR_IO);
    assert_int_equal(hs_viz_figure_write_png(f, "/dev/full", NULL, &err), HS_ERR_IO);
    char *dir = tmp_path("");
    assert_int_equal(hs_viz_figure_write_png(f, dir, NULL, &err), HS_ERR_IO);
    free(dir);

    /* an existing file survives a write that fails inside libpng */
    char *path = tmp_path("viz_keep.png");
    assert_int_equal(hs_write_file_atomic(path, "keep", 4, &err), HS_OK);
    unsigned char rgb[2 * 2 * 3] = {0};
    vz_png_params broken = {42, Z_RLE, PNG_FILTER_SUB}; /* zlib refuses level 42 */
    hs_status st = vz_png_write_rgb(path, rgb, 2, 2, 300, &broken, NULL, &err);
    assert_int_equal(st, HS_ERR_IO);
    assert_non_null(strstr(err.msg, "zlib"));
    unsigned char *back;
    size_t n;
    assert_int_equal(hs_read_file(path, &back, &n, &err), HS_OK);
    assert_int_equal(n, 4);
    assert_memory_equal(back, "keep", 4);
    free(back);
    /* no temp file is left behind */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "ls '%s'.tmp.* >/dev/null 2>&1", path);
    assert_int_not_equal(run(cmd), 0);
    /* and a good write replaces it */
    assert_int_equal(hs_viz_figure_write_png(f, path, NULL, &err), HS_OK);
    assert_pngcheck(path);
    free(path);
    hs_viz_figure_destroy(f);
}

/* The one XML escaping: entities, and U+FFFD for what XML 1.0 refuses. */
static void xml_escape_keeps_any_label_well_formed(void **state)
{
    (void)state;
    hs_buf b = {0};
    assert_int_equal(hs_viz_xml_escape(&b, "a<&>\"'\x01\xef\xbf\xbe\xc2\x85\xff\t"
                                           "\xe2\x80\xae\xee\x80\x80z"), 0);
    assert_string_equal(b.s, "a&lt;&amp;&gt;&quot;&apos;\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                             "\xef\xbf\xbd\t\xe2\x80\xae\xee\x80\x80z");
    hs_buf_free(&b);
}

/* Draws figure k of the shared-font test on a pool worker. */
typedef struct {
    hs_viz_figure *fig[4];
    unsigned char *rgb[4];
    char *svg[4];
} shared_font_job;

static hs_status shared_font_draw(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    shared_font_job *x = ctx;
    size_t w, h, n;
    hs_status s = hs_viz_figure_rgb(x->fig[j], &x->rgb[j], &w, &h, err);
    return s ? s : hs_viz_figure_svg(x->fig[j], &x->svg[j], &n, err);
}

/* A font opened once (hs_viz_options.font) gives the figures a font opened
 * per layout gives, pixel for pixel and byte for byte, also when the figures
 * sharing it are drawn on two threads at once after the handle is closed. */
static void a_shared_font_draws_what_its_own_font_draws(void **state)
{
    (void)state;
    static const char *tok[6] = {"the", "animal", "AV", "To", "it", "tired"};
    float pat[2 * 2 * 36];
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 6; i++) {
            float sum = 0;
            for (int j = 0; j <= i; j++) sum += (float)(1 + (i * 7 + j * 3 + k) % 5);
            for (int j = 0; j < 6; j++)
                pat[(k * 6 + i) * 6 + j] = j <= i ? (float)(1 + (i * 7 + j * 3 + k) % 5) / sum : 0;
        }
    hs_error err = {0};
    hs_viz_options o;
    hs_viz_options_default(&o);
    o.dpi = 150;
    shared_font_job own = {0}, shared = {0};
    hs_viz_font *font = NULL;
    assert_int_equal(hs_viz_font_open(NULL, &font, &err), HS_OK);
    for (int k = 0; k < 4; k++) {
        hs_viz_options ok = o;
        if (k % 2) ok.font_pt = 7;
        if (k < 2)
            assert_int_equal(hs_viz_grid_figure(&own.fig[k], pat, 2, 2, 6, tok, "grid", &ok, &err), HS_OK);
        else
            assert_int_equal(hs_viz_attention_figure(&own.fig[k], pat + 36 * k, 6, tok, "one", &ok, &err), HS_OK);
        ok.font = font;
        if (k < 2)
            assert_int_equal(hs_viz_grid_figure(&shared.fig[k], pat, 2, 2, 6, tok, "grid", &ok, &err), HS_OK);
        else
            assert_int_equal(hs_viz_attention_figure(&shared.fig[k], pat + 36 * k, 6, tok, "one", &ok, &err), HS_OK);
    }
    hs_viz_font_close(font); /* the figures keep theirs */
    hs_pool *pool = NULL;
    assert_int_equal(hs_pool_create(2, &pool, &err), HS_OK);
    assert_int_equal(hs_pool_for(NULL, 4, shared_font_draw, &own, &err), HS_OK);
    assert_int_equal(hs_pool_for(pool, 4, shared_font_draw, &shared, &err), HS_OK);
    hs_pool_destroy(pool);
    for (int k = 0; k < 4; k++) {
        size_t n = hs_viz_figure_width(own.fig[k]) * hs_viz_figure_height(own.fig[k]) * 3;
        assert_int_equal(hs_viz_figure_width(shared.fig[k]), hs_viz_figure_width(own.fig[k]));
        assert_int_equal(hs_viz_figure_height(shared.fig[k]), hs_viz_figure_height(own.fig[k]));
        assert_memory_equal(shared.rgb[k], own.rgb[k], n);
        assert_string_equal(shared.svg[k], own.svg[k]);
        free(own.rgb[k]);
        free(shared.rgb[k]);
        free(own.svg[k]);
        free(shared.svg[k]);
        hs_viz_figure_destroy(own.fig[k]);
        hs_viz_figure_destroy(shared.fig[k]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(long_texts_reach_every_figure_writer),
        cmocka_unit_test(viridis_table_has_published_values),
        cmocka_unit_test(a_shared_font_draws_what_its_own_font_draws),
        cmocka_unit_test(xml_escape_keeps_any_label_well_formed),
        cmocka_unit_test(attention_png_reads_back_with_cells_labels_and_mask),
        cmocka_unit_test(png_strips_decode_to_cairo_pixels_for_any_thread_count),
        cmocka_unit_test(grid_png_shares_one_scale_and_has_headers),
        cmocka_unit_test(signed_png_is_centred_on_zero),
        cmocka_unit_test(bars_png_has_signed_bars_and_labels),
        cmocka_unit_test(options_change_dpi_size_and_colour_map),
        cmocka_unit_test(svg_parses_and_has_one_text_per_token_label),
        cmocka_unit_test(json_attention_round_trips_exactly),
        cmocka_unit_test(json_signed_and_bars_round_trip),
        cmocka_unit_test(rows_match_the_chapter_format_and_wrap),
        cmocka_unit_test(bad_inputs_get_clear_errors),
        cmocka_unit_test(writes_are_atomic_and_unwritable_paths_fail_clearly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
