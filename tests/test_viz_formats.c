/*
 * tests/test_viz_formats.c -- one layout for PNG, PDF and SVG at every dpi
 * (issue 35: the vector outputs were laid out at 600 units per inch and the
 * PNG at its own dpi, so at 150 dpi the column grid's PNG was 6.726 in tall
 * and its PDF 6.910 in; whether a figure fitted depended on --dpi).
 *
 * Every figure kind that keeps the width promise (attention pattern, grid,
 * matrix, signed matrix, bars, rows strip, circuit graph), written at 72,
 * 150 and 300 dpi: the PNG's pixels (read from the file), the PDF's page
 * (pdfinfo) and the SVG's width and height (its attributes) are one size to
 * a pixel at that dpi; and the PDF is the same page at every dpi (one
 * layout, independent of dpi), as is the SVG.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>

#include "viz_check.h"

static const char *const TOK[] = {"<|endoftext|>", "When", " Mary", " and", " John", " went",
                                  " to", " the", " store", ",", " John", " gave"};
#define T 12

typedef struct {
    double w, h; /* inches */
} size_in;

/* The PNG's size in pixels from its IHDR. */
static void png_px(const char *path, int *w, int *h)
{
    image im;
    read_png(path, &im);
    *w = im.w, *h = im.h;
    free(im.rgb);
}

static size_in pdf_size(const char *pdf)
{
    char cmd[1024], *out = tmp_path("formats_pdfinfo.txt");
    snprintf(cmd, sizeof cmd, "pdfinfo '%s' > '%s'", pdf, out);
    assert_int_equal(run(cmd), 0);
    FILE *fp = fopen(out, "r");
    assert_non_null(fp);
    char line[512];
    size_in s = {0, 0};
    while (fgets(line, sizeof line, fp))
        if (sscanf(line, "Page size: %lf x %lf pts", &s.w, &s.h) == 2) break;
    fclose(fp);
    free(out);
    assert_true(s.w > 0 && s.h > 0);
    s.w /= 72.0, s.h /= 72.0;
    return s;
}

static size_in svg_size(const hs_viz_figure *f)
{
    char *svg = NULL;
    size_t len = 0;
    hs_error err = {0};
    assert_int_equal(hs_viz_figure_svg(f, &svg, &len, &err), HS_OK);
    size_in s = {0, 0};
    const char *w = strstr(svg, "<svg "), *a = w ? strstr(w, " width=\"") : NULL, *b = w ? strstr(w, " height=\"") : NULL;
    assert_non_null(a);
    assert_non_null(b);
    s.w = strtod(a + 8, NULL), s.h = strtod(b + 9, NULL);
    free(svg);
    return s;
}

/* Figure kind k at dpi (NULL with the reason printed when refused). */
static hs_viz_figure *kind(int k, double dpi, const char **name)
{
    static float att[2 * 2 * T * T], m[T * T], bars[T], rows[3 * T], diff[T];
    for (size_t d = 0; d < T; d++)
        for (size_t s = 0; s <= d; s++) {
            const float v = 1.0f / (float)(d + 1) + 0.01f * (float)((d * 7 + s * 3) % 5) - 0.02f;
            for (int p = 0; p < 4; p++) att[(size_t)p * T * T + d * T + s] = v;
        }
    for (size_t i = 0; i < T * T; i++) m[i] = (float)((int)(i * 37 % 23) - 11) / 7.0f;
    for (size_t i = 0; i < T; i++) bars[i] = (float)((int)(i * 5 % 11) - 5) / 3.0f;
    for (size_t i = 0; i < 3 * T; i++) rows[i] = (float)(i % T) / (float)T;
    for (size_t i = 0; i < T; i++) diff[i] = (float)((int)i - 6) / 20.0f;
    static const char *const RL[3] = {"L1H0", "L1H1", "L0H2"}, *const DL[1] = {"tired \xe2\x88\x92 wet"};
    hs_viz_options o;
    hs_viz_options_default(&o);
    o.dpi = dpi;
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    hs_status s = HS_OK;
    switch (k) {
    case 0:
        *name = "attention pattern";
        s = hs_viz_attention_figure(&f, att, T, TOK, "L0H0", &o, &err);
        break;
    case 1:
        *name = "attention grid (page)";
        o.width_in = HS_VIZ_PAGE_IN;
        s = hs_viz_grid_figure(&f, att, 2, 2, T, TOK, "every head", &o, &err);
        break;
    case 2:
        *name = "matrix";
        s = hs_viz_matrix_figure(&f, m, T, T, TOK, TOK, "a matrix", "source", "destination", &o, &err);
        break;
    case 3:
        *name = "signed matrix";
        s = hs_viz_signed_figure(&f, m, T, T, TOK, TOK, "signed", "source", "destination", &o, &err);
        break;
    case 4:
        *name = "bars";
        s = hs_viz_bars_figure(&f, bars, T, TOK, "direct logit attribution", "logit", &o, &err);
        break;
    case 5:
        *name = "rows strip";
        s = hs_viz_rows_pair_figure(&f, rows, 3, RL, diff, 1, DL, T, TOK, "rows", "source", 0.5,
                                    "difference", &o, &err);
        break;
    default: {
        *name = "circuit graph";
        static const char *const E[] = {"input->a0.h1<k>", "a0.h1->a1.h2<k>", "a1.h2->logits",
                                        "a0.h3->m0", "m0->a1.h0<v>", "a0.h2->logits"};
        static const double S[] = {0.3, 1.2, 0.9, -0.6, 0.05, 0.4};
        hs_graph g;
        double *sc;
        unsigned char *in;
        circuit_fixture(2, 4, E, S, 6, &g, &sc, &in);
        s = hs_graph_figure(&g, sc, in, "a circuit", &o, &f, NULL, NULL, &err);
        free(sc);
        free(in);
        hs_graph_free(&g);
    }
    }
    if (s != HS_OK) fail_msg("%s at %g dpi: %s", *name, dpi, err.msg);
    return f;
}

