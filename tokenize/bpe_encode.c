/*
 * tokenize/bpe_encode.c -- a BPE tokenizer's encoder (hs_tok_encode for
 * HS_TOKENIZER_BPE): the text through the pipeline up to the model
 * (hs_pipe_run: added tokens, normalizer, pre-tokenizers), then each
 * pre-token through the BPE model as huggingface/tokenizers'
 * src/models/bpe/model.rs has it: with ignore_merges a pre-token that is a
 * token is taken whole; else its symbols (byte-level: its bytes; otherwise
 * its characters, each a token, or with byte_fallback its bytes' "<0xNN>"
 * tokens, or the unk token, consecutive ones fused with fuse_unk, or
 * dropped when there is none) merged by rank.
 */
#include "tokenize/tokenize_internal.h"

#include <stdlib.h>
#include <string.h>

/* A pending merge: the pair starting at symbol pos, of rank rank. */
typedef struct {
    int32_t rank, pos;
} pending;

/* Per-text scratch for one piece of up to cap bytes. */
typedef struct {
    int *sym, *next, *prev; /* (cap) each symbol's id (-1: merged away), links */
    int *batch;             /* (cap) symbols merged at one rank */
    pending *heap;          /* (3 cap) a binary min-heap by (rank, pos) */
    size_t cap, nh;
} scratch;

static void scratch_free(scratch *w)
{
    free(w->sym);
    free(w->next);
    free(w->prev);
    free(w->batch);
    free(w->heap);
    memset(w, 0, sizeof *w);
}

/* Room for a piece of n bytes; 0, or -1 when memory ran out. */
static int scratch_fit(scratch *w, size_t n)
{
    if (n <= w->cap) return 0;
    scratch_free(w);
    w->sym = malloc(n * sizeof *w->sym);
    w->next = malloc(n * sizeof *w->next);
    w->prev = malloc(n * sizeof *w->prev);
    w->batch = malloc(n * sizeof *w->batch);
    w->heap = malloc(3 * n * sizeof *w->heap);
    if (!w->sym || !w->next || !w->prev || !w->batch || !w->heap) {
        scratch_free(w);
        return -1;
    }
    w->cap = n;
    return 0;
}

static int before(pending a, pending b)
{
    return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos);
}

/* Pushes the pair (i, next[i]) when it is a merge. */
static void push_pair(const hs_bpe *bpe, scratch *w, int i)
{
    int merged;
    const int r = hs_pairmap_get(&bpe->merges, w->sym[i], w->sym[w->next[i]], &merged);
    if (r < 0) return;
    size_t c = w->nh++;
    const pending x = {r, i};
    while (c > 0 && before(x, w->heap[(c - 1) / 2])) {
        w->heap[c] = w->heap[(c - 1) / 2];
        c = (c - 1) / 2;
    }
    w->heap[c] = x;
}

static pending pop_pending(scratch *w)
{
    const pending top = w->heap[0], last = w->heap[--w->nh];
    size_t c = 0;
    for (;;) {
        size_t k = 2 * c + 1;
        if (k >= w->nh) break;
        if (k + 1 < w->nh && before(w->heap[k + 1], w->heap[k])) k++;
        if (!before(w->heap[k], last)) break;
        w->heap[c] = w->heap[k];
        c = k;
    }
    if (w->nh > 0) w->heap[c] = last;
    return top;
}

/* Merges the n >= 1 symbols in w->sym and appends the result at ids[*k]:
 * encoder.py's bpe() with a heap. Each round takes the lowest rank present and merges its
 * occurrences in position order, skipping one whose left symbol an earlier
 * merge of the round took (non-overlapping, left to right); only then are
 * the pairs the round made pushed, so a round is exactly encoder.py's pass
 * over `word` even for merge lists not in training order (tokenizers'
 * Word::merge_all gives the same on merges in training order). Stale entries
 * (their pair changed) are skipped: a rank names one pair. O(n log n). */
