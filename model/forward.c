/*
 * model/forward.c -- activations, the kernels' forward passes, the
 * orchestrating forward with its observer, and cross-entropy.
 *
 * Kernels are plain functions (outputs first, then inputs, weights, dims);
 * hs_forward calls the observer between them at the TransformerLens-named
 * points documented in model.h. With no observer no point is materialised
 * beyond what backward needs.
 */
#include "model.h"
#include "model_internal.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Activations: the layout table (model_internal.h)                          */

/* Floats per sequence at T positions. */
/* (FIXED_*: one per batch part, not per sequence: t*t, t*H*dh, D*H*dh) */
typedef enum { SZ_TD, SZ_T, SZ_THD, SZ_HTT, SZ_TM, SZ_TV, SZ_TX, SZ_FIXED_TT, SZ_FIXED_THD, SZ_FIXED_W } slot_size;
/* Where a slot's pointer lives. */
typedef enum { IN_ACTS, IN_BLOCK, IN_GRAD } slot_home;

typedef struct {
    slot_home home;
    slot_size size;
    size_t field;  /* offsetof in hs_acts, hs_block_acts or hs_grad_scratch */
} act_slot;

#define A(f, sz) {IN_ACTS, sz, offsetof(hs_acts, f)}
#define L(f, sz) {IN_BLOCK, sz, offsetof(hs_block_acts, f)}
#define G(f, sz) {IN_GRAD, sz, offsetof(hs_grad_scratch, f)}
/* In memory order: the embedding, every layer's block (L slots, repeated per
 * layer), the end; then the backward's scratch in d_mem. */
static const act_slot ACT_SLOTS[] = {
    A(embed, SZ_TD), A(pos_embed, SZ_TD), A(x0, SZ_TD), A(lne_mean, SZ_T), A(lne_rstd, SZ_T),
    L(resid_pre, SZ_TD), L(ln1_out, SZ_TD), L(ln1_mean, SZ_T), L(ln1_rstd, SZ_T),
    L(q, SZ_THD), L(k, SZ_THD), L(v, SZ_THD), L(att, SZ_HTT), L(z, SZ_THD),
    L(attn_out, SZ_TD), L(resid_mid, SZ_TD), L(ln2_out, SZ_TD), L(ln2_mean, SZ_T),
    L(ln2_rstd, SZ_T), L(mlp_pre, SZ_TM), L(mlp_post, SZ_TM), L(resid_post, SZ_TD),
    A(lnf_out, SZ_TD), A(lnf_mean, SZ_T), A(lnf_rstd, SZ_T), A(logits, SZ_TV), A(probs, SZ_TV),
    A(scratch, SZ_TX), A(scores, SZ_HTT),
    G(dresid, SZ_TD), G(dln, SZ_TD), G(dlnf, SZ_TD), G(dz, SZ_THD), G(dq, SZ_THD),
    G(dk, SZ_THD), G(dv, SZ_THD), G(dpre, SZ_TM), G(dpost, SZ_TM), G(dlogits, SZ_TV),
    G(datt, SZ_FIXED_TT), G(vT, SZ_FIXED_THD), G(dwpack, SZ_FIXED_W),
};
#undef A
#undef L
#undef G
enum { N_SLOTS = sizeof ACT_SLOTS / sizeof ACT_SLOTS[0] };
_Static_assert(sizeof(hs_block_acts) == 17 * sizeof(float *),
               "a buffer added to hs_block_acts must be added to ACT_SLOTS");
_Static_assert(sizeof(hs_grad_scratch) == 13 * sizeof(float *),
               "a buffer added to hs_grad_scratch must be added to ACT_SLOTS");

/* Floats of one sequence of a slot at T positions (SZ_FIXED_*: the whole). */
static size_t slot_floats(const hs_config *c, slot_size sz, size_t T)
{
    const size_t D = (size_t)c->d_model, H = (size_t)c->n_heads, dh = (size_t)c->d_head,
                 M = (size_t)c->d_mlp, V = (size_t)c->d_vocab;
    size_t x = H * D > D ? H * D : D; /* scratch: (T,H,D), (T,max(D,M)) or (H*dh,T) */
    if (M > x) x = M;
    if (H * dh > x) x = H * dh;
    switch (sz) {
    case SZ_TD: return T * D;
    case SZ_T: return T;
    case SZ_THD: return T * H * dh;
    case SZ_HTT: return H * T * T;
    case SZ_TM: return T * M;
    case SZ_TV: return T * V;
    case SZ_TX: return T * x;
    case SZ_FIXED_TT: return T * T;
    case SZ_FIXED_THD: return T * H * dh;
    case SZ_FIXED_W: return D * H * dh;
    }
    return 0;
}

/* The pointer of slot s (layer l for IN_BLOCK) in a / g. */
static float **slot_ptr(const act_slot *s, hs_acts *a, hs_grad_scratch *g, int l)
{
    char *base = s->home == IN_ACTS    ? (char *)a
                 : s->home == IN_BLOCK ? (char *)&a->blocks[l]
                                       : (char *)g;
    return (float **)(void *)(base + s->field);
}

/* Points the activation slots (grad = 0; a block's slots once per layer,
 * layer after layer) or the backward's (grad = 1) at B sequences of T
 * positions from p on, in table order, and the backward's fixed slots
 * (SZ_FIXED_*: one set per batch part) from pf on; returns the floats used
 * from p, and in *n_fixed (may be NULL) those from pf. With p NULL only
 * counts. Every slot starts on a cache line (hs_floats_alloc) when p and pf
 * do: an activation slot is rounded up to whole lines, and so is a fixed
 * one; the scratch's per-sequence slots are not (they stay contiguous, so
 * floats per sequence are the count at B = 1), and start on a line when
 * B T is a multiple of 16, as every batch part but the last is. */
static size_t point_slots(hs_acts *a, hs_grad_scratch *g, const hs_config *c, int grad, size_t B,
                          size_t T, float *p, float *pf, size_t *n_fixed)
{
    size_t n = 0, nf = 0;
    for (int i = 0; i < N_SLOTS;) {
        int end = i + 1; /* [i, end): one slot, or a block's run of slots */
        while (ACT_SLOTS[i].home == IN_BLOCK && end < N_SLOTS && ACT_SLOTS[end].home == IN_BLOCK)
            end++;
        const int n_rep = ACT_SLOTS[i].home == IN_BLOCK ? c->n_layers : 1;
        if ((ACT_SLOTS[i].home == IN_GRAD) == grad)
            for (int l = 0; l < n_rep; l++)
                for (int k = i; k < end; k++) {
                    const act_slot *sk = &ACT_SLOTS[k];
                    if (sk->size >= SZ_FIXED_TT) { /* the SZ_FIXED_* */
                        if (p) *slot_ptr(sk, a, g, l) = pf + nf;
                        nf += hs_floats_round(slot_floats(c, sk->size, T));
                    } else {
                        if (p) *slot_ptr(sk, a, g, l) = p + n;
                        n += B * slot_floats(c, sk->size, T);
                        if (!grad) n = hs_floats_round(n);
                    }
                }
        i = end;
    }
    if (n_fixed) *n_fixed = nf;
    return n;
}

