/*
 * discovery/circuit_run.c -- running a circuit on a prompt set
 * (experiments.h, "Running a circuit"): the clean prompts run on the engine
 * and every receiver whose circuit misses a sender reads that sender's
 * ablated output in place of its own (EAP-IG evaluate_graph, hannamw/eap-ig
 * src/eap/evaluate.py: input_v += sum over senders u not in C of
 * (a_u,ablated - a_u,this run)); exact edge patching is the same run with one
 * edge missing.
 *
 * Per chunk of HS_ENGINE_CHUNK prompts a job registers, for the circuit at
 * hand: on each sender point at or after the run's first layer a hook that
 * stores diff_u = a_u,abl - a_u,run (senders before it take their clean
 * values from the cache: the layers before it are the clean run's), and on
 * each receiver point a hook that adds the sum of its missing senders'
 * diffs. Per-prompt metrics are stored by prompt and summed in prompt order.
 */
#include "discovery/discovery.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Circuits hs_circeval_metrics remembers (the faithfulness curves of both
 * selections share most of their circuits). */
enum { MEMO = 32 };

/* Where a sender's output for prompt row r, position p lies: base + r * row
 * + p * pos, d_model floats (base NULL: zero). */
typedef struct {
    const float *base;
    size_t row, pos;
} src_ref;

struct hs_circeval {
    const hs_model *m;
    const hs_graph *g;
    hs_metric_kind metric;
    hs_ablate_method abl;
    int n, t, V, D, n_send;
    int *tok;            /* (n, t) clean tokens */
    const int *answer, *wrong, *pos; /* (n) borrowed from the prompts; wrong = answer without one */
    hs_engine e;
    hs_cache own_clean, own_abl; /* the runs' caches when ce ran them (hs_circeval_create) */
    const hs_cache *clean; /* n rows: every layer's resid_pre, hook_result, hook_mlp_out */
    const hs_cache *ablc;  /* resample: n rows of the corrupted run; mean: batch 1; own_* or the caller's */
    src_ref *sclean, *sabl; /* (n_send) */
    int *recv_of;        /* (n_nodes, 3): receiver of a node's q/k/v (or whole at [0]) */
    float *ref;          /* (n, V) the clean logits at each prompt's position */
    float **diff, **upd; /* [workers] (n_send, CHUNK, t, D) and (CHUNK, t, D) */
    double **mscr;       /* [workers] (2 V) */
    double m_full, m_empty;
    long forwards;
    unsigned char *memo;  /* (MEMO, n_edges) the last circuits hs_circeval_metrics ran, a ring */
    double memo_m[MEMO];  /* their metrics */
    int n_memo, memo_next;
};

/* One circuit: mask [n_edges] (1 = in), or mask NULL = every edge but
 * `missing` (-1: none). from_cache: every sender's diff from the caches
 * (exact patching) instead of from the run. */
typedef struct {
    const unsigned char *mask;
    long missing;
    int from_cache, store_ref;
    double *rowm; /* (n) */
} circ_spec;

enum { CAP_INPUT, CAP_RESULT, CAP_MLP, RECV_Q, RECV_K, RECV_V, RECV_MLP, RECV_LOGITS };

struct chunk_job;
typedef struct {
    struct chunk_job *cj;
    int kind, layer;
} hook_ctx;

typedef struct chunk_job {
    hs_circeval *ce;
    const circ_spec *spec;
    int R0, b, start;
    unsigned char *need;     /* (n_send) */
    unsigned char *miss;     /* (n_receivers) a receiver missing a sender */
    int *cur, *last, n_last; /* (n_send) the missing senders of this receiver and of the last sum */
    float *diff, *upd;
    double *mscr;
    hook_ctx *hc;            /* (2 + 6 L) */
} chunk_job;

static int in_circ(const circ_spec *s, size_t e)
{
    return s->mask ? s->mask[e] != 0 : (long)e != s->missing;
}

/* The hook point's layer a receiver is read at (logits: the last block's resid_post). */
static int recv_layer(const hs_graph *g, int r)
{
    const int l = g->node_layer[g->recv_node[r]];
    return l < g->n_layers ? l : g->n_layers - 1;
}

/* The clamped prompt row of chunk row i (padded rows repeat the last one). */
static int chunk_row(const chunk_job *cj, int i)
{
    return cj->R0 + (i < cj->b ? i : cj->b - 1);
}

/* 8 floats at a time (GCC vector extensions; the baseline gets two SSE
 * operations per vector, AVX2 machines one: target_clones as model/'s
 * kernels). The same additions per element as one at a time: the same bits. */
typedef float cr_v8 __attribute__((vector_size(32)));
typedef int cr_v8i __attribute__((vector_size(32)));
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__) && !defined(HS_NO_CLONES)
#define CR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CR_CLONES
#endif

