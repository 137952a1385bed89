/*
 * tests/test_bpe.c -- tokenize/'s byte-level BPE on tiny hand-written
 * tokenizers whose ids are computed by hand from openai/gpt-2 encoder.py's
 * rules: the 256 byte tokens in GPT-2's bytes_to_unicode order (ids 0..255,
 * rebuilt here independently) plus a few merges. Covers both merges formats
 * of tokenizer.json and vocab.json + merges.txt, loading from a folder, merges
 * applied by rank (not by position), encoder.py's passes for a merge list not
 * in training order, the pattern (spaces, contractions, case), BOS on and off,
 * exact strings (U+FFFD), display strings, decoding, hs_tok_id, and every
 * refusal with its message. The genuine GPT-2 files are tested in
 * tests/test_bpe_reference.sh.
 * Working directory: tests/. Scratch: $HS_TEST_TMP.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "tokenize/tokenize.h"

#define assert_msg_contains(err, sub)                                                      \
    do {                                                                                   \
        if (strstr((err).msg, (sub)) == NULL)                                              \
            fail_msg("message \"%s\" does not contain \"%s\"", (err).msg, (sub));          \
    } while (0)

/* The byte-level alphabet, written out from encoder.py's bytes_to_unicode:
 * bs = 33..126, 161..172, 174..255 (ids 0..187), then the other bytes in
 * ascending order as U+0100.. (ids 188..255). id_of[b] is byte b's id. */
static char g_sym[256][4]; /* UTF-8 of each id's character */
static int g_id_of[256];

static void alphabet(void)
{
    int id = 0, n = 0, cp[256];
    for (int b = 0; b < 256; b++)
        if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) cp[id] = b, g_id_of[b] = id++;
    for (int b = 0; b < 256; b++)
        if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174))
            cp[id] = 256 + n++, g_id_of[b] = id++;
    for (int i = 0; i < 256; i++) {
        const int c = cp[i];
        if (c < 0x80) {
            g_sym[i][0] = (char)c, g_sym[i][1] = 0;
        } else {
            g_sym[i][0] = (char)(0xC0 | c >> 6), g_sym[i][1] = (char)(0x80 | (c & 0x3F));
            g_sym[i][2] = 0;
        }
    }
}

/* The base tokenizer.json: bytes 0..255, then 256 "bc", 257 "ab", 258 "Ġab",
 * 259 "abab", 260 "cc", and the added token 261 "<|endoftext|>"; merges in
 * rank order "b c", "a b", "Ġ ab", "ab ab", "c c" (as strings, or as pairs
 * with pairs != 0). */
static cJSON *base(int pairs)
{
    static const char *const EXTRA[] = {"bc", "ab", ("\xc4\xa0" "ab"), "abab", "cc"};
    static const char *const MERGES[][2] = {{"b", "c"}, {"a", "b"}, {"\xc4\xa0", "ab"},
                                            {"ab", "ab"}, {"c", "c"}};
    cJSON *root = cJSON_CreateObject(), *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddNullToObject(root, "normalizer");
    cJSON *pre = cJSON_AddObjectToObject(root, "pre_tokenizer");
    cJSON_AddStringToObject(pre, "type", "ByteLevel");
    cJSON_AddFalseToObject(pre, "add_prefix_space");
    cJSON_AddTrueToObject(pre, "use_regex");
    cJSON *added = cJSON_AddArrayToObject(root, "added_tokens"), *a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "id", 261);
    cJSON_AddStringToObject(a, "content", "<|endoftext|>");
    cJSON_AddTrueToObject(a, "special");
    cJSON_AddItemToArray(added, a);
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddNullToObject(model, "dropout");
    cJSON_AddStringToObject(model, "continuing_subword_prefix", "");
    cJSON_AddFalseToObject(model, "byte_fallback");
    cJSON *vocab = cJSON_AddObjectToObject(model, "vocab");
    for (int i = 0; i < 256; i++) cJSON_AddNumberToObject(vocab, g_sym[i], i);
    for (int i = 0; i < 5; i++) cJSON_AddNumberToObject(vocab, EXTRA[i], 256 + i);
    cJSON *merges = cJSON_AddArrayToObject(model, "merges");
    for (int i = 0; i < 5; i++) {
        if (pairs) {
            cJSON_AddItemToArray(merges, cJSON_CreateStringArray(MERGES[i], 2));
        } else {
            char s[16];
            snprintf(s, sizeof s, "%s %s", MERGES[i][0], MERGES[i][1]);
            cJSON_AddItemToArray(merges, cJSON_CreateString(s));
        }
    }
    return root;
}

