/*
 * capi/capi_figures.c -- figures and prompt sets for a foreign caller
 * (capi/headscope.h): figures laid out by the viz module's public functions
 * (the code the CLI's figures use) from plain arrays, held as handles and
 * written as PNG, SVG or PDF on demand; the circuit graph of a graph.json
 * (hs_graph_figure, discover's figure); hs_api_ioi, `headscope prompts
 * ioi`'s set.
 */
#include "capi/headscope.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "discovery/discovery.h"
#include "tasks/tasks.h"
#include "viz/viz.h"

struct hs_api_figure {
    hs_viz_figure *f;
};

/* 1 when path ends with ext ("png"). */
static int ends_with(const char *path, const char *ext)
{
    const size_t n = strlen(path), e = strlen(ext);
    return n > e && path[n - e - 1] == '.' && strcmp(path + n - e, ext) == 0;
}

/* viz's defaults with width_in (0 = the figure's default) and dpi (0 = 300). */
static hs_viz_options options(double width_in, double dpi)
{
    hs_viz_options o;
    hs_viz_options_default(&o);
    if (width_in > 0) o.width_in = width_in;
    if (dpi > 0) o.dpi = dpi;
    return o;
}

/* *out <- a handle owning f (or f destroyed on failure); st passes through. */
static hs_status wrap(hs_status st, hs_viz_figure *f, hs_api_figure **out, hs_error *err)
{
    if (st != HS_OK) {
        hs_viz_figure_destroy(f);
        return st;
    }
    hs_api_figure *h = malloc(sizeof *h);
    if (h == NULL) {
        hs_viz_figure_destroy(f);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    h->f = f;
    *out = h;
    return HS_OK;
}

hs_status hs_api_figure_attention(const float *patterns, int L, int H, int T, const char *const *tokens,
                                  int first_layer, const char *title, double width_in, double dpi,
                                  hs_api_figure **out, hs_error *err)
{
    *out = NULL;
    if (patterns == NULL || tokens == NULL) return hs_fail(err, HS_ERR_INPUT, "a figure needs patterns and tokens");
    if (L < 0 || H < 1 || T < 1) return hs_fail(err, HS_ERR_INPUT, "a figure needs at least one head of one token");
    if (L > HS_VIZ_MAX_LAYERS || first_layer < -1 || first_layer > 99999)
        return hs_fail(err, HS_ERR_INPUT, "a grid has 1..%d layers from layer >= 0 (or -1: unnamed), not %d from %d",
                       HS_VIZ_MAX_LAYERS, L, first_layer);
    const hs_viz_options o = options(width_in, dpi);
    hs_viz_figure *f = NULL;
    hs_status st;
    if (L == 0) {
        st = hs_viz_attention_figure(&f, patterns, (size_t)T, tokens, title, &o, err);
    } else {
        char names[HS_VIZ_MAX_LAYERS][16];
        const char *rows[HS_VIZ_MAX_LAYERS];
        for (int l = 0; l < L; l++) {
            if (first_layer < 0)
                names[l][0] = '\0';
            else
                snprintf(names[l], sizeof names[l], "L%d", first_layer + l);
            rows[l] = names[l];
        }
        st = hs_viz_grid_figure_labeled(&f, patterns, (size_t)L, (size_t)H, (size_t)T, tokens, rows, NULL, title,
                                        &o, err);
    }
    return wrap(st, f, out, err);
}

hs_status hs_api_figure_bars(const float *values, int N, const char *const *labels, const char *title,
                             const char *xlabel, const char *note, int add_up, double width_in, double dpi, hs_api_figure **out,
                             hs_error *err)
{
    *out = NULL;
    if (values == NULL || labels == NULL || N < 1) return hs_fail(err, HS_ERR_INPUT, "a bar chart needs values and labels");
    hs_viz_options o = options(width_in, dpi);
    o.range = HS_VIZ_RANGE_AUTO; /* fitted to the data, as the CLI's bars */
    o.note = note;
    o.bars_add_up = add_up != 0;
    hs_viz_figure *f = NULL;
    const hs_status st = hs_viz_bars_figure(&f, values, (size_t)N, labels, title, xlabel, &o, err);
    return wrap(st, f, out, err);
}

hs_status hs_api_figure_heatmap(const float *m, int R, int C, const char *const *row_labels,
                                const char *const *col_labels, const char *title, const char *xlabel,
                                const char *ylabel, int is_signed, double limit, const char *value_label,
                                const char *note, double width_in, double dpi, hs_api_figure **out, hs_error *err)
{
    *out = NULL;
    if (m == NULL || row_labels == NULL || col_labels == NULL || R < 1 || C < 1)
        return hs_fail(err, HS_ERR_INPUT, "a heatmap needs a matrix and its row and column labels");
    hs_viz_options o = options(width_in, dpi);
    if (!(limit >= 0)) return hs_fail(err, HS_ERR_INPUT, "a heatmap's limit is >= 0 (0 = the data's range)");
    o.range = limit > 0 ? HS_VIZ_RANGE_FIXED : HS_VIZ_RANGE_AUTO;
    o.vmin = is_signed ? -limit : 0;
    o.vmax = limit;
    o.value_label = value_label;
    o.note = note;
    hs_viz_figure *f = NULL;
    hs_status st = is_signed ? hs_viz_signed_figure(&f, m, (size_t)R, (size_t)C, row_labels, col_labels, title, xlabel,
                                                    ylabel, &o, err)
                             : hs_viz_matrix_figure(&f, m, (size_t)R, (size_t)C, row_labels, col_labels, title, xlabel,
                                                    ylabel, &o, err);
    return wrap(st, f, out, err);
}

hs_status hs_api_figure_circuit(const hs_api_model *h, const char *graph_json, const char *title, double width_in,
                                double dpi, int *n_drawn, hs_api_figure **out, hs_error *err)
{
    *out = NULL;
    *n_drawn = 0;
    if (h == NULL) return hs_fail(err, HS_ERR_INPUT, "no model (it was freed)");
    if (graph_json == NULL) return hs_fail(err, HS_ERR_INPUT, "a circuit figure needs a graph");
    const hs_config *cfg = hs_api_config(h);
    hs_graph g = {0};
    hs_status st = hs_graph_build(cfg, &g, err);
    double *scores = NULL;
    unsigned char *in = NULL;
    if (st == HS_OK) {
        scores = malloc((g.n_edges ? g.n_edges : 1) * sizeof *scores);
        in = calloc(g.n_edges ? g.n_edges : 1, 1);
        if (!scores || !in) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    if (st == HS_OK) st = hs_graph_json_parse(&g, cfg, graph_json, strlen(graph_json), "graph", scores, in, err);
    size_t n = 0;
    for (size_t e = 0; st == HS_OK && e < g.n_edges; e++) n += in[e] != 0;
    if (st == HS_OK) /* as discover's figure: the strongest by |score| up to the cap */
        st = hs_circuit_keep_strongest(&g, scores, in, HS_VIZ_MAX_EDGES, &n, err);
    hs_viz_figure *f = NULL;
    if (st == HS_OK) {
        const hs_viz_options o = options(width_in, dpi);
        st = hs_graph_figure(&g, scores, in, title, &o, &f, NULL, NULL, err);
    }
    if (st == HS_OK) *n_drawn = (int)n;
    free(in);
    free(scores);
    hs_graph_free(&g);
    return wrap(st, f, out, err);
}

hs_status hs_api_figure_save(const hs_api_figure *fig, const char *path, hs_error *err)
{
    if (fig == NULL || path == NULL) return hs_fail(err, HS_ERR_INPUT, "no figure or no path");
    const int png = ends_with(path, "png"), svg = ends_with(path, "svg"), pdf = ends_with(path, "pdf");
    if (!png && !svg && !pdf) return hs_fail(err, HS_ERR_INPUT, "%s: a figure is written as .png, .svg or .pdf", path);
    return png ? hs_viz_figure_write_png(fig->f, path, NULL, err)
               : svg ? hs_viz_figure_write_svg(fig->f, path, err) : hs_viz_figure_write_pdf(fig->f, path, err);
}

void hs_api_figure_size(const hs_api_figure *fig, size_t *w, size_t *h, double *dpi)
{
    *w = fig ? hs_viz_figure_width(fig->f) : 0;
    *h = fig ? hs_viz_figure_height(fig->f) : 0;
    *dpi = fig ? hs_viz_figure_dpi(fig->f) : 0;
}

void hs_api_figure_free(hs_api_figure *fig)
{
    if (fig == NULL) return;
    hs_viz_figure_destroy(fig->f);
    free(fig);
}

/* ------------------------------------------------------------------------ */
/* Prompt sets                                                               */

hs_status hs_api_ioi(hs_api_model *h, int n, uint64_t seed, int abc, int template_id, char **jsonl, hs_error *err)
{
    *jsonl = NULL;
    if (n < 1 || n > HS_IOI_MAX_N) return hs_fail(err, HS_ERR_INPUT, "n must be an integer in [1, %d], not %d", HS_IOI_MAX_N, n);
    if (template_id < -1 || template_id >= HS_IOI_N_TEMPLATES)
        return hs_fail(err, HS_ERR_INPUT, "template must be in [0, %d] (or none), not %d", HS_IOI_N_TEMPLATES - 1,
                       template_id);
    const hs_tokenizer *t = hs_api_tokenizer(h);
    if (t == NULL) return hs_fail(err, HS_ERR_INPUT, "no model (it was freed)");
    hs_ioi_params p = {.n = n, .seed = seed, .corrupt = abc ? HS_IOI_CORRUPT_ABC : HS_IOI_CORRUPT_S2,
                       .template_id = template_id};
    hs_ioi_set s = {0};
    hs_status st = hs_ioi_generate(t, &p, &s, err);
    if (st == HS_OK) {
        *jsonl = s.jsonl;
        s.jsonl = NULL;
    }
    hs_ioi_set_free(&s);
    return st;
}
