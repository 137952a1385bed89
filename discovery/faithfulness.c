/*
 * discovery/faithfulness.c -- a circuit judged by running it and against a
 * known circuit (experiments.h, "Faithfulness" and "Ground truth"): the
 * normalised faithfulness curve at MIB's sizes with CPR and CMD (MIB
 * MIB_circuit_track/evaluation.py evaluate_area_under_curve), ROC curves of
 * the score ranking for edges and nodes with the trapezoidal and ACDC's
 * pessimistic areas (acdc/acdc_graphics.py pessimistic_auc), and reading the
 * known circuit.
 */
#include "discovery/discovery.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const double hs_faith_fractions[HS_FAITH_N] = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0};

size_t hs_faith_top_n(double fraction, size_t n_edges)
{
    return (size_t)(fraction * (double)n_edges); /* MIB: int(pct * n_scored_items) */
}

static void curve_areas(hs_faith_curve *c)
{
    c->cpr = c->cmd = 0.0;
    for (int i = 1; i < HS_FAITH_N; i++) { /* points 1..HS_FAITH_N are MIB's sizes */
        const hs_faith_point *a = &c->pt[i], *b = &c->pt[i + 1];
        const double dx = b->fraction - a->fraction;
        c->cpr += dx * (a->faithfulness + b->faithfulness) / 2;
        c->cmd += dx * (fabs(1 - a->faithfulness) + fabs(1 - b->faithfulness)) / 2;
    }
}

void hs_faith_usable(double m_full, double m_empty, hs_metric_kind metric, int *usable, char *why, size_t cap)
{
    *usable = m_full != m_empty;
    if (*usable) why[0] = '\0';
    else
        snprintf(why, cap, "the clean and the ablated runs give the same mean %s (%.9g): faithfulness "
                 "(m(C) - m(empty)) / (m(M) - m(empty)) is 0 / 0", hs_metric_names[metric], m_full);
}

/* c not usable when its gap |m(M) - m(empty)| is small against the spread
 * of its m(C) (HS_FAITH_GAP_SPREAD; patch's hs_patch_usable rule): every
 * faithfulness NAN then, and why says the numbers. */
static void gap_check(hs_faith_curve *c, hs_metric_kind metric)
{
    if (!c->usable) return;
    double lo = fmin(c->m_full, c->m_empty), hi = fmax(c->m_full, c->m_empty);
    for (int k = 0; k <= HS_FAITH_N; k++) lo = fmin(lo, c->pt[k].metric), hi = fmax(hi, c->pt[k].metric);
    const double gap = fabs(c->m_full - c->m_empty);
    if (!(hi - lo > HS_FAITH_GAP_SPREAD * gap)) return;
    c->usable = 0;
    char mf[HS_FIXED_BUF], me[HS_FIXED_BUF];
    snprintf(c->why, sizeof c->why, "m(M) %s and m(empty) %s (mean %s) are too close: a gap of %.4f "
             "against a spread of %.4f in the curve's m(C) (over %g times the gap), so normalised "
             "faithfulness is noise divided by a small number; every m(C) is in the JSON",
             hs_fmt_fixed(mf, c->m_full, 4, 1), hs_fmt_fixed(me, c->m_empty, 4, 1), hs_metric_names[metric], gap,
             hi - lo, HS_FAITH_GAP_SPREAD);
    for (int k = 0; k <= HS_FAITH_N; k++) c->pt[k].faithfulness = NAN;
}

