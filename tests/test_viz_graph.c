/*
 * tests/test_viz_graph.c -- the circuit graph figure (viz/viz_graph*.c) and
 * its glue from the circuit graph (experiments/graph_fig.c), and the
 * faithfulness curve: MIB's layout (input at the bottom, a layer's heads
 * side by side, its MLP on the row above them, logits on top), every edge
 * from its sender's top into its receiver's q, k or v port (under the
 * letter) through an arrowhead whose tip touches it, a legend that explains
 * the grey letters and faint nodes, one label size, widths linear in |score| as documented and so ordered by it,
 * colours the diverging map's ends by sign (read back from the PNG's
 * pixels), the width promise (exact, or refused naming the width that
 * fits, which then fits exactly), bad graphs refused in one line, the
 * JSON's numbers, and the glue with no flags or scores (every edge, score 1;
 * GPT-2 small's 32,491 edges refused).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>

#include "viz_check.h"
#include "output/output.h"

/* A 2 x 4 circuit of ten edges: K-composition a0.h1 -> a1.h2<k> the
 * strongest, two negative edges, an MLP in and out. */
static const char *const SMALL[] = {
    "input->a0.h1<k>", "input->a0.h1<q>", "a0.h1->a1.h2<k>", "input->a1.h2<q>", "input->a1.h2<v>",
    "a1.h2->logits",   "a0.h3->m0",       "m0->a1.h0<v>",    "input->a0.h3<q>", "a1.h0->logits"};
static const double SMALL_S[] = {0.3, 0.12, 1.2, 0.45, 0.8, 0.9, -0.6, 0.05, -0.2, -0.3};
#define N_SMALL 10

/* An IOI-like circuit of GPT-2 small's shape (12 x 12): 42 edges. */
static const char *const BIG[] = {
    "input->a0.h1<v>",   "input->a0.h10<q>",  "a0.h1->a3.h0<v>",   "a0.h10->a3.h0<q>", "input->a3.h0<k>",
    "a3.h0->a5.h5<k>",   "a0.h1->a5.h5<v>",   "input->a2.h2<q>",   "input->a4.h11<k>", "a2.h2->a7.h3<v>",
    "a4.h11->a7.h9<v>",  "a5.h5->a8.h6<v>",   "a5.h5->a8.h10<v>",  "a6.h9->a9.h9<q>",  "a7.h3->a9.h9<q>",
    "a7.h9->a9.h6<q>",   "a8.h6->a9.h6<q>",   "a8.h10->a10.h0<q>", "a3.h0->a9.h9<k>",  "input->a9.h9<v>",
    "input->a9.h6<v>",   "input->a10.h0<v>",  "a9.h9->logits",     "a9.h6->logits",    "a10.h0->logits",
    "a10.h7->logits",    "a11.h10->logits",   "a9.h9->a10.h7<q>",  "a9.h9->a11.h10<q>", "input->a10.h7<v>",
    "input->a11.h10<v>", "m0->a3.h0<v>",      "input->m0",         "a0.h1->m0",        "m0->a5.h5<v>",
    "a10.h2->logits",    "a9.h9->a10.h2<q>",  "m11->logits",       "a10.h7->m11",      "a9.h6->m10",
    "m10->logits",       "input->a6.h9<q>"};
#define N_BIG 42

static double big_score(size_t i)
{
    double s = 0.05 + 0.9 * (double)((i * 37) % N_BIG) / N_BIG;
    return i % 7 == 3 ? -0.6 * s : s;
}

/* The height budget circuit_figure gives (0: the default 9 in). */
static double g_max_height_in;

/* The figure (and JSON when j is not NULL) of a circuit at width_in. */
static hs_status circuit_figure(int L, int H, const char *const *edges, const double *sc, size_t n,
                                double width_in, hs_viz_figure **f, cJSON **j, hs_error *err)
{
    hs_graph g;
    double *scores;
    unsigned char *in;
    circuit_fixture(L, H, edges, sc, n, &g, &scores, &in);
    hs_viz_options o;
    hs_viz_options_default(&o);
    o.width_in = width_in;
    o.max_height_in = g_max_height_in;
    hs_status s = hs_graph_figure(&g, scores, in, "a circuit", &o, f, j, NULL, err);
    free(scores);
    free(in);
    hs_graph_free(&g);
    return s;
}

static hs_viz_figure *small_figure(cJSON **j)
{
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    if (circuit_figure(2, 4, SMALL, SMALL_S, N_SMALL, 0, &f, j, &err)) fail_msg("%s", err.msg);
    return f;
}

static int group_of(const hs_viz_figure *f, const char *id)
{
    for (size_t g = 0; g < f->n_groups; g++)
        if (strcmp(f->groups[g], id) == 0) return (int)g;
    fail_msg("the figure has no group %s", id);
    return -1;
}

/* A node's box: the first rectangle of its group (the fill; the frame follows). */
static const vz_rect *box_of(const hs_viz_figure *f, const char *id)
{
    const int g = group_of(f, id);
    for (size_t i = 0; i < f->n_rects; i++)
        if (f->rects[i].group == g) return &f->rects[i];
    fail_msg("node %s has no box", id);
    return NULL;
}

static const vz_curve *curve_of(const hs_viz_figure *f, const char *id)
{
    const int g = group_of(f, id);
    for (size_t i = 0; i < f->n_curves; i++)
        if (f->curves[i].group == g) return &f->curves[i];
    fail_msg("edge %s has no curve", id);
    return NULL;
}

/* The last curve of the path that starts at k (its joined curves). */
static const vz_curve *path_end(const hs_viz_figure *f, const vz_curve *k)
{
    size_t i = (size_t)(k - f->curves);
    while (i + 1 < f->n_curves && f->curves[i + 1].joined) i++;
    return &f->curves[i];
}

/* Stroked paths (a curve and those joined to it count once; arrowheads,
 * filled, not). */
static size_t n_paths(const hs_viz_figure *f)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n_curves; i++) n += !f->curves[i].joined && !f->curves[i].filled;
    return n;
}

/* The arrowhead of the edge whose group is id: its filled path's first curve
 * (which starts at the tip). */
static const vz_curve *arrow_of(const hs_viz_figure *f, const char *id)
{
    const int g = group_of(f, id);
    for (size_t i = 0; i < f->n_curves; i++)
        if (f->curves[i].group == g && f->curves[i].filled) return &f->curves[i];
    fail_msg("edge %s has no arrowhead", id);
    return NULL;
}

