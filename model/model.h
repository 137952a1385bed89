/*
 * model/model.h -- headscope's transformer: config, parameters, forward with an
 * observer, cross-entropy, the gradient of a metric at the activations;
 * training (backward to the weights, AdamW, the loop) is model/train.h,
 * checkpoint I/O (safetensors, Hugging Face and TransformerLens layouts)
 * model/checkpoint.h.
 *
 * Owns: the pre-norm decoder-only transformer of DESIGN.md ("Model") with the
 * microGPT and attention-only variants as config switches. May call: common/,
 * OpenBLAS and libxsmm (through common/'s hs_sgemm), cJSON. Knows nothing of tasks, probes or figures.
 *
 * Dims legend (STYLE.md 2):
 *   B = batch, T = positions (<= n_ctx), D = d_model, H = n_heads,
 *   dh = d_head, M = d_mlp, V = d_vocab, L = n_layers.
 * Row vectors, as TransformerLens: a read is x @ W.
 *
 * Forward (DESIGN.md, CIRCUITS.md 1):
 *   x = W_E[tok] + W_pos[pos]                       (W_pos absent when pos = none; the
 *                                                    sinusoidal table with pos sinusoidal)
 *   x = EmbedNorm(x)                                (embed_norm on: microGPT)
 *   for l: x = x + sum_h Attn_h(LN1(x)) + b_O       (LN1 = identity when ln1 off)
 *          x = x + MLP(LN2(x))                      (absent when d_mlp = 0)
 *   logits = LNf(x) @ W_U + b_U                     (LNf = identity when final norm off)
 * MLP(x) = act(x W_in + b_in) W_out + b_out; gated_mlp (TL GatedMLP, Llama):
 *   (act(x W_gate) * (x W_in + b_in)) W_out + b_out.
 * The block's switches (hs_config, "block structure"):
 *   parallel_attn_mlp: x = x + Attn(LN1(x)) + MLP(LN2(x))   (both read x)
 *   norm_place post:   x = LN1(x + Attn(x)); x = LN2(x + MLP(x))
 *   attn_replace:      x = Attn(LN1(x))   (pre-norm; post: x = LN1(Attn(x)))
 * SiLU (act silu, Llama's hidden_act): x sigmoid(x) = x / (1 + exp(-x)).
 * LN(x) = (x - mean)/s * w + b, s = sqrt(var + eps); RMS: x/s * w, s = sqrt(mean x^2 + eps).
 * norm_pre (TransformerLens "LNPre" / "RMSPre"): the same without w and b.
 * Attention (softmax): score[i,j] = q_i.k_j / attn_scale (sqrt(dh) by default;
 * times layer + 1 with attn_scale_by_layer), j > i masked with -INFINITY.
 * The attention switches (hs_config's "attn" group, DESIGN.md "Model"):
 * rotary positions rotate q and k after hook_q/hook_k (hook_rot_q/k);
 * ALiBi adds slope_h * (j - i) after the scaling; a local layer also masks
 * i - j >= window_size; grouped-query attention gives query head h the key
 * and value of head h / (H / n_kv).
 * Attention (uniform): A[i,j] = 1/(i+1) for j <= i; no W_Q, W_K (the chapter's
 * "uniform causal average").
 * GELU is exact: 0.5 x (1 + erf(x / sqrt 2)); gelu_new (GPT-2's, TransformerLens'
 * and Hugging Face's NewGELUActivation) is the tanh approximation
 * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
 *
 * Memory (llm.c style, STYLE.md 1): parameters live in one float allocation and
 * hs_params is a struct of named views into it; gradients and the Adam moments
 * m, v are allocations of the same size and layout, so the optimizer is one
 * flat loop and a checkpoint is one walk over the tensor table. Activations
 * for a batch live in one allocation owned by hs_acts.
 *
 * Ownership: hs_model_create / hs_model_destroy; hs_acts_create / hs_acts_destroy.
 * All *_destroy accept NULL.
 */
#ifndef HS_MODEL_H
#define HS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/common.h"

/* ------------------------------------------------------------------------ */
/* Config                                                                    */

#define HS_MAX_LAYERS 48 /* GPT-2 XL's depth */

typedef enum { HS_NORM_LAYERNORM = 0, HS_NORM_RMSNORM, HS_NORM_NONE } hs_norm;
typedef enum { HS_ACT_GELU = 0, HS_ACT_RELU, HS_ACT_GELU_NEW, HS_ACT_SILU } hs_act;
/* Where a block's norms sit: in front of each sublayer (pre-norm, GPT-2) or
 * on the residual after it (post-norm, the original Transformer). */
typedef enum { HS_NORM_PRE = 0, HS_NORM_POST } hs_norm_place;
/* Positions: learned W_pos (TL "standard"); none; sinusoidal (Vaswani et al.
 * 2017, 3.5: added to the embedding like W_pos, no parameters); rotary (Su et
 * al. 2021, RoPE on q and k: TL "rotary"); alibi (Press et al. 2022: a
 * per-head linear bias on the scores, TL "alibi"). Formulas: DESIGN.md "Model". */
typedef enum {
    HS_POS_LEARNED = 0,
    HS_POS_NONE,
    HS_POS_SINUSOIDAL,
    HS_POS_ROTARY,
    HS_POS_ALIBI
} hs_pos;
typedef enum { HS_ATTN_SOFTMAX = 0, HS_ATTN_UNIFORM } hs_attn;

