/*
 * model/model_v8.h -- explicit SIMD for model/'s element-wise loops (hs_v8,
 * HS_CLONES, hs_axpy, hs_scale, hs_add, hs_dot, ...), included by
 * model_internal.h. Not public API.
 */
#ifndef HS_MODEL_V8_H
#define HS_MODEL_V8_H

#include <stddef.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Explicit SIMD for the element-wise loops (GCC/clang vector extensions).   */
/*
 * hs_v8 is 8 floats; the compiler lowers it to what the target has (two SSE
 * operations at the default x86-64 -O2, which does not auto-vectorise loops
 * of unknown trip count). Only element-wise operations and reductions in a
 * fixed order written out here: the same input gives the same bits on every
 * call, so the no-observer fast path and the observer path, which share
 * these kernels, compute identical values. Loads and stores go through
 * memcpy (unaligned, no aliasing games).
 */
typedef float hs_v8 __attribute__((vector_size(32)));
typedef int hs_v8i __attribute__((vector_size(32)));
typedef double hs_v4d __attribute__((vector_size(32)));
typedef float hs_v4 __attribute__((vector_size(16)));

/* HS_CLONES on a kernel: GCC compiles it twice, for AVX2 and for the
 * baseline, and picks one at load time (ifunc). The hs_v8 code then runs as
 * native 256-bit operations on AVX2 machines; the operations per lane are the
 * same (no FMA contraction in ISO C mode), so the bits are too. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__) && \
    !defined(HS_NO_CLONES) /* HS_NO_CLONES: the ThreadSanitizer build (CMakeLists.txt) */
#define HS_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define HS_CLONES
#endif

#define HS_V8_LOAD(dst, p) memcpy(&(dst), (p), sizeof(hs_v8))
#define HS_V8_STORE(p, src) memcpy((p), &(src), sizeof(hs_v8))
#define HS_V8_SET1(x) ((hs_v8){(x), (x), (x), (x), (x), (x), (x), (x)})

/* y (n) += a * x (n) */
static inline __attribute__((always_inline)) void hs_axpy(float *y, float a, const float *x, int n)
{
    int i = 0;
    const hs_v8 va = HS_V8_SET1(a);
    for (; i + 8 <= n; i += 8) {
        hs_v8 vx, vy;
        HS_V8_LOAD(vx, x + i);
        HS_V8_LOAD(vy, y + i);
        vy += va * vx;
        HS_V8_STORE(y + i, vy);
    }
    for (; i < n; i++) y[i] += a * x[i];
}

/* y (n) = a * x (n), eight at a time then one at a time (y may be x): the
 * same bits either way (attention's score scaling, the cross-entropy's
 * normalisation and its gradient's 1/n) */
static inline __attribute__((always_inline)) void hs_scale(float *y, const float *x, float a, int n)
{
    int i = 0;
    const hs_v8 va = HS_V8_SET1(a);
    for (; i + 8 <= n; i += 8) {
        hs_v8 v;
        HS_V8_LOAD(v, x + i);
        v *= va;
        HS_V8_STORE(y + i, v);
    }
    for (; i < n; i++) y[i] = x[i] * a;
}

/* y (n) = x (n) - m, eight at a time then one at a time (y may be x): a
 * softmax row's shift by its maximum (attention, the cross-entropy) */
static inline __attribute__((always_inline)) void hs_shift(float *y, const float *x, float m, int n)
{
    int i = 0;
    const hs_v8 vm = HS_V8_SET1(m);
    for (; i + 8 <= n; i += 8) {
        hs_v8 v;
        HS_V8_LOAD(v, x + i);
        v -= vm;
        HS_V8_STORE(y + i, v);
    }
    for (; i < n; i++) y[i] = x[i] - m;
}

/* y (n) = sum_{r < count} coef[r * cs] * X[r * xs .. + n], summed from 0 in r
 * order: the same bits as zeroing y and calling hs_axpy per r, with y held in
 * registers (16 floats at a time) instead of reloaded per r. */
