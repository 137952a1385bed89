/*
 * output/page.c -- the HTML page of output folders written before
 * (output.h, hs_view_run; `headscope view`): each folder's index.json and
 * the JSON files it lists, read back and packed into one offline page.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "output/output.h"

#include <stdio.h>
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

/* Folder dir as seen from folder base: the relative path between their real
 * paths ("." for base itself, "../wet" for a sibling); NULL when either
 * cannot be resolved or out of memory. The caller frees it. */
static char *rel_folder(const char *base, const char *dir)
{
    char *b = realpath(base, NULL), *d = realpath(dir, NULL);
    hs_buf r = {0};
    if (b && d) {
        size_t i = 0, c = 0; /* c: the common prefix, ending at a component boundary */
        for (; b[i] && b[i] == d[i]; i++)
            if (b[i] == '/') c = i;
        if ((b[i] == '\0' || b[i] == '/') && (d[i] == '\0' || d[i] == '/')) c = i;
        for (const char *q = b + c; *q; q++) /* one ".." per component of base past c */
            if (*q == '/' && q[1] && q[1] != '/') hs_buf_puts(&r, r.len ? "/.." : "..");
        const char *rest = d + c;
        while (*rest == '/') rest++;
        if (*rest) hs_buf_printf(&r, "%s%s", r.len ? "/" : "", rest);
        if (!r.len) hs_buf_puts(&r, ".");
    }
    free(b);
    free(d);
    if (!b || !d || r.oom) {
        hs_buf_free(&r);
        return NULL;
    }
    return r.s;
}

/* The folders of this run, each as seen from dirs[0] (rel_folder), as a JSON
 * array, or NULL (a folder that cannot be resolved, out of memory). */
