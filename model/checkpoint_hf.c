/*
 * model/checkpoint_hf.c -- the Hugging Face checkpoint layout: a model folder
 * as `save_pretrained` writes it and the Hub ships it (the seam:
 * checkpoint_internal.h). config.json's model_type picks the family: "gpt2"
 * is this file's; gpt_neo, gpt_neox, llama, qwen2 and mistral are
 * model/checkpoint_family.c's (config) and checkpoint_family_fill.c's
 * (tensors). Any other model_type is refused in one line naming it.
 *
 * Config: config.json beside the weights (huggingface/transformers
 * models/gpt2/configuration_gpt2.py GPT2Config, and PretrainedConfig's
 * common fields, configuration_utils.py). Every field is computed as
 * transformers computes it, inert (changes nothing in a float32 forward:
 * names, ids, task and generation parameters, dropout rates, ...) or
 * refused unless off (cross-attention, pruned heads, quantization); any
 * other field is refused in one line naming
 * it (HF_FIELDS and the families' common HF_COMMON; tests/test_config_fields.c
 * holds the pinned list tests/checkpoint/hf_gpt2_config_fields.txt to them). A field config.json
 * leaves out takes GPT2Config's default.
 *
 * Tensors (models/gpt2/modeling_gpt2.py; the loading rule of TransformerLens'
 * pretrained/weight_conversions/gpt2.py): names with or without the
 * "transformer." prefix; wte.weight [V, D] = W_E, wpe.weight [n_positions,
 * D] = W_pos, h.{l}.ln_1 / ln_2 / ln_f .weight / .bias = ln1 / ln2 /
 * ln_final w / b. Conv1D weights are [in, out] (y = x W + b):
 * h.{l}.attn.c_attn.weight [D, 3D] holds q | k | v, head h in columns
 * h dh .. h dh + dh - 1 of each: W_Q[h][m][e] = c_attn[m][h dh + e], W_K at
 * + D, W_V at + 2D (TL: torch.split(W, d_model, dim=1), rearrange
 * "m (i h) -> i m h"); c_attn.bias [3D] -> b_Q, b_K, b_V (view(3, H, dh));
 * attn.c_proj.weight [D, D] -> W_O (H, dh, D) ("(i h) m -> i h m": the same
 * bytes); mlp.c_fc [D, M] -> W_in, mlp.c_proj [M, D] -> W_out, as they are;
 * lm_head.weight [V, D] -> W_U = its transpose when present, else W_E^T
 * (tied); b_U = 0 (GPT-2 has none). A tensor config.json expects and the
 * file lacks is refused under the name the file would give it
 * ("h.12.ln_1.weight [768]", prefixed when the file's names are), not the
 * table's. F32 tensors are used in place from the
 * file's read-only mapping (hs_ckpt_in_place): c_attn.weight as the block's
 * W_QKV (already the all-heads packed layout), lm_head.weight, or W_E when
 * tied, as W_U_T (W_U read transposed); no copy. F16/BF16 tensors and
 * misaligned F32 ones are converted / copied into the table once. The buffers h.{l}.attn.bias (the causal
 * mask [1, 1, n_positions, n_positions]) and h.{l}.attn.masked_bias (-1e4)
 * hold no weights: each attn.bias is read and must be the causal lower
 * triangle (headscope computes causal attention only; any other mask is
 * refused naming it and its first differing element); masked_bias is not
 * read.
 */
#include "model/model.h"
#include "model/checkpoint_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char PREFIX[] = "transformer.";

/* name without the "transformer." prefix. */
static const char *strip(const char *name)
{
    return strncmp(name, PREFIX, sizeof PREFIX - 1) == 0 ? name + sizeof PREFIX - 1 : name;
}

/* "h.<l>.<rest>": *l and the rest, or NULL when name is not a block's. */
static const char *block_part(const char *name, int *l)
{
    if (strncmp(name, "h.", 2) != 0 || name[2] < '0' || name[2] > '9') return NULL;
    const char *p = name + 2;
    long v = 0;
    while (*p >= '0' && *p <= '9' && v < 1000000) v = v * 10 + (*p++ - '0');
    if (*p != '.') return NULL;
    *l = (int)v;
    return p + 1;
}

static int hf_is_buffer(const char *name)
{
    int l;
    const char *rest = block_part(strip(name), &l);
    return rest && (strcmp(rest, "attn.bias") == 0 || strcmp(rest, "attn.masked_bias") == 0);
}

static int hf_recognises(const hs_st_file *st)
{
    return hs_st_find(st, "wte.weight") >= 0 || hs_st_find(st, "transformer.wte.weight") >= 0;
}

/* ------------------------------------------------------------------------ */
/* config.json                                                               */

/* The config.json fields of GPT2Config itself (with its attribute_map
 * aliases and the legacy keys the Hub's GPT-2 family configs carry) and what
 * the loader does with each; with HF_COMMON below, the pinned list
 * tests/checkpoint/hf_gpt2_config_fields.txt. reorder_and_upcast_attn
 * changes only a mixed-precision run: inert in float32. */
