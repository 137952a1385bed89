/*
 * tests/test_viz_print.c -- figures a paper can use as they are. Every figure
 * type (the circuit graph: 2 x 4 in a column, 12 x 12 on a page) at --width
 * column (3.25 in) and page (6.75 in), written as PNG, SVG
 * and PDF: the physical width within 0.01 in in each (pHYs, the SVG width,
 * the PDF media box by pdfinfo), every token label present (SVG <text>, the
 * PDF's text by pdftotext), no two label boxes overlapping and no text under
 * 6 pt (viz_check.h), the PDF's fonts embedded (pdffonts), the PDF rendered
 * by pdftoppm and the SVG by rsvg-convert against the PNG (mean absolute
 * difference per channel under PARITY_MAD; not in a sanitizer build, see
 * SANITIZED), the refusal of a width that
 * cannot hold the labels, and kerning ("To", "AV") against FreeType's
 * advance plus kerning. The SVG has <title>, <desc>, a <g id> per panel and
 * for the colour bar, and the colour bar is one gradient.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>

#include "viz_check.h"

#include <ft2build.h>
#include FT_FREETYPE_H

/* Mean absolute difference per channel (0..255) allowed between the PNG and
 * another renderer's raster of the PDF or SVG: anti-aliasing of edges and
 * glyphs differs between rasterisers; a missing label or a wrong colour
 * moves it by several units. Measured: about 1-3 on these figures. */
#define PARITY_MAD 6.0

/* A sanitizer build (scripts/test.sh's asan stage) makes the same figures
 * (the library's bytes do not depend on the build: test_golden_cli pins them
 * in both) and checks everything of them here, but does not raster them again
 * with pdftoppm and rsvg-convert: those programs are not the build's, were
 * run on the same bytes by the plain build's run of this test, and are over
 * 80% of its time (perf, by command: rsvg-convert 65%, pdftoppm 20%). */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

static const char *TOK[12] = {"the", "animal", "did", "not", "cross", "the",
                              "street", "because", "it", "was", "too", "tired"};
#define NT 12

static const char *HEADS[16] = {"L0H0", "L0H1", "L0H2", "L0H3", "L1H0", "L1H1",
                                "L1H2", "L1H3", "embed", "pos_embed", "L0_mlp_out",
                                "L1_mlp_out", "ln_final_b", "b_U", "L2H0", "L2H1"};

typedef enum { K_ATTN = 0, K_GRID, K_ONLY, K_SIGNED, K_MASKED, K_BARS, K_GRAPH, K_N } kind;
static const char *KIND_NAME[K_N] = {"attention", "grid", "only", "signed", "masked", "bars", "graph"};

/* 15 tokens (the chapter's sentence) for the grids: 2 x 4 of them needed
   5.87 in at 6 pt when every panel was in the caller's 2 x 4 */
static const char *TOK15[15] = {"the", "animal", "did", "not", "cross", "the", "street", "because",
                                "it", "was", "too", "tired", ",", "so", "the"};

/* The circuit graph: 2 x 4 in a column, 12 x 12 (GPT-2 small's shape) on a page. */
static const char *const GRAPH_COL[] = {"input->a0.h1<k>", "a0.h1->a1.h2<k>", "input->a1.h2<q>",
                                        "a1.h2->logits",   "a0.h3->m0",       "m0->a1.h0<v>",
                                        "a1.h0->logits",   "input->a0.h3<q>"};
static const char *const GRAPH_PAGE[] = {
    "input->a0.h1<v>", "a0.h1->a3.h0<v>", "input->a3.h0<k>",  "a3.h0->a5.h5<k>",  "a5.h5->a8.h6<v>",
    "a5.h5->a8.h10<v>", "a8.h6->a9.h9<q>", "a8.h10->a9.h9<q>", "a3.h0->a9.h9<k>",  "input->a9.h9<v>",
    "a9.h9->logits",   "a9.h9->a10.h7<q>", "a10.h7->logits",  "input->m0",        "m0->a5.h5<v>",
    "a9.h9->a11.h10<q>", "a11.h10->m11",   "m11->logits",     "a0.h1->m0",        "input->a10.h7<v>"};
static const char *GRAPH_LABELS[2][6] = {{"input", "a0.h1", "a1.h2", "m0", "logits", "a0.h0"},
                                         {"input", "a9.h9", "a11.h10", "m11", "logits", "a6.h3"}};

static hs_status make_graph(int page, double width_in, hs_viz_figure **f, hs_error *err)
{
    const char *const *names = page ? GRAPH_PAGE : GRAPH_COL;
    const size_t n = page ? sizeof GRAPH_PAGE / sizeof *names : sizeof GRAPH_COL / sizeof *names;
    double sc[32];
    for (size_t i = 0; i < n; i++) sc[i] = (i % 3 == 1 ? -1.0 : 1.0) * (0.1 + 0.9 * (double)i / (double)n);
    hs_graph g;
    double *scores;
    unsigned char *in;
    circuit_fixture(page ? 12 : 2, page ? 12 : 4, names, sc, n, &g, &scores, &in);
    hs_viz_options o;
    hs_viz_options_default(&o);
    o.width_in = width_in;
    o.dpi = 200;
    hs_status s = hs_graph_figure(&g, scores, in, "circuit found by EAP-IG", &o, f, NULL, NULL, err);
    free(scores);
    free(in);
    hs_graph_free(&g);
    return s;
}

