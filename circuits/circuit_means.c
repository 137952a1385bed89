/*
 * circuits/circuit_means.c -- the check's mean-ablation reference
 * (circuits_internal.h, hs_circ_means): the position-wise means of every
 * block's hook_z and hook_mlp_out over the reference split, the bits
 * hs_engine_means gives, with each distinct prefix run once.
 *
 * The split's sentences share their first s_diff tokens eight at a time (a
 * noun pair, every adjective), and a position's values depend only on the
 * tokens up to it (causal attention; a row's values do not depend on the rows
 * beside it), so the sentences of a group hold the same values before s_diff.
 * The first sentence of each group runs whole on the engine, its keys and
 * values kept; the others run from s_diff on alone (hs_forward_suffix, exact:
 * the forward's bits) on their group's keys and values before it. The sums
 * are then made as hs_engine_means makes them: every value in double, row
 * after row in the split's order.
 */
#include "circuits/circuits_internal.h"

#include "model/suffix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Run rows a job takes (fewer, larger jobs: each allocates its buffers). */
#define RUN_ROWS 128

typedef struct {
    const hs_circ_ctx *c;
    const int *tok;          /* (n, T) the split's rows */
    int n, s, t;
    int *group;              /* (n) row -> its group (the representative's index) */
    int *rep;                /* (n_rep) group -> its first row */
    int n_rep;
    int *run;                /* (n_run) the rows run from s (no group's first) */
    int n_run;
    hs_cache *reps;          /* (chunks of n_rep) the representatives' caches, 32 rows each */
    float *sz, *smlp;        /* (L, n_run, T - s, H dh) / (L, n_run, T - s, D): the run rows' points */
} means_ctx;

/* The representatives' chunk j cached (hook_z, hook_mlp_out, hook_k, hook_v). */
static hs_status rep_job(hs_engine *e, hs_engine_worker *w, int j, void *arg)
{
    means_ctx *mc = arg;
    static const char *const filt[] = {"blocks.*.attn.hook_z", "?blocks.*.hook_mlp_out", "blocks.*.attn.hook_k",
                                       "blocks.*.attn.hook_v"};
    const int r0 = j * HS_ENGINE_CHUNK, b = hs_engine_chunk_rows(mc->n_rep, j), t = mc->t;
    int *tok = malloc((size_t)b * t * sizeof(int));
    if (tok == NULL) return hs_fail(&w->err, HS_ERR_NOMEM, "out of memory");
    for (int i = 0; i < b; i++) memcpy(tok + (size_t)i * t, mc->tok + (size_t)mc->rep[r0 + i] * t, (size_t)t * sizeof(int));
    hs_status st = hs_engine_cache(e, w, tok, b, filt, 4, NULL, &mc->reps[j]);
    free(tok);
    return st;
}

/* The entry `name` of block l in the representatives' chunk cache k, at
 * representative row i of it. */
static const float *rep_row(const means_ctx *mc, const char *fmt, int l, int g, size_t row)
{
    const hs_cache_entry *en = hs_cache_getf(&mc->reps[g / HS_ENGINE_CHUNK], fmt, l);
    return en ? en->data + (size_t)(g % HS_ENGINE_CHUNK) * row : NULL;
}

typedef struct {
    means_ctx *mc;
    int i0; /* the job's first run row */
} obs_ctx;

static void observe(void *ctx, int l, int b0, int nb, int ns, const float *z, const float *mlp_out)
{
    const obs_ctx *o = ctx;
    const hs_circ_ctx *c = o->mc->c;
    const size_t HD = (size_t)c->H * c->m->cfg.d_head, D = (size_t)c->D, n_run = (size_t)o->mc->n_run;
    const size_t at = (size_t)l * n_run + (size_t)o->i0 + (size_t)b0;
    memcpy(o->mc->sz + at * ns * HD, z, (size_t)nb * ns * HD * sizeof(float));
    if (mlp_out) memcpy(o->mc->smlp + at * ns * D, mlp_out, (size_t)nb * ns * D * sizeof(float));
}

/* Run rows [RUN_ROWS j, RUN_ROWS (j + 1)) from s on: their inputs there (the embedding),
 * the keys and values before s their groups'. */
