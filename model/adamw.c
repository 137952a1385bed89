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

hs_status hs_adamw_step(hs_model *m, const hs_adamw *opt, double *grad_norm, hs_error *err)
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
    const double bc1 = 1.0 - pow(opt->beta1, (double)m->adam_t);
    const double bc2 = 1.0 - pow(opt->beta2, (double)m->adam_t);
    for (int ti = 0; ti < m->n_tensors; ti++) {
        const hs_tensor_info *t = &m->tensors[ti];
        const float wd = t->decay ? opt->weight_decay : 0.0f;
        float *p = m->param_mem + t->offset;
        const float *g = m->grad_mem + t->offset;
        float *mm = m->m_mem + t->offset;
        float *vv = m->v_mem + t->offset;
        adamw_tensor(p, mm, vv, g, t->numel, gscale, opt->beta1, opt->beta2, bc1, bc2, opt->lr,
                     opt->eps, wd);
    }
    return HS_OK;
}
