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

int hs_buf_vprintf(hs_buf *b, const char *fmt, va_list ap)
{
    /* Formats once into the room there is (at least 128 bytes), and again
     * only when the text is longer: an SVG's thousands of short elements
     * cost one vsnprintf each, not two. */
    if (buf_reserve(b, 128) != 0) return -1;
    size_t room = b->cap - b->len;
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(b->s + b->len, room, fmt, ap2);
    va_end(ap2);
    if (n < 0) { /* an encoding error: the format cannot be written */
        b->s[b->len] = '\0';
        b->oom = 1;
        return -1;
    }
    if ((size_t)n >= room) {
        if (buf_reserve(b, (size_t)n) != 0) {
            b->s[b->len] = '\0';
            return -1;
        }
        vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    }
    b->len += (size_t)n;
    return 0;
}

int hs_buf_printf(hs_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = hs_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return r;
}

char *hs_strfmt(const char *fmt, ...)
{
    hs_buf b = {0};
    va_list ap;
    va_start(ap, fmt);
    hs_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    return hs_buf_take(&b);
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

hs_cp_class hs_cp_classify(uint32_t cp)
{
    if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F)) return HS_CP_CONTROL;
    if ((cp >= 0xFDD0 && cp <= 0xFDEF) || (cp & 0xFFFEu) == 0xFFFEu) return HS_CP_NONCHAR;
    if ((cp >= 0xE000 && cp <= 0xF8FF) || cp >= 0xF0000) return HS_CP_PRIVATE;
    if (cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
        cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000)
        return HS_CP_SPACE;
    /* Unicode 15 Cf (format) and Default_Ignorable_Code_Point */
    static const uint32_t fmt[][2] = {
        {0x00AD, 0x00AD},   {0x034F, 0x034F},   {0x0600, 0x0605},   {0x061C, 0x061C},
        {0x06DD, 0x06DD},   {0x070F, 0x070F},   {0x0890, 0x0891},   {0x08E2, 0x08E2},
        {0x115F, 0x1160},   {0x17B4, 0x17B5},   {0x180B, 0x180F},   {0x200B, 0x200F},
        {0x202A, 0x202E},   {0x2060, 0x206F},   {0x3164, 0x3164},   {0xFE00, 0xFE0F},
        {0xFEFF, 0xFEFF},   {0xFFA0, 0xFFA0},   {0xFFF0, 0xFFFB},   {0x110BD, 0x110BD},
        {0x110CD, 0x110CD}, {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A},
        {0xE0000, 0xE0FFF},
    };
    for (size_t i = 0; i < sizeof fmt / sizeof fmt[0]; i++)
        if (cp >= fmt[i][0] && cp <= fmt[i][1]) return HS_CP_FORMAT;
    return HS_CP_PLAIN;
}

const char *hs_cp_class_name(hs_cp_class c)
{
    switch (c) {
    case HS_CP_PLAIN: return "a printable character";
    case HS_CP_CONTROL: return "a control character";
    case HS_CP_NONCHAR: return "a Unicode noncharacter";
    case HS_CP_PRIVATE: return "a private-use character";
    case HS_CP_FORMAT: return "an invisible format (bidi or zero-width) character";
    case HS_CP_SPACE: return "a space outside ASCII";
    }
    return "a character";
}

int hs_buf_put_visible(hs_buf *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s), k = 0, start = 0; /* s[start..k) is plain, not yet appended */
    while (k < n) {
        uint32_t cp = 0;
        size_t len = hs_utf8_decode(p + k, n - k, &cp);
        if (len > 0 && (cp == ' ' || hs_cp_classify(cp) == HS_CP_PLAIN)) {
            k += len;
            continue;
        }
        hs_buf_append(b, s + start, k - start);
        if (len == 0) hs_buf_printf(b, "<0x%02X>", p[k++]);
        else {
            hs_buf_printf(b, "<U+%04X>", (unsigned)cp);
            k += len;
        }
        start = k;
    }
    hs_buf_append(b, s + start, k - start);
    return b->oom ? -1 : 0;
}

char *hs_visible_dup(const char *s)
{
    hs_buf b = {0};
    hs_buf_put_visible(&b, s);
    return hs_buf_take(&b);
}

uint64_t hs_fnv1a64(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}
