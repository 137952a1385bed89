/*
 * tests/test_tokenizer_json.c -- tokenizer.json pipelines (tokenize/hfjson.c,
 * pretok.c, decode.c, nfc.c, bpe_encode.c) on tiny hand-written files whose
 * results are worked out by hand from huggingface/tokenizers' rules, needing
 * nothing outside C (tests/test_tokenizer_json_reference.sh checks the same
 * code against tokenizers itself on the genuine files):
 *   - NFC: composition, canonical reordering, singletons, a composition
 *     exclusion, Hangul jamo, a blocked mark;
 *   - a SentencePiece-style BPE (Llama 2's pipeline): Prepend + Replace, each
 *     part after a special token prefixed, byte fallback, fuse_unk, the
 *     decoder's Replace / ByteFallback (U+FFFD per byte of a cut character) /
 *     Fuse / Strip, exact strings, hs_tok_id's preference, the BOS from the
 *     post-processor;
 *   - Split behaviours (Isolated, Removed, MergedWithPrevious, MergedWithNext,
 *     Contiguous, invert), Metaspace prepend_scheme first vs always;
 *   - byte-level with ignore_merges and Digits; added tokens' lstrip, rstrip,
 *     single_word and the special switch.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "tokenize/tokenize_internal.h"

#define assert_msg_contains(err, sub)                                                      \
    do {                                                                                   \
        if (strstr((err).msg, (sub)) == NULL)                                              \
            fail_msg("message \"%s\" does not contain \"%s\"", (err).msg, (sub));          \
    } while (0)

static void nfc_is(const char *in, const char *want)
{
    hs_buf b = {0};
    assert_int_equal(hs_nfc(in, strlen(in), &b), 0);
    hs_buf_append(&b, "", 1);
    if (strcmp(b.s, want) != 0) fail_msg("NFC(%s) = %s, expected %s", in, b.s, want);
    hs_buf_free(&b);
}

static void nfc_by_hand(void **state)
{
    (void)state;
    nfc_is("abc", "abc");
    nfc_is("e\xcc\x81", "\xc3\xa9");                          /* e + U+0301 -> é */
    nfc_is("\xe2\x84\xab", "\xc3\x85");                       /* U+212B ANGSTROM SIGN -> Å */
    nfc_is("\xe2\x84\xa6", "\xce\xa9");                       /* U+2126 OHM SIGN -> Ω */
    nfc_is("a\xcc\x82\xcc\xa3", "\xe1\xba\xad");              /* a + 302 + 323 -> ậ (reordered) */
    nfc_is("a\xcc\xa3\xcc\x82", "\xe1\xba\xad");              /* a + 323 + 302 -> ậ */
    nfc_is("\xe0\xa5\x98", "\xe0\xa4\x95\xe0\xa4\xbc");        /* U+0958 is excluded: stays क + ़ */
    nfc_is("\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8", "\xea\xb0\x81"); /* jamo ᄀ ᅡ ᆨ -> 각 */
    nfc_is("\xea\xb0\x80\xe1\x86\xa8", "\xea\xb0\x81");       /* 가 + ᆨ -> 각 */
    /* o + U+0308 + U+0301: ö then + acute is ȫ? no: U+022B is ȫ = ö + macron; ö + acute has
     * no composite, so: ö U+0301 */
    nfc_is("o\xcc\x88\xcc\x81", "\xc3\xb6\xcc\x81");
    /* a + U+0301 (230) + U+0301: the second acute is blocked by the first (same class) */
    nfc_is("a\xcc\x81\xcc\x81", "\xc3\xa1\xcc\x81");
}

/* A SentencePiece-style tokenizer.json (Llama 2's pipeline) over a tiny
 * vocabulary: <unk> 0, <s> 1, </s> 2, <0x00>..<0xFF> 3..258, ▁ 259, a 260,
 * b 261, ▁a 262, ab 263, ▁ab 264; merges ▁ a, a b, ▁a b. */
