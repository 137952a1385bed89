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
 *              `position` (required unless HS_PROMPTS_TEXT_ONLY);
 *   wrong      one token: the competing answer of the logit difference
 *              answer - wrong (optional; on every line or on none);
 *   position   where the prediction is read, 0..t-1 (default t-1, the last).
 * Every prompt of a set has the same number of tokens t (the engine runs
 * them as one batch). Any other key is refused (a typo would otherwise be
 * silently ignored).
 * Errors (HS_ERR_INPUT, one line "FILE:LINE: problem"): not JSON / not an
 * object, a missing or non-string field, an unknown key, an unknown word
 * (hs_tok_encode's message), answer/wrong not one token of the vocabulary,
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
} hs_heads_report;

/*
 * Every head's detector scores over the prompts p (their "prompt" tokens):
 * previous-token, duplicate-token, induction always; first-noun when the
 * vocabulary holds at least one of the n_noun_words words nouns[] (a task's
 * nouns; NULL, 0 for none); target when target (t, t)
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

/* Activation patching (experiments/patch.c; TL patching.py get_act_patch_*). The
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
    double *atp_metric[HS_PATCH_N], *atp_metric_pos[HS_PATCH_N];
    double pearson[HS_PATCH_N], pearson_pos[HS_PATCH_N];
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
/* hs_patch_run with the method: EXACT is hs_patch_run, ATP hs_atp_run_tokens
 * ("Attribution" below), BOTH both and their Pearson correlations
 * (the report's comment). Errors of the two. */
hs_status hs_patch_run_method(const hs_model *m, hs_pool *pool, const hs_prompts *p, unsigned acts,
                              hs_patch_method method, hs_patch_report *out, hs_error *err);
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

/* Direct logit attribution over a prompt set (experiments/dla_set.c;
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
 * sentences on one scale) and diff_* (B - A) per layer mean and per `only`
 * head, each component's direct logit attribution to the predicted token
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
    int crop_a, crop_b;        /* attention figures show positions crop_a..crop_b; -1 -1: all */
    const char *title;         /* the main figure's (attention_grid's) title, or NULL */
    int no_title;              /* 1: no titles at all */
    int head_rows;             /* 1: the report's rows go on with one row per head */
} hs_inspect_opts;

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
    int n_top;           /* predictions at pos */
    int *top_ids;        /* [n_top] token ids by falling logit (hs_top_k) */
    double *top_probs;   /* [n_top] their softmax probabilities */
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
 * and M tokens; ..."), the crop ("--positions A:B is outside the sentence's
 * T tokens (0..T-1)"), the position ("--position P is outside ..."), vs
 * ("--vs: ..."; "--vs takes one word of the vocabulary, not N ('...')"); then
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
 *   the exact sweep's).
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
 *                    token] (hs_full_QK; not for uniform attention);
 *   L<l>H<h>_OV      full OV circuit W_E W_OV W_U [V, V] [attended token,
 *                    output logit] (hs_full_OV), with its copying score;
 *   virtual_weights  Frobenius norms of W_O^A W_X^B [(L-1)*H, 3*(L-1)*H],
 *                    sender A (layers 0..L-2) x receiver B (layers 1..L-1) and
 *                    X = Q, K, V (columns B.Q, B.K, B.V); pairs with B not in
 *                    a later layer are masked (null); the JSON's "products"
 *                    holds every [d_head, d_head] product (hs_head_product);
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
    const char *model_path; /* the checkpoint: in every JSON ("model"), and an input of the
                             * folder (never replaced); may be NULL */
    const char *out;        /* the output folder */
    hs_fold fold;           /* HS_FOLD_LN (default) or HS_FOLD_NONE */
    int comp_draws;         /* random pairs of the composition baseline, 2..100000 */
    int vocab_is_ids;       /* 1: tok labels tokens by id (hs_tokenizer_ids): said in a note */
} hs_weights_opts;

/* out "weights-out", HS_FOLD_LN, HS_COMP_DRAWS draws, no model path. */
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
    int skip_cross_layer;   /* the run passed the cross-layer figures, skipped (one layer) */
    int skip_qk;            /* the run passed every figure of Q/K, skipped (uniform attention) */
} hs_weights_report;

hs_status hs_weights_run(const hs_model *m, const hs_tokenizer *tok, const hs_weights_opts *o,
                         hs_figopts *fo, hs_pool *pool, const hs_notes *notes,
                         hs_weights_report *out, hs_error *err);
/* Frees out's arrays and zeroes it (a zeroed report is fine). */
void hs_weights_report_free(hs_weights_report *r);

