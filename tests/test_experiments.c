/*
 * tests/test_experiments.c -- the worker pool, the experiment engine and the
 * experiments over prompt sets (prompt sets, heads, patch), on the committed
 * small Winograd checkpoint (tests/checkpoint/circuit_tiny.safetensors: 2
 * layers, 4 heads, 100% held-out):
 *   - the pool: ordered sums equal the sequential ones, the lowest failed
 *     job's error is returned;
 *   - prompt sets: a bad-input table, each message with file:line;
 *   - patch: the held-out crosser/crossed pairs reproduce circuit's per-head
 *     numbers exactly; corrupted patched into corrupted is exactly the
 *     corrupted LD (metric 0); the whole clean residual at the last layer and
 *     the read position gives exactly 1; batched = one prompt at a time; 1 and
 *     3 threads identical;
 *   - heads: a detector score recomputed by hand from one sentence's pattern;
 *   - a run from a later layer on a cached residual (hs_run_tail_with_hooks,
 *     hs_engine_sweep_from) is bit-identical to the full run, point by point.
 */
#include <math.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "experiments/experiments.h"
#include "circuits/circuits.h"
#include "tasks/tasks.h"
#include "fixture.h"
#include "model/checkpoint.h"

#define Q HS_WG_POS_QUERY

static hs_model *g_m;
static hs_tokenizer *g_v;
static hs_winograd *g_t;
static hs_prompts g_p; /* circuit's pairs: crosser -> crossed, then crossed -> crosser */

static int setup(void **state)
{
    (void)state;
    hs_error err = {0};
    hs_meta meta = {0};
    if (hs_checkpoint_load("checkpoint/circuit_tiny.safetensors", &g_m, &meta, NULL, &err) != HS_OK ||
        hs_tokenizer_from_json(meta.vocab, &g_v, &err) != HS_OK ||
        hs_winograd_from_task_json(meta.task, g_v, &g_t, &err) != HS_OK) {
        fprintf(stderr, "setup: %s\n", err.msg);
        return -1;
    }
    hs_meta_free(&meta);
    /* the matched pairs in circuit's order, as a prompt-set text */
    size_t nh;
    const hs_wg_example *ho = hs_winograd_examples(g_t, HS_SPLIT_HELDOUT, &nh);
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
            for (int k = 0; k <= Q; k++) hs_buf_printf(&b, "%s%s", k ? " " : "", hs_tok_str(g_v, cl->tokens[k]));
            hs_buf_printf(&b, "\", \"corrupted\": \"");
            for (int k = 0; k <= Q; k++) hs_buf_printf(&b, "%s%s", k ? " " : "", hs_tok_str(g_v, co->tokens[k]));
            hs_buf_printf(&b, "\", \"answer\": \"%s\", \"wrong\": \"%s\"}\n", hs_tok_str(g_v, cl->ref_id),
                          hs_tok_str(g_v, co->ref_id));
        }
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
    hs_prompts_free(&g_p);
    hs_winograd_destroy(g_t);
    hs_tokenizer_destroy(g_v);
    hs_model_destroy(g_m);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The pool                                                                  */

typedef struct {
    double sum;
    int order[64], n_order;
    const double *x;
} ordered_ctx;

typedef struct {
    ordered_ctx o;
    hs_pool *pool;
} ordered_run;

static hs_status ordered_job2(void *ctx, int j, int worker, hs_error *err)
{
    ordered_run *r = ctx;
    hs_status st = hs_pool_ordered_begin(r->pool, worker, j, err);
    if (st != HS_OK) return st;
    r->o.sum += r->o.x[j];
    r->o.order[r->o.n_order++] = j;
    hs_pool_ordered_end(r->pool);
    return HS_OK;
}

static hs_status failing_job(void *ctx, int j, int worker, hs_error *err)
{
    (void)ctx;
    (void)worker;
    if (j == 5 || j == 9) return hs_fail(err, HS_ERR_INPUT, "job %d failed", j);
    return HS_OK;
}

/* A lane job that holds until its gate opens. */
static void gated_lane(void *arg)
{
    atomic_int *gate;
    memcpy(&gate, arg, sizeof gate);
    while (!atomic_load(gate)) {
    }
}

/* hs_pool_done: 0 while a lane job runs, 1 once it finished; 1 for a NULL
 * pool, ticket 0, and the ticket of a pool of one worker (run at once). */
static void pool_done_says_whether_a_lane_job_finished(void **state)
{
    (void)state;
    hs_error err = {0};
    hs_pool *pool = NULL;
    atomic_int gate;
    atomic_init(&gate, 0);
    atomic_int *g = &gate;
    assert_int_equal(hs_pool_create(2, &pool, &err), HS_OK);
    const long t = hs_pool_async(pool, gated_lane, &g, sizeof g);
    assert_true(t > 0);
    assert_int_equal(hs_pool_done(pool, t), 0);
    atomic_store(&gate, 1);
    hs_pool_wait(pool, t);
    assert_int_equal(hs_pool_done(pool, t), 1);
    hs_pool_destroy(pool);
    assert_int_equal(hs_pool_done(NULL, 3), 1);
    assert_int_equal(hs_pool_create(1, &pool, &err), HS_OK);
    const long t1 = hs_pool_async(pool, gated_lane, &g, sizeof g); /* the gate is open: runs and returns */
    assert_int_equal(t1, 0);
    assert_int_equal(hs_pool_done(pool, t1), 1);
    hs_pool_destroy(pool);
}

static void pool_ordered_sums_and_errors(void **state)
{
    (void)state;
    double x[64], seq = 0.0;
    for (int i = 0; i < 64; i++) {
        x[i] = 1.0 / (i + 3.0) * (i % 2 ? 1e8 : 1e-8); /* an order-sensitive sum */
        seq += x[i];
    }
    for (int th = 1; th <= 4; th++) {
        ordered_run r;
        memset(&r, 0, sizeof r);
        r.o.x = x;
        hs_error err = {0};
        assert_int_equal(hs_pool_create(th, &r.pool, &err), HS_OK);
        assert_int_equal(hs_pool_threads(r.pool), th);
        assert_int_equal(hs_pool_for(r.pool, 64, ordered_job2, &r, &err), HS_OK);
        assert_true(r.o.sum == seq);
        for (int i = 0; i < 64; i++) assert_int_equal(r.o.order[i], i);
        assert_int_equal(hs_pool_for(r.pool, 20, failing_job, NULL, &err), HS_ERR_INPUT);
        assert_string_equal(err.msg, "job 5 failed");
        hs_pool_destroy(r.pool);
    }
    hs_error err = {0};
    hs_pool *p = NULL;
    assert_int_equal(hs_pool_create(-1, &p, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "threads must be in [0, 1024]"));
}

/* ------------------------------------------------------------------------ */
/* Prompt sets                                                               */

