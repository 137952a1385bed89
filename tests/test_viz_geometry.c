/*
 * tests/test_viz_geometry.c -- layout geometry over the documented caps:
 * labels of 1..24 (and 30, shortened) characters, 1..64 tokens, grids of
 * 1..12 layers x 1..16 heads, signed matrices and bar charts. Every text box
 * lies inside the canvas, no two text boxes overlap, no label box covers a
 * heatmap cell (except values written in their own cell), single patterns
 * label every token, and a few large figures are rasterised and checked to
 * hold ink in every label box.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

#include "viz/viz.h"
#include "viz/viz_internal.h"
#include "viz_check.h"

#define MAXT 64

static char LABELS[MAXT][64];
static const char *LP[MAXT];

/* Labels of varied length: position i gets a word of length 1 + (i*7) % len_max
 * made of wide letters ('W', 'm') so widths are near the worst case. */
static void make_labels(size_t T, int len_max)
{
    for (size_t i = 0; i < T; i++) {
        int n = 1 + (int)((i * 7) % (size_t)len_max);
        if (i == 0) n = len_max; /* always one label of the maximal length */
        for (int k = 0; k < n; k++) LABELS[i][k] = (k % 2) ? 'm' : 'W';
        LABELS[i][n] = '\0';
        LP[i] = LABELS[i];
    }
}


static float *causal(size_t n_panels, size_t T)
{
    float *p = calloc(n_panels * T * T, sizeof *p);
    assert_non_null(p);
    for (size_t k = 0; k < n_panels; k++)
        for (size_t i = 0; i < T; i++)
            for (size_t j = 0; j <= i; j++) p[(k * T + i) * T + j] = 1.0f / (float)(i + 1);
    return p;
}

static const size_t TS[] = {1, 2, 3, 7, 18, 33, 64};
static const int LENS[] = {1, 8, 24, 30};

static void single_patterns_label_every_token_without_overlap(void **state)
{
    (void)state;
    for (size_t a = 0; a < sizeof TS / sizeof TS[0]; a++)
        for (size_t b = 0; b < sizeof LENS / sizeof LENS[0]; b++)
            for (int annot = 0; annot < 2; annot++) {
                size_t T = TS[a];
                make_labels(T, LENS[b]);
                float *p = causal(1, T);
                hs_viz_options o;
                hs_viz_options_default(&o);
                o.annotate = annot;
                hs_viz_figure *f = NULL;
                hs_error err = {0};
                hs_status st = hs_viz_attention_figure(
                    &f, p, T, LP, "L11H15 \xc2\xb7 blocks.11.attn.hook_pattern", &o, &err);
                if (st != HS_OK) fail_msg("T=%zu len=%d: %s", T, LENS[b], err.msg);
                char what[64];
                snprintf(what, sizeof what, "pattern T=%zu len=%d annot=%d", T, LENS[b], annot);
                check_geometry(f, what);
                assert_int_equal(count_role(f, VZ_T_XTICK), T);
                assert_int_equal(count_role(f, VZ_T_YTICK), T);
                if (annot) assert_int_equal(count_role(f, VZ_T_ANNOT), T * (T + 1) / 2);
                hs_viz_figure_destroy(f);
                free(p);
            }
}

