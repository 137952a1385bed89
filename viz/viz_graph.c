/*
 * viz/viz_graph.c -- the circuit graph (viz.h, "The circuit graph"): nodes
 * as labelled boxes on rows (bottom to top) and columns, the nodes outside
 * the circuit faint under the edges, the circuit's over them; edges as
 * cubic curves from a sender's top to its receiver's port (a head's q, k or
 * v under its letter), width linear in |score|, colour the diverging map's
 * end of its sign (negative dashed, for grey print); a legend under the
 * graph; the width promise through vz_fit_width. And the graph's JSON.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viz/viz_internal.h"

static const unsigned char FAINT_FRAME[3] = {0xc8, 0xc8, 0xc8};
static const unsigned char FAINT_TEXT[3] = {0x9a, 0x9a, 0x9a};
static const unsigned char BOX_FILL[3] = {0xf2, 0xf2, 0xf2};
static const unsigned char SAMPLE_RGB[3] = {0x40, 0x40, 0x40};
static const char *const PORT_NAME[4] = {"", "q", "k", "v"};

/* An edge's colour: the diverging map's end of its sign. */
static void sign_rgb(float s, unsigned char rgb[3])
{
    hs_viz_cmap_rgb(HS_VIZ_CMAP_DIVERGING, s < 0 ? 0.0 : 1.0, rgb);
}

static hs_status check_graph(const hs_viz_graph *g, hs_error *err)
{
    const size_t max_nodes = (size_t)HS_VIZ_MAX_GRAPH_ROWS * HS_VIZ_MAX_GRAPH_COLS;
    if (g == NULL) return hs_fail(err, HS_ERR_INPUT, "circuit graph: the graph is NULL");
    if (g->n_nodes < 1 || g->n_nodes > max_nodes)
        return hs_fail(err, HS_ERR_INPUT, "circuit graph: %zu nodes; a figure takes 1..%zu", g->n_nodes,
                       max_nodes);
    if (g->n_edges > HS_VIZ_MAX_EDGES)
        return hs_fail(err, HS_ERR_INPUT,
                       "circuit graph: %zu edges; a figure draws up to %d (choose a smaller circuit)",
                       g->n_edges, HS_VIZ_MAX_EDGES);
    if (!g->row || !g->col || !g->ports || (g->n_edges && (!g->from || !g->to || !g->score || !g->port)))
        return hs_fail(err, HS_ERR_INPUT, "circuit graph: an array is NULL");
    hs_status s = vz_check_labels(g->names, g->n_nodes, "circuit graph nodes", err);
    if (s) return s;
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (g->row[i] < 0 || g->row[i] >= HS_VIZ_MAX_GRAPH_ROWS || g->col[i] < -1 ||
            g->col[i] >= HS_VIZ_MAX_GRAPH_COLS)
            return hs_fail(err, HS_ERR_INPUT, "circuit graph: node %s at row %d, column %d; rows take "
                           "0..%d, columns -1..%d", g->names[i], g->row[i], g->col[i],
                           HS_VIZ_MAX_GRAPH_ROWS - 1, HS_VIZ_MAX_GRAPH_COLS - 1);
        for (size_t j = 0; j < i; j++)
            if (g->row[j] == g->row[i] && (g->col[j] == g->col[i] || g->col[i] < 0 || g->col[j] < 0))
                return hs_fail(err, HS_ERR_INPUT, "circuit graph: nodes %s and %s share row %d (a "
                               "centred node is alone on its row)", g->names[j], g->names[i], g->row[i]);
    }
    for (size_t e = 0; e < g->n_edges; e++) {
        const int u = g->from[e], v = g->to[e];
        if (u < 0 || v < 0 || (size_t)u >= g->n_nodes || (size_t)v >= g->n_nodes)
            return hs_fail(err, HS_ERR_INPUT, "circuit graph: edge %zu names node %d of %zu", e,
                           u < 0 || (size_t)u >= g->n_nodes ? u : v, g->n_nodes);
        if (g->row[u] >= g->row[v])
            return hs_fail(err, HS_ERR_INPUT, "circuit graph: edge %s -> %s does not run upward (rows "
                           "%d -> %d)", g->names[u], g->names[v], g->row[u], g->row[v]);
        if (g->port[e] > HS_VIZ_PORT_V || (g->port[e] != HS_VIZ_PORT_WHOLE) != (g->ports[v] != 0))
            return hs_fail(err, HS_ERR_INPUT, "circuit graph: edge %s -> %s enters port %d; %s has %s",
                           g->names[u], g->names[v], (int)g->port[e], g->names[v],
                           g->ports[v] ? "q, k and v" : "one input");
        if (!isfinite(g->score[e]))
            return hs_fail(err, HS_ERR_NUMERIC, "circuit graph: edge %s -> %s has a score that is not "
                           "finite", g->names[u], g->names[v]);
    }
    return HS_OK;
}

