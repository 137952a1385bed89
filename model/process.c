/*
 * model/process.c -- TransformerLens' weight processing, the one
 * `HookedTransformer.from_pretrained` applies by default (model.h,
 * hs_model_process_tl): fold_ln, center_writing_weights, center_unembed,
 * fold_value_biases (refactor_factored_attn_matrices, off by default, is not
 * done). Source: TransformerLensOrg/TransformerLens v3.5.1,
 * transformer_lens/weight_processing.py (ProcessWeights.process_weights,
 * fold_layer_norm / _fold_layer / _fold_mlp_layer_norm /
 * _fold_final_rms_bias / _fold_unembed_layer_norm, center_writing_weights,
 * center_unembed, fold_value_biases) and HookedTransformer.py
 * (load_and_process_state_dict: normalization_type "LN" -> "LNPre").
 *
 * Each sum over d_model (or the vocabulary, or the heads) is taken in double
 * and rounded to float once; TransformerLens sums in float32, so the two
 * agree to float rounding.
 */
#include "model/model.h"
#include "model/model_internal.h"

#include <stdlib.h>
#include <string.h>

/* fold_ln of one reader W (R rows of C columns, a row per d_model
 * dimension, rows rs floats apart): b[c] += sum_r W[r][c] ln_b[r] (with the
 * unscaled W), W[r][c] *= ln_w[r], then W[r][c] -= mean_r W[r][c]. Row by
 * row, the column sums in acc (2 C doubles). */
static void fold_reader(float *W, size_t rs, int R, int C, float *b, const float *ln_w,
                        const float *ln_b, double *acc)
{
    double *fb = acc, *mean = acc + C;
    memset(acc, 0, 2 * (size_t)C * sizeof *acc);
    for (int r = 0; r < R; r++) {
        float *row = W + (size_t)r * rs;
        for (int c = 0; c < C; c++) {
            if (ln_b) fb[c] += (double)row[c] * ln_b[r];
            if (ln_w) row[c] = row[c] * ln_w[r];
            mean[c] += row[c];
        }
    }
    for (int c = 0; c < C; c++) {
        if (ln_b) b[c] = (float)((double)b[c] + fb[c]);
        mean[c] /= R;
    }
    for (int r = 0; r < R; r++) {
        float *row = W + (size_t)r * rs;
        for (int c = 0; c < C; c++) row[c] = (float)(row[c] - mean[c]);
    }
}

/* Each of n rows of x (D floats) minus its own mean. */
static void center_rows(float *x, size_t n, int D)
{
    for (size_t i = 0; i < n; i++) {
        float *r = x + i * (size_t)D;
        double mean = 0.0;
        for (int d = 0; d < D; d++) mean += r[d];
        mean /= D;
        for (int d = 0; d < D; d++) r[d] = (float)(r[d] - mean);
    }
}

/* fold_layer_norm: ln1 into W_Q, W_K, W_V (and b_Q, b_K, b_V), ln2 into W_in
 * (b_in), ln_final into W_U (b_U), each reader centred over d_model after. */
static void fold_ln(hs_model *m, double *acc)
{
    const hs_config *c = &m->cfg;
    const int D = c->d_model, H = c->n_heads, dh = c->d_head, M = c->d_mlp, V = c->d_vocab;
    hs_params *P = &m->params;
    for (int l = 0; l < c->n_layers; l++) {
        hs_block_params *bp = &P->blocks[l];
        float *W[3] = {bp->W_Q, bp->W_K, bp->W_V}, *b[3] = {bp->b_Q, bp->b_K, bp->b_V};
        for (int x = 0; x < 3; x++)
            for (int h = 0; h < (x == 0 ? H : hs_kv_heads(c)); h++) /* W[h] (D, dh) */
                fold_reader(W[x] + (size_t)h * D * dh, (size_t)dh, D, dh, b[x] + (size_t)h * dh,
                            bp->ln1_w, bp->ln1_b, acc);
        if (M > 0) fold_reader(bp->W_in, (size_t)M, D, M, bp->b_in, bp->ln2_w, bp->ln2_b, acc);
    }
    fold_reader(P->W_U, (size_t)V, D, V, P->b_U, P->ln_final_w, P->ln_final_b, acc);
}

/* center_writing_weights: every weight writing to the residual stream (W_E,
 * W_pos, W_O, b_O, W_out, b_out) minus its mean over d_model. */
static void center_writing(hs_model *m)
{
    const hs_config *c = &m->cfg;
    const int D = c->d_model;
    hs_params *P = &m->params;
    center_rows(P->W_E, (size_t)c->d_vocab, D);
    if (P->W_pos) center_rows(P->W_pos, (size_t)c->n_ctx, D);
    for (int l = 0; l < c->n_layers; l++) {
        hs_block_params *bp = &P->blocks[l];
        center_rows(bp->W_O, (size_t)c->n_heads * c->d_head, D);
        center_rows(bp->b_O, 1, D);
        if (c->d_mlp > 0) {
            center_rows(bp->W_out, (size_t)c->d_mlp, D);
            center_rows(bp->b_out, 1, D);
        }
    }
}

