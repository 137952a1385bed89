/*
 * tokenize/bpe.c -- GPT-2's byte-level BPE behind hs_tokenizer (tokenize.h):
 * the byte-level alphabet, the tables built from a vocabulary and merges
 * (hs_bpe_build), the encoder (the pre-tokenizer pattern through PCRE2, then
 * merges by rank), decoding, and each token's exact and display strings.
 *
 * Sources: openai/gpt-2 src/encoder.py (bytes_to_unicode, the pattern, bpe:
 * repeatedly merge every non-overlapping occurrence of the lowest-ranked
 * adjacent pair, left to right); huggingface/tokenizers
 * src/pre_tokenizers/byte_level.rs (the same alphabet and pattern). encoder.py
 * uses Python's `regex` module, whose \s is the Unicode White_Space property
 * (its CHARSET_ESCAPES: "s" -> the property SPACE = White_Space), as is
 * tiktoken's (Rust regex); PCRE2's own \s also takes U+180E, so the pattern
 * below names \p{White_Space}.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tokenize/tokenize_internal.h"

#include <stdlib.h>
#include <string.h>

/* GPT-2's pre-tokenizer (encoder.py's `pat`), \s spelled as the property. */
static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\p{White_Space}\\p{L}\\p{N}]+"
    "|\\p{White_Space}+(?!\\P{White_Space})|\\p{White_Space}+";

/* The token GPT-2 uses as BOS, EOS and padding (id 50256). */
static const char ENDOFTEXT[] = "<|endoftext|>";

struct hs_bpe {
    pcre2_code *re;    /* the pattern, JIT-compiled when the platform allows */
    int byte_id[256];  /* the id of each single-byte token */
    hs_pairmap merges; /* (left id, right id) -> rank, merged id */
    char *raw;         /* every token's bytes, each followed by a NUL */
    char **bytes;      /* (V) each token's bytes, into raw: by_text's keys */
    char *exact;       /* every exact string, NUL-terminated: t->words point in */
};

void hs_bpe_free(hs_bpe *bpe)
{
    if (bpe == NULL) return;
    pcre2_code_free(bpe->re);
    hs_pairmap_free(&bpe->merges);
    free(bpe->raw);
    free(bpe->bytes);
    free(bpe->exact);
    free(bpe);
}

/* ------------------------------------------------------------------------ */
/* The byte-level alphabet and the two string forms                          */

#define ALPHA_MAX 0x144 /* the alphabet's code points are below U+0144 */

/* GPT-2's bytes_to_unicode (encoder.py): bytes 33..126, 161..172 and
 * 174..255 stand for themselves, the other 68 in ascending order for U+0100
 * + n (10 -> U+010A 'Ċ', 32 -> U+0120 'Ġ'). byte_of is the inverse (-1
 * where no byte maps). */
static void byte_alphabet(uint32_t cp_of[256], int byte_of[ALPHA_MAX])
{
    for (int i = 0; i < ALPHA_MAX; i++) byte_of[i] = -1;
    int n = 0;
    for (int b = 0; b < 256; b++) {
        const int self = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
        cp_of[b] = self ? (uint32_t)b : (uint32_t)(256 + n++);
        byte_of[cp_of[b]] = b;
    }
}

void hs_bpe_alphabet(uint32_t cp_of[256])
{
    int byte_of[ALPHA_MAX];
    byte_alphabet(cp_of, byte_of);
}

size_t hs_utf8_bad_len(const unsigned char *s, size_t n)
{
    const unsigned char c = s[0];
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range (Table 3-7) */
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 1;
    }
    size_t k = 1;
    if (k < n && s[k] >= lo && s[k] <= hi)
        for (k = 2; k < n && k <= need && (s[k] & 0xC0u) == 0x80u;) k++;
    return k;
}

/* Appends code point cp (< 0x10000) as UTF-8. */
static void put_cp(hs_buf *b, uint32_t cp)
{
    char u[3];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | cp >> 6);
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else {
        u[0] = (char)(0xE0 | cp >> 12);
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    }
    hs_buf_append(b, u, n);
}

