/*
 * experiments/experiments.h -- experiments a researcher runs on any model and
 * any prompt set, on the experiment engine (probe.h, section 8): prompt sets,
 * head detectors (`heads`), activation patching (`patch`), ablation
 * (`ablate`), direct logit attribution over a set (`dla`) and the logit lens
 * (`lens`). Each is a run that returns a report (numbers; *_free), the
 * report as JSON (*_json) and as a text table (*_summary).
 *
 * May call: common/, model/, probe/ (hooks, engine, DLA), tokenize/ (prompt
 * text to token ids), cJSON. Never tasks/ or cli/: a task configures these
 * experiments (e.g. names the nouns of the first-noun detector), they know no
 * task. The library never prints and never exits: every failure is an
 * hs_status plus a one-line message in a caller-owned hs_error.
 *
 * Dims legend: n = prompts of a set, t = tokens per prompt (every prompt of a
 * set has t), L = layers, H = heads a layer, V = vocabulary size, P = the
 * points of a report (lens points, ablated components).
 * Ownership: a report is a caller-owned struct freed with its *_free (NULL
 * and zeroed structs allowed); JSON from *_json is freed with cJSON_Delete.
 */
#ifndef HS_EXPERIMENTS_H
#define HS_EXPERIMENTS_H

#include <limits.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/common.h"
#include "model/model.h"
#include "output/output.h"
#include "probe/probe.h"
#include "tokenize/tokenize.h"

/* ------------------------------------------------------------------------ */
/* Prompt sets (experiments/prompts.c): the input of patch, ablate, dla, lens and  */
/* heads                                                                     */
/*
 * A prompt set is a JSONL file, one object a line (blank lines skipped):
 *   {"prompt": "the animal ...", "corrupted": "the animal ...",
 *    "answer": "animal", "wrong": "street", "position": 14}
 *   prompt     the clean sentence (tokenised as hs_tok_encode; required);
 *   corrupted  its corrupted partner, the same number of tokens (optional;
 *              present on every line or on none);
 *   answer     one token of the model's vocabulary: the right next token at
 *              `position` (required unless HS_PROMPTS_TEXT_ONLY); for a
 *              word vocabulary the word itself, for a BPE a string that
 *              encodes to exactly one token (GPT-2: " Mary" with its
 *              leading space, as the token follows a space; "Mary" is
 *              another token);
 *   wrong      one token, read as answer is: the competing answer of the
 *              logit difference answer - wrong (optional; on every line or
 *              on none);
 *   position   where the prediction is read, 0..t-1 (default t-1, the last).
 * Every prompt of a set has the same number of tokens t (the engine runs
 * them as one batch). Any other key is refused (a typo would otherwise be
 * silently ignored).
 * Errors (HS_ERR_INPUT, one line "FILE:LINE: problem"): not JSON / not an
 * object, a missing or non-string field, an unknown key, an unknown word
 * (hs_tok_encode's message), answer/wrong not one token of the vocabulary
 * (a word vocabulary: "F:L: answer 'W' is not a token of the model's
 * vocabulary (N words)"; a BPE: "F:L: answer ' Marianne' is 2 tokens (' Mar'
 * 'ianne'); answer and wrong must be one token", the exact token strings),
 * corrupted of another length than prompt ("F:L: the corrupted prompt has
 * N tokens but the prompt has M; ..."), a prompt of another length than
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
    int unspaced_line; /* a BPE's first line whose answer has no leading space while
                          the spaced form is one token too ("Mary" where GPT-2 predicts
                          " Mary" after a word), 0 for none: worth a note */
    int unspaced_id, spaced_id; /* that answer's token and the spaced form's */
} hs_prompts;

#define HS_PROMPTS_TEXT_ONLY 1 /* flags: "answer" optional (heads, lens) */

/* Reads and checks the prompt set at path against vocabulary v (n_ctx:
 * longest prompt allowed, 0 = no limit); fills *out (caller frees with
 * hs_prompts_free, also after a failure). Errors above. */
hs_status hs_prompts_load(const char *path, const hs_tokenizer *v, int n_ctx, int flags,
                          hs_prompts *out, hs_error *err);
/* The same from text (len bytes); `name` stands for the file in messages. */
hs_status hs_prompts_parse(const char *text, size_t len, const char *name, const hs_tokenizer *v,
                           int n_ctx, int flags, hs_prompts *out, hs_error *err);
/* One sentence as a set of one prompt (position: the last token). */
hs_status hs_prompts_sentence(const char *sentence, const hs_tokenizer *v, int n_ctx, hs_prompts *out,
                              hs_error *err);
void hs_prompts_free(hs_prompts *p);

/* ------------------------------------------------------------------------ */
/* Head detectors (experiments/heads.c; `headscope heads`)                  */

/* Head detectors of hs_heads_run, in this order. */
typedef enum {
    HS_HEADS_PREV_TOKEN = 0, /* D[i,i-1] = 1 (TL previous_token_head) */
    HS_HEADS_DUPLICATE,      /* D[i,j] = 1 iff j < i, tok[j] = tok[i] (TL duplicate_token_head) */
    HS_HEADS_INDUCTION,      /* D[i,j] = 1 iff 1 <= j <= i, tok[j-1] = tok[i] (TL induction_head) */
    HS_HEADS_FIRST_NOUN,     /* D[i,j*] = 1 for i >= j*, j* the first noun of the row (nouns: the
                              * caller's noun words found in the vocabulary, e.g. the Winograd
                              * task's); rows without one: 0 */
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
    char first_noun_why[96];   /* why first-noun was not computed (has[HS_HEADS_FIRST_NOUN] 0) */
} hs_heads_report;

