/*
 * experiments/lens.c -- the logit lens over a prompt set (`headscope lens`):
 * the model's output head applied to the residual stream before each layer
 * and after the last, on the experiment engine.
 */
#include "experiments/experiments.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    hs_pool *pool;         /* a set of one chunk: the pool its products' columns and its
                            * rows are split over (lens_job then runs on the caller's
                            * thread, outside the pool's jobs); else NULL */
} lens_ctx;

/* hs_argmax of x (V) given first, the first index holding its largest
 * value (NaN skipped; the max pass finds it), and Z, the sum of exp(x - mx):
 * first when Z is not NaN (a NaN in x would have made it one); else
 * hs_argmax itself (-1 with a NaN, an infinity's first index). */
static int top_of(const float *x, int V, int first, double Z)
{
    return Z != Z ? hs_argmax(x, (size_t)V) : first;
}

/* Point k's rows i0..i1-1 of the chunk, at positions q0..q1-1, from its
 * logits lg (bp * t, V); fin_top (b * t) the model's own top-1 token at each
 * position (-1: none). */
static void lens_point_rows(const lens_ctx *lc, int k, int r0, int i0, int i1, int q0, int q1,
                            const int *fin_top, const float *lg)
{
    const int V = lc->m->cfg.d_vocab, t = lc->t;
    const size_t W = 4 + (size_t)t;
    for (int i = i0; i < i1; i++) {
        const int row = r0 + i, ri = row;
        double *o = lc->rows + ((size_t)k * lc->n + row) * W;
        for (int q = q0; q < q1; q++) {
            const float *x = lg + ((size_t)i * t + q) * V;
            double mx = -INFINITY, Z = 0.0;
            int first = 0; /* the first index of the largest value (top-1 without another pass) */
            for (int v = 0; v < V; v++)
                if (x[v] > mx) {
                    mx = x[v];
                    first = v;
                }
            for (int v = 0; v < V; v++) Z += exp((double)x[v] - mx);
            const int fin = fin_top[(size_t)i * t + q];
            o[4 + q] = fin >= 0 ? exp((double)x[fin] - mx) / Z : NAN;
            if (row == 0) lc->r->top1[(size_t)k * t + q] = top_of(x, V, first, Z);
            if (q != lc->p->pos[ri]) continue;
            const int a = lc->p->answer[ri];
            if (a >= 0) {
                o[0] = exp((double)x[a] - mx) / Z;
                o[1] = x[a];
                o[2] = top_of(x, V, first, Z) == a;
                if (lc->p->wrong) o[3] = (double)x[a] - (double)x[lc->p->wrong[ri]];
            }
        }
    }
}

/* Rows of one product with W_U (a group of points, lens_job). */
#define LENS_ROWS 256

/* A group's rows over the pool (lc->pool): one job per point and prompt, or
 * per point, prompt and position when those are fewer than 16 a worker (a
 * one-prompt lens: 13 points, 13 jobs on 2 workers kept one idle for a
 * job's time; 208 jobs of ~0.2 ms each do not). Each job writes its own
 * rows and positions. */
typedef struct {
    const lens_ctx *lc;
    int k0, r0, b, qs;     /* qs: positions a job (t, or 1) */
    size_t NV;             /* floats of one point's logits */
    const int *fin;
    const float *lg;       /* the group's logits, point k0 first */
} rows_job_ctx;

static hs_status rows_job(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    (void)err;
    const rows_job_ctx *c = ctx;
    const int nq = c->lc->t / c->qs, q = j % nq * c->qs, kk = j / nq / c->b, i = j / nq % c->b;
    lens_point_rows(c->lc, c->k0 + kk, c->r0, i, i + 1, q, q + c->qs, c->fin, c->lg + (size_t)kk * c->NV);
    return HS_OK;
}

