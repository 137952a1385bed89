/*
 * common/text.c -- the growable string buffer, string duplicate, UTF-8
 * decoder and float format that every module shares (common.h, Text).
 */
#include "common.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

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

int hs_utf8_put(hs_buf *b, uint32_t cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | cp >> 6);
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | cp >> 12);
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | cp >> 18);
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return hs_buf_append(b, u, n);
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

size_t hs_utf8_bad_len(const unsigned char *s, size_t n)
{
    const unsigned char c = s[0];
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range (Table 3-7) */
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 1;
    }
    size_t k = 1;
    if (k < n && s[k] >= lo && s[k] <= hi)
        for (k = 2; k < n && k <= need && (s[k] & 0xC0u) == 0x80u;) k++;
    return k;
}

char *hs_utf8_lossy_dup(const char *s)
{
    hs_buf b = {0};
    const unsigned char *p = (const unsigned char *)s;
    const size_t n = strlen(s);
    for (size_t k = 0; k < n;) {
        size_t run = k; /* the longest valid run from k, appended at once */
        uint32_t cp;
        size_t len;
        while (run < n && (len = hs_utf8_decode(p + run, n - run, &cp)) > 0) run += len;
        hs_buf_append(&b, s + k, run - k);
        if (run == n) break;
        hs_utf8_put(&b, 0xFFFD);
        k = run + hs_utf8_bad_len(p + run, n - run);
    }
    return hs_buf_take(&b);
}

char *hs_fmt_fixed(char out[HS_FIXED_BUF], double v, int decimals, int plus)
{
    if (decimals < 0) decimals = 0;
    if (decimals > HS_FIXED_MAX_DEC) decimals = HS_FIXED_MAX_DEC;
    /* DBL_MAX has 309 digits: sign, digits, point and 9 decimals fit in 321 */
    snprintf(out, HS_FIXED_BUF, "%.*f", decimals, v);
    /* a text of only a sign, zeros and the point is a signed zero */
    const char *d = out + (out[0] == '-');
    if (isfinite(v) && d[strspn(d, "0.")] == '\0') v = 0.0;
    snprintf(out, HS_FIXED_BUF, plus && v != 0.0 ? "%+.*f" : "%.*f", decimals, v);
    return out;
}

int hs_buf_fixed(hs_buf *b, double v, int width, int decimals, int plus)
{
    char t[HS_FIXED_BUF];
    return hs_buf_printf(b, "%*s", width, hs_fmt_fixed(t, v, decimals, plus));
}

/* ---- the one float format --------------------------------------------------
 * hs_fmt_f32 is printf's "%.<p>g" for the least p in 1..9 whose text strtod
 * reads back (then cast to float) as x. For 1e-9 <= |x| < 1e9 that search is
 * done here in exact integer arithmetic, with printf's and strtod's own
 * rounding (both exact in glibc: round half to even; strtod correctly rounded,
 * then the cast to float rounds again, as in the search it stands for), so no
 * text is printed or parsed per try; other values take the printf/strtod loop.
 * tests/test_common_text.c checks both agree on millions of floats. */

typedef unsigned __int128 u128;

static const uint64_t POW10[20] = {
    1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull,
    1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull,
    100000000000000ull, 1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
    1000000000000000000ull, 10000000000000000000ull};

static int bitlen128(u128 v)
{
    uint64_t hi = (uint64_t)(v >> 64);
    if (hi) return 128 - __builtin_clzll(hi);
    uint64_t lo = (uint64_t)v;
    return lo ? 64 - __builtin_clzll(lo) : 0;
}

/* 1 when m 2^e >= 10^k (exactly; -10 <= k <= 10, m < 2^24, -60 <= e <= 10). */
static int ge_pow10(uint32_t m, int e, int k)
{
    if (k >= 0) {
        u128 p = POW10[k];
        return e >= 0 ? ((u128)m << e) >= p : (u128)m >= (p << -e);
    }
    if (e >= 0) return 1;
    return (u128)m * POW10[-k] >= ((u128)1 << -e);
}

/* q rounded half to even, given the remainder r of a division by den. */
static u128 round_even(u128 q, u128 r, u128 den)
{
    u128 r2 = r << 1; /* r < den < 2^127 */
    return r2 > den || (r2 == den && (q & 1)) ? q + 1 : q;
}

/* The double strtod reads from the decimal n 10^-s (n < 2^34, 0 <= s <= 19):
 * the nearest one, ties to even. */
static double dec_to_double(uint64_t n, int s)
{
    if (s == 0 || n == 0) return (double)n; /* n < 2^53: exact */
    int K = 127 - bitlen128(n);
    u128 N = (u128)n << K, P = POW10[s];
    u128 Q = N / P, R = N % P; /* Q has >= 62 bits */
    int shift = bitlen128(Q) - 53;
    u128 M = Q >> shift, rem = Q & (((u128)1 << shift) - 1), half = (u128)1 << (shift - 1);
    if (rem > half || (rem == half && (R != 0 || (M & 1)))) M++;
    if (M >> 53) {
        M >>= 1;
        shift++;
    }
    return ldexp((double)(uint64_t)M, shift - K);
}

/* The least p (1..9) whose %.<p>g text of x round-trips, as its digits n
 * (p of them, n < 10^p), decimal exponent X (x ~ n 10^(X-p+1)) and the double
 * strtod reads from it. x > 0; 0 when x is outside [1e-9, 1e9) (the caller
 * falls back to printf). */
