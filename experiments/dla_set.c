/*
 * experiments/dla_set.c -- direct logit attribution of every component
 * towards answer - wrong, averaged over a prompt set (`headscope dla`), with
 * each run's final-norm scale frozen, on the experiment engine.
 */
#include "experiments/experiments.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void hs_dla_set_free(hs_dla_set *r)
{
    if (r == NULL) return;
    free(r->labels);
    free(r->attr);
    free(r->attr_pos);
    memset(r, 0, sizeof *r);
}

typedef struct {
    const hs_model *m;
    const hs_prompts *p;
    const int *tok;   /* (n_pad, t) */
    int n;            /* real prompts */
    int n_pad;        /* the rows run (hs_engine_pad_set) */
    hs_dla_set *r;
    int by_pos;
    size_t stride;    /* n_comp + 3 (+ n_comp * t with by_pos) */
    double *rows;     /* (n, stride): attributions, constant, b_U term, target (, attr_pos's terms) */
} dla_ctx;

static hs_status dla_job(hs_engine *e, hs_engine_worker *w, int j, void *arg)
{
    dla_ctx *dc = arg;
    const int t = e->t, r0 = j * HS_ENGINE_CHUNK, bp = hs_engine_chunk_rows(dc->n_pad, j);
    const int b = dc->n - r0 < bp ? dc->n - r0 : bp;
    static const char *const filt[] = {"hook_embed", "?hook_pos_embed", "blocks.*.hook_resid_pre",
                                       "?blocks.*.ln1.hook_scale", "blocks.*.attn.hook_pattern",
                                       "blocks.*.attn.hook_z", "?blocks.*.hook_mlp_out", "?ln_final.hook_scale",
                                       "logits"};
    hs_status st = hs_run_with_cache(dc->m, w->acts, dc->tok + (size_t)r0 * t, bp, t, filt, 9, NULL, &w->tmp,
                                     &w->err);
    for (int i = 0; i < b && st == HS_OK; i++) {
        const int row = r0 + i;
        hs_dla d;
        st = hs_logit_attribution(dc->m, &w->tmp, i, dc->p->pos[row], dc->p->answer[row],
                                  dc->p->wrong ? dc->p->wrong[row] : -1, &d, &w->err);
        if (st != HS_OK) break;
        if (d.n != dc->r->n_comp) {
            hs_dla_free(&d);
            return hs_fail(&w->err, HS_ERR_INPUT, "dla: %d components, expected %d", d.n, dc->r->n_comp);
        }
        double *o = dc->rows + (size_t)row * dc->stride;
        const float *bU = dc->m->params.b_U;
        const int ta = dc->p->answer[row], tb = dc->p->wrong ? dc->p->wrong[row] : -1;
        const double bu = bU ? (double)bU[ta] - (tb >= 0 ? (double)bU[tb] : 0.0) : 0.0;
        for (int k = 0; k < d.n; k++) o[k] = d.attr[k];
        o[d.n] = d.constant;
        o[d.n + 1] = bu;
        o[d.n + 2] = d.target + bu; /* the logit (difference) itself */
        if (row == 0) memcpy(dc->r->labels, d.labels, (size_t)d.n * sizeof *d.labels);
        hs_dla_free(&d);
        for (int q = 0; q < t && dc->by_pos && st == HS_OK; q++) {
            st = hs_logit_attribution_at(dc->m, &w->tmp, i, q, dc->p->pos[row], dc->p->answer[row],
                                         dc->p->wrong ? dc->p->wrong[row] : -1, &d, &w->err);
            if (st != HS_OK) break;
            for (int k = 0; k < d.n; k++) o[dc->r->n_comp + 3 + (size_t)k * t + q] = d.attr[k];
            hs_dla_free(&d);
        }
    }
    return st;
}

