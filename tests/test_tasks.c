/*
 * tests/test_tasks.c -- tasks/: the Winograd vocabulary (ids as documented,
 * what the tokenizer reads of the chapter's sentence), generator and splits,
 * dataset dump, task JSON, training batches. The word tokenizer itself is
 * tested in test_tokenize.c.
 * Scoring (needs the model's forward) is in test_tasks_score.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tasks/tasks.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static hs_winograd *make_task(hs_task_kind kind, uint64_t seed)
{
    hs_winograd *t = NULL;
    hs_error err = {0};
    hs_status st = hs_winograd_create(kind, seed, NULL, &t, &err);
    if (st != HS_OK) fail_msg("hs_winograd_create: %s", err.msg);
    assert_non_null(t);
    return t;
}

static hs_tokenizer *make_vocab(void)
{
    hs_tokenizer *v = NULL;
    hs_error err = {0};
    assert_int_equal(hs_winograd_vocab(&v, &err), HS_OK);
    assert_non_null(v);
    return v;
}

#define assert_msg_contains(err, sub)                                                      \
    do {                                                                                   \
        if (strstr((err).msg, (sub)) == NULL)                                              \
            fail_msg("message \"%s\" does not contain \"%s\"", (err).msg, (sub));          \
    } while (0)

/* pair id x*16+y -> count of examples */
static void count_pairs(const hs_wg_example *ex, size_t n, int counts[256])
{
    memset(counts, 0, 256 * sizeof counts[0]);
    for (size_t i = 0; i < n; i++) counts[ex[i].x * 16 + ex[i].y]++;
}

/* ------------------------------------------------------------------------ */
/* Vocabulary                                                                */

static void vocab_ids_follow_documented_order(void **state)
{
    (void)state;
    hs_tokenizer *v = make_vocab();
    assert_int_equal(v->n, 36);
    const char *tmpl[] = {"the", "did", "not", "cross", "because", "it",
                          "was", "too", ",",   "so",    "waited",  "."};
    for (int i = 0; i < 12; i++) assert_int_equal(hs_tok_id(v, tmpl[i]), i);
    for (int i = 0; i < HS_WG_N_NOUNS; i++) assert_int_equal(hs_tok_id(v, hs_wg_nouns[i]), 12 + i);
    for (int i = 0; i < HS_WG_N_ADJS; i++)
        assert_int_equal(hs_tok_id(v, hs_wg_adjectives[i]), 28 + i);
    assert_int_equal(hs_tok_id(v, "animal"), 12);
    assert_int_equal(hs_tok_id(v, "creek"), 27);
    assert_int_equal(hs_tok_id(v, "tired"), 28);
    assert_int_equal(hs_tok_id(v, "steep"), 35);
    assert_int_equal(hs_tok_id(v, "dragon"), -1);
    assert_int_equal(hs_tok_id(v, "The"), -1);
    assert_string_equal(hs_tok_str(v, 0), "the");
    assert_string_equal(hs_tok_str(v, 35), "steep");
    assert_null(hs_tok_str(v, 36));
    assert_null(hs_tok_str(v, -1));
    hs_tokenizer_destroy(v);
    hs_tokenizer_destroy(NULL);
}

/* ------------------------------------------------------------------------ */
/* Tokenizer                                                                 */

static hs_status tok(const hs_tokenizer *v, const char *s, size_t n_ctx, hs_tokens *t, hs_error *err)
{
    memset(err, 0, sizeof *err);
    return hs_tok_encode(v, s, n_ctx, t, err);
}

static void tokenizer_reads_the_chapter_prefix(void **state)
{
    (void)state;
    hs_tokenizer *v = make_vocab();
    hs_winograd *task = make_task(HS_TASK_WINOGRAD, 0);
    hs_tokens t;
    hs_error err;
    const char *s = "the animal did not cross the street because it was too tired, so the";
    assert_int_equal(tok(v, s, 18, &t, &err), HS_OK);
    assert_int_equal(t.n, 15);
    assert_int_equal(t.folded, 0);
    /* same ids as the generator's sentence (animal, street, tired) */
    const hs_wg_example *ex = NULL;
    for (int split = 0; split < 2 && !ex; split++) {
        size_t n;
        const hs_wg_example *e = hs_winograd_examples(task, (hs_wg_split)split, &n);
        for (size_t i = 0; i < n; i++)
            if (e[i].x == 0 && e[i].y == 1 && e[i].adj == 0) ex = &e[i];
    }
    assert_non_null(ex);
    for (size_t i = 0; i < 15; i++) assert_int_equal(t.ids[i], ex->tokens[i]);
    assert_string_equal(t.strs[11], "tired");
    assert_string_equal(t.strs[12], ",");
    assert_string_equal(t.strs[13], "so");
    assert_string_equal(t.strs[14], "the");
    hs_tokens_free(&t);
    hs_tokens_free(&t); /* freeing twice is safe: it zeroes */
    hs_tokens_free(NULL);
    hs_winograd_destroy(task);
    hs_tokenizer_destroy(v);
}