typedef struct {
    int n_layers;     /* L >= 1 */
    int d_model;      /* D */
    int n_heads;      /* H */
    int d_head;       /* dh */
    int d_mlp;        /* M; 0 = attention-only (no MLP, no ln2) */
    int n_ctx;        /* max positions */
    int d_vocab;      /* V */
    hs_norm norm;     /* type of every norm (ln1, ln2, ln_final, ln_embed) */
    float eps;        /* norm epsilon (1e-5 default, TransformerLens' default) */
    hs_act act;       /* MLP activation */
    hs_pos pos;       /* learned absolute positions or none */
    hs_attn attn;     /* softmax (Q/K) or uniform causal average */
    int ln1;          /* 1 = norm in front of attention (default), 0 = off on its own */
    int ln_final;     /* 1 = final norm before W_U (default), 0 = none (microGPT) */
    int embed_norm;   /* 1 = norm right after the embedding (microGPT), default 0 */
    int bias;         /* 1 = biases on linear layers and LN b (default), 0 = none */
    float attn_scale; /* scores are q.k / attn_scale (TransformerLens cfg.attn_scale);
                         0 = sqrt(d_head), TL's default; use_attn_scale false = 1 */
    int norm_pre;     /* 1 = the norms have no weight and no bias: centre (LN) and
                         scale only, TransformerLens' "LNPre" / "RMSPre"
                         (what its fold_ln leaves); 0 = default */
    int attn_scale_by_layer; /* 1 = layer l's scores are further divided by l + 1
                                (TransformerLens' and Hugging Face's
                                scale_attn_by_inverse_layer_idx); 0 = default */
    uint64_t seed;    /* initialisation seed */
    /* -- block structure (TransformerLens HookedTransformerConfig names where
     *    TL has the field; 0 = today's pre-norm, sequential, added block) -- */
    int gated_mlp;    /* 1 = TL's GatedMLP (Llama's SwiGLU): hook_pre = x W_gate,
                         hook_pre_linear = x W_in + b_in, hook_post =
                         act(hook_pre) * hook_pre_linear; blocks.l.mlp.W_gate
                         (D, M), no b_gate. Needs d_mlp > 0 */
    int parallel_attn_mlp; /* 1 = TL's parallel_attn_mlp (GPT-NeoX / Pythia's
                         use_parallel_residual, GPT-J): resid_post = resid_pre +
                         attn_out + mlp_out, the MLP reading ln2(resid_pre); no
                         hook_resid_mid, as TL */
    hs_norm_place norm_place; /* HS_NORM_POST (no TL field): x = LN1(x + attn(x)),
                         x = LN2(x + mlp(x)) (Vaswani et al. 2017); the sublayers
                         read the residual unnormalised */
    int attn_replace; /* 1 (no TL field): the attention's output replaces the
                         residual instead of being added, resid_mid = attn_out
                         (the chapter's "replace, not add" ladder rows) */
    /* ---- attention switches (helper "attn"; TransformerLens
     * HookedTransformerConfig names where TL has one; every default is the
     * model above, and a checkpoint writes a field only off its default) ---- */
    int rotary_dim;   /* pos rotary: dims of each head rotated, the first rotary_dim
                         (GPT-NeoX rotary_pct * d_head); 0 = d_head (Llama); even */
    float rotary_base;           /* theta of the frequencies base^(-2i/rotary_dim); 0 = 10000 */
    int rotary_adjacent_pairs;   /* 0 = rotate-half, pairs (i, i + rotary_dim/2) (GPT-NeoX,
                                    Llama); 1 = pairs (2i, 2i+1) (GPT-J, TL's flag) */
    int use_NTK_by_parts_rope;   /* 1 = Llama 3's rope_scaling "llama3": the inverse
                                    frequencies rescaled by wavelength (transformers'
                                    _compute_llama3_parameters), with the four below */
    float NTK_by_parts_factor;           /* 8 (TL's default) */
    float NTK_by_parts_low_freq_factor;  /* 1 */
    float NTK_by_parts_high_freq_factor; /* 4 */
    int NTK_original_ctx_len;            /* 8192 */
    int n_key_value_heads;       /* grouped-query attention: W_K, W_V, b_K, b_V and hook_k,
                                    hook_v have n_key_value_heads heads; query head h reads
                                    key/value head h / (n_heads / n_key_value_heads)
                                    (transformers' repeat_kv); 0 = n_heads (no grouping) */
    int window_size;             /* local attention's window (GPT-Neo 256): on a layer with
                                    attn_local[l], key j is visible from query i only when
                                    i - j < window_size */
    unsigned char attn_local[HS_MAX_LAYERS]; /* 1 = layer l is TL attn_types "local" */
} hs_config;

/* Key/value heads of cfg: n_key_value_heads, or n_heads when it is 0. */
static inline int hs_kv_heads(const hs_config *cfg)
{
    return cfg->n_key_value_heads > 0 ? cfg->n_key_value_heads : cfg->n_heads;
}
/* The key/value head query head h reads: h / (n_heads / n_kv) (repeat_kv). */
static inline int hs_kv_head(const hs_config *cfg, int h)
{
    return h / (cfg->n_heads / hs_kv_heads(cfg));
}
/* 1 when positions are a table added to the embedding (hook_pos_embed):
 * learned W_pos or sinusoidal. */
static inline int hs_pos_added(const hs_config *cfg)
{
    return cfg->pos == HS_POS_LEARNED || cfg->pos == HS_POS_SINUSOIDAL;
}
/* The rotated dims of each head (pos rotary): rotary_dim, or d_head when 0. */
static inline int hs_rotary_dim(const hs_config *cfg)
{
    return cfg->rotary_dim > 0 ? cfg->rotary_dim : cfg->d_head;
}

/* The divisor of the attention scores: cfg->attn_scale, or sqrtf(d_head) when
 * it is 0. The forward multiplies by its reciprocal 1.0f / scale (one
 * rounding; for d_head 16 the same bits as TL's division). */
float hs_attn_scale(const hs_config *cfg);
/* The divisor of layer l's scores: hs_attn_scale, times (l + 1) with
 * attn_scale_by_layer (TransformerLens AbstractAttention: attn_scale *=
 * layer_id + 1; Hugging Face GPT2Attention._attn: / (layer_idx + 1)). */
float hs_attn_scale_at(const hs_config *cfg, int layer);

/* 1 when block l's attention reads LN1 of the residual (ln1 on, a norm, and
 * norm_place pre); 0 when it reads the residual itself (ln1 off, norm none,
 * or post-norm, whose LN1 sits after the attention). */
static inline int hs_ln1_in_front(const hs_config *c)
{
    return c->ln1 && c->norm != HS_NORM_NONE && c->norm_place == HS_NORM_PRE;
}

/* The switch that makes the residual stream not a sum of its writers, or
 * NULL: "norm_place post" (a norm on the residual path itself) or
 * "attn_replace" (the attention's output replaces the residual). A residual
 * decomposition (direct logit attribution, decompose_resid, the logit lens
 * read as a sum, path patching's direct path) is undefined then; its callers
 * refuse such a model in one line naming this switch. parallel_attn_mlp
 * decomposes as the sequential block does (resid_post = resid_pre + attn_out
 * + mlp_out). */
const char *hs_config_nonadditive(const hs_config *c);

/* The default model: 2 layers, D 64, 4 heads of 16, MLP 256 GELU, LayerNorm
 * eps 1e-5, learned positions, softmax attention, all norms on but embed norm,
 * biases on, n_ctx and d_vocab 0 (the task sets them), seed 0. */
hs_config hs_config_default(void);

