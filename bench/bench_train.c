/*
 * bench/bench_train.c -- time of one training step of the default model
 * (2 layers, d_model 64, 4 heads x 16, d_mlp 256, Winograd vocab 36, batch
 * 64 x 18) on Winograd batches, or of any model shape on a fixed stream of
 * random tokens (bench/scale.py's scaling table): median over many steps
 * after warm-up, split into forward / cross-entropy / zero_grad / backward /
 * AdamW (constant lr 1e-3), the step's FLOPs counted from the shapes,
 * achieved GFLOP/s, and the measured roofline (the library's product, hs_sgemm, at the
 * step's own shapes, back to back; bench_shapes.h).
 *
 * usage: bench_train [--steps N] [--warmup N] [--threads N] [--blas-threads N]
 *                    [--batch B] [--d-model D] [--layers L] [--heads H]
 *                    [--d-head dh] [--d-mlp M] [--ctx T] [--vocab V]
 *                    [--tokens FILE] [--no-roofline] [--full-acts] [--json FILE]
 * Shape flags (bench_shapes.h): the model; --ctx, --vocab or --tokens mean
 * random tokens instead of the Winograd task (T default 18, V 36): batch k
 * is rows [kB, (k+1)B) of --tokens FILE (little-endian int32 rows of T + 1
 * tokens < V, cycled; bench/scale.py writes the file bench/torch_peer.py
 * --task tokens reads), or without a file B rows drawn uniformly from
 * hs_task_rng seeded 1; inputs are a row's first T tokens, targets the next
 * token at every position.
 * --threads N: hs_acts_set_threads (N >= 2: the backward's weight gradients
 * on a helper thread, OpenBLAS at 1 thread; default 0 = auto, as hs_train).
 * --blas-threads N: instead, no helper thread and OpenBLAS' own threading at
 * N threads (the alternative the library does not take; for comparison).
 * --ladder-row R: the model and batch of `headscope ladder`'s row R (0..8,
 * hs_ladder_row_job at its default settings but --batch, default 64: the
 * chapter's; row 0 trains batch x 128 windows of one token) on random tokens
 * of --vocab (default 1024), so the ladder's step can be split row by row.
 * --full-acts: the activations' full layout (HS_ACTS_GRAD: every hook
 * point kept per layer, act' stored) instead of hs_train's (HS_ACTS_TRAIN),
 * the same numbers: the two side by side (time, peak RSS).
 * The roofline is measured at OpenBLAS 1 thread (the library's setting)
 * unless --blas-threads is given. The JSON also has the sizes of the buffers
 * the step allocates (acts_mb, acts_grad_mb, params_train_mb), which
 * bench/scale.py adds up against the measured peak RSS.
 */
#include "bench_shapes.h"

#include "tasks/tasks.h"
#include "tasks/text.h"

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

/* --tokens FILE: little-endian int32 rows of T + 1 tokens in [0, V), at least
 * B rows; *n_rows gets the count. Exits with a message on a bad file. */
