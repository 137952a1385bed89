/*
 * tests/test_cache_reuse.c -- repeated runs on one cache and one set of
 * activations reuse their buffers (the previous run's cache entries, the
 * split inputs' scratch kept in hs_acts) without carrying anything over:
 * every entry of a run on a reused cache equals, bit for bit, the same run
 * on a fresh cache and fresh activations, also when the second run has
 * other tokens, fewer positions (entries of other sizes) or other filters.
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

static hs_model *make_model(void)
{
    hs_config c = hs_config_default();
    c.n_ctx = 12;
    c.d_vocab = 23;
    c.seed = 7;
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
    hs_model *m = make_model();
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
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        run(m, a, runs[r].tok, runs[r].t, runs[r].f, runs[r].nf, &reused);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reused_buffers_give_the_fresh_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
