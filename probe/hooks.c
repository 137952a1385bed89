/*
 * probe/hooks.c -- hook registry on top of the model's observer, name
 * patterns, run_with_hooks, the activation cache and its safetensors export.
 */
#include "probe/probe.h"
#include "model/checkpoint.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ------------------------------------------------------------------------ */
/* Name patterns                                                             */

int hs_name_match(const char *p, const char *s)
{
    while (*p) {
        if (p[0] == '*' && p[1] == '*') {
            p += 2;
            while (*p == '*') p++;
            if (*p == '\0') return 1;
            for (const char *q = s; *q; q++)
                if (hs_name_match(p, q)) return 1;
            return 0;
        }
        if (p[0] == '*') {
            p++;
            /* any run without '.' */
            for (const char *q = s;; q++) {
                if (hs_name_match(p, q)) return 1;
                if (*q == '\0' || *q == '.') return 0;
            }
        }
        if (*s != *p) return 0;
        p++;
        s++;
    }
    return *s == '\0';
}

/* ------------------------------------------------------------------------ */
/* Registry                                                                  */

typedef struct {
    char pattern[128];
    hs_hook_fn fn;
    void *ctx;
    void (*free_ctx)(void *);
    hs_hook_explain_fn explain;  /* may be NULL */
    int trusted;                 /* its return value says whether it wrote (hs_hooks_add_trusted) */
} hook_entry;

struct hs_hooks {
    int n, cap;
    hook_entry *e;
};

