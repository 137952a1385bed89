/*
 * bench/bench_eap.c -- time of edge attribution over a prompt set, in
 * process: RUNS calls (after --warmup W untimed calls, default 1) of hs_eap_scores, EAP
 * (ig_steps 0) and EAP-IG (--ig-steps, default 5), on a pool of --threads
 * workers: the median and least wall time of a call, its median CPU time
 * (every thread) and its minor page faults (fresh memory touched), and
 * the peak RSS of the process; the model (hs_load: a headscope or
 * TransformerLens-format checkpoint or a Hugging Face GPT-2 folder; without
 * a vocabulary the prompts name tokens by id, "#464") and the prompts loaded
 * once, the graph built once (neither timed). --scores FILE writes both runs'
 * scores as JSON ({"edges": [names], "eap": [...], "eap_ig": [...]}), which
 * bench/eap_peer.py compares with its own.
 *
 * usage: bench_eap MODEL PAIRS.jsonl [--threads N] [--runs R]
 *                  [--ig-steps M] [--metric logit-diff|prob-diff|kl]
 *                  [--json FILE] [--scores FILE] [--warmup W]
 */
#include "bench_util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "discovery/discovery.h"
#include "experiments/experiments.h"
#include "tasks/tasks.h"

static int usage(void)
{
    fprintf(stderr, "usage: bench_eap MODEL PAIRS.jsonl [--threads N] [--runs R] [--ig-steps M] "
                    "[--metric logit-diff|prob-diff|kl] [--json FILE] [--scores FILE] [--warmup W]\n");
    return 2;
}

/* What R timed calls cost: median and least wall ms, median CPU ms (every
 * thread), minor page faults a call (the first touches of fresh memory). */
typedef struct {
    double ms, min_ms, cpu_ms, faults;
} call_cost;

/* Times runs calls of hs_eap_scores with ig steps (warmup untimed calls first). */
static int time_runs(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_graph *g,
                     hs_metric_kind k, int ig, int warmup, int runs, double *scores,
                     call_cost *out)
{
    hs_error err;
    double *t = malloc(2 * (size_t)runs * sizeof *t), *c = t + runs;
    long f0 = 0;
    if (t == NULL) return 1;
    for (int r = -warmup; r < runs; r++) {
        if (r == 0) f0 = bench_minor_faults();
        const double t0 = bench_now(), c0 = bench_cpu_now();
        if (hs_eap_scores(m, pool, p, g, k, ig, scores, &err) != HS_OK) {
            fprintf(stderr, "bench_eap: %s\n", err.msg);
            free(t);
            return 1;
        }
        if (r >= 0) t[r] = (bench_now() - t0) * 1e3, c[r] = (bench_cpu_now() - c0) * 1e3;
    }
    out->faults = (double)(bench_minor_faults() - f0) / runs;
    out->ms = bench_median(t, runs); /* sorts t */
    out->min_ms = t[0];
    out->cpu_ms = bench_median(c, runs);
    free(t);
    return 0;
}

