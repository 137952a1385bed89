/*
 * tasks/circuit.c -- the two-step referent-circuit check of DESIGN.md ("The
 * two-step referent circuit"; `headscope circuit`): the layer-0 score
 * invariant, per-head attention / DLA / copying / patching / ablation
 * evidence on the held-out split, composition and path patching into the
 * decision heads, and the verdicts. See tasks.h for what is computed and the
 * formulas' sources (CIRCUITS.md sections 3-6).
 *
 * Rows: 0..np-1 are the crosser sentences, np..2np-1 their crossed partners
 * in the same order, T = 15 tokens.
 *
 * Chunks and threads. Every forward runs on at most CHUNK held-out rows (the
 * clean and corrupted caches are assembled chunk by chunk), so each
 * activation buffer holds CHUNK x 15 rows, not the whole set. The forwards
 * are grouped into phases of independent jobs:
 *   A: the clean run, the corrupted run, and the training-split chunks of the
 *      mean-ablation reference;
 *   B: every ablation and activation patch (they need A's caches and means);
 *   C: path patching (it needs the decision heads found from B).
 * Within a phase, opts.threads workers (the caller's thread and helper
 * pthreads) take jobs from one counter under a mutex; each worker owns its
 * activations (hs_acts: the packed Q/K/V weights live there too), hook
 * registry and per-row result buffers; the model, the caches, the means and
 * the chunk views of the caches are read-only while a phase runs. A job
 * writes only its own output slots. Values do not depend on the chunking or
 * on which worker ran a job: every kernel of the forward works per row (an
 * sgemm's rows do not depend on how many rows it is given; OpenBLAS is kept
 * at one thread, its threads split rows and columns only), per-row results
 * are stored and summed in row order, and the training-split means are
 * accumulated chunk by chunk in order (a worker waits for its turn), so the
 * report is bit-identical for any thread count.
 */
#include "tasks/tasks.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#define T_RUN HS_CIRC_T  /* positions 0..14 */
#define Q HS_WG_POS_QUERY
#define CHUNK 32         /* rows (sentences) per forward */
#define MAX_THREADS 8

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
    o.comp_draws = 300;
    o.comp_seed = 0;
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
    hs_comp_scores_free(&r->comp);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------------ */
/* Run context                                                               */

typedef struct jobq jobq;

/* One worker: its activations, hook registry and per-row results. */
typedef struct {
    hs_acts *acts;   /* capacity (CHUNK, T_RUN) */
    hs_hooks *hk;
    hs_cache tmp;    /* the points one chunk's cached run keeps */
    int *pred;       /* (n) argmax at 14 per held-out row, -1 on NaN */
    double *ld;      /* (n) logit(ref_clean) - logit(ref_corr) at 14 per held-out row */
    hs_error err;
} cworker;

typedef struct {
    const hs_model *m;
    const hs_winograd *t;
    int L, H, D, V;
    int n, np;                /* rows; matched pairs (n = 2 np) */
    const hs_wg_example **ex; /* (n) clean order */
    int *tok_clean, *tok_corr; /* (n, T_RUN) */
    int *ref_clean, *ref_corr; /* (n) vocab ids: the clean / corrupted sentence's referent */
    int n_chunks;             /* ceil(n / CHUNK) */
    hs_cache clean, corr;     /* caches of the clean / corrupted runs, all n rows */
    hs_cache *clean_v, *corr_v; /* (n_chunks) views of rows [CHUNK k, CHUNK (k+1)) */
    hs_cache means;           /* batch-1 "reference" cache: position-wise means */
    float **mlp_mean;         /* (L) (T_RUN, D) or NULL: views into `means` */
    int n_workers;
    cworker w[MAX_THREADS];
    jobq *q;                  /* the queue while run_jobs runs */
} cctx;

/* A view of rows [r0, r0 + b) of a cache whose entries are batch-major with
 * n rows; shares the data (free with cache_view_free). */
static hs_status cache_view(hs_cache *v, const hs_cache *full, int r0, int b, int n, hs_error *err)
{
    memset(v, 0, sizeof *v);
    v->e = malloc((size_t)(full->n ? full->n : 1) * sizeof *v->e);
    if (v->e == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int i = 0; i < full->n; i++) {
        hs_cache_entry *e = &v->e[i];
        *e = full->e[i];
        HS_ASSERT(e->shape[0] == n);
        const size_t row = e->numel / (size_t)n;
        e->shape[0] = b;
        e->numel = row * (size_t)b;
        e->data = full->e[i].data + row * (size_t)r0;
    }
    v->n = v->cap = full->n;
    return HS_OK;
}

static void cache_view_free(hs_cache *v)
{
    free(v->e);
    memset(v, 0, sizeof *v);
}

/* Copies a chunk's cache (batch b, rows r0.. of n) into `full`, creating its
 * entries (batch n) at r0 == 0. */