hs_status hs_hooks_create(hs_hooks **out, hs_error *err)
{
    *out = calloc(1, sizeof **out);
    if (*out == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory for hooks");
    return HS_OK;
}

void hs_hooks_clear(hs_hooks *hk)
{
    if (hk == NULL) return;
    for (int i = 0; i < hk->n; i++)
        if (hk->e[i].free_ctx) hk->e[i].free_ctx(hk->e[i].ctx);
    hk->n = 0;
}

void hs_hooks_destroy(hs_hooks *hk)
{
    if (hk == NULL) return;
    hs_hooks_clear(hk);
    free(hk->e);
    free(hk);
}

int hs_hooks_count(const hs_hooks *hk) { return hk ? hk->n : 0; }

hs_status hs_hooks_add_owned(hs_hooks *hk, const char *pattern, hs_hook_fn fn, void *ctx,
                             void (*free_ctx)(void *), hs_error *err)
{
    return hs_hooks_add_explained(hk, pattern, fn, ctx, free_ctx, NULL, err);
}

static hs_status add_entry(hs_hooks *hk, const char *pattern, hs_hook_fn fn, void *ctx,
                           void (*free_ctx)(void *), hs_hook_explain_fn explain, int trusted,
                           hs_error *err)
{
    hs_status st = HS_OK;
    if (hk == NULL || pattern == NULL || fn == NULL) {
        st = hs_fail(err, HS_ERR_INPUT, "hooks: NULL registry, pattern or function");
        goto fail;
    }
    if (strlen(pattern) >= sizeof hk->e[0].pattern) {
        st = hs_fail(err, HS_ERR_INPUT, "hooks: pattern '%.40s...' longer than %zu chars", pattern,
                     sizeof hk->e[0].pattern - 1);
        goto fail;
    }
    if (hk->n == hk->cap) {
        int cap = hk->cap ? hk->cap * 2 : 8;
        hook_entry *e = realloc(hk->e, (size_t)cap * sizeof *e);
        if (e == NULL) {
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory for hooks");
            goto fail;
        }
        hk->e = e;
        hk->cap = cap;
    }
    hook_entry *h = &hk->e[hk->n++];
    snprintf(h->pattern, sizeof h->pattern, "%s", pattern);
    h->fn = fn;
    h->ctx = ctx;
    h->free_ctx = free_ctx;
    h->explain = explain;
    h->trusted = trusted;
    return HS_OK;
fail:
    if (free_ctx) free_ctx(ctx);
    return st;
}

hs_status hs_hooks_add_explained(hs_hooks *hk, const char *pattern, hs_hook_fn fn, void *ctx,
                                 void (*free_ctx)(void *), hs_hook_explain_fn explain,
                                 hs_error *err)
{
    return add_entry(hk, pattern, fn, ctx, free_ctx, explain, 0, err);
}

hs_status hs_hooks_add_trusted(hs_hooks *hk, const char *pattern, hs_hook_fn fn, void *ctx,
                               void (*free_ctx)(void *), hs_hook_explain_fn explain, hs_error *err)
{
    return add_entry(hk, pattern, fn, ctx, free_ctx, explain, 1, err);
}

hs_status hs_hooks_add(hs_hooks *hk, const char *pattern, hs_hook_fn fn, void *ctx, hs_error *err)
{
    return hs_hooks_add_owned(hk, pattern, fn, ctx, NULL, err);
}

/* A pattern matches a point if it matches its name or its alias
 * (hs_hook_points: "unembed.hook_out" for "logits"). */
static int point_match(const char *pattern, const char *name)
{
    if (hs_name_match(pattern, name)) return 1;
    const char *alias = hs_hook_alias(name);
    return alias != NULL && hs_name_match(pattern, alias);
}

int hs_hook_spec_matches(const hs_config *cfg, const char *pattern)
{
    const int n = hs_hook_points(cfg, NULL, 0);
    hs_hook_point *pts = malloc((size_t)n * sizeof *pts);
    if (pts == NULL) return -1;
    hs_hook_points(cfg, pts, n);
    int k = 0;
    for (int i = 0; i < n; i++) k += point_match(pattern, pts[i].name);
    free(pts);
    return k;
}

/* HS_ERR_INPUT naming the first of the registry's patterns that matches no
 * point of cfg (what = "hook" or "cache filter"). */
static hs_status check_spec(const hs_config *cfg, const char *what, const char *pattern,
                            hs_error *err)
{
    const int k = hs_hook_spec_matches(cfg, pattern);
    if (k < 0) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (k == 0)
        return hs_fail(err, HS_ERR_INPUT, "%s '%s' matches no hook point of this model "
                       "(docs/HOOKS.md lists them and when each exists)", what, pattern);
    return HS_OK;
}

hs_status hs_hooks_match_counts(const hs_hooks *hk, const hs_model *m, int *counts, hs_error *err)
{
    for (int i = 0; hk && i < hk->n; i++) {
        counts[i] = hs_hook_spec_matches(&m->cfg, hk->e[i].pattern);
        if (counts[i] < 0) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    return HS_OK;
}

static hs_status check_hooks(const hs_hooks *hk, const hs_config *cfg, hs_error *err)
{
    for (int i = 0; hk && i < hk->n; i++) {
        hs_status st = check_spec(cfg, "hook", hk->e[i].pattern, err);
        if (st != HS_OK) return st;
    }
    return HS_OK;
}

static int hooks_want(const hs_hooks *hk, const char *name)
{
    if (hk == NULL) return 0;
    for (int i = 0; i < hk->n; i++)
        if (point_match(hk->e[i].pattern, name)) return 1;
    return 0;
}

/* One run's dispatch state: which hook aborted, at which point and shape,
 * so the run's error can say why (hook_entry.explain); the copy of a point's
 * value its hooks are compared against. */
typedef struct {
    const hs_hooks *hk;
    int aborted;            /* entry index, -1 = none */
    char name[64];
    int64_t shape[4];
    int ndim;
    float *before;          /* (cap) the point's value before its hooks ran */
    size_t cap;
} dispatch;

static void dispatch_free(dispatch *dp)
{
    free(dp->before);
    dp->before = NULL;
    dp->cap = 0;
}

/* Keeps the value of a point (numel floats at data) before its hooks run;
 * 0 when memory ran out (the point then counts as changed). */
static int keep_before(dispatch *dp, const float *data, size_t numel)
{
    if (numel > dp->cap) {
        float *b = realloc(dp->before, numel * sizeof *b);
        if (b == NULL) return 0;
        dp->before = b;
        dp->cap = numel;
    }
    memcpy(dp->before, data, numel * sizeof *data);
    return 1;
}

/* Runs every matching hook; -1 abort, 1 changed, 0 unchanged. A point is
 * changed when a hook returned 1 or its value differs from before the hooks
 * (bit for bit): an in-place edit counts whatever the hook returns, as in
 * TransformerLens (probe.h, hs_hook_fn). The copy to compare against is made
 * before the first untrusted hook, and only while no hook has returned 1:
 * trusted hooks before it returned 0, so they left the value as it was
 * (hs_hooks_add_trusted); a point whose hooks are all trusted is never
 * copied (the library's patches, ablations and circuit runs: a copy and a
 * compare of every hooked point per run, ~4% of `circuit`'s CPU). */
static int hooks_dispatch(dispatch *dp, const char *name, const int64_t *shape, int ndim,
                          float *data)
{
    const hs_hooks *hk = dp->hk;
    int changed = 0, kept = -1; /* -1: no hook matched yet */
    size_t numel = 1;
    if (hk == NULL) return 0;
    for (int d = 0; d < ndim; d++) numel *= (size_t)shape[d];
    for (int i = 0; i < hk->n; i++) {
        if (!point_match(hk->e[i].pattern, name)) continue;
        if (kept < 0 && !changed && !hk->e[i].trusted) kept = keep_before(dp, data, numel);
        int r = hk->e[i].fn(name, shape, ndim, data, hk->e[i].ctx);
        if (r < 0) {
            dp->aborted = i;
            snprintf(dp->name, sizeof dp->name, "%s", name);
            dp->ndim = ndim < 4 ? ndim : 4;
            memcpy(dp->shape, shape, (size_t)dp->ndim * sizeof(int64_t));
            return -1;
        }
        if (r > 0) changed = 1;
    }
    if (!changed && kept >= 0) changed = !kept || memcmp(dp->before, data, numel * sizeof *data) != 0;
    return changed;
}

/* After a run: a hook's own explanation of its abort replaces the forward's
 * generic "aborted by observer" message. */
static hs_status explain_abort(const dispatch *dp, hs_status st, hs_error *err)
{
    if (st != HS_ERR_CALLBACK || dp->aborted < 0) return st;
    const hook_entry *e = &dp->hk->e[dp->aborted];
    if (e->explain && e->explain(e->ctx, dp->name, dp->shape, dp->ndim, err)) return HS_ERR_CALLBACK;
    return st;
}

static int obs_fn(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    return hooks_dispatch((dispatch *)ctx, name, shape, ndim, data);
}

static int obs_wants(const char *name, void *ctx) { return hooks_want(((dispatch *)ctx)->hk, name); }

hs_status hs_run_with_hooks(const hs_model *m, hs_acts *acts, const int *tokens, int b, int t,
                            const hs_hooks *hk, hs_error *err)
{
    if (hk == NULL || hk->n == 0) return hs_forward(m, acts, tokens, b, t, NULL, err);
    hs_status st = check_hooks(hk, &m->cfg, err);
    if (st != HS_OK) return st;
    dispatch dp = {hk, -1, {0}, {0}, 0, NULL, 0};
    hs_observer obs = {obs_fn, obs_wants, &dp};
    st = hs_forward(m, acts, tokens, b, t, &obs, err);
    dispatch_free(&dp);
    return explain_abort(&dp, st, err);
}

hs_status hs_model_tail(const hs_model *m, int layer, hs_model **out, hs_error *err)
{
    *out = NULL;
    const int L = m->cfg.n_layers;
    if (layer < 1 || layer >= L)
        return hs_fail(err, HS_ERR_INPUT, "model tail: layer %d outside [1, %d]", layer, L - 1);
    if (m->cfg.embed_norm)
        return hs_fail(err, HS_ERR_INPUT, "model tail: a model with an embedding norm cannot start at a later layer");
    hs_model *v = calloc(1, sizeof *v);
    if (v == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    v->cfg = m->cfg;
    v->cfg.n_layers = L - layer;
    v->params = m->params;
    for (int l = 0; l < L - layer; l++) v->params.blocks[l] = m->params.blocks[l + layer];
    v->param_mem = m->param_mem;
    v->n_params = m->n_params;
    *out = v;
    return HS_OK;
}

/* The tail run's observer: its input replaces the embedding (position
 * embedding -0.0), its point names are m's (blocks.{j} -> blocks.{j + layer}). */
typedef struct {
    dispatch dp;
    int layer;
    const float *resid; /* (b, t, D) */
} tail_ctx;

/* name under m's numbering into buf, or name itself: "blocks.{j}.rest" ->
 * "blocks.{j + layer}.rest" (digits read and written by hand: sscanf and
 * snprintf per point and per wants() query were ~2% of `circuit`'s CPU) */
static const char *tail_name(const tail_ctx *tc, const char *name, char *buf, size_t n)
{
    if (strncmp(name, "blocks.", 7) != 0) return name;
    const char *p = name + 7;
    long l = 0;
    int nd = 0;
    for (; *p >= '0' && *p <= '9' && nd < 9; p++, nd++) l = l * 10 + (*p - '0');
    if (nd == 0 || *p != '.') return name;
    char num[24];
    int k = 0;
    l += tc->layer;
    do num[k++] = (char)('0' + l % 10); while ((l /= 10) > 0);
    const size_t rest = strlen(p); /* ".rest" */
    if (7 + (size_t)k + rest + 1 > n) return name;
    memcpy(buf, "blocks.", 7);
    for (int i = 0; i < k; i++) buf[7 + i] = num[k - 1 - i];
    memcpy(buf + 7 + k, p, rest + 1);
    return buf;
}

static int tail_fn(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    tail_ctx *tc = ctx;
    if (strcmp(name, "hook_embed") == 0 || strcmp(name, "hook_pos_embed") == 0) {
        size_t numel = 1;
        for (int i = 0; i < ndim; i++) numel *= (size_t)shape[i];
        if (name[5] == 'e') memcpy(data, tc->resid, numel * sizeof(float));
        else
            for (size_t i = 0; i < numel; i++) data[i] = -0.0f;
        return 1;
    }
    char buf[96];
    return hooks_dispatch(&tc->dp, tail_name(tc, name, buf, sizeof buf), shape, ndim, data);
}

static int tail_wants(const char *name, void *ctx)
{
    const tail_ctx *tc = ctx;
    if (strcmp(name, "hook_embed") == 0 || strcmp(name, "hook_pos_embed") == 0) return 1;
    char buf[96];
    return hooks_want(tc->dp.hk, tail_name(tc, name, buf, sizeof buf));
}

hs_status hs_run_tail_with_hooks(const hs_model *m, const hs_model *tail, int layer, hs_acts *acts,
                                 const float *resid_pre, const int *tokens, int b, int t,
                                 const hs_hooks *hk, hs_error *err)
{
    if (layer == 0) return hs_run_with_hooks(m, acts, tokens, b, t, hk, err);
    if (tail == NULL || resid_pre == NULL || layer < 0 || tail->cfg.n_layers != m->cfg.n_layers - layer)
        return hs_fail(err, HS_ERR_INPUT, "tail run: no tail of the model from layer %d, or no residual", layer);
    hs_status st = check_hooks(hk, &m->cfg, err);
    if (st != HS_OK) return st;
    tail_ctx tc = {{hk, -1, {0}, {0}, 0, NULL, 0}, layer, resid_pre};
    hs_observer obs = {tail_fn, tail_wants, &tc};
    st = hs_forward(tail, acts, tokens, b, t, &obs, err);
    dispatch_free(&tc.dp);
    return explain_abort(&tc.dp, st, err);
}

/* ------------------------------------------------------------------------ */
/* Cache                                                                     */

void hs_cache_init(hs_cache *c) { memset(c, 0, sizeof *c); }

void hs_cache_free(hs_cache *c)
{
    if (c == NULL) return;
    if (c->mem) /* every entry's data in one block */
        hs_floats_free(c->mem);
    else if (!c->borrowed) /* a view's data belong to the viewed cache */
        for (int i = 0; i < c->n; i++) free(c->e[i].data);
    free(c->e);
    memset(c, 0, sizeof *c);
}

typedef struct {
    dispatch dp;
    const char *const *filters;
    int n_filters;
    hs_cache *cache;
    int oom;
    hs_cache_entry *old; /* the previous run's entries (their data reused in order) */
    int n_old;
    float *pending[2];   /* cache_dest's buffers for the next entries, in order, until
                          * cache_fn takes them (two: a block's scores and pattern,
                          * hs_forward_dest) */
    size_t pending_n[2];
    int n_pending;
    hs_pool *pool;       /* the forward's workers for large copies (NULL: this thread) */
} cache_ctx;

/* A large copy split over the pool's workers (cache_copy). */
typedef struct {
    float *dst;
    const float *src;
    size_t n;
    int parts;
} copy_job;

static hs_status copy_part(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    (void)err;
    const copy_job *c = ctx;
    /* parts start on whole cache lines (16 floats) */
    const size_t a = (c->n * (size_t)j / (size_t)c->parts) & ~(size_t)15;
    const size_t b = j + 1 == c->parts ? c->n : (c->n * (size_t)(j + 1) / (size_t)c->parts) & ~(size_t)15;
    hs_copy_streaming(c->dst + a, c->src + a, b - a);
    return HS_OK;
}

/* dst <- src (n floats): from 256 KB on with streaming stores
 * (hs_copy_streaming), from 1 MB on over the pool's workers (one core alone
 * does not reach the memory's bandwidth; GPT-2 small's MLP activations are
 * 12.6 MB a layer at 1,024 tokens, its residual-sized points 3.1 MB, 13 of
 * them a layer). */
static void cache_copy(const cache_ctx *cc, float *dst, const float *src, size_t n)
{
    const int w = hs_pool_threads(cc->pool);
    if (n < ((size_t)1 << 16)) {
        memcpy(dst, src, n * sizeof(float));
        return;
    }
    if (w < 2 || n < ((size_t)1 << 18)) {
        hs_copy_streaming(dst, src, n);
        return;
    }
    copy_job c = {dst, src, n, w};
    hs_error err;
    (void)hs_pool_for(cc->pool, w, copy_part, &c, &err); /* cannot fail */
}

/* n floats for a cache entry, freed with free(): a block of 2 MiB or more
 * starts on a 2 MiB boundary and is advised huge (MADV_HUGEPAGE), so its
 * first writes fault once per 2 MiB, not per 4 KiB (GPT-2 small's full
 * cache at 1,024 tokens is 4.4 GB: a million faults and page clears were
 * half the forward's time). */
static float *cache_alloc(size_t n)
{
    const size_t bytes = n * sizeof(float), huge = (size_t)2 << 20;
    if (bytes < huge) return malloc(bytes ? bytes : 1);
    void *p = aligned_alloc(huge, (bytes + huge - 1) & ~(huge - 1)); /* C11: a multiple of it */
    if (p == NULL) return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, bytes & ~(huge - 1), MADV_HUGEPAGE);
#endif
    return p;
}

/* A filter "?pattern" is optional: it may match no point of the model. */
static const char *filter_pattern(const char *f) { return f[0] == '?' ? f + 1 : f; }

static int cache_filter(const cache_ctx *cc, const char *name)
{
    if (cc->filters == NULL || cc->n_filters <= 0) return 1;
    for (int i = 0; i < cc->n_filters; i++)
        if (point_match(filter_pattern(cc->filters[i]), name)) return 1;
    return 0;
}

static int cache_wants(const char *name, void *ctx)
{
    const cache_ctx *cc = ctx;
    return cache_filter(cc, name) || hooks_want(cc->dp.hk, name);
}

/* The buffer for the cache's entry at index at, of n floats: the previous
 * run's entry at this place when it has this size (its pages are resident
 * already), else a new one. NULL when memory runs out. */
static float *cache_next_buffer(cache_ctx *cc, int at, size_t numel)
{
    if (at < cc->n_old && cc->old[at].data && cc->old[at].numel == numel) {
        float *d = cc->old[at].data;
        cc->old[at].data = NULL;
        return d;
    }
    return cache_alloc(numel);
}

/* hs_forward_dest's dest: a point the cache keeps is written by the forward into
 * the buffer its entry will own (cache_fn then copies nothing); *keeps when
 * no hook of the run is at the point (the cache only stores it). */
static float *cache_dest(const char *name, const int64_t *shape, int ndim, int *keeps, void *ctx)
{
    cache_ctx *cc = ctx;
    if (!cache_filter(cc, name) || cc->n_pending == 2 || ndim < 1 || ndim > 4) return NULL;
    size_t numel = 1;
    for (int i = 0; i < ndim; i++) numel *= (size_t)shape[i];
    const int q = cc->n_pending;
    float *d = cache_next_buffer(cc, cc->cache->n + q, numel);
    if (d == NULL) return NULL;
    cc->pending[q] = d;
    cc->pending_n[q] = numel;
    cc->n_pending++;
    *keeps = !hooks_want(cc->dp.hk, name);
    return d;
}

static int cache_fn(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    cache_ctx *cc = ctx;
    int r = hooks_dispatch(&cc->dp, name, shape, ndim, data);
    if (r < 0) return r;
    if (!cache_filter(cc, name)) return r;
    hs_cache *c = cc->cache;
    if (strlen(name) >= sizeof c->e[0].name || ndim < 1 || ndim > 4) return -1;
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 64;
        hs_cache_entry *e = realloc(c->e, (size_t)cap * sizeof *e);
        if (e == NULL) {
            cc->oom = 1;
            return -1;
        }
        c->e = e;
        c->cap = cap;
    }
    hs_cache_entry *e = &c->e[c->n];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    e->ndim = ndim;
    size_t numel = 1;
    for (int i = 0; i < ndim; i++) {
        e->shape[i] = shape[i];
        numel *= (size_t)shape[i];
    }
    e->numel = numel;
    if (cc->n_pending > 0 && data == cc->pending[0] && numel == cc->pending_n[0]) {
        /* written in place (cache_dest) */
        e->data = cc->pending[0];
        cc->pending[0] = cc->pending[1], cc->pending_n[0] = cc->pending_n[1];
        cc->pending[1] = NULL, cc->pending_n[1] = 0;
        cc->n_pending--;
        c->n++;
        return r;
    }
    e->data = cache_next_buffer(cc, c->n, numel);
    if (e->data == NULL) {
        cc->oom = 1;
        return -1;
    }
    cache_copy(cc, e->data, data, numel);
    c->n++;
    return r;
}

hs_status hs_run_with_cache(const hs_model *m, hs_acts *acts, const int *tokens, int b, int t,
                            const char *const *filters, int n_filters, const hs_hooks *hooks,
                            hs_cache *cache, hs_error *err)
{
    /* the previous contents' buffers are kept for this run's entries of the
     * same size, in forward order (a run repeated on one cache faults no
     * page); whatever is not reused is freed after */
    hs_cache_entry *old = NULL;
    int n_old = 0;
    if (!cache->borrowed && cache->mem == NULL) {
        old = cache->e;
        n_old = cache->n;
        memset(cache, 0, sizeof *cache);
    } else {
        hs_cache_free(cache);
    }
    hs_status st = check_hooks(hooks, &m->cfg, err);
    for (int i = 0; st == HS_OK && filters && i < n_filters; i++)
        if (filters[i][0] != '?') st = check_spec(&m->cfg, "cache filter", filters[i], err);
    if (st != HS_OK) {
        for (int i = 0; i < n_old; i++) free(old[i].data);
        free(old);
        return st;
    }
    /* acts->pool: set only on activations a forward uses outside any pool
     * job (the engine's workers have none), so its workers are free here */
    cache_ctx cc = {{hooks, -1, {0}, {0}, 0, NULL, 0}, filters, n_filters, cache, 0, old, n_old,
                    {NULL, NULL}, {0, 0}, 0, acts->pool};
    hs_observer obs = {cache_fn, cache_wants, &cc};
    st = hs_forward_dest(m, acts, tokens, b, t, &obs, cache_dest, err);
    for (int q = 0; q < cc.n_pending; q++) free(cc.pending[q]); /* an abort between cache_dest and cache_fn */
    for (int i = 0; i < n_old; i++) free(old[i].data);
    free(old);
    dispatch_free(&cc.dp);
    st = explain_abort(&cc.dp, st, err);
    if (cc.oom) st = hs_fail(err, HS_ERR_NOMEM, "out of memory while caching activations");
    if (st != HS_OK) hs_cache_free(cache);
    return st;
}

const hs_cache_entry *hs_cache_get(const hs_cache *c, const char *name)
{
    if (c == NULL || name == NULL) return NULL;
    name = hs_hook_canonical(name);
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->e[i].name, name) == 0) return &c->e[i];
    return NULL;
}

