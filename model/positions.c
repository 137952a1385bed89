/*
 * model/positions.c -- the position schemes that have no parameters
 * (DESIGN.md "Model"): the sinusoidal table (Vaswani et al. 2017, 3.5), the
 * rotary tables and rotation (Su et al. 2021; GPT-NeoX's rotate-half, GPT-J's
 * adjacent pairs, Llama 3's NTK-by-parts frequencies: hs_rotary_inv_freq in
 * model/model.c), and the rotation's transpose for the backward. ALiBi's
 * bias is added where the scores are made (model/attention.c).
 */
#include "model.h"
#include "model_internal.h"

#include <math.h>
#include <stdlib.h>

void hs_rotary_inv_freq(const hs_config *cfg, double *inv_freq)
{
    const int rd = hs_rotary_dim(cfg);
    const double base = cfg->rotary_base > 0.0f ? (double)cfg->rotary_base : 10000.0;
    const double two_pi = 6.283185307179586476925286766559;
    for (int i = 0; i < rd / 2; i++) {
        double f = pow(base, -(double)(2 * i) / (double)rd);
        if (cfg->use_NTK_by_parts_rope) {
            const double factor = cfg->NTK_by_parts_factor;
            const double lo = cfg->NTK_by_parts_low_freq_factor;
            const double hi = cfg->NTK_by_parts_high_freq_factor;
            const double old = cfg->NTK_original_ctx_len;
            const double wavelen = two_pi / f;
            if (wavelen > old / lo) {
                f = f / factor;
            } else if (!(wavelen < old / hi)) { /* medium: smooth */
                const double s = (old / wavelen - lo) / (hi - lo);
                f = (1.0 - s) * f / factor + s * f;
            }
        }
        inv_freq[i] = f;
    }
}

void hs_alibi_slopes(int H, double *slopes)
{
    int P = 1;
    while (P * 2 <= H) P *= 2;
    for (int h = 0; h < P; h++) slopes[h] = pow(2.0, -8.0 * (h + 1) / P);
    for (int k = 0; k < H - P; k++) slopes[P + k] = pow(2.0, -4.0 * (2 * k + 1) / P);
}

hs_status hs_positions_tables(const hs_config *c, int T, float **rope, float **pos_table,
                              hs_error *err)
{
    *rope = NULL;
    *pos_table = NULL;
    if (c->pos == HS_POS_ROTARY) {
        const int half = hs_rotary_dim(c) / 2;
        double *inv = malloc((size_t)(half > 0 ? half : 1) * sizeof(double));
        float *r = hs_floats_alloc((size_t)2 * T * (half > 0 ? half : 1));
        if (inv == NULL || r == NULL) {
            free(inv);
            hs_floats_free(r);
            return hs_fail(err, HS_ERR_NOMEM, "out of memory for the rotary tables");
        }
        hs_rotary_inv_freq(c, inv);
        for (int p = 0; p < T; p++)
            for (int i = 0; i < half; i++) {
                const double a = (double)p * inv[i];
                r[(size_t)p * 2 * half + i] = (float)cos(a);
                r[(size_t)p * 2 * half + half + i] = (float)sin(a);
            }
        free(inv);
        *rope = r;
    } else if (c->pos == HS_POS_SINUSOIDAL) {
        const int D = c->d_model;
        float *t = hs_floats_alloc((size_t)T * D);
        if (t == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory for the sinusoidal table");
        for (int i = 0; i < D / 2; i++) {
            const double w = pow(10000.0, -(double)(2 * i) / (double)D);
            for (int p = 0; p < T; p++) {
                t[(size_t)p * D + 2 * i] = (float)sin((double)p * w);
                t[(size_t)p * D + 2 * i + 1] = (float)cos((double)p * w);
            }
        }
        *pos_table = t;
    }
    return HS_OK;
}

/* The pair (a, b) of dim e < rd/2 of a head: rotate-half (e, e + rd/2) or
 * adjacent (2e, 2e + 1). */
static inline void pair_of(int e, int half, int adjacent, int *a, int *b)
{
    *a = adjacent ? 2 * e : e;
    *b = adjacent ? 2 * e + 1 : e + half;
}

void hs_rotary_apply(float *x, int B, int T, int nh, int dh, const hs_config *c,
                     const float *rope, int inverse)
{
    const int half = hs_rotary_dim(c) / 2, adj = c->rotary_adjacent_pairs;
    for (int b = 0; b < B; b++)
        for (int p = 0; p < T; p++) {
            /* position p's row: cos then sin (hs_acts.rope), whatever the capacity */
            const float *cp = rope + (size_t)p * 2 * half, *sp = cp + half;
            for (int h = 0; h < nh; h++) {
                float *row = x + (((size_t)b * T + p) * nh + h) * dh;
                for (int e = 0; e < half; e++) {
                    int ia, ib;
                    pair_of(e, half, adj, &ia, &ib);
                    const float xa = row[ia], xb = row[ib];
                    const float co = cp[e], si = inverse ? -sp[e] : sp[e];
                    row[ia] = xa * co - xb * si;
                    row[ib] = xb * co + xa * si;
                }
            }
        }
}