static hs_status run_job(hs_engine *e, hs_engine_worker *w, int j, void *arg)
{
    means_ctx *mc = arg;
    const hs_model *m = mc->c->m;
    const hs_config *cfg = &m->cfg;
    const int L = cfg->n_layers, D = cfg->d_model, t = mc->t, s = mc->s;
    const size_t HD = (size_t)cfg->n_heads * cfg->d_head;
    const int i0 = j * RUN_ROWS, nb = mc->n_run - i0 < RUN_ROWS ? mc->n_run - i0 : RUN_ROWS;
    (void)e;
    int *idx = calloc((size_t)2 * nb, sizeof(int)); /* layer[] (all 0), row[] */
    /* the input, then the keys and values: one block of a job's size (the
     * last job's aside), a kept mapping of the job before (hs_floats_alloc) */
    float *x = hs_floats_alloc((size_t)nb * t * D + (size_t)2 * L * nb * t * HD);
    float *kv = x ? x + (size_t)nb * t * D : NULL;
    const float **ptr = calloc((size_t)3 * L, sizeof *ptr);
    hs_status st = HS_OK;
    if (idx == NULL || x == NULL || kv == NULL || ptr == NULL) st = hs_fail(&w->err, HS_ERR_NOMEM, "out of memory");
    for (int b = 0; b < nb && st == HS_OK; b++) {
        const int row = mc->run[i0 + b], g = mc->group[row];
        idx[nb + b] = b;
        st = hs_suffix_embed(m, mc->tok + (size_t)row * t, s, t, x + (size_t)b * t * D, &w->err);
        for (int l = 0; l < L; l++)
            for (int which = 0; which < 2; which++) {
                const float *src = rep_row(mc, which ? "blocks.%d.attn.hook_v" : "blocks.%d.attn.hook_k", l, g,
                                           (size_t)t * HD);
                HS_ASSERT(src != NULL);
                memcpy(kv + (((size_t)(2 * l + which) * nb + b) * t) * HD, src, (size_t)s * HD * sizeof(float));
            }
    }
    if (st == HS_OK) {
        for (int l = 0; l < L; l++) {
            ptr[l] = x; /* read at block 0 alone */
            ptr[L + l] = kv + (size_t)(2 * l) * nb * t * HD;
            ptr[2 * L + l] = kv + (size_t)(2 * l + 1) * nb * t * HD;
        }
        obs_ctx o = {mc, i0};
        const hs_suffix_run r = {nb,   t,    s,    idx,  idx + nb, ptr,  ptr + L, ptr + 2 * L, NULL,
                                 NULL, NULL, NULL, 0,    NULL,     -1,   NULL,    1,           observe};
        hs_suffix_run rr = r;
        rr.ctx = &o;
        st = hs_forward_suffix(m, &rr, NULL, &w->err);
    }
    free(idx);
    hs_floats_free(x);
    free(ptr);
    return st;
}

int hs_circ_means_ok(const hs_circ_ctx *c)
{
    const hs_config *cfg = &c->m->cfg;
    return hs_forward_suffix_ok(cfg) && cfg->pos == HS_POS_LEARNED && !cfg->embed_norm && c->s_diff >= 1 &&
           c->s_diff < HS_CIRC_T;
}

