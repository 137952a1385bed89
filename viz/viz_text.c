/*
 * viz/viz_text.c -- the chapter's terminal rows, `L0  the:0.00 animal:0.70 ...`,
 * wrapped to a width with continuation lines indented under the first item.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "viz/viz_internal.h"

static void put_spaces(hs_buf *b, size_t n)
{
    for (size_t i = 0; i < n; i++) hs_buf_append(b, " ", 1);
}

hs_status hs_viz_rows_format(char **text, size_t *len, const float *rows, size_t n_rows,
                             size_t T, const char *const *row_labels,
                             const char *const *tokens, size_t width, hs_error *err)
{
    *text = NULL;
    *len = 0;
    if (rows == NULL) return hs_fail(err, HS_ERR_INPUT, "rows are NULL");
    if (n_rows < 1 || T < 1)
        return hs_fail(err, HS_ERR_INPUT, "rows: %zu rows x %zu tokens is empty", n_rows, T);
    if (tokens == NULL) return hs_fail(err, HS_ERR_INPUT, "rows: tokens are NULL");
    for (size_t j = 0; j < T; j++)
        if (tokens[j] == NULL || !hs_utf8_valid(tokens[j]))
            return hs_fail(err, HS_ERR_INPUT, "rows: token %zu is NULL or not valid UTF-8", j);
    for (size_t i = 0; row_labels && i < n_rows; i++)
        if (row_labels[i] == NULL || !hs_utf8_valid(row_labels[i]))
            return hs_fail(err, HS_ERR_INPUT, "rows: row label %zu is NULL or not valid UTF-8", i);
    for (size_t k = 0; k < n_rows * T; k++)
        if (!isfinite(rows[k]))
            return hs_fail(err, HS_ERR_NUMERIC, "rows: value [%zu, %zu] is not finite (%g)",
                           k / T, k % T, (double)rows[k]);
    if (width != 0 && width < 20) width = 20;

    /* label column: widest label (code points) + 2 spaces */
    size_t lab_w = 0;
    char lb[32];
    for (size_t i = 0; i < n_rows; i++) {
        size_t w;
        if (row_labels) w = vz_utf8_len(row_labels[i]);
        else w = (size_t)snprintf(lb, sizeof lb, "L%zu", i);
        if (w > lab_w) lab_w = w;
    }
    size_t indent = lab_w + 2;

    hs_buf b = {0};
    for (size_t i = 0; i < n_rows; i++) {
        const char *label = row_labels ? row_labels[i] : (snprintf(lb, sizeof lb, "L%zu", i), lb);
        hs_buf_append(&b, label, strlen(label));
        put_spaces(&b, indent - vz_utf8_len(label));
        size_t col = indent;
        for (size_t j = 0; j < T; j++) {
            char num[HS_FIXED_BUF + 1] = ":"; /* no "-0.00": hs_fmt_fixed */
            hs_fmt_fixed(num + 1, rows[i * T + j], 2, 0);
            const int nn = (int)strlen(num);
            char *tok = hs_visible_dup(tokens[j]); /* a terminal shows no raw format/bidi char */
            if (!tok) {
                b.oom = 1;
                break;
            }
            size_t item = vz_utf8_len(tok) + (size_t)nn;
            if (j > 0) {
                if (width && col + 1 + item > width) {
                    hs_buf_append(&b, "\n", 1);
                    put_spaces(&b, indent);
                    col = indent;
                } else {
                    hs_buf_append(&b, " ", 1);
                    col++;
                }
            }
            hs_buf_append(&b, tok, strlen(tok));
            hs_buf_append(&b, num, (size_t)nn);
            free(tok);
            col += item;
        }
        hs_buf_append(&b, "\n", 1);
    }
    size_t n = b.len;
    char *out = hs_buf_take(&b);
    if (!out) return hs_fail(err, HS_ERR_NOMEM, "out of memory formatting rows");
    *text = out;
    *len = n;
    return HS_OK;
}

hs_status hs_viz_rows_write(FILE *fp, const float *rows, size_t n_rows, size_t T,
                            const char *const *row_labels, const char *const *tokens,
                            size_t width, hs_error *err)
{
    if (fp == NULL) return hs_fail(err, HS_ERR_INPUT, "rows: output stream is NULL");
    char *text;
    size_t n;
    hs_status s = hs_viz_rows_format(&text, &n, rows, n_rows, T, row_labels, tokens, width, err);
    if (s != HS_OK) return s;
    errno = 0;
    size_t w = fwrite(text, 1, n, fp);
    free(text);
    if (w != n || fflush(fp) != 0)
        return hs_fail(err, HS_ERR_IO, "rows: write failed: %s",
                       errno ? strerror(errno) : "short write");
    return HS_OK;
}
