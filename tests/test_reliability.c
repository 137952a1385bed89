/*
 * tests/test_reliability.c -- issue 7 from C:
 *  - every input in tests/fuzz/regressions/<target>/ (a crash or invariant
 *    violation a fuzz target once found) now gives a clean error: a failure
 *    status, a non-empty one-line message, nothing left allocated;
 *  - training guards: a weight poisoned with NaN/Inf at step k stops hs_train
 *    with HS_ERR_NUMERIC and a message naming step k, and the checkpoint saved
 *    before it still loads with the weights it had; a NaN/Inf gradient stops
 *    AdamW before any parameter moves.
 *
 * Working directory: tests/. Scratch: $HS_TEST_TMP.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/checkpoint_internal.h"
#include "model/model.h"
#include "model/train.h"
#include "model/checkpoint.h"
#include "tasks/tasks.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static char g_tmp[512];

static int setup_tmp(void **state)
{
    (void)state;
    const char *t = getenv("HS_TEST_TMP");
    snprintf(g_tmp, sizeof g_tmp, "%s/reliability.%ld", t && t[0] ? t : "/tmp", (long)getpid());
    mkdir(t && t[0] ? t : "/tmp", 0777);
    mkdir(g_tmp, 0777);
    return 0;
}

static void assert_one_line_error(hs_status st, const hs_error *err, const char *what)
{
    if (st == HS_OK) fail_msg("%s: expected an error, got HS_OK", what);
    if (err->msg[0] == '\0') fail_msg("%s: empty error message", what);
    if (strchr(err->msg, '\n') != NULL || strchr(err->msg, '\r') != NULL)
        fail_msg("%s: message is not one line: %s", what, err->msg);
}

/* Calls fn(path, bytes, n) for every regular file in dir; returns the count. */
static int for_each_file(const char *dir,
                         void (*fn)(const char *path, const unsigned char *buf, size_t n))
{
    DIR *d = opendir(dir);
    if (d == NULL) return 0; /* no regressions for this target yet */
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        unsigned char *buf = NULL;
        size_t n = 0;
        hs_error err;
        if (hs_read_file(path, &buf, &n, &err) != HS_OK) fail_msg("%s", err.msg);
        fn(path, buf, n);
        free(buf);
        count++;
    }
    closedir(d);
    return count;
}

/* ------------------------------------------------------------------------ */
/* Fuzz regressions                                                          */

/* tests/fuzz/regressions/safetensors/: whole checkpoint files. */
static void regress_checkpoint(const char *path, const unsigned char *buf, size_t n)
{
    hs_model *m = NULL;
    hs_meta meta;
    hs_error err = {0};
    hs_status st = hs_checkpoint_parse(buf, n, path, &m, &meta, NULL, &err);
    assert_one_line_error(st, &err, path);
    assert_null(m);
    assert_null(meta.vocab);
    assert_null(meta.task);
    assert_null(meta.train);
    hs_st_file f;
    st = hs_safetensors_parse(buf, n, path, &f, &err);
    if (st == HS_OK)
        hs_st_file_free(&f);
    else
        assert_one_line_error(st, &err, path);
}

/* tests/fuzz/regressions/config/: fuzz_config inputs (config JSON, optional
 * NUL + headscope_config JSON). */
static void regress_config(const char *path, const unsigned char *buf, size_t n)
{
    char *text = malloc(n + 2);
    assert_non_null(text);
    memcpy(text, buf, n);
    text[n] = text[n + 1] = '\0';
    size_t first = strlen(text);
    const char *hs = first < n ? text + first + 1 : NULL;
    hs_config c;
    hs_error err = {0};
    hs_status st = hs_checkpoint_config_parse(path, text, hs, &c, &err);
    if (st == HS_OK) st = hs_config_validate(&c, &err);
    assert_one_line_error(st, &err, path);
    free(text);
}

/* tests/fuzz/regressions/tokenizer/: fuzz_tokenizer inputs (byte 0: n_ctx &
 * 31, top bit = also a vocab JSON; the rest: the sentence). */