static const struct {
    const char *name;
    hs_tl_field kind;
} HF_FIELDS[] = {
    {"n_embd", HS_TL_COMPUTED}, {"hidden_size", HS_TL_COMPUTED},
    {"n_head", HS_TL_COMPUTED}, {"num_attention_heads", HS_TL_COMPUTED},
    {"n_layer", HS_TL_COMPUTED}, {"num_hidden_layers", HS_TL_COMPUTED},
    {"n_positions", HS_TL_COMPUTED}, {"max_position_embeddings", HS_TL_COMPUTED},
    {"n_ctx", HS_TL_COMPUTED}, {"n_inner", HS_TL_COMPUTED}, {"vocab_size", HS_TL_COMPUTED},
    {"layer_norm_epsilon", HS_TL_COMPUTED}, {"activation_function", HS_TL_COMPUTED},
    {"scale_attn_weights", HS_TL_COMPUTED}, {"scale_attn_by_inverse_layer_idx", HS_TL_COMPUTED},
    {"reorder_and_upcast_attn", HS_TL_INERT}, {"resid_pdrop", HS_TL_INERT},
    {"embd_pdrop", HS_TL_INERT}, {"attn_pdrop", HS_TL_INERT},
    {"summary_type", HS_TL_INERT}, {"summary_use_proj", HS_TL_INERT},
    {"summary_activation", HS_TL_INERT}, {"summary_proj_to_labels", HS_TL_INERT},
    {"summary_first_dropout", HS_TL_INERT}, {"output_past", HS_TL_INERT},
    {"n_special", HS_TL_INERT}, {"predict_special_tokens", HS_TL_INERT},
};

/* The fields every family's config.json may carry: PretrainedConfig's common
 * and generation fields (configuration_utils.py), model_type and
 * tie_word_embeddings (each family computes them), initializer_range (every
 * family's, inert). */
static const struct {
    const char *name;
    hs_tl_field kind;
} HF_COMMON[] = {
    {"model_type", HS_TL_COMPUTED}, {"tie_word_embeddings", HS_TL_COMPUTED},
    {"initializer_range", HS_TL_INERT}, {"use_cache", HS_TL_INERT},
    {"bos_token_id", HS_TL_INERT}, {"eos_token_id", HS_TL_INERT}, {"pad_token_id", HS_TL_INERT},
    {"sep_token_id", HS_TL_INERT}, {"decoder_start_token_id", HS_TL_INERT},
    {"architectures", HS_TL_INERT}, {"transformers_version", HS_TL_INERT},
    {"_name_or_path", HS_TL_INERT}, {"_commit_hash", HS_TL_INERT}, {"torch_dtype", HS_TL_INERT},
    {"dtype", HS_TL_INERT}, {"use_bfloat16", HS_TL_INERT}, {"tf_legacy_loss", HS_TL_INERT},
    {"return_dict", HS_TL_INERT}, {"output_hidden_states", HS_TL_INERT},
    {"output_attentions", HS_TL_INERT}, {"torchscript", HS_TL_INERT},
    {"chunk_size_feed_forward", HS_TL_INERT}, {"is_decoder", HS_TL_INERT},
    {"cross_attention_hidden_size", HS_TL_INERT}, {"tie_encoder_decoder", HS_TL_INERT},
    {"finetuning_task", HS_TL_INERT}, {"id2label", HS_TL_INERT}, {"label2id", HS_TL_INERT},
    {"num_labels", HS_TL_INERT}, {"_num_labels", HS_TL_INERT}, {"problem_type", HS_TL_INERT},
    {"tokenizer_class", HS_TL_INERT}, {"prefix", HS_TL_INERT},
    {"task_specific_params", HS_TL_INERT}, {"gradient_checkpointing", HS_TL_INERT},
    {"attn_implementation", HS_TL_INERT},
    {"_attn_implementation", HS_TL_INERT}, {"_attn_implementation_internal", HS_TL_INERT},
    {"_attn_implementation_autoset", HS_TL_INERT}, {"xla_device", HS_TL_INERT},
    {"max_length", HS_TL_INERT}, {"min_length", HS_TL_INERT}, {"do_sample", HS_TL_INERT},
    {"early_stopping", HS_TL_INERT}, {"num_beams", HS_TL_INERT},
    {"num_beam_groups", HS_TL_INERT}, {"diversity_penalty", HS_TL_INERT},
    {"temperature", HS_TL_INERT}, {"top_k", HS_TL_INERT}, {"top_p", HS_TL_INERT},
    {"typical_p", HS_TL_INERT}, {"repetition_penalty", HS_TL_INERT},
    {"length_penalty", HS_TL_INERT}, {"no_repeat_ngram_size", HS_TL_INERT},
    {"encoder_no_repeat_ngram_size", HS_TL_INERT}, {"bad_words_ids", HS_TL_INERT},
    {"num_return_sequences", HS_TL_INERT}, {"output_scores", HS_TL_INERT},
    {"return_dict_in_generate", HS_TL_INERT}, {"forced_bos_token_id", HS_TL_INERT},
    {"forced_eos_token_id", HS_TL_INERT}, {"remove_invalid_values", HS_TL_INERT},
    {"exponential_decay_length_penalty", HS_TL_INERT}, {"suppress_tokens", HS_TL_INERT},
    {"begin_suppress_tokens", HS_TL_INERT},
    {"add_cross_attention", HS_TL_REFUSED}, {"is_encoder_decoder", HS_TL_REFUSED},
    {"pruned_heads", HS_TL_REFUSED}, {"quantization_config", HS_TL_REFUSED},
};

