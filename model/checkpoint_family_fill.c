/*
 * model/checkpoint_family_fill.c -- the tensors of the Hugging Face families
 * besides GPT-2 (the seam: checkpoint_internal.h, "The other Hugging Face
 * families"), each family's state dict as its modeling_*.py names and shapes
 * it (transformers v4.48), onto the one parameter table (DESIGN.md
 * "Checkpoint", the layout table).
 *
 * nn.Linear weights are [out, in] (y = x W^T + b), the transpose of the
 * table's row-vector matrices, so they are copied, transposed, through a
 * bounded chunk (no whole second copy):
 *   W_in, W_out, W_gate, W_O          = weight^T (W_O (H, dh, D) is (H dh, D))
 *   W_Q / W_K / W_V (n, D, dh)        W[h][m][e] = weight[h dh + e][m]
 *   GPT-NeoX query_key_value [3 H dh, D], per head interleaved (view(H, 3 dh):
 *     q, k, v slices of dh): W_p[h][m][e] = weight[h 3 dh + p dh + e][m];
 *     its bias b_p[h][e] = bias[h 3 dh + p dh + e]
 *   W_U (D, V) = lm_head / embed_out [V, D] transposed: read in place as
 *     W_U_T when F32 and aligned (as GPT-2's), else copied transposed.
 * Vectors (norm weights and biases; q/k/v biases [n dh] = (n, dh)) and the
 * embeddings (W_E [V, D], GPT-Neo's W_pos [n_ctx, D]) are the table's own
 * bytes: used in place from the mapped file when F32 and aligned
 * (hs_ckpt_in_place), else read into the table. Tied unembeddings read W_E
 * transposed (W_U_T = W_E). The biases a family lacks (Llama's, GPT-Neo's
 * q/k/v, Qwen2's o_proj and MLP, b_U) are zeros.
 *
 * A file tensor that is not the family's (or not under the config's switches:
 * a q_proj.bias with attention_bias false), a wrong shape, a tensor given
 * twice, or a missing one is refused in one line naming it. The buffers:
 * GPT-Neo's h.{l}.attn.attention.bias must be the causal mask (a global
 * layer) or the local mask of window_size (a local one), GPT-NeoX's
 * layers.{l}.attention.bias the causal mask; masked_bias and
 * rotary_emb.inv_freq are not read (transformers recomputes inv_freq).
 */
#include "model/model.h"
#include "model/checkpoint.h"
#include "model/checkpoint_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How a file tensor lands in the table. */
typedef enum {
    K_SAME,    /* the table entry's bytes (a reshape at most) */
    K_LINEAR,  /* nn.Linear [out, in] -> the entry as (in, out): transposed */
    K_HEADS,   /* [n dh, D] -> (n, D, dh) */
    K_NEOX_W,  /* [3 H dh, D] per head q|k|v -> W_Q, W_K, W_V (H, D, dh) */
    K_NEOX_B,  /* [3 H dh] -> b_Q, b_K, b_V (H, dh) */
    K_UNEMBED  /* [V, D] -> W_U (D, V) */
} kind_t;

/* When the family has the tensor. */
typedef enum { ALWAYS, IF_QKV_BIAS, IF_O_BIAS, IF_UNTIED } cond_t;

typedef struct {
    const char *hf; /* the name after the prefix (and "h.<l>." / "layers.<l>.") */
    const char *tl; /* the table name (%d = layer) */
    kind_t kind;
    cond_t cond;
} spec_t;

typedef struct {
    const char *prefix;   /* the model's prefix, optional in the file */
    const char *block;    /* a block's names: "<block><l>." */
    const char *unembed;  /* the unembedding, never under the prefix */
    const spec_t *top, *blk;
    int n_top, n_blk;
} family_t;

