/*
 * cli/cmd_circuit_induction.c -- `headscope circuit` on an induction-task
 * model: the induction-circuit check (tasks/ hs_ind_circuit_run), its text
 * summary or JSON on stdout, and with --out DIR report.json and figures
 * (viz/). Holds no analysis.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "expout.h"
#include "figopts.h"
#include "util.h"
#include "viz/viz.h"

static int fig(hs_outdir *od, const hs_config *cfg, const char *model, int kind, const char *stem,
               const float *m, size_t R, size_t C, const char *const *rl, const char *const *cl,
               const char *title, const char *xl, const char *yl, const char *shows)
{
    const cli_fig_ctx x = {od, model, cfg};
    const hs_fig_kind k = kind == 1 ? HS_FIG_BARS : kind == 2 ? HS_FIG_NONNEG : HS_FIG_SIGNED;
    return cli_out_fig(&x, k, stem, m, R, C, rl, cl, title, xl, yl, kind == 2 ? 1.0 : 0.0,
                       kind == 2 ? "score" : NULL, NULL, shows);
}

/* The named heads' attention on held-out sequence 0, side by side. */
static int attention_fig(hs_outdir *od, const hs_ind_circuit_report *r, const hs_induction *t,
                         const char *model)
{
    const int T = t->p.n_ctx;
    if (!r->attn_prev || T > HS_VIZ_MAX_TOKENS) return 0;
    const hs_figopts *fo = od->fo;
    hs_error err = {0};
    int rc = 1;
    float *pat = malloc((size_t)2 * T * T * sizeof *pat);
    hs_labels lab;
    hs_labels_init(&lab, (size_t)T);
    for (int i = 0; i < T; i++) hs_labels_set(&lab, (size_t)i, "%s", hs_tok_str(t->vocab, t->heldout_tokens[i]));
    const char **tok = lab.at;
    hs_viz_figure *f = NULL;
    cJSON *j = NULL;
    char n0[64], n1[64], title[200];
    if (!pat || lab.oom) {
        fprintf(stderr, "headscope %s: out of memory\n", od->cmd);
        goto done;
    }
    memcpy(pat, r->attn_prev, (size_t)T * T * sizeof *pat);
    memcpy(pat + (size_t)T * T, r->attn_ind, (size_t)T * T * sizeof *pat);
    snprintf(n0, sizeof n0, "%s prev-token", r->heads[r->prev_best.head].name);
    snprintf(n1, sizeof n1, "%s induction", r->heads[r->ind_best.layer * r->H + r->ind_best.head].name);
    const char *heads[2] = {n0, n1}, *row[1] = {""};
    snprintf(title, sizeof title, "held-out sequence 0: segment at %d and %d, length %d", t->heldout[0].start1,
             t->heldout[0].start2, t->heldout[0].len);
    hs_viz_options vo = hs_figopts_for(fo, HS_FIG_ATTENTION, 1.0);
    if (hs_figopts_images(fo) &&
        hs_viz_grid_figure_labeled(&f, pat, 1, 2, (size_t)T, tok, row, heads, title, &vo, &err) != HS_OK) {
        cli_error(od->cmd, &err);
        goto done;
    }
    if (hs_figopts_data(fo)) {
        if (hs_viz_attention_json(&j, pat, 2, (size_t)T, tok, heads, title, &err) != HS_OK) {
            cli_error(od->cmd, &err);
            goto done;
        }
        cJSON_AddStringToObject(j, "model", model);
    }
    rc = cli_out_figure(od, "attention", &f, j,
                        "the named previous-token and induction heads' patterns on held-out sequence 0");
done:
    cJSON_Delete(j);
    hs_viz_figure_destroy(f);
    free(pat);
    hs_labels_free(&lab);
    return rc;
}