/* ------------------------------------------------------------------------ */
/* Splits                                                                    */

static void winograd_split_sizes_are_192_and_1728(void **state)
{
    (void)state;
    hs_winograd *t = make_task(HS_TASK_WINOGRAD, 0);
    assert_int_equal(t->n_heldout, 192);
    assert_int_equal(t->n_train, 1728);
    assert_int_equal(t->n_heldout_pairs, 24);
    /* 24 distinct unordered pairs */
    int seen[256] = {0};
    for (size_t k = 0; k < t->n_heldout_pairs; k++) {
        int a = t->heldout_pairs[k][0], b = t->heldout_pairs[k][1];
        assert_int_not_equal(a, b);
        int lo = a < b ? a : b, hi = a < b ? b : a;
        assert_int_equal(seen[lo * 16 + hi], 0);
        seen[lo * 16 + hi] = 1;
    }
    hs_winograd_destroy(t);
}

static void winograd_split_covers_every_sentence_once(void **state)
{
    (void)state;
    for (uint64_t seed = 0; seed < 5; seed++) {
        hs_winograd *t = make_task(HS_TASK_WINOGRAD, seed);
        int seen[16][16][8];
        memset(seen, 0, sizeof seen);
        for (int s = 0; s < 2; s++) {
            size_t n;
            const hs_wg_example *e = hs_winograd_examples(t, (hs_wg_split)s, &n);
            for (size_t i = 0; i < n; i++) {
                assert_int_equal(e[i].held_out, s);
                seen[e[i].x][e[i].y][e[i].adj]++;
            }
        }
        for (int x = 0; x < 16; x++)
            for (int y = 0; y < 16; y++)
                for (int a = 0; a < 8; a++) assert_int_equal(seen[x][y][a], x != y ? 1 : 0);
        hs_winograd_destroy(t);
    }
}

static void winograd_no_heldout_pair_in_training_and_reverse_is(void **state)
{
    (void)state;
    for (uint64_t seed = 0; seed < 20; seed++) {
        hs_winograd *t = make_task(HS_TASK_WINOGRAD, seed);
        int tr[256], ho[256];
        count_pairs(t->train, t->n_train, tr);
        count_pairs(t->heldout, t->n_heldout, ho);
        int n_ho_pairs = 0;
        for (int x = 0; x < 16; x++)
            for (int y = 0; y < 16; y++) {
                if (ho[x * 16 + y] == 0) continue;
                n_ho_pairs++;
                assert_int_equal(ho[x * 16 + y], 8);  /* all 8 adjectives */
                assert_int_equal(tr[x * 16 + y], 0);  /* never in training */
                assert_int_equal(tr[y * 16 + x], 8);  /* reverse in training, all adjectives */
                assert_int_equal(ho[y * 16 + x], 0);
                assert_int_equal(hs_winograd_is_held_out(t, hs_wg_nouns[x], hs_wg_nouns[y]), 1);
            }
        assert_int_equal(n_ho_pairs, 24);
        /* is_held_out agrees with the lists for every ordered pair */
        for (int x = 0; x < 16; x++)
            for (int y = 0; y < 16; y++)
                assert_int_equal(hs_winograd_is_held_out(t, hs_wg_nouns[x], hs_wg_nouns[y]),
                                 ho[x * 16 + y] > 0);
        assert_int_equal(hs_winograd_is_held_out(t, "dragon", "street"), -1);
        hs_winograd_destroy(t);
    }
}

