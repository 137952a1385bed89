/*
 * cli/figopts.h -- the figure options on the command line (--dpi, --width,
 * --font-size, --cmap, --range, --vmin, --vmax, --annotate, --format,
 * --layout) into the library's hs_figopts (output/output.h, which owns what each kind of
 * figure gets from them and the output folders), their --help text, and the
 * few output-folder calls the CLI prints around.
 *
 * Use: put CLI_FIGOPTS_LONGOPTS in the getopt_long table, run the option loop
 * with cli_opt_next() (expout.h: it hands the figure options to
 * cli_figopts_option() and prints CLI_FIGOPTS_HELP after --help).
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
    CLI_FO_LAYOUT,
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
    {"vmax", required_argument, 0, CLI_FO_VMAX},                                 \
    {"layout", required_argument, 0, CLI_FO_LAYOUT}

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

/* hs_outdir_open (output/output.h: the one output-folder policy) with no
 * pool, its notes and error printed: 0 ok, 1 after printing. */
int cli_outdir_open(hs_outdir *o, const char *cmd, const char *dir, const hs_figopts *fo,
                    const char *const *inputs);
/* Prints "wrote N files to DIR (WHAT; listed in DIR/index.json)" on stdout,
 * N the files the index lists (what NULL: "(listed in DIR/index.json)"). */
void cli_out_say_wrote(const hs_outdir *o, const char *what);


#endif
