/*
 * experiments/weights_run.c -- what the weights say without running a
 * sentence (`headscope weights`): every head's full QK and OV circuits over
 * the vocabulary, the cross-layer virtual-weight products, the Q/K/V
 * composition scores with their random baseline, and each head's copying
 * score, as figures and JSON in an output folder (experiments.h, "What the
 * weights say"). The maths is probe's (probe/weights.c: hs_full_QK,
 * hs_full_OV, hs_head_product, hs_composition_scores, hs_copying_scores); the
 * figures are viz's, written through output/.
 */
#include "experiments/experiments.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const COMP_NAME[3] = {"Q", "K", "V"};

/* One run: its folder, notes, context and the heads' names. */
typedef struct {
    hs_outdir *od;
    const hs_notes *notes;
    const cJSON *ctx;      /* {"config", "model", "fold"}: added to every JSON */
    const char *fold;      /* "ln" | "none" */
    int annotate_small;    /* annotate this figure's cells when it is small */
    int nonneg;            /* the values are never negative (norms): sequential map from 0 */
    const hs_model *m;
    int NL, NH, NA;        /* layers, heads a layer, heads */
    const char *const *names; /* (NA) "L<l>H<h>" */
    hs_pool *pool;         /* progress is reported through it (hs_pool_progress); may be NULL */
} w_run;

/* The numbers of the run, computed before the folder is opened. */
typedef struct {
    int *heads;            /* (n_heads) the heads whose full circuits get files, in file order */
    int n_heads;
    float *qk, *ov;        /* (n_heads, n, n) full circuits over the n tokens; qk NULL for
                            * uniform attention */
    int *ids;              /* (n) the tokens of the circuits, or NULL: the whole vocabulary */
    int n;                 /* tokens of the circuits */
} w_nums;

hs_weights_opts hs_weights_opts_default(void)
{
    const hs_weights_opts o = {.out = "weights-out", .fold = HS_FOLD_LN, .comp_draws = HS_COMP_DRAWS};
    return o;
}

void hs_weights_report_free(hs_weights_report *r)
{
    if (!r) return;
    free(r->copying);
    free(r->copying_pos);
    hs_comp_scores_free(&r->comp);
    memset(r, 0, sizeof *r);
}

/* Moves every key of src to the end of dst, in order (src is left empty);
 * 0 when src is NULL or memory ran out. */
static int move_keys(cJSON *dst, cJSON *src)
{
    while (src && src->child) {
        cJSON *it = cJSON_DetachItemViaPointer(src, src->child);
        if (!cJSON_AddItemToObject(dst, it->string, it)) {
            cJSON_Delete(it);
            return 0;
        }
    }
    return src != NULL;
}

/* Adds the run's context {"config", "model", "fold"} to j; 0 on OOM. */
static int add_run(cJSON *j, const cJSON *ctx)
{
    cJSON *c = cJSON_Duplicate(ctx, 1);
    const int ok = move_keys(j, c);
    cJSON_Delete(c);
    return ok;
}

static hs_status oom(hs_error *err)
{
    return hs_fail(err, HS_ERR_NOMEM, "out of memory");
}

/* One signed (or, with x->nonneg, sequential) heatmap and its JSON,
 * optionally masked, with a shared limit (lim > 0 and --range fixed) or its
 * own scale. title is in hs_viz_options.title_markup's markup (the figure
 * typesets its scripts, the JSON holds its plain form). The JSON: viz's, then the run's context, the colour scale and
 * extra's keys (extra is consumed; NULL is out of memory). Over the figure
 * cap (HS_VIZ_MAX_TOKENS a side): with crop, the figure shows the leading
 * cap x cap block (rows and columns in the order given: the top tokens by
 * norm first) with a note under its title, the caller noting it once for
 * every such figure; without, its JSON alone with a note. */