static cJSON *doubles(const double *v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

static int write_text(const char *path, cJSON *o)
{
    char *s = cJSON_Print(o);
    FILE *f = fopen(path, "w");
    const int bad = !s || !f || fputs(s, f) < 0 || fputc('\n', f) < 0;
    if (f && fclose(f) != 0) return 1;
    free(s);
    return bad;
}

int main(int argc, char **argv)
{
    const char *model = NULL, *pairs = NULL, *json = NULL, *scores_out = NULL;
    int threads = 1, runs = 11, ig = 5, warmup = 1;
    hs_metric_kind metric = HS_METRIC_LOGIT_DIFF;
    for (int i = 1; i < argc; i++) {
        const int more = i + 1 < argc;
        if (!strcmp(argv[i], "--threads") && more) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && more) runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && more) warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ig-steps") && more) ig = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--metric") && more) {
            const int k = hs_metric_parse(argv[++i]);
            if (k < 0) return usage();
            metric = (hs_metric_kind)k;
        } else if (!strcmp(argv[i], "--json") && more) json = argv[++i];
        else if (!strcmp(argv[i], "--scores") && more) scores_out = argv[++i];
        else if (argv[i][0] != '-' && !model) model = argv[i];
        else if (argv[i][0] != '-' && !pairs) pairs = argv[i];
        else return usage();
    }
    if (!model || !pairs || runs < 1 || warmup < 0 || ig < 1 || threads < 1) return usage();
    hs_error err = {0};
    hs_loaded L = {0};
    hs_prompts p = {0};
    hs_pool *pool = NULL;
    hs_graph g = {0};
    if (hs_load(model, 0, NULL, NULL, &L, &err) != HS_OK ||
        hs_prompts_load(pairs, L.vocab, L.model->cfg.n_ctx, 0, &p, &err) != HS_OK ||
        hs_pool_create(threads, &pool, &err) != HS_OK || hs_graph_build(&L.model->cfg, &g, &err) != HS_OK) {
        fprintf(stderr, "bench_eap: %s\n", err.msg);
        return 1;
    }
    double *eap = malloc(g.n_edges * sizeof *eap), *eap_ig = malloc(g.n_edges * sizeof *eap_ig);
    call_cost ce = {0}, ci = {0};
    int rc = !eap || !eap_ig || time_runs(L.model, pool, &p, &g, metric, 0, warmup, runs, eap, &ce) ||
             time_runs(L.model, pool, &p, &g, metric, ig, warmup, runs, eap_ig, &ci);
    if (rc == 0) {
        printf("headscope EAP over %d prompts of %d tokens, %zu edges, %d thread%s, median of %d calls:\n"
               "  EAP               %8.2f ms (least %.2f), CPU %8.2f ms, %6.0f minor faults a call\n"
               "  EAP-IG (%d steps) %8.2f ms (least %.2f), CPU %8.2f ms, %6.0f minor faults a call\n"
               "  peak RSS %.0f MiB\n",
               p.n, p.t, g.n_edges, threads, threads == 1 ? "" : "s", runs, ce.ms, ce.min_ms, ce.cpu_ms, ce.faults,
               ig, ci.ms, ci.min_ms, ci.cpu_ms, ci.faults, bench_peak_rss_mib());
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "prompts", p.n);
        cJSON_AddNumberToObject(o, "tokens", p.t);
        cJSON_AddNumberToObject(o, "edges", (double)g.n_edges);
        cJSON_AddNumberToObject(o, "threads", threads);
        cJSON_AddNumberToObject(o, "runs", runs);
        cJSON_AddNumberToObject(o, "ig_steps", ig);
        cJSON_AddStringToObject(o, "metric", hs_metric_names[metric]);
        cJSON_AddNumberToObject(o, "peak_rss_mib", bench_peak_rss_mib());
        const call_cost *cc[2] = {&ce, &ci};
        static const char *const key[2] = {"eap", "eap_ig"};
        for (int i = 0; i < 2; i++) {
            char k[32];
            snprintf(k, sizeof k, "%s_ms", key[i]);
            cJSON_AddNumberToObject(o, k, cc[i]->ms);
            snprintf(k, sizeof k, "%s_min_ms", key[i]);
            cJSON_AddNumberToObject(o, k, cc[i]->min_ms);
            snprintf(k, sizeof k, "%s_cpu_ms", key[i]);
            cJSON_AddNumberToObject(o, k, cc[i]->cpu_ms);
            snprintf(k, sizeof k, "%s_faults", key[i]);
            cJSON_AddNumberToObject(o, k, cc[i]->faults);
        }
        if (json && write_text(json, o)) rc = 1;
        cJSON_Delete(o);
    }
    if (rc == 0 && scores_out) {
        cJSON *o = cJSON_CreateObject(), *names = cJSON_CreateArray();
        for (size_t e = 0; e < g.n_edges; e++) {
            char nm[64];
            hs_graph_edge_name(&g, e, nm, sizeof nm);
            cJSON_AddItemToArray(names, cJSON_CreateString(nm));
        }
        cJSON_AddItemToObject(o, "edges", names);
        cJSON_AddItemToObject(o, "eap", doubles(eap, g.n_edges));
        cJSON_AddItemToObject(o, "eap_ig", doubles(eap_ig, g.n_edges));
        if (write_text(scores_out, o)) rc = 1;
        cJSON_Delete(o);
    }
    if (rc) fprintf(stderr, "bench_eap: failed\n");
    free(eap);
    free(eap_ig);
    hs_graph_free(&g);
    hs_pool_destroy(pool);
    hs_prompts_free(&p);
    hs_loaded_free(&L);
    return rc;
}
