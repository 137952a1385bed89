/*
 * tasks/circuit.c -- the two-step referent-circuit check of DESIGN.md ("The
 * two-step referent circuit"; `headscope circuit`): the Winograd prompt sets
 * (matched crosser/crossed held-out pairs, the mean-ablation reference) and
 * the evidence and verdict rules over the experiment engine (probe.h,
 * section 8): the layer-0 score invariant, per-head attention / DLA / copying
 * / patching / ablation evidence on the held-out split, composition and path
 * patching into the decision heads, and the verdicts. The report's JSON and
 * text summary are in tasks/circuit_report.c. See tasks.h for what is
 * computed and the formulas' sources (CIRCUITS.md sections 3-6).
 *
 * Rows: 0..np-1 are the crosser sentences, np..2np-1 their crossed partners
 * in the same order, T = 15 tokens.
 *
 * Phases of independent engine jobs (chunks, workers and the bit-identity
 * for any thread count are the engine's):
 *   A: the clean run, the corrupted run (cached), then the position-wise
 *      means of the mean-ablation reference (hs_engine_means);
 *   B: every ablation and activation patch (they need A's caches and means);
 *   C: path patching (it needs the decision heads found from B).
 * A job writes only its own output slots; per-row results go to the
 * worker's row buffers and are summed in row order.
 */
#include "tasks/tasks.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define T_RUN HS_CIRC_T  /* positions 0..14 */
#define Q HS_WG_POS_QUERY

hs_circuit_opts hs_circuit_opts_default(void)
{
    hs_circuit_opts o;
    memset(&o, 0, sizeof o);
    o.push_attn = 0.25;
    o.push_dla = 1.0;
    o.step1_drop = 0.25;
    o.decide_patch = 0.1;
    o.min_ld_gap = 1.0;
    o.decide_drop = 0.25;
    o.route_attn = 0.25;
    o.route_dla = 1.0;
    o.adj_key_diff = 0.25;
    o.ablate_ref = HS_SPLIT_TRAIN;
    o.comp_draws = HS_COMP_DRAWS;
    o.comp_seed = 0;
    return o;
}

