/*
 * model/checkpoint_tl.c -- the TransformerLens checkpoint layout, headscope's
 * own (DESIGN.md, "Checkpoint: safetensors"; the seam: checkpoint_internal.h).
 *
 * Tensors: TransformerLens' state-dict names and shapes, which are those of
 * the parameter table itself (model/model.c): embed.W_E, pos_embed.W_pos,
 * blocks.{l}.attn.W_Q/W_K/W_V (H, D, dh), W_O (H, dh, D), b_Q/b_K/b_V, b_O,
 * blocks.{l}.ln1.w/b, ln2.w/b, mlp.W_in/b_in/W_out/b_out, ln_final.w/b,
 * unembed.W_U/b_U; so filling the table is a copy by name. headscope's AdamW
 * moments: "optimizer.m.<name>" and "optimizer.v.<name>", with metadata
 * "optimizer" = {"adam_t": steps}. Buffers that hold no weights:
 * blocks.{l}.attn.mask (read: it must be the causal mask, or on a local
 * layer (use_local_attn) the window's; any other mask is refused) and
 * blocks.{l}.attn.IGNORE (not read).
 *
 * Config: __metadata__ "config", a JSON object with HookedTransformerConfig
 * field names only, each computed as TransformerLens computes it, inert, or
 * refused unless at its default (TL_FIELDS; tests/test_config_fields.c holds
 * the pinned list to it); and "headscope_config", the switches
 * TransformerLens has no field for (absent for a plain TL-shaped model).
 */
#include "model/model.h"
#include "model/checkpoint.h"
#include "model/checkpoint_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Tensor names                                                              */

int hs_checkpoint_is_tl_buffer(const char *name)
{
    static const char prefix[] = "blocks.";
    if (strncmp(name, prefix, sizeof prefix - 1) != 0) return 0;
    const char *p = name + sizeof prefix - 1;
    if (*p < '0' || *p > '9') return 0;
    while (*p >= '0' && *p <= '9') p++;
    return strcmp(p, ".attn.mask") == 0 || strcmp(p, ".attn.IGNORE") == 0;
}

/* A TransformerLens config or embedding. The loader also gives this layout
 * every file no layout recognises (checkpoint_internal.h): its config step
 * then names what the file lacks. */
static int tl_recognises(const hs_st_file *st)
{
    return hs_st_meta(st, "config") != NULL || hs_st_find(st, "embed.W_E") >= 0;
}

/* ------------------------------------------------------------------------ */
/* The config                                                                */

/* Reads an int field; missing -> *out unchanged and 0 returned in *present. */
static hs_status get_int(const char *fname, const char *obj_name, const cJSON *o,
                         const char *key, int lo, int hi, int *out, int *present, hs_error *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    *present = it != NULL && !cJSON_IsNull(it);
    if (!*present) return HS_OK;
    double v = cJSON_IsNumber(it) ? it->valuedouble : NAN;
    if (!isfinite(v) || floor(v) != v || v < lo || v > hi)
        return hs_fail(err, HS_ERR_CONFIG, "%s: %s field '%s' must be an integer in [%d, %d]",
                       fname, obj_name, key, lo, hi);
    *out = (int)v;
    return HS_OK;
}

/* Every HookedTransformerConfig field headscope knows (the pinned list,
 * tests/checkpoint/tl_config_fields.txt) and what the loader does with it:
 * computed as TransformerLens computes it, inert (changes nothing in the
 * forward: names, devices, initialisation, hook switches whose points
 * headscope always offers, fields read only by a refused feature), or refused
 * unless it has its "off" value (null, false, a negative number, or for
 * dtype float32). tests/test_config_fields.c keeps this table and the pinned
 * list in step. */