/* o[0..D) = (a ? a : 0) - x, 8 floats at a time: the same subtractions. */
CR_CLONES
static void diff_row(float *o, const float *a, const float *x, int D)
{
    int k = 0;
    for (; k + 8 <= D; k += 8) {
        cr_v8 va = {0}, vx;
        if (a) memcpy(&va, a + k, sizeof va);
        memcpy(&vx, x + k, sizeof vx);
        va -= vx;
        memcpy(o + k, &va, sizeof va);
    }
    for (; k < D; k++) o[k] = (a ? a[k] : 0.0f) - x[k];
}

/* diff_u (CHUNK, t, D) = a_u,abl - x, x the run's output of u (stride xs
 * floats between positions), or the clean cache's when x is NULL. */
static void fill_diff(chunk_job *cj, int u, const float *x, size_t xs)
{
    const hs_circeval *ce = cj->ce;
    const int t = ce->t, D = ce->D;
    float *d = cj->diff + (size_t)u * HS_ENGINE_CHUNK * t * D;
    const src_ref *a = &ce->sabl[u], *c = &ce->sclean[u];
    for (int i = 0; i < HS_ENGINE_CHUNK; i++) {
        const size_t r = (size_t)chunk_row(cj, i);
        for (int p = 0; p < t; p++) {
            const float *xa = a->base ? a->base + r * a->row + (size_t)p * a->pos : NULL;
            const float *xc = x ? x + ((size_t)i * t + p) * xs : c->base + r * c->row + (size_t)p * c->pos;
            diff_row(d + ((size_t)i * t + p) * D, xa, xc, D);
        }
    }
}

static int capture_hook(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name;
    const hook_ctx *h = ctx;
    chunk_job *cj = h->cj;
    const hs_graph *g = cj->ce->g;
    if (shape[0] != HS_ENGINE_CHUNK || shape[1] != cj->ce->t || shape[ndim - 1] != cj->ce->D) return -1;
    const size_t D = (size_t)cj->ce->D;
    if (h->kind == CAP_INPUT) {
        if (cj->need[0]) fill_diff(cj, 0, data, D);
    } else if (h->kind == CAP_MLP) {
        const int u = 1 + h->layer * (g->n_heads + 1) + g->n_heads;
        if (cj->need[u]) fill_diff(cj, u, data, D);
    } else {
        for (int hh = 0; hh < g->n_heads; hh++) {
            const int u = 1 + h->layer * (g->n_heads + g->has_mlp) + hh;
            if (cj->need[u]) fill_diff(cj, u, data + (size_t)hh * D, (size_t)g->n_heads * D);
        }
    }
    return 0;
}


/* Rows 0..rows-1 of x (stride xs floats) += u_i, u_i (D floats, in upd) the
 * sum of the n diffs cur[0..n) at row i (diff + cur[j] * one + i * D) in
 * sender order, or (same) upd's row as the last call left it; an exact 0 in
 * u leaves x as it was (a -0 stays -0). Returns 1 when any u was not 0. */
CR_CLONES
static int add_rows(float *x, size_t xs, float *upd, const float *diff, const int *cur, int n, int same,
                    size_t rows, size_t D, size_t one)
{
    cr_v8i any = {0};
    int changed = 0;
    const size_t D8 = D / 8 * 8;
    for (size_t i = 0; i < rows; i++) {
        float *u = upd + i * D;
        float *o = x + i * xs;
        /* the sum row by row (it stays in cache), in sender order as ever:
           the same float additions as summing whole diffs one after another */
        for (int j = 0; j < n && !same; j++) {
            const float *d = diff + (size_t)cur[j] * one + i * D;
            if (j == 0) {
                memcpy(u, d, D * sizeof(float));
                continue;
            }
            size_t k = 0;
            for (; k < D8; k += 8) {
                cr_v8 a, b;
                memcpy(&a, u + k, sizeof a);
                memcpy(&b, d + k, sizeof b);
                a += b;
                memcpy(u + k, &a, sizeof a);
            }
            for (; k < D; k++) u[k] += d[k];
        }
        size_t k = 0;
        for (; k < D8; k += 8) {
            cr_v8 a, b;
            memcpy(&a, o + k, sizeof a);
            memcpy(&b, u + k, sizeof b);
            const cr_v8i nz = b != 0.0f;
            const cr_v8 y = a + b;
            a = (cr_v8)(((cr_v8i)y & nz) | ((cr_v8i)a & ~nz));
            any |= nz;
            memcpy(o + k, &a, sizeof a);
        }
        for (; k < D; k++) {
            const float y = o[k] + u[k];
            o[k] = u[k] != 0.0f ? y : o[k];
            changed |= u[k] != 0.0f;
        }
    }
    for (int k = 0; k < 8; k++) changed |= any[k] != 0;
    return changed;
}

