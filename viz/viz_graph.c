/*
 * viz/viz_graph.c -- the circuit graph (viz.h, "The circuit graph"): nodes
 * as labelled boxes on rows (bottom to top) and columns, the nodes outside
 * the circuit faint under the edges, the circuit's over them; edges as
 * paths from a sender's top to an arrowhead at its receiver's port (a
 * head's q, k or v under its letter), width linear in |score|, colour the
 * diverging map's end of its sign (negative dashed, for grey print); a
 * legend under the graph; the width promise through vz_fit_width. And the
 * graph's JSON. This file plans (checks, sizes, rows, wrapping) over
 * viz_graph_route.c (the routes) and viz_graph_draw.c (the marks).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viz/viz_internal.h"

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

typedef struct {
    const hs_viz_graph *g;
    const char *title;
} graph_args;

static void plan_free(vz_gplan *p)
{
    free(p->strong);
    free(p->port_used);
    vz_free_labels(p->shown, p->shown ? p->g->n_nodes : 0);
    free(p->bx);
    free(p->by);
    free(p->bw);
    free(p->bh);
    free(p->rtop);
    free(p->rbot);
    free(p->gap_h);
    free(p->chan);
    free(p->y1);
    free(p->y2);
    free(p->xc);
    free(p->xs);
    free(p->xr);
}

/* Sizes: labels, box widths, the column pitch for the target width (cramped
 * when the labels need more), the legend. HS_ERR_NOMEM or HS_OK. */
static hs_status plan_sizes(vz_gplan *p, int target, vz_fit *fit)
{
    vz_ctx *c = p->c;
    const hs_viz_graph *g = p->g;
    const size_t n = g->n_nodes;
    p->strong = calloc(n, 1);
    p->port_used = calloc(n * 4, 1);
    p->shown = calloc(n, sizeof *p->shown);
    p->bx = calloc(n, sizeof *p->bx), p->by = calloc(n, sizeof *p->by);
    p->bw = calloc(n, sizeof *p->bw), p->bh = calloc(n, sizeof *p->bh);
    const size_t ne = g->n_edges ? g->n_edges : 1;
    p->rtop = calloc(VZ_GRAPH_ROWS_DRAWN, sizeof *p->rtop);
    p->rbot = calloc(VZ_GRAPH_ROWS_DRAWN, sizeof *p->rbot);
    p->gap_h = calloc(VZ_GRAPH_ROWS_DRAWN, sizeof *p->gap_h);
    p->chan = calloc(ne, sizeof *p->chan);
    p->y1 = calloc(ne, sizeof *p->y1), p->y2 = calloc(ne, sizeof *p->y2);
    p->xc = calloc(ne, sizeof *p->xc);
    p->xs = calloc(ne, sizeof *p->xs), p->xr = calloc(ne, sizeof *p->xr);
    if (!p->strong || !p->port_used || !p->shown || !p->bx || !p->by || !p->bw || !p->bh ||
        !p->rtop || !p->rbot || !p->gap_h || !p->chan || !p->y1 || !p->y2 || !p->xc || !p->xs ||
        !p->xr)
        return HS_ERR_NOMEM;
    circuit_nodes(g, p->strong);
    for (size_t e = 0; e < g->n_edges; e++) p->port_used[(size_t)g->to[e] * 4 + g->port[e]] = 1;
    p->maxabs = max_abs_score(g);
    int maxw;
    if (vz_prepare_labels(c, g->names, n, p->shown, &maxw)) return HS_ERR_NOMEM;
    const int pad = c->pad, m = c->margin;
    const int qkv = vz_text_len(c, "q", c->fpx) + vz_text_len(c, "k", c->fpx) +
                    vz_text_len(c, "v", c->fpx) + 2 * pad;
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
    vz_graph_plan_legend(p);
    /* a sample: 0.25 in, or the q k v letters with a space between each */
    p->sample = vz_imax((int)lround(0.25 * c->o.dpi), (int)lround(1.6 * (qkv - 2 * pad)));
    for (int k = 0; k < p->n_leg; k++)
        if (p->sample + pad + vz_text_len(c, p->leg[k].text, c->fpx) > vz_imax(p->span, target - 2 * m))
            fit->cramped = 1;
    return HS_OK;
}

/* The least gap between two rows, px. */
static int base_gap(const vz_ctx *c)
{
    return vz_imax((int)lround(1.2 * c->lh), (int)lround(0.1 * c->o.dpi));
}

/* Boxes: rows from the top (row R-1) down under the title block, y0 px;
 * each row as tall as its tallest box (a head holds its name and "q k v"),
 * the gap above row r gap_h[r] high. Returns the bottom of row 0. */
static int plan_boxes(vz_gplan *p, int y0)
{
    vz_ctx *c = p->c;
    const hs_viz_graph *g = p->g;
    const int pad = c->pad, h1 = c->lh + pad, h2 = 2 * c->lh + pad;
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
        p->rtop[r] = y;
        p->rbot[r] = y + rh;
        y += rh + (r > 0 ? p->gap_h[r - 1] : 0);
    }
    return y;
}

/* g's nodes with each row of more than per nodes wrapped onto rows of per:
 * its j-th node from the left on the row's (j / per)-th row from the bottom,
 * at column j % per; a row of n <= per nodes stays one row, its columns
 * kept but pulled left of per (an MLP in column 12 lands in the last
 * column), a centred node alone on its row as before. Rows stay in order,
 * so every edge still runs upward (no edge joins two nodes of one row).
 * row, col: [n_nodes]; at most VZ_GRAPH_MAX_WRAP rows a row when per >= ceil(the
 * most nodes of a row / VZ_GRAPH_MAX_WRAP). */
