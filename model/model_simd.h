/*
 * model/model_simd.h -- width-generic element-wise kernels, included by
 * model_internal.h once per vector width (4 lanes: every x86-64/AArch64
 * target; 8 lanes with AVX2 and 16 with AVX-512 on x86-64, compiled for that
 * ISA with a target attribute and chosen at run time). Not a public header;
 * no include guard on purpose.
 *
 * Every width runs the same operations per lane in the same order, with no
 * reassociation and no FMA contraction (ISO C mode: -ffp-contract=off), so
 * the result is bit-identical whichever width the machine picks, and the
 * no-observer fast path and the observer path (which share these kernels)
 * agree exactly. Tails go through the same vector code on a zero-padded copy.
 *
 * Parameters (macros defined by the includer): HS_SIMD_W (lanes),
 * HS_SIMD_SFX (name suffix), HS_SIMD_TGT (function attribute or empty).
 */
#define HS_SIMD_CAT2(a, b) a##b
#define HS_SIMD_CAT(a, b) HS_SIMD_CAT2(a, b)
#define HS_SIMD_NAME(n) HS_SIMD_CAT(n, HS_SIMD_SFX)
#define VF HS_SIMD_NAME(hs_vf)
#define VI HS_SIMD_NAME(hs_vi)

typedef float VF __attribute__((vector_size(4 * HS_SIMD_W)));
typedef int VI __attribute__((vector_size(4 * HS_SIMD_W)));

/* exp (Cephes expf: Cody-Waite reduction, degree-5 polynomial; relative
 * error < 1e-7 over the float range). exp(x < -87.33) = 0, exp(x > 88.72) =
 * +inf, NaN stays NaN: masked softmax scores (-inf) give exact zeros. */
HS_SIMD_TGT static inline __attribute__((always_inline)) void
HS_SIMD_NAME(hs_exp_)(VF *out_, const VF *in_)
{
    const VF x = *in_;
    VI over = x > 88.7228f, under = x < -87.3365f, nan = x != x;
    VI keep = ~(over | under | nan);
    VF xc = (VF)((VI)x & keep); /* 0 where special: finite work */
    VF fx = xc * 1.44269504088896341f + 0.5f;
    VI n = __builtin_convertvector(fx, VI); /* truncates */
    VF fn = __builtin_convertvector(n, VF);
    n += (VI)(fn > fx); /* -1 where truncation rounded up: floor */
    fn = __builtin_convertvector(n, VF);
    VF r = xc - fn * 0.693359375f;
    r = r - fn * -2.12194440e-4f;
    VF p = r * 1.9875691500e-4f + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    VF y = p * (r * r) + r + 1.0f;
    VI bits = (n + 127) << 23;
    y = y * (VF)bits;
    *out_ = (VF)(((VI)y & keep) | (over & 0x7f800000) | ((VI)x & nan));
}

/* Standard normal CDF Phi(x) and density phi(x) = exp(-x^2/2) / sqrt(2 pi),
 * sharing that one exp: erfc(z) = exp(-z^2) erfcx(z) with z = |x| / sqrt 2,
 * and exp(-z^2) = exp(-x^2/2). erfcx(z) = t Q(t), t = 1 / (1 + z/2) (the
 * variable of Numerical Recipes' erfcc), Q a degree-10 polynomial in t - 0.58
 * fitted (weighted least squares, numpy) to the exact erfcx on t in [0.16, 1]:
 * relative error 4e-9 in exact arithmetic, 1.4e-7 evaluated in float; below
 * t = 0.16 (|x| > 14.8) exp(-x^2/2) is 0 in float and so is Phi(-|x|).
 * Phi = 0.5 erfc (x < 0) or 1 - that (x >= 0): |Phi - exact| < 2e-7 over the
 * float range (tests/test_model.c checks 2e-7 against double erfc on a grid of
 * 280,001 points and at the ends). *pdf_out may be NULL. One exp instead of
 * two: GELU with its derivative 2.35 -> ~1.3 ns per element (AVX-512). */