/* The character hs_tok_display shows for ASCII whitespace, a control or
 * DEL (tokenize.h lists them), or 0 for any other code point. */
static uint32_t visible_cp(uint32_t cp)
{
    switch (cp) {
    case ' ': return 0x00B7;  /* MIDDLE DOT */
    case '\n': return 0x21B5; /* DOWNWARDS ARROW WITH CORNER LEFTWARDS */
    case '\t': return 0x2192; /* RIGHTWARDS ARROW */
    case 0x7F: return 0x2421; /* SYMBOL FOR DELETE */
    default: return cp < 0x20 ? 0x2400 + cp : 0; /* Control Pictures (\r: U+240D) */
    }
}

/* Appends n bytes as text: each ill-formed part and each NUL as U+FFFD (the
 * exact string), or with visible != 0 ASCII whitespace and controls as
 * visible_cp (the display form). */
static void put_text(hs_buf *b, const unsigned char *s, size_t n, int visible)
{
    for (size_t k = 0; k < n;) {
        uint32_t cp = 0, vis;
        const size_t len = hs_utf8_decode(s + k, n - k, &cp);
        if (len == 0) {
            put_cp(b, 0xFFFD);
            k += hs_utf8_bad_len(s + k, n - k);
            continue;
        }
        if (visible && (vis = visible_cp(cp)) != 0)
            put_cp(b, vis);
        else if (cp == 0)
            put_cp(b, 0xFFFD);
        else
            hs_buf_append(b, (const char *)s + k, len);
        k += len;
    }
}

int hs_bpe_display(const hs_tokenizer *t, int id, hs_buf *b)
{
    const hs_bpe *bpe = t->tables->bpe;
    put_text(b, (const unsigned char *)bpe->bytes[id], t->tables->lens[id], 1);
    return b->oom ? -1 : 0;
}

/* ------------------------------------------------------------------------ */
/* Building the tables                                                       */

/* A token's string as a message shows it, malloc'd ("?" on OOM). */
static char *shown(const char *s)
{
    char *v = hs_visible_dup(s);
    return v ? v : hs_strdup("?");
}

/* Appends token i's bytes (its string through the alphabet, or as is for an
 * added token) and a NUL to raw; lens[i] = their count. */
static hs_status token_bytes(const hs_bpe_spec *sp, size_t i, const int byte_of[ALPHA_MAX],
                             hs_buf *raw, size_t *lens, hs_error *err)
{
    const unsigned char *s = (const unsigned char *)sp->token[i];
    const size_t n = strlen(sp->token[i]), start = raw->len;
    hs_status st = HS_OK;
    if (n == 0) return hs_fail(err, HS_ERR_FORMAT, "%s: token %zu is empty", sp->what, i);
    if (sp->added && sp->added[i]) {
        hs_buf_append(raw, (const char *)s, n);
    } else {
        for (size_t k = 0; k < n && st == HS_OK;) {
            uint32_t cp = 0;
            const size_t len = hs_utf8_decode(s + k, n - k, &cp);
            if (len == 0 || cp >= ALPHA_MAX || byte_of[cp] < 0) {
                char *v = shown(sp->token[i]);
                st = len == 0 ? hs_fail(err, HS_ERR_FORMAT, "%s: token %zu is not valid UTF-8",
                                        sp->what, i)
                              : hs_fail(err, HS_ERR_FORMAT,
                                        "%s: token %zu '%s' holds U+%04X, which is not in GPT-2's "
                                        "byte-level alphabet (bytes_to_unicode): not a byte-level "
                                        "BPE vocabulary", sp->what, i, v, (unsigned)cp);
                free(v);
            }
            const char byte = st == HS_OK ? (char)byte_of[cp] : 0;
            hs_buf_append(raw, &byte, 1);
            k += len ? len : 1;
        }
    }
    lens[i] = raw->len - start;
    hs_buf_append(raw, "", 1);
    return st;
}

/* Every token's bytes (bpe->raw, bpe->bytes), exact strings (bpe->exact,
 * t->words) and the by_text map; refuses two tokens with the same bytes. */
