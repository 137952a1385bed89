/*
 * circuits/induction_figs.c -- the output folder of the induction-circuit
 * check (`headscope circuit --out DIR` on an induction model): report.json,
 * its figures and index.json, from an hs_ind_circuit_report (circuits.h,
 * "Writing a circuit check's folder"). Holds no analysis: every number is the
 * report's.
 */
#include "circuits/circuits.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiments/experiments.h"

static hs_status oom(hs_error *err)
{
    return hs_fail(err, HS_ERR_NOMEM, "out of memory");
}

/* The named heads' attention on held-out sequence 0, side by side. */
static hs_status attention_fig(const hs_ind_circuit_report *r, const hs_induction *t,
                               const char *model_path, hs_outdir *od, hs_error *err)
{
    const int T = t->p.n_ctx;
    if (!r->attn_prev || T > HS_VIZ_MAX_TOKENS) return HS_OK;
    const hs_figopts *fo = od->fo;
    float *pat = malloc((size_t)2 * T * T * sizeof *pat);
    hs_labels lab;
    hs_labels_init(&lab, (size_t)T);
    for (int i = 0; i < T; i++) { /* each token as figures show it (hs_tok_display) */
        hs_buf d = {0};
        hs_tok_display(t->vocab, t->heldout_tokens[i], &d);
        if (d.oom) lab.oom = 1;
        else hs_labels_set(&lab, (size_t)i, "%s", d.s ? d.s : "");
        hs_buf_free(&d);
    }
    const char **tok = lab.at;
    hs_viz_figure *f = NULL;
    cJSON *j = NULL;
    char n0[64], n1[64], title[200];
    hs_status s = !pat || lab.oom ? oom(err) : HS_OK;
    if (s != HS_OK) goto done;
    memcpy(pat, r->attn_prev, (size_t)T * T * sizeof *pat);
    memcpy(pat + (size_t)T * T, r->attn_ind, (size_t)T * T * sizeof *pat);
    snprintf(n0, sizeof n0, "%s prev-token", r->heads[r->prev_best.head].name);
    snprintf(n1, sizeof n1, "%s induction", r->heads[r->ind_best.layer * r->H + r->ind_best.head].name);
    const char *heads[2] = {n0, n1}, *row[1] = {""};
    snprintf(title, sizeof title, "held-out sequence 0: segment at %d and %d, length %d",
             t->heldout[0].start1, t->heldout[0].start2, t->heldout[0].len);
    hs_viz_options vo = hs_figopts_for(fo, HS_FIG_ATTENTION, 1.0);
    hs_error fe = {0};
    if (hs_figopts_images(fo) &&
        (s = hs_outdir_unfit(od, "attention",
                             hs_viz_grid_figure_labeled(&f, pat, 1, 2, (size_t)T, tok, row, heads,
                                                        title, &vo, &fe),
                             &fe, err)) != HS_OK)
        goto done;
    if (hs_figopts_data(fo)) {
        if ((s = hs_viz_attention_json(&j, pat, 2, (size_t)T, tok, heads, title, err)) != HS_OK) goto done;
        cJSON_AddStringToObject(j, "model", model_path);
    }
    s = hs_outdir_figure(od, "attention", &f, j,
                         "the named previous-token and induction heads' patterns on held-out "
                         "sequence 0", err);
done:
    cJSON_Delete(j);
    hs_viz_figure_destroy(f);
    free(pat);
    hs_labels_free(&lab);
    return s;
}

/* heads (detector scores), ablation and copying (bars). */
static hs_status head_figs(const hs_ind_circuit_report *r, hs_outdir *od, float *m,
                           const char **rl, char (*lab)[48], hs_error *err)
{
    static const char *const SC[2] = {"previous-token", "induction"};
    const int LH = r->L * r->H;
    for (int k = 0; k < LH; k++) {
        rl[k] = r->heads[k].name;
        m[k * 2] = (float)r->heads[k].prev_score;
        m[k * 2 + 1] = (float)r->heads[k].ind_score;
    }
    hs_status s = hs_outdir_matrix(od, HS_FIG_NONNEG, "heads", m, (size_t)LH, 2, rl, SC,
                                   "head detector scores (held-out sequences)", "score", "head",
                                   1.0, "score", NULL,
                                   "each head's previous-token score (TL mul) and induction score "
                                   "(attention from the second occurrence to the token after the "
                                   "first)", err);
    if (s != HS_OK) return s;
    for (int k = 0; k < LH; k++) m[k] = (float)(100.0 * (r->heads[k].acc_ablated - r->acc));
    size_t nb = (size_t)LH;
    if (isfinite(r->acc_prev_ablated)) {
        snprintf(lab[nb], sizeof lab[0], "previous-token heads");
        m[nb++] = (float)(100.0 * (r->acc_prev_ablated - r->acc));
    }
    if (isfinite(r->acc_ind_ablated)) {
        snprintf(lab[nb], sizeof lab[0], "induction heads");
        m[nb++] = (float)(100.0 * (r->acc_ind_ablated - r->acc));
    }
    for (size_t i = (size_t)LH; i < nb; i++) rl[i] = lab[i];
    s = hs_outdir_matrix(od, HS_FIG_BARS, "ablation", m, nb, 1, rl, NULL,
                         "repeated-segment accuracy change with mean ablation",
                         "accuracy change, points", NULL, 0.0, NULL, NULL,
                         "held-out repeated-segment accuracy change (points) when each head, and "
                         "each role's heads together, are mean-ablated", err);
    if (s != HS_OK) return s;
    for (int k = 0; k < LH; k++) m[k] = (float)r->heads[k].copying;
    return hs_outdir_matrix(od, HS_FIG_BARS, "copying", m, (size_t)LH, 1, rl, NULL,
                            "OV copying score per head (LN folded)",
                            "copying score (sum of eigenvalues / sum of |eigenvalues|)", NULL, 0.0,
                            NULL, NULL, "each head's eigenvalue copying score of its full OV circuit",
                            err);
}