/* Checks a config: positive dims, n_ctx <= 4096, norm "none" with embed_norm is
 * refused, gated_mlp without an MLP, parallel_attn_mlp with norm_place post or
 * attn_replace (no defined meaning), norm_place post with norm "none", etc.
 * HS_ERR_CONFIG with a message naming the field. */
hs_status hs_config_validate(const hs_config *cfg, hs_error *err);

/* The one config -> JSON writer (checkpoint metadata, circuit's report.json,
 * every figure JSON and index.json). Numbers are exact; eps is written with
 * hs_f32_shortest (1e-05, never 9.99999974737875e-06). kinds:
 *   HS_CONFIG_JSON_TL        TransformerLens HookedTransformerConfig fields
 *                            (the checkpoint's "config"): n_layers, d_model,
 *                            n_heads, d_head, d_mlp (null when 0), n_ctx,
 *                            d_vocab, d_vocab_out, act_fn ("gelu", "relu",
 *                            "gelu_new"), normalization_type ("LN", "RMS",
 *                            "LNPre", "RMSPre" or null), eps,
 *                            positional_embedding_type, attn_only, attention_dir
 *                            (and scale_attn_by_inverse_layer_idx, gated_mlp,
 *                            parallel_attn_mlp when true; act_fn "silu")
 *   HS_CONFIG_JSON_SWITCHES  the switches TL has no field for, only those off
 *                            their default (the checkpoint's "headscope_config";
 *                            {} for a plain model): attn, ln1, ln_final,
 *                            embed_norm, pos, bias, norm_place ("post"),
 *                            attn_replace, seed
 *   HS_CONFIG_JSON_ALL       every field by headscope name: n_layers, d_model,
 *                            n_heads, d_head, d_mlp, n_ctx, d_vocab, norm, eps,
 *                            act, pos, attn, ln1, ln_final, embed_norm, bias
 *                            (and attn_scale when it is not sqrt(d_head); TL
 *                            carries it in HS_CONFIG_JSON_TL likewise; norm_pre
 *                            and attn_scale_by_layer when true; gated_mlp,
 *                            parallel_attn_mlp, norm_place, attn_replace when
 *                            not their default)
 * Returns a new object (caller frees with cJSON_Delete), NULL on OOM. */
typedef enum { HS_CONFIG_JSON_TL, HS_CONFIG_JSON_SWITCHES, HS_CONFIG_JSON_ALL } hs_config_json_kind;
cJSON *hs_config_to_json(const hs_config *c, hs_config_json_kind kind);

/* Names for the enums ("layernorm", "gelu", ...); parse returns -1 if unknown. */
const char *hs_norm_name(hs_norm n);
const char *hs_act_name(hs_act a);
const char *hs_pos_name(hs_pos p);
const char *hs_attn_name(hs_attn a);
int hs_norm_parse(const char *s);
int hs_act_parse(const char *s);
int hs_pos_parse(const char *s);
int hs_attn_parse(const char *s);
const char *hs_norm_place_name(hs_norm_place p); /* "pre", "post" */
int hs_norm_place_parse(const char *s);

/* ------------------------------------------------------------------------ */
/* Parameters: named views into one allocation                               */

typedef struct {
    float *ln1_w, *ln1_b;      /* (D), (D)        blocks.l.ln1.w/b (NULL if ln1 off / no bias / RMS b) */
    float *W_Q, *W_K, *W_V;    /* (H, D, dh)      W_Q, W_K NULL for uniform attention; all
                                *                  three NULL when W_QKV holds them */
    float *b_Q, *b_K, *b_V;    /* (H, dh) */
    float *W_O;                /* (H, dh, D) */
    float *b_O;                /* (D) */
    float *ln2_w, *ln2_b;      /* (D)             NULL when d_mlp = 0 */
    float *W_in;               /* (D, M) */
    float *b_in;               /* (M) */
    float *W_out;              /* (M, D) */
    float *b_out;              /* (D) */
    float *W_gate;             /* (D, M)          blocks.l.mlp.W_gate (gated_mlp; NULL otherwise) */
    float *W_QKV;              /* (D, 3*H*dh)     W_Q | W_K | W_V packed by columns, read in
                                *                  place (a mapped Hugging Face c_attn.weight:
                                *                  W_Q[h][d][e] = W_QKV[d][h*dh + e], W_K at
                                *                  + H*dh, W_V at + 2*H*dh), W_Q/W_K/W_V NULL;
                                *                  NULL otherwise. Read per head through
                                *                  hs_head_qkv, never W_Q + h*D*dh directly */
} hs_block_params;

/* Parts a training batch's backward is split into (hs_backward): fixed, so
 * that gradients do not depend on the thread count. */
#define HS_GRAD_PARTS 2

typedef struct {
    float *W_E;                /* (V, D)          embed.W_E */
    float *W_pos;              /* (n_ctx, D)      pos_embed.W_pos; NULL when pos = none */
    float *ln_embed_w, *ln_embed_b; /* (D)        ln_embed.w/b; only with embed_norm */
    hs_block_params blocks[HS_MAX_LAYERS];
    float *ln_final_w, *ln_final_b; /* (D)        ln_final.w/b */
    float *W_U;                /* (D, V)          unembed.W_U */
    float *b_U;                /* (V)             unembed.b_U */
    float *W_U_T;              /* (V, D)          W_U read transposed in place, W_U NULL: a
                                *                  mapped Hugging Face checkpoint's lm_head.weight,
                                *                  or W_E itself when tied (GPT-2); NULL
                                *                  otherwise. Read through hs_unembed_at */
} hs_params;

/* One entry of the tensor table: a TransformerLens name, its shape and where
 * it lives (offset in floats into the parameter allocation). */
typedef struct {
    char name[48];             /* e.g. "blocks.1.attn.W_Q" */
    int ndim;
    int64_t shape[3];
    size_t offset;             /* in floats */
    size_t numel;
    int decay;                 /* 1 = weight decay applies (matrices only) */
    int view;                  /* which hs_params pointer views it (hs_params read as an
                                * array of float *): hs_model_tensor_data */
} hs_tensor_info;

#define HS_MAX_TENSORS (8 + 18 * HS_MAX_LAYERS)

