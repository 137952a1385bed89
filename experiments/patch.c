/*
 * experiments/patch.c -- activation patching over a prompt set (`headscope
 * patch`; TransformerLens patching.py, get_act_patch_*), on the experiment
 * engine: for every layer x position (residual stream and block outputs) and
 * every head (all positions, and head x position: z, q, k, v, pattern), the
 * clean run's value is written into the corrupted run and the mean logit
 * difference answer - wrong is read at each prompt's position.
 *
 * Every sweep runs all prompts chunk by chunk on one worker; per-prompt
 * logit differences are stored by row and summed in row order, so every
 * number is bit-identical for any thread count and equals one prompt at a
 * time (tests/test_experiments.c). The report's JSON and tables are
 * experiments/patch_report.c's.
 */
#include "experiments/patch_internal.h"
#include "model/suffix.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* One sweep: act in layer, head (-1: a layer-level act; HEADS_OF_LAYER:
 * the heads u0 .. u0 + nu - 1 (unit u = l H + h: head h of layer l) at every
 * position, in batches, group_run), pos (-1: all). */
typedef struct {
    int act, layer, head, pos;
    double *ld, *metric; /* where its mean LD and normalised metric go (HEADS_OF_LAYER: the
                          * act's whole (L, H) tables, by unit) */
    int same;            /* 1: provably the corrupted run at every read position (no sweep) */
    int u0, nu;          /* HEADS_OF_LAYER: its units */
} pjob;
#define HEADS_OF_LAYER (-2)
#define SUFFIX_UNITS (-3) /* z at every position from suffix_s on: units u0, u0 + nu, .. (suffix_job_run) */

typedef struct {
    const hs_model *m;
    int n, t;                     /* rows (padded to whole chunks), tokens */
    int n_real;                   /* the prompts; rows n_real.. repeat the last one */
    const int *src, *dst;         /* (n, t) clean and corrupted tokens */
    const int *answer, *wrong, *pos; /* (n) */
    hs_cache *src_v;              /* (chunks) views of the clean cache */
    const hs_cache *clean;        /* the clean cache (n rows) */
    int read_pos;                 /* the position every prompt reads, or -1 */
    const hs_cache *corr;         /* the corrupted run's blocks.*.hook_resid_pre (n rows): a
                                   * cell of layer l runs from blocks.l on (hs_engine_sweep_from) */
    double **row_ld;              /* (workers) (n) per-row LD scratch */
    int suffix_s;                 /* > 0: z's all-position cells run from this position on
                                   * (hs_forward_suffix; every prompt equals its corrupted
                                   * partner before it and reads at or after it); 0: off */
    const float **ck, **cv, **cr; /* (L) the corrupted run's hook_k, hook_v, hook_resid_pre and */
    const float **cz;             /* the clean run's hook_z (suffix_s > 0) */
    pjob *jobs;
    double ld_clean, ld_corr;     /* the base runs' mean LDs, every logit's product */
    double ld2_clean, ld2_corr;   /* the same from the two read columns alone (suffix_s > 0:
                                   * the suffix runs' arithmetic, hs_final_token_logits) */
} pctx;

typedef struct {
    const hs_cache_entry *src; /* the clean value of this chunk */
    int act, head, pos;
} phook;

static int patch_hook(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name;
    const phook *p = ctx;
    const hs_cache_entry *e = p->src;
    if (ndim != e->ndim) return -1;
    for (int i = 0; i < ndim; i++)
        if (shape[i] != e->shape[i]) return -1;
    const int64_t B = shape[0];
    if (p->act == HS_PATCH_PATTERN) { /* [B, H, T(dest), T(src)] */
        const int64_t H = shape[1], T = shape[2], S = shape[3];
        for (int64_t b = 0; b < B; b++)
            for (int64_t q = 0; q < T; q++) {
                if (p->pos >= 0 && q != p->pos) continue;
                const size_t o = (((size_t)b * H + p->head) * T + q) * S;
                memcpy(data + o, e->data + o, (size_t)S * sizeof(float));
            }
        return 1;
    }
    const int64_t T = shape[1];
    size_t inner = 1; /* floats per (b, position) */
    for (int i = 2; i < ndim; i++) inner *= (size_t)shape[i];
    size_t off = 0, len = inner;
    if (p->head >= 0) { /* [B, T, H, dh] */
        len = (size_t)shape[3];
        off = (size_t)p->head * len;
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t q = 0; q < T; q++) {
            if (p->pos >= 0 && q != p->pos) continue;
            const size_t o = ((size_t)b * T + q) * inner + off;
            memcpy(data + o, e->data + o, len * sizeof(float));
        }
    return 1;
}

typedef struct {
    pctx *c;
    const pjob *jb;
} sweep_arg;

static hs_status sweep_hooks(void *arg, hs_engine_worker *w, int chunk, int r0, int b)
{
    (void)r0;
    (void)b;
    const sweep_arg *sa = arg;
    const pjob *jb = sa->jb;
    char name[64];
    snprintf(name, sizeof name, hs_patch_hooks[jb->act], jb->layer);
    const hs_cache_entry *e = hs_cache_get(&sa->c->src_v[chunk], name);
    if (e == NULL) return hs_fail(&w->err, HS_ERR_INPUT, "the model has no point %s", name);
    phook *p = malloc(sizeof *p);
    if (p == NULL) return hs_fail(&w->err, HS_ERR_NOMEM, "out of memory");
    *p = (phook){e, jb->act, jb->head, jb->pos};
    return hs_hooks_add_owned(w->hk, name, patch_hook, p, free, &w->err);
}