static hs_status write_signed(const w_run *x, const char *stem, const float *mat,
                              const unsigned char *mask, size_t R, size_t C,
                              const char *const *rl, const char *const *cl, const char *title,
                              const char *xlabel, const char *ylabel, double lim, const char *q,
                              const char *shows, int crop, cJSON *extra, hs_error *err)
{
    const hs_figopts *fo = x->od->fo;
    const hs_fig_kind kind = x->nonneg ? HS_FIG_NONNEG : HS_FIG_SIGNED;
    hs_viz_figure *fig = NULL;
    cJSON *j = NULL;
    hs_status s = extra ? HS_OK : oom(err);
    const size_t cap = HS_VIZ_MAX_TOKENS, over = R > cap || C > cap;
    float *cm = NULL; /* the leading block when cropped */
    unsigned char *cmask = NULL;
    if (s == HS_OK && hs_figopts_images(fo)) {
        if (over && !crop) {
            hs_note(x->notes, HS_NOTE_CMD, "note: %s is %zu x %zu, over the figure cap of %d per "
                    "side; writing its JSON only", stem, R, C, HS_VIZ_MAX_TOKENS);
        } else {
            const float *fm = mat;
            const unsigned char *fmask = mask;
            const size_t FR = R < cap ? R : cap, FC = C < cap ? C : cap;
            char note[160];
            if (over) {
                cm = malloc(FR * FC * sizeof *cm);
                cmask = mask ? malloc(FR * FC) : NULL;
                if (!cm || (mask && !cmask)) s = oom(err);
                for (size_t i = 0; s == HS_OK && i < FR; i++) {
                    memcpy(cm + i * FC, mat + i * C, FC * sizeof *cm);
                    if (mask) memcpy(cmask + i * FC, mask + i * C, FC);
                }
                fm = cm;
                fmask = cmask;
                snprintf(note, sizeof note, "the first %zu of %zu tokens (the figure cap); the JSON "
                         "holds all %zu", FR, R, R);
            }
            hs_viz_options o = hs_figopts_for(fo, kind, lim);
            o.value_label = q;
            o.title_markup = 1;
            if (over) o.note = note;
            if (x->annotate_small && R * C <= 256) o.annotate = 1;
            hs_error fe = {0};
            hs_status fs = HS_OK;
            /* the values written in the cells are ours, not asked: dropped
               when they keep the figure from the width */
            for (int k = 0; s == HS_OK && k < 2 &&
                            (k == 0 || (fs == HS_ERR_INPUT && o.annotate && !fo->viz.annotate));
                 k++) {
                o.annotate &= k == 0;
                if (x->nonneg)
                    fs = fmask ? hs_viz_matrix_figure_masked(&fig, fm, fmask, FR, FC, rl, cl, title,
                                                             xlabel, ylabel, &o, &fe)
                               : hs_viz_matrix_figure(&fig, fm, FR, FC, rl, cl, title, xlabel,
                                                      ylabel, &o, &fe);
                else
                    fs = fmask ? hs_viz_signed_figure_masked(&fig, fm, fmask, FR, FC, rl, cl, title,
                                                             xlabel, ylabel, &o, &fe)
                               : hs_viz_signed_figure(&fig, fm, FR, FC, rl, cl, title, xlabel,
                                                      ylabel, &o, &fe);
            }
            if (s == HS_OK) s = hs_outdir_unfit(x->od, stem, fs, &fe, err);
        }
    }
    free(cm);
    free(cmask);
    char *plain = NULL;
    if (s == HS_OK && hs_figopts_data(fo) && !(plain = hs_viz_title_plain(title))) s = oom(err);
    if (s == HS_OK && hs_figopts_data(fo)) {
        s = mask ? hs_viz_signed_json_masked(&j, mat, mask, R, C, rl, cl, plain, xlabel, ylabel,
                                             err)
                 : hs_viz_signed_json(&j, mat, R, C, rl, cl, plain, xlabel, ylabel, err);
        if (s == HS_OK && !add_run(j, x->ctx)) s = oom(err);
        if (s == HS_OK) s = hs_figopts_add_scale(j, fo, kind, lim, err);
        if (s == HS_OK && !move_keys(j, extra)) s = oom(err);
    }
    if (s == HS_OK) s = hs_outdir_figure(x->od, stem, &fig, j, shows, err);
    free(plain);
    cJSON_Delete(extra);
    cJSON_Delete(j);
    hs_viz_figure_destroy(fig);
    return s;
}

static double max_abs(const float *a, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(a[i]) && fabs(a[i]) > m) m = fabs(a[i]);
    return m;
}

/* --tokens FILE: one token a line (hs_tok_one), into nu. */
static hs_status read_tokens(const char *path, const hs_tokenizer *tok, w_nums *nu, hs_error *err)
{
    unsigned char *data = NULL;
    size_t len = 0;
    hs_status s = hs_read_file(path, &data, &len, err);
    if (s != HS_OK) return s;
    nu->ids = malloc(HS_WEIGHTS_MAX_TOKENS * sizeof *nu->ids);
    if (!nu->ids) s = oom(err);
    char *p = (char *)data, *end = p + len;
    for (int line = 1; s == HS_OK && p < end; line++) {
        char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end;
        if (e > p && e[-1] == '\r') e--;
        *e = '\0';
        int id = -1;
        hs_error e2 = {0};
        hs_status s2 = HS_OK;
        if (nu->n == HS_WEIGHTS_MAX_TOKENS)
            s = hs_fail(err, HS_ERR_INPUT, "%s: more than %d tokens", path, HS_WEIGHTS_MAX_TOKENS);
        else if (*p == '\0')
            s = hs_fail(err, HS_ERR_INPUT, "%s:%d: an empty line; --tokens takes one token a line", path, line);
        else if ((s2 = hs_tok_one(tok, p, &id, &e2)) != HS_OK)
            s = hs_fail(err, s2, "%s:%d: %s; --tokens takes one token a line", path, line, e2.msg);
        for (int k = 0; s == HS_OK && k < nu->n; k++)
            if (nu->ids[k] == id)
                s = hs_fail(err, HS_ERR_INPUT, "%s:%d: '%s' is line %d's token again", path, line, p, k + 1);
        if (s == HS_OK) nu->ids[nu->n++] = id;
        p = nl ? nl + 1 : end;
    }
    free(data);
    if (s == HS_OK && nu->n == 0) s = hs_fail(err, HS_ERR_INPUT, "%s: no tokens", path);
    return s;
}

/* --top-tokens N: the n tokens whose W_E rows have the largest L2 norm, by
 * norm (largest first; ties: the lower id first), into nu. */
