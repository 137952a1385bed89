/* cli/figopts.c -- see figopts.h. */
#include "figopts.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "model/model.h"

const char CLI_FIGOPTS_HELP[] =
    "figure options (for papers):\n"
    "  --format LIST          comma-separated png,svg,pdf,json,html (default png,svg,json);\n"
    "                         the PNG, SVG and PDF of a figure show the same picture;\n"
    "                         html adds index.html, one offline page to explore the\n"
    "                         data (open it in a browser; `headscope view DIR` makes\n"
    "                         one from an existing folder)\n"
    "  --dpi N                pixels per inch, recorded in the PNG (36..1200)\n"
    "  --width W              figure width: inches, `column` (3.25) or `page` (6.75);\n"
    "                         a promise: the figure is exactly W wide with every\n"
    "                         label, or the command says the smallest width that fits\n"
    "                         (default: a column for one panel, a page for a grid,\n"
    "                         wider only when the labels need it)\n"
    "  --font-size PT         label font size in points (4..36; default: 8, or down to\n"
    "                         6 when that is what fits the width)\n"
    "  --cmap NAME            viridis | greys (attention; signed figures stay blue-white-red)\n"
    "  --range fixed|auto     attention: [0, 1] (fixed, default) or each figure's\n"
    "                         [min, max]; signed matrices: one scale shared by the\n"
    "                         figures of a kind (fixed) or each figure's own (auto)\n"
    "  --vmin X, --vmax X     the ends of the colour scale (bars: of the axis)\n"
    "  --annotate             write each cell's value in the cell\n";

void cli_figopts_default(cli_figopts *fo, double dpi)
{
    memset(fo, 0, sizeof *fo);
    hs_viz_options_default(&fo->viz);
    fo->viz.dpi = dpi;
    fo->png = fo->svg = fo->json = 1;
    fo->pdf = 0;
}

int cli_figopts_images(const cli_figopts *fo) { return fo->png || fo->svg || fo->pdf; }

int cli_figopts_data(const cli_figopts *fo) { return fo->json || fo->html; }

int cli_add_scale(cJSON *j, const cli_figopts *fo, cli_fig_kind kind, double lim)
{
    const hs_viz_options v = cli_figopts_for(fo, kind, lim);
    const int fixed = v.range == HS_VIZ_RANGE_FIXED || kind == CLI_FIG_ATTENTION;
    const char *name = kind == CLI_FIG_SIGNED ? "diverging"
                       : v.cmap == HS_VIZ_CMAP_GREYS ? "greys" : "viridis";
    cJSON *o = cJSON_CreateObject();
    int ok = o && cJSON_AddStringToObject(o, "cmap", name) &&
             cJSON_AddStringToObject(o, "range", fixed ? "fixed" : "auto");
    if (ok && fixed)
        ok = cJSON_AddNumberToObject(o, "vmin", v.vmin) && cJSON_AddNumberToObject(o, "vmax", v.vmax);
    if (!ok || !cJSON_AddItemToObject(j, "colour_scale", o)) {
        cJSON_Delete(o);
        return 1;
    }
    return 0;
}

hs_status cli_figopts_font_open(cli_figopts *fo, hs_error *err)
{
    if (!cli_figopts_images(fo) || fo->vfont) return HS_OK;
    if (!fo->font) {
        hs_status s = hs_viz_font_path(fo->viz.font_path, &fo->font, err);
        if (s != HS_OK) return s;
        fo->viz.font_path = fo->font;
    }
    hs_status s = hs_viz_font_open(fo->font, &fo->vfont, err);
    if (s == HS_OK) fo->viz.font = fo->vfont;
    return s;
}

int cli_figopts_font(const char *cmd, cli_figopts *fo)
{
    hs_error err = {0};
    return cli_figopts_font_open(fo, &err) != HS_OK ? cli_error(cmd, &err) : 0;
}

void cli_figopts_free(cli_figopts *fo)
{
    hs_viz_font_close(fo->vfont);
    fo->vfont = NULL;
    fo->viz.font = NULL;
    free(fo->font);
    fo->font = NULL;
    fo->viz.font_path = NULL;
}

