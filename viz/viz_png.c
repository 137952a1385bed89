/*
 * viz/viz_png.c -- writing a figure as PNG: cairo draws it into an RGB buffer
 * (viz_render.c); here its rows are filtered and deflated in strips on the
 * worker pool, and libpng writes the chunks (signature, IHDR, pHYs with the
 * dpi, IDAT, IEND), atomically.
 *
 * The IDAT stream is pigz's construction: the filtered rows (filter byte +
 * RGB) are cut into strips of VZ_PNG_STRIP_BYTES whatever the thread count;
 * each strip is raw deflate primed with the 32 KiB of filtered bytes before
 * it (deflateSetDictionary, so matches reach back across the cut and the size
 * is that of one stream), ended with Z_SYNC_FLUSH (the last with Z_FINISH);
 * the strips are concatenated behind a zlib header and followed by the
 * adler32 of all the bytes (adler32_combine of the strips', each computed by
 * libdeflate's vector adler32). The bytes depend
 * on the image and the settings only, never on the pool.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>
#include <png.h>
#include <zlib.h>

#include "viz/viz_internal.h"

/* Chosen with bench/bench_viz.c on the 2 x 4 grid (2656 x 1650 px, 13 MB of
 * RGB): zlib level 1, default strategy, no filter. Level 1 finds the runs of
 * one colour (cells, margins) as matches by itself, so the SUB filter only
 * cost a pass over every byte: NONE is 27 ms / 297 kB against SUB's 44 ms /
 * 312 kB (fastest of 15 interleaved runs, libpng's encoder, one thread; UP 31
 * ms / 244 kB, level 3 32 ms / 254 kB, Z_RLE 5x larger; libpng's default,
 * level 6 + all filters, ~4x slower). */
const vz_png_params VZ_PNG_DEFAULT = {1, Z_DEFAULT_STRATEGY, PNG_FILTER_NONE};

/* deflate's window: the dictionary each strip is primed with. */


/* zlib's memLevel: hash table and literal buffer sizes. 6 rather than zlib's
 * default 8: the smaller tables stay in cache, level 1 on the 2 x 4 grid
 * (300 dpi, one thread) takes 25.2 ms instead of 29.5 for the same size
 * (306 kB; 9: 44 ms, 5: 25.2, 4: 26.1, 3 runs each, bench_viz). */
#define MEM_LEVEL 6
#define WINDOW 32768u

typedef struct {
    const unsigned char *px; /* h rows, stride bytes apart */
    size_t stride;
    int xrgb;   /* 1: cairo's native-endian 0x00RRGGBB words; 0: RGB bytes */
    int little; /* this machine is little-endian */
    int none;   /* the filter is NONE for every row */
    int w, h;
    const vz_png_params *pp;
    size_t rowbytes; /* 1 + 3 w: a filtered row */
    int strip_rows, n_strips;
    int chunk_rows; /* rows filtered and fed to zlib at a time */
    /* per strip: its deflate output, length, adler32 of its filtered bytes */
    unsigned char **out;
    size_t *out_len;
    uLong *adler;
    /* per worker: a z_stream (inited: 1), filtered rows, two raw RGB rows */
    z_stream *zs;
    int *inited;
    unsigned char **buf;
    size_t buf_size;
} enc_ctx;

/* Row y as RGB bytes into rgb [3 w + 1] (the byte after the row may be
 * overwritten). */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* Pixels [0, n) of xRGB words (little-endian: bytes B G R x) as RGB bytes,
 * four a 16-byte store (12 bytes of them; the 4 after are written over by
 * the next store): n is chosen so the last store ends inside the row.
 * Returns the pixels done. */
__attribute__((target("ssse3"))) static int xrgb_rows_ssse3(const uint32_t *p, int w,
                                                              unsigned char *o)
{
    const __m128i sh = _mm_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
    int x = 0;
    for (; x + 6 <= w; x += 4, o += 12) /* 3 x + 16 <= 3 w: inside the row */
        _mm_storeu_si128((__m128i *)(void *)o,
                         _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + x)), sh));
    return x;
}
#define VZ_HAVE_SSSE3 1
#endif

