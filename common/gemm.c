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
#include <string.h>

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

/* libxsmm's kernel for one shape, through a per-thread direct-mapped cache in
 * front of libxsmm_smmdispatch (its registry lookup cost 0.11 us a call, 2.9%
 * of a default step whose attention makes ~1,000 18 x 18 products a layer).
 * NULL when libxsmm has none. */
typedef struct {
    int key[7];
    libxsmm_smmfunction f;
} kernel_slot;

#define KERNEL_SLOTS 64

static libxsmm_smmfunction kernel(int m, int n, int k, int lda, int ldb, int ldc, int flags)
{
    static _Thread_local kernel_slot cache[KERNEL_SLOTS];
    const int key[7] = {m, n, k, lda, ldb, ldc, flags + 1}; /* + 1: an empty slot never matches */
    unsigned h = 2166136261u;
    for (int i = 0; i < 7; i++) h = (h ^ (unsigned)key[i]) * 16777619u;
    kernel_slot *s = &cache[h % KERNEL_SLOTS];
    if (memcmp(s->key, key, sizeof key) == 0) return s->f;
    const float alpha = 1.0f, beta = (flags & LIBXSMM_GEMM_FLAG_BETA_0) ? 0.0f : 1.0f;
    const libxsmm_blasint lm = m, ln = n, lk = k, la = lda, lb = ldb, lc = ldc;
    libxsmm_smmfunction f = libxsmm_smmdispatch(lm, ln, lk, &la, &lb, &lc, &alpha, &beta, &flags, NULL);
    memcpy(s->key, key, sizeof key);
    s->f = f;
    return f;
}

/* NN: C (M, N) = A (M, K) B (K, N) + beta C. Column-major, that is C^T = B^T
 * A^T: libxsmm's m = N, n = rows, k = K, with B as its first operand. */
static int xsmm_nn(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                   float beta, float *C, int ldc)
{
    if ((long)N * K > HS_XSMM_MAX_WEIGHT) return 0;
    const int flags = beta == 0.0f ? LIBXSMM_GEMM_FLAG_BETA_0 : LIBXSMM_GEMM_FLAG_NONE;
    const int full = M / HS_XSMM_ROWS, rest = M % HS_XSMM_ROWS;
    libxsmm_smmfunction f = NULL, g = NULL;
    if (full > 0 && (f = kernel(N, HS_XSMM_ROWS, K, ldb, lda, ldc, flags)) == NULL) return 0;
    if (rest > 0 && (g = kernel(N, rest, K, ldb, lda, ldc, flags)) == NULL) return 0;
    for (int i = 0; i < full; i++) {
        const size_t r = (size_t)i * HS_XSMM_ROWS;
        f(B, A + r * (size_t)lda, C + r * (size_t)ldc);
    }
    if (rest > 0) {
        const size_t r = (size_t)full * HS_XSMM_ROWS;
        g(B, A + r * (size_t)lda, C + r * (size_t)ldc);
    }
    return 1;
}

/* TN: C (M, N) = A^T B + beta C with A (K, M), B (K, N). Column-major, C^T =
 * B^T A: libxsmm's m = N, n = M, k = K, its second operand transposed. */
static int xsmm_tn(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                   float beta, float *C, int ldc)
{
    if ((long)M * N > HS_XSMM_MAX_WEIGHT || (long)K * (M + N) > HS_XSMM_MAX_TN) return 0;
    const int flags = LIBXSMM_GEMM_FLAG_TRANS_B |
                      (beta == 0.0f ? LIBXSMM_GEMM_FLAG_BETA_0 : LIBXSMM_GEMM_FLAG_NONE);
    libxsmm_smmfunction f = kernel(N, M, K, ldb, lda, ldc, flags);
    if (f == NULL) return 0;
    f(B, A, C);
    return 1;
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

void hs_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return;
    if (alpha == 1.0f && (beta == 0.0f || beta == 1.0f) && K > 0) {
        if ((!ta && !tb && xsmm_nn(M, N, K, A, lda, B, ldb, beta, C, ldc)) ||
            (ta && !tb && xsmm_tn(M, N, K, A, lda, B, ldb, beta, C, ldc))) {
            clear_upper();
            return;
        }
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N,
                K, alpha, A, lda, B, ldb, beta, C, ldc);
}
