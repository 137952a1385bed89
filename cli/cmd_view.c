/*
 * cli/cmd_view.c -- `headscope view DIR [DIR...]`: one offline HTML page from
 * output folders headscope wrote (their index.json and the JSON files it
 * lists). Thin: reads and parses the files, viz builds the page.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "figopts.h"
#include "util.h"
#include "viz/viz.h"

static const char VIEW_HELP[] =
    "usage: headscope view DIR [DIR...] [--out FILE [--force]] [--cmap viridis|greys]\n"
    "\n"
    "Turns output folders of inspect, circuit or weights (their index.json and the\n"
    "JSON files it lists) into one self-contained HTML page: data, script and style\n"
    "inline, no request to any server, opens from a file with no network. Two\n"
    "inspect folders (e.g. the chapter's tired and wet sentences) give a page that\n"
    "compares a pinned head across the two sentences.\n"
    "\n"
    "  --out FILE     the page (default DIR/index.html of the first DIR, then listed\n"
    "                 in its index.json with its size and hash; an index.html that\n"
    "                 index.json does not list so is not overwritten)\n"
    "  --force        replace an existing --out FILE (otherwise refused, untouched)\n"
    "  --cmap NAME    viridis (default) | greys, the attention colour map\n"
    "\n"
    "The page: the layers x heads grid, one head large, a token view (hover or focus\n"
    "a token for its attention row, as shading and lines), predictions and DLA bars,\n"
    "the circuit's verdicts and sortable per-head evidence, and every other figure's\n"
    "numbers, in the static figures' colour maps. Keyboard: Tab to a grid, arrows to\n"
    "move, Enter to select.\n";

/* Parsed JSON of dir/name; NULL after printing. */
static cJSON *read_json(const char *C, const char *dir, const char *name)
{
    char *path = hs_path_join(dir, name);
    unsigned char *data = NULL;
    size_t n = 0;
    hs_error err = {0};
    if (!path) {
        fprintf(stderr, "headscope %s: out of memory\n", C);
        return NULL;
    }
    if (hs_read_file(path, &data, &n, &err) != HS_OK) {
        cli_error(C, &err);
        free(path);
        return NULL;
    }
    cJSON *j = cJSON_ParseWithLength((const char *)data, n);
    free(data);
    if (!j) fprintf(stderr, "headscope %s: %s is not valid JSON\n", C, path);
    free(path);
    return j;
}

/* The run of one folder: {"dir", "command", "index", "files": {stem: JSON}}. NULL printed. */
static cJSON *load_run(const char *C, const char *dir)
{
    cJSON *idx = read_json(C, dir, "index.json");
    if (!idx) return NULL;
    const cJSON *cmd = cJSON_GetObjectItem(idx, "command");
    const cJSON *files = cJSON_GetObjectItem(idx, "files");
    if (!cJSON_IsString(cmd) || !cJSON_IsArray(files)) {
        fprintf(stderr, "headscope %s: %s/index.json is not an index headscope wrote (no "
                        "\"command\" and \"files\")\n", C, dir);
        cJSON_Delete(idx);
        return NULL;
    }
    cJSON *run = cJSON_CreateObject(), *page = cJSON_CreateObject();
    int ok = run && page;
    for (const cJSON *f = files->child; ok && f; f = f->next) {
        const cJSON *fn = cJSON_GetObjectItem(f, "file");
        if (!cJSON_IsString(fn)) continue;
        const char *name = fn->valuestring;
        size_t n = strlen(name);
        /* plain names only, as the out-folder policy reads an index */
        if (n < 6 || strcmp(name + n - 5, ".json") != 0 || strchr(name, '/') ||
            strstr(name, "..") || strcmp(name, "index.json") == 0)
            continue;
        char *stem = hs_strdup(name); /* the name without ".json"; any length */
        if (!stem) {
            ok = 0;
            break;
        }
        stem[n - 5] = '\0';
        if (!hs_page_keeps(cmd->valuestring, stem) || cJSON_GetObjectItem(page, stem)) {
            free(stem);
            continue;
        }
        cJSON *j = read_json(C, dir, name);
        hs_error err = {0};
        if (j && hs_viz_html_pack(j, &err) != HS_OK) {
            fprintf(stderr, "headscope %s: %s/%s: %s\n", C, dir, name, err.msg);
            cJSON_Delete(j);
            j = NULL;
        }
        if (!j || !cJSON_AddItemToObject(page, stem, j)) {
            cJSON_Delete(j);
            ok = 0;
        }
        free(stem);
    }
    if (ok) ok = cJSON_AddStringToObject(run, "dir", dir) &&
                 cJSON_AddStringToObject(run, "command", cmd->valuestring) &&
                 cJSON_AddItemToObject(run, "index", idx);
    if (ok) idx = NULL;
    if (ok) ok = cJSON_AddItemToObject(run, "files", page);
    if (ok) return run;
    cJSON_Delete(idx);
    if (!cJSON_GetObjectItem(run, "files")) cJSON_Delete(page);
    cJSON_Delete(run);
    return NULL;
}

