/*
 * tasks/tasks.h -- headscope's tasks: the Winograd task of DESIGN.md ("The
 * Winograd task") and its category variant, and the induction task (Olsson
 * et al. 2022): their vocabularies, sentence and sequence generators,
 * train/held-out splits, the dataset text dump, the `task` metadata JSON,
 * training batches and scoring (referent accuracy at position 14; the
 * repeated segment's accuracy and loss); a training run of a model on a task
 * with its checkpoints and progress (hs_train_run); and loading a checkpoint
 * with its vocabulary and task, as every command takes it (hs_load). The
 * text task's parameters (hs_text_params) are here, the rest of the text task
 * and the ladder in tasks/text.h (a second header only for size: DESIGN.md's
 * module map). The circuits a task is expected to hold, and their checks,
 * are circuits/.
 *
 * May call: common/ (status, errors, atomic writes, notes), model/ (the
 * forward for scoring, hs_train, checkpoints), tokenize/ (the vocabularies),
 * cJSON. Never probe/, experiments/, circuits/, viz/ or cli/. The library
 * never prints and never exits: every failure is an hs_status plus a
 * one-line message in a caller-owned hs_error; what a run says beside that
 * goes to the caller's hs_notes.
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
 * Ownership: *_create / *_destroy for heap handles (hs_winograd,
 * hs_induction); reports and loaded checkpoints are caller-owned structs
 * freed with their *_free. Every *_destroy / *_free accepts NULL. Strings
 * returned through char ** are malloc'd and freed by the caller with free().
 */
#ifndef HS_TASKS_H
#define HS_TASKS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/common.h"
#include "model/model.h"
#include "model/train.h"
#include "model/checkpoint.h"
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
    int pairs_given;                 /* 1: held-out pairs given (hs_winograd_create_pairs, or
                                        task metadata's heldout_pairs other than its
                                        split_seed's), not drawn from split_seed (then 0) */
    int pairs_read;                  /* 1: the held-out pairs were read from task metadata's
                                        heldout_pairs (hs_winograd_from_task_json) */
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
 * Rebuilds the task described by `task` metadata JSON with ids from vocab
 * (NULL = built-in): its name; its held-out split from "heldout_pairs" when
 * present ([[x, y] noun words], as a model trained elsewhere names its own
 * split; pairs_read = 1, and pairs_given = 1 unless they are exactly the pairs
 * "split_seed" draws), else drawn from "split_seed"; nouns and adjectives,
 * when present, must equal headscope's lists. HS_ERR_FORMAT naming the
 * problem (missing/unknown name, neither heldout_pairs nor split_seed, bad
 * split_seed, a pair entry that is not two of the 16 nouns, different
 * nouns); HS_ERR_INPUT for pairs hs_winograd_create_pairs refuses. *out NULL
 * on failure.
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

/* ======================================================================== */
/* Text task (tasks/text.c; `headscope train --task text`, issue 31)         */
/* ======================================================================== */
/*
 * A corpus (hs_corpus, tokenize.h) encoded with a byte-level BPE (no BOS),
 * file by file; the last val_fraction of each file's tokens (floor) is held
 * out, the rest trains. The two parts are each one stream (files
 * concatenated in the order given). Training windows: T = n_ctx tokens at a
 * uniform random start of the training stream, targets the next T tokens
 * (every position scored). Held-out perplexity: the held-out stream cut into
 * W = (n_heldout - 1) / T consecutive windows (window w: tokens w T .. w T +
 * T - 1, targets one further), every position scored: exp(mean cross-entropy
 * in nats). The unigram baseline: token frequencies of the training stream
 * with add-one smoothing over the vocabulary, scored on the same targets.
 *
 * Repeats (repeat = P > 0; `train --task text --repeat P`): induction is of
 * use only where text repeats within the window, which in 128-256 tokens of
 * prose it rarely does. With probability P a window's T input tokens hold one
 * span of themselves a second time, later, at a random distance: a span of L
 * tokens (L uniform in [max(2, T/8), max(2, T/4)]) starting at a (uniform in
 * [0, T - 2L]) is copied over the tokens from b on (b uniform in [a + L,
 * T - L]), every target following its input as ever (the target at T - 1 is
 * the stream's next token). The draws: one uniform double against P, then
 * L, a, b by hs_task_rng_below, from the batch stream for training windows
 * (none at all when P is 0: the stream and its bits are those of a run
 * without repeats) and for the held-out windows from an hs_task_rng seeded
 * with HS_TEXT_REPEAT_SEED, window by window at hs_text_create, so the held-out
 * perplexity and ICL score are measured on the distribution trained on; the
 * unigram baseline is computed on the stream with the copies.
 */
typedef struct {
    int n_ctx;            /* T: window length (128, the chapter's) */
    double val_fraction;  /* held out per file (0.1), in [0.01, 0.5] */
    int vocab_size;       /* a BPE trained on the corpus when no tokenizer is given (1024) */
    double repeat;        /* P in [0, 1]: a window's chance of holding a span twice (0) */
} hs_text_params;

