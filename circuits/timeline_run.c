/*
 * circuits/timeline_run.c -- circuits over a training run (circuits.h, "Circuits
 * over a training run"): every checkpoint `train --keep DIR` kept (or a list
 * of checkpoints, e.g. Hugging Face folders of a run's revisions), its
 * timeline point (tasks/timeline.c), the steps where things happened, the
 * numbers as JSON and the line plots over steps in an output folder.
 */
#define _POSIX_C_SOURCE 200809L
#include "circuits/circuits.h"
#include "tasks/text.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hs_timeline_report_free(hs_timeline_report *r)
{
    if (r == NULL) return;
    for (int i = 0; i < r->n; i++) {
        if (r->points) hs_timeline_point_free(&r->points[i]);
        if (r->files) free(r->files[i]);
    }
    free(r->points);
    free(r->files);
    free(r->steps);
    free(r->best);
    free(r->heldout_loss);
    free(r->heldout_icl);
    free(r->seen_ids);
    cJSON_Delete(r->json);
    memset(r, 0, sizeof *r);
}

typedef struct {
    int step;
    char *path;
} ckpt;

static int cmp_ckpt(const void *a, const void *b)
{
    return ((const ckpt *)a)->step - ((const ckpt *)b)->step;
}

/* The step-NNNNNN.safetensors files of dir, sorted by step, into r->n,
 * r->steps and r->files. */
static hs_status list_ckpts(const char *dir, hs_timeline_report *r, hs_error *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return hs_fail(err, HS_ERR_IO, "cannot open folder %s: %s (timeline takes the folder of "
                       "train --keep DIR)", dir, strerror(errno));
    ckpt *v = NULL;
    int n = 0, cap = 0, oom = 0;
    struct dirent *e;
    while (!oom && (e = readdir(d)) != NULL) {
        int step, len = 0;
        if (sscanf(e->d_name, "step-%d.safetensors%n", &step, &len) != 1 || e->d_name[len] != '\0' ||
            strlen(e->d_name) != strlen("step-000000.safetensors") || step < 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            ckpt *nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv) {
                oom = 1;
                break;
            }
            v = nv;
        }
        v[n].step = step;
        v[n].path = hs_path_join(dir, e->d_name);
        if (!v[n].path) oom = 1;
        else n++;
    }
    closedir(d);
    hs_status s = HS_OK;
    if (!oom && n > 0) {
        qsort(v, (size_t)n, sizeof *v, cmp_ckpt);
        r->steps = calloc((size_t)n, sizeof *r->steps);
        r->files = calloc((size_t)n, sizeof *r->files);
        r->points = calloc((size_t)n, sizeof *r->points);
        r->best = calloc((size_t)n, sizeof *r->best);
        oom = !r->steps || !r->files || !r->points || !r->best;
    }
    if (oom) {
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    } else if (n == 0) {
        s = hs_fail(err, HS_ERR_INPUT, "%s holds no step-NNNNNN.safetensors checkpoints (train --keep %s)",
                    dir, dir);
    } else {
        r->n = n;
        for (int i = 0; i < n; i++) {
            r->steps[i] = v[i].step;
            r->files[i] = v[i].path;
            v[i].path = NULL;
        }
    }
    for (int i = 0; i < n; i++) free(v[i].path);
    free(v);
    return s;
}

/* The step in a checkpoint folder's name: the digits after its last "step"
 * (step1000, pythia-70m-step1000, step-000250), -1 when it has none. */
static long step_in_name(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && path[b - 1] != '/') b--;
    long step = -1;
    for (size_t i = b; i + 4 <= n; i++) {
        if (strncmp(path + i, "step", 4) != 0) continue;
        size_t j = i + 4;
        if (j < n && (path[j] == '-' || path[j] == '_')) j++;
        if (j >= n || path[j] < '0' || path[j] > '9') continue;
        long v = 0;
        while (j < n && path[j] >= '0' && path[j] <= '9' && v < 1000000000L) v = v * 10 + (path[j++] - '0');
        step = v;
    }
    return step;
}

