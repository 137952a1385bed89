/*
 * model/backward.c -- backward of the mean next-token cross-entropy.
 *
 * Every *_backward here accumulates (+=) into parameter gradients (the caller
 * zeros them, hs_zero_grad) and into the input gradient it is given, as
 * llm.c's kernels do. Activation gradients live in acts->d_mem.
 */
#include "model.h"
#include "model_internal.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

/* dinp (N,D) += d/dinp of norm(inp)*w + b given dout (N,D); dw, db (D) +=.
 * w, dw, b, db may be NULL (no affine weight / bias). */
static void norm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                          const float *w, const float *mean, const float *rstd, size_t N, int D,
                          hs_norm type)
{
    for (size_t i = 0; i < N; i++) {
        const float *x = inp + i * D;
        const float *g = dout + i * D;
        float *dx = dinp + i * D;
        const float mu = mean[i], rs = rstd[i];
        double sum_dn = 0.0, sum_dn_xhat = 0.0;
        for (int d = 0; d < D; d++) {
            float xhat = (x[d] - mu) * rs;
            float dn = w ? g[d] * w[d] : g[d];
            sum_dn += dn;
            sum_dn_xhat += (double)dn * xhat;
            if (dw) dw[d] += g[d] * xhat;
            if (db) db[d] += g[d];
        }
        const double mean_dn = type == HS_NORM_LAYERNORM ? sum_dn / D : 0.0;
        const double mean_dn_xhat = sum_dn_xhat / D;
        for (int d = 0; d < D; d++) {
            float xhat = (x[d] - mu) * rs;
            float dn = w ? g[d] * w[d] : g[d];
            dx[d] += (float)(rs * (dn - mean_dn - xhat * mean_dn_xhat));
        }
    }
}

/* dinp (N,C) += dout (N,OC) @ W^T; dW (C,OC) += inp^T @ dout; dbias (OC) += sum dout. */
static void matmul_backward(float *dinp, float *dW, float *dbias, const float *dout,
                            const float *inp, const float *W, size_t N, int C, int OC)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, C, OC, 1.0f, dout, OC, W, OC,
                1.0f, dinp, C);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, C, OC, (int)N, 1.0f, inp, C, dout, OC,
                1.0f, dW, OC);
    if (dbias)
        for (size_t i = 0; i < N; i++)
            for (int j = 0; j < OC; j++) dbias[j] += dout[i * OC + j];
}

/* Per-head projection backward: dinp (N,D) += sum_h dout[:,h] (N,dh) @ W[h]^T;
 * dW[h] (D,dh) += inp^T @ dout[:,h]; db (H,dh) += sum. dout (N,H,dh). */
static void heads_backward(float *dinp, float *dW, float *db, const float *dout, const float *inp,
                           const float *W, size_t N, int D, int H, int dh)
{
    for (int h = 0; h < H; h++) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, D, dh, 1.0f,
                    dout + (size_t)h * dh, H * dh, W + (size_t)h * D * dh, dh, 1.0f, dinp, D);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, D, dh, (int)N, 1.0f, inp, D,
                    dout + (size_t)h * dh, H * dh, 1.0f, dW + (size_t)h * D * dh, dh);
    }
    if (db)
        for (size_t i = 0; i < N; i++)
            for (int j = 0; j < H * dh; j++) db[j] += dout[i * H * dh + j];
}

static float gelu_grad(float x)
{
    double cdf = 0.5 * (1.0 + erf(x * 0.70710678118654752440));
    double pdf = 0.39894228040143267794 * exp(-0.5 * (double)x * x);
    return (float)(cdf + x * pdf);
}

void hs_zero_grad(hs_model *m)
{
    HS_ASSERT(m->grad_mem != NULL);
    memset(m->grad_mem, 0, m->n_params * sizeof(float));
}

double hs_grad_norm(const hs_model *m)
{
    double s = 0.0;
    for (size_t i = 0; i < m->n_params; i++) s += (double)m->grad_mem[i] * m->grad_mem[i];
    return sqrt(s);
}

