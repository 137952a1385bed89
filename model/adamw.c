/*
 * model/adamw.c -- AdamW with decoupled weight decay on matrices only and
 * global-norm gradient clipping: one flat loop over the parameter allocation.
 */
#include "model.h"
#include "train.h"
#include "model_internal.h"

#include <math.h>

hs_adamw hs_adamw_default(void)
{
    hs_adamw o = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 1.0f};
    return o;
}

/* The update of a run of elements (hs_adam_run_4/8/16, model_simd.h): the
 * widest version the CPU runs; all give the same bits. */
static void adam_run_elems(float *p, float *m, float *v, const float *g, size_t n,
                           const hs_adam_k *k)
{
    HS_SIMD_CALL(hs_adam_run_, p, m, v, g, n, k);
}

/* Floats per job of the parallel update and gradient norm: fixed, so the
 * norm's partial sums (and so every bit) do not depend on the thread count. */
#define ADAM_CHUNK 16384

/* Sum of squares of x (n) in double over 8 fixed lanes, added lane 0 to 7
 * at the end: the same bits on any machine (no width-dependent order). */
static double sum_squares(const float *x, size_t n)
{
    double l[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) l[k] += (double)x[i + k] * x[i + k];
    for (int k = 0; i < n; i++, k++) l[k] += (double)x[i] * x[i];
    double c = 0.0;
    for (int k = 0; k < 8; k++) c += l[k];
    return c;
}

static size_t chunk_end(const hs_model *m, size_t i0)
{
    return i0 + ADAM_CHUNK < m->n_params ? i0 + ADAM_CHUNK : m->n_params;
}

double hs_grad_norm(const hs_model *m)
{
    double s = 0.0;
    for (size_t i0 = 0; i0 < m->n_params; i0 += ADAM_CHUNK)
        s += sum_squares(m->grad_mem + i0, chunk_end(m, i0) - i0);
    return sqrt(s);
}

typedef struct {
    const hs_model *m;
    hs_pool *pool;
    double sum; /* chunks' sums of squares, added in chunk order: hs_grad_norm's bits */
} norm_job;

static hs_status norm_run(void *ctx, int j, int worker, hs_error *err)
{
    norm_job *a = ctx;
    const size_t i0 = (size_t)j * ADAM_CHUNK;
    const double c = sum_squares(a->m->grad_mem + i0, chunk_end(a->m, i0) - i0);
    hs_status s = hs_pool_ordered_begin(a->pool, worker, j, err);
    if (s != HS_OK) return s;
    a->sum += c;
    hs_pool_ordered_end(a->pool);
    return HS_OK;
}

typedef struct {
    hs_model *m;
    const hs_adamw *opt;
    hs_adam_k k; /* decay set per tensor */
} adam_job;

/* Job j: the elements [j, j + 1) * ADAM_CHUNK, tensor by tensor. */
static hs_status adam_run(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    (void)err;
    const adam_job *a = ctx;
    hs_model *m = a->m;
    const hs_adamw *o = a->opt;
    const size_t lo = (size_t)j * ADAM_CHUNK, hi = lo + ADAM_CHUNK;
    hs_adam_k k = a->k;
    for (int ti = 0; ti < m->n_tensors; ti++) {
        const hs_tensor_info *t = &m->tensors[ti];
        const size_t b = t->offset > lo ? t->offset : lo;
        const size_t e = t->offset + t->numel < hi ? t->offset + t->numel : hi;
        if (b >= e) continue;
        k.decay = t->decay ? (float)(1.0 - (double)o->lr * o->weight_decay) : 1.0f;
        adam_run_elems(m->param_mem + b, m->m_mem + b, m->v_mem + b, m->grad_mem + b, e - b, &k);
    }
    return HS_OK;
}

hs_status hs_adamw_step(hs_model *m, const hs_adamw *opt, double *grad_norm, hs_error *err)
{
    return hs_adamw_step_on(m, opt, NULL, grad_norm, err);
}

hs_status hs_adamw_step_on(hs_model *m, const hs_adamw *opt, hs_pool *pool, double *grad_norm,
                           hs_error *err)
{
    HS_ASSERT(m->grad_mem != NULL);
    const int chunks = (int)((m->n_params + ADAM_CHUNK - 1) / ADAM_CHUNK);
    /* the pool only for 8 or more runs a worker: below, waking it costs more
     * than the split saves (default model, 7 runs: 0.125 ms on one thread,
     * 0.166 on two). The bits are the same either way. */
    if (chunks < 8 * hs_pool_threads(pool)) pool = NULL;
    norm_job nj = {m, pool, 0.0};
    hs_status st = hs_pool_for(pool, chunks, norm_run, &nj, err);
    if (st != HS_OK) return st;
    const double norm = sqrt(nj.sum);
    if (grad_norm) *grad_norm = norm;
    if (!isfinite(norm))
        return hs_fail(err, HS_ERR_NUMERIC, "gradient norm is %s at AdamW step %ld",
                       isnan(norm) ? "NaN" : "Inf", m->adam_t + 1);
    float gscale = 1.0f;
    if (opt->clip > 0.0f && norm > opt->clip) gscale = (float)(opt->clip / norm);
    m->adam_t++;
    const double bc1 = 1.0 - pow(opt->beta1, (double)m->adam_t);
    const double bc2 = 1.0 - pow(opt->beta2, (double)m->adam_t);
    adam_job a = {m, opt,
                  {gscale, opt->beta1, 1.0f - opt->beta1, opt->beta2, 1.0f - opt->beta2, 1.0f,
                   (float)(opt->lr / bc1), (float)sqrt(bc2), opt->eps}};
    /* every element's update is its own: any split gives the same bits */
    return hs_pool_for(pool, chunks, adam_run, &a, err);
}
