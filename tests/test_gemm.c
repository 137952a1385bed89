/*
 * tests/test_gemm.c -- the library's one matrix product (common.h, hs_sgemm
 * and its plans): every transpose pair against a double-precision product,
 * on shapes libxsmm takes (row blocks of 64 plus a rest) and shapes it
 * leaves to OpenBLAS; beta 0 ignores what C held, beta 1 adds; a row's bits
 * do not depend on the rows in the same call (what makes a batch split over
 * threads give one pass's values); a plan gives hs_sgemm's bits; the float
 * arrays the products run on (hs_floats_alloc) are zeroed, on a cache line,
 * and, from 2 MiB, on a 2 MiB boundary with every float writable; a product
 * of few rows split over a pool by columns (model/ hs_sgemm_pool_fill) gives
 * the bits of one call.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <cblas.h>

#include "common/common.h"
#include "model/model_internal.h" /* hs_sgemm_pool_fill */

static float *filled(size_t n, unsigned seed)
{
    float *x = malloc(n * sizeof *x);
    assert_non_null(x);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
    return x;
}

/* C0 (M, N) + op(A) op(B) in double, the operands stored as hs_sgemm reads them. */
static double ref(int ta, int tb, int K, const float *A, int lda, const float *B, int ldb, int i,
                  int j)
{
    double s = 0.0;
    for (int k = 0; k < K; k++) {
        const double a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
        const double b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
        s += a * b;
    }
    return s;
}

static void check(int ta, int tb, int M, int N, int K, float beta)
{
    const int lda = ta ? M : K, ldb = tb ? K : N, ldc = N + 3; /* a C row stride wider than N */
    float *A = filled((size_t)M * K, 1u + (unsigned)M), *B = filled((size_t)K * N, 7u + (unsigned)N);
    float *C = filled((size_t)M * ldc, 11u), *C0 = malloc((size_t)M * ldc * sizeof(float));
    assert_non_null(C0);
    if (beta == 0.0f) /* beta 0 must not read C: NaN there must not come out */
        for (size_t i = 0; i < (size_t)M * ldc; i++) C[i] = NAN;
    memcpy(C0, C, (size_t)M * ldc * sizeof(float));
    hs_sgemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
    double worst = 0.0;
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            const double want = (beta != 0.0f ? C0[(size_t)i * ldc + j] : 0.0) +
                                ref(ta, tb, K, A, lda, B, ldb, i, j);
            const double got = C[(size_t)i * ldc + j];
            const double e = fabs(got - want) / (1.0 + fabs(want));
            if (!(e <= worst)) worst = e; /* NaN too */
        }
        for (int j = N; j < ldc; j++) /* past N in a row: untouched */
            assert_memory_equal(&C[(size_t)i * ldc + j], &C0[(size_t)i * ldc + j], sizeof(float));
    }
    if (!(worst < 4e-6 * sqrt((double)K)))
        fail_msg("ta %d tb %d, %d x %d x %d, beta %g: relative error %g", ta, tb, M, N, K,
                 (double)beta, worst);
    free(A);
    free(B);
    free(C);
    free(C0);
}

static void every_transpose_pair_matches_double(void **state)
{
    (void)state;
    /* M 130 = two 64-row blocks and a rest of 2 (libxsmm's NN); 64 x 256
     * from 576 rows (the default step's weight gradient); a 600 x 600 weight
     * is past libxsmm's limits (OpenBLAS) */
    static const int shapes[][3] = {{130, 64, 64}, {18, 18, 16}, {576, 256, 64}, {64, 256, 576},
                                    {7, 5, 3},     {40, 600, 600}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                check(ta, tb, shapes[s][0], shapes[s][1], shapes[s][2], 0.0f);
                check(ta, tb, shapes[s][0], shapes[s][1], shapes[s][2], 1.0f);
            }
}

static void a_row_gets_the_same_bits_in_any_call(void **state)
{
    (void)state;
    const int M = 150, N = 64, K = 256; /* rows 70.. of one call = rows 0.. of another */
    float *A = filled((size_t)M * K, 3u), *B = filled((size_t)K * N, 5u);
    float *C1 = calloc((size_t)M * N, sizeof(float)), *C2 = calloc((size_t)M * N, sizeof(float));
    assert_non_null(C1);
    assert_non_null(C2);
    hs_sgemm(0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C1, N);
    hs_sgemm(0, 0, 70, N, K, 1.0f, A, K, B, N, 0.0f, C2, N);
    hs_sgemm(0, 0, M - 70, N, K, 1.0f, A + (size_t)70 * K, K, B, N, 0.0f, C2 + (size_t)70 * N, N);
    assert_memory_equal(C1, C2, (size_t)M * N * sizeof(float));
    free(A);
    free(B);
    free(C1);
    free(C2);
}