static const struct {
    const char *name;
    hs_tl_field kind;
} TL_FIELDS[] = {
    {"n_layers", HS_TL_COMPUTED}, {"d_model", HS_TL_COMPUTED}, {"n_ctx", HS_TL_COMPUTED},
    {"d_head", HS_TL_COMPUTED}, {"n_heads", HS_TL_COMPUTED}, {"d_mlp", HS_TL_COMPUTED},
    {"act_fn", HS_TL_COMPUTED}, {"d_vocab", HS_TL_COMPUTED}, {"eps", HS_TL_COMPUTED},
    {"use_attn_scale", HS_TL_COMPUTED}, {"attn_scale", HS_TL_COMPUTED},
    {"scale_attn_by_inverse_layer_idx", HS_TL_COMPUTED},
    {"normalization_type", HS_TL_COMPUTED}, {"attention_dir", HS_TL_COMPUTED},
    {"attn_only", HS_TL_COMPUTED}, {"positional_embedding_type", HS_TL_COMPUTED},
    {"d_vocab_out", HS_TL_COMPUTED}, {"n_key_value_heads", HS_TL_COMPUTED},
    {"model_name", HS_TL_INERT}, {"use_attn_result", HS_TL_INERT},
    {"use_split_qkv_input", HS_TL_INERT}, {"use_hook_mlp_in", HS_TL_INERT},
    {"use_attn_in", HS_TL_INERT}, {"use_hook_tokens", HS_TL_INERT},
    {"ungroup_grouped_query_attention", HS_TL_INERT}, {"original_architecture", HS_TL_INERT},
    {"from_checkpoint", HS_TL_INERT}, {"checkpoint_index", HS_TL_INERT},
    {"checkpoint_label_type", HS_TL_INERT}, {"checkpoint_value", HS_TL_INERT},
    {"tokenizer_name", HS_TL_INERT}, {"window_size", HS_TL_COMPUTED}, {"attn_types", HS_TL_COMPUTED},
    {"init_mode", HS_TL_INERT}, {"device", HS_TL_INERT}, {"n_devices", HS_TL_INERT},
    {"seed", HS_TL_INERT}, {"initializer_range", HS_TL_INERT}, {"init_weights", HS_TL_INERT},
    {"n_params", HS_TL_INERT}, {"default_prepend_bos", HS_TL_INERT},
    {"tokenizer_prepends_bos", HS_TL_INERT}, {"rotary_dim", HS_TL_COMPUTED},
    {"rotary_base", HS_TL_COMPUTED}, {"rotary_adjacent_pairs", HS_TL_COMPUTED},
    {"use_NTK_by_parts_rope", HS_TL_COMPUTED}, {"NTK_by_parts_low_freq_factor", HS_TL_COMPUTED},
    {"NTK_by_parts_high_freq_factor", HS_TL_COMPUTED}, {"NTK_by_parts_factor", HS_TL_COMPUTED},
    {"trust_remote_code", HS_TL_INERT}, {"experts_per_token", HS_TL_INERT},
    {"relative_attention_max_distance", HS_TL_INERT},
    {"relative_attention_num_buckets", HS_TL_INERT}, {"decoder_start_token_id", HS_TL_INERT},
    {"tie_word_embeddings", HS_TL_INERT},
    /* TL 3.x: uses_rms_norm and layer_norm_folding are read by TransformerBridge
     * alone (HookedTransformer follows normalization_type); the RoPE and YaRN
     * fields only with rotary positions, norm_topk_prob only with experts */
    {"uses_rms_norm", HS_TL_INERT}, {"layer_norm_folding", HS_TL_INERT},
    {"rotary_base_local", HS_TL_INERT}, {"rotary_scaling_factor", HS_TL_INERT},
    {"NTK_original_ctx_len", HS_TL_COMPUTED}, {"use_yarn_rope", HS_TL_INERT},
    {"yarn_factor", HS_TL_INERT}, {"yarn_attention_factor", HS_TL_INERT},
    {"yarn_beta_fast", HS_TL_INERT}, {"yarn_beta_slow", HS_TL_INERT},
    {"yarn_original_max_position_embeddings", HS_TL_INERT}, {"norm_topk_prob", HS_TL_INERT},
    {"use_local_attn", HS_TL_COMPUTED}, {"use_qk_norm", HS_TL_REFUSED},
    {"final_rms", HS_TL_REFUSED}, {"parallel_attn_mlp", HS_TL_COMPUTED},
    {"gated_mlp", HS_TL_COMPUTED}, {"dtype", HS_TL_REFUSED}, {"post_embedding_ln", HS_TL_REFUSED},
    {"load_in_4bit", HS_TL_REFUSED}, {"num_experts", HS_TL_REFUSED},
    {"use_normalization_before_and_after", HS_TL_REFUSED},
    {"attn_scores_soft_cap", HS_TL_REFUSED}, {"output_logits_soft_cap", HS_TL_REFUSED},
};

int hs_checkpoint_tl_field(const char *name)
{
    for (size_t i = 0; i < sizeof TL_FIELDS / sizeof TL_FIELDS[0]; i++)
        if (strcmp(TL_FIELDS[i].name, name) == 0) return (int)TL_FIELDS[i].kind;
    return -1;
}

/* A refused field is accepted only at its "off" value. */
static int tl_off(const char *key, const cJSON *it)
{
    if (cJSON_IsNull(it) || cJSON_IsFalse(it)) return 1;
    if (cJSON_IsNumber(it) && it->valuedouble < 0) return 1; /* -1.0 = not set */
    if (strcmp(key, "dtype") == 0 && cJSON_IsString(it))
        return strcmp(it->valuestring, "float32") == 0 || strcmp(it->valuestring, "torch.float32") == 0;
    return 0;
}

