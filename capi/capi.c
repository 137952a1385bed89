/*
 * capi/capi.c -- the foreign callers' entry points (capi/headscope.h): a
 * loaded model as a handle, its tokenizer, weights, runs with hooks and a
 * cache, and the experiments as their JSON. Each function is a thin call of
 * the library's own; nothing prints or exits.
 */
#define _POSIX_C_SOURCE 200809L
#include "capi/headscope.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "discovery/discovery.h"
#include "experiments/experiments.h"
#include "probe/probe.h"
#include "tasks/tasks.h"
#include "tokenize/tokenize.h"

struct hs_api_model {
    hs_loaded L;
    hs_pool *pool;
    pthread_mutex_t lock;
    hs_buf notes;           /* the load's notes, one a line */
    char *config_json;      /* hs_api_config_json's text */
    int n_points;
    hs_hook_point *points;  /* (n_points) hs_hook_points */
};

struct hs_api_acts {
    hs_acts *a;
};

struct hs_api_cache {
    hs_cache c;
};

void hs_api_mem_free(void *p) { free(p); }

size_t hs_api_error_size(void) { return sizeof(hs_error); }

/* Collects a note as one line of h->notes. */
static void keep_note(void *ctx, hs_note_kind kind, const char *line)
{
    (void)kind;
    hs_buf_printf((hs_buf *)ctx, "%s\n", line);
}

/* The handle's lock, or HS_ERR_INPUT when another call holds it. */
static hs_status lock(hs_api_model *h, hs_error *err)
{
    if (h == NULL) return hs_fail(err, HS_ERR_INPUT, "no model (it was freed)");
    if (pthread_mutex_trylock(&h->lock) != 0)
        return hs_fail(err, HS_ERR_INPUT, "the model is busy: a hook or another thread is running it "
                       "(a hook may not run the model it hooks)");
    return HS_OK;
}

/* config_json <- {"tl": ..., "all": ..., "weights": ...}; 0 on OOM. */
static int make_config_json(hs_api_model *h)
{
    const hs_model *m = h->L.model;
    cJSON *o = cJSON_CreateObject();
    cJSON *tl = hs_config_to_json(&m->cfg, HS_CONFIG_JSON_TL);
    if (o && tl && !cJSON_AddItemToObject(o, "tl", tl)) cJSON_Delete(tl), tl = NULL;
    cJSON *all = hs_config_to_json(&m->cfg, HS_CONFIG_JSON_ALL);
    if (o && all && !cJSON_AddItemToObject(o, "all", all)) cJSON_Delete(all), all = NULL;
    int ok = o && tl && all && cJSON_AddStringToObject(o, "weights", hs_model_weights_name(m));
    if (ok) h->config_json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return ok && h->config_json;
}

