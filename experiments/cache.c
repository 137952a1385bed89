/*
 * experiments/cache.c -- the activation cache as a file (experiments.h,
 * hs_cache_run; `headscope cache`): TransformerLens' run_with_cache over a
 * sentence or a prompt set on the experiment engine, written with probe's
 * hs_cache_save, and the check that an existing file may be replaced.
 */
#include "experiments/experiments.h"
#include "model/checkpoint.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The FNV-1a 64 of the data section hs_cache_save writes for c: each
 * entry's floats in order, little-endian, a non-finite (the mask's -inf) as
 * -FLT_MAX (probe.h, hs_cache_save). */
static uint64_t cache_data_hash(const hs_cache *c)
{
    uint64_t h = HS_FNV1A64_BASIS;
    unsigned char buf[4096];
    size_t k = 0;
    for (int i = 0; i < c->n; i++)
        for (size_t j = 0; j < c->e[i].numel; j++) {
            float f = c->e[i].data[j];
            if (!isfinite(f)) f = -FLT_MAX;
            uint32_t u;
            memcpy(&u, &f, sizeof u);
            for (int b = 0; b < 4; b++) buf[k++] = (unsigned char)(u >> (8 * b));
            if (k == sizeof buf) {
                h = hs_fnv1a64_more(h, buf, k);
                k = 0;
            }
        }
    return hs_fnv1a64_more(h, buf, k);
}

/* 1 when the bytes buf [n] are a cache hs_cache_run wrote and nobody changed:
 * a valid safetensors file whose generator is headscope's cache command and
 * whose data section hashes to the recorded data_fnv1a64. */
static int is_our_cache(const unsigned char *buf, size_t n, const char *path)
{
    hs_st_file f;
    if (hs_safetensors_parse(buf, n, path, &f, NULL) != HS_OK) return 0;
    const char *gen = hs_st_meta(&f, "generator"), *hash = hs_st_meta(&f, "data_fnv1a64");
    const size_t gl = gen ? strlen(gen) : 0;
    int ok = gen && hash && strncmp(gen, "headscope ", 10) == 0 && gl > 16 &&
             strcmp(gen + gl - 6, " cache") == 0;
    if (ok) {
        uint64_t hlen = 0;
        for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | buf[i]; /* parse checked it */
        char want[17];
        snprintf(want, sizeof want, "%016" PRIx64, hs_fnv1a64(buf + 8 + hlen, n - 8 - (size_t)hlen));
        ok = strcmp(want, hash) == 0;
    }
    hs_st_file_free(&f);
    return ok;
}

/* out_path may be written: new (its folder exists), or with force a cache
 * this command wrote, unchanged (*replacing = 1). */
static hs_status check_out(const hs_cache_opts *o, int *replacing, hs_error *err)
{
    struct stat st;
    *replacing = 0;
    if (o->out_path == NULL || o->out_path[0] == '\0') return hs_fail(err, HS_ERR_INPUT, "--out is empty");
    hs_status s = hs_check_new_file("--out", o->out_path, o->force, err);
    if (s == HS_OK) s = hs_check_out_path(o->out_path, err);
    if (s != HS_OK || stat(o->out_path, &st) != 0) return s;
    unsigned char *buf = NULL;
    size_t n = 0;
    s = hs_read_file(o->out_path, &buf, &n, err);
    if (s != HS_OK) return s;
    const int ours = is_our_cache(buf, n, o->out_path);
    free(buf);
    if (!ours)
        return hs_fail(err, HS_ERR_INPUT, "--out %s is not an activation cache headscope wrote, or it "
                       "changed since; refusing to replace it", o->out_path);
    *replacing = 1;
    return HS_OK;
}

/* One engine job: chunk j of the prompts cached into caches[j]. */
typedef struct {
    const int *tok;              /* (n, t) */
    int n;
    const char *const *filters;  /* (n_filters) or NULL */
    int n_filters;
    hs_cache *caches;            /* (chunks) */
} cache_job_ctx;

static hs_status cache_job(hs_engine *e, hs_engine_worker *w, int j, void *arg)
{
    const cache_job_ctx *c = arg;
    const int r0 = j * HS_ENGINE_CHUNK, b = c->n - r0 < HS_ENGINE_CHUNK ? c->n - r0 : HS_ENGINE_CHUNK;
    return hs_engine_cache(e, w, c->tok + (size_t)r0 * e->t, b, c->filters, c->n_filters, NULL, &c->caches[j]);
}

/* The chunks' caches (k of them, the same points in the same order, batch
 * first) as one cache of batch n in row order. */