static hs_status build_strings(const hs_bpe_spec *sp, hs_tokenizer *t, hs_error *err)
{
    hs_bpe *bpe = t->tables->bpe;
    uint32_t cp_of[256];
    int byte_of[ALPHA_MAX];
    byte_alphabet(cp_of, byte_of);
    hs_buf raw = {0}, exact = {0};
    size_t *lens = t->tables->lens;
    hs_status st = HS_OK;
    for (size_t i = 0; i < sp->V && st == HS_OK; i++)
        st = token_bytes(sp, i, byte_of, &raw, lens, err);
    for (size_t i = 0, off = 0; i < sp->V && st == HS_OK && !raw.oom; i++) {
        put_text(&exact, (const unsigned char *)raw.s + off, lens[i], 0);
        hs_buf_append(&exact, "", 1);
        off += lens[i] + 1;
    }
    if (st != HS_OK) goto done;
    if (raw.oom || exact.oom) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", sp->what);
        goto done;
    }
    bpe->raw = raw.s;
    bpe->exact = exact.s;
    raw.s = exact.s = NULL;
    for (size_t i = 0, off = 0, xoff = 0; i < sp->V; i++) {
        bpe->bytes[i] = bpe->raw + off;
        t->words[i] = bpe->exact + xoff;
        off += lens[i] + 1;
        xoff += strlen(t->words[i]) + 1;
        const int j = hs_idmap_put(&t->tables->by_text, (int)i);
        if (j >= 0 && st == HS_OK) {
            char *a = shown(sp->token[j]), *b = shown(sp->token[i]);
            st = hs_fail(err, HS_ERR_FORMAT, "%s: tokens %d '%s' and %zu '%s' are the same bytes",
                         sp->what, j, a, i, b);
            free(a);
            free(b);
        }
    }
done:
    hs_buf_free(&raw);
    hs_buf_free(&exact);
    return st;
}

/* The single-byte ids and the merge table; each merge's result must be a
 * token (its two tokens' bytes joined). */
static hs_status build_merges(const hs_bpe_spec *sp, hs_tokenizer *t, hs_error *err)
{
    hs_bpe *bpe = t->tables->bpe;
    const size_t *lens = t->tables->lens;
    uint32_t cp_of[256];
    int byte_of[ALPHA_MAX];
    byte_alphabet(cp_of, byte_of);
    for (int b = 0; b < 256; b++) {
        const char c = (char)b;
        bpe->byte_id[b] = hs_idmap_get(&t->tables->by_text, &c, 1);
        if (bpe->byte_id[b] < 0)
            return hs_fail(err, HS_ERR_FORMAT, "%s: no token for byte 0x%02X (U+%04X in the "
                           "byte-level alphabet); a byte-level BPE has all 256", sp->what, b,
                           (unsigned)cp_of[b]);
    }
    if (hs_pairmap_init(&bpe->merges, sp->n_merges) != 0)
        return hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", sp->what);
    char *joined = NULL;
    size_t cap = 0;
    for (size_t r = 0; r < sp->n_merges; r++) {
        const int a = sp->merges[r][0], b = sp->merges[r][1];
        const size_t n = lens[a] + lens[b];
        if (n > cap) {
            char *p = realloc(joined, 2 * n);
            if (!p) {
                free(joined);
                return hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", sp->what);
            }
            joined = p;
            cap = 2 * n;
        }
        memcpy(joined, bpe->bytes[a], lens[a]);
        memcpy(joined + lens[a], bpe->bytes[b], lens[b]);
        const int m = hs_idmap_get(&t->tables->by_text, joined, n);
        if (m < 0) {
            char *x = shown(sp->token[a]), *y = shown(sp->token[b]);
            hs_status st = sp->merge_line0
                ? hs_fail(err, HS_ERR_FORMAT, "%s:%zu: merge '%s %s' makes '%s%s', which is not "
                          "in the vocabulary", sp->merges_what, sp->merge_line0 + r, x, y, x, y)
                : hs_fail(err, HS_ERR_FORMAT, "%s: merge %zu '%s %s' makes '%s%s', which is not "
                          "in the vocabulary", sp->merges_what, r, x, y, x, y);
            free(x);
            free(y);
            free(joined);
            return st;
        }
        hs_pairmap_put(&bpe->merges, a, b, (int)r, m);
    }
    free(joined);
    return HS_OK;
}