static hs_status top_tokens(const hs_model *m, int n, w_nums *nu, hs_error *err)
{
    const int V = m->cfg.d_vocab, D = m->cfg.d_model;
    if (n > V) n = V;
    double *norm = malloc((size_t)V * sizeof *norm);
    nu->ids = malloc((size_t)V * sizeof *nu->ids);
    if (!norm || !nu->ids) {
        free(norm);
        return oom(err);
    }
    for (int t = 0; t < V; t++) {
        double sq = 0;
        for (int d = 0; d < D; d++) sq += (double)m->params.W_E[(size_t)t * D + d] * m->params.W_E[(size_t)t * D + d];
        norm[t] = sq;
    }
    for (int k = 0; k < n; k++) { /* n selection passes: n <= HS_WEIGHTS_MAX_TOKENS */
        int best = -1;
        for (int t = 0; t < V; t++)
            if (norm[t] >= 0 && (best < 0 || norm[t] > norm[best])) best = t;
        nu->ids[k] = best;
        norm[best] = -1;
    }
    nu->n = n;
    free(norm);
    return HS_OK;
}

/* The tokens of the full circuits: o's file, the top-N, or the whole
 * vocabulary when it is at most HS_WEIGHTS_MAX_VOCAB tokens. */
static hs_status circuit_tokens(const hs_model *m, const hs_tokenizer *tok, const hs_weights_opts *o,
                                w_nums *nu, hs_error *err)
{
    const int V = m->cfg.d_vocab;
    if (o->tokens_path && o->top_tokens > 0)
        return hs_fail(err, HS_ERR_INPUT, "give --tokens FILE or --top-tokens N, not both");
    if (o->top_tokens < 0 || o->top_tokens > HS_WEIGHTS_MAX_TOKENS)
        return hs_fail(err, HS_ERR_INPUT, "--top-tokens must be in [1, %d]", HS_WEIGHTS_MAX_TOKENS);
    if (o->tokens_path) return read_tokens(o->tokens_path, tok, nu, err);
    if (o->top_tokens > 0) return top_tokens(m, o->top_tokens, nu, err);
    if (V > HS_WEIGHTS_MAX_VOCAB)
        return hs_fail(err, HS_ERR_INPUT, "the vocabulary has %d tokens: the full QK and OV circuits "
                       "over it would be %.1f GB a head; give --tokens FILE (one token a line) or "
                       "--top-tokens N (the N tokens with the largest embedding norm)",
                       V, 2.0 * V * (double)V * sizeof(float) / 1e9);
    nu->n = V;
    return HS_OK;
}

/* The heads whose full circuits get files, into nu: o->only's (each in the
 * model, once), every head under o->all_heads or of a model of at most
 * HS_INSPECT_PER_HEAD_MAX heads (as inspect's per-head figures), else none,
 * with a note saying how to ask. */
static hs_status circuit_heads(const w_run *x, const hs_weights_opts *o, w_nums *nu, hs_error *err)
{
    const int NA = x->NA;
    if (!(nu->heads = malloc((size_t)NA * sizeof *nu->heads))) return oom(err);
    for (int i = 0; i < o->n_only; i++) {
        const hs_head h = o->only[i];
        if (h.layer < 0 || h.head < 0 || h.layer >= x->NL || h.head >= x->NH)
            return hs_fail(err, HS_ERR_INPUT, "--only: L%dH%d is not a head of the model (%d layers "
                           "x %d heads: L0H0..L%dH%d)", h.layer, h.head, x->NL, x->NH, x->NL - 1,
                           x->NH - 1);
        for (int k = 0; k < nu->n_heads; k++)
            if (nu->heads[k] == h.layer * x->NH + h.head)
                return hs_fail(err, HS_ERR_INPUT, "--only lists L%dH%d twice", h.layer, h.head);
        nu->heads[nu->n_heads++] = h.layer * x->NH + h.head;
    }
    if (o->n_only) return HS_OK;
    if (!o->all_heads && NA > HS_INSPECT_PER_HEAD_MAX) {
        hs_note(x->notes, HS_NOTE_CMD, "note: %d heads (over %d): no full QK/OV circuit files per "
                "head (L<l>H<h>_QK, _OV); ask for heads with --only L0H1,... or for all of them "
                "with --all-heads (%d figures)", NA, HS_INSPECT_PER_HEAD_MAX,
                x->m->cfg.attn == HS_ATTN_UNIFORM ? NA : 2 * NA);
        return HS_OK;
    }
    for (int i = 0; i < NA; i++) nu->heads[nu->n_heads++] = i;
    return HS_OK;
}

/* compute's jobs: head nu->heads[i]'s full circuits into nu's slot i. */
typedef struct {
    const w_run *x;
    hs_fold fold;
    int uniform;
    w_nums *nu;
    hs_pool_count pr;
} circ_ctx;

static hs_status circuit_job(void *ctx, int i, int worker, hs_error *err)
{
    (void)worker;
    circ_ctx *c = ctx;
    const w_run *x = c->x;
    w_nums *nu = c->nu;
    const size_t VV = (size_t)nu->n * nu->n;
    hs_head h = {nu->heads[i] / x->NH, nu->heads[i] % x->NH};
    hs_status s = c->uniform ? HS_OK : hs_full_QK_tokens(x->m, h, c->fold, nu->ids, nu->n, nu->qk + (size_t)i * VV, err);
    if (s == HS_OK) s = hs_full_OV_tokens(x->m, h, c->fold, nu->ids, nu->n, nu->ov + (size_t)i * VV, err);
    if (s == HS_OK) hs_pool_count_step(&c->pr);
    return s;
}

