/*
 * tokenize/bpe_train.c -- a corpus (the texts of files, hs_corpus_read) and a
 * byte-level BPE trained on it (hs_bpe_train), written as a Hugging Face
 * tokenizer.json that hs_tokenizer_from_hf_json and `tokenizers` read.
 *
 * The algorithm (Sennrich et al. 2016 on GPT-2's byte-level pieces, as
 * Hugging Face's BpeTrainer does it): each file is split by GPT-2's
 * pre-tokenizer (hs_bpe_split: merges never cross a piece), the unique pieces
 * are counted, each a list of byte ids 0..255 (id = the byte's value). Every
 * round merges the most frequent adjacent pair of ids (a, b), counted over
 * every position of every piece times its count (overlaps included: "aaa"
 * holds (a, a) twice); ties go to the smallest pair, a first then b, by id.
 * The merge is applied to every piece left to right without overlap ("aaa"
 * -> "aa" "a"), exactly as the encoder (bpe.c) applies it, so encoding the
 * corpus gives the tokens counted here. The new token is the bytes of a then
 * b, id 256, 257, ... in merge order; when those bytes are already a token
 * (("a", "bc") after ("ab", "c")), the merge is kept and makes that token
 * (Hugging Face's trainer does the same), so V counts tokens, not merges.
 *
 * Speed: the pair counts live in a hash map; a lazy max-heap of (count,
 * pair) entries picks the best pair (an entry whose count is no longer the
 * pair's is dropped when it surfaces); each pair lists the pieces it occurs
 * in, so a round re-reads only those pieces (subtract their old pairs, merge,
 * add the new ones) and pushes the pairs whose counts changed. No rescan of
 * the corpus per merge.
 */
#include "tokenize/tokenize_internal.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* The corpus                                                                */

void hs_corpus_free(hs_corpus *c)
{
    if (c == NULL) return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->paths ? c->paths[i] : NULL);
        free(c->text ? c->text[i] : NULL);
    }
    free(c->paths);
    free(c->text);
    free(c->len);
    memset(c, 0, sizeof *c);
}

hs_status hs_corpus_read(const char *const *paths, size_t n, hs_corpus *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    if (n == 0) return hs_fail(err, HS_ERR_INPUT, "no corpus: name at least one file");
    out->paths = calloc(n, sizeof *out->paths);
    out->text = calloc(n, sizeof *out->text);
    out->len = calloc(n, sizeof *out->len);
    if (!out->paths || !out->text || !out->len) {
        hs_corpus_free(out);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory reading the corpus");
    }
    out->n = n;
    hs_status st = HS_OK;
    for (size_t i = 0; i < n && st == HS_OK; i++) {
        out->paths[i] = hs_strdup(paths[i]);
        if (!out->paths[i]) {
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory reading the corpus");
            break;
        }
        st = hs_read_file(paths[i], &out->text[i], &out->len[i], err);
        if (st != HS_OK) break;
        const unsigned char *s = out->text[i];
        if (out->len[i] == 0) {
            st = hs_fail(err, HS_ERR_INPUT, "corpus file %s is empty", paths[i]);
            break;
        }
        for (size_t k = 0; k < out->len[i];) {
            uint32_t cp;
            const size_t l = hs_utf8_decode(s + k, out->len[i] - k, &cp);
            if (l == 0) {
                st = hs_fail(err, HS_ERR_INPUT, "corpus file %s is not valid UTF-8 at byte %zu",
                             paths[i], k);
                break;
            }
            k += l;
            out->chars++;
        }
        out->bytes += out->len[i];
    }
    if (st != HS_OK) hs_corpus_free(out);
    return st;
}

/* ------------------------------------------------------------------------ */
/* A map from byte strings to dense indices (pieces, token bytes)            */

typedef struct {
    uint32_t *slot; /* (cap) index + 1, 0 empty */
    size_t cap, n;
    hs_buf keys;     /* every key's bytes, one after another */
    size_t *off;     /* (n) where key i starts in keys */
    size_t *len;     /* (n) its length */
    size_t room;     /* entries off / len have room for */
} strmap;

