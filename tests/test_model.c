/*
 * tests/test_model.c -- the model core's behaviour (issue 2, "What must be
 * true"): a hand-computed attention example, pattern invariants, the forward
 * pass's observer, determinism, AdamW against a hand-computed update, a tiny
 * overfit problem, config and input validation. Gradients are checked by
 * finite differences in test_model_grad.c and against PyTorch in
 * test_parity.c.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/model.h"
#include "model/train.h"
#include "model/model_internal.h" /* the GELU kernels */

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static uint64_t rng_state;
static double rnd(void) /* uniform in (-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return ((double)(rng_state >> 11) / 9007199254740992.0) * 2.0 - 1.0;
}

static hs_model *new_model(const hs_config *cfg)
{
    hs_error err;
    hs_model *m = NULL;
    if (hs_model_create(cfg, &m, &err) != HS_OK) fail_msg("hs_model_create: %s", err.msg);
    return m;
}

/* A small model of every feature (LayerNorm, MLP, biases, positions, final
 * norm), L layers, with weights spread wide (0.5) so attention is far from
 * uniform, and norm weights near 1. */
static hs_config small_config(void)
{
    hs_config c = hs_config_default();
    c.n_layers = 2;
    c.d_model = 12;
    c.n_heads = 3;
    c.d_head = 4;
    c.d_mlp = 20;
    c.n_ctx = 6;
    c.d_vocab = 9;
    return c;
}

static void randomise(hs_model *m, uint64_t seed, double spread)
{
    rng_state = seed;
    for (int t = 0; t < m->n_tensors; t++) {
        const hs_tensor_info *ti = &m->tensors[t];
        size_t n = strlen(ti->name);
        int is_w = n > 2 && strcmp(ti->name + n - 2, ".w") == 0;
        for (size_t i = 0; i < ti->numel; i++)
            m->param_mem[ti->offset + i] = (float)((is_w ? 1.0 : 0.0) + spread * rnd());
    }
}

static hs_model *copy_model(const hs_model *src)
{
    hs_model *m = new_model(&src->cfg);
    memcpy(m->param_mem, src->param_mem, src->n_params * sizeof(float));
    return m;
}

static hs_acts *new_acts(const hs_model *m, int B, int T, int with_grad)
{
    hs_error err;
    hs_acts *a = NULL;
    if (hs_acts_create(&m->cfg, B, T, with_grad, &a, &err) != HS_OK)
        fail_msg("hs_acts_create: %s", err.msg);
    return a;
}

static void run(const hs_model *m, hs_acts *a, const int *tok, int B, int T, const hs_observer *obs)
{
    hs_error err;
    hs_status s = hs_forward(m, a, tok, B, T, obs, &err);
    if (s != HS_OK) fail_msg("hs_forward: %s", err.msg);
}

static size_t numel_of(const int64_t *shape, int ndim)
{
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    return n;
}

static double max_abs_diff(const float *a, const float *b, size_t n)
{
    double mx = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= mx)) mx = d; /* NaN propagates as NaN */
    }
    return mx;
}

/* An observer that copies the points it is asked for. */
#define MAX_CAPTURE 8
typedef struct {
    int n;
    const char *names[MAX_CAPTURE];
    float *data[MAX_CAPTURE]; /* malloc'd copies */
    size_t numel[MAX_CAPTURE];
    int64_t shape[MAX_CAPTURE][4];
    int ndim[MAX_CAPTURE];
} capture;

static int capture_fn(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    capture *c = ctx;
    for (int i = 0; i < c->n; i++) {
        if (strcmp(c->names[i], name) != 0) continue;
        size_t n = numel_of(shape, ndim);
        free(c->data[i]);
        c->data[i] = malloc(n * sizeof(float));
        assert_non_null(c->data[i]);
        memcpy(c->data[i], data, n * sizeof(float));
        c->numel[i] = n;
        c->ndim[i] = ndim;
        memcpy(c->shape[i], shape, (size_t)ndim * sizeof(int64_t));
    }
    return 0;
}

static const float *captured(const capture *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->names[i], name) == 0) {
            if (!c->data[i]) fail_msg("observer never saw %s", name);
            return c->data[i];
        }
    fail_msg("not capturing %s", name);
    return NULL;
}

static void capture_free(capture *c)
{
    for (int i = 0; i < c->n; i++) free(c->data[i]);
}

/* ------------------------------------------------------------------------ */
/* 1. A hand-computed attention example                                      */

/*
 * 1 layer, 1 head, d_model = d_head = 2, attention-only, no norms, no
 * positions, no biases, V = 3. Embeddings e0 = (1,0), e1 = (0,1), e2 = (1,1).
 * W_Q = I, W_K = c I with c = sqrt(2) ln 2, W_V = I, so q_i = e_i, k_j = c e_j,
 * v_j = e_j and score[i,j] = c (e_i . e_j) / sqrt(2) = ln 2 (e_i . e_j):
 * exp(score) = 2^(e_i . e_j).
 * Dots: e0.e0 = 1, e0.e1 = 0, e1.e1 = 1, e2.e0 = 1, e2.e1 = 1, e2.e2 = 2.
 *
 * Sequence 0 = tokens (0, 1, 2):
 *   row 0: [1]                                           -> [1, 0, 0]
 *   row 1: q = e1; 2^(e1.e0), 2^(e1.e1) = 1, 2          -> [1/3, 2/3, 0]
 *   row 2: q = e2; 2^1, 2^1, 2^2 = 2, 2, 4              -> [1/4, 1/4, 1/2]
 *   z0 = e0 = (1, 0); z1 = 1/3 e0 + 2/3 e1 = (1/3, 2/3);
 *   z2 = 1/4 e0 + 1/4 e1 + 1/2 e2 = (3/4, 3/4).
 * Sequence 1 = tokens (1, 0, 2):
 *   row 1: q = e0; keys e1, e0: 2^0, 2^1 = 1, 2          -> [1/3, 2/3, 0]
 *   row 2: q = e2; keys e1, e0, e2: 2, 2, 4              -> [1/4, 1/4, 1/2]
 *   z0 = e1 = (0, 1); z1 = 1/3 e1 + 2/3 e0 = (2/3, 1/3); z2 = (3/4, 3/4).
 * W_O = [[1, 2], [3, 4]] (rows = d_head), attn_out = z W_O:
 *   (1,0) -> (1, 2); (1/3,2/3) -> (1/3 + 2, 2/3 + 8/3) = (7/3, 10/3);
 *   (3/4,3/4) -> (3, 9/2); (0,1) -> (3, 4); (2/3,1/3) -> (2/3 + 1, 4/3 + 4/3) = (5/3, 8/3).
 * resid = e + attn_out; W_U = [[1, 0, 1], [0, 1, -1]] (D x V): logits = (r0, r1, r0 - r1):
 *   seq 0: (2, 2) -> (2, 2, 0); (7/3, 13/3) -> (7/3, 13/3, -2); (4, 11/2) -> (4, 11/2, -3/2)
 *   seq 1: (3, 5) -> (3, 5, -2); (8/3, 8/3) -> (8/3, 8/3, 0);   (4, 11/2) -> (4, 11/2, -3/2)
 */