HS_SIMD_TGT static inline __attribute__((always_inline)) void
HS_SIMD_NAME(hs_normal_cdf_)(VF *cdf_out, VF *pdf_out, const VF *in_)
{
    const VF x = *in_;
    VF ax = (VF)((VI)x & 0x7fffffff);
    VF t = 1.0f / (ax * 0.35355339059327376f + 1.0f); /* z/2 = |x| / (2 sqrt 2) */
    VF u = t - 0.58f;
    VF q = u * 3.671173006e-02f + 1.632674970e-02f;
    q = q * u + -7.473131269e-02f;
    q = q * u + 4.166634288e-03f;
    q = q * u + 1.140916571e-01f;
    q = q * u + -5.162728205e-02f;
    q = q * u + -2.033534497e-01f;
    q = q * u + 8.514717966e-02f;
    q = q * u + 5.868539810e-01f;
    q = q * u + 7.790188193e-01f;
    q = q * u + 5.694087148e-01f;
    VF a2 = x * x * -0.5f, e2;
    HS_SIMD_NAME(hs_exp_)(&e2, &a2);
    VF half_erfc = t * q * e2 * 0.5f;
    VI neg = x < 0.0f;
    VF upper = 1.0f - half_erfc;
    *cdf_out = (VF)(((VI)half_erfc & neg) | ((VI)upper & ~neg));
    if (pdf_out) *pdf_out = e2 * 0.39894228040143267794f;
}

/* out (n) = x Phi(x) of inp (n). */
HS_SIMD_TGT static inline void HS_SIMD_NAME(hs_gelu_forward_)(float *out, const float *inp, size_t n)
{
    size_t i = 0;
    for (; i + HS_SIMD_W <= n; i += HS_SIMD_W) {
        VF x, cdf;
        memcpy(&x, inp + i, sizeof x);
        HS_SIMD_NAME(hs_normal_cdf_)(&cdf, NULL, &x);
        x *= cdf;
        memcpy(out + i, &x, sizeof x);
    }
    if (i < n) {
        VF x = {0}, cdf;
        memcpy(&x, inp + i, (n - i) * sizeof(float));
        HS_SIMD_NAME(hs_normal_cdf_)(&cdf, NULL, &x);
        x *= cdf;
        memcpy(out + i, &x, (n - i) * sizeof(float));
    }
}

/* out (n) = x Phi(x) and dact (n) = Phi(x) + x phi(x) of inp (n): the forward
 * of a training step keeps GELU' for the backward (one pass, no recompute). */
HS_SIMD_TGT static inline void HS_SIMD_NAME(hs_gelu_forward_grad_)(float *out, float *dact,
                                                                  const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i += HS_SIMD_W) {
        size_t k = n - i < HS_SIMD_W ? n - i : HS_SIMD_W;
        VF x = {0}, cdf, pdf;
        if (k == HS_SIMD_W)
            memcpy(&x, inp + i, sizeof x);
        else
            memcpy(&x, inp + i, k * sizeof(float));
        HS_SIMD_NAME(hs_normal_cdf_)(&cdf, &pdf, &x);
        VF y = x * cdf, d = cdf + x * pdf;
        if (k == HS_SIMD_W) {
            memcpy(out + i, &y, sizeof y);
            memcpy(dact + i, &d, sizeof d);
        } else {
            memcpy(out + i, &y, k * sizeof(float));
            memcpy(dact + i, &d, k * sizeof(float));
        }
    }
}

/* dinp (n) = dout (n) * (Phi(x) + x phi(x)), x = inp (n). */
HS_SIMD_TGT static inline void HS_SIMD_NAME(hs_gelu_backward_)(float *dinp, const float *dout,
                                                              const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i += HS_SIMD_W) {
        size_t k = n - i < HS_SIMD_W ? n - i : HS_SIMD_W;
        VF x = {0}, g = {0}, cdf, pdf;
        if (k == HS_SIMD_W) {
            memcpy(&x, inp + i, sizeof x);
            memcpy(&g, dout + i, sizeof g);
        } else {
            memcpy(&x, inp + i, k * sizeof(float));
            memcpy(&g, dout + i, k * sizeof(float));
        }
        HS_SIMD_NAME(hs_normal_cdf_)(&cdf, &pdf, &x);
        g *= cdf + x * pdf;
        if (k == HS_SIMD_W)
            memcpy(dinp + i, &g, sizeof g);
        else
            memcpy(dinp + i, &g, k * sizeof(float));
    }
}

