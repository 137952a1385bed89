/*
 * tasks/induction_circuit.c -- the induction-circuit check of tasks.h
 * ("Induction circuit check"): previous-token and induction heads from their
 * attention, K-composition against the random baseline, path patching of the
 * previous-token head into the induction head's keys / queries / values, the
 * OV copying score and mean ablations; the verdict, its JSON and a summary.
 * Built on probe/ (run_with_cache, detectors, composition, copying,
 * ablation and path-patching hooks); every forward is one batch of the
 * first n_seqs held-out sequences.
 */
#include "tasks/tasks.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

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
    r->why[k] = hs_buf_take(&b); /* NULL on OOM: hs_ind_circuit_run checks */
    r->ok[k] = ok;
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

hs_status hs_ind_circuit_run(const hs_model *m, const hs_induction *t,
                             const hs_ind_circuit_opts *opts, hs_ind_circuit_report *out,
                             hs_error *err)
{
    memset(out, 0, sizeof *out);
    hs_ind_circuit_opts o = opts ? *opts : hs_ind_circuit_opts_default();
    hs_status s = check_opts(&o, err);
    if (s != HS_OK) return s;
    const hs_config *c = &m->cfg;
    const int T = t->p.n_ctx, V = t->p.n_symbols, L = c->n_layers, H = c->n_heads;
    if (c->d_vocab != V || c->n_ctx < T)
        return hs_fail(err, HS_ERR_CONFIG, "induction circuit: the model (d_vocab %d, n_ctx %d) does "
                       "not fit the task (%d symbols, context %d)", c->d_vocab, c->n_ctx, V, T);
    if (c->attn != HS_ATTN_SOFTMAX)
        return hs_fail(err, HS_ERR_CONFIG, "induction circuit: uniform attention has no queries or "
                       "keys to compose");
    const size_t n = (size_t)(o.n_seqs < t->p.n_heldout ? o.n_seqs : t->p.n_heldout);
    hs_ind_circuit_report *r = out;
    r->opts = o;
    r->cfg = *c;
    r->task = t->p;
    r->L = L;
    r->H = H;
    r->n_seqs = n;
    r->chance = 1.0 / V;
    r->prev_best.layer = r->ind_best.layer = -1;
    r->comp_q = r->comp_k = r->comp_v = NAN;
    r->metric_clean = r->metric_corr = NAN;
    r->path[0] = r->path[1] = r->path[2] = NAN;
    r->acc_prev_ablated = r->acc_ind_ablated = NAN;

    hs_acts *acts = NULL;
    hs_cache clean, corr;
    hs_cache_init(&clean);
    hs_cache_init(&corr);
    hs_hooks *hk = NULL;
    float *score = NULL;
    r->heads = calloc((size_t)L * H, sizeof *r->heads);
    r->prev = calloc((size_t)H, sizeof *r->prev);
    r->ind = calloc((size_t)L * H, sizeof *r->ind);
    score = malloc((size_t)L * H * sizeof *score);
    if (!r->heads || !r->prev || !r->ind || !score) {
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    if ((s = hs_acts_create(c, (int)n, T, 0, &acts, err)) != HS_OK) goto fail;
    static const char *const filters[3] = {"blocks.*.attn.hook_pattern", "blocks.*.attn.hook_z",
                                           "blocks.*.hook_resid_pre"};
    if ((s = hs_run_with_cache(m, acts, t->heldout_tokens, (int)n, T, filters, 3, NULL, &clean,
                               err)) != HS_OK)
        goto fail;
    seg_metrics(t, acts->logits, n, &r->acc, &r->metric_clean, &r->n_scored);
    {
        hs_ind_score sc;
        if ((s = hs_induction_score(m, t, n, NULL, &sc, err)) != HS_OK) goto fail;
        r->seg_loss = sc.seg_loss;
        r->loss = sc.loss;
        r->icl_score = sc.icl_score;
    }

    /* per-head scores */
    if ((s = hs_detect_heads(m, &clean, t->heldout_tokens, (int)n, T, HS_DETECT_PREV_TOKEN, NULL, 0,
                             0, score, err)) != HS_OK)
        goto fail;
    for (int k = 0; k < L * H; k++) r->heads[k].prev_score = score[k];
    if ((s = hs_detect_heads(m, &clean, t->heldout_tokens, (int)n, T, HS_DETECT_INDUCTION, NULL, 0,
                             0, score, err)) != HS_OK)
        goto fail;
    for (int l = 0; l < L; l++) {
        const hs_cache_entry *e = hs_cache_getf(&clean, "blocks.%d.attn.hook_pattern", l);
        HS_ASSERT(e != NULL);
        for (int h = 0; h < H; h++) {
            hs_ind_head *hd = &r->heads[l * H + h];
            hd->layer = l;
            hd->head = h;
            snprintf(hd->name, sizeof hd->name, "L%dH%d", l, h);
            hd->tl_induction = score[l * H + h];
            double sum = 0.0;
            size_t cnt = 0;
            for (size_t q = 0; q < n; q++) {
                const hs_ind_seq *sq = &t->heldout[q];
                const float *A = e->data + (q * (size_t)H + (size_t)h) * (size_t)T * T;
                for (int k = 0; k < sq->len; k++) {
                    sum += A[(size_t)(sq->start2 + k) * T + (size_t)(sq->start1 + k + 1)];
                    cnt++;
                }
            }
            hd->ind_score = cnt ? sum / (double)cnt : 0.0;
            if ((s = hs_copying_score(m, (hs_head){l, h}, HS_FOLD_LN, &hd->copying, &hd->copying_pos,
                                      err)) != HS_OK)
                goto fail;
            if ((s = run_ablated(m, acts, t, n, &clean, &(hs_head){l, h}, 1, &hd->acc_ablated, err)) !=
                HS_OK)
                goto fail;
        }
    }

    /* roles */
    double best_p = -1.0, best_i = -1.0;
    for (int h = 0; h < H; h++) {
        hs_ind_head *hd = &r->heads[h];
        if (hd->prev_score >= o.prev_min) {
            hd->role |= 1;
            r->prev[r->n_prev++] = (hs_head){0, h};
        }
        if (hd->prev_score > best_p) best_p = hd->prev_score, r->prev_best = (hs_head){0, h};
    }
    for (int k = H; k < L * H; k++) {
        hs_ind_head *hd = &r->heads[k];
        if (hd->ind_score >= o.ind_min) {
            hd->role |= 2;
            r->ind[r->n_ind++] = (hs_head){hd->layer, hd->head};
        }
        if (hd->ind_score > best_i) best_i = hd->ind_score, r->ind_best = (hs_head){hd->layer, hd->head};
    }
    if (r->n_prev == 0) r->prev_best.layer = -1;
    if (r->n_ind == 0) r->ind_best.layer = -1;
    const hs_ind_head *P = r->prev_best.layer >= 0 ? &r->heads[r->prev_best.head] : NULL;
    const hs_ind_head *I = r->ind_best.layer >= 0 ? &r->heads[r->ind_best.layer * H + r->ind_best.head] : NULL;

    if (P)
        set_ok(r, HS_IND_PREV, 1, "previous-token head %s: score %.3f >= %.2f", P->name, P->prev_score,
               o.prev_min);
    else
        set_ok(r, HS_IND_PREV, 0, "no layer-0 head has a previous-token score >= %.2f (best %.3f)",
               o.prev_min, best_p);
    if (L < 2)
        set_ok(r, HS_IND_IND, 0, "one layer: an induction head reads a previous-token head's output through "
               "its keys (K-composition), so it needs an earlier layer; none can form");
    else if (!I)
        set_ok(r, HS_IND_IND, 0, "no head in layers >= 1 has an induction score >= %.2f (best %.3f)",
               o.ind_min, best_i);
    else
        set_ok(r, HS_IND_IND, 1, "induction head %s: induction score %.3f >= %.2f", I->name, I->ind_score,
               o.ind_min);

    /* ablation of each role set */
    if (r->n_prev > 0 &&
        (s = run_ablated(m, acts, t, n, &clean, r->prev, r->n_prev, &r->acc_prev_ablated, err)) != HS_OK)
        goto fail;
    if (r->n_ind > 0 &&
        (s = run_ablated(m, acts, t, n, &clean, r->ind, r->n_ind, &r->acc_ind_ablated, err)) != HS_OK)
        goto fail;
    if (r->n_prev > 0 && r->n_ind > 0) {
        /* the share of the accuracy above chance that each ablation removes */
        const double above = r->acc - r->chance;
        const double fp = above > 0 ? (r->acc - r->acc_prev_ablated) / above : 0.0;
        const double fi = above > 0 ? (r->acc - r->acc_ind_ablated) / above : 0.0;
        int ok = above > 0 && fp >= o.ablate_frac && fi >= o.ablate_frac;
        set_ok(r, HS_IND_ABLATE, ok,
               "accuracy %.1f%% -> %.1f%% without the previous-token head(s), %.1f%% without the induction "
               "head(s): %.0f%% and %.0f%% of the accuracy above chance (%.1f%%) removed (%s %.0f%%)",
               100 * r->acc, 100 * r->acc_prev_ablated, 100 * r->acc_ind_ablated, 100 * fp, 100 * fi,
               100 * r->chance, ok ? "both >=" : "not both >=", 100 * o.ablate_frac);
    } else {
        set_ok(r, HS_IND_ABLATE, 0, "no previous-token / induction head pair to ablate");
    }

    if (P && I) {
        /* K-composition (and Q, V) of the named pair */
        if ((s = hs_composition_scores(m, HS_FOLD_LN, o.comp_draws, o.comp_seed, &r->comp, err)) != HS_OK)
            goto fail;
        const size_t ci = (((size_t)0 * H + (size_t)P->head) * L + (size_t)I->layer) * H + (size_t)I->head;
        r->comp_q = r->comp.q[ci] - r->comp.baseline;
        r->comp_k = r->comp.k[ci] - r->comp.baseline;
        r->comp_v = r->comp.v[ci] - r->comp.baseline;
        set_ok(r, HS_IND_COMP, r->comp_k >= o.comp_min,
               "K-composition %s -> %s: %.3f above the random baseline %.3f (%s %.2f; Q %+.3f, V %+.3f)",
               P->name, I->name, r->comp_k, r->comp.baseline, r->comp_k >= o.comp_min ? ">=" : "<",
               o.comp_min, r->comp_q, r->comp_v);

        /* path patching: corrupted = every previous-token head mean-ablated;
           patched: their summed output into the induction head's q, k or v */
        const hs_head recv = r->ind_best;
        if ((s = hs_hooks_create(&hk, err)) != HS_OK) goto fail;
        if ((s = hs_hooks_add_mean_ablation(hk, m, &clean, r->prev, r->n_prev, 1, err)) != HS_OK) goto fail;
        static const char *const cfilt[2] = {"blocks.*.attn.hook_z", "blocks.*.hook_resid_pre"};
        if ((s = hs_run_with_cache(m, acts, t->heldout_tokens, (int)n, T, cfilt, 2, hk, &corr, err)) != HS_OK)
            goto fail;
        double acc_corr;
        seg_metrics(t, acts->logits, n, &acc_corr, &r->metric_corr, NULL);
        const double gap = r->metric_clean - r->metric_corr;
        static const int inputs[3] = {HS_INPUT_Q, HS_INPUT_K, HS_INPUT_V};
        if (gap >= o.min_gap) {
            for (int w = 0; w < 3; w++) {
                hs_hooks_clear(hk); /* the corrupted run (senders ablated) + the one patched edge */
                if ((s = hs_hooks_add_mean_ablation(hk, m, &clean, r->prev, r->n_prev, 1, err)) != HS_OK) goto fail;
                if ((s = hs_hooks_add_path_patch_senders(hk, m, &clean, &corr, r->prev, r->n_prev, recv,
                                                         inputs[w], HS_LN_RECOMPUTE, err)) != HS_OK)
                    goto fail;
                if ((s = hs_run_with_hooks(m, acts, t->heldout_tokens, (int)n, T, hk, err)) != HS_OK) goto fail;
                double a, lp;
                seg_metrics(t, acts->logits, n, &a, &lp, NULL);
                r->path[w] = hs_patch_metric(lp, r->metric_corr, r->metric_clean);
            }
            int ok = r->path[1] >= o.patch_k_min && fabs(r->path[0]) < o.patch_qv_max &&
                     fabs(r->path[2]) < o.patch_qv_max;
            set_ok(r, HS_IND_PATH, ok,
                   "path patching the previous-token head%s (%s%s) -> %s restores %.2f via keys (%s %.2f), %.2f via "
                   "queries, %.2f via values (%s %.2f)",
                   r->n_prev > 1 ? "s" : "", P->name, r->n_prev > 1 ? " and the others" : "", I->name, r->path[1], r->path[1] >= o.patch_k_min ? ">=" : "<", o.patch_k_min,
                   r->path[0], r->path[2],
                   fabs(r->path[0]) < o.patch_qv_max && fabs(r->path[2]) < o.patch_qv_max ? "both |.| <"
                                                                                           : "not both |.| <",
                   o.patch_qv_max);
        } else {
            set_ok(r, HS_IND_PATH, 0, "ablating the previous-token head%s moves the log-probability of the "
                   "repeated tokens by only %.2f nats (< %.2f): patching cannot decide",
                   r->n_prev > 1 ? "s" : "", gap, o.min_gap);
        }
        set_ok(r, HS_IND_COPY, I->copying >= o.copy_min, "OV copying score of %s: %.3f (%s %.2f; %.0f%% of "
               "eigenvalues positive)", I->name, I->copying, I->copying >= o.copy_min ? ">=" : "<", o.copy_min,
               100 * I->copying_pos);

        /* the named heads' patterns on sequence 0 */
        r->attn_prev = malloc((size_t)T * T * sizeof(float));
        r->attn_ind = malloc((size_t)T * T * sizeof(float));
        if (!r->attn_prev || !r->attn_ind) {
            s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
            goto fail;
        }
        const hs_cache_entry *e0 = hs_cache_getf(&clean, "blocks.0.attn.hook_pattern");
        const hs_cache_entry *e1 = hs_cache_getf(&clean, "blocks.%d.attn.hook_pattern", I->layer);
        memcpy(r->attn_prev, e0->data + (size_t)P->head * T * T, (size_t)T * T * sizeof(float));
        memcpy(r->attn_ind, e1->data + (size_t)I->head * T * T, (size_t)T * T * sizeof(float));
    } else {
        const char *why = L < 2 ? "one layer" : "no previous-token / induction head pair";
        set_ok(r, HS_IND_COMP, 0, "%s: no composition to measure", why);
        set_ok(r, HS_IND_PATH, 0, "%s: no path to patch", why);
        if (I)
            set_ok(r, HS_IND_COPY, I->copying >= o.copy_min, "OV copying score of %s: %.3f", I->name, I->copying);
        else
            set_ok(r, HS_IND_COPY, 0, "%s: no induction head whose copying to score", why);
    }

    r->holds = 1;
    for (int k = 0; k < HS_IND_N_CRIT; k++) r->holds &= r->ok[k];
    for (int k = 0; k < HS_IND_N_CRIT; k++)
        if (r->why[k] == NULL) {
            s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
            goto fail;
        }
    hs_buf vb = {0};
    if (r->holds) {
        hs_buf_printf(&vb, "HOLDS: previous-token head %s -> induction head %s", P->name, I->name);
    } else {
        int first = 0;
        while (first < HS_IND_N_CRIT && r->ok[first]) first++;
        if (L < 2) first = HS_IND_IND; /* the reason that decides it */
        hs_buf_printf(&vb, "does not hold: %s", r->why[first]);
    }
    if ((r->verdict = hs_buf_take(&vb)) == NULL) {
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    s = HS_OK;
    goto done;
fail:
    hs_ind_circuit_report_free(r);
done:
    hs_hooks_destroy(hk);
    hs_cache_free(&clean);
    hs_cache_free(&corr);
    hs_acts_destroy(acts);
    free(score);
    return s;
}

/* ------------------------------------------------------------------------ */
/* JSON and summary                                                          */

static int add_num(cJSON *o, const char *key, double v)
{
    cJSON *x = isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
    if (x == NULL) return 0;
    if (!cJSON_AddItemToObject(o, key, x)) {
        cJSON_Delete(x);
        return 0;
    }
    return 1;
}

static int add_head_list(cJSON *o, const char *key, const hs_head *h, int n)
{
    cJSON *a = cJSON_AddArrayToObject(o, key);
    if (!a) return 0;
    for (int i = 0; i < n; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "L%dH%d", h[i].layer, h[i].head);
        if (!cJSON_AddItemToArray(a, cJSON_CreateString(nm))) return 0;
    }
    return 1;
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
    cJSON *th = ok ? cJSON_AddObjectToObject(o, "thresholds") : NULL;
    ok = th && add_num(th, "prev_min", r->opts.prev_min) && add_num(th, "ind_min", r->opts.ind_min) &&
         add_num(th, "comp_min", r->opts.comp_min) && add_num(th, "patch_k_min", r->opts.patch_k_min) &&
         add_num(th, "patch_qv_max", r->opts.patch_qv_max) && add_num(th, "min_gap", r->opts.min_gap) &&
         add_num(th, "copy_min", r->opts.copy_min) && add_num(th, "ablate_frac", r->opts.ablate_frac) &&
         add_num(th, "n_seqs", r->opts.n_seqs) && add_num(th, "comp_draws", r->opts.comp_draws);
    cJSON *ta = ok ? cJSON_AddObjectToObject(o, "task_params") : NULL;
    ok = ta && add_num(ta, "n_symbols", r->task.n_symbols) && add_num(ta, "n_ctx", r->task.n_ctx) &&
         add_num(ta, "seg_min", r->task.seg_min) && add_num(ta, "seg_max", r->task.seg_max) &&
         add_num(ta, "gap_min", r->task.gap_min) && add_num(ta, "gap_max", r->task.gap_max) &&
         add_num(ta, "split_seed", (double)r->task.split_seed) && add_num(ta, "n_heldout", r->task.n_heldout);
    cJSON *cf = ok ? cJSON_AddObjectToObject(o, "config") : NULL;
    ok = cf && add_num(cf, "n_layers", r->cfg.n_layers) && add_num(cf, "d_model", r->cfg.d_model) &&
         add_num(cf, "n_heads", r->cfg.n_heads) && add_num(cf, "d_head", r->cfg.d_head) &&
         add_num(cf, "d_mlp", r->cfg.d_mlp) && add_num(cf, "n_ctx", r->cfg.n_ctx) &&
         add_num(cf, "d_vocab", r->cfg.d_vocab) && cJSON_AddStringToObject(cf, "norm", hs_norm_name(r->cfg.norm));
    ok = ok && add_num(o, "n_seqs", (double)r->n_seqs) && add_num(o, "n_scored", (double)r->n_scored) &&
         add_num(o, "accuracy", r->acc) && add_num(o, "segment_loss", r->seg_loss) && add_num(o, "loss", r->loss) &&
         add_num(o, "icl_score", r->icl_score) && add_num(o, "chance", r->chance) &&
         add_num(o, "composition_baseline", r->comp.n_draws ? r->comp.baseline : NAN) &&
         add_num(o, "composition_baseline_std", r->comp.n_draws ? r->comp.baseline_std : NAN) &&
         add_num(o, "composition_q_minus_baseline", r->comp_q) &&
         add_num(o, "composition_k_minus_baseline", r->comp_k) &&
         add_num(o, "composition_v_minus_baseline", r->comp_v) &&
         add_num(o, "metric_clean", r->metric_clean) && add_num(o, "metric_corrupted", r->metric_corr);
    cJSON *pp = ok ? cJSON_AddObjectToObject(o, "path_patching") : NULL;
    ok = pp && add_num(pp, "q", r->path[0]) && add_num(pp, "k", r->path[1]) && add_num(pp, "v", r->path[2]);
    ok = ok && add_num(o, "accuracy_previous_token_heads_ablated", r->acc_prev_ablated) &&
         add_num(o, "accuracy_induction_heads_ablated", r->acc_ind_ablated) &&
         add_head_list(o, "previous_token_heads", r->prev, r->n_prev) &&
         add_head_list(o, "induction_heads", r->ind, r->n_ind);
    cJSON *hs = ok ? cJSON_AddArrayToObject(o, "heads") : NULL;
    ok = hs != NULL;
    for (int k = 0; ok && k < r->L * r->H; k++) {
        const hs_ind_head *h = &r->heads[k];
        cJSON *x = cJSON_CreateObject();
        ok = x && cJSON_AddItemToArray(hs, x);
        if (!ok) {
            cJSON_Delete(x);
            break;
        }
        ok = cJSON_AddStringToObject(x, "name", h->name) && add_num(x, "layer", h->layer) &&
             add_num(x, "head", h->head) && add_num(x, "previous_token_score", h->prev_score) &&
             add_num(x, "induction_score", h->ind_score) && add_num(x, "tl_induction_score", h->tl_induction) &&
             add_num(x, "copying", h->copying) && add_num(x, "copying_positive_fraction", h->copying_pos) &&
             add_num(x, "accuracy_ablated", h->acc_ablated) &&
             cJSON_AddBoolToObject(x, "previous_token_head", h->role & 1) &&
             cJSON_AddBoolToObject(x, "induction_head", (h->role & 2) != 0);
    }
    if (ok) *json = cJSON_Print(o);
    cJSON_Delete(o);
    return *json ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
}

hs_status hs_ind_circuit_summary(const hs_ind_circuit_report *r, char **text, hs_error *err)
{
    hs_buf b = {0};
    hs_buf_printf(&b, "induction circuit, %d layer%s x %d heads, on %zu held-out sequences (%zu repeated-segment "
                  "tokens scored; %d symbols, context %d, segment %d..%d, gap %d..%d)\n",
                  r->L, r->L == 1 ? "" : "s", r->H, r->n_seqs, r->n_scored, r->task.n_symbols, r->task.n_ctx,
                  r->task.seg_min, r->task.seg_max, r->task.gap_min, r->task.gap_max);
    hs_buf_printf(&b, "repeated-segment accuracy %.1f%% (chance %.1f%%), segment loss %.3f, loss %.3f, "
                  "in-context-learning score %+.3f nats\n",
                  100 * r->acc, 100 * r->chance, r->seg_loss, r->loss, r->icl_score);
    hs_buf_printf(&b, "\nhead   prev-token  induction  (TL mul)  copying  acc. ablated  role\n");
    for (int k = 0; k < r->L * r->H; k++) {
        const hs_ind_head *h = &r->heads[k];
        hs_buf_printf(&b, "%-6s %10.3f %10.3f %9.3f %8.3f %12.1f%%  %s\n", h->name, h->prev_score, h->ind_score,
                      h->tl_induction, h->copying, 100 * h->acc_ablated,
                      h->role == 1 ? "previous-token" : h->role == 2 ? "induction" : h->role == 3 ? "both" : "-");
    }
    hs_buf_printf(&b, "\n");
    for (int k = 0; k < HS_IND_N_CRIT; k++)
        hs_buf_printf(&b, "[%s] %s\n", r->ok[k] ? "ok" : "no", r->why[k]);
    hs_buf_printf(&b, "\nverdict: %s\n", r->verdict);
    char *s = hs_buf_take(&b);
    *text = s;
    return s ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
}