static cJSON *sp_base(void)
{
    cJSON *r = cJSON_Parse(
        "{\"added_tokens\":[{\"id\":0,\"content\":\"<unk>\",\"special\":true,\"normalized\":false},"
        "{\"id\":1,\"content\":\"<s>\",\"special\":true,\"normalized\":false},"
        "{\"id\":2,\"content\":\"</s>\",\"special\":true,\"normalized\":false}],"
        "\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Prepend\",\"prepend\":\"\xe2\x96\x81\"},"
        "{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\xe2\x96\x81\"}]},"
        "\"pre_tokenizer\":null,"
        "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<s>\",\"type_id\":0}},"
        "{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}]},"
        "\"decoder\":{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Replace\",\"pattern\":{\"String\":\"\xe2\x96\x81\"},\"content\":\" \"},"
        "{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"},{\"type\":\"Strip\",\"content\":\" \",\"start\":1,\"stop\":0}]},"
        "\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\",\"fuse_unk\":true,\"byte_fallback\":true,"
        "\"merges\":[\"\xe2\x96\x81 a\",\"a b\",\"\xe2\x96\x81" "a b\"]}}");
    cJSON *v = cJSON_AddObjectToObject(cJSON_GetObjectItem(r, "model"), "vocab");
    static const char *const HEAD[] = {"<unk>", "<s>", "</s>"};
    for (int i = 0; i < 3; i++) cJSON_AddNumberToObject(v, HEAD[i], i);
    for (int b = 0; b < 256; b++) {
        char t[8];
        snprintf(t, sizeof t, "<0x%02X>", (unsigned)b);
        cJSON_AddNumberToObject(v, t, 3 + b);
    }
    static const char *const REST[] = {"\xe2\x96\x81", "a", "b", "\xe2\x96\x81" "a", "ab",
                                       "\xe2\x96\x81" "ab"};
    for (int i = 0; i < 6; i++) cJSON_AddNumberToObject(v, REST[i], 259 + i);
    return r;
}

static hs_tokenizer *load(cJSON *root)
{
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    hs_tokenizer *t = NULL;
    hs_error err = {0};
    if (hs_tokenizer_from_hf_json(s, strlen(s), "tok.json", &t, &err) != HS_OK) fail_msg("%s", err.msg);
    free(s);
    return t;
}

static void ids_are(const hs_tokenizer *t, const char *text, const int *want, size_t n)
{
    hs_tokens tk = {0};
    hs_error err = {0};
    if (hs_tok_encode(t, text, 0, &tk, &err) != HS_OK) fail_msg("'%s': %s", text, err.msg);
    int ok = tk.n == n;
    for (size_t i = 0; ok && i < n; i++) ok = tk.ids[i] == want[i];
    if (!ok) {
        hs_buf b = {0};
        for (size_t i = 0; i < tk.n; i++) hs_buf_printf(&b, " %d", tk.ids[i]);
        fail_msg("'%s': ids%s", text, b.s ? b.s : " (none)");
    }
    hs_tokens_free(&tk);
}
#define IDS(t, text, ...)                                                                  \
    do {                                                                                   \
        const int w_[] = {__VA_ARGS__};                                                    \
        ids_are(t, text, w_, sizeof w_ / sizeof w_[0]);                                    \
    } while (0)
#define B(x) (3 + (x)) /* the byte-fallback token of byte x */

static void decoded_is(const hs_tokenizer *t, const int *ids, size_t n, const char *want)
{
    char *s = NULL;
    hs_error err = {0};
    if (hs_tok_decode(t, ids, n, &s, &err) != HS_OK) fail_msg("%s", err.msg);
    if (strcmp(s, want) != 0) fail_msg("decoded '%s', expected '%s'", s, want);
    free(s);
}

