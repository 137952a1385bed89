/*
 * tests/test_cache_reuse.c -- repeated runs on one cache and one set of
 * activations reuse their buffers (the previous run's cache entries, the
 * split inputs' scratch kept in hs_acts) without carrying anything over:
 * every entry of a run on a reused cache equals, bit for bit, the same run
 * on a fresh cache and fresh activations, also when the second run has
 * other tokens, fewer positions (entries of other sizes) or other filters.
 * The patterns a cache takes (written in its entries, not in the
 * activations: hs_acts.att_elsewhere) are computed again for the backward,
 * with the same bits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/model.h"
#include "probe/probe.h"

/* The default config's model at n_ctx positions, 23 tokens, seeded. */
static hs_model *make_model(int n_ctx, uint64_t seed)
{
    hs_config c = hs_config_default();
    c.n_ctx = n_ctx;
    c.d_vocab = 23;
    c.seed = seed;
    hs_model *m = NULL;
    hs_error err;
    assert_int_equal(hs_model_create(&c, &m, &err), HS_OK);
    hs_model_init(m);
    return m;
}

static void same_cache(const hs_cache *a, const hs_cache *b)
{
    assert_int_equal(a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        assert_string_equal(a->e[i].name, b->e[i].name);
        assert_int_equal(a->e[i].numel, b->e[i].numel);
        if (memcmp(a->e[i].data, b->e[i].data, a->e[i].numel * sizeof(float)) != 0)
            fail_msg("%s differs", a->e[i].name);
    }
}

static void run(const hs_model *m, hs_acts *a, const int *tok, int t, const char *const *f, int nf,
                hs_cache *c)
{
    hs_error err;
    if (hs_run_with_cache(m, a, tok, 1, t, f, nf, NULL, c, &err) != HS_OK) fail_msg("%s", err.msg);
}

static void reused_buffers_give_the_fresh_values(void **state)
{
    (void)state;
    hs_model *m = make_model(12, 7);
    hs_error err;
    hs_acts *a = NULL;
    assert_int_equal(hs_acts_create(&m->cfg, 1, 12, 0, &a, &err), HS_OK);
    int t1[12], t2[12];
    for (int i = 0; i < 12; i++) {
        t1[i] = (i * 5 + 1) % 23;
        t2[i] = (i * 11 + 4) % 23;
    }
    static const char *const split[] = {"blocks.*.hook_q_input", "blocks.*.hook_v_input",
                                        "blocks.*.attn.hook_pattern", "logits"};
    hs_cache reused;
    hs_cache_init(&reused);
    /* every point, then the split inputs at other tokens, then fewer positions */
    const struct { const int *tok; int t; const char *const *f; int nf; } runs[] = {
        {t1, 12, NULL, 0}, {t2, 12, NULL, 0}, {t1, 12, split, 4}, {t2, 7, split, 4}, {t1, 12, NULL, 0},
    };
    const float *first[512];
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        run(m, a, runs[r].tok, runs[r].t, runs[r].f, runs[r].nf, &reused);
        /* the second run (the same points and sizes) writes every entry
         * into the first run's buffer, those written in place by the
         * forward (scores, patterns, split inputs) too */
        assert_true(reused.n <= 512);
        for (int i = 0; i < reused.n && r < 2; i++) {
            if (r == 0) first[i] = reused.e[i].data;
            else if (reused.e[i].data != first[i])
                fail_msg("%s: a new buffer, not the previous run's", reused.e[i].name);
        }
        hs_acts *fa = NULL;
        assert_int_equal(hs_acts_create(&m->cfg, 1, 12, 0, &fa, &err), HS_OK);
        hs_cache fresh;
        hs_cache_init(&fresh);
        run(m, fa, runs[r].tok, runs[r].t, runs[r].f, runs[r].nf, &fresh);
        same_cache(&reused, &fresh);
        hs_cache_free(&fresh);
        hs_acts_destroy(fa);
    }
    assert_non_null(a->split_mem); /* kept from the split-input runs */
    hs_cache_free(&reused);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

/* d f / d q of layer 0 into ctx (a float buffer of its size). */
static int keep_dq(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    if (ctx == NULL || strcmp(name, "blocks.0.attn.hook_q") != 0) return 0;
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    memcpy(ctx, data, n * sizeof(float));
    return 0;
}

