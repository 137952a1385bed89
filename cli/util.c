/* cli/util.c -- see util.h. */
#define _POSIX_C_SOURCE 200809L
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

int cli_error(const char *cmd, const hs_error *err)
{
    fprintf(stderr, "headscope %s: %s\n", cmd, err->msg);
    return 1;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "headscope %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (try: headscope %s --help)\n", cmd);
    return 2;
}

int cli_parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int cli_parse_u64(const char *s, unsigned long long *out)
{
    char *end;
    errno = 0;
    if (s[0] == '-') return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end != '\0') return -1;
    *out = v;
    return 0;
}

int cli_parse_float(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end != '\0' || !isfinite(v) || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

void cli_loaded_free(cli_loaded *l)
{
    hs_model_destroy(l->model);
    hs_vocab_destroy(l->vocab);
    hs_winograd_destroy(l->task);
    hs_meta_free(&l->meta);
    memset(l, 0, sizeof *l);
}

int cli_load(const char *cmd, const char *path, int need_task, cli_loaded *out)
{
    hs_error err = {0};
    memset(out, 0, sizeof *out);
    int skipped = 0;
    if (hs_checkpoint_load(path, &out->model, &out->meta, &skipped, &err) != HS_OK)
        return cli_error(cmd, &err);
    if (skipped > 0)
        fprintf(stderr, "headscope %s: note: skipped %d TransformerLens buffer tensor(s) "
                        "(blocks.*.attn.mask/IGNORE)\n", cmd, skipped);
    if (out->meta.vocab == NULL) {
        fprintf(stderr, "headscope %s: %s has no vocab metadata; headscope needs the word list "
                        "to read sentences\n", cmd, path);
        cli_loaded_free(out);
        return 1;
    }
    if (hs_vocab_from_json(out->meta.vocab, &out->vocab, &err) != HS_OK) {
        cli_loaded_free(out);
        return cli_error(cmd, &err);
    }
    if ((int)out->vocab->n != out->model->cfg.d_vocab) {
        fprintf(stderr, "headscope %s: %s: vocab has %zu words but d_vocab is %d\n", cmd, path,
                out->vocab->n, out->model->cfg.d_vocab);
        cli_loaded_free(out);
        return 1;
    }
    if (out->meta.task != NULL) {
        if (hs_winograd_from_task_json(out->meta.task, out->vocab, &out->task, &err) != HS_OK) {
            cli_loaded_free(out);
            return cli_error(cmd, &err);
        }
    } else if (need_task) {
        fprintf(stderr, "headscope %s: %s has no task metadata (which task and split it was "
                        "trained on); this command needs it\n", cmd, path);
        cli_loaded_free(out);
        return 1;
    }
    return 0;
}

/* A name an index may list for deletion: a plain file name in the folder. */
static int plain_name(const char *s)
{
    return s && s[0] != '\0' && strchr(s, '/') == NULL && strchr(s, '\\') == NULL &&
           strstr(s, "..") == NULL && strcmp(s, ".") != 0;
}

/* Deletes dir/name if it is there and not a folder; 0 ok (or absent), 1 printed. */
static int remove_listed(const char *cmd, const char *dir, const char *name)
{
    char *path = hs_path_join(dir, name);
    if (!path) {
        fprintf(stderr, "headscope %s: out of memory\n", cmd);
        return 1;
    }
    struct stat st;
    int rc = 0;
    if (lstat(path, &st) == 0 && !S_ISDIR(st.st_mode) && unlink(path) != 0 && errno != ENOENT) {
        fprintf(stderr, "headscope %s: cannot remove %s from an earlier run: %s\n", cmd, path,
                strerror(errno));
        rc = 1;
    }
    free(path);
    return rc;
}

int cli_prepare_out_dir(const char *cmd, const char *dir)
{
    hs_error err = {0};
    if (dir[0] == '\0') {
        fprintf(stderr, "headscope %s: --out is empty\n", cmd);
        return 1;
    }
    if (hs_mkdir(dir, &err) != HS_OK) return cli_error(cmd, &err);

    char *ipath = hs_path_join(dir, "index.json");
    if (!ipath) {
        fprintf(stderr, "headscope %s: out of memory\n", cmd);
        return 1;
    }
    unsigned char *data = NULL;
    size_t n = 0;
    hs_error rerr = {0};
    if (hs_read_file(ipath, &data, &n, &rerr) == HS_OK) {
        cJSON *idx = cJSON_ParseWithLength((const char *)data, n);
        const cJSON *files = idx ? cJSON_GetObjectItemCaseSensitive(idx, "files") : NULL;
        const cJSON *command = idx ? cJSON_GetObjectItemCaseSensitive(idx, "command") : NULL;
        /* only an index headscope wrote: {"command": "...", "files": [{"file": ...}]} */
        if (cJSON_IsArray(files) && cJSON_IsString(command)) {
            const cJSON *e;
            cJSON_ArrayForEach(e, files)
            {
                const cJSON *f = cJSON_GetObjectItemCaseSensitive(e, "file");
                if (!cJSON_IsString(f) || !plain_name(f->valuestring) ||
                    strcmp(f->valuestring, "index.json") == 0)
                    continue;
                if (remove_listed(cmd, dir, f->valuestring)) {
                    cJSON_Delete(idx);
                    free(data);
                    free(ipath);
                    return 1;
                }
            }
            if (remove_listed(cmd, dir, "index.json")) {
                cJSON_Delete(idx);
                free(data);
                free(ipath);
                return 1;
            }
        }
        cJSON_Delete(idx);
        free(data);
    }
    free(ipath);

    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "headscope %s: cannot read folder %s: %s\n", cmd, dir, strerror(errno));
        return 1;
    }
    long others = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) others++;
    closedir(d);
    if (others > 0)
        fprintf(stderr, "note: %s already holds %ld file%s headscope did not write; "
                        "they are kept\n",
                dir, others, others == 1 ? "" : "s");
    return 0;
}

int cli_parse_threads(const char *cmd, const char *s, int *out)
{
    long v;
    const int cpus = hs_pool_cpus();
    if (cli_parse_int(s, 0, cpus, &v))
        return cli_usage_error(cmd, "--threads needs an integer in [0, %d] (0 = all %d CPUs of this machine), got '%s'",
                               cpus, cpus, s);
    *out = (int)v;
    return 0;
}

void cli_say_threads(const char *cmd, int threads)
{
    const int cpus = hs_pool_cpus();
    fprintf(stderr, "headscope %s: threads: %d of %d CPU%s%s\n", cmd, threads > 0 ? threads : cpus, cpus,
            cpus == 1 ? "" : "s", threads > 0 ? "" : " (--threads 0 = all)");
}
