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
/* Rows a figure may draw: a graph's rows, each wrapped onto at most
 * MAX_WRAP rows when its columns are too many for the width (wrap_rows). */
#define MAX_WRAP 4
#define ROWS_DRAWN (MAX_WRAP * HS_VIZ_MAX_GRAPH_ROWS)

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
    int *rtop, *rbot;         /* [R] each row's band (canvas y, top down) */
    int *gap_h;               /* [R] the gap's height above row r (r < R - 1), px */
    int *chan;                /* [n_edges] the column boundary an edge climbs in, -1 none */
    double *y1, *y2, *xc;     /* [n_edges] its tracks: leaving, arriving (y); climbing (x) */
    double *xs, *xr;          /* [n_edges] where it leaves its sender and enters its receiver */
    double maxabs;
    int mixed;                /* edges of both signs are drawn: the negative ones dashed */
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
    p->mixed = pos && neg;
    legend_item *it = p->leg;
    const double mid = 0.5 * (HS_VIZ_EDGE_MIN_PT + HS_VIZ_EDGE_MAX_PT) * k;
    if (pos) {
        it[p->n_leg] = (legend_item){"score \xe2\x89\xa5 0", mid, 0, {0}};
        sign_rgb(1, it[p->n_leg++].rgb);
    }
    if (neg) {
        it[p->n_leg] = (legend_item){"score < 0", mid, pos, {0}};
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
    const size_t ne = g->n_edges ? g->n_edges : 1;
    p->rtop = calloc(ROWS_DRAWN, sizeof *p->rtop);
    p->rbot = calloc(ROWS_DRAWN, sizeof *p->rbot);
    p->gap_h = calloc(ROWS_DRAWN, sizeof *p->gap_h);
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

/* The least gap between two rows, px. */
static int base_gap(const vz_ctx *c)
{
    return vz_imax((int)lround(1.2 * c->lh), (int)lround(0.1 * c->o.dpi));
}

/* Boxes: rows from the top (row R-1) down under the title block, y0 px;
 * each row as tall as its tallest box (a head holds its name and "q k v"),
 * the gap above row r gap_h[r] high. Returns the bottom of row 0. */
static int plan_boxes(graph_plan *p, int y0)
{
    vz_ctx *c = p->c;
    const hs_viz_graph *g = p->g;
    const int pad = c->pad, h1 = c->lh + pad, h2 = c->lh + c->alh + pad;
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

/* ---- routing: edges never cross a box but their own two ----
 * An edge leaves its sender's top upward into the gap above the sender's
 * row, runs sideways there on a track of its own, and rises into its
 * receiver's port from the gap under the receiver's row; when it skips
 * rows, it climbs between them in a channel, a column boundary (free of
 * the column boxes), on a lane of its own: the boundary free of every box
 * on the rows it passes that is nearest its two ends. */

/* The x of an edge's ends (p->xs, p->xr; before route_ends: its sender's
 * top centre, its receiver's port or bottom centre). */
static double edge_xs(const graph_plan *p, size_t e) { return p->xs[e]; }

static double edge_xr(const graph_plan *p, size_t e) { return p->xr[e]; }

static void centre_ends(graph_plan *p)
{
    const hs_viz_graph *g = p->g;
    for (size_t e = 0; e < g->n_edges; e++) {
        const int u = g->from[e], v = g->to[e], port = g->port[e];
        p->xs[e] = p->bx[u] + p->bw[u] / 2.0;
        p->xr[e] = port == HS_VIZ_PORT_WHOLE ? p->bx[v] + p->bw[v] / 2.0
                                             : p->bx[v] + p->bw[v] * (2.0 * port - 1.0) / 6.0;
    }
}

/* Column boundary j's free half-width and whether it is free of every box
 * on rows lo..hi. */
static int chan_free(const graph_plan *p, int j, int lo, int hi)
{
    const double x = p->left + (double)j * p->pitch, hw = (p->pitch - p->colw) / 2.0;
    for (size_t i = 0; i < p->g->n_nodes; i++)
        if (p->g->row[i] >= lo && p->g->row[i] <= hi && p->bx[i] < x + hw && x - hw < p->bx[i] + p->bw[i])
            return 0;
    return 1;
}

/* The channel of every edge that skips rows (-1: none, or no boundary is
 * free: it climbs left of every box), and the tracks each gap needs. */
static void route_channels(graph_plan *p, int *tracks)
{
    const hs_viz_graph *g = p->g;
    int load[HS_VIZ_MAX_GRAPH_COLS + 1] = {0};
    const double room = fmax(1, floor((p->pitch - p->colw - HS_VIZ_EDGE_MAX_PT * p->c->o.dpi / 72.0) /
                                      (0.05 * p->c->o.dpi)));
    for (int r = 0; r < p->R; r++) tracks[r] = 0;
    for (size_t e = 0; e < g->n_edges; e++) {
        const int su = g->row[g->from[e]], sv = g->row[g->to[e]];
        const double xs = edge_xs(p, e), xr = edge_xr(p, e);
        p->chan[e] = -1;
        if (sv == su + 1) {
            tracks[su] += fabs(xs - xr) >= 0.5;
            continue;
        }
        /* the nearest boundary with a lane to spare (0.05 in apart); a full
           one costs a column's pitch per climb over its room */
        double best = INFINITY;
        for (int j = 0; j <= p->C; j++) {
            const double x = p->left + (double)j * p->pitch;
            const double over = fmax(0, load[j] + 1 - room);
            const double cost = fabs(x - xs) + fabs(x - xr) + over * p->pitch;
            if (cost < best && chan_free(p, j, su + 1, sv - 1)) best = cost, p->chan[e] = j;
        }
        if (p->chan[e] >= 0) load[p->chan[e]]++;
        tracks[su]++;
        tracks[sv - 1]++;
    }
}

/* Spreads the edges leaving each node over its top, and those entering a
 * node of one input over its bottom, in the order of where they go (come
 * from) sideways, so they part at the box rather than share a line. */
static hs_status route_ends(graph_plan *p);

/* Lane order: by a key, then by index. */
typedef struct {
    double key;
    size_t e;
    int which; /* track: 1 leaving, 2 arriving */
} lane_key;

static int cmp_lane(const void *x, const void *y)
{
    const lane_key *a = x, *b = y;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    if (a->e != b->e) return a->e < b->e ? -1 : 1;
    return a->which - b->which;
}

static hs_status route_ends(graph_plan *p)
{
    const hs_viz_graph *g = p->g;
    lane_key *k = malloc((g->n_edges + 1) * sizeof *k);
    if (!k) return HS_ERR_NOMEM;
    for (size_t i = 0; i < g->n_nodes; i++) {
        for (int side = 0; side < 2; side++) {
            size_t n = 0;
            for (size_t e = 0; e < g->n_edges; e++) {
                const double xm = p->chan[e] >= 0 ? p->left + (double)p->chan[e] * p->pitch : -1;
                if (side == 0 && g->from[e] == (int)i)
                    k[n++] = (lane_key){xm >= 0 ? xm : p->xr[e], e, 0};
                else if (side == 1 && g->to[e] == (int)i && g->port[e] == HS_VIZ_PORT_WHOLE)
                    k[n++] = (lane_key){xm >= 0 ? xm : p->xs[e], e, 0};
            }
            if (n < 2) continue;
            qsort(k, n, sizeof *k, cmp_lane);
            for (size_t j = 0; j < n; j++) {
                const double x = p->bx[i] + p->bw[i] * (double)(j + 1) / (double)(n + 1);
                if (side == 0) p->xs[k[j].e] = x;
                else p->xr[k[j].e] = x;
            }
        }
    }
    free(k);
    return HS_OK;
}

/* Puts every edge's tracks and lane: the runs in one gap spread evenly
 * over its height, the climbs in one channel over its width (lines
 * kept half their widest width off the boxes). HS_ERR_NOMEM or HS_OK. */
static hs_status route_lanes(graph_plan *p, double wmax)
{
    const hs_viz_graph *g = p->g;
    lane_key *k = malloc((2 * g->n_edges + 1) * sizeof *k);
    if (!k) return HS_ERR_NOMEM;
    for (int r = 0; r + 1 < p->R; r++) {
        size_t n = 0;
        for (size_t e = 0; e < g->n_edges; e++) {
            const int su = g->row[g->from[e]], sv = g->row[g->to[e]];
            const double xs = edge_xs(p, e), xr = edge_xr(p, e);
            const double xm = p->chan[e] >= 0 ? p->left + (double)p->chan[e] * p->pitch : p->left;
            if (su == r && (sv > su + 1 || fabs(xs - xr) >= 0.5))
                k[n++] = (lane_key){sv > su + 1 ? xs + xm : xs + xr, e, 1};
            if (sv - 1 == r && sv > su + 1) k[n++] = (lane_key){xm + xr, e, 2};
        }
        qsort(k, n, sizeof *k, cmp_lane);
        const double top = p->rbot[r + 1], h = p->rtop[r] - top;
        for (size_t i = 0; i < n; i++) {
            const double y = top + h * (double)(i + 1) / (double)(n + 1);
            if (k[i].which == 1) p->y1[k[i].e] = y;
            else p->y2[k[i].e] = y;
        }
    }
    for (int j = -1; j <= p->C; j++) {
        size_t n = 0;
        for (size_t e = 0; e < g->n_edges; e++) {
            const int su = g->row[g->from[e]], sv = g->row[g->to[e]];
            if (sv > su + 1 && p->chan[e] == j) k[n++] = (lane_key){edge_xs(p, e) + edge_xr(p, e), e, 0};
        }
        qsort(k, n, sizeof *k, cmp_lane);
        double x0, w;
        if (j >= 0) {
            const double hw = fmax(0, (p->pitch - p->colw) / 2.0 - wmax / 2.0);
            x0 = p->left + (double)j * p->pitch - hw, w = 2 * hw;
        } else { /* no free boundary: left of every box */
            int lo = 1 << 30;
            for (size_t i = 0; i < g->n_nodes; i++) lo = vz_imin(lo, p->bx[i]);
            x0 = fmax(1, lo - p->c->pad - wmax), w = 0;
        }
        for (size_t i = 0; i < n; i++) p->xc[k[i].e] = x0 + w * (double)(i + 1) / (double)(n + 1);
    }
    free(k);
    return HS_OK;
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

/* Edge e in its group: a path from its sender's top (upward) into its
 * receiver's port from below, routed around the boxes (above), its
 * corners rounded within the gaps. */
static hs_status add_edge(graph_plan *p, size_t e)
{
    vz_ctx *c = p->c;
    const hs_viz_graph *g = p->g;
    const int u = g->from[e], v = g->to[e], port = g->port[e];
    const int su = g->row[u], sv = g->row[v];
    char id[96];
    snprintf(id, sizeof id, "e-%s-%s%s%s", g->names[u], g->names[v], port ? "-" : "", PORT_NAME[port]);
    hs_status s = vz_begin_group(c, id);
    const double xs = edge_xs(p, e), ys = p->by[u], xr = edge_xr(p, e), yr = p->by[v] + p->bh[v];
    double pts[12], rad[6] = {0};
    size_t n = 0;
#define PT(x, y) (pts[2 * n] = (x), pts[2 * n + 1] = (y), n++)
    PT(xs, ys);
    if (sv > su + 1) {
        PT(xs, p->y1[e]);
        PT(p->xc[e], p->y1[e]);
        PT(p->xc[e], p->y2[e]);
        PT(xr, p->y2[e]);
    } else if (fabs(xs - xr) >= 0.5) {
        PT(xs, p->y1[e]);
        PT(xr, p->y1[e]);
    }
    PT(xr, yr);
#undef PT
    /* a corner's radius: 0.06 in, within its gap (so the arc meets no box) */
    for (size_t i = 1; i + 1 < n; i++) {
        const double y = pts[2 * i + 1];
        int r = su; /* the gap the corner lies in */
        while (r + 1 < p->R && !(y >= p->rbot[r + 1] && y <= p->rtop[r])) r++;
        rad[i] = fmin(0.06 * c->o.dpi, fmin(y - p->rbot[r + 1], p->rtop[r] - y));
    }
    const double k = c->o.dpi / 72.0, w = edge_pt(fabs((double)g->score[e]), p->maxabs) * k;
    unsigned char rgb[3];
    sign_rgb(g->score[e], rgb);
    /* negative dashed when both signs are drawn (grey print tells them apart),
       a dash at most a quarter of the path so every dashed edge shows gaps */
    double len = 0;
    for (size_t i = 1; i < n; i++) len += hypot(pts[2 * i] - pts[2 * i - 2], pts[2 * i + 1] - pts[2 * i - 1]);
    const double on = fmin(fmax(4.0 * w, 3.0 * k), 0.25 * len), off = fmin(fmax(2.0 * w, 1.5 * k), 0.5 * on);
    const int dashed = g->score[e] < 0 && p->mixed;
    if (!s) s = vz_add_path(c, pts, n, rad, w, dashed ? on : 0, off, rgb);
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

/* g's nodes with each row of more than per nodes wrapped onto rows of per:
 * its j-th node from the left on the row's (j / per)-th row from the bottom,
 * at column j % per; a row of n <= per nodes stays one row, its columns
 * kept but pulled left of per (an MLP in column 12 lands in the last
 * column), a centred node alone on its row as before. Rows stay in order,
 * so every edge still runs upward (no edge joins two nodes of one row).
 * row, col: [n_nodes]; at most MAX_WRAP rows a row when per >= ceil(the
 * most nodes of a row / MAX_WRAP). */
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
    graph_plan p = {.c = &c, .g = a->g};
    const int m = c.margin, target = (int)lround(c.o.width_in * c.o.dpi) - fit->extra;
    int title_w = 0;
    const int title_h = vz_title_block(&c, a->title, &title_w);
    if (title_w + 2 * m > (int)lround(c.o.width_in * c.o.dpi)) fit->cramped = 1;
    s = plan_sizes(&p, target, fit);
    int bottom = 0;
    if (!s) {
        /* the columns first (the routes' channels), then each gap as high as
           its tracks need (a track 0.04 in apart, at most two base gaps) */
        int tracks[ROWS_DRAWN];
        const int g0 = base_gap(&c);
        for (int r = 0; r < p.R; r++) p.gap_h[r] = g0;
        plan_boxes(&p, m + title_h);
        centre_ends(&p);
        route_channels(&p, tracks);
        for (int r = 0; r + 1 < p.R; r++)
            p.gap_h[r] = vz_imin(2 * g0, vz_imax(g0, (int)lround((tracks[r] + 1) * 0.04 * c.o.dpi)));
        bottom = plan_boxes(&p, m + title_h);
        s = route_ends(&p);
        if (!s) s = route_lanes(&p, HS_VIZ_EDGE_MAX_PT * c.o.dpi / 72.0);
    }
    if (!s) s = add_body(&p);
    if (!s && p.n_leg) bottom = add_legend(&p, bottom + 2 * c.pad, &s);
    size_t n_in = 0;
    for (size_t i = 0; !s && i < a->g->n_nodes; i++) n_in += p.strong[i];
    if (!s && !(c.f->desc = hs_strfmt("circuit graph: %zu of %zu nodes and %zu edges in the circuit; "
                                      "edges run upward into a head's q, k or v; width linear in "
                                      "|score|, red score >= 0, blue%s score < 0",
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
    for (int k = 2, last = N; k <= MAX_WRAP && s2 == HS_ERR_INPUT; k++) {
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