static inline __attribute__((always_inline)) void hs_rows_combine(float *y, const float *coef,
                                                                  size_t cs, const float *X,
                                                                  size_t xs, int count, int n)
{
    int c = 0;
    for (; c + 16 <= n; c += 16) {
        hs_v8 a0 = HS_V8_SET1(0.0f), a1 = HS_V8_SET1(0.0f);
        for (int r = 0; r < count; r++) {
            const hs_v8 w = HS_V8_SET1(coef[r * cs]);
            hs_v8 x0, x1;
            HS_V8_LOAD(x0, X + r * xs + c);
            HS_V8_LOAD(x1, X + r * xs + c + 8);
            a0 += w * x0;
            a1 += w * x1;
        }
        HS_V8_STORE(y + c, a0);
        HS_V8_STORE(y + c + 8, a1);
    }
    for (; c + 8 <= n; c += 8) {
        hs_v8 a0 = HS_V8_SET1(0.0f);
        for (int r = 0; r < count; r++) {
            const hs_v8 w = HS_V8_SET1(coef[r * cs]);
            hs_v8 x0;
            HS_V8_LOAD(x0, X + r * xs + c);
            a0 += w * x0;
        }
        HS_V8_STORE(y + c, a0);
    }
    for (; c < n; c++) {
        float a = 0.0f;
        for (int r = 0; r < count; r++) a += coef[r * cs] * X[r * xs + c];
        y[c] = a;
    }
}

/* out (n) = a (n) + b (n); out may alias a or b. */
static inline __attribute__((always_inline)) void hs_add(float *out, const float *a, const float *b, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        hs_v8 va, vb;
        HS_V8_LOAD(va, a + i);
        HS_V8_LOAD(vb, b + i);
        va += vb;
        HS_V8_STORE(out + i, va);
    }
    for (; i < n; i++) out[i] = a[i] + b[i];
}

/* out (n) = a (n) * b (n). */
static inline __attribute__((always_inline)) void hs_mul(float *out, const float *a,
                                                         const float *b, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        hs_v8 va, vb;
        HS_V8_LOAD(va, a + i);
        HS_V8_LOAD(vb, b + i);
        va *= vb;
        HS_V8_STORE(out + i, va);
    }
    for (; i < n; i++) out[i] = a[i] * b[i];
}

/* hs_add and hs_mul for long arrays, called from code that is not itself an
 * HS_CLONES kernel: inlined there, the 8-lane form compiles to SSE2 with
 * stack spills (the backward's dpre = dpost * GELU' ran at half speed).
 * Same operations, same bits. */
void hs_add_long(float *out, const float *a, const float *b, size_t n);
void hs_mul_long(float *out, const float *a, const float *b, size_t n);

/* Dot product of a, b (n): 8 lane sums over the chunks of 8, folded as a
 * 16/8/4-lane register would be (l + l+4, then + l+2, then + l+1), then the
 * scalar tail. */
static inline __attribute__((always_inline)) float hs_dot(const float *a, const float *b, int n)
{
    int i = 0;
    float s = 0.0f;
    if (n >= 8) {
        hs_v8 acc = HS_V8_SET1(0.0f);
        for (; i + 8 <= n; i += 8) {
            hs_v8 va, vb;
            HS_V8_LOAD(va, a + i);
            HS_V8_LOAD(vb, b + i);
            acc += va * vb;
        }
        s = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
    }
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

/* The maximum of s[0..n) into *mx; 0 when the row holds a NaN or its
 * maximum is not finite (the softmax then gives the row weights 0). */
static inline __attribute__((always_inline)) int hs_row_max(const float *s, int n, float *mx)
{
    float m = -INFINITY;
    int nan = 0, j = 0;
    if (n >= 8) { /* 8 lanes, then folded: the maximum is the same in any order
                  * (up to the sign of a zero, which s - max does not see) */
        hs_v8 vm = HS_V8_SET1(-INFINITY);
        hs_v8i vnan = {0};
        for (; j + 8 <= n; j += 8) {
            hs_v8 x;
            HS_V8_LOAD(x, s + j);
            const hs_v8i gt = x > vm;
            vm = (hs_v8)(((hs_v8i)x & gt) | ((hs_v8i)vm & ~gt));
            vnan |= x != x;
        }
        for (int k = 0; k < 8; k++) {
            if (vm[k] > m) m = vm[k];
            nan |= vnan[k];
        }
    }
    for (; j < n; j++) {
        if (s[j] > m) m = s[j];
        nan |= s[j] != s[j];
    }
    *mx = m;
    return !nan && m - m == 0.0f;
}

#endif /* HS_MODEL_V8_H */
