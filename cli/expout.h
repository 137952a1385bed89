/*
 * cli/expout.h -- what the commands over a prompt set share (patch, ablate,
 * dla, lens, heads: the checkpoint, the prompt set, the pool, the output
 * folder, the end of a run; their figures are the library's, e.g.
 * hs_patch_figures), and the option loop those and inspect, weights,
 * circuit, timeline and eval share.
 */
#ifndef HS_CLI_EXPOUT_H
#define HS_CLI_EXPOUT_H


#include "figopts.h"
#include "util.h"
#include "experiments/experiments.h"

/* What every command over a prompt set shares (heads, patch): the checkpoint,
 * the prompt set (or one sentence), the worker pool, the output folder. */
typedef struct {
    const char *cmd;
    const char *model, *data, *sentence, *out; /* from the command line */
    int json;          /* --json: print the JSON instead of the summary */
    int threads;       /* --threads */
    hs_load_source from;   /* --vocab for a checkpoint without one */
    hs_figopts fo;
    hs_loaded Ld;
    hs_prompts p;
    hs_pool *pool;
    hs_outdir od;
    cli_progress prog; /* the pool's progress printer (cli_progress_print) */
} cli_exp;

/* The options every prompt-set command shares, for its getopt_long table:
 * --model, --data, --out, --json, --threads, --vocab and the figure options (and
 * --sentence where a single sentence is allowed). */
enum { CLI_EXP_MODEL = 1100, CLI_EXP_DATA, CLI_EXP_SENTENCE, CLI_EXP_OUT, CLI_EXP_JSON, CLI_EXP_THREADS };
#define CLI_EXP_LONGOPTS                                                         \
    {"model", required_argument, 0, CLI_EXP_MODEL},                              \
    {"data", required_argument, 0, CLI_EXP_DATA},                                \
    {"out", required_argument, 0, CLI_EXP_OUT},                                  \
    {"json", no_argument, 0, CLI_EXP_JSON},                                      \
    {"threads", required_argument, 0, CLI_EXP_THREADS},                          \
    CLI_VOCAB_OPT,                                                               \
    CLI_FIGOPTS_LONGOPTS
#define CLI_EXP_SENTENCE_LONGOPT {"sentence", required_argument, 0, CLI_EXP_SENTENCE}

/* Defaults (figure options at 300 dpi) for command cmd. */
void cli_exp_init(cli_exp *x, const char *cmd);
/* After parsing: loads the model, reads the prompt set (--data, with
 * prompt_flags of hs_prompts_load) or the sentence, opens the output folder,
 * starts the pool. 0 ok, 1 after printing. */
int cli_exp_open(cli_exp *x, int prompt_flags);
/* Handles one shared option code from getopt_long (bad: the option's text
 * for the message). 0 when handled; 2 after printing a usage error (an
 * unknown option included). */
int cli_exp_option(cli_exp *x, int code, const char *arg, const char *bad);
/* After the option loop: no stray argument, --model given, and --data (or,
 * when sentence_ok, exactly one of --data and --sentence). 0 ok, 2 after
 * printing the usage error. */
int cli_exp_check(const cli_exp *x, int argc, char **argv, int sentence_ok);
/* Writes NAME.json (json, with "model" and "config" added here) and
 * index.json into the folder when --out was given, then prints the JSON
 * (--json) or summary (plus the files written), and says the threads used
 * on stderr. The model (x->Ld.model; its vocabulary stays) is freed once its
 * config is in the JSON: its weights are unmapped while the pool's lane
 * still draws the figures the index waits for (GPT-2 small: 5-10 ms of
 * munmap, in pieces, hs_model_destroy, that ran after them). 0 ok, 1 after
 * printing. */
int cli_exp_finish(cli_exp *x, cJSON *json, const char *name, const char *shows, hs_buf *summary);
/* For a command whose folder the library wrote itself (discover,
 * faithfulness): prints json (--json; NULL means memory ran out) or summary
 * (its oom flag likewise) and, when out was given, "wrote N files to OUT
 * (listed in OUT/index.json)"; then the threads used on stderr. Frees json
 * and summary. 0 ok, 1 after printing an error. */
int cli_exp_print_report(const cli_exp *x, const char *out, struct cJSON *json, hs_buf *summary, int n_files);
void cli_exp_close(cli_exp *x);

/*
 * The option loop every command with shared options runs (getopt_long over
 * opts, long options only, getopt's own messages off):
 *
 *     cli_opts op = {.cmd = C, .help = HELP, .src = &from, .fo = &fo};
 *     while ((c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END)
 *         switch (c) {
 *         case CLI_OPT_EXIT: return op.status;
 *         case O_MINE: ...
 *         }
 *
 * A command's own option codes are CLI_OPT_OWN_FIRST (256) up to 999 and are
 * returned to it; every other code (the shared ones: --help, figure options,
 * checkpoint source, a prompt-set command's CLI_EXP_LONGOPTS; an unknown or
 * incomplete option) is handled here.
 */
enum { CLI_OPT_END = -1, CLI_OPT_EXIT = -2, CLI_OPT_OWN_FIRST = 256, CLI_OPT_OWN_END = 1000 };
enum { CLI_O_HELP = 1300 }; /* after util.h's 1200.. */
#define CLI_HELP_OPT {"help", no_argument, 0, CLI_O_HELP}

typedef struct {
    const char *cmd;
    const char *help;  /* printed on --help (CLI_HELP_OPT), CLI_FIGOPTS_HELP after it when there
                        * are figure options; NULL when the command prints its own help */
    hs_load_source *src;   /* --vocab, --split-seed, --heldout-pairs go here, or NULL */
    hs_figopts *fo;   /* the figure options go here, or NULL (a command without figures) */
    cli_exp *exp;      /* a prompt-set command: CLI_EXP_LONGOPTS go here (cli_exp_option; src and
                        * fo are then exp's own), or NULL */
    int status;        /* after CLI_OPT_EXIT: the command's exit status (0 after --help, 2 after
                        * a usage error, printed) */
    int started;       /* 0 before the first call, which resets getopt (optind = 1) */
} cli_opts;

/* The next of the command's own option codes (optarg holds its value), after
 * handling any shared options before it; CLI_OPT_END when the options end
 * (optind is then the first argument left); CLI_OPT_EXIT when the command
 * should return o->status (help printed, or a usage error printed). */
int cli_opt_next(cli_opts *o, int argc, char **argv, const struct option *opts);

#endif
