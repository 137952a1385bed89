/*
 * tests/test_induction.c -- the induction task (tasks/induction.c) and its
 * circuit check (tasks/induction_circuit.c): the sequence generator (gap and
 * length distributions, layout, no overlap), held-out segments never trained
 * on, the task metadata round trip, detector scores against hand-computed
 * values, and a hand-built two-layer attention-only model (a previous-token
 * head and an induction head written into the weights) that the check must
 * recognise exactly, beside a one-layer model it must refuse with the reason.
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

#include "circuits/circuits.h"
#include "tasks/tasks.h"

static hs_induction *make_task(const hs_ind_params *p)
{
    hs_induction *t = NULL;
    hs_error err = {0};
    if (hs_induction_create(p, NULL, &t, &err) != HS_OK) fail_msg("hs_induction_create: %s", err.msg);
    return t;
}

/* Layout, distinct segment symbols, filler without them, uniform gap and
 * length (chi-square against the uniform law, 0.1% critical values). */
static void generator_layout_and_distributions(void **state)
{
    (void)state;
    hs_ind_params p = hs_ind_params_default();
    const int T = p.n_ctx, N = 20000;
    int tok[64];
    long gap_count[64] = {0}, len_count[64] = {0};
    hs_task_rng r;
    hs_task_rng_seed(&r, 42);
    for (int n = 0; n < N; n++) {
        hs_ind_seq s;
        hs_ind_generate(&p, &r, tok, &s);
        const int gap = s.start2 - s.start1 - s.len;
        assert_true(s.len >= p.seg_min && s.len <= p.seg_max);
        assert_true(gap >= p.gap_min && gap <= p.gap_max);
        assert_true(s.start1 >= 0 && s.start2 >= s.start1 + s.len && s.start2 + s.len <= T);
        gap_count[gap]++;
        len_count[s.len]++;
        int in_seg[64] = {0};
        for (int k = 0; k < s.len; k++) {
            assert_int_equal(tok[s.start1 + k], tok[s.start2 + k]);
            assert_int_equal(in_seg[tok[s.start1 + k]], 0); /* distinct */
            in_seg[tok[s.start1 + k]] = 1;
        }
        for (int i = 0; i < T; i++) {
            assert_true(tok[i] >= 0 && tok[i] < p.n_symbols);
            int seg = (i >= s.start1 && i < s.start1 + s.len) || (i >= s.start2 && i < s.start2 + s.len);
            if (!seg) assert_int_equal(in_seg[tok[i]], 0);
        }
    }
    /* gap: 17 cells (df 16, chi2 0.1% critical value 39.3); length: 5 cells (df 4, 18.5) */
    double chi = 0.0, e = (double)N / (p.gap_max - p.gap_min + 1);
    for (int g = p.gap_min; g <= p.gap_max; g++) chi += (gap_count[g] - e) * (gap_count[g] - e) / e;
    assert_int_equal(p.gap_max - p.gap_min + 1, 17);
    assert_true(chi < 39.3);
    chi = 0.0;
    e = (double)N / (p.seg_max - p.seg_min + 1);
    for (int l = p.seg_min; l <= p.seg_max; l++) chi += (len_count[l] - e) * (len_count[l] - e) / e;
    assert_int_equal(p.seg_max - p.seg_min + 1, 5);
    assert_true(chi < 18.5);
}

/* With 8 symbols and segments of 2..3 the raw stream repeats held-out
 * segments often; training batches must never contain one. */
static void heldout_segments_never_in_training(void **state)
{
    (void)state;
    hs_ind_params p = hs_ind_params_default();
    p.n_symbols = 8;
    p.n_ctx = 12;
    p.seg_min = 2;
    p.seg_max = 3;
    p.gap_min = 0;
    p.gap_max = 4;
    p.n_heldout = 12;
    hs_induction *t = make_task(&p);
    hs_task_rng r;
    hs_task_rng_seed(&r, 7);
    int tok[12], tg[12];
    hs_ind_seq s;
    long raw_hits = 0;
    for (int n = 0; n < 5000; n++) {
        hs_ind_generate(&p, &r, tok, &s);
        raw_hits += hs_induction_is_heldout_segment(t, tok + s.start1, s.len);
    }
    assert_true(raw_hits > 50); /* the check below is not vacuous */
    for (int n = 0; n < 5000; n++) {
        hs_induction_batch(t, &r, 1, tok, tg, &s);
        assert_int_equal(hs_induction_is_heldout_segment(t, tok + s.start1, s.len), 0);
        for (int i = 0; i < 12; i++) {
            int scored = i >= s.start2 && i < s.start2 + s.len - 1;
            assert_int_equal(tg[i], scored ? tok[i + 1] : -1);
        }
    }
    /* every held-out sequence's own segment is found */
    for (int q = 0; q < p.n_heldout; q++)
        assert_int_equal(hs_induction_is_heldout_segment(t, t->heldout_tokens + q * 12 + t->heldout[q].start1,
                                                         t->heldout[q].len), 1);
    hs_induction_destroy(t);
}

