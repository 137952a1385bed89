/*
 * bench/bench_shapes.h -- the matrix products of one training step of a
 * config, counted analytically, and a timer for the library's product
 * (hs_sgemm: libxsmm or OpenBLAS) at those shapes (the measured roofline of
 * bench_train and bench_sgemm). Header-only (every
 * every bench program is its own executable); static inline functions.
 *
 * A step = forward + cross-entropy + backward + AdamW. Matmul FLOPs: each
 * forward product (N,C)@(C,OC) is 2*N*C*OC; backward does two products of
 * the same size (dinp and dW), so a step is ~3x the forward. Attention's
 * q.k and pattern@v (causal: only j <= i, T(T+1)/2 pairs) are counted too:
 * forward 2 products, backward 4 (dv, datt, dq, dk).
 *
 * The sgemm list is the products as the library issues them for the shapes
 * of the step, taking the packed Q/K/V form: one (BT,D)@(D,H*dh) product per
 * projection; the backward's input gradients are NN products on the
 * transposed weights (hs_acts_wT), its weight gradients A^T B (beta 1).
 *
 * Model-shape flags (bench_config_arg), shared by bench_train and
 * bench_sgemm: --d-model D --layers L --heads H --d-head dh --d-mlp M
 * --ctx T --vocab V. Unset: headscope's default model (hs_config_default) on
 * the Winograd task's shapes (T 18, V 36); --d-head defaults to D / H and
 * --d-mlp to 4 D once --d-model is given. --ctx or --vocab means random
 * tokens (bench_train) rather than the Winograd task.
 *
 * Timers scale their repetitions to the product's size (bench_reps): the
 * default model's shapes get the full count, a 30-GFLOP product a few calls.
 */
#ifndef HS_BENCH_SHAPES_H
#define HS_BENCH_SHAPES_H

#include "bench_util.h"
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/model.h"

/* The shape a bench program runs: the model config and the batch's T. */
typedef struct {
    hs_config cfg;
    int T;          /* positions per sequence (= cfg.n_ctx) */
    int tokens;     /* 1 = --ctx or --vocab given: random tokens, not the Winograd task */
    int dh_set, mlp_set;
} bench_shape;

/* headscope's default model on the Winograd task's shapes (T 18, V 36). */
static inline bench_shape bench_shape_default(void)
{
    bench_shape s = {hs_config_default(), 18, 0, 0, 0};
    s.cfg.n_ctx = 18;
    s.cfg.d_vocab = 36;
    return s;
}

/* If argv[*i] is a model-shape flag (see the header comment) with a value,
 * consumes both (advancing *i) and returns 1; 0 if it is another argument;
 * -1 (with a message on stderr) for a value that is not a positive integer. */
static inline int bench_config_arg(int argc, char **argv, int *i, bench_shape *s)
{
    static const char *const names[] = {"--d-model", "--layers", "--heads", "--d-head",
                                        "--d-mlp", "--ctx", "--vocab"};
    int k = 0;
    while (k < 7 && strcmp(argv[*i], names[k])) k++;
    if (k == 7 || *i + 1 >= argc) return 0;
    char *end = NULL;
    long v = strtol(argv[*i + 1], &end, 10);
    if (!end || *end || v < 1 || v > 1 << 20) {
        fprintf(stderr, "bench: %s needs a positive integer, not \"%s\"\n", names[k], argv[*i + 1]);
        return -1;
    }
    int *dst[7] = {&s->cfg.d_model, &s->cfg.n_layers, &s->cfg.n_heads, &s->cfg.d_head,
                   &s->cfg.d_mlp, &s->cfg.n_ctx, &s->cfg.d_vocab};
    *dst[k] = (int)v;
    if (k == 3) s->dh_set = 1;
    if (k == 4) s->mlp_set = 1;
    if (k >= 5) s->tokens = 1;
    *i += 1;
    return 1;
}

/* After the flags: d_head = D / H and d_mlp = 4 D unless given, T = n_ctx. */
static inline void bench_shape_finish(bench_shape *s)
{
    if (!s->dh_set) s->cfg.d_head = s->cfg.d_model / s->cfg.n_heads;
    if (!s->mlp_set) s->cfg.d_mlp = 4 * s->cfg.d_model;
    s->T = s->cfg.n_ctx;
}

/* One line naming the shape, e.g. "L 2, D 64, H 4 x 16, M 256, T 18, V 36". */
static inline void bench_shape_name(const bench_shape *s, char *buf, size_t n)
{
    const hs_config *c = &s->cfg;
    snprintf(buf, n, "L %d, D %d, H %d x %d, M %d, T %d, V %d", c->n_layers, c->d_model, c->n_heads,
             c->d_head, c->d_mlp, s->T, c->d_vocab);
}

/* The same as JSON members (no braces), for the programs' --json output. */
static inline void bench_shape_json(FILE *f, const bench_shape *s)
{
    const hs_config *c = &s->cfg;
    fprintf(f, "\"n_layers\": %d, \"d_model\": %d, \"n_heads\": %d, \"d_head\": %d, \"d_mlp\": %d, "
               "\"n_ctx\": %d, \"d_vocab\": %d",
            c->n_layers, c->d_model, c->n_heads, c->d_head, c->d_mlp, s->T, c->d_vocab);
}