static hs_status lens_job(hs_engine *e, hs_engine_worker *w, int j, void *arg)
{
    (void)e;
    const lens_ctx *lc = arg;
    const hs_model *m = lc->m;
    const int L = m->cfg.n_layers, D = m->cfg.d_model, V = m->cfg.d_vocab, t = lc->t;
    /* the chunk's rows as the engine runs them (hs_engine_pad_set), of which
     * the real prompts' are read */
    const int r0 = j * HS_ENGINE_CHUNK, bp = hs_engine_chunk_rows(lc->n, j);
    const int b = lc->p->n - r0 < bp ? lc->p->n - r0 : bp;
    const size_t N = (size_t)bp * t;
    /* the residuals only: the forward's own logits are the last point's lens
     * (below), so the forward makes none (HS_LOGITS_NONE: one product with
     * W_U less a chunk, GPT-2 small: 1.2 GFLOP and a 154 MB pass a prompt) */
    static const char *const filt[] = {"blocks.*.hook_resid_pre", "blocks.*.hook_resid_post"};
    w->acts->logit_pos = HS_LOGITS_NONE;
    hs_status st = hs_run_with_cache(m, w->acts, lc->tok + (size_t)r0 * t, bp, t, filt, 2, NULL, &w->tmp, &w->err);
    w->acts->logit_pos = -1;
    if (st != HS_OK) return st;
    /* the points in groups of G, each group's residuals side by side in one
     * product with W_U (G N rows, at most LENS_ROWS when N is smaller):
     * W_U (GPT-2: 154 MB) is packed once a group, not once a point (a
     * one-prompt lens: 13 passes -> 1). A row's bits do not depend on the
     * rows beside it (N >= HS_ENGINE_MIN_TOKENS rows, hs_engine_run_rows). */
    const int G = N >= LENS_ROWS ? 1 : (int)(LENS_ROWS / N) < L + 1 ? (int)(LENS_ROWS / N) : L + 1;
    const size_t GN = (size_t)G * N;
    /* hs_floats_alloc: the logits (GPT-2, one prompt: 42 MB) on huge pages,
     * a fault per 2 MiB instead of per 4 KiB */
    float *scratch = hs_floats_alloc(GN * (2 * (size_t)D + 2) + GN * V);
    int *fin = malloc(N * sizeof(int));
    if (scratch == NULL || fin == NULL) {
        hs_floats_free(scratch);
        free(fin);
        return hs_fail(&w->err, HS_ERR_NOMEM, "out of memory");
    }
    float *in = scratch + GN * (D + 2), *lg = in + GN * D;
    /* the groups [0, G), [G, 2G), ... last first: the last point's lens
     * (the final norm's statistics recomputed from blocks.L-1.hook_resid_post,
     * as the forward computes them) is the model's own logits, whose top-1 at
     * each real row's position (fin) every point's rows read */
    for (int k0 = L / G * G; k0 >= 0; k0 -= G) {
        const int g = L + 1 - k0 < G ? L + 1 - k0 : G;
        for (int k = k0; k < k0 + g; k++) {
            const hs_cache_entry *re = k < L ? hs_cache_getf(&w->tmp, "blocks.%d.hook_resid_pre", k)
                                             : hs_cache_getf(&w->tmp, "blocks.%d.hook_resid_post", L - 1);
            HS_ASSERT(re != NULL);
            memcpy(in + (size_t)(k - k0) * N * D, re->data, N * D * sizeof(float));
        }
        hs_final_logits_pool(lc->pool, m, in, (size_t)g * N, scratch, lg);
        if (k0 + g == L + 1) {
            const float *real = lg + (size_t)(L - k0) * N * V;
            for (size_t q = 0; q < (size_t)b * t; q++) fin[q] = hs_argmax(real + q * V, (size_t)V);
        }
        if (lc->pool) { /* every point's prompts (and positions), one job each */
            const int qs = g * b < 16 * hs_pool_threads(lc->pool) ? 1 : t;
            rows_job_ctx rc = {lc, k0, r0, b, qs, N * V, fin, lg};
            (void)hs_pool_for(lc->pool, g * b * (t / qs), rows_job, &rc, &w->err); /* cannot fail */
        } else {
            for (int k = k0; k < k0 + g; k++)
                lens_point_rows(lc, k, r0, 0, b, 0, t, fin, lg + (size_t)(k - k0) * N * V);
        }
    }
    hs_floats_free(scratch);
    free(fin);
    return HS_OK;
}

