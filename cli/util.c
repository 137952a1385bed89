/* cli/util.c -- see util.h. */
#define _POSIX_C_SOURCE 200809L
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

/* Prints "headscope CMD: MSG" with every character that could change how the
 * line displays shown as <U+XXXX> (hs_buf_put_visible): messages may quote
 * what the user typed or a checkpoint holds. */
static void print_visible(const char *cmd, const char *msg, const char *tail)
{
    hs_buf b = {0};
    hs_buf_put_visible(&b, msg);
    fprintf(stderr, "headscope %s: %s%s\n", cmd, b.oom ? "(out of memory)" : b.s ? b.s : "", tail);
    hs_buf_free(&b);
}

int cli_error(const char *cmd, const hs_error *err)
{
    print_visible(cmd, err->msg, "");
    return 1;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    hs_buf b = {0};
    va_list ap;
    va_start(ap, fmt);
    hs_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    char *msg = hs_buf_take(&b);
    char *tail = hs_strfmt(" (try: headscope %s --help)", cmd);
    if (msg && tail)
        print_visible(cmd, msg, tail);
    else
        fprintf(stderr, "headscope %s: out of memory\n", cmd);
    free(msg);
    free(tail);
    return 2;
}

int cli_args_end(const char *cmd, int argc, char **argv, int next, const char *model)
{
    if (next < argc) return cli_usage_error(cmd, "unexpected argument '%s'", argv[next]);
    if (!model) return cli_usage_error(cmd, "--model FILE is required");
    return 0;
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
    hs_tokenizer_destroy(l->vocab);
    hs_winograd_destroy(l->task);
    hs_induction_destroy(l->ind);
    hs_meta_free(&l->meta);
    memset(l, 0, sizeof *l);
}

int cli_source_opt(const char *cmd, int c, const char *arg, cli_source *src)
{
    switch (c) {
    case CLI_O_VOCAB: src->vocab = arg; return 1;
    case CLI_O_HELDOUT_PAIRS: src->heldout_pairs = arg; return 1;
    case CLI_O_SPLIT_SEED:
        if (cli_parse_u64(arg, &src->split_seed)) {
            cli_usage_error(cmd, "--split-seed needs a whole number >= 0, got '%s'", arg);
            return -1;
        }
        src->has_split_seed = 1;
        return 1;
    default: return 0;
    }
}

