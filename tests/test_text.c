/*
 * tests/test_text.c -- the text task (tasks/text.c) on a small corpus
 * written here: the per-file split (the last val_fraction of each file's
 * tokens held out, the streams the files' encodings cut there), training
 * windows (targets the next tokens of the training stream), perplexity
 * (a model whose logits are all equal scores exactly V; against a
 * hand-computed mean cross-entropy over the windows), the unigram baseline
 * (recomputed here), the task metadata round trip, greedy generation equal to
 * the argmax of a forward at each step, and seeded sampling reproducible;
 * --repeat's windows (one span copied later, training and held-out). The
 * BPE trainer's edge cases: a tie broken toward the smallest pair, runs of one
 * byte (overlapping pairs), the vocabulary the corpus allows.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tasks/text.h"

#define assert_near(a, b, tol)                                                            \
    do {                                                                                   \
        const double a_ = (a), b_ = (b);                                                   \
        if (!(fabs(a_ - b_) <= (tol))) fail_msg("%s = %.17g, expected %.17g", #a, a_, b_);  \
    } while (0)

static const char *tmpdir(void)
{
    const char *d = getenv("HS_TEST_TMP");
    return d ? d : "/tmp";
}

static char *write_tmp(const char *name, const char *text)
{
    char *p = hs_strfmt("%s/text_%d_%s", tmpdir(), (int)getpid(), name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return p;
}

static const char A_TEXT[] =
    "the cat sat on the mat. the dog sat on the log. a cat and a dog met on a mat.\n"
    "the cat saw the dog; the dog saw the cat. then the cat sat and the dog sat.\n"
    "on the mat the cat slept, on the log the dog slept, and the birds sang.\n";
static const char B_TEXT[] =
    "once upon a time there was a cat who sat on a mat and a dog who sat on a log.\n"
    "every day the cat and the dog met, and every day they sat and sat and sat.\n";

typedef struct {
    char *paths[2];
    hs_corpus c;
    hs_bpe_trained b;
    hs_text *t;
} fixture;

static void make_fixture_repeat(fixture *f, int n_ctx, double repeat)
{
    memset(f, 0, sizeof *f);
    hs_error err = {0};
    f->paths[0] = write_tmp("a.txt", A_TEXT);
    f->paths[1] = write_tmp("b.txt", B_TEXT);
    if (hs_corpus_read((const char *const *)f->paths, 2, &f->c, &err) != HS_OK) fail_msg("%s", err.msg);
    if (hs_bpe_train(&f->c, 300, NULL, &f->b, &err) != HS_OK) fail_msg("%s", err.msg);
    hs_text_params p = hs_text_params_default();
    p.n_ctx = n_ctx;
    p.val_fraction = 0.25;
    p.repeat = repeat;
    if (hs_text_create(&f->c, f->b.json, f->b.json_len, &p, &f->t, &err) != HS_OK)
        fail_msg("%s", err.msg);
}

static void make_fixture(fixture *f, int n_ctx)
{
    make_fixture_repeat(f, n_ctx, 0.0);
}

static void free_fixture(fixture *f)
{
    hs_text_destroy(f->t);
    hs_bpe_trained_free(&f->b);
    hs_corpus_free(&f->c);
    for (int i = 0; i < 2; i++) {
        unlink(f->paths[i]);
        free(f->paths[i]);
    }
}

/* The streams are each file's encoding cut at floor(n (1 - 0.25)). */
static void split_per_file(void **state)
{
    (void)state;
    fixture f;
    make_fixture(&f, 8);
    hs_error err = {0};
    hs_tokens ta = {0}, tb = {0};
    assert_int_equal(hs_tok_encode(f.t->tok, A_TEXT, 0, &ta, &err), HS_OK);
    assert_int_equal(hs_tok_encode(f.t->tok, B_TEXT, 0, &tb, &err), HS_OK);
    const size_t ha = (size_t)floor(ta.n * 0.25), hb = (size_t)floor(tb.n * 0.25);
    assert_int_equal(f.t->n_train, ta.n - ha + tb.n - hb);
    assert_int_equal(f.t->n_heldout, ha + hb);
    assert_memory_equal(f.t->train, ta.ids, (ta.n - ha) * sizeof(int));
    assert_memory_equal(f.t->train + ta.n - ha, tb.ids, (tb.n - hb) * sizeof(int));
    assert_memory_equal(f.t->heldout, ta.ids + ta.n - ha, ha * sizeof(int));
    assert_memory_equal(f.t->heldout + ha, tb.ids + tb.n - hb, hb * sizeof(int));
    assert_int_equal(f.b.tokens, ta.n + tb.n); /* the trainer's count is the encoder's */
    /* training windows: targets are the next tokens of the training stream */
    hs_task_rng r;
    hs_task_rng_seed(&r, 7);
    int tok[4 * 8], tgt[4 * 8];
    hs_text_batch(f.t, &r, 4, 8, tok, tgt);
    for (int b = 0; b < 4; b++) {
        int found = 0;
        for (size_t s = 0; s + 9 <= f.t->n_train && !found; s++)
            found = memcmp(f.t->train + s, tok + b * 8, 8 * sizeof(int)) == 0 &&
                    memcmp(f.t->train + s + 1, tgt + b * 8, 8 * sizeof(int)) == 0;
        assert_true(found);
    }
    /* the unigram baseline, recomputed */
    const size_t V = f.t->tok->n, W = hs_text_windows(f.t, 8);
    assert_int_equal(W, (f.t->n_heldout - 1) / 8);
    double *cnt = calloc(V, sizeof *cnt), nll = 0.0;
    for (size_t i = 0; i < f.t->n_train; i++) cnt[f.t->train[i]]++;
    for (size_t i = 1; i <= W * 8; i++)
        nll -= log((cnt[f.t->heldout[i]] + 1.0) / ((double)f.t->n_train + (double)V));
    assert_near(f.t->unigram_ppl, exp(nll / (double)(W * 8)), 1e-9 * f.t->unigram_ppl);
    free(cnt);
    /* metadata round trip */
    char *js = NULL;
    hs_text_params p;
    assert_int_equal(hs_text_task_json(f.t, &js, &err), HS_OK);
    assert_int_equal(hs_text_params_from_json(js, &p, &err), HS_OK);
    assert_int_equal(p.n_ctx, 8);
    assert_near(p.val_fraction, 0.25, 0.0);
    free(js);
    hs_tokens_free(&ta);
    hs_tokens_free(&tb);
    free_fixture(&f);
}

