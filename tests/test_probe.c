/*
 * tests/test_probe.c -- hooks, cache, interventions and direct logit
 * attribution of probe/ (CIRCUITS.md 5-6), on small random models and on a
 * hand-built one whose patching metric is computed by hand.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "model/model.h"
#include "model/checkpoint.h"
#include "probe/probe.h"
#include "fixture.h"

enum { B = 3, T = 6, V = 11 };

/* A small model with large random weights (tests/fixture.h), resized to
 * this file's B, T, V. */
static hs_model *random_model(hs_config cfg, uint64_t seed)
{
    cfg.n_ctx = T;
    cfg.d_vocab = V;
    if (cfg.d_model == 64) {
        cfg.d_model = 16;
        cfg.n_heads = 3;
        cfg.d_head = 4;
    }
    if (cfg.d_mlp) cfg.d_mlp = 20;
    return random_model_of(&cfg, seed);
}

static const int TOK_CLEAN[B * T] = {1, 3, 0, 6, 2, 5, 5, 4, 1, 0, 9, 10, 7, 7, 2, 8, 3, 1};
static const int TOK_CORR[B * T] = {1, 3, 4, 6, 2, 5, 5, 4, 8, 0, 9, 10, 7, 2, 2, 8, 3, 1};

static double max_abs_diff(const float *a, const float *b, size_t n)
{
    double mx = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= mx)) mx = d; /* NaN propagates */
    }
    return mx;
}

/* Configs that change what the decomposition must handle. */
static hs_config config_variant(int k)
{
    hs_config c = hs_config_default();
    switch (k) {
    case 0: break;                                        /* LN, MLP, biases */
    case 1: c.norm = HS_NORM_RMSNORM; break;
    case 2: c.ln_final = 0; c.act = HS_ACT_RELU; break;
    case 3: c.embed_norm = 1; c.pos = HS_POS_NONE; break;
    case 4: c.d_mlp = 0; c.bias = 0; break;               /* attention-only */
    case 5: c.norm = HS_NORM_NONE; c.attn = HS_ATTN_UNIFORM; break;
    case 6: c.embed_norm = 1; c.norm = HS_NORM_RMSNORM; c.n_layers = 3; break;
    }
    return c;
}
enum { N_VARIANTS = 7 };

/* ------------------------------------------------------------------------ */

static void name_patterns_match_segments_and_any_runs(void **state)
{
    (void)state;
    assert_true(hs_name_match("blocks.0.attn.hook_z", "blocks.0.attn.hook_z"));
    assert_false(hs_name_match("blocks.0.attn.hook_z", "blocks.0.attn.hook_zz"));
    assert_false(hs_name_match("blocks.0.attn.hook_z", "blocks.10.attn.hook_z"));
    assert_true(hs_name_match("blocks.*.attn.hook_pattern", "blocks.12.attn.hook_pattern"));
    assert_false(hs_name_match("blocks.*.attn.hook_pattern", "blocks.1.2.attn.hook_pattern"));
    assert_true(hs_name_match("blocks.1.attn.hook_*", "blocks.1.attn.hook_result"));
    assert_false(hs_name_match("blocks.1.attn.hook_*", "blocks.1.hook_attn_out"));
    assert_false(hs_name_match("*hook_z", "blocks.0.attn.hook_z"));
    assert_true(hs_name_match("**hook_z", "blocks.0.attn.hook_z"));
    assert_true(hs_name_match("**", "logits"));
    assert_true(hs_name_match("**.hook_scale", "ln_final.hook_scale"));
    assert_false(hs_name_match("**.hook_scale", "hook_embed"));
    assert_true(hs_name_match("*", "logits"));
    assert_false(hs_name_match("*", "ln_final.hook_scale"));
}

static int identity_hook(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name; (void)shape; (void)ndim; (void)data;
    (*(int *)ctx)++;
    return 0;
}

/* Returns "changed" without changing anything, except where the model turns
 * the value back into another form (hook_scale is stored as 1/rstd,
 * hook_result is re-summed): there it returns 0. */
static int claims_changed_hook(const char *name, const int64_t *shape, int ndim, float *data,
                               void *ctx)
{
    (void)shape; (void)ndim; (void)data; (void)ctx;
    size_t n = strlen(name);
    if (n >= 10 && strcmp(name + n - 10, "hook_scale") == 0) return 0;
    if (n >= 11 && strcmp(name + n - 11, "hook_result") == 0) return 0;
    return 1;
}