int cli_load_src(const char *cmd, const char *path, int need, const cli_source *src,
                 cli_loaded *out)
{
    static const cli_source none = {NULL, NULL, 0, 0};
    if (src == NULL) src = &none;
    hs_error err = {0};
    memset(out, 0, sizeof *out);
    if (src->has_split_seed && src->heldout_pairs)
        return cli_usage_error(cmd, "give --split-seed or --heldout-pairs, not both");
    int skipped = 0;
    if (hs_checkpoint_load(path, &out->model, &out->meta, &skipped, &err) != HS_OK)
        return cli_error(cmd, &err);
    if (out->meta.warning) fprintf(stderr, "headscope %s: warning: %s\n", cmd, out->meta.warning);
    if (skipped > 0)
        fprintf(stderr, "headscope %s: note: skipped %d TransformerLens buffer tensor(s) "
                        "(blocks.*.attn.mask/IGNORE)\n", cmd, skipped);
    hs_status st = HS_OK;
    if (src->vocab) {
        if (out->meta.vocab)
            fprintf(stderr, "headscope %s: note: --vocab %s replaces the checkpoint's vocabulary\n",
                    cmd, src->vocab);
        st = hs_tokenizer_read(src->vocab, &out->vocab, &err);
    } else if (out->meta.vocab) {
        st = hs_tokenizer_from_json(out->meta.vocab, &out->vocab, &err);
    } else if (need & (CLI_NEED_VOCAB | CLI_NEED_TASK | CLI_NEED_ANY_TASK)) {
        fprintf(stderr, "headscope %s: %s has no vocab metadata; headscope needs the word list "
                        "to read sentences: give --vocab FILE (one token a line, or a JSON "
                        "list)\n", cmd, path);
        cli_loaded_free(out);
        return 1;
    } else {
        st = hs_tokenizer_ids(out->model->cfg.d_vocab, &out->vocab, &err);
        out->vocab_is_ids = 1;
    }
    if (st != HS_OK) {
        cli_loaded_free(out);
        return cli_error(cmd, &err);
    }
    if ((int)out->vocab->n != out->model->cfg.d_vocab) {
        fprintf(stderr, "headscope %s: %s: vocab%s%s has %zu words but d_vocab is %d\n", cmd, path,
                src->vocab ? " " : "", src->vocab ? src->vocab : "", out->vocab->n,
                out->model->cfg.d_vocab);
        cli_loaded_free(out);
        return 1;
    }
    const int split_given = src->has_split_seed || src->heldout_pairs;
    if (out->meta.task != NULL && split_given) {
        fprintf(stderr, "headscope %s: %s names its task and split in its metadata; "
                        "--split-seed / --heldout-pairs are for checkpoints without it\n", cmd, path);
        cli_loaded_free(out);
        return 1;
    }
    char *tname = NULL;
    const int is_ind = out->meta.task != NULL &&
                       hs_task_json_name(out->meta.task, &tname, &err) == HS_OK && strcmp(tname, "induction") == 0;
    free(tname);
    if (is_ind) {
        if (need & CLI_NEED_TASK) {
            fprintf(stderr, "headscope %s: %s is an induction-task model; this command works on "
                            "Winograd models\n", cmd, path);
            cli_loaded_free(out);
            return 1;
        }
        st = hs_induction_from_task_json(out->meta.task, out->vocab, &out->ind, &err);
    } else if (out->meta.task != NULL) {
        st = hs_winograd_from_task_json(out->meta.task, out->vocab, &out->task, &err);
    } else if (src->has_split_seed) {
        st = hs_winograd_create(HS_TASK_WINOGRAD, (uint64_t)src->split_seed, out->vocab, &out->task,
                                &err);
    } else if (src->heldout_pairs) {
        int pairs[HS_WG_MAX_HELDOUT_PAIRS][2];
        size_t n = 0;
        st = hs_wg_pairs_read(src->heldout_pairs, pairs, HS_WG_MAX_HELDOUT_PAIRS, &n, &err);
        if (st == HS_OK)
            st = hs_winograd_create_pairs(HS_TASK_WINOGRAD, (const int(*)[2])pairs, n, out->vocab,
                                          &out->task, &err);
    } else if (need & (CLI_NEED_TASK | CLI_NEED_ANY_TASK)) {
        fprintf(stderr, "headscope %s: %s has no task metadata (which task and split it was "
                        "trained on); give --split-seed S or --heldout-pairs FILE\n", cmd, path);
        cli_loaded_free(out);
        return 1;
    }
    if (st != HS_OK) {
        cli_loaded_free(out);
        return cli_error(cmd, &err);
    }
    return 0;
}

int cli_load(const char *cmd, const char *path, int need_task, cli_loaded *out)
{
    static const int need[3] = {CLI_NEED_VOCAB, CLI_NEED_TASK, CLI_NEED_ANY_TASK};
    return cli_load_src(cmd, path, need[need_task < 0 || need_task > 2 ? 0 : need_task], NULL, out);
}

/* ------------------------------------------------------------------------ */
/* Output folders (util.h, "Output folders")                                 */

int cli_inputs_add(cli_inputs *in, const char *path)
{
    struct stat st;
    if (path == NULL || in->n >= CLI_MAX_INPUTS || stat(path, &st) != 0) return 0;
    in->dev[in->n] = st.st_dev;
    in->ino[in->n] = st.st_ino;
    in->n++;
    return 1;
}

/* 1 when st is one of the inputs (same device and inode). */
static int is_input(const cli_inputs *in, const struct stat *st)
{
    for (int i = 0; in && i < in->n; i++)
        if (in->dev[i] == st->st_dev && in->ino[i] == st->st_ino) return 1;
    return 0;
}

