/*
 * tests/test_tasks_score.c -- Winograd scoring (tasks/score.c) against models
 * and observers whose predictions are known, and against an independent
 * one-sentence-at-a-time forward.
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

#include "tasks/tasks.h"

#define assert_msg_contains(err, sub)                                                      \
    do {                                                                                   \
        if (strstr((err).msg, (sub)) == NULL)                                              \
            fail_msg("message \"%s\" does not contain \"%s\"", (err).msg, (sub));          \
    } while (0)

static hs_config small_config(void)
{
    hs_config c = hs_config_default();
    c.n_layers = 1;
    c.d_model = 16;
    c.n_heads = 2;
    c.d_head = 8;
    c.d_mlp = 32;
    c.n_ctx = HS_WG_LEN;
    c.d_vocab = 36;
    c.seed = 3;
    return c;
}

static hs_model *make_model(const hs_config *c)
{
    hs_model *m = NULL;
    hs_error err = {0};
    if (hs_model_create(c, &m, &err) != HS_OK) fail_msg("hs_model_create: %s", err.msg);
    return m;
}

static hs_winograd *make_task(void)
{
    hs_winograd *t = NULL;
    hs_error err = {0};
    if (hs_winograd_create(HS_TASK_WINOGRAD, 0, NULL, &t, &err) != HS_OK) fail_msg("%s", err.msg);
    return t;
}

/* All parameters zero, b_U one-hot on "animal": every prediction is "animal". */
static void constant_prediction_counts_match_the_examples(void **state)
{
    (void)state;
    hs_config c = small_config();
    hs_model *m = make_model(&c);
    hs_winograd *t = make_task();
    int animal = hs_tok_id(t->vocab, "animal");
    assert_non_null(m->params.b_U);
    m->params.b_U[animal] = 1.0f;
    for (int s = 0; s < 2; s++) {
        size_t n;
        const hs_wg_example *ex = hs_winograd_examples(t, (hs_wg_split)s, &n);
        hs_wg_score sc;
        hs_error err = {0};
        int *pred = malloc(n * sizeof *pred);
        assert_non_null(pred);
        if (hs_winograd_score_examples(m, t, ex, n, NULL, pred, &sc, &err) != HS_OK)
            fail_msg("%s", err.msg);
        size_t want_ok = 0, want_other = 0, want_ok_role[2] = {0}, want_ok_adj[8] = {0};
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(pred[i], animal);
            want_ok += ex[i].ref_id == animal;
            want_other += ex[i].other_id == animal;
            want_ok_role[ex[i].role] += ex[i].ref_id == animal;
            want_ok_adj[ex[i].adj] += ex[i].ref_id == animal;
        }
        assert_int_equal(sc.n, n);
        assert_int_equal(sc.correct, want_ok);
        assert_int_equal(sc.other, want_other);
        assert_int_equal(sc.correct_role[0], want_ok_role[0]);
        assert_int_equal(sc.correct_role[1], want_ok_role[1]);
        for (int a = 0; a < 8; a++) assert_int_equal(sc.correct_adj[a], want_ok_adj[a]);
        if (s == HS_SPLIT_TRAIN) {
            /* animal is x in 15 pairs and y in 15 pairs of 240; training has most of them */
            assert_true(want_ok > 0 && want_other > 0);
        }
        /* hs_winograd_score agrees with score_examples on the same split */
        hs_wg_score sc2;
        assert_int_equal(hs_winograd_score(m, t, (hs_wg_split)s, NULL, &sc2, &err), HS_OK);
        assert_memory_equal(&sc, &sc2, sizeof sc);
        free(pred);
    }
    hs_model_destroy(m);
    hs_winograd_destroy(t);
}

/* An observer that makes the prediction at 14 the first noun (x) of each
 * sentence: then every crosser sentence is right, every crossed one names the
 * other noun. Rows are matched to examples by counting the rows seen, which
 * also checks that batches are scored in order. */
typedef struct {
    const hs_wg_example *ex;
    size_t n, seen;
    int nan_at; /* position to poison with NaN, or -1 */
} predict_x_ctx;

