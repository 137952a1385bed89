/*
 * tests/test_probe_weights.c -- virtual weights, composition scores and their
 * random baseline, full circuits, the eigenvalue copying score (CIRCUITS.md
 * 2-4), attention statistics (8) and head detectors (7) of probe/.
 * Every quantity is checked against a direct dense computation written here.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <lapacke.h>

#include "model/model.h"
#include "probe/probe.h"
#include "fixture.h"

static double gauss(void)
{
    double u1 = (rnd() + 1.0) * 0.5 + 1e-300, u2 = (rnd() + 1.0) * 0.5;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static hs_model *random_model(hs_config cfg, uint64_t seed) { return random_model_of(&cfg, seed); }

static hs_config small_config(int L, int D, int H, int dh, int V)
{
    hs_config c = hs_config_default();
    c.n_layers = L;
    c.d_model = D;
    c.n_heads = H;
    c.d_head = dh;
    c.d_mlp = 8;
    c.n_ctx = 8;
    c.d_vocab = V;
    return c;
}

/* out (n,p) = A (n,k) B (k,p), naive, double accumulation. */
static void dense_mm(float *out, const float *A, const float *Bm, int n, int k, int p)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < p; j++) {
            double s = 0.0;
            for (int q = 0; q < k; q++) s += (double)A[i * k + q] * Bm[q * p + j];
            out[i * p + j] = (float)s;
        }
}

static void transpose(float *out, const float *A, int n, int p)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < p; j++) out[j * n + i] = A[i * p + j];
}

static double max_rel_diff(const float *a, const float *b, size_t n)
{
    double mx = 0.0, scale = 0.0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(b[i]));
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= mx)) mx = d;
    }
    return mx / (scale > 0 ? scale : 1.0);
}

/* ------------------------------------------------------------------------ */

static void qk_and_ov_match_the_stored_weights_and_the_fold(void **state)
{
    (void)state;
    hs_error err;
    const int L = 2, D = 12, H = 3, dh = 4, V = 9;
    hs_model *m = random_model(small_config(L, D, H, dh, V), 1);
    float Q[12 * 4], K[12 * 4], Vw[12 * 4], O[4 * 12], Kt[4 * 12], want[12 * 12], got[12 * 12];
    hs_head h = {1, 2};
    const hs_block_params *bp = &m->params.blocks[1];
    /* unfolded: the stored matrices */
    assert_int_equal(hs_head_weights(m, h, HS_FOLD_NONE, Q, K, Vw, O, &err), HS_OK);
    assert_memory_equal(Q, bp->W_Q + 2 * D * dh, sizeof Q);
    assert_memory_equal(O, bp->W_O + 2 * dh * D, sizeof O);
    assert_int_equal(hs_W_QK(m, h, HS_FOLD_NONE, got, &err), HS_OK);
    transpose(Kt, K, D, dh);
    dense_mm(want, Q, Kt, D, dh, D);
    assert_true(max_rel_diff(got, want, 144) < 1e-5);
    assert_int_equal(hs_W_OV(m, h, HS_FOLD_NONE, got, &err), HS_OK);
    dense_mm(want, Vw, O, D, dh, D);
    assert_true(max_rel_diff(got, want, 144) < 1e-5);
    /* folded: for any x, LN(x) W_Q (without the bias b W_Q) = (x / s) W_Q,fold */
    float Qf[12 * 4];
    assert_int_equal(hs_head_weights(m, h, HS_FOLD_LN, Qf, NULL, NULL, NULL, &err), HS_OK);
    double worst = 0.0;
    for (int trial = 0; trial < 5; trial++) {
        double x[12], mu = 0.0, var = 0.0;
        for (int d = 0; d < D; d++) mu += (x[d] = 3.0 * rnd() + 1.0);
        mu /= D;
        for (int d = 0; d < D; d++) var += (x[d] - mu) * (x[d] - mu);
        double s = sqrt(var / D + m->cfg.eps);
        for (int j = 0; j < dh; j++) {
            double a = 0.0, b = 0.0;
            for (int d = 0; d < D; d++) {
                a += (x[d] - mu) / s * bp->ln1_w[d] * bp->W_Q[2 * D * dh + d * dh + j];
                b += x[d] / s * Qf[d * dh + j];
            }
            worst = fmax(worst, fabs(a - b));
        }
    }
    assert_true(worst < 1e-4);
    /* the fold changed something (so the test above can fail) */
    assert_true(max_rel_diff(Qf, Q, 48) > 1e-3);
    /* uniform attention has no W_Q */
    hs_config cu = small_config(L, D, H, dh, V);
    cu.attn = HS_ATTN_UNIFORM;
    hs_model *mu_ = random_model(cu, 2);
    assert_int_equal(hs_W_QK(mu_, h, HS_FOLD_LN, got, &err), HS_ERR_INPUT);
    hs_head bad = {2, 0};
    assert_int_equal(hs_W_OV(m, bad, HS_FOLD_LN, got, &err), HS_ERR_INPUT);
    hs_model_destroy(mu_);
    hs_model_destroy(m);
}

