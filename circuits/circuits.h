/*
 * circuits/circuits.h -- the circuits headscope's tasks are expected to hold,
 * and their checks: the two-step referent circuit of the Winograd task
 * (hs_circuit_run; `headscope circuit`) and the induction circuit of the
 * induction task (hs_ind_circuit_run), each a report of the evidence
 * (attention by role, DLA, patching, ablation, composition, path patching)
 * with verdicts from documented thresholds, written as JSON, a summary and a
 * folder of figures beside the rules (hs_circuit_write, hs_ind_circuit_write);
 * and circuits over training: each kept checkpoint's scores and verdicts
 * (hs_timeline_point_*) and the run over a `train --keep` folder
 * (hs_timeline_run; `headscope timeline`). docs/CIRCUITS.md has the
 * definitions and their sources.
 *
 * May call: common/, model/, probe/ (hooks, the experiment engine, DLA,
 * composition), tokenize/, tasks/ (the tasks' data, splits and scoring),
 * experiments/ (the run's context in figure JSON), discovery/ (EAP-IG and
 * running a circuit: each check's discovery section), output/ and viz/ (the
 * folders and figures), cJSON. Never cli/. The library never prints and
 * never exits: every failure is an hs_status plus a one-line message in a
 * caller-owned hs_error; notes go to the caller's hs_notes.
 *
 * Layers, heads and positions count from 0 (the chapter's "block 1" = layer
 * 0). Dims legend as tasks.h; L = layers, H = heads a layer, T = HS_CIRC_T =
 * 15 positions (0..14) for the Winograd check. Ownership: reports are
 * caller-owned structs freed with their *_free (NULL and zeroed allowed);
 * text through char ** is malloc'd, freed by the caller.
 */
#ifndef HS_CIRCUITS_H
#define HS_CIRCUITS_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/common.h"
#include "discovery/discovery.h"
#include "model/model.h"
#include "output/output.h"
#include "probe/probe.h"
#include "tasks/tasks.h"

/* ======================================================================== */
/* Discovery beside the hand-written verdicts (circuits/circuit_discovery.c)   */
/* ======================================================================== */
/*
 * Each check's report adds the circuit EAP-IG (Hanna et al. 2024;
 * discovery.h hs_eap_scores, HS_EAP_IG_STEPS steps) finds on the check's own
 * prompt set, with the logit-difference metric and resample ablation (each
 * prompt's corrupted partner), and says where it agrees with the edges the
 * check's path patching names:
 *  - Winograd: the held-out pairs of the check (both directions): clean =
 *    each held-out sentence, corrupted = its matched partner (same nouns, the
 *    other role's adjective), answer = its referent, wrong = the partner's,
 *    read at position 14 (the check's LD); named: every layer-0 head ->
 *    decision-head input whose path patching (both directions) restores
 *    |normalised LD| >= decide_patch; compared with EAP-IG's top n
 *    head->head edges, n = the named count;
 *  - induction: the check's n_seqs held-out sequences, one prompt each: the
 *    prediction at the last scored position of the repeat (start2 + len - 2,
 *    of token start2 + len - 1); corrupted = the same sequence with its first
 *    occurrence replaced (positions start1 .. start1 + len - 1) by symbols
 *    outside the segment, those absent from the sequence first, scanned from
 *    symbol q mod V for sequence q, so no earlier token predicts the repeat;
 *    answer = the repeated token, wrong = a symbol at no position an
 *    induction head attends in either run (absent from both sequences when
 *    one is, else a filler symbol; not the replacement that took the
 *    answer's place, which EAP-IG's interpolated runs mix with the answer
 *    where the induction head looks: with it, more attention there lowers
 *    the metric and the previous-token -> induction-head edges score with
 *    the wrong sign, +0.43 against exact patching's -1.50 on one model).
 *    The check's own path
 *    patching corrupts by mean-ablating the previous-token heads, which is
 *    no token-level partner; the sequences and the scored predictions are its
 *    own. Named: every previous-token head -> the named induction head's keys
 *    (the edges its path patching runs); compared with EAP-IG's top 5
 *    head->head edges.
 * The circuit is MIB's 5 %: the top hs_faith_top_n(0.05, n_edges) edges by
 * |score|, pruned (hs_circuit_select), its faithfulness the curve's point at
 * 5 % (hs_faith_curve_run, the same circuit); beside it the curve and the
 * 5 % circuit of edges grown greedily from logits (EAP-IG's
 * Graph.apply_greedy: hs_faith_curve_run with HS_SELECT_GREEDY); head->head
 * edges are those
 * from a head into another head's q, k or v, ranked by |score| (ties to the
 * lower canonical index, hs_edge_ranking).
 */
typedef struct {
    int ran;                     /* 1 when the section was computed (opts.discover) */
    char prompt_set[400];        /* the prompt set, in words */
    char named_by[200];          /* how the check's path patching names edges, in words */
    int n_prompts, t;            /* the prompt set: n prompts of t tokens */
    int ig_steps;                /* EAP-IG's steps */
    hs_graph g;                  /* the model's graph */
    double *scores;              /* [g.n_edges] EAP-IG's scores: estimated m(edge corrupted) - m(clean) */
    unsigned char *in_circuit;   /* [g.n_edges] the 5 % circuit, pruned */
    size_t top_n, n_kept;        /* edges asked for; left after pruning */
    double m_full, m_empty;      /* the metric of the model and of every edge ablated */
    double m_circuit, faithfulness; /* the circuit's; faithfulness NAN when not usable */
    int usable;
    char why[HS_FAITH_WHY];        /* why faithfulness is undefined ("" when usable) */
    hs_faith_curve curve;        /* at MIB's sizes, with CPR and CMD */
    hs_faith_curve curve_greedy; /* the same with circuits grown greedily from logits */
    size_t n_kept_greedy;        /* the greedy 5 % circuit's edges (of top_n taken), pruned */
    double m_greedy, f_greedy;   /* its metric and faithfulness (NAN when not usable) */
    size_t n_hh;                 /* head->head edges of the graph */
    size_t *hh;                  /* [n_hh] them, strongest |score| first */
    int n_named;                 /* the path-patching edges the check names */
    size_t *named;               /* [n_named] their edges */
    double *named_value;         /* [n_named] their normalised path patching (NAN: not run) */
    int top_k;                   /* EAP-IG's top top_k head->head edges are compared */
    int agree;                   /* named edges among them */
} hs_circ_discovery;

