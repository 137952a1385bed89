/*
 * model/forward.c -- the orchestrating forward with its observer, and
 * cross-entropy.
 *
 * hs_forward runs its steps in order: the embedding, each block (its
 * attention, model/attention.c; the residual; its MLP, model/norm_mlp.c),
 * the final norm and the unembedding, calling the observer between kernels
 * at the TransformerLens-named points documented in model.h. With no
 * observer no point is materialised beyond what backward needs, and the
 * batch splits over the pool's workers in parts that start on 16-row units
 * (hs_batch_parts), so every thread count gives the bits of one pass.
 */
#include "model.h"
#include "model_internal.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* The forward pass                                                           */

/* The forward pass over B sequences of acts (a view: its pointers may start
 * at a later sequence, hs_acts_view), calling the observer in hc if any. */
static hs_status forward_layers(const hs_model *m, hs_acts *acts, const int *tokens, int B,
                                int T, hs_hook_ctx *hc, hs_error *err);

/* hook_tokens (token ids as floats [B,T]): an edit must leave ids in [0, V). */
static hs_status forward_body(const hs_model *m, hs_acts *acts, const int *tokens, int B, int T,
                              hs_hook_ctx *hc, hs_error *err)
{
    const size_t BT = (size_t)B * T;
    if (!hs_hook_wants(hc, "hook_tokens")) return forward_layers(m, acts, tokens, B, T, hc, err);
    float *tf = malloc(BT * sizeof(float));
    int *edited = malloc(BT * sizeof(int));
    if (tf == NULL || edited == NULL) {
        free(tf);
        free(edited);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory for hook_tokens");
    }
    for (size_t i = 0; i < BT; i++) tf[i] = (float)tokens[i];
    hs_status st = HS_OK;
    int r = hs_hook(hc, "hook_tokens", tf, 2, B, T, 0, 0);
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
                                      hs_hook_ctx *hc)
{
    const hs_config *c = &m->cfg;
    const int l = c->n_layers - 1, p = acts->logit_pos;
    if (p < 0 || p >= T || c->embed_norm) return 0;
    /* the compact tail below is the pre-norm block's, added (gated and
     * parallel too) */
    if (c->norm_place != HS_NORM_PRE || c->attn_replace) return 0;
    const size_t D = (size_t)c->d_model;
    /* acts->scratch holds T * max(H*D, D, M) floats a sequence (ACT_SLOTS) */
    size_t x = (size_t)c->n_heads * D > D ? (size_t)c->n_heads * D : D;
    if ((size_t)c->d_mlp > x) x = (size_t)c->d_mlp;
    const size_t need = 7 * D + 2 * (size_t)c->d_mlp + (size_t)c->d_vocab + 2 +
                        (c->parallel_attn_mlp ? D : 0) + (c->gated_mlp ? (size_t)c->d_mlp : 0),
                 have = (size_t)T * x;
    if (need > have) return 0;
    static const char *const late[] = {"hook_attn_out", "hook_resid_mid",
                                       "hook_mlp_in", "ln2.hook_scale", "ln2.hook_normalized",
                                       "mlp.hook_pre", "mlp.hook_pre_linear", "mlp.hook_post", "hook_mlp_out",
                                       "hook_resid_post"};
    char nm[96];
    for (size_t i = 0; i < sizeof late / sizeof late[0]; i++) {
        snprintf(nm, sizeof nm, "blocks.%d.%s", l, late[i]);
        if (hs_hook_wants(hc, nm)) return 0;
    }
    static const char *const tail[] = {"ln_final.hook_scale", "ln_final.hook_normalized",
                                       "unembed.hook_in", "logits"};
    for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++)
        if (hs_hook_wants(hc, tail[i])) return 0;
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
    /* parallel: resid_pre's rows, the MLP's input; gated: x W_in + b_in */
    float *rpre = rstd + nb, *lin = rpre + (c->parallel_attn_mlp ? nb * D : 0);
    for (int b = 0; b < B; b++) {
        const size_t row = (size_t)b * T + p;
        memcpy(ao + (size_t)b * D, ba->attn_out + row * D, (size_t)D * sizeof(float));
        memcpy(rm + (size_t)b * D, ba->resid_pre + row * D, (size_t)D * sizeof(float));
    }
    if (c->parallel_attn_mlp) memcpy(rpre, rm, nb * D * sizeof(float));
    hs_add_long(rm, rm, ao, nb * D);
    const float *after = rm;
    if (M > 0) {
        const float *mlp_in = c->parallel_attn_mlp ? rpre : rm, *ln2_in = mlp_in;
        if (c->norm != HS_NORM_NONE) {
            hs_norm_stats(mean, rstd, mlp_in, nb, D, c->norm, c->eps);
            hs_norm_apply_affine(ln, mlp_in, mean, rstd, bp->ln2_w, bp->ln2_b, nb, D, 1, 1);
            ln2_in = ln;
        }
        if (c->gated_mlp) {
            hs_matmul_forward(pre, ln2_in, bp->W_gate, NULL, nb, D, M);
            hs_matmul_forward(lin, ln2_in, bp->W_in, bp->b_in, nb, D, M);
            hs_act_forward(post, NULL, pre, nb * M, c->act);
            hs_mul_long(post, post, lin, nb * M);
        } else {
            hs_matmul_forward(pre, ln2_in, bp->W_in, bp->b_in, nb, D, M);
            hs_act_forward(post, NULL, pre, nb * M, c->act);
        }
        hs_matmul_forward(mo, post, bp->W_out, bp->b_out, nb, M, D);
        hs_add_long(rp, rm, mo, nb * D);
        after = rp;
    }
    const float *fin = after;
    if (c->ln_final && c->norm != HS_NORM_NONE) {
        hs_norm_stats(mean, rstd, after, nb, D, c->norm, c->eps);
        hs_norm_apply_affine(lf, after, mean, rstd, P->ln_final_w, P->ln_final_b, nb, D, 1, 1);
        fin = lf;
    }
    hs_unembed_forward(lg, fin, P, nb, D, V);
    for (int b = 0; b < B; b++)
        memcpy(acts->logits + ((size_t)b * T + p) * V, lg + (size_t)b * V, (size_t)V * sizeof(float));
}

