/*
 * model/checkpoint.c -- a model as one .safetensors file (DESIGN.md,
 * "Checkpoint: safetensors").
 *
 * Tensors: every entry of m->tensors (TransformerLens names and shapes), F32,
 * in table order. __metadata__ (string values, as the format requires):
 *   "format"            "pt" (the safetensors convention for PyTorch-style
 *                       state dicts; HuggingFace loaders check it)
 *   "headscope_format"  "1" (this file's layout; a newer one is refused)
 *   "headscope_version" HS_VERSION of the writer
 *   "config"            JSON object, TransformerLens HookedTransformerConfig
 *                       field names only (pinned in tests/checkpoint/tl_config_fields.txt)
 *   "headscope_config"  JSON object with the switches TransformerLens has no
 *                       field for, only the non-default ones; absent for a
 *                       plain TL-shaped model:
 *                         attn "uniform", ln1 false, ln_final false,
 *                         embed_norm true, pos "none", bias false, seed N
 *   "vocab", "task", "train"  JSON texts from hs_meta, when given.
 *
 * Loading: the config (+ headscope_config; hs_config_default() for what is
 * missing) builds the model, then every tensor the model expects must be in
 * the file with exactly its shape; TransformerLens' attention buffers
 * (blocks.l.attn.mask / IGNORE) are skipped and counted; any other tensor is
 * an error naming it.
 */
#include "model/model.h"
#include "model/checkpoint_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef HS_VERSION
#define HS_VERSION "0.0.0"
#endif

#define CKPT_FORMAT "1"

void hs_meta_free(hs_meta *meta)
{
    if (meta == NULL) return;
    free(meta->vocab);
    free(meta->task);
    free(meta->train);
    free(meta->warning);
    meta->vocab = meta->task = meta->train = meta->warning = NULL;
}

hs_status hs_model_magnitude_warning(const hs_model *m, char **warning, hs_error *err)
{
    *warning = NULL;
    int first = -1, others = 0;
    float worst = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        const hs_tensor_info *t = &m->tensors[i];
        const float *x = m->param_mem + t->offset;
        float mx = 0;
        for (size_t k = 0; k < t->numel; k++) {
            float a = fabsf(x[k]);
            if (isfinite(a) && a > mx) mx = a;
        }
        if (!(mx > HS_WEIGHT_ABSURD)) continue;
        if (first < 0) {
            first = i;
            worst = mx;
        } else {
            others++;
        }
    }
    if (first < 0) return HS_OK;
    char w[HS_F32_BUF], lim[HS_F32_BUF];
    hs_buf b = {0};
    hs_buf_printf(&b, "%s holds |w| up to %s", m->tensors[first].name, hs_fmt_f32(w, worst));
    if (others) hs_buf_printf(&b, " (and %d more tensor%s)", others, others == 1 ? "" : "s");
    hs_buf_printf(&b, "; training never produces |w| > %s: predictions from these weights "
                      "mean nothing", hs_fmt_f32(lim, HS_WEIGHT_ABSURD));
    *warning = hs_buf_take(&b);
    if (!*warning) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    return HS_OK;
}

int hs_checkpoint_is_tl_buffer(const char *name)
{
    static const char prefix[] = "blocks.";
    if (strncmp(name, prefix, sizeof prefix - 1) != 0) return 0;
    const char *p = name + sizeof prefix - 1;
    if (*p < '0' || *p > '9') return 0;
    while (*p >= '0' && *p <= '9') p++;
    return strcmp(p, ".attn.mask") == 0 || strcmp(p, ".attn.IGNORE") == 0;
}

