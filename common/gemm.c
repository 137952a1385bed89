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
 * (the thresholds below; checked again on cache-line-aligned operands,
 * hs_floats_alloc: at 8192 rows libxsmm wins every NN shape up to 256 K
 * weights, 512 x 512 170 against 153 GFLOP/s, and loses beyond, 512 x 1536
 * 83 against 155). Row-major C = A B (NN) gives the same bits on both
 * (each element a k-sequential FMA chain); C = A^T B (TN, weight gradients)
 * sums in another order.
 *
 * Bits: which library runs a product depends only on its shape and flags.
 * hs_sgemm's libxsmm NN products are made in blocks of HS_XSMM_ROWS rows with
 * kernels whose every element is one k-sequential FMA chain, so a row's value
 * does not depend on the rows in the same call, and results stay the same for
 * any thread count (the forward's batch split hands each worker whole rows,
 * starting on 16-row units, which OpenBLAS needs); outputs whose last column
 * block is narrow (narrow()) go to OpenBLAS there. A plan has one row count
 * for all its calls, so it keeps libxsmm for those too. NN products of few
 * rows against large weights run on libxsmm in OpenBLAS' own order of sums,
 * with its bits (few_rows, below), so a row's value does not depend on the
 * row count there either.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "common.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

#include <cblas.h>
#include <libxsmm.h>
#include <libxsmm_generator.h>
#include <libxsmm/generator_common.h> /* LIBXSMM_ERR_BUFFER_TOO_SMALL */

int openblas_get_num_threads(void); /* as common/pool.c: not in every cblas.h */

/* rows a libxsmm NN kernel takes at once (the last block takes the rest) */
#define HS_XSMM_ROWS 64
/* the same for hs_sgemm's narrow outputs (narrow()), the last block padded to
 * it: a batch part starts on a 16-row unit (model/forward.c), so a row keeps
 * its offset in its block however the batch is split */
#define HS_XSMM_NARROW_ROWS 16
/* the most elements the libxsmm operand that stays in cache may have: the
 * weight of an NN product (K x N), the gradient of a TN one (M x N) */
#define HS_XSMM_MAX_WEIGHT (256 * 1024)
/* the most elements both operands of a TN product may have together
 * (K x (M + N)): its one kernel call streams them once per register block of
 * C, so they must stay in L2. Measured one thread, AVX-512: 64 x 256 from
 * 1152 rows 141 -> 170 GFLOP/s (OpenBLAS -> libxsmm), from 4096 rows
 * 112 -> 47; 256 x 1024 from 4096 rows 146 -> 49 */
#define HS_XSMM_MAX_TN (256 * 1024)

/* ------------------------------------------------------------------------ */
/* The kernel store                                                           */
/*
 * libxsmm's code generator writes a kernel for a shape; we keep it in pages
 * of our own. Not libxsmm_smmdispatch: its registry (2^17 entries, 10 MB
 * touched at its first call) alone made training the default model 35 ->
 * 46 MB of peak RSS. A table under one mutex maps a shape to its kernel;
 * kernels live until the process ends (as libxsmm's do). A kernel that cannot
 * be made (no JIT for the CPU, no memory, no executable pages) is stored as
 * NULL, so its shape goes to OpenBLAS from then on (and if the table itself
 * cannot grow, out of memory, that one call does).
 */

typedef struct {
    int key[7]; /* column-major m, n, k, lda, ldb, ldc, flags; m = 0: empty */
    hs_sgemm_kernel f;
} kernel_entry;

static pthread_mutex_t store_mu = PTHREAD_MUTEX_INITIALIZER;
static kernel_entry *store;      /* open addressing, cap a power of two */
static size_t store_cap, store_n;
static int store_arch = -1;      /* libxsmm's target id; 0: no JIT */

/* The instruction set to generate for: LIBXSMM_TARGET as libxsmm reads it
 * (the circuit golden test pins sse3), else what the CPU and OS run. 0 when
 * libxsmm has no JIT for it. */