static const spec_t NEO_TOP[] = {
    {"wte.weight", "embed.W_E", K_SAME, ALWAYS}, {"wpe.weight", "pos_embed.W_pos", K_SAME, ALWAYS},
    {"ln_f.weight", "ln_final.w", K_SAME, ALWAYS}, {"ln_f.bias", "ln_final.b", K_SAME, ALWAYS},
};
static const spec_t NEO_BLK[] = {
    {"ln_1.weight", "blocks.%d.ln1.w", K_SAME, ALWAYS}, {"ln_1.bias", "blocks.%d.ln1.b", K_SAME, ALWAYS},
    {"attn.attention.q_proj.weight", "blocks.%d.attn.W_Q", K_HEADS, ALWAYS},
    {"attn.attention.k_proj.weight", "blocks.%d.attn.W_K", K_HEADS, ALWAYS},
    {"attn.attention.v_proj.weight", "blocks.%d.attn.W_V", K_HEADS, ALWAYS},
    {"attn.attention.out_proj.weight", "blocks.%d.attn.W_O", K_LINEAR, ALWAYS},
    {"attn.attention.out_proj.bias", "blocks.%d.attn.b_O", K_SAME, ALWAYS},
    {"ln_2.weight", "blocks.%d.ln2.w", K_SAME, ALWAYS}, {"ln_2.bias", "blocks.%d.ln2.b", K_SAME, ALWAYS},
    {"mlp.c_fc.weight", "blocks.%d.mlp.W_in", K_LINEAR, ALWAYS},
    {"mlp.c_fc.bias", "blocks.%d.mlp.b_in", K_SAME, ALWAYS},
    {"mlp.c_proj.weight", "blocks.%d.mlp.W_out", K_LINEAR, ALWAYS},
    {"mlp.c_proj.bias", "blocks.%d.mlp.b_out", K_SAME, ALWAYS},
};
static const spec_t NEOX_TOP[] = {
    {"embed_in.weight", "embed.W_E", K_SAME, ALWAYS},
    {"final_layer_norm.weight", "ln_final.w", K_SAME, ALWAYS},
    {"final_layer_norm.bias", "ln_final.b", K_SAME, ALWAYS},
};
static const spec_t NEOX_BLK[] = {
    {"input_layernorm.weight", "blocks.%d.ln1.w", K_SAME, ALWAYS},
    {"input_layernorm.bias", "blocks.%d.ln1.b", K_SAME, ALWAYS},
    {"post_attention_layernorm.weight", "blocks.%d.ln2.w", K_SAME, ALWAYS},
    {"post_attention_layernorm.bias", "blocks.%d.ln2.b", K_SAME, ALWAYS},
    {"attention.query_key_value.weight", "blocks.%d.attn.W_Q", K_NEOX_W, ALWAYS},
    {"attention.query_key_value.bias", "blocks.%d.attn.b_Q", K_NEOX_B, IF_QKV_BIAS},
    {"attention.dense.weight", "blocks.%d.attn.W_O", K_LINEAR, ALWAYS},
    {"attention.dense.bias", "blocks.%d.attn.b_O", K_SAME, IF_O_BIAS},
    {"mlp.dense_h_to_4h.weight", "blocks.%d.mlp.W_in", K_LINEAR, ALWAYS},
    {"mlp.dense_h_to_4h.bias", "blocks.%d.mlp.b_in", K_SAME, ALWAYS},
    {"mlp.dense_4h_to_h.weight", "blocks.%d.mlp.W_out", K_LINEAR, ALWAYS},
    {"mlp.dense_4h_to_h.bias", "blocks.%d.mlp.b_out", K_SAME, ALWAYS},
};
static const spec_t LLAMA_TOP[] = {
    {"embed_tokens.weight", "embed.W_E", K_SAME, ALWAYS}, {"norm.weight", "ln_final.w", K_SAME, ALWAYS},
};
static const spec_t LLAMA_BLK[] = {
    {"input_layernorm.weight", "blocks.%d.ln1.w", K_SAME, ALWAYS},
    {"self_attn.q_proj.weight", "blocks.%d.attn.W_Q", K_HEADS, ALWAYS},
    {"self_attn.k_proj.weight", "blocks.%d.attn.W_K", K_HEADS, ALWAYS},
    {"self_attn.v_proj.weight", "blocks.%d.attn.W_V", K_HEADS, ALWAYS},
    {"self_attn.q_proj.bias", "blocks.%d.attn.b_Q", K_SAME, IF_QKV_BIAS},
    {"self_attn.k_proj.bias", "blocks.%d.attn.b_K", K_SAME, IF_QKV_BIAS},
    {"self_attn.v_proj.bias", "blocks.%d.attn.b_V", K_SAME, IF_QKV_BIAS},
    {"self_attn.o_proj.weight", "blocks.%d.attn.W_O", K_LINEAR, ALWAYS},
    {"self_attn.o_proj.bias", "blocks.%d.attn.b_O", K_SAME, IF_O_BIAS},
    {"post_attention_layernorm.weight", "blocks.%d.ln2.w", K_SAME, ALWAYS},
    {"mlp.gate_proj.weight", "blocks.%d.mlp.W_gate", K_LINEAR, ALWAYS},
    {"mlp.up_proj.weight", "blocks.%d.mlp.W_in", K_LINEAR, ALWAYS},
    {"mlp.down_proj.weight", "blocks.%d.mlp.W_out", K_LINEAR, ALWAYS},
};
#define N(a) (int)(sizeof a / sizeof a[0])
static const family_t NEO = {"transformer.", "h.", "lm_head.weight", NEO_TOP, NEO_BLK, N(NEO_TOP), N(NEO_BLK)};
static const family_t NEOX = {"gpt_neox.", "layers.", "embed_out.weight", NEOX_TOP, NEOX_BLK, N(NEOX_TOP),
                              N(NEOX_BLK)};