static void raw_row(const enc_ctx *c, int y, unsigned char *rgb)
{
    const unsigned char *src = c->px + (size_t)y * c->stride;
    if (!c->xrgb) {
        memcpy(rgb, src, (size_t)c->w * 3);
        return;
    }
    const uint32_t *p = (const uint32_t *)(const void *)src;
    if (c->little) {
        /* xRGB word -> R | G << 8 | B << 16 (little-endian bytes R G B); four
         * pixels are three 4-byte stores */
#define RGB_OF(v) ((((v) >> 16) & 0xffu) | ((v) & 0xff00u) | (((v) & 0xffu) << 16))
        int x = 0;
#ifdef VZ_HAVE_SSSE3
        if (__builtin_cpu_supports("ssse3")) x = xrgb_rows_ssse3(p, c->w, rgb);
#endif
        unsigned char *o = rgb + 3 * (size_t)x;
        for (; x + 4 <= c->w; x += 4, o += 12) {
            uint32_t a = RGB_OF(p[x]), b = RGB_OF(p[x + 1]), d = RGB_OF(p[x + 2]),
                     e = RGB_OF(p[x + 3]);
            uint32_t w0 = a | b << 24, w1 = b >> 8 | d << 16, w2 = d >> 16 | e << 8;
            memcpy(o, &w0, 4);
            memcpy(o + 4, &w1, 4);
            memcpy(o + 8, &w2, 4);
        }
        for (; x < c->w; x++, o += 3) { /* one 4-byte store: the byte after is overwritten */
            uint32_t v = RGB_OF(p[x]);
            memcpy(o, &v, 4);
        }
#undef RGB_OF
        return;
    }
    for (int x = 0; x < c->w; x++) {
        uint32_t v = p[x];
        rgb[3 * x] = (unsigned char)(v >> 16);
        rgb[3 * x + 1] = (unsigned char)(v >> 8);
        rgb[3 * x + 2] = (unsigned char)v;
    }
}

static unsigned paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return (unsigned)(pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
}

/* Filters one row of n bytes (bpp 3) with PNG filter type t (0..4): out[0] = t,
 * out[1..n]; prev is the row above (NULL for the first row: zeros). */
static void filter_row(int t, const unsigned char *cur, const unsigned char *prev, size_t n,
                       unsigned char *out)
{
    out[0] = (unsigned char)t;
    unsigned char *o = out + 1;
    if (t == 0 || (t == 2 && !prev)) {
        memcpy(o, cur, n);
        return;
    }
    size_t k = n < 3 ? n : 3;
    switch (t) {
    case 1: /* SUB */
        memcpy(o, cur, k);
        for (size_t i = 3; i < n; i++) o[i] = (unsigned char)(cur[i] - cur[i - 3]);
        break;
    case 2: /* UP */
        for (size_t i = 0; i < n; i++) o[i] = (unsigned char)(cur[i] - prev[i]);
        break;
    case 3: /* AVG */
        for (size_t i = 0; i < n; i++) {
            unsigned a = i >= 3 ? cur[i - 3] : 0, b = prev ? prev[i] : 0;
            o[i] = (unsigned char)(cur[i] - (a + b) / 2);
        }
        break;
    default: /* PAETH */
        for (size_t i = 0; i < n; i++) {
            int a = i >= 3 ? cur[i - 3] : 0, b = prev ? prev[i] : 0,
                c = i >= 3 && prev ? prev[i - 3] : 0;
            o[i] = (unsigned char)(cur[i] - paeth(a, b, c));
        }
        break;
    }
}

/* libpng's heuristic cost of a filtered row: the sum of its bytes read as
 * signed magnitudes. */
static unsigned long row_cost(const unsigned char *o, size_t n)
{
    unsigned long cost = 0;
    for (size_t i = 0; i < n; i++) cost += o[i] < 128 ? o[i] : 256u - o[i];
    return cost;
}

/* Row y filtered into out [rowbytes] as pp->filter asks: one PNG_FILTER_*
 * bit is that filter; several, the one of least cost (ties to the lower
 * type), as libpng chooses. cur/prev: row y and y - 1 as RGB (prev NULL at
 * y = 0); tmp: rowbytes of scratch. */
