/*
 * bench/bench_load.c -- time of loading a checkpoint, in process: median of
 * N runs (after one untimed run, so the file is in the page cache) of
 *   checkpoint: hs_checkpoint_load (read + validate the safetensors file,
 *               the config, every tensor; build the model), and
 *   full:       that + the vocabulary and the task from its metadata, i.e.
 *               what every `headscope` command pays before its own work
 *               (cli_load), then freeing it all.
 * The process's peak RSS is measured from outside (/usr/bin/time, bench/run.sh).
 *
 * usage: bench_load FILE.safetensors [runs=21] [--json FILE]
 */
#include "bench_util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/model.h"
#include "tasks/tasks.h"

static double now_ms(void) { return bench_now() * 1e3; }

/* One load; full = 1 also builds the vocabulary and the task. 0 = ok. */
static int load_once(const char *path, int full)
{
    hs_error err = {0};
    hs_model *m = NULL;
    hs_meta meta = {0};
    hs_tokenizer *vocab = NULL;
    hs_winograd *task = NULL;
    int rc = 0;
    if (hs_checkpoint_load(path, &m, &meta, NULL, &err) != HS_OK) {
        fprintf(stderr, "bench_load: %s\n", err.msg);
        return 1;
    }
    if (full && meta.vocab) {
        if (hs_tokenizer_from_json(meta.vocab, &vocab, &err) != HS_OK) rc = 1;
        else if (meta.task && hs_winograd_from_task_json(meta.task, vocab, &task, &err) != HS_OK)
            rc = 1;
        if (rc) fprintf(stderr, "bench_load: %s\n", err.msg);
    }
    hs_winograd_destroy(task);
    hs_tokenizer_destroy(vocab);
    hs_meta_free(&meta);
    hs_model_destroy(m);
    return rc;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *json = NULL;
    int runs = 21;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!path && argv[i][0] != '-') path = argv[i];
        else if (path && argv[i][0] != '-') runs = atoi(argv[i]);
        else {
            fprintf(stderr, "usage: bench_load FILE.safetensors [runs=21] [--json FILE]\n");
            return 2;
        }
    }
    if (!path || runs < 1) {
        fprintf(stderr, "usage: bench_load FILE.safetensors [runs=21] [--json FILE]\n");
        return 2;
    }
    if (load_once(path, 1)) return 1; /* warm the page cache */
    double *tc = malloc((size_t)runs * sizeof *tc), *tf = malloc((size_t)runs * sizeof *tf);
    if (!tc || !tf) return 1;
    for (int r = 0; r < runs; r++) {
        double t0 = now_ms();
        if (load_once(path, 0)) return 1;
        double t1 = now_ms();
        if (load_once(path, 1)) return 1;
        tc[r] = t1 - t0;
        tf[r] = now_ms() - t1;
    }
    double mc = bench_median(tc, runs), mf = bench_median(tf, runs);
    printf("load %s: median of %d runs: checkpoint %.3f ms, + vocab and task %.3f ms\n", path,
           runs, mc, mf);
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            perror(json);
            return 1;
        }
        fprintf(f, "{\"bench\": \"load\", \"runs\": %d, \"checkpoint_ms\": %.4f, \"full_ms\": %.4f}\n",
                runs, mc, mf);
        if (fclose(f) != 0) {
            perror(json);
            return 1;
        }
    }
    free(tc);
    free(tf);
    return 0;
}
