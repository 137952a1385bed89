/*
 * discovery/discover.c -- `headscope discover` and `headscope
 * faithfulness` as library calls (discovery.h, "Circuit discovery"):
 * score every edge (exact patching, ACDC, EAP or EAP-IG), choose the
 * circuit, run it and the faithfulness curve, compare with a true circuit,
 * write the folder (its figures: discovery/discover_figs.c).
 */
#include "discovery/discovery.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const hs_discover_method_names[HS_DISCOVER_N] = {"exact", "acdc", "eap", "eap-ig"};
/* The methods as the figures and the summary name them. */
static const char *const METHOD_TITLES[HS_DISCOVER_N] = {"exact patching", "ACDC", "EAP", "EAP-IG"};

int hs_discover_method_parse(const char *s)
{
    for (int k = 0; k < HS_DISCOVER_N; k++)
        if (strcmp(s, hs_discover_method_names[k]) == 0) return k;
    return -1;
}

hs_discover_opts hs_discover_opts_default(void)
{
    hs_discover_opts o;
    memset(&o, 0, sizeof o);
    o.method = HS_DISCOVER_EXACT;
    o.metric = HS_METRIC_LOGIT_DIFF;
    o.ablation = HS_ABLATE_RESAMPLE;
    o.top_n = -1;
    o.threshold = NAN;
    o.tau = NAN;
    return o;
}

void hs_discover_report_free(hs_discover_report *r)
{
    if (r == NULL) return;
    hs_graph_free(&r->g);
    free(r->scores);
    free(r->in_circuit);
    hs_roc_free(&r->roc);
    memset(r, 0, sizeof *r);
}

void hs_faith_report_free(hs_faith_report *r)
{
    if (r == NULL) return;
    hs_graph_free(&r->g);
    free(r->scores);
    free(r->in_circuit);
    memset(r, 0, sizeof *r);
}

/* The scores of the method (one case a method); EAP's and EAP-IG's passes
 * (per chunk: EAP a clean and a corrupted forward and one backward, EAP-IG a
 * clean forward and ig_steps forwards and backwards) into r. */
static hs_status method_scores(const hs_model *m, hs_pool *pool, const hs_prompts *p, hs_circeval *ce,
                               const hs_discover_opts *o, hs_discover_report *r, hs_error *err)
{
    const long chunks = hs_engine_chunks(p->n);
    switch (o->method) {
    case HS_DISCOVER_EXACT: return hs_edge_patch_scores(ce, r->scores, err);
    case HS_DISCOVER_ACDC: {
        const hs_acdc_opts ao = {r->tau, o->acdc_abs, o->acdc_headscope_order};
        return hs_acdc_run(ce, &ao, r->in_circuit, r->scores, &r->acdc, err);
    }
    case HS_DISCOVER_EAP:
    case HS_DISCOVER_EAP_IG:
    {
        /* the clean run, the corrupted run (resample), the interpolated runs (EAP-IG; resample's k = 0 is the
         * corrupted run), the means (mean) */
        const int rs = o->ablation == HS_ABLATE_RESAMPLE;
        const hs_eap_opts eo = {o->metric, o->ablation, r->ig_steps, r->ig_right};
        r->forwards = chunks * (1 + rs + (r->ig_steps ? r->ig_steps - (rs && !r->ig_right) : 0) +
                                (o->ablation == HS_ABLATE_MEAN));
        r->backwards = chunks * (r->ig_steps ? r->ig_steps : 1);
        return hs_eap_run(m, pool, p, &r->g, &eo, r->scores, err);
    }
    case HS_DISCOVER_N: break;
    }
    return hs_fail(err, HS_ERR_INPUT, "discover: unknown method %d", (int)o->method);
}

/* The circuit: ACDC's kept edges, or the first n edges of o->select's
 * order / the threshold of the scores (default MIB's 5 % size), pruned. */
