/*
 * model/checkpoint.c -- a model as one .safetensors file (DESIGN.md,
 * "Checkpoint: safetensors"): saving, and the loader every checkpoint layout
 * plugs into (the seam: checkpoint_internal.h; headscope's own layout,
 * TransformerLens': model/checkpoint_tl.c).
 *
 * Save. Tensors: every entry of m->tensors (TransformerLens names and
 * shapes), F32, in table order. __metadata__ (string values, as the format
 * requires):
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
 *                         embed_norm true, pos "none", bias false,
 *                         norm_place "post", attn_replace true, seed N
 *   "vocab", "task", "train"  JSON texts from hs_meta, when given.
 *
 * Load (the seam and its steps: checkpoint_internal.h): the checkpoint's
 * headers (model/checkpoint_src.c: a file, a Hugging Face folder, shards; the
 * buffers of every layout kept apart), the layout that recognises it,
 * "headscope_format", the layout's config (validated, and held against the
 * checkpoint's size), the model, the layout's reading of each tensor once
 * into its parameter table (every parameter filled, or "missing tensor"),
 * then the metadata "vocab", "task", "train", the magnitude warning and the
 * notes (buffers skipped, F16 / BF16 converted).
 */
#include "model/model.h"
#include "model/checkpoint.h"
#include "model/checkpoint_internal.h"
#include "model/model_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef HS_VERSION
#define HS_VERSION "0.0.0"
#endif

#define CKPT_FORMAT "1"

/* The checkpoint layouts the loader knows, in the order it asks them
 * (checkpoint_internal.h); headscope's own stays last. */
static const hs_ckpt_layout *const LAYOUTS[] = {&hs_ckpt_layout_hf, &hs_ckpt_layout_tl};
enum { N_LAYOUTS = sizeof LAYOUTS / sizeof LAYOUTS[0] };

void hs_meta_free(hs_meta *meta)
{
    if (meta == NULL) return;
    free(meta->vocab);
    free(meta->task);
    free(meta->train);
    free(meta->warning);
    meta->vocab = meta->task = meta->train = meta->warning = NULL;
}

/* The largest |x| among the finite values of x (n), 0 when none: on the
 * bits, where the order of non-negative floats is that of the integers and
 * an exponent of all ones (inf, NaN) counts as 0; eight lanes at a time
 * (AVX2 where the CPU has it: SSE2 took 0.3 s over GPT-2 small's weights). */
HS_CLONES
static float max_abs_finite(const float *x, size_t n)
{
    /* |x|'s bits are below 2^31: signed compares (one instruction on SSE2,
     * where unsigned ones are emulated) */
    typedef int32_t i8v __attribute__((vector_size(32)));
    const int32_t ABS = 0x7fffffff, INF = 0x7f800000;
    i8v mx = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        i8v v;
        memcpy(&v, x + i, sizeof v);
        v &= ABS;
        v &= (i8v)(v < INF);     /* non-finite -> 0 */
        const i8v gt = (i8v)(v > mx);
        mx = (gt & v) | (~gt & mx);
    }
    int32_t m = 0;
    for (int k = 0; k < 8; k++) m = mx[k] > m ? mx[k] : m;
    for (; i < n; i++) {
        int32_t u;
        memcpy(&u, x + i, sizeof u);
        u &= ABS;
        if (u < INF && u > m) m = u;
    }
    float f;
    memcpy(&f, &m, sizeof f);
    return f;
}

/* 1 when the loader's scan of src bounds every |w| in p (n floats) at
 * HS_WEIGHT_ABSURD or below (src's in-place tensors, hs_ckpt_in_place_max):
 * the warning needs no scan of them. */
static int bounded(const hs_ckpt_src *src, const float *p, size_t n)
{
    const float known = hs_ckpt_in_place_max(src, p, n * sizeof(float));
    return known >= 0 && !(known > HS_WEIGHT_ABSURD);
}

/* The largest finite |w| of p (n floats), 0 when bounded() says it is small. */
static float tensor_max(const hs_ckpt_src *src, const float *p, size_t n)
{
    return bounded(src, p, n) ? 0 : max_abs_finite(p, n);
}

