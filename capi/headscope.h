/*
 * capi/headscope.h -- the library's entry points for a foreign caller (the
 * Python package in python/, through ctypes on the shared libheadscope.so
 * the build makes): a loaded model as one opaque handle, plain C types only
 * (no struct of the library crosses the boundary but hs_error), every call
 * returning an hs_status with one line in hs_error. Nothing here is a second
 * implementation: each function runs the library's own (hs_load,
 * hs_tok_encode, hs_run_with_cache with hs_hooks, hs_patch_run_by,
 * hs_ablate_run, hs_dla_set_run and their *_json).
 *
 * Owns: the handle (a loaded checkpoint, its worker pool, a lock) and the
 * activation and cache handles runs use. May call: every module (it sits
 * above tasks/ and experiments/, beside cli/). Never prints, never exits.
 *
 * Thread safety: calls on one model handle are serialised by the handle's
 * lock; a call made while another holds it (e.g. a hook running the model it
 * hooks) fails with HS_ERR_INPUT "the model is busy ..." instead of waiting.
 *
 * Ownership: hs_api_load / hs_api_free; hs_api_acts_create /
 * hs_api_acts_free; a run's hs_api_cache is freed with hs_api_cache_free;
 * strings and arrays returned through char ** / int ** are malloc'd and
 * freed with hs_api_mem_free. Every *_free accepts NULL.
 */
#ifndef HS_CAPI_HEADSCOPE_H
#define HS_CAPI_HEADSCOPE_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "model/model.h"
#include "probe/probe.h"
#include "tokenize/tokenize.h"

typedef struct hs_api_model hs_api_model;

/* Frees a string or array this API returned (NULL ok). */
void hs_api_mem_free(void *p);

/* sizeof(hs_error), so a foreign caller can check its copy of the layout
 * (an int status, then char msg[1024]). */
size_t hs_api_error_size(void);

/*
 * Loads the checkpoint at path as every CLI command does (hs_load with
 * HS_NEED_VOCAB: a headscope or TransformerLens .safetensors with its word
 * list, or a Hugging Face GPT-2 folder with its tokenizer files), the weights
 * processed as process says (NULL or "raw": as stored; "tl":
 * TransformerLens' default processing, hs_model_process_tl), with a pool of
 * `threads` workers (0 = every CPU; the values do not depend on it).
 * The loader's notes (F16 converted, the magnitude warning, ...) are kept,
 * one a line, for hs_api_notes. Errors: hs_load's; HS_ERR_IO "cannot open P:
 * No such file or directory" for a missing path; HS_ERR_INPUT for process
 * other than raw / tl or threads < 0. *out NULL on failure.
 */
hs_status hs_api_load(const char *path, const char *process, int threads, hs_api_model **out,
                      hs_error *err);
void hs_api_free(hs_api_model *h);

/* The notes of the load, one a line ("" when none). Owned by h. */
const char *hs_api_notes(const hs_api_model *h);

/* The model's config as JSON text, owned by h: {"tl": TransformerLens'
 * HookedTransformerConfig fields (hs_config_to_json HS_CONFIG_JSON_TL),
 * "all": every field by headscope's name (HS_CONFIG_JSON_ALL), "weights":
 * "raw" | "tl-processed"}. NULL only when memory ran out at load. */
const char *hs_api_config_json(const hs_api_model *h);

/* The model's hook points in forward order: how many (hs_hook_points), and
 * point i's name (NULL for i out of range; owned by h). */
int hs_api_n_hook_points(const hs_api_model *h);
const char *hs_api_hook_point(const hs_api_model *h, int i);

/* The tensor table (TransformerLens names, "blocks.0.attn.W_Q"): how many,
 * entry i's name (NULL out of range), and by name its shape (ndim 1..3,
 * shape[3]); HS_ERR_INPUT naming an unknown tensor. */