/* With the default --out: lists index.html (written at dir) in DIR/index.json
 * with its size and hash, as every run lists its files, so the next run in
 * DIR may replace or remove it. 0 ok, 1 printed. */
static int list_page(const char *C, const char *dir, const cJSON *run)
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
    hs_error err = {0};
    char *path = hs_path_join(dir, "index.json"), *page = hs_path_join(dir, "index.html");
    double bytes = 0;
    char hex[17];
    /* with its size and hash, so a later run may replace or remove it (cli/util.h) */
    int ok = idx && files && e && path && page && hs_out_digest(page, &bytes, hex) == 0 &&
             cJSON_AddStringToObject(e, "file", "index.html") &&
             cJSON_AddStringToObject(e, "format", "html") &&
             cJSON_AddStringToObject(e, "shows", "one offline page to explore this folder's data "
                                                 "(headscope view; open it in a browser)") &&
             cJSON_AddNumberToObject(e, "bytes", bytes) &&
             cJSON_AddStringToObject(e, "fnv1a64", hex) && cJSON_AddItemToArray(files, e);
    if (ok) e = NULL;
    hs_status s = ok ? hs_viz_write_json(idx, path, &err) : hs_fail(&err, HS_ERR_NOMEM, "out of memory");
    cJSON_Delete(e);
    cJSON_Delete(idx);
    free(page);
    free(path);
    return s != HS_OK ? cli_error(C, &err) : 0;
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

int cmd_view(int argc, char **argv)
{
    enum { O_OUT = 1, O_CMAP, O_HELP, O_FORCE };
    static const struct option opts[] = {{"out", required_argument, 0, O_OUT},
                                         {"force", no_argument, 0, O_FORCE},
                                         {"cmap", required_argument, 0, O_CMAP},
                                         {"help", no_argument, 0, O_HELP},
                                         {0, 0, 0, 0}};
    const char *C = "view", *out = NULL;
    hs_viz_cmap cmap = HS_VIZ_CMAP_VIRIDIS;
    int c, force = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_HELP: fputs(VIEW_HELP, stdout); return 0;
        case O_OUT: out = optarg; break;
        case O_FORCE: force = 1; break;
        case O_CMAP:
            if (strcmp(optarg, "viridis") == 0) cmap = HS_VIZ_CMAP_VIRIDIS;
            else if (strcmp(optarg, "greys") == 0 || strcmp(optarg, "grays") == 0)
                cmap = HS_VIZ_CMAP_GREYS;
            else return cli_usage_error(C, "unknown --cmap '%s' (viridis, greys)", optarg);
            break;
        default: return cli_usage_error(C, "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc) return cli_usage_error(C, "give one or more output folders (headscope view DIR)");
    cJSON *runs = cJSON_CreateArray();
    if (!runs) {
        fprintf(stderr, "headscope %s: out of memory\n", C);
        return 1;
    }
    for (int i = optind; i < argc; i++) {
        cJSON *run = load_run(C, argv[i]);
        if (!run) {
            cJSON_Delete(runs);
            return 1;
        }
        cJSON_AddItemToArray(runs, run);
    }
    const char *dir0 = argv[optind];
    const cJSON *run0 = cJSON_GetArrayItem(runs, 0);
    char *path = out ? hs_strdup(out) : hs_path_join(dir0, "index.html");
    char *title = NULL;
    int rc = 1;
    struct stat st;
    if (!out && foreign_page(dir0)) {
        fprintf(stderr, "headscope %s: %s/index.html exists and %s/index.json does not list it "
                        "with its size and hash; not overwriting it (choose a file with --out)\n",
                C, dir0, dir0);
        goto done;
    }
    if (out && !force && stat(out, &st) == 0) {
        fprintf(stderr, "headscope %s: --out %s already exists; use --force to replace it\n", C,
                out);
        goto done;
    }
    cJSON *data = hs_page_data(runs, cmap); /* owns runs and run0 now */
    runs = NULL;
    title = hs_strfmt("headscope view · %s%s", dir0, argc - optind > 1 ? " …" : ""); /* a path */
    hs_error err = {0};
    hs_status s = !data || !path || !title ? hs_fail(&err, HS_ERR_NOMEM, "out of memory")
                                 : hs_viz_write_html(data, title, path, &err);
    if (s != HS_OK) cli_error(C, &err);
    int listed = s == HS_OK && (out || list_page(C, dir0, run0) == 0);
    cJSON_Delete(data);
    if (!listed) goto done;
    printf("wrote %s (open it in a browser; it needs no network)\n", path);
    rc = fflush(stdout) != 0;
done:
    cJSON_Delete(runs);
    free(path);
    free(title);
    return rc;
}
