/*
 * model/backward_acts.c -- the backward of a metric to the activations
 * (hs_backward_acts, model.h): the input-gradient chain of hs_backward
 * (model/backward.c) on the same kernels (hs_dx_product, hs_norm_backward,
 * hs_act_grad, hs_attn_backward), without weight gradients, calling a
 * gradient observer at TransformerLens's hook points, and stopping after the
 * deepest point it wants.
 *
 * The chain runs in stages, from the logits down: the unembedding and the
 * final norm; per layer from the last its MLP (resid_post .. resid_mid) and
 * its attention (attn_out .. resid_pre); the embedding. A stage runs when
 * the observer wants a point in it or in a later one.
 */
#include "model.h"
#include "model_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The points of a layer's two stages, in backward order ("%d" = layer). */
static const char *const MLP_POINTS[] = {"blocks.%d.hook_resid_post", "blocks.%d.hook_mlp_out",
                                         "blocks.%d.mlp.hook_post",   "blocks.%d.mlp.hook_pre_linear",
                                         "blocks.%d.mlp.hook_pre",    "blocks.%d.hook_mlp_in",
                                         "blocks.%d.hook_resid_mid"};
static const char *const ATTN_POINTS[] = {
    "blocks.%d.hook_attn_out",    "blocks.%d.attn.hook_result", "blocks.%d.attn.hook_z",
    "blocks.%d.attn.hook_pattern", "blocks.%d.attn.hook_v",     "blocks.%d.attn.hook_rot_k",
    "blocks.%d.attn.hook_rot_q",  "blocks.%d.attn.hook_k",     "blocks.%d.attn.hook_q",      "blocks.%d.hook_q_input",     "blocks.%d.hook_k_input",
    "blocks.%d.hook_v_input",     "blocks.%d.hook_attn_in",     "blocks.%d.hook_resid_pre"};
enum { N_MLP_POINTS = sizeof MLP_POINTS / sizeof MLP_POINTS[0],
       N_ATTN_POINTS = sizeof ATTN_POINTS / sizeof ATTN_POINTS[0] };

/* One backward's state: the model, the forward's activations, the scratch
 * (hs_grad_point), the observer. */
typedef struct {
    const hs_model *m;
    const hs_config *c;
    hs_acts *acts;
    hs_grad_scratch gs;
    const hs_observer *obs;
    int B, T;
    size_t BT;
    char nm[96];
} gbwd;

/* The name fmt (with layer l) into g->nm. */
static const char *gname(gbwd *g, const char *fmt, int l)
{
    snprintf(g->nm, sizeof g->nm, fmt, l);
    return g->nm;
}

/* 1 when the observer wants the point fmt of layer l. */
static int gwants(gbwd *g, const char *fmt, int l)
{
    const char *name = gname(g, fmt, l);
    return g->obs->wants == NULL || g->obs->wants(name, g->obs->ctx);
}

/* The observer at point fmt (layer l) with the gradient data of shape
 * (d0, d1[, d2[, d3]]), ndim of them, when it wants it. */
static hs_status gcall(gbwd *g, const char *fmt, int l, float *data, int ndim, int64_t d0,
                       int64_t d1, int64_t d2, int64_t d3, hs_error *err)
{
    if (!gwants(g, fmt, l)) return HS_OK;
    const int64_t shape[4] = {d0, d1, d2, d3};
    const int r = g->obs->fn(g->nm, shape, ndim, data, g->obs->ctx);
    if (r < 0) return hs_fail(err, HS_ERR_CALLBACK, "backward aborted by observer at %s", g->nm);
    if (r > 0)
        return hs_fail(err, HS_ERR_CALLBACK, "the gradient observer changed %s: gradients are read only",
                       g->nm);
    return HS_OK;
}