/* The held-out repeats' hs_task_rng seed. */
#define HS_TEXT_REPEAT_SEED 31u

hs_text_params hs_text_params_default(void);
/* n_ctx, val_fraction and repeat (0 when absent) back from that JSON (the rest
 * describes the corpus trained on); HS_ERR_FORMAT when they are missing or out
 * of range. */
hs_status hs_text_params_from_json(const char *json, hs_text_params *p, hs_error *err);
/* The text task's corpus, batches, perplexity, eval, sampling: tasks/text.h. */
/* ------------------------------------------------------------------------ */
/* Loading a checkpoint (tasks/load.c): the model with its vocabulary and    */
/* its task, as every command takes it                                       */

/* A loaded checkpoint: the model, its vocabulary, and its task: task for a
 * Winograd model, ind for an induction model (both NULL when the checkpoint
 * carries no task metadata and none was named), is_text and text for a text
 * model (its vocabulary the BPE, BOS off). Free with hs_loaded_free. */
typedef struct {
    hs_model *model;
    hs_tokenizer *vocab;
    hs_winograd *task;
    hs_induction *ind;
    int is_text;
    hs_text_params text;
    hs_meta meta;
    int vocab_is_ids;   /* 1: no vocabulary anywhere; tokens are "#<id>" */
} hs_loaded;

/* Where a checkpoint without vocab or task metadata gets them (the CLI's
 * --vocab FILE, --split-seed S, --heldout-pairs FILE), and which weights to
 * use (--process). Zeroed = none, the weights as stored. */
typedef struct {
    const char *vocab;          /* one token a line, or a JSON list */
    const char *heldout_pairs;  /* "x y" noun pairs a line */
    int has_split_seed;
    unsigned long long split_seed;
    const char *process;        /* NULL or "raw": as stored; "tl": TransformerLens'
                                 * default processing (hs_model_process_tl) */
    int no_bos;                 /* 1: the tokenizer prepends no BOS (hs_tok_set_bos) */
    int no_special;             /* 1: special tokens in text are their bytes (hs_tok_set_special) */
    hs_pool *pool;              /* NULL, or a pool the load splits its scan of the weights over
                                 * (hs_checkpoint_load_pool; borrowed), a folder's tokenizer read
                                 * on its lane meanwhile (hs_pool_async); not from a job of it */
} hs_load_source;

/* What a command needs beyond the weights: the vocabulary, a Winograd task
 * (an induction model is refused), any task; HS_ALLOW_TEXT beside
 * HS_NEED_ANY_TASK: a text model counts as one (timeline). */
enum { HS_NEED_VOCAB = 1, HS_NEED_TASK = 2, HS_NEED_ANY_TASK = 4, HS_ALLOW_TEXT = 8 };

/*
 * Loads the checkpoint at path (a .safetensors file, or a Hugging Face GPT-2
 * folder: hs_checkpoint_load_notes) with its vocabulary (src->vocab's file,
 * the checkpoint's `vocab` metadata, or a folder's tokenizer files
 * (hs_tokenizer_load_dir: a BPE, BOS prepended unless src->no_bos, special
 * tokens in text matched unless src->no_special); without any and without HS_NEED_VOCAB, id labels "#0",
 * "#1", ... (hs_tokenizer_ids)) and its task (the checkpoint's, or a
 * Winograd split from src's split seed or held-out pairs; required with
 * HS_NEED_TASK or HS_NEED_ANY_TASK), its weights processed as src->process
 * says. src may be NULL. Notes (HS_NOTE_CMD): the loader's (buffers skipped,
 * F16 / BF16 converted, ...), the checkpoint's magnitude warning ("warning:
 * ..."), the processing, --vocab replacing the checkpoint's vocabulary.
 * Errors (*out zeroed): hs_checkpoint_load_notes's; hs_model_process_tl's;
 * HS_ERR_INPUT "--process 'x' is not known (tl or raw)", "give --split-seed or
 * --heldout-pairs, not both", "P has no vocab metadata; ...", "P names its
 * task and split in its metadata; ...", "P is an induction-task model; this
 * command scores a Winograd-task model's referent accuracy, or ... a text
 * model's ... perplexity ..." (HS_NEED_TASK: eval), "P has a BPE tokenizer and
 * no task metadata; ..." (eval's sentence, or HS_NEED_ANY_TASK's "this command
 * needs a model trained on the Winograd or induction task ..."), "P has no
 * task metadata ..."; a
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
    double perplexity;      /* text: the last held-out perplexity measured (accuracy_step's);
                               NAN otherwise */
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
    int text_task;             /* 1: the text task (corpus, tokenizer, text); wins over induction */
    const char *const *corpus; /* (n_corpus) the text task's files */
    size_t n_corpus;
    const char *tokenizer;     /* a tokenizer.json for the text task, or NULL: a BPE of
                                  text.vocab_size trained on the corpus (hs_bpe_train) */
    const char *tokenizer_json; /* or its text in memory (tokenizer_json_len bytes; wins
                                  over tokenizer): the ladder's rows share one BPE */
    size_t tokenizer_json_len;
    const char *tokenizer_json_from; /* where tokenizer_json came from, for the run's note
                                  (e.g. "trained on the corpus"; NULL: "given") */
    hs_text_params text;       /* the text task's windows, split and BPE size */
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
    int text;                  /* the text task was trained: */
    double perplexity;         /* its last held-out perplexity (at accuracy_step) */
    double unigram_perplexity; /* the unigram baseline's on the same windows */
    size_t text_train_tokens, text_heldout_tokens, text_windows;
    const char *tokenizer_from; /* "trained on the corpus" or the --tokenizer path */
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
/* The IOI prompt set (tasks/ioi.c; `headscope prompts ioi`)                 */