static void sentencepiece_style_by_hand(void **state)
{
    (void)state;
    hs_tokenizer *t = load(sp_base());
    assert_int_equal(hs_tok_bos(t), 1);        /* the post-processor's <s> */
    IDS(t, "ab", 1, 264);                      /* "▁ab" */
    hs_tok_set_bos(t, 0);
    IDS(t, " ab a", 259, 264, 262);            /* "▁▁ab▁a": ▁ ▁ab ▁a */
    IDS(t, "a\n", 262, B(0x0A));               /* a newline by byte fallback: <0x0A> */
    IDS(t, "\xc3\xa9", 259, B(0xC3), B(0xA9)); /* é is no token: its two bytes */
    IDS(t, "a<s>a", 262, 1, 262);              /* each part after <s> gets its own ▁ */
    IDS(t, "<s>", 1);
    hs_tok_set_special(t, 0);                  /* <s> as text: ▁ < s > by bytes */
    IDS(t, "<s>", 259, B('<'), B('s'), B('>'));
    hs_tok_set_special(t, 1);
    /* the text a token stands for: ▁ab is " ab", <0x0A> is "\n" */
    assert_string_equal(hs_tok_str(t, 264), " ab");
    assert_string_equal(hs_tok_str(t, B(0x0A)), "\n");
    assert_string_equal(hs_tok_str(t, B(0xC3)), "\xef\xbf\xbd");
    assert_int_equal(hs_tok_id(t, " ab"), 264);
    assert_int_equal(hs_tok_id(t, " "), 259); /* ▁ before <0x20> */
    /* decoding: Replace, ByteFallback, Fuse, Strip one leading space */
    const int a[] = {264, B(0x0A), B(0xC3), B(0xA9), 262};
    decoded_is(t, a, 5, "ab\n\xc3\xa9 a");
    const int cut[] = {262, B(0xC3), 260}; /* a cut character: one U+FFFD per byte token */
    decoded_is(t, cut, 3, "a\xef\xbf\xbd" "a");
    hs_tokenizer_destroy(t);
    /* without byte fallback: unknown characters are one fused <unk> */
    cJSON *r = sp_base();
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(r, "model"), "byte_fallback", cJSON_CreateFalse());
    t = load(r);
    hs_tok_set_bos(t, 0);
    IDS(t, "a\xc3\xa9\xc3\xa9" "b", 262, 0, 261);
    hs_tokenizer_destroy(t);
    r = sp_base();
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(r, "model"), "byte_fallback", cJSON_CreateFalse());
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(r, "model"), "fuse_unk", cJSON_CreateFalse());
    t = load(r);
    hs_tok_set_bos(t, 0);
    IDS(t, "a\xc3\xa9\xc3\xa9" "b", 262, 0, 0, 261);
    hs_tokenizer_destroy(t);
}

/* sp_base with the normalizer replaced by a pre-tokenizer (JSON text). */
static hs_tokenizer *with_pre(const char *pre)
{
    cJSON *r = sp_base();
    cJSON_ReplaceItemInObject(r, "normalizer", cJSON_CreateNull());
    cJSON_ReplaceItemInObject(r, "pre_tokenizer", cJSON_Parse(pre));
    hs_tokenizer *t = load(r);
    hs_tok_set_bos(t, 0);
    return t;
}