static void head_products_match_dense_products(void **state)
{
    (void)state;
    hs_error err;
    const int D = 10, H = 2, dh = 3, V = 7;
    hs_model *m = random_model(small_config(2, D, H, dh, V), 3);
    hs_head h1 = {0, 1}, h2 = {1, 0};
    float O1[3 * 10], Q2[10 * 3], K2[10 * 3], V2[10 * 3], O2[3 * 10], got[10 * 10], want[10 * 10];
    float ov1[100], qk2[100], qk2t[100], ov2[100], K2t[30];
    assert_int_equal(hs_head_weights(m, h1, HS_FOLD_LN, NULL, NULL, NULL, O1, &err), HS_OK);
    assert_int_equal(hs_head_weights(m, h2, HS_FOLD_LN, Q2, K2, V2, O2, &err), HS_OK);
    const float *X[3] = {Q2, K2, V2};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(hs_head_product(m, h1, h2, (hs_comp)k, HS_FOLD_LN, got, &err), HS_OK);
        dense_mm(want, O1, X[k], dh, D, dh);
        assert_true(max_rel_diff(got, want, 9) < 1e-5);
    }
    assert_int_equal(hs_W_OV(m, h1, HS_FOLD_LN, ov1, &err), HS_OK);
    transpose(K2t, K2, D, dh);
    dense_mm(qk2, Q2, K2t, D, dh, D);
    transpose(qk2t, qk2, D, D);
    assert_int_equal(hs_W_OV(m, h2, HS_FOLD_LN, ov2, &err), HS_OK);
    const float *R[3] = {qk2, qk2t, ov2};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(hs_OV_product(m, h1, h2, (hs_comp)k, HS_FOLD_LN, got, &err), HS_OK);
        dense_mm(want, ov1, R[k], D, D, D);
        assert_true(max_rel_diff(got, want, 100) < 1e-5);
    }
    hs_model_destroy(m);
}

static void composition_scores_equal_dense_scores_and_skip_within_layer_pairs(void **state)
{
    (void)state;
    hs_error err;
    const int L = 3, D = 16, H = 3, dh = 4, V = 9;
    for (int variant = 0; variant < 3; variant++) {
        hs_config c = small_config(L, D, H, dh, V);
        if (variant == 1) c.norm = HS_NORM_RMSNORM;
        if (variant == 2) c.attn = HS_ATTN_UNIFORM;
        hs_model *m = random_model(c, 10 + variant);
        hs_comp_scores cs;
        assert_int_equal(hs_composition_scores(m, HS_FOLD_LN, 50, 7, NULL, &cs, &err), HS_OK);
        assert_int_equal(cs.L, L);
        assert_int_equal(cs.H, H);
        static float ov1[256], r[256], rt[256];
        double worst = 0.0;
        int reported = 0, skipped = 0;
        for (int l1 = 0; l1 < L; l1++)
            for (int a = 0; a < H; a++)
                for (int l2 = 0; l2 < L; l2++)
                    for (int b = 0; b < H; b++) {
                        size_t idx = (((size_t)l1 * H + a) * L + l2) * H + b;
                        if (l2 <= l1) {
                            assert_true(isnan(cs.q[idx]) && isnan(cs.k[idx]) && isnan(cs.v[idx]));
                            skipped++;
                            continue;
                        }
                        reported++;
                        hs_head h1 = {l1, a}, h2 = {l2, b};
                        assert_int_equal(hs_W_OV(m, h1, HS_FOLD_LN, ov1, &err), HS_OK);
                        assert_int_equal(hs_W_OV(m, h2, HS_FOLD_LN, r, &err), HS_OK);
                        double v = hs_comp_score_dense(ov1, r, D, D, D);
                        worst = fmax(worst, fabs(v - cs.v[idx]));
                        if (variant == 2) {
                            assert_true(isnan(cs.q[idx]) && isnan(cs.k[idx]));
                            continue;
                        }
                        assert_int_equal(hs_W_QK(m, h2, HS_FOLD_LN, r, &err), HS_OK);
                        transpose(rt, r, D, D);
                        worst = fmax(worst, fabs(hs_comp_score_dense(ov1, r, D, D, D) - cs.q[idx]));
                        worst = fmax(worst, fabs(hs_comp_score_dense(ov1, rt, D, D, D) - cs.k[idx]));
                        assert_true(cs.q[idx] > 0.0f && cs.q[idx] <= 1.0f);
                        assert_true(fabs(cs.q[idx] - cs.k[idx]) > 1e-6); /* Q and K differ */
                    }
        printf("  variant %d: %d pairs reported, %d not; max |gram - dense| = %.2e; baseline %.4f +- %.4f\n",
               variant, reported, skipped, worst, cs.baseline, cs.baseline_std);
        assert_int_equal(reported, H * H * (L * (L - 1) / 2));
        assert_true(worst < 1e-5);
        hs_comp_scores_free(&cs);
        hs_model_destroy(m);
    }
}