static int write_outputs(hs_outdir *od, const hs_ind_circuit_report *r, const hs_induction *t,
                         const char *model)
{
    const int L = r->L, H = r->H, LH = L * H;
    hs_error err = {0};
    int rc = 1;
    char *json = NULL;
    cJSON *rep = NULL;
    float *m = calloc((size_t)LH * LH * 3 + 16, sizeof *m);
    const char **rl = calloc((size_t)LH + 8, sizeof *rl), **cl = calloc((size_t)LH + 8, sizeof *cl);
    char (*lab)[48] = calloc((size_t)LH + 8, sizeof *lab);
    if (!m || !rl || !cl || !lab) {
        fprintf(stderr, "headscope %s: out of memory\n", od->cmd);
        goto done;
    }
    if (hs_ind_circuit_report_json(r, model, &json, &err) != HS_OK) {
        cli_error(od->cmd, &err);
        goto done;
    }
    if (!(rep = cJSON_Parse(json))) {
        fprintf(stderr, "headscope %s: out of memory\n", od->cmd);
        goto done;
    }
    if (cli_out_json(od, "report", rep, "every number of the induction-circuit check: per-head scores, roles, "
                     "composition, path patching, copying, ablation, thresholds, verdict"))
        goto done;
    static const char *const SC[2] = {"previous-token", "induction"};
    for (int k = 0; k < LH; k++) {
        rl[k] = r->heads[k].name;
        m[k * 2] = (float)r->heads[k].prev_score;
        m[k * 2 + 1] = (float)r->heads[k].ind_score;
    }
    if (fig(od, &r->cfg, model, 2, "heads", m, (size_t)LH, 2, rl, SC,
            "head detector scores (held-out sequences)", "score", "head",
            "each head's previous-token score (TL mul) and induction score (attention from the second "
            "occurrence to the token after the first)"))
        goto done;
    for (int k = 0; k < LH; k++) m[k] = (float)(100.0 * (r->heads[k].acc_ablated - r->acc));
    size_t nb = (size_t)LH;
    if (isfinite(r->acc_prev_ablated)) {
        snprintf(lab[nb], sizeof lab[0], "previous-token heads");
        m[nb++] = (float)(100.0 * (r->acc_prev_ablated - r->acc));
    }
    if (isfinite(r->acc_ind_ablated)) {
        snprintf(lab[nb], sizeof lab[0], "induction heads");
        m[nb++] = (float)(100.0 * (r->acc_ind_ablated - r->acc));
    }
    for (size_t i = (size_t)LH; i < nb; i++) rl[i] = lab[i];
    if (fig(od, &r->cfg, model, 1, "ablation", m, nb, 1, rl, NULL,
            "repeated-segment accuracy change with mean ablation", "accuracy change, points", NULL,
            "held-out repeated-segment accuracy change (points) when each head, and each role's heads "
            "together, are mean-ablated"))
        goto done;
    for (int k = 0; k < LH; k++) m[k] = (float)r->heads[k].copying;
    if (fig(od, &r->cfg, model, 1, "copying", m, (size_t)LH, 1, rl, NULL, "OV copying score per head (LN folded)",
            "copying score (sum of eigenvalues / sum of |eigenvalues|)", NULL,
            "each head's eigenvalue copying score of its full OV circuit"))
        goto done;
    if (isfinite(r->path[1])) {
        static const char *const PQ[3] = {"queries", "keys", "values"};
        for (int w = 0; w < 3; w++) m[w] = (float)r->path[w];
        char title[160];
        snprintf(title, sizeof title, "path patching %s -> %s (normalised log-probability)",
                 r->heads[r->prev_best.head].name, r->heads[r->ind_best.layer * H + r->ind_best.head].name);
        if (fig(od, &r->cfg, model, 1, "path_patching", m, 3, 1, PQ, NULL, title,
                "restored fraction (1 = clean)", NULL,
                "the previous-token head's clean output patched into only the induction head's queries, "
                "keys or values (corrupted run: the previous-token head mean-ablated)"))
            goto done;
    }
    if (L > 1 && r->comp.k) {
        for (int h1 = 0; h1 < H; h1++)
            for (int k2 = H; k2 < LH; k2++) {
                const size_t i = (((size_t)0 * H + (size_t)h1) * L + (size_t)(k2 / H)) * H + (size_t)(k2 % H);
                m[h1 * (LH - H) + (k2 - H)] = (float)(r->comp.k[i] - r->comp.baseline);
                cl[k2 - H] = r->heads[k2].name;
            }
        char title[160];
        snprintf(title, sizeof title, "K-composition minus random baseline %.3f (LN folded)", r->comp.baseline);
        if (fig(od, &r->cfg, model, 0, "composition_K", m, (size_t)H, (size_t)(LH - H), rl, cl, title,
                "receiver (later head)", "sender (layer 0)",
                "K-composition scores of layer-0 heads into later heads minus the random baseline"))
            goto done;
    }
    if (attention_fig(od, r, t, model)) goto done;
    {
        cJSON *extra = cJSON_CreateObject();
        int ok = extra && cJSON_AddStringToObject(extra, "model", model) &&
                 cJSON_AddStringToObject(extra, "task", "induction") &&
                 cJSON_AddBoolToObject(extra, "holds", r->holds);
        if (cli_out_index_with(od, extra, ok)) goto done;
    }
    rc = 0;
done:
    free(json);
    cJSON_Delete(rep);
    free(m);
    free(rl);
    free(cl);
    free(lab);
    return rc;
}

int cli_circuit_induction(const char *cmd, const char *model, const hs_loaded *ld, int json,
                          hs_outdir *od, int comp_draws)
{
    hs_error err = {0};
    hs_ind_circuit_opts o = hs_ind_circuit_opts_default();
    if (comp_draws > 0) o.comp_draws = comp_draws;
    hs_ind_circuit_report r;
    if (hs_ind_circuit_run(ld->model, ld->ind, &o, &r, &err) != HS_OK) return cli_error(cmd, &err);
    char *text = NULL;
    int rc = 0;
    if ((json ? hs_ind_circuit_report_json(&r, model, &text, &err) : hs_ind_circuit_summary(&r, &text, &err)) != HS_OK)
        rc = cli_error(cmd, &err);
    if (!rc && od && od->dir && write_outputs(od, &r, ld->ind, model)) rc = 1;
    if (!rc) {
        fputs(text, stdout);
        if (json) fputc('\n', stdout);
        else if (od && od->dir) {
            fputc('\n', stdout);
            cli_out_say_wrote(od, "report.json, figures");
        }
        rc = cli_stdout_done(cmd);
    }
    free(text);
    hs_ind_circuit_report_free(&r);
    return rc;
}