const hs_cache_entry *hs_cache_getf(const hs_cache *c, const char *fmt, ...)
{
    hs_buf b = {0}; /* grows: a truncated name could find another entry */
    va_list ap;
    va_start(ap, fmt);
    hs_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    const hs_cache_entry *e = b.oom ? NULL : hs_cache_get(c, b.s ? b.s : "");
    hs_buf_free(&b);
    return e;
}

hs_status hs_cache_save(const hs_cache *c, const char *path, const char *const *meta_keys,
                        const char *const *meta_vals, int n_meta, hs_error *err)
{
    if (c == NULL || c->n == 0) return hs_fail(err, HS_ERR_INPUT, "cache save: the cache is empty");
    hs_status st = HS_OK;
    hs_st_tensor *ts = calloc((size_t)c->n, sizeof *ts);
    float **copies = calloc((size_t)c->n, sizeof *copies);
    if (ts == NULL || copies == NULL) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < c->n; i++) {
        const hs_cache_entry *e = &c->e[i];
        ts[i].name = e->name;
        ts[i].ndim = e->ndim;
        for (int d = 0; d < 4; d++) ts[i].shape[d] = e->shape[d];
        ts[i].data = e->data;
        /* masked scores are -inf; safetensors files here hold finite values */
        for (size_t j = 0; j < e->numel; j++) {
            if (isfinite(e->data[j])) continue;
            if (isnan(e->data[j]) || e->data[j] > 0.0f) {
                st = hs_fail(err, HS_ERR_NUMERIC, "cache save: '%s' has a non-finite value at index %zu",
                             e->name, j);
                goto done;
            }
            if (copies[i] == NULL) {
                copies[i] = malloc(e->numel * sizeof(float));
                if (copies[i] == NULL) {
                    st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
                    goto done;
                }
                memcpy(copies[i], e->data, e->numel * sizeof(float));
                ts[i].data = copies[i];
            }
            copies[i][j] = -FLT_MAX;
        }
    }
    st = hs_safetensors_write(path, ts, c->n, meta_keys, meta_vals, n_meta, err);
done:
    if (copies)
        for (int i = 0; i < c->n; i++) free(copies[i]);
    free(copies);
    free(ts);
    return st;
}
