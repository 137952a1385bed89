/*
 * tasks/tasks.h -- headscope's tasks: the word-level vocabulary and sentence
 * tokenizer, the Winograd task of DESIGN.md ("The Winograd task") and its
 * category variant, the train/held-out splits, the dataset text dump, training
 * batches, scoring (referent accuracy at position 14), and the two-step
 * referent-circuit check (a task owns its data, its scoring and the circuit it
 * expects; section "Two-step referent circuit check" at the end).
 *
 * May call: common/ (status, errors, atomic writes), model/ (hs_forward for
 * scoring), probe/ (hooks, patching, DLA, composition for the circuit
 * check), cJSON. Never viz/ or
 * cli/. The library never prints and never exits: every failure is an
 * hs_status plus a one-line message in a caller-owned hs_error.
 *
 * Dims legend: B = batch, T = positions, V = vocabulary size (d_vocab),
 * HS_WG_LEN = 18 tokens per Winograd sentence.
 *
 * The sentence template (word-level; `,` and `.` are tokens), positions 0..17:
 *
 *   the {x} did not cross the {y} because it was too {adj} , so the {ref} waited .
 *    0   1   2   3    4    5   6     7     8   9  10   11  12 13  14   15    16   17
 *
 * The prediction made at position 14 (the `the` after `so`) is scored; its
 * target is ref at position 15.
 *
 * Vocabulary ids of the built-in vocabulary (hs_winograd_vocab), stable:
 *   0..11  the template words in template order of first appearance:
 *          the did not cross because it was too , so waited .
 *   12..27 the 16 nouns in DESIGN.md order (hs_wg_nouns):
 *          animal street dog road cat river horse bridge fox field goat path
 *          cow lane deer creek
 *   28..35 the 8 adjectives, crosser then crossed (hs_wg_adjectives):
 *          tired scared slow weak wet wide busy steep
 * V = 36. Both task variants use this one vocabulary. A vocabulary loaded from
 * a checkpoint (hs_tokenizer_from_json) may order words differently; every task
 * function looks words up in the vocabulary it is given, never assumes ids.
 *
 * Ownership: *_create / *_destroy for heap handles (hs_tokenizer, hs_winograd);
 * hs_tokens is a caller-owned struct freed with hs_tokens_free. Every
 * *_destroy / *_free accepts NULL. Strings returned through char ** are
 * malloc'd and freed by the caller with free().
 */
#ifndef HS_TASKS_H
#define HS_TASKS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/common.h"
#include "model/model.h"
#include "output/output.h"
#include "probe/probe.h"
#include "tokenize/tokenize.h"

/* ------------------------------------------------------------------------ */
/* Winograd task (DESIGN.md, "The Winograd task")                            */

#define HS_WG_LEN 18          /* tokens per sentence, positions 0..17 */
#define HS_WG_POS_X 1         /* first noun (the crosser slot) */
#define HS_WG_POS_Y 6         /* second noun (the crossed slot) */
#define HS_WG_POS_ADJ 11      /* adjective (DESIGN.md's numbering: `,` is 12) */
#define HS_WG_POS_QUERY 14    /* `the` after `so`: the scored prediction is made here */
#define HS_WG_POS_REF 15      /* the referent: the target of the prediction at 14 */
#define HS_WG_N_NOUNS 16
#define HS_WG_N_ADJS 8
#define HS_WG_N_CROSSER 4     /* adjectives 0..3 are crosser, 4..7 crossed */
#define HS_WG_MAX_HELDOUT_PAIRS 24

/* The 16 nouns in DESIGN.md order; in the category variant nouns 0,2,4,..,14
 * (animal dog cat horse fox goat cow deer) are the animals and 1,3,..,15
 * (street road river bridge field path lane creek) the places. */
extern const char *const hs_wg_nouns[HS_WG_N_NOUNS];
/* tired scared slow weak (crosser: `it` = x) wet wide busy steep (crossed: `it` = y). */
extern const char *const hs_wg_adjectives[HS_WG_N_ADJS];
/* Builds the built-in Winograd vocabulary (36 words, ids as in the comment at
 * the top), a word tokenizer. *out is NULL on failure (HS_ERR_NOMEM). Free
 * with hs_tokenizer_destroy. */
hs_status hs_winograd_vocab(hs_tokenizer **out, hs_error *err);
/* The chapter's example pair: x = "animal", y = "street". */
#define HS_WG_CHAPTER_X "animal"
#define HS_WG_CHAPTER_Y "street"

typedef enum {
    HS_TASK_WINOGRAD = 0,          /* any noun in either slot, x != y */
    HS_TASK_WINOGRAD_CATEGORY = 1  /* x an animal, y a place (the cautionary case) */
} hs_task_kind;

