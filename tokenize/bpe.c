/*
 * tokenize/bpe.c -- GPT-2's byte-level BPE behind hs_tokenizer (tokenize.h):
 * the byte-level alphabet, the tables built from a vocabulary and merges
 * (hs_bpe_build), decoding, and each token's exact and display strings.
 *
 * Sources: openai/gpt-2 src/encoder.py (bytes_to_unicode); huggingface/
 * tokenizers src/models/bpe/model.rs (the vocabulary and merges; a merge's
 * result must be a token). The encoder is bpe_encode.c, the pipeline
 * around the model hfjson.c / pretok.c / decode.c.
 */
#include "tokenize/tokenize_internal.h"

#include <stdlib.h>
#include <string.h>

void hs_bpe_free(hs_bpe *bpe)
{
    if (bpe == NULL) return;
    hs_pipe_free(bpe->pipe);
    hs_pairmap_free(&bpe->merges);
    hs_idmap_free(&bpe->model_map);
    free(bpe->raw);
    free(bpe->bytes);
    free(bpe->exact);
    free(bpe->in_model);
    free(bpe->file_raw);
    free(bpe->file);
    free(bpe->file_lens);
    free(bpe);
}

/* ------------------------------------------------------------------------ */
/* The byte-level alphabet and the two string forms                          */

#define ALPHA_MAX HS_ALPHA_MAX /* the alphabet's code points are below U+0144 */

/* GPT-2's bytes_to_unicode (encoder.py): bytes 33..126, 161..172 and
 * 174..255 stand for themselves, the other 68 in ascending order for U+0100
 * + n (10 -> U+010A 'Ċ', 32 -> U+0120 'Ġ'). byte_of is the inverse (-1
 * where no byte maps). */
