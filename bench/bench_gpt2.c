/*
 * bench/bench_gpt2.c -- a forward with the full activation cache at a GPT-2
 * checkpoint's whole context, in process, beside the sgemm roofline at its
 * shapes (bench/gpt2_speed.sh runs it next to bench/gpt2_peer.py):
 *   forward: hs_run_with_cache (every hook point kept, TransformerLens'
 *            run_with_cache) on one sequence of T random tokens (seeded),
 *            median of RUNS calls after one untimed call;
 *   tl:      the same with the points TL's run_with_cache keeps on GPT-2
 *            (tl_points below), against the same roofline;
 *   roofline: the least time of the same forward's sgemm products alone
 *            through hs_sgemm (bench_shapes.h: Q/K/V, W_O, W_in, W_out, W_U
 *            at (T, .) and, per layer and head, the score product
 *            Q K^T (T, T, dh) and the mix pattern V (T, dh, T)), summed;
 *            "proj" without the attention products.
 *   last:    hs_forward without an observer keeping only the last position's
 *            logits (acts->logit_pos = T - 1: the last block's MLP and the
 *            unembedding at that row alone), median of RUNS, beside its own
 *            roofline: the same products at the rows it computes (W_in,
 *            W_out of the last block and W_U at 1 row, W_U as W_U^T when the
 *            model reads it transposed).
 * The ratio forward / roofline is what issues 24 and 30 bound (1.3x with
 * the full cache, 1.2x for the last position's logits).
 * What the rooflines leave out: both count FLOPs only at hs_sgemm's own rate
 * (no peak of the CPU, no memory traffic). The full cache at GPT-2 small,
 * 1,024 tokens holds 283 points, 4,446 MB: every point headscope offers,
 * where TransformerLens' run_with_cache on from_pretrained("gpt2") keeps
 * 208, 1,935 MB (its default config computes no hook_result, hook_attn_in,
 * hook_q/k/v_input, hook_mlp_in, hook_tokens: 453 + 453 + 3 x 453 + 38 MB;
 * logits 206 MB are its output, not an entry). Neither the PyTorch peer
 * (bench/gpt2_peer.py, ~2.1 GB kept) nor the roofline counts those 2.3 GB
 * nor hook_result's 14.5 GFLOP (144 products of K = 64, ~45 ms at the
 * roofline's rate): the "tl" line times the forward with TL's points alone
 * against the same roofline (its products are exactly the roofline's).
 * Every entry is written once a run whatever the forward does (the timed
 * runs reuse the cache's buffers and fault no page), so each ratio has a
 * floor above 1 set by the memory's write rate: on this VM one core
 * writes 600 MB at 5.3-5.9 GB/s (memset) or 8.7-11.5 GB/s (streaming
 * stores) at load 5-6 (5.0 GB/s streaming at load 12.7, 02:13Z). With the
 * quiet roofline of 902 ms (00:13Z) and no write overlapping a product:
 *   full cache: (902 + 45 + 4,446 MB / 8.7-11.5 GB/s = 387-511) / 902 =
 *               1.48-1.62x: 1.3x is below what the memory allows (it would
 *               need 4.4 GB written in ~225 ms, 19.8 GB/s, beside no product);
 *   TL's cache: (902 + 1,935 MB / 8.7-11.5 GB/s = 168-222) / 902 =
 *               1.19-1.25x: 1.3x leaves 49-103 ms for everything else.
 * The scores and patterns (1.2 GB of either) are streamed to the cache's
 * entries from causal blocks in L2 (model/attention.c attn_causal_bg: no
 * read back; the -inf and zeros above the diagonal streamed without being
 * written or read first, hs_store_streaming_fill); the split inputs'
 * repeats and hook_result are written in place; mlp pre/post, attn_out,
 * resid_mid, mlp_out, resid_post, resid_pre and the norms' scale and
 * normalized rows are streamed from L1 by the pass that makes them (bias +
 * GELU, the residual's adds, the norm, resid_pre's copy: fwd9); of TL's
 * points only hook_embed, hook_pos_embed, block 0's resid_pre, q, k, v and
 * z are copied after their step (160 MB; 0.97 GB before). That removed
 * ~0.95 GB of memory traffic a TL-cache forward (mlp pre/post 453 MB, the
 * norms 236, the residual passes 227, resid_pre 35: bytes counted per pass)
 * and ~0.7 GB of passes that ran on one core beside an idle worker (the
 * observed path's bias and residual adds, resid_pre's memcpy). Measured only
 * under load (05:26-05:32Z, load 5.8-8.5, 4x a quiet run's wall): TL-cache
 * CPU a run, medians of 5, 3 alternated pairs: 2,571 / 2,470 / 2,653 ms
 * (main 832f436) against 2,426 / 2,496 / 2,548 (fwd9); in one full run
 * each, TL-cache CPU against the products' CPU 1.20x (main) -> 1.16x, the
 * every-point cache's 1.34x -> 1.25x. The wall ratio against 1.3x needs a
 * quiet machine. What is left beyond the products: the 1.2 GB of scores and
 * patterns streamed (at the write floor), the softmax's exp (~4% of the
 * forward's samples), GELU (~1.3%), the q/k/v/z copies (160 MB). The last
 * position's roofline counts the whole T x T score and mix products, while
 * that forward (no observer) runs them in causal blocks of 64 rows, about
 * 53% of them at 1,024 tokens: that roofline is the looser of the two.
 *
 * Each forward's process CPU time a run (every thread's, OpenBLAS' waiting
 * helpers too) is printed beside the CPU time of its roofline's products
 * run once each as the forward runs them (the least of 3 passes): on a
 * loaded machine those ratios hold where the wall times' do not.
 *
 * What the last position's number measures (issue 30's unstable 1.2x): its
 * runs come after the full-cache runs, which left the 4.4 GB cache resident
 * (huge pages the kernel may still be compacting or scanning) while
 * `--only last` ran on a fresh process: the cache is freed before the last
 * position's runs, so both measure the same forward in the same state. Each
 * forward's page faults (minor/major) during its timed runs are printed (0
 * expected: the buffers are reused; a major fault would be the mapped
 * weights read again from disk), and its least time beside its median: the
 * rooflines are least times, so min/min is the ratio free of the load's
 * noise, median/min the one issues 24 and 30 state (kept).
 * --only cache|tl|last runs that forward alone and no roofline (to profile it:
 * perf record -g build/bench_gpt2 PATH --only cache).
 *
 * usage: bench_gpt2 PATH [--threads N] [--runs R] [--ctx T] [--json FILE]
 *                   [--only cache|tl|last]
 */
