/*
 * model/model_internal.h -- kernels shared inside model/ and reachable by tests
 * (STYLE.md 14: tests reach internals through *_internal.h). Not public API.
 * Dims legend as model.h.
 */
#ifndef HS_MODEL_INTERNAL_H
#define HS_MODEL_INTERNAL_H

#include "model.h"

/* mean (N), rstd (N) <- statistics of inp (N,D): LayerNorm centres (mean of x),
 * RMSNorm does not (mean = 0); rstd = 1/sqrt(var + eps). Computed in double. */
void hs_norm_stats(float *mean, float *rstd, const float *inp, size_t N, int D, hs_norm type,
                   float eps);
/* out (N,D) = (inp - mean) * rstd, no affine part. */
void hs_norm_apply(float *out, const float *inp, const float *mean, const float *rstd, size_t N,
                   int D);
/* out (N,OC) = inp (N,C) @ W (C,OC) + bias (OC) (bias may be NULL). cblas_sgemm. */
void hs_matmul_forward(float *out, const float *inp, const float *W, const float *bias, size_t N,
                       int C, int OC);

#endif
