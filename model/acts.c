/*
 * model/acts.c -- the activation layout (model_internal.h): one table,
 * ACT_SLOTS, of every buffer of hs_acts and of the backward's scratch with
 * its size per sequence, and what it drives: the allocation
 * (hs_acts_create), the view one thread's part of a batch runs a forward on
 * (hs_acts_view) and the backward's scratch of a batch part (hs_grad_point).
 */
#include "model.h"
#include "model_internal.h"

#include <stddef.h>
#include <stdlib.h>

/* Floats per sequence at T positions. */
/* (FIXED_*: one per batch part, not per sequence: t*t, t*H*dh, D*H*dh) */
/* (SZ_TM_GATED, SZ_TD_POST, SZ_TD_POST_MLP, SZ_TD_SIDE: the size with the
 * block switch that needs the slot, no floats without it) */
typedef enum { SZ_TD, SZ_T, SZ_THD, SZ_TKD, SZ_HTT, SZ_TM, SZ_TV, SZ_TX, SZ_TM_GATED, SZ_TD_POST,
               SZ_TD_POST_MLP, SZ_TD_SIDE, SZ_FIXED_TT, SZ_FIXED_THD, SZ_FIXED_W } slot_size;
/* Where a slot's pointer lives. */
typedef enum { IN_ACTS, IN_BLOCK, IN_GRAD } slot_home;

/* What the training layout (HS_ACTS_TRAIN, acts->lean) does with a slot:
 * keeps it (LEAN_KEEP); one buffer for every layer, which the forward
 * overwrites layer after layer and the backward makes again where it reads
 * it (LEAN_SHARED: attn_out, read by nothing after the forward; ln1_out,
 * ln2_out, mlp_post under the conditions of lean_shared); resid_pre of layer
 * l > 0 is resid_post of layer l - 1 (LEAN_PREV_POST: the forward's copy
 * skipped); the forward's scores in d_mem's sequence region, free until the
 * backward (LEAN_IN_DMEM); the scratch at the no-observer forward's size
 * (LEAN_SMALL: T x max(D, H*dh), mlp_out and a sequence's k^T). */
typedef enum { LEAN_KEEP, LEAN_SHARED, LEAN_PREV_POST, LEAN_IN_DMEM, LEAN_SMALL } slot_lean;

typedef struct {
    slot_home home;
    slot_size size;
    size_t field;  /* offsetof in hs_acts, hs_block_acts or hs_grad_scratch */
    slot_lean lean;
} act_slot;

#define A(f, sz) {IN_ACTS, sz, offsetof(hs_acts, f), LEAN_KEEP}
#define L(f, sz) {IN_BLOCK, sz, offsetof(hs_block_acts, f), LEAN_KEEP}
#define LX(f, sz, x) {IN_BLOCK, sz, offsetof(hs_block_acts, f), x}
#define AX(f, sz, x) {IN_ACTS, sz, offsetof(hs_acts, f), x}
#define G(f, sz) {IN_GRAD, sz, offsetof(hs_grad_scratch, f), LEAN_KEEP}
/* In memory order: the embedding, every layer's block (L slots, repeated per
 * layer), the end; then the backward's scratch in d_mem. */
