/*
 * model/checkpoint_family.c -- config.json of the Hugging Face families
 * besides GPT-2 (the seam: checkpoint_internal.h, "The other Hugging Face
 * families"): gpt_neo, gpt_neox, llama, qwen2, mistral, each mapped onto
 * hs_config's switches (DESIGN.md "Checkpoint", the layout table).
 *
 * Read from transformers' config classes and modeling files (v4.48;
 * models/<family>/configuration_<family>.py, modeling_<family>.py,
 * modeling_rope_utils.py). Every field of a family's config class is
 * computed as the modeling file uses it, inert (dropout rates, initializer
 * ranges, a Qwen2 sliding window that is off, ...) or refused unless off
 * (FIELDS below; the common PretrainedConfig fields are checkpoint_hf.c's
 * HF_COMMON); any other field is refused naming it. A field config.json
 * leaves out takes the config class's default.
 *
 *   gpt_neo   LayerNorm, learned positions (n_ctx = max_position_embeddings,
 *             wpe's rows), no score scaling (attn_scale 1:
 *             GPTNeoSelfAttention._attn), attention_types expanded as
 *             GPTNeoConfig.expand_attention_types_params: a "local" layer
 *             sees keys i - j < window_size (attn_local, window_size);
 *             activation_function; no q/k/v biases (loaded as zeros).
 *   gpt_neox  LayerNorm, rotary (HS_POS_ROTARY) on the first
 *             int(head_dim * rotary_pct) dims of each head (rotate-half;
 *             partial_rotary_factor / rope_theta, the 4.47+ copies, must
 *             agree), rotary_emb_base, use_parallel_residual
 *             (parallel_attn_mlp), hidden_act, attention_bias.
 *   llama, qwen2, mistral
 *             RMSNorm (rms_norm_eps), rotary on all of head_dim (head_dim,
 *             or hidden_size / num_attention_heads), rope_theta,
 *             rope_scaling "llama3" (TL's NTK-by-parts fields) or none,
 *             num_key_value_heads (grouped-query attention; must divide
 *             num_attention_heads), gated MLP with hidden_act (silu), no
 *             positions table; mistral's sliding_window (every layer local
 *             when it is shorter than the context).
 * Rotary families have no position table: n_ctx is max_position_embeddings
 * capped at headscope's 4096 positions (TransformerLens also runs them at a
 * shorter context than they declare).
 */
#include "model/model.h"
#include "model/checkpoint_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const NAMES[HS_HF_N_FAMILIES] = {"gpt2", "gpt_neo", "gpt_neox", "llama", "qwen2",
                                                    "mistral"};

int hs_hf_family_parse(const char *model_type)
{
    for (int f = 0; f < HS_HF_N_FAMILIES; f++)
        if (model_type && strcmp(model_type, NAMES[f]) == 0) return f;
    return -1;
}

const char *hs_hf_family_name(hs_hf_family f)
{
    return (unsigned)f < HS_HF_N_FAMILIES ? NAMES[f] : "?";
}

/* ------------------------------------------------------------------------ */
/* The fields                                                                */

#define NEO (1u << HS_HF_GPT_NEO)
#define NEOX (1u << HS_HF_GPT_NEOX)
#define LLAMA (1u << HS_HF_LLAMA)
#define QWEN2 (1u << HS_HF_QWEN2)
#define MISTRAL (1u << HS_HF_MISTRAL)
#define LL (LLAMA | QWEN2 | MISTRAL)
#define ALL (NEO | NEOX | LL)
enum { C = HS_TL_COMPUTED, I = HS_TL_INERT, R = HS_TL_REFUSED };

/* Each family's own fields (a name may have another kind in another family:
 * the first entry naming both field and family counts). */
