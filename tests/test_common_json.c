/*
 * tests/test_common_json.c -- the one JSON printer (common.h, JSON): its
 * number policy on hand-picked values (digits worked out by hand from the
 * float32 neighbours, numpy's format_float_scientific(unique=True) agrees),
 * and cJSON_Print's and cJSON_PrintUnformatted's layouts byte for byte
 * wherever cJSON writes the same number text (integers below 1e15, floats'
 * shortest doubles, non-finite).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "common/common.h"

static void numbers_follow_the_one_float_format(void **state)
{
    (void)state;
    static const struct {
        double d;
        const char *want;
    } cases[] = {
        {0.1, "0.1"},                 /* (float)0.1 = 0.100000001490116...: "0.1" reads back */
        {1.0 / 3.0, "0.33333334"},    /* float 0.3333333432674408, neighbours 2^-25 apart */
        {0.10416666666666667, "0.104166664"}, /* what eval --json printed as 17 digits */
        {-2.5, "-2.5"},
        {1e-60, "1e-60"},             /* below FLT_MIN: "%.9g" */
        {1.2345678912345e-300, "1.23456789e-300"},
        {1e300, "1e+300"},            /* above FLT_MAX: "%.9g" */
        {9007199254740992.0, "9.007199e+15"}, /* 2^53: not below 2^53, a float; ulp 2^30 */
        {9007199254740991.0, "9007199254740991"}, /* 2^53 - 1: an integer */
        {-0.0, "-0"},
        {0.0, "0"},
        {3.0, "3"},
        {-17.0, "-17"},
        {1e15, "1000000000000000"},
        {1e30, "1e+30"},              /* float 1.0000000150474662e30 */
        {1e10 + 0.5, "10000000000"},  /* not an integer: float 1e10, laid out as %1.15g does */
        {0.1 + 0.2, "0.3"},           /* the double 0.30000000000000004 */
        {16777216.5, "16777216"},     /* float 2^24 (ulp 2): a float that is an integer */
        {1e-5, "1e-05"},
        {NAN, "null"},
        {INFINITY, "null"},
        {-INFINITY, "null"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char t[HS_F32_BUF];
        assert_string_equal(hs_fmt_json_number(t, cases[i].d), cases[i].want);
    }
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, cJSON_CreateNumber(1.0 / 3.0));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(2.0));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(NAN));
    char *s = hs_json_print(a);
    assert_string_equal(s, "[0.33333334, 2, null]");
    free(s);
    cJSON_Delete(a);
}

/* Layout, formatted and unformatted: every item type, nesting of arrays in objects in arrays, empty
 * ones, keys and strings with every escape and byte, and numbers whose text
 * cJSON and the policy share. */
static void layout_is_cjson_print_byte_for_byte(void **state)
{
    (void)state;
    uint64_t r = 0x243F6A8885A308D3ull;
    cJSON *root = cJSON_CreateObject();
    cJSON *nums = cJSON_AddArrayToObject(root, "numbers");
    for (int i = 0; i < 200000; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        double v;
        if (i % 3 == 0) {
            uint32_t b = (uint32_t)(r >> 11);
            float f;
            memcpy(&f, &b, sizeof f);
            /* cJSON writes floats' integers from 1e15 in %g's exponent form */
            int keep = isfinite(f) && fabsf(f) >= 1.17549435e-38f && fabsf(f) < 1e15f;
            v = keep ? hs_f32_shortest(f) : 0.0;
        } else if (i % 3 == 1) {
            v = hs_f32_shortest((float)((double)(r >> 40) / 16777216.0)); /* [0, 1) */
        } else {
            v = (double)((int64_t)(r >> 16) % 1000000000000000);
        }
        cJSON_AddItemToArray(nums, cJSON_CreateNumber(v));
    }
    const double special[] = {0.0, -0.0, 1.0, -1.0, 1e6, 123456789.0, 1e-5, 1e-4, 0.1, 1e300,
                              NAN, INFINITY, -INFINITY, 2147483647.0, 2147483648.0,
                              -2147483649.0, 16777217.0};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        cJSON_AddItemToArray(nums, cJSON_CreateNumber(special[i]));
    char all[256];
    for (int i = 1; i < 256; i++) all[i - 1] = (char)i;
    all[255] = '\0';
    cJSON_AddStringToObject(root, all, all);
    cJSON_AddStringToObject(root, "", "");
    cJSON_AddItemToObject(root, "null", cJSON_CreateNull());
    cJSON_AddItemToObject(root, "t", cJSON_CreateTrue());
    cJSON_AddItemToObject(root, "f", cJSON_CreateFalse());
    cJSON_AddItemToObject(root, "raw", cJSON_CreateRaw("{\"as\": is}"));
    cJSON_AddItemToObject(root, "empty_a", cJSON_CreateArray());
    cJSON_AddItemToObject(root, "empty_o", cJSON_CreateObject());
    cJSON *deep = cJSON_AddArrayToObject(root, "deep");
    for (int i = 0; i < 3; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON *a = cJSON_AddArrayToObject(o, "rows");
        for (int j = 0; j < 3; j++) {
            cJSON *row = cJSON_CreateArray();
            cJSON_AddItemToArray(row, cJSON_CreateNumber(hs_f32_shortest(0.1f * (float)j)));
            cJSON_AddItemToArray(row, cJSON_CreateObject());
            cJSON *in = cJSON_CreateObject();
            cJSON_AddItemToObject(in, "x", cJSON_CreateArray());
            cJSON_AddItemToArray(row, in);
            cJSON_AddItemToArray(a, row);
        }
        cJSON_AddItemToArray(deep, o);
    }
    cJSON_AddItemToArray(deep, cJSON_CreateArray());
    char *want = cJSON_Print(root), *got = hs_json_print(root);
    assert_non_null(want);
    assert_non_null(got);
    size_t k = 0;
    while (want[k] && want[k] == got[k]) k++;
    if (want[k] != got[k])
        print_error("first difference at byte %zu: cJSON '%.40s' vs '%.40s'\n", k, want + k, got + k);
    assert_string_equal(got, want);
    cJSON_free(want);
    free(got);
    want = cJSON_PrintUnformatted(root);
    hs_buf b = {0};
    assert_int_equal(hs_json_print_buf(&b, root, 0), 1);
    assert_non_null(want);
    assert_false(b.oom);
    assert_string_equal(b.s, want);
    cJSON_free(want);
    hs_buf_free(&b);
    /* an empty object at the top; NULL and an unprintable raw item */
    cJSON *e = cJSON_CreateObject();
    want = cJSON_Print(e);
    got = hs_json_print(e);
    assert_string_equal(got, want);
    cJSON_free(want);
    free(got);
    assert_null(hs_json_print(NULL));
    cJSON *bad = cJSON_CreateRaw("x");
    free(bad->valuestring);
    bad->valuestring = NULL;
    cJSON_AddItemToObject(e, "bad", bad);
    assert_null(hs_json_print(e));
    cJSON_Delete(e);
    cJSON_Delete(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(numbers_follow_the_one_float_format),
        cmocka_unit_test(layout_is_cjson_print_byte_for_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
