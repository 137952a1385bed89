/*
 * model/backward.c -- backward of the mean next-token cross-entropy.
 *
 * Every *_backward here accumulates (+=) into parameter gradients (the caller
 * zeros them, hs_zero_grad) and into the input gradient it is given, as
 * llm.c's kernels do. Activation gradients live in acts->d_mem.
 */
#define _POSIX_C_SOURCE 200809L
#include "model.h"
#include "train.h"
#include "model_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The norm's backward (model_internal.h). The row sums run in float over 8
 * lanes added in a fixed order (then the tail), the input gradient in
 * float: relative error ~1e-7 per element at D 64-512 (the
 * finite-difference and PyTorch-parity tests bound it). */
HS_CLONES
void hs_norm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                      const float *w, const float *mean, const float *rstd, size_t N, int D,
                      hs_norm type)
{
    const int d0 = D & ~7;
    for (size_t i = 0; i < N; i++) {
        const float *x = inp + i * D;
        const float *g = dout + i * D;
        float *dx = dinp + i * D;
        const float mu = mean[i], rs = rstd[i];
        const hs_v8 vmu = HS_V8_SET1(mu), vrs = HS_V8_SET1(rs);
        hs_v8 a = HS_V8_SET1(0.0f), b = HS_V8_SET1(0.0f);
        for (int d = 0; d < d0; d += 8) {
            hs_v8 vx, vg, xhat, dn;
            HS_V8_LOAD(vx, x + d);
            HS_V8_LOAD(vg, g + d);
            xhat = (vx - vmu) * vrs;
            dn = vg;
            if (w) {
                hs_v8 vw;
                HS_V8_LOAD(vw, w + d);
                dn = vg * vw;
            }
            a += dn;
            b += dn * xhat;
            if (dw) {
                hs_v8 t;
                HS_V8_LOAD(t, dw + d);
                t += vg * xhat;
                HS_V8_STORE(dw + d, t);
            }
            if (db) {
                hs_v8 t;
                HS_V8_LOAD(t, db + d);
                t += vg;
                HS_V8_STORE(db + d, t);
            }
        }
        float sum_dn = ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
        float sum_dn_xhat = ((b[0] + b[4]) + (b[2] + b[6])) + ((b[1] + b[5]) + (b[3] + b[7]));
        for (int d = d0; d < D; d++) {
            float xhat = (x[d] - mu) * rs;
            float dn = w ? g[d] * w[d] : g[d];
            sum_dn += dn;
            sum_dn_xhat += dn * xhat;
            if (dw) dw[d] += g[d] * xhat;
            if (db) db[d] += g[d];
        }
        const float mean_dn = type == HS_NORM_LAYERNORM ? sum_dn / (float)D : 0.0f;
        const float mean_dn_xhat = sum_dn_xhat / (float)D;
        const hs_v8 vmdn = HS_V8_SET1(mean_dn), vmdx = HS_V8_SET1(mean_dn_xhat);
        for (int d = 0; d < d0; d += 8) {
            hs_v8 vx, vg, vdx, dn;
            HS_V8_LOAD(vx, x + d);
            HS_V8_LOAD(vg, g + d);
            HS_V8_LOAD(vdx, dx + d);
            const hs_v8 xhat = (vx - vmu) * vrs;
            dn = vg;
            if (w) {
                hs_v8 vw;
                HS_V8_LOAD(vw, w + d);
                dn = vg * vw;
            }
            vdx += vrs * (dn - vmdn - xhat * vmdx);
            HS_V8_STORE(dx + d, vdx);
        }
        for (int d = d0; d < D; d++) {
            float xhat = (x[d] - mu) * rs;
            float dn = w ? g[d] * w[d] : g[d];
            dx[d] += rs * (dn - mean_dn - xhat * mean_dn_xhat);
        }
    }
}

/* Column sums: dbias (OC) += sum over rows of dout (N,OC). */
HS_CLONES
static void bias_backward(float *dbias, const float *dout, size_t N, int OC)
{
    for (size_t i = 0; i < N; i++) hs_add(dbias, dbias, dout + i * (size_t)OC, (size_t)OC);
}

/* dW_E[token] += dx0 row and dW_pos[t] += dx0 row (dW_pos may be NULL), rows
 * in order. dx0 (N, D), tokens (N), positions i % T. */