static void dense_score_is_one_for_aligned_and_zero_for_orthogonal(void **state)
{
    (void)state;
    /* L = e1 e1^T, R = e1 e1^T: C = 1; R = e2 e2^T: C = 0 */
    float Lm[9] = {1, 0, 0, 0, 0, 0, 0, 0, 0}, R1[9] = {2, 0, 0, 0, 0, 0, 0, 0, 0},
          R2[9] = {0, 0, 0, 0, 1, 0, 0, 0, 0};
    assert_true(fabs(hs_comp_score_dense(Lm, R1, 3, 3, 3) - 1.0) < 1e-12);
    assert_true(fabs(hs_comp_score_dense(Lm, R2, 3, 3, 3)) < 1e-12);
}

static void random_baseline_for_d_model_64_is_near_one_over_sqrt_64(void **state)
{
    (void)state;
    hs_error err;
    double mean, std;
    assert_int_equal(hs_comp_baseline(64, 16, 300, 42, NULL, &mean, &std, &err), HS_OK);
    printf("  baseline D 64, dh 16, 300 draws: %.4f +- %.4f (1/sqrt(64) = 0.125)\n", mean, std);
    assert_true(fabs(mean - 0.125) < 0.01);
    assert_true(std > 0.0 && std < 0.02);
    double m2, s2;
    assert_int_equal(hs_comp_baseline(64, 4, 300, 43, NULL, &m2, &s2, &err), HS_OK);
    printf("  baseline D 64, dh 4: %.4f +- %.4f\n", m2, s2);
    assert_true(fabs(m2 - 0.125) < 0.015);
    assert_int_equal(hs_comp_baseline(256, 16, 100, 44, NULL, &m2, &s2, &err), HS_OK);
    printf("  baseline D 256, dh 16: %.4f +- %.4f (1/16 = 0.0625)\n", m2, s2);
    assert_true(fabs(m2 - 0.0625) < 0.006);
    /* independent: dense scores of products of Gaussian factors drawn here */
    rng_state = 5;
    static float A[64 * 16], Bm[16 * 64], C[64 * 16], E[16 * 64], Lm[64 * 64], R[64 * 64];
    double s = 0.0;
    const int n = 40;
    for (int it = 0; it < n; it++) {
        for (int i = 0; i < 64 * 16; i++) {
            A[i] = (float)gauss();
            Bm[i] = (float)gauss();
            C[i] = (float)gauss();
            E[i] = (float)gauss();
        }
        dense_mm(Lm, A, Bm, 64, 16, 64);
        dense_mm(R, C, E, 64, 16, 64);
        s += hs_comp_score_dense(Lm, R, 64, 64, 64);
    }
    printf("  dense check, %d draws: %.4f\n", n, s / n);
    assert_true(fabs(s / n - mean) < 0.01);
    /* the seed makes it reproducible */
    double m3, s3;
    assert_int_equal(hs_comp_baseline(64, 16, 300, 42, NULL, &m3, &s3, &err), HS_OK);
    assert_true(m3 == mean && s3 == std);
}