/* ------------------------------------------------------------------------ */
/* The circuit graph (experiments/graph.c): what circuit discovery scores    */
/*
 * The computational graph at head granularity, named as MIB (Mueller et al.
 * 2025) and EAP-IG (Hanna et al. 2024, hannamw/eap-ig src/eap/graph.py) name
 * it. Nodes, in forward order: "input", then for each layer l the heads
 * "a{l}.h{h}" (h = 0..H-1) and, when the model has MLPs, "m{l}", then
 * "logits". A node SENDS its output into the residual stream:
 *   input    blocks.0.hook_resid_pre (the embeddings, before any block)
 *   a{l}.h{h} blocks.l.attn.hook_result[:, :, h, :] (z W_O of that head)
 *   m{l}     blocks.l.hook_mlp_out
 * (b_O and the biases are the same in every run and belong to no node.) A
 * node RECEIVES the residual stream entering it: each head three times, as
 * separate receivers "a{l}.h{h}<q>", "<k>", "<v>" (blocks.l.hook_q_input /
 * hook_k_input / hook_v_input [:, :, h, :], before ln1), "m{l}" once
 * (blocks.l.hook_mlp_in = resid_mid, before ln2), "logits" once
 * (blocks.{L-1}.hook_resid_post, before ln_final). An edge u -> v runs from
 * every node u that writes before receiver v reads: input, every head and
 * MLP of an earlier layer, and for m{l} also the heads of its own layer;
 * named "u->v", e.g. "input->a0.h0<q>", "a0.h2->a1.h0<k>", "a1.h3->m1",
 * "m1->logits". A 2-layer model with 4 heads and MLPs has 110 edges, GPT-2
 * small (12 x 12) 32,491 (hs_graph_edge_count).
 *
 * Canonical order, which every array over nodes, receivers or edges follows:
 * nodes as above; receivers in forward order (for each layer: head 0's q, k,
 * v, head 1's q, k, v, ..., then the MLP; logits last); edges grouped by
 * receiver in that order, and within a receiver by sender in node order
 * (edges [recv_first_edge[r], recv_first_edge[r] + recv_n_edges[r]) are
 * receiver r's).
 */
typedef enum { HS_NODE_INPUT = 0, HS_NODE_HEAD, HS_NODE_MLP, HS_NODE_LOGITS } hs_node_kind;
typedef enum { HS_RECV_Q = 0, HS_RECV_K = 1, HS_RECV_V = 2, HS_RECV_WHOLE = 3 } hs_recv_kind;

typedef struct {
    int n_layers, n_heads, has_mlp;
    int n_nodes;              /* 1 + L (H + has_mlp) + 1 */
    int n_receivers;          /* L (3 H + has_mlp) + 1 */
    size_t n_edges;
    hs_node_kind *node_kind;  /* [n_nodes] */
    int *node_layer;          /* [n_nodes] layer (input -1, logits L) */
    int *node_head;           /* [n_nodes] head, or -1 */
    int *recv_node;           /* [n_receivers] the node receiving */
    hs_recv_kind *recv_kind;  /* [n_receivers] q, k, v of a head; WHOLE otherwise */
    size_t *recv_first_edge;  /* [n_receivers] its first edge */
    int *recv_n_edges;        /* [n_receivers] its edges (= its senders) */
    int *edge_src;            /* [n_edges] sending node */
    int *edge_dst;            /* [n_edges] receiver */
} hs_graph;

/* The graph of a model of config cfg (its layers, heads, and MLPs when
 * d_mlp > 0). Free with hs_graph_free. HS_ERR_CONFIG, HS_ERR_NOMEM. */
hs_status hs_graph_build(const hs_config *cfg, hs_graph *out, hs_error *err);
void hs_graph_free(hs_graph *g);
/* The edge count of that graph, from the formula (for tests and for sizes):
 * sum over layers l of 3 H (1 + l (H + m)) + m (1 + l (H + m) + H), plus
 * 1 + L (H + m) into logits, m = 1 with MLPs. */
size_t hs_graph_edge_count(int n_layers, int n_heads, int has_mlp);
/* Names into buf (cap >= 32 is enough for every name): "a1.h0", "a1.h0<q>",
 * "a0.h2->a1.h0<k>". */
void hs_graph_node_name(const hs_graph *g, int node, char *buf, size_t cap);
void hs_graph_receiver_name(const hs_graph *g, int r, char *buf, size_t cap);
void hs_graph_edge_name(const hs_graph *g, size_t e, char *buf, size_t cap);
/* The node / edge with that name, or -1 (an unknown name, or an edge the
 * graph does not have, e.g. between two heads of one layer). */
int hs_graph_find_node(const hs_graph *g, const char *name);
long hs_graph_find_edge(const hs_graph *g, const char *name);

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
/* Running a circuit (experiments/circuit_run.c)                             */
/*
 * A circuit C is a set of edges of the graph above: a mask in_circuit
 * [n_edges] in canonical edge order, 1 = in C. Running it on a prompt set
 * (EAP-IG evaluate_graph, hannamw/eap-ig src/eap/evaluate.py): the clean
 * prompts run on the engine, and every receiver v reads, beside that run's
 * residual stream, its missing senders' ablated outputs in place of their own:
 *     input_v += sum over senders u with u -> v not in C of (a_u,abl - a_u,run)
 * at v's hook point (blocks.l.hook_q_input / hook_k_input / hook_v_input
 * [:, :, h, :] for a head, blocks.l.hook_mlp_in for an MLP,
 * blocks.{L-1}.hook_resid_post for logits), a_u being what u sends (the graph
 * section: blocks.0.hook_resid_pre, hook_result [:, :, h, :], hook_mlp_out)
 * in this run and a_u,abl its ablated value, the ablation (hs_ablate_method):
 *   HS_ABLATE_RESAMPLE  u's output in the prompt's corrupted partner's run
 *                       (the set needs "corrupted"; EAP-IG's 'patching')
 *   HS_ABLATE_MEAN      u's position-wise mean over the set's clean prompts
 *                       (EAP-IG's 'mean-positional')
 *   HS_ABLATE_ZERO      0
 * The sum runs over senders in node order, in float, and an element of it
 * that is exactly 0 leaves the input as it was; a receiver missing no sender
 * is not touched, so the full circuit M is the clean run bit for bit (no hook
 * at all) and the empty circuit is the ablated run up to rounding. The input
 * node is the whole blocks.0.hook_resid_pre (token and position embeddings:
 * EAP-IG's input node is hook_embed alone, its position embeddings never
 * ablated). Uniform attention has no q and k: those receivers are never
 * touched. A run starts at the earliest layer holding a receiver that misses
 * a sender (hs_engine_sweep_from, bit-identical to a whole run); senders
 * before it take their values from the clean run's cache. The metric
 * (hs_metric_value at each prompt's position; kl against the clean run's
 * logits there) is averaged over the set, summed in prompt order in double.
 * Every value is bit-identical for any thread count. Memory: the clean run's
 * and the ablated run's sender outputs for the whole set ((L (H + 1) + 1) n t D
 * floats each, plus every layer's resid_pre) and, per worker, one chunk's
 * difference per sender.
 */
