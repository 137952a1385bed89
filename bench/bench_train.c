/*
 * bench/bench_train.c -- time of one training step of the default model
 * (2 layers, d_model 64, 4 heads x 16, d_mlp 256, Winograd vocab 36, batch
 * 64 x 18) on Winograd batches: median over many steps after warm-up, split
 * into forward / cross-entropy / zero_grad / backward / AdamW, the step's
 * FLOPs counted from the shapes, achieved GFLOP/s, and the measured sgemm
 * roofline (cblas_sgemm at the step's own shapes, back to back).
 *
 * usage: bench_train [--steps N] [--warmup N] [--threads N] [--blas-threads N]
 *                    [--batch B] [--no-roofline] [--json FILE]
 * --threads N: hs_acts_set_threads (N >= 2: the backward's weight gradients
 * on a helper thread, OpenBLAS at 1 thread; default 0 = auto, as hs_train).
 * --blas-threads N: instead, no helper thread and OpenBLAS' own threading at
 * N threads (the alternative the library does not take; for comparison).
 * The roofline is measured at OpenBLAS 1 thread (the library's setting)
 * unless --blas-threads is given.
 */
#include "bench_shapes.h"

#include "tasks/tasks.h"

/* OpenBLAS extension (declared in OpenBLAS' cblas.h; repeated for others). */
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);

enum { PH_FWD, PH_CE, PH_ZERO, PH_BWD, PH_ADAM, PH_STEP, PH_N };
static const char *const PH_NAMES[PH_N] = {"forward", "cross_entropy", "zero_grad", "backward",
                                           "adamw", "step"};

static void die(const char *what, const hs_error *err)
{
    fprintf(stderr, "bench_train: %s: %s\n", what, err->msg);
    exit(1);
}