static void filter_one(const enc_ctx *c, const unsigned char *cur, const unsigned char *prev,
                       unsigned char *out, unsigned char *tmp)
{
    static const int bit[5] = {PNG_FILTER_NONE, PNG_FILTER_SUB, PNG_FILTER_UP, PNG_FILTER_AVG,
                               PNG_FILTER_PAETH};
    size_t n = c->rowbytes - 1;
    int mask = c->pp->filter & PNG_ALL_FILTERS, n_on = 0;
    if (mask == 0) mask = PNG_FILTER_NONE;
    for (int t = 0; t < 5; t++) n_on += (mask & bit[t]) != 0;
    unsigned long best = ULONG_MAX;
    for (int t = 0; t < 5; t++) {
        if (!(mask & bit[t])) continue;
        if (n_on == 1) {
            filter_row(t, cur, prev, n, out);
            return;
        }
        filter_row(t, cur, prev, n, tmp);
        unsigned long k = row_cost(tmp + 1, n);
        if (k < best) {
            best = k;
            memcpy(out, tmp, c->rowbytes);
        }
    }
}

/* Filters rows y0 .. y1 - 1 into out (rowbytes each). prev: the RGB row
 * y0 - 1 (NULL at y = 0, or with filter NONE); ra, rb: two RGB rows of
 * scratch, one of which may be prev; returns the RGB row y1 - 1 (in ra or
 * rb) for the next call's prev. */
static unsigned char *filter_rows(const enc_ctx *c, int y0, int y1, const unsigned char *prev,
                                  unsigned char *ra, unsigned char *rb, unsigned char *tmp,
                                  unsigned char *out)
{
    if (c->none) {
        for (int y = y0; y < y1; y++) {
            unsigned char *o = out + (size_t)(y - y0) * c->rowbytes;
            raw_row(c, y, o + 1); /* may write the next row's filter byte: set after */
            o[0] = 0;
        }
        return NULL;
    }
    unsigned char *cur = prev == ra ? rb : ra;
    for (int y = y0; y < y1; y++) {
        raw_row(c, y, cur);
        filter_one(c, cur, prev, out + (size_t)(y - y0) * c->rowbytes, tmp);
        prev = cur;
        cur = cur == ra ? rb : ra;
    }
    return (unsigned char *)prev;
}

/* Job j: strip j's rows, filtered, after the window of filtered bytes before
 * them, deflated into c->out[j]. The rows are filtered and fed to zlib a
 * chunk of c->chunk_rows at a time through one small buffer per worker
 * (zlib copies its input into its window anyway; deflate's output does not
 * depend on how its input is cut), not as one strip-sized buffer: fresh
 * pages cost more than the filtering (~1.2 ms per MB on this VM). */
