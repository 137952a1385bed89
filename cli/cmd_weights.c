/*
 * cli/cmd_weights.c -- `headscope weights`: what the weights say without
 * running a sentence. Every head's full QK and OV circuits over the
 * vocabulary, the cross-layer virtual-weight products, the Q/K/V composition
 * scores with their random baseline, and each head's copying score.
 * Thin: the maths is probe's (hs_full_QK, hs_full_OV, hs_head_product,
 * hs_composition_scores, hs_copying_score); figures are viz's.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "expout.h"
#include "figopts.h"
#include "probe/probe.h"
#include "util.h"
#include "viz/viz.h"

static const char WEIGHTS_HELP[] =
    "usage: headscope weights --model FILE [--out DIR] [--fold ln|none] [options]\n"
    "\n"
    "Reads the model's weights (no sentence) and writes, into the output folder:\n"
    "  L<l>H<h>_QK     full QK circuit W_E W_QK W_E^T over the vocabulary\n"
    "                  [query token, key token] (not for uniform attention)\n"
    "  L<l>H<h>_OV     full OV circuit W_E W_OV W_U [attended token, output logit]\n"
    "  virtual_weights Frobenius norms of W_O^A W_Q^B, W_O^A W_K^B, W_O^A W_V^B for\n"
    "                  every head A and head B of a later layer (the JSON also holds\n"
    "                  each [d_head, d_head] product)\n"
    "  composition_Q/K/V  composition scores [L*H x L*H] minus the random baseline;\n"
    "                  pairs that are not reported (B not in a later layer) are\n"
    "                  masked in the figure and null in the JSON\n"
    "  copying         each head's eigenvalue copying score (also printed)\n"
    "  index.json      every file written and what it shows\n"
    "Each figure is a PNG and an SVG with a JSON beside it holding every number.\n"
    "Layers and heads count from 0.\n"
    "\n"
    "  --model FILE           checkpoint (.safetensors with its vocabulary)\n"
    CLI_VOCAB_HELP
    "                         (without either, tokens are labelled by id: #0, #1, ...)\n"
    "  --out DIR              output folder (default weights-out; created if missing,\n"
    "                         its parent must exist). Only files an earlier run wrote\n"
    "                         and nobody changed are replaced; a failed run changes nothing\n"
    "  --fold ln|none         fold the norms' weights (and LayerNorm's centring) into\n"
    "                         the reading matrices (ln, default) or use the stored\n"
    "                         matrices as they are (none)\n"
    "  --comp-draws N         random pairs for the composition baseline (default 300,\n"
    "                         as circuit's --comp-draws: the same cell, the same value)\n"
    "\n";

#define NAME_LEN 32

static int oom(const char *C)
{
    fprintf(stderr, "headscope %s: out of memory\n", C);
    return 1;
}


typedef struct {
    hs_outdir *od;
    const char *model_path;
    const hs_config *cfg;
    const char *fold;
    int annotate_small;   /* annotate this figure's cells when it is small */
    int nonneg;           /* the values are never negative (norms): sequential map from 0 */
} w_ctx;

/* Adds model path, config and fold to a JSON object; 0 on OOM. */
static int add_context(cJSON *o, const w_ctx *x)
{
    cJSON *cfg = o ? hs_config_to_json(x->cfg, HS_CONFIG_JSON_ALL) : NULL;
    if (!cfg) return 0;
    cJSON_AddItemToObject(o, "config", cfg);
    cJSON_AddStringToObject(o, "model", x->model_path);
    cJSON_AddStringToObject(o, "fold", x->fold);
    return 1;
}

/* One signed heatmap (+ JSON), optionally masked, with a shared limit
 * (lim > 0 and --range fixed) or its own scale. extra's keys go into the JSON
 * (extra is consumed). 0 ok, 1 printed. */
