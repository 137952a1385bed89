/*
 * discovery/graph_fig.c -- the circuit graph and the faithfulness curve as
 * figures (experiments.h, "Circuit figures"): an hs_graph with its scores
 * and in-circuit flags placed for viz's graph figure (MIB's names, layers
 * bottom to top, a layer's heads side by side then its MLP), and
 * faithfulness over circuit size as viz's line plot on a log x axis.
 */
#include "discovery/discovery.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The places and names of g's nodes, the drawn edges, as viz takes them. */
typedef struct {
    hs_viz_graph v;
    char (*names)[32];
    const char **name_at;
    int *row, *col, *from, *to;
    unsigned char *ports, *port;
    float *score;
} graph_arrays;

static void arrays_free(graph_arrays *a)
{
    free(a->names);
    free(a->name_at);
    free(a->row);
    free(a->col);
    free(a->from);
    free(a->to);
    free(a->ports);
    free(a->port);
    free(a->score);
}

/* Rows: input 0, layer l's heads 1 + l (1 + mlp), its MLP the row above
 * them, logits on top; columns: head h at h, the MLP at H, input and logits
 * centred (-1). Edges: those in_graph flags (all when NULL). */
static hs_status arrays_fill(const hs_graph *g, const double *scores, const unsigned char *in_graph,
                             graph_arrays *a, hs_error *err)
{
    const size_t n = (size_t)g->n_nodes;
    size_t ne = 0;
    for (size_t e = 0; e < g->n_edges; e++) ne += !in_graph || in_graph[e];
    a->names = calloc(n, sizeof *a->names);
    a->name_at = calloc(n, sizeof *a->name_at);
    a->row = calloc(n, sizeof *a->row), a->col = calloc(n, sizeof *a->col);
    a->ports = calloc(n, 1);
    a->from = calloc(ne + 1, sizeof *a->from), a->to = calloc(ne + 1, sizeof *a->to);
    a->port = calloc(ne + 1, 1);
    a->score = calloc(ne + 1, sizeof *a->score);
    if (!a->names || !a->name_at || !a->row || !a->col || !a->ports || !a->from || !a->to || !a->port ||
        !a->score)
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    const int step = 1 + g->has_mlp;
    for (size_t i = 0; i < n; i++) {
        hs_graph_node_name(g, (int)i, a->names[i], sizeof a->names[i]);
        a->name_at[i] = a->names[i];
        const int l = g->node_layer[i];
        switch (g->node_kind[i]) {
        case HS_NODE_INPUT: a->row[i] = 0, a->col[i] = -1; break;
        case HS_NODE_HEAD: a->row[i] = 1 + l * step, a->col[i] = g->node_head[i], a->ports[i] = 1; break;
        case HS_NODE_MLP: a->row[i] = 2 + l * step, a->col[i] = g->n_heads; break;
        case HS_NODE_LOGITS: a->row[i] = 1 + g->n_layers * step, a->col[i] = -1; break;
        }
    }
    static const unsigned char PORT[4] = {HS_VIZ_PORT_Q, HS_VIZ_PORT_K, HS_VIZ_PORT_V, HS_VIZ_PORT_WHOLE};
    size_t k = 0;
    for (size_t e = 0; e < g->n_edges; e++) {
        if (in_graph && !in_graph[e]) continue;
        const int r = g->edge_dst[e];
        a->from[k] = g->edge_src[e];
        a->to[k] = g->recv_node[r];
        a->port[k] = PORT[g->recv_kind[r]];
        a->score[k++] = scores ? (float)scores[e] : 1.0f;
    }
    a->v = (hs_viz_graph){n, a->name_at, a->row, a->col, a->ports, NULL, ne, a->from, a->to, a->score, a->port};
    return HS_OK;
}

hs_status hs_graph_figure(const hs_graph *g, const double *scores, const unsigned char *in_graph,
                          const char *title, const hs_viz_options *o, hs_viz_figure **fig,
                          cJSON **json, hs_error *err)
{
    if (fig) *fig = NULL;
    if (json) *json = NULL;
    graph_arrays a = {0};
    hs_status s = arrays_fill(g, scores, in_graph, &a, err);
    if (!s && json) s = hs_viz_graph_json(&a.v, title, json, err);
    if (!s && fig) s = hs_viz_graph_figure(&a.v, title, o, fig, err);
    if (s && json) {
        cJSON_Delete(*json);
        *json = NULL;
    }
    arrays_free(&a);
    return s;
}

hs_status hs_faithfulness_figure(const double *percent, size_t n, const double *f,
                                 const char *const *methods, size_t n_methods, const char *title,
                                 const hs_viz_options *o, hs_viz_figure **fig, cJSON **json,
                                 hs_error *err)
{
    if (fig) *fig = NULL;
    if (json) *json = NULL;
    if (n < 1 || n_methods < 1)
        return hs_fail(err, HS_ERR_INPUT, "faithfulness curve: %zu sizes of %zu methods", n, n_methods);
    float *x = malloc(n * sizeof *x), *y = malloc(n * n_methods * sizeof *y);
    if (!x || !y) {
        free(x);
        free(y);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) x[i] = (float)percent[i];
    for (size_t i = 0; i < n * n_methods; i++) y[i] = (float)f[i];
    hs_viz_options vo;
    if (o) vo = *o;
    else hs_viz_options_default(&vo);
    vo.log_x = 1;
    vo.y_cover = 1;
    vo.mark_y = 1.0;
    vo.mark_y_label = "full model";
    const hs_viz_panel P = {y, n_methods, methods, NULL, "faithfulness", 0.0, 1.0, 0};
    const char *xl = "circuit size (% of the graph's edges)";
    hs_status s = json ? hs_viz_lines_json(json, x, n, &P, 1, title, xl, err) : HS_OK;
    /* what the page needs to draw it as the figure does */
    if (!s && json && (!cJSON_AddStringToObject(*json, "x_scale", "log") ||
                       !cJSON_AddNumberToObject(*json, "mark_y", 1.0)))
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (!s && fig) s = hs_viz_lines_figure(fig, x, n, &P, 1, title, xl, NAN, NULL, &vo, err);
    if (s && json) {
        cJSON_Delete(*json);
        *json = NULL;
    }
    free(x);
    free(y);
    return s;
}
