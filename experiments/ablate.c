/*
 * experiments/ablate.c -- ablation over a prompt set (`headscope ablate`), on the
 * experiment engine: each head (blocks.l.attn.hook_z[:, :, h, :]), each
 * layer's attention (blocks.l.hook_attn_out: every head and b_O) and each MLP
 * (blocks.l.hook_mlp_out) is replaced by zero, by its position-wise mean over
 * a reference set (the prompts themselves by default), or by its value on
 * another prompt of the reference set (resample: prompt i takes reference
 * row (i + n_ref / 2) mod n_ref, never itself when n_ref > 1); the metric
 * (mean LD answer - wrong, or the mean answer logit without "wrong") and the
 * accuracy (top-1 = answer) are read at each prompt's position.
 */
#include "experiments/experiments.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *const hs_ablate_method_names[3] = {"zero", "mean", "resample"};

void hs_ablate_report_free(hs_ablate_report *r)
{
    if (r == NULL) return;
    free(r->comp);
    memset(r, 0, sizeof *r);
}

typedef struct {
    const hs_model *m;
    hs_ablate_method method;
    int n, n_pad, t, n_ref;
    const int *tok, *answer, *wrong, *pos; /* (n_pad ...) padded */
    hs_cache means;       /* mean: batch-1 entries */
    hs_cache ref;         /* resample: the reference run, n_ref rows */
    hs_ablate_comp *comp;
    double **row_m, **row_a; /* (workers) (n_pad) */
    double *clean_m, *clean_a; /* where the clean run's metric and accuracy go */
} actx;

typedef struct {
    int method, head, r0, n_ref;
    const float *src; /* mean: (T, inner); resample: the ref entry's data (n_ref rows) */
} ahook;

static int ablate_hook(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name;
    const ahook *a = ctx;
    const int64_t B = shape[0], T = shape[1];
    size_t inner = 1;
    for (int i = 2; i < ndim; i++) inner *= (size_t)shape[i];
    size_t off = 0, len = inner;
    if (a->head >= 0) { /* [B, T, H, dh] */
        len = (size_t)shape[3];
        off = (size_t)a->head * len;
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t p = 0; p < T; p++) {
            float *d = data + ((size_t)b * T + p) * inner + off;
            if (a->method == HS_ABLATE_ZERO) {
                memset(d, 0, len * sizeof(float));
            } else if (a->method == HS_ABLATE_MEAN) {
                memcpy(d, a->src + (size_t)p * inner + off, len * sizeof(float));
            } else {
                const int rr = (int)((a->r0 + b + a->n_ref / 2) % a->n_ref);
                memcpy(d, a->src + ((size_t)rr * T + p) * inner + off, len * sizeof(float));
            }
        }
    return 1;
}

typedef struct {
    actx *c;
    const hs_ablate_comp *cp;
} asweep;

static hs_status ablate_hooks(void *arg, hs_engine_worker *w, int chunk, int r0, int b)
{
    (void)chunk;
    (void)b;
    const asweep *s = arg;
    const hs_ablate_comp *cp = s->cp;
    char name[64];
    if (cp->head == -2) snprintf(name, sizeof name, "blocks.%d.hook_mlp_out", cp->layer);
    else if (cp->head == -1) snprintf(name, sizeof name, "blocks.%d.hook_attn_out", cp->layer); /* b_O in */
    else snprintf(name, sizeof name, "blocks.%d.attn.hook_z", cp->layer);
    ahook *a = malloc(sizeof *a);
    if (a == NULL) return hs_fail(&w->err, HS_ERR_NOMEM, "out of memory");
    *a = (ahook){s->c->method, cp->head >= 0 ? cp->head : -1, r0, s->c->n_ref, NULL};
    if (s->c->method != HS_ABLATE_ZERO) {
        const hs_cache_entry *e = hs_cache_get(s->c->method == HS_ABLATE_MEAN ? &s->c->means : &s->c->ref, name);
        if (e == NULL) {
            free(a);
            return hs_fail(&w->err, HS_ERR_INPUT, "ablate: the reference run has no %s", name);
        }
        a->src = e->data;
    }
    return hs_hooks_add_owned(w->hk, name, ablate_hook, a, free, &w->err);
}

static void read_rows(const actx *c, double *met, double *acc, const float *logits, int r0, int b)
{
    const int V = c->m->cfg.d_vocab;
    for (int i = 0; i < b; i++) {
        const int r = r0 + i;
        const float *x = logits + ((size_t)i * c->t + c->pos[r]) * V;
        met[r] = c->wrong ? (double)x[c->answer[r]] - (double)x[c->wrong[r]] : (double)x[c->answer[r]];
        acc[r] = hs_argmax(x, (size_t)V) == c->answer[r];
    }
}

static void ablate_rows(void *arg, hs_engine_worker *w, const float *logits, int r0, int b)
{
    const asweep *s = arg;
    read_rows(s->c, s->c->row_m[w->index], s->c->row_a[w->index], logits, r0, b);
}

