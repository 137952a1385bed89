/*
 * tests/test_viz_title.c -- typeset subscripts and superscripts in a title a
 * program writes (hs_viz_options.title_markup): "W_{E} W_{QK} W_{E}^{T}" is
 * laid out as runs, the scripts at 0.7x the title's size, a subscript's
 * baseline 0.25 em below the base text's and a superscript's 0.35 em above;
 * the PNG (cairo) and the SVG rendered by rsvg-convert both show the "E"'s
 * ink lower than the "W"'s and the "T"'s higher; the SVG <title> and
 * hs_viz_title_plain give the plain form; without the option (a user's
 * title, tokens) the braces stay literal.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>

#include "viz_check.h"

static const char *LAB[2] = {"a", "b"};
static const float M[4] = {0.5f, -0.25f, 1.0f, 0.0f};
#define TITLE "L0H1 W_{E} W_{QK} W_{E}^{T}"

static hs_viz_figure *figure(int markup, const char *title)
{
    hs_viz_options o;
    hs_viz_options_default(&o);
    o.title_markup = markup;
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    if (hs_viz_signed_figure(&f, M, 2, 2, LAB, LAB, title, "key", "query", &o, &err) != HS_OK)
        fail_msg("%s", err.msg);
    return f;
}

/* The index-th title item whose text is s (from 0), or NULL. */
static const vz_text *title_item(const hs_viz_figure *f, const char *s, int index)
{
    for (size_t i = 0; i < f->n_texts; i++)
        if (f->texts[i].role == VZ_T_TITLE && strcmp(f->texts[i].s, s) == 0 && index-- == 0)
            return &f->texts[i];
    return NULL;
}

static double baseline(const hs_viz_figure *f, const vz_text *t)
{
    return t->y + vz_font_ascender(f->font, t->px);
}

static void scripts_are_smaller_runs_off_the_baseline(void **state)
{
    (void)state;
    hs_viz_figure *f = figure(1, TITLE);
    const vz_text *w = title_item(f, "L0H1 W", 0), *e = title_item(f, "E", 0),
                  *qk = title_item(f, "QK", 0), *e2 = title_item(f, "E", 1),
                  *t = title_item(f, "T", 0);
    assert_non_null(w);
    assert_non_null(e);
    assert_non_null(qk);
    assert_non_null(e2);
    assert_non_null(t);
    assert_int_equal(count_role(f, VZ_T_TITLE), 7); /* "L0H1 W" E " W" QK " W" E T */
    for (size_t i = 0; i < f->n_texts; i++) assert_null(strpbrk(f->texts[i].s, "{}"));
    const double em = w->px;
    assert_true(fabs(e->px - 0.7 * em) < 1e-9);
    assert_true(fabs(t->px - 0.7 * em) < 1e-9);
    /* baselines: the subscript 0.25 em lower, the superscript 0.35 em higher (1 px rounding) */
    assert_true(fabs(baseline(f, e) - baseline(f, w) - 0.25 * em) <= 1.0);
    assert_true(fabs(baseline(f, w) - baseline(f, t) - 0.35 * em) <= 1.0);
    /* runs follow each other along one line: E starts where "L0H1 W" ends */
    assert_true(abs(e->x - (w->x + (int)lround(w->run.adv))) <= 1);
    assert_true(t->x > e2->x);
    /* the line is centred: its measured width is the runs' */
    const vz_text *last = t;
    int left = w->x, right = last->x + last->w;
    assert_true(abs((left - 0) - (f->width - right)) <= 2);
    assert_string_equal(f->title, "L0H1 W_E W_QK W_E^T");
    hs_viz_figure_destroy(f);

    char *plain = hs_viz_title_plain(TITLE);
    assert_string_equal(plain, "L0H1 W_E W_QK W_E^T");
    free(plain);
    plain = hs_viz_title_plain("a_{b c^{d}} x_{"); /* no nesting; an unclosed brace is literal */
    assert_string_equal(plain, "a_b c^{d} x_{");
    free(plain);
}

static void without_the_option_a_title_is_literal(void **state)
{
    (void)state;
    hs_viz_figure *f = figure(0, TITLE);
    assert_int_equal(count_role(f, VZ_T_TITLE), 1);
    assert_non_null(title_item(f, TITLE, 0));
    assert_string_equal(f->title, TITLE);
    hs_viz_figure_destroy(f);
}

