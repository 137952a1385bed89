/*
 * tests/test_circuit_select.c -- choosing a circuit of n edges from edge
 * scores (discovery/acdc.c, discovery.h "Circuits from scores"): the greedy
 * selection of EAP-IG's Graph.apply_greedy (grown from logits, each step the
 * strongest edge into a node already in the circuit) against the order
 * worked out by hand on a 12-edge graph (including a top edge skipped until
 * its receiver joins, and ties to the lower index), its circuits after
 * pruning against top-n's, and its heap against a naive O(n E) greedy on a
 * 2 x 4 graph with MLPs with many tied scores; n = E is the whole graph;
 * a threshold keeps an edge whose |score| equals it (>=, discovery.h); a
 * figure's cap keeps a circuit's strongest edges (hs_circuit_keep_strongest).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "discovery/discovery.h"

/* Two layers of one head, no MLP, 12 edges: e0..e2 input->a0.h0<q,k,v>; e3,
 * e4 input, a0.h0 -> a1.h0<q>; e5, e6 -> <k>; e7, e8 -> <v>; e9, e10, e11
 * input, a0.h0, a1.h0 -> logits. Greedy: from logits e11 (5); a1.h0 joins,
 * e6 (10, skipped until now); a0.h0 joins: e0 (9), e2, e1, e3, e7, the ties
 * e9 e10 and e4 e5 by index, e8. Top-n: e6, e0, e2, e1, e11, ... */
static void greedy_grows_from_logits(void **state)
{
    (void)state;
    hs_config cf = hs_config_default();
    cf.n_layers = 2, cf.n_heads = 1, cf.d_mlp = 0, cf.d_model = 8, cf.d_head = 8;
    hs_graph g;
    hs_error err = {0};
    assert_int_equal(hs_graph_build(&cf, &g, &err), HS_OK);
    assert_int_equal(g.n_edges, 12);
    char nm[64];
    hs_graph_edge_name(&g, 6, nm, sizeof nm);
    assert_string_equal(nm, "a0.h0->a1.h0<k>");
    const double sc[12] = {9, -7, 8, -4, 0.5, -0.5, 10, 3, 0.1, 2, -2, 5};
    const size_t greedy[12] = {11, 6, 0, 2, 1, 3, 7, 9, 10, 4, 5, 8}, top[12] = {6, 0, 2, 1, 11, 3, 7, 9, 10, 4, 5, 8};
    size_t order[12], kept;
    assert_int_equal(hs_edge_order(&g, sc, HS_SELECT_GREEDY, order, &err), HS_OK);
    assert_memory_equal(order, greedy, sizeof order);
    assert_int_equal(hs_edge_order(&g, sc, HS_SELECT_TOPN, order, &err), HS_OK);
    assert_memory_equal(order, top, sizeof order);
    unsigned char c[12];
    const unsigned char chain[12] = {1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}; /* input -> a0.h0 -> a1.h0<k> -> logits */
    assert_int_equal(hs_circuit_choose(&g, sc, HS_SELECT_GREEDY, 3, c, &kept, &err), HS_OK);
    assert_int_equal(kept, 3);
    assert_memory_equal(c, chain, 12);
    assert_int_equal(hs_circuit_choose(&g, sc, HS_SELECT_TOPN, 3, c, &kept, &err), HS_OK);
    assert_int_equal(kept, 0); /* e6, e0, e2: nothing reaches logits */
    assert_int_equal(hs_circuit_choose(&g, sc, HS_SELECT_GREEDY, 2, c, &kept, &err), HS_OK);
    assert_int_equal(kept, 0); /* e11, e6: nothing from input reaches a0.h0 */
    assert_int_equal(hs_circuit_choose(&g, sc, HS_SELECT_GREEDY, 13, c, &kept, &err), HS_ERR_INPUT);
    assert_true(hs_select_parse("greedy") == HS_SELECT_GREEDY && hs_select_parse("top") == -1);
    hs_graph_free(&g);
    /* a 2 x 4 graph with MLPs, scores with many ties: the heap's order is a naive O(n E) greedy's; n = E is every
     * edge */
    hs_graph big;
    cf.n_heads = 4, cf.d_mlp = 32;
    assert_int_equal(hs_graph_build(&cf, &big, &err), HS_OK);
    const size_t E = big.n_edges;
    assert_int_equal(E, 110);
    double *s2 = malloc(E * sizeof *s2);
    size_t *o2 = malloc(E * sizeof *o2);
    unsigned char *taken = calloc(E, 1), *node_in = calloc((size_t)big.n_nodes, 1), *all = malloc(E);
    for (size_t e = 0; e < E; e++) s2[e] = (double)((e * 37) % 11) - 5;
    assert_int_equal(hs_edge_order(&big, s2, HS_SELECT_GREEDY, o2, &err), HS_OK);
    node_in[big.n_nodes - 1] = 1;
    for (size_t k = 0; k < E; k++) {
        size_t best = E;
        for (size_t e = 0; e < E; e++)
            if (!taken[e] && node_in[big.recv_node[big.edge_dst[e]]] && (best == E || fabs(s2[e]) > fabs(s2[best])))
                best = e;
        assert_int_equal(o2[k], best);
        taken[best] = node_in[big.edge_src[best]] = 1;
    }
    assert_int_equal(hs_circuit_choose(&big, s2, HS_SELECT_GREEDY, E, all, &kept, &err), HS_OK);
    assert_int_equal(kept, E);
    s2[3] = NAN;
    assert_int_equal(hs_edge_order(&big, s2, HS_SELECT_GREEDY, o2, &err), HS_ERR_NUMERIC);
    free(s2), free(o2), free(taken), free(node_in), free(all);
    hs_graph_free(&big);
}