/* x (CHUNK*t rows, stride xs floats) += the sum of receiver r's missing
 * senders' diffs; returns 1 when anything changed. The sum is kept for the
 * next receiver missing the same senders (e.g. every input of a layer in
 * the empty circuit): the diffs it adds do not change within a run. */
static int add_missing(chunk_job *cj, int r, float *x, size_t xs)
{
    const hs_circeval *ce = cj->ce;
    const hs_graph *g = ce->g;
    const size_t D = (size_t)ce->D, rows = (size_t)HS_ENGINE_CHUNK * ce->t, one = rows * D;
    int n = 0, same;
    for (size_t e = g->recv_first_edge[r]; e < g->recv_first_edge[r] + (size_t)g->recv_n_edges[r]; e++)
        if (!in_circ(cj->spec, e)) cj->cur[n++] = g->edge_src[e];
    same = n == cj->n_last && memcmp(cj->cur, cj->last, (size_t)n * sizeof *cj->cur) == 0;
    memcpy(cj->last, cj->cur, (size_t)n * sizeof *cj->cur);
    cj->n_last = n;
    return add_rows(x, xs, cj->upd, cj->diff, cj->cur, n, same, rows, D, one);
}

static int receiver_hook(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name;
    const hook_ctx *h = ctx;
    chunk_job *cj = h->cj;
    const hs_circeval *ce = cj->ce;
    const hs_graph *g = ce->g;
    if (shape[0] != HS_ENGINE_CHUNK || shape[1] != ce->t || shape[ndim - 1] != ce->D) return -1;
    const size_t D = (size_t)ce->D;
    int changed = 0;
    if (h->kind == RECV_LOGITS) {
        const int r = g->n_receivers - 1;
        if (cj->miss[r]) changed = add_missing(cj, r, data, D);
    } else if (h->kind == RECV_MLP) {
        const int r = ce->recv_of[(1 + h->layer * (g->n_heads + 1) + g->n_heads) * 3];
        if (cj->miss[r]) changed = add_missing(cj, r, data, D);
    } else {
        const int x = h->kind - RECV_Q, H = g->n_heads;
        for (int hh = 0; hh < H; hh++) {
            const int r = ce->recv_of[(1 + h->layer * (H + g->has_mlp) + hh) * 3 + x];
            if (cj->miss[r]) changed |= add_missing(cj, r, data + (size_t)hh * D, (size_t)H * D);
        }
    }
    return changed;
}

/* The senders the circuit misses somewhere, the receivers missing one, and
 * the first layer a receiver missing one is read at; when none (the full
 * circuit: the clean run) the last layer, from the clean cache's residual
 * (hs_engine_sweep_from: the same bits as the run from layer 0). 0 without
 * a tail model (an embedding norm). */
static void plan(chunk_job *cj)
{
    const hs_graph *g = cj->ce->g;
    memset(cj->need, 0, (size_t)cj->ce->n_send);
    memset(cj->miss, 0, (size_t)g->n_receivers);
    cj->start = g->n_layers;
    for (size_t e = 0; e < g->n_edges; e++) {
        if (in_circ(cj->spec, e)) continue;
        const int r = g->edge_dst[e];
        cj->need[g->edge_src[e]] = 1;
        cj->miss[r] = 1;
        if (recv_layer(g, r) < cj->start) cj->start = recv_layer(g, r);
    }
    if (cj->start == g->n_layers) cj->start = g->n_layers - 1;
    if (cj->ce->e.tail == NULL) cj->start = 0;
}

static hs_status add_hook(hs_engine_worker *w, chunk_job *cj, int *k, int kind, int layer, const char *fmt)
{
    char name[64];
    snprintf(name, sizeof name, fmt, layer);
    hook_ctx *h = &cj->hc[(*k)++];
    *h = (hook_ctx){cj, kind, layer};
    return hs_hooks_add_trusted(w->hk, name, kind <= CAP_MLP ? capture_hook : receiver_hook, h, NULL, NULL, &w->err);
}

