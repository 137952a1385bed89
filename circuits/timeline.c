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
    free(p->tokens);
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
        out->n_seqs = (int)r.n_seqs;
        out->n_heldout = r.task.n_heldout;
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

hs_timeline_rep_opts hs_timeline_rep_opts_default(void)
{
    hs_timeline_rep_opts o = {50, 10, 0, NULL, 0};
    return o;
}

/* The mean cross-entropy and top-1 hits of logits (T, V) rows p0..p1 against
 * tok[p + 1]: sums into *ce and *hits. */
static void rep_loss(const float *lg, int V, const int *tok, int p0, int p1, double *ce, int *hits)
{
    for (int p = p0; p <= p1; p++) {
        const float *r = lg + (size_t)p * V;
        int best = 0;
        double mx = r[0];
        for (int v = 1; v < V; v++)
            if (r[v] > mx) mx = r[v], best = v;
        double z = 0.0;
        for (int v = 0; v < V; v++) z += exp((double)r[v] - mx);
        *ce += mx + log(z) - r[tok[p + 1]];
        *hits += best == tok[p + 1];
    }
}

hs_status hs_timeline_point_repeated(const hs_model *m, int bos, int n_tokens, const hs_timeline_rep_opts *o,
                                     hs_timeline_point *out, hs_error *err)
{
    const hs_config *c = &m->cfg;
    const int L = c->n_layers, H = c->n_heads, V = c->d_vocab, b0 = bos >= 0;
    const int n = o->rep_len < (c->n_ctx - b0) / 2 ? o->rep_len : (c->n_ctx - b0) / 2, T = b0 + 2 * n;
    int ids_ok = !o->ids || o->n_ids >= 2;
    for (int i = 0; o->ids && i < o->n_ids; i++) ids_ok &= o->ids[i] >= 0 && o->ids[i] < V && o->ids[i] != bos;
    if (!ids_ok)
        return hs_fail(err, HS_ERR_INPUT, "repeated random tokens: the ids to draw need 2 or more, each in "
                       "0..%d and not the BOS", V - 1);
    if (n < 2 || o->n_seqs < 1 || n_tokens < 2 || n_tokens > V)
        return hs_fail(err, HS_ERR_INPUT, "repeated random tokens need a length >= 2 (n_ctx %d gives %d), "
                       ">= 1 sequence and 2..d_vocab tokens to draw (%d)", c->n_ctx, n, n_tokens);
    hs_status s = alloc_point(out, L, H, 0, err);
    if (s != HS_OK) return s;
    int *tok = malloc((size_t)o->n_seqs * T * sizeof *tok);
    double *ind = calloc((size_t)L * H, sizeof *ind), *prev = calloc((size_t)L * H, sizeof *prev);
    hs_acts *acts = NULL;
    hs_cache cache;
    hs_cache_init(&cache);
    double early = 0.0, late = 0.0, all = 0.0;
    int hits = 0, h_early = 0, h_all = 0;
    if (!tok || !ind || !prev) {
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto done;
    }
    hs_task_rng rng;
    hs_task_rng_seed(&rng, o->seed);
    for (int q = 0; q < o->n_seqs; q++) {
        int *t = tok + (size_t)q * T;
        if (b0) t[0] = bos;
        for (int k = 0; k < n; k++) {
            int v;
            do v = o->ids ? o->ids[hs_task_rng_below(&rng, (uint64_t)o->n_ids)]
                          : (int)hs_task_rng_below(&rng, (uint64_t)n_tokens);
            while (v == bos);
            t[b0 + k] = t[b0 + n + k] = v;
        }
    }
    if ((s = hs_acts_create(c, 1, T, 0, &acts, err)) != HS_OK) goto done;
    static const char *const filt[2] = {"blocks.*.attn.hook_pattern", "logits"};
    for (int q = 0; q < o->n_seqs; q++) {
        const int *t = tok + (size_t)q * T;
        if ((s = hs_run_with_cache(m, acts, t, 1, T, filt, 2, NULL, &cache, err)) != HS_OK) goto done;
        for (int l = 0; l < L; l++) {
            const hs_cache_entry *e = hs_cache_getf(&cache, "blocks.%d.attn.hook_pattern", l);
            if (!e) {
                s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
                goto done;
            }
            for (int h = 0; h < H; h++) {
                const float *A = e->data + (size_t)h * T * T;
                double si = 0.0, sp = 0.0;
                for (int k = 0; k < n; k++) si += A[(size_t)(b0 + n + k) * T + b0 + k + 1];
                for (int p = 1; p < T; p++) sp += A[(size_t)p * T + p - 1];
                ind[l * H + h] += si / n;
                prev[l * H + h] += sp / (T - 1);
            }
        }
        const float *lg = hs_cache_get(&cache, "logits")->data;
        rep_loss(lg, V, t, b0, b0 + n - 2, &early, &h_early);
        rep_loss(lg, V, t, b0 + n, b0 + 2 * n - 2, &late, &hits);
        rep_loss(lg, V, t, 0, T - 2, &all, &h_all);
    }
    const double ns = (double)o->n_seqs * (n - 1);
    out->loss = all / ((double)o->n_seqs * (T - 1));
    out->seg_loss = late / ns;
    out->icl = late / ns - early / ns;
    out->accuracy = hits / ns;
    const hs_ind_circuit_opts io = hs_ind_circuit_opts_default();
    int pl = -1, ph = -1, il = -1, ih = -1;
    double pb = -1.0, ib = -1.0;
    for (int k = 0; k < L * H; k++) {
        out->ind[k] = (float)(ind[k] / o->n_seqs);
        out->prev[k] = (float)(prev[k] / o->n_seqs);
    }
    /* the best previous-token head, then the best induction head after its layer */
    for (int k = 0; k < L * H; k++)
        if (out->prev[k] > pb && k / H < L - 1) pb = out->prev[k], pl = k / H, ph = k % H;
    for (int k = (pl + 1) * H; pl >= 0 && k < L * H; k++)
        if (out->ind[k] > ib) ib = out->ind[k], il = k / H, ih = k % H;
    for (int k = H; k < L * H; k++) out->n_decision += out->ind[k] >= io.ind_min;
    out->holds = pl >= 0 && il >= 0 && pb >= io.prev_min && ib >= io.ind_min;
    hs_buf hb = {0}, vb = {0};
    if (pl >= 0 && il >= 0) hs_buf_printf(&hb, "L%dH%d -> L%dH%d", pl, ph, il, ih);
    if (L < 2)
        hs_buf_printf(&vb, "does not hold: one layer has no induction head");
    else
        /* each best score with its bar: "0.562 (>= 0.35)" when it clears it,
         * else "0.062 (needs >= 0.35)" (a bare "(>= 0.35)" read as a claim) */
        hs_buf_printf(&vb, "%s on %d repeated random sequences of %d tokens: previous-token L%dH%d %.3f "
                      "(%s>= %.2f), induction L%dH%d %.3f (%s>= %.2f)", out->holds ? "holds" : "does not hold",
                      o->n_seqs, n, pl, ph, pb, pb >= io.prev_min ? "" : "needs ", io.prev_min, il, ih, ib,
                      ib >= io.ind_min ? "" : "needs ", io.ind_min);
    out->heads = hs_buf_take(&hb);
    out->verdict = hs_buf_take(&vb);
    if (!out->heads) out->heads = hs_strdup("");
    if (!out->heads || !out->verdict) s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    out->tokens = tok;
    out->n_seqs = o->n_seqs;
    out->seq_len = T;
    tok = NULL;
done:
    if (s != HS_OK) hs_timeline_point_free(out);
    hs_cache_free(&cache);
    hs_acts_destroy(acts);
    free(tok);
    free(ind);
    free(prev);
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
