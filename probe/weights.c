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

/* The copying score's K = W_O (dh,D) W_U (D,V) W_E (V,D) W_V (D,dh) is
 * computed in double one of two ways, whichever costs fewer multiply-adds:
 *   by head: W_O W_U (dh,V) and W_E W_V (V,dh), heads x (2 dh V D + dh dh V);
 *   shared:  G = W_U W_E (D,D) once (V summed in chunks of COPY_V_CHUNK, in
 *            order, each row block of COPY_G_ROWS a job), then W_O (G W_V),
 *            D V D + heads x (dh D D + dh D dh).
 * GPT-2 small: 734 against 30 billion (40 s of CPU against 1.5 s). The two
 * differ in the last bits of K only (test_probe_weights: 1e-12). */
#define COPY_G_ROWS 64
#define COPY_V_CHUNK 2048

/* Whether a run over n_heads heads takes the shared way. */
static int copying_shared(const hs_config *c, int n_heads)
{
    const double D = c->d_model, V = c->d_vocab, dh = c->d_head;
    return D * V * D + n_heads * (dh * D * D + dh * D * dh) < n_heads * (2 * dh * V * D + dh * dh * V);
}

/* The operands shared by every head: by head, the folded unembedding U
 * (D,V) and W_E (V,D) in double; shared, G (D,D). */
typedef struct {
    double *U, *E, *G;
} copy_ops;

/* One worker's scratch: O (dh,D), Vv (D,dh), K (dh,dh); by head OU (dh,V)
 * and EV (V,dh), shared OU as G W_V (D,dh). */
typedef struct {
    double *O, *Vv, *OU, *EV, *K;
} copy_scratch;

static void copy_ops_free(copy_ops *c)
{
    free(c->U);
    free(c->E);
    free(c->G);
}

static void copy_scratch_free(copy_scratch *w)
{
    free(w->O);
    free(w->Vv);
    free(w->OU);
    free(w->EV);
    free(w->K);
}

/* G's jobs: rows [j COPY_G_ROWS, ...) of G = Uf (D,V) W_E (V,D), from the
 * worker's scratch (COPY_G_ROWS + D) x COPY_V_CHUNK doubles. */
typedef struct {
    const float *Uf, *E;
    double *G, *scratch;
    int D, V;
} g_ctx;

static hs_status g_job(void *ctx, int j, int worker, hs_error *err)
{
    (void)err;
    g_ctx *g = ctx;
    const int D = g->D, V = g->V, r0 = j * COPY_G_ROWS;
    const int nr = D - r0 < COPY_G_ROWS ? D - r0 : COPY_G_ROWS;
    double *Ub = g->scratch + (size_t)worker * (COPY_G_ROWS + D) * COPY_V_CHUNK;
    double *Eb = Ub + (size_t)COPY_G_ROWS * COPY_V_CHUNK;
    for (int c0 = 0; c0 < V; c0 += COPY_V_CHUNK) {
        const int nc = V - c0 < COPY_V_CHUNK ? V - c0 : COPY_V_CHUNK;
        for (int r = 0; r < nr; r++)
            for (int c = 0; c < nc; c++) Ub[(size_t)r * nc + c] = g->Uf[(size_t)(r0 + r) * V + c0 + c];
        for (size_t i = 0; i < (size_t)nc * D; i++) Eb[i] = g->E[(size_t)c0 * D + i];
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nr, D, nc, 1.0, Ub, nc, Eb, D,
                    c0 ? 1.0 : 0.0, g->G + (size_t)r0 * D, D);
    }
    return HS_OK;
}

static hs_status copy_ops_make(const hs_model *m, hs_fold fold, int shared, hs_pool *pool,
                               copy_ops *c, hs_error *err)
{
    const int D = m->cfg.d_model, V = m->cfg.d_vocab, nw = hs_pool_threads(pool);
    memset(c, 0, sizeof *c);
    float *Uf = malloc((size_t)D * V * sizeof(float));
    hs_status st = Uf ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (st == HS_OK) unembed_weights(m, fold, Uf);
    if (st == HS_OK && shared) {
        g_ctx g = {Uf, m->params.W_E, malloc((size_t)D * D * sizeof(double)),
                   malloc((size_t)nw * (COPY_G_ROWS + D) * COPY_V_CHUNK * sizeof(double)), D, V};
        c->G = g.G;
        st = g.G && g.scratch ? hs_pool_for(pool, (D + COPY_G_ROWS - 1) / COPY_G_ROWS, g_job, &g, err)
                              : hs_fail(err, HS_ERR_NOMEM, "out of memory");
        free(g.scratch);
    } else if (st == HS_OK) {
        c->U = malloc((size_t)D * V * sizeof(double));
        c->E = malloc((size_t)V * D * sizeof(double));
        if (!c->U || !c->E) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        for (size_t i = 0; st == HS_OK && i < (size_t)D * V; i++) {
            c->U[i] = Uf[i];
            c->E[i] = m->params.W_E[i];
        }
    }
    free(Uf);
    if (st != HS_OK) copy_ops_free(c);
    return st;
}