static const struct {
    const char *name;
    int kind;
    unsigned fams;
} FIELDS[] = {
    {"vocab_size", C, ALL}, {"hidden_size", C, ALL}, {"max_position_embeddings", C, ALL},
    {"intermediate_size", C, ALL},
    /* GPTNeoConfig (attribute_map: num_attention_heads, num_hidden_layers) */
    {"num_layers", C, NEO}, {"num_heads", C, NEO}, {"attention_types", C, NEO},
    {"attention_layers", C, NEO}, {"window_size", C, NEO}, {"activation_function", C, NEO},
    {"layer_norm_epsilon", C, NEO}, {"resid_dropout", I, NEO}, {"embed_dropout", I, NEO},
    {"summary_type", I, NEO}, {"summary_use_proj", I, NEO}, {"summary_activation", I, NEO},
    {"summary_proj_to_labels", I, NEO}, {"summary_first_dropout", I, NEO},
    {"num_hidden_layers", C, ALL}, {"num_attention_heads", C, ALL},
    /* GPTNeoXConfig */
    {"rotary_pct", C, NEOX}, {"rotary_emb_base", C, NEOX}, {"use_parallel_residual", C, NEOX},
    {"layer_norm_eps", C, NEOX}, {"hidden_dropout", I, NEOX},
    {"classifier_dropout", I, NEO | NEOX},
    /* rotary, the rope utilities' names (GPT-NeoX keeps copies of its own) */
    {"partial_rotary_factor", C, NEOX | LL}, {"rope_theta", C, NEOX | LL},
    {"rope_scaling", C, NEOX | LL},
    {"hidden_act", C, NEOX | LL}, {"attention_bias", C, NEOX | LLAMA},
    {"attention_dropout", I, ALL},
    /* LlamaConfig, Qwen2Config, MistralConfig */
    {"num_key_value_heads", C, LL}, {"head_dim", C, LL}, {"rms_norm_eps", C, LL},
    {"sliding_window", C, MISTRAL},
    /* Qwen2: the window is used only with use_sliding_window, refused */
    {"sliding_window", I, QWEN2}, {"max_window_layers", I, QWEN2},
    {"use_sliding_window", R, QWEN2},
    /* Qwen2.5's configs carry it (Qwen2-VL's multimodal rotary), false */
    {"use_mrope", R, QWEN2},
    /* Llama: MLP biases (gate/up/down) have no place in TL's GatedMLP;
     * pretraining_tp splits the same products into slices (4.48 no longer
     * reads it) */
    {"mlp_bias", R, LLAMA}, {"pretraining_tp", I, LLAMA},
};

int hs_checkpoint_family_field(hs_hf_family f, const char *name)
{
    for (size_t i = 0; i < sizeof FIELDS / sizeof FIELDS[0]; i++)
        if ((FIELDS[i].fams & (1u << f)) && strcmp(FIELDS[i].name, name) == 0) return FIELDS[i].kind;
    return hs_checkpoint_hf_common_field(name);
}

/* Every field known to the family, the refused ones off. */
static hs_status check_fields(const char *fname, const cJSON *o, hs_hf_family f, hs_error *err)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, o) {
        const int kind = hs_checkpoint_family_field(f, it->string);
        if (kind < 0)
            return hs_fail(err, HS_ERR_CONFIG, "%s: field '%.64s' is not a field of model_type '%s' "
                           "headscope knows; it may change the computation", fname, it->string,
                           NAMES[f]);
        if (kind != HS_TL_REFUSED || hs_hf_off(it)) continue;
        char *v = cJSON_PrintUnformatted(it);
        hs_status s = hs_fail(err, HS_ERR_CONFIG, "%s: field '%s' = %.40s is not supported by "
                              "headscope (a %s without it only)", fname, it->string, v ? v : "?",
                              NAMES[f]);
        cJSON_free(v);
        return s;
    }
    return HS_OK;
}

/* A number field, def when absent or null; positive (pos) or any finite. */
static hs_status get_num(const char *fname, const cJSON *o, const char *key, double def, int pos,
                         double *out, hs_error *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = def;
    if (it == NULL || cJSON_IsNull(it)) return HS_OK;
    const double v = cJSON_IsNumber(it) ? it->valuedouble : NAN;
    if (!isfinite(v) || (pos && !(v > 0)) || !isfinite((float)v) || (pos && !((float)v > 0.0f)))
        return hs_fail(err, HS_ERR_CONFIG, "%s: field '%s' must be a %snumber", fname, key,
                       pos ? "positive " : "");
    *out = v;
    return HS_OK;
}

/* A string field, def when absent. */
static hs_status get_str(const char *fname, const cJSON *o, const char *key, const char *def,
                         const char **out, hs_error *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = def;
    if (it == NULL) return HS_OK;
    if (!cJSON_IsString(it))
        return hs_fail(err, HS_ERR_CONFIG, "%s: field '%s' must be a string", fname, key);
    *out = it->valuestring;
    return HS_OK;
}

