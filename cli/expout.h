/*
 * cli/expout.h -- one figure (+ its JSON with the model and config added)
 * through the shared output folder (figopts.h), for the commands that write
 * matrices and bars of an experiment: circuit, patch, ablate, dla, lens,
 * heads.
 */
#ifndef HS_CLI_EXPOUT_H
#define HS_CLI_EXPOUT_H

#include "figopts.h"

typedef struct {
    cli_outdir *od;
    const char *model;     /* the checkpoint path, written into each JSON */
    const hs_config *cfg;  /* its config, written into each JSON */
} cli_fig_ctx;

/* Writes stem.{png,svg,json} in the formats chosen. kind 0 = signed matrix
 * (R x C, diverging), 1 = bars (R values), 2 = non-negative matrix (R x C,
 * sequential from 0, e.g. attention). vmax > 0: fixed range (kind 0:
 * [-vmax, vmax]; kind 2: [0, vmax]) unless --range auto. A figure over the
 * viz caps gets its JSON only, with a note. 0 ok, 1 after printing. */
int cli_out_fig(const cli_fig_ctx *x, int kind, const char *stem, const float *m, size_t R, size_t C,
                const char *const *rl, const char *const *cl, const char *title, const char *xl,
                const char *yl, double vmax, const char *shows);

#endif