static void grids_up_to_12x16_label_outer_axes_without_overlap(void **state)
{
    (void)state;
    static const size_t LS[] = {1, 2, 3, 12, 12, 1};
    static const size_t HS[] = {1, 4, 5, 16, 1, 16};
    static const size_t GT[] = {1, 5, 18, 64};
    for (size_t g = 0; g < sizeof LS / sizeof LS[0]; g++)
        for (size_t a = 0; a < sizeof GT / sizeof GT[0]; a++) {
            size_t L = LS[g], H = HS[g], T = GT[a];
            make_labels(T, 24);
            float *p = causal(L * H, T);
            hs_viz_figure *f = NULL;
            hs_error err = {0};
            hs_status st = hs_viz_grid_figure(&f, p, L, H, T, LP, "attention \xc2\xb7 all heads",
                                              NULL, &err);
            /* every label or a refusal: 24 in hold about 250 labels of 6 pt side by side */
            if (st != HS_OK && ((H * T > 200 && strstr(err.msg, "needs")) ||
                                (L * T > 200 && strstr(err.msg, "px cap")))) {
                free(p);
                continue;
            }
            if (st != HS_OK) fail_msg("grid %zux%zu T=%zu: %s", L, H, T, err.msg);
            char what[64];
            snprintf(what, sizeof what, "grid %zux%zu T=%zu", L, H, T);
            check_geometry(f, what);
            /* headers for every row and column and every token on the outer
               axes; or, rearranged to fit (R x C, fewer columns), each panel
               named and the tokens left of each row and under each column */
            size_t nh = count_role(f, VZ_T_HEADER), ny = count_role(f, VZ_T_YTICK),
                   nx = count_role(f, VZ_T_XTICK);
            /* no arrangement shows every label within the width and the
               height budget: L x H with every k-th token label (or none),
               said in the note under the title; column headers every k-th
               when wider than a panel */
            int thinned = 0;
            for (size_t i = 0; i < f->n_texts; i++)
                thinned |= !strncmp(f->texts[i].s, "every ", 6) || !strncmp(f->texts[i].s, "no token labels", 15);
            if (thinned) {
                print_message("%s: thinned, %zu of %zu token labels a row\n", what, ny / L, T);
                assert_true(ny % L == 0 && nx % H == 0 && ny / L == nx / H && ny / L < T);
                assert_true(nh >= L && nh <= L + H);
                assert_true(f->height <= (int)lround(HS_VIZ_MAX_HEIGHT_IN * f->dpi) + 1);
            } else if (ny == L * T && nx == H * T && nh <= L + H && nh > L) {
                /* L x H: every row header, the column headers (every k-th
                   when wider than a panel: 16 heads of one token) */
                if (nh < L + H) print_message("%s: %zu of %zu column headers\n", what, nh - L, H);
            } else {
                size_t R = ny / T, C = nx / T;
                print_message("%s: laid out %zu x %zu\n", what, R, C);
                assert_int_equal(nh, L * H);
                assert_int_equal(ny % T, 0);
                assert_int_equal(nx % T, 0);
                assert_true(C < H && R * C >= L * H && (R - 1) * C < L * H);
            }
            /* growth cap */
            assert_true(f->width <= (int)(HS_VIZ_GRID_MAX_IN * f->dpi) + 1);
            /* auto width: a page, wider only when the labels need it (thinned: a page) */
            if (thinned) assert_int_equal(f->width, (int)lround(HS_VIZ_PAGE_IN * f->dpi));
            assert_true(f->width >= (int)lround(HS_VIZ_PAGE_IN * f->dpi) || L * H == 1);
            hs_viz_figure_destroy(f);
            free(p);
        }
}

/* GPT-2's 144 heads (issue 35: the default grid at page width was 36 x 4
 * panels, 6.75 x 59 in; at 20 tokens there was none at a column): at 13, 20
 * and 60 tokens (the first the 13-character "<|endoftext|>"), with no width
 * asked and at a column, a 12 x 12 grid within the 9 in height budget, every
 * k-th token label (or none) said in the note, labels apart and at 6 pt. */