/* Arrowheads: filled paths in edges' groups. */
static size_t n_arrows(const hs_viz_figure *f)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n_curves; i++)
        n += f->curves[i].filled && strncmp(f->groups[f->curves[i].group], "e-", 2) == 0;
    return n;
}

static const vz_text *text_of(const hs_viz_figure *f, const char *id, const char *s)
{
    const int g = group_of(f, id);
    for (size_t i = 0; i < f->n_texts; i++)
        if (f->texts[i].group == g && strcmp(f->texts[i].s, s) == 0) return &f->texts[i];
    fail_msg("group %s has no text '%s'", id, s);
    return NULL;
}

static void mib_layout_puts_layers_bottom_to_top(void **state)
{
    (void)state;
    hs_viz_figure *f = small_figure(NULL);
    check_geometry(f, "2 x 4 circuit");
    /* canvas y grows downward: input lowest, then layer 0's heads, m0, layer 1, m1, logits */
    static const char *const UP[6] = {"input", "a0_h0", "m0", "a1_h0", "m1", "logits"};
    for (int k = 0; k + 1 < 6; k++) {
        const vz_rect *lo = box_of(f, UP[k]), *hi = box_of(f, UP[k + 1]);
        if (!(hi->y + hi->h < lo->y)) fail_msg("%s (y %d) is not above %s (y %d)", UP[k + 1], hi->y, UP[k], lo->y);
    }
    /* a layer's heads side by side on one row, left to right, then its MLP */
    for (int l = 0; l < 2; l++) {
        char a[16], b[16], m[8];
        snprintf(m, sizeof m, "m%d", l);
        for (int h = 0; h + 1 < 4; h++) {
            snprintf(a, sizeof a, "a%d_h%d", l, h);
            snprintf(b, sizeof b, "a%d_h%d", l, h + 1);
            assert_int_equal(box_of(f, a)->y, box_of(f, b)->y);
            assert_true(box_of(f, a)->x + box_of(f, a)->w < box_of(f, b)->x);
        }
        assert_true(box_of(f, b)->x + box_of(f, b)->w < box_of(f, m)->x);
    }
    /* input and logits centred over the columns */
    const vz_rect *in = box_of(f, "input"), *out = box_of(f, "logits");
    const vz_rect *left = box_of(f, "a0_h0"), *right = box_of(f, "m0");
    const double mid = (left->x + right->x + right->w) / 2.0;
    assert_true(fabs(in->x + in->w / 2.0 - mid) <= 1.0 && fabs(out->x + out->w / 2.0 - mid) <= 1.0);
    /* nodes outside the circuit are faint and name only; the circuit's heads show q k v */
    assert_int_equal(text_of(f, "a0_h0", "a0.h0")->rgb[0], 0x9a);
    assert_int_equal(text_of(f, "a0_h1", "a0.h1")->rgb[0], 0);
    for (size_t i = 0; i < f->n_texts; i++)
        assert_false(f->texts[i].group == group_of(f, "a0_h0") && strcmp(f->texts[i].s, "k") == 0);
    /* the SVG: a group per node and per edge */
    char *svg = NULL;
    size_t len;
    hs_error err = {0};
    assert_int_equal(hs_viz_figure_svg(f, &svg, &len, &err), HS_OK);
    assert_non_null(strstr(svg, "<g id=\"a1_h2\">"));
    assert_non_null(strstr(svg, "<g id=\"e-a0_h1-a1_h2-k\">"));
    assert_non_null(strstr(svg, "<g id=\"e-a0_h3-m0\">"));
    free(svg);
    hs_viz_figure_destroy(f);
}

/* The edge's group id from its MIB name: "a0.h1->a1.h2<k>" -> "e-a0_h1-a1_h2-k". */
static void edge_id(const char *name, char *id, char *from, char *to, char *port)
{
    const char *arrow = strstr(name, "->"), *lt = strchr(name, '<');
    snprintf(from, 16, "%.*s", (int)(arrow - name), name);
    snprintf(to, 16, "%.*s", (int)(lt ? lt - arrow - 2 : (long)strlen(arrow + 2)), arrow + 2);
    snprintf(port, 4, "%s", lt ? (const char[]){lt[1], 0} : "");
    for (char *p = from; *p; p++) *p = *p == '.' ? '_' : *p;
    for (char *p = to; *p; p++) *p = *p == '.' ? '_' : *p;
    sprintf(id, "e-%s-%s%s%s", from, to, port[0] ? "-" : "", port);
}

static void edges_enter_the_q_k_or_v_port(void **state)
{
    (void)state;
    hs_viz_figure *f = small_figure(NULL);
    assert_int_equal(n_paths(f), N_SMALL + 4); /* + the legend's four samples */
    assert_int_equal(n_arrows(f), N_SMALL);
    double port_x[3] = {0};
    for (size_t i = 0; i < N_SMALL; i++) {
        char id[64], from[16], to[16], port[4];
        edge_id(SMALL[i], id, from, to, port);
        const vz_curve *k0 = curve_of(f, id), *k = path_end(f, k0);
        const vz_rect *s = box_of(f, from), *r = box_of(f, to);
        /* from the sender's top (the edges leaving one node spread over it),
           into the receiver's bottom (to half a pixel: the PNG's copy rounds
           the boxes of the layout at VZ_VECTOR_DPI to its pixels) */
        assert_true(k0->x0 > s->x && k0->x0 < s->x + s->w && fabs(k0->y0 - s->y) <= 0.5);
        /* an arrowhead pointing up, its tip at the receiver's bottom under
           the path's end, the stroke ending inside it (below the tip, above
           its base) */
        const vz_curve *a = arrow_of(f, id), *a2 = a + 1;
        assert_true(fabs(a->y0 - (r->y + r->h)) <= 0.5 && fabs(a->x0 - k->x3) < 1e-9);
        const double base = a2->y3, half = fabs(a2->x3 - a2->x0) / 2;
        if (!(k->y3 > a->y0 && k->y3 < base && half > k->width / 2))
            fail_msg("%s: stroke ends at %.1f, the head's tip %.1f and base %.1f (half-width %.1f, "
                     "stroke %.1f)", SMALL[i], k->y3, a->y0, base, half, k->width);
        /* leaving upward, arriving from below */
        assert_true(k0->y1 < k0->y0 && k0->x1 == k0->x0 && k->y2 > k->y3 && k->x2 == k->x3);
        if (!port[0]) {
            assert_true(k->x3 > r->x && k->x3 < r->x + r->w);
            continue;
        }
        /* under its letter, which is black */
        const vz_text *t = text_of(f, to, port);
        if (fabs(t->x + t->w / 2.0 - k->x3) > 1.5)
            fail_msg("%s ends at x %.1f, its letter '%s' is centred at %.1f", SMALL[i], k->x3, port,
                     t->x + t->w / 2.0);
        assert_int_equal(t->rgb[0], 0);
        if (strcmp(to, "a1_h2") == 0) port_x[port[0] == 'q' ? 0 : port[0] == 'k' ? 1 : 2] = k->x3;
    }
    /* a1.h2 receives q, k and v: three points, left to right */
    assert_true(port_x[0] < port_x[1] && port_x[1] < port_x[2]);
    const vz_rect *r = box_of(f, "a1_h2");
    assert_true(fabs(port_x[1] - (r->x + r->w / 2.0)) <= 1.0);
    /* an unused port's letter stays grey: a0.h1's v */
    assert_int_equal(text_of(f, "a0_h1", "v")->rgb[0], 0x9a);
    hs_viz_figure_destroy(f);
}

