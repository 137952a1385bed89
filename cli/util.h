/*
 * cli/util.h -- helpers shared by the subcommands: loading a checkpoint with
 * its vocabulary and task (hs_load, its messages printed), number parsing,
 * error and note printing.
 */
#ifndef HS_CLI_UTIL_H
#define HS_CLI_UTIL_H

#include <cjson/cJSON.h>

#include "common/common.h"
#include "model/model.h"
#include "circuits/circuits.h"
#include "discovery/discovery.h"
#include "tasks/tasks.h"

/* Option codes and getopt entries of those flags, and their --help lines. */
enum { CLI_O_VOCAB = 1200, CLI_O_SPLIT_SEED, CLI_O_HELDOUT_PAIRS, CLI_O_PROCESS, CLI_O_NO_BOS,
       CLI_O_NO_SPECIAL }; /* after figopts.h's 1000.., expout.h's 1100.. */
/* every command that takes --model takes --vocab, --process, --no-bos and --no-special with it */
#define CLI_VOCAB_OPT                                                                    \
    {"vocab", required_argument, 0, CLI_O_VOCAB},                                        \
        {"process", required_argument, 0, CLI_O_PROCESS},                                \
        {"no-bos", no_argument, 0, CLI_O_NO_BOS},                                      \
        {"no-special", no_argument, 0, CLI_O_NO_SPECIAL}
#define CLI_SPLIT_OPTS                                                                   \
    {"split-seed", required_argument, 0, CLI_O_SPLIT_SEED},                              \
        {"heldout-pairs", required_argument, 0, CLI_O_HELDOUT_PAIRS}
#define CLI_VOCAB_HELP                                                                   \
    "  --vocab FILE           the vocabulary when the checkpoint has none: one token a\n"  \
    "                         line (id = line - 1), or a JSON list of strings\n"          \
    "  --process tl           the weights as TransformerLens' from_pretrained processes\n" \
    "                         them (fold_ln, centring, fold_value_biases; every DLA\n"      \
    "                         output says \"weights\"); --process raw (default): as stored\n" \
    "  --no-bos               a BPE model's text without the BOS token (<|endoftext|>)\n"  \
    "                         that is prepended by default, as TransformerLens does\n"  \
    "  --no-special           a special token's text (\"<|endoftext|>\") in a BPE model's\n" \
    "                         text is its bytes, not the one token it is by default\n"
#define CLI_SPLIT_HELP                                                                   \
    "  --split-seed S         for a Winograd model without task metadata: the split\n"     \
    "                         seed it was trained with (headscope train --split-seed)\n"   \
    "  --heldout-pairs FILE   or its held-out pairs, \"x y\" noun words a line\n"

/* Handles one of the flags above (--process: "tl" or "raw"; --no-bos) into src: 1
 * handled, 0 not one of them,
 * -1 a bad value (usage error printed, exit status 2). */
int cli_source_opt(const char *cmd, int c, const char *arg, hs_load_source *src);

/* hs_load (tasks.h) with its notes and errors printed: 0, or the exit
 * status after printing "headscope CMD: <message>" (1, or 2 for flags that
 * cannot go together). */
int cli_load_src(const char *cmd, const char *path, int need, const hs_load_source *src,
                 hs_loaded *out);

/* Prints "headscope CMD: message" on stderr and returns 1 (user error). */
int cli_error(const char *cmd, const hs_error *err);

/* Progress of long library work on stderr (hs_pool_set_progress(pool,
 * cli_progress_print, &prog)), as train prints its steps: on a terminal one
 * line rewritten in place, "CMD: WHAT DONE/TOTAL [bar] PCT% ETA Ns"; else a
 * plain line "CMD: WHAT DONE/TOTAL ETA Ns" at most every
 * HEADSCOPE_PROGRESS seconds (default 5) and at the end. Nothing is printed
 * for work done within 2 seconds of the start on a terminal, within
 * HEADSCOPE_PROGRESS seconds otherwise (HEADSCOPE_PROGRESS=0: every unit, at
 * once; off: nothing). */
typedef struct {
    const char *cmd;
    int tty;
    double every;       /* seconds between plain lines */
    double t0, t_what;  /* when set up; when the current phase began */
    double last;        /* when the last line was printed (0: none yet) */
    long d_what;        /* units done at the phase's first report (the rate counts from it) */
    long d_last;        /* units done at the last report */
    char what[48];      /* the current phase */
    int shown;          /* a line of this phase is on screen */
} cli_progress;
/* Sets p up for command cmd (reads isatty(2) and HEADSCOPE_PROGRESS). */
void cli_progress_init(cli_progress *p, const char *cmd);
/* An hs_progress_fn (ctx: a cli_progress). */
void cli_progress_print(void *ctx, const char *what, long done, long total);
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
/* The most heads a head list (--only) names: GPT-2 XL's 48 layers of up to
 * HS_VIZ_MAX_HEADS heads. */
#define CLI_MAX_HEADS (HS_MAX_LAYERS * HS_VIZ_MAX_HEADS)
/* Parses a head list "L1H0,L0H1" (no signs or spaces) into sel
 * (CLI_MAX_HEADS); 0 ok, -1 a syntax error or more than CLI_MAX_HEADS. */
int cli_parse_heads(const char *s, hs_head *sel, int *n);
/* Says on stderr how many worker threads a run uses ("threads: 1 of 2
 * CPUs") when --threads gave a count; nothing for 0 (the default, every
 * CPU), which is no news on every run. */
void cli_say_threads(const char *cmd, int threads);

/* The end of a command's stdout: flushes it; when that fails (or an earlier
 * write did) prints "headscope CMD: cannot write to stdout" and returns 1,
 * else 0. */
int cli_stdout_done(const char *cmd);

/* The tokenizer of model path m without building the model: a folder's
 * BPE files (hs_tokenizer_load_dir), or a checkpoint's `vocab` metadata
 * (its header read). *out NULL on failure; HS_ERR_INPUT "M has no vocab
 * metadata ..." for a checkpoint without a word list. */
hs_status cli_open_tokenizer(const char *m, hs_tokenizer **out, hs_error *err);

/* A corpus given as `--corpus FILE...`: the files are --corpus's values (the
 * option may repeat) and every argument left after the options (argv[next..],
 * getopt having moved them to the end), so a shell glob works. Returns the
 * count (*files malloc'd and NULL-terminated, pointing into argv; the caller
 * frees the array),
 * or -1 after printing a usage error (no --corpus, or an argument left over
 * without one; memory). */
int cli_corpus_files(const char *cmd, const char **given, int n_given, int argc, char **argv,
                     int next, const char ***files);

/* Strict integer / float parsing of a flag value; 0 on success. */
int cli_parse_int(const char *s, long lo, long hi, long *out);
int cli_parse_u64(const char *s, unsigned long long *out);
int cli_parse_float(const char *s, double lo, double hi, double *out);

/* The terminal columns of the first bytes of the valid UTF-8 s: each code
 * point counts utf8proc_charwidth's width (2 for East Asian wide and
 * fullwidth characters and emoji, 0 for combining marks, 1 otherwise).
 * Returns how many bytes make the longest prefix of s of at most max_cols
 * columns (all of s when it fits) and puts that prefix's columns in *cols.
 * Call with max_cols SIZE_MAX for the whole string's columns. */
size_t cli_term_prefix(const char *s, size_t max_cols, size_t *cols);

#endif