/* Every number first (shared colour scales need them all): the full
 * circuits into nu, the copying scores and composition scores into out,
 * each head (pair) a job on x->pool. */
static hs_status compute(const w_run *x, hs_fold fold, int draws, int uniform, w_nums *nu,
                         hs_weights_report *out, hs_error *err)
{
    const int NA = x->NA, nh = nu->n_heads;
    const size_t VV = (size_t)nu->n * nu->n;
    nu->qk = uniform || !nh ? NULL : malloc((size_t)nh * VV * sizeof *nu->qk);
    nu->ov = nh ? malloc((size_t)nh * VV * sizeof *nu->ov) : NULL;
    out->copying = calloc((size_t)NA, sizeof *out->copying);
    out->copying_pos = calloc((size_t)NA, sizeof *out->copying_pos);
    if ((!uniform && nh && !nu->qk) || (nh && !nu->ov) || !out->copying || !out->copying_pos)
        return oom(err);
    circ_ctx c = {x, fold, uniform, nu, {x->pool, "heads' full QK and OV circuits", 0, nh}};
    hs_status s = hs_pool_for(x->pool, nh, circuit_job, &c, err);
    if (s == HS_OK) s = hs_copying_scores(x->m, fold, x->pool, out->copying, out->copying_pos, err);
    return s == HS_OK ? hs_composition_scores(x->m, fold, draws, 0, x->pool, &out->comp, err) : s;
}

/* The two full circuits: name, product, what a cell is, axes, quantity. */
static const struct {
    const char *name, *product, *what, *xl, *yl, *q;
} CIRCUITS[2] = {
    {"QK", "W_{E} W_{QK} W_{E}^{T}", "the attention score (before the 1/sqrt(d_head) scale, without "
     "positions or biases) a query token (row) gives a key token (column)", "key token (source)",
     "query token (destination)", "attention score"},
    {"OV", "W_{E} W_{OV} W_{U}", "the direct effect on each output logit (column) of attending to a "
     "token (row)", "output token (logit)", "attended token (source)", "direct effect on the logit"},
};

/* The n tokens' labels (hs_tok_display: GPT-2's " Mary" as `·Mary`) into
 * lab, and (a subset) their ids and exact strings into e; 0 on OOM. */
static int token_labels(const w_nums *nu, const hs_tokenizer *tok, hs_labels *lab, cJSON *e)
{
    for (int i = 0; i < nu->n && !lab->oom; i++) {
        hs_buf d = {0};
        hs_tok_display(tok, nu->ids ? nu->ids[i] : i, &d);
        if (d.oom) lab->oom = 1;
        else hs_labels_set(lab, (size_t)i, "%s", d.s ? d.s : "");
        hs_buf_free(&d);
    }
    if (lab->oom) return 0;
    if (!nu->ids) return 1;
    cJSON *ids = cJSON_AddArrayToObject(e, "token_ids"), *strs = cJSON_AddArrayToObject(e, "tokens");
    int ok = ids && strs;
    for (int i = 0; ok && i < nu->n; i++) {
        const char *ts = hs_tok_str(tok, nu->ids[i]); /* NULL: a padding id without a token */
        ok = cJSON_AddItemToArray(ids, cJSON_CreateNumber(nu->ids[i])) &&
             cJSON_AddItemToArray(strs, ts ? cJSON_CreateString(ts) : cJSON_CreateNull());
    }
    return ok;
}

