/*
 * tests/test_tokenize.c -- tokenize/: the word tokenizer behind hs_tokenizer:
 * a word list and its checks, its JSON and file forms, encoding a sentence
 * (punctuation split off, case folded, every refusal's message), decoding
 * back, the display form, the BOS token, id labels.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tokenize/tokenize.h"

#define assert_msg_contains(err, sub)                                                      \
    do {                                                                                   \
        if (strstr((err).msg, (sub)) == NULL)                                              \
            fail_msg("message \"%s\" does not contain \"%s\"", (err).msg, (sub));          \
    } while (0)

/* The Winograd task's 36 words in its documented id order (tasks.h): a word
 * list every test below reads sentences with. */
static const char *const WORDS[] = {
    "the", "did", "not", "cross", "because", "it", "was", "too", ",", "so", "waited", ".",
    "animal", "street", "dog", "road", "cat", "river", "horse", "bridge", "fox", "field", "goat",
    "path", "cow", "lane", "deer", "creek",
    "tired", "scared", "slow", "weak", "wet", "wide", "busy", "steep"};
#define N_WORDS (sizeof WORDS / sizeof WORDS[0])

static hs_tokenizer *make_vocab(void)
{
    hs_tokenizer *v = NULL;
    hs_error err = {0};
    assert_int_equal(hs_tokenizer_words(WORDS, N_WORDS, &v, &err), HS_OK);
    assert_non_null(v);
    assert_int_equal(v->kind, HS_TOKENIZER_WORDS);
    return v;
}

/* ------------------------------------------------------------------------ */
/* The word list                                                             */

static void vocab_json_round_trips(void **state)
{
    (void)state;
    hs_tokenizer *v = make_vocab(), *w = NULL;
    hs_error err = {0};
    char *json = NULL;
    assert_int_equal(hs_tokenizer_to_json(v, &json, &err), HS_OK);
    assert_non_null(json);
    assert_true(strncmp(json, "[\"the\",\"did\",\"not\",\"cross\"", 26) == 0);
    assert_non_null(strstr(json, "\"waited\",\".\",\"animal\",\"street\""));
    assert_int_equal(hs_tokenizer_from_json(json, &w, &err), HS_OK);
    assert_int_equal(w->n, v->n);
    for (size_t i = 0; i < v->n; i++) assert_string_equal(w->words[i], v->words[i]);
    free(json);
    hs_tokenizer_destroy(v);
    hs_tokenizer_destroy(w);
}

static void expect_vocab_json_error(const char *json, const char *sub)
{
    hs_tokenizer *v = (hs_tokenizer *)1;
    hs_error err = {0};
    hs_status st = hs_tokenizer_from_json(json, &v, &err);
    if (st != HS_ERR_FORMAT) fail_msg("vocab %s: status %d, want HS_ERR_FORMAT", json ? json : "(null)", st);
    assert_null(v);
    assert_msg_contains(err, sub);
    assert_null(strchr(err.msg, '\n'));
}

static void vocab_json_rejects_bad_lists(void **state)
{
    (void)state;
    expect_vocab_json_error(NULL, "vocab metadata is missing");
    expect_vocab_json_error("", "vocab metadata is missing");
    expect_vocab_json_error("[\"the\",", "not valid JSON");
    expect_vocab_json_error("[\"the\"] x", "not valid JSON");
    expect_vocab_json_error("{\"the\":0}", "not a JSON list of strings");
    expect_vocab_json_error("[]", "empty list");
    expect_vocab_json_error("[\"the\",3]", "element 1 is not a string");
    expect_vocab_json_error("[\"the\",null]", "element 1 is not a string");
    expect_vocab_json_error("[\"the\",\"dog\",\"the\"]", "vocab word 'the' is duplicated (ids 0 and 2)");
    expect_vocab_json_error("[\"the\",\"\"]", "vocab word 1 is an empty string");
    expect_vocab_json_error("[\"the\",\"a b\"]", "vocab word 1 contains whitespace (byte 1)");
    /* a raw newline inside a JSON string (cJSON accepts it) stays out of the one-line message */
    expect_vocab_json_error("[\"the\",\"a\nb\"]", "vocab word 1 contains whitespace (byte 1)");
    expect_vocab_json_error("[\"the\",\"a\\nb\"]", "vocab word 1 contains whitespace (byte 1)");
    expect_vocab_json_error("[\"\xee\"]", "vocab word 0 is not valid UTF-8 (byte 0)");
    expect_vocab_json_error("[\"The\"]", "upper-case");
    expect_vocab_json_error("[\"dog.\"]", "contains ',' or '.'");
    expect_vocab_json_error("[\"a\\u0007\"]", "control character");
}