static void prompt_sets_refuse_bad_lines_with_file_and_line(void **state)
{
    (void)state;
    static const struct {
        const char *text, *msg;
    } cases[] = {
        {"", "set.jsonl: empty prompt set"},
        {"\n  \n", "set.jsonl: empty prompt set"},
        {"{\"prompt\": \"the zebra\", \"answer\": \"animal\"}\n", "set.jsonl:1: prompt: unknown word 'zebra'"},
        {"{\"prompt\": \"the animal\", \"answer\": \"zebra\"}\n",
         "set.jsonl:1: answer 'zebra' is not a token of the model's vocabulary"},
        {"{\"prompt\": \"the animal\", \"answer\": \"animal\", \"wrong\": \"the cat\"}\n",
         "set.jsonl:1: wrong 'the cat' is not a token"},
        {"{\"prompt\": \"the animal\", \"answer\": \"animal\"}\n{\"prompt\": \"the animal did\", \"answer\": \"cat\"}\n",
         "set.jsonl:2: the prompt has 3 tokens but line 1's has 2"},
        {"{\"prompt\": \"the animal\", \"corrupted\": \"the\", \"answer\": \"animal\"}\n",
         "set.jsonl:1: the corrupted prompt has 1 tokens but the prompt has 2"},
        {"{\"prompt\": \"the animal\", \"answer\": \"animal\"}\n\n{\"prompt\": \"the cat\", \"corrupted\": \"the dog\", "
         "\"answer\": \"cat\"}\n",
         "set.jsonl:3: \"corrupted\" is given here but missing on line 1"},
        {"{\"prompt\": \"the animal\"}\n", "set.jsonl:1: \"answer\" is missing"},
        {"{\"prompt\": \"the animal\", \"answer\": \"cat\", \"positon\": 1}\n", "set.jsonl:1: unknown key \"positon\""},
        {"{\"prompt\": \"the animal\", \"answer\": \"cat\", \"position\": 2}\n",
         "set.jsonl:1: \"position\" must be an integer in [0, 1]"},
        {"[1, 2]\n", "set.jsonl:1: not a JSON object"},
        {"{\"prompt\": \"the animal\", \"answer\": \"cat\"}\n{\"prompt\": \"the ani\n",
         "set.jsonl:2: the line ends inside its JSON object (cut short?"},
        {"{\"prompt\": \"the animal\", \"answer\" \"cat\"}\n", "set.jsonl:1: not valid JSON at byte 35 of the line"},
        {"{\"prompt\": 3, \"answer\": \"cat\"}\n", "set.jsonl:1: \"prompt\" must be a string"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hs_prompts p;
        hs_error err = {0};
        hs_status st = hs_prompts_parse(cases[i].text, strlen(cases[i].text), "set.jsonl", g_v, 0, 0, &p, &err);
        if (st != HS_ERR_INPUT || strstr(err.msg, cases[i].msg) != err.msg)
            fail_msg("case %zu: status %d, message '%s', expected to start with '%s'", i, st, err.msg, cases[i].msg);
        assert_int_equal(p.n, 0);
    }
    /* a good one: position defaults to the last token, ids looked up */
    const char *ok = "{\"prompt\": \"the animal did\", \"answer\": \"not\", \"wrong\": \"cat\"}\n"
                     "{\"prompt\": \"the cat did\", \"answer\": \"not\", \"wrong\": \"dog\", \"position\": 1}\n";
    hs_prompts p;
    hs_error err = {0};
    assert_int_equal(hs_prompts_parse(ok, strlen(ok), "ok", g_v, 0, 0, &p, &err), HS_OK);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.t, 3);
    assert_null(p.corr);
    assert_int_equal(p.pos[0], 2);
    assert_int_equal(p.pos[1], 1);
    assert_int_equal(p.clean[3 + 1], hs_tok_id(g_v, "cat"));
    assert_int_equal(p.wrong[1], hs_tok_id(g_v, "dog"));
    assert_int_equal(p.line[1], 2);
    hs_prompts_free(&p);
}

/* ------------------------------------------------------------------------ */
/* Patch                                                                     */

static void patch_reproduces_circuit_per_head_numbers(void **state)
{
    (void)state;
    hs_error err = {0};
    hs_circuit_report r;
    hs_circuit_opts o = hs_circuit_opts_default();
    o.threads = 2;
    assert_int_equal(hs_circuit_run(g_m, g_t, &o, &r, &err), HS_OK);
    hs_patch_report pr;
    assert_int_equal(hs_patch_run(g_m, NULL, &g_p, 1u << HS_PATCH_Z, &pr, &err), HS_OK);
    assert_int_equal(pr.n, 192);
    assert_true(pr.ld_clean == r.ld_clean[HS_CIRC_PATCH_BOTH]);
    assert_true(pr.ld_corr == r.ld_corr[HS_CIRC_PATCH_BOTH]);
    for (int k = 0; k < r.L * r.H; k++) {
        const hs_circuit_head *hd = &r.heads[k];
        const double at14 = pr.metric_pos[HS_PATCH_Z][(size_t)k * pr.t + Q], all = pr.metric[HS_PATCH_Z][k];
        /* the all-position cell: float32 rounding apart, patch running the
         * positions from the pairs' first difference on (hs_forward_suffix),
         * circuit the whole rows */
        if (!(at14 == hd->patch_pos14[HS_CIRC_PATCH_BOTH]) ||
            !(fabs(all - hd->patch_all[HS_CIRC_PATCH_BOTH]) <= 1e-6 * (1.0 + fabs(all))))
            fail_msg("%s: patch %.17g / %.17g, circuit %.17g / %.17g", hd->name, at14, all,
                     hd->patch_pos14[HS_CIRC_PATCH_BOTH], hd->patch_all[HS_CIRC_PATCH_BOTH]);
    }
    hs_patch_report_free(&pr);
    /* dla over the same pairs (answer = the referent, wrong = the other noun)
     * is circuit's per-head DLA towards ref - other; the parts sum to the LD */
    hs_dla_set d;
    assert_int_equal(hs_dla_set_run(g_m, NULL, &g_p, 0, &d, &err), HS_OK);
    double sum = d.constant + d.unembed_bias;
    for (int k = 0; k < d.n_comp; k++) sum += d.attr[k];
    assert_true(fabs(sum - d.target) < 1e-4);
    int found = 0;
    for (int k = 0; k < r.L * r.H; k++)
        for (int i = 0; i < d.n_comp; i++)
            if (strcmp(d.labels[i], r.heads[k].name) == 0) {
                found++;
                const double want = r.heads[k].dla[HS_CIRC_ALL][HS_CIRC_DLA_REF_MINUS_OTHER];
                if (!(fabs(d.attr[i] - want) < 1e-9)) fail_msg("%s: dla %.17g, circuit %.17g", d.labels[i], d.attr[i], want);
            }
    assert_int_equal(found, r.L * r.H);
    hs_dla_set_free(&d);
    hs_circuit_report_free(&r);
}

/* dla --by-position: at the read position (14 for every pair) each
 * component's column is its attribution bit for bit; elsewhere, pos_embed at
 * position 3 of the first prompt alone is W_pos[3] centred (LayerNorm),
 * divided by ln_final.hook_scale at 14, times w_f, dotted with
 * W_U[:, answer] - W_U[:, wrong], computed here by hand. */
