/*
 * model/model_internal.h -- kernels, the activation layout and the forward's
 * steps shared inside model/ (acts.c, attention.c, norm_mlp.c, forward.c,
 * backward.c, adamw.c) and reachable by tests (STYLE.md 14: tests reach
 * internals through *_internal.h). Not public API. Dims legend as model.h.
 */
#ifndef HS_MODEL_INTERNAL_H
#define HS_MODEL_INTERNAL_H

#include "model.h"

#include <math.h>
#include <string.h>

/* No FMA contraction in model/: GCC in ISO C mode already has
 * -ffp-contract=off; clang contracts a*b+c by default, which would make the
 * AVX-512 kernels (FMA available) differ in bits from the 4-lane ones. */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

/* m's parameter table rebuilt for cfg, which keeps a subset of m's tensors
 * with their shapes (norm_pre set: the norms' w and b dropped): every kept
 * tensor moved in place down to its new offset (table order), the views
 * pointed again, m->cfg = *cfg. m has no training state (HS_ASSERT). The
 * tail of param_mem past the new n_params stays allocated, unused. */
void hs_model_relayout(hs_model *m, const hs_config *cfg);

/* m takes the read-only mapping [base, base + len) of a checkpoint file its
 * views point into (the loader's, hs_ckpt_in_place): hs_model_destroy or
 * hs_model_own unmaps it. A base m holds already: nothing. HS_ERR_NOMEM. */
hs_status hs_model_adopt_map(hs_model *m, void *base, size_t len, hs_error *err);

/* mean (N), rstd (N) <- statistics of inp (N,D): LayerNorm centres (mean of x),
 * RMSNorm does not (mean = 0); rstd = 1/sqrt(var + eps). Computed in double. */
void hs_norm_stats(float *mean, float *rstd, const float *inp, size_t N, int D, hs_norm type,
                   float eps);
/* out (N,D) = (inp - mean) * rstd, no affine part. */
void hs_norm_apply(float *out, const float *inp, const float *mean, const float *rstd, size_t N,
                   int D);

/* ------------------------------------------------------------------------ */
/* The activation layout: one table (model/acts.c, ACT_SLOTS) of every
 * buffer of hs_acts and of the backward's scratch, with its size per
 * sequence as a function of T (llm.c's act_sizes + pointer table). It drives
 * the allocation (hs_acts_create), the half-batch views one thread runs a
 * forward on (pointers moved by b0 sequences), and the backward's scratch
 * (hs_grad_point). A buffer added to hs_acts is added to the table and
 * nowhere else. */

/* The backward's activation gradients of one batch part, views into its
 * region of acts->d_mem (hs_grad_point). */
typedef struct {
    float *dresid, *dln, *dlnf;   /* (b,t,D) */
    float *dz, *dq, *dk, *dv;     /* (b,t,H,dh) */
    float *dpre, *dpost;          /* (b,t,M) */
    float *dlogits;               /* (b,t,V) */
    float *dlin;                  /* (b,t,M) d hook_pre_linear (gated_mlp; else no floats) */
    float *dside;                 /* (b,t,D) (parallel_attn_mlp: the MLP's gradient to
                                   * resid_pre, added after the attention's; norm_place
                                   * post: a post-norm's input gradient, swapped with
                                   * dresid; else no floats) */
    float *datt;                  /* (t,t), one (b, h) at a time */
    float *vT;                    /* (H*dh,t), one sequence's v transposed */
    float *dwpack;                /* (D,H*dh) a packed dW_Q/K/V before it is added per head */
} hs_grad_scratch;

/* Points g at the backward scratch of part `part` (< HS_GRAD_PARTS) of the
 * last forward's batch: its b sequences from sequence b0 on, t = a->t
 * positions. Parts' regions never overlap. */
void hs_grad_point(const hs_acts *a, const hs_config *c, int part, int b0, int b,
                   hs_grad_scratch *g);

/* a with every batch-major buffer moved to sequence b0 (t positions per
 * sequence, as the forward about to run): the view one thread's part of a
 * batch runs on. The backward's scratch (d_mem) is not moved: hs_grad_point. */
hs_acts hs_acts_view(const hs_acts *a, const hs_config *c, int b0, int t);

/* How a batch of B sequences of T positions splits into parts (hs_forward
 * over `threads` workers; hs_backward into HS_GRAD_PARTS): at most one part
 * per whole 16-row unit, 1 (no split) when there is no second unit. */
int hs_batch_parts(int B, int T, int parts);
/* The first sequence of part j of `parts` (j = parts gives B): the multiple
 * of the 16-row unit nearest B * j / parts. */
int hs_batch_part_start(int B, int T, int parts, int j);

/* Where a training forward keeps act'(mlp_pre) of layer l for the backward:
 * (B,T,M) at capacity B, T, in acts->dact_mem (NULL without it). */
static inline float *hs_acts_dact(const hs_acts *a, const hs_config *c, int l)
{
    if (a->dact_mem == NULL || c->d_mlp == 0) return NULL;
    return a->dact_mem + (size_t)l * a->B * a->T * c->d_mlp;
}

