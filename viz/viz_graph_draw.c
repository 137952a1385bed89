/*
 * viz/viz_graph_draw.c -- the circuit graph's marks (viz_internal.h, "the
 * circuit graph"): node boxes (the circuit's filled and framed over the
 * edges, the rest faint under them) with a head's q k v letters (black
 * where an edge ends, grey where none does); edges as routed paths, width
 * linear in |score|, the diverging map's end of their sign (negative dashed
 * when both signs are drawn, for grey print), each ending in an arrowhead
 * at its receiver (edges run from the earlier component to the later); and
 * the legend explaining every one of them under the graph.
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
const char *const VZ_PORT_NAME[4] = {"", "q", "k", "v"};

void vz_graph_sign_rgb(float s, unsigned char rgb[3])
{
    hs_viz_cmap_rgb(HS_VIZ_CMAP_DIVERGING, s < 0 ? 0.0 : 1.0, rgb);
}

double vz_graph_edge_pt(double abs_score, double maxabs)
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

void vz_graph_plan_legend(vz_gplan *p)
{
    const hs_viz_graph *g = p->g;
    const double k = p->c->o.dpi / 72.0;
    int pos = 0, neg = 0, faint = 0, ports = 0;
    double lo = INFINITY, hi = 0;
    for (size_t e = 0; e < g->n_edges; e++) {
        pos |= g->score[e] >= 0;
        neg |= g->score[e] < 0;
        lo = fmin(lo, fabs((double)g->score[e]));
        hi = fmax(hi, fabs((double)g->score[e]));
    }
    for (size_t i = 0; i < g->n_nodes; i++) {
        faint |= !p->strong[i];
        ports |= p->strong[i] && g->ports[i];
    }
    p->mixed = pos && neg;
    vz_leg_item *it = p->leg;
    const double mid = 0.5 * (HS_VIZ_EDGE_MIN_PT + HS_VIZ_EDGE_MAX_PT) * k;
    if (pos) {
        it[p->n_leg] = (vz_leg_item){"score \xe2\x89\xa5 0", VZ_LEG_LINE, mid, 0, {0}};
        vz_graph_sign_rgb(1, it[p->n_leg++].rgb);
    }
    if (neg) {
        it[p->n_leg] = (vz_leg_item){"score < 0", VZ_LEG_LINE, mid, pos, {0}};
        vz_graph_sign_rgb(-1, it[p->n_leg++].rgb);
    }
    char a[32];
    if (g->n_edges && hi > lo) {
        fmt_score(a, sizeof a, lo);
        it[p->n_leg] = (vz_leg_item){"", VZ_LEG_LINE, vz_graph_edge_pt(lo, p->maxabs) * k, 0, {0}};
        snprintf(it[p->n_leg].text, sizeof it[p->n_leg].text, "|score| %s", a);
        memcpy(it[p->n_leg++].rgb, SAMPLE_RGB, 3);
    }
    if (g->n_edges) {
        fmt_score(a, sizeof a, hi);
        it[p->n_leg] = (vz_leg_item){"", VZ_LEG_LINE, vz_graph_edge_pt(hi, p->maxabs) * k, 0, {0}};
        snprintf(it[p->n_leg].text, sizeof it[p->n_leg].text, "|score| %s", a);
        memcpy(it[p->n_leg++].rgb, SAMPLE_RGB, 3);
    }
    if (ports) it[p->n_leg++] = (vz_leg_item){"a head's inputs (grey: no edge)", VZ_LEG_PORTS, 0, 0, {0}};
    if (faint) it[p->n_leg++] = (vz_leg_item){"not in the circuit", VZ_LEG_FAINT_BOX, 0, 0, {0}};
}

/* The q k v letters over [x, x + w) at y, as a head's box places them
 * (centred at w/6, w/2, 5w/6): black where used[k] (k = 1..3), else grey. */
static hs_status add_ports(vz_ctx *c, int x, int w, int y, const unsigned char *used)
{
    hs_status s = HS_OK;
    for (int k = 1; k <= 3 && !s; k++) {
        const int lw = vz_text_len(c, VZ_PORT_NAME[k], c->fpx);
        const int px = x + w * (2 * k - 1) / 6;
        s = vz_add_text(c, VZ_PORT_NAME[k], c->fpx, 0, px - lw / 2, y, VZ_A_MIDDLE, VZ_T_LABEL,
                        used[k] ? VZ_BLACK : FAINT_TEXT);
    }
    return s;
}

/* Node i in its group: the box (filled and framed), its name, and in the
 * circuit a head's q k v letters (black where an edge ends), all at the
 * figure's one label size. */
static hs_status add_node(vz_gplan *p, size_t i)
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
    if (!s && g->ports[i] && strong)
        s = add_ports(c, p->bx[i], p->bw[i], p->by[i] + pad / 2 + c->lh, &p->port_used[i * 4]);
    return s;
}

/* An arrowhead pointing up, its tip at (x, y), for an edge w px wide. */
static hs_status add_arrow_up(vz_ctx *c, double x, double y, double w, const unsigned char rgb[3])
{
    const double hw = vz_arrow_half(c, w), len = vz_arrow_len(c, w);
    const double pts[6] = {x, y, x + hw, y + len, x - hw, y + len};
    return vz_add_polygon(c, pts, 3, rgb);
}

