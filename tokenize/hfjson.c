/*
 * tokenize/hfjson.c -- a Hugging Face tokenizer.json's pipeline around its
 * BPE model (tokenize_internal.h's hs_pipe): the normalizer, the
 * pre-tokenizers, the model's options, the added tokens, the post-processor's
 * BOS and the decoder, as huggingface/tokenizers deserializes them
 * (src/normalizers, src/pre_tokenizers, src/models/bpe, src/processors,
 * src/decoders, src/tokenizer/added_vocabulary.rs). Every component headscope
 * does not compute is refused in one line naming its field.
 *
 * Regexes are tokenizers' (Oniguruma) run by PCRE2 with UTF and Unicode
 * properties; `\s` / `\S` are rewritten to the White_Space property, which is
 * what Oniguruma's Unicode \s is (PCRE2's own differs at U+0085).
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tokenize/tokenize_internal.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* GPT-2's pre-tokenizer (encoder.py's `pat`; tokenizers' ByteLevel regex). */
static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* Rust regex's \w (tokenizers' single_word test). */
static const char WORD_CHAR[] = "[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}]";

void hs_pipe_free(hs_pipe *p)
{
    if (p == NULL) return;
    for (size_t i = 0; i < p->n_norm; i++) {
        free(p->norm[i].text);
        free(p->norm[i].content);
        pcre2_code_free(p->norm[i].re);
    }
    for (size_t i = 0; i < p->n_pre; i++) pcre2_code_free(p->pre[i].re);
    for (size_t i = 0; i < p->n_dec; i++) {
        free(p->dec[i].pattern);
        free(p->dec[i].content);
    }
    for (size_t i = 0; i < p->n_added; i++) free(p->added[i].content);
    free(p->norm);
    free(p->pre);
    free(p->dec);
    free(p->added);
    free(p->unk_token);
    free(p->bos);
    pcre2_code_free(p->alnum);
    free(p);
}

/* Compiles pattern (literal: as text) for field; \s spelled as White_Space. */
static hs_status compile_re(const char *pattern, int literal, const char *name, const char *field,
                            void **re, hs_error *err)
{
    hs_buf b = {0};
    if (literal) {
        hs_buf_puts(&b, pattern);
    } else {
        for (const char *s = pattern; *s; s++) {
            if (s[0] == '\\' && (s[1] == 's' || s[1] == 'S')) {
                hs_buf_puts(&b, s[1] == 's' ? "\\p{White_Space}" : "\\P{White_Space}");
                s++;
            } else if (s[0] == '\\' && s[1]) {
                hs_buf_append(&b, s, 2);
                s++;
            } else {
                hs_buf_append(&b, s, 1);
            }
        }
    }
    if (b.oom) {
        hs_buf_free(&b);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", name);
    }
    int code = 0;
    PCRE2_SIZE at = 0;
    *re = pcre2_compile((PCRE2_SPTR)(b.s ? b.s : ""), b.len,
                        PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP), &code, &at, NULL);
    hs_buf_free(&b);
    if (*re == NULL) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        char *v = hs_visible_dup(pattern);
        hs_status st = hs_fail(err, HS_ERR_FORMAT, "%s: %s: the regex '%s' is invalid at %zu: %s",
                               name, field, v ? v : "?", (size_t)at, (const char *)msg);
        free(v);
        return st;
    }
    (void)pcre2_jit_compile(*re, PCRE2_JIT_COMPLETE);
    return HS_OK;
}

static const char *type_of(const cJSON *o)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
    return cJSON_IsString(t) ? t->valuestring : NULL;
}

/* A boolean field: absent -> dflt; true/false; anything else refused. */
static hs_status get_bool(const cJSON *o, const char *key, int dflt, const char *name,
                          const char *field, int *v, hs_error *err)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, key);
    if (f == NULL || cJSON_IsNull(f)) {
        *v = dflt;
        return HS_OK;
    }
    if (!cJSON_IsBool(f))
        return hs_fail(err, HS_ERR_FORMAT, "%s: %s.%s is not true or false", name, field, key);
    *v = cJSON_IsTrue(f);
    return HS_OK;
}

/* A string field (required). */
static hs_status get_str(const cJSON *o, const char *key, const char *name, const char *field,
                         char **v, hs_error *err)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsString(f))
        return hs_fail(err, HS_ERR_FORMAT, "%s: %s.%s is %s, not a string", name, field, key,
                       f ? "something else" : "missing");
    *v = hs_strdup(f->valuestring);
    return *v ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", name);
}

