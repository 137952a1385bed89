/*
 * circuits/circuits_internal.h -- what the files of circuits/ share and
 * nothing else may call (STYLE.md 14: tests reach internals through
 * *_internal.h). Not public API; not installed. Dims legend as circuits.h; T = HS_CIRC_T = 15
 * positions (0..14), n held-out rows.
 *
 * The two-step referent-circuit check (hs_circuit_run) is five files:
 *   circuit.c           the run: opts, the matched held-out rows (the run
 *                       context below), the experiment engine's phases A-C
 *                       (clean and corrupted caches, ablations, patching,
 *                       path patching), composition;
 *   circuit_suffix.c    the interventions that run at position 14 alone
 *                       (hs_forward_suffix: path patching into the last
 *                       layer, patching and ablating z at 14);
 *   circuit_evidence.c  the evidence read from the clean cache: the layer-0
 *                       invariant, attention by role, DLA, copying;
 *   circuit_verdict.c   the verdict rules (pushers, decision heads, step 1,
 *                       step 2, the route and its name) and the verdict's
 *                       report writers beside them (its JSON section and its
 *                       summary lines);
 *   circuit_report.c    the rest of the report's JSON and summary, one writer
 *                       per section, and the report JSON helpers below.
 * The induction-circuit check (hs_ind_circuit_run) is two:
 *   induction_circuit.c the run: each head's scores, copying and ablation,
 *                       the role sets' ablations, composition and path
 *                       patching of the named pair;
 *   induction_verdict.c the roles, the criteria and the verdict, and beside
 *                       them the report's JSON and summary.
 * Both checks end with circuit_discovery.c: EAP-IG on the check's own prompt
 * set, MIB's 5 % circuit and its faithfulness, and where the found edges
 * agree with the path-patching edges the check names (its JSON section and
 * summary lines).
 */
#ifndef HS_CIRCUITS_INTERNAL_H
#define HS_CIRCUITS_INTERNAL_H

#include "circuits/circuits.h"

#include <cjson/cJSON.h>

/* ------------------------------------------------------------------------ */
/* Report JSON helpers (circuits/circuit_report.c)                              */

/* Adds key: item to object o; deletes item when it cannot be added. Returns
 * 0 when item is NULL (its creation ran out of memory) or on OOM, else 1. */
int hs_circ_json_add(cJSON *o, const char *key, cJSON *item);

/* Adds key: v to object o, null for NaN/Inf (hs_json_num_or_null). Returns 0
 * on OOM, else 1. */
int hs_circ_json_num(cJSON *o, const char *key, double v);

/* {"crosser": v[0], "crossed": v[1], "all": v[2]} (HS_CIRC_CROSSER/CROSSED/ALL;
 * null for NaN); NULL on OOM. */
cJSON *hs_circ_json_groups3(const double v[3]);

/* A new empty object appended to array a; NULL on OOM. */
cJSON *hs_circ_json_array_object(cJSON *a);

/* Adds key: ["L0H1", ...], the names of heads h[0..n-1]. Returns 0 on OOM,
 * else 1. */
int hs_circ_json_head_list(cJSON *o, const char *key, const hs_head *h, int n);

/* ------------------------------------------------------------------------ */
/* The circuit run's context (circuits/circuit.c)                               */
/*
 * Rows: 0..np-1 are the crosser sentences, np..2np-1 their crossed partners
 * in the same order, T = HS_CIRC_T tokens. The "corrupted" sentence of a row
 * is its partner's.
 */
typedef struct {
    const hs_model *m;
    const hs_winograd *t;
    int L, H, D, V;
    int n, np;                /* rows; matched pairs (n = 2 np) */
    const hs_wg_example **ex; /* (n) clean order */
    int *tok_clean, *tok_corr; /* (n, T) */
    int *ref_clean, *ref_corr; /* (n) vocab ids: the clean / corrupted sentence's referent */
    int s_diff;               /* the first position where some row's clean and corrupted
                                 tokens differ (the adjective, 11); T when none */
    int n_chunks;             /* hs_engine_chunks(n) */
    hs_cache clean, corr;     /* caches of the clean / corrupted runs, all n rows */
    int for_eval;             /* 1: they also hold every hook_result and hook_mlp_out, the
                                 discovery section's evaluator's (hs_circeval_create_cached) */
    hs_cache *clean_v, *corr_v; /* (n_chunks) borrowed views of each chunk's rows */
    hs_cache means;           /* batch-1 "reference" cache: position-wise means */
    const float **mlp_mean;   /* (L) (T, D) or NULL: data of entries of `means` */
    hs_pool *pool;
    hs_engine eng;
    int **pred;               /* (workers) (n) argmax at 14 per held-out row, -1 on NaN */
    double **ld;              /* (workers) (n) logit(ref_clean) - logit(ref_corr) at 14 per row */
} hs_circ_ctx;