void hs_byte_alphabet(uint32_t cp_of[256], int byte_of[ALPHA_MAX])
{
    for (int i = 0; i < ALPHA_MAX; i++) byte_of[i] = -1;
    int n = 0;
    for (int b = 0; b < 256; b++) {
        const int self = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
        cp_of[b] = self ? (uint32_t)b : (uint32_t)(256 + n++);
        byte_of[cp_of[b]] = b;
    }
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
    if (!visible) { /* printable ASCII throughout (most tokens): the bytes as they are, in one append */
        size_t k = 0;
        while (k < n && s[k] >= 0x20 && s[k] < 0x7F) k++;
        if (k == n) {
            hs_buf_append(b, (const char *)s, n);
            return;
        }
    }
    for (size_t k = 0; k < n;) {
        uint32_t cp = 0, vis;
        const size_t len = hs_utf8_decode(s + k, n - k, &cp);
        if (len == 0) {
            hs_utf8_put(b, 0xFFFD);
            k += hs_utf8_bad_len(s + k, n - k);
            continue;
        }
        if (visible && (vis = visible_cp(cp)) != 0)
            hs_utf8_put(b, vis);
        else if (cp == 0)
            hs_utf8_put(b, 0xFFFD);
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
    } else if (!sp->pipe->byte_level) { /* what the decoder makes of it alone */
        if (hs_pipe_token_text(sp->pipe, sp->token[i], raw) != 0)
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", sp->what);
    } else {
        char chunk[256]; /* the bytes, appended a chunk at a time */
        size_t m = 0;
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
            chunk[m++] = st == HS_OK ? (char)byte_of[cp] : 0;
            if (m == sizeof chunk) {
                hs_buf_append(raw, chunk, m);
                m = 0;
            }
            k += len ? len : 1;
        }
        hs_buf_append(raw, chunk, m);
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
    hs_byte_alphabet(cp_of, byte_of);
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
    }
    if (!sp->pipe->byte_level) { /* several tokens may stand for one text: */
        for (int pass = 0; pass < 3; pass++) /* vocabulary, byte fallback, added */
            for (size_t i = 0; i < sp->V; i++) {
                const int added = sp->added && sp->added[i];
                const int fb = !added && strlen(sp->token[i]) == 6 &&
                               strncmp(sp->token[i], "<0x", 3) == 0;
                if ((pass == 0 && !added && !fb) || (pass == 1 && fb) || (pass == 2 && added))
                    (void)hs_idmap_put(&t->tables->by_text, (int)i);
            }
        goto done;
    }
    for (size_t i = 0; i < sp->V; i++) {
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
    hs_byte_alphabet(cp_of, byte_of);
    const int bl = sp->pipe->byte_level;
    const hs_idmap *keys = bl ? &t->tables->by_text : &bpe->model_map;
    char *const *key = bl ? bpe->bytes : bpe->file;
    if (!bl) lens = bpe->file_lens;
    for (int b = 0; b < 256; b++) {
        const char c = (char)b;
        char fb[8];
        snprintf(fb, sizeof fb, "<0x%02X>", (unsigned)b);
        bpe->byte_tok[b] = bl ? -1 : hs_idmap_get(&bpe->model_map, fb, 6);
        bpe->byte_id[b] = bl ? hs_idmap_get(&t->tables->by_text, &c, 1) : -1;
        if (bl && bpe->byte_id[b] < 0)
            return hs_fail(err, HS_ERR_FORMAT, "%s: no token for byte 0x%02X (U+%04X in the "
                           "byte-level alphabet); a byte-level BPE has all 256", sp->what, b,
                           (unsigned)cp_of[b]);
    }
    if (hs_pairmap_init(&bpe->merges, sp->n_merges) != 0)
        return hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", sp->what);
    char *joined = NULL;
    size_t cap = 0;
    /* a byte-level vocabulary's tokens have distinct bytes (build_strings),
     * so the token after the last merge's result, when its bytes are the
     * joined ones, is what the map would give (GPT-2: merge r makes token
     * 256 + r): one comparison instead of a hash lookup */
    int next = -1;
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
        memcpy(joined, key[a], lens[a]);
        memcpy(joined + lens[a], key[b], lens[b]);
        const int m = bl && next >= 0 && (size_t)next < sp->V && lens[next] == n && memcmp(key[next], joined, n) == 0
                          ? next
                          : hs_idmap_get(keys, joined, n);
        next = m + 1;
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

/* String mode: each token's file string copied, and the model's map. */
static hs_status build_file_strings(const hs_bpe_spec *sp, hs_bpe *bpe, hs_error *err)
{
    hs_buf raw = {0};
    bpe->file = calloc(sp->V, sizeof *bpe->file);
    bpe->file_lens = calloc(sp->V, sizeof *bpe->file_lens);
    for (size_t i = 0; i < sp->V; i++) {
        bpe->file_lens[i] = bpe->file_lens ? strlen(sp->token[i]) : 0;
        hs_buf_append(&raw, sp->token[i], strlen(sp->token[i]) + 1);
    }
    if (raw.oom || !bpe->file || !bpe->file_lens ||
        hs_idmap_init(&bpe->model_map, sp->V, (const char *const *)bpe->file, bpe->file_lens)) {
        hs_buf_free(&raw);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", sp->what);
    }
    bpe->file_raw = raw.s;
    for (size_t i = 0, off = 0; i < sp->V; i++) {
        bpe->file[i] = bpe->file_raw + off;
        off += bpe->file_lens[i] + 1;
        if (bpe->in_model[i]) (void)hs_idmap_put(&bpe->model_map, (int)i);
    }
    return HS_OK;
}

/* The id of the token whose string is s, or -1. */
static int token_id(const hs_bpe_spec *sp, const char *s)
{
    return hs_idmap_get(sp->by_token, s, strlen(s));
}

/* The BOS: the post-processor's token before $A, else the first of the
 * names below that is a token (GPT-2's, Llama 3's, Llama 2's); -1. */
static int find_bos(const hs_bpe_spec *sp)
{
    static const char *const NAMES[] = {"<|endoftext|>", "<|begin_of_text|>", "<s>"};
    if (sp->pipe->bos) return token_id(sp, sp->pipe->bos);
    for (int k = 0; k < 3; k++) {
        const int id = token_id(sp, NAMES[k]);
        if (id >= 0) return id;
    }
    return -1;
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
        hs_pipe_free(sp->pipe);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", sp->what);
    }
    bpe->pipe = sp->pipe;
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
    bpe->unk_id = -1;
    bpe->in_model = malloc(sp->V ? sp->V : 1);
    if (!bpe->in_model) {
        hs_tokenizer_destroy(t);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", sp->what);
    }
    for (size_t i = 0; i < sp->V; i++) bpe->in_model[i] = sp->in_model ? sp->in_model[i] : 1;
    const hs_pipe *pp = sp->pipe;
    for (size_t i = 0; i < pp->n_dec && pp->byte_level && st == HS_OK; i++)
        if (pp->dec[i].kind != HS_DEC_BYTELEVEL)
            st = hs_fail(err, HS_ERR_FORMAT, "%s: decoder: a byte-level pipeline's decoder must be "
                         "ByteLevel alone", sp->what);
    if (st == HS_OK && !pp->byte_level) st = build_file_strings(sp, bpe, err);
    if (st == HS_OK) st = build_strings(sp, t, err);
    if (st == HS_OK) st = build_merges(sp, t, err);
    if (st == HS_OK && pp->unk_token && !pp->byte_level &&
        (bpe->unk_id = hs_idmap_get(&bpe->model_map, pp->unk_token, strlen(pp->unk_token))) < 0) {
        char *v = shown(pp->unk_token);
        st = hs_fail(err, HS_ERR_FORMAT, "%s: model.unk_token '%s' is not in the vocabulary",
                     sp->what, v);
        free(v);
    }
    if (st == HS_OK && pp->bos && find_bos(sp) < 0) {
        char *v = shown(pp->bos);
        st = hs_fail(err, HS_ERR_FORMAT, "%s: post_processor: the special token '%s' is not in "
                     "the vocabulary", sp->what, v);
        free(v);
    }
    for (size_t i = 0; i < pp->n_suffix && st == HS_OK; i++)
        if ((size_t)pp->suffix[i] >= sp->V)
            st = hs_fail(err, HS_ERR_FORMAT, "%s: post_processor: the id %d it appends after the "
                         "text is not in [0, %zu)", sp->what, pp->suffix[i], sp->V);
    for (size_t i = 0; i < pp->n_added && st == HS_OK; i++)
        if (pp->added[i].id < 0 || (size_t)pp->added[i].id >= sp->V)
            st = hs_fail(err, HS_ERR_FORMAT, "%s: added_tokens[%zu] has id %d, not in [0, %zu)",
                         sp->what, i, pp->added[i].id, sp->V);
    if (st != HS_OK) {
        hs_tokenizer_destroy(t);
        return st;
    }
    t->tables->bos_id = find_bos(sp);
    *out = t;
    return HS_OK;
}