static void wrap_rows(const hs_viz_graph *g, int per, int *row, int *col)
{
    int R = 0, base = 0;
    for (size_t i = 0; i < g->n_nodes; i++) R = vz_imax(R, g->row[i] + 1);
    for (int r = 0; r < R; r++) {
        int n = 0, sub = 1;
        for (size_t i = 0; i < g->n_nodes; i++) n += g->row[i] == r;
        for (size_t i = 0; i < g->n_nodes; i++) {
            if (g->row[i] != r) continue;
            int j = 0; /* nodes of the row left of i (columns are distinct on a row) */
            for (size_t k = 0; k < g->n_nodes; k++) j += g->row[k] == r && g->col[k] < g->col[i];
            if (g->col[i] < 0) {
                row[i] = base, col[i] = -1;
            } else if (n <= per) {
                row[i] = base, col[i] = vz_imin(g->col[i], per - (n - j));
            } else {
                row[i] = base + j / per, col[i] = j % per;
                sub = vz_imax(sub, j / per + 1);
            }
        }
        base += sub;
    }
}

/* The most nodes on one row of g. */
static int widest_row(const hs_viz_graph *g)
{
    int most = 1;
    for (size_t i = 0; i < g->n_nodes; i++) {
        int n = 0;
        for (size_t k = 0; k < g->n_nodes; k++) n += g->row[k] == g->row[i];
        most = vz_imax(most, n);
    }
    return most;
}

static hs_status build_graph(hs_viz_figure **out, const void *args, const hs_viz_options *opt,
                             vz_fit *fit, hs_error *err)
{
    const graph_args *a = args;
    vz_ctx c;
    hs_status s = vz_ctx_init(&c, opt, err);
    if (s) return s;
    c.fit = fit;
    vz_gplan p = {.c = &c, .g = a->g};
    const int m = c.margin, target = (int)lround(c.o.width_in * c.o.dpi) - fit->extra;
    int title_w = 0;
    const int title_h = vz_title_block(&c, a->title, &title_w);
    if (title_w + 2 * m > (int)lround(c.o.width_in * c.o.dpi)) fit->cramped = 1;
    s = plan_sizes(&p, target, fit);
    int bottom = 0;
    if (!s) {
        /* the columns first (the routes' channels), then each gap as high as
           its tracks need (a track 0.04 in apart, at most two base gaps) */
        const double wmax = HS_VIZ_EDGE_MAX_PT * c.o.dpi / 72.0;
        int tracks[VZ_GRAPH_ROWS_DRAWN];
        const int g0 = base_gap(&c);
        for (int r = 0; r < p.R; r++) p.gap_h[r] = g0;
        plan_boxes(&p, m + title_h);
        vz_graph_centre_ends(&p);
        vz_graph_route_channels(&p, tracks);
        for (int r = 0; r + 1 < p.R; r++)
            p.gap_h[r] = vz_imin(2 * g0, vz_imax(g0, (int)lround((tracks[r] + 1) * 0.04 * c.o.dpi)));
        bottom = plan_boxes(&p, m + title_h);
        s = vz_graph_route_ends(&p);
        if (!s) s = vz_graph_route_lanes(&p, wmax);
    }
    if (!s) s = vz_graph_add_body(&p);
    if (!s && p.n_leg) bottom = vz_graph_add_legend(&p, bottom + 2 * c.pad, &s);
    size_t n_in = 0;
    for (size_t i = 0; !s && i < a->g->n_nodes; i++) n_in += p.strong[i];
    if (!s && !(c.f->desc = hs_strfmt("circuit graph: %zu of %zu nodes and %zu edges in the circuit; "
                                      "edges run upward (arrowheads at the later component) into a "
                                      "head's q, k or v; width linear in |score|, red score >= 0, "
                                      "blue%s score < 0; faint nodes and grey q, k, v letters: "
                                      "not in the circuit, no edge",
                                      n_in, a->g->n_nodes, a->g->n_edges, p.mixed ? " dashed" : "")))
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
    const double def_in = C <= 6 ? HS_VIZ_COLUMN_IN : HS_VIZ_PAGE_IN;
    const graph_args a = {g, title};
    s = vz_fit_width(out, build_graph, &a, opt, def_in, "circuit graph", err);
    const int N = widest_row(g);
    if (s != HS_ERR_INPUT || N < 2) return s;
    /* too wide (GPT-2's 12 heads and an MLP in a column): each row's columns
       wrapped onto 2, 3 or 4 rows, the first that fits; else the refusal of
       the graph as given (the width it needs) */
    int *row = malloc(g->n_nodes * sizeof *row), *col = malloc(g->n_nodes * sizeof *col);
    if (!row || !col) {
        free(row);
        free(col);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    hs_error e2 = {0};
    hs_status s2 = HS_ERR_INPUT;
    for (int k = 2, last = N; k <= VZ_GRAPH_MAX_WRAP && s2 == HS_ERR_INPUT; k++) {
        const int per = (N + k - 1) / k;
        if (per == last) continue;
        last = per;
        hs_viz_graph w = *g;
        wrap_rows(g, per, row, col);
        w.row = row;
        w.col = col;
        const graph_args aw = {&w, title};
        s2 = vz_fit_width(out, build_graph, &aw, opt, def_in, "circuit graph", &e2);
    }
    free(row);
    free(col);
    if (s2 == HS_ERR_INPUT) return s; /* err: the graph as given */
    if (s2 != HS_OK && err) *err = e2;
    return s2;
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
    cJSON *pj = port == HS_VIZ_PORT_WHOLE ? cJSON_CreateNull() : cJSON_CreateString(VZ_PORT_NAME[port]);
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
        vz_graph_sign_rgb(k ? -1.0f : 1.0f, rgb);
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