/* A pattern {"String": s} or {"Regex": r} into *re. */
static hs_status get_pattern(const cJSON *o, const char *name, const char *field, void **re,
                             char **literal, hs_error *err)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "pattern");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(p, "String");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(p, "Regex");
    if (!cJSON_IsString(s) && !cJSON_IsString(r))
        return hs_fail(err, HS_ERR_FORMAT, "%s: %s.pattern is not {\"String\": ...} or "
                       "{\"Regex\": ...}", name, field);
    if (literal) {
        if (!cJSON_IsString(s))
            return hs_fail(err, HS_ERR_FORMAT, "%s: %s.pattern: only a String pattern is "
                           "supported here", name, field);
        *literal = hs_strdup(s->valuestring);
        return *literal ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", name);
    }
    char f[200];
    snprintf(f, sizeof f, "%s.pattern", field);
    return compile_re(cJSON_IsString(s) ? s->valuestring : r->valuestring, cJSON_IsString(s),
                      name, f, re, err);
}

/* Grows a step array by one zeroed element; NULL on OOM. */
static void *grow(void **arr, size_t *n, size_t size)
{
    void *a = realloc(*arr, (*n + 1) * size);
    if (!a) return NULL;
    *arr = a;
    memset((char *)a + *n * size, 0, size);
    return (char *)a + (*n)++ * size;
}

static hs_status read_normalizer(const cJSON *o, const char *field, const char *name, hs_pipe *p,
                                 hs_error *err)
{
    const char *ty = type_of(o);
    char sub[200];
    if (ty == NULL) return hs_fail(err, HS_ERR_FORMAT, "%s: %s has no \"type\"", name, field);
    if (strcmp(ty, "Sequence") == 0) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, "normalizers"), *e;
        if (!cJSON_IsArray(list))
            return hs_fail(err, HS_ERR_FORMAT, "%s: %s.normalizers is not a list", name, field);
        int i = 0;
        cJSON_ArrayForEach(e, list) {
            snprintf(sub, sizeof sub, "%s.normalizers[%d]", field, i++);
            hs_status st = read_normalizer(e, sub, name, p, err);
            if (st != HS_OK) return st;
        }
        return HS_OK;
    }
    hs_norm_step *s = grow((void **)&p->norm, &p->n_norm, sizeof *s);
    if (!s) return hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", name);
    if (strcmp(ty, "NFC") == 0) {
        s->kind = HS_NORM_NFC;
        return HS_OK;
    }
    if (strcmp(ty, "Prepend") == 0) {
        s->kind = HS_NORM_PREPEND;
        return get_str(o, "prepend", name, field, &s->text, err);
    }
    if (strcmp(ty, "Replace") == 0) {
        s->kind = HS_NORM_REPLACE;
        hs_status st = get_str(o, "content", name, field, &s->content, err);
        return st == HS_OK ? get_pattern(o, name, field, &s->re, NULL, err) : st;
    }
    if (strcmp(ty, "Strip") == 0) {
        s->kind = HS_NORM_STRIP;
        hs_status st = get_bool(o, "strip_left", 1, name, field, &s->left, err);
        return st == HS_OK ? get_bool(o, "strip_right", 1, name, field, &s->right, err) : st;
    }
    p->n_norm--;
    return hs_fail(err, HS_ERR_FORMAT, "%s: %s: the normalizer '%s' is not supported (headscope "
                   "computes Sequence, NFC, Prepend, Replace, Strip)", name, field, ty);
}

/* "always" / "first" / "never", or the legacy add_prefix_space. */
static hs_status read_prepend(const cJSON *o, const char *name, const char *field, int *v,
                              hs_error *err)
{
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(o, "prepend_scheme");
    if (ps == NULL || cJSON_IsNull(ps)) {
        int add = 1;
        hs_status st = get_bool(o, "add_prefix_space", 1, name, field, &add, err);
        *v = add ? HS_PREPEND_ALWAYS : HS_PREPEND_NEVER;
        return st;
    }
    if (cJSON_IsString(ps) && strcmp(ps->valuestring, "always") == 0) *v = HS_PREPEND_ALWAYS;
    else if (cJSON_IsString(ps) && strcmp(ps->valuestring, "first") == 0) *v = HS_PREPEND_FIRST;
    else if (cJSON_IsString(ps) && strcmp(ps->valuestring, "never") == 0) *v = HS_PREPEND_NEVER;
    else
        return hs_fail(err, HS_ERR_FORMAT, "%s: %s.prepend_scheme is not \"always\", \"first\" "
                       "or \"never\"", name, field);
    return HS_OK;
}

