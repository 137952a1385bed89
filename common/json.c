/*
 * common/json.c -- the one JSON printer (common.h, JSON): cJSON_Print's
 * layout, with every number in the one float format (hs_fmt_f32's digits).
 * Every JSON headscope writes (figure and report files, index.json) or prints
 * (--json) goes through hs_json_print.
 */
#include "common.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

char *hs_fmt_json_number(char out[HS_F32_BUF], double d)
{
    if (!isfinite(d)) return strcpy(out, "null");
    double a = fabs(d);
    if (a < 9007199254740992.0 && d == floor(d)) { /* 2^53: every such integer is exact */
        snprintf(out, HS_F32_BUF, "%.0f", d);
        return out;
    }
    if (a < FLT_MIN || a > FLT_MAX) { /* no float32 (normal) holds it */
        snprintf(out, HS_F32_BUF, "%.9g", d);
        return out;
    }
    if (hs_fmt_f32_json(out, d)) return out; /* already a float's shortest double */
    double s = hs_f32_shortest((float)d);
    if (!hs_fmt_f32_json(out, s)) snprintf(out, HS_F32_BUF, "%1.15g", s);
    return out;
}

/* A string as cJSON prints it: ", \\ and the C escapes \b \f \n \r \t, other
 * bytes below 32 as \u00xx, everything else as is; NULL as "". */
static void json_string(hs_buf *b, const char *s)
{
    hs_buf_append(b, "\"", 1);
    const char *run = s;
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        if (*p > 31 && *p != '"' && *p != '\\') continue;
        hs_buf_append(b, run, (size_t)((const char *)p - run));
        char e[8];
        switch (*p) {
        case '"': hs_buf_puts(b, "\\\""); break;
        case '\\': hs_buf_puts(b, "\\\\"); break;
        case '\b': hs_buf_puts(b, "\\b"); break;
        case '\f': hs_buf_puts(b, "\\f"); break;
        case '\n': hs_buf_puts(b, "\\n"); break;
        case '\r': hs_buf_puts(b, "\\r"); break;
        case '\t': hs_buf_puts(b, "\\t"); break;
        default:
            snprintf(e, sizeof e, "\\u%04x", *p);
            hs_buf_puts(b, e);
        }
        run = (const char *)p + 1;
    }
    if (s) hs_buf_puts(b, run);
    hs_buf_append(b, "\"", 1);
}

static void tabs(hs_buf *b, size_t n)
{
    static const char T[] = "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t";
    for (; n > 16; n -= 16) hs_buf_append(b, T, 16);
    hs_buf_append(b, T, n);
}

/* cJSON's print_value, formatted (pretty) at nesting depth (arrays and
 * objects each count one) or unformatted. 0 on an item cJSON cannot print
 * (NULL raw text, unknown type). */
static int json_value(hs_buf *b, const cJSON *it, size_t depth, int pretty)
{
    char t[HS_F32_BUF];
    switch (it->type & 0xFF) {
    case cJSON_NULL: hs_buf_puts(b, "null"); return 1;
    case cJSON_False: hs_buf_puts(b, "false"); return 1;
    case cJSON_True: hs_buf_puts(b, "true"); return 1;
    case cJSON_Number: hs_buf_puts(b, hs_fmt_json_number(t, it->valuedouble)); return 1;
    case cJSON_Raw:
        if (!it->valuestring) return 0;
        hs_buf_puts(b, it->valuestring);
        return 1;
    case cJSON_String: json_string(b, it->valuestring); return 1;
    case cJSON_Array:
        hs_buf_append(b, "[", 1);
        for (const cJSON *c = it->child; c; c = c->next) {
            if (!json_value(b, c, depth + 1, pretty)) return 0;
            if (c->next) hs_buf_append(b, ", ", pretty ? 2 : 1);
        }
        hs_buf_append(b, "]", 1);
        return 1;
    case cJSON_Object:
        hs_buf_append(b, "{\n", pretty ? 2 : 1);
        for (const cJSON *c = it->child; c; c = c->next) {
            if (pretty) tabs(b, depth + 1);
            json_string(b, c->string);
            hs_buf_append(b, ":\t", pretty ? 2 : 1);
            if (!json_value(b, c, depth + 1, pretty)) return 0;
            if (c->next) hs_buf_append(b, ",\n", pretty ? 2 : 1);
            else if (pretty) hs_buf_append(b, "\n", 1);
        }
        if (pretty) tabs(b, depth);
        hs_buf_append(b, "}", 1);
        return 1;
    default: return 0;
    }
}

int hs_json_print_buf(hs_buf *b, const cJSON *json, int pretty)
{
    return json != NULL && json_value(b, json, 0, pretty);
}

char *hs_json_print(const cJSON *json)
{
    hs_buf b = {0};
    if (!hs_json_print_buf(&b, json, 1)) {
        hs_buf_free(&b);
        return NULL;
    }
    return hs_buf_take(&b); /* NULL on OOM */
}
