/*
 * experiments/heads.c -- head detectors over a prompt set (`headscope heads`),
 * configured on the experiment engine (probe.h, section 8), and the user's
 * target pattern file.
 */
#include "experiments/experiments.h"

#include <stdlib.h>
#include <math.h>
#include <string.h>

const char *const hs_heads_names[HS_HEADS_N] = {"previous-token", "duplicate-token", "induction",
                                                "first-noun", "target"};

typedef struct {
    const int *kinds;    /* (n_det) hs_heads_kind of each detector computed */
    const int *is_noun;  /* (V) */
    const float *target; /* (t, t) or NULL */
} heads_ctx;

static void heads_pattern(void *ctx, int det, int row, const int *tok, int t, float *D)
{
    (void)row;
    const heads_ctx *hc = ctx;
    switch (hc->kinds[det]) {
    case HS_HEADS_PREV_TOKEN: hs_detection_pattern(HS_DETECT_PREV_TOKEN, tok, t, D); return;
    case HS_HEADS_DUPLICATE: hs_detection_pattern(HS_DETECT_DUPLICATE, tok, t, D); return;
    case HS_HEADS_INDUCTION: hs_detection_pattern(HS_DETECT_INDUCTION, tok, t, D); return;
    case HS_HEADS_FIRST_NOUN: {
        memset(D, 0, (size_t)t * t * sizeof(float));
        int first = -1;
        for (int j = 0; j < t && first < 0; j++)
            if (hc->is_noun[tok[j]]) first = j;
        if (first >= 0)
            for (int i = first; i < t; i++) D[(size_t)i * t + first] = 1.0f;
        return;
    }
    default: memcpy(D, hc->target, (size_t)t * t * sizeof(float)); return;
    }
}