static void winograd_split_is_deterministic_per_seed(void **state)
{
    (void)state;
    const uint64_t seeds[] = {0, 1, 42, 0xFFFFFFFFFFFFFFFFull};
    for (size_t k = 0; k < 4; k++) {
        hs_winograd *a = make_task(HS_TASK_WINOGRAD, seeds[k]);
        hs_winograd *b = make_task(HS_TASK_WINOGRAD, seeds[k]);
        assert_int_equal(a->n_train, b->n_train);
        assert_memory_equal(a->train, b->train, a->n_train * sizeof a->train[0]);
        assert_memory_equal(a->heldout, b->heldout, a->n_heldout * sizeof a->heldout[0]);
        assert_memory_equal(a->heldout_pairs, b->heldout_pairs, sizeof a->heldout_pairs);
        hs_winograd_destroy(a);
        hs_winograd_destroy(b);
    }
}

static void winograd_different_seeds_give_different_splits(void **state)
{
    (void)state;
    hs_winograd *ts[8];
    for (int s = 0; s < 8; s++) ts[s] = make_task(HS_TASK_WINOGRAD, (uint64_t)s);
    for (int i = 0; i < 8; i++)
        for (int j = i + 1; j < 8; j++)
            assert_memory_not_equal(ts[i]->heldout_pairs, ts[j]->heldout_pairs,
                                    sizeof ts[i]->heldout_pairs);
    /* both orientations occur across the held-out pairs (the bit is used) */
    int lo_first = 0, hi_first = 0;
    for (size_t k = 0; k < ts[0]->n_heldout_pairs; k++) {
        if (ts[0]->heldout_pairs[k][0] < ts[0]->heldout_pairs[k][1]) lo_first++;
        else hi_first++;
    }
    assert_true(lo_first > 0 && hi_first > 0);
    for (int s = 0; s < 8; s++) hs_winograd_destroy(ts[s]);
}

static void category_split_sizes_and_slots(void **state)
{
    (void)state;
    for (uint64_t seed = 0; seed < 10; seed++) {
        hs_winograd *t = make_task(HS_TASK_WINOGRAD_CATEGORY, seed);
        assert_int_equal(t->n_heldout, 128);
        assert_int_equal(t->n_train, 384);
        assert_int_equal(t->n_heldout_pairs, 16);
        int tr[256], ho[256];
        count_pairs(t->train, t->n_train, tr);
        count_pairs(t->heldout, t->n_heldout, ho);
        int n_pairs = 0;
        for (int x = 0; x < 16; x++)
            for (int y = 0; y < 16; y++) {
                int animal_place = (x % 2 == 0) && (y % 2 == 1);
                if (!animal_place) {
                    assert_int_equal(tr[x * 16 + y] + ho[x * 16 + y], 0);
                    continue;
                }
                n_pairs++;
                /* each (animal, place) pair in exactly one split with all 8 adjectives */
                assert_true((tr[x * 16 + y] == 8 && ho[x * 16 + y] == 0) ||
                            (tr[x * 16 + y] == 0 && ho[x * 16 + y] == 8));
            }
        assert_int_equal(n_pairs, 64);
        /* the animals and places are DESIGN.md's */
        const char *animals[] = {"animal", "dog", "cat", "horse", "fox", "goat", "cow", "deer"};
        const char *places[] = {"street", "road", "river", "bridge", "field", "path", "lane", "creek"};
        for (size_t i = 0; i < t->n_train; i++) {
            int ok_x = 0, ok_y = 0;
            for (int k = 0; k < 8; k++) {
                ok_x |= strcmp(hs_wg_nouns[t->train[i].x], animals[k]) == 0;
                ok_y |= strcmp(hs_wg_nouns[t->train[i].y], places[k]) == 0;
            }
            assert_true(ok_x && ok_y);
        }
        hs_winograd_destroy(t);
    }
    hs_winograd *a = make_task(HS_TASK_WINOGRAD_CATEGORY, 3);
    hs_winograd *b = make_task(HS_TASK_WINOGRAD_CATEGORY, 3);
    hs_winograd *c = make_task(HS_TASK_WINOGRAD_CATEGORY, 4);
    assert_memory_equal(a->heldout_pairs, b->heldout_pairs, sizeof a->heldout_pairs);
    assert_memory_not_equal(a->heldout_pairs, c->heldout_pairs, sizeof a->heldout_pairs);
    hs_winograd_destroy(a);
    hs_winograd_destroy(b);
    hs_winograd_destroy(c);
}

/* ------------------------------------------------------------------------ */
/* Generator                                                                 */