/* ======================================================================== */
/* Two-step referent circuit check (circuits/circuit.c; `headscope circuit`)    */
/* ======================================================================== */
/*
 * DESIGN.md, "The two-step referent circuit". Finds each head's role from
 * evidence on the held-out split, without assuming the chapter's route.
 * Files: circuits/circuit.c (the run and the engine's phases),
 * circuits/circuit_evidence.c (invariant, attention, DLA, copying),
 * circuits/circuit_verdict.c (the verdict rules, with the verdict's JSON and
 * summary lines), circuits/circuit_report.c (the other JSON and summary
 * sections); their shared internals in circuits/circuits_internal.h.
 * Layers, heads and positions count from 0 (the chapter's "block 1" = layer 0,
 * "block 2" = layer 1). Positions: x 1, y 6, adjective 11, query 14, ref 15.
 *
 * What hs_circuit_run computes (every forward is batched: each intervention
 * runs over the whole held-out set in chunks of 32 sentences, T = 15 tokens =
 * positions 0..14, which is all a causal model's prediction at 14 can see;
 * logits at 14 equal those of an 18-token run up to float rounding; the
 * independent forwards run on opts.threads threads, with results that do not
 * depend on the chunking or the thread count, see circuits/circuit.c):
 *  - The exact invariant: the layer-0 query at position 14 is a function of
 *    `the` and position 14 only, and each layer-0 key of that token and its
 *    position only, so layer-0 scores at 14 (blocks.0.attn.hook_attn_scores
 *    row 14) of two sentences are equal in every column whose token is equal.
 *    Checked over EVERY pair of held-out sentences (those with the same nouns
 *    and another adjective, and those with other nouns), all heads, all
 *    equal-token columns 0..14: the max |difference| (expected 0 up to float
 *    rounding). Contrast: the same columns in layer 1 (mean and max |diff|).
 *    Not applicable to uniform attention (no scores).
 *  - Per head (every layer): attention at 14 on x, y, the adjective and
 *    elsewhere (sum of the other columns), mean over the held-out sentences of
 *    each role and over all; the mean pattern row 14 over positions 0..14 per
 *    role (figures); direct logit attribution at 14 (C5, hs_logit_attribution:
 *    final-norm scale frozen from the clean run) towards x, towards y, x - y,
 *    and ref - other (= x - y for crosser, y - x for crossed), same means; the
 *    OV copying score (C4, hs_copying_score, HS_FOLD_LN).
 *  - Activation patching (C6) between matched sentences: each held-out
 *    crosser sentence (adjective a in 0..3) is matched with the crossed one of
 *    the same (x, y) and adjective a + 4 (tired-wet, scared-wide, slow-busy,
 *    weak-steep). Direction "crosser->crossed": clean = crosser sentence,
 *    corrupted = its crossed partner; "crossed->crosser" the reverse; "both"
 *    = the two in one batch. LD = logit(ref_clean) - logit(ref_corr) at 14,
 *    mean over the batch; the normalised metric (LD_patched - LD_corr) /
 *    (LD_clean - LD_corr) (hs_patch_metric). Each head's hook_z is patched at
 *    position 14 only ("pos14") and at all positions ("all"); for the last
 *    layer the two are the same intervention.
 *  - Mean ablation (C6, hs_hooks_add_mean_ablation, position-wise): each
 *    head, each layer's attention (all its heads), each layer's MLP
 *    (hook_mlp_out replaced by its position-wise mean), and all candidate
 *    pushers together; the means come from the training split (default) or
 *    the held-out split (opts.ablate_ref). Held-out accuracy (argmax over the
 *    whole vocabulary at 14 == ref) by role.
 *  - Composition scores (C3, hs_composition_scores, HS_FOLD_LN) with the
 *    random baseline, layer-0 heads into later heads; Q/K are NAN for uniform
 *    attention. Path patching (C6, hs_hooks_add_path_patch, HS_LN_RECOMPUTE)
 *    from each layer-0 head into each decision head's q, k, v separately,
 *    between the matched sentences ("both" directions), normalised metric.
 *
 * Verdicts (thresholds in hs_circuit_opts; defaults tuned on five seeds of
 * the default model, see hs_circuit_opts_default):
 *  - candidate pusher: a layer-0 head with mean attention (all held-out) >=
 *    push_attn on x (or y) at 14 and mean DLA >= push_dla towards that noun;
 *  - step 1 holds when a pusher exists and mean-ablating all pushers together
 *    drops held-out accuracy by >= step1_drop (a fraction: 0.25 = 25 points);
 *  - decision head: a head in layer >= 1 whose pos14 patching ("both") moves
 *    the normalised LD by >= decide_patch (absolute value; the whole layer's
 *    patching is reported beside it, patch_layer), or whose
 *    mean-ablation drops one role's held-out accuracy by >= decide_drop;
 *  - step 2 holds when a decision head exists; "not applicable" with one layer.
 *  - route features (named; "attends" = mean weight at 14 >= route_attn over
 *    the sentences of one role; "raises"/"lowers" a noun = mean DLA towards
 *    (that noun - the other noun) >= route_dla / <= -route_dla over the same
 *    sentences, i.e. the head's share of the logit difference):
 *      "adjective-read": a decision head attends the adjective with crosser
 *        adjectives (the chapter's block 2: 1.00 on the adjective);
 *      "other-noun-fetch": a decision head attends y with crossed adjectives
 *        and raises y (the chapter's block 2: 0.49 on y);
 *      "referent-fetch": a decision head attends x with crosser adjectives
 *        and raises x (it fetches the crosser referent itself, instead of
 *        reading the adjective over a candidate already pushed);
 *      "suppression": a decision head attends a noun with one role's
 *        adjectives and lowers that noun's logit;
 *      "adjective-key": a layer-0 head's weight on the adjective differs
 *        between roles by >= adj_key_diff (it fetches one role's adjectives
 *        by their key; its query cannot depend on the adjective).
 *    route (hs_circuit_report.route): "one-layer" (L = 1); "none" (step 2
 *    does not hold); else every feature found, joined by " + ", adjective-key
 *    first, then "chapter" for adjective-read + other-noun-fetch without
 *    referent-fetch, then adjective-read, other-noun-fetch, referent-fetch,
 *    suppression (e.g. "adjective-key + referent-fetch"; layer 1 attending
 *    the referent of either role and copying it is "other-noun-fetch +
 *    referent-fetch", both roles named); "other" when no feature holds.
 */

