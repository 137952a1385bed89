/*
 * model/checkpoint_internal.h -- private entry points of the safetensors and
 * checkpoint code (model/safetensors.c, model/checkpoint.c and one file per
 * checkpoint layout, model/checkpoint_<layout>.c) for each other, the tests
 * and the fuzz targets (STYLE.md 14: tests reach internals through
 * *_internal.h). Not public API; may change without notice.
 */
#ifndef HS_CHECKPOINT_INTERNAL_H
#define HS_CHECKPOINT_INTERNAL_H

#include "model/model.h"
#include "model/checkpoint.h"

/* Upper bound on a safetensors JSON header (bytes); longer is refused as absurd. */
#define HS_ST_MAX_HEADER ((uint64_t)100 * 1024 * 1024)

/* Returns non-zero for a tensor name the reader should validate structurally
 * (dtype known, shape, offsets, byte length) but not decode: its values are
 * not checked (TransformerLens' IGNORE buffer is -inf) and it does not appear
 * in the output. */
typedef int (*hs_st_skip_fn)(const char *name, void *ctx);

/* hs_safetensors_parse with a skip predicate. Skipped tensors may have any
 * dtype the format knows (BOOL, F16, I64, ...); every other tensor must be
 * F32. *n_skipped (may be NULL) gets the number of skipped tensors. */
hs_status hs_safetensors_parse_ex(const unsigned char *buf, size_t n, const char *name,
                                  hs_st_skip_fn skip, void *skip_ctx, hs_st_file *out,
                                  int *n_skipped, hs_error *err);

/* hs_checkpoint_load from a memory buffer (fuzzing, tests); name is used in
 * messages. Same contract as hs_checkpoint_load. */
hs_status hs_checkpoint_parse(const unsigned char *buf, size_t n, const char *name,
                              hs_model **out, hs_meta *meta, int *n_skipped, hs_error *err);

/* ------------------------------------------------------------------------ */
/* Reading a checkpoint's headers, then its values into place                */
/*
 * The loader reads a checkpoint in two steps, so that the weights are read
 * once, straight into the parameter table, without a copy of the file:
 *   1. every shard's header (hs_st_header_len, then hs_st_index_parse): the
 *      tensors' names, dtypes, shapes and byte ranges, checked as
 *      hs_safetensors_parse checks them (tiling, offsets, sizes), no value
 *      read;
 *   2. each tensor's values read (pread, or from the buffer) in bounded
 *      chunks into where the layout wants them (hs_ckpt_read), converted to
 *      float32 on the way (F16, BF16), every value checked finite.
 */

/* The dtypes a weight may have (each read converted once to float32); OTHER:
 * any other dtype the format knows, taken only by a buffer. */
typedef enum { HS_ST_F32 = 0, HS_ST_F16, HS_ST_BF16, HS_ST_OTHER } hs_st_dtype;

/* Where one tensor's values lie. */
typedef struct {
    int shard;           /* the source's shard (0 for a one-file checkpoint) */
    hs_st_dtype dtype;
    size_t elsize;       /* bytes per element */
    uint64_t offset;     /* byte offset of the first element in its shard's file */
} hs_st_loc;

/* One safetensors header, or every shard's merged (hs_ckpt_src): names,
 * ndim, shape, numel of each tensor (st.data is NULL: no value is read) and
 * the metadata; the buffers the skip predicate named kept apart. */
typedef struct {
    hs_st_file st;       /* the tensors with weights, in header (then shard) order */
    hs_st_loc *loc;      /* (st.n) */
    hs_st_file bufs;     /* the buffers, the same way (no metadata) */
    hs_st_loc *buf_loc;  /* (bufs.n) */
} hs_st_index;

/* The header length of a safetensors file from its first 8 bytes b8 (the
 * file holds file_size bytes): HS_ERR_FORMAT for a file shorter than 8
 * bytes, a length over HS_ST_MAX_HEADER or past the end. */
hs_status hs_st_header_len(const unsigned char *b8, uint64_t file_size, const char *fname,
                           uint64_t *hlen, hs_error *err);

