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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/common.h"

/* A sanitizer build (scripts/test.sh's asan stage) compares every THIN-th of
 * the floats float_format_matches_the_printf_search compares in the plain
 * build (THIN 8): the same format code on the same kinds of float (every
 * exponent range, digit count and end case below), at an eighth of the 3x
 * cost (the plain build's run of this test compares every one of them). */
#if defined(__SANITIZE_ADDRESS__)
#define THIN 8
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define THIN 8
#endif
#endif
#ifndef THIN
#define THIN 1
#endif

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

/* hs_utf8_lossy_dup against Python's bytes.decode("utf-8", errors="replace")
 * (the expected strings are its output): one U+FFFD per maximal subpart */
static void lossy_copy_replaces_as_python_does(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"ch\xD5one", "ch\xEF\xBF\xBDone"},
        {"\xE2\x82", "\xEF\xBF\xBD"},
        {"a\xE2\x82" "b\xF0\x9F\x98", "a\xEF\xBF\xBD" "b\xEF\xBF\xBD"},
        {"\xED\xA0\x80x", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDx"},
        {"\xC0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"\xF4\x90\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"ok \xC3\xA9", "ok \xC3\xA9"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *s = hs_utf8_lossy_dup(cases[i][0]);
        assert_non_null(s);
        assert_string_equal(s, cases[i][1]);
        assert_true(hs_utf8_valid(s));
        free(s);
    }
}

/* hs_buf_fixed: printf's fixed decimals, no sign on a value that rounds to
 * zero ("-0.00" was in patch tables), padded alike */
static void fixed_decimals_have_no_signed_zero(void **state)
{
    (void)state;
    hs_buf b = {0};
    hs_buf_fixed(&b, -0.004, 6, 2, 1);
    hs_buf_fixed(&b, 0.004, 6, 2, 1);
    hs_buf_fixed(&b, -0.0, 6, 2, 1);
    hs_buf_fixed(&b, -0.005001, 6, 2, 1);
    hs_buf_fixed(&b, 0.25, 6, 2, 1);
    hs_buf_fixed(&b, -0.0004, 0, 3, 0);
    assert_string_equal(b.s, "  0.00  0.00  0.00 -0.01 +0.250.000");
    hs_buf_free(&b);
    hs_buf_fixed(&b, -1e300, 0, 2, 0); /* a long number whole (HS_FIXED_BUF holds any double) */
    assert_int_equal(b.len, 305); /* "-", 301 digits, ".00" */
    assert_true(strncmp(b.s, "-1000", 5) == 0);
    hs_buf_free(&b);
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

/* The definition hs_fmt_f32 computes without printing: "%.<p>g" for the
 * least p whose text strtod (then the cast to float) reads back as x. */
static const char *ref_fmt_f32(char out[HS_F32_BUF], float x)
{
    for (int p = 1; p <= 9; p++) {
        snprintf(out, HS_F32_BUF, "%.*g", p, (double)x);
        if ((float)strtod(out, NULL) == x) return out;
    }
    return out;
}

/* x through hs_fmt_f32 and hs_f32_shortest against the printf/strtod
 * search; 1 when both agree. */
static int agrees(float x)
{
    char a[HS_F32_BUF], b[HS_F32_BUF];
    ref_fmt_f32(a, x);
    hs_fmt_f32(b, x);
    if (strcmp(a, b) != 0 || hs_f32_shortest(x) != strtod(a, NULL)) {
        uint32_t bits;
        memcpy(&bits, &x, sizeof bits);
        print_error("x = %.9g (bits %08x): printf search '%s', hs_fmt_f32 '%s'\n", (double)x,
                    (unsigned)bits, a, b);
        return 0;
    }
    return 1;
}

/* The exact integer search (1e-9 <= |x| < 1e9) gives printf's text byte for
 * byte: random bit patterns over every exponent, every float of a few whole
 * binades in [0, 1] where attention weights live, decimals of few digits and
 * their float neighbours (the rounding ties and carries: 9.5, 0.995, 1e8),
 * the ends of the range and powers of ten. */
static void float_format_matches_the_printf_search(void **state)
{
    (void)state;
    uint64_t r = 0x9E3779B97F4A7C15ull;
    int bad = 0;
    for (int i = 0; i < 400000 / THIN && bad < 5; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        uint32_t bits = (uint32_t)(r >> 16);
        float x;
        memcpy(&x, &bits, sizeof x);
        if (isfinite(x)) bad += !agrees(x);
    }
    /* every 13th float of [0.5, 1) and every 29th of [2^-7, 2^-6) (all of
       [0.5, 1) and 3 million random ones agreed when this was written) */
    for (uint32_t bits = 0x3F000000u; bits < 0x3F800000u && bad < 5; bits += 13 * THIN) {
        float x;
        memcpy(&x, &bits, sizeof x);
        bad += !agrees(x);
    }
    for (uint32_t bits = 0x3C000000u; bits < 0x3C800000u && bad < 5; bits += 29 * THIN) {
        float x;
        memcpy(&x, &bits, sizeof x);
        bad += !agrees(x);
    }
    /* short decimals k 10^q and the floats either side of them */
    for (int q = -12; q <= 10 && bad < 5; q++)
        for (int k = 1; k < 4000 && bad < 5; k += THIN) {
            float x = (float)((double)k * pow(10.0, q));
            bad += !agrees(x) + !agrees(nextafterf(x, 0)) + !agrees(nextafterf(x, INFINITY)) +
                   !agrees(-x);
        }
    const float ends[] = {1e-9f, 1e9f, 0x1p-31f, 0x1p30f, 999999940.0f, 9.999999e-10f, 0.0f,
                          -0.0f, 0x1p-149f, 0x1.fffffep127f, 16777217.0f};
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++)
        bad += !agrees(ends[i]) + !agrees(nextafterf(ends[i], 0)) + !agrees(nextafterf(ends[i], 1e30f));
    assert_int_equal(bad, 0);
}

