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
 * Vocabulary ids of the built-in vocabulary (hs_vocab_create_winograd), stable:
 *   0..11  the template words in template order of first appearance:
 *          the did not cross because it was too , so waited .
 *   12..27 the 16 nouns in DESIGN.md order (hs_wg_nouns):
 *          animal street dog road cat river horse bridge fox field goat path
 *          cow lane deer creek
 *   28..35 the 8 adjectives, crosser then crossed (hs_wg_adjectives):
 *          tired scared slow weak wet wide busy steep
 * V = 36. Both task variants use this one vocabulary. A vocabulary loaded from
 * a checkpoint (hs_vocab_from_json) may order words differently; every task
 * function looks words up in the vocabulary it is given, never assumes ids.
 *
 * Ownership: *_create / *_destroy for heap handles (hs_vocab, hs_winograd);
 * hs_tokens is a caller-owned struct freed with hs_tokens_free. Every
 * *_destroy / *_free accepts NULL. Strings returned through char ** are
 * malloc'd and freed by the caller with free().
 */
#ifndef HS_TASKS_H
#define HS_TASKS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/common.h"
#include "model/model.h"
#include "probe/probe.h"

/* ------------------------------------------------------------------------ */
/* Vocabulary                                                                */

/* A word-level vocabulary: words[id] is the word with that id. Read the fields,
 * do not change them (the lookup functions below are the interface). */
typedef struct {
    size_t n;          /* number of words (V) */
    char **words;      /* (n) NUL-terminated, owned */
} hs_vocab;

/* Builds the built-in Winograd vocabulary (36 words, ids as in the comment at
 * the top). *out is NULL on failure (HS_ERR_NOMEM). Free with hs_vocab_destroy. */
hs_status hs_vocab_create_winograd(hs_vocab **out, hs_error *err);

/* Builds a vocabulary from n words (copied; id = index). Rejects, with
 * HS_ERR_FORMAT and a message naming the word and its index: n == 0, a NULL or
 * empty word, a duplicated word (both indices), a word that is not valid UTF-8,
 * has whitespace or control characters, holds a Unicode noncharacter
 * (U+FDD0..U+FDEF, U+xxFFFE/U+xxFFFF: no SVG may contain one), upper-case
 * ASCII letters (the tokenizer folds case, so such a word could never be
 * typed), or contains `,` or `.` without being exactly "," or ".". Private-use,
 * format/bidi/zero-width characters and spaces outside ASCII are accepted:
 * JSON and SVG keep them exactly, terminals and messages show them as
 * <U+XXXX> (hs_buf_put_visible; docs/DESIGN.md, text policy). Words in
 * messages are shown that way too. *out is NULL on failure. */
hs_status hs_vocab_create(const char *const *words, size_t n, hs_vocab **out, hs_error *err);

/* Frees v and its words. NULL is allowed. */
void hs_vocab_destroy(hs_vocab *v);

/* Id of word (exact, case-sensitive match), or -1 if it is not in v. */
int hs_vocab_id(const hs_vocab *v, const char *word);

/* The word with id, or NULL if id is out of range [0, n). Owned by v. */
const char *hs_vocab_word(const hs_vocab *v, int id);

/* Exports v as a compact JSON list of strings in id order, e.g.
 * ["the","did",...], the checkpoint's `vocab` metadata. *json is malloc'd
 * (caller frees with free()); NULL on failure (HS_ERR_NOMEM). */
hs_status hs_vocab_to_json(const hs_vocab *v, char **json, hs_error *err);

/* Parses a JSON list of strings (a checkpoint's `vocab` metadata) into a new
 * vocabulary. HS_ERR_FORMAT with a clear message when json is NULL or empty
 * ("vocab metadata is missing"), is not valid JSON, is not a list, is an empty
 * list, holds a non-string element (names its index), or any check of
 * hs_vocab_create fails (duplicated word, ...). *out is NULL on failure. */
hs_status hs_vocab_from_json(const char *json, hs_vocab **out, hs_error *err);

