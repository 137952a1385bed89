/*
 * tokenize/decode.c -- a tokenizer.json decoder (tokenize_internal.h's
 * hs_pipe dec steps) as huggingface/tokenizers runs it: each step's
 * decode_chain over the list of token strings, then the strings joined
 * (src/decoders/{byte_level,replace,byte_fallback,fuse,strip,metaspace}.rs).
 * And the text of one token alone (hs_pipe_token_text), what a token "is"
 * for hs_tok_str / hs_tok_id: the per-token steps only.
 * ByteLevel here gives the bytes as they are (a token run that cuts a
 * character stays cut; tokenizers would write U+FFFD): the caller decides.
 */
#include "tokenize/tokenize_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    hs_buf *t; /* (n) the token strings (bytes) */
    size_t n;
} toks;

static void toks_free(toks *x)
{
    for (size_t i = 0; i < x->n; i++) hs_buf_free(&x->t[i]);
    free(x->t);
    x->t = NULL;
    x->n = 0;
}

/* Collapses x to one string, the concatenation. */
static int fuse(toks *x)
{
    hs_buf all = {0};
    for (size_t i = 0; i < x->n; i++) hs_buf_append(&all, x->t[i].s ? x->t[i].s : "", x->t[i].len);
    if (all.oom) return -1;
    toks_free(x);
    x->t = malloc(sizeof *x->t);
    if (!x->t) {
        hs_buf_free(&all);
        return -1;
    }
    x->t[0] = all;
    x->n = 1;
    return 0;
}

/* Token i's bytes back through the byte-level alphabet (as is when a
 * character is not in it). */
static void byte_level_one(const hs_buf *in, hs_buf *out, const int byte_of[HS_ALPHA_MAX])
{
    const unsigned char *s = (const unsigned char *)(in->s ? in->s : "");
    const size_t start = out->len;
    for (size_t k = 0; k < in->len;) {
        uint32_t cp = 0;
        const size_t len = hs_utf8_decode(s + k, in->len - k, &cp);
        if (len == 0 || cp >= HS_ALPHA_MAX || byte_of[cp] < 0) {
            out->len = start;
            hs_buf_append(out, (const char *)s, in->len);
            return;
        }
        const char b = (char)byte_of[cp];
        hs_buf_append(out, &b, 1);
        k += len;
    }
}

/* Replaces every occurrence of pat by with in b. */
static void replace_in(hs_buf *b, const char *pat, const char *with)
{
    const size_t pl = strlen(pat);
    hs_buf o = {0};
    const char *s = b->s ? b->s : "";
    for (size_t k = 0; k < b->len;) {
        if (k + pl <= b->len && memcmp(s + k, pat, pl) == 0) {
            hs_buf_puts(&o, with);
            k += pl;
        } else {
            hs_buf_append(&o, s + k, 1);
            k++;
        }
    }
    if (o.oom) {
        b->oom = 1;
        hs_buf_free(&o);
        return;
    }
    hs_buf_free(b);
    *b = o;
}