static void vocab_create_rejects_missing_word(void **state)
{
    (void)state;
    const char *words[] = {"the", NULL, "dog"};
    hs_tokenizer *v = (hs_tokenizer *)1;
    hs_error err = {0};
    assert_int_equal(hs_tokenizer_words(words, 3, &v, &err), HS_ERR_FORMAT);
    assert_null(v);
    assert_msg_contains(err, "vocab word 1 is missing");
    assert_int_equal(hs_tokenizer_words(words, 0, &v, &err), HS_ERR_FORMAT);
    assert_msg_contains(err, "vocab is empty");
}

/* ------------------------------------------------------------------------ */
/* Encoding                                                                  */

static hs_status tok(const hs_tokenizer *v, const char *s, size_t n_ctx, hs_tokens *t, hs_error *err)
{
    memset(err, 0, sizeof *err);
    return hs_tok_encode(v, s, n_ctx, t, err);
}

static void expect_tok_error(const hs_tokenizer *v, const char *s, size_t n_ctx, const char *sub)
{
    hs_tokens t;
    hs_error err;
    hs_status st = tok(v, s, n_ctx, &t, &err);
    if (st != HS_ERR_INPUT) fail_msg("tokenize \"%s\": status %d, want HS_ERR_INPUT", s ? s : "(null)", st);
    assert_msg_contains(err, sub);
    assert_null(strchr(err.msg, '\n'));
    assert_int_equal(t.n, 0);
    assert_null(t.ids);
    assert_null(t.strs);
    hs_tokens_free(&t);
}

static void tokenizer_splits_punctuation(void **state)
{
    (void)state;
    hs_tokenizer *v = make_vocab();
    hs_tokens t;
    hs_error err;
    assert_int_equal(tok(v, "tired, so", 0, &t, &err), HS_OK);
    assert_int_equal(t.n, 3);
    assert_string_equal(t.strs[0], "tired");
    assert_string_equal(t.strs[1], ",");
    assert_string_equal(t.strs[2], "so");
    assert_int_equal(t.ids[0], 28);
    assert_int_equal(t.ids[1], 8);
    assert_int_equal(t.ids[2], 9);
    hs_tokens_free(&t);

    assert_int_equal(tok(v, "waited.", 0, &t, &err), HS_OK);
    assert_int_equal(t.n, 2);
    assert_string_equal(t.strs[0], "waited");
    assert_string_equal(t.strs[1], ".");
    hs_tokens_free(&t);

    assert_int_equal(tok(v, " ,so.the\t\nwaited ,, ", 0, &t, &err), HS_OK);
    const char *want[] = {",", "so", ".", "the", "waited", ",", ","};
    assert_int_equal(t.n, 7);
    for (size_t i = 0; i < 7; i++) assert_string_equal(t.strs[i], want[i]);
    hs_tokens_free(&t);
    hs_tokenizer_destroy(v);
}

static void tokenizer_folds_case_and_says_so(void **state)
{
    (void)state;
    hs_tokenizer *v = make_vocab();
    hs_tokens t;
    hs_error err;
    assert_int_equal(tok(v, "The ANIMAL Waited.", 0, &t, &err), HS_OK);
    assert_int_equal(t.folded, 1);
    assert_int_equal(t.n, 4);
    assert_string_equal(t.strs[0], "the");
    assert_string_equal(t.strs[1], "animal");
    assert_string_equal(t.strs[2], "waited");
    assert_int_equal(t.ids[1], 12);
    hs_tokens_free(&t);
    assert_int_equal(tok(v, "the animal waited.", 0, &t, &err), HS_OK);
    assert_int_equal(t.folded, 0);
    hs_tokens_free(&t);
    hs_tokenizer_destroy(v);
}