/* Registers the chunk's hooks (hs_engine_hooks_fn). */
static hs_status chunk_hooks(void *arg, hs_engine_worker *w, int chunk, int r0, int b)
{
    (void)chunk, (void)r0, (void)b;
    chunk_job *cj = arg;
    const hs_graph *g = cj->ce->g;
    const int L = g->n_layers, H = g->n_heads, live_from = cj->spec->from_cache ? L + 1 : cj->start;
    const int softmax = cj->ce->m->cfg.attn == HS_ATTN_SOFTMAX;
    /* senders before the run's first layer (or all, from_cache): clean values */
    for (int u = 0; u < cj->ce->n_send; u++) {
        const int live = u == 0 ? live_from == 0 : g->node_layer[u] >= live_from;
        if (cj->need[u] && !live) fill_diff(cj, u, NULL, 0);
    }
    int k = 0;
    hs_status st = HS_OK;
    if (live_from == 0 && cj->need[0]) st = add_hook(w, cj, &k, CAP_INPUT, 0, "blocks.%d.hook_resid_pre");
    for (int l = cj->start; l < L && st == HS_OK; l++) {
        int heads = 0, mlp = 0, rq[3] = {0, 0, 0};
        for (int h = 0; h < H; h++) {
            const int u = 1 + l * (H + g->has_mlp) + h;
            heads |= l >= live_from && cj->need[u];
            for (int x = 0; x < 3; x++) rq[x] |= cj->miss[cj->ce->recv_of[u * 3 + x]];
        }
        if (g->has_mlp) mlp = l >= live_from && cj->need[1 + l * (H + 1) + H];
        static const char *const qkv[3] = {"blocks.%d.hook_q_input", "blocks.%d.hook_k_input",
                                           "blocks.%d.hook_v_input"};
        for (int x = softmax ? 0 : 2; x < 3 && st == HS_OK; x++) /* uniform attention: no q, k */
            if (rq[x]) st = add_hook(w, cj, &k, RECV_Q + x, l, qkv[x]);
        if (st == HS_OK && heads) st = add_hook(w, cj, &k, CAP_RESULT, l, "blocks.%d.attn.hook_result");
        if (st == HS_OK && g->has_mlp && cj->miss[cj->ce->recv_of[(1 + l * (H + 1) + H) * 3]])
            st = add_hook(w, cj, &k, RECV_MLP, l, "blocks.%d.hook_mlp_in");
        if (st == HS_OK && mlp) st = add_hook(w, cj, &k, CAP_MLP, l, "blocks.%d.hook_mlp_out");
    }
    if (st == HS_OK && cj->miss[g->n_receivers - 1])
        st = add_hook(w, cj, &k, RECV_LOGITS, L - 1, "blocks.%d.hook_resid_post");
    return st;
}

/* Reads the chunk's metrics (hs_engine_rows_fn). */
static void chunk_rows(void *arg, hs_engine_worker *w, const float *logits, int r0, int b)
{
    (void)w, (void)r0;
    chunk_job *cj = arg;
    hs_circeval *ce = cj->ce;
    for (int i = 0; i < b; i++) {
        const int r = cj->R0 + i;
        const float *z = logits + ((size_t)i * ce->t + ce->pos[r]) * ce->V;
        float *ref = ce->ref + (size_t)r * ce->V;
        if (cj->spec->store_ref) memcpy(ref, z, (size_t)ce->V * sizeof(float));
        cj->spec->rowm[r] = hs_metric_value(ce->metric, z, ce->V, ce->answer[r], ce->wrong[r], ref, cj->mscr);
    }
}

typedef struct {
    hs_circeval *ce;
    const circ_spec *specs;
    int n_chunks;
} batch_ctx;

static hs_status chunk_job_run(hs_engine *e, hs_engine_worker *w, int j, void *arg)
{
    const batch_ctx *bc = arg;
    hs_circeval *ce = bc->ce;
    const int ch = j % bc->n_chunks, R0 = ch * HS_ENGINE_CHUNK;
    chunk_job cj = {ce, &bc->specs[j / bc->n_chunks], R0, ce->n - R0 < HS_ENGINE_CHUNK ? ce->n - R0 : HS_ENGINE_CHUNK,
                    0, NULL, NULL, NULL, NULL, -1, ce->diff[w->index], ce->upd[w->index], ce->mscr[w->index], NULL};
    cj.need = malloc((size_t)ce->n_send + (size_t)ce->g->n_receivers);
    cj.cur = malloc((size_t)ce->n_send * 2 * sizeof *cj.cur);
    cj.hc = malloc((size_t)(2 + 6 * ce->g->n_layers) * sizeof *cj.hc);
    hs_status st = HS_OK;
    if (cj.need == NULL || cj.hc == NULL || cj.cur == NULL) st = hs_fail(&w->err, HS_ERR_NOMEM, "out of memory");
    hs_cache view = {0};
    if (st == HS_OK) {
        cj.miss = cj.need + ce->n_send;
        cj.last = cj.cur + ce->n_send;
        plan(&cj);
        st = hs_cache_view_rows(&view, ce->clean, R0, cj.b, &w->err);
    }
    if (st == HS_OK)
        st = hs_engine_sweep_from(e, w, ce->tok + (size_t)R0 * ce->t, cj.b, cj.start, &view, chunk_hooks, chunk_rows, &cj);
    hs_cache_free(&view);
    free(cj.need);
    free(cj.hc);
    free(cj.cur);
    return st;
}

/* Runs the circuits specs[0..n) (every chunk a job), each spec's per-prompt
 * metrics into its rowm. */
