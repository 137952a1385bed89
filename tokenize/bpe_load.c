/*
 * tokenize/bpe_load.c -- a byte-level BPE from its files (tokenize.h): a
 * Hugging Face tokenizer.json, vocab.json + merges.txt, or OpenAI's
 * encoder.json + vocab.bpe (the same two files under their gpt-2 names),
 * every field headscope does not compute refused by name. The tables are
 * built by hs_bpe_build (bpe.c).
 *
 * Formats: huggingface/tokenizers src/models/bpe/model.rs (vocab, merges as
 * "a b" or [a, b] -- tokenizers >= 0.20 writes pairs --, merges.txt with an
 * "#version" line, required here: see read_merges_txt), src/tokenizer/serialization.rs (added_tokens),
 * src/pre_tokenizers/byte_level.rs; openai/gpt-2 src/encoder.py (encoder.json
 * + vocab.bpe).
 */
#define _POSIX_C_SOURCE 200809L
#include "tokenize/tokenize_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

/* More tokens than any released tokenizer has (GPT-4o's 200k) by far. */
#define MAX_VOCAB (1u << 24)

/* What the parsers collect before hs_bpe_build: strings point into the
 * cJSON trees or the merges text, which outlive the build. */
typedef struct {
    size_t V;
    const char **token;     /* (V) */
    unsigned char *added;   /* (V) */
    unsigned char *in_model;/* (V) 1: in model.vocab / vocab.json */
    size_t n_merges, cap_merges;
    int (*merges)[2];       /* (n_merges) */
    hs_idmap by_token;      /* token string -> id, for the merges */
    size_t *lens;           /* (V) strlen of each token */
    char *text;             /* every token's string and NUL, by id: token points here
                             * once index_tokens has run */
} bpe_parts;

static void parts_free(bpe_parts *p)
{
    free(p->token);
    free(p->added);
    free(p->in_model);
    free(p->merges);
    hs_idmap_free(&p->by_token);
    free(p->lens);
    free(p->text);
    memset(p, 0, sizeof *p);
}

/* A JSON number that is an integer in [0, MAX_VOCAB), as an int; else -1. */
static int json_id(const cJSON *x)
{
    if (!cJSON_IsNumber(x)) return -1;
    const double v = x->valuedouble;
    if (!(v >= 0 && v < MAX_VOCAB) || v != floor(v)) return -1;
    return (int)v;
}

/* A token string for a message (visible, at most ~60 bytes), malloc'd. */
static char *shown(const char *s)
{
    char cut[64];
    size_t n = strlen(s);
    if (n > 60) {
        n = 60;
        while (n > 0 && ((unsigned char)s[n] & 0xC0u) == 0x80u) n--;
    }
    memcpy(cut, s, n);
    strcpy(cut + n, strlen(s) > n ? "..." : "");
    char *v = hs_visible_dup(cut);
    return v ? v : hs_strdup("?");
}

/* Puts token s at id (from `what`: "model.vocab", "added_tokens"); refuses
 * a second token at one id unless it is the same string. */
static hs_status put_token(bpe_parts *p, int id, const char *s, int added, const char *name,
                           hs_error *err)
{
    if (p->token[id] == NULL) {
        p->token[id] = s;
        p->added[id] = (unsigned char)added;
        return HS_OK;
    }
    if (strcmp(p->token[id], s) == 0) return HS_OK; /* an added token also in the vocab */
    char *a = shown(p->token[id]), *b = shown(s);
    hs_status st = hs_fail(err, HS_ERR_FORMAT, "%s: tokens '%s' and '%s' both have id %d", name,
                           a, b, id);
    free(a);
    free(b);
    return st;
}

/* The vocabulary: the object vocab (token -> id; vname in messages) and the
 * added tokens (a list of {"id", "content"}; NULL for none) into p, ids
 * exactly 0..V-1. */