/* In the circuit: flagged, or (no flags) touched by an edge; with flags, an
 * edge's ends are in it too. strong: [n_nodes]. */
static void circuit_nodes(const hs_viz_graph *g, unsigned char *strong)
{
    for (size_t i = 0; i < g->n_nodes; i++) strong[i] = g->in_circuit ? g->in_circuit[i] != 0 : 0;
    for (size_t e = 0; e < g->n_edges; e++) strong[g->from[e]] = strong[g->to[e]] = 1;
}

/* The largest |score| (1 when every score is 0). */
static double max_abs_score(const hs_viz_graph *g)
{
    double m = 0;
    for (size_t e = 0; e < g->n_edges; e++) m = fmax(m, fabs((double)g->score[e]));
    return m > 0 ? m : 1.0;
}

/* An edge's width in points: the documented linear scale. */
static double edge_pt(double abs_score, double maxabs)
{
    return HS_VIZ_EDGE_MIN_PT + (HS_VIZ_EDGE_MAX_PT - HS_VIZ_EDGE_MIN_PT) * abs_score / maxabs;
}

/* A score as the legend writes it: two significant digits. */
static void fmt_score(char *buf, size_t n, double v)
{
    snprintf(buf, n, "%.2g", v);
    vz_short_exp(buf);
    vz_minus_sign(buf, n);
}

typedef struct {
    const hs_viz_graph *g;
    const char *title;
} graph_args;

/* One legend entry: a line sample and its words. */
typedef struct {
    char text[64];
    double width_px;
    int dashed;
    unsigned char rgb[3];
} legend_item;

/* The plan: which nodes are the circuit's, the boxes, rows and columns. */
typedef struct {
    vz_ctx *c;
    const hs_viz_graph *g;
    int R, C;
    unsigned char *strong;    /* [n_nodes] in the circuit (drawn over the edges) */
    unsigned char *port_used; /* [n_nodes * 4] an edge ends at that port */
    char **shown;             /* [n_nodes] labels as shown (owned) */
    int *bx, *by, *bw, *bh;   /* [n_nodes] boxes, px */
    int colw;                 /* a column node's box width */
    int left, pitch, span;    /* the columns' left edge, pitch, total width */
    double maxabs;
    legend_item leg[4];
    int n_leg, sample;        /* legend entries, a sample line's length */
} graph_plan;

static void plan_free(graph_plan *p)
{
    free(p->strong);
    free(p->port_used);
    vz_free_labels(p->shown, p->shown ? p->g->n_nodes : 0);
    free(p->bx);
    free(p->by);
    free(p->bw);
    free(p->bh);
}

/* The legend's entries: the signs present, the weakest and strongest |score|. */
static void plan_legend(graph_plan *p)
{
    const hs_viz_graph *g = p->g;
    const double k = p->c->o.dpi / 72.0;
    int pos = 0, neg = 0;
    double lo = INFINITY, hi = 0;
    for (size_t e = 0; e < g->n_edges; e++) {
        pos |= g->score[e] >= 0;
        neg |= g->score[e] < 0;
        lo = fmin(lo, fabs((double)g->score[e]));
        hi = fmax(hi, fabs((double)g->score[e]));
    }
    legend_item *it = p->leg;
    const double mid = 0.5 * (HS_VIZ_EDGE_MIN_PT + HS_VIZ_EDGE_MAX_PT) * k;
    if (pos) {
        it[p->n_leg] = (legend_item){"score \xe2\x89\xa5 0", mid, 0, {0}};
        sign_rgb(1, it[p->n_leg++].rgb);
    }
    if (neg) {
        it[p->n_leg] = (legend_item){"score < 0", mid, 1, {0}};
        sign_rgb(-1, it[p->n_leg++].rgb);
    }
    char a[32];
    if (g->n_edges && hi > lo) {
        fmt_score(a, sizeof a, lo);
        it[p->n_leg] = (legend_item){"", edge_pt(lo, p->maxabs) * k, 0, {0}};
        snprintf(it[p->n_leg].text, sizeof it[p->n_leg].text, "|score| %s", a);
        memcpy(it[p->n_leg++].rgb, SAMPLE_RGB, 3);
    }
    if (g->n_edges) {
        fmt_score(a, sizeof a, hi);
        it[p->n_leg] = (legend_item){"", edge_pt(hi, p->maxabs) * k, 0, {0}};
        snprintf(it[p->n_leg].text, sizeof it[p->n_leg].text, "|score| %s", a);
        memcpy(it[p->n_leg++].rgb, SAMPLE_RGB, 3);
    }
}

