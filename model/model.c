/*
 * model/model.c -- config, the parameter table, allocation, initialisation.
 *
 * Parameters live in one float allocation; m->tensors is the table of named
 * views (TransformerLens names and shapes, checkpoint order), and hs_params is
 * the struct of pointers into it (llm.c's ParameterTensors, STYLE.md 1).
 */
#define _DEFAULT_SOURCE /* madvise */
#include "model.h"
#include "model_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

hs_config hs_config_default(void)
{
    hs_config c;
    memset(&c, 0, sizeof c);
    c.n_layers = 2;
    c.d_model = 64;
    c.n_heads = 4;
    c.d_head = 16;
    c.d_mlp = 256;
    c.n_ctx = 0;
    c.d_vocab = 0;
    c.norm = HS_NORM_LAYERNORM;
    c.eps = 1e-5f;
    c.act = HS_ACT_GELU;
    c.pos = HS_POS_LEARNED;
    c.attn = HS_ATTN_SOFTMAX;
    c.ln1 = 1;
    c.ln_final = 1;
    c.embed_norm = 0;
    c.bias = 1;
    c.seed = 0;
    /* inert until use_NTK_by_parts_rope (TransformerLens' defaults) */
    c.NTK_by_parts_factor = 8.0f;
    c.NTK_by_parts_low_freq_factor = 1.0f;
    c.NTK_by_parts_high_freq_factor = 4.0f;
    c.NTK_original_ctx_len = 8192;
    return c;
}

static const char *const NORM_NAMES[] = {"layernorm", "rmsnorm", "none"};
static const char *const ACT_NAMES[] = {"gelu", "relu", "gelu_new", "silu"};
static const char *const POS_NAMES[] = {"learned", "none", "sinusoidal", "rotary", "alibi"};
static const char *const ATTN_NAMES[] = {"softmax", "uniform"};

