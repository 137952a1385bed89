/*
 * circuits/induction_circuit.c -- the induction-circuit check of circuits.h
 * ("Induction circuit check"), its evidence: previous-token and induction
 * scores of every head from their attention, the OV copying score and mean
 * ablations, K-composition against the random baseline, path patching of
 * the previous-token heads into the induction head's keys / queries /
 * values. Built on probe/ (run_with_cache, detectors, composition, copying,
 * ablation and path-patching hooks); every forward is one batch of the
 * first n_seqs held-out sequences. hs_ind_circuit_run is the steps in
 * order; the roles, the criteria, the verdict and the report's JSON and
 * summary are in circuits/induction_verdict.c (circuits_internal.h).
 */
#include "circuits/circuits_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

hs_ind_circuit_opts hs_ind_circuit_opts_default(void)
{
    hs_ind_circuit_opts o;
    o.prev_min = 0.35;
    o.ind_min = 0.5;
    o.comp_min = 0.05;
    o.patch_k_min = 0.5;
    o.patch_qv_max = 0.2;
    o.min_gap = 1.0;
    o.copy_min = 0.5;
    o.ablate_frac = 0.8;
    o.n_seqs = 128;
    o.comp_draws = 300;
    o.comp_seed = 0;
    o.discover = 1;
    return o;
}

void hs_ind_circuit_report_free(hs_ind_circuit_report *r)
{
    if (r == NULL) return;
    free(r->heads);
    free(r->prev);
    free(r->ind);
    free(r->attn_prev);
    free(r->attn_ind);
    for (int k = 0; k < HS_IND_N_CRIT; k++) free(r->why[k]);
    free(r->verdict);
    hs_comp_scores_free(&r->comp);
    hs_circ_discovery_free(&r->disc);
    memset(r, 0, sizeof *r);
}

/* Accuracy and mean log p(correct) over the scored tokens of the logits of
 * the first n held-out sequences (n, T, V). */
static void seg_metrics(const hs_induction *t, const float *logits, size_t n, double *acc,
                        double *logp, size_t *n_scored)
{
    const int T = t->p.n_ctx, V = t->p.n_symbols;
    size_t cnt = 0, correct = 0;
    double sum = 0.0;
    for (size_t q = 0; q < n; q++) {
        const int *tok = t->heldout_tokens + q * (size_t)T;
        const hs_ind_seq *s = &t->heldout[q];
        for (int i = s->start2; i < s->start2 + s->len - 1; i++) {
            const float *lg = logits + (q * (size_t)T + (size_t)i) * (size_t)V;
            float mx = lg[0];
            int am = 0;
            for (int v = 1; v < V; v++)
                if (lg[v] > mx) mx = lg[v], am = v;
            double z = 0.0;
            for (int v = 0; v < V; v++) z += exp((double)lg[v] - (double)mx);
            sum += ((double)lg[tok[i + 1]] - (double)mx) - log(z);
            correct += am == tok[i + 1];
            cnt++;
        }
    }
    *acc = cnt ? (double)correct / (double)cnt : 0.0;
    *logp = cnt ? sum / (double)cnt : 0.0;
    if (n_scored) *n_scored = cnt;
}

/* Mean ablation (position-wise, means from ref) of heads, then the metrics. */
static hs_status run_ablated(const hs_model *m, hs_acts *acts, const hs_induction *t, size_t n,
                             const hs_cache *ref, const hs_head *heads, int nh, double *acc,
                             hs_error *err)
{
    hs_hooks *hk = NULL;
    hs_status s = hs_hooks_create(&hk, err);
    if (s == HS_OK) s = hs_hooks_add_mean_ablation(hk, m, ref, heads, nh, 1, err);
    if (s == HS_OK)
        s = hs_run_with_hooks(m, acts, t->heldout_tokens, (int)n, t->p.n_ctx, hk, err);
    if (s == HS_OK) {
        double lp;
        seg_metrics(t, acts->logits, n, acc, &lp, NULL);
    }
    hs_hooks_destroy(hk);
    return s;
}