hs_status hs_heads_run(const hs_model *m, const hs_tokenizer *v, hs_pool *pool, const hs_prompts *p,
                       const char *const *nouns, int n_noun_words, const float *target, hs_detect_metric metric, int exclude_bos,
                       int exclude_current, hs_heads_report *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    const int L = m->cfg.n_layers, H = m->cfg.n_heads, V = m->cfg.d_vocab;
    if (p->n < 1) return hs_fail(err, HS_ERR_INPUT, "heads: the prompt set is empty");
    if (H > 64) return hs_fail(err, HS_ERR_INPUT, "heads: %d heads a layer (at most 64)", H);
    if ((size_t)V < v->n) /* fewer: a folder's tokenizer under a padded vocab_size */
        return hs_fail(err, HS_ERR_CONFIG, "heads: the model's d_vocab is %d but the vocabulary has %zu words",
                       V, v->n);
    out->L = L;
    out->H = H;
    out->n = p->n;
    out->t = p->t;
    out->metric = metric;
    out->exclude_bos = exclude_bos;
    out->exclude_current = exclude_current;
    int *is_noun = calloc((size_t)V, sizeof *is_noun);
    if (is_noun == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    /* a BPE's nouns as they stand inside a sentence, after a space (GPT-2's " animal"; "animal" would be
     * a word's start only at the text's start, or a piece of another word) */
    int n_nouns = 0, rows_with = 0;
    for (int i = 0; i < n_noun_words; i++) {
        char sp[64];
        snprintf(sp, sizeof sp, " %s", nouns[i]);
        const int id = hs_tok_id(v, v->kind == HS_TOKENIZER_BPE ? sp : nouns[i]);
        if (id >= 0 && id < V) {
            is_noun[id] = 1;
            n_nouns++;
        }
    }
    for (int r = 0; r < p->n && n_nouns > 0 && rows_with == 0; r++)
        for (int j = 0; j < p->t; j++)
            if (is_noun[p->clean[(size_t)r * p->t + j]]) {
                rows_with++;
                break;
            }
    if (n_nouns == 0)
        snprintf(out->first_noun_why, sizeof out->first_noun_why, "the vocabulary holds none of the task's nouns%s",
                 v->kind == HS_TOKENIZER_BPE ? " as one token after a space" : "");
    else if (rows_with == 0)
        snprintf(out->first_noun_why, sizeof out->first_noun_why, "no prompt holds one of the task's nouns");
    int kinds[HS_HEADS_N], n_det = 0;
    for (int k = 0; k < HS_HEADS_N; k++) {
        out->has[k] = k < HS_HEADS_FIRST_NOUN || (k == HS_HEADS_FIRST_NOUN && rows_with > 0) ||
                      (k == HS_HEADS_TARGET && target != NULL);
        if (out->has[k]) kinds[n_det++] = k;
        for (int i = 0; i < L * H; i++) out->score[k][i] = NAN;
    }
    double *sc = malloc((size_t)n_det * L * H * sizeof *sc);
    hs_engine e;
    memset(&e, 0, sizeof e);
    hs_status st = sc ? hs_engine_init(&e, m, pool, p->t, err) : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    heads_ctx hc = {kinds, is_noun, target};
    if (st == HS_OK)
        st = hs_engine_detect_heads(&e, p->clean, p->n, n_det, heads_pattern, &hc, metric, exclude_bos,
                                    exclude_current, sc, err);
    for (int d = 0; d < n_det && st == HS_OK; d++)
        for (int i = 0; i < L * H; i++) out->score[kinds[d]][i] = sc[(size_t)d * L * H + i];
    hs_engine_free(&e);
    free(sc);
    free(is_noun);
    return st;
}

cJSON *hs_heads_json(const hs_heads_report *r)
{
    cJSON *o = cJSON_CreateObject(), *names = cJSON_CreateArray(), *scores = cJSON_CreateObject();
    int ok = o && names && scores;
    ok = ok && cJSON_AddStringToObject(o, "metric", r->metric == HS_DETECT_ABS ? "abs" : "mul") &&
         cJSON_AddBoolToObject(o, "exclude_bos", r->exclude_bos) &&
         cJSON_AddBoolToObject(o, "exclude_current", r->exclude_current) &&
         cJSON_AddNumberToObject(o, "prompts", r->n) && cJSON_AddNumberToObject(o, "tokens", r->t);
    for (int k = 0; k < HS_HEADS_N && ok; k++) {
        if (!r->has[k]) continue;
        ok = cJSON_AddItemToArray(names, cJSON_CreateString(hs_heads_names[k]));
        cJSON *layers = cJSON_CreateArray();
        ok = ok && layers && cJSON_AddItemToObject(scores, hs_heads_names[k], layers);
        if (!ok) {
            cJSON_Delete(layers);
            break;
        }
        for (int l = 0; l < r->L && ok; l++) {
            cJSON *row = cJSON_CreateArray();
            ok = row && cJSON_AddItemToArray(layers, row);
            for (int h = 0; h < r->H && ok; h++)
                ok = cJSON_AddItemToArray(row, hs_json_num_or_null(r->score[k][l * r->H + h]));
        }
    }
    if (ok) ok = cJSON_AddItemToObject(o, "detectors", names);
    else cJSON_Delete(names);
    if (ok) ok = cJSON_AddItemToObject(o, "scores", scores);
    else if (!ok && scores && !cJSON_GetObjectItem(o, "scores")) cJSON_Delete(scores);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

void hs_heads_summary(const hs_heads_report *r, hs_buf *b)
{
    hs_buf_printf(b, "heads: %d prompt%s of %d tokens; metric %s (TL detect_head)%s%s\n", r->n, r->n == 1 ? "" : "s",
                  r->t, r->metric == HS_DETECT_ABS ? "abs: 1 - round(sum|A - D| / t, 3)" : "mul: sum(A * D) / sum(A)",
                  r->exclude_bos ? ", column 0 excluded" : "", r->exclude_current ? ", diagonal excluded" : "");
    if (!r->has[HS_HEADS_FIRST_NOUN])
        hs_buf_printf(b, "first-noun: not computed (%s)\n", r->first_noun_why);
    hs_buf_printf(b, "%-7s", "head");
    for (int k = 0; k < HS_HEADS_N; k++)
        if (r->has[k]) hs_buf_printf(b, " %15s", hs_heads_names[k]);
    hs_buf_printf(b, "\n");
    for (int l = 0; l < r->L; l++)
        for (int h = 0; h < r->H; h++) {
            char name[24];
            snprintf(name, sizeof name, "L%dH%d", l, h);
            hs_buf_printf(b, "%-7s", name);
            for (int k = 0; k < HS_HEADS_N; k++)
                if (r->has[k]) {
                    hs_buf_puts(b, " ");
                    hs_buf_fixed(b, r->score[k][l * r->H + h], 15, 3, 0);
                }
            hs_buf_printf(b, "\n");
        }
}

hs_status hs_target_pattern_load(const char *path, int t, float **D, hs_error *err)
{
    *D = NULL;
    unsigned char *data = NULL;
    size_t n = 0;
    hs_status st = hs_read_file(path, &data, &n, err);
    if (st != HS_OK) return st;
    cJSON *a = cJSON_ParseWithLength((const char *)data, n);
    free(data);
    float *M = malloc((size_t)t * t * sizeof *M);
    if (M == NULL) {
        cJSON_Delete(a);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != t) {
        st = hs_fail(err, HS_ERR_INPUT, "%s: a target pattern must be a JSON array of %d rows of %d numbers "
                     "(the prompts' tokens), [dest][src]", path, t, t);
        goto done;
    }
    for (int i = 0; i < t && st == HS_OK; i++) {
        const cJSON *row = cJSON_GetArrayItem(a, i);
        if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != t) {
            st = hs_fail(err, HS_ERR_INPUT, "%s: row %d is not an array of %d numbers", path, i, t);
            break;
        }
        for (int j = 0; j < t; j++) {
            const cJSON *x = cJSON_GetArrayItem(row, j);
            if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble)) {
                st = hs_fail(err, HS_ERR_INPUT, "%s: [%d, %d] is not a finite number", path, i, j);
                break;
            }
            if (j > i && x->valuedouble != 0.0) {
                st = hs_fail(err, HS_ERR_INPUT, "%s: [%d, %d] = %g is above the diagonal (a causal head "
                             "cannot attend to a later token; TL requires a lower-triangular pattern)",
                             path, i, j, x->valuedouble);
                break;
            }
            M[(size_t)i * t + j] = (float)x->valuedouble;
        }
    }
done:
    cJSON_Delete(a);
    if (st != HS_OK) free(M);
    else *D = M;
    return st;
}