hs_status hs_bpe_decode(const hs_tokenizer *t, const int *ids, size_t n, char **text,
                        hs_error *err)
{
    const hs_bpe *bpe = t->tables->bpe;
    const size_t *lens = t->tables->lens;
    *text = NULL;
    hs_buf b = {0};
    if (!bpe->pipe->byte_level) { /* the decoder over the tokens' file strings */
        const char **tok = malloc((n ? n : 1) * sizeof *tok);
        if (!tok) return hs_fail(err, HS_ERR_NOMEM, "out of memory decoding tokens");
        for (size_t i = 0; i < n; i++) tok[i] = bpe->file[ids[i]];
        const int rc = hs_pipe_decode(bpe->pipe, tok, n, &b);
        free(tok);
        if (rc != 0) {
            hs_buf_free(&b);
            return hs_fail(err, HS_ERR_NOMEM, "out of memory decoding tokens");
        }
        if (b.s && memchr(b.s, 0, b.len) != NULL) {
            hs_buf_free(&b);
            return hs_fail(err, HS_ERR_INPUT, "the ids decode to a NUL byte, which a C string "
                           "cannot carry");
        }
        if (!b.s) hs_buf_puts(&b, "");
        *text = hs_buf_take(&b);
        return *text ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory decoding tokens");
    }
    for (size_t i = 0; i < n; i++)
        if (memchr(bpe->bytes[ids[i]], 0, lens[ids[i]]) != NULL)
            return hs_fail(err, HS_ERR_INPUT, "token %zu (id %d) holds a NUL byte, which a C "
                           "string cannot carry", i, ids[i]);
    for (size_t i = 0; i < n; i++) hs_buf_append(&b, bpe->bytes[ids[i]], lens[ids[i]]);
    *text = hs_buf_take(&b);
    return *text ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory decoding tokens");
}