/* Parses root as a tokenizer.json (and frees it). */
static hs_status from(cJSON *root, hs_tokenizer **t, hs_error *err)
{
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    hs_status st = hs_tokenizer_from_hf_json(s, strlen(s), "tok.json", t, err);
    free(s);
    return st;
}

static hs_tokenizer *make(int pairs)
{
    hs_tokenizer *t = NULL;
    hs_error err = {0};
    if (from(base(pairs), &t, &err) != HS_OK) fail_msg("%s", err.msg);
    assert_int_equal(t->kind, HS_TOKENIZER_BPE);
    assert_int_equal(t->n, 262);
    return t;
}

/* Encodes text with the BOS off and checks the ids. */
static void expect_ids(const hs_tokenizer *t, const char *text, const int *ids, size_t n)
{
    hs_tokens tk = {0};
    hs_error err = {0};
    if (hs_tok_encode(t, text, 0, &tk, &err) != HS_OK) fail_msg("'%s': %s", text, err.msg);
    if (tk.n != n) fail_msg("'%s': %zu tokens, expected %zu", text, tk.n, n);
    for (size_t i = 0; i < n; i++) {
        if (tk.ids[i] != ids[i]) fail_msg("'%s': token %zu is %d, expected %d", text, i, tk.ids[i], ids[i]);
        assert_string_equal(tk.strs[i], hs_tok_str(t, ids[i]));
    }
    hs_tokens_free(&tk);
}
#define EXPECT(t, text, ...)                                                               \
    do {                                                                                   \
        const int ids_[] = {__VA_ARGS__};                                                  \
        expect_ids(t, text, ids_, sizeof ids_ / sizeof ids_[0]);                           \
    } while (0)
#define B(c) g_id_of[(unsigned char)(c)]

static void merges_go_by_rank_in_both_formats(void **state)
{
    (void)state;
    for (int pairs = 0; pairs < 2; pairs++) {
        hs_tokenizer *t = make(pairs);
        hs_tok_set_bos(t, 0);
        EXPECT(t, "abc", B('a'), 256);    /* "b c" (rank 0) before "a b" (rank 1) */
        EXPECT(t, "ab", 257);
        EXPECT(t, " ab", 258);            /* Ġ a b -> Ġ ab -> Ġab */
        EXPECT(t, "abab", 259);           /* ab ab -> abab */
        EXPECT(t, "ccc", 260, B('c'));    /* non-overlapping, left to right */
        EXPECT(t, "cccc", 260, 260);
        EXPECT(t, "ab ab", 257, 258);     /* two pieces: "ab", " ab" */
        EXPECT(t, "a b", B('a'), B(' '), B('b'));
        hs_tokenizer_destroy(t);
    }
}

static void the_pattern_splits_as_gpt2(void **state)
{
    (void)state;
    hs_tokenizer *t = make(0);
    hs_tok_set_bos(t, 0);
    /* "  there": a space alone (\s+(?!\S) backs off one), then " there" */
    EXPECT(t, "Hi  there\n\n", B('H'), B('i'), B(' '), B(' '), B('t'), B('h'), B('e'), B('r'),
           B('e'), B('\n'), B('\n'));
    EXPECT(t, "don't", B('d'), B('o'), B('n'), B('\''), B('t'));
    EXPECT(t, "DON'T", B('D'), B('O'), B('N'), B('\''), B('T')); /* case-sensitive: "'", "T" */
    EXPECT(t, " \t\n", B(' '), B('\t'), B('\n'));
    /* the back-off with a merge that shows it: "x", " ", " ab" (Ġab, 258); without
     * \s+(?!\S) the run "  " would be one piece and "ab" another (Ġ Ġ ab) */
    EXPECT(t, "x  ab", B('x'), B(' '), 258);
    EXPECT(t, "x   ab\n", B('x'), B(' '), B(' '), 258, B('\n'));
    EXPECT(t, "\xc3\xa9", B(0xC3), B(0xA9)); /* é: two byte tokens */
    /* the special token, as Hugging Face tokenizers and TL match it in text */
    EXPECT(t, "<|endoftext|>", 261);
    EXPECT(t, "x<|endoftext|> ab", B('x'), 261, 258);
    hs_tok_set_special(t, 0); /* its bytes as ordinary text (OpenAI's encoder; --no-special) */
    EXPECT(t, "<|endoftext|>", B('<'), B('|'), B('e'), B('n'), B('d'), B('o'), B('f'), B('t'),
           B('e'), B('x'), B('t'), B('|'), B('>'));
    hs_tokenizer_destroy(t);
}

