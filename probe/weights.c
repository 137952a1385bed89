/*
 * probe/weights.c -- virtual weights, composition scores, full circuits and
 * the eigenvalue copying score (CIRCUITS.md 2-4), with the norm folding
 * documented in probe.h ("NORM FOLDING").
 */
#include "probe/probe.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* LAPACK's dgeev as OpenBLAS exports it (Debian's libopenblas carries all
 * of LAPACK; Fortran: every argument by address, then the hidden lengths of
 * the two character arguments). Called directly rather than through
 * LAPACKE: liblapacke and the reference LAPACK, libblas and libtmglib it
 * pulls in cost every headscope process ~1 ms of dynamic loading (`inspect`
 * 2.5% of its wall time) for this one call, whose dgeev_ resolved to
 * OpenBLAS's anyway (first in the global symbol scope). */
extern void dgeev_(const char *jobvl, const char *jobvr, const int *n, double *a, const int *lda,
                   double *wr, double *wi, double *vl, const int *ldvl, double *vr,
                   const int *ldvr, double *work, const int *lwork, int *info, size_t len_jobvl,
                   size_t len_jobvr);

/* The eigenvalues (wr + i wi, [n] each) of the n x n row-major matrix K, as
 * LAPACKE_dgeev(LAPACK_ROW_MAJOR, 'N', 'N', ...) computed them: NaN refused
 * (-5), the workspace queried, K transposed into a column-major copy, dgeev_
 * on it (so the same arithmetic, bit for bit). Returns LAPACK's info; -1011
 * when memory ran out (LAPACKE's LAPACK_WORK_MEMORY_ERROR). */
static int eigenvalues(const double *K, int n, double *wr, double *wi)
{
    for (size_t i = 0; i < (size_t)n * n; i++)
        if (isnan(K[i])) return -5;
    int info = 0, lwork = -1, one = 1;
    double q = 0, dummy = 0;
    dgeev_("N", "N", &n, &dummy, &n, wr, wi, NULL, &one, NULL, &one, &q, &lwork, &info, 1, 1);
    if (info != 0) return info;
    lwork = (int)q;
    double *work = malloc((size_t)(lwork > 1 ? lwork : 1) * sizeof *work);
    double *a = malloc((size_t)n * n * sizeof *a);
    if (!work || !a) {
        free(work);
        free(a);
        return -1011;
    }
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) a[(size_t)c * n + r] = K[(size_t)r * n + c];
    dgeev_("N", "N", &n, a, &n, wr, wi, NULL, &one, NULL, &one, work, &lwork, &info, 1, 1);
    free(work);
    free(a);
    return info;
}

static hs_status check_head(const hs_model *m, hs_head h, hs_error *err)
{
    if (h.layer < 0 || h.layer >= m->cfg.n_layers || h.head < 0 || h.head >= m->cfg.n_heads)
        return hs_fail(err, HS_ERR_INPUT, "head L%dH%d is outside the model (%d layers x %d heads)",
                       h.layer, h.head, m->cfg.n_layers, m->cfg.n_heads);
    return HS_OK;
}

/* out (D,C) = P diag(w) W (LN), diag(w) W (RMS), W (no norm); W (D,C).
 * Each column's mean is summed over d = 0..D-1 in order (in double), the
 * rows visited in memory order (C is a vocabulary for W_U: 50,257 columns
 * read down a column at a time would miss the cache on every element). */
