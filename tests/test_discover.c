/*
 * tests/test_discover.c -- running circuits, exact edge patching, ACDC,
 * faithfulness, ground truth and graph.json (experiments/circuit_run.c,
 * acdc.c, faithfulness.c, graph_io.c):
 *   - on the committed Winograd checkpoint (circuit_tiny, 2 x 4 with MLPs)
 *     and its 192 held-out crosser/crossed pairs: the full circuit is the
 *     clean run bit for bit, the empty circuit the corrupted run (to
 *     rounding), f = 0 and 1 exactly at the curve's ends; exact patching of
 *     each head -> head edge equals the engine's path patching of that
 *     sender and receiver input; a circuit of every edge but one equals that
 *     edge patched, bit for bit, for all 110 edges; 1 and 2 threads give the
 *     same bits; the evaluator on given caches (circuit's phase A's) gives
 *     the bits it gives on its own runs, and EAP-IG on a given clean run
 *     its own run's; faithfulness is undefined (usable 0, JSON null, no NaN)
 *     when clean and corrupted coincide;
 *   - on a hand-built model with a planted circuit (a previous-token head
 *     a0.h2 read by an induction head a1.h1 through K-composition; the six
 *     other heads write into a subspace nothing reads): exact patching
 *     scores the five planted edges and nothing else, ACDC keeps exactly
 *     them, edge and node ROC AUC 1.0;
 *     greedy selection's 5 % circuit there and its faithfulness, 8/15 by hand
 *     (the greedy order itself: tests/test_circuit_select.c);
 *   - ROC areas by hand (ties, ACDC's pessimistic form), pruning,
 *     Python's float repr, graph.json bytes for a tiny graph and its round
 *     trip, and the bad inputs, one line each.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "discovery/discovery.h"
#include "experiments/experiments.h"
#include "tasks/tasks.h"
#include "fixture.h"
#include "model/checkpoint.h"

static hs_model *g_m;
static hs_tokenizer *g_v;
static hs_prompts g_p; /* crosser -> crossed, then crossed -> crosser (circuit's order) */
static hs_graph g_g;