typedef struct hs_model {
    hs_config cfg;
    size_t n_params;                        /* total floats */
    int n_tensors;
    hs_tensor_info tensors[HS_MAX_TENSORS]; /* in checkpoint order */
    float *param_mem;                       /* (n_params); the five arrays are hs_floats_alloc's
                                             * (64-byte aligned; hs_model_destroy frees them) */
    float *grad_mem;                        /* (n_params), NULL until hs_model_alloc_train */
    float *grad_part_mem;                   /* (HS_GRAD_PARTS - 1, hs_floats_round(n_params)):
                                             * the gradients of the backward's later batch parts
                                             * (hs_backward), summed into grad_mem in part order;
                                             * same */
    float *m_mem, *v_mem;                   /* AdamW moments, same */
    hs_params params;                       /* views into param_mem */
    hs_params grads;                        /* views into grad_mem */
    long adam_t;                            /* AdamW steps taken */
    int tl_processed;                       /* 1 after hs_model_process_tl: the weights are
                                             * TransformerLens' processed ones (what its
                                             * from_pretrained loads), not the checkpoint's */
    void **maps;                            /* (n_maps) checkpoint files mapped read-only
                                             * (mmap PROT_READ, MAP_PRIVATE) whose pages views
                                             * point into: the loader's F32 tensors used in
                                             * place (DESIGN.md "Checkpoint"); a mapped
                                             * tensor's slot of param_mem is never touched
                                             * (no resident page). hs_model_destroy and
                                             * hs_model_own unmap them */
    size_t *map_lens;                       /* (n_maps) bytes of each */
    int n_maps;
} hs_model;

/* Builds a model for cfg: validates it, allocates parameters (zeroed) and the
 * tensor table. Does not initialise weights (hs_model_init does). *out is NULL
 * on failure. Free with hs_model_destroy. */
hs_status hs_model_create(const hs_config *cfg, hs_model **out, hs_error *err);
void hs_model_destroy(hs_model *m);

/* Probes, once a process, how OpenBLAS blocks the inner dimensions of m's
 * few-row products whose weights are past libxsmm's limit (common.h
 * hs_sgemm_few_rows_k: d_model, into the attention's and the MLP's inputs,
 * and d_mlp, into the MLP's output), which the first forward on few rows
 * would otherwise do between its products, its other workers waiting
 * (GPT-2 small: two K, ~1.1 ms each). For a caller with a thread idle now
 * (hs_load, while the tokenizer finishes on the pool's lane). Nothing
 * changes a value; no errors (a probe that cannot run leaves the products
 * on OpenBLAS, as the first forward would). */
void hs_model_warm(const hs_model *m);

/* Deterministic initialisation from cfg.seed with PyTorch's default layer
 * initialisations (what a PyTorch model of the same shape gets): W_E and W_pos
 * N(0, 1) (nn.Embedding); every other matrix U(-1/sqrt(fan_in), 1/sqrt(fan_in))
 * (nn.Linear's kaiming-uniform, a = sqrt 5), fan_in = the input width (D for
 * W_Q/W_K/W_V/W_in/W_U, H*dh for W_O, M for W_out); norm weights 1; biases 0.
 * (GPT-2's N(0, 0.02) left 2 of 5 seeds stuck at 50% held-out accuracy for
 * 1500 steps; this init reached 100% by step 600 on seeds 1-4.)
 * Same seed and config => bit-identical parameters. */
void hs_model_init(hs_model *m);

/* Initialisation schemes: HS_INIT_PYTORCH is hs_model_init's; HS_INIT_GPT2 is
 * the recipe of the design notes' PyTorch reference (the 83-89% uniform-with-
 * LayerNorm figure): every matrix and embedding (W_E, W_pos, W_Q, W_K, W_V,
 * W_O, W_in, W_out, W_U) N(0, 0.02), norm weights 1, biases 0 (no 1/sqrt(2L)
 * scaling of the output projections). Same seed and scheme => bit-identical. */
typedef enum { HS_INIT_PYTORCH = 0, HS_INIT_GPT2 = 1 } hs_init;
void hs_model_init_scheme(hs_model *m, hs_init scheme);
const char *hs_init_name(hs_init s);
int hs_init_parse(const char *s);

/* Allocates gradients and Adam moments (zeroed). Needed before backward/step. */
hs_status hs_model_alloc_train(hs_model *m, hs_error *err);

/* Lets m run on up to n_ctx positions (evaluation past the trained length,
 * `eval --n-ctx`): positions with no table (none, sinusoidal, rotary,
 * alibi: computed for any position) take any n_ctx in [1, 4096], which
 * becomes m->cfg.n_ctx (the parameter table does not change; a checkpoint
 * saved after says the new n_ctx); learned positions stop at their table:
 * n_ctx above cfg.n_ctx is refused in one line ("learned positions stop at
 * n_ctx = N"), at or below it nothing changes. Activations made before keep
 * their capacity (make new ones, hs_acts_create, for the longer runs).
 * HS_ERR_INPUT. */
hs_status hs_model_set_n_ctx(hs_model *m, int n_ctx, hs_error *err);

/* Looks up a tensor by name; NULL if absent. */
const hs_tensor_info *hs_model_find_tensor(const hs_model *m, const char *name);

/* Weights read in place (DESIGN.md "Checkpoint"). A model the loader mapped
 * has views into its checkpoint file (m->n_maps > 0; read-only pages: never
 * write through them) and two views in another layout than the table's:
 * W_QKV (D, 3*H*dh) instead of W_Q/W_K/W_V (H, D, dh), and W_U_T (V, D)
 * instead of W_U (D, V). Readers of those go through the accessors below,
 * which work on every model; a reader that needs the table's own layout
 * everywhere (writing the weights, training, saving) calls hs_model_own. */

/* Head h's W_Q (which 0), W_K (1) or W_V (2) of layer l as a (D, dh) matrix
 * whose rows are *ld floats apart: in the (H, D, dh) table (ld = dh) or in
 * place in the packed W_QKV (ld = 3*H*dh). h is a query head, in [0, H),
 * for all three: with grouped-query attention W_K and W_V are those of its
 * key/value head hs_kv_head(cfg, h) (the (n_kv, D, dh) table's), what the
 * head reads. A packed W_QKV has no grouping. NULL for W_Q/W_K of uniform
 * attention. No copy, no errors. */
const float *hs_head_qkv(const hs_model *m, int l, int which, int h, int *ld);

/* W_U[d][v] (unembed.W_U, (D, V)) whichever way it is stored. */
static inline float hs_unembed_at(const hs_model *m, int d, int v)
{
    return m->params.W_U ? m->params.W_U[(size_t)d * m->cfg.d_vocab + v]
                         : m->params.W_U_T[(size_t)v * m->cfg.d_model + d];
}

