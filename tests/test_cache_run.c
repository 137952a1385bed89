/*
 * tests/test_cache_run.c -- hs_cache_run (`headscope cache`) on the committed
 * small checkpoint (tests/checkpoint/circuit_tiny.safetensors: 2 layers, 4
 * heads), the file read back with the library's own safetensors reader:
 *   - every point in forward order with its batched TL shape, hook_tokens the
 *     ids; hook_pattern is the softmax of hook_attn_scores (the mask written
 *     as -FLT_MAX) and hook_z is pattern @ v, both recomputed in float64;
 *   - a set of 40 prompts (two engine chunks merged) gives the same bytes on
 *     1 and 2 threads, and its rows 1 and 33 are bit-identical to runs of
 *     those prompts alone;
 *   - --names keeps exactly the matched points (and hook_tokens);
 *   - the output policy: an existing file without force refused, with force
 *     a file headscope did not write (or one changed since) refused and left
 *     as it was, a cache it wrote replaced; a pattern matching nothing named.
 * Working directory: tests/. Scratch: $HS_TEST_TMP.
 */
#include <float.h>
#include <math.h>
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

#include "experiments/experiments.h"
#include "model/checkpoint.h"

static hs_model *g_m;
static hs_tokenizer *g_v;
static char g_tmp[512];

static const char *tmp(const char *name)
{
    static char buf[4][600];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", g_tmp, name);
    return buf[k];
}

static int setup(void **state)
{
    (void)state;
    hs_error err = {0};
    hs_meta meta = {0};
    if (hs_checkpoint_load("checkpoint/circuit_tiny.safetensors", &g_m, &meta, NULL, &err) != HS_OK ||
        hs_tokenizer_from_json(meta.vocab, &g_v, &err) != HS_OK) {
        fprintf(stderr, "setup: %s\n", err.msg);
        return -1;
    }
    hs_meta_free(&meta);
    const char *t = getenv("HS_TEST_TMP");
    snprintf(g_tmp, sizeof g_tmp, "%s/cache_run.%ld", t && t[0] ? t : "/tmp", (long)getpid());
    mkdir(t && t[0] ? t : "/tmp", 0777);
    mkdir(g_tmp, 0777);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    static const char *const files[] = {"one.safetensors", "set.jsonl", "set1.safetensors", "set2.safetensors",
                                        "row.safetensors", "names.safetensors", "policy.safetensors"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) unlink(tmp(files[i]));
    rmdir(g_tmp);
    hs_tokenizer_destroy(g_v);
    hs_model_destroy(g_m);
    return 0;
}

static const char *const ADJ[2] = {"tired", "wet"};
#define SENT "the animal did not cross the street because it was too %s . it"

/* Runs hs_cache_run; returns its status, the message in err. */
static hs_status run(const char *sentence, const char *data, const char *const *names, int n_names,
                     const char *out, int force, int threads, hs_cache_report *r, hs_error *err)
{
    hs_pool *pool = NULL;
    assert_int_equal(hs_pool_create(threads, &pool, err), HS_OK);
    hs_cache_opts o = {sentence, data, names, n_names, out, force, "circuit_tiny"};
    hs_status st = hs_cache_run(g_m, g_v, pool, &o, NULL, r, err);
    hs_pool_destroy(pool);
    return st;
}

static void read_back(const char *path, hs_st_file *f)
{
    hs_error err = {0};
    if (hs_safetensors_read(path, f, &err) != HS_OK) fail_msg("%s", err.msg);
}

static const float *tensor(const hs_st_file *f, const char *name)
{
    int i = hs_st_find(f, name);
    if (i < 0) fail_msg("no tensor %s", name);
    return f->data[i];
}

