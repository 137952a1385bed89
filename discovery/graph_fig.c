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
#include <string.h>

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
 * centred (-1). Edges: those in_graph flags (all when NULL). compact: only
 * the nodes the edges touch (input and logits always), the rows and a
 * layer's heads closed up (a head's name keeps its index), the MLPs in the
 * column after the most heads a layer keeps. */
static hs_status arrays_fill(const hs_graph *g, const double *scores, const unsigned char *in_graph,
                             int compact, graph_arrays *a, hs_error *err)
{
    const size_t n_all = (size_t)g->n_nodes;
    size_t ne = 0;
    for (size_t e = 0; e < g->n_edges; e++) ne += !in_graph || in_graph[e];
    int *map = malloc(n_all * sizeof *map); /* g's node -> the figure's, -1 = not drawn */
    if (!map) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < n_all; i++)
        map[i] = !compact || g->node_kind[i] == HS_NODE_INPUT || g->node_kind[i] == HS_NODE_LOGITS ? 0 : -1;
    if (compact)
        for (size_t e = 0; e < g->n_edges; e++)
            if (!in_graph || in_graph[e]) map[g->edge_src[e]] = map[g->recv_node[g->edge_dst[e]]] = 0;
    for (size_t i = 0; i < n_all; i++)
        if (map[i] == 0) map[i] = (int)n++;
    a->names = calloc(n, sizeof *a->names);
    a->name_at = calloc(n, sizeof *a->name_at);
    a->row = calloc(n, sizeof *a->row), a->col = calloc(n, sizeof *a->col);
    a->ports = calloc(n, 1);
    a->from = calloc(ne + 1, sizeof *a->from), a->to = calloc(ne + 1, sizeof *a->to);
    a->port = calloc(ne + 1, 1);
    a->score = calloc(ne + 1, sizeof *a->score);
    const int step = 1 + g->has_mlp, n_rows = 2 + g->n_layers * step;
    int *row_at = calloc((size_t)n_rows, sizeof *row_at), *heads_in = calloc((size_t)n_rows, sizeof *heads_in);
    if (!a->names || !a->name_at || !a->row || !a->col || !a->ports || !a->from || !a->to || !a->port ||
        !a->score || !row_at || !heads_in) {
        free(map);
        free(row_at);
        free(heads_in);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    int most_heads = 0;
    for (size_t i = 0; i < n_all; i++) {
        if (map[i] < 0) continue;
        const size_t k = (size_t)map[i];
        hs_graph_node_name(g, (int)i, a->names[k], sizeof a->names[k]);
        a->name_at[k] = a->names[k];
        const int l = g->node_layer[i];
        switch (g->node_kind[i]) {
        case HS_NODE_INPUT: a->row[k] = 0, a->col[k] = -1; break;
        case HS_NODE_HEAD: /* g lists a layer's heads in order */
            a->row[k] = 1 + l * step, a->ports[k] = 1;
            a->col[k] = compact ? heads_in[a->row[k]]++ : g->node_head[i];
            most_heads = heads_in[a->row[k]] > most_heads ? heads_in[a->row[k]] : most_heads;
            break;
        case HS_NODE_MLP: a->row[k] = 2 + l * step, a->col[k] = g->n_heads; break;
        case HS_NODE_LOGITS: a->row[k] = 1 + g->n_layers * step, a->col[k] = -1; break;
        }
        row_at[a->row[k]] = 1;
    }
    if (compact) { /* rows closed up, the MLPs after the most heads a row keeps */
        for (int r = 0, used = 0; r < n_rows; r++) row_at[r] = row_at[r] ? used++ : -1;
        for (size_t k = 0; k < n; k++) {
            if (a->col[k] == g->n_heads) a->col[k] = most_heads;
            a->row[k] = row_at[a->row[k]];
        }
    }
    free(row_at);
    free(heads_in);
    static const unsigned char PORT[4] = {HS_VIZ_PORT_Q, HS_VIZ_PORT_K, HS_VIZ_PORT_V, HS_VIZ_PORT_WHOLE};
    size_t k = 0;
    for (size_t e = 0; e < g->n_edges; e++) {
        if (in_graph && !in_graph[e]) continue;
        const int r = g->edge_dst[e];
        a->from[k] = map[g->edge_src[e]];
        a->to[k] = map[g->recv_node[r]];
        a->port[k] = PORT[g->recv_kind[r]];
        a->score[k++] = scores ? (float)scores[e] : 1.0f;
    }
    free(map);
    a->v = (hs_viz_graph){n, a->name_at, a->row, a->col, a->ports, NULL, ne, a->from, a->to, a->score, a->port};
    return HS_OK;
}

/* The figure of the k strongest drawn edges (by[0..k), edge indices) and
 * their nodes alone, its note under the title saying so. */