typedef struct hs_circeval hs_circeval;

/* Prepares circuit runs of the graph g (hs_graph_build of m's config) on
 * the prompts p (g and p are borrowed and must outlive ce) with metric and
 * ablation: the clean run's and the ablated run's sender outputs, then m(M)
 * (the full circuit, which also records the clean logits kl reads) and
 * m(empty) (the empty circuit). pool may be NULL. Errors (HS_ERR_INPUT, one
 * line): an empty set, a prompt without "answer", logit-diff or prob-diff
 * without "wrong", resample without "corrupted", a graph of another model;
 * HS_ERR_NUMERIC when a prompt's metric is not finite in the clean or the
 * ablated run; the engine's errors. Free with hs_circeval_destroy. */
hs_status hs_circeval_create(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_graph *g,
                             hs_metric_kind metric, hs_ablate_method ablation, hs_circeval **out, hs_error *err);
void hs_circeval_destroy(hs_circeval *ce);
/* m(M), the full circuit's metric (the clean run; 0 exactly for kl), and
 * m(empty), the empty circuit's. */
double hs_circeval_full(const hs_circeval *ce);
double hs_circeval_empty(const hs_circeval *ce);
/* Forward passes of HS_ENGINE_CHUNK prompts the circuit runs made since
 * hs_circeval_create returned (one per chunk of the set and circuit). */
long hs_circeval_forwards(const hs_circeval *ce);
/* The graph and the metric ce was made with. */
const hs_graph *hs_circeval_graph(const hs_circeval *ce);
hs_metric_kind hs_circeval_metric_kind(const hs_circeval *ce);
/* The metric of each of n_circuits circuits in_circuit[k] ([n_edges] each)
 * into metric[k], the chunks of every circuit run as jobs on the pool.
 * HS_ERR_INPUT for no circuit; the engine's errors. */
hs_status hs_circeval_metrics(hs_circeval *ce, int n_circuits, const unsigned char *const *in_circuit,
                              double *metric, hs_error *err);
/*
 * Exact edge patching: scores[e] = m(every edge but e) - m(M) for every
 * edge e [n_edges]: the metric change when edge e alone is ablated (its
 * receiver reads that one sender's ablated output, every other input as in
 * the clean run): the reference edge attribution is judged against, with
 * the sign of hs_eap_scores (metric(edge ablated) - metric(clean)). Each run
 * starts at the receiver's layer and takes the sender's clean and ablated
 * outputs from the caches; n_edges runs over the set, on the pool.
 */
hs_status hs_edge_patch_scores(hs_circeval *ce, double *scores, hs_error *err);
/* Normalised faithfulness (EAP-IG results/pareto/plot_pareto_normalized.py;
 * MIB): (m_c - m_empty) / (m_full - m_empty); NAN when m_full == m_empty
 * (undefined: the clean and ablated metrics coincide). */
double hs_faithfulness(double m_c, double m_full, double m_empty);

/* ------------------------------------------------------------------------ */
/* Circuits from scores, and ACDC (experiments/acdc.c)                       */

/* HS_ERR_NUMERIC naming the first edge whose score [n_edges] is not finite. */
hs_status hs_scores_finite(const hs_graph *g, const double *scores, hs_error *err);
/* order [n_edges] <- the edges by |score| descending, ties to the lower
 * canonical index (EAP-IG apply_topn, absolute=True). HS_ERR_NUMERIC for a
 * score that is not finite; HS_ERR_NOMEM. */
hs_status hs_edge_ranking(const hs_graph *g, const double *scores, size_t *order, hs_error *err);
/* Prunes dead ends in place: an edge u -> v stays only when it lies on a path
 * from input to logits over the circuit's edges (u reachable from input and
 * logits from v; the fixed point of EAP-IG's Graph.prune, which drops nodes
 * without an incoming or an outgoing edge until nothing changes). node_in
 * [n_nodes] (may be NULL): 1 for the nodes the pruned circuit touches, and
 * logits always (EAP-IG's LogitNode). n_kept (may be NULL): edges left.
 * HS_ERR_NOMEM. */
hs_status hs_circuit_prune(const hs_graph *g, unsigned char *in_circuit, unsigned char *node_in, size_t *n_kept,
                           hs_error *err);
