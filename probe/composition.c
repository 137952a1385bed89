/*
 * probe/composition.c -- composition scores of every head pair with their
 * random baseline (CIRCUITS.md 3, in C3's d_head-sized Gram form), as
 * probe.h section 6 documents them. The work runs on a worker pool (common/
 * hs_pool, may be NULL) in jobs that each write their own cells, and reports
 * its progress through it (hs_pool_progress); the baseline's draws each
 * start the seeded stream where the serial loop would have reached, and are
 * summed in draw order, so every number is the same bits for any thread
 * count and equal to the serial computation.
 */
#include "probe/probe.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
#define RNG_GAMMA 0x9E3779B97F4A7C15ull

/* splitmix64 + Box-Muller: seeded N(0,1). */
typedef struct {
    uint64_t s;
    int has;
    double spare;
} rng;

static uint64_t rng_next(rng *r)
{
    uint64_t z = (r->s += RNG_GAMMA);
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

/* The baseline's draws: draw it fills c[it] from its own part of the seeded
 * stream, in the worker's scratch (per doubles each). */
typedef struct {
    int D, dh;
    uint64_t seed;
    double *c;       /* (n_draws) */
    double *scratch; /* (workers, per) */
    size_t per;
    hs_pool_count pr;
} base_ctx;

static hs_status base_draw(void *ctx, int it, int worker, hs_error *err)
{
    (void)err;
    base_ctx *b = ctx;
    const int D = b->D, dh = b->dh;
    const size_t nf = (size_t)D * dh, hh = (size_t)dh * dh;
    /* factors A, Bm, C, E; Gram matrices GA, BBt, GC, EEt; M; scratch (2 hh) */
    double *buf = b->scratch + (size_t)worker * b->per;
    double *A = buf, *Bm = A + nf, *C = Bm + nf, *E = C + nf;
    double *GA = E + nf, *BBt = GA + hh, *GC = BBt + hh, *EEt = GC + hh, *M = EEt + hh;
    double *tmp2 = M + hh;
    /* a draw takes 4 nf normals, 2 nf Box-Muller pairs of two rng_next each
     * (an even count: no spare crosses a draw), so draw it starts where the
     * serial stream stood after 4 nf * it steps */
    rng r = {b->seed + (uint64_t)it * (uint64_t)(4 * nf) * RNG_GAMMA, 0, 0.0};
    for (size_t i = 0; i < 4 * nf; i++) buf[i] = rng_gauss(&r);
    /* L = A Bm (A (D,dh), Bm (dh,D)), R = C E (C (D,dh), E (dh,D)) */
    gram(GA, A, D, dh);
    gram(GC, C, D, dh);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, dh, dh, D, 1.0, Bm, D, Bm, D, 0.0, BBt, dh);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, dh, dh, D, 1.0, E, D, E, D, 0.0, EEt, dh);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, dh, dh, D, 1.0, Bm, D, C, dh, 0.0, M, dh);
    double nl2 = trace_prod(GA, BBt, dh), nr2 = trace_prod(GC, EEt, dh);
    double nlr2 = gram_norm2(GA, M, EEt, dh, tmp2);
    b->c[it] = sqrt(fmax(nlr2, 0.0) / (nl2 * nr2));
    hs_pool_count_step(&b->pr);
    return HS_OK;
}

hs_status hs_comp_baseline(int d_model, int d_head, int n_draws, uint64_t seed, hs_pool *pool,
                           double *mean, double *std, hs_error *err)
{
    const int D = d_model, dh = d_head;
    if (D < 1 || dh < 1 || n_draws < 2)
        return hs_fail(err, HS_ERR_INPUT, "baseline: need d_model, d_head >= 1 and >= 2 draws");
    const size_t nf = (size_t)D * dh, hh = (size_t)dh * dh, per = 4 * nf + 7 * hh;
    const int nw = hs_pool_threads(pool);
    base_ctx b = {D, dh, seed, malloc((size_t)n_draws * sizeof(double)),
                  malloc((size_t)nw * per * sizeof(double)), per,
                  {pool, "composition baseline draws", 0, n_draws}};
    hs_status st = b.c && b.scratch ? hs_pool_for(pool, n_draws, base_draw, &b, err)
                                    : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (st == HS_OK) {
        double s1 = 0.0, s2 = 0.0; /* in draw order, as one loop summed them */
        for (int it = 0; it < n_draws; it++) {
            s1 += b.c[it];
            s2 += b.c[it] * b.c[it];
        }
        *mean = s1 / n_draws;
        double var = (s2 - s1 * s1 / n_draws) / (n_draws - 1);
        *std = sqrt(fmax(var, 0.0));
    }
    free(b.c);
    free(b.scratch);
    return st;
}

/* The pair scores: job j is sender i1 = send[j] against the H heads of layer
 * l2 = recv_layer[j] > its own (every job the same work), in the worker's
 * scratch (3 hh doubles, tmpf 4 nf floats for the heads' factors). */
typedef struct {
    const hs_model *m;
    hs_fold fold;
    int has_qk;
    head_d *hd;         /* (NH) */
    int *send, *rlayer; /* (n_jobs) */
    double *M;          /* (workers, 3 hh) */
    float *tmpf;        /* (workers, 4 nf) */
    hs_comp_scores *out;
    hs_pool_count pr;
} pair_ctx;