hs_status hs_dla_set_run(const hs_model *m, hs_pool *pool, const hs_prompts *p, int by_position,
                         hs_dla_set *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    if (hs_config_nonadditive(&m->cfg))
        return hs_fail(err, HS_ERR_INPUT, "dla: direct logit attribution splits the residual stream "
                       "into its writers, which it is not the sum of with %s",
                       hs_config_nonadditive(&m->cfg));
    if (p->n < 1) return hs_fail(err, HS_ERR_INPUT, "dla: the prompt set is empty");
    for (int i = 0; i < p->n; i++)
        if (p->answer[i] < 0) return hs_fail(err, HS_ERR_INPUT, "dla: line %d has no \"answer\"", p->line[i]);
    /* the component count: one attribution of the first prompt alone */
    hs_engine e;
    memset(&e, 0, sizeof e);
    int np = 0, *tok = hs_engine_pad_set(p->clean, p->n, p->t, p->t, &np);
    double *rows = NULL;
    hs_status st = tok ? hs_engine_init(&e, m, pool, p->t, err) : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (st == HS_OK) {
        hs_resid_stack rs;
        static const char *const f1[] = {"hook_embed", "?hook_pos_embed", "blocks.*.attn.hook_z",
                                         "?blocks.*.hook_mlp_out", "blocks.*.hook_resid_pre", "logits"};
        st = hs_run_with_cache(m, e.w[0].acts, tok, hs_engine_chunk_rows(np, 0), p->t, f1, 6, NULL, &e.w[0].tmp,
                               err);
        if (st == HS_OK) st = hs_resid_decompose(m, &e.w[0].tmp, 0, p->pos[0], &rs, err);
        if (st == HS_OK) {
            out->n_comp = rs.n;
            hs_resid_stack_free(&rs);
        }
    }
    out->n = p->n;
    out->has_wrong = p->wrong != NULL;
    out->weights = hs_model_weights_name(m);
    out->labels = calloc((size_t)(out->n_comp ? out->n_comp : 1), sizeof *out->labels);
    out->attr = calloc((size_t)(out->n_comp ? out->n_comp : 1), sizeof *out->attr);
    out->t = p->t;
    const size_t stride = (size_t)out->n_comp + 3 + (by_position ? (size_t)out->n_comp * p->t : 0);
    if (st == HS_OK) rows = malloc((size_t)p->n * stride * sizeof *rows);
    if (st == HS_OK && by_position) out->attr_pos = malloc((size_t)out->n_comp * p->t * sizeof *out->attr_pos);
    if (st == HS_OK && (!rows || !out->labels || !out->attr || (by_position && !out->attr_pos)))
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    dla_ctx dc = {m, p, tok, p->n, np, out, by_position != 0, stride, rows};
    if (st == HS_OK) st = hs_engine_for(&e, hs_engine_chunks(p->n), dla_job, &dc, err);
    for (size_t k = 0; k < stride && st == HS_OK; k++) {
        double s = 0.0;
        for (int i = 0; i < p->n; i++) s += rows[(size_t)i * stride + k];
        if (k < (size_t)out->n_comp) out->attr[k] = s / p->n;
        else if (k == (size_t)out->n_comp) out->constant = s / p->n;
        else if (k == (size_t)out->n_comp + 1) out->unembed_bias = s / p->n;
        else if (k == (size_t)out->n_comp + 2) out->target = s / p->n;
        else out->attr_pos[k - out->n_comp - 3] = s / p->n;
    }
    for (int i = 0; i < e.n_workers; i++) hs_cache_free(&e.w[i].tmp);
    hs_engine_free(&e);
    free(rows);
    free(tok);
    if (st != HS_OK) hs_dla_set_free(out);
    return st;
}

