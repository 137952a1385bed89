/*
 * circuits/circuit_discovery.c -- the discovery section of both circuit
 * checks (circuits.h, "Discovery beside the hand-written verdicts"): each
 * check's prompt set with corrupted partners, EAP-IG's scores on it
 * (discovery/ hs_eap_scores), MIB's 5 % circuit and the faithfulness curve
 * (hs_circeval_create, hs_faith_curve_run) and the same with circuits grown
 * greedily from logits (EAP-IG's apply_greedy), the head->head edges by |score|
 * against the path-patching edges the check names; the section's JSON and
 * summary lines.
 */
#include "circuits/circuits_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIVE_PERCENT 0.05
#define CURVE_AT_5 6 /* hs_faith_curve.pt index of MIB's 5 % (pt[0] is the empty circuit) */

void hs_circ_discovery_free(hs_circ_discovery *d)
{
    if (d == NULL) return;
    hs_graph_free(&d->g);
    free(d->scores);
    free(d->in_circuit);
    free(d->hh);
    free(d->named);
    free(d->named_value);
    memset(d, 0, sizeof *d);
}

static hs_status oom(hs_error *err)
{
    return hs_fail(err, HS_ERR_NOMEM, "out of memory");
}

/* Edge e of g runs from a head into another head's q, k or v. */
static int head_to_head(const hs_graph *g, size_t e)
{
    return g->node_kind[g->edge_src[e]] == HS_NODE_HEAD && g->recv_kind[g->edge_dst[e]] != HS_RECV_WHOLE;
}

/* d->hh: the head->head edges by |score|; d->agree: named edges among the top d->top_k. */
static hs_status rank_heads(hs_circ_discovery *d, hs_error *err)
{
    const hs_graph *g = &d->g;
    size_t *order = malloc((g->n_edges ? g->n_edges : 1) * sizeof *order);
    d->hh = malloc((g->n_edges ? g->n_edges : 1) * sizeof *d->hh);
    if (!order || !d->hh) {
        free(order);
        return oom(err);
    }
    hs_status s = hs_edge_ranking(g, d->scores, order, err);
    for (size_t i = 0; i < g->n_edges && s == HS_OK; i++)
        if (head_to_head(g, order[i])) d->hh[d->n_hh++] = order[i];
    free(order);
    if ((size_t)d->top_k > d->n_hh) d->top_k = (int)d->n_hh;
    for (int i = 0; i < d->n_named; i++)
        for (int k = 0; k < d->top_k; k++) d->agree += d->hh[k] == d->named[i];
    return s;
}

/* The section on prompt set p (corrupted partners, answers, wrong answers):
 * EAP-IG, the 5 % circuit, the curve, the named edges (names[n_named], edge
 * names of g, with their path-patching values) against the top top_k
 * head->head edges. pool may be NULL; clean and corr: the check's caches of
 * p's two runs for EAP-IG (hs_eap_scores_cached) and the evaluator
 * (hs_circeval_create_cached), or NULL. */