/* The same with the narrow outputs of small models (vocabulary 9, d_model 12
 * or 16, d_model 80 = 64 + 16): libxsmm's AVX-512 kernels for a last
 * column block of one vector split a row's sum over 1, 2 or 4 accumulators
 * by how many rows share its register block, so these must not depend on
 * where a call starts (a batch part starts on any 16-row unit). */
static void narrow_outputs_give_the_same_bits_in_any_split(void **state)
{
    (void)state;
    static const int Ns[] = {9, 12, 16, 36, 80}, Ks[] = {12, 64};
    /* batch parts start on 16-row units (OpenBLAS's rule, model/forward.c) */
    static const int cuts[][2] = {{224, 385}, {16, 385}, {80, 385}, {384, 385}};
    const int M = 385;
    for (size_t a = 0; a < sizeof Ns / sizeof Ns[0]; a++)
        for (size_t b = 0; b < sizeof Ks / sizeof Ks[0]; b++) {
            const int N = Ns[a], K = Ks[b];
            float *A = filled((size_t)M * K, 17u), *B = filled((size_t)K * N, 19u);
            float *C1 = calloc((size_t)M * N, sizeof(float)), *C2 = calloc((size_t)M * N, sizeof(float));
            assert_non_null(C1);
            assert_non_null(C2);
            hs_sgemm(0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C1, N);
            for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
                const int r = cuts[c][0];
                memset(C2, 0, (size_t)M * N * sizeof(float));
                hs_sgemm(0, 0, r, N, K, 1.0f, A, K, B, N, 0.0f, C2, N);
                hs_sgemm(0, 0, M - r, N, K, 1.0f, A + (size_t)r * K, K, B, N, 0.0f, C2 + (size_t)r * N, N);
                if (memcmp(C1, C2, (size_t)M * N * sizeof(float)) != 0)
                    fail_msg("N %d, K %d: rows split at %d get other bits", N, K, r);
            }
            free(A);
            free(B);
            free(C1);
            free(C2);
        }
}

static void a_plan_gives_the_bits_of_hs_sgemm(void **state)
{
    (void)state;
    const int T = 18, dh = 32; /* 32: hs_sgemm runs it on libxsmm too (16 is narrow) */
    float *A = filled((size_t)T * T, 9u), *B = filled((size_t)T * dh, 13u);
    float *C1 = calloc((size_t)T * dh, sizeof(float)), *C2 = calloc((size_t)T * dh, sizeof(float));
    assert_non_null(C1);
    assert_non_null(C2);
    for (int ta = 0; ta < 2; ta++) {
        hs_sgemm_plan p;
        hs_sgemm_plan_init(&p, ta, 0, T, dh, T, 1.0f, T, dh, 0.0f, dh);
        for (int rep = 0; rep < 3; rep++) hs_sgemm_run(&p, A, B, C1);
        hs_sgemm(ta, 0, T, dh, T, 1.0f, A, T, B, dh, 0.0f, C2, dh);
        assert_memory_equal(C1, C2, (size_t)T * dh * sizeof(float));
    }
    /* alpha != 1: OpenBLAS, still through the plan */
    hs_sgemm_plan p;
    hs_sgemm_plan_init(&p, 0, 0, T, dh, T, 0.25f, T, dh, 0.0f, dh);
    assert_int_equal(p.xsmm, 0);
    hs_sgemm_run(&p, A, B, C1);
    hs_sgemm(0, 0, T, dh, T, 0.25f, A, T, B, dh, 0.0f, C2, dh);
    assert_memory_equal(C1, C2, (size_t)T * dh * sizeof(float));
    assert_true(fabs(C1[5] - 0.25 * ref(0, 0, T, A, T, B, dh, 0, 5)) < 1e-6);
    free(A);
    free(B);
    free(C1);
    free(C2);
}

/* Sizes around the allocator's two ways (calloc; a mapping of its own from
 * 2 MiB with the 64-byte head, its tail on 4 KiB pages or a huge page): each
 * block zeroed, every float writable and read back, cache-line aligned, a
 * mapping's head on a 2 MiB boundary. */