/* "winograd" / "winograd-category"; parse returns -1 for an unknown name. */
const char *hs_task_name(hs_task_kind k);
int hs_task_parse(const char *name);

typedef enum { HS_ROLE_CROSSER = 0, HS_ROLE_CROSSED = 1 } hs_wg_role;

/* "crosser" / "crossed". */
const char *hs_wg_role_name(hs_wg_role r);

typedef enum { HS_SPLIT_TRAIN = 0, HS_SPLIT_HELDOUT = 1 } hs_wg_split;

/* "train" / "heldout"; parse returns -1 for an unknown name (also takes "held-out"). */
const char *hs_wg_split_name(hs_wg_split s);
int hs_wg_split_parse(const char *name);

/* One sentence of the task. */
typedef struct {
    int tokens[HS_WG_LEN];  /* (18) vocabulary ids */
    int x, y;               /* noun indices into hs_wg_nouns (x at position 1, y at 6) */
    int adj;                /* adjective index into hs_wg_adjectives (position 12) */
    hs_wg_role role;        /* crosser if adj < 4, else crossed */
    int ref;                /* noun index of the referent: x (crosser) or y (crossed) */
    int ref_id;             /* vocab id of ref (== tokens[15]): the target at 14 */
    int other_id;           /* vocab id of the other noun of the pair */
    int held_out;           /* 1 if in the held-out split */
} hs_wg_example;

/* A generated task: its examples split into train and held-out. Read-only. */
typedef struct {
    hs_task_kind kind;
    uint64_t split_seed;
    hs_tokenizer *vocab;                 /* owned copy of the vocabulary used for ids */
    size_t n_train, n_heldout;
    hs_wg_example *train;            /* (n_train) */
    hs_wg_example *heldout;          /* (n_heldout) */
    size_t n_heldout_pairs;          /* 24 (winograd) or 16 (category); or as given */
    int pairs_given;                 /* 1: held-out pairs given (hs_winograd_create_pairs),
                                        not drawn from split_seed (then 0) */
    int heldout_pairs[HS_WG_MAX_HELDOUT_PAIRS][2]; /* ordered (x, y) noun indices, sorted */
} hs_winograd;

/*
 * Generates the task for split_seed, deterministically (own splitmix64 PRNG):
 *  - winograd: all 240 ordered pairs x != y times 8 adjectives = 1920
 *    sentences. Of the 120 unordered pairs, 24 are chosen by the seed
 *    (Fisher-Yates shuffle of the pairs in index order i < j, first 24 kept)
 *    and one orientation of each (one PRNG bit) is held out with all 8
 *    adjectives: 192 held-out, 1728 train. The reversed order of every
 *    held-out pair stays in training.
 *  - winograd-category: x one of the 8 animals, y one of the 8 places: 64
 *    ordered pairs x 8 adjectives = 512; 16 pairs chosen by the seed are held
 *    out: 128 held-out, 384 train.
 * Examples are listed with x in noun order, then y in noun order, then the
 * adjective in hs_wg_adjectives order.
 * vocab: the vocabulary whose ids the tokens use (copied); NULL = the
 * built-in one. HS_ERR_FORMAT if it lacks a word the task needs (names the
 * word). *out is NULL on failure. Free with hs_winograd_destroy.
 */
hs_status hs_winograd_create(hs_task_kind kind, uint64_t split_seed, const hs_tokenizer *vocab,
                             hs_winograd **out, hs_error *err);

/*
 * The same task with the held-out split given as n ordered noun pairs
 * (pairs[k] = {x, y}, indices into hs_wg_nouns; each held out with all 8
 * adjectives) instead of drawn from a seed: for a model trained elsewhere on
 * a split of its own. split_seed is 0. HS_ERR_INPUT naming the pair when
 * one is not a pair of the task (x == y; category: animal then place), is
 * listed twice, or n is 0 or above HS_WG_MAX_HELDOUT_PAIRS.
 */
hs_status hs_winograd_create_pairs(hs_task_kind kind, const int (*pairs)[2], size_t n,
                                   const hs_tokenizer *vocab, hs_winograd **out, hs_error *err);

/*
 * Reads held-out pairs from a text file: one pair a line, two noun words
 * separated by spaces ("animal street"); blank lines and lines starting with
 * '#' are skipped. pairs (cap entries) get noun indices. HS_ERR_IO when the
 * file cannot be read; HS_ERR_FORMAT "path:line: ..." for a word that is not
 * one of the 16 nouns, a line without exactly two words, or more than cap pairs.
 */
hs_status hs_wg_pairs_read(const char *path, int (*pairs)[2], size_t cap, size_t *n,
                           hs_error *err);