/* The index of a header: hdr = its hn bytes (after the length field), the
 * data section data_size bytes long from byte data_offset (8 + hn) of the
 * file. Checks everything hs_safetensors_parse_ex checks but the values;
 * weights may be F32, F16 or BF16, buffers (skip) any dtype. Free with
 * hs_st_index_free; *out zeroed on failure. */
hs_status hs_st_index_parse(const unsigned char *hdr, size_t hn, uint64_t data_size,
                            uint64_t data_offset, const char *name, hs_st_skip_fn skip,
                            void *skip_ctx, hs_st_index *out, hs_error *err);
void hs_st_index_free(hs_st_index *x);

/* One file values are read from: a descriptor (pread) or a buffer. */
typedef struct {
    char *path;                /* for messages */
    int fd;                    /* -1 for a buffer */
    const unsigned char *mem;  /* the buffer's bytes (fd -1) */
    uint64_t size;             /* bytes */
    unsigned char *map;        /* the whole file mapped read-only (PROT_READ, MAP_PRIVATE),
                                * NULL when it could not be (then read with pread) */
    int given;                 /* 1 once a model took map (hs_ckpt_in_place): the model
                                * unmaps it, hs_ckpt_src_close does not */
    float in_place_max;        /* the largest finite |w| of the tensors used in place from map
                                * (hs_ckpt_in_place's scan; 0 before any) */
} hs_st_shard;

/* A checkpoint opened for reading: every shard's header merged, the shards
 * open (model/checkpoint_src.c). */
typedef struct {
    const char *fname;         /* the path (or name) the caller gave: messages */
    char *dir;                 /* the folder beside the weights (config.json): the path when
                                * it is a folder, else the file's folder; NULL from memory */
    hs_st_index x;             /* x.loc[i].shard names the shard */
    int *order;                /* (x.st.n) tensor indices by (shard, offset): the order
                                * that reads each file front to back */
    hs_st_shard *shards;       /* (n_shards) */
    int n_shards;
    int index_ignored;         /* a folder with model.safetensors and an index: the file was read */
    hs_pool *pool;             /* NULL, or the pool hs_ckpt_in_place splits a large tensor's
                                * mapping and finiteness scan over (borrowed; set after open) */
} hs_ckpt_src;

/* Opens the checkpoint at path: a .safetensors file, or a folder holding
 * model.safetensors or a sharded model.safetensors.index.json (Hugging Face's
 * "weight_map": tensor name -> shard file name in the folder) with its
 * shards. skip names the buffers (hs_st_skip_fn). Errors: HS_ERR_IO (a file
 * that cannot be opened or read, naming it), HS_ERR_FORMAT (a header, a
 * folder with neither file, an index that is not a weight_map of plain file
 * names, a tensor in no shard or two, a tensor the index places in another
 * shard), HS_ERR_NOMEM. *src zeroed on failure; close with hs_ckpt_src_close. */
hs_status hs_ckpt_src_open(const char *path, hs_st_skip_fn skip, hs_ckpt_src *src,
                           hs_error *err);
/* The same for a buffer of n bytes (one file; the buffer outlives src). */
hs_status hs_ckpt_src_mem(const unsigned char *buf, size_t n, const char *name,
                          hs_st_skip_fn skip, hs_ckpt_src *src, hs_error *err);
void hs_ckpt_src_close(hs_ckpt_src *src);

/* Elements [first, first + n) of weight i (src->x.st) into dst (n floats),
 * converted to float32 (F16, BF16: exactly), read in chunks of at most
 * HS_CKPT_CHUNK bytes; every value checked finite. Errors: HS_ERR_IO (a
 * short read), HS_ERR_NUMERIC "<file>: tensor 'x' has a non-finite value
 * (NaN) at index k". */
#define HS_CKPT_CHUNK ((size_t)1 << 20)
hs_status hs_ckpt_read(const hs_ckpt_src *src, int i, size_t first, size_t n, float *dst,
                       hs_error *err);