/* The word suggested for an unknown word (NULL: the message suggests none). */
static void expect_nearest(const hs_tokenizer *v, const char *word, const char *want)
{
    hs_tokens t;
    hs_error err;
    assert_int_equal(tok(v, word, 18, &t, &err), HS_ERR_INPUT);
    const char *at = strstr(err.msg, "nearest vocabulary word: '");
    if (!want) {
        if (at) fail_msg("'%s' suggests a word: %s", word, err.msg);
        return;
    }
    if (!at) fail_msg("'%s' suggests no word, want '%s': %s", word, want, err.msg);
    at += strlen("nearest vocabulary word: '");
    const char *end = strchr(at, '\'');
    assert_non_null(end);
    if ((size_t)(end - at) != strlen(want) || strncmp(at, want, strlen(want)) != 0)
        fail_msg("'%s' suggests '%.*s', want '%s'", word, (int)(end - at), at, want);
}

/* The suggestion: the fewest edits, then the longest shared start, within a
 * typo's reach (1 edit under 8 code points, 2 from 8). */
static void tokenizer_suggests_what_a_typo_meant(void **state)
{
    (void)state;
    hs_tokenizer *v = make_vocab();
    expect_nearest(v, "anmial", "animal"); /* a swap: 1 edit */
    expect_nearest(v, "tird", "tired");
    expect_nearest(v, "cot", "cow");       /* 1 edit from not, cat and cow: cow shares "co" */
    expect_nearest(v, "waaitedd", "waited"); /* 8 code points: 2 edits reach */
    expect_nearest(v, "sleepy", NULL);     /* 2 edits from steep: another word, not a typo */
    expect_nearest(v, "steeep", "steep");  /* 6 code points, 1 edit */
    expect_nearest(v, "zebra", NULL);
    expect_nearest(v, "ox", NULL);         /* 1 edit from fox, but half of a 2-letter word */
    hs_tokenizer_destroy(v);
}

static void tokenizer_rejects_bad_sentences(void **state)
{
    (void)state;
    hs_tokenizer *v = make_vocab();
    expect_tok_error(v, NULL, 18, "sentence is empty");
    expect_tok_error(v, "", 18, "sentence is empty");
    expect_tok_error(v, "   \t  \n", 18, "sentence has only spaces");
    expect_tok_error(v, "the dragon did", 18, "unknown word 'dragon' at position 1");
    expect_tok_error(v, "the dragon did", 18,
                     "the vocabulary is: the did not cross because it was too , so waited . "
                     "animal street");
    expect_tok_error(v, "the dragon did", 18, "busy steep");
    /* positions count the split-off punctuation */
    expect_tok_error(v, "tired,dragon", 18, "unknown word 'dragon' at position 2");
    expect_tok_error(v, "The Dragon", 18, "unknown word 'dragon' at position 1");
    expect_tok_error(v, "the caf\xc3\xa9", 18, "unknown word 'caf\xc3\xa9' at position 1");
    /* 19 tokens for an 18-token context */
    expect_tok_error(v, "the the the the the the the the the the the the the the the the the the the",
                     18, "sentence has 19 tokens, more than the model's context of 18 (n_ctx)");
    expect_tok_error(v, "the dog , so .", 4, "sentence has 5 tokens, more than the model's context of 4");
    expect_tok_error(v, "the \xff dog", 18, "sentence is not valid UTF-8 at byte 4");
    expect_tok_error(v, "\xc0\xaf", 18, "sentence is not valid UTF-8 at byte 0");        /* overlong */
    expect_tok_error(v, "dog \xe2\x82", 18, "sentence is not valid UTF-8 at byte 4");    /* truncated */
    expect_tok_error(v, "dog \xed\xa0\x80", 18, "sentence is not valid UTF-8 at byte 4"); /* surrogate */
    expect_tok_error(v, "the\x07" "dog", 18, "sentence has a control character (0x07) at byte 3");
    expect_tok_error(v, "the dog\x7f", 18, "sentence has a control character (0x7F) at byte 7");
    expect_tok_error(v, "\x1b[31mthe", 18, "sentence has a control character (0x1B) at byte 0");
    expect_tok_error(v, "the \xc2\x85", 18, "sentence has a control character (0x85) at byte 4");
    hs_tokenizer_destroy(v);
}