static void causal_rows(float *p, size_t n_panels, size_t T)
{
    for (size_t k = 0; k < n_panels; k++)
        for (size_t i = 0; i < T; i++)
            for (size_t j = 0; j < T; j++)
                p[(k * T + i) * T + j] = j > i ? 0.0f : (float)((i + j + k) % 5 + 1) / (float)(5 * (i + 1));
}

/* The figure of kind k at width_in; its labels in *labels / *n. */
static hs_status make(kind k, double width_in, hs_viz_figure **f, const char *const **labels,
                      size_t *n, hs_error *err)
{
    static float buf[8 * 15 * 15]; /* the largest: the grids' 8 panels of 15 tokens (NT is 12) */
    static unsigned char mask[NT * NT];
    hs_viz_options o;
    hs_viz_options_default(&o);
    o.width_in = width_in;
    o.dpi = 200;
    *labels = TOK;
    *n = NT;
    switch (k) {
    case K_ATTN:
        causal_rows(buf, 1, NT);
        return hs_viz_attention_figure(f, buf, NT, TOK, "L1H0 \xc2\xb7 blocks.1.attn.hook_pattern",
                                       &o, err);
    case K_GRID:
        causal_rows(buf, 8, 15);
        *labels = TOK15;
        *n = 15;
        return hs_viz_grid_figure(f, buf, 2, 4, 15, TOK15, "attention patterns of every head", &o,
                                  err);
    case K_ONLY: { /* --only of 8 heads: the caller's 1 x 8 */
        static const char *row[1] = {""};
        causal_rows(buf, 8, 15);
        *labels = TOK15;
        *n = 15;
        return hs_viz_grid_figure_labeled(f, buf, 1, 8, 15, TOK15, row, HEADS,
                                          "attention patterns of 8 heads", &o, err);
    }
    case K_SIGNED:
        for (size_t i = 0; i < 8 * NT; i++) buf[i] = (float)((int)(i * 37 % 23) - 11) * 0.013f;
        *labels = HEADS;
        *n = 8;
        o.range = HS_VIZ_RANGE_AUTO;
        o.value_label = "composition score - baseline";
        return hs_viz_signed_figure(f, buf, 8, NT, HEADS, TOK, "Q-composition", "receiver",
                                    "sender", &o, err);
    case K_MASKED:
        for (size_t i = 0; i < 8; i++)
            for (size_t j = 0; j < 8; j++) {
                mask[i * 8 + j] = j <= i;
                buf[i * 8 + j] = mask[i * 8 + j] ? NAN : (float)(i + 2 * j) * 0.1f;
            }
        *labels = HEADS;
        *n = 8;
        o.range = HS_VIZ_RANGE_AUTO;
        return hs_viz_matrix_figure_masked(f, buf, mask, 8, 8, HEADS, HEADS, "virtual weights",
                                           "receiver", "sender", &o, err);
    case K_GRAPH:
        *labels = GRAPH_LABELS[width_in > 4];
        *n = 6;
        return make_graph(width_in > 4, width_in, f, err);
    default:
        /* magnitudes that need scientific notation */
        for (size_t i = 0; i < 14; i++) buf[i] = (float)((int)(i * 7 % 11) - 3) * 1.3e-6f;
        *labels = HEADS;
        *n = 14;
        o.range = HS_VIZ_RANGE_AUTO;
        /* the DLA's axis title of --vs: 2.1 in wide at 6 pt, it wraps */
        return hs_viz_bars_figure(f, buf, 14, HEADS, "direct logit attribution",
                                  "direct contribution to logit('horse') - logit('street')", &o, err);
    }
}

static char *slurp(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    if (!p) fail_msg("cannot run %s", cmd);
    hs_buf b = {0};
    char chunk[4096];
    size_t r;
    while ((r = fread(chunk, 1, sizeof chunk, p)) > 0) hs_buf_append(&b, chunk, r);
    if (pclose(p) != 0) fail_msg("%s failed", cmd);
    char *s = hs_buf_take(&b);
    assert_non_null(s);
    return s;
}