/* Index of an attention target at position 14. */
enum { HS_CIRC_ON_X = 0, HS_CIRC_ON_Y = 1, HS_CIRC_ON_ADJ = 2, HS_CIRC_ON_ELSE = 3 };
/* Index of a sentence group: the two roles (hs_wg_role) and all sentences. */
enum { HS_CIRC_CROSSER = 0, HS_CIRC_CROSSED = 1, HS_CIRC_ALL = 2 };
/* Index of a DLA direction. */
enum { HS_CIRC_DLA_X = 0, HS_CIRC_DLA_Y = 1, HS_CIRC_DLA_X_MINUS_Y = 2,
       HS_CIRC_DLA_REF_MINUS_OTHER = 3 };
/* Index of a patching direction (clean -> corrupted). */
enum { HS_CIRC_PATCH_CROSSER_TO_CROSSED = 0, HS_CIRC_PATCH_CROSSED_TO_CROSSER = 1,
       HS_CIRC_PATCH_BOTH = 2 };
/* Route feature bits (hs_circuit_report.route_features). */
enum {
    HS_ROUTE_ADJ_READ = 1,        /* "adjective-read" */
    HS_ROUTE_OTHER_NOUN = 2,      /* "other-noun-fetch" */
    HS_ROUTE_REFERENT_FETCH = 4,  /* "referent-fetch" (crosser half) */
    HS_ROUTE_SUPPRESSION = 8,     /* "suppression" */
    HS_ROUTE_ADJ_KEY = 16         /* "adjective-key" */
};

#define HS_CIRC_T (HS_WG_POS_QUERY + 1) /* positions 0..14 run and shown */

/* Thresholds and settings. Fill with hs_circuit_opts_default(). Attention in
 * weight units [0, 1], DLA in logit units, drops as fractions of accuracy. */
typedef struct {
    double push_attn;     /* pusher: mean attention on x or y at 14 >= this */
    double push_dla;      /* pusher: mean DLA towards that noun >= this */
    double step1_drop;    /* step 1: ablating the pushers drops accuracy by >= this */
    double decide_patch;  /* decision head: |normalised patching metric| >= this */
    double min_ld_gap;    /* patching counts only when |LD_clean - LD_corr| >= this
                             (logits; 1.0): below it the normalised metric divides by
                             ~0 (an untrained model) and only ablation can decide */
    double decide_drop;   /* decision head: one role's accuracy drops by >= this */
    double route_attn;    /* route features: "attends" means weight >= this */
    double route_dla;     /* route features: raises / lowers means |DLA| >= this */
    double adj_key_diff;  /* adjective-key: role difference of the weight on the adjective */
    hs_wg_split ablate_ref; /* where mean-ablation means come from (HS_SPLIT_TRAIN default) */
    int comp_draws;       /* random-baseline draws for composition scores (HS_COMP_DRAWS, 300) */
    uint64_t comp_seed;   /* their seed (0) */
    int discover;         /* 1 (default): the discovery section (hs_circ_discovery); 0: none */
    int threads;          /* workers running the forwards: 0 = auto (2 with 2+ CPUs), 1..8;
                           * the report is bit-identical for every value (circuits/circuit.c) */
} hs_circuit_opts;

