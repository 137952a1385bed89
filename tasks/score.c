/*
 * tasks/score.c -- referent accuracy of a model on the Winograd task: the
 * prediction made at position 14, argmax over the whole vocabulary, per role
 * and per adjective.
 */
#include "tasks/tasks.h"

#include <math.h>
#include <string.h>

/* Sentences per forward: 16 (288 rows) keeps the activations at ~3 MB for
 * the default model (128 took 26 MB, the peak of a training run that
 * evaluates as it goes: 58 MB then, 37 MB now); the held-out set's 192 still
 * score in ~5 ms. */
#define SCORE_BATCH 16

hs_status hs_winograd_score_examples(const hs_model *m, const hs_winograd *t,
                                     const hs_wg_example *examples, size_t n,
                                     const hs_observer *observer, int *pred, hs_wg_score *out,
                                     hs_error *err)
{
    hs_status st = HS_OK;
    hs_acts *acts = NULL;
    int *tokens = NULL;
    memset(out, 0, sizeof *out);
    if ((size_t)m->cfg.d_vocab != t->vocab->n)
        return hs_fail(err, HS_ERR_CONFIG,
                       "the model's d_vocab is %d but the task's vocabulary has %zu words",
                       m->cfg.d_vocab, t->vocab->n);
    if (m->cfg.n_ctx < HS_WG_LEN)
        return hs_fail(err, HS_ERR_CONFIG,
                       "the model's n_ctx is %d but Winograd sentences have %d tokens",
                       m->cfg.n_ctx, HS_WG_LEN);
    if (n == 0) return HS_OK;
    int B = n < SCORE_BATCH ? (int)n : SCORE_BATCH;
    st = hs_acts_create(&m->cfg, B, HS_WG_LEN, 0, &acts, err);
    if (st != HS_OK) goto done;
    tokens = malloc((size_t)B * HS_WG_LEN * sizeof *tokens);
    if (!tokens) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory scoring");
        goto done;
    }
    const size_t V = (size_t)m->cfg.d_vocab;
    for (size_t start = 0; start < n; start += (size_t)B) {
        size_t b = n - start < (size_t)B ? n - start : (size_t)B;
        for (size_t i = 0; i < b; i++)
            memcpy(tokens + i * HS_WG_LEN, examples[start + i].tokens, sizeof examples[0].tokens);
        st = hs_forward(m, acts, tokens, (int)b, HS_WG_LEN, observer, err);
        if (st != HS_OK) goto done;
        for (size_t i = 0; i < b; i++) {
            const hs_wg_example *e = &examples[start + i];
            const float *row = acts->logits + (i * HS_WG_LEN + HS_WG_POS_QUERY) * V;
            int p = hs_argmax(row, (size_t)V);
            if (p < 0) {
                st = hs_fail(err, HS_ERR_NUMERIC,
                             "NaN logit at position %d of example %zu", HS_WG_POS_QUERY, start + i);
                goto done;
            }
            if (pred) pred[start + i] = p;
            int ok = p == e->ref_id, oth = p == e->other_id;
            int r = e->role == HS_ROLE_CROSSER ? 0 : 1;
            HS_ASSERT(e->adj >= 0 && e->adj < HS_WG_N_ADJS);
            out->n++;
            out->n_role[r]++;
            out->n_adj[e->adj]++;
            out->correct += (size_t)ok;
            out->correct_role[r] += (size_t)ok;
            out->correct_adj[e->adj] += (size_t)ok;
            out->other += (size_t)oth;
            out->other_role[r] += (size_t)oth;
            out->other_adj[e->adj] += (size_t)oth;
        }
    }
done:
    free(tokens);
    hs_acts_destroy(acts);
    if (st != HS_OK) memset(out, 0, sizeof *out);
    return st;
}

hs_status hs_winograd_score(const hs_model *m, const hs_winograd *t, hs_wg_split split,
                            const hs_observer *observer, hs_wg_score *out, hs_error *err)
{
    size_t n;
    const hs_wg_example *ex = hs_winograd_examples(t, split, &n);
    return hs_winograd_score_examples(m, t, ex, n, observer, NULL, out, err);
}

double hs_wg_score_accuracy(const hs_wg_score *s)
{
    return s->n ? (double)s->correct / (double)s->n : 0.0;
}

double hs_wg_score_other_rate(const hs_wg_score *s)
{
    return s->n ? (double)s->other / (double)s->n : 0.0;
}