/* The values of table entry i (m->tensors[i]), row-major in its
 * TransformerLens shape, where they lie (param_mem + offset, or a mapped
 * file); NULL for an entry held in another layout (W_Q/W_K/W_V under
 * W_QKV, W_U under W_U_T). */
float *hs_model_tensor_data(const hs_model *m, int i);

/* Makes every view of m point into its own param_mem in the table's layout,
 * as hs_model_create's (what training, hs_model_process_tl and
 * hs_checkpoint_save need): each mapped tensor copied to its slot
 * (W_Q/W_K/W_V split out of W_QKV per head, W_U transposed from W_U_T),
 * W_QKV and W_U_T cleared, the files unmapped. Nothing to do (HS_OK) for a
 * model that maps nothing. The copy costs what loading by copy did (GPT-2
 * small: 650 MB resident). No errors today (param_mem is allocated at
 * creation; the status is for the future). */
hs_status hs_model_own(hs_model *m, hs_error *err);

/* ------------------------------------------------------------------------ */
/* Observer: the forward pass's named points (DESIGN.md, Model)              */

/*
 * At each named point (TransformerLens hook names, batched tensors) the forward
 * pass calls observer->fn(name, shape, ndim, data, ctx) when observer->wants
 * (may be NULL = all names) returns non-zero for that name. The callback may
 * read data or change it in place; it returns:
 *    0  it did not change data,
 *    1  it changed data (the forward pass then continues from the new values;
 *       e.g. a changed hook_result is summed into hook_attn_out),
 *   <0  abort the forward pass (HS_ERR_CALLBACK).
 * With observer == NULL the pass does no extra work.
 *
 * Points, in forward order (the names, shapes, where each sits and what an
 * edit does downstream: docs/HOOKS.md, which follows TransformerLens 3.x;
 * hs_hook_points lists those a config produces):
 *   hook_tokens [B,T] (token ids as floats; an edit must leave integer ids in
 *     [0, V), else HS_ERR_INPUT), hook_embed [B,T,D], hook_pos_embed [B,T,D]
 *     (pos = learned), ln_embed.hook_scale [B,T,1], ln_embed.hook_normalized
 *     [B,T,D] (embed_norm; no TL counterpart, see HOOKS.md),
 *   blocks.l.hook_resid_pre [B,T,D],
 *   blocks.l.hook_attn_in [B,T,H,D], blocks.l.hook_q_input, hook_k_input
 *     (softmax only), hook_v_input [B,T,H,D]: resid_pre repeated per head;
 *     an edit changes only that head's q/k/v (LN1 then runs per head),
 *   blocks.l.ln1.hook_scale [B,T,1], blocks.l.ln1.hook_normalized [B,T,D] (ln1 on;
 *     normalized is (x - mean)/scale, before the gain and bias, as TL 3.x),
 *   blocks.l.attn.hook_q, hook_k [B,T,H,dh] (softmax only), hook_v [B,T,H,dh]
 *     (hook_k, hook_v [B,T,n_kv,dh] with grouped-query attention, as are
 *     hook_k_input and hook_v_input [B,T,n_kv,D]; then no hook_attn_in),
 *   blocks.l.attn.hook_rot_q [B,T,H,dh], hook_rot_k [B,T,n_kv,dh] (pos rotary:
 *     q and k rotated, what the scores read; an edit of hook_q or hook_k is
 *     rotated, an edit here is read as it is),
 *   blocks.l.attn.hook_attn_scores [B,H,T,T] (softmax only; ALiBi's bias added
 *     and the causal (and local) mask applied before the point: masked = -inf; the softmax runs over the whole
 *     hooked row, so an edit above the diagonal un-masks it; a row with no
 *     finite maximum gives weights 0, TL's NaN -> 0),
 *   blocks.l.attn.hook_pattern [B,H,T,T] (weights above the diagonal written
 *     here are mixed into z), blocks.l.attn.hook_z [B,T,H,dh],
 *   blocks.l.attn.hook_result [B,T,H,D] (z W_O per head, without b_O),
 *   blocks.l.hook_attn_out [B,T,D] (sum of results + b_O),
 *   blocks.l.hook_resid_mid [B,T,D], blocks.l.hook_mlp_in [B,T,D] (the input of
 *     ln2 alone: an edit does not change the residual skip),
 *   blocks.l.ln2.hook_scale [B,T,1], blocks.l.ln2.hook_normalized [B,T,D],
 *   blocks.l.mlp.hook_pre [B,T,M], blocks.l.mlp.hook_pre_linear [B,T,M]
 *     (gated_mlp: hook_pre = x W_gate, hook_pre_linear = x W_in + b_in, as TL's
 *     GatedMLP), blocks.l.mlp.hook_post [B,T,M],
 *   blocks.l.hook_mlp_out [B,T,D]       (the MLP points only with d_mlp > 0),
 *   blocks.l.hook_resid_post [B,T,D],
 * The block's switches move or drop points (docs/HOOKS.md): parallel_attn_mlp
 *   has no hook_resid_mid; norm_place post calls ln1's points after
 *   hook_attn_out and ln2's after hook_mlp_out.
 *   ln_final.hook_scale [B,T,1], ln_final.hook_normalized [B,T,D] (final norm on),
 *   unembed.hook_in [B,T,D] (what W_U reads), logits [B,T,V] (alias
 *     unembed.hook_out: one point, two names; the observer sees "logits").
 * Changing a hook_scale changes the normalised output (it is x/scale).
 * Changing hook_pattern changes z (weights need not sum to 1).
 */
typedef int (*hs_observer_fn)(const char *name, const int64_t *shape, int ndim,
                              float *data, void *ctx);
typedef int (*hs_observer_wants_fn)(const char *name, void *ctx);
typedef struct {
    hs_observer_fn fn;
    hs_observer_wants_fn wants;   /* NULL = every point */
    void *ctx;
} hs_observer;
/* Where an observer would like point `name` written (hs_forward_dest): a
 * buffer of the shape's element count it owns beyond the forward, or NULL
 * (the forward writes its own); ctx is the observer's. *keeps (0 on entry)
 * = 1: it only keeps the values there (fn returns <= 0, reads the buffer
 * after the forward): the forward may fill it in parts, fn once whole. */
typedef float *(*hs_observer_dest_fn)(const char *name, const int64_t *shape, int ndim, int *keeps,
                                      void *ctx);

/* One hook point of a config: its name and, if it has one, a second name
 * (alias) that means the same point ("logits" / "unembed.hook_out"). */
typedef struct {
    char name[64];
    char alias[32];  /* "" = none */
} hs_hook_point;