static void merge_syms(const hs_bpe *bpe, int n, scratch *w, int *ids, size_t *k)
{
    for (int i = 0; i < n; i++) {
        w->prev[i] = i - 1;
        w->next[i] = i + 1 < n ? i + 1 : -1;
    }
    w->nh = 0;
    for (int i = 0; i + 1 < n; i++) push_pair(bpe, w, i);
    while (w->nh > 0) {
        const int32_t r = w->heap[0].rank;
        size_t nb = 0;
        while (w->nh > 0 && w->heap[0].rank == r) {
            const int i = pop_pending(w).pos;
            int merged;
            if (w->sym[i] < 0 || w->next[i] < 0) continue;
            const int j = w->next[i];
            if (hs_pairmap_get(&bpe->merges, w->sym[i], w->sym[j], &merged) != r) continue;
            w->sym[i] = merged;
            w->sym[j] = -1;
            w->next[i] = w->next[j];
            if (w->next[j] >= 0) w->prev[w->next[j]] = i;
            w->batch[nb++] = i;
        }
        for (size_t b = 0; b < nb; b++) {
            const int i = w->batch[b];
            if (w->prev[i] >= 0) push_pair(bpe, w, w->prev[i]);
            if (w->next[i] >= 0) push_pair(bpe, w, i);
        }
    }
    for (int i = 0; i >= 0; i = w->next[i]) ids[(*k)++] = w->sym[i];
}

/* A growing id list. */
typedef struct {
    int *v;
    size_t n, cap;
} idlist;

static int ids_room(idlist *l, size_t more)
{
    if (l->n + more <= l->cap) return 0;
    size_t cap = l->cap ? 2 * l->cap : 64;
    while (cap < l->n + more) cap *= 2;
    int *v = realloc(l->v, cap * sizeof *v);
    if (!v) return -1;
    l->v = v;
    l->cap = cap;
    return 0;
}

/* The model's id for the len bytes at s (a model token only), or -1. */
static int model_id(const hs_tokenizer *t, const char *s, size_t len)
{
    const hs_bpe *bpe = t->tables->bpe;
    if (!bpe->pipe->byte_level) return hs_idmap_get(&bpe->model_map, s, len);
    const int id = hs_idmap_get(&t->tables->by_text, s, len);
    return id >= 0 && bpe->in_model[id] ? id : -1;
}

/* One pre-token (n >= 1 bytes) through the model, appended to l. */
static hs_status encode_piece(const hs_tokenizer *t, const char *s, size_t n, scratch *w,
                              idlist *l, hs_error *err)
{
    const hs_bpe *bpe = t->tables->bpe;
    const hs_pipe *p = bpe->pipe;
    if (ids_room(l, n) != 0 || scratch_fit(w, n) != 0)
        return hs_fail(err, HS_ERR_NOMEM, "out of memory tokenizing the sentence");
    if (p->ignore_merges) {
        const int id = model_id(t, s, n);
        if (id >= 0) {
            l->v[l->n++] = id;
            return HS_OK;
        }
    }
    int m = 0;
    if (p->byte_level) {
        for (size_t i = 0; i < n; i++) w->sym[m++] = bpe->byte_id[(unsigned char)s[i]];
    } else {
        int unk = 0; /* a pending unk token */
        for (size_t i = 0; i < n;) {
            uint32_t cp;
            size_t len = hs_utf8_decode((const unsigned char *)s + i, n - i, &cp);
            if (len == 0) len = 1;
            const int id = model_id(t, s + i, len);
            int fb = id < 0 && p->byte_fallback;
            for (size_t k = 0; fb && k < len; k++) fb = bpe->byte_tok[(unsigned char)s[i + k]] >= 0;
            if (id >= 0 || fb) {
                if (unk) w->sym[m++] = bpe->unk_id;
                unk = 0;
                if (id >= 0) w->sym[m++] = id;
                else
                    for (size_t k = 0; k < len; k++) w->sym[m++] = bpe->byte_tok[(unsigned char)s[i + k]];
            } else if (bpe->unk_id >= 0) {
                if (unk && !p->fuse_unk) w->sym[m++] = bpe->unk_id;
                unk = 1;
            }
            i += len;
        }
        if (unk) w->sym[m++] = bpe->unk_id;
    }
    if (m > 0) merge_syms(bpe, m, w, l->v, &l->n);
    return HS_OK;
}