static void generator_places_words_and_ref_by_role(void **state)
{
    (void)state;
    for (int kind = 0; kind < 2; kind++) {
        hs_winograd *t = make_task((hs_task_kind)kind, 7);
        const hs_tokenizer *v = t->vocab;
        int the = hs_tok_id(v, "the");
        const char *tmpl[HS_WG_LEN] = {"the", "X", "did", "not", "cross", "the", "Y", "because", "it",
                                       "was", "too", "ADJ", ",", "so", "the", "REF", "waited", "."};
        for (int s = 0; s < 2; s++) {
            size_t n;
            const hs_wg_example *e = hs_winograd_examples(t, (hs_wg_split)s, &n);
            for (size_t i = 0; i < n; i++) {
                assert_int_not_equal(e[i].x, e[i].y);
                assert_int_equal(e[i].tokens[1], hs_tok_id(v, hs_wg_nouns[e[i].x]));
                assert_int_equal(e[i].tokens[6], hs_tok_id(v, hs_wg_nouns[e[i].y]));
                /* DESIGN.md's numbering: adj at 11, `,` at 12, so 13, the 14, ref 15 */
                assert_int_equal(e[i].tokens[11], hs_tok_id(v, hs_wg_adjectives[e[i].adj]));
                assert_int_equal(HS_WG_POS_ADJ, 11);
                assert_int_equal(e[i].tokens[HS_WG_POS_X], e[i].tokens[1]);
                assert_int_equal(e[i].tokens[HS_WG_POS_Y], e[i].tokens[6]);
                assert_int_equal(e[i].tokens[HS_WG_POS_QUERY], the);
                assert_int_equal(HS_WG_POS_QUERY, 14);
                assert_int_equal(HS_WG_POS_REF, 15);
                for (int p = 0; p < HS_WG_LEN; p++) {
                    if (p == 1 || p == 6 || p == 11 || p == 15) continue;
                    assert_int_equal(e[i].tokens[p], hs_tok_id(v, tmpl[p]));
                }
                for (int p = 0; p < HS_WG_LEN; p++)
                    assert_true(e[i].tokens[p] >= 0 && (size_t)e[i].tokens[p] < v->n);
                assert_int_equal(e[i].tokens[14], the);
                int crosser = e[i].adj < 4; /* tired scared slow weak */
                assert_int_equal(e[i].role, crosser ? HS_ROLE_CROSSER : HS_ROLE_CROSSED);
                assert_int_equal(e[i].ref, crosser ? e[i].x : e[i].y);
                assert_int_equal(e[i].ref_id, e[i].tokens[15]);
                assert_int_equal(e[i].ref_id, e[i].tokens[crosser ? 1 : 6]);
                assert_int_equal(e[i].other_id, e[i].tokens[crosser ? 6 : 1]);
            }
        }
        hs_winograd_destroy(t);
    }
}

static const hs_wg_example *find_example(const hs_winograd *t, const char *x, const char *y,
                                         const char *adj)
{
    for (int s = 0; s < 2; s++) {
        size_t n;
        const hs_wg_example *e = hs_winograd_examples(t, (hs_wg_split)s, &n);
        for (size_t i = 0; i < n; i++)
            if (strcmp(hs_wg_nouns[e[i].x], x) == 0 && strcmp(hs_wg_nouns[e[i].y], y) == 0 &&
                strcmp(hs_wg_adjectives[e[i].adj], adj) == 0)
                return &e[i];
    }
    return NULL;
}

static void generator_writes_the_chapter_sentences(void **state)
{
    (void)state;
    hs_winograd *t = make_task(HS_TASK_WINOGRAD, 0);
    char buf[256];
    const hs_wg_example *e = find_example(t, "animal", "street", "tired");
    assert_non_null(e);
    size_t n = hs_winograd_sentence(t, e, buf, sizeof buf);
    assert_string_equal(buf, "the animal did not cross the street because it was too tired , so "
                             "the animal waited .");
    assert_int_equal(n, strlen(buf));
    e = find_example(t, "animal", "street", "wet");
    assert_non_null(e);
    hs_winograd_sentence(t, e, buf, sizeof buf);
    assert_string_equal(buf, "the animal did not cross the street because it was too wet , so "
                             "the street waited .");
    /* truncation behaves like snprintf */
    char small[10];
    size_t need = hs_winograd_sentence(t, e, small, sizeof small);
    assert_int_equal(need, strlen(buf));
    assert_string_equal(small, "the anima");
    hs_winograd_destroy(t);
}