static void identity_hooks_leave_logits_bit_identical(void **state)
{
    (void)state;
    hs_error err;
    for (int k = 0; k < N_VARIANTS; k++) {
        hs_model *m = random_model(config_variant(k), 100 + k);
        hs_acts *a = NULL;
        assert_int_equal(hs_acts_create(&m->cfg, B, T, 0, &a, &err), HS_OK);
        static float ref[B * T * V];
        assert_int_equal(hs_forward(m, a, TOK_CLEAN, B, T, NULL, &err), HS_OK);
        memcpy(ref, a->logits, sizeof ref);
        hs_hooks *hk = NULL;
        assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
        /* empty registry = plain forward */
        assert_int_equal(hs_run_with_hooks(m, a, TOK_CLEAN, B, T, hk, &err), HS_OK);
        assert_memory_equal(ref, a->logits, sizeof ref);
        int calls = 0;
        assert_int_equal(hs_hooks_add(hk, "**", identity_hook, &calls, &err), HS_OK);
        assert_int_equal(hs_run_with_hooks(m, a, TOK_CLEAN, B, T, hk, &err), HS_OK);
        assert_true(calls >= 10);
        assert_memory_equal(ref, a->logits, sizeof ref);
        assert_int_equal(hs_hooks_add(hk, "**", claims_changed_hook, NULL, &err), HS_OK);
        assert_int_equal(hs_run_with_hooks(m, a, TOK_CLEAN, B, T, hk, &err), HS_OK);
        assert_memory_equal(ref, a->logits, sizeof ref);
        hs_hooks_destroy(hk);
        hs_acts_destroy(a);
        hs_model_destroy(m);
    }
}

static int abort_hook(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name; (void)shape; (void)ndim; (void)data; (void)ctx;
    return -1;
}