static void splits_and_metaspace_by_hand(void **state)
{
    (void)state;
    /* Isolated on "b": a|b|a -> a b a (no merge across pieces) */
    hs_tokenizer *t = with_pre("{\"type\":\"Split\",\"pattern\":{\"String\":\"b\"},\"behavior\":\"Isolated\"}");
    IDS(t, "aba", 260, 261, 260);
    hs_tokenizer_destroy(t);
    t = with_pre("{\"type\":\"Split\",\"pattern\":{\"String\":\"b\"},\"behavior\":\"Removed\"}");
    IDS(t, "abab", 260, 260);
    hs_tokenizer_destroy(t);
    t = with_pre("{\"type\":\"Split\",\"pattern\":{\"String\":\"b\"},\"behavior\":\"MergedWithPrevious\"}");
    IDS(t, "abab", 263, 263); /* ab|ab */
    hs_tokenizer_destroy(t);
    t = with_pre("{\"type\":\"Split\",\"pattern\":{\"String\":\"a\"},\"behavior\":\"MergedWithNext\"}");
    IDS(t, "abab", 263, 263); /* ab|ab */
    hs_tokenizer_destroy(t);
    t = with_pre("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"a\"},\"behavior\":\"Contiguous\"}");
    IDS(t, "aab", 260, 260, 261); /* aa|b: no "a a" merge, and b alone */
    hs_tokenizer_destroy(t);
    t = with_pre("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"a\"},\"behavior\":\"Removed\",\"invert\":true}");
    IDS(t, "abba", 260, 260); /* the non-matches (b's) are what is removed */
    hs_tokenizer_destroy(t);
    /* Metaspace: spaces to ▁; "first" prefixes only the part at the start */
    t = with_pre("{\"type\":\"Metaspace\",\"replacement\":\"\xe2\x96\x81\",\"prepend_scheme\":\"first\",\"split\":true}");
    IDS(t, "ab a", 264, 262);
    IDS(t, "a<s>a", 262, 1, 260); /* after <s>: not the first part, no ▁ */
    hs_tokenizer_destroy(t);
    t = with_pre("{\"type\":\"Metaspace\",\"replacement\":\"\xe2\x96\x81\",\"prepend_scheme\":\"always\",\"split\":false}");
    IDS(t, "a<s>a", 262, 1, 262);
    IDS(t, "ab a", 264, 262); /* split false: "▁ab▁a" merges as one word: ▁ab ▁a */
    hs_tokenizer_destroy(t);
}

/* A byte-level tokenizer.json: every byte (GPT-2's alphabet), "ab" 256,
 * "Ġab" 257, "Ġa" 258, "12" 259, added "<x>" 260; merges a b, Ġ a, Ġa b
 * ("Ġab" by Ġa + b), 1 2. */
static hs_tokenizer *byte_level(const char *pre, int ignore_merges, const char *added_flags)
{
    cJSON *r = cJSON_CreateObject(), *m = cJSON_AddObjectToObject(r, "model");
    cJSON *v = cJSON_AddObjectToObject(m, "vocab");
    uint32_t cp_of[256];
    int byte_of[HS_ALPHA_MAX];
    hs_byte_alphabet(cp_of, byte_of);
    for (int b = 0; b < 256; b++) {
        char u[4] = {0};
        if (cp_of[b] < 0x80) u[0] = (char)cp_of[b];
        else {
            u[0] = (char)(0xC0 | cp_of[b] >> 6);
            u[1] = (char)(0x80 | (cp_of[b] & 0x3F));
        }
        cJSON_AddNumberToObject(v, u, b);
    }
    cJSON_AddNumberToObject(v, "ab", 256);
    cJSON_AddNumberToObject(v, "\xc4\xa0" "ab", 257);
    cJSON_AddNumberToObject(v, "\xc4\xa0" "a", 258);
    cJSON_AddNumberToObject(v, "12", 259);
    cJSON *ms = cJSON_AddArrayToObject(m, "merges");
    cJSON_AddItemToArray(ms, cJSON_CreateString("\xc4\xa0 a"));
    cJSON_AddItemToArray(ms, cJSON_CreateString("\xc4\xa0" "a b"));
    cJSON_AddItemToArray(ms, cJSON_CreateString("1 2"));
    cJSON_AddBoolToObject(m, "ignore_merges", ignore_merges);
    cJSON_AddItemToObject(r, "pre_tokenizer", cJSON_Parse(pre));
    char added[256];
    snprintf(added, sizeof added, "[{\"id\":260,\"content\":\"<x>\",\"special\":true,%s}]", added_flags);
    cJSON_AddItemToObject(r, "added_tokens", cJSON_Parse(added));
    hs_tokenizer *t = load(r);
    hs_tok_set_bos(t, 0);
    return t;
}

