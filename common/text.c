/*
 * common/text.c -- the growable string buffer, string duplicate, UTF-8
 * decoder and float format that every module shares (common.h, Text).
 */
#include "common.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

void hs_buf_init(hs_buf *b)
{
    b->s = NULL;
    b->len = b->cap = 0;
    b->oom = 0;
}

/* Makes room for `extra` more bytes plus the NUL. 0 or -1 (sets oom). */
static int buf_reserve(hs_buf *b, size_t extra)
{
    if (b->oom) return -1;
    if (extra > (size_t)-1 / 2 - b->len) { /* size_t overflow */
        b->oom = 1;
        return -1;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
        b->oom = 1;
        return -1;
    }
    b->s = s;
    b->cap = cap;
    return 0;
}

int hs_buf_append(hs_buf *b, const char *s, size_t n)
{
    if (buf_reserve(b, n) != 0) return -1;
    if (n > 0) memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
    return 0;
}

int hs_buf_puts(hs_buf *b, const char *s)
{
    return hs_buf_append(b, s, strlen(s));
}

int hs_buf_printf(hs_buf *b, const char *fmt, ...)
{
    if (b->oom) return -1;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) { /* an encoding error: the format cannot be written */
        b->oom = 1;
        return -1;
    }
    if (buf_reserve(b, (size_t)n) != 0) return -1;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

char *hs_buf_take(hs_buf *b)
{
    if (b->oom) {
        hs_buf_free(b);
        return NULL;
    }
    char *s = b->s ? b->s : hs_strdup("");
    hs_buf_init(b);
    return s;
}

void hs_buf_free(hs_buf *b)
{
    free(b->s);
    hs_buf_init(b);
}

char *hs_strdup(const char *s)
{
    if (s == NULL) return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

size_t hs_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    if (n == 0) return 0;
    unsigned char c = s[0];
    size_t len;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
        len = 2; v = c & 0x1Fu; min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3; v = c & 0x0Fu; min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4; v = c & 0x07u; min = 0x10000;
    } else {
        return 0;
    }
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0u) != 0x80u) return 0;
        v = (v << 6) | (s[i] & 0x3Fu);
    }
    if (v < min || v > 0x10FFFFu || (v >= 0xD800u && v <= 0xDFFFu)) return 0;
    *cp = v;
    return len;
}

int hs_utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    for (size_t k = 0; k < n;) {
        uint32_t cp;
        size_t len = hs_utf8_decode(p + k, n - k, &cp);
        if (len == 0) return 0;
        k += len;
    }
    return 1;
}

char *hs_fmt_f32(char out[HS_F32_BUF], float x)
{
    if (isnan(x)) {
        strcpy(out, "nan");
        return out;
    }
    if (isinf(x)) {
        strcpy(out, x > 0 ? "inf" : "-inf");
        return out;
    }
    for (int p = 1; p <= 9; p++) {
        snprintf(out, HS_F32_BUF, "%.*g", p, (double)x);
        if ((float)strtod(out, NULL) == x) return out;
    }
    return out; /* %.9g always round-trips a float32 */
}

double hs_f32_shortest(float x)
{
    if (!isfinite(x)) return (double)x;
    char buf[HS_F32_BUF];
    return strtod(hs_fmt_f32(buf, x), NULL);
}