/* W_Q, W_K, W_V of layer l packed as (D, H*dh) matrices (which = 0, 1, 2):
 * packed[d][h*dh + e] = W[h][d][e], so a projection of all heads is one
 * sgemm. Filled by hs_forward (hs_pack_qkv) for its own use and the
 * backward's; at the end of acts->mem: every layer's, or with
 * a->wpack_slots 1 (one sequence, no gradients) the layer whose block runs
 * (one slot, packed as the block starts: the forward is then one part). */
static inline float *hs_acts_wpack(const hs_acts *a, const hs_config *c, int l, int which)
{
    const size_t per = (size_t)c->d_model * c->n_heads * c->d_head;
    const size_t slot = a->wpack_slots == 1 ? 0 : (size_t)l;
    return a->mem + a->n_floats - (size_t)a->wpack_slots * 3 * per + (slot * 3 + which) * per;
}

/* The packed (D, H*dh) W_Q, W_K or W_V (which 0, 1, 2; W_K and W_V (D,
 * Hkv*dh) with grouped-query attention) of layer l the products read, rows
 * *ld floats apart: the model's W_QKV in place (ld 3*H*dh: a mapped Hugging
 * Face c_attn, never grouped) or acts' packed copy (ld H*dh, Hkv*dh). */
static inline const float *hs_qkv_packed(const hs_model *m, const hs_acts *a, int l, int which,
                                         int *ld)
{
    const hs_config *c = &m->cfg;
    const size_t HD = (size_t)c->n_heads * c->d_head;
    if (m->params.blocks[l].W_QKV) {
        *ld = (int)(3 * HD);
        return m->params.blocks[l].W_QKV + (size_t)which * HD;
    }
    *ld = which == 0 ? (int)HD : hs_kv_heads(c) * c->d_head; /* W_K, W_V: (D, Hkv*dh) */
    return hs_acts_wpack(a, c, l, which);
}

/* The training layout (HS_ACTS_TRAIN, acts->lean) keeps one buffer of
 * ln1_out, ln2_out and mlp_post for every layer when these say so (and of
 * attn_out always); the backward makes layer l's again from what it keeps,
 * bit for bit the forward's: LN1's and LN2's outputs from their input and
 * the forward's mean and rstd (hs_norm_apply_affine, as the unobserved
 * forward's fused pass), mlp_post = act(mlp_pre) with act'(mlp_pre)
 * (hs_act_forward) in the same pass. Where they are 0 the slot is kept per
 * layer (a copy of the input without a norm; the gated MLP's product). */
static inline int hs_lean_ln1(const hs_config *c)
{
    return hs_ln1_in_front(c);
}
static inline int hs_lean_ln2(const hs_config *c)
{
    return c->d_mlp > 0 && c->norm != HS_NORM_NONE && c->norm_place == HS_NORM_PRE;
}
static inline int hs_lean_post(const hs_config *c)
{
    return c->d_mlp > 0 && !c->gated_mlp;
}

/* Floats of the backward's transposed weights (hs_acts_wT). */
static inline size_t hs_wT_floats(const hs_config *c)
{
    const size_t D = (size_t)c->d_model, HD = (size_t)c->n_heads * c->d_head, M = (size_t)c->d_mlp;
    return (size_t)c->n_layers * (4 * HD * D + 2 * M * D) + (size_t)c->d_vocab * D;
}

/* The weights the backward's input gradients multiply by, transposed so each
 * product is an NN one (hs_sgemm runs those on libxsmm): of layer l,
 * which = 0, 1, 2: the packed W_Q, W_K, W_V transposed, (H*dh, D); 3: W_O^T
 * (D, H*dh); 4: W_in^T (M, D); 5: W_out^T (D, M); l = n_layers (which 0):
 * W_U^T (V, D). Filled by hs_backward at its start (after the forward that
 * packed W_Q/K/V), only those whose product libxsmm runs (hs_sgemm_nn_jit;
 * the others are multiplied as they lie, and their pages never touched); at
 * the end of acts->d_mem (NULL without it). */
static inline float *hs_acts_wT(const hs_acts *a, const hs_config *c, int l, int which)
{
    if (a->d_mem == NULL) return NULL;
    const size_t D = (size_t)c->d_model, HD = (size_t)c->n_heads * c->d_head, M = (size_t)c->d_mlp;
    static const int hd_units[6] = {0, 1, 2, 3, 4, 4}; /* HD*D matrices before `which` */
    static const int m_units[6] = {0, 0, 0, 0, 0, 1};  /* M*D matrices before `which` */
    float *base = a->d_mem + a->n_d_floats - hs_wT_floats(c);
    return base + (size_t)l * (4 * HD * D + 2 * M * D) + (size_t)hd_units[which] * HD * D +
           (size_t)m_units[which] * M * D;
}