/* Sizes: labels, box widths, the column pitch for the target width (cramped
 * when the labels need more), the legend. HS_ERR_NOMEM or HS_OK. */
static hs_status plan_sizes(graph_plan *p, int target, vz_fit *fit)
{
    vz_ctx *c = p->c;
    const hs_viz_graph *g = p->g;
    const size_t n = g->n_nodes;
    p->strong = calloc(n, 1);
    p->port_used = calloc(n * 4, 1);
    p->shown = calloc(n, sizeof *p->shown);
    p->bx = calloc(n, sizeof *p->bx), p->by = calloc(n, sizeof *p->by);
    p->bw = calloc(n, sizeof *p->bw), p->bh = calloc(n, sizeof *p->bh);
    if (!p->strong || !p->port_used || !p->shown || !p->bx || !p->by || !p->bw || !p->bh)
        return HS_ERR_NOMEM;
    circuit_nodes(g, p->strong);
    for (size_t e = 0; e < g->n_edges; e++) p->port_used[(size_t)g->to[e] * 4 + g->port[e]] = 1;
    p->maxabs = max_abs_score(g);
    int maxw;
    if (vz_prepare_labels(c, g->names, n, p->shown, &maxw)) return HS_ERR_NOMEM;
    const int pad = c->pad, m = c->margin;
    const int qkv = vz_text_len(c, "q", c->apx) + vz_text_len(c, "k", c->apx) +
                    vz_text_len(c, "v", c->apx) + 2 * pad;
    p->colw = 0;
    int centred = 0;
    p->R = 1, p->C = 1;
    for (size_t i = 0; i < n; i++) {
        const int w = vz_text_len(c, p->shown[i], c->fpx) + 2 * pad;
        p->R = vz_imax(p->R, g->row[i] + 1);
        if (g->col[i] < 0) {
            centred = vz_imax(centred, w);
            continue;
        }
        p->C = vz_imax(p->C, g->col[i] + 1);
        p->colw = vz_imax(p->colw, vz_imax(w, g->ports[i] ? qkv : 0));
    }
    if (p->colw == 0) p->colw = centred; /* only centred nodes */
    const int gap = vz_imax(2 * pad, c->lh / 2);
    p->pitch = (target - 2 * m) / p->C;
    if (p->pitch < p->colw + gap) {
        p->pitch = p->colw + gap;
        fit->cramped = 1;
    }
    p->span = p->pitch * p->C;
    if (centred > p->span) fit->cramped = 1;
    p->left = m;
    plan_legend(p);
    p->sample = (int)lround(0.25 * c->o.dpi);
    for (int k = 0; k < p->n_leg; k++)
        if (p->sample + pad + vz_text_len(c, p->leg[k].text, c->fpx) > vz_imax(p->span, target - 2 * m))
            fit->cramped = 1;
    return HS_OK;
}

/* Boxes: rows from the top (row R-1) down under the title block, y0 px;
 * each row as tall as its tallest box (a head holds its name and "q k v").
 * Returns the bottom of row 0. */