hs_acts hs_acts_view(const hs_acts *a, const hs_config *c, int b0, int t)
{
    hs_acts v = *a;
    for (int i = 0; i < N_SLOTS; i++) {
        const act_slot *s = &ACT_SLOTS[i];
        if (s->home == IN_GRAD) continue;
        const size_t off = (size_t)b0 * slot_floats(c, s->size, (size_t)t);
        for (int l = 0; l < (s->home == IN_BLOCK ? c->n_layers : 1); l++)
            *slot_ptr(s, &v, NULL, l) += off;
    }
    if (v.dact_mem) v.dact_mem += (size_t)b0 * t * c->d_mlp;
    return v;
}

/* The backward's scratch: floats per sequence and per part (its fixed
 * slots, whole cache lines) at t positions. */
static void grad_sizes(const hs_config *c, size_t t, size_t *per_seq, size_t *per_part)
{
    *per_seq = point_slots(NULL, &(hs_grad_scratch){0}, c, 1, 1, t, NULL, NULL, per_part);
}

void hs_grad_point(const hs_acts *a, const hs_config *c, int part, int b0, int b,
                   hs_grad_scratch *g)
{
    HS_ASSERT(part >= 0 && part < HS_GRAD_PARTS && b0 >= 0 && b0 + b <= a->B);
    size_t per_seq, per_part;
    grad_sizes(c, (size_t)a->t, &per_seq, &per_part);
    /* the parts' fixed slots first (part p's from p * per_part: on a cache
     * line, per_part being whole lines), then the sequences (sequence s from
     * HS_GRAD_PARTS * per_part + s * per_seq: part p's b from its b0) */
    float *fixed = a->d_mem + (size_t)part * per_part;
    float *seqs = a->d_mem + HS_GRAD_PARTS * per_part + (size_t)b0 * per_seq;
    size_t n = point_slots(NULL, g, c, 1, (size_t)b, (size_t)a->t, seqs, fixed, NULL);
    HS_ASSERT((size_t)(seqs - a->d_mem) + n <= a->n_d_floats);
}

hs_status hs_acts_create(const hs_config *cfg, int B, int T, int with_grad, hs_acts **out,
                         hs_error *err)
{
    *out = NULL;
    if (B < 1 || T < 1 || T > cfg->n_ctx)
        return hs_fail(err, HS_ERR_INPUT, "activations: batch %d x %d positions invalid (n_ctx %d)",
                       B, T, cfg->n_ctx);
    hs_acts *a = calloc(1, sizeof *a);
    if (!a) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    a->B = B;
    a->T = T;
    a->logit_pos = -1;
    const size_t wpack = (size_t)cfg->n_layers * 3 * cfg->d_model * cfg->n_heads * cfg->d_head;
    const size_t n = point_slots(a, NULL, cfg, 0, (size_t)B, (size_t)T, NULL, NULL, NULL);
    a->n_floats = n + wpack; /* + packed W_Q/K/V at the end (hs_acts_wpack) */
    a->mem = hs_floats_alloc(a->n_floats);
    if (!a->mem) {
        free(a);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory for activations (%zu floats)", n);
    }
    point_slots(a, NULL, cfg, 0, (size_t)B, (size_t)T, a->mem, NULL, NULL);
    if (with_grad) {
        /* the backward's scratch (every batch part's fixed slots, then the
         * batch's per-sequence slots: hs_grad_point), then the forward's
         * act'(mlp_pre) per layer (hs_acts_dact), then the backward's
         * transposed weights (hs_acts_wT) */
        size_t per_seq, per_part;
        grad_sizes(cfg, (size_t)T, &per_seq, &per_part);
        const size_t scratch = hs_floats_round((size_t)B * per_seq + HS_GRAD_PARTS * per_part);
        a->n_d_floats = scratch + (size_t)cfg->n_layers * B * T * cfg->d_mlp + hs_wT_floats(cfg);
        a->d_mem = hs_floats_alloc(a->n_d_floats);
        if (!a->d_mem) {
            hs_acts_destroy(a);
            return hs_fail(err, HS_ERR_NOMEM, "out of memory for gradients of activations");
        }
        a->dact_mem = a->d_mem + scratch;
    }
    *out = a;
    return HS_OK;
}

void hs_acts_destroy(hs_acts *a)
{
    if (a == NULL) return;
    if (a->own_pool) hs_pool_destroy(a->pool);
    hs_floats_free(a->mem);
    hs_floats_free(a->d_mem);
    free(a);
}

/* ------------------------------------------------------------------------ */
/* Kernels                                                                   */

/* out (N,D), mean (N), rstd (N) <- norm of inp (N,D). The affine part (w, b)
 * is applied after it (norm_apply_affine, fused unless observed) so the observer can see the normalised
 * value before it, as TransformerLens' hook_normalized. RMS: mean = 0. */
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

/* out (N,D) = (inp - mean) * rstd, then (if affine) * w (+ b): the same
 * operations in the same order whether or not the observer sits between
 * the normalisation and the affine part. w, b may be NULL. */
HS_CLONES
static void norm_apply_affine(float *out, const float *inp, const float *mean, const float *rstd,
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
    norm_apply_affine(out, inp, mean, rstd, NULL, NULL, N, D, 1, 0);
}

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

/* out (N, OC) += bias (OC) on every row: what every product of the forward
 * does after its beta-0 product, so the fused passes below give its bits. */
HS_CLONES
static void add_bias_rows(float *out, const float *bias, size_t N, int OC)
{
    for (size_t i = 0; i < N; i++) hs_add(out + i * (size_t)OC, out + i * (size_t)OC, bias, (size_t)OC);
}

/* out (N, OC) = inp (N, C) @ W (C, OC), then + bias (OC) (may be NULL). */
void hs_matmul_forward(float *out, const float *inp, const float *W, const float *bias, size_t N,
                       int C, int OC)
{
    hs_sgemm(0, 0, (int)N, OC, C, 1.0f, inp, C, W, OC, 0.0f, out, OC);
    if (bias) add_bias_rows(out, bias, N, OC);
}

/* The no-observer forward's fused passes, with the bits of add_bias_rows
 * followed by the separate pass they replace (float + commutes exactly):
 * y (N, D) += bias (may be NULL), then resid_out = resid + y, row by row
 * while y's row is in L1. keep_y = 0 leaves y without its bias (the MLP's
 * output, a scratch). */