/* Attention runs per (batch, head) as hs_sgemm products over whole T x T
 * tiles at every T (libxsmm kernels: almost no call overhead even at 18 x
 * 18; the masked half multiplies exact zeros or is masked after; with finite
 * values the results are the causal ones. An infinite or NaN q, k or v at a
 * later position, which only an observer's edit can make, reaches earlier
 * rows through 0 x inf = NaN, as in TransformerLens' own einsum). The A B^T
 * products (q k^T, dz v^T) read k or v transposed once per sequence. The
 * softmax's rows are short below HS_SOFTMAX_LONG_T: there a (b, h) tile is
 * shifted, exponentiated at once and each row summed in j order; at and
 * above it a row sums in 16 fixed lanes (model_simd.h). Default step (T 18),
 * one thread: the attention kernels 17% -> ~9% of the step (forward 4.2 ->
 * 3.8 ms). The choice depends on T alone, so a prompt's values do not depend
 * on its batch or the thread count. Without observer at T >= 64 the
 * forward runs the same sums in causal row blocks (model/attention.c,
 * attn_causal_bg). */
#define HS_SOFTMAX_LONG_T 32 /* the softmax's long-row path from here on */

/* out (C,R) = in (R,C)^T with in's rows ld apart, in 8 x 8 blocks: the
 * transposed copies (of k or v, of the backward's weights) that turn A B^T
 * products into NN ones (libxsmm has no A B^T kernel). */
static inline void hs_transpose_rows(float *out, const float *in, int R, int C, size_t ld)
{
    for (int r0 = 0; r0 < R; r0 += 8)
        for (int c0 = 0; c0 < C; c0 += 8) {
            const int r1 = r0 + 8 < R ? r0 + 8 : R, c1 = c0 + 8 < C ? c0 + 8 : C;
            for (int c = c0; c < c1; c++)
                for (int r = r0; r < r1; r++) out[(size_t)c * R + r] = in[(size_t)r * ld + c];
        }
}

/* out (N,OC) = inp (N,C) @ W (C,OC), then + bias (OC) on every row (bias may
 * be NULL): hs_sgemm with beta 0, the bias added after (the bits of the
 * forward's fused bias passes). */
void hs_matmul_forward(float *out, const float *inp, const float *W, const float *bias, size_t N,
                       int C, int OC);

/* Rows from which a one-part forward spreads a product's rows over its pool
 * (hs_sgemm_pool; below, a product is too short to gain). */
#define HS_BLAS_PAR_ROWS 256


/* hs_sgemm(0, tb, M, N, K, ...) with C's rows in one part per worker of pool,
 * each part starting on a multiple of 64 rows (libxsmm's row block and a
 * multiple of OpenBLAS' 16-row unit, common/gemm.c: every row gets the bits
 * of one call), each part one single-threaded hs_sgemm on its worker. With
 * M < HS_BLAS_PAR_ROWS, C's columns instead, in parts starting on multiples
 * of 64 columns, each at least 64 wide and HS_BLAS_DIRECT_MACS (NN, alpha 1, beta 0) or HS_BLAS_SMALL_MACS
 * multiply-adds,
 * its weight past libxsmm's (hs_sgemm_nn_jit), so that the parts and the
 * whole run OpenBLAS' blocked path or hs_sgemm's few-row products (which
 * have its bits), and only where hs_blas_split_exact() (every column the
 * bits of one call; not on OpenBLAS' Haswell kernels);
 * fewer workers when parts would be smaller. NULL pool, one worker, or no
 * such split: one call on this thread. The
 * forward's one owner of threads: OpenBLAS stays at one thread a call, so no
 * helper of its spins (sched_yield) beside the pool's workers. */
void hs_sgemm_pool(hs_pool *pool, int tb, int M, int N, int K, float alpha, const float *A,
                   int lda, const float *B, int ldb, float beta, float *C, int ldc);
/* hs_sgemm_pool with each of C's rows set to fill (N floats; NULL: none)
 * first, by the part that then runs the product on it (beta 1 adds the
 * product to it): a bias pre-filled on the workers, not on this thread. */
void hs_sgemm_pool_fill(hs_pool *pool, const float *fill, int tb, int M, int N, int K,
                        float alpha, const float *A, int lda, const float *B, int ldb, float beta,
                        float *C, int ldc);

/* hs_matmul_forward with its product on pool (hs_sgemm_pool). */
void hs_matmul_forward_pool(hs_pool *pool, float *out, const float *inp, const float *W,
                            const float *bias, size_t N, int C, int OC);

/* out (N,D) = (inp - mean) * rstd (normalize), then * w (+ b) (affine; w, b
 * may be NULL); normalize = 0 applies the affine part to out in place. The
 * same operations in the same order whether or not the observer sits
 * between the normalisation and the affine part (hook_normalized). */
void hs_norm_apply_affine(float *out, const float *inp, const float *mean, const float *rstd,
                          const float *w, const float *b, size_t N, int D, int normalize,
                          int affine);

/* out (N, OC) += bias (OC) on every row: what every product of the forward
 * does after its beta-0 product, so the fused passes give its bits. */