/* Mean absolute difference per channel between two RGB PNGs of one size. */
static double mad(const char *a, const char *b)
{
    image x, y;
    read_png(a, &x);
    read_png(b, &y);
    /* a renderer may round a page's size up by one pixel */
    if (abs(x.w - y.w) > 1 || abs(x.h - y.h) > 1)
        fail_msg("%s is %dx%d, %s is %dx%d", a, x.w, x.h, b, y.w, y.h);
    int w = x.w < y.w ? x.w : y.w, h = x.h < y.h ? x.h : y.h;
    double s = 0;
    for (int r = 0; r < h; r++)
        for (int c = 0; c < w * 3; c++)
            s += abs((int)x.rgb[((size_t)r * (size_t)x.w) * 3 + (size_t)c] -
                     (int)y.rgb[((size_t)r * (size_t)y.w) * 3 + (size_t)c]);
    free(x.rgb);
    free(y.rgb);
    return s / ((double)w * h * 3);
}

/* Converts a renderer's RGBA/grey output to an 8-bit RGB PNG with pHYs (for read_png). */
static void to_rgb_png(const char *in, const char *out, double dpi)
{
    /* read with libpng as RGBA/RGB, flatten on white, write through viz */
    FILE *fp = fopen(in, "rb");
    if (!fp) fail_msg("cannot open %s", in);
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) fail_msg("libpng cannot read %s", in);
    png_init_io(png, fp);
    png_read_info(png, info);
    png_set_expand(png);
    png_set_strip_16(png);
    png_set_gray_to_rgb(png);
    png_read_update_info(png, info);
    int w = (int)png_get_image_width(png, info), h = (int)png_get_image_height(png, info);
    int ch = png_get_channels(png, info);
    unsigned char *row = malloc((size_t)w * (size_t)ch), *rgb = malloc((size_t)w * (size_t)h * 3);
    assert_non_null(row);
    assert_non_null(rgb);
    for (int y = 0; y < h; y++) {
        png_read_row(png, row, NULL);
        for (int x = 0; x < w; x++) {
            unsigned a = ch == 4 ? row[x * 4 + 3] : 255;
            for (int c = 0; c < 3; c++)
                rgb[((size_t)y * (size_t)w + (size_t)x) * 3 + (size_t)c] =
                    (unsigned char)((row[x * ch + c] * a + 255u * (255u - a) + 127u) / 255u);
        }
    }
    png_destroy_read_struct(&png, &info, NULL);
    fclose(fp);
    hs_error err = {0};
    if (vz_png_write_rgb(out, rgb, w, h, dpi, NULL, NULL, &err) != HS_OK) fail_msg("%s", err.msg);
    free(row);
    free(rgb);
}