static void full_circuits_match_dense_products(void **state)
{
    (void)state;
    hs_error err;
    const int D = 8, H = 2, dh = 3, V = 6;
    hs_config c = small_config(2, D, H, dh, V);
    c.ln_final = 0; /* W_U then needs no fold */
    hs_model *m = random_model(c, 20);
    hs_head h = {1, 1};
    float qk[64], ov[64], t1[48], Et[48], want[36], got[36];
    assert_int_equal(hs_W_QK(m, h, HS_FOLD_LN, qk, &err), HS_OK);
    assert_int_equal(hs_full_QK(m, h, HS_FOLD_LN, got, &err), HS_OK);
    dense_mm(t1, m->params.W_E, qk, V, D, D);
    transpose(Et, m->params.W_E, V, D);
    dense_mm(want, t1, Et, V, D, V);
    assert_true(max_rel_diff(got, want, 36) < 1e-5);
    assert_int_equal(hs_W_OV(m, h, HS_FOLD_LN, ov, &err), HS_OK);
    assert_int_equal(hs_full_OV(m, h, HS_FOLD_LN, got, &err), HS_OK);
    dense_mm(t1, m->params.W_E, ov, V, D, D);
    dense_mm(want, t1, m->params.W_U, V, D, V);
    assert_true(max_rel_diff(got, want, 36) < 1e-5);
    hs_model_destroy(m);
}

/* The token-subset circuits are the whole vocabulary's rows and columns
 * (with LayerNorm's fold of W_U, which acts column by column), and every
 * head's copying score at once equals the score head by head, bit for bit. */
static void subset_circuits_and_all_copying_scores_match(void **state)
{
    (void)state;
    hs_error err;
    const int D = 8, H = 2, dh = 3, V = 6, ids[3] = {4, 0, 5};
    hs_config c = small_config(2, D, H, dh, V);
    hs_model *m = random_model(c, 21);
    hs_head h = {1, 0};
    float full[36], sub[9];
    assert_int_equal(hs_full_QK(m, h, HS_FOLD_LN, full, &err), HS_OK);
    assert_int_equal(hs_full_QK_tokens(m, h, HS_FOLD_LN, ids, 3, sub, &err), HS_OK);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            assert_true(fabsf(sub[i * 3 + j] - full[ids[i] * V + ids[j]]) <= 1e-5f * (1 + fabsf(full[ids[i] * V + ids[j]])));
    assert_int_equal(hs_full_OV(m, h, HS_FOLD_LN, full, &err), HS_OK);
    assert_int_equal(hs_full_OV_tokens(m, h, HS_FOLD_LN, ids, 3, sub, &err), HS_OK);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            assert_true(fabsf(sub[i * 3 + j] - full[ids[i] * V + ids[j]]) <= 1e-5f * (1 + fabsf(full[ids[i] * V + ids[j]])));
    const int bad[1] = {V};
    assert_int_equal(hs_full_OV_tokens(m, h, HS_FOLD_LN, bad, 1, sub, &err), HS_ERR_INPUT);
    assert_string_equal(err.msg, "full circuit: token id 6 is outside the vocabulary [0, 6)");
    double all[4], pos[4];
    assert_int_equal(hs_copying_scores(m, HS_FOLD_LN, NULL, all, pos, &err), HS_OK);
    for (int i = 0; i < 4; i++) {
        double s1, p1;
        assert_int_equal(hs_copying_score(m, (hs_head){i / 2, i % 2}, HS_FOLD_LN, &s1, &p1, &err), HS_OK);
        assert_true(s1 == all[i] && p1 == pos[i]);
    }
    hs_model_destroy(m);
}

/* On a pool of 3 workers (the progress counted) the composition scores, the
 * baseline and the copying scores are the serial run's bits, and each phase
 * reports 1..total in order. */
typedef struct {
    char what[4][48];
    long last[4], total[4];
    int n, ordered;
} phases;

static void count_phase(void *ctx, const char *what, long done, long total)
{
    phases *p = ctx;
    int i = 0;
    while (i < p->n && strcmp(p->what[i], what) != 0) i++;
    if (i == p->n && p->n < 4) snprintf(p->what[p->n++], sizeof p->what[0], "%s", what);
    if (i >= 4) return;
    p->ordered &= done == p->last[i] + 1;
    p->last[i] = done;
    p->total[i] = total;
}