HS_CLONES
static void embed_backward(float *dW_E, float *dW_pos, const float *dx0, const int *tokens,
                           size_t N, int T, int D)
{
    for (size_t i = 0; i < N; i++) {
        float *dwe = dW_E + (size_t)tokens[i] * D;
        const float *g = dx0 + i * D;
        hs_add(dwe, dwe, g, (size_t)D);
        if (dW_pos) {
            float *dwp = dW_pos + (i % (size_t)T) * D;
            hs_add(dwp, dwp, g, (size_t)D);
        }
    }
}

/* The input gradient's product (model_internal.h): an NN product on WT
 * where libxsmm runs it (transpose_run made WT), else A B^T on W itself
 * (OpenBLAS reads the transposed operand as it lies; no copy made). */
void hs_dx_product(float *dx, float beta, const float *dy, const float *W, const float *WT,
                   size_t N, int C, int OC)
{
    hs_dx_product_ld(dx, beta, dy, W, OC, WT, N, C, OC);
}

void hs_dx_product_ld(float *dx, float beta, const float *dy, const float *W, int ldw,
                      const float *WT, size_t N, int C, int OC)
{
    if (hs_sgemm_nn_jit(C, OC))
        hs_sgemm(0, 0, (int)N, C, OC, 1.0f, dy, OC, WT, C, beta, dx, C);
    else
        hs_sgemm(0, 1, (int)N, C, OC, 1.0f, dy, OC, W, ldw, beta, dx, C);
}

void hs_unembed_dx(float *dx, const float *dlogits, const hs_model *m, const hs_acts *acts, size_t N)
{
    const hs_config *c = &m->cfg;
    if (m->params.W_U_T)
        hs_sgemm(0, 0, (int)N, c->d_model, c->d_vocab, 1.0f, dlogits, c->d_vocab, m->params.W_U_T,
                 c->d_model, 0.0f, dx, c->d_model);
    else
        hs_dx_product(dx, 0.0f, dlogits, m->params.W_U, hs_acts_wT(acts, c, c->n_layers, 0), N,
                      c->d_model, c->d_vocab);
}

/* Fills hs_acts_wT from m's weights and the forward's packed W_Q/K/V: job
 * j = 6 l + which of layer l (which as hs_acts_wT), j = 6 L for W_U; a job
 * of a matrix the model has not does nothing. */
typedef struct {
    const hs_model *m;
    const hs_acts *acts;
} wT_job;

/* out (C,R) = in (R,C)^T when hs_dx_product will read it (hs_sgemm_nn_jit). */
static void transpose_for_dx(float *out, const float *in, int R, int C)
{
    if (hs_sgemm_nn_jit(R, C)) hs_transpose_rows(out, in, R, C, (size_t)C);
}

static hs_status transpose_run(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    (void)err;
    const wT_job *a = ctx;
    const hs_config *c = &a->m->cfg;
    const int D = c->d_model, HD = c->n_heads * c->d_head, M = c->d_mlp;
    const int KD = hs_kv_heads(c) * c->d_head; /* W_K, W_V's columns (GQA) */
    const int l = j / 6, w = j % 6;
    if (l == c->n_layers) {
        if (a->m->params.W_U) /* W_U_T is multiplied as it lies (hs_unembed_dx) */
            transpose_for_dx(hs_acts_wT(a->acts, c, l, 0), a->m->params.W_U, D, c->d_vocab);
        return HS_OK;
    }
    const hs_block_params *bp = &a->m->params.blocks[l];
    if (w < 3) {
        if (w == 2 || c->attn == HS_ATTN_SOFTMAX) {
            int ld;
            const float *Wp = hs_qkv_packed(a->m, a->acts, l, w, &ld);
            const int cols = w == 0 ? HD : KD;
            if (hs_sgemm_nn_jit(D, cols))
                hs_transpose_rows(hs_acts_wT(a->acts, c, l, w), Wp, D, cols, (size_t)ld);
        }
    } else if (w == 3) {
        transpose_for_dx(hs_acts_wT(a->acts, c, l, 3), bp->W_O, HD, D);
    } else if (M > 0) {
        transpose_for_dx(hs_acts_wT(a->acts, c, l, w), w == 4 ? bp->W_in : bp->W_out,
                         w == 4 ? D : M, w == 4 ? M : D);
    }
    return HS_OK;
}

void hs_transpose_weights(const hs_model *m, const hs_acts *acts)
{
    wT_job a = {m, acts};
    hs_error err;
    hs_status s = hs_pool_for(acts->pool, 6 * m->cfg.n_layers + 1, transpose_run, &a, &err);
    HS_ASSERT(s == HS_OK); /* the jobs cannot fail */
}

/* dinp (n) = dout (n) * act'(inp (n)): GELU' = Phi(x) + x phi(x); gelu_new'
 * (model_simd.h); SiLU' = s (1 + x (1 - s)). */
