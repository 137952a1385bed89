/*
 * tests/test_circuit_means.c -- the circuit check's mean-ablation reference
 * (circuits/circuit_means.c, hs_circ_means) against hs_engine_means on the
 * same engine: the same entries, shapes and bits, for groups cut at the
 * adjective (the check's s_diff, 11) and at other positions, one and two
 * threads. The model is the committed trained checkpoint
 * tests/checkpoint/circuit_tiny.safetensors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "circuits/circuits.h"
#include "circuits/circuits_internal.h"
#include "model/checkpoint.h"
#include "model/suffix.h"
#include "tasks/tasks.h"

static hs_model *g_m;
static hs_winograd *g_t;

static int group_setup(void **state)
{
    (void)state;
    hs_error err = {0};
    if (hs_winograd_create(HS_TASK_WINOGRAD, 0, NULL, &g_t, &err) != HS_OK) return -1;
    if (hs_checkpoint_load("checkpoint/circuit_tiny.safetensors", &g_m, NULL, NULL, &err) != HS_OK) {
        fprintf(stderr, "checkpoint/circuit_tiny.safetensors: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    hs_model_destroy(g_m);
    hs_winograd_destroy(g_t);
    return 0;
}

/* The means both ways on one engine of `threads` workers, groups cut at s. */
static void compare_at(int threads, int s)
{
    hs_error err = {0};
    hs_circ_ctx c;
    memset(&c, 0, sizeof c);
    c.m = g_m;
    c.t = g_t;
    c.L = g_m->cfg.n_layers;
    c.H = g_m->cfg.n_heads;
    c.D = g_m->cfg.d_model;
    c.V = g_m->cfg.d_vocab;
    c.s_diff = s;
    assert_int_equal(hs_pool_create(threads, &c.pool, &err), HS_OK);
    assert_int_equal(hs_engine_init(&c.eng, g_m, c.pool, HS_CIRC_T, &err), HS_OK);
    c.eng.whole_chunks = 1; /* as the check's engine (circuit.c, workers_init) */
    for (int i = 0; i < c.eng.n_workers; i++) c.eng.w[i].acts->logit_pos = HS_LOGITS_NONE;
    assert_true(hs_circ_means_ok(&c));
    size_t n;
    const hs_wg_example *tr = hs_winograd_examples(g_t, HS_SPLIT_TRAIN, &n);
    assert_true(n > 100);
    int *tok = malloc(n * HS_CIRC_T * sizeof(int));
    assert_non_null(tok);
    for (size_t i = 0; i < n; i++) memcpy(tok + i * HS_CIRC_T, tr[i].tokens, HS_CIRC_T * sizeof(int));
    static const char *const filt[] = {"blocks.*.attn.hook_z", "blocks.*.hook_mlp_out"};
    hs_cache ref = {0};
    assert_int_equal(hs_engine_means(&c.eng, tok, n, filt, 2, &ref, &err), HS_OK);
    assert_int_equal(hs_circ_means(&c, tok, n, &err), HS_OK);
    assert_int_equal(c.means.n, 2 * c.L);
    assert_int_equal(c.means.n, ref.n);
    for (int i = 0; i < ref.n; i++) {
        const hs_cache_entry *a = &c.means.e[i], *b = &ref.e[i];
        assert_string_equal(a->name, b->name);
        assert_int_equal(a->ndim, b->ndim);
        assert_memory_equal(a->shape, b->shape, sizeof a->shape);
        assert_int_equal(a->shape[0], 1);
        assert_int_equal(a->numel, b->numel);
        double mass = 0.0;
        for (size_t k = 0; k < a->numel; k++) {
            if (memcmp(&a->data[k], &b->data[k], sizeof(float)) != 0)
                fail_msg("s %d, %d threads: %s[%zu] = %.9g, hs_engine_means %.9g", s, threads, a->name, k,
                         (double)a->data[k], (double)b->data[k]);
            mass += a->data[k] < 0 ? -a->data[k] : a->data[k];
        }
        assert_true(mass > 1e-3); /* real activations, not zeros on both sides */
    }
    hs_cache_free(&ref);
    hs_cache_free(&c.means);
    hs_engine_free(&c.eng);
    hs_pool_destroy(c.pool);
    free(tok);
}

static void means_equal_engine_means_at_the_adjective(void **state)
{
    (void)state;
    compare_at(2, 11);
    compare_at(1, 11);
}

/* hs_suffix_embed: W_E[tok] + W_pos[p] at p in [s, t), rows before s untouched; a token
 * outside the vocabulary refused */
static void suffix_embed_rows(void **state)
{
    (void)state;
    const int D = g_m->cfg.d_model, tok[3] = {1, 2, 3};
    float *x = calloc((size_t)3 * D, sizeof *x);
    assert_non_null(x);
    x[0] = 7.0f;
    hs_error err = {0};
    assert_int_equal(hs_suffix_embed(g_m, tok, 1, 3, x, &err), HS_OK);
    assert_true(x[0] == 7.0f);
    for (int p = 1; p < 3; p++)
        for (int i = 0; i < D; i++)
            assert_true(x[p * D + i] == g_m->params.W_E[tok[p] * D + i] + g_m->params.W_pos[p * D + i]);
    const int bad[2] = {0, g_m->cfg.d_vocab};
    assert_int_equal(hs_suffix_embed(g_m, bad, 0, 2, x, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "is not in"));
    free(x);
}

static void means_equal_engine_means_for_other_cuts(void **state)
{
    (void)state;
    compare_at(2, 1);  /* one group: every row but the first runs from position 1 */
    compare_at(2, 5);  /* groups of a first noun */
    compare_at(2, 14); /* one sentence a group: nothing runs from s */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(means_equal_engine_means_at_the_adjective),
        cmocka_unit_test(means_equal_engine_means_for_other_cuts),
        cmocka_unit_test(suffix_embed_rows),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
