/*
 * discovery/eap.c -- edge attribution patching (EAP) and EAP with integrated
 * gradients on the inputs (EAP-IG) over a prompt set, on the experiment
 * engine (discovery.h, "Edge attribution"), with experiments' per-worker
 * backward resources (hs_attr_worker).
 *
 * Per chunk of prompts, on one worker: the senders' outputs of the two runs
 * are captured by a forward observer straight into delta (chunk, t*D,
 * senders) as corrupted - clean; the backward's observer gets the gradient at
 * each receiver point (a layer's q, k or v inputs, an MLP's input, the final
 * residual) and, for every prompt, multiplies the senders that point's
 * receivers read by it (hs_sgemm, [senders, t*D] x [t*D, receivers]),
 * adding the products to the chunk's edge sums in double. The chunks' sums
 * are added in chunk order, so scores do not depend on the thread count.
 */
#include "discovery/discovery.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* EAP, EAP-IG                                                               */

/* A gradient point: the receivers that read it, as columns. */
typedef struct {
    char name[64];  /* blocks.l.hook_{q,k,v}_input, blocks.l.hook_mlp_in, blocks.{L-1}.hook_resid_post */
    int heads;      /* 1: the gradient is [B,T,H,D], column h = head h; 0: [B,T,D], one column */
    int n_send;     /* the receivers read senders 0..n_send-1 (node order) */
    int *recv;      /* (heads ? H : 1) receiver of each column */
} eap_point;

/* Per worker. */
typedef struct {
    float *delta;          /* (HS_ENGINE_CHUNK, t*D, senders) ablated - clean */
    float *gt;             /* (t*D, H) one prompt's gradient, columns = heads */
    float *prod;           /* (senders, H) one product */
    float *e_clean, *e_corr; /* (HS_ENGINE_CHUNK, t, D) hook_embed of both runs (EAP-IG) */
    float *ref;            /* (HS_ENGINE_CHUNK, V) the clean logits at each row's position */
} eap_worker;

typedef struct {
    const hs_model *m;
    const hs_graph *g;
    hs_metric_kind metric;
    hs_ablate_method abl;
    int ig, steps;                 /* EAP-IG: steps >= 1; EAP: ig 0, steps 1 */
    int k0;                        /* EAP-IG's first k: 0 (alphas k/m, k = 0..m-1) or 1 (k = 1..m) */
    float *abl_vals;               /* mean: (t*D, senders) each sender's position-wise mean; zero, resample: NULL */
    float *emb_mean;               /* mean: (t*D) hook_embed's position-wise mean (EAP-IG's ablated input) */
    int n_real, t;
    const int *clean, *corr, *answer, *wrong, *pos; /* padded to whole chunks */
    const hs_cache *given;         /* the clean run's cache (hs_eap_scores_cached), or NULL */
    int n_send;                    /* senders: every node but logits */
    int *first_node;               /* (L) node of a{l}.h0 */
    int n_points;
    eap_point *pts;
    double *acc;                   /* (chunks, n_edges) each chunk's sums */
    hs_attr_worker *aw;
    eap_worker *ew;
} eap_ctx;

/* One chunk's run on one worker: what the observers read. */
typedef struct {
    eap_ctx *c;
    eap_worker *w;
    double *acc;                   /* (n_edges) the chunk's sums */
    int b;                         /* real rows */
    int subtract;                  /* capture: 0 delta = value, 1 delta -= value, 2 delta = value - delta */
    float *emb;                    /* capture hook_embed here (NULL: not) */
    float alpha;                   /* interpolation of the input (interp_fn) */
} eap_run;

/* The sender slot of a captured point: its first node and how many heads
 * ([B,T,H,D]) or 1 ([B,T,D]); -1 for a point that is not a sender. */
static int sender_of(const eap_ctx *c, const char *name, int *slices)
{
    int l = -1, n = 0;
    char rest[48];
    *slices = 1;
    if (strcmp(name, "blocks.0.hook_resid_pre") == 0) return 0;
    if (sscanf(name, "blocks.%d.%47s%n", &l, rest, &n) != 2 || l < 0 || l >= c->g->n_layers) return -1;
    if (strcmp(rest, "attn.hook_result") == 0) {
        *slices = c->g->n_heads;
        return c->first_node[l];
    }
    if (strcmp(rest, "hook_mlp_out") == 0 && c->g->has_mlp) return c->first_node[l] + c->g->n_heads;
    return -1;
}