/* Writes f as PNG, SVG and PDF and checks what a paper needs of each. */
static void check_outputs(const hs_viz_figure *f, const char *stem, double width_in,
                          const char *const *labels, size_t n, int parity)
{
    char name[128], *png, *svgp, *pdf;
    snprintf(name, sizeof name, "%s.png", stem);
    png = tmp_path(name);
    snprintf(name, sizeof name, "%s.svg", stem);
    svgp = tmp_path(name);
    snprintf(name, sizeof name, "%s.pdf", stem);
    pdf = tmp_path(name);
    hs_error err = {0};
    if (hs_viz_figure_write_png(f, png, NULL, &err) || hs_viz_figure_write_svg(f, svgp, &err) ||
        hs_viz_figure_write_pdf(f, pdf, &err))
        fail_msg("%s: %s", stem, err.msg);
    check_geometry(f, stem);

    /* PNG: pHYs */
    image im;
    read_png(png, &im);
    double w_png = im.w / (im.ppm_x * 0.0254);
    if (fabs(w_png - width_in) > 0.01) fail_msg("%s.png is %.4f in wide, not %.2f", stem, w_png, width_in);
    free(im.rgb);

    /* SVG: width attribute, one <text> per label */
    char *svg = NULL;
    size_t len;
    assert_int_equal(hs_viz_figure_svg(f, &svg, &len, &err), HS_OK);
    const char *wa = strstr(svg, "width=\"");
    assert_non_null(wa);
    double w_svg = strtod(wa + 7, NULL);
    if (fabs(w_svg - width_in) > 0.01) fail_msg("%s.svg is %.4f in wide, not %.2f", stem, w_svg, width_in);
    for (size_t i = 0; i < n; i++) {
        char needle[64];
        snprintf(needle, sizeof needle, ">%s</text>", labels[i]);
        if (!strstr(svg, needle)) fail_msg("%s.svg has no <text> '%s'", stem, labels[i]);
    }
    assert_non_null(strstr(svg, "<title>"));
    assert_non_null(strstr(svg, "<desc>"));
    /* editable: a group per panel and for the colour bar, the bar one gradient */
    if (strstr(stem, "graph")) { /* a group per node and per edge, each edge one path */
        assert_non_null(strstr(svg, "<g id=\"logits\">"));
        assert_non_null(strstr(svg, "<g id=\"e-input-a0_h1-"));
        assert_non_null(strstr(svg, "<path d=\"M"));
    } else if (!strstr(stem, "bars")) {
        assert_non_null(strstr(svg, "<g id=\"colorbar\">"));
        const char *g1 = strstr(svg, "<linearGradient");
        assert_non_null(g1);
        assert_null(strstr(g1 + 1, "<linearGradient"));
    }
    if (strstr(stem, "grid")) {
        for (int l = 0; l < 2; l++)
            for (int h = 0; h < 4; h++) {
                char id[32];
                snprintf(id, sizeof id, "<g id=\"L%dH%d\">", l, h);
                if (!strstr(svg, id)) fail_msg("%s.svg has no group %s", stem, id);
            }
        assert_non_null(strstr(svg, "<g id=\"title\">"));
    }
    free(svg);

    /* PDF: media box, embedded fonts, every label in its text */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "pdfinfo '%s'", pdf);
    char *info = slurp(cmd);
    const char *ps = strstr(info, "Page size:");
    assert_non_null(ps);
    double wpt = strtod(ps + 10, NULL);
    if (fabs(wpt / 72.0 - width_in) > 0.01)
        fail_msg("%s.pdf media box is %.4f in wide, not %.2f", stem, wpt / 72.0, width_in);
    free(info);
    snprintf(cmd, sizeof cmd, "pdffonts '%s' | tail -n +3", pdf);
    char *fonts = slurp(cmd);
    if (fonts[0] == '\0') fail_msg("%s.pdf lists no font", stem);
    for (char *line = fonts; *line;) {
        char *e = strchr(line, '\n');
        if (e) *e = '\0';
        if (line[0] && !strstr(line, " yes yes ")) fail_msg("%s.pdf: font not embedded as a subset: %s", stem, line);
        if (!e) break;
        line = e + 1;
    }
    free(fonts);
    snprintf(cmd, sizeof cmd, "pdftotext -raw '%s' -", pdf);
    char *text = slurp(cmd);
    for (size_t i = 0; i < n; i++)
        if (!strstr(text, labels[i])) fail_msg("%s.pdf has no text '%s'", stem, labels[i]);
    free(text);

    if (parity && !SANITIZED) {
        /* the PDF (pdftoppm) and the SVG (rsvg-convert) show the PNG's
           picture: the PNG of their layout (at VZ_VECTOR_DPI, whatever the
           dpi), drawn by the PNG writer */
        char *a = tmp_path("parity_pdf"), *b = tmp_path("parity_pdf.png"), *c = tmp_path("parity_svg.png");
        char *a2 = tmp_path("parity_pdf_rgb.png"), *c2 = tmp_path("parity_svg_rgb.png");
        const hs_viz_figure *pf = f->vec ? f->vec : f;
        free(png);
        png = tmp_path("parity_vec.png");
        if (hs_viz_figure_write_png(pf, png, NULL, &err)) fail_msg("%s: %s", stem, err.msg);
        double dpi = pf->dpi;
        snprintf(cmd, sizeof cmd, "pdftoppm -r %g -singlefile -png '%s' '%s'", dpi, pdf, a);
        if (run(cmd) != 0) fail_msg("%s failed", cmd);
        snprintf(cmd, sizeof cmd, "rsvg-convert -d %g -p %g -b white '%s' -o '%s'", dpi, dpi, svgp, c);
        if (run(cmd) != 0) fail_msg("%s failed", cmd);
        to_rgb_png(b, a2, dpi);
        to_rgb_png(c, c2, dpi);
        double m1 = mad(png, a2), m2 = mad(png, c2);
        print_message("%s: mean |PNG - pdftoppm| = %.3f, |PNG - rsvg| = %.3f (of 255)\n", stem, m1, m2);
        if (m1 > PARITY_MAD) fail_msg("%s: PDF differs from the PNG by %.2f per channel", stem, m1);
        if (m2 > PARITY_MAD) fail_msg("%s: SVG differs from the PNG by %.2f per channel", stem, m2);
        free(a);
        free(b);
        free(c);
        free(a2);
        free(c2);
    }
    free(png);
    free(svgp);
    free(pdf);
}