static void mean2(const actx *c, const double *m, const double *a, double *om, double *oa)
{
    double sm = 0.0, sa = 0.0;
    for (int i = 0; i < c->n; i++) {
        sm += m[i];
        sa += a[i];
    }
    *om = sm / c->n;
    *oa = sa / c->n;
}

static hs_status ablate_job(hs_engine *e, hs_engine_worker *w, int j, void *arg)
{
    actx *c = arg;
    asweep s = {c, j < 0 ? NULL : &c->comp[j]};
    hs_status st = hs_engine_sweep(e, w, c->tok, c->n_pad, ablate_hooks, ablate_rows, &s);
    if (st != HS_OK) return st;
    mean2(c, c->row_m[w->index], c->row_a[w->index], &c->comp[j].metric, &c->comp[j].acc);
    return HS_OK;
}

static hs_status clean_job(hs_engine *e, hs_engine_worker *w, int j, void *arg)
{
    (void)j;
    actx *c = arg;
    asweep s = {c, NULL};
    hs_status st = hs_engine_sweep(e, w, c->tok, c->n_pad, NULL, ablate_rows, &s);
    if (st == HS_OK) mean2(c, c->row_m[w->index], c->row_a[w->index], c->clean_m, c->clean_a);
    return st;
}

hs_status hs_ablate_run(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_prompts *ref,
                        hs_ablate_method method, hs_ablate_report *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    const hs_config *cfg = &m->cfg;
    const int L = cfg->n_layers, H = cfg->n_heads, t = p->t;
    if (p->n < 1) return hs_fail(err, HS_ERR_INPUT, "ablate: the prompt set is empty");
    for (int i = 0; i < p->n; i++)
        if (p->answer[i] < 0) return hs_fail(err, HS_ERR_INPUT, "ablate: line %d has no \"answer\"", p->line[i]);
    if (ref == NULL) ref = p;
    if (ref->t != t)
        return hs_fail(err, HS_ERR_INPUT, "ablate: the reference prompts have %d tokens but the prompts %d; "
                                          "position-wise means and resampling need the same length", ref->t, t);
    actx c;
    memset(&c, 0, sizeof c);
    c.m = m;
    c.method = method;
    c.n = p->n;
    c.t = t;
    c.n_ref = ref->n;
    /* the set as the engine runs it (hs_engine_pad_set); with 16 prompts or
     * more all read at one position p, the sweeps compute the logits at p
     * alone (hs_engine.read_pos; the same values, per-row kernels) */
    int read_pos = p->n >= HS_ENGINE_MIN_TOKENS ? p->pos[0] : -1;
    for (int i = 1; i < p->n; i++)
        if (p->pos[i] != p->pos[0]) read_pos = -1;
    const int rt = read_pos >= 0 ? 1 : t;
    int np = 0;
    int *tok = hs_engine_pad_set(p->clean, p->n, t, rt, &np), *ans = hs_engine_pad_set(p->answer, p->n, 1, rt, &np);
    int *pos = hs_engine_pad_set(p->pos, p->n, 1, rt, &np);
    int *wr = p->wrong ? hs_engine_pad_set(p->wrong, p->n, 1, rt, &np) : NULL;
    c.n_pad = np;
    c.tok = tok;
    c.answer = ans;
    c.pos = pos;
    c.wrong = wr;
    out->L = L;
    out->H = H;
    out->n = p->n;
    out->n_ref = ref->n;
    out->method = method;
    out->has_wrong = p->wrong != NULL;
    out->n_comp = L * H + L + (cfg->d_mlp > 0 ? L : 0);
    out->comp = calloc((size_t)out->n_comp, sizeof *out->comp);
    c.comp = out->comp;
    hs_engine e;
    memset(&e, 0, sizeof e);
    hs_status st = HS_OK;
    if (!tok || !ans || !pos || (p->wrong && !wr) || !out->comp) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto done;
    }
    int k = 0;
    for (int l = 0; l < L; l++) {
        for (int h = 0; h < H; h++) out->comp[k++] = (hs_ablate_comp){l, h, 0, 0};
        out->comp[k++] = (hs_ablate_comp){l, -1, 0, 0};
        if (cfg->d_mlp > 0) out->comp[k++] = (hs_ablate_comp){l, -2, 0, 0};
    }
    if ((st = hs_engine_init(&e, m, pool, t, err)) != HS_OK) goto done;
    c.row_m = calloc((size_t)e.n_workers, sizeof *c.row_m);
    c.row_a = calloc((size_t)e.n_workers, sizeof *c.row_a);
    if (!c.row_m || !c.row_a) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < e.n_workers; i++) {
        c.row_m[i] = malloc((size_t)np * sizeof(double));
        c.row_a[i] = malloc((size_t)np * sizeof(double));
        if (!c.row_m[i] || !c.row_a[i]) {
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
            goto done;
        }
    }
    static const char *const filt[] = {"blocks.*.attn.hook_z", "blocks.*.hook_attn_out", "blocks.*.hook_mlp_out"};
    const int nf = cfg->d_mlp > 0 ? 3 : 2;
    if (method == HS_ABLATE_MEAN) {
        st = hs_engine_means(&e, ref->clean, (size_t)ref->n, filt, nf, &c.means, err);
    } else if (method == HS_ABLATE_RESAMPLE) {
        int rp = 0, *rtok = hs_engine_pad_rows(ref->clean, ref->n, t, &rp);
        if (rtok == NULL) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        else st = hs_engine_cache(&e, &e.w[0], rtok, ref->n, filt, nf, NULL, &c.ref);
        if (st != HS_OK && rtok) *err = e.w[0].err;
        free(rtok);
    }
    if (st != HS_OK) goto done;
    c.clean_m = &out->metric_clean;
    c.clean_a = &out->acc_clean;
    e.read_pos = read_pos; /* the reference runs above are whole caches */
    if ((st = hs_engine_for(&e, 1, clean_job, &c, err)) != HS_OK) goto done;
    e.progress = "components";
    st = hs_engine_for(&e, out->n_comp, ablate_job, &c, err);