/* Metaspace's replacement: one character. */
static hs_status read_repl(const cJSON *o, const char *name, const char *field, char *repl,
                           size_t cap, hs_error *err)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "replacement");
    uint32_t cp;
    const size_t n = cJSON_IsString(r) ? strlen(r->valuestring) : 0;
    if (n == 0 || n >= cap || hs_utf8_decode((const unsigned char *)r->valuestring, n, &cp) != n)
        return hs_fail(err, HS_ERR_FORMAT, "%s: %s.replacement is not one character", name, field);
    memcpy(repl, r->valuestring, n + 1);
    return HS_OK;
}

static hs_status read_pre(const cJSON *o, const char *field, const char *name, hs_pipe *p,
                          hs_error *err)
{
    const char *ty = type_of(o);
    char sub[200];
    if (ty == NULL) return hs_fail(err, HS_ERR_FORMAT, "%s: %s has no \"type\"", name, field);
    if (p->byte_level)
        return hs_fail(err, HS_ERR_FORMAT, "%s: %s: a pre-tokenizer after ByteLevel is not "
                       "supported (ByteLevel must come last)", name, field);
    if (strcmp(ty, "Sequence") == 0) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, "pretokenizers"), *e;
        if (!cJSON_IsArray(list))
            return hs_fail(err, HS_ERR_FORMAT, "%s: %s.pretokenizers is not a list", name, field);
        int i = 0;
        cJSON_ArrayForEach(e, list) {
            snprintf(sub, sizeof sub, "%s.pretokenizers[%d]", field, i++);
            hs_status st = read_pre(e, sub, name, p, err);
            if (st != HS_OK) return st;
        }
        return HS_OK;
    }
    hs_pre_step *s = grow((void **)&p->pre, &p->n_pre, sizeof *s);
    if (!s) return hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", name);
    hs_status st = HS_OK;
    if (strcmp(ty, "ByteLevel") == 0) {
        int re = 1;
        s->kind = HS_PRE_BYTELEVEL;
        st = get_bool(o, "add_prefix_space", 1, name, field, &s->prefix, err);
        if (st == HS_OK) st = get_bool(o, "use_regex", 1, name, field, &re, err);
        if (st == HS_OK && re) st = compile_re(GPT2_PATTERN, 0, name, field, &s->re, err);
        p->byte_level = 1;
        return st;
    }
    if (strcmp(ty, "Split") == 0) {
        static const char *const B[] = {"Removed", "Isolated", "MergedWithPrevious",
                                        "MergedWithNext", "Contiguous"};
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "behavior");
        s->kind = HS_PRE_SPLIT;
        s->behavior = -1;
        for (int i = 0; i < 5 && cJSON_IsString(b); i++)
            if (strcmp(b->valuestring, B[i]) == 0) s->behavior = i;
        if (s->behavior < 0)
            return hs_fail(err, HS_ERR_FORMAT, "%s: %s.behavior is not one of Removed, Isolated, "
                           "MergedWithPrevious, MergedWithNext, Contiguous", name, field);
        st = get_bool(o, "invert", 0, name, field, &s->invert, err);
        return st == HS_OK ? get_pattern(o, name, field, &s->re, NULL, err) : st;
    }
    if (strcmp(ty, "Digits") == 0) {
        int each = 0;
        s->kind = HS_PRE_SPLIT;
        st = get_bool(o, "individual_digits", 0, name, field, &each, err);
        s->behavior = each ? HS_SPLIT_ISOLATED : HS_SPLIT_CONTIGUOUS;
        return st == HS_OK ? compile_re("\\p{N}", 0, name, field, &s->re, err) : st;
    }
    if (strcmp(ty, "Metaspace") == 0) {
        s->kind = HS_PRE_METASPACE;
        st = read_repl(o, name, field, s->repl, sizeof s->repl, err);
        if (st == HS_OK) st = read_prepend(o, name, field, &s->prefix, err);
        return st == HS_OK ? get_bool(o, "split", 1, name, field, &s->split, err) : st;
    }
    p->n_pre--;
    return hs_fail(err, HS_ERR_FORMAT, "%s: %s: the pre-tokenizer '%s' is not supported "
                   "(headscope computes Sequence, Split, ByteLevel, Metaspace, Digits)", name,
                   field, ty);
}

