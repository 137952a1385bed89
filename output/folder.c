/*
 * output/folder.c -- the output-folder policy (output.h, "Output folders"):
 * opening a folder and its working folder, proving from an earlier
 * index.json which files headscope wrote, moving a finished run's files in
 * (index.json last) and discarding a failed one's.
 */
#define _POSIX_C_SOURCE 200809L
#include "output/output_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int add_input(hs_out_inputs *in, const char *path)
{
    struct stat st;
    if (path == NULL || in->n >= HS_OUT_MAX_INPUTS || stat(path, &st) != 0) return 0;
    in->dev[in->n] = st.st_dev;
    in->ino[in->n] = st.st_ino;
    in->n++;
    return 1;
}

/* 1 when st is one of the inputs (same device and inode). */
static int is_input(const hs_out_inputs *in, const struct stat *st)
{
    for (int i = 0; in && i < in->n; i++)
        if (in->dev[i] == st->st_dev && in->ino[i] == st->st_ino) return 1;
    return 0;
}

int hs_out_digest(const char *path, double *bytes, char hex[17])
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

/* What an earlier index.json proves headscope wrote in dir. */
typedef struct {
    cJSON *idx;       /* the parsed old index (owned), NULL when none or not headscope's */
    int headscope;    /* 1 when dir/index.json is an index headscope wrote */
} old_index;

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

/* 1 when name is listed in a headscope index of dir with the size and FNV-1a
 * the file still has, it is a regular file (not a link), and it is not an
 * input of this command. */
static int owned(const old_index *oi, const char *dir, const char *name, const hs_out_inputs *in)
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
                 hs_out_digest(path, &bytes, hex) == 0 && strcmp(hex, h->valuestring) == 0;
        free(path);
        return ok;
    }
    return 0;
}

/* 1 when the regular files a and b hold the same bytes (read in pieces and
 * compared; 0 on any error). */
static int files_equal(const char *a, const char *b)
{
    int fa = open(a, O_RDONLY), fb = fa >= 0 ? open(b, O_RDONLY) : -1;
    struct stat sa, sb;
    int eq = fa >= 0 && fb >= 0 && fstat(fa, &sa) == 0 && fstat(fb, &sb) == 0 &&
             S_ISREG(sa.st_mode) && S_ISREG(sb.st_mode) && sa.st_size == sb.st_size;
    static const size_t piece = 65536;
    unsigned char *ba = eq ? malloc(2 * piece) : NULL, *bb = ba ? ba + piece : NULL;
    eq = eq && ba;
    for (off_t done = 0; eq && done < sa.st_size;) {
        size_t want = (size_t)(sa.st_size - done) < piece ? (size_t)(sa.st_size - done) : piece;
        ssize_t ga = read(fa, ba, want), gb = ga > 0 ? read(fb, bb, (size_t)ga) : -1;
        eq = ga > 0 && gb == ga && memcmp(ba, bb, (size_t)ga) == 0;
        done += ga > 0 ? ga : 0;
    }
    free(ba);
    if (fa >= 0) close(fa);
    if (fb >= 0) close(fb);
    return eq;
}

/* owned() for a name this run writes, whose new file is stage/name with
 * index entry e (its "bytes" and "fnv1a64"): when the file in dir holds the
 * new file's bytes (files_equal, cheaper than hashing it), its hash is the
 * new one, so it is owned when the old index lists that hash, and *same is
 * set (the run need not replace it); otherwise owned() hashes it. */
static int owned_or_same(const old_index *oi, const hs_outdir *o, const char *name,
                         const cJSON *e, int *same)
{
    *same = 0;
    if (!oi->headscope) return 0;
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(oi->idx, "files"), *x;
    const cJSON *nb = cJSON_GetObjectItemCaseSensitive(e, "bytes");
    const cJSON *nh = cJSON_GetObjectItemCaseSensitive(e, "fnv1a64");
    cJSON_ArrayForEach(x, files)
    {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(x, "file");
        const cJSON *ob = cJSON_GetObjectItemCaseSensitive(x, "bytes");
        const cJSON *oh = cJSON_GetObjectItemCaseSensitive(x, "fnv1a64");
        if (!cJSON_IsString(f) || strcmp(f->valuestring, name) != 0) continue;
        if (!plain_name(name) || !cJSON_IsNumber(ob) || !cJSON_IsString(oh) ||
            !cJSON_IsNumber(nb) || !cJSON_IsString(nh) || nb->valuedouble != ob->valuedouble ||
            strcmp(nh->valuestring, oh->valuestring) != 0)
            break; /* not the same bytes as listed: owned() decides */
        char *path = hs_path_join(o->dir, name), *mine = hs_path_join(o->stage, name);
        struct stat sb;
        *same = path && mine && lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) &&
                !is_input(&o->inputs, &sb) && (double)sb.st_size == ob->valuedouble &&
                files_equal(mine, path);
        free(path);
        free(mine);
        break;
    }
    return *same || owned(oi, o->dir, name, &o->inputs);
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

