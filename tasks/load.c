/*
 * tasks/load.c -- a checkpoint with what a command needs beside its weights
 * (tasks.h, "Loading a checkpoint"): the weights (a file or a Hugging Face
 * folder; TransformerLens-processed on request), its vocabulary (the
 * checkpoint's, a file's, or id labels) and its task (the checkpoint's
 * metadata, or a split named by the caller).
 */
#include "tasks/tasks.h"
#include "model/checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void hs_loaded_free(hs_loaded *l)
{
    hs_model_destroy(l->model);
    hs_tokenizer_destroy(l->vocab);
    hs_winograd_destroy(l->task);
    hs_induction_destroy(l->ind);
    hs_meta_free(&l->meta);
    memset(l, 0, sizeof *l);
}

/* 1 when path is a folder (a Hugging Face model as downloaded). */
static int is_folder(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* The tokenizer file hs_tokenizer_load_dir reads in folder dir (the first
 * of its order that exists). */
static const char *tokenizer_file(const char *dir)
{
    static const char *const F[] = {"tokenizer.json", "vocab.json", "encoder.json"};
    for (size_t i = 0; i < sizeof F / sizeof F[0]; i++) {
        char p[4096];
        struct stat sb;
        snprintf(p, sizeof p, "%s/%s", dir, F[i]);
        if (stat(p, &sb) == 0) return F[i];
    }
    return "tokenizer";
}

/* A folder's tokenizer with tokens past the model's d_vocab (an added token
 * of tokenizer.json at id >= vocab_size, say): the file and the first such
 * token named (issue 34). */
static hs_status past_vocab(const char *dir, const hs_tokenizer *v, int d_vocab, hs_error *err)
{
    const char *f = tokenizer_file(dir);
    return hs_fail(err, HS_ERR_CONFIG, "%s/%s: token '%.64s' has id %d, past the model's vocabulary "
                   "(d_vocab %d, config.json's vocab_size: ids 0..%d)%s; the model has no embedding "
                   "for it: remove it from %s%s", dir, f, hs_tok_str(v, d_vocab), d_vocab, d_vocab,
                   d_vocab - 1, (int)v->n > d_vocab + 1 ? " (and the tokens after it)" : "", f,
                   strcmp(f, "tokenizer.json") == 0 ? "'s added_tokens" : "");
}

/* 1 when load_vocab reads the tokenizer of folder path unless the
 * checkpoint names its vocabulary (its `vocab` metadata). */
static int reads_folder_tokenizer(const char *path, int need, const hs_load_source *src)
{
    return !src->vocab && is_folder(path) &&
           ((need & (HS_NEED_VOCAB | HS_NEED_TASK | HS_NEED_ANY_TASK)) ||
            strcmp(tokenizer_file(path), "tokenizer") != 0);
}

/* A folder's tokenizer read on the pool's lane (hs_pool_async) while the
 * weights load: hs_tokenizer_load_dir's result, status and error. */
typedef struct {
    const char *dir;
    hs_tokenizer *tok;
    hs_status st;
    hs_error err;
} early_tok;

static void early_tok_run(void *arg)
{
    early_tok *e = *(early_tok **)arg;
    e->st = hs_tokenizer_load_dir(e->dir, &e->tok, &e->err);
}

/* The vocabulary: src's file, the checkpoint's, a folder's tokenizer (early's
 * when it read it already: early NULL, or its tok taken), or id labels. */
static hs_status load_vocab(const char *path, int need, const hs_load_source *src,
                            const hs_notes *notes, early_tok *early, hs_loaded *out, hs_error *err)
{
    hs_status st;
    int padded = 0;
    if (src->vocab) {
        if (out->meta.vocab)
            hs_note(notes, HS_NOTE_CMD, "note: --vocab %s replaces the checkpoint's vocabulary",
                    src->vocab);
        st = hs_tokenizer_read(src->vocab, &out->vocab, err);
    } else if (out->meta.vocab) {
        st = hs_tokenizer_from_json(out->meta.vocab, &out->vocab, err);
    } else if (reads_folder_tokenizer(path, need, src)) {
        /* (a folder without any tokenizer file, read by a caller that needs no
         * vocabulary, gets id labels below, as a file without vocab metadata) */
        if (early) {
            st = early->st;
            out->vocab = early->tok;
            early->tok = NULL;
            if (st != HS_OK) *err = early->err;
        } else {
            st = hs_tokenizer_load_dir(path, &out->vocab, err);
        }
        if (st == HS_OK && (int)out->vocab->n > out->model->cfg.d_vocab)
            return past_vocab(path, out->vocab, out->model->cfg.d_vocab, err);
        /* config.json's vocab_size may pad the embedding past the tokenizer's
         * ids (Pythia: 50,304 rows, 50,277 tokens; Qwen 2.5): those ids have no
         * token, are never encoded, and are labelled by id where shown */
        if (st == HS_OK && (int)out->vocab->n < out->model->cfg.d_vocab) {
            hs_note(notes, HS_NOTE_CMD, "note: %s's tokenizer has %zu tokens, its vocab_size %d: ids "
                    "%zu..%d are padding without a token (shown as #id, null in JSON)", path,
                    out->vocab->n, out->model->cfg.d_vocab, out->vocab->n, out->model->cfg.d_vocab - 1);
            padded = 1;
        }
    } else if (need & (HS_NEED_VOCAB | HS_NEED_TASK | HS_NEED_ANY_TASK)) {
        return hs_fail(err, HS_ERR_INPUT, "%s has no vocab metadata; headscope needs the word "
                       "list to read sentences: give --vocab FILE (one token a line, or a JSON "
                       "list)", path);
    } else {
        st = hs_tokenizer_ids(out->model->cfg.d_vocab, &out->vocab, err);
        out->vocab_is_ids = 1;
    }
    if (st == HS_OK && src->no_bos) hs_tok_set_bos(out->vocab, 0);
    if (st == HS_OK && src->no_special) hs_tok_set_special(out->vocab, 0);
    if (st == HS_OK && !padded && (int)out->vocab->n != out->model->cfg.d_vocab)
        st = hs_fail(err, HS_ERR_CONFIG, "%s: vocab%s%s has %zu words but d_vocab is %d", path,
                     src->vocab ? " " : "", src->vocab ? src->vocab : "", out->vocab->n,
                     out->model->cfg.d_vocab);
    return st;
}

/* Says that t's held-out split is headscope's own, derived from the seed
 * (named by whence: "--split-seed", ...), which pairs it holds out, and why
 * (a model trained elsewhere was trained on another split, and may have seen
 * most of these pairs). */
static void note_derived_split(const hs_winograd *t, const char *whence, const char *why,
                               const hs_notes *notes)
{
    hs_buf b = {0};
    for (size_t k = 0; k < t->n_heldout_pairs; k++)
        hs_buf_printf(&b, "%s(%s, %s)", k ? ", " : "", hs_wg_nouns[t->heldout_pairs[k][0]],
                      hs_wg_nouns[t->heldout_pairs[k][1]]);
    char *pairs = hs_buf_take(&b);
    hs_note(notes, HS_NOTE_CMD, "note: the held-out split is headscope's own for %s %llu (%zu "
            "pairs: %s), %s", whence, (unsigned long long)t->split_seed, t->n_heldout_pairs,
            pairs ? pairs : "(out of memory)", why);
    free(pairs);
}

/* What a model with a BPE tokenizer (a pretrained folder, a text model)
 * takes instead of a task's commands. */
/* What eval (HS_NEED_TASK) scores, said alike in each of its refusals. */
#define EVAL_SCORES "this command scores a Winograd-task model's referent accuracy, or with " \
                    "--corpus FILE... a text model's (train --task text) perplexity"
#define BPE_INSTEAD "on a pretrained or text model: a prompt set from `headscope prompts`, then " \
                    "patch or discover --data FILE.jsonl"

/* The task: the checkpoint's, or the Winograd split src names. */
static hs_status load_task(const char *path, int need, const hs_load_source *src,
                           const hs_notes *notes, hs_loaded *out, hs_error *err)
{
    const int split_given = src->has_split_seed || src->heldout_pairs;
    if (out->meta.task != NULL && split_given)
        return hs_fail(err, HS_ERR_INPUT, "%s names its task and split in its metadata; "
                       "--split-seed / --heldout-pairs are for checkpoints without it", path);
    char *tname = NULL;
    const int is_ind = out->meta.task != NULL &&
                       hs_task_json_name(out->meta.task, &tname, err) == HS_OK &&
                       strcmp(tname, "induction") == 0;
    const int is_text = out->meta.task != NULL && tname != NULL && strcmp(tname, "text") == 0;
    free(tname);
    if (is_text) {
        if (need & HS_NEED_TASK) /* eval's Winograd score: a text model's score is its perplexity */
            return hs_fail(err, HS_ERR_INPUT, "%s is a text model; give --corpus FILE... to score "
                           "its perplexity (without it this command scores a Winograd model)", path);
        if ((need & HS_NEED_ANY_TASK) && !(need & HS_ALLOW_TEXT))
            return hs_fail(err, HS_ERR_INPUT, "%s is a text model; this command needs a model "
                           "trained on the Winograd or induction task (%s)", path, BPE_INSTEAD);
        out->is_text = 1;
        hs_tok_set_bos(out->vocab, 0);
        return hs_text_params_from_json(out->meta.task, &out->text, err);
    }
    if (is_ind) {
        if (need & HS_NEED_TASK)
            return hs_fail(err, HS_ERR_INPUT, "%s is an induction-task model; %s (an induction "
                           "model's held-out accuracy: circuit or timeline)", path, EVAL_SCORES);
        return hs_induction_from_task_json(out->meta.task, out->vocab, &out->ind, err);
    }
    if (out->meta.task != NULL) {
        hs_status st = hs_winograd_from_task_json(out->meta.task, out->vocab, &out->task, err);
        if (st == HS_OK && !out->task->pairs_read)
            note_derived_split(out->task, "the checkpoint's split_seed",
                               "derived from the seed: its task metadata names no heldout_pairs",
                               notes);
        return st;
    }
    /* a BPE's vocabulary (a pretrained folder) is no task's: the split flags
     * cannot make it one */
    if ((need & HS_NEED_TASK) && out->vocab != NULL && out->vocab->kind == HS_TOKENIZER_BPE)
        return hs_fail(err, HS_ERR_INPUT, "%s has a BPE tokenizer and no task metadata; %s (on "
                       "a pretrained model: a prompt set from `headscope prompts`, then patch or "
                       "discover --data FILE.jsonl)", path, EVAL_SCORES);
    if ((need & HS_NEED_ANY_TASK) && out->vocab != NULL && out->vocab->kind == HS_TOKENIZER_BPE)
        return hs_fail(err, HS_ERR_INPUT, "%s has a BPE tokenizer and no task metadata; this "
                       "command needs a model trained on the Winograd or induction task (%s)",
                       path, BPE_INSTEAD);
    if (src->has_split_seed) {
        hs_status st = hs_winograd_create(HS_TASK_WINOGRAD, (uint64_t)src->split_seed, out->vocab,
                                          &out->task, err);
        if (st == HS_OK)
            note_derived_split(out->task, "--split-seed",
                               "not read from the checkpoint: a model trained on a split of its "
                               "own is scored on its training pairs here; give its held-out "
                               "pairs with --heldout-pairs FILE", notes);
        return st;
    }
    if (src->heldout_pairs) {
        int pairs[HS_WG_MAX_HELDOUT_PAIRS][2];
        size_t n = 0;
        hs_status st = hs_wg_pairs_read(src->heldout_pairs, pairs, HS_WG_MAX_HELDOUT_PAIRS, &n, err);
        if (st == HS_OK)
            st = hs_winograd_create_pairs(HS_TASK_WINOGRAD, (const int(*)[2])pairs, n, out->vocab,
                                          &out->task, err);
        return st;
    }
    if (need & (HS_NEED_TASK | HS_NEED_ANY_TASK))
        return hs_fail(err, HS_ERR_INPUT, "%s has no task metadata (which task and split it was "
                       "trained on); give --split-seed S or --heldout-pairs FILE", path);
    return HS_OK;
}

hs_status hs_load(const char *path, int need, const hs_load_source *src, const hs_notes *notes,
                  hs_loaded *out, hs_error *err)
{
    static const hs_load_source none = {0};
    if (src == NULL) src = &none;
    memset(out, 0, sizeof *out);
    if (src->has_split_seed && src->heldout_pairs)
        return hs_fail(err, HS_ERR_INPUT, "give --split-seed or --heldout-pairs, not both");
    const int tl = src->process && strcmp(src->process, "tl") == 0;
    if (src->process && !tl && strcmp(src->process, "raw") != 0)
        return hs_fail(err, HS_ERR_INPUT, "--process '%.32s' is not known (tl or raw)", src->process);
    /* a folder's tokenizer (GPT-2 small's: ~50 ms, cJSON's parse of
     * vocab.json and the merges' table) read on the pool's lane while the
     * weights load and are scanned here, on the pool's other workers as
     * they come free: a one-prompt run's load on both cores, not one after
     * the other. Its error, if any, is said where load_vocab reads it
     * (after the checkpoint's own), as without the pool. */
    early_tok early = {path, NULL, HS_OK, {0}}, *ep = &early;
    long ticket = 0;
    const int overlap = hs_pool_threads(src->pool) >= 2 && reads_folder_tokenizer(path, need, src);
    if (overlap) ticket = hs_pool_async(src->pool, early_tok_run, &ep, sizeof ep);
    hs_status st = hs_checkpoint_load_pool(path, notes, src->pool, &out->model, &out->meta, NULL, err);
    /* this thread idle until the tokenizer is read: the products' probes
     * now, not in the first forward (GPT-2 small: ~2 ms of its 37 ms load,
     * the tokenizer its longer half) */
    if (st == HS_OK && overlap && !hs_pool_done(src->pool, ticket)) hs_model_warm(out->model);
    hs_pool_wait(src->pool, ticket);
    if (st != HS_OK) {
        hs_tokenizer_destroy(early.tok);
        return st;
    }
    if (out->meta.warning) hs_note(notes, HS_NOTE_CMD, "warning: %s", out->meta.warning);
    if (tl) {
        st = hs_model_process_tl(out->model, err);
        if (st != HS_OK) {
            hs_tokenizer_destroy(early.tok);
            hs_loaded_free(out);
            return st;
        }
        hs_note(notes, HS_NOTE_CMD, "note: weights processed as TransformerLens' from_pretrained "
                "does (fold_ln, center_writing_weights, center_unembed, fold_value_biases); "
                "every DLA output says \"weights\": \"tl-processed\"");
    }
    if (st == HS_OK) st = load_vocab(path, need, src, notes, overlap ? &early : NULL, out, err);
    hs_tokenizer_destroy(early.tok); /* read early, not taken (the checkpoint names its vocabulary) */
    if (st == HS_OK) st = load_task(path, need, src, notes, out, err);
    if (st != HS_OK) hs_loaded_free(out);
    return st;
}