/* The formats --format takes, and the flag each sets. */
typedef struct {
    const char *name;
    size_t flag; /* offsetof the int in cli_figopts */
} fo_format;
static const fo_format FORMATS[] = {{"png", offsetof(cli_figopts, png)},
                                    {"svg", offsetof(cli_figopts, svg)},
                                    {"pdf", offsetof(cli_figopts, pdf)},
                                    {"json", offsetof(cli_figopts, json)},
                                    {"html", offsetof(cli_figopts, html)}};
#define N_FORMATS (sizeof FORMATS / sizeof FORMATS[0])

static int parse_formats(const char *cmd, const char *arg, cli_figopts *fo)
{
    int want[N_FORMATS] = {0};
    const char *p = arg;
    while (1) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p), k = 0;
        while (k < N_FORMATS && !(strlen(FORMATS[k].name) == n && strncmp(p, FORMATS[k].name, n) == 0))
            k++;
        if (k == N_FORMATS)
            return cli_usage_error(cmd, "unknown format '%.*s' in --format (png, svg, pdf, json, html)",
                                   (int)n, p);
        want[k] = 1;
        if (!e) break;
        p = e + 1;
    }
    for (size_t k = 0; k < N_FORMATS; k++) *(int *)((char *)fo + FORMATS[k].flag) = want[k];
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
        if (strcmp(arg, "column") == 0) v = HS_VIZ_COLUMN_IN;
        else if (strcmp(arg, "page") == 0) v = HS_VIZ_PAGE_IN;
        else if (cli_parse_float(arg, 0.5, HS_VIZ_GRID_MAX_IN, &v))
            return cli_usage_error(cmd, "--width must be inches in 0.5..%g, column or page, not '%s'",
                                   HS_VIZ_GRID_MAX_IN, arg);
        fo->viz.width_in = v;
        return 0;
    case CLI_FO_FONT:
        if (cli_parse_float(arg, 4, 36, &v))
            return cli_usage_error(cmd, "--font-size must be points in 4..36, not '%s'", arg);
        fo->viz.font_pt = v;
        fo->viz.font_min_pt = 0;
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
    case CLI_FO_VMIN:
    case CLI_FO_VMAX:
        if (cli_parse_float(arg, -1e30, 1e30, &v))
            return cli_usage_error(cmd, "--%s must be a number, not '%s'",
                                   code == CLI_FO_VMIN ? "vmin" : "vmax", arg);
        if (code == CLI_FO_VMIN) fo->viz.vmin = v, fo->vmin_set = 1;
        else fo->viz.vmax = v, fo->vmax_set = 1;
        if (fo->vmin_set && fo->vmax_set && !(fo->viz.vmax > fo->viz.vmin))
            return cli_usage_error(cmd, "--vmax (%g) must be above --vmin (%g)", fo->viz.vmax,
                                   fo->viz.vmin);
        return 0;
    case CLI_FO_ANNOTATE: fo->viz.annotate = 1; return 0;
    case CLI_FO_FORMAT: return parse_formats(cmd, arg, fo);
    default: return -1;
    }
}

int cli_figopts_option(const char *cmd, int code, const char *arg, const char *given,
                       cli_figopts *fo)
{
    int r = cli_figopts_parse(cmd, code, arg, fo);
    if (r >= 0) return r;
    return cli_usage_error(cmd, "unknown or incomplete option '%s'", given);
}

int cli_command_option(const char *cmd, int code, const char *arg, const char *given,
                       cli_source *src, cli_figopts *fo)
{
    int r = cli_source_opt(cmd, code, arg, src);
    if (r != 0) return r > 0 ? 0 : 2;
    if (fo) return cli_figopts_option(cmd, code, arg, given, fo);
    return cli_usage_error(cmd, "unknown or incomplete option '%s'", given);
}