static void fold_reader(float *out, const float *W, int D, int C, const float *w, hs_norm norm,
                        int has_norm, hs_fold fold)
{
    if (W != out) memcpy(out, W, (size_t)D * C * sizeof(float)); /* W == out: folded in place */
    if (fold != HS_FOLD_LN || !has_norm) return;
    if (w)
        for (int d = 0; d < D; d++)
            for (int j = 0; j < C; j++) out[(size_t)d * C + j] *= w[d];
    if (norm != HS_NORM_LAYERNORM) return;
    double *mu = calloc((size_t)C, sizeof *mu);
    if (mu == NULL) { /* column by column, no buffer: the same sums */
        for (int j = 0; j < C; j++) {
            double m1 = 0.0;
            for (int d = 0; d < D; d++) m1 += out[(size_t)d * C + j];
            m1 /= D;
            for (int d = 0; d < D; d++) out[(size_t)d * C + j] = (float)(out[(size_t)d * C + j] - m1);
        }
        return;
    }
    for (int d = 0; d < D; d++)
        for (int j = 0; j < C; j++) mu[j] += out[(size_t)d * C + j];
    for (int j = 0; j < C; j++) mu[j] /= D;
    for (int d = 0; d < D; d++)
        for (int j = 0; j < C; j++) out[(size_t)d * C + j] = (float)(out[(size_t)d * C + j] - mu[j]);
    free(mu);
}

hs_status hs_head_weights(const hs_model *m, hs_head h, hs_fold fold, float *W_Q, float *W_K,
                          float *W_V, float *W_O, hs_error *err)
{
    const hs_config *c = &m->cfg;
    const int D = c->d_model, dh = c->d_head;
    hs_status st = check_head(m, h, err);
    if (st != HS_OK) return st;
    if ((W_Q || W_K) && c->attn != HS_ATTN_SOFTMAX)
        return hs_fail(err, HS_ERR_INPUT, "a uniform-attention model has no W_Q / W_K");
    const hs_block_params *bp = &m->params.blocks[h.layer];
    const int has_norm = hs_ln1_in_front(c); /* post-norm: the heads read the residual itself */
    const size_t off = (size_t)h.head * D * dh;
    float *outs[3] = {W_Q, W_K, W_V};
    for (int x = 0; x < 3; x++) {
        if (!outs[x]) continue;
        int ld; /* in the table or packed in place (hs_head_qkv): rows ld apart */
        const float *W = hs_head_qkv(m, h.layer, x, h.head, &ld);
        for (int d = 0; d < D; d++)
            memcpy(outs[x] + (size_t)d * dh, W + (size_t)d * ld, (size_t)dh * sizeof(float));
        fold_reader(outs[x], outs[x], D, dh, bp->ln1_w, c->norm, has_norm, fold);
    }
    if (W_O) memcpy(W_O, bp->W_O + off, (size_t)dh * D * sizeof(float));
    return HS_OK;
}

/* out (C,R) = in (R,C)^T, in 16 x 16 blocks. */
static void transpose_into(float *out, const float *in, int R, int C)
{
    for (int r0 = 0; r0 < R; r0 += 16)
        for (int c0 = 0; c0 < C; c0 += 16)
            for (int c = c0; c < C && c < c0 + 16; c++)
                for (int r = r0; r < R && r < r0 + 16; r++) out[(size_t)c * R + r] = in[(size_t)r * C + c];
}

/* The unembedding as read through the final norm, (D,V). */
static void unembed_weights(const hs_model *m, hs_fold fold, float *out)
{
    const hs_config *c = &m->cfg;
    const int D = c->d_model, V = c->d_vocab;
    if (m->params.W_U_T) /* W_U read transposed in place (model.h): out = its transpose */
        transpose_into(out, m->params.W_U_T, V, D);
    fold_reader(out, m->params.W_U ? m->params.W_U : out, D, V, m->params.ln_final_w, c->norm,
                c->ln_final && c->norm != HS_NORM_NONE, fold);
}

/* Columns ids[0..n) of the unembedding as read through the final norm into
 * out (D,n), each the same numbers as unembed_weights' column (the fold
 * treats every column alone); tmp (D,n) is scratch. */
static void unembed_columns(const hs_model *m, hs_fold fold, const int *ids, int n, float *tmp,
                            float *out)
{
    const hs_config *c = &m->cfg;
    const int D = c->d_model;
    for (int r = 0; r < D; r++)
        for (int i = 0; i < n; i++) tmp[(size_t)r * n + i] = hs_unembed_at(m, r, ids[i]);
    fold_reader(out, tmp, D, n, m->params.ln_final_w, c->norm, c->ln_final && c->norm != HS_NORM_NONE,
                fold);
}

