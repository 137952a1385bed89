/*
 * discovery/acdc.c -- circuits from edge scores (top-n or a threshold on
 * |score|, or grown greedily from logits as EAP-IG's Graph.apply_greedy;
 * then dead ends pruned) and ACDC (Conmy et al. 2023, sec. 3,
 * Algorithm 1; ArthurConmy/Automatic-Circuit-Discovery
 * acdc/TLACDCExperiment.py `step`): receivers in reverse topological order,
 * each incoming edge tried removed, removed for good when the metric moves
 * less than tau (experiments.h, "Circuits from scores" and "ACDC").
 */
#include "discovery/discovery.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

hs_status hs_circuit_prune(const hs_graph *g, unsigned char *in_circuit, unsigned char *node_in, size_t *n_kept,
                           hs_error *err)
{
    const int N = g->n_nodes, logits = N - 1;
    unsigned char *fwd = calloc((size_t)N * 2, 1);
    if (fwd == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    unsigned char *bwd = fwd + N;
    fwd[0] = 1;
    /* receivers are in forward order and every sender comes before its receiver */
    for (int r = 0; r < g->n_receivers; r++)
        for (size_t e = g->recv_first_edge[r]; e < g->recv_first_edge[r] + (size_t)g->recv_n_edges[r]; e++)
            if (in_circuit[e] && fwd[g->edge_src[e]]) fwd[g->recv_node[r]] = 1;
    bwd[logits] = 1;
    for (int r = g->n_receivers - 1; r >= 0; r--) {
        if (!bwd[g->recv_node[r]]) continue;
        for (size_t e = g->recv_first_edge[r]; e < g->recv_first_edge[r] + (size_t)g->recv_n_edges[r]; e++)
            if (in_circuit[e]) bwd[g->edge_src[e]] = 1;
    }
    size_t kept = 0;
    if (node_in) memset(node_in, 0, (size_t)N);
    for (size_t e = 0; e < g->n_edges; e++) {
        const int u = g->edge_src[e], v = g->recv_node[g->edge_dst[e]];
        in_circuit[e] = in_circuit[e] && fwd[u] && bwd[v];
        if (in_circuit[e]) {
            kept++;
            if (node_in) node_in[u] = node_in[v] = 1;
        }
    }
    if (node_in) node_in[logits] = 1; /* EAP-IG's LogitNode is always in the graph */
    free(fwd);
    if (n_kept) *n_kept = kept;
    return HS_OK;
}

typedef struct {
    double a;
    size_t i;
} ranked;

static int by_abs_desc(const void *x, const void *y)
{
    const ranked *p = x, *q = y;
    if (p->a != q->a) return p->a > q->a ? -1 : 1;
    return p->i < q->i ? -1 : p->i > q->i;
}

hs_status hs_scores_finite(const hs_graph *g, const double *scores, hs_error *err)
{
    for (size_t e = 0; e < g->n_edges; e++)
        if (!isfinite(scores[e])) {
            char name[96];
            hs_graph_edge_name(g, e, name, sizeof name);
            return hs_fail(err, HS_ERR_NUMERIC, "the score of edge %s is not finite", name);
        }
    return HS_OK;
}

/* order <- the edges by key descending (|score|, or -score when signed), the
 * lower index first on ties. */
static hs_status rank_edges(const hs_graph *g, const double *scores, int is_signed, size_t *order, hs_error *err)
{
    hs_status st = hs_scores_finite(g, scores, err);
    if (st != HS_OK) return st;
    ranked *rk = malloc((g->n_edges ? g->n_edges : 1) * sizeof *rk);
    if (rk == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (size_t e = 0; e < g->n_edges; e++) rk[e] = (ranked){is_signed ? -scores[e] : fabs(scores[e]), e};
    qsort(rk, g->n_edges, sizeof *rk, by_abs_desc);
    for (size_t k = 0; k < g->n_edges; k++) order[k] = rk[k].i;
    free(rk);
    return HS_OK;
}

hs_status hs_edge_ranking(const hs_graph *g, const double *scores, size_t *order, hs_error *err)
{
    return rank_edges(g, scores, 0, order, err);
}

hs_status hs_circuit_select(const hs_graph *g, const double *scores, long top_n, double threshold,
                            unsigned char *in_circuit, size_t *n_kept, hs_error *err)
{
    if (top_n >= 0 && (size_t)top_n > g->n_edges)
        return hs_fail(err, HS_ERR_INPUT, "top %ld edges asked for, but the graph has %zu", top_n, g->n_edges);
    if (top_n < 0 && !(threshold >= 0))
        return hs_fail(err, HS_ERR_INPUT, "a circuit needs a top-n or a threshold >= 0");
    size_t *order = malloc((g->n_edges ? g->n_edges : 1) * sizeof *order);
    if (order == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    hs_status st = hs_edge_ranking(g, scores, order, err);
    if (st == HS_OK) {
        memset(in_circuit, 0, g->n_edges);
        for (size_t k = 0; k < g->n_edges; k++) {
            const size_t e = order[k];
            if (top_n >= 0 ? k < (size_t)top_n : fabs(scores[e]) >= threshold) in_circuit[e] = 1;
        }
        st = hs_circuit_prune(g, in_circuit, NULL, n_kept, err);
    }
    free(order);
    return st;
}

hs_status hs_circuit_keep_strongest(const hs_graph *g, const double *scores, unsigned char *in_circuit, size_t cap,
                                    size_t *n_kept, hs_error *err)
{
    size_t n = 0;
    for (size_t e = 0; e < g->n_edges; e++) n += in_circuit[e] != 0;
    if (n_kept) *n_kept = n < cap ? n : cap;
    if (n <= cap) return HS_OK;
    if (scores == NULL) {
        for (size_t e = 0, m = 0; e < g->n_edges; e++)
            if (in_circuit[e] && m++ >= cap) in_circuit[e] = 0;
        return HS_OK;
    }
    size_t *order = malloc(g->n_edges * sizeof *order);
    if (order == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    hs_status st = hs_edge_ranking(g, scores, order, err);
    for (size_t k = 0, m = 0; st == HS_OK && k < g->n_edges; k++)
        if (in_circuit[order[k]] && m++ >= cap) in_circuit[order[k]] = 0;
    free(order);
    return st;
}

const char *const hs_select_names[HS_SELECT_N] = {"topn", "greedy", "signed"};

int hs_select_parse(const char *s)
{
    for (int k = 0; k < HS_SELECT_N; k++)
        if (strcmp(s, hs_select_names[k]) == 0) return k;
    return -1;
}

/* Greedy's candidates: a binary max-heap of edge indices by |score|
 * descending, the lower index first on ties (hs_edge_ranking's order). */
typedef struct {
    size_t *e;
    size_t n;
    const double *a; /* [n_edges] |score| */
} edge_heap;

static int heap_before(const edge_heap *h, size_t x, size_t y)
{
    return h->a[x] != h->a[y] ? h->a[x] > h->a[y] : x < y;
}

static void heap_push(edge_heap *h, size_t e)
{
    size_t i = h->n++;
    while (i > 0 && heap_before(h, e, h->e[(i - 1) / 2])) {
        h->e[i] = h->e[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->e[i] = e;
}

static size_t heap_pop(edge_heap *h)
{
    const size_t top = h->e[0], last = h->e[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && heap_before(h, h->e[c + 1], h->e[c])) c++;
        if (!heap_before(h, h->e[c], last)) break;
        h->e[i] = h->e[c];
        i = c;
    }
    if (h->n > 0) h->e[i] = last;
    return top;
}

/* Node v joins the circuit: every edge into its receivers becomes a
 * candidate (a node's receivers are consecutive in canonical order). */
static void greedy_join(const hs_graph *g, const int *first_recv, int v, unsigned char *node_in, edge_heap *h)
{
    node_in[v] = 1;
    for (int r = first_recv[v]; r >= 0 && r < g->n_receivers && g->recv_node[r] == v; r++)
        for (size_t e = g->recv_first_edge[r]; e < g->recv_first_edge[r] + (size_t)g->recv_n_edges[r]; e++)
            heap_push(h, e);
}

/* order <- the edges in the order EAP-IG's apply_greedy takes them
 * (discovery.h, HS_SELECT_GREEDY); scores are finite. */
static hs_status greedy_order(const hs_graph *g, const double *scores, size_t *order, hs_error *err)
{
    const size_t E = g->n_edges;
    const int N = g->n_nodes;
    double *a = malloc((E ? E : 1) * sizeof *a);
    edge_heap h = {malloc((E ? E : 1) * sizeof *h.e), 0, a};
    int *first_recv = malloc((size_t)N * sizeof *first_recv);
    unsigned char *node_in = calloc((size_t)N, 1);
    if (!a || !h.e || !first_recv || !node_in) {
        free(a);
        free(h.e);
        free(first_recv);
        free(node_in);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    for (size_t e = 0; e < E; e++) a[e] = fabs(scores[e]);
    for (int v = 0; v < N; v++) first_recv[v] = -1;
    for (int r = g->n_receivers - 1; r >= 0; r--) first_recv[g->recv_node[r]] = r;
    greedy_join(g, first_recv, N - 1, node_in, &h); /* logits */
    size_t k = 0;
    while (h.n > 0) {
        const size_t e = heap_pop(&h);
        order[k++] = e;
        if (!node_in[g->edge_src[e]]) greedy_join(g, first_recv, g->edge_src[e], node_in, &h);
    }
    HS_ASSERT(k == E); /* every node sends into logits: every edge became a candidate once */
    free(a);
    free(h.e);
    free(first_recv);
    free(node_in);
    return HS_OK;
}

hs_status hs_edge_order(const hs_graph *g, const double *scores, hs_select_kind sel, size_t *order, hs_error *err)
{
    if (sel == HS_SELECT_TOPN) return hs_edge_ranking(g, scores, order, err);
    if (sel == HS_SELECT_SIGNED) return rank_edges(g, scores, 1, order, err);
    if (sel != HS_SELECT_GREEDY) return hs_fail(err, HS_ERR_INPUT, "unknown circuit selection %d", (int)sel);
    hs_status st = hs_scores_finite(g, scores, err);
    return st == HS_OK ? greedy_order(g, scores, order, err) : st;
}

hs_status hs_circuit_choose(const hs_graph *g, const double *scores, hs_select_kind sel, size_t n,
                            unsigned char *in_circuit, size_t *n_kept, hs_error *err)
{
    if (n > g->n_edges) return hs_fail(err, HS_ERR_INPUT, "%zu edges asked for, but the graph has %zu", n, g->n_edges);
    size_t *order = malloc((g->n_edges ? g->n_edges : 1) * sizeof *order);
    if (order == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    hs_status st = hs_edge_order(g, scores, sel, order, err);
    if (st == HS_OK) {
        memset(in_circuit, 0, g->n_edges);
        for (size_t k = 0; k < n; k++) in_circuit[order[k]] = 1;
        st = hs_circuit_prune(g, in_circuit, NULL, n_kept, err);
    }
    free(order);
    return st;
}

hs_status hs_acdc_order(const hs_graph *g, int headscope_order, size_t *order, hs_error *err)
{
    (void)err;
    size_t k = 0;
    if (headscope_order) { /* receivers in canonical order backwards, senders oldest first */
        for (int r = g->n_receivers - 1; r >= 0; r--)
            for (size_t e = g->recv_first_edge[r]; e < g->recv_first_edge[r] + (size_t)g->recv_n_edges[r]; e++)
                order[k++] = e;
        return HS_OK;
    }
    /* ACDC's reverse_topologically_sort_corr: logits; per layer from the top its MLP, every head's v
     * (heads H-1..0), then k, then q; each receiver's senders newest first, the input last */
    const int L = g->n_layers, H = g->n_heads, R = g->n_receivers;
    for (int step = 0; step < R; step++) {
        int r;
        if (step == 0) {
            r = R - 1; /* logits */
        } else {
            const int per = 3 * H + g->has_mlp, l = L - 1 - (step - 1) / per, i = (step - 1) % per;
            const int base = l * per; /* the layer's first receiver: head 0's q */
            if (g->has_mlp && i == 0) r = base + 3 * H;
            else {
                const int j = i - g->has_mlp, x = 2 - j / H, h = H - 1 - j % H; /* v, k, q; heads H-1..0 */
                r = base + 3 * h + x;
            }
        }
        for (size_t e = g->recv_first_edge[r] + (size_t)g->recv_n_edges[r]; e-- > g->recv_first_edge[r];)
            order[k++] = e;
    }
    HS_ASSERT(k == g->n_edges);
    return HS_OK;
}

/* Tries removing edge e from the circuit mask: one run; keeps the removal
 * when the metric moved less than tau (ACDC's rule: signed, or |change| with
 * abs_threshold). */
static hs_status acdc_try(hs_circeval *ce, double tau, int abs_thr, size_t e, unsigned char *mask, double *cur,
                          double *score, hs_acdc_stats *s, hs_error *err)
{
    const unsigned char *one[1] = {mask};
    double m_new;
    mask[e] = 0;
    hs_status st = hs_circeval_metrics(ce, 1, one, &m_new, err);
    if (st != HS_OK) return st;
    s->trials++;
    const double delta = m_new - *cur;
    *score = delta;
    /* ACDC minimises a loss: kl itself, -logit-diff / -prob-diff; its change must stay under tau */
    const double loss_up = hs_circeval_metric_kind(ce) == HS_METRIC_KL ? delta : -delta;
    const int remove = abs_thr ? fabs(delta) < tau : loss_up < tau;
    if (remove) *cur = m_new;
    else mask[e] = 1;
    return HS_OK;
}

hs_status hs_acdc_run(hs_circeval *ce, const hs_acdc_opts *o, unsigned char *in_circuit, double *scores,
                      hs_acdc_stats *stats, hs_error *err)
{
    const hs_graph *g = hs_circeval_graph(ce);
    const double tau = o->tau;
    memset(stats, 0, sizeof *stats);
    if (!(tau >= 0) || !isfinite(tau)) return hs_fail(err, HS_ERR_INPUT, "ACDC needs a threshold tau >= 0");
    const long f0 = hs_circeval_forwards(ce);
    size_t *n_out = calloc((size_t)g->n_nodes, sizeof *n_out); /* kept edges leaving each node */
    size_t *order = malloc((g->n_edges ? g->n_edges : 1) * sizeof *order);
    if (n_out == NULL || order == NULL) {
        free(n_out);
        free(order);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    hs_acdc_order(g, o->headscope_order, order, err);
    memset(in_circuit, 1, g->n_edges);
    for (size_t e = 0; e < g->n_edges; e++) {
        scores[e] = 0.0;
        n_out[g->edge_src[e]]++;
    }
    double cur = hs_circeval_full(ce);
    hs_status st = HS_OK;
    /* a node's receivers come after every receiver that reads it, in either order: its n_out is final */
    for (size_t k = 0; k < g->n_edges && st == HS_OK; k++) {
        const size_t e = order[k];
        const int v = g->recv_node[g->edge_dst[e]], dead = g->node_kind[v] != HS_NODE_LOGITS && n_out[v] == 0;
        if (dead) { /* nothing reads the node: its inputs change nothing (ACDC skips it) */
            in_circuit[e] = 0;
            stats->skipped++;
        } else {
            st = acdc_try(ce, tau, o->abs_threshold, e, in_circuit, &cur, &scores[e], stats, err);
        }
        if (st == HS_OK && !in_circuit[e]) n_out[g->edge_src[e]]--;
    }
    free(n_out);
    free(order);
    if (st != HS_OK) return st;
    stats->metric = cur;
    for (size_t e = 0; e < g->n_edges; e++) stats->kept += in_circuit[e];
    stats->forwards = hs_circeval_forwards(ce) - f0;
    return HS_OK;
}