int hs_checkpoint_hf_common_field(const char *name)
{
    for (size_t i = 0; i < sizeof HF_COMMON / sizeof HF_COMMON[0]; i++)
        if (strcmp(HF_COMMON[i].name, name) == 0) return (int)HF_COMMON[i].kind;
    return -1;
}

int hs_checkpoint_hf_field(const char *name)
{
    for (size_t i = 0; i < sizeof HF_FIELDS / sizeof HF_FIELDS[0]; i++)
        if (strcmp(HF_FIELDS[i].name, name) == 0) return (int)HF_FIELDS[i].kind;
    return hs_checkpoint_hf_common_field(name);
}

int hs_hf_off(const cJSON *it)
{
    return cJSON_IsNull(it) || cJSON_IsFalse(it) ||
           ((cJSON_IsObject(it) || cJSON_IsArray(it)) && it->child == NULL);
}

/* Every field known, the refused ones off. */
static hs_status check_hf_fields(const char *fname, const cJSON *o, hs_error *err)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, o) {
        const int kind = hs_checkpoint_hf_field(it->string);
        if (kind < 0)
            return hs_fail(err, HS_ERR_CONFIG, "%s: field '%.64s' is not a GPT-2 config field "
                           "headscope knows; it may change the computation "
                           "(tests/checkpoint/hf_gpt2_config_fields.txt)", fname, it->string);
        if (kind != HS_TL_REFUSED || hs_hf_off(it)) continue;
        char *v = cJSON_PrintUnformatted(it);
        hs_status s = hs_fail(err, HS_ERR_CONFIG, "%s: field '%s' = %.40s is not supported by "
                              "headscope (a GPT-2 without it only)", fname, it->string,
                              v ? v : "?");
        cJSON_free(v);
        return s;
    }
    return HS_OK;
}

hs_status hs_hf_int(const char *fname, const cJSON *o, const char *key, const char *alias,
                        int lo, int hi, int def, int *out, hs_error *err)
{
    const char *keys[2] = {key, alias};
    int got = 0;
    for (int k = 0; k < 2; k++) {
        const cJSON *it = keys[k] ? cJSON_GetObjectItemCaseSensitive(o, keys[k]) : NULL;
        if (it == NULL) continue;
        const double v = cJSON_IsNumber(it) ? it->valuedouble : NAN;
        if (!isfinite(v) || floor(v) != v || v < lo || v > hi)
            return hs_fail(err, HS_ERR_CONFIG, "%s: field '%s' must be an integer in [%d, %d]",
                           fname, keys[k], lo, hi);
        if (got && (int)v != *out)
            return hs_fail(err, HS_ERR_CONFIG, "%s: fields '%s' and '%s' differ (%d and %d)",
                           fname, key, alias, *out, (int)v);
        *out = (int)v;
        got = 1;
    }
    if (!got) *out = def;
    return HS_OK;
}

hs_status hs_hf_bool(const char *fname, const cJSON *o, const char *key, int def, int *out,
                         hs_error *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = def;
    if (it == NULL) return HS_OK;
    if (!cJSON_IsBool(it))
        return hs_fail(err, HS_ERR_CONFIG, "%s: field '%s' must be true or false", fname, key);
    *out = cJSON_IsTrue(it);
    return HS_OK;
}

/* The dimensions (GPT2Config's defaults: vocab 50257, n_positions 1024,
 * n_embd 768, n_layer 12, n_head 12, n_inner 4 n_embd). */
static hs_status hf_dims(const char *fname, const cJSON *o, hs_config *c, hs_error *err)
{
    int npos = 0, nctx = 0, inner = 0;
    hs_status s = hs_hf_int(fname, o, "n_embd", "hidden_size", 1, 1 << 20, 768, &c->d_model, err);
    if (s == HS_OK) s = hs_hf_int(fname, o, "n_head", "num_attention_heads", 1, 1 << 20, 12, &c->n_heads, err);
    if (s == HS_OK) s = hs_hf_int(fname, o, "n_layer", "num_hidden_layers", 1, 1 << 20, 12, &c->n_layers, err);
    if (s == HS_OK) s = hs_hf_int(fname, o, "vocab_size", NULL, 1, 1 << 30, 50257, &c->d_vocab, err);
    if (s == HS_OK) s = hs_hf_int(fname, o, "n_positions", "max_position_embeddings", 1, 1 << 20, 0, &npos, err);
    if (s == HS_OK) s = hs_hf_int(fname, o, "n_ctx", NULL, 1, 1 << 20, 0, &nctx, err);
    if (s != HS_OK) return s;
    if (npos && nctx && npos != nctx)
        return hs_fail(err, HS_ERR_CONFIG, "%s: n_positions %d and n_ctx %d differ (Hugging Face "
                       "reads the one, TransformerLens the other)", fname, npos, nctx);
    c->n_ctx = npos ? npos : nctx ? nctx : 1024;
    if (c->d_model % c->n_heads != 0)
        return hs_fail(err, HS_ERR_CONFIG, "%s: n_embd %d is not a multiple of n_head %d", fname,
                       c->d_model, c->n_heads);
    c->d_head = c->d_model / c->n_heads;
    const cJSON *ni = cJSON_GetObjectItemCaseSensitive(o, "n_inner");
    if (ni != NULL && !cJSON_IsNull(ni)) {
        s = hs_hf_int(fname, o, "n_inner", NULL, 1, 1 << 20, 0, &inner, err);
        if (s != HS_OK) return s;
    }
    c->d_mlp = inner ? inner : 4 * c->d_model;
    return HS_OK;
}

