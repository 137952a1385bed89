/*
 * bench/bench_quality.c -- how well attribution ranks what exact patching
 * measures, on one model and prompt set (issue 25, "Approximation
 * quality"), and the faithfulness curves of the discovery methods:
 *
 *   AtP against patch's exact sweep, per activation: hs_patch_run_method
 *     with HS_PATCH_BOTH over every act the model has (`patch --method
 *     both`); Spearman's rho (and the report's Pearson r) between the exact
 *     cells and AtP's over each act's cells: layer x position for resid_pre,
 *     attn_out, mlp_out, resid_post; head (all positions) and head x
 *     position for z, q, k, v, pattern.
 *   EAP and EAP-IG against exact edge patching over every edge of the
 *     graph: hs_edge_patch_scores (each edge ablated alone, resample
 *     ablation), hs_eap_scores with 0 and --ig-steps steps; Spearman's rho
 *     of the signed scores (every score is m(edge corrupted) - m(clean):
 *     the same sign on both sides) and of |score| (the ranking a circuit is
 *     cut from), Pearson's r of the signed scores.
 *   The faithfulness curves (hs_faith_curve_run at MIB's sizes; CPR, CMD)
 *     of the rankings of exact patching, EAP, EAP-IG and ACDC (hs_acdc_run
 *     at --tau: its edges by |metric change when tried|, its kept edges
 *     first, as `discover --method acdc` draws it), and ACDC's own circuit.
 *
 * Spearman's rho (C. Spearman 1904, "The proof and measurement of
 * association between two things", American Journal of Psychology 15(1),
 * 72-101) is Pearson's r of the ranks, tied values taking the mean of the
 * ranks they span (scipy.stats.spearmanr's default); pairs where either
 * value is NaN (a cell patch leaves undefined) or both are exactly 0 (the
 * clean and corrupted activations are the same bits there) are left out;
 * NaN when fewer than 3 pairs remain or one side is constant. Metric: logit-diff;
 * ablation: resample (the corrupted partners); every number bit-identical
 * for any thread count (the library's promise), the times not.
 *
 * usage: bench_quality MODEL PAIRS.jsonl [--threads N] [--ig-steps M]
 *                      [--tau X] [--json FILE] [--figure PREFIX] [--title S]
 *                      [--dpi D]
 *   --figure writes PREFIX.png (--dpi, default 300), PREFIX.svg and
 *   PREFIX.json: the four curves in one figure (hs_faithfulness_figure).
 *        bench_quality --induction-pairs MODEL N OUT.jsonl
 *   writes the prompt set of an induction model (headscope train --task
 *   induction): its first N held-out sequences (the task's test set: never
 *   trained on) as clean prompts; each read at p = start2 + len - 2, the
 *   last position of the repeat whose next token the first occurrence
 *   predicts (answer: the segment's last symbol); corrupted: the same
 *   sequence with the first occurrence's len symbols replaced by len
 *   distinct symbols not in the segment (drawn with the task's generator
 *   seeded by the sequence's index), so nothing before p repeats and the
 *   corrupted sequence is one of the task's fillers; wrong: the symbol that
 *   replaced the answer's first occurrence.
 */
#include "bench_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "discovery/discovery.h"
#include "experiments/experiments.h"
#include "tasks/tasks.h"

#define N_METHODS 4 /* the curves: exact, EAP, EAP-IG, ACDC */

static int fail(const char *what, const hs_error *err)
{
    fprintf(stderr, "bench_quality: %s%s%s\n", what ? what : "", what ? ": " : "", err->msg);
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Spearman's rho                                                            */

typedef struct {
    double v;
    size_t i;
} keyed;

static int by_value(const void *a, const void *b)
{
    const double x = ((const keyed *)a)->v, y = ((const keyed *)b)->v;
    return (x > y) - (x < y);
}

/* r[i] <- the rank (1..n) of v[i] (no NaN), ties the mean of the ranks they
 * span. 1 when memory runs out. */
static int ranks(const double *v, size_t n, double *r)
{
    keyed *k = malloc(n * sizeof *k);
    if (k == NULL) return 1;
    for (size_t i = 0; i < n; i++) k[i] = (keyed){v[i], i};
    qsort(k, n, sizeof *k, by_value);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && k[j].v == k[i].v) j++;
        for (size_t q = i; q < j; q++) r[k[q].i] = 0.5 * (double)(i + 1 + j); /* the mean of i+1 .. j */
        i = j;
    }
    free(k);
    return 0;
}

