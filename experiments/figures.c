/*
 * experiments/figures.c -- the figures of the experiments over a prompt set
 * (heads, patch, lens, ablate, dla) from their reports, through the output
 * folder (output/ hs_outdir_matrix), each JSON with the run's context
 * (hs_run_context). experiments.h, "Figures of the experiments".
 */
#include "experiments/experiments.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

cJSON *hs_run_context(const hs_config *cfg, const char *model_path)
{
    cJSON *ctx = cJSON_CreateObject(), *c = hs_config_to_json(cfg, HS_CONFIG_JSON_ALL);
    if (!ctx || !c || !cJSON_AddItemToObject(ctx, "config", c) ||
        (model_path && !cJSON_AddStringToObject(ctx, "model", model_path))) {
        if (c && !cJSON_GetObjectItem(ctx, "config")) cJSON_Delete(c);
        cJSON_Delete(ctx);
        return NULL;
    }
    return ctx;
}

static hs_status oom(hs_error *err)
{
    return hs_fail(err, HS_ERR_NOMEM, "out of memory");
}

/* One experiment's figures: od with the run's context while they are
 * written, the values of one figure and the labels. */
typedef struct {
    hs_outdir *od;
    const cJSON *was;   /* od's context before */
    cJSON *ctx;         /* hs_run_context's */
    float *m;           /* (n_values) */
    hs_labels lab;      /* (n_labels) */
} fig_run;

/* Sets od's context and allocates the values and labels (on failure, too,
 * f is ready for fig_end). */
static hs_status fig_begin(fig_run *f, hs_outdir *od, const hs_config *cfg, const char *model_path,
                           size_t n_values, size_t n_labels, hs_error *err)
{
    f->od = od;
    f->was = od->context;
    f->ctx = hs_run_context(cfg, model_path);
    f->m = calloc(n_values ? n_values : 1, sizeof *f->m);
    hs_labels_init(&f->lab, n_labels);
    od->context = f->ctx;
    return !f->ctx || !f->m || f->lab.oom ? oom(err) : HS_OK;
}

/* Restores od's context, frees f and returns s. */
static hs_status fig_end(fig_run *f, hs_status s)
{
    f->od->context = f->was;
    cJSON_Delete(f->ctx);
    free(f->m);
    hs_labels_free(&f->lab);
    return s;
}

/* Labels k0.. of the t positions: "<q> <token of the first prompt>", the
 * token as figures show it (hs_tok_display: GPT-2's " Mary" as `·Mary`). */
static void pos_labels(hs_labels *lab, size_t k0, const hs_prompts *p, const hs_tokenizer *tok)
{
    for (int q = 0; q < p->t; q++) {
        hs_buf d = {0};
        hs_tok_display(tok, p->clean[q], &d);
        if (d.oom) lab->oom = 1;
        else hs_labels_set(lab, k0 + (size_t)q, "%d %s", q, d.s ? d.s : "");
        hs_buf_free(&d);
    }
}

hs_status hs_heads_figures(const hs_heads_report *r, const hs_config *cfg, const char *model_path,
                           hs_outdir *od, hs_error *err)
{
    const int L = r->L, H = r->H, is_abs = r->metric == HS_DETECT_ABS;
    fig_run f;
    hs_status s = fig_begin(&f, od, cfg, model_path, (size_t)L * H, (size_t)(L + H), err);
    for (int l = 0; l < L; l++) hs_labels_set(&f.lab, (size_t)l, "L%d", l);
    for (int h = 0; h < H; h++) hs_labels_set(&f.lab, (size_t)(L + h), "H%d", h);
    if (f.lab.oom && s == HS_OK) s = oom(err);
    const char **rl = f.lab.at;
    for (int k = 0; k < HS_HEADS_N && s == HS_OK; k++) {
        if (!r->has[k]) continue;
        for (int i = 0; i < L * H; i++) f.m[i] = (float)r->score[k][i];
        char stem[48], title[160], shows[200];
        snprintf(stem, sizeof stem, "heads_%s", hs_heads_names[k]);
        snprintf(title, sizeof title, "%s score per head (%s, %d prompt%s)", hs_heads_names[k],
                 is_abs ? "abs" : "mul", r->n, r->n == 1 ? "" : "s");
        snprintf(shows, sizeof shows, "the %s detector's %s score of every head, layers x heads",
                 hs_heads_names[k], is_abs ? "abs" : "mul");
        /* mul is in [0, 1]; abs goes down to -1 and below (signed map, its own range) */
        s = hs_outdir_matrix(od, is_abs ? HS_FIG_SIGNED : HS_FIG_NONNEG, stem, f.m, (size_t)L,
                             (size_t)H, rl, rl + L, title, "head", "layer", is_abs ? 0.0 : 1.0,
                             "detector score", NULL, shows, err);
    }
    return fig_end(&f, s);
}