hs_status hs_faith_curve_run(hs_circeval *ce, const double *scores, hs_select_kind sel, hs_faith_curve *out,
                             hs_error *err)
{
    const hs_graph *g = hs_circeval_graph(ce);
    const size_t E = g->n_edges;
    memset(out, 0, sizeof *out);
    out->n_edges = E;
    out->m_full = hs_circeval_full(ce);
    out->m_empty = hs_circeval_empty(ce);
    out->selection = sel;
    hs_faith_usable(out->m_full, out->m_empty, hs_circeval_metric_kind(ce), &out->usable, out->why, sizeof out->why);
    size_t *order = malloc((E ? E : 1) * sizeof *order);
    unsigned char *mem = malloc((E ? E : 1) * HS_FAITH_N);
    hs_status st = order && mem ? hs_edge_order(g, scores, sel, order, err) : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    const unsigned char *masks[HS_FAITH_N];
    for (int k = 0; k < HS_FAITH_N && st == HS_OK; k++) {
        unsigned char *mk = mem + (size_t)k * E;
        hs_faith_point *p = &out->pt[k + 1];
        p->fraction = hs_faith_fractions[k];
        p->top_n = hs_faith_top_n(p->fraction, E);
        memset(mk, 0, E);
        for (size_t i = 0; i < p->top_n; i++) mk[order[i]] = 1;
        st = hs_circuit_prune(g, mk, NULL, &p->edges, err);
        masks[k] = mk;
    }
    /* each distinct circuit run once: sizes that round to the same top_n (the
       smallest fractions of a small graph are all the empty circuit) share a
       run, and the whole graph is m(M) itself (a run of the same code: the
       assertion below) */
    double m[HS_FAITH_N];
    const unsigned char *distinct[HS_FAITH_N];
    int same[HS_FAITH_N], n_distinct = 0, slot[HS_FAITH_N];
    for (int k = 0; k < HS_FAITH_N && st == HS_OK; k++) {
        same[k] = -1;
        for (int i = 0; i < k && same[k] < 0; i++)
            if (out->pt[i + 1].edges == out->pt[k + 1].edges && memcmp(masks[i], masks[k], E) == 0) same[k] = i;
        slot[k] = -1;
        if (same[k] < 0 && out->pt[k + 1].edges != E) {
            slot[k] = n_distinct;
            distinct[n_distinct++] = masks[k];
        }
    }
    double mt[HS_FAITH_N];
    if (st == HS_OK && n_distinct > 0) st = hs_circeval_metrics(ce, n_distinct, distinct, mt, err);
    for (int k = 0; k < HS_FAITH_N && st == HS_OK; k++)
        m[k] = same[k] >= 0 ? m[same[k]] : slot[k] >= 0 ? mt[slot[k]] : out->m_full;
    if (st == HS_OK) {
        out->pt[0] = (hs_faith_point){0, 0, 0.0, out->m_empty, hs_faithfulness(out->m_empty, out->m_full, out->m_empty)};
        for (int k = 0; k < HS_FAITH_N; k++) {
            out->pt[k + 1].metric = m[k];
            out->pt[k + 1].faithfulness = hs_faithfulness(m[k], out->m_full, out->m_empty);
        }
        gap_check(out, hs_circeval_metric_kind(ce));
        /* m(M) is the whole graph's point (not run again), m(empty) a run of the same code as every m(C): exact ends */
        HS_ASSERT(out->pt[HS_FAITH_N].edges == E && m[HS_FAITH_N - 1] == out->m_full);
        HS_ASSERT(!out->usable || (out->pt[0].faithfulness == 0.0 && out->pt[HS_FAITH_N].faithfulness == 1.0));
        if (out->usable) curve_areas(out);
        else out->cpr = out->cmd = NAN;
    }
    free(order);
    free(mem);
    return st;
}