/* layer_norm_epsilon, activation_function and the attention's scaling. */
static hs_status hf_math(const char *fname, const cJSON *o, hs_config *c, hs_error *err)
{
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(o, "layer_norm_epsilon");
    c->eps = 1e-5f;
    if (eps != NULL) {
        if (!cJSON_IsNumber(eps) || !(eps->valuedouble > 0) || !isfinite(eps->valuedouble) ||
            !((float)eps->valuedouble > 0.0f) || !isfinite((float)eps->valuedouble))
            return hs_fail(err, HS_ERR_CONFIG, "%s: layer_norm_epsilon must be a positive number",
                           fname);
        c->eps = (float)eps->valuedouble;
    }
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(o, "activation_function");
    c->act = HS_ACT_GELU_NEW; /* GPT2Config's default "gelu_new" */
    if (act != NULL) {
        const int a = cJSON_IsString(act) ? hs_checkpoint_act_parse(act->valuestring) : -1;
        if (a < 0)
            return hs_fail(err, HS_ERR_CONFIG, "%s: activation_function '%.32s' is not supported "
                           "(headscope has \"gelu_new\", \"gelu_pytorch_tanh\", \"gelu\", "
                           "\"relu\" and \"silu\")", fname, cJSON_IsString(act) ? act->valuestring : "?");
        c->act = (hs_act)a;
    }
    int scale = 1, by_layer = 0;
    hs_status s = hs_hf_bool(fname, o, "scale_attn_weights", 1, &scale, err);
    if (s == HS_OK) s = hs_hf_bool(fname, o, "scale_attn_by_inverse_layer_idx", 0, &by_layer, err);
    if (s != HS_OK) return s;
    c->attn_scale = scale ? 0.0f : 1.0f; /* sqrt(d_head), or none */
    c->attn_scale_by_layer = by_layer;
    return HS_OK;
}

/* GPT-2's config.json (model_type "gpt2") into *c. */
static hs_status hf_gpt2_config(const char *fname, const cJSON *o, const hs_st_file *st,
                                hs_config *c, hs_error *err)
{
    hs_status s = hf_dims(fname, o, c, err);
    if (s == HS_OK) s = hf_math(fname, o, c, err);
    if (s == HS_OK) s = check_hf_fields(fname, o, err);
    int tie = 1;
    if (s == HS_OK) s = hs_hf_bool(fname, o, "tie_word_embeddings", 1, &tie, err);
    if (s == HS_OK && !tie && st && hs_st_find(st, "lm_head.weight") < 0)
        s = hs_fail(err, HS_ERR_CONFIG, "%s: tie_word_embeddings is false but the weights have no "
                    "lm_head.weight", fname);
    /* GPT-2: LayerNorm with weights and biases, learned positions, softmax
     * attention, biases: hs_config_default's */
    return s;
}

/* config.json's text into *c and *info, dispatched by model_type. */
static hs_status hf_parse(const char *fname, const char *text, const hs_st_file *st, hs_config *c,
                          hs_hf_info *info, hs_error *err)
{
    *c = hs_config_default();
    memset(info, 0, sizeof *info);
    const char *end = NULL;
    cJSON *o = cJSON_ParseWithLengthOpts(text, strlen(text) + 1, &end, 1);
    hs_status s = HS_OK;
    /* Python's json writes float('nan') and float('inf') as NaN and Infinity: not JSON */
    const char *bad = o == NULL && end ? end : NULL;
    const char *word = bad == NULL ? NULL : !strncmp(bad, "NaN", 3) ? "NaN" : !strncmp(bad, "Infinity", 8) ? "Infinity"
                     : !strncmp(bad, "-Infinity", 9) ? "-Infinity" : NULL;
    if (word)
        s = hs_fail(err, HS_ERR_CONFIG, "%s: %s at byte %zu is not JSON (Python's json writes it for a float that "
                    "is not finite); put a number there", fname, word, (size_t)(bad - text));
    else if (o == NULL)
        s = hs_fail(err, HS_ERR_CONFIG, "%s: not valid JSON (at byte %zu)", fname, end ? (size_t)(end - text) : 0);
    else if (!cJSON_IsObject(o))
        s = hs_fail(err, HS_ERR_CONFIG, "%s: not a JSON object", fname);
    const cJSON *mt = s == HS_OK ? cJSON_GetObjectItemCaseSensitive(o, "model_type") : NULL;
    const int fam = cJSON_IsString(mt) ? hs_hf_family_parse(mt->valuestring) : -1;
    if (s == HS_OK && mt == NULL)
        s = hs_fail(err, HS_ERR_CONFIG, "%s: no 'model_type' (headscope reads " HS_HF_FAMILIES ")", fname);
    else if (s == HS_OK && fam < 0)
        s = hs_fail(err, HS_ERR_CONFIG, "%s: model_type '%.32s' is not supported (headscope reads "
                    HS_HF_FAMILIES ")", fname, cJSON_IsString(mt) ? mt->valuestring : "?");
    if (s == HS_OK) info->family = (hs_hf_family)fam;
    if (s == HS_OK && fam == HS_HF_GPT2)
        s = hf_gpt2_config(fname, o, st, c, err);
    else if (s == HS_OK)
        s = hs_checkpoint_family_config(fname, o, st, c, info, err);
    cJSON_Delete(o);
    return s;
}

