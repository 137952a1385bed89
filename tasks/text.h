/*
 * tasks/text.h -- the text task's public surface beyond its parameters
 * (issue 31): a corpus encoded with a BPE and split (hs_text), training
 * batches, perplexity, the `task` metadata, `eval` and `generate` on a text
 * model (tasks/text.c), and the chapter's ablation ladder built on it
 * (tasks/ladder.c). Part of the tasks module (DESIGN.md's module map): the
 * same rules as tasks/tasks.h, whose text section holds hs_text_params (what
 * hs_load and hs_train_job carry) and whose hs_train_run the ladder calls.
 * Included by the text task's callers only (train_run.c, eval, generate,
 * ladder).
 */
#ifndef HS_TASKS_TEXT_H
#define HS_TASKS_TEXT_H

#include "tasks/tasks.h"

typedef struct {
    hs_text_params p;
    hs_tokenizer *tok;       /* the BPE (BOS off), owned */
    char *tok_json;          /* its tokenizer.json text: the checkpoint's `vocab` metadata */
    int *train;              /* (n_train) the training stream */
    int *heldout;            /* (n_heldout) the held-out stream */
    size_t n_train, n_heldout;
    size_t n_files, bytes;
    uint64_t corpus_hash;    /* FNV-1a 64 over every file's bytes in order */
    double unigram_ppl;      /* the unigram baseline's held-out perplexity (windows of n_ctx) */
} hs_text;

/* Encodes corpus c with the tokenizer.json text tok_json (tok_json_len
 * bytes; hs_tokenizer_from_hf_json) and splits it as above (with p->repeat
 * > 0 the held-out windows get their repeats: tasks.h). Errors
 * (HS_ERR_INPUT unless said): n_ctx outside [1, 65536] (HS_ERR_CONFIG),
 * val_fraction outside [0.01, 0.5], repeat outside [0, 1], the tokenizer's errors, a file holding a
 * NUL byte, a training part shorter than n_ctx + 2 tokens or a held-out part
 * without one window; HS_ERR_NOMEM. *out NULL on failure; free with
 * hs_text_destroy (NULL ok). */
hs_status hs_text_create(const hs_corpus *c, const char *tok_json, size_t tok_json_len,
                         const hs_text_params *p, hs_text **out, hs_error *err);
void hs_text_destroy(hs_text *t);
/* Held-out windows of T tokens: (n_heldout - 1) / T (0 when none fit). */
size_t hs_text_windows(const hs_text *t, int T);
/* A training batch: B windows of T tokens from r, tokens and targets (B, T);
 * with t->p.repeat > 0 each window holds a repeated span with that
 * probability (tasks.h's text section). */
void hs_text_batch(const hs_text *t, hs_task_rng *r, size_t B, int T, int *tokens, int *targets);

/* Perplexity over a token stream. */
typedef struct {
    size_t windows, tokens; /* windows of T, tokens scored (windows x T) */
    double loss;            /* mean cross-entropy, nats */
    double perplexity;      /* exp(loss) */
    int icl_early, icl_late; /* the positions the ICL score compares: T / 10 and T - 1 */
    double icl_score;       /* in-context learning score, nats: the mean loss at
                             * icl_late minus that at icl_early over the windows
                             * (Olsson et al. 2022, "In-context Learning and
                             * Induction Heads": the 500th token's loss minus the
                             * 50th's, scaled to T); NAN when T < 2. Negative: later
                             * tokens are predicted better, the context is used. */
} hs_text_score;

/* m's perplexity on stream (n ids) cut into (n - 1) / T windows of T tokens
 * (as above), and the ICL score over the same windows, forwards of 16
 * windows on `threads` workers (0 = every CPU; the bits do not depend on
 * it). Errors: HS_ERR_INPUT T outside [1, n_ctx]
 * ("--n-ctx T: the model has positions 0..n_ctx-1 ..."), too few tokens;
 * HS_ERR_CONFIG an id outside the vocabulary; HS_ERR_NUMERIC a logit that is
 * not finite; hs_forward's. */
