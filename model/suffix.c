/*
 * model/suffix.c -- a patched run's tail at the positions from s on
 * (hs_forward_suffix, model/suffix.h): blocks layer[b].. of B sequences whose
 * positions before s are those of a reference run (the corrupted run of
 * activation patching, when every clean prompt equals its corrupted partner
 * up to s), computed at the positions s..t-1 alone with the keys and values
 * before s read from the reference run's hook_k / hook_v; the last block
 * after its attention, the final norm and the unembedding at each
 * sequence's read position alone, and the logits of the named tokens only.
 *
 * Causal attention makes a position depend on positions at or before it
 * only, so the rows before s of such a run are the reference run's: what
 * the full patched forward recomputes there is what it already had. The
 * operations are the forward's (model/attention.c, model/norm_mlp.c) in the
 * same order on fewer rows; the scores' and the mix's dot products and the
 * logits' columns are written out here, so a cell can differ from the
 * full forward's in float32 rounding (the sums' order), never more.
 */
#include "suffix.h"
#include "model_internal.h"

#include <math.h>
#include <string.h>

hs_status hs_suffix_embed(const hs_model *m, const int *tok, int s, int t, float *x, hs_error *err)
{
    const hs_config *c = &m->cfg;
    const int D = c->d_model;
    if (c->pos != HS_POS_LEARNED || c->embed_norm)
        return hs_fail(err, HS_ERR_INPUT, "hs_suffix_embed: the model's positions are not learned and added "
                       "without an embedding norm");
    if (s < 0 || s > t || t > c->n_ctx)
        return hs_fail(err, HS_ERR_INPUT, "hs_suffix_embed: positions %d..%d outside [0, %d)", s, t - 1, c->n_ctx);
    for (int p = s; p < t; p++) {
        if (tok[p] < 0 || tok[p] >= c->d_vocab)
            return hs_fail(err, HS_ERR_INPUT, "hs_suffix_embed: token %d at position %d is not in [0, %d)",
                           tok[p], p, c->d_vocab);
        /* forward_embed's W_E row plus W_pos row (hs_add_long: the same sums) */
        hs_add_long(x + (size_t)p * D, m->params.W_E + (size_t)tok[p] * D, m->params.W_pos + (size_t)p * D,
                    (size_t)D);
    }
    return HS_OK;
}

int hs_forward_suffix_ok(const hs_config *c)
{
    if (c->attn != HS_ATTN_SOFTMAX || c->norm_place != HS_NORM_PRE || c->attn_replace ||
        c->parallel_attn_mlp || c->gated_mlp || c->embed_norm)
        return 0;
    if (c->pos == HS_POS_ROTARY || c->pos == HS_POS_ALIBI || hs_kv_heads(c) != c->n_heads) return 0;
    for (int l = 0; l < c->n_layers; l++)
        if (c->attn_local[l]) return 0;
    return c->d_head % 8 == 0;
}

/* Sequences a pass of hs_forward_suffix takes at once: up to SUFFIX_SEQS,
 * and about SUFFIX_ROWS rows (long suffixes: fewer sequences, at least one),
 * so each product re-reads its weights for many rows and the scratch stays
 * within ~(6 D + 4 H dh) SUFFIX_ROWS floats (~95 MB at GPT-2 small). */
#define SUFFIX_SEQS 128
#define SUFFIX_ROWS 2048

static int pass_seqs(int ns)
{
    const int k = SUFFIX_ROWS / ns;
    return k < 1 ? 1 : k > SUFFIX_SEQS ? SUFFIX_SEQS : k;
}

/* Rows of a product over n rows: n rounded up to whole 16-row units, so a
 * row's bits do not depend on the rows beside it (hs_sgemm). */
static size_t rows16(size_t n)
{
    return (n + 15) / 16 * 16;
}