static hs_status read_vocab(const cJSON *vocab, const cJSON *added, const char *vname,
                            const char *name, bpe_parts *p, hs_error *err)
{
    if (!cJSON_IsObject(vocab))
        return hs_fail(err, HS_ERR_FORMAT, "%s: %s is not an object (token -> id)", name, vname);
    if (added && !cJSON_IsArray(added))
        return hs_fail(err, HS_ERR_FORMAT, "%s: added_tokens is not a list", name);
    int max_id = -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        const int id = json_id(e);
        if (id < 0) {
            char *k = shown(e->string);
            hs_status st = hs_fail(err, HS_ERR_FORMAT, "%s: %s: the id of '%s' is not an integer "
                                   "in [0, %u)", name, vname, k, MAX_VOCAB);
            free(k);
            return st;
        }
        if (id > max_id) max_id = id;
    }
    int k = 0;
    cJSON_ArrayForEach(e, added) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "content");
        if (json_id(id) < 0 || !cJSON_IsString(c) || c->valuestring[0] == '\0')
            return hs_fail(err, HS_ERR_FORMAT, "%s: added_tokens[%d] needs an integer \"id\" in "
                           "[0, %u) and a non-empty \"content\"", name, k, MAX_VOCAB);
        if (json_id(id) > max_id) max_id = json_id(id);
        k++;
    }
    if (max_id < 0) return hs_fail(err, HS_ERR_FORMAT, "%s: %s is empty", name, vname);
    p->V = (size_t)max_id + 1;
    p->token = calloc(p->V, sizeof *p->token);
    p->added = calloc(p->V, 1);
    p->in_model = calloc(p->V, 1);
    if (!p->token || !p->added || !p->in_model) return hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", name);
    hs_status st = HS_OK;
    for (e = vocab->child; e && st == HS_OK; e = e->next) {
        st = put_token(p, json_id(e), e->string, 0, name, err);
        p->in_model[json_id(e)] = 1;
    }
    for (e = added ? added->child : NULL; e && st == HS_OK; e = e->next)
        st = put_token(p, json_id(cJSON_GetObjectItemCaseSensitive(e, "id")),
                       cJSON_GetObjectItemCaseSensitive(e, "content")->valuestring, 1, name, err);
    for (size_t i = 0; i < p->V && st == HS_OK; i++)
        if (p->token[i] == NULL)
            st = hs_fail(err, HS_ERR_FORMAT, "%s: no token has id %zu (ids must be 0..%zu, each "
                         "once)", name, i, p->V - 1);
    return st;
}

/* by_token over p's tokens, for the merges' lookups; the tokens' strings
 * first copied side by side into p->text in id order (GPT-2's: 400 KB, where
 * a merge's lookups compare them, against the parse tree's 6 MB). */