hs_status hs_checkpoint_hf_config_parse(const char *fname, const char *text, const hs_st_file *st,
                                        hs_config *c, hs_error *err)
{
    hs_hf_info info;
    return hf_parse(fname, text, st, c, &info, err);
}

/* config.json beside src's weights into *c and *info. */
static hs_status hf_read_config(const hs_ckpt_src *src, hs_config *c, hs_hf_info *info, hs_error *err)
{
    char *path = src->dir ? hs_path_join(src->dir, "config.json") : NULL;
    unsigned char *text = NULL;
    size_t n = 0;
    hs_status s;
    if (src->dir == NULL)
        s = hs_fail(err, HS_ERR_FORMAT, "%s: Hugging Face weights (%s) without a folder to read "
                    "config.json from", src->fname, hs_st_find(&src->x.st, "wte.weight") >= 0 ||
                    hs_st_find(&src->x.st, "transformer.wte.weight") >= 0 ? "wte.weight" : "a model folder's");
    else if (path == NULL)
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    else if (hs_read_file(path, &text, &n, NULL) != HS_OK)
        s = hs_fail(err, HS_ERR_FORMAT, "%s: no config.json beside the Hugging Face weights "
                    "(the model folder as downloaded holds one)", src->dir);
    else if (strlen((const char *)text) != n)
        s = hs_fail(err, HS_ERR_CONFIG, "%s: a NUL byte inside the JSON", path);
    else
        s = hf_parse(path, (const char *)text, &src->x.st, c, info, err);
    free(text);
    free(path);
    return s;
}

static hs_status hf_config(const hs_ckpt_src *src, hs_config *c, hs_error *err)
{
    hs_hf_info info;
    return hf_read_config(src, c, &info, err);
}

/* ------------------------------------------------------------------------ */
/* The tensors                                                               */

/* How a Hugging Face tensor lands in the parameter table. */
typedef enum {
    HF_DIRECT, /* the same bytes as the TransformerLens tensor (a reshape at most) */
    HF_QKV_W,  /* c_attn.weight [D, 3D] -> W_Q, W_K, W_V (H, D, dh) */
    HF_QKV_B,  /* c_attn.bias [3D] -> b_Q, b_K, b_V (H, dh) */
    HF_UNEMBED /* lm_head.weight [V, D] -> W_U (D, V), transposed */
} hf_kind;

/* A block's tensors: the name after "h.<l>.", the TransformerLens name (%d =
 * l), how, and the Hugging Face shape in dims of the config (D, 3D, M). */
typedef enum { DIM_D = 1, DIM_3D, DIM_M } hf_dim;
static const struct {
    const char *hf, *tl;
    hf_kind kind;
    int ndim;
    hf_dim dims[2];
} BLOCK[] = {
    {"ln_1.weight", "blocks.%d.ln1.w", HF_DIRECT, 1, {DIM_D, 0}},
    {"ln_1.bias", "blocks.%d.ln1.b", HF_DIRECT, 1, {DIM_D, 0}},
    {"attn.c_attn.weight", "blocks.%d.attn.W_Q", HF_QKV_W, 2, {DIM_D, DIM_3D}},
    {"attn.c_attn.bias", "blocks.%d.attn.b_Q", HF_QKV_B, 1, {DIM_3D, 0}},
    {"attn.c_proj.weight", "blocks.%d.attn.W_O", HF_DIRECT, 2, {DIM_D, DIM_D}},
    {"attn.c_proj.bias", "blocks.%d.attn.b_O", HF_DIRECT, 1, {DIM_D, 0}},
    {"ln_2.weight", "blocks.%d.ln2.w", HF_DIRECT, 1, {DIM_D, 0}},
    {"ln_2.bias", "blocks.%d.ln2.b", HF_DIRECT, 1, {DIM_D, 0}},
    {"mlp.c_fc.weight", "blocks.%d.mlp.W_in", HF_DIRECT, 2, {DIM_D, DIM_M}},
    {"mlp.c_fc.bias", "blocks.%d.mlp.b_in", HF_DIRECT, 1, {DIM_M, 0}},
    {"mlp.c_proj.weight", "blocks.%d.mlp.W_out", HF_DIRECT, 2, {DIM_M, DIM_D}},
    {"mlp.c_proj.bias", "blocks.%d.mlp.b_out", HF_DIRECT, 1, {DIM_D, 0}},
};

/* One Hugging Face tensor resolved: where it goes and the shape it must have. */
typedef struct {
    const char *tl;      /* the TransformerLens name (a block's already formatted) */
    char buf[48];
    hf_kind kind;
    int ndim;
    int64_t shape[2];
} hf_target;

/* The tensors outside the blocks: the Hugging Face name (unprefixed), the
 * TransformerLens name, how, and the rows. */
static const struct {
    const char *hf, *tl;
    hf_kind kind;
    int rows_vocab; /* 1: [V, D]; 2: [n_ctx, D]; 0: [D] */
} TOP[] = {
    {"wte.weight", "embed.W_E", HF_DIRECT, 1}, {"wpe.weight", "pos_embed.W_pos", HF_DIRECT, 2},
    {"ln_f.weight", "ln_final.w", HF_DIRECT, 0}, {"ln_f.bias", "ln_final.b", HF_DIRECT, 0},
    {"lm_head.weight", "unembed.W_U", HF_UNEMBED, 1},
};