static hs_status run_specs(hs_circeval *ce, const circ_spec *specs, int n, hs_error *err)
{
    const int nch = hs_engine_chunks(ce->n);
    if ((long)n * nch > 0x7fffffffL) return hs_fail(err, HS_ERR_INPUT, "circuit run: too many circuits at once");
    batch_ctx bc = {ce, specs, nch};
    hs_status st = hs_engine_for(&ce->e, n * nch, chunk_job_run, &bc, err);
    if (st == HS_OK) ce->forwards += (long)n * nch;
    return st;
}

static double row_mean(const double *v, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++) s += v[i];
    return s / n;
}

/* A sender's output in a cache entry of batch `rows`: [rows, T, D] or
 * hook_result [rows, T, H, D] (head h). */
static src_ref src_of(const hs_cache_entry *en, int head, int H, int D, int t)
{
    const size_t inner = head >= 0 ? (size_t)H * D : (size_t)D;
    src_ref s = {en->data + (head >= 0 ? (size_t)head * D : 0), en->shape[0] == 1 ? 0 : (size_t)t * inner, inner};
    return s;
}

static hs_status sender_refs(hs_circeval *ce, const hs_cache *c, src_ref *out, hs_error *err)
{
    const hs_graph *g = ce->g;
    for (int u = 0; u < ce->n_send; u++) {
        const int l = g->node_layer[u];
        const hs_cache_entry *en =
            g->node_kind[u] == HS_NODE_INPUT ? hs_cache_get(c, "blocks.0.hook_resid_pre")
            : g->node_kind[u] == HS_NODE_HEAD ? hs_cache_getf(c, "blocks.%d.attn.hook_result", l)
                                              : hs_cache_getf(c, "blocks.%d.hook_mlp_out", l);
        if (en == NULL) return hs_fail(err, HS_ERR_INPUT, "circuit run: a reference run lacks a sender's output");
        out[u] = src_of(en, g->node_kind[u] == HS_NODE_HEAD ? g->node_head[u] : -1, g->n_heads, ce->D, ce->t);
    }
    return HS_OK;
}

/* The clean run's points (job 0) and, for resample, the corrupted run's (job 1). */
typedef struct {
    hs_circeval *ce;
    const int *corr;
} cache_ctx;

static hs_status cache_job(hs_engine *e, hs_engine_worker *w, int j, void *arg)
{
    const cache_ctx *cc = arg;
    static const char *const fc[] = {"blocks.*.hook_resid_pre", "blocks.*.attn.hook_result", "?blocks.*.hook_mlp_out"};
    static const char *const fa[] = {"blocks.0.hook_resid_pre", "blocks.*.attn.hook_result", "?blocks.*.hook_mlp_out"};
    if (j == 0) return hs_engine_cache(e, w, cc->ce->tok, cc->ce->n, fc, 3, NULL, &cc->ce->own_clean);
    return hs_engine_cache(e, w, cc->corr, cc->ce->n, fa, 3, NULL, &cc->ce->own_abl);
}

static hs_status check_set(const hs_model *m, const hs_prompts *p, const hs_graph *g, hs_metric_kind metric,
                           hs_ablate_method abl, hs_error *err)
{
    if (p->n < 1) return hs_fail(err, HS_ERR_INPUT, "circuit run: the prompt set is empty");
    if (g->n_layers != m->cfg.n_layers || g->n_heads != m->cfg.n_heads || g->has_mlp != (m->cfg.d_mlp > 0))
        return hs_fail(err, HS_ERR_INPUT, "circuit run: the graph is not this model's");
    if (hs_kv_heads(&m->cfg) != m->cfg.n_heads) /* per-head k/v receivers: run hs_model_ungrouped's view */
        return hs_fail(err, HS_ERR_INPUT, "circuit run: grouped-query attention (n_key_value_heads "
                       "%d of %d): the graph's per-head key and value receivers need the model "
                       "ungrouped (hs_model_ungrouped)", hs_kv_heads(&m->cfg), m->cfg.n_heads);
    if (abl == HS_ABLATE_RESAMPLE && p->corr == NULL)
        return hs_fail(err, HS_ERR_INPUT, "resample ablation needs each prompt's \"corrupted\" partner; "
                                          "the set has none (use --ablation mean or zero)");
    if (metric != HS_METRIC_KL && p->wrong == NULL)
        return hs_fail(err, HS_ERR_INPUT, "the %s metric needs \"wrong\" on every prompt; the set has none "
                                          "(use --metric kl)", hs_metric_names[metric]);
    for (int i = 0; i < p->n; i++)
        if (p->answer[i] < 0) return hs_fail(err, HS_ERR_INPUT, "line %d has no \"answer\"", p->line[i]);
    return HS_OK;
}