static void task_json_round_trip_and_bad_params(void **state)
{
    (void)state;
    hs_ind_params p = hs_ind_params_default();
    p.split_seed = 99;
    p.loss_all = 1;
    hs_induction *t = make_task(&p), *u = NULL;
    char *json = NULL, *name = NULL;
    hs_error err = {0};
    assert_int_equal(hs_induction_task_json(t, &json, &err), HS_OK);
    assert_int_equal(hs_task_json_name(json, &name, &err), HS_OK);
    assert_string_equal(name, "induction");
    free(name);
    /* a name of any length comes back whole (no fixed buffer to cut it) */
    char long_json[400];
    snprintf(long_json, sizeof long_json, "{\"name\": \"%0300d\"}", 7);
    assert_int_equal(hs_task_json_name(long_json, &name, &err), HS_OK);
    assert_int_equal(strlen(name), 300);
    assert_string_equal(name + 299, "7");
    free(name);
    assert_int_equal(hs_task_json_name("[1]", &name, &err), HS_ERR_FORMAT);
    assert_null(name);
    assert_int_equal(hs_induction_from_task_json(json, t->vocab, &u, &err), HS_OK);
    assert_memory_equal(u->heldout_tokens, t->heldout_tokens, sizeof(int) * (size_t)p.n_ctx * 512);
    assert_int_equal(u->p.loss_all, 1);
    assert_string_equal(hs_tok_str(u->vocab, 31), "s31");
    assert_null(hs_tok_str(u->vocab, 32));
    hs_induction_destroy(u);
    free(json);
    hs_ind_params b = p;
    b.gap_max = 17; /* 2 x 8 + 17 > 32 */
    assert_int_equal(hs_induction_create(&b, NULL, &u, &err), HS_ERR_CONFIG);
    assert_non_null(strstr(err.msg, "does not fit the context"));
    b = p;
    b.seg_max = 17; /* more than half the 32 symbols */
    assert_int_equal(hs_induction_create(&b, NULL, &u, &err), HS_ERR_CONFIG);
    assert_null(u);
    hs_induction_destroy(t);
}

/* ------------------------------------------------------------------------ */
/* The hand-built model                                                      */

enum { V = 16, T = 24, D = 3 * V + T, DH = T };
#define OFF_TOK 0
#define OFF_POS V
#define OFF_PREV (V + T)
#define OFF_OUT (2 * V + T)

static hs_ind_params small_params(void)
{
    hs_ind_params p = hs_ind_params_default();
    p.n_symbols = V;
    p.n_ctx = T;
    p.seg_min = 3;
    p.seg_max = 6;
    p.gap_min = 0;
    p.gap_max = 8;
    p.n_heldout = 128;
    return p;
}

/* Layer 0: H0 all zero (uniform attention, no output), H1 previous-token
 * (query position i, key position j + 1: score 40 iff j = i - 1; value the
 * token, written into the "previous token" subspace). Layer 1: H0 induction
 * (query the token, key the previous-token subspace; value the token, written
 * into the output subspace that W_U reads), H1 all zero. Norms off, no biases. */
static hs_model *hand_built(int layers)
{
    hs_config c = hs_config_default();
    c.n_layers = layers;
    c.d_model = D;
    c.n_heads = 2;
    c.d_head = DH;
    c.d_mlp = 0;
    c.n_ctx = T;
    c.d_vocab = V;
    c.norm = HS_NORM_NONE;
    c.ln1 = 0;
    c.ln_final = 0;
    c.bias = 0;
    hs_model *m = NULL;
    hs_error err = {0};
    if (hs_model_create(&c, &m, &err) != HS_OK) fail_msg("%s", err.msg);
    memset(m->param_mem, 0, m->n_params * sizeof(float));
    hs_params *P = &m->params;
    const float big = 40.0f * sqrtf((float)DH);
    for (int t = 0; t < V; t++) P->W_E[t * D + OFF_TOK + t] = 1.0f;
    for (int p = 0; p < T; p++) P->W_pos[p * D + OFF_POS + p] = 1.0f;
    hs_block_params *b0 = &P->blocks[0];
    const size_t hd = (size_t)D * DH; /* one head of W_Q/W_K/W_V */
    for (int i = 0; i < T; i++) b0->W_Q[hd + (size_t)(OFF_POS + i) * DH + i] = big;
    for (int j = 0; j + 1 < T; j++) b0->W_K[hd + (size_t)(OFF_POS + j) * DH + (j + 1)] = 1.0f;
    for (int t = 0; t < V; t++) {
        b0->W_V[hd + (size_t)(OFF_TOK + t) * DH + t] = 1.0f;
        b0->W_O[(size_t)DH * D + (size_t)t * D + OFF_PREV + t] = 1.0f;
    }
    if (layers > 1) {
        hs_block_params *b1 = &P->blocks[1];
        for (int t = 0; t < V; t++) {
            b1->W_Q[(size_t)(OFF_TOK + t) * DH + t] = big;
            b1->W_K[(size_t)(OFF_PREV + t) * DH + t] = 1.0f;
            b1->W_V[(size_t)(OFF_TOK + t) * DH + t] = 1.0f;
            b1->W_O[(size_t)t * D + OFF_OUT + t] = 1.0f;
        }
    }
    for (int t = 0; t < V; t++) P->W_U[(size_t)(OFF_OUT + t) * V + t] = 10.0f;
    return m;
}

