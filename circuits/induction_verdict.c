/*
 * circuits/induction_verdict.c -- the induction-circuit check's criteria (circuits.h,
 * "Induction circuit check"): the roles (previous-token and induction heads)
 * and each criterion's judgement over the evidence hs_ind_circuit_run
 * gathered (circuits/induction_circuit.c), the verdict, and beside them the
 * report's JSON and text summary.
 */
#include "circuits/circuits_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Criteria                                                                  */

/* Criterion k's judgement: r->ok[k] = ok, r->why[k] = the words (owned). */
static void set_ok(hs_ind_circuit_report *r, int k, int ok, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static void set_ok(hs_ind_circuit_report *r, int k, int ok, const char *fmt, ...)
{
    hs_buf b = {0};
    va_list ap;
    va_start(ap, fmt);
    hs_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    free(r->why[k]);
    r->why[k] = hs_buf_take(&b); /* NULL on OOM: hs_ind_verdicts checks */
    r->ok[k] = ok;
}

const hs_ind_head *hs_ind_named_prev(const hs_ind_circuit_report *r)
{
    return r->prev_best.layer >= 0 ? &r->heads[r->prev_best.head] : NULL;
}

const hs_ind_head *hs_ind_named_ind(const hs_ind_circuit_report *r)
{
    return r->ind_best.layer >= 0 ? &r->heads[r->ind_best.layer * r->H + r->ind_best.head] : NULL;
}

void hs_ind_find_roles(hs_ind_circuit_report *r)
{
    const hs_ind_circuit_opts *o = &r->opts;
    const int L = r->L, H = r->H;
    double best_p = -1.0, best_i = -1.0;
    for (int h = 0; h < H; h++) {
        hs_ind_head *hd = &r->heads[h];
        if (hd->prev_score >= o->prev_min) {
            hd->role |= 1;
            r->prev[r->n_prev++] = (hs_head){0, h};
        }
        if (hd->prev_score > best_p) best_p = hd->prev_score, r->prev_best = (hs_head){0, h};
    }
    for (int k = H; k < L * H; k++) {
        hs_ind_head *hd = &r->heads[k];
        if (hd->ind_score >= o->ind_min) {
            hd->role |= 2;
            r->ind[r->n_ind++] = (hs_head){hd->layer, hd->head};
        }
        if (hd->ind_score > best_i) best_i = hd->ind_score, r->ind_best = (hs_head){hd->layer, hd->head};
    }
    if (r->n_prev == 0) r->prev_best.layer = -1;
    if (r->n_ind == 0) r->ind_best.layer = -1;
    const hs_ind_head *P = hs_ind_named_prev(r), *I = hs_ind_named_ind(r);
    if (P)
        set_ok(r, HS_IND_PREV, 1, "previous-token head %s: score %.3f >= %.2f", P->name, P->prev_score,
               o->prev_min);
    else
        set_ok(r, HS_IND_PREV, 0, "no layer-0 head has a previous-token score >= %.2f (best %.3f)",
               o->prev_min, best_p);
    if (L < 2)
        set_ok(r, HS_IND_IND, 0, "one layer: an induction head reads a previous-token head's output through "
               "its keys (K-composition), so it needs an earlier layer; none can form");
    else if (!I)
        set_ok(r, HS_IND_IND, 0, "no head in layers >= 1 has an induction score >= %.2f (best %.3f)",
               o->ind_min, best_i);
    else
        set_ok(r, HS_IND_IND, 1, "induction head %s: induction score %.3f >= %.2f", I->name, I->ind_score,
               o->ind_min);
}

/* HS_IND_ABLATE: each role set's ablation removes >= ablate_frac of the
 * accuracy above chance. */
static void crit_ablate(hs_ind_circuit_report *r)
{
    const hs_ind_circuit_opts *o = &r->opts;
    if (r->n_prev == 0 || r->n_ind == 0) {
        set_ok(r, HS_IND_ABLATE, 0, "no previous-token / induction head pair to ablate");
        return;
    }
    /* the share of the accuracy above chance that each ablation removes */
    const double above = r->acc - r->chance;
    const double fp = above > 0 ? (r->acc - r->acc_prev_ablated) / above : 0.0;
    const double fi = above > 0 ? (r->acc - r->acc_ind_ablated) / above : 0.0;
    int ok = above > 0 && fp >= o->ablate_frac && fi >= o->ablate_frac;
    set_ok(r, HS_IND_ABLATE, ok,
           "accuracy %.1f%% -> %.1f%% without the previous-token head(s), %.1f%% without the induction "
           "head(s): %.0f%% and %.0f%% of the accuracy above chance (%.1f%%) removed (%s %.0f%%)",
           100 * r->acc, 100 * r->acc_prev_ablated, 100 * r->acc_ind_ablated, 100 * fp, 100 * fi,
           100 * r->chance, ok ? "both >=" : "not both >=", 100 * o->ablate_frac);
}

/* The named pair P -> I: HS_IND_COMP (K-composition above the baseline by
 * comp_min), HS_IND_PATH (the keys restore >= patch_k_min, queries and
 * values < patch_qv_max; undecided when the corruption moves the metric by
 * less than min_gap) and HS_IND_COPY (I's copying score >= copy_min). */
static void crit_pair(hs_ind_circuit_report *r, const hs_ind_head *P, const hs_ind_head *I)
{
    const hs_ind_circuit_opts *o = &r->opts;
    char f0[HS_FIXED_BUF], f1[HS_FIXED_BUF], f2[HS_FIXED_BUF];
    set_ok(r, HS_IND_COMP, r->comp_k >= o->comp_min,
           "K-composition %s -> %s: %s above the random baseline %.3f (%s %.2f; Q %s, V %s)",
           P->name, I->name, hs_fmt_fixed(f0, r->comp_k, 3, 0), r->comp.baseline, r->comp_k >= o->comp_min ? ">=" : "<",
           o->comp_min, hs_fmt_fixed(f1, r->comp_q, 3, 1), hs_fmt_fixed(f2, r->comp_v, 3, 1));
    const double gap = r->metric_clean - r->metric_corr;
    if (gap >= o->min_gap) {
        int ok = r->path[1] >= o->patch_k_min && fabs(r->path[0]) < o->patch_qv_max &&
                 fabs(r->path[2]) < o->patch_qv_max;
        set_ok(r, HS_IND_PATH, ok,
               "path patching the previous-token head%s (%s%s) -> %s restores %s via keys (%s %.2f), %s via "
               "queries, %s via values (%s %.2f)",
               r->n_prev > 1 ? "s" : "", P->name, r->n_prev > 1 ? " and the others" : "", I->name,
               hs_fmt_fixed(f1, r->path[1], 2, 0), r->path[1] >= o->patch_k_min ? ">=" : "<", o->patch_k_min,
               hs_fmt_fixed(f0, r->path[0], 2, 0), hs_fmt_fixed(f2, r->path[2], 2, 0),
               fabs(r->path[0]) < o->patch_qv_max && fabs(r->path[2]) < o->patch_qv_max ? "both |.| <"
                                                                                       : "not both |.| <",
               o->patch_qv_max);
    } else {
        set_ok(r, HS_IND_PATH, 0, "ablating the previous-token head%s moves the log-probability of the "
               "repeated tokens by only %s nats (< %.2f): patching cannot decide",
               r->n_prev > 1 ? "s" : "", hs_fmt_fixed(f0, gap, 2, 0), o->min_gap);
    }
    set_ok(r, HS_IND_COPY, I->copying >= o->copy_min, "OV copying score of %s: %s (%s %.2f; %.0f%% of "
           "eigenvalues positive)", I->name, hs_fmt_fixed(f0, I->copying, 3, 0), I->copying >= o->copy_min ? ">=" : "<",
           o->copy_min,
           100 * I->copying_pos);
}

/* The pair's criteria when there is no pair (one layer, or a role empty). */
static void crit_no_pair(hs_ind_circuit_report *r, const hs_ind_head *I)
{
    const char *why = r->L < 2 ? "one layer" : "no previous-token / induction head pair";
    set_ok(r, HS_IND_COMP, 0, "%s: no composition to measure", why);
    set_ok(r, HS_IND_PATH, 0, "%s: no path to patch", why);
    char f0[HS_FIXED_BUF];
    if (I)
        set_ok(r, HS_IND_COPY, I->copying >= r->opts.copy_min, "OV copying score of %s: %s", I->name,
               hs_fmt_fixed(f0, I->copying, 3, 0));
    else
        set_ok(r, HS_IND_COPY, 0, "%s: no induction head whose copying to score", why);
}

hs_status hs_ind_verdicts(hs_ind_circuit_report *r, hs_error *err)
{
    const hs_ind_head *P = hs_ind_named_prev(r), *I = hs_ind_named_ind(r);
    crit_ablate(r);
    if (P && I)
        crit_pair(r, P, I);
    else
        crit_no_pair(r, I);
    r->holds = 1;
    for (int k = 0; k < HS_IND_N_CRIT; k++) r->holds &= r->ok[k];
    for (int k = 0; k < HS_IND_N_CRIT; k++)
        if (r->why[k] == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    hs_buf vb = {0};
    if (r->holds) {
        hs_buf_printf(&vb, "HOLDS: previous-token head %s -> induction head %s", P->name, I->name);
    } else {
        int first = 0;
        while (first < HS_IND_N_CRIT && r->ok[first]) first++;
        if (r->L < 2) first = HS_IND_IND; /* the reason that decides it */
        hs_buf_printf(&vb, "does not hold: %s", r->why[first]);
    }
    if ((r->verdict = hs_buf_take(&vb)) == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* JSON and summary                                                          */

/* The "heads" array: every head's scores and roles. Returns 0 on OOM. */
static int json_heads(cJSON *o, const hs_ind_circuit_report *r)
{
    cJSON *hs = cJSON_AddArrayToObject(o, "heads");
    int ok = hs != NULL;
    for (int k = 0; ok && k < r->L * r->H; k++) {
        const hs_ind_head *h = &r->heads[k];
        cJSON *x = hs_circ_json_array_object(hs);
        ok = x && cJSON_AddStringToObject(x, "name", h->name) && hs_circ_json_num(x, "layer", h->layer) &&
             hs_circ_json_num(x, "head", h->head) &&
             hs_circ_json_num(x, "previous_token_score", h->prev_score) &&
             hs_circ_json_num(x, "induction_score", h->ind_score) &&
             hs_circ_json_num(x, "tl_induction_score", h->tl_induction) &&
             hs_circ_json_num(x, "copying", h->copying) &&
             hs_circ_json_num(x, "copying_positive_fraction", h->copying_pos) &&
             hs_circ_json_num(x, "accuracy_ablated", h->acc_ablated) &&
             cJSON_AddBoolToObject(x, "previous_token_head", h->role & 1) &&
             cJSON_AddBoolToObject(x, "induction_head", (h->role & 2) != 0);
    }
    return ok;
}

static const char *const CRIT_NAMES[HS_IND_N_CRIT] = {"previous_token_head", "induction_head",
                                                      "k_composition", "path_patching",
                                                      "copying", "ablation"};

hs_status hs_ind_circuit_report_json(const hs_ind_circuit_report *r, const char *model_path,
                                     char **json, hs_error *err)
{
    *json = NULL;
    cJSON *o = cJSON_CreateObject();
    int ok = o != NULL;
    char nm[32];
    if (ok && model_path) ok = cJSON_AddStringToObject(o, "model", model_path) != NULL;
    ok = ok && cJSON_AddStringToObject(o, "task", "induction") && cJSON_AddBoolToObject(o, "holds", r->holds) &&
         cJSON_AddStringToObject(o, "verdict", r->verdict);
    if (ok) {
        snprintf(nm, sizeof nm, "L%dH%d", r->prev_best.layer, r->prev_best.head);
        ok = r->prev_best.layer >= 0 ? cJSON_AddStringToObject(o, "previous_token_head", nm) != NULL
                                     : cJSON_AddNullToObject(o, "previous_token_head") != NULL;
    }
    if (ok) {
        snprintf(nm, sizeof nm, "L%dH%d", r->ind_best.layer, r->ind_best.head);
        ok = r->ind_best.layer >= 0 ? cJSON_AddStringToObject(o, "induction_head", nm) != NULL
                                    : cJSON_AddNullToObject(o, "induction_head") != NULL;
    }
    cJSON *cr = ok ? cJSON_AddObjectToObject(o, "criteria") : NULL;
    ok = cr != NULL;
    for (int k = 0; ok && k < HS_IND_N_CRIT; k++) {
        cJSON *x = cJSON_AddObjectToObject(cr, CRIT_NAMES[k]);
        ok = x && cJSON_AddBoolToObject(x, "holds", r->ok[k]) && cJSON_AddStringToObject(x, "evidence", r->why[k]);
    }
    const hs_ind_circuit_opts *op = &r->opts;
    cJSON *th = ok ? cJSON_AddObjectToObject(o, "thresholds") : NULL;
    ok = th && hs_circ_json_num(th, "prev_min", op->prev_min) && hs_circ_json_num(th, "ind_min", op->ind_min) &&
         hs_circ_json_num(th, "comp_min", op->comp_min) &&
         hs_circ_json_num(th, "patch_k_min", op->patch_k_min) &&
         hs_circ_json_num(th, "patch_qv_max", op->patch_qv_max) &&
         hs_circ_json_num(th, "min_gap", op->min_gap) && hs_circ_json_num(th, "copy_min", op->copy_min) &&
         hs_circ_json_num(th, "ablate_frac", op->ablate_frac) && hs_circ_json_num(th, "n_seqs", op->n_seqs) &&
         hs_circ_json_num(th, "comp_draws", op->comp_draws);
    const hs_ind_params *tp = &r->task;
    cJSON *ta = ok ? cJSON_AddObjectToObject(o, "task_params") : NULL;
    ok = ta && hs_circ_json_num(ta, "n_symbols", tp->n_symbols) && hs_circ_json_num(ta, "n_ctx", tp->n_ctx) &&
         hs_circ_json_num(ta, "seg_min", tp->seg_min) && hs_circ_json_num(ta, "seg_max", tp->seg_max) &&
         hs_circ_json_num(ta, "gap_min", tp->gap_min) && hs_circ_json_num(ta, "gap_max", tp->gap_max) &&
         hs_circ_json_num(ta, "split_seed", (double)tp->split_seed) &&
         hs_circ_json_num(ta, "n_heldout", tp->n_heldout);
    const hs_config *c = &r->cfg;
    cJSON *cf = ok ? cJSON_AddObjectToObject(o, "config") : NULL;
    ok = cf && hs_circ_json_num(cf, "n_layers", c->n_layers) && hs_circ_json_num(cf, "d_model", c->d_model) &&
         hs_circ_json_num(cf, "n_heads", c->n_heads) && hs_circ_json_num(cf, "d_head", c->d_head) &&
         hs_circ_json_num(cf, "d_mlp", c->d_mlp) && hs_circ_json_num(cf, "n_ctx", c->n_ctx) &&
         hs_circ_json_num(cf, "d_vocab", c->d_vocab) && cJSON_AddStringToObject(cf, "norm", hs_norm_name(c->norm));
    ok = ok && hs_circ_json_num(o, "n_seqs", (double)r->n_seqs) &&
         hs_circ_json_num(o, "n_scored", (double)r->n_scored) && hs_circ_json_num(o, "accuracy", r->acc) &&
         hs_circ_json_num(o, "segment_loss", r->seg_loss) && hs_circ_json_num(o, "loss", r->loss) &&
         hs_circ_json_num(o, "icl_score", r->icl_score) && hs_circ_json_num(o, "chance", r->chance) &&
         hs_circ_json_num(o, "composition_baseline", r->comp.n_draws ? r->comp.baseline : NAN) &&
         hs_circ_json_num(o, "composition_baseline_std", r->comp.n_draws ? r->comp.baseline_std : NAN) &&
         hs_circ_json_num(o, "composition_q_minus_baseline", r->comp_q) &&
         hs_circ_json_num(o, "composition_k_minus_baseline", r->comp_k) &&
         hs_circ_json_num(o, "composition_v_minus_baseline", r->comp_v) &&
         hs_circ_json_num(o, "metric_clean", r->metric_clean) &&
         hs_circ_json_num(o, "metric_corrupted", r->metric_corr);
    cJSON *pp = ok ? cJSON_AddObjectToObject(o, "path_patching") : NULL;
    ok = pp && hs_circ_json_num(pp, "q", r->path[0]) && hs_circ_json_num(pp, "k", r->path[1]) &&
         hs_circ_json_num(pp, "v", r->path[2]);
    ok = ok && hs_circ_json_num(o, "accuracy_previous_token_heads_ablated", r->acc_prev_ablated) &&
         hs_circ_json_num(o, "accuracy_induction_heads_ablated", r->acc_ind_ablated) &&
         hs_circ_json_head_list(o, "previous_token_heads", r->prev, r->n_prev) &&
         hs_circ_json_head_list(o, "induction_heads", r->ind, r->n_ind);
    ok = ok && (!r->disc.ran || hs_circ_discovery_json(o, &r->disc)) && json_heads(o, r);
    if (ok) *json = hs_json_print(o);
    cJSON_Delete(o);
    return *json ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
}

hs_status hs_ind_circuit_summary(const hs_ind_circuit_report *r, char **text, hs_error *err)
{
    hs_buf b = {0};
    /* a subset: train's held-out accuracy is on all of them, so say which */
    hs_buf_printf(&b, "induction circuit, %d layer%s x %d heads, on ", r->L, r->L == 1 ? "" : "s", r->H);
    if (r->n_seqs < (size_t)r->task.n_heldout)
        hs_buf_printf(&b, "the first %zu of the %d held-out sequences (train's accuracy: all %d; ", r->n_seqs,
                      r->task.n_heldout, r->task.n_heldout);
    else
        hs_buf_printf(&b, "%zu held-out sequences (", r->n_seqs);
    hs_buf_printf(&b, "%zu repeated-segment tokens scored; %d symbols, context %d, segment %d..%d, gap %d..%d)\n",
                  r->n_scored, r->task.n_symbols, r->task.n_ctx, r->task.seg_min, r->task.seg_max,
                  r->task.gap_min, r->task.gap_max);
    char icl[HS_FIXED_BUF];
    hs_buf_printf(&b, "repeated-segment accuracy %.1f%% (chance %.1f%%), segment loss %.3f, loss %.3f, "
                  "in-context-learning score %s nats\n",
                  100 * r->acc, 100 * r->chance, r->seg_loss, r->loss, hs_fmt_fixed(icl, r->icl_score, 3, 1));
    hs_buf_printf(&b, "\nhead   prev-token  induction  (TL mul)  copying  acc. ablated  role\n");
    for (int k = 0; k < r->L * r->H; k++) {
        const hs_ind_head *h = &r->heads[k];
        hs_buf_printf(&b, "%-6s ", h->name);
        hs_buf_fixed(&b, h->prev_score, 10, 3, 0);
        hs_buf_puts(&b, " ");
        hs_buf_fixed(&b, h->ind_score, 10, 3, 0);
        hs_buf_puts(&b, " ");
        hs_buf_fixed(&b, h->tl_induction, 9, 3, 0);
        hs_buf_puts(&b, " ");
        hs_buf_fixed(&b, h->copying, 8, 3, 0);
        hs_buf_puts(&b, " ");
        hs_buf_fixed(&b, 100 * h->acc_ablated, 12, 1, 0);
        hs_buf_printf(&b, "%%  %s\n",
                      h->role == 1 ? "previous-token" : h->role == 2 ? "induction" : h->role == 3 ? "both" : "-");
    }
    hs_buf_printf(&b, "\n");
    for (int k = 0; k < HS_IND_N_CRIT; k++)
        hs_buf_printf(&b, "[%s] %s\n", r->ok[k] ? "ok" : "no", r->why[k]);
    hs_buf_printf(&b, "\nverdict: %s\n", r->verdict);
    if (r->disc.ran) hs_circ_discovery_summary(&b, &r->disc);
    char *s = hs_buf_take(&b);
    *text = s;
    return s ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
}