/* Pearson's r of x and y (n); NaN when either is constant. */
static double pearson(const double *x, const double *y, size_t n)
{
    double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
    for (size_t i = 0; i < n; i++) mx += x[i], my += y[i];
    mx /= (double)n, my /= (double)n;
    for (size_t i = 0; i < n; i++) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
        syy += (y[i] - my) * (y[i] - my);
    }
    return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : NAN;
}

/* How approx (n) agrees with exact (n) over the pairs where neither is NaN
 * and not both are exactly 0 (a cell where the clean and the corrupted
 * activation are the same bits, e.g. a position before the first token the
 * corruption changes: both sides are 0 by construction, and hundreds of such
 * ties would say nothing yet lift rho): {"cells": pairs, "spearman": rho of the values, "spearman_abs": rho of
 * their magnitudes, "pearson": r of the values} (null where undefined:
 * fewer than 3 pairs, a constant side); NULL when memory runs out. */
static cJSON *agreement(const double *exact, const double *approx, size_t n)
{
    double *x = malloc(4 * n * sizeof *x), *y = x + n, *rx = y + n, *ry = rx + n;
    double rho = NAN, rho_abs = NAN, r = NAN;
    size_t m = 0;
    if (x == NULL) return NULL;
    for (size_t i = 0; i < n; i++)
        if (!isnan(exact[i]) && !isnan(approx[i]) && (exact[i] != 0.0 || approx[i] != 0.0))
            x[m] = exact[i], y[m++] = approx[i];
    int bad = 0;
    if (m >= 3) {
        r = pearson(x, y, m);
        bad = ranks(x, m, rx) || ranks(y, m, ry);
        if (!bad) rho = pearson(rx, ry, m);
        for (size_t i = 0; i < m; i++) x[i] = fabs(x[i]), y[i] = fabs(y[i]);
        bad = bad || ranks(x, m, rx) || ranks(y, m, ry);
        if (!bad) rho_abs = pearson(rx, ry, m);
    }
    free(x);
    cJSON *o = bad ? NULL : cJSON_CreateObject();
    if (o == NULL) return NULL;
    cJSON_AddNumberToObject(o, "cells", (double)m);
    cJSON_AddItemToObject(o, "spearman", hs_json_num_or_null(rho));
    cJSON_AddItemToObject(o, "spearman_abs", hs_json_num_or_null(rho_abs));
    cJSON_AddItemToObject(o, "pearson", hs_json_num_or_null(r));
    return o;
}

/* ------------------------------------------------------------------------ */
/* AtP against the exact sweep                                               */

/* Every act the model produces (patch's default). */
static unsigned model_acts(const hs_config *cfg)
{
    unsigned acts = 0;
    for (int a = 0; a < HS_PATCH_N; a++) acts |= 1u << a;
    if (cfg->d_mlp == 0) acts &= ~(1u << HS_PATCH_MLP_OUT);
    if (cfg->attn != HS_ATTN_SOFTMAX) acts &= ~((1u << HS_PATCH_Q) | (1u << HS_PATCH_K));
    return acts;
}

/* out["atp"][act] <- the agreement of AtP's cells with the exact sweep's
 * (and "by_position" for head acts); out["ms"]: "patch_exact", "patch_atp". */
static hs_status atp_quality(const hs_model *m, hs_pool *pool, const hs_prompts *p, cJSON *out, cJSON *ms,
                             hs_error *err)
{
    const unsigned acts = model_acts(&m->cfg);
    hs_patch_report ex = {0}, at = {0};
    double t0 = bench_now(), t1 = 0, t2 = 0;
    hs_status s = hs_patch_run_method(m, pool, p, acts, HS_PATCH_EXACT, &ex, err);
    t1 = bench_now();
    if (s == HS_OK) s = hs_patch_run_method(m, pool, p, acts, HS_PATCH_ATP, &at, err);
    t2 = bench_now();
    cJSON *o = cJSON_AddObjectToObject(out, "atp");
    for (int a = 0; s == HS_OK && a < HS_PATCH_N; a++) {
        if (!(acts & 1u << a)) continue;
        const int head = hs_patch_act_is_head(a);
        const size_t n = (size_t)ex.L * (head ? (size_t)ex.H : (size_t)ex.t);
        cJSON *c = agreement(ex.metric[a], at.metric[a], n);
        if (c && head) cJSON_AddItemToObject(c, "by_position", agreement(ex.metric_pos[a], at.metric_pos[a],
                                                                         n * (size_t)ex.t));
        if (c == NULL) s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        cJSON_AddItemToObject(o, hs_patch_act_names[a], c);
    }
    cJSON_AddNumberToObject(ms, "patch_exact", (t1 - t0) * 1e3);
    cJSON_AddNumberToObject(ms, "patch_atp", (t2 - t1) * 1e3);
    hs_patch_report_free(&ex);
    hs_patch_report_free(&at);
    return s;
}