/* The n checkpoints of paths at steps (NULL: the step in each name), sorted
 * by step, into r->n, r->steps and r->files. */
static hs_status list_models(const char *const *paths, const int *steps, int n, hs_timeline_report *r,
                             hs_error *err)
{
    if (n < 1) return hs_fail(err, HS_ERR_INPUT, "--models needs at least one checkpoint");
    ckpt *v = calloc((size_t)n, sizeof *v);
    r->steps = calloc((size_t)n, sizeof *r->steps);
    r->files = calloc((size_t)n, sizeof *r->files);
    r->points = calloc((size_t)n, sizeof *r->points);
    r->best = calloc((size_t)n, sizeof *r->best);
    hs_status s = v && r->steps && r->files && r->points && r->best ? HS_OK
                                                                    : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n && s == HS_OK; i++) {
        const long st = steps ? steps[i] : step_in_name(paths[i]);
        if (st < 0 || st > 1000000000L)
            s = hs_fail(err, HS_ERR_INPUT, "%s: no training step in its name (e.g. step1000); give "
                        "--steps", paths[i]);
        else if ((v[i].path = hs_strdup(paths[i])) == NULL)
            s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        v[i].step = (int)st;
    }
    if (s == HS_OK) qsort(v, (size_t)n, sizeof *v, cmp_ckpt);
    for (int i = 1; i < n && s == HS_OK; i++)
        if (v[i].step == v[i - 1].step)
            s = hs_fail(err, HS_ERR_INPUT, "%s and %s are both step %d", v[i - 1].path, v[i].path,
                        v[i].step);
    if (s == HS_OK) {
        r->n = n;
        for (int i = 0; i < n; i++) {
            r->steps[i] = v[i].step;
            r->files[i] = v[i].path;
            v[i].path = NULL;
        }
    }
    for (int i = 0; v && i < n; i++) free(v[i].path);
    free(v);
    return s;
}

/* The held-out stream of corpus for the text checkpoint ld (its tokenizer and
 * split): *t, and r's held-out arrays; a note when it is not the run's corpus. */