/* Every field of the config is known; refused ones are off. */
static hs_status check_tl_fields(const char *fname, const cJSON *o, hs_error *err)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, o) {
        const int kind = hs_checkpoint_tl_field(it->string);
        if (kind < 0)
            return hs_fail(err, HS_ERR_CONFIG, "%s: config field '%.64s' is not a TransformerLens "
                           "field headscope knows (tests/checkpoint/tl_config_fields.txt)",
                           fname, it->string);
        if (kind != HS_TL_REFUSED || tl_off(it->string, it)) continue;
        char *v = cJSON_PrintUnformatted(it);
        hs_status s = hs_fail(err, HS_ERR_CONFIG, "%s: config field '%s' = %.40s is not supported "
                              "by headscope (it computes only the TransformerLens default)",
                              fname, it->string, v ? v : "?");
        cJSON_free(v);
        return s;
    }
    return HS_OK;
}

/* n_layers, d_model, n_ctx, d_head, d_vocab (required), then n_heads
 * (TransformerLens' d_model / d_head when absent). */
static hs_status tl_dims(const char *fname, const cJSON *o, hs_config *c, hs_error *err)
{
    hs_status s;
    int present;
#define REQ_INT(key, lo, hi, dst)                                                             \
    do {                                                                                    \
        s = get_int(fname, "config", o, key, lo, hi, dst, &present, err);                     \
        if (s != HS_OK) return s;                                                           \
        if (!present)                                                                       \
            return hs_fail(err, HS_ERR_CONFIG, "%s: config has no '%s'", fname, key);       \
    } while (0)
    REQ_INT("n_layers", 1, HS_MAX_LAYERS, &c->n_layers);
    REQ_INT("d_model", 1, 1 << 20, &c->d_model);
    REQ_INT("n_ctx", 1, 1 << 20, &c->n_ctx);
    REQ_INT("d_head", 1, 1 << 20, &c->d_head);
    REQ_INT("d_vocab", 1, 1 << 30, &c->d_vocab);
#undef REQ_INT
    c->n_heads = -1;
    s = get_int(fname, "config", o, "n_heads", -1, 1 << 20, &c->n_heads, &present, err);
    if (s != HS_OK) return s;
    if (c->n_heads == -1) c->n_heads = c->d_model / c->d_head; /* TransformerLens' rule */
    if (c->n_heads == 0)
        return hs_fail(err, HS_ERR_CONFIG, "%s: config n_heads is 0", fname);
    return HS_OK;
}

/* attn_only and d_mlp (4 d_model when absent), d_vocab_out (one
 * vocabulary), act_fn (required unless attn_only). */
static hs_status tl_mlp(const char *fname, const cJSON *o, hs_config *c, hs_error *err)
{
    hs_status s;
    int present;
    int attn_only = 0;
    const cJSON *ao = cJSON_GetObjectItemCaseSensitive(o, "attn_only");
    if (ao != NULL && !cJSON_IsNull(ao)) {
        if (!cJSON_IsBool(ao))
            return hs_fail(err, HS_ERR_CONFIG, "%s: config field 'attn_only' must be true or "
                           "false", fname);
        attn_only = cJSON_IsTrue(ao);
    }
    int d_mlp = -1;
    s = get_int(fname, "config", o, "d_mlp", 0, 1 << 20, &d_mlp, &present, err);
    if (s != HS_OK) return s;
    if (attn_only) {
        if (present && d_mlp != 0)
            return hs_fail(err, HS_ERR_CONFIG, "%s: config is inconsistent: attn_only is true "
                           "but d_mlp is %d", fname, d_mlp);
        c->d_mlp = 0;
    } else if (!present) {
        c->d_mlp = 4 * c->d_model; /* TransformerLens' default */
    } else if (d_mlp == 0) {
        return hs_fail(err, HS_ERR_CONFIG, "%s: config is inconsistent: d_mlp is 0 but "
                       "attn_only is false", fname);
    } else {
        c->d_mlp = d_mlp;
    }

    int d_vocab_out = -1;
    s = get_int(fname, "config", o, "d_vocab_out", -1, 1 << 30, &d_vocab_out, &present, err);
    if (s != HS_OK) return s;
    if (d_vocab_out != -1 && d_vocab_out != c->d_vocab)
        return hs_fail(err, HS_ERR_CONFIG, "%s: config d_vocab_out %d differs from d_vocab %d; "
                       "headscope needs one vocabulary", fname, d_vocab_out, c->d_vocab);

    const cJSON *act = cJSON_GetObjectItemCaseSensitive(o, "act_fn");
    if (act != NULL && !cJSON_IsNull(act)) {
        int a = cJSON_IsString(act) ? hs_checkpoint_act_parse(act->valuestring) : -1;
        if (a < 0)
            return hs_fail(err, HS_ERR_CONFIG, "%s: config act_fn '%.32s' is not supported "
                           "(headscope has \"gelu\" (exact erf), \"gelu_new\" (tanh), \"relu\" "
                           "and \"silu\")", fname, cJSON_IsString(act) ? act->valuestring : "?");
        c->act = (hs_act)a;
    } else if (!attn_only) {
        return hs_fail(err, HS_ERR_CONFIG, "%s: config has no act_fn (TransformerLens requires "
                       "one unless attn_only)", fname);
    }
    return HS_OK;
}