static void float_arrays_are_zeroed_aligned_and_whole(void **state)
{
    (void)state;
    const size_t mib = (size_t)1 << 20, fl = sizeof(float);
    const size_t sizes[] = {1, 1000, (2 * mib - 64) / fl - 1, (2 * mib - 64) / fl, (2 * mib + 4096) / fl,
                            (3 * mib - 64) / fl - 1, (3 * mib - 64) / fl, 7 * mib / fl + 3};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        const size_t n = sizes[k];
        float *p = hs_floats_alloc(n);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 64, 0);
        if (n * fl + 64 >= 2 * mib) assert_int_equal(((uintptr_t)p - 64) % (2 * mib), 0);
        for (size_t i = 0; i < n; i++) {
            if (p[i] != 0.0f) fail_msg("block of %zu floats: p[%zu] = %g, not zeroed", n, i, (double)p[i]);
            p[i] = (float)(i % 1000);
        }
        for (size_t i = 0; i < n; i += 4093) assert_true(p[i] == (float)(i % 1000));
        assert_true(p[n - 1] == (float)((n - 1) % 1000));
        hs_floats_free(p);
    }
    assert_null(hs_floats_alloc(0));
    assert_null(hs_floats_alloc(SIZE_MAX / 2));
    hs_floats_free(NULL);
}

/* A freed mapping comes back for the next block of its length, cleared: the
 * same address (its pages resident), every float 0 again, whether its pages
 * were written or never touched; a block of another length is mapped anew,
 * zeroed too. */
static void freed_float_arrays_are_reused_at_their_length_and_cleared(void **state)
{
    (void)state;
    const size_t n = ((size_t)6 << 20) / sizeof(float); /* 6 MiB: a mapping of its own */
    float *a = hs_floats_alloc(n), *b = hs_floats_alloc(n);
    assert_non_null(a);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++) a[i] = 1.0f + (float)(i % 7);
    b[n / 2] = 5.0f; /* b's other pages never touched */
    hs_floats_free(a);
    hs_floats_free(b);
    float *c = hs_floats_alloc(n), *d = hs_floats_alloc(n);
    assert_non_null(c);
    assert_non_null(d);
    assert_ptr_equal(c, b); /* the last kept first */
    assert_ptr_equal(d, a);
    for (size_t i = 0; i < n; i++)
        if (c[i] != 0.0f || d[i] != 0.0f)
            fail_msg("reused block: float %zu = %g / %g, not cleared", i, (double)c[i], (double)d[i]);
    c[n - 1] = 3.0f;
    hs_floats_free(c);
    float *e = hs_floats_alloc(n / 2); /* another length: a mapping of its own */
    assert_non_null(e);
    assert_true(e != c && e != d);
    for (size_t i = 0; i < n / 2; i++)
        if (e[i] != 0.0f) fail_msg("new block: float %zu = %g, not zeroed", i, (double)e[i]);
    float *f = hs_floats_alloc(n); /* c's mapping again */
    assert_ptr_equal(f, c);
    assert_true(f[n - 1] == 0.0f && f[0] == 0.0f);
    hs_floats_free(e);
    hs_floats_free(f);
    hs_floats_free(d);
}

/* hs_store_streaming_fill: every offset of dst (aligned and not), every
 * split ns of a row n long (0, inside the first 16-float block, at a block
 * boundary, the whole row): dst holds src up to ns, fill after it, bit for
 * bit (-inf and a NaN payload too), and nothing beyond n is written. */
static void a_streamed_row_with_its_fill_is_exact(void **state)
{
    (void)state;
    float src[80], dst[96];
    for (int i = 0; i < 80; i++) src[i] = (float)(i * 3 + 1) * (i % 2 ? -0.5f : 0.25f);
    src[7] = NAN;
    const float fills[2] = {-INFINITY, 0.0f};
    const size_t ns_of[] = {0, 1, 5, 15, 16, 17, 31, 32, 47, 63, 64};
    for (int f = 0; f < 2; f++)
        for (size_t off = 0; off < 8; off++)
            for (size_t k = 0; k < sizeof ns_of / sizeof ns_of[0]; k++) {
                const size_t n = 64, ns = ns_of[k];
                for (int i = 0; i < 96; i++) dst[i] = 7.0f;
                hs_store_streaming_fill(dst + off, src, ns, fills[f], n);
                hs_streaming_fence();
                for (size_t i = 0; i < n; i++) {
                    const float want = i < ns ? src[i] : fills[f];
                    if (memcmp(&dst[off + i], &want, sizeof want) != 0)
                        fail_msg("offset %zu, ns %zu, fill %g: dst[%zu] = %g, want %g", off, ns,
                                 (double)fills[f], i, (double)dst[off + i], (double)want);
                }
                for (size_t i = 0; i < off; i++) assert_true(dst[i] == 7.0f);
                for (size_t i = off + n; i < 96; i++) assert_true(dst[i] == 7.0f);
            }
}