static int target_arch(void)
{
    static const struct {
        const char *name;
        int id;
    } names[] = {{"sse3", LIBXSMM_X86_SSE3},   {"sse4", LIBXSMM_X86_SSE4},
                 {"wsm", LIBXSMM_X86_SSE4},    {"avx", LIBXSMM_X86_AVX},
                 {"snb", LIBXSMM_X86_AVX},     {"avx2", LIBXSMM_X86_AVX2},
                 {"hsw", LIBXSMM_X86_AVX2},    {"skx", LIBXSMM_X86_AVX512_CORE},
                 {"avx3", LIBXSMM_X86_AVX512_CORE}, {"clx", LIBXSMM_X86_AVX512_CLX},
                 {"cpx", LIBXSMM_X86_AVX512_CPX}};
    int id = libxsmm_cpuid();
    const char *t = getenv("LIBXSMM_TARGET");
    for (size_t i = 0; t && i < sizeof names / sizeof names[0]; i++)
        if (strcmp(t, names[i].name) == 0 && names[i].id <= id) id = names[i].id;
    return id >= LIBXSMM_X86_SSE3 && id <= LIBXSMM_X86_AVX512_CPX ? id : 0;
}

/* Generates the kernel for key into executable pages of its own, or NULL. */
static hs_sgemm_kernel generate(const int key[7])
{
    if (store_arch == 0) return NULL;
    const float beta = (key[6] & LIBXSMM_GEMM_FLAG_BETA_0) ? 0.0f : 1.0f;
    libxsmm_descriptor_blob blob;
    const libxsmm_gemm_descriptor *d = libxsmm_sgemm_descriptor_init(
        &blob, key[0], key[1], key[2], key[3], key[4], key[5], 1.0f, beta, key[6],
        LIBXSMM_GEMM_PREFETCH_NONE);
    if (d == NULL) return NULL;
    hs_sgemm_kernel f = NULL;
    for (unsigned size = 1u << 20; size <= (1u << 24) && f == NULL; size *= 4) {
        void *buf = malloc(size);
        if (buf == NULL) return NULL;
        libxsmm_generated_code gc;
        memset(&gc, 0, sizeof gc);
        gc.generated_code = buf;
        gc.buffer_size = size;
        gc.code_type = 2; /* machine code */
        gc.arch = (unsigned)store_arch;
        libxsmm_generator_gemm_kernel(&gc, d);
        if (gc.last_error == 0 && gc.code_size > 0) {
            void *x = mmap(NULL, gc.code_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                           -1, 0);
            if (x != MAP_FAILED) {
                memcpy(x, buf, gc.code_size);
                if (mprotect(x, gc.code_size, PROT_READ | PROT_EXEC) == 0)
                    f = (hs_sgemm_kernel)(uintptr_t)x;
                else
                    munmap(x, gc.code_size);
            }
            free(buf);
            break; /* made, or no pages for it */
        }
        free(buf);
        if (gc.last_error != LIBXSMM_ERR_BUFFER_TOO_SMALL) break; /* no kernel for it */
    }
    return f;
}

static kernel_entry *slot_of(kernel_entry *tab, size_t cap, const int key[7])
{
    unsigned h = 2166136261u; /* FNV-1a over the key */
    for (int i = 0; i < 7; i++) h = (h ^ (unsigned)key[i]) * 16777619u;
    for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1))
        if (tab[i].key[0] == 0 || memcmp(tab[i].key, key, sizeof tab[i].key) == 0) return &tab[i];
}