/* hs_model_magnitude_warning; src (may be NULL) the checkpoint m was just
 * loaded from: what its in-place scan bounds is not scanned again (GPT-2
 * small: 548 MB, one pass less on every load). */
static hs_status magnitude_warning(const hs_model *m, const hs_ckpt_src *src, char **warning, hs_error *err)
{
    *warning = NULL;
    int first = -1, others = 0;
    float worst = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        const hs_tensor_info *t = &m->tensors[i];
        const float *data = hs_model_tensor_data(m, i);
        float mx;
        if (data != NULL) {
            mx = tensor_max(src, data, t->numel);
        } else if (m->params.W_U_T && t->view == (int)(&m->params.W_U - (float *const *)&m->params)) {
            if (m->params.W_U_T == m->params.W_E) continue; /* tied: checked as W_E */
            mx = tensor_max(src, m->params.W_U_T, t->numel); /* the same values transposed */
        } else { /* W_Q, W_K or W_V read packed: head by head, row by row */
            int l = 0;
            const char *leaf = strrchr(t->name, '.');
            sscanf(t->name, "blocks.%d.", &l);
            const int which = leaf[3] == 'Q' ? 0 : leaf[3] == 'K' ? 1 : 2;
            mx = 0;
            for (int h = 0; h < m->cfg.n_heads; h++) {
                int ld;
                const float *W = hs_head_qkv(m, l, which, h, &ld);
                if (bounded(src, W, (size_t)(m->cfg.d_model - 1) * ld + m->cfg.d_head)) continue;
                for (int d = 0; d < m->cfg.d_model; d++) {
                    const float r = max_abs_finite(W + (size_t)d * ld, (size_t)m->cfg.d_head);
                    if (r > mx || r != r) mx = r;
                }
            }
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

hs_status hs_model_magnitude_warning(const hs_model *m, char **warning, hs_error *err)
{
    return magnitude_warning(m, NULL, warning, err);
}

/* A tensor any layout calls a buffer (the reader's hs_st_skip_fn). */
static int skip_buffer(const char *name, void *ctx)
{
    (void)ctx;
    for (int i = 0; i < N_LAYOUTS; i++)
        if (LAYOUTS[i]->is_buffer(name)) return 1;
    return 0;
}

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Checks a vocab JSON text: a list of d_vocab distinct strings, or a text
 * model's tokenizer.json (an object with a "model") of d_vocab tokens. */
static hs_status check_vocab(const char *fname, const char *text, int d_vocab, hs_status code,
                             hs_error *err)
{
    hs_status s = HS_OK;
    const char **words = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, strlen(text) + 1, NULL, 1);
    if (cJSON_IsObject(root) && cJSON_GetObjectItemCaseSensitive(root, "model")) {
        /* a text model's whole tokenizer.json (tasks/text.c): its tokens are
         * model.vocab's and the added tokens' */
        const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
        const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
        const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens"), *a;
        int n = cJSON_IsObject(vocab) ? cJSON_GetArraySize(vocab) : -1;
        cJSON_ArrayForEach(a, added) {
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(a, "content");
            if (n >= 0 && cJSON_IsString(c) &&
                !cJSON_GetObjectItemCaseSensitive(vocab, c->valuestring))
                n++;
        }
        if (n < 0)
            s = hs_fail(err, code, "%s: metadata 'vocab' is a tokenizer.json without "
                        "model.vocab", fname);
        else if (n != d_vocab)
            s = hs_fail(err, code, "%s: vocab's tokenizer.json has %d tokens but config d_vocab "
                        "is %d", fname, n, d_vocab);
        goto done;
    }
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

/* TransformerLens' normalization_type of a config with a norm. */
static const char *tl_norm_name(const hs_config *c)
{
    if (c->norm == HS_NORM_RMSNORM) return c->norm_pre ? "RMSPre" : "RMS";
    return c->norm_pre ? "LNPre" : "LN";
}

/* The one config -> JSON writer (model.h). Floats go through hs_f32_shortest,
 * so eps prints as 1e-05 in every output. */
/* The attention switches of hs_config, each only off its default (so a
 * model without them keeps its bytes), under TransformerLens'
 * HookedTransformerConfig names: rotary_dim, rotary_base (pos rotary;
 * rotary_adjacent_pairs and the NTK-by-parts fields when on),
 * n_key_value_heads (grouped), use_local_attn, window_size and attn_types
 * (one "global" / "local" per layer) with a local layer. tl = 1: the TL
 * object (rotary_dim and rotary_base always with rotary, as TL's config
 * has them); 0: headscope's (only what differs from 0). Returns 0 on OOM. */
static int attn_switches_json(cJSON *o, const hs_config *c, int tl)
{
    int ok = 1;
    if (c->pos == HS_POS_ROTARY) {
        if (tl || c->rotary_dim > 0)
            ok = ok && cJSON_AddNumberToObject(o, "rotary_dim", hs_rotary_dim(c));
        if (tl || c->rotary_base > 0.0f)
            ok = ok && cJSON_AddNumberToObject(o, "rotary_base",
                                               c->rotary_base > 0.0f ? hs_f32_shortest(c->rotary_base)
                                                                     : 10000.0);
        if (c->rotary_adjacent_pairs) ok = ok && cJSON_AddTrueToObject(o, "rotary_adjacent_pairs");
        if (c->use_NTK_by_parts_rope)
            ok = ok && cJSON_AddTrueToObject(o, "use_NTK_by_parts_rope") &&
                 cJSON_AddNumberToObject(o, "NTK_by_parts_factor",
                                         hs_f32_shortest(c->NTK_by_parts_factor)) &&
                 cJSON_AddNumberToObject(o, "NTK_by_parts_low_freq_factor",
                                         hs_f32_shortest(c->NTK_by_parts_low_freq_factor)) &&
                 cJSON_AddNumberToObject(o, "NTK_by_parts_high_freq_factor",
                                         hs_f32_shortest(c->NTK_by_parts_high_freq_factor)) &&
                 cJSON_AddNumberToObject(o, "NTK_original_ctx_len", c->NTK_original_ctx_len);
    }
    if (hs_kv_heads(c) != c->n_heads)
        ok = ok && cJSON_AddNumberToObject(o, "n_key_value_heads", c->n_key_value_heads);
    int any_local = 0;
    for (int l = 0; l < c->n_layers; l++) any_local |= c->attn_local[l];
    if (any_local) {
        cJSON *types = cJSON_AddArrayToObject(o, "attn_types");
        ok = ok && types && cJSON_AddTrueToObject(o, "use_local_attn") &&
             cJSON_AddNumberToObject(o, "window_size", c->window_size);
        for (int l = 0; ok && l < c->n_layers; l++) {
            cJSON *t = cJSON_CreateString(c->attn_local[l] ? "local" : "global");
            ok = t && cJSON_AddItemToArray(types, t);
        }
    }
    return ok;
}

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
                  : cJSON_AddStringToObject(o, "normalization_type", tl_norm_name(c)) != NULL) &&
             cJSON_AddNumberToObject(o, "eps", eps) &&
             (c->attn_scale > 0.0f
                  ? cJSON_AddNumberToObject(o, "attn_scale", hs_f32_shortest(c->attn_scale)) != NULL
                  : 1) &&
             cJSON_AddStringToObject(o, "positional_embedding_type",
                                     c->pos == HS_POS_ROTARY  ? "rotary"
                                     : c->pos == HS_POS_ALIBI ? "alibi"
                                                              : "standard") &&
             cJSON_AddBoolToObject(o, "attn_only", c->d_mlp == 0) &&
             cJSON_AddStringToObject(o, "attention_dir", "causal") &&
             (c->attn_scale_by_layer
                  ? cJSON_AddTrueToObject(o, "scale_attn_by_inverse_layer_idx") != NULL
                  : 1) &&
             /* the block's TL fields, only when on (old files keep their bytes) */
             (c->gated_mlp ? cJSON_AddTrueToObject(o, "gated_mlp") != NULL : 1) &&
             (c->parallel_attn_mlp ? cJSON_AddTrueToObject(o, "parallel_attn_mlp") != NULL : 1) &&
             attn_switches_json(o, c, 1);
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
        if (c->norm_place != d.norm_place)
            ok = ok && cJSON_AddStringToObject(o, "norm_place", hs_norm_place_name(c->norm_place));
        if (!c->attn_replace != !d.attn_replace)
            ok = ok && cJSON_AddBoolToObject(o, "attn_replace", c->attn_replace != 0);
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
                  : 1) &&
             (c->norm_pre ? cJSON_AddTrueToObject(o, "norm_pre") != NULL : 1) &&
             (c->attn_scale_by_layer ? cJSON_AddTrueToObject(o, "attn_scale_by_layer") != NULL : 1) &&
             (c->gated_mlp ? cJSON_AddTrueToObject(o, "gated_mlp") != NULL : 1) &&
             (c->parallel_attn_mlp ? cJSON_AddTrueToObject(o, "parallel_attn_mlp") != NULL : 1) &&
             (c->norm_place != HS_NORM_PRE
                  ? cJSON_AddStringToObject(o, "norm_place", hs_norm_place_name(c->norm_place)) != NULL
                  : 1) &&
             (c->attn_replace ? cJSON_AddTrueToObject(o, "attn_replace") != NULL : 1) &&
             attn_switches_json(o, c, 0);
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
    for (int i = 0; i < m->n_tensors; i++)
        if (hs_model_tensor_data(m, i) == NULL)
            return hs_fail(err, HS_ERR_INPUT, "hs_checkpoint_save: %s is read in place in another "
                           "layout (a mapped checkpoint): hs_model_own the model first",
                           m->tensors[i].name);
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
            o->data = c == 0 ? hs_model_tensor_data(m, i) : (c == 1 ? m->m_mem : m->v_mem) + t->offset;
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