static void dla_by_position_matches_dla_at_the_read_position_and_by_hand(void **state)
{
    (void)state;
    const int t = g_p.t, D = g_m->cfg.d_model, V = g_m->cfg.d_vocab;
    hs_error err = {0};
    hs_dla_set d0, d1;
    assert_int_equal(hs_dla_set_run(g_m, NULL, &g_p, 0, &d0, &err), HS_OK);
    assert_int_equal(hs_dla_set_run(g_m, NULL, &g_p, 1, &d1, &err), HS_OK);
    assert_null(d0.attr_pos);
    assert_non_null(d1.attr_pos);
    assert_int_equal(d1.t, t);
    for (int i = 0; i < g_p.n; i++) assert_int_equal(g_p.pos[i], 14);
    assert_true(d1.constant == d0.constant && d1.target == d0.target);
    for (int k = 0; k < d1.n_comp; k++)
        if (!(d1.attr_pos[(size_t)k * t + 14] == d0.attr[k] && d1.attr[k] == d0.attr[k]))
            fail_msg("%s: by position %.17g, dla %.17g", d1.labels[k], d1.attr_pos[(size_t)k * t + 14], d0.attr[k]);
    hs_dla_set_free(&d0);
    hs_dla_set_free(&d1);

    hs_prompts one = g_p;
    one.n = 1;
    assert_int_equal(hs_dla_set_run(g_m, NULL, &one, 1, &d1, &err), HS_OK);
    int kp = -1;
    for (int k = 0; k < d1.n_comp; k++)
        if (strcmp(d1.labels[k], "pos_embed") == 0) kp = k;
    assert_true(kp >= 0);
    assert_int_equal(g_m->cfg.norm, HS_NORM_LAYERNORM);
    hs_acts *a = NULL;
    hs_cache c = {0};
    assert_int_equal(hs_acts_create(&g_m->cfg, 1, t, 0, &a, &err), HS_OK);
    static const char *const f[] = {"ln_final.hook_scale"};
    assert_int_equal(hs_run_with_cache(g_m, a, g_p.clean, 1, t, f, 1, NULL, &c, &err), HS_OK);
    const double scale = hs_cache_get(&c, "ln_final.hook_scale")->data[14];
    const hs_params *P = &g_m->params;
    const float *wp = P->W_pos + (size_t)3 * D;
    double mu = 0.0, want = 0.0;
    for (int e = 0; e < D; e++) mu += wp[e];
    mu /= D;
    for (int e = 0; e < D; e++)
        want += ((double)wp[e] - mu) * P->ln_final_w[e] *
                ((double)P->W_U[(size_t)e * V + g_p.answer[0]] - P->W_U[(size_t)e * V + g_p.wrong[0]]);
    want /= scale;
    /* the scale here comes from a 1-row forward, the engine's from a padded
     * chunk: OpenBLAS's kernel differs with the size, so float rounding */
    if (!(fabs(d1.attr_pos[(size_t)kp * t + 3] - want) < 1e-5 * (1.0 + fabs(want))))
        fail_msg("pos_embed at 3: %.17g, by hand %.17g", d1.attr_pos[(size_t)kp * t + 3], want);
    /* and it is not the number at the read position */
    assert_true(fabs(d1.attr_pos[(size_t)kp * t + 3] - d1.attr[kp]) > 1e-3);
    hs_cache_free(&c);
    hs_acts_destroy(a);
    hs_dla_set_free(&d1);
}

static void patch_identities_and_batch_independence(void **state)
{
    (void)state;
    const int n = 8, t = g_p.t, L = g_m->cfg.n_layers, H = g_m->cfg.n_heads;
    const int *src = g_p.clean, *dst = g_p.corr; /* the first n pairs */
    hs_error err = {0};
    /* corrupted into corrupted: every cell is exactly the corrupted LD */
    hs_patch_report cc;
    const unsigned all = (1u << HS_PATCH_RESID_PRE) | (1u << HS_PATCH_RESID_POST) | (1u << HS_PATCH_Z) |
                         (1u << HS_PATCH_PATTERN);
    assert_int_equal(hs_patch_run_tokens(g_m, NULL, dst, dst, n, t, g_p.answer, g_p.wrong, g_p.pos, all, &cc, &err),
                     HS_OK);
    for (int a = 0; a < HS_PATCH_N; a++) {
        if (!(all & (1u << a))) continue;
        const size_t cells = hs_patch_act_is_head(a) ? (size_t)L * H : (size_t)L * t;
        for (size_t i = 0; i < cells; i++) assert_true(cc.ld[a][i] == cc.ld_corr);
    }
    hs_patch_report_free(&cc);

    /* clean into corrupted, batched and with 3 threads */
    hs_pool *pool = NULL;
    assert_int_equal(hs_pool_create(3, &pool, &err), HS_OK);
    hs_patch_report b1, b3;
    assert_int_equal(hs_patch_run_tokens(g_m, NULL, src, dst, n, t, g_p.answer, g_p.wrong, g_p.pos, all, &b1, &err),
                     HS_OK);
    assert_int_equal(hs_patch_run_tokens(g_m, pool, src, dst, n, t, g_p.answer, g_p.wrong, g_p.pos, all, &b3, &err),
                     HS_OK);
    /* the whole clean residual at the last layer and the read position: exactly 1 */
    assert_true(b1.metric[HS_PATCH_RESID_POST][(L - 1) * t + Q] == 1.0);
    /* layer 0's input at the adjective, the one token that differs: exactly 1 */
    assert_true(b1.metric[HS_PATCH_RESID_PRE][0 * t + HS_WG_POS_ADJ] == 1.0);
    /* a position whose token is the same in both runs changes nothing: exactly 0 */
    assert_true(b1.metric[HS_PATCH_RESID_PRE][0 * t + 3] == 0.0); /* "not" */
    for (int a = 0; a < HS_PATCH_N; a++) {
        if (!(all & (1u << a))) continue;
        const size_t cells = hs_patch_act_is_head(a) ? (size_t)L * H : (size_t)L * t;
        assert_memory_equal(b1.ld[a], b3.ld[a], cells * sizeof(double));
        if (hs_patch_act_is_head(a)) assert_memory_equal(b1.ld_pos[a], b3.ld_pos[a], cells * t * sizeof(double));
    }
    /* z alone by head: the base runs make no logits and read the answer's and
     * the wrong token's columns at the read row (hs_final_token_logits, the
     * suffix runs' arithmetic, which the default run's z cells also divide
     * by): the cells are the default run's bit for bit, the LDs reported
     * those of every logit's product to float32 rounding */
    {
        hs_patch_report zh;
        assert_int_equal(hs_patch_run_tokens_by(g_m, NULL, src, dst, n, t, g_p.answer, g_p.wrong, g_p.pos,
                                                1u << HS_PATCH_Z, HS_PATCH_BY_HEAD, &zh, &err),
                         HS_OK);
        assert_memory_equal(zh.metric[HS_PATCH_Z], b1.metric[HS_PATCH_Z], (size_t)L * H * sizeof(double));
        if (!(fabs(zh.ld_clean - b1.ld_clean) <= 1e-5 * (1.0 + fabs(b1.ld_clean))) ||
            !(fabs(zh.ld_corr - b1.ld_corr) <= 1e-5 * (1.0 + fabs(b1.ld_corr))) || zh.ld_clean == zh.ld_corr)
            fail_msg("two columns: clean %.9g corrupted %.9g; every logit: %.9g %.9g", zh.ld_clean, zh.ld_corr,
                     b1.ld_clean, b1.ld_corr);
        hs_patch_report_free(&zh);
    }
    /* one pair at a time: the per-pair LDs, summed in order, give the batched
     * grid; the all-position cells too (one pair's heads run in batches that
     * span layers, experiments/patch.c units_per_job; the set's a layer's) */
    double *acc = calloc((size_t)L * H * t, sizeof *acc), *acc_all = calloc((size_t)L * H, sizeof *acc_all);
    for (int i = 0; i < n; i++) {
        hs_patch_report one;
        assert_int_equal(hs_patch_run_tokens(g_m, NULL, src + (size_t)i * t, dst + (size_t)i * t, 1, t, g_p.answer + i,
                                             g_p.wrong + i, g_p.pos + i, 1u << HS_PATCH_Z, &one, &err),
                         HS_OK);
        for (int k = 0; k < L * H * t; k++) acc[k] += one.ld_pos[HS_PATCH_Z][k];
        for (int k = 0; k < L * H; k++) acc_all[k] += one.ld[HS_PATCH_Z][k];
        hs_patch_report_free(&one);
    }
    /* the cells left out of the sweeps (the last layer's z at a position no
     * prompt reads) equal the corrupted LD; and a hand-patched forward there
     * leaves every read logit bit-identical to the unpatched one */
    assert_true(b1.ld_pos[HS_PATCH_Z][((size_t)(L - 1) * H + 0) * t + 3] == b1.ld_corr);
    {
        hs_acts *a = NULL;
        hs_hooks *hk = NULL;
        hs_cache cl = {0};
        assert_int_equal(hs_acts_create(&g_m->cfg, n, t, 0, &a, &err), HS_OK);
        assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
        const char *f[] = {"blocks.*.attn.hook_z"};
        assert_int_equal(hs_run_with_cache(g_m, a, src, n, t, f, 1, NULL, &cl, &err), HS_OK);
        float *plain = malloc((size_t)n * g_m->cfg.d_vocab * sizeof *plain);
        assert_int_equal(hs_run_with_hooks(g_m, a, dst, n, t, NULL, &err), HS_OK);
        for (int i = 0; i < n; i++)
            memcpy(plain + (size_t)i * g_m->cfg.d_vocab, a->logits + ((size_t)i * t + Q) * g_m->cfg.d_vocab,
                   (size_t)g_m->cfg.d_vocab * sizeof *plain);
        for (int h = 0; h < H; h++)
            for (int p = 0; p < Q; p++) {
                hs_hooks_clear(hk);
                assert_int_equal(hs_hooks_add_patch_head(hk, &cl, (hs_head){L - 1, h}, p, &err), HS_OK);
                assert_int_equal(hs_run_with_hooks(g_m, a, dst, n, t, hk, &err), HS_OK);
                for (int i = 0; i < n; i++)
                    assert_memory_equal(plain + (size_t)i * g_m->cfg.d_vocab,
                                        a->logits + ((size_t)i * t + Q) * g_m->cfg.d_vocab,
                                        (size_t)g_m->cfg.d_vocab * sizeof *plain);
            }
        free(plain);
        hs_cache_free(&cl);
        hs_hooks_destroy(hk);
        hs_acts_destroy(a);
    }
    for (int k = 0; k < L * H * t; k++)
        if (!(acc[k] / n == b1.ld_pos[HS_PATCH_Z][k]))
            fail_msg("cell %d: one at a time %.17g, batched %.17g", k, acc[k] / n, b1.ld_pos[HS_PATCH_Z][k]);
    for (int k = 0; k < L * H; k++)
        if (!(acc_all[k] / n == b1.ld[HS_PATCH_Z][k]))
            fail_msg("head %d: one at a time %.17g, batched %.17g", k, acc_all[k] / n, b1.ld[HS_PATCH_Z][k]);
    free(acc);
    free(acc_all);
    hs_patch_report_free(&b1);
    hs_patch_report_free(&b3);
    hs_pool_destroy(pool);
}