/* Frees t. NULL is allowed. */
void hs_winograd_destroy(hs_winograd *t);

/* The examples of one split and their count (pointer owned by t). */
const hs_wg_example *hs_winograd_examples(const hs_winograd *t, hs_wg_split split, size_t *n);

/* Whether the ordered pair (x, y) (noun words) is held out for t's seed:
 * 1 held out, 0 not (in training, or not a pair of this task), -1 if a word is
 * not one of the 16 nouns. hs_winograd_is_held_out(t, HS_WG_CHAPTER_X,
 * HS_WG_CHAPTER_Y) answers whether the chapter's pair (animal, street) is held
 * out; reports should say it. */
int hs_winograd_is_held_out(const hs_winograd *t, const char *x, const char *y);

/* Writes the sentence of ex as text (words joined by single spaces) into buf of
 * cap bytes, NUL-terminated. Returns the length it needs (without the NUL), as
 * snprintf; the text is complete when that is < cap. */
size_t hs_winograd_sentence(const hs_winograd *t, const hs_wg_example *ex, char *buf, size_t cap);

/*
 * Writes the dataset as text to path, atomically (hs_atomic_open/commit: a
 * failure leaves any old file at path byte-identical). Format: comment lines
 * starting with '#' (task, split seed, counts, the held-out pairs, whether the
 * chapter's pair is held out, the column names), then one line per sentence,
 * training sentences first, tab-separated:
 *   split<TAB>role<TAB>ref<TAB>sentence
 * e.g. "train\tcrosser\tanimal\tthe animal did not cross the street because it
 * was too tired , so the animal waited .". Errors: HS_ERR_IO naming the path.
 */
hs_status hs_winograd_write_text(const hs_winograd *t, const char *path, hs_error *err);

/*
 * The checkpoint's `task` metadata: a compact JSON object {"name", "split_seed"
 * (a number; a decimal string when above 2^53), "nouns", "adjectives",
 * "heldout_pairs" [[x, y] words], "n_train", "n_heldout"}. *json is malloc'd
 * (caller frees with free()).
 */
hs_status hs_winograd_task_json(const hs_winograd *t, char **json, hs_error *err);

/*
 * Rebuilds the task described by `task` metadata JSON (name and split_seed
 * are read; nouns and adjectives, when present, must equal headscope's lists)
 * with ids from vocab (NULL = built-in). HS_ERR_FORMAT naming the problem
 * (missing/unknown name, bad split_seed, different nouns). *out NULL on failure.
 */
hs_status hs_winograd_from_task_json(const char *json, const hs_tokenizer *vocab,
                                     hs_winograd **out, hs_error *err);

/* ------------------------------------------------------------------------ */
/* Training batches                                                          */

/* A small seeded PRNG (splitmix64), caller-owned state; no global state. */
typedef struct {
    uint64_t state;
} hs_task_rng;

/* Seeds r; the same seed gives the same stream. */
void hs_task_rng_seed(hs_task_rng *r, uint64_t seed);
/* Next 64 random bits. */
uint64_t hs_task_rng_next(hs_task_rng *r);
/* Uniform integer in [0, n) without modulo bias; n must be > 0. */
uint64_t hs_task_rng_below(hs_task_rng *r, uint64_t n);

/*
 * Fills a training batch: B examples drawn uniformly, with replacement, from
 * t's training split with r. tokens (B, 18) gets the ids; targets (B, 18) the
 * next-token targets, targets[b][p] = tokens[b][p+1] for p < 17 and
 * targets[b][17] = -1 (ignored by hs_cross_entropy). Both caller-allocated.
 * HS_ASSERTs B > 0 and a non-empty training split (programmer errors).
 */
void hs_winograd_batch(const hs_winograd *t, hs_task_rng *r, size_t B, int *tokens,
                       int *targets);

/* ------------------------------------------------------------------------ */
/* Scoring                                                                   */

/* Counts from scoring a set of examples at position 14. Index r of the role
 * arrays is an hs_wg_role, index a of the adjective arrays an index into
 * hs_wg_adjectives. */
typedef struct {
    size_t n;                        /* examples scored */
    size_t correct;                  /* argmax over all V == ref */
    size_t other;                    /* argmax == the other noun of the pair */
    size_t n_role[2], correct_role[2], other_role[2];
    size_t n_adj[HS_WG_N_ADJS], correct_adj[HS_WG_N_ADJS], other_adj[HS_WG_N_ADJS];
} hs_wg_score;

