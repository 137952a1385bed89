/*
 * model/adamw.c -- AdamW with decoupled weight decay on matrices only and
 * global-norm gradient clipping: one flat loop over the parameter allocation.
 */
#include "model.h"

#include <math.h>

hs_adamw hs_adamw_default(void)
{
    hs_adamw o = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 1.0f};
    return o;
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
        for (size_t i = 0; i < t->numel; i++) {
            float gi = g[i] * gscale;
            mm[i] = opt->beta1 * mm[i] + (1.0f - opt->beta1) * gi;
            vv[i] = opt->beta2 * vv[i] + (1.0f - opt->beta2) * gi * gi;
            float mhat = (float)(mm[i] / bc1);
            float vhat = (float)(vv[i] / bc2);
            p[i] -= opt->lr * (mhat / (sqrtf(vhat) + opt->eps) + wd * p[i]);
        }
    }
    return HS_OK;
}