static int cap_wants(const char *name, void *ctx)
{
    const eap_run *r = ctx;
    int s;
    return (r->emb && strcmp(name, "hook_embed") == 0) || sender_of(r->c, name, &s) >= 0;
}

static int cap_fn(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)shape;
    (void)ndim;
    const eap_run *r = ctx;
    const eap_ctx *c = r->c;
    const int t = c->t, D = c->m->cfg.d_model, TD = t * D;
    if (r->emb && strcmp(name, "hook_embed") == 0) {
        memcpy(r->emb, data, (size_t)HS_ENGINE_CHUNK * TD * sizeof(float));
        return 0;
    }
    int S;
    const int u0 = sender_of(c, name, &S), ns = c->n_send;
    for (int b = 0; b < r->b; b++)
        for (int p = 0; p < t; p++)
            for (int s = 0; s < S; s++) {
                float *d = r->w->delta + ((size_t)b * TD + (size_t)p * D) * ns + u0 + s;
                const float *v = data + (((size_t)b * t + p) * S + s) * D;
                if (r->subtract == 0)
                    for (int i = 0; i < D; i++) d[(size_t)i * ns] = v[i];
                else if (r->subtract == 1)
                    for (int i = 0; i < D; i++) d[(size_t)i * ns] -= v[i];
                else
                    for (int i = 0; i < D; i++) d[(size_t)i * ns] = v[i] - d[(size_t)i * ns];
            }
    return 0;
}

static int interp_wants(const char *name, void *ctx)
{
    const eap_run *r = ctx;
    return strcmp(name, "hook_embed") == 0 ||
           (r->c->abl == HS_ABLATE_ZERO && strcmp(name, "hook_pos_embed") == 0);
}

/* The input x0 = hook_embed (+ hook_pos_embed) from its ablated value
 * towards the clean run's: resample hook_embed = e_corr + alpha (e_clean -
 * e_corr) (EAP-IG's input node); zero hook_embed and hook_pos_embed times
 * alpha; mean hook_embed = e_mean + alpha (e_clean - e_mean) (the positions
 * are every prompt's: their mean is themselves). The forward runs on the
 * clean tokens, so data holds the clean run's values. */
static int interp_fn(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name;
    (void)shape;
    (void)ndim;
    const eap_run *r = ctx;
    const eap_ctx *c = r->c;
    const size_t TD = (size_t)c->t * c->m->cfg.d_model, n = (size_t)HS_ENGINE_CHUNK * TD;
    const float a = r->alpha;
    if (c->abl == HS_ABLATE_RESAMPLE) {
        const float *ec = r->w->e_clean, *er = r->w->e_corr;
        for (size_t i = 0; i < n; i++) data[i] = er[i] + a * (ec[i] - er[i]);
    } else if (c->abl == HS_ABLATE_ZERO) {
        for (size_t i = 0; i < n; i++) data[i] = a * data[i];
    } else {
        for (size_t i = 0; i < n; i++) data[i] = c->emb_mean[i % TD] + a * (data[i] - c->emb_mean[i % TD]);
    }
    return 1;
}

/* delta's real rows <- the senders' ablated values (mean: abl_vals; zero: 0). */
static void fill_ablated(const eap_ctx *c, const eap_run *r)
{
    const size_t row = (size_t)c->t * c->m->cfg.d_model * c->n_send;
    for (int b = 0; b < r->b; b++) {
        if (c->abl_vals) memcpy(r->w->delta + (size_t)b * row, c->abl_vals, row * sizeof(float));
        else memset(r->w->delta + (size_t)b * row, 0, row * sizeof(float));
    }
}

static const eap_point *point_of(const eap_ctx *c, const char *name)
{
    for (int i = 0; i < c->n_points; i++)
        if (strcmp(c->pts[i].name, name) == 0) return &c->pts[i];
    return NULL;
}

static int grad_wants(const char *name, void *ctx)
{
    const eap_run *r = ctx;
    return point_of(r->c, name) != NULL;
}

/* The products of a receiver point's gradient data with the senders it
 * reads, prompt by prompt, added to the chunk's edge sums. */