/* gelu_new (GPT-2's tanh approximation: Hugging Face NewGELUActivation,
 * TransformerLens utilities/activation_functions.py gelu_new)
 *   0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3),
 * computed as x s with s = 1 / (1 + exp(-2u)) = (1 + tanh u) / 2 (an
 * identity; one exp, no cancellation near u = 0, and exp(-2u) = +inf gives
 * s = 0 exactly). Its derivative: s + x s (1 - s) 2 u', u' = sqrt(2/pi)
 * (1 + 3 0.044715 x^2). *y_out gets gelu_new(x), *d_out (may be NULL) the
 * derivative. */
HS_SIMD_TGT static inline __attribute__((always_inline)) void
HS_SIMD_NAME(hs_gelu_new_)(VF *y_out, VF *d_out, const VF *in_)
{
    const VF x = *in_;
    const VF x2 = x * x;
    const VF u = (x + x * x2 * 0.044715f) * 0.7978845608028654f;
    VF m2u = u * -2.0f, e;
    HS_SIMD_NAME(hs_exp_)(&e, &m2u);
    const VF s = 1.0f / (1.0f + e);
    *y_out = x * s;
    if (d_out) { /* 1 - s = e / (1 + e) = 1 / (1 + 1/e), exact to rounding where s is near 1
                  * (1.0f - s would lose its digits), 1 at e = +inf, 0 at e = 0; x clamped to
                  * [-64, 64] in the second term, which is exactly 0 beyond |x| = 20 (s (1 - s)
                  * = 0) but would be 0 x inf once x^2 overflows */
        const VF zero = {0};
        const VI big = (x > 64.0f) | (x < -64.0f);
        const VF xc = (VF)(((VI)x & ~big) | ((VI)(zero + 64.0f) & big & (x > 0.0f)) |
                           ((VI)(zero - 64.0f) & big & (x < 0.0f)));
        const VF du = (1.0f + xc * xc * 0.134145f) * 1.5957691216057308f; /* 2 u' */
        const VF s1 = 1.0f / (1.0f + 1.0f / e);
        *d_out = s + xc * (s * s1) * du;
    }
}

/* out (n) = gelu_new(inp (n)); dact (n) = its derivative (dact may be NULL).
 * The tail through the same code on a zero-padded copy. */
HS_SIMD_TGT static inline void HS_SIMD_NAME(hs_gelu_new_forward_)(float *out, float *dact,
                                                                  const float *inp, size_t n)
{
    size_t i = 0;
    for (; i + HS_SIMD_W <= n; i += HS_SIMD_W) {
        VF x, y, d;
        memcpy(&x, inp + i, sizeof x);
        HS_SIMD_NAME(hs_gelu_new_)(&y, dact ? &d : NULL, &x);
        memcpy(out + i, &y, sizeof y);
        if (dact) memcpy(dact + i, &d, sizeof d);
    }
    if (i < n) {
        VF x = {0}, y, d;
        memcpy(&x, inp + i, (n - i) * sizeof(float));
        HS_SIMD_NAME(hs_gelu_new_)(&y, dact ? &d : NULL, &x);
        memcpy(out + i, &y, (n - i) * sizeof(float));
        if (dact) memcpy(dact + i, &d, (n - i) * sizeof(float));
    }
}

/* dinp (n) = dout (n) * gelu_new'(inp (n)) (overwrites). */
HS_SIMD_TGT static inline void HS_SIMD_NAME(hs_gelu_new_backward_)(float *dinp, const float *dout,
                                                                   const float *inp, size_t n)
{
    size_t i = 0;
    for (; i + HS_SIMD_W <= n; i += HS_SIMD_W) {
        VF x, g, y, d;
        memcpy(&x, inp + i, sizeof x);
        memcpy(&g, dout + i, sizeof g);
        HS_SIMD_NAME(hs_gelu_new_)(&y, &d, &x);
        g *= d;
        memcpy(dinp + i, &g, sizeof g);
    }
    if (i < n) {
        VF x = {0}, g = {0}, y, d;
        memcpy(&x, inp + i, (n - i) * sizeof(float));
        memcpy(&g, dout + i, (n - i) * sizeof(float));
        HS_SIMD_NAME(hs_gelu_new_)(&y, &d, &x);
        g *= d;
        memcpy(dinp + i, &g, (n - i) * sizeof(float));
    }
}