static hs_status text_open(hs_timeline_report *r, const hs_loaded *ld, const hs_timeline_corpus *corpus,
                           const hs_notes *notes, hs_text **t, hs_error *err)
{
    hs_corpus c;
    hs_status s = hs_corpus_read(corpus->paths, corpus->n, &c, err);
    if (s != HS_OK) return s;
    s = ld->meta.vocab ? hs_text_create(&c, ld->meta.vocab, strlen(ld->meta.vocab), &ld->text, t, err)
                       : hs_fail(err, HS_ERR_INPUT, "%s carries no tokenizer", r->files[0]);
    hs_corpus_free(&c);
    if (s != HS_OK) return s;
    if ((int)(*t)->tok->n != ld->model->cfg.d_vocab)
        return hs_fail(err, HS_ERR_CONFIG, "the tokenizer has %zu tokens but d_vocab is %d", (*t)->tok->n,
                       ld->model->cfg.d_vocab);
    char h[24];
    snprintf(h, sizeof h, "\"%016llx\"", (unsigned long long)(*t)->corpus_hash);
    if (ld->meta.task == NULL || strstr(ld->meta.task, h) == NULL)
        hs_note(notes, HS_NOTE_CMD, "the corpus (FNV-1a %.16s) is not the one %s was trained on", h + 1,
                r->files[0]);
    /* the ids the training part holds: the repeated random tokens are drawn among them */
    const int V = ld->model->cfg.d_vocab;
    char *seen = calloc((size_t)V, 1);
    r->seen_ids = malloc((size_t)V * sizeof *r->seen_ids);
    if (!seen || !r->seen_ids) {
        free(seen);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    for (size_t k = 0; k < (*t)->n_train; k++) seen[(*t)->train[k]] = 1;
    for (int v = 0; v < V; v++)
        if (seen[v]) r->seen_ids[r->n_seen_ids++] = v;
    free(seen);
    r->heldout_loss = malloc((size_t)r->n * sizeof *r->heldout_loss);
    r->heldout_icl = malloc((size_t)r->n * sizeof *r->heldout_icl);
    if (!r->heldout_loss || !r->heldout_icl) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    return HS_OK;
}

/* Every checkpoint's point; all of one run (task and shape). models: the
 * checkpoints may carry no task (then: repeated random tokens). Text
 * checkpoints: repeated random tokens of their BPE, and the held-out loss and
 * ICL score on corpus when given. */
static hs_status compute_points(hs_timeline_report *r, int models, const hs_timeline_corpus *corpus,
                                const hs_notes *notes, hs_error *err)
{
    r->induction = -1;
    r->icl_jump = -1;
    hs_text *text = NULL;
    hs_status s = HS_OK;
    for (int i = 0; i < r->n && s == HS_OK; i++) {
        hs_loaded ld;
        s = hs_load(r->files[i], models ? 0 : HS_NEED_ANY_TASK | HS_ALLOW_TEXT, NULL, notes, &ld, err);
        if (s != HS_OK) break;
        const int is_ind = ld.ind != NULL || (ld.task == NULL);
        const int is_rep = ld.ind == NULL && ld.task == NULL;
        if (r->induction >= 0 && (is_ind != r->induction || is_rep != r->repeated || ld.is_text != r->text ||
                                  ld.model->cfg.n_layers != r->L || ld.model->cfg.n_heads != r->H)) {
            hs_loaded_free(&ld);
            s = hs_fail(err, HS_ERR_INPUT, "%s is not from the same run (task or shape differs from the "
                        "first checkpoint)", r->files[i]);
            break;
        }
        r->induction = is_ind;
        r->repeated = is_rep;
        r->text = ld.is_text;
        r->L = ld.model->cfg.n_layers;
        r->H = ld.model->cfg.n_heads;
        if (i == 0 && corpus && corpus->n > 0) {
            s = ld.is_text ? text_open(r, &ld, corpus, notes, &text, err)
                           : hs_fail(err, HS_ERR_INPUT, "--corpus: the checkpoints are not text models "
                                     "(train --task text)");
        } else if (i == 0 && ld.is_text) {
            hs_note(notes, HS_NOTE_CMD, "text checkpoints without --corpus: the held-out ICL score is not "
                    "computed");
        }
        hs_error pe = {0};
        if (s == HS_OK && is_rep) {
            /* the model's own tokens: its tokenizer's (padding ids left out), else every id */
            const int V = ld.model->cfg.d_vocab;
            const int nt = ld.vocab_is_ids || (int)ld.vocab->n > V ? V : (int)ld.vocab->n;
            hs_timeline_rep_opts o = hs_timeline_rep_opts_default();
            o.ids = r->seen_ids;
            o.n_ids = r->n_seen_ids;
            s = hs_timeline_point_repeated(ld.model, ld.vocab_is_ids ? -1 : hs_tok_bos(ld.vocab), nt, &o,
                                           &r->points[i], &pe);
        } else if (s == HS_OK) {
            s = is_ind ? hs_timeline_point_induction(ld.model, ld.ind, &r->points[i], &pe)
                       : hs_timeline_point_winograd(ld.model, ld.task, &r->points[i], &pe);
        }
        if (s == HS_OK && text) {
            hs_text_score sc;
            s = hs_text_perplexity(ld.model, text->heldout, text->n_heldout, text->p.n_ctx, 0, &sc, &pe);
            r->heldout_loss[i] = sc.loss;
            r->heldout_icl[i] = sc.icl_score;
            r->icl_early = sc.icl_early;
            r->icl_late = sc.icl_late;
        }
        hs_loaded_free(&ld);
        if (s != HS_OK && pe.msg[0]) s = hs_fail(err, s, "%s: %s", r->files[i], pe.msg);
    }
    hs_text_destroy(text);
    if (s == HS_OK && r->heldout_icl) {
        r->icl_jump = hs_timeline_jump(r->heldout_icl, r->n, -1);
        if (r->icl_jump >= 0 && !(r->heldout_icl[r->icl_jump] < r->heldout_icl[r->icl_jump - 1]))
            r->icl_jump = -1; /* the score never falls */
    }
    return s;
}

/* The best head score of each checkpoint and the steps where things
 * happened; *drop_by: the loss drop at r->drop. */
static hs_status summarise(hs_timeline_report *r, double *drop_by, hs_error *err)
{
    const int n = r->n, L = r->L, H = r->H;
    double *lossv = calloc(n > 0 ? (size_t)n : 1, sizeof *lossv);
    if (!lossv) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    r->first_hold = r->first_decision = -1;
    for (int i = 0; i < n; i++) {
        const hs_timeline_point *p = &r->points[i];
        double b = 0.0;
        for (int k = r->induction ? H : 0; k < L * H; k++)
            b = fmax(b, r->induction ? p->ind[k] : p->first_noun[k]);
        r->best[i] = b;
        lossv[i] = r->induction ? p->seg_loss : p->loss;
        if (p->holds && r->first_hold < 0) r->first_hold = i;
        if (p->n_decision > 0 && r->first_decision < 0) r->first_decision = i;
    }
    r->jump = r->induction && L > 1 ? hs_timeline_jump(r->best, n, 1) : -1;
    if (r->jump >= 0 && !(r->best[r->jump] > r->best[r->jump - 1])) r->jump = -1; /* it never rises */
    r->drop = hs_timeline_jump(lossv, n, -1);
    if (r->drop >= 0 && !(lossv[r->drop] < lossv[r->drop - 1])) r->drop = -1; /* it never falls */
    *drop_by = r->drop >= 0 ? lossv[r->drop - 1] - lossv[r->drop] : NAN;
    free(lossv);
    return HS_OK;
}

static cJSON *farr(const float *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(hs_f32_shortest(v[i])));
    return a;
}

