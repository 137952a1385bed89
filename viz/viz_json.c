/*
 * viz/viz_json.c -- the numbers behind every figure as JSON (cJSON), with
 * tokens, shapes and titles; attention in CircuitsVis' attention_heads shape.
 * Each float is stored as the double of its one text format (common's
 * hs_fmt_f32: the shortest decimal that reads back as the same float32), so
 * the file shows those digits and (float)strtod(text) gives the original value.
 * Files are printed by common's hs_json_print (the one JSON printer).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viz/viz_internal.h"

static cJSON *num(float f)
{
    return cJSON_CreateNumber(hs_f32_shortest(f));
}

static hs_status check_finite(const float *a, size_t n, const char *what, hs_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(a[i]))
            return hs_fail(err, HS_ERR_NUMERIC, "%s value %zu is not finite (%g)", what, i,
                           (double)a[i]);
    return HS_OK;
}

static hs_status check_strs(const char *const *s, size_t n, const char *what, hs_error *err)
{
    if (s == NULL) return hs_fail(err, HS_ERR_INPUT, "%s are NULL", what);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == NULL) return hs_fail(err, HS_ERR_INPUT, "%s: label %zu is NULL", what, i);
        if (!hs_utf8_valid(s[i]))
            return hs_fail(err, HS_ERR_INPUT, "%s: label %zu is not valid UTF-8", what, i);
    }
    return HS_OK;
}

static cJSON *str_array(const char *const *s, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++) {
        cJSON *it = cJSON_CreateString(s[i]);
        if (!it || !cJSON_AddItemToArray(a, it)) {
            cJSON_Delete(it);
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

/* Nested array of a row-major block: dims[0] x dims[1] x ... (nd dims). */
static cJSON *num_array(const float *a, const size_t *dims, int nd)
{
    cJSON *arr = cJSON_CreateArray();
    if (!arr) return NULL;
    size_t inner = 1;
    for (int k = 1; k < nd; k++) inner *= dims[k];
    for (size_t i = 0; i < dims[0]; i++) {
        cJSON *it = nd == 1 ? num(a[i]) : num_array(a + i * inner, dims + 1, nd - 1);
        if (!it || !cJSON_AddItemToArray(arr, it)) {
            cJSON_Delete(it);
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

/* [H][T] rows of T numbers (a row-major [H, T, T] block), each row one raw
 * item holding the text "[a, b, ...]" the printer would write for its T
 * number items (same bytes): H T + H items instead of H T^2 + H T + 1, so
 * attention at a GPT-2 context (144 heads x 1024^2) fits in memory. */
static cJSON *raw_rows(const float *a, size_t H, size_t T)
{
    cJSON *arr = cJSON_CreateArray();
    hs_buf b = {0};
    for (size_t h = 0; arr && h < H; h++) {
        cJSON *head = cJSON_CreateArray();
        for (size_t r = 0; head && r < T; r++) {
            const float *row = a + (h * T + r) * T;
            b.len = 0;
            hs_buf_append(&b, "[", 1);
            for (size_t c = 0; c < T; c++) {
                char t[HS_F32_BUF];
                hs_buf_puts(&b, hs_fmt_json_number(t, hs_f32_shortest(row[c])));
                if (c + 1 < T) hs_buf_append(&b, ", ", 2);
            }
            hs_buf_append(&b, "]", 1);
            cJSON *it = b.oom ? NULL : cJSON_CreateRaw(b.s);
            if (!it || !cJSON_AddItemToArray(head, it)) {
                cJSON_Delete(it);
                cJSON_Delete(head);
                head = NULL;
            }
        }
        if (!head || !cJSON_AddItemToArray(arr, head)) {
            cJSON_Delete(head);
            cJSON_Delete(arr);
            arr = NULL;
        }
    }
    hs_buf_free(&b);
    return arr;
}

static cJSON *shape_array(const size_t *dims, int nd)
{
    cJSON *a = cJSON_CreateArray();
    for (int k = 0; a && k < nd; k++) {
        cJSON *it = cJSON_CreateNumber((double)dims[k]);
        if (!it || !cJSON_AddItemToArray(a, it)) {
            cJSON_Delete(it);
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

/* Adds key: string-or-null. Returns 0 on OOM. */
static int add_str_or_null(cJSON *o, const char *key, const char *v)
{
    cJSON *it = v ? cJSON_CreateString(v) : cJSON_CreateNull();
    if (!it) return 0;
    if (!cJSON_AddItemToObject(o, key, it)) {
        cJSON_Delete(it);
        return 0;
    }
    return 1;
}

static int add_item(cJSON *o, const char *key, cJSON *it)
{
    if (!it) return 0;
    if (!cJSON_AddItemToObject(o, key, it)) {
        cJSON_Delete(it);
        return 0;
    }
    return 1;
}

/* The attention object with its "attention" value built by packed ? the
 * page's packed form (vz_attention_packed) : nested number arrays. */
static hs_status attention_json(cJSON **out, const float *attention, size_t n_heads, size_t T,
                                const char *const *tokens, const char *const *head_names,
                                const char *title, int packed, hs_error *err)
{
    *out = NULL;
    if (attention == NULL) return hs_fail(err, HS_ERR_INPUT, "attention is NULL");
    if (n_heads < 1 || T < 1)
        return hs_fail(err, HS_ERR_INPUT, "attention of %zu heads x %zu tokens is empty", n_heads, T);
    hs_status s = check_finite(attention, n_heads * T * T, "attention", err);
    if (!s) s = check_strs(tokens, T, "tokens", err);
    if (!s && head_names) s = check_strs(head_names, n_heads, "head names", err);
    if (!s && title && !hs_utf8_valid(title)) s = hs_fail(err, HS_ERR_INPUT, "title is not valid UTF-8");
    if (s) return s;
    size_t dims[3] = {n_heads, T, T};
    cJSON *o = cJSON_CreateObject();
    int ok = o != NULL;
    ok = ok && add_str_or_null(o, "title", title);
    ok = ok && add_item(o, "shape", shape_array(dims, 3));
    ok = ok && add_item(o, "tokens", str_array(tokens, T));
    ok = ok && add_item(o, "attention", packed ? vz_attention_packed(attention, n_heads, T)
                                               : raw_rows(attention, n_heads, T));
    if (ok) {
        cJSON *names = cJSON_CreateArray();
        for (size_t h = 0; names && h < n_heads; h++) {
            char b[32];
            snprintf(b, sizeof b, "H%zu", h);
            cJSON *it = cJSON_CreateString(head_names ? head_names[h] : b);
            if (!it || !cJSON_AddItemToArray(names, it)) {
                cJSON_Delete(it);
                cJSON_Delete(names);
                names = NULL;
            }
        }
        ok = add_item(o, "attention_head_names", names);
    }
    if (!ok) {
        cJSON_Delete(o);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory building attention JSON");
    }
    *out = o;
    return HS_OK;
}

hs_status hs_viz_attention_json(cJSON **out, const float *attention, size_t n_heads, size_t T,
                                const char *const *tokens, const char *const *head_names,
                                const char *title, hs_error *err)
{
    return attention_json(out, attention, n_heads, T, tokens, head_names, title, 0, err);
}

hs_status hs_viz_attention_json_packed(cJSON **out, const float *attention, size_t n_heads,
                                       size_t T, const char *const *tokens,
                                       const char *const *head_names, const char *title,
                                       hs_error *err)
{
    return attention_json(out, attention, n_heads, T, tokens, head_names, title, 1, err);
}

/* [R][C] values, null where mask is set. */
static cJSON *masked_rows(const float *m, const unsigned char *mask, size_t R, size_t C)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < R; i++) {
        cJSON *row = cJSON_CreateArray();
        for (size_t j = 0; row && j < C; j++) {
            cJSON *it = mask[i * C + j] ? cJSON_CreateNull() : num(m[i * C + j]);
            if (!it || !cJSON_AddItemToArray(row, it)) {
                cJSON_Delete(it);
                cJSON_Delete(row);
                row = NULL;
            }
        }
        if (!row || !cJSON_AddItemToArray(arr, row)) {
            cJSON_Delete(row);
            cJSON_Delete(arr);
            arr = NULL;
        }
    }
    return arr;
}

static hs_status signed_json(cJSON **out, const float *m, const unsigned char *mask, size_t R,
                             size_t C, const char *const *row_labels,
                             const char *const *col_labels, const char *title,
                             const char *xlabel, const char *ylabel, hs_error *err)
{
    *out = NULL;
    if (m == NULL) return hs_fail(err, HS_ERR_INPUT, "matrix is NULL");
    if (R < 1 || C < 1) return hs_fail(err, HS_ERR_INPUT, "matrix %zu x %zu is empty", R, C);
    hs_status s = HS_OK;
    for (size_t i = 0; i < R * C && !s; i++)
        if ((!mask || !mask[i]) && !isfinite(m[i]))
            s = hs_fail(err, HS_ERR_NUMERIC, "matrix value %zu is not finite (%g)", i,
                        (double)m[i]);
    if (!s) s = check_strs(row_labels, R, "row labels", err);
    if (!s) s = check_strs(col_labels, C, "column labels", err);
    const char *ts[3] = {title, xlabel, ylabel};
    for (int k = 0; k < 3 && !s; k++)
        if (ts[k] && !hs_utf8_valid(ts[k])) s = hs_fail(err, HS_ERR_INPUT, "a title is not valid UTF-8");
    if (s) return s;
    size_t dims[2] = {R, C};
    cJSON *o = cJSON_CreateObject();
    int ok = o != NULL;
    ok = ok && add_str_or_null(o, "title", title);
    ok = ok && add_item(o, "shape", shape_array(dims, 2));
    ok = ok && add_item(o, "row_labels", str_array(row_labels, R));
    ok = ok && add_item(o, "col_labels", str_array(col_labels, C));
    ok = ok && add_str_or_null(o, "xlabel", xlabel);
    ok = ok && add_str_or_null(o, "ylabel", ylabel);
    ok = ok && add_item(o, "values", mask ? masked_rows(m, mask, R, C) : num_array(m, dims, 2));
    if (!ok) {
        cJSON_Delete(o);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory building matrix JSON");
    }
    *out = o;
    return HS_OK;
}

hs_status hs_viz_signed_json(cJSON **out, const float *m, size_t R, size_t C,
                             const char *const *row_labels, const char *const *col_labels,
                             const char *title, const char *xlabel, const char *ylabel,
                             hs_error *err)
{
    return signed_json(out, m, NULL, R, C, row_labels, col_labels, title, xlabel, ylabel, err);
}

hs_status hs_viz_signed_json_masked(cJSON **out, const float *m, const unsigned char *mask,
                                    size_t R, size_t C, const char *const *row_labels,
                                    const char *const *col_labels, const char *title,
                                    const char *xlabel, const char *ylabel, hs_error *err)
{
    if (mask == NULL) {
        *out = NULL;
        return hs_fail(err, HS_ERR_INPUT, "mask is NULL");
    }
    return signed_json(out, m, mask, R, C, row_labels, col_labels, title, xlabel, ylabel, err);
}

hs_status hs_viz_bars_json(cJSON **out, const float *values, size_t N,
                           const char *const *labels, const char *title, const char *xlabel,
                           hs_error *err)
{
    *out = NULL;
    if (values == NULL) return hs_fail(err, HS_ERR_INPUT, "bar values are NULL");
    if (N < 1) return hs_fail(err, HS_ERR_INPUT, "no bars");
    hs_status s = check_finite(values, N, "bar", err);
    if (!s) s = check_strs(labels, N, "bar labels", err);
    if (!s && ((title && !hs_utf8_valid(title)) || (xlabel && !hs_utf8_valid(xlabel))))
        s = hs_fail(err, HS_ERR_INPUT, "a title is not valid UTF-8");
    if (s) return s;
    size_t dims[1] = {N};
    cJSON *o = cJSON_CreateObject();
    int ok = o != NULL;
    ok = ok && add_str_or_null(o, "title", title);
    ok = ok && add_item(o, "shape", shape_array(dims, 1));
    ok = ok && add_item(o, "labels", str_array(labels, N));
    ok = ok && add_str_or_null(o, "xlabel", xlabel);
    ok = ok && add_item(o, "values", num_array(values, dims, 1));
    if (!ok) {
        cJSON_Delete(o);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory building bars JSON");
    }
    *out = o;
    return HS_OK;
}

hs_status hs_viz_write_json(const cJSON *json, const char *path, hs_error *err)
{
    if (json == NULL) return hs_fail(err, HS_ERR_INPUT, "JSON object is NULL");
    hs_status s = hs_check_out_path(path, err);
    if (s != HS_OK) return s;
    hs_buf b = {0};
    if (!hs_json_print_buf(&b, json, 1)) {
        hs_buf_free(&b);
        return hs_fail(err, HS_ERR_INPUT, "JSON for %s holds an item that cannot be printed", path);
    }
    hs_buf_append(&b, "\n", 1);
    if (b.oom) {
        hs_buf_free(&b);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory printing JSON for %s", path);
    }
    s = hs_write_file_atomic(path, b.s, b.len, err);
    hs_buf_free(&b);
    return s;
}