/* 1 when the T tokens w equal plain except in one span [b, b + L) that holds
 * w[a .. a + L) again, L in [lo, hi], a + L <= b, b + L <= T (or equal
 * plain where the copy happened to change nothing); *copied: a span differed. */
static int is_repeat_of(const int *w, const int *plain, int T, int lo, int hi, int *copied)
{
    int first = -1, last = -1;
    for (int i = 0; i < T; i++)
        if (w[i] != plain[i]) {
            if (first < 0) first = i;
            last = i;
        }
    *copied = first >= 0;
    if (first < 0) return 1;
    for (int L = lo; L <= hi; L++)
        for (int b = last - L + 1 > 0 ? last - L + 1 : 0; b <= first && b + L <= T; b++)
            for (int a = 0; a + L <= b; a++)
                if (memcmp(w + a, w + b, (size_t)L * sizeof *w) == 0) return 1;
    return 0;
}

/* --repeat: with P = 1 every training window is a window of the training
 * stream but for one span of T/8..T/4 tokens copied from earlier in it, the
 * targets still the inputs shifted by one (the last the stream's next token);
 * every held-out window likewise (seeded, so two builds agree); with P = 0 the
 * batch is the plain stream's and the draws are those of a run before repeats
 * existed; the metadata carries repeat only when it is set. */