typedef struct {
    const char *what;  /* e.g. "fwd W_in" */
    int ta, tb;        /* 1 = transposed operand */
    int m, n, k;       /* C (m,n) = op(A) (m,k) @ op(B) (k,n) */
    int count;         /* calls per step */
    float beta;        /* 0: C overwritten (forward, input gradients); 1: accumulated (dW) */
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
        if (n < cap) out[n] = (bench_gemm){(w), (a), (b), (mm), (nn), (kk), (cnt), (float)(a)}; \
        n++;                                                                                  \
    } while (0)
    G("fwd Q/K/V", 0, 0, BT, HD, D, L * nproj);
    G("fwd W_O", 0, 0, BT, D, HD, L);
    if (M > 0) {
        G("fwd W_in", 0, 0, BT, M, D, L);
        G("fwd W_out", 0, 0, BT, D, M, L);
    }
    G("fwd W_U", 0, 0, BT, V, D, 1);
    G("bwd W_U dx", 0, 0, BT, D, V, 1);
    G("bwd W_U dW", 1, 0, D, V, BT, 1);
    if (M > 0) {
        G("bwd W_out dx", 0, 0, BT, M, D, L);
        G("bwd W_out dW", 1, 0, M, D, BT, L);
        G("bwd W_in dx", 0, 0, BT, D, M, L);
        G("bwd W_in dW", 1, 0, D, M, BT, L);
    }
    G("bwd W_O dx", 0, 0, BT, HD, D, L);
    G("bwd W_O dW", 1, 0, HD, D, BT, L);
    G("bwd QKV dx", 0, 0, BT, D, nproj * HD, L);
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
    /* aligned as the model's own arrays are (hs_floats_alloc) */
    bb->a = hs_floats_alloc(cap);
    bb->b = hs_floats_alloc(cap);
    bb->c = hs_floats_alloc(cap);
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
    hs_floats_free(bb->a);
    hs_floats_free(bb->b);
    hs_floats_free(bb->c);
}

/* One call of g through the library's product (hs_sgemm: libxsmm or
 * OpenBLAS, as the step's own call at that shape gets). */
static inline void bench_gemm_call(const bench_gemm *g, const bench_bufs *bb)
{
    const int lda = g->ta ? g->m : g->k, ldb = g->tb ? g->k : g->n;
    hs_sgemm(g->ta, g->tb, g->m, g->n, g->k, 1.0f, bb->a, lda, bb->b, ldb, g->beta, bb->c, g->n);
}

/* FLOPs the repetitions of one timer may take: ~2 s at 100 GFLOP/s. */
#define BENCH_BUDGET_FLOPS 2e11

/* Repetitions of a timed unit of flops FLOPs: max_reps when they fit in
 * BENCH_BUDGET_FLOPS (every shape of the default model does), fewer for
 * larger units, never under 3. */
static inline int bench_reps(double flops, int max_reps)
{
    double r = BENCH_BUDGET_FLOPS / flops;
    if (r > max_reps) r = max_reps;
    return r < 3 ? 3 : (int)r;
}

/* Least seconds of one call of g over reps repetitions of 10 calls (after
 * warm-up; reps and the calls per repetition shrink with the product's size,
 * bench_reps): the minimum, as the machine is shared and the roofline is the
 * best this sgemm does at the shape. */
static inline double bench_time_gemm(const bench_gemm *g, const bench_bufs *bb, int reps)
{
    const double flops = 2.0 * g->m * g->n * (double)g->k;
    const int inner = flops <= 1e8 ? 10 : 1;
    reps = bench_reps(flops * inner, reps);
    for (int r = 0; r < (inner == 10 ? 20 : 1); r++) bench_gemm_call(g, bb);
    double best = HUGE_VAL;
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now();
        for (int i = 0; i < inner; i++) bench_gemm_call(g, bb);
        double t = (bench_now() - t0) / inner;
        if (t < best) best = t;
    }
    return best;
}

/* Least seconds of all the step's sgemm calls back to back (reps times, or
 * fewer for a large step: bench_reps). A step whose 3 repetitions would
 * exceed BENCH_BUDGET_FLOPS is not run back to back: its time is the sum
 * over the products of count x least seconds of one call (bench_time_gemm),
 * and *summed (may be NULL) is set to 1 (else 0). */
static inline double bench_time_step_gemms(const bench_gemm *g, int n, const bench_bufs *bb, int reps,
                                           int *summed)
{
    double flops = 0.0;
    for (int i = 0; i < n; i++) flops += 2.0 * g[i].m * g[i].n * (double)g[i].k * g[i].count;
    if (summed) *summed = 3.0 * flops > BENCH_BUDGET_FLOPS;
    if (3.0 * flops > BENCH_BUDGET_FLOPS) {
        double sum = 0.0;
        for (int i = 0; i < n; i++) sum += g[i].count * bench_time_gemm(&g[i], bb, reps);
        return sum;
    }
    reps = bench_reps(flops, reps);
    double best = HUGE_VAL;
    for (int r = -5; r < reps; r++) {
        double t0 = bench_now();
        for (int i = 0; i < n; i++)
            for (int c = 0; c < g[i].count; c++) bench_gemm_call(&g[i], bb);
        double t = bench_now() - t0;
        if (r >= 0 && t < best) best = t;
    }
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