cJSON *hs_faith_curve_json(const hs_faith_curve *c)
{
    cJSON *o = cJSON_CreateObject(), *pts = cJSON_CreateArray();
    int ok = o && pts && (unsigned)c->selection < HS_SELECT_N &&
             cJSON_AddStringToObject(o, "selection", hs_select_names[c->selection]) &&
             cJSON_AddItemToObject(o, "points", pts);
    if (!ok && pts && !(o && cJSON_GetObjectItem(o, "points"))) cJSON_Delete(pts);
    for (int k = 0; k <= HS_FAITH_N && ok; k++) {
        const hs_faith_point *p = &c->pt[k];
        cJSON *x = cJSON_CreateObject();
        ok = x && cJSON_AddItemToArray(pts, x) && cJSON_AddNumberToObject(x, "edges", (double)p->edges) &&
             cJSON_AddNumberToObject(x, "fraction", p->fraction) &&
             cJSON_AddItemToObject(x, "faithfulness", hs_json_num_or_null(p->faithfulness)) &&
             cJSON_AddNumberToObject(x, "top_n", (double)p->top_n) && cJSON_AddNumberToObject(x, "metric", p->metric);
    }
    ok = ok && cJSON_AddItemToObject(o, "cpr", hs_json_num_or_null(c->cpr)) &&
         cJSON_AddItemToObject(o, "cmd", hs_json_num_or_null(c->cmd)) && cJSON_AddBoolToObject(o, "usable", c->usable) &&
         (c->usable || cJSON_AddStringToObject(o, "why_not_usable", c->why)) &&
         cJSON_AddNumberToObject(o, "metric_full", c->m_full) && cJSON_AddNumberToObject(o, "metric_empty", c->m_empty) &&
         cJSON_AddNumberToObject(o, "n_edges", (double)c->n_edges) &&
         cJSON_AddStringToObject(o, "area", "trapezoids of f (cpr) and |1 - f| (cmd) over the fraction of edges asked "
                                            "for, 0.001 to 1 (MIB evaluation.py); the empty circuit (fraction 0) "
                                            "normalises f and is outside the area");
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* ------------------------------------------------------------------------ */
/* ROC                                                                       */

void hs_node_scores(const hs_graph *g, const double *scores, double *node_score)
{
    for (int v = 0; v < g->n_nodes; v++) node_score[v] = 0.0;
    for (size_t e = 0; e < g->n_edges; e++) {
        const double a = fabs(scores[e]);
        const int u = g->edge_src[e], v = g->recv_node[g->edge_dst[e]];
        if (a > node_score[u]) node_score[u] = a;
        if (a > node_score[v]) node_score[v] = a;
    }
}

typedef struct {
    double a;
    size_t i;
} item;

static int item_desc(const void *x, const void *y)
{
    const item *p = x, *q = y;
    if (p->a != q->a) return p->a > q->a ? -1 : 1;
    return p->i < q->i ? -1 : p->i > q->i;
}

/* The ROC of items with scores a[n] (already |.|) and truth t[n]: one point
 * after each group of equal score, from (0, 0) to (1, 1). */
static hs_status roc_curve(const double *a, const unsigned char *t, const unsigned char *circ, size_t n,
                           hs_roc_curve *c, hs_error *err)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < n; i++) c->n_pos += t[i] != 0;
    c->n_neg = n - c->n_pos;
    c->auc = c->auc_step = c->tpr = c->fpr = c->circuit_auc_step = NAN;
    if (c->n_pos == 0 || c->n_neg == 0) {
        snprintf(c->why, sizeof c->why, c->n_pos ? "every one is in the true circuit: no false positive rate"
                                                  : "none is in the true circuit: no true positive rate");
        return HS_OK;
    }
    c->usable = 1;
    item *it = malloc(n * sizeof *it);
    c->fpr_pts = malloc((n + 2) * sizeof(double));
    c->tpr_pts = malloc((n + 2) * sizeof(double));
    if (!it || !c->fpr_pts || !c->tpr_pts) {
        free(it);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) it[i] = (item){a[i], i};
    qsort(it, n, sizeof *it, item_desc);
    size_t tp = 0, fp = 0, k = 0;
    c->fpr_pts[k] = c->tpr_pts[k] = 0.0;
    k++;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        for (; j < n && it[j].a == it[i].a; j++) {
            if (t[it[j].i]) tp++;
            else fp++;
        }
        c->fpr_pts[k] = (double)fp / (double)c->n_neg;
        c->tpr_pts[k] = (double)tp / (double)c->n_pos;
        k++;
        i = j;
    }
    c->n_pts = k;
    c->auc = c->auc_step = 0.0;
    for (size_t i = 1; i < k; i++) {
        const double dx = c->fpr_pts[i] - c->fpr_pts[i - 1], dy = c->tpr_pts[i] - c->tpr_pts[i - 1];
        c->auc += dx * (c->tpr_pts[i] + c->tpr_pts[i - 1]) / 2;
        c->auc_step += (1 - c->fpr_pts[i]) * dy; /* ACDC pessimistic_auc: each rise counted at its right end */
    }
    if (circ) {
        size_t ctp = 0, cfp = 0;
        for (size_t i = 0; i < n; i++)
            if (circ[i]) {
                ctp += t[i] != 0;
                cfp += t[i] == 0;
            }
        c->tpr = (double)ctp / (double)c->n_pos;
        c->fpr = (double)cfp / (double)c->n_neg;
        c->circuit_auc_step = (1 - c->fpr) * c->tpr; /* the points (0,0), (fpr,tpr), (1,1) */
    }
    free(it);
    return HS_OK;
}