static hs_status merge(const hs_cache *parts, int k, int n, hs_cache *out, hs_error *err)
{
    hs_cache_init(out);
    out->e = calloc((size_t)parts[0].n + 1, sizeof *out->e);
    if (out->e == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    out->cap = parts[0].n;
    for (int i = 0; i < parts[0].n; i++) {
        hs_cache_entry *d = &out->e[i];
        *d = parts[0].e[i];
        d->shape[0] = n;
        d->numel = parts[0].e[i].numel / (size_t)parts[0].e[i].shape[0] * (size_t)n;
        d->data = malloc(d->numel * sizeof(float));
        if (d->data == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
        out->n++;
        size_t at = 0;
        for (int j = 0; j < k; j++) {
            const hs_cache_entry *s = &parts[j].e[i];
            HS_ASSERT(strcmp(s->name, d->name) == 0 && at + s->numel <= d->numel);
            memcpy(d->data + at, s->data, s->numel * sizeof(float));
            at += s->numel;
        }
    }
    return HS_OK;
}

/* The run of prompts p (n, t) on pool keeping the filters' points into *c. */
static hs_status run_cache(const hs_model *m, hs_pool *pool, const hs_prompts *p, const char *const *filters,
                           int n_filters, hs_cache *c, hs_error *err)
{
    const int k = hs_engine_chunks(p->n);
    hs_cache *parts = calloc((size_t)k, sizeof *parts);
    if (parts == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    hs_engine e;
    /* activations for the rows a forward runs on: a set of fewer prompts than
     * a chunk touches its own rows, not a chunk's (one GPT-2 sentence of 561
     * tokens asked 32 x its full cache, 26 GB, and was refused) */
    const int rows = p->n < HS_ENGINE_CHUNK ? hs_engine_padded(p->n, p->t) : HS_ENGINE_CHUNK;
    hs_status st = hs_engine_init_rows(&e, m, pool, p->t, rows, err);
    cache_job_ctx cj = {p->clean, p->n, filters, n_filters, parts};
    if (st == HS_OK) st = hs_engine_for(&e, k, cache_job, &cj, err);
    if (st == HS_OK) st = merge(parts, k, p->n, c, err);
    for (int j = 0; j < k; j++) hs_cache_free(&parts[j]);
    free(parts);
    hs_engine_free(&e);
    return st;
}

/* The metadata of the file and its save. */
static hs_status save(const hs_cache *c, const hs_cache_opts *o, const hs_prompts *p, hs_error *err)
{
    char gen[64], batch[16], pos[16], hash[17];
    snprintf(gen, sizeof gen, "headscope %s cache", HS_VERSION);
    snprintf(batch, sizeof batch, "%d", p->n);
    snprintf(pos, sizeof pos, "%d", p->t);
    snprintf(hash, sizeof hash, "%016" PRIx64, cache_data_hash(c));
    const char *keys[] = {"generator", "model", "batch", "pos", "data_fnv1a64"};
    const char *vals[] = {gen, o->model_path ? o->model_path : "", batch, pos, hash};
    return hs_cache_save(c, o->out_path, keys, vals, 5, err);
}

hs_status hs_cache_run(const hs_model *m, const hs_tokenizer *v, hs_pool *pool, const hs_cache_opts *o,
                       const hs_notes *notes, hs_cache_report *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    if ((o->sentence == NULL) == (o->data_path == NULL))
        return hs_fail(err, HS_ERR_INPUT, "cache: give one sentence or one prompt file");
    int replacing = 0;
    hs_status st = check_out(o, &replacing, err);
    if (st != HS_OK) return st;
    hs_prompts p = {0};
    st = o->data_path ? hs_prompts_load(o->data_path, v, m->cfg.n_ctx, HS_PROMPTS_TEXT_ONLY, &p, err)
                      : hs_prompts_sentence(o->sentence, v, m->cfg.n_ctx, &p, err);
    const int nf = o->names && o->n_names > 0 ? o->n_names + 1 : 0;
    const char **filters = nf ? calloc((size_t)nf, sizeof *filters) : NULL;
    if (st == HS_OK && nf && filters == NULL) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int i = 0; filters && i < o->n_names; i++) filters[i] = o->names[i];
    if (filters) filters[nf - 1] = "hook_tokens"; /* the tokens always */
    hs_cache c = {0};
    if (st == HS_OK) st = run_cache(m, pool, &p, filters, nf, &c, err);
    if (st == HS_OK) st = save(&c, o, &p, err);
    if (st == HS_OK) {
        out->batch = p.n;
        out->pos = p.t;
        out->n_tensors = c.n;
        for (int i = 0; i < c.n; i++) out->floats += c.e[i].numel;
        out->replaced = replacing;
        if (replacing) hs_note(notes, HS_NOTE_CMD, "replaced %s, a cache an earlier run wrote", o->out_path);
    }
    hs_cache_free(&c);
    free(filters);
    hs_prompts_free(&p);
    return st;
}