static void repeated_spans(void **state)
{
    (void)state;
    enum { T = 16, B = 24 };
    fixture f, g;
    make_fixture_repeat(&f, T, 1.0);
    make_fixture(&g, T);
    assert_int_equal(f.t->n_train, g.t->n_train);
    assert_memory_equal(f.t->train, g.t->train, f.t->n_train * sizeof(int));
    hs_task_rng r, r0;
    hs_task_rng_seed(&r, 5);
    int tok[B * T], tgt[B * T], n_copied = 0, copied;
    hs_text_batch(f.t, &r, B, T, tok, tgt);
    for (int b = 0; b < B; b++) {
        const int *w = tok + b * T;
        int found = 0;
        for (size_t s = 0; s + T + 1 <= f.t->n_train && !found; s++)
            found = tgt[b * T + T - 1] == f.t->train[s + T] &&
                    is_repeat_of(w, f.t->train + s, T, 2, 4, &copied);
        assert_true(found);
        n_copied += copied;
        assert_memory_equal(tgt + b * T, w + 1, (T - 1) * sizeof(int));
    }
    assert_true(n_copied >= B / 2); /* a copied span rarely equals what it covers */
    /* held-out: window by window against the plain stream */
    const size_t W = hs_text_windows(f.t, T);
    int held_copied = 0;
    for (size_t w = 0; w < W; w++) {
        assert_true(is_repeat_of(f.t->heldout + w * T, g.t->heldout + w * T, T, 2, 4, &copied));
        held_copied += copied;
    }
    assert_true(held_copied >= 1);
    assert_int_equal(f.t->heldout[W * T], g.t->heldout[W * T]);
    /* P = 0: the plain windows, one draw per window as before repeats */
    hs_task_rng_seed(&r, 5);
    hs_task_rng_seed(&r0, 5);
    int tok0[B * T], tgt0[B * T];
    hs_text_batch(g.t, &r0, B, T, tok0, tgt0);
    for (int b = 0; b < B; b++) {
        const size_t s = (size_t)hs_task_rng_below(&r, (uint64_t)(g.t->n_train - T));
        assert_memory_equal(tok0 + b * T, g.t->train + s, T * sizeof(int));
        assert_memory_equal(tgt0 + b * T, g.t->train + s + 1, T * sizeof(int));
    }
    assert_int_equal(hs_task_rng_next(&r), hs_task_rng_next(&r0));
    /* metadata */
    hs_error err = {0};
    char *js = NULL, *js0 = NULL;
    hs_text_params p;
    assert_int_equal(hs_text_task_json(f.t, &js, &err), HS_OK);
    assert_int_equal(hs_text_params_from_json(js, &p, &err), HS_OK);
    assert_near(p.repeat, 1.0, 0.0);
    assert_int_equal(hs_text_task_json(g.t, &js0, &err), HS_OK);
    assert_null(strstr(js0, "repeat"));
    assert_int_equal(hs_text_params_from_json(js0, &p, &err), HS_OK);
    assert_near(p.repeat, 0.0, 0.0);
    free(js);
    free(js0);
    /* out of range */
    hs_text *bad = NULL;
    hs_text_params q = hs_text_params_default();
    q.repeat = 1.5;
    assert_int_equal(hs_text_create(&f.c, f.b.json, f.b.json_len, &q, &bad, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "--repeat"));
    free_fixture(&f);
    free_fixture(&g);
}

static hs_model *small_model(int V, int n_ctx)
{
    hs_config c = hs_config_default();
    c.n_layers = 1;
    c.d_model = 16;
    c.n_heads = 2;
    c.d_head = 8;
    c.d_mlp = 32;
    c.n_ctx = n_ctx;
    c.d_vocab = V;
    hs_model *m = NULL;
    hs_error err = {0};
    if (hs_model_create(&c, &m, &err) != HS_OK) fail_msg("%s", err.msg);
    hs_model_init(m);
    return m;
}

/* Perplexity: all-equal logits give exactly V; a random model's equals the
 * mean cross-entropy of one forward per window computed here, and its ICL
 * score the mean loss at position 7 minus that at position 0 (T = 8: T / 10
 * is 0) over the same windows. */
