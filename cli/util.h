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

/* Strict integer / float parsing of a flag value; 0 on success. */
int cli_parse_int(const char *s, long lo, long hi, long *out);
int cli_parse_u64(const char *s, unsigned long long *out);
int cli_parse_float(const char *s, double lo, double hi, double *out);

#endif
