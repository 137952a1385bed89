/*
 * cli/figopts.h -- what the figure-writing subcommands (inspect, weights,
 * circuit) share: the figure options of viz on the command line (--dpi,
 * --width, --font-size, --cmap, --range, --annotate, --format) and an output
 * folder that writes a figure in the chosen formats and lists every file in
 * index.json.
 *
 * Use: put CLI_FIGOPTS_LONGOPTS in the getopt_long table, call
 * cli_figopts_parse() in the default branch, print CLI_FIGOPTS_HELP in --help.
 */
#ifndef HS_CLI_FIGOPTS_H
#define HS_CLI_FIGOPTS_H

#include <getopt.h>

#include <cjson/cJSON.h>

#include "model/model.h"
#include "viz/viz.h"

enum {
    CLI_FO_DPI = 1000,
    CLI_FO_WIDTH,
    CLI_FO_FONT,
    CLI_FO_CMAP,
    CLI_FO_RANGE,
    CLI_FO_ANNOTATE,
    CLI_FO_FORMAT,
};

#define CLI_FIGOPTS_LONGOPTS                                                     \
    {"dpi", required_argument, 0, CLI_FO_DPI},                                   \
    {"width", required_argument, 0, CLI_FO_WIDTH},                               \
    {"font-size", required_argument, 0, CLI_FO_FONT},                            \
    {"cmap", required_argument, 0, CLI_FO_CMAP},                                 \
    {"range", required_argument, 0, CLI_FO_RANGE},                               \
    {"annotate", no_argument, 0, CLI_FO_ANNOTATE},                               \
    {"format", required_argument, 0, CLI_FO_FORMAT}

extern const char CLI_FIGOPTS_HELP[];

typedef struct {
    hs_viz_options viz;   /* passed to every figure */
    int png, svg, json;   /* formats to write (default: all three) */
    int html;             /* also index.html: one page of the folder's data (hs_viz_html_page) */
    int range_set;        /* 1 if --range was given */
    char *font;           /* resolved font file (owned), see cli_figopts_font */
} cli_figopts;

/* Defaults: viz defaults at dpi (the command's choice), all formats. */
void cli_figopts_default(cli_figopts *fo, double dpi);

/* Resolves the font once for every figure (sets viz.font_path; the string is
 * owned by fo and freed by cli_figopts_free). 0 ok, 1 after printing. */
int cli_figopts_font(const char *cmd, cli_figopts *fo);
void cli_figopts_free(cli_figopts *fo);

/* Handles one option code from getopt_long. Returns -1 if code is not a
 * figure option, 0 when handled, 2 after printing a usage error. */
int cli_figopts_parse(const char *cmd, int code, const char *arg, cli_figopts *fo);

/* An output folder and the index of what was written into it. */
typedef struct {
    const char *cmd;      /* subcommand name for messages */
    const char *dir;      /* borrowed */
    const cli_figopts *fo;
    cJSON *files;         /* [{"file", "format", "shows"}] */
    cJSON *page;          /* {stem: JSON} that index.html shows (--format html), else NULL */
} cli_outdir;

/* Prepares dir with cli_prepare_out_dir (cli/util.h): creates it if missing
 * (its parent must exist), refuses a path that is not a folder, and removes
 * the files an earlier run's index.json lists. 0 ok, 1 after printing. */
int cli_outdir_open(cli_outdir *o, const char *cmd, const char *dir, const cli_figopts *fo);
void cli_outdir_close(cli_outdir *o);

/* Writes stem.png / stem.svg from fig and stem.json from json, in the formats
 * chosen (fig may be NULL when neither PNG nor SVG is wanted; json may be NULL
 * when JSON is not wanted), and lists each in the index with `shows`.
 * 0 ok, 1 after printing the error. */
int cli_out_figure(cli_outdir *o, const char *stem, const hs_viz_figure *fig, const cJSON *json,
                   const char *shows);

/* Adds data (consumed) to the page under stem, unless the page has stem
 * already or does not want it (cli_page_keeps); a no-op without --format
 * html. For data built in the page's packed form (hs_viz_attention_json_packed)
 * before cli_out_figure adds the file's form. 0 ok, 1 after printing. */
int cli_out_page(cli_outdir *o, const char *stem, cJSON *data);

/* Whether the HTML page of command cmd shows the JSON named stem: every file
 * but inspect's per-head and per-layer-mean patterns (L<l>H<h>, L<l>_mean),
 * which its attention_grid holds. `inspect --format html` and `view` both
 * ask this. */
int cli_page_keeps(const char *cmd, const char *stem);

/* The page's data for runs (an array of {"dir", "command", "index", "files"},
 * consumed): {"runs", "cmap"}; NULL on OOM. */
cJSON *cli_page_data(cJSON *runs, hs_viz_cmap cmap);

/* Writes a data file (name.json) whatever --format says; listed in the index. */
int cli_out_json(cli_outdir *o, const char *name, const cJSON *json, const char *shows);

/* Writes index.json: {"command", "files": [...]} plus the keys of extra (may
 * be NULL; only read), and with --format html first index.html (listed in
 * index.json), the page of everything cli_out_page collected. 0 ok, 1 after
 * printing the error. */
int cli_out_index(cli_outdir *o, const cJSON *extra);

/* The model's config as every JSON carries it ({"n_layers", ...}); NULL on OOM. */
cJSON *cli_config_json(const hs_config *c);

/* Whether any image format is wanted (so a command can skip the layout). */
int cli_figopts_images(const cli_figopts *fo);
/* Whether figure JSON is wanted: for the .json files or for the HTML page. */
int cli_figopts_data(const cli_figopts *fo);

#endif