static hs_status discovery_run(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_cache *clean,
                               const hs_cache *corr, const char (*names)[48], const double *values, int n_named,
                               int top_k, hs_circ_discovery *d, hs_error *err)
{
    hs_circeval *ce = NULL;
    d->ran = 1;
    d->n_prompts = p->n;
    d->t = p->t;
    d->ig_steps = HS_EAP_IG_STEPS;
    d->top_k = top_k;
    hs_status s = hs_graph_build(&m->cfg, &d->g, err);
    const size_t E = d->g.n_edges;
    if (s == HS_OK) {
        d->scores = calloc(E ? E : 1, sizeof *d->scores);
        d->in_circuit = calloc(E ? E : 1, 1);
        d->named = calloc((size_t)n_named + 1, sizeof *d->named);
        d->named_value = calloc((size_t)n_named + 1, sizeof *d->named_value);
        if (!d->scores || !d->in_circuit || !d->named || !d->named_value) s = oom(err);
    }
    for (int i = 0; i < n_named && s == HS_OK; i++) {
        const long e = hs_graph_find_edge(&d->g, names[i]);
        HS_ASSERT(e >= 0);
        d->named[d->n_named] = (size_t)e;
        d->named_value[d->n_named++] = values[i];
    }
    if (s == HS_OK && clean)
        s = hs_eap_scores_cached(m, pool, p, &d->g, HS_METRIC_LOGIT_DIFF, d->ig_steps, clean, d->scores, err);
    else if (s == HS_OK)
        s = hs_eap_scores(m, pool, p, &d->g, HS_METRIC_LOGIT_DIFF, d->ig_steps, d->scores, err);
    if (s == HS_OK && clean)
        s = hs_circeval_create_cached(m, pool, p, &d->g, HS_METRIC_LOGIT_DIFF, HS_ABLATE_RESAMPLE, clean, corr, &ce, err);
    else if (s == HS_OK)
        s = hs_circeval_create(m, pool, p, &d->g, HS_METRIC_LOGIT_DIFF, HS_ABLATE_RESAMPLE, &ce, err);
    if (s == HS_OK) s = hs_faith_curve_run(ce, d->scores, HS_SELECT_TOPN, &d->curve, err);
    if (s == HS_OK) {
        d->m_full = d->curve.m_full;
        d->m_empty = d->curve.m_empty;
        d->usable = d->curve.usable;
        snprintf(d->why, sizeof d->why, "%s", d->curve.why);
        d->top_n = hs_faith_top_n(FIVE_PERCENT, E);
        s = hs_circuit_select(&d->g, d->scores, (long)d->top_n, NAN, d->in_circuit, &d->n_kept, err);
    }
    if (s == HS_OK) { /* the curve ran this very circuit */
        HS_ASSERT(d->curve.pt[CURVE_AT_5].top_n == d->top_n && d->curve.pt[CURVE_AT_5].edges == d->n_kept);
        d->m_circuit = d->curve.pt[CURVE_AT_5].metric;
        d->faithfulness = d->curve.pt[CURVE_AT_5].faithfulness;
        s = hs_faith_curve_run(ce, d->scores, HS_SELECT_GREEDY, &d->curve_greedy, err);
    }
    if (s == HS_OK) {
        const hs_faith_point *g5 = &d->curve_greedy.pt[CURVE_AT_5];
        HS_ASSERT(g5->top_n == d->top_n);
        d->n_kept_greedy = g5->edges;
        d->m_greedy = g5->metric;
        d->f_greedy = g5->faithfulness;
        s = rank_heads(d, err);
    }
    hs_circeval_destroy(ce);
    return s;
}

/* A prompt set of n rows of t tokens, every array allocated (line: row + 1). */
static hs_status prompts_alloc(int n, int t, hs_prompts *p, hs_error *err)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    p->t = t;
    p->clean = malloc((size_t)n * t * sizeof(int));
    p->corr = malloc((size_t)n * t * sizeof(int));
    p->answer = malloc((size_t)n * sizeof(int));
    p->wrong = malloc((size_t)n * sizeof(int));
    p->pos = malloc((size_t)n * sizeof(int));
    p->line = malloc((size_t)n * sizeof(int));
    if (!p->clean || !p->corr || !p->answer || !p->wrong || !p->pos || !p->line) return oom(err);
    for (int i = 0; i < n; i++) p->line[i] = i + 1;
    return HS_OK;
}