static hs_status strip_job(void *ctx, int j, int worker, hs_error *err)
{
    enc_ctx *c = ctx;
    int y0 = j * c->strip_rows, y1 = y0 + c->strip_rows < c->h ? y0 + c->strip_rows : c->h;
    int d = (int)((WINDOW + c->rowbytes - 1) / c->rowbytes); /* rows the window needs */
    if (d > y0) d = y0;
    unsigned char *buf = c->buf[worker];
    if (!buf) {
        buf = c->buf[worker] = malloc(c->buf_size);
        if (!buf) return hs_fail(err, HS_ERR_NOMEM, "out of memory for PNG rows");
    }
    size_t rw = (size_t)c->w * 3, nbuf = (size_t)c->chunk_rows * c->rowbytes;
    unsigned char *ra = buf + nbuf + 1, *rb = ra + rw + 1, *tmp = rb + rw + 1, *prev = NULL;
    if (!c->none && y0 - d > 0) {
        raw_row(c, y0 - d - 1, rb);
        prev = rb;
    }
    z_stream *zs = &c->zs[worker];
    int zr;
    if (!c->inited[worker]) {
        memset(zs, 0, sizeof *zs);
        zr = deflateInit2(zs, c->pp->level, Z_DEFLATED, -15, MEM_LEVEL, c->pp->strategy);
        if (zr != Z_OK)
            return hs_fail(err, HS_ERR_IO, "zlib: cannot start deflate (level %d, strategy %d): %s",
                           c->pp->level, c->pp->strategy, zr == Z_MEM_ERROR ? "out of memory"
                                                                           : "bad settings");
        c->inited[worker] = 1;
    } else if (deflateReset(zs) != Z_OK) {
        return hs_fail(err, HS_ERR_IO, "zlib: deflateReset failed");
    }
    /* the window: the d rows before the strip (d <= chunk_rows) */
    if (d > 0) {
        prev = filter_rows(c, y0 - d, y0, prev, ra, rb, tmp, buf);
        size_t nd = (size_t)d * c->rowbytes, dict = nd < WINDOW ? nd : WINDOW;
        if (deflateSetDictionary(zs, buf + nd - dict, (uInt)dict) != Z_OK)
            return hs_fail(err, HS_ERR_IO, "zlib: deflateSetDictionary failed");
    }
    size_t n = (size_t)(y1 - y0) * c->rowbytes, cap = deflateBound(zs, (uLong)n) + 64, len = 0;
    unsigned char *out = malloc(cap);
    if (!out) return hs_fail(err, HS_ERR_NOMEM, "out of memory for PNG data");
    c->out[j] = out;
    uLong ad = 1;
    for (int y = y0; y < y1; y += c->chunk_rows) {
        int ye = y + c->chunk_rows < y1 ? y + c->chunk_rows : y1;
        prev = filter_rows(c, y, ye, prev, ra, rb, tmp, buf);
        size_t m = (size_t)(ye - y) * c->rowbytes;
        /* libdeflate's vector adler32: the value zlib's adler32 gives, ~10x faster */
        ad = libdeflate_adler32((uint32_t)ad, buf, m);
        int flush = ye < y1 ? Z_NO_FLUSH : j == c->n_strips - 1 ? Z_FINISH : Z_SYNC_FLUSH;
        zs->next_in = buf;
        zs->avail_in = (uInt)m;
        for (;;) {
            zs->next_out = out + len;
            zs->avail_out = (uInt)(cap - len);
            zr = deflate(zs, flush);
            len = cap - zs->avail_out;
            if (zr == Z_STREAM_ERROR) return hs_fail(err, HS_ERR_IO, "zlib: deflate failed");
            if (flush == Z_FINISH ? zr == Z_STREAM_END : zs->avail_out > 0) break;
            unsigned char *o2 = realloc(out, cap * 2); /* not seen: deflateBound holds */
            if (!o2) return hs_fail(err, HS_ERR_NOMEM, "out of memory for PNG data");
            c->out[j] = out = o2;
            cap *= 2;
        }
    }
    c->out_len[j] = len;
    c->adler[j] = ad;
    return HS_OK;
}

/* Frees what enc_ctx_init allocated. */
static void enc_ctx_free(enc_ctx *c, int workers)
{
    for (int k = 0; c->out && k < c->n_strips; k++) free(c->out[k]);
    for (int k = 0; k < workers; k++) {
        if (c->inited && c->inited[k]) deflateEnd(&c->zs[k]);
        if (c->buf) free(c->buf[k]);
    }
    free(c->out);
    free(c->out_len);
    free(c->adler);
    free(c->zs);
    free(c->inited);
    free(c->buf);
}

/* Deflates the image's filtered rows strip by strip on pool: c->out[k] hold
 * the zlib stream's body. HS_ERR_NOMEM, or HS_ERR_IO when zlib refuses. */