/* out (n,p) = A (n,k) B (k,p), or A B^T with B (p,k) when bt. */
static void mm(float *out, const float *A, const float *Bm, int n, int k, int p, int bt)
{
    hs_sgemm(0, bt, n, p, k, 1.0f, A, k, Bm, bt ? k : p, 0.0f, out, p);
}

/* Buffers for one head: Q, K, V (D,dh), O (dh,D). */
typedef struct {
    float *Q, *K, *V, *O;
} head_w;

static void head_w_free(head_w *w)
{
    free(w->Q);
    free(w->K);
    free(w->V);
    free(w->O);
}

static hs_status head_w_get(const hs_model *m, hs_head h, hs_fold fold, int need_qk, head_w *w,
                            hs_error *err)
{
    const size_t n = (size_t)m->cfg.d_model * m->cfg.d_head;
    memset(w, 0, sizeof *w);
    w->V = malloc(n * sizeof(float));
    w->O = malloc(n * sizeof(float));
    if (need_qk) {
        w->Q = malloc(n * sizeof(float));
        w->K = malloc(n * sizeof(float));
    }
    if (!w->V || !w->O || (need_qk && (!w->Q || !w->K))) {
        head_w_free(w);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    hs_status st = hs_head_weights(m, h, fold, w->Q, w->K, w->V, w->O, err);
    if (st != HS_OK) head_w_free(w);
    return st;
}

hs_status hs_W_QK(const hs_model *m, hs_head h, hs_fold fold, float *out, hs_error *err)
{
    head_w w;
    hs_status st = head_w_get(m, h, fold, 1, &w, err);
    if (st != HS_OK) return st;
    mm(out, w.Q, w.K, m->cfg.d_model, m->cfg.d_head, m->cfg.d_model, 1);
    head_w_free(&w);
    return HS_OK;
}

hs_status hs_W_OV(const hs_model *m, hs_head h, hs_fold fold, float *out, hs_error *err)
{
    head_w w;
    hs_status st = head_w_get(m, h, fold, 0, &w, err);
    if (st != HS_OK) return st;
    mm(out, w.V, w.O, m->cfg.d_model, m->cfg.d_head, m->cfg.d_model, 0);
    head_w_free(&w);
    return HS_OK;
}

hs_status hs_head_product(const hs_model *m, hs_head h1, hs_head h2, hs_comp kind, hs_fold fold,
                          float *out, hs_error *err)
{
    const int D = m->cfg.d_model, dh = m->cfg.d_head;
    head_w w1, w2;
    hs_status st = head_w_get(m, h1, fold, 0, &w1, err);
    if (st != HS_OK) return st;
    st = head_w_get(m, h2, fold, kind != HS_COMP_V, &w2, err);
    if (st != HS_OK) {
        head_w_free(&w1);
        return st;
    }
    const float *X = kind == HS_COMP_Q ? w2.Q : kind == HS_COMP_K ? w2.K : w2.V;
    mm(out, w1.O, X, dh, D, dh, 0);
    head_w_free(&w1);
    head_w_free(&w2);
    return HS_OK;
}

hs_status hs_OV_product(const hs_model *m, hs_head h1, hs_head h2, hs_comp kind, hs_fold fold,
                        float *out, hs_error *err)
{
    const int D = m->cfg.d_model;
    const size_t DD = (size_t)D * D;
    float *ov = malloc(DD * sizeof(float)), *r = malloc(DD * sizeof(float));
    hs_status st = HS_OK;
    if (!ov || !r) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((st = hs_W_OV(m, h1, fold, ov, err)) != HS_OK) goto done;
    if (kind == HS_COMP_V) st = hs_W_OV(m, h2, fold, r, err);
    else st = hs_W_QK(m, h2, fold, r, err);
    if (st != HS_OK) goto done;
    mm(out, ov, r, D, D, D, kind == HS_COMP_K);
done:
    free(ov);
    free(r);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Composition scores                                                        */

double hs_comp_score_dense(const float *Lm, const float *Rm, int n, int k, int p)
{
    double nl = 0.0, nr = 0.0, nlr = 0.0;
    for (size_t i = 0; i < (size_t)n * k; i++) nl += (double)Lm[i] * Lm[i];
    for (size_t i = 0; i < (size_t)k * p; i++) nr += (double)Rm[i] * Rm[i];
    double *row = malloc((size_t)p * sizeof *row);
    if (row == NULL) return NAN;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < p; j++) row[j] = 0.0;
        for (int q = 0; q < k; q++) {
            double a = Lm[(size_t)i * k + q];
            if (a == 0.0) continue;
            const float *rr = Rm + (size_t)q * p;
            for (int j = 0; j < p; j++) row[j] += a * rr[j];
        }
        for (int j = 0; j < p; j++) nlr += row[j] * row[j];
    }
    free(row);
    if (nl == 0.0 || nr == 0.0) return 0.0;
    return sqrt(nlr) / (sqrt(nl) * sqrt(nr));
}