/* LD = logit(answer) - logit(wrong) at each prompt's position. */
static void ld_rows(const pctx *c, double *out, const float *logits, int r0, int b)
{
    const int V = c->m->cfg.d_vocab;
    for (int i = 0; i < b; i++) {
        const int r = r0 + i;
        const float *row = logits + ((size_t)i * c->t + c->pos[r]) * V;
        out[r] = (double)row[c->answer[r]] - (double)row[c->wrong[r]];
    }
}

static void sweep_rows(void *arg, hs_engine_worker *w, const float *logits, int r0, int b)
{
    const sweep_arg *sa = arg;
    ld_rows(sa->c, sa->c->row_ld[w->index], logits, r0, b);
}


static double mean_rows(const double *v, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++) s += v[i];
    return s / n;
}

/* Heads in one batch: a copy of the n rows for each unit (layer l, head h)
 * u = l H + h of a run of units, copy k (unit u0 + k) with head h's clean
 * value written at every position of layer l. A batch's units may span
 * layers (a set too small to fill a batch alone, group_run); a hook of layer
 * l leaves the rows of other layers' units as they are. */
typedef struct {
    const hs_cache_entry *src; /* layer's clean value, n rows */
    int act, n, r0, b;         /* the set's rows; the chunk's first row and real rows */
    int u0, layer, H;          /* the batch's first unit; the hook's layer; heads a layer */
} ghook;

static int group_hook(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name;
    const ghook *g = ctx;
    const hs_cache_entry *e = g->src;
    if (ndim != e->ndim) return -1;
    for (int i = 1; i < ndim; i++)
        if (shape[i] != e->shape[i]) return -1;
    const int64_t B = shape[0];
    for (int64_t i = 0; i < B; i++) {
        const int64_t r = g->r0 + (i < g->b ? i : g->b - 1); /* padded rows repeat the last */
        const int64_t u = g->u0 + r / g->n, src = r % g->n;
        if (u / g->H != g->layer) continue; /* another layer's unit: patched there */
        const int64_t h = u % g->H;
        if (g->act == HS_PATCH_PATTERN) { /* [B, H, T(dest), T(src)]: head h's rows */
            const size_t one = (size_t)shape[2] * shape[3];
            memcpy(data + ((size_t)i * shape[1] + h) * one, e->data + ((size_t)src * shape[1] + h) * one,
                   one * sizeof(float));
            continue;
        }
        const int64_t T = shape[1], Hn = shape[2], dh = shape[3]; /* [B, T, H, dh] */
        for (int64_t q = 0; q < T; q++)
            memcpy(data + (((size_t)i * T + q) * Hn + h) * dh, e->data + (((size_t)src * T + q) * Hn + h) * dh,
                   (size_t)dh * sizeof(float));
    }
    return 1;
}

typedef struct {
    pctx *c;
    const pjob *jb;
    double *ld; /* (nu n) per-row LDs of the batch */
    int u0, nu; /* the batch's units */
} group_arg;

static hs_status group_hooks(void *arg, hs_engine_worker *w, int chunk, int r0, int b)
{
    (void)chunk;
    const group_arg *ga = arg;
    const int H = ga->c->m->cfg.n_heads;
    for (int l = ga->u0 / H; l <= (ga->u0 + ga->nu - 1) / H; l++) {
        char name[64];
        snprintf(name, sizeof name, hs_patch_hooks[ga->jb->act], l);
        const hs_cache_entry *src = hs_cache_get(ga->c->clean, name);
        if (src == NULL) return hs_fail(&w->err, HS_ERR_INPUT, "the model has no point %s", name);
        ghook *g = malloc(sizeof *g);
        if (g == NULL) return hs_fail(&w->err, HS_ERR_NOMEM, "out of memory");
        *g = (ghook){src, ga->jb->act, ga->c->n, r0, b, ga->u0, l, H};
        hs_status st = hs_hooks_add_owned(w->hk, name, group_hook, g, free, &w->err);
        if (st != HS_OK) return st;
    }
    return HS_OK;
}

static void group_rows(void *arg, hs_engine_worker *w, const float *logits, int r0, int b)
{
    (void)w;
    const group_arg *ga = arg;
    const pctx *c = ga->c;
    const int V = c->m->cfg.d_vocab;
    for (int i = 0; i < b; i++) {
        const int r = r0 + i, k = r % c->n;
        const float *row = logits + ((size_t)i * c->t + c->pos[k]) * V;
        ga->ld[r] = (double)row[c->answer[k]] - (double)row[c->wrong[k]];
    }
}

/* z's clean values written into a pass of hs_forward_suffix: sequence r is
 * prompt r % n of the job's unit k = r / n (unit u = j + k J: head u % H of
 * layer u / H), at the positions s.. */
typedef struct {
    const float *const *zl; /* (L) the clean hook_z (np, t, H, dh) */
    int n, t, s, H, dh, j, J;
} zedit;

