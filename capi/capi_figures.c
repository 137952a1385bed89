/*
 * capi/capi_figures.c -- figures and prompt sets for a foreign caller
 * (capi/headscope.h): hs_api_attention_figure, the viz module's attention
 * figures from plain arrays written as PNG, SVG or PDF by the code the CLI's
 * figures use; hs_api_ioi, `headscope prompts ioi`'s set.
 */
#include "capi/headscope.h"

#include <string.h>

#include "tasks/tasks.h"
#include "viz/viz.h"

/* 1 when path ends with ext ("png"). */
static int ends_with(const char *path, const char *ext)
{
    const size_t n = strlen(path), e = strlen(ext);
    return n > e && path[n - e - 1] == '.' && strcmp(path + n - e, ext) == 0;
}

hs_status hs_api_attention_figure(const float *patterns, int L, int H, int T, const char *const *tokens,
                                  const char *title, double width_in, double dpi, const char *path,
                                  hs_error *err)
{
    if (patterns == NULL || tokens == NULL || path == NULL)
        return hs_fail(err, HS_ERR_INPUT, "a figure needs patterns, tokens and a path");
    if (L < 0 || H < 1 || T < 1) return hs_fail(err, HS_ERR_INPUT, "a figure needs at least one head of one token");
    const int png = ends_with(path, "png"), svg = ends_with(path, "svg"), pdf = ends_with(path, "pdf");
    if (!png && !svg && !pdf) return hs_fail(err, HS_ERR_INPUT, "%s: a figure is written as .png, .svg or .pdf", path);
    hs_viz_options o;
    hs_viz_options_default(&o);
    if (width_in > 0) o.width_in = width_in;
    if (dpi > 0) o.dpi = dpi;
    hs_viz_figure *f = NULL;
    hs_status st = L == 0 ? hs_viz_attention_figure(&f, patterns, (size_t)T, tokens, title, &o, err)
                          : hs_viz_grid_figure(&f, patterns, (size_t)L, (size_t)H, (size_t)T, tokens, title, &o, err);
    if (st == HS_OK) {
        st = png ? hs_viz_figure_write_png(f, path, NULL, err)
                 : svg ? hs_viz_figure_write_svg(f, path, err) : hs_viz_figure_write_pdf(f, path, err);
    }
    hs_viz_figure_destroy(f);
    return st;
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