static void every_figure_at_column_and_page_width(void **state)
{
    (void)state;
    need_tool("pdfinfo");
    need_tool("pdffonts");
    need_tool("pdftotext");
    need_tool("pdftoppm");
    need_tool("rsvg-convert");
    static const double W[2] = {HS_VIZ_COLUMN_IN, HS_VIZ_PAGE_IN};
    for (int k = 0; k < K_N; k++)
        for (int w = 0; w < 2; w++) {
            hs_viz_figure *f = NULL;
            const char *const *labels;
            size_t n;
            hs_error err = {0};
            hs_status s = make((kind)k, W[w], &f, &labels, &n, &err);
            char stem[64];
            snprintf(stem, sizeof stem, "print_%s_%s", KIND_NAME[k], w ? "page" : "column");
            if (s != HS_OK) fail_msg("%s: %s", stem, err.msg);
            if (k == K_GRID || k == K_ONLY) {
                /* shared axes: the tokens left of each row of panels and
                   under each column; 8 panels in 2 x 4 on a page, 4 x 2 in a
                   column, each panel named when not in the caller's rows */
                size_t R = count_role(f, VZ_T_YTICK) / 15, C = count_role(f, VZ_T_XTICK) / 15;
                print_message("%s: %zu x %zu panels\n", stem, R, C);
                assert_int_equal(R * C, 8);
                assert_int_equal(C, w ? 4 : 2);
                if (k == K_ONLY || w == 0) assert_int_equal(count_role(f, VZ_T_HEADER), 8);
                char *svg = NULL;
                size_t len;
                assert_int_equal(hs_viz_figure_svg(f, &svg, &len, &err), HS_OK);
                for (int h = 0; h < 8; h++) {
                    char needle[32];
                    snprintf(needle, sizeof needle, ">%s</text>", HEADS[h]);
                    if ((k == K_ONLY || w == 0) && !strstr(svg, needle))
                        fail_msg("%s.svg does not name panel %s", stem, HEADS[h]);
                }
                free(svg);
            }
            if (k == K_BARS) assert_true(count_role(f, VZ_T_AXIS) >= (size_t)(w ? 1 : 2));
            check_outputs(f, stem, W[w], labels, n, w == 0 || k == K_GRID || k == K_GRAPH);
            hs_viz_figure_destroy(f);
        }
}

static void refusal_names_the_width_and_the_font_size_that_fit(void **state)
{
    (void)state;
    float p[8 * NT * NT];
    causal_rows(p, 8, NT);
    hs_viz_options o;
    hs_viz_options_default(&o);
    o.width_in = 5.0;
    o.font_pt = 8.0;
    o.font_min_pt = 0; /* the user fixed the size: no smaller font */
    o.layout_rows = 2; /* and the layers x heads arrangement */
    o.layout_cols = 4;
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    assert_int_equal(hs_viz_grid_figure(&f, p, 2, 4, NT, TOK, NULL, &o, &err), HS_ERR_INPUT);
    assert_null(f);
    /* "attention grid cannot show every label in 5.00 in at 8 pt: it needs X in;
        HINT: --width X or --font-size Y" */
    const char *nd = strstr(err.msg, "it needs ");
    assert_non_null(nd);
    double need = strtod(nd + 9, NULL);
    const char *fs = strstr(err.msg, "--font-size ");
    assert_non_null(fs);
    double font = strtod(fs + 12, NULL);
    assert_null(strchr(err.msg, '\n'));
    /* both are true: the width named fits at 8 pt, the font named fits 5 in */
    o.width_in = ceil(need * 100.0) / 100.0;
    if (hs_viz_grid_figure(&f, p, 2, 4, NT, TOK, NULL, &o, &err) != HS_OK) fail_msg("%s", err.msg);
    assert_int_equal(f->width, (int)lround(o.width_in * o.dpi));
    hs_viz_figure_destroy(f);
    o.width_in = 5.0;
    o.font_pt = font;
    if (hs_viz_grid_figure(&f, p, 2, 4, NT, TOK, NULL, &o, &err) != HS_OK) fail_msg("%s", err.msg);
    assert_int_equal(f->width, (int)lround(5.0 * o.dpi));
    assert_true(count_role(f, VZ_T_XTICK) == 4 * NT);
    hs_viz_figure_destroy(f);
    /* and half a point more does not fit */
    o.font_pt = font + 0.5;
    assert_int_equal(hs_viz_grid_figure(&f, p, 2, 4, NT, TOK, NULL, &o, &err), HS_ERR_INPUT);
}

/* The width asked, exactly, at every dpi: the PDF's media box and the SVG's
 * size are the same at 100, 150 and 300 dpi (3.25 x 150 = 487.5 px made the
 * figure 3.2533 in, and the PDF's height moved with the dpi); the PNG's pHYs
 * states its width to the nearest pixel per metre. */
