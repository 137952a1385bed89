/*
 * probe/engine.c -- the experiment engine (probe.h, section 8): the chunked,
 * threaded batch runner every experiment runs on (circuit, patch, ablate,
 * dla, lens, heads).
 *
 * Every forward runs on at most HS_ENGINE_CHUNK rows, so each worker's
 * activation buffer holds HS_ENGINE_CHUNK x t rows, not the whole set. Jobs
 * run on the pool's workers (hs_pool_for); each worker owns its activations
 * (the packed Q/K/V weights live there too), hook registry and chunk cache;
 * the model and the caches a phase reads are read-only while it runs. Values
 * do not depend on the chunking or on which worker ran a job: every kernel of
 * the forward works per row (an sgemm's rows do not depend on how many rows
 * it is given; OpenBLAS stays at one thread, hs_pool_create), per-row results
 * are stored by row, and sums across chunks are made in chunk order
 * (hs_pool_ordered_begin), so results are bit-identical for any thread count.
 */
#include "probe/probe.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

hs_status hs_engine_init(hs_engine *e, const hs_model *m, hs_pool *pool, int t, hs_error *err)
{
    return hs_engine_init_rows(e, m, pool, t, HS_ENGINE_CHUNK, err);
}

hs_status hs_engine_init_rows(hs_engine *e, const hs_model *m, hs_pool *pool, int t, int rows,
                              hs_error *err)
{
    memset(e, 0, sizeof *e);
    e->read_pos = -1;
    if (rows < 1 || rows > HS_ENGINE_CHUNK)
        return hs_fail(err, HS_ERR_INPUT, "engine: %d rows per forward outside [1, %d]", rows, HS_ENGINE_CHUNK);
    if (t < 1 || t > m->cfg.n_ctx)
        return hs_fail(err, HS_ERR_INPUT, "engine: %d positions outside [1, n_ctx %d]", t, m->cfg.n_ctx);
    e->m = m;
    e->pool = pool;
    e->t = t;
    e->rows = rows;
    const int n = hs_pool_threads(pool);
    e->w = calloc((size_t)n, sizeof *e->w);
    if (e->w == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        hs_engine_worker *w = &e->w[i];
        w->index = i;
        w->read_pos = -1;
        e->n_workers = i + 1;
        hs_status st = hs_acts_create(&m->cfg, rows, t, 0, &w->acts, err);
        if (st == HS_OK) st = hs_hooks_create(&w->hk, err);
        if (st == HS_OK && (w->pad = malloc((size_t)HS_ENGINE_CHUNK * t * sizeof(int))) == NULL)
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        if (st != HS_OK) {
            hs_engine_free(e);
            return st;
        }
    }
    if (!m->cfg.embed_norm && m->cfg.n_layers > 1) {
        e->tail = calloc((size_t)m->cfg.n_layers, sizeof *e->tail);
        hs_status st = e->tail ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
        for (int l = 1; l < m->cfg.n_layers && st == HS_OK; l++) st = hs_model_tail(m, l, &e->tail[l], err);
        if (st != HS_OK) {
            hs_engine_free(e);
            return st;
        }
    }
    return HS_OK;
}

void hs_engine_free(hs_engine *e)
{
    if (e == NULL) return;
    for (int i = 0; i < e->n_workers; i++) {
        hs_acts_destroy(e->w[i].acts);
        hs_hooks_destroy(e->w[i].hk);
        hs_cache_free(&e->w[i].tmp);
        free(e->w[i].pad);
        free(e->w[i].rpad);
    }
    free(e->w);
    for (int l = 0; e->tail && l < e->m->cfg.n_layers; l++) free(e->tail[l]);
    free(e->tail);
    memset(e, 0, sizeof *e);
}

int hs_engine_chunks(int n)
{
    return (n + HS_ENGINE_CHUNK - 1) / HS_ENGINE_CHUNK;
}

int hs_engine_run_rows(int b, int t)
{
    int bp = b < 1 ? 1 : b;
    while (bp < HS_ENGINE_CHUNK && ((long)bp * t < HS_ENGINE_MIN_TOKENS || ((long)bp * t) % 2 != 0)) bp++;
    return bp;
}