/* The figures' line for r's gap note (hs_patch_gap_note; its terminal
 * note says the same at length) into note, or NULL when there is none:
 * "clean LD −0.23 is below corrupted −0.15: ..." or "clean − corrupted LD
 * gap of only 0.08 logits: ...". */
static const char *patch_gap_line(const hs_patch_report *r, char *note, size_t cap)
{
    char why[512];
    if (!hs_patch_gap_note(r, why, sizeof why)) return NULL;
    const double c = r->ld_clean, k = r->ld_corr;
    char tc[HS_FIXED_BUF], tk[HS_FIXED_BUF]; /* no sign on a zero (hs_fmt_fixed), a minus as U+2212 */
    hs_fmt_fixed(tc, c, 2, 1);
    hs_fmt_fixed(tk, k, 2, 1);
    if (c < k)
        snprintf(note, cap, "clean LD %s%s is below corrupted %s%s: a cell near 1 moves the LD "
                 "away from the answer", tc[0] == '-' ? "−" : "", tc + (tc[0] == '-'), tk[0] == '-' ? "−" : "",
                 tk + (tk[0] == '-'));
    else
        snprintf(note, cap, "clean − corrupted LD gap of only %.2f logits (under %g): every "
                 "value divides by it", c - k, HS_PATCH_GAP_MIN);
    return note;
}

/* Per act a layer x position (or layer x head) matrix; per head act also
 * heads x positions. */