static void hand_built_two_layer_model_is_recognised(void **state)
{
    (void)state;
    hs_ind_params p = small_params();
    hs_induction *t = make_task(&p);
    hs_model *m = hand_built(2);
    hs_ind_circuit_report r;
    hs_error err = {0};
    assert_int_equal(hs_ind_circuit_run(m, t, NULL, &r, &err), HS_OK);
    for (int k = 0; k < HS_IND_N_CRIT; k++)
        if (!r.ok[k]) fail_msg("criterion %d: %s", k, r.why[k]);
    assert_true(r.holds);
    assert_int_equal(r.prev_best.layer, 0);
    assert_int_equal(r.prev_best.head, 1);
    assert_int_equal(r.ind_best.layer, 1);
    assert_int_equal(r.ind_best.head, 0);
    assert_int_equal(r.n_prev, 1);
    assert_int_equal(r.n_ind, 1);
    assert_non_null(strstr(r.verdict, "HOLDS: previous-token head L0H1 -> induction head L1H0"));
    /* previous-token head: A[i, i-1] = 1 up to exp(-40): (T-1)/T */
    assert_float_equal(r.heads[1].prev_score, (double)(T - 1) / T, 1e-6);
    /* the zero head attends uniformly: (1/T) sum_{i=1}^{T-1} 1/(i+1), and its
     * induction score is the mean over the task rows of 1/(start2+k+1) */
    double u = 0.0;
    for (int i = 1; i < T; i++) u += 1.0 / (i + 1);
    assert_float_equal(r.heads[0].prev_score, u / T, 1e-6);
    double iu = 0.0;
    size_t cnt = 0;
    for (size_t q = 0; q < r.n_seqs; q++)
        for (int k = 0; k < t->heldout[q].len; k++) iu += 1.0 / (t->heldout[q].start2 + k + 1), cnt++;
    assert_float_equal(r.heads[2 + 1].ind_score, iu / (double)cnt, 1e-6);
    /* the induction head attends the token after the earlier occurrence; only
     * a segment at position 0 splits its first row (position 0 also "follows" it) */
    size_t at0 = 0;
    for (size_t q = 0; q < r.n_seqs; q++) at0 += t->heldout[q].start1 == 0;
    assert_float_equal(r.heads[2].ind_score, 1.0 - 0.5 * (double)at0 / (double)cnt, 1e-4);
    /* pure K-composition, keys restore everything, queries and values nothing */
    assert_float_equal(r.path[1], 1.0, 1e-3);
    assert_float_equal(r.path[0], 0.0, 1e-6);
    assert_float_equal(r.path[2], 0.0, 1e-6);
    assert_float_equal(r.comp.k[(((size_t)0 * 2 + 1) * 2 + 1) * 2 + 0], 1.0 / sqrt((double)V), 1e-5);
    assert_float_equal(r.comp.q[(((size_t)0 * 2 + 1) * 2 + 1) * 2 + 0], 0.0, 1e-6);
    assert_float_equal(r.comp.v[(((size_t)0 * 2 + 1) * 2 + 1) * 2 + 0], 0.0, 1e-6);
    assert_float_equal(r.heads[2].copying, 1.0, 1e-6);
    assert_true(r.acc > 0.95);
    assert_true(r.acc_prev_ablated < 0.2 && r.acc_ind_ablated < 0.2);
    /* the discovery section: EAP-IG ranks the planted K-composition edge (the one the check's path patching
     * names) first among the head->head edges, and scores every other one exactly 0 */
    const hs_circ_discovery *d = &r.disc;
    assert_true(d->ran);
    assert_int_equal(d->n_named, 1);
    char nm[64];
    hs_graph_edge_name(&d->g, d->named[0], nm, sizeof nm);
    assert_string_equal(nm, "a0.h1->a1.h0<k>");
    hs_graph_edge_name(&d->g, d->hh[0], nm, sizeof nm);
    assert_string_equal(nm, "a0.h1->a1.h0<k>");
    assert_true(d->scores[d->hh[0]] < -0.1 && d->agree == 1 && d->top_k == 5);
    for (size_t i = 1; i < d->n_hh; i++) assert_true(d->scores[d->hh[i]] == 0.0); /* the zero heads: exactly 0 */
    /* MIB's 5 % of 29 edges is 1 edge, pruned to none (f 0); at 20 % (6 edges) the circuit is the model */
    assert_int_equal(d->g.n_edges, 29);
    assert_int_equal(d->n_kept, 0);
    assert_true(d->usable && d->faithfulness == 0.0);
    assert_float_equal(d->curve.pt[8].faithfulness, 1.0, 1e-6); /* pt[8]: 20 % */
    char *json = NULL;
    assert_int_equal(hs_ind_circuit_report_json(&r, "hand", &json, &err), HS_OK);
    assert_non_null(strstr(json, "\"induction_head\":\t\"L1H0\""));
    free(json);
    hs_ind_circuit_report_free(&r);
    hs_model_destroy(m);
    hs_induction_destroy(t);
}