/* ------------------------------------------------------------------------ */
/* Heads                                                                     */

static void heads_scores_match_a_hand_computed_pattern(void **state)
{
    (void)state;
    const char *s = "the animal did not cross the street because it was too tired , so the animal waited .";
    hs_prompts p;
    hs_error err = {0};
    assert_int_equal(hs_prompts_sentence(s, g_v, g_m->cfg.n_ctx, &p, &err), HS_OK);
    const int t = p.t, L = g_m->cfg.n_layers, H = g_m->cfg.n_heads;
    hs_heads_report *r = calloc(1, sizeof *r);
    assert_int_equal(hs_heads_run(g_m, g_v, NULL, &p, hs_wg_nouns, HS_WG_N_NOUNS, NULL, HS_DETECT_MUL, 0, 0, r, &err), HS_OK);
    assert_true(r->has[HS_HEADS_FIRST_NOUN] && !r->has[HS_HEADS_TARGET]);
    /* by hand: the pattern of one forward, the sums written out */
    hs_acts *a = NULL;
    hs_cache c = {0};
    assert_int_equal(hs_acts_create(&g_m->cfg, 1, t, 0, &a, &err), HS_OK);
    const char *filt[] = {"blocks.*.attn.hook_pattern"};
    assert_int_equal(hs_run_with_cache(g_m, a, p.clean, 1, t, filt, 1, NULL, &c, &err), HS_OK);
    for (int l = 0; l < L; l++) {
        const hs_cache_entry *e = hs_cache_getf(&c, "blocks.%d.attn.hook_pattern", l);
        for (int h = 0; h < H; h++) {
            const float *A = e->data + (size_t)h * t * t;
            double prev = 0.0, tot = 0.0, first = 0.0;
            for (int i = 0; i < t; i++)
                for (int j = 0; j <= i; j++) {
                    tot += A[i * t + j];
                    if (j == i - 1) prev += A[i * t + j];
                    if (j == 1) first += A[i * t + j]; /* "animal" at 1 is the first noun */
                }
            assert_true(fabs(r->score[HS_HEADS_PREV_TOKEN][l * H + h] - prev / tot) < 1e-12);
            assert_true(fabs(r->score[HS_HEADS_FIRST_NOUN][l * H + h] - first / tot) < 1e-12);
        }
    }
    /* abs: 1 - round(sum|A - D| / t, 3) for the previous-token pattern */
    hs_heads_report *ra = calloc(1, sizeof *ra);
    assert_int_equal(hs_heads_run(g_m, g_v, NULL, &p, hs_wg_nouns, HS_WG_N_NOUNS, NULL, HS_DETECT_ABS, 0, 0, ra, &err), HS_OK);
    const hs_cache_entry *e0 = hs_cache_get(&c, "blocks.0.attn.hook_pattern");
    double absd = 0.0;
    for (int i = 0; i < t; i++)
        for (int j = 0; j < t; j++) absd += fabs(e0->data[i * t + j] - (j == i - 1 ? 1.0 : 0.0));
    assert_true(ra->score[HS_HEADS_PREV_TOKEN][0] == 1.0 - nearbyint(absd / t * 1000.0) / 1000.0);
    hs_cache_free(&c);
    hs_acts_destroy(a);
    free(r);
    free(ra);
    hs_prompts_free(&p);
}

/* ------------------------------------------------------------------------ */
/* Lens                                                                      */