#include "bench_shapes.h"
#include "probe/probe.h"
#include "model/checkpoint.h"

void openblas_set_num_threads(int num_threads);

/* This process's page faults so far: minor in *minor, major returned. */
static long faults_now(long *minor)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *minor = ru.ru_minflt;
    return ru.ru_majflt;
}

/* The least of n values. */
static double least(const double *x, int n)
{
    double m = x[0];
    for (int i = 1; i < n; i++)
        if (x[i] < m) m = x[i];
    return m;
}

/* This process's CPU time in seconds, every thread's (a run's CPU beside
 * its wall time on a shared machine). */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The points TransformerLens' run_with_cache keeps on
 * HookedTransformer.from_pretrained("gpt2") (its default config: no
 * use_attn_result, use_split_qkv_input, use_attn_in, use_hook_mlp_in,
 * use_hook_tokens, so no hook_result, hook_q/k/v_input, hook_attn_in,
 * hook_mlp_in, hook_tokens); its logits are the run's output, not an entry
 * (ours are in acts->logits). "?": points a model may not have. */
static const char *const tl_points[] = {
    "hook_embed", "?hook_pos_embed", "blocks.*.hook_resid_pre", "?blocks.*.ln1.hook_scale",
    "?blocks.*.ln1.hook_normalized", "?blocks.*.attn.hook_q", "?blocks.*.attn.hook_k",
    "blocks.*.attn.hook_v", "?blocks.*.attn.hook_attn_scores", "blocks.*.attn.hook_pattern",
    "blocks.*.attn.hook_z", "blocks.*.hook_attn_out", "?blocks.*.hook_resid_mid",
    "?blocks.*.ln2.hook_scale", "?blocks.*.ln2.hook_normalized", "?blocks.*.mlp.hook_pre",
    "?blocks.*.mlp.hook_post", "?blocks.*.hook_mlp_out", "blocks.*.hook_resid_post",
    "?ln_final.hook_scale", "?ln_final.hook_normalized"};

/* RUNS timed hs_run_with_cache calls after one untimed one (filters as
 * hs_run_with_cache's; NULL: every point), on one cache freed after. */
