/*
 * circuits/circuit.c -- the two-step referent-circuit check of DESIGN.md ("The
 * two-step referent circuit"; `headscope circuit`): the Winograd prompt sets
 * (matched crosser/crossed held-out pairs, the mean-ablation reference) and
 * the runs of the experiment engine (probe.h, section 8) that give the
 * evidence: the clean and corrupted caches, the ablations and activation
 * patches on the held-out split, composition and path patching into the
 * decision heads. hs_circuit_run is the steps in order; the evidence read
 * from the clean cache is in circuits/circuit_evidence.c, the verdict rules in
 * circuits/circuit_verdict.c, the report's JSON and text summary in
 * circuits/circuit_report.c (circuits_internal.h). See circuits.h for what is
 * computed and the formulas' sources (CIRCUITS.md sections 3-6).
 *
 * Rows: 0..np-1 are the crosser sentences, np..2np-1 their crossed partners
 * in the same order, T = 15 tokens (hs_circ_ctx).
 *
 * Phases of independent engine jobs (chunks, workers and the bit-identity
 * for any thread count are the engine's):
 *   A: the clean run, the corrupted run (cached), then the position-wise
 *      means of the mean-ablation reference (hs_engine_means);
 *   B: every ablation and activation patch (they need A's caches and means);
 *   C: path patching (it needs the decision heads found from B).
 * A job whose intervention's effect on position 14 starts at position 14 of
 * a block or in the last block runs there alone (circuits/circuit_suffix.c,
 * the same bits); the evidence read from the clean cache runs as the pool's
 * lane job beside the means.
 * A job writes only its own output slots; per-row results go to the
 * worker's row buffers and are summed in row order.
 */
#include "circuits/circuits_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T_RUN HS_CIRC_T  /* positions 0..14 */
#define Q HS_WG_POS_QUERY

hs_circuit_opts hs_circuit_opts_default(void)
{
    hs_circuit_opts o;
    memset(&o, 0, sizeof o);
    o.push_attn = 0.25;
    o.push_dla = 1.0;
    o.step1_drop = 0.25;
    o.decide_patch = 0.1;
    o.min_ld_gap = 1.0;
    o.decide_drop = 0.25;
    o.route_attn = 0.25;
    o.route_dla = 1.0;
    o.adj_key_diff = 0.25;
    o.ablate_ref = HS_SPLIT_TRAIN;
    o.comp_draws = HS_COMP_DRAWS;
    o.comp_seed = 0;
    o.discover = 1;
    return o;
}