static hs_status index_tokens(bpe_parts *p, const char *name, hs_error *err)
{
    p->lens = malloc(p->V * sizeof *p->lens);
    if (!p->lens) return hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", name);
    size_t total = 0;
    for (size_t i = 0; i < p->V; i++) total += (p->lens[i] = strlen(p->token[i])) + 1;
    if ((p->text = malloc(total)) == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", name);
    for (size_t i = 0, off = 0; i < p->V; off += p->lens[i++] + 1) {
        memcpy(p->text + off, p->token[i], p->lens[i] + 1);
        p->token[i] = p->text + off;
    }
    if (hs_idmap_init(&p->by_token, p->V, p->token, p->lens) != 0)
        return hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s", name);
    for (size_t i = 0; i < p->V; i++) {
        const int j = hs_idmap_put(&p->by_token, (int)i);
        if (j >= 0) {
            char *s = shown(p->token[i]);
            hs_status st = hs_fail(err, HS_ERR_FORMAT, "%s: token '%s' has two ids, %d and %zu",
                                   name, s, j, i);
            free(s);
            return st;
        }
    }
    return HS_OK;
}

/* Appends the merge (a, b) of len_a / len_b bytes; the caller's message
 * says which merge. */
static hs_status add_merge(bpe_parts *p, const char *a, size_t len_a, const char *b,
                           size_t len_b, hs_error *err)
{
    const int ia = hs_idmap_get(&p->by_token, a, len_a);
    const int ib = hs_idmap_get(&p->by_token, b, len_b);
    if (ia < 0 || ib < 0) {
        char *m = hs_strfmt("%.*s", (int)(ia < 0 ? len_a : len_b), ia < 0 ? a : b);
        char *v = m ? shown(m) : NULL;
        hs_status st = hs_fail(err, HS_ERR_FORMAT, "the merge names '%s', which is not in the "
                               "vocabulary", v ? v : "?");
        free(m);
        free(v);
        return st;
    }
    if (p->n_merges == p->cap_merges) {
        const size_t cap = p->cap_merges ? 2 * p->cap_merges : 1024;
        int(*m)[2] = realloc(p->merges, cap * sizeof *m);
        if (!m) return hs_fail(err, HS_ERR_NOMEM, "out of memory reading the merges");
        p->merges = m;
        p->cap_merges = cap;
    }
    p->merges[p->n_merges][0] = ia;
    p->merges[p->n_merges][1] = ib;
    p->n_merges++;
    return HS_OK;
}

/* Builds the tokenizer from p and the pipeline pipe (taken, also on failure). */
static hs_status build(const bpe_parts *p, hs_pipe *pipe, const char *name,
                       const char *merges_name, size_t line0, hs_tokenizer **out, hs_error *err)
{
    if (p->n_merges == 0) {
        hs_pipe_free(pipe);
        return hs_fail(err, HS_ERR_FORMAT, "%s: there are no merges (a byte-level BPE without "
                       "merges would split every text into bytes)", merges_name);
    }
    const hs_bpe_spec spec = {p->V, p->token, p->added, p->n_merges,
                              (const int(*)[2])p->merges, p->in_model, pipe, name, merges_name,
                              line0, &p->by_token};
    return hs_bpe_build(&spec, out, err);
}

/* Refuses a text with a NUL byte or a \u0000 escape (cJSON would cut a
 * string there and no token holds one). */
static hs_status check_text(const char *text, size_t n, const char *name, hs_error *err)
{
    const char *z = memchr(text, '\0', n);
    if (z) return hs_fail(err, HS_ERR_FORMAT, "%s: a NUL byte at byte %zu", name, (size_t)(z - text));
    if (n >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        return hs_fail(err, HS_ERR_FORMAT, "%s: starts with a UTF-8 byte-order mark, which Python's json (hence "
                       "transformers) refuses; save it without the BOM", name);
    for (const char *b = text; (b = memchr(b, '\\', n - (size_t)(b - text))) != NULL; b++) {
        const size_t k = (size_t)(b - text);
        if (k + 6 > n || memcmp(b, "\\u0000", 6) != 0) continue;
        size_t back = 0; /* an escaped backslash before it makes it plain text */
        while (back < k && text[k - back - 1] == '\\') back++;
        if (back % 2 == 0)
            return hs_fail(err, HS_ERR_FORMAT, "%s: \\u0000 at byte %zu (no token holds a NUL)",
                           name, k);
    }
    return HS_OK;
}

/* The text parsed as JSON into *root. */
static hs_status parse_json(const char *text, size_t n, const char *name, cJSON **root,
                            hs_error *err)
{
    hs_status st = check_text(text, n, name, err);
    if (st != HS_OK) return st;
    const char *end = NULL;
    *root = cJSON_ParseWithLengthOpts(text, n, &end, 0);
    if (*root == NULL)
        return hs_fail(err, HS_ERR_FORMAT, "%s: not valid JSON (at byte %zu)", name,
                       end ? (size_t)(end - text) : (size_t)0);
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* tokenizer.json                                                            */

/* model.type must be BPE (absent in legacy files). */
static hs_status check_model(const cJSON *model, const char *name, hs_error *err)
{
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(model, "type");
    if (mt != NULL && (!cJSON_IsString(mt) || strcmp(mt->valuestring, "BPE") != 0))
        return hs_fail(err, HS_ERR_FORMAT, "%s: model.type is %s%s%s, not BPE", name,
                       cJSON_IsString(mt) ? "'" : "", cJSON_IsString(mt) ? mt->valuestring : "not a string",
                       cJSON_IsString(mt) ? "'" : "");
    return HS_OK;
}

/* model.merges: "a b" strings or ["a", "b"] pairs. */
static hs_status read_json_merges(const cJSON *merges, const char *name, bpe_parts *p,
                                  hs_error *err)
{
    if (!cJSON_IsArray(merges))
        return hs_fail(err, HS_ERR_FORMAT, "%s: model.merges is %s, not a list", name,
                       merges ? "something else" : "missing");
    hs_status st = HS_OK;
    size_t r = 0;
    for (const cJSON *m = merges->child; m && st == HS_OK; m = m->next, r++) {
        const char *a = NULL, *b = NULL;
        size_t la = 0, lb = 0;
        if (cJSON_IsString(m)) {
            const char *sp = strchr(m->valuestring, ' ');
            if (sp && sp != m->valuestring && sp[1] != '\0' && strchr(sp + 1, ' ') == NULL) {
                a = m->valuestring;
                la = (size_t)(sp - a);
                b = sp + 1;
                lb = strlen(b);
            }
        } else if (cJSON_GetArraySize(m) == 2 && cJSON_IsString(m->child) &&
                   cJSON_IsString(m->child->next)) {
            a = m->child->valuestring;
            b = m->child->next->valuestring;
            la = strlen(a);
            lb = strlen(b);
        }
        if (a == NULL || la == 0 || lb == 0) {
            st = hs_fail(err, HS_ERR_FORMAT, "%s: merge %zu is neither \"a b\" (two tokens, one "
                         "space) nor [\"a\", \"b\"]", name, r);
        } else if ((st = add_merge(p, a, la, b, lb, err)) != HS_OK) {
            const hs_error inner = *err;
            st = hs_fail(err, st, "%s: merge %zu: %s", name, r, inner.msg);
        }
    }
    return st;
}

hs_status hs_tokenizer_from_hf_json(const char *text, size_t n, const char *name,
                                    hs_tokenizer **out, hs_error *err)
{
    *out = NULL;
    cJSON *root = NULL;
    bpe_parts p = {0};
    hs_status st = parse_json(text, n, name, &root, err);
    if (st != HS_OK) goto done;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!cJSON_IsObject(model)) {
        st = hs_fail(err, HS_ERR_FORMAT, "%s: no \"model\" object (not a Hugging Face "
                     "tokenizer.json)", name);
        goto done;
    }
    hs_pipe *pipe = NULL;
    st = check_model(model, name, err);
    if (st == HS_OK) st = hs_pipe_from_json(root, name, &pipe, err);
    if (st == HS_OK) {
        const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
        const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
        if (vocab == NULL)
            st = hs_fail(err, HS_ERR_FORMAT, "%s: model.vocab is missing", name);
        else
            st = read_vocab(vocab, cJSON_IsNull(added) ? NULL : added, "model.vocab", name, &p,
                            err);
    }
    if (st == HS_OK) st = index_tokens(&p, name, err);
    if (st == HS_OK)
        st = read_json_merges(cJSON_GetObjectItemCaseSensitive(model, "merges"), name, &p, err);
    if (st == HS_OK) {
        st = build(&p, pipe, name, name, 0, out, err);
        pipe = NULL;
    }
    hs_pipe_free(pipe);
done:
    parts_free(&p);
    cJSON_Delete(root);
    return st;
}

/* ------------------------------------------------------------------------ */
/* vocab.json + merges.txt                                                   */

/* merges.txt: a "#version" first line (without it the file reads two ways:
 * encoder.py and transformers' slow tokenizer drop the first line, tokenizers
 * keeps it: refused), then one "a b" a line ("\n" or "\r\n"), an optional
 * empty last line. */
static hs_status read_merges_txt(const char *text, size_t n, const char *name, bpe_parts *p,
                                 size_t *line0, hs_error *err)
{
    const char *z = memchr(text, '\0', n);
    hs_status st = z ? hs_fail(err, HS_ERR_FORMAT, "%s: a NUL byte at byte %zu", name,
                               (size_t)(z - text))
                     : HS_OK;
    size_t line = 1;
    const char *s = text, *end = text + n;
    *line0 = 1;
    if (n >= 8 && strncmp(s, "#version", 8) == 0) {
        const char *nl = memchr(s, '\n', n);
        s = nl ? nl + 1 : end;
        line = *line0 = 2;
    } else if (st == HS_OK && n > 0) {
        st = hs_fail(err, HS_ERR_FORMAT, "%s: no \"#version\" first line, so its first line is ambiguous: GPT-2's "
                     "encoder.py and transformers' slow tokenizer drop it, tokenizers keeps it as a merge; add "
                     "\"#version: 0.2\" as the first line", name);
    }
    for (; s < end && st == HS_OK; line++) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t len = (size_t)((nl ? nl : end) - s);
        if (len > 0 && s[len - 1] == '\r') len--;
        const char *sp = memchr(s, ' ', len);
        if (sp == NULL || sp == s || sp == s + len - 1 || memchr(sp + 1, ' ', len - (size_t)(sp - s) - 1)) {
            st = hs_fail(err, HS_ERR_FORMAT, "%s:%zu: %s; a merge is two tokens split by one space",
                         name, line, len == 0 ? "an empty line" : "not two tokens");
        } else if ((st = add_merge(p, s, (size_t)(sp - s), sp + 1, len - (size_t)(sp - s) - 1,
                                   err)) != HS_OK) {
            const hs_error inner = *err;
            st = hs_fail(err, st, "%s:%zu: %s", name, line, inner.msg);
        }
        s = nl ? nl + 1 : end;
    }
    return st;
}

hs_status hs_tokenizer_from_vocab_merges(const char *vocab, size_t nv, const char *merges,
                                         size_t nm, const char *vocab_name,
                                         const char *merges_name, hs_tokenizer **out,
                                         hs_error *err)
{
    *out = NULL;
    cJSON *root = NULL;
    bpe_parts p = {0};
    size_t line0 = 0;
    hs_status st = parse_json(vocab, nv, vocab_name, &root, err);
    if (st == HS_OK) st = read_vocab(root, NULL, "the vocabulary", vocab_name, &p, err);
    if (st == HS_OK) st = index_tokens(&p, vocab_name, err);
    if (st == HS_OK) st = read_merges_txt(merges, nm, merges_name, &p, &line0, err);
    hs_pipe *pipe = NULL;
    if (st == HS_OK)
        st = hs_pipe_gpt2(hs_idmap_get(&p.by_token, "<|endoftext|>", 13), &pipe, err);
    if (st == HS_OK) st = build(&p, pipe, vocab_name, merges_name, line0, out, err);
    parts_free(&p);
    cJSON_Delete(root);
    return st;
}

/* ------------------------------------------------------------------------ */
/* A folder                                                                  */

/* 1 when dir/name is a regular file (*path = the joined path, malloc'd). */
static int has_file(const char *dir, const char *name, char **path)
{
    struct stat sb;
    *path = hs_path_join(dir, name);
    return *path && stat(*path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Reads a (JSON or merges) file. */
static hs_status slurp(const char *path, char **text, size_t *n, hs_error *err)
{
    unsigned char *d = NULL;
    hs_status st = hs_read_file(path, &d, n, err);
    *text = (char *)d;
    return st;
}

/* The BOS TransformerLens takes (HookedTransformer.set_tokenizer: the
 * tokenizer's bos_token, its eos_token when that is None) from
 * dir/tokenizer_config.json when the folder has one and names either. */
static hs_status config_bos(const char *dir, hs_tokenizer *t, hs_error *err)
{
    char *path = NULL, *text = NULL;
    size_t n = 0;
    cJSON *root = NULL;
    hs_status st = HS_OK;
    if (!has_file(dir, "tokenizer_config.json", &path)) goto done;
    st = slurp(path, &text, &n, err);
    if (st == HS_OK) st = parse_json(text, n, path, &root, err);
    if (st != HS_OK) goto done;
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(root, "bos_token");
    const char *key = "bos_token";
    if (b == NULL) goto done; /* says nothing: the pipeline's BOS stays */
    if (cJSON_IsNull(b)) {
        b = cJSON_GetObjectItemCaseSensitive(root, "eos_token");
        key = "eos_token";
    }
    if (cJSON_IsObject(b)) b = cJSON_GetObjectItemCaseSensitive(b, "content");
    if (b == NULL || cJSON_IsNull(b)) goto done;
    const int id = cJSON_IsString(b) ? hs_tok_id(t, b->valuestring) : -1;
    if (id < 0) {
        char *v = cJSON_IsString(b) ? shown(b->valuestring) : hs_strdup("(not a string)");
        st = hs_fail(err, HS_ERR_FORMAT, "%s: %s '%s' is not a token of the tokenizer", path, key,
                     v ? v : "?");
        free(v);
        goto done;
    }
    t->tables->bos_id = id;
done:
    cJSON_Delete(root);
    free(text);
    free(path);
    return st;
}

hs_status hs_tokenizer_load_dir(const char *dir, hs_tokenizer **out, hs_error *err)
{
    static const char *const PAIRS[2][2] = {{"vocab.json", "merges.txt"},
                                            {"encoder.json", "vocab.bpe"}};
    *out = NULL;
    struct stat sb;
    if (stat(dir, &sb) != 0) return hs_fail(err, HS_ERR_IO, "%s: cannot read the folder", dir);
    if (!S_ISDIR(sb.st_mode)) return hs_fail(err, HS_ERR_IO, "%s is not a folder", dir);
    char *a = NULL, *b = NULL, *ta = NULL, *tb = NULL;
    size_t na = 0, nb = 0;
    hs_status st;
    if (has_file(dir, "tokenizer.json", &a)) {
        st = slurp(a, &ta, &na, err);
        if (st == HS_OK) st = hs_tokenizer_from_hf_json(ta, na, a, out, err);
        goto done;
    }
    for (int k = 0; k < 2; k++) {
        free(a);
        free(b);
        const int ha = has_file(dir, PAIRS[k][0], &a), hb = has_file(dir, PAIRS[k][1], &b);
        if (!a || !b) {
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
            goto done;
        }
        if (ha != hb) {
            st = hs_fail(err, HS_ERR_FORMAT, "%s has %s but no %s", dir, PAIRS[k][ha ? 0 : 1],
                         PAIRS[k][ha ? 1 : 0]);
            goto done;
        }
        if (ha) {
            st = slurp(a, &ta, &na, err);
            if (st == HS_OK) st = slurp(b, &tb, &nb, err);
            if (st == HS_OK) st = hs_tokenizer_from_vocab_merges(ta, na, tb, nb, a, b, out, err);
            goto done;
        }
    }
    st = hs_fail(err, HS_ERR_FORMAT, "%s has no tokenizer: no tokenizer.json, vocab.json + "
                 "merges.txt or encoder.json + vocab.bpe", dir);
done:
    if (st == HS_OK && (st = config_bos(dir, *out, err)) != HS_OK) {
        hs_tokenizer_destroy(*out);
        *out = NULL;
    }
    free(a);
    free(b);
    free(ta);
    free(tb);
    return st;
}
