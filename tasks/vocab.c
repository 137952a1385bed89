/*
 * tasks/vocab.c -- the word-level vocabulary (built-in Winograd words, JSON
 * export/import for the checkpoint's `vocab` metadata) and the sentence
 * tokenizer for user input.
 */
#include "tasks/tasks.h"

#include <string.h>

#include <cjson/cJSON.h>

/* ------------------------------------------------------------------------ */
/* Word lists                                                                */

const char *const hs_wg_nouns[HS_WG_N_NOUNS] = {
    "animal", "street", "dog",  "road", "cat", "river", "horse", "bridge",
    "fox",    "field",  "goat", "path", "cow", "lane",  "deer",  "creek",
};

const char *const hs_wg_adjectives[HS_WG_N_ADJS] = {
    "tired", "scared", "slow", "weak", /* crosser: it = x */
    "wet",   "wide",   "busy", "steep" /* crossed: it = y */
};

/* The template words in order of first appearance in the template. */
static const char *const template_words[] = {
    "the", "did", "not", "cross", "because", "it", "was", "too", ",", "so", "waited", ".",
};
#define N_TEMPLATE_WORDS (sizeof template_words / sizeof template_words[0])

/* ------------------------------------------------------------------------ */
/* UTF-8                                                                     */

/* Decodes one UTF-8 sequence at s (n bytes available). Returns its length
 * (1..4) and the code point in *cp, or 0 if the bytes are not valid UTF-8
 * (bad lead byte, truncated, bad continuation, overlong, surrogate, > U+10FFFF). */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
        len = 2; v = c & 0x1Fu; min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3; v = c & 0x0Fu; min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4; v = c & 0x07u; min = 0x10000;
    } else {
        return 0;
    }
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0u) != 0x80u) return 0;
        v = (v << 6) | (s[i] & 0x3Fu);
    }
    if (v < min || v > 0x10FFFFu || (v >= 0xD800u && v <= 0xDFFFu)) return 0;
    *cp = v;
    return len;
}

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* C0 controls other than whitespace, DEL, C1 controls. */
static int is_control(uint32_t cp)
{
    if (cp < 0x20) return !is_space((unsigned char)cp);
    return cp == 0x7F || (cp >= 0x80 && cp <= 0x9F);
}

/* ------------------------------------------------------------------------ */
/* Vocabulary                                                                */

static char *dup_str(const char *s)
{
    size_t n = strlen(s);
    char *p = malloc(n + 1);
    if (p) memcpy(p, s, n + 1);
    return p;
}

void hs_vocab_destroy(hs_vocab *v)
{
    if (v == NULL) return;
    if (v->words) {
        for (size_t i = 0; i < v->n; i++) free(v->words[i]);
        free(v->words);
    }
    free(v);
}

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
        size_t len = utf8_decode(s + k, n - k, &cp);
        if (len == 0)
            return hs_fail(err, HS_ERR_FORMAT, "vocab word %zu is not valid UTF-8 (byte %zu)", i, k);
        if (cp < 0x80 && is_space((unsigned char)cp))
            return hs_fail(err, HS_ERR_FORMAT, "vocab word %zu contains whitespace (byte %zu)", i, k);
        if (is_control(cp))
            return hs_fail(err, HS_ERR_FORMAT,
                           "vocab word %zu contains a control character (byte %zu)", i, k);
        k += len;
    }
    /* Pass 2: the word is printable now. */
    for (size_t k = 0; k < n; k++) {
        if (word[k] >= 'A' && word[k] <= 'Z')
            return hs_fail(err, HS_ERR_FORMAT,
                           "vocab word %zu '%s' has upper-case letters; the tokenizer folds "
                           "case to lower, so it could never be typed", i, word);
        if ((word[k] == ',' || word[k] == '.') && n != 1)
            return hs_fail(err, HS_ERR_FORMAT,
                           "vocab word %zu '%s' contains ',' or '.'; the tokenizer splits those "
                           "off as tokens of their own", i, word);
    }
    return HS_OK;
}

hs_status hs_vocab_create(const char *const *words, size_t n, hs_vocab **out, hs_error *err)
{
    hs_status st = HS_OK;
    hs_vocab *v = NULL;
    *out = NULL;
    if (n == 0 || words == NULL) return hs_fail(err, HS_ERR_FORMAT, "vocab is empty (no words)");
    if (n > (size_t)INT32_MAX) return hs_fail(err, HS_ERR_FORMAT, "vocab has too many words (%zu)", n);
    for (size_t i = 0; i < n; i++) {
        st = check_word(words[i], i, err);
        if (st != HS_OK) return st;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(words[i], words[j]) == 0)
                return hs_fail(err, HS_ERR_FORMAT,
                               "vocab word '%s' is duplicated (ids %zu and %zu)", words[i], j, i);
        }
    }
    v = calloc(1, sizeof *v);
    if (!v) goto nomem;
    v->words = calloc(n, sizeof *v->words);
    if (!v->words) goto nomem;
    v->n = n;
    for (size_t i = 0; i < n; i++) {
        v->words[i] = dup_str(words[i]);
        if (!v->words[i]) goto nomem;
    }
    *out = v;
    return HS_OK;
nomem:
    hs_vocab_destroy(v);
    return hs_fail(err, HS_ERR_NOMEM, "out of memory building the vocabulary");
}