/* normalization_type ("LN" when absent; "LNPre" / "RMSPre": the norm
 * without weights, TransformerLens' LayerNormPre / RMSNormPre) and eps. */
static hs_status tl_norm(const char *fname, const cJSON *o, hs_config *c, hs_error *err)
{
    static const struct {
        const char *name;
        hs_norm norm;
        int pre;
    } NORMS[] = {{"LN", HS_NORM_LAYERNORM, 0}, {"RMS", HS_NORM_RMSNORM, 0},
                 {"LNPre", HS_NORM_LAYERNORM, 1}, {"RMSPre", HS_NORM_RMSNORM, 1}};
    const cJSON *nt = cJSON_GetObjectItemCaseSensitive(o, "normalization_type");
    c->norm = HS_NORM_LAYERNORM; /* TransformerLens' default "LN" */
    if (cJSON_IsNull(nt)) c->norm = HS_NORM_NONE;
    if (nt != NULL && !cJSON_IsNull(nt)) {
        size_t i = 0;
        while (i < sizeof NORMS / sizeof NORMS[0] &&
               !(cJSON_IsString(nt) && strcmp(nt->valuestring, NORMS[i].name) == 0))
            i++;
        if (i == sizeof NORMS / sizeof NORMS[0])
            return hs_fail(err, HS_ERR_CONFIG, "%s: config normalization_type '%.32s' is not "
                           "supported (\"LN\", \"RMS\", \"LNPre\", \"RMSPre\" or null)", fname,
                           cJSON_IsString(nt) ? nt->valuestring : "?");
        c->norm = NORMS[i].norm;
        c->norm_pre = NORMS[i].pre;
    }

    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(o, "eps");
    if (eps != NULL) {
        if (!cJSON_IsNumber(eps) || !(eps->valuedouble > 0) || !isfinite(eps->valuedouble) ||
            !isfinite((float)eps->valuedouble) || (float)eps->valuedouble <= 0.0f)
            return hs_fail(err, HS_ERR_CONFIG, "%s: config eps must be a positive number",
                           fname);
        c->eps = (float)eps->valuedouble;
    }
    return HS_OK;
}

/* positional_embedding_type, attention_dir, attn_scale, use_attn_scale and
 * scale_attn_by_inverse_layer_idx. */
