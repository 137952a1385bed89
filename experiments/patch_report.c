/*
 * experiments/patch_report.c -- patch's report (experiments/patch.c runs the
 * sweeps, experiments/atp.c the attribution estimate): the acts' names and
 * hook points, the cells' kinds, whether the normalised metric is usable,
 * the JSON (TransformerLens' get_act_patch_* orders) and the text tables.
 */
#include "experiments/patch_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *const hs_patch_act_names[HS_PATCH_N] = {"resid_pre", "attn_out", "mlp_out", "resid_post",
                                                    "z", "q", "k", "v", "pattern"};
/* the hook point of each act in layer l */
const char *const hs_patch_hooks[HS_PATCH_N] = {"blocks.%d.hook_resid_pre", "blocks.%d.hook_attn_out",
                                             "blocks.%d.hook_mlp_out", "blocks.%d.hook_resid_post",
                                             "blocks.%d.attn.hook_z", "blocks.%d.attn.hook_q",
                                             "blocks.%d.attn.hook_k", "blocks.%d.attn.hook_v",
                                             "blocks.%d.attn.hook_pattern"};

int hs_patch_act_is_head(int act)
{
    return act >= HS_PATCH_Z;
}

int hs_patch_act_parse(const char *name)
{
    for (int a = 0; a < HS_PATCH_N; a++)
        if (strcmp(name, hs_patch_act_names[a]) == 0) return a;
    return -1;
}

void hs_patch_report_free(hs_patch_report *r)
{
    if (r == NULL) return;
    for (int a = 0; a < HS_PATCH_N; a++) {
        free(r->metric[a]);
        free(r->ld[a]);
        free(r->metric_pos[a]);
        free(r->ld_pos[a]);
        free(r->atp_metric[a]);
        free(r->atp_metric_pos[a]);
    }
    memset(r, 0, sizeof *r);
}

int hs_patch_by_parse(const char *s)
{
    if (strcmp(s, "head") == 0) return HS_PATCH_BY_HEAD;
    if (strcmp(s, "head,position") == 0) return HS_PATCH_BY_HEAD_POS;
    if (strcmp(s, "both") == 0) return HS_PATCH_BY_BOTH;
    return -1;
}

/* [[v[0..C-1]], ...] of R rows (v row-major). */
static cJSON *matrix(const double *v, int R, int C)
{
    cJSON *a = cJSON_CreateArray();
    for (int r = 0; a && r < R; r++) {
        cJSON *row = cJSON_CreateArray();
        if (!row || !cJSON_AddItemToArray(a, row)) {
            cJSON_Delete(row);
            cJSON_Delete(a);
            return NULL;
        }
        for (int c = 0; c < C; c++)
            if (!cJSON_AddItemToArray(row, hs_json_num_or_null(v[(size_t)r * C + c]))) {
                cJSON_Delete(a);
                return NULL;
            }
    }
    return a;
}

/* v (L, H, T) as [layer][position][head], TransformerLens' get_act_patch_*_by_pos order. */
static cJSON *cube(const double *v, int L, int H, int T)
{
    cJSON *a = cJSON_CreateArray();
    double *t = malloc((size_t)H * T * sizeof *t);
    for (int l = 0; a && t && l < L; l++) {
        for (int h = 0; h < H; h++)
            for (int p = 0; p < T; p++) t[(size_t)p * H + h] = v[((size_t)l * H + h) * T + p];
        cJSON *m = matrix(t, T, H);
        if (!m || !cJSON_AddItemToArray(a, m)) {
            cJSON_Delete(m);
            cJSON_Delete(a);
            free(t);
            return NULL;
        }
    }
    if (t == NULL) {
        cJSON_Delete(a);
        return NULL;
    }
    free(t);
    return a;
}

static int add(cJSON *o, const char *k, cJSON *v)
{
    if (v && cJSON_AddItemToObject(o, k, v)) return 1;
    cJSON_Delete(v);
    return 0;
}

/* The metric's description for the report's method. */
static const char *metric_text(const hs_patch_report *r)
{
    if (r->method == HS_PATCH_ATP)
        return "attribution patching (AtP): the first-order estimate of the normalised logit difference "
               "(LD_patched - LD_corrupted) / (LD_clean - LD_corrupted), LD_patched - LD_corrupted ~ "
               "(a_clean - a_corrupted) . dLD/da at the corrupted run, LD = logit(answer) - logit(wrong) at "
               "each prompt's position, averaged over the prompts";
    return "normalised logit difference (LD_patched - LD_corrupted) / (LD_clean - LD_corrupted), LD = "
           "logit(answer) - logit(wrong) at each prompt's position, averaged over the prompts";
}