/*
 * Runs m on examples (n of them, batched through hs_forward in batches of up
 * to 128, observer passed through and may be NULL) and scores the prediction
 * at position 14: referent accuracy = argmax over the whole vocabulary (logits
 * (b, 18, V), ties to the lowest id) equals ref_id; `other` counts argmax ==
 * other_id; per role and per adjective. pred (n), if not NULL, receives each
 * example's argmax id. *out is zeroed first.
 * Errors: HS_ERR_CONFIG if m's d_vocab differs from the vocabulary size of t or
 * n_ctx < 18 (both numbers named); HS_ERR_NUMERIC if a logit at position 14 is
 * NaN; whatever hs_acts_create / hs_forward return.
 */
hs_status hs_winograd_score_examples(const hs_model *m, const hs_winograd *t,
                                     const hs_wg_example *examples, size_t n,
                                     const hs_observer *observer, int *pred, hs_wg_score *out,
                                     hs_error *err);

/* Scores one split of t (hs_winograd_score_examples on it). */
hs_status hs_winograd_score(const hs_model *m, const hs_winograd *t, hs_wg_split split,
                            const hs_observer *observer, hs_wg_score *out, hs_error *err);

/* correct / n as a fraction in [0, 1] (0 when n == 0). */
double hs_wg_score_accuracy(const hs_wg_score *s);
/* other / n (0 when n == 0). */
double hs_wg_score_other_rate(const hs_wg_score *s);


/* ======================================================================== */
/* Two-step referent circuit check (tasks/circuit.c; `headscope circuit`)    */
/* ======================================================================== */
/*
 * DESIGN.md, "The two-step referent circuit". Finds each head's role from
 * evidence on the held-out split, without assuming the chapter's route.
 * Files: tasks/circuit.c (the run and the engine's phases),
 * tasks/circuit_evidence.c (invariant, attention, DLA, copying),
 * tasks/circuit_verdict.c (the verdict rules, with the verdict's JSON and
 * summary lines), tasks/circuit_report.c (the other JSON and summary
 * sections); their shared internals in tasks/tasks_internal.h.
 * Layers, heads and positions count from 0 (the chapter's "block 1" = layer 0,
 * "block 2" = layer 1). Positions: x 1, y 6, adjective 11, query 14, ref 15.
 *
 * What hs_circuit_run computes (every forward is batched: each intervention
 * runs over the whole held-out set in chunks of 32 sentences, T = 15 tokens =
 * positions 0..14, which is all a causal model's prediction at 14 can see;
 * logits at 14 equal those of an 18-token run up to float rounding; the
 * independent forwards run on opts.threads threads, with results that do not
 * depend on the chunking or the thread count, see tasks/circuit.c):
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
 *    does not hold); else a base name, "chapter" (adjective-read +
 *    other-noun-fetch, no referent-fetch) or "referent-fetch" (referent-fetch
 *    + other-noun-fetch: layer 1 attends the referent of either role and
 *    copies it), with the other features found joined by " + ", adjective-key
 *    first (e.g. "adjective-key + referent-fetch", "adjective-key +
 *    suppression"); "other" when no feature holds.
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
    int threads;          /* workers running the forwards: 0 = auto (2 with 2+ CPUs), 1..8;
                           * the report is bit-identical for every value (tasks/circuit.c) */
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

/* ======================================================================== */
/* Induction task (tasks/induction.c; `headscope train --task induction`)    */
/* ======================================================================== */
/*
 * Olsson et al. 2022 ([IH], CIRCUITS.md 7): sequences of n_ctx random symbols
 * in which one random segment reappears later, the gap between the two
 * occurrences varying from sequence to sequence, so no fixed positional
 * offset finds the earlier copy; only an induction head ([A][B] ... [A] ->
 * [B]) predicts the repeated tokens.
 *
 * One sequence (T = n_ctx, positions 0..T-1), drawn from an hs_task_rng:
 *   len   uniform in [seg_min, seg_max]      (the segment's length)
 *   gap   uniform in [gap_min, gap_max]      (tokens between the occurrences)
 *   start1 uniform in [0, T - 2 len - gap], start2 = start1 + len + gap
 *   the segment: len distinct symbols; every other position (filler): symbols
 *   not in the segment (repeats among themselves allowed). So each token of
 *   the second occurrence appears exactly once before it, at start1 + k, and
 *   the induction target of position start2 + k is start1 + k + 1.
 * Validation guarantees 2 seg_max + gap_max <= T, so len and gap are
 * independent and exactly uniform (no clipping), and the occurrences never
 * overlap (start2 >= start1 + len).
 *
 * Scored: the tokens of the second occurrence after its first one, i.e. the
 * predictions made at positions start2 + k - 1 of tokens start2 + k,
 * k = 1..len-1 (the first token of a repeat is unpredictable).
 * Vocabulary: n_symbols words "s0", "s1", ... (ids = index).
 * Held-out: n_heldout sequences drawn from split_seed. Training batches skip
 * (redraw) every sequence whose segment (its len symbols, in order) is the
 * segment of a held-out sequence, so held-out segments are never trained on.
 */