static void generator_uses_the_given_vocab_ids(void **state)
{
    (void)state;
    hs_tokenizer *v = make_vocab();
    /* reversed order */
    const char *rev[36];
    for (size_t i = 0; i < 36; i++) rev[i] = v->words[35 - i];
    hs_tokenizer *r = NULL;
    hs_error err = {0};
    assert_int_equal(hs_tokenizer_words(rev, 36, &r, &err), HS_OK);
    hs_winograd *a = make_task(HS_TASK_WINOGRAD, 5), *b = NULL;
    assert_int_equal(hs_winograd_create(HS_TASK_WINOGRAD, 5, r, &b, &err), HS_OK);
    char sa[256], sb[256];
    for (size_t i = 0; i < a->n_heldout; i++) {
        hs_winograd_sentence(a, &a->heldout[i], sa, sizeof sa);
        hs_winograd_sentence(b, &b->heldout[i], sb, sizeof sb);
        assert_string_equal(sa, sb);
        assert_int_equal(b->heldout[i].tokens[0], 35 - 0);     /* "the" is last in r */
        assert_int_equal(b->heldout[i].ref_id, 35 - a->heldout[i].ref_id);
    }
    hs_winograd_destroy(b);
    /* a vocabulary without "creek" cannot make the task */
    hs_tokenizer *small = NULL;
    assert_int_equal(hs_tokenizer_words((const char *const *)v->words, 27, &small, &err), HS_OK);
    b = (hs_winograd *)1;
    assert_int_equal(hs_winograd_create(HS_TASK_WINOGRAD, 5, small, &b, &err), HS_ERR_FORMAT);
    assert_null(b);
    assert_msg_contains(err, "the vocabulary lacks the task word 'creek'");
    hs_tokenizer_destroy(small);
    hs_tokenizer_destroy(r);
    hs_tokenizer_destroy(v);
    hs_winograd_destroy(a);
}

static void task_names_parse(void **state)
{
    (void)state;
    assert_int_equal(hs_task_parse("winograd"), HS_TASK_WINOGRAD);
    assert_int_equal(hs_task_parse("winograd-category"), HS_TASK_WINOGRAD_CATEGORY);
    assert_int_equal(hs_task_parse("winograd2"), -1);
    assert_string_equal(hs_task_name(HS_TASK_WINOGRAD_CATEGORY), "winograd-category");
    assert_int_equal(hs_wg_split_parse("heldout"), HS_SPLIT_HELDOUT);
    assert_int_equal(hs_wg_split_parse("held-out"), HS_SPLIT_HELDOUT);
    assert_int_equal(hs_wg_split_parse("train"), HS_SPLIT_TRAIN);
    assert_int_equal(hs_wg_split_parse("test"), -1);
}

/* ------------------------------------------------------------------------ */
/* Task JSON                                                                 */

static void task_json_round_trips(void **state)
{
    (void)state;
    const uint64_t seeds[] = {0, 17, 0xFFFFFFFFFFFFFFF0ull};
    for (int kind = 0; kind < 2; kind++)
        for (size_t k = 0; k < 3; k++) {
            hs_winograd *a = make_task((hs_task_kind)kind, seeds[k]), *b = NULL;
            hs_error err = {0};
            char *json = NULL;
            assert_int_equal(hs_winograd_task_json(a, &json, &err), HS_OK);
            assert_non_null(strstr(json, kind ? "\"name\":\"winograd-category\"" : "\"name\":\"winograd\""));
            assert_non_null(strstr(json, "\"nouns\":[\"animal\",\"street\""));
            if (hs_winograd_from_task_json(json, NULL, &b, &err) != HS_OK) fail_msg("%s", err.msg);
            assert_int_equal(b->kind, a->kind);
            assert_true(b->split_seed == a->split_seed);
            assert_memory_equal(a->heldout_pairs, b->heldout_pairs, sizeof a->heldout_pairs);
            free(json);
            hs_winograd_destroy(a);
            hs_winograd_destroy(b);
        }
    hs_winograd *b = NULL;
    hs_error err = {0};
    assert_int_equal(hs_winograd_from_task_json("{\"name\":\"nope\",\"split_seed\":1}", NULL, &b, &err),
                     HS_ERR_FORMAT);
    assert_msg_contains(err, "unknown task 'nope'");
    assert_int_equal(hs_winograd_from_task_json("{\"name\":\"winograd\"}", NULL, &b, &err), HS_ERR_FORMAT);
    assert_msg_contains(err, "neither 'heldout_pairs' nor 'split_seed'");
    assert_int_equal(hs_winograd_from_task_json("{\"name\":\"winograd\",\"split_seed\":-1}", NULL, &b, &err),
                     HS_ERR_FORMAT);
    assert_msg_contains(err, "not a whole number");
    assert_int_equal(hs_winograd_from_task_json(
                         "{\"name\":\"winograd\",\"split_seed\":1,\"nouns\":[\"a\"]}", NULL, &b, &err),
                     HS_ERR_FORMAT);
    assert_msg_contains(err, "'nouns' is not a list of 16 words");
    assert_int_equal(hs_winograd_from_task_json(NULL, NULL, &b, &err), HS_ERR_FORMAT);
    assert_msg_contains(err, "task metadata is missing");
    assert_null(b);
}