/* in_circuit [n_edges] <- the top_n edges by |score| (top_n >= 0, ranked as
 * hs_edge_ranking) or, with top_n < 0, every edge with |score| >= threshold
 * (EAP-IG apply_topn / apply_threshold, absolute), then pruned; *n_kept the
 * edges left. HS_ERR_INPUT for top_n > n_edges or neither a top_n nor a
 * threshold >= 0; HS_ERR_NUMERIC for a score that is not finite. */
hs_status hs_circuit_select(const hs_graph *g, const double *scores, long top_n, double threshold,
                            unsigned char *in_circuit, size_t *n_kept, hs_error *err);

/*
 * ACDC (Conmy et al. 2023, sec. 3 and Algorithm 1;
 * ArthurConmy/Automatic-Circuit-Discovery acdc/TLACDCExperiment.py `step`):
 * starting from the full circuit, the receivers in reverse topological order
 * (the canonical order backwards: logits, the last MLP, the last layer's
 * heads' v, k, q, ...), each incoming edge in canonical sender order is tried
 * removed (one circuit run, hs_circeval_metrics) and removed for good when
 *     kl:          m_new - m_cur < tau   (KL(clean || circuit) grew less than tau)
 *     logit-diff, prob-diff: |m_new - m_cur| < tau
 * m_cur being the metric of the circuit as it stands (the last accepted run).
 * A receiver whose node has no kept outgoing edge left is skipped and its
 * edges removed without a run (nothing reads the node; ACDC skips nodes that
 * are not connected). in_circuit [n_edges] <- the edges kept (not pruned);
 * scores [n_edges] <- each tried edge's m_new - m_cur (the metric's change
 * when it was tried, the sign convention of hs_edge_patch_scores), 0 for
 * edges skipped. HS_ERR_INPUT for tau < 0 or not finite; the runs' errors.
 */
typedef struct {
    long trials;     /* circuit runs (one per edge tried) */
    long skipped;    /* edges removed without a run (dead receivers) */
    long forwards;   /* forward passes those runs made */
    size_t kept;     /* edges kept */
    double metric;   /* m of the kept circuit (the last accepted run) */
} hs_acdc_stats;
hs_status hs_acdc_run(hs_circeval *ce, double tau, unsigned char *in_circuit, double *scores, hs_acdc_stats *stats,
                      hs_error *err);

/* ------------------------------------------------------------------------ */
/* Faithfulness and ground truth (experiments/faithfulness.c)                */

/* MIB's circuit sizes (MIB_circuit_track/evaluation.py): 0.1, 0.2, 0.5, 1, 2,
 * 5, 10, 20, 50, 100 % of the edges. */
#define HS_FAITH_N 10
extern const double hs_faith_fractions[HS_FAITH_N];
/* Edges asked for at fraction x of n_edges: MIB's int(x * n) (truncated). */
size_t hs_faith_top_n(double fraction, size_t n_edges);

typedef struct {
    size_t top_n;          /* edges asked for (hs_faith_top_n) */
    size_t edges;          /* edges in the circuit after pruning */
    double fraction;       /* the size asked for, 0..1 (0: the empty circuit) */
    double metric;         /* m(C) */
    double faithfulness;   /* hs_faithfulness; NAN when not usable */
} hs_faith_point;
typedef struct {
    size_t n_edges;
    double m_full, m_empty;
    int usable;            /* 0 when m(M) == m(empty): faithfulness undefined */
    char why[200];         /* why not usable ("" when usable) */
    hs_faith_point pt[HS_FAITH_N + 1]; /* [0] the empty circuit, [1..] MIB's sizes */
    double cpr, cmd;       /* NAN when not usable */
} hs_faith_curve;
/* usable <- m_full != m_empty, and when not, why (cap bytes): one line
 * saying that faithfulness is 0 / 0. */
void hs_faith_usable(double m_full, double m_empty, hs_metric_kind metric, int *usable, char *why, size_t cap);
/*
 * The faithfulness curve of a score ranking (MIB evaluate_area_under_curve):
 * at each of MIB's sizes the top hs_faith_top_n edges by |score|
 * (hs_edge_ranking), pruned, run (hs_circeval_metrics; the ten circuits'
 * chunks as jobs on the pool); f = hs_faithfulness with m(M) and m(empty) of
 * ce (the 100 % circuit is M: f = 1 exactly; the empty circuit f = 0
 * exactly; both asserted). CPR = sum over MIB's sizes of trapezoids of f,
 * CMD of |1 - f|, over the fraction asked for, from 0.001 to 1 (MIB; the
 * empty circuit normalises f and is outside the area). Errors: a score that
 * is not finite (HS_ERR_NUMERIC), the runs'.
 */
hs_status hs_faith_curve_run(hs_circeval *ce, const double *scores, hs_faith_curve *out, hs_error *err);
/* As JSON: {"points": [{"edges", "fraction", "faithfulness" (null when not
 * usable), "top_n", "metric"}] (the empty circuit first), "cpr", "cmd" (null
 * when not usable), "usable", "why_not_usable" (when not), "metric_full",
 * "metric_empty", "n_edges", "area"}; NULL on OOM (cJSON_Delete). */
cJSON *hs_faith_curve_json(const hs_faith_curve *c);

