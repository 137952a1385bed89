/*
 * probe/ungroup.c -- a grouped-query model as TransformerLens runs it with
 * cfg.ungroup_grouped_query_attention: every query head with its own key and
 * value (hs_model_ungrouped, probe.h).
 */
#include "probe/probe.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* dst (H, n) <- src (Hkv, n) with row h = src row h / (H / Hkv)
 * (torch.repeat_interleave over the head axis, transformers' repeat_kv). */
static void repeat_heads(float *dst, const float *src, int H, int Hkv, size_t n)
{
    const int group = H / Hkv;
    for (int h = 0; h < H; h++) memcpy(dst + (size_t)h * n, src + (size_t)(h / group) * n, n * sizeof(float));
}

hs_status hs_model_ungrouped(const hs_model *m, hs_model **out, hs_error *err)
{
    *out = NULL;
    const hs_config *c = &m->cfg;
    const int H = c->n_heads, Hkv = hs_kv_heads(c), L = c->n_layers;
    if (Hkv == H) return hs_fail(err, HS_ERR_INPUT, "model ungrouped: the model has no grouped-query attention");
    if (Hkv <= 0 || H % Hkv != 0)
        return hs_fail(err, HS_ERR_CONFIG, "model ungrouped: n_key_value_heads %d does not divide n_heads %d", Hkv,
                       H);
    const size_t D = (size_t)c->d_model, dh = (size_t)c->d_head;
    /* per layer: W_K (softmax only) and W_V (H, D, dh), b_K and b_V (H, dh) when present */
    size_t per_layer = 0;
    for (int l = 0; l < L; l++) {
        const hs_block_params *bp = &m->params.blocks[l];
        per_layer += (bp->W_K ? (size_t)H * D * dh : 0) + (bp->W_V ? (size_t)H * D * dh : 0) +
                     (bp->b_K ? (size_t)H * dh : 0) + (bp->b_V ? (size_t)H * dh : 0);
    }
    const size_t head = (sizeof(hs_model) + 63) / 64 * 64;
    const size_t floats = (per_layer + 15) / 16 * 16;
    if (floats > (SIZE_MAX - head) / sizeof(float)) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    const size_t bytes = (head + floats * sizeof(float) + 63) / 64 * 64;
    void *mem = aligned_alloc(64, bytes);
    if (mem == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory (%zu bytes for the ungrouped keys and values)",
                                    bytes);
    memset(mem, 0, head);
    hs_model *v = mem;
    float *w = (float *)((char *)mem + head);
    v->cfg = *c;
    v->cfg.n_key_value_heads = 0;
    v->params = m->params;
    v->param_mem = m->param_mem;
    v->n_params = m->n_params;
    v->tl_processed = m->tl_processed;
    for (int l = 0; l < L; l++) {
        const hs_block_params *bp = &m->params.blocks[l];
        hs_block_params *vp = &v->params.blocks[l];
        const float *src[4] = {bp->W_K, bp->W_V, bp->b_K, bp->b_V};
        float **dst[4] = {&vp->W_K, &vp->W_V, &vp->b_K, &vp->b_V};
        for (int i = 0; i < 4; i++) {
            if (src[i] == NULL) continue;
            const size_t n = i < 2 ? D * dh : dh;
            repeat_heads(w, src[i], H, Hkv, n);
            *dst[i] = w;
            w += (size_t)H * n;
        }
    }
    *out = v;
    return HS_OK;
}
