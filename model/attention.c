/*
 * model/attention.c -- the attention half of a block: the kernels (all heads'
 * Q, K, V projection on packed weights, the scores, the softmax or the
 * uniform pattern, the mix) and the step that runs them with their observer
 * points (hs_attention_forward); TransformerLens' split inputs are in
 * attention_split.c.
 *
 * Kernels are plain functions (outputs first, then inputs, weights, dims);
 * how attention runs as hs_sgemm products over whole T x T tiles and the
 * softmax's two row paths: model_internal.h (HS_SOFTMAX_LONG_T). A forward
 * running as one part spreads the (b, h) tiles over its pool (hc->pool);
 * without observer, at T >= 64, the tiles run in causal row blocks
 * (attn_causal_bg, the same bits).
 */
#include "model.h"
#include "model_internal.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Projections                                                               */

/* out (N, H*dh) = inp (N, D) @ Wp (D, H*dh) + b (H*dh): all heads' projection
 * in one sgemm on the packed weights (hs_acts_wpack), C pre-filled with b
 * (rows over pool's workers: hs_sgemm_pool_fill). */
static void heads_project(hs_pool *pool, float *out, const float *inp, const float *Wp, int ldw,
                          const float *b, size_t N, int D, int H, int dh)
{
    const int HD = H * dh;
    hs_sgemm_pool_fill(pool, b, 0, (int)N, HD, D, 1.0f, inp, D, Wp, ldw, b ? 1.0f : 0.0f, out, HD);
}

/* Packs W (H, D, dh) into Wp (D, H*dh). */
static void pack_heads(float *Wp, const float *W, int D, int H, int dh)
{
    for (int h = 0; h < H; h++)
        for (int d = 0; d < D; d++)
            memcpy(Wp + (size_t)d * H * dh + (size_t)h * dh, W + ((size_t)h * D + d) * dh,
                   (size_t)dh * sizeof(float));
}

/* Packs layer l's W_Q, W_K (softmax only) and W_V into acts
 * (model_internal.h). */
void hs_pack_qkv(const hs_model *m, hs_acts *acts, int l)
{
    const hs_config *c = &m->cfg;
    const hs_block_params *bp = &m->params.blocks[l];
    if (bp->W_QKV) return; /* read packed in place (hs_qkv_packed) */
    const int Hkv = hs_kv_heads(c); /* W_K, W_V: key/value heads (GQA) */
    if (c->attn == HS_ATTN_SOFTMAX) {
        pack_heads(hs_acts_wpack(acts, c, l, 0), bp->W_Q, c->d_model, c->n_heads, c->d_head);
        pack_heads(hs_acts_wpack(acts, c, l, 1), bp->W_K, c->d_model, Hkv, c->d_head);
    }
    pack_heads(hs_acts_wpack(acts, c, l, 2), bp->W_V, c->d_model, Hkv, c->d_head);
}

/* ------------------------------------------------------------------------ */
/* Scores, softmax, mix                                                      */

/* Positions from which a one-part forward spreads the attention's (b, h)
 * tiles over its pool (below, a T x T tile is too short to pay for waking
 * the workers). */
#define HS_ATTN_POOL_T 64

/* The score of query i, key j beyond the product (attn_scores): ALiBi's
 * slope * (j - i) per head (slopes NULL: none), and a local window (window
 * 0: none): keys with i - j >= window masked. */
typedef struct {
    const float *slopes; /* (H) */
    int window;
} score_mods;

/* scores (B,H,T,T) <- q.k * inv_scale (inv_scale = 1 / hs_attn_scale_at), j > i = -inf,
 * for sequence b and the query heads of key head g alone (one job of
 * attn_scores_job; every (b, g) writes its own tiles).
 * q (B,T,H,dh), k (B,T,Hkv,dh) (query head h reads key head hs_kv_head);
 * kT (B, Hkv*dh, T) scratch. Key head g's columns of sequence b are
 * transposed once, then per head S = q k^T is an NN product (hs_sgemm:
 * libxsmm) over the whole T x T tile, scaled and masked after; with mods,
 * ALiBi's bias added after the scaling and the local window masked
 * (score_mods). */
typedef struct {
    float *scores, *kT;
    const float *q, *k;
    int B, T, H, Hkv, dh;
    float inv_scale;
    const score_mods *mods;
    hs_sgemm_plan qk;
} scores_job;