/* The embedding: embed (+ pos_embed) into x0, then the embed norm (or a
 * copy) into block 0's resid_pre, with their points. */
static hs_status forward_embed(hs_hook_ctx *hc, const hs_model *m, hs_acts *acts,
                               const int *tokens, int B, int T, hs_error *err)
{
    const hs_config *c = &m->cfg;
    const hs_params *P = &m->params;
    const int D = c->d_model;
    const size_t BT = (size_t)B * T;

    for (size_t i = 0; i < BT; i++) {
        memcpy(acts->embed + i * D, P->W_E + (size_t)tokens[i] * D, (size_t)D * sizeof(float));
    }
    HS_HOOK(hc, "hook_embed", acts->embed, 3, B, T, D, 0);
    float *x0 = acts->x0;
    if (hs_pos_added(c)) { /* W_pos, or the sinusoidal table (hs_acts.pos_table) */
        const float *table = c->pos == HS_POS_LEARNED ? P->W_pos : acts->pos_table;
        for (size_t i = 0; i < BT; i++)
            memcpy(acts->pos_embed + i * D, table + (i % (size_t)T) * D, (size_t)D * sizeof(float));
        HS_HOOK(hc, "hook_pos_embed", acts->pos_embed, 3, B, T, D, 0);
        hs_add_long(x0, acts->embed, acts->pos_embed, BT * D);
    } else {
        memcpy(x0, acts->embed, BT * D * sizeof(float));
    }
    hc->changed = 0; /* edits up to here change the input, not the computation (acts->edited) */
    float *resid = acts->blocks[0].resid_pre;
    if (c->embed_norm) {
        hs_status s = hs_norm_forward_hooked(hc, "ln_embed", resid, acts->lne_mean, acts->lne_rstd,
                                             x0, P->ln_embed_w, P->ln_embed_b, B, T, D, c->norm,
                                             c->eps, acts->scratch, err);
        if (s != HS_OK) return s;
    } else {
        memcpy(resid, x0, BT * D * sizeof(float));
    }
    return HS_OK;
}