/* The kernel for a column-major shape (m, n, k > 0), made at its first use. */
static hs_sgemm_kernel kernel(int m, int n, int k, int lda, int ldb, int ldc, int flags)
{
    const int key[7] = {m, n, k, lda, ldb, ldc, flags};
    hs_sgemm_kernel f = NULL;
    pthread_mutex_lock(&store_mu);
    if (store_arch < 0) {
        /* libxsmm's generator reports its errors on stderr unless told it is
         * initialised and quiet; a library never prints (generate() falls
         * back to OpenBLAS instead) */
        libxsmm_verbosity = 0;
        libxsmm_ninit = 2;
        store_arch = target_arch();
    }
    if (store_n + 1 > store_cap / 2) { /* grow: at most half full */
        const size_t cap = store_cap ? 2 * store_cap : 64;
        kernel_entry *tab = calloc(cap, sizeof *tab);
        if (tab == NULL) goto done; /* no room to remember it: OpenBLAS this time */
        for (size_t i = 0; i < store_cap; i++)
            if (store[i].key[0] != 0) *slot_of(tab, cap, store[i].key) = store[i];
        free(store);
        store = tab;
        store_cap = cap;
    }
    kernel_entry *e = slot_of(store, store_cap, key);
    if (e->key[0] == 0) {
        memcpy(e->key, key, sizeof key);
        e->f = generate(key);
        store_n++;
    }
    f = e->f;
done:
    pthread_mutex_unlock(&store_mu);
    return f;
}

int hs_sgemm_nn_jit(int N, int K)
{
    return N > 0 && K > 0 && (long)N * K <= HS_XSMM_MAX_WEIGHT;
}

/* 1 when libxsmm's kernel for an NN product N wide would give a row bits that
 * depend on the rows beside it: on AVX-512 a last column block of one vector
 * (N % 64 in 1..16) runs a kernel that splits each sum over 1, 2 or 4
 * accumulators by how many rows share its register block (libxsmm 1.17,
 * generator_gemm_avx512_microkernel.c, found in review), so the rows of one
 * call and of the same rows split over two calls differ in the last bits. */
static int narrow(int N)
{
    return N % 64 >= 1 && N % 64 <= 16;
}

/* NN: C (M, N) = A (M, K) B (K, N) + beta C. Column-major, that is C^T = B^T
 * A^T: libxsmm's m = N, n = rows (blocks of HS_XSMM_ROWS), k = K, with B as
 * its first operand. 1 when libxsmm takes it. */