/* ------------------------------------------------------------------------ */
/* Dataset dump                                                              */

static char *tmp_path(const char *name)
{
    const char *dir = getenv("HS_TEST_TMP");
    if (!dir || !*dir) dir = "/tmp";
    char *p = hs_path_join(dir, name);
    assert_non_null(p);
    return p;
}

static void dataset_dump_lists_every_sentence(void **state)
{
    (void)state;
    hs_winograd *t = make_task(HS_TASK_WINOGRAD, 0);
    char *path = tmp_path("test_tasks_dataset.txt");
    hs_error err = {0};
    /* an old file is replaced as a whole */
    assert_int_equal(hs_write_file_atomic(path, "old\n", 4, &err), HS_OK);
    if (hs_winograd_write_text(t, path, &err) != HS_OK) fail_msg("%s", err.msg);
    unsigned char *data = NULL;
    size_t n = 0;
    assert_int_equal(hs_read_file(path, &data, &n, &err), HS_OK);
    char *text = (char *)data;
    assert_non_null(strstr(text, "# headscope dataset: task winograd, split seed 0\n"));
    assert_non_null(strstr(text, "1728 train sentences, 192 held-out sentences"));
    int chapter = hs_winograd_is_held_out(t, "animal", "street");
    assert_non_null(strstr(text, chapter ? "the chapter's pair (animal, street) is held out"
                                         : "the chapter's pair (animal, street) is not held out"));
    assert_null(strstr(text, "old\n"));

    size_t n_train = 0, n_ho = 0, n_lines = 0;
    int seen_heldout = 0;
    char expect[512];
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') {
            assert_int_equal(n_lines, 0); /* comments only at the top */
            continue;
        }
        /* line i matches example i, train first */
        const hs_wg_example *e = n_lines < t->n_train ? &t->train[n_lines]
                                                      : &t->heldout[n_lines - t->n_train];
        assert_true(n_lines < t->n_train + t->n_heldout);
        char sentence[256];
        hs_winograd_sentence(t, e, sentence, sizeof sentence);
        snprintf(expect, sizeof expect, "%s\t%s\t%s\t%s", e->held_out ? "heldout" : "train",
                 e->role == HS_ROLE_CROSSER ? "crosser" : "crossed", hs_wg_nouns[e->ref], sentence);
        assert_string_equal(line, expect);
        if (strncmp(line, "train\t", 6) == 0) {
            assert_int_equal(seen_heldout, 0);
            n_train++;
        } else {
            seen_heldout = 1;
            n_ho++;
        }
        n_lines++;
    }
    assert_int_equal(n_train, 1728);
    assert_int_equal(n_ho, 192);
    free(data);
    remove(path);
    free(path);
    hs_winograd_destroy(t);
}

static void dataset_dump_refuses_missing_folder(void **state)
{
    (void)state;
    hs_winograd *t = make_task(HS_TASK_WINOGRAD_CATEGORY, 1);
    char *path = tmp_path("no-such-folder/dataset.txt");
    hs_error err = {0};
    assert_int_equal(hs_winograd_write_text(t, path, &err), HS_ERR_IO);
    assert_msg_contains(err, "parent folder does not exist");
    FILE *fp = fopen(path, "r");
    assert_null(fp);
    free(path);
    hs_winograd_destroy(t);
}

/* ------------------------------------------------------------------------ */
/* Batches and PRNG                                                          */

