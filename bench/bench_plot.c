/*
 * bench/bench_plot.c -- a line plot of bench numbers through headscope's viz
 * (hs_viz_lines_figure): bench/scale.py draws ms/step against FLOPs per step
 * for headscope and the PyTorch peer with it, log-log.
 *
 * usage: bench_plot IN.tsv OUT_PREFIX [--title S] [--xlabel S] [--ylabel S]
 *                   [--log-x] [--log-y] [--markers-only]
 * IN.tsv: a header line "x<TAB>label 1<TAB>label 2..." (the series' legend
 * entries), then one line per point: x (strictly increasing) and a value
 * per series ("nan" = no point). Writes OUT_PREFIX.png (300 dpi),
 * OUT_PREFIX.svg and OUT_PREFIX.json (the numbers, hs_viz_lines_json).
 */
#include "bench_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "viz/viz.h"

#define MAX_SERIES 8

static int fail(const char *what, const hs_error *err)
{
    fprintf(stderr, "bench_plot: %s: %s\n", what, err->msg);
    return 1;
}

int main(int argc, char **argv)
{
    const char *title = NULL, *xlabel = NULL, *ylabel = NULL;
    int log_x = 0, log_y = 0, markers_only = 0, npos = 0;
    const char *pos[2] = {NULL, NULL};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--title") && i + 1 < argc) title = argv[++i];
        else if (!strcmp(argv[i], "--xlabel") && i + 1 < argc) xlabel = argv[++i];
        else if (!strcmp(argv[i], "--ylabel") && i + 1 < argc) ylabel = argv[++i];
        else if (!strcmp(argv[i], "--log-x")) log_x = 1;
        else if (!strcmp(argv[i], "--log-y")) log_y = 1;
        else if (!strcmp(argv[i], "--markers-only")) markers_only = 1;
        else if (argv[i][0] != '-' && npos < 2) pos[npos++] = argv[i];
        else npos = 3;
    }
    if (npos != 2) {
        fprintf(stderr, "usage: bench_plot IN.tsv OUT_PREFIX [--title S] [--xlabel S] [--ylabel S] "
                        "[--log-x] [--log-y] [--markers-only]\n");
        return 2;
    }
    FILE *in = fopen(pos[0], "r");
    if (!in) {
        fprintf(stderr, "bench_plot: %s: %s\n", pos[0], strerror(errno));
        return 1;
    }
    static char line[4096], names[4096];
    static char *labels[MAX_SERIES];
    static float x[HS_VIZ_MAX_POINTS], y[MAX_SERIES][HS_VIZ_MAX_POINTS];
    size_t S = 0, N = 0;
    if (!fgets(names, sizeof names, in)) {
        fprintf(stderr, "bench_plot: %s is empty\n", pos[0]);
        return 1;
    }
    names[strcspn(names, "\r\n")] = '\0';
    char *save = NULL;
    strtok_r(names, "\t", &save); /* the x column's name */
    for (char *t; S < MAX_SERIES && (t = strtok_r(NULL, "\t", &save));) labels[S++] = t;
    while (fgets(line, sizeof line, in)) {
        if (N == HS_VIZ_MAX_POINTS) {
            fprintf(stderr, "bench_plot: more than %d points\n", HS_VIZ_MAX_POINTS);
            return 1;
        }
        char *p = line, *end = NULL;
        x[N] = strtof(p, &end);
        for (size_t k = 0; k < S && end != p; k++) y[k][N] = strtof(p = end, &end);
        if (end == p) {
            fprintf(stderr, "bench_plot: %s: line %zu is not %zu numbers\n", pos[0], N + 2, S + 1);
            return 1;
        }
        N++;
    }
    fclose(in);
    if (S == 0 || N == 0) {
        fprintf(stderr, "bench_plot: %s has no series or no points\n", pos[0]);
        return 1;
    }
    /* hs_viz_panel.y is [n_series, N]: the rows of y, packed */
    static float yy[MAX_SERIES * HS_VIZ_MAX_POINTS];
    for (size_t k = 0; k < S; k++) memcpy(yy + k * N, y[k], N * sizeof(float));
    hs_viz_panel P = {yy, S, (const char *const *)labels, NULL, ylabel, 0.0, 0.0, log_y};
    hs_viz_options o;
    hs_viz_options_default(&o);
    o.log_x = log_x;
    o.markers_only = markers_only;
    hs_viz_figure *f = NULL;
    cJSON *j = NULL;
    hs_error err = {0};
    char path[4096];
    if (hs_viz_lines_figure(&f, x, N, &P, 1, title, xlabel, NAN, NULL, &o, &err) != HS_OK)
        return fail("figure", &err);
    snprintf(path, sizeof path, "%s.png", pos[1]);
    if (hs_viz_figure_write_png(f, path, NULL, &err) != HS_OK) return fail(path, &err);
    snprintf(path, sizeof path, "%s.svg", pos[1]);
    if (hs_viz_figure_write_svg(f, path, &err) != HS_OK) return fail(path, &err);
    if (hs_viz_lines_json(&j, x, N, &P, 1, title, xlabel, &err) != HS_OK) return fail("json", &err);
    snprintf(path, sizeof path, "%s.json", pos[1]);
    if (hs_viz_write_json(j, path, &err) != HS_OK) return fail(path, &err);
    cJSON_Delete(j);
    hs_viz_figure_destroy(f);
    printf("bench_plot: %s.png, .svg, .json (%zu points x %zu series)\n", pos[1], N, S);
    return 0;
}
