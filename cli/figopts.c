/* cli/figopts.c -- see figopts.h. */
#include "figopts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "model/model.h"

const char CLI_FIGOPTS_HELP[] =
    "figure options (for papers):\n"
    "  --format LIST          comma-separated png,svg,json,html (default: png,svg,json);\n"
    "                         html adds index.html, one offline page to explore the\n"
    "                         data (open it in a browser; `headscope view DIR` makes\n"
    "                         one from an existing folder)\n"
    "  --dpi N                pixels per inch, recorded in the PNG (36..1200)\n"
    "  --width IN             figure width in inches (0 = grows with the tokens)\n"
    "  --font-size PT         label font size in points (4..36; default 8)\n"
    "  --cmap NAME            viridis | greys (attention; signed figures stay blue-white-red)\n"
    "  --range fixed|auto     attention: [0, 1] (fixed, default) or each figure's\n"
    "                         [min, max]; signed matrices: one scale shared by the\n"
    "                         figures of a kind (fixed) or each figure's own (auto)\n"
    "  --annotate             write each cell's value in the cell\n";

void cli_figopts_default(cli_figopts *fo, double dpi)
{
    memset(fo, 0, sizeof *fo);
    hs_viz_options_default(&fo->viz);
    fo->viz.dpi = dpi;
    fo->png = fo->svg = fo->json = 1;
}

int cli_figopts_images(const cli_figopts *fo) { return fo->png || fo->svg; }

int cli_figopts_data(const cli_figopts *fo) { return fo->json || fo->html; }

int cli_figopts_font(const char *cmd, cli_figopts *fo)
{
    if (!cli_figopts_images(fo) || fo->font) return 0;
    hs_error err = {0};
    if (hs_viz_font_path(fo->viz.font_path, &fo->font, &err) != HS_OK) return cli_error(cmd, &err);
    fo->viz.font_path = fo->font;
    return 0;
}

void cli_figopts_free(cli_figopts *fo)
{
    free(fo->font);
    fo->font = NULL;
    fo->viz.font_path = NULL;
}

static int parse_formats(const char *cmd, const char *arg, cli_figopts *fo)
{
    int png = 0, svg = 0, json = 0, html = 0;
    const char *p = arg;
    while (1) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 3 && strncmp(p, "png", 3) == 0) png = 1;
        else if (n == 3 && strncmp(p, "svg", 3) == 0) svg = 1;
        else if (n == 4 && strncmp(p, "json", 4) == 0) json = 1;
        else if (n == 4 && strncmp(p, "html", 4) == 0) html = 1;
        else
            return cli_usage_error(cmd, "unknown format '%.*s' in --format (png, svg, json, html)",
                                   (int)n, p);
        if (!e) break;
        p = e + 1;
    }
    fo->png = png;
    fo->svg = svg;
    fo->json = json;
    fo->html = html;
    return 0;
}

int cli_figopts_parse(const char *cmd, int code, const char *arg, cli_figopts *fo)
{
    double v;
    switch (code) {
    case CLI_FO_DPI:
        if (cli_parse_float(arg, 36, 1200, &v))
            return cli_usage_error(cmd, "--dpi must be a number in 36..1200, not '%s'", arg);
        fo->viz.dpi = v;
        return 0;
    case CLI_FO_WIDTH:
        if (cli_parse_float(arg, 0, HS_VIZ_GRID_MAX_IN, &v))
            return cli_usage_error(cmd, "--width must be inches in 0..%g (0 = auto), not '%s'",
                                   HS_VIZ_GRID_MAX_IN, arg);
        fo->viz.width_in = v;
        return 0;
    case CLI_FO_FONT:
        if (cli_parse_float(arg, 4, 36, &v))
            return cli_usage_error(cmd, "--font-size must be points in 4..36, not '%s'", arg);
        fo->viz.font_pt = v;
        return 0;
    case CLI_FO_CMAP:
        if (strcmp(arg, "viridis") == 0) fo->viz.cmap = HS_VIZ_CMAP_VIRIDIS;
        else if (strcmp(arg, "greys") == 0 || strcmp(arg, "grays") == 0)
            fo->viz.cmap = HS_VIZ_CMAP_GREYS;
        else return cli_usage_error(cmd, "unknown --cmap '%s' (viridis, greys)", arg);
        return 0;
    case CLI_FO_RANGE:
        if (strcmp(arg, "fixed") == 0) fo->viz.range = HS_VIZ_RANGE_FIXED;
        else if (strcmp(arg, "auto") == 0) fo->viz.range = HS_VIZ_RANGE_AUTO;
        else return cli_usage_error(cmd, "unknown --range '%s' (fixed, auto)", arg);
        fo->range_set = 1;
        return 0;
    case CLI_FO_ANNOTATE: fo->viz.annotate = 1; return 0;
    case CLI_FO_FORMAT: return parse_formats(cmd, arg, fo);
    default: return -1;
    }
}

