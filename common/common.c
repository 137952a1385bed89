/*
 * common/common.c -- status strings, error messages, atomic file writes,
 * float arrays.
 */
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE, MAP_ANONYMOUS */
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdalign.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

const char *hs_status_str(hs_status st)
{
    switch (st) {
    case HS_OK: return "ok";
    case HS_ERR_NOMEM: return "out of memory";
    case HS_ERR_IO: return "I/O error";
    case HS_ERR_FORMAT: return "malformed file";
    case HS_ERR_CONFIG: return "invalid config";
    case HS_ERR_INPUT: return "invalid input";
    case HS_ERR_NUMERIC: return "non-finite value";
    case HS_ERR_CALLBACK: return "aborted by callback";
    }
    return "unknown status";
}

hs_status hs_fail(hs_error *err, hs_status st, const char *fmt, ...)
{
    if (err != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        /* Messages are one line: text echoed from a file or the command line
         * (a JSON string, a field name) may carry a newline or an escape
         * sequence; show those bytes as '?' (found by fuzz_config). */
        for (char *p = err->msg; *p; p++)
            if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f) *p = '?';
        err->status = st;
    }
    return st;
}

void hs_note(const hs_notes *n, hs_note_kind kind, const char *fmt, ...)
{
    if (n == NULL || n->fn == NULL) return;
    hs_buf b = {0};
    va_list ap;
    va_start(ap, fmt);
    hs_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    n->fn(n->ctx, kind, b.oom ? "(out of memory)" : b.s ? b.s : "");
    hs_buf_free(&b);
}

hs_status hs_check_new_file(const char *opt, const char *path, int force, hs_error *err)
{
    struct stat st;
    if (!force && path && stat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode)) /* --force would not replace it either (hs_check_out_path) */
            return hs_fail(err, HS_ERR_INPUT, "%s %s exists and is not a regular file; name a file", opt,
                           path);
        return hs_fail(err, HS_ERR_INPUT, "%s %s already exists; use --force to replace it", opt, path);
    }
    return HS_OK;
}

hs_status hs_check_out_path(const char *path, hs_error *err)
{
    struct stat st;
    if (path == NULL || path[0] == '\0')
        return hs_fail(err, HS_ERR_INPUT, "output path is empty");
    if (lstat(path, &st) == 0) {
        if (S_ISLNK(st.st_mode)) {
            if (stat(path, &st) != 0)
                return hs_fail(err, HS_ERR_IO, "%s: dangling symbolic link", path);
        }
        if (!S_ISREG(st.st_mode))
            return hs_fail(err, HS_ERR_IO,
                           "%s exists and is not a regular file; refusing to replace it", path);
    } else if (errno != ENOENT) {
        return hs_fail(err, HS_ERR_IO, "%s: %s", path, strerror(errno));
    }
    /* parent folder must exist */
    const char *slash = strrchr(path, '/');
    if (slash != NULL && slash != path) {
        size_t n = (size_t)(slash - path);
        char *parent = malloc(n + 1);
        if (!parent) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
        memcpy(parent, path, n);
        parent[n] = '\0';
        int ok = stat(parent, &st) == 0 && S_ISDIR(st.st_mode);
        int e = errno;
        free(parent);
        if (!ok)
            return hs_fail(err, HS_ERR_IO, "%s: parent folder does not exist (%s)", path,
                           strerror(e ? e : ENOTDIR));
    }
    return HS_OK;
}

