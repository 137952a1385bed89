/*
 * tests/test_checkpoint_safetensors.c -- the generic safetensors reader and
 * writer (model/safetensors.c), without a model: round trips of odd shapes and
 * metadata, writer refusals, the reader's memory entry point, the skip
 * predicate, and the header padding rules.
 *
 * Working directory: tests/. Scratch: $HS_TEST_TMP.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/checkpoint_internal.h"
#include "model/model.h"
#include "model/checkpoint.h"

static char g_path[600];

static int setup(void **state)
{
    (void)state;
    const char *t = getenv("HS_TEST_TMP");
    if (!t || !t[0]) t = "/tmp";
    mkdir(t, 0777);
    snprintf(g_path, sizeof g_path, "%s/st.%ld.safetensors", t, (long)getpid());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(g_path);
    return 0;
}

static void roundtrip_odd_shapes_and_metadata(void **state)
{
    (void)state;
    float a[24], s = 3.5f, one = -0.0f;
    for (int i = 0; i < 24; i++) a[i] = (float)i * 0.25f - 2.0f;
    a[5] = 1e-38f;  /* subnormal-adjacent values survive */
    a[6] = -3.4e38f;
    const hs_st_tensor ts[] = {
        {"four_d", 4, {1, 2, 3, 4}, a},
        {"scalar", 0, {0}, &s},
        {"empty", 2, {0, 7}, NULL},
        {"neg_zero", 1, {1}, &one},
    };
    const char *keys[] = {"k1", "unicode"};
    const char *vals[] = {"{\"json\": [1, 2]}", "caf\xc3\xa9 \"quoted\" \\ back"};
    hs_error err;
    assert_int_equal(hs_safetensors_write(g_path, ts, 4, keys, vals, 2, &err), HS_OK);
    hs_st_file f;
    hs_status st = hs_safetensors_read(g_path, &f, &err);
    if (st != HS_OK) fail_msg("%s", err.msg);
    assert_int_equal(f.n, 4);
    int i = hs_st_find(&f, "four_d");
    assert_int_equal(i, 0);
    assert_int_equal(f.ndim[i], 4);
    assert_int_equal(f.shape[i][3], 4);
    assert_int_equal(f.numel[i], 24);
    assert_memory_equal(f.data[i], a, sizeof a);
    i = hs_st_find(&f, "scalar");
    assert_int_equal(f.ndim[i], 0);
    assert_int_equal(f.numel[i], 1);
    assert_true(f.data[i][0] == 3.5f);
    i = hs_st_find(&f, "empty");
    assert_int_equal(f.numel[i], 0);
    assert_int_equal(f.shape[i][1], 7);
    i = hs_st_find(&f, "neg_zero");
    assert_true(signbit(f.data[i][0]));
    assert_int_equal(hs_st_find(&f, "nope"), -1);
    assert_string_equal(hs_st_meta(&f, "k1"), vals[0]);
    assert_string_equal(hs_st_meta(&f, "unicode"), vals[1]);
    assert_null(hs_st_meta(&f, "k2"));
    hs_st_file_free(&f);
    hs_st_file_free(&f); /* twice is fine: zeroed */
    hs_st_file_free(NULL);
}

static void writer_refuses_bad_input(void **state)
{
    (void)state;
    float a[2] = {1, 2}, nan2[2] = {1, NAN};
    unlink(g_path);
    hs_error err;
    hs_st_tensor dup[] = {{"x", 1, {2}, a}, {"x", 1, {2}, a}};
    assert_int_equal(hs_safetensors_write(g_path, dup, 2, NULL, NULL, 0, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "given twice"));
    hs_st_tensor five[] = {{"x", 5, {1, 1, 1, 1}, a}};
    assert_int_equal(hs_safetensors_write(g_path, five, 1, NULL, NULL, 0, &err), HS_ERR_INPUT);
    hs_st_tensor neg[] = {{"x", 1, {-2}, a}};
    assert_int_equal(hs_safetensors_write(g_path, neg, 1, NULL, NULL, 0, &err), HS_ERR_INPUT);
    hs_st_tensor reserved[] = {{"__metadata__", 1, {2}, a}};
    assert_int_equal(hs_safetensors_write(g_path, reserved, 1, NULL, NULL, 0, &err), HS_ERR_INPUT);
    hs_st_tensor nan[] = {{"w", 1, {2}, nan2}};
    assert_int_equal(hs_safetensors_write(g_path, nan, 1, NULL, NULL, 0, &err), HS_ERR_NUMERIC);
    assert_non_null(strstr(err.msg, "tensor 'w' has a non-finite value at index 1"));
    const char *k[] = {"a", "a"}, *v[] = {"1", "2"};
    hs_st_tensor ok[] = {{"w", 1, {2}, a}};
    assert_int_equal(hs_safetensors_write(g_path, ok, 1, k, v, 2, &err), HS_ERR_INPUT);
    assert_int_equal(access(g_path, F_OK), -1); /* nothing written */
}

