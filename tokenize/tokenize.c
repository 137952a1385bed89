/*
 * tokenize/tokenize.c -- the one interface (tokenize.h) over both kinds: the
 * calls every kind answers the same way (exact strings, ids by hash, the
 * BOS setting, freeing), and the dispatch of the others to words.c / bpe.c.
 */
#include "tokenize/tokenize_internal.h"

#include <stdlib.h>
#include <string.h>

int hs_tok_tables_create(hs_tokenizer *t, const char *const *keys, size_t *lens)
{
    struct hs_tok_tables *tb = calloc(1, sizeof *tb);
    if (!tb || hs_idmap_init(&tb->by_text, t->n, keys, lens) != 0) {
        free(tb);
        free(lens);
        return -1;
    }
    tb->lens = lens;
    tb->bos_id = -1;
    tb->bos_on = 1;
    tb->special_on = 1;
    t->tables = tb;
    return 0;
}

void hs_tokenizer_destroy(hs_tokenizer *t)
{
    if (t == NULL) return;
    if (t->tables) {
        hs_idmap_free(&t->tables->by_text);
        free(t->tables->lens);
        hs_bpe_free(t->tables->bpe); /* owns the BPE's strings (one block) */
        free(t->tables);
    }
    if (t->words && t->kind == HS_TOKENIZER_WORDS)
        for (size_t i = 0; i < t->n; i++) free(t->words[i]);
    free(t->words);
    free(t);
}

int hs_tok_id(const hs_tokenizer *t, const char *s)
{
    if (t == NULL || s == NULL || t->tables == NULL) return -1;
    return hs_idmap_get(&t->tables->by_text, s, strlen(s));
}

const char *hs_tok_str(const hs_tokenizer *t, int id)
{
    if (t == NULL || id < 0 || (size_t)id >= t->n) return NULL;
    return t->words[id];
}

int hs_tok_display(const hs_tokenizer *t, int id, hs_buf *b)
{
    const char *s = hs_tok_str(t, id);
    if (s == NULL) return hs_buf_printf(b, "#%d", id);
    if (t->kind == HS_TOKENIZER_BPE) return hs_bpe_display(t, id, b);
    return hs_buf_puts(b, s);
}

int hs_tok_bos(const hs_tokenizer *t)
{
    if (t == NULL || t->tables == NULL || !t->tables->bos_on) return -1;
    return t->tables->bos_id;
}

size_t hs_tok_n_suffix(const hs_tokenizer *t)
{
    if (t == NULL || t->tables == NULL || !t->tables->bos_on || t->tables->bpe == NULL) return 0;
    return t->tables->bpe->pipe->n_suffix;
}

void hs_tok_set_bos(hs_tokenizer *t, int on)
{
    if (t != NULL && t->tables != NULL) t->tables->bos_on = on != 0;
}

void hs_tok_set_special(hs_tokenizer *t, int on)
{
    if (t != NULL && t->tables != NULL) t->tables->special_on = on != 0;
}

hs_status hs_tok_encode(const hs_tokenizer *t, const char *text, size_t n_ctx, hs_tokens *out,
                        hs_error *err)
{
    HS_ASSERT(t != NULL);
    if (t->kind == HS_TOKENIZER_BPE) return hs_bpe_encode(t, text, n_ctx, out, err);
    return hs_words_encode(t, text, n_ctx, out, err);
}

hs_status hs_tok_decode(const hs_tokenizer *t, const int *ids, size_t n, char **text,
                        hs_error *err)
{
    *text = NULL;
    for (size_t i = 0; i < n; i++)
        if (hs_tok_str(t, ids[i]) == NULL)
            return hs_fail(err, HS_ERR_INPUT, "token %zu: id %d is not in [0, %zu)", i, ids[i],
                           t->n);
    if (t->kind == HS_TOKENIZER_BPE) return hs_bpe_decode(t, ids, n, text, err);
    hs_buf b = {0};
    for (size_t i = 0; i < n; i++) {
        if (i) hs_buf_puts(&b, " ");
        hs_buf_puts(&b, t->words[ids[i]]);
    }
    *text = hs_buf_take(&b);
    return *text ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory decoding tokens");
}

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

/* The one token s (starting with a space) adds after the word "a", as inside
 * a prompt: encode("a" + s) minus encode("a") (a Metaspace tokenizer puts
 * its '▁' before a text's first word, so " Mary" alone is '▁' '▁Mary' while
 * in a sentence it is '▁Mary'); -1 when that is not one token (*st HS_OK) or
 * on an error (*st set). */
static int in_context(const hs_tokenizer *t, const char *s, hs_status *st, hs_error *err)
{
    hs_tokens a = {0}, b = {0};
    const size_t n = strlen(s);
    char *as = malloc(n + 2);
    int id = -1;
    *st = as ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (as) {
        as[0] = 'a';
        memcpy(as + 1, s, n + 1);
    }
    if (*st == HS_OK) *st = hs_tok_encode(t, "a", 0, &a, err);
    if (*st == HS_OK) *st = hs_tok_encode(t, as, 0, &b, err);
    if (*st == HS_OK && b.n == a.n + 1 && memcmp(a.ids, b.ids, a.n * sizeof *a.ids) == 0) id = b.ids[a.n];
    hs_tokens_free(&a);
    hs_tokens_free(&b);
    free(as);
    return id;
}

hs_status hs_tok_one(const hs_tokenizer *t, const char *s, int *id, hs_error *err)
{
    *id = -1;
    if (s == NULL || s[0] == '\0') return hs_fail(err, HS_ERR_INPUT, "'' is empty, not one token");
    hs_tokens tk = {0};
    hs_status st = hs_tok_encode(t, s, 0, &tk, err);
    if (st != HS_OK) return st;
    const size_t at = hs_tok_bos(t) >= 0 ? 1 : 0, n = tk.n - at - hs_tok_n_suffix(t);
    if (n == 1) {
        *id = tk.ids[at];
    } else if (s[0] == ' ' && (*id = in_context(t, s, &st, err)) >= 0) {
        /* one token after a word, as in a prompt (SentencePiece-style " Mary") */
    } else if (st != HS_OK) {
        /* in_context's error said */
    } else {
        hs_buf b = {0};
        hs_buf_printf(&b, "'%s' is %zu tokens (", s, n);
        for (size_t i = at; i < at + n; i++) hs_buf_printf(&b, "%s'%s'", i > at ? " " : "", tk.strs[i]);
        hs_buf_puts(&b, ")");
        st = b.oom ? hs_fail(err, HS_ERR_NOMEM, "out of memory") : hs_fail(err, HS_ERR_INPUT, "%s", b.s);
        hs_buf_free(&b);
    }
    hs_tokens_free(&tk);
    return st;
}
