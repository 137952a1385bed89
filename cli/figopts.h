/*
 * cli/figopts.h -- what the figure-writing subcommands (inspect, weights,
 * circuit) share: the figure options of viz on the command line (--dpi,
 * --width, --font-size, --cmap, --range, --vmin, --vmax, --annotate,
 * --format), the options each kind of figure gets from them, and an output
 * folder that writes a figure in the chosen formats and lists every file in
 * index.json.
 *
 * Use: put CLI_FIGOPTS_LONGOPTS in the getopt_long table, run the option loop
 * with cli_opt_next() (expout.h: it hands the figure options to
 * cli_figopts_option() and prints CLI_FIGOPTS_HELP after --help), and take
 * each figure's options from hs_figopts_for().
 */
#ifndef HS_CLI_FIGOPTS_H
#define HS_CLI_FIGOPTS_H

#include <getopt.h>

#include <cjson/cJSON.h>

#include "model/model.h"
#include "output/output.h"
#include "util.h"
#include "viz/viz.h"

enum {
    CLI_FO_DPI = 1000,
    CLI_FO_WIDTH,
    CLI_FO_FONT,
    CLI_FO_CMAP,
    CLI_FO_RANGE,
    CLI_FO_ANNOTATE,
    CLI_FO_FORMAT,
    CLI_FO_VMIN,
    CLI_FO_VMAX,
};

#define CLI_FIGOPTS_LONGOPTS                                                     \
    {"dpi", required_argument, 0, CLI_FO_DPI},                                   \
    {"width", required_argument, 0, CLI_FO_WIDTH},                               \
    {"font-size", required_argument, 0, CLI_FO_FONT},                            \
    {"cmap", required_argument, 0, CLI_FO_CMAP},                                 \
    {"range", required_argument, 0, CLI_FO_RANGE},                               \
    {"annotate", no_argument, 0, CLI_FO_ANNOTATE},                               \
    {"format", required_argument, 0, CLI_FO_FORMAT},                             \
    {"vmin", required_argument, 0, CLI_FO_VMIN},                                 \
    {"vmax", required_argument, 0, CLI_FO_VMAX}

extern const char CLI_FIGOPTS_HELP[];

/* Resolves and opens the font once for every figure (sets viz.font_path and
 * viz.font; both owned by fo and freed by hs_figopts_free). 0 ok, 1 after
 * printing. */
int cli_figopts_font(const char *cmd, hs_figopts *fo);
/* Handles one option code from getopt_long. Returns -1 if code is not a
 * figure option, 0 when handled, 2 after printing a usage error. */
int cli_figopts_parse(const char *cmd, int code, const char *arg, hs_figopts *fo);

/* What cli_opt_next does with a code that is not the command's own: a figure
 * option is handled (0), anything else is a usage error naming `given` (the
 * argv word) (2). */
int cli_figopts_option(const char *cmd, int code, const char *arg, const char *given,
                       hs_figopts *fo);

/* The same for a command with the checkpoint-source flags (util.h,
 * hs_load_source: --vocab, --split-seed, --heldout-pairs) too; fo may be NULL for
 * a command without figures. 0 handled, 2 after printing a usage error. */
int cli_command_option(const char *cmd, int code, const char *arg, const char *given,
                       hs_load_source *src, hs_figopts *fo);

/* Opens dir under the output-folder policy of cli/util.h ("Output folders"):
 * creates it if missing (its parent must exist), refuses a path that is not a
 * folder, and starts the run's working folder. inputs: the files the command
 * reads, NULL-terminated (may be NULL). 0 ok, 1 after printing. */
int cli_outdir_open(hs_outdir *o, const char *cmd, const char *dir, const hs_figopts *fo,
                    const char *const *inputs);
/* Writes stem.png / stem.svg / stem.pdf from *fig and stem.json from json, in
 * the formats chosen (*fig may be NULL when neither PNG nor SVG is wanted; json
 * may be NULL when JSON is not wanted), and lists each in the index with
 * `shows`, in that order. Takes the figure (*fig is set to NULL; it is
 * destroyed once written, also on failure). Its files are written by one
 * thread, in order, while the command goes on: a job on o->pool's lane, or,
 * for what the lane has not reached by then, a job of cli_out_index's
 * hs_pool_for on every worker; with no pool or one worker, at once. The
 * files do not depend on the pool; cli_out_index fills in their bytes and
 * hashes and reports a write that failed. JSON is written at once. 0 ok, 1
 * after printing the error. */
int cli_out_figure(hs_outdir *o, const char *stem, hs_viz_figure **fig, const cJSON *json,
                   const char *shows);

/* Adds data (consumed) to the page under stem, unless the page has stem
 * already or does not want it (hs_page_keeps); a no-op without --format
 * html. For data built in the page's packed form (hs_viz_attention_json_packed)
 * before cli_out_figure adds the file's form. 0 ok, 1 after printing. */
int cli_out_page(hs_outdir *o, const char *stem, cJSON *data);

/* Writes a data file (name.json) whatever --format says; listed in the index. */
int cli_out_json(hs_outdir *o, const char *name, const cJSON *json, const char *shows);

/* Writes index.json: {"generator": "headscope <version> <command>", "command",
 * "files": [...]} plus the keys of extra (may be NULL; only read), with
 * --format html first index.html (listed in index.json: the page of everything
 * cli_out_page collected), then moves every file of the run into the folder
 * (cli_out_commit). Call it last. 0 ok, 1 after printing the error. */
int cli_out_index(hs_outdir *o, const cJSON *extra);

/* cli_out_index with extra built by the caller (with the cJSON_Add* results
 * ANDed into ok): extra NULL or ok 0 is out of memory, said. extra is
 * consumed. 0 ok, 1 after printing. */
int cli_out_index_with(hs_outdir *o, cJSON *extra, int ok);

/* Prints "wrote N files to DIR (WHAT; listed in DIR/index.json)" on stdout,
 * N the files the index lists (what NULL: "(listed in DIR/index.json)"). */
void cli_out_say_wrote(const hs_outdir *o, const char *what);

/* Adds "colour_scale" to a figure's JSON j: the scale its PNG/SVG/PDF uses
 * (hs_figopts_for(fo, kind, lim)), so the HTML page draws the same:
 * {"cmap": "diverging"|"viridis"|"greys", "range": "fixed"|"auto", and for
 * fixed "vmin", "vmax"}. auto is the figures' rule: signed [-max|v|, max|v|],
 * non-negative [0, max v]. 0 ok, 1 on OOM. */
int cli_add_scale(cJSON *j, const hs_figopts *fo, hs_fig_kind kind, double lim);

#endif