static hs_status choose_circuit(const hs_discover_opts *o, hs_discover_report *r, hs_error *err)
{
    if (o->method == HS_DISCOVER_ACDC) {
        snprintf(r->chosen_by, sizeof r->chosen_by, "ACDC with tau %g%s%s", r->tau,
                 r->acdc_abs ? ", |change|" : "", r->acdc_headscope_order ? ", headscope's order" : "");
        return hs_circuit_prune(&r->g, r->in_circuit, NULL, &r->n_kept, err);
    }
    long top = o->top_n;
    if (top < 0 && !(o->threshold >= 0)) {
        top = (long)hs_faith_top_n(0.05, r->g.n_edges);
        if (top < 1) top = 1;
    }
    if (top < 0) {
        snprintf(r->chosen_by, sizeof r->chosen_by, "|score| >= %g", o->threshold);
        return hs_circuit_select(&r->g, r->scores, top, o->threshold, r->in_circuit, &r->n_kept, err);
    }
    if (o->select == HS_SELECT_GREEDY)
        snprintf(r->chosen_by, sizeof r->chosen_by, "%ld edges grown greedily from logits by |score|", top);
    else if (o->select == HS_SELECT_SIGNED)
        snprintf(r->chosen_by, sizeof r->chosen_by, "the %ld edges lowering the metric most", top);
    else snprintf(r->chosen_by, sizeof r->chosen_by, "the top %ld edges by |score|", top);
    if ((size_t)top > r->g.n_edges)
        return hs_fail(err, HS_ERR_INPUT, "top %ld edges asked for, but the graph has %zu", top, r->g.n_edges);
    return hs_circuit_choose(&r->g, r->scores, o->select, (size_t)top, r->in_circuit, &r->n_kept, err);
}

/* m(C) of the chosen circuit and its faithfulness. */
static hs_status run_circuit(hs_circeval *ce, const unsigned char *in_circuit, double *m, double *f, hs_error *err)
{
    const unsigned char *one[1] = {in_circuit};
    hs_status st = hs_circeval_metrics(ce, 1, one, m, err);
    if (st == HS_OK) *f = hs_faithfulness(*m, hs_circeval_full(ce), hs_circeval_empty(ce));
    return st;
}

/* A report's faithfulness not usable when its curve's is not for a small
 * gap |m(M) - m(empty)| (hs_faith_curve_run; the 0 / 0 case was said
 * before): the why taken over, the circuit's faithfulness NAN, a note. */
static void small_gap(int *usable, char *why, double *faithfulness, const hs_faith_curve *c,
                      const hs_notes *notes)
{
    if (!*usable || c->usable) return;
    *usable = 0;
    snprintf(why, HS_FAITH_WHY, "%s", c->why);
    *faithfulness = NAN;
    hs_note(notes, HS_NOTE_CMD, "note: faithfulness is not usable: %s", why);
}

/* The figures of the discover folder: the circuit, its faithfulness curve
 * (when defined), and with html the first prompt's attention for the page. */
static hs_status discover_figures(const hs_model *m, const hs_prompts *p, const hs_discover_opts *o,
                                  const hs_notes *notes, const hs_discover_report *r, hs_outdir *od, hs_error *err)
{
    char title[200], f[HS_FIXED_BUF];
    const char *mt = METHOD_TITLES[r->method];
    if (isnan(r->faithfulness)) snprintf(f, sizeof f, "undefined");
    else hs_fmt_fixed(f, r->faithfulness, 2, 0);
    snprintf(title, sizeof title, "%s circuit (%s, then pruned): %zu of %zu edges, faithfulness %.31s", mt,
             r->chosen_by, r->n_kept, r->g.n_edges, f);
    hs_status st = hs_graph_figure_write(od, "circuit", &r->g, r->scores, r->in_circuit, title,
                                         "the circuit: layers bottom to top, edge width by |score|, colour by "
                                         "sign, each edge into its head's q, k or v", err);
    if (st == HS_OK && !r->curve.usable)
        hs_note(notes, HS_NOTE_CMD, "note: no faithfulness_curve figure: faithfulness is undefined");
    if (st == HS_OK && r->curve.usable) {
        const hs_faith_curve *c[1] = {&r->curve};
        const char *name[1] = {mt};
        snprintf(title, sizeof title, "faithfulness of the %s by %s score (%s, %s ablation)",
                 r->select == HS_SELECT_GREEDY ? "edges grown greedily from logits"
                 : r->select == HS_SELECT_SIGNED ? "edges lowering the metric most" : "top edges", mt,
                 hs_metric_names[r->metric], hs_ablate_method_names[r->ablation]);
        st = hs_faith_figure_write(od, "faithfulness_curve", c, name, 1, title,
                                   "normalised faithfulness over circuit size (MIB's sizes, % of the edges)", err);
    }
    if (st == HS_OK && od->fo->html) {
        cJSON *pk = NULL, *nest = NULL;
        char at[64];
        snprintf(at, sizeof at, "the first prompt (line %d)", p->line[0]);
        st = hs_prompt_attention_json(m, p->clean, p->t, o->tok, at, o->model_path, 1, &pk, err);
        if (st == HS_OK) st = hs_outdir_page(od, "attention", pk, err);
        if (st == HS_OK) st = hs_prompt_attention_json(m, p->clean, p->t, o->tok, at, o->model_path, 0, &nest, err);
        if (st == HS_OK)
            st = hs_outdir_json(od, "attention", nest, "every head's attention on the first prompt "
                                "[L*H, t, t] (the page's circuit view shows a head's on a click)", err);
        cJSON_Delete(nest);
    }
    return st;
}