/* Lists the hook points a model of cfg offers, in forward order, into out
 * (up to cap entries; out may be NULL with cap 0). Returns how many there
 * are (which may exceed cap). */
int hs_hook_points(const hs_config *cfg, hs_hook_point *out, int cap);

/* The canonical name of a hook point name: "logits" for "unembed.hook_out",
 * name itself otherwise. */
const char *hs_hook_canonical(const char *name);
/* The second name of a canonical point name ("unembed.hook_out" for
 * "logits"), or NULL. */
const char *hs_hook_alias(const char *name);

/* ------------------------------------------------------------------------ */
/* Activations                                                               */

typedef struct {
    float *resid_pre;   /* (B,T,D) */
    float *ln1_out;     /* (B,T,D) LN1 output (== resid_pre copy if ln1 off) */
    float *ln1_mean, *ln1_rstd; /* (B,T) */
    float *q, *k, *v;   /* (B,T,H,dh) */
    float *att;         /* (B,H,T,T) pattern (stale after a forward whose observer
                         * took it, hs_acts.att_elsewhere) */
    float *z;           /* (B,T,H,dh) */
    float *attn_out;    /* (B,T,D) */
    float *resid_mid;   /* (B,T,D) */
    float *ln2_out;     /* (B,T,D) */
    float *ln2_mean, *ln2_rstd; /* (B,T) */
    float *mlp_pre;     /* (B,T,M) */
    float *mlp_post;    /* (B,T,M) */
    float *resid_post;  /* (B,T,D) */
    float *mlp_pre_linear; /* (B,T,M) x W_in + b_in (gated_mlp; else no floats) */
    float *sum_attn;    /* (B,T,D) resid_pre (0 with attn_replace) + attn_out, the
                         * input of the post-norm LN1 (norm_place post; else no floats) */
    float *sum_mlp;     /* (B,T,D) resid_mid + mlp_out, the input of the post-norm
                         * LN2 (norm_place post with d_mlp > 0; else no floats) */
} hs_block_acts;

/* hs_acts.logit_pos: a forward without the final norm and the logits */
#define HS_LOGITS_NONE (-2)

typedef struct {
    int B, T;                     /* capacity the buffers were made for */
    int b, t;                     /* shape of the last forward */
    float *mem;                   /* one allocation (hs_floats_alloc: every slot on a cache
                                   * line; hs_acts_destroy frees it, with d_mem) */
    size_t n_floats;
    float *embed;                 /* (B,T,D) token embedding rows */
    float *pos_embed;             /* (B,T,D) */
    float *x0;                    /* (B,T,D) embed + pos (before embed norm) */
    float *lne_mean, *lne_rstd;   /* (B,T) embed norm stats */
    hs_block_acts blocks[HS_MAX_LAYERS];
    float *lnf_out;               /* (B,T,D) */
    float *lnf_mean, *lnf_rstd;   /* (B,T) */
    float *logits;                /* (B,T,V) */
    float *probs;                 /* (B,T,V) softmax of logits (after loss; HS_ACTS_TRAIN:
                                     d loss / d logits after hs_backward) */
    /* backward scratch (hs_floats_alloc): every batch part's fixed slots, the
     * per-sequence slots (hs_backward), then dact_mem, then the transposed weights */
    float *d_mem;
    size_t n_d_floats;
    float *dact_mem;              /* (L,B,T,M) act'(mlp_pre) a training forward keeps; moved by views */
    /* scratch for observer points */
    float *scratch;               /* (B,T,H,D), (B,T,max(D,M)) or (H*dh,T) */
    float *scores;                /* (B,H,T,T) pre-softmax scores (observer only) */
    int logit_pos;                /* -1 (hs_acts_create): every position. p >= 0: a forward
                                   * computes the last block from its attention output on,
                                   * the final norm and the logits at position p of each
                                   * sequence only (a reader of those logits alone: the
                                   * experiment engine's sweeps); the buffers from there on
                                   * then hold nothing else of use. Ignored (every position)
                                   * when the observer wants a point there, with an
                                   * embedding norm, norm_place post or attn_replace,
                                   * when p >= t, or when the compact rows
                                   * do not fit acts->scratch (a few positions and a large
                                   * vocabulary). The logits at p are the whole forward's
                                   * up to the last bits (products over another row count
                                   * may round differently where OpenBLAS runs them; on
                                   * libxsmm (hs_sgemm) a row's bits do not depend on
                                   * the row count; tested to 1e-5).
                                   * HS_LOGITS_NONE: no final norm and no logits at all
                                   * (their points do not fire; acts->logits holds nothing
                                   * of use): a reader of the residual stream alone, the
                                   * logit lens (experiments/lens.c), spared a product with
                                   * W_U (GPT-2: 50,257 x 768) a run. */
    int lean;                     /* 1: made with HS_ACTS_TRAIN (hs_acts_create): only what
                                   * hs_backward reads is kept per layer */
    int edited;                   /* 1 when the last forward's observer changed a point after
                                   * hook_tokens, hook_embed and hook_pos_embed (returned 1
                                   * there): the activations are not those of the model's own
                                   * computation, and hs_backward_acts refuses them */
    unsigned char att_elsewhere[HS_MAX_LAYERS]; /* 1: the last forward wrote block l's
                                   * pattern into its observer's buffer (hs_forward_dest:
                                   * hs_run_with_cache's entry, no second copy), or kept
                                   * none (no observer, logit_pos != -1: nothing reads it
                                   * after such a forward), and
                                   * blocks[l].att is stale; hs_backward and
                                   * hs_backward_acts compute it again from q and k first
                                   * (the same kernels: the same bits) */
    hs_pool *pool;                /* workers of hs_forward / hs_backward (hs_acts_set_pool); NULL = the caller's thread */
    int own_pool;                 /* 1 when hs_acts_set_threads made pool (destroyed with a) */
    int wpack_slots;              /* layers the forward's packed W_Q/K/V hold (model_internal.h,
                                   * hs_acts_wpack): n_layers; 1 for activations of one
                                   * sequence without gradients (inference: each layer packed
                                   * as its block starts; GPT-2 small: 85 -> 7 MB) */
    float *split_mem;             /* (split_cap) the scratch of the split inputs
                                   * (blocks.{l}.hook_attn_in, hook_q/k/v_input, observer runs
                                   * only, which run as one part on these activations): made
                                   * by the first forward that is asked for one, kept for the
                                   * next (hs_floats_alloc), freed with the activations */
    size_t split_cap;
    float *rope;                  /* pos rotary: (T, rd) rows, position p's rd/2 cos then its
                                   * rd/2 sin of p times inv_freq[i] (hs_rotary_inv_freq; rd =
                                   * hs_rotary_dim), made in double and rounded once by
                                   * hs_acts_create for positions 0 .. T-1; NULL otherwise */
    float *pos_table;             /* pos sinusoidal: (T, D) PE[p][2i] = sin(p w_i), PE[p][2i+1] =
                                   * cos(p w_i), w_i = 10000^(-2i/D) (Vaswani et al. 2017,
                                   * 3.5), made likewise; NULL otherwise */
} hs_acts;