HS_CLONES
static void bias_residual(float *resid_out, const float *resid, float *y, const float *bias,
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

/* out (N, H*dh) = inp (N, D) @ Wp (D, H*dh) + b (H*dh): all heads' projection
 * in one sgemm on the packed weights (hs_acts_wpack), C pre-filled with b. */
static void heads_project(float *out, const float *inp, const float *Wp, const float *b, size_t N,
                          int D, int H, int dh)
{
    const int HD = H * dh;
    if (b)
        for (size_t i = 0; i < N; i++) memcpy(out + i * (size_t)HD, b, (size_t)HD * sizeof(float));
    hs_sgemm(0, 0, (int)N, HD, D, 1.0f, inp, D, Wp, HD,
                b ? 1.0f : 0.0f, out, HD);
}

/* Packs W (H, D, dh) into Wp (D, H*dh). */
static void pack_heads(float *Wp, const float *W, int D, int H, int dh)
{
    for (int h = 0; h < H; h++)
        for (int d = 0; d < D; d++)
            memcpy(Wp + (size_t)d * H * dh + (size_t)h * dh, W + ((size_t)h * D + d) * dh,
                   (size_t)dh * sizeof(float));
}

/* Packs every layer's W_Q, W_K (softmax only) and W_V into acts. */
static void pack_qkv(const hs_model *m, hs_acts *acts)
{
    const hs_config *c = &m->cfg;
    for (int l = 0; l < c->n_layers; l++) {
        const hs_block_params *bp = &m->params.blocks[l];
        if (c->attn == HS_ATTN_SOFTMAX) {
            pack_heads(hs_acts_wpack(acts, c, l, 0), bp->W_Q, c->d_model, c->n_heads, c->d_head);
            pack_heads(hs_acts_wpack(acts, c, l, 1), bp->W_K, c->d_model, c->n_heads, c->d_head);
        }
        pack_heads(hs_acts_wpack(acts, c, l, 2), bp->W_V, c->d_model, c->n_heads, c->d_head);
    }
}

/* out (n) = act(inp (n)): GELU x Phi(x) (exact erf to float precision,
 * model_simd.h) or ReLU. dact (may be NULL): GELU'(inp) for the backward. */
static void act_forward(float *out, float *dact, const float *inp, size_t n, hs_act act)
{
    if (act == HS_ACT_RELU) {
        for (size_t i = 0; i < n; i++) out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
        return;
    }
    if (dact)
        hs_gelu_forward_grad(out, dact, inp, n);
    else
        hs_gelu_forward(out, inp, n);
}

/* The no-observer MLP's first pass: pre (N, M) += bias (may be NULL), then
 * out = act(pre) (and dact, may be NULL), row by row while the row is in L1:
 * the bits of add_bias_rows and act_forward. */
HS_CLONES
static void bias_act_forward(float *out, float *dact, float *pre, const float *bias, size_t N,
                             int M, hs_act act)
{
    for (size_t i = 0; i < N; i++) {
        const size_t o = i * (size_t)M;
        if (bias) hs_add(pre + o, pre + o, bias, (size_t)M);
        act_forward(out + o, dact ? dact + o : NULL, pre + o, (size_t)M, act);
    }
}

/* scores (B,H,T,T) <- q.k * inv_scale (inv_scale = 1 / hs_attn_scale), j > i = -inf.
 * q,k (B,T,H,dh); kT (H*dh, T) scratch. Per sequence k is transposed once,
 * then per head S = q k^T is an NN product (hs_sgemm: libxsmm) over the
 * whole T x T tile, scaled and masked after. */
HS_CLONES
static void attn_scores(float *scores, float *kT, const float *q, const float *k, int B, int T,
                        int H, int dh, float inv_scale)
{
    const size_t HD = (size_t)H * dh;
    const hs_v8 vscale = HS_V8_SET1(inv_scale);
    hs_sgemm_plan qk;
    hs_sgemm_plan_init(&qk, 0, 0, T, T, dh, 1.0f, (int)HD, T, 0.0f, T);
    for (int b = 0; b < B; b++) {
        hs_transpose_rows(kT, k + (size_t)b * T * HD, T, (int)HD, HD);
        for (int h = 0; h < H; h++) {
            float *S = scores + ((size_t)b * H + h) * T * T;
            hs_sgemm_run(&qk, q + (size_t)b * T * HD + (size_t)h * dh, kT + (size_t)h * dh * T, S);
            for (int i = 0; i < T; i++) {
                float *Si = S + (size_t)i * T;
                int j = 0;
                for (; j + 8 <= i + 1; j += 8) {
                    hs_v8 x;
                    HS_V8_LOAD(x, Si + j);
                    x *= vscale;
                    HS_V8_STORE(Si + j, x);
                }
                for (; j <= i; j++) Si[j] *= inv_scale;
                for (; j < T; j++) Si[j] = -INFINITY;
            }
        }
    }
}

/* att (B,H,T,T) <- row softmax of scores over j <= i (full = 0; exact 0 above
 * the diagonal) or over the whole row (full = 1: an observer wrote a finite
 * score above the diagonal; TransformerLens softmaxes the whole hooked row).
 * A row whose maximum is not finite (all -inf, a +inf or a NaN) gets weights
 * 0, as TransformerLens' softmax NaN -> 0. */
static void softmax_rows_long(float *att, const float *scores, size_t rows, int T, int full)
{
    HS_SIMD_CALL(hs_softmax_rows_, att, scores, rows, T, full);
}

/* out (n) = exp(inp (n)) at the widest width the CPU runs (identical bits at
 * every width). */
static void exp_span(float *out, const float *inp, size_t n)
{
    HS_SIMD_CALL(hs_exp_span_, out, inp, n);
}

HS_CLONES
static void attn_softmax(float *att, const float *scores, int B, int H, int T, int full)
{
    if (T >= HS_SOFTMAX_LONG_T) { /* long rows: 16-lane sums (model_simd.h) */
        softmax_rows_long(att, scores, (size_t)B * H * T, T, full);
        return;
    }
    /* short rows, a (b, h) tile at a time: each row's maximum; the shifted
     * scores s - max over the whole row (above the diagonal -inf when full =
     * 0, so their exp is an exact 0); one exp over the tile; each row summed
     * in j order from 0 (the zeros change no bit) and scaled. A row whose
     * maximum is not finite or that holds a NaN gets 0 everywhere. */
    _Static_assert(HS_SOFTMAX_LONG_T <= 32, "the short rows' bitmask below is one unsigned");
    const size_t TT = (size_t)T * T;
    (void)full; /* full = 0 rows hold -inf above the diagonal: same code */
    for (size_t t = 0; t < (size_t)B * H; t++) {
        const float *S = scores + t * TT;
        float *A = att + t * TT;
        unsigned bad = 0; /* bit i: row i gets zeros (T < 32) */
        for (int i = 0; i < T; i++) {
            const float *s = S + (size_t)i * T;
            float *a = A + (size_t)i * T;
            float mx;
            if (!hs_row_max(s, T, &mx)) {
                bad |= 1u << i;
                mx = 0.0f;
            }
            const hs_v8 vmx = HS_V8_SET1(mx);
            int j = 0;
            for (; j + 8 <= T; j += 8) {
                hs_v8 v;
                HS_V8_LOAD(v, s + j);
                v -= vmx;
                HS_V8_STORE(a + j, v);
            }
            for (; j < T; j++) a[j] = s[j] - mx;
        }
        exp_span(A, A, TT);
        for (int i = 0; i < T; i++) {
            float *a = A + (size_t)i * T;
            if (bad >> i & 1u) {
                memset(a, 0, (size_t)T * sizeof(float));
                continue;
            }
            float sum = 0.0f;
            for (int j = 0; j < T; j++) sum += a[j];
            const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
            const hs_v8 vinv = HS_V8_SET1(inv);
            int j = 0;
            for (; j + 8 <= T; j += 8) {
                hs_v8 v;
                HS_V8_LOAD(v, a + j);
                v *= vinv;
                HS_V8_STORE(a + j, v);
            }
            for (; j < T; j++) a[j] *= inv;
        }
    }
}

/* 1 if any entry of x (B,H,T,T) above the diagonal differs from `masked`
 * (-inf for scores, 0 for patterns): an observer wrote there. */
static int above_diagonal_edited(const float *x, int B, int H, int T, float masked)
{
    for (size_t r = 0; r < (size_t)B * H * T; r++) {
        const int i = (int)(r % (size_t)T);
        for (int j = i + 1; j < T; j++)
            if (!(x[r * T + j] == masked)) return 1;
    }
    return 0;
}

static void attn_uniform(float *att, int B, int H, int T)
{
    for (size_t r = 0; r < (size_t)B * H * T; r++) {
        int i = (int)(r % (size_t)T);
        float *a = att + r * T;
        float w = 1.0f / (float)(i + 1);
        for (int j = 0; j < T; j++) a[j] = j <= i ? w : 0.0f;
    }
}

/* z (B,T,H,dh) = att (B,H,T,T) @ v (B,T,H,dh) per (b,h): one NN product
 * (hs_sgemm: libxsmm) over every src, as TransformerLens mixes (weights an
 * observer wrote above the diagonal of hook_pattern are mixed in). */
static void attn_mix(float *z, const float *att, const float *v, int B, int T, int H, int dh)
{
    /* whole rows: above the diagonal the weights are exact zeros (or an
     * observer's, which TransformerLens mixes in) */
    const size_t HD = (size_t)H * dh;
    hs_sgemm_plan av;
    hs_sgemm_plan_init(&av, 0, 0, T, dh, T, 1.0f, T, (int)HD, 0.0f, (int)HD);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const size_t off = (size_t)b * T * HD + (size_t)h * dh;
            hs_sgemm_run(&av, att + ((size_t)b * H + h) * T * T, v + off, z + off);
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

/* ------------------------------------------------------------------------ */
/* The forward pass                                                           */

typedef struct {
    const hs_observer *obs;
    char name[64];
} hook_ctx;

/* Calls the observer at `name` if it wants it. Returns 1 if data changed,
 * 0 if not or not called, -1 to abort. */
static int hook(hook_ctx *hc, const char *name, float *data, int ndim, int64_t d0, int64_t d1,
                int64_t d2, int64_t d3)
{
    if (hc->obs == NULL) return 0;
    if (hc->obs->wants && !hc->obs->wants(name, hc->obs->ctx)) return 0;
    int64_t shape[4] = {d0, d1, d2, d3};
    int r = hc->obs->fn(name, shape, ndim, data, hc->obs->ctx);
    return r < 0 ? -1 : (r > 0);
}

static int wants(hook_ctx *hc, const char *name)
{
    if (hc->obs == NULL) return 0;
    return hc->obs->wants == NULL || hc->obs->wants(name, hc->obs->ctx);
}

#define HOOK(nm, data, ndim, d0, d1, d2, d3)                                               \
    do {                                                                                  \
        if (hook(hc, (nm), (data), (ndim), (d0), (d1), (d2), (d3)) < 0) {                 \
            return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", (nm)); \
        }                                                                                 \
    } while (0)

/* A norm with its two hook points: scale (N,1) then normalized (N,D), then
 * the affine part. prefix e.g. "blocks.0.ln1". */
static hs_status norm_forward_hooked(hook_ctx *hc, const char *prefix, float *out, float *mean,
                                     float *rstd, const float *inp, const float *w, const float *b,
                                     int B, int T, int D, hs_norm type, float eps, float *scratch,
                                     hs_error *err)
{
    size_t N = (size_t)B * T;
    hs_norm_stats(mean, rstd, inp, N, D, type, eps);
    char nm[96];
    if (hc->obs) {
        snprintf(nm, sizeof nm, "%s.hook_scale", prefix);
        if (wants(hc, nm)) {
            for (size_t i = 0; i < N; i++) scratch[i] = 1.0f / rstd[i];
            int r = hook(hc, nm, scratch, 3, B, T, 1, 0);
            if (r < 0) return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", nm);
            if (r > 0) /* only entries the observer changed: 1/(1/x) is not always x */
                for (size_t i = 0; i < N; i++)
                    if (scratch[i] != 1.0f / rstd[i]) rstd[i] = 1.0f / scratch[i];
        }
    }
    if (hc->obs) {
        snprintf(nm, sizeof nm, "%s.hook_normalized", prefix);
        if (wants(hc, nm)) {
            norm_apply_affine(out, inp, mean, rstd, w, b, N, D, 1, 0);
            if (hook(hc, nm, out, 3, B, T, D, 0) < 0)
                return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", nm);
            norm_apply_affine(out, inp, mean, rstd, w, b, N, D, 0, 1);
            return HS_OK;
        }
    }
    /* fused: the same per-element operations in the same order */
    norm_apply_affine(out, inp, mean, rstd, w, b, N, D, 1, 1);
    return HS_OK;
}

/* TransformerLens' split attention inputs (hook_attn_in, hook_q/k/v_input,
 * [B,T,H,D], resid_pre repeated per head). When an observer wants one of
 * them it sees it; if it changed any (compared with the repeat, so a hook
 * that returns 1 without writing changes nothing), the q, k or v of every
 * head whose input changed is recomputed from that head's own input: LN1 per
 * head (its statistics from that input), then x W[h] + b[h]. The LN1 points
 * then stay unobserved (TL has them per head, [B,T,H,1]): an observer that
 * also wants them gets HS_ERR_INPUT. Called after the ordinary projections. */
typedef struct {
    float *mem;          /* NULL = no split input observed */
    float *rep, *in[3];  /* (BT,H,D): the repeat of resid_pre; q, k, v inputs */
} split_in;

static hs_status split_inputs(hook_ctx *hc, const hs_model *m, int l, const hs_block_acts *ba,
                              int B, int T, split_in *si, hs_error *err)
{
    const hs_config *c = &m->cfg;
    const int D = c->d_model, H = c->n_heads;
    const int softmax = c->attn == HS_ATTN_SOFTMAX;
    const size_t BT = (size_t)B * T, HD = (size_t)H * D;
    static const char *const kinds[3] = {"q", "k", "v"};
    char nm[96];
    int want[4];
    snprintf(nm, sizeof nm, "blocks.%d.hook_attn_in", l);
    want[3] = wants(hc, nm);
    for (int x = 0; x < 3; x++) {
        snprintf(nm, sizeof nm, "blocks.%d.hook_%s_input", l, kinds[x]);
        want[x] = (softmax || x == 2) && wants(hc, nm);
    }
    si->mem = NULL;
    if (!want[0] && !want[1] && !want[2] && !want[3]) return HS_OK;
    /* rep (BT,H,D) the repeat, attn_in and in[x] each input, then (split_apply)
     * tmp (BT,D) and statistics 2 x BT */
    float *mem = malloc((BT * HD * 5 + BT * D + 2 * BT) * sizeof(float));
    if (mem == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory for blocks.%d split inputs", l);
    float *rep = mem, *attn_in = rep + BT * HD;
    si->mem = mem;
    si->rep = rep;
    for (int x = 0; x < 3; x++) si->in[x] = attn_in + (size_t)(x + 1) * BT * HD;
    for (size_t i = 0; i < BT; i++)
        for (int h = 0; h < H; h++)
            memcpy(rep + (i * H + h) * D, ba->resid_pre + i * D, (size_t)D * sizeof(float));
    memcpy(attn_in, rep, BT * HD * sizeof(float));
    if (want[3]) {
        snprintf(nm, sizeof nm, "blocks.%d.hook_attn_in", l);
        if (hook(hc, nm, attn_in, 4, B, T, H, D) < 0)
            return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", nm);
    }
    for (int x = 0; x < 3; x++) {
        memcpy(si->in[x], attn_in, BT * HD * sizeof(float));
        if (!want[x]) continue;
        snprintf(nm, sizeof nm, "blocks.%d.hook_%s_input", l, kinds[x]);
        if (hook(hc, nm, si->in[x], 4, B, T, H, D) < 0)
            return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", nm);
    }
    return HS_OK;
}

/* After the ordinary projections: q, k or v of each head whose split input
 * was edited, recomputed from it (split_inputs). */
static hs_status split_apply(const split_in *si, const hs_model *m, int l, hs_block_acts *ba,
                             int B, int T, int ln1_observed, hs_error *err)
{
    const hs_config *c = &m->cfg;
    const hs_block_params *bp = &m->params.blocks[l];
    const int D = c->d_model, H = c->n_heads, dh = c->d_head;
    const size_t BT = (size_t)B * T, HD = (size_t)H * D;
    static const char *const kinds[3] = {"q", "k", "v"};
    float *tmp = si->in[2] + BT * HD, *mean = tmp + BT * D, *rstd = mean + BT;
    const int has_ln1 = c->ln1 && c->norm != HS_NORM_NONE;
    float *outs[3] = {ba->q, ba->k, ba->v};
    const float *Ws[3] = {bp->W_Q, bp->W_K, bp->W_V}, *bs[3] = {bp->b_Q, bp->b_K, bp->b_V};
    for (int x = 0; x < 3; x++) {
        if (c->attn != HS_ATTN_SOFTMAX && x < 2) continue;
        for (int h = 0; h < H; h++) {
            int edited = 0;
            for (size_t i = 0; i < BT && !edited; i++)
                edited = memcmp(si->in[x] + (i * H + h) * D, si->rep + (i * H + h) * D,
                                (size_t)D * sizeof(float)) != 0;
            if (!edited) continue;
            if (ln1_observed)
                return hs_fail(err, HS_ERR_INPUT, "blocks.%d: an edited hook_attn_in/hook_%s_input "
                               "runs ln1 per head, whose points ([B,T,H,1]) headscope does not "
                               "offer; do not hook blocks.%d.ln1.* in the same run", l, kinds[x], l);
            for (size_t i = 0; i < BT; i++)
                memcpy(tmp + i * D, si->in[x] + (i * H + h) * D, (size_t)D * sizeof(float));
            if (has_ln1) {
                hs_norm_stats(mean, rstd, tmp, BT, D, c->norm, c->eps);
                norm_apply_affine(tmp, tmp, mean, rstd, bp->ln1_w, bp->ln1_b, BT, D, 1, 1);
            }
            float *o = outs[x] + (size_t)h * dh;
            if (bs[x])
                for (size_t i = 0; i < BT; i++)
                    memcpy(o + i * H * dh, bs[x] + (size_t)h * dh, (size_t)dh * sizeof(float));
            hs_sgemm(0, 0, (int)BT, dh, D, 1.0f, tmp, D,
                        Ws[x] + (size_t)h * D * dh, dh, bs[x] ? 1.0f : 0.0f, o, H * dh);
        }
    }
    return HS_OK;
}

/* The forward pass over B sequences of acts (a view: its pointers may start
 * at a later sequence, hs_acts_view), calling the observer in hc if any. */
static hs_status forward_layers(const hs_model *m, hs_acts *acts, const int *tokens, int B,
                                int T, hook_ctx *hc, hs_error *err);

/* hook_tokens (token ids as floats [B,T]): an edit must leave ids in [0, V). */
static hs_status forward_body(const hs_model *m, hs_acts *acts, const int *tokens, int B, int T,
                              hook_ctx *hc, hs_error *err)
{
    const size_t BT = (size_t)B * T;
    if (!wants(hc, "hook_tokens")) return forward_layers(m, acts, tokens, B, T, hc, err);
    float *tf = malloc(BT * sizeof(float));
    int *edited = malloc(BT * sizeof(int));
    if (tf == NULL || edited == NULL) {
        free(tf);
        free(edited);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory for hook_tokens");
    }
    for (size_t i = 0; i < BT; i++) tf[i] = (float)tokens[i];
    hs_status st = HS_OK;
    int r = hook(hc, "hook_tokens", tf, 2, B, T, 0, 0);
    if (r < 0) st = hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at hook_tokens");
    for (size_t i = 0; i < BT && st == HS_OK; i++) {
        const float v = tf[i];
        if (!(v >= 0.0f && v < (float)m->cfg.d_vocab && v == floorf(v)))
            st = hs_fail(err, HS_ERR_INPUT, "hook_tokens: value %g at index %zu is not a token id "
                         "in [0, %d)", (double)v, i, m->cfg.d_vocab);
        else
            edited[i] = (int)v;
    }
    if (st == HS_OK) st = forward_layers(m, acts, r > 0 ? edited : tokens, B, T, hc, err);
    free(tf);
    free(edited);
    return st;
}

/* 1 when acts->logit_pos lets the last block run at one position after its
 * attention output: a position inside the run, no observer point from the
 * last block's hook_attn_out on, and room in acts->scratch for the compact
 * rows. */
static int last_block_at_one_position(const hs_model *m, const hs_acts *acts, int T,
                                      hook_ctx *hc)
{
    const hs_config *c = &m->cfg;
    const int l = c->n_layers - 1, p = acts->logit_pos;
    if (p < 0 || p >= T || c->embed_norm) return 0;
    const size_t D = (size_t)c->d_model;
    /* acts->scratch holds T * max(H*D, D, M) floats a sequence (ACT_SLOTS) */
    size_t x = (size_t)c->n_heads * D > D ? (size_t)c->n_heads * D : D;
    if ((size_t)c->d_mlp > x) x = (size_t)c->d_mlp;
    const size_t need = 7 * D + 2 * (size_t)c->d_mlp + (size_t)c->d_vocab + 2, have = (size_t)T * x;
    if (need > have) return 0;
    static const char *const late[] = {"hook_attn_out", "hook_resid_mid",
                                       "hook_mlp_in", "ln2.hook_scale", "ln2.hook_normalized",
                                       "mlp.hook_pre", "mlp.hook_post", "hook_mlp_out",
                                       "hook_resid_post"};
    char nm[96];
    for (size_t i = 0; i < sizeof late / sizeof late[0]; i++) {
        snprintf(nm, sizeof nm, "blocks.%d.%s", l, late[i]);
        if (wants(hc, nm)) return 0;
    }
    static const char *const tail[] = {"ln_final.hook_scale", "ln_final.hook_normalized",
                                       "unembed.hook_in", "logits"};
    for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++)
        if (wants(hc, tail[i])) return 0;
    return 1;
}

/* The last block after its attention output (attn_out, every position), the
 * final norm and the unembedding for the row at position p =
 * acts->logit_pos of each of the B sequences only: the same operations as
 * the full forward on a compact (B, .) copy in acts->scratch, then
 * logits[b, p] <- row b. Every other buffer from there on keeps stale values. */
static void last_block_at_one_position_run(const hs_model *m, hs_acts *acts, int B, int T)
{
    const hs_config *c = &m->cfg;
    const hs_params *P = &m->params;
    const int l = c->n_layers - 1, p = acts->logit_pos;
    const int D = c->d_model, M = c->d_mlp, V = c->d_vocab;
    const hs_block_acts *ba = &acts->blocks[l];
    const hs_block_params *bp = &P->blocks[l];
    const size_t nb = (size_t)B;
    float *ao = acts->scratch, *rm = ao + nb * D, *ln = rm + nb * D;
    float *mo = ln + nb * D, *rp = mo + nb * D, *lf = rp + nb * D, *pre = lf + nb * D;
    float *post = pre + nb * M, *lg = post + nb * M, *mean = lg + nb * V, *rstd = mean + nb;
    for (int b = 0; b < B; b++) {
        const size_t row = (size_t)b * T + p;
        memcpy(ao + (size_t)b * D, ba->attn_out + row * D, (size_t)D * sizeof(float));
        memcpy(rm + (size_t)b * D, ba->resid_pre + row * D, (size_t)D * sizeof(float));
    }
    hs_add_long(rm, rm, ao, nb * D);
    const float *after = rm;
    if (M > 0) {
        const float *ln2_in = rm;
        if (c->norm != HS_NORM_NONE) {
            hs_norm_stats(mean, rstd, rm, nb, D, c->norm, c->eps);
            norm_apply_affine(ln, rm, mean, rstd, bp->ln2_w, bp->ln2_b, nb, D, 1, 1);
            ln2_in = ln;
        }
        hs_matmul_forward(pre, ln2_in, bp->W_in, bp->b_in, nb, D, M);
        act_forward(post, NULL, pre, nb * M, c->act);
        hs_matmul_forward(mo, post, bp->W_out, bp->b_out, nb, M, D);
        hs_add_long(rp, rm, mo, nb * D);
        after = rp;
    }
    const float *fin = after;
    if (c->ln_final && c->norm != HS_NORM_NONE) {
        hs_norm_stats(mean, rstd, after, nb, D, c->norm, c->eps);
        norm_apply_affine(lf, after, mean, rstd, P->ln_final_w, P->ln_final_b, nb, D, 1, 1);
        fin = lf;
    }
    hs_matmul_forward(lg, fin, P->W_U, P->b_U, nb, D, V);
    for (int b = 0; b < B; b++)
        memcpy(acts->logits + ((size_t)b * T + p) * V, lg + (size_t)b * V, (size_t)V * sizeof(float));
}

static hs_status forward_layers(const hs_model *m, hs_acts *acts, const int *tokens, int B,
                                int T, hook_ctx *hc, hs_error *err)
{
    const hs_config *c = &m->cfg;
    const hs_params *P = &m->params;
    const int D = c->d_model, H = c->n_heads, dh = c->d_head, M = c->d_mlp, V = c->d_vocab;
    const size_t BT = (size_t)B * T;
    char nm[96];

    /* embedding */
    for (size_t i = 0; i < BT; i++) {
        memcpy(acts->embed + i * D, P->W_E + (size_t)tokens[i] * D, (size_t)D * sizeof(float));
    }
    HOOK("hook_embed", acts->embed, 3, B, T, D, 0);
    float *x0 = acts->x0;
    if (c->pos == HS_POS_LEARNED) {
        for (size_t i = 0; i < BT; i++)
            memcpy(acts->pos_embed + i * D, P->W_pos + (i % (size_t)T) * D, (size_t)D * sizeof(float));
        HOOK("hook_pos_embed", acts->pos_embed, 3, B, T, D, 0);
        hs_add_long(x0, acts->embed, acts->pos_embed, BT * D);
    } else {
        memcpy(x0, acts->embed, BT * D * sizeof(float));
    }
    float *resid = acts->blocks[0].resid_pre;
    if (c->embed_norm) {
        hs_status s = norm_forward_hooked(hc, "ln_embed", resid, acts->lne_mean, acts->lne_rstd, x0,
                                          P->ln_embed_w, P->ln_embed_b, B, T, D, c->norm, c->eps,
                                          acts->scratch, err);
        if (s != HS_OK) return s;
    } else {
        memcpy(resid, x0, BT * D * sizeof(float));
    }

    for (int l = 0; l < c->n_layers; l++) {
        hs_block_acts *ba = &acts->blocks[l];
        const hs_block_params *bp = &P->blocks[l];
        if (l > 0) memcpy(ba->resid_pre, acts->blocks[l - 1].resid_post, BT * D * sizeof(float));
        snprintf(nm, sizeof nm, "blocks.%d.hook_resid_pre", l);
        HOOK(nm, ba->resid_pre, 3, B, T, D, 0);

        split_in si = {NULL, NULL, {NULL, NULL, NULL}};
        if (hc->obs) {
            hs_status s = split_inputs(hc, m, l, ba, B, T, &si, err);
            if (s != HS_OK) {
                free(si.mem);
                return s;
            }
        }

        /* LN1 */
        if (c->ln1 && c->norm != HS_NORM_NONE) {
            snprintf(nm, sizeof nm, "blocks.%d.ln1", l);
            hs_status s = norm_forward_hooked(hc, nm, ba->ln1_out, ba->ln1_mean, ba->ln1_rstd,
                                              ba->resid_pre, bp->ln1_w, bp->ln1_b, B, T, D, c->norm,
                                              c->eps, acts->scratch, err);
            if (s != HS_OK) {
                free(si.mem);
                return s;
            }
        } else {
            memcpy(ba->ln1_out, ba->resid_pre, BT * D * sizeof(float));
        }

        /* Q, K, V, pattern */
        if (c->attn == HS_ATTN_SOFTMAX) {
            heads_project(ba->q, ba->ln1_out, hs_acts_wpack(acts, c, l, 0), bp->b_Q, BT, D, H, dh);
            heads_project(ba->k, ba->ln1_out, hs_acts_wpack(acts, c, l, 1), bp->b_K, BT, D, H, dh);
        }
        heads_project(ba->v, ba->ln1_out, hs_acts_wpack(acts, c, l, 2), bp->b_V, BT, D, H, dh);
        if (si.mem) {
            snprintf(nm, sizeof nm, "blocks.%d.ln1.hook_scale", l);
            int ln1_observed = c->ln1 && c->norm != HS_NORM_NONE && wants(hc, nm);
            snprintf(nm, sizeof nm, "blocks.%d.ln1.hook_normalized", l);
            ln1_observed |= c->ln1 && c->norm != HS_NORM_NONE && wants(hc, nm);
            hs_status s = split_apply(&si, m, l, ba, B, T, ln1_observed, err);
            free(si.mem);
            if (s != HS_OK) return s;
        }
        if (c->attn == HS_ATTN_SOFTMAX) {
            snprintf(nm, sizeof nm, "blocks.%d.attn.hook_q", l);
            HOOK(nm, ba->q, 4, B, T, H, dh);
            snprintf(nm, sizeof nm, "blocks.%d.attn.hook_k", l);
            HOOK(nm, ba->k, 4, B, T, H, dh);
        }
        snprintf(nm, sizeof nm, "blocks.%d.attn.hook_v", l);
        HOOK(nm, ba->v, 4, B, T, H, dh);
        if (c->attn == HS_ATTN_SOFTMAX) {
            attn_scores(acts->scores, acts->scratch, ba->q, ba->k, B, T, H, dh, 1.0f / hs_attn_scale(c));
            snprintf(nm, sizeof nm, "blocks.%d.attn.hook_attn_scores", l);
            int r = hook(hc, nm, acts->scores, 4, B, H, T, T);
            if (r < 0) return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", nm);
            attn_softmax(ba->att, acts->scores, B, H, T,
                         r > 0 && above_diagonal_edited(acts->scores, B, H, T, -INFINITY));
        } else {
            attn_uniform(ba->att, B, H, T);
        }
        snprintf(nm, sizeof nm, "blocks.%d.attn.hook_pattern", l);
        int rp = hook(hc, nm, ba->att, 4, B, H, T, T);
        if (rp < 0) return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", nm);
        attn_mix(ba->z, ba->att, ba->v, B, T, H, dh);
        snprintf(nm, sizeof nm, "blocks.%d.attn.hook_z", l);
        HOOK(nm, ba->z, 4, B, T, H, dh);

        /* output: all heads in one sgemm; per-head results only when asked */
        /* without an observer the bias is added in the residual's pass
         * (bias_residual); the last block at one position reads attn_out
         * whole, so it gets its bias here */
        const int fuse = hc->obs == NULL && !(l == c->n_layers - 1 && acts->logit_pos >= 0);
        hs_sgemm(0, 0, (int)BT, D, H * dh, 1.0f, ba->z, H * dh, bp->W_O, D, 0.0f, ba->attn_out, D);
        if (!fuse && bp->b_O) add_bias_rows(ba->attn_out, bp->b_O, BT, D);
        snprintf(nm, sizeof nm, "blocks.%d.attn.hook_result", l);
        if (wants(hc, nm)) {
            float *res = acts->scratch; /* (B,T,H,D) */
            for (int h = 0; h < H; h++)
                hs_sgemm(0, 0, (int)BT, D, dh, 1.0f,
                            ba->z + (size_t)h * dh, H * dh, bp->W_O + (size_t)h * dh * D, D, 0.0f,
                            res + (size_t)h * D, H * D);
            int r = hook(hc, nm, res, 4, B, T, H, D);
            if (r < 0) return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", nm);
            if (r > 0) {
                for (size_t i = 0; i < BT; i++) {
                    float *o = ba->attn_out + i * D;
                    for (int d = 0; d < D; d++) o[d] = bp->b_O ? bp->b_O[d] : 0.0f;
                    for (int h = 0; h < H; h++) {
                        const float *rr = res + (i * H + h) * D;
                        for (int d = 0; d < D; d++) o[d] += rr[d];
                    }
                }
            }
        }
        if (l == c->n_layers - 1 && last_block_at_one_position(m, acts, T, hc)) {
            last_block_at_one_position_run(m, acts, B, T);
            return HS_OK;
        }
        snprintf(nm, sizeof nm, "blocks.%d.hook_attn_out", l);
        HOOK(nm, ba->attn_out, 3, B, T, D, 0);
        float *after_attn = (M > 0) ? ba->resid_mid : ba->resid_post;
        if (fuse)
            bias_residual(after_attn, ba->resid_pre, ba->attn_out, bp->b_O, BT, D, 1);
        else
            hs_add_long(after_attn, ba->resid_pre, ba->attn_out, BT * D);

        if (M > 0) {
            snprintf(nm, sizeof nm, "blocks.%d.hook_resid_mid", l);
            HOOK(nm, ba->resid_mid, 3, B, T, D, 0);
            /* hook_mlp_in: the input of ln2 alone (a copy in ln2_out, normalised
             * in place), so an edit leaves the residual skip as it was */
            const float *ln2_in = ba->resid_mid;
            snprintf(nm, sizeof nm, "blocks.%d.hook_mlp_in", l);
            if (wants(hc, nm)) {
                memcpy(ba->ln2_out, ba->resid_mid, BT * D * sizeof(float));
                HOOK(nm, ba->ln2_out, 3, B, T, D, 0);
                ln2_in = ba->ln2_out;
            }
            if (c->norm != HS_NORM_NONE) {
                snprintf(nm, sizeof nm, "blocks.%d.ln2", l);
                hs_status s = norm_forward_hooked(hc, nm, ba->ln2_out, ba->ln2_mean, ba->ln2_rstd,
                                                  ln2_in, bp->ln2_w, bp->ln2_b, B, T, D,
                                                  c->norm, c->eps, acts->scratch, err);
                if (s != HS_OK) return s;
            } else if (ln2_in != ba->ln2_out) {
                memcpy(ba->ln2_out, ba->resid_mid, BT * D * sizeof(float));
            }
            hs_sgemm(0, 0, (int)BT, M, D, 1.0f, ba->ln2_out, D, bp->W_in, M, 0.0f, ba->mlp_pre, M);
            if (fuse) {
                bias_act_forward(ba->mlp_post, hs_acts_dact(acts, c, l), ba->mlp_pre, bp->b_in, BT,
                                 M, c->act);
            } else {
                if (bp->b_in) add_bias_rows(ba->mlp_pre, bp->b_in, BT, M);
                snprintf(nm, sizeof nm, "blocks.%d.mlp.hook_pre", l);
                HOOK(nm, ba->mlp_pre, 3, B, T, M, 0);
                act_forward(ba->mlp_post, hs_acts_dact(acts, c, l), ba->mlp_pre, BT * M, c->act);
                snprintf(nm, sizeof nm, "blocks.%d.mlp.hook_post", l);
                HOOK(nm, ba->mlp_post, 3, B, T, M, 0);
            }
            float *mlp_out = acts->scratch;
            hs_sgemm(0, 0, (int)BT, D, M, 1.0f, ba->mlp_post, M, bp->W_out, D, 0.0f, mlp_out, D);
            if (fuse) {
                bias_residual(ba->resid_post, ba->resid_mid, mlp_out, bp->b_out, BT, D, 0);
            } else {
                if (bp->b_out) add_bias_rows(mlp_out, bp->b_out, BT, D);
                snprintf(nm, sizeof nm, "blocks.%d.hook_mlp_out", l);
                HOOK(nm, mlp_out, 3, B, T, D, 0);
                hs_add_long(ba->resid_post, ba->resid_mid, mlp_out, BT * D);
            }
        }
        snprintf(nm, sizeof nm, "blocks.%d.hook_resid_post", l);
        HOOK(nm, ba->resid_post, 3, B, T, D, 0);
    }

    const float *final_resid = acts->blocks[c->n_layers - 1].resid_post;
    if (c->ln_final && c->norm != HS_NORM_NONE) {
        hs_status s = norm_forward_hooked(hc, "ln_final", acts->lnf_out, acts->lnf_mean,
                                          acts->lnf_rstd, final_resid, P->ln_final_w, P->ln_final_b,
                                          B, T, D, c->norm, c->eps, acts->scratch, err);
        if (s != HS_OK) return s;
    } else {
        memcpy(acts->lnf_out, final_resid, BT * D * sizeof(float));
    }
    HOOK("unembed.hook_in", acts->lnf_out, 3, B, T, D, 0);
    hs_matmul_forward(acts->logits, acts->lnf_out, P->W_U, P->b_U, BT, D, V);
    HOOK("logits", acts->logits, 3, B, T, V, 0);
    return HS_OK;
}

/* Sequences per 16-row unit of a batch of T positions: 16 / gcd(T, 16).
 * OpenBLAS's sgemm kernels handle rows in blocks of up to 16 (4 on this
 * machine's Haswell kernel), and a row in a partial block at the end of a
 * call can get other bits (1 ulp) than in a full one: found with B 2, T 5
 * (rows 5 of 10). With every part starting on a multiple of 16 rows each row
 * meets the same kernel as in one call. */
static int split_unit(int T)
{
    int g = 16;
    for (int t = T; g > 1 && t % 2 == 0; t /= 2) g /= 2;
    return g;
}

int hs_batch_parts(int B, int T, int parts)
{
    const int units = B / split_unit(T);
    if (parts > units) parts = units;
    return parts >= 2 ? parts : 1;
}

int hs_batch_part_start(int B, int T, int parts, int j)
{
    if (j >= parts) return B;
    const int g = split_unit(T);
    const int k = (int)(((long)B * j / parts + g / 2) / g) * g;
    return k < B ? k : B;
}

/* The parts of a batch split over the pool's workers (hs_forward). */
typedef struct {
    const hs_model *m;
    const hs_acts *acts;
    const int *tokens;
    int B, T, parts;
} fwd_split;

static hs_status fwd_part_run(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    const fwd_split *f = ctx;
    const int b0 = hs_batch_part_start(f->B, f->T, f->parts, j);
    const int b1 = hs_batch_part_start(f->B, f->T, f->parts, j + 1);
    if (b1 == b0) return HS_OK;
    hs_acts view = hs_acts_view(f->acts, &f->m->cfg, b0, f->T);
    hook_ctx hc = {NULL, {0}};
    return forward_body(f->m, &view, f->tokens + (size_t)b0 * f->T, b1 - b0, f->T, &hc, err);
}

hs_status hs_forward(const hs_model *m, hs_acts *acts, const int *tokens, int B, int T,
                     const hs_observer *observer, hs_error *err)
{
    const hs_config *c = &m->cfg;
    const int V = c->d_vocab;
    if (B < 1 || T < 1 || B > acts->B || T > acts->T)
        return hs_fail(err, HS_ERR_INPUT, "forward: batch %d x %d exceeds activations %d x %d", B, T,
                       acts->B, acts->T);
    if (T > c->n_ctx)
        return hs_fail(err, HS_ERR_INPUT, "forward: %d positions exceed n_ctx %d", T, c->n_ctx);
    const size_t BT = (size_t)B * T;
    for (size_t i = 0; i < BT; i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            return hs_fail(err, HS_ERR_INPUT, "forward: token id %d at index %zu out of range [0, %d)",
                           tokens[i], i, V);
    acts->b = B;
    acts->t = T;
    hook_ctx hc = {observer, {0}};
    pack_qkv(m, acts);
    const int parts = observer == NULL ? hs_batch_parts(B, T, hs_pool_threads(acts->pool)) : 1;
    if (parts >= 2) {
        /* one part of the batch per worker: every kernel works per row or
         * per sequence, and an sgemm gives a row the same bits when the rows
         * before it are a multiple of its kernel's unroll (hs_batch_parts), so
         * the values are those of one pass */
        fwd_split f = {m, acts, tokens, B, T, parts};
        return hs_pool_for(acts->pool, parts, fwd_part_run, &f, err);
    }
    return forward_body(m, acts, tokens, B, T, &hc, err);
}

/* The cross-entropy in HS_GRAD_PARTS fixed parts of the rows (not one per
 * worker), each summing its rows' losses in row order, the parts' sums added
 * in part order: the loss has the same bits for every pool. A part works in
 * blocks of CE_ROWS rows: every row shifted by its maximum, then one exp
 * over the block. */
#define CE_ROWS 64

typedef struct {
    const hs_acts *acts;
    const int *targets;
    int V;
    size_t rows;
    double total[HS_GRAD_PARTS];
    int n[HS_GRAD_PARTS];
} ce_job;

HS_CLONES
static hs_status ce_run(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    (void)err;
    ce_job *c = ctx;
    const int V = c->V;
    const size_t p0 = c->rows * (size_t)j / HS_GRAD_PARTS, p1 = c->rows * (size_t)(j + 1) / HS_GRAD_PARTS;
    float mx[CE_ROWS];
    for (size_t r0 = p0; r0 < p1; r0 += CE_ROWS) {
        const size_t r1 = r0 + CE_ROWS < p1 ? r0 + CE_ROWS : p1;
        for (size_t i = r0; i < r1; i++) {
            const float *lg = c->acts->logits + i * V;
            float *pr = c->acts->probs + i * V;
            float m = -INFINITY;
            for (int k = 0; k < V; k++)
                if (lg[k] > m) m = lg[k];
            mx[i - r0] = m;
            for (int k = 0; k < V; k++) pr[k] = lg[k] - m;
        }
        float *P = c->acts->probs + r0 * V;
        exp_span(P, P, (r1 - r0) * (size_t)V);
        for (size_t i = r0; i < r1; i++) {
            const float *lg = c->acts->logits + i * V;
            float *pr = c->acts->probs + i * V;
            double sum = 0.0;
            for (int k = 0; k < V; k++) sum += pr[k];
            const float inv = (float)(1.0 / sum);
            for (int k = 0; k < V; k++) pr[k] *= inv;
            if (c->targets[i] >= 0) {
                c->total[j] += -(lg[c->targets[i]] - mx[i - r0] - log(sum));
                c->n[j]++;
            }
        }
    }
    return HS_OK;
}

float hs_cross_entropy(const hs_model *m, hs_acts *acts, const int *targets, int *n_valid)
{
    ce_job c = {acts, targets, m->cfg.d_vocab, (size_t)acts->b * acts->t, {0.0}, {0}};
    hs_error err;
    /* the jobs cannot fail */
    (void)hs_pool_for(acts->pool, HS_GRAD_PARTS, ce_run, &c, &err);
    double total = 0.0;
    int n = 0;
    for (int j = 0; j < HS_GRAD_PARTS; j++) {
        total += c.total[j];
        n += c.n[j];
    }
    if (n_valid) *n_valid = n;
    return n > 0 ? (float)(total / n) : 0.0f;
}

void hs_final_logits(const hs_model *m, const float *resid, size_t N, float *scratch, float *logits)
{
    const hs_config *c = &m->cfg;
    const hs_params *P = &m->params;
    const int D = c->d_model;
    float *out = scratch, *mean = scratch + N * D, *rstd = mean + N;
    if (c->ln_final && c->norm != HS_NORM_NONE) {
        hs_norm_stats(mean, rstd, resid, N, D, c->norm, c->eps);
        norm_apply_affine(out, resid, mean, rstd, P->ln_final_w, P->ln_final_b, N, D, 1, 1);
    } else {
        memcpy(out, resid, N * D * sizeof(float));
    }
    hs_matmul_forward(logits, out, P->W_U, P->b_U, N, D, c->d_vocab);
}