/* Double-precision head factors and their Gram matrices (C3 cheap form). */
typedef struct {
    double *Q, *K, *V, *O;       /* (D,dh) x3, (dh,D) */
    double *GQ, *GK, *GV, *OOt;  /* (dh,dh) */
    double nOV2, nQK2;           /* squared Frobenius norms */
} head_d;

/* G (dh,dh) = X^T X, X (D,dh). */
static void gram(double *G, const double *X, int D, int dh)
{
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, dh, dh, D, 1.0, X, dh, X, dh, 0.0, G, dh);
}

/* tr(A B) for (n,n) matrices. */
static double trace_prod(const double *A, const double *Bm, int n)
{
    double t = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) t += A[(size_t)i * n + j] * Bm[(size_t)j * n + i];
    return t;
}

/* ||X M Y||_F^2 = tr(M^T G_X M R) with G_X = X^T X, R = Y Y^T; M (dh,dh). */
static double gram_norm2(const double *GX, const double *M, const double *R, int dh, double *tmp)
{
    double *A = tmp, *S = tmp + (size_t)dh * dh;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, dh, dh, dh, 1.0, GX, dh, M, dh, 0.0, A, dh);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, dh, dh, dh, 1.0, M, dh, A, dh, 0.0, S, dh);
    return trace_prod(S, R, dh);
}

void hs_comp_scores_free(hs_comp_scores *s)
{
    if (s == NULL) return;
    free(s->q);
    free(s->k);
    free(s->v);
    memset(s, 0, sizeof *s);
}

#define HS_TWO_PI 6.283185307179586476925

/* splitmix64 + Box-Muller: seeded N(0,1). */
typedef struct {
    uint64_t s;
    int has;
    double spare;
} rng;

static uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_gauss(rng *r)
{
    if (r->has) {
        r->has = 0;
        return r->spare;
    }
    double u1 = ((double)(rng_next(r) >> 11) + 0.5) / 9007199254740992.0;
    double u2 = (double)(rng_next(r) >> 11) / 9007199254740992.0;
    double rad = sqrt(-2.0 * log(u1));
    r->spare = rad * sin(HS_TWO_PI * u2);
    r->has = 1;
    return rad * cos(HS_TWO_PI * u2);
}

