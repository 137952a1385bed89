/*
 * output/page.c -- the HTML page of output folders written before
 * (output.h, hs_view_run; `headscope view`): each folder's index.json and
 * the JSON files it lists, read back and packed into one offline page.
 */
#include "output/output.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static hs_status oom(hs_error *err) { return hs_fail(err, HS_ERR_NOMEM, "out of memory"); }

/* Parsed JSON of dir/name into *out. */
static hs_status read_json(const char *dir, const char *name, cJSON **out, hs_error *err)
{
    char *path = hs_path_join(dir, name);
    unsigned char *data = NULL;
    size_t n = 0;
    if (!path) return oom(err);
    hs_status s = hs_read_file(path, &data, &n, err);
    if (s == HS_OK && !(*out = cJSON_ParseWithLength((const char *)data, n)))
        s = hs_fail(err, HS_ERR_FORMAT, "%s is not valid JSON", path);
    free(data);
    free(path);
    return s;
}

/* The JSON file name of dir (listed in its index) packed for the page into
 * page under stem, unless the page of cmd does not show it or has it. */
/* 1 when the file at dir/name still has the size and hash its index entry f
 * records (headscope wrote it and nobody changed it since). */
static int unchanged(const char *dir, const char *name, const cJSON *f)
{
    const char *want = cJSON_GetStringValue(cJSON_GetObjectItem(f, "fnv1a64"));
    const cJSON *bytes = cJSON_GetObjectItem(f, "bytes");
    char *p = hs_path_join(dir, name), hex[17];
    double b = -1;
    const int same = p && want && cJSON_IsNumber(bytes) && hs_out_digest(p, &b, hex) == 0 &&
                     b == bytes->valuedouble && strcmp(hex, want) == 0;
    free(p);
    return same;
}

/* A file of the page, f its index entry: one headscope wrote that the page
 * does not draw (a report, a table's data) goes in as it is, but one changed
 * since that the page cannot draw (a figure's data missing its "attention" or
 * "values", or another file in its place) is refused: the page would silently
 * lose that figure. */
static hs_status add_file(cJSON *page, const char *cmd, const char *dir, const char *name,
                          const cJSON *f, hs_error *err)
{
    size_t n = strlen(name);
    /* plain names only, as the out-folder policy reads an index */
    if (n < 6 || strcmp(name + n - 5, ".json") != 0 || strchr(name, '/') || strstr(name, "..") ||
        strcmp(name, "index.json") == 0)
        return HS_OK;
    char *stem = hs_strdup(name); /* the name without ".json"; any length */
    if (!stem) return oom(err);
    stem[n - 5] = '\0';
    cJSON *j = NULL;
    hs_status s = HS_OK;
    if (hs_page_keeps(cmd, stem) && !cJSON_GetObjectItem(page, stem)) {
        s = read_json(dir, name, &j, err);
        hs_error e = {0};
        if (s == HS_OK && hs_viz_html_pack(j, &e) != HS_OK)
            s = hs_fail(err, e.status, "%s/%s: %s", dir, name, e.msg);
        if (s == HS_OK && !hs_viz_page_draws(stem, j) && !unchanged(dir, name, f))
            s = hs_fail(err, HS_ERR_FORMAT, "%s/%s: changed since headscope wrote it (not the size "
                        "and hash index.json records) and not a file the page can draw (no "
                        "\"attention\", \"values\" with labels, or line plots)", dir, name);
        if (s == HS_OK && !cJSON_AddItemToObject(page, stem, j)) s = oom(err);
        if (s == HS_OK) j = NULL;
    }
    cJSON_Delete(j);
    free(stem);
    return s;
}