static int write_signed(const w_ctx *x, const char *stem, const float *mat,
                        const unsigned char *mask, size_t R, size_t C,
                        const char *const *rl, const char *const *cl, const char *title,
                        const char *xlabel, const char *ylabel, double lim, const char *q,
                        const char *shows, cJSON *extra)
{
    const char *cmd = x->od->cmd;
    const hs_figopts *fo = x->od->fo;
    hs_error err = {0};
    hs_viz_figure *fig = NULL;
    cJSON *j = NULL;
    int rc = 0;
    if (hs_figopts_images(fo)) {
        if (R > HS_VIZ_MAX_TOKENS || C > HS_VIZ_MAX_TOKENS) {
            fprintf(stderr, "headscope %s: note: %s is %zu x %zu, over the figure cap of %d per "
                            "side; writing its JSON only\n", cmd, stem, R, C, HS_VIZ_MAX_TOKENS);
        } else {
            hs_viz_options o = hs_figopts_for(fo, x->nonneg ? HS_FIG_NONNEG : HS_FIG_SIGNED, lim);
            o.value_label = q;
            if (x->annotate_small && R * C <= 256) o.annotate = 1;
            hs_status s;
            if (x->nonneg)
                s = mask ? hs_viz_matrix_figure_masked(&fig, mat, mask, R, C, rl, cl, title, xlabel,
                                                       ylabel, &o, &err)
                         : hs_viz_matrix_figure(&fig, mat, R, C, rl, cl, title, xlabel, ylabel, &o,
                                                &err);
            else
                s = mask ? hs_viz_signed_figure_masked(&fig, mat, mask, R, C, rl, cl, title,
                                                       xlabel, ylabel, &o, &err)
                         : hs_viz_signed_figure(&fig, mat, R, C, rl, cl, title, xlabel, ylabel,
                                                &o, &err);
            if (s != HS_OK) rc = cli_error(cmd, &err);
        }
    }
    if (!rc && hs_figopts_data(fo)) {
        hs_status s = mask ? hs_viz_signed_json_masked(&j, mat, mask, R, C, rl, cl, title, xlabel,
                                                       ylabel, &err)
                           : hs_viz_signed_json(&j, mat, R, C, rl, cl, title, xlabel, ylabel,
                                                &err);
        if (s != HS_OK) rc = cli_error(cmd, &err);
        else if (!add_context(j, x) ||
                 cli_add_scale(j, fo, x->nonneg ? HS_FIG_NONNEG : HS_FIG_SIGNED, lim))
            rc = oom(cmd);
        else
            for (cJSON *it = extra ? extra->child : NULL; it; it = it->next)
                cJSON_AddItemToObject(j, it->string, cJSON_Duplicate(it, 1));
    }
    if (!rc) rc = cli_out_figure(x->od, stem, &fig, j, shows);
    cJSON_Delete(extra);
    cJSON_Delete(j);
    hs_viz_figure_destroy(fig);
    return rc;
}

static double max_abs(const float *a, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(a[i]) && fabs(a[i]) > m) m = fabs(a[i]);
    return m;
}

static const char *COMP_NAME[3] = {"Q", "K", "V"};