/* The point at t of a curve. */
static void bezier(const vz_curve *k, double t, double *x, double *y)
{
    const double u = 1 - t, a = u * u * u, b = 3 * u * u * t, c = 3 * u * t * t, d = t * t * t;
    *x = a * k->x0 + b * k->x1 + c * k->x2 + d * k->x3;
    *y = a * k->y0 + b * k->y1 + c * k->y2 + d * k->y3;
}

/* The point arc length len along a path (k and the curves joined to it) from its start. */
static void along(const vz_curve *k, double len, double *x, double *y)
{
    double px = k->x0, py = k->y0, run = 0;
    for (int j = 0; j == 0 || k[j].joined; j++)
        for (int i = 1; i <= 4000 && run < len; i++) {
            bezier(&k[j], i / 4000.0, x, y);
            run += hypot(*x - px, *y - py);
            px = *x, py = *y;
        }
}

/* Every edge's centre line (each curve of its path sampled at 200 points)
 * stays out of every node box but its sender's and receiver's, the boxes
 * taken 0.5 px in from their edges (a line may touch its ends). Returns
 * the number of crossings, printing each. */
static int box_crossings(const hs_viz_figure *f, const char *what)
{
    int bad = 0;
    for (size_t i = 0; i < f->n_curves; i++) {
        const char *id = f->groups[f->curves[i].group];
        if (strncmp(id, "e-", 2) != 0) continue;
        char from[32], to[32];
        const char *a = id + 2, *b = strchr(a, '-');
        snprintf(from, sizeof from, "%.*s", (int)(b - a), a);
        const char *c = strchr(b + 1, '-');
        snprintf(to, sizeof to, "%.*s", (int)(c ? c - b - 1 : (long)strlen(b + 1)), b + 1);
        for (size_t gi = 0; gi < f->n_groups; gi++) {
            const char *gn = f->groups[gi];
            if (!strncmp(gn, "e-", 2) || !strcmp(gn, "legend") || !strcmp(gn, "title") ||
                !strcmp(gn, from) || !strcmp(gn, to))
                continue;
            const vz_rect *r = NULL;
            for (size_t k = 0; k < f->n_rects && !r; k++)
                if (f->rects[k].group == (int)gi) r = &f->rects[k];
            if (!r) continue;
            for (int t = 0; t <= 200; t++) {
                double x, y;
                bezier(&f->curves[i], t / 200.0, &x, &y);
                if (x > r->x + 0.5 && x < r->x + r->w - 0.5 && y > r->y + 0.5 && y < r->y + r->h - 0.5) {
                    print_message("%s: edge %s crosses the box of %s at (%.1f, %.1f)\n", what, id, gn, x, y);
                    bad++;
                    break;
                }
            }
        }
    }
    return bad;
}

/* No edge crosses a node box other than its two ends (issue 35: a0.h2 ->
 * logits ran straight through the a1.h2 box into its k port; edges into
 * a1.h2 crossed the faint a0.h2 and covered its label; a1.h* -> m1 ran
 * along the boxes' tops): MIB's 2 x 4 graph with every kind of edge, and
 * the 12 x 12 IOI-like circuit, at a column and a page. */
static void no_edge_crosses_a_box(void **state)
{
    (void)state;
    static const char *const CROSS[] = {
        "a0.h2->logits", "a0.h1->a1.h2<q>", "a0.h3->a1.h2<v>", "input->a1.h1<k>", "a1.h0->m1",
        "a1.h1->m1",     "a1.h2->m1",       "a1.h3->m1",       "m0->logits",      "input->m1",
        "a0.h0->a1.h3<k>", "m0->a1.h0<q>",  "input->logits"};
    static const double CS[] = {0.9, 0.5, -0.4, 0.3, 0.2, 0.25, 0.3, 0.35, -0.1, 0.6, 0.7, 0.2, 0.15};
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    int bad = 0;
    for (int w = 0; w < 2; w++) {
        if (circuit_figure(2, 4, CROSS, CS, sizeof CS / sizeof *CS, w ? HS_VIZ_PAGE_IN : 0, &f, NULL, &err))
            fail_msg("%s", err.msg);
        check_geometry(f, "2 x 4 crossing circuit");
        bad += box_crossings(f, w ? "2 x 4 at a page" : "2 x 4 at a column");
        hs_viz_figure_destroy(f);
    }
    f = small_figure(NULL);
    bad += box_crossings(f, "the small circuit");
    hs_viz_figure_destroy(f);
    double sc[N_BIG];
    for (size_t i = 0; i < N_BIG; i++) sc[i] = big_score(i);
    if (circuit_figure(12, 12, BIG, sc, N_BIG, 0, &f, NULL, &err)) fail_msg("%s", err.msg);
    bad += box_crossings(f, "12 x 12");
    hs_viz_figure_destroy(f);
    assert_int_equal(bad, 0);
}

/* A path's length (its curves' control polygons' chords, enough for straight runs). */
static double path_len(const hs_viz_figure *f, const vz_curve *k)
{
    double len = 0;
    for (const vz_curve *q = k; q == k || (q < f->curves + f->n_curves && q->joined); q++)
        for (int t = 1; t <= 64; t++) {
            double x0, y0, x1, y1;
            bezier(q, (t - 1) / 64.0, &x0, &y0);
            bezier(q, t / 64.0, &x1, &y1);
            len += hypot(x1 - x0, y1 - y0);
        }
    return len;
}