/* hs_sgemm_pool_fill on a pool of 2 with fewer than HS_BLAS_PAR_ROWS rows
 * (its columns split over the workers where each part is large enough) at
 * GPT-2 small's shapes of a 16-row forward: Q/K/V's projection (bias filled
 * first, beta 1; 2 x 1,152 columns), W_in (beta 0; 2 x 1,536), W_out (beta 0,
 * K 3,072), W_O (beta 0, parts of 4.7 M multiply-adds, which OpenBLAS'
 * direct kernel would take: each part zeroes its columns, over NaN here, and
 * adds its product with beta 1), a transposed B (W_U^T at 208 rows), a
 * 1-row and a 255-row product: C bit for bit the one hs_sgemm call's on
 * this thread (after the same fill), and a value checked against double. */
static void few_rows_split_by_columns_give_one_calls_bits(void **state)
{
    (void)state;
    hs_pool *pool = NULL;
    hs_error err = {0};
    assert_int_equal(hs_pool_create(2, &pool, &err), HS_OK);
    static const struct {
        int tb, M, N, K, fill;
    } cases[] = {{0, 16, 2304, 768, 1}, {0, 16, 3072, 768, 0}, {0, 16, 768, 3072, 0},
                 {0, 16, 768, 768, 0},  {1, 208, 4096, 768, 0}, {0, 1, 2304, 768, 1},
                 {0, 255, 3072, 768, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int tb = cases[c].tb, M = cases[c].M, N = cases[c].N, K = cases[c].K;
        const int ldb = tb ? K : N, ldc = N;
        float *A = filled((size_t)M * K, 3u + (unsigned)c), *B = filled((size_t)K * N, 5u + (unsigned)c);
        float *bias = cases[c].fill ? filled((size_t)N, 9u) : NULL;
        float *C1 = malloc((size_t)M * ldc * sizeof(float)), *C2 = malloc((size_t)M * ldc * sizeof(float));
        assert_true(C1 && C2);
        for (size_t i = 0; i < (size_t)M * ldc; i++) C1[i] = C2[i] = NAN; /* beta 0 must not read it */
        for (int i = 0; bias && i < M; i++) memcpy(C1 + (size_t)i * ldc, bias, (size_t)N * sizeof(float));
        const float beta = bias ? 1.0f : 0.0f;
        hs_sgemm(0, tb, M, N, K, 1.0f, A, K, B, ldb, beta, C1, ldc);
        hs_sgemm_pool_fill(pool, bias, tb, M, N, K, 1.0f, A, K, B, ldb, beta, C2, ldc);
        if (memcmp(C1, C2, (size_t)M * ldc * sizeof(float)) != 0)
            fail_msg("case %zu (tb %d, %d x %d x %d): the split's bits differ from one call's", c, tb, M, N, K);
        const int i = M - 1, j = N - 1; /* the last element, in the last part */
        const double want = (bias ? bias[j] : 0.0) + ref(0, tb, K, A, K, B, ldb, i, j);
        assert_true(fabs(C2[(size_t)i * ldc + j] - want) < 1e-4 * (1.0 + fabs(want)));
        free(A);
        free(B);
        free(bias);
        free(C1);
        free(C2);
    }
    hs_pool_destroy(pool);
}

/* hs_sgemm's NN products of few rows against a weight past libxsmm's limit
 * (common/gemm.c, few_rows: libxsmm over column tiles in OpenBLAS' K blocks)
 * at GPT-2 small's shapes (Q/K/V 768 x 2,304, W_in 768 x 3,072, W_out
 * 3,072 x 768, W_O 768 x 768, a column part of Q, K or V over its bias
 * 768 x 384 with beta 1, and with beta 0, where OpenBLAS' direct kernel runs)
 * and a K of blocks of unequal length (1,000), rows 16, 64, 17 and 3 (the
 * last below the blocked path's size: OpenBLAS itself, and 3 x 384 x 1,000
 * at beta 1 above its small-matrix kernels'), beta 0 over NaN and beta 1
 * over a bias, strided operands: C bit
 * for bit one cblas_sgemm call's, which is what every row of every batch
 * size gets (the rows of a many-row product are OpenBLAS'), and a value
 * checked against double. */
static void few_rows_get_openblas_bits(void **state)
{
    (void)state;
    hs_blas_one_thread(); /* as headscope runs OpenBLAS (the path's condition) */
    static const struct {
        int M, N, K;
        float beta;
    } cases[] = {{16, 2304, 768, 1.0f}, {16, 3072, 768, 0.0f}, {16, 768, 3072, 0.0f}, {16, 768, 768, 0.0f},
                 {64, 2304, 768, 0.0f}, {17, 1152, 1000, 1.0f}, {3, 2304, 768, 0.0f},
                 {40, 1024, 600, 0.0f}, {16, 1024, 600, 1.0f}, {64, 640, 1000, 0.0f}, {33, 896, 2000, 0.0f},
                 {8, 2304, 768, 0.0f},  {1, 3072, 3072, 0.0f}, {2, 3072, 3072, 1.0f},
                 {16, 384, 768, 1.0f},  {16, 768, 768, 1.0f},   {3, 384, 1000, 1.0f},  {16, 384, 768, 0.0f}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int M = cases[c].M, N = cases[c].N, K = cases[c].K, lda = K + 16, ldb = N + 64, ldc = N + 32;
        float *A = filled((size_t)M * lda, 21u + (unsigned)c), *B = filled((size_t)K * ldb, 23u + (unsigned)c);
        float *C1 = malloc((size_t)M * ldc * sizeof(float)), *C2 = malloc((size_t)M * ldc * sizeof(float));
        assert_true(C1 && C2);
        for (size_t i = 0; i < (size_t)M * ldc; i++)
            C1[i] = C2[i] = cases[c].beta != 0.0f ? (float)(i % 7) - 3.0f : NAN;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, A, lda, B, ldb, cases[c].beta, C1, ldc);
        hs_sgemm(0, 0, M, N, K, 1.0f, A, lda, B, ldb, cases[c].beta, C2, ldc);
        for (int i = 0; i < M; i++)
            if (memcmp(C1 + (size_t)i * ldc, C2 + (size_t)i * ldc, (size_t)N * sizeof(float)) != 0)
                fail_msg("%d x %d x %d, beta %g: row %d's bits differ from cblas_sgemm's", M, N, K,
                         (double)cases[c].beta, i);
        const int i = M - 1, j = N - 1;
        const double want = (cases[c].beta != 0.0f ? (double)(((size_t)i * ldc + j) % 7) - 3.0 : 0.0) +
                            ref(0, 0, K, A, lda, B, ldb, i, j);
        assert_true(fabs(C2[(size_t)i * ldc + j] - want) < 1e-4 * (1.0 + fabs(want)));
        free(A);
        free(B);
        free(C1);
        free(C2);
    }
    /* the path itself ran, where its blocks are known to match: OpenBLAS'
     * AVX-512 families (elsewhere the products above were OpenBLAS' own) */
    const char *core = hs_blas_core();
    if (strcmp(core, "SkylakeX") == 0 || strcmp(core, "Cooperlake") == 0) {
        assert_int_equal(hs_sgemm_few_rows_k(768), 1);
        assert_int_equal(hs_sgemm_few_rows_k(3072), 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_transpose_pair_matches_double),
        cmocka_unit_test(a_row_gets_the_same_bits_in_any_call),
        cmocka_unit_test(narrow_outputs_give_the_same_bits_in_any_split),
        cmocka_unit_test(a_plan_gives_the_bits_of_hs_sgemm),
        cmocka_unit_test(float_arrays_are_zeroed_aligned_and_whole),
        cmocka_unit_test(freed_float_arrays_are_reused_at_their_length_and_cleared),
        cmocka_unit_test(a_streamed_row_with_its_fill_is_exact),
        cmocka_unit_test(few_rows_split_by_columns_give_one_calls_bits),
        cmocka_unit_test(few_rows_get_openblas_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