static hs_status tl_attention(const char *fname, const cJSON *o, hs_config *c, hs_error *err)
{
    const cJSON *pe = cJSON_GetObjectItemCaseSensitive(o, "positional_embedding_type");
    const char *pes = cJSON_IsString(pe) ? pe->valuestring : "?";
    if (pe == NULL || strcmp(pes, "standard") == 0)
        c->pos = HS_POS_LEARNED;
    else if (strcmp(pes, "rotary") == 0)
        c->pos = HS_POS_ROTARY;
    else if (strcmp(pes, "alibi") == 0)
        c->pos = HS_POS_ALIBI;
    else
        return hs_fail(err, HS_ERR_CONFIG, "%s: config positional_embedding_type '%.32s' is not "
                       "supported (\"standard\", \"rotary\" or \"alibi\"; no positions and "
                       "sinusoidal ones are headscope_config pos)", fname, pes);
    const cJSON *ad = cJSON_GetObjectItemCaseSensitive(o, "attention_dir");
    if (ad != NULL && !(cJSON_IsString(ad) && strcmp(ad->valuestring, "causal") == 0))
        return hs_fail(err, HS_ERR_CONFIG, "%s: config attention_dir '%.32s' is not supported "
                       "(only \"causal\")", fname, cJSON_IsString(ad) ? ad->valuestring : "?");
    /* TransformerLens: scores / attn_scale (-1 = sqrt(d_head)); use_attn_scale
     * false divides by 1 whatever attn_scale says */
    const cJSON *as = cJSON_GetObjectItemCaseSensitive(o, "attn_scale");
    if (as != NULL && !cJSON_IsNull(as)) {
        if (!cJSON_IsNumber(as) || !isfinite(as->valuedouble) ||
            !(as->valuedouble > 0 || as->valuedouble == -1.0) || as->valuedouble > 1e30)
            return hs_fail(err, HS_ERR_CONFIG, "%s: config attn_scale must be a positive number "
                           "(or -1 = sqrt(d_head))", fname);
        c->attn_scale = as->valuedouble > 0 ? (float)as->valuedouble : 0.0f;
    }
    const cJSON *us = cJSON_GetObjectItemCaseSensitive(o, "use_attn_scale");
    if (us != NULL && !cJSON_IsNull(us)) {
        if (!cJSON_IsBool(us))
            return hs_fail(err, HS_ERR_CONFIG, "%s: config field 'use_attn_scale' must be true or "
                           "false", fname);
        if (cJSON_IsFalse(us)) c->attn_scale = 1.0f;
    }
    /* TL AbstractAttention: attn_scale *= layer_id + 1 */
    const cJSON *sl = cJSON_GetObjectItemCaseSensitive(o, "scale_attn_by_inverse_layer_idx");
    if (sl != NULL && !cJSON_IsNull(sl)) {
        if (!cJSON_IsBool(sl))
            return hs_fail(err, HS_ERR_CONFIG, "%s: config field 'scale_attn_by_inverse_layer_idx' "
                           "must be true or false", fname);
        c->attn_scale_by_layer = cJSON_IsTrue(sl);
    }
    return HS_OK;
}

/* A finite number field (absent or null: *present 0), > lo. */
static hs_status get_num(const char *fname, const cJSON *o, const char *key, double lo,
                         float *out, int *present, hs_error *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    *present = it != NULL && !cJSON_IsNull(it);
    if (!*present) return HS_OK;
    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || !(it->valuedouble > lo) ||
        it->valuedouble > 1e30)
        return hs_fail(err, HS_ERR_CONFIG, "%s: config field '%s' must be a number above %g",
                       fname, key, lo);
    *out = (float)it->valuedouble;
    return HS_OK;
}

/* A boolean field into *out (absent or null: unchanged). */
static hs_status get_flag(const char *fname, const cJSON *o, const char *key, int *out,
                          hs_error *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (it == NULL || cJSON_IsNull(it)) return HS_OK;
    if (!cJSON_IsBool(it))
        return hs_fail(err, HS_ERR_CONFIG, "%s: config field '%s' must be true or false", fname,
                       key);
    *out = cJSON_IsTrue(it);
    return HS_OK;
}

/* The attention switches (model.h's group) under TransformerLens' names:
 * rotary_dim, rotary_base, rotary_adjacent_pairs, use_NTK_by_parts_rope and
 * its factors, n_key_value_heads, use_local_attn with window_size and
 * attn_types. rotary_dim = d_head and rotary_base 10000 are stored as 0
 * (the defaults), so a written config reads back to the same struct. */
