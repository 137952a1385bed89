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
/* Checkpoint layouts: the seam of the loader                                */
/*
 * A checkpoint layout is one way a .safetensors file lays out a model: its
 * tensor names and shapes, the buffers it carries, where its config lives.
 * The loader (hs_checkpoint_load / hs_checkpoint_parse, model/checkpoint.c)
 * is the same for every layout:
 *   1. reads the file (hs_safetensors_parse_ex: structure, F32, finite
 *      values), skipping the tensors that any layout's is_buffer names;
 *   2. takes the first layout of its table (LAYOUTS in model/checkpoint.c)
 *      whose recognises() accepts the file, or the table's last one,
 *      headscope's own, when none does;
 *   3. refuses a "headscope_format" other than its own, then builds the
 *      config (config()), validates it (hs_config_validate) and holds it
 *      against the file's size;
 *   4. creates the model (hs_model_create: parameters zeroed, and the one
 *      parameter table m->tensors: each parameter's TransformerLens name,
 *      shape and place in m->param_mem) and has the layout fill it (fill());
 *   5. refuses the first table entry fill() did not mark ("missing tensor");
 *   6. checks the metadata "vocab", "task", "train" and adds the magnitude
 *      warning (hs_model_magnitude_warning).
 * The forward and the backward see only the parameter table: where a weight
 * came from, and in which shape, is the layout's business alone. A layout is
 * one file, model/checkpoint_<layout>.c, defining one hs_ckpt_layout (declared
 * below), and one entry of LAYOUTS, before headscope's own.
 *
 * What a layout provides (every member; all run on the caller's thread and
 * keep no state):
 *   name        e.g. "TransformerLens".
 *   recognises  1 when st, read with every layout's buffers skipped, is in
 *               this layout, judged from its tensor names and metadata alone
 *               (e.g. a "config" metadata entry, a tensor "wte.weight");
 *               cannot fail.
 *   is_buffer   1 for a tensor name the layout's files carry that holds no
 *               weights (TransformerLens' blocks.{l}.attn.mask and IGNORE).
 *               The reader checks such a tensor's structure, takes any dtype,
 *               does not decode it and counts it (*n_skipped). It runs before
 *               the layout is known, so a buffer name of one layout must not
 *               be a weight name of another.
 *   config      *cfg for the file, every field: from its metadata (st) or, for
 *               a layout that keeps it beside the weights (Hugging Face's
 *               config.json), from fname's folder (fname is the path
 *               hs_checkpoint_load was given; from memory, the caller's
 *               name); what the layout has no field for keeps
 *               hs_config_default(). Need not validate. Errors: HS_ERR_FORMAT
 *               (no config at all), HS_ERR_CONFIG (a field it cannot take),
 *               one line naming fname and the field.
 *   fill        copies st's tensors into m's parameters (m->param_mem at
 *               m->tensors[i].offset, m->tensors[i].numel floats, row-major
 *               in the table's TransformerLens shape: W_Q/W_K/W_V (H, D, dh),
 *               W_O (H, dh, D), W_in (D, M), W_out (M, D), W_E (V, D), W_U
 *               (D, V), ...), converting what the layout stores otherwise (a
 *               weight kept as [in, out] or [out, in], heads fused in one
 *               matrix, a matrix tied to another and read twice), and sets
 *               filled[i] = 1 (filled: m->n_tensors zeros) for each entry it
 *               wrote; it may allocate and fill the optimizer state
 *               (hs_model_alloc_train). st stays the loader's, and so does m,
 *               on failure too (the loader destroys it). Errors:
 *               HS_ERR_FORMAT, one line naming fname and the tensor (an
 *               unknown name; a shape: hs_ckpt_check_shape); HS_ERR_NOMEM.
 */
typedef struct {
    const char *name;
    int (*recognises)(const hs_st_file *st);
    int (*is_buffer)(const char *name);
    hs_status (*config)(const char *fname, const hs_st_file *st, hs_config *cfg, hs_error *err);
    hs_status (*fill)(const char *fname, const hs_st_file *st, hs_model *m,
                      unsigned char *filled, hs_error *err);
} hs_ckpt_layout;

/* HS_OK when a file tensor's shape (ndim dims) is t's, else HS_ERR_FORMAT
 * "<fname>: tensor <t->name> has shape [..], config expects [..]". For a
 * layout's fill. */
hs_status hs_ckpt_check_shape(const char *fname, const hs_tensor_info *t, const int64_t *shape,
                              int ndim, hs_error *err);

/* The layouts, one file each. */
extern const hs_ckpt_layout hs_ckpt_layout_tl; /* model/checkpoint_tl.c */

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

#endif /* HS_CHECKPOINT_INTERNAL_H */
