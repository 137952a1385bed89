/*
 * circuits/circuit_figs.c -- the output folder of the two-step referent-circuit
 * check (`headscope circuit --out DIR`): report.json, its figures and
 * index.json, from an hs_circuit_report (circuits.h, "Writing a circuit
 * check's folder"). Holds no analysis: every number is the report's.
 */
#include "circuits/circuits.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "experiments/experiments.h"

/* Template labels of positions 0..14. */
static const char *const POS_LABELS[HS_CIRC_T] = {"0 the", "1 x", "2 did", "3 not", "4 cross",
                                                   "5 the", "6 y", "7 because", "8 it", "9 was",
                                                   "10 too", "11 adj", "12 ,", "13 so", "14 the"};

/* Room for every figure's labels and values. */
typedef struct {
    char (*lab)[48];
    const char **rl, **cl;
    float *m;
    size_t n_lab;
} c_scratch;

static const char *role_name(int g)
{
    return g ? "crossed" : "crosser";
}

/* attention_14 (mean attention rows at 14, head x role by position) and
 * ablation (accuracy change in points, bars). */
static hs_status attention_and_ablation(const hs_circuit_report *r, hs_outdir *od, c_scratch *w,
                                        hs_error *err)
{
    const int L = r->L, LH = r->L * r->H;
    for (int k = 0; k < LH; k++)
        for (int g = 0; g < 2; g++) {
            snprintf(w->lab[k * 2 + g], sizeof w->lab[0], "%s %s", r->heads[k].name, role_name(g));
            w->rl[k * 2 + g] = w->lab[k * 2 + g];
        }
    hs_status s = hs_outdir_matrix(
        od, HS_FIG_NONNEG, "attention_14", r->attn_rows, (size_t)LH * 2, HS_CIRC_T, w->rl,
        POS_LABELS, "mean attention at position 14 by head and adjective role (held-out)",
        "source position", "head, role", 1.0, "mean attention weight", NULL,
        "each head's attention row at position 14 averaged over the held-out sentences of each "
        "adjective role (x = 1, y = 6, adjective = 11)", err);
    if (s != HS_OK) return s;
    size_t nb = 0;
    for (int k = 0; k < LH; k++)
        for (int g = 0; g < 2; g++) {
            snprintf(w->lab[nb], sizeof w->lab[0], "%s %s", r->heads[k].name, role_name(g));
            w->m[nb++] = (float)(100.0 * (r->heads[k].acc_ablated[g] - r->acc[g]));
        }
    for (int l = 0; l < L; l++)
        for (int v = 0; v < (r->cfg.d_mlp > 0 ? 2 : 1); v++)
            for (int g = 0; g < 2; g++) {
                const double *acc = v ? r->acc_block_mlp[l] : r->acc_block_attn[l];
                snprintf(w->lab[nb], sizeof w->lab[0], "L%d %s %s", l, v ? "MLP" : "attn",
                         role_name(g));
                w->m[nb++] = (float)(100.0 * (acc[g] - r->acc[g]));
            }
    if (r->n_pushers > 0)
        for (int g = 0; g < 2; g++) {
            snprintf(w->lab[nb], sizeof w->lab[0], "pushers %s", role_name(g));
            w->m[nb++] = (float)(100.0 * (r->acc_pushers[g] - r->acc[g]));
        }
    for (size_t i = 0; i < nb; i++) w->rl[i] = w->lab[i];
    return hs_outdir_matrix(od, HS_FIG_BARS, "ablation", w->m, nb, 1, w->rl, NULL,
                            "held-out accuracy change with mean ablation, by adjective role",
                            "accuracy change, points (position-wise mean ablation)", NULL, 0.0,
                            NULL, NULL,
                            "held-out accuracy change (points) by role when each head, each "
                            "layer's attention, each MLP and the pushers are mean-ablated", err);
}