/* The run of one folder: {"dir", "command", "index", "files": {stem: JSON}}. */
static hs_status load_run(const char *dir, cJSON **out, hs_error *err)
{
    cJSON *idx = NULL;
    hs_status s = read_json(dir, "index.json", &idx, err);
    if (s != HS_OK) return s;
    const cJSON *cmd = cJSON_GetObjectItem(idx, "command");
    const cJSON *files = cJSON_GetObjectItem(idx, "files");
    if (!cJSON_IsString(cmd) || !cJSON_IsArray(files)) {
        cJSON_Delete(idx);
        return hs_fail(err, HS_ERR_FORMAT, "%s/index.json is not an index headscope wrote (no "
                       "\"command\" and \"files\")", dir);
    }
    cJSON *run = cJSON_CreateObject(), *page = cJSON_CreateObject();
    if (!run || !page) s = oom(err);
    for (const cJSON *f = files->child; s == HS_OK && f; f = f->next) {
        const cJSON *fn = cJSON_GetObjectItem(f, "file");
        if (cJSON_IsString(fn)) s = add_file(page, cmd->valuestring, dir, fn->valuestring, f, err);
    }
    if (s == HS_OK && (!cJSON_AddStringToObject(run, "dir", dir) ||
                       !cJSON_AddStringToObject(run, "command", cmd->valuestring)))
        s = oom(err);
    if (s == HS_OK && !cJSON_AddItemToObject(run, "index", idx)) s = oom(err);
    if (s == HS_OK) idx = NULL;
    if (s == HS_OK && !cJSON_AddItemToObject(run, "files", page)) s = oom(err);
    if (s == HS_OK) {
        *out = run;
        return HS_OK;
    }
    cJSON_Delete(idx);
    if (!cJSON_GetObjectItem(run, "files")) cJSON_Delete(page);
    cJSON_Delete(run);
    return s;
}

/* With the default page: lists index.html (written at dir) in
 * DIR/index.json with its size and hash, as every run lists its files, so
 * the next run in DIR may replace or remove it. */
static hs_status list_page(const char *dir, const cJSON *run, hs_error *err)
{
    cJSON *idx = cJSON_Duplicate(cJSON_GetObjectItem(run, "index"), 1);
    cJSON *files = cJSON_GetObjectItem(idx, "files");
    for (cJSON *f = files ? files->child : NULL; f; f = f->next) {
        const cJSON *fn = cJSON_GetObjectItem(f, "file");
        if (cJSON_IsString(fn) && strcmp(fn->valuestring, "index.html") == 0) {
            cJSON_DetachItemViaPointer(files, f); /* listed again with the new size and hash */
            cJSON_Delete(f);
            break;
        }
    }
    cJSON *e = cJSON_CreateObject();
    char *path = hs_path_join(dir, "index.json"), *page = hs_path_join(dir, "index.html");
    double bytes = 0;
    char hex[17];
    int ok = idx && files && e && path && page && hs_out_digest(page, &bytes, hex) == 0 &&
             cJSON_AddStringToObject(e, "file", "index.html") &&
             cJSON_AddStringToObject(e, "format", "html") &&
             cJSON_AddStringToObject(e, "shows", "one offline page to explore this folder's data "
                                                 "(headscope view; open it in a browser)") &&
             cJSON_AddNumberToObject(e, "bytes", bytes) &&
             cJSON_AddStringToObject(e, "fnv1a64", hex) && cJSON_AddItemToArray(files, e);
    if (ok) e = NULL;
    hs_status s = ok ? hs_viz_write_json(idx, path, err) : oom(err);
    cJSON_Delete(e);
    cJSON_Delete(idx);
    free(page);
    free(path);
    return s;
}

/* 1 when dir/index.html exists and dir's index does not vouch for it (listed
 * with the size and hash it has now: hs_out_owns): left alone. */
static int foreign_page(const char *dir)
{
    char *path = hs_path_join(dir, "index.html");
    struct stat st;
    int there = path && stat(path, &st) == 0;
    free(path);
    return there && !hs_out_owns(dir, "index.html");
}

/* Checks where the page of n folders goes (before anything is written) into
 * *path: an existing page is replaced only when headscope wrote it (listed in
 * its folder's index) and it is that folder's own page again (n == 1), or
 * with force, as an existing --out FILE. */