static void perplexity_values(void **state)
{
    (void)state;
    fixture f;
    make_fixture(&f, 8);
    hs_error err = {0};
    const int V = (int)f.t->tok->n;
    hs_model *m = small_model(V, 8);
    hs_text_score s;
    assert_int_equal(hs_text_perplexity(m, f.t->heldout, f.t->n_heldout, 8, 1, &s, &err), HS_OK);
    const size_t W = hs_text_windows(f.t, 8);
    assert_int_equal(s.windows, W);
    assert_int_equal(s.tokens, W * 8);
    hs_acts *a = NULL;
    assert_int_equal(hs_acts_create(&m->cfg, 1, 8, 0, &a, &err), HS_OK);
    double nll = 0.0, first = 0.0, last = 0.0;
    for (size_t w = 0; w < W; w++) {
        assert_int_equal(hs_forward(m, a, f.t->heldout + w * 8, 1, 8, NULL, &err), HS_OK);
        for (int i = 0; i < 8; i++) {
            const float *lg = a->logits + (size_t)i * V;
            double z = 0.0;
            for (int v = 0; v < V; v++) z += exp((double)lg[v]);
            const double e = log(z) - lg[f.t->heldout[w * 8 + (size_t)i + 1]];
            nll += e;
            if (i == 0) first += e;
            if (i == 7) last += e;
        }
    }
    assert_near(s.loss, nll / (double)(W * 8), 1e-6);
    assert_int_equal(s.icl_early, 0);
    assert_int_equal(s.icl_late, 7);
    assert_near(s.icl_score, (last - first) / (double)W, 1e-6);
    assert_true(fabs(s.icl_score) > 1e-3); /* a random model's: not zero by construction */
    /* 2 threads: the same bits */
    hs_text_score s2;
    assert_int_equal(hs_text_perplexity(m, f.t->heldout, f.t->n_heldout, 8, 2, &s2, &err), HS_OK);
    assert_memory_equal(&s.loss, &s2.loss, sizeof s.loss);
    assert_memory_equal(&s.icl_score, &s2.icl_score, sizeof s.icl_score);
    /* all-equal logits: W_U and b_U zero */
    memset(m->params.W_U, 0, (size_t)m->cfg.d_model * V * sizeof(float));
    memset(m->params.b_U, 0, (size_t)V * sizeof(float));
    assert_int_equal(hs_text_perplexity(m, f.t->heldout, f.t->n_heldout, 8, 1, &s, &err), HS_OK);
    assert_near(s.perplexity, (double)V, 1e-9 * V);
    /* windows longer than the model's positions are refused */
    assert_int_equal(hs_text_perplexity(m, f.t->heldout, f.t->n_heldout, 9, 1, &s, &err),
                     HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "positions 0..7"));
    hs_acts_destroy(a);
    hs_model_destroy(m);
    free_fixture(&f);
}

/* Greedy = the argmax of the forward at every step (the window sliding past
 * n_ctx); sampling is reproducible for a seed and top-k K stays among the K
 * largest logits. */
static void generation(void **state)
{
    (void)state;
    fixture f;
    make_fixture(&f, 8);
    hs_error err = {0};
    const int V = (int)f.t->tok->n;
    hs_model *m = small_model(V, 8);
    const int prompt[3] = {f.t->train[0], f.t->train[1], f.t->train[2]};
    hs_gen_opts g = {12, 1.0, 1, 0};
    int *ids = NULL, *ids2 = NULL;
    size_t n = 0, n2 = 0;
    assert_int_equal(hs_text_generate(m, prompt, 3, &g, &ids, &n, &err), HS_OK);
    assert_int_equal(n, 15);
    hs_acts *a = NULL;
    assert_int_equal(hs_acts_create(&m->cfg, 1, 8, 0, &a, &err), HS_OK);
    for (size_t k = 3; k < n; k++) {
        const size_t start = k > 8 ? k - 8 : 0;
        const int T = (int)(k - start);
        assert_int_equal(hs_forward(m, a, ids + start, 1, T, NULL, &err), HS_OK);
        const float *lg = a->logits + (size_t)(T - 1) * V;
        int best = 0;
        for (int v = 1; v < V; v++)
            if (lg[v] > lg[best]) best = v;
        assert_int_equal(ids[k], best);
    }
    hs_gen_opts t0 = {12, 0.0, 0, 5};
    assert_int_equal(hs_text_generate(m, prompt, 3, &t0, &ids2, &n2, &err), HS_OK);
    assert_memory_equal(ids, ids2, n * sizeof *ids);
    free(ids);
    free(ids2);
    /* sampling: the same seed, the same tokens; top-k 3 draws from the 3 largest */
    hs_gen_opts s = {20, 2.0, 3, 11};
    assert_int_equal(hs_text_generate(m, prompt, 3, &s, &ids, &n, &err), HS_OK);
    assert_int_equal(hs_text_generate(m, prompt, 3, &s, &ids2, &n2, &err), HS_OK);
    assert_memory_equal(ids, ids2, n * sizeof *ids);
    int differs = 0;
    for (size_t k = 3; k < n; k++) {
        const size_t start = k > 8 ? k - 8 : 0;
        const int T = (int)(k - start);
        assert_int_equal(hs_forward(m, a, ids + start, 1, T, NULL, &err), HS_OK);
        const float *lg = a->logits + (size_t)(T - 1) * V;
        int above = 0;
        for (int v = 0; v < V; v++) above += lg[v] > lg[ids[k]];
        assert_true(above < 3);
        /* a greedy run would have taken the argmax each time */
        differs += above > 0;
    }
    assert_true(differs > 0); /* at temperature 2 some draws are not the argmax */
    free(ids);
    free(ids2);
    hs_acts_destroy(a);
    hs_model_destroy(m);
    free_fixture(&f);
}