/* hs_acts_create's with_grad. HS_ACTS_INFER: a forward's activations, each
 * hook point's buffer kept per layer. HS_ACTS_GRAD: the same plus the
 * backward's scratch (hs_backward, hs_backward_acts) and act'(mlp_pre) per
 * layer. HS_ACTS_TRAIN: the training layout, for hs_forward without observer
 * at every position then hs_backward only (hs_train): per layer only what
 * the backward reads (resid_pre = the previous layer's resid_post, q, k, v,
 * the pattern, z, resid_mid, the norms' statistics, mlp_pre); attn_out,
 * ln1_out, ln2_out and mlp_post one buffer for every layer, holding the last
 * layer's after a forward (the backward makes each layer's again, the same
 * bits: model_internal.h, hs_lean_ln1); the scores in the backward's scratch;
 * act' made again in the backward. The numbers are those of HS_ACTS_GRAD,
 * bit for bit; at d_model 512, 8 layers, 256 tokens, batch 64 the step's
 * peak RSS is 6,094 MiB against 9,170 (bench/scale.py; docs/DESIGN.md).
 * hs_forward refuses an observer or a logit_pos on them, hs_backward_acts
 * refuses them. */
enum { HS_ACTS_INFER = 0, HS_ACTS_GRAD = 1, HS_ACTS_TRAIN = 2 };

/* Allocates activations for batches up to B sequences of up to T tokens
 * (T <= n_ctx), with_grad one of HS_ACTS_* (above). Errors: HS_ERR_INPUT
 * for B, T or with_grad out of range; HS_ERR_NOMEM. */
hs_status hs_acts_create(const hs_config *cfg, int B, int T, int with_grad,
                         hs_acts **out, hs_error *err);
void hs_acts_destroy(hs_acts *a);

/* The worker pool hs_forward and hs_backward on a use (borrowed: the caller
 * keeps it alive while a uses it and destroys it; NULL = the caller's thread
 * only). A forward without observer splits the batch into one part per
 * worker (hs_pool_for; parts start at a multiple of 16 rows, so each row
 * meets the same sgemm kernel as in one call; a batch with no such split runs
 * whole): every kernel works per row, so its values are those of one pass.
 * A forward that runs as one part (an observer, or no split) splits its row
 * passes and its large products over the pool's workers (products of 256
 * rows or more by rows, fewer by columns: the bits of one call), with
 * OpenBLAS at one thread a call; not from inside a job of the same pool.
 * The backward splits a batch of two or more 16-row units into HS_GRAD_PARTS
 * parts whatever the thread count (data parallel: each part's whole backward
 * on one worker, its gradients in their own buffer, summed in part order), so
 * its values too are bit-identical for every thread count; a smaller batch
 * runs whole, its weight gradients on the pool's lane beside the chain of
 * input gradients. Replaces (and destroys) a pool hs_acts_set_threads made. */
void hs_acts_set_pool(hs_acts *a, hs_pool *pool);
/* hs_acts_set_pool with a pool of `threads` workers that a owns (0 = every
 * CPU, hs_pool_cpus; 1 = none). Errors of hs_pool_create. */
hs_status hs_acts_set_threads(hs_acts *a, int threads, hs_error *err);

/* ------------------------------------------------------------------------ */
/* Forward and loss (training's backward, AdamW and loop: model/train.h)     */

/*
 * Runs the model on tokens (b, t) (row-major, ids in [0, V)), filling acts and
 * acts->logits (b,t,V). observer may be NULL. b <= acts->B, t <= acts->T.
 * Errors: HS_ERR_INPUT for a token id out of range or t > n_ctx;
 * HS_ERR_CALLBACK when the observer returns < 0.
 */
hs_status hs_forward(const hs_model *m, hs_acts *acts, const int *tokens, int b, int t,
                     const hs_observer *observer, hs_error *err);
/* hs_forward whose observer is also asked where to write the points living
 * in the forward's scratch between two calls (hook_attn_in, hook_q/k/v_input,
 * hook_attn_scores, hook_result) and hook_pattern (blocks[l].att then stale,
 * hs_acts.att_elsewhere): at such a point it wants, dest(name, shape, ndim,
 * &keeps, observer->ctx) may return a buffer it owns; the forward writes the
 * point there and calls fn with it next (after hook_attn_scores dest may
 * first be asked for hook_pattern: fn then at the two in order). An observer
 * that only keeps both (or wants neither) gets them from causal blocks in
 * cache, streamed (attention.c attn_causal_bg; fn after z; the same values).
 * dest NULL: hs_forward. */
hs_status hs_forward_dest(const hs_model *m, hs_acts *acts, const int *tokens, int b, int t,
                          const hs_observer *observer, hs_observer_dest_fn dest, hs_error *err);

/* The model's output head applied to any residual (the logit lens): logits
 * (N, V) = LN_final(resid) W_U + b_U with the final norm's statistics (mean,
 * 1/rstd) computed from resid itself, row by row, exactly as the forward
 * computes them for the last layer's output (so resid = the final residual
 * gives the forward's logits bit for bit when N matches the forward's rows;
 * with another N too where hs_sgemm runs the product on libxsmm, not where
 * OpenBLAS does, whose kernel depends on the product's size). No final norm (or norm
 * none): resid W_U + b_U. scratch: (N, D) floats plus 2 N. resid (N, D). */
void hs_final_logits(const hs_model *m, const float *resid, size_t N, float *scratch, float *logits);
/* hs_final_logits with the product's columns (the vocabulary) split over
 * pool's workers (hs_sgemm_cols_pool: each packs only its part of W_U; the
 * same bits), the final norm on this thread: for a few rows against GPT-2's
 * 50,257 columns. pool NULL, one worker or a small W_U: hs_final_logits'
 * one call. Not from inside a job of pool. */
void hs_final_logits_pool(hs_pool *pool, const hs_model *m, const float *resid, size_t N,
                          float *scratch, float *logits);