/* Block l: resid_pre (block l-1's resid_post), the attention, the residual,
 * the MLP, resid_post, with their points. *done = 1 when the last block ran
 * at one position from its attention output on (last_block_at_one_position):
 * the logits are filled, and the forward ends there. */
static hs_status forward_block(hs_hook_ctx *hc, const hs_model *m, hs_acts *acts, int l, int B,
                               int T, int *done, hs_error *err)
{
    const hs_config *c = &m->cfg;
    const int last = l == c->n_layers - 1;
    /* without an observer the biases of W_O and W_out are added in the
     * residual's pass (hs_bias_residual); the last block at one position
     * reads attn_out whole, so it gets its bias in the attention's step */
    const hs_block_step k = {hc, m, c, acts, &acts->blocks[l], &m->params.blocks[l], l, B, T,
                             (size_t)B * T, hc->obs == NULL && !(last && acts->logit_pos >= 0)};
    hs_block_acts *ba = k.ba;
    const int D = c->d_model;
    char nm[96];

    /* one sequence without gradients on several layers: one slot, packed here
     * (the forward is one part); otherwise hs_forward packed every layer */
    if (acts->wpack_slots < c->n_layers) hs_pack_qkv(m, acts, l);
    snprintf(nm, sizeof nm, "blocks.%d.hook_resid_pre", l);
    hs_status s = HS_OK;
    /* (the training layout's resid_pre is the previous resid_post itself) */
    const float *prev = l > 0 ? acts->blocks[l - 1].resid_post : NULL;
    if (prev && ba->resid_pre != prev) {
        /* the copy over the pool's workers, the rows streamed from it to an
         * observer that only keeps the point (hs_hook_keeps) */
        float *kr;
        if (hs_hook_keeps(hc, nm, ba->resid_pre, &kr, 3, B, T, D, 0)) {
            hs_copy_keep_pool(hc->pool, ba->resid_pre, prev, kr, k.BT, D);
            s = hs_hook_kept(hc, nm, kr, 3, B, T, D, 0, err);
            if (s != HS_OK) return s;
        } else {
            hs_copy_keep_pool(hc->pool, ba->resid_pre, prev, NULL, k.BT, D);
            if (hs_hook_into(hc, nm, ba->resid_pre, kr, k.BT * D, 3, B, T, D, 0) < 0)
                return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", nm);
        }
    } else {
        HS_HOOK(hc, nm, ba->resid_pre, 3, B, T, D, 0);
    }
    s = hs_attention_forward(&k, err);
    if (s != HS_OK) return s;
    if (last && last_block_at_one_position(m, acts, T, hc)) {
        last_block_at_one_position_run(m, acts, B, T);
        *done = 1;
        return HS_OK;
    }
    /* the residual after the attention: resid_pre + attn_out (attn_out
     * alone with attn_replace), through LN1 with norm_place post (its input
     * kept in sum_attn) */
    float *after_attn = (c->d_mlp > 0) ? ba->resid_mid : ba->resid_post;
    const int post = c->norm_place == HS_NORM_POST;
    float *sum = post ? ba->sum_attn : after_attn;
    char nr[96];
    snprintf(nm, sizeof nm, "blocks.%d.hook_attn_out", l);
    snprintf(nr, sizeof nr, "blocks.%d.hook_resid_mid", l);
    /* TL: no hook_resid_mid in parallel with the MLP */
    const int mid_point = c->d_mlp > 0 && !c->parallel_attn_mlp;
    float *kr = NULL;
    if (hc->obs && !c->attn_replace && !post && mid_point) {
        /* an observer that only keeps attn_out and resid_mid (the activation
         * cache) gets their rows from the residual's one pass (the bias
         * added in the attention's step); else the points one at a time */
        float *ko;
        const int keeps_o = hs_hook_keeps(hc, nm, ba->attn_out, &ko, 3, B, T, D, 0);
        const int keeps_r = keeps_o && hs_hook_keeps(hc, nr, ba->resid_mid, &kr, 3, B, T, D, 0);
        if (keeps_o && keeps_r) {
            hs_bias_residual_keep_pool(hc->pool, sum, ba->resid_pre, ba->attn_out, NULL, k.BT, D,
                                       ko, kr);
            s = hs_hook_kept(hc, nm, ko, 3, B, T, D, 0, err);
            if (s == HS_OK) s = hs_hook_kept(hc, nr, kr, 3, B, T, D, 0, err);
            if (s == HS_OK) s = hs_mlp_forward(&k, err);
            return s;
        }
        if (hs_hook_into(hc, nm, ba->attn_out, ko, k.BT * D, 3, B, T, D, 0) < 0)
            return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", nm);
        hs_bias_residual_pool(hc->pool, sum, ba->resid_pre, ba->attn_out, NULL, k.BT, D, 1);
        if (hs_hook_into(hc, nr, ba->resid_mid, kr, k.BT * D, 3, B, T, D, 0) < 0)
            return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", nr);
        return hs_mlp_forward(&k, err);
    }
    HS_HOOK(hc, nm, ba->attn_out, 3, B, T, D, 0);
    if (c->attn_replace) {
        if (k.fuse && k.bp->b_O) hs_add_bias_rows(ba->attn_out, k.bp->b_O, k.BT, D);
        memcpy(sum, ba->attn_out, k.BT * D * sizeof(float));
    } else if (k.fuse) {
        hs_bias_residual_pool(hc->pool, sum, ba->resid_pre, ba->attn_out, k.bp->b_O, k.BT, D, 1);
    } else {
        hs_add_long(sum, ba->resid_pre, ba->attn_out, k.BT * D);
    }
    if (post && c->ln1) {
        snprintf(nm, sizeof nm, "blocks.%d.ln1", l);
        s = hs_norm_forward_hooked(hc, nm, after_attn, ba->ln1_mean, ba->ln1_rstd, ba->sum_attn,
                                   k.bp->ln1_w, k.bp->ln1_b, B, T, D, c->norm, c->eps,
                                   acts->scratch, err);
        if (s != HS_OK) return s;
    } else if (post) {
        memcpy(after_attn, ba->sum_attn, k.BT * D * sizeof(float));
    }
    if (mid_point) HS_HOOK(hc, nr, ba->resid_mid, 3, B, T, D, 0);
    /* the MLP tells resid_post */
    if (c->d_mlp > 0) return hs_mlp_forward(&k, err);
    snprintf(nm, sizeof nm, "blocks.%d.hook_resid_post", l);
    HS_HOOK(hc, nm, ba->resid_post, 3, B, T, D, 0);
    return HS_OK;
}