/* ------------------------------------------------------------------------ */
/* Edge scores and the faithfulness curves                                   */

enum { M_EXACT = 0, M_EAP, M_EAP_IG, M_ACDC };
static const char *const method_keys[N_METHODS] = {"exact", "eap", "eap_ig", "acdc"};

typedef struct {
    double *sc[N_METHODS];      /* [n_edges] each method's scores (ACDC: the change when tried) */
    unsigned char *acdc_circuit; /* [n_edges] ACDC's kept edges */
    hs_acdc_stats acdc;
    hs_faith_curve curve[N_METHODS];
    double ms[N_METHODS + 1];   /* scoring time of each method, then preparing the circuit runs */
    double m_full, m_empty;
} edge_run;

static void edge_run_free(edge_run *e)
{
    for (int k = 0; k < N_METHODS; k++) free(e->sc[k]);
    free(e->acdc_circuit);
}

/* Scores every edge of g four ways and runs each ranking's curve. */
static hs_status edge_quality(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_graph *g, int ig_steps,
                              double tau, edge_run *e, hs_error *err)
{
    hs_circeval *ce = NULL;
    for (int k = 0; k < N_METHODS; k++)
        if ((e->sc[k] = malloc(g->n_edges * sizeof(double))) == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if ((e->acdc_circuit = malloc(g->n_edges)) == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    double t0 = bench_now();
    hs_status s = hs_circeval_create(m, pool, p, g, HS_METRIC_LOGIT_DIFF, HS_ABLATE_RESAMPLE, &ce, err);
    double t1 = bench_now();
    e->ms[N_METHODS] = (t1 - t0) * 1e3;
    if (s == HS_OK) {
        e->m_full = hs_circeval_full(ce);
        e->m_empty = hs_circeval_empty(ce);
        s = hs_edge_patch_scores(ce, e->sc[M_EXACT], err);
    }
    t0 = bench_now();
    e->ms[M_EXACT] = (t0 - t1) * 1e3;
    if (s == HS_OK) s = hs_eap_scores(m, pool, p, g, HS_METRIC_LOGIT_DIFF, 0, e->sc[M_EAP], err);
    t1 = bench_now();
    e->ms[M_EAP] = (t1 - t0) * 1e3;
    if (s == HS_OK) s = hs_eap_scores(m, pool, p, g, HS_METRIC_LOGIT_DIFF, ig_steps, e->sc[M_EAP_IG], err);
    t0 = bench_now();
    e->ms[M_EAP_IG] = (t0 - t1) * 1e3;
    const hs_acdc_opts ao = {tau, 1, 1}; /* the |change| rule and order README's numbers were measured with */
    if (s == HS_OK) s = hs_acdc_run(ce, &ao, e->acdc_circuit, e->sc[M_ACDC], &e->acdc, err);
    e->ms[M_ACDC] = (bench_now() - t0) * 1e3;
    for (int k = 0; s == HS_OK && k < N_METHODS; k++) s = hs_faith_curve_run(ce, e->sc[k], HS_SELECT_TOPN, &e->curve[k], err);
    hs_circeval_destroy(ce);
    return s;
}

/* out["edges"], out["faithfulness"] and out["ms"]'s scoring times. */
static int edge_json(const hs_graph *g, const edge_run *e, double tau, int ig_steps, cJSON *out, cJSON *ms)
{
    cJSON *ag = cJSON_AddObjectToObject(out, "edges"), *fa = cJSON_AddObjectToObject(out, "faithfulness");
    if (ag == NULL || fa == NULL) return 1;
    cJSON_AddNumberToObject(ag, "n_edges", (double)g->n_edges);
    cJSON_AddItemToObject(ag, "eap", agreement(e->sc[M_EXACT], e->sc[M_EAP], g->n_edges));
    cJSON_AddItemToObject(ag, "eap_ig", agreement(e->sc[M_EXACT], e->sc[M_EAP_IG], g->n_edges));
    cJSON_AddNumberToObject(fa, "metric_full", e->m_full);
    cJSON_AddNumberToObject(fa, "metric_empty", e->m_empty);
    for (int k = 0; k < N_METHODS; k++) {
        cJSON *c = hs_faith_curve_json(&e->curve[k]);
        if (c == NULL) return 1;
        cJSON_AddItemToObject(fa, method_keys[k], c);
        cJSON_AddNumberToObject(ms, k == M_EXACT ? "exact_edge_patching" : method_keys[k], e->ms[k]);
    }
    cJSON_AddNumberToObject(ms, "prepare_circuit_runs", e->ms[N_METHODS]);
    cJSON *ac = cJSON_AddObjectToObject(fa, "acdc_circuit");
    cJSON_AddNumberToObject(ac, "tau", tau);
    cJSON_AddNumberToObject(ac, "edges", (double)e->acdc.kept);
    cJSON_AddNumberToObject(ac, "percent", 100.0 * (double)e->acdc.kept / (double)g->n_edges);
    cJSON_AddNumberToObject(ac, "trials", (double)e->acdc.trials);
    cJSON_AddItemToObject(ac, "faithfulness", hs_json_num_or_null(hs_faithfulness(e->acdc.metric, e->m_full,
                                                                                     e->m_empty)));
    cJSON_AddNumberToObject(out, "ig_steps", ig_steps);
    return 0;
}

/* The four curves in one figure: PREFIX.png, .svg, .json. */
static int write_figure(const edge_run *e, double tau, int ig_steps, const char *title, double dpi, const char *prefix)
{
    double percent[HS_FAITH_N], f[N_METHODS * HS_FAITH_N];
    char names[N_METHODS][48], path[4096];
    const char *nm[N_METHODS];
    for (int i = 0; i < HS_FAITH_N; i++) percent[i] = 100.0 * hs_faith_fractions[i];
    for (int k = 0; k < N_METHODS; k++)
        for (int i = 0; i < HS_FAITH_N; i++) f[k * HS_FAITH_N + i] = e->curve[k].pt[i + 1].faithfulness;
    snprintf(names[M_EXACT], sizeof names[0], "exact edge patching");
    snprintf(names[M_EAP], sizeof names[0], "EAP");
    snprintf(names[M_EAP_IG], sizeof names[0], "EAP-IG (%d steps)", ig_steps);
    snprintf(names[M_ACDC], sizeof names[0], "ACDC (tau %g)", tau);
    /* EAP, EAP-IG and ACDC first (the colours the comparison is about), the reference last */
    static const int order[N_METHODS] = {M_EAP, M_EAP_IG, M_ACDC, M_EXACT};
    double fo[N_METHODS * HS_FAITH_N];
    for (int k = 0; k < N_METHODS; k++) {
        nm[k] = names[order[k]];
        memcpy(fo + k * HS_FAITH_N, f + order[k] * HS_FAITH_N, sizeof(double) * HS_FAITH_N);
    }
    hs_viz_figure *fig = NULL;
    cJSON *json = NULL;
    hs_error err = {0};
    hs_viz_options vo;
    hs_viz_options_default(&vo);
    vo.dpi = dpi;
    hs_status s = hs_faithfulness_figure(percent, HS_FAITH_N, fo, nm, N_METHODS, title, &vo, &fig, &json, &err);
    if (s == HS_OK) {
        snprintf(path, sizeof path, "%s.png", prefix);
        s = hs_viz_figure_write_png(fig, path, NULL, &err);
    }
    if (s == HS_OK) {
        snprintf(path, sizeof path, "%s.svg", prefix);
        s = hs_viz_figure_write_svg(fig, path, &err);
    }
    if (s == HS_OK) {
        snprintf(path, sizeof path, "%s.json", prefix);
        s = hs_viz_write_json(json, path, &err);
    }
    hs_viz_figure_destroy(fig);
    cJSON_Delete(json);
    return s == HS_OK ? 0 : fail(prefix, &err);
}

/* ------------------------------------------------------------------------ */
/* An induction model's prompt set                                           */

/* The tokens of row (T) as text: the symbols' strings, space-separated. */
static int put_tokens(FILE *f, const hs_tokenizer *v, const int *row, int T)
{
    for (int i = 0; i < T; i++)
        if (fprintf(f, "%s%s", i ? " " : "", hs_tok_str(v, row[i])) < 0) return 1;
    return 0;
}

/* --induction-pairs MODEL N OUT.jsonl (the file comment). */
static int induction_pairs(const char *model, int n, const char *out)
{
    hs_loaded L;
    hs_error err = {0};
    if (hs_load(model, HS_NEED_ANY_TASK, NULL, NULL, &L, &err) != HS_OK) return fail(model, &err);
    const hs_induction *t = L.ind;
    int rc = 1;
    FILE *f = NULL;
    int *corr = NULL;
    if (t == NULL) {
        fprintf(stderr, "bench_quality: %s is not an induction-task model\n", model);
        goto done;
    }
    if (n < 1 || n > t->p.n_heldout) {
        fprintf(stderr, "bench_quality: N must be 1..%d (the held-out sequences)\n", t->p.n_heldout);
        goto done;
    }
    const int T = t->p.n_ctx, V = t->p.n_symbols;
    if ((corr = malloc((size_t)T * sizeof *corr)) == NULL || (f = fopen(out, "w")) == NULL) {
        fprintf(stderr, "bench_quality: cannot write %s\n", out);
        goto done;
    }
    rc = 0;
    for (int q = 0; q < n && rc == 0; q++) {
        const int *row = t->heldout_tokens + (size_t)q * T;
        const hs_ind_seq *sq = &t->heldout[q];
        hs_task_rng r;
        hs_task_rng_seed(&r, (uint64_t)q);
        memcpy(corr, row, (size_t)T * sizeof *corr);
        for (int k = 0; k < sq->len; k++) { /* a symbol outside the segment and not drawn yet */
            int s, clash;
            do {
                s = (int)hs_task_rng_below(&r, (uint64_t)V);
                clash = 0;
                for (int j = 0; j < sq->len; j++) clash |= row[sq->start2 + j] == s;
                for (int j = 0; j < k; j++) clash |= corr[sq->start1 + j] == s;
            } while (clash);
            corr[sq->start1 + k] = s;
        }
        const int pos = sq->start2 + sq->len - 2;
        rc |= fputs("{\"prompt\": \"", f) < 0 || put_tokens(f, L.vocab, row, T);
        rc |= fputs("\", \"corrupted\": \"", f) < 0 || put_tokens(f, L.vocab, corr, T);
        rc |= fprintf(f, "\", \"answer\": \"%s\", ", hs_tok_str(L.vocab, row[pos + 1])) < 0;
        rc |= fprintf(f, "\"wrong\": \"%s\", \"position\": %d}\n", hs_tok_str(L.vocab, corr[sq->start1 + sq->len - 1]),
                      pos) < 0;
    }
    if (fclose(f) != 0) rc = 1;
    f = NULL;
    if (rc) fprintf(stderr, "bench_quality: cannot write %s\n", out);
done:
    if (f) fclose(f);
    free(corr);
    hs_loaded_free(&L);
    return rc;
}

/* ------------------------------------------------------------------------ */

static int usage(void)
{
    fprintf(stderr, "usage: bench_quality MODEL PAIRS.jsonl [--threads N] [--ig-steps M] [--tau X] [--json FILE] "
                    "[--figure PREFIX] [--title S] [--dpi D]\n"
                    "       bench_quality --induction-pairs MODEL N OUT.jsonl\n");
    return 2;
}

static int write_json(const char *path, const cJSON *o)
{
    char *s = cJSON_Print(o);
    FILE *f = s ? fopen(path, "w") : NULL;
    int bad = !f || fputs(s, f) < 0 || fputc('\n', f) < 0;
    if (f && fclose(f) != 0) bad = 1;
    free(s);
    if (bad) fprintf(stderr, "bench_quality: cannot write %s\n", path);
    return bad;
}

/* The one-screen summary of out. */
static void summary(const cJSON *out)
{
    const cJSON *atp = cJSON_GetObjectItem(out, "atp"), *ed = cJSON_GetObjectItem(out, "edges");
    printf("Spearman's rho with exact patching (ties averaged):\n  AtP, per act:");
    for (const cJSON *c = atp ? atp->child : NULL; c; c = c->next) {
        const cJSON *bp = cJSON_GetObjectItem(c, "by_position");
        printf(" %s %+.3f", c->string, cJSON_GetObjectItem(c, "spearman")->valuedouble);
        if (bp) printf(" (by position %+.3f)", cJSON_GetObjectItem(bp, "spearman")->valuedouble);
    }
    printf("\n");
    static const char *const keys[2] = {"eap", "eap_ig"};
    for (int k = 0; ed && k < 2; k++) {
        const cJSON *c = cJSON_GetObjectItem(ed, keys[k]);
        printf("  %-6s over %d edges: %+.3f (|score| %+.3f)\n", keys[k],
               (int)cJSON_GetObjectItem(c, "cells")->valuedouble, cJSON_GetObjectItem(c, "spearman")->valuedouble,
               cJSON_GetObjectItem(c, "spearman_abs")->valuedouble);
    }
    const cJSON *fa = cJSON_GetObjectItem(out, "faithfulness");
    for (int k = 0; fa && k < N_METHODS; k++) {
        const cJSON *c = cJSON_GetObjectItem(fa, method_keys[k]);
        printf("  faithfulness curve of %-6s CPR %.3f CMD %.3f\n", method_keys[k],
               cJSON_GetObjectItem(c, "cpr")->valuedouble, cJSON_GetObjectItem(c, "cmd")->valuedouble);
    }
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "--induction-pairs")) return induction_pairs(argv[2], atoi(argv[3]), argv[4]);
    const char *model = NULL, *data = NULL, *json = NULL, *figure = NULL, *title = NULL;
    int threads = 1, ig = 5;
    double tau = HS_ACDC_TAU, dpi = 300;
    for (int i = 1; i < argc; i++) {
        const int more = i + 1 < argc;
        if (!strcmp(argv[i], "--threads") && more) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ig-steps") && more) ig = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tau") && more) tau = atof(argv[++i]);
        else if (!strcmp(argv[i], "--json") && more) json = argv[++i];
        else if (!strcmp(argv[i], "--figure") && more) figure = argv[++i];
        else if (!strcmp(argv[i], "--title") && more) title = argv[++i];
        else if (!strcmp(argv[i], "--dpi") && more) dpi = atof(argv[++i]);
        else if (argv[i][0] != '-' && !model) model = argv[i];
        else if (argv[i][0] != '-' && !data) data = argv[i];
        else return usage();
    }
    if (!model || !data || threads < 1 || ig < 1) return usage();
    hs_error err = {0};
    hs_loaded L;
    hs_prompts p = {0};
    hs_graph g = {0};
    hs_pool *pool = NULL;
    edge_run e;
    memset(&e, 0, sizeof e);
    if (hs_load(model, HS_NEED_VOCAB, NULL, NULL, &L, &err) != HS_OK) return fail(model, &err);
    cJSON *out = cJSON_CreateObject(), *ms = cJSON_CreateObject();
    int rc = hs_prompts_load(data, L.vocab, L.model->cfg.n_ctx, 0, &p, &err) != HS_OK ||
             hs_graph_build(&L.model->cfg, &g, &err) != HS_OK || hs_pool_create(threads, &pool, &err) != HS_OK ||
             atp_quality(L.model, pool, &p, out, ms, &err) != HS_OK ||
             edge_quality(L.model, pool, &p, &g, ig, tau, &e, &err) != HS_OK;
    if (rc) fail(NULL, &err);
    if (rc == 0) {
        cJSON_AddStringToObject(out, "model", model);
        cJSON_AddStringToObject(out, "data", data);
        cJSON_AddNumberToObject(out, "prompts", p.n);
        cJSON_AddNumberToObject(out, "tokens", p.t);
        cJSON_AddNumberToObject(out, "threads", threads);
        cJSON_AddStringToObject(out, "metric", "logit-diff");
        cJSON_AddStringToObject(out, "ablation", "resample");
        rc = edge_json(&g, &e, tau, ig, out, ms);
        cJSON_AddItemToObject(out, "ms", ms);
        ms = NULL;
    }
    if (rc == 0) summary(out);
    if (rc == 0 && json) rc = write_json(json, out);
    if (rc == 0 && figure) rc = write_figure(&e, tau, ig, title, dpi, figure);
    cJSON_Delete(out);
    cJSON_Delete(ms);
    edge_run_free(&e);
    hs_pool_destroy(pool);
    hs_graph_free(&g);
    hs_prompts_free(&p);
    hs_loaded_free(&L);
    return rc;
}
