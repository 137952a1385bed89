/*
 * experiments/patch_internal.h -- what patch's exact sweep (patch.c), its
 * attribution estimate (atp.c) and its report (patch_report.c) share and
 * nothing else includes: the acts' hook points, the argument checks,
 * joining the two reports.
 */
#ifndef HS_PATCH_INTERNAL_H
#define HS_PATCH_INTERNAL_H

#include "experiments/experiments.h"

/* The hook point of each act of patch, "%d" the layer (experiments/patch_report.c). */
extern const char *const hs_patch_hooks[HS_PATCH_N];

/* patch's checks of its arguments (hs_patch_run_tokens's HS_ERR_INPUT
 * cases: no prompt, an answer, wrong answer or position out of range, an
 * act the model does not produce). */
hs_status hs_patch_check(const hs_model *m, int n, int t, const int *answer, const int *wrong,
                         const int *pos, unsigned acts, hs_error *err);

/* exact (a report of hs_patch_run_tokens) becomes method HS_PATCH_BOTH:
 * it takes atp's (hs_atp_run_tokens on the same set and acts) normalised
 * estimates as its atp_metric and atp_metric_pos and gets each act's
 * Pearson's r; atp is freed (experiments/atp.c). */
void hs_patch_join(hs_patch_report *exact, hs_patch_report *atp);

#endif