static hs_status copy_scratch_make(const hs_model *m, int shared, copy_scratch *w, hs_error *err)
{
    const int D = m->cfg.d_model, dh = m->cfg.d_head, V = m->cfg.d_vocab;
    w->O = malloc((size_t)dh * D * sizeof(double));
    w->Vv = malloc((size_t)D * dh * sizeof(double));
    w->OU = malloc((size_t)dh * (shared ? D : V) * sizeof(double));
    w->EV = shared ? NULL : malloc((size_t)V * dh * sizeof(double));
    w->K = malloc((size_t)dh * dh * sizeof(double));
    if (!w->O || !w->Vv || !w->OU || (!shared && !w->EV) || !w->K) {
        copy_scratch_free(w);
        memset(w, 0, sizeof *w);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    return HS_OK;
}

/* One head's score from c (by head or shared, as c holds). */
static hs_status copying_head(const hs_model *m, hs_head h, hs_fold fold, const copy_ops *c,
                              copy_scratch *w, double *score, double *pos_frac, hs_error *err)
{
    const int D = m->cfg.d_model, dh = m->cfg.d_head, V = m->cfg.d_vocab;
    head_w hw;
    hs_status st = head_w_get(m, h, fold, 0, &hw, err);
    if (st != HS_OK) return st;
    for (size_t i = 0; i < (size_t)D * dh; i++) {
        w->O[i] = hw.O[i];
        w->Vv[i] = hw.V[i];
    }
    if (c->G) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, D, dh, D, 1.0, c->G, D, w->Vv, dh, 0.0, w->OU, dh);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, dh, dh, D, 1.0, w->O, D, w->OU, dh, 0.0, w->K, dh);
    } else {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, dh, V, D, 1.0, w->O, D, c->U, V, 0.0, w->OU, V);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, V, dh, D, 1.0, c->E, D, w->Vv, dh, 0.0, w->EV, dh);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, dh, dh, V, 1.0, w->OU, V, w->EV, dh, 0.0, w->K, dh);
    }
    st = copying_from_double(w->K, dh, score, pos_frac, err);
    head_w_free(&hw);
    return st;
}

hs_status hs_copying_score(const hs_model *m, hs_head h, hs_fold fold, double *score,
                           double *pos_frac, hs_error *err)
{
    hs_status st = check_head(m, h, err);
    const int shared = copying_shared(&m->cfg, 1);
    copy_ops c;
    copy_scratch w = {0};
    if (st == HS_OK) st = copy_ops_make(m, fold, shared, NULL, &c, err);
    if (st != HS_OK) return st;
    st = copy_scratch_make(m, shared, &w, err);
    if (st == HS_OK) st = copying_head(m, h, fold, &c, &w, score, pos_frac, err);
    copy_scratch_free(&w);
    copy_ops_free(&c);
    return st;
}

/* hs_copying_scores' jobs: head i on a worker's scratch, its progress
 * counted in pr (hs_pool_count_step). */
typedef struct {
    const hs_model *m;
    hs_fold fold;
    int shared;
    const copy_ops *c;
    copy_scratch *w; /* (workers) */
    double *score, *pos_frac;
    hs_pool_count pr;
} copy_ctx;

static hs_status copy_job(void *ctx, int i, int worker, hs_error *err)
{
    copy_ctx *x = ctx;
    const int H = x->m->cfg.n_heads;
    /* the worker's scratch at its first head (a worker without a head has none) */
    hs_status st = x->w[worker].K ? HS_OK : copy_scratch_make(x->m, x->shared, &x->w[worker], err);
    if (st == HS_OK)
        st = copying_head(x->m, (hs_head){i / H, i % H}, x->fold, x->c, &x->w[worker],
                                &x->score[i], x->pos_frac ? &x->pos_frac[i] : NULL, err);
    if (st == HS_OK) hs_pool_count_step(&x->pr);
    return st;
}

hs_status hs_copying_scores(const hs_model *m, hs_fold fold, hs_pool *pool, double *score,
                            double *pos_frac, hs_error *err)
{
    const int nw = hs_pool_threads(pool), NA = m->cfg.n_layers * m->cfg.n_heads;
    const int shared = copying_shared(&m->cfg, NA);
    copy_ops c;
    hs_status st = copy_ops_make(m, fold, shared, pool, &c, err);
    if (st != HS_OK) return st;
    copy_ctx x = {m, fold, shared, &c, calloc((size_t)nw, sizeof(copy_scratch)), score, pos_frac,
                  {pool, "copying scores (heads)", 0, NA}};
    if (!x.w) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (st == HS_OK) st = hs_pool_for(pool, NA, copy_job, &x, err);
    for (int k = 0; x.w && k < nw; k++) copy_scratch_free(&x.w[k]);
    free(x.w);
    copy_ops_free(&c);
    return st;
}