static int plan_boxes(graph_plan *p, int y0)
{
    vz_ctx *c = p->c;
    const hs_viz_graph *g = p->g;
    const int pad = c->pad, h1 = c->lh + pad, h2 = c->lh + c->alh + pad;
    const int vgap = vz_imax((int)lround(1.2 * c->lh), (int)lround(0.1 * c->o.dpi));
    int y = y0;
    for (int r = p->R - 1; r >= 0; r--) {
        int rh = 0;
        for (size_t i = 0; i < g->n_nodes; i++)
            if (g->row[i] == r) rh = vz_imax(rh, g->ports[i] ? h2 : h1);
        if (rh == 0) rh = h1;
        for (size_t i = 0; i < g->n_nodes; i++) {
            if (g->row[i] != r) continue;
            const int w = g->col[i] < 0 ? vz_imax(p->colw, vz_text_len(c, p->shown[i], c->fpx) + 2 * pad)
                                        : p->colw;
            const int cx = g->col[i] < 0 ? p->left + p->span / 2 : p->left + g->col[i] * p->pitch + p->pitch / 2;
            p->bw[i] = w;
            p->bh[i] = g->ports[i] ? h2 : h1;
            p->bx[i] = cx - w / 2;
            p->by[i] = y + (rh - p->bh[i]) / 2;
        }
        y += rh + (r > 0 ? vgap : 0);
    }
    return y;
}

/* Node i in its group: the box (filled and framed), its name, and in the
 * circuit a head's q k v letters (black where an edge ends). */
static hs_status add_node(graph_plan *p, size_t i)
{
    vz_ctx *c = p->c;
    const hs_viz_graph *g = p->g;
    const int strong = p->strong[i], pad = c->pad;
    const unsigned char *ink = strong ? VZ_BLACK : FAINT_TEXT;
    hs_status s = vz_begin_group(c, g->names[i]);
    if (!s) s = vz_add_rect(c, p->bx[i], p->by[i], p->bw[i], p->bh[i], strong ? BOX_FILL : VZ_WHITE);
    if (!s) s = vz_add_frame(c, p->bx[i], p->by[i], p->bw[i], p->bh[i], strong ? VZ_FRAME : FAINT_FRAME);
    const int w = vz_text_len(c, p->shown[i], c->fpx), cx = p->bx[i] + p->bw[i] / 2;
    if (!s)
        s = vz_add_text(c, p->shown[i], c->fpx, 0, cx - w / 2, p->by[i] + pad / 2, VZ_A_MIDDLE, VZ_T_LABEL,
                        ink);
    for (int k = 1; k <= 3 && !s && g->ports[i] && strong; k++) {
        const int lw = vz_text_len(c, PORT_NAME[k], c->apx);
        const int px = p->bx[i] + p->bw[i] * (2 * k - 1) / 6;
        s = vz_add_text(c, PORT_NAME[k], c->apx, 0, px - lw / 2, p->by[i] + pad / 2 + c->lh, VZ_A_MIDDLE,
                        VZ_T_LABEL, p->port_used[i * 4 + (size_t)k] ? VZ_BLACK : FAINT_TEXT);
    }
    return s;
}

/* Edge e in its group: a curve from its sender's top (upward) into its
 * receiver's port from below. */
static hs_status add_edge(graph_plan *p, size_t e)
{
    vz_ctx *c = p->c;
    const hs_viz_graph *g = p->g;
    const int u = g->from[e], v = g->to[e], port = g->port[e];
    char id[96];
    snprintf(id, sizeof id, "e-%s-%s%s%s", g->names[u], g->names[v], port ? "-" : "", PORT_NAME[port]);
    hs_status s = vz_begin_group(c, id);
    const double xs = p->bx[u] + p->bw[u] / 2.0, ys = p->by[u];
    const double xr = port == HS_VIZ_PORT_WHOLE ? p->bx[v] + p->bw[v] / 2.0
                                                : p->bx[v] + p->bw[v] * (2.0 * port - 1.0) / 6.0;
    const double yr = p->by[v] + p->bh[v], dy = ys - yr;
    /* the end rises into its port from below, however far it runs sideways
       (an MLP's edge to the next layer's q would otherwise lie along the box) */
    const double rise = fmax(0.5 * dy, fmin(0.35 * fabs(xr - xs), 2.0 * p->bh[v]));
    const double xy[8] = {xs, ys, xs, ys - 0.5 * dy, xr, yr + rise, xr, yr};
    const double k = c->o.dpi / 72.0, w = edge_pt(fabs((double)g->score[e]), p->maxabs) * k;
    unsigned char rgb[3];
    sign_rgb(g->score[e], rgb);
    const int neg = g->score[e] < 0;
    if (!s) s = vz_add_curve(c, xy, w, neg ? fmax(4.0 * w, 3.0 * k) : 0, fmax(2.0 * w, 1.5 * k), rgb);
    return s;
}

/* The legend under the graph from y: entries left to right, wrapping at the
 * columns' width. Returns its bottom. */
