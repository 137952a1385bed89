/*
 * model/train.h -- training headscope's transformer (model/model.h): the
 * backward of the mean cross-entropy to the weights, the gradient's norm,
 * AdamW, and the training loop (batches from a task, a learning-rate
 * schedule, a callback after every step).
 *
 * Owns: model/backward.c, model/adamw.c, model/train.c. May call: model.h,
 * common/. Knows nothing of tasks (they fill batches through hs_batch_fn),
 * probes or figures. Needs a model with its training buffers
 * (hs_model_alloc_train) and acts made with with_grad (hs_acts_create).
 */
#ifndef HS_TRAIN_H
#define HS_TRAIN_H

#include "model/model.h"

/*
 * Backward of the mean cross-entropy through the last forward (which must have
 * run with observer == NULL). Accumulates (+=) into m->grad_mem; the caller
 * zeros it (hs_zero_grad). A batch of two or more 16-row units runs as
 * HS_GRAD_PARTS parts on the pool (hs_acts_set_pool): part 0 accumulates into
 * grad_mem, part p > 0 into its own zeroed buffer (grad_part_mem), then
 * grad_mem += part 1 += part 2 ... in that order (the data-parallel step of
 * llm.c / PyTorch DDP with a fixed reduction order). If d_x0 != NULL it also receives dLoss/d(x0)
 * (b,t,D), the gradient w.r.t. the summed input embedding (gradient checks).
 * With acts made HS_ACTS_TRAIN it overwrites acts->probs with d loss /
 * d logits (the training layout keeps no second B x T x V buffer's traffic;
 * hs_cross_entropy makes probs again); the other layouts leave probs as it is.
 */
void hs_backward(hs_model *m, hs_acts *acts, const int *tokens, const int *targets,
                 float *d_x0);

void hs_zero_grad(hs_model *m);

/* Global L2 norm of the gradient: squares summed in double over fixed runs
 * of 16,384 floats (each run in 8 fixed lanes, lanes added 0 to 7), the
 * runs' sums added in order: the same bits on every machine and pool. */
double hs_grad_norm(const hs_model *m);

typedef struct {
    float lr;            /* 1e-3 */
    float beta1, beta2;  /* 0.9, 0.999 */
    float eps;           /* 1e-8 */
    float weight_decay;  /* 0.01, applied to matrices only (hs_tensor_info.decay) */
    float clip;          /* global-norm clip; <= 0 = off. Default 1.0 */
} hs_adamw;

hs_adamw hs_adamw_default(void);

/*
 * One AdamW step (Loshchilov & Hutter 2019, decoupled weight decay) in the
 * form of PyTorch's torch.optim.AdamW (1.13, single-tensor path): if clip > 0
 * and ||g|| > clip, g *= clip/||g||; then per element, in float,
 *   p = p (1 - lr wd); m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 *   p = p - lr/(1-b1^t) * m / (sqrt(v) / sqrt(1-b2^t) + eps)
 * with wd only on tensors with decay (matrices) and the scalars lr/(1-b1^t),
 * sqrt(1-b2^t), 1 - lr wd made in double and rounded once. (Algebraically
 * the textbook p -= lr (mhat / (sqrt(vhat) + eps) + wd p).) Vector widths
 * give the same bits as the scalar form. Returns the gradient norm before
 * clipping (hs_grad_norm). HS_ERR_NUMERIC if it is not finite (parameters
 * are then left untouched).
 */
hs_status hs_adamw_step(hs_model *m, const hs_adamw *opt, double *grad_norm, hs_error *err);
/* hs_adamw_step with the gradient norm and the update split over pool's
 * workers (NULL = the caller's thread) in runs of 16,384 floats, when there
 * are 8 or more runs a worker (fewer: the caller's thread, as waking the
 * pool costs more). Each element's update is its own and the norm's runs
 * are added in order, so the parameters get the same bits for every pool. */
hs_status hs_adamw_step_on(hs_model *m, const hs_adamw *opt, hs_pool *pool, double *grad_norm,
                           hs_error *err);

/* ------------------------------------------------------------------------ */
/* Training loop                                                             */

/* Fills a batch: tokens (B,T) ids and targets (B,T) next-token ids (-1 =
 * ignore). The data source (a task) owns ctx. */
typedef void (*hs_batch_fn)(void *ctx, int B, int T, int *tokens, int *targets);

/* What the trainer reports after a step. */
typedef struct {
    int step;            /* 1-based step just taken */
    int steps;           /* budget */
    float loss;          /* mean cross-entropy of this step's batch (nats) */
    float lr;            /* learning rate used at this step */
    double grad_norm;    /* before clipping */
    double seconds;      /* wall time since training started */
} hs_train_info;

/* Called after every step. Return HS_OK to go on; any other status stops
 * training and is returned by hs_train (e.g. an interrupt, or a failed
 * checkpoint write, with err filled by the callback). */
typedef hs_status (*hs_step_fn)(void *ctx, hs_model *m, const hs_train_info *info,
                                hs_error *err);

typedef struct {
    int steps;           /* step budget */
    int batch;           /* B (64) */
    int seq_len;         /* T */
    hs_adamw opt;        /* lr is the peak rate */
    float decay_start;   /* fraction of the budget after which lr decays (0.6) */
    float lr_final_frac; /* lr at the last step as a fraction of the peak (0.05) */
    int threads;         /* workers (hs_acts_set_threads): 0 = every CPU (hs_pool_cpus), 1.. (0) */
    int start_step;      /* steps already taken (0; a resumed run: the checkpoint's):
                            training runs steps start_step+1 .. steps, same schedule */
    int warmup;          /* linear warmup: lr x step / warmup at steps 1..warmup, then the
                            schedule above (0: none, the default) */
} hs_train_opts;

hs_train_opts hs_train_opts_default(void);

/* Learning rate at 1-based step: opt.lr x step / warmup for step <= warmup
 * (a linear warmup, Goyal et al. 2017; the chapter's post-norm rows), then
 * opt.lr until decay_start * steps, then a cosine down to lr_final_frac *
 * opt.lr at the last step. */
float hs_train_lr(const hs_train_opts *o, int step);

/*
 * Trains m for o->steps AdamW steps on batches from batch_fn: forward, mean
 * next-token cross-entropy, backward, clip, AdamW, then on_step (may be NULL).
 * Allocates what it needs (gradients, activations) and frees its activations.
 * A NaN/Inf loss or gradient stops training before that step's update with
 * HS_ERR_NUMERIC naming the step ("loss is NaN at step 412"): parameters are
 * those after the last good step.
 */
hs_status hs_train(hs_model *m, const hs_train_opts *o, hs_batch_fn batch_fn, void *batch_ctx,
                   hs_step_fn on_step, void *step_ctx, hs_error *err);

#endif /* HS_TRAIN_H */
