/*
 * tests/fuzz/fuzz_tokenizer_pipeline.c -- libFuzzer target for tokenizer.json
 * pipelines (tokenize/hfjson.c, pretok.c, decode.c, nfc.c, bpe_encode.c):
 * arbitrary normalizers, pre-tokenizers, post-processors, decoders and added
 * tokens around a fixed small BPE, then arbitrary text through them.
 *
 * Input: "PIPELINE\0TEXT". PIPELINE is a JSON object whose fields
 * normalizer, pre_tokenizer, post_processor, decoder, added_tokens and model
 * options (byte_fallback, ignore_merges, fuse_unk, unk_token) replace those
 * of the fixed tokenizer.json; with "byte_level": true the fixed model is a
 * byte-level one (every byte, GPT-2's alphabet), else a SentencePiece-style
 * one (<0xNN> tokens, "▁" words). TEXT is encoded (it need not be UTF-8).
 * Invariants (abort on violation; leaks are LeakSanitizer's):
 *  - loading fails with HS_ERR_FORMAT (or NOMEM) and a one-line message
 *    starting "tokenizer.json: ", *out NULL; or succeeds;
 *  - encoding succeeds or refuses with HS_ERR_INPUT (not UTF-8, a regex's
 *    match limit) and one line; every id in [0, V), every exact string
 *    valid UTF-8;
 *  - decoding the ids succeeds or refuses with HS_ERR_INPUT and one line;
 *  - with the special tokens off the same holds.
 * Build: cmake -DHS_FUZZ=ON with CC=clang; run: ./fuzz_tokenizer_pipeline -max_total_time=60
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tokenize/tokenize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok) abort();
}

/* The fixed model: byte-level (256 bytes through GPT-2's alphabet, "ab",
 * "Ġab") or SentencePiece-style (<unk>, <s>, </s>, <0x00>..<0xFF>, ▁, a, b,
 * ▁a, ab, ▁ab, é). */
static cJSON *model(int byte_level)
{
    cJSON *m = cJSON_CreateObject(), *v = cJSON_AddObjectToObject(m, "vocab");
    cJSON *merges = cJSON_AddArrayToObject(m, "merges");
    cJSON_AddStringToObject(m, "type", "BPE");
    int id = 0;
    char tok[8];
    if (byte_level) {
        for (int b = 0, n = 0; b < 256; b++) {
            const int self = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
            const unsigned cp = self ? (unsigned)b : 256u + (unsigned)n++;
            if (cp < 0x80) snprintf(tok, sizeof tok, "%c", (char)cp);
            else snprintf(tok, sizeof tok, "%c%c", (char)(0xC0 | cp >> 6), (char)(0x80 | (cp & 0x3F)));
            cJSON_AddNumberToObject(v, tok, id++);
        }
        cJSON_AddNumberToObject(v, "ab", id++);
        cJSON_AddNumberToObject(v, "\xc4\xa0" "ab", id++);
        cJSON_AddItemToArray(merges, cJSON_CreateString("a b"));
        cJSON_AddItemToArray(merges, cJSON_CreateString("\xc4\xa0 ab"));
    } else {
        static const char *const HEAD[] = {"<unk>", "<s>", "</s>"};
        for (int i = 0; i < 3; i++) cJSON_AddNumberToObject(v, HEAD[i], id++);
        for (int b = 0; b < 256; b++) {
            snprintf(tok, sizeof tok, "<0x%02X>", (unsigned)b);
            cJSON_AddNumberToObject(v, tok, id++);
        }
        static const char *const REST[] = {"\xe2\x96\x81", "a", "b", "\xe2\x96\x81" "a", "ab",
                                           "\xe2\x96\x81" "ab", "\xc3\xa9"};
        for (int i = 0; i < 7; i++) cJSON_AddNumberToObject(v, REST[i], id++);
        cJSON_AddItemToArray(merges, cJSON_CreateString("\xe2\x96\x81 a"));
        cJSON_AddItemToArray(merges, cJSON_CreateString("a b"));
        cJSON_AddItemToArray(merges, cJSON_CreateString("\xe2\x96\x81" "a b"));
        cJSON_AddStringToObject(m, "unk_token", "<unk>");
    }
    return m;
}

static void run(const hs_tokenizer *t, const char *text)
{
    hs_tokens tk = {0};
    hs_error err = {0};
    hs_status st = hs_tok_encode(t, text, 0, &tk, &err);
    if (st != HS_OK) {
        check(st == HS_ERR_INPUT || st == HS_ERR_NOMEM);
        check(err.msg[0] != '\0' && strchr(err.msg, '\n') == NULL);
        return;
    }
    for (size_t i = 0; i < tk.n; i++) {
        check(tk.ids[i] >= 0 && (size_t)tk.ids[i] < t->n);
        check(hs_utf8_valid(tk.strs[i]));
    }
    char *back = NULL;
    st = hs_tok_decode(t, tk.ids, tk.n, &back, &err);
    check(st == HS_OK || st == HS_ERR_INPUT || st == HS_ERR_NOMEM);
    check(st == HS_OK ? back != NULL : strchr(err.msg, '\n') == NULL);
    free(back);
    hs_tokens_free(&tk);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    if (nul == NULL) return 0;
    cJSON *pipe = cJSON_ParseWithLength((const char *)data, (size_t)(nul - data));
    if (!cJSON_IsObject(pipe)) {
        cJSON_Delete(pipe);
        return 0;
    }
    const size_t tn = size - (size_t)(nul - data) - 1;
    char *text = malloc(tn + 1);
    memcpy(text, nul + 1, tn);
    text[tn] = '\0';
    cJSON *root = cJSON_CreateObject();
    cJSON *m = model(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pipe, "byte_level")));
    static const char *const TOP[] = {"normalizer", "pre_tokenizer", "post_processor", "decoder",
                                      "added_tokens"};
    static const char *const OPT[] = {"byte_fallback", "ignore_merges", "fuse_unk", "unk_token"};
    for (size_t i = 0; i < 5; i++) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(pipe, TOP[i]);
        if (f) cJSON_AddItemToObject(root, TOP[i], cJSON_Duplicate(f, 1));
    }
    for (size_t i = 0; i < 4; i++) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(pipe, OPT[i]);
        if (f) {
            cJSON_DeleteItemFromObject(m, OPT[i]);
            cJSON_AddItemToObject(m, OPT[i], cJSON_Duplicate(f, 1));
        }
    }
    cJSON_AddItemToObject(root, "model", m);
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    cJSON_Delete(pipe);
    hs_tokenizer *t = (hs_tokenizer *)&t;
    hs_error err = {0};
    hs_status st = hs_tokenizer_from_hf_json(json, strlen(json), "tokenizer.json", &t, &err);
    free(json);
    if (st != HS_OK) {
        check(st == HS_ERR_FORMAT || st == HS_ERR_NOMEM);
        check(t == NULL && err.msg[0] != '\0' && strchr(err.msg, '\n') == NULL);
        check(st != HS_ERR_FORMAT || strncmp(err.msg, "tokenizer.json: ", 16) == 0);
        free(text);
        return 0;
    }
    for (size_t i = 0; i < t->n; i++) check(hs_utf8_valid(hs_tok_str(t, (int)i)));
    run(t, text);
    hs_tok_set_special(t, 0);
    hs_tok_set_bos(t, 0);
    run(t, text);
    hs_tokenizer_destroy(t);
    free(text);
    return 0;
}