static hs_status deflate_strips(enc_ctx *c, hs_pool *pool, hs_error *err)
{
    int workers = hs_pool_threads(pool);
    size_t rows = VZ_PNG_STRIP_BYTES / c->rowbytes;
    if (rows < 1) rows = 1;
    if (rows > (size_t)c->h) rows = (size_t)c->h;
    c->strip_rows = (int)rows;
    c->n_strips = (int)(((size_t)c->h + rows - 1) / rows);
    size_t d = (WINDOW + c->rowbytes - 1) / c->rowbytes;
    /* a chunk: the window's rows (>= 32 KiB of filtered bytes, at least one
     * row); filtered rows, two RGB rows, a row of scratch, each + 1 byte of
     * slack */
    c->chunk_rows = (int)d;
    c->buf_size = d * c->rowbytes + 1 + 2 * ((size_t)c->w * 3 + 1) + c->rowbytes + 1;
    size_t ns = (size_t)c->n_strips, nw = (size_t)workers;
    c->out = calloc(ns, sizeof *c->out);
    c->out_len = calloc(ns, sizeof *c->out_len);
    c->adler = calloc(ns, sizeof *c->adler);
    c->zs = calloc(nw, sizeof *c->zs);
    c->inited = calloc(nw, sizeof *c->inited);
    c->buf = calloc(nw, sizeof *c->buf);
    if (!c->out || !c->out_len || !c->adler || !c->zs || !c->inited || !c->buf)
        return hs_fail(err, HS_ERR_NOMEM, "out of memory for PNG strips");
    /* one strip: no hand-off (a small figure costs what it did on one thread) */
    return hs_pool_for(c->n_strips > 1 ? pool : NULL, c->n_strips, strip_job, c, err);
}

typedef struct {
    char msg[256];
} png_err_ctx;

static void on_png_error(png_structp png, png_const_charp msg)
{
    png_err_ctx *e = png_get_error_ptr(png);
    snprintf(e->msg, sizeof e->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void on_png_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg; /* the library never prints */
}

static void put_be32(unsigned char *b, uLong v)
{
    b[0] = (unsigned char)(v >> 24);
    b[1] = (unsigned char)(v >> 16);
    b[2] = (unsigned char)(v >> 8);
    b[3] = (unsigned char)v;
}

/* Writes the chunks into an open FILE*: signature, IHDR and pHYs through
 * libpng's png_write_info, then one IDAT per strip (the zlib header in the
 * first, the adler32 in the last) and IEND through png_write_chunk*. */
static hs_status write_chunks(FILE *fp, const enc_ctx *c, double dpi, hs_error *err)
{
    png_err_ctx ectx;
    ectx.msg[0] = '\0';
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &ectx, on_png_error,
                                              on_png_warning);
    if (!png) return hs_fail(err, HS_ERR_NOMEM, "libpng: cannot create a write struct");
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return hs_fail(err, HS_ERR_NOMEM, "libpng: cannot create an info struct");
    }
    /* png and info are not modified after setjmp, so they need not be volatile. */
    if (setjmp(png_jmpbuf(png))) {
        int e = errno; /* libpng's fwrite-based writer says only "Write Error" */
        png_destroy_write_struct(&png, &info);
        if (e != 0 && strcmp(ectx.msg, "Write Error") == 0)
            return hs_fail(err, HS_ERR_IO, "cannot write: %s", strerror(e));
        return hs_fail(err, HS_ERR_IO, "libpng: %s", ectx.msg[0] ? ectx.msg : "write failed");
    }
    errno = 0;
    png_init_io(png, fp);
    png_set_IHDR(png, info, (png_uint_32)c->w, (png_uint_32)c->h, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_uint_32 ppm = (png_uint_32)lround(dpi / 0.0254);
    png_set_pHYs(png, info, ppm, ppm, PNG_RESOLUTION_METER);
    png_write_info(png, info);
    /* RFC 1950 header: deflate, 32 KiB window, FLEVEL from the level, no dictionary */
    int lv = c->pp->level, flevel = lv < 2 ? 0 : lv < 6 ? 1 : lv == 6 ? 2 : 3;
    unsigned hdr = (0x78u << 8) | ((unsigned)flevel << 6);
    hdr += 31 - hdr % 31;
    unsigned char head[2] = {(unsigned char)(hdr >> 8), (unsigned char)hdr}, tail[4];
    uLong ad = c->adler[0];
    for (int k = 1; k < c->n_strips; k++)
        ad = adler32_combine(ad, c->adler[k],
                             (z_off_t)((size_t)(k == c->n_strips - 1 ? c->h - k * c->strip_rows
                                                                     : c->strip_rows) *
                                       c->rowbytes));
    put_be32(tail, ad);
    for (int k = 0; k < c->n_strips; k++) {
        int first = k == 0, last = k == c->n_strips - 1;
        png_write_chunk_start(png, (png_const_bytep) "IDAT",
                              (png_uint_32)(c->out_len[k] + (first ? 2 : 0) + (last ? 4 : 0)));
        if (first) png_write_chunk_data(png, head, 2);
        png_write_chunk_data(png, c->out[k], c->out_len[k]);
        if (last) png_write_chunk_data(png, tail, 4);
        png_write_chunk_end(png);
    }
    png_write_chunk(png, (png_const_bytep) "IEND", NULL, 0);
    png_destroy_write_struct(&png, &info);
    return HS_OK;
}

