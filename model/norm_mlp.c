/*
 * model/norm_mlp.c -- the norms (LayerNorm, RMSNorm: statistics, the affine
 * part, the hooked norm with its hook_scale and hook_normalized points), the
 * element-wise passes that follow the products (bias, residual, the fused
 * no-observer passes), the activation functions (GELU and gelu_new dispatch,
 * ReLU) and the
 * MLP half of a block (hs_mlp_forward).
 *
 * Kernels are plain functions (outputs first, then inputs, weights, dims);
 * the HS_CLONES ones are compiled for AVX2 and the baseline (model_internal.h).
 */
#include "model.h"
#include "model_internal.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Norms                                                                     */

/* out (N,D), mean (N), rstd (N) <- norm of inp (N,D). The affine part (w, b)
 * is applied after it (hs_norm_apply_affine, fused unless observed) so the
 * observer can see the normalised value before it, as TransformerLens'
 * hook_normalized. RMS: mean = 0. */
HS_CLONES
void hs_norm_stats(float *mean, float *rstd, const float *inp, size_t N, int D, hs_norm type,
                   float eps)
{
    for (size_t i = 0; i < N; i++) {
        const float *x = inp + i * (size_t)D;
        int d0 = D & ~7;
        double mu = 0.0;
        if (type == HS_NORM_LAYERNORM) {
            /* 8 double lanes (two v4d), summed in a fixed order, then the tail */
            hs_v4d s0 = {0, 0, 0, 0}, s1 = {0, 0, 0, 0};
            for (int d = 0; d < d0; d += 8) {
                hs_v4 a, b;
                memcpy(&a, x + d, sizeof a);
                memcpy(&b, x + d + 4, sizeof b);
                s0 += __builtin_convertvector(a, hs_v4d);
                s1 += __builtin_convertvector(b, hs_v4d);
            }
            s0 += s1;
            mu = (s0[0] + s0[2]) + (s0[1] + s0[3]);
            for (int d = d0; d < D; d++) mu += x[d];
            mu /= D;
        }
        hs_v4d q0 = {0, 0, 0, 0}, q1 = {0, 0, 0, 0};
        const hs_v4d vmu = {mu, mu, mu, mu};
        for (int d = 0; d < d0; d += 8) {
            hs_v4 a, b;
            memcpy(&a, x + d, sizeof a);
            memcpy(&b, x + d + 4, sizeof b);
            hs_v4d c0 = __builtin_convertvector(a, hs_v4d) - vmu;
            hs_v4d c1 = __builtin_convertvector(b, hs_v4d) - vmu;
            q0 += c0 * c0;
            q1 += c1 * c1;
        }
        q0 += q1;
        double var = (q0[0] + q0[2]) + (q0[1] + q0[3]);
        for (int d = d0; d < D; d++) {
            double c = x[d] - mu;
            var += c * c;
        }
        var /= D;
        mean[i] = (float)mu;
        rstd[i] = (float)(1.0 / sqrt(var + (double)eps));
    }
}

/* The affine part after or without the normalisation (model_internal.h). */
HS_CLONES
void hs_norm_apply_affine(float *out, const float *inp, const float *mean, const float *rstd,
                          const float *w, const float *b, size_t N, int D, int normalize,
                          int affine)
{
    for (size_t i = 0; i < N; i++) {
        const float *x = inp + i * (size_t)D;
        float *o = out + i * (size_t)D;
        const hs_v8 mu = HS_V8_SET1(mean[i]), rs = HS_V8_SET1(rstd[i]);
        int d = 0;
        for (; d + 8 <= D; d += 8) {
            hs_v8 v;
            if (normalize) {
                HS_V8_LOAD(v, x + d);
                v = (v - mu) * rs;
            } else {
                HS_V8_LOAD(v, o + d);
            }
            if (affine) {
                hs_v8 t;
                if (w) {
                    HS_V8_LOAD(t, w + d);
                    v *= t;
                }
                if (b) {
                    HS_V8_LOAD(t, b + d);
                    v += t;
                }
            }
            HS_V8_STORE(o + d, v);
        }
        for (; d < D; d++) {
            float v = normalize ? (x[d] - mean[i]) * rstd[i] : o[d];
            if (affine) {
                if (w) v *= w[d];
                if (b) v += b[d];
            }
            o[d] = v;
        }
    }
}

void hs_norm_apply(float *out, const float *inp, const float *mean, const float *rstd, size_t N,
                   int D)
{
    hs_norm_apply_affine(out, inp, mean, rstd, NULL, NULL, N, D, 1, 0);
}

/* ------------------------------------------------------------------------ */
/* Element-wise passes after the products                                    */

HS_CLONES
void hs_add_long(float *out, const float *a, const float *b, size_t n)
{
    hs_add(out, a, b, n);
}

HS_CLONES
void hs_mul_long(float *out, const float *a, const float *b, size_t n)
{
    hs_mul(out, a, b, n);
}