static void act_backward(float *dinp, const float *dout, const float *inp, size_t n, hs_act act)
{
    if (act == HS_ACT_SILU) {
        for (size_t i = 0; i < n; i++) {
            const float x = inp[i], s = 1.0f / (1.0f + expf(-x));
            dinp[i] = dout[i] * (s * (1.0f + x * (1.0f - s)));
        }
        return;
    }
    if (act == HS_ACT_RELU) {
        for (size_t i = 0; i < n; i++) dinp[i] = dout[i] * (inp[i] > 0.0f ? 1.0f : 0.0f);
        return;
    }
    if (act == HS_ACT_GELU_NEW) {
        hs_gelu_new_backward(dinp, dout, inp, n);
        return;
    }
    hs_gelu_backward(dinp, dout, inp, n);
}

/* The MLP activation's backward of layer l (model_internal.h): GELU' kept
 * by the forward when it is there, else act_backward on mlp_pre. */
void hs_act_grad(float *dpre, const float *dpost, const hs_acts *acts, const hs_config *c, int l,
                 size_t n)
{
    const float *dact = hs_acts_dact(acts, c, l);
    if (c->act != HS_ACT_RELU && dact) /* act' kept by the forward */
        hs_mul_long(dpre, dpost, dact, n);
    else
        act_backward(dpre, dpost, acts->blocks[l].mlp_pre, n, c->act);
}

/* The gated MLP's hidden backward (model_internal.h). */
void hs_gated_grad(float *dpre, float *dlin, float *dpost, const hs_acts *acts, const hs_config *c,
                   int l, size_t n)
{
    const hs_block_acts *ba = &acts->blocks[l];
    hs_act_forward(dlin, NULL, ba->mlp_pre, n, c->act); /* act(hook_pre) again */
    hs_mul_long(dlin, dlin, dpost, n);
    hs_mul_long(dpost, dpost, ba->mlp_pre_linear, n);
    hs_act_grad(dpre, dpost, acts, c, l, n);
}

/* A post-norm's backward (model_internal.h). */
void hs_post_norm_backward(float **dresid, float **dside, float *dw, float *db, const float *inp,
                           const float *w, const float *mean, const float *rstd, size_t N, int D,
                           hs_norm type)
{
    memset(*dside, 0, N * D * sizeof(float));
    hs_norm_backward(*dside, dw, db, *dresid, inp, w, mean, rstd, N, D, type);
    float *t = *dresid;
    *dresid = *dside;
    *dside = t;
}

/* The attention's backward (model_internal.h). Products over whole T x T
 * tiles (hs_sgemm: libxsmm; the pattern is 0 above the diagonal, and so is
 * the score gradient made from it). */
