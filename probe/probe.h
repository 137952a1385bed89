/*
 * probe/probe.h -- headscope's probe: hook registration, activation caching,
 * interventions (ablation, activation and path patching) and circuit maths
 * (residual decomposition, direct logit attribution, attention statistics,
 * virtual weights, composition and copying scores, head detectors).
 *
 * Owns: everything between a model's forward pass and an analysis' numbers.
 * May call: model/ (hs_forward and its observer, hs_params, the safetensors
 * writer) and common/; OpenBLAS (cblas, and its LAPACK's dgeev). Task-agnostic: it knows
 * nothing of Winograd or of any task; a task builds its detectors from the
 * caller-supplied target pattern of hs_detect_heads.
 * Formulas and sources: docs/CIRCUITS.md, cited below as "C<n>" for
 * its section n; [TL] TransformerLens, [FW] Elhage et al. 2021, [IH] Olsson et
 * al. 2022, [AR] ARENA (CIRCUITS.md 10).
 *
 * Dims legend (as model.h): B batch, T positions, D d_model, H n_heads,
 * dh d_head, M d_mlp, V d_vocab, L n_layers. Row vectors (x @ W), TL shapes.
 * Layers, heads and positions count from 0. Attention patterns are
 * [head, dest(query), src(key)]; batched hook tensors are those documented at
 * hs_observer in model.h (e.g. hook_z [B,T,H,dh], hook_pattern [B,H,T,T]).
 *
 * Errors: functions return hs_status and fill a caller-owned hs_error (may be
 * NULL); HS_ERR_INPUT for bad indices/names/shapes, HS_ERR_NOMEM, HS_ERR_IO,
 * HS_ERR_CALLBACK when a hook aborted a forward. Nothing prints or exits.
 * Ownership: *_create and *_destroy for heap handles; *_free for caller-owned
 * structs filled by this module (all accept NULL / a zeroed struct).
 *
 * NORM FOLDING (virtual weights, C1-C4). The stored weights are the raw
 * TransformerLens-named parameters; nothing in the model is modified. The
 * virtual-weight functions take an hs_fold argument:
 *   HS_FOLD_NONE: the stored matrices as they are (TL without fold_ln).
 *   HS_FOLD_LN  : the reading weights that sit behind a norm are replaced by
 *     what the residual stream is really multiplied by, up to the per-token
 *     scale 1/s (which cancels from every ratio computed here):
 *       W_Q, W_K, W_V of layer l  ->  P diag(ln1.w) W     (LayerNorm)
 *                                      diag(ln1.w) W       (RMSNorm)
 *                                      W                   (ln1 off / norm none)
 *       W_U                        ->  P diag(ln_final.w) W_U (LN), diag(w) W_U (RMS),
 *                                      W_U (no final norm)
 *     with P = I - 1 1^T / D the centring projector (LN output is mean-zero;
 *     TL fold_ln + center_weights, PR #116). Row form: LN(x) W = (x P / s)
 *     diag(w) W + b W, so P diag(w) W is the reading matrix. The biases (b, b_Q,
 *     ...) are not part of any virtual weight (C2: "these ignore biases").
 *     W_O, W_E, W_pos are writing/embedding weights and are never changed; the
 *     embed norm (embed_norm on) is not applied to W_E in the full circuits.
 *   Composition scores and copying scores in this module are meant to be
 *   used with HS_FOLD_LN (TL's scores are correct only for folded+centred
 *   weights, C3 "LN caveat").
 */
#ifndef HS_PROBE_H
#define HS_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "model/model.h"
#include "model/checkpoint.h"

/* ------------------------------------------------------------------------ */
/* 1. Hooks                                                                  */

/*
 * Name patterns. A pattern is matched against a whole hook name:
 *   - any character but '*' matches itself;
 *   - '*'  matches any run (possibly empty) of characters WITHOUT a '.', i.e.
 *          within one dotted segment: "blocks.*.attn.hook_pattern" matches
 *          every layer's pattern; "blocks.1.attn.hook_*" matches hook_q, hook_k,
 *          ..., hook_result of layer 1;
 *   - '**' matches any run of characters, dots included: "**hook_z" matches
 *          every layer's hook_z, "**" matches every point.
 * Returns 1 on a match, 0 otherwise.
 */
int hs_name_match(const char *pattern, const char *name);

/*
 * A hook: the model's observer callback (model.h, hs_observer): it sees
 * (name, shape, ndim, data) of a batched tensor and may change data in
 * place; returns < 0 to abort the forward (hs_run_with_hooks then returns
 * HS_ERR_CALLBACK), else 0 or 1. Unlike a bare observer, a hook's in-place
 * edit counts whatever it returns, as in TransformerLens (where a hook that
 * edits its tensor and returns None keeps the edit): the registry keeps a
 * copy of each hooked point's value and compares after its hooks ran, so
 * returning 1 only spares the comparison ("1 = changed" as hs_observer says
 * still holds).
 */
typedef hs_observer_fn hs_hook_fn;

/* Opaque registry of hooks. Hooks run in registration order at each point
 * (each sees the value the ones before it left); a point "changed" if any of
 * them returned 1 or its value after them differs, bit for bit, from its
 * value before. */
typedef struct hs_hooks hs_hooks;

hs_status hs_hooks_create(hs_hooks **out, hs_error *err);
/* Frees the registry and every owned context (see hs_hooks_add_owned). NULL ok. */
void hs_hooks_destroy(hs_hooks *hk);
/* Registers fn on pattern; ctx is borrowed (must outlive the runs). The
 * pattern string is copied (max 127 chars, else HS_ERR_INPUT). */
hs_status hs_hooks_add(hs_hooks *hk, const char *pattern, hs_hook_fn fn, void *ctx,
                       hs_error *err);
/* Same, but the registry owns ctx: free_ctx(ctx) is called by clear/destroy
 * (and on failure of this call). */
hs_status hs_hooks_add_owned(hs_hooks *hk, const char *pattern, hs_hook_fn fn, void *ctx,
                             void (*free_ctx)(void *), hs_error *err);
/* Why a hook aborted a run: fills err with one line (e.g. "patch: 'X' is
 * [1,5,4,16] in this run but [1,3,4,16] in the clean cache") and returns 1,
 * or returns 0 to keep the generic message. Called once, after the run. */