/* Writes rows to path atomically: px holds h rows stride bytes apart, each w
 * pixels of RGB bytes (xrgb = 0) or of cairo's native-endian 0x00RRGGBB words
 * (xrgb = 1: the cairo surface is encoded without a copy). */
static hs_status write_rows(const char *path, const unsigned char *px, size_t stride, int xrgb,
                            int w, int h, double dpi, const vz_png_params *pp, hs_pool *pool,
                            hs_error *err)
{
    if (w < 1 || h < 1)
        return hs_fail(err, HS_ERR_INPUT, "%s: image is empty (%d x %d)", path, w, h);
    if ((size_t)w > (SIZE_MAX / 4 - 1) / 3 || w > INT_MAX / 4)
        return hs_fail(err, HS_ERR_INPUT, "%s: image is too wide (%d px)", path, w);
    enc_ctx c;
    memset(&c, 0, sizeof c);
    c.px = px;
    c.stride = stride;
    c.xrgb = xrgb;
    c.w = w;
    c.h = h;
    c.pp = pp ? pp : &VZ_PNG_DEFAULT;
    c.rowbytes = 1 + (size_t)w * 3;
    const uint32_t one = 1;
    c.little = *(const unsigned char *)&one == 1;
    int mask = c.pp->filter & PNG_ALL_FILTERS;
    c.none = mask == 0 || mask == PNG_FILTER_NONE;
    hs_atomic_file af;
    hs_status s = deflate_strips(&c, pool, err);
    if (s == HS_OK) {
        s = hs_atomic_open(&af, path, err); /* its message names the path */
        if (s != HS_OK) {
            enc_ctx_free(&c, hs_pool_threads(pool));
            return s;
        }
        s = write_chunks(af.fp, &c, dpi, err);
        if (s != HS_OK) hs_atomic_abort(&af);
    }
    enc_ctx_free(&c, hs_pool_threads(pool));
    if (s != HS_OK) {
        if (err) {
            char m[sizeof err->msg];
            snprintf(m, sizeof m, "%s", err->msg);
            hs_fail(err, s, "%s: %s", path, m);
        }
        return s;
    }
    return hs_atomic_commit(&af, err);
}

hs_status vz_png_write_rgb(const char *path, const unsigned char *rgb, int w, int h, double dpi,
                           const vz_png_params *pp, hs_pool *pool, hs_error *err)
{
    return write_rows(path, rgb, (size_t)(w > 0 ? w : 0) * 3, 0, w, h, dpi, pp, pool, err);
}

hs_status hs_viz_figure_write_png(const hs_viz_figure *f, const char *path, hs_pool *pool,
                                  hs_error *err)
{
    if (f == NULL) return hs_fail(err, HS_ERR_INPUT, "figure is NULL");
    hs_status s = hs_check_out_path(path, err);
    if (s != HS_OK) return s;
    cairo_surface_t *sf = NULL;
    s = vz_render_image(f, &sf, err);
    if (s != HS_OK) return s;
    s = write_rows(path, cairo_image_surface_get_data(sf),
                   (size_t)cairo_image_surface_get_stride(sf), 1, f->width, f->height,
                   vz_figure_ppi(f), NULL, pool, err);
    cairo_surface_destroy(sf);
    return s;
}