/* An arrowhead pointing right, its tip at (x, y) (the legend's samples). */
static hs_status add_arrow_right(vz_ctx *c, double x, double y, double w, const unsigned char rgb[3])
{
    const double hw = vz_arrow_half(c, w), len = vz_arrow_len(c, w);
    const double pts[6] = {x, y, x - len, y - hw, x - len, y + hw};
    return vz_add_polygon(c, pts, 3, rgb);
}

/* Edge e in its group: a path from its sender's top (upward) into its
 * receiver's port from below, routed around the boxes (viz_graph_route.c),
 * its corners rounded within the gaps, its stroke ending inside the
 * arrowhead whose tip touches the port. */
static hs_status add_edge(vz_gplan *p, size_t e)
{
    vz_ctx *c = p->c;
    const hs_viz_graph *g = p->g;
    const int u = g->from[e], v = g->to[e], port = g->port[e];
    const int su = g->row[u], sv = g->row[v];
    char id[96];
    snprintf(id, sizeof id, "e-%s-%s%s%s", g->names[u], g->names[v], port ? "-" : "", VZ_PORT_NAME[port]);
    hs_status s = vz_begin_group(c, id);
    const double k = c->o.dpi / 72.0, w = vz_graph_edge_pt(fabs((double)g->score[e]), p->maxabs) * k;
    const double xs = p->xs[e], ys = p->by[u], xr = p->xr[e], yr = p->by[v] + p->bh[v];
    const double ye = yr + 0.6 * vz_arrow_len(c, w); /* where the stroke ends, inside the head */
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
    PT(xr, ye);
#undef PT
    /* a corner's radius: 0.06 in, within its gap (so the arc meets no box) */
    for (size_t i = 1; i + 1 < n; i++) {
        const double y = pts[2 * i + 1];
        int r = su; /* the gap the corner lies in */
        while (r + 1 < p->R && !(y >= p->rbot[r + 1] && y <= p->rtop[r])) r++;
        rad[i] = fmin(0.06 * c->o.dpi, fmin(y - p->rbot[r + 1], p->rtop[r] - y));
    }
    unsigned char rgb[3];
    vz_graph_sign_rgb(g->score[e], rgb);
    /* negative dashed when both signs are drawn (grey print tells them apart),
       a dash at most a quarter of the path so every dashed edge shows gaps */
    double len = 0;
    for (size_t i = 1; i < n; i++) len += hypot(pts[2 * i] - pts[2 * i - 2], pts[2 * i + 1] - pts[2 * i - 1]);
    const double on = fmin(fmax(4.0 * w, 3.0 * k), 0.25 * len), off = fmin(fmax(2.0 * w, 1.5 * k), 0.5 * on);
    const int dashed = g->score[e] < 0 && p->mixed;
    if (!s) s = vz_add_path(c, pts, n, rad, w, dashed ? on : 0, off, rgb);
    if (!s) s = add_arrow_up(c, xr, yr, w, rgb);
    return s;
}

int vz_graph_add_legend(vz_gplan *p, int y, hs_status *st)
{
    vz_ctx *c = p->c;
    const int pad = c->pad, lh = c->lh;
    const double kk = c->o.dpi / 72.0;
    static const unsigned char USED[4] = {0, 1, 0, 0}; /* the sample: q used, k and v not */
    int x = p->left, bottom = y;
    *st = p->n_leg ? vz_begin_group(c, "legend") : HS_OK;
    for (int k = 0; k < p->n_leg && !*st; k++) {
        const vz_leg_item *it = &p->leg[k];
        const int w = p->sample + pad + vz_text_len(c, it->text, c->fpx);
        if (x > p->left && x + w > p->left + p->span) x = p->left, y += lh + pad;
        if (it->kind == VZ_LEG_LINE) {
            /* the line up to its arrowhead, as an edge ends */
            const double my = y + lh / 2.0, tip = x + p->sample, end = tip - 0.6 * vz_arrow_len(c, it->width_px);
            const double xy[8] = {x, my, x + (end - x) / 3.0, my, x + 2 * (end - x) / 3.0, my, end, my};
            *st = vz_add_curve(c, xy, it->width_px, it->dashed ? fmax(4.0 * it->width_px, 3.0 * kk) : 0,
                               fmax(2.0 * it->width_px, 1.5 * kk), it->rgb);
            if (!*st) *st = add_arrow_right(c, tip, my, it->width_px, it->rgb);
        } else if (it->kind == VZ_LEG_FAINT_BOX) {
            const int bh = lh - pad / 2;
            *st = vz_add_rect(c, x, y + (lh - bh) / 2, p->sample, bh, VZ_WHITE);
            if (!*st) *st = vz_add_frame(c, x, y + (lh - bh) / 2, p->sample, bh, FAINT_FRAME);
        } else {
            *st = add_ports(c, x, p->sample, y, USED);
        }
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

hs_status vz_graph_add_body(vz_gplan *p)
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