hs_status hs_text_perplexity(const hs_model *m, const int *stream, size_t n, int T, int threads,
                             hs_text_score *out, hs_error *err);

/* The checkpoint's `task` metadata: {"name": "text", "n_ctx", "val_fraction",
 * "repeat" (only when > 0), "split", "files", "bytes", "corpus_fnv1a64", "train_tokens",
 * "heldout_tokens", "unigram_perplexity"}. *json malloc'd. */
hs_status hs_text_task_json(const hs_text *t, char **json, hs_error *err);

/* What `headscope eval` reports on a text model. */
typedef struct {
    hs_text_score score;     /* the model's perplexity on the windows */
    double unigram_ppl;      /* the corpus's training part's unigram, on the held-out windows */
    int n_ctx;               /* the window length used */
    uint64_t same_corpus_hash; /* the corpus's FNV-1a 64 (the task metadata's corpus_fnv1a64
                                  when it is the training corpus) */
} hs_text_eval_result;

/* `headscope eval` on a text model: reads the files, encodes and splits
 * them as the model's run did (trained: the task metadata's val_fraction;
 * tok_json: the checkpoint's `vocab` metadata), and scores m's perplexity on
 * the held-out part (heldout 1) or the training part (0) in windows of T
 * tokens (0 = the trained n_ctx), so on the training corpus it is the number
 * the run printed. Errors: T past the model's positions (HS_ERR_INPUT,
 * "--n-ctx T: the model has positions 0..n_ctx-1 ..."), the corpus's,
 * hs_text_create's, hs_text_perplexity's. */
hs_status hs_text_eval(const hs_model *m, const char *tok_json, const hs_text_params *trained,
                       const char *const *paths, size_t n_paths, int heldout, int T, int threads,
                       hs_text_eval_result *out, hs_error *err);

/* Sampling options of hs_text_generate. */
typedef struct {
    int max_new;          /* tokens to add */
    double temperature;   /* softmax temperature; 0 = greedy */
    int top_k;            /* sample among the k largest logits (ties to the lower id);
                             0 = all; 1 = greedy */
    uint64_t seed;        /* hs_task_rng seed of the draws */
} hs_gen_opts;

/* Continues prompt (n_prompt ids) by o->max_new tokens: each step a forward
 * of the last n_ctx tokens (at most), the last position's logits; greedy
 * (hs_argmax: ties to the lowest id) when temperature is 0 or top_k is 1,
 * else a draw from softmax(logits / temperature) over the top_k (one
 * hs_task_rng draw a token). *ids (malloc'd, the caller frees) holds the
 * prompt then the new tokens, *n their count. Deterministic for a seed.
 * Errors: HS_ERR_INPUT an empty prompt, negative counts; hs_forward's. */
hs_status hs_text_generate(const hs_model *m, const int *prompt, size_t n_prompt,
                           const hs_gen_opts *o, int **ids, size_t *n, hs_error *err);

/* ------------------------------------------------------------------------ */
/* The ladder (tasks/ladder.c; `headscope ladder`)                           */
/*
 * The chapter's ablation ladder on a corpus: one-block text models, each row
 * adding one piece to the row above, all on one BPE (trained on the corpus,
 * or given) and the same split, budget and seed:
 *   0 no context            windows of one token (batch x ctx of them, the
 *                           same tokens a step): the next token from the
 *                           current one alone; uniform attention over one
 *                           position, no positions, no MLP, no norm
 *   1 uniform causal average  the prefix average replacing the token   (*)
 *   2 + positions           learned positions, still replacing         (*)
 *   3 average added, not replacing  the residual connection
 *   4 one learned head replacing  softmax, one head of width d         (*)
 *   5 one head added
 *   6 four heads            of d/4 each
 *   7 + MLP                 4d, GELU
 *   8 + LayerNorm           ln1, ln2, ln_final
 * (*) attn_replace: the attention's output replaces the residual instead of
 * being added to it (the chapter's "replace, not add").
 * Attention without a norm and without an MLP has no ln2; every row has
 * biases. Every row is evaluated at the end only (perplexity over the
 * held-out windows of its n_ctx: row 0 scores every held-out token but the
 * first, the others the first windows x ctx + 1 of them).
 */
