/*
 * experiments/prompts.c -- prompt sets: JSONL files of prompts, corrupted
 * partners, answers and wrong answers in a model's vocabulary (experiments.h).
 */
#include "experiments/experiments.h"

#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>

void hs_prompts_free(hs_prompts *p)
{
    if (p == NULL) return;
    free(p->clean);
    free(p->corr);
    free(p->answer);
    free(p->wrong);
    free(p->pos);
    free(p->line);
    memset(p, 0, sizeof *p);
}

/* Grows every array of p in use (corr and wrong only when the set has
 * them) to hold `cap` prompts of t tokens. */
static int grow(hs_prompts *p, int cap, int t, int corr, int wrong)
{
    int **arr[] = {&p->answer, &p->pos, &p->line, &p->wrong};
    for (size_t i = 0; i < sizeof arr / sizeof arr[0]; i++) {
        if (arr[i] == &p->wrong && !wrong) continue;
        int *q = realloc(*arr[i], (size_t)cap * sizeof(int));
        if (q == NULL) return -1;
        *arr[i] = q;
    }
    int *c = realloc(p->clean, (size_t)cap * t * sizeof(int));
    if (c == NULL) return -1;
    p->clean = c;
    if (!corr) return 0;
    c = realloc(p->corr, (size_t)cap * t * sizeof(int));
    if (c == NULL) return -1;
    p->corr = c;
    return 0;
}

/* The vocab id of field `key` of o, which must be one token; -1 when absent
 * (HS_OK), or an error. A word vocabulary looks the word up; a BPE encodes
 * the string, which must give one token (GPT-2: " Mary"; hs_tok_one). */
static hs_status one_token(const cJSON *o, const char *key, const hs_tokenizer *v, const char *name,
                           int line, int *id, hs_error *err)
{
    *id = -1;
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, key);
    if (f == NULL) return HS_OK;
    if (!cJSON_IsString(f))
        return hs_fail(err, HS_ERR_INPUT, "%s:%d: \"%s\" must be a string (one token)", name, line, key);
    if (v->kind == HS_TOKENIZER_BPE) {
        hs_error e2 = {0};
        if (hs_tok_one(v, f->valuestring, id, &e2) != HS_OK)
            return hs_fail(err, HS_ERR_INPUT, "%s:%d: %s %s; answer and wrong must be one token", name,
                           line, key, e2.msg);
        return HS_OK;
    }
    *id = hs_tok_id(v, f->valuestring);
    if (*id < 0)
        return hs_fail(err, HS_ERR_INPUT, "%s:%d: %s '%s' is not a token of the model's vocabulary (%zu words)",
                       name, line, key, f->valuestring, v->n);
    return HS_OK;
}

/* Records in p the first line whose answer (a BPE's token, id) has no leading
 * space while the spaced form is one token too (GPT-2: "Mary" 24119 and
 * " Mary" 5335): the caller says so in a note (issue 34). */
static void spaced_form(const cJSON *o, const hs_tokenizer *v, int line, int id, hs_prompts *p)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, "answer");
    if (p->unspaced_line || id < 0 || v->kind != HS_TOKENIZER_BPE || f->valuestring[0] == ' ') return;
    const size_t n = strlen(f->valuestring);
    char *s = malloc(n + 2);
    if (s == NULL) return; /* a note left out, nothing wrong */
    s[0] = ' ';
    memcpy(s + 1, f->valuestring, n + 1);
    hs_error e = {0};
    int spaced;
    if (hs_tok_one(v, s, &spaced, &e) == HS_OK) {
        p->unspaced_line = line;
        p->unspaced_id = id;
        p->spaced_id = spaced;
    }
    free(s);
}

/* Tokenises field `key` of o into ids (t tokens). */
static hs_status sentence(const cJSON *o, const char *key, const hs_tokenizer *v, int n_ctx, const char *name,
                          int line, hs_tokens *tk, hs_error *err)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsString(f))
        return hs_fail(err, HS_ERR_INPUT, "%s:%d: \"%s\" must be a string", name, line, key);
    hs_error e2 = {0};
    if (hs_tok_encode(v, f->valuestring, (size_t)(n_ctx > 0 ? n_ctx : 0), tk, &e2) != HS_OK)
        return hs_fail(err, HS_ERR_INPUT, "%s:%d: %s: %s", name, line, key, e2.msg);
    return HS_OK;
}

