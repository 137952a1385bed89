/*
 * cli/util.h -- helpers shared by the subcommands: loading a checkpoint with
 * its vocabulary and task, number parsing, error printing.
 */
#ifndef HS_CLI_UTIL_H
#define HS_CLI_UTIL_H

#include "common/common.h"
#include "model/model.h"
#include "tasks/tasks.h"

/* A loaded checkpoint: the model, its vocabulary, and its task (NULL when
 * the checkpoint carries no task metadata). */
typedef struct {
    hs_model *model;
    hs_vocab *vocab;
    hs_winograd *task;
    hs_meta meta;
} cli_loaded;

/* Loads path; on failure prints "headscope CMD: <message>" and returns 1. */
int cli_load(const char *cmd, const char *path, int need_task, cli_loaded *out);
void cli_loaded_free(cli_loaded *l);

/* Prints "headscope CMD: message" on stderr and returns 1 (user error). */
int cli_error(const char *cmd, const hs_error *err);
/* Prints "headscope CMD: <fmt...>" and returns 2 (usage error). */
int cli_usage_error(const char *cmd, const char *fmt, ...);

/* Gets output folder dir ready for a new run: creates it if missing (its
 * parent must exist; a path that exists and is not a folder is refused). If
 * dir/index.json is an index headscope wrote before, deletes exactly the files
 * it lists (plain names only; an entry with '/' or ".." is skipped) and then
 * the old index.json, so no file from an earlier run outlives it. Files no
 * index lists are kept, with a one-line note on stderr. 0 ok, 1 after
 * printing the error. */
int cli_prepare_out_dir(const char *cmd, const char *dir);

/* --threads N: 0 (every CPU) up to the machine's online CPUs (hs_pool_cpus).
 * 0 on success; otherwise prints the usage error naming the range and
 * returns 2. */
int cli_parse_threads(const char *cmd, const char *s, int *out);
/* Says on stderr how many worker threads a run uses ("threads: 2 of 2
 * CPUs"), resolving 0 (auto) to the CPU count. */
void cli_say_threads(const char *cmd, int threads);

/* Strict integer / float parsing of a flag value; 0 on success. */
int cli_parse_int(const char *s, long lo, long hi, long *out);
int cli_parse_u64(const char *s, unsigned long long *out);
int cli_parse_float(const char *s, double lo, double hi, double *out);

#endif