static void add_num(cJSON *o, const char *k, double v)
{
    cJSON_AddItemToObject(o, k, hs_json_num_or_null(v));
}

/* One checkpoint's entry of the JSON. */
static cJSON *point_json(const hs_timeline_report *r, int i)
{
    const hs_timeline_point *p = &r->points[i];
    const int LH = r->L * r->H;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", r->files[i]);
    cJSON_AddNumberToObject(o, "step", r->steps[i]);
    add_num(o, "loss", p->loss);
    add_num(o, "accuracy", p->accuracy);
    if (r->induction) {
        add_num(o, "segment_loss", p->seg_loss);
        add_num(o, "icl_score", p->icl);
    }
    if (r->heldout_icl) {
        add_num(o, "heldout_loss", r->heldout_loss[i]);
        add_num(o, "heldout_icl_score", r->heldout_icl[i]);
    }
    cJSON_AddItemToObject(o, "previous_token", farr(p->prev, LH));
    cJSON_AddItemToObject(o, "induction", farr(p->ind, LH));
    if (p->first_noun) cJSON_AddItemToObject(o, "first_noun", farr(p->first_noun, LH));
    cJSON_AddBoolToObject(o, "holds", p->holds);
    if (!r->induction) cJSON_AddBoolToObject(o, "step1_holds", p->step1);
    cJSON_AddStringToObject(o, "heads", p->heads);
    cJSON_AddStringToObject(o, "verdict", p->verdict);
    return o;
}

