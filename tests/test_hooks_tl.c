/*
 * tests/test_hooks_tl.c -- hook points mean what they mean in TransformerLens
 * 3.x (docs/HOOKS.md): an edit above the diagonal of hook_attn_scores
 * un-masks, a row of -inf gives weights 0, pattern weights above the
 * diagonal mix into z, hook_normalized is before the gain, the split inputs,
 * hook_mlp_in, hook_tokens, unembed.hook_in/hook_out; specs that match no
 * point and patches between runs of different shapes are errors that say so;
 * scores are divided by cfg attn_scale. Tiny hand-sized cases.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "model/model.h"
#include "probe/probe.h"
#include "fixture.h"

enum { V = 5 };

static hs_config tiny(int d_mlp)
{
    hs_config c = hs_config_default();
    c.n_layers = 1;
    c.d_model = 8;
    c.n_heads = 2;
    c.d_head = 4;
    c.d_mlp = d_mlp;
    c.n_ctx = 4;
    c.d_vocab = V;
    return c;
}

static hs_acts *acts_for(const hs_model *m, int B, int T)
{
    hs_acts *a = NULL;
    hs_error err;
    if (hs_acts_create(&m->cfg, B, T, 0, &a, &err) != HS_OK) fail_msg("acts: %s", err.msg);
    return a;
}

/* Runs with hooks hk (may be NULL) caching filters; fails the test on error. */
static void run_cache(const hs_model *m, hs_acts *a, const int *tok, int B, int T,
                      const char *const *f, int nf, const hs_hooks *hk, hs_cache *c)
{
    hs_error err;
    if (hs_run_with_cache(m, a, tok, B, T, f, nf, hk, c, &err) != HS_OK) fail_msg("run: %s", err.msg);
}

typedef struct {
    int row;        /* query position whose row is written (head 0, batch 0) */
    float vals[2];  /* written into columns 0, 1 */
} row_edit;

static int set_row(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name;
    (void)ndim;
    const row_edit *e = ctx;
    const int64_t T = shape[3];
    data[e->row * T + 0] = e->vals[0];
    data[e->row * T + 1] = e->vals[1];
    return 1;
}

/* T = 2: scores row 0 written as [0, 0] gives pattern [0.5, 0.5] (TL softmaxes
 * the whole hooked row; the mask was applied before the hook). */