/* The activation named by key (def when absent): gelu, relu, gelu_new,
 * gelu_pytorch_tanh, silu (= swish). */
static hs_status get_act(const char *fname, const cJSON *o, const char *key, const char *def,
                         hs_config *c, hs_error *err)
{
    const char *name;
    hs_status s = get_str(fname, o, key, def, &name, err);
    if (s != HS_OK) return s;
    int a = hs_checkpoint_act_parse(name);
    if (a < 0 && (strcmp(name, "silu") == 0 || strcmp(name, "swish") == 0)) a = HS_ACT_SILU;
    if (a < 0)
        return hs_fail(err, HS_ERR_CONFIG, "%s: %s '%.32s' is not supported (headscope has \"gelu\", "
                       "\"gelu_new\", \"gelu_pytorch_tanh\", \"relu\" and \"silu\")", fname, key, name);
    c->act = (hs_act)a;
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* Rotary                                                                    */

/* rope_scaling (modeling_rope_utils.ROPE_INIT_FUNCTIONS): null or "default"
 * none; "llama3" TL's NTK-by-parts fields (factor, low_freq_factor,
 * high_freq_factor, original_max_position_embeddings, all required, as
 * _validate_llama3_parameters); the other types transformers has are
 * refused by name, any other type as unknown. The type is "rope_type", or
 * the legacy "type". */
static hs_status rope_scaling(const char *fname, const cJSON *o, hs_config *c, hs_error *err)
{
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(o, "rope_scaling");
    if (rs == NULL || cJSON_IsNull(rs)) return HS_OK;
    if (!cJSON_IsObject(rs))
        return hs_fail(err, HS_ERR_CONFIG, "%s: field 'rope_scaling' must be null or an object", fname);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
    if (t == NULL) t = cJSON_GetObjectItemCaseSensitive(rs, "type");
    if (!cJSON_IsString(t))
        return hs_fail(err, HS_ERR_CONFIG, "%s: rope_scaling has no 'rope_type' string", fname);
    const char *type = t->valuestring;
    if (strcmp(type, "default") == 0) return HS_OK;
    static const char *const KNOWN[] = {"linear", "dynamic", "yarn", "longrope", "su", "mrope"};
    for (size_t i = 0; i < sizeof KNOWN / sizeof KNOWN[0]; i++)
        if (strcmp(type, KNOWN[i]) == 0)
            return hs_fail(err, HS_ERR_CONFIG, "%s: rope_scaling type '%s' is not supported "
                           "(headscope has \"llama3\" and none)", fname, type);
    if (strcmp(type, "llama3") != 0)
        return hs_fail(err, HS_ERR_CONFIG, "%s: unknown rope_scaling type '%.32s' (transformers' "
                       "are default, linear, dynamic, yarn, longrope and llama3)", fname, type);
    const cJSON *it;
    cJSON_ArrayForEach(it, rs) {
        static const char *const KEYS[] = {"rope_type", "type", "factor", "low_freq_factor",
                                           "high_freq_factor", "original_max_position_embeddings"};
        size_t k = 0;
        while (k < sizeof KEYS / sizeof KEYS[0] && strcmp(KEYS[k], it->string) != 0) k++;
        if (k == sizeof KEYS / sizeof KEYS[0])
            return hs_fail(err, HS_ERR_CONFIG, "%s: rope_scaling key '%.32s' is not one of llama3's "
                           "(factor, low_freq_factor, high_freq_factor, "
                           "original_max_position_embeddings)", fname, it->string);
    }
    double v[3];
    static const char *const NUM[] = {"factor", "low_freq_factor", "high_freq_factor"};
    for (int k = 0; k < 3; k++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(rs, NUM[k]);
        if (!cJSON_IsNumber(x) || !(x->valuedouble > 0) || !isfinite((float)x->valuedouble))
            return hs_fail(err, HS_ERR_CONFIG, "%s: rope_scaling llama3 needs a positive '%s'", fname,
                           NUM[k]);
        v[k] = x->valuedouble;
    }
    int orig = 0;
    hs_status s = hs_hf_int(fname, rs, "original_max_position_embeddings", NULL, 1, 1 << 24, 0, &orig, err);
    if (s != HS_OK) return s;
    if (orig == 0)
        return hs_fail(err, HS_ERR_CONFIG, "%s: rope_scaling llama3 needs "
                       "'original_max_position_embeddings'", fname);
    if (!(v[2] > v[1]))
        return hs_fail(err, HS_ERR_CONFIG, "%s: rope_scaling high_freq_factor %g must exceed "
                       "low_freq_factor %g", fname, v[2], v[1]);
    c->use_NTK_by_parts_rope = 1;
    c->NTK_by_parts_factor = (float)v[0];
    c->NTK_by_parts_low_freq_factor = (float)v[1];
    c->NTK_by_parts_high_freq_factor = (float)v[2];
    c->NTK_original_ctx_len = orig;
    return HS_OK;
}

/* Rotary positions on int(d_head * pct) dims (even, >= 2) with base. */
static hs_status set_rotary(const char *fname, const char *pct_name, double pct, double base,
                            hs_config *c, hs_error *err)
{
    if (!(pct > 0) || pct > 1)
        return hs_fail(err, HS_ERR_CONFIG, "%s: %s %g must be in (0, 1]", fname, pct_name, pct);
    const int n = (int)(c->d_head * pct); /* Python's int(): truncation */
    if (n < 2 || n % 2)
        return hs_fail(err, HS_ERR_CONFIG, "%s: %s %g of head_dim %d gives %d rotary dims, not a "
                       "positive even number (rotate_half pairs the two halves)", fname, pct_name,
                       pct, c->d_head, n);
    c->pos = HS_POS_ROTARY;
    c->rotary_dim = n == c->d_head ? 0 : n;
    c->rotary_base = (float)base;
    c->rotary_adjacent_pairs = 0;
    return HS_OK;
}

/* n_ctx for a family without a position table: its max_position_embeddings,
 * at most 4096 (hs_config_validate's bound). */
static int rotary_ctx(int npos)
{
    return npos < 4096 ? npos : 4096;
}

/* ------------------------------------------------------------------------ */
/* The families                                                              */

/* GPT-Neo's attention_types [[[kind, ...], n], ...] into c->attn_local
 * (GPTNeoConfig.expand_attention_types_params), covering num_layers exactly;
 * attention_layers, when given, must be that expansion. */
static hs_status neo_layers(const char *fname, const cJSON *o, hs_config *c, hs_error *err)
{
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(o, "attention_types"), *g;
    int n = 0;
    unsigned char local[HS_MAX_LAYERS + 1];
    if (types == NULL) { /* GPTNeoConfig's default: [[["global", "local"], 12]] */
        for (; n < 24; n++) local[n] = (unsigned char)(n % 2);
    } else {
        if (!cJSON_IsArray(types))
            return hs_fail(err, HS_ERR_CONFIG, "%s: attention_types must be a list of "
                           "[[kind, ...], count]", fname);
        cJSON_ArrayForEach(g, types) {
            const cJSON *kinds = cJSON_GetArrayItem(g, 0), *cnt = cJSON_GetArrayItem(g, 1), *k;
            if (!cJSON_IsArray(g) || cJSON_GetArraySize(g) != 2 || !cJSON_IsArray(kinds) ||
                !cJSON_IsNumber(cnt) || cnt->valuedouble < 0 || cnt->valuedouble > HS_MAX_LAYERS ||
                floor(cnt->valuedouble) != cnt->valuedouble)
                return hs_fail(err, HS_ERR_CONFIG, "%s: attention_types must be a list of "
                               "[[kind, ...], count]", fname);
            for (int r = 0; r < (int)cnt->valuedouble; r++)
                cJSON_ArrayForEach(k, kinds) {
                    const int loc = cJSON_IsString(k) && strcmp(k->valuestring, "local") == 0;
                    if (!loc && !(cJSON_IsString(k) && strcmp(k->valuestring, "global") == 0))
                        return hs_fail(err, HS_ERR_CONFIG, "%s: attention type '%.32s' (only "
                                       "\"global\" and \"local\")", fname,
                                       cJSON_IsString(k) ? k->valuestring : "?");
                    if (n < HS_MAX_LAYERS) local[n] = (unsigned char)loc;
                    n++;
                }
        }
    }
    if (n != c->n_layers)
        return hs_fail(err, HS_ERR_CONFIG, "%s: attention_types give %d layers, num_layers is %d",
                       fname, n, c->n_layers);
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(o, "attention_layers");
    if (layers != NULL) {
        int l = 0, same = cJSON_IsArray(layers) && cJSON_GetArraySize(layers) == n;
        cJSON_ArrayForEach(g, layers) {
            same = same && cJSON_IsString(g) && l < n &&
                   strcmp(g->valuestring, local[l] ? "local" : "global") == 0;
            l++;
        }
        if (!same)
            return hs_fail(err, HS_ERR_CONFIG, "%s: attention_layers is not the expansion of "
                           "attention_types (transformers recomputes it from attention_types)", fname);
    }
    for (int l = 0; l < n && l < HS_MAX_LAYERS; l++) c->attn_local[l] = local[l];
    return HS_OK;
}

/* GPTNeoConfig's defaults: vocab 50257, 2048 positions, hidden 2048, 24
 * layers, 16 heads, window 256, gelu_new, eps 1e-5, tied. */
static hs_status neo_config(const char *fname, const cJSON *o, hs_config *c, hs_hf_info *info,
                            hs_error *err)
{
    int inner = 0, window = 256;
    double eps;
    hs_status s = hs_hf_int(fname, o, "vocab_size", NULL, 1, 1 << 30, 50257, &c->d_vocab, err);
    if (s == HS_OK) s = hs_hf_int(fname, o, "max_position_embeddings", NULL, 1, 1 << 20, 2048, &c->n_ctx, err);
    if (s == HS_OK) s = hs_hf_int(fname, o, "hidden_size", NULL, 1, 1 << 20, 2048, &c->d_model, err);
    if (s == HS_OK) s = hs_hf_int(fname, o, "num_layers", "num_hidden_layers", 1, 1 << 20, 24, &c->n_layers, err);
    if (s == HS_OK) s = hs_hf_int(fname, o, "num_heads", "num_attention_heads", 1, 1 << 20, 16, &c->n_heads, err);
    if (s == HS_OK) s = hs_hf_int(fname, o, "window_size", NULL, 1, 1 << 20, 256, &window, err);
    if (s == HS_OK && !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "intermediate_size")))
        s = hs_hf_int(fname, o, "intermediate_size", NULL, 1, 1 << 20, 0, &inner, err);
    if (s == HS_OK) s = get_num(fname, o, "layer_norm_epsilon", 1e-5, 1, &eps, err);
    if (s == HS_OK) s = get_act(fname, o, "activation_function", "gelu_new", c, err);
    if (s == HS_OK) s = hs_hf_bool(fname, o, "tie_word_embeddings", 1, &info->tied, err);
    if (s != HS_OK) return s;
    if (c->d_model % c->n_heads != 0) /* GPTNeoSelfAttention raises the same */
        return hs_fail(err, HS_ERR_CONFIG, "%s: hidden_size %d is not a multiple of num_heads %d",
                       fname, c->d_model, c->n_heads);
    c->d_head = c->d_model / c->n_heads;
    c->d_mlp = inner ? inner : 4 * c->d_model;
    c->eps = (float)eps;
    c->attn_scale = 1.0f; /* GPTNeoSelfAttention._attn: q k^T, unscaled */
    s = neo_layers(fname, o, c, err);
    if (s != HS_OK) return s;
    int any_local = 0;
    for (int l = 0; l < c->n_layers && l < HS_MAX_LAYERS; l++) any_local |= c->attn_local[l];
    c->window_size = any_local ? window : 0;
    info->qkv_bias = 0;
    info->o_bias = 1;
    return HS_OK;
}