hs_viz_options cli_figopts_for(const cli_figopts *fo, cli_fig_kind kind, double lim)
{
    hs_viz_options o = fo->viz;
    /* signed data: the diverging map (a sequential one would hide the sign) */
    if (kind == CLI_FIG_SIGNED && o.cmap != HS_VIZ_CMAP_DIVERGING) o.cmap = HS_VIZ_CMAP_DEFAULT;
    if (kind == CLI_FIG_BARS) o.cmap = HS_VIZ_CMAP_DEFAULT;
    int own = fo->range_set && fo->viz.range == HS_VIZ_RANGE_AUTO;
    if (kind == CLI_FIG_ATTENTION) {
        if (!fo->vmin_set) o.vmin = 0.0;
        if (!fo->vmax_set) o.vmax = 1.0;
        return o;
    }
    if (lim > 0 && !own) {
        o.range = HS_VIZ_RANGE_FIXED;
        o.vmin = kind == CLI_FIG_NONNEG ? 0.0 : -lim;
        o.vmax = lim;
    } else {
        o.range = HS_VIZ_RANGE_AUTO;
    }
    if (fo->vmin_set || fo->vmax_set) {
        o.range = HS_VIZ_RANGE_FIXED;
        if (fo->vmin_set) o.vmin = fo->viz.vmin;
        if (fo->vmax_set) o.vmax = fo->viz.vmax;
        if (kind == CLI_FIG_SIGNED && !fo->vmin_set) o.vmin = -o.vmax;
        if (kind == CLI_FIG_SIGNED && !fo->vmax_set) o.vmax = -o.vmin;
    }
    return o;
}

int cli_outdir_open(cli_outdir *o, const char *cmd, const char *dir, const cli_figopts *fo,
                    const char *const *inputs)
{
    memset(o, 0, sizeof *o);
    o->cmd = cmd;
    o->dir = dir;
    o->fo = fo;
    for (int i = 0; inputs && inputs[i]; i++) cli_inputs_add(&o->inputs, inputs[i]);
    if (cli_out_begin(cmd, dir, &o->stage)) return 1;
    o->files = cJSON_CreateArray();
    if (fo->html) o->page = cJSON_CreateObject();
    if (!o->files || (fo->html && !o->page)) {
        fprintf(stderr, "headscope %s: out of memory\n", cmd);
        return 1;
    }
    return 0;
}

static void pending_free(cli_outdir *o);