hs_status hs_circ_discovery_winograd(const hs_circ_ctx *c, hs_circuit_report *r, hs_error *err)
{
    hs_prompts p;
    hs_status s = prompts_alloc(c->n, HS_CIRC_T, &p, err);
    const int nd = r->n_decision, H = c->H;
    char (*names)[48] = calloc((size_t)H * nd * 3 + 1, sizeof *names);
    double *values = calloc((size_t)H * nd * 3 + 1, sizeof *values);
    if (s == HS_OK && (!names || !values)) s = oom(err);
    int n_named = 0;
    if (s == HS_OK) {
        memcpy(p.clean, c->tok_clean, (size_t)c->n * HS_CIRC_T * sizeof(int));
        memcpy(p.corr, c->tok_corr, (size_t)c->n * HS_CIRC_T * sizeof(int));
        memcpy(p.answer, c->ref_clean, (size_t)c->n * sizeof(int));
        memcpy(p.wrong, c->ref_corr, (size_t)c->n * sizeof(int));
        for (int i = 0; i < c->n; i++) p.pos[i] = HS_WG_POS_QUERY;
        for (int sd = 0; sd < H && r->path; sd++) /* the order of the report's path-patching edges */
            for (int d = 0; d < nd; d++)
                for (int w = 0; w < 3; w++) {
                    const float v = r->path[((size_t)sd * nd + d) * 3 + w];
                    if (!(fabsf(v) >= r->opts.decide_patch)) continue; /* NaN too */
                    snprintf(names[n_named], sizeof names[0], "a0.h%d->a%d.h%d<%c>", sd, r->decision[d].layer,
                             r->decision[d].head, "qkv"[w]);
                    values[n_named++] = v;
                }
        hs_circ_discovery *d = &r->disc;
        snprintf(d->prompt_set, sizeof d->prompt_set, "the check's %d held-out pairs both ways: clean = each "
                 "held-out sentence, corrupted = its matched partner (same nouns, the other role's adjective), "
                 "answer = its referent, wrong = the partner's, read at position %d", c->np, HS_WG_POS_QUERY);
        snprintf(d->named_by, sizeof d->named_by, "layer-0 head -> decision-head input with path patching "
                 "|normalised LD| >= %.2f, decide_patch", r->opts.decide_patch);
        /* phase A's caches of these very runs (for_eval): the evaluator does not run them again */
        s = discovery_run(c->m, c->pool, &p, c->for_eval ? &c->clean : NULL, c->for_eval ? &c->corr : NULL,
                          (const char (*)[48])names, values, n_named, n_named, d, err);
    }
    hs_prompts_free(&p);
    free(names);
    free(values);
    return s;
}

/* Sequence q's corrupted copy: its first occurrence replaced by symbols
 * outside the segment, those absent from the sequence first, each group
 * scanned from symbol q mod V. mark: (2 V) scratch. */
static void corrupt_first(const int *tok, const hs_ind_seq *sq, int T, int V, int q, unsigned char *mark, int *corr)
{
    unsigned char *in_seq = mark, *in_seg = mark + V;
    memset(mark, 0, 2 * (size_t)V);
    for (int i = 0; i < T; i++) in_seq[tok[i]] = 1;
    for (int k = 0; k < sq->len; k++) in_seg[tok[sq->start1 + k]] = 1;
    memcpy(corr, tok, (size_t)T * sizeof *corr);
    int k = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int j = 0; j < V && k < sq->len; j++) {
            const int v = (q + j) % V;
            if (!in_seg[v] && in_seq[v] == pass) corr[sq->start1 + k++] = v;
        }
    HS_ASSERT(k == sq->len); /* validation: seg_max < n_symbols / 2 */
}

/* The wrong answer of sequence q: a symbol at no position an induction head
 * attends in either run, one absent from both the clean sequence tok and
 * its corrupted copy corr when there is one, else a filler symbol (in both,
 * outside the segment and the replacements), each scanned from symbol q mod
 * V. Not the replacement that took the answer's place: EAP-IG's interpolated
 * runs hold a mix of the answer and that symbol where the induction head
 * looks, so with it as the wrong answer more attention there lowers the
 * metric and the previous-token -> induction-head edges score with the wrong
 * sign. mark: (V) scratch. */
static int pick_wrong(const int *tok, const int *corr, const hs_ind_seq *sq, int T, int V, int q, unsigned char *mark)
{
    memset(mark, 0, (size_t)V);
    for (int i = 0; i < T; i++) {
        mark[tok[i]] |= 1;
        mark[corr[i]] |= 2;
    }
    for (int k = 0; k < sq->len; k++) mark[tok[sq->start1 + k]] = mark[corr[sq->start1 + k]] = 4;
    for (int want = 0; want <= 3; want += 3)
        for (int j = 0; j < V; j++)
            if (mark[(q + j) % V] == want) return (q + j) % V;
    HS_ASSERT(0); /* a segment has at most n_symbols / 2 symbols, so a filler is in both */
    return -1;
}