/* The final norm (or a copy) of the last block's resid_post into lnf_out,
 * then the logits (B,T,V), with their points. */
static hs_status forward_unembed(hs_hook_ctx *hc, const hs_model *m, hs_acts *acts, int B, int T,
                                 hs_error *err)
{
    const hs_config *c = &m->cfg;
    const hs_params *P = &m->params;
    const int D = c->d_model, V = c->d_vocab;
    const size_t BT = (size_t)B * T;

    const float *final_resid = acts->blocks[c->n_layers - 1].resid_post;
    if (c->ln_final && c->norm != HS_NORM_NONE) {
        hs_status s = hs_norm_forward_hooked(hc, "ln_final", acts->lnf_out, acts->lnf_mean,
                                             acts->lnf_rstd, final_resid, P->ln_final_w,
                                             P->ln_final_b, B, T, D, c->norm, c->eps,
                                             acts->scratch, err);
        if (s != HS_OK) return s;
    } else {
        memcpy(acts->lnf_out, final_resid, BT * D * sizeof(float));
    }
    HS_HOOK(hc, "unembed.hook_in", acts->lnf_out, 3, B, T, D, 0);
    hs_unembed_forward_pool(hc->pool, acts->logits, acts->lnf_out, P, BT, D, V);
    HS_HOOK(hc, "logits", acts->logits, 3, B, T, V, 0);
    return HS_OK;
}