static void pool_scores_equal_serial_scores(void **state)
{
    (void)state;
    hs_error err;
    const int L = 3, H = 3;
    hs_model *m = random_model(small_config(L, 16, H, 4, 9), 21);
    hs_pool *pool = NULL;
    assert_int_equal(hs_pool_create(3, &pool, &err), HS_OK);
    phases ph = {.ordered = 1};
    hs_pool_set_progress(pool, count_phase, &ph);
    hs_comp_scores a, b;
    assert_int_equal(hs_composition_scores(m, HS_FOLD_LN, 50, 7, NULL, &a, &err), HS_OK);
    assert_int_equal(hs_composition_scores(m, HS_FOLD_LN, 50, 7, pool, &b, &err), HS_OK);
    const size_t n = (size_t)L * H * L * H;
    assert_memory_equal(a.q, b.q, n * sizeof(float)); /* NAN cells too: the same bits */
    assert_memory_equal(a.k, b.k, n * sizeof(float));
    assert_memory_equal(a.v, b.v, n * sizeof(float));
    assert_true(a.baseline == b.baseline && a.baseline_std == b.baseline_std);
    double s1[9], p1[9], s2[9], p2[9];
    assert_int_equal(hs_copying_scores(m, HS_FOLD_LN, NULL, s1, p1, &err), HS_OK);
    assert_int_equal(hs_copying_scores(m, HS_FOLD_LN, pool, s2, p2, &err), HS_OK);
    assert_memory_equal(s1, s2, sizeof s1);
    assert_memory_equal(p1, p2, sizeof p1);
    assert_true(ph.ordered);
    assert_int_equal(ph.n, 3);
    assert_string_equal(ph.what[0], "composition scores (sender, layer)");
    assert_int_equal(ph.total[0], H * L * (L - 1) / 2);
    assert_int_equal(ph.last[0], ph.total[0]);
    assert_string_equal(ph.what[1], "composition baseline draws");
    assert_int_equal(ph.last[1], 50);
    assert_string_equal(ph.what[2], "copying scores (heads)");
    assert_int_equal(ph.last[2], L * H);
    hs_comp_scores_free(&a);
    hs_comp_scores_free(&b);
    hs_pool_destroy(pool);
    hs_model_destroy(m);
}

/* A vocabulary much larger than d_model: every head's copying score through
 * the shared G = W_U W_E (hs_copying_scores, 4 heads) equals the by-head
 * product's (hs_copying_score, one head) to 1e-12, on a pool too. */
static void shared_copying_product_equals_the_by_head_product(void **state)
{
    (void)state;
    hs_error err;
    hs_model *m = random_model(small_config(2, 16, 2, 4, 200), 23);
    hs_pool *pool = NULL;
    assert_int_equal(hs_pool_create(2, &pool, &err), HS_OK);
    double all[4], pos[4], all2[4], pos2[4];
    assert_int_equal(hs_copying_scores(m, HS_FOLD_LN, NULL, all, pos, &err), HS_OK);
    assert_int_equal(hs_copying_scores(m, HS_FOLD_LN, pool, all2, pos2, &err), HS_OK);
    assert_memory_equal(all, all2, sizeof all);
    assert_memory_equal(pos, pos2, sizeof pos);
    double worst = 0.0;
    for (int i = 0; i < 4; i++) {
        double s1, p1;
        assert_int_equal(hs_copying_score(m, (hs_head){i / 2, i % 2}, HS_FOLD_LN, &s1, &p1, &err), HS_OK);
        worst = fmax(worst, fabs(s1 - all[i]));
        assert_true(p1 == pos[i]);
        assert_true(fabs(all[i]) > 1e-3); /* a score that could differ */
    }
    assert_true(worst <= 1e-12);
    hs_pool_destroy(pool);
    hs_model_destroy(m);
}

/* Sets W_O of head h so that W_O W_U W_E W_V = c I: W_O = c (Y^T Y)^{-1} Y^T
 * with Y = W_U W_E W_V (D,dh). */
static void make_copying_head(hs_model *m, hs_head h, double c)
{
    const int D = m->cfg.d_model, dh = m->cfg.d_head, V = m->cfg.d_vocab;
    const float *WV = m->params.blocks[h.layer].W_V + (size_t)h.head * D * dh;
    float *WO = m->params.blocks[h.layer].W_O + (size_t)h.head * dh * D;
    double Y[32 * 8], G[8 * 8], Yt[8 * 32];
    for (int i = 0; i < D; i++)
        for (int j = 0; j < dh; j++) {
            double s = 0.0;
            for (int v = 0; v < V; v++)
                for (int e = 0; e < D; e++)
                    s += (double)m->params.W_U[i * V + v] * m->params.W_E[v * D + e] * WV[e * dh + j];
            Y[i * dh + j] = s;
        }
    for (int a = 0; a < dh; a++)
        for (int b = 0; b < dh; b++) {
            double s = 0.0;
            for (int i = 0; i < D; i++) s += Y[i * dh + a] * Y[i * dh + b];
            G[a * dh + b] = s;
        }
    for (int a = 0; a < dh; a++)
        for (int i = 0; i < D; i++) Yt[a * D + i] = Y[i * dh + a];
    lapack_int ipiv[8];
    assert_int_equal(LAPACKE_dgesv(LAPACK_ROW_MAJOR, dh, D, G, dh, ipiv, Yt, D), 0);
    for (int a = 0; a < dh; a++)
        for (int i = 0; i < D; i++) WO[a * D + i] = (float)(c * Yt[a * D + i]);
}