hs_status hs_api_load(const char *path, const char *process, int threads, hs_api_model **out,
                      hs_error *err)
{
    *out = NULL;
    if (path == NULL) return hs_fail(err, HS_ERR_INPUT, "no model path");
    if (process && strcmp(process, "raw") != 0 && strcmp(process, "tl") != 0)
        return hs_fail(err, HS_ERR_INPUT, "process '%s' is not known (tl or raw)", process);
    if (threads < 0) return hs_fail(err, HS_ERR_INPUT, "threads must be >= 0 (0 = every CPU), got %d", threads);
    struct stat sb;
    if (stat(path, &sb) != 0 && errno == ENOENT)
        return hs_fail(err, HS_ERR_IO, "cannot open %s: No such file or directory; headscope never downloads: "
                       "fetch the model folder first and give its path", path);
    hs_api_model *h = calloc(1, sizeof *h);
    if (h == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    pthread_mutex_init(&h->lock, NULL);
    const hs_notes notes = {keep_note, &h->notes};
    hs_load_source src = {0};
    src.process = process;
    hs_status st = hs_load(path, HS_NEED_VOCAB, &src, &notes, &h->L, err);
    if (st == HS_OK) st = hs_pool_create(threads, &h->pool, err);
    if (st == HS_OK) {
        h->n_points = hs_hook_points(&h->L.model->cfg, NULL, 0);
        h->points = calloc((size_t)(h->n_points > 0 ? h->n_points : 1), sizeof *h->points);
        if (h->points == NULL || !make_config_json(h) || h->notes.oom)
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        else
            hs_hook_points(&h->L.model->cfg, h->points, h->n_points);
    }
    if (st != HS_OK) {
        hs_api_free(h);
        return st;
    }
    *out = h;
    return HS_OK;
}

void hs_api_free(hs_api_model *h)
{
    if (h == NULL) return;
    hs_loaded_free(&h->L);
    hs_pool_destroy(h->pool);
    hs_buf_free(&h->notes);
    cJSON_free(h->config_json);
    free(h->points);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

const char *hs_api_notes(const hs_api_model *h) { return h && h->notes.s ? h->notes.s : ""; }

const char *hs_api_config_json(const hs_api_model *h) { return h ? h->config_json : NULL; }

int hs_api_n_hook_points(const hs_api_model *h) { return h ? h->n_points : 0; }

const char *hs_api_hook_point(const hs_api_model *h, int i)
{
    return h && i >= 0 && i < h->n_points ? h->points[i].name : NULL;
}

/* ------------------------------------------------------------------------ */
/* Weights                                                                   */

int hs_api_n_tensors(const hs_api_model *h) { return h ? h->L.model->n_tensors : 0; }

const char *hs_api_tensor_name(const hs_api_model *h, int i)
{
    return h && i >= 0 && i < h->L.model->n_tensors ? h->L.model->tensors[i].name : NULL;
}

/* The table entry named name, or NULL after filling err. */
static const hs_tensor_info *find_tensor(const hs_api_model *h, const char *name, hs_error *err)
{
    if (h == NULL) {
        hs_fail(err, HS_ERR_INPUT, "no model (it was freed)");
        return NULL;
    }
    const hs_tensor_info *ti = name ? hs_model_find_tensor(h->L.model, name) : NULL;
    if (ti == NULL) hs_fail(err, HS_ERR_INPUT, "the model has no tensor '%s'", name ? name : "(null)");
    return ti;
}

hs_status hs_api_tensor_shape(const hs_api_model *h, const char *name, int *ndim, int64_t *shape,
                              hs_error *err)
{
    const hs_tensor_info *ti = find_tensor(h, name, err);
    if (ti == NULL) return HS_ERR_INPUT;
    *ndim = ti->ndim;
    for (int i = 0; i < 3; i++) shape[i] = i < ti->ndim ? ti->shape[i] : 0;
    return HS_OK;
}

hs_status hs_api_tensor_copy(const hs_api_model *h, const char *name, float *out, size_t numel,
                             hs_error *err)
{
    const hs_tensor_info *ti = find_tensor(h, name, err);
    if (ti == NULL) return HS_ERR_INPUT;
    if (numel != ti->numel)
        return hs_fail(err, HS_ERR_INPUT, "tensor '%s' has %zu values, not %zu", name, ti->numel, numel);
    const hs_model *m = h->L.model;
    const float *src = hs_model_tensor_data(m, (int)(ti - m->tensors));
    if (src) {
        memcpy(out, src, numel * sizeof *out);
        return HS_OK;
    }
    const int D = m->cfg.d_model, dh = m->cfg.d_head, H = m->cfg.n_heads, V = m->cfg.d_vocab;
    int l = -1;
    char which = 0;
    if (sscanf(name, "blocks.%d.attn.W_%c", &l, &which) == 2 && (which == 'Q' || which == 'K' || which == 'V')) {
        for (int hh = 0; hh < H; hh++) {
            int ld = 0;
            const float *w = hs_head_qkv(m, l, which == 'Q' ? 0 : which == 'K' ? 1 : 2, hh, &ld);
            if (w == NULL) return hs_fail(err, HS_ERR_INPUT, "tensor '%s' has no values", name);
            for (int d = 0; d < D; d++)
                memcpy(out + ((size_t)hh * D + d) * dh, w + (size_t)d * ld, (size_t)dh * sizeof *out);
        }
        return HS_OK;
    }
    if (strcmp(name, "unembed.W_U") == 0) {
        for (int d = 0; d < D; d++)
            for (int v = 0; v < V; v++) out[(size_t)d * V + v] = hs_unembed_at(m, d, v);
        return HS_OK;
    }
    return hs_fail(err, HS_ERR_INPUT, "tensor '%s' has no values", name);
}

/* ------------------------------------------------------------------------ */
/* Tokenizer                                                                 */

hs_status hs_api_encode(hs_api_model *h, const char *text, int prepend_bos, int **ids, size_t *n,
                        hs_error *err)
{
    *ids = NULL;
    *n = 0;
    hs_status st = lock(h, err);
    if (st != HS_OK) return st;
    hs_tokens tk = {0};
    hs_tok_set_bos(h->L.vocab, prepend_bos != 0);
    st = hs_tok_encode(h->L.vocab, text, (size_t)h->L.model->cfg.n_ctx, &tk, err);
    hs_tok_set_bos(h->L.vocab, 1);
    pthread_mutex_unlock(&h->lock);
    if (st != HS_OK) return st;
    *ids = malloc((tk.n ? tk.n : 1) * sizeof **ids);
    if (*ids == NULL) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    else memcpy(*ids, tk.ids, tk.n * sizeof **ids), *n = tk.n;
    hs_tokens_free(&tk);
    return st;
}

const char *hs_api_token_str(const hs_api_model *h, int id) { return h ? hs_tok_str(h->L.vocab, id) : NULL; }

hs_status hs_api_decode(hs_api_model *h, const int *ids, size_t n, char **text, hs_error *err)
{
    *text = NULL;
    hs_status st = lock(h, err);
    if (st != HS_OK) return st;
    st = hs_tok_decode(h->L.vocab, ids, n, text, err);
    pthread_mutex_unlock(&h->lock);
    return st;
}

const hs_tokenizer *hs_api_tokenizer(const hs_api_model *h) { return h ? h->L.vocab : NULL; }

int hs_api_bos(const hs_api_model *h) { return h ? hs_tok_bos(h->L.vocab) : -1; }

int hs_api_d_vocab(const hs_api_model *h) { return h ? h->L.model->cfg.d_vocab : 0; }

const hs_config *hs_api_config(const hs_api_model *h) { return h ? &h->L.model->cfg : NULL; }

/* ------------------------------------------------------------------------ */
/* Runs                                                                      */

hs_status hs_api_acts_create(const hs_api_model *h, int B, int T, hs_api_acts **out, hs_error *err)
{
    *out = NULL;
    if (h == NULL) return hs_fail(err, HS_ERR_INPUT, "no model (it was freed)");
    if (B < 1 || T < 1) return hs_fail(err, HS_ERR_INPUT, "a run needs at least one sequence of one token");
    if (T > h->L.model->cfg.n_ctx)
        return hs_fail(err, HS_ERR_INPUT, "%d tokens, more than the model's context of %d (n_ctx)", T,
                       h->L.model->cfg.n_ctx);
    hs_api_acts *a = calloc(1, sizeof *a);
    if (a == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    hs_status st = hs_acts_create(&h->L.model->cfg, B, T, 0, &a->a, err);
    if (st != HS_OK) {
        free(a);
        return st;
    }
    *out = a;
    return HS_OK;
}

void hs_api_acts_free(hs_api_acts *a)
{
    if (a == NULL) return;
    hs_acts_destroy(a->a);
    free(a);
}

int hs_api_cache_n(const hs_api_cache *c) { return c ? c->c.n : 0; }

const char *hs_api_cache_name(const hs_api_cache *c, int i)
{
    return c && i >= 0 && i < c->c.n ? c->c.e[i].name : NULL;
}

int hs_api_cache_ndim(const hs_api_cache *c, int i) { return c && i >= 0 && i < c->c.n ? c->c.e[i].ndim : 0; }

const int64_t *hs_api_cache_shape(const hs_api_cache *c, int i)
{
    return c && i >= 0 && i < c->c.n ? c->c.e[i].shape : NULL;
}

float *hs_api_cache_data(const hs_api_cache *c, int i) { return c && i >= 0 && i < c->c.n ? c->c.e[i].data : NULL; }

void hs_api_cache_free(hs_api_cache *c)
{
    if (c == NULL) return;
    hs_cache_free(&c->c);
    free(c);
}

hs_status hs_api_run(hs_api_model *h, hs_api_acts *acts, const int64_t *tokens, int b, int t,
                     const char *const *filters, int n_filters, const char *const *hook_patterns,
                     int n_hooks, hs_hook_fn fn, void *const *hook_ctx, hs_api_cache *reuse,
                     hs_api_cache **out, hs_error *err)
{
    *out = NULL;
    hs_status st = HS_OK;
    if (acts == NULL || acts->a == NULL) st = hs_fail(err, HS_ERR_INPUT, "no activations for the run");
    else if (b < 1 || t < 1 || b > acts->a->B || t > acts->a->T)
        st = hs_fail(err, HS_ERR_INPUT, "tokens [%d, %d] do not fit activations made for [%d, %d]", b, t,
                     acts->a->B, acts->a->T);
    else if (n_hooks > 0 && fn == NULL) st = hs_fail(err, HS_ERR_INPUT, "hooks without a function");
    if (st == HS_OK) st = lock(h, err);
    if (st != HS_OK) {
        hs_api_cache_free(reuse);
        return st;
    }
    const hs_model *m = h->L.model;
    const size_t n = (size_t)b * (size_t)t;
    int *tok = malloc(n * sizeof *tok);
    hs_api_cache *c = reuse ? reuse : calloc(1, sizeof *c);
    hs_hooks *hk = NULL;
    if (tok == NULL || c == NULL) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (size_t i = 0; st == HS_OK && i < n; i++) {
        if (tokens[i] < 0 || tokens[i] >= m->cfg.d_vocab)
            st = hs_fail(err, HS_ERR_INPUT, "token id %lld at [%zu, %zu] is outside the vocabulary [0, %d)",
                         (long long)tokens[i], i / (size_t)t, i % (size_t)t, m->cfg.d_vocab);
        else
            tok[i] = (int)tokens[i];
    }
    if (st == HS_OK && n_hooks > 0) st = hs_hooks_create(&hk, err);
    for (int i = 0; st == HS_OK && i < n_hooks; i++)
        st = hs_hooks_add(hk, hook_patterns[i], fn, hook_ctx ? hook_ctx[i] : NULL, err);
    if (st == HS_OK) {
        hs_acts_set_pool(acts->a, h->pool);
        st = hs_run_with_cache(m, acts->a, tok, b, t, n_filters > 0 ? filters : NULL, n_filters, hk, &c->c, err);
        hs_acts_set_pool(acts->a, NULL);
    }
    pthread_mutex_unlock(&h->lock);
    hs_hooks_destroy(hk);
    free(tok);
    if (st != HS_OK) {
        hs_api_cache_free(c);
        return st;
    }
    *out = c;
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* Experiments                                                               */

/* Value of option key, or NULL. */
static const char *opt(const char *const *k, const char *const *v, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (k[i] && strcmp(k[i], key) == 0) return v[i];
    return NULL;
}

/* The acts of patch's --acts ("" or NULL: every act m produces) into *acts. */
static hs_status patch_acts(const hs_model *m, const char *s, unsigned *acts, hs_error *err)
{
    *acts = 0;
    if (s == NULL || s[0] == '\0') {
        for (int a = 0; a < HS_PATCH_N; a++) *acts |= 1u << a;
        if (m->cfg.d_mlp == 0) *acts &= ~(1u << HS_PATCH_MLP_OUT);
        if (m->cfg.attn != HS_ATTN_SOFTMAX) *acts &= ~((1u << HS_PATCH_Q) | (1u << HS_PATCH_K));
        if (hs_kv_heads(&m->cfg) != m->cfg.n_heads) /* k, v per key/value head: as cmd_patch.c */
            *acts &= ~((1u << HS_PATCH_K) | (1u << HS_PATCH_V));
        return HS_OK;
    }
    char *buf = hs_strdup(s);
    if (buf == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    hs_status st = HS_OK;
    char *save = NULL;
    for (char *w = strtok_r(buf, ",", &save); st == HS_OK && w; w = strtok_r(NULL, ",", &save)) {
        const int a = hs_patch_act_parse(w);
        if (a < 0) st = hs_fail(err, HS_ERR_INPUT, "unknown act '%s' (resid_pre, attn_out, mlp_out, resid_post, "
                                "z, q, k, v, pattern)", w);
        else *acts |= 1u << a;
    }
    free(buf);
    return st;
}

/* The index of name among names[0..n), or -1 after filling err (what: the option). */
static int named(const char *what, const char *name, const char *const *names, int n, hs_error *err)
{
    for (int i = 0; i < n; i++)
        if (strcmp(name, names[i]) == 0) return i;
    hs_buf b = {0};
    for (int i = 0; i < n; i++) hs_buf_printf(&b, "%s%s", i ? ", " : "", names[i]);
    hs_fail(err, HS_ERR_INPUT, "%s takes %s, not '%s'", what, b.s ? b.s : "", name);
    hs_buf_free(&b);
    return -1;
}

/* A number option: *out <- strtod(s), HS_ERR_INPUT unless the whole of s is one. */
static hs_status number(const char *what, const char *s, double *out, hs_error *err)
{
    char *end = NULL;
    *out = strtod(s, &end);
    if (s[0] == '\0' || *end != '\0') return hs_fail(err, HS_ERR_INPUT, "%s needs a number, got '%s'", what, s);
    return HS_OK;
}

/* discover: {"report": hs_discover_json, "graph": graph.json's text (hs_graph_json_text)}. */
static hs_status run_discover(hs_api_model *h, const hs_prompts *p, const char *const *k, const char *const *v,
                              int n_opts, cJSON **j, hs_error *err)
{
    const hs_model *m = h->L.model;
    hs_discover_opts o = hs_discover_opts_default();
    const char *s;
    double x = 0;
    int i;
    if ((s = opt(k, v, n_opts, "method"))) {
        if ((i = named("method", s, hs_discover_method_names, HS_DISCOVER_N, err)) < 0) return HS_ERR_INPUT;
        o.method = (hs_discover_method)i;
    }
    if ((s = opt(k, v, n_opts, "metric"))) {
        if ((i = named("metric", s, hs_metric_names, HS_METRIC_N, err)) < 0) return HS_ERR_INPUT;
        o.metric = (hs_metric_kind)i;
    }
    if ((s = opt(k, v, n_opts, "ablation"))) {
        if ((i = named("ablation", s, hs_ablate_method_names, 3, err)) < 0) return HS_ERR_INPUT;
        o.ablation = (hs_ablate_method)i;
    }
    if ((s = opt(k, v, n_opts, "select"))) {
        if ((i = hs_select_parse(s)) < 0) return hs_fail(err, HS_ERR_INPUT, "select takes topn or greedy, not '%s'", s);
        o.select = (hs_select_kind)i;
    }
    if ((s = opt(k, v, n_opts, "top"))) {
        if (number("top", s, &x, err) != HS_OK || x < 0 || x != (double)(long)x)
            return hs_fail(err, HS_ERR_INPUT, "top needs a whole number >= 0, got '%s'", s);
        o.top_n = (long)x;
    }
    if ((s = opt(k, v, n_opts, "threshold"))) {
        if (number("threshold", s, &o.threshold, err) != HS_OK) return HS_ERR_INPUT;
    }
    if ((s = opt(k, v, n_opts, "tau"))) {
        if (number("tau", s, &o.tau, err) != HS_OK) return HS_ERR_INPUT;
    }
    if ((s = opt(k, v, n_opts, "ig_steps"))) {
        if (number("ig_steps", s, &x, err) != HS_OK || x != (double)(int)x)
            return hs_fail(err, HS_ERR_INPUT, "ig_steps needs a whole number, got '%s'", s);
        o.ig_steps = (int)x;
    }
    o.tok = h->L.vocab;
    hs_discover_report r = {0};
    hs_buf g = {0};
    hs_status st = hs_discover_run(m, h->pool, p, &o, NULL, &r, err);
    if (st == HS_OK) st = hs_graph_json_text(&r.g, &m->cfg, r.scores, r.in_circuit, &g, err);
    cJSON *rep = st == HS_OK ? hs_discover_json(&r) : NULL;
    if (st == HS_OK && (!rep || !(*j = cJSON_CreateObject()) || !cJSON_AddItemToObject(*j, "report", rep) ||
                        !cJSON_AddStringToObject(*j, "graph", g.s ? g.s : "") || g.oom)) {
        if (rep && !(*j && cJSON_GetObjectItem(*j, "report"))) cJSON_Delete(rep);
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    hs_buf_free(&g);
    hs_discover_report_free(&r);
    return st;
}

/* faithfulness: hs_faith_report_json of the graph.json at opts' "graph". */
static hs_status run_faithfulness(hs_api_model *h, const hs_prompts *p, const char *const *k, const char *const *v,
                                  int n_opts, cJSON **j, hs_error *err)
{
    hs_faith_opts o;
    memset(&o, 0, sizeof o);
    o.metric = HS_METRIC_LOGIT_DIFF;
    o.ablation = HS_ABLATE_RESAMPLE;
    const char *s;
    int i;
    if ((o.graph = opt(k, v, n_opts, "graph")) == NULL) return hs_fail(err, HS_ERR_INPUT, "faithfulness needs a graph");
    if ((s = opt(k, v, n_opts, "metric"))) {
        if ((i = named("metric", s, hs_metric_names, HS_METRIC_N, err)) < 0) return HS_ERR_INPUT;
        o.metric = (hs_metric_kind)i;
    }
    if ((s = opt(k, v, n_opts, "ablation"))) {
        if ((i = named("ablation", s, hs_ablate_method_names, 3, err)) < 0) return HS_ERR_INPUT;
        o.ablation = (hs_ablate_method)i;
    }
    if ((s = opt(k, v, n_opts, "select"))) {
        if ((i = hs_select_parse(s)) < 0) return hs_fail(err, HS_ERR_INPUT, "select takes topn or greedy, not '%s'", s);
        o.select = (hs_select_kind)i;
    }
    hs_faith_report r = {0};
    hs_status st = hs_faithfulness_run(h->L.model, h->pool, p, &o, NULL, &r, err);
    if (st == HS_OK && (*j = hs_faith_report_json(&r)) == NULL) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    hs_faith_report_free(&r);
    return st;
}

/* One experiment's JSON on prompt set p (the CLI command's run and *_json). */
static hs_status run_experiment(hs_api_model *h, const char *kind, const hs_prompts *p, const char *const *k,
                                const char *const *v, int n_opts, cJSON **j, hs_error *err)
{
    const hs_model *m = h->L.model;
    hs_status st = HS_OK;
    if (strcmp(kind, "patch") == 0) {
        const char *ms = opt(k, v, n_opts, "method"), *bs = opt(k, v, n_opts, "by");
        const int method = ms ? hs_patch_method_parse(ms) : HS_PATCH_EXACT;
        const int by = bs ? hs_patch_by_parse(bs) : HS_PATCH_BY_BOTH;
        unsigned acts = 0;
        if (method < 0) return hs_fail(err, HS_ERR_INPUT, "unknown method '%s' (exact, atp, both)", ms);
        if (by < 0) return hs_fail(err, HS_ERR_INPUT, "unknown by '%s' (head, head,position, both)", bs);
        if (by != HS_PATCH_BY_BOTH && method != HS_PATCH_EXACT)
            return hs_fail(err, HS_ERR_INPUT, "by is for method exact (AtP estimates every cell at once)");
        if ((st = patch_acts(m, opt(k, v, n_opts, "acts"), &acts, err)) != HS_OK) return st;
        hs_patch_report r = {0};
        st = hs_patch_run_by(m, h->pool, p, acts, (hs_patch_method)method, (hs_patch_by)by, &r, err);
        if (st == HS_OK && (*j = hs_patch_json(&r)) == NULL) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        hs_patch_report_free(&r);
    } else if (strcmp(kind, "ablate") == 0) {
        const char *ms = opt(k, v, n_opts, "method"), *ref_text = opt(k, v, n_opts, "ref");
        int method = ms ? -1 : HS_ABLATE_MEAN;
        for (int i = 0; ms && i < 3; i++)
            if (strcmp(ms, hs_ablate_method_names[i]) == 0) method = i;
        if (method < 0) return hs_fail(err, HS_ERR_INPUT, "method needs zero, mean or resample, got '%s'", ms);
        hs_prompts ref = {0};
        if (ref_text)
            st = hs_prompts_parse(ref_text, strlen(ref_text), "ref", h->L.vocab, m->cfg.n_ctx, HS_PROMPTS_TEXT_ONLY,
                                  &ref, err);
        hs_ablate_report r = {0};
        if (st == HS_OK) st = hs_ablate_run(m, h->pool, p, ref_text ? &ref : NULL, (hs_ablate_method)method, &r, err);
        if (st == HS_OK && (*j = hs_ablate_json(&r)) == NULL) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        hs_ablate_report_free(&r);
        hs_prompts_free(&ref);
    } else if (strcmp(kind, "dla") == 0) {
        const char *bp = opt(k, v, n_opts, "by_position");
        hs_dla_set r = {0};
        st = hs_dla_set_run(m, h->pool, p, bp && strcmp(bp, "1") == 0, &r, err);
        if (st == HS_OK && (*j = hs_dla_set_json(&r)) == NULL) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        hs_dla_set_free(&r);
    } else if (strcmp(kind, "lens") == 0) {
        hs_lens_report r = {0};
        st = hs_lens_run(m, h->pool, p, &r, err);
        if (st == HS_OK && (*j = hs_lens_json(&r, h->L.vocab)) == NULL) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        hs_lens_report_free(&r);
    } else if (strcmp(kind, "heads") == 0) {
        const char *ms = opt(k, v, n_opts, "metric"), *eb = opt(k, v, n_opts, "exclude_bos"),
                   *ec = opt(k, v, n_opts, "exclude_current");
        if (ms && strcmp(ms, "mul") != 0 && strcmp(ms, "abs") != 0)
            return hs_fail(err, HS_ERR_INPUT, "metric needs mul or abs, got '%s'", ms);
        hs_heads_report *r = calloc(1, sizeof *r);
        if (r == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
        st = hs_heads_run(m, h->L.vocab, h->pool, p, hs_wg_nouns, HS_WG_N_NOUNS, NULL,
                          ms && strcmp(ms, "abs") == 0 ? HS_DETECT_ABS : HS_DETECT_MUL, eb && strcmp(eb, "1") == 0,
                          ec && strcmp(ec, "1") == 0, r, err);
        if (st == HS_OK && (*j = hs_heads_json(r)) == NULL) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        free(r);
    } else if (strcmp(kind, "discover") == 0) {
        st = run_discover(h, p, k, v, n_opts, j, err);
    } else if (strcmp(kind, "faithfulness") == 0) {
        st = run_faithfulness(h, p, k, v, n_opts, j, err);
    } else {
        st = hs_fail(err, HS_ERR_INPUT, "unknown experiment '%s' (patch, ablate, dla, lens, heads, discover, faithfulness)", kind);
    }
    return st;
}

hs_status hs_api_experiment(hs_api_model *h, const char *kind, const char *data, const char *data_name,
                            const char *model_name, const char *const *opt_keys,
                            const char *const *opt_vals, int n_opts, char **json, hs_error *err)
{
    *json = NULL;
    if (kind == NULL || data == NULL) return hs_fail(err, HS_ERR_INPUT, "an experiment needs its kind and data");
    hs_status st = lock(h, err);
    if (st != HS_OK) return st;
    const hs_model *m = h->L.model;
    hs_prompts p = {0};
    cJSON *j = NULL;
    static const char *const known[][9] = {{"patch", "method", "by", "acts"}, {"ablate", "method", "ref"},
                                            {"dla", "by_position"}, {"lens"},
                                            {"heads", "metric", "exclude_bos", "exclude_current"},
                                            {"discover", "method", "metric", "ablation", "select", "top",
                                             "threshold", "tau", "ig_steps"},
                                            {"faithfulness", "graph", "metric", "ablation", "select"}};
    for (int i = 0; i < n_opts; i++) {
        int ok = 0;
        for (size_t q = 0; q < sizeof known / sizeof *known; q++)
            for (int c = 1; c < 9 && known[q][c] && strcmp(kind, known[q][0]) == 0; c++)
                ok |= opt_keys[i] && strcmp(opt_keys[i], known[q][c]) == 0;
        if (!ok) {
            st = hs_fail(err, HS_ERR_INPUT, "%s takes no option '%s'", kind, opt_keys[i] ? opt_keys[i] : "");
            break;
        }
    }
    if (st == HS_OK)
        st = hs_prompts_parse(data, strlen(data), data_name ? data_name : "data", h->L.vocab, m->cfg.n_ctx,
                              !strcmp(kind, "lens") || !strcmp(kind, "heads") ? HS_PROMPTS_TEXT_ONLY : 0, &p, err);
    if (st == HS_OK) st = run_experiment(h, kind, &p, opt_keys, opt_vals, n_opts, &j, err);
    /* discover's and faithfulness' --json have neither "config" nor "model" */
    const int add = strcmp(kind, "discover") != 0 && strcmp(kind, "faithfulness") != 0;
    cJSON *cfg = st == HS_OK && add ? hs_config_to_json(&m->cfg, HS_CONFIG_JSON_ALL) : NULL;
    if (st == HS_OK && add && (!cfg || !cJSON_AddItemToObject(j, "config", cfg) ||
                        !cJSON_AddStringToObject(j, "model", model_name ? model_name : ""))) {
        if (cfg && !cJSON_GetObjectItem(j, "config")) cJSON_Delete(cfg);
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    if (st == HS_OK && (*json = hs_json_print(j)) == NULL) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    pthread_mutex_unlock(&h->lock);
    cJSON_Delete(j);
    hs_prompts_free(&p);
    return st;
}