static void suffix_edit_z(void *ctx, float *z, int b0, int nb, int ns)
{
    const zedit *ze = ctx;
    const size_t HD = (size_t)ze->H * ze->dh;
    for (int b = 0; b < nb; b++) {
        const int r = b0 + b, u = ze->j + r / ze->n * ze->J, h = u % ze->H, i = r % ze->n;
        const float *zc = ze->zl[u / ze->H];
        for (int q = 0; q < ns; q++)
            memcpy(z + ((size_t)b * ns + q) * HD + (size_t)h * ze->dh,
                   zc + ((size_t)i * ze->t + ze->s + q) * HD + (size_t)h * ze->dh, (size_t)ze->dh * sizeof(float));
    }
}

/* z at every position when c->suffix_s > 0, the units u = j, j + J, .. of
 * job j (jb->u0 = j, jb->nu = J): the positions before s are the corrupted
 * run's whatever head is patched (the clean value there is the corrupted
 * one bit for bit: same tokens, per-row kernels), so each unit's n prompts
 * run from its layer on at the positions s.. alone, the last block at the
 * read position, and read the answer's and the wrong token's logits alone
 * (hs_forward_suffix: 5 of 16 positions for IOI); the units that have
 * started by a layer run there as one product. */
static hs_status suffix_job_run(hs_engine_worker *w, const pjob *jb, pctx *c)
{
    const int H = c->m->cfg.n_heads, LH = c->m->cfg.n_layers * H, n = c->n_real, j = jb->u0, J = jb->nu;
    const int K = (LH - j + J - 1) / J, B = K * n;
    int *iv = malloc((size_t)B * 5 * sizeof(int));
    float *lg = malloc((size_t)B * 2 * sizeof(float));
    if (iv == NULL || lg == NULL) {
        free(iv);
        free(lg);
        return hs_fail(&w->err, HS_ERR_NOMEM, "out of memory");
    }
    int *layer = iv, *row = iv + B, *read = iv + 2 * (size_t)B, *tok = iv + 3 * (size_t)B;
    for (int r = 0; r < B; r++) {
        const int i = r % n;
        layer[r] = (j + r / n * J) / H;
        row[r] = i;
        read[r] = c->pos[i];
        tok[2 * r] = c->answer[i];
        tok[2 * r + 1] = c->wrong[i];
    }
    zedit ze = {c->cz, n, c->t, c->suffix_s, H, c->m->cfg.d_head, j, J};
    const hs_suffix_run run = {B, c->t, c->suffix_s, layer, row, c->cr, c->ck, c->cv, suffix_edit_z, &ze,
                               read, tok, 2, NULL, -1, NULL, 0, NULL};
    hs_status st = hs_forward_suffix(c->m, &run, lg, &w->err);
    for (int k = 0; k < K && st == HS_OK; k++) {
        double s = 0.0;
        for (int i = 0; i < n; i++) s += (double)lg[2 * ((size_t)k * n + i)] - (double)lg[2 * ((size_t)k * n + i) + 1];
        const double v = s / n;
        jb->ld[j + k * J] = v;
        jb->metric[j + k * J] = hs_patch_metric(v, c->ld2_corr, c->ld2_clean);
    }
    free(iv);
    free(lg);
    return st;
}

/* The most bytes a batch of heads' residual copies may take (their tokens
 * and per-row LDs beside them are smaller): heads are batched up to it. */
#ifndef HS_PATCH_GROUP_BYTES /* (a build may set it lower, to test batches of fewer heads) */
#define HS_PATCH_GROUP_BYTES ((size_t)64 << 20)
#endif
#define GROUP_BYTES ((size_t)(HS_PATCH_GROUP_BYTES))

/* Units a job of heads takes: one layer's H, or, when its sweeps read one
 * position (one_pos >= 0) and H n rows are fewer than the engine pads such
 * a batch to (HS_ENGINE_MIN_TOKENS), the fewest units from there with an
 * even row count of at least that, at most a chunk. */
static int units_per_job(int H, int n, int one_pos)
{
    if (one_pos < 0 || H * n >= HS_ENGINE_MIN_TOKENS) return H;
    int u = (HS_ENGINE_MIN_TOKENS + n - 1) / n;
    if ((u * n) % 2 != 0) u++;
    return u * n <= HS_ENGINE_CHUNK ? u : H;
}

/* The units [jb->u0, jb->u0 + jb->nu) (each head of jb's layer, or a run of
 * units across layers) at every position, in sweeps of hb units x n rows (as
 * many as GROUP_BYTES allows, all H for GPT-2 small's 50 IOI prompts), each
 * from its first unit's layer on; a row's values are those of its unit's own
 * sweep (the engine's per-row kernels; a later layer's unit runs the layers
 * before it unpatched, its corrupted run's values), so each cell is the one
 * a sweep of its own gives. A set of one prompt at GPT-2 small: 16 heads a
 * batch over 9 batches, where a layer's 12 were padded to 16 rows over 12.
 * Reads one position when every prompt reads the same one. */