/* The documented defaults, tuned on seeds 0..4 of the default model
 * (`headscope train --seed S`, 2000 steps, 100% held-out):
 *   push_attn 0.25, push_dla 1.0, step1_drop 0.25: DESIGN.md's, kept: in
 *     the five seeds layer 0 pushes no noun (the most weight any layer-0
 *     head puts on a noun at 14 is 0.34, seed 4's L0H1, with DLA +0.3
 *     towards it; every other head <= 0.15), so no nearby value changes a
 *     verdict;
 *   decide_patch 0.1 (DESIGN.md started at 0.5): the seeds share the decision
 *     among 2-4 layer-1 heads, each restoring 0.15-0.52 of the logit
 *     difference (the whole layer 0.7-1.0), while heads with no
 *     role-dependent pattern restore <= 0.07; 0.5 found a decision head in one
 *     seed of five, 0.1 separates the two groups in all five;
 *   decide_drop 0.25: DESIGN.md's, kept (single-head mean ablation drops a
 *     role by at most 19 points: the redundant heads cover for each other);
 *   route_attn 0.25, route_dla 1.0, adj_key_diff 0.25: the features' heads
 *     sit far from them (0.6-1.0 weight, 1.5-4 logits, 0.4-0.95 difference);
 *   ablate_ref train, comp_draws 300 ([AR]), comp_seed 0. */
hs_circuit_opts hs_circuit_opts_default(void);

/* One head's evidence. Groups g index HS_CIRC_CROSSER/CROSSED/ALL. */
typedef struct {
    int layer, head;
    char name[32];           /* "L0H1" */
    double attn[3][4];       /* [g][HS_CIRC_ON_*] mean weight at query 14 */
    double dla[3][4];        /* [g][HS_CIRC_DLA_*] mean direct logit attribution at 14 */
    double copying;          /* OV copying score in [-1, 1] (C4) */
    double copying_pos;      /* fraction of positive eigenvalues */
    double patch_pos14[3];   /* [HS_CIRC_PATCH_*] normalised metric, hook_z at 14 */
    double patch_all[3];     /* same, hook_z at every position */
    double acc_ablated[3];   /* held-out accuracy [g] with this head mean-ablated */
    int pusher;              /* bit 1: pushes x, bit 2: pushes y (layer 0 only) */
    int decision;            /* bit 1: by patching, bit 2: by ablation (layer >= 1) */
} hs_circuit_head;

/* The whole report. Owned arrays; free with hs_circuit_report_free. */
typedef struct {
    hs_circuit_opts opts;    /* the thresholds used */
    hs_config cfg;           /* the model's config */
    hs_task_kind task;
    uint64_t split_seed;
    int pairs_given;         /* 1: the held-out pairs were given, not drawn from split_seed */
    int pairs_read;          /* 1: ... given by the checkpoint's task metadata (heldout_pairs) */
    int chapter_pair_held_out; /* 1 if (animal, street) is held out */
    int L, H;
    size_t n_heldout, n_role[2];
    size_t n_ablate_ref;     /* sentences the ablation means were taken over */
    double acc[3];           /* clean held-out accuracy [g] */
    double other_rate[3];    /* clean: argmax == the other noun [g] */

    /* invariant */
    int inv_applicable;      /* 0 for uniform attention */
    size_t inv_pairs_same_nouns, inv_pairs_other_nouns;
    size_t inv_cells;        /* (pair, head, column) cells compared in layer 0 */
    double inv_max_dev_same_nouns;  /* layer 0, equal-token columns */
    double inv_max_dev_other_nouns;
    double inv_score_mean_abs;      /* mean |layer-0 score| at 14 (scale) */
    double inv_l1_mean_dev, inv_l1_max_dev; /* layer 1, same columns; NAN if L = 1 */

    hs_circuit_head *heads;  /* (L*H), index l*H + h */
    float *attn_rows;        /* (L, H, 2, HS_CIRC_T) mean row 14 per role */
    float *attn_rows_avg;    /* (L, 2, HS_CIRC_T) head-averaged (the chapter's rows) */

    double (*acc_block_attn)[3]; /* (L) [g] accuracy, layer's attention mean-ablated */
    double (*acc_block_mlp)[3];  /* (L) [g], NAN when d_mlp = 0 */
    int n_pushers;
    hs_head *pushers;        /* (n_pushers) */
    double acc_pushers[3];   /* [g] with all pushers mean-ablated; NAN if none */

    double ld_clean[3], ld_corr[3]; /* [HS_CIRC_PATCH_*] mean LD of the clean / corrupted runs */
    double (*patch_layer)[3];  /* (L) [HS_CIRC_PATCH_*] every head of layer l patched at 14 */

    hs_comp_scores comp;     /* all pairs (C3); NAN where not reported */

    int n_decision;
    hs_head *decision;       /* (n_decision) */
    float *path;             /* (H0 senders = layer-0 heads, n_decision, 3 [q,k,v]) normalised
                                metric; NAN for q/k with uniform attention */

    int step1_holds;
    int step2_applicable, step2_holds;
    int patch_usable;        /* |ld_clean - ld_corr| (both directions) >= opts.min_ld_gap */
    int route_features;      /* HS_ROUTE_* bits */
    /* the verdicts' words, owned (malloc'd, any length; hs_circuit_report_free) */
    char *route;             /* "chapter", "adjective-key + referent-fetch", "none", ... */
    char *step1_reason, *step2_reason, *route_reason;
    hs_circ_discovery disc;  /* EAP-IG's circuit beside the verdicts (ran 0 without opts.discover) */
} hs_circuit_report;

/*
 * Runs the whole check on m and t's held-out split (t must be the task the
 * model was trained on: same vocabulary). opts NULL = defaults.
 * On success fills *out (free with hs_circuit_report_free); on failure *out
 * is zeroed. Errors: HS_ERR_CONFIG (d_vocab differs from the task's
 * vocabulary, n_ctx < 15, a threshold outside its range: attention and drops
 * in [0, 1], DLA >= 0, patch >= 0, comp_draws in 2..100000), HS_ERR_NUMERIC
 * (a NaN logit), HS_ERR_NOMEM, and whatever the probe calls return.
 */