static int skip_tl_buffer(const char *name, void *ctx)
{
    (void)ctx;
    return hs_checkpoint_is_tl_buffer(name);
}

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Checks a vocab JSON text: a list of d_vocab distinct strings. */
static hs_status check_vocab(const char *fname, const char *text, int d_vocab, hs_status code,
                             hs_error *err)
{
    hs_status s = HS_OK;
    const char **words = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, strlen(text) + 1, NULL, 1);
    if (!cJSON_IsArray(root)) {
        s = hs_fail(err, code, "%s: metadata 'vocab' is not a JSON list of strings", fname);
        goto done;
    }
    int n = cJSON_GetArraySize(root);
    if (n != d_vocab) {
        s = hs_fail(err, code, "%s: vocab has %d words but config d_vocab is %d", fname, n,
                    d_vocab);
        goto done;
    }
    words = calloc((size_t)n + 1, sizeof *words);
    if (!words) {
        s = hs_fail(err, HS_ERR_NOMEM, "%s: out of memory", fname);
        goto done;
    }
    int i = 0;
    const cJSON *w;
    cJSON_ArrayForEach(w, root) {
        if (!cJSON_IsString(w)) {
            s = hs_fail(err, code, "%s: vocab entry %d is not a string", fname, i);
            goto done;
        }
        words[i++] = w->valuestring;
    }
    qsort(words, (size_t)n, sizeof *words, cmp_str_ptr);
    for (i = 1; i < n; i++)
        if (strcmp(words[i - 1], words[i]) == 0) {
            s = hs_fail(err, code, "%s: vocab has the word '%.64s' twice", fname, words[i]);
            goto done;
        }
done:
    free(words);
    cJSON_Delete(root);
    return s;
}

static int json_text_ok(const char *text)
{
    cJSON *root = cJSON_ParseWithLengthOpts(text, strlen(text) + 1, NULL, 1);
    int ok = root != NULL;
    cJSON_Delete(root);
    return ok;
}

/* ------------------------------------------------------------------------ */
/* Config <-> JSON                                                           */

/* The one config -> JSON writer (model.h). Floats go through hs_f32_shortest,
 * so eps prints as 1e-05 in every output. */