static hs_status group_run(hs_engine *e, hs_engine_worker *w, const pjob *jb, pctx *c)
{
    const int H = c->m->cfg.n_heads, n = c->n, t = c->t, D = c->m->cfg.d_model;
    const size_t set_bytes = (size_t)n * t * D * sizeof(float);
    const int nu = jb->nu;
    const int hb = set_bytes * nu <= GROUP_BYTES ? nu : set_bytes >= GROUP_BYTES ? 1 : (int)(GROUP_BYTES / set_bytes);
    const int R = hb * n;
    int *tok = malloc((size_t)R * t * sizeof(int));
    double *ld = malloc((size_t)R * sizeof(double));
    float *res = malloc((size_t)R * t * D * sizeof(float));
    if (tok == NULL || ld == NULL || res == NULL) {
        free(tok);
        free(ld);
        free(res);
        return hs_fail(&w->err, HS_ERR_NOMEM, "out of memory");
    }
    for (int h = 0; h < hb; h++) memcpy(tok + (size_t)h * n * t, c->dst, (size_t)n * t * sizeof(int));
    hs_status st = HS_OK;
    w->read_pos = c->read_pos;
    for (int k0 = 0; k0 < nu && st == HS_OK; k0 += hb) {
        const int nh = nu - k0 < hb ? nu - k0 : hb; /* the last batch may hold fewer units */
        const int u0 = jb->u0 + k0, l0 = u0 / H;
        /* the corrupted run's residual entering the first unit's layer, once a unit */
        const hs_cache_entry *rp = hs_cache_getf(c->corr, "blocks.%d.hook_resid_pre", l0);
        hs_cache_entry re;
        hs_cache rc = {0, 0, NULL, 1, NULL};
        if (rp && l0 > 0) {
            for (int h = 0; h < nh; h++) memcpy(res + (size_t)h * n * t * D, rp->data, set_bytes);
            re = *rp;
            re.shape[0] = nh * n;
            re.numel = (size_t)nh * n * t * D;
            re.data = res;
            rc = (hs_cache){1, 1, &re, 1, NULL};
        }
        group_arg ga = {c, jb, ld, u0, nh};
        st = hs_engine_sweep_from(e, w, tok, nh * n, rp && l0 > 0 ? l0 : 0, &rc, group_hooks, group_rows, &ga);
        for (int h = 0; h < nh && st == HS_OK; h++) {
            const double v = mean_rows(ld + (size_t)h * n, c->n_real);
            jb->ld[u0 + h] = v;
            jb->metric[u0 + h] = hs_patch_metric(v, c->ld_corr, c->ld_clean);
        }
    }
    w->read_pos = -1;
    free(tok);
    free(ld);
    free(res);
    return st;
}

static hs_status pjob_run(hs_engine *e, hs_engine_worker *w, int j, void *arg)
{
    pctx *c = arg;
    if (c->jobs[j].head == SUFFIX_UNITS) return suffix_job_run(w, &c->jobs[j], c);
    if (c->jobs[j].head == HEADS_OF_LAYER) return group_run(e, w, &c->jobs[j], c);
    if (c->jobs[j].same) { /* every read logit is the corrupted run's, bit for bit */
        *c->jobs[j].ld = c->ld_corr;
        *c->jobs[j].metric = hs_patch_metric(c->ld_corr, c->ld_corr, c->ld_clean);
        return HS_OK;
    }
    sweep_arg sa = {c, &c->jobs[j]};
    hs_status st = hs_engine_sweep_from(e, w, c->dst, c->n, c->jobs[j].layer, c->corr, sweep_hooks, sweep_rows, &sa);
    if (st != HS_OK) return st;
    const double ld = mean_rows(c->row_ld[w->index], c->n_real);
    *c->jobs[j].ld = ld;
    *c->jobs[j].metric = hs_patch_metric(ld, c->ld_corr, c->ld_clean);
    return HS_OK;
}

/* Job 0: the clean run, cached (the patched values); job 1: the corrupted
 * run, its residuals entering every block cached (each patched run starts
 * from them); both give their LDs. */
typedef struct {
    pctx *c;
    const char *const *filt;
    int nf;
    hs_cache *clean, *corr;
    double *ld_src, *ld_dst; /* (n) from every logit (the sweeps' arithmetic) */
    double *ld2_src, *ld2_dst; /* (n) from the two read columns (the suffix runs'), or NULL */
    int all_logits;          /* 0: every patched run is a suffix run: no logits at all */
} base_arg;

/* Reads each row's LD from the logits as a base run passes them (the
 * caches keep no logits: (n, t, V) floats each). */
typedef struct {
    const pctx *c;
    double *out; /* (n) */
    int r0;      /* the chunk's first row (the chunks come in row order) */
} ld_hook_ctx;

static int ld_hook(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name;
    ld_hook_ctx *h = ctx;
    if (ndim != 3 || shape[1] != h->c->t || shape[2] != h->c->m->cfg.d_vocab) return -1;
    const int b = (int)shape[0] < h->c->n - h->r0 ? (int)shape[0] : h->c->n - h->r0;
    ld_rows(h->c, h->out, data, h->r0, b);
    h->r0 += (int)shape[0];
    return 0;
}

/* The same LDs from blocks.{L-1}.hook_resid_post (b, t, D) when the
 * patched runs are suffix runs: each prompt's read row through the final
 * norm, then the answer's and the wrong token's columns of W_U alone
 * (hs_final_token_logits, the suffix runs' own arithmetic), not every logit
 * at every position (GPT-2: a 154 MB product with W_U a run). */