static int grad_fn(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)shape;
    (void)ndim;
    const eap_run *r = ctx;
    const eap_ctx *c = r->c;
    const eap_point *pt = point_of(c, name);
    const int t = c->t, D = c->m->cfg.d_model, TD = t * D, H = c->g->n_heads;
    const int N = pt->heads ? H : 1;
    for (int b = 0; b < r->b; b++) {
        const float *G = data + (size_t)b * TD * N;
        if (pt->heads) { /* [t, H, D] -> gt [t*D, H] */
            for (int p = 0; p < t; p++)
                for (int h = 0; h < H; h++)
                    for (int d = 0; d < D; d++)
                        r->w->gt[((size_t)p * D + d) * H + h] = G[((size_t)p * H + h) * D + d];
            G = r->w->gt;
        }
        /* prod (senders, N) = delta_b^T (senders of the point, t*D) G (t*D, N) */
        hs_sgemm(1, 0, pt->n_send, N, TD, 1.0f, r->w->delta + (size_t)b * c->n_send * TD, c->n_send, G, N, 0.0f,
                 r->w->prod, N);
        for (int j = 0; j < N; j++) {
            double *e = r->acc + c->g->recv_first_edge[pt->recv[j]];
            for (int u = 0; u < pt->n_send; u++) e[u] += (double)r->w->prod[(size_t)u * N + j];
        }
    }
    return 0;
}

/* The clean logits at each real row's position into w->ref. */
static void keep_ref(const eap_ctx *c, const eap_run *r, const hs_acts *a, const int *pos)
{
    const int V = c->m->cfg.d_vocab;
    for (int b = 0; b < r->b; b++)
        memcpy(r->w->ref + (size_t)b * V, a->logits + ((size_t)b * c->t + pos[b]) * V, (size_t)V * sizeof(float));
}

/* The clean run's captures from the given cache (what cap_fn and keep_ref
 * take from the clean forward): the senders into delta, hook_embed into
 * r->emb (padded rows: the last real row's, as the padded tokens repeat it),
 * the logits at each real row's position into ref. */
static void from_given(const eap_ctx *c, eap_run *r, int r0, const int *pos)
{
    const hs_cache *g = c->given;
    const int t = c->t, V = c->m->cfg.d_vocab;
    const size_t TD = (size_t)t * c->m->cfg.d_model;
    for (int i = 0; i < g->n; i++) {
        const hs_cache_entry *en = &g->e[i];
        const size_t row = en->numel / (size_t)en->shape[0];
        if (strcmp(en->name, "hook_embed") == 0) {
            memcpy(r->emb, en->data + (size_t)r0 * TD, (size_t)r->b * TD * sizeof(float));
            for (int b = r->b; b < HS_ENGINE_CHUNK; b++)
                memcpy(r->emb + (size_t)b * TD, r->emb + (size_t)(r->b - 1) * TD, TD * sizeof(float));
        } else if (strcmp(en->name, "logits") == 0) {
            for (int b = 0; b < r->b; b++)
                memcpy(r->w->ref + (size_t)b * V, en->data + ((size_t)(r0 + b) * t + pos[b]) * V,
                       (size_t)V * sizeof(float));
        } else if (cap_wants(en->name, r)) {
            cap_fn(en->name, en->shape, en->ndim, en->data + (size_t)r0 * row, r);
        }
    }
}