hs_status hs_circ_discovery_induction(const hs_model *m, const hs_induction *t, hs_ind_circuit_report *r,
                                      hs_error *err)
{
    const int n = (int)r->n_seqs, T = t->p.n_ctx, V = t->p.n_symbols, H = r->H;
    hs_prompts p;
    hs_status s = prompts_alloc(n, T, &p, err);
    char (*names)[48] = calloc((size_t)H + 1, sizeof *names);
    double *values = calloc((size_t)H + 1, sizeof *values);
    unsigned char *mark = malloc(2 * (size_t)V);
    if (s == HS_OK && (!names || !values || !mark)) s = oom(err);
    if (s != HS_OK) goto done;
    for (int q = 0; q < n; q++) {
        const int *tok = t->heldout_tokens + (size_t)q * T;
        const hs_ind_seq *sq = &t->heldout[q];
        const int k = sq->len - 1; /* the last scored prediction */
        memcpy(p.clean + (size_t)q * T, tok, (size_t)T * sizeof(int));
        corrupt_first(tok, sq, T, V, q, mark, p.corr + (size_t)q * T);
        p.pos[q] = sq->start2 + k - 1;
        p.answer[q] = tok[sq->start2 + k];
        p.wrong[q] = pick_wrong(tok, p.corr + (size_t)q * T, sq, T, V, q, mark);
    }
    int n_named = 0;
    for (int i = 0; i < r->n_prev && r->ind_best.layer >= 0; i++) {
        snprintf(names[n_named], sizeof names[0], "a%d.h%d->a%d.h%d<k>", r->prev[i].layer, r->prev[i].head,
                 r->ind_best.layer, r->ind_best.head);
        values[n_named++] = r->path[1];
    }
    hs_circ_discovery *d = &r->disc;
    snprintf(d->prompt_set, sizeof d->prompt_set, "the check's %d held-out sequences, each read at the last "
             "scored position of its repeat; corrupted = the same sequence with its first occurrence replaced by "
             "symbols outside the segment; answer = the repeated token, wrong = a symbol at no position an induction "
             "head attends in either run", n);
    snprintf(d->named_by, sizeof d->named_by, "each previous-token head -> the named induction head's keys, "
             "the edges its path patching runs");
    s = discovery_run(m, NULL, &p, NULL, NULL, (const char (*)[48])names, values, n_named, 5, d, err);
done:
    hs_prompts_free(&p);
    free(names);
    free(values);
    free(mark);
    return s;
}

/* ------------------------------------------------------------------------ */
/* The section's JSON and summary                                            */

#define N_STRONGEST 10

/* Head->head edges shown: the top_k compared, and at least 5. */
static int shown_hh(const hs_circ_discovery *d)
{
    int n = d->top_k > 5 ? d->top_k : 5;
    return (size_t)n > d->n_hh ? (int)d->n_hh : n;
}

/* The index of edge e among d->named, or -1. */
static int named_index(const hs_circ_discovery *d, size_t e)
{
    for (int i = 0; i < d->n_named; i++)
        if (d->named[i] == e) return i;
    return -1;
}

/* 1 + e's place among the head->head edges (1 = the strongest). */
static int hh_rank(const hs_circ_discovery *d, size_t e)
{
    for (size_t i = 0; i < d->n_hh; i++)
        if (d->hh[i] == e) return (int)i + 1;
    return 0;
}

static int json_edges(cJSON *o, const hs_circ_discovery *d)
{
    char nm[96];
    size_t *order = malloc((d->g.n_edges ? d->g.n_edges : 1) * sizeof *order);
    hs_error e = {0};
    int ok = order && hs_edge_ranking(&d->g, d->scores, order, &e) == HS_OK;
    cJSON *a = ok ? cJSON_AddArrayToObject(o, "strongest_edges") : NULL;
    ok = a != NULL;
    for (size_t i = 0; i < N_STRONGEST && i < d->g.n_edges && ok; i++) {
        cJSON *x = hs_circ_json_array_object(a);
        hs_graph_edge_name(&d->g, order[i], nm, sizeof nm);
        ok = x && cJSON_AddStringToObject(x, "edge", nm) && hs_circ_json_num(x, "score", d->scores[order[i]]) &&
             cJSON_AddBoolToObject(x, "in_circuit", d->in_circuit[order[i]]);
    }
    free(order);
    a = ok ? cJSON_AddArrayToObject(o, "head_to_head") : NULL;
    ok = a != NULL;
    for (int i = 0; i < shown_hh(d) && ok; i++) {
        const size_t ed = d->hh[i];
        const int k = named_index(d, ed);
        cJSON *x = hs_circ_json_array_object(a);
        hs_graph_edge_name(&d->g, ed, nm, sizeof nm);
        ok = x && cJSON_AddStringToObject(x, "edge", nm) && hs_circ_json_num(x, "score", d->scores[ed]) &&
             cJSON_AddBoolToObject(x, "named", k >= 0) && (k < 0 || hs_circ_json_num(x, "path_patching", d->named_value[k]));
    }
    return ok;
}