static const family_t LLAMA = {"model.", "layers.", "lm_head.weight", LLAMA_TOP, LLAMA_BLK, N(LLAMA_TOP),
                               N(LLAMA_BLK)};
static const spec_t UNEMBED = {"", "unembed.W_U", K_UNEMBED, IF_UNTIED};

static const family_t *family_of(hs_hf_family f)
{
    return f == HS_HF_GPT_NEO ? &NEO : f == HS_HF_GPT_NEOX ? &NEOX : &LLAMA;
}

/* name without prefix p, when it has it. */
static const char *unprefixed(const char *name, const char *p)
{
    const size_t n = strlen(p);
    return strncmp(name, p, n) == 0 ? name + n : name;
}

/* "<block><l>.<rest>": *l and rest, NULL when name is not a block's. */
static const char *block_part(const char *name, const char *block, int *l)
{
    const size_t n = strlen(block);
    if (strncmp(name, block, n) != 0 || name[n] < '0' || name[n] > '9') return NULL;
    const char *p = name + n;
    long v = 0;
    while (*p >= '0' && *p <= '9' && v < 1000000) v = v * 10 + (*p++ - '0');
    if (*p != '.') return NULL;
    *l = (int)v;
    return p + 1;
}

int hs_checkpoint_family_recognises(const hs_st_file *st)
{
    static const char *const MARKS[] = {
        "gpt_neox.embed_in.weight", "embed_in.weight", "model.embed_tokens.weight", "embed_tokens.weight",
        "transformer.h.0.attn.attention.q_proj.weight", "h.0.attn.attention.q_proj.weight",
    };
    for (int i = 0; i < N(MARKS); i++)
        if (hs_st_find(st, MARKS[i]) >= 0) return 1;
    return 0;
}

int hs_checkpoint_family_is_buffer(const char *name)
{
    int l;
    const char *r = block_part(unprefixed(name, "transformer."), "h.", &l);
    if (r) return strcmp(r, "attn.attention.bias") == 0 || strcmp(r, "attn.attention.masked_bias") == 0;
    r = block_part(unprefixed(unprefixed(name, "gpt_neox."), "model."), "layers.", &l);
    return r && (strcmp(r, "attention.bias") == 0 || strcmp(r, "attention.masked_bias") == 0 ||
                 strcmp(r, "attention.rotary_emb.inv_freq") == 0 ||
                 strcmp(r, "self_attn.rotary_emb.inv_freq") == 0);
}

