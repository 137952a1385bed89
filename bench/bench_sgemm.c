/*
 * bench/bench_sgemm.c -- this machine's GFLOP/s of the library's product
 * (hs_sgemm: libxsmm's kernels where they win, OpenBLAS otherwise) at the matrix
 * shapes of one training step of the default model (batch 64 x 18) or of
 * the model the shape flags give (bench_shapes.h: --d-model --layers --heads
 * --d-head --d-mlp --ctx --vocab), per shape and for the whole step's
 * products back to back: the roofline that bench_train and bench/scale.py
 * compare against, measured rather than assumed. Also the per-head Q/K/V
 * form (H products of (BT,D)@(D,dh)) against the packed one. A step too
 * large to repeat within the timers' budget (BENCH_BUDGET_FLOPS) is timed as
 * the sum over its products of count x least time of one call
 * ("step_summed": 1 in the JSON).
 *
 * usage: bench_sgemm [--threads N] [--batch B] [shape flags] [--json FILE]
 */
#include "bench_shapes.h"

void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);

int main(int argc, char **argv)
{
    int threads = 0, batch = 64;
    const char *json = NULL;
    bench_shape sh = bench_shape_default();
    for (int i = 1; i < argc; i++) {
        int c = bench_config_arg(argc, argv, &i, &sh);
        if (c < 0) return 2;
        if (c > 0) continue;
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else {
            fprintf(stderr, "usage: bench_sgemm [--threads N] [--batch B] [--d-model D] [--layers L] "
                            "[--heads H] [--d-head dh] [--d-mlp M] [--ctx T] [--vocab V] [--json FILE]\n");
            return 2;
        }
    }
    if (threads > 0) openblas_set_num_threads(threads);
    threads = openblas_get_num_threads();
    bench_shape_finish(&sh);
    const hs_config cfg = sh.cfg;
    const int B = batch, T = sh.T;
    bench_gemm g[40];
    int n = bench_step_gemms(&cfg, B, T, g, 32);
    /* the per-head form, for comparison (not part of the step) */
    const int BT = B * T, D = cfg.d_model, dh = cfg.d_head;
    g[n] = (bench_gemm){"per-head fwd (x H)", 0, 0, BT, dh, D, 0, 0.0f};
    g[n + 1] = (bench_gemm){"per-head bwd dx (x H)", 0, 1, BT, D, dh, 0, 0.0f};
    g[n + 2] = (bench_gemm){"per-head bwd dW (x H)", 1, 0, D, dh, BT, 0, 1.0f};
    const int n_all = n + 3;
    bench_bufs bb;
    bench_bufs_init(&bb, bench_gemm_cap(g, n_all));

    char name[128];
    bench_shape_name(&sh, name, sizeof name);
    printf("hs_sgemm at the step's shapes (%s, batch %d), OpenBLAS threads %d (C = op(A) op(B) "
           "+ beta C)\n", name, B, threads);
    printf("  %-22s %2s %2s %6s %6s %6s %5s %10s %9s\n", "product", "tA", "tB", "m", "n", "k",
           "calls", "us/call", "GFLOP/s");
    double gf[40];
    double us[40];
    for (int i = 0; i < n_all; i++) {
        double s = bench_time_gemm(&g[i], &bb, 100);
        us[i] = s * 1e6;
        gf[i] = 2.0 * g[i].m * g[i].n * (double)g[i].k / s * 1e-9;
        printf("  %-22s %2d %2d %6d %6d %6d %5d %10.2f %9.1f\n", g[i].what, g[i].ta, g[i].tb,
               g[i].m, g[i].n, g[i].k, g[i].count, us[i], gf[i]);
    }
    double flops = 0.0;
    for (int i = 0; i < n; i++) flops += 2.0 * g[i].m * g[i].n * (double)g[i].k * g[i].count;
    /* a large step: the per-shape times above, summed (what bench_time_step_gemms would time again) */
    const int summed = 3.0 * flops > BENCH_BUDGET_FLOPS;
    double step_s = 0.0;
    if (summed)
        for (int i = 0; i < n; i++) step_s += g[i].count * us[i] * 1e-6;
    else
        step_s = bench_time_step_gemms(g, n, &bb, 200, NULL);
    printf("  all products of a step%s: %.3f GFLOP in %.3f ms = %.1f GFLOP/s\n",
           summed ? " (sum of the per-product times)" : "", flops * 1e-9, step_s * 1e3,
           flops / step_s * 1e-9);
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            perror(json);
            return 1;
        }
        fprintf(f, "{\n  \"bench\": \"sgemm\",\n  \"threads\": %d,\n  \"batch\": %d,\n  \"config\": {", threads, B);
        bench_shape_json(f, &sh);
        fprintf(f, "},\n  \"shapes\": [\n");
        for (int i = 0; i < n_all; i++)
            fprintf(f,
                    "    {\"what\": \"%s\", \"ta\": %d, \"tb\": %d, \"m\": %d, \"n\": %d, \"k\": %d, "
                    "\"calls\": %d, \"us\": %.3f, \"gflops\": %.2f}%s\n",
                    g[i].what, g[i].ta, g[i].tb, g[i].m, g[i].n, g[i].k, g[i].count, us[i], gf[i],
                    i + 1 < n_all ? "," : "");
        fprintf(f, "  ],\n  \"step_gflop\": %.5f,\n  \"step_ms\": %.4f,\n  \"step_gflops\": %.2f,\n"
                   "  \"step_summed\": %d\n}\n",
                flops * 1e-9, step_s * 1e3, flops / step_s * 1e-9, summed);
        if (fclose(f) != 0) {
            perror(json);
            return 1;
        }
    }
    bench_bufs_free(&bb);
    return 0;
}