/* Every number as JSON (hs_timeline_report.json). */
static hs_status report_json(hs_timeline_report *r, const char *dir, double drop_by, hs_error *err)
{
    cJSON *root = r->json = cJSON_CreateObject();
    if (!root) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    cJSON_AddStringToObject(root, "dir", dir);
    cJSON_AddStringToObject(root, "task", r->text       ? "text (repeated random tokens)"
                                          : r->repeated ? "repeated random tokens"
                                          : r->induction ? "induction" : "winograd");
    cJSON_AddNumberToObject(root, "n_layers", r->L);
    cJSON_AddNumberToObject(root, "n_heads", r->H);
    cJSON *sum = cJSON_AddObjectToObject(root, "summary");
    if (r->jump >= 0) cJSON_AddNumberToObject(sum, "induction_jump_step", r->steps[r->jump]);
    if (r->drop >= 0) {
        cJSON_AddNumberToObject(sum, "loss_drop_step", r->steps[r->drop]);
        cJSON_AddNumberToObject(sum, "loss_drop", drop_by);
        cJSON_AddStringToObject(sum, "loss_drop_of", r->induction ? "repeated-segment loss" : "held-out loss");
    }
    add_num(sum, "first_step_circuit_holds", r->first_hold >= 0 ? r->steps[r->first_hold] : NAN);
    if (r->heldout_icl) {
        cJSON_AddNumberToObject(sum, "repeated_tokens_drawn_from", r->n_seen_ids);
        add_num(sum, "heldout_icl_jump_step", r->icl_jump >= 0 ? r->steps[r->icl_jump] : NAN);
        add_num(sum, "heldout_icl_jump", r->icl_jump >= 0 ? r->heldout_icl[r->icl_jump] -
                                                                r->heldout_icl[r->icl_jump - 1]
                                                          : NAN);
        cJSON_AddNumberToObject(sum, "heldout_icl_early", r->icl_early);
        cJSON_AddNumberToObject(sum, "heldout_icl_late", r->icl_late);
    }
    if (!r->induction)
        add_num(sum, "first_step_decision_heads", r->first_decision >= 0 ? r->steps[r->first_decision] : NAN);
    cJSON *arr = cJSON_AddArrayToObject(root, "checkpoints");
    for (int i = 0; i < r->n; i++) cJSON_AddItemToArray(arr, point_json(r, i));
    cJSON *names = cJSON_AddArrayToObject(root, "head_names");
    if (r->repeated && r->n > 0 && r->points[0].tokens) {
        /* the sequences scored (the same draw at every checkpoint) */
        const hs_timeline_point *p = &r->points[0];
        cJSON *seqs = cJSON_AddArrayToObject(root, "repeated_tokens");
        for (int q = 0; q < p->n_seqs; q++)
            cJSON_AddItemToArray(seqs, cJSON_CreateIntArray(p->tokens + (size_t)q * p->seq_len, p->seq_len));
    }
    for (int k = 0; k < r->L * r->H; k++) {
        char nm[32];
        snprintf(nm, sizeof nm, "L%dH%d", k / r->H, k % r->H);
        cJSON_AddItemToArray(names, cJSON_CreateString(nm));
    }
    return HS_OK;
}

/* The line plots: the task's head score per head, previous-token per head,
 * the metric, the loss. */