int hs_out_owns(const char *dir, const char *name)
{
    old_index oi;
    read_old_index(dir, &oi);
    int ok = owned(&oi, dir, name, NULL);
    cJSON_Delete(oi.idx);
    return ok;
}

/* Makes DIR (if missing) and the working folder; o->dir, cmd, notes set. */
static hs_status stage_begin(hs_outdir *o, hs_error *err)
{
    const char *dir = o->dir;
    if (dir[0] == '\0') return hs_fail(err, HS_ERR_INPUT, "--out is empty");
    struct stat sb;
    if (stat(dir, &sb) != 0) {
        hs_status s = hs_mkdir(dir, err);
        if (s != HS_OK) return s;
        o->created = 1;
    } else if (!S_ISDIR(sb.st_mode)) {
        return hs_fail(err, HS_ERR_INPUT, "%s exists and is not a folder", dir);
    }
    /* another command's folder: its files are not this command's to replace */
    char *other = o->created ? NULL : other_command(dir, o->cmd);
    if (other) {
        hs_status s = hs_fail(err, HS_ERR_INPUT, "%s holds the output of `headscope %s` (its "
                              "index.json); choose another --out, or move that folder away", dir,
                              other);
        free(other);
        return s;
    }
    /* a working folder a killed run left (SIGKILL, a crash) is removed first */
    DIR *d = opendir(dir);
    for (struct dirent *de; d && (de = readdir(d)) != NULL;)
        if (remove_stale_stage(dir, de->d_name))
            hs_note(&o->notes, HS_NOTE_CMD, "note: removed %s/%s, the working folder of an "
                    "earlier run that was killed before it finished", dir, de->d_name);
    if (d) closedir(d);
    o->stage_name = hs_strfmt(".headscope.tmp.%ld", (long)getpid());
    o->stage = o->stage_name ? hs_path_join(dir, o->stage_name) : NULL;
    if (!o->stage) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (mkdir(o->stage, 0777) != 0) {
        int e = errno;
        free(o->stage); /* nothing made: nothing for the discard to remove */
        o->stage = NULL;
        return hs_fail(err, HS_ERR_IO, "cannot write into folder %s: %s", dir, strerror(e));
    }
    /* files in the working folder are made durable together, by one sync
     * before the commit moves them in, not by one fsync each; the folder is
     * opened now so that the sync reports write-back errors of every file
     * (if it cannot be opened, each file keeps its own fsync) */
    o->stage_fd = open(o->stage, O_RDONLY);
    if (o->stage_fd >= 0) hs_atomic_defer_sync(1);
    return HS_OK;
}

