/*
 * circuits/circuit_suffix.c -- the circuit check's interventions whose
 * effect on position 14 starts at position 14 of a block or in the last
 * block, run there alone on hs_forward_suffix (model/suffix.h) instead of
 * the engine's run of whole blocks at 15 positions: path patching into a
 * last-layer receiver, patching or mean-ablating last-layer heads' z, and
 * patching a head's z at 14 or at every position (there from the pairs'
 * first differing token on, c->s_diff: before it the clean and corrupted z
 * are the same; circuits_internal.h, hs_circ_suffix_run). Each
 * gives the bits of the engine's run with the intervention's hooks (the
 * forward's kernels on fewer rows: circuit --json byte-identical).
 */
#include "circuits/circuits_internal.h"
#include "model/suffix.h"

#include <stdlib.h>
#include <string.h>

#define T_RUN HS_CIRC_T  /* positions 0..14 */
#define Q HS_WG_POS_QUERY

int hs_circ_suffix_runs(const hs_circ_ctx *c)
{
    return c->L >= 2 && hs_forward_suffix_ok(&c->m->cfg);
}

int hs_circ_suffix_kind(const hs_circ_ctx *c, const hs_circ_edit *e)
{
    if (!hs_circ_suffix_runs(c) || e->kind < 0) return 0;
    if (e->kind == HS_CIRC_EDIT_PATH) return e->receiver.layer == c->L - 1;
    int last = 1;
    for (int i = 0; i < e->n_heads; i++) {
        last &= e->heads[i].layer == c->L - 1;
        if (e->heads[i].layer != e->heads[0].layer) return 0;
    }
    if (last) return e->kind == HS_CIRC_EDIT_ABLATE || e->pos == Q || e->pos == -1;
    if (e->kind != HS_CIRC_EDIT_PATCH) return 0;
    return e->pos == Q || (e->pos == -1 && c->s_diff >= 1 && c->s_diff <= Q) ? 2 : 0;
}

/* What the run's callbacks read. */
typedef struct {
    const hs_circ_ctx *c;
    const hs_circ_edit *e;
    const float *in[3];  /* PATH: (n T, dh) the receiver's patched input, the others NULL */
    const float *qkv[3]; /* PATH: (n, T, H, dh) the corrupted run's hook_q, hook_k, hook_v */
    const float *zsrc;   /* ABLATE, PATCH: (rows, T, H, dh) the heads' z to write */
    size_t zrow;         /* zsrc's floats from one row to the next (0: the means' one row) */
} suffix_ctx;

/* The receiver's q, k, v (T, dh) of sequence b: the patched input, the
 * corrupted run's others (hs_suffix_qkv_fn). */
static void edit_qkv(void *ctx, int b, float *q, float *k, float *v)
{
    const suffix_ctx *p = ctx;
    const int H = p->c->H, dh = p->c->m->cfg.d_head, h = p->e->receiver.head;
    float *out[3] = {q, k, v};
    for (int x = 0; x < 3; x++) {
        if (p->in[x]) {
            memcpy(out[x], p->in[x] + (size_t)b * T_RUN * dh, (size_t)T_RUN * dh * sizeof(float));
            continue;
        }
        for (int i = 0; i < T_RUN; i++)
            memcpy(out[x] + (size_t)i * dh, p->qkv[x] + (((size_t)b * T_RUN + i) * H + h) * dh,
                   (size_t)dh * sizeof(float));
    }
}

/* z (nb, ns, H, dh) of sequences b0.. at positions T - ns .. 14 (the read
 * row 14 alone with ns 1): the edit's heads from zsrc, as the patch and
 * mean-ablation hooks write them (hs_suffix_z_fn). */
static void edit_z(void *ctx, float *z, int b0, int nb, int ns)
{
    const suffix_ctx *p = ctx;
    const int H = p->c->H, dh = p->c->m->cfg.d_head;
    for (int b = 0; b < nb; b++)
        for (int j = 0; j < ns; j++) {
            const size_t pos = (size_t)(T_RUN - ns + j);
            for (int i = 0; i < p->e->n_heads; i++) {
                const int h = p->e->heads[i].head;
                memcpy(z + (((size_t)b * ns + j) * H + h) * dh,
                       p->zsrc + (size_t)(b0 + b) * p->zrow + (pos * H + h) * dh, (size_t)dh * sizeof(float));
            }
        }
}