static void copying_score_is_plus_minus_one_for_c_times_identity(void **state)
{
    (void)state;
    hs_error err;
    hs_config c = small_config(2, 16, 2, 4, 20);
    hs_model *m = random_model(c, 30);
    const double cs[] = {2.0, 0.3, -0.5, -4.0};
    for (size_t i = 0; i < 4; i++) {
        hs_head h = {(int)(i % 2), (int)(i / 2)};
        make_copying_head(m, h, cs[i]);
        double score, pos;
        assert_int_equal(hs_copying_score(m, h, HS_FOLD_NONE, &score, &pos, &err), HS_OK);
        printf("  c = %+.1f: copying score %+.6f, positive fraction %.2f\n", cs[i], score, pos);
        assert_true(fabs(score - (cs[i] > 0 ? 1.0 : -1.0)) < 1e-4);
        assert_true(pos == (cs[i] > 0 ? 1.0 : 0.0));
        /* the folded score differs (the fold changes W_V and W_U) */
    }
    /* the fold moves the score of a made-up head; and the (dh,dh) form equals
     * the (V,V) full-OV form's score */
    double s_raw, s_fold;
    hs_head h = {1, 1};
    assert_int_equal(hs_copying_score(m, h, HS_FOLD_NONE, &s_raw, NULL, &err), HS_OK);
    assert_int_equal(hs_copying_score(m, h, HS_FOLD_LN, &s_fold, NULL, &err), HS_OK);
    printf("  L1H1 (c = -4): raw %+.6f, folded %+.6f\n", s_raw, s_fold);
    static float full[20 * 20];
    double s_small, s_full;
    assert_int_equal(hs_copying_score(m, h, HS_FOLD_LN, &s_small, NULL, &err), HS_OK);
    assert_int_equal(hs_full_OV(m, h, HS_FOLD_LN, full, &err), HS_OK);
    assert_int_equal(hs_copying_score_matrix(full, 20, &s_full, NULL, &err), HS_OK);
    printf("  folded L1H1: (dh,dh) form %+.6f, (V,V) form %+.6f\n", s_small, s_full);
    assert_true(fabs(s_small - s_full) < 1e-3);
    hs_model_destroy(m);
    /* hand matrices: a rotation has eigenvalues +-i: score 0; diag(1, -3): -0.5 */
    float rot[4] = {0, -1, 1, 0}, dg[4] = {1, 0, 0, -3}, zero[4] = {0, 0, 0, 0};
    double s, p;
    assert_int_equal(hs_copying_score_matrix(rot, 2, &s, &p, &err), HS_OK);
    assert_true(fabs(s) < 1e-12 && p == 0.0);
    assert_int_equal(hs_copying_score_matrix(dg, 2, &s, &p, &err), HS_OK);
    assert_true(fabs(s + 0.5) < 1e-12 && fabs(p - 0.5) < 1e-12);
    assert_int_equal(hs_copying_score_matrix(zero, 2, &s, &p, &err), HS_OK);
    assert_true(s == 0.0);
}

static void copying_score_averages_near_zero_over_random_draws(void **state)
{
    (void)state;
    hs_error err;
    const int n_models = 100;
    double s1 = 0.0, s2 = 0.0, mn = 1.0, mx = -1.0;
    int n = 0;
    for (int i = 0; i < n_models; i++) {
        hs_config c = small_config(1, 16, 4, 4, 24);
        c.seed = (uint64_t)i + 1;
        hs_model *m = NULL;
        assert_int_equal(hs_model_create(&c, &m, &err), HS_OK);
        hs_model_init(m);
        for (int h = 0; h < 4; h++) {
            hs_head hd = {0, h};
            double s;
            assert_int_equal(hs_copying_score(m, hd, HS_FOLD_LN, &s, NULL, &err), HS_OK);
            assert_true(s >= -1.0 - 1e-9 && s <= 1.0 + 1e-9);
            s1 += s;
            s2 += s * s;
            mn = fmin(mn, s);
            mx = fmax(mx, s);
            n++;
        }
        hs_model_destroy(m);
    }
    double mean = s1 / n, sd = sqrt((s2 - s1 * s1 / n) / (n - 1));
    printf("  %d random heads (hs_model_init, seeds 1..%d): mean %+.4f, std %.4f, range [%+.3f, %+.3f], "
           "standard error %.4f\n", n, n_models, mean, sd, mn, mx, sd / sqrt(n));
    assert_true(fabs(mean) < 4.0 * sd / sqrt(n) + 0.02);
    assert_true(sd > 0.05); /* random heads do not all copy */
}