static void one_sentence_holds_every_point_with_tl_shapes_and_values(void **state)
{
    (void)state;
    char s[128];
    snprintf(s, sizeof s, SENT, ADJ[0]);
    hs_cache_report r;
    hs_error err = {0};
    const char *out = tmp("one.safetensors");
    unlink(out);
    assert_int_equal(run(s, NULL, NULL, 0, out, 0, 1, &r, &err), HS_OK);
    const int T = 14, H = g_m->cfg.n_heads, dh = g_m->cfg.d_head;
    assert_int_equal(r.batch, 1);
    assert_int_equal(r.pos, T);
    hs_st_file f;
    read_back(out, &f);
    assert_int_equal(f.n, r.n_tensors);
    assert_int_equal(f.n, 53); /* 2 + 1 + 2 x 23 per block + 4 final: docs/HOOKS.md's table */
    assert_string_equal(f.names[0], "hook_tokens");
    assert_string_equal(f.names[f.n - 1], "logits");
    assert_string_equal(hs_st_meta(&f, "batch"), "1");
    const float *tok = tensor(&f, "hook_tokens");
    int ids[14], n = 0;
    hs_tokens ta = {0};
    assert_int_equal(hs_tok_encode(g_v, s, 0, &ta, &err), HS_OK);
    for (size_t i = 0; i < ta.n && n < 14; i++) ids[n++] = ta.ids[i];
    hs_tokens_free(&ta);
    assert_int_equal(n, T);
    for (int i = 0; i < T; i++) assert_true(tok[i] == (float)ids[i]);
    for (int l = 0; l < 2; l++) {
        char nm[64];
        snprintf(nm, sizeof nm, "blocks.%d.attn.hook_pattern", l);
        int k = hs_st_find(&f, nm);
        assert_true(k >= 0 && f.ndim[k] == 4);
        assert_true(f.shape[k][0] == 1 && f.shape[k][1] == H && f.shape[k][2] == T && f.shape[k][3] == T);
        const float *pat = f.data[k];
        snprintf(nm, sizeof nm, "blocks.%d.attn.hook_attn_scores", l);
        const float *sc = tensor(&f, nm);
        snprintf(nm, sizeof nm, "blocks.%d.attn.hook_v", l);
        const float *v = tensor(&f, nm);
        snprintf(nm, sizeof nm, "blocks.%d.attn.hook_z", l);
        const float *z = tensor(&f, nm);
        for (int h = 0; h < H; h++)
            for (int q = 0; q < T; q++) {
                const float *row = sc + ((size_t)h * T + q) * T;
                double mx = -INFINITY, Z = 0;
                for (int k2 = 0; k2 <= q; k2++) mx = row[k2] > mx ? row[k2] : mx;
                for (int k2 = 0; k2 <= q; k2++) Z += exp((double)row[k2] - mx);
                for (int k2 = 0; k2 < T; k2++) {
                    if (k2 > q) assert_true(row[k2] == -FLT_MAX); /* the mask */
                    double want = k2 <= q ? exp((double)row[k2] - mx) / Z : 0.0;
                    assert_true(fabs(pat[((size_t)h * T + q) * T + k2] - want) < 1e-6);
                }
                for (int d = 0; d < dh; d++) {
                    double zz = 0;
                    for (int k2 = 0; k2 < T; k2++)
                        zz += (double)pat[((size_t)h * T + q) * T + k2] * v[((size_t)k2 * H + h) * dh + d];
                    assert_true(fabs(z[((size_t)q * H + h) * dh + d] - zz) < 1e-5);
                }
            }
    }
    hs_st_file_free(&f);
}

static void a_set_is_its_prompts_alone_on_any_thread_count(void **state)
{
    (void)state;
    const char *data = tmp("set.jsonl");
    FILE *fp = fopen(data, "w");
    assert_non_null(fp);
    for (int i = 0; i < 40; i++) {
        fprintf(fp, "{\"prompt\": \"" SENT "\"}\n", ADJ[i % 2]);
    }
    fclose(fp);
    hs_cache_report r;
    hs_error err = {0};
    const char *a = tmp("set1.safetensors"), *b = tmp("set2.safetensors");
    unlink(a);
    unlink(b);
    assert_int_equal(run(NULL, data, NULL, 0, a, 0, 1, &r, &err), HS_OK);
    assert_int_equal(r.batch, 40);
    assert_int_equal(run(NULL, data, NULL, 0, b, 0, 2, &r, &err), HS_OK);
    unsigned char *x, *y;
    size_t nx, ny;
    assert_int_equal(hs_read_file(a, &x, &nx, &err), HS_OK);
    assert_int_equal(hs_read_file(b, &y, &ny, &err), HS_OK);
    assert_true(nx == ny && memcmp(x, y, nx) == 0);
    free(x);
    free(y);
    hs_st_file set;
    read_back(a, &set);
    for (int row = 1; row <= 33; row += 32) { /* chunk 0 and chunk 1 */
        char s[128];
        snprintf(s, sizeof s, SENT, ADJ[row % 2]);
        const char *one = tmp("row.safetensors");
        unlink(one);
        assert_int_equal(run(s, NULL, NULL, 0, one, 0, 1, &r, &err), HS_OK);
        hs_st_file f;
        read_back(one, &f);
        assert_int_equal(f.n, set.n);
        for (int i = 0; i < f.n; i++) {
            assert_string_equal(f.names[i], set.names[i]);
            assert_true(set.shape[i][0] == 40);
            assert_memory_equal(f.data[i], set.data[i] + (size_t)row * f.numel[i], f.numel[i] * sizeof(float));
        }
        hs_st_file_free(&f);
    }
    hs_st_file_free(&set);
}