static int predict_x(const char *name, const int64_t *shape, int ndim, float *data, void *vctx)
{
    predict_x_ctx *ctx = vctx;
    if (strcmp(name, "logits") != 0) return 0;
    assert_int_equal(ndim, 3);
    assert_int_equal(shape[1], HS_WG_LEN);
    size_t B = (size_t)shape[0], V = (size_t)shape[2];
    for (size_t b = 0; b < B; b++) {
        assert_true(ctx->seen + b < ctx->n);
        float *row = data + (b * HS_WG_LEN + HS_WG_POS_QUERY) * V;
        for (size_t v = 0; v < V; v++) row[v] = 0.0f;
        row[ctx->ex[ctx->seen + b].tokens[HS_WG_POS_X]] = 5.0f;
        if (ctx->nan_at >= 0) data[(b * HS_WG_LEN + (size_t)ctx->nan_at) * V + 3] = NAN;
    }
    ctx->seen += B;
    return 1;
}

static int wants_logits(const char *name, void *ctx)
{
    (void)ctx;
    return strcmp(name, "logits") == 0;
}

static void role_and_adjective_breakdown_follow_the_prediction(void **state)
{
    (void)state;
    hs_config c = small_config();
    hs_model *m = make_model(&c);
    hs_model_init(m);
    hs_winograd *t = make_task();
    for (int s = 0; s < 2; s++) {
        size_t n;
        const hs_wg_example *ex = hs_winograd_examples(t, (hs_wg_split)s, &n);
        predict_x_ctx ctx = {ex, n, 0, -1};
        hs_observer obs = {predict_x, wants_logits, &ctx};
        hs_wg_score sc;
        hs_error err = {0};
        int *pred = malloc(n * sizeof *pred);
        assert_non_null(pred);
        if (hs_winograd_score_examples(m, t, ex, n, &obs, pred, &sc, &err) != HS_OK)
            fail_msg("%s", err.msg);
        assert_int_equal(ctx.seen, n); /* 1728 = 13 full batches of 128 + 64; 192 = 128 + 64 */
        for (size_t i = 0; i < n; i++) assert_int_equal(pred[i], ex[i].tokens[HS_WG_POS_X]);
        assert_int_equal(sc.n, n);
        assert_int_equal(sc.n_role[HS_ROLE_CROSSER] + sc.n_role[HS_ROLE_CROSSED], n);
        assert_int_equal(sc.correct_role[HS_ROLE_CROSSER], sc.n_role[HS_ROLE_CROSSER]);
        assert_int_equal(sc.correct_role[HS_ROLE_CROSSED], 0);
        assert_int_equal(sc.other_role[HS_ROLE_CROSSER], 0);
        assert_int_equal(sc.other_role[HS_ROLE_CROSSED], sc.n_role[HS_ROLE_CROSSED]);
        assert_int_equal(sc.correct, n / 2);
        assert_int_equal(sc.other, n / 2);
        for (int a = 0; a < 8; a++) {
            assert_int_equal(sc.n_adj[a], n / 8);
            assert_int_equal(sc.correct_adj[a], a < 4 ? n / 8 : 0);
            assert_int_equal(sc.other_adj[a], a < 4 ? 0 : n / 8);
        }
        assert_true(fabs(hs_wg_score_accuracy(&sc) - 0.5) < 1e-12);
        assert_true(fabs(hs_wg_score_other_rate(&sc) - 0.5) < 1e-12);
        free(pred);
    }
    hs_model_destroy(m);
    hs_winograd_destroy(t);
}

/* Batched scoring equals an independent forward of one sentence at a time. */
static void batched_predictions_equal_single_forwards(void **state)
{
    (void)state;
    hs_config c = small_config();
    c.n_layers = 2;
    hs_model *m = make_model(&c);
    hs_model_init(m);
    hs_winograd *t = make_task();
    size_t n;
    const hs_wg_example *ex = hs_winograd_examples(t, HS_SPLIT_HELDOUT, &n);
    int *pred = malloc(n * sizeof *pred);
    assert_non_null(pred);
    hs_wg_score sc;
    hs_error err = {0};
    assert_int_equal(hs_winograd_score_examples(m, t, ex, n, NULL, pred, &sc, &err), HS_OK);
    hs_acts *a = NULL;
    assert_int_equal(hs_acts_create(&m->cfg, 1, HS_WG_LEN, 0, &a, &err), HS_OK);
    size_t correct = 0, other = 0;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(hs_forward(m, a, ex[i].tokens, 1, HS_WG_LEN, NULL, &err), HS_OK);
        const float *row = a->logits + HS_WG_POS_QUERY * 36;
        int best = 0;
        for (int v = 1; v < 36; v++)
            if (row[v] > row[best]) best = v;
        assert_int_equal(pred[i], best);
        correct += best == ex[i].ref_id;
        other += best == ex[i].other_id;
    }
    assert_int_equal(sc.correct, correct);
    assert_int_equal(sc.other, other);
    hs_acts_destroy(a);
    free(pred);
    hs_model_destroy(m);
    hs_winograd_destroy(t);
}

