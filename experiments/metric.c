/*
 * experiments/metric.c -- the metrics circuit discovery reads from a run's
 * logits, and their gradients with respect to the logits (experiments.h,
 * "Metrics").
 */
#include "experiments/experiments.h"

#include <math.h>
#include <string.h>

const char *const hs_metric_names[HS_METRIC_N] = {"logit-diff", "prob-diff", "kl"};

int hs_metric_parse(const char *s)
{
    for (int k = 0; k < HS_METRIC_N; k++)
        if (strcmp(s, hs_metric_names[k]) == 0) return k;
    return -1;
}

/* log-softmax of z [V] into out [V], in double. */
static void log_softmax(const float *z, int V, double *out)
{
    double mx = -INFINITY, s = 0;
    for (int i = 0; i < V; i++) mx = fmax(mx, (double)z[i]);
    for (int i = 0; i < V; i++) s += exp((double)z[i] - mx);
    const double lse = mx + log(s);
    for (int i = 0; i < V; i++) out[i] = (double)z[i] - lse;
}

double hs_metric_value(hs_metric_kind k, const float *logits, int V, int answer, int wrong,
                       const float *ref, double *scratch)
{
    switch (k) {
    case HS_METRIC_LOGIT_DIFF: return (double)logits[answer] - (double)logits[wrong];
    case HS_METRIC_PROB_DIFF:
        log_softmax(logits, V, scratch);
        return exp(scratch[answer]) - exp(scratch[wrong]);
    case HS_METRIC_KL: {
        double *lp = scratch, *lq = scratch + V, kl = 0;
        log_softmax(ref, V, lp);
        log_softmax(logits, V, lq);
        for (int i = 0; i < V; i++) kl += exp(lp[i]) * (lp[i] - lq[i]);
        return kl;
    }
    default: return NAN;
    }
}

void hs_metric_grad(hs_metric_kind k, const float *logits, int V, int answer, int wrong,
                    const float *ref, double *scratch, float *g)
{
    switch (k) {
    case HS_METRIC_LOGIT_DIFF:
        memset(g, 0, (size_t)V * sizeof *g);
        g[answer] += 1.0f;
        g[wrong] -= 1.0f;
        return;
    case HS_METRIC_PROB_DIFF: {
        /* d p_a / d z_i = p_a (delta_ai - p_i) */
        log_softmax(logits, V, scratch);
        const double pa = exp(scratch[answer]), pw = exp(scratch[wrong]);
        for (int i = 0; i < V; i++) {
            const double p = exp(scratch[i]);
            g[i] = (float)(pa * ((i == answer) - p) - pw * ((i == wrong) - p));
        }
        return;
    }
    case HS_METRIC_KL: {
        /* d KL(P_ref || softmax(z)) / d z_i = p_i - p_ref,i */
        double *lp = scratch, *lq = scratch + V;
        log_softmax(ref, V, lp);
        log_softmax(logits, V, lq);
        for (int i = 0; i < V; i++) g[i] = (float)(exp(lq[i]) - exp(lp[i]));
        return;
    }
    default: memset(g, 0, (size_t)V * sizeof *g);
    }
}