#define GCALL(g, fmt, l, data, ndim, d0, d1, d2, d3)                                    \
    do {                                                                                \
        hs_status s_ = gcall((g), (fmt), (l), (data), (ndim), (d0), (d1), (d2), (d3), err); \
        if (s_ != HS_OK) return s_;                                                     \
    } while (0)

/* The deepest stage the observer wants a point in: stage 0 the unembedding,
 * 1 + 2 (L-1-l) the MLP stage of layer l, 2 + 2 (L-1-l) its attention stage,
 * 2 L + 1 the embedding; -1 when it wants none. */
static int deepest_stage(gbwd *g)
{
    const int L = g->c->n_layers;
    if (gwants(g, "hook_embed", 0) || (hs_pos_added(g->c) && gwants(g, "hook_pos_embed", 0)))
        return 2 * L + 1;
    for (int l = 0; l < L; l++) {
        for (int i = 0; i < N_ATTN_POINTS; i++)
            if (gwants(g, ATTN_POINTS[i], l)) return 2 + 2 * (L - 1 - l);
        for (int i = 0; i < N_MLP_POINTS; i++)
            if (gwants(g, MLP_POINTS[i], l)) return 1 + 2 * (L - 1 - l);
    }
    return gwants(g, "unembed.hook_in", 0) ? 0 : -1;
}

/* Stage 0: dlnf = dlogits W_U^T (unembed.hook_in), dresid = d(the final
 * residual) through the final norm. */
static hs_status stage_unembed(gbwd *g, const float *dlogits, hs_error *err)
{
    const hs_config *c = g->c;
    const hs_params *P = &g->m->params;
    const int D = c->d_model;
    float *dlnf = g->gs.dlnf, *dresid = g->gs.dresid;
    hs_unembed_dx(dlnf, dlogits, g->m, g->acts, g->BT);
    GCALL(g, "unembed.hook_in", 0, dlnf, 3, g->B, g->T, D, 0);
    const float *final_resid = g->acts->blocks[c->n_layers - 1].resid_post;
    if (c->ln_final && c->norm != HS_NORM_NONE) {
        memset(dresid, 0, g->BT * D * sizeof(float));
        hs_norm_backward(dresid, NULL, NULL, dlnf, final_resid, P->ln_final_w, g->acts->lnf_mean,
                         g->acts->lnf_rstd, g->BT, D, c->norm);
    } else {
        memcpy(dresid, dlnf, g->BT * D * sizeof(float));
    }
    return HS_OK;
}

/* The MLP stage of layer l: dresid = d(resid_post) in, d(resid_mid) out
 * (parallel_attn_mlp: d(resid_post) out, the MLP's gradient to resid_pre
 * in dside for the attention stage to add; norm_place post: through LN2
 * first, hs_post_norm_backward). */