static hs_status write_plots(const hs_timeline_report *r, hs_outdir *od, const hs_figopts *fo,
                             const hs_notes *notes, hs_error *err)
{
    const int n = r->n, LH = r->L * r->H, H = r->H, induction = r->induction;
    if (n > HS_VIZ_MAX_POINTS) {
        hs_note(notes, HS_NOTE_CMD, "%d checkpoints, over the plot's %d; writing timeline.json only", n,
                HS_VIZ_MAX_POINTS);
        return HS_OK;
    }
    float *x = malloc((size_t)n * sizeof *x);
    float *y0 = malloc((size_t)LH * n * sizeof *y0), *y1 = malloc((size_t)LH * n * sizeof *y1);
    float *y2 = malloc((size_t)n * 2 * sizeof *y2), *y3 = malloc((size_t)n * 2 * sizeof *y3);
    const int text = r->heldout_icl != NULL; /* the metric panel: the two ICL scores */
    hs_labels hl;
    hs_labels_init(&hl, (size_t)LH);
    for (int k = 0; k < LH; k++) hs_labels_set(&hl, (size_t)k, "L%dH%d", k / H, k % H);
    hs_viz_figure *f = NULL;
    cJSON *j = NULL;
    hs_status s = HS_OK;
    if (!x || !y0 || !y1 || !y2 || !y3 || hl.oom) {
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        const hs_timeline_point *p = &r->points[i];
        x[i] = (float)r->steps[i];
        for (int k = 0; k < LH; k++) {
            y0[k * n + i] = induction ? p->ind[k] : p->first_noun[k];
            y1[k * n + i] = p->prev[k];
        }
        y2[i] = (float)(text ? r->heldout_icl[i] : p->accuracy);
        y2[n + i] = (float)(text ? p->icl : NAN);
        y3[i] = (float)(text ? r->heldout_loss[i] : p->loss);
        y3[n + i] = (float)(induction ? p->seg_loss : NAN);
    }
    static const char *const ACC[1] = {"held-out accuracy"};
    static const char *const LOSS_I[2] = {"loss, every token", "loss, repeated segment"};
    static const char *const LOSS_W[1] = {"held-out loss"};
    static const char *const LOSS_T[2] = {"held-out text", "repeated segment"};
    static const char *const ICL_T[2] = {"held-out text", "repeated tokens"};
    char icl_title[128]; /* text: token n_ctx-1 minus n_ctx/10; repeated: 2nd half minus 1st */
    snprintf(icl_title, sizeof icl_title, "in-context learning score (late minus early loss; text: token %d − %d)",
             r->icl_late, r->icl_early);
    hs_viz_panel P[4] = {
        {y0, (size_t)LH, hl.at, induction ? "induction score (second occurrence → token after the first)"
                                          : "first-noun score (attention at 14 on x)",
         "score", 0.0, 1.0, 0},
        {y1, (size_t)LH, hl.at, "previous-token score (TL mul)", "score", 0.0, 1.0, 0},
        {y2, text ? 2u : 1u, text ? ICL_T : ACC,
         text ? icl_title : induction ? "repeated-segment accuracy (held-out)" : "referent accuracy at 14 (held-out)",
         text ? "nats" : "accuracy", 0.0, text ? 0.0 : 1.0, 0},
        {y3, induction ? 2u : 1u, text ? LOSS_T : induction ? LOSS_I : LOSS_W, "loss", "nats", 0.0, 0.0, 0}};
    double mark = NAN;
    char mlabel[96] = "";
    /* the jump is marked when it is a visible rise (a text run's may be 1e-4) */
    if (induction && r->jump >= 0 && r->best[r->jump] - r->best[r->jump - 1] >= 0.05) {
        mark = r->steps[r->jump];
        snprintf(mlabel, sizeof mlabel, "induction jump, step %d", r->steps[r->jump]);
    } else if (!induction && r->first_decision >= 0) {
        mark = r->steps[r->first_decision];
        snprintf(mlabel, sizeof mlabel, "decision heads, step %d", r->steps[r->first_decision]);
    }
    char title[160];
    snprintf(title, sizeof title, "%s over training (%d checkpoints)",
             r->text ? "induction heads on text" : induction ? "induction circuit" : "referent circuit", n);
    hs_viz_options vo = hs_figopts_for(fo, HS_FIG_SIGNED, 0.0);
    hs_error fe = {0};
    if (hs_figopts_images(fo) &&
        (s = hs_outdir_unfit(od, "timeline",
                             hs_viz_lines_figure(&f, x, (size_t)n, P, 4, title, "training step",
                                                 mark, mlabel, &vo, &fe),
                             &fe, err)) != HS_OK)
        goto done;
    if (hs_figopts_data(fo) &&
        (s = hs_viz_lines_json(&j, x, (size_t)n, P, 4, title, "training step", err)) != HS_OK)
        goto done;
    s = hs_outdir_figure(od, "timeline", &f, j, "per-head scores, the task metric and the loss over training steps",
                         err);
done:
    cJSON_Delete(j);
    hs_viz_figure_destroy(f);
    hs_labels_free(&hl);
    free(x);
    free(y0);
    free(y1);
    free(y2);
    free(y3);
    return s;
}