static void gpt2_grid_fits_a_page(void **state)
{
    (void)state;
    static const size_t GPT_T[3] = {13, 20, 60};
    static const char *const W[8] = {"When", " Mary", " and", " John", " went", " to", " the", " store"};
    const char *tok[60];
    for (int w = 0; w < 2; w++)
        for (size_t k = 0; k < 3; k++) {
            const size_t T = GPT_T[k];
            tok[0] = "<|endoftext|>";
            for (size_t i = 1; i < T; i++) tok[i] = W[i % 8];
            float *p = causal(144, T);
            hs_viz_options o;
            hs_viz_options_default(&o);
            o.dpi = 150;
            o.width_in = w ? HS_VIZ_COLUMN_IN : 0;
            hs_viz_figure *f = NULL;
            hs_error err = {0};
            if (hs_viz_grid_figure(&f, p, 12, 12, T, tok, "attention of every head", &o, &err))
                fail_msg("12 x 12 x %zu at %s: %s", T, w ? "a column" : "the default", err.msg);
            char what[64];
            snprintf(what, sizeof what, "GPT-2 grid T=%zu %s", T, w ? "column" : "page");
            check_geometry(f, what);
            const double win = f->width / f->dpi, hin = f->height / f->dpi;
            print_message("%s: %.2f x %.2f in, %zu row labels\n", what, win, hin, count_role(f, VZ_T_YTICK));
            assert_true(fabs(win - (w ? HS_VIZ_COLUMN_IN : HS_VIZ_PAGE_IN)) < 0.01);
            assert_true(hin <= HS_VIZ_MAX_HEIGHT_IN + 0.01);
            assert_int_equal(count_role(f, VZ_T_HEADER), 12 + (w ? 6 : 12)); /* a column: H0, H2, ... */
            int note = 0;
            for (size_t i = 0; i < f->n_texts; i++)
                note |= !strncmp(f->texts[i].s, "every ", 6) || !strncmp(f->texts[i].s, "no token labels", 15);
            assert_true(note);
            if (w) { /* a column's thumbnails take the room labels would have: the panels span
                        at least 70% of the width (they spanned 49% at 20 tokens, 9 px at 100 dpi) */
                int lo = 1 << 30, hi = 0;
                for (size_t i = 0; i < f->n_rects; i++)
                    if (f->rects[i].kind == VZ_R_CELL || f->rects[i].kind == VZ_R_MASKED) {
                        lo = f->rects[i].x < lo ? f->rects[i].x : lo;
                        hi = f->rects[i].x + f->rects[i].w > hi ? f->rects[i].x + f->rects[i].w : hi;
                    }
                print_message("%s: panels span %.0f%% of the width\n", what, 100.0 * (hi - lo) / f->width);
                assert_true(hi - lo >= 0.7 * f->width);
            }
            hs_viz_figure_destroy(f);
            free(p);
        }
}

/* GPT-2's query row of 144 heads (over a matrix's 128 rows) as 12 blocks of
 * 12 heads, at 13, 20 and 60 sources, a column and a page: written within
 * the width and the 9 in budget, no overlap, every block named, the note
 * when labels are thinned. */
static void gpt2_query_row_as_layer_blocks(void **state)
{
    (void)state;
    static const size_t GPT_T[3] = {13, 20, 60};
    static const char *const W[8] = {"When", " Mary", " and", " John", " went", " to", " the", " store"};
    const char *tok[60];
    static float rows[144 * 60];
    for (size_t i = 0; i < 144 * 60; i++) rows[i] = (float)(i % 11) / 10.0f;
    for (int w = 0; w < 2; w++)
        for (size_t k = 0; k < 3; k++) {
            const size_t T = GPT_T[k];
            tok[0] = "<|endoftext|>";
            for (size_t i = 1; i < T; i++) tok[i] = W[i % 8];
            hs_viz_options o;
            hs_viz_options_default(&o);
            o.dpi = 150;
            o.width_in = w ? HS_VIZ_COLUMN_IN : HS_VIZ_PAGE_IN;
            hs_viz_figure *f = NULL;
            hs_error err = {0};
            if (hs_viz_rows_blocks_figure(&f, rows, 12, 12, T, tok, "query row", "source (key)", &o, &err))
                fail_msg("12 x 12 x %zu at %s: %s", T, w ? "a column" : "a page", err.msg);
            char what[64];
            snprintf(what, sizeof what, "GPT-2 query row T=%zu %s", T, w ? "column" : "page");
            check_geometry(f, what);
            const double win = f->width / f->dpi, hin = f->height / f->dpi;
            print_message("%s: %.2f x %.2f in\n", what, win, hin);
            assert_true(fabs(win - o.width_in) < 0.01);
            assert_true(hin <= HS_VIZ_MAX_HEIGHT_IN + 0.01);
            assert_int_equal(count_role(f, VZ_T_HEADER), 12); /* L0 .. L11 */
            size_t shown = count_role(f, VZ_T_XTICK), note = 0;
            for (size_t i = 0; i < f->n_texts; i++) note += !strncmp(f->texts[i].s, "every ", 6);
            assert_true(shown > 0);
            assert_true(note == 1 || shown % T == 0); /* thinned with the note, or every label */
            hs_viz_figure_destroy(f);
        }
}