static int plan_nn(hs_sgemm_plan *p, int rows_vary)
{
    if (!hs_sgemm_nn_jit(p->N, p->K)) return 0;
    const int flags = p->beta == 0.0f ? LIBXSMM_GEMM_FLAG_BETA_0 : LIBXSMM_GEMM_FLAG_NONE;
    /* narrow outputs of hs_sgemm: blocks of HS_XSMM_NARROW_ROWS rows, the
     * last one padded (its kernel reads the padded copy's strides), so every
     * row meets the same kernel at the same offset in its block */
    p->pad = rows_vary && narrow(p->N);
    p->rows = p->pad ? HS_XSMM_NARROW_ROWS : HS_XSMM_ROWS;
    const int full = p->M / p->rows, rest = p->M % p->rows;
    if (full > 0 && (p->full = kernel(p->N, p->rows, p->K, p->ldb, p->lda, p->ldc, flags)) == NULL)
        return 0;
    if (rest > 0 &&
        (p->rest = p->pad ? kernel(p->N, p->rows, p->K, p->ldb, p->K, p->N, flags)
                          : kernel(p->N, rest, p->K, p->ldb, p->lda, p->ldc, flags)) == NULL)
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

static void plan_make(hs_sgemm_plan *p, int ta, int tb, int M, int N, int K, float alpha, int lda,
                      int ldb, float beta, int ldc, int rows_vary)
{
    *p = (hs_sgemm_plan){ta, tb, M, N, K, lda, ldb, ldc, alpha, beta, 0, 0, 0, NULL, NULL};
    if (M > 0 && N > 0 && K > 0 && alpha == 1.0f && (beta == 0.0f || beta == 1.0f))
        p->xsmm = (!ta && !tb) ? plan_nn(p, rows_vary) : (ta && !tb) ? plan_tn(p) : 0;
}

void hs_sgemm_plan_init(hs_sgemm_plan *p, int ta, int tb, int M, int N, int K, float alpha,
                        int lda, int ldb, float beta, int ldc)
{
    plan_make(p, ta, tb, M, N, K, alpha, lda, ldb, beta, ldc, 0);
}

/* The last `rest` (< p->rows) rows of a padded plan: through the full
 * block's kernel on a zero-padded copy (p->rest is that kernel for the
 * copy's strides). Out of memory: OpenBLAS for these rows (other bits in the
 * last place, the one case). */
static void run_padded(const hs_sgemm_plan *p, const float *B, const float *A, float *C, int rest)
{
    const size_t K = (size_t)p->K, N = (size_t)p->N, R = (size_t)p->rows;
    float *sa = calloc(R * K + R * N, sizeof(float));
    if (sa == NULL) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rest, p->N, p->K, 1.0f, A, p->lda, B,
                    p->ldb, p->beta, C, p->ldc);
        return;
    }
    float *sc = sa + R * K;
    for (int i = 0; i < rest; i++) {
        memcpy(sa + (size_t)i * K, A + (size_t)i * p->lda, K * sizeof(float));
        if (p->beta != 0.0f) memcpy(sc + (size_t)i * N, C + (size_t)i * p->ldc, N * sizeof(float));
    }
    ((libxsmm_smmfunction)p->rest)(B, sa, sc);
    for (int i = 0; i < rest; i++) memcpy(C + (size_t)i * p->ldc, sc + (size_t)i * N, N * sizeof(float));
    free(sa);
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
        const int full = p->M / p->rows, rest = p->M % p->rows;
        for (int i = 0; i < full; i++) {
            const size_t r = (size_t)i * p->rows;
            ((libxsmm_smmfunction)p->full)(B, A + r * (size_t)p->lda, C + r * (size_t)p->ldc);
        }
        if (rest > 0) {
            const size_t r = (size_t)full * p->rows;
            if (!p->pad)
                ((libxsmm_smmfunction)p->rest)(B, A + r * (size_t)p->lda, C + r * (size_t)p->ldc);
            else
                run_padded(p, B, A + r * (size_t)p->lda, C + r * (size_t)p->ldc, rest);
        }
    }
    clear_upper();
}

/* ------------------------------------------------------------------------ */
/* Few rows against a large weight                                            */
/*
 * An NN product of a few rows against a weight past libxsmm's limit (a
 * one-prompt forward of GPT-2 small: 16 rows against 340 MB of weights) on
 * OpenBLAS packs all of B, a copy of the weight, for a product that reads it
 * once: in such a forward OpenBLAS' packing took more cycles than its
 * kernel. few_rows() reads the weight as it lies, with libxsmm's kernels, in
 * the order of OpenBLAS' own sums, so C gets OpenBLAS' bits and a row's
 * value still does not depend on how many rows share its call. OpenBLAS
 * 0.3.21 at one thread (driver/level3/level3.c) runs a product of at least
 * HS_BLAS_DIRECT_MACS multiply-adds on its blocked path, which sums K in
 * blocks of GEMM_Q (the last two halves, rounded up to GEMM_UNROLL_M, when
 * less than 2 GEMM_Q remain), each block one k-sequential FMA chain from 0
 * added to C (zeroed first when beta is 0). GEMM_Q and the unroll are per
 * kernel family and not exported, so a K's blocks are found by trial
 * (probe_k): the first candidate whose product equals one cblas_sgemm
 * call's bit for bit on a probe of that K is kept for the process; a K none
 * matches (OpenBLAS' Haswell kernels, whose sums are ordered otherwise) stays
 * on OpenBLAS. A block is made in calls of HS_FEW_KSUB rows of B, each after
 * the first continuing the chains (beta 1), over tiles of HS_FEW_COLS
 * columns. One thread, AMD EPYC (Cooperlake kernels), 24 weights each, weight
 * pages not in cache: 16 x 2,304 x 768 30.6 -> 21.1 ms, 16 x 768 x 3,072
 * 41.2 -> 26.6 ms, 64 x 2,304 x 768 37.5 -> 33.8 ms; from 96 rows OpenBLAS
 * is as fast or faster (HS_FEW_ROWS). A whole block a call instead of
 * HS_FEW_KSUB rows: 47 against 70 GFLOP/s (each 64-column strip walked down
 * 320 rows of B, which the prefetchers do not follow). Before each call the
 * rows of B HS_FEW_AHEAD on are asked for into L2 (prefetcht1): a tile's
 * rows are 3 KiB runs 9-12 KiB apart, each starting the hardware's
 * prefetchers over, so without it the kernel waited on DRAM (a one-prompt
 * GPT-2 small forward's 48 products, 16 rows, 2 workers, the weights not in
 * cache: 27.3 -> 23.4 ms; distances 1 and 4 calls ahead and prefetcht0 /
 * prefetcht2 all slower; tiles of 384 or 1,152 columns and calls of 16 or
 * 64 rows no faster, with or without it).
 */