int cli_file_digest(const char *path, double *bytes, char hex[17])
{
    /* read in pieces: no buffer of the file's size (fresh pages to fault in) */
    int fd = open(path, O_RDONLY | O_NONBLOCK); /* a FIFO must not block: refused below */
    struct stat st;
    if (fd < 0) return -1;
    int e = fstat(fd, &st) != 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL : 0;
    if (e) {
        close(fd);
        errno = e;
        return -1;
    }
    unsigned char buf[32768];
    uint64_t h = HS_FNV1A64_BASIS;
    size_t n = 0;
    for (;;) {
        ssize_t got = read(fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        if (got == 0) break;
        h = hs_fnv1a64_more(h, buf, (size_t)got);
        n += (size_t)got;
    }
    close(fd);
    snprintf(hex, 17, "%016llx", (unsigned long long)h);
    *bytes = (double)n;
    return 0;
}

/* 1 when s is a plain file name (no '/', not "." or "..", not empty). */
static int plain_name(const char *s)
{
    return s && s[0] != '\0' && strchr(s, '/') == NULL && strcmp(s, ".") != 0 &&
           strcmp(s, "..") != 0;
}

/* Empties and removes dir/name, a working folder ".headscope.tmp.<pid>" that
 * a run killed before it could clean up left (its process is gone): only the
 * plain files in it, then the folder (rmdir fails, and it stays, if it holds
 * anything else). 1 when it was removed. */
static int remove_stale_stage(const char *dir, const char *name)
{
    static const char prefix[] = ".headscope.tmp.";
    const size_t np = sizeof prefix - 1;
    if (strncmp(name, prefix, np) != 0 || name[np] == '\0') return 0;
    char *end = NULL;
    errno = 0;
    long pid = strtol(name + np, &end, 10);
    if (errno || *end != '\0' || pid <= 0 || pid == (long)getpid()) return 0;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) return 0; /* still running (or not ours to ask) */
    char *path = hs_path_join(dir, name);
    struct stat sb;
    if (!path || lstat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        free(path);
        return 0;
    }
    DIR *d = opendir(path);
    for (struct dirent *de; d && (de = readdir(d)) != NULL;) {
        if (!plain_name(de->d_name)) continue;
        char *f = hs_path_join(path, de->d_name);
        if (f && lstat(f, &sb) == 0 && S_ISREG(sb.st_mode)) unlink(f);
        free(f);
    }
    if (d) closedir(d);
    int gone = rmdir(path) == 0;
    free(path);
    return gone;
}

static char *other_command(const char *dir, const char *cmd);

int cli_out_begin(const char *cmd, const char *dir, cli_stage *st)
{
    memset(st, 0, sizeof *st);
    st->fd = -1;
    if (dir[0] == '\0') {
        fprintf(stderr, "headscope %s: --out is empty\n", cmd);
        return 1;
    }
    struct stat sb;
    if (stat(dir, &sb) != 0) {
        hs_error err = {0};
        if (hs_mkdir(dir, &err) != HS_OK) return cli_error(cmd, &err);
        st->created = 1;
    } else if (!S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "headscope %s: %s exists and is not a folder\n", cmd, dir);
        return 1;
    }
    /* another command's folder: its files are not this command's to replace */
    char *other = st->created ? NULL : other_command(dir, cmd);
    if (other) {
        fprintf(stderr, "headscope %s: %s holds the output of `headscope %s` (its index.json); "
                        "choose another --out, or move that folder away\n", cmd, dir, other);
        free(other);
        return 1;
    }
    /* a working folder a killed run left (SIGKILL, a crash) is removed first */
    DIR *d = opendir(dir);
    for (struct dirent *de; d && (de = readdir(d)) != NULL;)
        if (remove_stale_stage(dir, de->d_name))
            fprintf(stderr, "headscope %s: note: removed %s/%s, the working folder of an earlier "
                            "run that was killed before it finished\n", cmd, dir, de->d_name);
    if (d) closedir(d);
    hs_buf b = {0};
    hs_buf_printf(&b, ".headscope.tmp.%ld", (long)getpid());
    st->name = hs_buf_take(&b);
    st->path = st->name ? hs_path_join(dir, st->name) : NULL;
    if (!st->path) {
        fprintf(stderr, "headscope %s: out of memory\n", cmd);
        cli_out_discard(dir, st);
        return 1;
    }
    if (mkdir(st->path, 0777) != 0) {
        fprintf(stderr, "headscope %s: cannot write into folder %s: %s\n", cmd, dir,
                strerror(errno));
        cli_out_discard(dir, st);
        return 1;
    }
    /* files in the working folder are made durable together, by one sync
     * before cli_out_commit moves them in, not by one fsync each; the folder
     * is opened now so that the sync reports write-back errors of every file
     * (if it cannot be opened, each file keeps its own fsync) */
    st->fd = open(st->path, O_RDONLY);
    if (st->fd >= 0) hs_atomic_defer_sync(1);
    return 0;
}

void cli_out_discard(const char *dir, cli_stage *st)
{
    hs_atomic_defer_sync(0);
    if (st->fd >= 0) close(st->fd);
    if (st->path) {
        DIR *d = opendir(st->path); /* everything in it is this run's */
        for (struct dirent *de; d && (de = readdir(d)) != NULL;) {
            if (!plain_name(de->d_name)) continue;
            char *f = hs_path_join(st->path, de->d_name);
            if (f) unlink(f);
            free(f);
        }
        if (d) closedir(d);
        rmdir(st->path);
    }
    if (st->created) rmdir(dir); /* only if still empty */
    free(st->path);
    free(st->name);
    memset(st, 0, sizeof *st);
    st->fd = -1;
}