HS_CLONES
void hs_attn_backward(float *dq, float *dk, float *dv, float *dpattern, float *datt, float *vT,
                      const float *dz, const float *att, const float *q, const float *k,
                      const float *v, int B, int T, int H, int Hkv, int dh, int softmax,
                      float inv_scale)
{
    const size_t HD = (size_t)H * dh, KD = (size_t)Hkv * dh;
    const int ld = (int)HD, kld = (int)KD, group = H / Hkv;
    const hs_v8 vscale = HS_V8_SET1(inv_scale);
    /* dv = A^T dz, datt = dz v^T, dq = ds k, dk = ds^T q; a key/value head's
     * dk, dv summed over its group's query heads in head order (the _acc
     * plans add: beta 1) */
    hs_sgemm_plan atdz, atdz_acc, dzvt, dsk, dstq, dstq_acc;
    hs_sgemm_plan_init(&atdz, 1, 0, T, dh, T, 1.0f, T, ld, 0.0f, kld);
    hs_sgemm_plan_init(&atdz_acc, 1, 0, T, dh, T, 1.0f, T, ld, 1.0f, kld);
    hs_sgemm_plan_init(&dzvt, 0, 0, T, T, dh, 1.0f, ld, T, 0.0f, T);
    hs_sgemm_plan_init(&dsk, 0, 0, T, dh, T, 1.0f, T, kld, 0.0f, ld);
    hs_sgemm_plan_init(&dstq, 1, 0, T, dh, T, 1.0f, T, ld, 0.0f, kld);
    hs_sgemm_plan_init(&dstq_acc, 1, 0, T, dh, T, 1.0f, T, ld, 1.0f, kld);
    for (int b = 0; b < B; b++) {
        if (softmax || dpattern) hs_transpose_rows(vT, v + (size_t)b * T * KD, T, kld, KD);
        for (int h = 0; h < H; h++) {
            const float *A = att + ((size_t)b * H + h) * T * T;
            const size_t off = (size_t)b * T * HD + (size_t)h * dh;
            const size_t koff = (size_t)b * T * KD + (size_t)(h / group) * dh;
            const int first = h % group == 0; /* the first query head of its group */
            /* dv = A^T dz */
            hs_sgemm_run(first ? &atdz : &atdz_acc, A, dz + off, dv + koff);
            if (!softmax && !dpattern) continue;
            /* datt = dz v^T (the pattern's gradient, every (i, j)), then in
             * place the score gradient over j <= i
             * ds[i,j] = A[i,j] (datt[i,j] - sum_j' A[i,j'] datt[i,j']) * inv_scale, 0 above */
            hs_sgemm_run(&dzvt, dz + off, vT + (size_t)(h / group) * dh * T, datt);
            if (dpattern) memcpy(dpattern + ((size_t)b * H + h) * T * T, datt, (size_t)T * T * sizeof(float));
            if (!softmax) continue;
            for (int i = 0; i < T; i++) {
                float *Di = datt + (size_t)i * T;
                const float *Ai = A + (size_t)i * T;
                const int n = i + 1;
                const float dot = hs_dot(Ai, Di, n);
                const hs_v8 vdot = HS_V8_SET1(dot);
                int j = 0;
                for (; j + 8 <= n; j += 8) {
                    hs_v8 a, d;
                    HS_V8_LOAD(a, Ai + j);
                    HS_V8_LOAD(d, Di + j);
                    d = a * (d - vdot) * vscale;
                    HS_V8_STORE(Di + j, d);
                }
                for (; j < n; j++) Di[j] = Ai[j] * (Di[j] - dot) * inv_scale;
                for (; j < T; j++) Di[j] = 0.0f;
            }
            /* dq = ds k, dk = ds^T q */
            hs_sgemm_run(&dsk, datt, k + koff, dq + off);
            hs_sgemm_run(first ? &dstq : &dstq_acc, datt, q + off, dk + koff);
        }
    }
}

/* The training layout (HS_ACTS_TRAIN): layer l's ln2_out (hs_lean_ln2) and
 * mlp_post (hs_lean_post) made again in the buffers every layer shares, the
 * bits of the unobserved forward (model_internal.h); with mlp_post,
 * act'(mlp_pre) in dact (BT x M; ReLU: untouched), from the same pass. */
static void lean_remake_mlp(const hs_acts *acts, const hs_config *c, const hs_block_params *bp,
                            int l, float *dact, size_t BT)
{
    const hs_block_acts *ba = &acts->blocks[l];
    if (hs_lean_ln2(c))
        hs_norm_apply_affine(ba->ln2_out, c->parallel_attn_mlp ? ba->resid_pre : ba->resid_mid,
                             ba->ln2_mean, ba->ln2_rstd, bp->ln2_w, bp->ln2_b, BT, c->d_model, 1, 1);
    if (hs_lean_post(c))
        hs_act_forward(ba->mlp_post, c->act == HS_ACT_RELU ? NULL : dact, ba->mlp_pre,
                       BT * c->d_mlp, c->act);
}

/* ------------------------------------------------------------------------ */
/* Weight-gradient jobs on the pool's lane (hs_acts_set_pool)                */

/* One weight-gradient job: dW (C,OC) += inp (N,C)^T @ dout (N,OC) and
 * dbias (OC) += column sums (heads = 0), or per head h < H: dW[h] (C,dh) +=
 * inp^T @ dout[:, h] with dout (N,H,dh), db (H*dh) += column sums (heads = 1,
 * through the packed scratch tmp). */
typedef struct {
    int heads;
    float *dW, *dbias;
    const float *inp, *dout;
    size_t N;
    int C, OC, H, dh;
    float *tmp; /* heads: (C, H*dh) scratch for the packed product (hs_grad_scratch.dwpack) */
} dw_job;

static void dw_job_run(void *arg)
{
    const dw_job *j = arg;
    if (!j->heads) {
        hs_sgemm(1, 0, j->C, j->OC, (int)j->N, 1.0f, j->inp,
                    j->C, j->dout, j->OC, 1.0f, j->dW, j->OC);
        if (j->dbias) bias_backward(j->dbias, j->dout, j->N, j->OC);
        return;
    }
    /* one sgemm into the packed (C, H*dh) scratch, then added per head */
    const int HD = j->H * j->dh;
    hs_sgemm(1, 0, j->C, HD, (int)j->N, 1.0f, j->inp, j->C,
                j->dout, HD, 0.0f, j->tmp, HD);
    for (int h = 0; h < j->H; h++)
        for (int d = 0; d < j->C; d++) {
            float *dw = j->dW + ((size_t)h * j->C + d) * j->dh;
            hs_add(dw, dw, j->tmp + (size_t)d * HD + (size_t)h * j->dh, (size_t)j->dh);
        }
    if (j->dbias) bias_backward(j->dbias, j->dout, j->N, HD);
}