/* encoder.py merges every occurrence of the lowest-ranked pair in one pass
 * before the pairs that pass makes can merge: with "ab a" (rank 0) listed
 * before "a b" (rank 1), "abab" is ab ab (a pair-at-a-time heap would give
 * aba b), and "aba" is aba. */
static void a_merge_list_out_of_training_order_follows_encoder_py(void **state)
{
    (void)state;
    cJSON *root = base(0), *model = cJSON_GetObjectItem(root, "model");
    cJSON *vocab = cJSON_GetObjectItem(model, "vocab");
    cJSON_DeleteItemFromObject(vocab, "bc");
    cJSON_DeleteItemFromObject(vocab, "\xc4\xa0" "ab");
    cJSON_DeleteItemFromObject(vocab, "abab");
    cJSON_DeleteItemFromObject(vocab, "cc");
    cJSON_DeleteItemFromObject(vocab, "ab");
    cJSON_AddNumberToObject(vocab, "ab", 256);
    cJSON_AddNumberToObject(vocab, "aba", 257);
    cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "added_tokens"), 0), "id")->valuedouble = 258;
    const char *m[] = {"ab a", "a b"};
    cJSON_ReplaceItemInObject(model, "merges", cJSON_CreateStringArray(m, 2));
    hs_tokenizer *t = NULL;
    hs_error err = {0};
    if (from(root, &t, &err) != HS_OK) fail_msg("%s", err.msg);
    hs_tok_set_bos(t, 0);
    EXPECT(t, "abab", 256, 256);
    EXPECT(t, "aba", 257);
    hs_tokenizer_destroy(t);
}

/* A merge listed twice takes its later rank (Python's dict, HF's HashMap). */
static void a_repeated_merge_takes_its_last_rank(void **state)
{
    (void)state;
    cJSON *root = base(0), *model = cJSON_GetObjectItem(root, "model");
    const char *m[] = {"a b", "b c", "a b"};
    cJSON_ReplaceItemInObject(model, "merges", cJSON_CreateStringArray(m, 3));
    hs_tokenizer *t = NULL;
    hs_error err = {0};
    if (from(root, &t, &err) != HS_OK) fail_msg("%s", err.msg);
    hs_tok_set_bos(t, 0);
    EXPECT(t, "abc", B('a'), 256);
    hs_tokenizer_destroy(t);
}

static void bos_is_on_by_default_and_switches_off(void **state)
{
    (void)state;
    hs_tokenizer *t = make(1);
    assert_int_equal(hs_tok_bos(t), 261);
    EXPECT(t, "ab", 261, 257);
    hs_tokens tk = {0};
    hs_error err = {0};
    assert_int_equal(hs_tok_encode(t, "ab ab", 2, &tk, &err), HS_ERR_INPUT); /* BOS counts */
    assert_msg_contains(err, "sentence has 3 tokens, more than the model's context of 2 (n_ctx)");
    assert_null(tk.ids);
    assert_int_equal(hs_tok_encode(t, "ab ab", 3, &tk, &err), HS_OK);
    assert_string_equal(tk.strs[0], "<|endoftext|>");
    assert_int_equal(tk.folded, 0);
    hs_tokens_free(&tk);
    hs_tok_set_bos(t, 0);
    assert_int_equal(hs_tok_bos(t), -1);
    EXPECT(t, "ab", 257);
    hs_tok_set_bos(t, 1);
    assert_int_equal(hs_tok_bos(t), 261);
    hs_tokenizer_destroy(t);
}

