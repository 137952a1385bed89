/*
 * viz/viz_png.c -- writing a figure as PNG: cairo draws it into an RGB buffer
 * (viz_render.c), libpng encodes it here with the dpi in pHYs and our own
 * filter and zlib settings, atomically.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <string.h>

#include <png.h>
#include <zlib.h>

#include "viz/viz_internal.h"

/* Chosen with bench/bench_viz.c on the 2 x 4 grid (2656 x 1650 px, 13 MB of
 * RGB): zlib level 1, default strategy, no filter. Level 1 finds the runs of
 * one colour (cells, margins) as matches by itself, so the SUB filter only
 * cost a pass over every byte: NONE is 27 ms / 297 kB against SUB's 44 ms /
 * 312 kB (fastest of 15 interleaved runs; UP 31 ms / 244 kB, level 3 32 ms /
 * 254 kB, Z_RLE 5x larger; libpng's default, level 6 + all filters, ~4x
 * slower). */
const vz_png_params VZ_PNG_DEFAULT = {1, Z_DEFAULT_STRATEGY, PNG_FILTER_NONE};

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

/* Encodes rows into an open FILE*: px holds h rows stride bytes apart, each
 * w pixels of RGB bytes (xrgb = 0) or of cairo's native-endian 0x00RRGGBB
 * words (xrgb = 1; libpng drops the filler and orders the bytes, so the
 * cairo surface is encoded without a copy). Returns HS_OK or HS_ERR_IO/NOMEM. */
static hs_status encode(FILE *fp, const unsigned char *px, size_t stride, int xrgb, int w, int h,
                        double dpi, const vz_png_params *pp, hs_error *err)
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
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_uint_32 ppm = (png_uint_32)lround(dpi / 0.0254);
    png_set_pHYs(png, info, ppm, ppm, PNG_RESOLUTION_METER);
    png_set_compression_level(png, pp->level);
    png_set_compression_strategy(png, pp->strategy);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, pp->filter);
    png_set_compression_buffer_size(png, 1u << 20);
    png_write_info(png, info);
    if (xrgb) {
        const uint32_t one = 1;
        int little = *(const unsigned char *)&one == 1;
        /* in memory: B G R X (little-endian) or X R G B (big-endian) */
        png_set_filler(png, 0, little ? PNG_FILLER_AFTER : PNG_FILLER_BEFORE);
        if (little) png_set_bgr(png);
    }
    for (int y = 0; y < h; y++) png_write_row(png, px + (size_t)y * stride);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return HS_OK;
}

/* Writes rows (as encode) to path atomically. */
static hs_status write_rows(const char *path, const unsigned char *px, size_t stride, int xrgb,
                            int w, int h, double dpi, const vz_png_params *pp, hs_error *err)
{
    if (w < 1 || h < 1)
        return hs_fail(err, HS_ERR_INPUT, "%s: image is empty (%d x %d)", path, w, h);
    hs_atomic_file af;
    hs_status s = hs_atomic_open(&af, path, err);
    if (s != HS_OK) return s;
    s = encode(af.fp, px, stride, xrgb, w, h, dpi, pp ? pp : &VZ_PNG_DEFAULT, err);
    if (s != HS_OK) {
        hs_atomic_abort(&af);
        char m[sizeof err->msg];
        if (err) {
            snprintf(m, sizeof m, "%s", err->msg);
            hs_fail(err, s, "%s: %s", path, m);
        }
        return s;
    }
    return hs_atomic_commit(&af, err);
}

hs_status vz_png_write_rgb(const char *path, const unsigned char *rgb, int w, int h, double dpi,
                           const vz_png_params *pp, hs_error *err)
{
    return write_rows(path, rgb, (size_t)(w > 0 ? w : 0) * 3, 0, w, h, dpi, pp, err);
}

hs_status hs_viz_figure_write_png(const hs_viz_figure *f, const char *path, hs_error *err)
{
    if (f == NULL) return hs_fail(err, HS_ERR_INPUT, "figure is NULL");
    hs_status s = hs_check_out_path(path, err);
    if (s != HS_OK) return s;
    cairo_surface_t *sf = NULL;
    s = vz_render_image(f, &sf, err);
    if (s != HS_OK) return s;
    s = write_rows(path, cairo_image_surface_get_data(sf),
                   (size_t)cairo_image_surface_get_stride(sf), 1, f->width, f->height, f->dpi, NULL,
                   err);
    cairo_surface_destroy(sf);
    return s;
}