static hs_status eap_job(hs_engine *e, hs_engine_worker *w, int k, void *arg)
{
    (void)e;
    eap_ctx *c = arg;
    const int t = c->t, r0 = k * HS_ENGINE_CHUNK;
    hs_attr_worker *aw = &c->aw[w->index];
    eap_run r = {c, &c->ew[w->index], c->acc + (size_t)k * c->g->n_edges,
                 c->n_real - r0 < HS_ENGINE_CHUNK ? c->n_real - r0 : HS_ENGINE_CHUNK, 0, NULL, 0.0f};
    const int *clean = c->clean + (size_t)r0 * t, *corr = c->corr + (size_t)r0 * t;
    const int *pos = c->pos + r0, *ans = c->answer + r0, *wr = c->wrong + r0;
    const hs_observer cap = {cap_fn, cap_wants, &r}, grad = {grad_fn, grad_wants, &r};
    const hs_observer interp = {interp_fn, interp_wants, &r};
    const int resample = c->abl == HS_ABLATE_RESAMPLE;
    hs_status s = HS_OK;
    if (!c->ig) { /* the gradient at the clean run */
        if (resample) s = hs_forward(c->m, aw->acts, corr, HS_ENGINE_CHUNK, t, &cap, &w->err);
        else fill_ablated(c, &r);
        r.subtract = 1;
        if (s == HS_OK) s = hs_forward(c->m, aw->acts, clean, HS_ENGINE_CHUNK, t, &cap, &w->err);
        if (s == HS_OK) keep_ref(c, &r, aw->acts, pos);
        if (s == HS_OK)
            s = hs_attr_backward(c->m, aw, c->metric, r.b, t, pos, ans, wr, r.w->ref, &grad, &w->err);
        return s;
    }
    /* EAP-IG: the clean run (its senders, embeddings, logits); resample: the
     * corrupted run, k = 0 (its gradient taken there with k0 = 0); then k =
     * k0 .. k0+steps-1 from interpolated inputs (zero, mean: from the ablated
     * input node's value, k = 0 included) */
    if (resample) r.emb = r.w->e_clean;
    else fill_ablated(c, &r);
    r.subtract = resample ? 0 : 1;
    if (c->given) {
        from_given(c, &r, r0, pos);
    } else {
        s = hs_forward(c->m, aw->acts, clean, HS_ENGINE_CHUNK, t, &cap, &w->err);
        if (s == HS_OK) keep_ref(c, &r, aw->acts, pos);
    }
    int step = c->k0;
    if (resample) {
        r.subtract = 2;
        r.emb = r.w->e_corr;
        if (s == HS_OK) s = hs_forward(c->m, aw->acts, corr, HS_ENGINE_CHUNK, t, &cap, &w->err);
        if (s == HS_OK && step == 0) {
            s = hs_attr_backward(c->m, aw, c->metric, r.b, t, pos, ans, wr, r.w->ref, &grad, &w->err);
            step = 1;
        }
    }
    for (; step < c->k0 + c->steps && s == HS_OK; step++) {
        r.alpha = (float)((double)step / c->steps); /* k / m, as EAP-IG's float tensor product */
        s = hs_forward(c->m, aw->acts, clean, HS_ENGINE_CHUNK, t, &interp, &w->err);
        if (s == HS_OK)
            s = hs_attr_backward(c->m, aw, c->metric, r.b, t, pos, ans, wr, r.w->ref, &grad, &w->err);
    }
    return s;
}

/* The gradient points of g and their receivers (c->pts); HS_ERR_NOMEM. */
static hs_status eap_points(eap_ctx *c, hs_error *err)
{
    const hs_graph *g = c->g;
    const int L = g->n_layers, H = g->n_heads;
    const int softmax = c->m->cfg.attn == HS_ATTN_SOFTMAX;
    c->pts = calloc((size_t)L * 4 + 1, sizeof *c->pts);
    c->first_node = calloc((size_t)L, sizeof *c->first_node);
    if (c->pts == NULL || c->first_node == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int u = g->n_nodes - 1; u >= 0; u--)
        if (g->node_kind[u] == HS_NODE_HEAD && g->node_head[u] == 0) c->first_node[g->node_layer[u]] = u;
    for (int r = 0; r < g->n_receivers; r++) {
        const int node = g->recv_node[r], l = g->node_layer[node];
        const hs_recv_kind x = g->recv_kind[r];
        /* uniform attention reads no queries or keys: those receivers keep 0 */
        if (g->node_kind[node] == HS_NODE_HEAD && !softmax && x != HS_RECV_V) continue;
        char name[64];
        if (g->node_kind[node] == HS_NODE_HEAD)
            snprintf(name, sizeof name, "blocks.%d.hook_%c_input", l, "qkv"[x]);
        else if (g->node_kind[node] == HS_NODE_MLP)
            snprintf(name, sizeof name, "blocks.%d.hook_mlp_in", l);
        else
            snprintf(name, sizeof name, "blocks.%d.hook_resid_post", L - 1);
        eap_point *pt = (eap_point *)point_of(c, name);
        if (pt == NULL) {
            pt = &c->pts[c->n_points++];
            snprintf(pt->name, sizeof pt->name, "%s", name);
            pt->heads = g->node_kind[node] == HS_NODE_HEAD;
            pt->n_send = g->recv_n_edges[r];
            if ((pt->recv = calloc((size_t)H, sizeof *pt->recv)) == NULL)
                return hs_fail(err, HS_ERR_NOMEM, "out of memory");
        }
        /* a receiver's senders are the nodes before it: 0 .. n_send-1 */
        HS_ASSERT(g->recv_n_edges[r] == pt->n_send && g->edge_src[g->recv_first_edge[r]] == 0 &&
                  g->edge_src[g->recv_first_edge[r] + pt->n_send - 1] == pt->n_send - 1);
        pt->recv[pt->heads ? g->node_head[node] : 0] = r;
    }
    return HS_OK;
}