/* ------------------------------------------------------------------------ */
/* Resolving a file tensor                                                   */

/* One file tensor resolved: the spec, its layer, the table entries. */
typedef struct {
    const spec_t *spec;
    int slot;       /* which expected tensor: top index, or n_top + block index * L + l */
    int ks[3];      /* table entries (W_Q, W_K, W_V for NeoX's fused ones; else ks[0]) */
    int n_ks;
    int skip;       /* 1: not read (an unembedding beside tie_word_embeddings) */
} target_t;

static int entry(const hs_model *m, const char *fmt, int l)
{
    char nm[64];
    snprintf(nm, sizeof nm, fmt, l);
    const hs_tensor_info *t = hs_model_find_tensor(m, nm);
    return t ? (int)(t - m->tensors) : -1;
}

static int cond_holds(cond_t c, const hs_hf_info *info)
{
    return c == ALWAYS || (c == IF_QKV_BIAS && info->qkv_bias) || (c == IF_O_BIAS && info->o_bias) ||
           (c == IF_UNTIED && !info->tied);
}

/* The shape a spec's tensor has in the file, from its table entry t. */
static int file_shape(kind_t k, const hs_tensor_info *t, int64_t shape[2])
{
    const int64_t last = t->shape[t->ndim - 1], rest = (int64_t)t->numel / (last ? last : 1);
    switch (k) {
    case K_SAME:
        if (t->ndim == 2 && (strcmp(t->name, "embed.W_E") == 0 || strcmp(t->name, "pos_embed.W_pos") == 0)) {
            shape[0] = t->shape[0];
            shape[1] = t->shape[1];
            return 2;
        }
        shape[0] = (int64_t)t->numel;
        return 1;
    case K_LINEAR: /* (in..., out) -> [out, in] */
        shape[0] = last;
        shape[1] = rest;
        return 2;
    case K_HEADS: /* (n, D, dh) -> [n dh, D] */
        shape[0] = t->shape[0] * t->shape[2];
        shape[1] = t->shape[1];
        return 2;
    case K_NEOX_W:
        shape[0] = 3 * t->shape[0] * t->shape[2];
        shape[1] = t->shape[1];
        return 2;
    case K_NEOX_B:
        shape[0] = 3 * (int64_t)t->numel;
        return 1;
    case K_UNEMBED: /* (D, V) -> [V, D] */
        shape[0] = t->shape[1];
        shape[1] = t->shape[0];
        return 2;
    }
    return 0;
}