static void taken_patterns_are_computed_again_for_the_backward(void **state)
{
    (void)state;
    hs_model *m = make_model(12, 7);
    const hs_config *c = &m->cfg;
    hs_error err;
    hs_acts *a = NULL, *b = NULL;
    assert_int_equal(hs_acts_create(c, 1, 12, 1, &a, &err), HS_OK);
    assert_int_equal(hs_acts_create(c, 1, 12, 1, &b, &err), HS_OK);
    int tok[12];
    float dl[12 * 23];
    for (int i = 0; i < 12; i++) tok[i] = (i * 7 + 2) % 23;
    for (int i = 0; i < 12 * 23; i++) dl[i] = (float)((i * 13) % 17) / 17.0f - 0.5f;
    hs_cache cache;
    hs_cache_init(&cache);
    run(m, a, tok, 12, NULL, 0, &cache);
    const size_t np = (size_t)c->n_heads * 12 * 12, nq = (size_t)12 * c->n_heads * c->d_head;
    for (int l = 0; l < c->n_layers; l++) {
        assert_int_equal(a->att_elsewhere[l], 1); /* the cache's entry, not a second copy */
        memset(a->blocks[l].att, 0x7f, np * sizeof(float)); /* stale: anything */
    }
    /* the same forward keeping its patterns (an observer without buffers) */
    const hs_observer none = {keep_dq, NULL, NULL};
    assert_int_equal(hs_forward(m, b, tok, 1, 12, &none, &err), HS_OK);
    float *ga = calloc(nq, sizeof(float)), *gb = calloc(nq, sizeof(float));
    assert_non_null(ga);
    assert_non_null(gb);
    const hs_observer oa = {keep_dq, NULL, ga}, ob = {keep_dq, NULL, gb};
    assert_int_equal(hs_backward_acts(m, a, dl, &oa, &err), HS_OK);
    assert_int_equal(hs_backward_acts(m, b, dl, &ob, &err), HS_OK);
    assert_memory_equal(ga, gb, nq * sizeof(float));
    for (int l = 0; l < c->n_layers; l++) {
        const hs_cache_entry *e = hs_cache_getf(&cache, "blocks.%d.attn.hook_pattern", l);
        assert_non_null(e);
        assert_int_equal(a->att_elsewhere[l], 0);
        assert_memory_equal(a->blocks[l].att, e->data, np * sizeof(float));
        assert_memory_equal(b->blocks[l].att, e->data, np * sizeof(float));
    }
    free(ga);
    free(gb);
    hs_cache_free(&cache);
    hs_acts_destroy(a);
    hs_acts_destroy(b);
    hs_model_destroy(m);
}

static int read_only(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name, (void)shape, (void)ndim, (void)data, (void)ctx;
    return 0;
}

/* At T >= 64 a cache that only keeps the scores and the patterns gets them
 * from the attention's causal blocks, written with streaming stores while a
 * block is in cache (model/attention.c attn_causal_bg; acts->scores then
 * holds a block's scratch); a hook at hook_pattern, or at
 * hook_attn_scores, keeps the whole tiles (acts->scores untouched, the
 * scores in the cache's entry). Every entry has the same bits either way,
 * on one thread and on two, at T a multiple of 64 and T % 64 past 16, and
 * with --names keeping the patterns alone. */
static void kept_scores_and_patterns_in_causal_blocks_equal_the_whole_tiles(void **state)
{
    (void)state;
    hs_model *m = make_model(100, 11);
    hs_error err;
    int tok[100];
    for (int i = 0; i < 100; i++) tok[i] = (i * 7 + 2) % 23;
    static const char *const points[2] = {"blocks.*.attn.hook_pattern", "blocks.*.attn.hook_attn_scores"};
    static const char *const only_pattern[1] = {"blocks.*.attn.hook_pattern"};
    static const int Ts[2] = {64, 100};
    for (int threads = 1; threads <= 2; threads++)
        for (int k = 0; k < 2; k++) {
            const int T = Ts[k];
            const size_t ns = (size_t)m->cfg.n_heads * T * T;
            hs_acts *a = NULL;
            assert_int_equal(hs_acts_create(&m->cfg, 1, T, 0, &a, &err), HS_OK);
            assert_int_equal(hs_acts_set_threads(a, threads, &err), HS_OK);
            for (int f = 0; f < 2; f++) {
                hs_cache kept, whole;
                hs_cache_init(&kept);
                hs_cache_init(&whole);
                const char *const *filt = f ? only_pattern : NULL;
                memset(a->scores, 0x7f, ns * sizeof(float));
                if (hs_run_with_cache(m, a, tok, 1, T, filt, f, NULL, &kept, &err) != HS_OK)
                    fail_msg("%s", err.msg);
                size_t blocks = 0;
                for (size_t i = 0; i < ns; i++) blocks += a->scores[i] != a->scores[ns - 1];
                if (blocks == 0) fail_msg("T %d: no causal block wrote acts->scores", T);
                for (int p = 0; p < 2; p++) {
                    hs_hooks *hk = NULL;
                    assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
                    assert_int_equal(hs_hooks_add(hk, points[p], read_only, NULL, &err), HS_OK);
                    memset(a->scores, 0x7f, ns * sizeof(float));
                    if (hs_run_with_cache(m, a, tok, 1, T, filt, f, hk, &whole, &err) != HS_OK)
                        fail_msg("%s", err.msg);
                    for (size_t i = 0; i < ns; i++)
                        if (a->scores[i] != a->scores[0] && f == 0)
                            fail_msg("T %d: hooked at %s, acts->scores written", T, points[p]);
                    same_cache(&kept, &whole);
                    hs_hooks_destroy(hk);
                }
                hs_cache_free(&kept);
                hs_cache_free(&whole);
            }
            hs_acts_destroy(a);
        }
    hs_model_destroy(m);
}