/* The output folder: the plots, the numbers, the index. */
static hs_status write_folder(hs_timeline_report *r, const char *dir, hs_outdir *od, const hs_figopts *fo,
                              const hs_notes *notes, hs_error *err)
{
    hs_status s = write_plots(r, od, fo, notes, err);
    if (s == HS_OK)
        s = hs_outdir_json(od, "timeline_numbers", r->json,
                           "every checkpoint's loss, metric, per-head detector scores and circuit verdict; "
                           "the steps of the induction jump and the loss drop", err);
    if (s != HS_OK) return s;
    cJSON *extra = cJSON_CreateObject();
    if (!extra || !cJSON_AddStringToObject(extra, "dir", dir)) s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    else s = hs_outdir_commit(od, extra, err);
    cJSON_Delete(extra);
    if (s == HS_OK) r->n_files = hs_outdir_n_files(od);
    return s;
}

/* The run over the checkpoints out already lists (label: the report's "dir"). */
static hs_status run_listed(const char *label, int models, hs_status s, const char *out_dir,
                            const hs_timeline_corpus *corpus, hs_figopts *fo, hs_pool *pool,
                            const hs_notes *notes, hs_timeline_report *out, hs_error *err)
{
    hs_outdir od;
    memset(&od, 0, sizeof od);
    const char *dir = label;
    double drop_by = NAN;
    if (s == HS_OK && out_dir) {
        /* the checkpoints and the corpus are inputs: never replaced or removed by the output folder */
        const size_t nc = corpus ? corpus->n : 0;
        const char **inputs = calloc((size_t)out->n + nc + 1, sizeof *inputs);
        if (!inputs) {
            s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        } else {
            for (int i = 0; i < out->n; i++) inputs[i] = out->files[i];
            for (size_t i = 0; i < nc; i++) inputs[(size_t)out->n + i] = corpus->paths[i];
            s = hs_figopts_font_open(fo, err);
            if (s == HS_OK) s = hs_outdir_open(&od, "timeline", out_dir, fo, inputs, pool, notes, err);
            free(inputs);
        }
    }
    if (s == HS_OK) s = compute_points(out, models, corpus, notes, err);
    if (s == HS_OK) s = summarise(out, &drop_by, err);
    if (s == HS_OK) s = report_json(out, dir, drop_by, err);
    if (s == HS_OK && out_dir) s = write_folder(out, dir, &od, fo, notes, err);
    hs_outdir_close(&od);
    if (s != HS_OK) hs_timeline_report_free(out);
    return s;
}

hs_status hs_timeline_run(const char *dir, const char *out_dir, const hs_timeline_corpus *corpus,
                          hs_figopts *fo, hs_pool *pool, const hs_notes *notes, hs_timeline_report *out,
                          hs_error *err)
{
    memset(out, 0, sizeof *out);
    return run_listed(dir, 0, list_ckpts(dir, out, err), out_dir, corpus, fo, pool, notes, out, err);
}

hs_status hs_timeline_run_models(const char *const *paths, const int *steps, int n, const char *out_dir,
                                 const hs_timeline_corpus *corpus, hs_figopts *fo, hs_pool *pool,
                                 const hs_notes *notes, hs_timeline_report *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    return run_listed("--models", 1, list_models(paths, steps, n, out, err), out_dir, corpus, fo, pool, notes,
                      out, err);
}