/* The pattern compiled (UTF, Unicode properties) and, where PCRE2 has a
 * JIT for the machine, JIT-compiled (the interpreter otherwise: same
 * matches). */
static hs_status compile_pattern(hs_bpe *bpe, hs_error *err)
{
    int code = 0;
    PCRE2_SIZE at = 0;
    bpe->re = pcre2_compile((PCRE2_SPTR)GPT2_PATTERN, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                            &code, &at, NULL);
    if (bpe->re == NULL) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        return hs_fail(err, HS_ERR_CONFIG, "PCRE2 refused GPT-2's pattern at %zu: %s (it needs "
                       "Unicode support)", (size_t)at, (const char *)msg);
    }
    (void)pcre2_jit_compile(bpe->re, PCRE2_JIT_COMPLETE);
    return HS_OK;
}

hs_status hs_bpe_build(const hs_bpe_spec *sp, hs_tokenizer **out, hs_error *err)
{
    *out = NULL;
    hs_tokenizer *t = calloc(1, sizeof *t);
    hs_bpe *bpe = calloc(1, sizeof *bpe);
    size_t *lens = malloc((sp->V ? sp->V : 1) * sizeof *lens);
    hs_status st = HS_OK;
    if (!t || !bpe || !lens) {
        free(lens);
        free(bpe);
        free(t);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", sp->what);
    }
    t->kind = HS_TOKENIZER_BPE;
    t->n = sp->V;
    t->words = calloc(sp->V, sizeof *t->words);
    bpe->bytes = calloc(sp->V, sizeof *bpe->bytes);
    if (hs_tok_tables_create(t, (const char *const *)bpe->bytes, lens) != 0 || !t->words ||
        !bpe->bytes) {
        hs_bpe_free(bpe);
        hs_tokenizer_destroy(t);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", sp->what);
    }
    t->tables->bpe = bpe;
    st = build_strings(sp, t, err);
    if (st == HS_OK) st = build_merges(sp, t, err);
    if (st == HS_OK) st = compile_pattern(bpe, err);
    if (st != HS_OK) {
        hs_tokenizer_destroy(t);
        return st;
    }
    t->tables->bos_id = hs_idmap_get(&t->tables->by_text, ENDOFTEXT, sizeof ENDOFTEXT - 1);
    *out = t;
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* Encoding                                                                  */

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

/* The ids of one piece of n >= 1 bytes, appended at ids[*k]: encoder.py's
 * bpe() with a heap. Each round takes the lowest rank present and merges its
 * occurrences in position order, skipping one whose left symbol an earlier
 * merge of the round took (non-overlapping, left to right); only then are
 * the pairs the round made pushed, so a round is exactly encoder.py's pass
 * over `word` even for merge lists not in training order. Stale entries
 * (their pair changed) are skipped: a rank names one pair. O(n log n). */
static void encode_piece(const hs_bpe *bpe, const unsigned char *p, int n, scratch *w, int *ids,
                         size_t *k)
{
    for (int i = 0; i < n; i++) {
        w->sym[i] = bpe->byte_id[p[i]];
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

hs_status hs_bpe_split(const unsigned char *s, size_t n, hs_bpe_piece_fn fn, void *ctx,
                       hs_error *err)
{
    hs_bpe re = {0};
    hs_status st = compile_pattern(&re, err);
    pcre2_match_data *md = st == HS_OK ? pcre2_match_data_create_from_pattern(re.re, NULL) : NULL;
    if (st == HS_OK && !md) st = hs_fail(err, HS_ERR_NOMEM, "out of memory splitting the text");
    for (size_t off = 0; off < n && st == HS_OK;) {
        const int rc = pcre2_match(re.re, s, n, off, PCRE2_NO_UTF_CHECK, md, NULL);
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            st = hs_fail(err, rc == PCRE2_ERROR_NOMEMORY ? HS_ERR_NOMEM : HS_ERR_INPUT,
                         "the pre-tokenizer stopped at byte %zu: %s", off, (const char *)msg);
        } else if (ov[0] != off || ov[1] <= off) {
            st = hs_fail(err, HS_ERR_INPUT, "the pre-tokenizer matched bytes %zu..%zu from "
                         "byte %zu", (size_t)ov[0], (size_t)ov[1], off);
        } else if (fn(s + off, ov[1] - off, ctx) != 0) {
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory splitting the text");
        } else {
            off = ov[1];
        }
    }
    pcre2_match_data_free(md);
    pcre2_code_free(re.re);
    return st;
}

/* The pieces of s (n valid UTF-8 bytes) through the pattern, each encoded,
 * appended at ids[*k]. */
static hs_status encode_pieces(const hs_bpe *bpe, const unsigned char *s, size_t n, int *ids,
                               size_t *k, hs_error *err)
{
    hs_status st = HS_OK;
    scratch w = {0};
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(bpe->re, NULL);
    if (!md) return hs_fail(err, HS_ERR_NOMEM, "out of memory tokenizing the sentence");
    for (size_t off = 0; off < n && st == HS_OK;) {
        const int rc = pcre2_match(bpe->re, s, n, off, PCRE2_NO_UTF_CHECK, md, NULL);
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            st = hs_fail(err, rc == PCRE2_ERROR_NOMEMORY ? HS_ERR_NOMEM : HS_ERR_INPUT,
                         "the pre-tokenizer stopped at byte %zu: %s", off, (const char *)msg);
        } else if (ov[0] != off || ov[1] <= off) {
            /* every character is a letter, a number, whitespace or other */
            st = hs_fail(err, HS_ERR_INPUT, "the pre-tokenizer matched bytes %zu..%zu from "
                         "byte %zu", (size_t)ov[0], (size_t)ov[1], off);
        } else if (scratch_fit(&w, ov[1] - off) != 0) {
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory tokenizing the sentence");
        } else {
            encode_piece(bpe, s + off, (int)(ov[1] - off), &w, ids, k);
            off = ov[1];
        }
    }
    pcre2_match_data_free(md);
    scratch_free(&w);
    return st;
}

hs_status hs_bpe_encode(const hs_tokenizer *t, const char *text, size_t n_ctx, hs_tokens *out,
                        hs_error *err)
{
    memset(out, 0, sizeof *out);
    if (text == NULL || text[0] == '\0') return hs_fail(err, HS_ERR_INPUT, "sentence is empty");
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
    int *ids = malloc((n + 1) * sizeof *ids); /* a token has >= 1 byte, plus the BOS */
    if (!ids) return hs_fail(err, HS_ERR_NOMEM, "out of memory tokenizing the sentence");
    size_t k = 0;
    const int bos = hs_tok_bos(t);
    if (bos >= 0) ids[k++] = bos;
    hs_status st = encode_pieces(t->tables->bpe, s, n, ids, &k, err);
    if (st == HS_OK && n_ctx > 0 && k > n_ctx)
        st = hs_fail(err, HS_ERR_INPUT,
                     "sentence has %zu tokens, more than the model's context of %zu (n_ctx)", k,
                     n_ctx);
    if (st != HS_OK) {
        free(ids);
        return st;
    }
    int *fit = realloc(ids, k * sizeof *ids);
    out->ids = fit ? fit : ids;
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

hs_status hs_bpe_decode(const hs_tokenizer *t, const int *ids, size_t n, char **text,
                        hs_error *err)
{
    const hs_bpe *bpe = t->tables->bpe;
    const size_t *lens = t->tables->lens;
    *text = NULL;
    for (size_t i = 0; i < n; i++)
        if (memchr(bpe->bytes[ids[i]], 0, lens[ids[i]]) != NULL)
            return hs_fail(err, HS_ERR_INPUT, "token %zu (id %d) holds a NUL byte, which a C "
                           "string cannot carry", i, ids[i]);
    hs_buf b = {0};
    for (size_t i = 0; i < n; i++) hs_buf_append(&b, bpe->bytes[ids[i]], lens[ids[i]]);
    *text = hs_buf_take(&b);
    return *text ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory decoding tokens");
}
