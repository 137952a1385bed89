/* cli/figopts.c -- see figopts.h. */
#include "figopts.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

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
    "  --annotate             write each cell's value in the cell\n"
    "  --layout ROWSxCOLS     a grid's panels in ROWS x COLS, filled row by row, each\n"
    "                         named over it (default: layers x heads when that fits\n"
    "                         the width, else fewer columns: 8 heads in a column 4x2)\n";

/* The formats --format takes, and the flag each sets. */
typedef struct {
    const char *name;
    size_t flag; /* offsetof the int in hs_figopts */
} fo_format;
static const fo_format FORMATS[] = {{"png", offsetof(hs_figopts, png)},
                                    {"svg", offsetof(hs_figopts, svg)},
                                    {"pdf", offsetof(hs_figopts, pdf)},
                                    {"json", offsetof(hs_figopts, json)},
                                    {"html", offsetof(hs_figopts, html)}};
#define N_FORMATS (sizeof FORMATS / sizeof FORMATS[0])

static int parse_formats(const char *cmd, const char *arg, hs_figopts *fo)
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

int cli_figopts_parse(const char *cmd, int code, const char *arg, hs_figopts *fo)
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
    case CLI_FO_LAYOUT: {
        char *e = NULL;
        unsigned long r = strtoul(arg, &e, 10), c = 0;
        int ok = e != arg && (*e == 'x' || *e == 'X') && arg[0] >= '0' && arg[0] <= '9';
        if (ok) {
            const char *q = e + 1;
            c = strtoul(q, &e, 10);
            ok = e != q && *e == '\0' && q[0] >= '0' && q[0] <= '9';
        }
        if (!ok || r < 1 || c < 1 || r > 1024 || c > 1024)
            return cli_usage_error(cmd, "--layout must be ROWSxCOLS (e.g. 4x2), not '%s'", arg);
        fo->viz.layout_rows = r;
        fo->viz.layout_cols = c;
        return 0;
    }
    case CLI_FO_FORMAT: return parse_formats(cmd, arg, fo);
    default: return -1;
    }
}

int cli_figopts_option(const char *cmd, int code, const char *arg, const char *given,
                       hs_figopts *fo)
{
    int r = cli_figopts_parse(cmd, code, arg, fo);
    if (r >= 0) return r;
    return cli_usage_error(cmd, "unknown or incomplete option '%s'", given);
}

int cli_command_option(const char *cmd, int code, const char *arg, const char *given,
                       hs_load_source *src, hs_figopts *fo)
{
    int r = cli_source_opt(cmd, code, arg, src);
    if (r != 0) return r > 0 ? 0 : 2;
    if (fo) return cli_figopts_option(cmd, code, arg, given, fo);
    return cli_usage_error(cmd, "unknown or incomplete option '%s'", given);
}

/* ------------------------------------------------------------------------ */
/* The library's output folder (output/output.h), its errors printed          */

int cli_figopts_font(const char *cmd, hs_figopts *fo)
{
    hs_error err = {0};
    return hs_figopts_font_open(fo, &err) != HS_OK ? cli_error(cmd, &err) : 0;
}

int cli_outdir_open(hs_outdir *o, const char *cmd, const char *dir, const hs_figopts *fo,
                    const char *const *inputs)
{
    hs_error err = {0};
    const hs_notes notes = cli_notes(cmd);
    return hs_outdir_open(o, cmd, dir, fo, inputs, NULL, &notes, &err) != HS_OK
               ? cli_error(cmd, &err)
               : 0;
}

void cli_out_say_wrote(const hs_outdir *o, const char *what)
{
    printf("wrote %d files to %s (%s%slisted in %s/index.json)\n", hs_outdir_n_files(o), o->dir,
           what ? what : "", what ? "; " : "", o->dir);
}