int hs_engine_padded(int n, int t)
{
    if (n < 1) return 0;
    const int full = (hs_engine_chunks(n) - 1) * HS_ENGINE_CHUNK;
    return full + hs_engine_run_rows(n - full, t);
}

int hs_engine_chunk_rows(int n, int k)
{
    const int r0 = k * HS_ENGINE_CHUNK;
    return n - r0 < HS_ENGINE_CHUNK ? n - r0 : HS_ENGINE_CHUNK;
}

static int *pad_to(const int *v, int n, int width, int np)
{
    int *out = malloc((size_t)(np ? np : 1) * (size_t)width * sizeof(int));
    if (out == NULL) return NULL;
    memcpy(out, v, (size_t)n * width * sizeof(int));
    for (int r = n; r < np; r++) memcpy(out + (size_t)r * width, v + (size_t)(n - 1) * width, (size_t)width * sizeof(int));
    return out;
}

int *hs_engine_pad_rows(const int *v, int n, int width, int *n_pad)
{
    *n_pad = hs_engine_chunks(n) * HS_ENGINE_CHUNK;
    return pad_to(v, n, width, *n_pad);
}

int *hs_engine_pad_set(const int *v, int n, int width, int t, int *n_pad)
{
    *n_pad = hs_engine_padded(n, t);
    return pad_to(v, n, width, *n_pad);
}

/* The position worker w's sweeps read alone, or -1 (every position). */
static int read_pos_of(const hs_engine *e, const hs_engine_worker *w)
{
    return w->read_pos >= 0 ? w->read_pos : e->read_pos;
}

/* The rows a chunk of b real rows runs on on worker w (hs_engine.whole_chunks).
 * With a read position the last block's products have one row per prompt. */
static int run_rows(const hs_engine *e, const hs_engine_worker *w, int b)
{
    return e->whole_chunks ? HS_ENGINE_CHUNK : hs_engine_run_rows(b, read_pos_of(e, w) >= 0 ? 1 : e->t);
}

/* The tokens of the chunk at row r0 with b real rows, as run_rows(e, w, b)
 * rows: tokens itself when no row is added, else w's copy with the last row
 * repeated (every product then has rows enough for OpenBLAS's per-row
 * kernels, so a row's values do not depend on how many rows the set has). */
static const int *chunk_tokens(hs_engine *e, hs_engine_worker *w, const int *tokens, int r0, int b)
{
    const int *src = tokens + (size_t)r0 * e->t;
    const int bp = run_rows(e, w, b);
    if (b == bp) return src;
    int *pad = w->pad;
    memcpy(pad, src, (size_t)b * e->t * sizeof(int));
    for (int r = b; r < bp; r++)
        memcpy(pad + (size_t)r * e->t, src + (size_t)(b - 1) * e->t, (size_t)e->t * sizeof(int));
    return pad;
}

typedef struct {
    hs_engine *e;
    hs_engine_job fn;
    void *ctx;
    pthread_mutex_t mu; /* the progress count (e->progress) */
    long done, total;
} for_ctx;

static hs_status for_job(void *ctx, int j, int worker, hs_error *err)
{
    for_ctx *f = ctx;
    hs_engine_worker *w = &f->e->w[worker];
    hs_status st = f->fn(f->e, w, j, f->ctx);
    if (st != HS_OK && err) *err = w->err;
    return st;
}

static hs_status for_job_progress(void *ctx, int j, int worker, hs_error *err)
{
    for_ctx *f = ctx;
    hs_status st = for_job(ctx, j, worker, err);
    if (st == HS_OK) {
        pthread_mutex_lock(&f->mu); /* done in order */
        hs_pool_progress(f->e->pool, f->e->progress, ++f->done, f->total);
        pthread_mutex_unlock(&f->mu);
    }
    return st;
}

hs_status hs_engine_for(hs_engine *e, int n_jobs, hs_engine_job fn, void *ctx, hs_error *err)
{
    for_ctx f = {e, fn, ctx, PTHREAD_MUTEX_INITIALIZER, 0, n_jobs};
    if (e->progress == NULL || !hs_pool_has_progress(e->pool)) return hs_pool_for(e->pool, n_jobs, for_job, &f, err);
    hs_status st = hs_pool_for(e->pool, n_jobs, for_job_progress, &f, err);
    pthread_mutex_destroy(&f.mu);
    return st;
}