static hs_status cache_put_rows(hs_cache *full, const hs_cache *part, int r0, int b, int n,
                                hs_error *err)
{
    if (r0 == 0) {
        hs_cache_free(full);
        full->e = calloc((size_t)(part->n ? part->n : 1), sizeof *full->e);
        if (full->e == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
        full->cap = part->n;
        for (int i = 0; i < part->n; i++) {
            hs_cache_entry *e = &full->e[i];
            *e = part->e[i];
            e->shape[0] = n;
            e->numel = part->e[i].numel / (size_t)b * (size_t)n;
            e->data = malloc(e->numel * sizeof(float));
            if (e->data == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
            full->n = i + 1;
        }
    }
    HS_ASSERT(full->n == part->n);
    for (int i = 0; i < part->n; i++) {
        HS_ASSERT(strcmp(full->e[i].name, part->e[i].name) == 0 && part->e[i].shape[0] == b);
        const size_t row = part->e[i].numel / (size_t)b;
        memcpy(full->e[i].data + row * (size_t)r0, part->e[i].data, part->e[i].numel * sizeof(float));
    }
    return HS_OK;
}

static void cctx_free(cctx *c)
{
    free(c->ex);
    free(c->tok_clean);
    free(c->tok_corr);
    free(c->ref_clean);
    free(c->ref_corr);
    hs_cache_free(&c->clean);
    hs_cache_free(&c->corr);
    for (int k = 0; k < c->n_chunks; k++) {
        if (c->clean_v) cache_view_free(&c->clean_v[k]);
        if (c->corr_v) cache_view_free(&c->corr_v[k]);
    }
    free(c->clean_v);
    free(c->corr_v);
    hs_cache_free(&c->means);
    free(c->mlp_mean);
    for (int i = 0; i < c->n_workers; i++) {
        cworker *w = &c->w[i];
        hs_acts_destroy(w->acts);
        hs_hooks_destroy(w->hk);
        hs_cache_free(&w->tmp);
        free(w->pred);
        free(w->ld);
    }
    memset(c, 0, sizeof *c);
}

static hs_status workers_init(cctx *c, int threads, hs_error *err)
{
    if (threads == 0) threads = sysconf(_SC_NPROCESSORS_ONLN) >= 2 ? 2 : 1;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    for (int i = 0; i < threads; i++) {
        cworker *w = &c->w[i];
        c->n_workers = i + 1;
        hs_status st = hs_acts_create(&c->m->cfg, CHUNK, T_RUN, 0, &w->acts, err);
        if (st == HS_OK) st = hs_acts_set_threads(w->acts, 1, err); /* OpenBLAS at one thread */
        if (st == HS_OK) st = hs_hooks_create(&w->hk, err);
        if (st != HS_OK) return st;
        w->pred = malloc((size_t)c->n * sizeof *w->pred);
        w->ld = malloc((size_t)c->n * sizeof *w->ld);
        if (!w->pred || !w->ld) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    return HS_OK;
}

/* Builds the matched held-out rows. */
static hs_status cctx_init(cctx *c, const hs_model *m, const hs_winograd *t, hs_error *err)
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
    c->n_chunks = (n + CHUNK - 1) / CHUNK;
    c->clean_v = calloc((size_t)c->n_chunks, sizeof *c->clean_v);
    c->corr_v = calloc((size_t)c->n_chunks, sizeof *c->corr_v);
    if (!c->clean_v || !c->corr_v) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    return HS_OK;
}

/* Argmax of a logits row, ties to the lowest id (as tasks/score.c); -1 on NaN. */
static int argmax_row(const float *row, int V)
{
    int best = 0;
    for (int v = 0; v < V; v++) {
        if (isnan(row[v])) return -1;
        if (row[v] > row[best]) best = v;
    }
    return best;
}

/* Per-row results of logits (b, T_RUN, V) of held-out rows r0..r0+b-1: the
 * argmax at 14 into pred[r0..], the LD at 14 into ld[r0..] (either may be NULL). */
static void rows_of(const cctx *c, const float *logits, int r0, int b, int *pred, double *ld)
{
    for (int i = 0; i < b; i++) {
        const float *row = logits + ((size_t)i * T_RUN + Q) * c->V;
        if (pred) pred[r0 + i] = argmax_row(row, c->V);
        if (ld) ld[r0 + i] = (double)row[c->ref_clean[r0 + i]] - (double)row[c->ref_corr[r0 + i]];
    }
}

/* Accuracy [g] and other-noun rate [g] of the argmaxes at 14 on the clean rows. */
static hs_status score_preds(const cctx *c, const int *pred, double acc[3], double other[3],
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
static void ld_sum(const cctx *c, const double *d, double ld[3])
{
    double s[2] = {0.0, 0.0};
    for (int i = 0; i < c->n; i++) s[i < c->np ? 0 : 1] += d[i];
    ld[HS_CIRC_PATCH_CROSSER_TO_CROSSED] = s[0] / c->np;
    ld[HS_CIRC_PATCH_CROSSED_TO_CROSSER] = s[1] / c->np;
    ld[HS_CIRC_PATCH_BOTH] = (s[0] + s[1]) / c->n;
}

/* ------------------------------------------------------------------------ */
/* Jobs on the workers                                                       */

/* Runs job j on worker w; errors go to w->err. */
typedef hs_status (*job_fn)(cctx *c, cworker *w, int j, void *arg);

struct jobq {
    cctx *c;
    job_fn fn;
    void *arg;
    int n_jobs, next;
    int failed;          /* lowest failed job index, or -1 */
    hs_error err;        /* its error */
    int turn;            /* ordered sections (job_wait_turn): the job whose turn it is */
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

typedef struct {
    jobq *q;
    cworker *w;
} jobq_arg;

static void *jobq_loop(void *p)
{
    jobq_arg *a = p;
    jobq *q = a->q;
    for (;;) {
        pthread_mutex_lock(&q->mu);
        const int j = q->failed < 0 && q->next < q->n_jobs ? q->next++ : -1;
        pthread_mutex_unlock(&q->mu);
        if (j < 0) break;
        if (q->fn(q->c, a->w, j, q->arg) != HS_OK) {
            pthread_mutex_lock(&q->mu);
            if (q->failed < 0 || j < q->failed) {
                q->failed = j;
                q->err = a->w->err;
            }
            pthread_cond_broadcast(&q->cv);
            pthread_mutex_unlock(&q->mu);
        }
    }
    return NULL;
}

/* Jobs 0..n_jobs-1 on every worker (the caller's thread is worker 0). On
 * failure returns the error of the lowest failed job. */
static hs_status run_jobs(cctx *c, int n_jobs, job_fn fn, void *arg, hs_error *err)
{
    jobq q;
    memset(&q, 0, sizeof q);
    q.c = c;
    q.fn = fn;
    q.arg = arg;
    q.n_jobs = n_jobs;
    q.failed = -1;
    pthread_mutex_init(&q.mu, NULL);
    pthread_cond_init(&q.cv, NULL);
    c->q = &q;
    jobq_arg args[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    int helpers = c->n_workers - 1;
    if (helpers > n_jobs - 1) helpers = n_jobs - 1;
    for (int i = 0; i <= helpers; i++) args[i] = (jobq_arg){&q, &c->w[i]};
    for (int i = 1; i <= helpers; i++) /* a helper that cannot start leaves its jobs to the others */
        started[i] = pthread_create(&th[i], NULL, jobq_loop, &args[i]) == 0;
    jobq_loop(&args[0]);
    for (int i = 1; i <= helpers; i++)
        if (started[i]) pthread_join(th[i], NULL);
    pthread_mutex_destroy(&q.mu);
    pthread_cond_destroy(&q.cv);
    c->q = NULL;
    if (q.failed >= 0) {
        if (err) *err = q.err;
        return q.err.status != HS_OK ? q.err.status : HS_ERR_INPUT;
    }
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* Mean-ablation reference: position-wise means as a batch-1 cache          */

static hs_status cache_push(hs_cache *c, const char *name, const int64_t *shape, int ndim,
                            float *data, hs_error *err)
{
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 16;
        hs_cache_entry *e = realloc(c->e, (size_t)cap * sizeof *e);
        if (e == NULL) {
            free(data);
            return hs_fail(err, HS_ERR_NOMEM, "out of memory");
        }
        c->e = e;
        c->cap = cap;
    }
    hs_cache_entry *e = &c->e[c->n++];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    e->ndim = ndim;
    e->numel = 1;
    for (int i = 0; i < ndim; i++) {
        e->shape[i] = shape[i];
        e->numel *= (size_t)shape[i];
    }
    e->data = data;
    return HS_OK;
}

/* Phase A: job 0 the clean run, job 1 the corrupted run (cached chunk by
 * chunk into c->clean / c->corr), job 2 + k chunk k of the mean-ablation
 * reference, added to the sums in chunk order. */
typedef struct {
    const hs_wg_example *ref;
    size_t n_ref;
    double *zacc, *macc; /* (L, T_RUN * H * dh), (L, T_RUN * D) */
} phase_a;

static hs_status cached_run(cctx *c, cworker *w, const int *tok, const char *const *filt, int nf,
                            hs_cache *out)
{
    for (int r0 = 0; r0 < c->n; r0 += CHUNK) {
        const int b = c->n - r0 < CHUNK ? c->n - r0 : CHUNK;
        hs_status st = hs_run_with_cache(c->m, w->acts, tok + (size_t)r0 * T_RUN, b, T_RUN, filt, nf,
                                         NULL, &w->tmp, &w->err);
        if (st == HS_OK) st = cache_put_rows(out, &w->tmp, r0, b, c->n, &w->err);
        if (st != HS_OK) return st;
    }
    hs_cache_free(&w->tmp);
    return HS_OK;
}

static hs_status phase_a_job(cctx *c, cworker *w, int j, void *arg)
{
    phase_a *pa = arg;
    if (j == 0) {
        static const char *const filt[] = {
            "hook_embed", "?hook_pos_embed", "blocks.*.hook_resid_pre", "?blocks.*.ln1.hook_scale",
            "?blocks.*.attn.hook_attn_scores", "blocks.*.attn.hook_pattern", "blocks.*.attn.hook_z",
            "?blocks.*.hook_mlp_out", "?ln_final.hook_scale", "logits"};
        return cached_run(c, w, c->tok_clean, filt, 10, &c->clean);
    }
    if (j == 1) {
        static const char *const filt[] = {"blocks.*.hook_resid_pre", "?blocks.*.ln1.hook_scale",
                                           "blocks.*.attn.hook_z", "logits"};
        return cached_run(c, w, c->tok_corr, filt, 4, &c->corr);
    }
    const hs_config *cfg = &c->m->cfg;
    const int L = c->L, has_mlp = cfg->d_mlp > 0;
    const size_t zrow = (size_t)T_RUN * c->H * cfg->d_head, mrow = (size_t)T_RUN * c->D;
    const int k = j - 2;
    const size_t start = (size_t)k * CHUNK;
    const int b = (int)(pa->n_ref - start < CHUNK ? pa->n_ref - start : CHUNK);
    int tok[CHUNK * T_RUN];
    for (int i = 0; i < b; i++)
        memcpy(tok + (size_t)i * T_RUN, pa->ref[start + (size_t)i].tokens, T_RUN * sizeof(int));
    static const char *const filt[] = {"blocks.*.attn.hook_z", "blocks.*.hook_mlp_out"};
    hs_status st = hs_run_with_cache(c->m, w->acts, tok, b, T_RUN, filt, has_mlp ? 2 : 1, NULL, &w->tmp, &w->err);
    if (st != HS_OK) return st;
    /* the sums in chunk order, as one thread would add them */
    jobq *q = c->q;
    pthread_mutex_lock(&q->mu);
    while (q->turn != k && q->failed < 0) pthread_cond_wait(&q->cv, &q->mu);
    if (q->turn != k) {
        pthread_mutex_unlock(&q->mu);
        return hs_fail(&w->err, HS_ERR_INPUT, "circuit: an earlier job failed");
    }
    pthread_mutex_unlock(&q->mu);
    for (int l = 0; l < L; l++) {
        const hs_cache_entry *z = hs_cache_getf(&w->tmp, "blocks.%d.attn.hook_z", l);
        HS_ASSERT(z != NULL && z->numel == (size_t)b * zrow);
        double *za = pa->zacc + l * zrow;
        for (int i = 0; i < b; i++)
            for (size_t e = 0; e < zrow; e++) za[e] += z->data[i * zrow + e];
        if (has_mlp) {
            const hs_cache_entry *mo = hs_cache_getf(&w->tmp, "blocks.%d.hook_mlp_out", l);
            HS_ASSERT(mo != NULL && mo->numel == (size_t)b * mrow);
            double *ma = pa->macc + l * mrow;
            for (int i = 0; i < b; i++)
                for (size_t e = 0; e < mrow; e++) ma[e] += mo->data[i * mrow + e];
        }
    }
    pthread_mutex_lock(&q->mu);
    q->turn++;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return HS_OK;
}

/* Phase A; then the position-wise means of blocks.l.attn.hook_z and
 * blocks.l.hook_mlp_out over the reference examples into c->means (entries
 * of batch 1). */
static hs_status run_phase_a(cctx *c, const hs_wg_example *ex, size_t n_ex, hs_error *err)
{
    const hs_config *cfg = &c->m->cfg;
    const int L = c->L, H = c->H, dh = cfg->d_head, D = c->D;
    const int has_mlp = cfg->d_mlp > 0;
    const size_t zrow = (size_t)T_RUN * H * dh, mrow = (size_t)T_RUN * D;
    hs_status st = HS_OK;
    phase_a pa = {ex, n_ex, calloc((size_t)L * zrow, sizeof(double)), calloc((size_t)L * mrow, sizeof(double))};
    if (!pa.zacc || !pa.macc) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto done;
    }
    if (n_ex > (size_t)CHUNK * 1000000) {
        st = hs_fail(err, HS_ERR_INPUT, "circuit: the reference split is too large");
        goto done;
    }
    if ((st = run_jobs(c, 2 + (int)((n_ex + CHUNK - 1) / CHUNK), phase_a_job, &pa, err)) != HS_OK)
        goto done;
    c->mlp_mean = calloc((size_t)L, sizeof *c->mlp_mean);
    if (c->mlp_mean == NULL) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int l = 0; l < L; l++) {
        char name[64];
        float *zm = malloc(zrow * sizeof(float));
        if (zm == NULL) {
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
            goto done;
        }
        for (size_t k = 0; k < zrow; k++) zm[k] = (float)(pa.zacc[l * zrow + k] / (double)n_ex);
        const int64_t zs[4] = {1, T_RUN, H, dh};
        snprintf(name, sizeof name, "blocks.%d.attn.hook_z", l);
        if ((st = cache_push(&c->means, name, zs, 4, zm, err)) != HS_OK) goto done;
        if (has_mlp) {
            float *mm = malloc(mrow * sizeof(float));
            if (mm == NULL) {
                st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
                goto done;
            }
            for (size_t k = 0; k < mrow; k++) mm[k] = (float)(pa.macc[l * mrow + k] / (double)n_ex);
            const int64_t ms[3] = {1, T_RUN, D};
            snprintf(name, sizeof name, "blocks.%d.hook_mlp_out", l);
            if ((st = cache_push(&c->means, name, ms, 3, mm, err)) != HS_OK) goto done;
            c->mlp_mean[l] = mm;
        }
    }
    for (int k = 0; k < c->n_chunks && st == HS_OK; k++) {
        const int r0 = k * CHUNK, b = c->n - r0 < CHUNK ? c->n - r0 : CHUNK;
        st = cache_view(&c->clean_v[k], &c->clean, r0, b, c->n, err);
        if (st == HS_OK) st = cache_view(&c->corr_v[k], &c->corr, r0, b, c->n, err);
    }
done:
    free(pa.zacc);
    free(pa.macc);
    for (int i = 0; i < c->n_workers; i++) hs_cache_free(&c->w[i].tmp);
    return st;
}

/* MLP mean ablation: blocks.l.hook_mlp_out[b, p, :] <- mean[p, :]. */
typedef struct {
    const float *mean; /* (T_RUN, D) */
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
/* Evidence                                                                  */

static void invariant(const cctx *c, hs_circuit_report *r)
{
    const hs_cache_entry *s0 = hs_cache_get(&c->clean, "blocks.0.attn.hook_attn_scores");
    const hs_cache_entry *s1 = c->L > 1 ? hs_cache_get(&c->clean, "blocks.1.attn.hook_attn_scores") : NULL;
    r->inv_l1_mean_dev = NAN;
    r->inv_l1_max_dev = NAN;
    r->inv_max_dev_same_nouns = NAN;
    r->inv_max_dev_other_nouns = NAN;
    r->inv_score_mean_abs = NAN;
    if (s0 == NULL) return; /* uniform attention */
    r->inv_applicable = 1;
    const int H = c->H, n = c->n;
    const size_t TT = (size_t)T_RUN * T_RUN;
    double mx_same = 0.0, mx_other = 0.0, l1_sum = 0.0, l1_max = 0.0, abs_sum = 0.0;
    size_t cells = 0, np_same = 0, np_other = 0;
    for (int i = 0; i < n; i++)
        for (int h = 0; h < H; h++)
            for (int j = 0; j <= Q; j++)
                abs_sum += fabs(s0->data[((size_t)i * H + h) * TT + (size_t)Q * T_RUN + j]);
    r->inv_score_mean_abs = abs_sum / ((double)n * H * (Q + 1));
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            const int same = c->ex[a]->x == c->ex[b]->x && c->ex[a]->y == c->ex[b]->y;
            if (same) np_same++; else np_other++;
            const int *ta = c->tok_clean + (size_t)a * T_RUN, *tb = c->tok_clean + (size_t)b * T_RUN;
            for (int j = 0; j <= Q; j++) {
                if (ta[j] != tb[j]) continue;
                for (int h = 0; h < H; h++) {
                    const size_t oa = ((size_t)a * H + h) * TT + (size_t)Q * T_RUN + j;
                    const size_t ob = ((size_t)b * H + h) * TT + (size_t)Q * T_RUN + j;
                    double d0 = fabs((double)s0->data[oa] - (double)s0->data[ob]);
                    if (same) { if (d0 > mx_same) mx_same = d0; }
                    else if (d0 > mx_other) mx_other = d0;
                    if (s1) {
                        double d1 = fabs((double)s1->data[oa] - (double)s1->data[ob]);
                        l1_sum += d1;
                        if (d1 > l1_max) l1_max = d1;
                    }
                    cells++;
                }
            }
        }
    r->inv_pairs_same_nouns = np_same;
    r->inv_pairs_other_nouns = np_other;
    r->inv_cells = cells;
    r->inv_max_dev_same_nouns = mx_same;
    r->inv_max_dev_other_nouns = mx_other;
    if (s1 && cells) {
        r->inv_l1_mean_dev = l1_sum / (double)cells;
        r->inv_l1_max_dev = l1_max;
    }
}

static void attention_stats(const cctx *c, hs_circuit_report *r)
{
    const int L = c->L, H = c->H, n = c->n;
    const size_t TT = (size_t)T_RUN * T_RUN;
    for (int l = 0; l < L; l++) {
        const hs_cache_entry *p = hs_cache_getf(&c->clean, "blocks.%d.attn.hook_pattern", l);
        HS_ASSERT(p != NULL);
        for (int h = 0; h < H; h++) {
            hs_circuit_head *hd = &r->heads[l * H + h];
            double sum[3][4] = {{0}}, row[2][T_RUN];
            memset(row, 0, sizeof row);
            for (int i = 0; i < n; i++) {
                const int g = i < c->np ? HS_CIRC_CROSSER : HS_CIRC_CROSSED;
                const float *a = p->data + ((size_t)i * H + h) * TT + (size_t)Q * T_RUN;
                double el = 0.0;
                for (int j = 0; j <= Q; j++) {
                    row[g][j] += a[j];
                    if (j != HS_WG_POS_X && j != HS_WG_POS_Y && j != HS_WG_POS_ADJ) el += a[j];
                }
                const double v[4] = {a[HS_WG_POS_X], a[HS_WG_POS_Y], a[HS_WG_POS_ADJ], el};
                for (int k = 0; k < 4; k++) {
                    sum[g][k] += v[k];
                    sum[HS_CIRC_ALL][k] += v[k];
                }
            }
            for (int k = 0; k < 4; k++) {
                hd->attn[HS_CIRC_CROSSER][k] = sum[HS_CIRC_CROSSER][k] / c->np;
                hd->attn[HS_CIRC_CROSSED][k] = sum[HS_CIRC_CROSSED][k] / c->np;
                hd->attn[HS_CIRC_ALL][k] = sum[HS_CIRC_ALL][k] / n;
            }
            for (int g = 0; g < 2; g++)
                for (int j = 0; j < T_RUN; j++) {
                    float v = (float)(row[g][j] / c->np);
                    r->attn_rows[(((size_t)l * H + h) * 2 + g) * T_RUN + j] = v;
                    r->attn_rows_avg[((size_t)l * 2 + g) * T_RUN + j] += v / (float)H;
                }
        }
    }
}

/* DLA of every head at 14 towards x and towards y (hs_logit_attribution). */
static hs_status dla_stats(const cctx *c, hs_circuit_report *r, hs_error *err)
{
    const int L = c->L, H = c->H, n = c->n;
    double (*acc)[3][4] = calloc((size_t)L * H, sizeof *acc);
    int *idx = malloc((size_t)L * H * sizeof *idx);
    hs_status st = HS_OK;
    if (!acc || !idx) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < n && st == HS_OK; i++) {
        const int g = i < c->np ? HS_CIRC_CROSSER : HS_CIRC_CROSSED;
        const int xid = c->ex[i]->tokens[HS_WG_POS_X], yid = c->ex[i]->tokens[HS_WG_POS_Y];
        hs_dla dx, dy;
        if ((st = hs_logit_attribution(c->m, &c->clean, i, Q, xid, -1, &dx, err)) != HS_OK) break;
        if ((st = hs_logit_attribution(c->m, &c->clean, i, Q, yid, -1, &dy, err)) != HS_OK) {
            hs_dla_free(&dx);
            break;
        }
        if (i == 0) {
            for (int k = 0; k < L * H; k++) {
                idx[k] = -1;
                for (int j = 0; j < dx.n; j++)
                    if (strcmp(dx.labels[j], r->heads[k].name) == 0) idx[k] = j;
                HS_ASSERT(idx[k] >= 0);
            }
        }
        for (int k = 0; k < L * H; k++) {
            const double ax = dx.attr[idx[k]], ay = dy.attr[idx[k]];
            const double v[4] = {ax, ay, ax - ay, g == HS_CIRC_CROSSER ? ax - ay : ay - ax};
            for (int d = 0; d < 4; d++) {
                acc[k][g][d] += v[d];
                acc[k][HS_CIRC_ALL][d] += v[d];
            }
        }
        hs_dla_free(&dx);
        hs_dla_free(&dy);
    }
    if (st == HS_OK)
        for (int k = 0; k < L * H; k++)
            for (int d = 0; d < 4; d++) {
                r->heads[k].dla[HS_CIRC_CROSSER][d] = acc[k][HS_CIRC_CROSSER][d] / c->np;
                r->heads[k].dla[HS_CIRC_CROSSED][d] = acc[k][HS_CIRC_CROSSED][d] / c->np;
                r->heads[k].dla[HS_CIRC_ALL][d] = acc[k][HS_CIRC_ALL][d] / n;
            }
done:
    free(acc);
    free(idx);
    return st;
}

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
    int inputs;           /* J_PATH: HS_INPUT_* bit */
    double *acc;          /* J_ABLATE*: (3) accuracy by group */
    double *metric;       /* J_PATCH, J_PATH: (3) normalised patching metric */
} ijob;

typedef struct {
    ijob *jobs;
    const hs_circuit_report *r;
} ijobs;

/* The hooks of job jb for held-out chunk k. */
static hs_status ijob_hooks(cctx *c, cworker *w, const ijob *jb, int k)
{
    hs_status st = HS_OK;
    hs_hooks_clear(w->hk);
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
        return hs_hooks_add_owned(w->hk, pat, mlp_ablate_hook, mc, free, &w->err);
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

static hs_status ijob_run(cctx *c, cworker *w, int j, void *arg)
{
    const ijobs *ij = arg;
    const ijob *jb = &ij->jobs[j];
    const int on_corr = jb->kind == J_PATCH || jb->kind == J_PATH;
    for (int k = 0; k < c->n_chunks; k++) {
        const int r0 = k * CHUNK, b = c->n - r0 < CHUNK ? c->n - r0 : CHUNK;
        hs_status st = ijob_hooks(c, w, jb, k);
        if (st == HS_OK)
            st = hs_run_with_hooks(c->m, w->acts, (on_corr ? c->tok_corr : c->tok_clean) + (size_t)r0 * T_RUN,
                                   b, T_RUN, w->hk, &w->err);
        if (st != HS_OK) return st;
        rows_of(c, w->acts->logits, r0, b, on_corr ? NULL : w->pred, on_corr ? w->ld : NULL);
    }
    hs_hooks_clear(w->hk);
    if (!on_corr) return score_preds(c, w->pred, jb->acc, NULL, &w->err);
    double ld[3];
    ld_sum(c, w->ld, ld);
    for (int d = 0; d < 3; d++) jb->metric[d] = hs_patch_metric(ld[d], ij->r->ld_corr[d], ij->r->ld_clean[d]);
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* Verdicts                                                                  */

static void appendf(char *buf, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void appendf(char *buf, size_t cap, const char *fmt, ...)
{
    size_t len = strlen(buf);
    if (len + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, cap - len, fmt, ap);
    va_end(ap);
}

static double max_drop(const double base[3], const double abl[3])
{
    double a = base[HS_CIRC_CROSSER] - abl[HS_CIRC_CROSSER];
    double b = base[HS_CIRC_CROSSED] - abl[HS_CIRC_CROSSED];
    return a > b ? a : b;
}

static void route_features(hs_circuit_report *r)
{
    const hs_circuit_opts *o = &r->opts;
    const int H = r->H;
    char *why = r->route_reason;
    const size_t cap = sizeof r->route_reason;
    why[0] = '\0';
    int f = 0;
    for (int h = 0; h < H; h++) {
        const hs_circuit_head *hd = &r->heads[h];
        double dif = hd->attn[HS_CIRC_CROSSER][HS_CIRC_ON_ADJ] - hd->attn[HS_CIRC_CROSSED][HS_CIRC_ON_ADJ];
        if (fabs(dif) >= o->adj_key_diff) {
            f |= HS_ROUTE_ADJ_KEY;
            appendf(why, cap, "adjective-key: %s puts %.2f on crosser vs %.2f on crossed adjectives; ", hd->name,
                    hd->attn[HS_CIRC_CROSSER][HS_CIRC_ON_ADJ], hd->attn[HS_CIRC_CROSSED][HS_CIRC_ON_ADJ]);
        }
    }
    for (int k = 0; k < r->n_decision; k++) {
        const hs_circuit_head *hd = &r->heads[r->decision[k].layer * H + r->decision[k].head];
        const double (*A)[4] = hd->attn, (*Dl)[4] = hd->dla;
        if (A[HS_CIRC_CROSSER][HS_CIRC_ON_ADJ] >= o->route_attn) {
            f |= HS_ROUTE_ADJ_READ;
            appendf(why, cap, "adjective-read: %s puts %.2f on crosser adjectives; ", hd->name,
                    A[HS_CIRC_CROSSER][HS_CIRC_ON_ADJ]);
        }
        /* DLA of (y - x) with crossed adjectives, (x - y) with crosser ones */
        const double dyx = -Dl[HS_CIRC_CROSSED][HS_CIRC_DLA_X_MINUS_Y], dxy = Dl[HS_CIRC_CROSSER][HS_CIRC_DLA_X_MINUS_Y];
        if (A[HS_CIRC_CROSSED][HS_CIRC_ON_Y] >= o->route_attn && dyx >= o->route_dla) {
            f |= HS_ROUTE_OTHER_NOUN;
            appendf(why, cap, "other-noun-fetch: %s puts %.2f on y with crossed adjectives and raises y over x (DLA y-x %+.2f); ",
                    hd->name, A[HS_CIRC_CROSSED][HS_CIRC_ON_Y], dyx);
        }
        if (A[HS_CIRC_CROSSER][HS_CIRC_ON_X] >= o->route_attn && dxy >= o->route_dla) {
            f |= HS_ROUTE_REFERENT_FETCH;
            appendf(why, cap, "referent-fetch: %s puts %.2f on x with crosser adjectives and raises x over y (DLA x-y %+.2f); ",
                    hd->name, A[HS_CIRC_CROSSER][HS_CIRC_ON_X], dxy);
        }
        for (int g = 0; g < 2; g++)
            for (int nn = 0; nn < 2; nn++) {
                const double a = A[g][nn == 0 ? HS_CIRC_ON_X : HS_CIRC_ON_Y];
                const double d = (nn == 0 ? 1.0 : -1.0) * Dl[g][HS_CIRC_DLA_X_MINUS_Y];
                if (a >= o->route_attn && d <= -o->route_dla) {
                    f |= HS_ROUTE_SUPPRESSION;
                    appendf(why, cap, "suppression: %s puts %.2f on %s with %s adjectives and lowers it below %s (DLA %+.2f); ",
                            hd->name, a, nn == 0 ? "x" : "y", hs_wg_role_name((hs_wg_role)g), nn == 0 ? "y" : "x", d);
                }
            }
    }
    r->route_features = f;
    size_t len = strlen(why);
    if (len >= 2 && why[len - 2] == ';') why[len - 2] = '\0';
    char *rt = r->route;
    rt[0] = '\0';
    if (r->L < 2) {
        snprintf(rt, sizeof r->route, "one-layer");
        return;
    }
    if (!r->step2_holds) {
        snprintf(rt, sizeof r->route, "none");
        return;
    }
    int left = f;
    if (f & HS_ROUTE_ADJ_KEY) appendf(rt, sizeof r->route, "adjective-key");
    left &= ~HS_ROUTE_ADJ_KEY;
    const int chapter = (f & HS_ROUTE_ADJ_READ) && (f & HS_ROUTE_OTHER_NOUN) && !(f & HS_ROUTE_REFERENT_FETCH);
    const int fetch = (f & HS_ROUTE_REFERENT_FETCH) && (f & HS_ROUTE_OTHER_NOUN);
    if (chapter) {
        appendf(rt, sizeof r->route, "%schapter", rt[0] ? " + " : "");
        left &= ~(HS_ROUTE_ADJ_READ | HS_ROUTE_OTHER_NOUN);
    } else if (fetch) {
        appendf(rt, sizeof r->route, "%sreferent-fetch", rt[0] ? " + " : "");
        left &= ~(HS_ROUTE_REFERENT_FETCH | HS_ROUTE_OTHER_NOUN);
    }
    static const struct { int bit; const char *name; } names[] = {
        {HS_ROUTE_ADJ_READ, "adjective-read"},
        {HS_ROUTE_OTHER_NOUN, "other-noun-fetch"},
        {HS_ROUTE_REFERENT_FETCH, "referent-fetch"},
        {HS_ROUTE_SUPPRESSION, "suppression"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (left & names[i].bit) appendf(rt, sizeof r->route, "%s%s", rt[0] ? " + " : "", names[i].name);
    if (rt[0] == '\0') snprintf(rt, sizeof r->route, "other");
}

/* ------------------------------------------------------------------------ */
/* The run                                                                   */

/* Largest mean weight (all held-out) a layer-0 head puts on target `on`. */
static double max_attn0(const hs_circuit_report *r, int on)
{
    double m = 0.0;
    for (int h = 0; h < r->H; h++)
        if (r->heads[h].attn[HS_CIRC_ALL][on] > m) m = r->heads[h].attn[HS_CIRC_ALL][on];
    return m;
}

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
    if (o->threads < 0 || o->threads > MAX_THREADS)
        return hs_fail(err, HS_ERR_CONFIG, "circuit: threads = %d is outside [0, %d]", o->threads, MAX_THREADS);
    return HS_OK;
}

hs_status hs_circuit_run(const hs_model *m, const hs_winograd *t, const hs_circuit_opts *opts,
                         hs_circuit_report *out, hs_error *err)
{
    hs_circuit_report *r = out;
    memset(r, 0, sizeof *r);
    r->opts = opts ? *opts : hs_circuit_opts_default();
    hs_status st = check_opts(&r->opts, err);
    if (st != HS_OK) return st;
    const hs_config *cfg = &m->cfg;
    if ((size_t)cfg->d_vocab != t->vocab->n)
        return hs_fail(err, HS_ERR_CONFIG,
                       "the model's d_vocab is %d but the task's vocabulary has %zu words",
                       cfg->d_vocab, t->vocab->n);
    if (cfg->n_ctx < T_RUN)
        return hs_fail(err, HS_ERR_CONFIG, "the model's n_ctx is %d but the circuit needs positions 0..%d",
                       cfg->n_ctx, Q);
    cctx c;
    ijob *jobs = NULL;
    hs_head *all_heads = NULL;
    st = cctx_init(&c, m, t, err);
    if (st == HS_OK) st = workers_init(&c, r->opts.threads, err);
    if (st != HS_OK) goto fail;
    const int L = c.L, H = c.H;
    const int softmax = cfg->attn == HS_ATTN_SOFTMAX;
    r->cfg = *cfg;
    r->task = t->kind;
    r->split_seed = t->split_seed;
    r->chapter_pair_held_out = hs_winograd_is_held_out(t, HS_WG_CHAPTER_X, HS_WG_CHAPTER_Y) == 1;
    r->L = L;
    r->H = H;
    r->n_heldout = (size_t)c.n;
    r->n_role[0] = r->n_role[1] = (size_t)c.np;
    r->heads = calloc((size_t)L * H, sizeof *r->heads);
    r->attn_rows = calloc((size_t)L * H * 2 * T_RUN, sizeof(float));
    r->attn_rows_avg = calloc((size_t)L * 2 * T_RUN, sizeof(float));
    r->acc_block_attn = calloc((size_t)L, sizeof *r->acc_block_attn);
    r->acc_block_mlp = calloc((size_t)L, sizeof *r->acc_block_mlp);
    r->patch_layer = calloc((size_t)L, sizeof *r->patch_layer);
    r->pushers = calloc((size_t)H, sizeof *r->pushers);
    r->decision = calloc((size_t)L * H, sizeof *r->decision);
    if (!r->heads || !r->attn_rows || !r->attn_rows_avg || !r->acc_block_attn ||
        !r->acc_block_mlp || !r->patch_layer || !r->pushers || !r->decision) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            hs_circuit_head *hd = &r->heads[l * H + h];
            hd->layer = l;
            hd->head = h;
            snprintf(hd->name, sizeof hd->name, "L%dH%d", l, h);
        }


    /* phase A: the clean and corrupted runs and the mean-ablation reference */
    size_t n_ref;
    const hs_wg_example *ref = hs_winograd_examples(t, r->opts.ablate_ref, &n_ref);
    if (n_ref == 0) {
        st = hs_fail(err, HS_ERR_INPUT, "circuit: the %s split is empty", hs_wg_split_name(r->opts.ablate_ref));
        goto fail;
    }
    r->n_ablate_ref = n_ref;
    if ((st = run_phase_a(&c, ref, n_ref, err)) != HS_OK) goto fail;
    const hs_cache_entry *lg = hs_cache_get(&c.clean, "logits");
    HS_ASSERT(lg != NULL);
    rows_of(&c, lg->data, 0, c.n, c.w[0].pred, c.w[0].ld);
    if ((st = score_preds(&c, c.w[0].pred, r->acc, r->other_rate, err)) != HS_OK) goto fail;
    ld_sum(&c, c.w[0].ld, r->ld_clean);
    rows_of(&c, hs_cache_get(&c.corr, "logits")->data, 0, c.n, NULL, c.w[0].ld);
    ld_sum(&c, c.w[0].ld, r->ld_corr);

    invariant(&c, r);
    attention_stats(&c, r);
    if ((st = dla_stats(&c, r, err)) != HS_OK) goto fail;
    for (int k = 0; k < L * H; k++) {
        hs_head hh = {r->heads[k].layer, r->heads[k].head};
        if ((st = hs_copying_score(m, hh, HS_FOLD_LN, &r->heads[k].copying, &r->heads[k].copying_pos, err)) != HS_OK)
            goto fail;
    }

    /* step 1: candidate pushers */
    for (int h = 0; h < H; h++) {
        hs_circuit_head *hd = &r->heads[h];
        if (hd->attn[HS_CIRC_ALL][HS_CIRC_ON_X] >= r->opts.push_attn &&
            hd->dla[HS_CIRC_ALL][HS_CIRC_DLA_X] >= r->opts.push_dla)
            hd->pusher |= 1;
        if (hd->attn[HS_CIRC_ALL][HS_CIRC_ON_Y] >= r->opts.push_attn &&
            hd->dla[HS_CIRC_ALL][HS_CIRC_DLA_Y] >= r->opts.push_dla)
            hd->pusher |= 2;
        if (hd->pusher) r->pushers[r->n_pushers++] = (hs_head){0, h};
    }
    for (int g = 0; g < 3; g++) r->acc_pushers[g] = NAN;

    /* phase B: mean ablations (each head, each layer's attention, each MLP,
     * the pushers) and activation patching (each head at 14 and at all
     * positions, each layer's heads at 14) */
    const int n_jobs_max = 4 * L * H + 3 * L + 1 + 3 * H * L * H;
    jobs = calloc((size_t)n_jobs_max, sizeof *jobs);
    all_heads = malloc((size_t)L * H * sizeof *all_heads);
    if (!jobs || !all_heads) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (int k = 0; k < L * H; k++) all_heads[k] = (hs_head){r->heads[k].layer, r->heads[k].head};
    int nj = 0;
    for (int k = 0; k < L * H; k++)
        jobs[nj++] = (ijob){.kind = J_ABLATE, .heads = &all_heads[k], .n_heads = 1, .acc = r->heads[k].acc_ablated};
    for (int l = 0; l < L; l++) {
        jobs[nj++] = (ijob){.kind = J_ABLATE, .heads = &all_heads[l * H], .n_heads = H, .acc = r->acc_block_attn[l]};
        if (cfg->d_mlp > 0)
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
    ijobs ij = {jobs, r};
    if ((st = run_jobs(&c, nj, ijob_run, &ij, err)) != HS_OK) goto fail;
    for (int k = (L - 1) * H; k < L * H; k++) /* the last layer: the same intervention */
        memcpy(r->heads[k].patch_all, r->heads[k].patch_pos14, sizeof r->heads[k].patch_all);

    /* step 2: decision heads. The normalised patching metric divides by
     * LD_clean - LD_corr; when the model does not separate the two roles
     * (an untrained model) that is ~0 and the metric is noise, so only
     * ablation can make a decision head then. */
    r->patch_usable = fabs((double)r->ld_clean[HS_CIRC_PATCH_BOTH] - r->ld_corr[HS_CIRC_PATCH_BOTH]) >=
                      r->opts.min_ld_gap;
    for (int k = H; k < L * H; k++) {
        hs_circuit_head *hd = &r->heads[k];
        if (r->patch_usable && fabs(hd->patch_pos14[HS_CIRC_PATCH_BOTH]) >= r->opts.decide_patch)
            hd->decision |= 1;
        if (max_drop(r->acc, hd->acc_ablated) >= r->opts.decide_drop) hd->decision |= 2;
        if (hd->decision) r->decision[r->n_decision++] = (hs_head){hd->layer, hd->head};
    }

    /* composition, and phase C: path patching into the decision heads */
    if ((st = hs_composition_scores(m, HS_FOLD_LN, r->opts.comp_draws, r->opts.comp_seed, &r->comp, err)) != HS_OK)
        goto fail;
    if (r->n_decision > 0) {
        const int n_path = H * r->n_decision * 3;
        r->path = malloc((size_t)n_path * sizeof(float));
        double (*met)[3] = calloc((size_t)n_path, sizeof *met);
        if (r->path == NULL || met == NULL) {
            free(met);
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
            goto fail;
        }
        nj = 0;
        for (int s = 0; s < H; s++)
            for (int d = 0; d < r->n_decision; d++)
                for (int w = 0; w < 3; w++) {
                    const int i = (s * r->n_decision + d) * 3 + w;
                    if (w < 2 && !softmax) continue;
                    jobs[nj++] = (ijob){.kind = J_PATH, .sender = {0, s}, .receiver = r->decision[d],
                                        .inputs = 1 << w, .metric = met[i]};
                }
        st = run_jobs(&c, nj, ijob_run, &ij, err);
        for (int i = 0; i < n_path; i++)
            r->path[i] = (i % 3 < 2 && !softmax) ? NAN : (float)met[i][HS_CIRC_PATCH_BOTH];
        free(met);
        if (st != HS_OK) goto fail;
    }

    /* verdicts */
    {
        const hs_circuit_opts *o = &r->opts;
        char *w = r->step1_reason;
        if (r->n_pushers == 0) {
            r->step1_holds = 0;
            snprintf(w, sizeof r->step1_reason,
                     "no layer-0 head puts >= %.2f on x or y at position 14 with DLA >= %+.2f towards that noun "
                     "(max weight on x %.2f, on y %.2f)",
                     o->push_attn, o->push_dla, max_attn0(r, HS_CIRC_ON_X), max_attn0(r, HS_CIRC_ON_Y));
            int any = 0;
            for (int h = 0; h < H; h++) {
                const hs_circuit_head *hd = &r->heads[h];
                const double a0 = hd->attn[HS_CIRC_CROSSER][HS_CIRC_ON_ADJ], a1 = hd->attn[HS_CIRC_CROSSED][HS_CIRC_ON_ADJ];
                if (fabs(a0 - a1) < o->adj_key_diff) continue;
                appendf(w, sizeof r->step1_reason,
                        "%s %s %.2f on crosser / %.2f on crossed adjectives (patching it alone at 14: %+.2f)",
                        any ? "," : "; instead layer 0 fetches the adjective by its key:", hd->name, a0, a1,
                        hd->patch_pos14[HS_CIRC_PATCH_BOTH]);
                any = 1;
            }
            appendf(w, sizeof r->step1_reason, "; mean-ablating layer 0's attention: held-out accuracy %.1f%% -> %.1f%%",
                    100 * r->acc[HS_CIRC_ALL], 100 * r->acc_block_attn[0][HS_CIRC_ALL]);
        } else {
            double drop = r->acc[HS_CIRC_ALL] - r->acc_pushers[HS_CIRC_ALL];
            r->step1_holds = drop >= o->step1_drop;
            w[0] = '\0';
            appendf(w, sizeof r->step1_reason, "pusher%s", r->n_pushers > 1 ? "s" : "");
            for (int i = 0; i < r->n_pushers; i++) {
                const hs_circuit_head *hd = &r->heads[r->pushers[i].head];
                appendf(w, sizeof r->step1_reason, " %s (%s%s%s: weight %.2f, DLA %+.2f)", hd->name,
                        (hd->pusher & 1) ? "x" : "", hd->pusher == 3 ? "," : "", (hd->pusher & 2) ? "y" : "",
                        (hd->pusher & 1) ? hd->attn[HS_CIRC_ALL][HS_CIRC_ON_X] : hd->attn[HS_CIRC_ALL][HS_CIRC_ON_Y],
                        (hd->pusher & 1) ? hd->dla[HS_CIRC_ALL][HS_CIRC_DLA_X] : hd->dla[HS_CIRC_ALL][HS_CIRC_DLA_Y]);
            }
            appendf(w, sizeof r->step1_reason,
                    "; mean-ablating %s: held-out accuracy %.1f%% -> %.1f%% (drop %.1f points %s %.1f)",
                    r->n_pushers > 1 ? "them" : "it", 100 * r->acc[HS_CIRC_ALL],
                    100 * r->acc_pushers[HS_CIRC_ALL], 100 * drop, r->step1_holds ? ">=" : "<",
                    100 * o->step1_drop);
        }
        w = r->step2_reason;
        r->step2_applicable = L >= 2;
        if (!r->step2_applicable) {
            snprintf(w, sizeof r->step2_reason, "not applicable: one layer");
        } else if (r->n_decision == 0 && !r->patch_usable) {
            snprintf(w, sizeof r->step2_reason,
                     "patching cannot judge: the clean and corrupted logit differences differ by only %.2f "
                     "(< %.2f), so the model does not separate the roles; and no head's mean-ablation drops "
                     "a role's held-out accuracy by >= %.1f points",
                     fabs((double)r->ld_clean[HS_CIRC_PATCH_BOTH] - r->ld_corr[HS_CIRC_PATCH_BOTH]),
                     o->min_ld_gap, 100 * o->decide_drop);
        } else if (r->n_decision == 0) {
            snprintf(w, sizeof r->step2_reason,
                     "no head in layer >= 1 moves the normalised logit difference by >= %.2f when patched at 14, "
                     "nor drops a role's held-out accuracy by >= %.1f points when mean-ablated",
                     o->decide_patch, 100 * o->decide_drop);
        } else {
            r->step2_holds = 1;
            w[0] = '\0';
            appendf(w, sizeof r->step2_reason, "decision head%s", r->n_decision > 1 ? "s" : "");
            for (int i = 0; i < r->n_decision; i++) {
                const hs_circuit_head *hd = &r->heads[r->decision[i].layer * H + r->decision[i].head];
                appendf(w, sizeof r->step2_reason, "%s %s (patching %+.2f, ablation drops crosser %.1f / crossed %.1f points)",
                        i ? ";" : "", hd->name, hd->patch_pos14[HS_CIRC_PATCH_BOTH],
                        100 * (r->acc[0] - hd->acc_ablated[0]), 100 * (r->acc[1] - hd->acc_ablated[1]));
            }
        }
        route_features(r);
    }
    free(jobs);
    free(all_heads);
    cctx_free(&c);
    return HS_OK;
fail:
    free(jobs);
    free(all_heads);
    cctx_free(&c);
    hs_circuit_report_free(r);
    return st;
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                      */

static cJSON *num(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

/* Adds key: v (null for NaN/Inf). Returns 0 on OOM. */
static int add_num(cJSON *o, const char *key, double v)
{
    cJSON *n = num(v);
    if (n == NULL) return 0;
    if (!cJSON_AddItemToObject(o, key, n)) {
        cJSON_Delete(n);
        return 0;
    }
    return 1;
}

static const char *const GROUP_NAMES[3] = {"crosser", "crossed", "all"};
static const char *const PATCH_NAMES[3] = {"crosser_to_crossed", "crossed_to_crosser", "both"};

static cJSON *groups3(const double v[3])
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL) return NULL;
    for (int g = 0; g < 3; g++)
        if (!add_num(o, GROUP_NAMES[g], v[g])) {
            cJSON_Delete(o);
            return NULL;
        }
    return o;
}

static cJSON *patch3(const double v[3])
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL) return NULL;
    for (int g = 0; g < 3; g++)
        if (!add_num(o, PATCH_NAMES[g], v[g])) {
            cJSON_Delete(o);
            return NULL;
        }
    return o;
}

static int add_item(cJSON *o, const char *key, cJSON *item)
{
    if (item == NULL) return 0;
    if (!cJSON_AddItemToObject(o, key, item)) {
        cJSON_Delete(item);
        return 0;
    }
    return 1;
}

static cJSON *config_json(const hs_config *c)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL) return NULL;
    int ok = cJSON_AddNumberToObject(o, "n_layers", c->n_layers) &&
             cJSON_AddNumberToObject(o, "d_model", c->d_model) &&
             cJSON_AddNumberToObject(o, "n_heads", c->n_heads) &&
             cJSON_AddNumberToObject(o, "d_head", c->d_head) &&
             cJSON_AddNumberToObject(o, "d_mlp", c->d_mlp) &&
             cJSON_AddNumberToObject(o, "n_ctx", c->n_ctx) &&
             cJSON_AddNumberToObject(o, "d_vocab", c->d_vocab) &&
             cJSON_AddStringToObject(o, "norm", hs_norm_name(c->norm)) &&
             cJSON_AddNumberToObject(o, "eps", c->eps) &&
             cJSON_AddStringToObject(o, "act", hs_act_name(c->act)) &&
             cJSON_AddStringToObject(o, "pos", hs_pos_name(c->pos)) &&
             cJSON_AddStringToObject(o, "attn", hs_attn_name(c->attn)) &&
             cJSON_AddBoolToObject(o, "ln1", c->ln1) &&
             cJSON_AddBoolToObject(o, "ln_final", c->ln_final) &&
             cJSON_AddBoolToObject(o, "embed_norm", c->embed_norm) &&
             cJSON_AddBoolToObject(o, "bias", c->bias);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *head_ref(const hs_circuit_report *r, hs_head h)
{
    return cJSON_CreateString(r->heads[h.layer * r->H + h.head].name);
}

hs_status hs_circuit_report_json(const hs_circuit_report *r, const char *model_path,
                                 char **json, hs_error *err)
{
    *json = NULL;
    const int L = r->L, H = r->H;
    const hs_circuit_opts *o = &r->opts;
    cJSON *root = cJSON_CreateObject();
    if (root == NULL) goto nomem;
    if (model_path && !cJSON_AddStringToObject(root, "model", model_path)) goto nomem;
    if (!add_item(root, "config", config_json(&r->cfg))) goto nomem;
    if (!cJSON_AddStringToObject(root, "task", hs_task_name(r->task))) goto nomem;
    if (!cJSON_AddNumberToObject(root, "split_seed", (double)r->split_seed)) goto nomem;
    if (!cJSON_AddBoolToObject(root, "chapter_pair_held_out", r->chapter_pair_held_out)) goto nomem;
    if (!cJSON_AddStringToObject(root, "numbering",
                                 "layers, heads and positions count from 0; the chapter's block 1 = layer 0, block 2 = layer 1"))
        goto nomem;
    cJSON *pos = cJSON_AddObjectToObject(root, "positions");
    if (!pos || !cJSON_AddNumberToObject(pos, "x", HS_WG_POS_X) ||
        !cJSON_AddNumberToObject(pos, "y", HS_WG_POS_Y) ||
        !cJSON_AddNumberToObject(pos, "adjective", HS_WG_POS_ADJ) ||
        !cJSON_AddNumberToObject(pos, "query", HS_WG_POS_QUERY) ||
        !cJSON_AddNumberToObject(pos, "ref", HS_WG_POS_REF))
        goto nomem;

    cJSON *th = cJSON_AddObjectToObject(root, "thresholds");
    if (!th || !add_num(th, "push_attn", o->push_attn) || !add_num(th, "push_dla", o->push_dla) ||
        !add_num(th, "step1_drop", o->step1_drop) || !add_num(th, "decide_patch", o->decide_patch) ||
        !add_num(th, "min_ld_gap", o->min_ld_gap) ||
        !add_num(th, "decide_drop", o->decide_drop) || !add_num(th, "route_attn", o->route_attn) ||
        !add_num(th, "route_dla", o->route_dla) || !add_num(th, "adj_key_diff", o->adj_key_diff) ||
        !cJSON_AddStringToObject(th, "ablate_ref", hs_wg_split_name(o->ablate_ref)) ||
        !cJSON_AddNumberToObject(th, "comp_draws", o->comp_draws) ||
        !cJSON_AddNumberToObject(th, "comp_seed", (double)o->comp_seed))
        goto nomem;

    cJSON *ho = cJSON_AddObjectToObject(root, "heldout");
    if (!ho || !cJSON_AddNumberToObject(ho, "n", (double)r->n_heldout) ||
        !cJSON_AddNumberToObject(ho, "n_crosser", (double)r->n_role[0]) ||
        !cJSON_AddNumberToObject(ho, "n_crossed", (double)r->n_role[1]) ||
        !add_item(ho, "accuracy", groups3(r->acc)) || !add_item(ho, "other_noun_rate", groups3(r->other_rate)))
        goto nomem;

    cJSON *inv = cJSON_AddObjectToObject(root, "invariant");
    if (!inv || !cJSON_AddBoolToObject(inv, "applicable", r->inv_applicable) ||
        !cJSON_AddStringToObject(inv, "what",
                                 "blocks.0.attn.hook_attn_scores row 14: max |difference| between two held-out "
                                 "sentences over the columns whose tokens are equal (all heads, columns 0..14)") ||
        !cJSON_AddNumberToObject(inv, "pairs_same_nouns", (double)r->inv_pairs_same_nouns) ||
        !cJSON_AddNumberToObject(inv, "pairs_other_nouns", (double)r->inv_pairs_other_nouns) ||
        !cJSON_AddNumberToObject(inv, "cells_compared", (double)r->inv_cells) ||
        !add_num(inv, "max_dev_same_nouns", r->inv_max_dev_same_nouns) ||
        !add_num(inv, "max_dev_other_nouns", r->inv_max_dev_other_nouns) ||
        !add_num(inv, "layer0_score_mean_abs", r->inv_score_mean_abs) ||
        !add_num(inv, "layer1_mean_dev", r->inv_l1_mean_dev) ||
        !add_num(inv, "layer1_max_dev", r->inv_l1_max_dev))
        goto nomem;

    cJSON *heads = cJSON_AddArrayToObject(root, "heads");
    if (!heads) goto nomem;
    static const char *const ON[4] = {"x", "y", "adjective", "elsewhere"};
    static const char *const DL[4] = {"x", "y", "x_minus_y", "ref_minus_other"};
    for (int k = 0; k < L * H; k++) {
        const hs_circuit_head *hd = &r->heads[k];
        cJSON *h = cJSON_CreateObject();
        if (!h || !cJSON_AddItemToArray(heads, h)) {
            cJSON_Delete(h);
            goto nomem;
        }
        if (!cJSON_AddStringToObject(h, "name", hd->name) || !cJSON_AddNumberToObject(h, "layer", hd->layer) ||
            !cJSON_AddNumberToObject(h, "head", hd->head))
            goto nomem;
        cJSON *roles = cJSON_AddArrayToObject(h, "roles");
        if (!roles) goto nomem;
        if (hd->pusher & 1) cJSON_AddItemToArray(roles, cJSON_CreateString("candidate pusher (x)"));
        if (hd->pusher & 2) cJSON_AddItemToArray(roles, cJSON_CreateString("candidate pusher (y)"));
        if (hd->decision & 1) cJSON_AddItemToArray(roles, cJSON_CreateString("decision (patching)"));
        if (hd->decision & 2) cJSON_AddItemToArray(roles, cJSON_CreateString("decision (ablation)"));
        cJSON *at = cJSON_AddObjectToObject(h, "attention_at_14");
        cJSON *dl = cJSON_AddObjectToObject(h, "dla_at_14");
        if (!at || !dl) goto nomem;
        for (int g = 0; g < 3; g++) {
            cJSON *ag = cJSON_AddObjectToObject(at, GROUP_NAMES[g]);
            cJSON *dg = cJSON_AddObjectToObject(dl, GROUP_NAMES[g]);
            if (!ag || !dg) goto nomem;
            for (int i = 0; i < 4; i++)
                if (!add_num(ag, ON[i], hd->attn[g][i]) || !add_num(dg, DL[i], hd->dla[g][i])) goto nomem;
        }
        if (!add_num(h, "copying_score", hd->copying) || !add_num(h, "copying_pos_frac", hd->copying_pos))
            goto nomem;
        cJSON *pt = cJSON_AddObjectToObject(h, "patching");
        if (!pt || !add_item(pt, "pos14", patch3(hd->patch_pos14)) || !add_item(pt, "all_positions", patch3(hd->patch_all)))
            goto nomem;
        cJSON *ab = cJSON_AddObjectToObject(h, "mean_ablation");
        double drop[3];
        for (int g = 0; g < 3; g++) drop[g] = r->acc[g] - hd->acc_ablated[g];
        if (!ab || !add_item(ab, "accuracy", groups3(hd->acc_ablated)) || !add_item(ab, "drop", groups3(drop)))
            goto nomem;
        cJSON *rows = cJSON_AddObjectToObject(h, "mean_pattern_row_14");
        if (!rows) goto nomem;
        for (int g = 0; g < 2; g++) {
            cJSON *a = cJSON_CreateFloatArray(r->attn_rows + ((size_t)k * 2 + g) * HS_CIRC_T, HS_CIRC_T);
            if (!add_item(rows, GROUP_NAMES[g], a)) goto nomem;
        }
    }

    cJSON *avg = cJSON_AddArrayToObject(root, "layer_mean_pattern_row_14");
    if (!avg) goto nomem;
    for (int l = 0; l < L; l++) {
        cJSON *e = cJSON_CreateObject();
        if (!e || !cJSON_AddItemToArray(avg, e)) {
            cJSON_Delete(e);
            goto nomem;
        }
        if (!cJSON_AddNumberToObject(e, "layer", l)) goto nomem;
        for (int g = 0; g < 2; g++)
            if (!add_item(e, GROUP_NAMES[g], cJSON_CreateFloatArray(r->attn_rows_avg + ((size_t)l * 2 + g) * HS_CIRC_T, HS_CIRC_T)))
                goto nomem;
    }

    cJSON *blk = cJSON_AddArrayToObject(root, "block_ablation");
    if (!blk) goto nomem;
    for (int l = 0; l < L; l++) {
        cJSON *e = cJSON_CreateObject();
        if (!e || !cJSON_AddItemToArray(blk, e)) {
            cJSON_Delete(e);
            goto nomem;
        }
        if (!cJSON_AddNumberToObject(e, "layer", l) || !add_item(e, "attention_accuracy", groups3(r->acc_block_attn[l])) ||
            !add_item(e, "mlp_accuracy", groups3(r->acc_block_mlp[l])))
            goto nomem;
    }
    if (!cJSON_AddStringToObject(root, "ablation_method",
                                 "mean ablation, position-wise means of hook_z (heads) / hook_mlp_out (MLP) over the reference split"))
        goto nomem;
    if (!cJSON_AddNumberToObject(root, "ablation_ref_sentences", (double)r->n_ablate_ref)) goto nomem;

    cJSON *pm = cJSON_AddObjectToObject(root, "patching");
    if (!pm || !cJSON_AddStringToObject(pm, "method",
                                        "activation patching of hook_z at position 14 (pos14) or all positions; clean = "
                                        "crosser (resp. crossed) sentence, corrupted = the other-role sentence with the same "
                                        "nouns; LD = logit(ref_clean) - logit(ref_corr) at 14; metric = (LD_patched - LD_corr) "
                                        "/ (LD_clean - LD_corr)") ||
        !add_item(pm, "ld_clean", patch3(r->ld_clean)) || !add_item(pm, "ld_corr", patch3(r->ld_corr)) ||
        !cJSON_AddBoolToObject(pm, "usable", r->patch_usable))
        goto nomem;
    cJSON *pla = cJSON_AddArrayToObject(pm, "whole_layer_pos14");
    if (!pla) goto nomem;
    for (int l = 0; l < L; l++) {
        cJSON *e = cJSON_CreateObject();
        if (!e || !cJSON_AddItemToArray(pla, e)) {
            cJSON_Delete(e);
            goto nomem;
        }
        if (!cJSON_AddNumberToObject(e, "layer", l) || !add_item(e, "metric", patch3(r->patch_layer[l]))) goto nomem;
    }

    cJSON *cp = cJSON_AddObjectToObject(root, "composition");
    if (!cp || !add_num(cp, "baseline", r->comp.baseline) || !add_num(cp, "baseline_std", r->comp.baseline_std) ||
        !cJSON_AddNumberToObject(cp, "n_draws", r->comp.n_draws) ||
        !cJSON_AddStringToObject(cp, "fold", "LN folded and centred (HS_FOLD_LN)"))
        goto nomem;
    cJSON *pairs = cJSON_AddArrayToObject(cp, "pairs");
    if (!pairs) goto nomem;
    if (r->comp.q)
        for (int l1 = 0; l1 < L; l1++)
            for (int h1 = 0; h1 < H; h1++)
                for (int l2 = l1 + 1; l2 < L; l2++)
                    for (int h2 = 0; h2 < H; h2++) {
                        size_t i = (((size_t)l1 * H + h1) * L + l2) * H + h2;
                        cJSON *e = cJSON_CreateObject();
                        if (!e || !cJSON_AddItemToArray(pairs, e)) {
                            cJSON_Delete(e);
                            goto nomem;
                        }
                        if (!cJSON_AddStringToObject(e, "sender", r->heads[l1 * H + h1].name) ||
                            !cJSON_AddStringToObject(e, "receiver", r->heads[l2 * H + h2].name) ||
                            !add_num(e, "q", r->comp.q[i]) || !add_num(e, "k", r->comp.k[i]) ||
                            !add_num(e, "v", r->comp.v[i]) || !add_num(e, "q_minus_baseline", r->comp.q[i] - r->comp.baseline) ||
                            !add_num(e, "k_minus_baseline", r->comp.k[i] - r->comp.baseline) ||
                            !add_num(e, "v_minus_baseline", r->comp.v[i] - r->comp.baseline))
                            goto nomem;
                    }

    cJSON *pp = cJSON_AddObjectToObject(root, "path_patching");
    if (!pp || !cJSON_AddStringToObject(pp, "method",
                                        "sender = layer-0 head, receiver = decision head's q, k or v input "
                                        "(receiver LN recomputed); both directions; normalised LD metric"))
        goto nomem;
    cJSON *pl = cJSON_AddArrayToObject(pp, "edges");
    if (!pl) goto nomem;
    for (int s = 0; s < H && r->path; s++)
        for (int d = 0; d < r->n_decision; d++) {
            cJSON *e = cJSON_CreateObject();
            if (!e || !cJSON_AddItemToArray(pl, e)) {
                cJSON_Delete(e);
                goto nomem;
            }
            const float *v = &r->path[((size_t)s * r->n_decision + d) * 3];
            if (!cJSON_AddStringToObject(e, "sender", r->heads[s].name) ||
                !add_item(e, "receiver", head_ref(r, r->decision[d])) || !add_num(e, "q", v[0]) ||
                !add_num(e, "k", v[1]) || !add_num(e, "v", v[2]))
                goto nomem;
        }

    cJSON *steps = cJSON_AddObjectToObject(root, "verdict");
    if (!steps) goto nomem;
    cJSON *s1 = cJSON_AddObjectToObject(steps, "step1");
    if (!s1 || !cJSON_AddBoolToObject(s1, "holds", r->step1_holds) ||
        !cJSON_AddStringToObject(s1, "reason", r->step1_reason) || !add_item(s1, "accuracy_pushers_ablated", groups3(r->acc_pushers)))
        goto nomem;
    cJSON *pu = cJSON_AddArrayToObject(s1, "pushers");
    if (!pu) goto nomem;
    for (int i = 0; i < r->n_pushers; i++)
        if (!cJSON_AddItemToArray(pu, head_ref(r, r->pushers[i]))) goto nomem;
    cJSON *s2 = cJSON_AddObjectToObject(steps, "step2");
    if (!s2 || !cJSON_AddBoolToObject(s2, "applicable", r->step2_applicable) ||
        !cJSON_AddBoolToObject(s2, "holds", r->step2_holds) || !cJSON_AddStringToObject(s2, "reason", r->step2_reason))
        goto nomem;
    cJSON *de = cJSON_AddArrayToObject(s2, "decision_heads");
    if (!de) goto nomem;
    for (int i = 0; i < r->n_decision; i++)
        if (!cJSON_AddItemToArray(de, head_ref(r, r->decision[i]))) goto nomem;
    cJSON *rt = cJSON_AddObjectToObject(steps, "route");
    cJSON *ft = rt ? cJSON_AddObjectToObject(rt, "features") : NULL;
    if (!ft || !cJSON_AddStringToObject(rt, "name", r->route) ||
        !cJSON_AddStringToObject(rt, "evidence", r->route_reason) ||
        !cJSON_AddBoolToObject(rt, "chapter", strstr(r->route, "chapter") != NULL) ||
        !cJSON_AddBoolToObject(ft, "adjective_read", r->route_features & HS_ROUTE_ADJ_READ) ||
        !cJSON_AddBoolToObject(ft, "other_noun_fetch", r->route_features & HS_ROUTE_OTHER_NOUN) ||
        !cJSON_AddBoolToObject(ft, "referent_fetch", r->route_features & HS_ROUTE_REFERENT_FETCH) ||
        !cJSON_AddBoolToObject(ft, "suppression", r->route_features & HS_ROUTE_SUPPRESSION) ||
        !cJSON_AddBoolToObject(ft, "adjective_key", r->route_features & HS_ROUTE_ADJ_KEY))
        goto nomem;

    *json = cJSON_Print(root);
    cJSON_Delete(root);
    if (*json == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory writing the report JSON");
    return HS_OK;
nomem:
    cJSON_Delete(root);
    return hs_fail(err, HS_ERR_NOMEM, "out of memory building the report JSON");
}

/* ------------------------------------------------------------------------ */
/* Text summary                                                              */

typedef struct {
    char *buf;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_printf(sbuf *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void sb_printf(sbuf *s, const char *fmt, ...)
{
    if (s->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(s->buf ? s->buf + s->len : NULL, s->buf ? s->cap - s->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            s->oom = 1;
            return;
        }
        if (s->buf && s->len + (size_t)n < s->cap) {
            s->len += (size_t)n;
            return;
        }
        size_t cap = s->cap ? s->cap * 2 : 4096;
        while (cap < s->len + (size_t)n + 1) cap *= 2;
        char *b = realloc(s->buf, cap);
        if (b == NULL) {
            s->oom = 1;
            return;
        }
        s->buf = b;
        s->cap = cap;
    }
}

static const char *pct(char *b, size_t n, double v)
{
    if (isfinite(v)) snprintf(b, n, "%5.1f%%", 100 * v);
    else snprintf(b, n, "   n/a");
    return b;
}

static const char *fmtv(char *b, size_t n, const char *f, double v)
{
    if (isfinite(v)) snprintf(b, n, f, v);
    else snprintf(b, n, "n/a");
    return b;
}

hs_status hs_circuit_summary(const hs_circuit_report *r, char **text, hs_error *err)
{
    *text = NULL;
    sbuf s = {0};
    const int L = r->L, H = r->H;
    const hs_circuit_opts *o = &r->opts;
    char a[32], b[32], c3[32], d4[32];
    sb_printf(&s, "circuit: %s, split seed %llu, %zu held-out sentences (%zu crosser, %zu crossed); "
                  "the chapter's pair (animal, street) is %s\n",
              hs_task_name(r->task), (unsigned long long)r->split_seed, r->n_heldout, r->n_role[0],
              r->n_role[1], r->chapter_pair_held_out ? "held out" : "in training");
    sb_printf(&s, "model: %d layer%s x %d heads (d_head %d), d_model %d, d_mlp %d, %s, %s attention\n", L,
              L > 1 ? "s" : "", H, r->cfg.d_head, r->cfg.d_model, r->cfg.d_mlp, hs_norm_name(r->cfg.norm),
              hs_attn_name(r->cfg.attn));
    sb_printf(&s, "held-out accuracy %s (crosser %s, crossed %s); other noun %s\n",
              pct(a, sizeof a, r->acc[2]), pct(b, sizeof b, r->acc[0]), pct(c3, sizeof c3, r->acc[1]),
              pct(d4, sizeof d4, r->other_rate[2]));
    sb_printf(&s, "layers, heads and positions count from 0 (block 1 = layer 0, block 2 = layer 1); "
                  "x = position 1, y = 6, adjective = 11, prediction at 14\n\n");

    sb_printf(&s, "invariant: layer-0 scores at position 14 differ only in columns whose tokens differ\n");
    if (!r->inv_applicable) {
        sb_printf(&s, "  not applicable: uniform attention has no scores\n\n");
    } else {
        sb_printf(&s, "  max |deviation| in equal-token columns: %.3g over %zu same-noun pairs, %.3g over %zu "
                      "other pairs (%zu cells; mean |score| %.3g)\n",
                  r->inv_max_dev_same_nouns, r->inv_pairs_same_nouns, r->inv_max_dev_other_nouns,
                  r->inv_pairs_other_nouns, r->inv_cells, r->inv_score_mean_abs);
        if (L > 1)
            sb_printf(&s, "  layer 1 in the same columns, for contrast: mean %.3g, max %.3g\n", r->inv_l1_mean_dev,
                      r->inv_l1_max_dev);
        sb_printf(&s, "\n");
    }

    sb_printf(&s, "per head at position 14 (means over the held-out sentences of each adjective role):\n");
    sb_printf(&s, "         attention crosser    | attention crossed    | DLA crosser | DLA crossed |       |"
                  " patch | ablated accuracy\n");
    sb_printf(&s, "          x    y  adj else |  x    y  adj else |    x     y  |    x     y  |  copy |   @14 |"
                  " crosser crossed\n");
    for (int k = 0; k < L * H; k++) {
        const hs_circuit_head *hd = &r->heads[k];
        if (k > 0 && hd->head == 0) sb_printf(&s, "\n");
        sb_printf(&s, "  %-5s %.2f %.2f %.2f %.2f | %.2f %.2f %.2f %.2f | %+5.2f %+5.2f | %+5.2f %+5.2f | %+.2f | %s | %s %s",
                  hd->name, hd->attn[0][0], hd->attn[0][1], hd->attn[0][2], hd->attn[0][3], hd->attn[1][0],
                  hd->attn[1][1], hd->attn[1][2], hd->attn[1][3], hd->dla[0][0], hd->dla[0][1], hd->dla[1][0],
                  hd->dla[1][1], hd->copying, fmtv(a, sizeof a, "%+5.2f", hd->patch_pos14[2]),
                  pct(b, sizeof b, hd->acc_ablated[0]), pct(c3, sizeof c3, hd->acc_ablated[1]));
        if (hd->pusher) sb_printf(&s, "  <- pusher (%s)", hd->pusher == 1 ? "x" : hd->pusher == 2 ? "y" : "x,y");
        if (hd->decision) sb_printf(&s, "  <- decision");
        sb_printf(&s, "\n");
    }
    sb_printf(&s, "\nhead-averaged attention at 14 (the chapter's rows; chapter: layer 0 0.70 on x for every "
                  "adjective; layer 1 crosser 1.00 on the adjective, crossed 0.49 on y):\n");
    for (int l = 0; l < L; l++)
        for (int g = 0; g < 2; g++) {
            const float *row = r->attn_rows_avg + ((size_t)l * 2 + g) * HS_CIRC_T;
            sb_printf(&s, "  L%d %-7s x %.2f  y %.2f  adj %.2f  elsewhere %.2f\n", l, GROUP_NAMES[g],
                      row[HS_WG_POS_X], row[HS_WG_POS_Y], row[HS_WG_POS_ADJ],
                      1.0 - row[HS_WG_POS_X] - row[HS_WG_POS_Y] - row[HS_WG_POS_ADJ]);
        }

    sb_printf(&s, "\nmean ablation (position-wise means over the %s split, %zu sentences): held-out accuracy "
                  "all / crosser / crossed\n",
              hs_wg_split_name(o->ablate_ref), r->n_ablate_ref);
    sb_printf(&s, "  none            %s / %s / %s\n", pct(a, sizeof a, r->acc[2]), pct(b, sizeof b, r->acc[0]),
              pct(c3, sizeof c3, r->acc[1]));
    for (int l = 0; l < L; l++) {
        sb_printf(&s, "  L%d attention    %s / %s / %s\n", l, pct(a, sizeof a, r->acc_block_attn[l][2]),
                  pct(b, sizeof b, r->acc_block_attn[l][0]), pct(c3, sizeof c3, r->acc_block_attn[l][1]));
        if (r->cfg.d_mlp > 0)
            sb_printf(&s, "  L%d MLP          %s / %s / %s\n", l, pct(a, sizeof a, r->acc_block_mlp[l][2]),
                      pct(b, sizeof b, r->acc_block_mlp[l][0]), pct(c3, sizeof c3, r->acc_block_mlp[l][1]));
    }
    if (r->n_pushers > 0)
        sb_printf(&s, "  all pushers     %s / %s / %s\n", pct(a, sizeof a, r->acc_pushers[2]),
                  pct(b, sizeof b, r->acc_pushers[0]), pct(c3, sizeof c3, r->acc_pushers[1]));

    sb_printf(&s, "\nactivation patching (hook_z; clean = one role, corrupted = the other with the same nouns): "
                  "LD clean %+.2f, corrupted %+.2f\n",
              r->ld_clean[2], r->ld_corr[2]);
    sb_printf(&s, "        pos14: crosser->crossed crossed->crosser   both | all positions: both\n");
    for (int k = 0; k < L * H; k++) {
        const hs_circuit_head *hd = &r->heads[k];
        sb_printf(&s, "  %-5s        %+6.2f          %+6.2f        %+6.2f |  %+6.2f\n", hd->name,
                  hd->patch_pos14[0], hd->patch_pos14[1], hd->patch_pos14[2], hd->patch_all[2]);
    }
    for (int l = 0; l < L; l++)
        sb_printf(&s, "  L%d (all heads) %+6.2f          %+6.2f        %+6.2f |\n", l, r->patch_layer[l][0],
                  r->patch_layer[l][1], r->patch_layer[l][2]);

    if (L > 1) {
        sb_printf(&s, "\ncomposition scores minus the random baseline %.3f (+/- %.3f), layer 0 -> layer 1, Q / K / V:\n",
                  r->comp.baseline, r->comp.baseline_std);
        for (int h1 = 0; h1 < H; h1++) {
            sb_printf(&s, "  L0H%-2d ->", h1);
            for (int h2 = 0; h2 < H; h2++) {
                size_t i = (((size_t)0 * H + h1) * L + 1) * H + h2;
                sb_printf(&s, "  L1H%d %s/%s/%s", h2, fmtv(a, sizeof a, "%+.2f", r->comp.q[i] - r->comp.baseline),
                          fmtv(b, sizeof b, "%+.2f", r->comp.k[i] - r->comp.baseline),
                          fmtv(c3, sizeof c3, "%+.2f", r->comp.v[i] - r->comp.baseline));
            }
            sb_printf(&s, "\n");
        }
    }
    if (r->n_decision > 0 && r->path) {
        sb_printf(&s, "\npath patching layer-0 head -> decision head input (normalised LD, both directions), q / k / v:\n");
        for (int sd = 0; sd < H; sd++) {
            sb_printf(&s, "  L0H%-2d ->", sd);
            for (int d = 0; d < r->n_decision; d++) {
                const float *v = &r->path[((size_t)sd * r->n_decision + d) * 3];
                sb_printf(&s, "  %s %s/%s/%s", r->heads[r->decision[d].layer * H + r->decision[d].head].name,
                          fmtv(a, sizeof a, "%+.2f", v[0]), fmtv(b, sizeof b, "%+.2f", v[1]),
                          fmtv(c3, sizeof c3, "%+.2f", v[2]));
            }
            sb_printf(&s, "\n");
        }
    }

    sb_printf(&s, "\nstep 1 (candidate push, layer 0): %s -- %s\n", r->step1_holds ? "HOLDS" : "does not hold",
              r->step1_reason);
    if (!r->step2_applicable)
        sb_printf(&s, "step 2 (decision, layer >= 1): %s\n", r->step2_reason);
    else
        sb_printf(&s, "step 2 (decision, layer >= 1): %s -- %s\n", r->step2_holds ? "HOLDS" : "does not hold",
                  r->step2_reason);
    sb_printf(&s, "route: %s%s%s\n", r->route, r->route_reason[0] ? " -- " : "", r->route_reason);
    sb_printf(&s, "thresholds: pusher attention >= %.2f and DLA >= %+.2f; step 1 ablation drop >= %.0f points; "
                  "decision |patching| >= %.2f or a role's ablation drop >= %.0f points; route attention >= %.2f, "
                  "|DLA| >= %.2f, adjective-key role difference >= %.2f\n",
              o->push_attn, o->push_dla, 100 * o->step1_drop, o->decide_patch, 100 * o->decide_drop, o->route_attn,
              o->route_dla, o->adj_key_diff);
    if (s.oom) {
        free(s.buf);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory writing the summary");
    }
    *text = s.buf;
    return HS_OK;
}