static void width_is_exact_at_every_dpi(void **state)
{
    (void)state;
    need_tool("pdfinfo");
    static float p[NT * NT];
    causal_rows(p, 1, NT);
    static const double DPI[3] = {100, 150, 300};
    char first_pdf[128] = "", first_svg[128] = "";
    for (int k = 0; k < 3; k++) {
        hs_viz_options o;
        hs_viz_options_default(&o);
        o.width_in = HS_VIZ_COLUMN_IN;
        o.dpi = DPI[k];
        hs_viz_figure *f = NULL;
        hs_error err = {0};
        if (hs_viz_attention_figure(&f, p, NT, TOK, "L1H1 attention", &o, &err) != HS_OK)
            fail_msg("%g dpi: %s", DPI[k], err.msg);
        char name[64];
        snprintf(name, sizeof name, "exact_%g.pdf", DPI[k]);
        char *pdf = tmp_path(name);
        snprintf(name, sizeof name, "exact_%g.png", DPI[k]);
        char *png = tmp_path(name);
        if (hs_viz_figure_write_pdf(f, pdf, &err) || hs_viz_figure_write_png(f, png, NULL, &err))
            fail_msg("%s", err.msg);
        char cmd[512];
        snprintf(cmd, sizeof cmd, "pdfinfo '%s' | grep 'Page size'", pdf);
        char *ps = slurp(cmd);
        char *svg = NULL;
        size_t len;
        assert_int_equal(hs_viz_figure_svg(f, &svg, &len, &err), HS_OK);
        char head[128];
        const char *wa = strstr(svg, "width=\"");
        assert_non_null(wa);
        snprintf(head, sizeof head, "%.40s", wa);
        print_message("%g dpi: %s  svg %s\n", DPI[k], ps, head);
        assert_non_null(strstr(ps, "234 x")); /* 3.25 in = 234 pt */
        assert_non_null(strstr(head, "width=\"3.2500in\""));
        if (k == 0) {
            snprintf(first_pdf, sizeof first_pdf, "%s", ps);
            snprintf(first_svg, sizeof first_svg, "%s", head);
        } else {
            assert_string_equal(ps, first_pdf);
            assert_string_equal(head, first_svg);
        }
        image im;
        read_png(png, &im);
        double w_png = im.w / (im.ppm_x * 0.0254);
        if (fabs(w_png - HS_VIZ_COLUMN_IN) > 0.5 / im.ppm_x / 0.0254 * 1.0001)
            fail_msg("%g dpi: the PNG says %.5f in", DPI[k], w_png);
        free(im.rgb);
        free(ps);
        free(svg);
        free(pdf);
        free(png);
        hs_viz_figure_destroy(f);
    }
}

/* A hint never names a font under the 6 pt floor (it named 5.5, 5 and 4). */
static void hints_never_go_under_6_pt(void **state)
{
    (void)state;
    static float p[8 * 15 * 15];
    causal_rows(p, 8, 15);
    hs_viz_options o;
    hs_viz_options_default(&o);
    o.font_pt = 8.0;
    o.font_min_pt = 0;
    o.layout_rows = 2;
    o.layout_cols = 4;
    int refused = 0, hinted = 0;
    for (double w = 3.0; w <= 7.0; w += 0.25) {
        hs_viz_figure *f = NULL;
        hs_error err = {0};
        o.width_in = w;
        if (hs_viz_grid_figure(&f, p, 2, 4, 15, TOK15, NULL, &o, &err) == HS_OK) {
            hs_viz_figure_destroy(f);
            continue;
        }
        refused++;
        const char *fs = strstr(err.msg, "--font-size ");
        if (!fs) continue;
        hinted++;
        if (strtod(fs + 12, NULL) < HS_VIZ_FONT_FLOOR_PT) fail_msg("%.2f in: %s", w, err.msg);
    }
    print_message("2 x 4 at 8 pt, 3..7 in: %d refused, %d with a font hint\n", refused, hinted);
    assert_true(refused > 0 && hinted > 0);
}

/* --layout: the arrangement asked is drawn (shared axes) or refused in one line. */
static void layout_asked_is_drawn_or_refused(void **state)
{
    (void)state;
    static float p[8 * 15 * 15];
    causal_rows(p, 8, 15);
    hs_viz_options o;
    hs_viz_options_default(&o);
    o.width_in = HS_VIZ_COLUMN_IN;
    static const size_t RC[][2] = {{4, 2}, {3, 3}, {8, 1}};
    for (int k = 0; k < 3; k++) {
        hs_viz_figure *f = NULL;
        hs_error err = {0};
        o.layout_rows = RC[k][0];
        o.layout_cols = RC[k][1];
        o.width_in = RC[k][1] == 3 ? HS_VIZ_PAGE_IN : HS_VIZ_COLUMN_IN;
        if (hs_viz_grid_figure(&f, p, 2, 4, 15, TOK15, "t", &o, &err) != HS_OK)
            fail_msg("%zu x %zu: %s", RC[k][0], RC[k][1], err.msg);
        char what[32];
        snprintf(what, sizeof what, "layout %zux%zu", RC[k][0], RC[k][1]);
        check_geometry(f, what);
        assert_int_equal(f->width, (int)lround(o.width_in * o.dpi));
        assert_int_equal(count_role(f, VZ_T_YTICK), RC[k][0] * 15);
        /* 3 x 3: the panel over the empty slot carries its column's labels */
        assert_int_equal(count_role(f, VZ_T_XTICK), RC[k][1] * 15);
        assert_int_equal(count_role(f, VZ_T_HEADER), 8);
        hs_viz_figure_destroy(f);
    }
    o.width_in = HS_VIZ_COLUMN_IN;
    /* a layout that does not suit the panels is the user's inconsistent
     * request (HS_ERR_CONFIG: the run stops, one line); one that suits them
     * but cannot fit the width is a figure that cannot be drawn (HS_ERR_INPUT:
     * skipped with a note) */
    static const size_t BAD[][2] = {{2, 3}, {8, 2}, {1, 9}, {1, 8}};
    static const char *WHY[] = {"--layout 2x3 does not suit 8 panels", "--layout 8x2 does not suit 8 panels",
                                "--layout 1x9 does not suit 8 panels: rows x cols must hold them, with at "
                                "most 8 rows and 8 columns and no row left empty",
                                "cannot show every label in 3.25 in at 6 pt"};
    static const hs_status ST[] = {HS_ERR_CONFIG, HS_ERR_CONFIG, HS_ERR_CONFIG, HS_ERR_INPUT};
    for (int k = 0; k < 4; k++) {
        hs_viz_figure *f = NULL;
        hs_error err = {0};
        o.layout_rows = BAD[k][0];
        o.layout_cols = BAD[k][1];
        assert_int_equal(hs_viz_grid_figure(&f, p, 2, 4, 15, TOK15, "t", &o, &err), ST[k]);
        assert_null(f);
        if (!strstr(err.msg, WHY[k])) fail_msg("%zu x %zu: %s", BAD[k][0], BAD[k][1], err.msg);
        assert_null(strchr(err.msg, '\n'));
    }
}