cJSON *hs_config_to_json(const hs_config *c, hs_config_json_kind kind)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    double eps = hs_f32_shortest(c->eps);
    int ok = 1;
    if (kind == HS_CONFIG_JSON_TL) {
        ok = cJSON_AddNumberToObject(o, "n_layers", c->n_layers) &&
             cJSON_AddNumberToObject(o, "d_model", c->d_model) &&
             cJSON_AddNumberToObject(o, "n_heads", c->n_heads) &&
             cJSON_AddNumberToObject(o, "d_head", c->d_head) &&
             (c->d_mlp > 0 ? cJSON_AddNumberToObject(o, "d_mlp", c->d_mlp) != NULL
                           : cJSON_AddNullToObject(o, "d_mlp") != NULL) &&
             cJSON_AddNumberToObject(o, "n_ctx", c->n_ctx) &&
             cJSON_AddNumberToObject(o, "d_vocab", c->d_vocab) &&
             cJSON_AddNumberToObject(o, "d_vocab_out", c->d_vocab) &&
             cJSON_AddStringToObject(o, "act_fn", hs_act_name(c->act)) &&
             (c->norm == HS_NORM_NONE
                  ? cJSON_AddNullToObject(o, "normalization_type") != NULL
                  : cJSON_AddStringToObject(o, "normalization_type",
                                            c->norm == HS_NORM_RMSNORM ? "RMS" : "LN") != NULL) &&
             cJSON_AddNumberToObject(o, "eps", eps) &&
             (c->attn_scale > 0.0f
                  ? cJSON_AddNumberToObject(o, "attn_scale", hs_f32_shortest(c->attn_scale)) != NULL
                  : 1) &&
             cJSON_AddStringToObject(o, "positional_embedding_type", "standard") &&
             cJSON_AddBoolToObject(o, "attn_only", c->d_mlp == 0) &&
             cJSON_AddStringToObject(o, "attention_dir", "causal");
    } else if (kind == HS_CONFIG_JSON_SWITCHES) {
        const hs_config d = hs_config_default();
        if (c->attn != d.attn) ok = ok && cJSON_AddStringToObject(o, "attn", hs_attn_name(c->attn));
        if (!c->ln1 != !d.ln1) ok = ok && cJSON_AddBoolToObject(o, "ln1", c->ln1 != 0);
        if (!c->ln_final != !d.ln_final)
            ok = ok && cJSON_AddBoolToObject(o, "ln_final", c->ln_final != 0);
        if (!c->embed_norm != !d.embed_norm)
            ok = ok && cJSON_AddBoolToObject(o, "embed_norm", c->embed_norm != 0);
        if (c->pos != d.pos) ok = ok && cJSON_AddStringToObject(o, "pos", hs_pos_name(c->pos));
        if (!c->bias != !d.bias) ok = ok && cJSON_AddBoolToObject(o, "bias", c->bias != 0);
        if (c->seed != d.seed) {
            /* exact: a JSON number only when a double holds it */
            char num[32];
            snprintf(num, sizeof num, "%llu", (unsigned long long)c->seed);
            cJSON *r = c->seed <= (1ULL << 53) ? cJSON_CreateRaw(num) : cJSON_CreateString(num);
            ok = ok && r && cJSON_AddItemToObject(o, "seed", r);
        }
    } else {
        ok = cJSON_AddNumberToObject(o, "n_layers", c->n_layers) &&
             cJSON_AddNumberToObject(o, "d_model", c->d_model) &&
             cJSON_AddNumberToObject(o, "n_heads", c->n_heads) &&
             cJSON_AddNumberToObject(o, "d_head", c->d_head) &&
             cJSON_AddNumberToObject(o, "d_mlp", c->d_mlp) &&
             cJSON_AddNumberToObject(o, "n_ctx", c->n_ctx) &&
             cJSON_AddNumberToObject(o, "d_vocab", c->d_vocab) &&
             cJSON_AddStringToObject(o, "norm", hs_norm_name(c->norm)) &&
             cJSON_AddNumberToObject(o, "eps", eps) &&
             cJSON_AddStringToObject(o, "act", hs_act_name(c->act)) &&
             cJSON_AddStringToObject(o, "pos", hs_pos_name(c->pos)) &&
             cJSON_AddStringToObject(o, "attn", hs_attn_name(c->attn)) &&
             cJSON_AddBoolToObject(o, "ln1", c->ln1) &&
             cJSON_AddBoolToObject(o, "ln_final", c->ln_final) &&
             cJSON_AddBoolToObject(o, "embed_norm", c->embed_norm) &&
             cJSON_AddBoolToObject(o, "bias", c->bias) &&
             (c->attn_scale > 0.0f /* else sqrt(d_head), and the key is left out */
                  ? cJSON_AddNumberToObject(o, "attn_scale", hs_f32_shortest(c->attn_scale)) != NULL
                  : 1);
    }
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The checkpoint's "config" text, and its "headscope_config" text (NULL when
 * every switch is at its default). Returns 0 on OOM. */
