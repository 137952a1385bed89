/*
 * common/gemm.c -- the library's one matrix product (common.h, hs_sgemm):
 * libxsmm's JIT kernels for the small shapes a step is made of, OpenBLAS for
 * the rest.
 *
 * Why two libraries behind one call: at headscope's shapes (rows in the
 * hundreds or thousands, d_model and d_mlp 64-1024) OpenBLAS packs both
 * operands on every call (11% of a default training step) and clears or
 * pre-fills C before its kernel runs; libxsmm's kernels read the operands as
 * they are and write C directly. Measured one thread, AVX-512, 576 rows
 * (half the default batch): 64 x 64 weights 39 -> 26 us, 64 x 256 126 -> 99 us,
 * 256 x 1024 1969 -> 1644 us; at 512 x 2048 and above libxsmm's single
 * register-blocked kernel loses (28 -> 62 ms), so those stay on OpenBLAS
 * (the thresholds below). Row-major C = A B (NN) gives the same bits on both
 * (each element a k-sequential FMA chain); C = A^T B (TN, weight gradients)
 * sums in another order.
 *
 * Bits: which library runs a product depends only on its shape and flags, and
 * a libxsmm NN product is made in blocks of HS_XSMM_ROWS rows whose values do
 * not depend on the block a row is in, so results stay the same for any
 * thread count (the forward's batch split hands each worker whole rows).
 */
#include "common.h"

#include <cblas.h>
#include <libxsmm.h>

/* rows a libxsmm NN kernel takes at once (the last block takes the rest) */
#define HS_XSMM_ROWS 64
/* the most elements the libxsmm operand that stays in cache may have: the
 * weight of an NN product (K x N), the gradient of a TN one (M x N) */
#define HS_XSMM_MAX_WEIGHT (256 * 1024)
/* the most elements both operands of a TN product may have together
 * (K x (M + N)): its one kernel call streams them once per register block of
 * C, so they must stay in L2. Measured one thread, AVX-512: 64 x 256 from
 * 1152 rows 141 -> 170 GFLOP/s (OpenBLAS -> libxsmm), from 4096 rows
 * 112 -> 47; 256 x 1024 from 4096 rows 146 -> 49 */
#define HS_XSMM_MAX_TN (256 * 1024)

/* libxsmm's kernel for one shape (column-major m, n, k; NULL when it has none). */
static hs_sgemm_kernel kernel(int m, int n, int k, int lda, int ldb, int ldc, int flags)
{
    const float alpha = 1.0f, beta = (flags & LIBXSMM_GEMM_FLAG_BETA_0) ? 0.0f : 1.0f;
    const libxsmm_blasint lm = m, ln = n, lk = k, la = lda, lb = ldb, lc = ldc;
    return (hs_sgemm_kernel)libxsmm_smmdispatch(lm, ln, lk, &la, &lb, &lc, &alpha, &beta, &flags,
                                                NULL);
}

/* NN: C (M, N) = A (M, K) B (K, N) + beta C. Column-major, that is C^T = B^T
 * A^T: libxsmm's m = N, n = rows (blocks of HS_XSMM_ROWS), k = K, with B as
 * its first operand. 1 when libxsmm takes it. */
static int plan_nn(hs_sgemm_plan *p)
{
    if ((long)p->N * p->K > HS_XSMM_MAX_WEIGHT) return 0;
    const int flags = p->beta == 0.0f ? LIBXSMM_GEMM_FLAG_BETA_0 : LIBXSMM_GEMM_FLAG_NONE;
    const int full = p->M / HS_XSMM_ROWS, rest = p->M % HS_XSMM_ROWS;
    if (full > 0 && (p->full = kernel(p->N, HS_XSMM_ROWS, p->K, p->ldb, p->lda, p->ldc, flags)) == NULL)
        return 0;
    if (rest > 0 && (p->rest = kernel(p->N, rest, p->K, p->ldb, p->lda, p->ldc, flags)) == NULL)
        return 0;
    return 1;
}

/* TN: C (M, N) = A^T B + beta C with A (K, M), B (K, N). Column-major, C^T =
 * B^T A: libxsmm's m = N, n = M, k = K, its second operand transposed. */
static int plan_tn(hs_sgemm_plan *p)
{
    if ((long)p->M * p->N > HS_XSMM_MAX_WEIGHT || (long)p->K * (p->M + p->N) > HS_XSMM_MAX_TN)
        return 0;
    const int flags = LIBXSMM_GEMM_FLAG_TRANS_B |
                      (p->beta == 0.0f ? LIBXSMM_GEMM_FLAG_BETA_0 : LIBXSMM_GEMM_FLAG_NONE);
    p->full = kernel(p->N, p->M, p->K, p->ldb, p->lda, p->ldc, flags);
    return p->full != NULL;
}

/* libxsmm 1.17's AVX kernels return with the upper halves of the vector
 * registers dirty (no vzeroupper): every SSE instruction after them then
 * waits on a merge (the cross-entropy's expf went 0.23 -> 6.8 ms a step).
 * Cleared after each product. */
static void clear_upper(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx")) __asm__ volatile("vzeroupper" ::: "memory");
#endif
}

void hs_sgemm_plan_init(hs_sgemm_plan *p, int ta, int tb, int M, int N, int K, float alpha,
                        int lda, int ldb, float beta, int ldc)
{
    *p = (hs_sgemm_plan){ta, tb, M, N, K, lda, ldb, ldc, alpha, beta, 0, NULL, NULL};
    if (M > 0 && N > 0 && K > 0 && alpha == 1.0f && (beta == 0.0f || beta == 1.0f))
        p->xsmm = (!ta && !tb) ? plan_nn(p) : (ta && !tb) ? plan_tn(p) : 0;
}

void hs_sgemm_run(const hs_sgemm_plan *p, const float *A, const float *B, float *C)
{
    if (p->M <= 0 || p->N <= 0) return;
    if (!p->xsmm) {
        cblas_sgemm(CblasRowMajor, p->ta ? CblasTrans : CblasNoTrans,
                    p->tb ? CblasTrans : CblasNoTrans, p->M, p->N, p->K, p->alpha, A, p->lda, B,
                    p->ldb, p->beta, C, p->ldc);
        return;
    }
    if (p->ta) { /* TN: one call */
        ((libxsmm_smmfunction)p->full)(B, A, C);
    } else { /* NN: blocks of rows, the same kernel for every full block */
        const int full = p->M / HS_XSMM_ROWS;
        for (int i = 0; i < full; i++) {
            const size_t r = (size_t)i * HS_XSMM_ROWS;
            ((libxsmm_smmfunction)p->full)(B, A + r * (size_t)p->lda, C + r * (size_t)p->ldc);
        }
        if (p->rest) {
            const size_t r = (size_t)full * HS_XSMM_ROWS;
            ((libxsmm_smmfunction)p->rest)(B, A + r * (size_t)p->lda, C + r * (size_t)p->ldc);
        }
    }
    clear_upper();
}

void hs_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc)
{
    hs_sgemm_plan p;
    hs_sgemm_plan_init(&p, ta, tb, M, N, K, alpha, lda, ldb, beta, ldc);
    hs_sgemm_run(&p, A, B, C);
}