/*
 * Mean next-token cross-entropy over the positions whose target is >= 0
 * (targets (b,t); -1 = ignore). Uses acts->logits of the last forward and
 * fills acts->probs, rows split over acts->pool (the loss and probs have the
 * bits of one pass for any pool). Returns the loss in nats; *n_valid gets
 * the count.
 */
float hs_cross_entropy(const hs_model *m, hs_acts *acts, const int *targets, int *n_valid);

/* ------------------------------------------------------------------------ */
/* The gradient of a metric at the activations (model/backward_acts.c)        */

/*
 * The backward of a scalar metric f of the last forward's logits to that
 * forward's activations, with TransformerLens's backward hooks' semantics
 * (HookPoint.add_hook(dir="bwd"): a hook sees d f / d the point's output):
 * given dlogits (b,t,V) = d f / d logits (b = acts->b, t = acts->t), it
 * calls grad_obs->fn(name, shape, ndim, data, ctx) at each point
 * grad_obs->wants (wants NULL = every one) with data = d f / d(that point's
 * tensor), under the forward's name, shape and layout, in backward order:
 *   unembed.hook_in [b,t,D]; then for each layer l from the last:
 *   blocks.l.hook_resid_post; with d_mlp > 0 hook_mlp_out, mlp.hook_post,
 *     mlp.hook_pre_linear (gated_mlp), mlp.hook_pre [b,t,M], hook_mlp_in
 *     (the input of ln2 alone: the path through the MLP, not the skip),
 *     hook_resid_mid (not with parallel_attn_mlp: there hook_mlp_in is a
 *     copy of resid_pre, and its gradient is added to resid_pre's);
 *     norm_place post runs each post-norm's backward where its forward
 *     sat (ln2 before hook_mlp_out, ln1 before hook_attn_out);
 *     attn_replace: resid_pre's gradient comes through the attention alone;
 *   hook_attn_out; attn.hook_result [b,t,H,D] (every head's: d f / d
 *     attn_out); attn.hook_z; attn.hook_pattern [b,H,t,t] (dz v^T at every
 *     (dest, src), above the diagonal too, where an edit would change z);
 *     attn.hook_v, (rotary: hook_rot_k, hook_rot_q, the gradients at the
 *     rotated k and q), hook_k, hook_q [b,t,H,dh] (k, v: n_kv heads);
 *     hook_q_input, hook_k_input, hook_v_input [b,t,H,D] (k, v: [b,t,n_kv,D]
 *     with grouped-query attention, and no hook_attn_in): per head, d f / d
 *     the residual that head's
 *     query, key or value reads = ln1's backward (with the forward's ln1
 *     statistics, which every head shares in an unedited forward) of
 *     dq[:, :, h] W_Q[h]^T (dk W_K[h]^T, dv W_V[h]^T); hook_attn_in
 *     [b,t,H,D] (their sum); hook_resid_pre (the whole gradient: the skip
 *     and every head's inputs; blocks.l-1.hook_resid_post has the same);
 *   then hook_embed and hook_pos_embed [b,t,D]: d f / d x0 (x0 = embed +
 *     pos_embed), through ln_embed with an embedding norm.
 * Not offered: the norms' hook_scale and hook_normalized, hook_attn_scores,
 * hook_tokens and logits (dlogits itself). No weight gradient is computed,
 * and the backward stops after the deepest point the observer wants
 * (nothing runs when it wants none). The maths are hs_backward's kernels
 * (model/backward.c), in float; runs on the caller's thread (acts->pool
 * only transposes the weights the products read, as hs_backward does).
 * The callback reads data (the backward's own buffer, valid during the
 * call; it must not write it) and returns 0, or < 0 to abort
 * (HS_ERR_CALLBACK; > 0 too: a gradient observer must not change data).
 * Needs acts made with with_grad and the last forward run whole
 * (acts->logit_pos -1) with no edit after the input (acts->edited = 0):
 * HS_ERR_INPUT otherwise. An observer of that forward may have edited
 * hook_tokens, hook_embed or hook_pos_embed: the gradient is then that of
 * the forward from those inputs (EAP-IG's interpolated embeddings,
 * experiments.h). HS_ERR_NOMEM (the split inputs' buffers). grad_obs may be
 * NULL (nothing to do).
 */
hs_status hs_backward_acts(const hs_model *m, hs_acts *acts, const float *dlogits,
                           const hs_observer *grad_obs, hs_error *err);

/* ------------------------------------------------------------------------ */
/* TransformerLens' weight processing (model/process.c)                      */

/*
 * Processes m's weights in place as TransformerLens'
 * HookedTransformer.from_pretrained does by default (TransformerLens v3.5.1,
 * transformer_lens/weight_processing.py, ProcessWeights.process_weights with
 * fold_ln, center_writing_weights, center_unembed and fold_value_biases; not
 * refactor_factored_attn_matrices):
 *   fold_ln: b_Q/K/V += ln1.b W_Q/K/V, W_Q/K/V *= ln1.w (per d_model row),
 *     then centred over d_model; the same for ln2 into W_in / b_in and
 *     ln_final into W_U / b_U (b_U = ln_final.b W_U: no longer zero); the
 *     norms lose their weights (cfg.norm_pre = 1: TL's "LNPre");
 *   center_writing_weights: W_E, W_pos, W_O, b_O, W_out, b_out minus their
 *     mean over d_model;
 *   center_unembed: W_U minus its mean over the vocabulary, b_U minus its mean;
 *   fold_value_biases: b_O += sum_h b_V[h] W_O[h], b_V = 0, b_O centred.
 * Attention patterns, probabilities and logit differences are unchanged (to
 * float rounding); logits move by a constant per position; per-head outputs
 * and direct logit attribution change (bias terms move into b_O and b_U).
 * An LNPre model skips fold_ln, as TL does. Sums in double, rounded once.
 * Then m->tl_processed = 1. Drops any optimizer state. Errors (m unchanged):
 * HS_ERR_INPUT naming why the processing does not apply: weights processed
 * already, a norm other than LayerNorm, ln1 or the final norm off, an
 * embedding norm, uniform attention, no biases.
 */
hs_status hs_model_process_tl(hs_model *m, hs_error *err);

/* Which weights m holds, for every output that depends on it (DLA):
 * "tl-processed" after hs_model_process_tl, else "raw" (the checkpoint's
 * weights as it stores them). */
const char *hs_model_weights_name(const hs_model *m);

#endif /* HS_MODEL_H */