static int config_texts(const hs_config *c, char **tl, char **sw)
{
    cJSON *a = hs_config_to_json(c, HS_CONFIG_JSON_TL);
    cJSON *b = hs_config_to_json(c, HS_CONFIG_JSON_SWITCHES);
    *tl = a ? cJSON_PrintUnformatted(a) : NULL;
    *sw = b && cJSON_GetArraySize(b) > 0 ? cJSON_PrintUnformatted(b) : NULL;
    int ok = *tl && b && (cJSON_GetArraySize(b) == 0 || *sw);
    cJSON_Delete(a);
    cJSON_Delete(b);
    return ok;
}

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
    {"normalization_type", HS_TL_COMPUTED}, {"attention_dir", HS_TL_COMPUTED},
    {"attn_only", HS_TL_COMPUTED}, {"positional_embedding_type", HS_TL_COMPUTED},
    {"d_vocab_out", HS_TL_COMPUTED}, {"n_key_value_heads", HS_TL_COMPUTED},
    {"model_name", HS_TL_INERT}, {"use_attn_result", HS_TL_INERT},
    {"use_split_qkv_input", HS_TL_INERT}, {"use_hook_mlp_in", HS_TL_INERT},
    {"use_attn_in", HS_TL_INERT}, {"use_hook_tokens", HS_TL_INERT},
    {"ungroup_grouped_query_attention", HS_TL_INERT}, {"original_architecture", HS_TL_INERT},
    {"from_checkpoint", HS_TL_INERT}, {"checkpoint_index", HS_TL_INERT},
    {"checkpoint_label_type", HS_TL_INERT}, {"checkpoint_value", HS_TL_INERT},
    {"tokenizer_name", HS_TL_INERT}, {"window_size", HS_TL_INERT}, {"attn_types", HS_TL_INERT},
    {"init_mode", HS_TL_INERT}, {"device", HS_TL_INERT}, {"n_devices", HS_TL_INERT},
    {"seed", HS_TL_INERT}, {"initializer_range", HS_TL_INERT}, {"init_weights", HS_TL_INERT},
    {"n_params", HS_TL_INERT}, {"default_prepend_bos", HS_TL_INERT},
    {"tokenizer_prepends_bos", HS_TL_INERT}, {"rotary_dim", HS_TL_INERT},
    {"rotary_base", HS_TL_INERT}, {"rotary_adjacent_pairs", HS_TL_INERT},
    {"use_NTK_by_parts_rope", HS_TL_INERT}, {"NTK_by_parts_low_freq_factor", HS_TL_INERT},
    {"NTK_by_parts_high_freq_factor", HS_TL_INERT}, {"NTK_by_parts_factor", HS_TL_INERT},
    {"trust_remote_code", HS_TL_INERT}, {"experts_per_token", HS_TL_INERT},
    {"relative_attention_max_distance", HS_TL_INERT},
    {"relative_attention_num_buckets", HS_TL_INERT}, {"decoder_start_token_id", HS_TL_INERT},
    {"tie_word_embeddings", HS_TL_INERT},
    {"use_local_attn", HS_TL_REFUSED}, {"scale_attn_by_inverse_layer_idx", HS_TL_REFUSED},
    {"final_rms", HS_TL_REFUSED}, {"parallel_attn_mlp", HS_TL_REFUSED},
    {"gated_mlp", HS_TL_REFUSED}, {"dtype", HS_TL_REFUSED}, {"post_embedding_ln", HS_TL_REFUSED},
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