static void tokenizer_accepts_exactly_n_ctx_tokens(void **state)
{
    (void)state;
    hs_tokenizer *v = make_vocab();
    hs_tokens t;
    hs_error err;
    const char *s = "the animal did not cross the street because it was too wet , so the street waited .";
    assert_int_equal(tok(v, s, 18, &t, &err), HS_OK);
    assert_int_equal(t.n, 18);
    hs_tokens_free(&t);
    hs_tokenizer_destroy(v);
}

/* ------------------------------------------------------------------------ */
/* Decoding, display, special tokens, id labels                              */

static void decode_reads_back_as_the_same_ids(void **state)
{
    (void)state;
    hs_tokenizer *v = make_vocab();
    hs_tokens t, u;
    hs_error err = {0};
    const char *s = "The animal did not cross the street because it was too tired, so the";
    assert_int_equal(hs_tok_encode(v, s, 0, &t, &err), HS_OK);
    char *text = NULL;
    assert_int_equal(hs_tok_decode(v, t.ids, t.n, &text, &err), HS_OK);
    assert_string_equal(text, "the animal did not cross the street because it was too tired , so the");
    assert_int_equal(hs_tok_encode(v, text, 0, &u, &err), HS_OK);
    assert_int_equal(u.n, t.n);
    for (size_t i = 0; i < t.n; i++) assert_int_equal(u.ids[i], t.ids[i]);
    free(text);
    /* no ids: the empty text */
    assert_int_equal(hs_tok_decode(v, t.ids, 0, &text, &err), HS_OK);
    assert_string_equal(text, "");
    free(text);
    /* an id outside the vocabulary is named with its place */
    const int bad[3] = {0, 36, 1};
    text = (char *)1;
    assert_int_equal(hs_tok_decode(v, bad, 3, &text, &err), HS_ERR_INPUT);
    assert_null(text);
    assert_msg_contains(err, "token 1: id 36 is not in [0, 36)");
    hs_tokens_free(&t);
    hs_tokens_free(&u);
    hs_tokenizer_destroy(v);
}

static void display_form_of_a_word_is_the_word(void **state)
{
    (void)state;
    hs_tokenizer *v = make_vocab();
    hs_buf b = {0};
    assert_int_equal(hs_tok_display(v, 12, &b), 0);
    hs_buf_puts(&b, "|");
    assert_int_equal(hs_tok_display(v, 8, &b), 0);
    hs_buf_puts(&b, "|");
    hs_tok_display(v, 99, &b); /* out of range: its id */
    assert_string_equal(b.s, "animal|,|#99");
    hs_buf_free(&b);
    /* a word list prepends no BOS */
    assert_int_equal(hs_tok_bos(v), -1);
    hs_tokenizer_destroy(v);
}

static void id_labels_name_every_token_by_its_id(void **state)
{
    (void)state;
    hs_tokenizer *v = NULL;
    hs_error err = {0};
    assert_int_equal(hs_tokenizer_ids(12, &v, &err), HS_OK);
    assert_int_equal(v->n, 12);
    assert_string_equal(hs_tok_str(v, 0), "#0");
    assert_string_equal(hs_tok_str(v, 11), "#11");
    assert_int_equal(hs_tok_id(v, "#7"), 7);
    hs_tokens t;
    assert_int_equal(hs_tok_encode(v, "#3 #11 #0", 0, &t, &err), HS_OK);
    assert_int_equal(t.n, 3);
    assert_int_equal(t.ids[0], 3);
    assert_int_equal(t.ids[1], 11);
    assert_int_equal(t.ids[2], 0);
    hs_tokens_free(&t);
    hs_tokenizer_destroy(v);
    v = (hs_tokenizer *)1;
    assert_int_equal(hs_tokenizer_ids(0, &v, &err), HS_ERR_CONFIG);
    assert_null(v);
}