hs_status hs_circ_means(hs_circ_ctx *c, const int *tok, size_t n_ex, hs_error *err)
{
    const hs_config *cfg = &c->m->cfg;
    const int L = cfg->n_layers, t = HS_CIRC_T, s = c->s_diff, ns = t - s;
    const size_t HD = (size_t)c->H * cfg->d_head, D = (size_t)c->D;
    if (n_ex == 0 || n_ex > (size_t)HS_ENGINE_CHUNK * 100000)
        return hs_fail(err, HS_ERR_INPUT, "circuit: the reference split has %zu sentences", n_ex);
    const int n = (int)n_ex;
    means_ctx mc = {c, tok, n, s, t, NULL, NULL, 0, NULL, 0, NULL, NULL, NULL};
    hs_status st = HS_OK;
    mc.group = malloc((size_t)n * sizeof(int));
    mc.rep = malloc((size_t)n * sizeof(int));
    mc.run = malloc((size_t)n * sizeof(int));
    double *acc = NULL;
    if (mc.group == NULL || mc.rep == NULL || mc.run == NULL) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n && st == HS_OK; i++) { /* groups of equal tokens before s, in first-row order */
        int g = mc.n_rep - 1; /* the last group first: the split lists a pair's sentences together */
        while (g >= 0 && memcmp(tok + (size_t)mc.rep[g] * t, tok + (size_t)i * t, (size_t)s * sizeof(int)) != 0) g--;
        if (g < 0) {
            g = mc.n_rep++;
            mc.rep[g] = i;
        } else {
            mc.run[mc.n_run++] = i;
        }
        mc.group[i] = g;
    }
    const int n_chunks = hs_engine_chunks(mc.n_rep);
    if (st == HS_OK && ((mc.reps = calloc((size_t)n_chunks, sizeof *mc.reps)) == NULL ||
                        (mc.sz = malloc((size_t)L * (mc.n_run ? mc.n_run : 1) * ns * HD * sizeof(float))) == NULL ||
                        (mc.smlp = malloc((size_t)L * (mc.n_run ? mc.n_run : 1) * ns * D * sizeof(float))) == NULL))
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (st == HS_OK) st = hs_engine_for(&c->eng, n_chunks, rep_job, &mc, err);
    if (st == HS_OK && mc.n_run > 0) st = hs_engine_for(&c->eng, (mc.n_run + RUN_ROWS - 1) / RUN_ROWS, run_job, &mc, err);
    /* the means' entries as hs_engine_means lays them out: the points in the
     * forward's order, batch 1 */
    hs_cache_free(&c->means);
    const hs_cache *r0 = st == HS_OK ? &mc.reps[0] : NULL;
    int n_e = 0;
    for (int i = 0; r0 && i < r0->n; i++) n_e += strstr(r0->e[i].name, "hook_z") || strstr(r0->e[i].name, "hook_mlp_out");
    if (st == HS_OK && ((c->means.e = calloc((size_t)n_e + 1, sizeof *c->means.e)) == NULL ||
                        (acc = calloc((size_t)t * (HD > D ? HD : D), sizeof *acc)) == NULL))
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    int *run_of = st == HS_OK ? malloc((size_t)n * sizeof(int)) : NULL; /* row -> its run index, or -1 */
    if (st == HS_OK && run_of == NULL) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int i = 0; st == HS_OK && i < n; i++) run_of[i] = -1;
    for (int k = 0; st == HS_OK && k < mc.n_run; k++) run_of[mc.run[k]] = k;
    for (int i = 0; st == HS_OK && i < r0->n; i++) {
        const int is_z = strstr(r0->e[i].name, "hook_z") != NULL;
        if (!is_z && !strstr(r0->e[i].name, "hook_mlp_out")) continue;
        hs_cache_entry *en = &c->means.e[c->means.n];
        *en = r0->e[i];
        const size_t row = en->numel / (size_t)en->shape[0], width = is_z ? HD : D; /* row: t width */
        en->shape[0] = 1;
        en->numel = row;
        en->data = malloc(row * sizeof(float));
        if (en->data == NULL) {
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
            break;
        }
        c->means.n = c->means.cap = c->means.n + 1;
        int l = 0;
        HS_ASSERT(sscanf(en->name, "blocks.%d.", &l) == 1 && l >= 0 && l < L);
        const float *sv = (is_z ? mc.sz : mc.smlp) + (size_t)l * mc.n_run * ns * width;
        memset(acc, 0, row * sizeof *acc);
        for (int r = 0; r < n; r++) { /* row order, as hs_engine_means sums */
            const float *d = rep_row(&mc, is_z ? "blocks.%d.attn.hook_z" : "blocks.%d.hook_mlp_out", l, mc.group[r], row);
            const size_t cut = run_of[r] < 0 ? row : (size_t)s * width; /* a run row: its own from s on */
            for (size_t k = 0; k < cut; k++) acc[k] += d[k];
            if (run_of[r] < 0) continue;
            const float *e = sv + (size_t)run_of[r] * ns * width;
            for (size_t k = cut; k < row; k++) acc[k] += e[k - cut];
        }
        for (size_t k = 0; k < row; k++) en->data[k] = (float)(acc[k] / (double)n);
    }
    if (st != HS_OK) hs_cache_free(&c->means);
    for (int k = 0; mc.reps && k < n_chunks; k++) hs_cache_free(&mc.reps[k]);
    for (int i = 0; i < c->eng.n_workers; i++) hs_cache_free(&c->eng.w[i].tmp);
    free(mc.reps);
    free(mc.group);
    free(mc.rep);
    free(mc.run);
    free(mc.sz);
    free(mc.smlp);
    free(acc);
    free(run_of);
    return st;
}