static hs_status parse_tl_config(const char *fname, const cJSON *o, hs_config *c,
                                 hs_error *err)
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
        int a = cJSON_IsString(act) ? hs_act_parse(act->valuestring) : -1;
        if (a < 0)
            return hs_fail(err, HS_ERR_CONFIG, "%s: config act_fn '%.32s' is not supported "
                           "(headscope has \"gelu\" (exact erf) and \"relu\")", fname,
                           cJSON_IsString(act) ? act->valuestring : "?");
        c->act = (hs_act)a;
    } else if (!attn_only) {
        return hs_fail(err, HS_ERR_CONFIG, "%s: config has no act_fn (TransformerLens requires "
                       "one unless attn_only)", fname);
    }

    const cJSON *nt = cJSON_GetObjectItemCaseSensitive(o, "normalization_type");
    if (nt == NULL) {
        c->norm = HS_NORM_LAYERNORM; /* TransformerLens' default "LN" */
    } else if (cJSON_IsNull(nt)) {
        c->norm = HS_NORM_NONE;
    } else if (cJSON_IsString(nt) && strcmp(nt->valuestring, "LN") == 0) {
        c->norm = HS_NORM_LAYERNORM;
    } else if (cJSON_IsString(nt) && strcmp(nt->valuestring, "RMS") == 0) {
        c->norm = HS_NORM_RMSNORM;
    } else {
        return hs_fail(err, HS_ERR_CONFIG, "%s: config normalization_type '%.32s' is not "
                       "supported (\"LN\", \"RMS\" or null)", fname,
                       cJSON_IsString(nt) ? nt->valuestring : "?");
    }

    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(o, "eps");
    if (eps != NULL) {
        if (!cJSON_IsNumber(eps) || !(eps->valuedouble > 0) || !isfinite(eps->valuedouble) ||
            !isfinite((float)eps->valuedouble) || (float)eps->valuedouble <= 0.0f)
            return hs_fail(err, HS_ERR_CONFIG, "%s: config eps must be a positive number",
                           fname);
        c->eps = (float)eps->valuedouble;
    }

    const cJSON *pe = cJSON_GetObjectItemCaseSensitive(o, "positional_embedding_type");
    if (pe != NULL && !(cJSON_IsString(pe) && strcmp(pe->valuestring, "standard") == 0))
        return hs_fail(err, HS_ERR_CONFIG, "%s: config positional_embedding_type '%.32s' is not "
                       "supported (only \"standard\"; no positions is headscope_config pos "
                       "\"none\")", fname, cJSON_IsString(pe) ? pe->valuestring : "?");
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
    s = check_tl_fields(fname, o, err);
    if (s != HS_OK) return s;
    int nkv = -1;
    s = get_int(fname, "config", o, "n_key_value_heads", 0, 1 << 20, &nkv, &present, err);
    if (s != HS_OK) return s;
    if (present && nkv != c->n_heads)
        return hs_fail(err, HS_ERR_CONFIG, "%s: config n_key_value_heads %d (grouped-query "
                       "attention) is not supported (n_heads %d)", fname, nkv, c->n_heads);
    return HS_OK;
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
                               is_attn ? "softmax or uniform" : "learned or none");
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
                v = strtoull(it->valuestring, &end, 10);
                ok = *end == '\0';
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