HS_CLONES
static float dot_dh(const float *a, const float *b, int dh)
{
    hs_v8 acc = HS_V8_SET1(0.0f);
    for (int d = 0; d < dh; d += 8) {
        hs_v8 x, y;
        HS_V8_LOAD(x, a + d);
        HS_V8_LOAD(y, b + d);
        acc += x * y;
    }
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

HS_CLONES
static void axpy_dh(float *z, float p, const float *v, int dh)
{
    const hs_v8 pv = HS_V8_SET1(p);
    for (int d = 0; d < dh; d += 8) {
        hs_v8 x, y;
        HS_V8_LOAD(x, z + d);
        HS_V8_LOAD(y, v + d);
        x += pv * y;
        HS_V8_STORE(z + d, x);
    }
}

/* The scratch of one pass (rows R = rows16(pass_seqs(ns) * ns)). */
typedef struct {
    float *x, *ln, *qkv, *z, *ao, *pre, *post, *mean, *rstd, *wq, *sc;
    float *lg;   /* (rows, V) every logit (n_tok 0), else NULL */
    float *head; /* the recomputed head's q, k, v (3 t dh), its z (t dh) and
                  * hs_attn_head_forward's scratch (2 t^2 + dh t) */
} suffix_buf;

/* out (N, 3 HD) <- ln (N, D) times layer l's W_Q | W_K | W_V + their biases,
 * as the forward's heads_project: each third pre-filled with its bias, then
 * a beta-1 product (W_QKV in place, or the per-head tables packed in wq). */
static void suffix_qkv(const hs_model *m, int l, float *out, const float *ln, size_t N, float *wq)
{
    const hs_config *c = &m->cfg;
    const hs_block_params *bp = &m->params.blocks[l];
    const int D = c->d_model, H = c->n_heads, dh = c->d_head, HD = H * dh;
    const float *bs[3] = {bp->b_Q, bp->b_K, bp->b_V};
    for (int which = 0; which < 3; which++) {
        int ld;
        const float *W;
        if (bp->W_QKV) {
            W = bp->W_QKV + (size_t)which * HD;
            ld = 3 * HD;
        } else {
            for (int h = 0; h < H; h++) {
                int lh;
                const float *Wh = hs_head_qkv(m, l, which, h, &lh);
                for (int d = 0; d < D; d++)
                    memcpy(wq + (size_t)d * HD + (size_t)h * dh, Wh + (size_t)d * lh, (size_t)dh * sizeof(float));
            }
            W = wq;
            ld = HD;
        }
        float *o = out + (size_t)which * HD;
        if (bs[which])
            for (size_t i = 0; i < N; i++) memcpy(o + i * 3 * HD, bs[which], (size_t)HD * sizeof(float));
        hs_sgemm(0, 0, (int)N, HD, D, 1.0f, ln, D, W, ld, bs[which] ? 1.0f : 0.0f, o, 3 * HD);
    }
}

/* The attention's output, the residual and the MLP of layer l on x (N, D)
 * in place, z (N, HD) its heads' mix. */
/* (ao then holds the MLP's output, or the attention's with no MLP.) */
static void suffix_rest(const hs_model *m, int l, suffix_buf *sb, size_t N)
{
    const hs_config *c = &m->cfg;
    const hs_block_params *bp = &m->params.blocks[l];
    const int D = c->d_model, M = c->d_mlp, HD = c->n_heads * c->d_head;
    hs_matmul_forward(sb->ao, sb->z, bp->W_O, bp->b_O, N, HD, D);
    hs_add_long(sb->x, sb->x, sb->ao, N * D);
    if (M == 0) return;
    const float *in = sb->x;
    if (c->norm != HS_NORM_NONE) {
        hs_norm_stats(sb->mean, sb->rstd, sb->x, N, D, c->norm, c->eps);
        hs_norm_apply_affine(sb->ln, sb->x, sb->mean, sb->rstd, bp->ln2_w, bp->ln2_b, N, D, 1, 1);
        in = sb->ln;
    }
    hs_matmul_forward(sb->pre, in, bp->W_in, bp->b_in, N, D, M);
    hs_act_forward(sb->post, NULL, sb->pre, N * M, c->act);
    hs_matmul_forward(sb->ao, sb->post, bp->W_out, bp->b_out, N, M, D);
    hs_add_long(sb->x, sb->x, sb->ao, N * D);
}

static void suffix_last(const hs_model *m, const hs_suffix_run *r, suffix_buf *sb, int b0, int nb, float *logits);

/* Sequences [b0, b0 + nb) of r, each from its block r->layer[b] on: at
 * block l the sequences entered by then (a prefix: r->layer is
 * nondecreasing) run as one product, those entering at l appended with their
 * input from r->resid[l]. A row's values do not depend on the rows beside it
 * (whole 16-row products), so this is each sequence's own run. */
static void suffix_pass(const hs_model *m, const hs_suffix_run *r, suffix_buf *sb, int b0, int nb, float *logits)
{
    const hs_config *c = &m->cfg;
    const int D = c->d_model, H = c->n_heads, dh = c->d_head, HD = H * dh, L = c->n_layers;
    const int t = r->t, s = r->s, ns = t - s;
    int act = 0; /* sequences entered */
    for (int l = r->layer[b0]; l < L; l++) {
        const int act0 = act;
        for (; act < nb && r->layer[b0 + act] == l; act++) /* block l's input at positions s.. */
            memcpy(sb->x + (size_t)act * ns * D, r->resid[l] + ((size_t)r->row[b0 + act] * t + s) * D,
                   (size_t)ns * D * sizeof(float));
        const size_t N = (size_t)act * ns, R = rows16(N);
        for (size_t i = N; i < R; i++) memcpy(sb->x + i * D, sb->x + (N - 1) * D, (size_t)D * sizeof(float));
        const hs_block_params *bp = &m->params.blocks[l];
        const float *in = sb->x;
        if (hs_ln1_in_front(c)) {
            hs_norm_stats(sb->mean, sb->rstd, sb->x, R, D, c->norm, c->eps);
            hs_norm_apply_affine(sb->ln, sb->x, sb->mean, sb->rstd, bp->ln1_w, bp->ln1_b, R, D, 1, 1);
            in = sb->ln;
        }
        suffix_qkv(m, l, sb->qkv, in, R, sb->wq);
        const float inv_scale = 1.0f / hs_attn_scale_at(c, l);
        for (int b = 0; b < act && r->exact; b++) /* each head's whole tile, the forward's kernels */
            for (int h = 0; h < H; h++) {
                const size_t ref = (size_t)r->row[b0 + b] * t;
                const float *qkv = sb->qkv + (size_t)b * ns * 3 * HD;
                float *q = sb->head, *k = q + (size_t)t * dh, *v = k + (size_t)t * dh, *z = v + (size_t)t * dh;
                memset(q, 0, (size_t)s * dh * sizeof(float)); /* rows before s: not read */
                for (int j = 0; j < t; j++) {
                    const float *kj = j < s ? r->k[l] + (ref + (size_t)j) * HD : qkv + (size_t)(j - s) * 3 * HD + HD;
                    const float *vj = j < s ? r->v[l] + (ref + (size_t)j) * HD : qkv + (size_t)(j - s) * 3 * HD + 2 * HD;
                    memcpy(k + (size_t)j * dh, kj + (size_t)h * dh, (size_t)dh * sizeof(float));
                    memcpy(v + (size_t)j * dh, vj + (size_t)h * dh, (size_t)dh * sizeof(float));
                    if (j >= s) memcpy(q + (size_t)j * dh, qkv + (size_t)(j - s) * 3 * HD + (size_t)h * dh,
                                       (size_t)dh * sizeof(float));
                }
                hs_attn_head_forward(m, l, q, k, v, t, z + (size_t)t * dh, z);
                for (int i = 0; i < ns; i++)
                    memcpy(sb->z + ((size_t)b * ns + i) * HD + (size_t)h * dh, z + (size_t)(s + i) * dh,
                           (size_t)dh * sizeof(float));
            }
        for (int b = 0; b < act && !r->exact; b++) {
            const size_t ref = (size_t)r->row[b0 + b] * t;
            const float *kr = r->k[l] + ref * HD, *vr = r->v[l] + ref * HD;
            const float *qkv = sb->qkv + (size_t)b * ns * 3 * HD;
            for (int i = 0; i < ns; i++) {
                const int q = s + i;
                for (int h = 0; h < H; h++) {
                    const float *qv = qkv + (size_t)i * 3 * HD + (size_t)h * dh;
                    float mx = -INFINITY;
                    for (int j = 0; j <= q; j++) {
                        const float *kv = j < s ? kr + (size_t)j * HD + (size_t)h * dh
                                                : qkv + (size_t)(j - s) * 3 * HD + HD + (size_t)h * dh;
                        sb->sc[j] = dot_dh(qv, kv, dh) * inv_scale;
                        if (sb->sc[j] > mx) mx = sb->sc[j];
                    }
                    for (int j = 0; j <= q; j++) sb->sc[j] -= mx;
                    hs_exp_span(sb->sc, sb->sc, (size_t)q + 1);
                    double sum = 0.0;
                    for (int j = 0; j <= q; j++) sum += sb->sc[j];
                    const float inv = (float)(1.0 / sum);
                    float *zo = sb->z + ((size_t)b * ns + i) * HD + (size_t)h * dh;
                    memset(zo, 0, (size_t)dh * sizeof(float));
                    for (int j = 0; j <= q; j++) {
                        const float *vv = j < s ? vr + (size_t)j * HD + (size_t)h * dh
                                                : qkv + (size_t)(j - s) * 3 * HD + 2 * HD + (size_t)h * dh;
                        axpy_dh(zo, sb->sc[j] * inv, vv, dh);
                    }
                }
            }
        }
        if (act > act0 && r->edit_z) r->edit_z(r->ctx, sb->z + (size_t)act0 * ns * HD, b0 + act0, act - act0, ns);
        if (l < L - 1 || r->observe) {
            for (size_t i = N; i < R; i++) memcpy(sb->z + i * HD, sb->z + (N - 1) * HD, (size_t)HD * sizeof(float));
            suffix_rest(m, l, sb, R);
            if (r->observe) r->observe(r->ctx, l, b0, act, ns, sb->z, c->d_mlp > 0 ? sb->ao : NULL);
            continue;
        }
        /* the last block from its attention output on: each sequence's read
         * row alone, compacted to the first rows */
        for (int b = 0; b < nb; b++) {
            const size_t from = (size_t)b * ns + (size_t)(r->read[b0 + b] - s);
            memmove(sb->z + (size_t)b * HD, sb->z + from * HD, (size_t)HD * sizeof(float));
            memmove(sb->x + (size_t)b * D, sb->x + from * D, (size_t)D * sizeof(float));
        }
        suffix_last(m, r, sb, b0, nb, logits);
    }
}

/* The named tokens' columns of W_U for nb rows fin (nb, D), already through
 * the final norm: logits[b, j] = fin[b] . W_U[:, tok[b, j]] (a dot product
 * over D in double, rounded to float) + b_U. */
static void token_logits(const hs_model *m, const float *fin, int nb, const int *tok, int n_tok, float *logits)
{
    const int D = m->cfg.d_model;
    for (int b = 0; b < nb; b++)
        for (int j = 0; j < n_tok; j++) {
            const int v = tok[(size_t)b * n_tok + j];
            const float *f = fin + (size_t)b * D;
            double acc = 0.0;
            if (m->params.W_U_T) {
                const float *w = m->params.W_U_T + (size_t)v * D;
                for (int d = 0; d < D; d++) acc += (double)f[d] * w[d];
            } else {
                for (int d = 0; d < D; d++) acc += (double)f[d] * hs_unembed_at(m, d, v);
            }
            float lg = (float)acc;
            if (m->params.b_U) lg += m->params.b_U[v];
            logits[(size_t)b * n_tok + j] = lg;
        }
}

void hs_final_token_logits(const hs_model *m, const float *resid, int nb, const int *tok, int n_tok,
                           float *scratch, float *logits)
{
    const hs_config *c = &m->cfg;
    const int D = c->d_model;
    const float *fin = resid;
    if (c->ln_final && c->norm != HS_NORM_NONE) {
        float *ln = scratch, *mean = scratch + (size_t)nb * D, *rstd = mean + nb;
        hs_norm_stats(mean, rstd, resid, (size_t)nb, D, c->norm, c->eps);
        hs_norm_apply_affine(ln, resid, mean, rstd, m->params.ln_final_w, m->params.ln_final_b, (size_t)nb, D, 1, 1);
        fin = ln;
    }
    token_logits(m, fin, nb, tok, n_tok, logits);
}

/* The last block from its attention output on for sequences [b0, b0 + nb):
 * sb->x (nb, D) their residual and sb->z (nb, HD) their heads' mix at their
 * read rows; the final norm, then the named tokens' logits, or with
 * r->n_tok 0 every logit by the forward's product (hs_unembed_forward). */
static void suffix_last(const hs_model *m, const hs_suffix_run *r, suffix_buf *sb, int b0, int nb, float *logits)
{
    const hs_config *c = &m->cfg;
    const int D = c->d_model, HD = c->n_heads * c->d_head, V = c->d_vocab;
    const size_t Rl = rows16((size_t)nb);
    for (size_t i = (size_t)nb; i < Rl; i++) {
        memcpy(sb->z + i * HD, sb->z + (size_t)(nb - 1) * HD, (size_t)HD * sizeof(float));
        memcpy(sb->x + i * D, sb->x + (size_t)(nb - 1) * D, (size_t)D * sizeof(float));
    }
    suffix_rest(m, c->n_layers - 1, sb, Rl);
    const float *fin = sb->x;
    if (c->ln_final && c->norm != HS_NORM_NONE) {
        hs_norm_stats(sb->mean, sb->rstd, sb->x, (size_t)nb, D, c->norm, c->eps);
        hs_norm_apply_affine(sb->ln, sb->x, sb->mean, sb->rstd, m->params.ln_final_w, m->params.ln_final_b,
                             (size_t)nb, D, 1, 1);
        fin = sb->ln;
    }
    if (r->n_tok == 0) { /* every logit: the forward's product, on whole 16-row units */
        if (fin != sb->ln) memcpy(sb->ln, fin, (size_t)nb * D * sizeof(float));
        for (size_t i = (size_t)nb; i < Rl; i++)
            memcpy(sb->ln + i * D, sb->ln + (size_t)(nb - 1) * D, (size_t)D * sizeof(float));
        hs_unembed_forward(sb->lg, sb->ln, &m->params, Rl, D, V);
        memcpy(logits + (size_t)b0 * V, sb->lg, (size_t)nb * V * sizeof(float));
        return;
    }
    token_logits(m, fin, nb, r->tok + (size_t)b0 * r->n_tok, r->n_tok, logits + (size_t)b0 * r->n_tok);
}

/* Sequences [b0, b0 + nb) of a run at the last block's read rows alone
 * (r->z_last): the residual from r->resid[L - 1] and z from r->z_last there,
 * r->head's z recomputed from head_qkv's q, k, v by the forward's kernels
 * (hs_attn_head_forward), r->edit_z, then the block from its attention
 * output on (suffix_last). */
static void suffix_last_pass(const hs_model *m, const hs_suffix_run *r, suffix_buf *sb, int b0, int nb,
                             float *logits)
{
    const hs_config *c = &m->cfg;
    const int D = c->d_model, dh = c->d_head, HD = c->n_heads * dh, L = c->n_layers, t = r->t;
    for (int b = 0; b < nb; b++) {
        const size_t row = (size_t)r->row[b0 + b] * t + (size_t)r->read[b0 + b];
        memcpy(sb->x + (size_t)b * D, r->resid[L - 1] + row * D, (size_t)D * sizeof(float));
        memcpy(sb->z + (size_t)b * HD, r->z_last + row * HD, (size_t)HD * sizeof(float));
        if (r->head < 0) continue;
        float *q = sb->head, *k = q + (size_t)t * dh, *v = k + (size_t)t * dh, *z = v + (size_t)t * dh;
        r->head_qkv(r->ctx, b0 + b, q, k, v);
        hs_attn_head_forward(m, L - 1, q, k, v, t, z + (size_t)t * dh, z);
        memcpy(sb->z + (size_t)b * HD + (size_t)r->head * dh, z + (size_t)r->read[b0 + b] * dh,
               (size_t)dh * sizeof(float));
    }
    if (r->edit_z) r->edit_z(r->ctx, sb->z, b0, nb, 1);
    suffix_last(m, r, sb, b0, nb, logits);
}

hs_status hs_forward_suffix(const hs_model *m, const hs_suffix_run *r, float *logits, hs_error *err)
{
    const hs_config *c = &m->cfg;
    if (!hs_forward_suffix_ok(c))
        return hs_fail(err, HS_ERR_INPUT, "forward suffix: the model's blocks are not the pre-norm, "
                                          "additive, softmax ones it runs");
    const int last = r->z_last != NULL; /* the last block's read rows alone */
    if (r->B < 1 || r->t > c->n_ctx || r->n_tok < 0 || (r->n_tok > 0 && r->tok == NULL) ||
        (last ? r->t < 1 : r->s < 1 || r->s >= r->t))
        return hs_fail(err, HS_ERR_INPUT, "forward suffix: %d sequences, positions %d..%d of %d", r->B, r->s,
                       r->t - 1, r->t);
    if (last && (r->head < -1 || r->head >= c->n_heads || (r->head >= 0 && r->head_qkv == NULL)))
        return hs_fail(err, HS_ERR_INPUT, "forward suffix: head %d to recompute (heads 0..%d, with its q, k, v)",
                       r->head, c->n_heads - 1);
    if (r->observe && last) return hs_fail(err, HS_ERR_INPUT, "forward suffix: observe runs every position, not z_last");
    const int s0 = last ? 0 : r->s;
    for (int b = 0; b < r->B; b++) {
        if (!r->observe && (r->read[b] < s0 || r->read[b] >= r->t))
            return hs_fail(err, HS_ERR_INPUT, "forward suffix: sequence %d reads position %d outside %d..%d", b,
                           r->read[b], s0, r->t - 1);
        if (r->layer[b] < 0 || r->layer[b] >= c->n_layers || (b > 0 && r->layer[b] < r->layer[b - 1]) ||
            (last && r->layer[b] != c->n_layers - 1))
            return hs_fail(err, HS_ERR_INPUT, "forward suffix: sequence %d starts at block %d (blocks 0..%d, "
                           "nondecreasing%s)", b, r->layer[b], c->n_layers - 1,
                           last ? "; the last alone with z_last" : "");
    }
    const int D = c->d_model, dh = c->d_head, HD = c->n_heads * dh, M = c->d_mlp, t = r->t;
    const int ns = last ? 1 : t - r->s, per = pass_seqs(ns);
    const size_t R = rows16((size_t)per * ns);
    const size_t wide = (size_t)(M > D ? M : D);
    const size_t lg = r->n_tok == 0 && !r->observe ? R * (size_t)c->d_vocab : 0;
    const size_t head = (last && r->head >= 0) || r->exact ? 5 * (size_t)t * dh + 2 * (size_t)t * t : 0;
    suffix_buf sb;
    const size_t floats = R * D * 3 + R * 3 * HD + R * HD + 2 * R * wide + 2 * R + (size_t)D * HD + (size_t)t + lg + head;
    float *mem = hs_floats_alloc(floats); /* a run after another of its size: the same pages */
    if (mem == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    sb.x = mem;
    sb.ln = sb.x + R * D;
    sb.ao = sb.ln + R * D;
    sb.qkv = sb.ao + R * D;
    sb.z = sb.qkv + R * 3 * HD;
    sb.pre = sb.z + R * HD;
    sb.post = sb.pre + R * wide;
    sb.mean = sb.post + R * wide;
    sb.rstd = sb.mean + R;
    sb.wq = sb.rstd + R;
    sb.sc = sb.wq + (size_t)D * HD;
    sb.lg = lg ? sb.sc + t : NULL;
    sb.head = head ? sb.sc + t + lg : NULL;
    for (int b0 = 0; b0 < r->B; b0 += per) {
        const int nb = r->B - b0 < per ? r->B - b0 : per;
        if (last) suffix_last_pass(m, r, &sb, b0, nb, logits);
        else suffix_pass(m, r, &sb, b0, nb, logits);
    }
    hs_floats_free(mem);
    return HS_OK;
}