int cmd_weights(int argc, char **argv)
{
    enum { O_MODEL = 256, O_OUT, O_FOLD, O_DRAWS };
    static const struct option opts[] = {{"model", required_argument, 0, O_MODEL},
                                         {"out", required_argument, 0, O_OUT},
                                         {"fold", required_argument, 0, O_FOLD},
                                         {"comp-draws", required_argument, 0, O_DRAWS},
                                         CLI_HELP_OPT,
                                         CLI_VOCAB_OPT,
                                         CLI_FIGOPTS_LONGOPTS,
                                         {0, 0, 0, 0}};
    const char *C = "weights", *model = NULL, *out = "weights-out";
    hs_fold fold = HS_FOLD_LN;
    long draws = HS_COMP_DRAWS;
    int c;
    hs_load_source from = {0};
    hs_figopts fo;
    hs_figopts_default(&fo, 300);
    cli_opts op = {.cmd = C, .help = WEIGHTS_HELP, .src = &from, .fo = &fo};
    while ((c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END) {
        switch (c) {
        case CLI_OPT_EXIT: return op.status;
        case O_MODEL: model = optarg; break;
        case O_OUT: out = optarg; break;
        case O_FOLD:
            if (strcmp(optarg, "ln") == 0) fold = HS_FOLD_LN;
            else if (strcmp(optarg, "none") == 0) fold = HS_FOLD_NONE;
            else return cli_usage_error(C, "unknown --fold '%s' (ln, none)", optarg);
            break;
        case O_DRAWS:
            if (cli_parse_int(optarg, 2, 100000, &draws))
                return cli_usage_error(C, "--comp-draws needs an integer in [2, 100000], got '%s'",
                                       optarg);
            break;
        }
    }
    int rest = cli_args_end(C, argc, argv, optind, model);
    if (rest) return rest;

    hs_loaded L;
    int lrc = cli_load_src(C, model, 0, &from, &L);
    if (lrc) return lrc;
    if (L.vocab_is_ids)
        fprintf(stderr, "headscope weights: note: %s has no vocabulary; tokens are labelled by "
                        "id (#0, #1, ...); --vocab FILE names them\n", model);
    const hs_model *m = L.model;
    const hs_config *cfg = &m->cfg;
    int NL = cfg->n_layers, NH = cfg->n_heads, V = cfg->d_vocab, dh = cfg->d_head;
    int NA = NL * NH, uniform = cfg->attn == HS_ATTN_UNIFORM;
    size_t VV = (size_t)V * V;
    hs_error err = {0};
    hs_outdir od = {0};
    hs_comp_scores cs = {0};
    float *qk = NULL, *ov = NULL, *prod = NULL, *norms = NULL, *cmat = NULL;
    unsigned char *pmask = NULL, *cmask = NULL;
    char (*names)[NAME_LEN] = NULL, (*pcols)[NAME_LEN] = NULL;
    const char **name_p = NULL, **pcol_p = NULL;
    double *copy = NULL, *posf = NULL;
    int rc = 1;
    w_ctx x = {&od, model, cfg, fold == HS_FOLD_LN ? "ln" : "none", 0, 0};

    qk = uniform ? NULL : malloc((size_t)NA * VV * sizeof *qk);
    ov = malloc((size_t)NA * VV * sizeof *ov);
    names = calloc((size_t)NA, sizeof *names);
    name_p = calloc((size_t)NA, sizeof *name_p);
    copy = calloc((size_t)NA, sizeof *copy);
    posf = calloc((size_t)NA, sizeof *posf);
    if ((!uniform && !qk) || !ov || !names || !name_p || !copy || !posf) {
        oom(C);
        goto done;
    }
    for (int i = 0; i < NA; i++) {
        snprintf(names[i], NAME_LEN, "L%dH%d", i / NH, i % NH);
        name_p[i] = names[i];
    }
    /* every number first (shared colour scales need them all) */
    for (int i = 0; i < NA; i++) {
        hs_head h = {i / NH, i % NH};
        if ((!uniform && hs_full_QK(m, h, fold, qk + (size_t)i * VV, &err) != HS_OK) ||
            hs_full_OV(m, h, fold, ov + (size_t)i * VV, &err) != HS_OK ||
            hs_copying_score(m, h, fold, &copy[i], &posf[i], &err) != HS_OK) {
            cli_error(C, &err);
            goto done;
        }
    }
    if (hs_composition_scores(m, fold, (int)draws, 0, &cs, &err) != HS_OK) {
        cli_error(C, &err);
        goto done;
    }
    const char *const inputs[] = {model, NULL}; /* never replaced or removed */
    if (cli_figopts_font(C, &fo) || cli_outdir_open(&od, C, out, &fo, inputs)) goto done;

    const char *const *vocab = (const char *const *)L.vocab->words;
    char title[256], shows[320], stem[64];
    /* full circuits */
    double qk_lim = uniform ? 0 : max_abs(qk, (size_t)NA * VV), ov_lim = max_abs(ov, (size_t)NA * VV);
    for (int i = 0; i < NA; i++) {
        if (!uniform) {
            snprintf(stem, sizeof stem, "%s_QK", names[i]);
            snprintf(title, sizeof title, "%s full QK circuit W_E W_QK W_E^T (fold %s)", names[i],
                     x.fold);
            snprintf(shows, sizeof shows, "full QK circuit of %s: the attention score (before "
                     "the 1/sqrt(d_head) scale, without positions or biases) a query token "
                     "(row) gives a key token (column)", names[i]);
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "head", names[i]);
            cJSON_AddStringToObject(e, "circuit", "QK");
            cJSON_AddNumberToObject(e, "shared_color_limit", qk_lim);
            if (write_signed(&x, stem, qk + (size_t)i * VV, NULL, (size_t)V, (size_t)V, vocab,
                             vocab, title, "key token (source)", "query token (destination)",
                             qk_lim, "attention score", shows, e))
                goto done;
        }
        snprintf(stem, sizeof stem, "%s_OV", names[i]);
        snprintf(title, sizeof title, "%s full OV circuit W_E W_OV W_U (fold %s)", names[i], x.fold);
        snprintf(shows, sizeof shows, "full OV circuit of %s: the direct effect on each output "
                 "logit (column) of attending to a token (row)", names[i]);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "head", names[i]);
        cJSON_AddStringToObject(e, "circuit", "OV");
        cJSON_AddNumberToObject(e, "shared_color_limit", ov_lim);
        cJSON_AddNumberToObject(e, "copying_score", copy[i]);
        if (write_signed(&x, stem, ov + (size_t)i * VV, NULL, (size_t)V, (size_t)V, vocab, vocab,
                         title, "output token (logit)", "attended token (source)", ov_lim,
                         "direct effect on the logit", shows, e))
            goto done;
    }

    /* virtual-weight products: senders in layers 0..L-2, receivers in later layers */
    int n_send = (NL - 1) * NH, n_recv = (NL - 1) * NH;
    if (NL < 2) {
        printf("one layer: no cross-layer virtual weights or composition scores\n");
    } else {
        int ncol = 3 * n_recv;
        size_t dd = (size_t)dh * dh;
        norms = malloc((size_t)n_send * ncol * sizeof *norms);
        pmask = calloc((size_t)n_send * ncol, 1);
        prod = malloc(dd * sizeof *prod);
        pcols = calloc((size_t)ncol, sizeof *pcols);
        pcol_p = calloc((size_t)ncol, sizeof *pcol_p);
        if (!norms || !pmask || !prod || !pcols || !pcol_p) {
            oom(C);
            goto done;
        }
        for (int r = 0; r < n_recv; r++)
            for (int k = 0; k < 3; k++) {
                int col = r * 3 + k;
                snprintf(pcols[col], NAME_LEN, "%s.%s", names[NH + r], COMP_NAME[k]);
                pcol_p[col] = pcols[col];
            }
        cJSON *extra = cJSON_CreateObject();
        cJSON *plist = cJSON_AddArrayToObject(extra, "products");
        for (int a = 0; a < n_send; a++)
            for (int r = 0; r < n_recv; r++)
                for (int k = 0; k < 3; k++) {
                    size_t idx = (size_t)a * ncol + r * 3 + k;
                    hs_head h1 = {a / NH, a % NH}, h2 = {1 + r / NH, r % NH};
                    if (h2.layer <= h1.layer || (uniform && k != HS_COMP_V)) {
                        pmask[idx] = 1;
                        norms[idx] = NAN;
                        continue;
                    }
                    if (hs_head_product(m, h1, h2, (hs_comp)k, fold, prod, &err) != HS_OK) {
                        cJSON_Delete(extra);
                        cli_error(C, &err);
                        goto done;
                    }
                    double s = 0;
                    for (size_t q = 0; q < dd; q++) s += (double)prod[q] * prod[q];
                    norms[idx] = (float)sqrt(s);
                    cJSON *pe = cJSON_CreateObject();
                    cJSON_AddStringToObject(pe, "sender", names[a]);
                    cJSON_AddStringToObject(pe, "receiver", names[NH + r]);
                    char what[16];
                    snprintf(what, sizeof what, "W_O.W_%s", COMP_NAME[k]);
                    cJSON_AddStringToObject(pe, "product", what);
                    cJSON_AddNumberToObject(pe, "frobenius_norm", norms[idx]);
                    cJSON *rows = cJSON_AddArrayToObject(pe, "values");
                    for (int i = 0; i < dh; i++)
                        cJSON_AddItemToArray(rows, cJSON_CreateFloatArray(prod + (size_t)i * dh, dh));
                    cJSON_AddItemToArray(plist, pe);
                }
        cJSON_AddStringToObject(extra, "note", "values[a][r] = ||W_O^a W_X^r||_F for sender a "
                                "(row) and receiver input r.X (column), X = Q, K, V; each "
                                "product is [d_head, d_head], listed under products");
        snprintf(title, sizeof title, "virtual weights ||W_O^A W_Q/K/V^B||_F (fold %s)", x.fold);
        snprintf(shows, sizeof shows, "Frobenius norms of the cross-layer virtual-weight products "
                 "W_O^A W_Q^B, W_O^A W_K^B, W_O^A W_V^B (sender A = row, receiver B.input = "
                 "column); the JSON holds every [d_head, d_head] product");
        x.annotate_small = 1;
        x.nonneg = 1;
        int r = write_signed(&x, "virtual_weights", norms, pmask, (size_t)n_send, (size_t)ncol,
                             (const char *const *)name_p, pcol_p, title,
                             "receiver head and its input (Q, K or V)", "sender head", 0,
                             "Frobenius norm", shows, extra);
        x.annotate_small = 0;
        x.nonneg = 0;
        if (r) goto done;

        /* composition scores */
        cmat = malloc((size_t)NA * NA * sizeof *cmat);
        cmask = calloc((size_t)NA * NA, 1);
        if (!cmat || !cmask) {
            oom(C);
            goto done;
        }
        const float *src[3] = {cs.q, cs.k, cs.v};
        /* one scale for Q, K and V: the three are compared */
        double comp_lim = 0;
        for (int k = 0; k < 3; k++)
            for (size_t i = 0; i < (size_t)NA * NA && !(uniform && k != HS_COMP_V); i++)
                if (isfinite(src[k][i])) comp_lim = fmax(comp_lim, fabs(src[k][i] - cs.baseline));
        for (int k = 0; k < 3; k++) {
            if (uniform && k != HS_COMP_V) continue;
            cJSON *e = cJSON_CreateObject();
            cJSON *raw = cJSON_AddArrayToObject(e, "scores");
            for (int i = 0; i < NA; i++) {
                cJSON *row = cJSON_CreateArray();
                for (int j = 0; j < NA; j++) {
                    float v = src[k][(size_t)i * NA + j];
                    int masked = !isfinite(v);
                    cmask[(size_t)i * NA + j] = (unsigned char)masked;
                    cmat[(size_t)i * NA + j] = masked ? NAN : (float)(v - cs.baseline);
                    cJSON_AddItemToArray(row, masked ? cJSON_CreateNull() : cJSON_CreateNumber(v));
                }
                cJSON_AddItemToArray(raw, row);
            }
            cJSON_AddStringToObject(e, "composition", COMP_NAME[k]);
            cJSON_AddNumberToObject(e, "baseline", cs.baseline);
            cJSON_AddNumberToObject(e, "baseline_std", cs.baseline_std);
            cJSON_AddNumberToObject(e, "n_draws", cs.n_draws);
            cJSON_AddNumberToObject(e, "shared_color_limit", comp_lim);
            cJSON_AddStringToObject(e, "note", "values = scores - baseline (what the figure "
                                    "shows); scores = C(W_OV^A, W_X^B) for sender A (row) and "
                                    "receiver B (column); null = not reported (B is not in a "
                                    "later layer than A)");
            snprintf(stem, sizeof stem, "composition_%s", COMP_NAME[k]);
            snprintf(title, sizeof title, "%s-composition score - random baseline %.3f (fold %s)",
                     COMP_NAME[k], cs.baseline, x.fold);
            snprintf(shows, sizeof shows, "%s-composition scores of every head pair minus the "
                     "random baseline (%.3f +- %.3f over %d draws); sender = row, receiver = "
                     "column; pairs not in later layers are masked / null", COMP_NAME[k],
                     cs.baseline, cs.baseline_std, cs.n_draws);
            if (write_signed(&x, stem, cmat, cmask, (size_t)NA, (size_t)NA,
                             (const char *const *)name_p, (const char *const *)name_p, title,
                             "receiver head", "sender head", comp_lim,
                             "composition score - baseline", shows, e))
                goto done;
        }
    }
    if (uniform)
        printf("uniform attention: no W_Q/W_K, so no QK circuits and no Q/K products or "
               "composition (skipped)\n");

    /* copying scores */
    {
        float *cv = malloc((size_t)NA * sizeof *cv);
        if (!cv) {
            oom(C);
            goto done;
        }
        for (int i = 0; i < NA; i++) cv[i] = (float)copy[i];
        hs_viz_figure *fig = NULL;
        cJSON *j = NULL;
        int r = 0;
        snprintf(title, sizeof title, "OV copying score (sum lambda / sum |lambda|, fold %s)",
                 x.fold);
        /* the score's whole range, so heads compare across figures and models */
        hs_viz_options bo = hs_figopts_for(&fo, HS_FIG_BARS, 1.0);
        if (hs_figopts_images(&fo) &&
            hs_viz_bars_figure(&fig, cv, (size_t)NA, name_p, title, "copying score (-1..1)",
                               &bo, &err) != HS_OK)
            r = cli_error(C, &err);
        if (!r && hs_figopts_data(&fo)) {
            if (hs_viz_bars_json(&j, cv, (size_t)NA, name_p, title, "copying score (-1..1)",
                                 &err) != HS_OK)
                r = cli_error(C, &err);
            else if (!add_context(j, &x))
                r = oom(C);
            else {
                cJSON *pf = cJSON_CreateDoubleArray(posf, NA);
                cJSON_AddItemToObject(j, "positive_fraction", pf);
                cJSON_AddStringToObject(j, "note", "values = (sum of the eigenvalues of the full "
                                        "OV circuit).real / sum of their absolute values; "
                                        "positive_fraction = share of nonzero eigenvalues with a "
                                        "positive real part");
            }
        }
        if (!r)
            r = cli_out_figure(&od, "copying", &fig, j,
                               "each head's eigenvalue copying score of its full OV circuit");
        hs_viz_figure_destroy(fig);
        cJSON_Delete(j);
        free(cv);
        if (r) goto done;
    }
    {
        cJSON *extra = cJSON_CreateObject();
        add_context(extra, &x);
        if (NL >= 2) {
            cJSON_AddNumberToObject(extra, "composition_baseline", cs.baseline);
            cJSON_AddNumberToObject(extra, "composition_baseline_std", cs.baseline_std);
        }
        int r = cli_out_index(&od, extra);
        cJSON_Delete(extra);
        if (r) goto done;
    }
    printf("copying score per head (fold %s; 1 = the head copies the token it attends to, "
           "-1 = it suppresses it):\n", x.fold);
    printf("  head   copying  positive eigenvalues\n");
    for (int i = 0; i < NA; i++)
        printf("  %-6s %+7.3f  %5.1f%%\n", names[i], copy[i], 100.0 * posf[i]);
    if (NL >= 2) {
        printf("composition scores (random baseline %.3f +- %.3f); top pairs:\n", cs.baseline,
               cs.baseline_std);
        const float *src[3] = {cs.q, cs.k, cs.v};
        for (int k = 0; k < 3; k++) {
            if (uniform && k != HS_COMP_V) continue;
            int bi = -1;
            for (int i = 0; i < NA * NA; i++)
                if (isfinite(src[k][i]) && (bi < 0 || src[k][i] > src[k][bi])) bi = i;
            if (bi >= 0)
                printf("  %s: %s -> %s  %.3f\n", COMP_NAME[k], names[bi / NA], names[bi % NA],
                       (double)src[k][bi]);
        }
    }
    cli_out_say_wrote(&od, NULL);
    rc = cli_stdout_done(C);
done:
    hs_outdir_close(&od);
    hs_figopts_free(&fo);
    hs_comp_scores_free(&cs);
    free(qk);
    free(ov);
    free(prod);
    free(norms);
    free(cmat);
    free(pmask);
    free(cmask);
    free(names);
    free(name_p);
    free(pcols);
    free(pcol_p);
    free(copy);
    free(posf);
    hs_loaded_free(&L);
    return rc;
}
