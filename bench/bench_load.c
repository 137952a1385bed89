/*
 * bench/bench_load.c -- time and memory of loading a checkpoint, in process:
 * median of N runs (after one untimed run, so the file is in the page cache) of
 *   checkpoint: hs_checkpoint_load (the headers, then every tensor read once
 *               into the parameter table, converted and checked; build the
 *               model): a .safetensors file in any layout, or a Hugging Face
 *               GPT-2 folder, and
 *   full:       that + the vocabulary and the task from its metadata, i.e.
 *               what every `headscope` command pays before its own work
 *               (cli_load), then freeing it all;
 *   process:    with --process tl, hs_model_process_tl on the loaded model
 *               (TransformerLens' from_pretrained processing).
 * Then the process's peak resident set (getrusage; one model is alive at a
 * time) beside the parameter table's and the checkpoint's bytes: loading
 * should need little beyond the table. /usr/bin/time -v gives the same peak
 * from outside (bench/run.sh).
 *
 * usage: bench_load PATH [runs=21] [--process tl] [--json FILE]
 */
#include "bench_util.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "model/model.h"
#include "model/checkpoint.h"
#include "tasks/tasks.h"

static double now_ms(void) { return bench_now() * 1e3; }

/* One load; full = 1 also builds the vocabulary and the task; *process_ms
 * (when not NULL) gets the time of hs_model_process_tl on it. *table_bytes:
 * the parameter table's; *mapped_bytes: its tensors used in place from the
 * mapped file (DESIGN.md "Checkpoint"), the rest copied. 0 = ok. */
static int load_once(const char *path, int full, double *process_ms, double *table_bytes,
                     double *mapped_bytes)
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
    if (table_bytes) *table_bytes = (double)m->n_params * sizeof(float);
    if (mapped_bytes) {
        *mapped_bytes = 0;
        for (int i = 0; i < m->n_tensors; i++) {
            const float *d = hs_model_tensor_data(m, i);
            if (d == NULL || d < m->param_mem || d >= m->param_mem + m->n_params)
                *mapped_bytes += (double)m->tensors[i].numel * sizeof(float);
        }
    }
    if (full && meta.vocab) {
        if (hs_tokenizer_from_json(meta.vocab, &vocab, &err) != HS_OK) rc = 1;
        else if (meta.task && hs_winograd_from_task_json(meta.task, vocab, &task, &err) != HS_OK)
            rc = 1;
        if (rc) fprintf(stderr, "bench_load: %s\n", err.msg);
    }
    if (process_ms && !rc) {
        const double t0 = now_ms();
        if (hs_model_process_tl(m, &err) != HS_OK) {
            fprintf(stderr, "bench_load: %s\n", err.msg);
            rc = 1;
        }
        *process_ms = now_ms() - t0;
    }
    hs_winograd_destroy(task);
    hs_tokenizer_destroy(vocab);
    hs_meta_free(&meta);
    hs_model_destroy(m);
    return rc;
}

/* Bytes of path: a file's size, or the sum of a folder's files. */
static double path_bytes(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    if (!S_ISDIR(st.st_mode)) return (double)st.st_size;
    double total = 0;
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) total += (double)st.st_size;
    }
    if (d) closedir(d);
    return total;
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_load PATH [runs=21] [--process tl] [--json FILE]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *json = NULL;
    int runs = 21, process = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!strcmp(argv[i], "--process") && i + 1 < argc && !strcmp(argv[i + 1], "tl")) process = 1, i++;
        else if (!path && argv[i][0] != '-') path = argv[i];
        else if (path && argv[i][0] != '-') runs = atoi(argv[i]);
        else return usage();
    }
    if (!path || runs < 1) return usage();
    double table = 0, mapped = 0;
    if (load_once(path, 1, NULL, &table, &mapped)) return 1; /* warm the page cache */
    double *tc = malloc((size_t)runs * sizeof *tc), *tf = malloc((size_t)runs * sizeof *tf);
    double *tp = malloc((size_t)runs * sizeof *tp);
    if (!tc || !tf || !tp) return 1;
    for (int r = 0; r < runs; r++) {
        double t0 = now_ms();
        if (load_once(path, 0, NULL, NULL, NULL)) return 1;
        double t1 = now_ms();
        if (load_once(path, 1, process ? &tp[r] : NULL, NULL, NULL)) return 1;
        tc[r] = t1 - t0;
        tf[r] = now_ms() - t1 - (process ? tp[r] : 0.0);
    }
    double mc = bench_median(tc, runs), mf = bench_median(tf, runs), mp = process ? bench_median(tp, runs) : 0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const double peak = (double)ru.ru_maxrss * 1024.0, file = path_bytes(path);
    printf("load %s: median of %d runs: checkpoint %.3f ms, + vocab and task %.3f ms", path, runs, mc, mf);
    if (process) printf(", --process tl %.3f ms", mp);
    printf("\n  peak RSS %.1f MB; parameter table %.1f MB (%.2fx; %.1f MB of it read in place from "
           "the mapped file); checkpoint %.1f MB (%.2fx)\n",
           peak / 1e6, table / 1e6, peak / table, mapped / 1e6, file / 1e6, peak / file);
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            perror(json);
            return 1;
        }
        fprintf(f, "{\"bench\": \"load\", \"runs\": %d, \"checkpoint_ms\": %.4f, \"full_ms\": %.4f, "
                   "\"process_ms\": %.4f, \"peak_rss_bytes\": %.0f, \"table_bytes\": %.0f, "
                   "\"checkpoint_bytes\": %.0f, \"mapped_bytes\": %.0f}\n", runs, mc, mf, mp, peak, table, file, mapped);
        if (fclose(f) != 0) {
            perror(json);
            return 1;
        }
    }
    free(tc);
    free(tf);
    free(tp);
    return 0;
}
