/*
 * tests/test_graph.c -- experiments/graph.c and metric.c: the circuit
 * graph's nodes, receivers and edges in their canonical order, their MIB
 * names, and the edge counts (110 for 2 layers x 4 heads with MLPs; 32,491
 * for GPT-2 small, MIB's count), counted one by one against the formula; the
 * discovery metrics' values by hand and their gradients by central finite
 * differences.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "discovery/discovery.h"
#include "experiments/experiments.h"

static hs_graph build(int L, int H, int d_mlp)
{
    hs_config c = hs_config_default();
    c.n_layers = L;
    c.n_heads = H;
    c.d_mlp = d_mlp;
    hs_graph g;
    hs_error err = {0};
    if (hs_graph_build(&c, &g, &err) != HS_OK) fail_msg("hs_graph_build: %s", err.msg);
    return g;
}

static void two_layers_four_heads_have_110_edges(void **state)
{
    (void)state;
    hs_graph g = build(2, 4, 256);
    assert_int_equal(g.n_nodes, 12);
    assert_int_equal(g.n_receivers, 27);
    assert_int_equal(g.n_edges, 110);
    assert_int_equal(hs_graph_edge_count(2, 4, 1), 110);
    /* by hand: layer-0 heads read input (3 x 4), m0 input + 4 heads, layer-1
     * heads input + 4 + m0 (3 x 4 x 6), m1 10, logits 11 */
    assert_int_equal(g.recv_n_edges[0], 1);
    assert_int_equal(g.recv_n_edges[12], 5);
    assert_int_equal(g.recv_n_edges[13], 6);
    assert_int_equal(g.recv_n_edges[25], 10);
    assert_int_equal(g.recv_n_edges[26], 11);
    char name[64];
    hs_graph_edge_name(&g, 0, name, sizeof name);
    assert_string_equal(name, "input->a0.h0<q>");
    hs_graph_edge_name(&g, 1, name, sizeof name);
    assert_string_equal(name, "input->a0.h0<k>");
    hs_graph_edge_name(&g, g.n_edges - 1, name, sizeof name);
    assert_string_equal(name, "m1->logits");
    hs_graph_receiver_name(&g, 25, name, sizeof name);
    assert_string_equal(name, "m1");
    /* every edge's name finds that edge, and nothing else */
    for (size_t e = 0; e < g.n_edges; e++) {
        hs_graph_edge_name(&g, e, name, sizeof name);
        assert_int_equal(hs_graph_find_edge(&g, name), (long)e);
    }
    assert_int_equal(hs_graph_find_edge(&g, "a0.h2->a1.h0<k>") >= 0, 1);
    assert_int_equal(hs_graph_find_edge(&g, "a1.h0->a1.h1<q>"), -1); /* same layer */
    assert_int_equal(hs_graph_find_edge(&g, "a1.h3->m0"), -1);       /* backwards */
    assert_int_equal(hs_graph_find_edge(&g, "a0.h0->m1<q>"), -1);    /* an MLP has one input */
    assert_int_equal(hs_graph_find_edge(&g, "a0.h9->m1"), -1);       /* no such head */
    assert_int_equal(hs_graph_find_edge(&g, "logits->m1"), -1);
    assert_int_equal(hs_graph_find_node(&g, "m1"), 10);
    assert_int_equal(hs_graph_find_node(&g, "logits"), 11);
    hs_graph_free(&g);
    hs_graph_free(&g);
}

static void gpt2_small_has_mibs_32491_edges(void **state)
{
    (void)state;
    hs_graph g = build(12, 12, 3072);
    assert_int_equal(g.n_edges, 32491);
    assert_int_equal(hs_graph_edge_count(12, 12, 1), 32491);
    assert_int_equal(g.n_nodes, 158); /* MIB's GPT-2 graph: 158 nodes */
    hs_graph_free(&g);
}