void hs_backward(hs_model *m, hs_acts *acts, const int *tokens, const int *targets, float *d_x0)
{
    HS_ASSERT(m->grad_mem != NULL && acts->d_mem != NULL);
    const hs_config *c = &m->cfg;
    const hs_params *P = &m->params;
    hs_params *G = &m->grads;
    const int B = acts->b, T = acts->t;
    const int D = c->d_model, H = c->n_heads, dh = c->d_head, M = c->d_mlp, V = c->d_vocab;
    const size_t BT = (size_t)B * T;
    const int has_norm = c->norm != HS_NORM_NONE;

    float *p = acts->d_mem;
    float *dresid = p; p += BT * D;
    float *dln = p; p += BT * D;
    float *dlnf = p; p += BT * D;
    float *dz = p; p += BT * H * dh;
    float *dq = p; p += BT * H * dh;
    float *dk = p; p += BT * H * dh;
    float *dv = p; p += BT * H * dh;
    float *dpre = p; p += BT * M;
    float *dpost = p; p += BT * M;
    float *dlogits = p; p += BT * V;
    float *datt = p; p += (size_t)T * T;
    HS_ASSERT((size_t)(p - acts->d_mem) <= acts->n_d_floats);

    /* cross-entropy: dlogits = (probs - onehot) / n_valid on valid positions */
    int n_valid = 0;
    for (size_t i = 0; i < BT; i++) n_valid += targets[i] >= 0;
    const float inv_n = n_valid > 0 ? 1.0f / (float)n_valid : 0.0f;
    for (size_t i = 0; i < BT; i++) {
        float *dl = dlogits + i * V;
        const float *pr = acts->probs + i * V;
        if (targets[i] < 0) {
            memset(dl, 0, (size_t)V * sizeof(float));
            continue;
        }
        for (int j = 0; j < V; j++) dl[j] = pr[j] * inv_n;
        dl[targets[i]] -= inv_n;
    }

    /* unembed and final norm */
    memset(dlnf, 0, BT * D * sizeof(float));
    matmul_backward(dlnf, G->W_U, G->b_U, dlogits, acts->lnf_out, P->W_U, BT, D, V);
    memset(dresid, 0, BT * D * sizeof(float));
    const float *final_resid = acts->blocks[c->n_layers - 1].resid_post;
    if (c->ln_final && has_norm)
        norm_backward(dresid, G->ln_final_w, G->ln_final_b, dlnf, final_resid, P->ln_final_w,
                      acts->lnf_mean, acts->lnf_rstd, BT, D, c->norm);
    else
        memcpy(dresid, dlnf, BT * D * sizeof(float));

    const float scale = 1.0f / sqrtf((float)dh);
    for (int l = c->n_layers - 1; l >= 0; l--) {
        hs_block_acts *ba = &acts->blocks[l];
        const hs_block_params *bp = &P->blocks[l];
        hs_block_params *gp = &G->blocks[l];

        if (M > 0) {
            /* dresid is d(resid_post) = d(mlp_out) and flows on to resid_mid */
            memset(dpost, 0, BT * M * sizeof(float));
            matmul_backward(dpost, gp->W_out, gp->b_out, dresid, ba->mlp_post, bp->W_out, BT, M, D);
            for (size_t i = 0; i < BT * M; i++) {
                float x = ba->mlp_pre[i];
                float g = c->act == HS_ACT_GELU ? gelu_grad(x) : (x > 0.0f ? 1.0f : 0.0f);
                dpre[i] = dpost[i] * g;
            }
            memset(dln, 0, BT * D * sizeof(float));
            matmul_backward(dln, gp->W_in, gp->b_in, dpre, ba->ln2_out, bp->W_in, BT, D, M);
            if (has_norm)
                norm_backward(dresid, gp->ln2_w, gp->ln2_b, dln, ba->resid_mid, bp->ln2_w,
                              ba->ln2_mean, ba->ln2_rstd, BT, D, c->norm);
            else
                for (size_t i = 0; i < BT * D; i++) dresid[i] += dln[i];
        }

        /* attention output: d(attn_out) = dresid */
        memset(dz, 0, BT * H * dh * sizeof(float));
        matmul_backward(dz, gp->W_O, gp->b_O, dresid, ba->z, bp->W_O, BT, H * dh, D);
        memset(dq, 0, BT * H * dh * sizeof(float));
        memset(dk, 0, BT * H * dh * sizeof(float));
        memset(dv, 0, BT * H * dh * sizeof(float));
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++) {
                const float *A = ba->att + ((size_t)b * H + h) * T * T;
#define ROW(buf, t) ((buf) + (((size_t)b * T + (t)) * H + h) * dh)
                for (int i = 0; i < T; i++) {
                    const float *dzi = ROW(dz, i);
                    for (int j = 0; j <= i; j++) {
                        const float *vj = ROW(ba->v, j);
                        float *dvj = ROW(dv, j);
                        float a = A[i * T + j], s = 0.0f;
                        for (int d = 0; d < dh; d++) {
                            dvj[d] += a * dzi[d];
                            s += dzi[d] * vj[d];
                        }
                        datt[i * T + j] = s;
                    }
                }
                if (c->attn != HS_ATTN_SOFTMAX) continue;
                for (int i = 0; i < T; i++) {
                    float dot = 0.0f;
                    for (int j = 0; j <= i; j++) dot += A[i * T + j] * datt[i * T + j];
                    const float *qi = ROW(ba->q, i);
                    float *dqi = ROW(dq, i);
                    for (int j = 0; j <= i; j++) {
                        float ds = A[i * T + j] * (datt[i * T + j] - dot) * scale;
                        if (ds == 0.0f) continue;
                        const float *kj = ROW(ba->k, j);
                        float *dkj = ROW(dk, j);
                        for (int d = 0; d < dh; d++) {
                            dqi[d] += ds * kj[d];
                            dkj[d] += ds * qi[d];
                        }
                    }
                }
#undef ROW
            }
        memset(dln, 0, BT * D * sizeof(float));
        if (c->attn == HS_ATTN_SOFTMAX) {
            heads_backward(dln, gp->W_Q, gp->b_Q, dq, ba->ln1_out, bp->W_Q, BT, D, H, dh);
            heads_backward(dln, gp->W_K, gp->b_K, dk, ba->ln1_out, bp->W_K, BT, D, H, dh);
        }
        heads_backward(dln, gp->W_V, gp->b_V, dv, ba->ln1_out, bp->W_V, BT, D, H, dh);
        if (c->ln1 && has_norm)
            norm_backward(dresid, gp->ln1_w, gp->ln1_b, dln, ba->resid_pre, bp->ln1_w, ba->ln1_mean,
                          ba->ln1_rstd, BT, D, c->norm);
        else
            for (size_t i = 0; i < BT * D; i++) dresid[i] += dln[i];
        /* dresid is now d(resid_pre) of layer l = d(resid_post) of layer l-1 */
    }

    /* embed norm, then embeddings */
    float *dx0 = dresid;
    if (c->embed_norm) {
        memset(dln, 0, BT * D * sizeof(float));
        norm_backward(dln, G->ln_embed_w, G->ln_embed_b, dresid, acts->x0, P->ln_embed_w,
                      acts->lne_mean, acts->lne_rstd, BT, D, c->norm);
        dx0 = dln;
    }
    for (size_t i = 0; i < BT; i++) {
        float *dwe = G->W_E + (size_t)tokens[i] * D;
        const float *g = dx0 + i * D;
        for (int d = 0; d < D; d++) dwe[d] += g[d];
        if (G->W_pos) {
            float *dwp = G->W_pos + (i % (size_t)T) * D;
            for (int d = 0; d < D; d++) dwp[d] += g[d];
        }
    }
    if (d_x0) memcpy(d_x0, dx0, BT * D * sizeof(float));
}