static void batch_draws_training_sentences_with_shifted_targets(void **state)
{
    (void)state;
    hs_winograd *t = make_task(HS_TASK_WINOGRAD, 0);
    enum { B = 64 };
    int tok[B * HS_WG_LEN], tgt[B * HS_WG_LEN], tok2[B * HS_WG_LEN], tgt2[B * HS_WG_LEN];
    hs_task_rng r, r2;
    hs_task_rng_seed(&r, 9);
    hs_task_rng_seed(&r2, 9);
    hs_winograd_batch(t, &r, B, tok, tgt);
    hs_winograd_batch(t, &r2, B, tok2, tgt2);
    assert_memory_equal(tok, tok2, sizeof tok);
    assert_memory_equal(tgt, tgt2, sizeof tgt);
    size_t distinct = 0;
    for (size_t b = 0; b < B; b++) {
        const int *row = tok + b * HS_WG_LEN;
        const int *trow = tgt + b * HS_WG_LEN;
        for (int p = 0; p < 17; p++) assert_int_equal(trow[p], row[p + 1]);
        assert_int_equal(trow[17], -1);
        int found = 0;
        for (size_t i = 0; i < t->n_train && !found; i++)
            found = memcmp(row, t->train[i].tokens, sizeof t->train[i].tokens) == 0;
        assert_true(found);
        for (size_t i = 0; i < t->n_heldout; i++)
            assert_memory_not_equal(row, t->heldout[i].tokens, sizeof t->heldout[i].tokens);
        if (b > 0 && memcmp(row, tok, sizeof t->train[0].tokens) != 0) distinct++;
    }
    assert_true(distinct > B / 2);
    /* the next batch differs */
    hs_winograd_batch(t, &r, B, tok2, tgt2);
    assert_memory_not_equal(tok, tok2, sizeof tok);
    hs_winograd_destroy(t);
}

static void rng_below_is_in_range_and_covers(void **state)
{
    (void)state;
    hs_task_rng r;
    hs_task_rng_seed(&r, 0);
    /* splitmix64 reference value for seed 0 (Vigna's splitmix64.c) */
    assert_true(hs_task_rng_next(&r) == 0xE220A8397B1DCDAFull);
    int counts[7] = {0};
    for (int i = 0; i < 7000; i++) {
        uint64_t v = hs_task_rng_below(&r, 7);
        assert_true(v < 7);
        counts[v]++;
    }
    for (int k = 0; k < 7; k++) assert_true(counts[k] > 800 && counts[k] < 1200);
}

/* A split given as pairs: exactly those ordered pairs are held out, with all
 * 8 adjectives, and their reverses stay in training; bad pairs are refused
 * naming them. */
static void split_from_given_pairs_holds_out_exactly_those(void **state)
{
    (void)state;
    hs_error err;
    const int pairs[3][2] = {{2, 9}, {0, 1}, {15, 4}}; /* dog field, animal street, creek cat */
    hs_winograd *t = NULL;
    assert_int_equal(hs_winograd_create_pairs(HS_TASK_WINOGRAD, pairs, 3, NULL, &t, &err), HS_OK);
    assert_int_equal(t->n_heldout, 3 * 8);
    assert_int_equal(t->n_train, 240 * 8 - 24);
    assert_int_equal(hs_winograd_is_held_out(t, "animal", "street"), 1);
    assert_int_equal(hs_winograd_is_held_out(t, "street", "animal"), 0);
    assert_int_equal(hs_winograd_is_held_out(t, "creek", "cat"), 1);
    for (size_t i = 0; i < t->n_heldout; i++) {
        const hs_wg_example *e = &t->heldout[i];
        assert_true((e->x == 0 && e->y == 1) || (e->x == 2 && e->y == 9) || (e->x == 15 && e->y == 4));
    }
    hs_winograd_destroy(t);
    const int twice[2][2] = {{0, 1}, {0, 1}}, same[1][2] = {{3, 3}};
    assert_int_equal(hs_winograd_create_pairs(HS_TASK_WINOGRAD, twice, 2, NULL, &t, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "(animal, street) is listed twice"));
    assert_int_equal(hs_winograd_create_pairs(HS_TASK_WINOGRAD, same, 1, NULL, &t, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "(road, road) is not a pair"));
    const int place_first[1][2] = {{1, 0}}; /* street animal: not animal -> place */
    assert_int_equal(hs_winograd_create_pairs(HS_TASK_WINOGRAD_CATEGORY, place_first, 1, NULL, &t, &err),
                     HS_ERR_INPUT);
    assert_null(t);
}

/* Task metadata naming its held-out pairs (as a model trained elsewhere
 * does): those pairs are the split, with or without a seed beside them; the
 * pairs headscope writes beside its seed give that seed's split; a bad entry
 * is refused naming it. */