void cli_outdir_close(cli_outdir *o)
{
    pending_free(o);
    free(o->pend);
    o->pend = NULL;
    o->cap_pend = 0;
    if (o->dir) cli_out_discard(o->dir, &o->stage);
    cJSON_Delete(o->files);
    cJSON_Delete(o->page);
    hs_buf_free(&o->wide);
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

/* Lists file in the index; path (NULL for index.json itself) is where it was
 * written, for its size and hash. */
static int add_index(cli_outdir *o, const char *file, const char *format, const char *shows,
                     const char *path)
{
    double bytes = 0;
    char hex[17];
    if (path && cli_file_digest(path, &bytes, hex) != 0) {
        fprintf(stderr, "headscope %s: cannot read back %s: %s\n", o->cmd, path, strerror(errno));
        return 1;
    }
    cJSON *e = cJSON_CreateObject();
    if (!e || !cJSON_AddStringToObject(e, "file", file) ||
        !cJSON_AddStringToObject(e, "format", format) ||
        !cJSON_AddStringToObject(e, "shows", shows) ||
        (path && (!cJSON_AddNumberToObject(e, "bytes", bytes) ||
                  !cJSON_AddStringToObject(e, "fnv1a64", hex))) ||
        !cJSON_AddItemToArray(o->files, e)) {
        cJSON_Delete(e);
        fprintf(stderr, "headscope %s: out of memory\n", o->cmd);
        return 1;
    }
    return 0;
}

/* Prints a write error naming DIR/file, not the run's working folder the
 * file was going to (the user never sees that folder). Returns 1. */
static int out_error(const cli_outdir *o, const hs_error *err)
{
    hs_error e = *err;
    char *from = hs_path_join(o->stage.path, ""), *to = hs_path_join(o->dir, "");
    char *at = from && to ? strstr(err->msg, from) : NULL;
    if (at) {
        hs_buf b = {0};
        hs_buf_append(&b, err->msg, (size_t)(at - err->msg));
        hs_buf_puts(&b, to);
        hs_buf_puts(&b, at + strlen(from));
        if (!b.oom) snprintf(e.msg, sizeof e.msg, "%s", b.s);
        hs_buf_free(&b);
    }
    free(from);
    free(to);
    return cli_error(o->cmd, &e);
}

/* Writes one file dir/stem.ext with fn; 0 ok, 1 printed. */
static int write_one(cli_outdir *o, const char *stem, const char *ext, const cJSON *json,
                     const char *shows)
{
    char *name = hs_strfmt("%s.%s", stem, ext);
    char *path = name ? hs_path_join(o->stage.path, name) : NULL;
    if (!path) {
        free(name);
        fprintf(stderr, "headscope %s: out of memory\n", o->cmd);
        return 1;
    }
    hs_error err = {0};
    hs_status s = hs_viz_write_json(json, path, &err);
    int rc = s != HS_OK ? out_error(o, &err) : add_index(o, name, ext, shows, path);
    free(path);
    free(name);
    return rc;
}

/* A figure cli_out_figure took: its image files, listed in the index
 * already (entry[k], without bytes and hash until written). Whoever claims it
 * first (the lane job queued for it, or a job of the final hs_pool_for)
 * writes the files and destroys the figure. */
struct cli_pending {
    const cli_outdir *o;
    hs_viz_figure *fig;
    char *stem;
    atomic_int claimed;
    int n;               /* formats */
    const char *ext[3];  /* "png", "svg", "pdf", in that order */
    cJSON *entry[3];     /* borrowed from o->files */
    double bytes[3];
    char hex[3][17];
    hs_status st;        /* the write's status, and its error */
    hs_error err;
};

/* Writes pending figure p's files, in order, and their sizes and hashes,
 * unless another thread claimed it first. */
static hs_status pending_write(struct cli_pending *p)
{
    if (atomic_exchange(&p->claimed, 1)) return HS_OK;
    hs_error *err = &p->err;
    hs_status s = HS_OK;
    for (int k = 0; s == HS_OK && k < p->n; k++) {
        char *name = hs_strfmt("%s.%s", p->stem, p->ext[k]);
        char *path = name ? hs_path_join(p->o->stage.path, name) : NULL;
        free(name);
        if (!path) {
            s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
            break;
        }
        /* no pool: a job must not start jobs on the pool it runs on */
        if (strcmp(p->ext[k], "png") == 0) s = hs_viz_figure_write_png(p->fig, path, NULL, err);
        else if (strcmp(p->ext[k], "svg") == 0) s = hs_viz_figure_write_svg(p->fig, path, err);
        else s = hs_viz_figure_write_pdf(p->fig, path, err);
        if (s == HS_OK && cli_file_digest(path, &p->bytes[k], p->hex[k]) != 0)
            s = hs_fail(err, HS_ERR_IO, "cannot read back %s: %s", path, strerror(errno));
        free(path);
    }
    hs_viz_figure_destroy(p->fig);
    p->fig = NULL;
    p->st = s;
    return s;
}

/* The lane job queued for a pending figure: arg holds its pointer. */
static void pending_lane(void *arg)
{
    struct cli_pending *p;
    memcpy(&p, arg, sizeof p);
    pending_write(p);
}

/* A job of the final hs_pool_for: pending figure j, unless its lane job took it. */
static hs_status pending_job(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    (void)err; /* each figure keeps its own error */
    cli_outdir *o = ctx;
    return pending_write(o->pend[j]);
}

static void pending_free(cli_outdir *o)
{
    hs_pool_wait_all(o->pool); /* no lane job still writes into the stage */
    for (int i = 0; i < o->n_pend; i++) {
        hs_viz_figure_destroy(o->pend[i]->fig);
        free(o->pend[i]->stem);
        free(o->pend[i]);
    }
    o->n_pend = 0;
}

/* Writes every pending figure not written yet, on both the lane and the
 * caller's thread (hs_pool_for), waits for the lane, and puts the files'
 * bytes and hashes into the index. 0 ok, 1 after printing the first failed
 * figure's error. */
static int pending_flush(cli_outdir *o)
{
    if (o->n_pend == 0) return 0;
    hs_error err = {0};
    hs_pool_for(o->pool, o->n_pend, pending_job, o, &err);
    hs_pool_wait_all(o->pool);
    int rc = 0;
    for (int i = 0; !rc && i < o->n_pend; i++) {
        struct cli_pending *p = o->pend[i];
        if (!atomic_load(&p->claimed)) /* hs_pool_for stopped after a failure */
            continue;
        if (p->st != HS_OK) {
            rc = out_error(o, &p->err);
            break;
        }
        for (int k = 0; !rc && k < p->n; k++)
            if (!cJSON_AddNumberToObject(p->entry[k], "bytes", p->bytes[k]) ||
                !cJSON_AddStringToObject(p->entry[k], "fnv1a64", p->hex[k])) {
                fprintf(stderr, "headscope %s: out of memory\n", o->cmd);
                rc = 1;
            }
    }
    pending_free(o);
    return rc;
}

/* Lists stem's image files in the index, takes *fig and queues its write on
 * the pool's lane (with one worker it runs now). 0 ok, 1 after printing. */
static int pending_add(cli_outdir *o, const char *stem, hs_viz_figure **fig, const char *shows)
{
    hs_viz_figure *f = *fig;
    *fig = NULL;
    struct cli_pending *p = NULL;
    if (o->n_pend == o->cap_pend) {
        int cap = o->cap_pend ? 2 * o->cap_pend : 16;
        struct cli_pending **np = realloc(o->pend, (size_t)cap * sizeof *np);
        if (!np) goto oom;
        o->pend = np;
        o->cap_pend = cap;
    }
    p = calloc(1, sizeof *p);
    if (!p || !(p->stem = hs_strdup(stem))) goto oom;
    p->o = o;
    p->fig = f;
    f = NULL;
    atomic_init(&p->claimed, 0);
    if (o->fo->png) p->ext[p->n++] = "png";
    if (o->fo->svg) p->ext[p->n++] = "svg";
    if (o->fo->pdf) p->ext[p->n++] = "pdf";
    for (int k = 0; k < p->n; k++) {
        char *name = hs_strfmt("%s.%s", stem, p->ext[k]);
        int bad = !name || add_index(o, name, p->ext[k], shows, NULL);
        free(name);
        if (bad) {
            hs_viz_figure_destroy(p->fig);
            free(p->stem);
            free(p);
            if (!name) fprintf(stderr, "headscope %s: out of memory\n", o->cmd);
            return 1;
        }
        p->entry[k] = cJSON_GetArrayItem(o->files, cJSON_GetArraySize(o->files) - 1);
    }
    o->pend[o->n_pend++] = p;
    hs_pool_async(o->pool, pending_lane, &p, sizeof p);
    return 0;
oom:
    hs_viz_figure_destroy(f);
    if (p) free(p);
    fprintf(stderr, "headscope %s: out of memory\n", o->cmd);
    return 1;
}

int cli_out_figure(cli_outdir *o, const char *stem, hs_viz_figure **fig, const cJSON *json,
                   const char *shows)
{
    hs_viz_figure *f = fig ? *fig : NULL;
    if (f && hs_viz_figure_grown_from_in(f) > 0 && (o->fo->png || o->fo->svg || o->fo->pdf)) {
        hs_buf_printf(&o->wide, "%s%s %.2f in", o->n_wide ? ", " : "", stem,
                      hs_viz_figure_width_in(f));
        o->n_wide++;
    }
    if (f && (o->fo->png || o->fo->svg || o->fo->pdf)) {
        if (pending_add(o, stem, fig, shows)) return 1;
    } else if (fig) {
        hs_viz_figure_destroy(f);
        *fig = NULL;
    }
    if (o->fo->json && json && write_one(o, stem, "json", json, shows)) return 1;
    if (o->page && json) return cli_out_page(o, stem, cJSON_Duplicate(json, 1));
    return 0;
}

int cli_out_json(cli_outdir *o, const char *name, const cJSON *json, const char *shows)
{
    if (write_one(o, name, "json", json, shows)) return 1;
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
    char *path = hs_path_join(o->stage.path, "index.html"), title[512];
    snprintf(title, sizeof title, "headscope %s · %s", o->cmd, o->dir);
    hs_error err = {0};
    hs_status s = !data || !path ? hs_fail(&err, HS_ERR_NOMEM, "out of memory")
                                 : hs_viz_write_html(data, title, path, &err);
    cJSON_Delete(data);
    int rc = s != HS_OK ? out_error(o, &err)
                        : add_index(o, "index.html", "html",
                                    "one offline page to explore this folder's data "
                                    "(open it in a browser)", path);
    free(path);
    return rc;
}

int cli_out_index_with(cli_outdir *o, cJSON *extra, int ok)
{
    int bad = 1;
    if (!extra || !ok) fprintf(stderr, "headscope %s: out of memory\n", o->cmd);
    else bad = cli_out_index(o, extra);
    cJSON_Delete(extra);
    return bad;
}

void cli_out_say_wrote(const cli_outdir *o, const char *what)
{
    printf("wrote %d files to %s (%s%slisted in %s/index.json)\n", cJSON_GetArraySize(o->files), o->dir,
           what ? what : "", what ? "; " : "", o->dir);
}

int cli_out_index(cli_outdir *o, const cJSON *extra)
{
    if (pending_flush(o)) return 1; /* every figure's file is in the index first */
    cJSON *idx = cJSON_CreateObject();
    char gen[64];
    snprintf(gen, sizeof gen, "headscope %s %s", HS_VERSION, o->cmd);
    int ok = idx && cJSON_AddStringToObject(idx, "generator", gen) &&
             cJSON_AddStringToObject(idx, "command", o->cmd);
    for (const cJSON *it = extra ? extra->child : NULL; ok && it; it = it->next) {
        cJSON *dup = cJSON_Duplicate(it, 1);
        ok = dup && cJSON_AddItemToObject(idx, it->string, dup);
        if (!ok) cJSON_Delete(dup);
    }
    /* index.json lists itself too, so every file in the folder is accounted for */
    ok = ok && add_index(o, "index.json", "json",
                         "this list: every file written and what it shows", NULL) == 0;
    cJSON *files = ok ? cJSON_Duplicate(o->files, 1) : NULL;
    ok = ok && files && cJSON_AddItemToObject(idx, "files", files);
    /* the page shows the index as it stands; then index.html joins the list */
    if (ok && o->page) {
        if (write_page(o, idx)) {
            cJSON_Delete(idx);
            return 1;
        }
        cJSON *last = cJSON_Duplicate(cJSON_GetArrayItem(o->files, cJSON_GetArraySize(o->files) - 1), 1);
        ok = last && cJSON_AddItemToArray(files, last);
        if (!ok) cJSON_Delete(last);
    }
    if (!ok) {
        cJSON_Delete(idx);
        fprintf(stderr, "headscope %s: out of memory\n", o->cmd);
        return 1;
    }
    char *path = hs_path_join(o->stage.path, "index.json");
    hs_error err = {0};
    hs_status s = path ? hs_viz_write_json(idx, path, &err) : HS_ERR_NOMEM;
    if (!path) hs_fail(&err, HS_ERR_NOMEM, "out of memory");
    free(path);
    cJSON_Delete(idx);
    if (s != HS_OK) return out_error(o, &err);
    if (o->n_wide && !o->wide.oom)
        fprintf(stderr, "note: %d figure%s wider than %s default width so every label fits: %s; "
                "--width sets it\n", o->n_wide, o->n_wide > 1 ? "s are" : " is",
                o->n_wide > 1 ? "their" : "its", o->wide.s);
    return cli_out_commit(o->cmd, o->dir, &o->stage, o->files, &o->inputs);
}