/* Queues j on the pool's lane (or runs it now without one); returns its ticket. */
static long dw_submit(hs_pool *p, const dw_job *j)
{
    return hs_pool_async(p, dw_job_run, j, sizeof *j);
}

void hs_acts_set_pool(hs_acts *a, hs_pool *pool)
{
    if (a->own_pool) hs_pool_destroy(a->pool);
    a->pool = pool;
    a->own_pool = 0;
}

hs_status hs_acts_set_threads(hs_acts *a, int threads, hs_error *err)
{
    hs_pool *p = NULL;
    hs_status s = hs_pool_create(threads, &p, err);
    if (s != HS_OK) return s;
    hs_acts_set_pool(a, p);
    a->own_pool = 1;
    return HS_OK;
}

void hs_zero_grad(hs_model *m)
{
    HS_ASSERT(m->grad_mem != NULL);
    memset(m->grad_mem, 0, m->n_params * sizeof(float));
}

/* The backward of acts->b sequences (a whole batch, or one part's view,
 * hs_acts_view) into the gradients G, with the scratch gs (hs_grad_point);
 * the weight-gradient jobs on w's lane (NULL: each at once, in order).
 * inv_n = 1 / the valid targets of the whole batch. d_x0 as hs_backward's,
 * for these rows. */
/* The cross-entropy's gradient rows [0, n) of V: dl = pr * inv_n, minus
 * inv_n at the target (a row whose target is < 0: zeros), and dbias (V, may
 * be NULL) += each row in row order while it is in L1 (bias_backward's bits,
 * without its second pass over dl: 32 MB a ladder row's step). In hs_v8 (the
 * plain loops' bits; -O2 leaves the plain loop scalar). */
/* Rows of the cross-entropy's gradient a block (backward_rows): 128 x V
 * floats of dlogits and of probs, 1 MB at V 1,024, in a core's L2. */
#define CE_BLOCK 128

HS_CLONES
static void ce_grad_rows(float *dl, float *dbias, const float *pr, const int *targets, float inv_n,
                         size_t n, int V)
{
    for (size_t i = 0; i < n; i++, dl += V, pr += V) {
        if (targets[i] < 0) {
            memset(dl, 0, (size_t)V * sizeof(float));
        } else {
            hs_scale(dl, pr, inv_n, V);
            dl[targets[i]] -= inv_n;
        }
        if (dbias) hs_add(dbias, dbias, dl, (size_t)V);
    }
}

