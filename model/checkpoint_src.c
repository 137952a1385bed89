/*
 * model/checkpoint_src.c -- a checkpoint opened for reading (the seam:
 * checkpoint_internal.h, "Reading a checkpoint's headers, then its values
 * into place"): one .safetensors file, a Hugging Face folder (model.safetensors
 * or a sharded model.safetensors.index.json and its shards) or a buffer;
 * every shard's header indexed without reading a value; then each tensor's
 * values read in bounded chunks (pread) into the caller's memory, converted
 * to float32 (F16, BF16) and checked finite on the way.
 *
 * The weights are never held twice: pread lands them where the parameter
 * table wants them (the page cache keeps the file, which the process's
 * resident set does not count), and a conversion goes through a 1 MiB chunk
 * at most.
 */
#define _DEFAULT_SOURCE /* pread, madvise */
#include "model/model.h"
#include "model/checkpoint.h"
#include "model/checkpoint_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/model_internal.h"

/* ------------------------------------------------------------------------ */
/* Values                                                                    */

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* n bytes at off of shard sh into dst. */
static hs_status shard_read(const hs_st_shard *sh, uint64_t off, size_t n, void *dst,
                            hs_error *err)
{
    if (off > sh->size || n > sh->size - off)
        return hs_fail(err, HS_ERR_FORMAT, "%s: %zu bytes at offset %llu are past the end of the "
                       "file (%llu bytes); truncated file?", sh->path, n, (unsigned long long)off,
                       (unsigned long long)sh->size);
    if (sh->fd < 0) {
        memcpy(dst, sh->mem + off, n);
        return HS_OK;
    }
    unsigned char *p = dst;
    while (n > 0) {
        ssize_t r = pread(sh->fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
            return hs_fail(err, HS_ERR_IO, "cannot read %s at offset %llu: %s", sh->path,
                           (unsigned long long)off, r < 0 ? strerror(errno) : "unexpected end of file");
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return HS_OK;
}

/* IEEE half -> float, exactly (subnormals, infinities, NaN). */
static float half_to_float(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
        u = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man == 0) {
        u = sign;
    } else { /* subnormal: normalise */
        int e = -1;
        do {
            man <<= 1;
            e++;
        } while ((man & 0x400u) == 0);
        u = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The largest of the bits of |x[i]| (x & 0x7fffffff as int32) over x (n).
 * The order of non-negative floats is that of their bits, and a non-finite
 * value (exponent field all ones) has larger bits than every finite one: the
 * result is >= 0x7f800000 exactly when some x[i] is not finite. One AND and
 * one MAX a vector, four vectors in flight (AVX-512: 16 lanes, AVX2: 8, where
 * the CPU has them): memory speed, no branch or blend a value. The 548 MB of
 * GPT-2 small's file, mapped: 43-60 ms, against 85-115 ms for the
 * compare-and-blend pass (8 lanes, a finite mask and a max) it replaced (one
 * core of the shared 2-core VM, side by side). */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HS_SCAN_X86 1
__attribute__((target("avx512f"))) static int32_t absmax_bits_16(const float *x, size_t n, size_t *done)
{
    const __m512i abs = _mm512_set1_epi32(0x7fffffff);
    __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        a = _mm512_max_epi32(a, _mm512_and_si512(_mm512_loadu_si512((const void *)(x + i)), abs));
        b = _mm512_max_epi32(b, _mm512_and_si512(_mm512_loadu_si512((const void *)(x + i + 16)), abs));
        c = _mm512_max_epi32(c, _mm512_and_si512(_mm512_loadu_si512((const void *)(x + i + 32)), abs));
        d = _mm512_max_epi32(d, _mm512_and_si512(_mm512_loadu_si512((const void *)(x + i + 48)), abs));
    }
    *done = i;
    return _mm512_reduce_max_epi32(_mm512_max_epi32(_mm512_max_epi32(a, b), _mm512_max_epi32(c, d)));
}

__attribute__((target("avx2"))) static int32_t absmax_bits_8(const float *x, size_t n, size_t *done)
{
    const __m256i abs = _mm256_set1_epi32(0x7fffffff);
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a = _mm256_max_epi32(a, _mm256_and_si256(_mm256_loadu_si256((const void *)(x + i)), abs));
        b = _mm256_max_epi32(b, _mm256_and_si256(_mm256_loadu_si256((const void *)(x + i + 8)), abs));
        c = _mm256_max_epi32(c, _mm256_and_si256(_mm256_loadu_si256((const void *)(x + i + 16)), abs));
        d = _mm256_max_epi32(d, _mm256_and_si256(_mm256_loadu_si256((const void *)(x + i + 24)), abs));
    }
    *done = i;
    a = _mm256_max_epi32(_mm256_max_epi32(a, b), _mm256_max_epi32(c, d));
    int32_t l[8], m = 0;
    _mm256_storeu_si256((void *)l, a);
    for (int k = 0; k < 8; k++) m = l[k] > m ? l[k] : m;
    return m;
}
#endif

static int32_t absmax_bits(const float *x, size_t n)
{
    int32_t m = 0;
    size_t i = 0;
#ifdef HS_SCAN_X86
    if (__builtin_cpu_supports("avx512f")) m = absmax_bits_16(x, n, &i);
    else if (__builtin_cpu_supports("avx2")) m = absmax_bits_8(x, n, &i);
#endif
    for (; i < n; i++) {
        int32_t u;
        memcpy(&u, x + i, sizeof u);
        u &= 0x7fffffff;
        m = u > m ? u : m;
    }
    return m;
}

/* The index of the first non-finite value of x (n), or n; when every value
 * is finite, *max_abs gets the largest |x| (0 for n = 0), for the magnitude
 * warning (hs_ckpt_in_place_max); otherwise it is not set (the callers
 * refuse the tensor). One pass over the bits (absmax_bits), then a scalar
 * search only when a value is not finite. */
static size_t first_nonfinite(const float *x, size_t n, float *max_abs)
{
    const int32_t m = absmax_bits(x, n);
    if (m < 0x7f800000) {
        memcpy(max_abs, &m, sizeof *max_abs);
        return n;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, x + i, sizeof u);
        if ((u & 0x7f800000u) == 0x7f800000u) return i;
    }
    return n;
}

