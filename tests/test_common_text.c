/*
 * tests/test_common_text.c -- the shared text helpers of common/ (common.h,
 * Text): the growable buffer never truncates, the UTF-8 decoder accepts
 * exactly RFC 3629, and the float format is the shortest that reads back.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/common.h"

static void buf_grows_past_any_fixed_size(void **state)
{
    (void)state;
    hs_buf b = {0};
    char word[8];
    for (int i = 0; i < 1000; i++) {
        snprintf(word, sizeof word, "%04d,", i);
        assert_int_equal(hs_buf_printf(&b, "%s", word), 0);
    }
    assert_int_equal(b.len, 5000);
    assert_memory_equal(b.s + 4995, "0999,", 5);
    assert_int_equal(hs_buf_puts(&b, "!"), 0);
    char *s = hs_buf_take(&b);
    assert_non_null(s);
    assert_int_equal(strlen(s), 5001);
    assert_string_equal(s + 4995, "0999,!");
    assert_null(b.s);
    free(s);
    /* an empty buffer hands back "" */
    s = hs_buf_take(&b);
    assert_string_equal(s, "");
    free(s);
    /* a sticky failure: nothing appended, take gives NULL */
    b.oom = 1;
    assert_int_equal(hs_buf_puts(&b, "x"), -1);
    assert_null(hs_buf_take(&b));
}

static void utf8_decoder_follows_rfc3629(void **state)
{
    (void)state;
    uint32_t cp = 0;
    assert_int_equal(hs_utf8_decode((const unsigned char *)"A", 1, &cp), 1);
    assert_int_equal(cp, 0x41);
    assert_int_equal(hs_utf8_decode((const unsigned char *)"\xC2\xA0", 2, &cp), 2);
    assert_int_equal(cp, 0xA0);
    assert_int_equal(hs_utf8_decode((const unsigned char *)"\xEF\xBF\xBE", 3, &cp), 3);
    assert_int_equal(cp, 0xFFFE); /* a noncharacter is valid UTF-8 */
    assert_int_equal(hs_utf8_decode((const unsigned char *)"\xF4\x8F\xBF\xBF", 4, &cp), 4);
    assert_int_equal(cp, 0x10FFFF);
    /* overlong, surrogate, above U+10FFFF, truncated, stray continuation */
    assert_int_equal(hs_utf8_decode((const unsigned char *)"\xC0\x80", 2, &cp), 0);
    assert_int_equal(hs_utf8_decode((const unsigned char *)"\xED\xA0\x80", 3, &cp), 0);
    assert_int_equal(hs_utf8_decode((const unsigned char *)"\xF4\x90\x80\x80", 4, &cp), 0);
    assert_int_equal(hs_utf8_decode((const unsigned char *)"\xE2\x82", 2, &cp), 0);
    assert_int_equal(hs_utf8_decode((const unsigned char *)"\x80", 1, &cp), 0);
    assert_true(hs_utf8_valid("the \xC3\xA9t\xC3\xA9"));
    assert_false(hs_utf8_valid("bad \xFF"));
}

static void float_format_is_shortest_round_trip(void **state)
{
    (void)state;
    char b[HS_F32_BUF];
    assert_string_equal(hs_fmt_f32(b, 1e-5f), "1e-05");
    assert_string_equal(hs_fmt_f32(b, 0.1f), "0.1");
    assert_string_equal(hs_fmt_f32(b, 3.0f), "3");
    assert_string_equal(hs_fmt_f32(b, -2.5f), "-2.5");
    assert_string_equal(hs_fmt_f32(b, 16777217.0f), "16777216"); /* 2^24 + 1 is not a float */
    assert_string_equal(hs_fmt_f32(b, 0.33333334f), "0.33333334");
    assert_string_equal(hs_fmt_f32(b, NAN), "nan");
    assert_string_equal(hs_fmt_f32(b, -INFINITY), "-inf");
    /* every text reads back as the same float, over a spread of magnitudes */
    uint32_t bits = 0x00800000u; /* smallest normal */
    for (int i = 0; i < 20000; i++, bits += 0x0003F0A1u) {
        float x;
        memcpy(&x, &bits, sizeof x);
        if (!isfinite(x)) break;
        assert_true((float)strtod(hs_fmt_f32(b, x), NULL) == x);
        assert_true((float)hs_f32_shortest(x) == x);
    }
    assert_true(hs_f32_shortest(1e-5f) == 1e-05);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(buf_grows_past_any_fixed_size),
        cmocka_unit_test(utf8_decoder_follows_rfc3629),
        cmocka_unit_test(float_format_is_shortest_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