/* GPTNeoXConfig's defaults: vocab 50432, hidden 6144, 44 layers, 64 heads,
 * intermediate 24576, gelu, rotary_pct 0.25, base 10000, 2048 positions,
 * eps 1e-5, untied, parallel residual, attention_bias true. */
static hs_status neox_config(const char *fname, const cJSON *o, hs_config *c, hs_hf_info *info,
                             hs_error *err)
{
    int npos = 0, par = 1;
    double eps, pct, pct2, base, base2;
    hs_status s = hs_hf_int(fname, o, "vocab_size", NULL, 1, 1 << 30, 50432, &c->d_vocab, err);
    if (s == HS_OK) s = hs_hf_int(fname, o, "max_position_embeddings", NULL, 1, 1 << 30, 2048, &npos, err);
    if (s == HS_OK) s = hs_hf_int(fname, o, "hidden_size", NULL, 1, 1 << 20, 6144, &c->d_model, err);
    if (s == HS_OK) s = hs_hf_int(fname, o, "num_hidden_layers", NULL, 1, 1 << 20, 44, &c->n_layers, err);
    if (s == HS_OK) s = hs_hf_int(fname, o, "num_attention_heads", NULL, 1, 1 << 20, 64, &c->n_heads, err);
    if (s == HS_OK) s = hs_hf_int(fname, o, "intermediate_size", NULL, 1, 1 << 20, 24576, &c->d_mlp, err);
    if (s == HS_OK) s = get_act(fname, o, "hidden_act", "gelu", c, err);
    if (s == HS_OK) s = get_num(fname, o, "rotary_pct", 0.25, 1, &pct, err);
    if (s == HS_OK) s = get_num(fname, o, "partial_rotary_factor", pct, 1, &pct2, err);
    if (s == HS_OK) s = get_num(fname, o, "rotary_emb_base", 10000, 1, &base, err);
    if (s == HS_OK) s = get_num(fname, o, "rope_theta", base, 1, &base2, err);
    if (s == HS_OK) s = get_num(fname, o, "layer_norm_eps", 1e-5, 1, &eps, err);
    if (s == HS_OK) s = hs_hf_bool(fname, o, "tie_word_embeddings", 0, &info->tied, err);
    if (s == HS_OK) s = hs_hf_bool(fname, o, "use_parallel_residual", 1, &par, err);
    if (s == HS_OK) s = hs_hf_bool(fname, o, "attention_bias", 1, &info->qkv_bias, err);
    if (s != HS_OK) return s;
    /* GPTNeoXConfig sets partial_rotary_factor and rope_theta from rotary_pct
     * and rotary_emb_base: a file holding both holds them equal */
    if (pct2 != pct)
        return hs_fail(err, HS_ERR_CONFIG, "%s: rotary_pct %g and partial_rotary_factor %g differ "
                       "(transformers uses rotary_pct)", fname, pct, pct2);
    if (base2 != base)
        return hs_fail(err, HS_ERR_CONFIG, "%s: rotary_emb_base %g and rope_theta %g differ "
                       "(transformers uses rotary_emb_base)", fname, base, base2);
    if (c->d_model % c->n_heads != 0)
        return hs_fail(err, HS_ERR_CONFIG, "%s: hidden_size %d is not a multiple of "
                       "num_attention_heads %d", fname, c->d_model, c->n_heads);
    c->d_head = c->d_model / c->n_heads;
    c->n_ctx = rotary_ctx(npos);
    c->eps = (float)eps;
    c->parallel_attn_mlp = par;
    info->o_bias = info->qkv_bias;
    s = set_rotary(fname, "rotary_pct", pct, base, c, err);
    if (s == HS_OK) s = rope_scaling(fname, o, c, err);
    return s;
}

