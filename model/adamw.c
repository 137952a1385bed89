/*
 * model/adamw.c -- AdamW with decoupled weight decay on matrices only and
 * global-norm gradient clipping: one flat loop over the parameter allocation.
 */
#include "model.h"
#include "model_internal.h"

#include <math.h>

hs_adamw hs_adamw_default(void)
{
    hs_adamw o = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 1.0f};
    return o;
}

/* The update of one run of elements, in PyTorch's form (torch.optim.AdamW,
 * single-tensor path, 1.13): every operation in float with scalars made once
 * in double and rounded, so no per-element double division or conversion:
 *   g = g gscale; p = p decay; m = b1 m + c1 g; v = b2 v + (c2 g) g;
 *   p = p - step (m / (sqrt(v) / bc2s + eps))
 * with decay = 1 - lr wd, step = lr / (1 - b1^t), bc2s = sqrt(1 - b2^t). */
typedef struct {
    float gscale, b1, c1, b2, c2, decay, step, bc2s, eps;
} adam_scalars;

static inline float adam_one(float *p, float *m, float *v, float g, const adam_scalars *k)
{
    g = g * k->gscale;
    float pd = *p * k->decay;
    float mi = k->b1 * *m + k->c1 * g;
    float vi = k->b2 * *v + k->c2 * g * g;
    *m = mi;
    *v = vi;
    return pd - k->step * (mi / (sqrtf(vi) / k->bc2s + k->eps));
}

static void adam_run_scalar(float *p, float *m, float *v, const float *g, size_t n,
                            const adam_scalars *k)
{
    for (size_t i = 0; i < n; i++) p[i] = adam_one(p + i, m + i, v + i, g[i], k);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
/* The same operations 16 lanes at a time (IEEE sqrt and division are
 * correctly rounded at every width, and nothing is contracted into an FMA:
 * -ffp-contract=off), then the tail through adam_one: the bits of the scalar
 * form. */
__attribute__((target("avx512f"))) static void adam_run_16(float *p, float *m, float *v,
                                                            const float *g, size_t n,
                                                            const adam_scalars *k)
{
    const __m512 gs = _mm512_set1_ps(k->gscale), b1 = _mm512_set1_ps(k->b1),
                 c1 = _mm512_set1_ps(k->c1), b2 = _mm512_set1_ps(k->b2),
                 c2 = _mm512_set1_ps(k->c2), dc = _mm512_set1_ps(k->decay),
                 st = _mm512_set1_ps(k->step), bs = _mm512_set1_ps(k->bc2s),
                 ep = _mm512_set1_ps(k->eps);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 gi = _mm512_mul_ps(_mm512_loadu_ps(g + i), gs);
        __m512 pd = _mm512_mul_ps(_mm512_loadu_ps(p + i), dc);
        __m512 mi = _mm512_add_ps(_mm512_mul_ps(b1, _mm512_loadu_ps(m + i)), _mm512_mul_ps(c1, gi));
        __m512 vi = _mm512_add_ps(_mm512_mul_ps(b2, _mm512_loadu_ps(v + i)),
                                  _mm512_mul_ps(_mm512_mul_ps(c2, gi), gi));
        _mm512_storeu_ps(m + i, mi);
        _mm512_storeu_ps(v + i, vi);
        __m512 den = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(vi), bs), ep);
        _mm512_storeu_ps(p + i, _mm512_sub_ps(pd, _mm512_mul_ps(st, _mm512_div_ps(mi, den))));
    }
    adam_run_scalar(p + i, m + i, v + i, g + i, n - i, k);
}

__attribute__((target("avx"))) static void adam_run_8(float *p, float *m, float *v,
                                                      const float *g, size_t n,
                                                      const adam_scalars *k)
{
    const __m256 gs = _mm256_set1_ps(k->gscale), b1 = _mm256_set1_ps(k->b1),
                 c1 = _mm256_set1_ps(k->c1), b2 = _mm256_set1_ps(k->b2),
                 c2 = _mm256_set1_ps(k->c2), dc = _mm256_set1_ps(k->decay),
                 st = _mm256_set1_ps(k->step), bs = _mm256_set1_ps(k->bc2s),
                 ep = _mm256_set1_ps(k->eps);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 gi = _mm256_mul_ps(_mm256_loadu_ps(g + i), gs);
        __m256 pd = _mm256_mul_ps(_mm256_loadu_ps(p + i), dc);
        __m256 mi = _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(m + i)), _mm256_mul_ps(c1, gi));
        __m256 vi = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(v + i)),
                                  _mm256_mul_ps(_mm256_mul_ps(c2, gi), gi));
        _mm256_storeu_ps(m + i, mi);
        _mm256_storeu_ps(v + i, vi);
        __m256 den = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vi), bs), ep);
        _mm256_storeu_ps(p + i, _mm256_sub_ps(pd, _mm256_mul_ps(st, _mm256_div_ps(mi, den))));
    }
    adam_run_scalar(p + i, m + i, v + i, g + i, n - i, k);
    _mm256_zeroupper();
}
#endif

/* The widest version the CPU runs (all give the same bits). */
static void adam_run_elems(float *p, float *m, float *v, const float *g, size_t n,
                           const adam_scalars *k)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (__builtin_cpu_supports("avx512f")) {
        adam_run_16(p, m, v, g, n, k);
        return;
    }
    if (__builtin_cpu_supports("avx")) {
        adam_run_8(p, m, v, g, n, k);
        return;
    }
#endif
    adam_run_scalar(p, m, v, g, n, k);
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
    adam_scalars k; /* decay set per tensor */
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
    adam_scalars k = a->k;
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