/* fold_value_biases: b_O += sum_h b_V[h] W_O[h], b_V = 0; then (as
 * process_weights does after it with center_writing_weights) b_O minus its
 * mean. acc: D doubles. */
static void fold_value_biases(hs_model *m, double *acc)
{
    const hs_config *c = &m->cfg;
    const int D = c->d_model, HD = c->n_heads * c->d_head;
    for (int l = 0; l < c->n_layers; l++) {
        hs_block_params *bp = &m->params.blocks[l];
        for (int d = 0; d < D; d++) acc[d] = bp->b_O[d];
        for (int k = 0; k < HD; k++) { /* rows of W_O (H*dh, D), one per b_V entry */
            /* query head k / dh reads the b_V of its key/value head (GQA) */
            const float bv = bp->b_V[(size_t)hs_kv_head(c, k / c->d_head) * c->d_head + k % c->d_head];
            for (int d = 0; d < D; d++) acc[d] += (double)bv * bp->W_O[(size_t)k * D + d];
        }
        for (int d = 0; d < D; d++) bp->b_O[d] = (float)acc[d];
        memset(bp->b_V, 0, (size_t)hs_kv_heads(c) * c->d_head * sizeof(float));
        center_rows(bp->b_O, 1, D);
    }
}

/* The models TransformerLens' default processing applies to as it does to
 * GPT-2: LayerNorm (with or without weights) before attention, the MLP and
 * the unembedding, softmax attention, learned or no positions, biases. */
static hs_status check_processable(const hs_model *m, hs_error *err)
{
    const hs_config *c = &m->cfg;
    const char *why = m->tl_processed                 ? "its weights are processed already"
                      : c->norm != HS_NORM_LAYERNORM  ? "its norm is not LayerNorm (LN or LNPre)"
                      : !c->ln1 || !c->ln_final       ? "a norm before attention or the unembedding is off"
                      : c->embed_norm                 ? "it has an embedding norm"
                      : c->attn != HS_ATTN_SOFTMAX    ? "its attention is uniform"
                      : c->norm_place == HS_NORM_POST ? "its norms are post-norms (norm_place post), on the residual"
                      : c->attn_replace               ? "its attention replaces the residual (attn_replace)"
                      : c->gated_mlp                  ? "its MLP is gated (gated_mlp)"
                      : !c->bias                      ? "it has no biases to fold the norms' into"
                                                      : NULL;
    if (why)
        return hs_fail(err, HS_ERR_INPUT, "TransformerLens' weight processing (--process tl) "
                       "does not apply to this model: %s", why);
    return HS_OK;
}

hs_status hs_model_process_tl(hs_model *m, hs_error *err)
{
    hs_status s = check_processable(m, err);
    if (s != HS_OK) return s;
    /* processing rewrites nearly every tensor: a mapped model gets its own
     * table first (its file stays unchanged; the weights cost a copy) */
    if ((s = hs_model_own(m, err)) != HS_OK) return s;
    const hs_config *c = &m->cfg;
    size_t width = (size_t)c->d_vocab; /* the widest reader: W_U's vocabulary, or d_mlp */
    if ((size_t)c->d_mlp > width) width = (size_t)c->d_mlp;
    if ((size_t)c->d_model > width) width = (size_t)c->d_model;
    double *acc = malloc(2 * width * sizeof *acc);
    if (acc == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    /* processed weights are not the ones an optimizer state belongs to */
    hs_floats_free(m->grad_mem);
    hs_floats_free(m->grad_part_mem);
    hs_floats_free(m->m_mem);
    hs_floats_free(m->v_mem);
    m->grad_mem = m->grad_part_mem = m->m_mem = m->v_mem = NULL;
    memset(&m->grads, 0, sizeof m->grads);
    m->adam_t = 0;
    if (!m->cfg.norm_pre) fold_ln(m, acc); /* LNPre: nothing to fold (TL skips it too) */
    center_writing(m);
    /* center_unembed: W_U minus its mean over the vocabulary, row by row; b_U too */
    center_rows(m->params.W_U, (size_t)m->cfg.d_model, m->cfg.d_vocab);
    center_rows(m->params.b_U, 1, m->cfg.d_vocab);
    fold_value_biases(m, acc);
    free(acc);
    hs_config cfg = m->cfg;
    cfg.norm_pre = 1; /* TL: normalization_type "LN" -> "LNPre" */
    hs_model_relayout(m, &cfg);
    m->tl_processed = 1;
    return HS_OK;
}

const char *hs_model_weights_name(const hs_model *m)
{
    return m->tl_processed ? "tl-processed" : "raw";
}