/* Method BOTH: act a's AtP cells and Pearson's r beside the exact ones. */
static int add_atp(cJSON *x, const hs_patch_report *r, int a)
{
    if (!hs_patch_act_is_head(a))
        return add(x, "atp_metric", matrix(r->atp_metric[a], r->L, r->t)) &&
               add(x, "pearson", hs_json_num_or_null(r->pearson[a]));
    return add(x, "atp_metric", matrix(r->atp_metric[a], r->L, r->H)) &&
           add(x, "atp_metric_by_position", cube(r->atp_metric_pos[a], r->L, r->H, r->t)) &&
           add(x, "pearson", hs_json_num_or_null(r->pearson[a])) &&
           add(x, "pearson_by_position", hs_json_num_or_null(r->pearson_pos[a]));
}

int hs_patch_usable(const hs_patch_report *r, char *why, size_t cap)
{
    /* the spread of every patched cell's raw LD */
    double lo = INFINITY, hi = -INFINITY;
    for (int a = 0; a < HS_PATCH_N; a++) {
        const int head = hs_patch_act_is_head(a);
        const size_t n = head ? (size_t)r->L * r->H : (size_t)r->L * r->t;
        for (size_t i = 0; (r->acts & (1u << a)) && r->ld[a] && i < n; i++)
            if (isfinite(r->ld[a][i])) lo = fmin(lo, r->ld[a][i]), hi = fmax(hi, r->ld[a][i]);
        for (size_t i = 0; (r->acts & (1u << a)) && head && r->ld_pos[a] && i < n * r->t; i++)
            if (isfinite(r->ld_pos[a][i])) lo = fmin(lo, r->ld_pos[a][i]), hi = fmax(hi, r->ld_pos[a][i]);
    }
    const double gap = fabs(r->ld_clean - r->ld_corr);
    char c[HS_FIXED_BUF], k[HS_FIXED_BUF];
    if (isfinite(r->ld_clean) && isfinite(r->ld_corr) && gap > 0 && hi - lo > HS_PATCH_GAP_SPREAD * gap) {
        snprintf(why, cap, "the clean and corrupted logit differences are too close (LD %s clean, %s "
                 "corrupted: a gap of %.2g) against the spread of the patched cells' LD (%.3f, %.0f times the "
                 "gap; the bound is %g times), so the normalised LD is noise over a small number; the raw LD "
                 "of every cell is in the JSON",
                 hs_fmt_fixed(c, r->ld_clean, 3, 1), hs_fmt_fixed(k, r->ld_corr, 3, 1), gap, hi - lo,
                 (hi - lo) / gap, HS_PATCH_GAP_SPREAD);
        return 0;
    }
    if (isfinite(r->ld_clean) && isfinite(r->ld_corr) && r->ld_clean != r->ld_corr) {
        if (cap) why[0] = '\0';
        return 1;
    }
    if (r->ld_clean == r->ld_corr)
        snprintf(why, cap, "clean and corrupted logit differences coincide (LD %s both), so the "
                 "normalised LD (LD_patched - LD_corrupted) / (LD_clean - LD_corrupted) is undefined; "
                 "the raw LD of every cell is in the JSON", hs_fmt_fixed(c, r->ld_clean, 3, 1));
    else
        snprintf(why, cap, "a logit difference is not finite (clean %g, corrupted %g)", r->ld_clean,
                 r->ld_corr);
    return 0;
}

int hs_patch_gap_note(const hs_patch_report *r, char *why, size_t cap)
{
    if (cap) why[0] = '\0';
    char unused[8];
    if (!hs_patch_usable(r, unused, sizeof unused)) return 0;
    const double gap = r->ld_clean - r->ld_corr;
    char c[HS_FIXED_BUF], k[HS_FIXED_BUF];
    hs_fmt_fixed(c, r->ld_clean, 3, 1);
    hs_fmt_fixed(k, r->ld_corr, 3, 1);
    if (gap < 0)
        snprintf(why, cap, "the clean LD (%s) is below the corrupted LD (%s): the clean prompts do not "
                 "favour the answer over the wrong token more than the corrupted ones do (answer and wrong "
                 "swapped, or a model that does not do the task), so a cell near 1 moves the LD away from "
                 "the answer", c, k);
    else if (gap < HS_PATCH_GAP_MIN)
        snprintf(why, cap, "the clean - corrupted gap is %.3f logits (LD %s clean, %s corrupted), under "
                 "%g: the normalised LD divides by a difference within what one prompt moves by chance",
                 gap, c, k, HS_PATCH_GAP_MIN);
    else
        return 0;
    return 1;
}