/* LlamaConfig's defaults: vocab 32000, hidden 4096, intermediate 11008, 32
 * layers and heads, kv heads = heads, silu, 2048 positions, eps 1e-6, theta
 * 10000, untied. Qwen2Config: vocab 151936, intermediate 22016, 32768
 * positions. MistralConfig: intermediate 14336, 8 kv heads, 131072
 * positions, sliding_window 4096. */
static hs_status llama_config(const char *fname, const cJSON *o, hs_hf_family f, hs_config *c,
                              hs_hf_info *info, hs_error *err)
{
    const int qwen = f == HS_HF_QWEN2, mistral = f == HS_HF_MISTRAL;
    int npos = 0, kv = 0, dh = 0, window = 0, bias = 0;
    double eps, theta, pct;
    hs_status s = hs_hf_int(fname, o, "vocab_size", NULL, 1, 1 << 30, qwen ? 151936 : 32000, &c->d_vocab, err);
    if (s == HS_OK) s = hs_hf_int(fname, o, "max_position_embeddings", NULL, 1, 1 << 30,
                                  qwen ? 32768 : mistral ? 131072 : 2048, &npos, err);
    if (s == HS_OK) s = hs_hf_int(fname, o, "hidden_size", NULL, 1, 1 << 20, 4096, &c->d_model, err);
    if (s == HS_OK) s = hs_hf_int(fname, o, "intermediate_size", NULL, 1, 1 << 20,
                                  qwen ? 22016 : mistral ? 14336 : 11008, &c->d_mlp, err);
    if (s == HS_OK) s = hs_hf_int(fname, o, "num_hidden_layers", NULL, 1, 1 << 20, 32, &c->n_layers, err);
    if (s == HS_OK) s = hs_hf_int(fname, o, "num_attention_heads", NULL, 1, 1 << 20, 32, &c->n_heads, err);
    if (s == HS_OK && !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "num_key_value_heads")))
        s = hs_hf_int(fname, o, "num_key_value_heads", NULL, 1, 1 << 20, mistral ? 8 : 0, &kv, err);
    if (s == HS_OK && !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "head_dim")))
        s = hs_hf_int(fname, o, "head_dim", NULL, 1, 1 << 20, 0, &dh, err);
    if (s == HS_OK) s = get_act(fname, o, "hidden_act", "silu", c, err);
    if (s == HS_OK) s = get_num(fname, o, "rms_norm_eps", 1e-6, 1, &eps, err);
    if (s == HS_OK) s = get_num(fname, o, "rope_theta", 10000.0, 1, &theta, err);
    if (s == HS_OK) s = get_num(fname, o, "partial_rotary_factor", 1.0, 1, &pct, err);
    if (s == HS_OK) s = hs_hf_bool(fname, o, "tie_word_embeddings", 0, &info->tied, err);
    if (s == HS_OK && f == HS_HF_LLAMA) s = hs_hf_bool(fname, o, "attention_bias", 0, &bias, err);
    if (s == HS_OK && mistral && !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "sliding_window")))
        s = hs_hf_int(fname, o, "sliding_window", NULL, 1, 1 << 30, 4096, &window, err);
    if (s != HS_OK) return s;
    if (kv == 0) kv = c->n_heads;
    if (c->n_heads % kv != 0)
        return hs_fail(err, HS_ERR_CONFIG, "%s: num_key_value_heads %d does not divide "
                       "num_attention_heads %d (grouped-query attention repeats each key/value "
                       "head over a whole group)", fname, kv, c->n_heads);
    if (dh == 0 && c->d_model % c->n_heads != 0)
        return hs_fail(err, HS_ERR_CONFIG, "%s: hidden_size %d is not a multiple of "
                       "num_attention_heads %d and no head_dim is given", fname, c->d_model, c->n_heads);
    c->d_head = dh ? dh : c->d_model / c->n_heads;
    c->n_key_value_heads = kv == c->n_heads ? 0 : kv;
    c->n_ctx = rotary_ctx(npos);
    c->norm = HS_NORM_RMSNORM;
    c->eps = (float)eps;
    c->gated_mlp = 1;
    /* MistralAttention masks keys i - j >= sliding_window on every layer; a
     * window as long as the context masks nothing */
    if (mistral && window > 0 && window < c->n_ctx) {
        c->window_size = window;
        for (int l = 0; l < c->n_layers && l < HS_MAX_LAYERS; l++) c->attn_local[l] = 1;
    }
    info->qkv_bias = qwen || bias;
    info->o_bias = bias;
    s = set_rotary(fname, "partial_rotary_factor", pct, theta, c, err);
    if (s == HS_OK) s = rope_scaling(fname, o, c, err);
    return s;
}

hs_status hs_checkpoint_family_config(const char *fname, const cJSON *o, const hs_st_file *st,
                                      hs_config *c, hs_hf_info *info, hs_error *err)
{
    const hs_hf_family f = info->family;
    HS_ASSERT(f > HS_HF_GPT2 && f < HS_HF_N_FAMILIES);
    hs_status s = check_fields(fname, o, f, err);
    if (s != HS_OK) return s;
    c->bias = 1; /* the biases a family lacks are zeros (checkpoint_family_fill.c) */
    if (f == HS_HF_GPT_NEO)
        s = neo_config(fname, o, c, info, err);
    else if (f == HS_HF_GPT_NEOX)
        s = neox_config(fname, o, c, info, err);
    else
        s = llama_config(fname, o, f, c, info, err);
    if (s != HS_OK) return s;
    if (c->n_layers > HS_MAX_LAYERS)
        return hs_fail(err, HS_ERR_CONFIG, "%s: %d layers: headscope runs at most %d", fname,
                       c->n_layers, HS_MAX_LAYERS);
    (void)st;
    return HS_OK;
}