static void names_keep_the_matched_points_and_the_tokens(void **state)
{
    (void)state;
    const char *const names[] = {"blocks.*.attn.hook_z", "ln_final.hook_scale"};
    hs_cache_report r;
    hs_error err = {0};
    const char *out = tmp("names.safetensors");
    unlink(out);
    assert_int_equal(run("the animal did not", NULL, names, 2, out, 0, 1, &r, &err), HS_OK);
    hs_st_file f;
    read_back(out, &f);
    assert_int_equal(f.n, 4);
    assert_string_equal(f.names[0], "hook_tokens");
    assert_string_equal(f.names[1], "blocks.0.attn.hook_z");
    assert_string_equal(f.names[2], "blocks.1.attn.hook_z");
    assert_string_equal(f.names[3], "ln_final.hook_scale");
    assert_true(f.ndim[1] == 4 && f.shape[1][0] == 1 && f.shape[1][1] == 4 && f.shape[1][2] == 4 &&
                f.shape[1][3] == 8);
    hs_st_file_free(&f);
    const char *const bad[] = {"blocks.*.attn.hook_zz"};
    unlink(out);
    assert_int_equal(run("the animal did not", NULL, bad, 1, out, 0, 1, &r, &err), HS_ERR_INPUT);
    assert_string_equal(err.msg, "cache filter 'blocks.*.attn.hook_zz' matches no hook point of this model "
                                 "(docs/HOOKS.md lists them and when each exists)");
    assert_int_equal(access(out, F_OK), -1); /* nothing written */
}

static void an_existing_out_is_replaced_only_when_headscope_wrote_it_unchanged(void **state)
{
    (void)state;
    hs_cache_report r;
    hs_error err = {0};
    const char *out = tmp("policy.safetensors");
    char want[700];
    unlink(out);
    assert_int_equal(run("the animal did not", NULL, NULL, 0, out, 0, 1, &r, &err), HS_OK);
    assert_int_equal(r.replaced, 0);
    assert_int_equal(run("the animal did not", NULL, NULL, 0, out, 0, 1, &r, &err), HS_ERR_INPUT);
    snprintf(want, sizeof want, "--out %s already exists; use --force to replace it", out);
    assert_string_equal(err.msg, want);
    assert_int_equal(run("the animal did", NULL, NULL, 0, out, 1, 1, &r, &err), HS_OK);
    assert_int_equal(r.replaced, 1);
    assert_int_equal(r.pos, 3);
    /* one data byte changed since: refused, the file as it was */
    unsigned char *buf;
    size_t n;
    assert_int_equal(hs_read_file(out, &buf, &n, &err), HS_OK);
    buf[n - 1] ^= 1;
    assert_int_equal(hs_write_file_atomic(out, buf, n, &err), HS_OK);
    snprintf(want, sizeof want, "--out %s is not an activation cache headscope wrote, or it changed since; "
                                "refusing to replace it", out);
    assert_int_equal(run("the animal did not", NULL, NULL, 0, out, 1, 1, &r, &err), HS_ERR_INPUT);
    assert_string_equal(err.msg, want);
    unsigned char *after;
    size_t na;
    assert_int_equal(hs_read_file(out, &after, &na, &err), HS_OK);
    assert_true(na == n && memcmp(after, buf, n) == 0);
    free(after);
    free(buf);
    /* a checkpoint (a safetensors file headscope wrote, not a cache) */
    assert_int_equal(hs_read_file("checkpoint/circuit_tiny.safetensors", &buf, &n, &err), HS_OK);
    assert_int_equal(hs_write_file_atomic(out, buf, n, &err), HS_OK);
    free(buf);
    assert_int_equal(run("the animal did not", NULL, NULL, 0, out, 1, 1, &r, &err), HS_ERR_INPUT);
    assert_string_equal(err.msg, want);
    unlink(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_sentence_holds_every_point_with_tl_shapes_and_values),
        cmocka_unit_test(a_set_is_its_prompts_alone_on_any_thread_count),
        cmocka_unit_test(names_keep_the_matched_points_and_the_tokens),
        cmocka_unit_test(an_existing_out_is_replaced_only_when_headscope_wrote_it_unchanged),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
