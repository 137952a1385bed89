/*
 * circuits/timeline.c -- one checkpoint's numbers for `headscope timeline`
 * (circuits.h, "Circuits over training"): the circuit check of its task plus the
 * detector scores, as `circuit` computes them on that checkpoint alone.
 */
#include "circuits/circuits.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hs_timeline_point_free(hs_timeline_point *p)
{
    if (p == NULL) return;
    free(p->prev);
    free(p->ind);
    free(p->first_noun);
    free(p->heads);
    free(p->verdict);
    memset(p, 0, sizeof *p);
}

static hs_status alloc_point(hs_timeline_point *p, int L, int H, int first_noun, hs_error *err)
{
    memset(p, 0, sizeof *p);
    p->L = L;
    p->H = H;
    p->seg_loss = p->icl = NAN;
    p->prev = calloc((size_t)L * H, sizeof *p->prev);
    p->ind = calloc((size_t)L * H, sizeof *p->ind);
    if (first_noun) p->first_noun = calloc((size_t)L * H, sizeof *p->first_noun);
    if (!p->prev || !p->ind || (first_noun && !p->first_noun)) {
        hs_timeline_point_free(p);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    return HS_OK;
}

hs_status hs_timeline_point_induction(const hs_model *m, const hs_induction *t, hs_timeline_point *out,
                                      hs_error *err)
{
    hs_ind_circuit_report r;
    hs_ind_circuit_opts o = hs_ind_circuit_opts_default();
    o.discover = 0; /* a timeline point reads no discovery */
    hs_status s = hs_ind_circuit_run(m, t, &o, &r, err);
    if (s != HS_OK) return s;
    if ((s = alloc_point(out, r.L, r.H, 0, err)) == HS_OK) {
        out->loss = r.loss;
        out->accuracy = r.acc;
        out->seg_loss = r.seg_loss;
        out->icl = r.icl_score;
        for (int k = 0; k < r.L * r.H; k++) {
            out->prev[k] = (float)r.heads[k].prev_score;
            out->ind[k] = (float)r.heads[k].ind_score;
        }
        out->holds = r.holds;
        out->n_decision = r.n_ind;
        hs_buf hb = {0};
        if (r.prev_best.layer >= 0 && r.ind_best.layer >= 0)
            hs_buf_printf(&hb, "L0H%d -> L%dH%d", r.prev_best.head, r.ind_best.layer, r.ind_best.head);
        out->heads = hs_buf_take(&hb);
        out->verdict = hs_strdup(r.verdict);
        if (!out->heads || !out->verdict) {
            hs_timeline_point_free(out);
            s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        }
    }
    hs_ind_circuit_report_free(&r);
    return s;
}

hs_status hs_timeline_point_winograd(const hs_model *m, const hs_winograd *t, hs_timeline_point *out,
                                     hs_error *err)
{
    hs_circuit_report r;
    hs_circuit_opts o = hs_circuit_opts_default();
    o.discover = 0; /* a timeline point reads no discovery */
    hs_status s = hs_circuit_run(m, t, &o, &r, err);
    if (s != HS_OK) return s;
    const int L = r.L, H = r.H, T = HS_WG_LEN;
    const size_t n = t->n_heldout;
    int *tok = NULL, *tg = NULL;
    float *sc = NULL;
    hs_acts *acts = NULL;
    hs_cache cache;
    hs_cache_init(&cache);
    if ((s = alloc_point(out, L, H, 1, err)) != HS_OK) goto done;
    tok = malloc(n * T * sizeof *tok);
    tg = malloc(n * T * sizeof *tg);
    sc = malloc((size_t)L * H * sizeof *sc);
    if (!tok || !tg || !sc) {
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t q = 0; q < n; q++)
        for (int i = 0; i < T; i++) {
            tok[q * T + (size_t)i] = t->heldout[q].tokens[i];
            tg[q * T + (size_t)i] = i + 1 < T ? t->heldout[q].tokens[i + 1] : -1;
        }
    if ((s = hs_acts_create(&m->cfg, (int)n, T, 0, &acts, err)) != HS_OK) goto done;
    static const char *const filt[1] = {"blocks.*.attn.hook_pattern"};
    if ((s = hs_run_with_cache(m, acts, tok, (int)n, T, filt, 1, NULL, &cache, err)) != HS_OK) goto done;
    out->loss = hs_cross_entropy(m, acts, tg, NULL);
    if ((s = hs_detect_heads(m, &cache, tok, (int)n, T, HS_DETECT_PREV_TOKEN, NULL, 0, 0, out->prev, err)) !=
        HS_OK)
        goto done;
    if ((s = hs_detect_heads(m, &cache, tok, (int)n, T, HS_DETECT_INDUCTION, NULL, 0, 0, sc, err)) != HS_OK)
        goto done;
    for (int k = 0; k < L * H; k++) {
        out->ind[k] = sc[k];
        out->first_noun[k] = (float)r.heads[k].attn[HS_CIRC_ALL][HS_CIRC_ON_X];
    }
    out->accuracy = r.acc[HS_CIRC_ALL];
    out->holds = r.step2_holds;
    out->step1 = r.step1_holds;
    out->n_decision = r.n_decision;
    hs_buf hb = {0}, vb = {0};
    for (int d = 0; d < r.n_decision; d++)
        hs_buf_printf(&hb, "%sL%dH%d", d ? " " : "", r.decision[d].layer, r.decision[d].head);
    hs_buf_printf(&vb, "step 1 %s, step 2 %s; route %s", r.step1_holds ? "holds" : "does not hold",
                  r.step2_applicable ? (r.step2_holds ? "holds" : "does not hold") : "not applicable", r.route);
    out->heads = hs_buf_take(&hb);
    out->verdict = hs_buf_take(&vb);
    if (!out->heads || !out->verdict) s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
done:
    if (s != HS_OK) hs_timeline_point_free(out);
    hs_cache_free(&cache);
    hs_acts_destroy(acts);
    free(tok);
    free(tg);
    free(sc);
    hs_circuit_report_free(&r);
    return s;
}

int hs_timeline_jump(const double *y, int n, int sign)
{
    int best = -1;
    double bv = 0.0;
    for (int i = 1; i < n; i++) {
        if (!isfinite(y[i]) || !isfinite(y[i - 1])) continue;
        double d = (y[i] - y[i - 1]) * (sign < 0 ? -1.0 : 1.0);
        if (best < 0 || d > bv) best = i, bv = d;
    }
    return best;
}