hs_status hs_circuit_run(const hs_model *m, const hs_winograd *t, const hs_circuit_opts *opts,
                         hs_circuit_report *out, hs_error *err);

void hs_circuit_report_free(hs_circuit_report *r);

/*
 * The report as JSON (*json, caller frees with cJSON_Delete; the one JSON
 * type modules hand each other): every number above, the thresholds,
 * verdicts, heads and roles, held-out accuracy, whether the chapter's pair is
 * held out, the model config. NAN is written as null. model_path may be
 * NULL. HS_ERR_NOMEM (*json NULL).
 */
hs_status hs_circuit_report_json(const hs_circuit_report *r, const char *model_path,
                                 cJSON **json, hs_error *err);

/* A readable text summary (malloc'd, caller frees, lines end in '\n').
 * HS_ERR_NOMEM. */
hs_status hs_circuit_summary(const hs_circuit_report *r, char **text, hs_error *err);

/* ------------------------------------------------------------------------ */
/* Induction circuit check (circuits/induction_circuit.c; `headscope circuit`  */
/* on an induction model, and `headscope timeline`)                          */
/*
 * Files: circuits/induction_circuit.c (the run and its evidence),
 * circuits/induction_verdict.c (the roles, criteria and verdict, with the
 * report's JSON and summary).
 *
 * [IH], [FW] "Analyzing a Two-Layer Model": a previous-token head in layer 0
 * writes "the previous token was A" into each position; an induction head in
 * a later layer reads it through K-composition (its keys), so its query at a
 * later A matches the position after the earlier A, and its OV circuit copies
 * that token (B). Evidence, on the first n_seqs held-out sequences (one
 * batched forward each, T = n_ctx):
 *  - per head: previous-token score (TL "mul", hs_detect_heads
 *    HS_DETECT_PREV_TOKEN, nothing excluded: (1/T) sum_{i>=1} A[i,i-1], at
 *    most (T-1)/T); induction score: the mean attention from each position
 *    start2 + k of the second occurrence (k = 0..len-1) to start1 + k + 1,
 *    the token after the same token's earlier occurrence (the TL induction
 *    pattern restricted to the rows where it is defined by the task); TL's
 *    induction "mul" score beside it (hs_detect_heads HS_DETECT_INDUCTION);
 *    the OV copying score (C4, HS_FOLD_LN); accuracy on the repeated segment
 *    with the head mean-ablated (position-wise means over the same sequences);
 *  - roles: previous-token heads = layer-0 heads with score >= prev_min;
 *    induction heads = heads of layers >= 1 with induction score >= ind_min;
 *    the named pair is the best-scoring head of each role;
 *  - K-composition (C3, HS_FOLD_LN) from the named previous-token head into
 *    the named induction head minus the random baseline; Q and V beside it;
 *  - path patching (C6, HS_LN_RECOMPUTE, hs_hooks_add_path_patch_senders)
 *    senders = every previous-token head (the role is often shared), receiver
 *    = the induction head, into its keys, queries and values separately.
 *    Clean = the held-out sequences; corrupted = the same tokens with the
 *    previous-token heads mean-ablated (their output no longer says which
 *    token came before). Metric M = mean log-probability of the correct
 *    token over the scored (repeated-segment) predictions; normalised
 *    (M_patched - M_corr) / (M_clean - M_corr), decided only when M_clean -
 *    M_corr >= min_gap nats;
 *  - ablation: repeated-segment accuracy with all previous-token heads, then
 *    all induction heads, mean-ablated together.
 * Verdict: holds when every criterion holds (each is reported with its
 * numbers): a previous-token head; an induction head (impossible with one
 * layer: "does not hold", with that reason); K-composition minus baseline >=
 * comp_min; path patching into keys >= patch_k_min and into queries and into
 * values each < patch_qv_max; copying score of the induction head >=
 * copy_min; each role's ablation removes >= ablate_frac of the accuracy
 * above chance (chance = 1 / n_symbols): (acc - acc_ablated) / (acc - chance).
 */
typedef struct {
    double prev_min;       /* previous-token head: TL score >= this (0.35: on five trained
                              seeds layer-0 heads score 0.41-0.73 or 0.07-0.28; a
                              uniform head (1/T) sum 1/(i+1), 0.10 at T = 32) */
    double ind_min;        /* induction head: induction score >= this (0.5) */
    double comp_min;       /* K-composition minus baseline >= this (0.05) */
    double patch_k_min;    /* path patching into keys restores >= this (0.5) */
    double patch_qv_max;   /* into queries, into values: < this (0.2) */
    double min_gap;        /* M_clean - M_corr >= this (nats) to decide patching (1.0) */
    double copy_min;       /* induction head's OV copying score >= this (0.5) */
    double ablate_frac;    /* each role's ablation removes >= this share of the accuracy above
                              chance (0.8; the other layer-0 heads keep some previous-token
                              information: 17% of 99.7% was left, chance 3%, on one model) */
    int n_seqs;            /* held-out sequences used (128; at most the task's) */
    int comp_draws;        /* random-baseline draws (300) */
    uint64_t comp_seed;    /* (0) */
    int discover;          /* 1 (default): the discovery section (hs_circ_discovery); 0: none */
} hs_ind_circuit_opts;

hs_ind_circuit_opts hs_ind_circuit_opts_default(void);

typedef struct {
    int layer, head;
    char name[32];         /* "L0H1" */
    double prev_score;     /* TL mul previous-token score */
    double ind_score;      /* induction score (task rows) */
    double tl_induction;   /* TL mul induction score */
    double copying, copying_pos; /* OV copying score, fraction of positive eigenvalues */
    double acc_ablated;    /* repeated-segment accuracy, this head mean-ablated */
    int role;              /* bit 1: previous-token head, bit 2: induction head */
} hs_ind_head;

