/*
 * discovery/discover_report.c -- what `discover` and `faithfulness` say:
 * their reports as JSON and as text (discovery.h, "Circuit discovery").
 */
#include "discovery/discovery.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* {"edges", ..., "metric", "faithfulness"} of a circuit. */
static cJSON *circuit_obj(size_t edges, double m, double f)
{
    cJSON *c = cJSON_CreateObject();
    if (c && cJSON_AddNumberToObject(c, "edges", (double)edges) && cJSON_AddNumberToObject(c, "metric", m) &&
        cJSON_AddItemToObject(c, "faithfulness", hs_json_num_or_null(f)))
        return c;
    cJSON_Delete(c);
    return NULL;
}

static int add_common(cJSON *o, hs_metric_kind metric, hs_ablate_method abl, cJSON *circ)
{
    if (circ == NULL || !cJSON_AddItemToObject(o, "circuit", circ)) {
        cJSON_Delete(circ);
        return 0;
    }
    return cJSON_AddStringToObject(o, "metric_name", hs_metric_names[metric]) &&
           cJSON_AddStringToObject(o, "ablation", hs_ablate_method_names[abl]);
}

cJSON *hs_discover_curve_json(const hs_discover_report *r)
{
    cJSON *o = hs_faith_curve_json(&r->curve), *c = circuit_obj(r->n_kept, r->m_circuit, r->faithfulness);
    int ok = o && c && cJSON_AddStringToObject(c, "chosen_by", r->chosen_by);
    ok = ok && add_common(o, r->metric, r->ablation, c);
    if (!ok && c && !(o && cJSON_GetObjectItem(o, "circuit"))) cJSON_Delete(c);
    ok = ok && cJSON_AddStringToObject(o, "method", hs_discover_method_names[r->method]);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *hs_faith_report_json(const hs_faith_report *r)
{
    cJSON *o = hs_faith_curve_json(&r->curve), *c = circuit_obj(r->n_kept, r->m_circuit, r->faithfulness);
    int ok = o && c && cJSON_AddNumberToObject(c, "edges_in_file", (double)r->n_in_file);
    ok = ok && add_common(o, r->metric, r->ablation, c);
    if (!ok && c && !(o && cJSON_GetObjectItem(o, "circuit"))) cJSON_Delete(c);
    ok = ok && cJSON_AddNumberToObject(o, "prompts", r->n_prompts);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The k edges of largest |score| (ranked as hs_edge_ranking) into order; k returned. */
static size_t strongest(const hs_graph *g, const double *scores, size_t *order, size_t k)
{
    hs_error err = {0};
    size_t *all = malloc((g->n_edges ? g->n_edges : 1) * sizeof *all);
    if (all == NULL || hs_edge_ranking(g, scores, all, &err) != HS_OK) {
        free(all);
        return 0;
    }
    if (k > g->n_edges) k = g->n_edges;
    memcpy(order, all, k * sizeof *order);
    free(all);
    return k;
}

static int add_strongest(cJSON *o, const hs_discover_report *r)
{
    size_t top[10];
    const size_t k = strongest(&r->g, r->scores, top, 10);
    cJSON *a = cJSON_AddArrayToObject(o, "strongest_edges");
    for (size_t i = 0; i < k && a; i++) {
        char name[96];
        hs_graph_edge_name(&r->g, top[i], name, sizeof name);
        cJSON *x = cJSON_CreateObject();
        if (!x || !cJSON_AddItemToArray(a, x) || !cJSON_AddStringToObject(x, "edge", name) ||
            !cJSON_AddNumberToObject(x, "score", r->scores[top[i]]) ||
            !cJSON_AddBoolToObject(x, "in_circuit", r->in_circuit[top[i]])) {
            if (x && !cJSON_GetArrayItem(a, (int)i)) cJSON_Delete(x);
            return 0;
        }
    }
    return a != NULL;
}

cJSON *hs_discover_json(const hs_discover_report *r)
{
    cJSON *o = cJSON_CreateObject();
    int ok = o && cJSON_AddStringToObject(o, "method", hs_discover_method_names[r->method]) &&
             cJSON_AddStringToObject(o, "metric", hs_metric_names[r->metric]) &&
             cJSON_AddStringToObject(o, "ablation", hs_ablate_method_names[r->ablation]) &&
             cJSON_AddNumberToObject(o, "prompts", r->n_prompts) &&
             cJSON_AddNumberToObject(o, "n_edges", (double)r->g.n_edges) &&
             cJSON_AddNumberToObject(o, "metric_full", r->m_full) &&
             cJSON_AddNumberToObject(o, "metric_empty", r->m_empty) && cJSON_AddBoolToObject(o, "usable", r->usable) &&
             (r->usable || cJSON_AddStringToObject(o, "why_not_usable", r->why));
    cJSON *c = ok ? circuit_obj(r->n_kept, r->m_circuit, r->faithfulness) : NULL;
    ok = ok && c && cJSON_AddStringToObject(c, "chosen_by", r->chosen_by);
    if (ok) ok = cJSON_AddItemToObject(o, "circuit", c) != 0;
    if (!ok) cJSON_Delete(c);
    if (ok && r->method == HS_DISCOVER_ACDC) {
        cJSON *a = cJSON_AddObjectToObject(o, "acdc");
        ok = a && cJSON_AddNumberToObject(a, "tau", r->tau) && cJSON_AddNumberToObject(a, "trials", (double)r->acdc.trials) &&
             cJSON_AddNumberToObject(a, "skipped", (double)r->acdc.skipped) &&
             cJSON_AddNumberToObject(a, "forwards", (double)r->acdc.forwards) &&
             cJSON_AddNumberToObject(a, "kept", (double)r->acdc.kept) && cJSON_AddNumberToObject(a, "metric", r->acdc.metric) &&
             cJSON_AddStringToObject(a, "rule", r->acdc_abs ? "remove when |change| < tau"
                                                            : "remove when the loss (kl, -metric) grows less than tau") &&
             cJSON_AddStringToObject(a, "order", r->acdc_headscope_order ? "headscope" : "acdc");
    }
    if (ok && r->method == HS_DISCOVER_EAP_IG)
        ok = cJSON_AddNumberToObject(o, "ig_steps", r->ig_steps) &&
             cJSON_AddStringToObject(o, "ig_alphas", r->ig_right ? "right: k/m, k = 1..m" : "left: k/m, k = 0..m-1");
    ok = ok && cJSON_AddNumberToObject(o, "forwards", (double)r->forwards);
    if (ok && (r->method == HS_DISCOVER_EAP || r->method == HS_DISCOVER_EAP_IG))
        ok = cJSON_AddNumberToObject(o, "backwards", (double)r->backwards) != NULL;
    cJSON *f = ok ? hs_faith_curve_json(&r->curve) : NULL;
    ok = ok && f && cJSON_AddItemToObject(o, "faithfulness_curve", f);
    if (!ok && f && !(o && cJSON_GetObjectItem(o, "faithfulness_curve"))) cJSON_Delete(f);
    cJSON *roc = ok && r->has_roc ? hs_roc_json(&r->roc) : NULL;
    if (ok && r->has_roc) ok = roc && cJSON_AddItemToObject(o, "roc", roc);
    if (!ok && roc && !cJSON_GetObjectItem(o, "roc")) cJSON_Delete(roc);
    ok = ok && add_strongest(o, r);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* "0.123" or "undefined" (no sign on a value that rounds to zero: hs_fmt_fixed). */
static const char *fmt_f(char *buf, size_t cap, double f)
{
    char t[HS_FIXED_BUF];
    snprintf(buf, cap, "%s", isnan(f) ? "undefined" : hs_fmt_fixed(t, f, 3, 0));
    return buf;
}

/* The line of the full and the empty model's metric (m(M), m(empty)). */
static void ends_line(double m_full, double m_empty, int usable, const char *why, hs_buf *b)
{
    char f[HS_FIXED_BUF], e[HS_FIXED_BUF];
    hs_buf_printf(b, "m(M) %s (the model), m(empty) %s (every edge ablated)%s%s\n", hs_fmt_fixed(f, m_full, 4, 1),
                  hs_fmt_fixed(e, m_empty, 4, 1), usable ? "" : "; faithfulness not usable: ", usable ? "" : why);
}

static void curve_summary(const hs_faith_curve *c, hs_buf *b)
{
    char x[32], y[32];
    hs_buf_printf(b, "faithfulness curve (%s at MIB's sizes, pruned): CPR %s, CMD %s\n",
                  c->selection == HS_SELECT_GREEDY   ? "edges grown greedily from logits by |score|"
                  : c->selection == HS_SELECT_SIGNED ? "edges lowering the metric most"
                                                     : "top edges by |score|",
                  fmt_f(x, sizeof x, c->cpr), fmt_f(y, sizeof y, c->cmd));
    hs_buf_printf(b, "  %8s %8s %10s %12s\n", "fraction", "edges", "metric", "faithfulness");
    for (int k = 0; k <= HS_FAITH_N; k++) {
        const hs_faith_point *p = &c->pt[k];
        hs_buf_printf(b, "  %7.1f%% %8zu ", 100 * p->fraction, p->edges);
        hs_buf_fixed(b, p->metric, 10, 4, 1);
        hs_buf_printf(b, " %12s\n", fmt_f(x, sizeof x, p->faithfulness));
    }
}

static void roc_line(const char *what, const hs_roc_curve *c, int has_circuit, hs_buf *b)
{
    char x[32], y[32];
    if (!c->usable) {
        hs_buf_printf(b, "  %s: no ROC: %s\n", what, c->why);
        return;
    }
    hs_buf_printf(b, "  %s: AUC %s (pessimistic %s) over %zu true, %zu false", what, fmt_f(x, sizeof x, c->auc),
                  fmt_f(y, sizeof y, c->auc_step), c->n_pos, c->n_neg);
    if (has_circuit)
        hs_buf_printf(b, "; the circuit: TPR %.3f, FPR %.3f (pessimistic AUC %.3f)", c->tpr, c->fpr, c->circuit_auc_step);
    hs_buf_puts(b, "\n");
}

void hs_discover_summary(const hs_discover_report *r, hs_buf *b)
{
    char x[32], m[HS_FIXED_BUF];
    hs_buf_printf(b, "discover (%s, %s, %s ablation): %d prompts, %zu edges\n", hs_discover_method_names[r->method],
                  hs_metric_names[r->metric], hs_ablate_method_names[r->ablation], r->n_prompts, r->g.n_edges);
    ends_line(r->m_full, r->m_empty, r->usable, r->why, b);
    if (r->method == HS_DISCOVER_ACDC)
        hs_buf_printf(b, "ACDC, tau %g (%s, %s order): %ld runs (%ld forwards), %ld edges skipped (nothing read "
                      "their node), %zu kept\n", r->tau, r->acdc_abs ? "|change| < tau" : "signed",
                      r->acdc_headscope_order ? "headscope's" : "ACDC's", r->acdc.trials, r->acdc.forwards,
                      r->acdc.skipped, r->acdc.kept);
    else if (r->method == HS_DISCOVER_EAP)
        hs_buf_printf(b, "EAP (Syed et al. 2023): %ld forward and %ld backward passes, (a_%s - a_clean) times the "
                      "gradient at the clean run\n", r->forwards, r->backwards,
                      r->ablation == HS_ABLATE_RESAMPLE ? "corrupted" : r->ablation == HS_ABLATE_MEAN ? "mean" : "zero");
    else if (r->method == HS_DISCOVER_EAP_IG)
        hs_buf_printf(b, "EAP-IG (Hanna et al. 2024), %d steps from the %s to the clean input (alphas k/m, k = %s): "
                      "%ld forward and %ld backward passes\n", r->ig_steps,
                      r->ablation == HS_ABLATE_RESAMPLE ? "corrupted" : r->ablation == HS_ABLATE_MEAN ? "mean" : "zero",
                      r->ig_right ? "1..m" : "0..m-1", r->forwards, r->backwards);
    else
        hs_buf_printf(b, "exact edge patching: %zu runs over the set (%ld forwards)\n", r->g.n_edges, r->forwards);
    hs_buf_printf(b, "circuit (%s, pruned): %zu edges, metric %s, faithfulness %s\n", r->chosen_by, r->n_kept,
                  hs_fmt_fixed(m, r->m_circuit, 4, 1), fmt_f(x, sizeof x, r->faithfulness));
    curve_summary(&r->curve, b);
    size_t top[10];
    const size_t k = strongest(&r->g, r->scores, top, 10);
    hs_buf_puts(b, r->method == HS_DISCOVER_ACDC ? "strongest edges (score = the metric's change when ACDC tried the "
                                                   "edge; 0 when skipped):\n"
                   : r->method == HS_DISCOVER_EXACT ? "strongest edges (score = metric with the edge ablated - metric "
                                                      "of the model):\n"
                                                    : "strongest edges (score = the estimate of metric with the edge "
                                                      "corrupted - metric of the model):\n");
    for (size_t i = 0; i < k; i++) {
        char name[96];
        hs_graph_edge_name(&r->g, top[i], name, sizeof name);
        hs_buf_printf(b, "  %-22s ", name);
        hs_buf_fixed(b, r->scores[top[i]], 10, 4, 1);
        hs_buf_puts(b, r->in_circuit[top[i]] ? "  in the circuit\n" : "\n");
    }
    if (r->has_roc) {
        hs_buf_puts(b, "against the true circuit:\n");
        roc_line("edges", &r->roc.edges, r->roc.has_circuit, b);
        roc_line("nodes", &r->roc.nodes, r->roc.has_circuit, b);
    }
}

void hs_faith_summary(const hs_faith_report *r, hs_buf *b)
{
    char x[32], m[HS_FIXED_BUF];
    hs_buf_printf(b, "faithfulness (%s, %s ablation): %d prompts, %zu edges in the graph\n", hs_metric_names[r->metric],
                  hs_ablate_method_names[r->ablation], r->n_prompts, r->g.n_edges);
    ends_line(r->m_full, r->m_empty, r->usable, r->why, b);
    hs_buf_printf(b, "circuit (%zu in_graph edges, %zu after pruning): metric %s, faithfulness %s\n", r->n_in_file,
                  r->n_kept, hs_fmt_fixed(m, r->m_circuit, 4, 1), fmt_f(x, sizeof x, r->faithfulness));
    curve_summary(&r->curve, b);
}