static hs_status stage_mlp(gbwd *g, int l, hs_error *err)
{
    const hs_config *c = g->c;
    const hs_block_acts *ba = &g->acts->blocks[l];
    const hs_block_params *bp = &g->m->params.blocks[l];
    const int D = c->d_model, M = c->d_mlp, B = g->B, T = g->T;
    const int post = c->norm_place == HS_NORM_POST, par = c->parallel_attn_mlp;
    const size_t BT = g->BT;
    GCALL(g, "blocks.%d.hook_resid_post", l, g->gs.dresid, 3, B, T, D, 0);
    if (M == 0) return HS_OK;
    if (post)
        hs_post_norm_backward(&g->gs.dresid, &g->gs.dside, NULL, NULL, ba->sum_mlp, bp->ln2_w,
                              ba->ln2_mean, ba->ln2_rstd, BT, D, c->norm);
    float *dresid = g->gs.dresid, *dln = g->gs.dln, *dpost = g->gs.dpost, *dpre = g->gs.dpre;
    GCALL(g, "blocks.%d.hook_mlp_out", l, dresid, 3, B, T, D, 0);
    hs_dx_product(dpost, 0.0f, dresid, bp->W_out, hs_acts_wT(g->acts, c, l, 5), BT, M, D);
    GCALL(g, "blocks.%d.mlp.hook_post", l, dpost, 3, B, T, M, 0);
    if (c->gated_mlp) {
        hs_gated_grad(dpre, g->gs.dlin, dpost, g->acts, c, l, BT * M);
        GCALL(g, "blocks.%d.mlp.hook_pre_linear", l, g->gs.dlin, 3, B, T, M, 0);
        GCALL(g, "blocks.%d.mlp.hook_pre", l, dpre, 3, B, T, M, 0);
        hs_sgemm(0, 1, (int)BT, D, M, 1.0f, dpre, M, bp->W_gate, M, 0.0f, dln, D);
        hs_dx_product(dln, 1.0f, g->gs.dlin, bp->W_in, hs_acts_wT(g->acts, c, l, 4), BT, D, M);
    } else {
        hs_act_grad(dpre, dpost, g->acts, c, l, BT * M);
        GCALL(g, "blocks.%d.mlp.hook_pre", l, dpre, 3, B, T, M, 0);
        hs_dx_product(dln, 0.0f, dpre, bp->W_in, hs_acts_wT(g->acts, c, l, 4), BT, D, M);
    }
    /* d(mlp_in): ln2's backward alone, in dlnf (free after stage 0), when
     * observed; else accumulated into dresid as hs_backward does (into
     * dside, zeroed, when parallel) */
    const int own = gwants(g, "blocks.%d.hook_mlp_in", l);
    float *dsum = par ? g->gs.dside : dresid;
    if (par) memset(dsum, 0, BT * D * sizeof(float));
    float *din = own ? g->gs.dlnf : dsum;
    if (c->norm != HS_NORM_NONE && !post) {
        if (own) memset(din, 0, BT * D * sizeof(float));
        hs_norm_backward(din, NULL, NULL, dln, par ? ba->resid_pre : ba->resid_mid, bp->ln2_w,
                         ba->ln2_mean, ba->ln2_rstd, BT, D, c->norm);
    } else if (own) {
        memcpy(din, dln, BT * D * sizeof(float));
    } else {
        hs_add_long(dsum, dsum, dln, BT * D);
    }
    if (own) {
        GCALL(g, "blocks.%d.hook_mlp_in", l, din, 3, B, T, D, 0);
        hs_add_long(dsum, dsum, din, BT * D);
    }
    if (!par) GCALL(g, "blocks.%d.hook_resid_mid", l, dresid, 3, B, T, D, 0);
    return HS_OK;
}

/* The split inputs' gradients of layer l (hook_q/k/v_input, hook_attn_in
 * [B,T,H,D]): for each head h, d(the residual its query, key or value
 * reads) = ln1's backward (the forward's statistics) of dx[:, h] W[h]^T
 * (an NN product on the transposed weights where the backward made them,
 * hs_acts_wT, else A B^T on W[h]). Scratch: dlnf (free after stage 0) and
 * dln (free until the stage's own products) hold one head's rows, the
 * forward's acts->scratch the [B,T,H,D] result; hook_attn_in's sum its own. */
