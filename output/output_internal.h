/*
 * output/output_internal.h -- what the files of output/ share and nothing
 * else includes: the working folder's commit and discard (folder.c), used by
 * the figure and index writer (files.c).
 */
#ifndef HS_OUTPUT_INTERNAL_H
#define HS_OUTPUT_INTERNAL_H

#include "output/output.h"

/* Moves every file o->files lists from the working folder into o->dir
 * (output.h's policy: a taken name refuses the whole move; index.json last),
 * removes what the earlier run wrote that this one does not, removes the
 * working folder and says (notes) what was removed and what else the folder
 * holds. DIR unchanged on a refusal. */
hs_status out_stage_commit(hs_outdir *o, hs_error *err);

/* The entries of DIR's earlier index.json for files another command wrote
 * there (their "by": `view`'s page) that are still as listed and that this
 * run does not write (files: its entries): a new array (caller deletes) the
 * new index lists again, so the run neither removes them nor disowns them.
 * NULL when out of memory. */
cJSON *out_others_kept(const hs_outdir *o, const cJSON *files);

/* Removes the working folder and everything in it (and DIR when this run
 * created it and it is empty); safe when there is none. */
void out_stage_discard(hs_outdir *o);

#endif