/* Head i's double factors and Gram matrices into hd[i]. */
static hs_status head_job(void *ctx, int i, int worker, hs_error *err)
{
    pair_ctx *p = ctx;
    const hs_config *c = &p->m->cfg;
    const int D = c->d_model, dh = c->d_head, H = c->n_heads, has_qk = p->has_qk;
    const size_t nf = (size_t)D * dh, hh = (size_t)dh * dh;
    head_d *x = &p->hd[i];
    x->Q = malloc((3 * nf + nf + 4 * hh) * sizeof(double));
    if (x->Q == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    x->K = x->Q + nf;
    x->V = x->K + nf;
    x->O = x->V + nf;
    x->GQ = x->O + nf;
    x->GK = x->GQ + hh;
    x->GV = x->GK + hh;
    x->OOt = x->GV + hh;
    hs_head h = {i / H, i % H};
    float *tmpf = p->tmpf + (size_t)worker * 4 * nf;
    float *fQ = tmpf, *fK = tmpf + nf, *fV = tmpf + 2 * nf, *fO = tmpf + 3 * nf;
    hs_status st = hs_head_weights(p->m, h, p->fold, has_qk ? fQ : NULL, has_qk ? fK : NULL, fV, fO, err);
    if (st != HS_OK) return st;
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
    return HS_OK;
}

static hs_status pair_job(void *ctx, int j, int worker, hs_error *err)
{
    (void)err;
    pair_ctx *p = ctx;
    const hs_config *c = &p->m->cfg;
    const int D = c->d_model, dh = c->d_head, H = c->n_heads;
    const size_t hh = (size_t)dh * dh, NH = (size_t)c->n_layers * H;
    const size_t i1 = (size_t)p->send[j];
    double *Mm = p->M + (size_t)worker * 3 * hh, *tmp = Mm + hh;
    hs_comp_scores *out = p->out;
    for (size_t i2 = (size_t)p->rlayer[j] * H; i2 < (size_t)(p->rlayer[j] + 1) * H; i2++) {
        const size_t idx = i1 * NH + i2;
        const head_d *a = &p->hd[i1], *b = &p->hd[i2];
        /* V: C(W_OV1, W_OV2) = ||V1 (O1 V2) O2|| / (||OV1|| ||OV2||) */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, dh, dh, D, 1.0, a->O, D, b->V, dh,
                    0.0, Mm, dh);
        double den = sqrt(a->nOV2 * b->nOV2);
        out->v[idx] = den > 0 ? (float)(sqrt(fmax(gram_norm2(a->GV, Mm, b->OOt, dh, tmp), 0.0)) / den) : 0.0f;
        if (!p->has_qk) continue;
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
    hs_pool_count_step(&p->pr);
    return HS_OK;
}

hs_status hs_composition_scores(const hs_model *m, hs_fold fold, int n_draws, uint64_t seed,
                                hs_pool *pool, hs_comp_scores *out, hs_error *err)
{
    const hs_config *c = &m->cfg;
    const int L = c->n_layers, H = c->n_heads, D = c->d_model, dh = c->d_head;
    const size_t nf = (size_t)D * dh, hh = (size_t)dh * dh, NH = (size_t)L * H;
    const int nw = hs_pool_threads(pool);
    const int n_jobs = H * L * (L - 1) / 2; /* (sender, later layer) */
    hs_status st = HS_OK;
    memset(out, 0, sizeof *out);
    const size_t n4 = NH * NH;
    pair_ctx p = {m, fold, c->attn == HS_ATTN_SOFTMAX, calloc(NH, sizeof(head_d)),
                  malloc(((size_t)n_jobs + 1) * sizeof(int)), malloc(((size_t)n_jobs + 1) * sizeof(int)),
                  malloc((size_t)nw * 3 * hh * sizeof(double)), malloc((size_t)nw * 4 * nf * sizeof(float)),
                  out, {pool, "composition scores (sender, layer)", 0, n_jobs}};
    out->q = malloc(n4 * sizeof(float));
    out->k = malloc(n4 * sizeof(float));
    out->v = malloc(n4 * sizeof(float));
    if (!p.hd || !p.send || !p.rlayer || !p.M || !p.tmpf || !out->q || !out->k || !out->v) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto done;
    }
    out->L = L;
    out->H = H;
    for (size_t i = 0; i < n4; i++) out->q[i] = out->k[i] = out->v[i] = NAN; /* l2 <= l1 */
    for (int i1 = 0, j = 0; i1 < L * H; i1++)
        for (int l2 = i1 / H + 1; l2 < L; l2++, j++) {
            p.send[j] = i1;
            p.rlayer[j] = l2;
        }
    st = hs_pool_for(pool, (int)NH, head_job, &p, err);
    if (st == HS_OK) st = hs_pool_for(pool, n_jobs, pair_job, &p, err);
    if (st != HS_OK) goto done;
    out->n_draws = n_draws;
    if (n_draws >= 2) {
        st = hs_comp_baseline(D, dh, n_draws, seed, pool, &out->baseline, &out->baseline_std, err);
    } else {
        out->baseline = out->baseline_std = NAN;
    }
done:
    if (p.hd)
        for (size_t i = 0; i < NH; i++) free(p.hd[i].Q);
    free(p.hd);
    free(p.send);
    free(p.rlayer);
    free(p.M);
    free(p.tmpf);
    if (st != HS_OK) hs_comp_scores_free(out);
    return st;
}