/* Parses the config texts into *c. */
static hs_status config_from_meta(const char *fname, const hs_st_file *st, hs_config *c,
                                  hs_error *err)
{
    return hs_checkpoint_config_parse(fname, hs_st_meta(st, "config"),
                                      hs_st_meta(st, "headscope_config"), c, err);
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

/* Floats of the matrices cfg implies, saturating at SIZE_MAX. */
static size_t matrix_floats(const hs_config *c)
{
    size_t total = 0, t;
    const size_t V = (size_t)c->d_vocab, D = (size_t)c->d_model, H = (size_t)c->n_heads,
                 dh = (size_t)c->d_head, M = (size_t)c->d_mlp, C = (size_t)c->n_ctx,
                 L = (size_t)c->n_layers;
    size_t attn_mats = c->attn == HS_ATTN_SOFTMAX ? 4 : 2;
    size_t parts[4];
    parts[0] = V > SIZE_MAX / D / 2 ? SIZE_MAX : 2 * V * D;
    parts[1] = c->pos == HS_POS_LEARNED ? (C > SIZE_MAX / D ? SIZE_MAX : C * D) : 0;
    t = H * D > SIZE_MAX / dh ? SIZE_MAX : H * D * dh; /* H, D <= 2^20: H*D fits */
    parts[2] = t > SIZE_MAX / (attn_mats * L) ? SIZE_MAX : t * attn_mats * L;
    t = D * M > SIZE_MAX / (2 * L) ? SIZE_MAX : D * M * 2 * L;
    parts[3] = t;
    for (int i = 0; i < 4; i++) total = parts[i] > SIZE_MAX - total ? SIZE_MAX : total + parts[i];
    return total;
}

/* ------------------------------------------------------------------------ */
/* Save                                                                      */

hs_status hs_checkpoint_save(const hs_model *m, const hs_meta *meta, const char *path,
                             hs_error *err)
{
    return hs_checkpoint_save_ex(m, meta, 0, path, err);
}

hs_status hs_checkpoint_save_ex(const hs_model *m, const hs_meta *meta, int with_optimizer,
                                const char *path, hs_error *err)
{
    hs_status s = HS_OK;
    char *cfg_text = NULL, *hs_text = NULL;
    hs_st_tensor *ts = NULL;
    char (*onames)[64] = NULL;
    const char *keys[9], *vals[9];
    char opt_text[64];
    int nm = 0, nt = 0;

    if (m == NULL || path == NULL)
        return hs_fail(err, HS_ERR_INPUT, "hs_checkpoint_save: no model or no path");
    if (meta && meta->vocab) {
        s = check_vocab(path, meta->vocab, m->cfg.d_vocab, HS_ERR_INPUT, err);
        if (s != HS_OK) goto done;
    }
    if (meta && meta->task && !json_text_ok(meta->task)) {
        s = hs_fail(err, HS_ERR_INPUT, "%s: metadata 'task' is not valid JSON", path);
        goto done;
    }
    if (meta && meta->train && !json_text_ok(meta->train)) {
        s = hs_fail(err, HS_ERR_INPUT, "%s: metadata 'train' is not valid JSON", path);
        goto done;
    }
    if (!config_texts(&m->cfg, &cfg_text, &hs_text)) {
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto done;
    }
    keys[nm] = "format", vals[nm++] = "pt";
    keys[nm] = "headscope_format", vals[nm++] = CKPT_FORMAT;
    keys[nm] = "headscope_version", vals[nm++] = HS_VERSION;
    keys[nm] = "config", vals[nm++] = cfg_text;
    if (hs_text) keys[nm] = "headscope_config", vals[nm++] = hs_text;
    if (meta && meta->vocab) keys[nm] = "vocab", vals[nm++] = meta->vocab;
    if (meta && meta->task) keys[nm] = "task", vals[nm++] = meta->task;
    if (meta && meta->train) keys[nm] = "train", vals[nm++] = meta->train;

    if (with_optimizer && !m->m_mem)
        with_optimizer = 0; /* nothing trained yet: no moments to save */
    if (with_optimizer) {
        snprintf(opt_text, sizeof opt_text, "{\"adam_t\":%ld}", m->adam_t);
        keys[nm] = "optimizer", vals[nm++] = opt_text;
    }
    const int copies = with_optimizer ? 3 : 1;
    ts = calloc((size_t)m->n_tensors * copies + 1, sizeof *ts);
    onames = calloc((size_t)m->n_tensors * 2 + 1, sizeof *onames);
    if (!ts || !onames) {
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int c = 0; c < copies; c++)
        for (int i = 0; i < m->n_tensors; i++) {
            const hs_tensor_info *t = &m->tensors[i];
            hs_st_tensor *o = &ts[nt++];
            if (c == 0) {
                o->name = t->name;
            } else {
                char *nmb = onames[(c - 1) * m->n_tensors + i];
                snprintf(nmb, sizeof onames[0], "%s%s", c == 1 ? HS_OPT_M_PREFIX : HS_OPT_V_PREFIX,
                         t->name);
                o->name = nmb;
            }
            o->ndim = t->ndim;
            for (int d = 0; d < t->ndim && d < 3; d++) o->shape[d] = t->shape[d];
            o->data = (c == 0 ? m->param_mem : c == 1 ? m->m_mem : m->v_mem) + t->offset;
        }
    s = hs_safetensors_write(path, ts, nt, keys, vals, nm, err);
done:
    free(onames);
    free(ts);
    free(cfg_text);
    free(hs_text);
    return s;
}

/* ------------------------------------------------------------------------ */
/* Load                                                                      */

static void fmt_shape(char *buf, size_t cap, const int64_t *shape, int ndim)
{
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? "," : "", (long long)shape[i]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

static hs_status load_from_st(const char *fname, const hs_st_file *st, hs_model **out,
                              hs_meta *meta, hs_error *err)
{
    hs_status s = HS_OK;
    hs_model *m = NULL;
    unsigned char *found = NULL;
    hs_meta got = {NULL, NULL, NULL, NULL};
    hs_config cfg;

    const char *ver = hs_st_meta(st, "headscope_format");
    if (ver != NULL && strcmp(ver, CKPT_FORMAT) != 0) {
        s = hs_fail(err, HS_ERR_FORMAT, "%s: checkpoint format '%.16s' is not %s, the one this "
                    "headscope reads (HINT: written by another headscope version; use that one "
                    "or re-export)", fname, ver, CKPT_FORMAT);
        goto fail;
    }
    s = config_from_meta(fname, st, &cfg, err);
    if (s != HS_OK) goto fail;
    s = hs_config_validate(&cfg, err);
    if (s != HS_OK) goto fail;

    /* Guard the allocation: a config far larger than the file's weights is not
     * this file's config (and must not make us allocate gigabytes). */
    size_t file_floats = 0;
    for (int i = 0; i < st->n; i++)
        file_floats = st->numel[i] > SIZE_MAX - file_floats ? SIZE_MAX : file_floats + st->numel[i];
    size_t need = matrix_floats(&cfg);
    size_t slack = file_floats > (SIZE_MAX - ((size_t)1 << 20)) / 2
                       ? SIZE_MAX
                       : 2 * file_floats + ((size_t)1 << 20);
    if (need > slack) {
        s = hs_fail(err, HS_ERR_CONFIG, "%s: config (n_layers %d, d_model %d, n_heads %d, d_head "
                    "%d, d_mlp %d, d_vocab %d) needs %zu weights but the file's tensors hold "
                    "%zu: the config does not match the tensors", fname, cfg.n_layers,
                    cfg.d_model, cfg.n_heads, cfg.d_head, cfg.d_mlp, cfg.d_vocab, need,
                    file_floats);
        goto fail;
    }

    s = hs_model_create(&cfg, &m, err);
    if (s != HS_OK) goto fail;
    found = calloc((size_t)m->n_tensors + 1, 1);
    if (!found) {
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    int n_opt = 0;
    for (int i = 0; i < st->n; i++) {
        const char *nm_i = st->names[i];
        int opt = strncmp(nm_i, HS_OPT_M_PREFIX, sizeof HS_OPT_M_PREFIX - 1) == 0   ? 1
                  : strncmp(nm_i, HS_OPT_V_PREFIX, sizeof HS_OPT_V_PREFIX - 1) == 0 ? 2
                                                                                    : 0;
        if (opt) nm_i += sizeof HS_OPT_M_PREFIX - 1;
        const hs_tensor_info *t = hs_model_find_tensor(m, nm_i);
        if (opt && t && !m->m_mem) {
            const char *ot = hs_st_meta(st, "optimizer");
            cJSON *oj = ot ? cJSON_Parse(ot) : NULL;
            const cJSON *at = cJSON_GetObjectItemCaseSensitive(oj, "adam_t");
            int ok = cJSON_IsNumber(at) && at->valuedouble >= 0 && at->valuedouble <= 1e9 &&
                     at->valuedouble == floor(at->valuedouble);
            long adam_t = ok ? (long)at->valuedouble : 0;
            cJSON_Delete(oj);
            if (!ok) {
                s = hs_fail(err, HS_ERR_FORMAT, "%s: optimizer tensors but no valid 'optimizer' "
                            "metadata ({\"adam_t\": steps})", fname);
                goto fail;
            }
            if ((s = hs_model_alloc_train(m, err)) != HS_OK) goto fail;
            m->adam_t = adam_t;
        }
        if (t == NULL) {
            s = hs_fail(err, HS_ERR_FORMAT, "%s: unknown tensor '%.64s': not part of the model "
                        "the config describes (HINT: check 'config'/'headscope_config' in "
                        "__metadata__)", fname, st->names[i]);
            goto fail;
        }
        int same = st->ndim[i] == t->ndim;
        for (int d = 0; same && d < t->ndim; d++) same = st->shape[i][d] == t->shape[d];
        if (!same) {
            char a[96], b[96];
            fmt_shape(a, sizeof a, st->shape[i], st->ndim[i]);
            fmt_shape(b, sizeof b, t->shape, t->ndim);
            s = hs_fail(err, HS_ERR_FORMAT, "%s: tensor %s has shape %s, config expects %s", fname,
                        t->name, a, b);
            goto fail;
        }
        HS_ASSERT(st->numel[i] == t->numel);
        if (opt) {
            n_opt++;
            if (t->numel)
                memcpy((opt == 1 ? m->m_mem : m->v_mem) + t->offset, st->data[i],
                       t->numel * sizeof(float));
            continue;
        }
        found[t - m->tensors] = 1;
        if (t->numel) memcpy(m->param_mem + t->offset, st->data[i], t->numel * sizeof(float));
    }
    if (n_opt != 0 && n_opt != 2 * m->n_tensors) {
        s = hs_fail(err, HS_ERR_FORMAT, "%s: %d optimizer tensors, expected none or %d (a moment "
                    "m and v per parameter)", fname, n_opt, 2 * m->n_tensors);
        goto fail;
    }
    for (int i = 0; i < m->n_tensors; i++)
        if (!found[i]) {
            char b[96];
            fmt_shape(b, sizeof b, m->tensors[i].shape, m->tensors[i].ndim);
            s = hs_fail(err, HS_ERR_FORMAT, "%s: missing tensor %s %s (the config expects it)",
                        fname, m->tensors[i].name, b);
            goto fail;
        }

    const char *vocab = hs_st_meta(st, "vocab");
    if (vocab) {
        s = check_vocab(fname, vocab, cfg.d_vocab, HS_ERR_FORMAT, err);
        if (s != HS_OK) goto fail;
    }
    const char *task = hs_st_meta(st, "task"), *train = hs_st_meta(st, "train");
    if (task && !json_text_ok(task)) {
        s = hs_fail(err, HS_ERR_FORMAT, "%s: metadata 'task' is not valid JSON", fname);
        goto fail;
    }
    if (train && !json_text_ok(train)) {
        s = hs_fail(err, HS_ERR_FORMAT, "%s: metadata 'train' is not valid JSON", fname);
        goto fail;
    }
    if (meta) {
        if ((vocab && !(got.vocab = hs_strdup(vocab))) || (task && !(got.task = hs_strdup(task))) ||
            (train && !(got.train = hs_strdup(train)))) {
            s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
            goto fail;
        }
        if ((s = hs_model_magnitude_warning(m, &got.warning, err)) != HS_OK) goto fail;
        *meta = got;
    }
    free(found);
    *out = m;
    return HS_OK;

fail:
    hs_meta_free(&got);
    free(found);
    hs_model_destroy(m);
    return s;
}

hs_status hs_checkpoint_parse(const unsigned char *buf, size_t n, const char *name,
                              hs_model **out, hs_meta *meta, int *n_skipped, hs_error *err)
{
    hs_st_file st;
    int skipped = 0;
    *out = NULL;
    if (meta) meta->vocab = meta->task = meta->train = meta->warning = NULL;
    if (n_skipped) *n_skipped = 0;
    hs_status s = hs_safetensors_parse_ex(buf, n, name, skip_tl_buffer, NULL, &st, &skipped, err);
    if (s != HS_OK) return s;
    s = load_from_st(name ? name : "<buffer>", &st, out, meta, err);
    hs_st_file_free(&st);
    if (s == HS_OK && n_skipped) *n_skipped = skipped;
    return s;
}

hs_status hs_checkpoint_load(const char *path, hs_model **out, hs_meta *meta, int *n_skipped,
                             hs_error *err)
{
    unsigned char *buf = NULL;
    size_t n = 0;
    *out = NULL;
    if (meta) meta->vocab = meta->task = meta->train = meta->warning = NULL;
    if (n_skipped) *n_skipped = 0;
    hs_status s = hs_read_file(path, &buf, &n, err);
    if (s != HS_OK) return s;
    s = hs_checkpoint_parse(buf, n, path, out, meta, n_skipped, err);
    free(buf);
    return s;
}