hs_status hs_patch_figures(const hs_patch_report *r, const hs_prompts *p, const hs_tokenizer *tok,
                           const hs_config *cfg, const char *model_path, hs_outdir *od,
                           hs_error *err)
{
    const int L = r->L, H = r->H, T = r->t;
    char why[512];
    if (!hs_patch_usable(r, why, sizeof why)) {
        hs_note(&od->notes, HS_NOTE_CMD, "note: no patch figures: the normalised logit difference is "
                "not usable: %s", why);
        return HS_OK;
    }
    fig_run f;
    hs_status s = fig_begin(&f, od, cfg, model_path, (size_t)L * H * T + (size_t)L * T,
                            (size_t)L * H + (size_t)T + (size_t)L + (size_t)H, err);
    /* labels: positions (with the first prompt's tokens), layers, heads, layer-heads */
    size_t k = (size_t)T;
    pos_labels(&f.lab, 0, p, tok);
    for (int l = 0; l < L; l++) hs_labels_set(&f.lab, k++, "L%d", l);
    for (int h = 0; h < H; h++) hs_labels_set(&f.lab, k++, "H%d", h);
    for (int i = 0; i < L * H; i++) hs_labels_set(&f.lab, k++, "L%dH%d", i / H, i % H);
    if (f.lab.oom && s == HS_OK) s = oom(err);
    const char **pos_l = f.lab.at, **lay_l = pos_l + T, **head_l = lay_l + L, **lh_l = head_l + H;
    char gap_line[200];
    const char *gap_note = patch_gap_line(r, gap_line, sizeof gap_line);
    /* AtP's estimates alone say so; with the exact sweep beside them the figures are the sweep's */
    const char *how = r->method == HS_PATCH_ATP ? "AtP estimate of patching" : "patching";
    for (int a = 0; a < HS_PATCH_N && s == HS_OK; a++) {
        if (!(r->acts & (1u << a))) continue;
        const char *nm = hs_patch_act_names[a];
        char stem[64], title[160], shows[240];
        const int head = hs_patch_act_is_head(a);
        const size_t R = (size_t)L, C = head ? (size_t)H : (size_t)T;
        if (r->metric[a] == NULL) goto by_position; /* --by position */
        for (size_t i = 0; i < R * C; i++) f.m[i] = (float)r->metric[a][i];
        snprintf(stem, sizeof stem, "patch_%s", nm);
        snprintf(title, sizeof title, "%s %s%s: normalised LD (1 = clean restored)", how, nm,
                 head ? " per head, all positions" : "");
        snprintf(shows, sizeof shows, "normalised logit difference when %s is patched clean -> "
                 "corrupted, %s", nm, head ? "per head at every position [layer][head]"
                                           : "by layer x position");
        s = hs_outdir_matrix(od, HS_FIG_SIGNED, stem, f.m, R, C, lay_l, head ? head_l : pos_l,
                             title, head ? "head" : "position (first prompt's tokens)", "layer", 1.0,
                             "normalised logit difference", gap_note, shows, err);
        if (s != HS_OK || !head) continue;
    by_position:
        if (r->metric_pos[a] == NULL) continue; /* --by head */
        for (size_t i = 0; i < (size_t)L * H * T; i++) f.m[i] = (float)r->metric_pos[a][i];
        snprintf(stem, sizeof stem, "patch_%s_by_position", nm);
        snprintf(title, sizeof title, "%s %s per head and position: normalised LD", how, nm);
        snprintf(shows, sizeof shows, "normalised logit difference when one head's %s is patched "
                 "at one position [layer*heads + head][position]", nm);
        s = hs_outdir_matrix(od, HS_FIG_SIGNED, stem, f.m, (size_t)L * H, (size_t)T, lh_l, pos_l,
                             title,
                             a == HS_PATCH_PATTERN ? "destination position (first prompt's tokens)"
                                                   : "position (first prompt's tokens)",
                             "head", 1.0, "normalised logit difference", gap_note, shows, err);
    }
    return fig_end(&f, s);
}

hs_status hs_lens_figures(const hs_lens_report *r, const hs_prompts *p, const hs_tokenizer *tok,
                          const hs_config *cfg, const char *model_path, hs_outdir *od,
                          hs_error *err)
{
    const int K = r->n_points, T = r->t;
    fig_run f;
    hs_status s = fig_begin(&f, od, cfg, model_path, (size_t)K * T, (size_t)(K + T), err);
    for (int k = 0; k < K; k++)
        if (k < r->L) hs_labels_set(&f.lab, (size_t)k, "L%d resid_pre", k);
        else hs_labels_set(&f.lab, (size_t)k, "L%d resid_post", r->L - 1);
    pos_labels(&f.lab, (size_t)K, p, tok);
    if (f.lab.oom && s == HS_OK) s = oom(err);
    for (size_t i = 0; s == HS_OK && i < (size_t)K * T; i++) f.m[i] = (float)r->p_final[i];
    /* one prompt: its own tokens; several: their mean, the positions named by the first's */
    const int one = p->n == 1;
    if (s == HS_OK)
        s = hs_outdir_matrix(od, HS_FIG_NONNEG, "lens_final", f.m, (size_t)K, (size_t)T, f.lab.at,
                             f.lab.at + K,
                             one ? "logit lens: probability of the model's final prediction"
                                 : "logit lens: probability of the model's final prediction, mean "
                                   "over the prompts",
                             one ? "position" : "position (labelled with the first prompt's tokens)",
                             "residual stream", 1.0, "probability", NULL,
                             "the probability the logit lens at each point gives to the model's "
                             "own top-1 token at each position, averaged over the prompts "
                             "[point][position]", err);
    return fig_end(&f, s);
}