typedef struct {
    double ms, least, cpu; /* median, least wall; median CPU (ms) */
    long minor, major;     /* page faults in the timed runs */
    size_t bytes;
    int points;
} cache_timing;

static int time_cache(const hs_model *m, hs_acts *acts, const int *tok, int T,
                      const char *const *filters, int n_filters, int runs, cache_timing *out)
{
    hs_cache cache;
    hs_cache_init(&cache);
    double ms[100] = {0}, cpu[100] = {0};
    long min0 = 0, maj0 = 0, min1 = 0;
    hs_error err = {0};
    for (int r = -1; r < runs; r++) {
        if (r == 0) maj0 = faults_now(&min0);
        const double t0 = bench_now(), c0 = cpu_now();
        if (hs_run_with_cache(m, acts, tok, 1, T, filters, n_filters, NULL, &cache, &err) != HS_OK) {
            fprintf(stderr, "bench_gpt2: %s\n", err.msg);
            return -1;
        }
        if (r >= 0) ms[r] = (bench_now() - t0) * 1e3, cpu[r] = (cpu_now() - c0) * 1e3;
    }
    out->major = faults_now(&min1) - maj0;
    out->minor = min1 - min0;
    out->bytes = 0;
    for (int i = 0; i < cache.n; i++) out->bytes += cache.e[i].numel * sizeof(float);
    out->points = cache.n;
    hs_cache_free(&cache);
    out->ms = bench_median(ms, runs), out->cpu = bench_median(cpu, runs);
    out->least = least(ms, runs);
    return 0;
}

/* The forward's sgemm products at T tokens (projections, then attention). */
static int forward_gemms(const hs_config *c, int T, bench_gemm *g, int *n_proj)
{
    bench_gemm all[32];
    const int n_all = bench_step_gemms(c, 1, T, all, 32);
    int n = 0;
    for (int i = 0; i < n_all; i++)
        if (strncmp(all[i].what, "fwd", 3) == 0) g[n++] = all[i];
    *n_proj = n;
    const int LH = c->n_layers * c->n_heads, dh = c->d_head;
    g[n++] = (bench_gemm){"attn scores Q K^T", 0, 1, T, T, dh, LH, 0.0f};
    g[n++] = (bench_gemm){"attn mix pattern V", 0, 0, T, dh, T, LH, 0.0f};
    return n;
}

