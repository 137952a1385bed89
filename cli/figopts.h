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
 * each figure's options from cli_figopts_for().
 */
#ifndef HS_CLI_FIGOPTS_H
#define HS_CLI_FIGOPTS_H

#include <getopt.h>

#include <cjson/cJSON.h>

#include "model/model.h"
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

typedef struct {
    hs_viz_options viz;   /* passed to every figure */
    int png, svg, pdf, json; /* formats to write (default: png, svg, json) */
    int html;             /* also index.html: one page of the folder's data (hs_viz_html_page) */
    int range_set;        /* 1 if --range was given */
    int vmin_set, vmax_set; /* 1 if --vmin / --vmax was given (values in viz) */
    char *font;           /* resolved font file (owned), see cli_figopts_font */
    hs_viz_font *vfont;   /* that font opened once for every figure (owned; viz.font) */
} cli_figopts;

/* What a figure shows, for cli_figopts_for. */
typedef enum {
    CLI_FIG_ATTENTION = 0, /* attention weights in [0, 1] */
    CLI_FIG_SIGNED,        /* a signed matrix: diverging map centred on 0 */
    CLI_FIG_NONNEG,        /* a non-negative matrix: sequential map from 0 */
    CLI_FIG_BARS,          /* a bar chart */
} cli_fig_kind;

/* Defaults: viz defaults at dpi (the command's choice), all formats. */
void cli_figopts_default(cli_figopts *fo, double dpi);

/* Resolves and opens the font once for every figure (sets viz.font_path and
 * viz.font; both owned by fo and freed by cli_figopts_free). 0 ok, 1 after
 * printing. */
int cli_figopts_font(const char *cmd, cli_figopts *fo);
/* cli_figopts_font without printing, for a job on another thread: HS_OK, or
 * the status with err's message (HS_ERR_IO: no usable font). Nothing is done
 * when no image format is asked for. */
hs_status cli_figopts_font_open(cli_figopts *fo, hs_error *err);
void cli_figopts_free(cli_figopts *fo);

/* Handles one option code from getopt_long. Returns -1 if code is not a
 * figure option, 0 when handled, 2 after printing a usage error. */
int cli_figopts_parse(const char *cmd, int code, const char *arg, cli_figopts *fo);

/* What cli_opt_next does with a code that is not the command's own: a figure
 * option is handled (0), anything else is a usage error naming `given` (the
 * argv word) (2). */
int cli_figopts_option(const char *cmd, int code, const char *arg, const char *given,
                       cli_figopts *fo);

/* The same for a command with the checkpoint-source flags (util.h,
 * cli_source: --vocab, --split-seed, --heldout-pairs) too; fo may be NULL for
 * a command without figures. 0 handled, 2 after printing a usage error. */
int cli_command_option(const char *cmd, int code, const char *arg, const char *given,
                       cli_source *src, cli_figopts *fo);

/* The options of one figure of kind from the command line's: signed figures
 * keep the diverging map; lim > 0 is a limit shared by the figures of a kind
 * (signed and bars: [-lim, lim]; non-negative: [0, lim]) used unless --range
 * auto; --vmin/--vmax override both ends; bars without either are fitted to
 * their data. */
hs_viz_options cli_figopts_for(const cli_figopts *fo, cli_fig_kind kind, double lim);

/* An output folder and the index of what was written into it. */
typedef struct {
    const char *cmd;      /* subcommand name for messages */
    const char *dir;      /* borrowed */
    const cli_figopts *fo;
    cJSON *files;         /* [{"file", "format", "shows", "bytes", "fnv1a64"}] */
    cli_stage stage;      /* where the files go until cli_out_index moves them in */
    cli_inputs inputs;    /* the files the command reads: never replaced or removed */
    cJSON *page;          /* {stem: JSON} that index.html shows (--format html), else NULL */
    hs_buf wide;          /* "stem W in, ..." of the figures wider than their default */
    int n_wide;
    hs_pool *pool;        /* borrowed, may be NULL: figures are written on it (set it
                           * after cli_outdir_open; it must outlive cli_outdir_close) */
    struct cli_pending **pend; /* figures cli_out_figure took, until cli_out_index */
    int n_pend, cap_pend;
} cli_outdir;

/* Opens dir under the output-folder policy of cli/util.h ("Output folders"):
 * creates it if missing (its parent must exist), refuses a path that is not a
 * folder, and starts the run's working folder. inputs: the files the command
 * reads, NULL-terminated (may be NULL). 0 ok, 1 after printing. */
int cli_outdir_open(cli_outdir *o, const char *cmd, const char *dir, const cli_figopts *fo,
                    const char *const *inputs);
/* Discards whatever was not committed (a failed run leaves dir as it was),
 * pending figures included. */
void cli_outdir_close(cli_outdir *o);

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
int cli_out_figure(cli_outdir *o, const char *stem, hs_viz_figure **fig, const cJSON *json,
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

/* Writes index.json: {"generator": "headscope <version> <command>", "command",
 * "files": [...]} plus the keys of extra (may be NULL; only read), with
 * --format html first index.html (listed in index.json: the page of everything
 * cli_out_page collected), then moves every file of the run into the folder
 * (cli_out_commit). Call it last. 0 ok, 1 after printing the error. */
int cli_out_index(cli_outdir *o, const cJSON *extra);

/* cli_out_index with extra built by the caller (with the cJSON_Add* results
 * ANDed into ok): extra NULL or ok 0 is out of memory, said. extra is
 * consumed. 0 ok, 1 after printing. */
int cli_out_index_with(cli_outdir *o, cJSON *extra, int ok);

/* Prints "wrote N files to DIR (WHAT; listed in DIR/index.json)" on stdout,
 * N the files the index lists (what NULL: "(listed in DIR/index.json)"). */
void cli_out_say_wrote(const cli_outdir *o, const char *what);

/* Adds "colour_scale" to a figure's JSON j: the scale its PNG/SVG/PDF uses
 * (cli_figopts_for(fo, kind, lim)), so the HTML page draws the same:
 * {"cmap": "diverging"|"viridis"|"greys", "range": "fixed"|"auto", and for
 * fixed "vmin", "vmax"}. auto is the figures' rule: signed [-max|v|, max|v|],
 * non-negative [0, max v]. 0 ok, 1 on OOM. */
int cli_add_scale(cJSON *j, const cli_figopts *fo, cli_fig_kind kind, double lim);

/* Whether any image format (png, svg, pdf) is wanted (so a command can skip the layout). */
int cli_figopts_images(const cli_figopts *fo);
/* Whether figure JSON is wanted: for the .json files or for the HTML page. */
int cli_figopts_data(const cli_figopts *fo);

#endif