hs_status hs_ckpt_check_shape(const char *fname, const hs_tensor_info *t, const int64_t *shape,
                              int ndim, hs_error *err)
{
    int same = ndim == t->ndim;
    for (int d = 0; same && d < t->ndim; d++) same = shape[d] == t->shape[d];
    if (same) return HS_OK;
    char a[96], b[96];
    fmt_shape(a, sizeof a, shape, ndim);
    fmt_shape(b, sizeof b, t->shape, t->ndim);
    return hs_fail(err, HS_ERR_FORMAT, "%s: tensor %s has shape %s, config expects %s", fname,
                   t->name, a, b);
}

int hs_checkpoint_act_parse(const char *name)
{
    if (name == NULL) return -1;
    if (strcmp(name, "gelu_pytorch_tanh") == 0) return HS_ACT_GELU_NEW;
    return hs_act_parse(name);
}

/* The first layout that recognises st; headscope's own when none does (its
 * config step then names what the file lacks). */
static const hs_ckpt_layout *layout_of(const hs_st_file *st)
{
    for (int i = 0; i < N_LAYOUTS; i++)
        if (LAYOUTS[i]->recognises(st)) return LAYOUTS[i];
    return LAYOUTS[N_LAYOUTS - 1];
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
    /* half the matrices (W_Q, W_O) have H heads, half (W_K, W_V) the key/value heads */
    const size_t Hq = H + (size_t)hs_kv_heads(c);
    t = Hq * D > SIZE_MAX / dh ? SIZE_MAX : Hq * D * dh; /* H, D <= 2^20: H*D fits */
    parts[2] = t > SIZE_MAX / (attn_mats / 2 * L) ? SIZE_MAX : t * (attn_mats / 2) * L;
    t = D * M > SIZE_MAX / (2 * L) ? SIZE_MAX : D * M * 2 * L;
    parts[3] = t;
    for (int i = 0; i < 4; i++) total = parts[i] > SIZE_MAX - total ? SIZE_MAX : total + parts[i];
    return total;
}
/* *cfg: the file's format version checked, the layout's config, validated,
 * and not far larger than the file's weights. */
