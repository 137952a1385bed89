/*
 * experiments/attribution_internal.h -- what the gradient-based experiments
 * share and nothing else includes: the per-worker activations with backward
 * scratch, and the metric's gradient at each prompt's read position
 * (attribution.c: EAP, EAP-IG; atp.c: AtP). Shapes: a chunk is
 * HS_ENGINE_CHUNK rows of t positions; V vocabulary.
 */
#ifndef HS_ATTRIBUTION_INTERNAL_H
#define HS_ATTRIBUTION_INTERNAL_H

#include "experiments/experiments.h"

/* One engine worker's backward resources: every forward of a chunk runs on
 * acts (the engine's own activations, which have no backward scratch, stay
 * untouched). */
typedef struct {
    hs_acts *acts;     /* (HS_ENGINE_CHUNK, t), with backward scratch (hs_backward_acts) */
    float *dlogits;    /* (HS_ENGINE_CHUNK, t, V), zero but the rows a step writes */
    double *scratch;   /* (2 V) hs_metric_grad's */
} hs_attr_worker;

/* One hs_attr_worker per engine worker of e: w (e->n_workers) calloc'd,
 * free with hs_attr_workers_free (also after a failure). HS_ERR_NOMEM and
 * hs_acts_create's errors. */
hs_status hs_attr_workers_init(const hs_engine *e, hs_attr_worker **w, hs_error *err);
void hs_attr_workers_free(hs_attr_worker *w, int n);

/* The gradient of metric k at each of the first b rows of a chunk whose
 * logits (HS_ENGINE_CHUNK, t, V) the last forward on w->acts left: row i's
 * logits at pos[i] against answer[i], wrong[i] (ref: (b, V) the reference
 * rows, kl only, else NULL), written into w->dlogits at those rows; then
 * hs_backward_acts with grad_obs, then those rows zeroed again. Errors of
 * hs_backward_acts (into err). */
hs_status hs_attr_backward(const hs_model *m, hs_attr_worker *w, hs_metric_kind k, int b, int t,
                           const int *pos, const int *answer, const int *wrong, const float *ref,
                           const hs_observer *grad_obs, hs_error *err);

/* The hook point of each act of patch, "%d" the layer (experiments/patch.c). */
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