static hs_status check_opts(const hs_ind_circuit_opts *o, hs_error *err)
{
    const double v[8] = {o->prev_min, o->ind_min, o->patch_k_min, o->patch_qv_max,
                         o->copy_min, o->ablate_frac, o->comp_min, o->min_gap};
    for (int i = 0; i < 8; i++)
        if (!isfinite(v[i]) || v[i] < (i == 4 ? -1.0 : 0.0) || v[i] > (i >= 6 ? 1000.0 : 1.0))
            return hs_fail(err, HS_ERR_CONFIG, "induction circuit: threshold %d (%g) out of range", i,
                           v[i]);
    if (o->n_seqs < 1 || o->comp_draws < 2 || o->comp_draws > 100000)
        return hs_fail(err, HS_ERR_CONFIG, "induction circuit: n_seqs %d / comp_draws %d out of range",
                       o->n_seqs, o->comp_draws);
    return HS_OK;
}

/* The run's forwards: the first n held-out sequences of t (T tokens each),
 * their activations, the clean cache and the corrupted one (previous-token
 * heads mean-ablated). */
typedef struct {
    const hs_model *m;
    const hs_induction *t;
    size_t n;
    int T;
    hs_acts *acts;
    hs_cache clean, corr;
} ictx;

/* The model fits the task and has queries and keys to compose. */
static hs_status check_model(const hs_model *m, const hs_induction *t, hs_error *err)
{
    const hs_config *c = &m->cfg;
    const int T = t->p.n_ctx, V = t->p.n_symbols;
    if (c->d_vocab != V || c->n_ctx < T)
        return hs_fail(err, HS_ERR_CONFIG, "induction circuit: the model (d_vocab %d, n_ctx %d) does "
                       "not fit the task (%d symbols, context %d)", c->d_vocab, c->n_ctx, V, T);
    if (c->attn != HS_ATTN_SOFTMAX)
        return hs_fail(err, HS_ERR_CONFIG, "induction circuit: uniform attention has no queries or "
                       "keys to compose");
    return HS_OK;
}

/* The report's facts of the run, its "not measured" values and its arrays. */
static hs_status report_init(const ictx *x, const hs_ind_circuit_opts *o, hs_ind_circuit_report *r,
                             hs_error *err)
{
    const hs_config *c = &x->m->cfg;
    const int L = c->n_layers, H = c->n_heads;
    r->opts = *o;
    r->cfg = *c;
    r->task = x->t->p;
    r->L = L;
    r->H = H;
    r->n_seqs = x->n;
    r->chance = 1.0 / x->t->p.n_symbols;
    r->prev_best.layer = r->ind_best.layer = -1;
    r->comp_q = r->comp_k = r->comp_v = NAN;
    r->metric_clean = r->metric_corr = NAN;
    r->path[0] = r->path[1] = r->path[2] = NAN;
    r->acc_prev_ablated = r->acc_ind_ablated = NAN;
    r->heads = calloc((size_t)L * H, sizeof *r->heads);
    r->prev = calloc((size_t)H, sizeof *r->prev);
    r->ind = calloc((size_t)L * H, sizeof *r->ind);
    if (!r->heads || !r->prev || !r->ind) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    return HS_OK;
}

/* The clean run (cached), its accuracy and metric, and the task's losses. */
static hs_status clean_run(ictx *x, hs_ind_circuit_report *r, hs_error *err)
{
    const hs_induction *t = x->t;
    hs_status s = hs_acts_create(&x->m->cfg, (int)x->n, x->T, 0, &x->acts, err);
    if (s != HS_OK) return s;
    static const char *const filters[3] = {"blocks.*.attn.hook_pattern", "blocks.*.attn.hook_z",
                                           "blocks.*.hook_resid_pre"};
    if ((s = hs_run_with_cache(x->m, x->acts, t->heldout_tokens, (int)x->n, x->T, filters, 3, NULL,
                               &x->clean, err)) != HS_OK)
        return s;
    seg_metrics(t, x->acts->logits, x->n, &r->acc, &r->metric_clean, &r->n_scored);
    hs_ind_score sc;
    if ((s = hs_induction_score(x->m, t, x->n, NULL, &sc, err)) != HS_OK) return s;
    r->seg_loss = sc.seg_loss;
    r->loss = sc.loss;
    r->icl_score = sc.icl_score;
    return HS_OK;
}

/* Head h's induction score: its mean weight, from each repeated token, on
 * the token after that token's first occurrence (pattern e of layer l). */
static double induction_attn(const ictx *x, const hs_cache_entry *e, int H, int h)
{
    const int T = x->T;
    double sum = 0.0;
    size_t cnt = 0;
    for (size_t q = 0; q < x->n; q++) {
        const hs_ind_seq *sq = &x->t->heldout[q];
        const float *A = e->data + (q * (size_t)H + (size_t)h) * (size_t)T * T;
        for (int k = 0; k < sq->len; k++) {
            sum += A[(size_t)(sq->start2 + k) * T + (size_t)(sq->start1 + k + 1)];
            cnt++;
        }
    }
    return cnt ? sum / (double)cnt : 0.0;
}