/* What an earlier index.json proves headscope wrote in dir. */
typedef struct {
    cJSON *idx;       /* the parsed old index (owned), NULL when none or not headscope's */
    int headscope;    /* 1 when dir/index.json is an index headscope wrote */
} old_index;

/* 1 when name is listed in a headscope index of dir with the size and FNV-1a
 * the file still has, it is a regular file (not a link), and it is not an
 * input of this command. */
static int owned(const old_index *oi, const char *dir, const char *name, const cli_inputs *in)
{
    if (!oi->headscope) return 0;
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(oi->idx, "files"), *e;
    cJSON_ArrayForEach(e, files)
    {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(e, "file");
        const cJSON *nb = cJSON_GetObjectItemCaseSensitive(e, "bytes");
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(e, "fnv1a64");
        if (!cJSON_IsString(f) || strcmp(f->valuestring, name) != 0 || !plain_name(name) ||
            !cJSON_IsNumber(nb) || !cJSON_IsString(h))
            continue;
        char *path = hs_path_join(dir, name);
        struct stat sb;
        char hex[17];
        double bytes;
        int ok = path && lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) && !is_input(in, &sb) &&
                 (double)sb.st_size == nb->valuedouble &&
                 cli_file_digest(path, &bytes, hex) == 0 && strcmp(hex, h->valuestring) == 0;
        free(path);
        return ok;
    }
    return 0;
}

static void read_old_index(const char *dir, old_index *oi)
{
    memset(oi, 0, sizeof *oi);
    char *ipath = hs_path_join(dir, "index.json");
    unsigned char *data = NULL;
    size_t n = 0;
    hs_error err = {0};
    struct stat sb;
    if (ipath && lstat(ipath, &sb) == 0 && S_ISREG(sb.st_mode) &&
        hs_read_file(ipath, &data, &n, &err) == HS_OK) {
        oi->idx = cJSON_ParseWithLength((const char *)data, n);
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(oi->idx, "generator");
        oi->headscope = cJSON_IsString(g) && strncmp(g->valuestring, "headscope ", 10) == 0 &&
                        cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(oi->idx, "files"));
    }
    free(data);
    free(ipath);
}

/* The command an earlier headscope run into dir was (malloc'd, caller
 * frees) when it is not cmd; NULL when dir has no headscope index, or one of
 * cmd itself. (`view` adds its page to any command's folder: not a run of
 * its own.) */
static char *other_command(const char *dir, const char *cmd)
{
    old_index oi;
    read_old_index(dir, &oi);
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(oi.idx, "command");
    char *other = oi.headscope && cJSON_IsString(c) && strcmp(c->valuestring, cmd) != 0 &&
                          strcmp(cmd, "view") != 0
                      ? hs_strdup(c->valuestring)
                      : NULL;
    cJSON_Delete(oi.idx);
    return other;
}

int cli_out_owns(const char *dir, const char *name)
{
    old_index oi;
    read_old_index(dir, &oi);
    int ok = owned(&oi, dir, name, NULL);
    cJSON_Delete(oi.idx);
    return ok;
}

/* 1 when name is one of the files this run wrote. */
static int is_new(const cJSON *files, const char *name)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, files)
    {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(e, "file");
        if (cJSON_IsString(f) && strcmp(f->valuestring, name) == 0) return 1;
    }
    return 0;
}

/* Moves stage/name over dir/name. 0 ok, 1 printed. */
static int move_in(const char *cmd, const char *dir, const cli_stage *st, const char *name)
{
    char *from = hs_path_join(st->path, name), *to = hs_path_join(dir, name);
    int rc = 0;
    if (!from || !to) {
        fprintf(stderr, "headscope %s: out of memory\n", cmd);
        rc = 1;
    } else if (rename(from, to) != 0) {
        fprintf(stderr, "headscope %s: cannot move %s to %s: %s\n", cmd, from, to, strerror(errno));
        rc = 1;
    }
    free(from);
    free(to);
    return rc;
}