/* the most rows (M) few_rows() takes */
#define HS_FEW_ROWS 64
/* the K values whose blocks are remembered (a model has two or three) */
#define HS_FEW_KS 16
#define HS_FEW_COLS 768
#define HS_FEW_KSUB 32
/* rows of B ahead of a call that are prefetched before it (2 calls) */
#define HS_FEW_AHEAD (2 * HS_FEW_KSUB)

typedef struct {
    int K;
    int q, u; /* GEMM_Q and GEMM_UNROLL_M found; q 0: none matched (OpenBLAS) */
} few_k;

static pthread_mutex_t few_mu = PTHREAD_MUTEX_INITIALIZER;
static few_k few_ks[HS_FEW_KS];
static int few_n;

/* The end of the K block starting at ls (< K) under GEMM_Q q, unroll u. */
static int kblock_end(int ls, int K, int q, int u)
{
    int l = K - ls;
    if (l >= 2 * q) l = q;
    else if (l > q) l = (l / 2 + u - 1) / u * u;
    return ls + l;
}

/* The plans of one few_rows_run (at most 8: a tile of HS_FEW_COLS columns
 * or the rest, HS_FEW_KSUB rows of B or a block's rest, beta 0 or 1), each
 * made once: a kernel lookup takes the store's mutex, which the workers of
 * a split product would otherwise contend for on every call. */
typedef struct {
    int n;
    int key[8][3]; /* columns, rows of B, beta */
    hs_sgemm_plan p[8];
} few_plans;

/* The plan for a call of M rows, w columns, k rows of B and beta (0 or 1),
 * or NULL when libxsmm has no kernel for it (or the 8 are taken). */
static const hs_sgemm_plan *few_plan(few_plans *fp, int M, int w, int k, int lda, int ldb, int beta)
{
    for (int i = 0; i < fp->n; i++)
        if (fp->key[i][0] == w && fp->key[i][1] == k && fp->key[i][2] == beta) return &fp->p[i];
    if (fp->n == 8) return NULL;
    hs_sgemm_plan *p = &fp->p[fp->n];
    plan_make(p, 0, 0, M, w, k, 1.0f, lda, ldb, beta ? 1.0f : 0.0f, w, 0);
    if (!p->xsmm || p->pad) return NULL;
    fp->key[fp->n][0] = w;
    fp->key[fp->n][1] = k;
    fp->key[fp->n][2] = beta;
    fp->n++;
    return p;
}

/* Asks for rows [r0, r1) of B's columns [c0, c0 + w) in L2 (prefetcht1 on
 * x86; a hint: nothing is read or faulted in). */