cJSON *hs_dla_set_json(const hs_dla_set *r)
{
    cJSON *o = cJSON_CreateObject(), *a = cJSON_CreateArray();
    int ok = o && a && cJSON_AddItemToObject(o, "components", a);
    if (!ok && a && !(o && cJSON_GetObjectItem(o, "components"))) cJSON_Delete(a);
    ok = ok && cJSON_AddStringToObject(o, "direction", r->has_wrong ? "W_U[:, answer] - W_U[:, wrong]" : "W_U[:, answer]") &&
         cJSON_AddStringToObject(o, "final_norm", "frozen: each prompt's ln_final.hook_scale from its run") &&
         cJSON_AddStringToObject(o, "weights", r->weights ? r->weights : "raw") &&
         cJSON_AddNumberToObject(o, "prompts", r->n) && cJSON_AddItemToObject(o, "constant", hs_json_num_or_null(r->constant)) &&
         cJSON_AddItemToObject(o, "unembed_bias_term", hs_json_num_or_null(r->unembed_bias)) &&
         cJSON_AddItemToObject(o, "target", hs_json_num_or_null(r->target)) &&
         cJSON_AddStringToObject(o, "sum", "components' attributions + constant (the final norm's bias term) + "
                                           "unembed_bias_term (b_U[answer] - b_U[wrong]) = target, the mean "
                                           "logit difference (or answer logit)");
    for (int k = 0; k < r->n_comp && ok; k++) {
        cJSON *x = cJSON_CreateObject();
        ok = x && cJSON_AddItemToArray(a, x) && cJSON_AddStringToObject(x, "component", r->labels[k]) &&
             cJSON_AddItemToObject(x, "attribution", hs_json_num_or_null(r->attr[k]));
        cJSON *bp = r->attr_pos ? cJSON_CreateArray() : NULL;
        if (r->attr_pos) ok = ok && bp && cJSON_AddItemToObject(x, "by_position", bp);
        if (r->attr_pos && !ok && bp && !cJSON_GetObjectItem(x, "by_position")) cJSON_Delete(bp);
        for (int q = 0; q < r->t && r->attr_pos && ok; q++)
            ok = cJSON_AddItemToArray(bp, hs_json_num_or_null(r->attr_pos[(size_t)k * r->t + q]));
    }
    if (ok && r->attr_pos)
        ok = cJSON_AddStringToObject(o, "by_position",
                                     "components[k].by_position[q]: the mean over the prompts of what component k "
                                     "writes at position q, through the final norm frozen at the prompt's read "
                                     "position, dotted with its direction (q = the read position: the "
                                     "attribution)") != NULL;
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

void hs_dla_set_summary(const hs_dla_set *r, hs_buf *b)
{
    hs_buf_printf(b, "dla: %d prompts; direct logit attribution towards %s at each prompt's position, the final "
                     "norm's scale frozen from each run; means over the prompts\n",
                  r->n, r->has_wrong ? "answer - wrong" : "the answer");
    double s = 0.0;
    for (int k = 0; k < r->n_comp; k++) {
        hs_buf_printf(b, "  %-14s ", r->labels[k]);
        hs_buf_fixed(b, r->attr[k], 9, 3, 1);
        hs_buf_puts(b, "\n");
        s += r->attr[k];
    }
    char c[HS_FIXED_BUF], u[HS_FIXED_BUF], sum[HS_FIXED_BUF], t[HS_FIXED_BUF];
    hs_buf_printf(b, "  %-14s %9s\n  %-14s %9s\n  sum %s = %s %s\n", HS_DLA_LN_FINAL_B,
                  hs_fmt_fixed(c, r->constant, 3, 1), HS_DLA_B_U, hs_fmt_fixed(u, r->unembed_bias, 3, 1),
                  hs_fmt_fixed(sum, s + r->constant + r->unembed_bias, 3, 1), r->has_wrong ? "LD" : "logit",
                  hs_fmt_fixed(t, r->target, 3, 1));
    if (r->attr_pos == NULL) return;
    hs_buf_printf(b, "\nby position: what each component writes at position q, read through the final norm frozen "
                     "at the prompt's position and its direction; means over the prompts\n%-14s", "");
    for (int q = 0; q < r->t; q++) hs_buf_printf(b, " %7d", q);
    for (int k = 0; k < r->n_comp; k++) {
        hs_buf_printf(b, "\n  %-12s", r->labels[k]);
        for (int q = 0; q < r->t; q++) {
            hs_buf_puts(b, " ");
            hs_buf_fixed(b, r->attr_pos[(size_t)k * r->t + q], 7, 2, 1);
        }
    }
    hs_buf_printf(b, "\n");
}