/* Lane-wise square root, correctly rounded (IEEE) at every width. */
HS_SIMD_TGT static inline __attribute__((always_inline)) VF HS_SIMD_NAME(hs_sqrt_)(VF x)
{
#if HS_SIMD_W == 16
    return (VF)_mm512_sqrt_ps((__m512)x);
#elif HS_SIMD_W == 8
    return (VF)_mm256_sqrt_ps((__m256)x);
#elif defined(__SSE__)
    return (VF)_mm_sqrt_ps((__m128)x);
#else
    for (int k = 0; k < HS_SIMD_W; k++) x[k] = sqrtf(x[k]);
    return x;
#endif
}

/* One AdamW update of p, m, v (n) from g (n) (model/adamw.c, hs_adam_k):
 * per element, in float, in PyTorch's order (torch.optim.AdamW):
 *   g = g gscale; p = p decay; m = b1 m + c1 g; v = b2 v + (c2 g) g;
 *   p = p - step (m / (sqrt(v) / bc2s + eps)).
 * The tail through the same code on a zero-padded copy: every width and the
 * scalar form give the same bits. */
HS_SIMD_TGT static inline __attribute__((always_inline)) void
HS_SIMD_NAME(hs_adam_vec_)(VF *p, VF *m, VF *v, VF g, const hs_adam_k *k)
{
    g = g * k->gscale;
    VF pd = *p * k->decay;
    VF mi = k->b1 * *m + k->c1 * g;
    VF vi = k->b2 * *v + k->c2 * g * g;
    *m = mi;
    *v = vi;
    *p = pd - k->step * (mi / (HS_SIMD_NAME(hs_sqrt_)(vi) / k->bc2s + k->eps));
}

HS_SIMD_TGT static inline void HS_SIMD_NAME(hs_adam_run_)(float *p, float *m, float *v,
                                                         const float *g, size_t n,
                                                         const hs_adam_k *k)
{
    size_t i = 0;
    for (; i + HS_SIMD_W <= n; i += HS_SIMD_W) {
        VF gi, pi, mi, vi;
        memcpy(&gi, g + i, sizeof gi);
        memcpy(&pi, p + i, sizeof pi);
        memcpy(&mi, m + i, sizeof mi);
        memcpy(&vi, v + i, sizeof vi);
        HS_SIMD_NAME(hs_adam_vec_)(&pi, &mi, &vi, gi, k);
        memcpy(m + i, &mi, sizeof mi);
        memcpy(v + i, &vi, sizeof vi);
        memcpy(p + i, &pi, sizeof pi);
    }
    if (i < n) {
        const size_t w = n - i;
        VF gi = {0}, pi = {0}, mi = {0}, vi = {0};
        memcpy(&gi, g + i, w * sizeof(float));
        memcpy(&pi, p + i, w * sizeof(float));
        memcpy(&mi, m + i, w * sizeof(float));
        memcpy(&vi, v + i, w * sizeof(float));
        HS_SIMD_NAME(hs_adam_vec_)(&pi, &mi, &vi, gi, k);
        memcpy(m + i, &mi, w * sizeof(float));
        memcpy(v + i, &vi, w * sizeof(float));
        memcpy(p + i, &pi, w * sizeof(float));
    }
}

/* out (n) = exp(inp (n)) (out may be inp): the softmax's exp over a whole
 * (b, h) tile of shifted scores at once (masked entries -inf give 0). */
HS_SIMD_TGT static inline void HS_SIMD_NAME(hs_exp_span_)(float *out, const float *inp, size_t n)
{
    size_t i = 0;
    for (; i + HS_SIMD_W <= n; i += HS_SIMD_W) {
        VF x, e;
        memcpy(&x, inp + i, sizeof x);
        HS_SIMD_NAME(hs_exp_)(&e, &x);
        memcpy(out + i, &e, sizeof e);
    }
    if (i < n) {
        VF x = {0}, e;
        memcpy(&x, inp + i, (n - i) * sizeof(float));
        HS_SIMD_NAME(hs_exp_)(&e, &x);
        memcpy(out + i, &e, (n - i) * sizeof(float));
    }
}