/* ------------------------------------------------------------------------ */
/* Attention statistics                                                      */

static void attention_stats_on_hand_made_rows(void **state)
{
    (void)state;
    float r1[4] = {0.5f, 0.25f, 0.25f, 0.0f};
    hs_attn_stat s = hs_attn_row_stats(r1, 4);
    assert_true(fabs(s.entropy - 1.5 * log(2.0)) < 1e-6);
    assert_true(fabs(s.eff_tokens - pow(2.0, 1.5)) < 1e-5);
    assert_true(s.max_weight == 0.5f && s.argmax == 0);
    float r2[3] = {0.0f, 0.0f, 1.0f};
    s = hs_attn_row_stats(r2, 3);
    assert_true(s.entropy == 0.0f && s.eff_tokens == 1.0f && s.argmax == 2 && s.max_weight == 1.0f);
    float r3[3] = {0.2f, 0.4f, 0.4f};
    s = hs_attn_row_stats(r3, 3);
    assert_int_equal(s.argmax, 1); /* first on ties */
    /* a [H,T,T] pattern: head 0 uniform causal (H_i = ln(i+1)), head 1 previous token */
    enum { H = 2, T = 5 };
    float pat[H * T * T];
    memset(pat, 0, sizeof pat);
    for (int i = 0; i < T; i++) {
        for (int j = 0; j <= i; j++) pat[i * T + j] = 1.0f / (float)(i + 1);
        pat[T * T + i * T + (i > 0 ? i - 1 : 0)] = 1.0f;
    }
    hs_attn_stat st[H * T];
    hs_attn_stats(pat, H, T, st);
    for (int i = 0; i < T; i++) {
        assert_true(fabs(st[i].entropy - log(i + 1.0)) < 1e-5);
        assert_true(fabs(st[i].eff_tokens - (i + 1.0)) < 1e-4);
        assert_true(st[T + i].entropy == 0.0f && st[T + i].argmax == (i > 0 ? i - 1 : 0));
    }
}

/* ------------------------------------------------------------------------ */
/* Detectors                                                                 */

static void detection_patterns_follow_head_detector_definitions(void **state)
{
    (void)state;
    const int tok[6] = {7, 3, 5, 7, 3, 5};
    float D[36];
    hs_detection_pattern(HS_DETECT_PREV_TOKEN, tok, 6, D);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) assert_true(D[i * 6 + j] == (j == i - 1 ? 1.0f : 0.0f));
    hs_detection_pattern(HS_DETECT_DUPLICATE, tok, 6, D);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) assert_true(D[i * 6 + j] == (j == i - 3 ? 1.0f : 0.0f));
    hs_detection_pattern(HS_DETECT_INDUCTION, tok, 6, D);
    /* tok[j-1] = tok[i], 1 <= j <= i: i=3 (7) -> j=1; i=4 (3) -> j=2; i=5 (5) -> j=3 */
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) assert_true(D[i * 6 + j] == (i >= 3 && j == i - 2 ? 1.0f : 0.0f));
}

static void detectors_score_one_on_a_perfect_previous_token_pattern(void **state)
{
    (void)state;
    enum { T = 6 };
    float A[T * T] = {0}, D[T * T];
    const int tok[T] = {1, 2, 3, 4, 5, 6};
    A[0] = 1.0f;
    for (int i = 1; i < T; i++) A[i * T + i - 1] = 1.0f;
    hs_detection_pattern(HS_DETECT_PREV_TOKEN, tok, T, D);
    assert_true(fabs(hs_detector_score(A, D, T, 1, 0) - 1.0) < 1e-12);
    /* without exclude_bos, row 0's weight on BOS counts in sum(A) */
    assert_true(fabs(hs_detector_score(A, D, T, 0, 0) - (T - 1.0) / T) < 1e-12);
    /* a uniform causal pattern scores lower */
    float U[T * T] = {0};
    for (int i = 0; i < T; i++)
        for (int j = 0; j <= i; j++) U[i * T + j] = 1.0f / (i + 1);
    double su = hs_detector_score(U, D, T, 0, 0);
    assert_true(su < 0.5);
    /* exclude_current: a pattern half on the diagonal, half on i-1 */
    float Hd[T * T] = {0};
    Hd[0] = 1.0f;
    for (int i = 1; i < T; i++) Hd[i * T + i] = Hd[i * T + i - 1] = 0.5f;
    assert_true(fabs(hs_detector_score(Hd, D, T, 1, 1) - 1.0) < 1e-12);
    /* exclude_bos only: rows 2..5 give 0.5 each on i-1; sum(A') = 0.5 (row 1) + 4 */
    assert_true(fabs(hs_detector_score(Hd, D, T, 1, 0) - 2.0 / 4.5) < 1e-6);
}