/* floats from which scan_mapped splits a tensor over the pool (GPT-2 small:
 * W_E, the attention's and the MLP's weights, 90% of its floats) */
#define HS_SCAN_PAR_MIN ((size_t)1 << 20)
#define HS_SCAN_MAX_PARTS 8

typedef struct {
    const float *x;
    size_t n;
    int parts;
    int32_t m[HS_SCAN_MAX_PARTS]; /* absmax_bits of each part */
} scan_job;

static size_t scan_part_start(const scan_job *s, int j)
{
    return j >= s->parts ? s->n : (s->n / (size_t)s->parts * (size_t)j) & ~(size_t)15;
}

static hs_status scan_part(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    (void)err;
    scan_job *s = ctx;
    const size_t a = scan_part_start(s, j), b = scan_part_start(s, j + 1);
    s->m[j] = absmax_bits(s->x + a, b - a);
    return HS_OK;
}

/* first_nonfinite of a tensor used in place from the mapped file, whose
 * pages the scan's reads map in (faults, which take only the mapping's own
 * lock; a MADV_POPULATE_READ first held the process's mmap lock for a part's
 * whole range, and the tokenizer read on the pool's lane meanwhile (tasks/
 * hs_load) waited for it at every heap growth: a one-prompt GPT-2 load 40-52
 * -> 34-36 ms wall, and the scan alone no slower, 1 or 2 workers, the file's
 * pages in large folios or small). With pool (2+ workers) and n >=
 * HS_SCAN_PAR_MIN, in one contiguous part per worker (at most
 * HS_SCAN_MAX_PARTS), each mapping and scanning its own; the largest bits of
 * the parts are those of the whole, and a non-finite value's index is
 * searched from the first part that holds one: the same result. */
static size_t scan_mapped(hs_pool *pool, const float *x, size_t n, float *max_abs)
{
    int parts = hs_pool_threads(pool);
    if (parts > HS_SCAN_MAX_PARTS) parts = HS_SCAN_MAX_PARTS;
    if (parts < 2 || n < HS_SCAN_PAR_MIN) return first_nonfinite(x, n, max_abs);
    scan_job s = {x, n, parts, {0}};
    hs_error err;
    (void)hs_pool_for(pool, parts, scan_part, &s, &err); /* cannot fail */
    int32_t m = 0;
    for (int j = 0; j < parts; j++) m = s.m[j] > m ? s.m[j] : m;
    if (m < 0x7f800000) {
        memcpy(max_abs, &m, sizeof *max_abs);
        return n;
    }
    for (int j = 0; j < parts; j++)
        if (s.m[j] >= 0x7f800000) {
            const size_t a = scan_part_start(&s, j);
            float unused;
            return a + first_nonfinite(x + a, scan_part_start(&s, j + 1) - a, &unused);
        }
    return n;
}