void hs_circuit_report_free(hs_circuit_report *r)
{
    if (r == NULL) return;
    free(r->heads);
    free(r->attn_rows);
    free(r->attn_rows_avg);
    free(r->acc_block_attn);
    free(r->acc_block_mlp);
    free(r->patch_layer);
    free(r->pushers);
    free(r->decision);
    free(r->path);
    free(r->route);
    free(r->step1_reason);
    free(r->step2_reason);
    free(r->route_reason);
    hs_comp_scores_free(&r->comp);
    hs_circ_discovery_free(&r->disc);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------------ */
/* Run context                                                               */

/* The engine and its workers' rows (pred, ld); the pool stays. */
static void release_engine(hs_circ_ctx *c)
{
    for (int i = 0; i < c->eng.n_workers; i++) {
        if (c->pred) free(c->pred[i]);
        if (c->ld) free(c->ld[i]);
    }
    free(c->pred);
    free(c->ld);
    c->pred = NULL;
    c->ld = NULL;
    hs_engine_free(&c->eng);
}

static void ctx_free(hs_circ_ctx *c)
{
    free(c->ex);
    free(c->tok_clean);
    free(c->tok_corr);
    free(c->ref_clean);
    free(c->ref_corr);
    hs_engine_views_free(c->clean_v, c->n_chunks);
    hs_engine_views_free(c->corr_v, c->n_chunks);
    hs_cache_free(&c->clean);
    hs_cache_free(&c->corr);
    hs_cache_free(&c->means);
    free(c->mlp_mean);
    release_engine(c);
    hs_pool_destroy(c->pool);
    memset(c, 0, sizeof *c);
}

static hs_status workers_init(hs_circ_ctx *c, int threads, hs_error *err)
{
    hs_status st = hs_pool_create(threads, &c->pool, err);
    if (st == HS_OK) st = hs_engine_init(&c->eng, c->m, c->pool, T_RUN, err);
    if (st == HS_OK) c->eng.read_pos = Q; /* every sweep reads the logits at Q alone (rows_of) */
    c->eng.whole_chunks = 1; /* its hooks and views assume whole chunks */
    if (st != HS_OK) return st;
    const int nw = c->eng.n_workers;
    c->pred = calloc((size_t)nw, sizeof *c->pred);
    c->ld = calloc((size_t)nw, sizeof *c->ld);
    if (!c->pred || !c->ld) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int i = 0; i < nw; i++) {
        c->pred[i] = malloc((size_t)c->n * sizeof **c->pred);
        c->ld[i] = malloc((size_t)c->n * sizeof **c->ld);
        if (!c->pred[i] || !c->ld[i]) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    return HS_OK;
}

/* Builds the matched held-out rows. */
static hs_status ctx_init(hs_circ_ctx *c, const hs_model *m, const hs_winograd *t, hs_error *err)
{
    memset(c, 0, sizeof *c);
    c->m = m;
    c->t = t;
    c->L = m->cfg.n_layers;
    c->H = m->cfg.n_heads;
    c->D = m->cfg.d_model;
    c->V = m->cfg.d_vocab;
    size_t nh;
    const hs_wg_example *ho = hs_winograd_examples(t, HS_SPLIT_HELDOUT, &nh);
    if (nh == 0 || nh > 100000) return hs_fail(err, HS_ERR_INPUT, "circuit: the held-out split is empty");
    c->ex = calloc(nh, sizeof *c->ex);
    if (c->ex == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    int np = 0;
    for (size_t i = 0; i < nh; i++) {
        if (ho[i].role != HS_ROLE_CROSSER) continue;
        const hs_wg_example *partner = NULL;
        for (size_t j = 0; j < nh && partner == NULL; j++)
            if (ho[j].x == ho[i].x && ho[j].y == ho[i].y && ho[j].adj == ho[i].adj + HS_WG_N_CROSSER)
                partner = &ho[j];
        if (partner == NULL)
            return hs_fail(err, HS_ERR_INPUT,
                           "circuit: held-out sentence (%s, %s, %s) has no crossed partner with the same nouns",
                           hs_wg_nouns[ho[i].x], hs_wg_nouns[ho[i].y], hs_wg_adjectives[ho[i].adj]);
        c->ex[np++] = &ho[i];
    }
    if (2 * (size_t)np != nh)
        return hs_fail(err, HS_ERR_INPUT,
                       "circuit: the held-out split has %zu sentences, not matched crosser/crossed pairs",
                       nh);
    for (int i = 0; i < np; i++)
        for (size_t j = 0; j < nh; j++)
            if (ho[j].x == c->ex[i]->x && ho[j].y == c->ex[i]->y &&
                ho[j].adj == c->ex[i]->adj + HS_WG_N_CROSSER)
                c->ex[np + i] = &ho[j];
    c->np = np;
    c->n = 2 * np;
    const int n = c->n;
    c->tok_clean = malloc((size_t)n * T_RUN * sizeof(int));
    c->tok_corr = malloc((size_t)n * T_RUN * sizeof(int));
    c->ref_clean = malloc((size_t)n * sizeof(int));
    c->ref_corr = malloc((size_t)n * sizeof(int));
    if (!c->tok_clean || !c->tok_corr || !c->ref_clean || !c->ref_corr)
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        const int pi = i < np ? i + np : i - np; /* the partner row */
        memcpy(c->tok_clean + (size_t)i * T_RUN, c->ex[i]->tokens, T_RUN * sizeof(int));
        memcpy(c->tok_corr + (size_t)i * T_RUN, c->ex[pi]->tokens, T_RUN * sizeof(int));
        c->ref_clean[i] = c->ex[i]->ref_id;
        c->ref_corr[i] = c->ex[pi]->ref_id;
    }
    c->s_diff = T_RUN;
    for (int i = 0; i < n; i++)
        for (int p = 0; p < c->s_diff; p++)
            if (c->tok_clean[(size_t)i * T_RUN + p] != c->tok_corr[(size_t)i * T_RUN + p]) c->s_diff = p;
    c->n_chunks = hs_engine_chunks(n);
    return HS_OK;
}

/* Per-row results of logits (b, T_RUN, V) of held-out rows r0..r0+b-1: the
 * argmax at 14 into pred[r0..], the LD at 14 into ld[r0..] (either may be NULL). */
static void rows_of(const hs_circ_ctx *c, const float *logits, int r0, int b, int *pred, double *ld)
{
    for (int i = 0; i < b; i++) {
        const float *row = logits + ((size_t)i * T_RUN + Q) * c->V;
        if (pred) pred[r0 + i] = hs_argmax(row, (size_t)c->V);
        if (ld) ld[r0 + i] = (double)row[c->ref_clean[r0 + i]] - (double)row[c->ref_corr[r0 + i]];
    }
}

/* Accuracy [g] and other-noun rate [g] of the argmaxes at 14 on the clean rows. */
static hs_status score_preds(const hs_circ_ctx *c, const int *pred, double acc[3], double other[3],
                             hs_error *err)
{
    size_t ok[3] = {0, 0, 0}, oth[3] = {0, 0, 0}, cnt[3] = {0, 0, 0};
    for (int i = 0; i < c->n; i++) {
        int p = pred[i];
        if (p < 0) return hs_fail(err, HS_ERR_NUMERIC, "circuit: NaN logit at position %d", Q);
        int g = i < c->np ? HS_CIRC_CROSSER : HS_CIRC_CROSSED;
        int good = p == c->ex[i]->ref_id, bad = p == c->ex[i]->other_id;
        ok[g] += (size_t)good;
        oth[g] += (size_t)bad;
        cnt[g]++;
        ok[HS_CIRC_ALL] += (size_t)good;
        oth[HS_CIRC_ALL] += (size_t)bad;
        cnt[HS_CIRC_ALL]++;
    }
    for (int g = 0; g < 3; g++) {
        acc[g] = cnt[g] ? (double)ok[g] / (double)cnt[g] : 0.0;
        if (other) other[g] = cnt[g] ? (double)oth[g] / (double)cnt[g] : 0.0;
    }
    return HS_OK;
}

/* Mean LD [HS_CIRC_PATCH_*] of the per-row LDs, summed in row order. */
static void ld_sum(const hs_circ_ctx *c, const double *d, double ld[3])
{
    double s[2] = {0.0, 0.0}, all = 0.0;
    for (int i = 0; i < c->n; i++) {
        s[i < c->np ? 0 : 1] += d[i];
        all += d[i];
    }
    ld[HS_CIRC_PATCH_CROSSER_TO_CROSSED] = s[0] / c->np;
    ld[HS_CIRC_PATCH_CROSSED_TO_CROSSER] = s[1] / c->np;
    ld[HS_CIRC_PATCH_BOTH] = all / c->n;
}

/* ------------------------------------------------------------------------ */
/* Phase A: the clean and corrupted caches, the mean-ablation reference      */

static hs_status phase_a_job(hs_engine *e, hs_engine_worker *w, int j, void *arg)
{
    hs_circ_ctx *c = arg;
    /* (the last two of each: the discovery section's evaluator's, for_eval) */
    if (j == 0) {
        static const char *const filt[] = {
            "hook_embed", "?hook_pos_embed", "blocks.*.hook_resid_pre", "?blocks.*.ln1.hook_scale",
            "?blocks.*.attn.hook_attn_scores", "blocks.*.attn.hook_pattern", "blocks.*.attn.hook_z",
            "?blocks.*.hook_mlp_out", "?ln_final.hook_scale", "logits", "blocks.*.attn.hook_result"};
        return hs_engine_cache(e, w, c->tok_clean, c->n, filt, c->for_eval ? 11 : 10, NULL, &c->clean);
    }
    /* (then every block's k, v and the last block's q for the runs of
     * hs_forward_suffix, hs_circ_suffix_runs) */
    char q_last[48];
    const char *filt[] = {"blocks.*.hook_resid_pre", "?blocks.*.ln1.hook_scale", "blocks.*.attn.hook_z", "logits",
                          "blocks.*.attn.hook_result", "?blocks.*.hook_mlp_out", "blocks.*.attn.hook_k",
                          "blocks.*.attn.hook_v", q_last};
    int nf = c->for_eval ? 6 : 4;
    if (hs_circ_suffix_runs(c)) {
        snprintf(q_last, sizeof q_last, "blocks.%d.attn.hook_q", c->L - 1);
        filt[nf++] = filt[6];
        filt[nf++] = filt[7];
        filt[nf++] = q_last;
    }
    return hs_engine_cache(e, w, c->tok_corr, c->n, filt, nf, NULL, &c->corr);
}

/* Phase A; then the position-wise means of blocks.l.attn.hook_z and
 * blocks.l.hook_mlp_out over the reference examples into c->means (entries
 * of batch 1), and the chunk views of the caches. */
/* The evidence read from the clean cache and the weights (circuit_evidence.c)
 * as the pool's lane job, started once the clean cache is in: worker 1
 * reads it while the means' jobs run, instead of both cores waiting on one
 * for it after them. It writes only its own fields of the report. */
typedef struct {
    const hs_circ_ctx *c;
    hs_circuit_report *r;
    hs_status st;
    hs_error err;
} evidence_job;

static void evidence_lane(void *arg)
{
    evidence_job *ej;
    memcpy(&ej, arg, sizeof ej);
    hs_circ_invariant(ej->c, ej->r);
    hs_circ_attention(ej->c, ej->r);
    ej->st = hs_circ_dla(ej->c, ej->r, &ej->err);
    if (ej->st == HS_OK) ej->st = hs_circ_copying(ej->c->m, ej->r, &ej->err);
}

/* Phase A's two runs; then (ej not NULL) the evidence lane job, its ticket
 * in *ticket. */
static hs_status run_phase_a(hs_circ_ctx *c, const hs_wg_example *ex, size_t n_ex, evidence_job *ej, long *ticket,
                             hs_error *err)
{
    hs_status st = hs_engine_for(&c->eng, 2, phase_a_job, c, err);
    if (st != HS_OK) return st;
    *ticket = hs_pool_async(c->pool, evidence_lane, &ej, sizeof ej);
    if (n_ex > (size_t)HS_ENGINE_CHUNK * 1000000)
        return hs_fail(err, HS_ERR_INPUT, "circuit: the reference split is too large");
    int *tok = malloc(n_ex * T_RUN * sizeof(int));
    if (tok == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n_ex; i++) memcpy(tok + i * T_RUN, ex[i].tokens, T_RUN * sizeof(int));
    static const char *const filt[] = {"blocks.*.attn.hook_z", "blocks.*.hook_mlp_out"};
    /* no final norm and no logits in the means' runs (HS_LOGITS_NONE): they
     * read no point there, and the points they read are the same bits */
    for (int i = 0; i < c->eng.n_workers; i++) c->eng.w[i].acts->logit_pos = HS_LOGITS_NONE;
    st = hs_circ_means_ok(c) ? hs_circ_means(c, tok, n_ex, err)
                             : hs_engine_means(&c->eng, tok, n_ex, filt, c->m->cfg.d_mlp > 0 ? 2 : 1, &c->means, err);
    for (int i = 0; i < c->eng.n_workers; i++) c->eng.w[i].acts->logit_pos = -1;
    free(tok);
    if (st != HS_OK) return st;
    c->mlp_mean = calloc((size_t)c->L, sizeof *c->mlp_mean);
    if (c->mlp_mean == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int l = 0; l < c->L && c->m->cfg.d_mlp > 0; l++) {
        const hs_cache_entry *mm = hs_cache_getf(&c->means, "blocks.%d.hook_mlp_out", l);
        HS_ASSERT(mm != NULL);
        c->mlp_mean[l] = mm->data;
    }
    st = hs_engine_views(&c->clean, c->n, &c->clean_v, err);
    if (st == HS_OK) st = hs_engine_views(&c->corr, c->n, &c->corr_v, err);
    return st;
}

/* MLP mean ablation: blocks.l.hook_mlp_out[b, p, :] <- mean[p, :]. */
typedef struct {
    const float *mean; /* (T_RUN, D), borrowed */
    int D;
} mlp_ablate_ctx;

static int mlp_ablate_hook(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name;
    const mlp_ablate_ctx *a = ctx;
    if (ndim != 3 || shape[1] > T_RUN || shape[2] != a->D) return -1;
    for (int64_t b = 0; b < shape[0]; b++)
        memcpy(data + (size_t)b * shape[1] * a->D, a->mean, (size_t)(shape[1] * a->D) * sizeof(float));
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Phases B and C: one intervention per job, over every chunk of the
 * held-out rows, on the worker's activations and hooks. */
enum { J_ABLATE, J_ABLATE_MLP, J_PATCH, J_PATH };

typedef struct {
    int kind;
    const hs_head *heads; /* J_ABLATE: the heads mean-ablated together; J_PATCH: patched */
    int n_heads;
    int pos;              /* J_PATCH: position patched, -1 all */
    int layer;            /* J_ABLATE_MLP */
    hs_head sender, receiver;
    int inputs;           /* J_PATH: HS_INPUT_* bits, each patched in a run of its own */
    double *acc;          /* J_ABLATE*: (3) accuracy by group */
    double *metric;       /* J_PATCH: (3) normalised patching metric; J_PATH: (3, 3) by input q, k, v */
} ijob;

typedef struct {
    hs_circ_ctx *c;
    ijob *jobs;
    const hs_circuit_report *r;
    const ijob *jb; /* the sweep's job (per worker: sw[w->index]) */
} ijobs;

/* The hooks of a sweep's job for held-out chunk k. */
static hs_status ijob_hooks(void *arg, hs_engine_worker *w, int k, int r0, int b)
{
    (void)r0;
    (void)b;
    const ijobs *ij = arg;
    const hs_circ_ctx *c = ij->c;
    const ijob *jb = ij->jb;
    hs_status st = HS_OK;
    switch (jb->kind) {
    case J_ABLATE:
        return hs_hooks_add_mean_ablation(w->hk, c->m, &c->means, jb->heads, jb->n_heads, 1, &w->err);
    case J_ABLATE_MLP: {
        mlp_ablate_ctx *mc = malloc(sizeof *mc);
        if (mc == NULL) return hs_fail(&w->err, HS_ERR_NOMEM, "out of memory");
        mc->mean = c->mlp_mean[jb->layer];
        mc->D = c->D;
        char pat[64];
        snprintf(pat, sizeof pat, "blocks.%d.hook_mlp_out", jb->layer);
        return hs_hooks_add_trusted(w->hk, pat, mlp_ablate_hook, mc, free, NULL, &w->err);
    }
    case J_PATCH:
        for (int i = 0; i < jb->n_heads && st == HS_OK; i++)
            st = hs_hooks_add_patch_head(w->hk, &c->clean_v[k], jb->heads[i], jb->pos, &w->err);
        return st;
    default:
        return hs_hooks_add_path_patch(w->hk, c->m, &c->clean_v[k], &c->corr_v[k], jb->sender,
                                       jb->receiver, jb->inputs, HS_LN_RECOMPUTE, &w->err);
    }
}

static void ijob_rows(void *arg, hs_engine_worker *w, const float *logits, int r0, int b)
{
    const ijobs *ij = arg;
    const int on_corr = ij->jb->kind == J_PATCH || ij->jb->kind == J_PATH;
    rows_of(ij->c, logits, r0, b, on_corr ? NULL : ij->c->pred[w->index],
            on_corr ? ij->c->ld[w->index] : NULL);
}

/* Job jb as hs_circ_suffix_run's edit (input x of a path patch, in[x] its
 * values). */
static hs_circ_edit edit_of(const ijob *jb, int x, float *const in[3])
{
    const int kind = jb->kind == J_PATH ? HS_CIRC_EDIT_PATH : jb->kind == J_PATCH ? HS_CIRC_EDIT_PATCH
                     : jb->kind == J_ABLATE ? HS_CIRC_EDIT_ABLATE : -1;
    return (hs_circ_edit){kind, jb->heads, jb->n_heads, jb->pos, jb->receiver, x, in};
}

/* The normalised metric [3] of the LDs in the worker's row buffer. */
static void metric_of(const hs_circ_ctx *c, const hs_engine_worker *w, const hs_circuit_report *r, double *metric)
{
    double ld[3];
    ld_sum(c, c->ld[w->index], ld);
    for (int d = 0; d < 3; d++) metric[d] = hs_patch_metric(ld[d], r->ld_corr[d], r->ld_clean[d]);
}

/* A path-patching job: each input of jb->inputs patched in a run of its
 * own; the patched inputs computed once for all of them (the same values as
 * one at a time: the receiver's x and its LN do not depend on the input). */
static hs_status path_job(hs_engine *e, hs_engine_worker *w, const ijobs *all, const ijob *jb)
{
    hs_circ_ctx *c = all->c;
    const int last = hs_circ_suffix_kind(c, &(hs_circ_edit){HS_CIRC_EDIT_PATH, NULL, 0, Q, jb->receiver, 0, NULL});
    float *in[3] = {NULL, NULL, NULL};
    hs_status st = HS_OK;
    if (last)
        st = hs_path_patch_inputs(c->m, &c->clean, &c->corr, &jb->sender, 1, jb->receiver, jb->inputs,
                                  HS_LN_RECOMPUTE, in, &w->err);
    for (int x = 0; x < 3 && st == HS_OK; x++) {
        if (!(jb->inputs & (1 << x))) continue;
        ijob one = *jb;
        one.inputs = 1 << x;
        ijobs ij = {c, all->jobs, all->r, &one};
        if (last) {
            const hs_circ_edit ed = edit_of(&one, x, in);
            st = hs_circ_suffix_run(c, &ed, NULL, c->ld[w->index], &w->err);
        } else {
            st = hs_engine_sweep_from(e, w, c->tok_corr, c->n, jb->receiver.layer, &c->corr, ijob_hooks, ijob_rows,
                                      &ij);
        }
        if (st == HS_OK) metric_of(c, w, all->r, jb->metric + 3 * x);
    }
    for (int x = 0; x < 3; x++) free(in[x]);
    return st;
}

static hs_status ijob_run(hs_engine *e, hs_engine_worker *w, int j, void *arg)
{
    const ijobs *all = arg;
    hs_circ_ctx *c = all->c;
    const ijob *jb = &all->jobs[j];
    if (jb->kind == J_PATH) return path_job(e, w, all, jb);
    ijobs one = {c, all->jobs, all->r, jb};
    const int on_corr = jb->kind == J_PATCH;
    hs_status st;
    const hs_circ_edit ed = edit_of(jb, 0, NULL);
    if (ed.kind >= 0 && hs_circ_suffix_kind(c, &ed)) {
        st = hs_circ_suffix_run(c, &ed, on_corr ? NULL : c->pred[w->index], on_corr ? c->ld[w->index] : NULL,
                                &w->err);
    } else {
        /* the layers before the intervention's are those of the run it
         * starts from (the clean or corrupted cache): start there (bit-identical) */
        int layer = jb->kind == J_ABLATE_MLP ? jb->layer : c->L;
        for (int i = 0; i < jb->n_heads && (jb->kind == J_ABLATE || jb->kind == J_PATCH); i++)
            if (jb->heads[i].layer < layer) layer = jb->heads[i].layer;
        st = hs_engine_sweep_from(e, w, on_corr ? c->tok_corr : c->tok_clean, c->n, layer,
                                  on_corr ? &c->corr : &c->clean, ijob_hooks, ijob_rows, &one);
    }
    if (st != HS_OK) return st;
    if (!on_corr) return score_preds(c, c->pred[w->index], jb->acc, NULL, &w->err);
    metric_of(c, w, all->r, jb->metric);
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* The run                                                                   */

static hs_status check_opts(const hs_circuit_opts *o, hs_error *err)
{
    const struct { const char *name; double v, lo, hi; } chk[] = {
        {"push_attn", o->push_attn, 0.0, 1.0},     {"push_dla", o->push_dla, 0.0, 1e6},
        {"step1_drop", o->step1_drop, 0.0, 1.0},   {"decide_patch", o->decide_patch, 0.0, 1e6},
        {"min_ld_gap", o->min_ld_gap, 0.0, 1e6},
        {"decide_drop", o->decide_drop, 0.0, 1.0}, {"route_attn", o->route_attn, 0.0, 1.0},
        {"route_dla", o->route_dla, 0.0, 1e6},     {"adj_key_diff", o->adj_key_diff, 0.0, 1.0},
    };
    for (size_t i = 0; i < sizeof chk / sizeof chk[0]; i++)
        if (!(chk[i].v >= chk[i].lo && chk[i].v <= chk[i].hi))
            return hs_fail(err, HS_ERR_CONFIG, "circuit: threshold %s = %g is outside [%g, %g]",
                           chk[i].name, chk[i].v, chk[i].lo, chk[i].hi);
    if (o->comp_draws < 2 || o->comp_draws > 100000)
        return hs_fail(err, HS_ERR_CONFIG, "circuit: comp_draws = %d is outside [2, 100000]", o->comp_draws);
    if (o->ablate_ref != HS_SPLIT_TRAIN && o->ablate_ref != HS_SPLIT_HELDOUT)
        return hs_fail(err, HS_ERR_CONFIG, "circuit: ablate_ref must be train or heldout");
    if (o->threads < 0 || o->threads > 1024)
        return hs_fail(err, HS_ERR_CONFIG, "circuit: threads = %d is outside [0, 1024]", o->threads);
    return HS_OK;
}

/* The model fits the task: its vocabulary, and positions 0..14. */
static hs_status check_model(const hs_model *m, const hs_winograd *t, hs_error *err)
{
    const hs_config *cfg = &m->cfg;
    if ((size_t)cfg->d_vocab != t->vocab->n)
        return hs_fail(err, HS_ERR_CONFIG,
                       "the model's d_vocab is %d but the task's vocabulary has %zu words",
                       cfg->d_vocab, t->vocab->n);
    if (cfg->n_ctx < T_RUN)
        return hs_fail(err, HS_ERR_CONFIG, "the model's n_ctx is %d but the circuit needs positions 0..%d",
                       cfg->n_ctx, Q);
    return HS_OK;
}

/* The report's facts of the run, its arrays and the heads' names. */
static hs_status report_init(const hs_circ_ctx *c, hs_circuit_report *r, hs_error *err)
{
    const hs_winograd *t = c->t;
    const int L = c->L, H = c->H;
    r->cfg = c->m->cfg;
    r->task = t->kind;
    r->split_seed = t->split_seed;
    r->pairs_given = t->pairs_given;
    r->pairs_read = t->pairs_read;
    r->chapter_pair_held_out = hs_winograd_is_held_out(t, HS_WG_CHAPTER_X, HS_WG_CHAPTER_Y) == 1;
    r->L = L;
    r->H = H;
    r->n_heldout = (size_t)c->n;
    r->n_role[0] = r->n_role[1] = (size_t)c->np;
    r->heads = calloc((size_t)L * H, sizeof *r->heads);
    r->attn_rows = calloc((size_t)L * H * 2 * T_RUN, sizeof(float));
    r->attn_rows_avg = calloc((size_t)L * 2 * T_RUN, sizeof(float));
    r->acc_block_attn = calloc((size_t)L, sizeof *r->acc_block_attn);
    r->acc_block_mlp = calloc((size_t)L, sizeof *r->acc_block_mlp);
    r->patch_layer = calloc((size_t)L, sizeof *r->patch_layer);
    r->pushers = calloc((size_t)H, sizeof *r->pushers);
    r->decision = calloc((size_t)L * H, sizeof *r->decision);
    if (!r->heads || !r->attn_rows || !r->attn_rows_avg || !r->acc_block_attn ||
        !r->acc_block_mlp || !r->patch_layer || !r->pushers || !r->decision)
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            hs_circuit_head *hd = &r->heads[l * H + h];
            hd->layer = l;
            hd->head = h;
            snprintf(hd->name, sizeof hd->name, "L%dH%d", l, h);
        }
    return HS_OK;
}

/* Phase A (the clean and corrupted runs, the mean-ablation reference), then
 * the clean accuracy and other-noun rate and the two runs' LDs. */
static hs_status clean_and_corrupted(hs_circ_ctx *c, hs_circuit_report *r, evidence_job *ej, long *ticket,
                                     hs_error *err)
{
    size_t n_ref;
    const hs_wg_example *ref = hs_winograd_examples(c->t, r->opts.ablate_ref, &n_ref);
    if (n_ref == 0)
        return hs_fail(err, HS_ERR_INPUT, "circuit: the %s split is empty", hs_wg_split_name(r->opts.ablate_ref));
    r->n_ablate_ref = n_ref;
    hs_status st = run_phase_a(c, ref, n_ref, ej, ticket, err);
    if (st != HS_OK) return st;
    const hs_cache_entry *lg = hs_cache_get(&c->clean, "logits");
    HS_ASSERT(lg != NULL);
    rows_of(c, lg->data, 0, c->n, c->pred[0], c->ld[0]);
    if ((st = score_preds(c, c->pred[0], r->acc, r->other_rate, err)) != HS_OK) return st;
    ld_sum(c, c->ld[0], r->ld_clean);
    rows_of(c, hs_cache_get(&c->corr, "logits")->data, 0, c->n, NULL, c->ld[0]);
    ld_sum(c, c->ld[0], r->ld_corr);
    return HS_OK;
}

/* Phase B: mean ablations (each head, each layer's attention, each MLP, the
 * pushers) and activation patching (each head at 14 and at all positions,
 * each layer's heads at 14), in this order. */
static hs_status ablate_and_patch(hs_circ_ctx *c, hs_circuit_report *r, hs_error *err)
{
    const int L = c->L, H = c->H;
    const int n_jobs_max = 3 * L * H + 3 * L + 1;
    hs_status st = HS_OK;
    ijob *jobs = calloc((size_t)n_jobs_max, sizeof *jobs);
    hs_head *all_heads = malloc((size_t)L * H * sizeof *all_heads);
    if (!jobs || !all_heads) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int k = 0; k < L * H; k++) all_heads[k] = (hs_head){r->heads[k].layer, r->heads[k].head};
    int nj = 0;
    for (int k = 0; k < L * H; k++)
        jobs[nj++] = (ijob){.kind = J_ABLATE, .heads = &all_heads[k], .n_heads = 1, .acc = r->heads[k].acc_ablated};
    for (int l = 0; l < L; l++) {
        jobs[nj++] = (ijob){.kind = J_ABLATE, .heads = &all_heads[l * H], .n_heads = H, .acc = r->acc_block_attn[l]};
        if (c->m->cfg.d_mlp > 0)
            jobs[nj++] = (ijob){.kind = J_ABLATE_MLP, .layer = l, .acc = r->acc_block_mlp[l]};
        else
            for (int g = 0; g < 3; g++) r->acc_block_mlp[l][g] = NAN;
    }
    if (r->n_pushers > 0)
        jobs[nj++] = (ijob){.kind = J_ABLATE, .heads = r->pushers, .n_heads = r->n_pushers, .acc = r->acc_pushers};
    for (int k = 0; k < L * H; k++) {
        hs_circuit_head *hd = &r->heads[k];
        jobs[nj++] = (ijob){.kind = J_PATCH, .heads = &all_heads[k], .n_heads = 1, .pos = Q, .metric = hd->patch_pos14};
        if (hd->layer < L - 1)
            jobs[nj++] = (ijob){.kind = J_PATCH, .heads = &all_heads[k], .n_heads = 1, .pos = -1, .metric = hd->patch_all};
    }
    for (int l = 0; l < L; l++)
        jobs[nj++] = (ijob){.kind = J_PATCH, .heads = &all_heads[l * H], .n_heads = H, .pos = Q, .metric = r->patch_layer[l]};
    HS_ASSERT(nj <= n_jobs_max);
    ijobs ij = {c, jobs, r, NULL};
    if ((st = hs_engine_for(&c->eng, nj, ijob_run, &ij, err)) != HS_OK) goto done;
    for (int k = (L - 1) * H; k < L * H; k++) /* the last layer: the same intervention */
        memcpy(r->heads[k].patch_all, r->heads[k].patch_pos14, sizeof r->heads[k].patch_all);
done:
    free(jobs);
    free(all_heads);
    return st;
}

/* The composition scores (weights alone: ~20 ms of one core on the default
 * model, most of it the random baseline's draws) as the pool's lane job,
 * started before phase A: worker 1 computes them while the caller's thread
 * runs the engine's first jobs, and then joins it, where run in line they
 * held both cores to one for their whole time. The same calls on the same
 * weights: the same bits. */
typedef struct {
    const hs_model *m;
    int draws;
    uint64_t seed;
    hs_comp_scores *out; /* the report's; nothing else reads it until the wait */
    hs_status st;
    hs_error err;
} comp_job;

static void comp_lane(void *arg)
{
    comp_job *cj;
    memcpy(&cj, arg, sizeof cj);
    cj->st = hs_composition_scores(cj->m, HS_FOLD_LN, cj->draws, cj->seed, NULL, cj->out,
                                   &cj->err);
}

/* Phase C: path patching from each layer-0 head into each decision head's
 * q, k and v (q and k only with softmax attention); the composition scores
 * are in r already (comp_lane). */
static hs_status composition_and_paths(hs_circ_ctx *c, hs_circuit_report *r, hs_error *err)
{
    hs_status st = HS_OK;
    if (r->n_decision == 0) return st;
    const int H = c->H, softmax = c->m->cfg.attn == HS_ATTN_SOFTMAX;
    const int n_path = H * r->n_decision * 3;
    r->path = malloc((size_t)n_path * sizeof(float));
    double (*met)[3] = calloc((size_t)n_path, sizeof *met);
    ijob *jobs = calloc((size_t)n_path, sizeof *jobs);
    if (r->path == NULL || met == NULL || jobs == NULL) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto done;
    }
    int nj = 0;
    for (int s = 0; s < H; s++) /* a job per edge, its inputs one run each */
        for (int d = 0; d < r->n_decision; d++)
            jobs[nj++] = (ijob){.kind = J_PATH, .sender = {0, s}, .receiver = r->decision[d],
                                .inputs = softmax ? 7 : 4, .metric = met[(s * r->n_decision + d) * 3]};
    ijobs ij = {c, jobs, r, NULL};
    st = hs_engine_for(&c->eng, nj, ijob_run, &ij, err);
    for (int i = 0; i < n_path; i++)
        r->path[i] = (i % 3 < 2 && !softmax) ? NAN : (float)met[i][HS_CIRC_PATCH_BOTH];
done:
    free(met);
    free(jobs);
    return st;
}