static void ties_go_to_the_lowest_id(void **state)
{
    (void)state;
    hs_config c = small_config();
    c.bias = 0;
    hs_model *m = make_model(&c); /* all zero: every logit 0 */
    hs_winograd *t = make_task();
    size_t n;
    const hs_wg_example *ex = hs_winograd_examples(t, HS_SPLIT_HELDOUT, &n);
    int pred[192];
    assert_int_equal(n, 192);
    hs_wg_score sc;
    hs_error err = {0};
    assert_int_equal(hs_winograd_score_examples(m, t, ex, n, NULL, pred, &sc, &err), HS_OK);
    for (size_t i = 0; i < n; i++) assert_int_equal(pred[i], 0);
    assert_int_equal(sc.correct, 0);
    assert_int_equal(sc.other, 0);
    hs_model_destroy(m);
    hs_winograd_destroy(t);
}

static void nan_logit_at_the_query_is_an_error(void **state)
{
    (void)state;
    hs_config c = small_config();
    hs_model *m = make_model(&c);
    hs_model_init(m);
    hs_winograd *t = make_task();
    size_t n;
    const hs_wg_example *ex = hs_winograd_examples(t, HS_SPLIT_HELDOUT, &n);
    hs_wg_score sc;
    hs_error err = {0};
    predict_x_ctx ctx = {ex, n, 0, HS_WG_POS_QUERY};
    hs_observer obs = {predict_x, wants_logits, &ctx};
    assert_int_equal(hs_winograd_score_examples(m, t, ex, n, &obs, NULL, &sc, &err), HS_ERR_NUMERIC);
    assert_msg_contains(err, "NaN logit at position 14 of example 0");
    assert_int_equal(sc.n, 0);
    /* a NaN elsewhere is not scored */
    predict_x_ctx ctx2 = {ex, n, 0, 13};
    obs.ctx = &ctx2;
    assert_int_equal(hs_winograd_score_examples(m, t, ex, n, &obs, NULL, &sc, &err), HS_OK);
    assert_int_equal(sc.correct, n / 2);
    hs_model_destroy(m);
    hs_winograd_destroy(t);
}

static void model_that_does_not_fit_the_task_is_refused(void **state)
{
    (void)state;
    hs_winograd *t = make_task();
    hs_wg_score sc;
    hs_error err = {0};
    hs_config c = small_config();
    c.d_vocab = 40;
    hs_model *m = make_model(&c);
    assert_int_equal(hs_winograd_score(m, t, HS_SPLIT_TRAIN, NULL, &sc, &err), HS_ERR_CONFIG);
    assert_msg_contains(err, "the model's d_vocab is 40 but the task's vocabulary has 36 words");
    hs_model_destroy(m);
    c = small_config();
    c.n_ctx = 10;
    m = make_model(&c);
    assert_int_equal(hs_winograd_score(m, t, HS_SPLIT_TRAIN, NULL, &sc, &err), HS_ERR_CONFIG);
    assert_msg_contains(err, "the model's n_ctx is 10 but Winograd sentences have 18 tokens");
    hs_model_destroy(m);
    hs_winograd_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(constant_prediction_counts_match_the_examples),
        cmocka_unit_test(role_and_adjective_breakdown_follow_the_prediction),
        cmocka_unit_test(batched_predictions_equal_single_forwards),
        cmocka_unit_test(ties_go_to_the_lowest_id),
        cmocka_unit_test(nan_logit_at_the_query_is_an_error),
        cmocka_unit_test(model_that_does_not_fit_the_task_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
