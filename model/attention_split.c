/*
 * model/attention_split.c -- TransformerLens' split attention inputs
 * (hook_attn_in, hook_q/k/v_input) for the attention step (attention.c):
 * offered to an observer, and the q, k or v of a head whose input was edited
 * recomputed from it (model_internal.h, hs_split_in).
 *
 * TransformerLens' split attention inputs (hook_attn_in, hook_q/k/v_input,
 * [B,T,H,D], resid_pre repeated per head; with grouped-query attention
 * hook_k_input and hook_v_input [B,T,Hkv,D] and no hook_attn_in, as TL's
 * blocks repeat along n_key_value_heads). When an observer wants one of
 * them it sees it; if it changed any (compared with the repeat, so a hook
 * that returns 1 without writing changes nothing), the q, k or v of every
 * head whose input changed is recomputed from that head's own input: LN1 per
 * head (its statistics from that input), then x W[h] + b[h]. The LN1 points
 * then stay unobserved (TL has them per head, [B,T,H,1]): an observer that
 * also wants them gets HS_ERR_INPUT. Called after the ordinary projections.
 */
#include "model.h"
#include "model_internal.h"

#include <stdio.h>
#include <string.h>

/* A repeat of this many bytes or more is written with streaming stores. */
#define REPEAT_STREAM_BYTES ((size_t)8 << 20)

/* A repeat's rows in parts over the pool (repeat_heads). */
typedef struct {
    float *out;
    const float *resid_pre;
    size_t BT;
    int nh, D, parts;
} repeat_job;

static hs_status repeat_part(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    (void)err;
    const repeat_job *r = ctx;
    const size_t i0 = r->BT * (size_t)j / (size_t)r->parts, i1 = r->BT * (size_t)(j + 1) / (size_t)r->parts;
    for (size_t i = i0; i < i1; i++)
        for (int h = 0; h < r->nh; h++)
            hs_store_streaming(r->out + (i * r->nh + h) * r->D, r->resid_pre + i * r->D, (size_t)r->D);
    hs_streaming_fence(); /* one fence a part, not one a row */
    return HS_OK;
}

/* out (BT,nh,D) <- resid_pre (BT,D) repeated over nh heads. A large repeat
 * (REPEAT_STREAM_BYTES and more) with streaming stores (hs_store_streaming:
 * the forward reads out again only when an observer edited it; GPT-2 small
 * at 1,024 tokens: 38 MB a layer repeated into 453 MB), its rows in one part
 * per worker of pool (NULL: this thread; one core alone does not reach the
 * memory's write rate); a small one (a toy's chunk: 0.5 MB) with ordinary
 * stores on this thread: the observer that asked for it (circuit runs'
 * receivers) reads it at once from cache, and streaming paid a store fence
 * per row and head (circuit: ~5% of its CPU). The same values either way. */
static void repeat_heads(hs_pool *pool, float *out, const float *resid_pre, size_t BT, int nh, int D)
{
    if (BT * (size_t)nh * (size_t)D * sizeof(float) < REPEAT_STREAM_BYTES) {
        for (size_t i = 0; i < BT; i++)
            for (int h = 0; h < nh; h++)
                memcpy(out + (i * nh + h) * D, resid_pre + i * D, (size_t)D * sizeof(float));
        return;
    }
    const int w = hs_pool_threads(pool);
    repeat_job r = {out, resid_pre, BT, nh, D, w > 1 && BT >= 64 ? w : 1};
    hs_error err;
    if (r.parts == 1) (void)repeat_part(&r, 0, 0, &err);
    else (void)hs_pool_for(pool, r.parts, repeat_part, &r, &err); /* cannot fail */
}

