/*
 * experiments/inspect.c -- one inspect run (experiments.h, hs_inspect_run):
 * the checks of its input, the model's run with the cache it needs, the top
 * predictions, the output folder (attention figures in inspect_figs.c; the
 * direct logit attribution bars, predictions.json and index.json here) and
 * the report the caller shows.
 */
#include "experiments/inspect_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hs_status oom(hs_error *err) { return hs_fail(err, HS_ERR_NOMEM, "out of memory"); }

/* Token id as figures show it (hs_tok_display), malloc'd; NULL on OOM. */
static char *display(const hs_tokenizer *t, int id)
{
    hs_buf b = {0};
    hs_tok_display(t, id, &b);
    return hs_buf_take(&b);
}

char *insp_tok_shown(const hs_tokenizer *t, int id)
{
    char *d = display(t, id), *w = d ? hs_visible_dup(d) : NULL;
    free(d);
    return w;
}

void hs_inspect_opts_default(hs_inspect_opts *o)
{
    memset(o, 0, sizeof *o);
    o->out_dir = "inspect-out";
    o->top = 5;
    o->crop_a = o->crop_b = HS_INSPECT_OPEN;
}

int insp_context(cJSON *o, const insp_run *x, int with_tokens)
{
    if (!o) return 0;
    cJSON *cfg = hs_config_to_json(&x->m->cfg, HS_CONFIG_JSON_ALL);
    if (!cfg || !cJSON_AddItemToObject(o, "config", cfg)) {
        cJSON_Delete(cfg);
        return 0;
    }
    if (!cJSON_AddStringToObject(o, "model", x->o->model_path) ||
        !cJSON_AddStringToObject(o, "sentence", x->o->sentence))
        return 0;
    if (with_tokens) {
        cJSON *t = cJSON_CreateStringArray((const char *const *)x->ta->strs, (int)x->ta->n);
        if (!t || !cJSON_AddItemToObject(o, "tokens", t)) {
            cJSON_Delete(t);
            return 0;
        }
    }
    cJSON *ids = cJSON_CreateIntArray(x->ta->ids, (int)x->ta->n);
    if (!ids || !cJSON_AddItemToObject(o, "token_ids", ids)) {
        cJSON_Delete(ids);
        return 0;
    }
    return cJSON_AddNumberToObject(o, "query_position", x->pos) != NULL;
}

/* The heads of only: each in the model, no more than a figure holds. */
static hs_status check_only(const hs_inspect_opts *o, int L, int H, hs_error *err)
{
    for (int i = 0; i < o->n_only; i++)
        if (o->only[i].layer < 0 || o->only[i].head < 0 || o->only[i].layer >= L ||
            o->only[i].head >= H)
            return hs_fail(err, HS_ERR_INPUT, "head L%dH%d is not in the model (%d layers x %d "
                           "heads: L0H0..L%dH%d)", o->only[i].layer, o->only[i].head, L, H, L - 1,
                           H - 1);
    if (o->n_only > HS_VIZ_MAX_HEADS)
        return hs_fail(err, HS_ERR_INPUT, "--only lists %d heads; a figure shows at most %d",
                       o->n_only, HS_VIZ_MAX_HEADS);
    return HS_OK;
}

/* The query position: the last token, or o's (negative from the end). */
static hs_status check_position(const hs_inspect_opts *o, int T, int *pos, hs_error *err)
{
    *pos = T - 1;
    if (!o->has_position) return HS_OK;
    if (o->position < -T || o->position >= T) {
        char num[32];
        snprintf(num, sizeof num, "%ld", o->position);
        return hs_fail(err, HS_ERR_INPUT, "--position %s is outside the sentence's %d tokens "
                       "(0..%d, or -1..-%d from the end)", o->position_text ? o->position_text : num,
                       T, T - 1, T);
    }
    *pos = o->position < 0 ? T + (int)o->position : (int)o->position;
    return HS_OK;
}

/* vs as one token id of the vocabulary (-1 without vs): vs encoded, the BOS
 * a tokenizer prepends left out (GPT-2: " Mary" is one token, as is "Mary"). */