static void signed_and_bars_layouts_do_not_overlap(void **state)
{
    (void)state;
    static const size_t RS[] = {1, 3, 16, 64};
    static const size_t CS[] = {1, 12, 5, 64};
    for (size_t a = 0; a < 4; a++)
        for (int annot = 0; annot < 2; annot++) {
            size_t R = RS[a], C = CS[a];
            make_labels(R > C ? R : C, 24);
            float *m = malloc(R * C * sizeof *m);
            assert_non_null(m);
            for (size_t i = 0; i < R * C; i++) m[i] = (float)((int)(i * 37 % 23) - 11) / 3.0f;
            hs_viz_options o;
            hs_viz_options_default(&o);
            o.range = HS_VIZ_RANGE_AUTO;
            o.annotate = annot;
            hs_viz_figure *f = NULL;
            hs_error err = {0};
            hs_status st = hs_viz_signed_figure(&f, m, R, C, LP, LP, "virtual weights", "key side",
                                                "query side", &o, &err);
            if (st != HS_OK) fail_msg("signed %zux%zu: %s", R, C, err.msg);
            char what[64];
            snprintf(what, sizeof what, "signed %zux%zu annot=%d", R, C, annot);
            check_geometry(f, what);
            assert_int_equal(count_role(f, VZ_T_XTICK), C);
            assert_int_equal(count_role(f, VZ_T_YTICK), R);
            hs_viz_figure_destroy(f);
            free(m);
        }
    static const size_t NS[] = {1, 2, 10, 64};
    for (size_t a = 0; a < 4; a++)
        for (int sign = 0; sign < 3; sign++) {
            size_t N = NS[a];
            make_labels(N, 24);
            float v[64];
            for (size_t i = 0; i < N; i++) {
                float x = (float)((int)(i * 13 % 17) - 8) * 0.37f;
                v[i] = sign == 0 ? x : sign == 1 ? fabsf(x) + 0.1f : -fabsf(x) - 123.0f;
            }
            hs_viz_figure *f = NULL;
            hs_error err = {0};
            hs_status st = hs_viz_bars_figure(&f, v, N, LP, "direct logit attribution",
                                              "logit difference", NULL, &err);
            if (st != HS_OK) fail_msg("bars N=%zu: %s", N, err.msg);
            char what[64];
            snprintf(what, sizeof what, "bars N=%zu sign=%d", N, sign);
            check_geometry(f, what);
            /* every bar, or (over the 9 in height budget) the largest and one
               summing the rest */
            const size_t nl = count_role(f, VZ_T_LABEL);
            if (nl != N) {
                print_message("%s: %zu of %zu labels, %.2f in tall\n", what, nl, N, f->height / f->dpi);
                assert_true(nl < N && f->height <= (int)lround(HS_VIZ_MAX_HEIGHT_IN * f->dpi) + 1);
            }
            hs_viz_figure_destroy(f);
        }
}

static void large_figures_rasterise_with_ink_in_every_label(void **state)
{
    (void)state;
    make_labels(64, 24);
    float *p = causal(3 * 3, 64);
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    hs_status st = hs_viz_grid_figure(&f, p, 3, 3, 64, LP, "3 x 3 x 64", NULL, &err);
    if (st != HS_OK) fail_msg("%s", err.msg);
    unsigned char *rgb;
    size_t w, h;
    assert_int_equal(hs_viz_figure_rgb(f, &rgb, &w, &h, &err), HS_OK);
    for (size_t i = 0; i < f->n_texts; i++) {
        const vz_text *t = &f->texts[i];
        long ink = 0;
        for (int y = t->iy; y < t->iy + t->ih; y++)
            for (int x = t->ix; x < t->ix + t->iw; x++)
                ink += rgb[((size_t)y * w + (size_t)x) * 3] < 128 || rgb[((size_t)y * w + (size_t)x) * 3 + 1] < 128;
        if (ink == 0) fail_msg("label '%s' has no ink", t->s);
    }
    free(rgb);
    hs_viz_figure_destroy(f);
    free(p);
}