static cJSON *page_folders(const char *const *dirs, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) {
        char *rel = rel_folder(dirs[0], dirs[i]);
        cJSON *v = rel ? cJSON_CreateString(rel) : NULL;
        free(rel);
        if (!v || !cJSON_AddItemToArray(a, v)) {
            cJSON_Delete(v);
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

/* With the default page: lists index.html (written at dir) in
 * DIR/index.json with its size and hash, as every run lists its files, so
 * the next run in DIR may replace or remove it, and the folders it shows
 * (page_folders), so the same command run again replaces its own page. */
static hs_status list_page(const char *dir, const cJSON *run, cJSON *folders, hs_error *err)
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
             cJSON_AddStringToObject(e, "by", "view") && /* another command's run keeps it */
             cJSON_AddStringToObject(e, "shows", "one offline page to explore this folder's data "
                                                 "(headscope view; open it in a browser)") &&
             cJSON_AddNumberToObject(e, "bytes", bytes) &&
             cJSON_AddStringToObject(e, "fnv1a64", hex) && folders &&
             cJSON_AddItemToObject(e, "folders", folders) && cJSON_AddItemToArray(files, e);
    if (ok) e = NULL;
    else if (!cJSON_GetObjectItem(e, "folders")) cJSON_Delete(folders);
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

/* The folders dir0's own page shows, as its index.json records them
 * (page_folders); a page listed without them is the folder's alone (the
 * page of a run's --format html), *alone set. NULL when none is listed. */
static const cJSON *own_page_folders(const cJSON *run0, const cJSON *alone)
{
    const cJSON *files = cJSON_GetObjectItem(cJSON_GetObjectItem(run0, "index"), "files");
    for (const cJSON *f = files ? files->child : NULL; f; f = f->next) {
        const char *fn = cJSON_GetStringValue(cJSON_GetObjectItem(f, "file"));
        const cJSON *a = cJSON_GetObjectItem(f, "folders");
        if (fn && strcmp(fn, "index.html") == 0) return cJSON_IsArray(a) ? a : alone;
    }
    return NULL;
}

/* Appends folder rel (as seen from dir0) as a path a user would type: dir0
 * itself for ".", "runs/wet" for "../wet" seen from "runs/tired". */
static void put_folder(hs_buf *b, const char *dir0, const char *rel)
{
    char *base = malloc(strlen(dir0) + 2); /* dir0, or "." */
    if (!base) {
        b->oom = 1;
        return;
    }
    strcpy(base, dir0);
    size_t n = strlen(base);
    while (n > 1 && base[n - 1] == '/') base[--n] = '\0';
    if (strcmp(rel, ".") == 0) rel = "";
    for (; strncmp(rel, "..", 2) == 0 && (rel[2] == '/' || rel[2] == '\0'); rel += rel[2] ? 3 : 2) {
        char *slash = strrchr(base, '/');
        const char *last = slash ? slash + 1 : base;
        if (strcmp(last, ".") == 0 || strcmp(last, "..") == 0 || strcmp(base, "/") == 0) break;
        if (slash == base) base[1] = '\0';
        else if (slash) *slash = '\0';
        else strcpy(base, ".");
    }
    if (!*rel) hs_buf_puts(b, base);
    else if (strcmp(base, ".") == 0) hs_buf_puts(b, rel);
    else hs_buf_printf(b, "%s%s%s", base, strcmp(base, "/") == 0 ? "" : "/", rel);
    free(base);
}

/* Appends the page of folders fs (as seen from dir0) to *what: "the page of
 * runs/tired alone", "the page of runs/tired and runs/wet"; "a page of
 * folders its index.json does not record" for none. */
static void put_page(hs_buf *what, const char *dir0, const cJSON *fs)
{
    const int k = cJSON_GetArraySize(fs);
    if (!fs || k < 1) {
        hs_buf_puts(what, "a page of folders its index.json does not record");
        return;
    }
    hs_buf_puts(what, "the page of ");
    int i = 0;
    for (const cJSON *f = fs->child; f; f = f->next, i++) {
        const char *rel = cJSON_GetStringValue(f);
        hs_buf_puts(what, i == 0 ? "" : i == k - 1 ? " and " : ", ");
        put_folder(what, dir0, rel ? rel : "?");
    }
    if (k == 1) hs_buf_puts(what, " alone");
}

/* Checks where the page of the folders want goes (before anything is
 * written) into *path. dir0's own page (dir0/index.html) is replaced when
 * headscope wrote it (listed in its index with its size and hash) and it
 * shows the same folders as this page (the same command run again: want, page_folders; a
 * page listed without folders is dir0's alone), or with force: the page of A
 * and B over A's own page and A's own page over the page of A and B alike;
 * an existing --out FILE only with force. */
static hs_status page_path(const char *dir0, const cJSON *run0, const cJSON *want,
                           const char *out_file, int force, char **path, hs_error *err)
{
    if (!out_file && foreign_page(dir0))
        return hs_fail(err, HS_ERR_INPUT, "%s/index.html exists and %s/index.json does not list "
                       "it with its size and hash; not overwriting it (choose a file with --out)",
                       dir0, dir0);
    cJSON *alone = cJSON_CreateStringArray((const char *const[]){"."}, 1);
    if (!alone) return oom(err);
    const cJSON *had = own_page_folders(run0, alone);
    if (!out_file && !force && hs_out_owns(dir0, "index.html") &&
        !(had && want && cJSON_Compare(had, want, 1))) {
        hs_buf what = {0}, now = {0}; /* the page there (its index entry), this one */
        put_page(&what, dir0, had);
        put_page(&now, dir0, want);
        hs_status s = what.oom || now.oom
                          ? oom(err)
                          : hs_fail(err, HS_ERR_INPUT, "%s/index.html exists (%s); %s replaces it "
                                    "only with --force (or choose a file with --out)", dir0, what.s,
                                    now.s);
        hs_buf_free(&what);
        hs_buf_free(&now);
        cJSON_Delete(alone);
        return s;
    }
    cJSON_Delete(alone);
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
    const cJSON *run0 = cJSON_GetArrayItem(runs, 0);
    cJSON *folders = s == HS_OK && !out_file ? page_folders(dirs, n) : NULL;
    if (s == HS_OK && !out_file && !folders)
        s = hs_fail(err, HS_ERR_IO, "cannot resolve the folders' paths (realpath) to record them");
    if (s == HS_OK) s = page_path(dirs[0], run0, folders, out_file, force, &out->path, err);
    if (s == HS_OK) {
        data = hs_page_data(runs, cmap); /* owns runs and run0 now */
        runs = NULL;
        hs_buf title = {0}; /* "headscope view · tired, wet": the folders, as paths */
        hs_buf_puts(&title, "headscope view · ");
        for (int i = 0; i < n; i++) hs_buf_printf(&title, "%s%s", i ? ", " : "", dirs[i]);
        s = !data || title.oom ? oom(err) : hs_viz_write_html(data, title.s, out->path, err);
        hs_buf_free(&title);
    }
    if (s == HS_OK && !out_file) {
        s = list_page(dirs[0], run0, folders, err); /* takes folders */
        folders = NULL;
    }
    cJSON_Delete(folders);
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
