/*
 * model/suffix.h -- a patched run's tail at the positions a patch can change
 * (model/suffix.c), for activation patching (experiments/patch.c) and the
 * circuit check's patches, ablations and path patches (circuits/circuit.c).
 *
 * Owns: model/suffix.c. May call: model.h, common/. Knows nothing of probes,
 * prompt sets or figures: the caller hands it the reference run's tensors.
 */
#ifndef HS_SUFFIX_H
#define HS_SUFFIX_H

#include "model/model.h"

/* A patched run from block `layer` on at the positions s..t-1 alone
 * (model/suffix.c): activation patching where every clean prompt equals its
 * corrupted partner up to s (IOI's pairs differ from S2 on: 5 of 16
 * positions) recomputes only the positions a patch can change. */
/* The edit at hook_z of the block sequences b0 .. b0 + nb - 1 enter at (one
 * block, layer[b0]): z (nb, ns, H, dh) holds them at positions s .. s + ns - 1,
 * edited in place. */
typedef void (*hs_suffix_z_fn)(void *ctx, float *z, int b0, int nb, int ns);
/* Head r->head's q, k, v (t, dh) each at every position of sequence b
 * (z_last runs). */
typedef void (*hs_suffix_qkv_fn)(void *ctx, int b, float *q, float *k, float *v);
/* Block l's points at positions s .. s + ns - 1 of the sequences b0 .. b0 +
 * nb - 1 that have entered by block l: z (nb, ns, H, dh) (blocks.l.attn.hook_z,
 * after edit_z), mlp_out (nb, ns, D) (blocks.l.hook_mlp_out). */
typedef void (*hs_suffix_points_fn)(void *ctx, int l, int b0, int nb, int ns, const float *z,
                                    const float *mlp_out);
typedef struct {
    int B, t, s;                /* sequences; positions; the first position run, 0 < s < t */
    const int *layer;           /* (B) the block sequence b starts at, in [0, L), nondecreasing */
    const int *row;             /* (B) the row of the reference run's tensors sequence b reads */
    const float *const *resid;  /* (L) blocks.l.hook_resid_pre (n, t, D) of the reference run, for
                                 * every l some sequence starts at (the others unread) */
    const float *const *k, *const *v; /* (L) blocks.l.attn.hook_k / hook_v (n, t, H, dh) of the
                                 * reference run, for every l >= layer[0] (the others unread) */
    hs_suffix_z_fn edit_z;      /* NULL: none */
    void *ctx;
    const int *read;            /* (B) the position whose logits a sequence reads, in [s, t) */
    const int *tok;             /* (B, n_tok) the tokens whose logits are read there */
    int n_tok;                  /* 0: every logit there, by the forward's product (tok unread) */
    /* The last block alone at the read rows (z_last not NULL; s, k, v then
     * unread): for edits that leave the last block's attention as the
     * reference run has it but for one head's inputs (path patching into
     * the last layer) or its z at the read row (patching, ablating z there).
     * Every sequence starts there (layer[b] = L - 1), read[b] in [0, t). */
    const float *z_last;        /* (n, t, H, dh) blocks.{L-1}.attn.hook_z of the reference run */
    int head;                   /* -1, or the head whose z at the read row is computed again from
                                 * head_qkv's q, k, v by the forward's kernels (hs_attn_head_forward:
                                 * the forward's bits) */
    hs_suffix_qkv_fn head_qkv;
    int exact;                  /* 1: the attention at s.. by the forward's kernels on each head's
                                 * whole t x t tile (hs_attn_head_forward; rows before s from k, v):
                                 * with n_tok 0 the full forward's bits, for short t (circuit's
                                 * 15 positions). 0: the rows s.. alone, sums written out here */
    hs_suffix_points_fn observe; /* NULL, or every block's z and MLP output at s.. (ctx): the
                                 * last block then runs at every position s.. too, and
                                 * no logit is computed (read, tok, logits unread; z_last NULL) */
} hs_suffix_run;
/* 1 when hs_forward_suffix runs cfg's blocks: pre-norm, sequential, added,
 * softmax attention without rotary, ALiBi, local layers or grouped keys,
 * d_head a multiple of 8. */
int hs_forward_suffix_ok(const hs_config *cfg);
/* Block 0's input (blocks.0.hook_resid_pre) at positions s .. t - 1 of one
 * sequence, as hs_forward makes it: x[p] (D) = W_E[tok[p]] + W_pos[p] for
 * p in [s, t) (tok (t), x (t, D); rows before s untouched), for a model with
 * learned positions added and no embedding norm (HS_ERR_INPUT otherwise, and
 * for a token or position out of range). The input a suffix run takes at
 * block 0 (hs_suffix_run's inputs). */
hs_status hs_suffix_embed(const hs_model *m, const int *tok, int s, int t, float *x, hs_error *err);
/* logits (B, n_tok) (n_tok 0: (B, V)) <- logits[b, read[b], tok[b, j]] of the forward of
 * blocks layer[b].. whose positions before s are the reference run's (the
 * keys and values there read from r->k, r->v) and whose input at s.. is
 * r->resid[layer[b]]'s rows, z edited by r->edit_z at block layer[b]; the
 * sequences that have started by block l run there as one product (a row's
 * values do not depend on the others: whole 16-row products). Equals the full
 * forward with the same edit (hs_run_tail_with_hooks) when the edit leaves
 * every position before s as the reference run has it, to float32 rounding
 * (the scores', mix's and logits' sums are written out here; the products
 * are the forward's, on fewer rows). Single-threaded; allocates its scratch
 * (about 2,048 rows, or t - s when more, of 3 D + 4 H dh + 2 max(D, d_mlp)
 * floats; hs_floats_alloc, so a run after one of the same size reuses its
 * pages). With observe: every block's z and MLP output at s.. handed to it,
 * the last block's too, and no logit (logits may be NULL). With z_last: the last block from the reference's z at each read
 * row (one head's computed again, edit_z with ns = 1 at the read row), then
 * as above: the full forward's bits when n_tok is 0 (every operation the
 * forward's, on the read rows). HS_ERR_INPUT: a model hs_forward_suffix_ok
 * refuses, or a range outside the model or run; HS_ERR_NOMEM. */
hs_status hs_forward_suffix(const hs_model *m, const hs_suffix_run *r, float *logits, hs_error *err);
/* logits (nb, n_tok) <- the named tokens' logits of the residuals resid
 * (nb, D) (a run's last blocks.{L-1}.hook_resid_post rows): the final norm
 * with each row's own statistics, then tok[b, j]'s column of W_U, a dot
 * product over D in double, + b_U: hs_forward_suffix's arithmetic for its
 * read logits (n_tok > 0), so a base run read this way and the suffix runs
 * share it (experiments/patch.c). scratch: nb (D + 2) floats. */
void hs_final_token_logits(const hs_model *m, const float *resid, int nb, const int *tok, int n_tok,
                           float *scratch, float *logits);

#endif