/* The discover folder: graph.json, faithfulness.json, circuit.dot, roc.json,
 * the figures. */
static hs_status discover_write(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_discover_opts *o,
                                const hs_notes *notes, hs_discover_report *r, hs_error *err)
{
    hs_figopts def;
    hs_figopts_default(&def, 300);
    hs_figopts *fo = o->fo ? o->fo : &def;
    hs_outdir od;
    const char *inputs[] = {o->model_path, o->data_path, o->truth, NULL};
    hs_buf dot = {0};
    cJSON *fj = NULL, *rj = NULL, *extra = NULL, *ctx = NULL;
    hs_status st = hs_figopts_font_open(fo, err);
    if (st == HS_OK) st = hs_outdir_open(&od, "discover", o->out, fo, inputs, pool, notes, err);
    if (st != HS_OK) {
        hs_figopts_free(&def);
        return st;
    }
    if ((ctx = hs_run_context(&m->cfg, o->model_path)) == NULL) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    od.context = ctx;
    if (st == HS_OK)
        st = hs_graph_json_write(&od, &r->g, &m->cfg, r->scores, r->in_circuit, "every edge's score and the circuit "
                                 "(in_graph), as EAP-IG's Graph.to_json writes it", err);
    if (st == HS_OK && (fj = hs_discover_curve_json(r)) == NULL) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (st == HS_OK)
        st = hs_outdir_json(&od, "faithfulness", fj, "normalised faithfulness at MIB's circuit sizes, CPR and CMD, "
                            "and the circuit's own", err);
    if (st == HS_OK) st = hs_circuit_dot(&r->g, r->scores, r->in_circuit, &dot, err);
    if (st == HS_OK)
        st = hs_outdir_file(&od, "circuit.dot", "dot", dot.s, dot.len, "the circuit as a Graphviz digraph", err);
    if (st == HS_OK && r->has_roc && (rj = hs_roc_json(&r->roc)) == NULL) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (st == HS_OK && rj)
        st = hs_outdir_json(&od, "roc", rj, "ROC curves of the edge and node scores against the true circuit", err);
    if (st == HS_OK) st = discover_figures(m, p, o, notes, r, &od, err);
    extra = st == HS_OK ? cJSON_CreateObject() : NULL;
    if (st == HS_OK && (!extra || !cJSON_AddStringToObject(extra, "method", hs_discover_method_names[o->method]) ||
                        !cJSON_AddStringToObject(extra, "metric", hs_metric_names[o->metric]) ||
                        !cJSON_AddStringToObject(extra, "ablation", hs_ablate_method_names[o->ablation]) ||
                        (o->model_path && !cJSON_AddStringToObject(extra, "model", o->model_path))))
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (st == HS_OK) st = hs_outdir_commit(&od, extra, err);
    if (st == HS_OK) r->n_files = hs_outdir_n_files(&od);
    od.context = NULL;
    hs_outdir_close(&od);
    hs_figopts_free(&def);
    cJSON_Delete(ctx);
    hs_buf_free(&dot);
    cJSON_Delete(fj);
    cJSON_Delete(rj);
    cJSON_Delete(extra);
    return st;
}