void hs_add_bias_rows(float *out, const float *bias, size_t N, int OC);

/* The no-observer forward's fused pass, with the bits of hs_add_bias_rows
 * followed by the separate pass it replaces (float + commutes exactly):
 * y (N, D) += bias (may be NULL), then resid_out = resid + y, row by row
 * while y's row is in L1. keep_y = 0 leaves y without its bias (the MLP's
 * output, a scratch). */
void hs_bias_residual(float *resid_out, const float *resid, float *y, const float *bias,
                      size_t N, int D, int keep_y);

/* hs_bias_residual with its rows spread over pool's workers (NULL, one
 * worker or few rows: this thread): every row's values are its own, so the
 * bits are one call's. */
void hs_bias_residual_pool(hs_pool *pool, float *resid_out, const float *resid, float *y,
                           const float *bias, size_t N, int D, int keep_y);

/* hs_bias_residual_pool with keep_y, each row of y and of resid_out also
 * written to ky and kr (either may be NULL: an observer's buffers for points
 * it only keeps, hs_hook_keeps) with streaming stores while the row is in
 * L1, fenced before the call returns. The bits of hs_bias_residual. */
void hs_bias_residual_keep_pool(hs_pool *pool, float *resid_out, const float *resid, float *y,
                                const float *bias, size_t N, int D, float *ky, float *kr);

/* dst (N, D) <- src, and to keep too (may be NULL: an observer's buffer
 * for a point it only keeps) with streaming stores while the rows are in
 * L1, rows over pool's workers, fenced before the call returns. */
void hs_copy_keep_pool(hs_pool *pool, float *dst, const float *src, float *keep, size_t N, int D);

/* hs_add_bias_rows with its rows spread over pool's workers (NULL, one
 * worker or fewer than 64 rows: this thread): the bits of one call. */
void hs_add_bias_rows_pool(hs_pool *pool, float *out, const float *bias, size_t N, int OC);

#include "model_v8.h" /* hs_v8, HS_CLONES and the element-wise kernels */

/* AdamW's scalars for one run of elements (model/adamw.c): decay = 1 - lr wd
 * (1 without decay), step = lr / (1 - b1^t), bc2s = sqrt(1 - b2^t), c1 =
 * 1 - b1, c2 = 1 - b2, gscale the clip factor; made in double, rounded once. */
typedef struct {
    float gscale, b1, c1, b2, c2, decay, step, bc2s, eps;
} hs_adam_k;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

/* Width-generic exp, normal CDF and GELU (model_simd.h): hs_exp_4 (...) at
 * 4 lanes everywhere, and on x86-64 _8 (AVX2) and _16 (AVX-512F) versions
 * compiled for those ISAs. Use them through hs_gelu_forward/backward, which
 * pick the widest the CPU has; all widths give identical bits. */
#define HS_SIMD_W 4
#define HS_SIMD_SFX 4
#define HS_SIMD_TGT
#include "model_simd.h"
#undef HS_SIMD_W
#undef HS_SIMD_SFX
#undef HS_SIMD_TGT
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HS_SIMD_X86 1
#define HS_SIMD_W 8
#define HS_SIMD_SFX 8
#define HS_SIMD_TGT __attribute__((target("avx2")))
#include "model_simd.h"
#undef HS_SIMD_W
#undef HS_SIMD_SFX
#undef HS_SIMD_TGT
#define HS_SIMD_W 16
#define HS_SIMD_SFX 16
#define HS_SIMD_TGT __attribute__((target("avx512f")))
#include "model_simd.h"
#undef HS_SIMD_W
#undef HS_SIMD_SFX
#undef HS_SIMD_TGT
#endif

/* Calls fn_16, fn_8 or fn_4 (model_simd.h) with the arguments: the widest
 * version the CPU runs (every width gives the same bits). */
#ifdef HS_SIMD_X86
#define HS_SIMD_CALL(fn, ...)                                                 \
    do {                                                                      \
        if (__builtin_cpu_supports("avx512f"))                                \
            fn##16(__VA_ARGS__);                                              \
        else if (__builtin_cpu_supports("avx2"))                              \
            fn##8(__VA_ARGS__);                                               \
        else                                                                  \
            fn##4(__VA_ARGS__);                                               \
    } while (0)
#else
#define HS_SIMD_CALL(fn, ...) fn##4(__VA_ARGS__)
#endif

/* out (n) = GELU(inp (n)) = x Phi(x), exact erf to float precision. */
void hs_gelu_forward(float *out, const float *inp, size_t n);
/* out (n) = GELU(inp (n)) and dact (n) = GELU'(inp (n)), same bits as the two
 * functions around it. */
void hs_gelu_forward_grad(float *out, float *dact, const float *inp, size_t n);
/* dinp (n) = dout (n) * GELU'(inp (n)) (overwrites). */
void hs_gelu_backward(float *dinp, const float *dout, const float *inp, size_t n);

/* out (n) = gelu_new(inp (n)) (model_simd.h: GPT-2's tanh approximation),
 * and dact (n) its derivative when dact is not NULL. Same bits at every width. */