static void lens_last_layer_is_the_logits_and_layer_0_uses_its_own_statistics(void **state)
{
    (void)state;
    const int t = g_p.t, B = HS_ENGINE_CHUNK, L = g_m->cfg.n_layers, D = g_m->cfg.d_model, V = g_m->cfg.d_vocab;
    hs_error err = {0};
    hs_acts *a = NULL;
    hs_cache c = {0};
    assert_int_equal(hs_acts_create(&g_m->cfg, B, t, 0, &a, &err), HS_OK);
    const char *f[] = {"blocks.*.hook_resid_pre", "blocks.*.hook_resid_post", "ln_final.hook_scale", "logits"};
    assert_int_equal(hs_run_with_cache(g_m, a, g_p.clean, B, t, f, 4, NULL, &c, &err), HS_OK);
    const size_t N = (size_t)B * t;
    float *scratch = malloc(N * (D + 2) * sizeof(float)), *lg = malloc(N * V * sizeof(float));
    /* the last point: the model's logits, bit for bit */
    hs_final_logits(g_m, hs_cache_getf(&c, "blocks.%d.hook_resid_post", L - 1)->data, N, scratch, lg);
    assert_memory_equal(lg, hs_cache_get(&c, "logits")->data, N * V * sizeof(float));
    /* layer 0: LN with resid_pre 0's own mean and variance (by hand, in
     * double), not the final residual's scale */
    hs_final_logits(g_m, hs_cache_get(&c, "blocks.0.hook_resid_pre")->data, N, scratch, lg);
    const float *x = hs_cache_get(&c, "blocks.0.hook_resid_pre")->data + (size_t)Q * D; /* row 0, position 14 */
    const float fs = hs_cache_get(&c, "ln_final.hook_scale")->data[Q];
    const hs_params *P = &g_m->params;
    double mu = 0.0, var = 0.0;
    for (int d = 0; d < D; d++) mu += x[d];
    mu /= D;
    for (int d = 0; d < D; d++) var += (x[d] - mu) * (x[d] - mu);
    const double own = sqrt(var / D + g_m->cfg.eps);
    double max_own = 0.0, max_final = 0.0;
    for (int v = 0; v < V; v++) {
        double lo = P->b_U ? P->b_U[v] : 0.0, lf = lo;
        for (int d = 0; d < D; d++) {
            const double w = P->W_U[(size_t)d * V + v], g = P->ln_final_w[d], b = P->ln_final_b ? P->ln_final_b[d] : 0.0;
            lo += ((x[d] - mu) / own * g + b) * w;
            lf += ((x[d] - mu) / fs * g + b) * w;
        }
        const double got = lg[(size_t)Q * V + v];
        if (fabs(got - lo) > max_own) max_own = fabs(got - lo);
        if (fabs(got - lf) > max_final) max_final = fabs(got - lf);
    }
    print_message("layer 0 lens vs own statistics: %.2g; vs the final scale (%.3f vs own %.3f): %.3g\n", max_own,
                  (double)fs, own, max_final);
    assert_true(max_own < 1e-4);
    assert_true(max_final > 0.1);
    free(scratch);
    free(lg);
    /* the lens's forward (HS_LOGITS_NONE): the same residuals, bit for bit,
     * and no final norm or logits (their points never fire); a backward
     * from it is refused */
    hs_cache c2 = {0};
    a->logit_pos = HS_LOGITS_NONE;
    assert_int_equal(hs_run_with_cache(g_m, a, g_p.clean, B, t, f, 4, NULL, &c2, &err), HS_OK);
    a->logit_pos = -1;
    assert_int_equal(c2.n, 2 * L);
    assert_null(hs_cache_get(&c2, "logits"));
    assert_null(hs_cache_get(&c2, "ln_final.hook_scale"));
    for (int l = 0; l < L; l++) {
        const hs_cache_entry *x1 = hs_cache_getf(&c, "blocks.%d.hook_resid_post", l);
        assert_memory_equal(x1->data, hs_cache_getf(&c2, "blocks.%d.hook_resid_post", l)->data, N * D * sizeof(float));
    }
    hs_cache_free(&c2);
    hs_acts *ga = NULL;
    assert_int_equal(hs_acts_create(&g_m->cfg, 1, t, 1, &ga, &err), HS_OK);
    ga->logit_pos = HS_LOGITS_NONE;
    assert_int_equal(hs_forward(g_m, ga, g_p.clean, 1, t, NULL, &err), HS_OK);
    float *dl = calloc((size_t)t * V, sizeof(float));
    assert_non_null(dl);
    assert_int_equal(hs_backward_acts(g_m, ga, dl, NULL, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "the forward computed no logits"));
    free(dl);
    hs_acts_destroy(ga);
    hs_cache_free(&c);
    hs_acts_destroy(a);
    /* the report: the last point's numbers are the model's (top-1 = answer on every pair) */
    hs_lens_report r;
    assert_int_equal(hs_lens_run(g_m, NULL, &g_p, &r, &err), HS_OK);
    assert_int_equal(r.n_points, L + 1);
    assert_true(r.acc[L] == 1.0);
    hs_patch_report pr;
    assert_int_equal(hs_patch_run(g_m, NULL, &g_p, 1u << HS_PATCH_RESID_PRE, &pr, &err), HS_OK);
    assert_true(r.ld[L] == pr.ld_clean); /* the same logits, the same row order */
    hs_patch_report_free(&pr);
    /* the first prompt alone and twice (its points' products grouped with
     * other row counts beside them) has its bits: the mean of two equal
     * doubles is the value; top-1 as in the whole set */
    hs_prompts one = g_p, two = g_p;
    one.n = 1;
    int *tok2 = malloc(2 * (size_t)t * sizeof(int)), ans2[2] = {g_p.answer[0], g_p.answer[0]};
    int wr2[2] = {g_p.wrong[0], g_p.wrong[0]}, pos2[2] = {g_p.pos[0], g_p.pos[0]};
    assert_non_null(tok2);
    memcpy(tok2, g_p.clean, (size_t)t * sizeof(int));
    memcpy(tok2 + t, g_p.clean, (size_t)t * sizeof(int));
    two.n = 2;
    two.clean = tok2;
    two.corr = NULL;
    two.answer = ans2;
    two.wrong = wr2;
    two.pos = pos2;
    hs_lens_report r1, r2;
    assert_int_equal(hs_lens_run(g_m, NULL, &one, &r1, &err), HS_OK);
    assert_int_equal(hs_lens_run(g_m, NULL, &two, &r2, &err), HS_OK);
    assert_memory_equal(r1.top1, r.top1, (size_t)(L + 1) * t * sizeof(int));
    assert_memory_equal(r2.top1, r.top1, (size_t)(L + 1) * t * sizeof(int));
    assert_memory_equal(r1.p_final, r2.p_final, (size_t)(L + 1) * t * sizeof(double));
    assert_memory_equal(r1.ld, r2.ld, (size_t)(L + 1) * sizeof(double));
    assert_memory_equal(r1.p_answer, r2.p_answer, (size_t)(L + 1) * sizeof(double));
    hs_lens_report_free(&r1);
    hs_lens_report_free(&r2);
    free(tok2);
    hs_lens_report_free(&r);
}

/* ------------------------------------------------------------------------ */
/* Ablate                                                                    */

typedef struct {
    const float *mean; /* (t, H, dh) */
    int head, H, dh;
} mean_hook_ctx;

static int replace_head_z(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name;
    (void)ndim;
    const mean_hook_ctx *mc = ctx;
    for (int64_t b = 0; b < shape[0]; b++)
        for (int64_t p = 0; p < shape[1]; p++)
            memcpy(data + ((size_t)(b * shape[1] + p) * mc->H + mc->head) * mc->dh,
                   mc->mean + ((size_t)p * mc->H + mc->head) * mc->dh, (size_t)mc->dh * sizeof(float));
    return 1;
}

/* TransformerLens' zero edit of a whole hook point. */
static int zero_all(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name;
    (void)ctx;
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    memset(data, 0, n * sizeof(float));
    return 1;
}

/* mean LD over the rows of a run's logits */
static double mean_ld(const hs_acts *a, const hs_prompts *p, int n)
{
    const int V = g_m->cfg.d_vocab;
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        const float *x = a->logits + ((size_t)i * p->t + p->pos[i]) * V;
        s += (double)x[p->answer[i]] - (double)x[p->wrong[i]];
    }
    return s / n;
}