/* Criterion indices of hs_ind_circuit_report.ok / why. */
enum { HS_IND_PREV = 0, HS_IND_IND, HS_IND_COMP, HS_IND_PATH, HS_IND_COPY, HS_IND_ABLATE,
       HS_IND_N_CRIT };

typedef struct {
    hs_ind_circuit_opts opts;
    hs_config cfg;
    hs_ind_params task;
    int L, H;
    size_t n_seqs, n_scored;
    double acc, seg_loss, loss, icl_score, chance;   /* clean, on the n_seqs */
    hs_ind_head *heads;    /* (L*H), index l*H + h */
    int n_prev, n_ind;
    hs_head *prev, *ind;   /* role sets (n_prev), (n_ind) */
    hs_head prev_best, ind_best; /* layer -1 when none */
    hs_comp_scores comp;   /* all pairs (C3); zeroed when L = 1 */
    double comp_q, comp_k, comp_v; /* best pair, minus baseline; NAN when no pair */
    double metric_clean, metric_corr; /* mean log p(correct) on scored tokens; NAN: no pair */
    double path[3];        /* [q, k, v] normalised; NAN when not run */
    double acc_prev_ablated, acc_ind_ablated; /* role sets; NAN when empty */
    float *attn_prev, *attn_ind; /* (T,T) pattern of the named heads on sequence 0; NULL if none */
    int ok[HS_IND_N_CRIT];
    char *why[HS_IND_N_CRIT]; /* each criterion's evidence, one line (malloc'd; freed by _free) */
    int holds;
    char *verdict;         /* one line: holds / does not hold and why (malloc'd; freed by _free) */
    hs_circ_discovery disc; /* EAP-IG's circuit beside the verdict (ran 0 without opts.discover) */
} hs_ind_circuit_report;

/* Runs the check of m on t's held-out sequences. opts NULL = defaults. On
 * failure *out is zeroed. Errors: HS_ERR_CONFIG (model and task do not fit,
 * a threshold out of range, uniform attention), HS_ERR_NUMERIC, HS_ERR_NOMEM
 * and whatever the probe returns. */
hs_status hs_ind_circuit_run(const hs_model *m, const hs_induction *t,
                             const hs_ind_circuit_opts *opts, hs_ind_circuit_report *out,
                             hs_error *err);
void hs_ind_circuit_report_free(hs_ind_circuit_report *r);
/* Every number above as JSON (NAN -> null), with the model config and task
 * parameters: pretty-printed text, malloc'd, caller frees. */
hs_status hs_ind_circuit_report_json(const hs_ind_circuit_report *r, const char *model_path,
                                     char **json, hs_error *err);
/* A readable summary (malloc'd text, lines end in '\n'). */
hs_status hs_ind_circuit_summary(const hs_ind_circuit_report *r, char **text, hs_error *err);

/* ------------------------------------------------------------------------ */
/* Circuits over training (circuits/timeline.c; `headscope timeline`)           */
/*
 * One checkpoint's numbers for the timeline, computed exactly as `circuit`
 * computes them on that checkpoint alone:
 *  - induction: hs_ind_circuit_run with the defaults: loss (every next token)
 *    and repeated-segment accuracy / loss / ICL score on its n_seqs held-out
 *    sequences, each head's previous-token and induction scores, the verdict;
 *  - Winograd: hs_circuit_run with the defaults (held-out accuracy, step 1 /
 *    step 2, decision heads, first-noun score = mean attention at 14 on x),
 *    plus each head's previous-token and TL induction scores (hs_detect_heads
 *    over the held-out sentences, positions 0..17) and the mean next-token
 *    loss over the held-out sentences.
 */
typedef struct {
    int L, H;
    double loss;            /* mean next-token cross-entropy (nats) */
    double accuracy;        /* the task metric: repeated-segment / referent accuracy */
    double seg_loss, icl;   /* induction only (else NAN) */
    float *prev;            /* (L*H) previous-token score */
    float *ind;             /* (L*H) induction score (task rows; Winograd: TL mul) */
    float *first_noun;      /* (L*H) Winograd: attention at 14 on x; NULL for induction */
    int holds;              /* induction: the circuit holds; Winograd: step 2 holds */
    int step1;              /* Winograd: step 1 holds (else 0) */
    int n_decision;         /* Winograd: decision heads (induction: induction heads) */
    char *heads;            /* the named heads ("L0H2 -> L1H1"; Winograd: decision heads); malloc'd */
    char *verdict;          /* one line; malloc'd; both freed by hs_timeline_point_free */
    int *tokens;            /* repeated random tokens only: the (n_seqs, seq_len) sequences
                               scored (malloc'd, freed by hs_timeline_point_free); else NULL */
    int n_seqs, seq_len;    /* the sequences scored (induction: the first n_seqs held-out
                               ones, the circuit's 128); Winograd: 0 */
    int n_heldout;          /* induction: the task's held-out sequences (512, all of which
                               train scores); else 0 */
} hs_timeline_point;

hs_status hs_timeline_point_induction(const hs_model *m, const hs_induction *t, hs_timeline_point *out,
                                      hs_error *err);
hs_status hs_timeline_point_winograd(const hs_model *m, const hs_winograd *t, hs_timeline_point *out,
                                     hs_error *err);
void hs_timeline_point_free(hs_timeline_point *p);