typedef int (*hs_hook_explain_fn)(void *ctx, const char *name, const int64_t *shape, int ndim,
                                  hs_error *err);
/* hs_hooks_add_owned with an explanation for its aborts (explain may be NULL). */
hs_status hs_hooks_add_explained(hs_hooks *hk, const char *pattern, hs_hook_fn fn, void *ctx,
                                 void (*free_ctx)(void *), hs_hook_explain_fn explain,
                                 hs_error *err);
/* hs_hooks_add_explained for a hook whose return value is the truth: it
 * returns 1 whenever it may have written into the point and 0 only when it
 * left every float as it was. The registry then keeps no copy of the point to
 * compare after its hooks (when every hook matching it is trusted): for the
 * library's own interventions; a caller's hook, which may edit in place and
 * return 0 as TransformerLens allows, is added untrusted. */
hs_status hs_hooks_add_trusted(hs_hooks *hk, const char *pattern, hs_hook_fn fn, void *ctx,
                               void (*free_ctx)(void *), hs_hook_explain_fn explain, hs_error *err);
/* Removes every hook (freeing owned contexts). */
void hs_hooks_clear(hs_hooks *hk);
/* Number of registered hooks (0 for NULL). */
int hs_hooks_count(const hs_hooks *hk);

/* How many hook points of a model of cfg the pattern matches (a point matches
 * by its name or its alias, hs_hook_points); -1 when out of memory. */
int hs_hook_spec_matches(const hs_config *cfg, const char *pattern);
/* counts (hs_hooks_count(hk)): how many of m's hook points each registered
 * hook's pattern matches, in registration order. */
hs_status hs_hooks_match_counts(const hs_hooks *hk, const hs_model *m, int *counts,
                                hs_error *err);

/*
 * Runs hs_forward(m, acts, tokens (b,t)) with the registered hooks. With hk
 * NULL or empty the model gets observer = NULL: the pass costs what a plain
 * forward costs. Otherwise the observer's wants() asks "does any pattern match
 * this name?", so points nobody hooks (e.g. per-head hook_result) are not
 * materialised. Logits end in acts->logits (b,t,V).
 * A hook whose pattern matches no hook point of m (a misspelt name, or one
 * this config does not produce, e.g. blocks.0.mlp.hook_pre with d_mlp 0) is
 * HS_ERR_INPUT naming the pattern, before anything runs. A hook that aborts
 * gives HS_ERR_CALLBACK with its explanation (hs_hooks_add_explained) when it
 * has one.
 */
hs_status hs_run_with_hooks(const hs_model *m, hs_acts *acts, const int *tokens, int b, int t,
                            const hs_hooks *hk, hs_error *err);

/*
 * The layers layer..L-1 of m (and its final norm and unembedding) as a model
 * of L - layer layers, for hs_run_tail_with_hooks: a shallow copy whose
 * parameters point into m's (m must outlive it; free it with free()).
 * layer in [1, L-1]; HS_ERR_INPUT otherwise, and for a model with an
 * embedding norm (cfg.embed_norm: the tail's input would be normalised again).
 */
hs_status hs_model_tail(const hs_model *m, int layer, hs_model **out, hs_error *err);

/*
 * m with grouped-query attention ungrouped, as TransformerLens runs it with
 * cfg.ungroup_grouped_query_attention (GroupedQueryAttention: W_K, W_V, b_K,
 * b_V repeat_interleave'd over the head axis, so hook_k_input, hook_v_input,
 * hook_k and hook_v have n_heads heads): a shallow copy of m whose config
 * has n_key_value_heads 0 and whose W_K, W_V, b_K, b_V are new (H, D, dh) /
 * (H, dh) tables, query head h's being key/value head hs_kv_head(&m->cfg, h)'s
 * (transformers' repeat_kv); every other parameter points into m's (m must
 * outlive it; free it with free()). Each query head then reads its own copy
 * of the key and value inputs, so an edit of hook_k_input[:, :, h] changes
 * only head h's key (what MIB's and EAP-IG's per-head <k> and <v> receivers
 * mean). Its logits are m's up to float32 rounding (the key and value
 * products are made per query head). It has no tensor table (n_tensors 0):
 * for running, not for saving or hs_model_tensor_data. Memory: L H D d_head
 * floats for each of W_K and W_V, beside m's. HS_ERR_INPUT for a model
 * without grouping, HS_ERR_NOMEM.
 */
hs_status hs_model_ungrouped(const hs_model *m, hs_model **out, hs_error *err);

/*
 * hs_run_with_hooks(m, ...) from blocks.{layer} on, without running the
 * layers before it: resid_pre (b, t, D) is the residual stream entering
 * blocks.{layer}, e.g. rows of a cache's blocks.{layer}.hook_resid_pre from a
 * run of the same tokens. tail = hs_model_tail(m, layer). Hooks see the
 * points of blocks.{layer} onward and the final ones under m's names; a hook
 * on an earlier point is never called. Logits end in acts->logits (b,t,V);
 * acts' blocks 0..L-layer-1 hold blocks layer..L-1 (the forward's buffers,
 * not by name). When resid_pre is what a run of tokens with the same hooks
 * computes there (no hook changes anything before blocks.{layer}) the logits
 * and every point are bit-identical to hs_run_with_hooks': the same kernels
 * run on the same inputs (the tail's embedding is replaced by resid_pre and
 * its position embedding by -0.0, which adds exactly nothing). tokens (b, t)
 * must be valid ids (they are looked up, then replaced). layer 0 runs
 * hs_run_with_hooks (tail and resid_pre unused). Errors as hs_run_with_hooks.
 */
hs_status hs_run_tail_with_hooks(const hs_model *m, const hs_model *tail, int layer, hs_acts *acts,
                                 const float *resid_pre, const int *tokens, int b, int t,
                                 const hs_hooks *hk, hs_error *err);

/* ------------------------------------------------------------------------ */
/* 2. Activation cache                                                       */

typedef struct {
    char name[64];      /* hook name, e.g. "blocks.0.attn.hook_z" */
    int ndim;           /* 1..4 */
    int64_t shape[4];   /* batched shape as the forward reported it */
    size_t numel;
    float *data;        /* owned copy (numel floats) */
} hs_cache_entry;

