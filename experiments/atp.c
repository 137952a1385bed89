/*
 * experiments/atp.c -- attribution patching (AtP) of every cell `patch`
 * offers (experiments.h, "Attribution"): per chunk of prompts, on one
 * worker, a clean forward and a corrupted forward capture every patched
 * point's values as clean - corrupted; the corrupted run's backward of the
 * logit difference gives the gradient at each point, and each prompt's
 * dot products per (layer, position) or (layer, head, position) are stored
 * by row, in double. Means over the rows are taken in row order, so every
 * number is bit-identical for any thread count.
 */
#include "experiments/patch_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const hs_model *m;
    int n_real, t, L, H;
    const int *src, *dst, *answer, *wrong, *pos; /* padded to whole chunks */
    unsigned acts;
    size_t n_cells;               /* a row's cells: L t per layer act, L H t per head act */
    size_t cell0[HS_PATCH_N];     /* act a's first cell in a row */
    size_t row_floats[HS_PATCH_N]; /* floats of one row of act a's point in one layer */
    size_t cap_off[HS_PATCH_N];   /* act a's layer 0 in a worker's capture (layer l + l CHUNK row_floats) */
    size_t cap_floats;            /* a worker's capture */
    double *row_est;              /* (rows, n_cells) each prompt's estimates */
    double *ld_src, *ld_dst;      /* (rows) LD of the two runs */
    float **cap;                  /* (workers) clean - corrupted of every point, a chunk's rows */
    hs_attr_worker *aw;
} atp_ctx;

/* One chunk's run on one worker: what the observers read. */
typedef struct {
    const atp_ctx *c;
    float *cap;
    int r0, b;        /* first row, real rows */
    int subtract;     /* capture: 0 values, 1 minus values */
} atp_run;

/* The act and layer of a patched point's name; -1 when it is not one. */
static int act_of(const atp_ctx *c, const char *name, int *layer)
{
    int l = -1;
    char rest[48];
    if (sscanf(name, "blocks.%d.%47s", &l, rest) != 2 || l < 0 || l >= c->L) return -1;
    for (int a = 0; a < HS_PATCH_N; a++) {
        if (!(c->acts & (1u << a))) continue;
        const char *suffix = strchr(strchr(hs_patch_hooks[a], '.') + 1, '.') + 1;
        if (strcmp(rest, suffix) == 0) {
            *layer = l;
            return a;
        }
    }
    return -1;
}

static int atp_wants(const char *name, void *ctx)
{
    const atp_run *r = ctx;
    int l;
    return act_of(r->c, name, &l) >= 0;
}

static float *cap_of(const atp_run *r, int a, int l)
{
    return r->cap + r->c->cap_off[a] + (size_t)l * HS_ENGINE_CHUNK * r->c->row_floats[a];
}

static int cap_fn(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)shape;
    (void)ndim;
    const atp_run *r = ctx;
    int l;
    const int a = act_of(r->c, name, &l);
    float *d = cap_of(r, a, l);
    const size_t n = (size_t)HS_ENGINE_CHUNK * r->c->row_floats[a];
    if (r->subtract)
        for (size_t i = 0; i < n; i++) d[i] -= data[i];
    else
        memcpy(d, data, n * sizeof(float));
    return 0;
}

static double dot_d(const float *x, const float *y, size_t n, size_t stride)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)x[i * stride] * (double)y[i * stride];
    return s;
}

/* Each real row's (clean - corrupted) . gradient per cell of the point. */
static int grad_fn(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)ndim;
    const atp_run *r = ctx;
    const atp_ctx *c = r->c;
    int l;
    const int a = act_of(c, name, &l);
    const float *dl = cap_of(r, a, l);
    const int t = c->t, H = c->H;
    const size_t per = c->row_floats[a];
    for (int b = 0; b < r->b; b++) {
        double *est = c->row_est + (size_t)(r->r0 + b) * c->n_cells + c->cell0[a];
        const float *x = dl + (size_t)b * per, *g = data + (size_t)b * per;
        if (!hs_patch_act_is_head(a)) { /* [B,T,D]: cell l t + p */
            const size_t D = (size_t)shape[2];
            for (int p = 0; p < t; p++) est[(size_t)l * t + p] = dot_d(x + p * D, g + p * D, D, 1);
        } else if (a == HS_PATCH_PATTERN) { /* [B,H,T(dest),T(src)]: cell (l H + h) t + dest */
            for (int h = 0; h < H; h++)
                for (int p = 0; p < t; p++) {
                    const size_t o = ((size_t)h * t + p) * t;
                    est[((size_t)l * H + h) * t + p] = dot_d(x + o, g + o, (size_t)t, 1);
                }
        } else { /* [B,T,H,dh]: cell (l H + h) t + p */
            const size_t dh = (size_t)shape[3];
            for (int h = 0; h < H; h++)
                for (int p = 0; p < t; p++) {
                    const size_t o = ((size_t)p * H + h) * dh;
                    est[((size_t)l * H + h) * t + p] = dot_d(x + o, g + o, dh, 1);
                }
        }
    }
    return 0;
}