/* Rows of a causal block: libxsmm's row block (common/gemm.c), so a block's
 * product runs the kernels of the whole tile's. */
#define CAUSAL_ROWS 64

/* 1 when the T x T products may run in causal row blocks of CAUSAL_ROWS
 * (query rows [i0, i1) against keys [0, i1) alone): every block's product
 * is wide enough that libxsmm gives each value the bits of the whole tile's
 * (N a multiple of 64, or T itself when T % 64 is not 1..16, common/gemm.c
 * narrow), and the keys beyond i1 add exact zeros to the mix. */
static int causal_rows_ok(int T)
{
    return T >= HS_ATTN_POOL_T && (T % 64 == 0 || T % 64 > 16);
}

HS_CLONES
/* Si[0..n) *= inv_scale, eight at a time then one at a time: the causal
 * rows' scores and a renormalised pattern row, the same bits either way */
static inline void scale_row(float *Si, int n, float inv_scale)
{
    hs_scale(Si, Si, inv_scale, n);
}

/* Block l's score_mods (c's ALiBi slopes into slopes[n_heads], its local
 * window). */
static void score_mods_of(score_mods *mods, float *slopes, const hs_config *c, int l)
{
    mods->slopes = NULL;
    mods->window = c->attn_local[l] ? c->window_size : 0;
    if (c->pos == HS_POS_ALIBI) {
        double sd[64];
        hs_alibi_slopes(c->n_heads, sd);
        for (int h = 0; h < c->n_heads; h++) slopes[h] = (float)sd[h];
        mods->slopes = slopes;
    }
}

static void attn_scores_bg(const scores_job *sj, int b, int g)
{
    const int T = sj->T, H = sj->H, Hkv = sj->Hkv, dh = sj->dh, group = H / Hkv;
    const size_t HD = (size_t)H * dh, KD = (size_t)Hkv * dh;
    const float inv_scale = sj->inv_scale;
    const score_mods *mods = sj->mods;
    float *kT = sj->kT + (size_t)b * KD * T + (size_t)g * dh * T;
    hs_transpose_rows(kT, sj->k + (size_t)b * T * KD + (size_t)g * dh, T, dh, KD);
    for (int h = g * group; h < (g + 1) * group; h++) {
        float *S = sj->scores + ((size_t)b * H + h) * T * T;
        hs_sgemm_run(&sj->qk, sj->q + (size_t)b * T * HD + (size_t)h * dh, kT, S);
        if (mods) { /* ALiBi and / or a local window: the plain loop */
            const float slope = mods->slopes ? mods->slopes[h] : 0.0f;
            for (int i = 0; i < T; i++) {
                float *Si = S + (size_t)i * T;
                for (int j = 0; j < T; j++) {
                    if (j > i || (mods->window > 0 && i - j >= mods->window)) {
                        Si[j] = -INFINITY;
                        continue;
                    }
                    Si[j] *= inv_scale;
                    if (mods->slopes) Si[j] += slope * (float)(j - i);
                }
            }
            continue;
        }
        for (int i = 0; i < T; i++) {
            float *Si = S + (size_t)i * T;
            scale_row(Si, i + 1, inv_scale);
            for (int j = i + 1; j < T; j++) Si[j] = -INFINITY;
        }
    }
}

/* attn_scores_bg without mods in causal row blocks (causal_rows_ok): each
 * block's scores against the keys up to its last row alone, the rest of its
 * rows -inf without a product (the same bits as the whole tile's). */
static void attn_scores_causal_bg(const scores_job *sj, int b, int g)
{
    const int T = sj->T, H = sj->H, Hkv = sj->Hkv, dh = sj->dh, group = H / Hkv;
    const size_t HD = (size_t)H * dh, KD = (size_t)Hkv * dh;
    float *kT = sj->kT + (size_t)b * KD * T + (size_t)g * dh * T;
    hs_transpose_rows(kT, sj->k + (size_t)b * T * KD + (size_t)g * dh, T, dh, KD);
    for (int h = g * group; h < (g + 1) * group; h++) {
        float *S = sj->scores + ((size_t)b * H + h) * T * T;
        const float *q = sj->q + (size_t)b * T * HD + (size_t)h * dh;
        for (int i0 = 0; i0 < T; i0 += CAUSAL_ROWS) {
            const int i1 = i0 + CAUSAL_ROWS < T ? i0 + CAUSAL_ROWS : T;
            hs_sgemm(0, 0, i1 - i0, i1, dh, 1.0f, q + (size_t)i0 * HD, (int)HD, kT, T, 0.0f,
                     S + (size_t)i0 * T, T);
            for (int i = i0; i < i1; i++) {
                float *Si = S + (size_t)i * T;
                scale_row(Si, i + 1, sj->inv_scale);
                for (int j = i + 1; j < T; j++) Si[j] = -INFINITY;
            }
        }
    }
}

