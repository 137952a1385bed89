/*
 * model/train.c -- the training loop: batches from a callback, forward,
 * cross-entropy, backward, AdamW with a linear warmup and a cosine tail on the
 * learning rate.
 */
#define _POSIX_C_SOURCE 200809L
#include "model.h"
#include "train.h"

#include <math.h>
#include <time.h>

hs_train_opts hs_train_opts_default(void)
{
    hs_train_opts o;
    o.steps = 2000;
    o.batch = 64;
    o.seq_len = 18;
    o.opt = hs_adamw_default();
    o.decay_start = 0.6f;
    o.lr_final_frac = 0.05f;
    o.threads = 0;
    o.start_step = 0;
    o.warmup = 0;
    return o;
}

float hs_train_lr(const hs_train_opts *o, int step)
{
    if (o->warmup > 0 && step <= o->warmup) /* linear warmup: lr / warmup at step 1 */
        return (float)((double)o->opt.lr * step / o->warmup);
    const double start = (double)o->decay_start * o->steps;
    if (step <= start || o->steps <= 1) return o->opt.lr;
    double frac = (step - start) / (o->steps - start); /* (0, 1] */
    if (frac > 1.0) frac = 1.0;
    double lo = (double)o->lr_final_frac;
    double mult = lo + (1.0 - lo) * 0.5 * (1.0 + cos(3.14159265358979323846 * frac));
    return (float)(o->opt.lr * mult);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

hs_status hs_train(hs_model *m, const hs_train_opts *o, hs_batch_fn batch_fn, void *batch_ctx,
                   hs_step_fn on_step, void *step_ctx, hs_error *err)
{
    if (o->steps < 0 || o->batch < 1 || o->seq_len < 1 || o->seq_len > m->cfg.n_ctx ||
        o->start_step < 0 || o->start_step > o->steps)
        return hs_fail(err, HS_ERR_CONFIG,
                       "train: invalid options (steps %d, start %d, batch %d, seq_len %d, n_ctx %d)",
                       o->steps, o->start_step, o->batch, o->seq_len, m->cfg.n_ctx);
    hs_status s = hs_model_alloc_train(m, err);
    if (s != HS_OK) return s;
    hs_acts *acts = NULL;
    s = hs_acts_create(&m->cfg, o->batch, o->seq_len, HS_ACTS_TRAIN, &acts, err);
    if (s != HS_OK) return s;
    s = hs_acts_set_threads(acts, o->threads, err);
    if (s != HS_OK) {
        hs_acts_destroy(acts);
        return s;
    }
    const size_t n = (size_t)o->batch * o->seq_len;
    int *tokens = malloc(n * sizeof(int));
    int *targets = malloc(n * sizeof(int));
    if (!tokens || !targets) {
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto done;
    }
    const double t0 = now_seconds();
    for (int step = o->start_step + 1; step <= o->steps; step++) {
        batch_fn(batch_ctx, o->batch, o->seq_len, tokens, targets);
        s = hs_forward(m, acts, tokens, o->batch, o->seq_len, NULL, err);
        if (s != HS_OK) goto done;
        float loss = hs_cross_entropy(m, acts, targets, NULL);
        if (!isfinite(loss)) {
            s = hs_fail(err, HS_ERR_NUMERIC, "loss is %s at step %d; stopped before updating",
                        isnan(loss) ? "NaN" : "Inf", step);
            goto done;
        }
        hs_zero_grad(m);
        hs_backward(m, acts, tokens, targets, NULL);
        hs_adamw opt = o->opt;
        opt.lr = hs_train_lr(o, step);
        double gnorm = 0.0;
        s = hs_adamw_step_on(m, &opt, acts->pool, &gnorm, err);
        if (s != HS_OK) {
            hs_fail(err, s, "gradient norm is %s at step %d; stopped before updating",
                    isnan(gnorm) ? "NaN" : "Inf", step);
            goto done;
        }
        if (on_step) {
            hs_train_info info = {step, o->steps, loss, opt.lr, gnorm, now_seconds() - t0};
            s = on_step(step_ctx, m, &info, err);
            if (s != HS_OK) goto done;
        }
    }
    s = HS_OK;
done:
    free(tokens);
    free(targets);
    hs_acts_destroy(acts);
    return s;
}