static hs_status check_vs(const hs_tokenizer *tok, const char *vs, int *vs_id, hs_error *err)
{
    *vs_id = -1;
    if (!vs) return HS_OK;
    hs_error e = {0};
    if (tok->kind == HS_TOKENIZER_BPE) { /* its tokens named, as a prompt set's answer (issue 34) */
        hs_status s = hs_tok_one(tok, vs, vs_id, &e);
        if (s == HS_ERR_INPUT) return hs_fail(err, s, "--vs %s; --vs takes one token of the vocabulary", e.msg);
        return s == HS_OK ? HS_OK : hs_fail(err, s, "--vs: %s", e.msg);
    }
    hs_tokens v = {0};
    hs_status s = hs_tok_encode(tok, vs, 0, &v, &e);
    if (s != HS_OK) {
        hs_fail(err, s, "--vs: %s", e.msg);
    } else if (v.n != 1 + (size_t)(hs_tok_bos(tok) >= 0) + hs_tok_n_suffix(tok)) {
        char *w = hs_visible_dup(vs);
        s = hs_fail(err, HS_ERR_INPUT, "--vs takes one word of the vocabulary, not %zu ('%s')",
                    v.n - (size_t)(hs_tok_bos(tok) >= 0) - hs_tok_n_suffix(tok), w ? w : "?");
        free(w);
    } else {
        *vs_id = v.ids[hs_tok_bos(tok) >= 0 ? 1 : 0];
    }
    hs_tokens_free(&v);
    return s;
}

/* One end v of a Python slice over T positions: open (HS_INSPECT_OPEN) is
 * dflt, a negative counts from the end, clamped to 0..T. */
static long slice_end(long v, long dflt, int T)
{
    if (v == HS_INSPECT_OPEN) return dflt;
    if (v < 0) v += T;
    return v < 0 ? 0 : v > T ? T : v;
}

/* Every check of the input, in the order they are refused; the sentences'
 * tokens into ta, tb (tb empty without a pair). */
static hs_status check_input(insp_run *x, hs_tokens *ta, hs_tokens *tb, hs_error *err)
{
    const hs_inspect_opts *o = x->o;
    const size_t n_ctx = (size_t)x->m->cfg.n_ctx;
    hs_status s = check_only(o, x->L, x->H, err);
    if (s == HS_OK) s = hs_tok_encode(x->tok, o->sentence, n_ctx, ta, err);
    if (s != HS_OK) return s;
    if (ta->folded) hs_note(x->notes, HS_NOTE_CMD, "note: folded the sentence to lower case");
    x->T = (int)ta->n;
    if (o->sentence2) {
        hs_error e = {0};
        s = hs_tok_encode(x->tok, o->sentence2, n_ctx, tb, &e);
        if (s != HS_OK) return hs_fail(err, s, "second --sentence: %s", e.msg);
        if (tb->n != ta->n)
            return hs_fail(err, HS_ERR_INPUT, "the two sentences have %zu and %zu tokens; a pair "
                           "and its difference need the same number", ta->n, tb->n);
    }
    long a = slice_end(o->crop_a, 0, x->T), b = slice_end(o->crop_b, x->T, x->T);
    if (a >= b) {
        char sa[24] = "", sb[24] = "";
        if (o->crop_a != HS_INSPECT_OPEN) snprintf(sa, sizeof sa, "%ld", o->crop_a);
        if (o->crop_b != HS_INSPECT_OPEN) snprintf(sb, sizeof sb, "%ld", o->crop_b);
        return hs_fail(err, HS_ERR_INPUT, "--positions %s:%s selects no position of the "
                       "sentence's %d tokens (0..%d)", sa, sb, x->T, x->T - 1);
    }
    x->a = (int)a;
    x->b = (int)b - 1;
    s = check_position(o, x->T, &x->pos, err);
    if (s == HS_OK) s = check_vs(x->tok, o->vs, &x->vs_id, err);
    return s;
}

/* Copies the [L, H, T, T] patterns out of cache c into pats. */
static void copy_patterns(const insp_run *x, const hs_cache *c, float *pats)
{
    const size_t n = (size_t)x->H * x->T * x->T;
    for (int l = 0; l < x->L; l++) {
        const hs_cache_entry *e = hs_cache_getf(c, "blocks.%d.attn.hook_pattern", l);
        HS_ASSERT(e && e->numel == n);
        memcpy(pats + (size_t)l * n, e->data, n * sizeof *pats);
    }
}

