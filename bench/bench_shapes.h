/*
 * bench/bench_shapes.h -- the matrix products of one training step of a
 * config, counted analytically, and a timer for cblas_sgemm at those shapes
 * (the measured roofline of bench_train and bench_sgemm). Header-only (every
 * every bench program is its own executable); static inline functions.
 *
 * A step = forward + cross-entropy + backward + AdamW. Matmul FLOPs: each
 * forward product (N,C)@(C,OC) is 2*N*C*OC; backward does two products of
 * the same size (dinp and dW), so a step is ~3x the forward. Attention's
 * q.k and pattern@v (causal: only j <= i, T(T+1)/2 pairs) are counted too:
 * forward 2 products, backward 4 (dv, datt, dq, dk).
 *
 * The sgemm list is the products as the library issues them for the shapes
 * of the step (transposes as in backward), taking the packed Q/K/V form:
 * one (BT,D)@(D,H*dh) product per projection.
 */
#ifndef HS_BENCH_SHAPES_H
#define HS_BENCH_SHAPES_H

#include "bench_util.h"
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/model.h"

typedef struct {
    const char *what;  /* e.g. "fwd W_in" */
    int ta, tb;        /* 1 = transposed operand */
    int m, n, k;       /* C (m,n) = op(A) (m,k) @ op(B) (k,n) */
    int count;         /* calls per step */
} bench_gemm;

/* Fills out (cap entries) with the step's sgemm calls; returns the count. */
static inline int bench_step_gemms(const hs_config *c, int B, int T, bench_gemm *out, int cap)
{
    const int BT = B * T, D = c->d_model, H = c->n_heads, dh = c->d_head, M = c->d_mlp,
              V = c->d_vocab, L = c->n_layers, HD = H * dh;
    const int nproj = c->attn == HS_ATTN_SOFTMAX ? 3 : 1;
    int n = 0;
#define G(w, a, b, mm, nn, kk, cnt)                                                            \
    do {                                                                                      \
        if (n < cap) out[n] = (bench_gemm){(w), (a), (b), (mm), (nn), (kk), (cnt)};           \
        n++;                                                                                  \
    } while (0)
    G("fwd Q/K/V", 0, 0, BT, HD, D, L * nproj);
    G("fwd W_O", 0, 0, BT, D, HD, L);
    if (M > 0) {
        G("fwd W_in", 0, 0, BT, M, D, L);
        G("fwd W_out", 0, 0, BT, D, M, L);
    }
    G("fwd W_U", 0, 0, BT, V, D, 1);
    G("bwd W_U dx", 0, 1, BT, D, V, 1);
    G("bwd W_U dW", 1, 0, D, V, BT, 1);
    if (M > 0) {
        G("bwd W_out dx", 0, 1, BT, M, D, L);
        G("bwd W_out dW", 1, 0, M, D, BT, L);
        G("bwd W_in dx", 0, 1, BT, D, M, L);
        G("bwd W_in dW", 1, 0, D, M, BT, L);
    }
    G("bwd W_O dx", 0, 1, BT, HD, D, L);
    G("bwd W_O dW", 1, 0, HD, D, BT, L);
    G("bwd QKV dx", 0, 1, BT, D, nproj * HD, L);
    G("bwd QKV dW", 1, 0, D, nproj * HD, BT, L);
#undef G
    return n;
}

/* Analytic FLOPs of one step: matmuls (sgemm part) and attention loops. */
static inline void bench_step_flops(const hs_config *c, int B, int T, double *gemm_flops,
                             double *attn_flops)
{
    bench_gemm g[32];
    int n = bench_step_gemms(c, B, T, g, 32);
    double f = 0.0;
    for (int i = 0; i < n; i++) f += 2.0 * g[i].m * g[i].n * (double)g[i].k * g[i].count;
    *gemm_flops = f;
    const double pairs = (double)T * (T + 1) / 2.0;
    const double per_prod = 2.0 * B * c->n_heads * pairs * c->d_head;
    const int fwd = c->attn == HS_ATTN_SOFTMAX ? 2 : 1, bwd = c->attn == HS_ATTN_SOFTMAX ? 4 : 2;
    *attn_flops = per_prod * (fwd + bwd) * c->n_layers;
}

typedef struct {
    float *a, *b, *c;
    size_t cap;
} bench_bufs;

static inline void bench_bufs_init(bench_bufs *bb, size_t cap)
{
    bb->cap = cap;
    bb->a = malloc(cap * sizeof(float));
    bb->b = malloc(cap * sizeof(float));
    bb->c = malloc(cap * sizeof(float));
    if (!bb->a || !bb->b || !bb->c) {
        fprintf(stderr, "bench: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < cap; i++) {
        bb->a[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
        bb->b[i] = (float)((i * 104729) % 1000) * 1e-3f - 0.5f;
        bb->c[i] = 0.0f;
    }
}

static inline void bench_bufs_free(bench_bufs *bb)
{
    free(bb->a);
    free(bb->b);
    free(bb->c);
}

/* One call of g (beta 1, as backward accumulates). */
static inline void bench_gemm_call(const bench_gemm *g, const bench_bufs *bb)
{
    const int lda = g->ta ? g->m : g->k, ldb = g->tb ? g->k : g->n;
    cblas_sgemm(CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans,
                g->tb ? CblasTrans : CblasNoTrans, g->m, g->n, g->k, 1.0f, bb->a, lda, bb->b, ldb,
                1.0f, bb->c, g->n);
}

/* Least seconds of one call of g over reps repetitions of 10 calls (after
 * warm-up): the minimum, as the machine is shared and the roofline is the
 * best this sgemm does at the shape. */
static inline double bench_time_gemm(const bench_gemm *g, const bench_bufs *bb, int reps)
{
    double *t = malloc((size_t)reps * sizeof(double));
    if (!t) exit(1);
    for (int r = 0; r < 20; r++) bench_gemm_call(g, bb);
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now();
        for (int i = 0; i < 10; i++) bench_gemm_call(g, bb);
        t[r] = (bench_now() - t0) / 10.0;
    }
    double best = t[0];
    for (int r = 1; r < reps; r++)
        if (t[r] < best) best = t[r];
    free(t);
    return best;
}

/* Least seconds of all the step's sgemm calls back to back (reps times). */
static inline double bench_time_step_gemms(const bench_gemm *g, int n, const bench_bufs *bb, int reps)
{
    double *t = malloc((size_t)reps * sizeof(double));
    if (!t) exit(1);
    for (int r = -5; r < reps; r++) {
        double t0 = bench_now();
        for (int i = 0; i < n; i++)
            for (int c = 0; c < g[i].count; c++) bench_gemm_call(&g[i], bb);
        if (r >= 0) t[r] = bench_now() - t0;
    }
    double best = t[0];
    for (int r = 1; r < reps; r++)
        if (t[r] < best) best = t[r];
    free(t);
    return best;
}

static inline size_t bench_gemm_cap(const bench_gemm *g, int n)
{
    size_t cap = 0;
    for (int i = 0; i < n; i++) {
        size_t a = (size_t)g[i].m * g[i].k, b = (size_t)g[i].k * g[i].n, c = (size_t)g[i].m * g[i].n;
        if (a > cap) cap = a;
        if (b > cap) cap = b;
        if (c > cap) cap = c;
    }
    return cap;
}

#endif