/* patching: rows = heads, columns = direction / positions. */
static hs_status patching(const hs_circuit_report *r, hs_outdir *od, c_scratch *w,
                          const char *why, hs_error *err)
{
    static const char *const PCOL[4] = {"pos14 crosser→crossed", "pos14 crossed→crosser",
                                        "pos14 both", "all positions both"};
    const int LH = r->L * r->H;
    for (int k = 0; k < LH; k++) {
        const hs_circuit_head *hd = &r->heads[k];
        const double v[4] = {hd->patch_pos14[0], hd->patch_pos14[1], hd->patch_pos14[2],
                             hd->patch_all[2]};
        for (int c = 0; c < 4; c++) w->m[k * 4 + c] = isfinite(v[c]) ? (float)v[c] : 0.0f;
        w->rl[k] = r->heads[k].name;
    }
    return hs_outdir_matrix(od, HS_FIG_SIGNED, "patching", w->m, (size_t)LH, 4, w->rl, PCOL,
                            "patching hook_z: normalised LD (1 = clean answer restored)",
                            "patched where / direction", "head", 1.0,
                            "normalised logit difference", r->patch_usable ? NULL : why,
                            "normalised logit-difference metric when one head's hook_z is "
                            "patched from the clean (one role) into the corrupted (other role, "
                            "same nouns) run", err);
}

/* composition_{Q,K,V}: rows = layer-0 heads, columns = heads of layers >= 1. */
static hs_status composition(const hs_circuit_report *r, hs_outdir *od, c_scratch *w,
                             hs_error *err)
{
    const int L = r->L, H = r->H, LH = L * H;
    const float *src[3] = {r->comp.q, r->comp.k, r->comp.v};
    const char *nm[3] = {"composition_Q", "composition_K", "composition_V"};
    const char *kind[3] = {"Q", "K", "V"};
    /* one scale for Q, K and V: the three are compared */
    double lim = 0;
    for (int v = 0; v < 3; v++) {
        if (r->cfg.attn != HS_ATTN_SOFTMAX && v < 2) continue;
        for (int h1 = 0; h1 < H; h1++)
            for (int k2 = H; k2 < LH; k2++) {
                size_t i = (((size_t)0 * H + h1) * L + k2 / H) * H + k2 % H;
                lim = fmax(lim, fabs(src[v][i] - r->comp.baseline));
            }
    }
    for (int v = 0; v < 3; v++) {
        if (r->cfg.attn != HS_ATTN_SOFTMAX && v < 2) continue; /* no Q/K: n/a */
        for (int h1 = 0; h1 < H; h1++) {
            w->rl[h1] = r->heads[h1].name;
            for (int k2 = H; k2 < LH; k2++) {
                const int l2 = k2 / H, h2 = k2 % H;
                size_t i = (((size_t)0 * H + h1) * L + l2) * H + h2;
                w->m[h1 * (LH - H) + (k2 - H)] = (float)(src[v][i] - r->comp.baseline);
                w->cl[k2 - H] = r->heads[k2].name;
            }
        }
        char title[160], shows[200];
        snprintf(title, sizeof title, "%s-composition score minus random baseline %.3f (LN folded)",
                 kind[v], r->comp.baseline);
        snprintf(shows, sizeof shows, "%s-composition scores (C3, LN folded) of layer-0 heads into "
                 "later heads, minus the random baseline", kind[v]);
        hs_status s = hs_outdir_matrix(od, HS_FIG_SIGNED, nm[v], w->m, (size_t)H, (size_t)(LH - H),
                                       w->rl, w->cl, title, "receiver (later head)",
                                       "sender (layer 0)", lim, "composition score − baseline",
                                       NULL, shows, err);
        if (s != HS_OK) return s;
    }
    return HS_OK;
}

