/*
 * tests/test_viz_scripts.c -- fonts for every script (issue 35): labels in
 * CJK, Arabic, Hebrew, Devanagari and emoji are drawn with real glyphs, not
 * the primary font's empty .notdef boxes, in the PNG and in the PDF. DejaVu
 * Sans has no CJK or emoji; fontconfig's fallback (Debian's Noto fonts,
 * Symbola for monochrome emoji) supplies them.
 *
 * Checks: no label's shaped run holds glyph 0 (.notdef); in the PNG and in
 * the PDF rasterised by pdftoppm to the same canvas, every label has ink in
 * its box, and two labels of different characters of one script look
 * different (two .notdef boxes look the same); the PDF embeds the fallback
 * fonts as subsets (pdffonts); the SVG names their families after DejaVu
 * Sans for its renderer.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>

#include "viz_check.h"

/* Pairs of one-character labels of one script, then a word of each. */
static const char *LABELS[] = {
    "\xe4\xb8\xad",         /* U+4E2D CJK */
    "\xe6\x96\x87",         /* U+6587 CJK */
    "\xd8\xa8",             /* U+0628 ARABIC LETTER BEH */
    "\xd8\xac",             /* U+062C ARABIC LETTER JEEM */
    "\xf0\x9f\x98\x80",     /* U+1F600 GRINNING FACE */
    "\xf0\x9f\x90\x8d",     /* U+1F40D SNAKE */
    "\xe0\xa4\x95",         /* U+0915 DEVANAGARI KA */
    "\xe0\xa4\x97",         /* U+0917 DEVANAGARI GA */
    "\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d",                         /* Hebrew "shalom" */
    "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",                     /* CJK "nihongo" */
    "\xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7",                 /* Arabic "marhaba" */
    "cat \xf0\x9f\x90\x88 \xe7\x8c\xab",                        /* Latin, emoji, CJK */
};
#define N_LABELS (sizeof LABELS / sizeof *LABELS)
#define N_PAIRS 4

static hs_viz_figure *scripts_figure(void)
{
    float v[N_LABELS];
    for (size_t i = 0; i < N_LABELS; i++) v[i] = (float)(i % 3) - 0.8f;
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    hs_status s = hs_viz_bars_figure(&f, v, N_LABELS, LABELS, "labels in every script", "logit",
                                     NULL, &err);
    if (s != HS_OK) fail_msg("bars: %s", err.msg);
    return f;
}

/* The label text item showing LABELS[i] in f. */
static const vz_text *label_item(const hs_viz_figure *f, size_t i)
{
    for (size_t k = 0; k < f->n_texts; k++)
        if (f->texts[k].role == VZ_T_LABEL && strcmp(f->texts[k].s, LABELS[i]) == 0)
            return &f->texts[k];
    fail_msg("no label '%s' in the figure", LABELS[i]);
    return NULL;
}

static void every_glyph_is_found(void **state)
{
    (void)state;
    hs_viz_figure *f = scripts_figure();
    for (size_t i = 0; i < N_LABELS; i++) {
        const vz_text *t = label_item(f, i);
        assert_true(t->run.n > 0);
        for (size_t g = 0; g < t->run.n; g++)
            if (t->run.g[g].id == 0)
                fail_msg("label '%s': glyph %zu is .notdef (no font has it)", t->s, g);
    }
    hs_viz_figure_destroy(f);
}

/* Dark pixels (any channel under 128) in the box of t on an image w x h. */
static long ink_in(const image *im, const vz_text *t)
{
    long n = 0;
    for (int y = t->iy; y < t->iy + t->ih; y++)
        for (int x = t->ix; x < t->ix + t->iw; x++) {
            if (x < 0 || y < 0 || x >= im->w || y >= im->h) continue;
            const unsigned char *p = px(im, x, y);
            n += p[0] < 128 || p[1] < 128 || p[2] < 128;
        }
    return n;
}

/* Pixels (of the boxes' common size, aligned at their top-left) where the
 * ink of a and b differ by more than 64/255 in any channel. */