static void vocabulary_file_reads_lines_and_json(void **state)
{
    (void)state;
    const char *dir = getenv("HS_TEST_TMP");
    char lines[512], json[512];
    snprintf(lines, sizeof lines, "%s/tokenize_vocab.txt", dir ? dir : ".");
    snprintf(json, sizeof json, "%s/tokenize_vocab.json", dir ? dir : ".");
    FILE *f = fopen(lines, "w");
    assert_non_null(f);
    fputs("the\r\ndog\ncat", f); /* CRLF and no final newline */
    fclose(f);
    f = fopen(json, "w");
    assert_non_null(f);
    fputs("  [\"the\", \"dog\", \"cat\"]\n", f);
    fclose(f);
    hs_tokenizer *a = NULL, *b = NULL;
    hs_error err = {0};
    assert_int_equal(hs_tokenizer_read(lines, &a, &err), HS_OK);
    assert_int_equal(hs_tokenizer_read(json, &b, &err), HS_OK);
    assert_int_equal(a->n, 3);
    assert_int_equal(b->n, 3);
    for (int i = 0; i < 3; i++) assert_string_equal(hs_tok_str(a, i), hs_tok_str(b, i));
    assert_int_equal(hs_tok_id(a, "cat"), 2);
    hs_tokenizer_destroy(a);
    hs_tokenizer_destroy(b);
    f = fopen(lines, "w");
    assert_non_null(f);
    fputs("the\n\ndog\n", f);
    fclose(f);
    assert_int_equal(hs_tokenizer_read(lines, &a, &err), HS_ERR_FORMAT);
    assert_null(a);
    assert_msg_contains(err, ":2: empty line");
    remove(lines);
    remove(json);
}

/* hs_tok_one on a word list: a word (case folded) is its id; two words, an
 * empty string and an unknown word are refused with the message that says so. */
static void one_token_of_a_word_list(void **state)
{
    (void)state;
    hs_tokenizer *v = make_vocab();
    hs_error err = {0};
    int id = 7;
    assert_int_equal(hs_tok_one(v, "Animal", &id, &err), HS_OK);
    assert_int_equal(id, 12);
    assert_int_equal(hs_tok_one(v, "dog,", &id, &err), HS_ERR_INPUT);
    assert_int_equal(id, -1);
    assert_string_equal(err.msg, "'dog,' is 2 tokens ('dog' ',')");
    assert_int_equal(hs_tok_one(v, "", &id, &err), HS_ERR_INPUT);
    assert_string_equal(err.msg, "'' is empty, not one token");
    assert_int_equal(hs_tok_one(v, "zebra", &id, &err), HS_ERR_INPUT);
    assert_msg_contains(err, "unknown word 'zebra'");
    hs_tokenizer_destroy(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(vocab_json_round_trips),
        cmocka_unit_test(vocab_json_rejects_bad_lists),
        cmocka_unit_test(vocab_create_rejects_missing_word),
        cmocka_unit_test(tokenizer_splits_punctuation),
        cmocka_unit_test(tokenizer_suggests_what_a_typo_meant),
        cmocka_unit_test(tokenizer_folds_case_and_says_so),
        cmocka_unit_test(tokenizer_rejects_bad_sentences),
        cmocka_unit_test(tokenizer_accepts_exactly_n_ctx_tokens),
        cmocka_unit_test(decode_reads_back_as_the_same_ids),
        cmocka_unit_test(display_form_of_a_word_is_the_word),
        cmocka_unit_test(id_labels_name_every_token_by_its_id),
        cmocka_unit_test(vocabulary_file_reads_lines_and_json),
        cmocka_unit_test(one_token_of_a_word_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