/* Reads a vocabulary file: a JSON list of strings (the first non-blank
 * character is '['), or one token a line ("\n" or "\r\n", id = line - 1).
 * The words pass hs_vocab_create's checks. HS_ERR_IO when the file cannot be
 * read; HS_ERR_FORMAT naming the path (and the line) otherwise: an empty
 * file, an empty line, a duplicated or invalid word. *out NULL on failure. */
hs_status hs_vocab_read(const char *path, hs_vocab **out, hs_error *err);

/* ------------------------------------------------------------------------ */
/* Sentence tokenizer (user input)                                           */

/* Tokens of one sentence. Caller-owned; free with hs_tokens_free. */
typedef struct {
    size_t n;          /* number of tokens */
    int *ids;          /* (n) vocabulary ids, each in [0, V) */
    char **strs;       /* (n) the token strings after case folding (== the vocab words) */
    int folded;        /* 1 if folding to lower case changed any character */
} hs_tokens;

/*
 * Splits sentence into word tokens and looks each up in v:
 *  - tokens are separated by whitespace (space, \t, \n, \r, \v, \f);
 *  - `,` and `.` are always tokens of their own, split off the words they
 *    touch ("tired, so" -> tired , so; "waited." -> waited .);
 *  - ASCII letters are folded to lower case; out->folded says whether that
 *    changed anything (so the CLI can say so). Non-ASCII letters are kept as
 *    they are (they are in no built-in word).
 * n_ctx is the model's context length; 0 means no limit.
 * On success fills *out (previous contents are overwritten, not freed).
 * Errors (HS_ERR_INPUT, one line; out is left empty, nothing to free):
 *   "sentence is empty"                          (NULL or "")
 *   "sentence has only spaces"                   (whitespace only)
 *   "sentence is not valid UTF-8 at byte P"      (0-based byte offset)
 *   "sentence has a control character (0xHH) at byte P" (C0 controls other than
 *                                                 the whitespace above, DEL,
 *                                                 and U+0080..U+009F)
 *   "sentence has N tokens, more than the model's context of C (n_ctx)"
 *   "unknown word 'W' at position P[ (it holds U+XXXX at byte B[, ...][; only
 *    ASCII whitespace separates words])][; nearest vocabulary word: 'N'];
 *    the vocabulary is: w0 w1 ..."
 *                                                (P = 0-based token position
 *                                                 of the first unknown word;
 *                                                 every code point outside
 *                                                 ASCII is named with its byte
 *                                                 offset B in the sentence, at
 *                                                 most 3; N is the closest word
 *                                                 by edit distance when at most
 *                                                 2 edits and fewer than half
 *                                                 of W's characters; words are
 *                                                 shown with hs_buf_put_visible)
 * HS_ERR_NOMEM on allocation failure.
 */
hs_status hs_tokenize(const hs_vocab *v, const char *sentence, size_t n_ctx, hs_tokens *out,
                      hs_error *err);