/* hs_circuit_select's threshold keeps |score| >= threshold (discovery.h; EAP-IG's
 * apply_threshold): on the 12-edge graph the chain input -> a0.h0 -> a1.h0<k> ->
 * logits (e0 9, e6 10, e11 exactly 5) at threshold 5 is kept whole; with a strict
 * > its last edge would go and pruning would leave nothing. Every other score is
 * under 5 in absolute value, so a signed and an absolute rule agree here. */
static void an_edge_at_the_threshold_is_kept(void **state)
{
    (void)state;
    hs_config cf = hs_config_default();
    cf.n_layers = 2, cf.n_heads = 1, cf.d_mlp = 0, cf.d_model = 8, cf.d_head = 8;
    hs_graph g;
    hs_error err = {0};
    assert_int_equal(hs_graph_build(&cf, &g, &err), HS_OK);
    assert_int_equal(g.n_edges, 12);
    const double sc[12] = {9, -3, 4, -4.999, 0.5, -0.5, 10, 3, 0.1, 2, -2, 5};
    const unsigned char chain[12] = {1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    unsigned char c[12];
    size_t kept = 99;
    assert_int_equal(hs_circuit_select(&g, sc, -1, 5.0, c, &kept, &err), HS_OK);
    assert_int_equal(kept, 3);
    assert_memory_equal(c, chain, 12);
    assert_int_equal(hs_circuit_select(&g, sc, -1, nextafter(5.0, 6.0), c, &kept, &err), HS_OK);
    assert_int_equal(kept, 0); /* e11 just under: nothing reaches logits */
    hs_graph_free(&g);
}

/* The figures' cap (hs_circuit_keep_strongest) on the 12-edge graph above: of
 * the circuit {e0, e1, e3, e6, e9, e10, e11} (|score| 9, 3, 4.999, 10, 2, 2, 5),
 * cap 4 keeps e6, e0, e11 and e3 (e2 at 4, outside the circuit, takes no
 * place); cap 6 adds e1 and e9 of the tie e9/e10 (the lower index); without
 * scores the first 4 by index; a circuit within the cap is left as it is. */
static void a_figures_cap_keeps_the_strongest_edges(void **state)
{
    (void)state;
    hs_config cf = hs_config_default();
    cf.n_layers = 2, cf.n_heads = 1, cf.d_mlp = 0, cf.d_model = 8, cf.d_head = 8;
    hs_graph g;
    hs_error err = {0};
    assert_int_equal(hs_graph_build(&cf, &g, &err), HS_OK);
    const double sc[12] = {9, -3, 4, -4.999, 0.5, -0.5, 10, 3, 0.1, 2, -2, 5};
    const unsigned char circ[12] = {1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 1, 1};
    const unsigned char top4[12] = {1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 1};
    const unsigned char top6[12] = {1, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 1};
    const unsigned char first4[12] = {1, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0};
    unsigned char c[12];
    size_t kept = 99;
    memcpy(c, circ, 12);
    assert_int_equal(hs_circuit_keep_strongest(&g, sc, c, 4, &kept, &err), HS_OK);
    assert_int_equal(kept, 4);
    assert_memory_equal(c, top4, 12);
    memcpy(c, circ, 12);
    assert_int_equal(hs_circuit_keep_strongest(&g, sc, c, 6, &kept, &err), HS_OK);
    assert_memory_equal(c, top6, 12);
    memcpy(c, circ, 12);
    assert_int_equal(hs_circuit_keep_strongest(&g, NULL, c, 4, &kept, &err), HS_OK);
    assert_memory_equal(c, first4, 12);
    memcpy(c, circ, 12);
    assert_int_equal(hs_circuit_keep_strongest(&g, sc, c, 7, &kept, &err), HS_OK);
    assert_int_equal(kept, 7);
    assert_memory_equal(c, circ, 12);
    hs_graph_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(greedy_grows_from_logits),
        cmocka_unit_test(an_edge_at_the_threshold_is_kept),
        cmocka_unit_test(a_figures_cap_keeps_the_strongest_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