/* Row softmax of long attention rows (T >= HS_SOFTMAX_LONG_T): for each of
 * `rows` rows r of scores (rows, T), row r % T of its (b, h) tile, over
 * j <= r % T (full = 0) or the whole row (full = 1): att = exp(s - max) / sum,
 * exact 0 after the last column used; a row whose maximum is not finite (or
 * holding a NaN) gets 0 everywhere. The sum runs in 16 fixed lanes (column j
 * into lane j % 16, then the lanes added pairwise: 8 apart, 4, 2, 1), so
 * every width gives the same bits. hs_softmax_rows_at_: the same on rows
 * that start at row r0 of a tile (row r is row (r0 + r) % T of it).
 * hs_softmax_rows_w_: hs_softmax_rows_at_ (full = 0) on rows ld floats apart
 * that are written (and read: the last column used, with zeros after it)
 * up to column width alone, width >= r0 + rows: a causal block of rows [r0, r0 +
 * rows) of a tile, whose keys beyond width no product reads; each value the
 * bits of hs_softmax_rows_at_'s. */
HS_SIMD_TGT static inline void HS_SIMD_NAME(hs_softmax_rows_w_)(float *att, const float *scores,
                                                               size_t rows, int T, int full,
                                                               size_t r0, int ld, int width)
{
    enum { L = 16, NA = 16 / HS_SIMD_W };
    for (size_t r = 0; r < rows; r++) {
        const int n = full ? T : (int)((r0 + r) % (size_t)T) + 1;
        const float *s = scores + r * (size_t)ld;
        float *a = att + r * (size_t)ld;
        float mx;
        if (!hs_row_max(s, n, &mx)) {
            memset(a, 0, (size_t)width * sizeof(float));
            continue;
        }
        VF acc[NA], vmx;
        for (int k = 0; k < HS_SIMD_W; k++) vmx[k] = mx;
        for (int q = 0; q < NA; q++)
            for (int k = 0; k < HS_SIMD_W; k++) acc[q][k] = 0.0f;
        for (int j0 = 0; j0 < n; j0 += L)
            for (int q = 0; q < NA; q++) {
                const int j = j0 + q * HS_SIMD_W;
                VF v, e;
                if (j + HS_SIMD_W <= n) {
                    memcpy(&v, s + j, sizeof v);
                    v -= vmx;
                    HS_SIMD_NAME(hs_exp_)(&e, &v);
                    memcpy(a + j, &e, sizeof e);
                } else {
                    for (int k = 0; k < HS_SIMD_W; k++) v[k] = -INFINITY; /* exp = 0 */
                    if (j < n) memcpy(&v, s + j, (size_t)(n - j) * sizeof(float));
                    v -= vmx;
                    HS_SIMD_NAME(hs_exp_)(&e, &v);
                    if (j < n) memcpy(a + j, &e, (size_t)(n - j) * sizeof(float));
                }
                acc[q] += e;
            }
        float lane[L];
        memcpy(lane, acc, sizeof lane);
        for (int w = L / 2; w >= 1; w /= 2)
            for (int k = 0; k < w; k++) lane[k] += lane[k + w];
        const float inv = lane[0] > 0.0f ? 1.0f / lane[0] : 0.0f;
        VF vinv;
        for (int k = 0; k < HS_SIMD_W; k++) vinv[k] = inv;
        int j = 0;
        for (; j + HS_SIMD_W <= n; j += HS_SIMD_W) {
            VF e;
            memcpy(&e, a + j, sizeof e);
            e *= vinv;
            memcpy(a + j, &e, sizeof e);
        }
        for (; j < n; j++) a[j] *= inv;
        memset(a + n, 0, (size_t)(width - n) * sizeof(float));
    }
}

HS_SIMD_TGT static inline void HS_SIMD_NAME(hs_softmax_rows_at_)(float *att, const float *scores,
                                                                size_t rows, int T, int full,
                                                                size_t r0)
{
    HS_SIMD_NAME(hs_softmax_rows_w_)(att, scores, rows, T, full, r0, T, T);
}

HS_SIMD_TGT static inline void HS_SIMD_NAME(hs_softmax_rows_)(float *att, const float *scores,
                                                             size_t rows, int T, int full)
{
    HS_SIMD_NAME(hs_softmax_rows_at_)(att, scores, rows, T, full, 0);
}

#undef VF
#undef VI
#undef HS_SIMD_NAME
#undef HS_SIMD_CAT
#undef HS_SIMD_CAT2
