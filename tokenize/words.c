/*
 * tokenize/words.c -- the word-level tokenizer (tokenize.h): a word list
 * checked once, its JSON form (a checkpoint's `vocab` metadata) and file form,
 * and the sentence tokenizer for user input (whitespace-separated words, `,`
 * and `.` split off, ASCII case folded), with an unknown word named and the
 * nearest word suggested.
 */
#include "tokenize/tokenize_internal.h"

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

/* ------------------------------------------------------------------------ */
/* UTF-8                                                                     */

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* C0 controls other than whitespace, DEL, C1 controls. */
static int is_control(uint32_t cp)
{
    return hs_cp_classify(cp) == HS_CP_CONTROL && !(cp < 0x80 && is_space((unsigned char)cp));
}

/* ------------------------------------------------------------------------ */
/* Vocabulary                                                                */

/* Checks that word (index i) could be produced by the tokenizer. */
static hs_status check_word(const char *word, size_t i, hs_error *err)
{
    if (word == NULL) return hs_fail(err, HS_ERR_FORMAT, "vocab word %zu is missing (null)", i);
    size_t n = strlen(word);
    if (n == 0) return hs_fail(err, HS_ERR_FORMAT, "vocab word %zu is an empty string", i);
    if (n > 256)
        return hs_fail(err, HS_ERR_FORMAT, "vocab word %zu is %zu bytes long (at most 256)", i, n);
    /* Pass 1 prints no part of the word: it may hold newlines or bad bytes. */
    const unsigned char *s = (const unsigned char *)word;
    for (size_t k = 0; k < n;) {
        uint32_t cp;
        size_t len = hs_utf8_decode(s + k, n - k, &cp);
        if (len == 0)
            return hs_fail(err, HS_ERR_FORMAT, "vocab word %zu is not valid UTF-8 (byte %zu)", i, k);
        if (cp < 0x80 && is_space((unsigned char)cp))
            return hs_fail(err, HS_ERR_FORMAT, "vocab word %zu contains whitespace (byte %zu)", i, k);
        if (is_control(cp))
            return hs_fail(err, HS_ERR_FORMAT,
                           "vocab word %zu contains a control character (byte %zu)", i, k);
        if (hs_cp_classify(cp) == HS_CP_NONCHAR)
            return hs_fail(err, HS_ERR_FORMAT,
                           "vocab word %zu contains U+%04X, a Unicode noncharacter (byte %zu), "
                           "which no SVG or other XML file may hold", i, (unsigned)cp, k);
        k += len;
    }
    /* Pass 2: the word can be shown now (escaped: it may hold format characters). */
    char *vis = hs_visible_dup(word);
    if (!vis) return hs_fail(err, HS_ERR_NOMEM, "out of memory checking the vocabulary");
    hs_status st = HS_OK;
    for (size_t k = 0; k < n && st == HS_OK; k++) {
        if (word[k] >= 'A' && word[k] <= 'Z')
            st = hs_fail(err, HS_ERR_FORMAT,
                         "vocab word %zu '%s' has upper-case letters; the tokenizer folds "
                         "case to lower, so it could never be typed", i, vis);
        else if ((word[k] == ',' || word[k] == '.') && n != 1)
            st = hs_fail(err, HS_ERR_FORMAT,
                         "vocab word %zu '%s' contains ',' or '.'; the tokenizer splits those "
                         "off as tokens of their own", i, vis);
    }
    free(vis);
    return st;
}