/* A node's score [n_nodes]: the largest |score| of the edges touching it (in
 * or out), so thresholding edges at |score| >= x keeps exactly the nodes
 * whose score is >= x before pruning (ACDC's node ROC counts a node present
 * when an edge touching it is, acdc/acdc_utils.py get_present_nodes). */
void hs_node_scores(const hs_graph *g, const double *scores, double *node_score);

/* One ROC curve: the items ranked by |score| descending, one point after
 * each group of equal |score| (a group holding true and false items moves
 * diagonally), from (0, 0) to (1, 1); TPR = TP / (TP + FN), FPR = FP / (FP +
 * TN) (ACDC notebooks/roc_plot_generator.py). auc: trapezoids (the
 * Mann-Whitney statistic, ties counting one half); auc_step: ACDC's
 * pessimistic step area sum (1 - fpr_i)(tpr_i - tpr_{i-1})
 * (acdc/acdc_graphics.py pessimistic_auc). With a circuit: its own point
 * (tpr, fpr) and circuit_auc_step = (1 - fpr) tpr, the pessimistic area of
 * (0,0), (fpr,tpr), (1,1) (one ACDC run as one point). Not usable (NANs, why)
 * when no item or every item is true. */
typedef struct {
    size_t n_pts;
    double *fpr_pts, *tpr_pts;   /* [n_pts] */
    size_t n_pos, n_neg;
    int usable;
    char why[80];
    double auc, auc_step;
    double tpr, fpr, circuit_auc_step;
} hs_roc_curve;
typedef struct {
    hs_roc_curve edges;          /* every edge of the graph */
    hs_roc_curve nodes;          /* the heads and MLPs (input and logits are in every circuit):
                                  * hs_node_scores, true when a true edge touches the node */
    int has_circuit;
} hs_roc;
/* The ROC curves of scores [n_edges] against truth [n_edges] (1 = in the true
 * circuit), with circuit [n_edges]'s points when it is not NULL. Free with
 * hs_roc_free. HS_ERR_NOMEM. */
hs_status hs_roc_run(const hs_graph *g, const double *scores, const unsigned char *truth, const unsigned char *circuit,
                     hs_roc *out, hs_error *err);
void hs_roc_free(hs_roc *r);
/* {"edges": {"fpr": [...], "tpr": [...], "positives", "negatives", "usable",
 * "auc", "auc_pessimistic", "circuit": {"tpr", "fpr", "auc_pessimistic"}},
 * "nodes": {...}, "ranking", "nodes_are"}; NULL on OOM. */
cJSON *hs_roc_json(const hs_roc *r);
/* The true circuit from path into truth [n_edges]: a graph.json (its
 * in_graph edges, read as hs_graph_json_parse reads it), a JSON array of edge
 * names, or text with one edge name a line ('#' lines and blank lines
 * skipped). Errors (HS_ERR_INPUT, one line): "FILE:LINE: 'x->y' is not an
 * edge of this model's graph (...)", a JSON array item that is not a string,
 * a file naming no edge, hs_graph_json_parse's; HS_ERR_IO. */
hs_status hs_truth_load(const hs_graph *g, const hs_config *cfg, const char *path, unsigned char *truth, hs_error *err);

/* ------------------------------------------------------------------------ */
/* graph.json and .dot (experiments/graph_io.c)                              */

/* x as Python's repr(float) writes it (the shortest digits that read back
 * as x; fixed notation for exponents -4..15 with at least one digit after
 * the point, else d.ddde+XX): the numbers of json.dump. */
void hs_py_float_repr(double x, char out[32]);
/*
 * graph.json as EAP-IG's Graph.to_json writes it (hannamw/eap-ig
 * src/eap/graph.py; MIB's circuit files), appended to out: json.dump's bytes
 * (one line, ", " and ": ") of
 *   {"cfg": {"n_layers", "n_heads", "parallel_attn_mlp": false, "d_model"},
 *    "nodes": {name: {"in_graph": b}, ...},
 *    "edges": {"u->v": {"score": s, "in_graph": b}, ...}}
 * nodes in node order; edges in Graph.from_model's order (per layer: every
 * earlier node into each head's q, k, v, then every earlier node and the
 * layer's heads into its MLP; last every node into logits). An edge's
 * score is scores[e] rounded to float32 (EAP-IG keeps scores in a float32
 * tensor; written as Python writes that float), in_graph in_circuit[e]; a
 * node is in the graph when the pruned circuit touches it (input: has an
 * edge out; logits always). No node scores: EAP-IG's to_json cannot write
 * one for logits (its node-score tensor ends before it: IndexError), so an
 * edge-level graph has none. A model without MLPs has no m nodes (EAP-IG's
 * graph always has them; Graph.from_json leaves what a file does not name
 * at 0 and false). Read back by Graph.from_json, re-written by its to_json
 * byte for byte (checked here with EAP-IG's code). HS_ERR_NUMERIC for a
 * score that is not finite; HS_ERR_NOMEM.
 */
hs_status hs_graph_json_text(const hs_graph *g, const hs_config *cfg, const double *scores,
                             const unsigned char *in_circuit, hs_buf *out, hs_error *err);