/* Dashes tell the signs apart only when both are drawn (issue 35: when every
 * score was negative, every edge was dashed), and a dash is at most a
 * quarter of its edge (a dash longer than the edge drew solid). */
static void dashes_only_when_both_signs_are_drawn(void **state)
{
    (void)state;
    static const char *const E[] = {"input->a0.h1<k>", "a0.h1->a1.h2<k>", "a1.h2->logits", "a0.h3->m0"};
    static const double NEG[] = {-0.3, -1.2, -0.9, -0.6}, MIX[] = {-0.3, 1.2, -0.9, 0.6};
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    if (circuit_figure(2, 4, E, NEG, 4, 0, &f, NULL, &err)) fail_msg("%s", err.msg);
    for (size_t i = 0; i < f->n_curves; i++) assert_true(f->curves[i].dash_on == 0);
    assert_non_null(strstr(f->desc, "blue score < 0"));
    hs_viz_figure_destroy(f);
    if (circuit_figure(2, 4, E, MIX, 4, 0, &f, NULL, &err)) fail_msg("%s", err.msg);
    int dashed = 0;
    for (size_t i = 0; i < f->n_curves; i++) {
        const vz_curve *k = &f->curves[i];
        if (k->joined || strncmp(f->groups[k->group], "e-", 2) != 0 || k->dash_on == 0) continue;
        dashed++;
        const double len = path_len(f, k);
        if (k->dash_on > 0.25 * len + 1e-6)
            fail_msg("%s: a dash of %.1f px on a path of %.1f px", f->groups[k->group], k->dash_on, len);
    }
    assert_int_equal(dashed, 2);
    hs_viz_figure_destroy(f);
}

/* The legend explains every mark (a new user's trial: grey q k v letters and
 * faint nodes went unexplained): the small circuit's legend has a sample
 * q k v (q black, k and v grey) with its words and a faint box "not in the
 * circuit"; a circuit of every node has no faint box. One label size: every
 * text but the title at 8 pt, the q k v letters too (discover's figure
 * mixed 6.4 and 8 pt). */
static void legend_explains_letters_and_faint_nodes(void **state)
{
    (void)state;
    hs_viz_figure *f = small_figure(NULL);
    const int lg = group_of(f, "legend");
    int letters = 0, grey = 0, faint_words = 0, qkv_words = 0, boxes = 0;
    for (size_t i = 0; i < f->n_texts; i++) {
        const vz_text *t = &f->texts[i];
        if (t->role != VZ_T_TITLE && fabs(t->px - 8.0 * f->dpi / 72.0) > 1e-6)
            fail_msg("'%s' at %.2f pt, labels at 8 pt", t->s, t->px * 72.0 / f->dpi);
        if (t->group != lg) continue;
        if (!strcmp(t->s, "q") || !strcmp(t->s, "k") || !strcmp(t->s, "v")) {
            letters++;
            grey += t->rgb[0] != 0;
        }
        faint_words += strcmp(t->s, "not in the circuit") == 0;
        qkv_words += strstr(t->s, "inputs (grey: no edge)") != NULL;
    }
    for (size_t i = 0; i < f->n_rects; i++) boxes += f->rects[i].group == lg;
    if (letters != 3 || grey != 2 || faint_words != 1 || qkv_words != 1 || boxes < 1)
        fail_msg("legend: %d letters (%d grey), faint words %d, q k v words %d, %d rects", letters, grey,
                 faint_words, qkv_words, boxes);
    hs_viz_figure_destroy(f);
    /* every node in the circuit: no faint box to explain */
    static const char *const ALL[] = {"input->a0.h0<q>", "a0.h0->m0", "m0->logits"};
    static const double AS[] = {1.0, 0.5, 0.25};
    hs_error err = {0};
    if (circuit_figure(1, 1, ALL, AS, 3, 0, &f, NULL, &err)) fail_msg("%s", err.msg);
    for (size_t i = 0; i < f->n_texts; i++) assert_true(strcmp(f->texts[i].s, "not in the circuit") != 0);
    hs_viz_figure_destroy(f);
}

static void widths_follow_abs_score_and_colours_the_sign(void **state)
{
    (void)state;
    hs_viz_figure *f = small_figure(NULL);
    const double k = f->dpi / 72.0, maxabs = 1.2;
    static const unsigned char POS[3] = {103, 0, 31}, NEG[3] = {5, 48, 97}; /* viz_color.c's ends */
    const vz_curve *c[N_SMALL];
    for (size_t i = 0; i < N_SMALL; i++) {
        char id[64], from[16], to[16], port[4];
        edge_id(SMALL[i], id, from, to, port);
        c[i] = curve_of(f, id);
        /* the documented scale, by hand: 0.5 pt + 2.5 pt x |score| / 1.2 (scores are float32) */
        const double want = (0.5 + 2.5 * fabs((double)(float)SMALL_S[i]) / (double)(float)maxabs) * k;
        if (fabs(c[i]->width - want) > 1e-9) fail_msg("%s: width %.4f px, expected %.4f", SMALL[i], c[i]->width, want);
        assert_memory_equal(c[i]->rgb, SMALL_S[i] < 0 ? NEG : POS, 3);
        assert_true((c[i]->dash_on > 0) == (SMALL_S[i] < 0));
    }
    for (size_t i = 0; i < N_SMALL; i++)
        for (size_t j = 0; j < N_SMALL; j++)
            if (fabs(SMALL_S[i]) < fabs(SMALL_S[j])) assert_true(c[i]->width < c[j]->width);
    assert_true(fabs(c[2]->width - 3.0 * k) < 1e-9 && fabs(c[7]->width - (0.5 + 2.5 * 0.05 / 1.2) * k) < 1e-6);
    /* as drawn: the strongest (positive) edge's middle, and inside the first
       dash of a0.h3 -> m0 (negative), in the PNG */
    char *png = tmp_path("graph_colours.png");
    hs_error err = {0};
    assert_int_equal(hs_viz_figure_write_png(f, png, NULL, &err), HS_OK);
    image im;
    read_png(png, &im);
    double x, y;
    bezier(c[2], 0.5, &x, &y);
    assert_memory_equal(px(&im, (int)floor(x), (int)floor(y)), POS, 3);
    along(c[6], c[6]->dash_on / 2, &x, &y);
    assert_memory_equal(px(&im, (int)floor(x), (int)floor(y)), NEG, 3);
    /* and the gap after that dash is background */
    along(c[6], c[6]->dash_on + c[6]->dash_off / 2, &x, &y);
    assert_memory_equal(px(&im, (int)floor(x), (int)floor(y)), VZ_WHITE, 3);
    free(im.rgb);
    free(png);
    /* the SVG says the same */
    char *svg = NULL;
    size_t len;
    assert_int_equal(hs_viz_figure_svg(f, &svg, &len, &err), HS_OK);
    const char *e = strstr(svg, "<g id=\"e-a0_h3-m0\">");
    assert_non_null(e);
    assert_non_null(strstr(e, "stroke=\"#053061\""));
    assert_true(strstr(e, "stroke-dasharray") < strstr(e, "</g>"));
    free(svg);
    hs_viz_figure_destroy(f);
}