HS_CLONES
void hs_add_bias_rows(float *out, const float *bias, size_t N, int OC)
{
    for (size_t i = 0; i < N; i++) hs_add(out + i * (size_t)OC, out + i * (size_t)OC, bias, (size_t)OC);
}

/* out (N, OC) = inp (N, C) @ W (C, OC), then + bias (OC) (may be NULL). */
void hs_matmul_forward(float *out, const float *inp, const float *W, const float *bias, size_t N,
                       int C, int OC)
{
    hs_sgemm(0, 0, (int)N, OC, C, 1.0f, inp, C, W, OC, 0.0f, out, OC);
    if (bias) hs_add_bias_rows(out, bias, N, OC);
}

/* One product's rows in parts (hs_sgemm_pool). */
typedef struct {
    int tb, M, N, K, lda, ldb, ldc, parts;
    float alpha, beta;
    const float *A, *B;
    float *C;
    const float *fill; /* NULL, or the row (N) each part copies into its rows of C first */
    int zero;          /* 1: each column part zeroes its columns of C first (beta is then 1) */
} gemm_rows;

/* Row where part j of p starts: M j / parts, rounded to a multiple of 64. */
static int gemm_part_row(const gemm_rows *g, int j)
{
    if (j >= g->parts) return g->M;
    const int r = (int)(((long)g->M * j / g->parts + 32) / 64) * 64;
    return r < g->M ? r : g->M;
}

static hs_status gemm_rows_part(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    (void)err;
    const gemm_rows *g = ctx;
    const int r0 = gemm_part_row(g, j), r1 = gemm_part_row(g, j + 1);
    if (g->fill)
        for (int i = r0; i < r1; i++)
            memcpy(g->C + (size_t)i * g->ldc, g->fill, (size_t)g->N * sizeof(float));
    if (r1 > r0)
        hs_sgemm(0, g->tb, r1 - r0, g->N, g->K, g->alpha, g->A + (size_t)r0 * g->lda, g->lda, g->B,
                 g->ldb, g->beta, g->C + (size_t)r0 * g->ldc, g->ldc);
    return HS_OK;
}

/* Column where part j of a column split of p starts: N j / parts, rounded
 * to a multiple of 64. */
static int gemm_part_col(const gemm_rows *g, int j)
{
    if (j >= g->parts) return g->N;
    const int c = (int)(((long)g->N * j / g->parts + 32) / 64) * 64;
    return c < g->N ? c : g->N;
}

static hs_status gemm_cols_part(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    (void)err;
    const gemm_rows *g = ctx;
    const int c0 = gemm_part_col(g, j), c1 = gemm_part_col(g, j + 1);
    if (c1 <= c0) return HS_OK;
    if (g->fill)
        for (int i = 0; i < g->M; i++)
            memcpy(g->C + (size_t)i * g->ldc + c0, g->fill + c0, (size_t)(c1 - c0) * sizeof(float));
    if (g->zero)
        for (int i = 0; i < g->M; i++) memset(g->C + (size_t)i * g->ldc + c0, 0, (size_t)(c1 - c0) * sizeof(float));
    const float *B = g->B + (g->tb ? (size_t)c0 * g->ldb : (size_t)c0);
    hs_sgemm(0, g->tb, g->M, c1 - c0, g->K, g->alpha, g->A, g->lda, B, g->ldb, g->beta, g->C + c0, g->ldc);
    return HS_OK;
}

/* 1 when every column part of g (g->parts of them) is at least 64 columns
 * wide and of HS_BLAS_DIRECT_MACS (NN, alpha 1, beta 0) or HS_BLAS_SMALL_MACS
 * multiply-adds, an NN part's weight too large for libxsmm
 * (hs_sgemm_nn_jit), and OpenBLAS' kernel family one that keeps a column's
 * bits in any split (hs_blas_split_exact): then the parts and the whole run
 * OpenBLAS' blocked path (or hs_sgemm's few-row products, with its bits),
 * whose K blocking depends on K alone, and each column gets the bits of one
 * call. */
static int cols_split_ok(const gemm_rows *g)
{
    const long least = !g->tb && g->alpha == 1.0f && g->beta == 0.0f ? HS_BLAS_DIRECT_MACS : HS_BLAS_SMALL_MACS;
    for (int j = 0; j < g->parts; j++) {
        const int n = gemm_part_col(g, j + 1) - gemm_part_col(g, j);
        if (n < 64 || (long)g->M * n * g->K < least || (!g->tb && hs_sgemm_nn_jit(n, g->K))) return 0;
    }
    return hs_blas_split_exact(); /* not with OpenBLAS' Haswell kernels */
}