/*
 * Reads graph.json text (len bytes; `name` stands for the file in messages)
 * as Graph.from_json does: scores [n_edges] <- each named edge's "score",
 * in_circuit [n_edges] <- its "in_graph" (edges the file does not name: 0,
 * not in). Node entries are checked, not used (Graph.prune recomputes nodes
 * from edges). Errors (HS_ERR_INPUT, one line naming the file and the first
 * offender): not a JSON object; no "cfg", "nodes" or "edges"; a cfg of
 * another model shape ("cfg n_layers is 3, this model's 2 (...)"; n_layers,
 * n_heads, and d_model when given) or with parallel_attn_mlp true; an
 * unknown node or edge name (a model without MLPs accepts EAP-IG's m nodes
 * and edges when not in the graph); a node that is not {"in_graph": bool,
 * "score"?: number} (neuron-level entries are refused); an edge that is not
 * {"score": finite number, "in_graph": bool}.
 */
hs_status hs_graph_json_parse(const hs_graph *g, const hs_config *cfg, const char *text, size_t len, const char *name,
                              double *scores, unsigned char *in_circuit, hs_error *err);
/* The same from a file (HS_ERR_IO when it cannot be read). */
hs_status hs_graph_json_load(const hs_graph *g, const hs_config *cfg, const char *path, double *scores,
                             unsigned char *in_circuit, hs_error *err);
/* The circuit (pruned) as a Graphviz digraph, appended to out: bottom to top
 * (rankdir=BT), one rank per layer (input, each layer's heads and MLP,
 * logits), edge penwidth from |score| as EAP-IG's to_image (0.6 up to 5,
 * scaled between the smallest and largest |score| of the graph), colour by
 * sign (blue >= 0, red < 0), a head's input labelled q, k or v. HS_ERR_NOMEM. */
hs_status hs_circuit_dot(const hs_graph *g, const double *scores, const unsigned char *in_circuit, hs_buf *out,
                         hs_error *err);

/* ------------------------------------------------------------------------ */
/* Circuit discovery (experiments/discover.c, discover_report.c;             */
/* `headscope discover` and `headscope faithfulness`)                        */

/* How the edges are scored: exact edge patching (hs_edge_patch_scores) or
 * ACDC (hs_acdc_run). */
typedef enum { HS_DISCOVER_EXACT = 0, HS_DISCOVER_ACDC, HS_DISCOVER_N } hs_discover_method;
/* "exact", "acdc". */
extern const char *const hs_discover_method_names[HS_DISCOVER_N];
/* The method named s, or -1. */
int hs_discover_method_parse(const char *s);
/* ACDC's tau when none is given. */
#define HS_ACDC_TAU 0.01

typedef struct {
    hs_discover_method method;  /* default exact */
    hs_metric_kind metric;      /* default logit-diff */
    hs_ablate_method ablation;  /* default resample (the corrupted partners) */
    long top_n;                 /* >= 0: the circuit is the top_n edges by |score|; -1 (default): unset */
    double threshold;           /* >= 0: the edges with |score| >= threshold; NAN (default): unset.
                                 * Neither set: the top hs_faith_top_n(0.05, n_edges) (MIB's 5 %), >= 1 */
    double tau;                 /* ACDC's threshold; NAN (default): HS_ACDC_TAU */
    const char *truth;          /* the true circuit (hs_truth_load), or NULL */
    const char *out;            /* the output folder, or NULL: nothing written */
    const char *model_path, *data_path; /* inputs of the folder (never replaced), index.json's "model" */
} hs_discover_opts;
hs_discover_opts hs_discover_opts_default(void);

typedef struct {
    hs_discover_method method;
    hs_metric_kind metric;
    hs_ablate_method ablation;
    int n_prompts;
    hs_graph g;                 /* the model's graph */
    double *scores;             /* [n_edges] the method's edge scores, metric(edge ablated) - metric(clean) */
    unsigned char *in_circuit;  /* [n_edges] the circuit, pruned */
    size_t n_kept;              /* its edges */
    char chosen_by[64];         /* "the top 5 edges by |score|", "|score| >= 0.1", "ACDC with tau 0.01" */
    double tau;                 /* ACDC's tau (the default when none was given) */
    hs_acdc_stats acdc;         /* ACDC's runs (method acdc) */
    long forwards;              /* forward passes of HS_ENGINE_CHUNK prompts the scoring made */
    double m_full, m_empty;     /* m(M), m(empty) */
    double m_circuit;           /* m(C) of the circuit */
    double faithfulness;        /* its normalised faithfulness (NAN when not usable) */
    int usable;                 /* m(M) != m(empty) */
    char why[200];              /* why not usable */
    hs_faith_curve curve;       /* the curve of the scores' ranking */
    int has_roc;                /* a truth was given: */
    hs_roc roc;                 /* the ROC curves against it */
    int n_files;                /* files the folder's index.json lists (with out) */
} hs_discover_report;

