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
int cmd_demo(int argc, char **argv);
int cmd_view(int argc, char **argv);
int cmd_timeline(int argc, char **argv);

#include "figopts.h"
#include "util.h"

/* One figure of `circuit` (cmd_circuit.c) in the chosen formats, its JSON
 * carrying the model and config: kind as cli_figopts_for, m (R, C) (bars: R
 * values), lim > 0 a fixed limit (else the data's), q the quantity the colour
 * bar shows. 0 ok, 1 printed. */
typedef struct {
    cli_outdir *od;
    const char *model;
    const hs_config *cfg;
} cli_fig_ctx;
int cli_circuit_fig(const cli_fig_ctx *x, cli_fig_kind kind, const char *stem, const float *m, size_t R,
                    size_t C, const char *const *rl, const char *const *cl, const char *title,
                    const char *xl, const char *yl, double lim, const char *q, const char *shows);

/* `circuit` on an induction-task model (cmd_circuit_induction.c): runs the
 * induction-circuit check on ld, prints the summary (or the JSON with json),
 * writes report.json and figures into od when od is not NULL; comp_draws 0 =
 * the default. Returns the exit status. */
int cli_circuit_induction(const char *cmd, const char *model, const cli_loaded *ld, int json,
                          cli_outdir *od, int comp_draws);

#endif