/* L<l>H<h>_QK (not for uniform attention) and L<l>H<h>_OV of nu's heads. */
static hs_status write_circuits(const w_run *x, const w_nums *nu, const hs_tokenizer *tok,
                                const hs_weights_report *r, hs_error *err)
{
    const size_t V = (size_t)nu->n, VV = V * V;
    hs_labels lab;
    hs_labels_init(&lab, V);
    cJSON *sub = cJSON_CreateObject();
    if (!sub || !token_labels(nu, tok, &lab, sub)) {
        cJSON_Delete(sub);
        hs_labels_free(&lab);
        return oom(err);
    }
    const char *const *vocab = lab.at;
    const int uniform = nu->qk == NULL, nh = nu->n_heads;
    hs_status s = HS_OK;
    const double lim[2] = {uniform ? 0 : max_abs(nu->qk, (size_t)nh * VV),
                           max_abs(nu->ov, (size_t)nh * VV)};
    char title[256], shows[320], stem[64];
    if (V > HS_VIZ_MAX_TOKENS && hs_figopts_images(x->od->fo)) /* one note for every head's figures */
        hs_note(x->notes, HS_NOTE_CMD, "note: %d tokens, over the figure cap of %d a side: the %s "
                "figures of the %d heads show the first %d (their JSON holds all %d)", nu->n,
                HS_VIZ_MAX_TOKENS, uniform ? "OV" : "QK and OV", nh, HS_VIZ_MAX_TOKENS, nu->n);
    for (int k = 0; k < nh && s == HS_OK; k++)
        for (int c = uniform ? 1 : 0; c < 2 && s == HS_OK; c++) {
            const int i = nu->heads[k];
            const char *nm = x->names[i];
            snprintf(stem, sizeof stem, "%s_%s", nm, CIRCUITS[c].name);
            snprintf(title, sizeof title, "%s full %s circuit %s (fold %s)", nm, CIRCUITS[c].name,
                     CIRCUITS[c].product, x->fold);
            snprintf(shows, sizeof shows, "full %s circuit of %s: %s", CIRCUITS[c].name, nm,
                     CIRCUITS[c].what);
            cJSON *e = cJSON_CreateObject(), *d = cJSON_Duplicate(sub, 1);
            const int moved = move_keys(e, d); /* the subset's token_ids and tokens */
            cJSON_Delete(d);
            if (!moved || !cJSON_AddStringToObject(e, "head", nm) ||
                !cJSON_AddStringToObject(e, "circuit", CIRCUITS[c].name) ||
                !cJSON_AddNumberToObject(e, "shared_color_limit", lim[c]) ||
                (c == 1 && !cJSON_AddNumberToObject(e, "copying_score", r->copying[i]))) {
                cJSON_Delete(e);
                e = NULL;
            }
            s = write_signed(x, stem, (c ? nu->ov : nu->qk) + (size_t)k * VV, NULL, V, V, vocab,
                             vocab, title, CIRCUITS[c].xl, CIRCUITS[c].yl, lim[c], CIRCUITS[c].q,
                             shows, 1, e, err);
            if (s == HS_OK) /* the figures drawn (their files are encoded on the pool) */
                hs_pool_progress(x->pool, "heads' full QK and OV files", 2 * k + c + 1 - uniform * (k + 1),
                                 (uniform ? 1 : 2) * nh);
        }
    cJSON_Delete(sub);
    hs_labels_free(&lab);
    return s;
}

/* One entry of virtual_weights' "products": the [d_head, d_head] product. */
static cJSON *product_json(const w_run *x, int a, int r, int k, float norm, const float *prod)
{
    const int dh = x->m->cfg.d_head;
    char what[16];
    snprintf(what, sizeof what, "W_O.W_%s", COMP_NAME[k]);
    cJSON *pe = cJSON_CreateObject();
    cJSON *rows = NULL;
    int ok = cJSON_AddStringToObject(pe, "sender", x->names[a]) &&
             cJSON_AddStringToObject(pe, "receiver", x->names[x->NH + r]) &&
             cJSON_AddStringToObject(pe, "product", what) &&
             cJSON_AddNumberToObject(pe, "frobenius_norm", norm) &&
             (rows = cJSON_AddArrayToObject(pe, "values")) != NULL;
    for (int i = 0; ok && i < dh; i++) {
        cJSON *row = cJSON_CreateFloatArray(prod + (size_t)i * dh, dh);
        ok = row && cJSON_AddItemToArray(rows, row);
        if (!ok) cJSON_Delete(row);
    }
    if (!ok) {
        cJSON_Delete(pe);
        return NULL;
    }
    return pe;
}

/* write_products' jobs: sender send[j] against the heads of receiver layer
 * rlayer[j] (every job the same work): the norms, and with prods (the JSON
 * keeps them) each product in its cell's place, else in the worker's
 * scratch. */
typedef struct {
    const w_run *x;
    hs_fold fold;
    int uniform, ncol;
    int *send, *rlayer;  /* (n_jobs) */
    float *norms;        /* (n_send, ncol) */
    unsigned char *pmask;/* (n_send, ncol), masked cells set already */
    float *prods;        /* (n_send, ncol, dh, dh) or NULL */
    float *scratch;      /* (workers, dh, dh) */
    hs_pool_count pr;
} prod_ctx;

static hs_status product_job(void *ctx, int j, int worker, hs_error *err)
{
    prod_ctx *p = ctx;
    const int NH = p->x->NH, a = p->send[j], dh = p->x->m->cfg.d_head;
    const size_t dd = (size_t)dh * dh;
    for (int r = (p->rlayer[j] - 1) * NH; r < p->rlayer[j] * NH; r++)
        for (int k = 0; k < 3; k++) {
            const size_t idx = (size_t)a * p->ncol + r * 3 + k;
            if (p->pmask[idx]) continue;
            float *prod = p->prods ? p->prods + idx * dd : p->scratch + (size_t)worker * dd;
            hs_head h1 = {a / NH, a % NH}, h2 = {p->rlayer[j], r % NH};
            hs_status s = hs_head_product(p->x->m, h1, h2, (hs_comp)k, p->fold, prod, err);
            if (s != HS_OK) return s;
            double sq = 0;
            for (size_t q = 0; q < dd; q++) sq += (double)prod[q] * prod[q];
            p->norms[idx] = (float)sqrt(sq);
        }
    hs_pool_count_step(&p->pr);
    return HS_OK;
}