static int ld_resid_hook(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name;
    ld_hook_ctx *h = ctx;
    const pctx *c = h->c;
    const int D = c->m->cfg.d_model;
    if (ndim != 3 || shape[1] != c->t || shape[2] != D) return -1;
    const int b = (int)shape[0] < c->n - h->r0 ? (int)shape[0] : c->n - h->r0;
    if (b < 1) return -1; /* more rows than the set */
    float *x = malloc((size_t)b * (2 * (size_t)D + 4) * sizeof(float));
    int *tok = malloc((size_t)b * 2 * sizeof(int));
    if (x == NULL || tok == NULL) {
        free(x);
        free(tok);
        return -1;
    }
    float *scratch = x + (size_t)b * D, *lg = scratch + (size_t)b * (D + 2);
    for (int i = 0; i < b; i++) {
        const int r = h->r0 + i;
        memcpy(x + (size_t)i * D, data + ((size_t)i * c->t + c->pos[r]) * D, (size_t)D * sizeof(float));
        tok[2 * i] = c->answer[r];
        tok[2 * i + 1] = c->wrong[r];
    }
    hs_final_token_logits(c->m, x, b, tok, 2, scratch, lg);
    for (int i = 0; i < b; i++) h->out[h->r0 + i] = (double)lg[2 * i] - (double)lg[2 * i + 1];
    h->r0 += (int)shape[0];
    free(x);
    free(tok);
    return 0;
}

static hs_status base_job(hs_engine *e, hs_engine_worker *w, int j, void *arg)
{
    base_arg *ba = arg;
    pctx *c = ba->c;
    static const char *const cfilt[] = {"blocks.*.hook_resid_pre", "blocks.*.attn.hook_k", "blocks.*.attn.hook_v"};
    hs_cache *out = j == 0 ? ba->clean : ba->corr;
    ld_hook_ctx lh = {c, j == 0 ? ba->ld_src : ba->ld_dst, 0};
    ld_hook_ctx l2 = {c, j == 0 ? ba->ld2_src : ba->ld2_dst, 0};
    char last[64];
    snprintf(last, sizeof last, "blocks.%d.hook_resid_post", c->m->cfg.n_layers - 1);
    hs_hooks *hk = NULL;
    hs_status st = hs_hooks_create(&hk, &w->err);
    if (st == HS_OK && ba->all_logits) st = hs_hooks_add(hk, "logits", ld_hook, &lh, &w->err);
    if (st == HS_OK && ba->ld2_src) st = hs_hooks_add(hk, last, ld_resid_hook, &l2, &w->err);
    if (!ba->all_logits) w->acts->logit_pos = HS_LOGITS_NONE; /* no final norm, no logits */
    if (st == HS_OK)
        st = j == 0 ? hs_engine_cache(e, w, c->src, c->n, ba->filt, ba->nf, hk, out)
                    : hs_engine_cache(e, w, c->dst, c->n, cfilt, c->suffix_s > 0 ? 3 : 1, hk, out);
    w->acts->logit_pos = -1;
    hs_hooks_destroy(hk);
    return st;
}

/* 1 when patching act at position p of layer l cannot change a logit read
 * at any prompt's position (see the comment at the call). */
static int unreachable(int act, int l, int p, int L, int max_pos, const unsigned char *read)
{
    if (p > max_pos) return 1;
    const int own_position_only = act == HS_PATCH_Z || act == HS_PATCH_Q || act == HS_PATCH_PATTERN ||
                                  act == HS_PATCH_ATTN_OUT || act == HS_PATCH_MLP_OUT || act == HS_PATCH_RESID_POST;
    return l == L - 1 && own_position_only && !read[p];
}

hs_status hs_patch_check(const hs_model *m, int n, int t, const int *answer, const int *wrong,
                         const int *pos, unsigned acts, hs_error *err)
{
    const hs_config *cfg = &m->cfg;
    const int V = cfg->d_vocab;
    if (n < 1 || t < 1) return hs_fail(err, HS_ERR_INPUT, "the prompt set is empty");
    for (int i = 0; i < n; i++)
        if (answer[i] < 0 || answer[i] >= V || wrong[i] < 0 || wrong[i] >= V || pos[i] < 0 || pos[i] >= t)
            return hs_fail(err, HS_ERR_INPUT, "prompt %d has no answer/wrong token or a bad position", i);
    /* acts the model does not produce */
    if (cfg->d_mlp == 0 && (acts & (1u << HS_PATCH_MLP_OUT)))
        return hs_fail(err, HS_ERR_INPUT, "mlp_out: the model has no MLP (d_mlp 0)");
    if (cfg->attn != HS_ATTN_SOFTMAX && (acts & ((1u << HS_PATCH_Q) | (1u << HS_PATCH_K))))
        return hs_fail(err, HS_ERR_INPUT, "q, k: the model's uniform attention has no queries or keys");
    if (hs_kv_heads(cfg) != cfg->n_heads && (acts & ((1u << HS_PATCH_K) | (1u << HS_PATCH_V))))
        return hs_fail(err, HS_ERR_INPUT, "k, v: grouped-query attention shares them across %d "
                       "query heads (n_key_value_heads %d): patch q, z or pattern per head",
                       cfg->n_heads / hs_kv_heads(cfg), hs_kv_heads(cfg));
    return HS_OK;
}

hs_status hs_patch_run_tokens(const hs_model *m, hs_pool *pool, const int *src, const int *dst, int n, int t,
                              const int *answer, const int *wrong, const int *pos, unsigned acts,
                              hs_patch_report *out, hs_error *err)
{
    return hs_patch_run_tokens_by(m, pool, src, dst, n, t, answer, wrong, pos, acts, HS_PATCH_BY_BOTH, out, err);
}

