/*
 * discovery/discover_figs.c -- a found circuit in an output folder
 * (discovery.h, "A found circuit in an output folder"): graph.json on disk
 * and on the page, the circuit figure and the faithfulness curve in the
 * folder's formats, and the attention of one prompt for the page's circuit
 * view. `discover` and `circuit` both write through these.
 */
#include "discovery/discovery.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hs_status oom(hs_error *err)
{
    return hs_fail(err, HS_ERR_NOMEM, "out of memory");
}

hs_status hs_graph_json_write(hs_outdir *od, const hs_graph *g, const hs_config *cfg, const double *scores,
                              const unsigned char *in_circuit, const char *shows, hs_error *err)
{
    hs_buf gj = {0};
    hs_status s = hs_graph_json_text(g, cfg, scores, in_circuit, &gj, err);
    if (s == HS_OK) s = hs_outdir_file(od, "graph.json", "json", gj.s, gj.len, shows, err);
    if (s == HS_OK && hs_outdir_page_wants(od, "graph")) {
        cJSON *j = cJSON_ParseWithLength(gj.s, gj.len);
        s = j ? hs_outdir_page(od, "graph", j, err) : oom(err);
    }
    hs_buf_free(&gj);
    return s;
}

/* The figure (when images are wanted) and its JSON with od's context (when
 * data is wanted) into od under stem; fig and j are taken. */
static hs_status put_figure(hs_outdir *od, const char *stem, hs_viz_figure *fig, cJSON *j, const char *shows,
                            hs_error *err)
{
    hs_status s = j && !hs_json_add_copies(j, od->context) ? oom(err) : HS_OK;
    if (s == HS_OK) s = hs_outdir_figure(od, stem, &fig, j, shows, err);
    hs_viz_figure_destroy(fig);
    cJSON_Delete(j);
    return s;
}

hs_status hs_graph_figure_write(hs_outdir *od, const char *stem, const hs_graph *g, const double *scores,
                                const unsigned char *in_graph, const char *title, const char *shows,
                                hs_error *err)
{
    size_t n = 0;
    for (size_t e = 0; e < g->n_edges; e++) n += !in_graph || in_graph[e];
    const int images = hs_figopts_images(od->fo), data = hs_figopts_data(od->fo);
    if (!images && !data) return HS_OK;
    unsigned char *top = NULL;
    const int capped = n > HS_VIZ_MAX_EDGES;
    if (capped) { /* the strongest edges by |score| up to the cap (by index when no scores) */
        if ((top = malloc(g->n_edges)) == NULL) return oom(err);
        for (size_t e = 0; e < g->n_edges; e++) top[e] = !in_graph || in_graph[e];
        hs_status ks = hs_circuit_keep_strongest(g, scores, top, HS_VIZ_MAX_EDGES, NULL, err);
        if (ks != HS_OK) {
            free(top);
            return ks;
        }
        in_graph = top;
    }
    hs_viz_figure *fig = NULL;
    cJSON *j = NULL;
    hs_error fe = {0};
    size_t drawn = 0;
    hs_status s = hs_graph_figure(g, scores, in_graph, title, &od->fo->viz, images ? &fig : NULL, data ? &j : NULL,
                                  &drawn, &fe);
    if (s == HS_ERR_INPUT && images) { /* the figure cannot be drawn: its JSON alone */
        s = hs_outdir_unfit(od, stem, s, &fe, err);
        if (s == HS_OK && data)
            s = hs_graph_figure(g, scores, in_graph, title, &od->fo->viz, NULL, &j, NULL, err);
    } else if (s != HS_OK && err) {
        *err = fe;
    }
    free(top);
    if (s != HS_OK) return s;
    if (capped && fig) /* what is drawn: the cap's strongest, or fewer to fit the height */
        hs_note(&od->notes, HS_NOTE_CMD, "note: the circuit has %zu edges, over the figure's cap of %d; "
                "%s draws its %zu strongest by |score|%s (%s.json the %d strongest, graph.json every "
                "edge)", n, HS_VIZ_MAX_EDGES, stem, drawn,
                drawn < HS_VIZ_MAX_EDGES ? ", as many as fit the height" : "", stem, HS_VIZ_MAX_EDGES);
    else if (capped && data)
        hs_note(&od->notes, HS_NOTE_CMD, "note: the circuit has %zu edges, over the figure's cap of %d; "
                "%s.json holds the %d strongest by |score| (graph.json every edge)", n, HS_VIZ_MAX_EDGES,
                stem, HS_VIZ_MAX_EDGES);
    return put_figure(od, stem, fig, j, shows, err);
}