/* Evidence and verdict have no length limit: a 5,000-character reason and
 * verdict reach the summary and the JSON whole (they lived in fixed 256- and
 * 512-byte buffers before). */
static void long_reasons_reach_the_induction_writers_whole(void **state)
{
    (void)state;
    hs_ind_params p = small_params();
    hs_induction *t = make_task(&p);
    hs_model *m = hand_built(1);
    hs_ind_circuit_report r;
    hs_error err = {0};
    assert_int_equal(hs_ind_circuit_run(m, t, NULL, &r, &err), HS_OK);
    char *big = malloc(5001);
    assert_non_null(big);
    for (int i = 0; i < 5000; i++) big[i] = (char)('a' + i % 26);
    memcpy(big + 4990, "LAST WORDS", 10);
    big[5000] = '\0';
    free(r.why[HS_IND_PATH]);
    r.why[HS_IND_PATH] = hs_strdup(big);
    free(r.verdict);
    r.verdict = hs_strdup(big);
    assert_non_null(r.why[HS_IND_PATH]);
    assert_non_null(r.verdict);
    char *text = NULL;
    assert_int_equal(hs_ind_circuit_summary(&r, &text, &err), HS_OK);
    const char *at = strstr(text, big);
    assert_non_null(at);
    assert_non_null(strstr(at + 5000, big)); /* the criterion line and the verdict line */
    free(text);
    char *json = NULL;
    assert_int_equal(hs_ind_circuit_report_json(&r, "hand", &json, &err), HS_OK);
    at = strstr(json, big); /* plain letters: no JSON escapes */
    assert_non_null(at);
    assert_non_null(strstr(at + 5000, big)); /* the verdict and the criterion's evidence */
    free(json);
    free(big);
    hs_ind_circuit_report_free(&r);
    hs_model_destroy(m);
    hs_induction_destroy(t);
}

static void one_layer_model_does_not_hold_with_the_reason(void **state)
{
    (void)state;
    hs_ind_params p = small_params();
    hs_induction *t = make_task(&p);
    hs_model *m = hand_built(1);
    hs_ind_circuit_report r;
    hs_error err = {0};
    assert_int_equal(hs_ind_circuit_run(m, t, NULL, &r, &err), HS_OK);
    assert_false(r.holds);
    assert_true(r.ok[HS_IND_PREV]); /* the previous-token head is there */
    assert_false(r.ok[HS_IND_IND]);
    assert_non_null(strstr(r.verdict, "does not hold: one layer"));
    assert_int_equal(r.ind_best.layer, -1);
    assert_true(isnan(r.path[1]));
    char *text = NULL;
    assert_int_equal(hs_ind_circuit_summary(&r, &text, &err), HS_OK);
    assert_non_null(strstr(text, "[ok] previous-token head L0H1"));
    free(text);
    hs_ind_circuit_report_free(&r);
    hs_model_destroy(m);
    hs_induction_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(generator_layout_and_distributions),
        cmocka_unit_test(heldout_segments_never_in_training),
        cmocka_unit_test(task_json_round_trip_and_bad_params),
        cmocka_unit_test(hand_built_two_layer_model_is_recognised),
        cmocka_unit_test(one_layer_model_does_not_hold_with_the_reason),
        cmocka_unit_test(long_reasons_reach_the_induction_writers_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
