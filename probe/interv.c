/*
 * probe/interv.c -- interventions built on hooks (CIRCUITS.md 6): zero and
 * mean ablation at hook_z, activation patching (whole points, one head at one
 * position), direct path patching, and the logit-difference metrics.
 */
#include "probe/probe.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static hs_status check_head(const hs_model *m, hs_head h, hs_error *err)
{
    if (h.layer < 0 || h.layer >= m->cfg.n_layers || h.head < 0 || h.head >= m->cfg.n_heads)
        return hs_fail(err, HS_ERR_INPUT, "head L%dH%d is outside the model (%d layers x %d heads)",
                       h.layer, h.head, m->cfg.n_layers, m->cfg.n_heads);
    return HS_OK;
}

/* Layer number of a "blocks.{l}...." name, or -1. */
static int name_layer(const char *name)
{
    int l;
    if (sscanf(name, "blocks.%d.", &l) != 1) return -1;
    return l;
}

/* ------------------------------------------------------------------------ */
/* Zero and mean ablation                                                    */

typedef struct {
    int n;
    hs_head *heads;
    /* mean ablation: per head, (n_pos, dh) means; n_pos = T_ref or 1 */
    float **means;
    int pos_wise;   /* 1: means[i] is (n_pos, dh), one row per position */
    int n_pos;
    int dh;
} ablate_ctx;

static void ablate_free(void *p)
{
    ablate_ctx *a = p;
    if (a == NULL) return;
    if (a->means)
        for (int i = 0; i < a->n; i++) free(a->means[i]);
    free(a->means);
    free(a->heads);
    free(a);
}

static int ablate_hook(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    const ablate_ctx *a = ctx;
    int l = name_layer(name);
    if (ndim != 4) return -1;
    const int64_t B = shape[0], T = shape[1], H = shape[2], dh = shape[3];
    int changed = 0;
    for (int i = 0; i < a->n; i++) {
        if (a->heads[i].layer != l) continue;
        const int h = a->heads[i].head;
        if (h >= H) return -1;
        if (a->means && (dh != a->dh || (a->pos_wise && T > a->n_pos))) return -1;
        for (int64_t b = 0; b < B; b++)
            for (int64_t p = 0; p < T; p++) {
                float *z = data + ((b * T + p) * H + h) * dh;
                if (a->means) {
                    const float *mu = a->means[i] + (a->pos_wise ? p : 0) * dh;
                    memcpy(z, mu, (size_t)dh * sizeof(float));
                } else {
                    memset(z, 0, (size_t)dh * sizeof(float));
                }
            }
        changed = 1;
    }
    return changed;
}

