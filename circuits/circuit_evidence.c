/*
 * circuits/circuit_evidence.c -- the referent-circuit check's evidence read from
 * the clean run's cache and the weights (circuits.h, "What hs_circuit_run
 * computes"): the layer-0 score invariant, each head's attention at 14 by
 * role, its direct logit attribution towards x and y, its OV copying score.
 * The run context and the rows are circuits_internal.h's hs_circ_ctx.
 */
#include "circuits/circuits_internal.h"

#include <math.h>
#include <string.h>

#define T_RUN HS_CIRC_T  /* positions 0..14 */
#define Q HS_WG_POS_QUERY

void hs_circ_invariant(const hs_circ_ctx *c, hs_circuit_report *r)
{
    const hs_cache_entry *s0 = hs_cache_get(&c->clean, "blocks.0.attn.hook_attn_scores");
    const hs_cache_entry *s1 = c->L > 1 ? hs_cache_get(&c->clean, "blocks.1.attn.hook_attn_scores") : NULL;
    r->inv_l1_mean_dev = NAN;
    r->inv_l1_max_dev = NAN;
    r->inv_max_dev_same_nouns = NAN;
    r->inv_max_dev_other_nouns = NAN;
    r->inv_score_mean_abs = NAN;
    if (s0 == NULL) return; /* uniform attention */
    r->inv_applicable = 1;
    const int H = c->H, n = c->n;
    const size_t TT = (size_t)T_RUN * T_RUN;
    double mx_same = 0.0, mx_other = 0.0, l1_sum = 0.0, l1_max = 0.0, abs_sum = 0.0;
    size_t cells = 0, np_same = 0, np_other = 0;
    for (int i = 0; i < n; i++)
        for (int h = 0; h < H; h++)
            for (int j = 0; j <= Q; j++)
                abs_sum += fabs(s0->data[((size_t)i * H + h) * TT + (size_t)Q * T_RUN + j]);
    r->inv_score_mean_abs = abs_sum / ((double)n * H * (Q + 1));
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            const int same = c->ex[a]->x == c->ex[b]->x && c->ex[a]->y == c->ex[b]->y;
            if (same) np_same++; else np_other++;
            const int *ta = c->tok_clean + (size_t)a * T_RUN, *tb = c->tok_clean + (size_t)b * T_RUN;
            for (int j = 0; j <= Q; j++) {
                if (ta[j] != tb[j]) continue;
                for (int h = 0; h < H; h++) {
                    const size_t oa = ((size_t)a * H + h) * TT + (size_t)Q * T_RUN + j;
                    const size_t ob = ((size_t)b * H + h) * TT + (size_t)Q * T_RUN + j;
                    double d0 = fabs((double)s0->data[oa] - (double)s0->data[ob]);
                    if (same) { if (d0 > mx_same) mx_same = d0; }
                    else if (d0 > mx_other) mx_other = d0;
                    if (s1) {
                        double d1 = fabs((double)s1->data[oa] - (double)s1->data[ob]);
                        l1_sum += d1;
                        if (d1 > l1_max) l1_max = d1;
                    }
                    cells++;
                }
            }
        }
    r->inv_pairs_same_nouns = np_same;
    r->inv_pairs_other_nouns = np_other;
    r->inv_cells = cells;
    r->inv_max_dev_same_nouns = mx_same;
    r->inv_max_dev_other_nouns = mx_other;
    if (s1 && cells) {
        r->inv_l1_mean_dev = l1_sum / (double)cells;
        r->inv_l1_max_dev = l1_max;
    }
}