int cli_outdir_open(cli_outdir *o, const char *cmd, const char *dir, const cli_figopts *fo)
{
    memset(o, 0, sizeof *o);
    o->cmd = cmd;
    o->dir = dir;
    o->fo = fo;
    if (cli_prepare_out_dir(cmd, dir)) return 1;
    o->files = cJSON_CreateArray();
    if (fo->html) o->page = cJSON_CreateObject();
    if (!o->files || (fo->html && !o->page)) {
        fprintf(stderr, "headscope %s: out of memory\n", cmd);
        return 1;
    }
    return 0;
}

void cli_outdir_close(cli_outdir *o)
{
    cJSON_Delete(o->files);
    cJSON_Delete(o->page);
    o->files = NULL;
    o->page = NULL;
}

int cli_page_keeps(const char *cmd, const char *stem)
{
    if (strcmp(cmd, "inspect") != 0) return 1;
    int l, h, n = 0;
    if (sscanf(stem, "L%dH%d%n", &l, &h, &n) == 2 && stem[n] == '\0') return 0;
    n = 0;
    if (sscanf(stem, "L%d_mean%n", &l, &n) == 1 && n > 0 && stem[n] == '\0') return 0;
    return 1;
}

int cli_out_page(cli_outdir *o, const char *stem, cJSON *data)
{
    if (!o->page || !cli_page_keeps(o->cmd, stem) || cJSON_GetObjectItem(o->page, stem)) {
        cJSON_Delete(data);
        return 0;
    }
    if (!data || !cJSON_AddItemToObject(o->page, stem, data)) {
        cJSON_Delete(data);
        fprintf(stderr, "headscope %s: out of memory\n", o->cmd);
        return 1;
    }
    return 0;
}

cJSON *cli_page_data(cJSON *runs, hs_viz_cmap cmap)
{
    cJSON *d = cJSON_CreateObject();
    if (!d || !runs || !cJSON_AddItemToObject(d, "runs", runs)) {
        cJSON_Delete(d);
        cJSON_Delete(runs);
        return NULL;
    }
    if (!cJSON_AddStringToObject(d, "cmap", cmap == HS_VIZ_CMAP_GREYS ? "greys" : "viridis")) {
        cJSON_Delete(d);
        return NULL;
    }
    return d;
}

static int add_index(cli_outdir *o, const char *file, const char *format, const char *shows)
{
    cJSON *e = cJSON_CreateObject();
    if (!e || !cJSON_AddStringToObject(e, "file", file) ||
        !cJSON_AddStringToObject(e, "format", format) ||
        !cJSON_AddStringToObject(e, "shows", shows) || !cJSON_AddItemToArray(o->files, e)) {
        cJSON_Delete(e);
        fprintf(stderr, "headscope %s: out of memory\n", o->cmd);
        return 1;
    }
    return 0;
}

/* Writes one file dir/stem.ext with fn; 0 ok, 1 printed. */
static int write_one(cli_outdir *o, const char *stem, const char *ext, const hs_viz_figure *fig,
                     const cJSON *json, const char *shows)
{
    char name[256];
    snprintf(name, sizeof name, "%s.%s", stem, ext);
    char *path = hs_path_join(o->dir, name);
    if (!path) {
        fprintf(stderr, "headscope %s: out of memory\n", o->cmd);
        return 1;
    }
    hs_error err = {0};
    hs_status s;
    if (strcmp(ext, "png") == 0) s = hs_viz_figure_write_png(fig, path, &err);
    else if (strcmp(ext, "svg") == 0) s = hs_viz_figure_write_svg(fig, path, &err);
    else s = hs_viz_write_json(json, path, &err);
    free(path);
    if (s != HS_OK) return cli_error(o->cmd, &err);
    return add_index(o, name, ext, shows);
}

int cli_out_figure(cli_outdir *o, const char *stem, const hs_viz_figure *fig, const cJSON *json,
                   const char *shows)
{
    if (o->fo->png && fig && write_one(o, stem, "png", fig, NULL, shows)) return 1;
    if (o->fo->svg && fig && write_one(o, stem, "svg", fig, NULL, shows)) return 1;
    if (o->fo->json && json && write_one(o, stem, "json", NULL, json, shows)) return 1;
    if (o->page && json) return cli_out_page(o, stem, cJSON_Duplicate(json, 1));
    return 0;
}

