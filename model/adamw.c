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

/* The update of one tensor, 8 elements at a time and then the tail, with
 * exactly the per-element operations of the scalar form (m/bc1 and v/bc2 in
 * double, the rest in float), so the bits do not depend on the width. */
HS_CLONES
static void adamw_tensor(float *p, float *mm, float *vv, const float *g, size_t n, float gscale,
                         float b1, float b2, double bc1, double bc2, float lr, float eps, float wd)
{
    const float c1 = 1.0f - b1, c2 = 1.0f - b2;
    size_t i = 0;
    const hs_v4d vbc1 = {bc1, bc1, bc1, bc1}, vbc2 = {bc2, bc2, bc2, bc2};
    for (; i + 8 <= n; i += 8) {
        hs_v8 gi, m8, v8, p8;
        HS_V8_LOAD(gi, g + i);
        HS_V8_LOAD(m8, mm + i);
        HS_V8_LOAD(v8, vv + i);
        HS_V8_LOAD(p8, p + i);
        gi = gi * gscale;
        m8 = b1 * m8 + c1 * gi;
        v8 = b2 * v8 + c2 * gi * gi;
        HS_V8_STORE(mm + i, m8);
        HS_V8_STORE(vv + i, v8);
        hs_v4 mlo = {m8[0], m8[1], m8[2], m8[3]}, mhi = {m8[4], m8[5], m8[6], m8[7]};
        hs_v4 vlo = {v8[0], v8[1], v8[2], v8[3]}, vhi = {v8[4], v8[5], v8[6], v8[7]};
        hs_v4 mhat_lo = __builtin_convertvector(__builtin_convertvector(mlo, hs_v4d) / vbc1, hs_v4);
        hs_v4 mhat_hi = __builtin_convertvector(__builtin_convertvector(mhi, hs_v4d) / vbc1, hs_v4);
        hs_v4 vhat_lo = __builtin_convertvector(__builtin_convertvector(vlo, hs_v4d) / vbc2, hs_v4);
        hs_v4 vhat_hi = __builtin_convertvector(__builtin_convertvector(vhi, hs_v4d) / vbc2, hs_v4);
        hs_v8 mhat = {mhat_lo[0], mhat_lo[1], mhat_lo[2], mhat_lo[3],
                      mhat_hi[0], mhat_hi[1], mhat_hi[2], mhat_hi[3]};
        hs_v8 den;
        for (int k = 0; k < 4; k++) {
            den[k] = sqrtf(vhat_lo[k]);
            den[k + 4] = sqrtf(vhat_hi[k]);
        }
        p8 -= lr * (mhat / (den + eps) + wd * p8);
        HS_V8_STORE(p + i, p8);
    }
    for (; i < n; i++) {
        float gi = g[i] * gscale;
        mm[i] = b1 * mm[i] + c1 * gi;
        vv[i] = b2 * vv[i] + c2 * gi * gi;
        float mhat = (float)(mm[i] / bc1);
        float vhat = (float)(vv[i] / bc2);
        p[i] -= lr * (mhat / (sqrtf(vhat) + eps) + wd * p[i]);
    }
}

/* Floats per job of the parallel update and gradient norm: fixed, so the
 * norm's partial sums (and so every bit) do not depend on the thread count. */
#define ADAM_CHUNK 16384

double hs_grad_norm(const hs_model *m)
{
    double s = 0.0;
    for (size_t i0 = 0; i0 < m->n_params; i0 += ADAM_CHUNK) {
        const size_t i1 = i0 + ADAM_CHUNK < m->n_params ? i0 + ADAM_CHUNK : m->n_params;
        double c = 0.0;
        for (size_t i = i0; i < i1; i++) c += (double)m->grad_mem[i] * m->grad_mem[i];
        s += c;
    }
    return sqrt(s);
}

typedef struct {
    hs_model *m;
    const hs_adamw *opt;
    float gscale;
    double bc1, bc2;
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
    for (int ti = 0; ti < m->n_tensors; ti++) {
        const hs_tensor_info *t = &m->tensors[ti];
        const size_t b = t->offset > lo ? t->offset : lo;
        const size_t e = t->offset + t->numel < hi ? t->offset + t->numel : hi;
        if (b >= e) continue;
        adamw_tensor(m->param_mem + b, m->m_mem + b, m->v_mem + b, m->grad_mem + b, e - b,
                     a->gscale, o->beta1, o->beta2, a->bc1, a->bc2, o->lr, o->eps,
                     t->decay ? o->weight_decay : 0.0f);
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
    double norm = hs_grad_norm(m);
    if (grad_norm) *grad_norm = norm;
    if (!isfinite(norm))
        return hs_fail(err, HS_ERR_NUMERIC, "gradient norm is %s at AdamW step %ld",
                       isnan(norm) ? "NaN" : "Inf", m->adam_t + 1);
    float gscale = 1.0f;
    if (opt->clip > 0.0f && norm > opt->clip) gscale = (float)(opt->clip / norm);
    m->adam_t++;
    adam_job a = {m, opt, gscale, 1.0 - pow(opt->beta1, (double)m->adam_t),
                  1.0 - pow(opt->beta2, (double)m->adam_t)};
    /* every element's update is its own: any split gives the same bits */
    return hs_pool_for(pool, (int)((m->n_params + ADAM_CHUNK - 1) / ADAM_CHUNK), adam_run, &a, err);
}