/* The checks of hs_eap_scores. */
static hs_status eap_check(const hs_model *m, const hs_prompts *p, const hs_graph *g, hs_metric_kind metric,
                           hs_ablate_method abl, int ig_steps, hs_error *err)
{
    const hs_config *cfg = &m->cfg;
    if (g->n_layers != cfg->n_layers || g->n_heads != cfg->n_heads || g->has_mlp != (cfg->d_mlp > 0))
        return hs_fail(err, HS_ERR_INPUT, "the graph (%d layers x %d heads%s) is not the model's (%d x %d%s)",
                       g->n_layers, g->n_heads, g->has_mlp ? ", MLPs" : "", cfg->n_layers, cfg->n_heads,
                       cfg->d_mlp > 0 ? ", MLPs" : "");
    if (p->n < 1) return hs_fail(err, HS_ERR_INPUT, "the prompt set is empty");
    if ((int)abl < 0 || abl > HS_ABLATE_RESAMPLE) return hs_fail(err, HS_ERR_INPUT, "unknown ablation %d", (int)abl);
    if (p->corr == NULL && abl == HS_ABLATE_RESAMPLE)
        return hs_fail(err, HS_ERR_INPUT, "the prompt set has no \"corrupted\" prompts to attribute against "
                                          "(use --ablation mean or zero)");
    if ((int)metric < 0 || metric >= HS_METRIC_N) return hs_fail(err, HS_ERR_INPUT, "unknown metric %d", (int)metric);
    if (ig_steps < 0 || ig_steps > 1000)
        return hs_fail(err, HS_ERR_INPUT, "EAP-IG steps %d outside 0 (plain EAP) .. 1000", ig_steps);
    if (metric == HS_METRIC_KL) return HS_OK;
    if (p->wrong == NULL)
        return hs_fail(err, HS_ERR_INPUT, "the prompt set has no \"wrong\" answers (the %s metric needs them)",
                       hs_metric_names[metric]);
    for (int i = 0; i < p->n; i++)
        if (p->answer[i] < 0) return hs_fail(err, HS_ERR_INPUT, "line %d has no \"answer\"", p->line[i]);
    return HS_OK;
}

static void eap_ctx_free(eap_ctx *c, int n_workers)
{
    for (int i = 0; c->pts && i < c->n_points; i++) free(c->pts[i].recv);
    free(c->pts);
    free(c->first_node);
    for (int i = 0; c->ew && i < n_workers; i++) {
        free(c->ew[i].delta);
        free(c->ew[i].gt);
        free(c->ew[i].prod);
        free(c->ew[i].e_clean);
        free(c->ew[i].e_corr);
        free(c->ew[i].ref);
    }
    free(c->ew);
    free(c->abl_vals);
    free(c->emb_mean);
    hs_attr_workers_free(c->aw, n_workers);
    free(c->acc);
    free((void *)c->clean);
    free((void *)c->corr);
    free((void *)c->answer);
    free((void *)c->wrong);
    free((void *)c->pos);
}