static hs_status alloc_scratch(hs_circeval *ce, hs_error *err)
{
    const int nw = ce->e.n_workers;
    const size_t one = (size_t)HS_ENGINE_CHUNK * ce->t * ce->D;
    ce->diff = calloc((size_t)nw, sizeof *ce->diff);
    ce->upd = calloc((size_t)nw, sizeof *ce->upd);
    ce->mscr = calloc((size_t)nw, sizeof *ce->mscr);
    ce->ref = malloc((size_t)ce->n * ce->V * sizeof(float));
    ce->sclean = malloc((size_t)ce->n_send * sizeof *ce->sclean);
    ce->sabl = calloc((size_t)ce->n_send, sizeof *ce->sabl);
    ce->recv_of = malloc((size_t)ce->g->n_nodes * 3 * sizeof *ce->recv_of);
    if (!ce->diff || !ce->upd || !ce->mscr || !ce->ref || !ce->sclean || !ce->sabl || !ce->recv_of)
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int i = 0; i < nw; i++) {
        ce->diff[i] = malloc((size_t)ce->n_send * one * sizeof(float));
        ce->upd[i] = malloc(one * sizeof(float));
        ce->mscr[i] = malloc((size_t)2 * ce->V * sizeof(double));
        if (!ce->diff[i] || !ce->upd[i] || !ce->mscr[i]) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    for (int r = 0; r < ce->g->n_receivers; r++) {
        const int x = ce->g->recv_kind[r] == HS_RECV_WHOLE ? 0 : (int)ce->g->recv_kind[r];
        ce->recv_of[ce->g->recv_node[r] * 3 + x] = r;
    }
    return HS_OK;
}

/* 1 when name ends in suffix. */
static int ends_in(const char *name, const char *suffix)
{
    const size_t n = strlen(name), k = strlen(suffix);
    return n >= k && strcmp(name + n - k, suffix) == 0;
}

/* A given cache's entries the runs read (resid_pre, hook_result,
 * hook_mlp_out) hold n prompts of t positions. */
static hs_status check_given(const hs_circeval *ce, const hs_cache *c, const char *what, hs_error *err)
{
    for (int i = 0; i < c->n; i++) {
        const hs_cache_entry *en = &c->e[i];
        if (!ends_in(en->name, ".hook_resid_pre") && !ends_in(en->name, ".attn.hook_result") &&
            !ends_in(en->name, ".hook_mlp_out"))
            continue;
        if (en->ndim < 3 || en->shape[0] != ce->n || en->shape[1] != ce->t)
            return hs_fail(err, HS_ERR_INPUT, "circuit run: the %s run's cache holds %s not of %d prompts of %d "
                           "positions", what, en->name, ce->n, ce->t);
    }
    return HS_OK;
}

/* The caches (run here unless given: clean, abl), the sender tables, m(M)
 * (with the clean logits) and m(empty). */
static hs_status prepare(hs_circeval *ce, const hs_prompts *p, const hs_cache *clean, const hs_cache *abl,
                         hs_error *err)
{
    cache_ctx cc = {ce, p->corr};
    hs_status st = HS_OK;
    if (clean) {
        ce->clean = clean;
        ce->ablc = abl ? abl : &ce->own_abl;
        st = check_given(ce, clean, "clean", err);
        if (st == HS_OK && abl) st = check_given(ce, abl, "corrupted", err);
    } else {
        ce->clean = &ce->own_clean;
        ce->ablc = &ce->own_abl;
        st = hs_engine_for(&ce->e, ce->abl == HS_ABLATE_RESAMPLE ? 2 : 1, cache_job, &cc, err);
    }
    if (st == HS_OK && ce->abl == HS_ABLATE_MEAN) {
        static const char *const fa[] = {"blocks.0.hook_resid_pre", "blocks.*.attn.hook_result", "?blocks.*.hook_mlp_out"};
        st = hs_engine_means(&ce->e, ce->tok, (size_t)ce->n, fa, 3, &ce->own_abl, err);
    }
    if (st == HS_OK) st = sender_refs(ce, ce->clean, ce->sclean, err);
    if (st == HS_OK && ce->abl != HS_ABLATE_ZERO) st = sender_refs(ce, ce->ablc, ce->sabl, err);
    double *rowm = st == HS_OK ? malloc((size_t)ce->n * 2 * sizeof(double)) : NULL;
    unsigned char *none = st == HS_OK ? calloc(ce->g->n_edges ? ce->g->n_edges : 1, 1) : NULL;
    if (st == HS_OK && (!rowm || !none)) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (st == HS_OK) { /* the full circuit first: it stores the clean logits kl reads */
        circ_spec full = {NULL, -1, 0, 1, rowm};
        st = run_specs(ce, &full, 1, err);
    }
    if (st == HS_OK) {
        circ_spec empty = {none, -1, 0, 0, rowm + ce->n};
        st = run_specs(ce, &empty, 1, err);
    }
    if (st == HS_OK) {
        ce->m_full = row_mean(rowm, ce->n);
        ce->m_empty = row_mean(rowm + ce->n, ce->n);
        for (int i = 0; i < 2 * ce->n && st == HS_OK; i++)
            if (!isfinite(rowm[i]))
                st = hs_fail(err, HS_ERR_NUMERIC, "the %s metric of prompt line %d is not finite in the %s run",
                             hs_metric_names[ce->metric], p->line[i % ce->n], i < ce->n ? "clean" : "ablated");
    }
    free(rowm);
    free(none);
    return st;
}