/* The bar chart's axis: its tick labels' values, first and last. */
static void axis_ends(const hs_viz_figure *f, double *lo, double *hi, int *n)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    *n = 0;
    for (size_t i = 0; i < f->n_texts; i++) {
        if (f->texts[i].role != VZ_T_CBAR) continue;
        /* labels write negative numbers with U+2212 MINUS SIGN */
        const char *t = f->texts[i].s;
        int neg = strncmp(t, "\xe2\x88\x92", 3) == 0;
        assert_true(t[0] != '-');
        double v = strtod(t + (neg ? 3 : 0), NULL) * (neg ? -1 : 1);
        *lo = fmin(*lo, v);
        *hi = fmax(*hi, v);
        (*n)++;
    }
}

/* A PDF's heatmap is one image of its cells scaled without smoothing:
 * poppler's cairo backend at 113 dpi (72..137 dpi showed it) draws no light
 * seam between two dark cells, as abutting rectangles did. */
static void pdf_heatmap_has_no_seams(void **state)
{
    (void)state;
    need_tool("pdftocairo");
    enum { T = 12 };
    static float p[T * T];
    const char *toks[T];
    for (int i = 0; i < T * T; i++) p[i] = 1.0f; /* every cell black in greys */
    for (int i = 0; i < T; i++) toks[i] = "tok";
    hs_viz_options o;
    hs_viz_options_default(&o);
    o.dpi = 150;
    o.cmap = HS_VIZ_CMAP_GREYS;
    o.causal_mask = 0;
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    assert_int_equal(hs_viz_attention_figure(&f, p, T, toks, NULL, &o, &err), HS_OK);
    int x0 = INT32_MAX, y0 = INT32_MAX, x1 = 0, y1 = 0;
    for (size_t i = 0; i < f->n_rects; i++) {
        const vz_rect *r = &f->rects[i];
        if (r->kind != VZ_R_CELL) continue;
        x0 = r->x < x0 ? r->x : x0;
        y0 = r->y < y0 ? r->y : y0;
        x1 = r->x + r->w > x1 ? r->x + r->w : x1;
        y1 = r->y + r->h > y1 ? r->y + r->h : y1;
    }
    char *pdf = tmp_path("seams.pdf"), *out = tmp_path("seams"), *raw = tmp_path("seams.png"),
         *rgb = tmp_path("seams_rgb.png");
    assert_int_equal(hs_viz_figure_write_pdf(f, pdf, &err), HS_OK);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "pdftocairo -png -r 113 -singlefile '%s' '%s'", pdf, out);
    assert_int_equal(run(cmd), 0);
    to_rgb_png(raw, rgb, 113);
    image im;
    read_png(rgb, &im);
    /* the cells' block at 113 dpi, 2 px in from its edges (the frame) */
    const double k = 113.0 / 150.0;
    int worst = 0, wx = 0, wy = 0;
    for (int y = (int)ceil(y0 * k) + 2; y < (int)floor(y1 * k) - 2; y++)
        for (int x = (int)ceil(x0 * k) + 2; x < (int)floor(x1 * k) - 2; x++) {
            const unsigned char *q = im.rgb + ((size_t)y * (size_t)im.w + (size_t)x) * 3;
            int v = q[0] > q[1] ? q[0] : q[1];
            v = v > q[2] ? v : q[2];
            if (v > worst) worst = v, wx = x, wy = y;
        }
    print_message("lightest pixel between black cells at 113 dpi: %d at (%d, %d)\n", worst, wx, wy);
    if (worst > 8) fail_msg("a light seam (%d of 255) at (%d, %d) between black cells", worst, wx, wy);
    free(im.rgb);
    free(pdf);
    free(out);
    free(raw);
    free(rgb);
    hs_viz_figure_destroy(f);
}

