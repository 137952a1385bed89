/*
 * discovery/graph.c -- the computational graph of circuit discovery at head
 * granularity (experiments.h, "The circuit graph"): nodes, receivers and
 * edges in their canonical order, named as MIB and EAP-IG name them.
 */
#include "discovery/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hs_graph_free(hs_graph *g)
{
    if (g == NULL) return;
    free(g->node_kind);
    free(g->node_layer);
    free(g->node_head);
    free(g->recv_node);
    free(g->recv_kind);
    free(g->recv_first_edge);
    free(g->recv_n_edges);
    free(g->edge_src);
    free(g->edge_dst);
    memset(g, 0, sizeof *g);
}

/* 1 when node u sends to node `node`: every node before it in the forward
 * order but the heads of its own layer when it is a head (they run beside
 * it), or an MLP of a parallel block (it reads resid_pre, beside them). */
static int sends(const hs_graph *g, int u, int node)
{
    const int same_layer_head = g->node_kind[u] == HS_NODE_HEAD && g->node_layer[u] == g->node_layer[node];
    if (same_layer_head && g->node_kind[node] == HS_NODE_HEAD) return 0;
    if (same_layer_head && g->node_kind[node] == HS_NODE_MLP && g->parallel) return 0;
    return u < node;
}

/* Senders a receiver of node index `node` reads (sends), never logits. */
static int sender_count(const hs_graph *g, int node)
{
    int n = 0;
    for (int u = 0; u < node; u++) n += sends(g, u, node);
    return n;
}

hs_status hs_graph_build(const hs_config *cfg, hs_graph *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    const int L = cfg->n_layers, H = cfg->n_heads, mlp = cfg->d_mlp > 0;
    if (L < 1 || H < 1) return hs_fail(err, HS_ERR_CONFIG, "a graph needs a layer and a head");
    if (hs_config_nonadditive(cfg))
        return hs_fail(err, HS_ERR_INPUT, "circuit graph: its edges split the residual stream into "
                       "the nodes' outputs, which it is not the sum of with %s", hs_config_nonadditive(cfg));
    hs_graph *g = out;
    g->parallel = cfg->parallel_attn_mlp && mlp;
    g->n_layers = L;
    g->n_heads = H;
    g->has_mlp = mlp;
    g->n_nodes = 1 + L * (H + mlp) + 1;
    g->n_receivers = L * (3 * H + mlp) + 1;
    g->node_kind = calloc((size_t)g->n_nodes, sizeof *g->node_kind);
    g->node_layer = calloc((size_t)g->n_nodes, sizeof *g->node_layer);
    g->node_head = calloc((size_t)g->n_nodes, sizeof *g->node_head);
    g->recv_node = calloc((size_t)g->n_receivers, sizeof *g->recv_node);
    g->recv_kind = calloc((size_t)g->n_receivers, sizeof *g->recv_kind);
    g->recv_first_edge = calloc((size_t)g->n_receivers, sizeof *g->recv_first_edge);
    g->recv_n_edges = calloc((size_t)g->n_receivers, sizeof *g->recv_n_edges);
    if (!g->node_kind || !g->node_layer || !g->node_head || !g->recv_node || !g->recv_kind ||
        !g->recv_first_edge || !g->recv_n_edges)
        goto oom;
    /* nodes in forward order */
    int k = 0;
    g->node_kind[k] = HS_NODE_INPUT, g->node_layer[k] = -1, g->node_head[k++] = -1;
    for (int l = 0; l < L; l++) {
        for (int h = 0; h < H; h++)
            g->node_kind[k] = HS_NODE_HEAD, g->node_layer[k] = l, g->node_head[k++] = h;
        if (mlp) g->node_kind[k] = HS_NODE_MLP, g->node_layer[k] = l, g->node_head[k++] = -1;
    }
    g->node_kind[k] = HS_NODE_LOGITS, g->node_layer[k] = L, g->node_head[k++] = -1;
    /* receivers in forward order, each head's q, k, v; their edges */
    int r = 0;
    size_t e = 0;
    for (int node = 1; node < g->n_nodes; node++) {
        const int n_in = g->node_kind[node] == HS_NODE_HEAD ? 3 : 1;
        const int s = sender_count(g, node);
        for (int x = 0; x < n_in; x++, r++) {
            g->recv_node[r] = node;
            g->recv_kind[r] = g->node_kind[node] == HS_NODE_HEAD ? (hs_recv_kind)x : HS_RECV_WHOLE;
            g->recv_first_edge[r] = e;
            g->recv_n_edges[r] = s;
            e += (size_t)s;
        }
    }
    HS_ASSERT(r == g->n_receivers);
    g->n_edges = e;
    g->edge_src = malloc(e * sizeof *g->edge_src);
    g->edge_dst = malloc(e * sizeof *g->edge_dst);
    if (!g->edge_src || !g->edge_dst) goto oom;
    for (r = 0; r < g->n_receivers; r++) {
        const int node = g->recv_node[r];
        size_t i = g->recv_first_edge[r];
        for (int u = 0; u < node; u++) {
            if (!sends(g, u, node)) continue;
            g->edge_src[i] = u;
            g->edge_dst[i++] = r;
        }
    }
    return HS_OK;
oom:
    hs_graph_free(g);
    return hs_fail(err, HS_ERR_NOMEM, "out of memory building the graph");
}