hs_status hs_vocab_create_winograd(hs_vocab **out, hs_error *err)
{
    const char *words[N_TEMPLATE_WORDS + HS_WG_N_NOUNS + HS_WG_N_ADJS];
    size_t k = 0;
    for (size_t i = 0; i < N_TEMPLATE_WORDS; i++) words[k++] = template_words[i];
    for (size_t i = 0; i < HS_WG_N_NOUNS; i++) words[k++] = hs_wg_nouns[i];
    for (size_t i = 0; i < HS_WG_N_ADJS; i++) words[k++] = hs_wg_adjectives[i];
    return hs_vocab_create(words, k, out, err);
}

int hs_vocab_id(const hs_vocab *v, const char *word)
{
    if (v == NULL || word == NULL) return -1;
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->words[i], word) == 0) return (int)i;
    return -1;
}

const char *hs_vocab_word(const hs_vocab *v, int id)
{
    if (v == NULL || id < 0 || (size_t)id >= v->n) return NULL;
    return v->words[id];
}

hs_status hs_vocab_to_json(const hs_vocab *v, char **json, hs_error *err)
{
    *json = NULL;
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
    *json = dup_str(text);
    cJSON_free(text);
    cJSON_Delete(arr);
    if (!*json) return hs_fail(err, HS_ERR_NOMEM, "out of memory writing the vocab JSON");
    return HS_OK;
nomem:
    cJSON_Delete(arr);
    return hs_fail(err, HS_ERR_NOMEM, "out of memory writing the vocab JSON");
}

hs_status hs_vocab_from_json(const char *json, hs_vocab **out, hs_error *err)
{
    hs_status st;
    cJSON *root = NULL;
    const char **words = NULL;
    *out = NULL;
    if (json == NULL || json[0] == '\0')
        return hs_fail(err, HS_ERR_FORMAT, "vocab metadata is missing");
    root = cJSON_ParseWithOpts(json, NULL, 1);
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
    st = hs_vocab_create(words, (size_t)n, out, err);
done:
    free(words);
    cJSON_Delete(root);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Tokenizer                                                                 */

void hs_tokens_free(hs_tokens *t)
{
    if (t == NULL) return;
    if (t->strs) {
        for (size_t i = 0; i < t->n; i++) free(t->strs[i]);
        free(t->strs);
    }
    free(t->ids);
    memset(t, 0, sizeof *t);
}

/* Appends src to dst (cap bytes, NUL-terminated) as far as it fits. */
static void append(char *dst, size_t cap, size_t *len, const char *src)
{
    size_t n = strlen(src);
    if (*len + 1 >= cap) return;
    if (n > cap - 1 - *len) n = cap - 1 - *len;
    memcpy(dst + *len, src, n);
    *len += n;
    dst[*len] = '\0';
}

/* Copies word into buf (cap >= 8), cut at a UTF-8 boundary with "..." when it
 * is longer than limit bytes. */
static void clip_word(char *buf, size_t cap, const char *word, size_t limit)
{
    size_t n = strlen(word);
    if (limit > cap - 4) limit = cap - 4;
    if (n <= limit) {
        memcpy(buf, word, n + 1);
        return;
    }
    size_t k = limit;
    while (k > 0 && ((unsigned char)word[k] & 0xC0u) == 0x80u) k--;
    memcpy(buf, word, k);
    memcpy(buf + k, "...", 4);
}

static hs_status unknown_word(const hs_vocab *v, const char *word, size_t pos, hs_error *err)
{
    char w[80];
    char list[800];
    size_t len = 0;
    list[0] = '\0';
    clip_word(w, sizeof w, word, 64);
    for (size_t i = 0; i < v->n; i++) {
        if (len + strlen(v->words[i]) + 8 >= sizeof list) {
            append(list, sizeof list, &len, " ...");
            break;
        }
        if (i > 0) append(list, sizeof list, &len, " ");
        append(list, sizeof list, &len, v->words[i]);
    }
    return hs_fail(err, HS_ERR_INPUT, "unknown word '%s' at position %zu; the vocabulary is: %s",
                   w, pos, list);
}

hs_status hs_tokenize(const hs_vocab *v, const char *sentence, size_t n_ctx, hs_tokens *out,
                      hs_error *err)
{
    hs_status st = HS_OK;
    char *buf = NULL;
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
        size_t len = utf8_decode(s + k, n - k, &cp);
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
    out->ids = calloc(n_tok, sizeof *out->ids);
    out->strs = calloc(n_tok, sizeof *out->strs);
    if (!buf || !out->ids || !out->strs) goto nomem;
    size_t b = 0, t = 0;
    in_word = 0;
    for (size_t k = 0; k < n; k++) {
        unsigned char c = s[k];
        if (is_space(c) || c == ',' || c == '.') {
            if (in_word) {
                buf[b++] = '\0';
                in_word = 0;
            }
            if (c == ',' || c == '.') {
                buf[b++] = (char)c;
                buf[b++] = '\0';
            }
        } else {
            buf[b++] = (char)((c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c);
            in_word = 1;
        }
    }
    if (in_word) buf[b++] = '\0';
    /* Walk the NUL-separated tokens. */
    for (size_t k = 0; k < b && t < n_tok; t++) {
        const char *w = buf + k;
        size_t len = strlen(w);
        int id = hs_vocab_id(v, w);
        if (id < 0) {
            st = unknown_word(v, w, t, err);
            goto fail;
        }
        out->ids[t] = id;
        out->strs[t] = dup_str(w);
        if (!out->strs[t]) goto nomem;
        out->n = t + 1;
        k += len + 1;
    }
    HS_ASSERT(t == n_tok);
    out->n = n_tok;
    out->folded = folded;
    free(buf);
    return HS_OK;
nomem:
    st = hs_fail(err, HS_ERR_NOMEM, "out of memory tokenizing the sentence");
fail:
    free(buf);
    hs_tokens_free(out);
    return st;
}