static void figures_beyond_the_caps_are_refused(void **state)
{
    (void)state;
    make_labels(4, 4);
    float p[16] = {0};
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    assert_int_equal(hs_viz_grid_figure(&f, p, HS_VIZ_MAX_LAYERS + 1, 1, 1, LP, NULL, NULL, &err),
                     HS_ERR_INPUT);
    assert_int_equal(hs_viz_attention_figure(&f, p, HS_VIZ_MAX_TOKENS + 1, LP, NULL, NULL, &err),
                     HS_ERR_INPUT);
    /* a single pattern that would exceed the pixel cap names the cap */
    static float big[128 * 128];
    static char lab[128][8];
    static const char *lp[128];
    for (int i = 0; i < 128; i++) {
        snprintf(lab[i], sizeof lab[i], "t%d", i);
        lp[i] = lab[i];
    }
    hs_viz_options o;
    hs_viz_options_default(&o);
    o.dpi = 1200;
    o.font_pt = 12;
    assert_int_equal(hs_viz_attention_figure(&f, big, 128, lp, NULL, &o, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "px"));
    assert_null(f);
}

/* A line plot with no width asked wraps its title to the plot, not to
   nothing: the timeline title was one word a line. */
static void line_plot_title_wraps_to_the_plot_width(void **state)
{
    (void)state;
    float x[11], y[22];
    for (int i = 0; i < 11; i++) x[i] = (float)(i * 100), y[i] = (float)i / 10.0f, y[11 + i] = 1.0f - y[i];
    const char *lab[] = {"score", "loss"};
    hs_viz_panel P = {y, 2, lab, "panel", "value", 0, 0, 0};
    hs_viz_options o;
    hs_viz_options_default(&o);
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    if (hs_viz_lines_figure(&f, x, 11, &P, 1, "induction circuit over training (11 checkpoints)",
                            "training step", NAN, NULL, &o, &err) != HS_OK)
        fail_msg("lines: %s", err.msg);
    check_geometry(f, "lines default width");
    /* a column wide by default (c9808b3): two lines at most, not 7 */
    assert_in_range(count_role(f, VZ_T_TITLE), 1, 2);
    hs_viz_figure_destroy(f);
}

/* The marker squares of series 0 (tab10 blue): the side most squares of that
   colour have (the legend swatch is one larger square; line columns vary),
   centres in x order into cx, cy. */
static size_t marker_centres(const hs_viz_figure *f, double *cx, double *cy, size_t cap)
{
    unsigned char rgb[3];
    hs_viz_series_rgb(0, rgb);
    int side = 0, best = 0;
    for (size_t i = 0; i < f->n_rects; i++) {
        const vz_rect *r = &f->rects[i];
        if (memcmp(r->rgb, rgb, 3) || r->w != r->h) continue;
        int n = 0;
        for (size_t j = 0; j < f->n_rects; j++)
            n += !memcmp(f->rects[j].rgb, rgb, 3) && f->rects[j].w == r->w && f->rects[j].h == r->w;
        if (n > best) best = n, side = r->w;
    }
    size_t n = 0;
    for (size_t i = 0; i < f->n_rects && n < cap; i++) {
        const vz_rect *r = &f->rects[i];
        if (memcmp(r->rgb, rgb, 3) || r->w != side || r->h != side) continue;
        cx[n] = r->x + r->w / 2.0, cy[n] = r->y + r->h / 2.0;
        n++;
    }
    return n;
}

static int has_text(const hs_viz_figure *f, const char *s)
{
    for (size_t i = 0; i < f->n_texts; i++)
        if (!strcmp(f->texts[i].s, s)) return 1;
    return 0;
}

/* Log-log axes: y = 3 x^1.5 at x = 10, 100, 1000, 10000 (FLOPs against
   ms, as bench/scale.py plots) lands on equally spaced points of one
   straight line, the decades are labelled, and the same data on linear
   axes does not (the test can fail). Values <= 0 on a log axis are refused. */
/* Rects drawn in series 0's colour (markers, line runs and its legend swatch). */
static size_t series0_rects(const hs_viz_figure *f)
{
    unsigned char rgb[3];
    hs_viz_series_rgb(0, rgb);
    size_t n = 0;
    for (size_t i = 0; i < f->n_rects; i++) n += !memcmp(f->rects[i].rgb, rgb, 3);
    return n;
}

/* markers_only: the same points in the same order, inside a padded frame,
 * and nothing else in the series' colour but its 5 markers and the legend's
 * marker (no piece of line); with lines there is more (the joining runs). */