int hs_api_n_tensors(const hs_api_model *h);
const char *hs_api_tensor_name(const hs_api_model *h, int i);
hs_status hs_api_tensor_shape(const hs_api_model *h, const char *name, int *ndim, int64_t *shape,
                              hs_error *err);
/* Copies tensor `name` into out (numel floats, row-major in its
 * TransformerLens shape) whichever layout holds it (a Hugging Face model's
 * W_Q/W_K/W_V read from the packed W_QKV per head, W_U from W_U_T).
 * HS_ERR_INPUT for an unknown name or numel not the tensor's size. */
hs_status hs_api_tensor_copy(const hs_api_model *h, const char *name, float *out, size_t numel,
                             hs_error *err);

/*
 * The tokenizer (TransformerLens' to_tokens / to_str_tokens / to_string):
 * hs_api_encode encodes text with the BOS first when prepend_bos and the
 * tokenizer has one (GPT-2's 50256; a word vocabulary has none), limited to
 * the model's n_ctx; *ids (malloc'd, *n of them) are vocabulary ids; free
 * with hs_api_mem_free. Errors: hs_tok_encode's (empty, not UTF-8, too long,
 * an unknown word). hs_api_token_str: token id's exact string (owned by h),
 * NULL out of range. hs_api_decode: the text of n ids (malloc'd; free with
 * hs_api_mem_free); hs_tok_decode's errors. hs_api_bos: the BOS id or -1.
 */
hs_status hs_api_encode(hs_api_model *h, const char *text, int prepend_bos, int **ids, size_t *n,
                        hs_error *err);
const char *hs_api_token_str(const hs_api_model *h, int id);
hs_status hs_api_decode(hs_api_model *h, const int *ids, size_t n, char **text, hs_error *err);
int hs_api_bos(const hs_api_model *h);
/* h's tokenizer (owned by h), NULL for NULL. */
const hs_tokenizer *hs_api_tokenizer(const hs_api_model *h);
int hs_api_d_vocab(const hs_api_model *h);
/* h's config (owned by h), NULL for NULL. */
const hs_config *hs_api_config(const hs_api_model *h);

/* Activations for runs of up to B sequences of T tokens of h's model
 * (hs_acts_create, no gradients); a handle of its own so that a caller can
 * keep them alive while it holds views of what a hook saw. Errors of
 * hs_acts_create (HS_ERR_INPUT for T > n_ctx or B < 1). */
typedef struct hs_api_acts hs_api_acts;
hs_status hs_api_acts_create(const hs_api_model *h, int B, int T, hs_api_acts **out, hs_error *err);
void hs_api_acts_free(hs_api_acts *a);

/* A run's cache (hs_cache): entries in forward order, each a name, a batched
 * shape and float32 data owned by the cache until hs_api_cache_free. */
typedef struct hs_api_cache hs_api_cache;
int hs_api_cache_n(const hs_api_cache *c);
/* Entry i's name, ndim and shape (4 slots) and data; NULL / 0 for i out of range. */
const char *hs_api_cache_name(const hs_api_cache *c, int i);
int hs_api_cache_ndim(const hs_api_cache *c, int i);
const int64_t *hs_api_cache_shape(const hs_api_cache *c, int i);
float *hs_api_cache_data(const hs_api_cache *c, int i);
void hs_api_cache_free(hs_api_cache *c);

/*
 * TransformerLens' run_with_cache / run_with_hooks in one call: runs h's model
 * on tokens (b, t) (int64, ids in [0, d_vocab)) on acts (made for at least
 * b x t) with the hooks hook_patterns[0..n_hooks) (hs_name_match patterns),
 * every one calling fn with ctx = hook_ctx[i] (hs_hook_fn: it may edit data in
 * place, or return < 0 to abort the run), and keeps the points matching
 * filters[0..n_filters) (n_filters 0 = every point; "?pattern" may match
 * none) in *out (hs_run_with_cache; the values after the hooks). reuse (may
 * be NULL): an earlier run's cache nobody reads any more, whose buffers serve
 * this run's entries of the same size (hs_run_with_cache: a repeated run
 * faults no fresh page); it is consumed (it becomes *out, or is freed on
 * failure). Errors: HS_ERR_INPUT for b or t out of acts' range, an id out of
 * range, a pattern or filter matching no point (naming it), the model busy;
 * HS_ERR_CALLBACK when a hook aborted; HS_ERR_NOMEM. *out NULL on failure.
 */
