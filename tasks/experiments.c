/*
 * tasks/experiments.c -- experiments over a prompt set, configured on the
 * experiment engine (probe.h, section 8): head detectors (`headscope heads`).
 */
#include "tasks/tasks.h"

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

hs_status hs_heads_run(const hs_model *m, const hs_vocab *v, hs_pool *pool, const hs_prompts *p,
                       const float *target, hs_detect_metric metric, int exclude_bos,
                       int exclude_current, hs_heads_report *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    const int L = m->cfg.n_layers, H = m->cfg.n_heads, V = m->cfg.d_vocab;
    if (p->n < 1) return hs_fail(err, HS_ERR_INPUT, "heads: the prompt set is empty");
    if (H > 64) return hs_fail(err, HS_ERR_INPUT, "heads: %d heads a layer (at most 64)", H);
    if ((size_t)V != v->n)
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
    int n_nouns = 0;
    for (int i = 0; i < HS_WG_N_NOUNS; i++) {
        const int id = hs_vocab_id(v, hs_wg_nouns[i]);
        if (id >= 0) {
            is_noun[id] = 1;
            n_nouns++;
        }
    }
    int kinds[HS_HEADS_N], n_det = 0;
    for (int k = 0; k < HS_HEADS_N; k++) {
        out->has[k] = k < HS_HEADS_FIRST_NOUN || (k == HS_HEADS_FIRST_NOUN && n_nouns > 0) ||
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

static cJSON *num_or_null(double v)
{
    return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
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
                ok = cJSON_AddItemToArray(row, num_or_null(r->score[k][l * r->H + h]));
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
        hs_buf_printf(b, "first-noun: not computed (the vocabulary holds none of the task's nouns)\n");
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
                if (r->has[k]) hs_buf_printf(b, " %15.3f", r->score[k][l * r->H + h]);
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

/* ------------------------------------------------------------------------ */
/* The logit lens                                                            */

void hs_lens_report_free(hs_lens_report *r)
{
    if (r == NULL) return;
    free(r->p_answer);
    free(r->logit_answer);
    free(r->acc);
    free(r->ld);
    free(r->p_final);
    free(r->top1);
    memset(r, 0, sizeof *r);
}

void hs_lens_point_name(const hs_lens_report *r, int k, char *buf, size_t cap)
{
    if (k < r->L) snprintf(buf, cap, "blocks.%d.hook_resid_pre", k);
    else snprintf(buf, cap, "blocks.%d.hook_resid_post", r->L - 1);
}

typedef struct {
    const hs_model *m;
    const hs_prompts *p;
    const int *tok;        /* (n_pad, t) */
    int n, t;
    hs_lens_report *r;
    double *rows;          /* (n_points, n, 4 + t): p_answer, logit, top1 == answer, ld, p_final[t] */
} lens_ctx;

static hs_status lens_job(hs_engine *e, hs_engine_worker *w, int j, void *arg)
{
    (void)e;
    const lens_ctx *lc = arg;
    const hs_model *m = lc->m;
    const int L = m->cfg.n_layers, D = m->cfg.d_model, V = m->cfg.d_vocab, t = lc->t;
    const int r0 = j * HS_ENGINE_CHUNK, b = lc->n - r0 < HS_ENGINE_CHUNK ? lc->n - r0 : HS_ENGINE_CHUNK;
    const size_t N = (size_t)HS_ENGINE_CHUNK * t, W = 4 + (size_t)t;
    static const char *const filt[] = {"blocks.*.hook_resid_pre", "blocks.*.hook_resid_post", "logits"};
    hs_status st = hs_run_with_cache(m, w->acts, lc->tok + (size_t)r0 * t, HS_ENGINE_CHUNK, t, filt, 3, NULL,
                                     &w->tmp, &w->err);
    if (st != HS_OK) return st;
    float *scratch = malloc((N * (D + 2) + N * V) * sizeof(float));
    if (scratch == NULL) return hs_fail(&w->err, HS_ERR_NOMEM, "out of memory");
    float *lg = scratch + N * (D + 2);
    const float *real = hs_cache_get(&w->tmp, "logits")->data;
    for (int k = 0; k <= L; k++) {
        const hs_cache_entry *re = k < L ? hs_cache_getf(&w->tmp, "blocks.%d.hook_resid_pre", k)
                                         : hs_cache_getf(&w->tmp, "blocks.%d.hook_resid_post", L - 1);
        HS_ASSERT(re != NULL);
        hs_final_logits(m, re->data, N, scratch, lg);
        for (int i = 0; i < b; i++) {
            const int row = r0 + i, ri = row < lc->p->n ? row : lc->p->n - 1; /* padded rows repeat the last */
            double *o = lc->rows + ((size_t)k * lc->n + row) * W;
            for (int q = 0; q < t; q++) {
                const float *x = lg + ((size_t)i * t + q) * V;
                double mx = -INFINITY, Z = 0.0;
                for (int v = 0; v < V; v++) mx = x[v] > mx ? x[v] : mx;
                for (int v = 0; v < V; v++) Z += exp((double)x[v] - mx);
                const int fin = hs_argmax(real + ((size_t)i * t + q) * V, (size_t)V);
                o[4 + q] = fin >= 0 ? exp((double)x[fin] - mx) / Z : NAN;
                if (row == 0) lc->r->top1[(size_t)k * t + q] = hs_argmax(x, (size_t)V);
                if (q != lc->p->pos[ri]) continue;
                const int a = lc->p->answer[ri];
                if (a >= 0) {
                    o[0] = exp((double)x[a] - mx) / Z;
                    o[1] = x[a];
                    o[2] = hs_argmax(x, (size_t)V) == a;
                    if (lc->p->wrong) o[3] = (double)x[a] - (double)x[lc->p->wrong[ri]];
                }
            }
        }
    }
    free(scratch);
    return HS_OK;
}

hs_status hs_lens_run(const hs_model *m, hs_pool *pool, const hs_prompts *p, hs_lens_report *out,
                      hs_error *err)
{
    memset(out, 0, sizeof *out);
    if (p->n < 1) return hs_fail(err, HS_ERR_INPUT, "lens: the prompt set is empty");
    const int L = m->cfg.n_layers, t = p->t, K = L + 1;
    out->L = L;
    out->n = p->n;
    out->t = t;
    out->V = m->cfg.d_vocab;
    out->n_points = K;
    out->has_answer = p->answer[0] >= 0;
    for (int i = 0; i < p->n; i++) out->has_answer &= p->answer[i] >= 0;
    out->has_wrong = out->has_answer && p->wrong != NULL;
    int np = 0, *tok = hs_engine_pad_rows(p->clean, p->n, t, &np);
    const size_t W = 4 + (size_t)t;
    double *rows = calloc((size_t)K * np * W, sizeof *rows);
    out->p_answer = calloc((size_t)K, sizeof(double));
    out->logit_answer = calloc((size_t)K, sizeof(double));
    out->acc = calloc((size_t)K, sizeof(double));
    out->ld = calloc((size_t)K, sizeof(double));
    out->p_final = calloc((size_t)K * t, sizeof(double));
    out->top1 = calloc((size_t)K * t, sizeof(int));
    hs_engine e;
    memset(&e, 0, sizeof e);
    hs_status st = HS_OK;
    if (!tok || !rows || !out->p_answer || !out->logit_answer || !out->acc || !out->ld || !out->p_final ||
        !out->top1)
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (st == HS_OK) st = hs_engine_init(&e, m, pool, t, err);
    lens_ctx lc = {m, p, tok, np, t, out, rows};
    if (st == HS_OK) st = hs_engine_for(&e, hs_engine_chunks(np), lens_job, &lc, err);
    for (int k = 0; k < K && st == HS_OK; k++) {
        double s[4] = {0, 0, 0, 0};
        for (int i = 0; i < p->n; i++) /* the real prompts, in order */
            for (int c = 0; c < 4; c++) s[c] += rows[((size_t)k * np + i) * W + c];
        out->p_answer[k] = out->has_answer ? s[0] / p->n : NAN;
        out->logit_answer[k] = out->has_answer ? s[1] / p->n : NAN;
        out->acc[k] = out->has_answer ? s[2] / p->n : NAN;
        out->ld[k] = out->has_wrong ? s[3] / p->n : NAN;
        for (int q = 0; q < t; q++) {
            double f = 0.0;
            for (int i = 0; i < p->n; i++) f += rows[((size_t)k * np + i) * W + 4 + q];
            out->p_final[(size_t)k * t + q] = f / p->n;
        }
    }
    hs_engine_free(&e);
    free(rows);
    free(tok);
    if (st != HS_OK) hs_lens_report_free(out);
    return st;
}

static cJSON *darr(const double *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++)
        if (!cJSON_AddItemToArray(a, num_or_null(v[i]))) {
            cJSON_Delete(a);
            return NULL;
        }
    return a;
}

cJSON *hs_lens_json(const hs_lens_report *r, const hs_vocab *v)
{
    cJSON *o = cJSON_CreateObject(), *pts = cJSON_CreateArray();
    int ok = o && pts && cJSON_AddItemToObject(o, "points", pts) &&
             cJSON_AddStringToObject(o, "method", "logit lens: ln_final with statistics recomputed from each "
                                                  "residual (not the final layer's scale), then W_U + b_U") &&
             cJSON_AddNumberToObject(o, "prompts", r->n) && cJSON_AddNumberToObject(o, "tokens", r->t);
    if (!ok && pts && !cJSON_GetObjectItem(o, "points")) cJSON_Delete(pts);
    for (int k = 0; k < r->n_points && ok; k++) {
        char name[64];
        hs_lens_point_name(r, k, name, sizeof name);
        cJSON *x = cJSON_CreateObject(), *top = cJSON_CreateArray();
        ok = x && cJSON_AddItemToArray(pts, x) && top && cJSON_AddItemToObject(x, "top1_first_prompt", top);
        if (!ok) {
            if (x && !cJSON_GetObjectItem(x, "top1_first_prompt")) cJSON_Delete(top);
            break;
        }
        ok = cJSON_AddStringToObject(x, "point", name) && cJSON_AddItemToObject(x, "p_answer", num_or_null(r->p_answer[k])) &&
             cJSON_AddItemToObject(x, "logit_answer", num_or_null(r->logit_answer[k])) &&
             cJSON_AddItemToObject(x, "accuracy", num_or_null(r->acc[k])) &&
             cJSON_AddItemToObject(x, "logit_diff", num_or_null(r->ld[k]));
        cJSON *pf = ok ? darr(r->p_final + (size_t)k * r->t, r->t) : NULL;
        ok = ok && pf && cJSON_AddItemToObject(x, "p_final_top1_by_position", pf);
        for (int q = 0; q < r->t && ok; q++)
            ok = cJSON_AddItemToArray(top, cJSON_CreateString(hs_vocab_word(v, r->top1[(size_t)k * r->t + q])));
    }
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

void hs_lens_summary(const hs_lens_report *r, const hs_vocab *v, hs_buf *b)
{
    hs_buf_printf(b, "lens: %d prompt%s of %d tokens; ln_final with each residual's own statistics, then W_U\n",
                  r->n, r->n == 1 ? "" : "s", r->t);
    if (r->has_answer) {
        hs_buf_printf(b, "%-28s %9s %9s %9s%s\n", "point", "P(answer)", "logit", "top-1 ok", r->has_wrong ? "        LD" : "");
        for (int k = 0; k < r->n_points; k++) {
            char name[64];
            hs_lens_point_name(r, k, name, sizeof name);
            hs_buf_printf(b, "%-28s %9.4f %+9.3f %8.1f%%", name, r->p_answer[k], r->logit_answer[k], 100 * r->acc[k]);
            if (r->has_wrong) hs_buf_printf(b, " %+9.3f", r->ld[k]);
            hs_buf_printf(b, "\n");
        }
    }
    hs_buf_printf(b, "top-1 token of the first prompt at each position (rows: points; last = the model's prediction):\n");
    for (int k = 0; k < r->n_points; k++) {
        char name[64];
        hs_lens_point_name(r, k, name, sizeof name);
        hs_buf_printf(b, "%-28s", name);
        for (int q = 0; q < r->t; q++) hs_buf_printf(b, " %s", hs_vocab_word(v, r->top1[(size_t)k * r->t + q]));
        hs_buf_printf(b, "\n");
    }
}

/* ------------------------------------------------------------------------ */
/* Direct logit attribution over a set                                       */

void hs_dla_set_free(hs_dla_set *r)
{
    if (r == NULL) return;
    free(r->labels);
    free(r->attr);
    free(r->attr_pos);
    memset(r, 0, sizeof *r);
}

typedef struct {
    const hs_model *m;
    const hs_prompts *p;
    const int *tok;   /* (n_pad, t) */
    int n;            /* real prompts */
    hs_dla_set *r;
    int by_pos;
    size_t stride;    /* n_comp + 2 (+ n_comp * t with by_pos) */
    double *rows;     /* (n, stride): attributions, constant, target (, attr_pos's terms) */
} dla_ctx;

static hs_status dla_job(hs_engine *e, hs_engine_worker *w, int j, void *arg)
{
    dla_ctx *dc = arg;
    const int t = e->t, r0 = j * HS_ENGINE_CHUNK;
    const int b = dc->n - r0 < HS_ENGINE_CHUNK ? dc->n - r0 : HS_ENGINE_CHUNK;
    static const char *const filt[] = {"hook_embed", "?hook_pos_embed", "blocks.*.hook_resid_pre",
                                       "?blocks.*.ln1.hook_scale", "blocks.*.attn.hook_pattern",
                                       "blocks.*.attn.hook_z", "?blocks.*.hook_mlp_out", "?ln_final.hook_scale",
                                       "logits"};
    hs_status st = hs_run_with_cache(dc->m, w->acts, dc->tok + (size_t)r0 * t, HS_ENGINE_CHUNK, t, filt, 9, NULL,
                                     &w->tmp, &w->err);
    for (int i = 0; i < b && st == HS_OK; i++) {
        const int row = r0 + i;
        hs_dla d;
        st = hs_logit_attribution(dc->m, &w->tmp, i, dc->p->pos[row], dc->p->answer[row],
                                  dc->p->wrong ? dc->p->wrong[row] : -1, &d, &w->err);
        if (st != HS_OK) break;
        if (d.n != dc->r->n_comp) {
            hs_dla_free(&d);
            return hs_fail(&w->err, HS_ERR_INPUT, "dla: %d components, expected %d", d.n, dc->r->n_comp);
        }
        double *o = dc->rows + (size_t)row * dc->stride;
        for (int k = 0; k < d.n; k++) o[k] = d.attr[k];
        o[d.n] = d.constant;
        o[d.n + 1] = d.target;
        if (row == 0) memcpy(dc->r->labels, d.labels, (size_t)d.n * sizeof *d.labels);
        hs_dla_free(&d);
        for (int q = 0; q < t && dc->by_pos && st == HS_OK; q++) {
            st = hs_logit_attribution_at(dc->m, &w->tmp, i, q, dc->p->pos[row], dc->p->answer[row],
                                         dc->p->wrong ? dc->p->wrong[row] : -1, &d, &w->err);
            if (st != HS_OK) break;
            for (int k = 0; k < d.n; k++) o[dc->r->n_comp + 2 + (size_t)k * t + q] = d.attr[k];
            hs_dla_free(&d);
        }
    }
    return st;
}

hs_status hs_dla_set_run(const hs_model *m, hs_pool *pool, const hs_prompts *p, int by_position,
                         hs_dla_set *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    if (p->n < 1) return hs_fail(err, HS_ERR_INPUT, "dla: the prompt set is empty");
    for (int i = 0; i < p->n; i++)
        if (p->answer[i] < 0) return hs_fail(err, HS_ERR_INPUT, "dla: line %d has no \"answer\"", p->line[i]);
    /* the component count: one attribution of the first prompt alone */
    hs_engine e;
    memset(&e, 0, sizeof e);
    int np = 0, *tok = hs_engine_pad_rows(p->clean, p->n, p->t, &np);
    double *rows = NULL;
    hs_status st = tok ? hs_engine_init(&e, m, pool, p->t, err) : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (st == HS_OK) {
        hs_resid_stack rs;
        static const char *const f1[] = {"hook_embed", "?hook_pos_embed", "blocks.*.attn.hook_z",
                                         "?blocks.*.hook_mlp_out", "blocks.*.hook_resid_pre", "logits"};
        st = hs_run_with_cache(m, e.w[0].acts, tok, HS_ENGINE_CHUNK, p->t, f1, 6, NULL, &e.w[0].tmp, err);
        if (st == HS_OK) st = hs_resid_decompose(m, &e.w[0].tmp, 0, p->pos[0], &rs, err);
        if (st == HS_OK) {
            out->n_comp = rs.n;
            hs_resid_stack_free(&rs);
        }
    }
    out->n = p->n;
    out->has_wrong = p->wrong != NULL;
    out->labels = calloc((size_t)(out->n_comp ? out->n_comp : 1), sizeof *out->labels);
    out->attr = calloc((size_t)(out->n_comp ? out->n_comp : 1), sizeof *out->attr);
    out->t = p->t;
    const size_t stride = (size_t)out->n_comp + 2 + (by_position ? (size_t)out->n_comp * p->t : 0);
    if (st == HS_OK) rows = malloc((size_t)p->n * stride * sizeof *rows);
    if (st == HS_OK && by_position) out->attr_pos = malloc((size_t)out->n_comp * p->t * sizeof *out->attr_pos);
    if (st == HS_OK && (!rows || !out->labels || !out->attr || (by_position && !out->attr_pos)))
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    dla_ctx dc = {m, p, tok, p->n, out, by_position != 0, stride, rows};
    if (st == HS_OK) st = hs_engine_for(&e, hs_engine_chunks(p->n), dla_job, &dc, err);
    for (size_t k = 0; k < stride && st == HS_OK; k++) {
        double s = 0.0;
        for (int i = 0; i < p->n; i++) s += rows[(size_t)i * stride + k];
        if (k < (size_t)out->n_comp) out->attr[k] = s / p->n;
        else if (k == (size_t)out->n_comp) out->constant = s / p->n;
        else if (k == (size_t)out->n_comp + 1) out->target = s / p->n;
        else out->attr_pos[k - out->n_comp - 2] = s / p->n;
    }
    for (int i = 0; i < e.n_workers; i++) hs_cache_free(&e.w[i].tmp);
    hs_engine_free(&e);
    free(rows);
    free(tok);
    if (st != HS_OK) hs_dla_set_free(out);
    return st;
}

cJSON *hs_dla_set_json(const hs_dla_set *r)
{
    cJSON *o = cJSON_CreateObject(), *a = cJSON_CreateArray();
    int ok = o && a && cJSON_AddItemToObject(o, "components", a);
    if (!ok && a && !(o && cJSON_GetObjectItem(o, "components"))) cJSON_Delete(a);
    ok = ok && cJSON_AddStringToObject(o, "direction", r->has_wrong ? "W_U[:, answer] - W_U[:, wrong]" : "W_U[:, answer]") &&
         cJSON_AddStringToObject(o, "final_norm", "frozen: each prompt's ln_final.hook_scale from its run") &&
         cJSON_AddNumberToObject(o, "prompts", r->n) && cJSON_AddItemToObject(o, "constant", num_or_null(r->constant)) &&
         cJSON_AddItemToObject(o, "target", num_or_null(r->target));
    for (int k = 0; k < r->n_comp && ok; k++) {
        cJSON *x = cJSON_CreateObject();
        ok = x && cJSON_AddItemToArray(a, x) && cJSON_AddStringToObject(x, "component", r->labels[k]) &&
             cJSON_AddItemToObject(x, "attribution", num_or_null(r->attr[k]));
        cJSON *bp = r->attr_pos ? cJSON_CreateArray() : NULL;
        if (r->attr_pos) ok = ok && bp && cJSON_AddItemToObject(x, "by_position", bp);
        if (r->attr_pos && !ok && bp && !cJSON_GetObjectItem(x, "by_position")) cJSON_Delete(bp);
        for (int q = 0; q < r->t && r->attr_pos && ok; q++)
            ok = cJSON_AddItemToArray(bp, num_or_null(r->attr_pos[(size_t)k * r->t + q]));
    }
    if (ok && r->attr_pos)
        ok = cJSON_AddStringToObject(o, "by_position",
                                     "components[k].by_position[q]: the mean over the prompts of what component k "
                                     "writes at position q, through the final norm frozen at the prompt's read "
                                     "position, dotted with its direction (q = the read position: the "
                                     "attribution)") != NULL;
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

void hs_dla_set_summary(const hs_dla_set *r, hs_buf *b)
{
    hs_buf_printf(b, "dla: %d prompts; direct logit attribution towards %s at each prompt's position, the final "
                     "norm's scale frozen from each run; means over the prompts\n",
                  r->n, r->has_wrong ? "answer - wrong" : "the answer");
    double s = 0.0;
    for (int k = 0; k < r->n_comp; k++) {
        hs_buf_printf(b, "  %-14s %+9.3f\n", r->labels[k], r->attr[k]);
        s += r->attr[k];
    }
    hs_buf_printf(b, "  %-14s %+9.3f\n  sum %+.3f = %s %+.3f (the logits, less b_U)\n", "norm bias", r->constant,
                  s + r->constant, r->has_wrong ? "LD" : "logit", r->target);
    if (r->attr_pos == NULL) return;
    hs_buf_printf(b, "\nby position: what each component writes at position q, read through the final norm frozen "
                     "at the prompt's position and its direction; means over the prompts\n%-14s", "");
    for (int q = 0; q < r->t; q++) hs_buf_printf(b, " %7d", q);
    for (int k = 0; k < r->n_comp; k++) {
        hs_buf_printf(b, "\n  %-12s", r->labels[k]);
        for (int q = 0; q < r->t; q++) hs_buf_printf(b, " %+7.2f", r->attr_pos[(size_t)k * r->t + q]);
    }
    hs_buf_printf(b, "\n");
}