/* path_patching (bars: queries, keys, values) and composition_K. */
static hs_status circuit_figs(const hs_ind_circuit_report *r, hs_outdir *od, float *m,
                              const char **rl, const char **cl, hs_error *err)
{
    const int L = r->L, H = r->H, LH = L * H;
    char title[160];
    if (isfinite(r->path[1])) {
        static const char *const PQ[3] = {"queries", "keys", "values"};
        for (int v = 0; v < 3; v++) m[v] = (float)r->path[v];
        snprintf(title, sizeof title, "path patching %s → %s (normalised log-probability)",
                 r->heads[r->prev_best.head].name, r->heads[r->ind_best.layer * H + r->ind_best.head].name);
        hs_status s = hs_outdir_matrix(od, HS_FIG_BARS, "path_patching", m, 3, 1, PQ, NULL, title,
                                       "restored fraction (1 = clean)", NULL, 0.0, NULL, NULL,
                                       "the previous-token head's clean output patched into only "
                                       "the induction head's queries, keys or values (corrupted "
                                       "run: the previous-token head mean-ablated)", err);
        if (s != HS_OK) return s;
    }
    if (L <= 1 || !r->comp.k) return HS_OK;
    for (int h1 = 0; h1 < H; h1++)
        for (int k2 = H; k2 < LH; k2++) {
            const size_t i = (((size_t)0 * H + (size_t)h1) * L + (size_t)(k2 / H)) * H + (size_t)(k2 % H);
            m[h1 * (LH - H) + (k2 - H)] = (float)(r->comp.k[i] - r->comp.baseline);
            cl[k2 - H] = r->heads[k2].name;
        }
    snprintf(title, sizeof title, "K-composition minus random baseline %.3f (LN folded)", r->comp.baseline);
    return hs_outdir_matrix(od, HS_FIG_SIGNED, "composition_K", m, (size_t)H, (size_t)(LH - H), rl,
                            cl, title, "receiver (later head)", "sender (layer 0)", 0.0, NULL, NULL,
                            "K-composition scores of layer-0 heads into later heads minus the "
                            "random baseline", err);
}

hs_status hs_ind_circuit_write(const hs_ind_circuit_report *r, const hs_induction *t,
                               const char *model_path, hs_outdir *od, hs_error *err)
{
    const int LH = r->L * r->H;
    char *json = NULL;
    cJSON *rep = NULL, *extra = NULL, *ctx = hs_run_context(&r->cfg, model_path);
    const cJSON *was = od->context;
    float *m = calloc((size_t)LH * LH * 3 + 16, sizeof *m);
    const char **rl = calloc((size_t)LH + 8, sizeof *rl), **cl = calloc((size_t)LH + 8, sizeof *cl);
    char (*lab)[48] = calloc((size_t)LH + 8, sizeof *lab);
    hs_status s = !m || !rl || !cl || !lab || !ctx ? oom(err) : HS_OK;
    if (s == HS_OK) s = hs_ind_circuit_report_json(r, model_path, &json, err);
    if (s == HS_OK && !(rep = cJSON_Parse(json))) s = oom(err);
    if (s == HS_OK)
        s = hs_outdir_json(od, "report", rep,
                           "every number of the induction-circuit check: per-head scores, roles, "
                           "composition, path patching, copying, ablation, thresholds, verdict",
                           err);
    od->context = ctx;
    if (s == HS_OK) s = head_figs(r, od, m, rl, lab, err);
    if (s == HS_OK) s = circuit_figs(r, od, m, rl, cl, err);
    od->context = was;
    if (s == HS_OK) s = attention_fig(r, t, model_path, od, err);
    if (s == HS_OK) {
        extra = cJSON_CreateObject();
        int ok = extra && (!model_path || cJSON_AddStringToObject(extra, "model", model_path)) &&
                 cJSON_AddStringToObject(extra, "task", "induction") &&
                 cJSON_AddBoolToObject(extra, "holds", r->holds);
        s = ok ? hs_outdir_commit(od, extra, err) : oom(err);
    }
    cJSON_Delete(extra);
    cJSON_Delete(rep);
    cJSON_Delete(ctx);
    free(json);
    free(m);
    free(rl);
    free(cl);
    free(lab);
    return s;
}