hs_status hs_circ_suffix_run(const hs_circ_ctx *c, const hs_circ_edit *e, int *pred, double *ld, hs_error *err)
{
    const int n = c->n, L = c->L, V = c->V, kind = hs_circ_suffix_kind(c, e);
    if (kind == 0) return hs_fail(err, HS_ERR_INPUT, "circuit: an intervention the suffix runs do not take");
    const int path = e->kind == HS_CIRC_EDIT_PATH;
    const int l0 = kind == 1 ? L - 1 : e->heads[0].layer; /* the block the runs start at */
    const hs_cache *run = e->kind == HS_CIRC_EDIT_ABLATE ? &c->clean : &c->corr;
    hs_status st = HS_OK;
    suffix_ctx sc = {c, e, {NULL, NULL, NULL}, {NULL, NULL, NULL}, NULL, 0};
    for (int x = 0; x < 3 && path; x++) {
        const hs_cache_entry *en = hs_cache_getf(&c->corr, "blocks.%d.attn.hook_%c", L - 1, "qkv"[x]);
        HS_ASSERT(en != NULL);
        sc.qkv[x] = en->data;
    }
    if (path) sc.in[e->input] = e->in[e->input];
    else {
        const int abl = e->kind == HS_CIRC_EDIT_ABLATE;
        const hs_cache_entry *zs = hs_cache_getf(abl ? &c->means : &c->clean, "blocks.%d.attn.hook_z", l0);
        HS_ASSERT(zs != NULL);
        sc.zsrc = zs->data;
        sc.zrow = abl ? 0 : (size_t)T_RUN * c->H * c->m->cfg.d_head;
    }
    const hs_cache_entry *zl = hs_cache_getf(run, "blocks.%d.attn.hook_z", L - 1);
    const hs_cache_entry *rp = hs_cache_getf(run, "blocks.%d.hook_resid_pre", l0);
    HS_ASSERT(zl != NULL && rp != NULL);
    int *ints = malloc((size_t)n * 3 * sizeof(int));
    const float **ptrs = calloc(3 * (size_t)L, sizeof *ptrs); /* resid, k, v by layer */
    float *lg = malloc((size_t)n * V * sizeof(float));
    if (!ints || !ptrs || !lg) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (st == HS_OK) {
        int *layer = ints, *row = ints + n, *read = ints + 2 * n;
        for (int i = 0; i < n; i++) {
            layer[i] = l0;
            row[i] = i;
            read[i] = Q;
        }
        ptrs[l0] = rp->data;
        for (int l = l0; l < L && kind == 2; l++) {
            const hs_cache_entry *k = hs_cache_getf(run, "blocks.%d.attn.hook_k", l);
            const hs_cache_entry *v = hs_cache_getf(run, "blocks.%d.attn.hook_v", l);
            HS_ASSERT(k != NULL && v != NULL);
            ptrs[L + l] = k->data;
            ptrs[2 * L + l] = v->data;
        }
        const int s = kind == 2 && e->pos == -1 ? c->s_diff : Q; /* the first position run */
        hs_suffix_run sr = {n, T_RUN, s, layer, row, (const float *const *)ptrs, (const float *const *)ptrs + L,
                            (const float *const *)ptrs + 2 * L, path ? NULL : edit_z, &sc, read, NULL, 0,
                            kind == 1 ? zl->data : NULL, path ? e->receiver.head : -1, path ? edit_qkv : NULL,
                            kind == 2, NULL};
        st = hs_forward_suffix(c->m, &sr, lg, err);
    }
    for (int i = 0; i < n && st == HS_OK; i++) { /* as circuit.c's rows_of */
        const float *row = lg + (size_t)i * V;
        if (ld) ld[i] = (double)row[c->ref_clean[i]] - (double)row[c->ref_corr[i]];
        if (pred) pred[i] = hs_argmax(row, (size_t)V);
    }
    free(ints);
    free(ptrs);
    free(lg);
    return st;
}