#define HS_IND_MAX_SYMBOLS 4096

typedef struct {
    int n_symbols;            /* V (32) */
    int n_ctx;                /* T (32) */
    int seg_min, seg_max;     /* segment length range (4, 8); 2 <= min <= max <= V / 2 */
    int gap_min, gap_max;     /* gap range (0, 16); 2 seg_max + gap_max <= T */
    uint64_t split_seed;      /* held-out sequences (0) */
    int n_heldout;            /* held-out sequences (512) */
    int loss_all;             /* training targets: 1 = every next token, 0 = only the
                                 scored (repeated-segment) tokens (default) */
} hs_ind_params;

/* The defaults above, tuned on 2-layer attention-only models (README
 * "Induction heads"): 64 symbols in a 64-token context never left chance
 * (~5%: "copy a token seen before") in 1500 steps at lr 1e-3..1e-2, loss on
 * every token or only the segment's; 16 symbols in 64 or 32 tokens are learnt
 * but a model can answer by elimination (every other symbol is in the
 * context: attend to all but the answer and suppress what it attends), no
 * induction head; 32 symbols in 32 tokens: 99% by step 400, induction heads. */
hs_ind_params hs_ind_params_default(void);

/* Checks p: HS_ERR_CONFIG naming the field (n_symbols in [4, 4096], n_ctx in
 * [4, 4096], 2 <= seg_min <= seg_max < n_symbols / 2 ... as documented above,
 * n_heldout in [1, 100000] and small enough that training can avoid the
 * held-out segments: n_heldout <= n_symbols^seg_min / 4). */
hs_status hs_ind_params_validate(const hs_ind_params *p, hs_error *err);

/* Where the segment sits in one sequence. gap = start2 - start1 - len. */
typedef struct {
    int start1, start2, len;
} hs_ind_seq;

/* Draws one sequence with r: tokens (T) and its layout (*info). p must be
 * valid (HS_ASSERT). */
void hs_ind_generate(const hs_ind_params *p, hs_task_rng *r, int *tokens, hs_ind_seq *info);

typedef struct {
    hs_ind_params p;
    hs_tokenizer *vocab;          /* "s0".."s{V-1}", owned */
    int *heldout_tokens;      /* (n_heldout, T) */
    hs_ind_seq *heldout;      /* (n_heldout) */
    uint64_t *seg_hash;       /* open-addressing set of held-out segment hashes (owned) */
    size_t hash_cap;          /* power of two */
} hs_induction;

/* Builds the task (vocabulary, held-out set) for p. vocab: the vocabulary the
 * ids index (copied; NULL = the built-in "s0".. list; it must be exactly that
 * list). *out NULL on failure. Free with hs_induction_destroy (NULL ok). */
hs_status hs_induction_create(const hs_ind_params *p, const hs_tokenizer *vocab, hs_induction **out,
                              hs_error *err);
void hs_induction_destroy(hs_induction *t);

/* 1 if the segment (len symbols) is the segment of a held-out sequence. */
int hs_induction_is_heldout_segment(const hs_induction *t, const int *seg, int len);

/* A training batch: B sequences from r (held-out segments redrawn), tokens
 * (B, T); targets (B, T): next-token ids where trained (every position but
 * T-1 with loss_all, else the scored repeated-segment tokens), -1 elsewhere.
 * info (B) may be NULL. */
void hs_induction_batch(const hs_induction *t, hs_task_rng *r, size_t B, int *tokens,
                        int *targets, hs_ind_seq *info);

/* The checkpoint's `task` metadata: {"name": "induction", "n_symbols",
 * "n_ctx", "seg_len": [min, max], "gap": [min, max], "split_seed",
 * "n_heldout", "loss": "all" | "segment", "filler": "symbols not in the
 * segment"}. *json malloc'd. */
hs_status hs_induction_task_json(const hs_induction *t, char **json, hs_error *err);
/* Rebuilds the task from that JSON (every field required; validated). */
hs_status hs_induction_from_task_json(const char *json, const hs_tokenizer *vocab, hs_induction **out,
                                      hs_error *err);

/* The "name" of a task metadata JSON object ("winograd", "induction", ...),
 * whole, in *name (malloc'd, the caller frees; NULL on failure).
 * HS_ERR_FORMAT when json is not an object with a string "name",
 * HS_ERR_NOMEM. */
hs_status hs_task_json_name(const char *json, char **name, hs_error *err);

