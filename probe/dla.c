/*
 * probe/dla.c -- residual decomposition and direct logit attribution
 * (CIRCUITS.md 5), attention statistics (8) and head detectors (7).
 */
#include "probe/probe.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Residual decomposition                                                    */

void hs_resid_stack_free(hs_resid_stack *s)
{
    if (s == NULL) return;
    free(s->labels);
    free(s->resid);
    memset(s, 0, sizeof *s);
}

/* Row (batch, pos) of a cached [B,T,...] entry with `inner` floats per row. */
static const float *cache_row(const hs_cache_entry *e, int batch, int pos, size_t inner)
{
    if (e == NULL || e->ndim < 2 || batch >= e->shape[0] || pos >= e->shape[1]) return NULL;
    if (e->numel != (size_t)(e->shape[0] * e->shape[1]) * inner) return NULL;
    return e->data + ((size_t)batch * e->shape[1] + pos) * inner;
}

hs_status hs_resid_decompose(const hs_model *m, const hs_cache *cache, int batch, int pos,
                             hs_resid_stack *out, hs_error *err)
{
    const hs_config *c = &m->cfg;
    const int D = c->d_model, H = c->n_heads, dh = c->d_head, L = c->n_layers;
    memset(out, 0, sizeof *out);
    if (hs_config_nonadditive(c))
        return hs_fail(err, HS_ERR_INPUT, "decompose: the residual stream is not a sum of its writers "
                       "with %s", hs_config_nonadditive(c));
    if (batch < 0 || pos < 0) return hs_fail(err, HS_ERR_INPUT, "decompose: negative batch/position");
    const int has_bO = m->params.blocks[0].b_O != NULL;
    int n = (c->embed_norm || !hs_pos_added(c)) ? 1 : 2;
    n += L * (H + (has_bO ? 1 : 0) + (c->d_mlp > 0 ? 1 : 0));
    out->labels = calloc((size_t)n, sizeof *out->labels);
    out->resid = calloc((size_t)n * D, sizeof(float));
    if (out->labels == NULL || out->resid == NULL) {
        hs_resid_stack_free(out);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    out->n = n;
    out->d_model = D;
    int k = 0;
    const char *missing = NULL;
    char missing_buf[64];
    if (c->embed_norm) {
        const float *r = cache_row(hs_cache_get(cache, "blocks.0.hook_resid_pre"), batch, pos, D);
        if (r == NULL) { missing = "blocks.0.hook_resid_pre"; goto fail; }
        snprintf(out->labels[k], sizeof out->labels[k], "embed");
        memcpy(out->resid + (size_t)k++ * D, r, (size_t)D * sizeof(float));
    } else {
        const float *r = cache_row(hs_cache_get(cache, "hook_embed"), batch, pos, D);
        if (r == NULL) { missing = "hook_embed"; goto fail; }
        snprintf(out->labels[k], sizeof out->labels[k], "embed");
        memcpy(out->resid + (size_t)k++ * D, r, (size_t)D * sizeof(float));
        if (hs_pos_added(c)) {
            r = cache_row(hs_cache_get(cache, "hook_pos_embed"), batch, pos, D);
            if (r == NULL) { missing = "hook_pos_embed"; goto fail; }
            snprintf(out->labels[k], sizeof out->labels[k], "pos_embed");
            memcpy(out->resid + (size_t)k++ * D, r, (size_t)D * sizeof(float));
        }
    }
    for (int l = 0; l < L; l++) {
        const hs_block_params *bp = &m->params.blocks[l];
        snprintf(missing_buf, sizeof missing_buf, "blocks.%d.attn.hook_z", l);
        const float *z = cache_row(hs_cache_get(cache, missing_buf), batch, pos, (size_t)H * dh);
        if (z == NULL) { missing = missing_buf; goto fail; }
        for (int h = 0; h < H; h++) {
            float *dst = out->resid + (size_t)k * D;
            const float *zh = z + (size_t)h * dh;
            const float *WO = bp->W_O + (size_t)h * dh * D;
            for (int d = 0; d < D; d++) {
                double s = 0.0;
                for (int e = 0; e < dh; e++) s += (double)zh[e] * WO[(size_t)e * D + d];
                dst[d] = (float)s;
            }
            snprintf(out->labels[k++], sizeof out->labels[0], "L%dH%d", l, h);
        }
        if (has_bO) {
            memcpy(out->resid + (size_t)k * D, bp->b_O, (size_t)D * sizeof(float));
            snprintf(out->labels[k++], sizeof out->labels[0], "L%d_b_O", l);
        }
        if (c->d_mlp > 0) {
            snprintf(missing_buf, sizeof missing_buf, "blocks.%d.hook_mlp_out", l);
            const float *r = cache_row(hs_cache_get(cache, missing_buf), batch, pos, D);
            if (r == NULL) { missing = missing_buf; goto fail; }
            memcpy(out->resid + (size_t)k * D, r, (size_t)D * sizeof(float));
            snprintf(out->labels[k++], sizeof out->labels[0], "L%d_mlp_out", l);
        }
    }
    HS_ASSERT(k == n);
    return HS_OK;
fail:
    hs_resid_stack_free(out);
    return hs_fail(err, HS_ERR_INPUT, "decompose: the cache lacks %s at batch %d, position %d",
                   missing, batch, pos);
}

/* ------------------------------------------------------------------------ */
/* Direct logit attribution                                                  */

void hs_dla_free(hs_dla *d)
{
    if (d == NULL) return;
    free(d->labels);
    free(d->attr);
    memset(d, 0, sizeof *d);
}

hs_status hs_logit_attribution(const hs_model *m, const hs_cache *cache, int batch, int pos,
                               int tok_a, int tok_b, hs_dla *out, hs_error *err)
{
    return hs_logit_attribution_at(m, cache, batch, pos, pos, tok_a, tok_b, out, err);
}

hs_status hs_logit_attribution_at(const hs_model *m, const hs_cache *cache, int batch, int src_pos, int pos,
                                  int tok_a, int tok_b, hs_dla *out, hs_error *err)
{
    const hs_config *c = &m->cfg;
    const hs_params *P = &m->params;
    const int D = c->d_model, V = c->d_vocab;
    memset(out, 0, sizeof *out);
    if (hs_config_nonadditive(c))
        return hs_fail(err, HS_ERR_INPUT, "direct logit attribution: the residual stream is not a "
                       "sum of its writers with %s", hs_config_nonadditive(c));
    if (pos < 0 || src_pos < 0)
        return hs_fail(err, HS_ERR_INPUT, "logit attribution: negative position %d/%d", src_pos, pos);
    if (tok_a < 0 || tok_a >= V || tok_b >= V)
        return hs_fail(err, HS_ERR_INPUT, "logit attribution: token %d/%d outside [0, %d)", tok_a,
                       tok_b, V);
    const hs_cache_entry *lg = hs_cache_get(cache, "logits");
    const float *lrow = cache_row(lg, batch, pos, (size_t)V);
    if (lrow == NULL)
        return hs_fail(err, HS_ERR_INPUT, "logit attribution: the cache lacks logits at batch %d, position %d",
                       batch, pos);
    const int has_ln = c->ln_final && c->norm != HS_NORM_NONE;
    double s = 1.0;
    if (has_ln) {
        const float *sr = cache_row(hs_cache_get(cache, "ln_final.hook_scale"), batch, pos, 1);
        if (sr == NULL)
            return hs_fail(err, HS_ERR_INPUT, "logit attribution: the cache lacks ln_final.hook_scale");
        s = sr[0];
    }
    hs_resid_stack st;
    hs_status rc = hs_resid_decompose(m, cache, batch, src_pos, &st, err);
    if (rc != HS_OK) return rc;
    double *dir = malloc((size_t)D * sizeof *dir);
    out->attr = calloc((size_t)st.n, sizeof *out->attr);
    if (dir == NULL || out->attr == NULL) {
        free(dir);
        hs_resid_stack_free(&st);
        hs_dla_free(out);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    /* direction = W_U[:,a] (- W_U[:,b]), times w_f when the final norm has one */
    for (int d = 0; d < D; d++) {
        double v = hs_unembed_at(m, d, tok_a); /* W_U stored either way (model.h) */
        if (tok_b >= 0) v -= hs_unembed_at(m, d, tok_b);
        dir[d] = v;
    }
    out->constant = 0.0;
    if (has_ln && P->ln_final_b)
        for (int d = 0; d < D; d++) out->constant += (double)P->ln_final_b[d] * dir[d];
    if (has_ln && P->ln_final_w)
        for (int d = 0; d < D; d++) dir[d] *= P->ln_final_w[d];
    for (int k = 0; k < st.n; k++) {
        const float *cv = st.resid + (size_t)k * D;
        double mu = 0.0;
        if (has_ln && c->norm == HS_NORM_LAYERNORM) {
            for (int d = 0; d < D; d++) mu += cv[d];
            mu /= D;
        }
        double a = 0.0;
        for (int d = 0; d < D; d++) a += ((double)cv[d] - mu) * dir[d];
        out->attr[k] = a / s;
    }
    double tgt = (double)lrow[tok_a] - (P->b_U ? (double)P->b_U[tok_a] : 0.0);
    if (tok_b >= 0) tgt -= (double)lrow[tok_b] - (P->b_U ? (double)P->b_U[tok_b] : 0.0);
    out->target = tgt;
    out->n = st.n;
    out->labels = st.labels; /* take ownership */
    st.labels = NULL;
    free(dir);
    hs_resid_stack_free(&st);
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* Attention statistics                                                      */

hs_attn_stat hs_attn_row_stats(const float *row, int n)
{
    hs_attn_stat s = {0.0f, 1.0f, 0.0f, 0};
    double H = 0.0;
    float mx = -INFINITY;
    for (int j = 0; j < n; j++) {
        float a = row[j];
        if (a > mx) {
            mx = a;
            s.argmax = j;
        }
        if (a > 0.0f) H -= (double)a * log((double)a);
    }
    s.entropy = (float)H;
    s.eff_tokens = (float)exp(H);
    s.max_weight = n > 0 ? mx : 0.0f;
    return s;
}

void hs_attn_stats(const float *pattern, int H, int T, hs_attn_stat *out)
{
    for (int h = 0; h < H; h++)
        for (int i = 0; i < T; i++)
            out[(size_t)h * T + i] = hs_attn_row_stats(pattern + ((size_t)h * T + i) * T, i + 1);
}

/* ------------------------------------------------------------------------ */
/* Head detectors                                                            */

void hs_detection_pattern(hs_detector kind, const int *tok, int t, float *D)
{
    memset(D, 0, (size_t)t * t * sizeof(float));
    for (int i = 0; i < t; i++)
        for (int j = 0; j <= i; j++) {
            int on = 0;
            switch (kind) {
            case HS_DETECT_PREV_TOKEN: on = (j == i - 1); break;
            case HS_DETECT_DUPLICATE: on = (j < i && tok[j] == tok[i]); break;
            case HS_DETECT_INDUCTION: on = (j >= 1 && tok[j - 1] == tok[i]); break;
            case HS_DETECT_TARGET: break;
            }
            D[(size_t)i * t + j] = on ? 1.0f : 0.0f;
        }
}

double hs_detector_score(const float *A, const float *D, int t, int exclude_bos,
                         int exclude_current)
{
    double num = 0.0, den = 0.0;
    for (int i = 0; i < t; i++)
        for (int j = 0; j < t; j++) {
            if ((exclude_bos && j == 0) || (exclude_current && i == j)) continue;
            double a = A[(size_t)i * t + j];
            num += a * D[(size_t)i * t + j];
            den += a;
        }
    return den != 0.0 ? num / den : 0.0;
}

double hs_detector_score_abs(const float *A, const float *D, int t, int exclude_bos,
                             int exclude_current)
{
    double sum = 0.0;
    for (int i = 0; i < t; i++)
        for (int j = 0; j < t; j++) {
            if ((exclude_bos && j == 0) || (exclude_current && i == j)) continue;
            sum += fabs((double)A[(size_t)i * t + j] - (double)D[(size_t)i * t + j]);
        }
    return 1.0 - nearbyint(sum / t * 1000.0) / 1000.0;
}

hs_status hs_detect_heads(const hs_model *m, const hs_cache *cache, const int *tokens, int nb,
                          int t, hs_detector kind, const float *target, int exclude_bos,
                          int exclude_current, float *out, hs_error *err)
{
    const int L = m->cfg.n_layers, H = m->cfg.n_heads;
    if (kind == HS_DETECT_TARGET && target == NULL)
        return hs_fail(err, HS_ERR_INPUT, "detector: a target pattern is required");
    if (kind != HS_DETECT_TARGET && tokens == NULL)
        return hs_fail(err, HS_ERR_INPUT, "detector: tokens are required");
    float *Dp = malloc((size_t)t * t * sizeof(float));
    if (Dp == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int l = 0; l < L; l++) {
        const hs_cache_entry *e = hs_cache_getf(cache, "blocks.%d.attn.hook_pattern", l);
        if (e == NULL || e->ndim != 4 || e->shape[0] != nb || e->shape[1] != H || e->shape[2] != t ||
            e->shape[3] != t) {
            free(Dp);
            return hs_fail(err, HS_ERR_INPUT, "detector: the cache lacks blocks.%d.attn.hook_pattern [%d,%d,%d,%d]",
                           l, nb, H, t, t);
        }
        for (int h = 0; h < H; h++) {
            double acc = 0.0;
            for (int b = 0; b < nb; b++) {
                const float *D = target;
                if (kind != HS_DETECT_TARGET) {
                    hs_detection_pattern(kind, tokens + (size_t)b * t, t, Dp);
                    D = Dp;
                }
                acc += hs_detector_score(e->data + ((size_t)b * H + h) * t * t, D, t, exclude_bos,
                                         exclude_current);
            }
            out[l * H + h] = (float)(acc / nb);
        }
    }
    free(Dp);
    return HS_OK;
}

int hs_top_k(const float *logits, int V, int K, int *ids, double *probs)
{
    if (K > V) K = V;
    if (K < 1) K = 1;
    int nk = 0;
    for (int i = 0; i < V; i++) { /* insertion into a sorted top-K list */
        int j;
        if (nk < K) j = nk++;
        else if (logits[i] > logits[ids[K - 1]]) j = K - 1;
        else continue;
        while (j > 0 && logits[i] > logits[ids[j - 1]]) {
            ids[j] = ids[j - 1];
            j--;
        }
        ids[j] = i;
    }
    if (probs) {
        double mx = -INFINITY, Z = 0.0;
        for (int i = 0; i < V; i++) mx = logits[i] > mx ? logits[i] : mx;
        for (int i = 0; i < V; i++) Z += exp((double)logits[i] - mx);
        for (int k = 0; k < K; k++) probs[k] = exp((double)logits[ids[k]] - mx) / Z;
    }
    return K;
}