static void byte_level_options_by_hand(void **state)
{
    (void)state;
    static const char BL[] = "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true}";
    /* "ab" is in the vocabulary but no merge makes it: only ignore_merges finds it */
    hs_tokenizer *t = byte_level(BL, 0, "\"normalized\":false");
    IDS(t, "ab", 'a', 'b'); /* a byte's id is the byte here */
    IDS(t, " ab", 257);
    IDS(t, "1212", 259, 259);
    hs_tokenizer_destroy(t);
    t = byte_level(BL, 1, "\"normalized\":false");
    IDS(t, "ab", 256);
    hs_tokenizer_destroy(t);
    /* Digits one by one before ByteLevel: "12" never merges */
    t = byte_level("{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Digits\",\"individual_digits\":true},"
                   "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":false}]}", 0,
                   "\"normalized\":false");
    IDS(t, "12", '1', '2');
    hs_tokenizer_destroy(t);
    /* add_prefix_space: " " before each part that lacks one */
    t = byte_level("{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"use_regex\":true}", 0,
                   "\"normalized\":false");
    IDS(t, "ab", 257);
    hs_tokenizer_destroy(t);
    /* lstrip / rstrip take the spaces around an added token */
    t = byte_level(BL, 0, "\"normalized\":false,\"lstrip\":true,\"rstrip\":true");
    IDS(t, "a  <x>  b", 'a', 260, 'b');
    hs_tokenizer_destroy(t);
    t = byte_level(BL, 0, "\"normalized\":false");
    IDS(t, "a <x> b", 'a', ' ', 260, ' ', 'b');
    hs_tokenizer_destroy(t);
    /* single_word: not inside a word */
    t = byte_level(BL, 0, "\"normalized\":false,\"single_word\":true");
    IDS(t, "<x> a", 260, 258);
    IDS(t, "a<x>", 'a', '<', 'x', '>');
    hs_tokenizer_destroy(t);
}

static void refusals_name_the_field(void **state)
{
    (void)state;
    static const struct {
        const char *pre, *want;
    } bad[] = {
        {"{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(\"},\"behavior\":\"Isolated\"}",
         "tok.json: pre_tokenizer.pattern: the regex '(' is invalid at 1: missing closing parenthesis"},
        {"{\"type\":\"Split\",\"pattern\":{\"Glob\":\"*\"},\"behavior\":\"Isolated\"}",
         "tok.json: pre_tokenizer.pattern is not {\"String\": ...} or {\"Regex\": ...}"},
        {"{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"ByteLevel\"},{\"type\":\"Digits\"}]}",
         "tok.json: pre_tokenizer.pretokenizers[1]: a pre-tokenizer after ByteLevel is not supported"},
        {"{\"type\":\"Metaspace\",\"replacement\":\"ab\"}",
         "tok.json: pre_tokenizer.replacement is not one character"},
        {"{\"type\":\"UnicodeScripts\"}",
         "tok.json: pre_tokenizer: the pre-tokenizer 'UnicodeScripts' is not supported"},
        {"{\"type\":\"Split\",\"pattern\":{\"String\":\"a\"},\"behavior\":\"Isolated\",\"invert\":1}",
         "tok.json: pre_tokenizer.invert is not true or false"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *r = sp_base();
        cJSON_ReplaceItemInObject(r, "pre_tokenizer", cJSON_Parse(bad[i].pre));
        char *s = cJSON_PrintUnformatted(r);
        cJSON_Delete(r);
        hs_tokenizer *t = (hs_tokenizer *)1;
        hs_error err = {0};
        assert_int_equal(hs_tokenizer_from_hf_json(s, strlen(s), "tok.json", &t, &err), HS_ERR_FORMAT);
        free(s);
        assert_null(t);
        assert_null(strchr(err.msg, '\n'));
        assert_msg_contains(err, bad[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nfc_by_hand),
        cmocka_unit_test(sentencepiece_style_by_hand),
        cmocka_unit_test(splits_and_metaspace_by_hand),
        cmocka_unit_test(byte_level_options_by_hand),
        cmocka_unit_test(refusals_name_the_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