static void markers_only_draws_no_lines(void **state)
{
    (void)state;
    float x[5] = {1, 2, 3, 4, 5}, y[5] = {3, 1, 4, 1, 5};
    const char *lab[] = {"a"};
    hs_viz_panel P = {y, 1, lab, NULL, "y", 0, 0, 0};
    size_t n[2];
    double cx[2][8], cy[2][8];
    for (int only = 0; only < 2; only++) {
        hs_viz_options o;
        hs_viz_options_default(&o);
        o.markers_only = only;
        hs_viz_figure *f = NULL;
        hs_error err = {0};
        if (hs_viz_lines_figure(&f, x, 5, &P, 1, "points", "x", NAN, NULL, &o, &err) != HS_OK)
            fail_msg("lines: %s", err.msg);
        check_geometry(f, only ? "markers only" : "lines");
        /* the 5 points, then the legend's marker (drawn last, on its piece of line) */
        assert_int_equal(marker_centres(f, cx[only], cy[only], 8), 5 + 1);
        assert_true(cx[only][5] > cx[only][4]);
        n[only] = series0_rects(f);
        hs_viz_figure_destroy(f);
    }
    for (int only = 0; only < 2; only++) /* left to right, higher values higher up */
        for (int i = 0; i + 1 < 5; i++) {
            assert_true(cx[only][i + 1] > cx[only][i]);
            assert_true((y[i + 1] > y[i]) == (cy[only][i + 1] < cy[only][i]));
        }
    /* a scatter pads its axes: the extreme points sit inside, not on the frame */
    assert_true(cx[1][0] - cx[0][0] > 5 && cx[0][4] - cx[1][4] > 5);
    assert_int_equal(n[1], 5 + 1);
    assert_true(n[0] > n[1] + 4);
}

/* Series are told apart without their colours (issue 35: methods overlaid
 * on the faithfulness curve differed by colour only, and the legend showed a
 * filled square for a line): series 0's markers are filled squares, series
 * 1's open (a white square inside each), series 2's a plus (two bars, no
 * square); each legend entry is a piece of line (wider than tall, in the
 * series' colour) with the series' marker on it. */
static void series_differ_by_marker_and_legends_show_a_line(void **state)
{
    (void)state;
    float x[4] = {1, 2, 3, 4}, y[12] = {1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6};
    const char *lab[] = {"EAP", "EAP-IG", "ACDC"};
    hs_viz_panel P = {y, 3, lab, NULL, "faithfulness", 0, 0, 0};
    hs_viz_options o;
    hs_viz_options_default(&o);
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    if (hs_viz_lines_figure(&f, x, 4, &P, 1, "three methods", "x", NAN, NULL, &o, &err) != HS_OK)
        fail_msg("lines: %s", err.msg);
    check_geometry(f, "three series");
    size_t squares[3] = {0}, white_in[3] = {0}, line_pieces[3] = {0};
    int mk = 0;
    for (int i = 0; i < 3; i++) {
        unsigned char rgb[3];
        hs_viz_series_rgb((size_t)i, rgb);
        for (size_t k = 0; k < f->n_rects; k++) {
            const vz_rect *r = &f->rects[k];
            if (memcmp(r->rgb, rgb, 3)) continue;
            if (r->w == r->h && r->w > 2) {
                squares[i]++;
                mk = r->w;
                for (size_t j = 0; j < f->n_rects; j++) /* a white square inside it */
                    white_in[i] += !memcmp(f->rects[j].rgb, VZ_WHITE, 3) && f->rects[j].x > r->x &&
                                   f->rects[j].x + f->rects[j].w < r->x + r->w && f->rects[j].y > r->y &&
                                   f->rects[j].y + f->rects[j].h < r->y + r->h;
            }
            line_pieces[i] += r->w >= 3 * r->h && r->w > 8;
        }
    }
    print_message("squares %zu %zu %zu, white inside %zu %zu %zu, marker side %d\n", squares[0], squares[1],
                  squares[2], white_in[0], white_in[1], white_in[2], mk);
    assert_int_equal(squares[0], 4 + 1); /* 4 points and the legend's */
    assert_int_equal(white_in[0], 0);
    assert_int_equal(squares[1], 4 + 1);
    assert_int_equal(white_in[1], 4 + 1);
    assert_int_equal(squares[2], 0);
    for (int i = 0; i < 3; i++) assert_true(line_pieces[i] >= 1);
    hs_viz_figure_destroy(f);
}