/* ------------------------------------------------------------------------ */
/* Runs at position 14 alone (circuits/circuit_suffix.c)                       */

/* An intervention of the check: path patching (the receiver's input `input`,
 * 0 q, 1 k, 2 v, in[input] its values by hs_path_patch_inputs, (n T, dh)),
 * patching heads' z from the clean run at `pos` (14 or -1: all), or
 * mean-ablating heads' z (c->means). */
enum { HS_CIRC_EDIT_PATH, HS_CIRC_EDIT_PATCH, HS_CIRC_EDIT_ABLATE };
typedef struct {
    int kind;
    const hs_head *heads; /* PATCH, ABLATE */
    int n_heads;
    int pos;              /* PATCH */
    hs_head receiver;     /* PATH */
    int input;            /* PATH */
    float *const *in;     /* PATH: (3) */
} hs_circ_edit;

/* ------------------------------------------------------------------------ */
/* The mean-ablation reference (circuits/circuit_means.c)                     */

/* 1 when hs_circ_means can run c's model: hs_forward_suffix's blocks, learned
 * positions added, no embedding norm, 0 < c->s_diff < T. */
int hs_circ_means_ok(const hs_circ_ctx *c);
/* c->means (freed first) <- the position-wise means of every block's
 * blocks.l.attn.hook_z and blocks.l.hook_mlp_out over the n rows tok (n, T),
 * entries of batch 1 in the forward's order: hs_engine_means' bits (each
 * value summed in double in row order, then divided by n), each group of
 * rows with the same tokens before c->s_diff run whole once on c->eng and
 * its other rows from s_diff on alone (hs_forward_suffix, exact) on the
 * group's keys and values. c->eng's workers as hs_engine_means leaves them.
 * HS_ERR_INPUT (no rows), HS_ERR_NOMEM. */
hs_status hs_circ_means(hs_circ_ctx *c, const int *tok, size_t n, hs_error *err);

/* 1 when the model's blocks run on hs_forward_suffix (two layers at least);
 * phase A then caches every block's hook_k, hook_v and the last's hook_q. */
int hs_circ_suffix_runs(const hs_circ_ctx *c);

/* How hs_circ_suffix_run takes e: 0 not (the engine's run from its block),
 * 1 the last block alone at position 14 (an edit in the last block: path
 * patching into it, its heads' z patched or mean-ablated), 2 from the block
 * of the heads e patches on, at the positions the patch changes alone: 14
 * for a patch at 14, c->s_diff.. for one at every position (before s_diff
 * the two runs' tokens, so their z, are the same: patching there changes no
 * bit), every earlier position the corrupted run's. */
int hs_circ_suffix_kind(const hs_circ_ctx *c, const hs_circ_edit *e);

/* Intervention e (hs_circ_suffix_kind not 0) on the n held-out rows: the
 * argmax at 14 into pred[n] and the LD there into ld[n] (either may be
 * NULL), the bits of the engine's run with e's hooks (hs_forward_suffix,
 * z_last or exact, every logit by the forward's product). Reads c's caches
 * only (workers may run it side by side). HS_ERR_INPUT, HS_ERR_NOMEM. */
hs_status hs_circ_suffix_run(const hs_circ_ctx *c, const hs_circ_edit *e, int *pred, double *ld, hs_error *err);

/* ------------------------------------------------------------------------ */
/* Evidence from the clean cache (circuits/circuit_evidence.c)                  */

/* The layer-0 score invariant over every pair of held-out rows into r->inv_*
 * (NAN and inv_applicable 0 for uniform attention). */
void hs_circ_invariant(const hs_circ_ctx *c, hs_circuit_report *r);

/* Each head's attention at 14 by role into r->heads[].attn, the mean pattern
 * rows 14 into r->attn_rows and their head averages into r->attn_rows_avg
 * (zeroed by the caller). */
void hs_circ_attention(const hs_circ_ctx *c, hs_circuit_report *r);

/* Each head's DLA at 14 towards x and y by role into r->heads[].dla
 * (hs_logit_attribution). Errors of the probe call, HS_ERR_NOMEM. */
hs_status hs_circ_dla(const hs_circ_ctx *c, hs_circuit_report *r, hs_error *err);

/* Each head's OV copying score into r->heads[].copying, copying_pos
 * (hs_copying_score, HS_FOLD_LN). Errors of the probe call. */
hs_status hs_circ_copying(const hs_model *m, hs_circuit_report *r, hs_error *err);