/* Weight i of src used in place: *out = its values in the file's read-only
 * mapping when it is F32 (little-endian host), the file is mapped and its
 * data offset is 4-byte aligned (safetensors does not align offsets; a
 * misaligned tensor is never read as misaligned floats); every value checked
 * finite; m takes the mapping (hs_model_adopt_map: m unmaps it). *out =
 * NULL (HS_OK) when the tensor cannot be used in place: the caller copies
 * it (hs_ckpt_read). Errors: hs_ckpt_read's HS_ERR_NUMERIC; HS_ERR_NOMEM. */
hs_status hs_ckpt_in_place(const hs_ckpt_src *src, int i, hs_model *m, float **out,
                           hs_error *err);
/* The largest finite |w| over the tensors used in place (hs_ckpt_in_place)
 * from the mapped shard that holds the bytes [p, p + bytes), as their
 * finiteness scan found it; -1 when no such shard holds them. Every pointer
 * into a mapping comes from hs_ckpt_in_place, so it bounds |w| of any
 * parameter there: the magnitude warning (model/checkpoint.c) scans again
 * only what it does not cover. */
float hs_ckpt_in_place_max(const hs_ckpt_src *src, const void *p, size_t bytes);
/* Bytes [first, first + n) of buffer i (src->x.bufs), as stored, into dst. */
hs_status hs_ckpt_read_buf(const hs_ckpt_src *src, int i, size_t first, size_t n, void *dst,
                           hs_error *err);

/* Checks that buffer i (src->x.bufs) is the causal attention mask a layout
 * stores: shape [n, n] after lead leading 1s (TransformerLens'
 * blocks.{l}.attn.mask: lead 0; Hugging Face GPT-2's h.{l}.attn.bias
 * [1, 1, n, n]: lead 2), nonzero exactly where column <= row (any dtype; a
 * float -0 is zero), read HS_CKPT_CHUNK bytes at a time. headscope computes
 * causal attention only, so any other mask (a local window, a padding or
 * bidirectional mask) would be computed wrongly: HS_ERR_FORMAT, one line
 * naming the file and the tensor: "<file>: <name> is not the causal mask:
 * row r, column c is 0 where a causal mask has 1" (or "is nonzero where a
 * causal mask has 0"; the first such element in
 * row-major order), or "... has shape [..], not a causal mask's [n, n]"
 * ([1, 1, n, n] for lead 2); hs_ckpt_read_buf's errors; HS_ERR_NOMEM. */
hs_status hs_ckpt_check_causal_mask(const hs_ckpt_src *src, int i, int lead, hs_error *err);
/* The same for a layer of local attention (window >= 1, model.h's
 * attn_local): nonzero exactly where column <= row and row - column <
 * window (TransformerLens' local mask, triu(tril(1), 1 - window)); the
 * messages say "is not the local (window W) mask" and "where a local (window
 * W) mask has". window 0 is hs_ckpt_check_causal_mask. */
hs_status hs_ckpt_check_mask(const hs_ckpt_src *src, int i, int lead, int window, hs_error *err);

/* One mask for hs_ckpt_check_masks: buffer i, lead and window as
 * hs_ckpt_check_mask takes them. */
typedef struct {
    int i, lead, window;
} hs_ckpt_mask;
/* hs_ckpt_check_mask of masks[0..n), one job each over src->pool (a
 * checkpoint's masks, GPT-2 small's 12 x 4 MiB, on whichever workers are
 * free: the tokenizer may still hold the pool's lane); the error is the
 * first failing mask's in the order given, the one checking them in turn
 * would report. */
hs_status hs_ckpt_check_masks(const hs_ckpt_src *src, const hs_ckpt_mask *masks, int n, hs_error *err);