static int *read_tokens(const char *path, int T, int V, int B, size_t *n_rows)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(1);
    }
    size_t cap = 1 << 16, n = 0;
    int32_t *v = malloc(cap * sizeof *v);
    for (size_t got; v && (got = fread(v + n, sizeof *v, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) v = realloc(v, (cap *= 2) * sizeof *v);
    }
    fclose(f);
    const size_t row = (size_t)T + 1;
    if (!v || n == 0 || n % row || n / row < (size_t)B) {
        fprintf(stderr, "bench_train: %s is not at least %d rows of %d int32 tokens\n", path, B, T + 1);
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        if (v[i] < 0 || v[i] >= V) {
            fprintf(stderr, "bench_train: %s: token %d at %zu is not in [0, %d)\n", path, (int)v[i], i, V);
            exit(1);
        }
    *n_rows = n / row;
    return (int *)v;
}

/* Batch k of the token stream (rows [kB, (k+1)B) of the file, cycled) or,
 * without one, B rows of T + 1 uniform tokens from rng: inputs the first T
 * tokens of each row, targets the next token at every position. */
static void token_batch(const int *stream, size_t n_rows, size_t k, hs_task_rng *rng, int B, int T, int V,
                        int *tokens, int *targets)
{
    const size_t per = n_rows / (size_t)B;
    for (int b = 0; b < B; b++) {
        const int *row = stream ? stream + ((k % per) * (size_t)B + (size_t)b) * (size_t)(T + 1) : NULL;
        int prev = row ? row[0] : (int)hs_task_rng_below(rng, (uint64_t)V);
        for (int t = 0; t < T; t++) {
            int next = row ? row[t + 1] : (int)hs_task_rng_below(rng, (uint64_t)V);
            tokens[b * T + t] = prev;
            targets[b * T + t] = next;
            prev = next;
        }
    }
}

int main(int argc, char **argv)
{
    int steps = 300, warmup = 30, threads = 0, blas_threads = 0, batch = 64, roofline = 1;
    int layout = HS_ACTS_TRAIN, ladder_row = -1, batch_set = 0;
    const char *json = NULL, *token_file = NULL;
    bench_shape sh = bench_shape_default();
    for (int i = 1; i < argc; i++) {
        int c = bench_config_arg(argc, argv, &i, &sh);
        if (c < 0) return 2;
        if (c > 0) continue;
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tokens") && i + 1 < argc) token_file = argv[++i], sh.tokens = 1;
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--blas-threads") && i + 1 < argc) blas_threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoi(argv[++i]), batch_set = 1;
        else if (!strcmp(argv[i], "--ladder-row") && i + 1 < argc) ladder_row = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!strcmp(argv[i], "--no-roofline")) roofline = 0;
        else if (!strcmp(argv[i], "--full-acts")) layout = HS_ACTS_GRAD;
        else {
            fprintf(stderr,
                    "usage: bench_train [--steps N] [--warmup N] [--threads N] [--blas-threads N] "
                    "[--batch B] [--d-model D] [--layers L] [--heads H] [--d-head dh] [--d-mlp M] "
                    "[--ctx T] [--vocab V] [--tokens FILE] [--ladder-row R] [--no-roofline] [--full-acts] "
                    "[--json FILE]\n");
            return 2;
        }
    }
    if (steps < 1 || warmup < 0 || batch < 1) {
        fprintf(stderr, "bench_train: bad --steps/--warmup/--batch\n");
        return 2;
    }

    hs_error err;
    hs_winograd *task = NULL;
    bench_shape_finish(&sh);
    if (ladder_row >= 0) {
        if (ladder_row >= HS_LADDER_ROWS || token_file) {
            fprintf(stderr, "bench_train: --ladder-row is 0..%d, on random tokens\n", HS_LADDER_ROWS - 1);
            return 2;
        }
        hs_ladder_opts lo = hs_ladder_opts_default();
        lo.batch = batch_set ? batch : 64;
        hs_train_job j;
        hs_ladder_row_job(&lo, ladder_row, NULL, 0, NULL, &j);
        const int V = sh.tokens ? sh.cfg.d_vocab : lo.vocab_size;
        sh.cfg = j.cfg;
        sh.cfg.d_vocab = V;
        sh.cfg.n_ctx = sh.T = j.text.n_ctx;
        sh.tokens = 1;
        batch = j.train.batch;
    }
    if (!sh.tokens) {
        if (hs_winograd_create(HS_TASK_WINOGRAD, 0, NULL, &task, &err) != HS_OK) die("task", &err);
        sh.cfg.n_ctx = sh.T = HS_WG_LEN;
        sh.cfg.d_vocab = (int)task->vocab->n;
    }
    const hs_config cfg = sh.cfg;
    hs_model *m = NULL;
    if (hs_model_create(&cfg, &m, &err) != HS_OK) die("model", &err);
    hs_model_init(m);
    if (hs_model_alloc_train(m, &err) != HS_OK) die("alloc", &err);
    const int B = batch, T = sh.T;
    size_t n_rows = 0;
    int *stream = token_file ? read_tokens(token_file, T, cfg.d_vocab, B, &n_rows) : NULL;
    hs_acts *acts = NULL;
    if (hs_acts_create(&cfg, B, T, layout, &acts, &err) != HS_OK) die("acts", &err);
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
        if (task)
            hs_winograd_batch(task, &rng, (size_t)B, tokens, targets);
        else
            token_batch(stream, n_rows, (size_t)(s + warmup), &rng, B, T, cfg.d_vocab, tokens, targets);
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
    int roof_summed = 0;
    if (roofline) {
        bench_gemm g[32];
        int n = bench_step_gemms(&cfg, B, T, g, 32);
        bench_bufs bb;
        bench_bufs_init(&bb, bench_gemm_cap(g, n));
        double gemm_s = bench_time_step_gemms(g, n, &bb, 200, &roof_summed);
        bench_bufs_free(&bb);
        roof_gflops = gemm_flops / gemm_s * 1e-9;
        roof_s = flops / (roof_gflops * 1e9);
    }

    char name[128];
    bench_shape_name(&sh, name, sizeof name);
    printf("headscope training step: %s (%s), batch %d x %d, threads %d (OpenBLAS %d)\n", name,
           task ? "Winograd batches" : token_file ? "token file" : "random tokens", B, T, threads, blas_n);
    printf("  %-14s %10s\n", "phase", "median ms");
    for (int p = 0; p < PH_N; p++) printf("  %-14s %10.3f\n", PH_NAMES[p], med[p] * 1e3);
    printf("  %-14s %10.3f\n", "step (min)", step_min * 1e3);
    printf("  FLOPs/step: %.3f GFLOP (matmul %.3f, attention %.3f)\n", flops * 1e-9,
           gemm_flops * 1e-9, attn_flops * 1e-9);
    printf("  achieved: %.1f GFLOP/s (median step), %.1f (min step)\n", flops / med[PH_STEP] * 1e-9,
           flops / step_min * 1e-9);
    if (roofline)
        printf("  sgemm roofline at the step's shapes (one core, OpenBLAS %d%s): %.1f GFLOP/s -> "
               "%.3f ms/step; step / roofline = %.2fx (median), %.2fx (min)\n",
               blas_n, roof_summed ? ", per-product times summed" : "", roof_gflops, roof_s * 1e3,
               med[PH_STEP] / roof_s, step_min / roof_s);
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
        fprintf(f, "  \"data\": \"%s\",\n  \"config\": {", task ? "winograd" : token_file ? "token_file" : "random");
        bench_shape_json(f, &sh);
        fprintf(f, "},\n");
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
        /* the buffers the step allocates (MB of 2^20 bytes): activations
         * (the training layout, HS_ACTS_TRAIN, unless --full-acts), the backward's scratch and
         * transposed weights, and per parameter its value, gradient, the
         * second batch part's gradient and AdamW's two moments */
        fprintf(f, ",\n  \"acts_mb\": %.1f,\n  \"acts_grad_mb\": %.1f,\n  \"params_train_mb\": %.1f",
                acts->n_floats * 4.0 / 1048576.0, acts->n_d_floats * 4.0 / 1048576.0,
                (double)m->n_params * (3 + HS_GRAD_PARTS) * 4.0 / 1048576.0);
        fprintf(f, ",\n  \"final_loss\": %.9g\n}\n", loss);
        if (fclose(f) != 0) {
            perror(json);
            return 1;
        }
    }
    for (int p = 0; p < PH_N; p++) free(ph[p]);
    free(tokens);
    free(targets);
    free(stream);
    hs_acts_destroy(acts);
    hs_model_destroy(m);
    hs_winograd_destroy(task);
    return 0;
}