hs_status hs_api_run(hs_api_model *h, hs_api_acts *acts, const int64_t *tokens, int b, int t,
                     const char *const *filters, int n_filters, const char *const *hook_patterns,
                     int n_hooks, hs_hook_fn fn, void *const *hook_ctx, hs_api_cache *reuse,
                     hs_api_cache **out, hs_error *err);

/*
 * An experiment as its CLI command runs it, on h's model, returning the JSON
 * text the command prints with --json (malloc'd in *json, hs_json_print;
 * free with hs_api_mem_free), "model" set to model_name:
 *   kind "patch":  hs_patch_run_by; opts: "acts" (comma-separated
 *                  hs_patch_act names, "" = every act the model produces),
 *                  "method" (exact, atp, both), "by" (head, head,position, both)
 *   kind "ablate": hs_ablate_run; opts: "method" (zero, mean, resample),
 *                  "ref" (a reference prompt set's JSONL text, or NULL)
 *   kind "dla":    hs_dla_set_run; opts: "by_position" ("1" or NULL)
 *   kind "lens":   hs_lens_run (prompts need no answer); no opts
 *   kind "heads":  hs_heads_run with the Winograd nouns (as the CLI); opts:
 *                  "metric" (mul, abs), "exclude_bos", "exclude_current" ("1")
 *   kind "discover": hs_discover_run (no folder); opts: "method" (exact,
 *                  acdc, eap, eap-ig), "metric", "ablation", "select" (topn,
 *                  greedy), "top", "threshold", "tau", "ig_steps"; the JSON is
 *                  {"report": hs_discover_json (discover --json, which has no
 *                  "model" or "config"), "graph": graph.json's text as
 *                  hs_graph_json_text writes it (EAP-IG's Graph.to_json)}
 *   kind "faithfulness": hs_faithfulness_run (no folder) of the circuit file
 *                  at opts' "graph" (a graph.json path); opts "metric",
 *                  "ablation", "select"; the JSON is hs_faith_report_json's
 * opt_keys / opt_vals: n_opts pairs (a value may be NULL = the default).
 * data: the prompt set as JSONL text (one {"prompt", "answer", ...} a line,
 * hs_prompts_parse; data_name stands for it in messages). Errors: the
 * prompt set's (hs_prompts_parse), the experiment's, HS_ERR_INPUT for an
 * unknown kind, option or option value (naming it), the model busy.
 */
hs_status hs_api_experiment(hs_api_model *h, const char *kind, const char *data, const char *data_name,
                            const char *model_name, const char *const *opt_keys,
                            const char *const *opt_vals, int n_opts, char **json, hs_error *err);