hs_status hs_patch_run_tokens_by(const hs_model *m, hs_pool *pool, const int *src, const int *dst, int n, int t,
                                 const int *answer, const int *wrong, const int *pos, unsigned acts,
                                 hs_patch_by by, hs_patch_report *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    if ((int)by < 0 || by > HS_PATCH_BY_HEAD_POS) return hs_fail(err, HS_ERR_INPUT, "patch: unknown cells %d", (int)by);
    const int all_pos = by != HS_PATCH_BY_HEAD_POS, each_pos = by != HS_PATCH_BY_HEAD;
    const hs_config *cfg = &m->cfg;
    const int L = cfg->n_layers, H = cfg->n_heads;
    hs_status st = hs_patch_check(m, n, t, answer, wrong, pos, acts, err);
    if (st != HS_OK) return st;
    out->L = L;
    out->H = H;
    out->n = n;
    out->t = t;
    out->acts = acts;
    out->by = by;
    pctx c;
    memset(&c, 0, sizeof c);
    c.m = m;
    c.t = t;
    c.n_real = n;
    /* Every prompt read at one position p: the patched runs compute the
     * last block from its attention output on and the logits at p alone
     * (hs_engine.read_pos), whose products then have a row per prompt: the
     * set is padded for them to have HS_ENGINE_MIN_TOKENS rows (16 prompts:
     * done from 16 prompts on, where that costs at most one chunk's rows).
     * The values are those of the whole run (per-row kernels). */
    int one_pos = pos[0];
    for (int i = 1; i < n; i++)
        if (pos[i] != pos[0]) one_pos = -1;
    const int read_pos = n >= HS_ENGINE_MIN_TOKENS ? one_pos : -1;
    const int rt = read_pos >= 0 ? 1 : t;
    /* the set as the engine runs it, so the caches' chunk views match every forward */
    int np = 0, *psrc = hs_engine_pad_set(src, n, t, rt, &np), *pdst = hs_engine_pad_set(dst, n, t, rt, &np);
    int *pans = hs_engine_pad_set(answer, n, 1, rt, &np), *pwr = hs_engine_pad_set(wrong, n, 1, rt, &np);
    int *ppos = hs_engine_pad_set(pos, n, 1, rt, &np);
    c.n = np;
    c.src = psrc;
    c.dst = pdst;
    c.answer = pans;
    c.wrong = pwr;
    c.pos = ppos;
    hs_engine e;
    memset(&e, 0, sizeof e);
    hs_cache clean = {0}, corr = {0};
    double *lds = calloc((size_t)np * 4, sizeof *lds);
    const char *filt[HS_PATCH_N];
    char pats[HS_PATCH_N][48];
    int nf = 0, n_jobs = 0;
    unsigned char *read = NULL;
    for (int a = 0; a < HS_PATCH_N; a++) {
        if (!(acts & (1u << a))) continue;
        snprintf(pats[a], sizeof pats[a], hs_patch_hooks[a], 0);
        /* "blocks.0.x" -> "blocks.*.x" */
        char *d0 = strstr(pats[a], ".0.");
        d0[1] = '*';
        filt[nf++] = pats[a];
        const int head = hs_patch_act_is_head(a);
        const size_t cells = head ? (size_t)L * H : (size_t)L * t;
        if (!head || all_pos) {
            out->metric[a] = malloc(cells * sizeof(double));
            out->ld[a] = malloc(cells * sizeof(double));
            if (!out->metric[a] || !out->ld[a]) goto oom;
            n_jobs += head ? L : (int)cells; /* a head act's all-position cells: one job per layer */
        }
        if (head && each_pos) {
            out->metric_pos[a] = malloc(cells * t * sizeof(double));
            out->ld_pos[a] = malloc(cells * t * sizeof(double));
            if (!out->metric_pos[a] || !out->ld_pos[a]) goto oom;
            n_jobs += (int)cells * t;
        }
    }
    c.jobs = calloc((size_t)n_jobs + (size_t)L * H, sizeof *c.jobs); /* + z's suffix jobs (<= L H) */
    if (!lds || !c.jobs || !psrc || !pdst || !pans || !pwr || !ppos) goto oom;
    /* Cells whose patch cannot reach a read logit, left out of the sweeps
     * (their LD is the corrupted one exactly): a position after every read
     * position (causal attention), and in the last layer a position no prompt
     * reads for the acts that write only their own position there (z, q,
     * pattern rows, attn_out, mlp_out, resid_post; not k, v or resid_pre,
     * which later positions' attention reads). */
    int max_pos = 0;
    read = calloc((size_t)t, 2);
    if (read == NULL) goto oom;
    for (int i = 0; i < n; i++) {
        read[pos[i]] = 1;
        if (pos[i] > max_pos) max_pos = pos[i];
    }
    /* Cells at a position p before which (p included) every clean prompt
     * equals its corrupted partner token for token are left out too: every
     * act at p depends on tokens 0..p only (causal attention, per-row
     * kernels), so the clean value written there is the corrupted run's bit
     * for bit and the patched run is the corrupted run (Winograd pairs differ
     * from the adjective on: 11 of 15 positions per head). */
    unsigned char *same_prefix = read + t;
    for (int p = 0, same = 1; p < t; p++) {
        for (int i = 0; i < n && same; i++) same = src[(size_t)i * t + p] == dst[(size_t)i * t + p];
        same_prefix[p] = (unsigned char)same;
    }
    /* z's all-position cells from the first position where a pair differs
     * on (suffix_group_run), when every prompt reads there or later */
    if ((acts & (1u << HS_PATCH_Z)) && all_pos && hs_forward_suffix_ok(cfg)) {
        int s = 0;
        while (s < t && same_prefix[s]) s++;
        for (int i = 0; i < n && s > 0; i++)
            if (pos[i] < s) s = 0;
        c.suffix_s = s < t ? s : 0;
    }
    int nj = 0;
    const int U = units_per_job(H, np, one_pos); /* heads a job of heads takes: >= H */
    /* z's suffix jobs: J of them, job j the units j, j + J, ..: about 128
     * sequences (n each) a job where the set allows, at least one a worker,
     * at most H (progress in H steps) */
    int J = (int)((long)L * H * n / 128);
    if (J > H) J = H;
    if (J < hs_pool_threads(pool)) J = hs_pool_threads(pool);
    if (J > L * H) J = L * H;
    for (int a = 0; a < HS_PATCH_N; a++) {
        if (!(acts & (1u << a))) continue;
        for (int j = 0; a == HS_PATCH_Z && c.suffix_s > 0 && j < J; j++)
            c.jobs[nj++] = (pjob){a, 0, SUFFIX_UNITS, -1, out->ld[a], out->metric[a], 0, j, J};
        for (int u0 = 0; hs_patch_act_is_head(a) && all_pos && !(a == HS_PATCH_Z && c.suffix_s > 0) && u0 < L * H;
             u0 += U)
            c.jobs[nj++] = (pjob){a, u0 / H, HEADS_OF_LAYER, -1, out->ld[a], out->metric[a], 0, u0,
                                  L * H - u0 < U ? L * H - u0 : U};
        for (int l = 0; l < L; l++) {
            if (!hs_patch_act_is_head(a)) {
                for (int p = 0; p < t; p++)
                    c.jobs[nj++] = (pjob){a, l, -1, p, &out->ld[a][l * t + p], &out->metric[a][l * t + p],
                                          same_prefix[p] || unreachable(a, l, p, L, max_pos, read), 0, 0};
                continue;
            }
            for (int h = 0; h < H; h++) {
                for (int p = 0; p < t && each_pos; p++) {
                    const size_t k = ((size_t)l * H + h) * t + p;
                    c.jobs[nj++] = (pjob){a, l, h, p, &out->ld_pos[a][k], &out->metric_pos[a][k],
                                          same_prefix[p] || unreachable(a, l, p, L, max_pos, read), 0, 0};
                }
            }
        }
    }
    /* activations for the most rows a forward runs on: a job's heads in
     * one batch (U np rows, chunked) at the t = 1 rule of a read position,
     * the most any sweep or base run here needs (a set of one prompt: 16
     * rows, not a chunk's 32) */
    const int most = U * np < HS_ENGINE_CHUNK ? U * np : HS_ENGINE_CHUNK;
    /* z alone at every position from the suffix on: the base runs' rows
     * alone (np, whole sequences; 1 prompt of GPT-2: 256 MB of activations
     * less to fault in) */
    const int base_only = acts == (1u << HS_PATCH_Z) && c.suffix_s > 0 && !each_pos;
    const int rows = base_only ? hs_engine_run_rows(np < HS_ENGINE_CHUNK ? np : HS_ENGINE_CHUNK, t)
                               : hs_engine_run_rows(most, 1);
    if ((st = hs_engine_init_rows(&e, m, pool, t, rows, err)) != HS_OK) goto fail;
    c.row_ld = calloc((size_t)e.n_workers, sizeof *c.row_ld);
    if (c.row_ld == NULL) goto oom;
    for (int i = 0; i < e.n_workers; i++)
        if ((c.row_ld[i] = malloc((size_t)np * sizeof(double))) == NULL) goto oom;
    /* the base runs' LDs for each cell by its patched run's arithmetic: every
     * logit's product for the sweeps, the two read columns for the suffix
     * runs (z alone at every position: no logits at all, GPT-2: a 154 MB
     * product with W_U a run less) */
    base_arg ba = {&c, filt, nf, &clean, &corr, lds, lds + np, c.suffix_s > 0 ? lds + 2 * np : NULL,
                   c.suffix_s > 0 ? lds + 3 * np : NULL, !base_only};
    if ((st = hs_engine_for(&e, 2, base_job, &ba, err)) != HS_OK) goto fail;
    c.corr = &corr;
    c.clean = &clean;
    if (c.suffix_s > 0) {
        c.ck = calloc((size_t)L * 4, sizeof *c.ck);
        if (c.ck == NULL) goto oom;
        c.cv = c.ck + L;
        c.cr = c.cv + L;
        c.cz = c.cr + L;
        for (int l = 0; l < L; l++) {
            const hs_cache_entry *k = hs_cache_getf(&corr, "blocks.%d.attn.hook_k", l);
            const hs_cache_entry *v = hs_cache_getf(&corr, "blocks.%d.attn.hook_v", l);
            const hs_cache_entry *rp = hs_cache_getf(&corr, "blocks.%d.hook_resid_pre", l);
            const hs_cache_entry *z = hs_cache_getf(&clean, "blocks.%d.attn.hook_z", l);
            if (k == NULL || v == NULL || rp == NULL || z == NULL) {
                st = hs_fail(err, HS_ERR_INPUT, "patch: the runs have no blocks.%d k, v, resid_pre or z cached", l);
                goto fail;
            }
            c.ck[l] = k->data;
            c.cv[l] = v->data;
            c.cr[l] = rp->data;
            c.cz[l] = z->data;
        }
    }
    c.read_pos = one_pos; /* a layer's heads in one batch have H n rows: read p alone */
    e.read_pos = read_pos; /* the caches above are whole; the patched runs read p alone */
    /* a job as the user sees it: one cell; a layer's heads in one batch; or,
     * z's suffix runs, a group of heads (every J-th of the model: a prompt
     * of GPT-2 is one job, 1/1) */
    e.progress = "batches of patched runs (a cell, a layer's heads, or a group of heads)"; /* hs_pool_progress per job */
    c.ld_clean = out->ld_clean = mean_rows(lds, n);
    c.ld_corr = out->ld_corr = mean_rows(lds + np, n);
    if (c.suffix_s > 0) {
        c.ld2_clean = mean_rows(lds + 2 * np, n);
        c.ld2_corr = mean_rows(lds + 3 * np, n);
    }
    if (base_only) { /* the LDs reported: every logit's when the base runs make them */
        out->ld_clean = c.ld2_clean;
        out->ld_corr = c.ld2_corr;
    }
    if ((st = hs_engine_views(&clean, np, &c.src_v, err)) != HS_OK) goto fail;
    st = hs_engine_for(&e, nj, pjob_run, &c, err);
    goto done;
oom:
    st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
fail:
done:
    if (c.row_ld)
        for (int i = 0; i < e.n_workers; i++) free(c.row_ld[i]);
    free(c.row_ld);
    hs_engine_views_free(c.src_v, hs_engine_chunks(np));
    free(read);
    free(psrc);
    free(pdst);
    free(pans);
    free(pwr);
    free(ppos);
    hs_cache_free(&clean);
    hs_cache_free(&corr);
    hs_engine_free(&e);
    free(c.jobs);
    free((void *)c.ck);
    free(lds);
    if (st != HS_OK) hs_patch_report_free(out);
    return st;
}