/* Every buffer of the run: the padded rows, each worker's. */
static hs_status eap_alloc(eap_ctx *c, const hs_prompts *p, const hs_engine *e, hs_error *err)
{
    const hs_config *cfg = &c->m->cfg;
    const int t = p->t, H = cfg->n_heads;
    const size_t TD = (size_t)t * cfg->d_model, CH = HS_ENGINE_CHUNK;
    int np = 0, *zeros = calloc((size_t)p->n, sizeof(int));
    if (zeros == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    c->clean = hs_engine_pad_rows(p->clean, p->n, t, &np);
    c->corr = hs_engine_pad_rows(p->corr ? p->corr : p->clean, p->n, t, &np);
    c->answer = hs_engine_pad_rows(p->answer, p->n, 1, &np);
    c->wrong = hs_engine_pad_rows(p->wrong ? p->wrong : zeros, p->n, 1, &np);
    c->pos = hs_engine_pad_rows(p->pos, p->n, 1, &np);
    free(zeros);
    c->acc = calloc((size_t)hs_engine_chunks(p->n) * c->g->n_edges, sizeof(double));
    c->ew = calloc((size_t)e->n_workers, sizeof *c->ew);
    if (!c->clean || !c->corr || !c->answer || !c->wrong || !c->pos || !c->acc || !c->ew)
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int i = 0; i < e->n_workers; i++) {
        eap_worker *w = &c->ew[i];
        w->delta = malloc(CH * c->n_send * TD * sizeof(float));
        w->gt = malloc(TD * H * sizeof(float));
        w->prod = malloc((size_t)c->n_send * H * sizeof(float));
        w->ref = malloc(CH * cfg->d_vocab * sizeof(float));
        if (c->ig && c->abl == HS_ABLATE_RESAMPLE) {
            w->e_clean = malloc(CH * TD * sizeof(float));
            w->e_corr = malloc(CH * TD * sizeof(float));
        }
        if (!w->delta || !w->gt || !w->prod || !w->ref ||
            (c->ig && c->abl == HS_ABLATE_RESAMPLE && (!w->e_clean || !w->e_corr)))
            return hs_fail(err, HS_ERR_NOMEM, "out of memory for the attribution's buffers");
    }
    return hs_attr_workers_init(e, &c->aw, err);
}

/* mean: c->abl_vals (t*D, senders) <- every sender's position-wise mean over
 * the set's clean prompts (hs_engine_means, as the circuit runs' ablation). */
static hs_status eap_means(eap_ctx *c, hs_engine *e, hs_error *err)
{
    static const char *const fa[] = {"hook_embed", "blocks.0.hook_resid_pre", "blocks.*.attn.hook_result",
                                     "?blocks.*.hook_mlp_out"};
    const int D = c->m->cfg.d_model, ns = c->n_send;
    hs_cache mc;
    hs_cache_init(&mc);
    hs_status s = hs_engine_means(e, c->clean, (size_t)c->n_real, fa, 4, &mc, err);
    if (s == HS_OK && ((c->abl_vals = malloc((size_t)c->t * D * ns * sizeof(float))) == NULL ||
                       (c->emb_mean = malloc((size_t)c->t * D * sizeof(float))) == NULL))
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    const hs_cache_entry *em = s == HS_OK ? hs_cache_get(&mc, "hook_embed") : NULL;
    if (em) memcpy(c->emb_mean, em->data, (size_t)c->t * D * sizeof(float));
    for (int k = 0; k < mc.n && s == HS_OK; k++) {
        int S;
        const int u0 = sender_of(c, mc.e[k].name, &S);
        if (u0 < 0) continue;
        for (int p = 0; p < c->t; p++)
            for (int u = 0; u < S; u++)
                for (int i = 0; i < D; i++)
                    c->abl_vals[((size_t)p * D + i) * ns + u0 + u] = mc.e[k].data[((size_t)p * S + u) * D + i];
    }
    hs_cache_free(&mc);
    return s;
}

/* The given clean cache holds p->n rows of p->t positions of hook_embed,
 * logits and every sender's output. */
static hs_status check_given(const hs_model *m, const hs_prompts *p, const hs_cache *g, hs_error *err)
{
    const hs_config *cfg = &m->cfg;
    char nm[64];
    for (int i = -2; i < 3 * cfg->n_layers; i++) {
        const int l = i < 0 ? 0 : i / 3;
        if (i == -2) snprintf(nm, sizeof nm, "hook_embed");
        else if (i == -1) snprintf(nm, sizeof nm, "logits");
        else if (i % 3 == 0 && l == 0) snprintf(nm, sizeof nm, "blocks.0.hook_resid_pre");
        else if (i % 3 == 0) continue;
        else if (i % 3 == 1) snprintf(nm, sizeof nm, "blocks.%d.attn.hook_result", l);
        else if (cfg->d_mlp > 0) snprintf(nm, sizeof nm, "blocks.%d.hook_mlp_out", l);
        else continue;
        const hs_cache_entry *en = hs_cache_get(g, nm);
        if (en == NULL || en->ndim < 3 || en->shape[0] != p->n || en->shape[1] != p->t)
            return hs_fail(err, HS_ERR_INPUT, "EAP: the clean run's cache %s %s of %d prompts of %d positions",
                           en ? "holds" : "lacks", nm, p->n, p->t);
    }
    return HS_OK;
}