void hs_circuit_report_free(hs_circuit_report *r)
{
    if (r == NULL) return;
    free(r->heads);
    free(r->attn_rows);
    free(r->attn_rows_avg);
    free(r->acc_block_attn);
    free(r->acc_block_mlp);
    free(r->patch_layer);
    free(r->pushers);
    free(r->decision);
    free(r->path);
    free(r->route);
    free(r->step1_reason);
    free(r->step2_reason);
    free(r->route_reason);
    hs_comp_scores_free(&r->comp);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------------ */
/* Run context                                                               */

typedef struct {
    const hs_model *m;
    const hs_winograd *t;
    int L, H, D, V;
    int n, np;                /* rows; matched pairs (n = 2 np) */
    const hs_wg_example **ex; /* (n) clean order */
    int *tok_clean, *tok_corr; /* (n, T_RUN) */
    int *ref_clean, *ref_corr; /* (n) vocab ids: the clean / corrupted sentence's referent */
    int n_chunks;             /* hs_engine_chunks(n) */
    hs_cache clean, corr;     /* caches of the clean / corrupted runs, all n rows */
    hs_cache *clean_v, *corr_v; /* (n_chunks) borrowed views of each chunk's rows */
    hs_cache means;           /* batch-1 "reference" cache: position-wise means */
    const float **mlp_mean;   /* (L) (T_RUN, D) or NULL: data of entries of `means` */
    hs_pool *pool;
    hs_engine eng;
    int **pred;               /* (workers) (n) argmax at 14 per held-out row, -1 on NaN */
    double **ld;              /* (workers) (n) logit(ref_clean) - logit(ref_corr) at 14 per row */
} cctx;

static void cctx_free(cctx *c)
{
    free(c->ex);
    free(c->tok_clean);
    free(c->tok_corr);
    free(c->ref_clean);
    free(c->ref_corr);
    hs_engine_views_free(c->clean_v, c->n_chunks);
    hs_engine_views_free(c->corr_v, c->n_chunks);
    hs_cache_free(&c->clean);
    hs_cache_free(&c->corr);
    hs_cache_free(&c->means);
    free(c->mlp_mean);
    for (int i = 0; i < c->eng.n_workers; i++) {
        if (c->pred) free(c->pred[i]);
        if (c->ld) free(c->ld[i]);
    }
    free(c->pred);
    free(c->ld);
    hs_engine_free(&c->eng);
    hs_pool_destroy(c->pool);
    memset(c, 0, sizeof *c);
}

static hs_status workers_init(cctx *c, int threads, hs_error *err)
{
    hs_status st = hs_pool_create(threads, &c->pool, err);
    if (st == HS_OK) st = hs_engine_init(&c->eng, c->m, c->pool, T_RUN, err);
    if (st == HS_OK) c->eng.read_pos = Q; /* every sweep reads the logits at Q alone (rows_of) */
    if (st != HS_OK) return st;
    const int nw = c->eng.n_workers;
    c->pred = calloc((size_t)nw, sizeof *c->pred);
    c->ld = calloc((size_t)nw, sizeof *c->ld);
    if (!c->pred || !c->ld) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int i = 0; i < nw; i++) {
        c->pred[i] = malloc((size_t)c->n * sizeof **c->pred);
        c->ld[i] = malloc((size_t)c->n * sizeof **c->ld);
        if (!c->pred[i] || !c->ld[i]) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    return HS_OK;
}

/* Builds the matched held-out rows. */
static hs_status cctx_init(cctx *c, const hs_model *m, const hs_winograd *t, hs_error *err)
{
    memset(c, 0, sizeof *c);
    c->m = m;
    c->t = t;
    c->L = m->cfg.n_layers;
    c->H = m->cfg.n_heads;
    c->D = m->cfg.d_model;
    c->V = m->cfg.d_vocab;
    size_t nh;
    const hs_wg_example *ho = hs_winograd_examples(t, HS_SPLIT_HELDOUT, &nh);
    if (nh == 0 || nh > 100000) return hs_fail(err, HS_ERR_INPUT, "circuit: the held-out split is empty");
    c->ex = calloc(nh, sizeof *c->ex);
    if (c->ex == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    int np = 0;
    for (size_t i = 0; i < nh; i++) {
        if (ho[i].role != HS_ROLE_CROSSER) continue;
        const hs_wg_example *partner = NULL;
        for (size_t j = 0; j < nh && partner == NULL; j++)
            if (ho[j].x == ho[i].x && ho[j].y == ho[i].y && ho[j].adj == ho[i].adj + HS_WG_N_CROSSER)
                partner = &ho[j];
        if (partner == NULL)
            return hs_fail(err, HS_ERR_INPUT,
                           "circuit: held-out sentence (%s, %s, %s) has no crossed partner with the same nouns",
                           hs_wg_nouns[ho[i].x], hs_wg_nouns[ho[i].y], hs_wg_adjectives[ho[i].adj]);
        c->ex[np++] = &ho[i];
    }
    if (2 * (size_t)np != nh)
        return hs_fail(err, HS_ERR_INPUT,
                       "circuit: the held-out split has %zu sentences, not matched crosser/crossed pairs",
                       nh);
    for (int i = 0; i < np; i++)
        for (size_t j = 0; j < nh; j++)
            if (ho[j].x == c->ex[i]->x && ho[j].y == c->ex[i]->y &&
                ho[j].adj == c->ex[i]->adj + HS_WG_N_CROSSER)
                c->ex[np + i] = &ho[j];
    c->np = np;
    c->n = 2 * np;
    const int n = c->n;
    c->tok_clean = malloc((size_t)n * T_RUN * sizeof(int));
    c->tok_corr = malloc((size_t)n * T_RUN * sizeof(int));
    c->ref_clean = malloc((size_t)n * sizeof(int));
    c->ref_corr = malloc((size_t)n * sizeof(int));
    if (!c->tok_clean || !c->tok_corr || !c->ref_clean || !c->ref_corr)
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        const int pi = i < np ? i + np : i - np; /* the partner row */
        memcpy(c->tok_clean + (size_t)i * T_RUN, c->ex[i]->tokens, T_RUN * sizeof(int));
        memcpy(c->tok_corr + (size_t)i * T_RUN, c->ex[pi]->tokens, T_RUN * sizeof(int));
        c->ref_clean[i] = c->ex[i]->ref_id;
        c->ref_corr[i] = c->ex[pi]->ref_id;
    }
    c->n_chunks = hs_engine_chunks(n);
    return HS_OK;
}

/* Per-row results of logits (b, T_RUN, V) of held-out rows r0..r0+b-1: the
 * argmax at 14 into pred[r0..], the LD at 14 into ld[r0..] (either may be NULL). */
static void rows_of(const cctx *c, const float *logits, int r0, int b, int *pred, double *ld)
{
    for (int i = 0; i < b; i++) {
        const float *row = logits + ((size_t)i * T_RUN + Q) * c->V;
        if (pred) pred[r0 + i] = hs_argmax(row, (size_t)c->V);
        if (ld) ld[r0 + i] = (double)row[c->ref_clean[r0 + i]] - (double)row[c->ref_corr[r0 + i]];
    }
}

/* Accuracy [g] and other-noun rate [g] of the argmaxes at 14 on the clean rows. */
static hs_status score_preds(const cctx *c, const int *pred, double acc[3], double other[3],
                             hs_error *err)
{
    size_t ok[3] = {0, 0, 0}, oth[3] = {0, 0, 0}, cnt[3] = {0, 0, 0};
    for (int i = 0; i < c->n; i++) {
        int p = pred[i];
        if (p < 0) return hs_fail(err, HS_ERR_NUMERIC, "circuit: NaN logit at position %d", Q);
        int g = i < c->np ? HS_CIRC_CROSSER : HS_CIRC_CROSSED;
        int good = p == c->ex[i]->ref_id, bad = p == c->ex[i]->other_id;
        ok[g] += (size_t)good;
        oth[g] += (size_t)bad;
        cnt[g]++;
        ok[HS_CIRC_ALL] += (size_t)good;
        oth[HS_CIRC_ALL] += (size_t)bad;
        cnt[HS_CIRC_ALL]++;
    }
    for (int g = 0; g < 3; g++) {
        acc[g] = cnt[g] ? (double)ok[g] / (double)cnt[g] : 0.0;
        if (other) other[g] = cnt[g] ? (double)oth[g] / (double)cnt[g] : 0.0;
    }
    return HS_OK;
}

/* Mean LD [HS_CIRC_PATCH_*] of the per-row LDs, summed in row order. */
static void ld_sum(const cctx *c, const double *d, double ld[3])
{
    double s[2] = {0.0, 0.0}, all = 0.0;
    for (int i = 0; i < c->n; i++) {
        s[i < c->np ? 0 : 1] += d[i];
        all += d[i];
    }
    ld[HS_CIRC_PATCH_CROSSER_TO_CROSSED] = s[0] / c->np;
    ld[HS_CIRC_PATCH_CROSSED_TO_CROSSER] = s[1] / c->np;
    ld[HS_CIRC_PATCH_BOTH] = all / c->n;
}

/* ------------------------------------------------------------------------ */
/* Phase A: the clean and corrupted caches, the mean-ablation reference      */

static hs_status phase_a_job(hs_engine *e, hs_engine_worker *w, int j, void *arg)
{
    cctx *c = arg;
    if (j == 0) {
        static const char *const filt[] = {
            "hook_embed", "?hook_pos_embed", "blocks.*.hook_resid_pre", "?blocks.*.ln1.hook_scale",
            "?blocks.*.attn.hook_attn_scores", "blocks.*.attn.hook_pattern", "blocks.*.attn.hook_z",
            "?blocks.*.hook_mlp_out", "?ln_final.hook_scale", "logits"};
        return hs_engine_cache(e, w, c->tok_clean, c->n, filt, 10, NULL, &c->clean);
    }
    static const char *const filt[] = {"blocks.*.hook_resid_pre", "?blocks.*.ln1.hook_scale",
                                       "blocks.*.attn.hook_z", "logits"};
    return hs_engine_cache(e, w, c->tok_corr, c->n, filt, 4, NULL, &c->corr);
}

/* Phase A; then the position-wise means of blocks.l.attn.hook_z and
 * blocks.l.hook_mlp_out over the reference examples into c->means (entries
 * of batch 1), and the chunk views of the caches. */
static hs_status run_phase_a(cctx *c, const hs_wg_example *ex, size_t n_ex, hs_error *err)
{
    hs_status st = hs_engine_for(&c->eng, 2, phase_a_job, c, err);
    if (st != HS_OK) return st;
    if (n_ex > (size_t)HS_ENGINE_CHUNK * 1000000)
        return hs_fail(err, HS_ERR_INPUT, "circuit: the reference split is too large");
    int *tok = malloc(n_ex * T_RUN * sizeof(int));
    if (tok == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n_ex; i++) memcpy(tok + i * T_RUN, ex[i].tokens, T_RUN * sizeof(int));
    static const char *const filt[] = {"blocks.*.attn.hook_z", "blocks.*.hook_mlp_out"};
    st = hs_engine_means(&c->eng, tok, n_ex, filt, c->m->cfg.d_mlp > 0 ? 2 : 1, &c->means, err);
    free(tok);
    if (st != HS_OK) return st;
    c->mlp_mean = calloc((size_t)c->L, sizeof *c->mlp_mean);
    if (c->mlp_mean == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    for (int l = 0; l < c->L && c->m->cfg.d_mlp > 0; l++) {
        const hs_cache_entry *mm = hs_cache_getf(&c->means, "blocks.%d.hook_mlp_out", l);
        HS_ASSERT(mm != NULL);
        c->mlp_mean[l] = mm->data;
    }
    st = hs_engine_views(&c->clean, c->n, &c->clean_v, err);
    if (st == HS_OK) st = hs_engine_views(&c->corr, c->n, &c->corr_v, err);
    return st;
}

/* MLP mean ablation: blocks.l.hook_mlp_out[b, p, :] <- mean[p, :]. */
typedef struct {
    const float *mean; /* (T_RUN, D), borrowed */
    int D;
} mlp_ablate_ctx;

static int mlp_ablate_hook(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name;
    const mlp_ablate_ctx *a = ctx;
    if (ndim != 3 || shape[1] > T_RUN || shape[2] != a->D) return -1;
    for (int64_t b = 0; b < shape[0]; b++)
        memcpy(data + (size_t)b * shape[1] * a->D, a->mean, (size_t)(shape[1] * a->D) * sizeof(float));
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Evidence                                                                  */

static void invariant(const cctx *c, hs_circuit_report *r)
{
    const hs_cache_entry *s0 = hs_cache_get(&c->clean, "blocks.0.attn.hook_attn_scores");
    const hs_cache_entry *s1 = c->L > 1 ? hs_cache_get(&c->clean, "blocks.1.attn.hook_attn_scores") : NULL;
    r->inv_l1_mean_dev = NAN;
    r->inv_l1_max_dev = NAN;
    r->inv_max_dev_same_nouns = NAN;
    r->inv_max_dev_other_nouns = NAN;
    r->inv_score_mean_abs = NAN;
    if (s0 == NULL) return; /* uniform attention */
    r->inv_applicable = 1;
    const int H = c->H, n = c->n;
    const size_t TT = (size_t)T_RUN * T_RUN;
    double mx_same = 0.0, mx_other = 0.0, l1_sum = 0.0, l1_max = 0.0, abs_sum = 0.0;
    size_t cells = 0, np_same = 0, np_other = 0;
    for (int i = 0; i < n; i++)
        for (int h = 0; h < H; h++)
            for (int j = 0; j <= Q; j++)
                abs_sum += fabs(s0->data[((size_t)i * H + h) * TT + (size_t)Q * T_RUN + j]);
    r->inv_score_mean_abs = abs_sum / ((double)n * H * (Q + 1));
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            const int same = c->ex[a]->x == c->ex[b]->x && c->ex[a]->y == c->ex[b]->y;
            if (same) np_same++; else np_other++;
            const int *ta = c->tok_clean + (size_t)a * T_RUN, *tb = c->tok_clean + (size_t)b * T_RUN;
            for (int j = 0; j <= Q; j++) {
                if (ta[j] != tb[j]) continue;
                for (int h = 0; h < H; h++) {
                    const size_t oa = ((size_t)a * H + h) * TT + (size_t)Q * T_RUN + j;
                    const size_t ob = ((size_t)b * H + h) * TT + (size_t)Q * T_RUN + j;
                    double d0 = fabs((double)s0->data[oa] - (double)s0->data[ob]);
                    if (same) { if (d0 > mx_same) mx_same = d0; }
                    else if (d0 > mx_other) mx_other = d0;
                    if (s1) {
                        double d1 = fabs((double)s1->data[oa] - (double)s1->data[ob]);
                        l1_sum += d1;
                        if (d1 > l1_max) l1_max = d1;
                    }
                    cells++;
                }
            }
        }
    r->inv_pairs_same_nouns = np_same;
    r->inv_pairs_other_nouns = np_other;
    r->inv_cells = cells;
    r->inv_max_dev_same_nouns = mx_same;
    r->inv_max_dev_other_nouns = mx_other;
    if (s1 && cells) {
        r->inv_l1_mean_dev = l1_sum / (double)cells;
        r->inv_l1_max_dev = l1_max;
    }
}

static void attention_stats(const cctx *c, hs_circuit_report *r)
{
    const int L = c->L, H = c->H, n = c->n;
    const size_t TT = (size_t)T_RUN * T_RUN;
    for (int l = 0; l < L; l++) {
        const hs_cache_entry *p = hs_cache_getf(&c->clean, "blocks.%d.attn.hook_pattern", l);
        HS_ASSERT(p != NULL);
        for (int h = 0; h < H; h++) {
            hs_circuit_head *hd = &r->heads[l * H + h];
            double sum[3][4] = {{0}}, row[2][T_RUN];
            memset(row, 0, sizeof row);
            for (int i = 0; i < n; i++) {
                const int g = i < c->np ? HS_CIRC_CROSSER : HS_CIRC_CROSSED;
                const float *a = p->data + ((size_t)i * H + h) * TT + (size_t)Q * T_RUN;
                double el = 0.0;
                for (int j = 0; j <= Q; j++) {
                    row[g][j] += a[j];
                    if (j != HS_WG_POS_X && j != HS_WG_POS_Y && j != HS_WG_POS_ADJ) el += a[j];
                }
                const double v[4] = {a[HS_WG_POS_X], a[HS_WG_POS_Y], a[HS_WG_POS_ADJ], el};
                for (int k = 0; k < 4; k++) {
                    sum[g][k] += v[k];
                    sum[HS_CIRC_ALL][k] += v[k];
                }
            }
            for (int k = 0; k < 4; k++) {
                hd->attn[HS_CIRC_CROSSER][k] = sum[HS_CIRC_CROSSER][k] / c->np;
                hd->attn[HS_CIRC_CROSSED][k] = sum[HS_CIRC_CROSSED][k] / c->np;
                hd->attn[HS_CIRC_ALL][k] = sum[HS_CIRC_ALL][k] / n;
            }
            for (int g = 0; g < 2; g++)
                for (int j = 0; j < T_RUN; j++) {
                    float v = (float)(row[g][j] / c->np);
                    r->attn_rows[(((size_t)l * H + h) * 2 + g) * T_RUN + j] = v;
                    r->attn_rows_avg[((size_t)l * 2 + g) * T_RUN + j] += v / (float)H;
                }
        }
    }
}

/* DLA of every head at 14 towards x and towards y (hs_logit_attribution). */
static hs_status dla_stats(const cctx *c, hs_circuit_report *r, hs_error *err)
{
    const int L = c->L, H = c->H, n = c->n;
    double (*acc)[3][4] = calloc((size_t)L * H, sizeof *acc);
    int *idx = malloc((size_t)L * H * sizeof *idx);
    hs_status st = HS_OK;
    if (!acc || !idx) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < n && st == HS_OK; i++) {
        const int g = i < c->np ? HS_CIRC_CROSSER : HS_CIRC_CROSSED;
        const int xid = c->ex[i]->tokens[HS_WG_POS_X], yid = c->ex[i]->tokens[HS_WG_POS_Y];
        hs_dla dx, dy;
        if ((st = hs_logit_attribution(c->m, &c->clean, i, Q, xid, -1, &dx, err)) != HS_OK) break;
        if ((st = hs_logit_attribution(c->m, &c->clean, i, Q, yid, -1, &dy, err)) != HS_OK) {
            hs_dla_free(&dx);
            break;
        }
        if (i == 0) {
            for (int k = 0; k < L * H; k++) {
                idx[k] = -1;
                for (int j = 0; j < dx.n; j++)
                    if (strcmp(dx.labels[j], r->heads[k].name) == 0) idx[k] = j;
                HS_ASSERT(idx[k] >= 0);
            }
        }
        for (int k = 0; k < L * H; k++) {
            const double ax = dx.attr[idx[k]], ay = dy.attr[idx[k]];
            const double v[4] = {ax, ay, ax - ay, g == HS_CIRC_CROSSER ? ax - ay : ay - ax};
            for (int d = 0; d < 4; d++) {
                acc[k][g][d] += v[d];
                acc[k][HS_CIRC_ALL][d] += v[d];
            }
        }
        hs_dla_free(&dx);
        hs_dla_free(&dy);
    }
    if (st == HS_OK)
        for (int k = 0; k < L * H; k++)
            for (int d = 0; d < 4; d++) {
                r->heads[k].dla[HS_CIRC_CROSSER][d] = acc[k][HS_CIRC_CROSSER][d] / c->np;
                r->heads[k].dla[HS_CIRC_CROSSED][d] = acc[k][HS_CIRC_CROSSED][d] / c->np;
                r->heads[k].dla[HS_CIRC_ALL][d] = acc[k][HS_CIRC_ALL][d] / n;
            }
done:
    free(acc);
    free(idx);
    return st;
}

/* Phases B and C: one intervention per job, over every chunk of the
 * held-out rows, on the worker's activations and hooks. */
enum { J_ABLATE, J_ABLATE_MLP, J_PATCH, J_PATH };

typedef struct {
    int kind;
    const hs_head *heads; /* J_ABLATE: the heads mean-ablated together; J_PATCH: patched */
    int n_heads;
    int pos;              /* J_PATCH: position patched, -1 all */
    int layer;            /* J_ABLATE_MLP */
    hs_head sender, receiver;
    int inputs;           /* J_PATH: HS_INPUT_* bit */
    double *acc;          /* J_ABLATE*: (3) accuracy by group */
    double *metric;       /* J_PATCH, J_PATH: (3) normalised patching metric */
} ijob;

typedef struct {
    cctx *c;
    ijob *jobs;
    const hs_circuit_report *r;
    const ijob *jb; /* the sweep's job (per worker: sw[w->index]) */
} ijobs;

/* The hooks of a sweep's job for held-out chunk k. */
static hs_status ijob_hooks(void *arg, hs_engine_worker *w, int k, int r0, int b)
{
    (void)r0;
    (void)b;
    const ijobs *ij = arg;
    const cctx *c = ij->c;
    const ijob *jb = ij->jb;
    hs_status st = HS_OK;
    switch (jb->kind) {
    case J_ABLATE:
        return hs_hooks_add_mean_ablation(w->hk, c->m, &c->means, jb->heads, jb->n_heads, 1, &w->err);
    case J_ABLATE_MLP: {
        mlp_ablate_ctx *mc = malloc(sizeof *mc);
        if (mc == NULL) return hs_fail(&w->err, HS_ERR_NOMEM, "out of memory");
        mc->mean = c->mlp_mean[jb->layer];
        mc->D = c->D;
        char pat[64];
        snprintf(pat, sizeof pat, "blocks.%d.hook_mlp_out", jb->layer);
        return hs_hooks_add_owned(w->hk, pat, mlp_ablate_hook, mc, free, &w->err);
    }
    case J_PATCH:
        for (int i = 0; i < jb->n_heads && st == HS_OK; i++)
            st = hs_hooks_add_patch_head(w->hk, &c->clean_v[k], jb->heads[i], jb->pos, &w->err);
        return st;
    default:
        return hs_hooks_add_path_patch(w->hk, c->m, &c->clean_v[k], &c->corr_v[k], jb->sender,
                                       jb->receiver, jb->inputs, HS_LN_RECOMPUTE, &w->err);
    }
}

static void ijob_rows(void *arg, hs_engine_worker *w, const float *logits, int r0, int b)
{
    const ijobs *ij = arg;
    const int on_corr = ij->jb->kind == J_PATCH || ij->jb->kind == J_PATH;
    rows_of(ij->c, logits, r0, b, on_corr ? NULL : ij->c->pred[w->index],
            on_corr ? ij->c->ld[w->index] : NULL);
}

static hs_status ijob_run(hs_engine *e, hs_engine_worker *w, int j, void *arg)
{
    const ijobs *all = arg;
    cctx *c = all->c;
    const ijob *jb = &all->jobs[j];
    ijobs one = {c, all->jobs, all->r, jb};
    const int on_corr = jb->kind == J_PATCH || jb->kind == J_PATH;
    /* the layers before the intervention's are those of the run it starts
     * from (the clean or corrupted cache): start there (bit-identical) */
    int layer = jb->kind == J_ABLATE_MLP ? jb->layer : jb->kind == J_PATH ? jb->receiver.layer : c->L;
    for (int i = 0; i < jb->n_heads && (jb->kind == J_ABLATE || jb->kind == J_PATCH); i++)
        if (jb->heads[i].layer < layer) layer = jb->heads[i].layer;
    hs_status st = hs_engine_sweep_from(e, w, on_corr ? c->tok_corr : c->tok_clean, c->n, layer,
                                        on_corr ? &c->corr : &c->clean, ijob_hooks, ijob_rows, &one);
    if (st != HS_OK) return st;
    if (!on_corr) return score_preds(c, c->pred[w->index], jb->acc, NULL, &w->err);
    double ld[3];
    ld_sum(c, c->ld[w->index], ld);
    for (int d = 0; d < 3; d++) jb->metric[d] = hs_patch_metric(ld[d], all->r->ld_corr[d], all->r->ld_clean[d]);
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* Verdicts                                                                  */

static double max_drop(const double base[3], const double abl[3])
{
    double a = base[HS_CIRC_CROSSER] - abl[HS_CIRC_CROSSER];
    double b = base[HS_CIRC_CROSSED] - abl[HS_CIRC_CROSSED];
    return a > b ? a : b;
}

/* The route's name from its feature bits (route_features). */
static void route_name(hs_buf *rt, int f);

static void route_features(hs_circuit_report *r)
{
    const hs_circuit_opts *o = &r->opts;
    const int H = r->H;
    hs_buf why = {0}, rt = {0};
    int f = 0;
    for (int h = 0; h < H; h++) {
        const hs_circuit_head *hd = &r->heads[h];
        double dif = hd->attn[HS_CIRC_CROSSER][HS_CIRC_ON_ADJ] - hd->attn[HS_CIRC_CROSSED][HS_CIRC_ON_ADJ];
        if (fabs(dif) >= o->adj_key_diff) {
            f |= HS_ROUTE_ADJ_KEY;
            hs_buf_printf(&why, "adjective-key: %s puts %.2f on crosser vs %.2f on crossed adjectives; ", hd->name,
                    hd->attn[HS_CIRC_CROSSER][HS_CIRC_ON_ADJ], hd->attn[HS_CIRC_CROSSED][HS_CIRC_ON_ADJ]);
        }
    }
    for (int k = 0; k < r->n_decision; k++) {
        const hs_circuit_head *hd = &r->heads[r->decision[k].layer * H + r->decision[k].head];
        const double (*A)[4] = hd->attn, (*Dl)[4] = hd->dla;
        if (A[HS_CIRC_CROSSER][HS_CIRC_ON_ADJ] >= o->route_attn) {
            f |= HS_ROUTE_ADJ_READ;
            hs_buf_printf(&why, "adjective-read: %s puts %.2f on crosser adjectives; ", hd->name,
                    A[HS_CIRC_CROSSER][HS_CIRC_ON_ADJ]);
        }
        /* DLA of (y - x) with crossed adjectives, (x - y) with crosser ones */
        const double dyx = -Dl[HS_CIRC_CROSSED][HS_CIRC_DLA_X_MINUS_Y], dxy = Dl[HS_CIRC_CROSSER][HS_CIRC_DLA_X_MINUS_Y];
        if (A[HS_CIRC_CROSSED][HS_CIRC_ON_Y] >= o->route_attn && dyx >= o->route_dla) {
            f |= HS_ROUTE_OTHER_NOUN;
            hs_buf_printf(&why, "other-noun-fetch: %s puts %.2f on y with crossed adjectives and raises y over x (DLA y-x %+.2f); ",
                    hd->name, A[HS_CIRC_CROSSED][HS_CIRC_ON_Y], dyx);
        }
        if (A[HS_CIRC_CROSSER][HS_CIRC_ON_X] >= o->route_attn && dxy >= o->route_dla) {
            f |= HS_ROUTE_REFERENT_FETCH;
            hs_buf_printf(&why, "referent-fetch: %s puts %.2f on x with crosser adjectives and raises x over y (DLA x-y %+.2f); ",
                    hd->name, A[HS_CIRC_CROSSER][HS_CIRC_ON_X], dxy);
        }
        for (int g = 0; g < 2; g++)
            for (int nn = 0; nn < 2; nn++) {
                const double a = A[g][nn == 0 ? HS_CIRC_ON_X : HS_CIRC_ON_Y];
                const double d = (nn == 0 ? 1.0 : -1.0) * Dl[g][HS_CIRC_DLA_X_MINUS_Y];
                if (a >= o->route_attn && d <= -o->route_dla) {
                    f |= HS_ROUTE_SUPPRESSION;
                    hs_buf_printf(&why, "suppression: %s puts %.2f on %s with %s adjectives and lowers it below %s (DLA %+.2f); ",
                            hd->name, a, nn == 0 ? "x" : "y", hs_wg_role_name((hs_wg_role)g), nn == 0 ? "y" : "x", d);
                }
            }
    }
    r->route_features = f;
    if (why.len >= 2 && why.s[why.len - 2] == ';') why.s[why.len -= 2] = '\0'; /* the last "; " */
    if (r->L < 2) {
        hs_buf_puts(&rt, "one-layer");
    } else if (!r->step2_holds) {
        hs_buf_puts(&rt, "none");
    } else {
        route_name(&rt, f);
    }
    r->route_reason = hs_buf_take(&why);
    r->route = hs_buf_take(&rt);
}

/* The route's name from its feature bits (a decision head exists). */
static void route_name(hs_buf *rt, int f)
{
    int left = f;
    if (f & HS_ROUTE_ADJ_KEY) hs_buf_puts(rt, "adjective-key");
    left &= ~HS_ROUTE_ADJ_KEY;
    const int chapter = (f & HS_ROUTE_ADJ_READ) && (f & HS_ROUTE_OTHER_NOUN) && !(f & HS_ROUTE_REFERENT_FETCH);
    const int fetch = (f & HS_ROUTE_REFERENT_FETCH) && (f & HS_ROUTE_OTHER_NOUN);
    if (chapter) {
        hs_buf_printf(rt, "%schapter", rt->len ? " + " : "");
        left &= ~(HS_ROUTE_ADJ_READ | HS_ROUTE_OTHER_NOUN);
    } else if (fetch) {
        hs_buf_printf(rt, "%sreferent-fetch", rt->len ? " + " : "");
        left &= ~(HS_ROUTE_REFERENT_FETCH | HS_ROUTE_OTHER_NOUN);
    }
    static const struct { int bit; const char *name; } names[] = {
        {HS_ROUTE_ADJ_READ, "adjective-read"},
        {HS_ROUTE_OTHER_NOUN, "other-noun-fetch"},
        {HS_ROUTE_REFERENT_FETCH, "referent-fetch"},
        {HS_ROUTE_SUPPRESSION, "suppression"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (left & names[i].bit) hs_buf_printf(rt, "%s%s", rt->len ? " + " : "", names[i].name);
    if (rt->len == 0) hs_buf_puts(rt, "other");
}

/* ------------------------------------------------------------------------ */
/* The run                                                                   */

/* Largest mean weight (all held-out) a layer-0 head puts on target `on`. */
static double max_attn0(const hs_circuit_report *r, int on)
{
    double m = 0.0;
    for (int h = 0; h < r->H; h++)
        if (r->heads[h].attn[HS_CIRC_ALL][on] > m) m = r->heads[h].attn[HS_CIRC_ALL][on];
    return m;
}

static hs_status check_opts(const hs_circuit_opts *o, hs_error *err)
{
    const struct { const char *name; double v, lo, hi; } chk[] = {
        {"push_attn", o->push_attn, 0.0, 1.0},     {"push_dla", o->push_dla, 0.0, 1e6},
        {"step1_drop", o->step1_drop, 0.0, 1.0},   {"decide_patch", o->decide_patch, 0.0, 1e6},
        {"min_ld_gap", o->min_ld_gap, 0.0, 1e6},
        {"decide_drop", o->decide_drop, 0.0, 1.0}, {"route_attn", o->route_attn, 0.0, 1.0},
        {"route_dla", o->route_dla, 0.0, 1e6},     {"adj_key_diff", o->adj_key_diff, 0.0, 1.0},
    };
    for (size_t i = 0; i < sizeof chk / sizeof chk[0]; i++)
        if (!(chk[i].v >= chk[i].lo && chk[i].v <= chk[i].hi))
            return hs_fail(err, HS_ERR_CONFIG, "circuit: threshold %s = %g is outside [%g, %g]",
                           chk[i].name, chk[i].v, chk[i].lo, chk[i].hi);
    if (o->comp_draws < 2 || o->comp_draws > 100000)
        return hs_fail(err, HS_ERR_CONFIG, "circuit: comp_draws = %d is outside [2, 100000]", o->comp_draws);
    if (o->ablate_ref != HS_SPLIT_TRAIN && o->ablate_ref != HS_SPLIT_HELDOUT)
        return hs_fail(err, HS_ERR_CONFIG, "circuit: ablate_ref must be train or heldout");
    if (o->threads < 0 || o->threads > 1024)
        return hs_fail(err, HS_ERR_CONFIG, "circuit: threads = %d is outside [0, 1024]", o->threads);
    return HS_OK;
}

hs_status hs_circuit_run(const hs_model *m, const hs_winograd *t, const hs_circuit_opts *opts,
                         hs_circuit_report *out, hs_error *err)
{
    hs_circuit_report *r = out;
    memset(r, 0, sizeof *r);
    r->opts = opts ? *opts : hs_circuit_opts_default();
    hs_status st = check_opts(&r->opts, err);
    if (st != HS_OK) return st;
    const hs_config *cfg = &m->cfg;
    if ((size_t)cfg->d_vocab != t->vocab->n)
        return hs_fail(err, HS_ERR_CONFIG,
                       "the model's d_vocab is %d but the task's vocabulary has %zu words",
                       cfg->d_vocab, t->vocab->n);
    if (cfg->n_ctx < T_RUN)
        return hs_fail(err, HS_ERR_CONFIG, "the model's n_ctx is %d but the circuit needs positions 0..%d",
                       cfg->n_ctx, Q);
    cctx c;
    ijob *jobs = NULL;
    hs_head *all_heads = NULL;
    st = cctx_init(&c, m, t, err);
    if (st == HS_OK) st = workers_init(&c, r->opts.threads, err);
    if (st != HS_OK) goto fail;
    const int L = c.L, H = c.H;
    const int softmax = cfg->attn == HS_ATTN_SOFTMAX;
    r->cfg = *cfg;
    r->task = t->kind;
    r->split_seed = t->split_seed;
    r->pairs_given = t->pairs_given;
    r->chapter_pair_held_out = hs_winograd_is_held_out(t, HS_WG_CHAPTER_X, HS_WG_CHAPTER_Y) == 1;
    r->L = L;
    r->H = H;
    r->n_heldout = (size_t)c.n;
    r->n_role[0] = r->n_role[1] = (size_t)c.np;
    r->heads = calloc((size_t)L * H, sizeof *r->heads);
    r->attn_rows = calloc((size_t)L * H * 2 * T_RUN, sizeof(float));
    r->attn_rows_avg = calloc((size_t)L * 2 * T_RUN, sizeof(float));
    r->acc_block_attn = calloc((size_t)L, sizeof *r->acc_block_attn);
    r->acc_block_mlp = calloc((size_t)L, sizeof *r->acc_block_mlp);
    r->patch_layer = calloc((size_t)L, sizeof *r->patch_layer);
    r->pushers = calloc((size_t)H, sizeof *r->pushers);
    r->decision = calloc((size_t)L * H, sizeof *r->decision);
    if (!r->heads || !r->attn_rows || !r->attn_rows_avg || !r->acc_block_attn ||
        !r->acc_block_mlp || !r->patch_layer || !r->pushers || !r->decision) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) {
            hs_circuit_head *hd = &r->heads[l * H + h];
            hd->layer = l;
            hd->head = h;
            snprintf(hd->name, sizeof hd->name, "L%dH%d", l, h);
        }


    /* phase A: the clean and corrupted runs and the mean-ablation reference */
    size_t n_ref;
    const hs_wg_example *ref = hs_winograd_examples(t, r->opts.ablate_ref, &n_ref);
    if (n_ref == 0) {
        st = hs_fail(err, HS_ERR_INPUT, "circuit: the %s split is empty", hs_wg_split_name(r->opts.ablate_ref));
        goto fail;
    }
    r->n_ablate_ref = n_ref;
    if ((st = run_phase_a(&c, ref, n_ref, err)) != HS_OK) goto fail;
    const hs_cache_entry *lg = hs_cache_get(&c.clean, "logits");
    HS_ASSERT(lg != NULL);
    rows_of(&c, lg->data, 0, c.n, c.pred[0], c.ld[0]);
    if ((st = score_preds(&c, c.pred[0], r->acc, r->other_rate, err)) != HS_OK) goto fail;
    ld_sum(&c, c.ld[0], r->ld_clean);
    rows_of(&c, hs_cache_get(&c.corr, "logits")->data, 0, c.n, NULL, c.ld[0]);
    ld_sum(&c, c.ld[0], r->ld_corr);

    invariant(&c, r);
    attention_stats(&c, r);
    if ((st = dla_stats(&c, r, err)) != HS_OK) goto fail;
    for (int k = 0; k < L * H; k++) {
        hs_head hh = {r->heads[k].layer, r->heads[k].head};
        if ((st = hs_copying_score(m, hh, HS_FOLD_LN, &r->heads[k].copying, &r->heads[k].copying_pos, err)) != HS_OK)
            goto fail;
    }

    /* step 1: candidate pushers */
    for (int h = 0; h < H; h++) {
        hs_circuit_head *hd = &r->heads[h];
        if (hd->attn[HS_CIRC_ALL][HS_CIRC_ON_X] >= r->opts.push_attn &&
            hd->dla[HS_CIRC_ALL][HS_CIRC_DLA_X] >= r->opts.push_dla)
            hd->pusher |= 1;
        if (hd->attn[HS_CIRC_ALL][HS_CIRC_ON_Y] >= r->opts.push_attn &&
            hd->dla[HS_CIRC_ALL][HS_CIRC_DLA_Y] >= r->opts.push_dla)
            hd->pusher |= 2;
        if (hd->pusher) r->pushers[r->n_pushers++] = (hs_head){0, h};
    }
    for (int g = 0; g < 3; g++) r->acc_pushers[g] = NAN;

    /* phase B: mean ablations (each head, each layer's attention, each MLP,
     * the pushers) and activation patching (each head at 14 and at all
     * positions, each layer's heads at 14) */
    const int n_jobs_max = 4 * L * H + 3 * L + 1 + 3 * H * L * H;
    jobs = calloc((size_t)n_jobs_max, sizeof *jobs);
    all_heads = malloc((size_t)L * H * sizeof *all_heads);
    if (!jobs || !all_heads) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (int k = 0; k < L * H; k++) all_heads[k] = (hs_head){r->heads[k].layer, r->heads[k].head};
    int nj = 0;
    for (int k = 0; k < L * H; k++)
        jobs[nj++] = (ijob){.kind = J_ABLATE, .heads = &all_heads[k], .n_heads = 1, .acc = r->heads[k].acc_ablated};
    for (int l = 0; l < L; l++) {
        jobs[nj++] = (ijob){.kind = J_ABLATE, .heads = &all_heads[l * H], .n_heads = H, .acc = r->acc_block_attn[l]};
        if (cfg->d_mlp > 0)
            jobs[nj++] = (ijob){.kind = J_ABLATE_MLP, .layer = l, .acc = r->acc_block_mlp[l]};
        else
            for (int g = 0; g < 3; g++) r->acc_block_mlp[l][g] = NAN;
    }
    if (r->n_pushers > 0)
        jobs[nj++] = (ijob){.kind = J_ABLATE, .heads = r->pushers, .n_heads = r->n_pushers, .acc = r->acc_pushers};
    for (int k = 0; k < L * H; k++) {
        hs_circuit_head *hd = &r->heads[k];
        jobs[nj++] = (ijob){.kind = J_PATCH, .heads = &all_heads[k], .n_heads = 1, .pos = Q, .metric = hd->patch_pos14};
        if (hd->layer < L - 1)
            jobs[nj++] = (ijob){.kind = J_PATCH, .heads = &all_heads[k], .n_heads = 1, .pos = -1, .metric = hd->patch_all};
    }
    for (int l = 0; l < L; l++)
        jobs[nj++] = (ijob){.kind = J_PATCH, .heads = &all_heads[l * H], .n_heads = H, .pos = Q, .metric = r->patch_layer[l]};
    ijobs ij = {&c, jobs, r, NULL};
    if ((st = hs_engine_for(&c.eng, nj, ijob_run, &ij, err)) != HS_OK) goto fail;
    for (int k = (L - 1) * H; k < L * H; k++) /* the last layer: the same intervention */
        memcpy(r->heads[k].patch_all, r->heads[k].patch_pos14, sizeof r->heads[k].patch_all);

    /* step 2: decision heads. The normalised patching metric divides by
     * LD_clean - LD_corr; when the model does not separate the two roles
     * (an untrained model) that is ~0 and the metric is noise, so only
     * ablation can make a decision head then. */
    r->patch_usable = fabs((double)r->ld_clean[HS_CIRC_PATCH_BOTH] - r->ld_corr[HS_CIRC_PATCH_BOTH]) >=
                      r->opts.min_ld_gap;
    for (int k = H; k < L * H; k++) {
        hs_circuit_head *hd = &r->heads[k];
        if (r->patch_usable && fabs(hd->patch_pos14[HS_CIRC_PATCH_BOTH]) >= r->opts.decide_patch)
            hd->decision |= 1;
        if (max_drop(r->acc, hd->acc_ablated) >= r->opts.decide_drop) hd->decision |= 2;
        if (hd->decision) r->decision[r->n_decision++] = (hs_head){hd->layer, hd->head};
    }

    /* composition, and phase C: path patching into the decision heads */
    if ((st = hs_composition_scores(m, HS_FOLD_LN, r->opts.comp_draws, r->opts.comp_seed, &r->comp, err)) != HS_OK)
        goto fail;
    if (r->n_decision > 0) {
        const int n_path = H * r->n_decision * 3;
        r->path = malloc((size_t)n_path * sizeof(float));
        double (*met)[3] = calloc((size_t)n_path, sizeof *met);
        if (r->path == NULL || met == NULL) {
            free(met);
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
            goto fail;
        }
        nj = 0;
        for (int s = 0; s < H; s++)
            for (int d = 0; d < r->n_decision; d++)
                for (int w = 0; w < 3; w++) {
                    const int i = (s * r->n_decision + d) * 3 + w;
                    if (w < 2 && !softmax) continue;
                    jobs[nj++] = (ijob){.kind = J_PATH, .sender = {0, s}, .receiver = r->decision[d],
                                        .inputs = 1 << w, .metric = met[i]};
                }
        st = hs_engine_for(&c.eng, nj, ijob_run, &ij, err);
        for (int i = 0; i < n_path; i++)
            r->path[i] = (i % 3 < 2 && !softmax) ? NAN : (float)met[i][HS_CIRC_PATCH_BOTH];
        free(met);
        if (st != HS_OK) goto fail;
    }

    /* verdicts */
    {
        const hs_circuit_opts *o = &r->opts;
        hs_buf w1 = {0}, w2 = {0}, *w = &w1;
        if (r->n_pushers == 0) {
            r->step1_holds = 0;
            hs_buf_printf(w, "no layer-0 head puts >= %.2f on x or y at position 14 with DLA >= %+.2f towards that noun "
                     "(max weight on x %.2f, on y %.2f)",
                     o->push_attn, o->push_dla, max_attn0(r, HS_CIRC_ON_X), max_attn0(r, HS_CIRC_ON_Y));
            int any = 0;
            for (int h = 0; h < H; h++) {
                const hs_circuit_head *hd = &r->heads[h];
                const double a0 = hd->attn[HS_CIRC_CROSSER][HS_CIRC_ON_ADJ], a1 = hd->attn[HS_CIRC_CROSSED][HS_CIRC_ON_ADJ];
                if (fabs(a0 - a1) < o->adj_key_diff) continue;
                hs_buf_printf(w, "%s %s %.2f on crosser / %.2f on crossed adjectives (patching it alone at 14: %+.2f)",
                        any ? "," : "; instead layer 0 fetches the adjective by its key:", hd->name, a0, a1,
                        hd->patch_pos14[HS_CIRC_PATCH_BOTH]);
                any = 1;
            }
            hs_buf_printf(w, "; mean-ablating layer 0's attention: held-out accuracy %.1f%% -> %.1f%%",
                    100 * r->acc[HS_CIRC_ALL], 100 * r->acc_block_attn[0][HS_CIRC_ALL]);
        } else {
            double drop = r->acc[HS_CIRC_ALL] - r->acc_pushers[HS_CIRC_ALL];
            r->step1_holds = drop >= o->step1_drop;
            hs_buf_printf(w, "pusher%s", r->n_pushers > 1 ? "s" : "");
            for (int i = 0; i < r->n_pushers; i++) {
                const hs_circuit_head *hd = &r->heads[r->pushers[i].head];
                hs_buf_printf(w, " %s (%s%s%s: weight %.2f, DLA %+.2f)", hd->name,
                        (hd->pusher & 1) ? "x" : "", hd->pusher == 3 ? "," : "", (hd->pusher & 2) ? "y" : "",
                        (hd->pusher & 1) ? hd->attn[HS_CIRC_ALL][HS_CIRC_ON_X] : hd->attn[HS_CIRC_ALL][HS_CIRC_ON_Y],
                        (hd->pusher & 1) ? hd->dla[HS_CIRC_ALL][HS_CIRC_DLA_X] : hd->dla[HS_CIRC_ALL][HS_CIRC_DLA_Y]);
            }
            hs_buf_printf(w, "; mean-ablating %s: held-out accuracy %.1f%% -> %.1f%% (drop %.1f points %s %.1f)",
                    r->n_pushers > 1 ? "them" : "it", 100 * r->acc[HS_CIRC_ALL],
                    100 * r->acc_pushers[HS_CIRC_ALL], 100 * drop, r->step1_holds ? ">=" : "<",
                    100 * o->step1_drop);
        }
        w = &w2;
        r->step2_applicable = L >= 2;
        if (!r->step2_applicable) {
            hs_buf_printf(w, "not applicable: one layer");
        } else if (r->n_decision == 0 && !r->patch_usable) {
            hs_buf_printf(w, "patching cannot judge: the clean and corrupted logit differences differ by only %.2f "
                     "(< %.2f), so the model does not separate the roles; and no head's mean-ablation drops "
                     "a role's held-out accuracy by >= %.1f points",
                     fabs((double)r->ld_clean[HS_CIRC_PATCH_BOTH] - r->ld_corr[HS_CIRC_PATCH_BOTH]),
                     o->min_ld_gap, 100 * o->decide_drop);
        } else if (r->n_decision == 0) {
            hs_buf_printf(w, "no head in layer >= 1 moves the normalised logit difference by >= %.2f when patched at 14, "
                     "nor drops a role's held-out accuracy by >= %.1f points when mean-ablated",
                     o->decide_patch, 100 * o->decide_drop);
        } else {
            r->step2_holds = 1;
            hs_buf_printf(w, "decision head%s", r->n_decision > 1 ? "s" : "");
            for (int i = 0; i < r->n_decision; i++) {
                const hs_circuit_head *hd = &r->heads[r->decision[i].layer * H + r->decision[i].head];
                hs_buf_printf(w, "%s %s (patching %+.2f, ablation drops crosser %.1f / crossed %.1f points)",
                        i ? ";" : "", hd->name, hd->patch_pos14[HS_CIRC_PATCH_BOTH],
                        100 * (r->acc[0] - hd->acc_ablated[0]), 100 * (r->acc[1] - hd->acc_ablated[1]));
            }
        }
        r->step1_reason = hs_buf_take(&w1);
        r->step2_reason = hs_buf_take(&w2);
        route_features(r);
        if (!r->step1_reason || !r->step2_reason || !r->route || !r->route_reason) {
            st = hs_fail(err, HS_ERR_NOMEM, "out of memory writing the verdicts");
            goto fail;
        }
    }
    free(jobs);
    free(all_heads);
    cctx_free(&c);
    return HS_OK;
fail:
    free(jobs);
    free(all_heads);
    cctx_free(&c);
    hs_circuit_report_free(r);
    return st;
}