int hs_circ_discovery_json(cJSON *root, const hs_circ_discovery *d)
{
    cJSON *o = cJSON_AddObjectToObject(root, "discovery");
    int ok = o && cJSON_AddStringToObject(o, "method", "eap-ig") && hs_circ_json_num(o, "ig_steps", d->ig_steps) &&
             cJSON_AddStringToObject(o, "metric", hs_metric_names[HS_METRIC_LOGIT_DIFF]) &&
             cJSON_AddStringToObject(o, "ablation", hs_ablate_method_names[HS_ABLATE_RESAMPLE]) &&
             cJSON_AddStringToObject(o, "prompt_set", d->prompt_set) && hs_circ_json_num(o, "prompts", d->n_prompts) &&
             hs_circ_json_num(o, "tokens", d->t) && hs_circ_json_num(o, "n_edges", (double)d->g.n_edges) &&
             hs_circ_json_num(o, "metric_full", d->m_full) && hs_circ_json_num(o, "metric_empty", d->m_empty) &&
             cJSON_AddBoolToObject(o, "usable", d->usable) &&
             (d->usable || cJSON_AddStringToObject(o, "why_not_usable", d->why));
    cJSON *c = ok ? cJSON_AddObjectToObject(o, "circuit") : NULL;
    ok = c && cJSON_AddStringToObject(c, "chosen_by", "the top edges by |score| at MIB's 5 % of the edges, pruned") &&
         hs_circ_json_num(c, "top_n", (double)d->top_n) && hs_circ_json_num(c, "edges", (double)d->n_kept) &&
         hs_circ_json_num(c, "metric", d->m_circuit) && hs_circ_json_num(c, "faithfulness", d->faithfulness);
    cJSON *cg = ok ? cJSON_AddObjectToObject(o, "circuit_greedy") : NULL;
    ok = cg && cJSON_AddStringToObject(cg, "chosen_by", "as many edges grown greedily from logits by |score| "
                                       "(EAP-IG's Graph.apply_greedy), pruned") &&
         hs_circ_json_num(cg, "top_n", (double)d->top_n) && hs_circ_json_num(cg, "edges", (double)d->n_kept_greedy) &&
         hs_circ_json_num(cg, "metric", d->m_greedy) && hs_circ_json_num(cg, "faithfulness", d->f_greedy);
    ok = ok && hs_circ_json_add(o, "faithfulness_curve", hs_faith_curve_json(&d->curve)) &&
         hs_circ_json_add(o, "faithfulness_curve_greedy", hs_faith_curve_json(&d->curve_greedy)) && json_edges(o, d);
    cJSON *pp = ok ? cJSON_AddObjectToObject(o, "path_patching_edges") : NULL;
    cJSON *a = pp && cJSON_AddStringToObject(pp, "named_by", d->named_by) ? cJSON_AddArrayToObject(pp, "edges") : NULL;
    ok = a != NULL;
    for (int i = 0; i < d->n_named && ok; i++) {
        char nm[96];
        cJSON *x = hs_circ_json_array_object(a);
        hs_graph_edge_name(&d->g, d->named[i], nm, sizeof nm);
        ok = x && cJSON_AddStringToObject(x, "edge", nm) && hs_circ_json_num(x, "path_patching", d->named_value[i]) &&
             hs_circ_json_num(x, "score", d->scores[d->named[i]]) &&
             hs_circ_json_num(x, "head_to_head_rank", hh_rank(d, d->named[i]));
    }
    cJSON *ag = ok ? cJSON_AddObjectToObject(o, "agreement") : NULL;
    return ag && hs_circ_json_num(ag, "top_k", d->top_k) && hs_circ_json_num(ag, "named", d->n_named) &&
           hs_circ_json_num(ag, "agree", d->agree) &&
           cJSON_AddStringToObject(ag, "compares", "the named edges found among EAP-IG's top_k head->head edges");
}