/* Converts n stored values (dtype, little-endian bytes in raw) to floats. */
static void convert(float *dst, const unsigned char *raw, size_t n, hs_st_dtype dtype)
{
    for (size_t k = 0; k < n; k++) {
        const unsigned char *p = raw + k * (dtype == HS_ST_F32 ? 4 : 2);
        if (dtype == HS_ST_F32) {
            uint32_t u = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
                         ((uint32_t)p[3] << 24);
            memcpy(&dst[k], &u, sizeof u);
        } else if (dtype == HS_ST_BF16) {
            uint32_t u = ((uint32_t)p[0] | ((uint32_t)p[1] << 8)) << 16;
            memcpy(&dst[k], &u, sizeof u);
        } else {
            dst[k] = half_to_float((uint16_t)(p[0] | (p[1] << 8)));
        }
    }
}

hs_status hs_ckpt_read(const hs_ckpt_src *src, int i, size_t first, size_t n, float *dst,
                       hs_error *err)
{
    HS_ASSERT(i >= 0 && i < src->x.st.n && first <= src->x.st.numel[i] &&
              n <= src->x.st.numel[i] - first);
    const hs_st_loc *l = &src->x.loc[i];
    const hs_st_shard *sh = &src->shards[l->shard];
    const int direct = l->dtype == HS_ST_F32 && host_is_little_endian();
    unsigned char raw[16384]; /* a conversion's bytes, a piece at a time */
    const size_t step = direct ? HS_CKPT_CHUNK / 4 : sizeof raw / l->elsize;
    for (size_t done = 0; done < n;) {
        const size_t k = n - done < step ? n - done : step;
        const uint64_t off = l->offset + (uint64_t)(first + done) * l->elsize;
        float *d = dst + done;
        hs_status s = shard_read(sh, off, k * l->elsize, direct ? (void *)d : (void *)raw, err);
        if (s != HS_OK) return s;
        if (!direct) convert(d, raw, k, l->dtype);
        float mx;
        const size_t bad = first_nonfinite(d, k, &mx);
        if (bad < k) {
            const float v = d[bad];
            return hs_fail(err, HS_ERR_NUMERIC, "%s: tensor '%s' has a non-finite value (%s) at "
                           "index %zu", sh->path, src->x.st.names[i],
                           v != v ? "NaN" : (v > 0 ? "+Inf" : "-Inf"), first + done + bad);
        }
        done += k;
    }
    return HS_OK;
}

hs_status hs_ckpt_in_place(const hs_ckpt_src *src, int i, hs_model *m, float **out,
                           hs_error *err)
{
    HS_ASSERT(i >= 0 && i < src->x.st.n);
    *out = NULL;
    const hs_st_loc *l = &src->x.loc[i];
    hs_st_shard *sh = &src->shards[l->shard];
    const size_t n = src->x.st.numel[i];
    /* F32 little-endian in a mapped file, 4-byte aligned in it (the mapping
     * starts on a page: the address's alignment is the offset's). The
     * format does not align data offsets: a misaligned tensor is copied
     * (hs_ckpt_read), never read as misaligned floats. */
    if (sh->map == NULL || l->dtype != HS_ST_F32 || !host_is_little_endian() || l->offset % 4 != 0 ||
        l->offset > sh->size || (uint64_t)n * 4 > sh->size - l->offset || n == 0)
        return HS_OK;
    const float *p = (const float *)(const void *)(sh->map + l->offset);
    float mx;
    const size_t bad = scan_mapped(src->pool, p, n, &mx);
    if (bad < n) {
        const float v = p[bad];
        return hs_fail(err, HS_ERR_NUMERIC, "%s: tensor '%s' has a non-finite value (%s) at "
                       "index %zu", sh->path, src->x.st.names[i],
                       v != v ? "NaN" : (v > 0 ? "+Inf" : "-Inf"), bad);
    }
    hs_status s = hs_model_adopt_map(m, sh->map, (size_t)sh->size, err);
    if (s != HS_OK) return s;
    sh->given = 1;
    if (mx > sh->in_place_max) sh->in_place_max = mx;
    *out = (float *)(void *)(sh->map + l->offset);
    return HS_OK;
}

float hs_ckpt_in_place_max(const hs_ckpt_src *src, const void *p, size_t bytes)
{
    const uintptr_t b = (uintptr_t)p;
    for (int k = 0; src && k < src->n_shards; k++) {
        const hs_st_shard *sh = &src->shards[k];
        const uintptr_t lo = (uintptr_t)sh->map;
        if (sh->map && sh->given && b >= lo && b - lo <= sh->size && bytes <= sh->size - (b - lo))
            return sh->in_place_max;
    }
    return -1.0f;
}

