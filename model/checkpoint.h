/*
 * model/checkpoint.h -- the model module's files: safetensors I/O, headscope's
 * checkpoints, and the loaders of TransformerLens checkpoints and Hugging Face
 * folders (GPT-2, GPT-Neo, GPT-NeoX, Llama, Qwen2, Mistral) onto the one
 * parameter table (DESIGN.md "Checkpoint: safetensors").
 *
 * Part of the model module (model/checkpoint*.c, model/safetensors.c): split
 * out of model.h by size only, with no dependency of its own beyond it. Files
 * that read or write checkpoints include it; model.h does not.
 */
#ifndef HS_CHECKPOINT_H
#define HS_CHECKPOINT_H

#include "model/model.h"

/* ------------------------------------------------------------------------ */
/* Checkpoints: safetensors (DESIGN.md, "Checkpoint: safetensors")            */

/*
 * Generic safetensors I/O (format: 8-byte little-endian header length N, N
 * bytes of JSON header {"name": {"dtype","shape","data_offsets":[begin,end]},
 * "__metadata__": {string: string}}, then the raw little-endian data; offsets
 * are relative to the data start). headscope writes F32 only, offsets
 * contiguous from 0 in table order, header padded with spaces to 8 bytes.
 * Used by the checkpoint and by probe's activation cache.
 */
typedef struct {
    const char *name;
    int ndim;                 /* 0..4 */
    int64_t shape[4];
    const float *data;        /* numel floats (host order; written little-endian) */
} hs_st_tensor;

/* Writes tensors (+ metadata key/value string pairs, n_meta of them) atomically. */
hs_status hs_safetensors_write(const char *path, const hs_st_tensor *tensors, int n,
                               const char *const *meta_keys, const char *const *meta_vals,
                               int n_meta, hs_error *err);

/* A parsed file: names and shapes point into the struct (owned), data are
 * F32 copies in host order. Free with hs_st_file_free. */
typedef struct {
    int n;
    char **names;             /* (n) */
    int *ndim;                /* (n) */
    int64_t (*shape)[4];      /* (n) */
    float **data;             /* (n) each numel floats */
    size_t *numel;            /* (n) */
    int n_meta;
    char **meta_keys, **meta_vals;
} hs_st_file;

/* Reads and validates a safetensors file: header length vs file size (and an
 * absurd-size cap of 100 MB), JSON well-formed and an object, every entry has
 * dtype F32 (others: HS_ERR_FORMAT naming the tensor and dtype), a shape, and
 * data_offsets within the data section, ordered, not overlapping, leaving no
 * holes, covering the data exactly (no trailing garbage); numel*4 matches the
 * byte length; values finite. Each failure has its own message. */
hs_status hs_safetensors_read(const char *path, hs_st_file *out, hs_error *err);
/* Same, from a memory buffer (fuzzing); name is used in messages. */
hs_status hs_safetensors_parse(const unsigned char *buf, size_t n, const char *name,
                               hs_st_file *out, hs_error *err);
void hs_st_file_free(hs_st_file *f);
/* Index of a tensor name in f, or -1. Metadata value by key, or NULL. */
int hs_st_find(const hs_st_file *f, const char *name);
const char *hs_st_meta(const hs_st_file *f, const char *key);

/* Metadata strings carried beside the weights: JSON texts owned by the caller
 * (write) or by the struct (read; free with hs_meta_free). Any may be NULL. */
typedef struct {
    char *vocab;          /* JSON list of strings */
    char *task;           /* JSON object */
    char *train;          /* JSON object */
    char *warning;        /* read only: hs_model_magnitude_warning's line for the
                           * loaded weights, or NULL when they look trainable */
} hs_meta;

void hs_meta_free(hs_meta *meta);

/* Weights whose magnitude no training produces: AdamW moves a weight by
 * about lr (1e-3) per step, so headscope's budgets keep every weight within
 * ~10 of its N(0,1) / U(+-1/sqrt(fan_in)) init, and trained TransformerLens
 * models stay within ~1e3. A finite |w| above HS_WEIGHT_ABSURD still loads
 * (it is a valid file) but warns: its logits saturate the softmax. */