int cli_out_commit(const char *cmd, const char *dir, cli_stage *st, const cJSON *files,
                   const cli_inputs *in)
{
    old_index oi;
    read_old_index(dir, &oi);
    int rc = 1, kept = 0, n_conflict = 0;
    hs_buf removed = {0}, conflict = {0};
    long n_removed = 0;

    /* 1. every name this run writes must be free, or a file an earlier run
     *    wrote and nobody changed since; otherwise nothing is touched */
    const cJSON *e;
    cJSON_ArrayForEach(e, files)
    {
        const char *name = cJSON_GetObjectItemCaseSensitive(e, "file")->valuestring;
        char *path = hs_path_join(dir, name);
        struct stat sb;
        if (path && lstat(path, &sb) == 0) {
            int ours = strcmp(name, "index.json") == 0 ? oi.headscope
                                                        : owned(&oi, dir, name, in);
            if (!ours && n_conflict++ == 0) {
                if (S_ISREG(sb.st_mode) && is_input(in, &sb))
                    hs_buf_printf(&conflict, "%s is an input of this command", path);
                else if (strcmp(name, "index.json") == 0)
                    hs_buf_printf(&conflict, "%s is not an index headscope wrote", path);
                else
                    hs_buf_printf(&conflict, "%s exists and headscope did not write it (or it "
                                             "changed since: %s/index.json has no entry of its "
                                             "size and hash)", path, dir);
            }
        }
        free(path);
    }
    if (n_conflict) {
        if (n_conflict > 1) hs_buf_printf(&conflict, " (and %d more)", n_conflict - 1);
        fprintf(stderr, "headscope %s: %s; nothing was changed: move %s away or choose another "
                        "--out\n", cmd, conflict.s ? conflict.s : "?",
                n_conflict > 1 ? "them" : "it");
        goto done;
    }
    /* 2. everything written is on disk (hs_atomic_defer_sync), then the new
     *    files move in (index.json last) */
    hs_error serr = {0};
    if (st->fd >= 0 && hs_sync_fs(st->fd, st->path, &serr) != HS_OK) {
        cli_error(cmd, &serr);
        goto done;
    }
    hs_atomic_defer_sync(0);
    cJSON_ArrayForEach(e, files)
    {
        const char *name = cJSON_GetObjectItemCaseSensitive(e, "file")->valuestring;
        if (strcmp(name, "index.json") != 0 && move_in(cmd, dir, st, name)) goto done;
    }
    /* 3. remove what the earlier run wrote that this one does not */
    const cJSON *old = oi.headscope ? cJSON_GetObjectItemCaseSensitive(oi.idx, "files") : NULL;
    cJSON_ArrayForEach(e, old)
    {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(e, "file");
        if (!cJSON_IsString(f) || is_new(files, f->valuestring) ||
            strcmp(f->valuestring, "index.json") == 0 || !owned(&oi, dir, f->valuestring, in))
            continue;
        char *path = hs_path_join(dir, f->valuestring);
        if (path && unlink(path) == 0) {
            if (n_removed < 8) hs_buf_printf(&removed, "%s%s", n_removed ? ", " : "", f->valuestring);
            n_removed++;
        }
        free(path);
    }
    if (move_in(cmd, dir, st, "index.json")) goto done;
    if (rmdir(st->path) != 0) {
        fprintf(stderr, "headscope %s: cannot remove the working folder %s: %s\n", cmd, st->path,
                strerror(errno));
        goto done;
    }
    st->created = 0;
    if (n_removed > 0) /* a file replaced by one of the same name is no news */
        fprintf(stderr, "headscope %s: note: removed %ld file%s an earlier run wrote in %s "
                        "(unchanged since, per its index.json) that this run does not write: "
                        "%s%s\n", cmd, n_removed, n_removed == 1 ? "" : "s", dir,
                removed.s ? removed.s : "", n_removed > 8 ? ", ..." : "");
    /* 4. say what else the folder holds */
    DIR *d = opendir(dir);
    for (struct dirent *de; d && (de = readdir(d)) != NULL;)
        if (plain_name(de->d_name) && !is_new(files, de->d_name)) kept++;
    if (d) closedir(d);
    if (kept > 0)
        fprintf(stderr, "note: %s already holds %d file%s headscope did not write; "
                        "they are kept\n", dir, kept, kept == 1 ? "" : "s");
    rc = 0;
done:
    hs_buf_free(&removed);
    hs_buf_free(&conflict);
    cJSON_Delete(oi.idx);
    return rc;
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

int cli_stdout_done(const char *cmd)
{
    if (fflush(stdout) == 0 && !ferror(stdout)) return 0;
    fprintf(stderr, "headscope %s: cannot write to stdout\n", cmd);
    return 1;
}
