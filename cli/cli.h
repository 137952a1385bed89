/*
 * cli/cli.h -- the subcommands of the headscope program. Each takes argv with
 * argv[0] = the subcommand name and returns the process exit status
 * (0 ok, 1 user error, 2 usage error). Only cli/ prints and exits.
 */
#ifndef HS_CLI_H
#define HS_CLI_H

int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_circuit(int argc, char **argv);
int cmd_weights(int argc, char **argv);
int cmd_heads(int argc, char **argv);
int cmd_patch(int argc, char **argv);
int cmd_lens(int argc, char **argv);
int cmd_ablate(int argc, char **argv);
int cmd_dla(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_view(int argc, char **argv);
int cmd_timeline(int argc, char **argv);
int cmd_discover(int argc, char **argv);
int cmd_faithfulness(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_prompts(int argc, char **argv);
int cmd_cache(int argc, char **argv);
int cmd_bpe(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_ladder(int argc, char **argv);

#include "figopts.h"
#include "util.h"

/* A training run (hs_train_run) as `headscope train` shows it (cmd_train.c):
 * the notes and progress on stderr (a line rewritten in place on a terminal,
 * else every log_every steps), SIGINT / SIGTERM caught from the first step
 * on, the result and the threads on stdout / stderr. job's callbacks and
 * interrupt are replaced. Returns the exit status (0, or 1 after printing). */
int cli_train(const char *cmd, const hs_train_job *job);

#endif