void hs_gelu_new_forward(float *out, float *dact, const float *inp, size_t n);
/* dinp (n) = dout (n) * gelu_new'(inp (n)) (overwrites). */
void hs_gelu_new_backward(float *dinp, const float *dout, const float *inp, size_t n);

/* out (n) = act(inp (n)): GELU x Phi(x) (exact erf to float precision,
 * model_simd.h), gelu_new, ReLU or SiLU. dact (may be NULL): act'(inp) for the
 * backward (GELU, gelu_new; ReLU ignores it). Inline, so that the MLP's fused
 * pass (an HS_CLONES kernel, model/norm_mlp.c) and the last block at one
 * position (model/forward.c) each keep it in their own body. */
/* out (n) = SiLU(inp (n)) = x sigmoid(x), dact (may be NULL) its derivative
 * s (1 + x (1 - s)) with s = sigmoid(x); expf in float (model/norm_mlp.c). */
void hs_silu_forward(float *out, float *dact, const float *inp, size_t n);

static inline void hs_act_forward(float *out, float *dact, const float *inp, size_t n, hs_act act)
{
    if (act == HS_ACT_SILU) {
        hs_silu_forward(out, dact, inp, n);
        return;
    }
    if (act == HS_ACT_RELU) {
        for (size_t i = 0; i < n; i++) out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
        return;
    }
    if (act == HS_ACT_GELU_NEW) {
        hs_gelu_new_forward(out, dact, inp, n);
        return;
    }
    if (dact)
        hs_gelu_forward_grad(out, dact, inp, n);
    else
        hs_gelu_forward(out, inp, n);
}

/* out (n) = exp(inp (n)) at the widest width the CPU runs (identical bits at
 * every width): the softmax's short rows and the cross-entropy. */
static inline void hs_exp_span(float *out, const float *inp, size_t n)
{
    HS_SIMD_CALL(hs_exp_span_, out, inp, n);
}

/* ------------------------------------------------------------------------ */
/* The forward's steps and its observer points                               */
/*
 * hs_forward (model/forward.c) orchestrates: the embedding, then per block
 * its attention (hs_attention_forward, model/attention.c), the residual, its
 * MLP (hs_mlp_forward, model/norm_mlp.c), then the final norm and the
 * unembedding. Each step calls the observer at its named points (model.h)
 * through hs_hook, which returns at once with no observer (hc->obs NULL). A
 * step returns HS_ERR_CALLBACK when the observer aborts ("forward aborted by
 * observer at <point>"), HS_ERR_INPUT or HS_ERR_NOMEM where it says so.
 * A block's steps read it as one hs_block_step.
 */
typedef struct {
    const hs_observer *obs; /* NULL: no observer */
    int changed;            /* 1 once the observer changed a point after the input's
                             * (hs_hook sets it; forward_embed clears it after
                             * hook_pos_embed; hs_forward copies it to acts->edited) */
    hs_observer_dest_fn dest; /* NULL, or where obs would like its scratch points
                               * written (hs_forward_dest) */
    hs_pool *pool;          /* workers a step may spread its heads or rows over
                             * (hs_pool_for): acts->pool when the forward runs as
                             * one part on the caller's thread, else NULL (a
                             * batch part already runs inside a pool job) */
} hs_hook_ctx;

/* Block l of one forward over B sequences of T positions, as its steps see
 * it (built once per block by model/forward.c). */
typedef struct {
    hs_hook_ctx *hc;
    const hs_model *m;
    const hs_config *c;         /* &m->cfg */
    hs_acts *acts;              /* a view (hs_acts_view): its pointers may start at a later sequence */
    hs_block_acts *ba;          /* &acts->blocks[l] */
    const hs_block_params *bp;  /* &m->params.blocks[l] */
    int l, B, T;
    size_t BT;                  /* B * T rows */
    int fuse;                   /* 1: a product's bias is added in the pass after it (no
                                 * observer point between; not in the last block when
                                 * acts->logit_pos >= 0, which reads attn_out whole) */
} hs_block_step;

/* Calls the observer at `name` if it wants it. Returns 1 if data changed,
 * 0 if not or not called, -1 to abort. */
static inline int hs_hook(hs_hook_ctx *hc, const char *name, float *data, int ndim, int64_t d0,
                          int64_t d1, int64_t d2, int64_t d3)
{
    if (hc->obs == NULL) return 0;
    if (hc->obs->wants && !hc->obs->wants(name, hc->obs->ctx)) return 0;
    int64_t shape[4] = {d0, d1, d2, d3};
    int r = hc->obs->fn(name, shape, ndim, data, hc->obs->ctx);
    if (r > 0) hc->changed = 1;
    return r < 0 ? -1 : (r > 0);
}

/* 1 when there is an observer and it wants the point `name`. */
static inline int hs_hook_wants(hs_hook_ctx *hc, const char *name)
{
    if (hc->obs == NULL) return 0;
    return hc->obs->wants == NULL || hc->obs->wants(name, hc->obs->ctx);
}