static hs_status tl_attn_switches(const char *fname, const cJSON *o, hs_config *c, hs_error *err)
{
    int present, v = 0;
    hs_status s = get_int(fname, "config", o, "rotary_dim", 0, 1 << 20, &v, &present, err);
    if (s != HS_OK) return s;
    if (present) c->rotary_dim = v == c->d_head ? 0 : v;
    float f = 0.0f;
    if ((s = get_num(fname, o, "rotary_base", 1.0, &f, &present, err)) != HS_OK) return s;
    if (present) c->rotary_base = f == 10000.0f ? 0.0f : f;
    if ((s = get_flag(fname, o, "rotary_adjacent_pairs", &c->rotary_adjacent_pairs, err)) != HS_OK ||
        (s = get_flag(fname, o, "use_NTK_by_parts_rope", &c->use_NTK_by_parts_rope, err)) != HS_OK ||
        (s = get_num(fname, o, "NTK_by_parts_factor", 0.0, &c->NTK_by_parts_factor, &present,
                     err)) != HS_OK ||
        (s = get_num(fname, o, "NTK_by_parts_low_freq_factor", 0.0,
                     &c->NTK_by_parts_low_freq_factor, &present, err)) != HS_OK ||
        (s = get_num(fname, o, "NTK_by_parts_high_freq_factor", 0.0,
                     &c->NTK_by_parts_high_freq_factor, &present, err)) != HS_OK)
        return s;
    s = get_int(fname, "config", o, "NTK_original_ctx_len", 1, 1 << 30, &v, &present, err);
    if (s != HS_OK) return s;
    if (present) c->NTK_original_ctx_len = v;
    s = get_int(fname, "config", o, "n_key_value_heads", 0, 1 << 20, &v, &present, err);
    if (s != HS_OK) return s;
    if (present && v > 0) { /* 0: no grouping */
        if (c->n_heads % v != 0)
            return hs_fail(err, HS_ERR_CONFIG, "%s: config n_key_value_heads %d does not divide "
                           "n_heads %d", fname, v, c->n_heads);
        c->n_key_value_heads = v == c->n_heads ? 0 : v;
    }
    int local = 0;
    if ((s = get_flag(fname, o, "use_local_attn", &local, err)) != HS_OK) return s;
    if (!local) return HS_OK;
    s = get_int(fname, "config", o, "window_size", 1, 1 << 20, &c->window_size, &present, err);
    if (s != HS_OK) return s;
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(o, "attn_types");
    if (!present || !cJSON_IsArray(types) || cJSON_GetArraySize(types) != c->n_layers)
        return hs_fail(err, HS_ERR_CONFIG, "%s: config use_local_attn needs window_size and "
                       "attn_types (one \"global\" or \"local\" per layer, %d)", fname,
                       c->n_layers);
    int l = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, types) {
        const char *t = cJSON_IsString(it) ? it->valuestring : "";
        if (strcmp(t, "local") != 0 && strcmp(t, "global") != 0)
            return hs_fail(err, HS_ERR_CONFIG, "%s: config attn_types[%d] must be \"global\" or "
                           "\"local\"", fname, l);
        c->attn_local[l++] = t[0] == 'l';
    }
    return HS_OK;
}

/* gated_mlp and parallel_attn_mlp (false when absent or null). */
static hs_status tl_block(const char *fname, const cJSON *o, hs_config *c, hs_error *err)
{
    static const char *const keys[2] = {"gated_mlp", "parallel_attn_mlp"};
    int *dst[2] = {&c->gated_mlp, &c->parallel_attn_mlp};
    for (int i = 0; i < 2; i++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, keys[i]);
        if (it == NULL || cJSON_IsNull(it)) continue;
        if (!cJSON_IsBool(it))
            return hs_fail(err, HS_ERR_CONFIG, "%s: config field '%s' must be true or false", fname,
                           keys[i]);
        *dst[i] = cJSON_IsTrue(it);
    }
    return HS_OK;
}

/* The TransformerLens `config` object o into *c, a group of fields at a time
 * in a fixed order (the first bad field is the one reported), then every
 * field known and the refused ones off (check_tl_fields). */
static hs_status parse_tl_config(const char *fname, const cJSON *o, hs_config *c,
                                 hs_error *err)
{
    hs_status s = tl_dims(fname, o, c, err);
    if (s == HS_OK) s = tl_mlp(fname, o, c, err);
    if (s == HS_OK) s = tl_norm(fname, o, c, err);
    if (s == HS_OK) s = tl_attention(fname, o, c, err);
    if (s == HS_OK) s = tl_block(fname, o, c, err);
    if (s == HS_OK) s = check_tl_fields(fname, o, err);
    if (s != HS_OK) return s;
    return tl_attn_switches(fname, o, c, err);
}

static hs_status get_bool(const char *fname, const cJSON *it, const char *key, int *out,
                          hs_error *err)
{
    if (!cJSON_IsBool(it))
        return hs_fail(err, HS_ERR_CONFIG, "%s: headscope_config field '%s' must be true or "
                       "false", fname, key);
    *out = cJSON_IsTrue(it) ? 1 : 0;
    return HS_OK;
}