hs_status hs_tokenizer_words(const char *const *words, size_t n, hs_tokenizer **out, hs_error *err)
{
    hs_status st = HS_OK;
    hs_tokenizer *v = NULL;
    size_t *lens = NULL;
    *out = NULL;
    if (n == 0 || words == NULL) return hs_fail(err, HS_ERR_FORMAT, "vocab is empty (no words)");
    if (n > (size_t)INT32_MAX) return hs_fail(err, HS_ERR_FORMAT, "vocab has too many words (%zu)", n);
    v = calloc(1, sizeof *v);
    if (!v) goto nomem;
    v->kind = HS_TOKENIZER_WORDS;
    v->n = n;
    v->words = calloc(n, sizeof *v->words);
    lens = malloc(n * sizeof *lens);
    if (!v->words || !lens) goto nomem;
    /* the duplicate check and hs_tok_id's lookups: one hash map */
    const int rc = hs_tok_tables_create(v, (const char *const *)v->words, lens);
    lens = NULL; /* the tables own it now, or freed it */
    if (rc != 0) goto nomem;
    for (size_t i = 0; i < n; i++) {
        st = check_word(words[i], i, err);
        if (st != HS_OK) goto fail;
        v->words[i] = hs_strdup(words[i]);
        if (!v->words[i]) goto nomem;
        v->tables->lens[i] = strlen(words[i]);
        const int j = hs_idmap_put(&v->tables->by_text, (int)i);
        if (j >= 0) {
            char *vis = hs_visible_dup(words[i]);
            st = hs_fail(err, HS_ERR_FORMAT, "vocab word '%s' is duplicated (ids %d and %zu)",
                         vis ? vis : "?", j, i);
            free(vis);
            goto fail;
        }
    }
    *out = v;
    return HS_OK;
nomem:
    free(lens);
    st = hs_fail(err, HS_ERR_NOMEM, "out of memory building the vocabulary");
fail:
    hs_tokenizer_destroy(v);
    return st;
}

hs_status hs_tokenizer_ids(int V, hs_tokenizer **out, hs_error *err)
{
    *out = NULL;
    if (V < 1) return hs_fail(err, HS_ERR_CONFIG, "a vocabulary of id labels needs V >= 1, not %d", V);
    char **w = calloc((size_t)V, sizeof *w);
    hs_status st = w ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int i = 0; i < V && st == HS_OK; i++) {
        char lab[24];
        snprintf(lab, sizeof lab, "#%d", i);
        if ((w[i] = hs_strdup(lab)) == NULL) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    if (st == HS_OK) st = hs_tokenizer_words((const char *const *)w, (size_t)V, out, err);
    for (int i = 0; w && i < V; i++) free(w[i]);
    free(w);
    return st;
}

hs_status hs_tokenizer_to_json(const hs_tokenizer *v, char **json, hs_error *err)
{
    *json = NULL;
    if (v->kind != HS_TOKENIZER_WORDS)
        return hs_fail(err, HS_ERR_CONFIG, "a byte-level BPE vocabulary has no `vocab` metadata "
                       "form: its files (tokenizer.json, or vocab.json + merges.txt) stay beside "
                       "the model");
    cJSON *arr = cJSON_CreateArray();
    char *text = NULL;
    if (!arr) goto nomem;
    for (size_t i = 0; i < v->n; i++) {
        cJSON *s = cJSON_CreateString(v->words[i]);
        if (!s || !cJSON_AddItemToArray(arr, s)) {
            cJSON_Delete(s);
            goto nomem;
        }
    }
    text = cJSON_PrintUnformatted(arr);
    if (!text) goto nomem;
    *json = hs_strdup(text);
    cJSON_free(text);
    cJSON_Delete(arr);
    if (!*json) return hs_fail(err, HS_ERR_NOMEM, "out of memory writing the vocab JSON");
    return HS_OK;
nomem:
    cJSON_Delete(arr);
    return hs_fail(err, HS_ERR_NOMEM, "out of memory writing the vocab JSON");
}