static void hand_computed_attention_pattern_and_output(void **state)
{
    (void)state;
    hs_config c = hs_config_default();
    c.n_layers = 1;
    c.d_model = 2;
    c.n_heads = 1;
    c.d_head = 2;
    c.d_mlp = 0;
    c.n_ctx = 3;
    c.d_vocab = 3;
    c.norm = HS_NORM_NONE;
    c.ln1 = 0;
    c.ln_final = 0;
    c.pos = HS_POS_NONE;
    c.bias = 0;
    hs_model *m = new_model(&c);
    assert_int_equal(m->n_tensors, 6); /* W_E, W_Q, W_K, W_V, W_O, W_U */
    const float cc = (float)(sqrt(2.0) * log(2.0));
    const float W_E[] = {1, 0, 0, 1, 1, 1};
    const float W_Q[] = {1, 0, 0, 1}, W_K[] = {cc, 0, 0, cc}, W_V[] = {1, 0, 0, 1};
    const float W_O[] = {1, 2, 3, 4};
    const float W_U[] = {1, 0, 1, 0, 1, -1};
    memcpy(m->params.W_E, W_E, sizeof W_E);
    memcpy(m->params.blocks[0].W_Q, W_Q, sizeof W_Q);
    memcpy(m->params.blocks[0].W_K, W_K, sizeof W_K);
    memcpy(m->params.blocks[0].W_V, W_V, sizeof W_V);
    memcpy(m->params.blocks[0].W_O, W_O, sizeof W_O);
    memcpy(m->params.W_U, W_U, sizeof W_U);

    const int tok[6] = {0, 1, 2, 1, 0, 2};
    capture cap = {3, {"blocks.0.attn.hook_pattern", "blocks.0.attn.hook_z", "blocks.0.hook_attn_out"},
                   {0}, {0}, {{0}}, {0}};
    hs_observer obs = {capture_fn, NULL, &cap};
    hs_acts *a = new_acts(m, 2, 3, 0);
    run(m, a, tok, 2, 3, &obs);

    const float pat[2 * 9] = {1, 0, 0, 1.f / 3, 2.f / 3, 0, .25f, .25f, .5f,
                              1, 0, 0, 1.f / 3, 2.f / 3, 0, .25f, .25f, .5f};
    const float z[2 * 6] = {1, 0, 1.f / 3, 2.f / 3, .75f, .75f, 0, 1, 2.f / 3, 1.f / 3, .75f, .75f};
    const float out[2 * 6] = {1, 2, 7.f / 3, 10.f / 3, 3, 4.5f, 3, 4, 5.f / 3, 8.f / 3, 3, 4.5f};
    const float logits[2 * 9] = {2, 2, 0, 7.f / 3, 13.f / 3, -2, 4, 5.5f, -1.5f,
                                 3, 5, -2, 8.f / 3, 8.f / 3, 0, 4, 5.5f, -1.5f};
    const float *gp = captured(&cap, "blocks.0.attn.hook_pattern");
    const float *gz = captured(&cap, "blocks.0.attn.hook_z");
    const float *go = captured(&cap, "blocks.0.hook_attn_out");
    for (int i = 0; i < 18; i++)
        if (fabsf(gp[i] - pat[i]) > 1e-6f) fail_msg("pattern[%d] = %.9g, expected %.9g", i, gp[i], pat[i]);
    for (int i = 0; i < 12; i++) {
        if (fabsf(gz[i] - z[i]) > 1e-6f) fail_msg("z[%d] = %.9g, expected %.9g", i, gz[i], z[i]);
        if (fabsf(go[i] - out[i]) > 1e-6f) fail_msg("attn_out[%d] = %.9g, expected %.9g", i, go[i], out[i]);
    }
    for (int i = 0; i < 18; i++)
        if (fabsf(a->logits[i] - logits[i]) > 1e-6f)
            fail_msg("logits[%d] = %.9g, expected %.9g", i, a->logits[i], logits[i]);
    /* the masked entries are exact zeros, not tiny numbers */
    assert_true(gp[1] == 0.0f && gp[2] == 0.0f && gp[5] == 0.0f);
    capture_free(&cap);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

/* The scores and the mix are products over whole tiles, and at T >=
 * HS_SOFTMAX_LONG_T the softmax sums rows in 16 lanes: the pattern must still
 * be the causal softmax of q.k / scale
 * (exact zeros above the diagonal) and z the pattern times v, in double. */
static void long_context_attention_matches_double(void **state)
{
    (void)state;
    enum { B = 2, T = HS_SOFTMAX_LONG_T + 16, H = 2, DH = 8 };
    hs_config c = hs_config_default();
    c.n_layers = 1;
    c.d_model = 16;
    c.n_heads = H;
    c.d_head = DH;
    c.d_mlp = 0;
    c.n_ctx = T;
    c.d_vocab = 11;
    hs_model *m = new_model(&c);
    randomise(m, 31, 1.0);
    int tok[B * T];
    for (int i = 0; i < B * T; i++) tok[i] = (i * 7 + i / 5) % c.d_vocab;
    capture cap = {5, {"blocks.0.attn.hook_q", "blocks.0.attn.hook_k", "blocks.0.attn.hook_v",
                       "blocks.0.attn.hook_pattern", "blocks.0.attn.hook_z"}, {0}, {0}, {{0}}, {0}};
    hs_observer obs = {capture_fn, NULL, &cap};
    hs_acts *a = new_acts(m, B, T, 0);
    run(m, a, tok, B, T, &obs);
    const float *q = captured(&cap, "blocks.0.attn.hook_q"), *k = captured(&cap, "blocks.0.attn.hook_k");
    const float *v = captured(&cap, "blocks.0.attn.hook_v");
    const float *pat = captured(&cap, "blocks.0.attn.hook_pattern");
    const float *z = captured(&cap, "blocks.0.attn.hook_z");
    const double scale = hs_attn_scale(&c);
    double worst_p = 0.0, worst_z = 0.0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < T; i++) {
                double sc[T], mx = -INFINITY, sum = 0.0;
                for (int j = 0; j <= i; j++) {
                    double d = 0.0;
                    for (int e = 0; e < DH; e++)
                        d += (double)q[((b * T + i) * H + h) * DH + e] * k[((b * T + j) * H + h) * DH + e];
                    sc[j] = d / scale;
                    if (sc[j] > mx) mx = sc[j];
                }
                for (int j = 0; j <= i; j++) sum += (sc[j] = exp(sc[j] - mx));
                const float *prow = pat + (((size_t)b * H + h) * T + i) * T;
                for (int j = 0; j < T; j++) {
                    if (j > i) {
                        if (prow[j] != 0.0f) fail_msg("pattern[%d,%d,%d,%d] = %g above the diagonal", b, h, i, j, prow[j]);
                        continue;
                    }
                    double d = fabs(prow[j] - sc[j] / sum);
                    if (d > worst_p) worst_p = d;
                }
                for (int e = 0; e < DH; e++) {
                    double zz = 0.0;
                    for (int j = 0; j <= i; j++) zz += sc[j] / sum * v[((b * T + j) * H + h) * DH + e];
                    double d = fabs(z[((b * T + i) * H + h) * DH + e] - zz);
                    if (d > worst_z) worst_z = d;
                }
            }
    if (worst_p > 2e-6 || worst_z > 2e-5)
        fail_msg("T %d: pattern off by %.3g, z by %.3g", T, worst_p, worst_z);
    capture_free(&cap);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

/* hs_acts.logit_pos = p: the last block after its attention output, the
 * final norm and the unembedding run at position p alone; the logits there
 * must be those of the whole forward (within 1e-5 relative: products of
 * another row count may round differently), for every switch that changes that code,
 * and an observer wanting a point from there on gets the whole forward. */
static int wants_resid_post(const char *name, void *ctx)
{
    (void)ctx;
    return strcmp(name, "blocks.1.hook_resid_post") == 0;
}
static int read_only(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name, (void)shape, (void)ndim, (void)data, (void)ctx;
    return 0;
}

static void logits_at_one_position_match_the_whole_forward(void **state)
{
    (void)state;
    enum { B = 5, T = 9 };
    for (int variant = 0; variant < 4; variant++) {
        hs_config c = hs_config_default();
        c.n_ctx = T;
        c.d_vocab = 13;
        if (variant == 1) c.d_mlp = 0;
        if (variant == 2) c.norm = HS_NORM_NONE;
        if (variant == 3) c.ln_final = 0, c.norm = HS_NORM_RMSNORM, c.act = HS_ACT_RELU;
        hs_model *m = new_model(&c);
        randomise(m, 41 + (uint64_t)variant, 0.7);
        int tok[B * T];
        for (int i = 0; i < B * T; i++) tok[i] = (i * 5 + i / 3) % c.d_vocab;
        hs_acts *full = new_acts(m, B, T, 0), *one = new_acts(m, B, T, 0);
        assert_int_equal(full->logit_pos, -1);
        run(m, full, tok, B, T, NULL);
        const size_t V = (size_t)c.d_vocab;
        for (int p = 0; p < T; p += T - 1 - 2) {
            memset(one->logits, 0, (size_t)B * T * V * sizeof(float));
            one->logit_pos = p;
            run(m, one, tok, B, T, NULL);
            double worst = 0.0;
            int others_untouched = 1;
            for (int b = 0; b < B; b++)
                for (int t = 0; t < T; t++)
                    for (size_t v = 0; v < V; v++) {
                        const size_t k = ((size_t)b * T + t) * V + v;
                        if (t != p) {
                            others_untouched &= one->logits[k] == 0.0f;
                            continue;
                        }
                        const double a = fabs((double)full->logits[k]);
                        const double d = fabs((double)one->logits[k] - full->logits[k]) / (a > 1.0 ? a : 1.0);
                        if (d > worst) worst = d;
                    }
            if (worst > 1e-5 || !others_untouched)
                fail_msg("variant %d, p %d: logits off by %.3g relative (other positions written: %d)",
                         variant, p, worst, !others_untouched);
        }
        /* an observer of blocks.1.hook_resid_post: every position again */
        hs_observer obs = {read_only, wants_resid_post, NULL};
        one->logit_pos = 3;
        run(m, one, tok, B, T, &obs);
        assert_memory_equal(one->logits, full->logits, (size_t)B * T * V * sizeof(float));
        hs_acts_destroy(full);
        hs_acts_destroy(one);
        hs_model_destroy(m);
    }
}

/* ------------------------------------------------------------------------ */
/* 2. Pattern invariants                                                     */

static void check_patterns(hs_config c, const char *label)
{
    hs_model *m = new_model(&c);
    randomise(m, 99, 1.5); /* large weights: some rows nearly one-hot */
    enum { B = 2, T = 6 };
    int tok[B * T];
    for (int i = 0; i < B * T; i++) tok[i] = (i * 5 + 3) % c.d_vocab;
    capture cap = {2, {"blocks.0.attn.hook_pattern", "blocks.1.attn.hook_pattern"}, {0}, {0}, {{0}}, {0}};
    hs_observer obs = {capture_fn, NULL, &cap};
    hs_acts *a = new_acts(m, B, T, 0);
    run(m, a, tok, B, T, &obs);
    double worst = 0.0;
    for (int l = 0; l < 2; l++) {
        const float *p = captured(&cap, cap.names[l]);
        assert_int_equal(cap.numel[l], (size_t)B * c.n_heads * T * T);
        for (int r = 0; r < B * c.n_heads * T; r++) {
            int i = r % T;
            const float *row = p + (size_t)r * T;
            double sum = 0.0;
            for (int j = 0; j < T; j++) {
                if (j > i && row[j] != 0.0f)
                    fail_msg("%s layer %d row %d: entry %d above the diagonal is %g, not 0", label, l, r, j, row[j]);
                if (j <= i && !(row[j] >= 0.0f)) fail_msg("%s: negative or NaN weight %g", label, row[j]);
                if (j <= i && c.attn == HS_ATTN_UNIFORM && row[j] != 1.0f / (float)(i + 1))
                    fail_msg("%s layer %d row %d: uniform weight %.9g, expected 1/%d", label, l, r, row[j], i + 1);
                sum += row[j];
            }
            if (fabs(sum - 1.0) > worst) worst = fabs(sum - 1.0);
        }
        /* the pattern handed to the observer is the one the model keeps */
        assert_memory_equal(p, a->blocks[l].att, cap.numel[l] * sizeof(float));
    }
    if (worst > 1e-6) fail_msg("%s: a pattern row sums to 1 %+g", label, worst);
    if (c.attn == HS_ATTN_SOFTMAX) { /* and the softmax rows are far from uniform */
        const float *p = captured(&cap, cap.names[0]);
        double mx = 0.0;
        for (size_t k = 0; k < cap.numel[0]; k++)
            if (p[k] > mx && k % T != 0) mx = p[k];
        assert_true(mx > 0.9);
    }
    capture_free(&cap);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

static void pattern_rows_sum_to_one_with_exact_zeros_above_the_diagonal(void **state)
{
    (void)state;
    hs_config c = small_config();
    check_patterns(c, "softmax");
    c.attn = HS_ATTN_UNIFORM;
    check_patterns(c, "uniform");
    c.ln1 = 0;
    check_patterns(c, "uniform, no ln1");
}

/* ------------------------------------------------------------------------ */
/* 3. The observer                                                           */

typedef struct {
    int calls;
    int changed;          /* what to return */
    int add_zero;         /* add 0.0f to every element */
    const char *only;     /* if set: touch and report 'changed' only at names containing it */
    const char *except;   /* if set: report 'unchanged' at names containing it */
} touch_ctx;

static int touch_fn(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    touch_ctx *t = ctx;
    t->calls++;
    if (t->only && !strstr(name, t->only)) return 0;
    if (t->add_zero) {
        size_t n = numel_of(shape, ndim);
        for (size_t i = 0; i < n; i++) data[i] += 0.0f;
    }
    if (t->except && strstr(name, t->except)) return 0;
    return t->changed;
}

static void observer_noop_leaves_logits_bit_identical(hs_config c, const char *label)
{
    hs_model *m = new_model(&c);
    randomise(m, 5, 0.5);
    enum { B = 3, T = 6 };
    int tok[B * T];
    for (int i = 0; i < B * T; i++) tok[i] = (i * 7 + 1) % c.d_vocab;
    const size_t nl = (size_t)B * T * c.d_vocab;
    hs_acts *a = new_acts(m, B, T, 0);
    run(m, a, tok, B, T, NULL);
    float *base = malloc(nl * sizeof(float));
    assert_non_null(base);
    memcpy(base, a->logits, nl * sizeof(float));

    touch_ctx reader = {0, 0, 0, NULL, NULL};
    hs_observer obs = {touch_fn, NULL, &reader};
    run(m, a, tok, B, T, &obs);
    assert_true(reader.calls > 20);
    if (memcmp(base, a->logits, nl * sizeof(float)) != 0)
        fail_msg("%s: a read-only observer changed the logits (max diff %g)", label,
                 max_abs_diff(base, a->logits, nl));

    /* adds 0 everywhere and says 'changed' everywhere but hook_result */
    touch_ctx adder = {0, 1, 1, NULL, "hook_result"};
    obs.ctx = &adder;
    run(m, a, tok, B, T, &obs);
    assert_int_equal(adder.calls, reader.calls);
    if (memcmp(base, a->logits, nl * sizeof(float)) != 0)
        fail_msg("%s: an observer adding 0 (returning 'changed') changed the logits (max diff %g)",
                 label, max_abs_diff(base, a->logits, nl));

    /* A 'changed' hook_result rebuilds hook_attn_out as b_O + sum_h result_h
     * instead of the fused all-heads sgemm: the same sum in another order, so
     * equal to float rounding, not bit for bit (model.h, hook_result). */
    touch_ctx result_adder = {0, 1, 1, "hook_result", NULL};
    obs.ctx = &result_adder;
    run(m, a, tok, B, T, &obs);
    double d_result = max_abs_diff(base, a->logits, nl);
    if (!(d_result <= 1e-5)) fail_msg("%s: adding 0 to hook_result moved logits by %g", label, d_result);
    printf("  %-22s %d points, logits bit-identical; via a changed hook_result within %.2g\n", label,
           adder.calls, d_result);
    free(base);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

static void observer_that_reads_or_adds_zero_leaves_logits_bit_identical(void **state)
{
    (void)state;
    hs_config c = small_config();
    observer_noop_leaves_logits_bit_identical(c, "layernorm gpt2");
    c.norm = HS_NORM_RMSNORM;
    c.act = HS_ACT_RELU;
    c.bias = 0;
    c.embed_norm = 1;
    c.ln_final = 0;
    observer_noop_leaves_logits_bit_identical(c, "rmsnorm microgpt");
    c = small_config();
    c.attn = HS_ATTN_UNIFORM;
    c.d_mlp = 0;
    observer_noop_leaves_logits_bit_identical(c, "uniform attn-only");
}

/* A one-part forward of 256 rows or more on two workers splits its
 * products' rows over the pool (model/ hs_sgemm_pool, parts on 64-row
 * multiples: rows 0..127 and 128..299 here), libxsmm's products and
 * OpenBLAS' (W_in and W_out of 64 x 4200 > libxsmm's 256 K weights) alike:
 * every residual and the logits have one thread's bits, observed or not. */
static void pool_split_products_give_one_threads_bits(void **state)
{
    (void)state;
    enum { T = 300 };
    hs_config c = small_config();
    c.n_layers = 2;
    c.d_model = 64;
    c.n_heads = 2;
    c.d_head = 32;
    c.d_mlp = 4200;
    c.n_ctx = T;
    c.d_vocab = 11;
    hs_model *m = new_model(&c);
    randomise(m, 23, 0.3);
    int tok[T];
    for (int i = 0; i < T; i++) tok[i] = (i * 5 + 1) % c.d_vocab;
    const size_t nl = (size_t)T * c.d_vocab, nr = (size_t)T * c.d_model;
    float *ref = malloc((nl + c.n_layers * nr) * sizeof(float));
    assert_non_null(ref);
    for (int threads = 1; threads <= 2; threads++)
        for (int observed = 0; observed <= 1; observed++) {
            hs_acts *a = new_acts(m, 1, T, 0);
            hs_error err;
            assert_int_equal(hs_acts_set_threads(a, threads, &err), HS_OK);
            touch_ctx reader = {0, 0, 0, NULL, NULL};
            hs_observer obs = {touch_fn, NULL, &reader};
            run(m, a, tok, 1, T, observed ? &obs : NULL);
            if (threads == 1 && !observed) {
                memcpy(ref, a->logits, nl * sizeof(float));
                for (int l = 0; l < c.n_layers; l++)
                    memcpy(ref + nl + l * nr, a->blocks[l].resid_post, nr * sizeof(float));
            }
            if (memcmp(ref, a->logits, nl * sizeof(float)) != 0)
                fail_msg("%d threads, observed %d: logits differ (max %g)", threads, observed,
                         max_abs_diff(ref, a->logits, nl));
            for (int l = 0; l < c.n_layers; l++)
                if (memcmp(ref + nl + l * nr, a->blocks[l].resid_post, nr * sizeof(float)) != 0)
                    fail_msg("%d threads, observed %d: layer %d's resid_post differs", threads,
                             observed, l);
            hs_acts_destroy(a);
        }
    free(ref);
    hs_model_destroy(m);
}

/* Without observer, T >= 64, the attention runs in causal row blocks on the
 * pool (model/attention.c attn_causal_bg): the logits and every layer's
 * pattern (whole rows, zeros above the diagonal: what the backward reads)
 * have the bits of the observed forward's whole T x T tiles, on one thread
 * and on two, at T a multiple of 64, T % 64 past 16, and T % 64 in 1..16
 * (the whole tiles kept). A forward at one position (logit_pos = T - 1:
 * the blocks' weights not kept, hs_acts.att_elsewhere) gives every layer's
 * z the same bits, and the patterns come back as they were for a backward
 * (hs_attn_patterns_restore). */
static void causal_blocks_give_the_bits_of_whole_tiles(void **state)
{
    (void)state;
    hs_config c = small_config();
    c.d_model = 32;
    c.n_heads = 2;
    c.d_head = 16;
    c.d_mlp = 48;
    c.n_ctx = 200;
    c.d_vocab = 11;
    hs_model *m = new_model(&c);
    randomise(m, 17, 0.5);
    static const int Ts[] = {64, 100, 130, 200};
    for (int threads = 1; threads <= 2; threads++)
        for (size_t k = 0; k < sizeof Ts / sizeof Ts[0]; k++) {
            const int T = Ts[k];
            int tok[200];
            for (int i = 0; i < T; i++) tok[i] = (i * 7 + 3) % c.d_vocab;
            hs_acts *a = new_acts(m, 1, T, 0);
            hs_error err;
            assert_int_equal(hs_acts_set_threads(a, threads, &err), HS_OK);
            const size_t nl = (size_t)T * c.d_vocab, na = (size_t)c.n_heads * T * T;
            float *lg = malloc(nl * sizeof(float)), *att = malloc(c.n_layers * na * sizeof(float));
            assert_non_null(lg);
            assert_non_null(att);
            run(m, a, tok, 1, T, NULL);
            memcpy(lg, a->logits, nl * sizeof(float));
            for (int l = 0; l < c.n_layers; l++)
                memcpy(att + l * na, a->blocks[l].att, na * sizeof(float));
            touch_ctx reader = {0, 0, 0, NULL, NULL};
            hs_observer obs = {touch_fn, NULL, &reader};
            run(m, a, tok, 1, T, &obs);
            if (memcmp(lg, a->logits, nl * sizeof(float)) != 0)
                fail_msg("T %d, %d threads: logits differ from the observed forward's (max %g)", T,
                         threads, max_abs_diff(lg, a->logits, nl));
            for (int l = 0; l < c.n_layers; l++)
                if (memcmp(att + l * na, a->blocks[l].att, na * sizeof(float)) != 0)
                    fail_msg("T %d, %d threads: layer %d's pattern differs (max %g)", T, threads, l,
                             max_abs_diff(att + l * na, a->blocks[l].att, na));
            const size_t nz = (size_t)T * c.n_heads * c.d_head;
            float *z = malloc(c.n_layers * nz * sizeof(float));
            assert_non_null(z);
            for (int l = 0; l < c.n_layers; l++) memcpy(z + l * nz, a->blocks[l].z, nz * sizeof(float));
            a->logit_pos = T - 1;
            run(m, a, tok, 1, T, NULL);
            a->logit_pos = -1;
            for (int l = 0; l < c.n_layers; l++) {
                if (memcmp(z + l * nz, a->blocks[l].z, nz * sizeof(float)) != 0)
                    fail_msg("T %d, %d threads, one position: layer %d's z differs (max %g)", T,
                             threads, l, max_abs_diff(z + l * nz, a->blocks[l].z, nz));
                assert_int_equal(a->att_elsewhere[l], T % 64 == 0 || T % 64 > 16);
            }
            hs_attn_patterns_restore(m, a);
            for (int l = 0; l < c.n_layers; l++)
                if (memcmp(att + l * na, a->blocks[l].att, na * sizeof(float)) != 0)
                    fail_msg("T %d, %d threads: layer %d's restored pattern differs", T, threads, l);
            free(z);
            free(lg);
            free(att);
            hs_acts_destroy(a);
        }
    hs_model_destroy(m);
}

typedef struct {
    const char *point;   /* hook name to edit */
    int head, H, width;  /* zero head `head` of H heads, `width` floats each (dh or D) */
} zero_head_ctx;

static int zero_head_fn(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    zero_head_ctx *z = ctx;
    if (strcmp(name, z->point) != 0) return 0;
    assert_int_equal(ndim, 4);
    assert_int_equal(shape[2], z->H);
    assert_int_equal(shape[3], z->width);
    size_t rows = (size_t)shape[0] * (size_t)shape[1];
    for (size_t r = 0; r < rows; r++)
        memset(data + (r * z->H + z->head) * z->width, 0, (size_t)z->width * sizeof(float));
    return 1;
}

static void zeroing_a_heads_z_changes_logits_exactly_as_removing_the_head(void **state)
{
    (void)state;
    hs_config c = small_config();
    hs_model *m = new_model(&c);
    randomise(m, 11, 0.5);
    enum { B = 2, T = 6 };
    int tok[B * T] = {1, 4, 2, 8, 0, 3, 5, 5, 7, 1, 6, 2};
    const size_t nl = (size_t)B * T * c.d_vocab;
    const int D = c.d_model, H = c.n_heads, dh = c.d_head;
    hs_acts *a = new_acts(m, B, T, 0);
    float *base = malloc(nl * sizeof(float)), *ablated = malloc(nl * sizeof(float));
    assert_non_null(base);
    assert_non_null(ablated);
    run(m, a, tok, B, T, NULL);
    memcpy(base, a->logits, nl * sizeof(float));

    for (int l = 0; l < c.n_layers; l++)
        for (int h = 0; h < H; h += 2) {
            /* reference: a copy whose W_O rows for head h are zero */
            hs_model *m2 = copy_model(m);
            memset(m2->params.blocks[l].W_O + (size_t)h * dh * D, 0, (size_t)dh * D * sizeof(float));
            run(m2, a, tok, B, T, NULL);
            memcpy(ablated, a->logits, nl * sizeof(float));
            hs_model_destroy(m2);
            double moved = max_abs_diff(base, ablated, nl);
            assert_true(moved > 1e-3); /* removing the head matters */

            char z_name[64], r_name[64];
            snprintf(z_name, sizeof z_name, "blocks.%d.attn.hook_z", l);
            snprintf(r_name, sizeof r_name, "blocks.%d.attn.hook_result", l);
            zero_head_ctx zc = {z_name, h, H, dh};
            hs_observer obs = {zero_head_fn, NULL, &zc};
            run(m, a, tok, B, T, &obs);
            double dz = max_abs_diff(a->logits, ablated, nl);
            zero_head_ctx rc = {r_name, h, H, D};
            obs.ctx = &rc;
            run(m, a, tok, B, T, &obs);
            double dr = max_abs_diff(a->logits, ablated, nl);
            printf("  L%d H%d: removal moves logits %.3g; zeroed hook_z differs %.2g, hook_result %.2g\n",
                   l, h, moved, dz, dr);
            if (!(dz <= 1e-6)) fail_msg("L%d H%d: zeroing hook_z differs from removing the head by %g", l, h, dz);
            if (!(dr <= 1e-6)) fail_msg("L%d H%d: zeroing hook_result differs from removing the head by %g", l, h, dr);
        }
    /* and without the observer the model is unchanged */
    run(m, a, tok, B, T, NULL);
    assert_memory_equal(base, a->logits, nl * sizeof(float));
    free(base);
    free(ablated);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

typedef struct {
    const char *abort_at;
    int seen_after;      /* calls after the abort point (must stay 0) */
    int aborted;
} abort_ctx;

static int abort_fn(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)shape;
    (void)ndim;
    (void)data;
    abort_ctx *ac = ctx;
    if (ac->aborted) ac->seen_after++;
    if (strcmp(name, ac->abort_at) == 0) {
        ac->aborted = 1;
        return -1;
    }
    return 0;
}

static void observer_returning_negative_aborts_with_callback_error(void **state)
{
    (void)state;
    hs_config c = small_config();
    hs_model *m = new_model(&c);
    hs_model_init(m);
    int tok[6] = {0, 1, 2, 3, 4, 5};
    hs_acts *a = new_acts(m, 1, 6, 0);
    const char *points[] = {"hook_embed", "blocks.0.attn.hook_pattern", "blocks.1.ln2.hook_scale",
                            "blocks.1.attn.hook_result", "logits"};
    for (size_t i = 0; i < sizeof points / sizeof points[0]; i++) {
        abort_ctx ac = {points[i], 0, 0};
        hs_observer obs = {abort_fn, NULL, &ac};
        hs_error err;
        memset(&err, 0, sizeof err);
        hs_status s = hs_forward(m, a, tok, 1, 6, &obs, &err);
        assert_int_equal(s, HS_ERR_CALLBACK);
        assert_int_equal(ac.aborted, 1);
        assert_int_equal(ac.seen_after, 0);
        if (!strstr(err.msg, points[i])) fail_msg("abort message '%s' does not name %s", err.msg, points[i]);
    }
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

/* Records every point's name and shape, in call order. */
#define MAX_POINTS 128
typedef struct {
    int n;
    char names[MAX_POINTS][64];
    int ndim[MAX_POINTS];
    int64_t shape[MAX_POINTS][4];
    const char *only; /* wants filter: only this name (NULL = all) */
    int wants_calls;
} log_ctx;

static int log_fn(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)data;
    log_ctx *lc = ctx;
    assert_true(lc->n < MAX_POINTS);
    snprintf(lc->names[lc->n], sizeof lc->names[0], "%s", name);
    lc->ndim[lc->n] = ndim;
    memcpy(lc->shape[lc->n], shape, (size_t)ndim * sizeof(int64_t));
    lc->n++;
    return 0;
}

static int log_wants(const char *name, void *ctx)
{
    log_ctx *lc = ctx;
    lc->wants_calls++;
    return lc->only == NULL || strcmp(name, lc->only) == 0;
}

static int find_point(const log_ctx *lc, const char *name)
{
    for (int i = 0; i < lc->n; i++)
        if (strcmp(lc->names[i], name) == 0) return i;
    fail_msg("observer never called at %s", name);
    return -1;
}

static void expect_shape(const log_ctx *lc, const char *name, int ndim, int64_t d0, int64_t d1,
                         int64_t d2, int64_t d3)
{
    int i = find_point(lc, name);
    const int64_t want[4] = {d0, d1, d2, d3};
    if (lc->ndim[i] != ndim) fail_msg("%s: ndim %d, expected %d", name, lc->ndim[i], ndim);
    for (int k = 0; k < ndim; k++)
        if (lc->shape[i][k] != want[k])
            fail_msg("%s: dim %d is %lld, expected %lld", name, k, (long long)lc->shape[i][k],
                     (long long)want[k]);
}

static void observer_sees_every_documented_point_with_its_shape(void **state)
{
    (void)state;
    hs_config c = small_config();
    hs_model *m = new_model(&c);
    hs_model_init(m);
    enum { B = 2, T = 5 };
    const int D = c.d_model, H = c.n_heads, dh = c.d_head, M = c.d_mlp, V = c.d_vocab;
    int tok[B * T] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 0};
    hs_acts *a = new_acts(m, B, T, 0);
    log_ctx *lc = calloc(1, sizeof *lc);
    assert_non_null(lc);
    hs_observer obs = {log_fn, NULL, lc};
    run(m, a, tok, B, T, &obs);

    /* every point of model.h for this config, in forward order */
    static const char *const per_layer[] = {
        "hook_resid_pre", "hook_attn_in", "hook_q_input", "hook_k_input", "hook_v_input",
        "ln1.hook_scale", "ln1.hook_normalized", "attn.hook_q", "attn.hook_k",
        "attn.hook_v", "attn.hook_attn_scores", "attn.hook_pattern", "attn.hook_z",
        "attn.hook_result", "hook_attn_out", "hook_resid_mid", "hook_mlp_in", "ln2.hook_scale",
        "ln2.hook_normalized", "mlp.hook_pre", "mlp.hook_post", "hook_mlp_out", "hook_resid_post"};
    const int n_per = (int)(sizeof per_layer / sizeof per_layer[0]);
    char expect[MAX_POINTS][64];
    int ne = 0;
    snprintf(expect[ne++], 64, "hook_tokens");
    snprintf(expect[ne++], 64, "hook_embed");
    snprintf(expect[ne++], 64, "hook_pos_embed");
    for (int l = 0; l < c.n_layers; l++)
        for (int k = 0; k < n_per; k++) snprintf(expect[ne++], 64, "blocks.%d.%s", l, per_layer[k]);
    snprintf(expect[ne++], 64, "ln_final.hook_scale");
    snprintf(expect[ne++], 64, "ln_final.hook_normalized");
    snprintf(expect[ne++], 64, "unembed.hook_in");
    snprintf(expect[ne++], 64, "logits");
    for (int i = 0; i < ne && i < lc->n; i++)
        if (strcmp(lc->names[i], expect[i]) != 0)
            fail_msg("point %d is %s, expected %s", i, lc->names[i], expect[i]);
    assert_int_equal(lc->n, ne);
    /* hs_hook_points lists the same names in the same order */
    hs_hook_point pts[MAX_POINTS];
    assert_int_equal(hs_hook_points(&c, pts, MAX_POINTS), ne);
    for (int i = 0; i < ne; i++) assert_string_equal(pts[i].name, expect[i]);
    assert_string_equal(pts[ne - 1].alias, "unembed.hook_out");

    expect_shape(lc, "hook_tokens", 2, B, T, 0, 0);
    expect_shape(lc, "blocks.1.hook_q_input", 4, B, T, H, D);
    expect_shape(lc, "hook_embed", 3, B, T, D, 0);
    expect_shape(lc, "blocks.0.ln1.hook_scale", 3, B, T, 1, 0);
    expect_shape(lc, "blocks.0.attn.hook_q", 4, B, T, H, dh);
    expect_shape(lc, "blocks.1.attn.hook_attn_scores", 4, B, H, T, T);
    expect_shape(lc, "blocks.1.attn.hook_pattern", 4, B, H, T, T);
    expect_shape(lc, "blocks.0.attn.hook_z", 4, B, T, H, dh);
    expect_shape(lc, "blocks.0.attn.hook_result", 4, B, T, H, D);
    expect_shape(lc, "blocks.1.hook_attn_out", 3, B, T, D, 0);
    expect_shape(lc, "blocks.0.mlp.hook_pre", 3, B, T, M, 0);
    expect_shape(lc, "blocks.1.hook_resid_post", 3, B, T, D, 0);
    expect_shape(lc, "logits", 3, B, T, V, 0);

    /* values: sum_h hook_result + b_O = hook_attn_out; resid_mid = resid_pre + attn_out;
     * masked scores are -inf; hook_scale = sqrt(var + eps) of hook_resid_pre */
    capture cap = {6, {"blocks.1.attn.hook_result", "blocks.1.hook_attn_out", "blocks.1.hook_resid_pre",
                       "blocks.1.hook_resid_mid", "blocks.1.attn.hook_attn_scores", "blocks.1.ln1.hook_scale"},
                   {0}, {0}, {{0}}, {0}};
    randomise(m, 3, 0.5);
    obs.fn = capture_fn;
    obs.ctx = &cap;
    run(m, a, tok, B, T, &obs);
    const float *res = captured(&cap, cap.names[0]), *ao = captured(&cap, cap.names[1]);
    const float *rpre = captured(&cap, cap.names[2]), *rmid = captured(&cap, cap.names[3]);
    const float *sc = captured(&cap, cap.names[4]), *scale = captured(&cap, cap.names[5]);
    const float *b_O = m->params.blocks[1].b_O;
    double worst = 0.0;
    for (int i = 0; i < B * T; i++) {
        double mu = 0.0, var = 0.0;
        for (int d = 0; d < D; d++) mu += rpre[i * D + d];
        mu /= D;
        for (int d = 0; d < D; d++) var += (rpre[i * D + d] - mu) * (rpre[i * D + d] - mu);
        var /= D;
        if (fabs(scale[i] - sqrt(var + c.eps)) > 1e-5 * sqrt(var + c.eps))
            fail_msg("ln1.hook_scale[%d] = %g, expected %g", i, scale[i], sqrt(var + c.eps));
        for (int d = 0; d < D; d++) {
            double s = b_O[d];
            for (int h = 0; h < H; h++) s += res[((size_t)i * H + h) * D + d];
            if (fabs(s - ao[i * D + d]) > worst) worst = fabs(s - ao[i * D + d]);
            assert_true(rmid[i * D + d] == rpre[i * D + d] + ao[i * D + d]);
        }
    }
    if (worst > 1e-5) fail_msg("sum of hook_result + b_O differs from hook_attn_out by %g", worst);
    for (int r = 0; r < B * H * T; r++)
        for (int j = 0; j < T; j++) {
            float s = sc[r * T + j];
            if (j > r % T) assert_true(isinf(s) && s < 0);
            else assert_true(isfinite(s));
        }
    capture_free(&cap);

    /* wants filter: only the asked-for point is delivered, once */
    memset(lc, 0, sizeof *lc);
    lc->only = "blocks.1.attn.hook_pattern";
    obs.fn = log_fn;
    obs.wants = log_wants;
    obs.ctx = lc;
    run(m, a, tok, B, T, &obs);
    assert_int_equal(lc->n, 1);
    assert_string_equal(lc->names[0], "blocks.1.attn.hook_pattern");
    assert_true(lc->wants_calls >= ne); /* every point was offered */
    memset(lc, 0, sizeof *lc);
    lc->only = "no.such.point";
    run(m, a, tok, B, T, &obs);
    assert_int_equal(lc->n, 0);
    free(lc);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

/* ------------------------------------------------------------------------ */
/* 4. Determinism                                                            */

static hs_model *train_steps(uint64_t seed, int steps)
{
    hs_config c = small_config();
    c.seed = seed;
    hs_model *m = new_model(&c);
    hs_model_init(m);
    hs_error err;
    assert_int_equal(hs_model_alloc_train(m, &err), HS_OK);
    enum { B = 4, T = 6 };
    int tok[B * T], tgt[B * T];
    for (int i = 0; i < B * T; i++) tok[i] = (i * 5 + 2) % c.d_vocab;
    for (int i = 0; i < B * T; i++) tgt[i] = (i % T == T - 1) ? -1 : tok[i + 1];
    hs_acts *a = new_acts(m, B, T, 1);
    hs_adamw opt = hs_adamw_default();
    for (int s = 0; s < steps; s++) {
        run(m, a, tok, B, T, NULL);
        hs_cross_entropy(m, a, tgt, NULL);
        hs_zero_grad(m);
        hs_backward(m, a, tok, tgt, NULL);
        assert_int_equal(hs_adamw_step(m, &opt, NULL, &err), HS_OK);
    }
    hs_acts_destroy(a);
    return m;
}

static void same_seed_gives_bit_identical_parameters_after_training(void **state)
{
    (void)state;
    hs_model *a = train_steps(7, 5), *b = train_steps(7, 5), *c = train_steps(8, 5);
    hs_model *a0 = train_steps(7, 0), *c0 = train_steps(8, 0);
    assert_int_equal(a->n_params, b->n_params);
    assert_memory_equal(a->param_mem, b->param_mem, a->n_params * sizeof(float));
    assert_memory_equal(a->m_mem, b->m_mem, a->n_params * sizeof(float));
    assert_memory_equal(a->v_mem, b->v_mem, a->n_params * sizeof(float));
    assert_int_equal(a->adam_t, 5);
    /* training moved the parameters */
    assert_true(memcmp(a->param_mem, a0->param_mem, a->n_params * sizeof(float)) != 0);
    /* a different seed differs, at init and after training */
    assert_true(memcmp(a0->param_mem, c0->param_mem, a->n_params * sizeof(float)) != 0);
    size_t n_same = 0;
    for (size_t i = 0; i < a->n_params; i++) n_same += a->param_mem[i] == c->param_mem[i];
    /* only norm weights/biases can coincide; matrices must not */
    const hs_tensor_info *wq = hs_model_find_tensor(a, "blocks.0.attn.W_Q");
    assert_non_null(wq);
    assert_true(memcmp(a->param_mem + wq->offset, c->param_mem + wq->offset, wq->numel * sizeof(float)) != 0);
    assert_true(n_same < a->n_params / 4);
    /* init follows model.h: norm weights 1, biases 0, W_Q ~ U(+-1/sqrt(D))
     * (std 1/sqrt(3 D)), W_E ~ N(0, 1) */
    const hs_tensor_info *lw = hs_model_find_tensor(a0, "blocks.0.ln1.w");
    const hs_tensor_info *bq = hs_model_find_tensor(a0, "blocks.0.attn.b_Q");
    for (size_t i = 0; i < lw->numel; i++) assert_true(a0->param_mem[lw->offset + i] == 1.0f);
    for (size_t i = 0; i < bq->numel; i++) assert_true(a0->param_mem[bq->offset + i] == 0.0f);
    double ss = 0.0;
    for (size_t i = 0; i < wq->numel; i++) ss += (double)a0->param_mem[wq->offset + i] * a0->param_mem[wq->offset + i];
    double sd = sqrt(ss / (double)wq->numel);
    double want = 1.0 / sqrt(3.0 * a0->cfg.d_model);
    assert_true(sd > 0.85 * want && sd < 1.15 * want);
    double bound = 1.0 / sqrt((double)a0->cfg.d_model);
    for (size_t i = 0; i < wq->numel; i++) assert_true(fabs(a0->param_mem[wq->offset + i]) <= bound);
    const hs_tensor_info *we = hs_model_find_tensor(a0, "embed.W_E");
    ss = 0.0;
    for (size_t i = 0; i < we->numel; i++) ss += (double)a0->param_mem[we->offset + i] * a0->param_mem[we->offset + i];
    sd = sqrt(ss / (double)we->numel);
    assert_true(sd > 0.8 && sd < 1.2);
    hs_model_destroy(a);
    hs_model_destroy(b);
    hs_model_destroy(c);
    hs_model_destroy(a0);
    hs_model_destroy(c0);
}

/* ------------------------------------------------------------------------ */
/* 5. AdamW against a hand-computed update                                   */

static void adamw_step_matches_hand_computed_update(void **state)
{
    (void)state;
    hs_config c = hs_config_default();
    c.n_layers = 1;
    c.d_model = 2;
    c.n_heads = 1;
    c.d_head = 1;
    c.d_mlp = 0;
    c.n_ctx = 2;
    c.d_vocab = 2;
    c.norm = HS_NORM_NONE;
    c.pos = HS_POS_NONE;
    hs_model *m = new_model(&c);
    hs_error err;
    assert_int_equal(hs_model_alloc_train(m, &err), HS_OK);
    const size_t n = m->n_params;
    assert_int_equal(n, 23); /* W_E 4, W_Q/K/V 2 each, W_O 2, b_Q/K/V 1 each, b_O 2, W_U 4, b_U 2 */

    /* decay: matrices only, named W_* (independent of the table's flag, which must agree) */
    int *decay = calloc(n, sizeof(int));
    assert_non_null(decay);
    int n_decay_tensors = 0;
    for (int t = 0; t < m->n_tensors; t++) {
        const hs_tensor_info *ti = &m->tensors[t];
        char name[sizeof ti->name];
        memcpy(name, ti->name, sizeof name);
        const char *dot = strrchr(name, '.');
        int is_matrix = dot != NULL && strncmp(dot, ".W_", 3) == 0;
        if (ti->decay != is_matrix) fail_msg("%s: decay flag %d", ti->name, ti->decay);
        n_decay_tensors += is_matrix;
        for (size_t i = 0; i < ti->numel; i++) decay[ti->offset + i] = is_matrix;
    }
    assert_int_equal(n_decay_tensors, 6);

    hs_adamw opt = {0.01f, 0.9f, 0.999f, 1e-8f, 0.1f, 1.0f};
    double p[23], mm[23], vv[23];
    for (size_t i = 0; i < n; i++) {
        m->param_mem[i] = (float)(0.5 - 0.07 * (double)i);
        p[i] = m->param_mem[i];
        mm[i] = vv[i] = 0.0;
    }
    for (int step = 1; step <= 2; step++) {
        /* step 1: norm ~ 2.4 > clip, so clipped; step 2: norm ~ 0.2, not clipped.
         * One gradient is exactly 0 (only weight decay, if any, moves it). */
        double norm2 = 0.0;
        for (size_t i = 0; i < n; i++) {
            float g = step == 1 ? (float)(0.7 * sin((double)i + 1.0)) : (float)(0.06 * cos(2.0 * i));
            if (i == 3) g = 0.0f;
            m->grad_mem[i] = g;
            norm2 += (double)g * g;
        }
        const double norm = sqrt(norm2);
        const double scale = norm > opt.clip ? opt.clip / norm : 1.0;
        assert_true(step == 1 ? scale < 0.6 : scale == 1.0);
        const double b1 = opt.beta1, b2 = opt.beta2;
        const double bc1 = 1.0 - pow(b1, step), bc2 = 1.0 - pow(b2, step);
        /* in double, the textbook form (mhat, vhat); and in float, PyTorch's
         * operations in PyTorch's order, which every vector width of the
         * library must reproduce bit for bit (elements 0-15 run 16 lanes wide
         * on AVX-512, 0-7 and 8-15 8 wide on AVX2, 16-22 as one zero-padded vector) */
        float pf[23];
        const float gs = (float)scale, st = (float)(opt.lr / bc1), b2s = (float)sqrt(bc2);
        for (size_t i = 0; i < n; i++) {
            double g = (double)m->grad_mem[i] * scale;
            mm[i] = b1 * mm[i] + (1.0 - b1) * g;
            vv[i] = b2 * vv[i] + (1.0 - b2) * g * g;
            double mhat = mm[i] / bc1, vhat = vv[i] / bc2;
            double wd = decay[i] ? (double)opt.weight_decay : 0.0;
            p[i] -= (double)opt.lr * (mhat / (sqrt(vhat) + (double)opt.eps) + wd * p[i]);
            const float gf = m->grad_mem[i] * gs;
            const float dec = decay[i] ? (float)(1.0 - (double)opt.lr * opt.weight_decay) : 1.0f;
            const float mf = opt.beta1 * m->m_mem[i] + (1.0f - opt.beta1) * gf;
            const float vf = opt.beta2 * m->v_mem[i] + (1.0f - opt.beta2) * gf * gf;
            pf[i] = m->param_mem[i] * dec - st * (mf / (sqrtf(vf) / b2s + opt.eps));
        }
        double got_norm = 0.0;
        assert_int_equal(hs_adamw_step(m, &opt, &got_norm, &err), HS_OK);
        assert_int_equal(m->adam_t, step);
        if (fabs(got_norm - norm) > 1e-9 * norm) fail_msg("step %d: grad norm %.12g, expected %.12g", step, got_norm, norm);
        for (size_t i = 0; i < n; i++) {
            if (m->param_mem[i] != pf[i])
                fail_msg("step %d: p[%zu] = %.9g, PyTorch's float form gives %.9g", step, i,
                         m->param_mem[i], pf[i]);
            if (fabs(m->param_mem[i] - p[i]) > 1e-6)
                fail_msg("step %d: p[%zu] = %.9g, expected %.9g (decay %d)", step, i, m->param_mem[i], p[i], decay[i]);
            if (fabs(m->m_mem[i] - mm[i]) > 1e-6 * fabs(mm[i]) + 1e-12)
                fail_msg("step %d: m[%zu] = %.9g, expected %.9g", step, i, m->m_mem[i], mm[i]);
            if (fabs(m->v_mem[i] - vv[i]) > 1e-5 * fabs(vv[i]) + 1e-15)
                fail_msg("step %d: v[%zu] = %.9g, expected %.9g", step, i, m->v_mem[i], vv[i]);
        }
    }
    /* the zero-gradient element moved by weight decay alone (it is in W_E, a matrix) */
    assert_true(decay[3]);
    assert_true(m->param_mem[3] != (float)(0.5 - 0.07 * 3));

    /* a non-finite gradient: HS_ERR_NUMERIC, nothing touched */
    float *before = malloc(n * sizeof(float));
    assert_non_null(before);
    memcpy(before, m->param_mem, n * sizeof(float));
    m->grad_mem[5] = NAN;
    assert_int_equal(hs_adamw_step(m, &opt, NULL, &err), HS_ERR_NUMERIC);
    assert_non_null(strstr(err.msg, "NaN"));
    m->grad_mem[5] = INFINITY;
    assert_int_equal(hs_adamw_step(m, &opt, NULL, &err), HS_ERR_NUMERIC);
    assert_memory_equal(before, m->param_mem, n * sizeof(float));
    assert_int_equal(m->adam_t, 2);
    free(before);
    free(decay);
    hs_model_destroy(m);
}

/* ------------------------------------------------------------------------ */
/* 6. Overfit                                                                */

static void tiny_model_memorises_four_sequences(void **state)
{
    (void)state;
    hs_config c = hs_config_default();
    c.n_layers = 2;
    c.d_model = 32;
    c.n_heads = 2;
    c.d_head = 16;
    c.d_mlp = 64;
    c.n_ctx = 8;
    c.d_vocab = 12;
    c.seed = 3;
    hs_model *m = new_model(&c);
    hs_model_init(m);
    hs_error err;
    assert_int_equal(hs_model_alloc_train(m, &err), HS_OK);
    enum { B = 4, T = 8 };
    /* distinct first tokens, so every continuation is determined by its prefix */
    int tok[B * T], tgt[B * T];
    rng_state = 77;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            tok[b * T + t] = t == 0 ? b : (int)((rnd() + 1.0) * 0.5 * c.d_vocab) % c.d_vocab;
    for (int i = 0; i < B * T; i++) tgt[i] = (i % T == T - 1) ? -1 : tok[i + 1];
    hs_acts *a = new_acts(m, B, T, 1);
    hs_adamw opt = hs_adamw_default();
    opt.lr = 3e-3f;
    float loss = 0.0f, first = 0.0f;
    int step;
    for (step = 0; step < 1000; step++) {
        run(m, a, tok, B, T, NULL);
        int n_valid;
        loss = hs_cross_entropy(m, a, tgt, &n_valid);
        assert_int_equal(n_valid, B * (T - 1));
        if (step == 0) first = loss;
        if (loss < 0.05f) break;
        hs_zero_grad(m);
        hs_backward(m, a, tok, tgt, NULL);
        assert_int_equal(hs_adamw_step(m, &opt, NULL, &err), HS_OK);
    }
    printf("  loss %.3f -> %.4f after %d steps\n", first, loss, step);
    assert_true(first > 2.0f); /* started near chance, ln 12 = 2.48 */
    if (!(loss < 0.05f)) fail_msg("loss %.4f after %d steps, expected < 0.05", loss, step);
    /* memorised: argmax is the target at every valid position */
    for (int i = 0; i < B * T; i++) {
        if (tgt[i] < 0) continue;
        const float *lg = a->logits + (size_t)i * c.d_vocab;
        int best = 0;
        for (int j = 1; j < c.d_vocab; j++)
            if (lg[j] > lg[best]) best = j;
        assert_int_equal(best, tgt[i]);
    }
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

/* ------------------------------------------------------------------------ */
/* 7. Validation                                                             */

static void expect_bad_config(hs_config c, const char *field)
{
    hs_error err;
    memset(&err, 0, sizeof err);
    hs_status s = hs_config_validate(&c, &err);
    if (s != HS_ERR_CONFIG) fail_msg("config with bad %s accepted (status %d)", field, s);
    if (!strstr(err.msg, field)) fail_msg("message '%s' does not name %s", err.msg, field);
    hs_model *m = (hs_model *)&err; /* non-NULL sentinel */
    assert_int_equal(hs_model_create(&c, &m, &err), HS_ERR_CONFIG);
    assert_null(m);
}

static void config_validate_rejects_bad_fields_naming_them(void **state)
{
    (void)state;
    hs_config good = small_config();
    hs_error err;
    assert_int_equal(hs_config_validate(&good, &err), HS_OK);
    hs_config c;
#define BAD(field, value, label) do { c = good; c.field = value; expect_bad_config(c, label); } while (0)
    BAD(n_layers, 0, "n_layers");
    BAD(n_layers, HS_MAX_LAYERS + 1, "n_layers");
    BAD(d_model, 0, "d_model");
    BAD(n_heads, 0, "n_heads");
    BAD(n_heads, -2, "n_heads");
    BAD(d_head, 0, "d_head");
    BAD(d_mlp, -1, "d_mlp");
    BAD(n_ctx, 0, "n_ctx");
    BAD(n_ctx, 5000, "n_ctx");
    BAD(d_vocab, 0, "d_vocab");
    BAD(eps, 0.0f, "eps");
    BAD(eps, -1e-5f, "eps");
    BAD(eps, NAN, "eps");
    BAD(eps, INFINITY, "eps");
    BAD(norm, (hs_norm)7, "norm");
    BAD(act, (hs_act)4, "act");
    BAD(pos, (hs_pos)5, "pos");
    BAD(n_key_value_heads, 2, "n_key_value_heads 2 does not divide n_heads");
    BAD(rotary_dim, 3, "rotary_dim");
    BAD(attn, (hs_attn)2, "attn");
#undef BAD
    c = good;
    c.norm = HS_NORM_NONE;
    c.embed_norm = 1;
    expect_bad_config(c, "embed norm");
    /* the edges are allowed */
    c = good;
    c.d_mlp = 0;
    c.n_layers = HS_MAX_LAYERS;
    c.n_ctx = 4096;
    assert_int_equal(hs_config_validate(&c, &err), HS_OK);
    /* enum names round-trip */
    assert_int_equal(hs_norm_parse(hs_norm_name(HS_NORM_RMSNORM)), HS_NORM_RMSNORM);
    assert_int_equal(hs_act_parse("gelu"), HS_ACT_GELU);
    assert_int_equal(hs_attn_parse("uniform"), HS_ATTN_UNIFORM);
    assert_int_equal(hs_pos_parse("none"), HS_POS_NONE);
    assert_int_equal(hs_norm_parse("batchnorm"), -1);
}

static void forward_rejects_out_of_range_tokens(void **state)
{
    (void)state;
    hs_config c = small_config();
    hs_model *m = new_model(&c);
    hs_model_init(m);
    hs_acts *a = new_acts(m, 2, 4, 0);
    hs_error err;
    int tok[8] = {0, 1, 2, 3, 4, 5, 6, c.d_vocab - 1};
    assert_int_equal(hs_forward(m, a, tok, 2, 4, NULL, &err), HS_OK);
    tok[5] = c.d_vocab;
    assert_int_equal(hs_forward(m, a, tok, 2, 4, NULL, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "token"));
    assert_non_null(strstr(err.msg, "9")); /* the bad id */
    tok[5] = -1;
    assert_int_equal(hs_forward(m, a, tok, 2, 4, NULL, &err), HS_ERR_INPUT);
    tok[5] = 5;
    /* more rows or positions than the activations hold */
    assert_int_equal(hs_forward(m, a, tok, 3, 4, NULL, &err), HS_ERR_INPUT);
    assert_int_equal(hs_forward(m, a, tok, 1, 5, NULL, &err), HS_ERR_INPUT);
    assert_int_equal(hs_forward(m, a, tok, 0, 4, NULL, &err), HS_ERR_INPUT);
    /* activations for more positions than n_ctx are refused */
    hs_acts *big = NULL;
    assert_int_equal(hs_acts_create(&m->cfg, 1, c.n_ctx + 1, 0, &big, &err), HS_ERR_INPUT);
    assert_null(big);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

/* Every array the products read or write starts on a cache line
 * (hs_floats_alloc), at a batch of 35 x 7 positions (245 rows: (B,T) slots
 * such as the norms' means are not whole lines, so the slot after one starts
 * on a line only because the layout rounds it; the backward splits it into
 * parts at 16 sequences, and 35 x 7 x V is not whole lines either): the
 * parameters, gradients, moments, each later part's gradients, every
 * activation slot, the packed and transposed weights, and every backward
 * part's scratch as hs_backward points it after a forward of the batch. */
#define LINE_ALIGNED(p) assert_int_equal((uintptr_t)(const void *)(p) % 64, 0)
static void arrays_the_products_read_start_on_cache_lines(void **state)
{
    (void)state;
    hs_config c = hs_config_default();
    c.d_vocab = 37; /* b_U of 37 floats: n_params not a whole number of lines */
    c.n_ctx = 18;
    hs_error err;
    hs_model *m = NULL;
    assert_int_equal(hs_model_create(&c, &m, &err), HS_OK);
    assert_int_equal(hs_model_alloc_train(m, &err), HS_OK);
    assert_int_not_equal(m->n_params % 16, 0);
    LINE_ALIGNED(m->param_mem);
    LINE_ALIGNED(m->grad_mem);
    LINE_ALIGNED(m->m_mem);
    LINE_ALIGNED(m->v_mem);
    for (int p = 1; p < HS_GRAD_PARTS; p++)
        LINE_ALIGNED(m->grad_part_mem + (size_t)(p - 1) * hs_floats_round(m->n_params));
    hs_acts *a = NULL;
    assert_int_equal(hs_acts_create(&c, 35, 7, 1, &a, &err), HS_OK);
    LINE_ALIGNED(a->embed);
    LINE_ALIGNED(a->pos_embed);
    LINE_ALIGNED(a->x0);
    LINE_ALIGNED(a->lne_rstd);
    for (int l = 0; l < c.n_layers; l++) {
        const hs_block_acts *b = &a->blocks[l];
        const float *const slots[] = {b->resid_pre, b->ln1_out, b->ln1_mean, b->ln1_rstd, b->q,
                                      b->k, b->v, b->att, b->z, b->attn_out, b->resid_mid,
                                      b->ln2_out, b->ln2_mean, b->ln2_rstd, b->mlp_pre,
                                      b->mlp_post, b->resid_post};
        for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) LINE_ALIGNED(slots[i]);
        for (int w = 0; w < 3; w++) LINE_ALIGNED(hs_acts_wpack(a, &c, l, w));
        for (int w = 0; w < 6; w++) LINE_ALIGNED(hs_acts_wT(a, &c, l, w));
    }
    LINE_ALIGNED(hs_acts_wT(a, &c, c.n_layers, 0));
    LINE_ALIGNED(a->lnf_out);
    LINE_ALIGNED(a->logits);
    LINE_ALIGNED(a->probs);
    LINE_ALIGNED(a->scratch);
    LINE_ALIGNED(a->scores);
    LINE_ALIGNED(a->dact_mem);
    a->b = 35; /* as a forward of the whole batch leaves them */
    a->t = 7;
    const int parts = hs_batch_parts(35, 7, HS_GRAD_PARTS);
    assert_true(parts >= 2);
    for (int p = 0; p < parts; p++) {
        const int b0 = hs_batch_part_start(35, 7, parts, p);
        const int b1 = hs_batch_part_start(35, 7, parts, p + 1);
        hs_grad_scratch g;
        hs_grad_point(a, &c, p, b0, b1 - b0, &g);
        LINE_ALIGNED(g.datt);
        LINE_ALIGNED(g.vT);
        LINE_ALIGNED(g.dwpack);
        LINE_ALIGNED(g.dresid); /* a part's first per-sequence slot */
    }
    hs_acts_destroy(a);
    hs_model_destroy(m);
}
#undef LINE_ALIGNED

/* One training step's forward (no observer) and backward with 2 threads:
 * logits, probabilities, every gradient and dLoss/dx0 are bit-identical with
 * 1 thread. Shapes: B 3 x T 8 (one 16-row unit and a rest: not split), B 34 x T 5
 * (split 16 + 18: 80 and 90 rows; split in half, 85 rows, gave the last row
 * of the first part other bits), B 2 x T 5 (no 16-row split: one thread),
 * B 77 x T 5 (160 + 225 rows; with libxsmm's 64-row blocks the short last
 * blocks of the vocabulary-9 logits got other bits: common/gemm.c, narrow).
 * The views come from the activation layout table. Under TSan/ASan
 * (scripts/test.sh) this is also the test that the two threads never touch
 * the same buffer. */
static void two_threads_give_the_bits_of_one(void **state)
{
    (void)state;
    static const int shapes[4][2] = {{3, 8}, {34, 5}, {2, 5}, {77, 5}};
    for (int variant = 0; variant < 2; variant++) {
        hs_config c = small_config();
        c.n_ctx = 8;
        if (variant == 1) {
            c.d_mlp = 0;
            c.norm = HS_NORM_RMSNORM;
            c.attn_scale = 3.0f;
        }
        hs_model *m = new_model(&c);
        randomise(m, 77 + (uint64_t)variant, 1.0);
        hs_error err;
        assert_int_equal(hs_model_alloc_train(m, &err), HS_OK);
        for (int s = 0; s < 4; s++) {
            const int B = shapes[s][0], T = shapes[s][1];
            int tok[77 * 5], tgt[77 * 5];
            for (int i = 0; i < B * T; i++) {
                tok[i] = (i * 7 + 3) % c.d_vocab;
                tgt[i] = (i * 5 + 1) % c.d_vocab;
            }
            float *keep[2] = {NULL, NULL}, *dx[2] = {NULL, NULL}, *lg[2] = {NULL, NULL};
            const size_t BTD = (size_t)B * T * c.d_model, BTV = (size_t)B * T * c.d_vocab;
            for (int th = 0; th < 2; th++) {
                hs_acts *a = new_acts(m, B, T, 1);
                assert_int_equal(hs_acts_set_threads(a, th + 1, &err), HS_OK);
                assert_true((hs_pool_threads(a->pool) >= 2) == (th == 1));
                hs_zero_grad(m);
                assert_int_equal(hs_forward(m, a, tok, B, T, NULL, &err), HS_OK);
                int nv = 0;
                hs_cross_entropy(m, a, tgt, &nv);
                dx[th] = calloc(BTD, sizeof(float));
                hs_backward(m, a, tok, tgt, dx[th]);
                keep[th] = malloc(m->n_params * sizeof(float));
                memcpy(keep[th], m->grad_mem, m->n_params * sizeof(float));
                lg[th] = malloc(2 * BTV * sizeof(float));
                memcpy(lg[th], a->logits, BTV * sizeof(float));
                memcpy(lg[th] + BTV, a->probs, BTV * sizeof(float));
                hs_acts_destroy(a);
            }
            if (memcmp(lg[0], lg[1], 2 * BTV * sizeof(float)) != 0 ||
                memcmp(keep[0], keep[1], m->n_params * sizeof(float)) != 0 ||
                memcmp(dx[0], dx[1], BTD * sizeof(float)) != 0)
                fail_msg("variant %d, B %d x T %d: 2 threads differ from 1", variant, B, T);
            for (int th = 0; th < 2; th++) {
                free(keep[th]);
                free(dx[th]);
                free(lg[th]);
            }
        }
        hs_model_destroy(m);
    }
}

/* AdamW split over a 2-worker pool (jobs of 16,384 floats, cutting through
 * tensors) moves every parameter and moment to the bits of the one-thread
 * update; a model of d_model 64 has ~10 such runs. */
static void adamw_on_a_pool_gives_the_bits_of_one_thread(void **state)
{
    (void)state;
    hs_config c = hs_config_default();
    c.d_vocab = 40;
    c.n_ctx = 8;
    c.d_model = 128; /* 24 runs of 16,384: enough for the pool (8 a worker) */
    c.d_head = 32;
    c.d_mlp = 512;
    hs_model *m[2];
    hs_error err;
    hs_pool *pool = NULL;
    assert_int_equal(hs_pool_create(2, &pool, &err), HS_OK);
    for (int k = 0; k < 2; k++) {
        m[k] = new_model(&c);
        randomise(m[k], 21, 0.5);
        assert_int_equal(hs_model_alloc_train(m[k], &err), HS_OK);
        assert_true(m[k]->n_params > 16 * 16384);
    }
    hs_adamw opt = hs_adamw_default();
    float *before = malloc(m[0]->n_params * sizeof(float));
    assert_non_null(before);
    memcpy(before, m[0]->param_mem, m[0]->n_params * sizeof(float));
    for (int step = 0; step < 3; step++) {
        double norm[2];
        for (int k = 0; k < 2; k++) {
            for (size_t i = 0; i < m[k]->n_params; i++)
                m[k]->grad_mem[i] = (float)((long)((i * 2654435761u + (size_t)step * 97) % 2001) - 1000) * 1e-4f;
            assert_int_equal(hs_adamw_step_on(m[k], &opt, k ? pool : NULL, &norm[k], &err), HS_OK);
        }
        assert_true(norm[0] == norm[1] && norm[0] > 1.0); /* clipped: gscale < 1 */
    }
    assert_memory_equal(m[0]->param_mem, m[1]->param_mem, m[0]->n_params * sizeof(float));
    assert_memory_equal(m[0]->m_mem, m[1]->m_mem, m[0]->n_params * sizeof(float));
    assert_memory_equal(m[0]->v_mem, m[1]->v_mem, m[0]->n_params * sizeof(float));
    /* no element left out at a run's or a tensor's edge: every one moved */
    for (size_t i = 0; i < m[0]->n_params; i++)
        if (m[0]->param_mem[i] == before[i]) fail_msg("parameter %zu not updated", i);
    free(before);
    for (int k = 0; k < 2; k++) hs_model_destroy(m[k]);
    hs_pool_destroy(pool);
}

/* GELU and its derivative (one pass of a training forward) against double
 * erfc on 280,001 points of [-14, 14] and at the far ends: x Phi(x) to
 * 1.5e-7 max(1, |x|), Phi + x phi to 2.5e-7 (model_simd.h's bound on Phi is
 * 2e-7); the inference kernel gives the same bits. */
static void gelu_matches_double_erfc(void **state)
{
    (void)state;
    const size_t n = 280001 + 4;
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
    float *d = malloc(n * sizeof(float)), *y2 = malloc(n * sizeof(float));
    assert_true(x && y && d && y2);
    for (size_t i = 0; i + 4 < n; i++) x[i] = (float)(-14.0 + 1e-4 * (double)i);
    x[n - 4] = -30.0f;
    x[n - 3] = 30.0f;
    x[n - 2] = -1e30f;
    x[n - 1] = 1e30f;
    hs_gelu_forward_grad(y, d, x, n);
    hs_gelu_forward(y2, x, n);
    assert_memory_equal(y, y2, n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        const double xv = x[i], P = 0.5 * erfc(-xv / sqrt(2.0));
        const double ph = exp(-xv * xv / 2.0) / sqrt(2.0 * 3.14159265358979323846);
        const double ey = fabs(y[i] - xv * P) / (fabs(xv) > 1.0 ? fabs(xv) : 1.0);
        const double ed = fabs(d[i] - (P + xv * ph));
        if (!(ey < 1.5e-7) || !(ed < 2.5e-7))
            fail_msg("x = %.9g: gelu %.9g (exact %.9g), gelu' %.9g (exact %.9g)", xv, y[i], xv * P,
                     d[i], P + xv * ph);
    }
    free(x);
    free(y);
    free(d);
    free(y2);
}

/* 1 if row r of a (rows of T, each the (r % T)-th of its tile) has a
 * nonzero entry past its diagonal. */
static int j_past(int r, int T, const float *a)
{
    for (int j = r % T + 1; j < T; j++)
        if (a[r * T + j] != 0.0f) return 1;
    return 0;
}

/* The element-wise kernels run at the widest vectors the CPU has (4, 8 or
 * 16 lanes) and promise the same bits at every width: GELU with its
 * derivative, the long softmax rows (16 fixed sum lanes), on rows with a
 * tail, masked columns and a row of NaN, and AdamW's update. */
static void simd_widths_give_the_same_bits(void **state)
{
    (void)state;
    enum { TM = 45, N = 1001 };
    static float x[N], y[3][N], d[3][N], sc[3 * TM * TM], att[3][3 * TM * TM];
    for (int i = 0; i < N; i++) x[i] = (float)((i * 37 % 1001) - 500) / 50.0f;
    int widths = 1;
    hs_gelu_forward_grad_4(y[0], d[0], x, N);
#ifdef HS_SIMD_X86
    if (__builtin_cpu_supports("avx2")) hs_gelu_forward_grad_8(y[widths], d[widths], x, N), widths++;
    if (__builtin_cpu_supports("avx512f")) hs_gelu_forward_grad_16(y[widths], d[widths], x, N), widths++;
#endif
    for (int w = 1; w < widths; w++) {
        assert_memory_equal(y[0], y[w], sizeof y[0]);
        assert_memory_equal(d[0], d[w], sizeof d[0]);
    }
    /* the softmax kernel of long rows (16-lane sums), at T 15 and 45 */
    for (int T = 15; T <= TM; T += 30) {
        const int ROWS = 3 * T;
        for (int i = 0; i < ROWS * T; i++) sc[i] = (float)((i * 53 % 997) - 498) / 40.0f;
        for (int j = 0; j < T; j++) sc[(2 * T + 7) * T + j] = NAN; /* row 7 of tile 2 */
        int k = 1;
        hs_softmax_rows_4(att[0], sc, (size_t)ROWS, T, 0);
#ifdef HS_SIMD_X86
        if (__builtin_cpu_supports("avx2")) hs_softmax_rows_8(att[k++], sc, (size_t)ROWS, T, 0);
        if (__builtin_cpu_supports("avx512f")) hs_softmax_rows_16(att[k++], sc, (size_t)ROWS, T, 0);
#endif
        for (int w = 1; w < k; w++)
            assert_memory_equal(att[0], att[w], (size_t)ROWS * T * sizeof(float));
        /* and the softmax is one: rows sum to 1, 0 past the diagonal and on the NaN row */
        for (int r = 0; r < ROWS; r++) {
            double sum = 0.0;
            for (int j = 0; j < T; j++) sum += att[0][r * T + j];
            if (j_past(r, T, att[0]) || fabs(sum - (r == 2 * T + 7 ? 0.0 : 1.0)) > 1e-6)
                fail_msg("T %d: softmax row %d sums to %.9g", T, r, sum);
        }
    }
    /* AdamW's update (1001 elements: a tail at every width) */
    static float ap[3][N], am[3][N], av[3][N];
    const hs_adam_k ak = {0.5f, 0.9f, 0.1f, 0.999f, 0.001f, 0.99999f, 0.0031f, 0.0447f, 1e-8f};
    int aw = 0;
    for (int w = 0; w < 3; w++) {
        for (int i = 0; i < N; i++) {
            ap[w][i] = x[i] * 0.1f;
            am[w][i] = x[(i + 7) % N] * 0.01f;
            av[w][i] = x[(i + 3) % N] * x[(i + 3) % N] * 1e-4f;
        }
    }
    hs_adam_run_4(ap[aw], am[aw], av[aw], x, N, &ak), aw++;
#ifdef HS_SIMD_X86
    if (__builtin_cpu_supports("avx2")) hs_adam_run_8(ap[aw], am[aw], av[aw], x, N, &ak), aw++;
    if (__builtin_cpu_supports("avx512f")) hs_adam_run_16(ap[aw], am[aw], av[aw], x, N, &ak), aw++;
#endif
    for (int w = 1; w < aw; w++) {
        assert_memory_equal(ap[0], ap[w], sizeof ap[0]);
        assert_memory_equal(am[0], am[w], sizeof am[0]);
        assert_memory_equal(av[0], av[w], sizeof av[0]);
    }
    /* and it moved the parameters (the last element: through the tail) */
    assert_true(ap[0][N - 1] != x[N - 1] * 0.1f);
    printf("  widths compared: %d\n", widths);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hand_computed_attention_pattern_and_output),
        cmocka_unit_test(long_context_attention_matches_double),
        cmocka_unit_test(logits_at_one_position_match_the_whole_forward),
        cmocka_unit_test(pattern_rows_sum_to_one_with_exact_zeros_above_the_diagonal),
        cmocka_unit_test(observer_that_reads_or_adds_zero_leaves_logits_bit_identical),
        cmocka_unit_test(causal_blocks_give_the_bits_of_whole_tiles),
        cmocka_unit_test(pool_split_products_give_one_threads_bits),
        cmocka_unit_test(zeroing_a_heads_z_changes_logits_exactly_as_removing_the_head),
        cmocka_unit_test(observer_returning_negative_aborts_with_callback_error),
        cmocka_unit_test(observer_sees_every_documented_point_with_its_shape),
        cmocka_unit_test(same_seed_gives_bit_identical_parameters_after_training),
        cmocka_unit_test(adamw_step_matches_hand_computed_update),
        cmocka_unit_test(tiny_model_memorises_four_sequences),
        cmocka_unit_test(config_validate_rejects_bad_fields_naming_them),
        cmocka_unit_test(forward_rejects_out_of_range_tokens),
        cmocka_unit_test(two_threads_give_the_bits_of_one),
        cmocka_unit_test(arrays_the_products_read_start_on_cache_lines),
        cmocka_unit_test(adamw_on_a_pool_gives_the_bits_of_one_thread),
        cmocka_unit_test(gelu_matches_double_erfc),
        cmocka_unit_test(simd_widths_give_the_same_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