size_t hs_graph_edge_count(int n_layers, int n_heads, int has_mlp)
{
    /* a head in layer l reads input and every node of layers < l: 1 + l (H + mlp),
     * three times; the MLP of layer l also its own layer's heads; logits all */
    size_t n = 0;
    const size_t H = (size_t)n_heads, per_layer = H + (size_t)(has_mlp != 0);
    for (size_t l = 0; l < (size_t)n_layers; l++) {
        n += 3 * H * (1 + l * per_layer);
        if (has_mlp) n += 1 + l * per_layer + H;
    }
    return n + 1 + (size_t)n_layers * per_layer;
}

void hs_graph_node_name(const hs_graph *g, int node, char *buf, size_t cap)
{
    switch (g->node_kind[node]) {
    case HS_NODE_INPUT: snprintf(buf, cap, "input"); return;
    case HS_NODE_HEAD: snprintf(buf, cap, "a%d.h%d", g->node_layer[node], g->node_head[node]); return;
    case HS_NODE_MLP: snprintf(buf, cap, "m%d", g->node_layer[node]); return;
    case HS_NODE_LOGITS: snprintf(buf, cap, "logits"); return;
    }
}

void hs_graph_receiver_name(const hs_graph *g, int r, char *buf, size_t cap)
{
    static const char *const qkv[3] = {"<q>", "<k>", "<v>"};
    char node[32];
    hs_graph_node_name(g, g->recv_node[r], node, sizeof node);
    snprintf(buf, cap, "%s%s", node, g->recv_kind[r] == HS_RECV_WHOLE ? "" : qkv[g->recv_kind[r]]);
}

void hs_graph_edge_name(const hs_graph *g, size_t e, char *buf, size_t cap)
{
    char src[32], dst[40];
    hs_graph_node_name(g, g->edge_src[e], src, sizeof src);
    hs_graph_receiver_name(g, g->edge_dst[e], dst, sizeof dst);
    snprintf(buf, cap, "%s->%s", src, dst);
}

/* The node named s (its whole text), or -1. */
static int parse_node(const hs_graph *g, const char *s, size_t n)
{
    char name[32];
    if (n == 0 || n >= sizeof name) return -1;
    memcpy(name, s, n);
    name[n] = '\0';
    for (int node = 0; node < g->n_nodes; node++) {
        char got[32];
        hs_graph_node_name(g, node, got, sizeof got);
        if (strcmp(got, name) == 0) return node;
    }
    return -1;
}

int hs_graph_find_node(const hs_graph *g, const char *name)
{
    return parse_node(g, name, strlen(name));
}

long hs_graph_find_edge(const hs_graph *g, const char *name)
{
    const char *arrow = strstr(name, "->");
    if (arrow == NULL) return -1;
    const int u = parse_node(g, name, (size_t)(arrow - name));
    const char *dst = arrow + 2;
    size_t n = strlen(dst);
    int kind = HS_RECV_WHOLE;
    static const char *const qkv[3] = {"<q>", "<k>", "<v>"};
    for (int x = 0; x < 3; x++)
        if (n > 3 && strcmp(dst + n - 3, qkv[x]) == 0) {
            kind = x;
            n -= 3;
        }
    const int v = parse_node(g, dst, n);
    if (u < 0 || v < 0 || (kind != HS_RECV_WHOLE) != (g->node_kind[v] == HS_NODE_HEAD)) return -1;
    for (int r = 0; r < g->n_receivers; r++) {
        if (g->recv_node[r] != v || (int)g->recv_kind[r] != kind) continue;
        for (size_t e = g->recv_first_edge[r]; e < g->recv_first_edge[r] + (size_t)g->recv_n_edges[r]; e++)
            if (g->edge_src[e] == u) return (long)e;
        return -1;
    }
    return -1;
}