hs_status hs_bpe_encode(const hs_tokenizer *t, const char *text, size_t n_ctx, hs_tokens *out,
                        hs_error *err)
{
    memset(out, 0, sizeof *out);
    const int bos = hs_tok_bos(t);
    if (text == NULL || (text[0] == '\0' && bos < 0))
        return hs_fail(err, HS_ERR_INPUT, "sentence is empty");
    const unsigned char *s = (const unsigned char *)text;
    const size_t n = strlen(text);
    if (n >= (size_t)INT32_MAX)
        return hs_fail(err, HS_ERR_INPUT, "sentence has %zu bytes, more than 2^31 - 2", n);
    for (size_t k = 0; k < n;) {
        uint32_t cp;
        const size_t len = hs_utf8_decode(s + k, n - k, &cp);
        if (len == 0)
            return hs_fail(err, HS_ERR_INPUT, "sentence is not valid UTF-8 at byte %zu", k);
        k += len;
    }
    idlist l = {0};
    hs_pieces ps = {0};
    scratch w = {0};
    hs_status st = ids_room(&l, 1) ? hs_fail(err, HS_ERR_NOMEM, "out of memory") : HS_OK;
    if (st == HS_OK && bos >= 0) l.v[l.n++] = bos;
    if (st == HS_OK) st = hs_pipe_run(t->tables->bpe->pipe, text, n, t->tables->special_on, &ps, err);
    for (size_t i = 0; i < ps.n && st == HS_OK; i++) {
        if (ps.p[i].id >= 0) {
            if (ids_room(&l, 1) != 0) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
            else l.v[l.n++] = ps.p[i].id;
        } else {
            st = encode_piece(t, ps.text.s + ps.p[i].off, ps.p[i].len, &w, &l, err);
        }
    }
    const hs_pipe *pp = t->tables->bpe->pipe; /* the post-processor's ids after $A, with the BOS on */
    for (size_t i = 0; i < pp->n_suffix && st == HS_OK && t->tables->bos_on; i++) {
        if (ids_room(&l, 1) != 0) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        else l.v[l.n++] = pp->suffix[i];
    }
    hs_pieces_free(&ps);
    scratch_free(&w);
    const size_t k = l.n;
    if (st == HS_OK && n_ctx > 0 && k > n_ctx)
        st = hs_fail(err, HS_ERR_INPUT,
                     "sentence has %zu tokens, more than the model's context of %zu (n_ctx)", k,
                     n_ctx);
    if (st != HS_OK) {
        free(l.v);
        return st;
    }
    if (k == 0) { /* every character dropped (no unk token) or removed by a Split */
        free(l.v);
        return HS_OK;
    }
    int *fit = realloc(l.v, k * sizeof *l.v);
    out->ids = fit ? fit : l.v;
    out->strs = calloc(k, sizeof *out->strs);
    out->n = k;
    for (size_t i = 0; out->strs && i < k; i++)
        if ((out->strs[i] = hs_strdup(t->words[out->ids[i]])) == NULL) break;
    if (!out->strs || !out->strs[k - 1]) {
        hs_tokens_free(out);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory tokenizing the sentence");
    }
    return HS_OK;
}

hs_status hs_bpe_split(const unsigned char *s, size_t n, hs_bpe_piece_fn fn, void *ctx,
                       hs_error *err)
{
    hs_pipe *pipe = NULL;
    hs_pieces ps = {0};
    hs_status st = hs_pipe_gpt2(-1, &pipe, err);
    if (st == HS_OK) st = hs_pipe_run(pipe, (const char *)s, n, 0, &ps, err);
    for (size_t i = 0; st == HS_OK && i < ps.n; i++)
        if (fn((const unsigned char *)ps.text.s + ps.p[i].off, ps.p[i].len, ctx) != 0)
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory splitting the text");
    hs_pieces_free(&ps);
    hs_pipe_free(pipe);
    return st;
}