hs_status hs_atomic_open(hs_atomic_file *af, const char *path, hs_error *err)
{
    memset(af, 0, sizeof *af);
    hs_status s = hs_check_out_path(path, err);
    if (s != HS_OK) return s;
    size_t n = strlen(path);
    af->path = malloc(n + 1);
    af->tmp = malloc(n + 32);
    if (!af->path || !af->tmp) {
        hs_atomic_abort(af);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    memcpy(af->path, path, n + 1);
    snprintf(af->tmp, n + 32, "%s.tmp.%ld", path, (long)getpid());
    af->fp = fopen(af->tmp, "wb");
    if (!af->fp) {
        int e = errno;
        hs_atomic_abort(af);
        return hs_fail(err, HS_ERR_IO, "cannot write %s: %s", path, strerror(e));
    }
    return HS_OK;
}

void hs_atomic_abort(hs_atomic_file *af)
{
    if (af->fp) {
        fclose(af->fp);
        af->fp = NULL;
        if (af->tmp) unlink(af->tmp);
    }
    free(af->path);
    free(af->tmp);
    af->path = af->tmp = NULL;
}

static int g_defer_sync; /* hs_atomic_defer_sync */

#ifdef __linux__
int syncfs(int fd); /* glibc declares it under _GNU_SOURCE only */
#else
static int syncfs(int fd) /* POSIX: every file system */
{
    (void)fd;
    sync();
    return 0;
}
#endif

void hs_atomic_defer_sync(int on)
{
    g_defer_sync = on != 0;
}

hs_status hs_sync_fs(int fd, const char *path, hs_error *err)
{
    if (syncfs(fd) != 0) return hs_fail(err, HS_ERR_IO, "cannot sync %s to disk: %s", path, strerror(errno));
    return HS_OK;
}

hs_status hs_atomic_commit(hs_atomic_file *af, hs_error *err)
{
    int e = 0;
    if (ferror(af->fp)) e = EIO;
    if (!e && fflush(af->fp) != 0) e = errno;
    if (!e && !g_defer_sync && fsync(fileno(af->fp)) != 0) e = errno;
    int cl = fclose(af->fp);
    af->fp = NULL;
    if (!e && cl != 0) e = errno;
    if (!e && rename(af->tmp, af->path) != 0) e = errno;
    if (e) {
        unlink(af->tmp);
        hs_status s = hs_fail(err, HS_ERR_IO, "cannot write %s: %s", af->path, strerror(e));
        hs_atomic_abort(af);
        return s;
    }
    hs_atomic_abort(af); /* frees strings; fp already NULL */
    return HS_OK;
}

hs_status hs_write_file_atomic(const char *path, const void *data, size_t n, hs_error *err)
{
    hs_atomic_file af;
    hs_status s = hs_atomic_open(&af, path, err);
    if (s != HS_OK) return s;
    if (n > 0 && fwrite(data, 1, n, af.fp) != n) {
        int e = errno;
        char *p = af.path;
        af.path = NULL;
        hs_atomic_abort(&af);
        s = hs_fail(err, HS_ERR_IO, "cannot write %s: %s", p, strerror(e ? e : EIO));
        free(p);
        return s;
    }
    return hs_atomic_commit(&af, err);
}

hs_status hs_read_file(const char *path, unsigned char **data, size_t *n, hs_error *err)
{
    *data = NULL;
    *n = 0;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused
     * below); for a regular file the flag changes nothing. */
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0) return hs_fail(err, HS_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return hs_fail(err, HS_ERR_IO, "%s is not a regular file", path);
    }
    FILE *fp = fdopen(fd, "rb");
    if (!fp) {
        int e = errno;
        close(fd);
        return hs_fail(err, HS_ERR_IO, "cannot open %s: %s", path, strerror(e));
    }
    size_t size = (size_t)st.st_size;
    unsigned char *buf = malloc(size + 1);
    if (!buf) {
        fclose(fp);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory reading %s (%zu bytes)", path, size);
    }
    size_t got = fread(buf, 1, size, fp);
    int bad = ferror(fp);
    fclose(fp);
    if (got != size || bad) {
        free(buf);
        return hs_fail(err, HS_ERR_IO, "cannot read %s", path);
    }
    buf[size] = '\0';
    *data = buf;
    *n = size;
    return HS_OK;
}

hs_status hs_mkdir(const char *path, hs_error *err)
{
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return HS_OK;
        return hs_fail(err, HS_ERR_IO, "%s exists and is not a folder", path);
    }
    if (mkdir(path, 0777) != 0) {
        if (errno == ENOENT)
            return hs_fail(err, HS_ERR_IO, "cannot create folder %s: its parent folder does not "
                                           "exist (headscope creates the last folder only)", path);
        return hs_fail(err, HS_ERR_IO, "cannot create folder %s: %s", path, strerror(errno));
    }
    return HS_OK;
}

char *hs_path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    size_t k = a;
    if (a > 0 && dir[a - 1] != '/') p[k++] = '/';
    memcpy(p + k, name, b + 1);
    return p;
}