/* Repeated random tokens (hs_timeline_point_repeated). */
typedef struct {
    int rep_len;     /* n: tokens per half (50, TL's and Olsson et al.'s; at most (n_ctx - bos) / 2) */
    int n_seqs;      /* sequences (10) */
    uint64_t seed;   /* the draw (0; hs_task_rng, splitmix64) */
    const int *ids;  /* (n_ids) the ids drawn from, each 0..d_vocab-1 and not bos; NULL: 0..n_tokens-1
                        (a text run's: the ids its training part holds) */
    int n_ids;
} hs_timeline_rep_opts;

hs_timeline_rep_opts hs_timeline_rep_opts_default(void);

/*
 * A timeline point of a model that carries no task (Pythia's public
 * revisions): the standard of TransformerLens and Olsson et al. (2022),
 * "In-context learning and induction heads": o->n_seqs sequences of
 * n = min(o->rep_len, (n_ctx - b) / 2) tokens drawn uniformly (seeded) from
 * ids 0..n_tokens-1 (or o->ids) other than bos, each repeated once, bos first when
 * bos >= 0 (b = 1, else 0): T = b + 2n positions. Per head, averaged over
 * the sequences (hook_pattern [H, dest, src]):
 *   ind[l*H+h]  = mean over k = 0..n-1 of A[b+n+k, b+k+1] (each second-half
 *                 token's attention to the token after its first occurrence)
 *   prev[l*H+h] = mean over p = 1..T-1 of A[p, p-1]
 * Losses (nats, next-token cross-entropy): loss over all T-1 predictions;
 * seg_loss ("late") over the predictions of second-half tokens 1..n-1 (from
 * positions b+n..b+2n-2); icl = seg_loss minus the same tokens' loss in the
 * first half ("early", positions b..b+n-2): negative when the model copies;
 * accuracy = top-1 over the late predictions. holds: the best
 * previous-token head below the last layer scores >= prev_min and the best
 * induction head in a later layer >= ind_min (hs_ind_circuit_opts_default's
 * 0.35 and 0.5); heads names them ("L0H1 -> L1H0"); n_decision counts heads
 * of layers 1.. with ind >= ind_min. out->tokens keeps the sequences.
 * Errors: HS_ERR_INPUT when n < 2 (n_ctx too small), n_tokens outside
 * 2..d_vocab, n_seqs < 1, o->ids with fewer than 2 ids or one out of range or
 * the BOS; HS_ERR_NOMEM; *out zeroed on failure.
 */
hs_status hs_timeline_point_repeated(const hs_model *m, int bos, int n_tokens, const hs_timeline_rep_opts *o,
                                     hs_timeline_point *out, hs_error *err);

/* Index i >= 1 of the largest change y[i] - y[i-1] (sign > 0: increase, sign
 * < 0: decrease), NaN pairs skipped; -1 when n < 2 or none is finite. */
int hs_timeline_jump(const double *y, int n, int sign);

/* ------------------------------------------------------------------------ */
/* Circuits over a training run (circuits/timeline_run.c; `headscope timeline`)  */

/* Text checkpoints' held-out corpus (timeline --corpus): the files the run
 * trained on (paths[n]), encoded once with the first checkpoint's tokenizer
 * and split as its task metadata says (hs_text_create); NULL or n == 0: none. */
typedef struct {
    const char *const *paths;
    size_t n;
} hs_timeline_corpus;

/* Every kept checkpoint's timeline point, in step order, and the steps where
 * things happened. Free with hs_timeline_report_free. */
typedef struct {
    int n;                     /* checkpoints */
    int *steps;                /* [n] their steps */
    char **files;              /* [n] DIR/step-NNNNNN.safetensors */
    hs_timeline_point *points; /* [n] */
    double *best;              /* [n] the best head score: induction: the largest induction
                                  score of layers 1.. ; Winograd: the largest first-noun score */
    int L, H;
    int induction;             /* 1: an induction run (or repeated random tokens); 0: Winograd */
    int repeated;              /* 1: checkpoints without a task (--models), scored on repeated
                                  random tokens (hs_timeline_point_repeated) */
    int jump;                  /* index of the largest rise of best (induction, L > 1), or -1
                                  (none, or it never rises) */
    int drop;                  /* index of the largest drop of the loss (induction: the
                                  repeated-segment loss), or -1 (none, or it never falls) */
    int first_hold;            /* first index where the circuit holds (Winograd: step 2), or -1 */
    int first_decision;        /* Winograd: first index with decision heads, or -1 */
    int text;                  /* 1: text checkpoints (train --task text), scored on repeated
                                  random tokens of their BPE (no BOS) as `repeated` is */
    double *heldout_loss;      /* [n] text with a corpus: the held-out loss (nats, windows of the
                                  trained n_ctx: hs_text_perplexity), else NULL */
    double *heldout_icl;       /* [n] and its ICL score (loss at token icl_late minus at
                                  icl_early, nats; Olsson et al. 2022), else NULL */
    int icl_early, icl_late;   /* the positions heldout_icl compares (n_ctx / 10, n_ctx - 1) */
    int *seen_ids, n_seen_ids; /* text with a corpus: the ids its training part holds, the
                                  repeated random tokens' draw (else NULL, 0: every id) */
    int icl_jump;              /* index of the largest drop of heldout_icl, or -1 (it never falls) */
    cJSON *json;               /* every number (timeline_numbers.json): {"dir", "task",
                                  "n_layers", "n_heads", "summary", "checkpoints", "head_names"} */
    int n_files;               /* files written into the output folder (0 without one) */
} hs_timeline_report;