done:
    if (c.row_m)
        for (int i = 0; i < e.n_workers; i++) free(c.row_m[i]);
    if (c.row_a)
        for (int i = 0; i < e.n_workers; i++) free(c.row_a[i]);
    free(c.row_m);
    free(c.row_a);
    hs_cache_free(&c.means);
    hs_cache_free(&c.ref);
    hs_engine_free(&e);
    free(tok);
    free(ans);
    free(pos);
    free(wr);
    if (st != HS_OK) hs_ablate_report_free(out);
    return st;
}

void hs_ablate_comp_name(const hs_ablate_comp *c, char *buf, size_t cap)
{
    if (c->head >= 0) snprintf(buf, cap, "L%dH%d", c->layer, c->head);
    else snprintf(buf, cap, "L%d_%s", c->layer, c->head == -1 ? "attn_out" : "mlp_out");
}

cJSON *hs_ablate_json(const hs_ablate_report *r)
{
    cJSON *o = cJSON_CreateObject(), *a = cJSON_CreateArray();
    int ok = o && a && cJSON_AddItemToObject(o, "components", a);
    if (!ok && a && !(o && cJSON_GetObjectItem(o, "components"))) cJSON_Delete(a);
    ok = ok && cJSON_AddStringToObject(o, "method", hs_ablate_method_names[r->method]) &&
         cJSON_AddStringToObject(o, "metric", r->has_wrong ? "mean logit(answer) - logit(wrong)" : "mean logit(answer)") &&
         cJSON_AddNumberToObject(o, "prompts", r->n) && cJSON_AddNumberToObject(o, "reference_prompts", r->n_ref) &&
         cJSON_AddNumberToObject(o, "metric_clean", r->metric_clean) &&
         cJSON_AddNumberToObject(o, "accuracy_clean", r->acc_clean);
    for (int k = 0; k < r->n_comp && ok; k++) {
        const hs_ablate_comp *c = &r->comp[k];
        char name[32];
        hs_ablate_comp_name(c, name, sizeof name);
        cJSON *x = cJSON_CreateObject();
        ok = x && cJSON_AddItemToArray(a, x) && cJSON_AddStringToObject(x, "component", name) &&
             cJSON_AddNumberToObject(x, "layer", c->layer) &&
             (c->head >= 0 ? cJSON_AddNumberToObject(x, "head", c->head) != NULL
                           : cJSON_AddStringToObject(x, "part", c->head == -1 ? "attn" : "mlp") != NULL) &&
             cJSON_AddNumberToObject(x, "metric", c->metric) &&
             cJSON_AddNumberToObject(x, "metric_change", c->metric - r->metric_clean) &&
             cJSON_AddNumberToObject(x, "accuracy", c->acc) &&
             cJSON_AddNumberToObject(x, "accuracy_change", c->acc - r->acc_clean);
    }
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

void hs_ablate_summary(const hs_ablate_report *r, hs_buf *b)
{
    char m[HS_FIXED_BUF];
    hs_buf_printf(b, "ablate (%s%s): %d prompts; metric = %s; clean %s, accuracy %.1f%%\n",
                  hs_ablate_method_names[r->method],
                  r->method == HS_ABLATE_ZERO ? "" : r->n_ref == r->n ? ", reference: the prompts" : ", reference set",
                  r->n, r->has_wrong ? "mean logit(answer) - logit(wrong)" : "mean logit(answer)",
                  hs_fmt_fixed(m, r->metric_clean, 3, 1), 100 * r->acc_clean);
    hs_buf_printf(b, "%-12s %9s %9s %9s %9s\n", "ablated", "metric", "change", "accuracy", "change");
    for (int k = 0; k < r->n_comp; k++) {
        const hs_ablate_comp *c = &r->comp[k];
        char name[32];
        hs_ablate_comp_name(c, name, sizeof name);
        hs_buf_printf(b, "%-12s ", name);
        hs_buf_fixed(b, c->metric, 9, 3, 1);
        hs_buf_puts(b, " ");
        hs_buf_fixed(b, c->metric - r->metric_clean, 9, 3, 1);
        hs_buf_printf(b, " %8.1f%% ", 100 * c->acc);
        hs_buf_fixed(b, 100 * (c->acc - r->acc_clean), 8, 1, 1);
        hs_buf_puts(b, "\n");
    }
}