static void the_width_promise_is_kept_or_refused(void **state)
{
    (void)state;
    double sc[N_BIG];
    for (size_t i = 0; i < N_BIG; i++) sc[i] = big_score(i);
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    /* no width: 2 x 4 is a column, 12 x 12 a page, exactly */
    f = small_figure(NULL);
    assert_int_equal(f->width, (int)lround(HS_VIZ_COLUMN_IN * 300));
    assert_true(hs_viz_figure_grown_from_in(f) == 0);
    hs_viz_figure_destroy(f);
    if (circuit_figure(12, 12, BIG, sc, N_BIG, 0, &f, NULL, &err)) fail_msg("%s", err.msg);
    assert_int_equal(f->width, (int)lround(HS_VIZ_PAGE_IN * 300));
    assert_true(hs_viz_figure_grown_from_in(f) == 0);
    check_geometry(f, "12 x 12 circuit at page width");
    assert_int_equal(n_paths(f), N_BIG + 4);
    hs_viz_figure_destroy(f);
    /* 12 x 12 in a column (GPT-2's heads; refused before, "needs 6.30 in"):
       each layer's 12 heads wrapped onto two rows of 6, a0.h6 over a0.h0 in
       its column, the MLP in the last column, exactly a column wide, no edge
       crossing a box (every node drawn: a budget of 30 in; at 9 in only the
       circuit's nodes are, a_graph_over_the_height_budget_...) */
    g_max_height_in = 30;
    if (circuit_figure(12, 12, BIG, sc, N_BIG, HS_VIZ_COLUMN_IN, &f, NULL, &err)) fail_msg("%s", err.msg);
    g_max_height_in = 0;
    assert_int_equal(f->width, (int)lround(HS_VIZ_COLUMN_IN * 300));
    check_geometry(f, "12 x 12 circuit wrapped in a column");
    assert_int_equal(n_paths(f), N_BIG + 4);
    const vz_rect *h0 = box_of(f, "a0_h0"), *h5 = box_of(f, "a0_h5"), *h6 = box_of(f, "a0_h6"),
                  *h11 = box_of(f, "a0_h11"), *m0 = box_of(f, "m0"), *a1 = box_of(f, "a1_h0");
    assert_true(h6->y + h6->h <= h0->y); /* above it */
    assert_true(h6->x == h0->x && h11->x == h5->x);
    assert_true(h5->x > h0->x && h11->y == h6->y);
    assert_true(m0->y + m0->h <= h6->y && a1->y + a1->h <= m0->y); /* the MLP over both rows, a1 over it */
    assert_true(abs(m0->x + m0->w - (h5->x + h5->w)) < 2);
    hs_viz_figure_destroy(f);
    /* too narrow even for 4 rows of 3: refused in one line naming the width
       that fits the graph as given */
    assert_int_equal(circuit_figure(12, 12, BIG, sc, N_BIG, 1.0, &f, NULL, &err), HS_ERR_INPUT);
    assert_null(f);
    print_message("%s\n", err.msg);
    assert_non_null(strstr(err.msg, "circuit graph cannot show every label in 1.00 in at 6 pt"));
    assert_null(strchr(err.msg, '\n'));
    const char *w = strstr(err.msg, "HINT: --width ");
    assert_non_null(w);
    const double need = strtod(w + 14, NULL);
    assert_true(need > HS_VIZ_COLUMN_IN && need <= HS_VIZ_PAGE_IN);
    /* which fits, exactly */
    if (circuit_figure(12, 12, BIG, sc, N_BIG, need, &f, NULL, &err)) fail_msg("at %.2f in: %s", need, err.msg);
    assert_int_equal(f->width, (int)lround(need * 300));
    check_geometry(f, "12 x 12 circuit at the width named");
    hs_viz_figure_destroy(f);
}

static void bad_graphs_are_refused_in_one_line(void **state)
{
    (void)state;
    const char *names[3] = {"input", "a0.h0", "logits"};
    int row[3] = {0, 1, 2}, col[3] = {-1, 0, -1}, from[2] = {0, 1}, to[2] = {1, 2};
    unsigned char ports[3] = {0, 1, 0}, port[2] = {HS_VIZ_PORT_K, HS_VIZ_PORT_WHOLE};
    float score[2] = {1.0f, -0.5f};
    hs_viz_graph g = {3, names, row, col, ports, NULL, 2, from, to, score, port};
    hs_viz_figure *f = NULL;
    hs_error err = {0};
    assert_int_equal(hs_viz_graph_figure(&g, NULL, NULL, &f, &err), HS_OK);
    hs_viz_figure_destroy(f);
    struct {
        const char *what;
        hs_status want;
        const char *msg;
    } cases[] = {{"downward", HS_ERR_INPUT, "does not run upward"},
                 {"port", HS_ERR_INPUT, "enters port 0; a0.h0 has q, k and v"},
                 {"nan", HS_ERR_NUMERIC, "not finite"},
                 {"place", HS_ERR_INPUT, "share row 1"},
                 {"many", HS_ERR_INPUT, "a figure draws up to 1024"},
                 {"node", HS_ERR_INPUT, "names node 7 of 3"}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        hs_viz_graph b = g;
        int r2[3] = {0, 1, 1}, c2[3] = {-1, 0, 0}, f2[2] = {1, 1}, t2[2] = {0, 2}, f7[2] = {1, 7};
        unsigned char p2[2] = {HS_VIZ_PORT_WHOLE, HS_VIZ_PORT_WHOLE};
        float s2[2] = {NAN, 1.0f};
        switch (k) {
        case 0: b.from = f2, b.to = t2; break;
        case 1: b.port = p2; break;
        case 2: b.score = s2; break;
        case 3: b.row = r2, b.col = c2, b.n_edges = 0; break;
        case 4: b.n_edges = HS_VIZ_MAX_EDGES + 1; break;
        default: b.to = f7; break;
        }
        memset(&err, 0, sizeof err);
        assert_int_equal(hs_viz_graph_figure(&b, NULL, NULL, &f, &err), cases[k].want);
        assert_null(f);
        if (!strstr(err.msg, cases[k].msg)) fail_msg("%s: '%s' does not say '%s'", cases[k].what, err.msg, cases[k].msg);
        assert_null(strchr(err.msg, '\n'));
        cJSON *j = NULL;
        assert_int_equal(hs_viz_graph_json(&b, NULL, &j, &err), cases[k].want);
        assert_null(j);
    }
}