hs_status hs_ckpt_read_buf(const hs_ckpt_src *src, int i, size_t first, size_t n, void *dst,
                           hs_error *err)
{
    HS_ASSERT(i >= 0 && i < src->x.bufs.n);
    const hs_st_loc *l = &src->x.buf_loc[i];
    return shard_read(&src->shards[l->shard], l->offset + first, n, dst, err);
}

/* 1 when the stored element at p (dtype, elsize bytes) is not zero. */
static int nonzero(const unsigned char *p, hs_st_dtype dtype, size_t elsize)
{
    if (dtype == HS_ST_F32) return ((p[0] | p[1] | p[2]) | (p[3] & 0x7f)) != 0; /* -0 is 0 */
    if (dtype == HS_ST_F16 || dtype == HS_ST_BF16) return (p[0] | (p[1] & 0x7f)) != 0;
    for (size_t b = 0; b < elsize; b++)
        if (p[b]) return 1;
    return 0;
}

/* The index of the first of the cnt stored elements at p (dtype, elsize
 * bytes each) whose nonzero() is not want, or cnt: one vector pass over the
 * bits for F32, F16 and BF16 (little-endian host), then a search only when
 * one is. */
HS_CLONES
static size_t first_mismatch(const unsigned char *p, size_t cnt, hs_st_dtype dtype, size_t elsize, int want)
{
    uint32_t miss = 0;
    if (dtype == HS_ST_F32 && host_is_little_endian()) {
        /* eight at a time: want 0, the OR of the values' bits; want 1, the OR
         * of (bits == 0) */
        hs_v8i acc = {0};
        const hs_v8i abs = {0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff,
                            0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff};
        size_t k = 0;
        for (; k + 8 <= cnt; k += 8) {
            hs_v8i v;
            memcpy(&v, p + 4 * k, sizeof v);
            v &= abs;
            acc |= want ? (hs_v8i)(v == 0) : v;
        }
        for (int j = 0; j < 8; j++) miss |= acc[j] != 0;
        for (; k < cnt; k++) {
            uint32_t u;
            memcpy(&u, p + 4 * k, 4);
            miss |= (uint32_t)(((u & 0x7fffffffu) != 0) != want);
        }
    } else if ((dtype == HS_ST_F16 || dtype == HS_ST_BF16) && host_is_little_endian()) {
        for (size_t k = 0; k < cnt; k++) {
            uint16_t u;
            memcpy(&u, p + 2 * k, 2);
            miss |= (uint32_t)(((u & 0x7fffu) != 0) != want);
        }
    } else {
        miss = 1;
    }
    if (!miss) return cnt;
    for (size_t k = 0; k < cnt; k++)
        if (nonzero(p + k * elsize, dtype, elsize) != want) return k;
    return cnt;
}

hs_status hs_ckpt_check_causal_mask(const hs_ckpt_src *src, int i, int lead, hs_error *err)
{
    return hs_ckpt_check_mask(src, i, lead, 0, err);
}