/* The products of a forward keeping the last position's logits only. */
static int last_gemms(const hs_model *m, int T, bench_gemm *g)
{
    const hs_config *c = &m->cfg;
    const int L = c->n_layers, D = c->d_model, HD = c->n_heads * c->d_head, M = c->d_mlp;
    const int LH = L * c->n_heads, dh = c->d_head, V = c->d_vocab;
    int n = 0;
    g[n++] = (bench_gemm){"fwd Q/K/V", 0, 0, T, HD, D, L * 3, 0.0f};
    g[n++] = (bench_gemm){"fwd W_O", 0, 0, T, D, HD, L, 0.0f};
    if (M > 0) {
        if (L > 1) g[n++] = (bench_gemm){"fwd W_in", 0, 0, T, M, D, L - 1, 0.0f};
        if (L > 1) g[n++] = (bench_gemm){"fwd W_out", 0, 0, T, D, M, L - 1, 0.0f};
        g[n++] = (bench_gemm){"fwd W_in (last row)", 0, 0, 1, M, D, 1, 0.0f};
        g[n++] = (bench_gemm){"fwd W_out (last row)", 0, 0, 1, D, M, 1, 0.0f};
    }
    g[n++] = (bench_gemm){"fwd W_U (last row)", 0, m->params.W_U_T != NULL, 1, V, D, 1, 0.0f};
    g[n++] = (bench_gemm){"attn scores Q K^T", 0, 1, T, T, dh, LH, 0.0f};
    g[n++] = (bench_gemm){"attn mix pattern V", 0, 0, T, dh, T, LH, 0.0f};
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_gpt2 PATH [--threads N] [--runs R] [--ctx T] [--json FILE] "
                        "[--only cache|tl|last]\n");
        return 2;
    }
    int threads = 2, runs = 5, T = 0;
    const char *json = NULL, *only = NULL;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--runs")) runs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--ctx")) T = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--json")) json = argv[i + 1];
        else if (!strcmp(argv[i], "--only")) only = argv[i + 1];
    }
    const int do_cache = !only || !strcmp(only, "cache"), do_last = !only || !strcmp(only, "last");
    const int do_tl = !only || !strcmp(only, "tl");
    if (runs < 1 || runs > 99) runs = 5;
    openblas_set_num_threads(threads);
    hs_error err = {0};
    hs_model *m = NULL;
    hs_meta meta = {0};
    hs_acts *acts = NULL;
    if (hs_checkpoint_load(argv[1], &m, &meta, NULL, &err) != HS_OK) {
        fprintf(stderr, "bench_gpt2: %s\n", err.msg);
        return 1;
    }
    if (T <= 0 || T > m->cfg.n_ctx) T = m->cfg.n_ctx;
    int *tok = malloc((size_t)T * sizeof *tok);
    if (!tok || hs_acts_create(&m->cfg, 1, T, 0, &acts, &err) != HS_OK ||
        hs_acts_set_threads(acts, threads, &err) != HS_OK) {
        fprintf(stderr, "bench_gpt2: %s\n", tok ? err.msg : "out of memory");
        return 1;
    }
    unsigned long long x = 88172645463325252ULL;
    for (int t = 0; t < T; t++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        tok[t] = (int)(x % (unsigned long long)m->cfg.d_vocab);
    }
    double ms[100] = {0}, cpu[100] = {0};
    long min0 = 0, min1 = 0, maj0 = 0, maj1 = 0;
    cache_timing full = {0}, tl = {0};
    if (do_cache && time_cache(m, acts, tok, T, NULL, 0, runs, &full) != 0) return 1;
    if (do_tl && time_cache(m, acts, tok, T, tl_points, (int)(sizeof tl_points / sizeof *tl_points),
                            runs, &tl) != 0)
        return 1;
    /* the last position's runs as on a fresh process: each cache is freed */
    const size_t cached = full.bytes;
    const int cache_n = full.points;
    const double fwd_ms = full.ms, fwd_cpu = full.cpu, fwd_least = full.least;
    const long fwd_min = full.minor, fwd_maj = full.major;
    acts->logit_pos = T - 1;
    for (int r = -1; do_last && r < runs; r++) {
        if (r == 0) maj0 = faults_now(&min0);
        const double t0 = bench_now(), c0 = cpu_now();
        if (hs_forward(m, acts, tok, 1, T, NULL, &err) != HS_OK) {
            fprintf(stderr, "bench_gpt2: %s\n", err.msg);
            return 1;
        }
        if (r >= 0) ms[r] = (bench_now() - t0) * 1e3, cpu[r] = (cpu_now() - c0) * 1e3;
    }
    maj1 = faults_now(&min1);
    const long last_min = min1 - min0, last_maj = maj1 - maj0;
    acts->logit_pos = -1;
    const double last_ms = bench_median(ms, runs), last_cpu = bench_median(cpu, runs);
    const double last_least = least(ms, runs);
    if (only) {
        const cache_timing lt = {last_ms, last_least, last_cpu, last_min, last_maj, 0, 0};
        const cache_timing *o = do_cache ? &full : do_tl ? &tl : &lt;
        printf("%s: %.1f ms (least %.1f), CPU %.1f ms (medians of %d); page faults in the timed "
               "runs %ld minor, %ld major\n", only, o->ms, o->least, o->cpu, runs, o->minor,
               o->major);
        return 0;
    }

    bench_gemm g[40], gl[16];
    int n_proj;
    const int n = forward_gemms(&m->cfg, T, g, &n_proj);
    const int nl = last_gemms(m, T, gl);
    bench_bufs bb;
    const size_t cap_full = bench_gemm_cap(g, n), cap_last = bench_gemm_cap(gl, nl);
    bench_bufs_init(&bb, cap_full > cap_last ? cap_full : cap_last);
    /* the roofline at the forward's threads, each product on OpenBLAS' own
     * threads as before (its definition kept; the forward now splits its
     * products' rows over its pool instead, hs_sgemm_pool in model/) */
    openblas_set_num_threads(threads);
    double proj_ms = 0, roof_ms = 0, gflop = 0;
    for (int i = 0; i < n; i++) {
        const double s = g[i].count * bench_time_gemm(&g[i], &bb, 5) * 1e3;
        roof_ms += s;
        if (i < n_proj) proj_ms += s;
        gflop += 2.0 * g[i].m * g[i].n * (double)g[i].k * g[i].count * 1e-9;
    }
    double last_roof_ms = 0;
    for (int i = 0; i < nl; i++) last_roof_ms += gl[i].count * bench_time_gemm(&gl[i], &bb, 5) * 1e3;
    /* the same products' process CPU time, once each as the forward runs
     * them (count calls), the least of 3 passes: the ratios of CPU times
     * hold on a loaded machine, where wall times do not */
    double roof_cpu = HUGE_VAL, last_roof_cpu = HUGE_VAL;
    for (int pass = 0; pass < 3; pass++) {
        double c0 = cpu_now();
        for (int i = 0; i < n; i++)
            for (int k = 0; k < g[i].count; k++) bench_gemm_call(&g[i], &bb);
        const double c1 = cpu_now();
        for (int i = 0; i < nl; i++)
            for (int k = 0; k < gl[i].count; k++) bench_gemm_call(&gl[i], &bb);
        const double c2 = cpu_now();
        if ((c1 - c0) * 1e3 < roof_cpu) roof_cpu = (c1 - c0) * 1e3;
        if ((c2 - c1) * 1e3 < last_roof_cpu) last_roof_cpu = (c2 - c1) * 1e3;
    }
    bench_bufs_free(&bb);
    printf("forward with the full cache (%d points, %.0f MB) at %d tokens, %d threads: %.1f ms "
           "(median of %d)\nsgemm roofline at its shapes: %.1f ms (%.1f GFLOP; projections and "
           "unembedding alone %.1f ms): %.2fx (least %.1f ms: %.2fx; page faults in the timed "
           "runs %ld minor, %ld major)\n", cache_n, cached / 1e6, T, threads, fwd_ms, runs,
           roof_ms, gflop, proj_ms, fwd_ms / roof_ms, fwd_least, fwd_least / roof_ms, fwd_min,
           fwd_maj);
    printf("forward with TransformerLens' default cache (gpt2's run_with_cache: %d points, %.0f MB; "
           "no hook_result, split inputs, hook_mlp_in; the logits its output): %.1f ms (median of "
           "%d): %.2fx the same roofline (least %.1f ms: %.2fx); CPU %.1f ms\n", tl.points,
           tl.bytes / 1e6, tl.ms, runs, tl.ms / roof_ms, tl.least, tl.least / roof_ms, tl.cpu);
    printf("process CPU time a run (every thread's, OpenBLAS' waiting ones too): full cache %.1f "
           "ms against its products' %.1f ms: %.2fx; last position %.1f ms against %.1f ms: %.2fx\n",
           fwd_cpu, roof_cpu, fwd_cpu / roof_cpu, last_cpu, last_roof_cpu, last_cpu / last_roof_cpu);
    printf("forward keeping the last position's logits: %.1f ms (median of %d); its roofline %.1f "
           "ms: %.2fx (least %.1f ms: %.2fx; page faults in the timed runs %ld minor, %ld major)\n",
           last_ms, runs, last_roof_ms, last_ms / last_roof_ms, last_least,
           last_least / last_roof_ms, last_min, last_maj);
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            perror(json);
            return 1;
        }
        fprintf(f, "{\"tokens\": %d, \"threads\": %d, \"runs\": %d, \"forward_cache_ms\": %.3f, "
                   "\"cache_points\": %d, \"cache_mb\": %.1f, \"roofline_ms\": %.3f, "
                   "\"roofline_proj_ms\": %.3f, \"gflop\": %.3f, \"ratio\": %.3f, "
                   "\"forward_last_ms\": %.3f, \"roofline_last_ms\": %.3f, \"ratio_last\": %.3f, "
                   "\"forward_cache_least_ms\": %.3f, \"forward_last_least_ms\": %.3f, "
                   "\"forward_tl_cache_ms\": %.3f, \"forward_tl_cache_least_ms\": %.3f, "
                   "\"tl_cache_points\": %d, \"tl_cache_mb\": %.1f}\n",
                T, threads, runs, fwd_ms, cache_n, cached / 1e6, roof_ms, proj_ms, gflop,
                fwd_ms / roof_ms, last_ms, last_roof_ms, last_ms / last_roof_ms, fwd_least,
                last_least, tl.ms, tl.least, tl.points, tl.bytes / 1e6);
        if (fclose(f) != 0) return 1;
    }
    hs_acts_destroy(acts);
    free(tok);
    hs_meta_free(&meta);
    hs_model_destroy(m);
    return 0;
}