/* Runs sentence A into cache (what the figures and DLA read) and pats, and
 * with a pair B's patterns into pats2 (the same acts: the same length). */
static hs_status forward(const insp_run *x, const int *ids2, hs_acts **acts, hs_cache *cache,
                         float **pats, float **pats2, float **logits2, hs_error *err)
{
    static const char *const filters2[] = {"blocks.*.attn.hook_pattern", "logits"};
    const size_t V = (size_t)x->m->cfg.d_vocab;
    static const char *const filters[] = {"blocks.*.attn.hook_pattern", "hook_embed",
                                          "?hook_pos_embed", "blocks.0.hook_resid_pre",
                                          "blocks.*.attn.hook_z", "?blocks.*.hook_mlp_out",
                                          "?ln_final.hook_scale", "logits"};
    const size_t n = (size_t)x->L * x->H * x->T * x->T;
    hs_status s = hs_acts_create(&x->m->cfg, 1, x->T, 0, acts, err);
    if (s == HS_OK) s = hs_run_with_cache(x->m, *acts, x->ta->ids, 1, x->T, filters, 8, NULL, cache, err);
    if (s == HS_OK && !(*pats = malloc(n * sizeof **pats))) s = oom(err);
    if (s != HS_OK) return s;
    copy_patterns(x, cache, *pats);
    if (!ids2) return HS_OK;
    hs_cache c2;
    hs_cache_init(&c2);
    if (!(*pats2 = malloc(n * sizeof **pats2)) || !(*logits2 = malloc(V * sizeof **logits2)))
        s = oom(err);
    else s = hs_run_with_cache(x->m, *acts, ids2, 1, x->T, filters2, 2, NULL, &c2, err);
    if (s == HS_OK) {
        copy_patterns(x, &c2, *pats2);
        memcpy(*logits2, hs_cache_get(&c2, "logits")->data + (size_t)x->pos * V, V * sizeof **logits2);
    }
    hs_cache_free(&c2);
    return s;
}

/* Refuses a non-finite logit among logits [V] (before anything is written)
 * and puts the top predictions into *ids, *probs [*n] (malloc'd). */
static hs_status top_of(const insp_run *x, const float *logits, int top, int *n, int **ids,
                        double **probs, hs_error *err)
{
    const int V = x->m->cfg.d_vocab;
    for (int i = 0; i < V; i++)
        if (!isfinite(logits[i])) {
            char *w = insp_tok_shown(x->tok, i);
            hs_status s = hs_fail(err, HS_ERR_NUMERIC, "the logit of '%s' at position %d is %s: "
                                  "the weights overflow float32", w ? w : "?", x->pos,
                                  isnan(logits[i]) ? "NaN" : logits[i] > 0 ? "+inf" : "-inf");
            free(w);
            return s;
        }
    int K = top < 1 ? 1 : top > V ? V : top;
    if (K > 4096) K = 4096;
    *ids = malloc((size_t)K * sizeof **ids);
    *probs = malloc((size_t)K * sizeof **probs);
    if (!*ids || !*probs) return oom(err);
    *n = hs_top_k(logits, V, K, *ids, *probs);
    return HS_OK;
}

/* Fills the report's top predictions (of both sentences of a pair) and
 * logit difference at the query position (top_of's refusals). */
static hs_status predict(insp_run *x, int top, hs_inspect_report *out, hs_error *err)
{
    const float *logits = hs_cache_get(x->cache, "logits")->data + (size_t)x->pos * x->m->cfg.d_vocab;
    hs_status s = top_of(x, logits, top, &out->n_top, &out->top_ids, &out->top_probs, err);
    if (s != HS_OK) return s;
    x->pred = out->top_ids[0];
    out->vs_id = x->vs_id;
    if (x->vs_id >= 0) out->logit_diff = (double)logits[x->pred] - logits[x->vs_id];
    int n2 = 0;
    if (x->logits2) s = top_of(x, x->logits2, top, &n2, &out->top_ids2, &out->top_probs2, err);
    return s;
}