/* ------------------------------------------------------------------------ */
/* Checkpoint layouts: the seam of the loader                                */
/*
 * A checkpoint layout is one way a checkpoint lays out a model: its tensor
 * names and shapes, the buffers it carries, where its config lives. The
 * loader (hs_checkpoint_load / hs_checkpoint_parse, model/checkpoint.c) is
 * the same for every layout:
 *   1. opens the checkpoint (hs_ckpt_src_open / hs_ckpt_src_mem: a file, a
 *      folder with one file or shards, a buffer) and reads every header
 *      (structure, dtypes, offsets; no value yet), keeping apart the
 *      tensors that any layout's is_buffer names;
 *   2. takes the first layout of its table (LAYOUTS in model/checkpoint.c)
 *      whose recognises() accepts the tensors, or the table's last one,
 *      headscope's own, when none does;
 *   3. refuses a "headscope_format" other than its own, then builds the
 *      config (config()), validates it (hs_config_validate) and holds it
 *      against the checkpoint's size;
 *   4. creates the model (hs_model_create: parameters zeroed, and the one
 *      parameter table m->tensors: each parameter's TransformerLens name,
 *      shape and place in m->param_mem) and has the layout fill it (fill()),
 *      which reads each tensor's values once, straight into its place
 *      (hs_ckpt_read: converted to float32 and checked finite on the way);
 *   5. refuses the first table entry fill() did not mark ("missing tensor");
 *   6. checks the metadata "vocab", "task", "train", adds the magnitude
 *      warning (hs_model_magnitude_warning) and says its notes: the F16 /
 *      BF16 tensors converted, the file read when an index sits beside it
 *      (the buffers skipped are counted in *n_skipped, not noted: a note on
 *      every load was noise before each refusal, issue 34).
 * The forward and the backward see only the parameter table: where a weight
 * came from, and in which shape, is the layout's business alone. A layout is
 * one file, model/checkpoint_<layout>.c, defining one hs_ckpt_layout (declared
 * below), and one entry of LAYOUTS, before headscope's own.
 *
 * What a layout provides (every member; all run on the caller's thread and
 * keep no state):
 *   name        e.g. "TransformerLens".
 *   recognises  1 when st (the weights' names, shapes and metadata, buffers
 *               apart) is in this layout, judged from tensor names and
 *               metadata alone (e.g. a "config" metadata entry, a tensor
 *               "wte.weight"); cannot fail.
 *   is_buffer   1 for a tensor name the layout's files carry that holds no
 *               weights (TransformerLens' blocks.{l}.attn.mask and IGNORE).
 *               The reader checks such a tensor's structure, takes any dtype,
 *               does not decode it and keeps it in src->x.bufs (a layout's
 *               fill may read and check it, hs_ckpt_read_buf). It runs before
 *               the layout is known, so a buffer name of one layout must not
 *               be a weight name of another.
 *   config      *cfg for the checkpoint, every field: from its metadata
 *               (src->x.st) or, for a layout that keeps it beside the weights
 *               (Hugging Face's config.json), from src->dir; what the layout
 *               has no field for keeps hs_config_default(). Need not
 *               validate. Errors: HS_ERR_FORMAT (no config at all),
 *               HS_ERR_CONFIG (a field it cannot take), one line naming the
 *               file and the field.
 *   fill        reads src's tensors into m's parameters (m->param_mem at
 *               m->tensors[i].offset, m->tensors[i].numel floats, row-major
 *               in the table's TransformerLens shape: W_Q/W_K/W_V (H, D, dh),
 *               W_O (H, dh, D), W_in (D, M), W_out (M, D), W_E (V, D), W_U
 *               (D, V), ...) with hs_ckpt_read (in src->order, which reads
 *               each file front to back), converting what the layout stores
 *               otherwise (a weight kept as [in, out] or [out, in], heads
 *               fused in one matrix, a matrix tied to another) through
 *               bounded chunks, never a second copy of a whole tensor; and
 *               sets filled[i] = 1 (filled: m->n_tensors zeros) for each
 *               entry it wrote; it may allocate and fill the optimizer state
 *               (hs_model_alloc_train) and say notes. src stays the loader's,
 *               and so does m, on failure too (the loader destroys it).
 *               Errors: HS_ERR_FORMAT, one line naming the file and the
 *               tensor (an unknown name; a shape: hs_ckpt_check_shape);
 *               hs_ckpt_read's; HS_ERR_NOMEM.
 */
typedef struct {
    const char *name;
    int (*recognises)(const hs_st_file *st);
    int (*is_buffer)(const char *name);
    hs_status (*config)(const hs_ckpt_src *src, hs_config *cfg, hs_error *err);
    hs_status (*fill)(const hs_ckpt_src *src, hs_model *m, unsigned char *filled,
                      const hs_notes *notes, hs_error *err);
} hs_ckpt_layout;