static void backward_rows(const hs_model *m, const hs_params *G, const hs_acts *acts,
                          const hs_grad_scratch *gs, hs_pool *w, const int *tokens,
                          const int *targets, float inv_n, float *d_x0)
{
    const hs_config *c = &m->cfg;
    const hs_params *P = &m->params;
    const int B = acts->b, T = acts->t;
    const int D = c->d_model, H = c->n_heads, dh = c->d_head, M = c->d_mlp, V = c->d_vocab;
    const int Hkv = hs_kv_heads(c);
    const size_t BT = (size_t)B * T;
    const int has_norm = c->norm != HS_NORM_NONE;

    float *dresid = gs->dresid, *dln = gs->dln, *dlnf = gs->dlnf, *dz = gs->dz, *dq = gs->dq;
    float *dk = gs->dk, *dv = gs->dv, *dpre = gs->dpre, *dpost = gs->dpost;
    /* the training layout (hs_train: probs is not read after the backward)
     * takes the gradient in place of probs: no write-allocate of a second
     * BT x V buffer (32 MB a ladder row's step) */
    float *dlogits = acts->lean ? acts->probs : gs->dlogits;
    float *datt = gs->datt, *vT = gs->vT;

    /* cross-entropy: dlogits = (probs - onehot) / n_valid on valid positions,
     * with b_U's gradient (its column sums), then the unembedding's input
     * gradient dlnf, in blocks of CE_BLOCK rows when libxsmm runs it (the product reads each block of dlogits from L2, not
     * memory; a block starts on a multiple of 64 rows, so each row meets the
     * kernel it meets in one call: hs_sgemm's bits); else one call (OpenBLAS
     * would pack W_U again for every block) */
    const float *wTU = hs_acts_wT(acts, c, c->n_layers, 0);
    const size_t blk = hs_sgemm_nn_jit(D, V) ? CE_BLOCK : BT;
    for (size_t r0 = 0; r0 < BT; r0 += blk) {
        const size_t n = BT - r0 < blk ? BT - r0 : blk;
        ce_grad_rows(dlogits + r0 * V, G->b_U, acts->probs + r0 * V, targets + r0, inv_n, n, V);
        hs_dx_product(dlnf + r0 * D, 0.0f, dlogits + r0 * V, P->W_U, wTU, n, D, V);
    }

    /* The weight gradients go to w's lane (or run at once without it); the
     * input-gradient chain stays here. A buffer a queued job reads is waited
     * for before it is overwritten. */
    float *dw_scratch = gs->dwpack;
    dw_job j;

    /* unembed and final norm */
    j = (dw_job){0, G->W_U, NULL, acts->lnf_out, dlogits, BT, D, V, 0, 0, NULL}; /* b_U: above */
    dw_submit(w, &j);
    const float *final_resid = acts->blocks[c->n_layers - 1].resid_post;
    if (c->ln_final && has_norm) {
        memset(dresid, 0, BT * D * sizeof(float));
        hs_norm_backward(dresid, G->ln_final_w, G->ln_final_b, dlnf, final_resid, P->ln_final_w,
                      acts->lnf_mean, acts->lnf_rstd, BT, D, c->norm);
    } else {
        memcpy(dresid, dlnf, BT * D * sizeof(float));
    }

    const int post = c->norm_place == HS_NORM_POST, par = c->parallel_attn_mlp && M > 0;
    float *dside = gs->dside, *dlin = gs->dlin;
    long t_dpre = 0, t_qkv = 0; /* jobs reading dpre (and dlin) / dq, dk, dv */
    for (int l = c->n_layers - 1; l >= 0; l--) {
        const hs_block_acts *ba = &acts->blocks[l];
        const hs_block_params *bp = &P->blocks[l];
        const hs_block_params *gp = &G->blocks[l];

        if (M > 0) {
            /* post-norm: d(resid_post) through LN2 to d(sum_mlp) */
            if (post)
                hs_post_norm_backward(&dresid, &dside, gp->ln2_w, gp->ln2_b, ba->sum_mlp, bp->ln2_w,
                                      ba->ln2_mean, ba->ln2_rstd, BT, D, c->norm);
            /* dresid is d(resid_post) = d(mlp_out) and flows on to resid_mid */
            hs_dx_product(dpost, 0.0f, dresid, bp->W_out, hs_acts_wT(acts, c, l, 5), BT, M, D);
            j = (dw_job){0, gp->W_out, gp->b_out, ba->mlp_post, dresid, BT, M, D, 0, 0, NULL};
            const int remake_post = acts->lean && hs_lean_post(c);
            long t_out = remake_post ? 0 : dw_submit(w, &j);
            hs_pool_wait(w, t_dpre); /* its jobs read dpre, dlin and ln2_out */
            if (acts->lean) {
                lean_remake_mlp(acts, c, bp, l, dpre, BT);
                if (remake_post) t_out = dw_submit(w, &j);
            }
            if (remake_post && c->act != HS_ACT_RELU) { /* act' in dpre (lean_remake_mlp) */
                hs_mul_long(dpre, dpost, dpre, BT * M);
                hs_dx_product(dln, 0.0f, dpre, bp->W_in, hs_acts_wT(acts, c, l, 4), BT, D, M);
                j = (dw_job){0, gp->W_in, gp->b_in, ba->ln2_out, dpre, BT, D, M, 0, 0, NULL};
            } else if (c->gated_mlp) {
                hs_gated_grad(dpre, dlin, dpost, acts, c, l, BT * M);
                hs_sgemm(0, 1, (int)BT, D, M, 1.0f, dpre, M, bp->W_gate, M, 0.0f, dln, D);
                hs_dx_product(dln, 1.0f, dlin, bp->W_in, hs_acts_wT(acts, c, l, 4), BT, D, M);
                j = (dw_job){0, gp->W_gate, NULL, ba->ln2_out, dpre, BT, D, M, 0, 0, NULL};
                dw_submit(w, &j);
                j = (dw_job){0, gp->W_in, gp->b_in, ba->ln2_out, dlin, BT, D, M, 0, 0, NULL};
            } else {
                hs_act_grad(dpre, dpost, acts, c, l, BT * M);
                hs_dx_product(dln, 0.0f, dpre, bp->W_in, hs_acts_wT(acts, c, l, 4), BT, D, M);
                j = (dw_job){0, gp->W_in, gp->b_in, ba->ln2_out, dpre, BT, D, M, 0, 0, NULL};
            }
            t_dpre = dw_submit(w, &j);
            hs_pool_wait(w, t_out); /* it reads dresid */
            /* d(the MLP's input): to resid_mid, or (parallel) to resid_pre,
             * held in dside until the attention's is in */
            float *dmlp_in = dresid;
            if (par) {
                dmlp_in = dside;
                memset(dside, 0, BT * D * sizeof(float));
            }
            if (has_norm && !post)
                hs_norm_backward(dmlp_in, gp->ln2_w, gp->ln2_b, dln, par ? ba->resid_pre : ba->resid_mid,
                                 bp->ln2_w, ba->ln2_mean, ba->ln2_rstd, BT, D, c->norm);
            else
                hs_add_long(dmlp_in, dmlp_in, dln, BT * D);
        }
        /* post-norm: d(resid_mid) through LN1 to d(sum_attn) */
        if (post && c->ln1)
            hs_post_norm_backward(&dresid, &dside, gp->ln1_w, gp->ln1_b, ba->sum_attn, bp->ln1_w,
                                  ba->ln1_mean, ba->ln1_rstd, BT, D, c->norm);

        /* attention output: d(attn_out) = dresid */
        hs_dx_product(dz, 0.0f, dresid, bp->W_O, hs_acts_wT(acts, c, l, 3), BT, H * dh, D);
        j = (dw_job){0, gp->W_O, gp->b_O, ba->z, dresid, BT, H * dh, D, 0, 0, NULL};
        long t_o = dw_submit(w, &j);
        hs_pool_wait(w, t_qkv);
        if (acts->lean && hs_lean_ln1(c)) /* ln1_out again (the QKV jobs read it) */
            hs_norm_apply_affine(ba->ln1_out, ba->resid_pre, ba->ln1_mean, ba->ln1_rstd, bp->ln1_w,
                                 bp->ln1_b, BT, D, 1, 1);
        hs_attn_backward(dq, dk, dv, NULL, datt, vT, dz, ba->att, ba->q, ba->k, ba->v, B, T, H, Hkv,
                         dh, c->attn == HS_ATTN_SOFTMAX, 1.0f / hs_attn_scale_at(c, l));
        if (c->pos == HS_POS_ROTARY) { /* d(rotated q, k) -> d(q, k): the transpose */
            hs_rotary_apply(dq, B, T, H, dh, c, acts->rope, 1);
            hs_rotary_apply(dk, B, T, Hkv, dh, c, acts->rope, 1);
        }
        if (c->attn == HS_ATTN_SOFTMAX) {
            hs_dx_product(dln, 0.0f, dq, hs_acts_wpack(acts, c, l, 0), hs_acts_wT(acts, c, l, 0), BT, D,
                       H * dh);
            j = (dw_job){1, gp->W_Q, gp->b_Q, ba->ln1_out, dq, BT, D, 0, H, dh, dw_scratch};
            dw_submit(w, &j);
            hs_dx_product(dln, 1.0f, dk, hs_acts_wpack(acts, c, l, 1), hs_acts_wT(acts, c, l, 1), BT, D,
                       Hkv * dh);
            j = (dw_job){1, gp->W_K, gp->b_K, ba->ln1_out, dk, BT, D, 0, Hkv, dh, dw_scratch};
            dw_submit(w, &j);
            hs_dx_product(dln, 1.0f, dv, hs_acts_wpack(acts, c, l, 2), hs_acts_wT(acts, c, l, 2), BT, D,
                       Hkv * dh);
        } else {
            hs_dx_product(dln, 0.0f, dv, hs_acts_wpack(acts, c, l, 2), hs_acts_wT(acts, c, l, 2), BT, D,
                       Hkv * dh);
        }
        j = (dw_job){1, gp->W_V, gp->b_V, ba->ln1_out, dv, BT, D, 0, Hkv, dh, dw_scratch};
        t_qkv = dw_submit(w, &j);
        hs_pool_wait(w, t_o); /* it reads dresid */
        if (c->attn_replace) /* no skip: resid_pre reaches resid_mid through the attention alone */
            memset(dresid, 0, BT * D * sizeof(float));
        if (hs_ln1_in_front(c))
            hs_norm_backward(dresid, gp->ln1_w, gp->ln1_b, dln, ba->resid_pre, bp->ln1_w, ba->ln1_mean,
                          ba->ln1_rstd, BT, D, c->norm);
        else
            hs_add_long(dresid, dresid, dln, BT * D);
        if (par) hs_add_long(dresid, dresid, dside, BT * D); /* the MLP's, parallel */
        /* dresid is now d(resid_pre) of layer l = d(resid_post) of layer l-1 */
    }

    /* embed norm, then embeddings */
    float *dx0 = dresid;
    if (c->embed_norm) {
        memset(dln, 0, BT * D * sizeof(float));
        hs_norm_backward(dln, G->ln_embed_w, G->ln_embed_b, dresid, acts->x0, P->ln_embed_w,
                      acts->lne_mean, acts->lne_rstd, BT, D, c->norm);
        dx0 = dln;
    }
    embed_backward(G->W_E, G->W_pos, dx0, tokens, BT, T, D);
    if (d_x0) memcpy(d_x0, dx0, BT * D * sizeof(float));
    hs_pool_wait_all(w); /* all weight gradients in place */
}

