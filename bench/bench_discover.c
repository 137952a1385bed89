/*
 * bench/bench_discover.c -- time of circuit discovery on a model and a
 * prompt set (experiments/circuit_run.c, acdc.c, faithfulness.c), in
 * process, median of N runs (after one untimed run) of:
 *   prepare:  hs_circeval_create (the clean and ablated runs' caches, m(M),
 *             m(empty));
 *   exact:    hs_edge_patch_scores (one run over the set per edge);
 *   acdc:     hs_acdc_run at tau (one run per edge tried);
 *   curve:    hs_faith_curve_run of the exact scores (ten circuits).
 * Wall time and the process's CPU time (on a busy machine the CPU time of
 * one thread is the better measure). Metric logit-diff, resample ablation. The default model over its 192
 * held-out pairs: `headscope train --out m.safetensors`, the pairs of
 * tests/py/winograd_pairs.py, then bench_discover m.safetensors pairs.jsonl.
 *
 * usage: bench_discover MODEL PAIRS.jsonl [runs=5] [--threads N] [--tau X]
 */
#include "bench_util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "discovery/discovery.h"
#include "experiments/experiments.h"
#include "tasks/tasks.h"

static int fail(const hs_error *err)
{
    fprintf(stderr, "bench_discover: %s\n", err->msg);
    return 1;
}

int main(int argc, char **argv)
{
    const char *model = NULL, *data = NULL;
    int runs = 5, threads = 1;
    double tau = HS_ACDC_TAU;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tau") && i + 1 < argc) tau = atof(argv[++i]);
        else if (!model) model = argv[i];
        else if (!data) data = argv[i];
        else runs = atoi(argv[i]);
    }
    if (!model || !data || runs < 1) {
        fprintf(stderr, "usage: bench_discover MODEL PAIRS.jsonl [runs=5] [--threads N] [--tau X]\n");
        return 2;
    }
    hs_error err = {0};
    hs_loaded L;
    hs_prompts p = {0};
    hs_graph g;
    hs_pool *pool = NULL;
    hs_load_source src = {0};
    if (hs_load(model, HS_NEED_VOCAB, &src, NULL, &L, &err) != HS_OK ||
        hs_prompts_load(data, L.vocab, L.model->cfg.n_ctx, 0, &p, &err) != HS_OK ||
        hs_graph_build(&L.model->cfg, &g, &err) != HS_OK || hs_pool_create(threads, &pool, &err) != HS_OK)
        return fail(&err);
    double *t[8], *sc = malloc(g.n_edges * sizeof *sc);
    unsigned char *circ = malloc(g.n_edges);
    long trials = 0;
    for (int k = 0; k < 8; k++) t[k] = malloc((size_t)runs * sizeof(double));
    for (int r = -1; r < runs; r++) {
        hs_circeval *ce = NULL;
        hs_acdc_stats st;
        hs_faith_curve fc;
        double t0 = bench_now(), t1, t2, t3, t4, c[5];
        c[0] = bench_cpu_now();
        if (hs_circeval_create(L.model, pool, &p, &g, HS_METRIC_LOGIT_DIFF, HS_ABLATE_RESAMPLE, &ce, &err) != HS_OK)
            return fail(&err);
        t1 = bench_now(), c[1] = bench_cpu_now();
        if (hs_edge_patch_scores(ce, sc, &err) != HS_OK) return fail(&err);
        t2 = bench_now(), c[2] = bench_cpu_now();
        if (hs_faith_curve_run(ce, sc, HS_SELECT_TOPN, &fc, &err) != HS_OK) return fail(&err);
        t3 = bench_now(), c[3] = bench_cpu_now();
        const hs_acdc_opts ao = {tau, 1, 1}; /* the |change| rule and order README's timings were measured with */
        if (hs_acdc_run(ce, &ao, circ, sc, &st, &err) != HS_OK) return fail(&err);
        t4 = bench_now(), c[4] = bench_cpu_now();
        trials = st.trials;
        hs_circeval_destroy(ce);
        if (r < 0) continue;
        t[0][r] = t1 - t0, t[1][r] = t2 - t1, t[2][r] = t4 - t3, t[3][r] = t3 - t2;
        t[4][r] = c[1] - c[0], t[5][r] = c[2] - c[1], t[6][r] = c[4] - c[3], t[7][r] = c[3] - c[2];
    }
    printf("discover on %s, %d prompts x %d tokens, %zu edges, %d thread(s), median of %d:\n", model, p.n, p.t,
           g.n_edges, threads, runs);
    static const char *const what[4] = {"prepare (caches, m(M), m(empty))", "exact edge patching", "ACDC",
                                        "faithfulness curve (10 circuits)"};
    for (int k = 0; k < 4; k++) {
        printf("  %-36s %8.1f ms wall %8.1f ms CPU", what[k], bench_median(t[k], runs) * 1e3,
               bench_median(t[k + 4], runs) * 1e3);
        if (k == 1) printf("  (%zu runs over the set)", g.n_edges);
        if (k == 2) printf("  (tau %g: %ld runs over the set)", tau, trials);
        printf("\n");
    }
    for (int k = 0; k < 8; k++) free(t[k]);
    free(sc);
    free(circ);
    hs_pool_destroy(pool);
    hs_graph_free(&g);
    hs_prompts_free(&p);
    hs_loaded_free(&L);
    return 0;
}