static void few_prefetch(const float *B, int ldb, int r0, int r1, int c0, int w)
{
    for (int r = r0; r < r1; r++) {
        const char *row = (const char *)(B + (size_t)r * ldb + c0);
        for (size_t o = 0; o < (size_t)w * sizeof(float); o += 64) __builtin_prefetch(row + o, 0, 2);
    }
}

/* C (M, N) = A B + beta C in K blocks of (q, u): each block's product one
 * FMA chain per element from 0 in tmp, then added to C. 0 (C as it was) when
 * a kernel cannot be made or memory runs out. */
static int few_rows_run(int q, int u, int M, int N, int K, const float *A, int lda, const float *B,
                        int ldb, float beta, float *C, int ldc)
{
    const int W = N < HS_FEW_COLS ? N : HS_FEW_COLS;
    few_plans fp;
    fp.n = 0;
    for (int ls = 0, le; ls < K; ls = le) { /* every plan first */
        le = kblock_end(ls, K, q, u);
        for (int c0 = 0; c0 < N; c0 += W)
            for (int k0 = ls; k0 < le; k0 += HS_FEW_KSUB)
                if (!few_plan(&fp, M, N - c0 < W ? N - c0 : W, le - k0 < HS_FEW_KSUB ? le - k0 : HS_FEW_KSUB,
                              lda, ldb, k0 != ls))
                    return 0;
    }
    float *tmp = malloc((size_t)M * W * sizeof(float));
    if (tmp == NULL) return 0;
    if (beta == 0.0f)
        for (int i = 0; i < M; i++) memset(C + (size_t)i * ldc, 0, (size_t)N * sizeof(float));
    for (int c0 = 0; c0 < N; c0 += W) {
        const int w = N - c0 < W ? N - c0 : W;
        for (int ls = 0, le; ls < K; ls = le) {
            le = kblock_end(ls, K, q, u);
            for (int k0 = ls; k0 < le; k0 += HS_FEW_KSUB) {
                const int k = le - k0 < HS_FEW_KSUB ? le - k0 : HS_FEW_KSUB;
                /* the tile's rows two calls on (the next K block's, once past this one's) */
                few_prefetch(B, ldb, k0 + HS_FEW_AHEAD, k0 + HS_FEW_AHEAD + k < K ? k0 + HS_FEW_AHEAD + k : K, c0, w);
                hs_sgemm_run(few_plan(&fp, M, w, k, lda, ldb, k0 != ls), A + k0, B + (size_t)k0 * ldb + c0, tmp);
            }
            for (int i = 0; i < M; i++) {
                float *restrict c = C + (size_t)i * ldc + c0;
                const float *restrict t = tmp + (size_t)i * w;
                for (int j = 0; j < w; j++) c[j] += t[j];
            }
        }
    }
    free(tmp);
    return 1;
}

/* GEMM_Q and unroll candidates: OpenBLAS 0.3.21's for the family it runs
 * first (SkylakeX 448, Cooperlake 320, unroll 16: found by this probe), then
 * other values; a candidate giving K the blocks of an earlier one is not
 * tried again. */
static const int few_q[] = {384, 448, 320, 256, 512, 192, 640, 768, 128, 224, 240};
static const int few_u[] = {16, 8, 32, 4, 2};
#define FEW_NQ ((int)(sizeof few_q / sizeof few_q[0]))
#define FEW_NU ((int)(sizeof few_u / sizeof few_u[0]))
#define FEW_NC (1 + FEW_NQ * FEW_NU)

/* Candidate c of the probe's order: c 0 the family's own (q 0: none known). */
static void candidate(int c, int *q, int *u)
{
    if (c == 0) {
        const char *f = hs_blas_core();
        *q = strcasecmp(f, "SkylakeX") == 0 ? 448 : strcasecmp(f, "Cooperlake") == 0 ? 320 : 0;
        *u = 16;
        return;
    }
    *q = few_q[(c - 1) / FEW_NU];
    *u = few_u[(c - 1) % FEW_NU];
}