static int setup(void **state)
{
    (void)state;
    hs_error err = {0};
    hs_meta meta = {0};
    hs_winograd *t = NULL;
    if (hs_checkpoint_load("checkpoint/circuit_tiny.safetensors", &g_m, &meta, NULL, &err) != HS_OK ||
        hs_tokenizer_from_json(meta.vocab, &g_v, &err) != HS_OK ||
        hs_winograd_from_task_json(meta.task, g_v, &t, &err) != HS_OK || hs_graph_build(&g_m->cfg, &g_g, &err) != HS_OK) {
        fprintf(stderr, "setup: %s\n", err.msg);
        return -1;
    }
    hs_meta_free(&meta);
    size_t nh;
    const hs_wg_example *ho = hs_winograd_examples(t, HS_SPLIT_HELDOUT, &nh);
    hs_buf b = {0};
    for (int dir = 0; dir < 2; dir++)
        for (size_t i = 0; i < nh; i++) {
            if (ho[i].role != HS_ROLE_CROSSER) continue;
            const hs_wg_example *pt = NULL;
            for (size_t j = 0; j < nh; j++)
                if (ho[j].x == ho[i].x && ho[j].y == ho[i].y && ho[j].adj == ho[i].adj + HS_WG_N_CROSSER) pt = &ho[j];
            if (pt == NULL) return -1;
            const hs_wg_example *cl = dir == 0 ? &ho[i] : pt, *co = dir == 0 ? pt : &ho[i];
            hs_buf_printf(&b, "{\"prompt\": \"");
            for (int k = 0; k <= HS_WG_POS_QUERY; k++) hs_buf_printf(&b, "%s%s", k ? " " : "", hs_tok_str(g_v, cl->tokens[k]));
            hs_buf_printf(&b, "\", \"corrupted\": \"");
            for (int k = 0; k <= HS_WG_POS_QUERY; k++) hs_buf_printf(&b, "%s%s", k ? " " : "", hs_tok_str(g_v, co->tokens[k]));
            hs_buf_printf(&b, "\", \"answer\": \"%s\", \"wrong\": \"%s\"}\n", hs_tok_str(g_v, cl->ref_id),
                          hs_tok_str(g_v, co->ref_id));
        }
    hs_winograd_destroy(t);
    hs_status st = hs_prompts_parse(b.s, b.len, "pairs.jsonl", g_v, g_m->cfg.n_ctx, 0, &g_p, &err);
    hs_buf_free(&b);
    if (st != HS_OK) {
        fprintf(stderr, "setup: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    hs_graph_free(&g_g);
    hs_prompts_free(&g_p);
    hs_tokenizer_destroy(g_v);
    hs_model_destroy(g_m);
    return 0;
}

static hs_circeval *make_ce(const hs_model *m, const hs_prompts *p, const hs_graph *g, hs_metric_kind k,
                            hs_ablate_method a, int threads, hs_pool **pool)
{
    hs_error err = {0};
    hs_circeval *ce = NULL;
    *pool = NULL;
    if (hs_pool_create(threads, pool, &err) != HS_OK) fail_msg("pool: %s", err.msg);
    if (hs_circeval_create(m, *pool, p, g, k, a, &ce, &err) != HS_OK) fail_msg("circeval: %s", err.msg);
    return ce;
}

/* The set's mean metric from plain engine runs of tokens (n, t): the clean
 * run (tokens = the prompts) or the corrupted one. */
typedef struct {
    const hs_prompts *p;
    hs_metric_kind k;
    double *rowm;
} plain_ctx;

static void plain_rows(void *arg, hs_engine_worker *w, const float *logits, int r0, int b)
{
    (void)w;
    plain_ctx *c = arg;
    double scr[2 * 64];
    const int V = g_m->cfg.d_vocab;
    HS_ASSERT(V <= 64);
    for (int i = 0; i < b; i++) {
        const int r = r0 + i;
        c->rowm[r] = hs_metric_value(c->k, logits + ((size_t)i * c->p->t + c->p->pos[r]) * V, V, c->p->answer[r],
                                     c->p->wrong[r], NULL, scr);
    }
}

static double plain_metric(const int *tokens, hs_metric_kind k)
{
    hs_engine e;
    hs_error err = {0};
    if (hs_engine_init(&e, g_m, NULL, g_p.t, &err) != HS_OK) fail_msg("%s", err.msg);
    double *rowm = malloc((size_t)g_p.n * sizeof *rowm), s = 0;
    plain_ctx c = {&g_p, k, rowm};
    if (hs_engine_sweep(&e, &e.w[0], tokens, g_p.n, NULL, plain_rows, &c) != HS_OK) fail_msg("%s", e.w[0].err.msg);
    for (int i = 0; i < g_p.n; i++) s += rowm[i];
    free(rowm);
    hs_engine_free(&e);
    return s / g_p.n;
}

static void full_is_clean_and_empty_is_corrupted(void **state)
{
    (void)state;
    hs_pool *pool;
    hs_circeval *ce = make_ce(g_m, &g_p, &g_g, HS_METRIC_LOGIT_DIFF, HS_ABLATE_RESAMPLE, 2, &pool);
    const double clean = plain_metric(g_p.clean, HS_METRIC_LOGIT_DIFF);
    const double corr = plain_metric(g_p.corr, HS_METRIC_LOGIT_DIFF);
    assert_true(hs_circeval_full(ce) == clean); /* bit for bit */
    assert_true(fabs(hs_circeval_empty(ce) - corr) < 1e-4 * fabs(corr));
    assert_true(clean > 5.0 && corr < -5.0);      /* the model reads the referent: not a vacuous check */
    double *sc = calloc(g_g.n_edges, sizeof *sc);
    for (size_t e = 0; e < g_g.n_edges; e++) sc[e] = (double)((e * 37) % 101); /* any ranking */
    hs_faith_curve c;
    hs_error err = {0};
    assert_int_equal(hs_faith_curve_run(ce, sc, HS_SELECT_TOPN, &c, &err), HS_OK);
    assert_int_equal(c.usable, 1);
    assert_true(c.pt[0].faithfulness == 0.0 && c.pt[0].edges == 0);
    assert_true(c.pt[HS_FAITH_N].faithfulness == 1.0 && c.pt[HS_FAITH_N].edges == g_g.n_edges);
    /* MIB's int(pct * n): 110 edges give 0 0 0 1 2 5 11 22 55 110 asked for */
    const size_t want[HS_FAITH_N] = {0, 0, 0, 1, 2, 5, 11, 22, 55, 110};
    for (int k = 0; k < HS_FAITH_N; k++) assert_int_equal(c.pt[k + 1].top_n, want[k]);
    /* CPR and CMD by hand from the points */
    double cpr = 0, cmd = 0;
    for (int k = 1; k < HS_FAITH_N; k++) {
        const double dx = c.pt[k + 1].fraction - c.pt[k].fraction;
        cpr += dx * (c.pt[k].faithfulness + c.pt[k + 1].faithfulness) / 2;
        cmd += dx * (fabs(1 - c.pt[k].faithfulness) + fabs(1 - c.pt[k + 1].faithfulness)) / 2;
    }
    assert_true(fabs(c.cpr - cpr) < 1e-12 && fabs(c.cmd - cmd) < 1e-12);
    free(sc);
    hs_circeval_destroy(ce);
    hs_pool_destroy(pool);
    /* kl: the full circuit is exactly the clean distribution */
    ce = make_ce(g_m, &g_p, &g_g, HS_METRIC_KL, HS_ABLATE_MEAN, 1, &pool);
    assert_true(hs_circeval_full(ce) == 0.0 && hs_circeval_empty(ce) > 0.1);
    hs_circeval_destroy(ce);
    hs_pool_destroy(pool);
}

/* hs_circeval_create_cached on caches made as circuit's phase A makes them
 * (more entries than the evaluator reads, the pattern's [n, H, t, t] among
 * them) gives the bits hs_circeval_create gives: m(M), m(empty), a curve's
 * points; a cache of other rows, or no corrupted cache with resample, is
 * refused with one line. */
static void given_caches_give_the_same_bits(void **state)
{
    (void)state;
    hs_pool *pool;
    hs_circeval *ce = make_ce(g_m, &g_p, &g_g, HS_METRIC_LOGIT_DIFF, HS_ABLATE_RESAMPLE, 2, &pool);
    hs_engine e;
    hs_error err = {0};
    if (hs_engine_init(&e, g_m, NULL, g_p.t, &err) != HS_OK) fail_msg("%s", err.msg);
    e.whole_chunks = 1;
    static const char *const fc[] = {"hook_embed", "blocks.*.hook_resid_pre", "blocks.*.attn.hook_pattern",
                                     "blocks.*.attn.hook_z", "?blocks.*.hook_mlp_out", "logits",
                                     "blocks.*.attn.hook_result"};
    static const char *const fr[] = {"blocks.*.hook_resid_pre", "blocks.*.attn.hook_z", "logits",
                                     "blocks.*.attn.hook_result", "?blocks.*.hook_mlp_out"};
    hs_cache cc = {0}, cr = {0}, few = {0};
    if (hs_engine_cache(&e, &e.w[0], g_p.clean, g_p.n, fc, 7, NULL, &cc) != HS_OK ||
        hs_engine_cache(&e, &e.w[0], g_p.corr, g_p.n, fr, 5, NULL, &cr) != HS_OK ||
        hs_engine_cache(&e, &e.w[0], g_p.clean, g_p.n - 1, fc, 7, NULL, &few) != HS_OK)
        fail_msg("%s", e.w[0].err.msg);
    hs_circeval *cg = NULL;
    assert_int_equal(hs_circeval_create_cached(g_m, pool, &g_p, &g_g, HS_METRIC_LOGIT_DIFF, HS_ABLATE_RESAMPLE,
                                               &cc, &cr, &cg, &err), HS_OK);
    assert_true(hs_circeval_full(cg) == hs_circeval_full(ce) && hs_circeval_empty(cg) == hs_circeval_empty(ce));
    assert_true(hs_circeval_full(ce) > 5.0); /* the model reads the referent */
    double *sc = calloc(g_g.n_edges, sizeof *sc);
    for (size_t k = 0; k < g_g.n_edges; k++) sc[k] = (double)((k * 53) % 97);
    hs_faith_curve a, b;
    assert_int_equal(hs_faith_curve_run(ce, sc, HS_SELECT_TOPN, &a, &err), HS_OK);
    assert_int_equal(hs_faith_curve_run(cg, sc, HS_SELECT_TOPN, &b, &err), HS_OK);
    for (int k = 0; k <= HS_FAITH_N; k++) assert_true(a.pt[k].metric == b.pt[k].metric);
    assert_true(a.pt[5].metric != a.pt[9].metric); /* the points differ: circuits were run */
    hs_circeval_destroy(cg);
    assert_int_equal(hs_circeval_create_cached(g_m, pool, &g_p, &g_g, HS_METRIC_LOGIT_DIFF, HS_ABLATE_RESAMPLE,
                                               &few, &cr, &cg, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "clean run's cache holds blocks.0.hook_resid_pre not of 192 prompts"));
    assert_null(cg);
    assert_int_equal(hs_circeval_create_cached(g_m, pool, &g_p, &g_g, HS_METRIC_LOGIT_DIFF, HS_ABLATE_RESAMPLE,
                                               &cc, NULL, &cg, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "with resample ablation, and only then"));
    free(sc);
    hs_cache_free(&cc);
    hs_cache_free(&cr);
    hs_cache_free(&few);
    hs_engine_free(&e);
    hs_circeval_destroy(ce);
    hs_pool_destroy(pool);
}

/* hs_eap_scores_cached on a cache of the clean run (more entries than it
 * reads) gives hs_eap_scores's bits; 40 prompts: a short last chunk, its
 * padded rows made from the cache as the padded tokens make them. */
static void eap_on_a_given_clean_run_gives_the_same_bits(void **state)
{
    (void)state;
    hs_prompts q = g_p;
    q.n = 40;
    hs_engine e;
    hs_error err = {0};
    if (hs_engine_init(&e, g_m, NULL, q.t, &err) != HS_OK) fail_msg("%s", err.msg);
    e.whole_chunks = 1;
    static const char *const fc[] = {"hook_embed", "blocks.*.hook_resid_pre", "blocks.*.attn.hook_pattern",
                                     "?blocks.*.hook_mlp_out", "logits", "blocks.*.attn.hook_result"};
    hs_cache cc = {0}, few = {0};
    if (hs_engine_cache(&e, &e.w[0], q.clean, q.n, fc, 6, NULL, &cc) != HS_OK ||
        hs_engine_cache(&e, &e.w[0], q.clean, q.n, fc, 5, NULL, &few) != HS_OK)
        fail_msg("%s", e.w[0].err.msg);
    const size_t E = g_g.n_edges;
    double *a = malloc(E * sizeof *a), *b = malloc(E * sizeof *b);
    assert_int_equal(hs_eap_scores(g_m, NULL, &q, &g_g, HS_METRIC_LOGIT_DIFF, 2, a, &err), HS_OK);
    assert_int_equal(hs_eap_scores_cached(g_m, NULL, &q, &g_g, HS_METRIC_LOGIT_DIFF, 2, &cc, b, &err), HS_OK);
    assert_memory_equal(a, b, E * sizeof *a);
    double largest = 0;
    for (size_t k = 0; k < E; k++) largest = fmax(largest, fabs(a[k]));
    assert_true(largest > 0.5); /* edges scored: not a vacuous comparison */
    assert_int_equal(hs_eap_scores_cached(g_m, NULL, &q, &g_g, HS_METRIC_LOGIT_DIFF, 2, &few, b, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "lacks blocks.0.attn.hook_result"));
    assert_int_equal(hs_eap_scores_cached(g_m, NULL, &q, &g_g, HS_METRIC_LOGIT_DIFF, 0, &cc, b, &err), HS_ERR_INPUT);
    free(a);
    free(b);
    hs_cache_free(&cc);
    hs_cache_free(&few);
    hs_engine_free(&e);
}

/* The path-patching metric of sender a0.h{s} -> a1.h{r} input x (C6,
 * probe.h hs_hooks_add_path_patch_senders, HS_LN_RECOMPUTE) run the other
 * way round: the clean run with the sender's corrupted z, the receiver input
 * recomputed, in chunks of HS_ENGINE_CHUNK rows as the engine runs them. */
static double path_patched(int s, int r, int x)
{
    const int t = g_p.t, V = g_m->cfg.d_vocab;
    int np = 0;
    int *cl = hs_engine_pad_rows(g_p.clean, g_p.n, t, &np), *co = hs_engine_pad_rows(g_p.corr, g_p.n, t, &np);
    hs_acts *acts = NULL;
    hs_hooks *hk = NULL;
    hs_error err = {0};
    if (hs_acts_create(&g_m->cfg, HS_ENGINE_CHUNK, t, 0, &acts, &err) != HS_OK || hs_hooks_create(&hk, &err) != HS_OK)
        fail_msg("%s", err.msg);
    static const char *const fz[] = {"blocks.0.attn.hook_z", "blocks.1.hook_resid_pre"};
    double sum = 0, scr[128];
    for (int r0 = 0; r0 < g_p.n; r0 += HS_ENGINE_CHUNK) {
        hs_cache cc = {0}, cr = {0};
        if (hs_run_with_cache(g_m, acts, cl + (size_t)r0 * t, HS_ENGINE_CHUNK, t, fz, 2, NULL, &cc, &err) != HS_OK ||
            hs_run_with_cache(g_m, acts, co + (size_t)r0 * t, HS_ENGINE_CHUNK, t, fz, 1, NULL, &cr, &err) != HS_OK)
            fail_msg("%s", err.msg);
        hs_hooks_clear(hk);
        const hs_head snd = {0, s}, rcv = {1, r};
        if (hs_hooks_add_path_patch_senders(hk, g_m, &cr, &cc, &snd, 1, rcv, 1 << x, HS_LN_RECOMPUTE, &err) != HS_OK ||
            hs_run_with_hooks(g_m, acts, cl + (size_t)r0 * t, HS_ENGINE_CHUNK, t, hk, &err) != HS_OK)
            fail_msg("%s", err.msg);
        for (int i = 0; i < HS_ENGINE_CHUNK && r0 + i < g_p.n; i++) {
            const int row = r0 + i;
            sum += hs_metric_value(HS_METRIC_LOGIT_DIFF, acts->logits + ((size_t)i * t + g_p.pos[row]) * V, V,
                                   g_p.answer[row], g_p.wrong[row], NULL, scr);
        }
        hs_cache_free(&cc);
        hs_cache_free(&cr);
    }
    hs_hooks_destroy(hk);
    hs_acts_destroy(acts);
    free(cl);
    free(co);
    return sum / g_p.n;
}

static void one_edge_patched_is_path_patching(void **state)
{
    (void)state;
    hs_pool *pool;
    hs_circeval *ce = make_ce(g_m, &g_p, &g_g, HS_METRIC_LOGIT_DIFF, HS_ABLATE_RESAMPLE, 2, &pool);
    double *sc = malloc(g_g.n_edges * sizeof *sc);
    hs_error err = {0};
    assert_int_equal(hs_edge_patch_scores(ce, sc, &err), HS_OK);
    static const char qkv[3] = {'q', 'k', 'v'};
    double largest = 0;
    for (int s = 0; s < 4; s++)
        for (int r = 0; r < 4; r++)
            for (int x = 0; x < 3; x++) {
                char name[40];
                snprintf(name, sizeof name, "a0.h%d->a1.h%d<%c>", s, r, qkv[x]);
                const long e = hs_graph_find_edge(&g_g, name);
                assert_true(e >= 0);
                const double pp = path_patched(s, r, x) - hs_circeval_full(ce);
                if (fabs(sc[e] - pp) > 1e-6 * (1 + fabs(pp))) /* seen: 1.5e-7 */
                    fail_msg("%s: exact patching %.9g, path patching %.9g", name, sc[e], pp);
                largest = fmax(largest, fabs(pp));
            }
    assert_true(largest > 1.0); /* some head -> head edge matters */
    free(sc);
    hs_circeval_destroy(ce);
    hs_pool_destroy(pool);
}

static void all_but_one_edge_is_that_edge_patched(void **state)
{
    (void)state;
    hs_pool *p1, *p2;
    const size_t E = g_g.n_edges;
    hs_circeval *c1 = make_ce(g_m, &g_p, &g_g, HS_METRIC_PROB_DIFF, HS_ABLATE_MEAN, 1, &p1);
    hs_circeval *c2 = make_ce(g_m, &g_p, &g_g, HS_METRIC_PROB_DIFF, HS_ABLATE_MEAN, 2, &p2);
    double *s1 = malloc(E * sizeof *s1), *s2 = malloc(E * sizeof *s2), *m = malloc(E * sizeof *m);
    unsigned char *mem = malloc(E * E);
    const unsigned char **masks = malloc(E * sizeof *masks);
    hs_error err = {0};
    assert_int_equal(hs_edge_patch_scores(c1, s1, &err), HS_OK);
    assert_int_equal(hs_edge_patch_scores(c2, s2, &err), HS_OK);
    assert_memory_equal(s1, s2, E * sizeof *s1); /* any thread count, the same bits */
    assert_int_equal(hs_circeval_forwards(c1), (long)E * hs_engine_chunks(g_p.n));
    for (size_t e = 0; e < E; e++) {
        memset(mem + e * E, 1, E);
        mem[e * E + e] = 0;
        masks[e] = mem + e * E;
    }
    assert_int_equal(hs_circeval_metrics(c2, (int)E, masks, m, &err), HS_OK);
    int nonzero = 0;
    for (size_t e = 0; e < E; e++) {
        if (m[e] - hs_circeval_full(c2) != s2[e]) fail_msg("edge %zu: %.17g vs %.17g", e, m[e] - hs_circeval_full(c2), s2[e]);
        nonzero += s2[e] != 0;
    }
    assert_true(nonzero > 50);
    free(s1), free(s2), free(m), free(mem), free(masks);
    hs_circeval_destroy(c1);
    hs_circeval_destroy(c2);
    hs_pool_destroy(p1);
    hs_pool_destroy(p2);
}

static void undefined_when_clean_and_corrupted_coincide(void **state)
{
    (void)state;
    hs_prompts q = g_p;
    q.corr = g_p.clean; /* every corrupted prompt is its clean one */
    hs_pool *pool;
    hs_circeval *ce = make_ce(g_m, &q, &g_g, HS_METRIC_LOGIT_DIFF, HS_ABLATE_RESAMPLE, 2, &pool);
    assert_true(hs_circeval_full(ce) == hs_circeval_empty(ce));
    double *sc = calloc(g_g.n_edges, sizeof *sc);
    hs_faith_curve c;
    hs_error err = {0};
    assert_int_equal(hs_faith_curve_run(ce, sc, HS_SELECT_TOPN, &c, &err), HS_OK);
    assert_int_equal(c.usable, 0);
    assert_non_null(strstr(c.why, "0 / 0"));
    assert_true(isnan(c.cpr) && isnan(hs_faithfulness(1, 2, 2)));
    cJSON *j = hs_faith_curve_json(&c);
    char *s = cJSON_PrintUnformatted(j);
    assert_null(strstr(s, "nan"));
    assert_non_null(strstr(s, "\"cpr\":null"));
    assert_non_null(strstr(s, "\"usable\":false"));
    free(s);
    cJSON_Delete(j);
    free(sc);
    hs_circeval_destroy(ce);
    hs_pool_destroy(pool);
}

/* ------------------------------------------------------------------------ */
/* The planted circuit                                                       */

enum { PV = 16, PT = 16, PJ = 8, PD = 3 * PV + PT + PJ, PDH = 16, PS = 8 };
#define P_TOK 0
#define P_POS PV
#define P_PREV (PV + PT)
#define P_OUT (2 * PV + PT)
#define P_JUNK (3 * PV + PT)

/* Layer 0 head 2: previous-token (query position i, key position j: score
 * 40 iff j = i - 1; value the token, written into the "previous token"
 * subspace). Layer 1 head 1: induction (query the token, key the previous
 * token, value the token, written into the output subspace W_U reads). The
 * other six heads: random weights reading everything, writing only into a
 * junk subspace nothing reads. No norms, no biases, no MLPs. */
static hs_model *planted(void)
{
    hs_config c = hs_config_default();
    c.n_layers = 2, c.d_model = PD, c.n_heads = 4, c.d_head = PDH, c.d_mlp = 0, c.n_ctx = PT, c.d_vocab = PV;
    c.norm = HS_NORM_NONE, c.ln1 = 0, c.ln_final = 0, c.bias = 0;
    hs_model *m = random_model_of(&c, 11);
    hs_params *P = &m->params;
    memset(P->W_E, 0, sizeof(float) * PV * PD);
    memset(P->W_pos, 0, sizeof(float) * PT * PD);
    memset(P->W_U, 0, sizeof(float) * PD * PV);
    for (int t = 0; t < PV; t++) P->W_E[t * PD + P_TOK + t] = 1.0f;
    for (int p = 0; p < PT; p++) P->W_pos[p * PD + P_POS + p] = 1.0f;
    const size_t hd = (size_t)PD * PDH;
    const float big = 40.0f * sqrtf((float)PDH);
    for (int l = 0; l < 2; l++) {
        hs_block_params *b = &P->blocks[l];
        const int h = l == 0 ? 2 : 1;
        memset(b->W_Q + h * hd, 0, hd * sizeof(float));
        memset(b->W_K + h * hd, 0, hd * sizeof(float));
        memset(b->W_V + h * hd, 0, hd * sizeof(float));
        for (int k = 0; k < 4; k++) /* every head writes nothing but its junk, the planted ones nothing there */
            for (int d = 0; d < PDH; d++)
                for (int o = 0; o < P_JUNK; o++) b->W_O[((size_t)k * PDH + d) * PD + o] = 0.0f;
        memset(b->W_O + (size_t)h * PDH * PD, 0, sizeof(float) * PDH * PD);
        for (int t = 0; t < PV; t++) {
            b->W_V[h * hd + (size_t)(P_TOK + t) * PDH + t] = 1.0f;
            b->W_O[((size_t)h * PDH + t) * PD + (l == 0 ? P_PREV : P_OUT) + t] = 1.0f;
        }
    }
    hs_block_params *b0 = &P->blocks[0], *b1 = &P->blocks[1];
    for (int i = 0; i < PT; i++) b0->W_Q[2 * hd + (size_t)(P_POS + i) * PDH + i] = big;
    for (int j = 0; j + 1 < PT; j++) b0->W_K[2 * hd + (size_t)(P_POS + j) * PDH + j + 1] = 1.0f;
    for (int t = 0; t < PV; t++) {
        b1->W_Q[hd + (size_t)(P_TOK + t) * PDH + t] = big;
        b1->W_K[hd + (size_t)(P_PREV + t) * PDH + t] = 1.0f;
    }
    for (int t = 0; t < PV; t++) P->W_U[(size_t)(P_OUT + t) * PV + t] = 10.0f;
    return m;
}

/* n prompts x0..x7 x0..x6 (answer x7 at position 14), corrupted y0..y7
 * y0..y6 over the other eight tokens (wrong y7). */
static void planted_prompts(int n, hs_prompts *p)
{
    memset(p, 0, sizeof *p);
    p->n = n, p->t = 2 * PS - 1;
    p->clean = malloc(sizeof(int) * n * p->t), p->corr = malloc(sizeof(int) * n * p->t);
    p->answer = malloc(sizeof(int) * n), p->wrong = malloc(sizeof(int) * n), p->pos = malloc(sizeof(int) * n);
    p->line = malloc(sizeof(int) * n);
    rng_state = 5;
    for (int i = 0; i < n; i++) {
        int perm[PV];
        for (int k = 0; k < PV; k++) perm[k] = k;
        for (int k = PV - 1; k > 0; k--) {
            const int j = (int)((rnd() + 1) / 2 * (k + 1)) % (k + 1), tmp = perm[k];
            perm[k] = perm[j], perm[j] = tmp;
        }
        for (int k = 0; k < p->t; k++) {
            p->clean[i * p->t + k] = perm[k % PS];
            p->corr[i * p->t + k] = perm[PS + k % PS];
        }
        p->answer[i] = perm[PS - 1], p->wrong[i] = perm[2 * PS - 1], p->pos[i] = p->t - 1, p->line[i] = i + 1;
    }
}

/* As planted_prompts, the corrupted prompts' repeat rotated by shift:
 * y0..y7 y_{shift}..: the induction head attends elsewhere (wrong: the token
 * it then copies). */
static void planted_prompts_shifted(int n, int shift, hs_prompts *p)
{
    planted_prompts(n, p);
    for (int i = 0; i < n; i++) {
        int *c = p->corr + i * p->t;
        for (int k = PS; k < p->t; k++) c[k] = c[(k - PS + shift) % PS];
        p->wrong[i] = c[(p->t - 1 - PS + shift) % PS + 1];
    }
}

static const char *const PLANTED[5] = {"input->a0.h2<v>", "a0.h2->a1.h1<k>", "input->a1.h1<q>", "input->a1.h1<v>",
                                       "a1.h1->logits"};

/* The greedy 5 % circuit (4 of 81 edges) of the planted model's exact
 * scores (a1.h1->logits, input->a1.h1<v> -20; input->a0.h2<v>,
 * a0.h2->a1.h1<k>, input->a1.h1<q> -9.3; the rest 0): a1.h1->logits,
 * input->a1.h1<v>, input->a1.h1<q>, a0.h2->a1.h1<k> (input->a0.h2<v> waits
 * for a0.h2 to join), pruned to the first three. The induction head's keys
 * read corrupted previous tokens, none its clean query token: uniform
 * attention over 15 positions, the answer among them once: logit difference
 * 10/15 against m(M) = 10, m(empty) = -10: f = (2/3 + 10) / 20 = 8/15. */
static void greedy_at_five_percent(hs_circeval *ce, const hs_graph *g, const double *sc)
{
    static const char *const WANT[3] = {"input->a1.h1<q>", "input->a1.h1<v>", "a1.h1->logits"};
    unsigned char *c = malloc(g->n_edges), *want = calloc(g->n_edges, 1);
    hs_error err = {0};
    size_t kept;
    hs_faith_curve fc;
    for (int k = 0; k < 3; k++) want[hs_graph_find_edge(g, WANT[k])] = 1;
    assert_int_equal(hs_circuit_choose(g, sc, HS_SELECT_GREEDY, 4, c, &kept, &err), HS_OK);
    assert_int_equal(kept, 3);
    assert_memory_equal(c, want, g->n_edges);
    assert_int_equal(hs_faith_curve_run(ce, sc, HS_SELECT_GREEDY, &fc, &err), HS_OK);
    assert_true(fc.selection == HS_SELECT_GREEDY && fc.pt[6].top_n == 4 && fc.pt[6].edges == 3);
    if (fabs(fc.pt[6].faithfulness - 8.0 / 15) > 1e-5) fail_msg("greedy 5 %%: f %.9g", fc.pt[6].faithfulness);
    const unsigned char *one[1] = {c};
    double mc;
    assert_int_equal(hs_circeval_metrics(ce, 1, one, &mc, &err), HS_OK);
    assert_true(mc == fc.pt[6].metric); /* the curve ran this circuit */
    free(c), free(want);
}

static void planted_circuit_is_found(void **state)
{
    (void)state;
    hs_model *m = planted();
    hs_graph g;
    hs_prompts p;
    hs_error err = {0};
    planted_prompts(40, &p);
    assert_int_equal(hs_graph_build(&m->cfg, &g, &err), HS_OK);
    assert_int_equal(g.n_edges, hs_graph_edge_count(2, 4, 0));
    unsigned char *truth = calloc(g.n_edges, 1), *circ = malloc(g.n_edges);
    for (int k = 0; k < 5; k++) truth[hs_graph_find_edge(&g, PLANTED[k])] = 1;
    double *sc = malloc(g.n_edges * sizeof *sc);
    for (int metric = 0; metric < 2; metric++) {
        hs_pool *pool;
        hs_circeval *ce = make_ce(m, &p, &g, metric ? HS_METRIC_KL : HS_METRIC_LOGIT_DIFF, HS_ABLATE_RESAMPLE, 2, &pool);
        if (metric == 0) assert_true(hs_circeval_full(ce) > 9.0 && hs_circeval_empty(ce) < -9.0);
        /* exact patching: the planted edges and nothing else */
        assert_int_equal(hs_edge_patch_scores(ce, sc, &err), HS_OK);
        for (size_t e = 0; e < g.n_edges; e++) {
            char name[64];
            hs_graph_edge_name(&g, e, name, sizeof name);
            if (truth[e] ? fabs(sc[e]) < 1.0 : sc[e] != 0.0) fail_msg("%s scores %.9g", name, sc[e]);
        }
        if (metric == 0) greedy_at_five_percent(ce, &g, sc);
        hs_roc roc;
        assert_int_equal(hs_roc_run(&g, sc, truth, NULL, &roc, &err), HS_OK);
        assert_true(roc.edges.auc == 1.0 && roc.edges.auc_step == 1.0 && roc.nodes.auc == 1.0);
        assert_int_equal(roc.nodes.n_pos, 2);
        hs_roc_free(&roc);
        /* ACDC keeps exactly the planted edges */
        hs_acdc_stats st;
        const hs_acdc_opts ao = {0.5, 0, 0};
        assert_int_equal(hs_acdc_run(ce, &ao, circ, sc, &st, &err), HS_OK);
        assert_memory_equal(circ, truth, g.n_edges);
        assert_int_equal(st.kept, 5);
        assert_int_equal(st.trials + st.skipped, (long)g.n_edges);
        assert_true(st.skipped > 0 && st.forwards == st.trials * hs_engine_chunks(p.n));
        assert_int_equal(hs_roc_run(&g, sc, truth, circ, &roc, &err), HS_OK);
        assert_true(roc.edges.tpr == 1.0 && roc.edges.fpr == 0.0 && roc.edges.circuit_auc_step == 1.0);
        assert_true(roc.edges.auc == 1.0 && roc.nodes.auc == 1.0 && roc.nodes.circuit_auc_step == 1.0);
        hs_roc_free(&roc);
        /* the planted circuit is as faithful as the model */
        const unsigned char *one[1] = {circ};
        double mc;
        assert_int_equal(hs_circeval_metrics(ce, 1, one, &mc, &err), HS_OK);
        const double f = hs_faithfulness(mc, hs_circeval_full(ce), hs_circeval_empty(ce));
        if (fabs(f - 1) > 1e-4) fail_msg("planted circuit: faithfulness %.9g", f);
        hs_circeval_destroy(ce);
        hs_pool_destroy(pool);
    }
    free(truth), free(circ), free(sc);
    hs_graph_free(&g);
    hs_prompts_free(&p);
    hs_model_destroy(m);
}

/* EAP and EAP-IG (5 steps) on the planted circuit, logit-diff and (EAP-IG
 * only: EAP's KL gradient at the clean run is 0) kl, on two prompt sets:
 * planted_prompts (the corrupted prompts repeat at the same offset) and
 * planted_prompts_shifted (their repeat rotated by 3: the induction head
 * attends elsewhere). Every other edge scores exactly 0 (a junk head's
 * output lies in a subspace no planted receiver reads, and nothing reads a
 * junk head, so every gradient into one is 0), every planted edge scores
 * nonzero, so the planted edges rank first and edge and node ROC AUC are 1.0
 * in all five runs. The value path (input->a1.h1<v>, a1.h1->logits) is
 * linear: its logit-diff scores equal exact patching's (to 1e-5). The key
 * path (input->a0.h2<v>, a0.h2->a1.h1<k>, input->a1.h1<q>; exact: -9.33
 * each) goes through a saturated softmax (scores 40 apart): at the clean
 * run its gradient underflows, so EAP scores it |s| < 1e-20 on both sets,
 * and so does EAP-IG where the corrupted run attends the same position; only
 * EAP-IG on the shifted set, whose interpolated runs move the attention,
 * gives it exact patching's sign, at 0.054 (170 times smaller): AUC 1.0 here
 * rests on the other edges' exact zeros. */
static void planted_circuit_is_ranked_first_by_eap(void **state)
{
    (void)state;
    hs_model *m = planted();
    hs_graph g;
    hs_error err = {0};
    assert_int_equal(hs_graph_build(&m->cfg, &g, &err), HS_OK);
    unsigned char *truth = calloc(g.n_edges, 1);
    for (int k = 0; k < 5; k++) truth[hs_graph_find_edge(&g, PLANTED[k])] = 1;
    double *sc = malloc(g.n_edges * sizeof *sc), *ex = malloc(g.n_edges * sizeof *ex);
    static const struct { int shifted, steps; hs_metric_kind k; } RUNS[5] = {
        {0, 0, HS_METRIC_LOGIT_DIFF}, {0, 5, HS_METRIC_LOGIT_DIFF}, {0, 5, HS_METRIC_KL},
        {1, 0, HS_METRIC_LOGIT_DIFF}, {1, 5, HS_METRIC_LOGIT_DIFF}};
    for (int set = 0; set < 2; set++) {
        hs_prompts p;
        if (set == 0) planted_prompts(40, &p);
        else planted_prompts_shifted(40, 3, &p);
        hs_pool *pool;
        hs_circeval *ce = make_ce(m, &p, &g, HS_METRIC_LOGIT_DIFF, HS_ABLATE_RESAMPLE, 2, &pool);
        assert_int_equal(hs_edge_patch_scores(ce, ex, &err), HS_OK);
        for (int r = 0; r < 5; r++) {
            if (RUNS[r].shifted != set) continue;
            if (hs_eap_scores(m, pool, &p, &g, RUNS[r].k, RUNS[r].steps, sc, &err) != HS_OK) fail_msg("%s", err.msg);
            for (size_t e = 0; e < g.n_edges; e++) {
                char name[64];
                hs_graph_edge_name(&g, e, name, sizeof name);
                const int value_path = e == (size_t)hs_graph_find_edge(&g, "input->a1.h1<v>") ||
                                       e == (size_t)hs_graph_find_edge(&g, "a1.h1->logits");
                if (!truth[e] ? sc[e] != 0.0 : sc[e] == 0.0 || !isfinite(sc[e]))
                    fail_msg("run %d: %s scores %.9g", r, name, sc[e]);
                if (truth[e] && value_path && RUNS[r].k == HS_METRIC_LOGIT_DIFF && fabs(sc[e] - ex[e]) > 1e-5 * fabs(ex[e]))
                    fail_msg("run %d: %s scores %.9g, exact patching %.9g", r, name, sc[e], ex[e]);
                const int moved = set == 1 && RUNS[r].steps > 0;
                if (truth[e] && !value_path && (moved ? !(sc[e] < -0.01 && sc[e] > -0.1) : !(fabs(sc[e]) < 1e-20)))
                    fail_msg("run %d: key-path edge %s scores %.9g (exact %.9g)", r, name, sc[e], ex[e]);
            }
            hs_roc roc;
            assert_int_equal(hs_roc_run(&g, sc, truth, NULL, &roc, &err), HS_OK);
            assert_true(roc.edges.auc == 1.0 && roc.edges.auc_step == 1.0 && roc.nodes.auc == 1.0);
            hs_roc_free(&roc);
        }
        hs_circeval_destroy(ce);
        hs_pool_destroy(pool);
        hs_prompts_free(&p);
    }
    free(truth), free(sc), free(ex);
    hs_graph_free(&g);
    hs_model_destroy(m);
}

/* EAP and EAP-IG (5 steps) under zero and mean ablation (hs_eap_run) rank
 * the planted model's edges as exact edge patching under the same ablation
 * does: the truth is every edge whose exact score is over 1e-3 of the
 * largest, and the edge ROC AUC is >= 0.98 for both methods on both prompt
 * sets. Scored with the corrupted partners' difference instead (what
 * discover printed for --ablation zero|mean before hs_eap_run), the AUC
 * falls below that on at least one of them (printed). */
static void zero_and_mean_eap_rank_as_exact_patching(void **state)
{
    (void)state;
    hs_model *m = planted();
    hs_graph g;
    hs_error err = {0};
    assert_int_equal(hs_graph_build(&m->cfg, &g, &err), HS_OK);
    unsigned char *truth = calloc(g.n_edges, 1);
    double *sc = malloc(g.n_edges * sizeof *sc), *ex = malloc(g.n_edges * sizeof *ex);
    double worst_wrong = 1.0;
    for (int set = 0; set < 2; set++)
        for (int abl = 0; abl < 2; abl++) {
            const hs_ablate_method a = abl ? HS_ABLATE_MEAN : HS_ABLATE_ZERO;
            hs_prompts p;
            if (set == 0) planted_prompts(40, &p);
            else planted_prompts_shifted(40, 3, &p);
            hs_pool *pool;
            hs_circeval *ce = make_ce(m, &p, &g, HS_METRIC_LOGIT_DIFF, a, 2, &pool);
            assert_int_equal(hs_edge_patch_scores(ce, ex, &err), HS_OK);
            double big = 0;
            for (size_t e = 0; e < g.n_edges; e++) big = fmax(big, fabs(ex[e]));
            for (size_t e = 0; e < g.n_edges; e++) truth[e] = fabs(ex[e]) > 1e-3 * big;
            for (int r = 0; r < 3; r++) {
                const hs_eap_opts o = {HS_METRIC_LOGIT_DIFF, r == 2 ? HS_ABLATE_RESAMPLE : a, r == 1 ? 5 : 0, 0};
                if (hs_eap_run(m, pool, &p, &g, &o, sc, &err) != HS_OK) fail_msg("%s", err.msg);
                hs_roc roc;
                assert_int_equal(hs_roc_run(&g, sc, truth, NULL, &roc, &err), HS_OK);
                print_message("planted set %d, %s truth: %s edge AUC %.4f\n", set, hs_ablate_method_names[a],
                              r == 2 ? "resample-scored EAP" : r ? "EAP-IG" : "EAP", roc.edges.auc);
                if (r < 2 && !(roc.edges.auc >= 0.98))
                    fail_msg("set %d, %s: %s edge AUC %.4f < 0.98", set, hs_ablate_method_names[a], r ? "EAP-IG" : "EAP",
                             roc.edges.auc);
                if (r == 2) worst_wrong = fmin(worst_wrong, roc.edges.auc);
                hs_roc_free(&roc);
            }
            hs_circeval_destroy(ce);
            hs_pool_destroy(pool);
            hs_prompts_free(&p);
        }
    print_message("resample-scored EAP against zero/mean truths: worst edge AUC %.4f\n", worst_wrong);
    if (!(worst_wrong < 0.98)) fail_msg("the ablation does not matter here (%.4f): the test shows nothing", worst_wrong);
    free(truth), free(sc), free(ex);
    hs_graph_free(&g);
    hs_model_destroy(m);
}

/* ACDC's visiting order (hs_acdc_order), written out from ACDC's
 * reverse_topologically_sort_corr for 2 layers x 2 heads with MLPs: logits,
 * then per layer from the top its MLP, the heads' v (h1, h0), k, q; senders
 * newest first, the input last. headscope's earlier order starts at logits
 * too but takes the input first. */
static void acdc_visits_edges_in_acdcs_order(void **state)
{
    (void)state;
    hs_config c = hs_config_default();
    c.n_layers = 2, c.n_heads = 2, c.d_mlp = 8, c.d_model = 8, c.d_head = 4;
    hs_graph g;
    hs_error err = {0};
    assert_int_equal(hs_graph_build(&c, &g, &err), HS_OK);
    static const char *const L1[] = {"m0", "a0.h1", "a0.h0", "input"};
    static const char *const L0[] = {"input"};
    const char *want[64];
    char buf[64][32];
    int n = 0;
    static const char *const to_logits[] = {"m1", "a1.h1", "a1.h0", "m0", "a0.h1", "a0.h0", "input"};
    for (int i = 0; i < 7; i++) snprintf(buf[n], 32, "%s->logits", to_logits[i]), want[n] = buf[n], n++;
    for (int i = 0; i < 6; i++) snprintf(buf[n], 32, "%s->m1", to_logits[i + 1]), want[n] = buf[n], n++;
    for (int x = 0; x < 3; x++)
        for (int h = 1; h >= 0; h--)
            for (int i = 0; i < 4; i++) snprintf(buf[n], 32, "%s->a1.h%d<%c>", L1[i], h, "vkq"[x]), want[n] = buf[n], n++;
    for (int i = 0; i < 3; i++) snprintf(buf[n], 32, "%s->m0", L1[i + 1]), want[n] = buf[n], n++;
    for (int x = 0; x < 3; x++)
        for (int h = 1; h >= 0; h--) snprintf(buf[n], 32, "%s->a0.h%d<%c>", L0[0], h, "vkq"[x]), want[n] = buf[n], n++;
    assert_int_equal((size_t)n, g.n_edges);
    size_t order[64];
    assert_int_equal(hs_acdc_order(&g, 0, order, &err), HS_OK);
    for (int k = 0; k < n; k++) {
        char name[64];
        hs_graph_edge_name(&g, order[k], name, sizeof name);
        if (strcmp(name, want[k]) != 0) fail_msg("ACDC's order, step %d: %s, want %s", k, name, want[k]);
    }
    assert_int_equal(hs_acdc_order(&g, 1, order, &err), HS_OK);
    assert_int_equal(order[0], hs_graph_find_edge(&g, "input->logits"));
    assert_int_equal(order[g.n_edges - 1], hs_graph_find_edge(&g, "input->a0.h0<q>"));
    hs_graph_free(&g);
}

/* ACDC's rule: signed by default (remove when the metric drops less than
 * tau: a removal that raises it is taken), |change| < tau with
 * abs_threshold. On circuit_tiny under mean ablation at tau 0.05 every
 * tried edge's recorded change decides its fate by the rule asked for, and
 * the |change| run keeps an edge whose removal raised the metric by tau or
 * more (which the signed rule removes): the rules differ here. */
static void acdc_rule_is_signed_by_default(void **state)
{
    (void)state;
    hs_pool *pool;
    hs_circeval *ce = make_ce(g_m, &g_p, &g_g, HS_METRIC_LOGIT_DIFF, HS_ABLATE_MEAN, 2, &pool);
    unsigned char *circ = malloc(g_g.n_edges);
    double *sc = malloc(g_g.n_edges * sizeof *sc);
    hs_error err = {0};
    const double tau = 0.05;
    int raised_kept = 0;
    for (int abs_thr = 0; abs_thr < 2; abs_thr++) {
        const hs_acdc_opts o = {tau, abs_thr, 0};
        hs_acdc_stats st;
        assert_int_equal(hs_acdc_run(ce, &o, circ, sc, &st, &err), HS_OK);
        for (size_t e = 0; e < g_g.n_edges; e++) {
            const int keep = abs_thr ? fabs(sc[e]) >= tau : -sc[e] >= tau;
            if (circ[e] != keep) {
                char name[64];
                hs_graph_edge_name(&g_g, e, name, sizeof name);
                fail_msg("%s rule: %s changed the metric by %.6g and was %s", abs_thr ? "|change|" : "signed", name,
                         sc[e], circ[e] ? "kept" : "removed");
            }
            if (abs_thr && circ[e] && sc[e] >= tau) raised_kept++;
        }
    }
    if (raised_kept == 0) fail_msg("no edge raised the metric by tau: the rules do not differ here");
    free(circ), free(sc);
    hs_circeval_destroy(ce);
    hs_pool_destroy(pool);
}

/* ------------------------------------------------------------------------ */
/* ROC, pruning, graph.json                                                  */

/* One layer, one head, no MLP: 5 edges input->a0.h0<q>, <k>, <v>, input->logits, a0.h0->logits. */
static void tiny_graph(hs_graph *g, hs_config *c)
{
    *c = hs_config_default();
    c->n_layers = 1, c->n_heads = 1, c->d_mlp = 0, c->d_model = 8, c->d_head = 8;
    hs_error err = {0};
    if (hs_graph_build(c, g, &err) != HS_OK) fail_msg("%s", err.msg);
    assert_int_equal(g->n_edges, 5);
}

static void roc_areas_by_hand(void **state)
{
    (void)state;
    hs_graph g;
    hs_config c;
    tiny_graph(&g, &c);
    /* |scores| 3 (true), 1, 2 (true), 2, 0: a tie of a true and a false edge */
    const double sc[5] = {-3, 1, 2, -2, 0};
    const unsigned char truth[5] = {1, 0, 1, 0, 0}, circ[5] = {1, 1, 0, 0, 0};
    hs_roc r;
    hs_error err = {0};
    assert_int_equal(hs_roc_run(&g, sc, truth, circ, &r, &err), HS_OK);
    /* points (0,0) (0,1/2) (1/3,1) (2/3,1) (1,1): trapezoids 1/4 + 1/3 + 1/3 = 11/12 (Mann-Whitney: 5.5 of 6
     * pairs); pessimistic (1-0)(1/2) + (1-1/3)(1/2) = 5/6 */
    assert_int_equal(r.edges.n_pts, 5);
    assert_true(fabs(r.edges.auc - 11.0 / 12) < 1e-15 && fabs(r.edges.auc_step - 5.0 / 6) < 1e-15);
    assert_true(r.edges.tpr == 0.5 && fabs(r.edges.fpr - 1.0 / 3) < 1e-15);
    assert_true(fabs(r.edges.circuit_auc_step - (2.0 / 3) * 0.5) < 1e-15);
    /* the only head is true: no false node, no node ROC */
    assert_int_equal(r.nodes.usable, 0);
    hs_roc_free(&r);
    hs_graph_free(&g);
}

static void pruning_keeps_paths_from_input_to_logits(void **state)
{
    (void)state;
    unsigned char *c = calloc(g_g.n_edges, 1), *node_in = malloc((size_t)g_g.n_nodes);
    const char *const path[3] = {"input->a0.h1<v>", "a0.h1->m1", "m1->logits"};
    hs_error err = {0};
    size_t kept;
    c[hs_graph_find_edge(&g_g, "a0.h0->a1.h0<q>")] = 1; /* a dead end both ways */
    c[hs_graph_find_edge(&g_g, "input->a1.h2<k>")] = 1; /* reaches nothing */
    for (int k = 0; k < 3; k++) c[hs_graph_find_edge(&g_g, path[k])] = 1;
    assert_int_equal(hs_circuit_prune(&g_g, c, node_in, &kept, &err), HS_OK);
    assert_int_equal(kept, 3);
    for (int k = 0; k < 3; k++) assert_int_equal(c[hs_graph_find_edge(&g_g, path[k])], 1);
    assert_int_equal(node_in[hs_graph_find_node(&g_g, "a0.h1")], 1);
    assert_int_equal(node_in[hs_graph_find_node(&g_g, "a1.h2")], 0);
    assert_int_equal(node_in[hs_graph_find_node(&g_g, "logits")], 1);
    /* top-n then prune: the top 2 of a chain input -> a0.h1 -> logits and a lone a0.h0 -> a1.h0<q> */
    double *sc = calloc(g_g.n_edges, sizeof *sc);
    sc[hs_graph_find_edge(&g_g, "a0.h0->a1.h0<q>")] = -9;
    sc[hs_graph_find_edge(&g_g, "input->a0.h1<q>")] = 5;
    sc[hs_graph_find_edge(&g_g, "a0.h1->logits")] = 4;
    assert_int_equal(hs_circuit_select(&g_g, sc, 2, NAN, c, &kept, &err), HS_OK);
    assert_int_equal(kept, 0);
    assert_int_equal(hs_circuit_select(&g_g, sc, 3, NAN, c, &kept, &err), HS_OK);
    assert_int_equal(kept, 2);
    assert_int_equal(hs_circuit_select(&g_g, sc, -1, 4.5, c, &kept, &err), HS_OK);
    assert_int_equal(kept, 0);
    sc[7] = NAN;
    assert_int_equal(hs_circuit_select(&g_g, sc, 3, NAN, c, &kept, &err), HS_ERR_NUMERIC);
    free(sc), free(c), free(node_in);
}

static void python_float_repr(void **state)
{
    (void)state;
    static const struct {
        double x;
        const char *py;
    } t[] = {{0.1, "0.1"}, {1e16, "1e+16"}, {1e15, "1000000000000000.0"}, {1e-5, "1e-05"}, {0.0001, "0.0001"},
             {-0.0, "-0.0"}, {0.0, "0.0"}, {123.0, "123.0"}, {2.5e-7, "2.5e-07"}, {0.30000000000000004, "0.30000000000000004"},
             {(double)0.1f, "0.10000000149011612"}, {-1.5e300, "-1.5e+300"}, {5e-324, "5e-324"},
             {1.7976931348623157e308, "1.7976931348623157e+308"}, {-12.5, "-12.5"}, {123456.789, "123456.789"}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char out[32];
        hs_py_float_repr(t[i].x, out);
        assert_string_equal(out, t[i].py);
    }
}

static void graph_json_bytes_and_round_trip(void **state)
{
    (void)state;
    hs_graph g;
    hs_config c;
    tiny_graph(&g, &c);
    /* headscope's scores; graph.json holds MIB's, -s / 20: 0.5, -2.0, 0.0, 1e-05, 3.25 */
    const double sc[5] = {-10.0, 40.0, 0.0, -2e-4, -65.0};
    const unsigned char in[5] = {0, 0, 1, 0, 1};
    hs_buf b = {0};
    hs_error err = {0};
    assert_int_equal(hs_graph_json_text(&g, &c, sc, in, &b, &err), HS_OK);
    /* json.dump of Graph.to_json's dict (EAP-IG) for this graph */
    assert_string_equal(b.s, "{\"cfg\": {\"n_layers\": 1, \"n_heads\": 1, \"parallel_attn_mlp\": false, \"d_model\": 8}, "
                             "\"nodes\": {\"input\": {\"in_graph\": true}, \"a0.h0\": {\"in_graph\": true}, \"logits\": "
                             "{\"in_graph\": true}}, \"edges\": {\"input->a0.h0<q>\": {\"score\": 0.5, \"in_graph\": false}, "
                             "\"input->a0.h0<k>\": {\"score\": -2.0, \"in_graph\": false}, \"input->a0.h0<v>\": {\"score\": "
                             "0.0, \"in_graph\": true}, \"input->logits\": {\"score\": 9.999999747378752e-06, \"in_graph\": "
                             "false}, \"a0.h0->logits\": {\"score\": 3.25, \"in_graph\": true}}}");
    double back[5];
    unsigned char bin[5];
    assert_int_equal(hs_graph_json_parse(&g, &c, b.s, b.len, "g.json", back, bin, &err), HS_OK);
    for (int e = 0; e < 5; e++) assert_true(back[e] == -20.0 * (double)(float)(-sc[e] / 20));
    assert_memory_equal(bin, in, sizeof in);
    hs_buf_free(&b);
    hs_graph_free(&g);
    /* the Winograd graph with random scores: every float32 back */
    double *s1 = malloc(g_g.n_edges * sizeof *s1), *s2 = malloc(g_g.n_edges * sizeof *s2);
    unsigned char *c1 = malloc(g_g.n_edges), *c2 = malloc(g_g.n_edges);
    rng_state = 3;
    for (size_t e = 0; e < g_g.n_edges; e++) s1[e] = rnd() * pow(10, (int)(rnd() * 8)), c1[e] = rnd() > 0;
    assert_int_equal(hs_graph_json_text(&g_g, &g_m->cfg, s1, c1, &b, &err), HS_OK);
    assert_int_equal(hs_graph_json_parse(&g_g, &g_m->cfg, b.s, b.len, "g.json", s2, c2, &err), HS_OK);
    for (size_t e = 0; e < g_g.n_edges; e++) assert_true(s2[e] == -20.0 * (double)(float)(-s1[e] / 20));
    assert_memory_equal(c1, c2, g_g.n_edges);
    hs_buf_free(&b);
    free(s1), free(s2), free(c1), free(c2);
}

static void bad_graphs_and_truths_one_line_each(void **state)
{
    (void)state;
    static const struct {
        const char *text, *msg;
    } t[] = {
        {"[1]", "g.json: not a JSON object (a graph.json)"},
        {"{\"cfg\": {\"n_layers\": 2, \"n_heads\": 4}, \"nodes\": {}}", "g.json: not a graph.json: no \"edges\" (EAP-IG's Graph.to_json writes cfg, nodes and edges)"},
        {"{\"cfg\": {\"n_layers\": 3, \"n_heads\": 4, \"parallel_attn_mlp\": false, \"d_model\": 32}, \"nodes\": {}, "
         "\"edges\": {}}",
         "g.json: the graph is for another model shape: cfg n_layers is 3, this model's 2 (2 layers x 4 heads, d_model 32)"},
        {"{\"cfg\": {\"n_layers\": 2, \"n_heads\": 4, \"d_model\": 768}, \"nodes\": {}, \"edges\": {}}",
         "g.json: the graph is for another model shape: cfg d_model is 768, this model's 32 (2 layers x 4 heads, d_model 32)"},
        {"{\"cfg\": {\"n_layers\": 2, \"n_heads\": 4}, \"nodes\": {\"a0.h7\": {\"in_graph\": false}}, \"edges\": {}}",
         "g.json: unknown node 'a0.h7' (this model: 2 layers x 4 heads, MLPs)"},
        {"{\"cfg\": {\"n_layers\": 2, \"n_heads\": 4}, \"nodes\": {}, \"edges\": {\"a0.h1->a0.h2<q>\": {\"score\": 1, "
         "\"in_graph\": true}}}",
         "g.json: unknown edge 'a0.h1->a0.h2<q>' (this model: 2 layers x 4 heads, MLPs)"},
        {"{\"cfg\": {\"n_layers\": 2, \"n_heads\": 4}, \"nodes\": {}, \"edges\": {\"a0.h1->m1\": {\"in_graph\": true}}}",
         "g.json: edge 'a0.h1->m1' is not {\"score\": a finite number, \"in_graph\": true|false}"},
        {"{\"cfg\": {\"n_layers\": 2, \"n_heads\": 4}, \"nodes\": {\"m0\": {\"in_graph\": true, \"neurons\": []}}, "
         "\"edges\": {}}",
         "g.json: node 'm0' has \"neurons\" (headscope reads in_graph and a score; neuron-level circuits are not "
         "supported)"},
    };
    double *sc = malloc(g_g.n_edges * sizeof *sc);
    unsigned char *in = malloc(g_g.n_edges);
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        hs_error err = {0};
        assert_int_equal(hs_graph_json_parse(&g_g, &g_m->cfg, t[i].text, strlen(t[i].text), "g.json", sc, in, &err),
                         HS_ERR_INPUT);
        assert_string_equal(err.msg, t[i].msg);
        assert_null(strchr(err.msg, '\n'));
    }
    /* a truth file naming an edge the graph does not have */
    char dir[256], path[300];
    snprintf(dir, sizeof dir, "%s", getenv("HS_TEST_TMP") ? getenv("HS_TEST_TMP") : "/tmp");
    hs_error err = {0};
    assert_int_equal(hs_mkdir(dir, &err), HS_OK);
    snprintf(path, sizeof path, "%s/discover_truth.txt", dir);
    const char *text = "# the circuit\ninput->a0.h1<v>\n\na1.h0->logits\na1.h4->logits\n";
    assert_int_equal(hs_write_file_atomic(path, text, strlen(text), &err), HS_OK);
    assert_int_equal(hs_truth_load(&g_g, &g_m->cfg, path, in, &err), HS_ERR_INPUT);
    char want[400];
    snprintf(want, sizeof want, "%s:5: 'a1.h4->logits' is not an edge of this model's graph (2 layers x 4 heads, MLPs)", path);
    assert_string_equal(err.msg, want);
    text = "[\"input->a0.h1<v>\", \"a1.h0->logits\"]";
    assert_int_equal(hs_write_file_atomic(path, text, strlen(text), &err), HS_OK);
    assert_int_equal(hs_truth_load(&g_g, &g_m->cfg, path, in, &err), HS_OK);
    size_t n = 0;
    for (size_t e = 0; e < g_g.n_edges; e++) n += in[e];
    assert_int_equal(n, 2);
    assert_int_equal(in[hs_graph_find_edge(&g_g, "a1.h0->logits")], 1);
    remove(path);
    free(sc), free(in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(full_is_clean_and_empty_is_corrupted),
        cmocka_unit_test(given_caches_give_the_same_bits),
        cmocka_unit_test(eap_on_a_given_clean_run_gives_the_same_bits),
        cmocka_unit_test(one_edge_patched_is_path_patching),
        cmocka_unit_test(all_but_one_edge_is_that_edge_patched),
        cmocka_unit_test(undefined_when_clean_and_corrupted_coincide),
        cmocka_unit_test(planted_circuit_is_found),
        cmocka_unit_test(planted_circuit_is_ranked_first_by_eap),
        cmocka_unit_test(roc_areas_by_hand),
        cmocka_unit_test(pruning_keeps_paths_from_input_to_logits),
        cmocka_unit_test(python_float_repr),
        cmocka_unit_test(graph_json_bytes_and_round_trip),
        cmocka_unit_test(bad_graphs_and_truths_one_line_each),
        cmocka_unit_test(zero_and_mean_eap_rank_as_exact_patching),
        cmocka_unit_test(acdc_visits_edges_in_acdcs_order),
        cmocka_unit_test(acdc_rule_is_signed_by_default),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