/* Scores of a model on the induction task's held-out sequences. */
typedef struct {
    size_t n_seqs;            /* sequences scored */
    size_t n_scored;          /* repeated-segment tokens scored (sum of len - 1) */
    size_t correct;           /* argmax (ties to the lowest id) == the token */
    double seg_loss;          /* mean cross-entropy (nats) on those tokens */
    double loss;              /* mean cross-entropy on every next-token target */
    double early_loss, late_loss; /* mean loss of the predictions at positions
                                     [T/16, 3T/16) and [T - 1 - T/8, T - 1) */
    double icl_score;         /* late_loss - early_loss ([IH] in-context-learning score,
                                 their token 500 vs 50 of 512, scaled to T) */
    double chance;            /* 1 / n_symbols */
} hs_ind_score;

/* Runs m (batched forwards, observer may be NULL: e.g. an ablation) on the
 * first n (0 = all) held-out sequences and fills *out. Errors: HS_ERR_CONFIG
 * when d_vocab != n_symbols or n_ctx < T; HS_ERR_NUMERIC on a NaN logit. */
hs_status hs_induction_score(const hs_model *m, const hs_induction *t, size_t n,
                             const hs_observer *observer, hs_ind_score *out, hs_error *err);
/* correct / n_scored (0 when nothing was scored). */
double hs_ind_score_accuracy(const hs_ind_score *s);

/* ------------------------------------------------------------------------ */
/* Induction circuit check (tasks/induction_circuit.c; `headscope circuit`  */
/* on an induction model, and `headscope timeline`)                          */
/*
 * Files: tasks/induction_circuit.c (the run and its evidence),
 * tasks/induction_verdict.c (the roles, criteria and verdict, with the
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
/* Circuits over training (tasks/timeline.c; `headscope timeline`)           */
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
} hs_timeline_point;

hs_status hs_timeline_point_induction(const hs_model *m, const hs_induction *t, hs_timeline_point *out,
                                      hs_error *err);
hs_status hs_timeline_point_winograd(const hs_model *m, const hs_winograd *t, hs_timeline_point *out,
                                     hs_error *err);
void hs_timeline_point_free(hs_timeline_point *p);

/* Index i >= 1 of the largest change y[i] - y[i-1] (sign > 0: increase, sign
 * < 0: decrease), NaN pairs skipped; -1 when n < 2 or none is finite. */
int hs_timeline_jump(const double *y, int n, int sign);

/* ------------------------------------------------------------------------ */
/* Loading a checkpoint (tasks/load.c): the model with its vocabulary and    */
/* its task, as every command takes it                                       */

/* A loaded checkpoint: the model, its vocabulary, and its task: task for a
 * Winograd model, ind for an induction model (both NULL when the checkpoint
 * carries no task metadata and none was named). Free with hs_loaded_free. */
typedef struct {
    hs_model *model;
    hs_tokenizer *vocab;
    hs_winograd *task;
    hs_induction *ind;
    hs_meta meta;
    int vocab_is_ids;   /* 1: no vocabulary anywhere; tokens are "#<id>" */
} hs_loaded;

/* Where a checkpoint without vocab or task metadata gets them (the CLI's
 * --vocab FILE, --split-seed S, --heldout-pairs FILE). Zeroed = none. */
typedef struct {
    const char *vocab;          /* one token a line, or a JSON list */
    const char *heldout_pairs;  /* "x y" noun pairs a line */
    int has_split_seed;
    unsigned long long split_seed;
} hs_load_source;

/* What a command needs beyond the weights: the vocabulary, a Winograd task
 * (an induction model is refused), any task. */
enum { HS_NEED_VOCAB = 1, HS_NEED_TASK = 2, HS_NEED_ANY_TASK = 4 };

/*
 * Loads the checkpoint at path with its vocabulary (the checkpoint's, or
 * src->vocab's file; without either and without HS_NEED_VOCAB, id labels
 * "#0", "#1", ... (hs_tokenizer_ids)) and its task (the checkpoint's, or a
 * Winograd split from src's split seed or held-out pairs; required with
 * HS_NEED_TASK or HS_NEED_ANY_TASK). src may be NULL. Notes (HS_NOTE_CMD):
 * the checkpoint's magnitude warning ("warning: ..."), TransformerLens
 * buffers skipped, --vocab replacing the checkpoint's vocabulary. Errors
 * (*out zeroed): hs_checkpoint_load's; HS_ERR_INPUT "give --split-seed or
 * --heldout-pairs, not both", "P has no vocab metadata; ...", "P names its
 * task and split in its metadata; ...", "P is an induction-task model; this
 * command works on Winograd models", "P has no task metadata ..."; a
 * vocabulary whose size is not d_vocab (HS_ERR_CONFIG); the vocabulary's and
 * the task's own errors.
 */