static hs_status load_config(const hs_ckpt_layout *layout, const hs_ckpt_src *src,
                             hs_config *cfg, hs_error *err)
{
    const char *fname = src->fname;
    const hs_st_file *st = &src->x.st;
    const char *ver = hs_st_meta(st, "headscope_format");
    if (ver != NULL && strcmp(ver, CKPT_FORMAT) != 0)
        return hs_fail(err, HS_ERR_FORMAT, "%s: checkpoint format '%.16s' is not %s, the one "
                       "this headscope reads (HINT: written by another headscope version; use "
                       "that one or re-export)", fname, ver, CKPT_FORMAT);
    hs_status s = layout->config(src, cfg, err);
    if (s != HS_OK) return s;
    hs_error verr;
    s = hs_config_validate(cfg, &verr);
    if (s != HS_OK) return hs_fail(err, s, "%s: %s", fname, verr.msg);

    /* Guard the allocation: a config far larger than the file's weights is not
     * this file's config (and must not make us allocate gigabytes). */
    size_t file_floats = 0;
    for (int i = 0; i < st->n; i++)
        file_floats = st->numel[i] > SIZE_MAX - file_floats ? SIZE_MAX : file_floats + st->numel[i];
    size_t need = matrix_floats(cfg);
    size_t slack = file_floats > (SIZE_MAX - ((size_t)1 << 20)) / 2
                       ? SIZE_MAX
                       : 2 * file_floats + ((size_t)1 << 20);
    if (need > slack)
        return hs_fail(err, HS_ERR_CONFIG, "%s: config (n_layers %d, d_model %d, n_heads %d, "
                       "d_head %d, d_mlp %d, d_vocab %d) needs %zu weights but the file's "
                       "tensors hold %zu: the config does not match the tensors", fname,
                       cfg->n_layers, cfg->d_model, cfg->n_heads, cfg->d_head, cfg->d_mlp,
                       cfg->d_vocab, need, file_floats);
    return HS_OK;
}