/*
 * Figures (capi/capi_figures.c), laid out by the viz module (the CLI's
 * figure code) and held as a handle: hs_api_figure_save writes one as PNG,
 * SVG or PDF by the path's extension (.png, .svg, .pdf), atomically, as many
 * times as asked; hs_api_figure_size gives its canvas in pixels and its dpi;
 * hs_api_figure_free frees it (NULL ok). Every maker takes width_in inches
 * (0 = the figure's default; viz's width promise: a width the labels do not
 * fit is HS_ERR_INPUT naming the width that does) and dpi (0 = 300), and
 * returns the figure in *out (NULL on failure). Labels are UTF-8; note
 * (bars and heatmap, may be NULL) is one line in dark red under the title,
 * e.g. why the numbers are not usable. Errors:
 * the viz module's (HS_ERR_INPUT for counts out of range, a label that is
 * not UTF-8, the width; HS_ERR_NUMERIC for a non-finite value; HS_ERR_IO
 * without a font), HS_ERR_INPUT for a path of another extension.
 *   attention: L = 0, H = 1: one head's pattern [T, T] = [dest, src]
 *     (hs_viz_attention_figure); L >= 1: the layers x heads grid of
 *     patterns [L, H, T, T] (hs_viz_grid_figure_labeled), labelled with
 *     tokens (T), titled title (may be NULL); its rows are layers
 *     first_layer .. first_layer + L - 1 ("L<first_layer>".., so one layer's
 *     heads [1, H, T, T] read "L5" when they are layer 5's), or unnamed with
 *     first_layer -1 (heads of no stated layer: no layer name is made up).
 *   bars: values [N] with N labels (hs_viz_bars_figure: DLA, ablation),
 *     xlabel the axis title (may be NULL); the axis fitted to the data;
 *     add_up nonzero when the bars are the terms of one sum (DLA): a chart
 *     too tall for a page sums the bars it leaves out in one "other n" bar,
 *     else (0: separate runs or scores) they are said "not shown".
 *   heatmap: m [R, C] row-major with R row and C column labels, axis titles
 *     xlabel / ylabel (may be NULL), value_label the colour bar's quantity
 *     (may be NULL); is_signed: diverging map over [-limit, limit]
 *     (hs_viz_signed_figure: patching, attributions), else sequential over
 *     [0, limit] (hs_viz_matrix_figure: detector scores); limit 0: the
 *     data's range ([-max|m|, max|m|], [0, max m]), values past a limit take
 *     the map's end.
 *   circuit: discover's circuit graph figure (hs_graph_figure) of graph.json
 *     text (EAP-IG's to_json, as hs_graph_json_text writes it) for h's
 *     model: the edges with in_graph true, width by |score|, colour by sign;
 *     over HS_VIZ_MAX_EDGES the strongest by |score|, as discover's figure
 *     (*n_drawn: the edges drawn). Errors also hs_graph_json_parse's (a graph
 *     of another model shape, an unknown node or edge).
 */
typedef struct hs_api_figure hs_api_figure;
hs_status hs_api_figure_attention(const float *patterns, int L, int H, int T, const char *const *tokens,
                                  int first_layer, const char *title, double width_in, double dpi, hs_api_figure **out,
                                  hs_error *err);
hs_status hs_api_figure_bars(const float *values, int N, const char *const *labels, const char *title,
                             const char *xlabel, const char *note, int add_up, double width_in, double dpi, hs_api_figure **out,
                             hs_error *err);
hs_status hs_api_figure_heatmap(const float *m, int R, int C, const char *const *row_labels,
                                const char *const *col_labels, const char *title, const char *xlabel,
                                const char *ylabel, int is_signed, double limit, const char *value_label,
                                const char *note, double width_in, double dpi, hs_api_figure **out, hs_error *err);
hs_status hs_api_figure_circuit(const hs_api_model *h, const char *graph_json, const char *title, double width_in,
                                double dpi, int *n_drawn, hs_api_figure **out, hs_error *err);
hs_status hs_api_figure_save(const hs_api_figure *fig, const char *path, hs_error *err);
void hs_api_figure_size(const hs_api_figure *fig, size_t *w, size_t *h, double *dpi);
void hs_api_figure_free(hs_api_figure *fig);

/* `headscope prompts ioi`: --n n --seed seed [--corrupt abc] [--template
 * template_id]` with h's tokenizer (hs_ioi_generate; template_id -1 = every
 * template of the commonest length): the set's JSONL text in *jsonl
 * (malloc'd; free with hs_api_mem_free). Errors: hs_ioi_generate's (a
 * tokenizer without GPT-2's names as one token each), HS_ERR_INPUT for n
 * outside [1, HS_IOI_MAX_N] or a template out of range. */
hs_status hs_api_ioi(hs_api_model *h, int n, uint64_t seed, int abc, int template_id, char **jsonl, hs_error *err);

#endif /* HS_CAPI_HEADSCOPE_H */