/* The text policy's classes (docs/DESIGN.md): one code point per row. */
static void code_points_fall_in_their_classes(void **state)
{
    (void)state;
    static const struct { uint32_t cp; hs_cp_class c; } rows[] = {
        {'a', HS_CP_PLAIN},         {0x00E9, HS_CP_PLAIN},      {0x6F22, HS_CP_PLAIN},
        {0x0007, HS_CP_CONTROL},    {0x007F, HS_CP_CONTROL},    {0x0085, HS_CP_CONTROL},
        {0xFFFE, HS_CP_NONCHAR},    {0xFDD0, HS_CP_NONCHAR},    {0x10FFFF, HS_CP_NONCHAR},
        {0xE000, HS_CP_PRIVATE},    {0xF0000, HS_CP_PRIVATE},   {0x10FFFD, HS_CP_PRIVATE},
        {0x200B, HS_CP_FORMAT},     {0x202E, HS_CP_FORMAT},     {0x2066, HS_CP_FORMAT},
        {0xFEFF, HS_CP_FORMAT},     {0x00AD, HS_CP_FORMAT},     {0xE0001, HS_CP_FORMAT},
        {0x00A0, HS_CP_SPACE},      {0x2028, HS_CP_SPACE},      {0x3000, HS_CP_SPACE},
        {0x00A1, HS_CP_PLAIN},      {0xFFFD, HS_CP_PLAIN},      {0x1F600, HS_CP_PLAIN},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (hs_cp_classify(rows[i].cp) != rows[i].c)
            fail_msg("U+%04X: class %d, expected %d", (unsigned)rows[i].cp,
                     (int)hs_cp_classify(rows[i].cp), (int)rows[i].c);
    }
}

static void visible_text_escapes_what_changes_a_line(void **state)
{
    (void)state;
    char *v = hs_visible_dup("a b\tc\xe2\x80\xae" "d\xef\xbf\xbe" "e\xc3\xa9\xff" "f\xee\x80\x80");
    assert_string_equal(v, "a b<U+0009>c<U+202E>d<U+FFFE>e\xc3\xa9<0xFF>f<U+E000>");
    free(v);
    v = hs_visible_dup("");
    assert_string_equal(v, "");
    free(v);
}

/* Published FNV-1a 64 vectors (draft-eastlake-fnv, test suite). */
static void fnv1a64_matches_the_published_vectors(void **state)
{
    (void)state;
    assert_true(hs_fnv1a64("", 0) == 0xcbf29ce484222325ull);
    assert_true(hs_fnv1a64("a", 1) == 0xaf63dc4c8601ec8cull);
    assert_true(hs_fnv1a64("foobar", 6) == 0x85944171f73967e8ull);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(buf_grows_past_any_fixed_size),
        cmocka_unit_test(utf8_decoder_follows_rfc3629),
        cmocka_unit_test(lossy_copy_replaces_as_python_does),
        cmocka_unit_test(fixed_decimals_have_no_signed_zero),
        cmocka_unit_test(float_format_is_shortest_round_trip),
        cmocka_unit_test(float_format_matches_the_printf_search),
        cmocka_unit_test(code_points_fall_in_their_classes),
        cmocka_unit_test(visible_text_escapes_what_changes_a_line),
        cmocka_unit_test(fnv1a64_matches_the_published_vectors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