/* "<0xNN>" -> NN, else -1 (tokenizers: length 6, "<0x" .. ">", hex). */
static int fallback_byte(const hs_buf *b)
{
    if (b->len != 6 || memcmp(b->s, "<0x", 3) != 0 || b->s[5] != '>') return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        const char c = b->s[i];
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

static int valid_n(const char *s, size_t n)
{
    uint32_t cp;
    for (size_t k = 0, len; k < n; k += len)
        if ((len = hs_utf8_decode((const unsigned char *)s + k, n - k, &cp)) == 0) return 0;
    return 1;
}

/* ByteFallback: each run of byte tokens becomes its bytes when they are
 * UTF-8, else one U+FFFD per byte token. */
static int byte_fallback(toks *x)
{
    toks o = {calloc(x->n ? x->n : 1, sizeof(hs_buf)), 0};
    if (!o.t) return -1;
    hs_buf run = {0};
    size_t run_n = 0;
    int oom = 0;
    for (size_t i = 0; i <= x->n; i++) {
        const int b = i < x->n ? fallback_byte(&x->t[i]) : -1;
        if (b >= 0) {
            const char c = (char)b;
            hs_buf_append(&run, &c, 1);
            run_n++;
            continue;
        }
        if (run_n > 0) {
            hs_buf *d = &o.t[o.n++];
            if (valid_n(run.s, run.len)) hs_buf_append(d, run.s, run.len);
            else
                for (size_t k = 0; k < run_n; k++) hs_buf_puts(d, "\xEF\xBF\xBD");
            oom |= d->oom;
            run.len = 0;
            run_n = 0;
        }
        if (i < x->n) {
            o.t[o.n++] = x->t[i];
            memset(&x->t[i], 0, sizeof x->t[i]);
        }
    }
    oom |= run.oom;
    hs_buf_free(&run);
    toks_free(x);
    *x = o;
    return oom ? -1 : 0;
}

static size_t utf8_len(const char *s, size_t n)
{
    uint32_t cp;
    const size_t k = hs_utf8_decode((const unsigned char *)s, n, &cp);
    return k ? k : 1;
}

/* Strip: at most start leading and stop trailing copies of the character c
 * (tokenizers' char arithmetic kept: the kept count is the byte length
 * minus the cuts, in characters). */
static void strip_one(hs_buf *b, const char *c, int start, int stop)
{
    const size_t cl = strlen(c);
    const char *s = b->s ? b->s : "";
    size_t nch = 0, scut = 0, ecut = 0;
    for (size_t k = 0; k < b->len; nch++) k += utf8_len(s + k, b->len - k);
    size_t k = 0;
    while ((int)scut < start && k + cl <= b->len && memcmp(s + k, c, cl) == 0) {
        k += cl;
        scut++;
    }
    size_t e = b->len;
    while ((int)ecut < stop && e >= k + cl && memcmp(s + e - cl, c, cl) == 0) {
        e -= cl;
        ecut++;
    }
    size_t keep = nch - scut; /* characters after the leading cut */
    if (b->len >= scut + ecut && b->len - scut - ecut < keep) keep = b->len - scut - ecut;
    size_t end = k;
    for (size_t i = 0; i < keep && end < b->len; i++) {
        end += utf8_len(s + end, b->len - end);
    }
    if (end > k) memmove(b->s, s + k, end - k); /* b->s may be NULL when empty */
    b->len = end - k;
    if (b->s) b->s[b->len] = '\0';
}

/* Metaspace: the replacement becomes a space, dropped in the first token
 * unless the scheme is never. */
static void metaspace_one(hs_buf *b, const hs_dec_step *d, int first)
{
    replace_in(b, d->pattern, first && d->prefix != HS_PREPEND_NEVER ? "" : " ");
}

/* Runs the steps over x; single != 0: one token alone (ByteFallback gives
 * the byte, Fuse and Strip skipped, Metaspace as not the first). */
static int run_steps(const hs_pipe *p, toks *x, int single)
{
    uint32_t cp_of[256];
    int byte_of[HS_ALPHA_MAX];
    for (size_t s = 0; s < p->n_dec; s++)
        if (p->dec[s].kind == HS_DEC_BYTELEVEL) {
            hs_byte_alphabet(cp_of, byte_of);
            break;
        }
    for (size_t s = 0; s < p->n_dec; s++) {
        const hs_dec_step *d = &p->dec[s];
        switch (d->kind) {
        case HS_DEC_BYTELEVEL: {
            hs_buf all = {0};
            for (size_t i = 0; i < x->n; i++) byte_level_one(&x->t[i], &all, byte_of);
            if (all.oom) return -1;
            for (size_t i = 0; i < x->n; i++) hs_buf_free(&x->t[i]);
            x->t[0] = all;
            x->n = x->n ? 1 : 0;
            if (x->n == 0) hs_buf_free(&all);
            break;
        }
        case HS_DEC_REPLACE:
            for (size_t i = 0; i < x->n; i++) replace_in(&x->t[i], d->pattern, d->content);
            break;
        case HS_DEC_BYTEFALLBACK:
            if (single) {
                const int b = x->n == 1 ? fallback_byte(&x->t[0]) : -1;
                if (b >= 0) {
                    const char c = (char)b;
                    x->t[0].len = 0;
                    hs_buf_append(&x->t[0], &c, 1);
                }
            } else if (byte_fallback(x)) {
                return -1;
            }
            break;
        case HS_DEC_FUSE:
            if (!single && fuse(x)) return -1;
            break;
        case HS_DEC_STRIP:
            for (size_t i = 0; i < x->n && !single; i++) strip_one(&x->t[i], d->pattern, d->start, d->stop);
            break;
        default: /* HS_DEC_METASPACE */
            for (size_t i = 0; i < x->n; i++) metaspace_one(&x->t[i], d, !single && i == 0);
        }
        for (size_t i = 0; i < x->n; i++)
            if (x->t[i].oom) return -1;
    }
    return 0;
}

int hs_pipe_decode(const hs_pipe *p, const char *const *tok, size_t n, hs_buf *out)
{
    toks x = {calloc(n ? n : 1, sizeof(hs_buf)), n};
    if (!x.t) return -1;
    for (size_t i = 0; i < n; i++) hs_buf_puts(&x.t[i], tok[i]);
    int rc = run_steps(p, &x, 0);
    for (size_t i = 0; i < x.n && rc == 0; i++) hs_buf_append(out, x.t[i].s ? x.t[i].s : "", x.t[i].len);
    toks_free(&x);
    return rc || out->oom ? -1 : 0;
}

int hs_pipe_token_text(const hs_pipe *p, const char *tok, hs_buf *out)
{
    toks x = {calloc(1, sizeof(hs_buf)), 1};
    if (!x.t) return -1;
    hs_buf_puts(&x.t[0], tok);
    int rc = run_steps(p, &x, 1);
    for (size_t i = 0; i < x.n && rc == 0; i++) hs_buf_append(out, x.t[i].s ? x.t[i].s : "", x.t[i].len);
    toks_free(&x);
    return rc || out->oom ? -1 : 0;
}