/* The DLA JSON's numbers: the target, the sum a reader can check. */
static int dla_json_fill(cJSON *j, const insp_run *x, int tok_a, int tok_b, double value,
                         const float *vals, int n, const hs_dla *d, double bu)
{
    /* a token's string, JSON null for a padding id without one (a folder's
     * vocab_size past its tokenizer, tasks/load.c) */
    const char *sa = hs_tok_str(x->tok, tok_a), *sb = tok_b >= 0 ? hs_tok_str(x->tok, tok_b) : NULL;
    int ok = insp_context(j, x, 1) &&
             cJSON_AddItemToObject(j, "target_token", sa ? cJSON_CreateString(sa) : cJSON_CreateNull()) &&
             cJSON_AddNumberToObject(j, "target_id", tok_a);
    if (ok && tok_b >= 0)
        ok = cJSON_AddItemToObject(j, "vs_token", sb ? cJSON_CreateString(sb) : cJSON_CreateNull()) &&
             cJSON_AddNumberToObject(j, "vs_id", tok_b);
    /* the identity a reader can check: sum(values) = metric */
    double sum = 0;
    for (int i = 0; i < n; i++) sum += vals[i];
    return ok && cJSON_AddStringToObject(j, "weights", hs_model_weights_name(x->m)) &&
           cJSON_AddStringToObject(j, "metric", tok_b >= 0 ? "logit_diff" : "logit") &&
           cJSON_AddNumberToObject(j, tok_b >= 0 ? "logit_diff" : "logit", value) &&
           cJSON_AddNumberToObject(j, "sum_of_values", sum) &&
           cJSON_AddNumberToObject(j, "ln_final_bias_term", d->constant) &&
           cJSON_AddNumberToObject(j, "unembed_bias_term", bu) &&
           cJSON_AddStringToObject(j, "note",
                                   "values[i] = component i of the final residual stream at "
                                   "query_position, through the final norm with its scale "
                                   "frozen from this run, dotted with the unembedding "
                                   "direction; with the norm's bias term (ln_final_b) and b_U they "
                                   "sum to the metric");
}

/* The DLA bar chart towards tok_a (or tok_a - tok_b), as stem. */
static hs_status write_dla(const insp_run *x, int tok_a, int tok_b, const char *stem,
                           hs_error *err)
{
    hs_outdir *od = x->od;
    const hs_model *m = x->m;
    hs_dla d = {0};
    hs_status s = hs_logit_attribution(m, x->cache, 0, x->pos, tok_a, tok_b, &d, err);
    if (s != HS_OK) return s;
    const float *logits = hs_cache_get(x->cache, "logits")->data + (size_t)x->pos * m->cfg.d_vocab;
    const float *bU = m->params.b_U;
    double bu = bU ? (double)bU[tok_a] - (tok_b >= 0 ? (double)bU[tok_b] : 0.0) : 0.0;
    double value = (double)logits[tok_a] - (tok_b >= 0 ? (double)logits[tok_b] : 0.0);
    int has_const = m->params.ln_final_b != NULL; /* none in LNPre (processed weights) */
    int n = d.n + has_const + (bU != NULL);
    float *vals = malloc((size_t)n * sizeof *vals);
    const char **labels = malloc((size_t)n * sizeof *labels);
    /* vocabulary words and the prompt's tokens are user text: no fixed buffers. The
       titles quote each token as the axes, the pair titles and the terminal show it
       ('·Mary'; an exact ' Mary' let a title wrap inside the quotes) */
    char *wa = insp_tok_shown(x->tok, tok_a), *wb = tok_b >= 0 ? insp_tok_shown(x->tok, tok_b) : NULL,
         *q = insp_tok_shown(x->tok, x->ta->ids[x->pos]);
    char *title = NULL, *xlabel = NULL, *shows = NULL;
    if (wa && q && (tok_b < 0 || wb)) {
        char val[32]; /* as the figure's ticks write numbers: no 31 digits for a 1e30 logit */
        hs_viz_fmt_value(val, sizeof val, value);
        if (tok_b >= 0) {
            title = hs_strfmt("logit difference '%s' − '%s' at position %d ('%s'): %s", wa, wb,
                              x->pos, q, val);
            xlabel = hs_strfmt("direct contribution to logit('%s') − logit('%s')", wa, wb);
            shows = hs_strfmt("direct logit attribution of each component to logit('%s') - "
                              "logit('%s') at position %d", wa, wb, x->pos);
        } else {
            title = hs_strfmt("direct logit attribution to '%s' at position %d ('%s'): %s", wa,
                              x->pos, q, val);
            xlabel = hs_strfmt("direct contribution to logit('%s')", wa);
            shows = hs_strfmt("direct logit attribution of each component to the predicted "
                              "token '%s' at position %d", wa, x->pos);
        }
    }
    hs_viz_figure *fig = NULL;
    cJSON *j = NULL;
    if (!vals || !labels || !title || !xlabel || !shows) s = oom(err);
    for (int i = 0; s == HS_OK && i < d.n; i++) {
        vals[i] = (float)d.attr[i];
        labels[i] = d.labels[i];
    }
    if (s == HS_OK && has_const) {
        vals[d.n] = (float)d.constant;
        labels[d.n] = HS_DLA_LN_FINAL_B;
    }
    if (s == HS_OK && bU) {
        vals[n - 1] = (float)bu;
        labels[n - 1] = HS_DLA_B_U;
    }
    const char *t = insp_title(x, title, 0);
    if (s == HS_OK && hs_figopts_images(od->fo)) {
        hs_viz_options bo = hs_figopts_for(od->fo, HS_FIG_BARS_SUM, 0); /* they add up */
        hs_error fe = {0};
        s = hs_viz_bars_figure(&fig, vals, (size_t)n, labels, t, xlabel, &bo, &fe);
        s = hs_outdir_unfit(od, stem, s, &fe, err);
    }
    if (s == HS_OK && hs_figopts_data(od->fo)) {
        s = hs_viz_bars_json(&j, vals, (size_t)n, labels, t, xlabel, err);
        if (s == HS_OK && !dla_json_fill(j, x, tok_a, tok_b, value, vals, n, &d, bu)) s = oom(err);
    }
    if (s == HS_OK) s = hs_outdir_figure(od, stem, &fig, j, shows, err);
    hs_viz_figure_destroy(fig);
    cJSON_Delete(j);
    free(wa);
    free(wb);
    free(q);
    free(title);
    free(xlabel);
    free(shows);
    free(vals);
    free(labels);
    hs_dla_free(&d);
    return s;
}