static hs_status stage_split_inputs(gbwd *g, int l, hs_error *err)
{
    static const char *const names[3] = {"blocks.%d.hook_q_input", "blocks.%d.hook_k_input",
                                         "blocks.%d.hook_v_input"};
    const hs_config *c = g->c;
    const hs_block_acts *ba = &g->acts->blocks[l];
    const hs_block_params *bp = &g->m->params.blocks[l];
    const int D = c->d_model, H = c->n_heads, dh = c->d_head;
    const int Hkv = hs_kv_heads(c), group = H / Hkv;
    const int softmax = c->attn == HS_ATTN_SOFTMAX, has_ln1 = hs_ln1_in_front(c);
    const size_t BT = g->BT, HDm = (size_t)H * D;
    /* GQA: hook_k/v_input have Hkv heads and there is no hook_attn_in (hs_hook_points) */
    int want[3], want_in = Hkv == H && gwants(g, "blocks.%d.hook_attn_in", l);
    for (int x = 0; x < 3; x++) want[x] = (softmax || x == 2) && gwants(g, names[x], l);
    if (!want[0] && !want[1] && !want[2] && !want_in) return HS_OK;
    float *out = g->acts->scratch, *tmp = g->gs.dlnf, *din = g->gs.dln, *sum = NULL;
    if (want_in && (sum = calloc(BT * HDm, sizeof(float))) == NULL)
        return hs_fail(err, HS_ERR_NOMEM, "out of memory for blocks.%d.hook_attn_in's gradient", l);
    const float *dx[3] = {g->gs.dq, g->gs.dk, g->gs.dv};
    hs_status s = HS_OK;
    for (int x = 0; x < 3 && s == HS_OK; x++) {
        if (!want[x] && !(want_in && (softmax || x == 2))) continue;
        const float *WT = hs_acts_wT(g->acts, c, l, x); /* (nh*dh, D): row block h is W[h]^T */
        const int nh = x == 0 ? H : Hkv, XD = nh * dh; /* the input's heads (GQA: k, v) */
        for (int h = 0; h < nh; h++) {
            int ldw; /* hs_head_qkv takes a query head: h's first for a key/value head */
            const float *Wh = hs_head_qkv(g->m, l, x, x == 0 ? h : h * group, &ldw);
            if (hs_sgemm_nn_jit(D, XD))
                hs_sgemm(0, 0, (int)BT, D, dh, 1.0f, dx[x] + (size_t)h * dh, XD, WT + (size_t)h * dh * D, D,
                         0.0f, tmp, D);
            else
                hs_sgemm(0, 1, (int)BT, D, dh, 1.0f, dx[x] + (size_t)h * dh, XD, Wh, ldw, 0.0f, tmp,
                         D);
            const float *src = tmp;
            if (has_ln1) {
                memset(din, 0, BT * D * sizeof(float));
                hs_norm_backward(din, NULL, NULL, tmp, ba->resid_pre, bp->ln1_w, ba->ln1_mean, ba->ln1_rstd,
                                 BT, D, c->norm);
                src = din;
            }
            for (size_t i = 0; i < BT; i++) {
                memcpy(out + (i * nh + h) * D, src + i * D, (size_t)D * sizeof(float));
                if (sum) hs_add_long(sum + (i * H + h) * D, sum + (i * H + h) * D, src + i * D, (size_t)D);
            }
        }
        if (want[x]) s = gcall(g, names[x], l, out, 4, g->B, g->T, nh, D, err);
    }
    if (s == HS_OK && sum) s = gcall(g, "blocks.%d.hook_attn_in", l, sum, 4, g->B, g->T, H, D, err);
    free(sum);
    return s;
}

/* The attention stage of layer l: dresid = d(resid_mid), or d(resid_post)
 * without an MLP, in; d(resid_pre) out (norm_place post: through LN1 first;
 * attn_replace: no skip; parallel: plus the MLP stage's dside). */