#define N_KINDS 7

static void png_pdf_svg_one_size_at_every_dpi(void **state)
{
    (void)state;
    need_tool("pdfinfo");
    static const double DPI[3] = {72, 150, 300};
    int bad = 0;
    for (int k = 0; k < N_KINDS; k++) {
        size_in pdf0 = {0, 0}, svg0 = {0, 0};
        for (int d = 0; d < 3; d++) {
            const char *name = "";
            hs_viz_figure *f = kind(k, DPI[d], &name);
            hs_error err = {0};
            char *png = tmp_path("formats.png"), *pdf = tmp_path("formats.pdf");
            assert_int_equal(hs_viz_figure_write_png(f, png, NULL, &err), HS_OK);
            assert_int_equal(hs_viz_figure_write_pdf(f, pdf, &err), HS_OK);
            int pw, ph;
            png_px(png, &pw, &ph);
            const size_in P = pdf_size(pdf), S = svg_size(f);
            const double dpi = DPI[d];
            print_message("%-22s %3g dpi: PNG %d x %d px, PDF %.1f x %.1f px, SVG %.1f x %.1f px\n", name,
                          dpi, pw, ph, P.w * dpi, P.h * dpi, S.w * dpi, S.h * dpi);
            if (fabs(P.w * dpi - pw) > 1 || fabs(P.h * dpi - ph) > 1 || fabs(S.w * dpi - pw) > 1 ||
                fabs(S.h * dpi - ph) > 1) {
                print_message("  %s at %g dpi: the three formats differ by more than a pixel\n", name, dpi);
                bad++;
            }
            if (d == 0) {
                pdf0 = P, svg0 = S;
            } else if (fabs(P.w - pdf0.w) > 1e-3 || fabs(P.h - pdf0.h) > 1e-3 || fabs(S.w - svg0.w) > 1e-3 ||
                       fabs(S.h - svg0.h) > 1e-3) {
                print_message("  %s: the PDF is %.3f x %.3f in at %g dpi, %.3f x %.3f in at 72\n", name,
                              P.w, P.h, dpi, pdf0.w, pdf0.h);
                bad++;
            }
            hs_viz_figure_destroy(f);
            free(png);
            free(pdf);
        }
    }
    assert_int_equal(bad, 0);
}

/* Whether a figure fits does not depend on the dpi: a width that fits at
 * 300 dpi fits at 36 and 1200, and one refused at 300 is refused at both. */
static void fitting_does_not_depend_on_dpi(void **state)
{
    (void)state;
    static const double DPI[3] = {36, 300, 1200};
    for (int fits = 0; fits < 2; fits++) {
        for (int d = 0; d < 3; d++) {
            hs_viz_options o;
            hs_viz_options_default(&o);
            o.dpi = DPI[d];
            o.width_in = fits ? 3.25 : 1.2;
            static float att[T * T];
            for (size_t i = 0; i < T; i++) att[i * T] = 1.0f;
            hs_viz_figure *f = NULL;
            hs_error err = {0};
            hs_status s = hs_viz_attention_figure(&f, att, T, TOK, "L0H0", &o, &err);
            if ((s == HS_OK) != fits)
                fail_msg("%g in at %g dpi: %s", o.width_in, DPI[d], s ? err.msg : "written");
            hs_viz_figure_destroy(f);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(png_pdf_svg_one_size_at_every_dpi),
        cmocka_unit_test(fitting_does_not_depend_on_dpi),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