/* The buffer of batch part `part` > 0 in grad_part_mem (n_params floats). */
static float *part_grad_mem(const hs_model *m, int part)
{
    return m->grad_part_mem + (size_t)(part - 1) * hs_floats_round(m->n_params);
}

/* The gradients of batch part `part` > 0: m->grads' layout rebased onto its
 * buffer in grad_part_mem. */
static hs_params part_grads(const hs_model *m, int part)
{
    float *base = part_grad_mem(m, part);
    hs_params g;
    const float *const *src = (const float *const *)&m->grads;
    float **dst = (float **)&g;
    for (size_t i = 0; i < sizeof(hs_params) / sizeof(float *); i++)
        dst[i] = src[i] ? base + (src[i] - m->grad_mem) : NULL;
    return g;
}

/* The parts of a batch's backward (hs_backward). */
typedef struct {
    const hs_model *m;
    const hs_acts *acts;
    const int *tokens, *targets;
    float *d_x0;
    float inv_n;
    int parts;
} bwd_split;

static hs_status bwd_part_run(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    (void)err;
    const bwd_split *f = ctx;
    const hs_config *c = &f->m->cfg;
    const int B = f->acts->b, T = f->acts->t;
    const int b0 = hs_batch_part_start(B, T, f->parts, j);
    const int b1 = hs_batch_part_start(B, T, f->parts, j + 1);
    hs_acts view = hs_acts_view(f->acts, c, b0, T);
    view.b = b1 - b0;
    hs_grad_scratch gs;
    hs_grad_point(f->acts, c, j, b0, b1 - b0, &gs);
    hs_params g = f->m->grads;
    if (j > 0) {
        g = part_grads(f->m, j);
        memset(part_grad_mem(f->m, j), 0, f->m->n_params * sizeof(float));
    }
    const size_t off = (size_t)b0 * T;
    backward_rows(f->m, &g, &view, &gs, NULL, f->tokens + off, f->targets + off, f->inv_n,
                  f->d_x0 ? f->d_x0 + off * c->d_model : NULL);
    return HS_OK;
}