static void ablate_zero_and_mean_equal_hand_ablation(void **state)
{
    (void)state;
    hs_prompts sub = g_p; /* the first 32 pairs (one chunk), borrowed */
    sub.n = HS_ENGINE_CHUNK;
    const int n = sub.n, t = sub.t, L = g_m->cfg.n_layers, H = g_m->cfg.n_heads, dh = g_m->cfg.d_head;
    hs_error err = {0};
    hs_ablate_report z, mn;
    assert_int_equal(hs_ablate_run(g_m, NULL, &sub, NULL, HS_ABLATE_ZERO, &z, &err), HS_OK);
    assert_int_equal(hs_ablate_run(g_m, NULL, &sub, NULL, HS_ABLATE_MEAN, &mn, &err), HS_OK);
    assert_int_equal(z.n_comp, L * (H + 2));
    hs_acts *a = NULL;
    hs_hooks *hk = NULL;
    hs_cache c = {0};
    assert_int_equal(hs_acts_create(&g_m->cfg, n, t, 0, &a, &err), HS_OK);
    assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
    assert_int_equal(hs_run_with_hooks(g_m, a, sub.clean, n, t, NULL, &err), HS_OK);
    assert_true(z.metric_clean == mean_ld(a, &sub, n));
    /* zero: every head removed by hand, and each layer's attention as TransformerLens' hook edit
     * blocks.l.hook_attn_out = 0 (the heads' results and b_O) */
    for (int l = 0; l < L; l++)
        for (int h = -1; h < H; h++) {
            hs_head heads[1] = {{l, h}};
            char an[64];
            snprintf(an, sizeof an, "blocks.%d.hook_attn_out", l);
            hs_hooks_clear(hk);
            if (h < 0) assert_int_equal(hs_hooks_add(hk, an, zero_all, NULL, &err), HS_OK);
            else assert_int_equal(hs_hooks_add_zero_ablation(hk, g_m, heads, 1, &err), HS_OK);
            assert_int_equal(hs_run_with_hooks(g_m, a, sub.clean, n, t, hk, &err), HS_OK);
            const hs_ablate_comp *cp = &z.comp[l * (H + 2) + (h < 0 ? H : h)];
            assert_int_equal(cp->layer, l);
            assert_int_equal(cp->head, h);
            if (!(cp->metric == mean_ld(a, &sub, n)))
                fail_msg("zero L%d %d: %.17g by hand %.17g", l, h, cp->metric, mean_ld(a, &sub, n));
        }
    /* mean: the position-wise mean of hook_z over the 32 prompts, by hand; a layer's attention: of
     * hook_attn_out */
    const char *f[] = {"blocks.*.attn.hook_z", "blocks.*.hook_attn_out"};
    assert_int_equal(hs_run_with_cache(g_m, a, sub.clean, n, t, f, 2, NULL, &c, &err), HS_OK);
    const size_t arow = (size_t)t * g_m->cfg.d_model;
    float *amean = malloc(arow * sizeof *amean);
    for (int l = 0; l < L; l++) {
        const hs_cache_entry *e = hs_cache_getf(&c, "blocks.%d.hook_attn_out", l);
        for (size_t k = 0; k < arow; k++) {
            double s = 0.0;
            for (int i = 0; i < n; i++) s += e->data[(size_t)i * arow + k];
            amean[k] = (float)(s / n);
        }
        mean_hook_ctx mc = {amean, 0, 1, g_m->cfg.d_model};
        char name[64];
        snprintf(name, sizeof name, "blocks.%d.hook_attn_out", l);
        hs_hooks_clear(hk);
        assert_int_equal(hs_hooks_add(hk, name, replace_head_z, &mc, &err), HS_OK);
        assert_int_equal(hs_run_with_hooks(g_m, a, sub.clean, n, t, hk, &err), HS_OK);
        const double want = mean_ld(a, &sub, n), got = mn.comp[l * (H + 2) + H].metric;
        if (!(fabs(got - want) <= 1e-6 * fmax(1.0, fabs(want)))) fail_msg("mean L%d_attn_out: %.17g by hand %.17g", l, got, want);
    }
    free(amean);
    const size_t row = (size_t)t * H * dh;
    float *mean = malloc(row * sizeof *mean);
    for (int l = 0; l < L; l++) {
        const hs_cache_entry *e = hs_cache_getf(&c, "blocks.%d.attn.hook_z", l);
        for (size_t k = 0; k < row; k++) {
            double s = 0.0;
            for (int i = 0; i < n; i++) s += e->data[(size_t)i * row + k];
            mean[k] = (float)(s / n);
        }
        for (int h = 0; h < H; h++) {
            mean_hook_ctx mc = {mean, h, H, dh};
            char name[64];
            snprintf(name, sizeof name, "blocks.%d.attn.hook_z", l);
            hs_hooks_clear(hk);
            assert_int_equal(hs_hooks_add(hk, name, replace_head_z, &mc, &err), HS_OK);
            assert_int_equal(hs_run_with_hooks(g_m, a, sub.clean, n, t, hk, &err), HS_OK);
            const double want = mean_ld(a, &sub, n), got = mn.comp[l * (H + 2) + h].metric;
            if (!(got == want)) fail_msg("mean L%dH%d: %.17g by hand %.17g", l, h, got, want);
        }
    }
    free(mean);
    hs_cache_free(&c);
    hs_hooks_destroy(hk);
    hs_acts_destroy(a);
    hs_ablate_report_free(&z);
    hs_ablate_report_free(&mn);
}

/* hs_patch_usable: a clean - corrupted gap that is small against the spread
 * of the patched cells' raw LDs (the set: LD 0.242 clean, 0.215
 * corrupted, cells down to normalised -1.19) is flagged, with a why naming
 * both; a wide gap with an overshooting cell is not; coinciding LDs as
 * before. */
static void patch_tiny_gap_is_not_usable(void **state)
{
    (void)state;
    double ld[3] = {0.183, 0.26, 0.22}, metric[3];
    hs_patch_report r;
    memset(&r, 0, sizeof r);
    r.L = 1, r.H = 1, r.t = 3, r.n = 4;
    r.acts = 1u << HS_PATCH_RESID_PRE;
    r.ld[HS_PATCH_RESID_PRE] = ld, r.metric[HS_PATCH_RESID_PRE] = metric;
    r.ld_clean = 0.242, r.ld_corr = 0.215;
    char why[240];
    assert_int_equal(hs_patch_usable(&r, why, sizeof why), 0);
    if (!strstr(why, "+0.242") || !strstr(why, "+0.215") || !strstr(why, "spread"))
        fail_msg("why: %s", why);
    { /* the JSON (and the text report) carry the whole sentence, not its first 239 bytes */
        cJSON *j = hs_patch_json(&r);
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "why_not_usable");
        if (!cJSON_IsString(w) || !strstr(w->valuestring, "the raw LD of every cell is in the JSON"))
            fail_msg("why_not_usable cut: %s", cJSON_IsString(w) ? w->valuestring : "(none)");
        cJSON_Delete(j);
    }
    r.ld_clean = 8, r.ld_corr = -8, ld[0] = -9, ld[1] = 9, ld[2] = 3; /* overshoot: spread 18 < 2 x 16 */
    assert_int_equal(hs_patch_usable(&r, why, sizeof why), 1);
    r.ld_clean = r.ld_corr = 1;
    assert_int_equal(hs_patch_usable(&r, why, sizeof why), 0);
    assert_non_null(strstr(why, "coincide"));
}

/* hs_patch_gap_note: a usable set whose clean LD is below the corrupted one
 * (the new user's 4 IOI prompts on random GPT-2 weights: 0.057 logits the
 * wrong way) and one whose gap is under HS_PATCH_GAP_MIN each get a note
 * naming both LDs, in the summary and the JSON; a wide gap gets none. */