static hs_status read_decoder(const cJSON *o, const char *field, const char *name, hs_pipe *p,
                              hs_error *err)
{
    const char *ty = type_of(o);
    char sub[200];
    if (ty == NULL) return hs_fail(err, HS_ERR_FORMAT, "%s: %s has no \"type\"", name, field);
    if (strcmp(ty, "Sequence") == 0) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, "decoders"), *e;
        if (!cJSON_IsArray(list))
            return hs_fail(err, HS_ERR_FORMAT, "%s: %s.decoders is not a list", name, field);
        int i = 0;
        cJSON_ArrayForEach(e, list) {
            snprintf(sub, sizeof sub, "%s.decoders[%d]", field, i++);
            hs_status st = read_decoder(e, sub, name, p, err);
            if (st != HS_OK) return st;
        }
        return HS_OK;
    }
    hs_dec_step *s = grow((void **)&p->dec, &p->n_dec, sizeof *s);
    if (!s) return hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", name);
    if (strcmp(ty, "ByteLevel") == 0) {
        s->kind = HS_DEC_BYTELEVEL;
        return HS_OK;
    }
    if (strcmp(ty, "ByteFallback") == 0) {
        s->kind = HS_DEC_BYTEFALLBACK;
        return HS_OK;
    }
    if (strcmp(ty, "Fuse") == 0) {
        s->kind = HS_DEC_FUSE;
        return HS_OK;
    }
    if (strcmp(ty, "Replace") == 0) {
        s->kind = HS_DEC_REPLACE;
        hs_status st = get_str(o, "content", name, field, &s->content, err);
        if (st == HS_OK) st = get_pattern(o, name, field, NULL, &s->pattern, err);
        if (st == HS_OK && s->pattern[0] == '\0')
            st = hs_fail(err, HS_ERR_FORMAT, "%s: %s.pattern is empty", name, field);
        return st;
    }
    if (strcmp(ty, "Strip") == 0) {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "start");
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(o, "stop");
        s->kind = HS_DEC_STRIP;
        hs_status r = get_str(o, "content", name, field, &s->pattern, err);
        uint32_t cp;
        const size_t n = r == HS_OK ? strlen(s->pattern) : 0;
        if (r == HS_OK && (n == 0 || hs_utf8_decode((const unsigned char *)s->pattern, n, &cp) != n))
            return hs_fail(err, HS_ERR_FORMAT, "%s: %s.content is not one character", name, field);
        if (r == HS_OK && (!cJSON_IsNumber(st) || !cJSON_IsNumber(sp) || st->valuedouble < 0 ||
                           sp->valuedouble < 0 || st->valuedouble > 1e6 || sp->valuedouble > 1e6))
            return hs_fail(err, HS_ERR_FORMAT, "%s: %s.start / stop are not counts", name, field);
        if (r == HS_OK) {
            s->start = (int)st->valuedouble;
            s->stop = (int)sp->valuedouble;
        }
        return r;
    }
    if (strcmp(ty, "Metaspace") == 0) {
        char repl[8];
        s->kind = HS_DEC_METASPACE;
        hs_status st = read_repl(o, name, field, repl, sizeof repl, err);
        if (st == HS_OK) st = read_prepend(o, name, field, &s->prefix, err);
        if (st == HS_OK && (s->pattern = hs_strdup(repl)) == NULL)
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", name);
        return st;
    }
    p->n_dec--;
    return hs_fail(err, HS_ERR_FORMAT, "%s: %s: the decoder '%s' is not supported (headscope "
                   "computes Sequence, ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace)",
                   name, field, ty);
}