hs_status hs_circuit_run(const hs_model *m, const hs_winograd *t, const hs_circuit_opts *opts,
                         hs_circuit_report *out, hs_error *err)
{
    hs_circuit_report *r = out;
    memset(r, 0, sizeof *r);
    r->opts = opts ? *opts : hs_circuit_opts_default();
    hs_status st = check_opts(&r->opts, err);
    if (st == HS_OK) st = check_model(m, t, err);
    if (st != HS_OK) return st;
    hs_circ_ctx c;
    st = ctx_init(&c, m, t, err);
    if (st == HS_OK) st = workers_init(&c, r->opts.threads, err);
    if (st == HS_OK) st = report_init(&c, r, err);
    comp_job cj = {m, r->opts.comp_draws, r->opts.comp_seed, &r->comp, HS_ERR_INPUT, {0}};
    comp_job *cjp = &cj;
    long comp_ticket = -1;
    if (st == HS_OK) comp_ticket = hs_pool_async(c.pool, comp_lane, &cjp, sizeof cjp);
    c.for_eval = r->opts.discover;
    /* the evidence in the clean cache and the weights: the lane's job
     * beside the means (run_phase_a) */
    evidence_job ej = {&c, r, HS_ERR_INPUT, {0}};
    long ev_ticket = -1;
    if (st == HS_OK) st = clean_and_corrupted(&c, r, &ej, &ev_ticket, err);
    if (ev_ticket >= 0) hs_pool_wait(c.pool, ev_ticket); /* before anything returns */
    if (st == HS_OK && ej.st != HS_OK) {
        *err = ej.err;
        st = ej.st;
    }
    if (st == HS_OK) { /* step 1's candidates, then what ablating and patching them does */
        hs_circ_find_pushers(r);
        st = ablate_and_patch(&c, r, err);
    }
    if (comp_ticket >= 0) hs_pool_wait(c.pool, comp_ticket); /* before anything returns */
    if (st == HS_OK && cj.st != HS_OK) {
        *err = cj.err;
        st = cj.st;
    }
    if (st == HS_OK) { /* step 2's decision heads, then the paths into them */
        hs_circ_find_decision(r);
        st = composition_and_paths(&c, r, err);
    }
    if (st == HS_OK) st = hs_circ_verdicts(r, err);
    if (st == HS_OK && r->opts.discover) {
        /* the engine's activations are given back before the section makes
         * its own engines (hs_floats_alloc hands their pages on resident) */
        release_engine(&c);
        st = hs_circ_discovery_winograd(&c, r, err);
    }
    ctx_free(&c);
    if (st != HS_OK) hs_circuit_report_free(r);
    return st;
}