#define HS_WEIGHT_ABSURD 1e4f

/* *warning = one line naming the first tensor holding a finite value with
 * |w| > HS_WEIGHT_ABSURD, its largest |w|, and how many other tensors do
 * ("unembed.b_U holds |w| up to 1e+30 (and 1 more tensor); training never
 * produces |w| > 1e+04: predictions from these weights mean nothing"),
 * malloc'd (caller frees); NULL when there is none. HS_ERR_NOMEM. */
hs_status hs_model_magnitude_warning(const hs_model *m, char **warning, hs_error *err);

/* Writes m's parameters and config (+ meta) as one .safetensors file,
 * atomically (temp file, fsync, rename). */
hs_status hs_checkpoint_save(const hs_model *m, const hs_meta *meta, const char *path,
                             hs_error *err);

/* Same, and with with_optimizer != 0 (and m trained: m_mem allocated) also
 * the AdamW state, so `train --resume` continues bit-identically: the moments
 * as tensors "optimizer.m.<name>" and "optimizer.v.<name>" (same shapes as
 * <name>) and metadata "optimizer" = {"adam_t": steps taken}. TransformerLens'
 * load_state_dict(strict=False) ignores these names. */
#define HS_OPT_M_PREFIX "optimizer.m."
#define HS_OPT_V_PREFIX "optimizer.v."
hs_status hs_checkpoint_save_ex(const hs_model *m, const hs_meta *meta, int with_optimizer,
                                const char *path, hs_error *err);

/* Loads a checkpoint written by headscope or by another tool with the same
 * names and config keys. Validates everything DESIGN.md lists; skips
 * TransformerLens buffers (blocks.l.attn.mask / IGNORE) and reports how many
 * in *n_skipped (may be NULL). Optimizer state saved by hs_checkpoint_save_ex
 * is loaded into m_mem / v_mem / adam_t (gradients allocated, zeroed);
 * without it those stay NULL / 0. *out NULL on failure. meta may be NULL; when
 * given, meta->warning says whether the weights are absurd
 * (hs_model_magnitude_warning): the caller shows it, once. */
hs_status hs_checkpoint_load(const char *path, hs_model **out, hs_meta *meta,
                             int *n_skipped, hs_error *err);

/* hs_checkpoint_load that also says its notes (HS_NOTE_CMD; notes may be
 * NULL): "note: N tensor(s) stored as F16 converted to float32 on loading
 * ..." and which file was read when model.safetensors and an index sit side
 * by side. The buffers skipped (TransformerLens' blocks.*.attn.mask,
 * IGNORE; Hugging Face's h.*.attn.bias, each checked to be the causal mask,
 * and masked_bias) are counted in *n_skipped, not noted. path may also be a
 * Hugging Face GPT-2 folder (config.json beside model.safetensors, or a
 * model.safetensors.index.json and its shards; model/checkpoint_hf.c, whose
 * notes say which buffers were not the causal mask). The weights are read
 * once, in bounded chunks, straight into the parameter table (no copy of the
 * file in memory), F32, F16 or BF16 converted to float32, every value checked
 * finite. Errors as hs_checkpoint_load, and HS_ERR_IO for a folder with no
 * weights file or a shard that cannot be read. */
hs_status hs_checkpoint_load_notes(const char *path, const hs_notes *notes, hs_model **out,
                                   hs_meta *meta, int *n_skipped, hs_error *err);
/* hs_checkpoint_load_notes with a pool (NULL: none; not from inside one of
 * its jobs) over whose workers each large F32 tensor used in place from the
 * mapped file is scanned for non-finite values (its pages mapped in as the
 * scan reads them), in parts (checkpoint_src.c): GPT-2 small's 500 MB at 2 workers in
 * about half the wall time. The same model, notes and errors (a non-finite
 * value: the first one's index, as one pass finds it). */
hs_status hs_checkpoint_load_pool(const char *path, const hs_notes *notes, hs_pool *pool,
                                  hs_model **out, hs_meta *meta, int *n_skipped, hs_error *err);

#endif /* HS_CHECKPOINT_H */