/*
 * Every head's detector scores over the prompts p (their "prompt" tokens):
 * previous-token, duplicate-token, induction always; first-noun when the
 * vocabulary holds at least one of the n_noun_words words nouns[] (a task's
 * nouns; NULL, 0 for none) as one token (a BPE: after a space, " animal", as
 * the noun stands inside a sentence) and at least one prompt holds one (else
 * first_noun_why says which); target when target (t, t)
 * [dest, src], lower-triangular, is given. metric, exclude_bos and
 * exclude_current as TL detect_head (probe.h hs_detector_score*). The
 * engine runs on pool (NULL = the caller's thread); the scores are
 * bit-identical for every thread count. HS_ERR_INPUT when p is empty or
 * the model has more than 64 heads a layer.
 */
hs_status hs_heads_run(const hs_model *m, const hs_tokenizer *v, hs_pool *pool, const hs_prompts *p,
                       const char *const *nouns, int n_noun_words, const float *target,
                       hs_detect_metric metric, int exclude_bos,
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

/* Activation patching (experiments/patch.c, its report patch_report.c; TL patching.py get_act_patch_*). The
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
/* How the cells are computed: the exact sweep (one patched run per cell),
 * attribution patching (AtP, hs_atp_run_tokens: a first-order estimate from
 * two forwards and one backward), or both side by side. */
typedef enum { HS_PATCH_EXACT = 0, HS_PATCH_ATP, HS_PATCH_BOTH, HS_PATCH_METHOD_N } hs_patch_method;
/* "exact", "atp", "both". */
extern const char *const hs_patch_method_names[HS_PATCH_METHOD_N];
/* The method named s, or -1. */
int hs_patch_method_parse(const char *s);

typedef struct {
    int L, H, n, t;
    unsigned acts;
    double ld_clean, ld_corr;
    double *metric[HS_PATCH_N], *ld[HS_PATCH_N];
    double *metric_pos[HS_PATCH_N], *ld_pos[HS_PATCH_N];
    /* method EXACT (0, what hs_patch_run_tokens fills): the arrays above are
     * the exact sweep's; ATP: they hold AtP's estimates (ld = LD_corr +
     * estimate); BOTH: they are the exact sweep's and atp_metric[a],
     * atp_metric_pos[a] AtP's normalised estimates (shapes of metric[a],
     * metric_pos[a]), pearson[a] Pearson's r between the exact and the AtP
     * cells of metric[a] (pearson_pos[a]: of metric_pos[a], head acts),
     * NAN where undefined (a constant or NAN cell, one cell) */
    hs_patch_method method;
    /* which cells of the head acts (z, q, k, v, pattern) were made
     * (hs_patch_by): BOTH fills metric/ld and metric_pos/ld_pos; HEAD leaves
     * metric_pos[a], ld_pos[a] NULL; HEAD_POS leaves metric[a], ld[a] NULL
     * (for head acts; layer acts always have metric, ld) */
    int by;
    double *atp_metric[HS_PATCH_N], *atp_metric_pos[HS_PATCH_N];
    double pearson[HS_PATCH_N], pearson_pos[HS_PATCH_N];
} hs_patch_report;

/* Patches the clean prompts' activations into the corrupted prompts of p
 * (which must have "corrupted", "answer" and "wrong"), one sweep over the set
 * per cell, on pool. acts: bits of hs_patch_act. HS_ERR_INPUT when p lacks
 * them or the model does not produce an act (mlp_out with d_mlp 0, q/k with
 * uniform attention). Free out with hs_patch_report_free. z's all-position
 * cells run the positions from the pairs' first difference on when every
 * prompt reads there or later (hs_forward_suffix): equal to the full patched
 * forward's to float32 rounding; every cell is the same for any thread count
 * and, when every pair first differs at the same position, equals the set's
 * prompts run one at a time (summed in order). */
hs_status hs_patch_run(const hs_model *m, hs_pool *pool, const hs_prompts *p, unsigned acts,
                       hs_patch_report *out, hs_error *err);
/* The same on token arrays: src (n, t) the runs patched from, dst (n, t) the
 * runs patched into; answer, wrong, pos (n). */
hs_status hs_patch_run_tokens(const hs_model *m, hs_pool *pool, const int *src, const int *dst, int n, int t,
                              const int *answer, const int *wrong, const int *pos, unsigned acts,
                              hs_patch_report *out, hs_error *err);
/* hs_patch_run with the method: EXACT is hs_patch_run, ATP hs_atp_run_tokens
 * ("Attribution" below), BOTH both and their Pearson correlations
 * (the report's comment). Errors of the two. */
hs_status hs_patch_run_method(const hs_model *m, hs_pool *pool, const hs_prompts *p, unsigned acts,
                              hs_patch_method method, hs_patch_report *out, hs_error *err);
/* The cells of a head act an exact sweep makes: the head at every position
 * at once (TL get_act_patch_attn_head_out_all_pos), the head at each
 * position (get_act_patch_attn_head_out_by_pos), or both (the default). */
typedef enum { HS_PATCH_BY_BOTH = 0, HS_PATCH_BY_HEAD = 1, HS_PATCH_BY_HEAD_POS = 2 } hs_patch_by;
/* patch's --by: "head" -> HEAD, "head,position" -> HEAD_POS, "both" ->
 * BOTH; -1 for anything else. */
int hs_patch_by_parse(const char *s);
/* hs_patch_run_method with the cells `by` (HS_PATCH_BY_BOTH is
 * hs_patch_run_method). by other than BOTH with method ATP or BOTH:
 * HS_ERR_INPUT (AtP estimates every cell at once). */
hs_status hs_patch_run_by(const hs_model *m, hs_pool *pool, const hs_prompts *p, unsigned acts,
                          hs_patch_method method, hs_patch_by by, hs_patch_report *out, hs_error *err);
/* hs_patch_run_tokens with the cells `by`. */
hs_status hs_patch_run_tokens_by(const hs_model *m, hs_pool *pool, const int *src, const int *dst, int n, int t,
                                 const int *answer, const int *wrong, const int *pos, unsigned acts,
                                 hs_patch_by by, hs_patch_report *out, hs_error *err);
void hs_patch_report_free(hs_patch_report *r);
/* As JSON ({"ld_clean", "ld_corrupted", "prompts", "tokens", "metric":
 * "normalised logit difference ...", "acts": {name: {"by": "layer x
 * position" | "head", "metric": [[...]], "ld": [[...]], and for heads
 * "metric_by_position": [[[...]]], "ld_by_position"}}}); method ATP adds
 * "method": "atp" and says in "metric" that the values are AtP's estimates;
 * BOTH adds "method": "both" and per act "atp_metric" (and for heads
 * "atp_metric_by_position", "pearson_by_position") and "pearson" (null when
 * undefined). Caller frees with cJSON_Delete; NULL when memory ran out. */
cJSON *hs_patch_json(const hs_patch_report *r);
/* The text summary appended to b (BOTH: each act's exact table, then its
 * AtP table and Pearson's r). */
void hs_patch_summary(const hs_patch_report *r, hs_buf *b);
/* The logit lens (experiments/lens.c): the model's output head
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
cJSON *hs_lens_json(const hs_lens_report *r, const hs_tokenizer *v);
/* The text summary appended to b. */
void hs_lens_summary(const hs_lens_report *r, const hs_tokenizer *v, hs_buf *b);

/* Ablation over a prompt set (experiments/ablate.c): each head
 * (blocks.l.attn.hook_z[:, :, h, :]), each layer's attention
 * (blocks.l.hook_attn_out, as TransformerLens names it: the heads' results
 * and b_O; zero ablation sets it to 0, b_O included) and each MLP (blocks.l.hook_mlp_out) replaced, one at a time, by zero, by
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
/* "L0H1", "L0_attn_out", "L0_mlp_out" into buf: the components' names in
 * every figure and JSON (hs_resid_decompose's style, TransformerLens'
 * decompose_resid with the layer prefixed). */
void hs_ablate_comp_name(const hs_ablate_comp *c, char *buf, size_t cap);
/* As JSON (caller frees with cJSON_Delete; NULL on OOM) and as text (appended to b). */
cJSON *hs_ablate_json(const hs_ablate_report *r);
void hs_ablate_summary(const hs_ablate_report *r, hs_buf *b);

/* Direct logit attribution over a prompt set (experiments/dla_set.c;
 * hs_logit_attribution per prompt, final norm frozen): each component's
 * attribution towards answer - wrong (or the answer) at each prompt's
 * position, averaged over the prompts in order. */
typedef struct {
    int n, n_comp, has_wrong;
    char (*labels)[24];  /* (n_comp) hs_resid_decompose's labels ("embed", "L0H1", "L0 mlp", ...) */
    double *attr;        /* (n_comp) mean attribution, logits */
    double constant;     /* mean final-norm bias term */
    double unembed_bias; /* mean b_U[answer] - b_U[wrong] (or b_U[answer]) */
    double target;       /* mean logit (or LD): sum attr + constant + unembed_bias = target */
    int t;               /* tokens per prompt */
    double *attr_pos;    /* (n_comp, t) with by_position, else NULL: see hs_dla_set_run */
    const char *weights; /* the model's weights, "raw" or "tl-processed" (hs_model_weights_name) */
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

/* ------------------------------------------------------------------------ */
/* One sentence, every head (experiments/inspect.c, inspect_figs.c;          */
/* `headscope inspect`)                                                      */
/*
 * Runs the model on one sentence (or a pair of the same length) and writes,
 * into an output folder (output.h's policy): the layers x heads grid of
 * attention patterns (attention_grid; with only, a grid of just those heads),
 * the query position's row of every head (query_row), one figure per head
 * (L<l>H<h>) and per layer mean (L<l>_mean), for a pair pair_* (both
 * sentences on one scale) and diff_* (B - A, titled by the words that differ:
 * "wet − tired"; every difference of the run on one symmetric scale, its
 * "colour_scale" in the JSON) per layer mean and per `only` head, each component's direct logit attribution to the predicted token
 * (dla; with vs, dla_vs for the logit difference), the top predictions
 * (predictions.json) and index.json. Every JSON carries the model path and
 * config, the sentence, its token ids and the query position. Writes
 * through output/ (its folder policy and figure options).
 */
typedef struct {
    const char *model_path;    /* recorded in every JSON ("model"); never replaced in out_dir */
    const char *sentence;      /* sentence A (required) */
    const char *sentence2;     /* sentence B of a pair (same number of tokens), or NULL */
    const char *out_dir;       /* the output folder (created if missing; its parent must exist) */
    int has_position;          /* 0: the query position is the last token */
    long position;             /* with has_position: 0..T-1, or -1..-T from the end */
    const char *position_text; /* position as the user typed it, for the message refusing it
                                * (NULL: the number) */
    const char *vs;            /* one vocabulary word: also attribute predicted - vs; or NULL */
    const hs_head *only;       /* n_only heads (in this order), or NULL for every head */
    int n_only;
    const char *only_text;     /* only as the user typed it, for index.json (NULL: "L1H0,L0H1") */
    int top;                   /* predictions reported (clamped to 1..min(V, 4096)) */
    long crop_a, crop_b;       /* attention figures show positions crop_a:crop_b, a Python
                                * slice: half-open, negative = from the end, clamped to the
                                * sentence; HS_INSPECT_OPEN = an open end (both: all) */
    const char *title;         /* the main figure's (attention_grid's) title, or NULL */
    int no_title;              /* 1: no titles at all */
    int head_rows;             /* 1: the report's rows go on with one row per head */
    double diff_max;           /* a pair's differences' colour scale [-diff_max, diff_max] (> 0),
                                * whatever vmin/vmax/range say; 0: one scale shared by every
                                * difference of the run, their largest |B - A| rounded up to a
                                * multiple of 0.05 (per figure only under an explicit range auto) */
    int all_heads;             /* 1: one figure per head (L<l>H<h>) whatever the model's size;
                                * 0: per head only when the model has at most
                                * HS_INSPECT_PER_HEAD_MAX heads in all or for only's heads */
} hs_inspect_opts;

/* The most heads in all (layers x heads) a model may have for inspect to
 * write one figure per head by default: the default model (2 x 4) and toys up
 * to 16 keep them; GPT-2 small (144) gets the grid, the layer means, the
 * query row and the page, and per-head files for --only's heads or with
 * all_heads (432 files of one sentence are not what a researcher reads). */
#define HS_INSPECT_PER_HEAD_MAX 16

/* crop_a / crop_b: that end of the slice is open (":5", "8:"). */
#define HS_INSPECT_OPEN LONG_MIN

/* Defaults: no sentence, out_dir "inspect-out", the last position, top 5, no
 * crop, every head, titles on, layer rows only. */
void hs_inspect_opts_default(hs_inspect_opts *o);

/* What a run found, for the caller to show (the CLI prints it). Free with
 * hs_inspect_report_free. */
typedef struct {
    int n_tokens;        /* T: tokens of sentence A */
    char **labels;       /* [T] each token as a figure or a terminal shows it (hs_tok_display) */
    int pos;             /* the query position, 0..T-1 */
    int n_rows, n_cols;  /* the chapter's rows: n_cols = pos + 1 sources */
    float *rows;         /* [n_rows, n_cols] attention from pos to sources 0..pos: one row per
                          * layer, head-averaged, then with head_rows one per head (only's in
                          * its order, else every head) */
    char **row_labels;   /* [n_rows] "L0", ..., then "L0H1", ... */
    float *rows2;        /* [n_rows, n_cols] the same rows of sentence B, or NULL alone */
    char **labels2;      /* [T] sentence B's tokens as rows show them, or NULL alone */
    char *name_a, *name_b; /* a pair's names by the words where they differ ("tired", "wet") */
    int n_top;           /* predictions at pos (of each sentence) */
    int *top_ids;        /* [n_top] token ids by falling logit (hs_top_k) */
    double *top_probs;   /* [n_top] their softmax probabilities */
    int *top_ids2; double *top_probs2; /* [n_top] sentence B's, or NULL alone */
    int vs_id;           /* vs's token id, or -1 */
    double logit_diff;   /* logit(top_ids[0]) - logit(vs_id) at pos when vs_id >= 0 */
    int n_files;         /* files the folder's index.json lists (itself included) */
} hs_inspect_report;

/*
 * One inspect run of m on o's sentence(s), tokenized by tok, its figures
 * drawn with fo (formats, sizes, font) on pool (NULL: the caller's thread).
 * fo's font may have been started with hs_figopts_font_start on pool: it is
 * collected (hs_figopts_font_wait) after the run, so it opens while the
 * model runs. Checks, in this order, each refused with HS_ERR_INPUT (or the
 * tokenizer's error) before anything is created: a head of only outside the
 * model ("head L5H0 is not in the model (2 layers x 4 heads: L0H0..L1H3)"),
 * more only heads than a figure holds, sentence A (hs_tok_encode's
 * messages), sentence B ("second --sentence: ..."; "the two sentences have N
 * and M tokens; ..."), the crop ("--positions A:B selects no position of
 * the sentence's T tokens (0..T-1)"), the position ("--position P is outside ..."), vs
 * ("--vs: ..."; "--vs takes one word of the vocabulary, not N ('...')", for a
 * BPE "one token", N without the BOS; vs is encoded as text, the BOS left
 * out); then
 * the run (a non-finite logit at pos: HS_ERR_NUMERIC, "the logit of 'W' at
 * position P is +inf: the weights overflow float32"), the font, and only then
 * opens o->out_dir (hs_outdir_open's errors), writes every file and commits
 * the folder (a failed run leaves it as it was). Notes (HS_NOTE_CMD, the
 * moment they are known): the sentence folded to lower case, a figure over
 * the caps or wider than the auto width allows ("...; writing its JSON
 * only"), vs being the predicted token, and the folder's own notes. Fills
 * *out (zeroed first; free it also after a failure).
 */
hs_status hs_inspect_run(const hs_model *m, const hs_tokenizer *tok, const hs_inspect_opts *o,
                         hs_figopts *fo, hs_pool *pool, const hs_notes *notes,
                         hs_inspect_report *out, hs_error *err);
/* Frees what a report holds and zeroes it; NULL and zeroed reports allowed. */
void hs_inspect_report_free(hs_inspect_report *r);

/* ------------------------------------------------------------------------ */
/* Figures of the experiments (experiments/figures.c) and what the weights   */
/* say (experiments/weights_run.c; `headscope weights`)                      */
/*
 * These write into an output folder (output/output.h: hs_outdir_open, the
 * figure formats of hs_figopts, hs_outdir_commit); they add output/ and viz/
 * to what this module calls. Every figure JSON they write holds the run's
 * context: {"config": the model's config (HS_CONFIG_JSON_ALL), "model": its
 * path}. Labels count layers, heads and positions from 0 ("L0H1", "3 x").
 */
/* {"config": cfg as JSON (hs_config_to_json, HS_CONFIG_JSON_ALL), "model":
 * model_path (left out when NULL)}: what every figure JSON of a run over a
 * model says about it (hs_outdir.context). Caller frees with cJSON_Delete;
 * NULL when memory ran out. */
cJSON *hs_run_context(const hs_config *cfg, const char *model_path);

/*
 * The figures of an experiment's report into od (opened by the caller, who
 * then writes the report's JSON and commits): hs_outdir_matrix in the
 * formats od->fo chooses, with hs_run_context(cfg, model_path) as od's
 * context while they are written (od->context is restored after). A figure
 * over viz's caps gets its JSON only, with a note to od's notes. Errors:
 * hs_outdir_matrix's (HS_ERR_IO naming the file, HS_ERR_NOMEM).
 *
 * hs_heads_figures: heads_<detector> for every detector computed, [L, H]
 *   layers x heads (mul: [0, 1]; abs: signed, its own range).
 * hs_patch_figures: patch_<act> per act, [L, t] layer x position or [L, H]
 *   layer x head; for head acts also patch_<act>_by_position [L*H, t];
 *   positions labelled with the first prompt of p's tokens (tok's strings);
 *   the values are r->metric (method ATP: AtP's estimates, titled so; BOTH:
 *   the exact sweep's). When the report is not usable (hs_patch_usable) none
 *   is drawn: a note to od's notes says why; when its gap deserves a word
 *   (hs_patch_gap_note: clean LD below corrupted, or a gap under
 *   HS_PATCH_GAP_MIN) each figure says so in one line under its title.
 * hs_lens_figures: lens_final [n_points, t]: the probability each lens point
 *   gives to the model's final prediction; positions as patch's.
 * hs_ablate_figures: ablate_change, bars [n_comp]: the metric's change when
 *   each component is ablated.
 * hs_dla_set_figures: dla_bars, bars [n_comp (+ the norm's bias term when
 *   finite)]; with attr_pos also dla_by_position [n_comp, t].
 */
hs_status hs_heads_figures(const hs_heads_report *r, const hs_config *cfg, const char *model_path,
                           hs_outdir *od, hs_error *err);
hs_status hs_patch_figures(const hs_patch_report *r, const hs_prompts *p, const hs_tokenizer *tok,
                           const hs_config *cfg, const char *model_path, hs_outdir *od,
                           hs_error *err);
hs_status hs_lens_figures(const hs_lens_report *r, const hs_prompts *p, const hs_tokenizer *tok,
                          const hs_config *cfg, const char *model_path, hs_outdir *od,
                          hs_error *err);
hs_status hs_ablate_figures(const hs_ablate_report *r, const hs_config *cfg, const char *model_path,
                            hs_outdir *od, hs_error *err);
hs_status hs_dla_set_figures(const hs_dla_set *r, const hs_config *cfg, const char *model_path,
                             hs_outdir *od, hs_error *err);

/*
 * What the weights say, without running a sentence (`headscope weights`):
 * into the folder o->out (hs_outdir_open's policy; index.json's command
 * "weights"), from the probe's maths (probe.h section 6) under o->fold:
 *   L<l>H<h>_QK      full QK circuit W_E W_QK W_E^T [V, V] [query token, key
 *                    token] (hs_full_QK_tokens; not for uniform attention), for
 *                    o->only's heads (in its order), every head under
 *                    o->all_heads or of a model of at most
 *                    HS_INSPECT_PER_HEAD_MAX heads, else none (with a note);
 *   L<l>H<h>_OV      full OV circuit W_E W_OV W_U [V, V] [attended token,
 *                    output logit] (hs_full_OV_tokens), with its copying score
 *                    (over the whole vocabulary: a [d_head, d_head] product);
 *                    both restricted to n tokens [n, n] with o->tokens_path or
 *                    o->top_tokens (their JSON then has "token_ids" and
 *                    "tokens", the exact strings; labels are display forms),
 *                    which a vocabulary over HS_WEIGHTS_MAX_VOCAB needs when a
 *                    head has files: without either, HS_ERR_INPUT "the vocabulary
 *                    has V tokens: the full QK and OV circuits over it would be
 *                    X GB a head; give --tokens FILE ... or --top-tokens N ...",
 *                    before anything is computed; a tokens file is refused naming
 *                    its line ("FILE:L: ' Marianne' is 2 tokens (' Marian' 'ne');
 *                    --tokens takes one token a line", empty, repeated, too many);
 *   virtual_weights  Frobenius norms of W_O^A W_X^B [(L-1)*H, 3*(L-1)*H],
 *                    sender A (layers 0..L-2) x receiver B (layers 1..L-1) and
 *                    X = Q, K, V (columns B.Q, B.K, B.V); pairs with B not in
 *                    a later layer are masked (null); the JSON's "products"
 *                    holds every [d_head, d_head] product (hs_head_product) up
 *                    to HS_WEIGHTS_MAX_PRODUCT_VALUES numbers (else none, noted);
 *   composition_Q/K/V  hs_composition_scores (o->comp_draws, seed 0) minus
 *                    the random baseline [L*H, L*H] (sender, receiver); the
 *                    JSON's "scores" the raw scores, null where not reported;
 *   copying          each head's eigenvalue copying score, bars [L*H]
 *                    (hs_copying_score; "positive_fraction" in its JSON).
 * One layer: no virtual weights or composition; uniform attention: no QK
 * circuit and only V products and composition. Signed figures of a kind share
 * one colour limit (the largest |value|; the range options of fo apply).
 * Every number is computed before the folder is opened (a failed computation
 * leaves no folder). fo: the formats and figure options (its font is opened
 * here); pool: where figures are drawn (may be NULL). Notes (HS_NOTE_CMD) go
 * to notes: "note: MODEL has no vocabulary; tokens are labelled by id ..."
 * when o->vocab_is_ids, a figure over viz's cap written as JSON only, and
 * the output folder's. Errors: the probe's, hs_figopts_font_open's, the
 * output folder's (HS_ERR_INPUT, HS_ERR_IO), HS_ERR_NOMEM. out is filled as
 * the run goes (free it with hs_weights_report_free also after a failure:
 * skip_* then say what the run had got past).
 */
typedef struct {
    const char *model_path; /* the checkpoint: in every JSON ("model"), and an input (may be NULL) */
    const char *out;        /* the output folder */
    const hs_head *only;    /* n_only heads whose full circuits get files (each once), or NULL */
    int n_only, all_heads;  /* all_heads 1: every head's files, whatever the model's size */
    hs_fold fold;           /* HS_FOLD_LN (default) or HS_FOLD_NONE */
    int comp_draws;         /* random pairs of the composition baseline, 2..100000 */
    int vocab_is_ids;       /* 1: tok labels tokens by id (hs_tokenizer_ids): said in a note */
    const char *tokens_path; /* the full circuits over these tokens only, one a line (hs_tok_one;
                              * " Mary"), at most HS_WEIGHTS_MAX_TOKENS, no repeats; or NULL */
    int top_tokens;         /* or over the N tokens of largest ||W_E[t]||_2 (largest first,
                             * ties by id), 1..HS_WEIGHTS_MAX_TOKENS; 0: not */
} hs_weights_opts;

/* The largest vocabulary whose full circuits are computed whole without
 * tokens_path or top_tokens, and the most tokens either may give. */
#define HS_WEIGHTS_MAX_VOCAB 1024
#define HS_WEIGHTS_MAX_TOKENS 1024
/* The most numbers virtual_weights' JSON lists under "products" (every
 * [d_head, d_head] product); above it (GPT-2 small: 214 million) the JSON
 * holds the norms only and a note says so. */
#define HS_WEIGHTS_MAX_PRODUCT_VALUES (1 << 22)

/* out "weights-out", HS_FOLD_LN, HS_COMP_DRAWS draws, no model path, no only. */
hs_weights_opts hs_weights_opts_default(void);

typedef struct {
    int L, H;               /* layers, heads a layer */
    int uniform;            /* uniform attention: no QK circuits, Q/K products or composition */
    double *copying;        /* (L*H) copying score of head l*H + h, in [-1, 1] */
    double *copying_pos;    /* (L*H) share of nonzero eigenvalues with a positive real part */
    hs_comp_scores comp;    /* every pair (hs_composition_scores under o->fold; NAN where not
                             * reported: every pair with one layer) */
    int comp_best[3];       /* [HS_COMP_Q/K/V]: sender * (L*H) + receiver of the highest
                             * finite score, -1 when none (or not computed) */
    int n_files;            /* files the folder's index.json lists */
    int n_tokens;           /* tokens of the full circuits (V, or the subset's) */
    int skip_cross_layer;   /* the run passed the cross-layer figures, skipped (one layer) */
    int skip_qk;            /* the run passed every figure of Q/K, skipped (uniform attention) */
} hs_weights_report;

/* (pool, may be NULL: runs the heads, head pairs, draws and figures; carries
 * the progress, an hs_pool_progress phase for each loop over heads or pairs.) */
hs_status hs_weights_run(const hs_model *m, const hs_tokenizer *tok, const hs_weights_opts *o,
                         hs_figopts *fo, hs_pool *pool, const hs_notes *notes,
                         hs_weights_report *out, hs_error *err);
/* Frees out's arrays and zeroes it (a zeroed report is fine). */
void hs_weights_report_free(hs_weights_report *r);

/* ------------------------------------------------------------------------ */
/* Metrics (experiments/metric.c): what circuit discovery reads from logits  */
/*
 * A prompt's metric from its logits row z [V] at its read position:
 *   logit-diff  z[answer] - z[wrong]                       (IOI; Wang et al. 2022)
 *   prob-diff   p[answer] - p[wrong], p = softmax(z)       (greater-than; Hanna et al. 2023)
 *   kl          KL(P_ref || P) = sum_i p_ref,i (log p_ref,i - log p_i), P_ref the
 *               clean model's distribution at that position (ACDC, Conmy et al.
 *               2023, sec. 3: the circuit's divergence from the model)
 * A set's metric is the mean over its prompts. Computed in double. The
 * gradient with respect to z: logit-diff +1 at answer, -1 at wrong;
 * prob-diff p_a (delta_ai - p_i) - p_w (delta_wi - p_i); kl p_i - p_ref,i.
 */
typedef enum { HS_METRIC_LOGIT_DIFF = 0, HS_METRIC_PROB_DIFF, HS_METRIC_KL, HS_METRIC_N } hs_metric_kind;
/* "logit-diff", "prob-diff", "kl". */
extern const char *const hs_metric_names[HS_METRIC_N];
/* The metric named s, or -1. */
int hs_metric_parse(const char *s);
/* One prompt's metric. logits [V]; ref [V] the clean logits (kl only, else
 * may be NULL); scratch [2 V] doubles. answer, wrong in [0, V). */
double hs_metric_value(hs_metric_kind k, const float *logits, int V, int answer, int wrong,
                       const float *ref, double *scratch);
/* Its gradient with respect to logits into g [V] (same arguments). */
void hs_metric_grad(hs_metric_kind k, const float *logits, int V, int answer, int wrong,
                    const float *ref, double *scratch, float *g);

/* ------------------------------------------------------------------------ */
/* Attribution patching (experiments/atp.c, gradients.c): first-order     */
/* estimates from gradients                                                  */
/*
 * The gradients at the activations are the model's own backward
 * (hs_backward_acts, model.h), in float; every run goes chunk by chunk
 * (HS_ENGINE_CHUNK prompts) on the experiment engine (probe.h section 8)
 * and its sums over prompts are made in double in row or chunk order, so
 * every number is bit-identical for any thread count.
 *
 * Attribution patching, AtP (Nanda 2023, "Attribution patching: activation
 * patching at industrial scale"; Kramar et al. 2024, "AtP*", section 2): the
 * effect of writing run s's value of an activation a into run d is, to
 * first order around d,
 *   m(d with a <- a_s) - m(d)  ~  (a_s - a_d) . dm/da at d.
 * `patch` writes the CLEAN value into the CORRUPTED run (s = clean, d =
 * corrupted, m = LD = logit(answer) - logit(wrong)), so the AtP of a patch
 * cell is (a_clean - a_corr) . dLD/da with the gradient taken at the
 * CORRUPTED run: the expansion is made around the run the exact cell starts
 * from and changes. (Nanda's and Kramar's estimates of the effect of
 * corrupting a clean run take it at the clean run: the other direction.)
 * The dot runs over the cell's slice (a head's, a position's), summed over
 * its positions, averaged over the prompts and normalised as patch's cells:
 * estimate / (LD_clean - LD_corr).
 *
 */

/* AtP over token arrays as hs_patch_run_tokens (same arguments, checks and
 * errors): out gets the same arrays with method HS_PATCH_ATP, ld[a] =
 * LD_corr + estimate, metric[a] = estimate / (LD_clean - LD_corr) (NAN when
 * they are equal); a head's all-positions cell is the sum of its
 * by-position cells (the estimate is linear in what is patched); ld_clean,
 * ld_corr as patch's (the same bits). One clean forward and one corrupted
 * forward and backward per chunk. Free out with hs_patch_report_free. */
hs_status hs_atp_run_tokens(const hs_model *m, hs_pool *pool, const int *src, const int *dst, int n, int t,
                            const int *answer, const int *wrong, const int *pos, unsigned acts,
                            hs_patch_report *out, hs_error *err);

/* The gradient of a metric at each prompt's read position, for a chunk of
 * prompts on one engine worker (experiments/gradients.c; AtP here, EAP and
 * EAP-IG in discovery/): one worker's backward resources, every forward of a
 * chunk run on acts (the engine's own activations, which have no backward
 * scratch, stay untouched). */
typedef struct {
    hs_acts *acts;     /* (HS_ENGINE_CHUNK, t), with backward scratch (hs_backward_acts) */
    float *dlogits;    /* (HS_ENGINE_CHUNK, t, V), zero but the rows a step writes */
    double *scratch;   /* (2 V) hs_metric_grad's */
} hs_attr_worker;

/* One hs_attr_worker per engine worker of e: *w (e->n_workers) calloc'd,
 * free with hs_attr_workers_free (also after a failure). HS_ERR_NOMEM and
 * hs_acts_create's errors. */
hs_status hs_attr_workers_init(const hs_engine *e, hs_attr_worker **w, hs_error *err);
void hs_attr_workers_free(hs_attr_worker *w, int n);

/* The gradient of metric k at each of the first b rows of a chunk whose
 * logits (HS_ENGINE_CHUNK, t, V) the last forward on w->acts left: row i's
 * logits at pos[i] against answer[i], wrong[i] (ref: (b, V) the reference
 * rows, kl only, else NULL), written into w->dlogits at those rows; then
 * hs_backward_acts with grad_obs, then those rows zeroed again. Errors of
 * hs_backward_acts. */
hs_status hs_attr_backward(const hs_model *m, hs_attr_worker *w, hs_metric_kind k, int b, int t,
                           const int *pos, const int *answer, const int *wrong, const float *ref,
                           const hs_observer *grad_obs, hs_error *err);

/* ------------------------------------------------------------------------ */
/* The activation cache as a file (experiments/cache.c; `headscope cache`)  */

/* What hs_cache_run caches and where it goes. */
typedef struct {
    const char *sentence;      /* one sentence (batch 1), or NULL when data_path is given */
    const char *data_path;     /* a prompt set (its "prompt"s, hs_prompts_load with
                                * HS_PROMPTS_TEXT_ONLY: every prompt the same length), or NULL */
    const char *const *names;  /* hook-name patterns (hs_name_match: '*' within a dotted
                                * segment, '**' across); NULL or n_names 0 = every point */
    int n_names;
    const char *out_path;      /* the .safetensors file written */
    int force;                 /* 1: out_path may be replaced if it is a cache headscope wrote,
                                * unchanged since (never any other file) */
    const char *model_path;    /* recorded in the file's metadata ("" when NULL) */
} hs_cache_opts;

/* What hs_cache_run wrote. */
typedef struct {
    int batch, pos;            /* prompts (the tensors' first dimension) and tokens a prompt */
    int n_tensors;             /* tensors in the file (hook_tokens included) */
    size_t floats;             /* float32 values written, over every tensor */
    int replaced;              /* 1: an earlier cache at out_path was replaced (force) */
} hs_cache_report;

/*
 * TransformerLens' run_with_cache as a file: runs m on the sentence (batch
 * 1) or the prompt set (batch n) and writes every hook point whose name
 * matches one of o->names, plus hook_tokens (the token ids [batch, pos] as
 * float32, exact below 2^24), into one safetensors file (hs_cache_save):
 * tensor names are the hook names of docs/HOOKS.md in forward order, shapes
 * are TL's batched ones ([batch, pos, ...], hook_pattern [batch, head, dest,
 * src]), float32 little-endian; the causal mask's -inf in hook_attn_scores is
 * written as -FLT_MAX (-3.4028235e38; the softmax weight is 0 either way).
 * __metadata__ holds "generator" ("headscope <version> cache"), "model",
 * "batch", "pos" and "data_fnv1a64" (FNV-1a 64 of the data section, 16 hex
 * digits: how a later run with force knows the file is unchanged). The
 * prompts run on the experiment engine (probe.h section 8) in chunks of
 * HS_ENGINE_CHUNK on pool (NULL = this thread): the file is the same for any
 * thread count, and each prompt's values are those a run of it alone gives.
 * The file is written atomically (a failed run leaves out_path as it was).
 * Errors: HS_ERR_INPUT for neither or both of sentence and data_path, a
 * pattern matching no hook point ("cache filter 'P' matches no hook point of
 * this model ..."), out_path existing without force ("--out F already exists;
 * use --force to replace it") or, with force, not a cache headscope wrote
 * or changed since ("--out F is not an activation cache headscope wrote, or
 * it changed since; refusing to replace it"); the prompt set's and the
 * tokenizer's errors (hs_prompts_load); HS_ERR_IO, HS_ERR_NOMEM. notes (may
 * be NULL) hears of a replaced file. *out is zeroed first.
 */
hs_status hs_cache_run(const hs_model *m, const hs_tokenizer *v, hs_pool *pool, const hs_cache_opts *o,
                       const hs_notes *notes, hs_cache_report *out, hs_error *err);

/*
 * 1 when r's normalised LD is usable: LD_clean and LD_corr finite and
 * different, and their gap not small against the patched cells: the
 * spread (max - min) of every computed cell's raw LD (ld[a], ld_pos[a]) at
 * most HS_PATCH_GAP_SPREAD times |LD_clean - LD_corr| (cells between the two
 * ends spread over the gap; a set whose cells move the LD by far more than
 * the gap gives normalised values that are noise over a small divisor). 0
 * when they coincide (the metric divides by LD_clean - LD_corr = 0: every
 * cell is NAN) or the gap is that small, with why (cap bytes, one line
 * without "not usable: ") saying so and naming the LDs. The JSON (hs_patch_json) says
 * "usable" (and "why_not_usable" when not), the summary says "not usable:
 * why" in one line instead of the tables, and hs_patch_figures draws none.
 * README ("A figure whose numbers are not usable says so ... not NaN").
 */
int hs_patch_usable(const hs_patch_report *r, char *why, size_t cap);
#define HS_PATCH_GAP_SPREAD 2.0

/*
 * 1 when r's normalised LD is usable but its clean - corrupted gap deserves a
 * word: LD_clean below LD_corr (the clean prompts favour the answer over the
 * wrong token less than the corrupted ones do: a prompt set whose answer and
 * wrong tokens are swapped, or a model that does not do the task; the cells
 * still map 0 to corrupted and 1 to clean, so restoring the clean run moves
 * the LD away from the answer), or |LD_clean - LD_corr| under
 * HS_PATCH_GAP_MIN logits (circuit's own threshold, min_gap in circuits.h:
 * a few tenths of a logit is within what one prompt moves by chance). why
 * (cap bytes, one line without "note: ") names the two LDs; 0 and why ""
 * otherwise, and when the set is not usable (hs_patch_usable says why).
 * The summary prints "note: why", the JSON has "gap_note".
 */
int hs_patch_gap_note(const hs_patch_report *r, char *why, size_t cap);
#define HS_PATCH_GAP_MIN 1.0

#endif /* HS_EXPERIMENTS_H */