hs_status hs_lens_run(const hs_model *m, hs_pool *pool, const hs_prompts *p, hs_lens_report *out,
                      hs_error *err)
{
    memset(out, 0, sizeof *out);
    if (hs_config_nonadditive(&m->cfg))
        return hs_fail(err, HS_ERR_INPUT, "lens: the logit lens reads the residual stream as the "
                       "sum so far of its writers, which it is not with %s",
                       hs_config_nonadditive(&m->cfg));
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
    int np = 0, *tok = hs_engine_pad_set(p->clean, p->n, t, t, &np);
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
    /* activations for the rows a forward runs on (np: a set of one prompt
     * touches one prompt's, not a chunk's) */
    if (st == HS_OK) st = hs_engine_init_rows(&e, m, pool, t, np < HS_ENGINE_CHUNK ? np : HS_ENGINE_CHUNK, err);
    lens_ctx lc = {m, p, tok, np, t, out, rows, NULL};
    e.progress = "chunks of up to 32 prompts";
    if (st == HS_OK && hs_engine_chunks(np) == 1 && hs_pool_threads(pool) > 1) {
        /* one chunk: one forward, from this thread (worker 0's activations,
         * its row passes and products over the pool: hs_acts_set_pool),
         * then the products with W_U by columns and the rows by point and
         * prompt over the pool, whose other workers would otherwise idle */
        lc.pool = pool;
        hs_acts_set_pool(e.w[0].acts, pool);
        st = lens_job(&e, &e.w[0], 0, &lc);
        hs_acts_set_pool(e.w[0].acts, NULL);
        if (st != HS_OK) *err = e.w[0].err;
        else if (e.progress) hs_pool_progress(pool, e.progress, 1, 1);
    } else if (st == HS_OK) {
        st = hs_engine_for(&e, hs_engine_chunks(np), lens_job, &lc, err);
    }
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
        if (!cJSON_AddItemToArray(a, hs_json_num_or_null(v[i]))) {
            cJSON_Delete(a);
            return NULL;
        }
    return a;
}

cJSON *hs_lens_json(const hs_lens_report *r, const hs_tokenizer *v)
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
        ok = cJSON_AddStringToObject(x, "point", name) && cJSON_AddItemToObject(x, "p_answer", hs_json_num_or_null(r->p_answer[k])) &&
             cJSON_AddItemToObject(x, "logit_answer", hs_json_num_or_null(r->logit_answer[k])) &&
             cJSON_AddItemToObject(x, "accuracy", hs_json_num_or_null(r->acc[k])) &&
             cJSON_AddItemToObject(x, "logit_diff", hs_json_num_or_null(r->ld[k]));
        cJSON *pf = ok ? darr(r->p_final + (size_t)k * r->t, r->t) : NULL;
        ok = ok && pf && cJSON_AddItemToObject(x, "p_final_top1_by_position", pf);
        for (int q = 0; q < r->t && ok; q++) {
            const char *ts = hs_tok_str(v, r->top1[(size_t)k * r->t + q]); /* NULL: padding, no token */
            ok = cJSON_AddItemToArray(top, ts ? cJSON_CreateString(ts) : cJSON_CreateNull());
        }
    }
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

void hs_lens_summary(const hs_lens_report *r, const hs_tokenizer *v, hs_buf *b)
{
    hs_buf_printf(b, "lens: %d prompt%s of %d tokens; ln_final with each residual's own statistics, then W_U\n",
                  r->n, r->n == 1 ? "" : "s", r->t);
    if (r->has_answer) {
        hs_buf_printf(b, "%-28s %9s %9s %9s%s\n", "point", "P(answer)", "logit", "top-1 ok", r->has_wrong ? "        LD" : "");
        for (int k = 0; k < r->n_points; k++) {
            char name[64];
            hs_lens_point_name(r, k, name, sizeof name);
            hs_buf_printf(b, "%-28s %9.4f ", name, r->p_answer[k]);
            hs_buf_fixed(b, r->logit_answer[k], 9, 3, 1);
            hs_buf_printf(b, " %8.1f%%", 100 * r->acc[k]);
            if (r->has_wrong) {
                hs_buf_puts(b, " ");
                hs_buf_fixed(b, r->ld[k], 9, 3, 1);
            }
            hs_buf_printf(b, "\n");
        }
    }
    hs_buf_printf(b, "top-1 token of the first prompt at each position (rows: points; last = the model's prediction):\n");
    for (int k = 0; k < r->n_points; k++) {
        char name[64];
        hs_lens_point_name(r, k, name, sizeof name);
        hs_buf_printf(b, "%-28s", name);
        for (int q = 0; q < r->t; q++) { /* as a terminal shows a token (hs_tok_display) */
            hs_buf_puts(b, " ");
            hs_tok_display(v, r->top1[(size_t)k * r->t + q], b);
        }
        hs_buf_printf(b, "\n");
    }
}

