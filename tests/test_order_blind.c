/*
 * tests/test_order_blind.c -- the uniform causal average cannot see word order
 * (issue 3; DESIGN.md, "The Winograd task").
 *
 * In one block with uniform attention, the output at the query position is a
 * function of the *set* of tokens before it whenever the averaged vectors do
 * not mix token and position nonlinearly: with no positions (any ln1), and
 * with learned positions but no norm in front of the average (the mean of
 * tok + pos is mean(tok) + mean(pos), the same for every order). With
 * LayerNorm in front and positions, LN(tok + pos) mixes the two, so order
 * leaks; with two blocks the causal mask gives each position its own prefix,
 * so the second average sees order too. Shuffling positions 0..13 must leave
 * the logits at 14 unchanged (up to float summation order, 1e-5) in the first
 * two cases and change them (> 1e-3) in the others.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "model/model.h"

enum { T = 15, Q = 14, V = 20 };

static double max_change_under_shuffle(hs_config cfg)
{
    hs_error err;
    cfg.n_ctx = 18;
    cfg.d_vocab = V;
    cfg.d_model = 32;
    cfg.n_heads = 4;
    cfg.d_head = 8;
    cfg.d_mlp = 64;
    cfg.seed = 3;
    hs_model *m = NULL;
    assert_int_equal(hs_model_create(&cfg, &m, &err), HS_OK);
    hs_model_init(m);
    hs_acts *a = NULL;
    assert_int_equal(hs_acts_create(&m->cfg, 2, T, 0, &a, &err), HS_OK);
    /* row 0: a sentence; row 1: positions 0..13 reversed and rotated, 14 kept */
    int tok[2 * T];
    for (int t = 0; t < T; t++) tok[t] = (t * 7 + 3) % V;
    for (int t = 0; t < Q; t++) tok[T + t] = tok[(Q - 1 - t + 5) % Q];
    tok[T + Q] = tok[Q];
    assert_int_equal(hs_forward(m, a, tok, 2, T, NULL, &err), HS_OK);
    const float *l0 = a->logits + (size_t)Q * V, *l1 = a->logits + (size_t)(T + Q) * V;
    double d = 0.0;
    for (int v = 0; v < V; v++) d = fmax(d, fabs((double)l0[v] - l1[v]));
    hs_acts_destroy(a);
    hs_model_destroy(m);
    return d;
}

static void shuffling_the_prefix_leaves_one_uniform_block_unchanged(void **state)
{
    (void)state;
    hs_config c = hs_config_default();
    c.n_layers = 1;
    c.attn = HS_ATTN_UNIFORM;

    hs_config nopos = c;
    nopos.pos = HS_POS_NONE;
    nopos.ln1 = 0;
    double d_nopos = max_change_under_shuffle(nopos);
    hs_config nopos_ln = c;
    nopos_ln.pos = HS_POS_NONE;
    double d_nopos_ln = max_change_under_shuffle(nopos_ln);
    hs_config nonorm = c;
    nonorm.ln1 = 0;
    double d_nonorm = max_change_under_shuffle(nonorm);
    hs_config ln = c;
    double d_ln = max_change_under_shuffle(ln);
    hs_config two = nopos;
    two.n_layers = 2;
    double d_two = max_change_under_shuffle(two);
    hs_config soft = c;
    soft.attn = HS_ATTN_SOFTMAX;
    double d_soft = max_change_under_shuffle(soft);
    print_message("max |logit change| at 14 under a shuffle of 0..13:\n"
                  "  1 block uniform, no pos, no ln1 %.2e\n  1 block uniform, no pos, ln1 %.2e\n"
                  "  1 block uniform, pos, no ln1 %.2e\n  1 block uniform, pos, ln1 %.2e\n"
                  "  2 blocks uniform, no pos, no ln1 %.2e\n  1 block softmax %.2e\n",
                  d_nopos, d_nopos_ln, d_nonorm, d_ln, d_two, d_soft);
    assert_true(d_nopos < 1e-5);
    assert_true(d_nopos_ln < 1e-5);
    assert_true(d_nonorm < 1e-5);
    assert_true(d_ln > 1e-3);
    assert_true(d_two > 1e-3);
    assert_true(d_soft > 1e-3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shuffling_the_prefix_leaves_one_uniform_block_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