/* virtual_weights: senders in layers 0..L-2, receivers in later layers. */
static hs_status write_products(w_run *x, hs_fold fold, int uniform, hs_error *err)
{
    const int NH = x->NH, n_send = (x->NL - 1) * NH, n_recv = (x->NL - 1) * NH;
    const int ncol = 3 * n_recv, dh = x->m->cfg.d_head, nw = hs_pool_threads(x->pool);
    const int n_jobs = NH * x->NL * (x->NL - 1) / 2; /* (sender, later layer) */
    const size_t dd = (size_t)dh * dh;
    /* every product in the JSON while they are few (a tiny model's); GPT-2
     * small's 52,272 would be 214 million numbers */
    const double n_values = (double)n_send * ncol * (double)dd;
    const int keep = n_values <= HS_WEIGHTS_MAX_PRODUCT_VALUES;
    prod_ctx p = {x, fold, uniform, ncol, malloc((size_t)n_jobs * sizeof(int)),
                  malloc((size_t)n_jobs * sizeof(int)), malloc((size_t)n_send * ncol * sizeof(float)),
                  calloc((size_t)n_send * ncol, 1),
                  keep ? malloc((size_t)n_send * ncol * dd * sizeof(float)) : NULL,
                  malloc((size_t)nw * dd * sizeof(float)),
                  {x->pool, "virtual weights (sender, layer)", 0, n_jobs}};
    float *norms = p.norms;
    unsigned char *pmask = p.pmask;
    hs_labels cols;
    hs_labels_init(&cols, (size_t)ncol);
    for (int r = 0; r < n_recv; r++)
        for (int k = 0; k < 3; k++) hs_labels_set(&cols, (size_t)(r * 3 + k), "%s.%s", x->names[NH + r], COMP_NAME[k]);
    cJSON *extra = cJSON_CreateObject(), *plist = keep ? cJSON_AddArrayToObject(extra, "products") : NULL;
    char note[320];
    snprintf(note, sizeof note, "values[a][r] = ||W_O^a W_X^r||_F for sender a (row) and receiver "
             "input r.X (column), X = Q, K, V; each product is [d_head, d_head], %s",
             keep ? "listed under products" : "not listed (more numbers than the JSON keeps)");
    const int ok = (plist || !keep) && cJSON_AddStringToObject(extra, "note", note);
    hs_status s = !p.send || !p.rlayer || !norms || !pmask || (keep && !p.prods) || !p.scratch ||
                  cols.oom || !ok ? oom(err) : HS_OK;
    if (s == HS_OK && !keep)
        hs_note(x->notes, HS_NOTE_CMD, "note: virtual_weights.json holds the Frobenius norms only: "
                "the %d x %d [d_head, d_head] products would be %.0f numbers (more than %d)",
                n_send, ncol, n_values, HS_WEIGHTS_MAX_PRODUCT_VALUES);
    for (int a = 0, j = 0; s == HS_OK && a < n_send; a++) {
        for (int l2 = a / NH + 1; l2 < x->NL; l2++, j++) {
            p.send[j] = a;
            p.rlayer[j] = l2;
        }
        for (int r = 0; r < n_recv; r++)
            for (int k = 0; k < 3; k++) {
                const size_t idx = (size_t)a * ncol + r * 3 + k;
                if (1 + r / NH <= a / NH || (uniform && k != HS_COMP_V)) {
                    pmask[idx] = 1;
                    norms[idx] = NAN;
                }
            }
    }
    if (s == HS_OK) s = hs_pool_for(x->pool, n_jobs, product_job, &p, err);
    for (int a = 0; keep && a < n_send && s == HS_OK; a++)
        for (int r = 0; r < n_recv && s == HS_OK; r++)
            for (int k = 0; k < 3 && s == HS_OK; k++) {
                const size_t idx = (size_t)a * ncol + r * 3 + k;
                if (pmask[idx]) continue;
                cJSON *pe = product_json(x, a, r, k, norms[idx], p.prods + idx * dd);
                if (!pe || !cJSON_AddItemToArray(plist, pe)) {
                    cJSON_Delete(pe);
                    s = oom(err);
                }
            }
    if (s == HS_OK) {
        char title[256];
        snprintf(title, sizeof title, "virtual weights ||W_{O}^{A} W_{Q/K/V}^{B}||_{F} (fold %s)",
                 x->fold);
        x->annotate_small = 1;
        x->nonneg = 1;
        s = write_signed(x, "virtual_weights", norms, pmask, (size_t)n_send, (size_t)ncol, x->names,
                         cols.at, title, "receiver head and its input (Q, K or V)", "sender head", 0,
                         "Frobenius norm",
                         "Frobenius norms of the cross-layer virtual-weight products W_O^A W_Q^B, "
                         "W_O^A W_K^B, W_O^A W_V^B (sender A = row, receiver B.input = column); the "
                         "JSON holds every [d_head, d_head] product", 0, extra, err);
        extra = NULL;
        x->annotate_small = 0;
        x->nonneg = 0;
    }
    cJSON_Delete(extra);
    hs_labels_free(&cols);
    free(p.send);
    free(p.rlayer);
    free(norms);
    free(pmask);
    free(p.prods);
    free(p.scratch);
    return s;
}

/* The JSON keys of composition_X beside the figure's: the raw scores (null
 * where not reported) and the baseline; fills cmat, cmask (NA, NA). */