static int add_legend(graph_plan *p, int y, hs_status *st)
{
    vz_ctx *c = p->c;
    const int pad = c->pad, lh = c->lh;
    int x = p->left, bottom = y;
    *st = p->n_leg ? vz_begin_group(c, "legend") : HS_OK;
    for (int k = 0; k < p->n_leg && !*st; k++) {
        const legend_item *it = &p->leg[k];
        const int w = p->sample + pad + vz_text_len(c, it->text, c->fpx);
        if (x > p->left && x + w > p->left + p->span) x = p->left, y += lh + pad;
        const double my = y + lh / 2.0, xy[8] = {x, my, x + p->sample / 3.0, my, x + 2 * p->sample / 3.0,
                                                 my, x + p->sample, my};
        const double kk = c->o.dpi / 72.0;
        *st = vz_add_curve(c, xy, it->width_px, it->dashed ? fmax(4.0 * it->width_px, 3.0 * kk) : 0,
                           fmax(2.0 * it->width_px, 1.5 * kk), it->rgb);
        if (!*st)
            *st = vz_add_text(c, it->text, c->fpx, 0, x + p->sample + pad, y, VZ_A_START, VZ_T_LABEL,
                              VZ_BLACK);
        x += w + 3 * pad;
        bottom = y + lh;
    }
    return bottom;
}

/* Edge order: weakest first (drawn under the strong), then by index. */
typedef struct {
    double a;
    size_t i;
} edge_key;