static void log_axes_put_a_power_law_on_a_straight_line(void **state)
{
    (void)state;
    float x[4] = {10, 100, 1000, 10000}, y[4];
    for (int i = 0; i < 4; i++) y[i] = 3.0f * powf(x[i], 1.5f);
    const char *lab[] = {"headscope"};
    for (int logs = 1; logs >= 0; logs--) {
        hs_viz_panel P = {y, 1, lab, NULL, "ms per step", 0, 0, logs};
        hs_viz_options o;
        hs_viz_options_default(&o);
        o.log_x = logs;
        /* page wide: in a column's narrower plot the line's pixel columns come
         * out as squares of the markers' side, which marker_centres counts */
        o.width_in = 6.75;
        hs_viz_figure *f = NULL;
        hs_error err = {0};
        if (hs_viz_lines_figure(&f, x, 4, &P, 1, "step time against FLOPs", "FLOPs per step", NAN, NULL, &o,
                                &err) != HS_OK)
            fail_msg("lines: %s", err.msg);
        check_geometry(f, logs ? "log-log lines" : "linear lines");
        double cx[8], cy[8];
        assert_int_equal(marker_centres(f, cx, cy, 8), 4 + 1); /* and the legend's */
        const double dx = cx[1] - cx[0], dy = cy[1] - cy[0];
        assert_true(dx > 10); /* left to right */
        if (logs) assert_true(dy < -10); /* and up */
        for (int i = 2; i < 4; i++) {
            const int even = fabs(cx[i] - cx[i - 1] - dx) <= 1.5 && fabs(cy[i] - cy[i - 1] - dy) <= 1.5;
            if (logs) assert_true(even);
            else assert_false(even);
        }
        if (logs) {
            assert_true(fabs(dy / dx) > 0.1); /* a slope, not a flat line */
            assert_true(has_text(f, "100") && has_text(f, "1000") && has_text(f, "10000"));
            assert_true(has_text(f, "1e6")); /* 3 x 10^6 on y: 1e5 .. 1e6 labelled */
        }
        hs_viz_figure_destroy(f);
    }
    float bad[4] = {0, 100, 1000, 10000};
    hs_viz_panel P = {y, 1, lab, NULL, NULL, 0, 0, 1};
    hs_viz_options o;
    hs_viz_options_default(&o);
    o.log_x = 1;
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    assert_int_equal(hs_viz_lines_figure(&f, bad, 4, &P, 1, NULL, NULL, NAN, NULL, &o, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "log axis"));
    assert_null(f);
    y[2] = -1.0f;
    o.log_x = 0;
    assert_int_equal(hs_viz_lines_figure(&f, x, 4, &P, 1, NULL, NULL, NAN, NULL, &o, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "needs y > 0"));
}

/* No width asked and the column cannot hold the labels at 12 pt: the chart
   grows (it converges even with an x label wider than the axis) and says
   which default it outgrew; a width asked that is too narrow names --width. */
static void grown_figures_say_so(void **state)
{
    (void)state;
    float v[4] = {0.45f, -0.05f, 0.02f, 0.47f};
    const char *lab[] = {"embed", "pos_embed", "L0H0", "L11_mlp_out"};
    hs_viz_options o;
    hs_viz_options_default(&o);
    o.font_pt = 12;
    o.font_min_pt = 0;
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    if (hs_viz_bars_figure(&f, v, 4, lab, "logit difference",
                           "direct contribution to logit('horse') - logit('street')", &o, &err) != HS_OK)
        fail_msg("bars at 12 pt: %s", err.msg);
    check_geometry(f, "bars grown");
    print_message("bars at 12 pt: %.2f in, axis title in %zu lines\n", hs_viz_figure_width_in(f),
                  count_role(f, VZ_T_AXIS));
    assert_true(hs_viz_figure_grown_from_in(f) == HS_VIZ_COLUMN_IN);
    assert_true(hs_viz_figure_width_in(f) > HS_VIZ_COLUMN_IN);
    /* the axis title wraps to the axis rather than widening the figure */
    assert_true(count_role(f, VZ_T_AXIS) >= 2);
    hs_viz_figure_destroy(f);
    o.font_pt = 9;
    o.font_min_pt = 6;
    assert_int_equal(hs_viz_bars_figure(&f, v, 4, lab, "t", "x", &o, &err), HS_OK);
    assert_true(hs_viz_figure_grown_from_in(f) == 0); /* fits its column */
    assert_true(hs_viz_figure_width_in(f) == HS_VIZ_COLUMN_IN);
    hs_viz_figure_destroy(f);
}