static void strings_display_ids_and_decoding(void **state)
{
    (void)state;
    hs_tokenizer *t = make(0);
    struct { int id; const char *exact, *shown; } cases[] = {
        {258, " ab", "\xc2\xb7" "ab"},                 /* ·ab */
        {B(' '), " ", "\xc2\xb7"},
        {B('\n'), "\n", "\xe2\x86\xb5"},               /* ↵ */
        {B('\t'), "\t", "\xe2\x86\x92"},               /* → */
        {B('\r'), "\r", "\xe2\x90\x8d"},               /* ␍ */
        {B(0x0B), "\x0b", "\xe2\x90\x8b"},             /* ␋ */
        {B(0x7F), "\x7f", "\xe2\x90\xa1"},             /* ␡ */
        {B(0), "\xef\xbf\xbd", "\xe2\x90\x80"},        /* NUL: U+FFFD exact, ␀ shown */
        {B(0xC3), "\xef\xbf\xbd", "\xef\xbf\xbd"},     /* a lead byte alone */
        {B(0xA9), "\xef\xbf\xbd", "\xef\xbf\xbd"},     /* a continuation byte alone */
        {261, "<|endoftext|>", "<|endoftext|>"},
        {B('a'), "a", "a"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_string_equal(hs_tok_str(t, cases[i].id), cases[i].exact);
        hs_buf b = {0};
        assert_int_equal(hs_tok_display(t, cases[i].id, &b), 0);
        assert_string_equal(b.s, cases[i].shown);
        hs_buf_free(&b);
    }
    hs_buf b = {0};
    hs_tok_display(t, 999, &b);
    assert_string_equal(b.s, "#999");
    hs_buf_free(&b);
    assert_null(hs_tok_str(t, 262));
    assert_int_equal(hs_tok_id(t, " ab"), 258);
    assert_int_equal(hs_tok_id(t, "<|endoftext|>"), 261);
    assert_int_equal(hs_tok_id(t, "\xc4\xa0" "ab"), -1); /* the file's form is not the text */
    assert_int_equal(hs_tok_id(t, "zz"), -1);
    const int ids[] = {257, 258, B(0xC3), B(0xA9), B('\n')};
    char *text = NULL;
    hs_error err = {0};
    assert_int_equal(hs_tok_decode(t, ids, 5, &text, &err), HS_OK);
    assert_string_equal(text, "ab ab\xc3\xa9\n");
    free(text);
    assert_int_equal(hs_tok_decode(t, ids + 2, 1, &text, &err), HS_OK); /* a cut character */
    assert_string_equal(text, "\xc3");
    free(text);
    const int nul[] = {257, B(0)};
    assert_int_equal(hs_tok_decode(t, nul, 2, &text, &err), HS_ERR_INPUT);
    assert_msg_contains(err, "token 1 (id 188) holds a NUL byte");
    const int out[] = {262};
    assert_int_equal(hs_tok_decode(t, out, 1, &text, &err), HS_ERR_INPUT);
    assert_msg_contains(err, "token 0: id 262 is not in [0, 262)");
    char *json = NULL;
    assert_int_equal(hs_tokenizer_to_json(t, &json, &err), HS_ERR_CONFIG);
    hs_tokens tk = {0};
    hs_tok_set_bos(t, 1); /* "" is the BOS alone, as TL's to_tokens("") */
    assert_int_equal(hs_tok_encode(t, "", 0, &tk, &err), HS_OK);
    assert_int_equal(tk.n, 1);
    assert_int_equal(tk.ids[0], 261);
    hs_tokens_free(&tk);
    hs_tok_set_bos(t, 0); /* and nothing without it */
    assert_int_equal(hs_tok_encode(t, "", 0, &tk, &err), HS_ERR_INPUT);
    assert_msg_contains(err, "sentence is empty");
    assert_int_equal(hs_tok_encode(t, "ab\xc3(", 0, &tk, &err), HS_ERR_INPUT);
    assert_msg_contains(err, "sentence is not valid UTF-8 at byte 2");
    hs_tokenizer_destroy(t);
}

/* Every text decodes back byte for byte (with the BOS off). */
static void decode_of_encode_is_the_text(void **state)
{
    (void)state;
    hs_tokenizer *t = make(0);
    hs_tok_set_bos(t, 0);
    const char *texts[] = {"ab ab", "  x\t\ty\n\n\n", "I\xe2\x80\x99m \xf0\x9f\xa4\x97 ok",
                           "don't DON'T 123 4.5", "\x01\x7f", "a\xcc\x81 \xe6\x97\xa5"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        hs_tokens tk = {0};
        hs_error err = {0};
        char *back = NULL;
        assert_int_equal(hs_tok_encode(t, texts[i], 0, &tk, &err), HS_OK);
        assert_int_equal(hs_tok_decode(t, tk.ids, tk.n, &back, &err), HS_OK);
        assert_string_equal(back, texts[i]);
        free(back);
        hs_tokens_free(&tk);
    }
    hs_tokenizer_destroy(t);
}

/* One refusal: base(0) changed by edit, its message holds want. */
typedef void (*edit_fn)(cJSON *root, cJSON *model);
static void refused(edit_fn edit, const char *want)
{
    cJSON *root = base(0);
    edit(root, cJSON_GetObjectItem(root, "model"));
    hs_tokenizer *t = (hs_tokenizer *)1;
    hs_error err = {0};
    assert_int_equal(from(root, &t, &err), HS_ERR_FORMAT);
    assert_null(t);
    assert_null(strchr(err.msg, '\n'));
    assert_msg_contains(err, "tok.json: ");
    assert_msg_contains(err, want);
}
static void e_type(cJSON *r, cJSON *m) { (void)r; cJSON_ReplaceItemInObject(m, "type", cJSON_CreateString("WordPiece")); }
static cJSON *typed(const char *type) { cJSON *o = cJSON_CreateObject(); cJSON_AddStringToObject(o, "type", type); return o; }
static void e_norm(cJSON *r, cJSON *m) { (void)m; cJSON_ReplaceItemInObject(r, "normalizer", typed("NFKC")); }
static void e_notype(cJSON *r, cJSON *m) { (void)m; cJSON_ReplaceItemInObject(r, "normalizer", cJSON_CreateString("NFC")); }
static void e_nopre(cJSON *r, cJSON *m) { (void)m; cJSON_ReplaceItemInObject(r, "pre_tokenizer", typed("Whitespace")); }
static void e_prefix(cJSON *r, cJSON *m)
{
    (void)m;
    cJSON *sp = typed("Split"), *pat = cJSON_CreateObject();
    cJSON_AddStringToObject(pat, "Regex", "(?i:'s|\\p{L}+");
    cJSON_AddItemToObject(sp, "pattern", pat);
    cJSON_AddStringToObject(sp, "behavior", "Isolated");
    cJSON *seq = typed("Sequence"), *list = cJSON_AddArrayToObject(seq, "pretokenizers");
    cJSON_AddItemToArray(list, sp);
    cJSON_ReplaceItemInObject(r, "pre_tokenizer", seq);
}
static void e_regex(cJSON *r, cJSON *m) { (void)m; cJSON_AddItemToObject(r, "decoder", typed("WordPiece")); }
static void e_fallback(cJSON *r, cJSON *m) { (void)m; cJSON_AddItemToObject(r, "post_processor", typed("Roberta")); }
static void e_dropout(cJSON *r, cJSON *m) { (void)r; cJSON_ReplaceItemInObject(m, "dropout", cJSON_CreateNumber(0.1)); }
static void e_prefix2(cJSON *r, cJSON *m) { (void)r; cJSON_ReplaceItemInObject(m, "continuing_subword_prefix", cJSON_CreateString("##")); }
static void e_nomodel(cJSON *r, cJSON *m) { (void)m; cJSON_DeleteItemFromObject(r, "model"); }
static void e_novocab(cJSON *r, cJSON *m) { (void)r; cJSON_DeleteItemFromObject(m, "vocab"); }
static void e_nomerges(cJSON *r, cJSON *m) { (void)r; cJSON_DeleteItemFromObject(m, "merges"); }
static void e_emptymerges(cJSON *r, cJSON *m) { (void)r; cJSON_ReplaceItemInObject(m, "merges", cJSON_CreateArray()); }
static void e_merge1(cJSON *r, cJSON *m) { (void)r; cJSON_AddItemToArray(cJSON_GetObjectItem(m, "merges"), cJSON_CreateString("ab")); }
static void e_merge3(cJSON *r, cJSON *m) { (void)r; cJSON_AddItemToArray(cJSON_GetObjectItem(m, "merges"), cJSON_CreateString("a b c")); }
static void e_pair1(cJSON *r, cJSON *m) { (void)r; const char *p[] = {"a"}; cJSON_AddItemToArray(cJSON_GetObjectItem(m, "merges"), cJSON_CreateStringArray(p, 1)); }
static void e_unknown(cJSON *r, cJSON *m) { (void)r; cJSON_AddItemToArray(cJSON_GetObjectItem(m, "merges"), cJSON_CreateString("a zz")); }
static void e_result(cJSON *r, cJSON *m) { (void)r; cJSON_AddItemToArray(cJSON_GetObjectItem(m, "merges"), cJSON_CreateString("c b")); }
static void e_gap(cJSON *r, cJSON *m) { (void)r; cJSON_DeleteItemFromObject(cJSON_GetObjectItem(m, "vocab"), "cc"); }
static void e_shared(cJSON *r, cJSON *m) { (void)r; cJSON_GetObjectItem(cJSON_GetObjectItem(m, "vocab"), "cc")->valuedouble = 259; }
static void e_badid(cJSON *r, cJSON *m) { (void)r; cJSON_GetObjectItem(cJSON_GetObjectItem(m, "vocab"), "cc")->valuedouble = 1.5; }
static void e_alpha(cJSON *r, cJSON *m) { (void)r; cJSON_AddNumberToObject(cJSON_GetObjectItem(m, "vocab"), "\xe2\x96\x81" "a", 262); }
static void e_nobyte(cJSON *r, cJSON *m) { (void)r; cJSON *v = cJSON_GetObjectItem(m, "vocab"); cJSON_DeleteItemFromObject(v, "\xc4\x80"); cJSON_AddNumberToObject(v, "ca", 188); }
/* an added token at id 262 with content text */
static void add_token(cJSON *r, const char *text)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "id", 262);
    cJSON_AddStringToObject(a, "content", text);
    cJSON_AddItemToArray(cJSON_GetObjectItem(r, "added_tokens"), a);
}
static void e_twoids(cJSON *r, cJSON *m) { (void)m; add_token(r, "ab"); }
static void e_samebytes(cJSON *r, cJSON *m) { (void)m; add_token(r, " ab"); }
static void e_emptyvocab(cJSON *r, cJSON *m)
{
    cJSON_ReplaceItemInObject(m, "vocab", cJSON_CreateObject());
    cJSON_ReplaceItemInObject(r, "added_tokens", cJSON_CreateArray());
}