static void bar_axes_fit_the_data_or_the_fixed_range(void **state)
{
    (void)state;
    static const float small[4] = {-0.0013f, 0.0042f, 0.0007f, 0.0021f};
    static const float copy[4] = {-0.784f, 0.596f, -0.199f, 0.776f};
    hs_viz_options o;
    hs_viz_options_default(&o);
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    double lo, hi;
    int n;
    /* fitted: the axis ends within one tick step of the data, not at [0, 1] */
    o.range = HS_VIZ_RANGE_AUTO;
    assert_int_equal(hs_viz_bars_figure(&f, small, 4, HEADS, NULL, "logit", &o, &err), HS_OK);
    axis_ends(f, &lo, &hi, &n);
    print_message("fitted axis %g..%g (%d ticks)\n", lo, hi, n);
    assert_true(n >= 2);
    assert_true(lo <= -0.0013 && lo >= -0.0013 - (hi - lo) / (n - 1) - 1e-12);
    assert_true(hi >= 0.0042 && hi <= 0.0042 + (hi - lo) / (n - 1) + 1e-12);
    check_geometry(f, "bars fitted");
    hs_viz_figure_destroy(f);
    /* a fixed range is the axis exactly when the data lie inside it */
    o.range = HS_VIZ_RANGE_FIXED;
    o.vmin = -1.0;
    o.vmax = 1.0;
    assert_int_equal(hs_viz_bars_figure(&f, copy, 4, HEADS, NULL, "copying score", &o, &err), HS_OK);
    axis_ends(f, &lo, &hi, &n);
    assert_true(lo == -1.0 && hi == 1.0);
    hs_viz_figure_destroy(f);
}

/* FreeType's advance plus kerning of s (two glyphs) at px, unhinted, in px. */
static double ft_width(FT_Face face, const char *s, double px)
{
    FT_Set_Char_Size(face, 0, (FT_F26Dot6)lround(px * 64), 72, 72);
    FT_UInt g0 = FT_Get_Char_Index(face, (FT_ULong)s[0]), g1 = FT_Get_Char_Index(face, (FT_ULong)s[1]);
    double w = 0;
    FT_Load_Glyph(face, g0, FT_LOAD_NO_HINTING);
    w += face->glyph->linearHoriAdvance / 65536.0;
    FT_Load_Glyph(face, g1, FT_LOAD_NO_HINTING);
    w += face->glyph->linearHoriAdvance / 65536.0;
    FT_Vector k;
    FT_Get_Kerning(face, g0, g1, FT_KERNING_UNSCALED, &k);
    return w + k.x * px / face->units_per_EM;
}

static void text_is_kerned_like_freetype(void **state)
{
    (void)state;
    char *path = NULL;
    hs_error err = {0};
    assert_int_equal(hs_viz_font_path(NULL, &path, &err), HS_OK);
    vz_font *font = NULL;
    assert_int_equal(vz_font_open(&font, path, &err), HS_OK);
    FT_Library lib;
    FT_Face face;
    assert_int_equal(FT_Init_FreeType(&lib), 0);
    assert_int_equal(FT_New_Face(lib, path, 0, &face), 0);
    assert_true(FT_HAS_KERNING(face));
    static const char *PAIRS[2] = {"To", "AV"};
    static const double PX[2] = {33.0, 100.0};
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 2; k++) {
            vz_run r;
            assert_int_equal(vz_font_shape(font, PAIRS[i], PX[k], &r), HS_OK);
            assert_int_equal(r.n, 2);
            double want = ft_width(face, PAIRS[i], PX[k]);
            double unkerned = 0;
            FT_Vector z;
            FT_Get_Kerning(face, FT_Get_Char_Index(face, (FT_ULong)PAIRS[i][0]),
                           FT_Get_Char_Index(face, (FT_ULong)PAIRS[i][1]), FT_KERNING_UNSCALED, &z);
            unkerned = want - z.x * PX[k] / face->units_per_EM;
            print_message("%s at %g px: shaped %.2f, FreeType %.2f (unkerned %.2f)\n", PAIRS[i],
                          PX[k], r.adv, want, unkerned);
            assert_true(fabs(r.adv - want) <= 1.0);
            assert_true(unkerned - r.adv >= 2.0); /* the pair really closes up */
            vz_run_free(&r);
        }
    FT_Done_Face(face);
    FT_Done_FreeType(lib);
    vz_font_close(font);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_figure_at_column_and_page_width),
        cmocka_unit_test(refusal_names_the_width_and_the_font_size_that_fit),
        cmocka_unit_test(hints_never_go_under_6_pt),
        cmocka_unit_test(width_is_exact_at_every_dpi),
        cmocka_unit_test(layout_asked_is_drawn_or_refused),
        cmocka_unit_test(text_is_kerned_like_freetype),
        cmocka_unit_test(bar_axes_fit_the_data_or_the_fixed_range),
        cmocka_unit_test(pdf_heatmap_has_no_seams),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
