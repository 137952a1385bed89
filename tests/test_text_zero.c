/*
 * tests/test_text_zero.c -- no signed zero in a text line: every one-line
 * summary that rounds a float to fixed decimals (patch's and ablate's clean
 * line, dla's sum, faithfulness's m(M) line, viz's token rows) goes through
 * hs_fmt_fixed / hs_buf_fixed, so a value that rounds to zero prints "0.000",
 * never "-0.000" or "+0.000" (printf's "%+.3f" writes both).
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
#include "discovery/discovery.h"
#include "experiments/experiments.h"
#include "viz/viz.h"

/* Fails with the text when it holds needle, or lacks want. */
static void check_text(const char *text, const char *want, const char *needle)
{
    if (text == NULL || strstr(text, want) == NULL) fail_msg("no '%s' in:\n%s", want, text ? text : "(null)");
    if (needle && strstr(text, needle)) fail_msg("'%s' in:\n%s", needle, text);
}

static void fixed_text_has_no_signed_zero(void **state)
{
    (void)state;
    char t[HS_FIXED_BUF];
    assert_string_equal(hs_fmt_fixed(t, -0.0004, 3, 1), "0.000");
    assert_string_equal(hs_fmt_fixed(t, 0.0004, 3, 1), "0.000");
    assert_string_equal(hs_fmt_fixed(t, -0.0, 2, 0), "0.00");
    assert_string_equal(hs_fmt_fixed(t, -0.0006, 3, 1), "-0.001");
    assert_string_equal(hs_fmt_fixed(t, 0.0006, 3, 1), "+0.001");
    assert_string_equal(hs_fmt_fixed(t, 0.0006, 3, 0), "0.001");
    assert_string_equal(hs_fmt_fixed(t, -2.5, 0, 1), "-2"); /* printf's half to even */
    assert_string_equal(hs_fmt_fixed(t, NAN, 2, 1), "+nan"); /* as printf */
    assert_string_equal(hs_fmt_fixed(t, 1.0, 40, 0), "1.000000000"); /* clamped to HS_FIXED_MAX_DEC */
    /* the widest double fits: "-", 309 digits, ".", 9 decimals */
    assert_int_equal(strlen(hs_fmt_fixed(t, -1.7976931348623157e308, 9, 1)), 320);
    hs_buf b = {0};
    hs_buf_fixed(&b, -0.0004, 7, 3, 1);
    assert_string_equal(b.s, "  0.000");
    hs_buf_free(&b);
}

static void ablate_clean_line_has_no_signed_zero(void **state)
{
    (void)state;
    hs_ablate_comp c = {0, 0, -0.0003, 0.5};
    hs_ablate_report r = {.L = 1, .H = 1, .n = 4, .n_ref = 4, .has_wrong = 1, .method = HS_ABLATE_MEAN,
                          .metric_clean = -0.0002, .acc_clean = 0.5, .n_comp = 1, .comp = &c};
    hs_buf b = {0};
    hs_ablate_summary(&r, &b);
    check_text(b.s, "clean 0.000, accuracy 50.0%", "-0.000");
    hs_buf_free(&b);
    r.metric_clean = 0.0002; /* "%+.3f" wrote "+0.000" */
    hs_ablate_summary(&r, &b);
    check_text(b.s, "clean 0.000, accuracy 50.0%", "+0.000");
    hs_buf_free(&b);
}

static void dla_sum_line_has_no_signed_zero(void **state)
{
    (void)state;
    char labels[1][24] = {"embed"};
    double attr[1] = {0.25};
    hs_dla_set r = {.n = 2, .n_comp = 1, .has_wrong = 1, .labels = labels, .attr = attr, .constant = -0.0001,
                    .unembed_bias = 0.0004, .target = -0.0002, .t = 3, .attr_pos = NULL, .weights = "raw"};
    hs_buf b = {0};
    hs_dla_set_summary(&r, &b);
    check_text(b.s, "      0.000\n", "-0.000");
    check_text(b.s, "sum +0.250 = LD 0.000\n", "+0.000");
    hs_buf_free(&b);
}

static void patch_clean_line_has_no_signed_zero(void **state)
{
    (void)state;
    hs_patch_report r;
    memset(&r, 0, sizeof r);
    r.L = 1, r.H = 1, r.t = 3, r.n = 2;
    r.ld_clean = -0.0004, r.ld_corr = -0.0004; /* coincide: not usable, the line names them */
    hs_buf b = {0};
    hs_patch_summary(&r, &b);
    check_text(b.s, "clean 0.000, corrupted 0.000\n", "-0.000");
    check_text(b.s, "(LD 0.000 both)", "-0.000");
    hs_buf_free(&b);
}

static void faithfulness_m_line_has_no_signed_zero(void **state)
{
    (void)state;
    hs_faith_report r;
    memset(&r, 0, sizeof r);
    r.m_full = 1.5, r.m_empty = -0.00004, r.m_circuit = -0.00003, r.faithfulness = -0.0001, r.usable = 1;
    r.curve.cpr = NAN, r.curve.cmd = NAN;
    hs_buf b = {0};
    hs_faith_summary(&r, &b);
    check_text(b.s, "m(M) +1.5000 (the model), m(empty) 0.0000 (every edge ablated)\n", "-0.0000");
    check_text(b.s, "metric 0.0000, faithfulness 0.000\n", "-0.000");
    hs_buf_free(&b);
}

static void viz_token_rows_have_no_signed_zero(void **state)
{
    (void)state;
    const float rows[3] = {-0.004f, -0.0051f, 0.5f};
    const char *toks[3] = {"a", "b", "c"};
    char *text = NULL;
    size_t n = 0;
    hs_error err = {0};
    assert_int_equal(hs_viz_rows_format(&text, &n, rows, 1, 3, NULL, toks, 0, &err), HS_OK);
    assert_string_equal(text, "L0  a:0.00 b:-0.01 c:0.50\n");
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fixed_text_has_no_signed_zero),
        cmocka_unit_test(ablate_clean_line_has_no_signed_zero),
        cmocka_unit_test(dla_sum_line_has_no_signed_zero),
        cmocka_unit_test(patch_clean_line_has_no_signed_zero),
        cmocka_unit_test(faithfulness_m_line_has_no_signed_zero),
        cmocka_unit_test(viz_token_rows_have_no_signed_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