static void patch_gap_note_wrong_sign_and_small(void **state)
{
    (void)state;
    double ld[3] = {-0.02, 0.01, 0.037}, metric[3] = {0, 0.5, 1};
    hs_patch_report r;
    memset(&r, 0, sizeof r);
    r.L = 1, r.H = 1, r.t = 3, r.n = 4;
    r.acts = 1u << HS_PATCH_RESID_PRE;
    r.ld[HS_PATCH_RESID_PRE] = ld, r.metric[HS_PATCH_RESID_PRE] = metric, r.metric_pos[HS_PATCH_RESID_PRE] = metric;
    r.ld_clean = -0.020, r.ld_corr = 0.037;
    char why[512];
    assert_int_equal(hs_patch_usable(&r, why, sizeof why), 1);
    assert_int_equal(hs_patch_gap_note(&r, why, sizeof why), 1);
    if (!strstr(why, "below") || !strstr(why, "-0.020") || !strstr(why, "+0.037")) fail_msg("why: %s", why);
    hs_buf b = {0};
    hs_patch_summary(&r, &b);
    if (!b.s || !strstr(b.s, "\nnote: the clean LD (-0.020) is below")) fail_msg("summary: %s", b.s);
    hs_buf_free(&b);
    cJSON *j = hs_patch_json(&r);
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(j, "gap_note");
    if (!cJSON_IsString(g) || !strstr(g->valuestring, "below")) fail_msg("no gap_note in the JSON");
    cJSON_Delete(j);
    r.ld_clean = 0.5, r.ld_corr = 0.1, ld[0] = 0.1, ld[1] = 0.3, ld[2] = 0.5; /* right sign, 0.4 logits */
    assert_int_equal(hs_patch_gap_note(&r, why, sizeof why), 1);
    if (!strstr(why, "0.400 logits") || !strstr(why, "under 1")) fail_msg("why: %s", why);
    r.ld_clean = 8, r.ld_corr = -8, ld[0] = -8, ld[1] = 0, ld[2] = 8; /* 16 logits the right way */
    assert_int_equal(hs_patch_gap_note(&r, why, sizeof why), 0);
    assert_string_equal(why, "");
    j = hs_patch_json(&r);
    assert_null(cJSON_GetObjectItemCaseSensitive(j, "gap_note"));
    cJSON_Delete(j);
}

/* ------------------------------------------------------------------------ */
/* Starting at a later layer                                                 */

static int count_hook(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name;
    (void)shape;
    (void)ndim;
    (void)data;
    ++*(int *)ctx;
    return 0;
}

/* A hook on every point of a tail run: compares it with the full run's. */
typedef struct {
    const hs_cache *full;
    int layer, seen, differ, early;
} cmp_ctx;

static int compare_hook(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)shape;
    (void)ndim;
    cmp_ctx *cc = ctx;
    int l;
    if (sscanf(name, "blocks.%d.", &l) == 1 && l < cc->layer) cc->early++;
    const hs_cache_entry *e = hs_cache_get(cc->full, name);
    if (e == NULL) return 0; /* hook_tokens, hook_embed, hook_pos_embed: the tail's own */
    cc->seen++;
    if (memcmp(e->data, data, e->numel * sizeof(float)) != 0) cc->differ++;
    return 0;
}

/* Random 3-layer models (learned positions, LayerNorm, GELU; no position
 * embedding, RMSNorm, ReLU, no biases): from each later layer, on the full
 * run's cached residual and with a zero ablation and a patch from another
 * run, every point from that layer on and the logits are bit-identical to
 * the full run's, and no hook on an earlier point is called. */
static void a_run_from_a_later_layer_is_bit_identical_to_the_full_run(void **state)
{
    (void)state;
    enum { B = 3, T = 6 };
    for (int variant = 0; variant < 2; variant++) {
        hs_config c = hs_config_default();
        c.n_layers = 3;
        c.d_model = 16;
        c.n_heads = 2;
        c.d_head = 8;
        c.d_mlp = 32;
        c.n_ctx = T;
        c.d_vocab = 11;
        if (variant == 1) {
            c.pos = HS_POS_NONE;
            c.norm = HS_NORM_RMSNORM;
            c.act = HS_ACT_RELU;
            c.bias = 0;
        }
        hs_model *m = random_model_of(&c, 7 + (uint64_t)variant);
        hs_error err = {0};
        int tok[B * T], tok2[B * T];
        for (int i = 0; i < B * T; i++) {
            tok[i] = (i * 7 + 3) % c.d_vocab;
            tok2[i] = (i * 5 + 1) % c.d_vocab;
        }
        hs_acts *a = NULL;
        hs_hooks *hk = NULL;
        assert_int_equal(hs_acts_create(&m->cfg, B, T, 0, &a, &err), HS_OK);
        assert_int_equal(hs_hooks_create(&hk, &err), HS_OK);
        const char *every[] = {"**"};
        hs_cache other = {0};
        assert_int_equal(hs_run_with_cache(m, a, tok2, B, T, every, 1, NULL, &other, &err), HS_OK);
        for (int layer = 1; layer < c.n_layers; layer++) {
            hs_model *tail = NULL;
            assert_int_equal(hs_model_tail(m, layer, &tail, &err), HS_OK);
            hs_cache full = {0};
            hs_hooks_clear(hk);
            assert_int_equal(hs_hooks_add_zero_ablation(hk, m, &(hs_head){layer, 1}, 1, &err), HS_OK);
            assert_int_equal(hs_hooks_add_patch_head(hk, &other, (hs_head){c.n_layers - 1, 0}, 2, &err), HS_OK);
            assert_int_equal(hs_run_with_cache(m, a, tok, B, T, every, 1, hk, &full, &err), HS_OK);
            const hs_cache_entry *rp = hs_cache_getf(&full, "blocks.%d.hook_resid_pre", layer);
            assert_non_null(rp);
            cmp_ctx cc = {&full, layer, 0, 0, 0};
            int early = 0;
            char pat[64];
            snprintf(pat, sizeof pat, "blocks.%d.hook_resid_post", layer - 1);
            assert_int_equal(hs_hooks_add(hk, pat, count_hook, &early, &err), HS_OK);
            assert_int_equal(hs_hooks_add(hk, "**", compare_hook, &cc, &err), HS_OK);
            memset(a->logits, 0, (size_t)B * T * c.d_vocab * sizeof(float));
            assert_int_equal(hs_run_tail_with_hooks(m, tail, layer, a, rp->data, tok, B, T, hk, &err), HS_OK);
            assert_int_equal(early, 0);
            assert_int_equal(cc.early, 0);
            assert_int_equal(cc.differ, 0);
            /* the layers from `layer` on, each with at least its residual, attention and MLP points */
            assert_true(cc.seen >= 10 * (c.n_layers - layer));
            assert_memory_equal(a->logits, hs_cache_get(&full, "logits")->data,
                                (size_t)B * T * c.d_vocab * sizeof(float));
            /* a different residual gives different logits: the input is used */
            const hs_cache_entry *rp2 = hs_cache_getf(&other, "blocks.%d.hook_resid_pre", layer);
            hs_hooks_clear(hk);
            assert_int_equal(hs_run_tail_with_hooks(m, tail, layer, a, rp2->data, tok, B, T, NULL, &err), HS_OK);
            assert_memory_equal(a->logits, hs_cache_get(&other, "logits")->data,
                                (size_t)B * T * c.d_vocab * sizeof(float));
            hs_cache_free(&full);
            free(tail);
        }
        /* layer 0 and L are no tails */
        hs_model *bad = NULL;
        assert_int_equal(hs_model_tail(m, 0, &bad, &err), HS_ERR_INPUT);
        assert_int_equal(hs_model_tail(m, c.n_layers, &bad, &err), HS_ERR_INPUT);
        assert_null(bad);
        hs_cache_free(&other);
        hs_hooks_destroy(hk);
        hs_acts_destroy(a);
        hs_model_destroy(m);
    }
}