static hs_status page_path(const char *dir0, int n, const char *out_file, int force, char **path,
                           hs_error *err)
{
    if (!out_file && foreign_page(dir0))
        return hs_fail(err, HS_ERR_INPUT, "%s/index.html exists and %s/index.json does not list "
                       "it with its size and hash; not overwriting it (choose a file with --out)",
                       dir0, dir0);
    if (!out_file && n > 1 && !force && hs_out_owns(dir0, "index.html"))
        return hs_fail(err, HS_ERR_INPUT, "%s/index.html exists (the page of %s alone); a page of %d "
                       "folders replaces it only with --force (or choose a file with --out)",
                       dir0, dir0, n);
    hs_status s = out_file ? hs_check_new_file("--out", out_file, force, err) : HS_OK;
    if (s != HS_OK) return s;
    *path = out_file ? hs_strdup(out_file) : hs_path_join(dir0, "index.html");
    return *path ? HS_OK : oom(err);
}

/* 1 when path is dir's file name (same device and inode as st). */
static int same_file(const char *dir, const char *name, const struct stat *st)
{
    char *p = hs_path_join(dir, name);
    struct stat q;
    const int same = p && stat(p, &q) == 0 && q.st_dev == st->st_dev && q.st_ino == st->st_ino;
    free(p);
    return same;
}

/* --out FILE must not be a file the page is made from: a folder's index.json
 * or a file it lists (with --force it would be replaced by the page). */
static hs_status refuse_input(const cJSON *runs, const char *out_file, hs_error *err)
{
    struct stat st;
    if (stat(out_file, &st) != 0) return HS_OK; /* a new file */
    for (const cJSON *r = runs ? runs->child : NULL; r; r = r->next) {
        const char *dir = cJSON_GetStringValue(cJSON_GetObjectItem(r, "dir"));
        const cJSON *files = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "index"), "files");
        int hit = dir && same_file(dir, "index.json", &st);
        for (const cJSON *f = files ? files->child : NULL; dir && !hit && f; f = f->next) {
            const char *fn = cJSON_GetStringValue(cJSON_GetObjectItem(f, "file"));
            hit = fn && same_file(dir, fn, &st);
        }
        if (hit)
            return hs_fail(err, HS_ERR_INPUT, "--out %s is one of the files the page is made from "
                           "(%s/index.json or a file it lists); refusing to replace it, even with "
                           "--force", out_file, dir);
    }
    return HS_OK;
}

hs_status hs_view_run(const char *const *dirs, int n, const char *out_file, int force,
                      hs_viz_cmap cmap, hs_view_report *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    HS_ASSERT(n >= 1);
    cJSON *runs = cJSON_CreateArray(), *data = NULL;
    hs_status s = runs ? HS_OK : oom(err);
    for (int i = 0; s == HS_OK && i < n; i++) {
        cJSON *run = NULL;
        s = load_run(dirs[i], &run, err);
        if (s == HS_OK && !cJSON_AddItemToArray(runs, run)) {
            cJSON_Delete(run);
            s = oom(err);
        }
    }
    if (s == HS_OK && out_file) s = refuse_input(runs, out_file, err);
    if (s == HS_OK) s = page_path(dirs[0], n, out_file, force, &out->path, err);
    const cJSON *run0 = cJSON_GetArrayItem(runs, 0);
    if (s == HS_OK) {
        data = hs_page_data(runs, cmap); /* owns runs and run0 now */
        runs = NULL;
        hs_buf title = {0}; /* "headscope view · tired, wet": the folders, as paths */
        hs_buf_puts(&title, "headscope view · ");
        for (int i = 0; i < n; i++) hs_buf_printf(&title, "%s%s", i ? ", " : "", dirs[i]);
        s = !data || title.oom ? oom(err) : hs_viz_write_html(data, title.s, out->path, err);
        hs_buf_free(&title);
    }
    if (s == HS_OK && !out_file) s = list_page(dirs[0], run0, err);
    cJSON_Delete(data);
    cJSON_Delete(runs);
    if (s != HS_OK) hs_view_report_free(out);
    return s;
}

void hs_view_report_free(hs_view_report *r)
{
    if (!r) return;
    free(r->path);
    r->path = NULL;
}