static const cJSON *find_named(const cJSON *arr, const char *key, const char *v, const char *key2,
                               const char *v2)
{
    for (const cJSON *it = arr->child; it; it = it->next)
        if (strcmp(cJSON_GetObjectItem(it, key)->valuestring, v) == 0 &&
            (!key2 || strcmp(cJSON_GetObjectItem(it, key2)->valuestring, v2) == 0))
            return it;
    fail_msg("no %s %s", key, v);
    return NULL;
}

static void json_holds_every_number(void **state)
{
    (void)state;
    cJSON *j = NULL;
    hs_viz_figure *f = small_figure(&j);
    hs_viz_figure_destroy(f);
    /* through the file and back */
    char *path = tmp_path("graph.json");
    hs_error err = {0};
    assert_int_equal(hs_viz_write_json(j, path, &err), HS_OK);
    cJSON_Delete(j);
    unsigned char *text;
    size_t n;
    assert_int_equal(hs_read_file(path, &text, &n, &err), HS_OK);
    j = cJSON_ParseWithLength((const char *)text, n);
    free(text);
    free(path);
    assert_non_null(j);
    const cJSON *nodes = cJSON_GetObjectItem(j, "nodes"), *edges = cJSON_GetObjectItem(j, "edges");
    assert_int_equal(cJSON_GetArraySize(nodes), 12);
    assert_int_equal(cJSON_GetArraySize(edges), N_SMALL);
    static const struct {
        const char *name;
        int row, col, ports, in;
    } N[] = {{"input", 0, -1, 0, 1}, {"a0.h0", 1, 0, 1, 0}, {"a0.h3", 1, 3, 1, 1}, {"m0", 2, 4, 0, 1},
             {"a1.h2", 3, 2, 1, 1},  {"m1", 4, 4, 0, 0},    {"logits", 5, -1, 0, 1}};
    for (size_t i = 0; i < sizeof N / sizeof N[0]; i++) {
        const cJSON *o = find_named(nodes, "name", N[i].name, NULL, NULL);
        assert_int_equal(cJSON_GetObjectItem(o, "row")->valueint, N[i].row);
        assert_int_equal(cJSON_GetObjectItem(o, "col")->valueint, N[i].col);
        assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItem(o, "ports")), N[i].ports);
        assert_int_equal(cJSON_IsTrue(cJSON_GetObjectItem(o, "in_circuit")), N[i].in);
    }
    for (size_t i = 0; i < N_SMALL; i++) {
        char id[64], from[16], to[16], port[4];
        edge_id(SMALL[i], id, from, to, port);
        for (char *p = from; *p; p++) *p = *p == '_' ? '.' : *p;
        for (char *p = to; *p; p++) *p = *p == '_' ? '.' : *p;
        const cJSON *e = NULL;
        for (const cJSON *it = edges->child; it && !e; it = it->next) {
            const cJSON *pj = cJSON_GetObjectItem(it, "port");
            if (!strcmp(cJSON_GetObjectItem(it, "from")->valuestring, from) &&
                !strcmp(cJSON_GetObjectItem(it, "to")->valuestring, to) &&
                (port[0] ? cJSON_IsString(pj) && !strcmp(pj->valuestring, port) : cJSON_IsNull(pj)))
                e = it;
        }
        if (!e) fail_msg("JSON has no edge %s", SMALL[i]);
        assert_true((float)cJSON_GetObjectItem(e, "score")->valuedouble == (float)SMALL_S[i]);
    }
    const cJSON *w = cJSON_GetObjectItem(j, "edge_width_pt");
    assert_true(cJSON_GetObjectItem(w, "min")->valuedouble == 0.5 && cJSON_GetObjectItem(w, "max")->valuedouble == 3.0);
    assert_true((float)cJSON_GetObjectItem(w, "max_abs_score")->valuedouble == 1.2f);
    const cJSON *c = cJSON_GetObjectItem(j, "colours");
    assert_string_equal(cJSON_GetObjectItem(c, "positive")->valuestring, "#67001f");
    assert_string_equal(cJSON_GetObjectItem(c, "negative")->valuestring, "#053061");
    cJSON_Delete(j);
}