/*
 * Discovers a circuit of m on the prompt set p: the graph, the true circuit
 * (o->truth, read before anything runs), hs_circeval_create, the method's
 * edge scores, the circuit (ACDC: its kept edges; otherwise top-n, threshold
 * or MIB's 5 % of the scores), pruned, run for its faithfulness, the
 * faithfulness curve of the scores (hs_faith_curve_run) and, with a truth,
 * hs_roc_run with the circuit's point. With o->out, then, the folder
 * (hs_outdir, command "discover"): graph.json (hs_graph_json_text),
 * faithfulness.json (hs_discover_curve_json), circuit.dot (hs_circuit_dot),
 * roc.json (hs_roc_json) with a truth, and index.json (with "method",
 * "metric", "ablation", "model"); a failed run leaves the folder as it was.
 * Notes: faithfulness undefined (with why), the folder's. Errors
 * (HS_ERR_INPUT, one line): --top or --threshold with acdc, --tau without
 * it, both --top and --threshold, a threshold or tau < 0 or not finite, and
 * those of hs_truth_load, hs_circeval_create, the method and the folder.
 * Fills *out (zeroed first; free with hs_discover_report_free, also after a
 * failure).
 */
hs_status hs_discover_run(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_discover_opts *o,
                          const hs_notes *notes, hs_discover_report *out, hs_error *err);
void hs_discover_report_free(hs_discover_report *r);
/* faithfulness.json of a discovery: hs_faith_curve_json's object plus
 * "circuit": {"edges", "chosen_by", "metric", "faithfulness"}, "method",
 * "metric_name", "ablation"; NULL on OOM (cJSON_Delete). */
cJSON *hs_discover_curve_json(const hs_discover_report *r);
/* The report as JSON: {"method", "metric", "ablation", "prompts", "n_edges",
 * "metric_full", "metric_empty", "usable", "why_not_usable" (when not),
 * "circuit": {...}, "acdc": {"tau", "trials", "skipped", "forwards", "kept",
 * "metric"} (acdc), "forwards", "faithfulness_curve": {...}, "roc": {...}
 * (with a truth), "strongest_edges": [{"edge", "score", "in_circuit"}] (the
 * ten largest |score|)}; NULL on OOM. */
cJSON *hs_discover_json(const hs_discover_report *r);
/* The text summary appended to b. */
void hs_discover_summary(const hs_discover_report *r, hs_buf *b);

/* `headscope faithfulness`: a circuit found elsewhere (a graph.json) run on
 * a prompt set. */
typedef struct {
    const char *graph;          /* the graph.json (hs_graph_json_load) */
    hs_metric_kind metric;
    hs_ablate_method ablation;
    const char *out;            /* the output folder, or NULL */
    const char *model_path, *data_path;
} hs_faith_opts;
typedef struct {
    hs_metric_kind metric;
    hs_ablate_method ablation;
    int n_prompts;
    hs_graph g;
    double *scores;             /* [n_edges] the file's scores (0 for edges it does not name) */
    unsigned char *in_circuit;  /* [n_edges] its in_graph edges, pruned */
    size_t n_in_file, n_kept;   /* in_graph edges in the file; left after pruning */
    double m_full, m_empty, m_circuit, faithfulness;
    int usable;
    char why[200];
    hs_faith_curve curve;       /* the curve of the file's scores */
    int n_files;
} hs_faith_report;
/* Reads o->graph for m, prunes its circuit (a note says how many in_graph
 * edges pruning left out), runs it (hs_circeval_create with o's metric and
 * ablation) for its faithfulness, and the faithfulness curve of the file's
 * scores. With o->out, the folder (command "faithfulness"):
 * faithfulness.json (hs_faith_report_json) and index.json. Errors: those of
 * hs_graph_json_load (unknown names, another model shape: one line),
 * hs_circeval_create, the folder. Notes: pruning, faithfulness undefined,
 * the folder's. Free out with hs_faith_report_free (also after a failure). */
hs_status hs_faithfulness_run(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_faith_opts *o,
                              const hs_notes *notes, hs_faith_report *out, hs_error *err);
void hs_faith_report_free(hs_faith_report *r);
/* hs_faith_curve_json's object plus "circuit": {"edges", "edges_in_file",
 * "metric", "faithfulness"}, "metric_name", "ablation", "prompts"; NULL on OOM. */
cJSON *hs_faith_report_json(const hs_faith_report *r);
/* The text summary appended to b. */
void hs_faith_summary(const hs_faith_report *r, hs_buf *b);

/* Circuit figures (experiments/graph_fig.c): the found circuit and its       */
/* faithfulness curve through viz/                                           */

/* The circuit of g as viz's graph figure and its JSON (viz.h, "The circuit
 * graph"): every node of g under its MIB name ("input", "a1.h0", "m1",
 * "logits"), input on the bottom row, layer l's heads side by side on the
 * row above the layer before, its MLP in the last column on the row above
 * its heads (it reads them), logits on top; the edges with in_graph[e]
 * nonzero (in_graph [n_edges], NULL = every edge: over HS_VIZ_MAX_EDGES is
 * refused), each into its receiver's q, k or v (a head) or its one input,
 * with scores[e] (scores [n_edges] in g's edge order, NULL = 1 each) for
 * its width and colour. title may be NULL; o: the figure's options (NULL =
 * defaults). *fig (when fig is not NULL) and *json (when json is not NULL)
 * are new (hs_viz_figure_destroy, cJSON_Delete); on failure both are NULL.
 * Errors: hs_viz_graph_figure's (a score not finite: HS_ERR_NUMERIC; the
 * width promise: HS_ERR_INPUT), HS_ERR_NOMEM. */
hs_status hs_graph_figure(const hs_graph *g, const double *scores, const unsigned char *in_graph,
                          const char *title, const hs_viz_options *o, hs_viz_figure **fig,
                          cJSON **json, hs_error *err);

