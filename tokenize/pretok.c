/*
 * tokenize/pretok.c -- runs a tokenizer.json pipeline (tokenize_internal.h's
 * hs_pipe) as huggingface/tokenizers does, up to the model and back from it:
 *   added tokens   tokenizers' AddedVocabulary::extract_and_normalize: the
 *                  tokens with normalized false matched in the raw text
 *                  (leftmost-longest, not overlapping; single_word, lstrip,
 *                  rstrip as find_matches applies them), each other part
 *                  normalized, then the normalized tokens matched in it;
 *   normalizers    NFC, Prepend (to a non-empty part), Replace, Strip;
 *   pre-tokenizers Split (a regex or a string, five behaviours, invert),
 *                  Digits (a Split on \p{N}), Metaspace (spaces replaced,
 *                  the prefix by prepend_scheme, split before each
 *                  replacement), ByteLevel (add_prefix_space to each part,
 *                  GPT-2's pattern when use_regex; the parts' bytes go to the
 *                  model as bytes);
 *   decoders       tokenizers' decode_chain of ByteLevel, Replace,
 *                  ByteFallback, Fuse, Strip, Metaspace, then the strings
 *                  joined.
 * Regex matches are Oniguruma's find_iter (onig crate): an empty match
 * right where the previous match ended is skipped one character on.
 * Sources: tokenizers src/tokenizer/{added_vocabulary,normalizer,
 * pre_tokenizer}.rs, src/pre_tokenizers/{split,byte_level,metaspace,digits}.rs,
 * src/normalizers/{replace,prepend,strip,unicode}.rs.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tokenize/tokenize_internal.h"

#include <stdlib.h>
#include <string.h>

void hs_pieces_free(hs_pieces *ps)
{
    if (ps == NULL) return;
    hs_buf_free(&ps->text);
    free(ps->p);
    memset(ps, 0, sizeof *ps);
}

/* Appends a piece (an empty one only for an added token). -1 on OOM. */
static int push(hs_pieces *ps, const char *s, size_t n, int first, int id)
{
    if (n == 0 && id < 0) return 0;
    if (ps->n == ps->cap) {
        const size_t cap = ps->cap ? 2 * ps->cap : 16;
        hs_piece *p = realloc(ps->p, cap * sizeof *p);
        if (!p) return -1;
        ps->p = p;
        ps->cap = cap;
    }
    ps->p[ps->n++] = (hs_piece){ps->text.len, n, first, id};
    return hs_buf_append(&ps->text, s, n) == 0 && !ps->text.oom ? 0 : -1;
}