static const char *fmt3(char *b, size_t n, double v)
{
    char t[HS_FIXED_BUF];
    snprintf(b, n, "%s", isfinite(v) ? hs_fmt_fixed(t, v, 3, 0) : "undefined");
    return b;
}

void hs_circ_discovery_summary(hs_buf *b, const hs_circ_discovery *d)
{
    char x[32], y[32], m0[HS_FIXED_BUF], m1[HS_FIXED_BUF], m2[HS_FIXED_BUF];
    char nm[96];
    hs_buf_printf(b, "\ndiscovery (EAP-IG, %d steps; logit-diff, resample ablation): %d prompts of %d tokens, "
                  "%zu edges\n", d->ig_steps, d->n_prompts, d->t, d->g.n_edges);
    hs_buf_printf(b, "  prompt set: %s\n", d->prompt_set);
    hs_buf_printf(b, "  circuit: the top %zu edges by |score| (MIB's 5 %%), %zu after pruning: metric %s, "
                  "faithfulness %s (the model %s, every edge ablated %s)%s%s\n", d->top_n, d->n_kept,
                  hs_fmt_fixed(m0, d->m_circuit, 4, 1), fmt3(x, sizeof x, d->faithfulness),
                  hs_fmt_fixed(m1, d->m_full, 4, 1), hs_fmt_fixed(m2, d->m_empty, 4, 1),
                  d->usable ? "" : "; faithfulness undefined: ", d->usable ? "" : d->why);
    hs_buf_printf(b, "  circuit grown greedily from logits (EAP-IG's apply_greedy), %zu edges, %zu after pruning: "
                  "metric %s, faithfulness %s\n", d->top_n, d->n_kept_greedy, hs_fmt_fixed(m0, d->m_greedy, 4, 1),
                  fmt3(x, sizeof x, d->f_greedy));
    hs_buf_puts(b, "  faithfulness at MIB's sizes:");
    for (int k = 1; k <= HS_FAITH_N; k++)
        hs_buf_printf(b, "%s %g%% %s", k > 1 ? "," : "", 100 * d->curve.pt[k].fraction,
                      fmt3(x, sizeof x, d->curve.pt[k].faithfulness));
    hs_buf_printf(b, "; CPR %s, CMD %s\n", fmt3(x, sizeof x, d->curve.cpr), fmt3(y, sizeof y, d->curve.cmd));
    hs_buf_puts(b, "  the same, grown greedily:");
    for (int k = 1; k <= HS_FAITH_N; k++)
        hs_buf_printf(b, "%s %g%% %s", k > 1 ? "," : "", 100 * d->curve_greedy.pt[k].fraction,
                      fmt3(x, sizeof x, d->curve_greedy.pt[k].faithfulness));
    hs_buf_printf(b, "; CPR %s, CMD %s\n", fmt3(x, sizeof x, d->curve_greedy.cpr),
                  fmt3(y, sizeof y, d->curve_greedy.cmd));
    hs_buf_printf(b, "  EAP-IG's top %d head->head edges (score = estimated metric with the edge corrupted - "
                  "the model's):", shown_hh(d));
    for (int i = 0; i < shown_hh(d); i++) {
        hs_graph_edge_name(&d->g, d->hh[i], nm, sizeof nm);
        hs_buf_printf(b, "%s %s ", i ? "," : "", nm);
        hs_buf_fixed(b, d->scores[d->hh[i]], 0, 4, 1);
    }
    hs_buf_printf(b, "\n  the path-patching edges circuit names (%s):", d->named_by);
    if (d->n_named == 0) hs_buf_puts(b, " none");
    for (int i = 0; i < d->n_named; i++) {
        hs_graph_edge_name(&d->g, d->named[i], nm, sizeof nm);
        hs_buf_printf(b, "%s %s %s", i ? "," : "", nm, isfinite(d->named_value[i]) ? "" : "(not run)");
        if (isfinite(d->named_value[i])) hs_buf_fixed(b, d->named_value[i], 0, 2, 1);
    }
    if (d->n_named == 0) hs_buf_puts(b, "\n  agreement: nothing to compare\n");
    else
        hs_buf_printf(b, "\n  agree on %d of %d: the named edges among EAP-IG's top %d head->head edges\n", d->agree,
                      d->n_named, d->top_k);
}