/* The target of the weight named name (prefix stripped), 0 when it has none. */
static int hf_target_of(const hs_config *c, const char *name, hf_target *t)
{
    const int64_t D = c->d_model, M = c->d_mlp;
    for (size_t i = 0; i < sizeof TOP / sizeof TOP[0]; i++) {
        if (strcmp(name, TOP[i].hf) != 0) continue;
        t->tl = TOP[i].tl;
        t->kind = TOP[i].kind;
        t->ndim = TOP[i].rows_vocab ? 2 : 1;
        t->shape[0] = TOP[i].rows_vocab == 1 ? c->d_vocab : TOP[i].rows_vocab == 2 ? c->n_ctx : D;
        t->shape[1] = D;
        return 1;
    }
    int l;
    const char *rest = block_part(name, &l);
    if (rest == NULL || l >= c->n_layers) return 0;
    for (size_t i = 0; i < sizeof BLOCK / sizeof BLOCK[0]; i++) {
        if (strcmp(rest, BLOCK[i].hf) != 0) continue;
        snprintf(t->buf, sizeof t->buf, BLOCK[i].tl, l);
        t->tl = t->buf;
        t->kind = BLOCK[i].kind;
        t->ndim = BLOCK[i].ndim;
        for (int d = 0; d < 2; d++)
            t->shape[d] = BLOCK[i].dims[d] == DIM_D ? D : BLOCK[i].dims[d] == DIM_3D ? 3 * D : M;
        return 1;
    }
    return 0;
}

/* The Hugging Face name (unprefixed) of the file tensor that fills table
 * entry tl ("blocks.12.ln1.w" -> "h.12.ln_1.weight"; W_Q, W_K and W_V ->
 * "h.<l>.attn.c_attn.weight") into buf; 0 when no GPT-2 tensor fills it. */
static int hf_name_of(const char *tl, char *buf, size_t cap)
{
    for (size_t i = 0; i < sizeof TOP / sizeof TOP[0]; i++)
        if (strcmp(tl, TOP[i].tl) == 0) return snprintf(buf, cap, "%s", TOP[i].hf), 1;
    int l, n = 0;
    if (sscanf(tl, "blocks.%d.%n", &l, &n) != 1 || n == 0) return 0;
    char q[48], w[48];
    snprintf(q, sizeof q, "%s", tl); /* W_K, W_V, b_K, b_V are filled by c_attn, as W_Q and b_Q */
    const size_t k = strlen(q);
    if (k > 2 && (q[k - 1] == 'K' || q[k - 1] == 'V') && q[k - 2] == '_') q[k - 1] = 'Q';
    for (size_t i = 0; i < sizeof BLOCK / sizeof BLOCK[0]; i++) {
        snprintf(w, sizeof w, BLOCK[i].tl, l);
        if (strcmp(w, q) == 0) return snprintf(buf, cap, "h.%d.%s", l, BLOCK[i].hf), 1;
    }
    return 0;
}

/* W_U (D, V) rows v0 .. v0 + nv - 1 from rows (nv, D) of a [V, D] matrix,
 * a column of the block at a time (each write a run of nv floats). */
static void unembed_rows(float *W_U, const float *rows, int64_t v0, int64_t nv, int64_t D,
                         int64_t V)
{
    for (int64_t d = 0; d < D; d++) {
        float *o = W_U + d * V + v0;
        for (int64_t v = 0; v < nv; v++) o[v] = rows[v * D + d];
    }
}

/* The tensor index of name in m's table (it is there: the config made it). */
static int table_index(const hs_model *m, const char *name)
{
    const hs_tensor_info *t = hs_model_find_tensor(m, name);
    HS_ASSERT(t != NULL);
    return (int)(t - m->tensors);
}

/* c_attn.weight [D, 3D] (weight i of src) into W_Q, W_K, W_V of its layer,
 * rows of the chunk buffer (cap floats) at a time. */
static hs_status read_qkv_w(const hs_ckpt_src *src, int i, hs_model *m, const char *wq_name,
                            float *chunk, size_t cap, hs_error *err)
{
    const int D = m->cfg.d_model, H = m->cfg.n_heads, dh = m->cfg.d_head;
    char name[48];
    float *W[3];
    for (int p = 0; p < 3; p++) {
        snprintf(name, sizeof name, "%.*s%c", (int)strlen(wq_name) - 1, wq_name, "QKV"[p]);
        W[p] = m->param_mem + m->tensors[table_index(m, name)].offset;
    }
    const size_t row = 3 * (size_t)D, per = cap / row ? cap / row : 1;
    for (size_t m0 = 0; m0 < (size_t)D; m0 += per) {
        const size_t nr = (size_t)D - m0 < per ? (size_t)D - m0 : per;
        hs_status s = hs_ckpt_read(src, i, m0 * row, nr * row, chunk, err);
        if (s != HS_OK) return s;
        for (size_t r = 0; r < nr; r++)
            for (int p = 0; p < 3; p++)
                for (int h = 0; h < H; h++)
                    memcpy(W[p] + ((size_t)h * D + m0 + r) * dh, chunk + r * row + (size_t)p * D +
                           (size_t)h * dh, (size_t)dh * sizeof(float));
    }
    return HS_OK;
}