static const act_slot ACT_SLOTS[] = {
    A(embed, SZ_TD), A(pos_embed, SZ_TD), A(x0, SZ_TD), A(lne_mean, SZ_T), A(lne_rstd, SZ_T),
    LX(resid_pre, SZ_TD, LEAN_PREV_POST), LX(ln1_out, SZ_TD, LEAN_SHARED), L(ln1_mean, SZ_T),
    L(ln1_rstd, SZ_T), L(q, SZ_THD), L(k, SZ_TKD), L(v, SZ_TKD), L(att, SZ_HTT), L(z, SZ_THD),
    LX(attn_out, SZ_TD, LEAN_SHARED), L(resid_mid, SZ_TD), LX(ln2_out, SZ_TD, LEAN_SHARED),
    L(ln2_mean, SZ_T), L(ln2_rstd, SZ_T), L(mlp_pre, SZ_TM), LX(mlp_post, SZ_TM, LEAN_SHARED),
    L(resid_post, SZ_TD),
    L(mlp_pre_linear, SZ_TM_GATED), L(sum_attn, SZ_TD_POST), L(sum_mlp, SZ_TD_POST_MLP),
    A(lnf_out, SZ_TD), A(lnf_mean, SZ_T), A(lnf_rstd, SZ_T), A(logits, SZ_TV), A(probs, SZ_TV),
    AX(scratch, SZ_TX, LEAN_SMALL), AX(scores, SZ_HTT, LEAN_IN_DMEM),
    G(dresid, SZ_TD), G(dln, SZ_TD), G(dlnf, SZ_TD), G(dz, SZ_THD), G(dq, SZ_THD),
    G(dk, SZ_TKD), G(dv, SZ_TKD), G(dpre, SZ_TM), G(dpost, SZ_TM), G(dlogits, SZ_TV),
    G(dlin, SZ_TM_GATED), G(dside, SZ_TD_SIDE),
    G(datt, SZ_FIXED_TT), G(vT, SZ_FIXED_THD), G(dwpack, SZ_FIXED_W),
};
#undef A
#undef L
#undef LX
#undef AX
#undef G
enum { N_SLOTS = sizeof ACT_SLOTS / sizeof ACT_SLOTS[0] };
_Static_assert(sizeof(hs_block_acts) == 20 * sizeof(float *),
               "a buffer added to hs_block_acts must be added to ACT_SLOTS");
_Static_assert(sizeof(hs_grad_scratch) == 15 * sizeof(float *),
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
    case SZ_TKD: return T * (size_t)hs_kv_heads(c) * dh; /* k, v: key/value heads (GQA) */
    case SZ_HTT: return H * T * T;
    case SZ_TM: return T * M;
    case SZ_TV: return T * V;
    case SZ_TX: return T * x;
    case SZ_TM_GATED: return c->gated_mlp ? T * M : 0;
    case SZ_TD_POST: return c->norm_place == HS_NORM_POST ? T * D : 0;
    case SZ_TD_POST_MLP: return c->norm_place == HS_NORM_POST && M > 0 ? T * D : 0;
    case SZ_TD_SIDE: return c->norm_place == HS_NORM_POST || c->parallel_attn_mlp ? T * D : 0;
    case SZ_FIXED_TT: return T * T;
    case SZ_FIXED_THD: return T * H * dh;
    case SZ_FIXED_W: return D * H * dh;
    }
    return 0;
}

/* Floats of one sequence of slot s at T positions in the layout (lean:
 * HS_ACTS_TRAIN's, LEAN_SMALL). */
static size_t slot_n(const hs_config *c, const act_slot *s, size_t T, int lean)
{
    if (lean && s->lean == LEAN_SMALL) {
        size_t x = (size_t)c->d_model, hd = (size_t)c->n_heads * c->d_head;
        return T * (hd > x ? hd : x);
    }
    return slot_floats(c, s->size, T);
}

/* 1 when the training layout keeps one buffer of the LEAN_SHARED slot s for
 * every layer: the backward makes it again where it reads it
 * (hs_lean_ln1/ln2/post, model_internal.h); attn_out it never reads. */
static int lean_shared(const hs_config *c, const act_slot *s)
{
    if (s->field == offsetof(hs_block_acts, ln1_out)) return hs_lean_ln1(c);
    if (s->field == offsetof(hs_block_acts, ln2_out)) return hs_lean_ln2(c);
    if (s->field == offsetof(hs_block_acts, mlp_post)) return hs_lean_post(c);
    return s->field == offsetof(hs_block_acts, attn_out);
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
                          size_t T, float *p, float *pf, size_t *n_fixed, int lean)
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
                    if (lean && sk->lean == LEAN_IN_DMEM) continue; /* hs_acts_create */
                    if (lean && l > 0 &&
                        (sk->lean == LEAN_PREV_POST || (sk->lean == LEAN_SHARED && lean_shared(c, sk)))) {
                        if (p)
                            *slot_ptr(sk, a, g, l) = sk->lean == LEAN_PREV_POST ? a->blocks[l - 1].resid_post
                                                                                : *slot_ptr(sk, a, g, 0);
                        continue;
                    }
                    if (sk->size >= SZ_FIXED_TT) { /* the SZ_FIXED_* */
                        if (p) *slot_ptr(sk, a, g, l) = pf + nf;
                        nf += hs_floats_round(slot_floats(c, sk->size, T));
                    } else {
                        if (p) *slot_ptr(sk, a, g, l) = p + n;
                        n += B * slot_n(c, sk, T, lean);
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
        const size_t off = (size_t)b0 * slot_n(c, s, (size_t)t, a->lean);
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
    *per_seq = point_slots(NULL, &(hs_grad_scratch){0}, c, 1, 1, t, NULL, NULL, per_part, 0);
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
    size_t n = point_slots(NULL, g, c, 1, (size_t)b, (size_t)a->t, seqs, fixed, NULL, 0);
    HS_ASSERT((size_t)(seqs - a->d_mem) + n <= a->n_d_floats);
}