static void faithfulness_curve_has_log_x_and_the_unit_line(void **state)
{
    (void)state;
    const double pct[10] = {0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100};
    double f[30];
    for (int m = 0; m < 3; m++)
        for (int i = 0; i < 10; i++) f[m * 10 + i] = 1.0 - exp(-(i + 1) * (0.3 + 0.2 * m));
    f[18] = 1.08; /* a method overshoots the model */
    f[20] = -0.15; /* and one is worse than the empty circuit at 0.1% */
    const char *methods[3] = {"EAP", "EAP-IG", "ACDC"};
    hs_viz_options o;
    hs_viz_options_default(&o);
    o.width_in = HS_VIZ_COLUMN_IN;
    hs_viz_figure *fig = NULL;
    cJSON *j = NULL;
    hs_error err = {0};
    if (hs_faithfulness_figure(pct, 10, f, methods, 3, "faithfulness", &o, &fig, &j, &err)) fail_msg("%s", err.msg);
    assert_int_equal(fig->width, (int)lround(HS_VIZ_COLUMN_IN * 300));
    check_geometry(fig, "faithfulness curve");
    /* x: a log axis from 0.1 to 100 %; y covers [min(0, f), max(1, f)] */
    double zero_y = NAN, one_y = NAN, right = NAN;
    int xt = 0;
    for (size_t i = 0; i < fig->n_texts; i++) {
        const vz_text *t = &fig->texts[i];
        if (t->role != VZ_T_CBAR) continue;
        if (t->anchor == VZ_A_MIDDLE) {
            xt += !strcmp(t->s, "0.1") || !strcmp(t->s, "1") || !strcmp(t->s, "10") || !strcmp(t->s, "100");
            if (!strcmp(t->s, "100")) right = t->x + t->w / 2.0; /* the plot's right end */
            continue;
        }
        const double v = strtod(t->s, NULL);
        if (v == 0.0) zero_y = t->y + t->h / 2.0;
        if (v == 1.0) one_y = t->y + t->h / 2.0;
    }
    assert_int_equal(xt, 4);
    assert_true(isfinite(zero_y) && isfinite(one_y));
    /* ACDC's -0.15 below the 0 tick, EAP-IG's 1.08 above the 1 tick: covered, not clipped */
    unsigned char green[3], orange[3];
    hs_viz_series_rgb(2, green);
    hs_viz_series_rgb(1, orange);
    int low = -1, high = 1 << 30, mk = 0;
    for (size_t i = 0; i < fig->n_rects; i++) { /* series 1's markers: open squares of side mk */
        const vz_rect *r = &fig->rects[i];
        if (r->w != r->h || r->x > right || memcmp(r->rgb, orange, 3)) continue; /* not the legend's */
        mk = vz_imax(mk, r->w);
        high = vz_imin(high, r->y + r->h / 2);
    }
    const int bar = mk / 3 > 1 ? mk / 3 : 1;
    for (size_t i = 0; i < fig->n_rects; i++) { /* series 2's: pluses, their bars mk + mk / 3 long */
        const vz_rect *r = &fig->rects[i];
        if (r->x > right || memcmp(r->rgb, green, 3) || r->w != mk + mk / 3 || r->h != bar) continue;
        low = vz_imax(low, r->y + r->h / 2);
    }
    assert_true(mk > 2 && low >= 0);
    assert_true(low > zero_y + 5 && high < one_y - 5);
    /* the dashed line at f = 1 lies at the "1.0" tick, labelled */
    int dashes = 0;
    for (size_t i = 0; i < fig->n_rects; i++) {
        const vz_rect *r = &fig->rects[i];
        if (r->rgb[0] == 0x90 && r->w > r->h) {
            dashes++;
            assert_true(fabs(r->y + r->h / 2.0 - one_y) <= 2.0);
        }
    }
    assert_true(dashes >= 10);
    int named = 0;
    for (size_t i = 0; i < fig->n_texts; i++)
        named += !strcmp(fig->texts[i].s, "full model") + !strcmp(fig->texts[i].s, "EAP-IG") + !strcmp(fig->texts[i].s, "ACDC");
    assert_int_equal(named, 3);
    hs_viz_figure_destroy(fig);
    /* the JSON: every point of every method */
    const cJSON *s = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "panels"), 0), "series");
    assert_int_equal(cJSON_GetArraySize(s), 3);
    assert_true((float)cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(s, 1), "y"), 8)->valuedouble ==
                (float)1.08);
    assert_string_equal(cJSON_GetObjectItem(j, "x_scale")->valuestring, "log");
    assert_true(cJSON_GetObjectItem(j, "mark_y")->valuedouble == 1.0);
    cJSON_Delete(j);
}

static void the_glue_takes_every_edge_and_unit_scores(void **state)
{
    (void)state;
    hs_config cfg = hs_config_default();
    cfg.n_layers = 2;
    cfg.n_heads = 4;
    cfg.d_mlp = 4 * cfg.d_model;
    hs_graph g;
    hs_error err = {0};
    assert_int_equal(hs_graph_build(&cfg, &g, &err), HS_OK);
    hs_viz_figure *f = NULL;
    cJSON *j = NULL;
    /* no flags, no scores: all 110 edges, each of score 1 and the widest width */
    if (hs_graph_figure(&g, NULL, NULL, NULL, NULL, &f, &j, NULL, &err)) fail_msg("%s", err.msg);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "edges")), 110);
    assert_int_equal(n_paths(f), 110 + 2); /* the legend: one sign, one width */
    for (size_t i = 0; i < f->n_curves; i++)
        if (!strncmp(f->groups[f->curves[i].group], "e-", 2))
            assert_true(f->curves[i].width == 0 || fabs(f->curves[i].width - 3.0 * f->dpi / 72.0) < 1e-9); /* 0: an arrowhead */
    check_geometry(f, "every edge of 2 x 4");
    hs_viz_figure_destroy(f);
    cJSON_Delete(j);
    hs_graph_free(&g);
    /* GPT-2 small's every edge is over the figure's cap: one line, no figure, no JSON */
    cfg.n_layers = 12;
    cfg.n_heads = 12;
    assert_int_equal(hs_graph_build(&cfg, &g, &err), HS_OK);
    assert_int_equal(hs_graph_figure(&g, NULL, NULL, NULL, NULL, &f, &j, NULL, &err), HS_ERR_INPUT);
    assert_null(f);
    assert_null(j);
    assert_non_null(strstr(err.msg, "32491 edges; a figure draws up to 1024"));
    hs_graph_free(&g);
}

/* GPT-2 small's graph (12 x 12 heads, MLPs; 32,491 edges), every edge a
 * fixed pseudo-random score in [-0.3, 0.7) and every every-th edge in the
 * circuit: how many. *sc and *in are malloc'd (the caller frees them and
 * hs_graph_free's g). */
static size_t gpt2_graph_every(size_t every, hs_graph *g, double **sc, unsigned char **in)
{
    hs_config cfg = hs_config_default();
    cfg.n_layers = 12;
    cfg.n_heads = 12;
    cfg.d_mlp = 4 * cfg.d_model;
    hs_error err = {0};
    assert_int_equal(hs_graph_build(&cfg, g, &err), HS_OK);
    *sc = malloc(g->n_edges * sizeof **sc);
    *in = calloc(g->n_edges, 1);
    assert_non_null(*sc);
    assert_non_null(*in);
    size_t n_in = 0;
    for (size_t e = 0; e < g->n_edges; e++) {
        (*sc)[e] = (double)((e * 7919) % 10007) / 10007.0 - 0.3;
        if (e % every == 0) (*in)[e] = 1, n_in++;
    }
    return n_in;
}

/* A circuit past the figure's cap of 1,024 edges (issue 35: GPT-2's default
 * 5 % circuit, 1,598 edges, got no figure at all): the figure's JSON lists
 * the 1,024 strongest by |score|, with a note; the figure itself keeps to
 * the 9 in height (1,024 edges on 12 layers were 10.9 in tall at a page):
 * the strongest that fit and their nodes. */