/* m's parameters from src by the layout, every one of them filled. */
static hs_status load_weights(const hs_ckpt_layout *layout, const hs_ckpt_src *src, hs_model *m,
                              const hs_notes *notes, hs_error *err)
{
    unsigned char *filled = calloc((size_t)m->n_tensors + 1, 1);
    if (!filled) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    hs_status s = layout->fill(src, m, filled, notes, err);
    for (int i = 0; s == HS_OK && i < m->n_tensors; i++)
        if (!filled[i]) {
            char b[96];
            fmt_shape(b, sizeof b, m->tensors[i].shape, m->tensors[i].ndim);
            s = hs_fail(err, HS_ERR_FORMAT, "%s: missing tensor %s %s (the config expects it)",
                        src->fname, m->tensors[i].name, b);
        }
    free(filled);
    return s;
}

/* The metadata "vocab", "task" and "train" checked, then copied into *meta
 * (may be NULL) with the magnitude warning; *meta untouched on failure. */
static hs_status load_meta(const hs_ckpt_src *src, const hs_model *m, hs_meta *meta, hs_error *err)
{
    const char *fname = src->fname;
    const hs_st_file *st = &src->x.st;
    hs_status s = HS_OK;
    hs_meta got = {NULL, NULL, NULL, NULL};
    const char *vocab = hs_st_meta(st, "vocab");
    if (vocab) {
        s = check_vocab(fname, vocab, m->cfg.d_vocab, HS_ERR_FORMAT, err);
        if (s != HS_OK) return s;
    }
    const char *task = hs_st_meta(st, "task"), *train = hs_st_meta(st, "train");
    if (task && !json_text_ok(task))
        return hs_fail(err, HS_ERR_FORMAT, "%s: metadata 'task' is not valid JSON", fname);
    if (train && !json_text_ok(train))
        return hs_fail(err, HS_ERR_FORMAT, "%s: metadata 'train' is not valid JSON", fname);
    if (meta == NULL) return HS_OK;
    if ((vocab && !(got.vocab = hs_strdup(vocab))) || (task && !(got.task = hs_strdup(task))) ||
        (train && !(got.train = hs_strdup(train))))
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (s == HS_OK) s = magnitude_warning(m, src, &got.warning, err);
    if (s != HS_OK) {
        hs_meta_free(&got);
        return s;
    }
    *meta = got;
    return HS_OK;
}