static int f32_shortest(float x, uint64_t *n_out, int *p_out, int *X_out, double *d_out)
{
    if (!(x >= 1e-9f && x < 1e9f)) return 0;
    int ex;
    float fr = frexpf(x, &ex);
    uint32_t m = (uint32_t)ldexpf(fr, 24);
    int e = ex - 24; /* x = m 2^e exactly */
    int E = (int)floor(log10((double)x));
    while (!ge_pow10(m, e, E)) E--;
    while (ge_pow10(m, e, E + 1)) E++;
    for (int p = 1; p <= 9; p++) {
        int s = p - 1 - E; /* n = x 10^s, rounded */
        u128 n;
        if (s >= 0) {
            u128 A = (u128)m * POW10[s];
            if (e >= 0) n = A << e;
            else n = round_even(A >> -e, A & (((u128)1 << -e) - 1), (u128)1 << -e);
        } else {
            u128 num = e >= 0 ? (u128)m << e : (u128)m;
            u128 den = e >= 0 ? (u128)POW10[-s] : (u128)POW10[-s] << -e;
            n = round_even(num / den, num % den, den);
        }
        int X = E;
        if (n == POW10[p]) { /* rounded up to the next power of ten */
            n = POW10[p - 1];
            X = E + 1;
        }
        int s2 = p - 1 - X;
        double d = s2 >= 0 ? dec_to_double((uint64_t)n, s2) : (double)((uint64_t)n * POW10[-s2]);
        if ((float)d == x) {
            *n_out = (uint64_t)n;
            *p_out = p;
            *X_out = X;
            *d_out = d;
            return 1;
        }
    }
    return 0; /* not reached: 9 digits always round-trip */
}

/* printf's "%.<P>g" of the decimal (-1)^neg n 10^(X-p+1), n of p digits:
 * exponent form when X < -4 or X >= P, trailing fractional zeros dropped. */
static char *fmt_digits(char out[HS_F32_BUF], int neg, uint64_t n, int p, int X, int P)
{
    char dg[20];
    for (int i = p - 1; i >= 0; i--, n /= 10) dg[i] = (char)('0' + n % 10);
    int nd = p; /* significant digits left after dropping trailing zeros */
    while (nd > 1 && dg[nd - 1] == '0') nd--;
    char *o = out;
    if (neg) *o++ = '-';
    if (X < -4 || X >= P) {
        *o++ = dg[0];
        if (nd > 1) {
            *o++ = '.';
            for (int i = 1; i < nd; i++) *o++ = dg[i];
        }
        int a = X < 0 ? -X : X;
        *o++ = 'e';
        *o++ = X < 0 ? '-' : '+';
        if (a >= 100) *o++ = (char)('0' + a / 100);
        *o++ = (char)('0' + a / 10 % 10);
        *o++ = (char)('0' + a % 10);
    } else if (X >= 0) {
        for (int i = 0; i <= X; i++) *o++ = i < p ? dg[i] : '0';
        if (nd > X + 1) {
            *o++ = '.';
            for (int i = X + 1; i < nd; i++) *o++ = dg[i];
        }
    } else {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -X - 1; i++) *o++ = '0';
        for (int i = 0; i < nd; i++) *o++ = dg[i];
    }
    *o = '\0';
    return out;
}

/* The printf/strtod search hs_fmt_f32 stands for (finite x). */
static char *fmt_f32_slow(char out[HS_F32_BUF], float x)
{
    for (int p = 1; p <= 9; p++) {
        snprintf(out, HS_F32_BUF, "%.*g", p, (double)x);
        if ((float)strtod(out, NULL) == x) return out;
    }
    return out; /* %.9g always round-trips a float32 */
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
    uint64_t n;
    int p, X;
    double d;
    if (f32_shortest(fabsf(x), &n, &p, &X, &d)) return fmt_digits(out, x < 0, n, p, X, p);
    return fmt_f32_slow(out, x);
}

double hs_f32_shortest(float x)
{
    if (!isfinite(x)) return (double)x;
    uint64_t n;
    int p, X;
    double d;
    if (f32_shortest(fabsf(x), &n, &p, &X, &d)) return x < 0 ? -d : d;
    char buf[HS_F32_BUF];
    return strtod(fmt_f32_slow(buf, x), NULL);
}

char *hs_fmt_f32_json(char out[HS_F32_BUF], double v)
{
    /* fast only for the doubles hs_f32_shortest makes */
    float x = (float)v;
    uint64_t n;
    int p, X;
    double d;
    if (isfinite(v) && v != 0 && f32_shortest(fabsf(x), &n, &p, &X, &d) && (x < 0 ? -d : d) == v)
        return fmt_digits(out, v < 0, n, p, X, 15);
    return NULL;
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
    return hs_fnv1a64_more(HS_FNV1A64_BASIS, data, n);
}

uint64_t hs_fnv1a64_more(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

cJSON *hs_json_num_or_null(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

int hs_json_add_copies(cJSON *dst, const cJSON *src)
{
    for (const cJSON *it = src ? src->child : NULL; it; it = it->next) {
        cJSON *dup = cJSON_Duplicate(it, 1);
        if (!dup || !cJSON_AddItemToObject(dst, it->string, dup)) {
            cJSON_Delete(dup);
            return 0;
        }
    }
    return 1;
}