typedef struct {
    int layer, head;
} force_ctx;

/* Overwrites one head's pattern with a perfect previous-token pattern. */
static int force_prev_hook(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)ndim;
    const force_ctx *fc = ctx;
    int l;
    if (sscanf(name, "blocks.%d.", &l) != 1 || l != fc->layer) return 0;
    const int64_t B = shape[0], H = shape[1], T = shape[2];
    for (int64_t b = 0; b < B; b++) {
        float *A = data + (b * H + fc->head) * T * T;
        memset(A, 0, (size_t)(T * T) * sizeof(float));
        A[0] = 1.0f;
        for (int64_t i = 1; i < T; i++) A[i * T + i - 1] = 1.0f;
    }
    return 1;
}

static void detect_heads_finds_the_previous_token_head_in_a_cache(void **state)
{
    (void)state;
    hs_error err;
    enum { B = 2, T = 6, L = 2, H = 3 };
    hs_model *m = random_model(small_config(L, 12, H, 4, 10), 40);
    hs_acts *a = NULL;
    assert_int_equal(hs_acts_create(&m->cfg, B, T, 0, &a, &err), HS_OK);
    const int tok[B * T] = {1, 2, 3, 1, 2, 3, 4, 5, 6, 7, 4, 5};
    hs_hooks *hk = NULL;
    assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
    force_ctx fc = {1, 2};
    assert_int_equal(hs_hooks_add(hk, "blocks.*.attn.hook_pattern", force_prev_hook, &fc, &err), HS_OK);
    hs_cache c;
    hs_cache_init(&c);
    const char *f[] = {"blocks.*.attn.hook_pattern"};
    assert_int_equal(hs_run_with_cache(m, a, tok, B, T, f, 1, hk, &c, &err), HS_OK);
    float sc[L * H];
    assert_int_equal(hs_detect_heads(m, &c, tok, B, T, HS_DETECT_PREV_TOKEN, NULL, 1, 0, sc, &err), HS_OK);
    for (int i = 0; i < L * H; i++) {
        printf("  L%dH%d prev-token %.3f\n", i / H, i % H, sc[i]);
        if (i == 1 * H + 2) assert_true(fabs(sc[i] - 1.0) < 1e-6);
        else assert_true(sc[i] < 0.99);
    }
    /* the same through a caller-supplied target pattern */
    float D[T * T];
    hs_detection_pattern(HS_DETECT_PREV_TOKEN, tok, T, D);
    float sc2[L * H];
    assert_int_equal(hs_detect_heads(m, &c, NULL, B, T, HS_DETECT_TARGET, D, 1, 0, sc2, &err), HS_OK);
    for (int i = 0; i < L * H; i++) assert_true(fabs(sc2[i] - sc[i]) < 1e-6);
    assert_int_equal(hs_detect_heads(m, &c, NULL, B, T, HS_DETECT_TARGET, NULL, 1, 0, sc2, &err),
                     HS_ERR_INPUT);
    hs_cache_free(&c);
    hs_hooks_destroy(hk);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(qk_and_ov_match_the_stored_weights_and_the_fold),
        cmocka_unit_test(head_products_match_dense_products),
        cmocka_unit_test(subset_circuits_and_all_copying_scores_match),
        cmocka_unit_test(composition_scores_equal_dense_scores_and_skip_within_layer_pairs),
        cmocka_unit_test(pool_scores_equal_serial_scores),
        cmocka_unit_test(shared_copying_product_equals_the_by_head_product),
        cmocka_unit_test(dense_score_is_one_for_aligned_and_zero_for_orthogonal),
        cmocka_unit_test(random_baseline_for_d_model_64_is_near_one_over_sqrt_64),
        cmocka_unit_test(full_circuits_match_dense_products),
        cmocka_unit_test(copying_score_is_plus_minus_one_for_c_times_identity),
        cmocka_unit_test(copying_score_averages_near_zero_over_random_draws),
        cmocka_unit_test(attention_stats_on_hand_made_rows),
        cmocka_unit_test(detection_patterns_follow_head_detector_definitions),
        cmocka_unit_test(detectors_score_one_on_a_perfect_previous_token_pattern),
        cmocka_unit_test(detect_heads_finds_the_previous_token_head_in_a_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