/* Every head's evidence: previous-token and TL induction scores (detectors),
 * the induction score, the OV copying score and accuracy ablated alone. */
static hs_status head_evidence(ictx *x, hs_ind_circuit_report *r, hs_error *err)
{
    const hs_induction *t = x->t;
    const int L = r->L, H = r->H;
    float *score = malloc((size_t)L * H * sizeof *score);
    if (score == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    hs_status s = hs_detect_heads(x->m, &x->clean, t->heldout_tokens, (int)x->n, x->T, HS_DETECT_PREV_TOKEN,
                                  NULL, 0, 0, score, err);
    if (s != HS_OK) goto done;
    for (int k = 0; k < L * H; k++) r->heads[k].prev_score = score[k];
    if ((s = hs_detect_heads(x->m, &x->clean, t->heldout_tokens, (int)x->n, x->T, HS_DETECT_INDUCTION, NULL,
                             0, 0, score, err)) != HS_OK)
        goto done;
    for (int l = 0; l < L && s == HS_OK; l++) {
        const hs_cache_entry *e = hs_cache_getf(&x->clean, "blocks.%d.attn.hook_pattern", l);
        HS_ASSERT(e != NULL);
        for (int h = 0; h < H && s == HS_OK; h++) {
            hs_ind_head *hd = &r->heads[l * H + h];
            hd->layer = l;
            hd->head = h;
            snprintf(hd->name, sizeof hd->name, "L%dH%d", l, h);
            hd->tl_induction = score[l * H + h];
            hd->ind_score = induction_attn(x, e, H, h);
            s = hs_copying_score(x->m, (hs_head){l, h}, HS_FOLD_LN, &hd->copying, &hd->copying_pos, err);
            if (s == HS_OK)
                s = run_ablated(x->m, x->acts, t, x->n, &x->clean, &(hs_head){l, h}, 1, &hd->acc_ablated, err);
        }
    }
done:
    free(score);
    return s;
}


/* Mean ablation of each role set (NAN where the set is empty). */
static hs_status ablate_roles(ictx *x, hs_ind_circuit_report *r, hs_error *err)
{
    hs_status s = HS_OK;
    if (r->n_prev > 0)
        s = run_ablated(x->m, x->acts, x->t, x->n, &x->clean, r->prev, r->n_prev, &r->acc_prev_ablated, err);
    if (s == HS_OK && r->n_ind > 0)
        s = run_ablated(x->m, x->acts, x->t, x->n, &x->clean, r->ind, r->n_ind, &r->acc_ind_ablated, err);
    return s;
}

/* K-composition (and Q, V) of the named pair P -> I above the baseline. */
static hs_status composition(const ictx *x, hs_ind_circuit_report *r, const hs_ind_head *P,
                             const hs_ind_head *I, hs_error *err)
{
    const hs_ind_circuit_opts *o = &r->opts;
    const int L = r->L, H = r->H;
    hs_status s = hs_composition_scores(x->m, HS_FOLD_LN, o->comp_draws, o->comp_seed, NULL, &r->comp, err);
    if (s != HS_OK) return s;
    const size_t ci = (((size_t)0 * H + (size_t)P->head) * L + (size_t)I->layer) * H + (size_t)I->head;
    r->comp_q = r->comp.q[ci] - r->comp.baseline;
    r->comp_k = r->comp.k[ci] - r->comp.baseline;
    r->comp_v = r->comp.v[ci] - r->comp.baseline;
    return HS_OK;
}

/* Path patching: corrupted = every previous-token head mean-ablated
 * (r->metric_corr); patched: their summed output into the induction head's
 * q, k or v (r->path), when the corruption moves the metric by >= min_gap
 * (else patching cannot decide and r->path stays NAN). */
static hs_status path_patching(ictx *x, hs_ind_circuit_report *r, hs_error *err)
{
    const hs_model *m = x->m;
    const int *tok = x->t->heldout_tokens;
    hs_hooks *hk = NULL;
    hs_status s = hs_hooks_create(&hk, err);
    if (s == HS_OK) s = hs_hooks_add_mean_ablation(hk, m, &x->clean, r->prev, r->n_prev, 1, err);
    static const char *const cfilt[2] = {"blocks.*.attn.hook_z", "blocks.*.hook_resid_pre"};
    if (s == HS_OK) s = hs_run_with_cache(m, x->acts, tok, (int)x->n, x->T, cfilt, 2, hk, &x->corr, err);
    if (s != HS_OK) goto done;
    double acc_corr;
    seg_metrics(x->t, x->acts->logits, x->n, &acc_corr, &r->metric_corr, NULL);
    if (!(r->metric_clean - r->metric_corr >= r->opts.min_gap)) goto done; /* NaN too */
    static const int inputs[3] = {HS_INPUT_Q, HS_INPUT_K, HS_INPUT_V};
    for (int w = 0; w < 3 && s == HS_OK; w++) {
        hs_hooks_clear(hk); /* the corrupted run (senders ablated) + the one patched edge */
        s = hs_hooks_add_mean_ablation(hk, m, &x->clean, r->prev, r->n_prev, 1, err);
        if (s == HS_OK)
            s = hs_hooks_add_path_patch_senders(hk, m, &x->clean, &x->corr, r->prev, r->n_prev, r->ind_best,
                                                inputs[w], HS_LN_RECOMPUTE, err);
        if (s == HS_OK) s = hs_run_with_hooks(m, x->acts, tok, (int)x->n, x->T, hk, err);
        if (s != HS_OK) break;
        double a, lp;
        seg_metrics(x->t, x->acts->logits, x->n, &a, &lp, NULL);
        r->path[w] = hs_patch_metric(lp, r->metric_corr, r->metric_clean);
    }
done:
    hs_hooks_destroy(hk);
    return s;
}

/* The named pair's evidence (none without a pair): composition, path
 * patching, and the two heads' patterns on sequence 0. */
static hs_status pair_evidence(ictx *x, hs_ind_circuit_report *r, hs_error *err)
{
    const hs_ind_head *P = hs_ind_named_prev(r), *I = hs_ind_named_ind(r);
    if (!P || !I) return HS_OK;
    const int T = x->T;
    hs_status s = composition(x, r, P, I, err);
    if (s == HS_OK) s = path_patching(x, r, err);
    if (s != HS_OK) return s;
    r->attn_prev = malloc((size_t)T * T * sizeof(float));
    r->attn_ind = malloc((size_t)T * T * sizeof(float));
    if (!r->attn_prev || !r->attn_ind) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    const hs_cache_entry *e0 = hs_cache_getf(&x->clean, "blocks.0.attn.hook_pattern");
    const hs_cache_entry *e1 = hs_cache_getf(&x->clean, "blocks.%d.attn.hook_pattern", I->layer);
    memcpy(r->attn_prev, e0->data + (size_t)P->head * T * T, (size_t)T * T * sizeof(float));
    memcpy(r->attn_ind, e1->data + (size_t)I->head * T * T, (size_t)T * T * sizeof(float));
    return HS_OK;
}

hs_status hs_ind_circuit_run(const hs_model *m, const hs_induction *t,
                             const hs_ind_circuit_opts *opts, hs_ind_circuit_report *out,
                             hs_error *err)
{
    memset(out, 0, sizeof *out);
    hs_ind_circuit_opts o = opts ? *opts : hs_ind_circuit_opts_default();
    hs_status s = check_opts(&o, err);
    if (s == HS_OK) s = check_model(m, t, err);
    if (s != HS_OK) return s;
    hs_ind_circuit_report *r = out;
    ictx x;
    memset(&x, 0, sizeof x);
    x.m = m;
    x.t = t;
    x.n = (size_t)(o.n_seqs < t->p.n_heldout ? o.n_seqs : t->p.n_heldout);
    x.T = t->p.n_ctx;
    hs_cache_init(&x.clean);
    hs_cache_init(&x.corr);
    s = report_init(&x, &o, r, err);
    if (s == HS_OK) s = clean_run(&x, r, err);
    if (s == HS_OK) s = head_evidence(&x, r, err);
    if (s == HS_OK) { /* the roles, then what ablating each set does */
        hs_ind_find_roles(r);
        s = ablate_roles(&x, r, err);
    }
    if (s == HS_OK) s = pair_evidence(&x, r, err);
    if (s == HS_OK) s = hs_ind_verdicts(r, err);
    if (s == HS_OK && o.discover) s = hs_circ_discovery_induction(m, t, r, err);
    if (s != HS_OK) hs_ind_circuit_report_free(r);
    hs_cache_free(&x.clean);
    hs_cache_free(&x.corr);
    hs_acts_destroy(x.acts);
    return s;
}