static void task_json_heldout_pairs_are_read(void **state)
{
    (void)state;
    hs_error err = {0};
    hs_winograd *t = NULL;
    const char *only = "{\"name\":\"winograd\",\"heldout_pairs\":[[\"dog\",\"field\"],[\"animal\",\"street\"]]}";
    const char *both = "{\"name\":\"winograd\",\"split_seed\":0,\"heldout_pairs\":[[\"dog\",\"field\"]]}";
    if (hs_winograd_from_task_json(only, NULL, &t, &err) != HS_OK) fail_msg("%s", err.msg);
    assert_int_equal(t->n_heldout_pairs, 2);
    assert_int_equal(t->n_heldout, 16);
    assert_int_equal(hs_winograd_is_held_out(t, "animal", "street"), 1);
    assert_int_equal(hs_winograd_is_held_out(t, "dog", "field"), 1);
    assert_int_equal(t->pairs_read, 1);
    assert_int_equal(t->pairs_given, 1);
    hs_winograd_destroy(t);
    if (hs_winograd_from_task_json(both, NULL, &t, &err) != HS_OK) fail_msg("%s", err.msg);
    assert_int_equal(t->n_heldout_pairs, 1);
    assert_int_equal(t->heldout_pairs[0][0], 2);
    assert_int_equal(t->heldout_pairs[0][1], 9);
    assert_int_equal(t->pairs_given, 1);
    hs_winograd_destroy(t);
    hs_winograd *a = make_task(HS_TASK_WINOGRAD, 5);
    char *json = NULL;
    assert_int_equal(hs_winograd_task_json(a, &json, &err), HS_OK);
    if (hs_winograd_from_task_json(json, NULL, &t, &err) != HS_OK) fail_msg("%s", err.msg);
    assert_int_equal(t->pairs_read, 1);
    assert_int_equal(t->pairs_given, 0);
    assert_true(t->split_seed == 5);
    assert_memory_equal(a->heldout_pairs, t->heldout_pairs, sizeof a->heldout_pairs);
    free(json);
    hs_winograd_destroy(a);
    hs_winograd_destroy(t);
    t = NULL;
    assert_int_equal(hs_winograd_from_task_json(
                         "{\"name\":\"winograd\",\"heldout_pairs\":[[\"dog\",\"field\"],[\"dog\",\"unicorn\"]]}",
                         NULL, &t, &err), HS_ERR_FORMAT);
    assert_msg_contains(err, "'heldout_pairs'[1]: 'unicorn' is not one of the task's 16 nouns");
    assert_int_equal(hs_winograd_from_task_json("{\"name\":\"winograd\",\"heldout_pairs\":[[\"dog\"]]}",
                                                NULL, &t, &err), HS_ERR_FORMAT);
    assert_msg_contains(err, "'heldout_pairs'[0] is not an [x, y] pair of noun words");
    assert_int_equal(hs_winograd_from_task_json("{\"name\":\"winograd\",\"heldout_pairs\":[[\"dog\",\"dog\"]]}",
                                                NULL, &t, &err), HS_ERR_INPUT);
    assert_msg_contains(err, "(dog, dog) is not a pair");
    assert_null(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(vocab_ids_follow_documented_order),
        cmocka_unit_test(tokenizer_reads_the_chapter_prefix),
        cmocka_unit_test(winograd_split_sizes_are_192_and_1728),
        cmocka_unit_test(winograd_split_covers_every_sentence_once),
        cmocka_unit_test(winograd_no_heldout_pair_in_training_and_reverse_is),
        cmocka_unit_test(winograd_split_is_deterministic_per_seed),
        cmocka_unit_test(winograd_different_seeds_give_different_splits),
        cmocka_unit_test(category_split_sizes_and_slots),
        cmocka_unit_test(generator_places_words_and_ref_by_role),
        cmocka_unit_test(generator_writes_the_chapter_sentences),
        cmocka_unit_test(generator_uses_the_given_vocab_ids),
        cmocka_unit_test(task_names_parse),
        cmocka_unit_test(task_json_round_trips),
        cmocka_unit_test(dataset_dump_lists_every_sentence),
        cmocka_unit_test(dataset_dump_refuses_missing_folder),
        cmocka_unit_test(batch_draws_training_sentences_with_shifted_targets),
        cmocka_unit_test(rng_below_is_in_range_and_covers),
        cmocka_unit_test(split_from_given_pairs_holds_out_exactly_those),
        cmocka_unit_test(task_json_heldout_pairs_are_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