/* What hs_patch_run needs of a prompt set. */
static hs_status prompts_check(const hs_prompts *p, hs_error *err)
{
    if (p->corr == NULL)
        return hs_fail(err, HS_ERR_INPUT, "the prompt set has no \"corrupted\" prompts to patch into");
    if (p->wrong == NULL)
        return hs_fail(err, HS_ERR_INPUT, "the prompt set has no \"wrong\" answers (the metric is the "
                                          "logit difference answer - wrong)");
    for (int i = 0; i < p->n; i++)
        if (p->answer[i] < 0)
            return hs_fail(err, HS_ERR_INPUT, "line %d has no \"answer\"", p->line[i]);
    return HS_OK;
}

hs_status hs_patch_run(const hs_model *m, hs_pool *pool, const hs_prompts *p, unsigned acts,
                       hs_patch_report *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    hs_status st = prompts_check(p, err);
    if (st != HS_OK) return st;
    return hs_patch_run_tokens(m, pool, p->clean, p->corr, p->n, p->t, p->answer, p->wrong, p->pos, acts, out,
                               err);
}

hs_status hs_patch_run_by(const hs_model *m, hs_pool *pool, const hs_prompts *p, unsigned acts,
                          hs_patch_method method, hs_patch_by by, hs_patch_report *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    if (by == HS_PATCH_BY_BOTH) return hs_patch_run_method(m, pool, p, acts, method, out, err);
    if (method != HS_PATCH_EXACT)
        return hs_fail(err, HS_ERR_INPUT, "patch: the cells of one kind (--by) are for the exact sweep alone");
    hs_status st = prompts_check(p, err);
    if (st != HS_OK) return st;
    return hs_patch_run_tokens_by(m, pool, p->clean, p->corr, p->n, p->t, p->answer, p->wrong, p->pos, acts, by,
                                  out, err);
}

hs_status hs_patch_run_method(const hs_model *m, hs_pool *pool, const hs_prompts *p, unsigned acts,
                              hs_patch_method method, hs_patch_report *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    if ((int)method < 0 || method >= HS_PATCH_METHOD_N)
        return hs_fail(err, HS_ERR_INPUT, "unknown patching method %d", (int)method);
    hs_status st = prompts_check(p, err);
    if (st == HS_OK && method != HS_PATCH_ATP)
        st = hs_patch_run_tokens(m, pool, p->clean, p->corr, p->n, p->t, p->answer, p->wrong, p->pos, acts, out,
                                 err);
    if (st != HS_OK || method == HS_PATCH_EXACT) return st;
    if (method == HS_PATCH_ATP)
        return hs_atp_run_tokens(m, pool, p->clean, p->corr, p->n, p->t, p->answer, p->wrong, p->pos, acts, out,
                                 err);
    hs_patch_report a;
    st = hs_atp_run_tokens(m, pool, p->clean, p->corr, p->n, p->t, p->answer, p->wrong, p->pos, acts, &a, err);
    if (st != HS_OK) {
        hs_patch_report_free(out);
        return st;
    }
    hs_patch_join(out, &a);
    return HS_OK;
}
