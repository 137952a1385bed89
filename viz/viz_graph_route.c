/*
 * viz/viz_graph_route.c -- the circuit graph's edge routes (viz_internal.h,
 * "the circuit graph"): from the plan's boxes, where every edge leaves its
 * sender, enters its receiver, runs sideways and climbs, so no edge crosses
 * a box but its own two.
 */
#include <math.h>
#include <stdlib.h>

#include "viz/viz_internal.h"

/* ---- routing: edges never cross a box but their own two ----
 * An edge leaves its sender's top upward into the gap above the sender's
 * row, runs sideways there on a track of its own, and rises into its
 * receiver's port from the gap under the receiver's row; when it skips
 * rows, it climbs between them in a channel, a column boundary (free of
 * the column boxes), on a lane of its own: the boundary free of every box
 * on the rows it passes that is nearest its two ends. */

/* The x of an edge's ends (p->xs, p->xr; before route_ends: its sender's
 * top centre, its receiver's port or bottom centre). */
static double edge_xs(const vz_gplan *p, size_t e) { return p->xs[e]; }

static double edge_xr(const vz_gplan *p, size_t e) { return p->xr[e]; }

void vz_graph_centre_ends(vz_gplan *p)
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
static int chan_free(const vz_gplan *p, int j, int lo, int hi)
{
    const double x = p->left + (double)j * p->pitch, hw = (p->pitch - p->colw) / 2.0;
    for (size_t i = 0; i < p->g->n_nodes; i++)
        if (p->g->row[i] >= lo && p->g->row[i] <= hi && p->bx[i] < x + hw && x - hw < p->bx[i] + p->bw[i])
            return 0;
    return 1;
}

/* The channel of every edge that skips rows (-1: none, or no boundary is
 * free: it climbs left of every box), and the tracks each gap needs. */
void vz_graph_route_channels(vz_gplan *p, int *tracks)
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

/* Spreads the edges leaving each node over its top, and those entering a
 * node of one input over its bottom, in the order of where they go (come
 * from) sideways, so they part at the box rather than share a line. */
hs_status vz_graph_route_ends(vz_gplan *p)
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
 * over its height below where strokes end in arrowheads, the climbs in one channel
 * over its width (lines kept half their widest width off the boxes).
 * HS_ERR_NOMEM or HS_OK. */
hs_status vz_graph_route_lanes(vz_gplan *p, double wmax)
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
        /* the runs keep clear of the row above where an edge's stroke ends
           inside its arrowhead (0.6 of the widest head's length): every run
           in the gap may rise into a receiver there; a head longer than the
           rise lies over the run's rounded corner (a track is 0.04 in, a
           head 0.04..0.06 in) */
        const double top = p->rbot[r + 1] + 0.6 * vz_arrow_len(p->c, wmax) + 1, h = p->rtop[r] - top;
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