hs_status hs_load(const char *path, int need, const hs_load_source *src, const hs_notes *notes,
                  hs_loaded *out, hs_error *err);
void hs_loaded_free(hs_loaded *l);

/* ------------------------------------------------------------------------ */
/* A training run (tasks/train_run.c; `headscope train`, `headscope demo`)    */

/*
 * One run of `headscope train` as a library call: builds the task (or
 * resumes the run a checkpoint was saved from), creates and initialises the
 * model, checks every output before the first step, writes the dataset dump,
 * trains with hs_train, evaluates the held-out split every eval_every steps,
 * keeps and saves checkpoints, and saves the model to out. Checkpoints carry
 * the vocabulary, the task and a `train` metadata object {"steps",
 * "steps_done", "seed", "init", "batch", "lr", "batch_rng_state" (decimal
 * text: the batch stream after steps_done), "heldout_accuracy",
 * "heldout_accuracy_step", "heldout_segment_loss" (induction),
 * "headscope_version"}; a checkpoint saved with the optimizer state resumes
 * bit-identically to a run never interrupted (resume).
 */

/* What the run hands its caller after every step (and before it saves that
 * step's checkpoints). */
typedef struct {
    int step, steps;        /* the step just taken (1-based) and the budget */
    float loss, lr;         /* this step's batch loss (nats) and learning rate */
    double accuracy;        /* the last held-out accuracy measured, in [0, 1] */
    int accuracy_step;      /* the step it was measured at; 0: not measured yet */
    double steps_per_s;     /* step / seconds since training started */
    double eta_s;           /* seconds left at that speed */
    int last;               /* 1 at the last step of the budget */
    int logged;             /* 1 on every log_every-th step and the last */
} hs_train_progress;

typedef void (*hs_train_progress_fn)(void *ctx, const hs_train_progress *p);

/* A training run. Start from hs_train_job_default and set out (required). */
typedef struct {
    /* the task (ignored with resume) */
    int induction;             /* 1: the induction task (ind); 0: Winograd of kind */
    hs_task_kind kind;         /* HS_TASK_WINOGRAD (default) | HS_TASK_WINOGRAD_CATEGORY */
    uint64_t split_seed;       /* which pairs / sequences are held out (0) */
    hs_ind_params ind;         /* induction's sequences (hs_ind_params_default; its
                                  split_seed is replaced by split_seed) */
    /* the model (ignored with resume) */
    hs_config cfg;             /* d_vocab is the task's; n_ctx: induction's ind.n_ctx, Winograd
                                  cfg.n_ctx (0 = HS_WG_LEN, else at least HS_WG_LEN); d_head
                                  0 = d_model / n_heads (at least 1); d_mlp < 0 = 4 d_model;
                                  seed = seed */
    hs_init init;              /* initialisation scheme (HS_INIT_PYTORCH) */
    unsigned long long seed;   /* initialisation and batch-order seed (0) */
    /* training (with resume the budget may change; batch, lr, seed and init are the checkpoint's) */
    hs_train_opts train;       /* steps < 0: the default (2000, induction 1000; resume: the
                                  checkpoint's budget); opt.lr <= 0: the default (1e-3,
                                  induction 3e-3); seq_len and start_step are set by the run */
    const char *resume;        /* a checkpoint saved with its optimizer state, or NULL */
    /* outputs */
    const char *out;           /* the model file (required); an existing file is refused
                                  unless force or resume */
    const char *dataset;       /* Winograd: the sentences as text (hs_winograd_write_text), or NULL */
    const char *keep;          /* a folder for every checkpoint (DIR/step-NNNNNN.safetensors:
                                  the init, every checkpoint_every steps, the last), or NULL */
    int checkpoint_every;      /* also save to out (keep: to DIR) every N steps; 0: never
                                  (keep: 100) */
    int log_every;             /* hs_train_progress.logged every N steps (250) */
    int eval_every;            /* held-out accuracy every N steps; 0: at the end only (250) */
    int save_optimizer;        /* checkpoints carry the AdamW moments (always with resume) */
    int force;                 /* replace an existing out / dataset */
    volatile sig_atomic_t *interrupt; /* when set to non-zero (a signal handler), the run stops
                                  after the step at hand; may be NULL */
    hs_train_progress_fn progress; /* after every step, or NULL */
    void (*on_start)(void *ctx); /* once, just before the first step (after the initial kept
                                  checkpoint), or NULL: where a program starts catching its
                                  interrupt signals */
    void *ctx;                 /* progress's and on_start's */
} hs_train_job;

/* The defaults of `headscope train` (above); out, dataset, keep, resume NULL. */
void hs_train_job_default(hs_train_job *job);