hs_status hs_comp_baseline(int d_model, int d_head, int n_draws, uint64_t seed, double *mean,
                           double *std, hs_error *err)
{
    const int D = d_model, dh = d_head;
    if (D < 1 || dh < 1 || n_draws < 2)
        return hs_fail(err, HS_ERR_INPUT, "baseline: need d_model, d_head >= 1 and >= 2 draws");
    const size_t nf = (size_t)D * dh, hh = (size_t)dh * dh;
    /* factors A, Bm, C, E; Gram matrices GA, BBt, GC, EEt; M; scratch (2 hh) */
    double *buf = malloc((4 * nf + 7 * hh) * sizeof(double));
    if (buf == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    double *A = buf, *Bm = A + nf, *C = Bm + nf, *E = C + nf;
    double *GA = E + nf, *BBt = GA + hh, *GC = BBt + hh, *EEt = GC + hh, *M = EEt + hh;
    double *tmp2 = M + hh;
    rng r = {seed, 0, 0.0};
    double s1 = 0.0, s2 = 0.0;
    for (int it = 0; it < n_draws; it++) {
        for (size_t i = 0; i < 4 * nf; i++) buf[i] = rng_gauss(&r);
        /* L = A Bm (A (D,dh), Bm (dh,D)), R = C E (C (D,dh), E (dh,D)) */
        gram(GA, A, D, dh);
        gram(GC, C, D, dh);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, dh, dh, D, 1.0, Bm, D, Bm, D, 0.0, BBt, dh);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, dh, dh, D, 1.0, E, D, E, D, 0.0, EEt, dh);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, dh, dh, D, 1.0, Bm, D, C, dh, 0.0, M, dh);
        double nl2 = trace_prod(GA, BBt, dh), nr2 = trace_prod(GC, EEt, dh);
        double nlr2 = gram_norm2(GA, M, EEt, dh, tmp2);
        double c = sqrt(fmax(nlr2, 0.0) / (nl2 * nr2));
        s1 += c;
        s2 += c * c;
    }
    free(buf);
    *mean = s1 / n_draws;
    double var = (s2 - s1 * s1 / n_draws) / (n_draws - 1);
    *std = sqrt(fmax(var, 0.0));
    return HS_OK;
}

hs_status hs_composition_scores(const hs_model *m, hs_fold fold, int n_draws, uint64_t seed,
                                hs_comp_scores *out, hs_error *err)
{
    const hs_config *c = &m->cfg;
    const int L = c->n_layers, H = c->n_heads, D = c->d_model, dh = c->d_head;
    const int has_qk = c->attn == HS_ATTN_SOFTMAX;
    const size_t nf = (size_t)D * dh, hh = (size_t)dh * dh, NH = (size_t)L * H;
    hs_status st = HS_OK;
    memset(out, 0, sizeof *out);
    head_d *hd = calloc(NH, sizeof *hd);
    float *tmpf = malloc(4 * nf * sizeof(float));
    double *M = malloc(3 * hh * sizeof(double));
    const size_t n4 = NH * NH;
    out->q = malloc(n4 * sizeof(float));
    out->k = malloc(n4 * sizeof(float));
    out->v = malloc(n4 * sizeof(float));
    if (!hd || !tmpf || !M || !out->q || !out->k || !out->v) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto done;
    }
    out->L = L;
    out->H = H;
    for (size_t i = 0; i < NH; i++) {
        head_d *x = &hd[i];
        x->Q = malloc((3 * nf + nf + 4 * hh) * sizeof(double));
        if (x->Q == NULL) {
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
            goto done;
        }
        x->K = x->Q + nf;
        x->V = x->K + nf;
        x->O = x->V + nf;
        x->GQ = x->O + nf;
        x->GK = x->GQ + hh;
        x->GV = x->GK + hh;
        x->OOt = x->GV + hh;
        hs_head h = {(int)(i / (size_t)H), (int)(i % (size_t)H)};
        float *fQ = tmpf, *fK = tmpf + nf, *fV = tmpf + 2 * nf, *fO = tmpf + 3 * nf;
        st = hs_head_weights(m, h, fold, has_qk ? fQ : NULL, has_qk ? fK : NULL, fV, fO, err);
        if (st != HS_OK) goto done;
        for (size_t j = 0; j < nf; j++) {
            x->Q[j] = has_qk ? fQ[j] : 0.0;
            x->K[j] = has_qk ? fK[j] : 0.0;
            x->V[j] = fV[j];
            x->O[j] = fO[j];
        }
        gram(x->GQ, x->Q, D, dh);
        gram(x->GK, x->K, D, dh);
        gram(x->GV, x->V, D, dh);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, dh, dh, D, 1.0, x->O, D, x->O, D, 0.0,
                    x->OOt, dh);
        x->nOV2 = trace_prod(x->GV, x->OOt, dh);
        x->nQK2 = trace_prod(x->GQ, x->GK, dh);
    }
    for (size_t i1 = 0; i1 < NH; i1++)
        for (size_t i2 = 0; i2 < NH; i2++) {
            const size_t idx = i1 * NH + i2;
            const int l1 = (int)(i1 / (size_t)H), l2 = (int)(i2 / (size_t)H);
            out->q[idx] = out->k[idx] = out->v[idx] = NAN;
            if (l2 <= l1) continue;
            const head_d *a = &hd[i1], *b = &hd[i2];
            double *Mm = M, *tmp = M + hh;
            /* V: C(W_OV1, W_OV2) = ||V1 (O1 V2) O2|| / (||OV1|| ||OV2||) */
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, dh, dh, D, 1.0, a->O, D, b->V, dh,
                        0.0, Mm, dh);
            double den = sqrt(a->nOV2 * b->nOV2);
            out->v[idx] = den > 0 ? (float)(sqrt(fmax(gram_norm2(a->GV, Mm, b->OOt, dh, tmp), 0.0)) / den) : 0.0f;
            if (!has_qk) continue;
            den = sqrt(a->nOV2 * b->nQK2);
            /* Q: C(W_OV1, W_QK2) = ||V1 (O1 Q2) K2^T|| / ... */
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, dh, dh, D, 1.0, a->O, D, b->Q, dh,
                        0.0, Mm, dh);
            out->q[idx] = den > 0 ? (float)(sqrt(fmax(gram_norm2(a->GV, Mm, b->GK, dh, tmp), 0.0)) / den) : 0.0f;
            /* K: C(W_OV1, W_QK2^T) = ||V1 (O1 K2) Q2^T|| / ... */
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, dh, dh, D, 1.0, a->O, D, b->K, dh,
                        0.0, Mm, dh);
            out->k[idx] = den > 0 ? (float)(sqrt(fmax(gram_norm2(a->GV, Mm, b->GQ, dh, tmp), 0.0)) / den) : 0.0f;
        }
    out->n_draws = n_draws;
    if (n_draws >= 2) {
        st = hs_comp_baseline(D, dh, n_draws, seed, &out->baseline, &out->baseline_std, err);
    } else {
        out->baseline = out->baseline_std = NAN;
    }
