/*
 * cli/util.h -- helpers shared by the subcommands: loading a checkpoint with
 * its vocabulary and task, number parsing, error printing.
 */
#ifndef HS_CLI_UTIL_H
#define HS_CLI_UTIL_H

#include <cjson/cJSON.h>

#include "common/common.h"
#include "model/model.h"
#include "tasks/tasks.h"

/* A loaded checkpoint: the model, its vocabulary, and its task: task for a
 * Winograd model, ind for an induction model (both NULL when the checkpoint
 * carries no task metadata). */
typedef struct {
    hs_model *model;
    hs_tokenizer *vocab;
    hs_winograd *task;
    hs_induction *ind;
    hs_meta meta;
    int vocab_is_ids;   /* 1: no vocabulary anywhere; words are "#<id>" */
} cli_loaded;

/* Where a checkpoint without vocab or task metadata gets them (the flags
 * --vocab FILE, --split-seed S, --heldout-pairs FILE). Zeroed = none. */
typedef struct {
    const char *vocab;          /* one token a line, or a JSON list */
    const char *heldout_pairs;  /* "x y" noun pairs a line */
    int has_split_seed;
    unsigned long long split_seed;
} cli_source;

/* Option codes and getopt entries of those flags, and their --help lines. */
enum { CLI_O_VOCAB = 1200, CLI_O_SPLIT_SEED, CLI_O_HELDOUT_PAIRS }; /* after figopts.h's 1000.., expout.h's 1100.. */
#define CLI_VOCAB_OPT {"vocab", required_argument, 0, CLI_O_VOCAB}
#define CLI_SPLIT_OPTS                                                                   \
    {"split-seed", required_argument, 0, CLI_O_SPLIT_SEED},                              \
        {"heldout-pairs", required_argument, 0, CLI_O_HELDOUT_PAIRS}
#define CLI_VOCAB_HELP                                                                   \
    "  --vocab FILE           the vocabulary when the checkpoint has none: one token a\n"  \
    "                         line (id = line - 1), or a JSON list of strings\n"
#define CLI_SPLIT_HELP                                                                   \
    "  --split-seed S         for a Winograd model without task metadata: the split\n"     \
    "                         seed it was trained with (headscope train --split-seed)\n"   \
    "  --heldout-pairs FILE   or its held-out pairs, \"x y\" noun words a line\n"

/* Handles one of the flags above into src: 1 handled, 0 not one of them,
 * -1 a bad value (usage error printed, exit status 2). */
int cli_source_opt(const char *cmd, int c, const char *arg, cli_source *src);

/* What a command needs from a checkpoint beyond the weights: the
 * vocabulary, a Winograd task (an induction model is refused), any task. */
enum { CLI_NEED_VOCAB = 1, CLI_NEED_TASK = 2, CLI_NEED_ANY_TASK = 4 };

/* Loads path with its vocabulary (the checkpoint's, or src->vocab; without
 * either and without CLI_NEED_VOCAB, tokens are labelled by id: "#0",
 * "#1", ...) and its task (the checkpoint's, or from src's split seed or
 * held-out pairs; required with CLI_NEED_TASK). src may be NULL. On failure
 * prints "headscope CMD: <message>" and returns the exit status (1, or 2
 * for flags that cannot go together). */
int cli_load_src(const char *cmd, const char *path, int need, const cli_source *src,
                 cli_loaded *out);
/* cli_load_src with no flags; need_task: 0 the vocabulary, 1 a Winograd
 * task (an induction model is refused), 2 any task. */
int cli_load(const char *cmd, const char *path, int need_task, cli_loaded *out);
void cli_loaded_free(cli_loaded *l);

/* Prints "headscope CMD: message" on stderr and returns 1 (user error). */
int cli_error(const char *cmd, const hs_error *err);
/* Prints "headscope CMD: <fmt...>" and returns 2 (usage error). */
int cli_usage_error(const char *cmd, const char *fmt, ...);
/* The end of a command's options: a usage error (returns 2) for an argument
 * left over (argv[next], next < argc; next is getopt's optind) or a missing
 * --model (model NULL); else 0. */
int cli_args_end(const char *cmd, int argc, char **argv, int next, const char *model);

/* The notes of a library call (hs_notes) printed on stderr: "headscope CMD:
 * LINE" for HS_NOTE_CMD, "LINE" for HS_NOTE_PLAIN. cmd must outlive every
 * use of the result. */
hs_notes cli_notes(const char *cmd);

/* --threads N: 0 (every CPU) up to the machine's online CPUs (hs_pool_cpus).
 * 0 on success; otherwise prints the usage error naming the range and
 * returns 2. */
int cli_parse_threads(const char *cmd, const char *s, int *out);
/* Says on stderr how many worker threads a run uses ("threads: 2 of 2
 * CPUs"), resolving 0 (auto) to the CPU count. */
void cli_say_threads(const char *cmd, int threads);

/* The end of a command's stdout: flushes it; when that fails (or an earlier
 * write did) prints "headscope CMD: cannot write to stdout" and returns 1,
 * else 0. */
int cli_stdout_done(const char *cmd);

/* Strict integer / float parsing of a flag value; 0 on success. */
int cli_parse_int(const char *s, long lo, long hi, long *out);
int cli_parse_u64(const char *s, unsigned long long *out);
int cli_parse_float(const char *s, double lo, double hi, double *out);

#endif