hs_status hs_ablate_figures(const hs_ablate_report *r, const hs_config *cfg, const char *model_path,
                            hs_outdir *od, hs_error *err)
{
    fig_run f;
    hs_status s = fig_begin(&f, od, cfg, model_path, (size_t)r->n_comp, (size_t)r->n_comp, err);
    for (int k = 0; k < r->n_comp && s == HS_OK; k++) {
        char name[32];
        hs_ablate_comp_name(&r->comp[k], name, sizeof name);
        hs_labels_set(&f.lab, (size_t)k, "%s", name);
        f.m[k] = (float)(r->comp[k].metric - r->metric_clean);
    }
    if (f.lab.oom && s == HS_OK) s = oom(err);
    char title[128];
    snprintf(title, sizeof title, "%s ablation: metric change per component",
             hs_ablate_method_names[r->method]);
    if (s == HS_OK)
        s = hs_outdir_matrix(od, HS_FIG_BARS, "ablate_change", f.m, (size_t)r->n_comp, 1, f.lab.at,
                             NULL, title,
                             r->has_wrong ? "change of the mean LD (answer − wrong)"
                                          : "change of the mean answer logit",
                             NULL, 0.0, "logits", NULL,
                             "the metric's change when each head, each layer's attention and each "
                             "MLP is ablated", err);
    return fig_end(&f, s);
}

hs_status hs_dla_set_figures(const hs_dla_set *r, const hs_config *cfg, const char *model_path,
                             hs_outdir *od, hs_error *err)
{
    /* the components, then the norm's bias term and b_U's (as the summary prints them), so the
     * bars sum to the target */
    const int has_c = isfinite(r->constant) ? 1 : 0;
    const int nb = r->n_comp + has_c + 1, T = r->attr_pos ? r->t : 0;
    const size_t n = (size_t)r->n_comp * T;
    fig_run f;
    hs_status s = fig_begin(&f, od, cfg, model_path, n > (size_t)nb ? n : (size_t)nb,
                            (size_t)nb + (size_t)T, err);
    for (int k = 0; k < r->n_comp && s == HS_OK; k++) {
        f.m[k] = (float)r->attr[k];
        hs_labels_set(&f.lab, (size_t)k, "%s", r->labels[k]);
    }
    if (s == HS_OK && has_c) {
        f.m[r->n_comp] = (float)r->constant;
        hs_labels_set(&f.lab, (size_t)r->n_comp, "%s", HS_DLA_LN_FINAL_B);
    }
    if (s == HS_OK) {
        f.m[nb - 1] = (float)r->unembed_bias;
        hs_labels_set(&f.lab, (size_t)nb - 1, "%s", HS_DLA_B_U);
    }
    for (int q = 0; q < T; q++) hs_labels_set(&f.lab, (size_t)(nb + q), "%d", q);
    if (f.lab.oom && s == HS_OK) s = oom(err);
    if (s == HS_OK)
        s = hs_outdir_matrix(od, HS_FIG_BARS_SUM, "dla_bars", f.m, (size_t)nb, 1, f.lab.at, NULL,
                             "direct logit attribution (final norm frozen), mean over the prompts",
                             r->has_wrong ? "logit difference answer − wrong" : "answer logit",
                             NULL, 0.0, "logits", NULL,
                             "each component's mean direct logit attribution at the prompts' "
                             "positions, then the final norm's bias term and b_U's", err);
    if (s == HS_OK && r->attr_pos) {
        for (size_t i = 0; i < n; i++) f.m[i] = (float)r->attr_pos[i];
        s = hs_outdir_matrix(od, HS_FIG_SIGNED, "dla_by_position", f.m, (size_t)r->n_comp,
                             (size_t)T, f.lab.at, f.lab.at + nb,
                             "direct logit attribution by source position (final norm frozen at "
                             "the read position)", "source position", "component", 0.0, "logits",
                             NULL, "what each component writes at each position, read at the "
                             "prompts' positions, mean over the prompts", err);
    }
    return fig_end(&f, s);
}