void hs_roc_free(hs_roc *r)
{
    if (r == NULL) return;
    free(r->edges.fpr_pts);
    free(r->edges.tpr_pts);
    free(r->nodes.fpr_pts);
    free(r->nodes.tpr_pts);
    memset(r, 0, sizeof *r);
}

hs_status hs_roc_run(const hs_graph *g, const double *scores, const unsigned char *truth, const unsigned char *circuit,
                     hs_roc *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    const size_t E = g->n_edges;
    const int N = g->n_nodes;
    double *a = calloc(E ? E : 1, sizeof *a), *ns = calloc((size_t)N, sizeof *ns);
    unsigned char *nt = calloc((size_t)N * 2, 1);
    hs_status st = a && ns && nt ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (size_t e = 0; e < E && st == HS_OK; e++) a[e] = fabs(scores[e]);
    if (st == HS_OK) st = roc_curve(a, truth, circuit, E, &out->edges, err);
    if (st == HS_OK) hs_node_scores(g, scores, ns);
    /* nodes: the heads and MLPs (input and logits are in every circuit) */
    int n_comp = 0;
    for (size_t e = 0; e < E && st == HS_OK; e++) {
        const int u = g->edge_src[e], v = g->recv_node[g->edge_dst[e]];
        if (truth[e]) nt[u] = nt[v] = 1;
        if (circuit && circuit[e]) nt[N + u] = nt[N + v] = 1;
    }
    for (int v = 0; v < N && st == HS_OK; v++)
        if (g->node_kind[v] == HS_NODE_HEAD || g->node_kind[v] == HS_NODE_MLP) {
            ns[n_comp] = ns[v];
            nt[n_comp] = nt[v];
            nt[N + n_comp] = nt[N + v];
            n_comp++;
        }
    if (st == HS_OK) st = roc_curve(ns, nt, circuit ? nt + N : NULL, (size_t)n_comp, &out->nodes, err);
    out->has_circuit = circuit != NULL;
    free(a);
    free(ns);
    free(nt);
    if (st != HS_OK) hs_roc_free(out);
    return st;
}