static void regress_tokenizer(const char *path, const unsigned char *buf, size_t n)
{
    if (n == 0) return;
    hs_tokenizer *v = NULL;
    hs_error err = {0};
    assert_int_equal(hs_winograd_vocab(&v, &err), HS_OK);
    char *s = malloc(n);
    assert_non_null(s);
    memcpy(s, buf + 1, n - 1);
    s[n - 1] = '\0';
    hs_tokens t;
    hs_status st = hs_tok_encode(v, s, buf[0] & 31u, &t, &err);
    if (st != HS_OK) assert_one_line_error(st, &err, path);
    hs_tokens_free(&t);
    if (buf[0] & 0x80u) {
        hs_tokenizer *w = NULL;
        st = hs_tokenizer_from_json(s, &w, &err);
        if (st != HS_OK)
            assert_one_line_error(st, &err, path);
        else
            hs_tokenizer_destroy(w);
    }
    free(s);
    hs_tokenizer_destroy(v);
}

/* tests/fuzz/regressions/tokenizer_json/: fuzz_tokenizer_json inputs (byte 0
 * even: the rest is a tokenizer.json; odd: vocab.json and merges.txt, not
 * kept here yet). */
static void regress_tokenizer_json(const char *path, const unsigned char *buf, size_t n)
{
    if (n < 3 || (buf[0] & 1u)) return;
    hs_tokenizer *t = NULL;
    hs_error err = {0};
    hs_status st = hs_tokenizer_from_hf_json((const char *)buf + 1, n - 1, "tokenizer.json", &t, &err);
    if (st != HS_OK)
        assert_one_line_error(st, &err, path);
    else
        hs_tokenizer_destroy(t);
}

static void fuzz_regressions_give_clean_errors(void **state)
{
    (void)state;
    int n = for_each_file("fuzz/regressions/safetensors", regress_checkpoint);
    n += for_each_file("fuzz/regressions/config", regress_config);
    n += for_each_file("fuzz/regressions/tokenizer", regress_tokenizer);
    n += for_each_file("fuzz/regressions/tokenizer_json", regress_tokenizer_json);
    printf("fuzz regressions checked: %d\n", n);
    assert_true(n >= 1); /* the config newline case at least */
}

/* A message echoed from a file keeps to one line (the fuzz_config find, by
 * hand): a newline inside a string value and inside a field name. */
static void config_errors_echo_no_control_bytes(void **state)
{
    (void)state;
    hs_config c;
    hs_error err = {0};
    const char *tl = "{\"n_layers\": 1, \"d_model\": 8, \"n_ctx\": 6, \"d_head\": 4, "
                     "\"n_heads\": 2, \"d_mlp\": 16, \"act_fn\": \"gelu\", \"d_vocab\": 5}";
    hs_status st = hs_checkpoint_config_parse("x", tl, "{\"attn\": \"soft\\nmax\\u001b[31m\"}", &c,
                                              &err);
    assert_one_line_error(st, &err, "attn value");
    assert_non_null(strstr(err.msg, "soft?max?[31m"));
    st = hs_checkpoint_config_parse("x", tl, "{\"bi\\nas\": true}", &c, &err);
    assert_one_line_error(st, &err, "field name");
    assert_non_null(strstr(err.msg, "'bi?as'"));
    st = hs_checkpoint_config_parse("x", "{\"act_fn\": \"ge\\r\\nlu\"}", NULL, &c, &err);
    assert_one_line_error(st, &err, "act_fn");
}

/* ------------------------------------------------------------------------ */
/* Training guards                                                           */

#define V 8
#define T 6

static hs_model *tiny_model(void)
{
    hs_config cfg = hs_config_default();
    cfg.n_layers = 1;
    cfg.d_model = 8;
    cfg.n_heads = 2;
    cfg.d_head = 4;
    cfg.d_mlp = 16;
    cfg.n_ctx = T;
    cfg.d_vocab = V;
    cfg.seed = 3;
    hs_model *m = NULL;
    hs_error err;
    if (hs_model_create(&cfg, &m, &err) != HS_OK) fail_msg("%s", err.msg);
    hs_model_init(m);
    return m;
}

/* Every token id appears in every batch, so every row of W_E is used. */
static void cyclic_batch(void *ctx, int B, int Tn, int *tokens, int *targets)
{
    int *calls = ctx;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < Tn; t++) {
            tokens[b * Tn + t] = (b + t + *calls) % V;
            targets[b * Tn + t] = (b + t + *calls + 1) % V;
        }
    (*calls)++;
}

typedef struct {
    int poison_after;  /* after this step, poison the weights */
    float poison;      /* NAN or INFINITY */
    const char *ckpt;  /* saved right before poisoning */
    float *saved;      /* copy of the weights at that save */
    int last_step;
} guard_ctx;