static int cmp_edge(const void *x, const void *y)
{
    const edge_key *a = x, *b = y;
    if (a->a != b->a) return a->a < b->a ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* The nodes outside the circuit, the edges weakest first, the circuit's
 * nodes over them. HS_ERR_NOMEM or HS_OK. */
static hs_status add_body(graph_plan *p)
{
    const hs_viz_graph *g = p->g;
    hs_status s = HS_OK;
    for (size_t i = 0; i < g->n_nodes && !s; i++)
        if (!p->strong[i]) s = add_node(p, i);
    edge_key *ord = malloc((g->n_edges ? g->n_edges : 1) * sizeof *ord);
    if (!ord) return HS_ERR_NOMEM;
    for (size_t e = 0; e < g->n_edges; e++) ord[e] = (edge_key){fabs((double)g->score[e]), e};
    qsort(ord, g->n_edges, sizeof *ord, cmp_edge);
    for (size_t k = 0; k < g->n_edges && !s; k++) s = add_edge(p, ord[k].i);
    free(ord);
    for (size_t i = 0; i < g->n_nodes && !s; i++)
        if (p->strong[i]) s = add_node(p, i);
    return s;
}

static hs_status build_graph(hs_viz_figure **out, const void *args, const hs_viz_options *opt,
                             vz_fit *fit, hs_error *err)
{
    const graph_args *a = args;
    vz_ctx c;
    hs_status s = vz_ctx_init(&c, opt, err);
    if (s) return s;
    c.fit = fit;
    graph_plan p = {.c = &c, .g = a->g};
    const int m = c.margin, target = (int)lround(c.o.width_in * c.o.dpi) - fit->extra;
    int title_w = 0;
    const int title_h = vz_title_block(&c, a->title, &title_w);
    if (title_w + 2 * m > (int)lround(c.o.width_in * c.o.dpi)) fit->cramped = 1;
    s = plan_sizes(&p, target, fit);
    int bottom = 0;
    if (!s) bottom = plan_boxes(&p, m + title_h);
    if (!s) s = add_body(&p);
    if (!s && p.n_leg) bottom = add_legend(&p, bottom + 2 * c.pad, &s);
    size_t n_in = 0;
    for (size_t i = 0; !s && i < a->g->n_nodes; i++) n_in += p.strong[i];
    if (!s && !(c.f->desc = hs_strfmt("circuit graph: %zu of %zu nodes and %zu edges in the circuit; "
                                      "edges run upward into a head's q, k or v; width linear in "
                                      "|score|, red score >= 0, blue dashed score < 0",
                                      n_in, a->g->n_nodes, a->g->n_edges)))
        s = HS_ERR_NOMEM;
    if (!s) s = vz_finish_titled(&c, a->title, title_w, title_h, p.left + p.span, bottom, out, err);
    plan_free(&p);
    hs_viz_figure_destroy(c.f);
    if (s == HS_ERR_NOMEM) hs_fail(err, s, "out of memory laying out a figure");
    return s;
}

hs_status hs_viz_graph_figure(const hs_viz_graph *g, const char *title, const hs_viz_options *opt,
                              hs_viz_figure **out, hs_error *err)
{
    *out = NULL;
    hs_status s = check_graph(g, err);
    if (!s) s = vz_check_title(title, "title", err);
    if (s) return s;
    int C = 1;
    for (size_t i = 0; i < g->n_nodes; i++) C = vz_imax(C, g->col[i] + 1);
    const graph_args a = {g, title};
    return vz_fit_width(out, build_graph, &a, opt, C <= 6 ? HS_VIZ_COLUMN_IN : HS_VIZ_PAGE_IN,
                        "circuit graph", err);
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                     */

static cJSON *node_json(const hs_viz_graph *g, size_t i, int strong)
{
    cJSON *o = cJSON_CreateObject();
    if (o && cJSON_AddStringToObject(o, "name", g->names[i]) && cJSON_AddNumberToObject(o, "row", g->row[i]) &&
        cJSON_AddNumberToObject(o, "col", g->col[i]) && cJSON_AddBoolToObject(o, "ports", g->ports[i] != 0) &&
        cJSON_AddBoolToObject(o, "in_circuit", strong))
        return o;
    cJSON_Delete(o);
    return NULL;
}

static cJSON *edge_json(const hs_viz_graph *g, size_t e)
{
    cJSON *o = cJSON_CreateObject();
    const int port = g->port[e];
    cJSON *pj = port == HS_VIZ_PORT_WHOLE ? cJSON_CreateNull() : cJSON_CreateString(PORT_NAME[port]);
    if (o && pj && cJSON_AddStringToObject(o, "from", g->names[g->from[e]]) &&
        cJSON_AddStringToObject(o, "to", g->names[g->to[e]]) && cJSON_AddItemToObject(o, "port", pj)) {
        pj = NULL;
        if (cJSON_AddNumberToObject(o, "score", hs_f32_shortest(g->score[e]))) return o;
    }
    cJSON_Delete(pj);
    cJSON_Delete(o);
    return NULL;
}

hs_status hs_viz_graph_json(const hs_viz_graph *g, const char *title, cJSON **out, hs_error *err)
{
    *out = NULL;
    hs_status s = check_graph(g, err);
    if (!s) s = vz_check_title(title, "title", err);
    if (s) return s;
    unsigned char *strong = calloc(g->n_nodes, 1);
    cJSON *o = cJSON_CreateObject();
    cJSON *nodes = o ? cJSON_AddArrayToObject(o, "nodes") : NULL;
    int ok = strong && nodes && (!title || cJSON_AddStringToObject(o, "title", title));
    if (ok) circuit_nodes(g, strong);
    for (size_t i = 0; ok && i < g->n_nodes; i++) {
        cJSON *n = node_json(g, i, strong[i]);
        ok = n && cJSON_AddItemToArray(nodes, n);
        if (!ok) cJSON_Delete(n);
    }
    cJSON *edges = ok ? cJSON_AddArrayToObject(o, "edges") : NULL;
    ok = edges != NULL;
    for (size_t e = 0; ok && e < g->n_edges; e++) {
        cJSON *x = edge_json(g, e);
        ok = x && cJSON_AddItemToArray(edges, x);
        if (!ok) cJSON_Delete(x);
    }
    cJSON *w = ok ? cJSON_AddObjectToObject(o, "edge_width_pt") : NULL;
    ok = w && cJSON_AddNumberToObject(w, "min", HS_VIZ_EDGE_MIN_PT) &&
         cJSON_AddNumberToObject(w, "max", HS_VIZ_EDGE_MAX_PT) &&
         cJSON_AddNumberToObject(w, "max_abs_score", hs_f32_shortest((float)max_abs_score(g)));
    cJSON *col = ok ? cJSON_AddObjectToObject(o, "colours") : NULL;
    ok = col != NULL;
    for (int k = 0; ok && k < 2; k++) {
        unsigned char rgb[3];
        char hex[8];
        sign_rgb(k ? -1.0f : 1.0f, rgb);
        snprintf(hex, sizeof hex, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
        ok = cJSON_AddStringToObject(col, k ? "negative" : "positive", hex) != NULL;
    }
    free(strong);
    if (!ok) {
        cJSON_Delete(o);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    *out = o;
    return HS_OK;
}