/* LD = logit(answer) - logit(wrong) at each real row's position. */
static void ld_rows(const atp_ctx *c, const atp_run *r, const float *logits, double *out)
{
    const int V = c->m->cfg.d_vocab;
    for (int b = 0; b < r->b; b++) {
        const int row = r->r0 + b;
        const float *z = logits + ((size_t)b * c->t + c->pos[row]) * V;
        out[row] = (double)z[c->answer[row]] - (double)z[c->wrong[row]];
    }
}

static hs_status atp_job(hs_engine *e, hs_engine_worker *w, int k, void *arg)
{
    (void)e;
    atp_ctx *c = arg;
    const int t = c->t, r0 = k * HS_ENGINE_CHUNK;
    atp_run r = {c, c->cap[w->index], r0, c->n_real - r0 < HS_ENGINE_CHUNK ? c->n_real - r0 : HS_ENGINE_CHUNK, 0};
    hs_attr_worker *aw = &c->aw[w->index];
    const hs_observer cap = {cap_fn, atp_wants, &r}, grad = {grad_fn, atp_wants, &r};
    hs_status s = hs_forward(c->m, aw->acts, c->src + (size_t)r0 * t, HS_ENGINE_CHUNK, t, &cap, &w->err);
    if (s != HS_OK) return s;
    ld_rows(c, &r, aw->acts->logits, c->ld_src);
    r.subtract = 1;
    s = hs_forward(c->m, aw->acts, c->dst + (size_t)r0 * t, HS_ENGINE_CHUNK, t, &cap, &w->err);
    if (s != HS_OK) return s;
    ld_rows(c, &r, aw->acts->logits, c->ld_dst);
    return hs_attr_backward(c->m, aw, HS_METRIC_LOGIT_DIFF, r.b, t, c->pos + r0, c->answer + r0,
                            c->wrong + r0, NULL, &grad, &w->err);
}

/* The report's arrays from the rows' estimates (means in row order; a
 * head's all-positions cell the sum of its positions' in position order). */
static hs_status atp_fill(const atp_ctx *c, hs_patch_report *out, hs_error *err)
{
    const int n = c->n_real, t = c->t, L = c->L, H = c->H;
    double s0 = 0.0, s1 = 0.0;
    for (int i = 0; i < n; i++) s0 += c->ld_src[i], s1 += c->ld_dst[i];
    out->ld_clean = s0 / n;
    out->ld_corr = s1 / n;
    const double den = out->ld_clean - out->ld_corr;
    double *est = malloc((c->n_cells ? c->n_cells : 1) * sizeof(double));
    if (est == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (size_t k = 0; k < c->n_cells; k++) {
        double s = 0.0;
        for (int i = 0; i < n; i++) s += c->row_est[(size_t)i * c->n_cells + k];
        est[k] = s / n;
    }
    hs_status st = HS_OK;
    for (int a = 0; a < HS_PATCH_N && st == HS_OK; a++) {
        if (!(c->acts & (1u << a))) continue;
        const int head = hs_patch_act_is_head(a);
        const size_t cells = head ? (size_t)L * H : (size_t)L * t, np = head ? cells * t : cells;
        const double *e = est + c->cell0[a];
        out->metric[a] = malloc(cells * sizeof(double));
        out->ld[a] = malloc(cells * sizeof(double));
        if (head) {
            out->metric_pos[a] = malloc(np * sizeof(double));
            out->ld_pos[a] = malloc(np * sizeof(double));
        }
        if (!out->metric[a] || !out->ld[a] || (head && (!out->metric_pos[a] || !out->ld_pos[a]))) {
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
            break;
        }
        double *pm = head ? out->metric_pos[a] : out->metric[a], *pl = head ? out->ld_pos[a] : out->ld[a];
        for (size_t k = 0; k < np; k++) {
            pl[k] = out->ld_corr + e[k];
            pm[k] = den == 0.0 ? NAN : e[k] / den;
        }
        for (size_t k = 0; head && k < cells; k++) {
            double sum = 0.0;
            for (int p = 0; p < t; p++) sum += e[k * t + p];
            out->ld[a][k] = out->ld_corr + sum;
            out->metric[a][k] = den == 0.0 ? NAN : sum / den;
        }
    }
    free(est);
    return st;
}

/* The layout of the rows' cells and of a worker's capture. */
static void atp_layout(atp_ctx *c)
{
    const hs_config *cfg = &c->m->cfg;
    const size_t t = (size_t)c->t, H = (size_t)c->H;
    for (int a = 0; a < HS_PATCH_N; a++) {
        if (!(c->acts & (1u << a))) continue;
        c->cell0[a] = c->n_cells;
        c->n_cells += (size_t)c->L * (hs_patch_act_is_head(a) ? H : 1) * t;
        c->row_floats[a] = a == HS_PATCH_PATTERN ? H * t * t
                           : hs_patch_act_is_head(a) ? t * H * (size_t)cfg->d_head
                                                     : t * (size_t)cfg->d_model;
        c->cap_off[a] = c->cap_floats;
        c->cap_floats += (size_t)c->L * HS_ENGINE_CHUNK * c->row_floats[a];
    }
}

hs_status hs_atp_run_tokens(const hs_model *m, hs_pool *pool, const int *src, const int *dst, int n, int t,
                            const int *answer, const int *wrong, const int *pos, unsigned acts,
                            hs_patch_report *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    hs_status s = hs_patch_check(m, n, t, answer, wrong, pos, acts, err);
    if (s != HS_OK) return s;
    out->L = m->cfg.n_layers;
    out->H = m->cfg.n_heads;
    out->n = n;
    out->t = t;
    out->acts = acts;
    out->method = HS_PATCH_ATP;
    atp_ctx c;
    memset(&c, 0, sizeof c);
    c.m = m;
    c.n_real = n;
    c.t = t;
    c.L = out->L;
    c.H = out->H;
    c.acts = acts;
    atp_layout(&c);
    int np = 0;
    c.src = hs_engine_pad_rows(src, n, t, &np);
    c.dst = hs_engine_pad_rows(dst, n, t, &np);
    c.answer = hs_engine_pad_rows(answer, n, 1, &np);
    c.wrong = hs_engine_pad_rows(wrong, n, 1, &np);
    c.pos = hs_engine_pad_rows(pos, n, 1, &np);
    c.row_est = calloc((size_t)np * (c.n_cells ? c.n_cells : 1), sizeof(double));
    c.ld_src = calloc((size_t)np * 2, sizeof(double));
    c.ld_dst = c.ld_src ? c.ld_src + np : NULL;
    hs_engine e;
    memset(&e, 0, sizeof e);
    if (!c.src || !c.dst || !c.answer || !c.wrong || !c.pos || !c.row_est || !c.ld_src)
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (s == HS_OK) s = hs_engine_init(&e, m, pool, t, err);
    if (s == HS_OK && (c.cap = calloc((size_t)e.n_workers, sizeof *c.cap)) == NULL)
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int i = 0; s == HS_OK && i < e.n_workers; i++)
        if ((c.cap[i] = malloc((c.cap_floats ? c.cap_floats : 1) * sizeof(float))) == NULL)
            s = hs_fail(err, HS_ERR_NOMEM, "out of memory for AtP's activations");
    if (s == HS_OK) s = hs_attr_workers_init(&e, &c.aw, err);
    if (s == HS_OK) s = hs_engine_for(&e, hs_engine_chunks(n), atp_job, &c, err);
    if (s == HS_OK) s = atp_fill(&c, out, err);
    for (int i = 0; c.cap && i < e.n_workers; i++) free(c.cap[i]);
    free(c.cap);
    hs_attr_workers_free(c.aw, e.n_workers);
    hs_engine_free(&e);
    free((void *)c.src);
    free((void *)c.dst);
    free((void *)c.answer);
    free((void *)c.wrong);
    free((void *)c.pos);
    free(c.row_est);
    free(c.ld_src);
    if (s != HS_OK) hs_patch_report_free(out);
    return s;
}