static hs_status stage_attn(gbwd *g, int l, hs_error *err)
{
    const hs_config *c = g->c;
    hs_acts *acts = g->acts;
    const hs_block_acts *ba = &acts->blocks[l];
    const hs_block_params *bp = &g->m->params.blocks[l];
    if (c->norm_place == HS_NORM_POST && c->ln1)
        hs_post_norm_backward(&g->gs.dresid, &g->gs.dside, NULL, NULL, ba->sum_attn, bp->ln1_w,
                              ba->ln1_mean, ba->ln1_rstd, g->BT, c->d_model, c->norm);
    const int D = c->d_model, H = c->n_heads, dh = c->d_head, HD = H * dh, B = g->B, T = g->T;
    const int softmax = c->attn == HS_ATTN_SOFTMAX;
    const size_t BT = g->BT;
    const hs_grad_scratch *gs = &g->gs;
    float *dresid = gs->dresid, *dln = gs->dln;
    GCALL(g, "blocks.%d.hook_attn_out", l, dresid, 3, B, T, D, 0);
    if (gwants(g, "blocks.%d.attn.hook_result", l)) { /* each head's result: d(attn_out) */
        float *rep = acts->scratch;                    /* (B,T,H,D) */
        for (size_t i = 0; i < BT; i++)
            for (int h = 0; h < H; h++)
                memcpy(rep + (i * H + h) * D, dresid + i * D, (size_t)D * sizeof(float));
        GCALL(g, "blocks.%d.attn.hook_result", l, rep, 4, B, T, H, D);
    }
    hs_dx_product(gs->dz, 0.0f, dresid, bp->W_O, hs_acts_wT(acts, c, l, 3), BT, HD, D);
    GCALL(g, "blocks.%d.attn.hook_z", l, gs->dz, 4, B, T, H, dh);
    /* acts->scores (B,H,T,T) is the forward's scratch: free now */
    float *dpattern = gwants(g, "blocks.%d.attn.hook_pattern", l) ? acts->scores : NULL;
    const int Hkv = hs_kv_heads(c), KD = Hkv * dh;
    hs_attn_backward(gs->dq, gs->dk, gs->dv, dpattern, gs->datt, gs->vT, gs->dz, ba->att, ba->q,
                     ba->k, ba->v, B, T, H, Hkv, dh, softmax, 1.0f / hs_attn_scale_at(c, l));
    if (dpattern) GCALL(g, "blocks.%d.attn.hook_pattern", l, dpattern, 4, B, H, T, T);
    GCALL(g, "blocks.%d.attn.hook_v", l, gs->dv, 4, B, T, Hkv, dh);
    if (c->pos == HS_POS_ROTARY) { /* d(rotated k, q), then rotated back to d(k, q) */
        GCALL(g, "blocks.%d.attn.hook_rot_k", l, gs->dk, 4, B, T, Hkv, dh);
        GCALL(g, "blocks.%d.attn.hook_rot_q", l, gs->dq, 4, B, T, H, dh);
        hs_rotary_apply(gs->dq, B, T, H, dh, c, acts->rope, 1);
        hs_rotary_apply(gs->dk, B, T, Hkv, dh, c, acts->rope, 1);
    }
    if (softmax) {
        GCALL(g, "blocks.%d.attn.hook_k", l, gs->dk, 4, B, T, Hkv, dh);
        GCALL(g, "blocks.%d.attn.hook_q", l, gs->dq, 4, B, T, H, dh);
    }
    hs_status s = stage_split_inputs(g, l, err);
    if (s != HS_OK) return s;
    /* d(ln1 out) = dq W_Q^T + dk W_K^T + dv W_V^T, then ln1's backward */
    int ldw;
    const float *Wp;
    if (softmax) {
        Wp = hs_qkv_packed(g->m, acts, l, 0, &ldw);
        hs_dx_product_ld(dln, 0.0f, gs->dq, Wp, ldw, hs_acts_wT(acts, c, l, 0), BT, D, HD);
        Wp = hs_qkv_packed(g->m, acts, l, 1, &ldw);
        hs_dx_product_ld(dln, 1.0f, gs->dk, Wp, ldw, hs_acts_wT(acts, c, l, 1), BT, D, KD);
    }
    Wp = hs_qkv_packed(g->m, acts, l, 2, &ldw);
    hs_dx_product_ld(dln, softmax ? 1.0f : 0.0f, gs->dv, Wp, ldw, hs_acts_wT(acts, c, l, 2), BT, D, KD);
    if (c->attn_replace) memset(dresid, 0, BT * D * sizeof(float)); /* no skip */
    if (hs_ln1_in_front(c))
        hs_norm_backward(dresid, NULL, NULL, dln, ba->resid_pre, bp->ln1_w, ba->ln1_mean, ba->ln1_rstd,
                         BT, D, c->norm);
    else
        hs_add_long(dresid, dresid, dln, BT * D);
    if (c->parallel_attn_mlp && c->d_mlp > 0) hs_add_long(dresid, dresid, gs->dside, BT * D);
    GCALL(g, "blocks.%d.hook_resid_pre", l, dresid, 3, B, T, D, 0);
    return HS_OK;
}

