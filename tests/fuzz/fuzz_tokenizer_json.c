/*
 * tests/fuzz/fuzz_tokenizer_json.c -- libFuzzer target for the BPE file
 * parsers (tokenize/bpe_load.c): hs_tokenizer_from_hf_json (tokenizer.json)
 * and hs_tokenizer_from_vocab_merges (vocab.json + merges.txt) on arbitrary
 * bytes.
 *
 * Input: byte 0 even: the rest is a tokenizer.json; odd: bytes 1..2 (little
 * endian, modulo the rest's length) split the rest into vocab.json and
 * merges.txt. Invariants (abort on violation; leaks are LeakSanitizer's):
 *  - failure: HS_ERR_FORMAT (or NOMEM), a non-empty one-line message naming
 *    the file ("tokenizer.json: ...", "vocab.json: ...", "merges.txt..."),
 *    *out NULL;
 *  - success: a BPE whose exact strings are valid UTF-8, and a fixed text
 *    (every byte class: ASCII, spaces, newlines, multi-byte characters)
 *    encodes; with GPT-2's pipeline (no normalizer, ByteLevel alone without
 *    add_prefix_space) it decodes back byte for byte. Other pipelines:
 *    fuzz_tokenizer_pipeline.
 * Build: cmake -DHS_FUZZ=ON with CC=clang; run: ./fuzz_tokenizer_json -max_total_time=60
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/tokenize_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok) abort();
}

static const char SAMPLE[] = "Hello world, don't  stop\n\n\tI\xe2\x80\x99m \xf0\x9f\xa4\x97 caf\xc3\xa9 42!";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) return 0;
    hs_tokenizer *t = (hs_tokenizer *)&t; /* any non-NULL: must come back NULL on failure */
    hs_error err = {0};
    hs_status st;
    const char *text = (const char *)data + 1;
    const size_t n = size - 1;
    int json = (data[0] & 1u) == 0;
    if (json) {
        st = hs_tokenizer_from_hf_json(text, n, "tokenizer.json", &t, &err);
    } else {
        const size_t cut = ((size_t)data[1] | (size_t)data[2] << 8) % (n - 1);
        text += 2;
        st = hs_tokenizer_from_vocab_merges(text, cut, text + cut, n - 2 - cut, "vocab.json",
                                            "merges.txt", &t, &err);
    }
    if (st != HS_OK) {
        check(st == HS_ERR_FORMAT || st == HS_ERR_NOMEM);
        check(t == NULL && err.msg[0] != '\0' && strchr(err.msg, '\n') == NULL);
        if (st == HS_ERR_FORMAT)
            check(strncmp(err.msg, json ? "tokenizer.json" : "vocab.json", json ? 14 : 10) == 0 ||
                  (!json && strncmp(err.msg, "merges.txt", 10) == 0));
        return 0;
    }
    check(t != NULL && t->kind == HS_TOKENIZER_BPE);
    for (size_t i = 0; i < t->n; i++) check(hs_utf8_valid(hs_tok_str(t, (int)i)));
    hs_tok_set_bos(t, 0);
    hs_tokens tk = {0};
    char *back = NULL;
    const hs_pipe *p = t->tables->bpe->pipe;
    const int gpt2 = p->n_norm == 0 && p->n_pre == 1 && p->pre[0].kind == HS_PRE_BYTELEVEL &&
                     !p->pre[0].prefix;
    check(hs_tok_encode(t, SAMPLE, 0, &tk, &err) == HS_OK);
    st = hs_tok_decode(t, tk.ids, tk.n, &back, &err);
    check(st == HS_OK || st == HS_ERR_INPUT);
    if (gpt2) check(st == HS_OK && strcmp(back, SAMPLE) == 0);
    free(back);
    hs_tokens_free(&tk);
    hs_tokenizer_destroy(t);
    return 0;
}