done:
    if (hd)
        for (size_t i = 0; i < NH; i++) free(hd[i].Q);
    free(hd);
    free(tmpf);
    free(M);
    if (st != HS_OK) hs_comp_scores_free(out);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Full circuits and copying                                                 */

/* The rows ids[0..n) of W_E (V,D) gathered into a new (n,D) array, or W_E
 * itself when ids is NULL (*own 0). NULL on OOM. */
static const float *embed_rows(const hs_model *m, const int *ids, int n, float **own)
{
    const int D = m->cfg.d_model;
    *own = NULL;
    if (ids == NULL) return m->params.W_E;
    if ((*own = malloc((size_t)n * D * sizeof(float))) == NULL) return NULL;
    for (int i = 0; i < n; i++)
        memcpy(*own + (size_t)i * D, m->params.W_E + (size_t)ids[i] * D, (size_t)D * sizeof(float));
    return *own;
}

/* ids NULL (n = V) or every id in [0, V) and n >= 1; HS_ERR_INPUT else. */
static hs_status check_ids(const hs_model *m, const int *ids, int n, hs_error *err)
{
    if (ids == NULL) return HS_OK;
    if (n < 1) return hs_fail(err, HS_ERR_INPUT, "full circuit: no tokens");
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= m->cfg.d_vocab)
            return hs_fail(err, HS_ERR_INPUT, "full circuit: token id %d is outside the vocabulary "
                           "[0, %d)", ids[i], m->cfg.d_vocab);
    return HS_OK;
}