/* The observer's buffer for point `name` (hs_forward_dest) when it wants
 * the point and offers one, else fallback. */
static inline float *hs_hook_dest(hs_hook_ctx *hc, const char *name, float *fallback, int ndim,
                                  int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    if (hc->obs == NULL || hc->dest == NULL) return fallback;
    if (hc->obs->wants && !hc->obs->wants(name, hc->obs->ctx)) return fallback;
    int64_t shape[4] = {d0, d1, d2, d3};
    int keeps = 0;
    float *d = hc->dest(name, shape, ndim, &keeps, hc->obs->ctx);
    return d ? d : fallback;
}

/* Whether the observer only keeps point `name` (hs_observer_dest_fn's
 * keeps): 1 with *buf = NULL when it does not want the point (nobody reads
 * it), 1 with *buf = its buffer when it keeps the values there and reads
 * nothing before the forward returns, else 0 (*buf = its buffer or
 * fallback: the ordinary path, fn called once the point is written). */
static inline int hs_hook_keeps(hs_hook_ctx *hc, const char *name, float *fallback, float **buf,
                                int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    *buf = NULL;
    if (!hs_hook_wants(hc, name)) return 1;
    *buf = fallback;
    if (hc->dest == NULL) return 0;
    int64_t shape[4] = {d0, d1, d2, d3};
    int keeps = 0;
    float *d = hc->dest(name, shape, ndim, &keeps, hc->obs->ctx);
    if (d == NULL) return 0;
    *buf = d;
    return keeps;
}

/* hs_hook in a step: returns from it with HS_ERR_CALLBACK (in `err`) when
 * the observer aborts. */