/* The BPE trainer on texts small enough to follow by hand. */
static void bpe_by_hand(void **state)
{
    (void)state;
    hs_error err = {0};
    /* "ab ab ab cd cd cd": pieces "ab", " ab" x2, " cd" x3: pairs (' ', 'a') 2,
     * ('a', 'b') 3, (' ', 'c') 3, ('c', 'd') 3: the tie among the count-3
     * pairs goes to the smallest ids: (' ', 'c') = (32, 99) */
    char *p = write_tmp("h.txt", "ab ab ab cd cd cd");
    hs_corpus c;
    hs_bpe_trained b;
    assert_int_equal(hs_corpus_read((const char *const *)&p, 1, &c, &err), HS_OK);
    assert_int_equal(hs_bpe_train(&c, 257, NULL, &b, &err), HS_OK);
    assert_int_equal(b.n_merges, 1);
    assert_int_equal(b.merges[0][0], ' ');
    assert_int_equal(b.merges[0][1], 'c');
    hs_bpe_trained_free(&b);
    /* until no pair is left: " cd" -> [" c", "d"] -> [" cd"], "ab", " ab": 2 + 2 merges
     * ... every piece one token; asking for more stops there */
    assert_int_equal(hs_bpe_train(&c, 400, NULL, &b, &err), HS_OK);
    assert_true(b.V < 400);
    assert_int_equal(b.tokens, 6); /* each of the 6 pieces is one token */
    hs_bpe_trained_free(&b);
    hs_corpus_free(&c);
    unlink(p);
    free(p);
    /* overlapping pairs ("aaa" holds (a, a) twice, merged once, left to right):
     * the trainer's count of the corpus's tokens is the encoder's */
    p = write_tmp("h2.txt", "aaa aaaa aaaaa\naaaaaaa aa");
    assert_int_equal(hs_corpus_read((const char *const *)&p, 1, &c, &err), HS_OK);
    assert_int_equal(hs_bpe_train(&c, 300, NULL, &b, &err), HS_OK);
    hs_tokenizer *t = NULL;
    assert_int_equal(hs_tokenizer_from_hf_json(b.json, b.json_len, "t", &t, &err), HS_OK);
    hs_tokens tk = {0};
    assert_int_equal(hs_tok_encode(t, "aab aab aab", 0, &tk, &err), HS_OK);
    assert_int_equal(tk.n, b.tokens);
    hs_tokens_free(&tk);
    hs_tokenizer_destroy(t);
    hs_bpe_trained_free(&b);
    hs_corpus_free(&c);
    assert_int_equal(hs_bpe_train(&c, 256, NULL, &b, &err), HS_ERR_INPUT);
    unlink(p);
    free(p);
}

/* --warmup: lr x step / warmup up to step warmup, then the schedule without
 * it (constant, then the cosine tail); warmup 0 changes nothing. */
static void warmup_schedule(void **state)
{
    (void)state;
    hs_train_opts o = hs_train_opts_default();
    o.steps = 100;
    o.opt.lr = 1e-3f;
    const float plain[4] = {hs_train_lr(&o, 1), hs_train_lr(&o, 10), hs_train_lr(&o, 61),
                            hs_train_lr(&o, 100)};
    assert_true(plain[0] == 1e-3f && plain[1] == 1e-3f && plain[2] < 1e-3f);
    o.warmup = 10;
    assert_true(hs_train_lr(&o, 1) == (float)(1e-3f * 1.0 / 10));
    assert_true(hs_train_lr(&o, 5) == (float)(1e-3f * 5.0 / 10));
    assert_true(hs_train_lr(&o, 10) == 1e-3f);
    assert_true(hs_train_lr(&o, 11) == 1e-3f);
    assert_true(hs_train_lr(&o, 61) == plain[2]);
    assert_true(hs_train_lr(&o, 100) == plain[3]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(split_per_file),
        cmocka_unit_test(repeated_spans),
        cmocka_unit_test(perplexity_values),
        cmocka_unit_test(generation),
        cmocka_unit_test(bpe_by_hand),
        cmocka_unit_test(warmup_schedule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