static hs_status strongest_figure(const hs_graph *g, const double *scores, const size_t *by, size_t k,
                                  size_t n_drawn, unsigned char *mask, const char *title,
                                  const hs_viz_options *o, hs_viz_figure **fig, graph_arrays *a,
                                  hs_error *err)
{
    memset(mask, 0, g->n_edges);
    for (size_t i = 0; i < k; i++) mask[by[i]] = 1;
    arrays_free(a);
    memset(a, 0, sizeof *a);
    hs_status s = arrays_fill(g, scores, mask, 1, a, err);
    if (s != HS_OK) return s;
    char note[200];
    hs_viz_options vo;
    if (o) vo = *o;
    else hs_viz_options_default(&vo);
    if (k < n_drawn)
        snprintf(note, sizeof note, "%s%sdrawn: its %zu strongest edges by |score| and their nodes, to fit "
                 "the height", vo.note ? vo.note : "", vo.note ? "; " : "", k);
    else
        snprintf(note, sizeof note, "%s%sdrawn: only the nodes of its %zu edges, to fit the height",
                 vo.note ? vo.note : "", vo.note ? "; " : "", k);
    vo.note = note;
    return hs_viz_graph_figure(&a->v, title, &vo, fig, err);
}

/* *fig within the height budget (o->max_height_in, HS_VIZ_MAX_HEIGHT_IN by
 * default) as the bar charts are: when every drawn edge makes it taller,
 * the largest k whose k strongest edges and their nodes fit (bisection: a
 * layout is monotone enough in k; k = 1 when none fits). a, the arrays of
 * the figure, are replaced by those of the one kept. */
static hs_status fit_height(const hs_graph *g, const double *scores, const unsigned char *in_graph,
                            const char *title, const hs_viz_options *o, hs_viz_figure **fig,
                            graph_arrays *a, size_t *drawn, hs_error *err)
{
    const double hmax = o && o->max_height_in > 0 ? o->max_height_in : HS_VIZ_MAX_HEIGHT_IN;
#define TOO_TALL(f) ((double)hs_viz_figure_height(f) / hs_viz_figure_dpi(f) > hmax + 1e-9)
    size_t n = 0;
    for (size_t e = 0; e < g->n_edges; e++) n += !in_graph || in_graph[e];
    *drawn = n;
    if (!TOO_TALL(*fig)) return HS_OK;
    size_t *by = malloc((g->n_edges ? g->n_edges : 1) * sizeof *by); /* hs_edge_ranking's order */
    unsigned char *mask = malloc(g->n_edges ? g->n_edges : 1);
    hs_status s = by && mask ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (s == HS_OK && scores) s = hs_edge_ranking(g, scores, by, err);
    else if (s == HS_OK)
        for (size_t e = 0; e < g->n_edges; e++) by[e] = e;
    size_t m = 0; /* the drawn edges alone, in that order */
    for (size_t i = 0; s == HS_OK && i < g->n_edges; i++)
        if (!in_graph || in_graph[by[i]]) by[m++] = by[i];
    if (s != HS_OK) {
        free(by);
        free(mask);
        return s;
    }
    size_t lo = 1, hi = n + 1; /* the largest k that fits is in [lo, hi): hi does not */
    hs_viz_figure *f = NULL;
    while (s == HS_OK && hi - lo > 1) { /* every edge with only its nodes first */
        const size_t k = hi == n + 1 ? n : lo + (hi - lo) / 2;
        s = strongest_figure(g, scores, by, k, n, mask, title, o, &f, a, err);
        if (s == HS_OK) {
            if (TOO_TALL(f)) hi = k;
            else lo = k;
            if (lo == n) break;
            hs_viz_figure_destroy(f);
            f = NULL;
        }
    }
    if (s == HS_OK && f == NULL) s = strongest_figure(g, scores, by, lo, n, mask, title, o, &f, a, err);
#undef TOO_TALL
    free(by);
    free(mask);
    if (s != HS_OK) return s;
    hs_viz_figure_destroy(*fig);
    *fig = f;
    *drawn = lo;
    return HS_OK;
}

hs_status hs_graph_figure(const hs_graph *g, const double *scores, const unsigned char *in_graph,
                          const char *title, const hs_viz_options *o, hs_viz_figure **fig,
                          cJSON **json, size_t *drawn, hs_error *err)
{
    if (fig) *fig = NULL;
    if (json) *json = NULL;
    size_t k = 0;
    graph_arrays a = {0};
    hs_status s = arrays_fill(g, scores, in_graph, 0, &a, err);
    if (!s && json) s = hs_viz_graph_json(&a.v, title, json, err); /* every in_graph edge */
    if (!s && fig) s = hs_viz_graph_figure(&a.v, title, o, fig, err);
    if (!s && fig) s = fit_height(g, scores, in_graph, title, o, fig, &a, &k, err);
    if (drawn) *drawn = s ? 0 : k;
    if (s && fig) {
        hs_viz_figure_destroy(*fig);
        *fig = NULL;
    }
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