#define HS_HOOK(hc, nm, data, ndim, d0, d1, d2, d3)                                           \
    do {                                                                                      \
        if (hs_hook((hc), (nm), (data), (ndim), (d0), (d1), (d2), (d3)) < 0) {                \
            return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", (nm)); \
        }                                                                                     \
    } while (0)

/* Point nm, whose n values the forward computed in own, told to the
 * observer at buf, the buffer hs_hook_keeps gave when it did not say
 * "keeps": buf NULL or own: hs_hook on own; else own copied into buf (the
 * observer's), observed there, and an edit copied back into own. Returns
 * hs_hook's value. */
int hs_hook_into(hs_hook_ctx *hc, const char *nm, float *own, float *buf, size_t n, int ndim,
                 int64_t d0, int64_t d1, int64_t d2, int64_t d3);

/* Point nm that the observer only keeps (hs_hook_keeps returned 1), its
 * values written in buf (NULL: not wanted, nothing told): the observer told
 * now. HS_ERR_CALLBACK when it aborts, or when it edits (it said it only
 * keeps the point: what followed did not read its edit). */
hs_status hs_hook_kept(hs_hook_ctx *hc, const char *nm, float *buf, int ndim, int64_t d0,
                       int64_t d1, int64_t d2, int64_t d3, hs_error *err);

/* A norm with its two points: <prefix>.hook_scale (B,T,1) then
 * <prefix>.hook_normalized (B,T,D), then the affine part: out (B,T,D),
 * mean, rstd (B,T) <- norm of inp (B,T,D) with w, b (may be NULL). prefix
 * e.g. "blocks.0.ln1"; scratch: B*T floats. */
hs_status hs_norm_forward_hooked(hs_hook_ctx *hc, const char *prefix, float *out, float *mean,
                                 float *rstd, const float *inp, const float *w, const float *b,
                                 int B, int T, int D, hs_norm type, float eps, float *scratch,
                                 hs_error *err);

/* acts->blocks[l].att again for every layer l the last forward wrote
 * elsewhere (hs_acts.att_elsewhere, then cleared): the scores of q and k
 * (acts->scores, acts->scratch as the forward's scratch) and their softmax,
 * or the uniform pattern, by the forward's kernels: the bits the forward
 * wrote. Spreads the heads over acts->pool as a one-part forward does. */
void hs_attn_patterns_restore(const hs_model *m, hs_acts *acts);

/* z (T, dh) <- one sequence's one head of block l's softmax attention, by
 * the forward's kernels on a batch of one (b, h) tile (the same shapes, so
 * the same bits as that head of the forward with no observer editing its
 * scores or pattern): q, k, v (T, dh) that head's rows; causal, no ALiBi or
 * local window (hs_forward_suffix_ok's models). scratch: 2 T^2 + dh T floats.
 * For a caller that recomputes a single head (model/suffix.c's z edits). */
void hs_attn_head_forward(const hs_model *m, int l, const float *q, const float *k, const float *v, int T,
                          float *scratch, float *z);

/* Packs layer l's W_Q, W_K (softmax only) and W_V into acts (hs_acts_wpack):
 * every layer once per hs_forward, or (wpack_slots 1 below n_layers: one
 * sequence without gradients) each as its block starts. */
void hs_pack_qkv(const hs_model *m, hs_acts *acts, int l);

/* The attention of block k->l, from its resid_pre to attn_out (B,T,D) = z W_O
 * (+ b_O unless k->fuse: then the residual's pass adds it, hs_bias_residual):
 * TransformerLens' split inputs when observed, LN1, q, k, v, the scores,
 * the pattern and z, each head's hook_result when observed. */
hs_status hs_attention_forward(const hs_block_step *k, hs_error *err);

/* The MLP of block k->l (d_mlp > 0): resid_post = resid_mid +
 * MLP(LN2(resid_mid)) with the points from blocks.l.hook_resid_mid to
 * hook_mlp_out (k->fuse: the biases of W_in and W_out in the passes after
 * their products). */
hs_status hs_mlp_forward(const hs_block_step *k, hs_error *err);

/* ------------------------------------------------------------------------ */
/* Positions without parameters (model/positions.c)                          */

/* The inverse frequencies of rotary positions, inv_freq (hs_rotary_dim / 2):
 * inv_freq[i] = base^(-2i / rotary_dim) (base = rotary_base, 10000 when 0;
 * Su et al. 2021; transformers' default rope init), then with
 * use_NTK_by_parts_rope Llama 3's rescaling (transformers
 * _compute_llama3_parameters, TL's NTK-by-parts): wavelength w = 2 pi /
 * inv_freq; w > original_ctx / low_freq_factor: inv_freq / factor; w <
 * original_ctx / high_freq_factor: kept; between: (1 - s) inv_freq / factor
 * + s inv_freq, s = (original_ctx / w - low) / (high - low). In double. */
void hs_rotary_inv_freq(const hs_config *cfg, double *inv_freq);

/* ALiBi's slope of each of the n_heads heads into slopes (n_heads) (Press et
 * al. 2022, their code and transformers' build_alibi_tensor): H a power of
 * two: 2^(-8 (h + 1) / H); otherwise the slopes of the nearest power of two
 * below, P, then those of 2P at odd indices 2^(-4 (2k + 1) / P), k < H - P.
 * (TransformerLens uses 2^(-8 (h + 1) / H) for every H: the same for a power
 * of two.) The score of query i, key j gains slope * (j - i), after the
 * scaling and before the mask (TL AbstractAttention). In double. */
void hs_alibi_slopes(int n_heads, double *slopes);

/* The tables hs_acts_create keeps for T positions of cfg: *rope (pos rotary,
 * hs_acts.rope's layout) or *pos_table (pos sinusoidal, (T, D)), each
 * hs_floats_alloc'd (NULL for other positions). HS_ERR_NOMEM. */
hs_status hs_positions_tables(const hs_config *cfg, int T, float **rope, float **pos_table,
                              hs_error *err);

/* Rotates x (B,T,nh,dh) in place by the rotary tables rope (hs_acts.rope,
 * made for at least T positions: a row per position, so any capacity;
 * position = index in the sequence): on the
 * first hs_rotary_dim dims of each head, pairs (a, b) = (e, e + rd/2)
 * (rotate-half: x * cos + rotate_half(x) * sin, GPT-NeoX / Llama) or (2e,
 * 2e + 1) (rotary_adjacent_pairs, GPT-J), e < rd/2:
 *   x_a' = x_a cos(p f_e) - x_b sin(p f_e),  x_b' = x_b cos(p f_e) + x_a sin(p f_e).
 * inverse = 1 rotates by -angle: the transpose, which carries the gradient of
 * the rotated q or k back to q or k (the rotation is orthogonal). */
void hs_rotary_apply(float *x, int B, int T, int nh, int dh, const hs_config *cfg,
                     const float *rope, int inverse);

/* ------------------------------------------------------------------------ */
/* The backward's kernels (model/backward.c): hs_backward's, and those of     */
/* hs_backward_acts (model/backward_acts.c), which runs the same maths         */
/* without the weight gradients.                                              */

/* dinp (N,D) += d/dinp of norm(inp) * w + b given dout (N,D) (LayerNorm, or
 * RMSNorm: type), with the forward's mean, rstd (N); dw, db (D) +=. w, dw,
 * b, db may be NULL (no affine weight / bias; no weight gradient). */
void hs_norm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                      const float *w, const float *mean, const float *rstd, size_t N, int D,
                      hs_norm type);

/* dx (N, C) = dy (N, OC) @ W^T (+ beta dx, beta 0 or 1) with W (C, OC): an NN
 * product on WT (OC, C) = W^T (hs_acts_wT) where hs_sgemm_nn_jit(C, OC), else
 * A B^T on W itself. */
void hs_dx_product(float *dx, float beta, const float *dy, const float *W, const float *WT,
                   size_t N, int C, int OC);
/* hs_dx_product with W's rows ldw floats apart (a packed W_QKV in place). */
void hs_dx_product_ld(float *dx, float beta, const float *dy, const float *W, int ldw,
                      const float *WT, size_t N, int C, int OC);
/* dlnf (N, D) = dlogits (N, V) W_U^T: hs_dx_product on W_U, or the NN
 * product on W_U_T when W_U is read transposed in place. */
void hs_unembed_dx(float *dx, const float *dlogits, const hs_model *m, const hs_acts *acts, size_t N);
/* logits (N, V) = inp (N, D) W_U + b_U, W_U as stored (hs_matmul_forward,
 * or W_U_T read transposed, the bias added after). */
void hs_unembed_forward(float *logits, const float *inp, const hs_params *P, size_t N, int D, int V);
/* hs_unembed_forward with its product on pool (hs_sgemm_pool). */
void hs_unembed_forward_pool(hs_pool *pool, float *logits, const float *inp, const hs_params *P,
                             size_t N, int D, int V);

/* Fills hs_acts_wT from m's weights and the last forward's packed W_Q/K/V
 * (only the matrices hs_dx_product reads transposed), on acts->pool. */
void hs_transpose_weights(const hs_model *m, const hs_acts *acts);

/* dpre (n) = dpost (n) * act'(mlp_pre) of layer l (n = rows x M): GELU' as
 * the forward kept it (hs_acts_dact) when it did, else from
 * acts->blocks[l].mlp_pre through the activation's switch (a new activation
 * is one case there). */
void hs_act_grad(float *dpre, const float *dpost, const hs_acts *acts, const hs_config *c, int l,
                 size_t n);

/* The gated MLP's hidden layer backward of layer l (n = rows x M), given
 * dpost = d hook_post: dlin = dpost * act(mlp_pre) (d hook_pre_linear;
 * act recomputed), then dpost *= mlp_pre_linear in place and dpre = dpost *
 * act'(mlp_pre) (d hook_pre, hs_act_grad). */
void hs_gated_grad(float *dpre, float *dlin, float *dpost, const hs_acts *acts, const hs_config *c,
                   int l, size_t n);

/* The backward of a post-norm (norm_place post) given *dresid = d(its
 * output) (N,D): *dside = d(its input) (zeroed, then hs_norm_backward, dw
 * and db accumulated; may be NULL), then the two pointers swapped, so that
 * *dresid holds d(input) and *dside the free buffer. */
void hs_post_norm_backward(float **dresid, float **dside, float *dw, float *db, const float *inp,
                           const float *w, const float *mean, const float *rstd, size_t N, int D,
                           hs_norm type);

/* Attention backward per (b, h), rows of q, z and their gradients H*dh
 * apart, of k, v and theirs Hkv*dh (query head h reads key/value head
 * h / (H / Hkv)): dv (B,T,Hkv,dh) = sum over a group's heads of pattern^T
 * dz; with softmax also dq (B,T,H,dh) and dk (B,T,Hkv,dh) (summed likewise,
 * in head order) through the softmax and the score scale inv_scale = 1 /
 * hs_attn_scale. ALiBi's bias is a constant and a local window's masked
 * weights are 0: neither changes the formulas. With rotary positions q and
 * k are the rotated ones and dq, dk their gradients (the caller rotates them
 * back, hs_rotary_apply inverse). dpattern (B,H,T,T), may be NULL: the
 * pattern's gradient dz v^T at every (dest, src), above the diagonal too
 * (what an edit there would change). datt (T,T) and vT (Hkv*dh,T) are
 * scratch. Overwrites dq, dk, dv. */
void hs_attn_backward(float *dq, float *dk, float *dv, float *dpattern, float *datt, float *vT,
                      const float *dz, const float *att, const float *q, const float *k,
                      const float *v, int B, int T, int H, int Hkv, int dh, int softmax,
                      float inv_scale);

/* TransformerLens' split attention inputs at one layer (attention_split.c
 * says what they are and how an edit is applied). */
typedef struct {
    float *mem;          /* NULL = no split input observed */
    float *tmp;          /* (BT,D) then 2 x BT statistics: hs_attn_split_apply's scratch */
    const float *src[3]; /* (BT,nh,D): the q, k, v input an edit may have changed
                          * (the observer returned 1 at it or at hook_attn_in);
                          * NULL: that input is resid_pre repeated */
} hs_split_in;

/* The split inputs an observer wants at layer l (B x T rows), each offered
 * at its hook point; *si says which came back edited (si->mem NULL: none
 * observed). acts' split scratch is grown and kept. Errors: HS_ERR_NOMEM,
 * HS_ERR_CALLBACK (an observer aborted). */
hs_status hs_attn_split_inputs(hs_hook_ctx *hc, const hs_model *m, int l, hs_acts *acts,
                              const hs_block_acts *ba, int B, int T, hs_split_in *si, hs_error *err);
/* After the ordinary projections: q, k or v of each head whose input in *si
 * was edited, recomputed from it into ba. Errors: HS_ERR_INPUT when
 * ln1_observed (TL's per-head LN1 points are not offered). */
hs_status hs_attn_split_apply(const hs_split_in *si, const hs_model *m, int l, hs_block_acts *ba,
                             int B, int T, int ln1_observed, hs_error *err);

#endif