static hs_status attn_scores_job(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    (void)err;
    const scores_job *sj = ctx;
    if (sj->mods == NULL && causal_rows_ok(sj->T))
        attn_scores_causal_bg(sj, j / sj->Hkv, j % sj->Hkv);
    else
        attn_scores_bg(sj, j / sj->Hkv, j % sj->Hkv);
    return HS_OK;
}

/* Every (b, g) of attn_scores_bg, spread over pool (NULL: this thread). */
static void attn_scores(hs_pool *pool, float *scores, float *kT, const float *q, const float *k,
                        int B, int T, int H, int Hkv, int dh, float inv_scale,
                        const score_mods *mods)
{
    scores_job sj = {scores, kT, q, k, B, T, H, Hkv, dh, inv_scale, mods, {0}};
    hs_sgemm_plan_init(&sj.qk, 0, 0, T, T, dh, 1.0f, H * dh, T, 0.0f, T);
    hs_error err;
    (void)hs_pool_for(pool, B * Hkv, attn_scores_job, &sj, &err); /* the jobs cannot fail */
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

/* The long rows' softmax of one (b, h) tile a job (attn_softmax). */
typedef struct {
    float *att;
    const float *scores;
    int T, full;
} softmax_job;

static hs_status softmax_tile_job(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    (void)err;
    const softmax_job *sj = ctx;
    const size_t TT = (size_t)sj->T * sj->T;
    /* a tile's row r is row r % T of it, as in one call over every row */
    softmax_rows_long(sj->att + (size_t)j * TT, sj->scores + (size_t)j * TT, (size_t)sj->T, sj->T,
                      sj->full);
    return HS_OK;
}

HS_CLONES
static void attn_softmax(hs_pool *pool, float *att, const float *scores, int B, int H, int T,
                         int full)
{
    if (T >= HS_SOFTMAX_LONG_T) { /* long rows: 16-lane sums (model_simd.h), a tile a job */
        softmax_job sj = {att, scores, T, full};
        hs_error err;
        (void)hs_pool_for(pool, B * H, softmax_tile_job, &sj, &err); /* cannot fail */
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
            hs_shift(a, s, mx, T);
        }
        hs_exp_span(A, A, TT);
        for (int i = 0; i < T; i++) {
            float *a = A + (size_t)i * T;
            if (bad >> i & 1u) {
                memset(a, 0, (size_t)T * sizeof(float));
                continue;
            }
            float sum = 0.0f;
            for (int j = 0; j < T; j++) sum += a[j];
            scale_row(a, T, sum > 0.0f ? 1.0f / sum : 0.0f);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Causal blocks (no observer)                                               */

/* 1 when block k may run its attention in causal row blocks
 * (attn_causal_bg) if no observer edits its scores or pattern: softmax
 * attention without ALiBi or a local window, nothing edited before it (an
 * edited v's inf or NaN the zero weights would carry into z, as
 * TransformerLens' product does), and blocks that give the whole tile's
 * bits (causal_rows_ok). */
static int causal_blocks_ok(const hs_block_step *k, int T)
{
    return k->c->attn == HS_ATTN_SOFTMAX && k->c->pos != HS_POS_ALIBI && !k->c->attn_local[k->l] &&
           !k->hc->changed && causal_rows_ok(T);
}

typedef struct {
    float *scores, *att, *z, *kT;
    const float *q, *k, *v;
    int B, T, H, Hkv, dh;
    float inv_scale;
    int keep_att; /* 1: att's tiles written whole; 0: no reader after the forward
                   * (acts->logit_pos != -1, or the pattern kept in keep_a),
                   * each block's weights in rows [0, CAUSAL_ROWS) of the job's
                   * first tile alone */
    float *keep_s, *keep_a; /* (B,H,T,T) an observer keeps (hs_hook_keeps), or NULL:
                             * each block's scores (-inf above the diagonal) and
                             * weights (0 there) written there with streaming stores */
} causal_job;

/* Sequence b, the query heads of key head g, without observer: per block of
 * CAUSAL_ROWS query rows [i0, i1) the scores against keys [0, i1) alone
 * (scaled; keys above the diagonal are not read), their softmax (whole rows
 * of att written, exact zeros above the diagonal, as attn_softmax), then z's
 * rows = att[i0:i1, 0:i1] v[0:i1]: the causal half of the T x T products,
 * while a block is in cache. The same values as attn_scores, attn_softmax
 * and attn_mix: each score and each z is the same sum in the same order (the
 * keys beyond i1 add exact zeros there). The scores, read by no one after
 * the block, are written in rows [0, CAUSAL_ROWS) of the job's first
 * scores tile for every block and head (256 KB at T 1,024: in L2, where the
 * whole lower triangle, 2 MB a head, went out to memory); without keep_att
 * the weights too (the job's first att tile's first rows, up to column i1):
 * GPT-2 small at 1,024 tokens then writes ~0.9 GB less a forward. An
 * observer that only keeps the scores or the pattern (keep_s, keep_a: the
 * activation cache's entries) gets each block's rows whole from that buffer
 * in cache (the scores' rows -inf above the diagonal, the weights' 0), with
 * streaming stores: written once, never read back (the whole-tile path
 * wrote the scores, read them for the softmax, wrote the pattern and read
 * it for the mix: ~2 GB of traffic a forward less at GPT-2 small, 1,024
 * tokens). */
HS_CLONES
static void attn_causal_bg(const causal_job *cj, int b, int g)
{
    const int T = cj->T, H = cj->H, Hkv = cj->Hkv, dh = cj->dh, group = H / Hkv;
    const size_t HD = (size_t)H * dh, KD = (size_t)Hkv * dh, TT = (size_t)T * T;
    float *kT = cj->kT + (size_t)b * KD * T + (size_t)g * dh * T;
    hs_transpose_rows(kT, cj->k + (size_t)b * T * KD + (size_t)g * dh, T, dh, KD);
    const float *v = cj->v + (size_t)b * T * KD + (size_t)g * dh;
    float *Sb = cj->scores + ((size_t)b * H + (size_t)g * group) * TT;
    float *Ab = cj->att + ((size_t)b * H + (size_t)g * group) * TT;
    for (int h = g * group; h < (g + 1) * group; h++) {
        float *A = cj->att + ((size_t)b * H + h) * TT;
        const float *q = cj->q + (size_t)b * T * HD + (size_t)h * dh;
        float *z = cj->z + (size_t)b * T * HD + (size_t)h * dh;
        float *ks = cj->keep_s ? cj->keep_s + ((size_t)b * H + h) * TT : NULL;
        float *ka = cj->keep_a ? cj->keep_a + ((size_t)b * H + h) * TT : NULL;
        for (int i0 = 0; i0 < T; i0 += CAUSAL_ROWS) {
            const int i1 = i0 + CAUSAL_ROWS < T ? i0 + CAUSAL_ROWS : T, rows = i1 - i0;
            hs_sgemm(0, 0, rows, i1, dh, 1.0f, q + (size_t)i0 * HD, (int)HD, kT, T, 0.0f, Sb, T);
            for (int i = i0; i < i1; i++) {
                float *Si = Sb + (size_t)(i - i0) * T;
                scale_row(Si, i + 1, cj->inv_scale);
                /* the row then -inf above the diagonal, streamed (the
                 * softmax reads no score there) */
                if (ks) hs_store_streaming_fill(ks + (size_t)i * T, Si, (size_t)i + 1, -INFINITY, (size_t)T);
            }
            float *Ai = cj->keep_att ? A + (size_t)i0 * T : Ab;
            HS_SIMD_CALL(hs_softmax_rows_w_, Ai, Sb, (size_t)rows, T, 0, (size_t)i0, T,
                         cj->keep_att ? T : i1);
            /* each row's weights, then zeros above the diagonal, streamed */
            if (ka)
                for (int i = i0; i < i1; i++)
                    hs_store_streaming_fill(ka + (size_t)i * T, Ai + (size_t)(i - i0) * T,
                                            (size_t)i + 1, 0.0f, (size_t)T);
            hs_sgemm(0, 0, rows, dh, i1, 1.0f, Ai, T, v, (int)KD, 0.0f, z + (size_t)i0 * HD,
                     (int)HD);
        }
    }
    if (cj->keep_s || cj->keep_a) hs_streaming_fence(); /* before the pool's job ends */
}

static hs_status attn_causal_job(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    (void)err;
    const causal_job *cj = ctx;
    attn_causal_bg(cj, j / cj->Hkv, j % cj->Hkv);
    return HS_OK;
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

/* z (B,T,H,dh) = att (B,H,T,T) @ v (B,T,Hkv,dh) per (b,h) (head h reads
 * value head hs_kv_head): one NN product
 * (hs_sgemm: libxsmm) over every src, as TransformerLens mixes (weights an
 * observer wrote above the diagonal of hook_pattern are mixed in); one (b,
 * h) a job, spread over pool (NULL: this thread). */
typedef struct {
    float *z;
    const float *att, *v;
    int T, H, Hkv, dh;
    int causal; /* 1: exact zeros above the diagonal, rows in causal blocks (causal_rows_ok) */
    hs_sgemm_plan av;
} mix_job;

static hs_status attn_mix_job(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    (void)err;
    const mix_job *mj = ctx;
    const int b = j / mj->H, h = j % mj->H, T = mj->T, dh = mj->dh;
    const size_t HD = (size_t)mj->H * dh, KD = (size_t)mj->Hkv * dh;
    const float *A = mj->att + (size_t)j * T * T;
    const float *v = mj->v + (size_t)b * T * KD + (size_t)(h / (mj->H / mj->Hkv)) * dh;
    float *z = mj->z + (size_t)b * T * HD + (size_t)h * dh;
    if (mj->causal) { /* the weights of keys beyond a block's last row are exact zeros */
        for (int i0 = 0; i0 < T; i0 += CAUSAL_ROWS) {
            const int i1 = i0 + CAUSAL_ROWS < T ? i0 + CAUSAL_ROWS : T;
            hs_sgemm(0, 0, i1 - i0, dh, i1, 1.0f, A + (size_t)i0 * T, T, v, (int)KD, 0.0f,
                     z + (size_t)i0 * HD, (int)HD);
        }
        return HS_OK;
    }
    /* whole rows: above the diagonal the weights are exact zeros (or an
     * observer's, which TransformerLens mixes in) */
    hs_sgemm_run(&mj->av, A, v, z);
    return HS_OK;
}

/* causal: att holds exact zeros above the diagonal (no observer wrote
 * there), so the rows may run in causal blocks where causal_rows_ok(T). */
static void attn_mix(hs_pool *pool, float *z, const float *att, const float *v, int B, int T,
                     int H, int Hkv, int dh, int causal)
{
    mix_job mj = {z, att, v, T, H, Hkv, dh, causal && causal_rows_ok(T), {0}};
    hs_sgemm_plan_init(&mj.av, 0, 0, T, dh, T, 1.0f, T, Hkv * dh, 0.0f, H * dh);
    hs_error err;
    (void)hs_pool_for(pool, B * H, attn_mix_job, &mj, &err); /* the jobs cannot fail */
}

/* ------------------------------------------------------------------------ */
/* The attention step                                                        */

/* LN1 of block l's resid_pre (with its points), then q, k, v (B,T,H,dh), each
 * observed: TransformerLens' split inputs first when observed
 * (hs_attn_split_inputs, attention_split.c), their edits applied after the
 * ordinary projections (hs_attn_split_apply). */
static hs_status attn_qkv(const hs_block_step *k, hs_error *err)
{
    const hs_config *c = k->c;
    hs_block_acts *ba = k->ba;
    const hs_block_params *bp = k->bp;
    const int D = c->d_model, H = c->n_heads, dh = c->d_head, l = k->l, B = k->B, T = k->T;
    const int Hkv = hs_kv_heads(c);
    char nm[96];

    hs_split_in si = {NULL, NULL, {NULL, NULL, NULL}};
    if (k->hc->obs) {
        hs_status s = hs_attn_split_inputs(k->hc, k->m, l, k->acts, ba, B, T, &si, err);
        if (s != HS_OK) return s;
    }

    /* LN1 */
    if (hs_ln1_in_front(c)) {
        snprintf(nm, sizeof nm, "blocks.%d.ln1", l);
        hs_status s = hs_norm_forward_hooked(k->hc, nm, ba->ln1_out, ba->ln1_mean, ba->ln1_rstd,
                                             ba->resid_pre, bp->ln1_w, bp->ln1_b, B, T, D,
                                             c->norm, c->eps, k->acts->scratch, err);
        if (s != HS_OK) return s;
    } else {
        memcpy(ba->ln1_out, ba->resid_pre, k->BT * D * sizeof(float));
    }

    /* Q, K, V */
    int ldw;
    const float *Wp;
    if (c->attn == HS_ATTN_SOFTMAX) {
        Wp = hs_qkv_packed(k->m, k->acts, l, 0, &ldw);
        heads_project(k->hc->pool, ba->q, ba->ln1_out, Wp, ldw, bp->b_Q, k->BT, D, H, dh);
        Wp = hs_qkv_packed(k->m, k->acts, l, 1, &ldw);
        heads_project(k->hc->pool, ba->k, ba->ln1_out, Wp, ldw, bp->b_K, k->BT, D, Hkv, dh);
    }
    Wp = hs_qkv_packed(k->m, k->acts, l, 2, &ldw);
    heads_project(k->hc->pool, ba->v, ba->ln1_out, Wp, ldw, bp->b_V, k->BT, D, Hkv, dh);
    if (si.mem) {
        snprintf(nm, sizeof nm, "blocks.%d.ln1.hook_scale", l);
        int ln1_observed = hs_ln1_in_front(c) && hs_hook_wants(k->hc, nm);
        snprintf(nm, sizeof nm, "blocks.%d.ln1.hook_normalized", l);
        ln1_observed |= hs_ln1_in_front(c) && hs_hook_wants(k->hc, nm);
        hs_status s = hs_attn_split_apply(&si, k->m, l, ba, B, T, ln1_observed, err);
        if (s != HS_OK) return s;
    }
    if (c->attn == HS_ATTN_SOFTMAX) {
        snprintf(nm, sizeof nm, "blocks.%d.attn.hook_q", l);
        HS_HOOK(k->hc, nm, ba->q, 4, B, T, H, dh);
        snprintf(nm, sizeof nm, "blocks.%d.attn.hook_k", l);
        HS_HOOK(k->hc, nm, ba->k, 4, B, T, Hkv, dh);
    }
    snprintf(nm, sizeof nm, "blocks.%d.attn.hook_v", l);
    HS_HOOK(k->hc, nm, ba->v, 4, B, T, Hkv, dh);
    if (c->pos == HS_POS_ROTARY) {
        /* TL's order: hook_q/k/v, then the rotation into hook_rot_q/k (what
         * the scores read: q and k hold the rotated values from here on) */
        hs_rotary_apply(ba->q, B, T, H, dh, c, k->acts->rope, 0);
        hs_rotary_apply(ba->k, B, T, Hkv, dh, c, k->acts->rope, 0);
        snprintf(nm, sizeof nm, "blocks.%d.attn.hook_rot_q", l);
        HS_HOOK(k->hc, nm, ba->q, 4, B, T, H, dh);
        snprintf(nm, sizeof nm, "blocks.%d.attn.hook_rot_k", l);
        HS_HOOK(k->hc, nm, ba->k, 4, B, T, Hkv, dh);
    }
    return HS_OK;
}

/* Block l's pattern att (B,H,T,T) (softmax of the observed scores, or the
 * uniform one), observed, then z = att v (B,T,H,dh), observed. */
static hs_status attn_pattern(const hs_block_step *k, hs_error *err)
{
    hs_block_acts *ba = k->ba;
    hs_acts *acts = k->acts;
    const int H = k->c->n_heads, dh = k->c->d_head, B = k->B, T = k->T;
    /* heads over the pool's workers when the forward runs as one part
     * (hc->pool) and the tiles are large enough to gain: every tile is the
     * same computation on whichever thread, so the bits do not change */
    hs_pool *pool = T >= HS_ATTN_POOL_T ? k->hc->pool : NULL;
    char nm[96];

    char np[96];
    snprintf(nm, sizeof nm, "blocks.%d.attn.hook_attn_scores", k->l);
    snprintf(np, sizeof np, "blocks.%d.attn.hook_pattern", k->l);
    /* the scores and the pattern are written where the observer keeps them
     * when it offers a buffer (hs_forward_dest: hs_run_with_cache's
     * entries); with an observer that only keeps both (or wants neither)
     * they run in causal blocks (hs_hook_keeps, attn_causal_bg) */
    float *scores = NULL, *att = NULL;
    int have_s = 0, have_a = 0;
    if (causal_blocks_ok(k, T)) {
        float *ks, *ka = NULL;
        const int keeps_s = hs_hook_keeps(k->hc, nm, acts->scores, &ks, 4, B, H, T, T);
        const int keeps_a = keeps_s && hs_hook_keeps(k->hc, np, ba->att, &ka, 4, B, H, T, T);
        scores = ks ? ks : acts->scores, have_s = 1;
        att = ka ? ka : ba->att, have_a = keeps_s;
        if (keeps_s && keeps_a) {
            /* no backward follows a forward at one position or none
             * (hs_backward_acts refuses it; hs_backward computes a pattern
             * flagged elsewhere again first), so its patterns are not kept */
            const int keep_att = acts->logit_pos == -1 && ka == NULL;
            causal_job cj = {acts->scores, ba->att, ba->z, acts->scratch, ba->q, ba->k, ba->v,
                             B, T, H, hs_kv_heads(k->c), dh,
                             1.0f / hs_attn_scale_at(k->c, k->l), keep_att, ks, ka};
            hs_error e2;
            (void)hs_pool_for(pool, B * cj.Hkv, attn_causal_job, &cj, &e2); /* cannot fail */
            if (!keep_att) acts->att_elsewhere[k->l] = 1;
            /* the observer only keeps them: it is told now, in order */
            const char *pts[2] = {nm, np};
            float *bufs[2] = {ks, ka};
            for (int x = 0; x < 2; x++) {
                if (bufs[x] == NULL) continue;
                const int r = hs_hook(k->hc, pts[x], bufs[x], 4, B, H, T, T);
                if (r < 0) return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", pts[x]);
                if (r > 0)
                    return hs_fail(err, HS_ERR_CALLBACK, "observer changed %s, which it said it "
                                   "only keeps (hs_observer_dest_fn)", pts[x]);
            }
            snprintf(nm, sizeof nm, "blocks.%d.attn.hook_z", k->l);
            HS_HOOK(k->hc, nm, ba->z, 4, B, T, H, dh);
            return HS_OK;
        }
    }
    /* the whole tiles: the pattern is read by the mix where it was written;
     * att then stays stale unless an edit made it differ from the model's
     * own (hs_acts.att_elsewhere: the backward computes it again) */
    int r = 0;
    if (k->c->attn == HS_ATTN_SOFTMAX) {
        float slopes[64]; /* n_heads <= 64 (hs_config_validate) */
        score_mods mods;
        score_mods_of(&mods, slopes, k->c, k->l);
        /* the scores are the forward's scratch unless the observer keeps them */
        if (!have_s) scores = hs_hook_dest(k->hc, nm, acts->scores, 4, B, H, T, T);
        attn_scores(pool, scores, acts->scratch, ba->q, ba->k, B, T, H, hs_kv_heads(k->c), dh,
                    1.0f / hs_attn_scale_at(k->c, k->l),
                    mods.slopes || mods.window ? &mods : NULL);
        r = hs_hook(k->hc, nm, scores, 4, B, H, T, T);
        if (r < 0) return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", nm);
        /* asked after the scores' hook: the observer fills one buffer at a
         * time (hs_forward_dest), unless asked above */
        if (!have_a) att = hs_hook_dest(k->hc, np, ba->att, 4, B, H, T, T);
        attn_softmax(pool, att, scores, B, H, T,
                     r > 0 && above_diagonal_edited(scores, B, H, T, -INFINITY));
    } else {
        att = hs_hook_dest(k->hc, np, ba->att, 4, B, H, T, T);
        attn_uniform(att, B, H, T);
    }
    int rp = hs_hook(k->hc, np, att, 4, B, H, T, T);
    if (rp < 0) return hs_fail(err, HS_ERR_CALLBACK, "forward aborted by observer at %s", np);
    if (att != ba->att) {
        if (r > 0 || rp > 0) /* edited: not what q and k give again */
            memcpy(ba->att, att, (size_t)B * H * T * T * sizeof(float));
        else
            acts->att_elsewhere[k->l] = 1;
    }
    /* causal blocks unless an observer edited a point so far (above the
     * diagonal of the scores or the pattern, or a v whose inf or NaN the
     * zero weights would carry into z, as TransformerLens' product does) */
    const int causal = !k->hc->changed;
    attn_mix(pool, ba->z, att, ba->v, B, T, H, hs_kv_heads(k->c), dh, causal);
    snprintf(nm, sizeof nm, "blocks.%d.attn.hook_z", k->l);
    HS_HOOK(k->hc, nm, ba->z, 4, B, T, H, dh);
    return HS_OK;
}

void hs_attn_patterns_restore(const hs_model *m, hs_acts *acts)
{
    const hs_config *c = &m->cfg;
    const int B = acts->b, T = acts->t, H = c->n_heads;
    /* the pool as a one-part forward's (hs_forward_dest): the bits do not
     * depend on it */
    hs_pool *pool = T >= HS_ATTN_POOL_T && hs_pool_threads(acts->pool) > 1 ? acts->pool : NULL;
    for (int l = 0; l < c->n_layers; l++) {
        if (!acts->att_elsewhere[l]) continue;
        acts->att_elsewhere[l] = 0;
        hs_block_acts *ba = &acts->blocks[l];
        if (c->attn != HS_ATTN_SOFTMAX) {
            attn_uniform(ba->att, B, H, T);
            continue;
        }
        float slopes[64];
        score_mods mods;
        score_mods_of(&mods, slopes, c, l);
        attn_scores(pool, acts->scores, acts->scratch, ba->q, ba->k, B, T, H, hs_kv_heads(c),
                    c->d_head, 1.0f / hs_attn_scale_at(c, l), mods.slopes || mods.window ? &mods : NULL);
        attn_softmax(pool, ba->att, acts->scores, B, H, T, 0);
    }
}

/* Block l's attn_out (B,T,D) = z W_O, all heads in one sgemm, + b_O unless
 * fuse; each head's hook_result (B,T,H,D) only when asked: an edit makes
 * attn_out b_O + the sum of the heads' results. */
static hs_status attn_output(const hs_block_step *k, hs_error *err)
{
    hs_block_acts *ba = k->ba;
    const hs_block_params *bp = k->bp;
    const int D = k->c->d_model, H = k->c->n_heads, dh = k->c->d_head;
    const size_t BT = k->BT;
    char nm[96];

    hs_sgemm_pool(k->hc->pool, 0, (int)BT, D, H * dh, 1.0f, ba->z, H * dh, bp->W_O, D, 0.0f,
                  ba->attn_out, D);
    if (!k->fuse && bp->b_O) hs_add_bias_rows_pool(k->hc->pool, ba->attn_out, bp->b_O, BT, D);
    snprintf(nm, sizeof nm, "blocks.%d.attn.hook_result", k->l);
    if (hs_hook_wants(k->hc, nm)) {
        /* (B,T,H,D) in the forward's scratch, or where the observer keeps it
         * (hs_forward_dest) */
        float *res = hs_hook_dest(k->hc, nm, k->acts->scratch, 4, k->B, k->T, H, D);
        /* each head's rows over the pool (hs_sgemm_pool: the bits of one
         * call; on this thread alone, OpenBLAS at one thread in a one-part
         * forward, 14.5 GFLOP at GPT-2 small, 1,024 tokens ran on one core) */
        for (int h = 0; h < H; h++)
            hs_sgemm_pool(k->hc->pool, 0, (int)BT, D, dh, 1.0f, ba->z + (size_t)h * dh, H * dh,
                          bp->W_O + (size_t)h * dh * D, D, 0.0f, res + (size_t)h * D, H * D);
        int r = hs_hook(k->hc, nm, res, 4, k->B, k->T, H, D);
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
    return HS_OK;
}

hs_status hs_attention_forward(const hs_block_step *k, hs_error *err)
{
    hs_status s = attn_qkv(k, err);
    if (s == HS_OK) s = attn_pattern(k, err);
    if (s == HS_OK) s = attn_output(k, err);
    return s;
}

/* One sequence's one head as the forward computes it (model_internal.h):
 * attn_scores, attn_softmax and attn_mix on a batch of one sequence and one
 * head, so every value is the forward's. */
void hs_attn_head_forward(const hs_model *m, int l, const float *q, const float *k, const float *v, int T,
                          float *scratch, float *z)
{
    const int dh = m->cfg.d_head;
    float *scores = scratch, *att = scores + (size_t)T * T, *kT = att + (size_t)T * T;
    attn_scores(NULL, scores, kT, q, k, 1, T, 1, 1, dh, 1.0f / hs_attn_scale_at(&m->cfg, l), NULL);
    attn_softmax(NULL, att, scores, 1, 1, T, 0);
    attn_mix(NULL, z, att, v, 1, T, 1, 1, dh, 0);
}