int cli_out_json(cli_outdir *o, const char *name, const cJSON *json, const char *shows)
{
    if (write_one(o, name, "json", NULL, json, shows)) return 1;
    return o->page ? cli_out_page(o, name, cJSON_Duplicate(json, 1)) : 0;
}

/* Writes index.html: the page of one run, this folder (idx is its index). 0 ok, 1 printed. */
static int write_page(cli_outdir *o, const cJSON *idx)
{
    cJSON *run = cJSON_CreateObject(), *runs = cJSON_CreateArray();
    int ok = run && runs && cJSON_AddStringToObject(run, "dir", o->dir) &&
             cJSON_AddStringToObject(run, "command", o->cmd) &&
             cJSON_AddItemReferenceToObject(run, "index", (cJSON *)idx) &&
             cJSON_AddItemReferenceToObject(run, "files", o->page) &&
             cJSON_AddItemToArray(runs, run);
    if (!ok) {
        cJSON_Delete(run);
        cJSON_Delete(runs);
        fprintf(stderr, "headscope %s: out of memory\n", o->cmd);
        return 1;
    }
    cJSON *data = cli_page_data(runs, o->fo->viz.cmap);
    char *path = hs_path_join(o->dir, "index.html"), title[512];
    snprintf(title, sizeof title, "headscope %s · %s", o->cmd, o->dir);
    hs_error err = {0};
    hs_status s = !data || !path ? hs_fail(&err, HS_ERR_NOMEM, "out of memory")
                                 : hs_viz_write_html(data, title, path, &err);
    free(path);
    cJSON_Delete(data);
    return s != HS_OK ? cli_error(o->cmd, &err) : 0;
}

int cli_out_index(cli_outdir *o, const cJSON *extra)
{
    cJSON *idx = cJSON_CreateObject();
    int ok = idx && cJSON_AddStringToObject(idx, "command", o->cmd);
    for (const cJSON *it = extra ? extra->child : NULL; ok && it; it = it->next) {
        cJSON *dup = cJSON_Duplicate(it, 1);
        ok = dup && cJSON_AddItemToObject(idx, it->string, dup);
        if (!ok) cJSON_Delete(dup);
    }
    if (ok && o->page)
        ok = add_index(o, "index.html", "html", "one offline page to explore this folder's data "
                                                 "(open it in a browser)") == 0;
    /* index.json lists itself too, so every file in the folder is accounted for */
    ok = ok && add_index(o, "index.json", "json", "this list: every file written and what it shows") == 0;
    cJSON *files = ok ? cJSON_Duplicate(o->files, 1) : NULL;
    ok = ok && files && cJSON_AddItemToObject(idx, "files", files);
    if (!ok) {
        cJSON_Delete(idx);
        fprintf(stderr, "headscope %s: out of memory\n", o->cmd);
        return 1;
    }
    if (o->page && write_page(o, idx)) {
        cJSON_Delete(idx);
        return 1;
    }
    char *path = hs_path_join(o->dir, "index.json");
    hs_error err = {0};
    hs_status s = path ? hs_viz_write_json(idx, path, &err) : HS_ERR_NOMEM;
    if (!path) hs_fail(&err, HS_ERR_NOMEM, "out of memory");
    free(path);
    cJSON_Delete(idx);
    if (s != HS_OK) return cli_error(o->cmd, &err);
    return 0;
}

cJSON *cli_config_json(const hs_config *c)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddNumberToObject(o, "n_layers", c->n_layers);
    cJSON_AddNumberToObject(o, "d_model", c->d_model);
    cJSON_AddNumberToObject(o, "n_heads", c->n_heads);
    cJSON_AddNumberToObject(o, "d_head", c->d_head);
    cJSON_AddNumberToObject(o, "d_mlp", c->d_mlp);
    cJSON_AddNumberToObject(o, "n_ctx", c->n_ctx);
    cJSON_AddNumberToObject(o, "d_vocab", c->d_vocab);
    cJSON_AddStringToObject(o, "norm", hs_norm_name(c->norm));
    char eps[32];
    snprintf(eps, sizeof eps, "%.7g", (double)c->eps); /* 1e-05, not 9.99999974737875e-06 */
    cJSON_AddNumberToObject(o, "eps", strtod(eps, NULL));
    cJSON_AddStringToObject(o, "act", hs_act_name(c->act));
    cJSON_AddStringToObject(o, "pos", hs_pos_name(c->pos));
    cJSON_AddStringToObject(o, "attn", hs_attn_name(c->attn));
    cJSON_AddBoolToObject(o, "ln1", c->ln1);
    cJSON_AddBoolToObject(o, "ln_final", c->ln_final);
    cJSON_AddBoolToObject(o, "embed_norm", c->embed_norm);
    cJSON_AddBoolToObject(o, "bias", c->bias);
    return o;
}