static hs_status parse_hs_config(const char *fname, const cJSON *o, hs_config *c,
                                 hs_error *err)
{
    hs_status s = HS_OK;
    const cJSON *it;
    cJSON_ArrayForEach(it, o) {
        const char *k = it->string;
        if (strcmp(k, "attn") == 0 || strcmp(k, "pos") == 0) {
            int is_attn = k[0] == 'a';
            int v = !cJSON_IsString(it) ? -1
                    : is_attn           ? hs_attn_parse(it->valuestring)
                                        : hs_pos_parse(it->valuestring);
            if (v < 0)
                return hs_fail(err, HS_ERR_CONFIG, "%s: headscope_config %s '%.32s' is not "
                               "known (%s)", fname, k, cJSON_IsString(it) ? it->valuestring : "?",
                               is_attn ? "softmax or uniform" : "learned, none, sinusoidal, rotary or alibi");
            if (is_attn)
                c->attn = (hs_attn)v;
            else
                c->pos = (hs_pos)v;
        } else if (strcmp(k, "ln1") == 0) {
            s = get_bool(fname, it, k, &c->ln1, err);
        } else if (strcmp(k, "ln_final") == 0) {
            s = get_bool(fname, it, k, &c->ln_final, err);
        } else if (strcmp(k, "embed_norm") == 0) {
            s = get_bool(fname, it, k, &c->embed_norm, err);
        } else if (strcmp(k, "bias") == 0) {
            s = get_bool(fname, it, k, &c->bias, err);
        } else if (strcmp(k, "attn_replace") == 0) {
            s = get_bool(fname, it, k, &c->attn_replace, err);
        } else if (strcmp(k, "norm_place") == 0) {
            const int v = cJSON_IsString(it) ? hs_norm_place_parse(it->valuestring) : -1;
            if (v < 0)
                return hs_fail(err, HS_ERR_CONFIG, "%s: headscope_config norm_place '%.32s' is not "
                               "known (pre or post)", fname, cJSON_IsString(it) ? it->valuestring : "?");
            c->norm_place = (hs_norm_place)v;
        } else if (strcmp(k, "seed") == 0) {
            unsigned long long v = 0;
            int ok = 0;
            if (cJSON_IsNumber(it)) {
                double d = it->valuedouble;
                ok = isfinite(d) && d >= 0 && floor(d) == d && d <= 9007199254740992.0;
                if (ok) v = (unsigned long long)d;
            } else if (cJSON_IsString(it) && it->valuestring[0] >= '0' &&
                       it->valuestring[0] <= '9' && strlen(it->valuestring) <= 20) {
                char *end = NULL;
                errno = 0;
                v = strtoull(it->valuestring, &end, 10);
                ok = *end == '\0' && errno != ERANGE; /* 2^64 and over: not clamped */
            }
            if (!ok)
                return hs_fail(err, HS_ERR_CONFIG, "%s: headscope_config seed must be a "
                               "non-negative integer", fname);
            c->seed = (uint64_t)v;
        } else {
            return hs_fail(err, HS_ERR_CONFIG, "%s: headscope_config has unknown field '%.64s'",
                           fname, k);
        }
        if (s != HS_OK) return s;
    }
    return HS_OK;
}

/* The layout's config step: the metadata's config texts. */
static hs_status tl_config(const hs_ckpt_src *src, hs_config *c, hs_error *err)
{
    return hs_checkpoint_config_parse(src->fname, hs_st_meta(&src->x.st, "config"),
                                      hs_st_meta(&src->x.st, "headscope_config"), c, err);
}

hs_status hs_checkpoint_config_parse(const char *fname, const char *tl_text, const char *hs_text,
                                     hs_config *c, hs_error *err)
{
    hs_status s = HS_OK;
    cJSON *tl = NULL, *hs = NULL;
    *c = hs_config_default();
    if (tl_text == NULL) {
        s = hs_fail(err, HS_ERR_FORMAT, "%s: no 'config' in __metadata__ (headscope needs the "
                    "TransformerLens HookedTransformerConfig fields there)", fname);
        goto done;
    }
    tl = cJSON_ParseWithLengthOpts(tl_text, strlen(tl_text) + 1, NULL, 1);
    if (!cJSON_IsObject(tl)) {
        s = hs_fail(err, HS_ERR_CONFIG, "%s: metadata 'config' is not a JSON object", fname);
        goto done;
    }
    s = parse_tl_config(fname, tl, c, err);
    if (s != HS_OK) goto done;
    if (hs_text != NULL && hs_text[0] != '\0') {
        hs = cJSON_ParseWithLengthOpts(hs_text, strlen(hs_text) + 1, NULL, 1);
        if (!cJSON_IsObject(hs)) {
            s = hs_fail(err, HS_ERR_CONFIG, "%s: metadata 'headscope_config' is not a JSON "
                        "object", fname);
            goto done;
        }
        s = parse_hs_config(fname, hs, c, err);
    }
done:
    cJSON_Delete(tl);
    cJSON_Delete(hs);
    return s;
}

/* ------------------------------------------------------------------------ */
/* The tensors                                                               */