/* What a run says about itself: the task and model (known before the first
 * step), then how training ended. */
typedef struct {
    int induction;             /* the task trained: induction (ind) or Winograd (kind) */
    hs_task_kind kind;
    uint64_t split_seed;
    hs_ind_params ind;         /* induction: its parameters */
    size_t n_train, n_heldout; /* Winograd: sentences in each split */
    int chapter_held_out;      /* Winograd: 1 when (animal, street) is held out */
    hs_config cfg;             /* the model */
    size_t n_params;
    int steps, start_step;     /* the budget; steps already taken (resume) */
    int batch;
    float lr;                  /* peak learning rate */
    unsigned long long seed;
    hs_init init;
    int stopped;               /* 1: training stopped before the budget (err says why: the
                                  interrupt, a NaN, a checkpoint that could not be written) */
    double accuracy;           /* the last held-out accuracy (repeated-segment / referent) */
    int accuracy_step;         /* its step */
    double seg_loss;           /* induction: its repeated-segment loss (else NAN) */
    int first_full_step;       /* the first evaluated step at 100%, or 0 */
} hs_train_result;

/*
 * Runs job (above) and fills *out (zeroed first; its first part is filled
 * before the first step). Notes, in order, at the moment each is known:
 * HS_NOTE_CMD "note: d_head = d_model / heads = ..." (a derived d_head that
 * leaves dimensions unused), "note: P: steps_done N but AdamW took M steps"
 * (resume); then, before the initial kept checkpoint, HS_NOTE_PLAIN the
 * lines that describe the run: "task ...", "model: ..." and with resume
 * "resuming P at step N of M". Everything is checked before training: out
 * can be written (HS_ERR_IO), dataset's path, "--out P already exists; use
 * --force ..." and "--dataset P already exists; ..." (HS_ERR_INPUT), the
 * resume checkpoint ("P has no optimizer state; ...", "P has no resumable
 * 'train' metadata ...", "P is at step N, past the budget of M steps", "P has
 * no vocab or task metadata to resume with"), "--dataset writes Winograd
 * sentences; ..." (induction), "--keep P exists and is not a folder", "P
 * already exists (another run's checkpoint?); choose another --keep folder";
 * the task's, the model's and the checkpoint writer's own errors. When
 * training stops (out->stopped = 1): hs_train's error ("loss is NaN at step
 * N"), "interrupted at step N", or a checkpoint write's; keep then holds
 * every checkpoint written so far, out the last periodic one (or what it
 * held before). Then out is saved (with steps_done = the budget).
 */
hs_status hs_train_run(const hs_train_job *job, const hs_notes *notes, hs_train_result *out,
                       hs_error *err);

/* 1 when path loads and holds a model trained to the end of its budget by
 * hs_train_job_default's run (the Winograd task of split seed 0, the
 * default model and budget, seed 0: what `headscope demo` reuses), else 0. */
int hs_train_is_default_run(const char *path);

/* ------------------------------------------------------------------------ */
/* Circuits over a training run (tasks/timeline_run.c; `headscope timeline`)  */

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
    int induction;             /* 1: an induction run; 0: Winograd */
    int jump;                  /* index of the largest rise of best (induction, L > 1), or -1 */
    int drop;                  /* index of the largest drop of the loss (induction: the
                                  repeated-segment loss), or -1 */
    int first_hold;            /* first index where the circuit holds (Winograd: step 2), or -1 */
    int first_decision;        /* Winograd: first index with decision heads, or -1 */
    cJSON *json;               /* every number (timeline_numbers.json): {"dir", "task",
                                  "n_layers", "n_heads", "summary", "checkpoints", "head_names"} */
    int n_files;               /* files written into the output folder (0 without one) */
} hs_timeline_report;

/*
 * Reads every checkpoint dir/step-NNNNNN.safetensors (train's keep folder)
 * in step order (hs_load with HS_NEED_ANY_TASK; its notes go to notes) and
 * computes each one's point (hs_timeline_point_induction / _winograd). With
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
 * checkpoint)", hs_load's, "P: <the point's error>", the figure's and the
 * output folder's; HS_ERR_NOMEM. *out zeroed on failure.
 */
hs_status hs_timeline_run(const char *dir, const char *out_dir, hs_figopts *fo, hs_pool *pool,
                          const hs_notes *notes, hs_timeline_report *out, hs_error *err);
void hs_timeline_report_free(hs_timeline_report *r);

/* ------------------------------------------------------------------------ */
/* Writing a circuit check's folder (tasks/circuit_figs.c,                   */
/* tasks/induction_figs.c; `headscope circuit --out DIR`)                    */

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

#endif /* HS_TASKS_H */