static hs_status create(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_graph *g,
                        hs_metric_kind metric, hs_ablate_method ablation, const hs_cache *clean,
                        const hs_cache *corr, hs_circeval **out, hs_error *err)
{
    *out = NULL;
    hs_status st = check_set(m, p, g, metric, ablation, err);
    if (st != HS_OK) return st;
    if (clean && (ablation == HS_ABLATE_RESAMPLE) != (corr != NULL))
        return hs_fail(err, HS_ERR_INPUT, "circuit run: the corrupted run's cache is given with resample "
                       "ablation, and only then");
    hs_circeval *ce = calloc(1, sizeof *ce);
    if (ce == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    ce->m = m;
    ce->g = g;
    ce->metric = metric;
    ce->abl = ablation;
    ce->n = p->n;
    ce->t = p->t;
    ce->V = m->cfg.d_vocab;
    ce->D = m->cfg.d_model;
    ce->n_send = g->n_nodes - 1;
    ce->answer = p->answer;
    ce->wrong = p->wrong ? p->wrong : p->answer;
    ce->pos = p->pos;
    ce->tok = malloc((size_t)p->n * p->t * sizeof(int));
    if (ce->tok == NULL) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    else memcpy(ce->tok, p->clean, (size_t)p->n * p->t * sizeof(int));
    if (st == HS_OK) st = hs_engine_init(&ce->e, m, pool, p->t, err);
    ce->e.whole_chunks = 1; /* the hooks' scratch is (HS_ENGINE_CHUNK, t, D) per chunk */
    /* every prompt read at one position (circuit's 14): the runs compute the
       logits there alone (and the last block there, when no hook reads it) */
    int one_pos = st == HS_OK;
    for (int i = 1; i < p->n && one_pos; i++) one_pos = p->pos[i] == p->pos[0];
    if (one_pos) ce->e.read_pos = p->pos[0];
    ce->e.progress = "circuits evaluated (circuits x chunks of 32 prompts)"; /* a batch a phase */
    if (st == HS_OK) st = alloc_scratch(ce, err);
    if (st == HS_OK) st = prepare(ce, p, clean, corr, err);
    if (st != HS_OK) {
        hs_circeval_destroy(ce);
        return st;
    }
    ce->forwards = 0;
    *out = ce;
    return HS_OK;
}

hs_status hs_circeval_create(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_graph *g,
                             hs_metric_kind metric, hs_ablate_method ablation, hs_circeval **out, hs_error *err)
{
    return create(m, pool, p, g, metric, ablation, NULL, NULL, out, err);
}

hs_status hs_circeval_create_cached(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_graph *g,
                                    hs_metric_kind metric, hs_ablate_method ablation, const hs_cache *clean,
                                    const hs_cache *corr, hs_circeval **out, hs_error *err)
{
    if (clean == NULL) {
        *out = NULL;
        return hs_fail(err, HS_ERR_INPUT, "circuit run: no clean run's cache given");
    }
    return create(m, pool, p, g, metric, ablation, clean, corr, out, err);
}

void hs_circeval_destroy(hs_circeval *ce)
{
    if (ce == NULL) return;
    for (int i = 0; i < ce->e.n_workers; i++) {
        if (ce->diff) free(ce->diff[i]);
        if (ce->upd) free(ce->upd[i]);
        if (ce->mscr) free(ce->mscr[i]);
    }
    free(ce->diff);
    free(ce->upd);
    free(ce->mscr);
    hs_engine_free(&ce->e);
    hs_cache_free(&ce->own_clean);
    hs_cache_free(&ce->own_abl);
    free(ce->sclean);
    free(ce->sabl);
    free(ce->recv_of);
    free(ce->ref);
    free(ce->tok);
    free(ce->memo);
    free(ce);
}

double hs_circeval_full(const hs_circeval *ce) { return ce->m_full; }
double hs_circeval_empty(const hs_circeval *ce) { return ce->m_empty; }
long hs_circeval_forwards(const hs_circeval *ce) { return ce->forwards; }
const hs_graph *hs_circeval_graph(const hs_circeval *ce) { return ce->g; }
hs_metric_kind hs_circeval_metric_kind(const hs_circeval *ce) { return ce->metric; }

/* Runs circuits in groups whose per-prompt metrics fit in a bounded buffer. */
static hs_status run_group(hs_circeval *ce, int n, const unsigned char *const *masks, long first_missing,
                           int from_cache, double *metric, hs_error *err)
{
    const int group = 256;
    double *rowm = malloc((size_t)(n < group ? n : group) * ce->n * sizeof(double));
    circ_spec *sp = malloc((size_t)(n < group ? n : group) * sizeof *sp);
    hs_status st = rowm && sp ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int k0 = 0; k0 < n && st == HS_OK; k0 += group) {
        const int k1 = n - k0 < group ? n : k0 + group;
        for (int k = k0; k < k1; k++)
            sp[k - k0] = (circ_spec){masks ? masks[k] : NULL, masks ? -1 : first_missing + k, from_cache, 0,
                                     rowm + (size_t)(k - k0) * ce->n};
        st = run_specs(ce, sp, k1 - k0, err);
        for (int k = k0; k < k1 && st == HS_OK; k++) metric[k] = row_mean(sp[k - k0].rowm, ce->n);
    }
    free(rowm);
    free(sp);
    return st;
}