/* The engine from a later layer: a sweep with a patch at layer 1 over 37
 * rows (a short last chunk) from the cached residuals gives the logits of
 * the full sweep bit for bit. */
typedef struct {
    const hs_cache *clean_pad; /* (n_pad) rows */
    float *logits;             /* (n, t, V) */
    int t, V;
} sweep_ctx;

static hs_status sweep_hooks(void *ctx, hs_engine_worker *w, int chunk, int r0, int b)
{
    (void)chunk;
    const sweep_ctx *sc = ctx;
    hs_cache view; /* the rows the chunk's forward runs on (a short chunk's padded) */
    hs_status st = hs_cache_view_rows(&view, sc->clean_pad, r0, hs_engine_run_rows(b, sc->t), &w->err);
    if (st != HS_OK) return st;
    /* the view must outlive the run: keep its table in the worker's scratch cache */
    hs_cache_free(&w->tmp);
    w->tmp = view;
    return hs_hooks_add_patch_head(w->hk, &w->tmp, (hs_head){1, 2}, -1, &w->err);
}

static void sweep_rows(void *ctx, hs_engine_worker *w, const float *logits, int r0, int b)
{
    (void)w;
    const sweep_ctx *sc = ctx;
    memcpy(sc->logits + (size_t)r0 * sc->t * sc->V, logits, (size_t)b * sc->t * sc->V * sizeof(float));
}

/* An engine with activations for one prompt's rows (hs_engine_init_rows)
 * gives that prompt the bits a whole chunk's engine gives it in a set of 37,
 * refuses a forward on more rows, and refuses a capacity outside
 * [1, HS_ENGINE_CHUNK]. */
static void engine_with_fewer_rows_gives_the_same_bits(void **state)
{
    (void)state;
    const int n = 37, t = g_p.t, V = g_m->cfg.d_vocab;
    hs_error err = {0};
    hs_engine big, small;
    assert_int_equal(hs_engine_init(&big, g_m, NULL, t, &err), HS_OK);
    const int rows = hs_engine_run_rows(1, t);
    assert_true(rows < HS_ENGINE_CHUNK);
    assert_int_equal(hs_engine_init_rows(&small, g_m, NULL, t, rows, &err), HS_OK);
    assert_int_equal(small.rows, rows);
    assert_int_equal(small.w[0].acts->B, rows);
    float *a = calloc((size_t)n * t * V, sizeof *a), *b = calloc((size_t)t * V, sizeof *b);
    sweep_ctx s1 = {NULL, a, t, V}, s2 = {NULL, b, t, V};
    assert_int_equal(hs_engine_sweep(&big, &big.w[0], g_p.corr, n, NULL, sweep_rows, &s1), HS_OK);
    assert_int_equal(hs_engine_sweep(&small, &small.w[0], g_p.corr, 1, NULL, sweep_rows, &s2), HS_OK);
    assert_memory_equal(a, b, (size_t)t * V * sizeof *a);
    /* a chunk of more rows than the activations hold fails, it is not written past them */
    assert_int_equal(hs_engine_sweep(&small, &small.w[0], g_p.corr, rows + 1, NULL, NULL, NULL), HS_ERR_INPUT);
    hs_engine bad;
    assert_int_equal(hs_engine_init_rows(&bad, g_m, NULL, t, 0, &err), HS_ERR_INPUT);
    assert_int_equal(hs_engine_init_rows(&bad, g_m, NULL, t, HS_ENGINE_CHUNK + 1, &err), HS_ERR_INPUT);
    hs_engine_free(&bad);
    free(a);
    free(b);
    hs_engine_free(&big);
    hs_engine_free(&small);
}

static void engine_sweep_from_a_later_layer_equals_the_full_sweep(void **state)
{
    (void)state;
    const int n = 37, t = g_p.t, V = g_m->cfg.d_vocab;
    hs_error err = {0};
    int n_pad = 0;
    int *clean_pad = hs_engine_pad_rows(g_p.clean, n, t, &n_pad);
    assert_non_null(clean_pad);
    hs_engine e;
    assert_int_equal(hs_engine_init(&e, g_m, NULL, t, &err), HS_OK);
    const char *f[] = {"blocks.*.hook_resid_pre", "blocks.*.attn.hook_z"};
    hs_cache clean = {0}, corr = {0};
    assert_int_equal(hs_engine_cache(&e, &e.w[0], clean_pad, n_pad, f, 2, NULL, &clean), HS_OK);
    assert_int_equal(hs_engine_cache(&e, &e.w[0], g_p.corr, n, f, 2, NULL, &corr), HS_OK);
    float *a = calloc((size_t)n * t * V, sizeof *a), *b = calloc((size_t)n * t * V, sizeof *b);
    sweep_ctx s1 = {&clean, a, t, V}, s2 = {&clean, b, t, V};
    assert_int_equal(hs_engine_sweep(&e, &e.w[0], g_p.corr, n, sweep_hooks, sweep_rows, &s1), HS_OK);
    assert_int_equal(hs_engine_sweep_from(&e, &e.w[0], g_p.corr, n, 1, &corr, sweep_hooks, sweep_rows, &s2), HS_OK);
    assert_memory_equal(a, b, (size_t)n * t * V * sizeof *a);
    /* the patch did something: the logits differ from the unpatched corrupted run's */
    float *c = calloc((size_t)n * t * V, sizeof *c);
    sweep_ctx s3 = {&clean, c, t, V};
    assert_int_equal(hs_engine_sweep(&e, &e.w[0], g_p.corr, n, NULL, sweep_rows, &s3), HS_OK);
    assert_true(memcmp(a, c, (size_t)n * t * V * sizeof *a) != 0);
    /* a residual cache without the layer's entry is refused */
    hs_cache z = {0};
    const char *fz[] = {"blocks.*.attn.hook_z"};
    assert_int_equal(hs_engine_cache(&e, &e.w[0], g_p.corr, n, fz, 1, NULL, &z), HS_OK);
    assert_int_equal(hs_engine_sweep_from(&e, &e.w[0], g_p.corr, n, 1, &z, NULL, sweep_rows, &s3), HS_ERR_INPUT);
    hs_cache_free(&z);
    free(a);
    free(b);
    free(c);
    hs_cache_free(&e.w[0].tmp);
    hs_cache_free(&clean);
    hs_cache_free(&corr);
    hs_engine_free(&e);
    free(clean_pad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pool_ordered_sums_and_errors),
        cmocka_unit_test(pool_done_says_whether_a_lane_job_finished),
        cmocka_unit_test(prompt_sets_refuse_bad_lines_with_file_and_line),
        cmocka_unit_test(patch_reproduces_circuit_per_head_numbers),
        cmocka_unit_test(patch_identities_and_batch_independence),
        cmocka_unit_test(dla_by_position_matches_dla_at_the_read_position_and_by_hand),
        cmocka_unit_test(heads_scores_match_a_hand_computed_pattern),
        cmocka_unit_test(lens_last_layer_is_the_logits_and_layer_0_uses_its_own_statistics),
        cmocka_unit_test(ablate_zero_and_mean_equal_hand_ablation),
        cmocka_unit_test(patch_tiny_gap_is_not_usable),
        cmocka_unit_test(patch_gap_note_wrong_sign_and_small),
        cmocka_unit_test(a_run_from_a_later_layer_is_bit_identical_to_the_full_run),
        cmocka_unit_test(engine_sweep_from_a_later_layer_equals_the_full_sweep),
        cmocka_unit_test(engine_with_fewer_rows_gives_the_same_bits),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
