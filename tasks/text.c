/*
 * tasks/text.c -- the text task (tasks/text.h): a corpus encoded with
 * a byte-level BPE, split per file into a training stream and a held-out
 * stream, random training windows of n_ctx tokens, held-out perplexity over
 * fixed windows, the unigram baseline, the `task` metadata, and sampling
 * (hs_text_generate). It configures the engine (hs_forward, hs_train through
 * tasks/train_run.c); it computes nothing of the model itself.
 */
#include "tasks/text.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

hs_text_params hs_text_params_default(void)
{
    hs_text_params p = {128, 0.1, 1024, 0.0};
    return p;
}

void hs_text_destroy(hs_text *t)
{
    if (t == NULL) return;
    hs_tokenizer_destroy(t->tok);
    free(t->tok_json);
    free(t->train);
    free(t->heldout);
    free(t);
}

static uint64_t fnv1a64(uint64_t h, const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

/* With probability P, the T tokens w hold a span of L of themselves again
 * later (tasks.h's text section: the draws and their order). */
static void repeat_span(int *w, int T, double P, hs_task_rng *r)
{
    if ((double)(hs_task_rng_next(r) >> 11) * (1.0 / 9007199254740992.0) >= P) return;
    const int lo = T / 8 > 2 ? T / 8 : 2, hi = T / 4 > 2 ? T / 4 : 2;
    if (T < 2 * lo) return;
    int L = lo + (int)hs_task_rng_below(r, (uint64_t)(hi - lo + 1));
    if (2 * L > T) L = T / 2;
    const int a = (int)hs_task_rng_below(r, (uint64_t)(T - 2 * L + 1));
    const int b = a + L + (int)hs_task_rng_below(r, (uint64_t)(T - L - (a + L) + 1));
    memcpy(w + b, w + a, (size_t)L * sizeof *w); /* b >= a + L: no overlap */
}

/* The unigram model of the training stream (add-one smoothing over the V
 * tokens) scored on the held-out windows' targets: its perplexity. */
static double unigram_perplexity(const hs_text *t)
{
    const size_t V = t->tok->n;
    double *c = calloc(V, sizeof *c);
    if (!c) return NAN;
    for (size_t i = 0; i < t->n_train; i++) c[t->train[i]] += 1.0;
    const double tot = (double)t->n_train + (double)V;
    const size_t T = (size_t)t->p.n_ctx, W = hs_text_windows(t, t->p.n_ctx);
    double nll = 0.0;
    for (size_t w = 0; w < W; w++)
        for (size_t i = 1; i <= T; i++) nll -= log((c[t->heldout[w * T + i]] + 1.0) / tot);
    free(c);
    return W ? exp(nll / (double)(W * T)) : NAN;
}

hs_status hs_text_create(const hs_corpus *c, const char *tok_json, size_t tok_json_len,
                         const hs_text_params *p, hs_text **out, hs_error *err)
{
    *out = NULL;
    if (p->n_ctx < 1 || p->n_ctx > 65536)
        return hs_fail(err, HS_ERR_CONFIG, "text: n_ctx %d is not in [1, 65536]", p->n_ctx);
    if (!(p->val_fraction >= 0.01 && p->val_fraction <= 0.5))
        return hs_fail(err, HS_ERR_INPUT, "--val-fraction %g is not in [0.01, 0.5]",
                       p->val_fraction);
    if (!(p->repeat >= 0.0 && p->repeat <= 1.0))
        return hs_fail(err, HS_ERR_INPUT, "--repeat %g is not in [0, 1]", p->repeat);
    hs_text *t = calloc(1, sizeof *t);
    if (!t) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    t->p = *p;
    t->tok_json = malloc(tok_json_len + 1);
    hs_status st = t->tok_json ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (st == HS_OK) {
        memcpy(t->tok_json, tok_json, tok_json_len);
        t->tok_json[tok_json_len] = '\0';
        st = hs_tokenizer_from_hf_json(tok_json, tok_json_len, "the tokenizer", &t->tok, err);
    }
    if (st == HS_OK && t->tok->kind != HS_TOKENIZER_BPE)
        st = hs_fail(err, HS_ERR_INPUT, "the text task needs a byte-level BPE");
    if (st == HS_OK) hs_tok_set_bos(t->tok, 0); /* a stream of text: no BOS per file */
    size_t cap_t = 0, cap_h = 0;
    t->corpus_hash = 1469598103934665603ull;
    for (size_t f = 0; f < c->n && st == HS_OK; f++) {
        const size_t len = strlen((const char *)c->text[f]);
        if (len != c->len[f]) {
            st = hs_fail(err, HS_ERR_INPUT, "corpus file %s holds a NUL byte at byte %zu",
                         c->paths[f], len);
            break;
        }
        hs_tokens tk = {0};
        st = hs_tok_encode(t->tok, (const char *)c->text[f], 0, &tk, err);
        if (st != HS_OK) break;
        const size_t nh = (size_t)floor((double)tk.n * p->val_fraction), nt = tk.n - nh;
        int *a = realloc(t->train, (cap_t + nt + 1) * sizeof *a);
        if (a) t->train = a;
        int *b = a ? realloc(t->heldout, (cap_h + nh + 1) * sizeof *b) : NULL;
        if (b) t->heldout = b;
        if (!a || !b) {
            hs_tokens_free(&tk);
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory encoding the corpus");
            break;
        }
        memcpy(t->train + cap_t, tk.ids, nt * sizeof *tk.ids);
        memcpy(t->heldout + cap_h, tk.ids + nt, nh * sizeof *tk.ids);
        cap_t += nt;
        cap_h += nh;
        hs_tokens_free(&tk);
        t->corpus_hash = fnv1a64(t->corpus_hash, c->text[f], c->len[f]);
        t->bytes += c->len[f];
    }
    t->n_train = cap_t;
    t->n_heldout = cap_h;
    t->n_files = c->n;
    if (st == HS_OK && t->n_train < (size_t)p->n_ctx + 2)
        st = hs_fail(err, HS_ERR_INPUT, "the corpus's training part has %zu tokens, too few for "
                     "windows of %d", t->n_train, p->n_ctx);
    if (st == HS_OK && hs_text_windows(t, p->n_ctx) == 0)
        st = hs_fail(err, HS_ERR_INPUT, "the corpus's held-out part (--val-fraction %g) has %zu "
                     "tokens, too few for one window of %d", p->val_fraction, t->n_heldout,
                     p->n_ctx);
    if (st == HS_OK && p->repeat > 0.0) {
        hs_task_rng r;
        hs_task_rng_seed(&r, HS_TEXT_REPEAT_SEED);
        const size_t W = hs_text_windows(t, p->n_ctx);
        for (size_t w = 0; w < W; w++)
            repeat_span(t->heldout + w * (size_t)p->n_ctx, p->n_ctx, p->repeat, &r);
    }
    if (st == HS_OK) t->unigram_ppl = unigram_perplexity(t);
    if (st != HS_OK) {
        hs_text_destroy(t);
        return st;
    }
    *out = t;
    return HS_OK;
}

size_t hs_text_windows(const hs_text *t, int T)
{
    return T > 0 && t->n_heldout > 1 ? (t->n_heldout - 1) / (size_t)T : 0;
}

void hs_text_batch(const hs_text *t, hs_task_rng *r, size_t B, int T, int *tokens, int *targets)
{
    const uint64_t span = (uint64_t)(t->n_train - (size_t)T);
    for (size_t b = 0; b < B; b++) {
        const size_t s = (size_t)hs_task_rng_below(r, span);
        memcpy(tokens + b * (size_t)T, t->train + s, (size_t)T * sizeof *tokens);
        memcpy(targets + b * (size_t)T, t->train + s + 1, (size_t)T * sizeof *targets);
        if (t->p.repeat > 0.0) {
            int *w = tokens + b * (size_t)T;
            repeat_span(w, T, t->p.repeat, r);
            memcpy(targets + b * (size_t)T, w + 1, (size_t)(T - 1) * sizeof *targets);
        }
    }
}

hs_status hs_text_perplexity(const hs_model *m, const int *stream, size_t n, int T, int threads,
                             hs_text_score *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    const int V = m->cfg.d_vocab;
    if (T < 1 || T > m->cfg.n_ctx)
        return hs_fail(err, HS_ERR_INPUT, "--n-ctx %d: the model has positions 0..%d (n_ctx %d); "
                       "its %s positions cannot go further", T, m->cfg.n_ctx - 1, m->cfg.n_ctx,
                       hs_pos_name(m->cfg.pos));
    const size_t W = n > 1 ? (n - 1) / (size_t)T : 0;
    if (W == 0)
        return hs_fail(err, HS_ERR_INPUT, "%zu tokens: too few for one window of %d", n, T);
    for (size_t i = 0; i < W * (size_t)T + 1; i++)
        if (stream[i] < 0 || stream[i] >= V)
            return hs_fail(err, HS_ERR_CONFIG, "token id %d is outside the model's vocabulary of "
                           "%d", stream[i], V);
    const int chunk = 16;
    hs_acts *acts = NULL;
    int *buf = malloc((size_t)chunk * (size_t)T * sizeof *buf);
    double *pos_nll = calloc((size_t)T, sizeof *pos_nll); /* (T) summed over windows */
    hs_status s = buf && pos_nll ? hs_acts_create(&m->cfg, chunk, T, 0, &acts, err)
                      : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (s == HS_OK && threads != 1) s = hs_acts_set_threads(acts, threads, err);
    double nll = 0.0;
    for (size_t w0 = 0; w0 < W && s == HS_OK; w0 += (size_t)chunk) {
        const int b = (int)(W - w0 < (size_t)chunk ? W - w0 : (size_t)chunk);
        for (int r = 0; r < b; r++)
            memcpy(buf + (size_t)r * T, stream + (w0 + (size_t)r) * (size_t)T,
                   (size_t)T * sizeof *buf);
        s = hs_forward(m, acts, buf, b, T, NULL, err);
        for (int r = 0; r < b && s == HS_OK; r++) {
            const int *tgt = stream + (w0 + (size_t)r) * (size_t)T + 1;
            for (int i = 0; i < T; i++) {
                const float *lg = acts->logits + ((size_t)r * T + (size_t)i) * (size_t)V;
                float mx = lg[0];
                for (int v = 1; v < V; v++)
                    if (lg[v] > mx) mx = lg[v];
                if (!isfinite(mx)) {
                    s = hs_fail(err, HS_ERR_NUMERIC, "text: a logit is not finite (window %zu, "
                                "position %d)", w0 + (size_t)r, i);
                    break;
                }
                double z = 0.0;
                for (int v = 0; v < V; v++) z += exp((double)lg[v] - (double)mx);
                const double e = log(z) - ((double)lg[tgt[i]] - (double)mx);
                nll += e;
                pos_nll[i] += e;
            }
        }
    }
    hs_acts_destroy(acts);
    free(buf);
    if (s != HS_OK) {
        free(pos_nll);
        return s;
    }
    out->windows = W;
    out->tokens = W * (size_t)T;
    out->loss = nll / (double)out->tokens;
    out->perplexity = exp(out->loss);
    out->icl_early = T / 10;
    out->icl_late = T - 1;
    out->icl_score = T >= 2 ? (pos_nll[T - 1] - pos_nll[T / 10]) / (double)W : NAN;
    free(pos_nll);
    return HS_OK;
}

hs_status hs_text_task_json(const hs_text *t, char **json, hs_error *err)
{
    *json = NULL;
    cJSON *o = cJSON_CreateObject();
    char h[24];
    snprintf(h, sizeof h, "%016llx", (unsigned long long)t->corpus_hash);
    if (!o) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    cJSON_AddStringToObject(o, "name", "text");
    cJSON_AddNumberToObject(o, "n_ctx", t->p.n_ctx);
    cJSON_AddNumberToObject(o, "val_fraction", t->p.val_fraction);
    if (t->p.repeat > 0.0) cJSON_AddNumberToObject(o, "repeat", t->p.repeat);
    cJSON_AddStringToObject(o, "split", "the last val_fraction of each file's tokens is held out");
    cJSON_AddNumberToObject(o, "files", (double)t->n_files);
    cJSON_AddNumberToObject(o, "bytes", (double)t->bytes);
    cJSON_AddStringToObject(o, "corpus_fnv1a64", h);
    cJSON_AddNumberToObject(o, "train_tokens", (double)t->n_train);
    cJSON_AddNumberToObject(o, "heldout_tokens", (double)t->n_heldout);
    if (isfinite(t->unigram_ppl))
        cJSON_AddNumberToObject(o, "unigram_perplexity", hs_f32_shortest((float)t->unigram_ppl));
    *json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return *json ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
}

hs_status hs_text_params_from_json(const char *json, hs_text_params *p, hs_error *err)
{
    *p = hs_text_params_default();
    cJSON *o = json ? cJSON_Parse(json) : NULL;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
    const cJSON *T = cJSON_GetObjectItemCaseSensitive(o, "n_ctx");
    const cJSON *vf = cJSON_GetObjectItemCaseSensitive(o, "val_fraction");
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(o, "repeat");
    const int ok = cJSON_IsString(name) && strcmp(name->valuestring, "text") == 0 &&
                   cJSON_IsNumber(T) && T->valuedouble >= 1 && T->valuedouble <= 65536 &&
                   cJSON_IsNumber(vf) && vf->valuedouble >= 0.01 && vf->valuedouble <= 0.5 &&
                   (rp == NULL || (cJSON_IsNumber(rp) && rp->valuedouble >= 0.0 &&
                                   rp->valuedouble <= 1.0));
    if (ok) {
        p->n_ctx = (int)T->valuedouble;
        p->val_fraction = vf->valuedouble;
        p->repeat = rp ? rp->valuedouble : 0.0;
    }
    cJSON_Delete(o);
    return ok ? HS_OK : hs_fail(err, HS_ERR_FORMAT, "the text task's metadata lacks n_ctx or "
                                "val_fraction, or its repeat is not in [0, 1]");
}

hs_status hs_text_eval(const hs_model *m, const char *tok_json, const hs_text_params *trained,
                       const char *const *paths, size_t n_paths, int heldout, int T, int threads,
                       hs_text_eval_result *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    if (T <= 0) T = trained->n_ctx;
    if (T > m->cfg.n_ctx)
        return hs_fail(err, HS_ERR_INPUT, "--n-ctx %d: the model has positions 0..%d (n_ctx %d); "
                       "its %s positions cannot go further", T, m->cfg.n_ctx - 1, m->cfg.n_ctx,
                       hs_pos_name(m->cfg.pos));
    if (tok_json == NULL) return hs_fail(err, HS_ERR_INPUT, "the model carries no tokenizer");
    hs_corpus c;
    hs_status s = hs_corpus_read(paths, n_paths, &c, err);
    if (s != HS_OK) return s;
    hs_text_params p = *trained;
    p.n_ctx = T;
    hs_text *t = NULL;
    s = hs_text_create(&c, tok_json, strlen(tok_json), &p, &t, err);
    if (s == HS_OK && (int)t->tok->n != m->cfg.d_vocab)
        s = hs_fail(err, HS_ERR_CONFIG, "the model's tokenizer has %zu tokens but d_vocab is %d",
                    t->tok->n, m->cfg.d_vocab);
    if (s == HS_OK)
        s = hs_text_perplexity(m, heldout ? t->heldout : t->train, heldout ? t->n_heldout : t->n_train,
                               T, threads, &out->score, err);
    if (s == HS_OK) {
        out->unigram_ppl = t->unigram_ppl;
        out->n_ctx = T;
        out->same_corpus_hash = t->corpus_hash;
    }
    hs_text_destroy(t);
    hs_corpus_free(&c);
    return s;
}

/* ------------------------------------------------------------------------ */
/* Sampling                                                                  */

hs_status hs_text_generate(const hs_model *m, const int *prompt, size_t n_prompt,
                           const hs_gen_opts *o, int **ids, size_t *n_out, hs_error *err)
{
    *ids = NULL;
    *n_out = 0;
    const int V = m->cfg.d_vocab, C = m->cfg.n_ctx;
    if (n_prompt == 0) return hs_fail(err, HS_ERR_INPUT, "the prompt is empty");
    if (o->max_new < 0) return hs_fail(err, HS_ERR_INPUT, "--max-new-tokens is negative");
    if (!(o->temperature >= 0.0) || o->top_k < 0)
        return hs_fail(err, HS_ERR_INPUT, "--temperature and --top-k must be >= 0");
    const size_t total = n_prompt + (size_t)o->max_new;
    int *seq = malloc(total * sizeof *seq);
    float *p = malloc((size_t)V * sizeof *p);
    int *order = malloc((size_t)V * sizeof *order);
    hs_acts *acts = NULL;
    hs_status s = seq && p && order ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (s == HS_OK) s = hs_acts_create(&m->cfg, 1, C, 0, &acts, err);
    hs_task_rng rng;
    hs_task_rng_seed(&rng, o->seed);
    if (s == HS_OK) memcpy(seq, prompt, n_prompt * sizeof *seq);
    size_t n = n_prompt;
    for (int k = 0; k < o->max_new && s == HS_OK; k++) {
        const size_t start = n > (size_t)C ? n - (size_t)C : 0;
        const int T = (int)(n - start);
        s = hs_forward(m, acts, seq + start, 1, T, NULL, err);
        if (s != HS_OK) break;
        const float *lg = acts->logits + (size_t)(T - 1) * (size_t)V;
        int next;
        if (o->temperature == 0.0 || o->top_k == 1) {
            next = hs_argmax(lg, (size_t)V);
        } else {
            /* the top_k largest logits (all with 0), ties to the lower id */
            for (int v = 0; v < V; v++) order[v] = v;
            const int K = o->top_k > 0 && o->top_k < V ? o->top_k : V;
            for (int i = 0; i < K; i++) { /* partial selection sort: K is small */
                int best = i;
                for (int j = i + 1; j < V; j++)
                    if (lg[order[j]] > lg[order[best]] ||
                        (lg[order[j]] == lg[order[best]] && order[j] < order[best]))
                        best = j;
                const int tmp = order[i];
                order[i] = order[best];
                order[best] = tmp;
                if (K == V && i > 0) break; /* all of them: no order needed past the max */
            }
            const double mx = lg[order[0]];
            double z = 0.0;
            for (int i = 0; i < K; i++) z += (p[i] = (float)exp((lg[order[i]] - mx) / o->temperature));
            const double u = (double)(hs_task_rng_next(&rng) >> 11) * (1.0 / 9007199254740992.0) * z;
            double acc = 0.0;
            next = order[K - 1];
            for (int i = 0; i < K; i++) {
                acc += p[i];
                if (u < acc) {
                    next = order[i];
                    break;
                }
            }
        }
        seq[n++] = next;
    }
    hs_acts_destroy(acts);
    free(p);
    free(order);
    if (s != HS_OK) {
        free(seq);
        return s;
    }
    *ids = seq;
    *n_out = n;
    return HS_OK;
}
