/*
 * experiments/gradients.c -- the gradient of a metric at each prompt's read
 * position for a chunk of prompts on one engine worker (experiments.h,
 * "Attribution patching": hs_attr_worker, hs_attr_backward), which AtP here
 * and EAP / EAP-IG in discovery/ run their backwards through.
 */
#include "experiments/experiments.h"

#include <stdlib.h>
#include <string.h>

void hs_attr_workers_free(hs_attr_worker *w, int n)
{
    for (int i = 0; w && i < n; i++) {
        hs_acts_destroy(w[i].acts);
        free(w[i].dlogits);
        free(w[i].scratch);
    }
    free(w);
}

hs_status hs_attr_workers_init(const hs_engine *e, hs_attr_worker **out, hs_error *err)
{
    const hs_config *c = &e->m->cfg;
    hs_attr_worker *w = calloc((size_t)e->n_workers, sizeof *w);
    *out = w;
    if (w == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int i = 0; i < e->n_workers; i++) {
        hs_status s = hs_acts_create(c, HS_ENGINE_CHUNK, e->t, 1, &w[i].acts, err);
        if (s != HS_OK) return s;
        w[i].dlogits = calloc((size_t)HS_ENGINE_CHUNK * e->t * c->d_vocab, sizeof(float));
        w[i].scratch = malloc(2 * (size_t)c->d_vocab * sizeof(double));
        if (w[i].dlogits == NULL || w[i].scratch == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    return HS_OK;
}

hs_status hs_attr_backward(const hs_model *m, hs_attr_worker *w, hs_metric_kind k, int b, int t,
                           const int *pos, const int *answer, const int *wrong, const float *ref,
                           const hs_observer *grad_obs, hs_error *err)
{
    const int V = m->cfg.d_vocab;
    for (int i = 0; i < b; i++) {
        const size_t row = ((size_t)i * t + pos[i]) * V;
        hs_metric_grad(k, w->acts->logits + row, V, answer ? answer[i] : 0, wrong ? wrong[i] : 0,
                       ref ? ref + (size_t)i * V : NULL, w->scratch, w->dlogits + row);
    }
    hs_status s = hs_backward_acts(m, w->acts, w->dlogits, grad_obs, err);
    for (int i = 0; i < b; i++)
        memset(w->dlogits + ((size_t)i * t + pos[i]) * V, 0, (size_t)V * sizeof(float));
    return s;
}