hs_status hs_ckpt_check_mask(const hs_ckpt_src *src, int i, int lead, int window, hs_error *err)
{
    HS_ASSERT(i >= 0 && i < src->x.bufs.n && lead >= 0 && lead <= 2);
    const hs_st_file *b = &src->x.bufs;
    const hs_st_loc *l = &src->x.buf_loc[i];
    const int64_t *sh = b->shape[i];
    int ok = b->ndim[i] == lead + 2 && sh[lead] >= 1 && sh[lead] == sh[lead + 1];
    for (int d = 0; d < lead && ok; d++) ok = sh[d] == 1;
    if (!ok) {
        char dims[96];
        size_t k = (size_t)snprintf(dims, sizeof dims, "[");
        for (int d = 0; d < b->ndim[i] && k < sizeof dims; d++)
            k += (size_t)snprintf(dims + k, sizeof dims - k, "%s%lld", d ? ", " : "", (long long)sh[d]);
        if (k < sizeof dims) snprintf(dims + k, sizeof dims - k, "]");
        return hs_fail(err, HS_ERR_FORMAT, "%s: %.64s has shape %s, not a causal mask's %s", src->fname,
                       b->names[i], dims, lead ? "[1, 1, n, n]" : "[n, n]");
    }
    const uint64_t n = (uint64_t)sh[lead], total = n * n, per = HS_CKPT_CHUNK / l->elsize;
    /* F32 (the masks Hugging Face writes): a range equal, byte for byte, to
     * n zeros or n ones (1.0f) holds what it should without a look at each
     * value; any other (a -0, another nonzero) is searched as before */
    const int pattern = l->dtype == HS_ST_F32 && host_is_little_endian();
    float *pat = pattern ? malloc(2 * (size_t)n * sizeof(float)) : NULL; /* n zeros, n ones */
    if (pattern && pat == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (uint64_t k = 0; pat && k < 2 * n; k++) pat[k] = k < n ? 0.0f : 1.0f;
    /* the mapped file's bytes when it is mapped (GPT-2 small: 12 masks of
     * 4 MiB, no copy; each part's pages let go once checked), else a chunk
     * read at a time */
    const hs_st_shard *sd = &src->shards[l->shard];
    const int mapped = sd->map != NULL && l->offset <= sd->size && total * l->elsize <= sd->size - l->offset;
    unsigned char *chunk = mapped ? NULL : malloc(HS_CKPT_CHUNK);
    if (!mapped && chunk == NULL) {
        free(pat);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    hs_status s = HS_OK;
    for (uint64_t k0 = 0; k0 < total && s == HS_OK; k0 += per) {
        const uint64_t nk = total - k0 < per ? total - k0 : per;
        const unsigned char *part = mapped ? sd->map + l->offset + k0 * l->elsize : chunk;
        if (!mapped) s = hs_ckpt_read_buf(src, i, (size_t)(k0 * l->elsize), (size_t)(nk * l->elsize), chunk, err);
        /* row by row: zero before the window, nonzero in it, zero after it */
        for (uint64_t k = 0; k < nk && s == HS_OK;) {
            const uint64_t r = (k0 + k) / n, c = (k0 + k) % n;
            const uint64_t row_end = k + (n - c) < nk ? k + (n - c) : nk;
            const uint64_t on = window > 0 && r + 1 > (uint64_t)window ? r + 1 - (uint64_t)window : 0;
            /* [k, row_end) in three ranges of want 0, 1, 0: columns < on, on..r, > r */
            const uint64_t b1 = k + (on > c ? on - c : 0), b2 = k + (r + 1 > c ? r + 1 - c : 0);
            const uint64_t cut[4] = {k, b1 < row_end ? b1 : row_end, b2 < row_end ? b2 : row_end, row_end};
            for (int g = 0; g < 3 && s == HS_OK; g++) {
                if (cut[g + 1] <= cut[g]) continue;
                const int want = g == 1;
                if (pat && memcmp(part + cut[g] * l->elsize, pat + (want ? n : 0),
                                  (size_t)(cut[g + 1] - cut[g]) * sizeof(float)) == 0)
                    continue;
                const uint64_t bad = cut[g] + first_mismatch(part + cut[g] * l->elsize, (size_t)(cut[g + 1] - cut[g]),
                                                             l->dtype, l->elsize, want);
                if (bad == cut[g + 1]) continue;
                const uint64_t br = (k0 + bad) / n, bc = (k0 + bad) % n;
                if (window > 0)
                    s = hs_fail(err, HS_ERR_FORMAT, "%s: %.64s is not the local (window %d) mask: row "
                                "%llu, column %llu is %s where a local (window %d) mask has %d",
                                src->fname, b->names[i], window, (unsigned long long)br,
                                (unsigned long long)bc, want ? "0" : "nonzero", window, want);
                else
                    s = hs_fail(err, HS_ERR_FORMAT, "%s: %.64s is not the causal mask: row %llu, column "
                                "%llu is %s where a causal mask has %d (headscope computes causal "
                                "attention only)", src->fname, b->names[i], (unsigned long long)br,
                                (unsigned long long)bc, want ? "0" : "nonzero", want);
            }
            k = row_end;
        }
#ifdef MADV_DONTNEED
        /* the part's whole pages let go (never read again): the masks
         * (GPT-2 small: 48 MB) do not add to the resident set */
        if (mapped) {
            const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)part,
                            lo = (a + page - 1) & ~(page - 1), hi = (a + nk * l->elsize) & ~(page - 1);
            if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
        }
#endif
    }
    free(chunk);
    free(pat);
    return s;
}

typedef struct {
    const hs_ckpt_src *src;
    const hs_ckpt_mask *masks;
} masks_job_ctx;

static hs_status masks_job(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    const masks_job_ctx *c = ctx;
    const hs_ckpt_mask *k = &c->masks[j];
    return hs_ckpt_check_mask(c->src, k->i, k->lead, k->window, err);
}

hs_status hs_ckpt_check_masks(const hs_ckpt_src *src, const hs_ckpt_mask *masks, int n, hs_error *err)
{
    masks_job_ctx c = {src, masks};
    return hs_pool_for(src->pool, n, masks_job, &c, err);
}

/* ------------------------------------------------------------------------ */
/* Opening                                                                   */

void hs_ckpt_src_close(hs_ckpt_src *src)
{
    if (src == NULL) return;
    for (int i = 0; i < src->n_shards; i++) {
        if (src->shards[i].fd >= 0) close(src->shards[i].fd);
        if (src->shards[i].map && !src->shards[i].given)
            munmap(src->shards[i].map, (size_t)src->shards[i].size);
        free(src->shards[i].path);
    }
    free(src->shards);
    free(src->dir);
    free(src->order);
    hs_st_index_free(&src->x);
    memset(src, 0, sizeof *src);
}

/* A new shard for path (fd -1, mem NULL until opened); NULL on OOM. */
static hs_st_shard *add_shard(hs_ckpt_src *src, const char *path)
{
    hs_st_shard *sh = realloc(src->shards, (size_t)(src->n_shards + 1) * sizeof *sh);
    if (!sh) return NULL;
    src->shards = sh;
    sh += src->n_shards;
    memset(sh, 0, sizeof *sh);
    sh->fd = -1;
    sh->path = hs_strdup(path);
    if (!sh->path) return NULL;
    src->n_shards++;
    return sh;
}

/* The header of shard sh into *x (loc[].shard = the shard's index). */
static hs_status index_shard(const hs_st_shard *sh, int shard, hs_st_skip_fn skip,
                             hs_st_index *x, hs_error *err)
{
    unsigned char b8[8] = {0};
    uint64_t hlen = 0;
    hs_status s = sh->size >= 8 ? shard_read(sh, 0, 8, b8, err) : HS_OK;
    if (s == HS_OK) s = hs_st_header_len(b8, sh->size, sh->path, &hlen, err);
    if (s != HS_OK) return s;
    unsigned char *hdr = malloc((size_t)hlen + 1);
    if (!hdr) return hs_fail(err, HS_ERR_NOMEM, "%s: out of memory", sh->path);
    s = shard_read(sh, 8, (size_t)hlen, hdr, err);
    if (s == HS_OK)
        s = hs_st_index_parse(hdr, (size_t)hlen, sh->size - 8 - hlen, 8 + hlen, sh->path, skip,
                              NULL, x, err);
    free(hdr);
    for (int i = 0; s == HS_OK && i < x->st.n; i++) x->loc[i].shard = shard;
    for (int i = 0; s == HS_OK && i < x->bufs.n; i++) x->buf_loc[i].shard = shard;
    return s;
}

/* Opens path as the next shard and indexes it. */
static hs_status open_shard(hs_ckpt_src *src, const char *path, hs_st_skip_fn skip,
                            hs_st_index *x, hs_error *err)
{
    hs_st_shard *sh = add_shard(src, path);
    if (!sh) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    /* O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused
     * below); for a regular file the flag changes nothing. */
    sh->fd = open(path, O_RDONLY | O_NONBLOCK);
    struct stat stt;
    if (sh->fd < 0 || fstat(sh->fd, &stt) != 0)
        return hs_fail(err, HS_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    if (!S_ISREG(stt.st_mode)) return hs_fail(err, HS_ERR_IO, "%s is not a regular file", path);
    sh->size = (uint64_t)stt.st_size;
    /* the whole file mapped read-only for the tensors used in place
     * (hs_ckpt_in_place); a file that cannot be mapped is read (pread) */
    if (sh->size > 0 && sh->size <= (uint64_t)SIZE_MAX) {
        void *p = mmap(NULL, (size_t)sh->size, PROT_READ, MAP_PRIVATE, sh->fd, 0);
        if (p != MAP_FAILED) sh->map = p;
    }
    return index_shard(sh, src->n_shards - 1, skip, x, err);
}

/* Appends the tensors of part (a shard's index) to dst (st, loc, bufs,
 * buf_loc); the metadata stays dst's (the first shard's). part is emptied. */
static hs_status merge_index(hs_st_index *dst, hs_st_index *part, hs_error *err)
{
    hs_st_file *df[2] = {&dst->st, &dst->bufs}, *pf[2] = {&part->st, &part->bufs};
    hs_st_loc **dl[2] = {&dst->loc, &dst->buf_loc}, *pl[2] = {part->loc, part->buf_loc};
    for (int w = 0; w < 2; w++) {
        const size_t n = (size_t)df[w]->n + (size_t)pf[w]->n + 1;
        char **names = realloc(df[w]->names, n * sizeof *names);
        if (names) df[w]->names = names;
        int *ndim = realloc(df[w]->ndim, n * sizeof *ndim);
        if (ndim) df[w]->ndim = ndim;
        int64_t(*shape)[4] = realloc(df[w]->shape, n * sizeof *shape);
        if (shape) df[w]->shape = shape;
        size_t *numel = realloc(df[w]->numel, n * sizeof *numel);
        if (numel) df[w]->numel = numel;
        hs_st_loc *loc = realloc(*dl[w], n * sizeof *loc);
        if (loc) *dl[w] = loc;
        if (!names || !ndim || !shape || !numel || !loc)
            return hs_fail(err, HS_ERR_NOMEM, "out of memory");
        for (int i = 0; i < pf[w]->n; i++) {
            const int k = df[w]->n++;
            df[w]->names[k] = pf[w]->names[i];
            pf[w]->names[i] = NULL;
            df[w]->ndim[k] = pf[w]->ndim[i];
            memcpy(df[w]->shape[k], pf[w]->shape[i], sizeof df[w]->shape[k]);
            df[w]->numel[k] = pf[w]->numel[i];
            (*dl[w])[k] = pl[w][i];
        }
    }
    hs_st_index_free(part);
    return HS_OK;
}

/* The shard a weight_map names for tensor name, or NULL. */
static const char *map_shard(const cJSON *map, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(map, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Every shard of a sharded folder: index (a model.safetensors.index.json
 * text) names them in its weight_map; each opened, indexed and merged into
 * src->x, each tensor found where the map says. */
static hs_status open_sharded(hs_ckpt_src *src, const char *ipath, const char *text,
                              hs_st_skip_fn skip, hs_error *err)
{
    hs_status s = HS_OK;
    cJSON *root = cJSON_Parse(text);
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map"), *it;
    if (!cJSON_IsObject(map) || cJSON_GetArraySize(map) == 0) {
        cJSON_Delete(root);
        return hs_fail(err, HS_ERR_FORMAT, "%s: not a Hugging Face index (a JSON object with a "
                       "non-empty \"weight_map\": tensor name -> shard file)", ipath);
    }
    cJSON_ArrayForEach(it, map) {
        const char *f = cJSON_IsString(it) ? it->valuestring : "";
        if (f[0] == '\0' || strchr(f, '/') || strcmp(f, ".") == 0 || strcmp(f, "..") == 0) {
            s = hs_fail(err, HS_ERR_FORMAT, "%s: tensor '%.64s' is mapped to '%.64s', not a file "
                        "name in the folder", ipath, it->string, cJSON_IsString(it) ? f : "?");
            break;
        }
        int seen = 0;
        for (int k = 0; k < src->n_shards && !seen; k++) {
            const char *base = strrchr(src->shards[k].path, '/');
            seen = strcmp(base ? base + 1 : src->shards[k].path, f) == 0;
        }
        if (seen) continue;
        char *path = hs_path_join(src->dir, f);
        hs_st_index part;
        memset(&part, 0, sizeof part);
        s = path ? open_shard(src, path, skip, src->n_shards ? &part : &src->x, err)
                 : hs_fail(err, HS_ERR_NOMEM, "out of memory");
        if (s == HS_OK && src->n_shards > 1) s = merge_index(&src->x, &part, err);
        hs_st_index_free(&part);
        /* each tensor of the shard is the map's for that shard */
        const hs_st_file *fs[2] = {&src->x.st, &src->x.bufs};
        const hs_st_loc *ls[2] = {src->x.loc, src->x.buf_loc};
        for (int w = 0; w < 2 && s == HS_OK; w++)
            for (int i = 0; i < fs[w]->n && s == HS_OK; i++) {
                if (ls[w][i].shard != src->n_shards - 1) continue;
                const char *want = map_shard(map, fs[w]->names[i]);
                if (want == NULL || strcmp(want, f) != 0)
                    s = hs_fail(err, HS_ERR_FORMAT, "%s: tensor '%.64s' is %s (%s)", path,
                                fs[w]->names[i], want ? "mapped to another shard by the index"
                                                      : "not in the index's weight_map", ipath);
            }
        free(path);
        if (s != HS_OK) break;
    }
    /* and every tensor of the map is in its shard */
    cJSON_ArrayForEach(it, map) {
        if (s != HS_OK) break;
        if (hs_st_find(&src->x.st, it->string) < 0 && hs_st_find(&src->x.bufs, it->string) < 0)
            s = hs_fail(err, HS_ERR_FORMAT, "%s: the index maps tensor '%.64s' to %s, which does "
                        "not hold it", ipath, it->string, it->valuestring);
    }
    cJSON_Delete(root);
    return s;
}

/* A folder: its model.safetensors, or its sharded index (transformers reads
 * model.safetensors when both are there: so does this, index_ignored). */
static hs_status open_folder(hs_ckpt_src *src, const char *dir, hs_st_skip_fn skip,
                             hs_error *err)
{
    char *ipath = hs_path_join(dir, "model.safetensors.index.json");
    char *mpath = hs_path_join(dir, "model.safetensors");
    hs_status s = HS_OK;
    struct stat stt;
    if (!ipath || !mpath) {
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    } else if (stat(mpath, &stt) == 0) {
        src->index_ignored = stat(ipath, &stt) == 0;
        s = open_shard(src, mpath, skip, &src->x, err);
    } else if (stat(ipath, &stt) == 0) {
        unsigned char *text = NULL;
        size_t n = 0;
        s = hs_read_file(ipath, &text, &n, err);
        char *z = s == HS_OK ? malloc(n + 1) : NULL;
        if (s == HS_OK && !z) s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        if (z) {
            memcpy(z, text, n);
            z[n] = '\0';
            s = open_sharded(src, ipath, z, skip, err);
        }
        free(z);
        free(text);
    } else {
        char *bin = hs_path_join(dir, "pytorch_model.bin");
        if (bin && stat(bin, &stt) == 0)
            s = hs_fail(err, HS_ERR_IO, "%s: only pytorch_model.bin, which headscope does not read (a pickle); "
                        "convert it: python3 -c \"from transformers import AutoModelForCausalLM as M; "
                        "M.from_pretrained('%s').save_pretrained('%s', safe_serialization=True)\"", dir, dir, dir);
        else
            s = hs_fail(err, HS_ERR_IO, "%s: no model.safetensors or model.safetensors.index.json "
                        "(a Hugging Face model folder holds one)", dir);
        free(bin);
    }
    free(ipath);
    free(mpath);
    return s;
}

/* src->order: the weights by (shard, offset). */
static hs_status sort_order(hs_ckpt_src *src, hs_error *err)
{
    const int n = src->x.st.n;
    src->order = malloc(((size_t)n + 1) * sizeof *src->order);
    if (!src->order) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) src->order[i] = i;
    /* insertion sort: headers list tensors nearly in offset order already */
    for (int i = 1; i < n; i++) {
        const int v = src->order[i];
        const hs_st_loc *lv = &src->x.loc[v];
        int j = i - 1;
        while (j >= 0) {
            const hs_st_loc *lj = &src->x.loc[src->order[j]];
            if (lj->shard < lv->shard || (lj->shard == lv->shard && lj->offset <= lv->offset)) break;
            src->order[j + 1] = src->order[j];
            j--;
        }
        src->order[j + 1] = v;
    }
    return HS_OK;
}

hs_status hs_ckpt_src_open(const char *path, hs_st_skip_fn skip, hs_ckpt_src *src,
                           hs_error *err)
{
    memset(src, 0, sizeof *src);
    src->fname = path;
    struct stat stt;
    if (stat(path, &stt) != 0)
        return hs_fail(err, HS_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    hs_status s;
    if (S_ISDIR(stt.st_mode)) {
        src->dir = hs_strdup(path);
        s = src->dir ? open_folder(src, path, skip, err) : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    } else {
        const char *slash = strrchr(path, '/');
        src->dir = slash ? hs_strfmt("%.*s", (int)(slash - path) + (slash == path), path)
                         : hs_strdup(".");
        s = src->dir ? open_shard(src, path, skip, &src->x, err)
                     : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    if (s == HS_OK) s = sort_order(src, err);
    if (s != HS_OK) {
        hs_ckpt_src_close(src);
        src->fname = path;
    }
    return s;
}

hs_status hs_ckpt_src_mem(const unsigned char *buf, size_t n, const char *name,
                          hs_st_skip_fn skip, hs_ckpt_src *src, hs_error *err)
{
    memset(src, 0, sizeof *src);
    src->fname = name ? name : "<buffer>";
    hs_st_shard *sh = add_shard(src, src->fname);
    hs_status s = sh ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (s == HS_OK) {
        sh->mem = buf;
        sh->size = n;
        s = index_shard(sh, 0, skip, &src->x, err);
    }
    if (s == HS_OK) s = sort_order(src, err);
    if (s != HS_OK) {
        const char *f = src->fname;
        hs_ckpt_src_close(src);
        src->fname = f;
    }
    return s;
}