/* 1 when candidate c gives K the blocks of an earlier candidate (or has
 * none: q 0). */
static int tried_before(int K, int c)
{
    int q, u;
    candidate(c, &q, &u);
    if (q == 0) return 1;
    for (int e = 0; e < c; e++) {
        int q2, u2, a = 0, b = 0;
        candidate(e, &q2, &u2);
        if (q2 == 0) continue;
        while (a < K && a == b) {
            a = kblock_end(a, K, q, u);
            b = kblock_end(b, K, q2, u2);
        }
        if (a == b) return 1;
    }
    return 0;
}

/* The blocks of K: the first candidate whose product equals cblas_sgemm's
 * bit for bit on a probe (HS_FEW_ROWS rows, the fewest columns that take
 * OpenBLAS' blocked path, values from a hash of the index: sums whose
 * rounding tells any two block structures apart); q 0 when none does or
 * memory ran out. GPT-2 small's two K: ~1.1 ms each, once a process, on
 * the first product that needs them (16 rows and 4x the columns: ~2 ms). */
static few_k probe_k(int K)
{
    few_k r = {K, 0, 0};
    const int M = HS_FEW_ROWS, N = (int)((HS_BLAS_DIRECT_MACS / M / K + 64) / 64 * 64);
    float *A = malloc(((size_t)M * K + (size_t)K * N + 2 * (size_t)M * N) * sizeof(float));
    if (A == NULL) return r;
    float *B = A + (size_t)M * K, *C0 = B + (size_t)K * N, *C1 = C0 + (size_t)M * N;
    for (size_t i = 0; i < (size_t)M * K + (size_t)K * N; i++) /* [-0.5, 0.5) */
        A[i] = (float)(((uint32_t)i * 2654435761u) >> 8) * (1.0f / 16777216.0f) - 0.5f;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, A, K, B, N, 0.0f, C0, N);
    for (int c = 0; c < FEW_NC && !r.q; c++) {
        int q, u;
        candidate(c, &q, &u);
        if (tried_before(K, c)) continue;
        if (few_rows_run(q, u, M, N, K, A, K, B, N, 0.0f, C1, N) &&
            memcmp(C0, C1, (size_t)M * N * sizeof(float)) == 0) {
            r.q = q;
            r.u = u;
        }
    }
    free(A);
    return r;
}

/* K's blocks (probed at its first use), or q 0. */
static few_k blocks_of(int K)
{
    pthread_mutex_lock(&few_mu);
    few_k r = {K, 0, 0};
    int i = 0;
    while (i < few_n && few_ks[i].K != K) i++;
    if (i < few_n) r = few_ks[i];
    else if (few_n < HS_FEW_KS) r = few_ks[few_n++] = probe_k(K);
    pthread_mutex_unlock(&few_mu);
    return r;
}

/* 1 when hs_sgemm's NN product (alpha 1, beta 0 or 1) of few rows was made
 * here, with OpenBLAS' bits; 0: nothing written, OpenBLAS' turn. Only where
 * OpenBLAS would take its blocked path (from HS_BLAS_DIRECT_MACS with beta
 * 0, whose smaller products its direct kernel takes; from
 * HS_BLAS_SMALL_MACS with beta 1: a 16-row forward's Q, K and V projections
 * over a bias, 16 x 384 x 768 a column part, packed 85 MB of GPT-2 small's
 * weights on OpenBLAS, ~20 ms of CPU) and with OpenBLAS at one thread a call
 * (as headscope runs it, hs_blas_one_thread): its threaded driver blocks K
 * otherwise. */
static int few_rows(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                    float beta, float *C, int ldc)
{
    const long least = beta == 0.0f ? HS_BLAS_DIRECT_MACS : HS_BLAS_SMALL_MACS;
    if (M > HS_FEW_ROWS || hs_sgemm_nn_jit(N, K) || narrow(N) || (long)M * N * K < least ||
        openblas_get_num_threads() != 1)
        return 0;
    const few_k k = blocks_of(K);
    return k.q && few_rows_run(k.q, k.u, M, N, K, A, lda, B, ldb, beta, C, ldc);
}