hs_status hs_attn_split_inputs(hs_hook_ctx *hc, const hs_model *m, int l, hs_acts *acts,
                              const hs_block_acts *ba, int B, int T, hs_split_in *si, hs_error *err)
{
    const hs_config *c = &m->cfg;
    const int D = c->d_model, H = c->n_heads;
    const int softmax = c->attn == HS_ATTN_SOFTMAX, grouped = hs_kv_heads(c) != H;
    const size_t BT = (size_t)B * T, HD = (size_t)H * D;
    static const char *const kinds[3] = {"q", "k", "v"};
    char nm[96];
    int want[4];
    snprintf(nm, sizeof nm, "blocks.%d.hook_attn_in", l);
    want[3] = !grouped && hs_hook_wants(hc, nm); /* not offered with GQA (hs_hook_points) */
    for (int x = 0; x < 3; x++) {
        snprintf(nm, sizeof nm, "blocks.%d.hook_%s_input", l, kinds[x]);
        want[x] = (softmax || x == 2) && hs_hook_wants(hc, nm);
    }
    si->mem = NULL;
    for (int x = 0; x < 3; x++) si->src[x] = NULL;
    if (!want[0] && !want[1] && !want[2] && !want[3]) return HS_OK;
    /* attn_in and in[x] each input (BT,H,D) (only those observed are
     * written), then (hs_attn_split_apply) tmp (BT,D) and statistics 2 x BT; an input
     * the observer left unchanged (returned 0) is never compared */
    /* acts' scratch for them, grown here and kept for the next forward
     * (GPT-2 small at 1,024 tokens: 151 MB a layer, which a fresh block
     * faulted in and cleared at every layer of every run) */
    const size_t need = BT * HD * 4 + BT * D + 2 * BT;
    if (acts->split_cap < need) {
        hs_floats_free(acts->split_mem);
        acts->split_mem = hs_floats_alloc(need);
        acts->split_cap = acts->split_mem ? need : 0;
    }
    float *mem = acts->split_mem;
    if (mem == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory for blocks.%d split inputs", l);
    float *attn_in = mem, *in[3];
    for (int x = 0; x < 3; x++) in[x] = attn_in + (size_t)(x + 1) * BT * HD;
    si->mem = mem;
    si->tmp = in[2] + BT * HD;
    int attn_edited = 0;
    if (want[3]) {
        snprintf(nm, sizeof nm, "blocks.%d.hook_attn_in", l);
        attn_in = hs_hook_dest(hc, nm, attn_in, 4, B, T, H, D); /* the observer's buffer */
        repeat_heads(hc->pool, attn_in, ba->resid_pre, BT, H, D);
        const int r = hs_hook(hc, nm, attn_in, 4, B, T, H, D);
        if (r < 0) return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", nm);
        attn_edited = r > 0;
    }
    for (int x = 0; x < 3; x++) {
        const int nh = x == 0 ? H : hs_kv_heads(c); /* the repeat's heads */
        /* each input starts as hook_attn_in (after its edit) or, with GQA
         * (no hook_attn_in), as resid_pre repeated over nh heads */
        if (!want[x]) {
            if (attn_edited) si->src[x] = attn_in;
            continue;
        }
        snprintf(nm, sizeof nm, "blocks.%d.hook_%s_input", l, kinds[x]);
        in[x] = hs_hook_dest(hc, nm, in[x], 4, B, T, nh, D);
        if (attn_edited && BT * HD * sizeof(float) >= REPEAT_STREAM_BYTES)
            hs_copy_streaming(in[x], attn_in, BT * HD);
        else if (attn_edited)
            memcpy(in[x], attn_in, BT * HD * sizeof(float));
        else
            repeat_heads(hc->pool, in[x], ba->resid_pre, BT, nh, D);
        const int r = hs_hook(hc, nm, in[x], 4, B, T, nh, D);
        if (r < 0) return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", nm);
        if (r > 0 || attn_edited) si->src[x] = in[x];
    }
    return HS_OK;
}

/* After the ordinary projections: q, k or v of each head whose split input
 * was edited (differs from resid_pre in some row), recomputed from it
 * (hs_attn_split_inputs). */
hs_status hs_attn_split_apply(const hs_split_in *si, const hs_model *m, int l, hs_block_acts *ba,
                             int B, int T, int ln1_observed, hs_error *err)
{
    const hs_config *c = &m->cfg;
    const hs_block_params *bp = &m->params.blocks[l];
    const int D = c->d_model, H = c->n_heads, dh = c->d_head;
    const size_t BT = (size_t)B * T;
    static const char *const kinds[3] = {"q", "k", "v"};
    float *tmp = si->tmp, *mean = tmp + BT * D, *rstd = mean + BT;
    const int group = H / hs_kv_heads(c);
    const int has_ln1 = hs_ln1_in_front(c);
    float *outs[3] = {ba->q, ba->k, ba->v};
    const float *bs[3] = {bp->b_Q, bp->b_K, bp->b_V};
    for (int x = 0; x < 3; x++) {
        if (c->attn != HS_ATTN_SOFTMAX && x < 2) continue;
        if (si->src[x] == NULL) continue; /* unchanged: resid_pre repeated */
        const int nh = x == 0 ? H : hs_kv_heads(c); /* heads of this input (GQA: k, v) */
        for (int h = 0; h < nh; h++) {
            int edited = 0;
            for (size_t i = 0; i < BT && !edited; i++)
                edited = memcmp(si->src[x] + (i * nh + h) * D, ba->resid_pre + i * D,
                                (size_t)D * sizeof(float)) != 0;
            if (!edited) continue;
            if (ln1_observed)
                return hs_fail(err, HS_ERR_INPUT, "blocks.%d: an edited hook_attn_in/hook_%s_input "
                               "runs ln1 per head, whose points ([B,T,H,1]) headscope does not "
                               "offer; do not hook blocks.%d.ln1.* in the same run", l, kinds[x], l);
            for (size_t i = 0; i < BT; i++)
                memcpy(tmp + i * D, si->src[x] + (i * nh + h) * D, (size_t)D * sizeof(float));
            if (has_ln1) {
                hs_norm_stats(mean, rstd, tmp, BT, D, c->norm, c->eps);
                hs_norm_apply_affine(tmp, tmp, mean, rstd, bp->ln1_w, bp->ln1_b, BT, D, 1, 1);
            }
            float *o = outs[x] + (size_t)h * dh;
            if (bs[x])
                for (size_t i = 0; i < BT; i++)
                    memcpy(o + i * nh * dh, bs[x] + (size_t)h * dh, (size_t)dh * sizeof(float));
            int ldw; /* hs_head_qkv takes a query head: h's first for a key/value head */
            const float *Wh = hs_head_qkv(m, l, x, x == 0 ? h : h * group, &ldw);
            hs_sgemm(0, 0, (int)BT, dh, D, 1.0f, tmp, D, Wh, ldw, bs[x] ? 1.0f : 0.0f, o, nh * dh);
        }
    }
    return HS_OK;
}