/* Adds the list key of n predictions (ids, probs; logits [V] their logits)
 * to pj. 0 when memory ran out. */
static int add_predictions(cJSON *pj, const char *key, const insp_run *x, int n, const int *ids,
                           const double *probs, const float *logits)
{
    cJSON *arr = cJSON_AddArrayToObject(pj, key);
    int ok = arr != NULL;
    for (int i = 0; ok && i < n; i++) {
        cJSON *e = cJSON_CreateObject();
        const char *ts = hs_tok_str(x->tok, ids[i]); /* NULL: a padding id without a token */
        ok = e && cJSON_AddItemToObject(e, "token", ts ? cJSON_CreateString(ts) : cJSON_CreateNull()) &&
             cJSON_AddNumberToObject(e, "id", ids[i]) && cJSON_AddNumberToObject(e, "prob", probs[i]) &&
             cJSON_AddNumberToObject(e, "logit", logits[ids[i]]) && cJSON_AddItemToArray(arr, e);
        if (!ok) cJSON_Delete(e);
    }
    return ok;
}

/* predictions.json: the top predictions at the query position; with a pair
 * also sentence B's ("sentence_b", "query_token_b", "predictions_b"). */
static hs_status write_predictions(const insp_run *x, const hs_inspect_report *r, hs_error *err)
{
    const float *logits = hs_cache_get(x->cache, "logits")->data + (size_t)x->pos * x->m->cfg.d_vocab;
    cJSON *pj = cJSON_CreateObject();
    int ok = insp_context(pj, x, 1) &&
             cJSON_AddStringToObject(pj, "query_token", x->ta->strs[x->pos]) &&
             add_predictions(pj, "predictions", x, r->n_top, r->top_ids, r->top_probs, logits);
    if (ok && x->logits2 && r->top_ids2)
        ok = cJSON_AddStringToObject(pj, "sentence_b", x->o->sentence2) &&
             cJSON_AddStringToObject(pj, "query_token_b", x->tb->strs[x->pos]) &&
             add_predictions(pj, "predictions_b", x, r->n_top, r->top_ids2, r->top_probs2, x->logits2);
    char shows[128];
    snprintf(shows, sizeof shows, "top %d next-token predictions at position %d with "
                                  "probabilities", r->n_top, x->pos);
    hs_status s = ok ? hs_outdir_json(x->od, "predictions", pj, shows, err) : oom(err);
    cJSON_Delete(pj);
    return s;
}