/* Doubles every value of the point it sits at. */
static int doubles(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name, (void)ctx;
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    for (size_t i = 0; i < n; i++) data[i] *= 2.0f;
    return 1;
}

/* A cache that only keeps the points gets mlp pre/post, attn_out +
 * resid_mid, mlp_out + resid_post, the norms' scale + normalized and
 * resid_pre from the passes that make them (streamed, hs_hook_keeps); a
 * read-only hook at one of them takes the point-by-point path (the values
 * copied into the cache's buffer): every entry has the same bits either
 * way, on one thread and two. An editing hook there (the point doubled)
 * gives the logits of hs_run_with_hooks with the same hook, and the cache
 * holds the edited values. */
static void points_kept_from_their_passes_equal_the_hooked_path(void **state)
{
    (void)state;
    const int T = 100;
    hs_model *m = make_model(T, 13);
    hs_error err;
    int tok[100];
    for (int i = 0; i < T; i++) tok[i] = (i * 5 + 3) % 23;
    static const char *const points[] = {
        "blocks.*.mlp.hook_pre", "blocks.*.mlp.hook_post", "blocks.*.hook_attn_out",
        "blocks.*.hook_resid_mid", "blocks.*.hook_mlp_out", "blocks.*.hook_resid_post",
        "blocks.*.hook_resid_pre", "blocks.*.ln1.hook_scale", "blocks.*.ln2.hook_normalized",
        "ln_final.hook_normalized"};
    const int np = (int)(sizeof points / sizeof points[0]);
    const size_t nl = (size_t)T * m->cfg.d_vocab;
    float *lg = malloc(nl * sizeof(float));
    assert_non_null(lg);
    for (int threads = 1; threads <= 2; threads++) {
        hs_acts *a = NULL;
        assert_int_equal(hs_acts_create(&m->cfg, 1, T, 0, &a, &err), HS_OK);
        assert_int_equal(hs_acts_set_threads(a, threads, &err), HS_OK);
        hs_cache kept, hooked;
        hs_cache_init(&kept);
        hs_cache_init(&hooked);
        run(m, a, tok, T, NULL, 0, &kept);
        for (int p = 0; p < np; p++) {
            for (int edit = 0; edit < 2; edit++) {
                hs_hooks *hk = NULL;
                assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
                assert_int_equal(hs_hooks_add(hk, points[p], edit ? doubles : read_only, NULL, &err), HS_OK);
                if (hs_run_with_cache(m, a, tok, 1, T, NULL, 0, hk, &hooked, &err) != HS_OK)
                    fail_msg("%s", err.msg);
                if (!edit) {
                    same_cache(&kept, &hooked);
                } else {
                    memcpy(lg, a->logits, nl * sizeof(float));
                    const hs_cache_entry *e = hs_cache_get(&hooked, "blocks.0.hook_resid_post");
                    assert_non_null(e);
                    const hs_cache_entry *k0 = hs_cache_get(&kept, "blocks.0.hook_resid_post");
                    if (memcmp(e->data, k0->data, e->numel * sizeof(float)) == 0 &&
                        strcmp(points[p], "ln_final.hook_normalized") != 0)
                        fail_msg("doubling %s changed nothing", points[p]);
                    if (hs_run_with_hooks(m, a, tok, 1, T, hk, &err) != HS_OK) fail_msg("%s", err.msg);
                    if (memcmp(lg, a->logits, nl * sizeof(float)) != 0)
                        fail_msg("doubling %s: the cached run's logits differ from the hooked run's", points[p]);
                }
                hs_hooks_destroy(hk);
            }
        }
        hs_cache_free(&kept);
        hs_cache_free(&hooked);
        hs_acts_destroy(a);
    }
    free(lg);
    hs_model_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reused_buffers_give_the_fresh_values),
        cmocka_unit_test(taken_patterns_are_computed_again_for_the_backward),
        cmocka_unit_test(kept_scores_and_patterns_in_causal_blocks_equal_the_whole_tiles),
        cmocka_unit_test(points_kept_from_their_passes_equal_the_hooked_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