/* The loader's notes: the file read beside an index, the tensors converted.
 * The buffers skipped (each checked) are counted in *n_skipped, not noted:
 * a note on every load of a GPT-2 folder is noise (issue 34). */
static void load_notes(const hs_ckpt_src *src, const hs_notes *notes)
{
    if (src->index_ignored)
        hs_note(notes, HS_NOTE_CMD, "note: read model.safetensors; model.safetensors.index.json beside it is "
                "not read (transformers reads model.safetensors first too)");
    int n16 = 0, nb16 = 0;
    for (int i = 0; i < src->x.st.n; i++) {
        n16 += src->x.loc[i].dtype == HS_ST_F16;
        nb16 += src->x.loc[i].dtype == HS_ST_BF16;
    }
    if (n16 + nb16 > 0)
        hs_note(notes, HS_NOTE_CMD, "note: %d tensor(s) stored as %s%s%s converted to float32 "
                "on loading (exactly; every computation runs in float32)", n16 + nb16,
                n16 ? "F16" : "", n16 && nb16 ? " and " : "", nb16 ? "BF16" : "");
}

static hs_status load_from_src(const hs_ckpt_src *src, const hs_notes *notes, hs_model **out,
                               hs_meta *meta, int *n_skipped, hs_error *err)
{
    hs_model *m = NULL;
    hs_config cfg;
    const hs_ckpt_layout *layout = layout_of(&src->x.st);
    hs_status s = load_config(layout, src, &cfg, err);
    if (s == HS_OK) s = hs_model_create(&cfg, &m, err);
    if (s == HS_OK) s = load_weights(layout, src, m, notes, err);
    if (s == HS_OK) s = load_meta(src, m, meta, err);
    if (s != HS_OK) {
        hs_model_destroy(m);
        return s;
    }
    load_notes(src, notes);
    if (n_skipped) *n_skipped = src->x.bufs.n;
    *out = m;
    return HS_OK;
}

hs_status hs_checkpoint_parse(const unsigned char *buf, size_t n, const char *name,
                              hs_model **out, hs_meta *meta, int *n_skipped, hs_error *err)
{
    hs_ckpt_src src;
    *out = NULL;
    if (meta) meta->vocab = meta->task = meta->train = meta->warning = NULL;
    if (n_skipped) *n_skipped = 0;
    hs_status s = hs_ckpt_src_mem(buf, n, name, skip_buffer, &src, err);
    if (s != HS_OK) return s;
    s = load_from_src(&src, NULL, out, meta, n_skipped, err);
    hs_ckpt_src_close(&src);
    return s;
}

hs_status hs_checkpoint_load_pool(const char *path, const hs_notes *notes, hs_pool *pool,
                                  hs_model **out, hs_meta *meta, int *n_skipped, hs_error *err)
{
    hs_ckpt_src src;
    *out = NULL;
    if (meta) meta->vocab = meta->task = meta->train = meta->warning = NULL;
    if (n_skipped) *n_skipped = 0;
    hs_status s = hs_ckpt_src_open(path, skip_buffer, &src, err);
    if (s != HS_OK) return s;
    src.pool = pool;
    s = load_from_src(&src, notes, out, meta, n_skipped, err);
    hs_ckpt_src_close(&src);
    return s;
}

hs_status hs_checkpoint_load_notes(const char *path, const hs_notes *notes, hs_model **out,
                                   hs_meta *meta, int *n_skipped, hs_error *err)
{
    return hs_checkpoint_load_pool(path, notes, NULL, out, meta, n_skipped, err);
}

hs_status hs_checkpoint_load(const char *path, hs_model **out, hs_meta *meta, int *n_skipped,
                             hs_error *err)
{
    return hs_checkpoint_load_notes(path, NULL, out, meta, n_skipped, err);
}