hs_status hs_full_QK_tokens(const hs_model *m, hs_head h, hs_fold fold, const int *ids, int n,
                            float *out, hs_error *err)
{
    const int D = m->cfg.d_model, dh = m->cfg.d_head;
    if (ids == NULL) n = m->cfg.d_vocab;
    hs_status st = check_ids(m, ids, n, err);
    if (st != HS_OK) return st;
    head_w w;
    if ((st = head_w_get(m, h, fold, 1, &w, err)) != HS_OK) return st;
    float *own = NULL;
    const float *E = embed_rows(m, ids, n, &own);
    float *EQ = malloc((size_t)n * dh * sizeof(float)), *EK = malloc((size_t)n * dh * sizeof(float));
    if (!E || !EQ || !EK) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    } else {
        mm(EQ, E, w.Q, n, D, dh, 0);
        mm(EK, E, w.K, n, D, dh, 0);
        mm(out, EQ, EK, n, dh, n, 1);
    }
    free(own);
    free(EQ);
    free(EK);
    head_w_free(&w);
    return st;
}

hs_status hs_full_OV_tokens(const hs_model *m, hs_head h, hs_fold fold, const int *ids, int n,
                            float *out, hs_error *err)
{
    const int D = m->cfg.d_model, dh = m->cfg.d_head, V = m->cfg.d_vocab;
    if (ids == NULL) n = V;
    hs_status st = check_ids(m, ids, n, err);
    if (st != HS_OK) return st;
    head_w w;
    if ((st = head_w_get(m, h, fold, 0, &w, err)) != HS_OK) return st;
    float *own = NULL;
    const float *E = embed_rows(m, ids, n, &own);
    float *EV = malloc((size_t)n * dh * sizeof(float)), *OU = malloc((size_t)dh * n * sizeof(float));
    float *U = malloc((size_t)D * (ids ? n : V) * sizeof(float));
    float *tmp = ids ? malloc((size_t)D * n * sizeof(float)) : NULL;
    if (!E || !EV || !OU || !U || (ids && !tmp)) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    } else {
        if (ids) unembed_columns(m, fold, ids, n, tmp, U);
        else unembed_weights(m, fold, U);
        mm(EV, E, w.V, n, D, dh, 0);
        mm(OU, w.O, U, dh, D, n, 0);
        mm(out, EV, OU, n, dh, n, 0);
    }
    free(tmp);
    free(own);
    free(EV);
    free(OU);
    free(U);
    head_w_free(&w);
    return st;
}

hs_status hs_full_QK(const hs_model *m, hs_head h, hs_fold fold, float *out, hs_error *err)
{
    return hs_full_QK_tokens(m, h, fold, NULL, 0, out, err);
}

hs_status hs_full_OV(const hs_model *m, hs_head h, hs_fold fold, float *out, hs_error *err)
{
    return hs_full_OV_tokens(m, h, fold, NULL, 0, out, err);
}