hs_status hs_outdir_open(hs_outdir *o, const char *cmd, const char *dir, const hs_figopts *fo,
                         const char *const *inputs, hs_pool *pool, const hs_notes *notes,
                         hs_error *err)
{
    memset(o, 0, sizeof *o);
    o->stage_fd = -1;
    o->cmd = cmd;
    o->dir = dir;
    o->fo = fo;
    o->pool = pool;
    if (notes) o->notes = *notes;
    for (int i = 0; inputs && inputs[i]; i++) add_input(&o->inputs, inputs[i]);
    hs_status s = stage_begin(o, err);
    if (s == HS_OK) {
        o->files = cJSON_CreateArray();
        if (fo->html) o->page = cJSON_CreateObject();
        if (!o->files || (fo->html && !o->page)) s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    if (s != HS_OK) hs_outdir_close(o);
    return s;
}

void out_stage_discard(hs_outdir *o)
{
    hs_atomic_defer_sync(0);
    if (o->stage_fd >= 0) close(o->stage_fd);
    o->stage_fd = -1;
    if (o->stage) {
        DIR *d = opendir(o->stage); /* everything in it is this run's */
        for (struct dirent *de; d && (de = readdir(d)) != NULL;) {
            if (!plain_name(de->d_name)) continue;
            char *f = hs_path_join(o->stage, de->d_name);
            if (f) unlink(f);
            free(f);
        }
        if (d) closedir(d);
        rmdir(o->stage);
    }
    if (o->created && o->dir) rmdir(o->dir); /* only if still empty */
    o->created = 0;
    free(o->stage);
    free(o->stage_name);
    o->stage = o->stage_name = NULL;
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

/* 1 when index entry e records that another command than cmd wrote its
 * file ("by": `view`'s page in a run's folder): a run of cmd never removes
 * it (output.h's policy). */
static int by_other(const cJSON *e, const char *cmd)
{
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(e, "by");
    return cJSON_IsString(by) && strcmp(by->valuestring, cmd) != 0;
}

cJSON *out_others_kept(const hs_outdir *o, const cJSON *files)
{
    old_index oi;
    read_old_index(o->dir, &oi);
    cJSON *kept = cJSON_CreateArray();
    const cJSON *e, *old = oi.headscope ? cJSON_GetObjectItemCaseSensitive(oi.idx, "files") : NULL;
    cJSON_ArrayForEach(e, old)
    {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(e, "file");
        if (!kept || !by_other(e, o->cmd) || !cJSON_IsString(f) || is_new(files, f->valuestring) ||
            !owned(&oi, o->dir, f->valuestring, &o->inputs))
            continue;
        cJSON *d = cJSON_Duplicate(e, 1);
        if (!d || !cJSON_AddItemToArray(kept, d)) {
            cJSON_Delete(d);
            cJSON_Delete(kept);
            kept = NULL;
        }
    }
    cJSON_Delete(oi.idx);
    return kept;
}

/* Moves stage/name over dir/name. */
static hs_status move_in(const hs_outdir *o, const char *name, hs_error *err)
{
    char *from = hs_path_join(o->stage, name), *to = hs_path_join(o->dir, name);
    hs_status s = HS_OK;
    if (!from || !to) s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    else if (rename(from, to) != 0)
        s = hs_fail(err, HS_ERR_IO, "cannot move %s to %s: %s", from, to, strerror(errno));
    free(from);
    free(to);
    return s;
}

static void view_command(hs_buf *b, const char *dir, const cJSON *e);

/* The old index's entry of index.html when it is view's page of more folders
 * than dir alone (its "folders" other than ["."]): a run of another command
 * writing its own page there would replace it silently, which view itself
 * refuses without --force (hs_view_run); NULL otherwise. */
static const cJSON *view_page_of_more(const old_index *oi, const hs_outdir *o)
{
    const cJSON *e, *old = oi->headscope ? cJSON_GetObjectItemCaseSensitive(oi->idx, "files") : NULL;
    cJSON_ArrayForEach(e, old)
    {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(e, "file");
        if (!cJSON_IsString(f) || strcmp(f->valuestring, "index.html") != 0) continue;
        const cJSON *fs = cJSON_GetObjectItemCaseSensitive(e, "folders");
        const int alone = cJSON_IsArray(fs) && cJSON_GetArraySize(fs) == 1 &&
                          cJSON_IsString(fs->child) && strcmp(fs->child->valuestring, ".") == 0;
        return by_other(e, o->cmd) && cJSON_IsArray(fs) && !alone ? e : NULL;
    }
    return NULL;
}

/* Step 1 of the commit: every name this run writes must be free, or a file
 * an earlier run wrote and nobody changed since; otherwise nothing is touched.
 * same[i] (one per entry of o->files, zeroed) is set for an owned file that
 * already holds what this run wrote under its name (owned_or_same). */
static hs_status check_names(const hs_outdir *o, const old_index *oi, unsigned char *same,
                             hs_error *err)
{
    int n_conflict = 0, i = -1;
    hs_buf conflict = {0};
    const cJSON *e;
    cJSON_ArrayForEach(e, o->files)
    {
        i++;
        const char *name = cJSON_GetObjectItemCaseSensitive(e, "file")->valuestring;
        char *path = hs_path_join(o->dir, name);
        struct stat sb;
        if (path && lstat(path, &sb) == 0) {
            int ours, eq = 0;
            if (strcmp(name, "index.json") == 0) {
                char *mine = hs_path_join(o->stage, name);
                ours = oi->headscope;
                eq = ours && mine && S_ISREG(sb.st_mode) && files_equal(mine, path);
                free(mine);
            } else {
                ours = owned_or_same(oi, o, name, e, &eq);
            }
            same[i] = (unsigned char)(ours && eq);
            const cJSON *more = strcmp(name, "index.html") == 0 ? view_page_of_more(oi, o) : NULL;
            if (more && n_conflict++ == 0) {
                hs_buf cmd = {0};
                view_command(&cmd, o->dir, more);
                hs_buf_printf(&conflict, "%s is the page of several folders (%s); this run's own "
                              "page would replace it", path, cmd.s ? cmd.s : "headscope view");
                hs_buf_free(&cmd);
            } else if (!more && !ours && n_conflict++ == 0) {
                if (S_ISREG(sb.st_mode) && is_input(&o->inputs, &sb))
                    hs_buf_printf(&conflict, "%s is an input of this command", path);
                else if (strcmp(name, "index.json") == 0)
                    hs_buf_printf(&conflict, "%s is not an index headscope wrote", path);
                else
                    hs_buf_printf(&conflict, "%s exists and headscope did not write it (or it "
                                             "changed since: %s/index.json has no entry of its "
                                             "size and hash)", path, o->dir);
            }
        }
        free(path);
    }
    hs_status s = HS_OK;
    if (n_conflict) {
        if (n_conflict > 1) hs_buf_printf(&conflict, " (and %d more)", n_conflict - 1);
        s = hs_fail(err, HS_ERR_INPUT, "%s; nothing was changed: move %s away or choose another "
                    "--out", conflict.s ? conflict.s : "?", n_conflict > 1 ? "them" : "it");
    }
    hs_buf_free(&conflict);
    return s;
}

/* Step 4: removes what the earlier run wrote that this one does not (not
 * what another command wrote there: by_other); their
 * names (the first 8) into removed; returns how many. */
static long remove_old(const hs_outdir *o, const old_index *oi, hs_buf *removed)
{
    long n_removed = 0;
    const cJSON *old = oi->headscope ? cJSON_GetObjectItemCaseSensitive(oi->idx, "files") : NULL;
    const cJSON *e;
    cJSON_ArrayForEach(e, old)
    {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(e, "file");
        if (!cJSON_IsString(f) || is_new(o->files, f->valuestring) || by_other(e, o->cmd) ||
            strcmp(f->valuestring, "index.json") == 0 || !owned(oi, o->dir, f->valuestring, &o->inputs))
            continue;
        char *path = hs_path_join(o->dir, f->valuestring);
        if (path && unlink(path) == 0) {
            if (n_removed < 8) hs_buf_printf(removed, "%s%s", n_removed ? ", " : "", f->valuestring);
            n_removed++;
        }
        free(path);
    }
    return n_removed;
}

/* The old index's entry of name when it is another command's file the new
 * index lists (out_others_kept); NULL otherwise. */
static const cJSON *other_listed(const old_index *oi, const hs_outdir *o, const char *name)
{
    const cJSON *e, *old = oi->headscope ? cJSON_GetObjectItemCaseSensitive(oi->idx, "files") : NULL;
    cJSON_ArrayForEach(e, old)
    {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(e, "file");
        if (cJSON_IsString(f) && strcmp(f->valuestring, name) == 0)
            return by_other(e, o->cmd) && owned(oi, o->dir, name, &o->inputs) ? e : NULL;
    }
    return NULL;
}

/* The command that rewrites view's page entry e of dir into b: "headscope
 * view F..." with the page's folders (its "folders", each relative to dir)
 * as seen from where dir was given; "headscope view DIR" when it has none. */
static void view_command(hs_buf *b, const char *dir, const cJSON *e)
{
    const cJSON *fs = e ? cJSON_GetObjectItemCaseSensitive(e, "folders") : NULL, *f;
    hs_buf_printf(b, "headscope view");
    if (!cJSON_IsArray(fs) || cJSON_GetArraySize(fs) == 0) {
        hs_buf_printf(b, " %s", dir);
        return;
    }
    const char *slash = strrchr(dir, '/');
    cJSON_ArrayForEach(f, fs)
    {
        if (!cJSON_IsString(f)) continue;
        const char *r = f->valuestring;
        if (strcmp(r, ".") == 0) hs_buf_printf(b, " %s", dir);
        else if (strncmp(r, "../", 3) == 0 && !slash) hs_buf_printf(b, " %s", r + 3);
        else if (strncmp(r, "../", 3) == 0) hs_buf_printf(b, " %.*s/%s", (int)(slash - dir), dir, r + 3);
        else hs_buf_printf(b, " %s/%s", dir, r);
    }
}

/* Removes stage/name: a new file identical to the one in DIR, which stays. */
static void drop_staged(const hs_outdir *o, const char *name)
{
    char *p = hs_path_join(o->stage, name);
    if (p) unlink(p);
    free(p);
}

hs_status out_stage_commit(hs_outdir *o, hs_error *err)
{
    old_index oi;
    read_old_index(o->dir, &oi);
    int n = cJSON_GetArraySize(o->files), i, same_index = 0;
    unsigned char *same = calloc((size_t)(n > 0 ? n : 1), 1);
    hs_status s = same ? check_names(o, &oi, same, err) : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    /* 2. a new file identical to the one DIR holds under its name is not
     *    moved in: the one in DIR stays, and the new one is removed before
     *    the sync, so its bytes never reach the disk (replacing a file frees
     *    its blocks: a discard per file on a file system mounted with
     *    `discard`, 0.1-8 ms each on this VM, the most variable part of a
     *    rerun of `inspect`) */
    const cJSON *e;
    int n_moved = 0;
    i = -1;
    cJSON_ArrayForEach(e, o->files)
    {
        i++;
        const char *name = cJSON_GetObjectItemCaseSensitive(e, "file")->valuestring;
        if (s != HS_OK) continue;
        if (!same[i]) {
            n_moved++;
            continue;
        }
        drop_staged(o, name);
        if (strcmp(name, "index.json") == 0) same_index = 1;
    }
    /* 3. everything written is on disk (hs_atomic_defer_sync), then the new
     *    files move in (index.json last); when none moves in (a rerun that
     *    wrote the same bytes) DIR does not change: no sync (3.3 ms of a
     *    rerun of `inspect`, a journal commit) */
    if (s == HS_OK && o->stage_fd >= 0 && n_moved > 0) s = hs_sync_fs(o->stage_fd, o->stage, err);
    if (s == HS_OK) hs_atomic_defer_sync(0);
    i = -1;
    cJSON_ArrayForEach(e, o->files)
    {
        i++;
        const char *name = cJSON_GetObjectItemCaseSensitive(e, "file")->valuestring;
        if (s == HS_OK && strcmp(name, "index.json") != 0 && !same[i]) s = move_in(o, name, err);
    }
    free(same);
    hs_buf removed = {0};
    long n_removed = s == HS_OK ? remove_old(o, &oi, &removed) : 0;
    if (s == HS_OK && !same_index) s = move_in(o, "index.json", err);
    if (s == HS_OK && rmdir(o->stage) != 0)
        s = hs_fail(err, HS_ERR_IO, "cannot remove the working folder %s: %s", o->stage,
                    strerror(errno));
    if (s == HS_OK) {
        o->created = 0;
        if (n_removed > 0) /* a file replaced by one of the same name is no news */
            hs_note(&o->notes, HS_NOTE_CMD, "note: removed %ld file%s an earlier run wrote in %s "
                    "(unchanged since, per its index.json) that this run does not write: %s%s",
                    n_removed, n_removed == 1 ? "" : "s", o->dir, removed.s ? removed.s : "",
                    n_removed > 8 ? ", ..." : "");
        /* 5. say what else the folder holds */
        int kept = 0, pages = 0;
        const cJSON *page = NULL;
        DIR *d = opendir(o->dir);
        for (struct dirent *de; d && (de = readdir(d)) != NULL;) {
            if (!plain_name(de->d_name) || is_new(o->files, de->d_name)) continue;
            const cJSON *pe = other_listed(&oi, o, de->d_name);
            if (pe && pages++ == 0) page = pe;
            else if (!pe) kept++;
        }
        if (d) closedir(d);
        if (kept > 0)
            hs_note(&o->notes, HS_NOTE_CMD, "note: %s already holds %d file%s headscope did "
                    "not write; they are kept", o->dir, kept, kept == 1 ? "" : "s");
        /* another command's page (view's) shows the folder as that command saw it */
        if (pages > 0) {
            hs_buf cmd = {0};
            view_command(&cmd, o->dir, page);
            hs_note(&o->notes, HS_NOTE_CMD, "note: %s keeps %d file%s another headscope "
                    "command wrote (view's page): %s the folder's earlier outputs until that "
                    "command runs again (%s)", o->dir, pages, pages == 1 ? "" : "s",
                    pages == 1 ? "it shows" : "they show", cmd.s ? cmd.s : "headscope view");
            hs_buf_free(&cmd);
        }
    }
    hs_buf_free(&removed);
    cJSON_Delete(oi.idx);
    return s;
}