#define HS_LADDER_ROWS 9

typedef struct {
    const char *const *corpus; /* (n_corpus) */
    size_t n_corpus;
    const char *tokenizer;     /* a tokenizer.json, or NULL: a BPE of vocab_size */
    int vocab_size;            /* 1024 */
    int steps, d_model, ctx, batch; /* 3000, 128, 128, 32: the chapter's but batch 64 (the whole
                                     ladder in under 30 min on 2 cores: bench/ladder_time.sh) */
    float lr;                  /* 1e-3 */
    double val_fraction;       /* 0.1 */
    unsigned long long seed;   /* 0 */
    int threads;               /* 0 = every CPU; N >= 2: min(N, 9) rows train at once, one
                                  thread each (hs_ladder_run) */
    const char *models_dir;    /* each row's model: DIR/row-R.safetensors (required) */
    int log_every;             /* progress lines (250) */
    void (*progress)(void *ctx, int row, const hs_train_progress *p); /* each row's progress
                                  (row 0..8), or NULL; called from the rows' threads, two
                                  rows' calls at once when they train at once */
    void *ctx_cb;              /* progress's */
} hs_ladder_opts;

hs_ladder_opts hs_ladder_opts_default(void);
/* Row i's name ("no context", ...), "?" out of range. */
const char *hs_ladder_row_name(int i);
/* Row r's (0 <= r < HS_LADDER_ROWS) training job under o, as hs_ladder_run
 * trains it: the text task on o's corpus with the tokenizer.json tok
 * (tok_len bytes, borrowed), its model's config (j->cfg; d_vocab set by
 * hs_train_run from the tokenizer), windows j->text.n_ctx, batch
 * j->train.batch, saved to out (borrowed). bench_train --ladder-row times a
 * row's step with it. */
void hs_ladder_row_job(const hs_ladder_opts *o, int r, const char *tok, size_t tok_len,
                       const char *out, hs_train_job *j);

typedef struct {
    const char *name, *adds;   /* static */
    const char *label;         /* the figure's short name ("average added") */
    size_t n_params;
    double perplexity;         /* held-out */
    size_t heldout_tokens;     /* tokens scored */
    int batch;
    hs_config cfg;
} hs_ladder_row;

typedef struct {
    hs_ladder_opts opts;
    hs_ladder_row rows[HS_LADDER_ROWS];
    double unigram_perplexity; /* of the last row run (windows of ctx) */
    size_t V;
    char *tokenizer_json;      /* the BPE every row used (owned) */
    size_t tokenizer_json_len;
} hs_ladder_report;

/* Trains every row (hs_train_run, text task; a note names each row, and
 * each row's own notes start "row R: ") and fills *out. The rows are
 * independent (each its own seed, data stream and model), so with threads N
 * >= 2 they train in min(N, 9) lanes at once, one thread each, the dearest
 * rows first (a row's step at batch 64 does not keep two threads busy; two
 * rows keep two cores busy); a row's values are those of the row trained
 * alone at any thread count (training's values do not depend on the pool:
 * hs_train). Errors: HS_ERR_INPUT for
 * settings out of range or no models_dir; the corpus's, the BPE's and each
 * run's. *out freed on failure. */
hs_status hs_ladder_run(const hs_ladder_opts *o, const hs_notes *notes, hs_ladder_report *out,
                        hs_error *err);
void hs_ladder_report_free(hs_ladder_report *r);
/* ladder.json: {"rows": [{"row", "adds", "params", "perplexity",
 * "heldout_tokens", "n_ctx", "batch", "config"}], "settings": {"steps", "d_model",
 * "ctx", "batch", "lr", "seed", "val_fraction", "vocab", "tokenizer",
 * "corpus", "unigram_perplexity"}}. NULL out of memory. */
cJSON *hs_ladder_json(const hs_ladder_report *r);

#endif /* HS_TASKS_TEXT_H */