/* path_patching: layer-0 heads into the decision heads' q, k, v. */
static hs_status path_patching(const hs_circuit_report *r, hs_outdir *od, c_scratch *w,
                               const char *why, hs_error *err)
{
    const int H = r->H;
    size_t nc = 0;
    for (int d = 0; d < r->n_decision && nc + 3 <= w->n_lab; d++)
        for (int v = 0; v < 3; v++) {
            if (r->cfg.attn != HS_ATTN_SOFTMAX && v < 2) continue;
            const hs_circuit_head *hd = &r->heads[r->decision[d].layer * H + r->decision[d].head];
            snprintf(w->lab[nc], sizeof w->lab[0], "%s %c", hd->name, "qkv"[v]);
            w->cl[nc] = w->lab[nc];
            nc++;
        }
    for (int s = 0; s < H; s++) {
        w->rl[s] = r->heads[s].name;
        size_t c = 0;
        for (int d = 0; d < r->n_decision && c < nc; d++)
            for (int v = 0; v < 3; v++) {
                if (r->cfg.attn != HS_ATTN_SOFTMAX && v < 2) continue;
                float x = r->path[((size_t)s * r->n_decision + d) * 3 + v];
                w->m[s * nc + c++] = isfinite(x) ? x : 0.0f;
            }
    }
    return hs_outdir_matrix(od, HS_FIG_SIGNED, "path_patching", w->m, (size_t)H, nc, w->rl, w->cl,
                            "path patching layer-0 head → decision head input: normalised logit "
                            "difference", "receiver input", "sender (layer 0)", 1.0,
                            "normalised logit difference", r->patch_usable ? NULL : why,
                            "normalised logit-difference metric when only the edge from a "
                            "layer-0 head into a decision head's q, k or v is patched (receiver "
                            "LN recomputed)", err);
}

/* Every figure, in the folder's order. */
static hs_status figures(const hs_circuit_report *r, hs_outdir *od, c_scratch *w, hs_error *err)
{
    char why[200];
    snprintf(why, sizeof why, "not usable: clean and corrupted logit differences differ by only %.2f",
             fabs((double)r->ld_clean[HS_CIRC_PATCH_BOTH] - r->ld_corr[HS_CIRC_PATCH_BOTH]));
    hs_status s = attention_and_ablation(r, od, w, err);
    if (s == HS_OK) s = patching(r, od, w, why, err);
    if (s == HS_OK && r->L > 1 && r->comp.q) s = composition(r, od, w, err);
    if (s == HS_OK && r->n_decision > 0 && r->path) s = path_patching(r, od, w, why, err);
    return s;
}

hs_status hs_circuit_write(const hs_circuit_report *r, const char *model_path, hs_outdir *od,
                           hs_error *err)
{
    const int LH = r->L * r->H;
    c_scratch w = {0};
    w.n_lab = (size_t)LH * 3 + 16;
    w.lab = calloc(w.n_lab, sizeof *w.lab);
    w.rl = calloc(w.n_lab, sizeof *w.rl);
    w.cl = calloc(w.n_lab, sizeof *w.cl);
    w.m = calloc(w.n_lab * (size_t)(LH > HS_CIRC_T ? LH : HS_CIRC_T) * 4, sizeof *w.m);
    cJSON *rep = NULL, *ctx = hs_run_context(&r->cfg, model_path);
    const cJSON *was = od->context;
    hs_status s = !w.lab || !w.rl || !w.cl || !w.m || !ctx ? hs_fail(err, HS_ERR_NOMEM, "out of memory")
                                                          : HS_OK;
    if (s == HS_OK) s = hs_circuit_report_json(r, model_path, &rep, err);
    if (s == HS_OK)
        s = hs_outdir_json(od, "report", rep,
                           "every number of the circuit check: thresholds, verdicts, heads and "
                           "roles, held-out accuracy, invariant, attention, DLA, patching, "
                           "ablation, composition, path patching, model config", err);
    od->context = ctx;
    if (s == HS_OK) s = figures(r, od, &w, err);
    od->context = was;
    /* index.json: the run's context and its route */
    if (s == HS_OK && !cJSON_AddStringToObject(ctx, "route", r->route))
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (s == HS_OK) s = hs_outdir_commit(od, ctx, err);
    cJSON_Delete(rep);
    cJSON_Delete(ctx);
    free(w.lab);
    free(w.rl);
    free(w.cl);
    free(w.m);
    return s;
}