static hs_status copying_from_double(double *K, int n, double *score, double *pos_frac,
                                     hs_error *err)
{
    double *wr = malloc((size_t)n * sizeof *wr), *wi = malloc((size_t)n * sizeof *wi);
    if (!wr || !wi) {
        free(wr);
        free(wi);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    int info = eigenvalues(K, n, wr, wi);
    if (info != 0) {
        free(wr);
        free(wi);
        return hs_fail(err, HS_ERR_NUMERIC, "copying score: dgeev failed (info %d)", (int)info);
    }
    double sum_re = 0.0, sum_abs = 0.0, mx = 0.0;
    for (int i = 0; i < n; i++) {
        double a = hypot(wr[i], wi[i]);
        sum_re += wr[i];
        sum_abs += a;
        if (a > mx) mx = a;
    }
    int npos = 0, nz = 0;
    for (int i = 0; i < n; i++) {
        if (hypot(wr[i], wi[i]) <= 1e-9 * mx || mx == 0.0) continue;
        nz++;
        if (wr[i] > 0.0) npos++;
    }
    free(wr);
    free(wi);
    *score = sum_abs > 0.0 ? sum_re / sum_abs : 0.0;
    if (pos_frac) *pos_frac = nz > 0 ? (double)npos / nz : 0.0;
    return HS_OK;
}

hs_status hs_copying_score_matrix(const float *K, int n, double *score, double *pos_frac,
                                  hs_error *err)
{
    if (K == NULL || n < 1) return hs_fail(err, HS_ERR_INPUT, "copying score: empty matrix");
    double *Kd = malloc((size_t)n * n * sizeof *Kd);
    if (Kd == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < (size_t)n * n; i++) Kd[i] = K[i];
    hs_status st = copying_from_double(Kd, n, score, pos_frac, err);
    free(Kd);
    return st;
}

/* The vocabulary-sized operands of the copying score, in double: the folded
 * unembedding U (D,V) and W_E (V,D), with the per-head scratch. */
typedef struct {
    double *U, *E, *O, *Vv, *OU, *EV, *K;
} copy_ops;

static void copy_ops_free(copy_ops *c)
{
    free(c->U);
    free(c->E);
    free(c->O);
    free(c->Vv);
    free(c->OU);
    free(c->EV);
    free(c->K);
}

static hs_status copy_ops_make(const hs_model *m, hs_fold fold, copy_ops *c, hs_error *err)
{
    const int D = m->cfg.d_model, dh = m->cfg.d_head, V = m->cfg.d_vocab;
    memset(c, 0, sizeof *c);
    c->U = malloc((size_t)D * V * sizeof(double));
    c->E = malloc((size_t)V * D * sizeof(double));
    c->O = malloc((size_t)dh * D * sizeof(double));
    c->Vv = malloc((size_t)D * dh * sizeof(double));
    c->OU = malloc((size_t)dh * V * sizeof(double));
    c->EV = malloc((size_t)V * dh * sizeof(double));
    c->K = malloc((size_t)dh * dh * sizeof(double));
    float *Uf = malloc((size_t)D * V * sizeof(float));
    if (!c->U || !c->E || !c->O || !c->Vv || !c->OU || !c->EV || !c->K || !Uf) {
        free(Uf);
        copy_ops_free(c);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    unembed_weights(m, fold, Uf);
    for (size_t i = 0; i < (size_t)D * V; i++) {
        c->U[i] = Uf[i];
        c->E[i] = m->params.W_E[i];
    }
    free(Uf);
    return HS_OK;
}

/* One head's score from c: K = W_O (dh,D) W_U (D,V) W_E (V,D) W_V (D,dh). */
static hs_status copying_head(const hs_model *m, hs_head h, hs_fold fold, copy_ops *c, double *score,
                              double *pos_frac, hs_error *err)
{
    const int D = m->cfg.d_model, dh = m->cfg.d_head, V = m->cfg.d_vocab;
    head_w w;
    hs_status st = head_w_get(m, h, fold, 0, &w, err);
    if (st != HS_OK) return st;
    for (size_t i = 0; i < (size_t)D * dh; i++) {
        c->O[i] = w.O[i];
        c->Vv[i] = w.V[i];
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, dh, V, D, 1.0, c->O, D, c->U, V, 0.0, c->OU, V);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, V, dh, D, 1.0, c->E, D, c->Vv, dh, 0.0, c->EV, dh);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, dh, dh, V, 1.0, c->OU, V, c->EV, dh, 0.0, c->K, dh);
    st = copying_from_double(c->K, dh, score, pos_frac, err);
    head_w_free(&w);
    return st;
}

hs_status hs_copying_score(const hs_model *m, hs_head h, hs_fold fold, double *score,
                           double *pos_frac, hs_error *err)
{
    hs_status st = check_head(m, h, err);
    copy_ops c;
    if (st == HS_OK) st = copy_ops_make(m, fold, &c, err);
    if (st != HS_OK) return st;
    st = copying_head(m, h, fold, &c, score, pos_frac, err);
    copy_ops_free(&c);
    return st;
}

hs_status hs_copying_scores(const hs_model *m, hs_fold fold, double *score, double *pos_frac,
                            hs_error *err)
{
    copy_ops c;
    hs_status st = copy_ops_make(m, fold, &c, err);
    if (st != HS_OK) return st;
    for (int i = 0; st == HS_OK && i < m->cfg.n_layers * m->cfg.n_heads; i++)
        st = copying_head(m, (hs_head){i / m->cfg.n_heads, i % m->cfg.n_heads}, fold, &c, &score[i],
                          pos_frac ? &pos_frac[i] : NULL, err);
    copy_ops_free(&c);
    return st;
}
