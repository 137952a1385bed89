/*
 * bench/bench_eap.c -- time of edge attribution over a prompt set, in
 * process: median of RUNS runs (after one untimed run) of hs_eap_scores,
 * EAP (ig_steps 0) and EAP-IG (--ig-steps, default 5), on a pool of
 * --threads workers; the model and the prompts loaded once, the graph
 * built once (neither timed). --scores FILE writes both runs' scores as
 * JSON ({"edges": [names], "eap": [...], "eap_ig": [...]}), which
 * bench/eap_peer.py compares with its own.
 *
 * usage: bench_eap MODEL.safetensors PAIRS.jsonl [--threads N] [--runs R]
 *                  [--ig-steps M] [--metric logit-diff|prob-diff|kl]
 *                  [--json FILE] [--scores FILE]
 */
#include "bench_util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "discovery/discovery.h"
#include "experiments/experiments.h"

static int usage(void)
{
    fprintf(stderr, "usage: bench_eap MODEL.safetensors PAIRS.jsonl [--threads N] [--runs R] [--ig-steps M] "
                    "[--metric logit-diff|prob-diff|kl] [--json FILE] [--scores FILE]\n");
    return 2;
}

/* Median ms of runs of hs_eap_scores with ig steps (one untimed run first). */
static int time_runs(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_graph *g,
                     hs_metric_kind k, int ig, int runs, double *scores, double *ms)
{
    hs_error err;
    double *t = malloc((size_t)runs * sizeof *t);
    if (t == NULL) return 1;
    for (int r = -1; r < runs; r++) {
        const double t0 = bench_now();
        if (hs_eap_scores(m, pool, p, g, k, ig, scores, &err) != HS_OK) {
            fprintf(stderr, "bench_eap: %s\n", err.msg);
            free(t);
            return 1;
        }
        if (r >= 0) t[r] = (bench_now() - t0) * 1e3;
    }
    *ms = bench_median(t, runs);
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
    int threads = 1, runs = 11, ig = 5;
    hs_metric_kind metric = HS_METRIC_LOGIT_DIFF;
    for (int i = 1; i < argc; i++) {
        const int more = i + 1 < argc;
        if (!strcmp(argv[i], "--threads") && more) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && more) runs = atoi(argv[++i]);
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
    if (!model || !pairs || runs < 1 || ig < 1 || threads < 1) return usage();
    hs_error err = {0};
    hs_model *m = NULL;
    hs_meta meta = {0};
    hs_tokenizer *tok = NULL;
    hs_prompts p = {0};
    hs_pool *pool = NULL;
    hs_graph g = {0};
    if (hs_checkpoint_load(model, &m, &meta, NULL, &err) != HS_OK ||
        hs_tokenizer_from_json(meta.vocab, &tok, &err) != HS_OK ||
        hs_prompts_load(pairs, tok, m->cfg.n_ctx, 0, &p, &err) != HS_OK || hs_pool_create(threads, &pool, &err) != HS_OK ||
        hs_graph_build(&m->cfg, &g, &err) != HS_OK) {
        fprintf(stderr, "bench_eap: %s\n", err.msg);
        return 1;
    }
    double *eap = malloc(g.n_edges * sizeof *eap), *eap_ig = malloc(g.n_edges * sizeof *eap_ig);
    double ms_eap = 0, ms_ig = 0;
    int rc = !eap || !eap_ig || time_runs(m, pool, &p, &g, metric, 0, runs, eap, &ms_eap) ||
             time_runs(m, pool, &p, &g, metric, ig, runs, eap_ig, &ms_ig);
    if (rc == 0) {
        printf("headscope EAP over %d prompts of %d tokens, %zu edges, %d thread%s: EAP %.2f ms, EAP-IG (%d steps) "
               "%.2f ms (median of %d)\n", p.n, p.t, g.n_edges, threads, threads == 1 ? "" : "s", ms_eap, ig, ms_ig,
               runs);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "prompts", p.n);
        cJSON_AddNumberToObject(o, "tokens", p.t);
        cJSON_AddNumberToObject(o, "edges", (double)g.n_edges);
        cJSON_AddNumberToObject(o, "threads", threads);
        cJSON_AddNumberToObject(o, "runs", runs);
        cJSON_AddNumberToObject(o, "ig_steps", ig);
        cJSON_AddStringToObject(o, "metric", hs_metric_names[metric]);
        cJSON_AddNumberToObject(o, "eap_ms", ms_eap);
        cJSON_AddNumberToObject(o, "eap_ig_ms", ms_ig);
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
    hs_tokenizer_destroy(tok);
    hs_meta_free(&meta);
    hs_model_destroy(m);
    return rc;
}