/* Copies the first b rows of a chunk's cache (batch run_rows(e, w, b)) to rows
 * r0.. of `full` (batch n), creating its entries at r0 == 0: their data one
 * hs_floats_alloc block (full->mem), each entry on a cache line, so a block
 * of 2 MiB or more faults once per huge page, not per 4 KiB (circuit's clean
 * and corrupted caches: 29 MB, 7,200 faults of 4 KiB a run before). */
static hs_status cache_put_rows(hs_cache *full, const hs_cache *part, int r0, int b, int n,
                                hs_error *err)
{
    if (r0 == 0) {
        hs_cache_free(full);
        full->e = calloc((size_t)(part->n ? part->n : 1), sizeof *full->e);
        if (full->e == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
        size_t total = 0;
        for (int i = 0; i < part->n; i++)
            total += hs_floats_round(part->e[i].numel / (size_t)part->e[i].shape[0] * (size_t)n);
        if (part->n > 0 && (full->mem = hs_floats_alloc(total)) == NULL) {
            hs_cache_free(full);
            return hs_fail(err, HS_ERR_NOMEM, "out of memory");
        }
        full->cap = part->n;
        for (size_t i = 0, at = 0; i < (size_t)part->n; i++) {
            hs_cache_entry *en = &full->e[i];
            *en = part->e[i];
            en->shape[0] = n;
            en->numel = part->e[i].numel / (size_t)part->e[i].shape[0] * (size_t)n;
            en->data = full->mem + at;
            at += hs_floats_round(en->numel);
        }
        full->n = part->n;
    }
    HS_ASSERT(full->n == part->n);
    for (int i = 0; i < part->n; i++) {
        HS_ASSERT(strcmp(full->e[i].name, part->e[i].name) == 0 && part->e[i].shape[0] >= b);
        const size_t row = part->e[i].numel / (size_t)part->e[i].shape[0];
        memcpy(full->e[i].data + row * (size_t)r0, part->e[i].data, row * (size_t)b * sizeof(float));
    }
    return HS_OK;
}

hs_status hs_engine_cache(hs_engine *e, hs_engine_worker *w, const int *tokens, int n,
                          const char *const *filters, int n_filters, const hs_hooks *hooks,
                          hs_cache *out)
{
    if (n < 1) return hs_fail(&w->err, HS_ERR_INPUT, "engine: no rows to run");
    for (int r0 = 0; r0 < n; r0 += HS_ENGINE_CHUNK) {
        const int b = n - r0 < HS_ENGINE_CHUNK ? n - r0 : HS_ENGINE_CHUNK;
        hs_status st = hs_run_with_cache(e->m, w->acts, chunk_tokens(e, w, tokens, r0, b), run_rows(e, w, b), e->t,
                                         filters, n_filters, hooks, &w->tmp, &w->err);
        if (st == HS_OK) st = cache_put_rows(out, &w->tmp, r0, b, n, &w->err);
        if (st != HS_OK) {
            hs_cache_free(out);
            hs_cache_free(&w->tmp);
            return st;
        }
    }
    hs_cache_free(&w->tmp);
    return HS_OK;
}

/* The chunks of a sweep from `layer` (0: the whole forward; else from the
 * residuals rp (n, t, D), hs_engine_sweep_from). */
static hs_status sweep(hs_engine *e, hs_engine_worker *w, const int *tokens, int n, int layer,
                       const hs_cache_entry *rp, hs_engine_hooks_fn hooks, hs_engine_rows_fn rows, void *ctx)
{
    const size_t row = (size_t)e->t * e->m->cfg.d_model;
    for (int k = 0, r0 = 0; r0 < n; k++, r0 += HS_ENGINE_CHUNK) {
        const int b = n - r0 < HS_ENGINE_CHUNK ? n - r0 : HS_ENGINE_CHUNK;
        const int bp = run_rows(e, w, b);
        const float *x = rp ? rp->data + row * (size_t)r0 : NULL;
        if (rp && b < bp) { /* padded as chunk_tokens pads the tokens */
            if (w->rpad == NULL && (w->rpad = malloc(HS_ENGINE_CHUNK * row * sizeof(float))) == NULL)
                return hs_fail(&w->err, HS_ERR_NOMEM, "out of memory");
            memcpy(w->rpad, x, (size_t)b * row * sizeof(float));
            for (int r = b; r < bp; r++)
                memcpy(w->rpad + (size_t)r * row, x + (size_t)(b - 1) * row, row * sizeof(float));
            x = w->rpad;
        }
        hs_hooks_clear(w->hk);
        hs_status st = hooks ? hooks(ctx, w, k, r0, b) : HS_OK;
        w->acts->logit_pos = read_pos_of(e, w);
        if (st == HS_OK)
            st = hs_run_tail_with_hooks(e->m, layer ? e->tail[layer] : NULL, layer, w->acts, x,
                                        chunk_tokens(e, w, tokens, r0, b), bp, e->t, w->hk, &w->err);
        w->acts->logit_pos = -1;
        if (st != HS_OK) {
            hs_hooks_clear(w->hk);
            return st;
        }
        if (rows) rows(ctx, w, w->acts->logits, r0, b);
    }
    hs_hooks_clear(w->hk);
    return HS_OK;
}

hs_status hs_engine_sweep(hs_engine *e, hs_engine_worker *w, const int *tokens, int n,
                          hs_engine_hooks_fn hooks, hs_engine_rows_fn rows, void *ctx)
{
    return sweep(e, w, tokens, n, 0, NULL, hooks, rows, ctx);
}

hs_status hs_engine_sweep_from(hs_engine *e, hs_engine_worker *w, const int *tokens, int n, int layer,
                               const hs_cache *resid, hs_engine_hooks_fn hooks, hs_engine_rows_fn rows,
                               void *ctx)
{
    if (layer == 0 || e->tail == NULL) return sweep(e, w, tokens, n, 0, NULL, hooks, rows, ctx);
    const int D = e->m->cfg.d_model, t = e->t;
    if (layer < 0 || layer >= e->m->cfg.n_layers)
        return hs_fail(&w->err, HS_ERR_INPUT, "engine: layer %d outside the model's %d", layer, e->m->cfg.n_layers);
    const hs_cache_entry *rp = hs_cache_getf(resid, "blocks.%d.hook_resid_pre", layer);
    if (rp == NULL || rp->ndim != 3 || rp->shape[0] != n || rp->shape[1] != t || rp->shape[2] != D)
        return hs_fail(&w->err, HS_ERR_INPUT, "engine: no blocks.%d.hook_resid_pre [%d,%d,%d] to start from",
                       layer, n, t, D);
    return sweep(e, w, tokens, n, layer, rp, hooks, rows, ctx);
}

/* Means: one job per chunk; the sums in chunk order. */
typedef struct {
    const int *tokens;
    size_t n;
    const char *const *filters;
    int n_filters;
    hs_cache *means;  /* entries (1, ...) once the first chunk is in */
    double **acc;     /* (means->n) sums, one per entry */
} means_ctx;

static hs_status means_job(hs_engine *e, hs_engine_worker *w, int j, void *arg)
{
    means_ctx *mc = arg;
    const size_t start = (size_t)j * HS_ENGINE_CHUNK;
    const int b = (int)(mc->n - start < HS_ENGINE_CHUNK ? mc->n - start : HS_ENGINE_CHUNK);
    hs_status st = hs_run_with_cache(e->m, w->acts, chunk_tokens(e, w, mc->tokens, (int)start, b), run_rows(e, w, b),
                                     e->t, mc->filters, mc->n_filters, NULL, &w->tmp, &w->err);
    if (st != HS_OK) return st;
    if ((st = hs_pool_ordered_begin(e->pool, w->index, j, &w->err)) != HS_OK) return st;
    if (j == 0) { /* the first chunk lays the entries out */
        mc->means->e = calloc((size_t)(w->tmp.n ? w->tmp.n : 1), sizeof *mc->means->e);
        mc->acc = calloc((size_t)(w->tmp.n ? w->tmp.n : 1), sizeof *mc->acc);
        if (mc->means->e == NULL || mc->acc == NULL) st = hs_fail(&w->err, HS_ERR_NOMEM, "out of memory");
        for (int i = 0; i < w->tmp.n && st == HS_OK; i++) {
            hs_cache_entry *en = &mc->means->e[i];
            *en = w->tmp.e[i];
            en->shape[0] = 1;
            en->numel = w->tmp.e[i].numel / (size_t)w->tmp.e[i].shape[0];
            en->data = NULL;
            mc->acc[i] = calloc(en->numel, sizeof(double));
            if (mc->acc[i] == NULL) st = hs_fail(&w->err, HS_ERR_NOMEM, "out of memory");
            mc->means->n = mc->means->cap = i + 1;
        }
    }
    for (int i = 0; i < w->tmp.n && st == HS_OK; i++) {
        HS_ASSERT(i < mc->means->n && strcmp(mc->means->e[i].name, w->tmp.e[i].name) == 0);
        const size_t row = mc->means->e[i].numel;
        double *a = mc->acc[i];
        const float *d = w->tmp.e[i].data;
        for (int r = 0; r < b; r++)
            for (size_t k = 0; k < row; k++) a[k] += d[(size_t)r * row + k];
    }
    hs_pool_ordered_end(e->pool);
    return st;
}

hs_status hs_engine_means(hs_engine *e, const int *tokens, size_t n, const char *const *filters,
                          int n_filters, hs_cache *means, hs_error *err)
{
    hs_cache_free(means);
    if (n == 0) return hs_fail(err, HS_ERR_INPUT, "engine: the reference set is empty");
    if (n > (size_t)HS_ENGINE_CHUNK * 1000000)
        return hs_fail(err, HS_ERR_INPUT, "engine: the reference set is too large");
    means_ctx mc = {tokens, n, filters, n_filters, means, NULL};
    hs_status st = hs_engine_for(e, hs_engine_chunks((int)n), means_job, &mc, err);
    for (int i = 0; i < means->n && st == HS_OK; i++) {
        hs_cache_entry *en = &means->e[i];
        en->data = malloc(en->numel * sizeof(float));
        if (en->data == NULL) {
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
            break;
        }
        for (size_t k = 0; k < en->numel; k++) en->data[k] = (float)(mc.acc[i][k] / (double)n);
    }
    for (int i = 0; mc.acc && i < means->n; i++) free(mc.acc[i]);
    free(mc.acc);
    for (int i = 0; i < e->n_workers; i++) hs_cache_free(&e->w[i].tmp);
    if (st != HS_OK) hs_cache_free(means);
    return st;
}

hs_status hs_cache_view_rows(hs_cache *view, const hs_cache *full, int r0, int b, hs_error *err)
{
    memset(view, 0, sizeof *view);
    view->e = malloc((size_t)(full->n ? full->n : 1) * sizeof *view->e);
    if (view->e == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int i = 0; i < full->n; i++) {
        hs_cache_entry *en = &view->e[i];
        *en = full->e[i];
        const int64_t n = full->e[i].shape[0];
        if (r0 < 0 || b < 1 || r0 + b > n) {
            free(view->e);
            memset(view, 0, sizeof *view);
            return hs_fail(err, HS_ERR_INPUT, "cache view: rows %d..%d outside the %lld rows of %s", r0,
                           r0 + b - 1, (long long)n, full->e[i].name);
        }
        const size_t row = en->numel / (size_t)n;
        en->shape[0] = b;
        en->numel = row * (size_t)b;
        en->data = full->e[i].data + row * (size_t)r0;
    }
    view->n = view->cap = full->n;
    view->borrowed = 1;
    return HS_OK;
}

hs_status hs_engine_views(const hs_cache *full, int n, hs_cache **views, hs_error *err)
{
    const int nc = hs_engine_chunks(n);
    *views = calloc((size_t)(nc ? nc : 1), sizeof **views);
    if (*views == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int k = 0; k < nc; k++) {
        const int r0 = k * HS_ENGINE_CHUNK, b = n - r0 < HS_ENGINE_CHUNK ? n - r0 : HS_ENGINE_CHUNK;
        hs_status st = hs_cache_view_rows(&(*views)[k], full, r0, b, err);
        if (st != HS_OK) {
            hs_engine_views_free(*views, k);
            *views = NULL;
            return st;
        }
    }
    return HS_OK;
}

void hs_engine_views_free(hs_cache *views, int n_chunks)
{
    if (views == NULL) return;
    for (int k = 0; k < n_chunks; k++) hs_cache_free(&views[k]);
    free(views);
}

/* Head detectors: one job per chunk, per-row scores, the mean in row order. */
typedef struct {
    const int *tokens;
    int n, n_det;
    hs_pattern_fn pattern;
    void *ctx;
    hs_detect_metric metric;
    int exclude_bos, exclude_current;
    double *rows; /* (n_det, n, L*H) */
} detect_ctx;

static hs_status detect_job(hs_engine *e, hs_engine_worker *w, int j, void *arg)
{
    const detect_ctx *dc = arg;
    const int L = e->m->cfg.n_layers, H = e->m->cfg.n_heads, t = e->t;
    const int r0 = j * HS_ENGINE_CHUNK, b = dc->n - r0 < HS_ENGINE_CHUNK ? dc->n - r0 : HS_ENGINE_CHUNK;
    static const char *const filt[] = {"blocks.*.attn.hook_pattern"};
    hs_status st = hs_run_with_cache(e->m, w->acts, chunk_tokens(e, w, dc->tokens, r0, b), run_rows(e, w, b), t,
                                     filt, 1, NULL, &w->tmp, &w->err);
    if (st != HS_OK) return st;
    float *D = malloc((size_t)t * t * sizeof(float));
    if (D == NULL) return hs_fail(&w->err, HS_ERR_NOMEM, "out of memory");
    for (int l = 0; l < L && st == HS_OK; l++) {
        const hs_cache_entry *p = hs_cache_getf(&w->tmp, "blocks.%d.attn.hook_pattern", l);
        if (p == NULL) st = hs_fail(&w->err, HS_ERR_INPUT, "heads: the model has no blocks.%d.attn.hook_pattern", l);
    }
    for (int d = 0; d < dc->n_det && st == HS_OK; d++)
        for (int r = 0; r < b; r++) {
            const int row = r0 + r;
            dc->pattern(dc->ctx, d, row, dc->tokens + (size_t)row * t, t, D);
            for (int l = 0; l < L; l++) {
                const hs_cache_entry *p = hs_cache_getf(&w->tmp, "blocks.%d.attn.hook_pattern", l);
                for (int h = 0; h < H; h++) {
                    const float *A = p->data + ((size_t)r * H + h) * t * t;
                    dc->rows[((size_t)d * dc->n + row) * L * H + (size_t)l * H + h] =
                        dc->metric == HS_DETECT_ABS
                            ? hs_detector_score_abs(A, D, t, dc->exclude_bos, dc->exclude_current)
                            : hs_detector_score(A, D, t, dc->exclude_bos, dc->exclude_current);
                }
            }
        }
    free(D);
    return st;
}

hs_status hs_engine_detect_heads(hs_engine *e, const int *tokens, int n, int n_det, hs_pattern_fn pattern,
                                 void *ctx, hs_detect_metric metric, int exclude_bos, int exclude_current,
                                 double *out, hs_error *err)
{
    if (n < 1 || n_det < 1) return hs_fail(err, HS_ERR_INPUT, "heads: no prompts or no detectors");
    const size_t LH = (size_t)e->m->cfg.n_layers * e->m->cfg.n_heads;
    detect_ctx dc = {tokens, n, n_det, pattern, ctx, metric, exclude_bos, exclude_current,
                     malloc((size_t)n_det * n * LH * sizeof(double))};
    if (dc.rows == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    hs_status st = hs_engine_for(e, hs_engine_chunks(n), detect_job, &dc, err);
    for (int d = 0; d < n_det && st == HS_OK; d++)
        for (size_t k = 0; k < LH; k++) {
            double s = 0.0;
            for (int r = 0; r < n; r++) s += dc.rows[((size_t)d * n + r) * LH + k];
            out[(size_t)d * LH + k] = s / n;
        }
    free(dc.rows);
    for (int i = 0; i < e->n_workers; i++) hs_cache_free(&e->w[i].tmp);
    return st;
}
