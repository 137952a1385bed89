/*
 * model/checkpoint_internal.h -- private entry points of the safetensors and
 * checkpoint code (model/safetensors.c, model/checkpoint.c) for each other,
 * the tests and the fuzz targets (STYLE.md 14: tests reach internals through
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

/* Returns 1 if name is a TransformerLens attention buffer that carries no
 * weights: "blocks.<l>.attn.mask" or "blocks.<l>.attn.IGNORE". */
int hs_checkpoint_is_tl_buffer(const char *name);

/* hs_checkpoint_load from a memory buffer (fuzzing, tests); name is used in
 * messages. Same contract as hs_checkpoint_load. */
hs_status hs_checkpoint_parse(const unsigned char *buf, size_t n, const char *name,
                              hs_model **out, hs_meta *meta, int *n_skipped, hs_error *err);

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