cJSON *hs_patch_json(const hs_patch_report *r)
{
    cJSON *o = cJSON_CreateObject(), *acts = cJSON_CreateObject();
    char why[512];
    const int usable = hs_patch_usable(r, why, sizeof why);
    int ok = o && acts && (r->method == HS_PATCH_EXACT ||
                           cJSON_AddStringToObject(o, "method", hs_patch_method_names[r->method])) &&
             cJSON_AddStringToObject(o, "metric", metric_text(r)) &&
             add(o, "ld_clean", hs_json_num_or_null(r->ld_clean)) && add(o, "ld_corrupted", hs_json_num_or_null(r->ld_corr)) &&
             cJSON_AddBoolToObject(o, "usable", usable) &&
             (usable || cJSON_AddStringToObject(o, "why_not_usable", why)) &&
             (!hs_patch_gap_note(r, why, sizeof why) || cJSON_AddStringToObject(o, "gap_note", why)) &&
             cJSON_AddNumberToObject(o, "prompts", r->n) && cJSON_AddNumberToObject(o, "tokens", r->t);
    for (int a = 0; a < HS_PATCH_N && ok; a++) {
        if (!(r->acts & (1u << a))) continue;
        cJSON *x = cJSON_CreateObject();
        ok = add(acts, hs_patch_act_names[a], x);
        if (!ok) break;
        char hook[64];
        snprintf(hook, sizeof hook, hs_patch_hooks[a], 0);
        hook[7] = 'l'; /* "blocks.l...." */
        ok = cJSON_AddStringToObject(x, "hook", hook) != NULL;
        if (hs_patch_act_is_head(a)) {
            const char *by = r->by == HS_PATCH_BY_HEAD       ? "head (all positions) [layer][head]"
                             : r->by == HS_PATCH_BY_HEAD_POS ? "by_position [layer][position][head], TransformerLens' "
                                                                "get_act_patch_*_by_pos order"
                                                             : "head (all positions) [layer][head]; by_position "
                                                               "[layer][position][head], TransformerLens' "
                                                               "get_act_patch_*_by_pos order";
            ok = ok && cJSON_AddStringToObject(x, "by", by);
            if (r->metric[a])
                ok = ok && add(x, "metric", matrix(r->metric[a], r->L, r->H)) &&
                     add(x, "ld", matrix(r->ld[a], r->L, r->H));
            if (r->metric_pos[a])
                ok = ok && add(x, "metric_by_position", cube(r->metric_pos[a], r->L, r->H, r->t)) &&
                     add(x, "ld_by_position", cube(r->ld_pos[a], r->L, r->H, r->t));
        } else {
            ok = ok && cJSON_AddStringToObject(x, "by", "layer x position [layer][position]") &&
                 add(x, "metric", matrix(r->metric[a], r->L, r->t)) && add(x, "ld", matrix(r->ld[a], r->L, r->t));
        }
        if (ok && r->method == HS_PATCH_BOTH) ok = add_atp(x, r, a);
    }
    if (ok) ok = add(o, "acts", acts);
    else cJSON_Delete(acts);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* One table cell: a space, then v as " %+<width>.2f" with no sign on a
 * value that rounds to zero (hs_buf_fixed). */
static void cell(hs_buf *b, double v, int width)
{
    hs_buf_puts(b, " ");
    hs_buf_fixed(b, v, width, 2, 1);
}

/* Act a's table of metric (and metric_pos for a head act); what: "" for
 * the report's own values, ", AtP estimate" beside the exact ones. */
static void act_table(const hs_patch_report *r, int a, const double *metric, const double *metric_pos,
                      const char *what, hs_buf *b)
{
    char hook[64];
    snprintf(hook, sizeof hook, hs_patch_hooks[a], 0);
    hook[7] = 'l';
    if (!hs_patch_act_is_head(a)) {
        hs_buf_printf(b, "\n%s (%s)%s, layer x position:\n%-6s", hs_patch_act_names[a], hook, what, "");
        for (int p = 0; p < r->t; p++) hs_buf_printf(b, " %6d", p);
        hs_buf_printf(b, "\n");
        for (int l = 0; l < r->L; l++) {
            hs_buf_printf(b, "L%-5d", l);
            for (int p = 0; p < r->t; p++) cell(b, metric[l * r->t + p], 6);
            hs_buf_printf(b, "\n");
        }
        return;
    }
    if (metric_pos == NULL) { /* --by head */
        hs_buf_printf(b, "\n%s (%s)%s, by head, all positions:\n%-6s", hs_patch_act_names[a], hook, what, "");
        for (int h = 0; h < r->H; h++) { /* right-aligned over the %+7.2f cells, H10 too */
            char hn[16];
            snprintf(hn, sizeof hn, "H%d", h);
            hs_buf_printf(b, " %7s", hn);
        }
        hs_buf_printf(b, "\n");
        for (int l = 0; l < r->L; l++) {
            hs_buf_printf(b, "L%-5d", l);
            for (int h = 0; h < r->H; h++) cell(b, metric[l * r->H + h], 7);
            hs_buf_printf(b, "\n");
        }
        return;
    }
    if (metric == NULL)
        hs_buf_printf(b, "\n%s (%s)%s, by head, each position\n%-6s", hs_patch_act_names[a], hook, what, "");
    else
        hs_buf_printf(b, "\n%s (%s)%s, by head: all positions | each position\n%-6s %6s |", hs_patch_act_names[a],
                      hook, what, "", "all");
    for (int p = 0; p < r->t; p++) hs_buf_printf(b, " %6d", p);
    hs_buf_printf(b, "\n");
    for (int l = 0; l < r->L; l++)
        for (int h = 0; h < r->H; h++) {
            char name[24];
            snprintf(name, sizeof name, "L%dH%d", l, h);
            hs_buf_printf(b, "%-6s", name);
            if (metric) {
                cell(b, metric[l * r->H + h], 6);
                hs_buf_puts(b, " |");
            }
            for (int p = 0; p < r->t; p++) cell(b, metric_pos[((size_t)l * r->H + h) * r->t + p], 6);
            hs_buf_printf(b, "\n");
        }
}

void hs_patch_summary(const hs_patch_report *r, hs_buf *b)
{
    char c[HS_FIXED_BUF], k[HS_FIXED_BUF];
    hs_buf_printf(b, "patch: %d prompt%s of %d tokens, clean -> corrupted; LD = logit(answer) - logit(wrong): "
                     "clean %s, corrupted %s\n",
                  r->n, r->n == 1 ? "" : "s", r->t, hs_fmt_fixed(c, r->ld_clean, 3, 1),
                  hs_fmt_fixed(k, r->ld_corr, 3, 1));
    if (r->method == HS_PATCH_ATP)
        hs_buf_printf(b, "values: attribution patching (AtP), the first-order estimate of the normalised LD "
                         "(a_clean - a_corrupted) . dLD/da at the corrupted run / (LD_clean - LD_corrupted)\n");
    else if (r->method == HS_PATCH_BOTH)
        hs_buf_printf(b, "values: each act's exact sweep, then its AtP estimate ((a_clean - a_corrupted) . dLD/da "
                         "at the corrupted run, normalised alike) and Pearson's r between them\n");
    char why[512];
    if (!hs_patch_usable(r, why, sizeof why)) {
        hs_buf_printf(b, "not usable: %s\n", why);
        return;
    }
    if (hs_patch_gap_note(r, why, sizeof why)) hs_buf_printf(b, "note: %s\n", why);
    hs_buf_printf(b, "values: normalised LD (0 = corrupted, 1 = clean restored); layers, heads and positions "
                     "count from 0\n");
    for (int a = 0; a < HS_PATCH_N; a++) {
        if (!(r->acts & (1u << a))) continue;
        act_table(r, a, r->metric[a], r->metric_pos[a], "", b);
        if (r->method != HS_PATCH_BOTH) continue;
        act_table(r, a, r->atp_metric[a], r->atp_metric_pos[a], ", AtP estimate", b);
        const int head = hs_patch_act_is_head(a);
        const int cells = head ? r->L * r->H : r->L * r->t;
        char rs[HS_FIXED_BUF], rp[HS_FIXED_BUF];
        if (isnan(r->pearson[a])) snprintf(rs, sizeof rs, "undefined");
        else hs_fmt_fixed(rs, r->pearson[a], 3, 1);
        if (isnan(r->pearson_pos[a])) snprintf(rp, sizeof rp, "undefined");
        else hs_fmt_fixed(rp, r->pearson_pos[a], 3, 1);
        hs_buf_printf(b, "Pearson r, exact vs AtP: %s over %d cells", rs, cells);
        if (head) hs_buf_printf(b, "; by position %s over %d cells", rp, cells * r->t);
        hs_buf_printf(b, "\n");
    }
}