static hs_status discover_check(const hs_model *m, const hs_discover_opts *o, hs_error *err)
{
    (void)m;
    if ((int)o->method < 0 || o->method >= HS_DISCOVER_N) return hs_fail(err, HS_ERR_INPUT, "discover: unknown method");
    if (o->method == HS_DISCOVER_ACDC && (o->top_n >= 0 || !isnan(o->threshold)))
        return hs_fail(err, HS_ERR_INPUT, "--top and --threshold choose a circuit from scores; ACDC's circuit is the "
                       "edges it keeps (set --tau)");
    if (o->method != HS_DISCOVER_ACDC && !isnan(o->tau))
        return hs_fail(err, HS_ERR_INPUT, "--tau is ACDC's threshold (--method acdc)");
    if (o->method != HS_DISCOVER_ACDC && (o->acdc_abs || o->acdc_headscope_order))
        return hs_fail(err, HS_ERR_INPUT, "--abs-threshold and --acdc-order are ACDC's (--method acdc)");
    if (o->ig_steps != 0 && o->method != HS_DISCOVER_EAP_IG)
        return hs_fail(err, HS_ERR_INPUT, "--ig-steps is EAP-IG's (--method eap-ig)");
    if (o->ig_right && o->method != HS_DISCOVER_EAP_IG)
        return hs_fail(err, HS_ERR_INPUT, "--ig-alphas is EAP-IG's (--method eap-ig)");
    if (o->ig_steps < 0 || o->ig_steps > 1000)
        return hs_fail(err, HS_ERR_INPUT, "--ig-steps needs a count in 1..1000, got %d", o->ig_steps);
    if (o->method == HS_DISCOVER_EAP && o->metric == HS_METRIC_KL)
        return hs_fail(err, HS_ERR_INPUT, "EAP with the kl metric scores every edge 0 (the KL divergence's "
                       "gradient at the clean run is exactly 0); use --method eap-ig");
    if (!isnan(o->tau) && !(o->tau >= 0 && isfinite(o->tau)))
        return hs_fail(err, HS_ERR_INPUT, "--tau needs a finite number >= 0");
    if (o->top_n >= 0 && !isnan(o->threshold)) return hs_fail(err, HS_ERR_INPUT, "give --top or --threshold, not both");
    if ((unsigned)o->select >= HS_SELECT_N) return hs_fail(err, HS_ERR_INPUT, "discover: unknown circuit selection");
    if (o->select != HS_SELECT_TOPN && !isnan(o->threshold))
        return hs_fail(err, HS_ERR_INPUT, "--select %s chooses a number of edges (--top N), not a threshold",
                       hs_select_names[o->select]);
    if (!isnan(o->threshold) && !(o->threshold >= 0 && isfinite(o->threshold)))
        return hs_fail(err, HS_ERR_INPUT, "--threshold needs a finite number >= 0");
    return HS_OK;
}