/* 1 when s[0..n) ends inside a string or with a brace or bracket open: a
 * line cut short (the rest of a JSON value missing), not a malformed one */
static int json_cut_short(const char *s, size_t n)
{
    int depth = 0, in_str = 0;
    for (size_t i = 0; i < n; i++) {
        if (in_str) {
            if (s[i] == '\\') i++;
            else if (s[i] == '"') in_str = 0;
        } else if (s[i] == '"') {
            in_str = 1;
        } else if (s[i] == '{' || s[i] == '[') {
            depth++;
        } else if (s[i] == '}' || s[i] == ']') {
            depth--;
        }
    }
    return in_str || depth > 0;
}

static hs_status parse_line(const char *s, size_t n, const char *name, int line, const hs_tokenizer *v,
                            int n_ctx, int flags, hs_prompts *p, int *cap, hs_error *err)
{
    static const char *const KEYS[] = {"prompt", "corrupted", "answer", "wrong", "position"};
    hs_status st = HS_OK;
    hs_tokens tc = {0}, tr = {0};
    const char *end = NULL;
    cJSON *o = cJSON_ParseWithLengthOpts(s, n, &end, 0);
    if (!o) {
        size_t at = end && end >= s && end <= s + n ? (size_t)(end - s) : 0;
        if (json_cut_short(s, n))
            st = hs_fail(err, HS_ERR_INPUT, "%s:%d: the line ends inside its JSON object (cut short? each line "
                         "is one whole {\"prompt\": ...})", name, line);
        else
            st = hs_fail(err, HS_ERR_INPUT, "%s:%d: not valid JSON at byte %zu of the line", name, line, at + 1);
        goto done;
    }
    if (!cJSON_IsObject(o)) {
        st = hs_fail(err, HS_ERR_INPUT, "%s:%d: not a JSON object (each line is one {\"prompt\": ...})", name, line);
        goto done;
    }
    for (const cJSON *f = o->child; f; f = f->next) {
        int known = 0;
        for (size_t k = 0; k < sizeof KEYS / sizeof KEYS[0]; k++) known |= strcmp(f->string, KEYS[k]) == 0;
        if (!known) {
            st = hs_fail(err, HS_ERR_INPUT,
                         "%s:%d: unknown key \"%s\" (keys: prompt, corrupted, answer, wrong, position)", name,
                         line, f->string);
            goto done;
        }
    }
    if ((st = sentence(o, "prompt", v, n_ctx, name, line, &tc, err)) != HS_OK) goto done;
    const int t = (int)tc.n, i = p->n;
    if (i > 0 && t != p->t) {
        st = hs_fail(err, HS_ERR_INPUT,
                     "%s:%d: the prompt has %d tokens but line %d's has %d; every prompt of a set must have "
                     "the same length", name, line, t, p->line[0], p->t);
        goto done;
    }
    const int has_corr = cJSON_GetObjectItemCaseSensitive(o, "corrupted") != NULL;
    const int has_wrong = cJSON_GetObjectItemCaseSensitive(o, "wrong") != NULL;
    if (i > 0 && has_corr != (p->corr != NULL)) {
        st = hs_fail(err, HS_ERR_INPUT, "%s:%d: \"corrupted\" is %s here but %s on line %d; give it on every line or none",
                     name, line, has_corr ? "given" : "missing", has_corr ? "missing" : "given", p->line[0]);
        goto done;
    }
    if (i > 0 && has_wrong != (p->wrong != NULL)) {
        st = hs_fail(err, HS_ERR_INPUT, "%s:%d: \"wrong\" is %s here but %s on line %d; give it on every line or none",
                     name, line, has_wrong ? "given" : "missing", has_wrong ? "missing" : "given", p->line[0]);
        goto done;
    }
    if (has_corr) {
        if ((st = sentence(o, "corrupted", v, n_ctx, name, line, &tr, err)) != HS_OK) goto done;
        if (tr.n != tc.n) {
            st = hs_fail(err, HS_ERR_INPUT, "%s:%d: the corrupted prompt has %zu tokens but the prompt has %zu; "
                         "patching needs them aligned", name, line, tr.n, tc.n);
            goto done;
        }
    }
    int answer, wrong, pos = t - 1;
    if ((st = one_token(o, "answer", v, name, line, &answer, err)) != HS_OK) goto done;
    spaced_form(o, v, line, answer, p);
    if (answer < 0 && !(flags & HS_PROMPTS_TEXT_ONLY)) {
        st = hs_fail(err, HS_ERR_INPUT, "%s:%d: \"answer\" is missing (one token of the vocabulary)", name, line);
        goto done;
    }
    if ((st = one_token(o, "wrong", v, name, line, &wrong, err)) != HS_OK) goto done;
    const cJSON *jp = cJSON_GetObjectItemCaseSensitive(o, "position");
    if (jp != NULL) {
        const double d = cJSON_IsNumber(jp) ? jp->valuedouble : NAN;
        if (!(d >= 0 && d < t && d == floor(d))) {
            st = hs_fail(err, HS_ERR_INPUT, "%s:%d: \"position\" must be an integer in [0, %d] (the prompt's tokens)",
                         name, line, t - 1);
            goto done;
        }
        pos = (int)d;
    }
    if (i == 0) p->t = t;
    if (i == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        if (grow(p, *cap, t, has_corr, has_wrong)) {
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
            goto done;
        }
    }
    memcpy(p->clean + (size_t)i * t, tc.ids, (size_t)t * sizeof(int));
    if (has_corr) memcpy(p->corr + (size_t)i * t, tr.ids, (size_t)t * sizeof(int));
    p->answer[i] = answer;
    if (has_wrong) p->wrong[i] = wrong;
    p->pos[i] = pos;
    p->line[i] = line;
    p->n = i + 1;
done:
    cJSON_Delete(o);
    hs_tokens_free(&tc);
    hs_tokens_free(&tr);
    return st;
}