/* The post-processor: the special token it puts before $A (p->bos). */
static hs_status read_post(const cJSON *o, const char *field, const char *name, hs_pipe *p,
                           hs_error *err)
{
    const char *ty = type_of(o);
    char sub[200];
    if (ty == NULL) return hs_fail(err, HS_ERR_FORMAT, "%s: %s has no \"type\"", name, field);
    if (strcmp(ty, "ByteLevel") == 0) return HS_OK; /* offsets only */
    if (strcmp(ty, "Sequence") == 0) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, "processors"), *e;
        if (!cJSON_IsArray(list))
            return hs_fail(err, HS_ERR_FORMAT, "%s: %s.processors is not a list", name, field);
        int i = 0;
        cJSON_ArrayForEach(e, list) {
            snprintf(sub, sizeof sub, "%s.processors[%d]", field, i++);
            hs_status st = read_post(e, sub, name, p, err);
            if (st != HS_OK) return st;
        }
        return HS_OK;
    }
    if (strcmp(ty, "TemplateProcessing") == 0) {
        const cJSON *single = cJSON_GetObjectItemCaseSensitive(o, "single"), *e;
        const cJSON *specials = cJSON_GetObjectItemCaseSensitive(o, "special_tokens");
        if (!cJSON_IsArray(single))
            return hs_fail(err, HS_ERR_FORMAT, "%s: %s.single is not a list", name, field);
        int after = 0; /* past the sequence $A: special tokens there are appended */
        cJSON_ArrayForEach(e, single) {
            const cJSON *sp = cJSON_GetObjectItemCaseSensitive(e, "SpecialToken");
            if (sp == NULL) {
                after = 1;
                continue;
            }
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(sp, "id");
            if (!cJSON_IsString(id))
                return hs_fail(err, HS_ERR_FORMAT, "%s: %s.single: a SpecialToken without an "
                               "\"id\" string", name, field);
            if (!after) {
                if (p->bos == NULL && (p->bos = hs_strdup(id->valuestring)) == NULL)
                    return hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", name);
                continue;
            }
            /* after $A: the ids special_tokens gives it (tokenizers' Template::apply) */
            const cJSON *ent = cJSON_GetObjectItemCaseSensitive(specials, id->valuestring);
            const cJSON *ids = cJSON_GetObjectItemCaseSensitive(ent, "ids"), *x;
            char *v = hs_visible_dup(id->valuestring);
            hs_status st = HS_OK;
            if (!cJSON_IsArray(ids))
                st = hs_fail(err, HS_ERR_FORMAT, "%s: %s.special_tokens has no \"ids\" list for "
                             "'%s'", name, field, v ? v : "?");
            cJSON_ArrayForEach(x, ids) {
                if (st != HS_OK) break;
                if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble > 1e9 ||
                    x->valuedouble != (int)x->valuedouble)
                    st = hs_fail(err, HS_ERR_FORMAT, "%s: %s.special_tokens['%s'].ids holds "
                                 "something other than an id", name, field, v ? v : "?");
                else if (p->n_suffix == HS_SUFFIX_MAX)
                    st = hs_fail(err, HS_ERR_FORMAT, "%s: %s.single appends more than %d tokens "
                                 "after the text", name, field, HS_SUFFIX_MAX);
                else
                    p->suffix[p->n_suffix++] = (int)x->valuedouble;
            }
            free(v);
            if (st != HS_OK) return st;
        }
        return HS_OK;
    }
    if (strcmp(ty, "RobertaProcessing") == 0 || strcmp(ty, "BertProcessing") == 0) {
        const cJSON *cls = cJSON_GetObjectItemCaseSensitive(o, "cls");
        if (cJSON_GetArraySize(cls) != 2 || !cJSON_IsString(cls->child))
            return hs_fail(err, HS_ERR_FORMAT, "%s: %s.cls is not [token, id]", name, field);
        if (p->bos == NULL && (p->bos = hs_strdup(cls->child->valuestring)) == NULL)
            return hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", name);
        return HS_OK;
    }
    return hs_fail(err, HS_ERR_FORMAT, "%s: %s: the post-processor '%s' is not supported "
                   "(headscope computes TemplateProcessing, ByteLevel, RobertaProcessing, "
                   "BertProcessing, Sequence)", name, field, ty);
}

static hs_status read_added(const cJSON *list, const char *name, hs_pipe *p, hs_error *err)
{
    const cJSON *e;
    int i = 0;
    cJSON_ArrayForEach(e, list) {
        char f[64];
        snprintf(f, sizeof f, "added_tokens[%d]", i++);
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "content");
        if (!cJSON_IsNumber(id) || !(id->valuedouble >= 0 && id->valuedouble < 2147483647.0) ||
            !cJSON_IsString(c) || c->valuestring[0] == '\0')
            continue; /* the vocabulary's reader names it (an id past int: no cast, fuzz_tokenizer_json) */
        hs_added *a = grow((void **)&p->added, &p->n_added, sizeof *a);
        if (!a || !(a->content = hs_strdup(c->valuestring)))
            return hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", name);
        a->id = (int)id->valuedouble;
        a->len = strlen(a->content);
        p->first_byte[(unsigned char)a->content[0]] = 1;
        int special = 0, v = 0;
        hs_status st = get_bool(e, "special", 0, name, f, &special, err);
        a->special = (unsigned char)special;
        if (st == HS_OK) st = get_bool(e, "normalized", !special, name, f, &v, err);
        a->normalized = (unsigned char)v;
        if (st == HS_OK) st = get_bool(e, "lstrip", 0, name, f, &v, err);
        a->lstrip = (unsigned char)v;
        if (st == HS_OK) st = get_bool(e, "rstrip", 0, name, f, &v, err);
        a->rstrip = (unsigned char)v;
        if (st == HS_OK) st = get_bool(e, "single_word", 0, name, f, &v, err);
        a->single_word = (unsigned char)v;
        if (st != HS_OK) return st;
    }
    return HS_OK;
}