void hs_sgemm_pool_fill(hs_pool *pool, const float *fill, int tb, int M, int N, int K,
                        float alpha, const float *A, int lda, const float *B, int ldb, float beta,
                        float *C, int ldc)
{
    const int w = hs_pool_threads(pool);
    gemm_rows g = {tb, M, N, K, lda, ldb, ldc, 1, alpha, beta, A, B, C, fill, 0};
    hs_error err;
    /* rows: libxsmm's products (exact in any split), OpenBLAS' only on the
     * kernel families that keep a row's bits in any split */
    const int xsmm = !tb && alpha == 1.0f && (beta == 0.0f || beta == 1.0f) && hs_sgemm_nn_jit(N, K);
    if (w >= 2 && M >= HS_BLAS_PAR_ROWS && (xsmm || hs_blas_split_exact())) {
        g.parts = w;
        (void)hs_pool_for(pool, g.parts, gemm_rows_part, &g, &err); /* cannot fail */
        return;
    }
    /* few rows: the columns over the workers, each packing only its part of
     * B (a 16-row forward of GPT-2 small packs 340 MB of weights) */
    for (g.parts = w; g.parts >= 2 && !cols_split_ok(&g); g.parts--) {
    }
    /* an NN product with beta 0 on OpenBLAS' blocked path (or hs_sgemm's
     * few-row products, with its bits) whose column parts would be small
     * enough for its direct kernel (a 16-row forward's W_O, 16 x 768 x 768:
     * parts of 4.7 M multiply-adds; one call on this thread, ~4 ms of its
     * forward): the parts zero their columns and add the product to them
     * (beta 1, which OpenBLAS sums on its blocked path from HS_BLAS_SMALL_MACS:
     * 0 + each K block's sum in turn, the bits of the whole call) */
    if (g.parts < 2 && !tb && alpha == 1.0f && beta == 0.0f && !fill && !hs_sgemm_nn_jit(N, K) &&
        (long)M * N * K >= HS_BLAS_DIRECT_MACS) {
        g.beta = 1.0f;
        g.zero = 1;
        for (g.parts = w; g.parts >= 2 && !cols_split_ok(&g); g.parts--) {
        }
        if (g.parts < 2) {
            g.beta = 0.0f;
            g.zero = 0;
        }
    }
    if (g.parts >= 2 && M > 0) {
        (void)hs_pool_for(pool, g.parts, gemm_cols_part, &g, &err); /* cannot fail */
        return;
    }
    g.parts = 1;
    (void)gemm_rows_part(&g, 0, 0, NULL); /* this thread */
}

