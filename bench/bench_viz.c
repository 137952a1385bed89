/*
 * bench/bench_viz.c -- time the 2 x 4 attention grid of the chapter's
 * 18-token sentence at 300 dpi to PNG (layout with HarfBuzz + rasterise with
 * cairo + encode with libpng + atomic write), median of N runs in ms, at the
 * default width (a page) and at 11.3 in (the size before widths were a
 * promise); the same figure to PDF and SVG; and PNG encoder settings (zlib
 * level, strategy, filter) on the same image: time and file size. The PNG
 * strips are deflated on a worker pool of `threads` (0 = every CPU; the
 * bytes are the same for any count).
 *
 * usage: bench_viz [runs=21] [out_dir=/tmp] [threads=0]
 */
#include "bench_util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <png.h>
#include <zlib.h>

#include "viz/viz.h"
#include "viz/viz_internal.h"

static const char *TOKS[18] = {"the", "animal", "did", "not", "cross", "the",
                               "street", "because", "it", "was", "too", "tired",
                               ",", "so", "the", "animal", "waited", "."};

static double now_ms(void) { return bench_now() * 1e3; }

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 21;
    const char *dir = argc > 2 ? argv[2] : "/tmp";
    int threads = argc > 3 ? atoi(argv[3]) : 0;
    if (runs < 1) runs = 1;
    hs_error err = {0};
    hs_pool *pool = NULL;
    if (hs_pool_create(threads, &pool, &err) != HS_OK) {
        fprintf(stderr, "bench_viz: %s\n", err.msg);
        return 1;
    }
    enum { L = 2, H = 4, T = 18 };
    static float pat[L * H * T * T];
    unsigned s = 1;
    for (int k = 0; k < L * H; k++)
        for (int i = 0; i < T; i++) {
            float sum = 0;
            for (int j = 0; j <= i; j++) {
                s = s * 1103515245u + 12345u;
                float v = (float)((s >> 16) & 1023) / 1023.0f;
                pat[(k * T + i) * T + j] = v * v * v;
                sum += v * v * v;
            }
            for (int j = 0; j <= i; j++) pat[(k * T + i) * T + j] /= sum;
        }
    char path[1024], pdf[1024], svg[1024];
    snprintf(path, sizeof path, "%s/bench_viz_grid.png", dir);
    snprintf(pdf, sizeof pdf, "%s/bench_viz_grid.pdf", dir);
    snprintf(svg, sizeof svg, "%s/bench_viz_grid.svg", dir);
    double *t = malloc((size_t)runs * sizeof *t), *tl = malloc((size_t)runs * sizeof *tl),
           *tr = malloc((size_t)runs * sizeof *tr), *tp = malloc((size_t)runs * sizeof *tp),
           *ts = malloc((size_t)runs * sizeof *ts), *tc = malloc((size_t)runs * sizeof *tc);
    if (!t || !tl || !tr || !tp || !ts || !tc) return 1;
    size_t W = 0, Hh = 0;
    struct stat st;
    static const double widths[2] = {0.0, 11.3};
    for (int wi = 0; wi < 2; wi++) {
        hs_viz_options o;
        hs_viz_options_default(&o);
        o.width_in = widths[wi];
        for (int r = 0; r < runs; r++) {
            double t0 = now_ms(), c0 = bench_cpu_now();
            hs_viz_figure *f = NULL;
            if (hs_viz_grid_figure(&f, pat, L, H, T, TOKS, "attention patterns of every head", &o,
                                   &err) != HS_OK) {
                fprintf(stderr, "bench_viz: %s\n", err.msg);
                return 1;
            }
            double t1 = now_ms(), c1 = bench_cpu_now();
            unsigned char *rgb;
            if (hs_viz_figure_rgb(f, &rgb, &W, &Hh, &err) != HS_OK) {
                fprintf(stderr, "bench_viz: %s\n", err.msg);
                return 1;
            }
            free(rgb);
            double t2 = now_ms(), c2 = bench_cpu_now();
            if (hs_viz_figure_write_png(f, path, pool, &err) != HS_OK) {
                fprintf(stderr, "bench_viz: %s\n", err.msg);
                return 1;
            }
            double t3 = now_ms(), c3 = bench_cpu_now();
            if (hs_viz_figure_write_pdf(f, pdf, &err) != HS_OK) {
                fprintf(stderr, "bench_viz: %s\n", err.msg);
                return 1;
            }
            double t4 = now_ms();
            if (hs_viz_figure_write_svg(f, svg, &err) != HS_OK) {
                fprintf(stderr, "bench_viz: %s\n", err.msg);
                return 1;
            }
            double t5 = now_ms();
            hs_viz_figure_destroy(f);
            tl[r] = t1 - t0;
            tr[r] = t2 - t1;
            t[r] = (t1 - t0) + (t3 - t2); /* layout + (raster + encode + write) */
            tc[r] = 1e3 * ((c1 - c0) + (c3 - c2)); /* the same in CPU time of every thread */
            tp[r] = t4 - t3;
            ts[r] = t5 - t4;
        }
        stat(path, &st);
        printf("2x4 grid, 18 tokens, %s, 300 dpi: %zu x %zu px, %lld bytes, %d thread%s\n",
               wi ? "11.3 in wide" : "default width (a page)", W, Hh, (long long)st.st_size,
               hs_pool_threads(pool), hs_pool_threads(pool) == 1 ? "" : "s");
        printf("median of %d runs: %.1f ms to PNG (layout %.1f ms, rasterise %.1f ms); "
               "PDF %.1f ms, SVG %.1f ms after layout\n", runs, bench_median(t, runs),
               bench_median(tl, runs), bench_median(tr, runs), bench_median(tp, runs),
               bench_median(ts, runs));
        /* CPU time: what the PNG costs on a machine shared with other work */
        printf("  to PNG in CPU time (all threads): median %.1f ms\n", bench_median(tc, runs));
    }

    /* encoder settings on the same image */
    hs_viz_figure *f = NULL;
    if (hs_viz_grid_figure(&f, pat, L, H, T, TOKS, "attention", NULL, &err) != HS_OK) return 1;
    unsigned char *rgb;
    if (hs_viz_figure_rgb(f, &rgb, &W, &Hh, &err) != HS_OK) return 1;
    struct {
        const char *name;
        vz_png_params p;
    } cfg[] = {
        {"level 6, default strategy, all filters (libpng default)",
         {6, Z_DEFAULT_STRATEGY, PNG_ALL_FILTERS}},
        {"level 1, default strategy, all filters", {1, Z_DEFAULT_STRATEGY, PNG_ALL_FILTERS}},
        {"level 1, default strategy, SUB", {1, Z_DEFAULT_STRATEGY, PNG_FILTER_SUB}},
        {"level 1, RLE, SUB", {1, Z_RLE, PNG_FILTER_SUB}},
        {"level 1, RLE, NONE", {1, Z_RLE, PNG_FILTER_NONE}},
        {"level 1, default strategy, NONE (chosen)", {1, Z_DEFAULT_STRATEGY, PNG_FILTER_NONE}},
        {"level 1, default strategy, UP", {1, Z_DEFAULT_STRATEGY, PNG_FILTER_UP}},
        {"level 1, default strategy, PAETH", {1, Z_DEFAULT_STRATEGY, PNG_FILTER_PAETH}},
        {"level 2, default strategy, NONE", {2, Z_DEFAULT_STRATEGY, PNG_FILTER_NONE}},
        {"level 3, default strategy, NONE", {3, Z_DEFAULT_STRATEGY, PNG_FILTER_NONE}},
        {"level 1, filtered, NONE", {1, Z_FILTERED, PNG_FILTER_NONE}},
        {"level 9, default strategy, all filters", {9, Z_DEFAULT_STRATEGY, PNG_ALL_FILTERS}},
    };
    int nr = runs < 5 ? runs : 5;
    for (size_t k = 0; k < sizeof cfg / sizeof cfg[0]; k++) {
        double v[64];
        for (int r = 0; r < nr; r++) {
            double t0 = now_ms();
            if (vz_png_write_rgb(path, rgb, (int)W, (int)Hh, 300, &cfg[k].p, pool, &err) != HS_OK) {
                fprintf(stderr, "bench_viz: %s\n", err.msg);
                return 1;
            }
            v[r] = now_ms() - t0;
        }
        stat(path, &st);
        printf("  encode %-58s %7.1f ms %9lld bytes\n", cfg[k].name, bench_median(v, nr),
               (long long)st.st_size);
    }
    free(rgb);
    hs_viz_figure_destroy(f);
    free(t);
    free(tl);
    free(tr);
    free(tp);
    free(ts);
    free(tc);
    hs_pool_destroy(pool);
    return 0;
}