static void fmt_dims(char *buf, size_t cap, const int64_t *shape, int ndim)
{
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < ndim && k < cap; d++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", d ? "," : "", (long long)shape[d]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

/* Weight i of src resolved into *t, its shape checked, its entries marked
 * filled and its slot seen. */
static hs_status claim(const hs_ckpt_src *src, int i, const family_t *fam, const hs_hf_info *info,
                       const hs_model *m, target_t *t, unsigned char *filled, unsigned char *seen,
                       int *prefixed, hs_error *err)
{
    const char *name = src->x.st.names[i];
    const int L = m->cfg.n_layers;
    memset(t, 0, sizeof *t);
    int l = 0;
    if (strcmp(name, fam->unembed) == 0) {
        t->spec = &UNEMBED;
        t->slot = -1;
        t->skip = info->tied;
    } else {
        const char *bare = unprefixed(name, fam->prefix), *rest;
        *prefixed |= bare != name;
        for (int k = 0; k < fam->n_top && !t->spec; k++)
            if (strcmp(bare, fam->top[k].hf) == 0) {
                t->spec = &fam->top[k];
                t->slot = k;
            }
        if (!t->spec && (rest = block_part(bare, fam->block, &l)) != NULL && l < L)
            for (int k = 0; k < fam->n_blk && !t->spec; k++)
                if (strcmp(rest, fam->blk[k].hf) == 0) {
                    t->spec = &fam->blk[k];
                    t->slot = fam->n_top + k * L + l;
                }
    }
    if (t->spec == NULL || (!t->skip && !cond_holds(t->spec->cond, info)))
        return hs_fail(err, HS_ERR_FORMAT, "%s: unknown tensor '%.80s': not part of the %s "
                       "config.json describes (num_hidden_layers %d%s)", src->fname, name,
                       hs_hf_family_name(info->family), L,
                       t->spec && t->spec->cond == IF_QKV_BIAS ? ", no q/k/v biases"
                       : t->spec && t->spec->cond == IF_O_BIAS ? ", no output projection bias" : "");
    t->ks[0] = entry(m, t->spec->tl, l);
    HS_ASSERT(t->ks[0] >= 0); /* the config made every entry a spec names */
    t->n_ks = 1;
    if (t->spec->kind == K_NEOX_W || t->spec->kind == K_NEOX_B) {
        char fmt[64];
        const size_t n = strlen(t->spec->tl);
        for (int p = 1; p < 3; p++) {
            snprintf(fmt, sizeof fmt, "%.*s%c", (int)n - 1, t->spec->tl, "QKV"[p]);
            t->ks[p] = entry(m, fmt, l);
            HS_ASSERT(t->ks[p] >= 0);
        }
        t->n_ks = 3;
    }
    int64_t want[2];
    const int nd = file_shape(t->spec->kind, &m->tensors[t->ks[0]], want);
    int same = src->x.st.ndim[i] == nd;
    for (int d = 0; same && d < nd; d++) same = src->x.st.shape[i][d] == want[d];
    if (!same) {
        char a[128], b[64];
        fmt_dims(a, sizeof a, src->x.st.shape[i], src->x.st.ndim[i]);
        fmt_dims(b, sizeof b, want, nd);
        return hs_fail(err, HS_ERR_FORMAT, "%s: tensor %s has shape %s, config.json expects %s",
                       src->fname, name, a, b);
    }
    if (t->skip) return HS_OK;
    for (int p = 0; p < t->n_ks; p++)
        if (filled[t->ks[p]])
            return hs_fail(err, HS_ERR_FORMAT, "%s: tensor %s is given twice (with and without the "
                           "'%s' prefix?)", src->fname, name, fam->prefix);
    for (int p = 0; p < t->n_ks; p++) filled[t->ks[p]] = 1;
    if (t->slot >= 0) seen[t->slot] = 1;
    return HS_OK;
}

/* The first tensor the family has that the file lacks, named as the file
 * names its others (with or without the prefix). */
static hs_status check_missing(const hs_ckpt_src *src, const family_t *fam, const hs_hf_info *info,
                               const hs_model *m, const unsigned char *seen, int prefixed,
                               const unsigned char *filled, hs_error *err)
{
    const int L = m->cfg.n_layers;
    const char *pre = prefixed ? fam->prefix : "";
    for (int k = 0; k < fam->n_top; k++)
        if (cond_holds(fam->top[k].cond, info) && !seen[k])
            return hs_fail(err, HS_ERR_FORMAT, "%s: tensor %s%s is missing (config.json's %s has it)",
                           src->fname, pre, fam->top[k].hf, hs_hf_family_name(info->family));
    for (int l = 0; l < L; l++)
        for (int k = 0; k < fam->n_blk; k++)
            if (cond_holds(fam->blk[k].cond, info) && !seen[fam->n_top + k * L + l])
                return hs_fail(err, HS_ERR_FORMAT, "%s: tensor %s%s%d.%s is missing (config.json's "
                               "%s has it)", src->fname, pre, fam->block, l, fam->blk[k].hf,
                               hs_hf_family_name(info->family));
    const hs_tensor_info *wu = hs_model_find_tensor(m, "unembed.W_U");
    if (!info->tied && !filled[wu - m->tensors])
        return hs_fail(err, HS_ERR_FORMAT, "%s: tensor %s is missing (tie_word_embeddings is false)",
                       src->fname, fam->unembed);
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */

/* Where row o of a transposed / per-head file tensor goes in the table: its
 * first element (*base) and the stride between its columns (*stride). W:
 * the entries' data (W[0] only, but for NeoX's fused ones). */
static float *row_dst(const target_t *t, const hs_model *m, float *const W[3], int64_t o,
                      size_t *stride)
{
    const hs_tensor_info *e = &m->tensors[t->ks[0]];
    switch (t->spec->kind) {
    case K_LINEAR: /* entry (in, out): dst[i][o] */
    case K_UNEMBED: /* entry (D, V): dst[d][v] */
        *stride = (size_t)e->shape[e->ndim - 1];
        return W[0] + o;
    case K_HEADS: { /* (n, D, dh): row h dh + e -> [h][m][e] */
        const int64_t D = e->shape[1], dh = e->shape[2];
        *stride = (size_t)dh;
        return W[0] + (o / dh) * D * dh + o % dh;
    }
    case K_NEOX_W: { /* row h 3dh + p dh + e -> W_p[h][m][e] */
        const int64_t D = e->shape[1], dh = e->shape[2];
        *stride = (size_t)dh;
        return W[(o / dh) % 3] + (o / (3 * dh)) * D * dh + o % dh;
    }
    default:
        HS_ASSERT(0);
    }
    return NULL;
}

/* The hs_params view slot of table entry k. */
static float **view_slot(hs_model *m, int k)
{
    return (float **)&m->params + m->tensors[k].view;
}

/* Weight i of src (claimed as t) into the table: in place when it can be
 * (the same bytes, or the unembedding as W_U_T), else read, rows of the
 * chunk at a time for the rearranged ones. */
static hs_status read_one(const hs_ckpt_src *src, int i, const target_t *t, hs_model *m,
                          float *chunk, size_t cap, hs_error *err)
{
    const kind_t k = t->spec->kind;
    float *W[3];
    for (int p = 0; p < 3; p++) W[p] = m->param_mem + m->tensors[t->ks[p < t->n_ks ? p : 0]].offset;
    if (k == K_SAME || k == K_UNEMBED) {
        float *in_place = NULL;
        hs_status s = hs_ckpt_in_place(src, i, m, &in_place, err);
        if (s != HS_OK) return s;
        if (in_place && k == K_SAME) {
            *view_slot(m, t->ks[0]) = in_place;
            return HS_OK;
        }
        if (in_place) {
            m->params.W_U_T = in_place;
            m->params.W_U = NULL;
            return HS_OK;
        }
        if (k == K_SAME) return hs_ckpt_read(src, i, 0, m->tensors[t->ks[0]].numel, W[0], err);
    }
    if (k == K_NEOX_B) { /* [3 H dh]: head h's q | k | v, dh each */
        const int64_t dh = m->tensors[t->ks[0]].shape[1], n = (int64_t)src->x.st.numel[i];
        hs_status s = HS_OK;
        for (int64_t j0 = 0; j0 < n && s == HS_OK; j0 += (int64_t)cap) {
            const int64_t nj = n - j0 < (int64_t)cap ? n - j0 : (int64_t)cap;
            s = hs_ckpt_read(src, i, (size_t)j0, (size_t)nj, chunk, err);
            for (int64_t j = j0; j < j0 + nj && s == HS_OK; j++)
                W[(j / dh) % 3][(j / (3 * dh)) * dh + j % dh] = chunk[j - j0];
        }
        return s;
    }
    /* a matrix [rows, cols] of the file, rows scattered with a column stride */
    const int64_t rows = src->x.st.shape[i][0], cols = src->x.st.shape[i][1];
    const int64_t per = (int64_t)cap / cols ? (int64_t)cap / cols : 1;
    HS_ASSERT((size_t)cols <= cap);
    for (int64_t o0 = 0; o0 < rows; o0 += per) {
        const int64_t nr = rows - o0 < per ? rows - o0 : per;
        hs_status s = hs_ckpt_read(src, i, (size_t)(o0 * cols), (size_t)(nr * cols), chunk, err);
        if (s != HS_OK) return s;
        for (int64_t r = 0; r < nr; r++) {
            size_t stride;
            float *d = row_dst(t, m, W, o0 + r, &stride);
            const float *x = chunk + r * cols;
            for (int64_t c = 0; c < cols; c++) d[(size_t)c * stride] = x[c];
        }
    }
    return HS_OK;
}

/* The buffers: GPT-Neo's and GPT-NeoX's attention.bias masks checked
 * (hs_ckpt_check_masks, over the pool). */
static hs_status check_buffers(const hs_ckpt_src *src, const hs_hf_info *info, const hs_model *m,
                               hs_error *err)
{
    hs_ckpt_mask *k = malloc(((size_t)src->x.bufs.n + 1) * sizeof *k);
    if (k == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    int n = 0;
    for (int i = 0; i < src->x.bufs.n; i++) {
        const char *name = src->x.bufs.names[i], *r;
        int l, window = -1;
        if (info->family == HS_HF_GPT_NEO &&
            (r = block_part(unprefixed(name, "transformer."), "h.", &l)) != NULL &&
            strcmp(r, "attn.attention.bias") == 0 && l < m->cfg.n_layers)
            window = m->cfg.attn_local[l] ? m->cfg.window_size : 0;
        if (info->family == HS_HF_GPT_NEOX &&
            (r = block_part(unprefixed(name, "gpt_neox."), "layers.", &l)) != NULL &&
            strcmp(r, "attention.bias") == 0)
            window = 0;
        if (window >= 0) k[n++] = (hs_ckpt_mask){i, 2, window};
    }
    hs_status s = hs_ckpt_check_masks(src, k, n, err);
    free(k);
    return s;
}

hs_status hs_checkpoint_family_fill(const hs_ckpt_src *src, const hs_hf_info *info, hs_model *m,
                                    unsigned char *filled, const hs_notes *notes, hs_error *err)
{
    const family_t *fam = family_of(info->family);
    const int n = src->x.st.n, L = m->cfg.n_layers;
    const size_t cap = HS_CKPT_CHUNK / sizeof(float);
    float *chunk = malloc(HS_CKPT_CHUNK);
    target_t *ts = malloc(((size_t)n + 1) * sizeof *ts);
    unsigned char *seen = calloc((size_t)(fam->n_top + fam->n_blk * L) + 1, 1);
    hs_status s = chunk && ts && seen ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    int prefixed = 0, skipped = -1;
    for (int i = 0; i < n && s == HS_OK; i++) {
        s = claim(src, i, fam, info, m, &ts[i], filled, seen, &prefixed, err);
        if (s == HS_OK && ts[i].skip) skipped = i;
    }
    if (s == HS_OK) s = check_missing(src, fam, info, m, seen, prefixed, filled, err);
    for (int o = 0; o < n && s == HS_OK; o++)
        if (!ts[src->order[o]].skip) s = read_one(src, src->order[o], &ts[src->order[o]], m, chunk, cap, err);
    if (s == HS_OK && info->tied) { /* W_U = W_E^T, W_E read transposed */
        m->params.W_U_T = m->params.W_E;
        m->params.W_U = NULL;
        filled[hs_model_find_tensor(m, "unembed.W_U") - m->tensors] = 1;
    }
    /* the biases the family lacks: zeros (hs_model_create zeroed the table) */
    for (int k = 0; k < m->n_tensors && s == HS_OK; k++)
        if (!filled[k] && strstr(m->tensors[k].name, ".b_") != NULL) {
            memset(m->param_mem + m->tensors[k].offset, 0, m->tensors[k].numel * sizeof(float));
            filled[k] = 1;
        }
    if (s == HS_OK) s = check_buffers(src, info, m, err);
    if (s == HS_OK && skipped >= 0)
        hs_note(notes, HS_NOTE_CMD, "note: %s is not read: tie_word_embeddings is true, so "
                "transformers ties the unembedding to the embedding", src->x.st.names[skipped]);
    free(seen);
    free(ts);
    free(chunk);
    return s;
}