static uint64_t fnv1a(const unsigned char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

static void strmap_free(strmap *m)
{
    free(m->slot);
    free(m->off);
    free(m->len);
    hs_buf_free(&m->keys);
    memset(m, 0, sizeof *m);
}

/* Doubles the table (rehashing every key). 0, or -1 out of memory. */
static int strmap_grow(strmap *m)
{
    const size_t cap = m->cap ? 2 * m->cap : 1024;
    uint32_t *slot = calloc(cap, sizeof *slot);
    if (!slot) return -1;
    for (size_t i = 0; i < m->n; i++) {
        size_t h = (size_t)fnv1a((const unsigned char *)m->keys.s + m->off[i], m->len[i]) & (cap - 1);
        while (slot[h]) h = (h + 1) & (cap - 1);
        slot[h] = (uint32_t)(i + 1);
    }
    free(m->slot);
    m->slot = slot;
    m->cap = cap;
    return 0;
}

/* The index of key s (n bytes), added when new (*added = 1). -1 out of
 * memory. */
static long strmap_put(strmap *m, const unsigned char *s, size_t n, int *added)
{
    *added = 0;
    if (2 * (m->n + 1) > m->cap && strmap_grow(m) != 0) return -1;
    size_t h = (size_t)fnv1a(s, n) & (m->cap - 1);
    for (; m->slot[h]; h = (h + 1) & (m->cap - 1)) {
        const size_t i = m->slot[h] - 1;
        if (m->len[i] == n && memcmp(m->keys.s + m->off[i], s, n) == 0) return (long)i;
    }
    if (m->n == m->room) {
        const size_t room = m->room ? 2 * m->room : 1024;
        size_t *off = realloc(m->off, room * sizeof *off);
        if (off) m->off = off;
        size_t *len = off ? realloc(m->len, room * sizeof *len) : NULL;
        if (!len) return -1;
        m->len = len;
        m->room = room;
    }
    m->off[m->n] = m->keys.len;
    m->len[m->n] = n;
    if (hs_buf_append(&m->keys, (const char *)s, n) != 0 || m->keys.oom) return -1;
    m->slot[h] = (uint32_t)(m->n + 1);
    *added = 1;
    return (long)m->n++;
}

/* ------------------------------------------------------------------------ */
/* The trainer's state                                                       */

typedef struct {
    int64_t cnt;  /* the pair's count when pushed */
    int32_t pair; /* index into the pair table */
} entry;

typedef struct {
    /* pieces: piece w's ids are sym[off[w] .. off[w] + len[w]), count cnt[w] */
    strmap pieces;
    int64_t *pcnt;  /* (room) each piece's count while splitting */
    size_t pcnt_room;
    int32_t *sym;
    size_t *off;
    uint32_t *len;
    int32_t *stamp; /* (pieces) the last round that re-read the piece */
    /* pairs: open addressing on a << 32 | b */
    uint64_t *pkey; /* (pcap) UINT64_MAX empty */
    int32_t *pidx;  /* (pcap) index of the pair at that slot */
    size_t pcap, np, proom;
    int32_t *pa, *pb;  /* (np) the pair's ids */
    int64_t *cnt;      /* (np) its count now */
    int32_t *touched;  /* (np) the last round that changed it */
    int32_t **where;   /* (np) pieces holding it (may hold pieces that lost it) */
    uint32_t *nwhere, *rwhere;
    int32_t *changed;  /* pairs changed this round */
    size_t nchanged, rchanged;
    entry *heap;
    size_t nheap, rheap;
    int oom;
} trainer;

static void trainer_free(trainer *t)
{
    strmap_free(&t->pieces);
    free(t->pcnt);
    free(t->sym);
    free(t->off);
    free(t->len);
    free(t->stamp);
    free(t->pkey);
    free(t->pidx);
    free(t->pa);
    free(t->pb);
    free(t->cnt);
    free(t->touched);
    for (size_t i = 0; i < t->np; i++) free(t->where[i]);
    free(t->where);
    free(t->nwhere);
    free(t->rwhere);
    free(t->changed);
    free(t->heap);
}

/* Grows *p (elements of size sz, *room of them) to hold need. */
static int grow(void *pp, size_t *room, size_t need, size_t sz)
{
    if (need <= *room) return 0;
    size_t r = *room ? *room : 64;
    while (r < need) r *= 2;
    void *q = realloc(*(void **)pp, r * sz);
    if (!q) return -1;
    *(void **)pp = q;
    *room = r;
    return 0;
}

/* The pre-tokenizer's callback: count one piece. */
static int count_piece(const unsigned char *s, size_t n, void *ctx)
{
    trainer *t = ctx;
    int added;
    const long w = strmap_put(&t->pieces, s, n, &added);
    if (w < 0 || grow(&t->pcnt, &t->pcnt_room, (size_t)w + 1, sizeof *t->pcnt) != 0) return -1;
    if (added) t->pcnt[w] = 0;
    t->pcnt[w]++;
    return 0;
}

static int heap_above(const trainer *t, entry x, entry y)
{
    if (x.cnt != y.cnt) return x.cnt > y.cnt;
    if (t->pa[x.pair] != t->pa[y.pair]) return t->pa[x.pair] < t->pa[y.pair];
    return t->pb[x.pair] < t->pb[y.pair];
}

static void heap_push(trainer *t, entry x)
{
    if (grow(&t->heap, &t->rheap, t->nheap + 1, sizeof *t->heap) != 0) {
        t->oom = 1;
        return;
    }
    size_t c = t->nheap++;
    while (c > 0 && heap_above(t, x, t->heap[(c - 1) / 2])) {
        t->heap[c] = t->heap[(c - 1) / 2];
        c = (c - 1) / 2;
    }
    t->heap[c] = x;
}

static void heap_pop(trainer *t)
{
    const entry last = t->heap[--t->nheap];
    size_t c = 0;
    for (;;) {
        size_t k = 2 * c + 1;
        if (k >= t->nheap) break;
        if (k + 1 < t->nheap && heap_above(t, t->heap[k + 1], t->heap[k])) k++;
        if (!heap_above(t, t->heap[k], last)) break;
        t->heap[c] = t->heap[k];
        c = k;
    }
    if (t->nheap > 0) t->heap[c] = last;
}

/* The index of pair (a, b), added with count 0 when new; -1 out of memory. */
static int32_t pair_of(trainer *t, int32_t a, int32_t b)
{
    const uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    if (2 * (t->np + 1) > t->pcap) {
        const size_t cap = t->pcap ? 2 * t->pcap : 4096;
        uint64_t *k = malloc(cap * sizeof *k);
        int32_t *ix = malloc(cap * sizeof *ix);
        if (!k || !ix) {
            free(k);
            free(ix);
            return -1;
        }
        for (size_t i = 0; i < cap; i++) k[i] = UINT64_MAX;
        for (size_t i = 0; i < t->pcap; i++) {
            if (t->pkey[i] == UINT64_MAX) continue;
            size_t h = (size_t)((t->pkey[i] * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
            while (k[h] != UINT64_MAX) h = (h + 1) & (cap - 1);
            k[h] = t->pkey[i];
            ix[h] = t->pidx[i];
        }
        free(t->pkey);
        free(t->pidx);
        t->pkey = k;
        t->pidx = ix;
        t->pcap = cap;
    }
    size_t h = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (t->pcap - 1);
    for (; t->pkey[h] != UINT64_MAX; h = (h + 1) & (t->pcap - 1))
        if (t->pkey[h] == key) return t->pidx[h];
    if (t->np == t->proom) {
        const size_t r = t->proom ? 2 * t->proom : 4096;
        int32_t *pa = realloc(t->pa, r * sizeof *pa);
        if (pa) t->pa = pa;
        int32_t *pb = pa ? realloc(t->pb, r * sizeof *pb) : NULL;
        if (pb) t->pb = pb;
        int64_t *cnt = pb ? realloc(t->cnt, r * sizeof *cnt) : NULL;
        if (cnt) t->cnt = cnt;
        int32_t *tc = cnt ? realloc(t->touched, r * sizeof *tc) : NULL;
        if (tc) t->touched = tc;
        int32_t **wh = tc ? realloc(t->where, r * sizeof *wh) : NULL;
        if (wh) t->where = wh;
        uint32_t *nw = wh ? realloc(t->nwhere, r * sizeof *nw) : NULL;
        if (nw) t->nwhere = nw;
        uint32_t *rw = nw ? realloc(t->rwhere, r * sizeof *rw) : NULL;
        if (!rw) return -1;
        t->rwhere = rw;
        t->proom = r;
    }
    const int32_t p = (int32_t)t->np++;
    t->pkey[h] = key;
    t->pidx[h] = p;
    t->pa[p] = a;
    t->pb[p] = b;
    t->cnt[p] = 0;
    t->touched[p] = -1;
    t->where[p] = NULL;
    t->nwhere[p] = t->rwhere[p] = 0;
    return p;
}

/* Adds d to pair (a, b)'s count in round r (noted as changed); with w >= 0
 * also lists piece w under the pair (unless it was the last one listed). */
static void pair_add(trainer *t, int32_t a, int32_t b, int64_t d, int32_t r, int32_t w)
{
    const int32_t p = pair_of(t, a, b);
    if (p < 0) {
        t->oom = 1;
        return;
    }
    t->cnt[p] += d;
    if (t->touched[p] != r) {
        t->touched[p] = r;
        if (grow(&t->changed, &t->rchanged, t->nchanged + 1, sizeof *t->changed) != 0) {
            t->oom = 1;
            return;
        }
        t->changed[t->nchanged++] = p;
    }
    if (w < 0 || (t->nwhere[p] > 0 && t->where[p][t->nwhere[p] - 1] == w)) return;
    size_t room = t->rwhere[p];
    if (grow(&t->where[p], &room, (size_t)t->nwhere[p] + 1, sizeof *t->where[p]) != 0 ||
        room > UINT32_MAX) {
        t->oom = 1;
        return;
    }
    t->rwhere[p] = (uint32_t)room;
    t->where[p][t->nwhere[p]++] = w;
}

/* Merges (a, b) -> m in piece w (left to right, no overlap) in round r,
 * updating the pair counts and listing w under the pairs with m. */
static void merge_piece(trainer *t, int32_t w, int32_t a, int32_t b, int32_t m, int32_t r)
{
    int32_t *s = t->sym + t->off[w];
    const uint32_t n = t->len[w];
    const int64_t c = t->pcnt[w];
    uint32_t i = 0;
    while (i + 1 < n && !(s[i] == a && s[i + 1] == b)) i++;
    if (i + 1 >= n) return; /* a stale listing: the piece lost the pair */
    for (uint32_t k = 0; k + 1 < n; k++) pair_add(t, s[k], s[k + 1], -c, r, -1);
    uint32_t o = 0;
    for (uint32_t k = 0; k < n;) {
        if (k + 1 < n && s[k] == a && s[k + 1] == b) {
            s[o++] = m;
            k += 2;
        } else {
            s[o++] = s[k++];
        }
    }
    t->len[w] = o;
    for (uint32_t k = 0; k + 1 < o; k++)
        pair_add(t, s[k], s[k + 1], c, r, s[k] == m || s[k + 1] == m ? w : -1);
}

/* ------------------------------------------------------------------------ */
/* Training                                                                  */

void hs_bpe_trained_free(hs_bpe_trained *b)
{
    if (b == NULL) return;
    free(b->merges);
    free(b->tok_off);
    free(b->tok_len);
    free(b->tok_bytes);
    free(b->json);
    memset(b, 0, sizeof *b);
}

/* Splits every file and lays the unique pieces out as byte ids. */
static hs_status split_corpus(trainer *t, const hs_corpus *c, hs_bpe_trained *out, hs_error *err)
{
    for (size_t i = 0; i < c->n; i++) {
        hs_status st = hs_bpe_split(c->text[i], c->len[i], count_piece, t, err);
        if (st != HS_OK) return st;
    }
    const size_t np = t->pieces.n;
    t->sym = malloc((t->pieces.keys.len + 1) * sizeof *t->sym);
    t->off = malloc((np + 1) * sizeof *t->off);
    t->len = malloc((np + 1) * sizeof *t->len);
    t->stamp = malloc((np + 1) * sizeof *t->stamp);
    if (!t->sym || !t->off || !t->len || !t->stamp)
        return hs_fail(err, HS_ERR_NOMEM, "out of memory training the BPE");
    for (size_t w = 0; w < np; w++) {
        const unsigned char *s = (const unsigned char *)t->pieces.keys.s + t->pieces.off[w];
        t->off[w] = t->pieces.off[w];
        t->len[w] = (uint32_t)t->pieces.len[w];
        t->stamp[w] = -1;
        for (size_t k = 0; k < t->pieces.len[w]; k++) t->sym[t->off[w] + k] = s[k];
        out->pieces += (size_t)t->pcnt[w];
    }
    out->unique_pieces = np;
    for (size_t w = 0; w < np && !t->oom; w++) {
        const int32_t *s = t->sym + t->off[w];
        for (uint32_t k = 0; k + 1 < t->len[w]; k++)
            pair_add(t, s[k], s[k + 1], t->pcnt[w], 0, (int32_t)w);
    }
    for (size_t p = 0; p < t->np && !t->oom; p++) heap_push(t, (entry){t->cnt[p], (int32_t)p});
    t->nchanged = 0;
    return t->oom ? hs_fail(err, HS_ERR_NOMEM, "out of memory training the BPE") : HS_OK;
}

/* The tokenizer.json text of the trained tables (a Hugging Face BPE with
 * GPT-2's ByteLevel pre-tokenizer and decoder). */
static hs_status write_json(hs_bpe_trained *b, hs_error *err)
{
    uint32_t cp_of[256];
    int byte_of[HS_ALPHA_MAX];
    hs_byte_alphabet(cp_of, byte_of);
    cJSON *root = cJSON_CreateObject(), *vocab = cJSON_CreateObject(),
          *merges = cJSON_CreateArray();
    hs_buf s = {0};
    int ok = root && vocab && merges;
    char **str = calloc(b->V, sizeof *str);
    ok = ok && str;
    for (size_t i = 0; ok && i < b->V; i++) {
        hs_buf_init(&s);
        for (size_t k = 0; k < b->tok_len[i]; k++) {
            hs_utf8_put(&s, cp_of[b->tok_bytes[b->tok_off[i] + k]]);
        }
        str[i] = hs_buf_take(&s);
        ok = str[i] != NULL && cJSON_AddNumberToObject(vocab, str[i], (double)i) != NULL;
    }
    for (size_t r = 0; ok && r < b->n_merges; r++) {
        char *m = hs_strfmt("%s %s", str[b->merges[r][0]], str[b->merges[r][1]]);
        cJSON *it = m ? cJSON_CreateString(m) : NULL;
        free(m);
        ok = it != NULL && cJSON_AddItemToArray(merges, it);
    }
    for (size_t i = 0; str && i < b->V; i++) free(str[i]);
    free(str);
    if (ok) {
        cJSON *pre = cJSON_CreateObject(), *dec = cJSON_CreateObject(),
              *model = cJSON_CreateObject();
        ok = pre && dec && model;
        if (ok) {
            cJSON_AddStringToObject(root, "version", "1.0");
            cJSON_AddNullToObject(root, "truncation");
            cJSON_AddNullToObject(root, "padding");
            cJSON_AddItemToObject(root, "added_tokens", cJSON_CreateArray());
            cJSON_AddNullToObject(root, "normalizer");
            cJSON *both[2] = {pre, dec};
            for (int k = 0; k < 2; k++) {
                cJSON_AddStringToObject(both[k], "type", "ByteLevel");
                cJSON_AddFalseToObject(both[k], "add_prefix_space");
                cJSON_AddTrueToObject(both[k], "trim_offsets");
                cJSON_AddTrueToObject(both[k], "use_regex");
            }
            cJSON_AddItemToObject(root, "pre_tokenizer", pre);
            cJSON_AddNullToObject(root, "post_processor");
            cJSON_AddItemToObject(root, "decoder", dec);
            cJSON_AddStringToObject(model, "type", "BPE");
            cJSON_AddNullToObject(model, "dropout");
            cJSON_AddNullToObject(model, "unk_token");
            cJSON_AddNullToObject(model, "continuing_subword_prefix");
            cJSON_AddNullToObject(model, "end_of_word_suffix");
            cJSON_AddFalseToObject(model, "fuse_unk");
            cJSON_AddFalseToObject(model, "byte_fallback");
            cJSON_AddFalseToObject(model, "ignore_merges");
            cJSON_AddItemToObject(model, "vocab", vocab);
            cJSON_AddItemToObject(model, "merges", merges);
            vocab = merges = NULL;
            cJSON_AddItemToObject(root, "model", model);
        } else {
            cJSON_Delete(pre);
            cJSON_Delete(dec);
            cJSON_Delete(model);
        }
    }
    if (ok) {
        hs_buf j = {0};
        ok = hs_json_print_buf(&j, root, 1) && !j.oom && hs_buf_append(&j, "\n", 1) == 0 &&
             !j.oom;
        b->json_len = j.len;
        b->json = ok ? hs_buf_take(&j) : NULL;
        hs_buf_free(&j);
        ok = b->json != NULL;
    }
    cJSON_Delete(root);
    cJSON_Delete(vocab);
    cJSON_Delete(merges);
    return ok ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory writing the tokenizer");
}

/* Adds the token of bytes s (n) made by a merge, or finds it; its id in *id.
 * -1 out of memory. */
static int add_token(strmap *toks, hs_bpe_trained *b, const unsigned char *s, size_t n, int *id)
{
    int added;
    const long i = strmap_put(toks, s, n, &added);
    if (i < 0) return -1;
    *id = (int)i;
    if (!added) return 0;
    b->V = (size_t)i + 1;
    return 0;
}

hs_status hs_bpe_train(const hs_corpus *c, int vocab_size, const hs_notes *notes,
                       hs_bpe_trained *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    if (vocab_size < 257 || vocab_size > HS_BPE_TRAIN_MAX_VOCAB)
        return hs_fail(err, HS_ERR_INPUT, "--vocab-size %d: a byte-level BPE has the 256 bytes and "
                       "at least one merge, so 257 to %d", vocab_size, HS_BPE_TRAIN_MAX_VOCAB);
    trainer t = {0};
    strmap toks = {0};
    hs_status st = split_corpus(&t, c, out, err);
    out->merges = malloc((size_t)vocab_size * sizeof *out->merges);
    if (st == HS_OK && !out->merges)
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory training the BPE");
    for (int b = 0; b < 256 && st == HS_OK; b++) {
        const unsigned char byte = (unsigned char)b;
        int id;
        if (add_token(&toks, out, &byte, 1, &id) != 0)
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory training the BPE");
    }
    size_t mroom = (size_t)vocab_size;
    for (int32_t r = 1; st == HS_OK && out->V < (size_t)vocab_size; r++) {
        while (t.nheap > 0 && t.heap[0].cnt != t.cnt[t.heap[0].pair]) heap_pop(&t);
        if (t.nheap == 0 || t.heap[0].cnt <= 0) {
            hs_note(notes, HS_NOTE_CMD, "note: no pair is left to merge after %zu merges: the "
                    "vocabulary has %zu tokens, not %d", out->n_merges, out->V, vocab_size);
            break;
        }
        const int32_t p = t.heap[0].pair, a = t.pa[p], b = t.pb[p];
        heap_pop(&t);
        /* the new token's bytes: a's then b's */
        const size_t la = toks.len[a], lb = toks.len[b];
        unsigned char *nb = malloc(la + lb);
        int m = -1;
        if (!nb || (memcpy(nb, toks.keys.s + toks.off[a], la),
                    memcpy(nb + la, toks.keys.s + toks.off[b], lb),
                    add_token(&toks, out, nb, la + lb, &m) != 0) ||
            grow(&out->merges, &mroom, out->n_merges + 1, sizeof *out->merges) != 0) {
            free(nb);
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory training the BPE");
            break;
        }
        free(nb);
        out->merges[out->n_merges][0] = a;
        out->merges[out->n_merges][1] = b;
        out->n_merges++;
        t.nchanged = 0;
        /* the pieces holding (a, b): where[p] does not grow this round (every
         * pair listed anew holds m) */
        for (uint32_t k = 0; k < t.nwhere[p] && !t.oom; k++) {
            const int32_t w = t.where[p][k];
            if (t.stamp[w] == r) continue;
            t.stamp[w] = r;
            merge_piece(&t, w, a, b, m, r);
        }
        free(t.where[p]);
        t.where[p] = NULL;
        t.nwhere[p] = t.rwhere[p] = 0;
        for (size_t k = 0; k < t.nchanged && !t.oom; k++) {
            const int32_t q = t.changed[k];
            if (t.cnt[q] > 0) heap_push(&t, (entry){t.cnt[q], q});
        }
        if (t.oom) st = hs_fail(err, HS_ERR_NOMEM, "out of memory training the BPE");
    }
    if (st == HS_OK) {
        for (size_t w = 0; w < t.pieces.n; w++) out->tokens += (size_t)t.pcnt[w] * t.len[w];
        out->bytes = c->bytes;
        out->chars = c->chars;
        out->tok_off = malloc(out->V * sizeof *out->tok_off);
        out->tok_len = malloc(out->V * sizeof *out->tok_len);
        out->tok_bytes = malloc(toks.keys.len ? toks.keys.len : 1);
        if (!out->tok_off || !out->tok_len || !out->tok_bytes) {
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory training the BPE");
        } else {
            memcpy(out->tok_off, toks.off, out->V * sizeof *out->tok_off);
            memcpy(out->tok_len, toks.len, out->V * sizeof *out->tok_len);
            memcpy(out->tok_bytes, toks.keys.s, toks.keys.len);
            st = write_json(out, err);
        }
    }
    strmap_free(&toks);
    trainer_free(&t);
    if (st != HS_OK) hs_bpe_trained_free(out);
    return st;
}