hs_status hs_tokenizer_from_json(const char *json, hs_tokenizer **out, hs_error *err)
{
    hs_status st;
    cJSON *root = NULL;
    const char **words = NULL;
    *out = NULL;
    if (json == NULL || json[0] == '\0')
        return hs_fail(err, HS_ERR_FORMAT, "vocab metadata is missing");
    root = cJSON_ParseWithOpts(json, NULL, 1);
    if (cJSON_IsObject(root) && cJSON_GetObjectItemCaseSensitive(root, "model") != NULL) {
        /* a text model's BPE: its whole tokenizer.json (tasks/text.c) */
        cJSON_Delete(root);
        return hs_tokenizer_from_hf_json(json, strlen(json), "vocab metadata (tokenizer.json)",
                                         out, err);
    }
    if (!root) {
        st = hs_fail(err, HS_ERR_FORMAT, "vocab metadata is not valid JSON");
        goto done;
    }
    if (!cJSON_IsArray(root)) {
        st = hs_fail(err, HS_ERR_FORMAT, "vocab metadata is not a JSON list of strings");
        goto done;
    }
    int n = cJSON_GetArraySize(root);
    if (n <= 0) {
        st = hs_fail(err, HS_ERR_FORMAT, "vocab metadata is an empty list");
        goto done;
    }
    words = calloc((size_t)n, sizeof *words);
    if (!words) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory reading the vocab");
        goto done;
    }
    int i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, root) {
        if (!cJSON_IsString(item) || item->valuestring == NULL) {
            st = hs_fail(err, HS_ERR_FORMAT, "vocab metadata element %d is not a string", i);
            goto done;
        }
        words[i++] = item->valuestring;
    }
    st = hs_tokenizer_words(words, (size_t)n, out, err);
done:
    free(words);
    cJSON_Delete(root);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Tokenizer                                                                 */

/* Decodes the valid UTF-8 s into at most cap code points; returns how many
 * there are (may exceed cap: then only cap were stored). */
static size_t code_points(const char *s, uint32_t *out, size_t cap)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s), m = 0;
    for (size_t k = 0; k < n;) {
        uint32_t cp = 0xFFFD;
        size_t len = hs_utf8_decode(p + k, n - k, &cp);
        if (m < cap) out[m] = cp;
        m++;
        k += len ? len : 1;
    }
    return m;
}

/* Optimal-string-alignment distance (Levenshtein plus adjacent swaps) between
 * two code-point strings of at most EDIT_MAX code points each. */