static cJSON *curve_json(const hs_roc_curve *c, int has_circuit)
{
    cJSON *o = cJSON_CreateObject(), *f = cJSON_CreateArray(), *t = cJSON_CreateArray();
    int ok = o && f && t && cJSON_AddItemToObject(o, "fpr", f);
    if (ok) ok = cJSON_AddItemToObject(o, "tpr", t) != 0;
    else {
        cJSON_Delete(f);
        f = NULL;
    }
    if (!ok) cJSON_Delete(t);
    for (size_t i = 0; i < c->n_pts && ok; i++)
        ok = cJSON_AddItemToArray(f, cJSON_CreateNumber(c->fpr_pts[i])) &&
             cJSON_AddItemToArray(t, cJSON_CreateNumber(c->tpr_pts[i]));
    ok = ok && cJSON_AddNumberToObject(o, "positives", (double)c->n_pos) &&
         cJSON_AddNumberToObject(o, "negatives", (double)c->n_neg) && cJSON_AddBoolToObject(o, "usable", c->usable) &&
         (c->usable || cJSON_AddStringToObject(o, "why_not_usable", c->why)) &&
         cJSON_AddItemToObject(o, "auc", hs_json_num_or_null(c->auc)) &&
         cJSON_AddItemToObject(o, "auc_pessimistic", hs_json_num_or_null(c->auc_step));
    if (ok && has_circuit) {
        cJSON *ci = cJSON_AddObjectToObject(o, "circuit");
        ok = ci && cJSON_AddItemToObject(ci, "tpr", hs_json_num_or_null(c->tpr)) &&
             cJSON_AddItemToObject(ci, "fpr", hs_json_num_or_null(c->fpr)) &&
             cJSON_AddItemToObject(ci, "auc_pessimistic", hs_json_num_or_null(c->circuit_auc_step));
    }
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *hs_roc_json(const hs_roc *r)
{
    cJSON *o = cJSON_CreateObject(), *e = curve_json(&r->edges, r->has_circuit), *n = curve_json(&r->nodes, r->has_circuit);
    int ok = o && e && cJSON_AddItemToObject(o, "edges", e);
    if (!ok) cJSON_Delete(e);
    ok = ok && n && cJSON_AddItemToObject(o, "nodes", n);
    if (!ok && n && !(o && cJSON_GetObjectItem(o, "nodes"))) cJSON_Delete(n);
    ok = ok && cJSON_AddStringToObject(o, "ranking", "by |score|, descending; one point per group of equal |score| "
                                                     "(ties move diagonally); auc: trapezoids; auc_pessimistic: "
                                                     "sum (1 - fpr_i)(tpr_i - tpr_i-1) (ACDC acdc_graphics.py)") &&
         cJSON_AddStringToObject(o, "nodes_are", "heads and MLPs; a node's score is the largest |score| of the "
                                                 "edges touching it, a node is true when a true edge touches it");
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* ------------------------------------------------------------------------ */
/* The true circuit                                                          */

static hs_status truth_name(const hs_graph *g, const char *path, const char *where, const char *name,
                            unsigned char *truth, hs_error *err)
{
    const long e = hs_graph_find_edge(g, name);
    if (e < 0) {
        char *vis = hs_visible_dup(name);
        hs_status st = hs_fail(err, HS_ERR_INPUT, "%s:%s: '%s' is not an edge of this model's graph "
                               "(%d layers x %d heads%s)", path, where, vis ? vis : "?", g->n_layers,
                               g->n_heads, g->has_mlp ? ", MLPs" : ", attention only");
        free(vis);
        return st;
    }
    truth[e] = 1;
    return HS_OK;
}

/* One edge name a line; blank lines and lines starting with '#' skipped. */
static hs_status truth_lines(const hs_graph *g, const char *path, char *text, unsigned char *truth, hs_error *err)
{
    int line = 0;
    for (char *s = text; s && *s;) {
        char *nl = strchr(s, '\n');
        if (nl) *nl = '\0';
        line++;
        char *b = s, *end = s + strlen(s);
        while (*b && isspace((unsigned char)*b)) b++;
        while (end > b && isspace((unsigned char)end[-1])) *--end = '\0';
        if (*b && *b != '#') {
            char where[24];
            snprintf(where, sizeof where, "%d", line);
            hs_status st = truth_name(g, path, where, b, truth, err);
            if (st != HS_OK) return st;
        }
        s = nl ? nl + 1 : NULL;
    }
    return HS_OK;
}

hs_status hs_truth_load(const hs_graph *g, const hs_config *cfg, const char *path, unsigned char *truth, hs_error *err)
{
    size_t len = 0;
    unsigned char *raw = NULL;
    hs_status st = hs_read_file(path, &raw, &len, err);
    if (st != HS_OK) return st;
    char *text = (char *)raw;
    memset(truth, 0, g->n_edges);
    cJSON *j = cJSON_ParseWithLength(text, len);
    if (cJSON_IsObject(j)) { /* a graph.json: its in_graph edges */
        double *sc = malloc((g->n_edges ? g->n_edges : 1) * sizeof *sc);
        st = sc ? hs_graph_json_parse(g, cfg, text, len, path, sc, truth, err) : hs_fail(err, HS_ERR_NOMEM, "out of memory");
        free(sc);
    } else if (cJSON_IsArray(j)) { /* ["u->v", ...] */
        int k = 0;
        for (const cJSON *it = j->child; it && st == HS_OK; it = it->next, k++) {
            char where[32];
            snprintf(where, sizeof where, " item %d", k);
            st = cJSON_IsString(it) ? truth_name(g, path, where, it->valuestring, truth, err)
                                    : hs_fail(err, HS_ERR_INPUT, "%s: item %d is not an edge name (a string)", path, k);
        }
    } else {
        st = truth_lines(g, path, text, truth, err);
    }
    cJSON_Delete(j);
    free(text);
    size_t n = 0;
    for (size_t e = 0; e < g->n_edges && st == HS_OK; e++) n += truth[e];
    if (st == HS_OK && n == 0) st = hs_fail(err, HS_ERR_INPUT, "%s names no edge of the true circuit", path);
    return st;
}