/* The metric of circuit c when it is known without a run: the empty
 * circuit's m(empty) and the whole graph's m(M) (runs of the same code:
 * prepare), or a circuit run before (memo); else 0. */
static int known(const hs_circeval *ce, const unsigned char *c, double *m)
{
    const size_t E = ce->g->n_edges;
    size_t on = 0;
    for (size_t e = 0; e < E; e++) on += c[e] != 0;
    if (on == 0 || on == E) {
        *m = on == 0 ? ce->m_empty : ce->m_full;
        return 1;
    }
    for (int i = 0; i < ce->n_memo; i++) {
        const unsigned char *x = ce->memo + (size_t)i * E;
        size_t e = 0;
        while (e < E && (x[e] != 0) == (c[e] != 0)) e++;
        if (e == E) {
            *m = ce->memo_m[i];
            return 1;
        }
    }
    return 0;
}

hs_status hs_circeval_metrics(hs_circeval *ce, int n_circuits, const unsigned char *const *in_circuit,
                              double *metric, hs_error *err)
{
    if (n_circuits < 1 || in_circuit == NULL) return hs_fail(err, HS_ERR_INPUT, "circuit run: no circuit given");
    const size_t E = ce->g->n_edges;
    if (ce->memo == NULL && (ce->memo = malloc(MEMO * (E ? E : 1))) == NULL)
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    /* each circuit not known yet run once (the same circuit twice in the
       call: once); its runs are the same code and rows as any other's, so a
       known circuit's metric is the one its run would give, bit for bit */
    const unsigned char **todo = malloc((size_t)n_circuits * sizeof *todo);
    int *slot = malloc((size_t)n_circuits * sizeof *slot);
    double *mt = malloc((size_t)n_circuits * sizeof *mt);
    hs_status st = todo && slot && mt ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    int n_todo = 0;
    for (int k = 0; k < n_circuits && st == HS_OK; k++) {
        slot[k] = -1;
        if (known(ce, in_circuit[k], &metric[k])) continue;
        for (int i = 0; i < n_todo && slot[k] < 0; i++)
            if (memcmp(todo[i], in_circuit[k], E) == 0) slot[k] = i;
        if (slot[k] < 0) {
            slot[k] = n_todo;
            todo[n_todo++] = in_circuit[k];
        }
    }
    if (st == HS_OK && n_todo > 0) st = run_group(ce, n_todo, todo, -1, 0, mt, err);
    for (int i = 0; i < n_todo && st == HS_OK; i++) {
        unsigned char *x = ce->memo + (size_t)ce->memo_next * E;
        for (size_t e = 0; e < E; e++) x[e] = todo[i][e] != 0;
        ce->memo_m[ce->memo_next] = mt[i];
        ce->memo_next = (ce->memo_next + 1) % MEMO;
        if (ce->n_memo < MEMO) ce->n_memo++;
    }
    for (int k = 0; k < n_circuits && st == HS_OK; k++)
        if (slot[k] >= 0) metric[k] = mt[slot[k]];
    free(todo);
    free(slot);
    free(mt);
    return st;
}

hs_status hs_edge_patch_scores(hs_circeval *ce, double *scores, hs_error *err)
{
    const size_t E = ce->g->n_edges;
    if (E > 0x7fffffffUL) return hs_fail(err, HS_ERR_INPUT, "exact patching: too many edges");
    hs_status st = run_group(ce, (int)E, NULL, 0, 1, scores, err);
    for (size_t e = 0; e < E && st == HS_OK; e++) scores[e] -= ce->m_full;
    return st;
}

double hs_faithfulness(double m_c, double m_full, double m_empty)
{
    if (m_full == m_empty) return NAN;
    const double f = (m_c - m_empty) / (m_full - m_empty);
    return f == 0.0 ? 0.0 : f; /* +0, not -0 (m(M) < m(empty), as with kl) */
}