static void edges_are_grouped_by_receiver_and_point_forward(void **state)
{
    (void)state;
    const int shapes[][3] = {{1, 1, 0}, {1, 3, 8}, {3, 2, 0}, {4, 5, 16}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        hs_graph g = build(shapes[k][0], shapes[k][1], shapes[k][2]);
        assert_int_equal(g.n_edges, hs_graph_edge_count(shapes[k][0], shapes[k][1], shapes[k][2] > 0));
        size_t e = 0;
        for (int r = 0; r < g.n_receivers; r++) {
            assert_int_equal(g.recv_first_edge[r], e);
            for (int i = 0; i < g.recv_n_edges[r]; i++, e++) {
                assert_int_equal(g.edge_dst[e], r);
                assert_true(g.edge_src[e] < g.recv_node[r]);
                if (i > 0) assert_true(g.edge_src[e] > g.edge_src[e - 1]);
                assert_true(g.node_kind[g.edge_src[e]] != HS_NODE_LOGITS);
            }
        }
        assert_int_equal(e, g.n_edges);
        hs_graph_free(&g);
    }
}

static void metrics_and_their_gradients(void **state)
{
    (void)state;
    enum { V = 7 };
    const float z[V] = {0.5f, -1.25f, 2.0f, 0.0f, 1.5f, -0.75f, 0.25f};
    const float ref[V] = {1.0f, 0.5f, -0.5f, 2.0f, 0.0f, 0.25f, -1.0f};
    double scratch[2 * V];
    /* values by hand */
    assert_true(fabs(hs_metric_value(HS_METRIC_LOGIT_DIFF, z, V, 2, 4, NULL, scratch) - 0.5) < 1e-12);
    double se = 0, sr = 0;
    for (int i = 0; i < V; i++) se += exp(z[i]), sr += exp(ref[i]);
    assert_true(fabs(hs_metric_value(HS_METRIC_PROB_DIFF, z, V, 2, 4, NULL, scratch) -
                     (exp(2.0) - exp(1.5)) / se) < 1e-12);
    double kl = 0;
    for (int i = 0; i < V; i++) {
        const double p = exp(ref[i]) / sr, q = exp(z[i]) / se;
        kl += p * log(p / q);
    }
    assert_true(fabs(hs_metric_value(HS_METRIC_KL, z, V, 2, 4, ref, scratch) - kl) < 1e-12);
    assert_true(fabs(hs_metric_value(HS_METRIC_KL, ref, V, 2, 4, ref, scratch)) < 1e-12);
    /* gradients against central differences of the value (in double through floats
     * of step 2^-10, exact in float) */
    for (int k = 0; k < HS_METRIC_N; k++) {
        float g[V], zz[V];
        hs_metric_grad((hs_metric_kind)k, z, V, 2, 4, ref, scratch, g);
        for (int i = 0; i < V; i++) {
            const float h = 1.0f / 1024;
            memcpy(zz, z, sizeof zz);
            zz[i] = z[i] + h;
            double up = hs_metric_value((hs_metric_kind)k, zz, V, 2, 4, ref, scratch);
            zz[i] = z[i] - h;
            double dn = hs_metric_value((hs_metric_kind)k, zz, V, 2, 4, ref, scratch);
            double fd = (up - dn) / (2.0 * h);
            if (fabs(fd - g[i]) > 1e-5 * (1 + fabs(fd)))
                fail_msg("%s: d/dz[%d] = %g, finite difference %g", hs_metric_names[k], i, g[i], fd);
        }
    }
    assert_int_equal(hs_metric_parse("kl"), HS_METRIC_KL);
    assert_int_equal(hs_metric_parse("logit-diff"), HS_METRIC_LOGIT_DIFF);
    assert_int_equal(hs_metric_parse("logit_diff"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_layers_four_heads_have_110_edges),
        cmocka_unit_test(gpt2_small_has_mibs_32491_edges),
        cmocka_unit_test(edges_are_grouped_by_receiver_and_point_forward),
        cmocka_unit_test(metrics_and_their_gradients),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