#define EDIT_MAX 64
static size_t edit_distance(const uint32_t *a, size_t na, const uint32_t *b, size_t nb)
{
    size_t d[EDIT_MAX + 1][EDIT_MAX + 1];
    for (size_t i = 0; i <= na; i++) d[i][0] = i;
    for (size_t j = 0; j <= nb; j++) d[0][j] = j;
    for (size_t i = 1; i <= na; i++)
        for (size_t j = 1; j <= nb; j++) {
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[na][nb];
}

/* The vocabulary word a user most likely meant by word, else NULL: the
 * fewest edits (edit_distance), ties to the longest shared first code points
 * (a typo keeps a word's start), then the lower id; suggested only within a
 * typo's reach: 1 edit for a word of under 8 code points, 2 from 8 on, and
 * fewer edits than half its code points ('anmial' -> 'animal', 'tird' ->
 * 'tired'; 'sleepy' is 2 edits from 'steep', a different word: none). */
static const char *nearest_word(const hs_tokenizer *v, const char *word)
{
    uint32_t a[EDIT_MAX], b[EDIT_MAX];
    size_t na = code_points(word, a, EDIT_MAX), best_d = (size_t)-1, best_pre = 0;
    const char *best = NULL;
    if (na > EDIT_MAX) return NULL;
    for (size_t i = 0; i < v->n; i++) {
        size_t nb = code_points(v->words[i], b, EDIT_MAX);
        if (nb > EDIT_MAX) continue;
        size_t d = edit_distance(a, na, b, nb), pre = 0;
        while (pre < na && pre < nb && a[pre] == b[pre]) pre++;
        if (d < best_d || (d == best_d && pre > best_pre)) {
            best_d = d;
            best_pre = pre;
            best = v->words[i];
        }
    }
    const size_t reach = na >= 8 ? 2 : 1;
    return (best_d <= reach && 2 * best_d < na) ? best : NULL;
}

/* "unknown word 'W' at position P[ (it holds U+XXXX at byte B, ...)][; nearest
 * vocabulary word: 'N']; the vocabulary is: w0 w1 ..." Words are shown with
 * hs_buf_put_visible; start is the token's byte offset in the sentence. */
static hs_status unknown_word(const hs_tokenizer *v, const char *word, size_t pos, size_t start,
                              hs_error *err)
{
    hs_buf b = {0};
    const unsigned char *p = (const unsigned char *)word;
    size_t n = strlen(word), shown = n, named = 0;
    if (shown > 64) { /* cut at a UTF-8 boundary */
        shown = 64;
        while (shown > 0 && (p[shown] & 0xC0u) == 0x80u) shown--;
    }
    char *cut = malloc(shown + 1);
    if (!cut) return hs_fail(err, HS_ERR_NOMEM, "out of memory naming an unknown word");
    memcpy(cut, word, shown);
    cut[shown] = '\0';
    hs_buf_puts(&b, "unknown word '");
    hs_buf_put_visible(&b, cut);
    free(cut);
    hs_buf_printf(&b, "%s' at position %zu", shown < n ? "..." : "", pos);
    int space = 0;
    for (size_t k = 0; k < n;) {
        uint32_t cp = 0;
        size_t len = hs_utf8_decode(p + k, n - k, &cp);
        if (len == 0) break; /* the tokenizer checked UTF-8 before */
        if (cp >= 0x80) {
            if (named < 3)
                hs_buf_printf(&b, "%s U+%04X at byte %zu", named ? "," : " (it holds",
                              (unsigned)cp, start + k);
            named++;
            if (hs_cp_classify(cp) == HS_CP_SPACE) space = 1;
        }
        k += len;
    }
    if (named > 3) hs_buf_printf(&b, " and %zu more", named - 3);
    if (named)
        hs_buf_puts(&b, space ? "; only ASCII whitespace separates words)" : ")");
    const char *near = nearest_word(v, word);
    if (near) {
        hs_buf_puts(&b, "; nearest vocabulary word: '");
        hs_buf_put_visible(&b, near);
        hs_buf_puts(&b, "'");
    }
    hs_buf_puts(&b, "; the vocabulary is:");
    size_t list_start = b.len;
    for (size_t i = 0; i < v->n; i++) {
        if (b.len - list_start > 600) {
            hs_buf_puts(&b, " ...");
            break;
        }
        hs_buf_puts(&b, " ");
        hs_buf_put_visible(&b, v->words[i]);
    }
    if (b.oom) {
        hs_buf_free(&b);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory naming an unknown word");
    }
    hs_status st = hs_fail(err, HS_ERR_INPUT, "%s", b.s);
    hs_buf_free(&b);
    return st;
}

hs_status hs_words_encode(const hs_tokenizer *v, const char *sentence, size_t n_ctx, hs_tokens *out,
                          hs_error *err)
{
    hs_status st = HS_OK;
    char *buf = NULL;
    size_t *starts = NULL; /* (n_tok) byte offset of each token in sentence */
    size_t n_tok = 0;
    memset(out, 0, sizeof *out);
    HS_ASSERT(v != NULL);
    if (sentence == NULL || sentence[0] == '\0')
        return hs_fail(err, HS_ERR_INPUT, "sentence is empty");

    const unsigned char *s = (const unsigned char *)sentence;
    size_t n = strlen(sentence);
    /* Pass 1: bytes are valid UTF-8 with no control characters; count tokens. */
    int in_word = 0, folded = 0;
    for (size_t k = 0; k < n;) {
        uint32_t cp;
        size_t len = hs_utf8_decode(s + k, n - k, &cp);
        if (len == 0)
            return hs_fail(err, HS_ERR_INPUT, "sentence is not valid UTF-8 at byte %zu", k);
        if (is_control(cp))
            return hs_fail(err, HS_ERR_INPUT, "sentence has a control character (0x%02X) at byte %zu",
                           (unsigned)cp, k);
        if (cp < 0x80 && is_space((unsigned char)cp)) {
            in_word = 0;
        } else if (cp == ',' || cp == '.') {
            n_tok++;
            in_word = 0;
        } else {
            if (!in_word) n_tok++;
            in_word = 1;
            if (cp >= 'A' && cp <= 'Z') folded = 1;
        }
        k += len;
    }
    if (n_tok == 0) return hs_fail(err, HS_ERR_INPUT, "sentence has only spaces");
    if (n_ctx > 0 && n_tok > n_ctx)
        return hs_fail(err, HS_ERR_INPUT,
                       "sentence has %zu tokens, more than the model's context of %zu (n_ctx)",
                       n_tok, n_ctx);

    /* Pass 2: copy, fold and split. Each token is NUL-terminated in buf, which
     * needs at most n + n_tok + 1 bytes. */
    buf = malloc(n + n_tok + 1);
    starts = malloc(n_tok * sizeof *starts);
    out->ids = calloc(n_tok, sizeof *out->ids);
    out->strs = calloc(n_tok, sizeof *out->strs);
    if (!buf || !starts || !out->ids || !out->strs) goto nomem;
    size_t b = 0, t = 0, nt = 0;
    in_word = 0;
    for (size_t k = 0; k < n; k++) {
        unsigned char c = s[k];
        if (is_space(c) || c == ',' || c == '.') {
            if (in_word) {
                buf[b++] = '\0';
                in_word = 0;
            }
            if (c == ',' || c == '.') {
                starts[nt++] = k;
                buf[b++] = (char)c;
                buf[b++] = '\0';
            }
        } else {
            if (!in_word) starts[nt++] = k;
            buf[b++] = (char)((c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c);
            in_word = 1;
        }
    }
    HS_ASSERT(nt == n_tok);
    if (in_word) buf[b++] = '\0';
    /* Walk the NUL-separated tokens. */
    for (size_t k = 0; k < b && t < n_tok; t++) {
        const char *w = buf + k;
        size_t len = strlen(w);
        int id = hs_tok_id(v, w);
        if (id < 0) {
            st = unknown_word(v, w, t, starts[t], err);
            goto fail;
        }
        out->ids[t] = id;
        out->strs[t] = hs_strdup(w);
        if (!out->strs[t]) goto nomem;
        out->n = t + 1;
        k += len + 1;
    }
    HS_ASSERT(t == n_tok);
    out->n = n_tok;
    out->folded = folded;
    free(buf);
    free(starts);
    return HS_OK;
nomem:
    st = hs_fail(err, HS_ERR_NOMEM, "out of memory tokenizing the sentence");
fail:
    free(buf);
    free(starts);
    hs_tokens_free(out);
    return st;
}

hs_status hs_tokenizer_read(const char *path, hs_tokenizer **out, hs_error *err)
{
    *out = NULL;
    unsigned char *data = NULL;
    size_t n = 0;
    hs_status st = hs_read_file(path, &data, &n, err);
    if (st != HS_OK) return st;
    char *text = (char *)data; /* NUL-terminated by hs_read_file */
    if (strlen(text) != n) {
        st = hs_fail(err, HS_ERR_FORMAT, "%s: the vocabulary file has a NUL byte", path);
        goto done;
    }
    size_t k = 0;
    while (text[k] == ' ' || text[k] == '\t' || text[k] == '\n' || text[k] == '\r') k++;
    if (text[k] == '[') {
        st = hs_tokenizer_from_json(text, out, err);
        if (st != HS_OK) {
            hs_error inner = *err;
            st = hs_fail(err, inner.status, "%s: %s", path, inner.msg);
        }
        goto done;
    }
    /* one token a line ("\n" or "\r\n"); a final newline is optional */
    size_t cap = 1;
    for (size_t i = 0; i < n; i++) cap += text[i] == '\n';
    const char **words = calloc(cap, sizeof *words);
    if (words == NULL) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", path);
        goto done;
    }
    size_t nw = 0;
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        char *next = nl ? nl + 1 : line + strlen(line);
        if (nl) *nl = '\0';
        size_t len = strlen(line);
        if (len > 0 && line[len - 1] == '\r') line[--len] = '\0';
        if (len == 0) {
            free(words);
            st = hs_fail(err, HS_ERR_FORMAT, "%s:%zu: empty line (one token a line; the "
                         "vocabulary has no empty token)", path, nw + 1);
            goto done;
        }
        words[nw++] = line;
        line = next;
    }
    if (nw == 0) {
        free(words);
        st = hs_fail(err, HS_ERR_FORMAT, "%s: the vocabulary file is empty", path);
        goto done;
    }
    st = hs_tokenizer_words(words, nw, out, err);
    free(words);
    if (st != HS_OK) {
        hs_error inner = *err;
        st = hs_fail(err, inner.status, "%s (line = index + 1): %s", path, inner.msg);
    }
done:
    free(text);
    return st;
}