static int parse_name(const char *s, const char *const *names, int n)
{
    if (s == NULL) return -1;
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

const char *hs_norm_name(hs_norm n) { return (unsigned)n < 3 ? NORM_NAMES[n] : "?"; }
const char *hs_act_name(hs_act a) { return (unsigned)a < 4 ? ACT_NAMES[a] : "?"; }
const char *hs_pos_name(hs_pos p) { return (unsigned)p < 5 ? POS_NAMES[p] : "?"; }
const char *hs_attn_name(hs_attn a) { return (unsigned)a < 2 ? ATTN_NAMES[a] : "?"; }
int hs_norm_parse(const char *s) { return parse_name(s, NORM_NAMES, 3); }
int hs_act_parse(const char *s) { return parse_name(s, ACT_NAMES, 4); }
int hs_pos_parse(const char *s) { return parse_name(s, POS_NAMES, 5); }
int hs_attn_parse(const char *s) { return parse_name(s, ATTN_NAMES, 2); }
static const char *const NORM_PLACE_NAMES[] = {"pre", "post"};
const char *hs_norm_place_name(hs_norm_place p) { return (unsigned)p < 2 ? NORM_PLACE_NAMES[p] : "?"; }
int hs_norm_place_parse(const char *s) { return parse_name(s, NORM_PLACE_NAMES, 2); }
static const char *const INIT_NAMES[] = {"pytorch", "gpt2"};
const char *hs_init_name(hs_init s) { return (unsigned)s < 2 ? INIT_NAMES[s] : "?"; }
int hs_init_parse(const char *s) { return parse_name(s, INIT_NAMES, 2); }

/* The attention switches of hs_config (model.h's group), one line each. */
static hs_status attn_switches_validate(const hs_config *c, hs_error *err)
{
    const int softmax = c->attn == HS_ATTN_SOFTMAX;
    if (c->pos == HS_POS_SINUSOIDAL && c->d_model % 2 != 0)
        return hs_fail(err, HS_ERR_CONFIG, "config: sinusoidal positions need an even d_model (%d)",
                       c->d_model);
    if ((c->pos == HS_POS_ROTARY || c->pos == HS_POS_ALIBI) && !softmax)
        return hs_fail(err, HS_ERR_CONFIG, "config: %s positions act on the scores; uniform "
                       "attention has none", hs_pos_name(c->pos));
    if (c->rotary_dim < 0 || c->rotary_dim > c->d_head || c->rotary_dim % 2 != 0)
        return hs_fail(err, HS_ERR_CONFIG, "config: rotary_dim %d must be even and in [0, d_head "
                       "%d] (0 = d_head)", c->rotary_dim, c->d_head);
    if (c->pos == HS_POS_ROTARY && c->d_head % 2 != 0 && c->rotary_dim == 0)
        return hs_fail(err, HS_ERR_CONFIG, "config: rotary positions over the whole head need an "
                       "even d_head (%d)", c->d_head);
    if (!(c->rotary_base >= 0.0f) || !isfinite(c->rotary_base) ||
        (c->rotary_base > 0.0f && c->rotary_base <= 1.0f))
        return hs_fail(err, HS_ERR_CONFIG, "config: rotary_base %g must be above 1 (0 = 10000)",
                       (double)c->rotary_base);
    if (c->rotary_adjacent_pairs != 0 && c->rotary_adjacent_pairs != 1)
        return hs_fail(err, HS_ERR_CONFIG, "config: rotary_adjacent_pairs must be 0 or 1");
    if (c->use_NTK_by_parts_rope != 0 && c->use_NTK_by_parts_rope != 1)
        return hs_fail(err, HS_ERR_CONFIG, "config: use_NTK_by_parts_rope must be 0 or 1");
    if (c->use_NTK_by_parts_rope &&
        (!(c->NTK_by_parts_factor > 0.0f) || !isfinite(c->NTK_by_parts_factor) ||
         !(c->NTK_by_parts_low_freq_factor > 0.0f) ||
         !(c->NTK_by_parts_high_freq_factor > c->NTK_by_parts_low_freq_factor) ||
         !isfinite(c->NTK_by_parts_high_freq_factor) || c->NTK_original_ctx_len < 1))
        return hs_fail(err, HS_ERR_CONFIG, "config: NTK-by-parts rope needs factor > 0, 0 < "
                       "low_freq_factor < high_freq_factor and original_ctx_len >= 1 (have %g, %g, "
                       "%g, %d)", (double)c->NTK_by_parts_factor,
                       (double)c->NTK_by_parts_low_freq_factor,
                       (double)c->NTK_by_parts_high_freq_factor, c->NTK_original_ctx_len);
    if (c->n_key_value_heads < 0 ||
        (c->n_key_value_heads > 0 && c->n_heads % c->n_key_value_heads != 0))
        return hs_fail(err, HS_ERR_CONFIG, "config: n_key_value_heads %d does not divide n_heads %d",
                       c->n_key_value_heads, c->n_heads);
    if (c->n_key_value_heads > 0 && c->n_key_value_heads != c->n_heads && !softmax)
        return hs_fail(err, HS_ERR_CONFIG, "config: grouped-query attention needs softmax "
                       "attention (uniform has no keys)");
    int any_local = 0;
    for (int l = 0; l < HS_MAX_LAYERS; l++) {
        if (c->attn_local[l] > 1 || (c->attn_local[l] && l >= c->n_layers))
            return hs_fail(err, HS_ERR_CONFIG, "config: attn_local[%d] = %d (0 or 1 for the "
                           "model's %d layers)", l, c->attn_local[l], c->n_layers);
        any_local |= c->attn_local[l];
    }
    if (c->window_size < 0 || (any_local && c->window_size < 1))
        return hs_fail(err, HS_ERR_CONFIG, "config: window_size %d must be >= 1 with a local "
                       "layer", c->window_size);
    if (any_local && !softmax)
        return hs_fail(err, HS_ERR_CONFIG, "config: local attention needs softmax attention");
    return HS_OK;
}

hs_status hs_config_validate(const hs_config *c, hs_error *err)
{
#define CHECK_RANGE(field, lo, hi)                                                       \
    if (c->field < (lo) || c->field > (hi))                                               \
        return hs_fail(err, HS_ERR_CONFIG, "config: %s = %d is out of range [%d, %d]",     \
                       #field, c->field, (lo), (hi));
    CHECK_RANGE(n_layers, 1, HS_MAX_LAYERS);
    CHECK_RANGE(d_model, 1, 4096);
    CHECK_RANGE(n_heads, 1, 64);
    CHECK_RANGE(d_head, 1, 1024);
    CHECK_RANGE(d_mlp, 0, 16384);
    CHECK_RANGE(n_ctx, 1, 4096);
    CHECK_RANGE(d_vocab, 1, 1 << 20);
#undef CHECK_RANGE
    if ((unsigned)c->norm > HS_NORM_NONE) return hs_fail(err, HS_ERR_CONFIG, "config: unknown norm");
    if ((unsigned)c->act > HS_ACT_SILU) return hs_fail(err, HS_ERR_CONFIG, "config: unknown act");
    if ((unsigned)c->pos > HS_POS_ALIBI) return hs_fail(err, HS_ERR_CONFIG, "config: unknown pos");
    if ((unsigned)c->attn > HS_ATTN_UNIFORM) return hs_fail(err, HS_ERR_CONFIG, "config: unknown attn");
    if (!(c->eps > 0.0f) || !isfinite(c->eps))
        return hs_fail(err, HS_ERR_CONFIG, "config: eps must be a positive finite number");
    if (!(c->attn_scale >= 0.0f) || !isfinite(c->attn_scale))
        return hs_fail(err, HS_ERR_CONFIG, "config: attn_scale %g must be a positive finite number (0 = sqrt(d_head))",
                       (double)c->attn_scale);
    if (c->embed_norm && c->norm == HS_NORM_NONE)
        return hs_fail(err, HS_ERR_CONFIG, "config: embed norm needs a norm type (layernorm or rmsnorm), not none");
    if (c->norm_pre && c->norm == HS_NORM_NONE)
        return hs_fail(err, HS_ERR_CONFIG, "config: norm_pre (LNPre/RMSPre) needs a norm type (layernorm or rmsnorm), not none");
    if ((unsigned)c->norm_place > HS_NORM_POST) return hs_fail(err, HS_ERR_CONFIG, "config: unknown norm_place");
    if (c->norm_place == HS_NORM_POST && c->norm == HS_NORM_NONE)
        return hs_fail(err, HS_ERR_CONFIG, "config: norm_place post needs a norm type (layernorm or rmsnorm), not none");
    if (c->gated_mlp && c->d_mlp == 0)
        return hs_fail(err, HS_ERR_CONFIG, "config: gated_mlp needs an MLP (d_mlp > 0)");
    if (c->parallel_attn_mlp && c->norm_place == HS_NORM_POST)
        return hs_fail(err, HS_ERR_CONFIG, "config: parallel_attn_mlp with norm_place post is not defined (where would the norms sit?)");
    if (c->parallel_attn_mlp && c->attn_replace)
        return hs_fail(err, HS_ERR_CONFIG, "config: parallel_attn_mlp with attn_replace is not defined (the MLP reads resid_pre)");
    return attn_switches_validate(c, err);
}

const char *hs_config_nonadditive(const hs_config *c)
{
    if (c->norm_place == HS_NORM_POST) return "norm_place post";
    if (c->attn_replace) return "attn_replace";
    return NULL;
}

float hs_attn_scale(const hs_config *cfg)
{
    return cfg->attn_scale > 0.0f ? cfg->attn_scale : sqrtf((float)cfg->d_head);
}

float hs_attn_scale_at(const hs_config *cfg, int layer)
{
    const float s = hs_attn_scale(cfg);
    return cfg->attn_scale_by_layer ? s * (float)(layer + 1) : s;
}

/* ------------------------------------------------------------------------ */
/* Hook points (model.h, docs/HOOKS.md)                                      */

typedef struct {
    hs_hook_point *out;
    int cap, n;
} point_list;

static void point(point_list *pl, const char *alias, const char *fmt, int l)
{
    if (pl->n < pl->cap) {
        snprintf(pl->out[pl->n].name, sizeof pl->out[pl->n].name, fmt, l);
        snprintf(pl->out[pl->n].alias, sizeof pl->out[pl->n].alias, "%s", alias);
    }
    pl->n++;
}

int hs_hook_points(const hs_config *c, hs_hook_point *out, int cap)
{
    point_list pl = {out, cap, 0};
    const int softmax = c->attn == HS_ATTN_SOFTMAX, norm = c->norm != HS_NORM_NONE;
    point(&pl, "", "hook_tokens", 0);
    point(&pl, "", "hook_embed", 0);
    if (hs_pos_added(c)) point(&pl, "", "hook_pos_embed", 0);
    if (c->embed_norm) {
        point(&pl, "", "ln_embed.hook_scale", 0);
        point(&pl, "", "ln_embed.hook_normalized", 0);
    }
    for (int l = 0; l < c->n_layers; l++) {
        point(&pl, "", "blocks.%d.hook_resid_pre", l);
        if (hs_kv_heads(c) == c->n_heads) /* GQA: k/v inputs have n_kv heads */
            point(&pl, "", "blocks.%d.hook_attn_in", l);
        if (softmax) {
            point(&pl, "", "blocks.%d.hook_q_input", l);
            point(&pl, "", "blocks.%d.hook_k_input", l);
        }
        point(&pl, "", "blocks.%d.hook_v_input", l);
        if (hs_ln1_in_front(c)) {
            point(&pl, "", "blocks.%d.ln1.hook_scale", l);
            point(&pl, "", "blocks.%d.ln1.hook_normalized", l);
        }
        if (softmax) {
            point(&pl, "", "blocks.%d.attn.hook_q", l);
            point(&pl, "", "blocks.%d.attn.hook_k", l);
        }
        point(&pl, "", "blocks.%d.attn.hook_v", l);
        if (c->pos == HS_POS_ROTARY) {
            point(&pl, "", "blocks.%d.attn.hook_rot_q", l);
            point(&pl, "", "blocks.%d.attn.hook_rot_k", l);
        }
        if (softmax) point(&pl, "", "blocks.%d.attn.hook_attn_scores", l);
        point(&pl, "", "blocks.%d.attn.hook_pattern", l);
        point(&pl, "", "blocks.%d.attn.hook_z", l);
        point(&pl, "", "blocks.%d.attn.hook_result", l);
        point(&pl, "", "blocks.%d.hook_attn_out", l);
        const int post = c->norm_place == HS_NORM_POST;
        if (post && c->ln1) { /* LN1 after the attention, on the residual */
            point(&pl, "", "blocks.%d.ln1.hook_scale", l);
            point(&pl, "", "blocks.%d.ln1.hook_normalized", l);
        }
        if (c->d_mlp > 0) {
            if (!c->parallel_attn_mlp) point(&pl, "", "blocks.%d.hook_resid_mid", l);
            point(&pl, "", "blocks.%d.hook_mlp_in", l);
            if (norm && !post) {
                point(&pl, "", "blocks.%d.ln2.hook_scale", l);
                point(&pl, "", "blocks.%d.ln2.hook_normalized", l);
            }
            point(&pl, "", "blocks.%d.mlp.hook_pre", l);
            if (c->gated_mlp) point(&pl, "", "blocks.%d.mlp.hook_pre_linear", l);
            point(&pl, "", "blocks.%d.mlp.hook_post", l);
            point(&pl, "", "blocks.%d.hook_mlp_out", l);
            if (post) {
                point(&pl, "", "blocks.%d.ln2.hook_scale", l);
                point(&pl, "", "blocks.%d.ln2.hook_normalized", l);
            }
        }
        point(&pl, "", "blocks.%d.hook_resid_post", l);
    }
    if (c->ln_final && norm) {
        point(&pl, "", "ln_final.hook_scale", 0);
        point(&pl, "", "ln_final.hook_normalized", 0);
    }
    point(&pl, "", "unembed.hook_in", 0);
    point(&pl, hs_hook_alias("logits"), "logits", 0);
    return pl.n;
}

const char *hs_hook_canonical(const char *name)
{
    return strcmp(name, "unembed.hook_out") == 0 ? "logits" : name;
}

const char *hs_hook_alias(const char *name)
{
    return strcmp(name, "logits") == 0 ? "unembed.hook_out" : NULL;
}

/* ------------------------------------------------------------------------ */
/* The tensor table                                                           */

typedef struct {
    hs_model *m;
    size_t offset;
    float **views; /* the layout hs_params as an array (hs_tensor_info.view) */
} table_builder;

static void add_tensor(table_builder *tb, float **view_slot, int decay, int ndim, int64_t d0,
                       int64_t d1, int64_t d2, const char *fmt, int layer)
{
    hs_model *m = tb->m;
    HS_ASSERT(m->n_tensors < HS_MAX_TENSORS);
    hs_tensor_info *t = &m->tensors[m->n_tensors++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, fmt, layer);
    t->ndim = ndim;
    t->shape[0] = d0;
    t->shape[1] = d1;
    t->shape[2] = d2;
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)t->shape[i];
    t->numel = n;
    t->offset = tb->offset;
    t->decay = decay;
    t->view = (int)(view_slot - tb->views);
    tb->offset += n;
    /* slot records the offset for now; pointed once memory exists */
    *view_slot = (float *)(uintptr_t)(t->offset + 1);
}

/* Points every non-NULL slot of p (holding offset+1) into base. */
static void point_params(const hs_params *layout, float *base, hs_params *out)
{
    const float *const *src = (const float *const *)layout;
    float **dst = (float **)out;
    size_t n_ptrs = sizeof(hs_params) / sizeof(float *);
    _Static_assert(sizeof(hs_params) % sizeof(float *) == 0, "hs_params must hold only float*");
    _Static_assert(sizeof(hs_block_params) == 18 * sizeof(float *), "hs_block_params has 18 views");
    for (size_t i = 0; i < n_ptrs; i++) {
        uintptr_t v = (uintptr_t)src[i];
        dst[i] = v ? base + (v - 1) : NULL;
    }
}

/* m->tensors, m->n_tensors and m->n_params for cfg, in checkpoint order;
 * *lay gets each view's offset + 1 (point_params points them). */
static void build_table(const hs_config *cfg, hs_model *m, hs_params *lay)
{
    const int64_t V = cfg->d_vocab, D = cfg->d_model, H = cfg->n_heads, dh = cfg->d_head,
                  M = cfg->d_mlp, C = cfg->n_ctx, Hkv = hs_kv_heads(cfg);
    /* norm_pre: every norm centres and scales only, without w and b */
    const int has_norm = cfg->norm != HS_NORM_NONE && !cfg->norm_pre;
    const int norm_b = cfg->norm == HS_NORM_LAYERNORM && cfg->bias && !cfg->norm_pre;
    memset(lay, 0, sizeof *lay);
    m->n_tensors = 0;
    table_builder tb = {m, 0, (float **)lay};
    add_tensor(&tb, &lay->W_E, 1, 2, V, D, 0, "embed.W_E", 0);
    if (cfg->pos == HS_POS_LEARNED) add_tensor(&tb, &lay->W_pos, 1, 2, C, D, 0, "pos_embed.W_pos", 0);
    if (cfg->embed_norm && has_norm) {
        add_tensor(&tb, &lay->ln_embed_w, 0, 1, D, 0, 0, "ln_embed.w", 0);
        if (norm_b) add_tensor(&tb, &lay->ln_embed_b, 0, 1, D, 0, 0, "ln_embed.b", 0);
    }
    for (int l = 0; l < cfg->n_layers; l++) {
        hs_block_params *bp = &lay->blocks[l];
        if (cfg->ln1 && has_norm) {
            add_tensor(&tb, &bp->ln1_w, 0, 1, D, 0, 0, "blocks.%d.ln1.w", l);
            if (norm_b) add_tensor(&tb, &bp->ln1_b, 0, 1, D, 0, 0, "blocks.%d.ln1.b", l);
        }
        if (cfg->attn == HS_ATTN_SOFTMAX) {
            add_tensor(&tb, &bp->W_Q, 1, 3, H, D, dh, "blocks.%d.attn.W_Q", l);
            add_tensor(&tb, &bp->W_K, 1, 3, Hkv, D, dh, "blocks.%d.attn.W_K", l);
        }
        add_tensor(&tb, &bp->W_V, 1, 3, Hkv, D, dh, "blocks.%d.attn.W_V", l);
        add_tensor(&tb, &bp->W_O, 1, 3, H, dh, D, "blocks.%d.attn.W_O", l);
        if (cfg->bias) {
            if (cfg->attn == HS_ATTN_SOFTMAX) {
                add_tensor(&tb, &bp->b_Q, 0, 2, H, dh, 0, "blocks.%d.attn.b_Q", l);
                add_tensor(&tb, &bp->b_K, 0, 2, Hkv, dh, 0, "blocks.%d.attn.b_K", l);
            }
            add_tensor(&tb, &bp->b_V, 0, 2, Hkv, dh, 0, "blocks.%d.attn.b_V", l);
            add_tensor(&tb, &bp->b_O, 0, 1, D, 0, 0, "blocks.%d.attn.b_O", l);
        }
        if (M > 0) {
            if (has_norm) {
                add_tensor(&tb, &bp->ln2_w, 0, 1, D, 0, 0, "blocks.%d.ln2.w", l);
                if (norm_b) add_tensor(&tb, &bp->ln2_b, 0, 1, D, 0, 0, "blocks.%d.ln2.b", l);
            }
            add_tensor(&tb, &bp->W_in, 1, 2, D, M, 0, "blocks.%d.mlp.W_in", l);
            if (cfg->bias) add_tensor(&tb, &bp->b_in, 0, 1, M, 0, 0, "blocks.%d.mlp.b_in", l);
            if (cfg->gated_mlp) add_tensor(&tb, &bp->W_gate, 1, 2, D, M, 0, "blocks.%d.mlp.W_gate", l);
            add_tensor(&tb, &bp->W_out, 1, 2, M, D, 0, "blocks.%d.mlp.W_out", l);
            if (cfg->bias) add_tensor(&tb, &bp->b_out, 0, 1, D, 0, 0, "blocks.%d.mlp.b_out", l);
        }
    }
    if (cfg->ln_final && has_norm) {
        add_tensor(&tb, &lay->ln_final_w, 0, 1, D, 0, 0, "ln_final.w", 0);
        if (norm_b) add_tensor(&tb, &lay->ln_final_b, 0, 1, D, 0, 0, "ln_final.b", 0);
    }
    add_tensor(&tb, &lay->W_U, 1, 2, D, V, 0, "unembed.W_U", 0);
    if (cfg->bias) add_tensor(&tb, &lay->b_U, 0, 1, V, 0, 0, "unembed.b_U", 0);
    m->n_params = tb.offset;
}

hs_status hs_model_create(const hs_config *cfg, hs_model **out, hs_error *err)
{
    *out = NULL;
    hs_status s = hs_config_validate(cfg, err);
    if (s != HS_OK) return s;
    hs_model *m = calloc(1, sizeof *m);
    if (!m) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    m->cfg = *cfg;
    hs_params lay;
    build_table(cfg, m, &lay);
    m->param_mem = hs_floats_alloc(m->n_params);
    if (!m->param_mem) {
        const size_t n = m->n_params;
        hs_model_destroy(m);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory for %zu parameters", n);
    }
    point_params(&lay, m->param_mem, &m->params);
    *out = m;
    return HS_OK;
}

void hs_model_relayout(hs_model *m, const hs_config *cfg)
{
    HS_ASSERT(m->grad_mem == NULL && m->m_mem == NULL && m->n_maps == 0 && m->params.W_U_T == NULL);
    const int n_old = m->n_tensors;
    hs_tensor_info old[HS_MAX_TENSORS]; /* ~30 KB */
    memcpy(old, m->tensors, sizeof m->tensors);
    hs_params lay;
    m->cfg = *cfg;
    build_table(cfg, m, &lay);
    /* every tensor kept moves to a lower (or the same) offset: in table
     * order each move reads what no earlier move wrote */
    for (int i = 0; i < m->n_tensors; i++) {
        const hs_tensor_info *t = &m->tensors[i];
        const hs_tensor_info *o = NULL;
        for (int k = 0; k < n_old && !o; k++)
            if (strcmp(old[k].name, t->name) == 0) o = &old[k];
        HS_ASSERT(o != NULL && o->numel == t->numel && o->offset >= t->offset);
        if (t->numel) memmove(m->param_mem + t->offset, m->param_mem + o->offset, t->numel * sizeof(float));
    }
    point_params(&lay, m->param_mem, &m->params);
}

/* Pieces a checkpoint's mapping is unmapped in: each munmap holds the
 * process's mmap lock while it takes down its page tables (GPT-2 small's
 * 548 MB, half of it PTE-mapped: ~10 ms), and another thread's mmap waits
 * for it: the figure a one-prompt lens draws on the pool's lane meanwhile
 * (cli_exp_finish frees the model) took 14-16 ms instead of 7 behind one
 * call, and its phase 20 -> 17 ms in 8 MB pieces (32 MB: 17-18). */
#define HS_UNMAP_PIECE ((size_t)8 << 20)

/* Unmaps m's checkpoint files. */
static void unmap_all(hs_model *m)
{
    for (int k = 0; k < m->n_maps; k++)
        for (size_t o = 0; o < m->map_lens[k]; o += HS_UNMAP_PIECE) /* pieces of a mapping: page-aligned */
            munmap((char *)m->maps[k] + o, m->map_lens[k] - o < HS_UNMAP_PIECE ? m->map_lens[k] - o : HS_UNMAP_PIECE);
    free(m->maps);
    free(m->map_lens);
    m->maps = NULL;
    m->map_lens = NULL;
    m->n_maps = 0;
}

hs_status hs_model_adopt_map(hs_model *m, void *base, size_t len, hs_error *err)
{
    for (int k = 0; k < m->n_maps; k++)
        if (m->maps[k] == base) return HS_OK;
    void **b = realloc(m->maps, (size_t)(m->n_maps + 1) * sizeof *b);
    if (b) m->maps = b;
    size_t *n = b ? realloc(m->map_lens, (size_t)(m->n_maps + 1) * sizeof *n) : NULL;
    if (n) m->map_lens = n;
    if (!b || !n) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    m->maps[m->n_maps] = base;
    m->map_lens[m->n_maps++] = len;
    return HS_OK;
}

float *hs_model_tensor_data(const hs_model *m, int i)
{
    HS_ASSERT(i >= 0 && i < m->n_tensors);
    return ((float *const *)&m->params)[m->tensors[i].view];
}

const float *hs_head_qkv(const hs_model *m, int l, int which, int h, int *ld)
{
    const hs_config *c = &m->cfg;
    const hs_block_params *bp = &m->params.blocks[l];
    const size_t HD = (size_t)c->n_heads * c->d_head;
    if (which < 2 && c->attn != HS_ATTN_SOFTMAX) return NULL;
    if (which > 0) h = hs_kv_head(c, h); /* grouped-query attention: h's key/value head */
    if (bp->W_QKV) {
        *ld = (int)(3 * HD);
        return bp->W_QKV + (size_t)which * HD + (size_t)h * c->d_head;
    }
    const float *W = which == 0 ? bp->W_Q : which == 1 ? bp->W_K : bp->W_V;
    *ld = c->d_head;
    return W + (size_t)h * c->d_model * c->d_head;
}

/* Drops the resident pages of [p, p + n floats) of a mapped (read-only,
 * private, never written) file: a later read maps them again from the file. */
static void drop_mapped(const hs_model *m, const float *p, size_t n)
{
    if (p == NULL || m->n_maps == 0) return;
    const uintptr_t pg = 4096, a = (uintptr_t)p & ~(pg - 1);
    (void)madvise((void *)a, (uintptr_t)(p + n) - a, MADV_DONTNEED);
}

hs_status hs_model_own(hs_model *m, hs_error *err)
{
    (void)err;
    if (m->n_maps == 0 && m->params.W_U_T == NULL) {
        int packed = 0;
        for (int l = 0; l < m->cfg.n_layers; l++) packed |= m->params.blocks[l].W_QKV != NULL;
        if (!packed) return HS_OK;
    }
    const hs_config *c = &m->cfg;
    const int D = c->d_model, H = c->n_heads, dh = c->d_head, V = c->d_vocab;
    /* the table's own layout (the same table: build_table is deterministic) */
    hs_params lay;
    build_table(c, m, &lay);
    hs_params own;
    point_params(&lay, m->param_mem, &own);
    float *const *cur = (float *const *)&m->params;
    float *const *dst = (float *const *)&own;
    /* Table order, each mapped source's pages dropped once copied, so the
     * resident set stays about one table (not the file plus the table) */
    for (int i = 0; i < m->n_tensors; i++) {
        const hs_tensor_info *t = &m->tensors[i];
        float *to = dst[t->view], *from = cur[t->view];
        if (from == to) continue;
        if (from) {
            memcpy(to, from, t->numel * sizeof(float));
            drop_mapped(m, from, t->numel); /* (a tied W_U is transposed from the copy) */
        } else if (to == own.W_U) { /* W_U (D, V) = W_U_T^T, a (V, D) block of rows at a time */
            /* tied: W_E is copied already (the table's first entry): read the copy */
            const float *src = m->params.W_U_T == m->params.W_E ? own.W_E : m->params.W_U_T;
            for (int v0 = 0; v0 < V; v0 += 64) {
                const int nv = V - v0 < 64 ? V - v0 : 64;
                for (int d = 0; d < D; d++)
                    for (int v = 0; v < nv; v++) to[(size_t)d * V + v0 + v] = src[(size_t)(v0 + v) * D + d];
            }
            if (src == m->params.W_U_T) drop_mapped(m, src, t->numel);
        } else { /* W_Q, W_K or W_V (H, D, dh) out of W_QKV */
            int l = 0, which = 0;
            for (l = 0; l < c->n_layers; l++) {
                const hs_block_params *ob = &own.blocks[l];
                if (to == ob->W_Q || to == ob->W_K || to == ob->W_V) {
                    which = to == ob->W_Q ? 0 : to == ob->W_K ? 1 : 2;
                    break;
                }
            }
            HS_ASSERT(l < c->n_layers && m->params.blocks[l].W_QKV != NULL);
            HS_ASSERT(hs_kv_heads(c) == H); /* a packed W_QKV holds H heads of each */
            for (int h = 0; h < H; h++) {
                int ld;
                const float *W = hs_head_qkv(m, l, which, h, &ld);
                for (int d = 0; d < D; d++)
                    memcpy(to + ((size_t)h * D + d) * dh, W + (size_t)d * ld, (size_t)dh * sizeof(float));
            }
            if (which == 2) drop_mapped(m, m->params.blocks[l].W_QKV, (size_t)D * 3 * H * dh);
        }
    }
    m->params = own; /* W_QKV and W_U_T NULL: the layout's slots for them are 0 */
    unmap_all(m);
    return HS_OK;
}

hs_status hs_model_set_n_ctx(hs_model *m, int n_ctx, hs_error *err)
{
    if (n_ctx < 1 || n_ctx > 4096)
        return hs_fail(err, HS_ERR_INPUT, "n_ctx %d is out of range [1, 4096]", n_ctx);
    if (m->cfg.pos == HS_POS_LEARNED) {
        if (n_ctx > m->cfg.n_ctx)
            return hs_fail(err, HS_ERR_INPUT, "learned positions stop at n_ctx = %d (asked for %d)",
                           m->cfg.n_ctx, n_ctx);
        return HS_OK; /* W_pos has its rows: the forward takes up to n_ctx of them */
    }
    m->cfg.n_ctx = n_ctx; /* no table depends on it */
    return HS_OK;
}

void hs_model_destroy(hs_model *m)
{
    if (m == NULL) return;
    unmap_all(m);
    hs_floats_free(m->param_mem);
    hs_floats_free(m->grad_mem);
    hs_floats_free(m->grad_part_mem);
    hs_floats_free(m->m_mem);
    hs_floats_free(m->v_mem);
    free(m);
}

hs_status hs_model_alloc_train(hs_model *m, hs_error *err)
{
    if (m->grad_mem) return HS_OK;
    hs_status so = hs_model_own(m, err); /* gradients rebase the views onto grad_mem */
    if (so != HS_OK) return so;
    m->grad_mem = hs_floats_alloc(m->n_params);
    m->grad_part_mem = hs_floats_alloc((HS_GRAD_PARTS - 1) * hs_floats_round(m->n_params));
    m->m_mem = hs_floats_alloc(m->n_params);
    m->v_mem = hs_floats_alloc(m->n_params);
    if (!m->grad_mem || !m->grad_part_mem || !m->m_mem || !m->v_mem) {
        hs_floats_free(m->grad_mem);
        hs_floats_free(m->grad_part_mem);
        hs_floats_free(m->m_mem);
        hs_floats_free(m->v_mem);
        m->grad_mem = m->grad_part_mem = m->m_mem = m->v_mem = NULL;
        return hs_fail(err, HS_ERR_NOMEM, "out of memory for gradients (%zu floats)", m->n_params);
    }
    /* same layout as the parameters, rebased onto grad_mem */
    const float *const *src = (const float *const *)&m->params;
    float **dst = (float **)&m->grads;
    for (size_t i = 0; i < sizeof(hs_params) / sizeof(float *); i++)
        dst[i] = src[i] ? m->grad_mem + (src[i] - m->param_mem) : NULL;
    m->adam_t = 0;
    return HS_OK;
}

const hs_tensor_info *hs_model_find_tensor(const hs_model *m, const char *name)
{
    for (int i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0) return &m->tensors[i];
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Initialisation: splitmix64 + Box-Muller, deterministic per seed            */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *s)
{
    return ((double)(splitmix64(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static double normal01(uint64_t *s)
{
    double u1 = uniform01(s), u2 = uniform01(s);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void hs_model_init(hs_model *m)
{
    hs_model_init_scheme(m, HS_INIT_PYTORCH);
}

void hs_model_init_scheme(hs_model *m, hs_init scheme)
{
    uint64_t st = m->cfg.seed * 0x2545F4914F6CDD1Dull + 0x1234567ull;
    for (int i = 0; i < m->n_tensors; i++) {
        const hs_tensor_info *t = &m->tensors[i];
        float *p = m->param_mem + t->offset;
        const char *dot = strrchr(t->name, '.');
        const char *leaf = dot ? dot + 1 : t->name;
        if (scheme == HS_INIT_GPT2 && strncmp(leaf, "W_", 2) == 0) {
            /* GPT-2 (design notes' PyTorch reference): every matrix and embedding N(0, 0.02) */
            for (size_t j = 0; j < t->numel; j++) p[j] = (float)(0.02 * normal01(&st));
        } else if (strcmp(leaf, "W_E") == 0 || strcmp(leaf, "W_pos") == 0) {
            /* torch.nn.Embedding: N(0, 1) */
            for (size_t j = 0; j < t->numel; j++) p[j] = (float)normal01(&st);
        } else if (strncmp(leaf, "W_", 2) == 0) { /* b_Q/b_K/b_V are 2-D but biases */
            /* torch.nn.Linear: U(-1/sqrt(fan_in), 1/sqrt(fan_in)). fan_in is the
             * input width: D for W_Q/W_K/W_V [H,D,dh], W_in and W_U; H*dh for
             * W_O [H,dh,D]; M for W_out [M,D]. */
            double fan_in = t->ndim == 3 ? (double)t->shape[1] : (double)t->shape[0];
            if (strcmp(leaf, "W_O") == 0) fan_in = (double)(t->shape[0] * t->shape[1]);
            const double bound = 1.0 / sqrt(fan_in);
            for (size_t j = 0; j < t->numel; j++) p[j] = (float)(bound * (2.0 * uniform01(&st) - 1.0));
        } else if (strcmp(leaf, "w") == 0) {
            for (size_t j = 0; j < t->numel; j++) p[j] = 1.0f;
        } else {
            memset(p, 0, t->numel * sizeof(float));
        }
    }
    m->adam_t = 0;
}
