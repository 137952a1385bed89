/*
 * output/files.c -- what goes into an output folder (output.h): one figure in
 * the formats asked for (its images written on the worker pool while the
 * command goes on), data files, the HTML page's data, index.json, and the
 * commit that finishes a run.
 */
#define _POSIX_C_SOURCE 200809L
#include "output/output_internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Lists file in the index; path (NULL for index.json itself) is where it was
 * written, for its size and hash. */
static hs_status add_index(hs_outdir *o, const char *file, const char *format, const char *shows,
                           const char *path, hs_error *err)
{
    double bytes = 0;
    char hex[17];
    if (path && hs_out_digest(path, &bytes, hex) != 0)
        return hs_fail(err, HS_ERR_IO, "cannot read back %s: %s", path, strerror(errno));
    cJSON *e = cJSON_CreateObject();
    if (!e || !cJSON_AddStringToObject(e, "file", file) ||
        !cJSON_AddStringToObject(e, "format", format) ||
        !cJSON_AddStringToObject(e, "shows", shows) ||
        (path && (!cJSON_AddNumberToObject(e, "bytes", bytes) ||
                  !cJSON_AddStringToObject(e, "fnv1a64", hex))) ||
        !cJSON_AddItemToArray(o->files, e)) {
        cJSON_Delete(e);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    return HS_OK;
}

/* A write error naming DIR/file, not the run's working folder the file was
 * going to (the user never sees that folder): rewrites err in place. */
static hs_status out_error(const hs_outdir *o, hs_error *err)
{
    char *from = hs_path_join(o->stage, ""), *to = hs_path_join(o->dir, "");
    char *at = from && to ? strstr(err->msg, from) : NULL;
    if (at) {
        hs_buf b = {0};
        hs_buf_append(&b, err->msg, (size_t)(at - err->msg));
        hs_buf_puts(&b, to);
        hs_buf_puts(&b, at + strlen(from));
        if (!b.oom) snprintf(err->msg, sizeof err->msg, "%s", b.s);
        hs_buf_free(&b);
    }
    free(from);
    free(to);
    return err->status;
}

/* Writes stem.ext (JSON) into the working folder and lists it. */
static hs_status write_json_file(hs_outdir *o, const char *stem, const char *ext,
                                 const cJSON *json, const char *shows, hs_error *err)
{
    char *name = hs_strfmt("%s.%s", stem, ext);
    char *path = name ? hs_path_join(o->stage, name) : NULL;
    hs_status s;
    if (!path) s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    else if ((s = hs_viz_write_json(json, path, err)) != HS_OK) s = out_error(o, err);
    else s = add_index(o, name, ext, shows, path, err);
    free(path);
    free(name);
    return s;
}

/* A figure hs_outdir_figure took: its image files, listed in the index
 * already (entry[k], without bytes and hash until written). Whoever claims it
 * first (the lane job queued for it, or a job of the commit's hs_pool_for)
 * writes the files and destroys the figure. */
struct hs_out_pending {
    const hs_outdir *o;
    hs_viz_figure *fig;
    char *stem;
    atomic_int claimed;
    int n;               /* formats */
    const char *ext[3];  /* "png", "svg", "pdf", in that order */
    cJSON *entry[3];     /* borrowed from o->files */
    double bytes[3];
    char hex[3][17];
    hs_status st;        /* the write's status, and its error */
    hs_error err;
};

/* Writes pending figure p's files, in order, and their sizes and hashes,
 * unless another thread claimed it first. */
static hs_status pending_write(struct hs_out_pending *p)
{
    if (atomic_exchange(&p->claimed, 1)) return HS_OK;
    hs_error *err = &p->err;
    hs_status s = HS_OK;
    for (int k = 0; s == HS_OK && k < p->n; k++) {
        char *name = hs_strfmt("%s.%s", p->stem, p->ext[k]);
        char *path = name ? hs_path_join(p->o->stage, name) : NULL;
        free(name);
        if (!path) {
            s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
            break;
        }
        /* no pool: a job must not start jobs on the pool it runs on */
        if (strcmp(p->ext[k], "png") == 0) s = hs_viz_figure_write_png(p->fig, path, NULL, err);
        else if (strcmp(p->ext[k], "svg") == 0) s = hs_viz_figure_write_svg(p->fig, path, err);
        else s = hs_viz_figure_write_pdf(p->fig, path, err);
        if (s == HS_OK && hs_out_digest(path, &p->bytes[k], p->hex[k]) != 0)
            s = hs_fail(err, HS_ERR_IO, "cannot read back %s: %s", path, strerror(errno));
        free(path);
    }
    hs_viz_figure_destroy(p->fig);
    p->fig = NULL;
    p->st = s;
    return s;
}

/* The lane job queued for a pending figure: arg holds its pointer. */
static void pending_lane(void *arg)
{
    struct hs_out_pending *p;
    memcpy(&p, arg, sizeof p);
    pending_write(p);
}

/* A job of the commit's hs_pool_for: pending figure j, unless its lane job took it. */
static hs_status pending_job(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    (void)err; /* each figure keeps its own error */
    hs_outdir *o = ctx;
    return pending_write(o->pend[j]);
}

static void pending_free(hs_outdir *o)
{
    hs_pool_wait_all(o->pool); /* no lane job still writes into the stage */
    for (int i = 0; i < o->n_pend; i++) {
        hs_viz_figure_destroy(o->pend[i]->fig);
        free(o->pend[i]->stem);
        free(o->pend[i]);
    }
    o->n_pend = 0;
}

/* Writes every pending figure not written yet, on both the lane and the
 * caller's thread (hs_pool_for), waits for the lane, and puts the files'
 * bytes and hashes into the index; the first failed figure's error. */
static hs_status pending_flush(hs_outdir *o, hs_error *err)
{
    if (o->n_pend == 0) return HS_OK;
    hs_error ferr = {0};
    hs_pool_for(o->pool, o->n_pend, pending_job, o, &ferr);
    hs_pool_wait_all(o->pool);
    hs_status s = HS_OK;
    for (int i = 0; s == HS_OK && i < o->n_pend; i++) {
        struct hs_out_pending *p = o->pend[i];
        if (!atomic_load(&p->claimed)) /* hs_pool_for stopped after a failure */
            continue;
        if (p->st != HS_OK) {
            *err = p->err;
            s = out_error(o, err);
            break;
        }
        for (int k = 0; s == HS_OK && k < p->n; k++)
            if (!cJSON_AddNumberToObject(p->entry[k], "bytes", p->bytes[k]) ||
                !cJSON_AddStringToObject(p->entry[k], "fnv1a64", p->hex[k]))
                s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    pending_free(o);
    return s;
}

/* Lists stem's image files in the index, takes *fig and queues its write on
 * the pool's lane (with one worker it runs now). */
static hs_status pending_add(hs_outdir *o, const char *stem, hs_viz_figure **fig,
                             const char *shows, hs_error *err)
{
    hs_viz_figure *f = *fig;
    *fig = NULL;
    struct hs_out_pending *p = NULL;
    if (o->n_pend == o->cap_pend) {
        int cap = o->cap_pend ? 2 * o->cap_pend : 16;
        struct hs_out_pending **np = realloc(o->pend, (size_t)cap * sizeof *np);
        if (!np) goto oom;
        o->pend = np;
        o->cap_pend = cap;
    }
    p = calloc(1, sizeof *p);
    if (!p || !(p->stem = hs_strdup(stem))) goto oom;
    p->o = o;
    p->fig = f;
    f = NULL;
    atomic_init(&p->claimed, 0);
    if (o->fo->png) p->ext[p->n++] = "png";
    if (o->fo->svg) p->ext[p->n++] = "svg";
    if (o->fo->pdf) p->ext[p->n++] = "pdf";
    for (int k = 0; k < p->n; k++) {
        char *name = hs_strfmt("%s.%s", stem, p->ext[k]);
        hs_status s = name ? add_index(o, name, p->ext[k], shows, NULL, err)
                           : hs_fail(err, HS_ERR_NOMEM, "out of memory");
        free(name);
        if (s != HS_OK) {
            hs_viz_figure_destroy(p->fig);
            free(p->stem);
            free(p);
            return s;
        }
        p->entry[k] = cJSON_GetArrayItem(o->files, cJSON_GetArraySize(o->files) - 1);
    }
    o->pend[o->n_pend++] = p;
    hs_pool_async(o->pool, pending_lane, &p, sizeof p);
    return HS_OK;
oom:
    hs_viz_figure_destroy(f);
    if (p) free(p);
    return hs_fail(err, HS_ERR_NOMEM, "out of memory");
}

int hs_page_keeps(const char *cmd, const char *stem)
{
    if (strcmp(cmd, "inspect") != 0) return 1;
    int l, h, n = 0;
    if (sscanf(stem, "L%dH%d%n", &l, &h, &n) == 2 && stem[n] == '\0') return 0;
    n = 0;
    if (sscanf(stem, "L%d_mean%n", &l, &n) == 1 && n > 0 && stem[n] == '\0') return 0;
    return 1;
}

int hs_outdir_page_wants(const hs_outdir *o, const char *stem)
{
    return o->page && hs_page_keeps(o->cmd, stem) && !cJSON_GetObjectItem(o->page, stem);
}

hs_status hs_outdir_page(hs_outdir *o, const char *stem, cJSON *data, hs_error *err)
{
    if (!hs_outdir_page_wants(o, stem)) {
        cJSON_Delete(data);
        return HS_OK;
    }
    if (!data || !cJSON_AddItemToObject(o->page, stem, data)) {
        cJSON_Delete(data);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    return HS_OK;
}

cJSON *hs_page_data(cJSON *runs, hs_viz_cmap cmap)
{
    cJSON *d = cJSON_CreateObject();
    if (!d || !runs || !cJSON_AddItemToObject(d, "runs", runs)) {
        cJSON_Delete(d);
        cJSON_Delete(runs);
        return NULL;
    }
    if (!cJSON_AddStringToObject(d, "cmap", cmap == HS_VIZ_CMAP_GREYS ? "greys" : "viridis")) {
        cJSON_Delete(d);
        return NULL;
    }
    return d;
}

hs_status hs_outdir_figure(hs_outdir *o, const char *stem, hs_viz_figure **fig,
                           const cJSON *json, const char *shows, hs_error *err)
{
    hs_viz_figure *f = fig ? *fig : NULL;
    const int images = hs_figopts_images(o->fo);
    if (f && hs_viz_figure_grown_from_in(f) > 0 && images) {
        const double w = hs_viz_figure_width_in(f);
        if (o->n_wide == HS_OUT_WIDE_LIST) { /* the list so far: the first few */
            o->wide_cut = o->wide.len;
            o->wide_min = o->wide_max = w;
        }
        if (o->n_wide < HS_OUT_WIDE_LIST + 2)
            hs_buf_printf(&o->wide, "%s%s %.2f in", o->n_wide ? ", " : "", stem, w);
        if (o->n_wide >= HS_OUT_WIDE_LIST) {
            o->wide_min = w < o->wide_min ? w : o->wide_min;
            o->wide_max = w > o->wide_max ? w : o->wide_max;
        }
        o->n_wide++;
    }
    hs_status s = HS_OK;
    if (f && images) {
        s = pending_add(o, stem, fig, shows, err);
    } else if (fig) {
        hs_viz_figure_destroy(f);
        *fig = NULL;
    }
    if (s == HS_OK && o->fo->json && json) s = write_json_file(o, stem, "json", json, shows, err);
    if (s == HS_OK && o->page && json) s = hs_outdir_page(o, stem, cJSON_Duplicate(json, 1), err);
    return s;
}

hs_status hs_outdir_json(hs_outdir *o, const char *name, const cJSON *json, const char *shows,
                         hs_error *err)
{
    hs_status s = write_json_file(o, name, "json", json, shows, err);
    if (s == HS_OK && o->page) s = hs_outdir_page(o, name, cJSON_Duplicate(json, 1), err);
    return s;
}

hs_status hs_outdir_file(hs_outdir *o, const char *name, const char *format, const void *data, size_t len,
                         const char *shows, hs_error *err)
{
    char *path = hs_path_join(o->stage, name);
    hs_status s = path ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (s == HS_OK) s = hs_write_file_atomic(path, data, len, err);
    if (s == HS_OK) s = add_index(o, name, format, shows, path, err);
    else if (path) s = out_error(o, err);
    free(path);
    return s;
}

hs_status hs_outdir_matrix(hs_outdir *o, hs_fig_kind kind, const char *stem, const float *m,
                           size_t R, size_t C, const char *const *rl, const char *const *cl,
                           const char *title, const char *xl, const char *yl, double lim,
                           const char *q, const char *note, const char *shows, hs_error *err)
{
    const hs_figopts *fo = o->fo;
    hs_viz_figure *fig = NULL;
    cJSON *j = NULL;
    hs_status s = HS_OK;
    const int bars = kind == HS_FIG_BARS || kind == HS_FIG_BARS_MAGNITUDE || kind == HS_FIG_BARS_SUM;
    const size_t cap = bars ? HS_VIZ_MAX_BARS : HS_VIZ_MAX_TOKENS;
    if (hs_figopts_images(fo)) {
        if (R > cap || C > HS_VIZ_MAX_TOKENS) {
            hs_note(&o->notes, HS_NOTE_CMD, "note: %s is %zu x %zu, over the figure cap; "
                    "writing its JSON only", stem, R, C);
        } else {
            hs_viz_options vo = hs_figopts_for(fo, kind, lim);
            vo.value_label = q;
            vo.note = note;
            hs_error fe = {0};
            if (bars)
                s = hs_viz_bars_figure(&fig, m, R, rl, title, xl, &vo, &fe);
            else if (kind == HS_FIG_NONNEG)
                s = hs_viz_matrix_figure(&fig, m, R, C, rl, cl, title, xl, yl, &vo, &fe);
            else
                s = hs_viz_signed_figure(&fig, m, R, C, rl, cl, title, xl, yl, &vo, &fe);
            s = hs_outdir_unfit(o, stem, s, &fe, err);
        }
    }
    if (s == HS_OK && hs_figopts_data(fo)) {
        s = bars ? hs_viz_bars_json(&j, m, R, rl, title, xl, err)
                                : hs_viz_signed_json(&j, m, R, C, rl, cl, title, xl, yl, err);
        if (s == HS_OK && !bars) s = hs_figopts_add_scale(j, fo, kind, lim, err);
        if (s == HS_OK && (!hs_json_add_copies(j, o->context) ||
                           (note && (!cJSON_AddBoolToObject(j, "usable", 0) ||
                                     !cJSON_AddStringToObject(j, "why_not_usable", note)))))
            s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    if (s == HS_OK) s = hs_outdir_figure(o, stem, &fig, j, shows, err);
    cJSON_Delete(j);
    hs_viz_figure_destroy(fig);
    return s;
}

/* Writes index.html: the page of one run, this folder (idx is its index). */
static hs_status write_page(hs_outdir *o, const cJSON *idx, hs_error *err)
{
    cJSON *run = cJSON_CreateObject(), *runs = cJSON_CreateArray();
    int ok = run && runs && cJSON_AddStringToObject(run, "dir", o->dir) &&
             cJSON_AddStringToObject(run, "command", o->cmd) &&
             cJSON_AddItemReferenceToObject(run, "index", (cJSON *)idx) &&
             cJSON_AddItemReferenceToObject(run, "files", o->page) &&
             cJSON_AddItemToArray(runs, run);
    if (!ok) {
        cJSON_Delete(run);
        cJSON_Delete(runs);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    cJSON *data = hs_page_data(runs, o->fo->viz.cmap);
    char *path = hs_path_join(o->stage, "index.html");
    char *title = hs_strfmt("headscope %s · %s", o->cmd, o->dir);
    hs_status s = !data || !path || !title ? hs_fail(err, HS_ERR_NOMEM, "out of memory")
                                           : hs_viz_write_html(data, title, path, err);
    cJSON_Delete(data);
    if (s != HS_OK) s = out_error(o, err);
    else s = add_index(o, "index.html", "html", "one offline page to explore this folder's data "
                       "(open it in a browser)", path, err);
    free(path);
    free(title);
    return s;
}

/* index.json's object: generator, command, extra's keys, files (and the
 * page written before it, which then joins files). */
static hs_status write_index(hs_outdir *o, const cJSON *extra, hs_error *err)
{
    cJSON *idx = cJSON_CreateObject();
    char gen[64];
    snprintf(gen, sizeof gen, "headscope %s %s", HS_VERSION, o->cmd);
    int ok = idx && cJSON_AddStringToObject(idx, "generator", gen) &&
             cJSON_AddStringToObject(idx, "command", o->cmd) && hs_json_add_copies(idx, extra);
    /* index.json lists itself too, so every file in the folder is accounted for */
    hs_status s = ok ? add_index(o, "index.json", "json",
                                 "this list: every file written and what it shows", NULL, err)
                     : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    cJSON *files = s == HS_OK ? cJSON_Duplicate(o->files, 1) : NULL;
    if (s == HS_OK && (!files || !cJSON_AddItemToObject(idx, "files", files))) {
        if (!cJSON_GetObjectItem(idx, "files")) cJSON_Delete(files);
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    /* the page shows the index as it stands; then index.html joins the list */
    if (s == HS_OK && o->page && (s = write_page(o, idx, err)) == HS_OK) {
        cJSON *last = cJSON_Duplicate(cJSON_GetArrayItem(o->files, cJSON_GetArraySize(o->files) - 1), 1);
        if (!last || !cJSON_AddItemToArray(files, last)) {
            cJSON_Delete(last);
            s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        }
    }
    /* another command's files (view's page) stay listed: this run keeps them */
    cJSON *others = s == HS_OK ? out_others_kept(o, o->files) : NULL, *e;
    if (s == HS_OK && !others) s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    while (s == HS_OK && others && (e = cJSON_DetachItemFromArray(others, 0)) != NULL)
        cJSON_AddItemToArray(files, e);
    cJSON_Delete(others);
    char *path = s == HS_OK ? hs_path_join(o->stage, "index.json") : NULL;
    if (s == HS_OK && !path) s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (s == HS_OK && (s = hs_viz_write_json(idx, path, err)) != HS_OK) s = out_error(o, err);
    free(path);
    cJSON_Delete(idx);
    return s;
}

hs_status hs_outdir_commit(hs_outdir *o, const cJSON *extra, hs_error *err)
{
    hs_status s = pending_flush(o, err); /* every figure's file is in the index first */
    if (s == HS_OK) s = write_index(o, extra, err);
    if (s != HS_OK) return s;
    if (o->n_wide && !o->wide.oom) {
        /* every figure up to HS_OUT_WIDE_LIST + 2, else the first few and a summary */
        char more[2 * HS_FIXED_BUF + 48] = "", a[HS_FIXED_BUF], b[HS_FIXED_BUF];
        const int many = o->n_wide > HS_OUT_WIDE_LIST + 2;
        hs_fmt_fixed(a, o->wide_min, 2, 0);
        hs_fmt_fixed(b, o->wide_max, 2, 0);
        if (many && strcmp(a, b) == 0)
            snprintf(more, sizeof more, " and %d more (%s in each)", o->n_wide - HS_OUT_WIDE_LIST, a);
        else if (many)
            snprintf(more, sizeof more, " and %d more (%s to %s in)", o->n_wide - HS_OUT_WIDE_LIST, a, b);
        hs_note(&o->notes, HS_NOTE_CMD, "note: %d figure%s wider than %s default width so "
                "every label fits: %.*s%s; --width sets it", o->n_wide, o->n_wide > 1 ? "s are" : " is",
                o->n_wide > 1 ? "their" : "its", (int)(many ? o->wide_cut : o->wide.len), o->wide.s, more);
    }
    return out_stage_commit(o, err);
}

int hs_outdir_n_files(const hs_outdir *o) { return cJSON_GetArraySize(o->files); }

void hs_outdir_close(hs_outdir *o)
{
    pending_free(o);
    free(o->pend);
    o->pend = NULL;
    o->cap_pend = 0;
    if (o->dir) out_stage_discard(o);
    cJSON_Delete(o->files);
    cJSON_Delete(o->page);
    hs_buf_free(&o->wide);
    o->files = NULL;
    o->page = NULL;
}