/* A 2 MiB page: the size of a transparent huge page on x86-64 and arm64. */
#define HS_HUGE_PAGE ((size_t)2 << 20)

/* Just before a block's aligned start (its first 16 bytes are always the
 * allocator's): where the memory came from, to give it back the same way. */
typedef struct {
    char *base;   /* calloc's pointer, or the mapping's start */
    size_t map;   /* the mapping's length; 0: base is calloc's */
} floats_head;
_Static_assert(sizeof(floats_head) <= 16 && alignof(max_align_t) >= 16, "a block's head fits before it");

/* Mappings given back by hs_floats_free, kept for the next hs_floats_alloc of
 * the same length: their pages are resident, so the next user's first writes
 * do not fault and the kernel clears nothing (a fresh page costs 0.1-2.6 ms
 * a MB on this VM, clearing a resident one 0.04: circuit's engines, made and
 * freed one after the other, faulted in 30 MB that way). At most FLOATS_KEPT
 * blocks and FLOATS_KEPT_BYTES bytes (the most that is resident beyond what
 * is allocated); a block that finds no room is unmapped. Process-wide,
 * behind kept_mu: the allocator's state, as malloc's own free lists are. */
#define FLOATS_KEPT 16
#define FLOATS_KEPT_BYTES ((size_t)32 << 20)
static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;
static floats_head kept[FLOATS_KEPT];
static int n_kept;
static size_t kept_bytes;

/* A kept block of length len (its start), or NULL. */
static char *kept_take(size_t len)
{
    char *a = NULL;
    pthread_mutex_lock(&kept_mu);
    for (int i = n_kept - 1; i >= 0; i--) /* the last kept first */
        if (kept[i].map == len) {
            a = kept[i].base;
            kept_bytes -= len;
            memmove(&kept[i], &kept[i + 1], (size_t)(n_kept - 1 - i) * sizeof *kept);
            n_kept--;
            break;
        }
    pthread_mutex_unlock(&kept_mu);
    return a;
}

/* Zeroes the mapping [a, a + len) (a on a page boundary): its resident
 * pages by memset (mincore), the others by MADV_DONTNEED, which costs nothing
 * for pages never faulted in and drops any that were swapped out (mincore
 * counts those as not resident, and they would read back their old floats). */
static void clear_resident(char *a, size_t len)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char vec[256];
    for (size_t at = 0; at < len; at += sizeof vec * page) {
        const size_t n = len - at < sizeof vec * page ? len - at : sizeof vec * page;
        const size_t np = (n + page - 1) / page;
        if (mincore(a + at, n, vec) != 0) { /* cannot tell: clear it all */
            memset(a + at, 0, n);
            continue;
        }
        for (size_t k = 0; k < np;) {
            const int resident = vec[k] & 1;
            size_t e = k + 1;
            while (e < np && (vec[e] & 1) == resident) e++;
            const size_t from = k * page, to = e * page < n ? e * page : n;
            if (resident || madvise(a + at + from, to - from, MADV_DONTNEED) != 0)
                memset(a + at + from, 0, to - from);
            k = e;
        }
    }
}

/* Keeps the mapping h (hs_floats_free) or unmaps it when there is no room. */
static void kept_put(floats_head h)
{
    pthread_mutex_lock(&kept_mu);
    const int keep = n_kept < FLOATS_KEPT && h.map <= FLOATS_KEPT_BYTES - kept_bytes;
    if (keep) {
        kept[n_kept++] = h;
        kept_bytes += h.map;
    }
    pthread_mutex_unlock(&kept_mu);
    if (!keep) (void)munmap(h.base, h.map);
}

/* A block of HS_HUGE_PAGE bytes or more (the head's 64 included) is an
 * anonymous mapping of its own, its head starting on a 2 MiB boundary (the
 * head and the floats share the first huge page), mapped larger by a huge
 * page and trimmed to the boundary and its length, or a kept mapping of that
 * length cleared; the rest is calloc'd 64 bytes larger (room for the
 * alignment and the head). */