static void every_refusal_names_the_file_and_the_problem(void **state)
{
    (void)state;
    refused(e_type, "model.type is 'WordPiece', not BPE");
    refused(e_norm, "tok.json: normalizer: the normalizer 'NFKC' is not supported");
    refused(e_notype, "tok.json: normalizer has no \"type\"");
    refused(e_nopre, "tok.json: pre_tokenizer: the pre-tokenizer 'Whitespace' is not supported");
    refused(e_prefix, "tok.json: pre_tokenizer.pretokenizers[0].pattern: the regex '(?i:'s|\\p{L}+' is invalid at 13: missing closing parenthesis");
    refused(e_regex, "tok.json: decoder: the decoder 'WordPiece' is not supported");
    refused(e_fallback, "tok.json: post_processor: the post-processor 'Roberta' is not supported");
    refused(e_dropout, "model.dropout is set");
    refused(e_prefix2, "model.continuing_subword_prefix is set");
    refused(e_nomodel, "no \"model\" object");
    refused(e_novocab, "model.vocab is missing");
    refused(e_nomerges, "model.merges is missing, not a list");
    refused(e_emptymerges, "there are no merges");
    refused(e_merge1, "merge 5 is neither \"a b\"");
    refused(e_merge3, "merge 5 is neither \"a b\"");
    refused(e_pair1, "merge 5 is neither \"a b\"");
    refused(e_unknown, "merge 5: the merge names 'zz', which is not in the vocabulary");
    refused(e_result, "merge 5 'c b' makes 'cb', which is not in the vocabulary");
    refused(e_gap, "no token has id 260 (ids must be 0..261, each once)");
    refused(e_shared, "tokens 'abab' and 'cc' both have id 259");
    refused(e_badid, "model.vocab: the id of 'cc' is not an integer");
    refused(e_alpha, "token 262 '\xe2\x96\x81" "a' holds U+2581, which is not in GPT-2's byte-level alphabet");
    refused(e_nobyte, "no token for byte 0x00 (U+0100");
    refused(e_twoids, "token 'ab' has two ids, 257 and 262");
    refused(e_samebytes, "tokens 258 '\xc4\xa0" "ab' and 262 ' ab' are the same bytes");
    refused(e_emptyvocab, "model.vocab is empty");
    hs_tokenizer *t = NULL;
    hs_error err = {0};
    const char bad[] = "{\"model\": {\"vocab\": [}";
    assert_int_equal(hs_tokenizer_from_hf_json(bad, sizeof bad - 1, "x.json", &t, &err), HS_ERR_FORMAT);
    assert_msg_contains(err, "x.json: not valid JSON (at byte ");
    const char nul[] = "{\"model\": \0}";
    assert_int_equal(hs_tokenizer_from_hf_json(nul, sizeof nul - 1, "x.json", &t, &err), HS_ERR_FORMAT);
    assert_msg_contains(err, "x.json: a NUL byte at byte 10");
    const char esc[] = "{\"model\": {\"vocab\": {\"a\\u0000\": 0}}}";
    assert_int_equal(hs_tokenizer_from_hf_json(esc, sizeof esc - 1, "x.json", &t, &err), HS_ERR_FORMAT);
    assert_msg_contains(err, "x.json: \\u0000 at byte 23");
    assert_null(t);
}