/* Lowest and highest dark row (grey < 128) in columns [x0, x1) of rows [y0, y1). */
static void ink_rows(const unsigned char *rgb, int W, int x0, int x1, int y0, int y1, int *top,
                     int *bottom)
{
    *top = -1;
    *bottom = -1;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) {
            const unsigned char *p = rgb + ((size_t)y * (size_t)W + (size_t)x) * 3;
            if (p[0] + p[1] + p[2] < 3 * 128) {
                if (*top < 0) *top = y;
                *bottom = y;
            }
        }
}

/* In a raster of the figure: the E's ink reaches lower than the W's, the T's higher. */
static void check_raster(const hs_viz_figure *f, const unsigned char *rgb, int W, const char *what)
{
    const vz_text *w = title_item(f, "L0H1 W", 0), *e = title_item(f, "E", 0),
                  *t = title_item(f, "T", 0);
    if (!w || !e || !t) fail_msg("%s: the title is not laid out as runs", what);
    int y1 = 0; /* the title block's bottom: every title run's box */
    for (size_t i = 0; i < f->n_texts; i++)
        if (f->texts[i].role == VZ_T_TITLE) y1 = vz_imax(y1, f->texts[i].y + f->texts[i].h);
    const int y0 = 0, em = (int)lround(w->px);
    const int wx0 = w->x + w->w - (int)lround(0.9 * em); /* the W: the run's last em */
    int wt, wb, et, eb, tt, tb;
    ink_rows(rgb, W, wx0, w->x + w->w - 1, y0, y1, &wt, &wb);
    ink_rows(rgb, W, e->ix + 1, e->ix + e->iw - 1, y0, y1, &et, &eb);
    ink_rows(rgb, W, t->ix + 1, t->ix + t->iw - 1, y0, y1, &tt, &tb);
    print_message("%s: W ink rows %d..%d, E %d..%d, T %d..%d (em %d px)\n", what, wt, wb, et, eb,
                  tt, tb, em);
    if (!(wt >= 0 && et >= 0 && tt >= 0)) fail_msg("%s: a title run has no ink", what);
    if (!(eb - wb >= 0.15 * em)) fail_msg("%s: the subscript is not lowered", what);
    if (!(et - wt >= 0.15 * em)) fail_msg("%s: the subscript's top is not lower", what);
    if (!(wt - tt >= 0.05 * em)) fail_msg("%s: the superscript is not raised", what);
}

static void png_and_rsvg_show_the_scripts_lowered_and_raised(void **state)
{
    (void)state;
    need_tool("rsvg-convert");
    hs_viz_figure *f = figure(1, TITLE);
    unsigned char *rgb = NULL;
    size_t W, H;
    hs_error err = {0};
    assert_int_equal(hs_viz_figure_rgb(f, &rgb, &W, &H, &err), HS_OK);
    check_raster(f, rgb, (int)W, "PNG (cairo)");
    free(rgb);

    char *svg = tmp_path("title_markup.svg"), *png = tmp_path("title_markup_rsvg.png"), cmd[1024];
    assert_int_equal(hs_viz_figure_write_svg(f, svg, &err), HS_OK);
    snprintf(cmd, sizeof cmd, "rsvg-convert -d %g -p %g -b white '%s' -o '%s'", f->dpi, f->dpi,
             svg, png);
    if (run(cmd) != 0) fail_msg("%s failed", cmd);
    /* rsvg-convert writes RGBA over an opaque white background: read as RGB */
    image im;
    {
        FILE *fp = fopen(png, "rb");
        assert_non_null(fp);
        png_structp p = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
        png_infop info = png_create_info_struct(p);
        if (setjmp(png_jmpbuf(p))) fail_msg("libpng cannot read %s", png);
        png_init_io(p, fp);
        png_read_info(p, info);
        png_set_expand(p);
        png_set_strip_16(p);
        png_set_gray_to_rgb(p);
        png_set_strip_alpha(p);
        png_read_update_info(p, info);
        im.w = (int)png_get_image_width(p, info);
        im.h = (int)png_get_image_height(p, info);
        im.rgb = malloc((size_t)im.w * (size_t)im.h * 3);
        assert_non_null(im.rgb);
        for (int y = 0; y < im.h; y++) png_read_row(p, im.rgb + (size_t)y * (size_t)im.w * 3, NULL);
        png_destroy_read_struct(&p, &info, NULL);
        fclose(fp);
    }
    assert_true(abs(im.w - (int)W) <= 1);
    check_raster(f, im.rgb, im.w, "SVG (rsvg-convert)");
    free(im.rgb);
    free(svg);
    free(png);
    hs_viz_figure_destroy(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scripts_are_smaller_runs_off_the_baseline),
        cmocka_unit_test(without_the_option_a_title_is_literal),
        cmocka_unit_test(png_and_rsvg_show_the_scripts_lowered_and_raised),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