#define HS_IOI_N_TEMPLATES 15  /* the templates of ioi_dataset.py's BABA_TEMPLATES */
#define HS_IOI_MAX_N 1000000   /* most prompts one call writes */

/* The corrupted prompt of each IOI prompt. */
typedef enum {
    HS_IOI_CORRUPT_S2 = 0, /* S2 (the subject's second mention) replaced by a third name
                            * (ioi_dataset.py gen_flipped_prompts(("S2", "RAND"))) */
    HS_IOI_CORRUPT_ABC,    /* IO, S1 and S2 replaced by three other names, all distinct
                            * (the "ABC" set ACDC patches from: "ABB->XYZ, BAB->XYZ") */
} hs_ioi_corrupt;

typedef struct {
    int n;                  /* prompts, in [1, HS_IOI_MAX_N] */
    uint64_t seed;          /* hs_task_rng seed: same seed, tokenizer, n -> same bytes */
    hs_ioi_corrupt corrupt;
    int template_id;        /* -1: every template of the most common token length
                             * (ties: the group holding the lowest index); else that
                             * template alone, 0..HS_IOI_N_TEMPLATES-1 */
} hs_ioi_params;

/* A generated set and what went into it. Free with hs_ioi_set_free. */
typedef struct {
    char *jsonl;            /* the set: one JSON object a line, malloc'd, NUL-terminated */
    size_t len;             /* bytes of jsonl */
    int n_names, n_names_listed;     /* names that are one token with a leading space, of the list */
    int n_places, n_places_listed;   /* the same for places */
    int n_objects, n_objects_listed; /* and objects */
    int n_templates;                 /* templates used */
    int templates[HS_IOI_N_TEMPLATES]; /* their indices, ascending */
    int n_tokens;           /* tokens of every prompt and corrupted prompt, BOS included */
    int n_abba, n_baba;     /* prompts of each order */
    int n_redrawn;          /* draws thrown away for a length mismatch */
} hs_ioi_set;

/*
 * Writes an indirect-object-identification prompt set (Wang et al. 2022,
 * "Interpretability in the Wild", arXiv 2211.00593, section 2) as
 * ACDC's acdc/ioi/ioi_dataset.py builds it (ArthurConmy/Automatic-Circuit-
 * Discovery; from redwoodresearch/Easy-Transformer): its 15 BABA templates
 * and their ABBA forms, its 99 names, 8 places and 8 objects. Prompt i is
 * ABBA ("Then, Mary and John went to the store. John gave a drink to") when
 * i is even, BABA ("Then, John and Mary ... John ...") when odd; its
 * template (uniform among the chosen ones), names (IO and S distinct),
 * place and object are drawn from an hs_task_rng seeded with p->seed. Each
 * line is the project's prompt-set format (experiments.h, hs_prompts_parse):
 *   {"prompt": ..., "corrupted": ..., "answer": " Mary", "wrong": " John"}
 * the prompt ending before the indirect object, answer = IO and wrong = S
 * with their leading space (GPT-2's single tokens), corrupted as p->corrupt
 * says. Only words that are one token of t with a leading space are used
 * (out says how many of each list); since every prompt of a set must have
 * one length, the templates are those of one token length (p->template_id).
 * Every prompt and corrupted prompt is encoded and checked to be
 * out->n_tokens long (a draw that is not is thrown away and drawn again).
 * Errors (*out zeroed), HS_ERR_INPUT, one line: p->n or p->template_id out
 * of range; t not a byte-level BPE ("IOI prompts need a byte-level BPE
 * tokenizer (GPT-2's) ...; this model has a word-level vocabulary of N
 * words"); fewer than 3 names (5 with ABC), or no place or object, that are
 * one token (the counts named); more than 100 n draws thrown away.
 * HS_ERR_NOMEM.
 */
hs_status hs_ioi_generate(const hs_tokenizer *t, const hs_ioi_params *p, hs_ioi_set *out,
                          hs_error *err);
/* Frees s's text and zeroes it. NULL is allowed. */
void hs_ioi_set_free(hs_ioi_set *s);

#endif /* HS_TASKS_H */