/* A cache: entries in forward order. Caller-owned struct; zero it (or
 * hs_cache_init) before use, hs_cache_free after. A cache either owns its
 * entries' data (borrowed = 0: hs_run_with_cache, hs_engine_cache) or is a
 * view of rows of another cache (borrowed = 1: hs_cache_view_rows), whose
 * data belongs to that cache: hs_cache_free on a view frees only its entry
 * table, so freeing a view (or both) can never free the data twice; the
 * viewed cache must outlive its views. */
typedef struct {
    int n, cap;
    hs_cache_entry *e;
    int borrowed;       /* 1: a view; entries' data belong to another cache */
    float *mem;         /* NULL, or one hs_floats_alloc block holding every entry's
                         * data (hs_engine_cache), freed whole by hs_cache_free */
} hs_cache;

void hs_cache_init(hs_cache *c);
void hs_cache_free(hs_cache *c);

/*
 * Runs the model on tokens (b,t) keeping every point whose name matches one
 * of filters[0..n_filters) (patterns as hs_name_match; filters NULL or
 * n_filters 0 = every point). hooks (may be NULL) are interventions that run
 * first at each point: the cache holds the values after them (TL's
 * run_with_cache(fwd_hooks=...) order). Any previous contents of cache are
 * replaced: their buffers serve this run's entries of the same size, in
 * forward order (a repeated run faults no fresh page), the rest are freed.
 * Every point is copied (the forward reuses scratch buffers); an entry of 2
 * MiB or more is a huge-page-advised block.
 * Entries are kept under the canonical name ("logits"; hs_cache_get also
 * finds its alias "unembed.hook_out"). A filter or hook matching no point of
 * m is HS_ERR_INPUT naming it, as hs_run_with_hooks; a filter written
 * "?pattern" is optional (it may match none, e.g. "?blocks.*.hook_mlp_out"
 * for a caller that serves attention-only models too).
 */
hs_status hs_run_with_cache(const hs_model *m, hs_acts *acts, const int *tokens, int b, int t,
                            const char *const *filters, int n_filters, const hs_hooks *hooks,
                            hs_cache *cache, hs_error *err);

/* Entry by exact name (or the alias of one), or NULL. The pointer is valid
 * until the cache changes. */
const hs_cache_entry *hs_cache_get(const hs_cache *c, const char *name);
/* Same, with a printf-style name ("blocks.%d.attn.hook_z", l); NULL also when
 * memory for the name ran out. */