static hs_status attribute(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_graph *g,
                           const hs_eap_opts *o, const hs_cache *given, double *scores, hs_error *err)
{
    hs_status s = eap_check(m, p, g, o->metric, o->ablation, o->ig_steps, err);
    if (s != HS_OK) return s;
    if (hs_kv_heads(&m->cfg) != m->cfg.n_heads) { /* the graph's per-query-head k, v receivers */
        hs_model *u = NULL;
        if ((s = hs_model_ungrouped(m, &u, err)) == HS_OK) s = attribute(u, pool, p, g, o, NULL, scores, err);
        free(u);
        return s;
    }
    eap_ctx c;
    memset(&c, 0, sizeof c);
    c.m = m;
    c.g = g;
    c.metric = o->metric;
    c.abl = o->ablation;
    c.ig = o->ig_steps > 0;
    c.steps = o->ig_steps > 0 ? o->ig_steps : 1;
    c.k0 = o->ig_right ? 1 : 0;
    c.n_real = p->n;
    c.t = p->t;
    c.n_send = g->n_nodes - 1;
    c.given = given;
    hs_engine e;
    memset(&e, 0, sizeof e);
    /* the jobs' forwards run on the attribution workers' activations (c.aw);
     * the engine's own (one row each but for the means) only in eap_means */
    const int rows = c.abl == HS_ABLATE_MEAN ? HS_ENGINE_CHUNK : 1;
    if ((s = hs_engine_init_rows(&e, m, pool, p->t, rows, err)) == HS_OK && (s = eap_points(&c, err)) == HS_OK &&
        (s = eap_alloc(&c, p, &e, err)) == HS_OK && (c.abl != HS_ABLATE_MEAN || (s = eap_means(&c, &e, err)) == HS_OK)) {
        e.progress = c.ig ? "EAP-IG chunks of 32 prompts" : "EAP chunks of 32 prompts"; /* per chunk */
        s = hs_engine_for(&e, hs_engine_chunks(p->n), eap_job, &c, err);
    }
    if (s == HS_OK) { /* chunk sums in chunk order; the mean over prompts and steps */
        const int chunks = hs_engine_chunks(p->n);
        for (size_t i = 0; i < g->n_edges; i++) {
            double sum = 0.0;
            for (int k = 0; k < chunks; k++) sum += c.acc[(size_t)k * g->n_edges + i];
            scores[i] = sum / ((double)p->n * c.steps);
        }
    }
    eap_ctx_free(&c, e.n_workers);
    hs_engine_free(&e);
    return s;
}

hs_status hs_eap_run(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_graph *g,
                     const hs_eap_opts *o, double *scores, hs_error *err)
{
    return attribute(m, pool, p, g, o, NULL, scores, err);
}

hs_status hs_eap_scores(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_graph *g,
                        hs_metric_kind metric, int ig_steps, double *scores, hs_error *err)
{
    const hs_eap_opts o = {metric, HS_ABLATE_RESAMPLE, ig_steps, 0};
    return attribute(m, pool, p, g, &o, NULL, scores, err);
}

hs_status hs_eap_scores_cached(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_graph *g,
                               hs_metric_kind metric, int ig_steps, const hs_cache *clean, double *scores,
                               hs_error *err)
{
    const hs_eap_opts o = {metric, HS_ABLATE_RESAMPLE, ig_steps, 0};
    hs_status s = eap_check(m, p, g, metric, HS_ABLATE_RESAMPLE, ig_steps, err);
    if (s == HS_OK && ig_steps < 1) s = hs_fail(err, HS_ERR_INPUT, "EAP: a given clean run is EAP-IG's (ig_steps >= 1)");
    if (s == HS_OK && hs_kv_heads(&m->cfg) != m->cfg.n_heads)
        s = hs_fail(err, HS_ERR_INPUT, "EAP: a given clean run needs a model without grouped-query attention");
    if (s == HS_OK) s = check_given(m, p, clean, err);
    return s == HS_OK ? attribute(m, pool, p, g, &o, clean, scores, err) : s;
}

void hs_eap_node_scores(const hs_graph *g, const double *edge_scores, double *node_scores)
{
    for (int u = 0; u < g->n_nodes; u++)
        node_scores[u] = g->node_kind[u] == HS_NODE_LOGITS ? NAN : 0.0;
    for (size_t e = 0; e < g->n_edges; e++) node_scores[g->edge_src[e]] += edge_scores[e];
}