static hs_status poison_step(void *ctx, hs_model *m, const hs_train_info *in, hs_error *err)
{
    guard_ctx *g = ctx;
    g->last_step = in->step;
    if (in->step == g->poison_after) {
        hs_status s = hs_checkpoint_save(m, NULL, g->ckpt, err);
        if (s != HS_OK) return s;
        g->saved = malloc(m->n_params * sizeof(float));
        if (!g->saved) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
        memcpy(g->saved, m->param_mem, m->n_params * sizeof(float));
        /* the whole embedding: every sequence reads a poisoned row */
        const hs_tensor_info *we = &m->tensors[0];
        for (size_t i = 0; i < we->numel; i++) m->param_mem[we->offset + i] = g->poison;
    }
    return HS_OK;
}

static void run_poisoned(float poison, const char *file)
{
    hs_model *m = tiny_model();
    hs_train_opts o = hs_train_opts_default();
    o.steps = 20;
    o.batch = 4;
    o.seq_len = T;
    char ckpt[768];
    snprintf(ckpt, sizeof ckpt, "%s/%s", g_tmp, file);
    guard_ctx g = {7, poison, ckpt, NULL, 0};
    int calls = 0;
    hs_error err = {0};
    hs_status st = hs_train(m, &o, cyclic_batch, &calls, poison_step, &g, &err);
    assert_int_equal(st, HS_ERR_NUMERIC);
    assert_one_line_error(st, &err, "poisoned training");
    /* stopped at step 8, the first forward with the poisoned weights */
    if (strstr(err.msg, "at step 8") == NULL) fail_msg("message does not name step 8: %s", err.msg);
    if (strstr(err.msg, "NaN") == NULL && strstr(err.msg, "Inf") == NULL)
        fail_msg("message does not say NaN or Inf: %s", err.msg);
    assert_int_equal(g.last_step, 7); /* no step after the poison completed */

    /* the last good checkpoint survives with the weights it had */
    hs_model *back = NULL;
    st = hs_checkpoint_load(ckpt, &back, NULL, NULL, &err);
    if (st != HS_OK) fail_msg("last good checkpoint does not load: %s", err.msg);
    assert_int_equal(back->n_params, m->n_params);
    assert_memory_equal(back->param_mem, g.saved, m->n_params * sizeof(float));
    for (size_t i = 0; i < back->n_params; i++) assert_true(isfinite(back->param_mem[i]));
    hs_model_destroy(back);
    free(g.saved);
    hs_model_destroy(m);
}

static void nan_weight_stops_training_naming_the_step(void **state)
{
    (void)state;
    run_poisoned(NAN, "nan_guard.safetensors");
}

static void inf_weight_stops_training_naming_the_step(void **state)
{
    (void)state;
    run_poisoned(INFINITY, "inf_guard.safetensors");
}

static void nonfinite_gradient_stops_adamw_before_any_update(void **state)
{
    (void)state;
    const float bad[2] = {NAN, INFINITY};
    for (int k = 0; k < 2; k++) {
        hs_model *m = tiny_model();
        hs_error err = {0};
        assert_int_equal(hs_model_alloc_train(m, &err), HS_OK);
        hs_zero_grad(m);
        for (size_t i = 0; i < m->n_params; i++) m->grad_mem[i] = 1e-3f;
        m->grad_mem[m->n_params / 2] = bad[k];
        float *before = malloc(m->n_params * sizeof(float));
        assert_non_null(before);
        memcpy(before, m->param_mem, m->n_params * sizeof(float));
        hs_adamw opt = hs_adamw_default();
        double gn = 0.0;
        hs_status st = hs_adamw_step(m, &opt, &gn, &err);
        assert_int_equal(st, HS_ERR_NUMERIC);
        assert_one_line_error(st, &err, "non-finite gradient");
        assert_non_null(strstr(err.msg, k == 0 ? "NaN" : "Inf"));
        assert_false(isfinite(gn));
        assert_memory_equal(before, m->param_mem, m->n_params * sizeof(float));
        free(before);
        hs_model_destroy(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fuzz_regressions_give_clean_errors),
        cmocka_unit_test(config_errors_echo_no_control_bytes),
        cmocka_unit_test(nan_weight_stops_training_naming_the_step),
        cmocka_unit_test(inf_weight_stops_training_naming_the_step),
        cmocka_unit_test(nonfinite_gradient_stops_adamw_before_any_update),
    };
    return cmocka_run_group_tests(tests, setup_tmp, NULL);
}