/* The Unicode White_Space property (Rust's char::is_whitespace, regex \s). */
static int white(uint32_t c)
{
    return (c >= 9 && c <= 13) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

static size_t char_len(const char *s, size_t n)
{
    uint32_t cp;
    const size_t k = hs_utf8_decode((const unsigned char *)s, n, &cp);
    return k ? k : 1;
}

/* The code point ending at s + n (n >= 1), its length in *len. */
static uint32_t last_cp(const char *s, size_t n, size_t *len)
{
    size_t k = n - 1;
    while (k > 0 && ((unsigned char)s[k] & 0xC0u) == 0x80u) k--;
    uint32_t cp = 0xFFFD;
    (void)hs_utf8_decode((const unsigned char *)s + k, n - k, &cp);
    *len = n - k;
    return cp;
}

/* ------------------------------------------------------------------------ */
/* Regex matches and split behaviours                                        */

typedef struct {
    size_t a, b;
    int m;
} span;

typedef struct {
    span *s;
    size_t n, cap;
    pcre2_match_data *md; /* one pair: whole matches only */
} spans;

static int add_span(spans *v, size_t a, size_t b, int m)
{
    if (v->n == v->cap) {
        const size_t cap = v->cap ? 2 * v->cap : 16;
        span *p = realloc(v->s, cap * sizeof *p);
        if (!p) return -1;
        v->s = p;
        v->cap = cap;
    }
    v->s[v->n++] = (span){a, b, m};
    return 0;
}

/* The matches of re in s (m = 1) and the gaps between them (m = 0), in
 * order, covering s: tokenizers' Pattern::find_matches over onig. */
static hs_status find_matches(const pcre2_code *re, const char *s, size_t n, spans *v,
                              hs_error *err)
{
    v->n = 0;
    if (n == 0) return add_span(v, 0, 0, 0) ? hs_fail(err, HS_ERR_NOMEM, "out of memory") : HS_OK;
    pcre2_match_data *md = v->md;
    size_t prev = 0, at = 0, last_match_end = (size_t)-1;
    int oom = 0;
    hs_status st = HS_OK;
    while (at <= n && !oom) {
        const int rc = pcre2_match(re, (PCRE2_SPTR)s, n, at, PCRE2_NO_UTF_CHECK, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            st = hs_fail(err, rc == PCRE2_ERROR_NOMEMORY ? HS_ERR_NOMEM : HS_ERR_INPUT,
                         "the pre-tokenizer stopped at byte %zu: %s", at, (const char *)msg);
            break;
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        const size_t a = ov[0], b = ov[1];
        if (a == b && last_match_end == at) { /* empty, right after the last match */
            if (at >= n) break;
            at += char_len(s + at, n - at);
            continue;
        }
        at = last_match_end = b;
        if (prev != a) oom |= add_span(v, prev, a, 0);
        oom |= add_span(v, a, b, 1);
        prev = b;
    }
    if (st == HS_OK && prev != n) oom |= add_span(v, prev, n, 0);
    if (st == HS_OK && oom) st = hs_fail(err, HS_ERR_NOMEM, "out of memory tokenizing the sentence");
    return st;
}

/* Applies behavior (and invert) to v in place: the spans kept, m = 0.
 * (tokenizers' NormalizedString::split.) */
static void behave(spans *v, int behavior, int invert)
{
    size_t w = 0;
    int prev = 0;
    if (invert)
        for (size_t i = 0; i < v->n; i++) v->s[i].m = !v->s[i].m;
    if (behavior == HS_SPLIT_NEXT) { /* right to left, then back in order */
        for (size_t i = v->n; i-- > 0;) {
            const span x = v->s[i];
            if (x.m && !prev && w > 0) v->s[v->n - w].a = x.a;
            else v->s[v->n - ++w] = (span){x.a, x.b, 0};
            prev = x.m;
        }
        memmove(v->s, v->s + v->n - w, w * sizeof *v->s);
        v->n = w;
        return;
    }
    for (size_t i = 0; i < v->n; i++) {
        const span x = v->s[i];
        if (behavior == HS_SPLIT_REMOVED) {
            if (!x.m) v->s[w++] = x;
            continue;
        }
        int join = 0;
        if (behavior == HS_SPLIT_CONTIGUOUS) join = x.m == prev && w > 0;
        else if (behavior == HS_SPLIT_PREVIOUS) join = x.m && !prev && w > 0;
        if (join) v->s[w - 1].b = x.b;
        else v->s[w++] = (span){x.a, x.b, 0};
        prev = x.m;
    }
    v->n = w;
}

/* Splits s (n bytes) by re and behavior into out. */
static hs_status split_one(const char *s, size_t n, int first, const pcre2_code *re,
                           int behavior, int invert, hs_pieces *out, spans *v, hs_error *err)
{
    hs_status st = find_matches(re, s, n, v, err);
    if (st != HS_OK) return st;
    behave(v, behavior, invert);
    for (size_t k = 0; k < v->n; k++)
        if (push(out, s + v->s[k].a, v->s[k].b - v->s[k].a, first && v->s[k].a == 0, -1))
            return hs_fail(err, HS_ERR_NOMEM, "out of memory tokenizing the sentence");
    return HS_OK;
}

/* Splits each piece of in by re and behavior into out. */
static hs_status split_pieces(const hs_pieces *in, const pcre2_code *re, int behavior,
                              int invert, hs_pieces *out, spans *v, hs_error *err)
{
    for (size_t i = 0; i < in->n; i++) {
        const hs_piece *p = &in->p[i];
        hs_status st = split_one(in->text.s + p->off, p->len, p->first, re, behavior, invert, out,
                                 v, err);
        if (st != HS_OK) return st;
    }
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* Normalizers and pre-tokenizers                                            */

/* Replaces every match of re in s by content, into out. */
static hs_status replace_all(const pcre2_code *re, const char *content, const char *s, size_t n,
                             hs_buf *out, spans *v, hs_error *err)
{
    hs_status st = find_matches(re, s, n, v, err);
    for (size_t k = 0; k < v->n && st == HS_OK; k++) {
        if (v->s[k].m) hs_buf_puts(out, content);
        else hs_buf_append(out, s + v->s[k].a, v->s[k].b - v->s[k].a);
    }
    return st;
}

static hs_status normalize(const hs_pipe *p, const char *s, size_t n, hs_buf *out, spans *v,
                           hs_error *err)
{
    if (p->n_norm == 0)
        return hs_buf_append(out, s, n) == 0 && !out->oom
                   ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory tokenizing the sentence");
    hs_buf cur = {0}, next = {0};
    hs_status st = HS_OK;
    hs_buf_append(&cur, s, n);
    for (size_t i = 0; i < p->n_norm && st == HS_OK && !cur.oom; i++) {
        const hs_norm_step *x = &p->norm[i];
        const char *c = cur.s ? cur.s : "";
        next.len = 0;
        if (x->kind == HS_NORM_NFC) {
            hs_nfc(c, cur.len, &next);
        } else if (x->kind == HS_NORM_PREPEND) {
            if (cur.len > 0) hs_buf_puts(&next, x->text);
            hs_buf_append(&next, c, cur.len);
        } else if (x->kind == HS_NORM_REPLACE) {
            st = replace_all(x->re, x->content, c, cur.len, &next, v, err);
        } else { /* Strip */
            size_t a = 0, b = cur.len, len;
            uint32_t cp;
            while (x->left && a < b && hs_utf8_decode((const unsigned char *)c + a, b - a, &cp) &&
                   white(cp))
                a += char_len(c + a, b - a);
            while (x->right && b > a && white(last_cp(c + a, b - a, &len))) b -= len;
            hs_buf_append(&next, c + a, b - a);
        }
        const hs_buf t = cur;
        cur = next;
        next = t;
        if (cur.oom) break;
    }
    if (st == HS_OK && (cur.oom || next.oom))
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory tokenizing the sentence");
    if (st == HS_OK) hs_buf_append(out, cur.s ? cur.s : "", cur.len);
    hs_buf_free(&cur);
    hs_buf_free(&next);
    return st;
}

/* Metaspace on each piece of in, into out. */
static int metaspace(const hs_pre_step *x, const hs_pieces *in, hs_pieces *out)
{
    const size_t rl = strlen(x->repl);
    hs_buf b = {0};
    int rc = 0;
    for (size_t i = 0; i < in->n && rc == 0; i++) {
        const hs_piece *p = &in->p[i];
        const char *s = in->text.s + p->off;
        b.len = 0;
        for (size_t k = 0; k < p->len; k++) {
            if (s[k] == ' ') hs_buf_append(&b, x->repl, rl);
            else hs_buf_append(&b, s + k, 1);
        }
        const int starts = b.len >= rl && memcmp(b.s, x->repl, rl) == 0;
        if (!starts && (x->prefix == HS_PREPEND_ALWAYS || (x->prefix == HS_PREPEND_FIRST && p->first))) {
            hs_buf_append(&b, x->repl, rl); /* then rotate it to the front */
            if (!b.oom) {
                memmove(b.s + rl, b.s, b.len - rl);
                memcpy(b.s, x->repl, rl);
            }
        }
        if (b.oom) return -1;
        if (!x->split) {
            rc = push(out, b.s, b.len, p->first, -1);
            continue;
        }
        size_t start = 0; /* MergedWithNext: each replacement starts a piece */
        for (size_t k = 0; k + rl <= b.len && rc == 0; k++)
            if (memcmp(b.s + k, x->repl, rl) == 0 && k > start) {
                rc = push(out, b.s + start, k - start, p->first && start == 0, -1);
                start = k;
            }
        if (rc == 0) rc = push(out, b.s + start, b.len - start, p->first && start == 0, -1);
    }
    hs_buf_free(&b);
    return rc;
}

/* ByteLevel on each piece of in, into out: add_prefix_space, the pattern. */
static hs_status byte_level(const hs_pre_step *x, const hs_pieces *in, hs_pieces *out, spans *v,
                            hs_error *err)
{
    hs_pieces tmp = {0};
    const hs_pieces *src = in;
    if (x->prefix) {
        for (size_t i = 0; i < in->n; i++) {
            const hs_piece *p = &in->p[i];
            hs_buf b = {0};
            if (p->len == 0 || in->text.s[p->off] != ' ') hs_buf_puts(&b, " ");
            hs_buf_append(&b, in->text.s + p->off, p->len);
            const int bad = b.oom || push(&tmp, b.s, b.len, p->first, -1);
            hs_buf_free(&b);
            if (bad) {
                hs_pieces_free(&tmp);
                return hs_fail(err, HS_ERR_NOMEM, "out of memory tokenizing the sentence");
            }
        }
        src = &tmp;
    }
    hs_status st = HS_OK;
    if (x->re) {
        st = split_pieces(src, x->re, HS_SPLIT_ISOLATED, 0, out, v, err);
    } else {
        for (size_t i = 0; i < src->n && st == HS_OK; i++)
            if (push(out, src->text.s + src->p[i].off, src->p[i].len, src->p[i].first, -1))
                st = hs_fail(err, HS_ERR_NOMEM, "out of memory tokenizing the sentence");
    }
    hs_pieces_free(&tmp);
    return st;
}

/* The pre-tokenizers over one normalized part s (n >= 1 bytes), appended
 * to out. */
static hs_status pretokenize(const hs_pipe *p, const char *s, size_t n, int first, hs_pieces *out,
                             spans *v, hs_error *err)
{
    if (p->n_pre == 0)
        return push(out, s, n, first, -1) ? hs_fail(err, HS_ERR_NOMEM, "out of memory") : HS_OK;
    const hs_pre_step *one = &p->pre[0];
    if (p->n_pre == 1 && one->re && (one->kind == HS_PRE_SPLIT || !one->prefix)) /* GPT-2's */
        return split_one(s, n, first, one->re, one->kind == HS_PRE_SPLIT ? one->behavior
                         : HS_SPLIT_ISOLATED, one->kind == HS_PRE_SPLIT && one->invert, out, v, err);
    hs_pieces cur = {0}, next = {0};
    hs_status st = push(&cur, s, n, first, -1) ? hs_fail(err, HS_ERR_NOMEM, "out of memory") : HS_OK;
    for (size_t i = 0; i < p->n_pre && st == HS_OK; i++) {
        const hs_pre_step *x = &p->pre[i];
        next.n = 0;
        next.text.len = 0;
        if (x->kind == HS_PRE_SPLIT) st = split_pieces(&cur, x->re, x->behavior, x->invert, &next, v, err);
        else if (x->kind == HS_PRE_BYTELEVEL) st = byte_level(x, &cur, &next, v, err);
        else if (metaspace(x, &cur, &next))
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory tokenizing the sentence");
        const hs_pieces t = cur;
        cur = next;
        next = t;
    }
    for (size_t i = 0; i < cur.n && st == HS_OK; i++)
        if (push(out, cur.text.s + cur.p[i].off, cur.p[i].len, cur.p[i].first, -1))
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory tokenizing the sentence");
    hs_pieces_free(&cur);
    hs_pieces_free(&next);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Added tokens                                                              */

/* 1 when the character before s + at (or after, ahead != 0) is a word
 * character (Rust regex \w). */
static int word_at(const hs_pipe *p, const char *s, size_t n, size_t at, int ahead,
                   pcre2_match_data *md)
{
    size_t a, len;
    if (ahead) {
        if (at >= n) return 0;
        a = at;
        len = char_len(s + at, n - at);
    } else {
        if (at == 0) return 0;
        (void)last_cp(s, at, &len);
        a = at - len;
    }
    return pcre2_match(p->alnum, (PCRE2_SPTR)s + a, len, 0, PCRE2_ANCHORED | PCRE2_NO_UTF_CHECK,
                       md, NULL) >= 0;
}

/* Splits s (n bytes) at the added tokens with normalized == norm (special
 * ones only if special): parts (id -1, then normalized and pre-tokenized
 * by the caller) and tokens, appended to segs as spans (m = index into
 * p->added + 1, or 0). AddedVocabulary::find_matches. */
static int split_added(const hs_pipe *p, const char *s, size_t n, int norm, int special, spans *v,
                       pcre2_match_data *md)
{
    size_t start_offset = 0;
    v->n = 0;
    if (p->n_added == 0) {
        if (n > 0 && add_span(v, 0, n, 0)) return -1;
        return 0;
    }
    for (size_t i = 0; i < n;) {
        if (!p->first_byte[(unsigned char)s[i]]) {
            i++;
            continue;
        }
        int best = -1;
        for (size_t k = 0; k < p->n_added; k++) {
            const hs_added *a = &p->added[k];
            if (a->normalized != norm || a->len > n - i || (best >= 0 && a->len <= p->added[best].len))
                continue;
            if (memcmp(s + i, a->content, a->len) == 0) best = (int)k;
        }
        if (best < 0) {
            i++;
            continue;
        }
        const hs_added *a = &p->added[best];
        size_t start = i, stop = i + a->len;
        i = stop;
        if (a->special && !special) continue;
        if (a->single_word && (word_at(p, s, n, start, 0, md) || word_at(p, s, n, stop, 1, md)))
            continue;
        if (a->lstrip) {
            size_t ns = start, len;
            while (ns > 0 && white(last_cp(s, ns, &len))) ns -= len;
            start = ns > start_offset ? ns : start_offset;
        }
        if (a->rstrip) {
            uint32_t cp;
            size_t len;
            while (stop < n && (len = hs_utf8_decode((const unsigned char *)s + stop, n - stop, &cp)) && white(cp))
                stop += len;
        }
        if (start_offset < start && add_span(v, start_offset, start, 0)) return -1;
        if (add_span(v, start, stop, best + 1)) return -1;
        start_offset = stop;
    }
    if (start_offset < n && add_span(v, start_offset, n, 0)) return -1;
    return 0;
}

hs_status hs_pipe_run(const hs_pipe *p, const char *text, size_t n, int special, hs_pieces *out,
                      hs_error *err)
{
    spans outer = {0}, inner = {0}, v = {0};
    hs_buf nb = {0};
    hs_status st = HS_OK;
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    v.md = md;
    if (!md || split_added(p, text, n, 0, special, &outer, md)) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory tokenizing the sentence");
        goto done;
    }
    for (size_t i = 0; i < outer.n && st == HS_OK; i++) {
        const span o = outer.s[i];
        if (o.m) {
            if (push(out, "", 0, 0, p->added[o.m - 1].id))
                st = hs_fail(err, HS_ERR_NOMEM, "out of memory tokenizing the sentence");
            continue;
        }
        const char *ns = text + o.a; /* without a normalizer the part itself */
        size_t nn = o.b - o.a;
        if (p->n_norm > 0) {
            nb.len = 0;
            st = normalize(p, text + o.a, o.b - o.a, &nb, &v, err);
            if (st != HS_OK) break;
            ns = nb.s ? nb.s : "";
            nn = nb.len;
        }
        if (split_added(p, ns, nn, 1, special, &inner, md)) {
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory tokenizing the sentence");
            break;
        }
        for (size_t k = 0; k < inner.n && st == HS_OK; k++) {
            const span x = inner.s[k];
            if (x.m) {
                if (push(out, "", 0, 0, p->added[x.m - 1].id))
                    st = hs_fail(err, HS_ERR_NOMEM, "out of memory tokenizing the sentence");
            } else {
                st = pretokenize(p, ns + x.a, x.b - x.a, o.a == 0 && x.a == 0, out, &v, err);
            }
        }
    }
done:
    pcre2_match_data_free(md);
    free(outer.s);
    free(inner.s);
    free(v.s);
    hs_buf_free(&nb);
    return st;
}