void hs_circ_attention(const hs_circ_ctx *c, hs_circuit_report *r)
{
    const int L = c->L, H = c->H, n = c->n;
    const size_t TT = (size_t)T_RUN * T_RUN;
    for (int l = 0; l < L; l++) {
        const hs_cache_entry *p = hs_cache_getf(&c->clean, "blocks.%d.attn.hook_pattern", l);
        HS_ASSERT(p != NULL);
        for (int h = 0; h < H; h++) {
            hs_circuit_head *hd = &r->heads[l * H + h];
            double sum[3][4] = {{0}}, row[2][T_RUN];
            memset(row, 0, sizeof row);
            for (int i = 0; i < n; i++) {
                const int g = i < c->np ? HS_CIRC_CROSSER : HS_CIRC_CROSSED;
                const float *a = p->data + ((size_t)i * H + h) * TT + (size_t)Q * T_RUN;
                double el = 0.0;
                for (int j = 0; j <= Q; j++) {
                    row[g][j] += a[j];
                    if (j != HS_WG_POS_X && j != HS_WG_POS_Y && j != HS_WG_POS_ADJ) el += a[j];
                }
                const double v[4] = {a[HS_WG_POS_X], a[HS_WG_POS_Y], a[HS_WG_POS_ADJ], el};
                for (int k = 0; k < 4; k++) {
                    sum[g][k] += v[k];
                    sum[HS_CIRC_ALL][k] += v[k];
                }
            }
            for (int k = 0; k < 4; k++) {
                hd->attn[HS_CIRC_CROSSER][k] = sum[HS_CIRC_CROSSER][k] / c->np;
                hd->attn[HS_CIRC_CROSSED][k] = sum[HS_CIRC_CROSSED][k] / c->np;
                hd->attn[HS_CIRC_ALL][k] = sum[HS_CIRC_ALL][k] / n;
            }
            for (int g = 0; g < 2; g++)
                for (int j = 0; j < T_RUN; j++) {
                    float v = (float)(row[g][j] / c->np);
                    r->attn_rows[(((size_t)l * H + h) * 2 + g) * T_RUN + j] = v;
                    r->attn_rows_avg[((size_t)l * 2 + g) * T_RUN + j] += v / (float)H;
                }
        }
    }
}

/* DLA of every head at 14 towards x and towards y (hs_logit_attribution). */
hs_status hs_circ_dla(const hs_circ_ctx *c, hs_circuit_report *r, hs_error *err)
{
    const int L = c->L, H = c->H, n = c->n;
    double (*acc)[3][4] = calloc((size_t)L * H, sizeof *acc);
    int *idx = malloc((size_t)L * H * sizeof *idx);
    hs_status st = HS_OK;
    if (!acc || !idx) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < n && st == HS_OK; i++) {
        const int g = i < c->np ? HS_CIRC_CROSSER : HS_CIRC_CROSSED;
        const int xid = c->ex[i]->tokens[HS_WG_POS_X], yid = c->ex[i]->tokens[HS_WG_POS_Y];
        hs_dla dx, dy;
        if ((st = hs_logit_attribution(c->m, &c->clean, i, Q, xid, -1, &dx, err)) != HS_OK) break;
        if ((st = hs_logit_attribution(c->m, &c->clean, i, Q, yid, -1, &dy, err)) != HS_OK) {
            hs_dla_free(&dx);
            break;
        }
        if (i == 0) {
            for (int k = 0; k < L * H; k++) {
                idx[k] = -1;
                for (int j = 0; j < dx.n; j++)
                    if (strcmp(dx.labels[j], r->heads[k].name) == 0) idx[k] = j;
                HS_ASSERT(idx[k] >= 0);
            }
        }
        for (int k = 0; k < L * H; k++) {
            const double ax = dx.attr[idx[k]], ay = dy.attr[idx[k]];
            const double v[4] = {ax, ay, ax - ay, g == HS_CIRC_CROSSER ? ax - ay : ay - ax};
            for (int d = 0; d < 4; d++) {
                acc[k][g][d] += v[d];
                acc[k][HS_CIRC_ALL][d] += v[d];
            }
        }
        hs_dla_free(&dx);
        hs_dla_free(&dy);
    }
    if (st == HS_OK)
        for (int k = 0; k < L * H; k++)
            for (int d = 0; d < 4; d++) {
                r->heads[k].dla[HS_CIRC_CROSSER][d] = acc[k][HS_CIRC_CROSSER][d] / c->np;
                r->heads[k].dla[HS_CIRC_CROSSED][d] = acc[k][HS_CIRC_CROSSED][d] / c->np;
                r->heads[k].dla[HS_CIRC_ALL][d] = acc[k][HS_CIRC_ALL][d] / n;
            }
done:
    free(acc);
    free(idx);
    return st;
}

hs_status hs_circ_copying(const hs_model *m, hs_circuit_report *r, hs_error *err)
{
    hs_status st = HS_OK;
    for (int k = 0; k < r->L * r->H && st == HS_OK; k++) {
        hs_head hh = {r->heads[k].layer, r->heads[k].head};
        st = hs_copying_score(m, hh, HS_FOLD_LN, &r->heads[k].copying, &r->heads[k].copying_pos, err);
    }
    return st;
}