hs_status hs_faith_figure_write(hs_outdir *od, const char *stem, const hs_faith_curve *const *curves,
                                const char *const *methods, size_t n_methods, const char *title,
                                const char *shows, hs_error *err)
{
    const int images = hs_figopts_images(od->fo), data = hs_figopts_data(od->fo);
    if (!images && !data) return HS_OK;
    double pct[HS_FAITH_N], *f = malloc((n_methods ? n_methods : 1) * HS_FAITH_N * sizeof *f);
    if (f == NULL) return oom(err);
    for (int k = 0; k < HS_FAITH_N; k++) pct[k] = 100.0 * hs_faith_fractions[k];
    for (size_t i = 0; i < n_methods; i++)
        for (int k = 0; k < HS_FAITH_N; k++)
            f[i * HS_FAITH_N + (size_t)k] = curves[i]->usable ? curves[i]->pt[k + 1].faithfulness : NAN;
    hs_viz_figure *fig = NULL;
    cJSON *j = NULL;
    hs_error fe = {0};
    hs_status s = hs_faithfulness_figure(pct, HS_FAITH_N, f, methods, n_methods, title, &od->fo->viz,
                                         images ? &fig : NULL, data ? &j : NULL, &fe);
    if (s == HS_ERR_INPUT && images) { /* the figure cannot be drawn: its JSON alone */
        s = hs_outdir_unfit(od, stem, s, &fe, err);
        if (s == HS_OK && data)
            s = hs_faithfulness_figure(pct, HS_FAITH_N, f, methods, n_methods, title, &od->fo->viz,
                                       NULL, &j, err);
    } else if (s != HS_OK && err) {
        *err = fe;
    }
    free(f);
    if (s != HS_OK) return s;
    return put_figure(od, stem, fig, j, shows, err);
}

hs_status hs_prompt_attention_json(const hs_model *m, const int *tokens, int t, const hs_tokenizer *tok,
                                   const char *title, const char *model_path, int packed, cJSON **out,
                                   hs_error *err)
{
    *out = NULL;
    const int L = m->cfg.n_layers, H = m->cfg.n_heads;
    const size_t TT = (size_t)t * (size_t)t;
    hs_acts *acts = NULL;
    hs_cache cache;
    hs_cache_init(&cache);
    hs_labels names, toks;
    hs_labels_init(&names, (size_t)L * H);
    hs_labels_init(&toks, (size_t)t);
    float *att = malloc((size_t)L * H * TT * sizeof *att);
    cJSON *ctx = hs_run_context(&m->cfg, model_path);
    static const char *const filt[] = {"blocks.*.attn.hook_pattern"};
    hs_status s = att && ctx ? hs_acts_create(&m->cfg, 1, t, 0, &acts, err) : oom(err);
    if (s == HS_OK) s = hs_run_with_cache(m, acts, tokens, 1, t, filt, 1, NULL, &cache, err);
    for (int l = 0; l < L && s == HS_OK; l++) {
        const hs_cache_entry *e = hs_cache_getf(&cache, "blocks.%d.attn.hook_pattern", l);
        HS_ASSERT(e != NULL && e->numel == (size_t)H * TT);
        memcpy(att + (size_t)l * H * TT, e->data, (size_t)H * TT * sizeof *att);
        for (int h = 0; h < H; h++) hs_labels_set(&names, (size_t)(l * H + h), "L%dH%d", l, h);
    }
    for (int i = 0; i < t && s == HS_OK; i++) {
        const char *w = tok ? hs_tok_str(tok, tokens[i]) : NULL;
        if (w) hs_labels_set(&toks, (size_t)i, "%s", w);
        else hs_labels_set(&toks, (size_t)i, "#%d", tokens[i]);
    }
    if (s == HS_OK && (names.oom || toks.oom)) s = oom(err);
    if (s == HS_OK)
        s = packed ? hs_viz_attention_json_packed(out, att, (size_t)L * H, (size_t)t, toks.at, names.at, title, err)
                   : hs_viz_attention_json(out, att, (size_t)L * H, (size_t)t, toks.at, names.at, title, err);
    if (s == HS_OK && !hs_json_add_copies(*out, ctx)) {
        cJSON_Delete(*out);
        *out = NULL;
        s = oom(err);
    }
    cJSON_Delete(ctx);
    free(att);
    hs_labels_free(&names);
    hs_labels_free(&toks);
    hs_cache_free(&cache);
    hs_acts_destroy(acts);
    return s;
}