/* HS_OK when a file tensor's shape (ndim dims) is t's, else HS_ERR_FORMAT
 * "<fname>: tensor <t->name> has shape [..], config expects [..]". For a
 * layout's fill. */
hs_status hs_ckpt_check_shape(const char *fname, const hs_tensor_info *t, const int64_t *shape,
                              int ndim, hs_error *err);

/* The layouts, one file each. */
extern const hs_ckpt_layout hs_ckpt_layout_tl; /* model/checkpoint_tl.c */
extern const hs_ckpt_layout hs_ckpt_layout_hf; /* model/checkpoint_hf.c */

/* A config's act_fn / activation_function name: "gelu" (exact erf), "relu",
 * "gelu_new" or "gelu_pytorch_tanh" (the same tanh approximation: PyTorch's
 * F.gelu(approximate="tanh")); -1 for any other. */
int hs_checkpoint_act_parse(const char *name);

/* ------------------------------------------------------------------------ */
/* The TransformerLens layout's own entry points (model/checkpoint_tl.c)     */

/* Returns 1 if name is a TransformerLens attention buffer that carries no
 * weights: "blocks.<l>.attn.mask" or "blocks.<l>.attn.IGNORE" (the
 * TransformerLens layout's is_buffer). */
int hs_checkpoint_is_tl_buffer(const char *name);

/* The metadata config reader on its own (fuzzing, tests): tl_text is the
 * `config` JSON (TransformerLens field names; NULL = missing), hs_text the
 * `headscope_config` JSON (NULL or "" = absent). Fills *c from the defaults and
 * the fields; does not run hs_config_validate. fname is used in messages. */
hs_status hs_checkpoint_config_parse(const char *fname, const char *tl_text, const char *hs_text,
                                     hs_config *c, hs_error *err);

/* What the loader does with a HookedTransformerConfig field: computes it as
 * TransformerLens does, ignores it as inert (it changes nothing in the
 * forward), or refuses any value but its default (one line naming field and
 * value). */
typedef enum { HS_TL_COMPUTED = 0, HS_TL_INERT = 1, HS_TL_REFUSED = 2 } hs_tl_field;

/* The hs_tl_field of a config field name, or -1 for a field the loader does
 * not know (which it refuses). */
int hs_checkpoint_tl_field(const char *name);

/* ------------------------------------------------------------------------ */
/* The Hugging Face layout's own entry points (model/checkpoint_hf.c)       */

/* config.json's text (a JSON object) into *c, by its model_type: another
 * family's through hs_checkpoint_family_config; "gpt2": n_embd,
 * n_head, n_layer, n_positions (or n_ctx; the two must agree), n_inner (null:
 * 4 n_embd), vocab_size, layer_norm_epsilon, activation_function,
 * scale_attn_weights, scale_attn_by_inverse_layer_idx computed (GPT2Config's
 * defaults when absent); every other field known (HF_FIELDS) and the refused
 * ones off. With st (the weights; may be NULL) tie_word_embeddings false
 * needs lm_head.weight. Does not run hs_config_validate. HS_ERR_CONFIG, one
 * line naming fname and the field. */
hs_status hs_checkpoint_hf_config_parse(const char *fname, const char *text, const hs_st_file *st,
                                        hs_config *c, hs_error *err);

/* What the loader does with a config.json field (hs_tl_field's kinds), or
 * -1 for one it does not know (which it refuses). */
int hs_checkpoint_hf_field(const char *name);

/* The kind of a field every Hugging Face family's config.json may carry
 * (PretrainedConfig's common and generation fields, model_type,
 * tie_word_embeddings, initializer_range), or -1. */
int hs_checkpoint_hf_common_field(const char *name);

/* config.json helpers shared by the Hugging Face layouts (fname names the
 * file in messages; HS_ERR_CONFIG, one line):
 *   hs_hf_int   an integer field (or its alias; both given must agree) in
 *               [lo, hi], def when neither is given;
 *   hs_hf_bool  true or false, def when absent;
 *   hs_hf_off   1 for a refused field's "off" values: null, false, {} or []. */