/* The embedding stage: d(x0) = dresid through the embedding norm (or as it
 * is), at hook_embed and hook_pos_embed (x0 = embed + pos_embed). */
static hs_status stage_embed(gbwd *g, hs_error *err)
{
    const hs_config *c = g->c;
    const int D = c->d_model;
    float *dx0 = g->gs.dresid;
    if (c->embed_norm) {
        dx0 = g->gs.dln;
        memset(dx0, 0, g->BT * D * sizeof(float));
        hs_norm_backward(dx0, NULL, NULL, g->gs.dresid, g->acts->x0, g->m->params.ln_embed_w,
                         g->acts->lne_mean, g->acts->lne_rstd, g->BT, D, c->norm);
    }
    GCALL(g, "hook_embed", 0, dx0, 3, g->B, g->T, D, 0);
    if (hs_pos_added(c)) GCALL(g, "hook_pos_embed", 0, dx0, 3, g->B, g->T, D, 0);
    return HS_OK;
}

hs_status hs_backward_acts(const hs_model *m, hs_acts *acts, const float *dlogits,
                           const hs_observer *grad_obs, hs_error *err)
{
    if (acts->d_mem == NULL)
        return hs_fail(err, HS_ERR_INPUT, "backward to the activations: the activations were made "
                                          "without gradient scratch (hs_acts_create with_grad 0)");
    if (acts->lean)
        return hs_fail(err, HS_ERR_INPUT, "backward to the activations: the activations are the "
                                          "training layout (HS_ACTS_TRAIN), which keeps what "
                                          "hs_backward reads only; make them with HS_ACTS_GRAD");
    if (acts->b < 1 || acts->t < 1)
        return hs_fail(err, HS_ERR_INPUT, "backward to the activations: no forward has run");
    if (acts->logit_pos == HS_LOGITS_NONE)
        return hs_fail(err, HS_ERR_INPUT, "backward to the activations: the forward computed no logits "
                                          "(acts->logit_pos HS_LOGITS_NONE)");
    if (acts->logit_pos >= 0)
        return hs_fail(err, HS_ERR_INPUT, "backward to the activations: the forward computed the logits "
                                          "at one position only (acts->logit_pos %d)", acts->logit_pos);
    if (acts->edited)
        return hs_fail(err, HS_ERR_INPUT, "backward to the activations: the last forward's observer "
                                          "changed a point after the embedding; its activations are "
                                          "not the model's own computation");
    if (grad_obs == NULL || grad_obs->fn == NULL) return HS_OK;
    hs_attn_patterns_restore(m, acts); /* patterns an observer took (hs_run_with_cache) */
    gbwd g = {.m = m, .c = &m->cfg, .acts = acts, .obs = grad_obs, .B = acts->b, .T = acts->t};
    g.BT = (size_t)g.B * g.T;
    const int L = m->cfg.n_layers, deepest = deepest_stage(&g);
    if (deepest < 0) return HS_OK;
    hs_grad_point(acts, &m->cfg, 0, 0, g.B, &g.gs);
    hs_transpose_weights(m, acts);
    hs_status s = stage_unembed(&g, dlogits, err);
    for (int st = 1; s == HS_OK && st <= deepest && st <= 2 * L; st++) {
        const int l = L - 1 - (st - 1) / 2;
        s = st % 2 ? stage_mlp(&g, l, err) : stage_attn(&g, l, err);
    }
    if (s == HS_OK && deepest == 2 * L + 1) s = stage_embed(&g, err);
    return s;
}