/* Gradients and moments for m, and m->adam_t from the metadata "optimizer". */
static hs_status tl_optimizer_state(const char *fname, const hs_st_file *st, hs_model *m,
                                    hs_error *err)
{
    const char *ot = hs_st_meta(st, "optimizer");
    cJSON *oj = ot ? cJSON_Parse(ot) : NULL;
    const cJSON *at = cJSON_GetObjectItemCaseSensitive(oj, "adam_t");
    int ok = cJSON_IsNumber(at) && at->valuedouble >= 0 && at->valuedouble <= 1e9 &&
             at->valuedouble == floor(at->valuedouble);
    long adam_t = ok ? (long)at->valuedouble : 0;
    cJSON_Delete(oj);
    if (!ok)
        return hs_fail(err, HS_ERR_FORMAT, "%s: optimizer tensors but no valid 'optimizer' "
                       "metadata ({\"adam_t\": steps})", fname);
    hs_status s = hs_model_alloc_train(m, err);
    if (s != HS_OK) return s;
    m->adam_t = adam_t;
    return HS_OK;
}

/* Which tensor of m a file tensor name is: 0 the parameters, 1 / 2 the
 * AdamW moments ("optimizer.m./v.<name>"); *t NULL for an unknown name. */
static int tl_target(const hs_model *m, const char *name, const hs_tensor_info **t)
{
    int opt = strncmp(name, HS_OPT_M_PREFIX, sizeof HS_OPT_M_PREFIX - 1) == 0   ? 1
              : strncmp(name, HS_OPT_V_PREFIX, sizeof HS_OPT_V_PREFIX - 1) == 0 ? 2
                                                                                : 0;
    *t = hs_model_find_tensor(m, opt ? name + sizeof HS_OPT_M_PREFIX - 1 : name);
    return opt;
}

/* Every tensor of the file known and of its shape (in header order, so the
 * first wrong one is reported), then each read by name straight into the
 * parameter table (or the moments), in file order; then every attn.mask
 * buffer checked causal. */
static hs_status tl_fill(const hs_ckpt_src *src, hs_model *m, unsigned char *filled,
                         const hs_notes *notes, hs_error *err)
{
    (void)notes;
    const char *fname = src->fname;
    const hs_st_file *st = &src->x.st;
    int n_opt = 0;
    for (int i = 0; i < st->n; i++) {
        const hs_tensor_info *t;
        const int opt = tl_target(m, st->names[i], &t);
        if (t == NULL)
            return hs_fail(err, HS_ERR_FORMAT, "%s: unknown tensor '%.64s': not part of the "
                           "model the config describes (HINT: check "
                           "'config'/'headscope_config' in __metadata__)", fname, st->names[i]);
        hs_status s = hs_ckpt_check_shape(fname, t, st->shape[i], st->ndim[i], err);
        if (s != HS_OK) return s;
        HS_ASSERT(st->numel[i] == t->numel);
        n_opt += opt != 0;
    }
    if (n_opt != 0 && n_opt != 2 * m->n_tensors)
        return hs_fail(err, HS_ERR_FORMAT, "%s: %d optimizer tensors, expected none or %d (a "
                       "moment m and v per parameter)", fname, n_opt, 2 * m->n_tensors);
    if (n_opt) {
        hs_status s = tl_optimizer_state(fname, st, m, err);
        if (s != HS_OK) return s;
    }
    for (int o = 0; o < st->n; o++) {
        const int i = src->order[o];
        const hs_tensor_info *t;
        const int opt = tl_target(m, st->names[i], &t);
        float *dst = (opt == 1 ? m->m_mem : opt == 2 ? m->v_mem : m->param_mem) + t->offset;
        hs_status s = hs_ckpt_read(src, i, 0, t->numel, dst, err);
        if (s != HS_OK) return s;
        if (!opt) filled[t - m->tensors] = 1;
    }
    /* attn.mask: TransformerLens' causal mask [n_ctx, n_ctx] (a local layer's: the window's,
     * config use_local_attn); any other mask headscope would compute wrongly: refused
     * (IGNORE, the -inf fill, is not read) */
    hs_ckpt_mask *masks = malloc(((size_t)src->x.bufs.n + 1) * sizeof *masks);
    if (masks == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    int n = 0;
    for (int i = 0; i < src->x.bufs.n; i++) {
        const size_t len = strlen(src->x.bufs.names[i]), k = sizeof ".attn.mask" - 1;
        if (len < k || strcmp(src->x.bufs.names[i] + len - k, ".attn.mask") != 0) continue;
        int l = -1;
        const int local = sscanf(src->x.bufs.names[i], "blocks.%d.", &l) == 1 && l >= 0 &&
                          l < m->cfg.n_layers && m->cfg.attn_local[l];
        masks[n++] = (hs_ckpt_mask){i, 0, local ? m->cfg.window_size : 0};
    }
    hs_status s = hs_ckpt_check_masks(src, masks, n, err);
    free(masks);
    return s;
}

const hs_ckpt_layout hs_ckpt_layout_tl = {
    "TransformerLens",
    tl_recognises, hs_checkpoint_is_tl_buffer, tl_config, tl_fill,
};