static void scores_edit_above_diagonal_unmasks(void **state)
{
    (void)state;
    hs_config cfg = tiny(0);
    hs_model *m = random_model_of(&cfg, 1);
    hs_acts *a = acts_for(m, 1, 2);
    const int tok[2] = {1, 3};
    hs_cache c;
    hs_cache_init(&c);
    const char *f[] = {"blocks.0.attn.hook_attn_scores", "blocks.0.attn.hook_pattern"};
    run_cache(m, a, tok, 1, 2, f, 2, NULL, &c);
    const hs_cache_entry *s = hs_cache_get(&c, f[0]), *p = hs_cache_get(&c, f[1]);
    assert_true(isinf(s->data[1]) && s->data[1] < 0); /* masked = -inf in the hooked value */
    assert_true(p->data[0] == 1.0f && p->data[1] == 0.0f);

    hs_hooks *hk = NULL;
    hs_error err;
    assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
    row_edit e = {0, {0.0f, 0.0f}};
    assert_int_equal(hs_hooks_add(hk, f[0], set_row, &e, &err), HS_OK);
    run_cache(m, a, tok, 1, 2, f + 1, 1, hk, &c);
    p = hs_cache_get(&c, f[1]);
    assert_true(p->data[0] == 0.5f && p->data[1] == 0.5f);
    /* a row of -inf everywhere gives weights 0 (TL: softmax NaN -> 0) */
    e = (row_edit){1, {-INFINITY, -INFINITY}};
    const char *fz[] = {"blocks.0.attn.hook_pattern", "blocks.0.attn.hook_z"};
    run_cache(m, a, tok, 1, 2, fz, 2, hk, &c);
    p = hs_cache_get(&c, fz[0]);
    assert_true(p->data[2] == 0.0f && p->data[3] == 0.0f);
    const hs_cache_entry *z = hs_cache_get(&c, fz[1]); /* [1,2,H,dh]: position 1, head 0 */
    for (int d = 0; d < cfg.d_head; d++) assert_true(z->data[1 * cfg.n_heads * cfg.d_head + d] == 0.0f);
    hs_hooks_destroy(hk);
    hs_cache_free(&c);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

/* pattern row 0 written as [0, 1]: z at position 0 is v at position 1. */
static void pattern_edit_above_diagonal_mixes_into_z(void **state)
{
    (void)state;
    hs_config cfg = tiny(0);
    hs_model *m = random_model_of(&cfg, 2);
    hs_acts *a = acts_for(m, 1, 2);
    const int tok[2] = {4, 0};
    hs_hooks *hk = NULL;
    hs_error err;
    assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
    row_edit e = {0, {0.0f, 1.0f}};
    assert_int_equal(hs_hooks_add(hk, "blocks.0.attn.hook_pattern", set_row, &e, &err), HS_OK);
    hs_cache c;
    hs_cache_init(&c);
    const char *f[] = {"blocks.0.attn.hook_v", "blocks.0.attn.hook_z"};
    run_cache(m, a, tok, 1, 2, f, 2, hk, &c);
    const float *v = hs_cache_get(&c, f[0])->data, *z = hs_cache_get(&c, f[1])->data;
    const int HD = cfg.n_heads * cfg.d_head;
    for (int d = 0; d < cfg.d_head; d++) assert_true(z[d] == v[HD + d]); /* head 0 */
    hs_hooks_destroy(hk);
    hs_cache_free(&c);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

/* hook_normalized is (x - mean) / scale, before the gain and bias (TL 3.x). */
static void normalized_is_before_the_gain(void **state)
{
    (void)state;
    hs_config cfg = tiny(0);
    hs_model *m = random_model_of(&cfg, 3);
    hs_acts *a = acts_for(m, 1, 3);
    const int tok[3] = {1, 2, 3};
    hs_cache c;
    hs_cache_init(&c);
    const char *f[] = {"blocks.0.hook_resid_pre", "blocks.0.ln1.hook_scale",
                       "blocks.0.ln1.hook_normalized"};
    run_cache(m, a, tok, 1, 3, f, 3, NULL, &c);
    const float *x = hs_cache_get(&c, f[0])->data, *sc = hs_cache_get(&c, f[1])->data;
    const float *n = hs_cache_get(&c, f[2])->data;
    const int D = cfg.d_model;
    for (int t = 0; t < 3; t++) {
        double mu = 0;
        for (int d = 0; d < D; d++) mu += x[t * D + d];
        mu /= D;
        for (int d = 0; d < D; d++)
            assert_true(fabs(n[t * D + d] - (x[t * D + d] - mu) / sc[t]) < 1e-5);
    }
    hs_cache_free(&c);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

static int zero_hook(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name;
    (void)ctx;
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    memset(data, 0, n * sizeof(float));
    return 1;
}

/* hook_q_input set to 0: each head's q is ln1(0) W_Q[h] + b_Q[h] = b W_Q[h] + b_Q[h]
 * at every position (LN1 per head on its own input); k is as in the plain run. */
static void q_input_edit_changes_only_that_heads_query(void **state)
{
    (void)state;
    hs_config cfg = tiny(0);
    hs_model *m = random_model_of(&cfg, 4);
    hs_acts *a = acts_for(m, 1, 3);
    const int tok[3] = {2, 0, 1}, D = cfg.d_model, H = cfg.n_heads, dh = cfg.d_head;
    hs_cache plain, ed;
    hs_cache_init(&plain);
    hs_cache_init(&ed);
    const char *f[] = {"blocks.0.attn.hook_q", "blocks.0.attn.hook_k"};
    run_cache(m, a, tok, 1, 3, f, 2, NULL, &plain);
    hs_hooks *hk = NULL;
    hs_error err;
    assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
    assert_int_equal(hs_hooks_add(hk, "blocks.0.hook_q_input", zero_hook, NULL, &err), HS_OK);
    run_cache(m, a, tok, 1, 3, f, 2, hk, &ed);
    const float *q = hs_cache_get(&ed, f[0])->data, *k = hs_cache_get(&ed, f[1])->data;
    const float *k0 = hs_cache_get(&plain, f[1])->data;
    const hs_block_params *bp = &m->params.blocks[0];
    for (int h = 0; h < H; h++)
        for (int e = 0; e < dh; e++) {
            double want = bp->b_Q[h * dh + e];
            for (int d = 0; d < D; d++) want += (double)bp->ln1_b[d] * bp->W_Q[(h * D + d) * dh + e];
            for (int t = 0; t < 3; t++) assert_true(fabs(q[(t * H + h) * dh + e] - want) < 1e-5);
        }
    assert_memory_equal(k, k0, 3 * (size_t)H * dh * sizeof(float));
    hs_hooks_destroy(hk);
    hs_cache_free(&plain);
    hs_cache_free(&ed);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

/* hook_mlp_in set to 0: the MLP sees 0 (mlp_pre the same at every position),
 * resid_mid and the skip stay: resid_post = resid_mid + mlp_out. */
static void mlp_in_edit_feeds_the_mlp_only(void **state)
{
    (void)state;
    hs_config cfg = tiny(6);
    hs_model *m = random_model_of(&cfg, 5);
    hs_acts *a = acts_for(m, 1, 3);
    const int tok[3] = {3, 3, 1}, D = cfg.d_model, M = cfg.d_mlp;
    hs_hooks *hk = NULL;
    hs_error err;
    assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
    assert_int_equal(hs_hooks_add(hk, "blocks.0.hook_mlp_in", zero_hook, NULL, &err), HS_OK);
    hs_cache c;
    hs_cache_init(&c);
    const char *f[] = {"blocks.0.hook_resid_mid", "blocks.0.mlp.hook_pre", "blocks.0.hook_mlp_out",
                       "blocks.0.hook_resid_post"};
    run_cache(m, a, tok, 1, 3, f, 4, hk, &c);
    const float *mid = hs_cache_get(&c, f[0])->data, *pre = hs_cache_get(&c, f[1])->data;
    const float *out = hs_cache_get(&c, f[2])->data, *post = hs_cache_get(&c, f[3])->data;
    for (int t = 1; t < 3; t++) assert_memory_equal(pre + t * M, pre, (size_t)M * sizeof(float));
    for (int i = 0; i < 3 * D; i++) assert_true(post[i] == mid[i] + out[i]);
    assert_true(mid[0] != 0.0f);
    hs_hooks_destroy(hk);
    hs_cache_free(&c);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

typedef struct {
    float value;
} tok_edit;

static int set_tokens(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name;
    (void)ndim;
    const tok_edit *e = ctx;
    for (int64_t i = 0; i < shape[0] * shape[1]; i++) data[i] = e->value;
    return 1;
}

/* hook_tokens: an edit runs the edited ids (the logits of a plain run on
 * them, bit for bit); a value that is no token id is refused. unembed.hook_in
 * set to 0 leaves logits = b_U; unembed.hook_out is logits. */
static void tokens_and_unembed_points(void **state)
{
    (void)state;
    hs_config cfg = tiny(0);
    hs_model *m = random_model_of(&cfg, 6);
    hs_acts *a = acts_for(m, 1, 2);
    const int tok[2] = {1, 2}, two[2] = {4, 4};
    hs_error err;
    assert_int_equal(hs_forward(m, a, two, 1, 2, NULL, &err), HS_OK);
    float want[2 * V];
    memcpy(want, a->logits, sizeof want);
    hs_hooks *hk = NULL;
    assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
    tok_edit e = {4.0f};
    assert_int_equal(hs_hooks_add(hk, "hook_tokens", set_tokens, &e, &err), HS_OK);
    assert_int_equal(hs_run_with_hooks(m, a, tok, 1, 2, hk, &err), HS_OK);
    assert_memory_equal(a->logits, want, sizeof want);
    e.value = 2.5f;
    assert_int_equal(hs_run_with_hooks(m, a, tok, 1, 2, hk, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "hook_tokens"));
    hs_hooks_clear(hk);

    assert_int_equal(hs_hooks_add(hk, "unembed.hook_in", zero_hook, NULL, &err), HS_OK);
    hs_cache c;
    hs_cache_init(&c);
    const char *f[] = {"unembed.hook_out"};
    run_cache(m, a, tok, 1, 2, f, 1, hk, &c);
    assert_int_equal(c.n, 1);
    const hs_cache_entry *lg = hs_cache_get(&c, "unembed.hook_out");
    assert_non_null(lg);
    assert_ptr_equal(lg, hs_cache_get(&c, "logits"));
    for (int t = 0; t < 2; t++) assert_memory_equal(lg->data + t * V, m->params.b_U, V * sizeof(float));
    assert_int_equal(hs_hook_spec_matches(&cfg, "unembed.hook_out"), 1);
    hs_hooks_destroy(hk);
    hs_cache_free(&c);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

/* Specs matching no point are errors naming them; counts are reported. */
static void specs_matching_nothing_are_errors(void **state)
{
    (void)state;
    hs_config cfg = tiny(0); /* attention-only: no blocks.0.mlp.* */
    hs_model *m = random_model_of(&cfg, 7);
    hs_acts *a = acts_for(m, 1, 2);
    const int tok[2] = {0, 1};
    hs_error err;
    static const char *const bad[] = {"blocks.0.attn.hook_resultt", "blocks.0.mlp.hook_pre"};
    for (int i = 0; i < 2; i++) {
        hs_hooks *hk = NULL;
        assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
        assert_int_equal(hs_hooks_add(hk, bad[i], zero_hook, NULL, &err), HS_OK);
        assert_int_equal(hs_run_with_hooks(m, a, tok, 1, 2, hk, &err), HS_ERR_INPUT);
        assert_non_null(strstr(err.msg, bad[i]));
        hs_hooks_destroy(hk);
    }
    hs_cache c;
    hs_cache_init(&c);
    const char *f[] = {"blocks.0.attn.hook_patern"};
    assert_int_equal(hs_run_with_cache(m, a, tok, 1, 2, f, 1, NULL, &c, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "cache filter 'blocks.0.attn.hook_patern'"));
    const char *opt[] = {"?blocks.*.hook_mlp_out", "logits"};
    run_cache(m, a, tok, 1, 2, opt, 2, NULL, &c);
    assert_int_equal(c.n, 1);

    hs_hooks *hk = NULL;
    assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
    assert_int_equal(hs_hooks_add(hk, "blocks.*.attn.hook_*", zero_hook, NULL, &err), HS_OK);
    assert_int_equal(hs_hooks_add(hk, "**", zero_hook, NULL, &err), HS_OK);
    int counts[2];
    assert_int_equal(hs_hooks_match_counts(hk, m, counts, &err), HS_OK);
    assert_int_equal(counts[0], 7); /* q k v attn_scores pattern z result */
    assert_int_equal(counts[1], hs_hook_points(&cfg, NULL, 0));
    hs_hooks_destroy(hk);
    hs_cache_free(&c);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

/* A patch between runs of 3 and 2 positions names both shapes. */
static void patch_between_shapes_names_both(void **state)
{
    (void)state;
    hs_config cfg = tiny(0);
    hs_model *m = random_model_of(&cfg, 8);
    hs_acts *a = acts_for(m, 1, 3);
    const int tok[3] = {0, 1, 2};
    hs_cache clean;
    hs_cache_init(&clean);
    run_cache(m, a, tok, 1, 3, NULL, 0, NULL, &clean);
    hs_hooks *hk = NULL;
    hs_error err;
    assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
    assert_int_equal(hs_hooks_add_patch(hk, &clean, "blocks.0.attn.hook_z", &err), HS_OK);
    assert_int_equal(hs_run_with_hooks(m, a, tok, 1, 2, hk, &err), HS_ERR_CALLBACK);
    assert_non_null(strstr(err.msg, "[1,2,2,4] in this run but [1,3,2,4] in the clean cache"));
    hs_hooks_destroy(hk);
    hs_cache_free(&clean);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

/* Scores are q.k / attn_scale (8 here, 1 for use_attn_scale false), not /sqrt(d_head). */
static void scores_are_divided_by_attn_scale(void **state)
{
    (void)state;
    const float scales[3] = {0.0f, 8.0f, 1.0f};
    for (int s = 0; s < 3; s++) {
        hs_config cfg = tiny(0);
        cfg.attn_scale = scales[s];
        hs_model *m = random_model_of(&cfg, 9);
        hs_acts *a = acts_for(m, 1, 2);
        const int tok[2] = {3, 1}, H = cfg.n_heads, dh = cfg.d_head;
        hs_cache c;
        hs_cache_init(&c);
        const char *f[] = {"blocks.0.attn.hook_q", "blocks.0.attn.hook_k",
                           "blocks.0.attn.hook_attn_scores"};
        run_cache(m, a, tok, 1, 2, f, 3, NULL, &c);
        const float *q = hs_cache_get(&c, f[0])->data, *k = hs_cache_get(&c, f[1])->data;
        const float *sc = hs_cache_get(&c, f[2])->data;
        const double div = s == 0 ? 2.0 : scales[s]; /* sqrt(4) */
        double dot = 0;
        for (int e = 0; e < dh; e++) dot += (double)q[H * dh + e] * k[e]; /* head 0, i 1, j 0 */
        assert_true(fabs(sc[1 * 2 + 0] - dot / div) < 1e-5 * (1 + fabs(dot)));
        hs_cache_free(&c);
        hs_acts_destroy(a);
        hs_model_destroy(m);
    }
}

/* An in-place edit counts as in TransformerLens, whatever the hook returns:
 * a hook that changes element 0 of a point (a token id: the next id; else
 * + 0.75) and returns 0 gives the logits the same hook returning 1 gives, at
 * every point of a model with an MLP, bit for bit; and so does a hook that
 * writes scores above the diagonal (the un-masking case) and returns 0. */
typedef struct {
    int ret;
} bump_ctx;

static int bump(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)shape;
    (void)ndim;
    data[0] = strcmp(name, "hook_tokens") == 0 ? (float)(((int)data[0] + 1) % V) : data[0] + 0.75f;
    return ((const bump_ctx *)ctx)->ret;
}

static int unmask_row0(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name;
    (void)shape;
    (void)ndim;
    data[1] = data[0]; /* row 0 of head 0: column 1 as column 0 */
    return ((const bump_ctx *)ctx)->ret;
}

static void logits_with(const hs_model *m, hs_acts *a, const int *tok, const char *point, hs_hook_fn fn,
                        int ret, float *out, size_t n)
{
    hs_hooks *hk = NULL;
    hs_error err;
    bump_ctx bc = {ret};
    assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
    assert_int_equal(hs_hooks_add(hk, point, fn, &bc, &err), HS_OK);
    hs_cache c;
    hs_cache_init(&c);
    const char *f[] = {"logits"};
    run_cache(m, a, tok, 1, 3, f, 1, hk, &c);
    memcpy(out, hs_cache_get(&c, "logits")->data, n * sizeof(float));
    hs_cache_free(&c);
    hs_hooks_destroy(hk);
}

static void in_place_edits_count_whatever_the_hook_returns(void **state)
{
    (void)state;
    hs_config cfg = tiny(16);
    hs_model *m = random_model_of(&cfg, 11);
    hs_acts *a = acts_for(m, 1, 3);
    const int tok[3] = {1, 3, 2};
    const size_t n = 3 * V;
    float l0[3 * V], l1[3 * V];
    hs_hook_point pts[64];
    const int np = hs_hook_points(&cfg, pts, 64);
    assert_true(np > 20 && np <= 64);
    for (int i = 0; i < np; i++) {
        logits_with(m, a, tok, pts[i].name, bump, 0, l0, n);
        logits_with(m, a, tok, pts[i].name, bump, 1, l1, n);
        if (memcmp(l0, l1, sizeof l0) != 0)
            fail_msg("%s: an in-place edit returning 0 gives other logits than returning 1", pts[i].name);
    }
    logits_with(m, a, tok, "blocks.0.attn.hook_attn_scores", unmask_row0, 0, l0, n);
    logits_with(m, a, tok, "blocks.0.attn.hook_attn_scores", unmask_row0, 1, l1, n);
    assert_memory_equal(l0, l1, sizeof l0);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

/* A trusted hook (hs_hooks_add_trusted, whose registry keeps no copy of the
 * point) that leaves the point alone and returns 0, registered before an
 * untrusted hook that edits in place and returns 0: the edit still counts
 * (the copy is taken before the first untrusted hook), at every point. */
static int leave_alone(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name, (void)shape, (void)ndim, (void)data, (void)ctx;
    return 0;
}

static void trusted_hook_before_an_in_place_edit(void **state)
{
    (void)state;
    hs_config cfg = tiny(16);
    hs_model *m = random_model_of(&cfg, 11);
    hs_acts *a = acts_for(m, 1, 3);
    const int tok[3] = {1, 3, 2};
    const size_t n = 3 * V;
    float l0[3 * V], l1[3 * V];
    hs_hook_point pts[64];
    const int np = hs_hook_points(&cfg, pts, 64);
    assert_true(np > 20 && np <= 64);
    for (int i = 0; i < np; i++) {
        hs_hooks *hk = NULL;
        hs_error err;
        bump_ctx bc = {0};
        assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
        assert_int_equal(hs_hooks_add_trusted(hk, pts[i].name, leave_alone, NULL, NULL, NULL, &err), HS_OK);
        assert_int_equal(hs_hooks_add(hk, pts[i].name, bump, &bc, &err), HS_OK);
        hs_cache c;
        hs_cache_init(&c);
        const char *f[] = {"logits"};
        run_cache(m, a, tok, 1, 3, f, 1, hk, &c);
        memcpy(l0, hs_cache_get(&c, "logits")->data, n * sizeof(float));
        hs_cache_free(&c);
        hs_hooks_destroy(hk);
        logits_with(m, a, tok, pts[i].name, bump, 1, l1, n);
        if (memcmp(l0, l1, sizeof l0) != 0)
            fail_msg("%s: an in-place edit returning 0 after a trusted hook is lost", pts[i].name);
    }
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scores_edit_above_diagonal_unmasks),
        cmocka_unit_test(pattern_edit_above_diagonal_mixes_into_z),
        cmocka_unit_test(normalized_is_before_the_gain),
        cmocka_unit_test(q_input_edit_changes_only_that_heads_query),
        cmocka_unit_test(mlp_in_edit_feeds_the_mlp_only),
        cmocka_unit_test(tokens_and_unembed_points),
        cmocka_unit_test(specs_matching_nothing_are_errors),
        cmocka_unit_test(patch_between_shapes_names_both),
        cmocka_unit_test(scores_are_divided_by_attn_scale),
        cmocka_unit_test(in_place_edits_count_whatever_the_hook_returns),
        cmocka_unit_test(trusted_hook_before_an_in_place_edit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