/* The chapter's rows at the query position of patterns pats [L, H, T, T]
 * into rows [n_rows, pos + 1]: each layer head-averaged, then with head_rows
 * one per head (only's in its order, else every head). */
static void rows_of(const insp_run *x, const float *pats, int n_heads, float *rows)
{
    const hs_inspect_opts *o = x->o;
    const int L = x->L, H = x->H, S = x->pos + 1;
    const size_t T = (size_t)x->T;
    for (int l = 0; l < L; l++)
        for (int j = 0; j < S; j++) {
            double s = 0;
            for (int h = 0; h < H; h++)
                s += pats[(((size_t)l * H + h) * T + (size_t)x->pos) * T + (size_t)j];
            rows[(size_t)l * S + j] = (float)(s / H);
        }
    for (int i = 0; i < n_heads; i++) {
        int l = o->n_only ? o->only[i].layer : i / H, h = o->n_only ? o->only[i].head : i % H;
        memcpy(rows + (size_t)(L + i) * S, pats + (((size_t)l * H + h) * T + (size_t)x->pos) * T,
               (size_t)S * sizeof *rows);
    }
}

/* The report's rows (rows_of) of sentence A, and of B with a pair, their
 * labels and the pair's names. */
static hs_status fill_rows(const insp_run *x, hs_inspect_report *r, hs_error *err)
{
    const hs_inspect_opts *o = x->o;
    const int L = x->L, H = x->H, S = x->pos + 1;
    const int n_heads = o->head_rows ? (o->n_only ? o->n_only : L * H) : 0;
    const size_t n = (size_t)(L + n_heads) * S;
    r->n_cols = S;
    r->rows = malloc(n * sizeof *r->rows);
    r->row_labels = calloc((size_t)(L + n_heads), sizeof *r->row_labels);
    if (!r->rows || !r->row_labels) return oom(err);
    rows_of(x, x->pats, n_heads, r->rows);
    for (int l = 0; l < L; l++)
        if (!(r->row_labels[r->n_rows++] = hs_strfmt("L%d", l))) return oom(err);
    for (int i = 0; i < n_heads; i++) {
        int l = o->n_only ? o->only[i].layer : i / H, h = o->n_only ? o->only[i].head : i % H;
        if (!(r->row_labels[r->n_rows++] = hs_strfmt("L%dH%d", l, h))) return oom(err);
    }
    if (!x->pats2) return HS_OK;
    if (!(r->rows2 = malloc(n * sizeof *r->rows2))) return oom(err);
    rows_of(x, x->pats2, n_heads, r->rows2);
    insp_pair_names(x, &r->name_a, &r->name_b);
    return r->name_a && r->name_b ? HS_OK : oom(err);
}

/* The n tokens of k as figures show them (hs_tok_display), into *out [n]. */
static hs_status display_labels(const hs_tokenizer *t, const hs_tokens *k, char ***out,
                                hs_error *err)
{
    *out = calloc(k->n ? k->n : 1, sizeof **out);
    if (!*out) return oom(err);
    for (size_t i = 0; i < k->n; i++)
        if (!((*out)[i] = display(t, k->ids[i]))) return oom(err);
    return HS_OK;
}

static void free_strs(char **s, size_t n)
{
    for (size_t i = 0; s && i < n; i++) free(s[i]);
    free(s);
}

/* The folder's files: the attention figures, dla (and dla_vs),
 * predictions.json, index.json (with the run's context), committed. */