hs_status hs_discover_run(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_discover_opts *o,
                          const hs_notes *notes, hs_discover_report *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    hs_discover_report *r = out;
    hs_circeval *ce = NULL;
    unsigned char *truth = NULL;
    hs_status st = discover_check(m, o, err);
    if (st == HS_OK) st = hs_graph_build(&m->cfg, &r->g, err);
    r->method = o->method;
    r->tau = isnan(o->tau) ? HS_ACDC_TAU : o->tau;
    r->acdc_abs = o->method == HS_DISCOVER_ACDC && o->acdc_abs;
    r->acdc_headscope_order = o->method == HS_DISCOVER_ACDC && o->acdc_headscope_order;
    r->ig_steps = o->method != HS_DISCOVER_EAP_IG ? 0 : o->ig_steps > 0 ? o->ig_steps : HS_EAP_IG_STEPS;
    r->ig_right = o->method == HS_DISCOVER_EAP_IG && o->ig_right;
    r->metric = o->metric;
    r->ablation = o->ablation;
    r->select = o->select;
    r->n_prompts = p->n;
    const size_t E = r->g.n_edges;
    if (st == HS_OK) {
        r->scores = calloc(E ? E : 1, sizeof *r->scores);
        r->in_circuit = calloc(E ? E : 1, 1);
        truth = o->truth ? calloc(E ? E : 1, 1) : NULL;
        if (!r->scores || !r->in_circuit || (o->truth && !truth)) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    if (st == HS_OK && o->truth) st = hs_truth_load(&r->g, &m->cfg, o->truth, truth, err);
    hs_model *ug = NULL; /* grouped-query attention: the graph's per-query-head k, v receivers */
    if (st == HS_OK && hs_kv_heads(&m->cfg) != m->cfg.n_heads) st = hs_model_ungrouped(m, &ug, err);
    const hs_model *run = ug ? ug : m;
    if (st == HS_OK) st = hs_circeval_create(run, pool, p, &r->g, o->metric, o->ablation, &ce, err);
    if (st == HS_OK) {
        r->m_full = hs_circeval_full(ce);
        r->m_empty = hs_circeval_empty(ce);
        hs_faith_usable(r->m_full, r->m_empty, o->metric, &r->usable, r->why, sizeof r->why);
        if (!r->usable) hs_note(notes, HS_NOTE_CMD, "note: faithfulness is undefined: %s", r->why);
        /* a higher-is-better metric the full model does worse on than the empty circuit (answer and
           wrong swapped, or a model that does not do the task): as patch's hs_patch_gap_note */
        char mf[HS_FIXED_BUF], me[HS_FIXED_BUF];
        if (r->usable && o->metric != HS_METRIC_KL && r->m_full < r->m_empty)
            hs_note(notes, HS_NOTE_CMD, "note: m(M) %s is below m(empty) %s (mean %s): the full model "
                    "favours the answer less than the ablated run does (answer and wrong swapped, or a "
                    "model that does not do the task), so faithfulness measures the way to a worse "
                    "metric and may pass 1", hs_fmt_fixed(mf, r->m_full, 4, 1), hs_fmt_fixed(me, r->m_empty, 4, 1),
                    hs_metric_names[o->metric]);
        st = method_scores(run, pool, p, ce, o, r, err);
        if (r->method == HS_DISCOVER_EXACT || r->method == HS_DISCOVER_ACDC) r->forwards = hs_circeval_forwards(ce);
    }
    if (st == HS_OK) st = choose_circuit(o, r, err);
    if (st == HS_OK) st = run_circuit(ce, r->in_circuit, &r->m_circuit, &r->faithfulness, err);
    if (st == HS_OK) st = hs_faith_curve_run(ce, r->scores, o->select, &r->curve, err);
    if (st == HS_OK) small_gap(&r->usable, r->why, &r->faithfulness, &r->curve, notes);
    if (st == HS_OK && truth) {
        r->has_roc = 1;
        st = hs_roc_run(&r->g, r->scores, truth, r->in_circuit, &r->roc, err);
    }
    hs_circeval_destroy(ce);
    free(ug);
    free(truth);
    if (st == HS_OK && o->out) st = discover_write(m, pool, p, o, notes, r, err);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Scoring a circuit found elsewhere                                         */

/* The faithfulness folder's figures: the graph's pruned circuit and the
 * curve of its scores (when faithfulness is defined). */
static hs_status faith_figures(const hs_faith_opts *o, const hs_notes *notes, const hs_faith_report *r,
                               hs_outdir *od, hs_error *err)
{
    char title[240], f[HS_FIXED_BUF];
    if (isnan(r->faithfulness)) snprintf(f, sizeof f, "undefined");
    else hs_fmt_fixed(f, r->faithfulness, 2, 0);
    const char *base = strrchr(o->graph, '/');
    snprintf(title, sizeof title, "circuit of %.120s: %zu of %zu edges, faithfulness %.31s", base ? base + 1 : o->graph,
             r->n_kept, r->g.n_edges, f);
    hs_status st = hs_graph_figure_write(od, "circuit", &r->g, r->scores, r->in_circuit, title,
                                         "the graph.json's circuit, pruned: layers bottom to top, edge width by "
                                         "|score|, colour by sign, each edge into its head's q, k or v", err);
    if (st == HS_OK && !r->curve.usable)
        hs_note(notes, HS_NOTE_CMD, "note: no faithfulness_curve figure: faithfulness is undefined");
    if (st == HS_OK && r->curve.usable) {
        const hs_faith_curve *c[1] = {&r->curve};
        const char *name[1] = {"graph.json"};
        snprintf(title, sizeof title, "faithfulness of the %s by the graph's scores (%s, %s ablation)",
                 o->select == HS_SELECT_GREEDY ? "edges grown greedily from logits"
                 : o->select == HS_SELECT_SIGNED ? "edges lowering the metric most" : "top edges",
                 hs_metric_names[o->metric], hs_ablate_method_names[o->ablation]);
        st = hs_faith_figure_write(od, "faithfulness_curve", c, name, 1, title,
                                   "normalised faithfulness over circuit size (MIB's sizes, % of the edges)", err);
    }
    return st;
}

hs_status hs_faithfulness_run(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_faith_opts *o,
                              const hs_notes *notes, hs_faith_report *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    hs_faith_report *r = out;
    r->metric = o->metric;
    r->ablation = o->ablation;
    r->n_prompts = p->n;
    hs_circeval *ce = NULL;
    hs_status st = (unsigned)o->select < HS_SELECT_N ? hs_graph_build(&m->cfg, &r->g, err)
                   : hs_fail(err, HS_ERR_INPUT, "faithfulness: unknown circuit selection");
    const size_t E = r->g.n_edges;
    if (st == HS_OK) {
        r->scores = calloc(E ? E : 1, sizeof *r->scores);
        r->in_circuit = calloc(E ? E : 1, 1);
        if (!r->scores || !r->in_circuit) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    if (st == HS_OK) st = hs_graph_json_load(&r->g, &m->cfg, o->graph, r->scores, r->in_circuit, err);
    for (size_t e = 0; e < E && st == HS_OK; e++) r->n_in_file += r->in_circuit[e];
    if (st == HS_OK) st = hs_circuit_prune(&r->g, r->in_circuit, NULL, &r->n_kept, err);
    if (st == HS_OK && r->n_kept < r->n_in_file)
        hs_note(notes, HS_NOTE_CMD, "note: %zu of the graph's %zu in_graph edges lie on no path from input to logits "
                "and are left out (EAP-IG's Graph.prune)", r->n_in_file - r->n_kept, r->n_in_file);
    hs_model *ug = NULL; /* grouped-query attention: per-query-head k, v receivers */
    if (st == HS_OK && hs_kv_heads(&m->cfg) != m->cfg.n_heads) st = hs_model_ungrouped(m, &ug, err);
    if (st == HS_OK) st = hs_circeval_create(ug ? ug : m, pool, p, &r->g, o->metric, o->ablation, &ce, err);
    if (st == HS_OK) {
        r->m_full = hs_circeval_full(ce);
        r->m_empty = hs_circeval_empty(ce);
        hs_faith_usable(r->m_full, r->m_empty, o->metric, &r->usable, r->why, sizeof r->why);
        if (!r->usable) hs_note(notes, HS_NOTE_CMD, "note: faithfulness is undefined: %s", r->why);
        st = run_circuit(ce, r->in_circuit, &r->m_circuit, &r->faithfulness, err);
    }
    if (st == HS_OK) st = hs_faith_curve_run(ce, r->scores, o->select, &r->curve, err);
    if (st == HS_OK) small_gap(&r->usable, r->why, &r->faithfulness, &r->curve, notes);
    hs_circeval_destroy(ce);
    free(ug);
    if (st != HS_OK || !o->out) return st;
    hs_figopts def;
    hs_figopts_default(&def, 300);
    hs_figopts *fo = o->fo ? o->fo : &def;
    hs_outdir od;
    const char *inputs[] = {o->model_path, o->data_path, o->graph, NULL};
    cJSON *fj = hs_faith_report_json(r);
    st = fj ? hs_figopts_font_open(fo, err) : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (st == HS_OK) st = hs_outdir_open(&od, "faithfulness", o->out, fo, inputs, pool, notes, err);
    if (st == HS_OK) {
        st = hs_outdir_json(&od, "faithfulness", fj, "the circuit's normalised faithfulness, and the curve of its "
                            "scores at MIB's circuit sizes with CPR and CMD", err);
        if (st == HS_OK) st = faith_figures(o, notes, r, &od, err);
        if (st == HS_OK) st = hs_outdir_commit(&od, NULL, err);
        if (st == HS_OK) r->n_files = hs_outdir_n_files(&od);
        hs_outdir_close(&od);
    }
    hs_figopts_free(&def);
    cJSON_Delete(fj);
    return st;
}