/* The faithfulness curve: faithfulness (y) over circuit size (x, percent of
 * the graph's edges on a log10 axis: MIB's 0.1, 0.2, 0.5, ... 100), one line
 * per method with a legend (methods: n_methods names, e.g. "EAP", "EAP-IG",
 * "ACDC"); the y axis covers [min(0, f), max(1, f)] and a dashed line marks
 * f = 1 ("full model"). percent [n] > 0, increasing (the empty circuit,
 * f = 0 by definition, has no place on a log axis); f [n_methods, n], NaN =
 * not measured there. viz's line plot (hs_viz_lines_figure with o's width,
 * dpi and fonts) and its JSON (hs_viz_lines_json, with "x_scale": "log" and
 * "mark_y": 1, which the HTML page draws). *fig and *json as in
 * hs_graph_figure. Errors: hs_viz_lines_figure's, HS_ERR_NOMEM. */
hs_status hs_faithfulness_figure(const double *percent, size_t n, const double *f,
                                 const char *const *methods, size_t n_methods, const char *title,
                                 const hs_viz_options *o, hs_viz_figure **fig, cJSON **json,
                                 hs_error *err);

/* Attribution: first-order estimates from gradients (experiments/           */
/* attribution.c: EAP, EAP-IG; experiments/atp.c: AtP)                        */
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
 * EAP (Syed et al. 2023, "Attribution patching outperforms automated circuit
 * discovery"; Hanna et al. 2024, "Have faith in faithfulness", sec.
 * 2): for an edge u -> v of hs_graph (receiver v reads sender u's output),
 *   score(u -> v) = mean over the prompts of the sum over positions of
 *                   (a_u,corr - a_u,clean) . dm/d(input of v) at the clean run
 * with a_u what u sends and "input of v" what v reads (hs_graph's comment):
 * the first-order estimate of m(the clean run with edge u -> v corrupted) -
 * m(clean), so an edge whose corruption lowers the metric scores negative.
 * m is hs_metric_kind's metric of each prompt's logits at its position (kl:
 * against the clean run's distribution, whose gradient at the clean run is
 * exactly 0: with kl use EAP-IG).
 * EAP-IG on the inputs (Hanna et al. 2024, sec. 3; hannamw/EAP-IG,
 * src/eap/attribute.py get_scores_eap_ig, read at commit 795f560): the
 * gradient above is replaced by its mean over k = 0 .. m-1 of the gradient at
 * a run whose input embeddings (hook_embed, EAP-IG's input node's out_hook)
 * are e_corr + (k/m) (e_clean - e_corr): the corrupted end included, the
 * clean end left out, as that code's `for step in range(0, steps)` (its
 * node-level twin, attribute_node.py, runs k = 1 .. m); the kl reference stays
 * the clean run's logits. So m = 1 is the gradient at the corrupted run
 * alone: EAP-IG(1) of (clean, corrupted) = -EAP of (corrupted, clean) for
 * logit-diff and prob-diff. The positions are the same in both runs, so this
 * interpolates the summed input x0 too; with an embedding norm the norm
 * runs on it.
 * Where headscope's EAP differs from EAP-IG's code: scores are means over
 * the prompts of each prompt's metric (EAP-IG back-propagates its batch's
 * mean metric and divides by the item count again, and its examples
 * minimise -metric, loss=True: its scores are these times -1/batch size);
 * the input node sends blocks.0.hook_resid_pre (hs_graph), hook_embed's
 * difference without an embedding norm.
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

/* EAP (ig_steps 0) or EAP-IG with ig_steps interpolation steps (1 .. 1000;
 * 5 in EAP-IG's examples and MIB) over the prompts of p ("corrupted"
 * needed; "answer" and "wrong" for logit-diff and prob-diff): scores
 * [g->n_edges] in hs_graph's canonical order, each the estimate of m(that
 * edge corrupted) - m(clean) defined above. Per chunk: EAP one corrupted
 * forward, one clean forward and one backward; EAP-IG one clean forward and
 * ig_steps forwards and backwards (k = 0 is the corrupted run). At each
 * receiver point of the backward (a layer's q, k or v inputs, an MLP's
 * input, the final residual) every prompt's sums over positions and d_model
 * are one hs_sgemm of the senders that point's receivers read, [senders,
 * t*D], by its gradient, [t*D, receivers], added in double. g: the graph of
 * m's shape (hs_graph_build(&m->cfg)). HS_ERR_INPUT: a graph of another
 * shape, an empty set, no corrupted prompts, no answer or wrong answer where
 * the metric needs them, ig_steps outside 0 .. 1000; HS_ERR_NOMEM. */
hs_status hs_eap_scores(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_graph *g,
                        hs_metric_kind metric, int ig_steps, double *scores, hs_error *err);

/* Node scores [g->n_nodes] from edge scores [g->n_edges]: node u's is the
 * sum of its outgoing edges' scores in edge order, logits (which sends
 * nothing) NAN. EAP-IG's node attribution (src/eap/attribute_node.py) dots
 * (a_u,corr - a_u,clean) with the gradient at u's output, which is the sum
 * of the gradients at every input reading u (the residual stream adds): the
 * same number. */
void hs_eap_node_scores(const hs_graph *g, const double *edge_scores, double *node_scores);

#endif /* HS_EXPERIMENTS_H */