hs_status hs_hf_int(const char *fname, const cJSON *o, const char *key, const char *alias, int lo,
                    int hi, int def, int *out, hs_error *err);
hs_status hs_hf_bool(const char *fname, const cJSON *o, const char *key, int def, int *out,
                     hs_error *err);
int hs_hf_off(const cJSON *it);

/* ------------------------------------------------------------------------ */
/* The other Hugging Face families (model/checkpoint_family.c: config.json;  */
/* model/checkpoint_family_fill.c: the tensors)                              */
/*
 * The Hugging Face layout (hs_ckpt_layout_hf) reads config.json and
 * dispatches on its model_type: "gpt2" is checkpoint_hf.c's own; gpt_neo,
 * gpt_neox, llama, qwen2 and mistral are each a mapping of the family's
 * modeling_*.py state dict onto the one parameter table and of its config
 * class's fields onto hs_config (DESIGN.md "Checkpoint", the layout table).
 */
typedef enum {
    HS_HF_GPT2 = 0,
    HS_HF_GPT_NEO,
    HS_HF_GPT_NEOX,
    HS_HF_LLAMA,
    HS_HF_QWEN2,
    HS_HF_MISTRAL,
    HS_HF_N_FAMILIES
} hs_hf_family;
#define HS_HF_FAMILIES "gpt2, gpt_neo, gpt_neox, llama, qwen2 and mistral"

/* What the tensor mapping needs from config.json beyond hs_config. */
typedef struct {
    hs_hf_family family;
    int qkv_bias;  /* the q/k/v projections have biases (NeoX attention_bias, Qwen2, Llama
                      attention_bias) */
    int o_bias;    /* the output projection has one (NeoX attention_bias, Llama attention_bias;
                      GPT-Neo always) */
    int tied;      /* tie_word_embeddings */
} hs_hf_info;

/* The family of a model_type string, -1 for one headscope does not read. */
int hs_hf_family_parse(const char *model_type);
/* The model_type string of a family. */
const char *hs_hf_family_name(hs_hf_family f);

/* config.json (o, an object whose model_type is info->family's, not GPT-2)
 * into *c and the rest of *info: every field of the family's config class
 * computed as its modeling file uses it, inert, or refused unless off
 * (hs_checkpoint_family_field); any other field refused naming it.
 * Defaults are the config class's. Does not run hs_config_validate.
 * HS_ERR_CONFIG, one line naming fname and the field: an unknown field,
 * a bad value, num_key_value_heads not dividing num_attention_heads, an odd
 * rotary dim, an unknown or unsupported rope_scaling type, GPT-Neo's
 * attention_types not covering num_layers. */
hs_status hs_checkpoint_family_config(const char *fname, const cJSON *o, const hs_st_file *st,
                                      hs_config *c, hs_hf_info *info, hs_error *err);
/* What the loader does with field name of family f's config.json
 * (hs_tl_field's kinds, the common fields included), or -1. */
int hs_checkpoint_family_field(hs_hf_family f, const char *name);

/* 1 when st holds a family's tensor names (embed_in, embed_tokens, GPT-Neo's
 * attn.attention.q_proj). */
int hs_checkpoint_family_recognises(const hs_st_file *st);
/* 1 for a family's buffers: GPT-Neo's h.{l}.attn.attention.bias and
 * masked_bias, GPT-NeoX's layers.{l}.attention.bias, masked_bias and
 * rotary_emb.inv_freq, Llama-style layers.{l}.self_attn.rotary_emb.inv_freq. */
int hs_checkpoint_family_is_buffer(const char *name);
/* The layout's fill (hs_ckpt_layout) for a family other than GPT-2. */
hs_status hs_checkpoint_family_fill(const hs_ckpt_src *src, const hs_hf_info *info, hs_model *m,
                                    unsigned char *filled, const hs_notes *notes, hs_error *err);

#endif /* HS_CHECKPOINT_INTERNAL_H */