const hs_cache_entry *hs_cache_getf(const hs_cache *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Writes the whole cache as one safetensors file (tensor names = hook names,
 * F32, batched shapes; atomically, via hs_safetensors_write). meta: n_meta
 * string pairs for __metadata__ (may be 0). The writer stores finite values
 * only, so the causal mask's -inf in hook_attn_scores is written as -FLT_MAX
 * (-3.4028235e38; softmax gives the same 0 weight); +inf or NaN anywhere:
 * HS_ERR_NUMERIC. */
hs_status hs_cache_save(const hs_cache *c, const char *path, const char *const *meta_keys,
                        const char *const *meta_vals, int n_meta, hs_error *err);

/* ------------------------------------------------------------------------ */
/* 3. Interventions and metrics (C6)                                         */

typedef struct {
    int layer, head;
} hs_head;

/*
 * Zero ablation (C6): at blocks.l.attn.hook_z sets z[:, :, h, :] = 0 for every
 * listed head; the head's result z W_O vanishes, b_O stays. heads is copied.
 * HS_ERR_INPUT for a head outside the model.
 */
hs_status hs_hooks_add_zero_ablation(hs_hooks *hk, const hs_model *m, const hs_head *heads,
                                     int n_heads, hs_error *err);

/*
 * Mean ablation (C6, TL has no helper): z^{l,h}[b,p,:] <- mean over the
 * reference batch of z^{l,h}[., p, :] (pos_wise = 1: position-wise, for
 * templated prompts of equal length) or the mean over batch and positions
 * (pos_wise = 0). ref is a cache of the reference run holding
 * blocks.l.attn.hook_z for each listed layer; the means are computed here and
 * owned by the registry (ref may be freed afterwards). A run longer than the
 * reference (pos_wise) makes the hook abort (HS_ERR_CALLBACK).
 */
hs_status hs_hooks_add_mean_ablation(hs_hooks *hk, const hs_model *m, const hs_cache *ref,
                                     const hs_head *heads, int n_heads, int pos_wise,
                                     hs_error *err);

/*
 * Activation patching (C6, TL patching.py): every point matching pattern is
 * overwritten with the value of the same name in clean (borrowed: must
 * outlive the runs). A point with no clean entry or another shape aborts the
 * run (HS_ERR_CALLBACK). Run it on the corrupted tokens.
 */
hs_status hs_hooks_add_patch(hs_hooks *hk, const hs_cache *clean, const char *pattern,
                             hs_error *err);

/*
 * Patches one head at one position (TL get_act_patch_attn_head_out_by_pos):
 * blocks.l.attn.hook_z[:, pos, h, :] <- clean's, for every batch row
 * (pos = -1: all positions). clean is borrowed.
 */
hs_status hs_hooks_add_patch_head(hs_hooks *hk, const hs_cache *clean, hs_head head, int pos,
                                  hs_error *err);

/*
 * Path patching, direct sender -> receiver edge (C6; Wang et al. 2022; TL
 * direct_path_patching.py). On the corrupted run, the receiver head's
 * query/key/value input (inputs = HS_INPUT_Q|K|V bits) is recomputed from
 *     x = resid_pre^{l2}_corr + Delta,  Delta = (z_clean^A - z_corr^A) W_O^A
 * at every batch row and position, and only that head's slice of
 * hook_q/hook_k/hook_v is replaced; everything downstream of the receiver is
 * recomputed as usual. Approximation: every other path is frozen at its
 * corrupted value (other heads, MLPs and the sender's direct path to the
 * logits see no change; heads between l1 and l2 do not see Delta).
 * ln = HS_LN_RECOMPUTE applies the receiver's LN1 to x exactly (its own scale);
 * HS_LN_FROZEN is TL's linearisation with the corrupted run's scale s:
 *     n = n_corr + ((Delta - mean Delta) / s) * w   (LN; RMS: Delta/s * w;
 *     ln1 off: Delta). Needs clean: blocks.l1.attn.hook_z; corr:
 * blocks.l1.attn.hook_z, blocks.l2.hook_resid_pre (and blocks.l2.ln1.hook_scale
 * for FROZEN). Requires l2 > l1; q/k inputs need softmax attention. The
 * patched inputs are computed here (caches may be freed afterwards).
 */
enum { HS_INPUT_Q = 1, HS_INPUT_K = 2, HS_INPUT_V = 4 };
typedef enum { HS_LN_RECOMPUTE = 0, HS_LN_FROZEN = 1 } hs_ln_mode;
hs_status hs_hooks_add_path_patch(hs_hooks *hk, const hs_model *m, const hs_cache *clean,
                                  const hs_cache *corr, hs_head sender, hs_head receiver,
                                  int inputs, hs_ln_mode ln, hs_error *err);
/* The same edge from several senders at once (a role shared by heads, e.g.
 * every previous-token head): Delta = sum over senders A of (z_clean^A -
 * z_corr^A) W_O^A, each from its own layer's hook_z (all layers < the
 * receiver's). n_senders >= 1; hs_hooks_add_path_patch is n_senders = 1. */
hs_status hs_hooks_add_path_patch_senders(hs_hooks *hk, const hs_model *m, const hs_cache *clean,
                                          const hs_cache *corr, const hs_head *senders, int n_senders,
                                          hs_head receiver, int inputs, hs_ln_mode ln, hs_error *err);
/* The patched inputs those hooks write, for a caller that runs the
 * receiver's attention itself (circuit's path patching into the last layer,
 * hs_forward_suffix): in[w] (B*T, dh), malloc'd, the receiver head's
 * replacement for input w (HS_INPUT_Q = w 0, K 1, V 2) at every batch row and
 * position for each w in inputs, NULL for the others; the caller frees them.
 * The same computation as the hooks' (the same bits); the same errors. */
hs_status hs_path_patch_inputs(const hs_model *m, const hs_cache *clean, const hs_cache *corr,
                               const hs_head *senders, int n_senders, hs_head receiver, int inputs,
                               hs_ln_mode ln, float *in[3], hs_error *err);

/*
 * Logit difference (C6): mean over batch rows r of
 *     logits[r, pos, a[r]] - logits[r, pos, b[r]]
 * logits (nb, t, V); pos < 0 counts from the end (-1 = last, TL style).
 * Returns NAN on an index out of range.
 */
double hs_logit_diff(const float *logits, int nb, int t, int V, int pos, const int *a,
                     const int *b);

/* Normalised metric (C6, TL Main_Demo): (LD_patched - LD_corr) / (LD_clean -
 * LD_corr); 0 = no recovery, 1 = the clean result restored. NAN if clean ==
 * corr. */
double hs_patch_metric(double ld_patched, double ld_corr, double ld_clean);

/* ------------------------------------------------------------------------ */
/* 4. Residual decomposition and direct logit attribution (C5)               */

/*
 * The final residual stream at one (batch row, position), split into the
 * components that write it (ActivationCache decompose_resid +
 * stack_head_results):
 *   "embed"      hook_embed (with embed_norm on: blocks.0.hook_resid_pre, the
 *                output of ln_embed, as one component; no "pos_embed" then)
 *   "pos_embed"  hook_pos_embed (pos = learned)
 *   per layer l: "L{l}H{h}" for each head, z^{l,h} W_O^{l,h} without b_O
 *                (from the cached hook_z), "L{l}_b_O" (bias on),
 *                "L{l}_mlp_out" (d_mlp > 0; hook_mlp_out, includes b_out).
 * The components sum to blocks.{L-1}.hook_resid_post (exact up to rounding)
 * for a cache of an unmodified run holding hook_embed, hook_pos_embed (or
 * blocks.0.hook_resid_pre), blocks.l.attn.hook_z, blocks.l.hook_mlp_out.
 */
typedef struct {
    int n;               /* number of components */
    int d_model;
    char (*labels)[24];  /* (n) */
    float *resid;        /* (n, D) raw component vectors (before the final norm) */
} hs_resid_stack;

hs_status hs_resid_decompose(const hs_model *m, const hs_cache *cache, int batch, int pos,
                             hs_resid_stack *out, hs_error *err);
void hs_resid_stack_free(hs_resid_stack *s);

/*
 * Direct logit attribution (C5, TL apply_ln_to_stack + logit_attrs), with the
 * final norm's scale s = ln_final.hook_scale[batch,pos] frozen from the run:
 *   c' = (c - mean_d c) / s * w_f  (LN),  c / s * w_f (RMS),  c (no final norm)
 *   attr_c = c' . dir,  dir = W_U[:, a]            (tok_b < 0)
 *                       dir = W_U[:, a] - W_U[:, b] (logit difference)
 *   constant = b_f . dir (LN with bias; else 0): the final norm's bias term.
 * Then sum_c attr_c + constant = logit[a] - b_U[a] (resp. LD - (b_U[a] -
 * b_U[b])); `target` holds that right-hand side, read from the cached
 * "logits", so a caller can check the identity. Labels as hs_resid_decompose.
 */
typedef struct {
    int n;
    char (*labels)[24];  /* (n) */
    double *attr;        /* (n) in logit units */
    double constant;     /* b_f . dir */
    double target;       /* logit[a] - b_U[a] (- (logit[b] - b_U[b])) from cache "logits" */
} hs_dla;

hs_status hs_logit_attribution(const hs_model *m, const hs_cache *cache, int batch, int pos,
                               int tok_a, int tok_b, hs_dla *out, hs_error *err);
/*
 * Direct logit attribution of what each component writes at source position
 * src_pos, read at position pos (TL: decompose_resid / stack_head_results
 * with pos_slice = src_pos, then apply_ln_to_stack and logit_attrs with pos's
 * frozen ln_final.hook_scale and pos's answer/wrong direction): attr_c =
 * c(src_pos)' . dir with c' and dir exactly as hs_logit_attribution at pos,
 * only c taken at src_pos; constant and target are pos's. src_pos = pos is
 * hs_logit_attribution (bit for bit). A component at src_pos != pos does not
 * sum to pos's logits (it reaches them only through later attention): the
 * number says how its write at src_pos lines up with pos's unembedding
 * direction. Errors as hs_logit_attribution (the cache needs src_pos's
 * components, pos's scale and logits).
 */
hs_status hs_logit_attribution_at(const hs_model *m, const hs_cache *cache, int batch, int src_pos, int pos,
                                  int tok_a, int tok_b, hs_dla *out, hs_error *err);
void hs_dla_free(hs_dla *d);

/* The K most likely next tokens from one logits row (V): ids[0..K-1] by
 * falling logit (ties to the lower id), probs[k] their softmax probability
 * (computed in double over the whole row, max subtracted). K is clamped to
 * [1, V]; returns the K used. ids, probs hold K entries (probs may be NULL). */
int hs_top_k(const float *logits, int V, int K, int *ids, double *probs);

/* ------------------------------------------------------------------------ */
/* 5. Attention statistics (C8)                                              */

typedef struct {
    float entropy;      /* nats, H_i = -sum_j A ln A with 0 ln 0 = 0 */
    float eff_tokens;   /* exp(H_i), in [1, i+1] for a causal row */
    float max_weight;   /* max_j A[i,j] */
    int argmax;         /* the src position of max_weight (first on ties) */
} hs_attn_stat;

/* Statistics of one attention row A[0..n) (the caller passes n = i+1 for a
 * causal row). Weights <= 0 contribute nothing to the entropy. */
hs_attn_stat hs_attn_row_stats(const float *row, int n);

/* Statistics of every head and query of one pattern [H,T,T] (e.g. one batch
 * row of hook_pattern): out (H,T), row i uses src 0..i. */
void hs_attn_stats(const float *pattern, int H, int T, hs_attn_stat *out);

/* ------------------------------------------------------------------------ */
/* 6. Virtual weights, composition, copying (C2-C4)                          */

typedef enum { HS_FOLD_NONE = 0, HS_FOLD_LN = 1 } hs_fold;

/* The head's weights under fold (see NORM FOLDING above): W_Q, W_K, W_V
 * (D,dh) and W_O (dh,D); any output may be NULL. W_Q/W_K requested on a
 * uniform-attention model: HS_ERR_INPUT. */
hs_status hs_head_weights(const hs_model *m, hs_head h, hs_fold fold, float *W_Q, float *W_K,
                          float *W_V, float *W_O, hs_error *err);

/* W_QK = W_Q W_K^T (D,D), indexed [dest-side, src-side] (C2). */
hs_status hs_W_QK(const hs_model *m, hs_head h, hs_fold fold, float *out, hs_error *err);
/* W_OV = W_V W_O (D,D), TL orientation [read, write] (C2; paper's W_O W_V transposed). */
hs_status hs_W_OV(const hs_model *m, hs_head h, hs_fold fold, float *out, hs_error *err);

/* Which input of the later head a product / score is about. */
typedef enum { HS_COMP_Q = 0, HS_COMP_K = 1, HS_COMP_V = 2 } hs_comp;

/* W_O^{h1} W_X^{h2} (dh,dh), X = Q, K or V of h2 (C2-C3 "virtual weights"
 * from an earlier head's output to a later head's input). */
hs_status hs_head_product(const hs_model *m, hs_head h1, hs_head h2, hs_comp kind, hs_fold fold,
                          float *out, hs_error *err);
/* The D-sized forms (C3): Q: W_OV^1 W_QK^2, K: W_OV^1 (W_QK^2)^T, V: W_OV^1 W_OV^2. out (D,D). */
hs_status hs_OV_product(const hs_model *m, hs_head h1, hs_head h2, hs_comp kind, hs_fold fold,
                        float *out, hs_error *err);

/* C(L,R) = ||L R||_F / (||L||_F ||R||_F) (C3), dense, in double; L (n,k),
 * R (k,p). 0 if a norm is 0. */
double hs_comp_score_dense(const float *Lm, const float *Rm, int n, int k, int p);

/*
 * Composition scores for every head pair (C3, TL all_composition_scores):
 *   Q: C(W_OV^1, W_QK^2)  K: C(W_OV^1, (W_QK^2)^T)  V: C(W_OV^1, W_OV^2)
 * computed with the d_head-sized Gram form of C3 (equal to the dense value).
 * q, k, v are (L,H,L,H) indexed [l1,h1,l2,h2]; only l2 > l1 is reported:
 * entries with l2 <= l1 (within-layer and backwards pairs) are NAN, and Q/K
 * entries for a uniform-attention model are NAN. baseline (mean) and
 * baseline_std: the same score for n_draws random pairs of matrices of the
 * same shapes (each a product of two iid Gaussian (D,dh)/(dh,D) factors,
 * [AR] get_comp_score baseline with Gaussian instead of kaiming-uniform
 * factors; C is scale-invariant), seeded; ~1/sqrt(D) (C3). Report C - baseline.
 */
/* Random draws of the composition baseline: the one default of every command
 * that reports composition scores (circuit, weights: --comp-draws), so the
 * same cell has the same value in both. */
#define HS_COMP_DRAWS 300

typedef struct {
    int L, H;
    float *q, *k, *v;       /* (L,H,L,H) each, owned */
    double baseline;        /* mean over draws */
    double baseline_std;    /* standard deviation over draws */
    int n_draws;
} hs_comp_scores;

/* (probe/composition.c) pool: the workers the pairs and the draws run on
 * (NULL: the caller's thread; not from inside a job of the same pool), and
 * the progress they report (hs_pool_progress: "composition scores (sender,
 * layer)", one unit per sender and later layer, then "composition baseline
 * draws"); every value is the same bits for any pool. */
hs_status hs_composition_scores(const hs_model *m, hs_fold fold, int n_draws, uint64_t seed,
                                hs_pool *pool, hs_comp_scores *out, hs_error *err);
void hs_comp_scores_free(hs_comp_scores *s);
/* The random baseline alone: n_draws >= 2 draws of C(A B, C E), A, C (D,dh),
 * B, E (dh,D) iid N(0,1), from seed; the draws on pool (may be NULL), as
 * above. */
hs_status hs_comp_baseline(int d_model, int d_head, int n_draws, uint64_t seed, hs_pool *pool,
                           double *mean, double *std, hs_error *err);

/* Full QK circuit W_E W_QK W_E^T (V,V) [dest_tok, src_tok] and full OV circuit
 * W_E W_OV W_U (V,V) [src_tok, out_tok] (C2; W_U folded under HS_FOLD_LN). */
hs_status hs_full_QK(const hs_model *m, hs_head h, hs_fold fold, float *out, hs_error *err);
hs_status hs_full_OV(const hs_model *m, hs_head h, hs_fold fold, float *out, hs_error *err);
/* The same restricted to n tokens ids (each in [0, V), any order, n >= 1;
 * ids NULL: the whole vocabulary, n ignored): out (n,n) with
 * out[i][j] = full_QK[ids[i]][ids[j]] (query ids[i], key ids[j]) and
 * full_OV[ids[i]][ids[j]] (attended ids[i], logit ids[j]), TL's
 * FactoredMatrix indexed as full_QK[ids][:, ids], computed from the n rows
 * of W_E and n columns of W_U only: O(n * d_model * d_head + n^2 * d_head)
 * (plus the folded W_U for OV), never V x V. HS_ERR_INPUT for n < 1 or an
 * id outside [0, V); HS_ERR_NOMEM. */
hs_status hs_full_QK_tokens(const hs_model *m, hs_head h, hs_fold fold, const int *ids, int n,
                            float *out, hs_error *err);
hs_status hs_full_OV_tokens(const hs_model *m, hs_head h, hs_fold fold, const int *ids, int n,
                            float *out, hs_error *err);

/*
 * Eigenvalue copying score (C4; [FW] "Detecting Copying Behavior", TL
 * Main_Demo): (sum lambda).real / sum |lambda| over the eigenvalues of the
 * full OV circuit W_U W_OV W_E, computed from the (dh,dh) matrix
 * K = W_O W_U W_E W_V (same nonzero eigenvalues) with LAPACK's dgeev.
 * In [-1, 1]; 1 iff all nonzero eigenvalues are positive real. pos_frac (may
 * be NULL): #{Re lambda > 0} / #{lambda != 0} ([IH] "fraction positive").
 * 0 (and pos_frac 0) when every eigenvalue is 0. HS_ERR_NUMERIC if dgeev fails.
 */
hs_status hs_copying_score(const hs_model *m, hs_head h, hs_fold fold, double *score,
                           double *pos_frac, hs_error *err);
/* Every head's copying score, score[l*H + h] (and pos_frac, may be NULL),
 * hs_copying_score's numbers head by head to the last bits of K: the
 * operands shared by the heads are made once, in double, and K is computed
 * by whichever order of the product costs fewer multiply-adds (probe/
 * weights.c: with GPT-2's vocabulary, G = W_U W_E (D,D) once, then W_O G
 * W_V a head, 30 instead of 734 billion). score, pos_frac (L*H). G's row
 * blocks and the heads run on pool (NULL: the caller's thread; not from
 * inside a job of the same pool), each job on one worker with scratch of its
 * own, and the heads report "copying scores (heads)" through it
 * (hs_pool_progress); the same bits for any pool. */
hs_status hs_copying_scores(const hs_model *m, hs_fold fold, hs_pool *pool, double *score,
                            double *pos_frac, hs_error *err);
/* The same from a given square matrix K (n,n), row-major. */
hs_status hs_copying_score_matrix(const float *K, int n, double *score, double *pos_frac,
                                  hs_error *err);

/* ------------------------------------------------------------------------ */
/* 7. Head detectors (C7, TL head_detector.py)                              */

typedef enum {
    HS_DETECT_PREV_TOKEN = 0,   /* D[i,i-1] = 1 */
    HS_DETECT_DUPLICATE,        /* D[i,j] = 1 iff j < i and tok[j] = tok[i] */
    HS_DETECT_INDUCTION,        /* D[i,j] = 1 iff 1 <= j <= i and tok[j-1] = tok[i] */
    HS_DETECT_TARGET            /* a caller-supplied pattern */
} hs_detector;

/* Fills the detection pattern D (t,t) [dest, src] for tokens (t) (TL
 * get_*_detection_pattern). Not for HS_DETECT_TARGET. */
void hs_detection_pattern(hs_detector kind, const int *tokens, int t, float *D);

/* "mul" score of one head (TL): A' = A with column 0 zeroed (exclude_bos) and
 * the diagonal zeroed (exclude_current); score = sum(A' * D) / sum(A'),
 * 0 if sum(A') = 0. A, D (t,t). */
double hs_detector_score(const float *A, const float *D, int t, int exclude_bos,
                         int exclude_current);
/* "abs" score of one head (TL detect_head, error_measure="abs"): with the
 * same exclusions applied to |A - D|, score = 1 - round(sum|A - D| / t, 3)
 * (TL: 1 - round(mean(|A - D|) * t, 3); round half to even). D must be
 * lower-triangular, as A is. */
double hs_detector_score_abs(const float *A, const float *D, int t, int exclude_bos,
                             int exclude_current);

/*
 * Scores every head (out (L,H)) from a cache holding blocks.l.attn.hook_pattern
 * of a run on tokens (nb,t): the mean over batch rows of hs_detector_score.
 * kind HS_DETECT_TARGET uses target (t,t) for every row (else target is
 * ignored and may be NULL).
 */
hs_status hs_detect_heads(const hs_model *m, const hs_cache *cache, const int *tokens, int nb,
                          int t, hs_detector kind, const float *target, int exclude_bos,
                          int exclude_current, float *out, hs_error *err);

/* ------------------------------------------------------------------------ */
/* 8. The experiment engine (probe/engine.c)                                 */
/*
 * The batch runner under every experiment (circuit, patch, ablate, dla, lens,
 * heads): rows of t tokens run in chunks of at most HS_ENGINE_CHUNK
 * sentences, jobs run on a worker pool (common.h, hs_pool) with one set of
 * activations, hooks and chunk cache per worker, and sums across chunks are
 * made in chunk order, so every result is bit-identical for any thread count
 * and any chunking. Tasks configure it (which rows, which hooks, what to read
 * from the logits); they do not re-implement it.
 */

/* Rows per forward: at most HS_ENGINE_CHUNK. A short chunk of b real rows
 * runs on hs_engine_run_rows(b, t) rows (the padded rows repeat its last
 * row, and their values are dropped): the fewest rows, from b on, whose
 * products have an even row count of at least HS_ENGINE_MIN_TOKENS. Under
 * that bound OpenBLAS takes other kernels (its small-matrix kernel for M N K
 * below 1e6 on SkylakeX and Cooperlake; on Prescott, an odd row count's last
 * row), whose sums round differently; at or above it a row's bits do not
 * depend on how many rows share the call or where it lies in it (measured
 * on OpenBLAS 0.3.21 at GPT-2 and toy shapes; libxsmm's products are per
 * row by construction, common/gemm.c), so a prompt's numbers are the same
 * alone or in a set of any size, and a set of one prompt costs one prompt
 * (with t >= 16 even; else at most 16 / t + 1). (OpenBLAS' Haswell kernels
 * are not per row even at one shape: there the property does not hold, as it
 * did not with whole chunks.) e->whole_chunks = 1 keeps the older rule
 * (every forward on exactly HS_ENGINE_CHUNK rows) for callers whose hooks
 * assume it. With read_pos >= 0 the last block's products have one row per
 * prompt, so the rule is taken with t = 1 there (16 prompts at least). Hooks
 * of hs_engine_sweep see the padded batch; a caller whose
 * hooks copy from a cache of its own rows pads the set first
 * (hs_engine_pad_set, or hs_engine_pad_rows for whole chunks). */
#define HS_ENGINE_MIN_TOKENS 16
#define HS_ENGINE_CHUNK 32

/* One worker's resources. Owned by the engine. */
typedef struct {
    int index;        /* 0..n_workers-1: index per-worker scratch with it */
    hs_acts *acts;    /* capacity (HS_ENGINE_CHUNK, t); runs on one thread */
    hs_hooks *hk;     /* cleared before each chunk of hs_engine_sweep */
    hs_cache tmp;     /* one chunk's cache (scratch) */
    int *pad;         /* (HS_ENGINE_CHUNK, t) a short chunk's tokens, padded */
    float *rpad;      /* (HS_ENGINE_CHUNK, t, D) a short chunk's residuals, padded (on first use) */
    int read_pos;     /* -1 (hs_engine_init): this worker's sweeps use the engine's read_pos;
                       * p >= 0: they read position p alone (a job sets and resets it; its
                       * rows then follow the t = 1 rule, see HS_ENGINE_MIN_TOKENS) */
    hs_error err;     /* a job's error */
} hs_engine_worker;

typedef struct {
    const hs_model *m; /* borrowed */
    hs_pool *pool;     /* borrowed; NULL = the caller's thread */
    int t;             /* positions per row */
    int rows;          /* rows (sequences) each worker's activations hold: HS_ENGINE_CHUNK
                        * (hs_engine_init) or fewer (hs_engine_init_rows) */
    int n_workers;     /* hs_pool_threads(pool) */
    hs_engine_worker *w; /* (n_workers) */
    hs_model **tail;   /* (n_layers) hs_model_tail(m, l) for l >= 1 (read-only); NULL with an embedding norm */
    int read_pos;      /* -1 (hs_engine_init): sweeps compute every position's logits. p >= 0:
                        * a task whose sweeps read the logits at position p alone sets it, and
                        * sweeps compute the last block from its attention output on at p only
                        * (hs_acts.logit_pos; caches are whole) */
    int whole_chunks;  /* 0 (hs_engine_init): a short chunk runs on hs_engine_run_rows rows;
                        * 1: on HS_ENGINE_CHUNK rows (callers whose hooks assume whole chunks) */
    const char *progress; /* NULL (hs_engine_init); else hs_engine_for reports each job
                        * done through hs_pool_progress(pool, progress, done, n_jobs) */
} hs_engine;

/* Makes one worker per pool thread, each with activations for
 * HS_ENGINE_CHUNK rows of t positions. HS_ERR_INPUT when t is outside
 * [1, n_ctx]; HS_ERR_NOMEM. Free with hs_engine_free (also after a failure). */
hs_status hs_engine_init(hs_engine *e, const hs_model *m, hs_pool *pool, int t, hs_error *err);
/* hs_engine_init with activations for `rows` (1..HS_ENGINE_CHUNK) rows a
 * worker, for a task that knows no forward of its runs more (e.g. a set of
 * one prompt: hs_engine_padded(1, t) rows): a short run on a chunk's
 * activations touches every slot's first rows, and with huge pages their
 * faults zeroed ~240 MB at GPT-2 small, more than a one-prompt `lens`'s
 * products cost. A
 * forward on more rows fails (HS_ERR_INPUT, hs_forward); values do not
 * depend on the capacity. HS_ERR_INPUT for rows outside [1, HS_ENGINE_CHUNK]. */
hs_status hs_engine_init_rows(hs_engine *e, const hs_model *m, hs_pool *pool, int t, int rows,
                              hs_error *err);
void hs_engine_free(hs_engine *e);
/* Chunks of n rows: ceil(n / HS_ENGINE_CHUNK). */
int hs_engine_chunks(int n);
/* v (n, width) padded to *n_pad = hs_engine_chunks(n) * HS_ENGINE_CHUNK rows
 * by repeating row n-1 (n >= 1); malloc'd (caller frees), NULL on OOM. */
int *hs_engine_pad_rows(const int *v, int n, int width, int *n_pad);
/* The rows a forward of a short chunk of b real rows (1..HS_ENGINE_CHUNK) of
 * t positions runs on: the fewest from b on with rows x t even and at least
 * HS_ENGINE_MIN_TOKENS (at most HS_ENGINE_CHUNK). */
int hs_engine_run_rows(int b, int t);
/* A set of n rows of t positions as the engine runs it: whole chunks, then
 * the last one's hs_engine_run_rows. */
int hs_engine_padded(int n, int t);
/* v (n, width) padded to *n_pad = hs_engine_padded(n, t) rows by repeating
 * row n-1 (n >= 1); malloc'd (caller frees), NULL on OOM. */
int *hs_engine_pad_set(const int *v, int n, int width, int t, int *n_pad);
/* The rows chunk k of a set of n rows runs on, given n already padded
 * (hs_engine_pad_set, or hs_engine_pad_rows for whole chunks). */
int hs_engine_chunk_rows(int n, int k);

/* A job of hs_engine_for: j in [0, n_jobs) on worker w; errors go to w->err. */
typedef hs_status (*hs_engine_job)(hs_engine *e, hs_engine_worker *w, int j, void *ctx);
/* Runs jobs 0..n_jobs-1 on the workers (hs_pool_for); the error returned is
 * the lowest failed job's. */
hs_status hs_engine_for(hs_engine *e, int n_jobs, hs_engine_job fn, void *ctx, hs_error *err);

/* On worker w: runs tokens (n, t) chunk by chunk with hooks (may be NULL) and
 * keeps the points matching filters (hs_run_with_cache) in out, entries of
 * batch n in row order, their data one hs_floats_alloc block (out->mem; out
 * is freed first, owned by the caller, hs_cache_free). Errors in w->err. */
hs_status hs_engine_cache(hs_engine *e, hs_engine_worker *w, const int *tokens, int n,
                          const char *const *filters, int n_filters, const hs_hooks *hooks,
                          hs_cache *out);

/* Called before chunk `chunk` (rows r0..r0+b-1) of a sweep: registers the
 * chunk's hooks on w->hk (cleared before the call). */
typedef hs_status (*hs_engine_hooks_fn)(void *ctx, hs_engine_worker *w, int chunk, int r0, int b);
/* Called after it with the chunk's logits (b, t, V) (with e->read_pos >= 0
 * only position read_pos of each row holds logits). */
typedef void (*hs_engine_rows_fn)(void *ctx, hs_engine_worker *w, const float *logits, int r0,
                                  int b);
/* On worker w: every chunk of tokens (n, t) with the hooks `hooks` sets, then
 * `rows` reads the logits (either may be NULL). Errors in w->err. */
hs_status hs_engine_sweep(hs_engine *e, hs_engine_worker *w, const int *tokens, int n,
                          hs_engine_hooks_fn hooks, hs_engine_rows_fn rows, void *ctx);
/* hs_engine_sweep from blocks.{layer} on (hs_run_tail_with_hooks): the layers
 * before it are not run; each chunk's residual entering it comes from
 * resid's entry blocks.{layer}.hook_resid_pre (n rows in row order, e.g. an
 * hs_engine_cache of the same tokens). The hooks must change nothing before
 * blocks.{layer}; then every value is bit-identical to hs_engine_sweep's
 * (the cache's rows are that sweep's residuals: the same chunks, the same
 * kernels). layer 0, or a model with an embedding norm, runs hs_engine_sweep.
 * HS_ERR_INPUT (in w->err) when resid lacks the entry or it is not (n, t, D). */
hs_status hs_engine_sweep_from(hs_engine *e, hs_engine_worker *w, const int *tokens, int n, int layer,
                               const hs_cache *resid, hs_engine_hooks_fn hooks, hs_engine_rows_fn rows,
                               void *ctx);

/* Position-wise means over the n rows of tokens (n, t) of every point
 * matching filters: means gets one entry per point, batch 1 ([1, ...]), mean
 * = (sum over rows, in row order, in double) / n, as float. Runs on all
 * workers, chunk sums added in chunk order. means is freed first; the caller
 * frees it. HS_ERR_INPUT for n = 0. */
hs_status hs_engine_means(hs_engine *e, const int *tokens, size_t n, const char *const *filters,
                          int n_filters, hs_cache *means, hs_error *err);

/* view <- rows r0..r0+b-1 of full (every entry batch-major with the same
 * batch), a borrowed view (view->borrowed = 1) sharing full's data.
 * HS_ERR_INPUT when the rows are outside full. Free with hs_cache_free. */
/* The two scores of a head detector (TL error_measure). */
typedef enum { HS_DETECT_MUL = 0, HS_DETECT_ABS = 1 } hs_detect_metric;
/* Fills D (t, t) [dest, src], the detection pattern of detector `det` for
 * prompt `row` with tokens (t) (e.g. hs_detection_pattern, or a task's). */
typedef void (*hs_pattern_fn)(void *ctx, int det, int row, const int *tokens, int t, float *D);
/* Every head's score for n_det detectors over the rows of tokens (n, t),
 * chunk by chunk on the engine (only blocks.*.attn.hook_pattern is kept):
 * out (n_det, L, H) = the mean over rows, summed in row order, of
 * hs_detector_score (mul) or hs_detector_score_abs (abs) of the head's
 * pattern [dest, src] on that row against pattern(det, row). TL
 * detect_head over a list of prompts. HS_ERR_INPUT for n < 1 or n_det < 1. */
hs_status hs_engine_detect_heads(hs_engine *e, const int *tokens, int n, int n_det, hs_pattern_fn pattern,
                                 void *ctx, hs_detect_metric metric, int exclude_bos, int exclude_current,
                                 double *out, hs_error *err);

hs_status hs_cache_view_rows(hs_cache *view, const hs_cache *full, int r0, int b, hs_error *err);
/* views <- (hs_engine_chunks(n)) views of full's rows, chunk by chunk (malloc'd
 * array; free with hs_engine_views_free(views, hs_engine_chunks(n))). */
hs_status hs_engine_views(const hs_cache *full, int n, hs_cache **views, hs_error *err);
void hs_engine_views_free(hs_cache *views, int n_chunks);

/* The names figures and JSON give the two terms of a logit that no
 * component of hs_resid_decompose writes, in its style (TransformerLens'
 * decompose_resid labels, layer-prefixed with underscores: "embed",
 * "L0H1", "L0_b_O", "L0_mlp_out"): the final norm's bias term b_f . dir
 * (hs_dla.constant) and the unembedding bias b_U[a] (- b_U[b]). */
#define HS_DLA_LN_FINAL_B "ln_final_b"
#define HS_DLA_B_U "b_U"

#endif /* HS_PROBE_H */