static void a_hook_can_abort_the_forward(void **state)
{
    (void)state;
    hs_error err;
    hs_model *m = random_model(config_variant(0), 7);
    hs_acts *a = NULL;
    assert_int_equal(hs_acts_create(&m->cfg, B, T, 0, &a, &err), HS_OK);
    hs_hooks *hk = NULL;
    assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
    assert_int_equal(hs_hooks_add(hk, "blocks.1.hook_resid_mid", abort_hook, NULL, &err), HS_OK);
    assert_int_equal(hs_run_with_hooks(m, a, TOK_CLEAN, B, T, hk, &err), HS_ERR_CALLBACK);
    assert_non_null(strstr(err.msg, "blocks.1.hook_resid_mid"));
    hs_hooks_destroy(hk);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

static void cache_keeps_every_point_with_its_shape_and_filters(void **state)
{
    (void)state;
    hs_error err;
    hs_model *m = random_model(config_variant(0), 11);
    const int D = m->cfg.d_model, H = m->cfg.n_heads, dh = m->cfg.d_head;
    hs_acts *a = NULL;
    assert_int_equal(hs_acts_create(&m->cfg, B, T, 0, &a, &err), HS_OK);
    hs_cache c;
    hs_cache_init(&c);
    assert_int_equal(hs_run_with_cache(m, a, TOK_CLEAN, B, T, NULL, 0, NULL, &c, &err), HS_OK);
    /* tokens + 2 embed + per layer 23 (resid_pre, attn_in, q/k/v_input, ln1 x2, q,k,v,
     * scores, pattern, z, result, attn_out, resid_mid, mlp_in, ln2 x2, pre, post, mlp_out,
     * resid_post) + lnf x2 + unembed.hook_in + logits */
    assert_int_equal(c.n, 3 + 2 * 23 + 4);
    const hs_cache_entry *e = hs_cache_get(&c, "blocks.1.attn.hook_result");
    assert_non_null(e);
    assert_int_equal(e->ndim, 4);
    assert_true(e->shape[0] == B && e->shape[1] == T && e->shape[2] == H && e->shape[3] == D);
    e = hs_cache_getf(&c, "blocks.%d.attn.hook_pattern", 0);
    assert_non_null(e);
    assert_true(e->shape[0] == B && e->shape[1] == H && e->shape[2] == T && e->shape[3] == T);
    e = hs_cache_get(&c, "blocks.0.attn.hook_z");
    assert_true(e->shape[2] == H && e->shape[3] == dh);
    assert_null(hs_cache_get(&c, "blocks.2.attn.hook_z"));
    /* cached values are the run's values */
    assert_memory_equal(hs_cache_get(&c, "logits")->data, a->logits, sizeof(float) * B * T * V);
    assert_memory_equal(hs_cache_get(&c, "blocks.1.attn.hook_z")->data, a->blocks[1].z,
                        sizeof(float) * B * T * H * dh);
    /* the per-head results sum (+ b_O) to hook_attn_out */
    const hs_cache_entry *res = hs_cache_get(&c, "blocks.1.attn.hook_result");
    const hs_cache_entry *ao = hs_cache_get(&c, "blocks.1.hook_attn_out");
    double worst = 0.0;
    for (int i = 0; i < B * T; i++)
        for (int d = 0; d < D; d++) {
            double s = m->params.blocks[1].b_O[d];
            for (int h = 0; h < H; h++) s += res->data[((size_t)i * H + h) * D + d];
            worst = fmax(worst, fabs(s - ao->data[(size_t)i * D + d]));
        }
    assert_true(worst < 1e-5);

    const char *filters[] = {"blocks.*.attn.hook_pattern", "logits"};
    assert_int_equal(hs_run_with_cache(m, a, TOK_CLEAN, B, T, filters, 2, NULL, &c, &err), HS_OK);
    assert_int_equal(c.n, 3);
    assert_string_equal(c.e[0].name, "blocks.0.attn.hook_pattern");
    assert_string_equal(c.e[2].name, "logits");
    hs_cache_free(&c);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

static void cache_saves_as_safetensors_with_hook_names(void **state)
{
    (void)state;
    hs_error err;
    const char *tmp = getenv("HS_TEST_TMP");
    if (tmp == NULL) tmp = "/tmp";
    char *path = hs_path_join(tmp, "probe_cache.safetensors");
    hs_model *m = random_model(config_variant(1), 12);
    hs_acts *a = NULL;
    assert_int_equal(hs_acts_create(&m->cfg, B, T, 0, &a, &err), HS_OK);
    hs_cache c;
    hs_cache_init(&c);
    assert_int_equal(hs_run_with_cache(m, a, TOK_CLEAN, B, T, NULL, 0, NULL, &c, &err), HS_OK);
    const char *k[] = {"source"}, *v[] = {"test_probe"};
    if (hs_cache_save(&c, path, k, v, 1, &err) != HS_OK) fail_msg("save: %s", err.msg);
    hs_st_file f;
    if (hs_safetensors_read(path, &f, &err) != HS_OK) fail_msg("read: %s", err.msg);
    assert_int_equal(f.n, c.n);
    for (int i = 0; i < c.n; i++) {
        int j = hs_st_find(&f, c.e[i].name);
        assert_true(j >= 0);
        assert_int_equal(f.ndim[j], c.e[i].ndim);
        for (int d = 0; d < c.e[i].ndim; d++) assert_true(f.shape[j][d] == c.e[i].shape[d]);
        assert_int_equal(f.numel[j], c.e[i].numel);
        for (size_t q = 0; q < c.e[i].numel; q++) {
            float want = c.e[i].data[q];
            if (want == -INFINITY) want = -FLT_MAX; /* masked scores */
            if (f.data[j][q] != want) fail_msg("%s[%zu]: %g != %g", c.e[i].name, q, f.data[j][q], want);
        }
    }
    assert_string_equal(hs_st_meta(&f, "source"), "test_probe");
    hs_st_file_free(&f);
    remove(path);
    free(path);
    hs_cache_free(&c);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

/* ------------------------------------------------------------------------ */
/* Residual decomposition and DLA                                            */

static void residual_components_sum_to_the_final_residual(void **state)
{
    (void)state;
    hs_error err;
    for (int k = 0; k < N_VARIANTS; k++) {
        hs_model *m = random_model(config_variant(k), 200 + k);
        const int D = m->cfg.d_model, L = m->cfg.n_layers;
        hs_acts *a = NULL;
        assert_int_equal(hs_acts_create(&m->cfg, B, T, 0, &a, &err), HS_OK);
        hs_cache c;
        hs_cache_init(&c);
        assert_int_equal(hs_run_with_cache(m, a, TOK_CLEAN, B, T, NULL, 0, NULL, &c, &err), HS_OK);
        const hs_cache_entry *rf = hs_cache_getf(&c, "blocks.%d.hook_resid_post", L - 1);
        double worst = 0.0;
        for (int b = 0; b < B; b++)
            for (int p = 0; p < T; p++) {
                hs_resid_stack s;
                if (hs_resid_decompose(m, &c, b, p, &s, &err) != HS_OK) fail_msg("%s", err.msg);
                for (int d = 0; d < D; d++) {
                    double sum = 0.0;
                    for (int i = 0; i < s.n; i++) sum += s.resid[(size_t)i * D + d];
                    worst = fmax(worst, fabs(sum - rf->data[((size_t)b * T + p) * D + d]));
                }
                if (b == 0 && p == 0) {
                    int n_expect = ((m->cfg.embed_norm || m->cfg.pos == HS_POS_NONE) ? 1 : 2) +
                                   L * (m->cfg.n_heads + m->cfg.bias + (m->cfg.d_mlp > 0));
                    assert_int_equal(s.n, n_expect);
                    assert_string_equal(s.labels[0], "embed");
                }
                hs_resid_stack_free(&s);
            }
        printf("  variant %d: max |sum of components - resid_final| = %.2e\n", k, worst);
        assert_true(worst < 1e-4);
        hs_cache_free(&c);
        hs_acts_destroy(a);
        hs_model_destroy(m);
    }
}

static void attributions_sum_to_logit_minus_b_U(void **state)
{
    (void)state;
    hs_error err;
    for (int k = 0; k < N_VARIANTS; k++) {
        hs_model *m = random_model(config_variant(k), 300 + k);
        hs_acts *a = NULL;
        assert_int_equal(hs_acts_create(&m->cfg, B, T, 0, &a, &err), HS_OK);
        hs_cache c;
        hs_cache_init(&c);
        assert_int_equal(hs_run_with_cache(m, a, TOK_CLEAN, B, T, NULL, 0, NULL, &c, &err), HS_OK);
        double worst = 0.0;
        for (int b = 0; b < B; b++)
            for (int p = 0; p < T; p++)
                for (int ta = 0; ta < V; ta += 3) {
                    int tb = (ta * 7 + p) % V == ta ? -1 : (ta * 7 + p) % V;
                    for (int mode = 0; mode < 2; mode++) {
                        hs_dla d;
                        if (hs_logit_attribution(m, &c, b, p, ta, mode ? tb : -1, &d, &err) != HS_OK)
                            fail_msg("%s", err.msg);
                        double sum = d.constant;
                        for (int i = 0; i < d.n; i++) sum += d.attr[i];
                        /* the target from the logits computed here, independently */
                        const float *lg = a->logits + ((size_t)b * T + p) * V;
                        double bu_a = m->params.b_U ? m->params.b_U[ta] : 0.0;
                        double tgt = lg[ta] - bu_a;
                        if (mode && tb >= 0)
                            tgt -= lg[tb] - (m->params.b_U ? m->params.b_U[tb] : 0.0);
                        assert_true(fabs(tgt - d.target) < 1e-6);
                        worst = fmax(worst, fabs(sum - tgt));
                        hs_dla_free(&d);
                    }
                }
        printf("  variant %d: max |sum attr + const - (logit - b_U)| = %.2e\n", k, worst);
        assert_true(worst < 1e-4);
        hs_cache_free(&c);
        hs_acts_destroy(a);
        hs_model_destroy(m);
    }
}

/* ------------------------------------------------------------------------ */
/* Ablation                                                                  */

typedef struct {
    int head;
} zero_result_ctx;

static int zero_result_hook(const char *name, const int64_t *shape, int ndim, float *data,
                            void *ctx)
{
    (void)name;
    (void)ndim;
    const zero_result_ctx *zc = ctx;
    for (int64_t i = 0; i < shape[0] * shape[1]; i++)
        memset(data + (i * shape[2] + zc->head) * shape[3], 0, (size_t)shape[3] * sizeof(float));
    return 1;
}

static void zeroing_hook_z_equals_removing_the_head_result(void **state)
{
    (void)state;
    hs_error err;
    for (int k = 0; k < N_VARIANTS; k++) {
        hs_model *m = random_model(config_variant(k), 400 + k);
        hs_acts *a = NULL;
        assert_int_equal(hs_acts_create(&m->cfg, B, T, 0, &a, &err), HS_OK);
        static float clean[B * T * V], zeroed[B * T * V];
        assert_int_equal(hs_forward(m, a, TOK_CLEAN, B, T, NULL, &err), HS_OK);
        memcpy(clean, a->logits, sizeof clean);
        hs_head hd = {m->cfg.n_layers - 2 >= 0 ? 0 : 0, 1};
        hs_hooks *hk = NULL;
        assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
        assert_int_equal(hs_hooks_add_zero_ablation(hk, m, &hd, 1, &err), HS_OK);
        assert_int_equal(hs_run_with_hooks(m, a, TOK_CLEAN, B, T, hk, &err), HS_OK);
        memcpy(zeroed, a->logits, sizeof zeroed);
        hs_hooks_clear(hk);
        zero_result_ctx zc = {hd.head};
        char nm[64];
        snprintf(nm, sizeof nm, "blocks.%d.attn.hook_result", hd.layer);
        assert_int_equal(hs_hooks_add(hk, nm, zero_result_hook, &zc, &err), HS_OK);
        assert_int_equal(hs_run_with_hooks(m, a, TOK_CLEAN, B, T, hk, &err), HS_OK);
        double d = max_abs_diff(zeroed, a->logits, (size_t)B * T * V);
        double moved = max_abs_diff(zeroed, clean, (size_t)B * T * V);
        printf("  variant %d: |zero z - zero result| %.2e, effect of ablation %.2e\n", k, d, moved);
        assert_true(d < 1e-5);
        assert_true(moved > 1e-3); /* the ablation did something */
        hs_hooks_destroy(hk);
        hs_acts_destroy(a);
        hs_model_destroy(m);
    }
}

typedef struct {
    int layer, head, dh, H;
    const float *mean; /* (T, dh) */
} set_z_ctx;

static int set_z_hook(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name;
    (void)ndim;
    const set_z_ctx *s = ctx;
    for (int64_t b = 0; b < shape[0]; b++)
        for (int64_t p = 0; p < shape[1]; p++)
            memcpy(data + ((b * shape[1] + p) * s->H + s->head) * s->dh, s->mean + p * s->dh,
                   (size_t)s->dh * sizeof(float));
    return 1;
}

static void mean_ablation_equals_hook_z_set_to_the_hand_mean(void **state)
{
    (void)state;
    hs_error err;
    enum { BR = 5 };
    int ref_tok[BR * T];
    rng_state = 99;
    for (int i = 0; i < BR * T; i++) ref_tok[i] = (int)((rnd() + 1.0) * 0.5 * V) % V;
    for (int k = 0; k < N_VARIANTS; k++) {
        hs_model *m = random_model(config_variant(k), 500 + k);
        const int H = m->cfg.n_heads, dh = m->cfg.d_head;
        const hs_head hd = {m->cfg.n_layers - 1, 2};
        hs_acts *a = NULL;
        assert_int_equal(hs_acts_create(&m->cfg, BR, T, 0, &a, &err), HS_OK);
        /* the hand mean, from a plain forward's activations */
        assert_int_equal(hs_forward(m, a, ref_tok, BR, T, NULL, &err), HS_OK);
        float mean[T * 16];
        for (int p = 0; p < T; p++)
            for (int d = 0; d < dh; d++) {
                double s = 0.0;
                for (int b = 0; b < BR; b++)
                    s += a->blocks[hd.layer].z[(((size_t)b * T + p) * H + hd.head) * dh + d];
                mean[p * dh + d] = (float)(s / BR);
            }
        hs_cache ref;
        hs_cache_init(&ref);
        const char *filt[] = {"blocks.*.attn.hook_z"};
        assert_int_equal(hs_run_with_cache(m, a, ref_tok, BR, T, filt, 1, NULL, &ref, &err), HS_OK);
        static float clean[B * T * V], ablated[B * T * V];
        assert_int_equal(hs_forward(m, a, TOK_CLEAN, B, T, NULL, &err), HS_OK);
        memcpy(clean, a->logits, sizeof clean);
        hs_hooks *hk = NULL;
        assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
        assert_int_equal(hs_hooks_add_mean_ablation(hk, m, &ref, &hd, 1, 1, &err), HS_OK);
        hs_cache_free(&ref); /* the means are owned by the hook */
        assert_int_equal(hs_run_with_hooks(m, a, TOK_CLEAN, B, T, hk, &err), HS_OK);
        memcpy(ablated, a->logits, sizeof ablated);
        hs_hooks_clear(hk);
        set_z_ctx sz = {hd.layer, hd.head, dh, H, mean};
        char nm[64];
        snprintf(nm, sizeof nm, "blocks.%d.attn.hook_z", hd.layer);
        assert_int_equal(hs_hooks_add(hk, nm, set_z_hook, &sz, &err), HS_OK);
        assert_int_equal(hs_run_with_hooks(m, a, TOK_CLEAN, B, T, hk, &err), HS_OK);
        double d = max_abs_diff(ablated, a->logits, (size_t)B * T * V);
        double moved = max_abs_diff(ablated, clean, (size_t)B * T * V);
        printf("  variant %d: |mean ablation - hand mean| %.2e, effect %.2e\n", k, d, moved);
        assert_true(d < 1e-6);
        assert_true(moved > 1e-4);
        hs_hooks_destroy(hk);
        hs_acts_destroy(a);
        hs_model_destroy(m);
    }
}

/* ------------------------------------------------------------------------ */
/* Activation patching                                                       */

static void patching_every_activation_restores_the_clean_logits(void **state)
{
    (void)state;
    hs_error err;
    for (int k = 0; k < N_VARIANTS; k++) {
        hs_model *m = random_model(config_variant(k), 600 + k);
        hs_acts *a = NULL;
        assert_int_equal(hs_acts_create(&m->cfg, B, T, 0, &a, &err), HS_OK);
        hs_cache clean;
        hs_cache_init(&clean);
        assert_int_equal(hs_run_with_cache(m, a, TOK_CLEAN, B, T, NULL, 0, NULL, &clean, &err), HS_OK);
        const float *lc = hs_cache_get(&clean, "logits")->data;
        int ta[B] = {0, 1, 2}, tb[B] = {3, 4, 5};
        double ld_clean = hs_logit_diff(lc, B, T, V, -1, ta, tb);
        assert_int_equal(hs_forward(m, a, TOK_CORR, B, T, NULL, &err), HS_OK);
        double ld_corr = hs_logit_diff(a->logits, B, T, V, -1, ta, tb);
        assert_true(fabs(ld_clean - ld_corr) > 1e-3);
        const char *sets[3][4] = {
            {"blocks.0.hook_resid_pre", NULL},
            {"hook_embed", "hook_pos_embed", "blocks.*.attn.hook_z", "blocks.*.hook_mlp_out"},
            {"**", NULL},
        };
        for (int s = 0; s < 3; s++) {
            hs_hooks *hk = NULL;
            assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
            for (int i = 0; i < 4 && sets[s][i]; i++)
                if (hs_hook_spec_matches(&m->cfg, sets[s][i]) > 0) /* e.g. no MLP */
                    assert_int_equal(hs_hooks_add_patch(hk, &clean, sets[s][i], &err), HS_OK);
            if (hs_run_with_hooks(m, a, TOK_CORR, B, T, hk, &err) != HS_OK)
                fail_msg("variant %d set %d: %s", k, s, err.msg);
            double d = max_abs_diff(lc, a->logits, (size_t)B * T * V);
            double metric = hs_patch_metric(hs_logit_diff(a->logits, B, T, V, -1, ta, tb), ld_corr, ld_clean);
            assert_true(d == 0.0);
            assert_true(fabs(metric - 1.0) < 1e-9);
            hs_hooks_destroy(hk);
        }
        /* patching one head only recovers part (not all) of the clean result */
        hs_hooks *hk = NULL;
        assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
        hs_head hd = {0, 0};
        assert_int_equal(hs_hooks_add_patch_head(hk, &clean, hd, T - 1, &err), HS_OK);
        assert_int_equal(hs_run_with_hooks(m, a, TOK_CORR, B, T, hk, &err), HS_OK);
        double metric = hs_patch_metric(hs_logit_diff(a->logits, B, T, V, -1, ta, tb), ld_corr, ld_clean);
        assert_true(fabs(metric - 1.0) > 1e-4);
        hs_hooks_destroy(hk);
        /* a patch whose clean entry is missing aborts the run */
        hs_cache small;
        hs_cache_init(&small);
        const char *f[] = {"logits"};
        assert_int_equal(hs_run_with_cache(m, a, TOK_CLEAN, B, T, f, 1, NULL, &small, &err), HS_OK);
        assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
        assert_int_equal(hs_hooks_add_patch(hk, &small, "blocks.0.hook_resid_pre", &err), HS_OK);
        assert_int_equal(hs_run_with_hooks(m, a, TOK_CORR, B, T, hk, &err), HS_ERR_CALLBACK);
        hs_hooks_destroy(hk);
        hs_cache_free(&small);
        hs_cache_free(&clean);
        hs_acts_destroy(a);
        hs_model_destroy(m);
    }
}

/* The hand-built model: V = D = 4, one attention-only layer, no norms, no
 * biases, no positions; W_E = W_U = I; both heads W_Q = W_K = 0 (uniform
 * causal attention), W_V = I; W_O = I for head 0 and 3 I for head 1. So
 * logits[p] = e(tok_p) + (1 + 3) * mean_{j<=p} e(tok_j).
 * Clean [2, 0], corrupted [2, 1]; LD = logit[1, 0] - logit[1, 1].
 *   clean: (1 + 0.5 + 1.5) - 0 = 3;  corrupted: 0 - 3 = -3.
 *   patch head 1 at pos 1: logits e1 + 0.5 (e2+e1) + 1.5 (e2+e0): LD = 1.5 - 1.5 = 0,
 *     metric (0 + 3) / 6 = 1/2;
 *   patch head 0 at pos 1: e1 + 0.5 (e2+e0) + 1.5 (e2+e1): LD = 0.5 - 2.5 = -2, metric 1/6;
 *   patch head 1 at pos 0: nothing differs there: metric 0. */
static void patching_one_head_gives_the_hand_computed_metric(void **state)
{
    (void)state;
    hs_error err;
    hs_config cfg = hs_config_default();
    cfg.n_layers = 1;
    cfg.d_model = 4;
    cfg.n_heads = 2;
    cfg.d_head = 4;
    cfg.d_mlp = 0;
    cfg.n_ctx = 2;
    cfg.d_vocab = 4;
    cfg.norm = HS_NORM_NONE;
    cfg.ln_final = 0;
    cfg.ln1 = 0;
    cfg.pos = HS_POS_NONE;
    cfg.bias = 0;
    hs_model *m = NULL;
    assert_int_equal(hs_model_create(&cfg, &m, &err), HS_OK);
    memset(m->param_mem, 0, m->n_params * sizeof(float));
    hs_params *P = &m->params;
    for (int i = 0; i < 4; i++) {
        P->W_E[i * 4 + i] = 1.0f;
        P->W_U[i * 4 + i] = 1.0f;
        for (int h = 0; h < 2; h++) {
            P->blocks[0].W_V[h * 16 + i * 4 + i] = 1.0f;
            P->blocks[0].W_O[h * 16 + i * 4 + i] = h == 0 ? 1.0f : 3.0f;
        }
    }
    hs_acts *a = NULL;
    assert_int_equal(hs_acts_create(&m->cfg, 1, 2, 0, &a, &err), HS_OK);
    const int clean_tok[2] = {2, 0}, corr_tok[2] = {2, 1}, ta = 0, tb = 1;
    hs_cache clean;
    hs_cache_init(&clean);
    assert_int_equal(hs_run_with_cache(m, a, clean_tok, 1, 2, NULL, 0, NULL, &clean, &err), HS_OK);
    double ld_clean = hs_logit_diff(a->logits, 1, 2, 4, 1, &ta, &tb);
    assert_true(fabs(ld_clean - 3.0) < 1e-6);
    assert_int_equal(hs_forward(m, a, corr_tok, 1, 2, NULL, &err), HS_OK);
    double ld_corr = hs_logit_diff(a->logits, 1, 2, 4, -1, &ta, &tb);
    assert_true(fabs(ld_corr + 3.0) < 1e-6);
    const struct { hs_head h; int pos; double metric; } cases[] = {
        {{0, 1}, 1, 0.5}, {{0, 0}, 1, 1.0 / 6.0}, {{0, 1}, 0, 0.0}, {{0, 1}, -1, 0.5}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hs_hooks *hk = NULL;
        assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
        assert_int_equal(hs_hooks_add_patch_head(hk, &clean, cases[i].h, cases[i].pos, &err), HS_OK);
        assert_int_equal(hs_run_with_hooks(m, a, corr_tok, 1, 2, hk, &err), HS_OK);
        double mt = hs_patch_metric(hs_logit_diff(a->logits, 1, 2, 4, -1, &ta, &tb), ld_corr, ld_clean);
        printf("  patch L0H%d pos %d: metric %.6f (hand %.6f)\n", cases[i].h.head, cases[i].pos, mt,
               cases[i].metric);
        assert_true(fabs(mt - cases[i].metric) < 1e-6);
        hs_hooks_destroy(hk);
    }
    /* direct logit attribution on the same model: head 1 at pos 1 (clean) moves
     * LD by 1.5 (e2+e0).(e0-e1) = 1.5 */
    hs_dla d;
    assert_int_equal(hs_logit_attribution(m, &clean, 0, 1, ta, tb, &d, &err), HS_OK);
    assert_int_equal(d.n, 3);
    assert_string_equal(d.labels[2], "L0H1");
    assert_true(fabs(d.attr[2] - 1.5) < 1e-6 && fabs(d.attr[1] - 0.5) < 1e-6 &&
                fabs(d.attr[0] - 1.0) < 1e-6);
    hs_dla_free(&d);
    hs_cache_free(&clean);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

/* ------------------------------------------------------------------------ */
/* Path patching                                                             */

static void path_patching_differs_from_activation_patching_by_the_direct_path(void **state)
{
    (void)state;
    hs_error err;
    hs_config cfg = hs_config_default();
    cfg.d_model = 16;
    cfg.n_heads = 1;
    cfg.d_head = 4;
    cfg.d_mlp = 0;
    cfg.ln_final = 0;
    hs_model *m = random_model(cfg, 700);
    const int D = m->cfg.d_model, dh = m->cfg.d_head;
    hs_acts *a = NULL;
    assert_int_equal(hs_acts_create(&m->cfg, B, T, 0, &a, &err), HS_OK);
    hs_cache clean, corr;
    hs_cache_init(&clean);
    hs_cache_init(&corr);
    assert_int_equal(hs_run_with_cache(m, a, TOK_CLEAN, B, T, NULL, 0, NULL, &clean, &err), HS_OK);
    assert_int_equal(hs_run_with_cache(m, a, TOK_CORR, B, T, NULL, 0, NULL, &corr, &err), HS_OK);
    static float ap[B * T * V], pp[B * T * V];
    hs_head snd = {0, 0}, rcv = {1, 0};
    hs_hooks *hk = NULL;
    assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
    assert_int_equal(hs_hooks_add_patch_head(hk, &clean, snd, -1, &err), HS_OK);
    assert_int_equal(hs_run_with_hooks(m, a, TOK_CORR, B, T, hk, &err), HS_OK);
    memcpy(ap, a->logits, sizeof ap);
    hs_hooks_clear(hk);
    assert_int_equal(hs_hooks_add_path_patch(hk, m, &clean, &corr, snd, rcv,
                                             HS_INPUT_Q | HS_INPUT_K | HS_INPUT_V, HS_LN_RECOMPUTE, &err),
                     HS_OK);
    assert_int_equal(hs_run_with_hooks(m, a, TOK_CORR, B, T, hk, &err), HS_OK);
    memcpy(pp, a->logits, sizeof pp);
    /* ap - pp = Delta W_U, Delta = (z_clean - z_corr) W_O of the sender */
    const float *zc = hs_cache_get(&clean, "blocks.0.attn.hook_z")->data;
    const float *zr = hs_cache_get(&corr, "blocks.0.attn.hook_z")->data;
    double worst = 0.0, moved = 0.0;
    for (int i = 0; i < B * T; i++)
        for (int v = 0; v < V; v++) {
            double s = 0.0;
            for (int d = 0; d < D; d++) {
                double delta = 0.0;
                for (int e = 0; e < dh; e++)
                    delta += ((double)zc[i * dh + e] - zr[i * dh + e]) * m->params.blocks[0].W_O[e * D + d];
                s += delta * m->params.W_U[d * V + v];
            }
            worst = fmax(worst, fabs((ap[i * V + v] - pp[i * V + v]) - s));
            moved = fmax(moved, fabs(pp[i * V + v] - hs_cache_get(&corr, "logits")->data[i * V + v]));
        }
    printf("  |(AP - PP) - Delta W_U| = %.2e; path patch moved logits by %.2e\n", worst, moved);
    assert_true(worst < 1e-4);
    assert_true(moved > 1e-3);
    /* identical clean and corrupted runs: path patching changes nothing */
    hs_hooks_clear(hk);
    assert_int_equal(hs_hooks_add_path_patch(hk, m, &corr, &corr, snd, rcv, HS_INPUT_Q | HS_INPUT_V,
                                             HS_LN_RECOMPUTE, &err), HS_OK);
    assert_int_equal(hs_hooks_add_path_patch(hk, m, &corr, &corr, snd, rcv, HS_INPUT_K,
                                             HS_LN_FROZEN, &err), HS_OK);
    assert_int_equal(hs_run_with_hooks(m, a, TOK_CORR, B, T, hk, &err), HS_OK);
    assert_true(max_abs_diff(a->logits, hs_cache_get(&corr, "logits")->data, (size_t)B * T * V) < 1e-5);
    /* frozen LN is close to recomputed LN (small change to the receiver's input) */
    hs_hooks_clear(hk);
    /* receiver before sender is refused */
    assert_int_equal(hs_hooks_add_path_patch(hk, m, &clean, &corr, rcv, snd, HS_INPUT_Q,
                                             HS_LN_RECOMPUTE, &err), HS_ERR_INPUT);
    hs_hooks_destroy(hk);
    hs_cache_free(&clean);
    hs_cache_free(&corr);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

static void logit_diff_and_metric_follow_their_definitions(void **state)
{
    (void)state;
    float lg[2 * 2 * 3] = {0, 0, 0, 1, 5, 2, 0, 0, 0, 3, -1, 4};
    int a[2] = {1, 2}, b[2] = {0, 1};
    /* pos -1 = 1: row0 5-1 = 4, row1 4-(-1) = 5 -> 4.5 */
    assert_true(fabs(hs_logit_diff(lg, 2, 2, 3, -1, a, b) - 4.5) < 1e-12);
    assert_true(fabs(hs_logit_diff(lg, 2, 2, 3, 1, a, b) - 4.5) < 1e-12);
    assert_true(fabs(hs_logit_diff(lg, 2, 2, 3, 0, a, b)) < 1e-12);
    assert_true(isnan(hs_logit_diff(lg, 2, 2, 3, 2, a, b)));
    assert_true(fabs(hs_patch_metric(1.0, -1.0, 3.0) - 0.5) < 1e-12);
    assert_true(isnan(hs_patch_metric(1.0, 2.0, 2.0)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(name_patterns_match_segments_and_any_runs),
        cmocka_unit_test(identity_hooks_leave_logits_bit_identical),
        cmocka_unit_test(a_hook_can_abort_the_forward),
        cmocka_unit_test(cache_keeps_every_point_with_its_shape_and_filters),
        cmocka_unit_test(cache_saves_as_safetensors_with_hook_names),
        cmocka_unit_test(residual_components_sum_to_the_final_residual),
        cmocka_unit_test(attributions_sum_to_logit_minus_b_U),
        cmocka_unit_test(zeroing_hook_z_equals_removing_the_head_result),
        cmocka_unit_test(mean_ablation_equals_hook_z_set_to_the_hand_mean),
        cmocka_unit_test(patching_every_activation_restores_the_clean_logits),
        cmocka_unit_test(patching_one_head_gives_the_hand_computed_metric),
        cmocka_unit_test(path_patching_differs_from_activation_patching_by_the_direct_path),
        cmocka_unit_test(logit_diff_and_metric_follow_their_definitions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