/* A model option that must be absent, null, false, 0 or "". */
static hs_status must_be_off(const cJSON *o, const char *key, const char *name, hs_error *err)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, key);
    if (f == NULL || cJSON_IsNull(f) || cJSON_IsFalse(f) ||
        (cJSON_IsString(f) && f->valuestring[0] == '\0') ||
        (cJSON_IsNumber(f) && f->valuedouble == 0))
        return HS_OK;
    return hs_fail(err, HS_ERR_FORMAT, "%s: model.%s is set; headscope computes BPE without it",
                   name, key);
}

hs_status hs_pipe_from_json(const void *root_, const char *name, hs_pipe **out, hs_error *err)
{
    const cJSON *root = root_;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    *out = NULL;
    hs_pipe *p = calloc(1, sizeof *p);
    if (!p) return hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", name);
    hs_status st = HS_OK;
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
    if (f && !cJSON_IsNull(f)) st = read_normalizer(f, "normalizer", name, p, err);
    f = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
    if (st == HS_OK && f && !cJSON_IsNull(f)) st = read_pre(f, "pre_tokenizer", name, p, err);
    f = cJSON_GetObjectItemCaseSensitive(root, "post_processor");
    if (st == HS_OK && f && !cJSON_IsNull(f)) st = read_post(f, "post_processor", name, p, err);
    f = cJSON_GetObjectItemCaseSensitive(root, "decoder");
    if (st == HS_OK && f && !cJSON_IsNull(f)) st = read_decoder(f, "decoder", name, p, err);
    f = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    if (st == HS_OK && cJSON_IsArray(f)) st = read_added(f, name, p, err);
    static const char *const OFF[] = {"dropout", "continuing_subword_prefix", "end_of_word_suffix"};
    for (size_t i = 0; i < 3 && st == HS_OK; i++) st = must_be_off(model, OFF[i], name, err);
    if (st == HS_OK) st = get_bool(model, "byte_fallback", 0, name, "model", &p->byte_fallback, err);
    if (st == HS_OK) st = get_bool(model, "ignore_merges", 0, name, "model", &p->ignore_merges, err);
    if (st == HS_OK) st = get_bool(model, "fuse_unk", 0, name, "model", &p->fuse_unk, err);
    f = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
    if (st == HS_OK && f && !cJSON_IsNull(f)) st = get_str(model, "unk_token", name, "model", &p->unk_token, err);
    if (st == HS_OK) st = compile_re(WORD_CHAR, 0, name, "added_tokens", &p->alnum, err);
    if (st != HS_OK) {
        hs_pipe_free(p);
        return st;
    }
    *out = p;
    return HS_OK;
}

hs_status hs_pipe_gpt2(int eot, hs_pipe **out, hs_error *err)
{
    *out = NULL;
    hs_pipe *p = calloc(1, sizeof *p);
    hs_pre_step *s = p ? grow((void **)&p->pre, &p->n_pre, sizeof *s) : NULL;
    hs_dec_step *d = s ? grow((void **)&p->dec, &p->n_dec, sizeof *d) : NULL;
    hs_added *a = d && eot >= 0 ? grow((void **)&p->added, &p->n_added, sizeof *a) : NULL;
    if (!d || (eot >= 0 && (!a || !(a->content = hs_strdup("<|endoftext|>"))))) {
        hs_pipe_free(p);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    if (a) {
        a->id = eot;
        a->len = strlen(a->content);
        p->first_byte['<'] = 1;
        a->special = a->normalized = 1;
    }
    s->kind = HS_PRE_BYTELEVEL;
    d->kind = HS_DEC_BYTELEVEL;
    p->byte_level = 1;
    hs_status st = compile_re(GPT2_PATTERN, 0, "GPT-2", "the pre-tokenizer", &s->re, err);
    if (st == HS_OK) st = compile_re(WORD_CHAR, 0, "GPT-2", "added tokens", &p->alnum, err);
    if (st != HS_OK) {
        hs_pipe_free(p);
        return st;
    }
    *out = p;
    return HS_OK;
}