/* ------------------------------------------------------------------------ */
/* vocab.json + merges.txt, and folders                                      */

/* vocab.json of base(0)'s tokens (the added token as a plain entry). */
static char *vocab_json(void)
{
    cJSON *root = base(0), *v = cJSON_DetachItemFromObject(cJSON_GetObjectItem(root, "model"), "vocab");
    cJSON_AddNumberToObject(v, "<|endoftext|>", 261);
    char *s = cJSON_PrintUnformatted(v);
    cJSON_Delete(v);
    cJSON_Delete(root);
    return s;
}

static const char MERGES_TXT[] = "#version: 0.2\nb c\na b\n\xc4\xa0 ab\r\nab ab\nc c\n";

static void vocab_json_and_merges_txt_read_as_the_same_tokenizer(void **state)
{
    (void)state;
    char *v = vocab_json();
    hs_tokenizer *t = NULL;
    hs_error err = {0};
    if (hs_tokenizer_from_vocab_merges(v, strlen(v), MERGES_TXT, strlen(MERGES_TXT), "vocab.json",
                                       "merges.txt", &t, &err) != HS_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(t->n, 262);
    assert_int_equal(hs_tok_bos(t), 261);
    hs_tok_set_bos(t, 0);
    EXPECT(t, "abc", B('a'), 256);
    EXPECT(t, " ab abab cc", 258, 258, 257, B(' '), 260); /* Ġ a b a b -> Ġ ab ab -> Ġab ab */
    hs_tokenizer_destroy(t);
    struct { const char *merges, *want; } bad[] = {
        {"#version: 0.2\nb c\n\na b\n", "merges.txt:3: an empty line; a merge is two tokens"},
        {"#version: 0.2\nb c\na  b\n", "merges.txt:3: not two tokens"},
        {"#version: 0.2\nb c\na b\nc zz\n", "merges.txt:4: the merge names 'zz', which is not in the vocabulary"},
        {"b c\na b\n", "merges.txt: no \"#version\" first line, so its first line is ambiguous: GPT-2's "
                       "encoder.py and transformers' slow tokenizer drop it, tokenizers keeps it as a merge"},
        {"#version: 0.2\n", "merges.txt: there are no merges"},
        {"", "merges.txt: there are no merges"},
        {"#version: 0.2\nb c\nc b\n", "merges.txt:3: merge 'c b' makes 'cb', which is not in the vocabulary"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(hs_tokenizer_from_vocab_merges(v, strlen(v), bad[i].merges,
                                                        strlen(bad[i].merges), "vocab.json",
                                                        "merges.txt", &t, &err),
                         HS_ERR_FORMAT);
        assert_null(t);
        assert_msg_contains(err, bad[i].want);
    }
    assert_int_equal(hs_tokenizer_from_vocab_merges("[1]", 3, MERGES_TXT, strlen(MERGES_TXT),
                                                    "vocab.json", "merges.txt", &t, &err),
                     HS_ERR_FORMAT);
    assert_msg_contains(err, "vocab.json: the vocabulary is not an object (token -> id)");
    free(v);
}

static char g_dir[512];

static void put_file(const char *name, const char *text)
{
    char p[700];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void rm_file(const char *name)
{
    char p[700];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    unlink(p);
}

static void a_folder_is_read_in_the_documented_order(void **state)
{
    (void)state;
    const char *tmp = getenv("HS_TEST_TMP");
    snprintf(g_dir, sizeof g_dir, "%s/bpe.%ld", tmp && tmp[0] ? tmp : "/tmp", (long)getpid());
    mkdir(tmp && tmp[0] ? tmp : "/tmp", 0777);
    assert_int_equal(mkdir(g_dir, 0777), 0);
    hs_tokenizer *t = NULL;
    hs_error err = {0};
    assert_int_equal(hs_tokenizer_load_dir(g_dir, &t, &err), HS_ERR_FORMAT);
    assert_msg_contains(err, "has no tokenizer: no tokenizer.json, vocab.json + merges.txt or "
                             "encoder.json + vocab.bpe");
    char *v = vocab_json();
    put_file("encoder.json", v);
    assert_int_equal(hs_tokenizer_load_dir(g_dir, &t, &err), HS_ERR_FORMAT);
    assert_msg_contains(err, "has encoder.json but no vocab.bpe");
    put_file("vocab.bpe", MERGES_TXT);
    assert_int_equal(hs_tokenizer_load_dir(g_dir, &t, &err), HS_OK);
    assert_int_equal(t->n, 262);
    hs_tokenizer_destroy(t);
    put_file("merges.txt", "#version: 0.2\nb c\nc b\n"); /* vocab.json + merges.txt come before */
    put_file("vocab.json", v);
    assert_int_equal(hs_tokenizer_load_dir(g_dir, &t, &err), HS_ERR_FORMAT);
    assert_msg_contains(err, "/merges.txt:3: merge 'c b' makes 'cb'");
    cJSON *root = base(1); /* tokenizer.json comes first */
    char *j = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    put_file("tokenizer.json", j);
    assert_int_equal(hs_tokenizer_load_dir(g_dir, &t, &err), HS_OK);
    hs_tok_set_bos(t, 0);
    EXPECT(t, " ab", 258);
    hs_tokenizer_destroy(t);
    put_file("tokenizer.json", "{");
    assert_int_equal(hs_tokenizer_load_dir(g_dir, &t, &err), HS_ERR_FORMAT);
    assert_msg_contains(err, "/tokenizer.json: not valid JSON");
    char p[700];
    snprintf(p, sizeof p, "%s/tokenizer.json", g_dir);
    assert_int_equal(hs_tokenizer_load_dir(p, &t, &err), HS_ERR_IO);
    assert_msg_contains(err, "is not a folder");
    const char *names[] = {"tokenizer.json", "vocab.json", "merges.txt", "encoder.json", "vocab.bpe"};
    for (int i = 0; i < 5; i++) rm_file(names[i]);
    rmdir(g_dir);
    free(v);
    free(j);
}

/* The word vocabulary behind the same calls: no BOS, and the setting does
 * nothing; ids by hash, a duplicate named with both ids. */
static void the_word_vocabulary_answers_the_same_calls(void **state)
{
    (void)state;
    const char *words[] = {"the", "cat", "sat", "."};
    hs_tokenizer *t = NULL;
    hs_error err = {0};
    assert_int_equal(hs_tokenizer_words(words, 4, &t, &err), HS_OK);
    assert_int_equal(hs_tok_bos(t), -1);
    hs_tok_set_bos(t, 1);
    assert_int_equal(hs_tok_bos(t), -1);
    assert_int_equal(hs_tok_id(t, "sat"), 2);
    assert_int_equal(hs_tok_id(t, "dog"), -1);
    hs_tokenizer_destroy(t);
    const char *dup[] = {"a", "b", "c", "b"};
    assert_int_equal(hs_tokenizer_words(dup, 4, &t, &err), HS_ERR_FORMAT);
    assert_msg_contains(err, "vocab word 'b' is duplicated (ids 1 and 3)");
    assert_int_equal(hs_tokenizer_ids(50257, &t, &err), HS_OK);
    assert_int_equal(hs_tok_id(t, "#50256"), 50256);
    hs_tokenizer_destroy(t);
}

int main(void)
{
    alphabet();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(merges_go_by_rank_in_both_formats),
        cmocka_unit_test(the_pattern_splits_as_gpt2),
        cmocka_unit_test(a_merge_list_out_of_training_order_follows_encoder_py),
        cmocka_unit_test(a_repeated_merge_takes_its_last_rank),
        cmocka_unit_test(bos_is_on_by_default_and_switches_off),
        cmocka_unit_test(strings_display_ids_and_decoding),
        cmocka_unit_test(decode_of_encode_is_the_text),
        cmocka_unit_test(every_refusal_names_the_file_and_the_problem),
        cmocka_unit_test(vocab_json_and_merges_txt_read_as_the_same_tokenizer),
        cmocka_unit_test(a_folder_is_read_in_the_documented_order),
        cmocka_unit_test(the_word_vocabulary_answers_the_same_calls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