/* ------------------------------------------------------------------------ */
/* Verdict rules and their report writers (circuits/circuit_verdict.c)          */

/* Candidate pushers (circuits.h "Verdicts") into r->heads[].pusher, r->pushers;
 * r->acc_pushers set to NAN (phase B fills it when a pusher exists). */
void hs_circ_find_pushers(hs_circuit_report *r);

/* Decision heads into r->heads[].decision, r->decision, and r->patch_usable,
 * from the patching and ablation evidence. */
void hs_circ_find_decision(hs_circuit_report *r);

/* Steps 1 and 2 and the route: r->step1_holds, step2_*, route_features and
 * the owned words (step1_reason, step2_reason, route, route_reason).
 * HS_ERR_NOMEM. */
hs_status hs_circ_verdicts(hs_circuit_report *r, hs_error *err);

/* Adds the report's "verdict" object to root. Returns 0 on OOM, else 1. */
int hs_circ_verdict_json(cJSON *root, const hs_circuit_report *r);

/* Appends the summary's verdict lines (steps, route, thresholds) to s. */
void hs_circ_verdict_summary(hs_buf *s, const hs_circuit_report *r);

/* ------------------------------------------------------------------------ */
/* The induction check's roles and criteria (circuits/induction_verdict.c)      */

/* The roles from the heads' scores: previous-token heads (layer 0,
 * prev_score >= opts.prev_min) into r->prev, induction heads (layers >= 1,
 * ind_score >= opts.ind_min) into r->ind, heads[].role; the best of each
 * into r->prev_best / r->ind_best (layer -1 when no head passes); and the
 * criteria HS_IND_PREV and HS_IND_IND. */
void hs_ind_find_roles(hs_ind_circuit_report *r);

/* The named previous-token head (r->prev_best) and induction head
 * (r->ind_best) of the report, NULL when there is none. */
const hs_ind_head *hs_ind_named_prev(const hs_ind_circuit_report *r);
const hs_ind_head *hs_ind_named_ind(const hs_ind_circuit_report *r);

/* The other criteria (ablation; with a named pair composition, path
 * patching and copying) over the gathered evidence, r->holds and
 * r->verdict. HS_ERR_NOMEM (also when a criterion's words ran out). */
hs_status hs_ind_verdicts(hs_ind_circuit_report *r, hs_error *err);

/* ------------------------------------------------------------------------ */
/* The discovery section of both checks (circuits/circuit_discovery.c)       */
/* (circuits.h, "Discovery beside the hand-written verdicts")                */

/* The Winograd check's section into r->disc: c's held-out rows (clean,
 * corrupted partner, referents, position 14) as the prompt set, on c's pool;
 * the named edges from r->path and r->decision (after phase C). Errors:
 * discovery's (hs_eap_scores, hs_circeval_create, the curve), HS_ERR_NOMEM. */
hs_status hs_circ_discovery_winograd(const hs_circ_ctx *c, hs_circuit_report *r, hs_error *err);

/* The induction check's section into r->disc: r->n_seqs held-out sequences of
 * t, one prompt each, with their first occurrence replaced as the corrupted
 * partner; the named edges from r->prev, r->ind_best and r->path (after the
 * pair's evidence). One worker. Errors as above. */
hs_status hs_circ_discovery_induction(const hs_model *m, const hs_induction *t, hs_ind_circuit_report *r,
                                      hs_error *err);

/* Frees d's arrays and zeroes it (NULL and zeroed allowed). */
void hs_circ_discovery_free(hs_circ_discovery *d);

/* Adds d as the report's "discovery" object to root: {"method", "ig_steps",
 * "metric", "ablation", "prompt_set", "prompts", "tokens", "n_edges",
 * "metric_full", "metric_empty", "usable", "why_not_usable" (when not),
 * "circuit": {"chosen_by", "top_n", "edges", "metric", "faithfulness"},
 * "faithfulness_curve" (hs_faith_curve_json), "strongest_edges": [{"edge",
 * "score", "in_circuit"}] (ten), "head_to_head": [{"edge", "score", "named",
 * "path_patching" (named ones)}] (the top_k compared, at least 5),
 * "path_patching_edges": {"named_by", "edges": [{"edge", "path_patching",
 * "score", "head_to_head_rank" (1 = the strongest)}]}, "agreement": {"top_k",
 * "named", "agree", "compares"}} (prompt_set and named_by: d's words). 0 on
 * OOM. */
int hs_circ_discovery_json(cJSON *root, const hs_circ_discovery *d);

/* The section's summary lines appended to b (a blank line first). */
void hs_circ_discovery_summary(hs_buf *b, const hs_circ_discovery *d);

#endif