/* One head's query row at 12 pt: the colour bar's rotated quantity label
   stays within the bar (it ran past it to the figure's edge). */
static void one_row_colour_bar_label_stays_on_the_bar(void **state)
{
    (void)state;
    make_labels(14, 8);
    float m[14];
    for (int j = 0; j < 14; j++) m[j] = (float)j / 91.0f;
    const char *rows[] = {"L1H1"};
    hs_viz_options o;
    hs_viz_options_default(&o);
    o.font_pt = 12;
    o.font_min_pt = 0;
    o.value_label = "attention weight";
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    if (hs_viz_matrix_figure(&f, m, 1, 14, rows, LP, "attention from position 14", "source (key)",
                             "head", &o, &err) != HS_OK)
        fail_msg("query row: %s", err.msg);
    check_geometry(f, "query row 12 pt");
    hs_viz_figure_destroy(f);
}

/* A narrow matrix (8 heads x 2 scores) under a wider title: the body is
   centred under it, not left with the right half empty. */
static void narrow_body_is_centred_under_a_wide_title(void **state)
{
    (void)state;
    float m[16];
    for (int i = 0; i < 16; i++) m[i] = (float)(i % 5) / 4.0f;
    const char *rows[] = {"L0H0", "L0H1", "L0H2", "L0H3", "L1H0", "L1H1", "L1H2", "L1H3"};
    const char *cols[] = {"previous-token", "induction"};
    hs_viz_options o;
    hs_viz_options_default(&o);
    o.dpi = 300;
    o.value_label = "score";
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    if (hs_viz_matrix_figure(&f, m, 8, 2, rows, cols, "head detector scores (held-out sequences)",
                             "score", "head", &o, &err) != HS_OK)
        fail_msg("narrow matrix: %s", err.msg);
    check_geometry(f, "narrow matrix");
    int x0 = f->width, x1 = 0;
    for (size_t i = 0; i < f->n_rects; i++) {
        if (f->rects[i].x < x0) x0 = f->rects[i].x;
        if (f->rects[i].x + f->rects[i].w > x1) x1 = f->rects[i].x + f->rects[i].w;
    }
    for (size_t i = 0; i < f->n_texts; i++) {
        const vz_text *t = &f->texts[i];
        if (t->role == VZ_T_TITLE) continue;
        if (t->ix < x0) x0 = t->ix;
        if (t->ix + t->iw > x1) x1 = t->ix + t->iw;
    }
    int gap_l = x0, gap_r = f->width - x1;
    if (abs(gap_l - gap_r) > f->width / 10)
        fail_msg("body %d..%d of %d px: %d px left, %d px right", x0, x1, f->width, gap_l, gap_r);
    hs_viz_figure_destroy(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(single_patterns_label_every_token_without_overlap),
        cmocka_unit_test(grids_up_to_12x16_label_outer_axes_without_overlap),
        cmocka_unit_test(gpt2_grid_fits_a_page),
        cmocka_unit_test(gpt2_query_row_as_layer_blocks),
        cmocka_unit_test(signed_and_bars_layouts_do_not_overlap),
        cmocka_unit_test(large_figures_rasterise_with_ink_in_every_label),
        cmocka_unit_test(figures_beyond_the_caps_are_refused),
        cmocka_unit_test(line_plot_title_wraps_to_the_plot_width),
        cmocka_unit_test(log_axes_put_a_power_law_on_a_straight_line),
        cmocka_unit_test(markers_only_draws_no_lines),
        cmocka_unit_test(grown_figures_say_so),
        cmocka_unit_test(one_row_colour_bar_label_stays_on_the_bar),
        cmocka_unit_test(narrow_body_is_centred_under_a_wide_title),
        cmocka_unit_test(series_differ_by_marker_and_legends_show_a_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