void hs_sgemm_pool(hs_pool *pool, int tb, int M, int N, int K, float alpha, const float *A,
                   int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    hs_sgemm_pool_fill(pool, NULL, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void hs_matmul_forward_pool(hs_pool *pool, float *out, const float *inp, const float *W,
                            const float *bias, size_t N, int C, int OC)
{
    hs_sgemm_pool(pool, 0, (int)N, OC, C, 1.0f, inp, C, W, OC, 0.0f, out, OC);
    if (bias) hs_add_bias_rows(out, bias, N, OC);
}

void hs_unembed_forward_pool(hs_pool *pool, float *logits, const float *inp, const hs_params *P,
                             size_t N, int D, int V)
{
    if (P->W_U) {
        hs_matmul_forward_pool(pool, logits, inp, P->W_U, P->b_U, N, D, V);
        return;
    }
    hs_sgemm_pool(pool, 1, (int)N, V, D, 1.0f, inp, D, P->W_U_T, D, 0.0f, logits, V);
    if (P->b_U) hs_add_bias_rows(logits, P->b_U, N, V);
}

void hs_unembed_forward(float *logits, const float *inp, const hs_params *P, size_t N, int D, int V)
{
    hs_unembed_forward_pool(NULL, logits, inp, P, N, D, V);
}

/* The fused bias + residual pass (model_internal.h). */
HS_CLONES
void hs_bias_residual(float *resid_out, const float *resid, float *y, const float *bias,
                      size_t N, int D, int keep_y)
{
    float t[256];
    for (size_t i = 0; i < N; i++)
        for (int d0 = 0; d0 < D; d0 += 256) {
            const size_t n = D - d0 < 256 ? (size_t)(D - d0) : 256, o = i * (size_t)D + (size_t)d0;
            const float *src = y + o;
            if (bias) {
                float *dst = keep_y ? y + o : t;
                hs_add(dst, y + o, bias + d0, n);
                src = dst;
            }
            hs_add(resid_out + o, resid + o, src, n);
        }
}

/* A row-wise pass's rows in parts over a pool (rows_pool): fn(ctx, r0, r1)
 * on rows [r0, r1) of N, one part a job. */
typedef void (*rows_fn)(const void *ctx, size_t r0, size_t r1);

typedef struct {
    rows_fn fn;
    const void *ctx;
    size_t N;
    int parts;
} rows_job;

static hs_status rows_part(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    (void)err;
    const rows_job *r = ctx;
    r->fn(r->ctx, r->N * (size_t)j / (size_t)r->parts, r->N * (size_t)(j + 1) / (size_t)r->parts);
    return HS_OK;
}

/* fn over rows [0, N) spread over pool's workers (NULL, one worker or fewer
 * than 64 rows: this thread, in one call). */
static void rows_pool(hs_pool *pool, size_t N, rows_fn fn, const void *ctx)
{
    const int w = hs_pool_threads(pool);
    if (w < 2 || N < 64) {
        fn(ctx, 0, N);
        return;
    }
    rows_job r = {fn, ctx, N, w};
    hs_error err;
    (void)hs_pool_for(pool, w, rows_part, &r, &err); /* cannot fail */
}

typedef struct {
    float *resid_out, *y;
    const float *resid, *bias;
    int D, keep_y;
} bias_residual_rows;

static void bias_residual_part(const void *ctx, size_t r0, size_t r1)
{
    const bias_residual_rows *b = ctx;
    const size_t o = r0 * (size_t)b->D;
    hs_bias_residual(b->resid_out + o, b->resid + o, b->y + o, b->bias, r1 - r0, b->D, b->keep_y);
}

void hs_bias_residual_pool(hs_pool *pool, float *resid_out, const float *resid, float *y,
                           const float *bias, size_t N, int D, int keep_y)
{
    const bias_residual_rows b = {resid_out, y, resid, bias, D, keep_y};
    rows_pool(pool, N, bias_residual_part, &b);
}

/* hs_bias_residual with keep_y, each row of y and of resid_out then copied
 * to ky, kr (either may be NULL) with streaming stores while in L1, one
 * fence a part (the pool's job ends after it). */
HS_CLONES
static void bias_residual_keep(float *resid_out, const float *resid, float *y, const float *bias,
                               size_t N, int D, float *ky, float *kr)
{
    for (size_t i = 0; i < N; i++) {
        const size_t o = i * (size_t)D;
        hs_bias_residual(resid_out + o, resid + o, y + o, bias, 1, D, 1);
        if (ky) hs_store_streaming(ky + o, y + o, (size_t)D);
        if (kr) hs_store_streaming(kr + o, resid_out + o, (size_t)D);
    }
    if (ky || kr) hs_streaming_fence();
}

typedef struct {
    float *resid_out, *y, *ky, *kr;
    const float *resid, *bias;
    int D;
} bias_residual_keep_rows;

static void bias_residual_keep_part(const void *ctx, size_t r0, size_t r1)
{
    const bias_residual_keep_rows *b = ctx;
    const size_t o = r0 * (size_t)b->D;
    bias_residual_keep(b->resid_out + o, b->resid + o, b->y + o, b->bias, r1 - r0, b->D,
                       b->ky ? b->ky + o : NULL, b->kr ? b->kr + o : NULL);
}

void hs_bias_residual_keep_pool(hs_pool *pool, float *resid_out, const float *resid, float *y,
                                const float *bias, size_t N, int D, float *ky, float *kr)
{
    const bias_residual_keep_rows b = {resid_out, y, ky, kr, resid, bias, D};
    rows_pool(pool, N, bias_residual_keep_part, &b);
}

typedef struct {
    float *dst, *keep;
    const float *src;
    int D;
} copy_keep_rows;

/* 16 rows at a time: copied, then streamed from L1 to keep. */
static void copy_keep_part(const void *ctx, size_t r0, size_t r1)
{
    const copy_keep_rows *c = ctx;
    const size_t D = (size_t)c->D;
    for (size_t a = r0; a < r1; a += 16) {
        const size_t n = ((a + 16 < r1 ? a + 16 : r1) - a) * D, o = a * D;
        memcpy(c->dst + o, c->src + o, n * sizeof(float));
        if (c->keep) hs_store_streaming(c->keep + o, c->dst + o, n);
    }
    if (c->keep) hs_streaming_fence(); /* before the pool's job ends */
}

void hs_copy_keep_pool(hs_pool *pool, float *dst, const float *src, float *keep, size_t N, int D)
{
    const copy_keep_rows c = {dst, keep, src, D};
    rows_pool(pool, N, copy_keep_part, &c);
}

typedef struct {
    float *out;
    const float *bias;
    int OC;
} bias_rows;

static void bias_rows_part(const void *ctx, size_t r0, size_t r1)
{
    const bias_rows *b = ctx;
    hs_add_bias_rows(b->out + r0 * (size_t)b->OC, b->bias, r1 - r0, b->OC);
}

void hs_add_bias_rows_pool(hs_pool *pool, float *out, const float *bias, size_t N, int OC)
{
    const bias_rows b = {out, bias, OC};
    rows_pool(pool, N, bias_rows_part, &b);
}

int hs_hook_into(hs_hook_ctx *hc, const char *nm, float *own, float *buf, size_t n, int ndim,
                 int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    if (buf == NULL || buf == own) return hs_hook(hc, nm, own, ndim, d0, d1, d2, d3);
    memcpy(buf, own, n * sizeof(float));
    const int r = hs_hook(hc, nm, buf, ndim, d0, d1, d2, d3);
    if (r > 0) memcpy(own, buf, n * sizeof(float));
    return r;
}

hs_status hs_hook_kept(hs_hook_ctx *hc, const char *nm, float *buf, int ndim, int64_t d0,
                       int64_t d1, int64_t d2, int64_t d3, hs_error *err)
{
    if (buf == NULL) return HS_OK;
    const int r = hs_hook(hc, nm, buf, ndim, d0, d1, d2, d3);
    if (r < 0) return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", nm);
    if (r > 0)
        return hs_fail(err, HS_ERR_CALLBACK, "observer changed %s, which it said it only keeps "
                       "(hs_observer_dest_fn)", nm);
    return HS_OK;
}

/* A norm's statistics and its application (hs_norm_stats, then
 * hs_norm_apply_affine) row by row over a pool (rows_pool). */
typedef struct {
    float *out, *mean, *rstd;
    const float *inp, *w, *b;
    int D, normalize, affine, stats, apply;
    hs_norm type;
    float eps;
    float *ks, *kn; /* norm_kept_part: the kept hook_scale, hook_normalized (may be NULL) */
} norm_rows;

/* Rows of a norm_kept_part chunk: 16 rows of GPT-2 small's 768 are 48 KB. */
#define NORM_KEPT_ROWS 16

/* The whole norm of rows [r0, r1) for an observer that only keeps its
 * points, NORM_KEPT_ROWS rows at a time while they are in L1/L2: the
 * statistics, the scale 1 / rstd into ks, the normalised rows (streamed to
 * kn), then the affine part in place: the operations of the observed path
 * (hs_norm_forward_hooked) in its order, row by row. */
static void norm_kept_part(const void *ctx, size_t r0, size_t r1)
{
    const norm_rows *n = ctx;
    const size_t D = (size_t)n->D;
    for (size_t a = r0; a < r1; a += NORM_KEPT_ROWS) {
        const size_t b = a + NORM_KEPT_ROWS < r1 ? a + NORM_KEPT_ROWS : r1, o = a * D;
        hs_norm_stats(n->mean + a, n->rstd + a, n->inp + o, b - a, n->D, n->type, n->eps);
        if (n->ks)
            for (size_t i = a; i < b; i++) n->ks[i] = 1.0f / n->rstd[i];
        hs_norm_apply_affine(n->out + o, n->inp + o, n->mean + a, n->rstd + a, n->w, n->b, b - a,
                             n->D, 1, 0);
        if (n->kn) hs_store_streaming(n->kn + o, n->out + o, (b - a) * D);
        hs_norm_apply_affine(n->out + o, n->out + o, n->mean + a, n->rstd + a, n->w, n->b, b - a,
                             n->D, 0, 1);
    }
    if (n->kn) hs_streaming_fence(); /* before the pool's job ends */
}

static void norm_part(const void *ctx, size_t r0, size_t r1)
{
    const norm_rows *n = ctx;
    const size_t o = r0 * (size_t)n->D;
    if (n->stats) hs_norm_stats(n->mean + r0, n->rstd + r0, n->inp + o, r1 - r0, n->D, n->type, n->eps);
    if (n->apply)
        hs_norm_apply_affine(n->out + o, n->inp + o, n->mean + r0, n->rstd + r0, n->w, n->b,
                             r1 - r0, n->D, n->normalize, n->affine);
}

/* ------------------------------------------------------------------------ */
/* Activation functions                                                      */

/* The no-observer MLP's first pass: pre (N, M) += bias (may be NULL), then
 * out = act(pre) (and dact, may be NULL), row by row while the row is in L1:
 * the bits of hs_add_bias_rows and hs_act_forward. */
HS_CLONES
static void bias_act_forward(float *out, float *dact, float *pre, const float *bias, size_t N,
                             int M, hs_act act, float *kp, float *ko)
{
    for (size_t i = 0; i < N; i++) {
        const size_t o = i * (size_t)M;
        if (bias) hs_add(pre + o, pre + o, bias, (size_t)M);
        hs_act_forward(out + o, dact ? dact + o : NULL, pre + o, (size_t)M, act);
        /* the points an observer only keeps (hs_hook_keeps): the rows
         * streamed there from L1, read by no one before the forward ends */
        if (kp) hs_store_streaming(kp + o, pre + o, (size_t)M);
        if (ko) hs_store_streaming(ko + o, out + o, (size_t)M);
    }
    if (kp || ko) hs_streaming_fence(); /* before the pool's job ends */
}

/* bias_act_forward's rows spread over a pool (rows_pool: every row's values
 * are its own, the bits of one call). */
typedef struct {
    float *out, *dact, *pre, *kp, *ko;
    const float *bias;
    int M;
    hs_act act;
} bias_act_rows;

static void bias_act_part(const void *ctx, size_t r0, size_t r1)
{
    const bias_act_rows *b = ctx;
    const size_t o = r0 * (size_t)b->M;
    bias_act_forward(b->out + o, b->dact ? b->dact + o : NULL, b->pre + o, b->bias, r1 - r0, b->M,
                     b->act, b->kp ? b->kp + o : NULL, b->ko ? b->ko + o : NULL);
}

/* bias_act_forward over the workers of pool (NULL or few rows: this
 * thread); kp, ko (may be NULL): where pre and out are kept too. */
static void bias_act_pool(hs_pool *pool, float *out, float *dact, float *pre, const float *bias,
                          size_t N, int M, hs_act act, float *kp, float *ko)
{
    const bias_act_rows b = {out, dact, pre, kp, ko, bias, M, act};
    rows_pool(pool, N, bias_act_part, &b);
}

/* SiLU (model_internal.h): x / (1 + exp(-x)) in float, and its derivative
 * s (1 + x (1 - s)), s = 1 / (1 + exp(-x)). */
void hs_silu_forward(float *out, float *dact, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const float x = inp[i], e = expf(-x), s = 1.0f / (1.0f + e);
        out[i] = x * s;
        if (dact) dact[i] = s * (1.0f + x * (1.0f - s));
    }
}

/* The widest GELU kernel the CPU runs (identical bits at every width). */
void hs_gelu_forward(float *out, const float *inp, size_t n)
{
    HS_SIMD_CALL(hs_gelu_forward_, out, inp, n);
}

void hs_gelu_forward_grad(float *out, float *dact, const float *inp, size_t n)
{
    HS_SIMD_CALL(hs_gelu_forward_grad_, out, dact, inp, n);
}

void hs_gelu_backward(float *dinp, const float *dout, const float *inp, size_t n)
{
    HS_SIMD_CALL(hs_gelu_backward_, dinp, dout, inp, n);
}

void hs_gelu_new_forward(float *out, float *dact, const float *inp, size_t n)
{
    HS_SIMD_CALL(hs_gelu_new_forward_, out, dact, inp, n);
}

void hs_gelu_new_backward(float *dinp, const float *dout, const float *inp, size_t n)
{
    HS_SIMD_CALL(hs_gelu_new_backward_, dinp, dout, inp, n);
}

/* ------------------------------------------------------------------------ */
/* The hooked norm                                                           */

/* A norm with its two hook points (model_internal.h). */
hs_status hs_norm_forward_hooked(hs_hook_ctx *hc, const char *prefix, float *out, float *mean,
                                 float *rstd, const float *inp, const float *w, const float *b,
                                 int B, int T, int D, hs_norm type, float eps, float *scratch,
                                 hs_error *err)
{
    size_t N = (size_t)B * T;
    /* row by row over the forward's workers (hc->pool; NULL: this thread):
     * each row's values are its own, the bits of one call */
    norm_rows nr = {out, mean, rstd, inp, w, b, D, 1, 1, 1, 0, type, eps, NULL, NULL};
    char nm[96], nn[96];
    snprintf(nm, sizeof nm, "%s.hook_scale", prefix);
    snprintf(nn, sizeof nn, "%s.hook_normalized", prefix);
    /* an observer that only keeps both points (the activation cache): the
     * whole norm in one pass over rows, the points streamed to its buffers
     * (norm_kept_part: 4 passes over the rows and the cache's copy were 5) */
    float *ks = NULL, *kn = NULL;
    int keeps_s = 0, keeps_n = 0;
    if (hc->obs) {
        keeps_s = hs_hook_keeps(hc, nm, scratch, &ks, 3, B, T, 1, 0);
        keeps_n = keeps_s && hs_hook_keeps(hc, nn, out, &kn, 3, B, T, D, 0);
        if (keeps_s && keeps_n && (ks || kn)) {
            nr.ks = ks, nr.kn = kn;
            rows_pool(hc->pool, N, norm_kept_part, &nr);
            hs_status s = hs_hook_kept(hc, nm, ks, 3, B, T, 1, 0, err);
            if (s == HS_OK) s = hs_hook_kept(hc, nn, kn, 3, B, T, D, 0, err);
            return s;
        }
    }
    rows_pool(hc->pool, N, norm_part, &nr);
    nr.stats = 0;
    nr.apply = 1;
    if (hc->obs) {
        if (hs_hook_wants(hc, nm)) {
            for (size_t i = 0; i < N; i++) scratch[i] = 1.0f / rstd[i];
            int r = hs_hook_into(hc, nm, scratch, ks, N, 3, B, T, 1, 0);
            if (r < 0) return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", nm);
            if (r > 0) /* only entries the observer changed: 1/(1/x) is not always x */
                for (size_t i = 0; i < N; i++)
                    if (scratch[i] != 1.0f / rstd[i]) rstd[i] = 1.0f / scratch[i];
        }
    }
    if (hc->obs) {
        if (hs_hook_wants(hc, nn)) {
            nr.normalize = 1, nr.affine = 0;
            rows_pool(hc->pool, N, norm_part, &nr);
            if (hs_hook_into(hc, nn, out, kn, N * (size_t)D, 3, B, T, D, 0) < 0)
                return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", nn);
            nr.normalize = 0, nr.affine = 1;
            rows_pool(hc->pool, N, norm_part, &nr);
            return HS_OK;
        }
    }
    /* fused: the same per-element operations in the same order */
    nr.normalize = 1, nr.affine = 1;
    rows_pool(hc->pool, N, norm_part, &nr);
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* The MLP half of a block                                                   */

/* The gated MLP's hidden layer (TransformerLens GatedMLP; Llama's SwiGLU):
 * mlp_pre = ln2_out W_gate (hook_pre), mlp_pre_linear = ln2_out W_in + b_in
 * (hook_pre_linear), mlp_post = act(mlp_pre) * mlp_pre_linear (hook_post);
 * act'(mlp_pre) kept in hs_acts_dact when the activations have room. */
static hs_status gated_hidden(const hs_block_step *k, hs_error *err)
{
    const hs_config *c = k->c;
    hs_block_acts *ba = k->ba;
    const hs_block_params *bp = k->bp;
    const int D = c->d_model, M = c->d_mlp, l = k->l, B = k->B, T = k->T;
    const size_t BT = k->BT;
    char nm[96];
    hs_sgemm_pool(k->hc->pool, 0, (int)BT, M, D, 1.0f, ba->ln2_out, D, bp->W_gate, M, 0.0f,
                  ba->mlp_pre, M);
    snprintf(nm, sizeof nm, "blocks.%d.mlp.hook_pre", l);
    HS_HOOK(k->hc, nm, ba->mlp_pre, 3, B, T, M, 0);
    hs_matmul_forward_pool(k->hc->pool, ba->mlp_pre_linear, ba->ln2_out, bp->W_in, bp->b_in, BT,
                           D, M);
    snprintf(nm, sizeof nm, "blocks.%d.mlp.hook_pre_linear", l);
    HS_HOOK(k->hc, nm, ba->mlp_pre_linear, 3, B, T, M, 0);
    hs_act_forward(ba->mlp_post, hs_acts_dact(k->acts, c, l), ba->mlp_pre, BT * M, c->act);
    hs_mul_long(ba->mlp_post, ba->mlp_post, ba->mlp_pre_linear, BT * M);
    snprintf(nm, sizeof nm, "blocks.%d.mlp.hook_post", l);
    HS_HOOK(k->hc, nm, ba->mlp_post, 3, B, T, M, 0);
    return HS_OK;
}

hs_status hs_mlp_forward(const hs_block_step *k, hs_error *err)
{
    const hs_config *c = k->c;
    hs_block_acts *ba = k->ba;
    const hs_block_params *bp = k->bp;
    const int D = c->d_model, M = c->d_mlp, l = k->l, B = k->B, T = k->T;
    const size_t BT = k->BT;
    const int post = c->norm_place == HS_NORM_POST;
    char nm[96];

    /* the MLP reads resid_mid (its point told by model/forward.c), or
     * resid_pre in parallel with the attention (TL: no hook_resid_mid then) */
    float *in = c->parallel_attn_mlp ? ba->resid_pre : ba->resid_mid;
    /* hook_mlp_in: the input of ln2 alone (a copy in ln2_out, normalised
     * in place), so an edit leaves the residual skip as it was */
    const float *ln2_in = in;
    snprintf(nm, sizeof nm, "blocks.%d.hook_mlp_in", l);
    if (hs_hook_wants(k->hc, nm)) {
        memcpy(ba->ln2_out, in, BT * D * sizeof(float));
        HS_HOOK(k->hc, nm, ba->ln2_out, 3, B, T, D, 0);
        ln2_in = ba->ln2_out;
    }
    if (c->norm != HS_NORM_NONE && !post) {
        snprintf(nm, sizeof nm, "blocks.%d.ln2", l);
        hs_status s = hs_norm_forward_hooked(k->hc, nm, ba->ln2_out, ba->ln2_mean, ba->ln2_rstd,
                                             ln2_in, bp->ln2_w, bp->ln2_b, B, T, D, c->norm,
                                             c->eps, k->acts->scratch, err);
        if (s != HS_OK) return s;
    } else if (ln2_in != ba->ln2_out) {
        memcpy(ba->ln2_out, in, BT * D * sizeof(float));
    }
    if (c->gated_mlp) {
        hs_status s = gated_hidden(k, err);
        if (s != HS_OK) return s;
    } else if (k->fuse) {
        hs_sgemm_pool(k->hc->pool, 0, (int)BT, M, D, 1.0f, ba->ln2_out, D, bp->W_in, M, 0.0f,
                      ba->mlp_pre, M);
        bias_act_pool(k->hc->pool, ba->mlp_post, hs_acts_dact(k->acts, c, l), ba->mlp_pre, bp->b_in,
                      BT, M, c->act, NULL, NULL);
    } else {
        hs_sgemm_pool(k->hc->pool, 0, (int)BT, M, D, 1.0f, ba->ln2_out, D, bp->W_in, M, 0.0f,
                      ba->mlp_pre, M);
        char nq[96];
        snprintf(nm, sizeof nm, "blocks.%d.mlp.hook_pre", l);
        snprintf(nq, sizeof nq, "blocks.%d.mlp.hook_post", l);
        /* an observer that only keeps both (the activation cache): one pass,
         * the bias, the activation and each row streamed to its buffers
         * (hs_hook_keeps; the separate passes and the cache's copies read
         * and wrote mlp_pre and mlp_post 8 times, 100 MB a layer at GPT-2
         * small, 1,024 tokens); else the points one at a time */
        float *kp, *kq = NULL;
        const int keeps_p = hs_hook_keeps(k->hc, nm, ba->mlp_pre, &kp, 3, B, T, M, 0);
        const int keeps_q = keeps_p && hs_hook_keeps(k->hc, nq, ba->mlp_post, &kq, 3, B, T, M, 0);
        if (keeps_p && keeps_q) {
            bias_act_pool(k->hc->pool, ba->mlp_post, hs_acts_dact(k->acts, c, l), ba->mlp_pre,
                          bp->b_in, BT, M, c->act, kp, kq);
            hs_status s = hs_hook_kept(k->hc, nm, kp, 3, B, T, M, 0, err);
            if (s == HS_OK) s = hs_hook_kept(k->hc, nq, kq, 3, B, T, M, 0, err);
            if (s != HS_OK) return s;
        } else {
            if (bp->b_in) hs_add_bias_rows_pool(k->hc->pool, ba->mlp_pre, bp->b_in, BT, M);
            if (hs_hook_into(k->hc, nm, ba->mlp_pre, kp, BT * M, 3, B, T, M, 0) < 0)
                return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", nm);
            /* row by row, the bits of one call (elementwise) */
            bias_act_pool(k->hc->pool, ba->mlp_post, hs_acts_dact(k->acts, c, l), ba->mlp_pre, NULL,
                          BT, M, c->act, NULL, NULL);
            if (hs_hook_into(k->hc, nq, ba->mlp_post, kq, BT * M, 3, B, T, M, 0) < 0)
                return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", nq);
        }
    }
    float *mlp_out = k->acts->scratch;
    hs_sgemm_pool(k->hc->pool, 0, (int)BT, D, M, 1.0f, ba->mlp_post, M, bp->W_out, D, 0.0f,
                  mlp_out, D);
    /* the residual: resid_mid (resid_pre + attn_out, parallel too: TL's
     * resid_pre + attn_out + mlp_out in that order) + mlp_out, into
     * resid_post, or into sum_mlp for the post-norm LN2 */
    float *sum = post ? ba->sum_mlp : ba->resid_post;
    char nr[96];
    snprintf(nm, sizeof nm, "blocks.%d.hook_mlp_out", l);
    snprintf(nr, sizeof nr, "blocks.%d.hook_resid_post", l);
    if (k->fuse) {
        hs_bias_residual_pool(k->hc->pool, sum, ba->resid_mid, mlp_out, bp->b_out, BT, D, 0);
    } else if (!post) {
        /* as the hidden layer's: an observer that only keeps mlp_out and
         * resid_post gets their rows from the residual's one pass */
        float *ko, *kr = NULL;
        const int keeps_o = hs_hook_keeps(k->hc, nm, mlp_out, &ko, 3, B, T, D, 0);
        const int keeps_r = keeps_o && hs_hook_keeps(k->hc, nr, ba->resid_post, &kr, 3, B, T, D, 0);
        if (keeps_o && keeps_r) {
            hs_bias_residual_keep_pool(k->hc->pool, sum, ba->resid_mid, mlp_out, bp->b_out, BT, D,
                                       ko, kr);
            hs_status s = hs_hook_kept(k->hc, nm, ko, 3, B, T, D, 0, err);
            if (s == HS_OK) s = hs_hook_kept(k->hc, nr, kr, 3, B, T, D, 0, err);
            return s;
        }
        if (bp->b_out) hs_add_bias_rows_pool(k->hc->pool, mlp_out, bp->b_out, BT, D);
        if (hs_hook_into(k->hc, nm, mlp_out, ko, BT * D, 3, B, T, D, 0) < 0)
            return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", nm);
        hs_bias_residual_pool(k->hc->pool, sum, ba->resid_mid, mlp_out, NULL, BT, D, 1);
        if (hs_hook_into(k->hc, nr, ba->resid_post, kr, BT * D, 3, B, T, D, 0) < 0)
            return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", nr);
        return HS_OK;
    } else {
        if (bp->b_out) hs_add_bias_rows_pool(k->hc->pool, mlp_out, bp->b_out, BT, D);
        HS_HOOK(k->hc, nm, mlp_out, 3, B, T, D, 0);
        hs_bias_residual_pool(k->hc->pool, sum, ba->resid_mid, mlp_out, NULL, BT, D, 1);
    }
    if (post) {
        snprintf(nm, sizeof nm, "blocks.%d.ln2", l);
        hs_status s = hs_norm_forward_hooked(k->hc, nm, ba->resid_post, ba->ln2_mean, ba->ln2_rstd,
                                             ba->sum_mlp, bp->ln2_w, bp->ln2_b, B, T, D, c->norm,
                                             c->eps, k->acts->scratch, err);
        if (s != HS_OK) return s;
    }
    HS_HOOK(k->hc, nr, ba->resid_post, 3, B, T, D, 0);
    return HS_OK;
}