/* Every h.{l}.attn.bias checked to be the causal mask [1, 1, n, n]: any other
 * is refused (hs_ckpt_check_masks, over the pool). */
static hs_status check_buffers(const hs_ckpt_src *src, hs_error *err)
{
    hs_ckpt_mask *k = malloc(((size_t)src->x.bufs.n + 1) * sizeof *k);
    if (k == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    int n = 0;
    for (int i = 0; i < src->x.bufs.n; i++) {
        int l;
        const char *rest = block_part(strip(src->x.bufs.names[i]), &l);
        if (rest != NULL && strcmp(rest, "attn.bias") == 0) k[n++] = (hs_ckpt_mask){i, 2, 0};
    }
    hs_status s = hs_ckpt_check_masks(src, k, n, err);
    free(k);
    return s;
}

/* "[a,b,...]" of shape (ndim dims) into buf. */
static void fmt_dims(char *buf, size_t cap, const int64_t *shape, int ndim)
{
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < ndim && k < cap; d++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", d ? "," : "", (long long)shape[d]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

/* The table entries a target fills: ks[0..2] (W_Q, W_K, W_V or b_Q, b_K,
 * b_V for c_attn; the one entry three times otherwise). */
static void target_entries(const hs_model *m, const hf_target *t, int ks[3])
{
    ks[0] = ks[1] = ks[2] = table_index(m, t->tl);
    if (t->kind != HF_QKV_W && t->kind != HF_QKV_B) return;
    char nm[48];
    for (int p = 1; p < 3; p++) {
        snprintf(nm, sizeof nm, "%.*s%c", (int)strlen(t->tl) - 1, t->tl, "QKV"[p]);
        ks[p] = table_index(m, nm);
    }
}

/* Weight i of src resolved (*t), its shape checked, its table entries
 * marked filled (one filled twice refused). */
static hs_status hf_claim(const hs_ckpt_src *src, int i, const hs_model *m, hf_target *t,
                          unsigned char *filled, hs_error *err)
{
    const hs_st_file *st = &src->x.st;
    const char *name = st->names[i];
    /* lm_head.weight sits beside the transformer, never under its prefix */
    const char *bare = strip(name);
    if ((bare != name && strcmp(bare, "lm_head.weight") == 0) || !hf_target_of(&m->cfg, bare, t))
        return hs_fail(err, HS_ERR_FORMAT, "%s: unknown tensor '%.64s': not part of the GPT-2 "
                       "config.json describes (n_layer %d)", src->fname, name, m->cfg.n_layers);
    int same = st->ndim[i] == t->ndim;
    for (int d = 0; same && d < t->ndim; d++) same = st->shape[i][d] == t->shape[d];
    if (!same) {
        char a[128], b[64];
        fmt_dims(a, sizeof a, st->shape[i], st->ndim[i]);
        fmt_dims(b, sizeof b, t->shape, t->ndim);
        return hs_fail(err, HS_ERR_FORMAT, "%s: tensor %s has shape %s, config.json expects %s",
                       src->fname, name, a, b);
    }
    int ks[3];
    target_entries(m, t, ks);
    for (int p = 0; p < 3; p++)
        if (filled[ks[p]])
            return hs_fail(err, HS_ERR_FORMAT, "%s: tensor %s is given twice (with and without "
                           "the 'transformer.' prefix?)", src->fname, name);
    for (int p = 0; p < 3; p++) filled[ks[p]] = 1;
    return HS_OK;
}

/* The hs_params view slot of table entry k. */
static float **view_slot(hs_model *m, int k)
{
    return (float **)&m->params + m->tensors[k].view;
}

/* The layer whose block holds view slot p. */
static int slot_layer(const hs_model *m, float *const *p)
{
    return (int)(((const char *)p - (const char *)m->params.blocks) / sizeof(hs_block_params));
}

/* Weight i of src (claimed as t) used in place when it can be
 * (hs_ckpt_in_place: F32, aligned), else read into its place. In place,
 * c_attn.weight becomes the block's W_QKV (the all-heads packed layout the
 * forward multiplies by) and lm_head.weight W_U_T, each read as it lies. */
static hs_status hf_read(const hs_ckpt_src *src, int i, const hf_target *t, hs_model *m,
                         float *chunk, size_t cap, hs_error *err)
{
    int ks[3];
    target_entries(m, t, ks);
    float *dst = m->param_mem + m->tensors[ks[0]].offset;
    const int64_t D = m->cfg.d_model, V = m->cfg.d_vocab;
    float *in_place = NULL;
    hs_status s = hs_ckpt_in_place(src, i, m, &in_place, err);
    if (s != HS_OK) return s;
    if (in_place) {
        float **slot = view_slot(m, ks[0]);
        if (t->kind == HF_DIRECT) {
            *slot = in_place;
        } else if (t->kind == HF_QKV_W) {
            hs_block_params *bp = &m->params.blocks[slot_layer(m, slot)];
            bp->W_QKV = in_place;
            bp->W_Q = bp->W_K = bp->W_V = NULL;
        } else if (t->kind == HF_QKV_B) {
            for (int p = 0; p < 3; p++) *view_slot(m, ks[p]) = in_place + (size_t)p * D;
        } else {
            m->params.W_U_T = in_place;
            m->params.W_U = NULL;
        }
        return HS_OK;
    }
    if (t->kind == HF_DIRECT) {
        s = hs_ckpt_read(src, i, 0, m->tensors[ks[0]].numel, dst, err);
    } else if (t->kind == HF_QKV_W) {
        s = read_qkv_w(src, i, m, t->tl, chunk, cap, err);
    } else if (t->kind == HF_QKV_B) { /* [3D] = view(3, H, dh): b_Q, b_K, b_V back to back */
        for (int p = 0; p < 3 && s == HS_OK; p++)
            s = hs_ckpt_read(src, i, (size_t)p * D, (size_t)D,
                             m->param_mem + m->tensors[ks[p]].offset, err);
    } else { /* lm_head.weight [V, D] -> W_U (D, V) */
        const int64_t per = (int64_t)(cap / (size_t)D);
        for (int64_t v0 = 0; v0 < V && s == HS_OK; v0 += per) {
            const int64_t nv = V - v0 < per ? V - v0 : per;
            s = hs_ckpt_read(src, i, (size_t)(v0 * D), (size_t)(nv * D), chunk, err);
            if (s == HS_OK) unembed_rows(dst, chunk, v0, nv, D, V);
        }
    }
    return s;
}

/* HS_ERR_FORMAT naming the first table entry no file tensor claimed as the
 * file would name it ("h.12.ln_1.weight [768]", with the "transformer."
 * prefix when the file's names carry it), not as the table does; before any
 * tensor is read. W_U is never missing (tied to W_E without lm_head.weight)
 * nor is b_U (GPT-2 has none: zero). */
static hs_status hf_missing(const hs_ckpt_src *src, const hs_model *m, const unsigned char *filled, hs_error *err)
{
    const hs_st_file *st = &src->x.st;
    int prefixed = 0;
    for (int i = 0; i < st->n && !prefixed; i++) prefixed = strip(st->names[i]) != st->names[i];
    for (int i = 0; i < m->n_tensors; i++) {
        char hf[64], dims[64];
        hf_target t;
        if (filled[i] || strcmp(m->tensors[i].name, "unembed.W_U") == 0 ||
            !hf_name_of(m->tensors[i].name, hf, sizeof hf) || !hf_target_of(&m->cfg, hf, &t))
            continue;
        fmt_dims(dims, sizeof dims, t.shape, t.ndim);
        return hs_fail(err, HS_ERR_FORMAT, "%s: missing tensor %s%s %s (config.json's n_layer %d expects it)",
                       src->fname, prefixed ? PREFIX : "", hf, dims, m->cfg.n_layers);
    }
    return HS_OK;
}

/* Every weight resolved and checked in header order (so the first wrong one
 * is reported), a missing one named (hf_missing), then read in file order; W_U tied to W_E when no
 * lm_head.weight came; b_U zero; the buffers checked. */
static hs_status hf_gpt2_fill(const hs_ckpt_src *src, hs_model *m, unsigned char *filled,
                              hs_error *err)
{
    const size_t cap = HS_CKPT_CHUNK / sizeof(float);
    const int n = src->x.st.n;
    float *chunk = malloc(HS_CKPT_CHUNK);
    hf_target *ts = malloc(((size_t)n + 1) * sizeof *ts);
    hs_status s = chunk && ts ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    /* (a block's ts[i].tl points into ts[i].buf: ts is not moved) */
    for (int i = 0; i < n && s == HS_OK; i++) s = hf_claim(src, i, m, &ts[i], filled, err);
    if (s == HS_OK) s = hf_missing(src, m, filled, err);
    for (int o = 0; o < n && s == HS_OK; o++)
        s = hf_read(src, src->order[o], &ts[src->order[o]], m, chunk, cap, err);
    const int wu = table_index(m, "unembed.W_U"), we = table_index(m, "embed.W_E");
    if (s == HS_OK && !filled[wu] && filled[we]) { /* tied: W_U = W_E^T, W_E read transposed */
        m->params.W_U_T = m->params.W_E;
        m->params.W_U = NULL;
        filled[wu] = 1;
    }
    if (s == HS_OK && m->params.b_U) {
        memset(m->params.b_U, 0, (size_t)m->cfg.d_vocab * sizeof(float));
        filled[table_index(m, "unembed.b_U")] = 1;
    }
    if (s == HS_OK) s = check_buffers(src, err);
    free(ts);
    free(chunk);
    return s;
}

/* GPT-2's tensors, or another family's (model/checkpoint_family_fill.c), by
 * config.json's model_type (read again: a layout keeps no state). */
static hs_status hf_fill(const hs_ckpt_src *src, hs_model *m, unsigned char *filled,
                         const hs_notes *notes, hs_error *err)
{
    hs_config c;
    hs_hf_info info;
    hs_status s = hf_read_config(src, &c, &info, err);
    if (s != HS_OK) return s;
    if (info.family != HS_HF_GPT2) return hs_checkpoint_family_fill(src, &info, m, filled, notes, err);
    return hf_gpt2_fill(src, m, filled, err);
}

static int hf_any_recognises(const hs_st_file *st)
{
    return hf_recognises(st) || hs_checkpoint_family_recognises(st);
}

static int hf_any_is_buffer(const char *name)
{
    return hf_is_buffer(name) || hs_checkpoint_family_is_buffer(name);
}

const hs_ckpt_layout hs_ckpt_layout_hf = {
    "Hugging Face",
    hf_any_recognises, hf_any_is_buffer, hf_config, hf_fill,
};