/* ------------------------------------------------------------------------ */
/* patch's methods side by side                                              */

const char *const hs_patch_method_names[HS_PATCH_METHOD_N] = {"exact", "atp", "both"};

int hs_patch_method_parse(const char *s)
{
    for (int k = 0; k < HS_PATCH_METHOD_N; k++)
        if (strcmp(s, hs_patch_method_names[k]) == 0) return k;
    return -1;
}

/* Pearson's r of x, y (n), in double; NAN when n < 2, a value is not
 * finite or either is constant. */
static double pearson(const double *x, const double *y, size_t n)
{
    if (n < 2) return NAN;
    double mx = 0.0, my = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i]) || !isfinite(y[i])) return NAN;
        mx += x[i];
        my += y[i];
    }
    mx /= (double)n;
    my /= (double)n;
    double sxy = 0.0, sxx = 0.0, syy = 0.0;
    for (size_t i = 0; i < n; i++) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
        syy += (y[i] - my) * (y[i] - my);
    }
    return sxx > 0.0 && syy > 0.0 ? sxy / sqrt(sxx * syy) : NAN;
}

void hs_patch_join(hs_patch_report *exact, hs_patch_report *atp)
{
    exact->method = HS_PATCH_BOTH;
    for (int k = 0; k < HS_PATCH_N; k++) {
        exact->pearson[k] = exact->pearson_pos[k] = NAN;
        if (!(exact->acts & (1u << k))) continue;
        const int head = hs_patch_act_is_head(k);
        const size_t cells = head ? (size_t)exact->L * exact->H : (size_t)exact->L * exact->t;
        exact->atp_metric[k] = atp->metric[k];
        exact->atp_metric_pos[k] = atp->metric_pos[k];
        atp->metric[k] = atp->metric_pos[k] = NULL;
        exact->pearson[k] = pearson(exact->metric[k], exact->atp_metric[k], cells);
        if (head)
            exact->pearson_pos[k] = pearson(exact->metric_pos[k], exact->atp_metric_pos[k], cells * exact->t);
    }
    hs_patch_report_free(atp);
}