int main(int argc, char **argv)
{
    int steps = 300, warmup = 30, threads = 0, blas_threads = 0, batch = 64, roofline = 1;
    const char *json = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--blas-threads") && i + 1 < argc) blas_threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!strcmp(argv[i], "--no-roofline")) roofline = 0;
        else {
            fprintf(stderr,
                    "usage: bench_train [--steps N] [--warmup N] [--threads N] [--blas-threads N] "
                    "[--batch B] [--no-roofline] [--json FILE]\n");
            return 2;
        }
    }
    if (steps < 1 || warmup < 0 || batch < 1) {
        fprintf(stderr, "bench_train: bad --steps/--warmup/--batch\n");
        return 2;
    }

    hs_error err;
    hs_winograd *task = NULL;
    if (hs_winograd_create(HS_TASK_WINOGRAD, 0, NULL, &task, &err) != HS_OK) die("task", &err);
    hs_config cfg = hs_config_default();
    cfg.n_ctx = HS_WG_LEN;
    cfg.d_vocab = (int)task->vocab->n;
    hs_model *m = NULL;
    if (hs_model_create(&cfg, &m, &err) != HS_OK) die("model", &err);
    hs_model_init(m);
    if (hs_model_alloc_train(m, &err) != HS_OK) die("alloc", &err);
    const int B = batch, T = HS_WG_LEN;
    hs_acts *acts = NULL;
    if (hs_acts_create(&cfg, B, T, 1, &acts, &err) != HS_OK) die("acts", &err);
    if (blas_threads > 0) {
        if (hs_acts_set_threads(acts, 1, &err) != HS_OK) die("threads", &err);
        openblas_set_num_threads(blas_threads);
        threads = 1;
    } else {
        if (hs_acts_set_threads(acts, threads, &err) != HS_OK) die("threads", &err);
        threads = hs_pool_threads(acts->pool);
    }
    const int blas_n = openblas_get_num_threads();
    int *tokens = malloc((size_t)B * T * sizeof(int));
    int *targets = malloc((size_t)B * T * sizeof(int));
    double *ph[PH_N];
    for (int p = 0; p < PH_N; p++) ph[p] = malloc((size_t)steps * sizeof(double));
    if (!tokens || !targets) return 1;
    hs_task_rng rng;
    hs_task_rng_seed(&rng, 1);
    hs_adamw opt = hs_adamw_default();
    float loss = 0.0f;

    for (int s = -warmup; s < steps; s++) {
        hs_winograd_batch(task, &rng, (size_t)B, tokens, targets);
        double t[PH_N + 1];
        t[0] = bench_now();
        if (hs_forward(m, acts, tokens, B, T, NULL, &err) != HS_OK) die("forward", &err);
        t[1] = bench_now();
        loss = hs_cross_entropy(m, acts, targets, NULL);
        t[2] = bench_now();
        hs_zero_grad(m);
        t[3] = bench_now();
        hs_backward(m, acts, tokens, targets, NULL);
        t[4] = bench_now();
        if (hs_adamw_step_on(m, &opt, acts->pool, NULL, &err) != HS_OK) die("adamw", &err);
        t[5] = bench_now();
        if (s >= 0) {
            for (int p = 0; p < PH_STEP; p++) ph[p][s] = t[p + 1] - t[p];
            ph[PH_STEP][s] = t[5] - t[0];
        }
    }
    double med[PH_N];
    for (int p = 0; p < PH_N; p++) med[p] = bench_median(ph[p], steps);
    /* the step's min too: the least-disturbed run on a shared machine */
    double step_min = ph[PH_STEP][0];
    for (int s = 0; s < steps; s++)
        if (ph[PH_STEP][s] < step_min) step_min = ph[PH_STEP][s];

    double gemm_flops, attn_flops;
    bench_step_flops(&cfg, B, T, &gemm_flops, &attn_flops);
    const double flops = gemm_flops + attn_flops;

    double roof_s = 0.0, roof_gflops = 0.0;
    if (roofline) {
        bench_gemm g[32];
        int n = bench_step_gemms(&cfg, B, T, g, 32);
        bench_bufs bb;
        bench_bufs_init(&bb, bench_gemm_cap(g, n));
        double gemm_s = bench_time_step_gemms(g, n, &bb, 200);
        bench_bufs_free(&bb);
        roof_gflops = gemm_flops / gemm_s * 1e-9;
        roof_s = flops / (roof_gflops * 1e9);
    }

    printf("headscope training step: default model, batch %d x %d, threads %d (OpenBLAS %d)\n",
           B, T, threads, blas_n);
    printf("  %-14s %10s\n", "phase", "median ms");
    for (int p = 0; p < PH_N; p++) printf("  %-14s %10.3f\n", PH_NAMES[p], med[p] * 1e3);
    printf("  %-14s %10.3f\n", "step (min)", step_min * 1e3);
    printf("  FLOPs/step: %.3f GFLOP (matmul %.3f, attention %.3f)\n", flops * 1e-9,
           gemm_flops * 1e-9, attn_flops * 1e-9);
    printf("  achieved: %.1f GFLOP/s (median step), %.1f (min step)\n", flops / med[PH_STEP] * 1e-9,
           flops / step_min * 1e-9);
    if (roofline)
        printf("  sgemm roofline at the step's shapes (one core, OpenBLAS %d): %.1f GFLOP/s -> "
               "%.3f ms/step; step / roofline = %.2fx (median), %.2fx (min)\n",
               blas_n, roof_gflops, roof_s * 1e3, med[PH_STEP] / roof_s, step_min / roof_s);
    if (roofline && threads >= 2)
        printf("  two cores at that rate (the ideal split): %.3f ms/step; step / that = %.2fx "
               "(median), %.2fx (min)\n",
               roof_s * 0.5e3, med[PH_STEP] / (roof_s * 0.5), step_min / (roof_s * 0.5));
    printf("  final loss %.4f after %d steps\n", loss, warmup + steps);

    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            perror(json);
            return 1;
        }
        fprintf(f, "{\n  \"bench\": \"train_step\",\n  \"batch\": %d,\n  \"seq_len\": %d,\n", B, T);
        fprintf(f, "  \"threads\": %d,\n  \"blas_threads\": %d,\n  \"steps\": %d,\n  \"warmup\": %d,\n",
                threads, blas_n, steps, warmup);
        for (int p = 0; p < PH_N; p++) fprintf(f, "  \"%s_ms\": %.4f,\n", PH_NAMES[p], med[p] * 1e3);
        fprintf(f, "  \"step_min_ms\": %.4f,\n", step_min * 1e3);
        fprintf(f, "  \"gflop_per_step\": %.5f,\n  \"gemm_gflop\": %.5f,\n  \"attn_gflop\": %.5f,\n",
                flops * 1e-9, gemm_flops * 1e-9, attn_flops * 1e-9);
        fprintf(f, "  \"achieved_gflops\": %.2f", flops / med[PH_STEP] * 1e-9);
        if (roofline)
            fprintf(f, ",\n  \"sgemm_roofline_gflops\": %.2f,\n  \"roofline_ms\": %.4f,\n"
                       "  \"step_over_roofline\": %.3f,\n  \"step_min_over_roofline\": %.3f",
                    roof_gflops, roof_s * 1e3, med[PH_STEP] / roof_s, step_min / roof_s);
        fprintf(f, ",\n  \"final_loss\": %.5f\n}\n", loss);
        if (fclose(f) != 0) {
            perror(json);
            return 1;
        }
    }
    for (int p = 0; p < PH_N; p++) free(ph[p]);
    free(tokens);
    free(targets);
    hs_acts_destroy(acts);
    hs_model_destroy(m);
    hs_winograd_destroy(task);
    return 0;
}