static void a_circuit_past_the_cap_draws_its_strongest_edges(void **state)
{
    (void)state;
    hs_graph g;
    hs_error err = {0};
    double *sc;
    unsigned char *in;
    const size_t n_in = gpt2_graph_every(20, &g, &sc, &in);
    assert_true(n_in > HS_VIZ_MAX_EDGES);
    /* the 1,024th strongest |score| among the circuit's */
    double *a = malloc(n_in * sizeof *a);
    size_t m = 0;
    for (size_t e = 0; e < g.n_edges; e++)
        if (in[e]) a[m++] = fabs(sc[e]);
    for (size_t i = 0; i < m; i++) /* a partial selection sort: the top 1024 first */
        for (size_t j = i + 1; j < m && i < HS_VIZ_MAX_EDGES; j++)
            if (a[j] > a[i]) { double t = a[i]; a[i] = a[j]; a[j] = t; }
    const double floor_abs = a[HS_VIZ_MAX_EDGES - 1];
    free(a);
    char *dir = tmp_path("graph_cap");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    run(cmd);
    hs_figopts fo;
    hs_figopts_default(&fo, 72);
    fo.png = 1, fo.svg = fo.pdf = 0, fo.json = 1;
    hs_outdir od;
    assert_int_equal(hs_outdir_open(&od, "discover", dir, &fo, NULL, NULL, NULL, &err), HS_OK);
    if (hs_graph_figure_write(&od, "circuit", &g, sc, in, "a big circuit", "the circuit", &err) ||
        hs_outdir_commit(&od, NULL, &err))
        fail_msg("%s", err.msg);
    hs_outdir_close(&od);
    char *jp = hs_path_join(dir, "circuit.json"), *pp = hs_path_join(dir, "circuit.png");
    FILE *pf = fopen(pp, "rb"); /* the PNG's IHDR height at 72 dpi: at most 9 in */
    unsigned char hdr[24];
    assert_non_null(pf);
    assert_int_equal(fread(hdr, 1, sizeof hdr, pf), sizeof hdr);
    fclose(pf);
    const unsigned long png_h = (unsigned long)hdr[20] << 24 | hdr[21] << 16 | hdr[22] << 8 | hdr[23];
    print_message("circuit.png: %lu px tall at 72 dpi\n", png_h);
    assert_true(png_h <= 9 * 72 && png_h > 3 * 72);
    FILE *fp = fopen(jp, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    rewind(fp);
    char *txt = malloc((size_t)len + 1);
    assert_int_equal(fread(txt, 1, (size_t)len, fp), (size_t)len);
    txt[len] = 0;
    fclose(fp);
    cJSON *j = cJSON_Parse(txt);
    assert_non_null(j);
    const cJSON *edges = cJSON_GetObjectItem(j, "edges"), *e;
    assert_int_equal(cJSON_GetArraySize(edges), HS_VIZ_MAX_EDGES);
    cJSON_ArrayForEach(e, edges)
        assert_true(fabs(cJSON_GetObjectItem(e, "score")->valuedouble) >= floor_abs - 1e-6);
    cJSON_Delete(j);
    free(txt);
    free(jp);
    free(pp);
    free(dir);
    free(sc);
    free(in);
    hs_graph_free(&g);
}

/* A graph taller than the height budget (GPT-2's 12 x 12 heads, every 40th
 * edge: 813 edges, 18 in in a column before) draws its strongest edges that
 * fit and only their nodes: at most 9 in, fewer edges, fewer node boxes, the
 * geometry whole and no edge through a box (a graph within the budget is
 * drawn whole, every node included: the tests above). */
static void a_graph_over_the_height_budget_draws_its_strongest_edges(void **state)
{
    (void)state;
    hs_graph g;
    hs_error err = {0};
    double *sc;
    unsigned char *in;
    const size_t n_in = gpt2_graph_every(40, &g, &sc, &in);
    hs_viz_options o;
    hs_viz_options_default(&o);
    o.width_in = HS_VIZ_COLUMN_IN;
    hs_viz_figure *f = NULL;
    size_t drawn = 0;
    if (hs_graph_figure(&g, sc, in, "a tall circuit", &o, &f, NULL, &drawn, &err)) fail_msg("%s", err.msg);
    const double h_in = (double)hs_viz_figure_height(f) / hs_viz_figure_dpi(f);
    size_t boxes = 0;
    for (size_t i = 0; i < f->n_groups; i++) boxes += f->groups[i][0] == 'a' && strstr(f->groups[i], "_h");
    print_message("%zu edges: %.2f in tall, %zu edge paths, %zu head boxes\n", n_in, h_in, n_paths(f), boxes);
    assert_true(h_in <= HS_VIZ_MAX_HEIGHT_IN + 1e-9 && h_in > 0.5 * HS_VIZ_MAX_HEIGHT_IN);
    assert_true(n_paths(f) > 10 && n_paths(f) < n_in);
    size_t edge_groups = 0; /* one group "e-<sender>-<receiver>..." per edge drawn */
    for (size_t i = 0; i < f->n_groups; i++) edge_groups += strncmp(f->groups[i], "e-", 2) == 0;
    assert_int_equal(drawn, edge_groups); /* what the caller's note says is drawn */
    assert_true(boxes > 0 && boxes < 144); /* the heads of the drawn edges alone */
    check_geometry(f, "12 x 12 circuit fitted to the height");
    assert_int_equal(box_crossings(f, "12 x 12 fitted"), 0);
    int noted = 0;
    for (size_t i = 0; i < f->n_texts; i++)
        noted |= strstr(f->texts[i].s, "strongest edges by |score| and their nodes") != NULL;
    assert_true(noted);
    hs_viz_figure_destroy(f);
    free(sc);
    free(in);
    hs_graph_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mib_layout_puts_layers_bottom_to_top),
        cmocka_unit_test(edges_enter_the_q_k_or_v_port),
        cmocka_unit_test(legend_explains_letters_and_faint_nodes),
        cmocka_unit_test(widths_follow_abs_score_and_colours_the_sign),
        cmocka_unit_test(the_width_promise_is_kept_or_refused),
        cmocka_unit_test(bad_graphs_are_refused_in_one_line),
        cmocka_unit_test(json_holds_every_number),
        cmocka_unit_test(faithfulness_curve_has_log_x_and_the_unit_line),
        cmocka_unit_test(no_edge_crosses_a_box),
        cmocka_unit_test(a_circuit_past_the_cap_draws_its_strongest_edges),
        cmocka_unit_test(a_graph_over_the_height_budget_draws_its_strongest_edges),
        cmocka_unit_test(dashes_only_when_both_signs_are_drawn),
        cmocka_unit_test(the_glue_takes_every_edge_and_unit_scores),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
