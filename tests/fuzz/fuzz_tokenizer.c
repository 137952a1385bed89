/*
 * tests/fuzz/fuzz_tokenizer.c -- libFuzzer target for the word tokenizer
 * (hs_tok_encode, and hs_tok_decode back) on the Winograd vocabulary, and the
 * vocab JSON reader (hs_tokenizer_from_json).
 *
 * Input: byte 0 picks n_ctx (byte & 31; 0 = no limit) and, when its top bit is
 * set, also feeds the rest to the vocab JSON reader; the rest, NUL-terminated,
 * is the sentence. Invariants checked (abort on violation):
 *  - success: 0 < n <= n_ctx (when n_ctx > 0), every id in [0, V), strs[i] is
 *    the vocab word of ids[i], no token contains whitespace, and the decoded
 *    text encodes to the same ids;
 *  - failure: HS_ERR_INPUT (or NOMEM), a one-line non-empty message, out left
 *    empty;
 *  - vocab JSON: success gives n > 0 unique words that round-trip through
 *    hs_tokenizer_to_json; failure gives HS_ERR_FORMAT and a one-line message.
 * Build: cmake -DHS_FUZZ=ON with CC=clang; run: ./fuzz_tokenizer -max_total_time=60
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tasks/tasks.h"
#include "tokenize/tokenize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static hs_tokenizer *vocab;

static void check(int ok)
{
    if (!ok) abort();
}

static void check_vocab_json(const char *text)
{
    hs_tokenizer *v = NULL;
    hs_error err = {0};
    hs_status st = hs_tokenizer_from_json(text, &v, &err);
    if (st != HS_OK) {
        check(st == HS_ERR_FORMAT || st == HS_ERR_NOMEM);
        check(v == NULL && err.msg[0] != '\0' && strchr(err.msg, '\n') == NULL);
        return;
    }
    check(v != NULL && v->n > 0);
    for (size_t i = 0; i < v->n; i++)
        for (size_t j = 0; j < i; j++) check(strcmp(v->words[i], v->words[j]) != 0);
    char *json = NULL;
    hs_tokenizer *w = NULL;
    check(hs_tokenizer_to_json(v, &json, &err) == HS_OK);
    check(hs_tokenizer_from_json(json, &w, &err) == HS_OK);
    check(w->n == v->n);
    for (size_t i = 0; i < v->n; i++) check(strcmp(w->words[i], v->words[i]) == 0);
    free(json);
    hs_tokenizer_destroy(w);
    hs_tokenizer_destroy(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (vocab == NULL) {
        hs_error err = {0};
        if (hs_winograd_vocab(&vocab, &err) != HS_OK) abort();
    }
    if (size == 0) return 0;
    size_t n_ctx = data[0] & 31u;
    int json_too = (data[0] & 0x80u) != 0;
    char *s = malloc(size); /* size - 1 bytes + NUL */
    if (!s) return 0;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';

    hs_tokens t;
    hs_error err = {0};
    hs_status st = hs_tok_encode(vocab, s, n_ctx, &t, &err);
    if (st == HS_OK) {
        check(t.n > 0);
        check(n_ctx == 0 || t.n <= n_ctx);
        check(t.folded == 0 || t.folded == 1);
        for (size_t i = 0; i < t.n; i++) {
            check(t.ids[i] >= 0 && (size_t)t.ids[i] < vocab->n);
            check(strcmp(t.strs[i], hs_tok_str(vocab, t.ids[i])) == 0);
            check(strpbrk(t.strs[i], " \t\n\r\v\f") == NULL);
        }
        /* decoding reads back as the same ids */
        char *text = NULL;
        hs_tokens u;
        check(hs_tok_decode(vocab, t.ids, t.n, &text, &err) == HS_OK);
        check(hs_tok_encode(vocab, text, 0, &u, &err) == HS_OK && u.n == t.n);
        for (size_t i = 0; i < t.n; i++) check(u.ids[i] == t.ids[i]);
        hs_tokens_free(&u);
        free(text);
    } else {
        check(st == HS_ERR_INPUT || st == HS_ERR_NOMEM);
        check(err.msg[0] != '\0' && strchr(err.msg, '\n') == NULL);
        check(t.n == 0 && t.ids == NULL && t.strs == NULL);
    }
    hs_tokens_free(&t);
    if (json_too) check_vocab_json(s);
    free(s);
    return 0;
}