static cJSON *composition_json(const w_run *x, const hs_comp_scores *cs, int k, const float *src,
                               double comp_lim, float *cmat, unsigned char *cmask)
{
    const int NA = x->NA;
    cJSON *e = cJSON_CreateObject(), *raw = cJSON_AddArrayToObject(e, "scores");
    int ok = raw != NULL;
    for (int i = 0; i < NA && ok; i++) {
        cJSON *row = cJSON_CreateArray();
        ok = row && cJSON_AddItemToArray(raw, row);
        if (!ok) cJSON_Delete(row);
        for (int j = 0; j < NA && ok; j++) {
            float v = src[(size_t)i * NA + j];
            int masked = !isfinite(v);
            cmask[(size_t)i * NA + j] = (unsigned char)masked;
            cmat[(size_t)i * NA + j] = masked ? NAN : (float)(v - cs->baseline);
            cJSON *c = masked ? cJSON_CreateNull() : cJSON_CreateNumber(v);
            ok = c && cJSON_AddItemToArray(row, c);
            if (!ok) cJSON_Delete(c);
        }
    }
    ok = ok && cJSON_AddStringToObject(e, "composition", COMP_NAME[k]) &&
         cJSON_AddNumberToObject(e, "baseline", cs->baseline) &&
         cJSON_AddNumberToObject(e, "baseline_std", cs->baseline_std) &&
         cJSON_AddNumberToObject(e, "n_draws", cs->n_draws) &&
         cJSON_AddNumberToObject(e, "shared_color_limit", comp_lim) &&
         cJSON_AddStringToObject(e, "note", "values = scores - baseline (what the figure shows); "
                                 "scores = C(W_OV^A, W_X^B) for sender A (row) and receiver B "
                                 "(column); null = not reported (B is not in a later layer than A)");
    if (!ok) {
        cJSON_Delete(e);
        return NULL;
    }
    return e;
}

/* composition_Q, composition_K, composition_V: scores minus the baseline. */
static hs_status write_composition(const w_run *x, const hs_comp_scores *cs, int uniform,
                                   hs_error *err)
{
    const int NA = x->NA;
    float *cmat = malloc((size_t)NA * NA * sizeof *cmat);
    unsigned char *cmask = calloc((size_t)NA * NA, 1);
    hs_status s = !cmat || !cmask ? oom(err) : HS_OK;
    const float *src[3] = {cs->q, cs->k, cs->v};
    /* one scale for Q, K and V: the three are compared */
    double comp_lim = 0;
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < (size_t)NA * NA && !(uniform && k != HS_COMP_V); i++)
            if (isfinite(src[k][i])) comp_lim = fmax(comp_lim, fabs(src[k][i] - cs->baseline));
    for (int k = 0; k < 3 && s == HS_OK; k++) {
        if (uniform && k != HS_COMP_V) continue;
        cJSON *e = composition_json(x, cs, k, src[k], comp_lim, cmat, cmask);
        char stem[64], title[256], shows[320];
        snprintf(stem, sizeof stem, "composition_%s", COMP_NAME[k]);
        snprintf(title, sizeof title, "%s-composition score − random baseline %.3f (fold %s)",
                 COMP_NAME[k], cs->baseline, x->fold);
        snprintf(shows, sizeof shows, "%s-composition scores of every head pair minus the "
                 "random baseline (%.3f +- %.3f over %d draws); sender = row, receiver = "
                 "column; pairs not in later layers are masked / null", COMP_NAME[k],
                 cs->baseline, cs->baseline_std, cs->n_draws);
        s = write_signed(x, stem, cmat, cmask, (size_t)NA, (size_t)NA, x->names, x->names, title,
                         "receiver head", "sender head", comp_lim, "composition score − baseline",
                         shows, 0, e, err);
    }
    free(cmat);
    free(cmask);
    return s;
}

/* copying: each head's copying score as bars on the score's whole range. */
static hs_status write_copying(const w_run *x, const hs_weights_report *r, hs_error *err)
{
    const hs_figopts *fo = x->od->fo;
    const int NA = x->NA;
    float *cv = malloc((size_t)NA * sizeof *cv);
    hs_viz_figure *fig = NULL;
    cJSON *j = NULL;
    hs_status s = cv ? HS_OK : oom(err);
    char title[256];
    snprintf(title, sizeof title, "OV copying score (sum lambda / sum |lambda|, fold %s)", x->fold);
    for (int i = 0; i < NA && cv; i++) cv[i] = (float)r->copying[i];
    /* the score's whole range, so heads compare across figures and models */
    hs_viz_options bo = hs_figopts_for(fo, HS_FIG_BARS, 1.0);
    if (s == HS_OK && hs_figopts_images(fo)) {
        hs_error fe = {0};
        s = hs_viz_bars_figure(&fig, cv, (size_t)NA, x->names, title, "copying score (−1..1)", &bo,
                               &fe);
        s = hs_outdir_unfit(x->od, "copying", s, &fe, err);
    }
    if (s == HS_OK && hs_figopts_data(fo)) {
        s = hs_viz_bars_json(&j, cv, (size_t)NA, x->names, title, "copying score (−1..1)", err);
        cJSON *pf = s == HS_OK ? cJSON_CreateDoubleArray(r->copying_pos, NA) : NULL;
        if (s == HS_OK && (!add_run(j, x->ctx) || !pf || !cJSON_AddItemToObject(j, "positive_fraction", pf))) {
            if (!cJSON_GetObjectItem(j, "positive_fraction")) cJSON_Delete(pf);
            s = oom(err);
        }
        if (s == HS_OK && !cJSON_AddStringToObject(j, "note", "values = (sum of the eigenvalues of "
                                                   "the full OV circuit).real / sum of their "
                                                   "absolute values; positive_fraction = share of "
                                                   "nonzero eigenvalues with a positive real part"))
            s = oom(err);
    }
    if (s == HS_OK)
        s = hs_outdir_figure(x->od, "copying", &fig, j,
                             "each head's eigenvalue copying score of its full OV circuit", err);
    hs_viz_figure_destroy(fig);
    cJSON_Delete(j);
    free(cv);
    return s;
}