static hs_status write_folder(const insp_run *x, const hs_inspect_report *r, hs_error *err)
{
    hs_status s = insp_figures(x, err);
    /* DLA splits the residual into its writers: undefined after a post-norm
     * or a replacing attention (hs_config_nonadditive) */
    const char *nonadd = hs_config_nonadditive(&x->m->cfg);
    if (nonadd)
        hs_note(x->notes, HS_NOTE_CMD, "note: no dla figure: the residual stream is not a sum of "
                "its writers with %s", nonadd);
    if (s == HS_OK && !nonadd) s = write_dla(x, x->pred, -1, "dla", err);
    if (s == HS_OK && x->vs_id >= 0 && !nonadd) {
        if (x->vs_id == x->pred) {
            char *w = insp_tok_shown(x->tok, x->vs_id);
            hs_note(x->notes, HS_NOTE_CMD, "note: --vs %s is the predicted token; the logit "
                    "difference is 0", w ? w : "?");
            free(w);
        }
        s = write_dla(x, x->pred, x->vs_id, "dla_vs", err);
    }
    if (s == HS_OK) s = write_predictions(x, r, err);
    if (s != HS_OK) return s;
    cJSON *extra = cJSON_CreateObject();
    s = insp_context(extra, x, 1) ? hs_outdir_commit(x->od, extra, err) : oom(err);
    cJSON_Delete(extra);
    return s;
}

hs_status hs_inspect_run(const hs_model *m, const hs_tokenizer *tok, const hs_inspect_opts *o,
                         hs_figopts *fo, hs_pool *pool, const hs_notes *notes,
                         hs_inspect_report *out, hs_error *err)
{
    HS_ASSERT(o->model_path && o->out_dir);
    memset(out, 0, sizeof *out);
    hs_tokens ta = {0}, tb = {0};
    hs_acts *acts = NULL;
    hs_cache cache;
    hs_cache_init(&cache);
    hs_outdir od = {0};
    float *pats = NULL, *pats2 = NULL, *logits2 = NULL;
    insp_run x = {.m = m, .tok = tok, .o = o, .notes = notes, .od = &od, .fo = fo, .ta = &ta,
                  .cache = &cache, .L = m->cfg.n_layers, .H = m->cfg.n_heads, .vs_id = -1};
    const double font_pt = fo->viz.font_pt, font_min_pt = fo->viz.font_min_pt; /* insp_pin_font */
    hs_status s = check_input(&x, &ta, &tb, err);
    if (s == HS_OK)
        s = forward(&x, o->sentence2 ? tb.ids : NULL, &acts, &cache, &pats, &pats2, &logits2, err);
    x.logits2 = logits2;
    x.tb = o->sentence2 ? &tb : NULL;
    if (s == HS_OK) s = predict(&x, o->top, out, err);
    if (s == HS_OK) s = hs_figopts_font_wait(fo, pool, err);
    if (s == HS_OK) s = display_labels(tok, &ta, &out->labels, err);
    out->n_tokens = out->labels ? x.T : 0;
    if (s == HS_OK && o->sentence2) s = display_labels(tok, &tb, &out->labels2, err);
    x.pats = pats;
    x.pats2 = pats2;
    x.lab = (const char *const *)out->labels;
    x.lab2 = (const char *const *)out->labels2;
    x.ids2 = o->sentence2 ? tb.ids : NULL;
    out->pos = x.pos;
    const char *const inputs[] = {o->model_path, NULL}; /* never replaced or removed */
    if (s == HS_OK) s = hs_outdir_open(&od, "inspect", o->out_dir, fo, inputs, pool, notes, err);
    if (s == HS_OK) s = write_folder(&x, out, err);
    if (s == HS_OK) s = fill_rows(&x, out, err);
    if (s == HS_OK) out->n_files = hs_outdir_n_files(&od);
    hs_outdir_close(&od);
    fo->viz.font_pt = font_pt, fo->viz.font_min_pt = font_min_pt;
    free(pats);
    free(pats2);
    free(logits2);
    hs_cache_free(&cache);
    hs_acts_destroy(acts);
    hs_tokens_free(&ta);
    hs_tokens_free(&tb);
    return s;
}

void hs_inspect_report_free(hs_inspect_report *r)
{
    if (!r) return;
    free_strs(r->labels2, r->labels2 ? (size_t)r->n_tokens : 0);
    free_strs(r->labels, (size_t)r->n_tokens);
    free(r->rows2);
    free(r->name_a);
    free(r->name_b);
    free_strs(r->row_labels, (size_t)r->n_rows);
    free(r->rows);
    free(r->top_ids);
    free(r->top_probs);
    free(r->top_ids2);
    free(r->top_probs2);
    memset(r, 0, sizeof *r);
}