int hs_sgemm_few_rows_k(int K)
{
    return K > 0 && openblas_get_num_threads() == 1 && blocks_of(K).q > 0;
}

void hs_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc)
{
    hs_sgemm_plan p; /* a call's rows may be any part of a batch: no narrow kernels */
    plan_make(&p, ta, tb, M, N, K, alpha, lda, ldb, beta, ldc, 1);
    if (!p.xsmm && !ta && !tb && alpha == 1.0f && (beta == 0.0f || beta == 1.0f) && M > 0 &&
        few_rows(M, N, K, A, lda, B, ldb, beta, C, ldc))
        return;
    hs_sgemm_run(&p, A, B, C);
}

int hs_blas_split_exact(void)
{
    const char *c = hs_blas_core();
    return strcasecmp(c, "SkylakeX") == 0 || strcasecmp(c, "Cooperlake") == 0 ||
           strcasecmp(c, "SapphireRapids") == 0;
}

/* ------------------------------------------------------------------------ */
/* One product's columns over a pool (hs_sgemm_cols_pool)                     */

/* the fewest elements of op(B) a column part must have: below, the product is
 * too small to gain from a second worker, and a part of a libxsmm-sized NN
 * product could go to libxsmm with other kernels */
#define HS_COLS_MIN_WEIGHT (4L * 1024 * 1024)

typedef struct {
    int tb, M, N, K, lda, ldb, ldc, parts;
    float alpha, beta;
    const float *A, *B, *bias;
    float *C;
} gemm_cols;

/* Column where part j starts: N j / parts, rounded to a multiple of 64. */
static int cols_part_start(const gemm_cols *g, int j)
{
    if (j >= g->parts) return g->N;
    const int c = (int)(((long)g->N * j / g->parts + 32) / 64) * 64;
    return c < g->N ? c : g->N;
}

static hs_status cols_part(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    (void)err;
    const gemm_cols *g = ctx;
    const int c0 = cols_part_start(g, j), c1 = cols_part_start(g, j + 1);
    if (c1 <= c0) return HS_OK;
    const float *B = g->B + (g->tb ? (size_t)c0 * g->ldb : (size_t)c0);
    hs_sgemm(0, g->tb, g->M, c1 - c0, g->K, g->alpha, g->A, g->lda, B, g->ldb, g->beta, g->C + c0, g->ldc);
    if (g->bias)
        for (int i = 0; i < g->M; i++) {
            float *restrict c = g->C + (size_t)i * g->ldc;
            for (int k = c0; k < c1; k++) c[k] += g->bias[k];
        }
    return HS_OK;
}

void hs_sgemm_cols_pool(hs_pool *pool, int tb, int M, int N, int K, float alpha, const float *A,
                        int lda, const float *B, int ldb, float beta, float *C, int ldc,
                        const float *bias)
{
    gemm_cols g = {tb, M, N, K, lda, ldb, ldc, hs_pool_threads(pool), alpha, beta, A, B, bias, C};
    if (M <= 0 || N <= 0) return;
    /* parts of at least 64 columns and HS_COLS_MIN_WEIGHT elements of op(B) */
    while (g.parts > 1 && ((long)N / g.parts < 64 || (long)N / g.parts * K < HS_COLS_MIN_WEIGHT)) g.parts--;
    if (g.parts > 1 && !hs_blas_split_exact()) g.parts = 1; /* e.g. OpenBLAS' Haswell kernels */
    if (g.parts <= 1) {
        g.parts = 1;
        (void)cols_part(&g, 0, 0, NULL); /* this thread */
        return;
    }
    hs_error err;
    (void)hs_pool_for(pool, g.parts, cols_part, &g, &err); /* cannot fail */
}