float *hs_floats_alloc(size_t n)
{
    if (n == 0 || n > (SIZE_MAX - 64 - 2 * HS_HUGE_PAGE) / sizeof(float)) return NULL;
    const size_t bytes = n * sizeof(float) + 64;
    floats_head h = {NULL, 0};
#ifdef MADV_HUGEPAGE
    if (bytes >= HS_HUGE_PAGE) {
        /* a tail of half a huge page or more gets one of its own too (at most
         * 1 MiB more resident than the block holds); a shorter one 4 KiB pages */
        const size_t page = (size_t)sysconf(_SC_PAGESIZE), whole = (bytes + HS_HUGE_PAGE - 1) & ~(HS_HUGE_PAGE - 1);
        const size_t keep = bytes % HS_HUGE_PAGE >= HS_HUGE_PAGE / 2 ? whole : (bytes + page - 1) / page * page;
        char *a = kept_take(keep);
        if (a != NULL) {
            clear_resident(a, keep);
        } else {
            const size_t len = whole + HS_HUGE_PAGE; /* room for the boundary */
            char *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (raw == MAP_FAILED) return NULL;
            a = raw + (-(uintptr_t)raw & (HS_HUGE_PAGE - 1)); /* the boundary at or after raw */
            if (a > raw) (void)munmap(raw, (size_t)(a - raw));
            (void)munmap(a + keep, (size_t)(raw + len - (a + keep)));
            (void)madvise(a, keep & ~(HS_HUGE_PAGE - 1), MADV_HUGEPAGE); /* a hint */
        }
        h = (floats_head){a, keep};
    }
#endif
    if (h.base == NULL && (h.base = calloc(1, bytes)) == NULL) return NULL;
    char *p = h.base + 64 - ((uintptr_t)h.base & 63); /* 16..64 bytes on (a mapping: 64): room for the head */
    memcpy(p - sizeof h, &h, sizeof h);
    return (float *)(void *)p;
}

void hs_floats_free(float *p)
{
    if (p == NULL) return;
    floats_head h;
    memcpy(&h, (char *)p - sizeof h, sizeof h);
    if (h.map) kept_put(h);
    else free(h.base);
}

int hs_argmax(const float *x, size_t n)
{
    size_t best = 0;
    for (size_t i = 0; i < n; i++) {
        if (x[i] != x[i]) return -1; /* NaN */
        if (x[i] > x[best]) best = i;
    }
    return (int)best;
}

void hs_store_streaming_fill(float *dst, const float *src, size_t ns, float fill, size_t n)
{
#if defined(__SSE2__)
    size_t i = 0;
    for (; i < n && ((uintptr_t)(dst + i) & 15u) != 0; i++) dst[i] = i < ns ? src[i] : fill;
    for (; i + 16 <= ns; i += 16) {
        const __m128 a = _mm_loadu_ps(src + i), b = _mm_loadu_ps(src + i + 4);
        const __m128 c = _mm_loadu_ps(src + i + 8), d = _mm_loadu_ps(src + i + 12);
        _mm_stream_ps(dst + i, a);
        _mm_stream_ps(dst + i + 4, b);
        _mm_stream_ps(dst + i + 8, c);
        _mm_stream_ps(dst + i + 12, d);
    }
    if (i < ns && i + 16 <= n) { /* the block where src ends, built here */
        float t[16];
        for (size_t k = 0; k < 16; k++) t[k] = i + k < ns ? src[i + k] : fill;
        for (size_t k = 0; k < 16; k += 4) _mm_stream_ps(dst + i + k, _mm_loadu_ps(t + k));
        i += 16;
    }
    const __m128 f = _mm_set1_ps(fill);
    for (; i + 16 <= n; i += 16) {
        _mm_stream_ps(dst + i, f);
        _mm_stream_ps(dst + i + 4, f);
        _mm_stream_ps(dst + i + 8, f);
        _mm_stream_ps(dst + i + 12, f);
    }
    for (; i < n; i++) dst[i] = i < ns ? src[i] : fill;
#else
    memcpy(dst, src, ns * sizeof(float));
    for (size_t i = ns; i < n; i++) dst[i] = fill;
#endif
}

void hs_store_streaming(float *dst, const float *src, size_t n)
{
    hs_store_streaming_fill(dst, src, n, 0.0f, n); /* no fill when ns == n */
}

void hs_streaming_fence(void)
{
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

void hs_copy_streaming(float *dst, const float *src, size_t n)
{
    hs_store_streaming(dst, src, n);
    hs_streaming_fence();
}