/* Frees t's arrays and zeroes it. NULL or an already-freed/zeroed t is allowed. */
void hs_tokens_free(hs_tokens *t);

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
    hs_vocab *vocab;                 /* owned copy of the vocabulary used for ids */
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
hs_status hs_winograd_create(hs_task_kind kind, uint64_t split_seed, const hs_vocab *vocab,
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
                                   const hs_vocab *vocab, hs_winograd **out, hs_error *err);

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
hs_status hs_winograd_from_task_json(const char *json, const hs_vocab *vocab,
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

/* ------------------------------------------------------------------------ */
/* Prompt sets (tasks/prompts.c): the input of patch, ablate, dla, lens and  */
/* heads                                                                     */
/*
 * A prompt set is a JSONL file, one object a line (blank lines skipped):
 *   {"prompt": "the animal ...", "corrupted": "the animal ...",
 *    "answer": "animal", "wrong": "street", "position": 14}
 *   prompt     the clean sentence (tokenised as hs_tokenize; required);
 *   corrupted  its corrupted partner, the same number of tokens (optional;
 *              present on every line or on none);
 *   answer     one token of the model's vocabulary: the right next token at
 *              `position` (required unless HS_PROMPTS_TEXT_ONLY);
 *   wrong      one token: the competing answer of the logit difference
 *              answer - wrong (optional; on every line or on none);
 *   position   where the prediction is read, 0..t-1 (default t-1, the last).
 * Every prompt of a set has the same number of tokens t (the engine runs
 * them as one batch). Any other key is refused (a typo would otherwise be
 * silently ignored).
 * Errors (HS_ERR_INPUT, one line "FILE:LINE: problem"): not JSON / not an
 * object, a missing or non-string field, an unknown key, an unknown word
 * (hs_tokenize's message), answer/wrong not one token of the vocabulary,
 * corrupted of another length than prompt, a prompt of another length than
 * line 1's, corrupted/wrong on some lines only, position out of range; "FILE:
 * empty prompt set" for a file with no prompt. HS_ERR_IO when it cannot be read.
 */
typedef struct {
    int n;          /* prompts */
    int t;          /* tokens per prompt */
    int *clean;     /* (n, t) token ids */
    int *corr;      /* (n, t) or NULL when the set has no "corrupted" */
    int *answer;    /* (n) vocab id, or -1 (HS_PROMPTS_TEXT_ONLY and no answer) */
    int *wrong;     /* (n) vocab id, or NULL when the set has no "wrong" */
    int *pos;       /* (n) position read, 0..t-1 */
    int *line;      /* (n) 1-based line of each prompt in the file */
} hs_prompts;

#define HS_PROMPTS_TEXT_ONLY 1 /* flags: "answer" optional (heads, lens) */

/* Reads and checks the prompt set at path against vocabulary v (n_ctx:
 * longest prompt allowed, 0 = no limit); fills *out (caller frees with
 * hs_prompts_free, also after a failure). Errors above. */
hs_status hs_prompts_load(const char *path, const hs_vocab *v, int n_ctx, int flags,
                          hs_prompts *out, hs_error *err);
/* The same from text (len bytes); `name` stands for the file in messages. */
hs_status hs_prompts_parse(const char *text, size_t len, const char *name, const hs_vocab *v,
                           int n_ctx, int flags, hs_prompts *out, hs_error *err);
/* One sentence as a set of one prompt (position: the last token). */
hs_status hs_prompts_sentence(const char *sentence, const hs_vocab *v, int n_ctx, hs_prompts *out,
                              hs_error *err);
void hs_prompts_free(hs_prompts *p);

/* ------------------------------------------------------------------------ */
/* Experiments over a prompt set (tasks/experiments.c): what `headscope      */
/* heads`, `patch`, ... compute, on the engine (probe.h, section 8).         */

/* Head detectors of hs_heads_run, in this order. */
typedef enum {
    HS_HEADS_PREV_TOKEN = 0, /* D[i,i-1] = 1 (TL previous_token_head) */
    HS_HEADS_DUPLICATE,      /* D[i,j] = 1 iff j < i, tok[j] = tok[i] (TL duplicate_token_head) */
    HS_HEADS_INDUCTION,      /* D[i,j] = 1 iff 1 <= j <= i, tok[j-1] = tok[i] (TL induction_head) */
    HS_HEADS_FIRST_NOUN,     /* D[i,j*] = 1 for i >= j*, j* the first noun of the row (nouns: the
                              * Winograd nouns found in the vocabulary); rows without one: 0 */
    HS_HEADS_TARGET,         /* the user's pattern (t, t), every row */
    HS_HEADS_N
} hs_heads_kind;
/* "previous-token", "duplicate-token", "induction", "first-noun", "target". */
extern const char *const hs_heads_names[HS_HEADS_N];

typedef struct {
    int L, H, n, t;            /* layers, heads, prompts, tokens per prompt */
    hs_detect_metric metric;
    int exclude_bos, exclude_current;
    int has[HS_HEADS_N];       /* 1 for the detectors computed */
    double score[HS_HEADS_N][HS_MAX_LAYERS * 64]; /* [kind][l * H + h]; NAN where !has */
} hs_heads_report;

/*
 * Every head's detector scores over the prompts p (their "prompt" tokens):
 * previous-token, duplicate-token, induction always; first-noun when the
 * vocabulary holds at least one Winograd noun; target when target (t, t)
 * [dest, src], lower-triangular, is given. metric, exclude_bos and
 * exclude_current as TL detect_head (probe.h hs_detector_score*). The
 * engine runs on pool (NULL = the caller's thread); the scores are
 * bit-identical for every thread count. HS_ERR_INPUT when p is empty or
 * the model has more than 64 heads a layer.
 */
hs_status hs_heads_run(const hs_model *m, const hs_vocab *v, hs_pool *pool, const hs_prompts *p,
                       const float *target, hs_detect_metric metric, int exclude_bos,
                       int exclude_current, hs_heads_report *out, hs_error *err);
/* The report as JSON: {"metric", "exclude_bos", "exclude_current", "prompts",
 * "tokens", "detectors": [names], "scores": {name: [[head...] per layer]}}.
 * Caller frees with cJSON_Delete; NULL when memory ran out. */
cJSON *hs_heads_json(const hs_heads_report *r);
/* The text summary (a table, heads x detectors) appended to b. */
void hs_heads_summary(const hs_heads_report *r, hs_buf *b);

/* Reads a target pattern file: a JSON array of t rows of t finite numbers,
 * [dest][src], zero above the diagonal. *D (t, t) malloc'd, caller frees.
 * HS_ERR_INPUT naming the file and the problem (wrong size, non-number,
 * above-diagonal value at [i, j]); HS_ERR_IO. */
hs_status hs_target_pattern_load(const char *path, int t, float **D, hs_error *err);

/* Activation patching (tasks/patch.c; TL patching.py get_act_patch_*). The
 * activations patched, each a hook point of every layer l: */
typedef enum {
    HS_PATCH_RESID_PRE = 0, /* blocks.l.hook_resid_pre [B,T,D]: by layer x position */
    HS_PATCH_ATTN_OUT,      /* blocks.l.hook_attn_out: by layer x position */
    HS_PATCH_MLP_OUT,       /* blocks.l.hook_mlp_out: by layer x position */
    HS_PATCH_RESID_POST,    /* blocks.l.hook_resid_post: by layer x position */
    HS_PATCH_Z,             /* blocks.l.attn.hook_z [B,T,H,dh]: by head (all positions; head x position) */
    HS_PATCH_Q,             /* blocks.l.attn.hook_q: by head */
    HS_PATCH_K,             /* blocks.l.attn.hook_k: by head */
    HS_PATCH_V,             /* blocks.l.attn.hook_v: by head */
    HS_PATCH_PATTERN,       /* blocks.l.attn.hook_pattern [B,H,T,T]: by head (position = dest row) */
    HS_PATCH_N
} hs_patch_act;
/* "resid_pre", "attn_out", "mlp_out", "resid_post", "z", "q", "k", "v", "pattern". */
extern const char *const hs_patch_act_names[HS_PATCH_N];
/* 1 for the per-head acts (z, q, k, v, pattern). */
int hs_patch_act_is_head(int act);
/* The act named name, or -1. */
int hs_patch_act_parse(const char *name);

/*
 * The results. LD = logit(answer) - logit(wrong) at each prompt's position,
 * averaged over the prompts (summed in prompt order); metric = (LD_patched -
 * LD_corr) / (LD_clean - LD_corr) (hs_patch_metric; NAN when clean = corr):
 * 0 = the corrupted run, 1 = the clean answer restored. For act a (bit a of
 * acts): layer-level acts: ld[a], metric[a] (L, t) [layer][position]; head
 * acts: ld[a], metric[a] (L, H) patched at every position, and ld_pos[a],
 * metric_pos[a] (L, H, t) at one position. Arrays of acts not computed are NULL.
 */
typedef struct {
    int L, H, n, t;
    unsigned acts;
    double ld_clean, ld_corr;
    double *metric[HS_PATCH_N], *ld[HS_PATCH_N];
    double *metric_pos[HS_PATCH_N], *ld_pos[HS_PATCH_N];
} hs_patch_report;

/* Patches the clean prompts' activations into the corrupted prompts of p
 * (which must have "corrupted", "answer" and "wrong"), one sweep over the set
 * per cell, on pool. acts: bits of hs_patch_act. HS_ERR_INPUT when p lacks
 * them or the model does not produce an act (mlp_out with d_mlp 0, q/k with
 * uniform attention). Free out with hs_patch_report_free. */
hs_status hs_patch_run(const hs_model *m, hs_pool *pool, const hs_prompts *p, unsigned acts,
                       hs_patch_report *out, hs_error *err);
/* The same on token arrays: src (n, t) the runs patched from, dst (n, t) the
 * runs patched into; answer, wrong, pos (n). */
hs_status hs_patch_run_tokens(const hs_model *m, hs_pool *pool, const int *src, const int *dst, int n, int t,
                              const int *answer, const int *wrong, const int *pos, unsigned acts,
                              hs_patch_report *out, hs_error *err);
void hs_patch_report_free(hs_patch_report *r);
/* As JSON ({"ld_clean", "ld_corrupted", "prompts", "tokens", "metric":
 * "normalised logit difference ...", "acts": {name: {"by": "layer x
 * position" | "head", "metric": [[...]], "ld": [[...]], and for heads
 * "metric_by_position": [[[...]]], "ld_by_position"}}}); caller frees with
 * cJSON_Delete; NULL when memory ran out. */
cJSON *hs_patch_json(const hs_patch_report *r);
/* The text summary appended to b. */
void hs_patch_summary(const hs_patch_report *r, hs_buf *b);
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
    hs_vocab *vocab;          /* "s0".."s{V-1}", owned */
    int *heldout_tokens;      /* (n_heldout, T) */
    hs_ind_seq *heldout;      /* (n_heldout) */
    uint64_t *seg_hash;       /* open-addressing set of held-out segment hashes (owned) */
    size_t hash_cap;          /* power of two */
} hs_induction;