static hs_status ablate_new(const hs_model *m, const hs_head *heads, int n, ablate_ctx **out,
                            hs_error *err)
{
    *out = NULL;
    if (heads == NULL || n < 1) return hs_fail(err, HS_ERR_INPUT, "ablation: no heads given");
    for (int i = 0; i < n; i++) {
        hs_status st = check_head(m, heads[i], err);
        if (st != HS_OK) return st;
    }
    ablate_ctx *a = calloc(1, sizeof *a);
    if (a == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    a->heads = malloc((size_t)n * sizeof *a->heads);
    if (a->heads == NULL) {
        free(a);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    memcpy(a->heads, heads, (size_t)n * sizeof *heads);
    a->n = n;
    a->dh = m->cfg.d_head;
    *out = a;
    return HS_OK;
}

hs_status hs_hooks_add_zero_ablation(hs_hooks *hk, const hs_model *m, const hs_head *heads,
                                     int n_heads, hs_error *err)
{
    ablate_ctx *a;
    hs_status st = ablate_new(m, heads, n_heads, &a, err);
    if (st != HS_OK) return st;
    return hs_hooks_add_trusted(hk, "blocks.*.attn.hook_z", ablate_hook, a, ablate_free, NULL, err);
}

hs_status hs_hooks_add_mean_ablation(hs_hooks *hk, const hs_model *m, const hs_cache *ref,
                                     const hs_head *heads, int n_heads, int pos_wise,
                                     hs_error *err)
{
    ablate_ctx *a;
    hs_status st = ablate_new(m, heads, n_heads, &a, err);
    if (st != HS_OK) return st;
    a->means = calloc((size_t)n_heads, sizeof *a->means);
    if (a->means == NULL) {
        ablate_free(a);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < n_heads; i++) {
        const hs_cache_entry *e = hs_cache_getf(ref, "blocks.%d.attn.hook_z", heads[i].layer);
        if (e == NULL || e->ndim != 4 || e->shape[2] != m->cfg.n_heads || e->shape[3] != m->cfg.d_head) {
            ablate_free(a);
            return hs_fail(err, HS_ERR_INPUT,
                           "mean ablation: the reference cache lacks blocks.%d.attn.hook_z [B,T,%d,%d]",
                           heads[i].layer, m->cfg.n_heads, m->cfg.d_head);
        }
        const int64_t B = e->shape[0], T = e->shape[1], H = e->shape[2], dh = e->shape[3];
        const int n_pos = pos_wise ? (int)T : 1;
        if (i > 0 && n_pos != a->n_pos) {
            ablate_free(a);
            return hs_fail(err, HS_ERR_INPUT, "mean ablation: reference hook_z lengths differ between layers");
        }
        a->n_pos = n_pos;
        a->pos_wise = pos_wise != 0;
        double *acc = calloc((size_t)(n_pos * dh), sizeof *acc);
        a->means[i] = malloc((size_t)(n_pos * dh) * sizeof(float));
        if (acc == NULL || a->means[i] == NULL) {
            free(acc);
            ablate_free(a);
            return hs_fail(err, HS_ERR_NOMEM, "out of memory");
        }
        for (int64_t b = 0; b < B; b++)
            for (int64_t p = 0; p < T; p++) {
                const float *z = e->data + ((b * T + p) * H + heads[i].head) * dh;
                double *dst = acc + (pos_wise ? p : 0) * dh;
                for (int64_t d = 0; d < dh; d++) dst[d] += z[d];
            }
        const double cnt = pos_wise ? (double)B : (double)(B * T);
        for (int64_t j = 0; j < n_pos * dh; j++) a->means[i][j] = (float)(acc[j] / cnt);
        free(acc);
    }
    return hs_hooks_add_trusted(hk, "blocks.*.attn.hook_z", ablate_hook, a, ablate_free, NULL, err);
}

/* ------------------------------------------------------------------------ */
/* Activation patching                                                       */

static int same_shape(const hs_cache_entry *e, const int64_t *shape, int ndim)
{
    if (e->ndim != ndim) return 0;
    for (int i = 0; i < ndim; i++)
        if (e->shape[i] != shape[i]) return 0;
    return 1;
}

static int patch_hook(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    const hs_cache_entry *e = hs_cache_get((const hs_cache *)ctx, name);
    if (e == NULL || !same_shape(e, shape, ndim)) return -1;
    memcpy(data, e->data, e->numel * sizeof(float));
    return 1;
}

/* "[1,5,4,16]" */
static void shape_text(char *out, size_t n, const int64_t *shape, int ndim)
{
    size_t k = (size_t)snprintf(out, n, "[");
    for (int i = 0; i < ndim && k < n; i++)
        k += (size_t)snprintf(out + k, n - k, i ? ",%lld" : "%lld", (long long)shape[i]);
    if (k < n) snprintf(out + k, n - k, "]");
}

/* Why a patch aborted: no clean value for the point, or another shape. */
static int patch_explain_cache(const hs_cache *clean, const char *name, const int64_t *shape,
                               int ndim, hs_error *err)
{
    const hs_cache_entry *e = hs_cache_get(clean, name);
    if (e == NULL) {
        hs_fail(err, HS_ERR_CALLBACK, "patch: the clean cache has no '%s' (cache it in the clean run)",
                name);
        return 1;
    }
    if (!same_shape(e, shape, ndim)) {
        char here[96], there[96];
        shape_text(here, sizeof here, shape, ndim);
        shape_text(there, sizeof there, e->shape, e->ndim);
        hs_fail(err, HS_ERR_CALLBACK, "patch: '%s' is %s in this run but %s in the clean cache "
                "(runs of different shapes)", name, here, there);
        return 1;
    }
    return 0;
}

static int patch_explain(void *ctx, const char *name, const int64_t *shape, int ndim,
                         hs_error *err)
{
    return patch_explain_cache((const hs_cache *)ctx, name, shape, ndim, err);
}

hs_status hs_hooks_add_patch(hs_hooks *hk, const hs_cache *clean, const char *pattern,
                             hs_error *err)
{
    if (clean == NULL) return hs_fail(err, HS_ERR_INPUT, "patch: no clean cache");
    return hs_hooks_add_trusted(hk, pattern, patch_hook, (void *)clean, NULL, patch_explain, err);
}

typedef struct {
    const hs_cache *clean;
    hs_head head;
    int pos;
} patch_head_ctx;

static int patch_head_hook(const char *name, const int64_t *shape, int ndim, float *data,
                           void *ctx)
{
    const patch_head_ctx *pc = ctx;
    const hs_cache_entry *e = hs_cache_get(pc->clean, name);
    if (e == NULL || !same_shape(e, shape, ndim) || ndim != 4) return -1;
    const int64_t B = shape[0], T = shape[1], H = shape[2], dh = shape[3];
    if (pc->pos >= T || pc->head.head >= H) return -1;
    for (int64_t b = 0; b < B; b++)
        for (int64_t p = 0; p < T; p++) {
            if (pc->pos >= 0 && p != pc->pos) continue;
            size_t off = (size_t)(((b * T + p) * H + pc->head.head) * dh);
            memcpy(data + off, e->data + off, (size_t)dh * sizeof(float));
        }
    return 1;
}

static int patch_head_explain(void *ctx, const char *name, const int64_t *shape, int ndim,
                              hs_error *err)
{
    const patch_head_ctx *pc = ctx;
    if (patch_explain_cache(pc->clean, name, shape, ndim, err)) return 1;
    hs_fail(err, HS_ERR_CALLBACK, "patch: head L%dH%d or position %d is outside '%s'",
            pc->head.layer, pc->head.head, pc->pos, name);
    return 1;
}

hs_status hs_hooks_add_patch_head(hs_hooks *hk, const hs_cache *clean, hs_head head, int pos,
                                  hs_error *err)
{
    if (clean == NULL) return hs_fail(err, HS_ERR_INPUT, "patch: no clean cache");
    if (head.layer < 0 || head.head < 0 || pos < -1)
        return hs_fail(err, HS_ERR_INPUT, "patch: bad head L%dH%d or position %d", head.layer,
                       head.head, pos);
    patch_head_ctx *pc = malloc(sizeof *pc);
    if (pc == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    pc->clean = clean;
    pc->head = head;
    pc->pos = pos;
    char pat[64];
    snprintf(pat, sizeof pat, "blocks.%d.attn.hook_z", head.layer);
    return hs_hooks_add_trusted(hk, pat, patch_head_hook, pc, free, patch_head_explain, err);
}

/* ------------------------------------------------------------------------ */
/* Path patching                                                             */

typedef struct {
    int head;
    int64_t B, T, dh;
    float *in[3]; /* q, k, v replacements (B,T,dh) or NULL */
} path_ctx;

static void path_free(void *p)
{
    path_ctx *pc = p;
    if (pc == NULL) return;
    for (int i = 0; i < 3; i++) free(pc->in[i]);
    free(pc);
}

static int path_hook(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    const path_ctx *pc = ctx;
    size_t len = strlen(name);
    int which = -1;
    if (len >= 2 && name[len - 2] == '_') {
        char c = name[len - 1];
        which = c == 'q' ? 0 : c == 'k' ? 1 : c == 'v' ? 2 : -1;
    }
    if (which < 0 || pc->in[which] == NULL) return 0;
    if (ndim != 4 || shape[0] != pc->B || shape[1] != pc->T || shape[3] != pc->dh ||
        pc->head >= shape[2])
        return -1;
    const int64_t H = shape[2];
    for (int64_t bt = 0; bt < pc->B * pc->T; bt++)
        memcpy(data + (bt * H + pc->head) * pc->dh, pc->in[which] + bt * pc->dh,
               (size_t)pc->dh * sizeof(float));
    return 1;
}

/* A row xi (D floats) normalised in place: (xi - mu) / s, times the weight w
 * and plus the bias b (NULL: none), in double. */
static void ln_apply(float *xi, int D, double mu, double s, const float *w, const float *b)
{
    for (int d = 0; d < D; d++) {
        double v = (xi[d] - mu) / s;
        if (w) v *= w[d];
        if (b) v += b[d];
        xi[d] = (float)v;
    }
}

/* The receiver's norm over the BT rows of x (D floats each), in place: each
 * row's mean (center: LayerNorm; else 0, RMSNorm) and variance summed in
 * double in column order, its scale sqrt(var + eps) or frozen[row]. Four
 * rows' sums run side by side, each still in column order, so their
 * additions overlap instead of waiting on one another (the same operations
 * on each row as one row at a time: the same bits; ~4% of `circuit`'s CPU
 * was these sums, one row at a time). */
static void ln_rows(float *x, int64_t BT, int D, int center, const float *frozen, double eps,
                    const float *w, const float *b)
{
    int64_t bt = 0;
    for (; bt + 4 <= BT; bt += 4) {
        float *r0 = x + bt * D, *r1 = r0 + D, *r2 = r1 + D, *r3 = r2 + D;
        double m0 = 0.0, m1 = 0.0, m2 = 0.0, m3 = 0.0;
        if (center) {
            for (int d = 0; d < D; d++) {
                m0 += r0[d];
                m1 += r1[d];
                m2 += r2[d];
                m3 += r3[d];
            }
            m0 /= D;
            m1 /= D;
            m2 /= D;
            m3 /= D;
        }
        double v0 = 0.0, v1 = 0.0, v2 = 0.0, v3 = 0.0;
        for (int d = 0; d < D; d++) {
            const double a0 = r0[d] - m0, a1 = r1[d] - m1, a2 = r2[d] - m2, a3 = r3[d] - m3;
            v0 += a0 * a0;
            v1 += a1 * a1;
            v2 += a2 * a2;
            v3 += a3 * a3;
        }
        v0 /= D;
        v1 /= D;
        v2 /= D;
        v3 /= D;
        ln_apply(r0, D, m0, frozen ? (double)frozen[bt] : sqrt(v0 + eps), w, b);
        ln_apply(r1, D, m1, frozen ? (double)frozen[bt + 1] : sqrt(v1 + eps), w, b);
        ln_apply(r2, D, m2, frozen ? (double)frozen[bt + 2] : sqrt(v2 + eps), w, b);
        ln_apply(r3, D, m3, frozen ? (double)frozen[bt + 3] : sqrt(v3 + eps), w, b);
    }
    for (; bt < BT; bt++) {
        float *xi = x + bt * D;
        double mu = 0.0, var = 0.0;
        if (center) {
            for (int d = 0; d < D; d++) mu += xi[d];
            mu /= D;
        }
        for (int d = 0; d < D; d++) var += (xi[d] - mu) * (xi[d] - mu);
        var /= D;
        ln_apply(xi, D, mu, frozen ? (double)frozen[bt] : sqrt(var + eps), w, b);
    }
}

hs_status hs_hooks_add_path_patch(hs_hooks *hk, const hs_model *m, const hs_cache *clean,
                                  const hs_cache *corr, hs_head sender, hs_head receiver,
                                  int inputs, hs_ln_mode ln, hs_error *err)
{
    return hs_hooks_add_path_patch_senders(hk, m, clean, corr, &sender, 1, receiver, inputs, ln, err);
}

hs_status hs_path_patch_inputs(const hs_model *m, const hs_cache *clean, const hs_cache *corr,
                               const hs_head *senders, int n_senders, hs_head receiver, int inputs,
                               hs_ln_mode ln, float *in[3], hs_error *err)
{
    for (int w = 0; w < 3; w++) in[w] = NULL;
    const hs_config *c = &m->cfg;
    const int D = c->d_model, H = c->n_heads, dh = c->d_head;
    hs_status st = check_head(m, receiver, err);
    if (st != HS_OK) return st;
    if (senders == NULL || n_senders < 1) return hs_fail(err, HS_ERR_INPUT, "path patch: no sender");
    if (hs_kv_heads(c) != H && (inputs & 6)) /* a key/value head is its whole group's */
        return hs_fail(err, HS_ERR_INPUT, "path patch: with grouped-query attention a head's keys "
                       "and values are shared by %d heads; patch the receiver's queries (q) only",
                       H / hs_kv_heads(c));
    for (int i = 0; i < n_senders; i++) {
        const hs_head sender = senders[i];
        if ((st = check_head(m, sender, err)) != HS_OK) return st;
        if (receiver.layer <= sender.layer)
            return hs_fail(err, HS_ERR_INPUT, "path patch: receiver L%dH%d must be in a later layer than sender L%dH%d",
                           receiver.layer, receiver.head, sender.layer, sender.head);
    }
    if (inputs <= 0 || inputs > 7) return hs_fail(err, HS_ERR_INPUT, "path patch: inputs must be a non-empty set of HS_INPUT_Q|K|V");
    if ((inputs & (HS_INPUT_Q | HS_INPUT_K)) && c->attn != HS_ATTN_SOFTMAX)
        return hs_fail(err, HS_ERR_INPUT, "path patch: a uniform-attention model has no query/key input");
    if (hs_config_nonadditive(c))
        return hs_fail(err, HS_ERR_INPUT, "path patch: a sender's direct path to the receiver is "
                       "not a term of its residual with %s", hs_config_nonadditive(c));
    const hs_cache_entry *rp = hs_cache_getf(corr, "blocks.%d.hook_resid_pre", receiver.layer);
    const int has_ln = hs_ln1_in_front(c);
    const hs_cache_entry *sc = NULL;
    for (int i = 0; i < n_senders; i++) {
        const hs_cache_entry *zc = hs_cache_getf(clean, "blocks.%d.attn.hook_z", senders[i].layer);
        const hs_cache_entry *zr = hs_cache_getf(corr, "blocks.%d.attn.hook_z", senders[i].layer);
        if (zc == NULL || zr == NULL || rp == NULL || !same_shape(zc, zr->shape, zr->ndim) ||
            zr->ndim != 4 || rp->ndim != 3 || rp->shape[0] != zr->shape[0] || rp->shape[1] != zr->shape[1])
            return hs_fail(err, HS_ERR_INPUT,
                           "path patch: need blocks.%d.attn.hook_z in both caches (same shape) and blocks.%d.hook_resid_pre in the corrupted one",
                           senders[i].layer, receiver.layer);
    }
    if (ln == HS_LN_FROZEN && has_ln) {
        sc = hs_cache_getf(corr, "blocks.%d.ln1.hook_scale", receiver.layer);
        if (sc == NULL || sc->numel != (size_t)(rp->shape[0] * rp->shape[1]))
            return hs_fail(err, HS_ERR_INPUT, "path patch: frozen LN needs blocks.%d.ln1.hook_scale in the corrupted cache",
                           receiver.layer);
    }
    const int64_t B = rp->shape[0], T = rp->shape[1], BT = B * T;
    const hs_block_params *bp2 = &m->params.blocks[receiver.layer];

    float *x = malloc((size_t)(BT * D) * sizeof(float));
    float *dz = malloc((size_t)(BT * dh) * sizeof(float));
    if (x == NULL || dz == NULL) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    /* x = resid_pre_corr + sum over senders A of (z_clean - z_corr)^A W_O^A */
    memcpy(x, rp->data, (size_t)(BT * D) * sizeof(float));
    for (int i = 0; i < n_senders; i++) {
        const hs_head sender = senders[i];
        const hs_cache_entry *zc = hs_cache_getf(clean, "blocks.%d.attn.hook_z", sender.layer);
        const hs_cache_entry *zr = hs_cache_getf(corr, "blocks.%d.attn.hook_z", sender.layer);
        for (int64_t bt = 0; bt < BT; bt++)
            for (int d = 0; d < dh; d++) {
                size_t o = (size_t)((bt * H + sender.head) * dh + d);
                dz[bt * dh + d] = zc->data[o] - zr->data[o];
            }
        hs_sgemm(0, 0, (int)BT, D, dh, 1.0f, dz, dh,
                    m->params.blocks[sender.layer].W_O + (size_t)sender.head * dh * D, D, 1.0f, x, D);
    }
    /* LN1 of the receiver's layer, own scale or frozen */
    if (has_ln)
        ln_rows(x, BT, D, c->norm == HS_NORM_LAYERNORM, sc ? sc->data : NULL, (double)c->eps, bp2->ln1_w,
                bp2->ln1_b);
    for (int w = 0; w < 3; w++) {
        if (!(inputs & (1 << w))) continue;
        int ldw; /* W_Q/W_K/W_V in the table or packed in place (hs_head_qkv) */
        const float *W = hs_head_qkv(m, receiver.layer, w, receiver.head, &ldw);
        const float *bW = w == 0 ? bp2->b_Q : w == 1 ? bp2->b_K : bp2->b_V;
        in[w] = malloc((size_t)(BT * dh) * sizeof(float));
        if (in[w] == NULL) {
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
            goto fail;
        }
        hs_sgemm(0, 0, (int)BT, dh, D, 1.0f, x, D, W, ldw, 0.0f, in[w], dh);
        if (bW)
            for (int64_t bt = 0; bt < BT; bt++)
                for (int d = 0; d < dh; d++) in[w][bt * dh + d] += bW[(w == 0 ? receiver.head : hs_kv_head(c, receiver.head)) * dh + d];
    }
    free(x);
    free(dz);
    return HS_OK;
fail:
    free(x);
    free(dz);
    for (int w = 0; w < 3; w++) {
        free(in[w]);
        in[w] = NULL;
    }
    return st;
}

hs_status hs_hooks_add_path_patch_senders(hs_hooks *hk, const hs_model *m, const hs_cache *clean,
                                          const hs_cache *corr, const hs_head *senders, int n_senders,
                                          hs_head receiver, int inputs, hs_ln_mode ln, hs_error *err)
{
    path_ctx *pc = calloc(1, sizeof *pc);
    if (pc == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    hs_status st = hs_path_patch_inputs(m, clean, corr, senders, n_senders, receiver, inputs, ln, pc->in, err);
    if (st != HS_OK) {
        free(pc);
        return st;
    }
    const hs_cache_entry *rp = hs_cache_getf(corr, "blocks.%d.hook_resid_pre", receiver.layer);
    pc->head = receiver.head;
    pc->B = rp->shape[0];
    pc->T = rp->shape[1];
    pc->dh = m->cfg.d_head;
    char pat[64];
    snprintf(pat, sizeof pat, "blocks.%d.attn.hook_*", receiver.layer);
    return hs_hooks_add_trusted(hk, pat, path_hook, pc, path_free, NULL, err);
}

/* ------------------------------------------------------------------------ */
/* Metrics                                                                   */

double hs_logit_diff(const float *logits, int nb, int t, int V, int pos, const int *a,
                     const int *b)
{
    if (pos < 0) pos += t;
    if (logits == NULL || nb < 1 || pos < 0 || pos >= t) return NAN;
    double sum = 0.0;
    for (int r = 0; r < nb; r++) {
        if (a[r] < 0 || a[r] >= V || b[r] < 0 || b[r] >= V) return NAN;
        const float *lg = logits + ((size_t)r * t + pos) * V;
        sum += (double)lg[a[r]] - (double)lg[b[r]];
    }
    return sum / nb;
}

double hs_patch_metric(double ld_patched, double ld_corr, double ld_clean)
{
    double den = ld_clean - ld_corr;
    if (den == 0.0) return NAN;
    return (ld_patched - ld_corr) / den;
}