hs_status hs_acts_create(const hs_config *cfg, int B, int T, int with_grad, hs_acts **out,
                         hs_error *err)
{
    *out = NULL;
    if (B < 1 || T < 1 || T > cfg->n_ctx)
        return hs_fail(err, HS_ERR_INPUT, "activations: batch %d x %d positions invalid (n_ctx %d)",
                       B, T, cfg->n_ctx);
    if (with_grad < HS_ACTS_INFER || with_grad > HS_ACTS_TRAIN)
        return hs_fail(err, HS_ERR_INPUT, "activations: with_grad %d is not HS_ACTS_INFER, "
                                          "HS_ACTS_GRAD or HS_ACTS_TRAIN", with_grad);
    hs_acts *a = calloc(1, sizeof *a);
    if (!a) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    a->B = B;
    a->T = T;
    a->logit_pos = -1;
    const int lean = a->lean = with_grad == HS_ACTS_TRAIN;
    /* one sequence without gradients (inference: inspect, a prompt's run)
     * never splits (hs_batch_parts), so one layer's packed weights do */
    a->wpack_slots = B == 1 && !with_grad ? 1 : cfg->n_layers;
    const size_t wpack = (size_t)a->wpack_slots * 3 * cfg->d_model * cfg->n_heads * cfg->d_head;
    const size_t n = point_slots(a, NULL, cfg, 0, (size_t)B, (size_t)T, NULL, NULL, NULL, lean);
    a->n_floats = n + wpack; /* + packed W_Q/K/V at the end (hs_acts_wpack) */
    a->mem = hs_floats_alloc(a->n_floats);
    if (!a->mem) {
        free(a);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory for activations (%zu floats)", n);
    }
    point_slots(a, NULL, cfg, 0, (size_t)B, (size_t)T, a->mem, NULL, NULL, lean);
    hs_status ps = hs_positions_tables(cfg, T, &a->rope, &a->pos_table, err);
    if (ps != HS_OK) {
        hs_acts_destroy(a);
        return ps;
    }
    if (with_grad) {
        /* the backward's scratch (every batch part's fixed slots, then the
         * batch's per-sequence slots: hs_grad_point; the training layout's
         * forward scores in the latter, so at least B x H x T x T floats),
         * then (HS_ACTS_GRAD) the forward's act'(mlp_pre) per layer
         * (hs_acts_dact), then the backward's transposed weights (hs_acts_wT) */
        size_t per_seq, per_part;
        grad_sizes(cfg, (size_t)T, &per_seq, &per_part);
        size_t seqs = (size_t)B * per_seq;
        const size_t scores = (size_t)B * cfg->n_heads * T * T;
        if (lean && scores > seqs) seqs = scores;
        const size_t scratch = hs_floats_round(seqs + HS_GRAD_PARTS * per_part);
        const size_t dact = lean ? 0 : (size_t)cfg->n_layers * B * T * cfg->d_mlp;
        a->n_d_floats = scratch + dact + hs_wT_floats(cfg);
        a->d_mem = hs_floats_alloc(a->n_d_floats);
        if (!a->d_mem) {
            hs_acts_destroy(a);
            return hs_fail(err, HS_ERR_NOMEM, "out of memory for gradients of activations");
        }
        if (!lean) a->dact_mem = a->d_mem + scratch;
        if (lean) a->scores = a->d_mem + HS_GRAD_PARTS * per_part;
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
    hs_floats_free(a->split_mem);
    hs_floats_free(a->rope);
    hs_floats_free(a->pos_table);
    free(a);
}