void hs_backward(hs_model *m, hs_acts *acts, const int *tokens, const int *targets, float *d_x0)
{
    HS_ASSERT(m->grad_mem != NULL && acts->d_mem != NULL);
    const size_t BT = (size_t)acts->b * acts->t;
    int n_valid = 0;
    for (size_t i = 0; i < BT; i++) n_valid += targets[i] >= 0;
    const float inv_n = n_valid > 0 ? 1.0f / (float)n_valid : 0.0f;
    hs_attn_patterns_restore(m, acts); /* patterns an observer took (hs_run_with_cache) */
    hs_transpose_weights(m, acts);
    const int parts = hs_batch_parts(acts->b, acts->t, HS_GRAD_PARTS);
    if (parts < 2) {
        hs_grad_scratch gs;
        hs_grad_point(acts, &m->cfg, 0, 0, acts->b, &gs);
        backward_rows(m, &m->grads, acts, &gs, acts->pool, tokens, targets, inv_n, d_x0);
        return;
    }
    bwd_split f = {m, acts, tokens, targets, d_x0, inv_n, parts};
    hs_error err;
    hs_status s = hs_pool_for(acts->pool, parts, bwd_part_run, &f, &err);
    HS_ASSERT(s == HS_OK); /* the jobs cannot fail */
    /* grad_mem += part 1 += part 2 ...: in part order, whatever ran where */
    for (int j = 1; j < parts; j++)
        hs_add_long(m->grad_mem, m->grad_mem, part_grad_mem(m, j), m->n_params);
}