/* Builds the task (vocabulary, held-out set) for p. vocab: the vocabulary the
 * ids index (copied; NULL = the built-in "s0".. list; it must be exactly that
 * list). *out NULL on failure. Free with hs_induction_destroy (NULL ok). */
hs_status hs_induction_create(const hs_ind_params *p, const hs_vocab *vocab, hs_induction **out,
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
hs_status hs_induction_from_task_json(const char *json, const hs_vocab *vocab, hs_induction **out,
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

/* The logit lens (tasks/experiments.c): the model's output head
 * (hs_final_logits: the final norm with statistics recomputed from each
 * residual, not the final layer's cached scale; then W_U, b_U) applied to the
 * residual stream at L + 1 points: blocks.l.hook_resid_pre for l = 0..L-1,
 * then blocks.{L-1}.hook_resid_post (whose lens is the model's own logits). */
typedef struct {
    int L, n, t, V;
    int n_points;          /* L + 1 */
    int has_answer, has_wrong;
    double *p_answer;      /* (n_points) mean softmax probability of the answer at each prompt's position */
    double *logit_answer;  /* (n_points) mean logit of the answer there */
    double *acc;           /* (n_points) fraction of prompts whose top-1 there is the answer */
    double *ld;            /* (n_points) mean logit(answer) - logit(wrong) (has_wrong) */
    double *p_final;       /* (n_points, t) mean probability the lens gives, at each position, to
                            * the model's own top-1 token there */
    int *top1;             /* (n_points, t) the lens's top-1 token id of the first prompt */
} hs_lens_report;

/* The lens over the prompts of p (answer/wrong optional), on the engine.
 * HS_ERR_INPUT for an empty set. Free with hs_lens_report_free. */
hs_status hs_lens_run(const hs_model *m, hs_pool *pool, const hs_prompts *p, hs_lens_report *out,
                      hs_error *err);
void hs_lens_report_free(hs_lens_report *r);
/* Name of lens point k ("blocks.0.hook_resid_pre", ..., "blocks.1.hook_resid_post") into buf. */
void hs_lens_point_name(const hs_lens_report *r, int k, char *buf, size_t cap);
/* As JSON (every array above, with point names; caller frees with cJSON_Delete; NULL on OOM). */
cJSON *hs_lens_json(const hs_lens_report *r, const hs_vocab *v);
/* The text summary appended to b. */
void hs_lens_summary(const hs_lens_report *r, const hs_vocab *v, hs_buf *b);

/* Ablation over a prompt set (tasks/ablate.c): each head
 * (blocks.l.attn.hook_z[:, :, h, :]), each layer's attention (all its heads)
 * and each MLP (blocks.l.hook_mlp_out) replaced, one at a time, by zero, by
 * its position-wise mean over a reference set, or by its value on another
 * reference prompt (resample: prompt i takes reference row (i + n_ref / 2)
 * mod n_ref). Metric: mean LD answer - wrong at each prompt's position (mean
 * answer logit when the set has no "wrong"); accuracy: top-1 = answer. */
typedef enum { HS_ABLATE_ZERO = 0, HS_ABLATE_MEAN, HS_ABLATE_RESAMPLE } hs_ablate_method;
/* "zero", "mean", "resample". */
extern const char *const hs_ablate_method_names[3];
typedef struct {
    int layer, head;       /* head >= 0: one head; -1: the layer's attention; -2: its MLP */
    double metric, acc;    /* with it ablated */
} hs_ablate_comp;
typedef struct {
    int L, H, n, n_ref, has_wrong;
    hs_ablate_method method;
    double metric_clean, acc_clean;
    int n_comp;
    hs_ablate_comp *comp;  /* (n_comp) per layer: its heads, its attention, its MLP */
} hs_ablate_report;

/* Ablates every component over the prompts of p (each needs "answer"); ref:
 * the reference set of the means or resampling (NULL = p itself; the same
 * number of tokens). HS_ERR_INPUT for an empty set, a missing answer or a
 * reference of another length. Free with hs_ablate_report_free. */
hs_status hs_ablate_run(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_prompts *ref,
                        hs_ablate_method method, hs_ablate_report *out, hs_error *err);
void hs_ablate_report_free(hs_ablate_report *r);
/* "L0H1", "L0 attn", "L0 mlp" into buf. */
void hs_ablate_comp_name(const hs_ablate_comp *c, char *buf, size_t cap);
/* As JSON (caller frees with cJSON_Delete; NULL on OOM) and as text (appended to b). */
cJSON *hs_ablate_json(const hs_ablate_report *r);
void hs_ablate_summary(const hs_ablate_report *r, hs_buf *b);

/* Direct logit attribution over a prompt set (tasks/experiments.c;
 * hs_logit_attribution per prompt, final norm frozen): each component's
 * attribution towards answer - wrong (or the answer) at each prompt's
 * position, averaged over the prompts in order. */
typedef struct {
    int n, n_comp, has_wrong;
    char (*labels)[24];  /* (n_comp) hs_resid_decompose's labels ("embed", "L0H1", "L0 mlp", ...) */
    double *attr;        /* (n_comp) mean attribution, logits */
    double constant;     /* mean final-norm bias term */
    double target;       /* mean logit (or LD) less b_U: sum attr + constant = target */
    int t;               /* tokens per prompt */
    double *attr_pos;    /* (n_comp, t) with by_position, else NULL: see hs_dla_set_run */
} hs_dla_set;
/* HS_ERR_INPUT for an empty set or a prompt without "answer". Free with hs_dla_set_free.
 * by_position = 1 also fills attr_pos[k * t + q]: the mean over the prompts of
 * hs_logit_attribution_at(src_pos q, read position the prompt's): what
 * component k writes at position q, through the final norm with the read
 * position's frozen scale (and its mean, LN), dotted with the read position's
 * answer - wrong direction (TL: stack_head_results / decompose_resid with
 * pos_slice = q, then apply_ln_to_stack and logit_attrs with the read
 * position's scale). Column q = a prompt's read position is attr's term
 * exactly; every q in [0, t) is averaged over every prompt, including
 * positions after a prompt's read position (which cannot reach its logits). */
hs_status hs_dla_set_run(const hs_model *m, hs_pool *pool, const hs_prompts *p, int by_position,
                         hs_dla_set *out, hs_error *err);
void hs_dla_set_free(hs_dla_set *r);
cJSON *hs_dla_set_json(const hs_dla_set *r);
void hs_dla_set_summary(const hs_dla_set *r, hs_buf *b);

#endif /* HS_TASKS_H */