/* The highest finite score of each composition, as the summary names it. */
static void best_pairs(const w_run *x, hs_weights_report *r)
{
    const float *src[3] = {r->comp.q, r->comp.k, r->comp.v};
    for (int k = 0; k < 3; k++) {
        int bi = -1;
        for (int i = 0; x->NL >= 2 && !(r->uniform && k != HS_COMP_V) && i < x->NA * x->NA; i++)
            if (isfinite(src[k][i]) && (bi < 0 || src[k][i] > src[k][bi])) bi = i;
        r->comp_best[k] = bi;
    }
}

/* The figures, then index.json. */
static hs_status write_all(w_run *x, const w_nums *nu, const hs_tokenizer *tok, hs_fold fold,
                           hs_weights_report *r, hs_error *err)
{
    hs_status s = nu->n_heads ? write_circuits(x, nu, tok, r, err) : HS_OK;
    if (s != HS_OK) return s;
    if (x->NL < 2) {
        r->skip_cross_layer = 1;
    } else {
        if ((s = write_products(x, fold, r->uniform, err)) != HS_OK ||
            (s = write_composition(x, &r->comp, r->uniform, err)) != HS_OK)
            return s;
    }
    r->skip_qk = r->uniform;
    if ((s = write_copying(x, r, err)) != HS_OK) return s;
    cJSON *extra = cJSON_Duplicate(x->ctx, 1);
    int ok = extra != NULL;
    if (x->NL >= 2)
        ok = ok && cJSON_AddNumberToObject(extra, "composition_baseline", r->comp.baseline) &&
             cJSON_AddNumberToObject(extra, "composition_baseline_std", r->comp.baseline_std);
    s = ok ? hs_outdir_commit(x->od, extra, err) : oom(err);
    cJSON_Delete(extra);
    if (s == HS_OK) r->n_files = hs_outdir_n_files(x->od);
    return s;
}

hs_status hs_weights_run(const hs_model *m, const hs_tokenizer *tok, const hs_weights_opts *o,
                         hs_figopts *fo, hs_pool *pool, const hs_notes *notes,
                         hs_weights_report *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    const hs_config *cfg = &m->cfg;
    const int NA = cfg->n_layers * cfg->n_heads;
    out->L = cfg->n_layers;
    out->H = cfg->n_heads;
    out->uniform = cfg->attn == HS_ATTN_UNIFORM;
    for (int k = 0; k < 3; k++) out->comp_best[k] = -1;
    if (o->vocab_is_ids)
        hs_note(notes, HS_NOTE_CMD, "note: %s has no vocabulary; tokens are labelled by id (#0, "
                "#1, ...); --vocab FILE names them", o->model_path);
    hs_outdir od = {0};
    hs_labels names;
    hs_labels_init(&names, (size_t)NA);
    for (int i = 0; i < NA; i++) hs_labels_set(&names, (size_t)i, "L%dH%d", i / cfg->n_heads, i % cfg->n_heads);
    w_nums nu = {0};
    w_run x = {&od, notes, NULL, o->fold == HS_FOLD_LN ? "ln" : "none", 0, 0,
               m, cfg->n_layers, cfg->n_heads, NA, names.at, pool};
    cJSON *ctx = hs_run_context(cfg, o->model_path);
    hs_status s = !ctx || names.oom || !cJSON_AddStringToObject(ctx, "fold", x.fold) ? oom(err) : HS_OK;
    x.ctx = ctx;
    if (s == HS_OK) s = circuit_heads(&x, o, &nu, err);
    /* the tokens when a head's circuits are written, or given */
    if (s == HS_OK && (nu.n_heads || o->tokens_path || o->top_tokens)) s = circuit_tokens(m, tok, o, &nu, err);
    out->n_tokens = nu.n;
    if (s == HS_OK) s = compute(&x, o->fold, o->comp_draws, out->uniform, &nu, out, err);
    if (s == HS_OK) best_pairs(&x, out);
    const char *const inputs[] = {o->model_path, NULL}; /* never replaced or removed */
    if (s == HS_OK) s = hs_figopts_font_open(fo, err);
    if (s == HS_OK) s = hs_outdir_open(&od, "weights", o->out, fo, inputs, pool, notes, err);
    if (s == HS_OK) s = write_all(&x, &nu, tok, o->fold, out, err);
    hs_outdir_close(&od);
    cJSON_Delete(ctx);
    hs_labels_free(&names);
    free(nu.heads);
    free(nu.qk);
    free(nu.ov);
    free(nu.ids);
    return s;
}