/* Builds "len | header | data" in buf; returns the size. */
static size_t build(unsigned char *buf, const char *header, size_t pad, const void *data,
                    size_t nd)
{
    size_t hl = strlen(header);
    uint64_t n = hl + pad;
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(n >> (8 * i));
    memcpy(buf + 8, header, hl);
    memset(buf + 8 + hl, ' ', pad);
    if (nd > 0) memcpy(buf + 8 + hl + pad, data, nd);
    return 8 + hl + pad + nd;
}

static void reader_accepts_unpadded_and_padded_headers(void **state)
{
    (void)state;
    unsigned char buf[512];
    const float v[2] = {1.5f, -2.0f}; /* host order; the test host is little-endian */
    const char *h = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    hs_error err;
    hs_st_file f;
    for (size_t pad = 0; pad < 20; pad += 3) {
        size_t n = build(buf, h, pad, v, sizeof v);
        hs_status s = hs_safetensors_parse(buf, n, "mem", &f, &err);
        if (s != HS_OK) fail_msg("pad %zu: %s", pad, err.msg);
        assert_true(f.data[0][1] == -2.0f);
        hs_st_file_free(&f);
    }
    /* leading whitespace / other padding is not the format's */
    size_t n = build(buf, "\n{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 0,
                     v, sizeof v);
    assert_int_equal(hs_safetensors_parse(buf, n, "mem", &f, &err), HS_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "header has bytes other than"));
    /* no tensors at all is a valid (empty) file */
    n = build(buf, "{}", 6, NULL, 0);
    assert_int_equal(hs_safetensors_parse(buf, n, "mem", &f, &err), HS_OK);
    assert_int_equal(f.n, 0);
    hs_st_file_free(&f);
    /* a zero-size tensor between others */
    const char *h2 = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                     "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]},"
                     "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}";
    n = build(buf, h2, 0, v, sizeof v);
    assert_int_equal(hs_safetensors_parse(buf, n, "mem", &f, &err), HS_OK);
    assert_int_equal(f.n, 3);
    hs_st_file_free(&f);
}

static int skip_bool(const char *name, void *ctx)
{
    (void)ctx;
    return strcmp(name, "mask") == 0;
}

static void skip_predicate_validates_but_does_not_decode(void **state)
{
    (void)state;
    unsigned char buf[512];
    const unsigned char data[12] = {0, 0, 0xc0, 0x3f, 1, 0, 1, 1, 0xff, 0xff, 0xff, 0xff};
    const char *h = "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                    "\"mask\":{\"dtype\":\"BOOL\",\"shape\":[2,2],\"data_offsets\":[4,8]},"
                    "\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}";
    size_t n = build(buf, h, 0, data, sizeof data);
    hs_error err;
    hs_st_file f;
    int skipped = -1;
    /* without the predicate BOOL is refused */
    assert_int_equal(hs_safetensors_parse(buf, n, "mem", &f, &err), HS_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "tensor 'mask' has dtype BOOL; only F32 is supported"));
    /* with it, mask is skipped; x is NaN (0xffffffff) and still checked */
    assert_int_equal(hs_safetensors_parse_ex(buf, n, "mem", skip_bool, NULL, &f, &skipped, &err),
                     HS_ERR_NUMERIC);
    assert_non_null(strstr(err.msg, "tensor 'x' has a non-finite value (NaN) at index 0"));
    assert_int_equal(skipped, 0);
    unsigned char data2[12];
    memcpy(data2, data, 8);
    memset(data2 + 8, 0, 4);
    n = build(buf, h, 0, data2, sizeof data2);
    assert_int_equal(hs_safetensors_parse_ex(buf, n, "mem", skip_bool, NULL, &f, &skipped, &err),
                     HS_OK);
    assert_int_equal(skipped, 1);
    assert_int_equal(f.n, 2);
    assert_true(f.data[0][0] == 1.5f);
    assert_int_equal(hs_st_find(&f, "mask"), -1);
    hs_st_file_free(&f);
}

static void read_errors_name_the_path(void **state)
{
    (void)state;
    hs_st_file f;
    hs_error err;
    assert_int_equal(hs_safetensors_read("/nonexistent/x.safetensors", &f, &err), HS_ERR_IO);
    assert_non_null(strstr(err.msg, "/nonexistent/x.safetensors"));
    assert_int_equal(f.n, 0);
    FILE *fp = fopen(g_path, "wb");
    assert_non_null(fp);
    fputs("abc", fp);
    fclose(fp);
    assert_int_equal(hs_safetensors_read(g_path, &f, &err), HS_ERR_FORMAT);
    assert_non_null(strstr(err.msg, g_path));
    assert_non_null(strstr(err.msg, "file is truncated: 3 bytes"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(roundtrip_odd_shapes_and_metadata),
        cmocka_unit_test(writer_refuses_bad_input),
        cmocka_unit_test(reader_accepts_unpadded_and_padded_headers),
        cmocka_unit_test(skip_predicate_validates_but_does_not_decode),
        cmocka_unit_test(read_errors_name_the_path),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