static long differing(const image *im, const vz_text *a, const vz_text *b)
{
    int w = vz_imin(a->iw, b->iw), h = vz_imin(a->ih, b->ih);
    long n = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const unsigned char *p = px(im, a->ix + x, a->iy + y), *q = px(im, b->ix + x, b->iy + y);
            n += abs(p[0] - q[0]) > 64 || abs(p[1] - q[1]) > 64 || abs(p[2] - q[2]) > 64;
        }
    /* a different ink size is itself a difference */
    return n + labs((long)a->iw * a->ih - (long)b->iw * b->ih);
}

static void check_raster(const hs_viz_figure *f, const image *im, const char *what)
{
    assert_int_equal(im->w, f->width);
    assert_int_equal(im->h, f->height);
    for (size_t i = 0; i < N_LABELS; i++) {
        const vz_text *t = label_item(f, i);
        long ink = ink_in(im, t);
        print_message("%s: '%s' %ld ink px in %dx%d\n", what, t->s, ink, t->iw, t->ih);
        if (ink < 4) fail_msg("%s: label '%s' has no ink in its box", what, t->s);
    }
    for (size_t p = 0; p < N_PAIRS; p++) {
        const vz_text *a = label_item(f, 2 * p), *b = label_item(f, 2 * p + 1);
        long d = differing(im, a, b);
        print_message("%s: '%s' vs '%s': %ld px differ\n", what, a->s, b->s, d);
        if (d < 8) fail_msg("%s: '%s' and '%s' look the same (empty boxes?)", what, a->s, b->s);
    }
}

static void png_and_pdf_show_the_glyphs(void **state)
{
    (void)state;
    need_tool("pdftoppm");
    need_tool("pdffonts");
    hs_viz_figure *f = scripts_figure();
    hs_error err = {0};
    char *png = tmp_path("scripts.png"), *pdf = tmp_path("scripts.pdf");
    char *ras = tmp_path("scripts_pdf"), *fonts = tmp_path("scripts_fonts.txt");
    if (hs_viz_figure_write_png(f, png, NULL, &err) != HS_OK) fail_msg("png: %s", err.msg);
    if (hs_viz_figure_write_pdf(f, pdf, &err) != HS_OK) fail_msg("pdf: %s", err.msg);
    image im;
    read_png(png, &im);
    check_raster(f, &im, "PNG");
    free(im.rgb);
    /* the PDF is drawn from its own layout (f->vec when there is one):
       rasterise it to that canvas and check that layout's boxes */
    const hs_viz_figure *v = f->vec ? f->vec : f;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "pdftoppm -singlefile -png -scale-to-x %d -scale-to-y %d '%s' '%s'",
             v->width, v->height, pdf, ras);
    assert_int_equal(run(cmd), 0);
    char rpng[1024];
    snprintf(rpng, sizeof rpng, "%s.png", ras);
    read_png(rpng, &im);
    check_raster(v, &im, "PDF (pdftoppm)");
    free(im.rgb);
    /* the fallback fonts are embedded as subsets: the CJK one at least */
    snprintf(cmd, sizeof cmd, "pdffonts '%s' > '%s'", pdf, fonts);
    assert_int_equal(run(cmd), 0);
    snprintf(cmd, sizeof cmd, "grep -q 'CJK.* yes *yes' '%s'", fonts);
    if (run(cmd) != 0) fail_msg("the PDF embeds no CJK font subset (pdffonts %s)", pdf);
    /* the SVG names the fallback families for its renderer, after DejaVu Sans */
    char *svg = NULL;
    size_t len = 0;
    assert_int_equal(hs_viz_figure_svg(f, &svg, &len, &err), HS_OK);
    const char *cjk = strstr(svg, ">\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e</text>");
    assert_non_null(cjk);
    const char *open = cjk;
    while (open > svg && strncmp(open, "<text", 5) != 0) open--;
    char *tag = strndup(open, (size_t)(cjk - open));
    if (!strstr(tag, "font-family=\"DejaVu Sans, Noto Sans CJK"))
        fail_msg("the SVG's CJK label names no CJK family: %s", tag);
    free(tag);
    free(svg);
    hs_viz_figure_destroy(f);
    free(png);
    free(pdf);
    free(ras);
    free(fonts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_glyph_is_found),
        cmocka_unit_test(png_and_pdf_show_the_glyphs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