/*
 * Reads every checkpoint dir/step-NNNNNN.safetensors (train's keep folder)
 * in step order (hs_load with HS_NEED_ANY_TASK | HS_ALLOW_TEXT; its notes go
 * to notes) and computes each one's point (hs_timeline_point_induction /
 * _winograd; a text model's: hs_timeline_point_repeated on its BPE's ids, no
 * BOS (with corpus: the ids its training part holds, not bytes it never saw),
 * and with corpus its held-out loss and ICL score, hs_text_perplexity at
 * the trained n_ctx, a note when the corpus's FNV-1a differs from the run's;
 * without corpus a note says the held-out ICL score was not computed). With
 * out_dir (else NULL), writes there (output/, command "timeline", the
 * checkpoints as inputs) the line plots timeline.{png,svg,pdf,json} (one
 * line per head of the task's head score and of the previous-token score,
 * the metric, the loss; in fo's formats; with more checkpoints than
 * HS_VIZ_MAX_POINTS a note instead) and timeline_numbers.json (the report's json),
 * and commits the folder (index.json's extra key "dir"); fo: its figure
 * options (its font is opened here; only read without out_dir, may then be
 * NULL). pool: where figures are written (may be NULL). Errors: HS_ERR_IO "cannot open folder P: ...",
 * HS_ERR_INPUT "P holds no step-NNNNNN.safetensors checkpoints (train --keep
 * P)", "P is not from the same run (task or shape differs from the first
 * checkpoint)", "corpus: the checkpoints are not text models", hs_load's,
 * hs_corpus_read's and hs_text_create's, "P: <the point's error>", the
 * figure's and the output folder's; HS_ERR_NOMEM. *out zeroed on failure.
 */
hs_status hs_timeline_run(const char *dir, const char *out_dir, const hs_timeline_corpus *corpus,
                          hs_figopts *fo, hs_pool *pool, const hs_notes *notes, hs_timeline_report *out,
                          hs_error *err);
/*
 * The same over the n checkpoints paths (anything hs_load reads: headscope
 * files, Hugging Face folders such as a run's public revisions step1000/,
 * step2000/, ...; each must carry its task, e.g. the "task" metadata a
 * converted headscope run keeps, or none: below) at steps (NULL: the step in each name,
 * the digits after its last "step": step1000, pythia-70m-step1000,
 * step-000250), in step order; the report's "dir" is "--models". Errors:
 * hs_timeline_run's, HS_ERR_INPUT "P: no training step in its name (e.g.
 * step1000); give --steps", "P and Q are both step S". A checkpoint
 * without a task (Pythia's revisions: no headscope metadata) is scored on
 * repeated random tokens (hs_timeline_point_repeated with the defaults; the
 * folder's tokenizer gives the BOS and the ids drawn; the report's "task" is
 * "repeated random tokens", its JSON "repeated_tokens" the sequences); all
 * the checkpoints then must carry none.
 */
hs_status hs_timeline_run_models(const char *const *paths, const int *steps, int n, const char *out_dir,
                                 const hs_timeline_corpus *corpus, hs_figopts *fo, hs_pool *pool,
                                 const hs_notes *notes, hs_timeline_report *out, hs_error *err);
void hs_timeline_report_free(hs_timeline_report *r);

/* ------------------------------------------------------------------------ */
/* Writing a circuit check's folder (circuits/circuit_figs.c,                   */
/* circuits/induction_figs.c; `headscope circuit --out DIR`)                    */

/*
 * These write a report into an output folder (output/output.h) and commit
 * it: they add experiments/ (hs_run_context), output/ and viz/ to what this
 * module calls. od is open (hs_outdir_open, command "circuit"); its formats
 * (od->fo) choose the files; each figure's JSON holds hs_run_context's
 * {"config", "model"} (od->context is restored after). model_path is
 * recorded in the JSON (may be NULL). Notes (a figure over viz's caps
 * written as JSON only, files replaced or kept) go to od's notes. Errors:
 * the output folder's (HS_ERR_IO naming the file, a name taken:
 * hs_outdir_commit), HS_ERR_NOMEM; od is then left uncommitted (the caller's
 * hs_outdir_close leaves DIR as it was).
 *
 * hs_circuit_write: report.json (hs_circuit_report_json), attention_14 (mean
 * attention row at 14 [L*H*2, 15], head x role by position), ablation
 * (accuracy change in points per mean ablation, by role: bars), patching
 * (normalised metric [L*H, 4]: pos14 each direction, pos14 both, all
 * positions both; marked not usable when !patch_usable), composition_{Q,K,V}
 * ([H, (L-1)*H] layer-0 heads into later heads, minus the baseline; Q/K
 * only for softmax attention; L > 1), path_patching ([H, decision inputs],
 * when a decision head exists), then index.json with {"config", "model",
 * "route"}.
 */
hs_status hs_circuit_write(const hs_circuit_report *r, const char *model_path, hs_outdir *od,
                           hs_error *err);
/* hs_ind_circuit_write: report.json (hs_ind_circuit_report_json), heads
 * (previous-token and induction scores [L*H, 2]), ablation (accuracy change
 * in points per head, then per role: bars), copying (bars [L*H]),
 * path_patching (bars: queries, keys, values; when it ran), composition_K
 * ([H, (L-1)*H] minus the baseline; L > 1), attention (the named heads'
 * patterns on t's held-out sequence 0, when both exist and n_ctx fits viz's
 * cap), then index.json with {"model", "task": "induction", "holds"}. t: the
 * task r was run on. */
hs_status hs_ind_circuit_write(const hs_ind_circuit_report *r, const hs_induction *t,
                               const char *model_path, hs_outdir *od, hs_error *err);

#endif /* HS_CIRCUITS_H */