static hs_status forward_layers(const hs_model *m, hs_acts *acts, const int *tokens, int B,
                                int T, hs_hook_ctx *hc, hs_error *err)
{
    hs_status s = forward_embed(hc, m, acts, tokens, B, T, err);
    for (int l = 0; s == HS_OK && l < m->cfg.n_layers; l++) {
        int done = 0;
        s = forward_block(hc, m, acts, l, B, T, &done, err);
        if (done) return s;
    }
    if (s == HS_OK && acts->logit_pos != HS_LOGITS_NONE) s = forward_unembed(hc, m, acts, B, T, err);
    return s;
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
    hs_hook_ctx hc = {NULL, 0, NULL, NULL};
    return forward_body(f->m, &view, f->tokens + (size_t)b0 * f->T, b1 - b0, f->T, &hc, err);
}

hs_status hs_forward(const hs_model *m, hs_acts *acts, const int *tokens, int B, int T,
                     const hs_observer *observer, hs_error *err)
{
    return hs_forward_dest(m, acts, tokens, B, T, observer, NULL, err);
}

hs_status hs_forward_dest(const hs_model *m, hs_acts *acts, const int *tokens, int B, int T,
                          const hs_observer *observer, hs_observer_dest_fn dest, hs_error *err)
{
    const hs_config *c = &m->cfg;
    const int V = c->d_vocab;
    if (B < 1 || T < 1 || B > acts->B || T > acts->T)
        return hs_fail(err, HS_ERR_INPUT, "forward: batch %d x %d exceeds activations %d x %d", B, T,
                       acts->B, acts->T);
    if (T > c->n_ctx)
        return hs_fail(err, HS_ERR_INPUT, "forward: %d positions exceed n_ctx %d", T, c->n_ctx);
    if (acts->lean && (observer || acts->logit_pos != -1))
        return hs_fail(err, HS_ERR_INPUT, "forward: training activations (HS_ACTS_TRAIN) run without "
                                          "observer at every position");
    const size_t BT = (size_t)B * T;
    for (size_t i = 0; i < BT; i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            return hs_fail(err, HS_ERR_INPUT, "forward: token id %d at index %zu out of range [0, %d)",
                           tokens[i], i, V);
    acts->b = B;
    acts->t = T;
    memset(acts->att_elsewhere, 0, sizeof acts->att_elsewhere); /* attn_pattern sets them */
    hs_hook_ctx hc = {observer, 0, dest, NULL};
    HS_ASSERT(acts->wpack_slots >= c->n_layers || (acts->wpack_slots == 1 && B == 1));
    if (acts->wpack_slots >= c->n_layers) /* else each block packs its own (forward_block) */
        for (int l = 0; l < c->n_layers; l++) hs_pack_qkv(m, acts, l);
    const int parts = observer == NULL ? hs_batch_parts(B, T, hs_pool_threads(acts->pool)) : 1;
    if (parts >= 2) {
        /* one part of the batch per worker: every kernel works per row or
         * per sequence, and an sgemm gives a row the same bits when the rows
         * before it are a multiple of its kernel's unroll (hs_batch_parts), so
         * the values are those of one pass */
        fwd_split f = {m, acts, tokens, B, T, parts};
        acts->edited = 0;
        return hs_pool_for(acts->pool, parts, fwd_part_run, &f, err);
    }
    /* one part on a pool of several workers: the attention's heads, the
     * row passes and the large products' rows (hs_sgemm_pool: at least
     * HS_BLAS_PAR_ROWS rows, the bits of one call) over its workers, with
     * OpenBLAS at one thread a call: the pool owns the threads (OpenBLAS'
     * own helpers spun in sched_yield beside the pool's workers, ~11% of a
     * forward's cycles at GPT-2 small, 1,024 tokens) */
    if (hs_pool_threads(acts->pool) > 1) {
        hc.pool = acts->pool;
        hs_blas_threads(1);
    }
    hs_status s = forward_body(m, acts, tokens, B, T, &hc, err);
    acts->edited = hc.changed;
    return s;
}

/* The cross-entropy in HS_GRAD_PARTS fixed parts of the rows (not one per
 * worker), each summing its rows' losses in row order, the parts' sums added
 * in part order: the loss has the same bits for every pool. A part works in
 * blocks of CE_ROWS rows: every row shifted by its maximum, then one exp
 * over the block. The maximum runs in CE_LANES running maxima (a maximum is
 * the same value in any order: ties are equal floats), the exps' double sum
 * of CE_SUMS (8) rows side by side, each row's in its own k order (the bits
 * of one running sum; 8 chains hide an add's latency), the shift and the
 * scaling in hs_v8: the bits of the plain loops (checked on 8,205 random rows
 * of 1,024 with ties and signed zeros, and at V 7, 33, 1,000, 50,257), the
 * work besides the exp 2.2x faster (32 -> 14.5 ms at 8,205 x 1,024). */
#define CE_ROWS 64
#define CE_LANES 16
#define CE_SUMS 8

typedef struct {
    const hs_acts *acts;
    const int *targets;
    int V;
    size_t rows;
    double total[HS_GRAD_PARTS];
    int n[HS_GRAD_PARTS];
} ce_job;

/* max over lg (V); NaNs skipped (-inf when every value is one), as the
 * plain loop `if (lg[k] > m) m = lg[k]`. */
static inline float ce_row_max(const float *restrict lg, int V)
{
    float m = -INFINITY;
    int k = 0;
    if (V >= CE_LANES) {
        float ml[CE_LANES];
        for (int l = 0; l < CE_LANES; l++) ml[l] = -INFINITY;
        for (; k + CE_LANES <= V; k += CE_LANES)
            for (int l = 0; l < CE_LANES; l++) ml[l] = lg[k + l] > ml[l] ? lg[k + l] : ml[l];
        for (int l = 0; l < CE_LANES; l++)
            if (ml[l] > m) m = ml[l];
    }
    for (; k < V; k++)
        if (lg[k] > m) m = lg[k];
    return m;
}

/* pr (V) = lg (V) - m */
static inline void ce_shift(float *pr, const float *lg, float m, int V)
{
    hs_shift(pr, lg, m, V);
}

/* pr (V) *= inv */
static inline void ce_scale(float *pr, float inv, int V)
{
    hs_scale(pr, pr, inv, V);
}

/* out[g] = the double sum of row g of pr (8 rows of V), each in k order */
static inline void ce_sums8(const float *pr, int V, double *out)
{
    const float *p0 = pr, *p1 = p0 + V, *p2 = p1 + V, *p3 = p2 + V, *p4 = p3 + V, *p5 = p4 + V,
                *p6 = p5 + V, *p7 = p6 + V;
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0, s5 = 0.0, s6 = 0.0, s7 = 0.0;
    for (int k = 0; k < V; k++) {
        s0 += p0[k];
        s1 += p1[k];
        s2 += p2[k];
        s3 += p3[k];
        s4 += p4[k];
        s5 += p5[k];
        s6 += p6[k];
        s7 += p7[k];
    }
    out[0] = s0, out[1] = s1, out[2] = s2, out[3] = s3;
    out[4] = s4, out[5] = s5, out[6] = s6, out[7] = s7;
}

HS_CLONES
static hs_status ce_run(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    (void)err;
    ce_job *c = ctx;
    const int V = c->V;
    const size_t p0 = c->rows * (size_t)j / HS_GRAD_PARTS, p1 = c->rows * (size_t)(j + 1) / HS_GRAD_PARTS;
    float mx[CE_ROWS];
    double sums[CE_ROWS];
    for (size_t r0 = p0; r0 < p1; r0 += CE_ROWS) {
        const size_t r1 = r0 + CE_ROWS < p1 ? r0 + CE_ROWS : p1;
        for (size_t i = r0; i < r1; i++) {
            const float *restrict lg = c->acts->logits + i * V;
            float *restrict pr = c->acts->probs + i * V;
            const float m = ce_row_max(lg, V);
            mx[i - r0] = m;
            ce_shift(pr, lg, m, V);
        }
        float *P = c->acts->probs + r0 * V;
        hs_exp_span(P, P, (r1 - r0) * (size_t)V);
        size_t i = r0;
        for (; i + CE_SUMS <= r1; i += CE_SUMS) ce_sums8(c->acts->probs + i * V, V, sums + (i - r0));
        for (; i < r1; i++) {
            const float *pr = c->acts->probs + i * V;
            double sum = 0.0;
            for (int k = 0; k < V; k++) sum += pr[k];
            sums[i - r0] = sum;
        }
        for (i = r0; i < r1; i++) {
            float *restrict pr = c->acts->probs + i * V;
            const double sum = sums[i - r0];
            const float inv = (float)(1.0 / sum);
            ce_scale(pr, inv, V);
            if (c->targets[i] >= 0) {
                const float *lg = c->acts->logits + i * V;
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

/* The final norm of hs_final_logits(_pool) into scratch's first N x D floats
 * (statistics recomputed from each row); returns them. */
static float *final_norm(const hs_model *m, const float *resid, size_t N, float *scratch)
{
    const hs_config *c = &m->cfg;
    const hs_params *P = &m->params;
    const int D = c->d_model;
    float *out = scratch, *mean = scratch + N * D, *rstd = mean + N;
    if (c->ln_final && c->norm != HS_NORM_NONE) {
        hs_norm_stats(mean, rstd, resid, N, D, c->norm, c->eps);
        hs_norm_apply_affine(out, resid, mean, rstd, P->ln_final_w, P->ln_final_b, N, D, 1, 1);
    } else {
        memcpy(out, resid, N * D * sizeof(float));
    }
    return out;
}

void hs_final_logits(const hs_model *m, const float *resid, size_t N, float *scratch, float *logits)
{
    const float *out = final_norm(m, resid, N, scratch);
    hs_unembed_forward(logits, out, &m->params, N, m->cfg.d_model, m->cfg.d_vocab);
}

void hs_final_logits_pool(hs_pool *pool, const hs_model *m, const float *resid, size_t N, float *scratch,
                          float *logits)
{
    const hs_params *P = &m->params;
    const int D = m->cfg.d_model, V = m->cfg.d_vocab;
    const float *out = final_norm(m, resid, N, scratch);
    /* hs_unembed_forward's product and bias, by columns */
    if (P->W_U)
        hs_sgemm_cols_pool(pool, 0, (int)N, V, D, 1.0f, out, D, P->W_U, V, 0.0f, logits, V, P->b_U);
    else
        hs_sgemm_cols_pool(pool, 1, (int)N, V, D, 1.0f, out, D, P->W_U_T, D, 0.0f, logits, V, P->b_U);
}

void hs_model_warm(const hs_model *m)
{
    const hs_config *c = &m->cfg;
    const int D = c->d_model, HD = c->n_heads * c->d_head, M = c->d_mlp;
    /* (N, K) of the forward's NN products on a weight (hs_sgemm_pool) */
    const int nk[5][2] = {{3 * HD, D}, {HD, D}, {D, HD}, {M, D}, {D, M}};
    for (int i = 0; i < 5; i++)
        if (nk[i][0] > 0 && nk[i][1] > 0 && !hs_sgemm_nn_jit(nk[i][0], nk[i][1]))
            (void)hs_sgemm_few_rows_k(nk[i][1]);
}