hs_status hs_prompts_parse(const char *text, size_t len, const char *name, const hs_tokenizer *v,
                           int n_ctx, int flags, hs_prompts *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    int cap = 0, line = 0;
    size_t at = 0;
    while (at < len) {
        const char *nl = memchr(text + at, '\n', len - at);
        const size_t end = nl ? (size_t)(nl - text) : len;
        line++;
        size_t a = at, b = end;
        while (a < b && (text[a] == ' ' || text[a] == '\t' || text[a] == '\r')) a++;
        while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\t' || text[b - 1] == '\r')) b--;
        if (b > a) {
            hs_status st = parse_line(text + a, b - a, name, line, v, n_ctx, flags, out, &cap, err);
            if (st != HS_OK) {
                hs_prompts_free(out);
                return st;
            }
        }
        at = end + 1;
    }
    if (out->n == 0) {
        hs_prompts_free(out);
        return hs_fail(err, HS_ERR_INPUT, "%s: empty prompt set (no line with a prompt)", name);
    }
    return HS_OK;
}

hs_status hs_prompts_load(const char *path, const hs_tokenizer *v, int n_ctx, int flags,
                          hs_prompts *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    unsigned char *data = NULL;
    size_t n = 0;
    hs_status st = hs_read_file(path, &data, &n, err);
    if (st != HS_OK) return st;
    st = hs_prompts_parse((const char *)data, n, path, v, n_ctx, flags, out, err);
    free(data);
    return st;
}

hs_status hs_prompts_sentence(const char *s, const hs_tokenizer *v, int n_ctx, hs_prompts *out,
                              hs_error *err)
{
    memset(out, 0, sizeof *out);
    hs_tokens tk = {0};
    hs_status st = hs_tok_encode(v, s, (size_t)(n_ctx > 0 ? n_ctx : 0), &tk, err);
    if (st != HS_OK) return st;
    const int t = (int)tk.n;
    out->clean = malloc((size_t)t * sizeof(int));
    out->answer = malloc(sizeof(int));
    out->pos = malloc(sizeof(int));
    out->line = malloc(sizeof(int));
    if (!out->clean || !out->answer || !out->pos || !out->line) {
        hs_tokens_free(&tk);
        hs_prompts_free(out);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    memcpy(out->clean, tk.ids, (size_t)t * sizeof(int));
    out->n = 1;
    out->t = t;
    out->answer[0] = -1;
    out->pos[0] = t - 1;
    out->line[0] = 1;
    hs_tokens_free(&tk);
    return HS_OK;
}
