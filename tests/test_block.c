/*
 * tests/test_block.c -- the block-structure switches of the model core
 * (model.h "block structure": gated_mlp, parallel_attn_mlp, norm_place post,
 * attn_replace; act silu):
 *   - validation refuses the undefined combinations, naming the field;
 *   - every point hs_hook_points lists for a switch is the forward's, in the
 *     forward's order (parallel: no hook_resid_mid; gated: hook_pre_linear;
 *     post-norm: ln1 after hook_attn_out, ln2 after hook_mlp_out);
 *   - the forward with an observer and the fused one without give the same
 *     logits, bit for bit, and the one-position tail (acts->logit_pos) the
 *     same to 1e-5;
 *   - a checkpoint keeps each switch (and writes none of them for a plain
 *     model: the golden bytes);
 *   - the parameters' gradients are the same bits on 1 and 2 workers;
 *   - TransformerLens' weight processing keeps a parallel block's logits
 *     (up to a constant per position) and refuses the other switches;
 *   - running the tail of the model from blocks.{l}.hook_resid_pre (the probe
 *     engine's patch-from-layer) gives the full run's logits bit for bit;
 *   - the residual decompositions (DLA, decompose, the circuit graph) refuse
 *     post-norm and attn_replace models naming the switch; a parallel
 *     model's graph has no edge a{l}.h -> m{l} and says parallel_attn_mlp in
 *     its graph.json cfg, which reads back only into a parallel model.
 * The gradients are checked by finite differences in tests/test_model_grad.c.
 *
 * Run as `test_block --dump DIR` it writes, for tests/test_block_torch.sh and
 * tests/py/block_ref.py, one random model per switch: DIR/<case>.safetensors
 * (the checkpoint), DIR/<case>.acts.safetensors (every forward point, and the
 * backward to the activations of the mean cross-entropy under "grad:<point>")
 * and DIR/<case>.grads.safetensors (every parameter's gradient of the mean
 * cross-entropy, hs_backward on a batch it splits into parts), and
 * DIR/block_dump.json (cases, config, tokens, targets, loss).
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
#include "model/model.h"
#include "model/train.h"
#include "model/checkpoint.h"
#include "probe/probe.h"

#include "fixture.h"

enum { V = 11, B = 4, T = 8, MAXPTS = 512 };

typedef struct {
    const char *name;
    void (*set)(hs_config *c);
} block_case;

static void set_base(hs_config *c) { (void)c; }
static void set_silu(hs_config *c) { c->act = HS_ACT_SILU; }
static void set_gated(hs_config *c) { c->gated_mlp = 1; }
static void set_gated_silu_rms(hs_config *c)
{
    c->gated_mlp = 1;
    c->act = HS_ACT_SILU;
    c->norm = HS_NORM_RMSNORM;
}
static void set_parallel(hs_config *c) { c->parallel_attn_mlp = 1; }
static void set_post(hs_config *c) { c->norm_place = HS_NORM_POST; }
static void set_post_rms_nofinal(hs_config *c)
{
    c->norm_place = HS_NORM_POST;
    c->norm = HS_NORM_RMSNORM;
    c->ln_final = 0;
}
static void set_post_attn_only(hs_config *c)
{
    c->norm_place = HS_NORM_POST;
    c->d_mlp = 0;
}
static void set_replace(hs_config *c) { c->attn_replace = 1; }
static void set_replace_post_attn_only(hs_config *c)
{
    c->attn_replace = 1;
    c->norm_place = HS_NORM_POST;
    c->d_mlp = 0;
}
static void set_uniform_replace(hs_config *c) /* the ladder's "average, replacing" row */
{
    c->attn = HS_ATTN_UNIFORM;
    c->attn_replace = 1;
    c->ln1 = 0;
    c->d_mlp = 0;
}
static void set_llama_like(hs_config *c)
{
    c->norm = HS_NORM_RMSNORM;
    c->act = HS_ACT_SILU;
    c->gated_mlp = 1;
    c->parallel_attn_mlp = 1;
    c->bias = 0;
}

static const block_case CASES[] = {
    {"base", set_base},
    {"silu", set_silu},
    {"gated_gelu", set_gated},
    {"gated_silu_rms", set_gated_silu_rms},
    {"parallel", set_parallel},
    {"post", set_post},
    {"post_rms_nofinal", set_post_rms_nofinal},
    {"post_attn_only", set_post_attn_only},
    {"replace", set_replace},
    {"replace_post_attn_only", set_replace_post_attn_only},
    {"uniform_replace", set_uniform_replace},
    {"llama_like", set_llama_like},
};
enum { N_CASES = sizeof CASES / sizeof CASES[0] };

static hs_config case_config(const block_case *bc)
{
    hs_config c = hs_config_default();
    c.d_model = 16;
    c.n_heads = 2;
    c.d_head = 8;
    c.d_mlp = 24;
    c.n_ctx = T;
    c.d_vocab = V;
    bc->set(&c);
    return c;
}

static void tokens_of(int *tok, int *tgt)
{
    for (int i = 0; i < B * T; i++) {
        tok[i] = (i * 7 + i / 5) % V;
        tgt[i] = i % 9 == 4 ? -1 : (i * 3 + 2) % V;
    }
}

/* ------------------------------------------------------------------------ */
/* Validation                                                                */

static void expect_refused(hs_config c, const char *named)
{
    hs_error err;
    memset(&err, 0, sizeof err);
    if (hs_config_validate(&c, &err) != HS_ERR_CONFIG) fail_msg("config accepted; want one naming %s", named);
    if (strstr(err.msg, named) == NULL || strchr(err.msg, '\n'))
        fail_msg("message '%s' does not name %s in one line", err.msg, named);
}

static void undefined_combinations_are_refused(void **state)
{
    (void)state;
    const hs_config base = case_config(&CASES[0]);
    hs_config c = base;
    c.gated_mlp = 1;
    c.d_mlp = 0;
    expect_refused(c, "gated_mlp");
    c = base;
    c.parallel_attn_mlp = 1;
    c.norm_place = HS_NORM_POST;
    expect_refused(c, "parallel_attn_mlp with norm_place post");
    c = base;
    c.parallel_attn_mlp = 1;
    c.attn_replace = 1;
    expect_refused(c, "parallel_attn_mlp with attn_replace");
    c = base;
    c.norm_place = HS_NORM_POST;
    c.norm = HS_NORM_NONE;
    expect_refused(c, "norm_place post");
    c = base;
    c.norm_place = (hs_norm_place)2;
    expect_refused(c, "norm_place");
    c = base;
    c.act = (hs_act)(HS_ACT_SILU + 1);
    expect_refused(c, "act");
    /* names */
    assert_int_equal(hs_act_parse("silu"), HS_ACT_SILU);
    assert_string_equal(hs_act_name(HS_ACT_SILU), "silu");
    assert_int_equal(hs_norm_place_parse("post"), HS_NORM_POST);
    assert_int_equal(hs_norm_place_parse("sandwich"), -1);
    /* every case is valid, and says whether its residual is a sum */
    for (int i = 0; i < N_CASES; i++) {
        hs_error err;
        c = case_config(&CASES[i]);
        if (hs_config_validate(&c, &err) != HS_OK) fail_msg("%s: %s", CASES[i].name, err.msg);
        const char *why = hs_config_nonadditive(&c);
        const int additive = c.norm_place == HS_NORM_PRE && !c.attn_replace;
        if ((why == NULL) != additive) fail_msg("%s: hs_config_nonadditive says %s", CASES[i].name, why ? why : "NULL");
    }
}

/* ------------------------------------------------------------------------ */
/* Points                                                                    */

typedef struct {
    char names[MAXPTS][64];
    int n;
} seen;

static int see_fn(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)shape, (void)ndim, (void)data;
    seen *s = ctx;
    if (s->n < MAXPTS) snprintf(s->names[s->n++], 64, "%s", name);
    return 0;
}

static int list_has(const hs_hook_point *p, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(p[i].name, name) == 0) return 1;
    return 0;
}

static void points_are_the_forwards_in_order(void **state)
{
    (void)state;
    static hs_hook_point pts[MAXPTS];
    static seen s;
    int tok[B * T], tgt[B * T];
    tokens_of(tok, tgt);
    for (int i = 0; i < N_CASES; i++) {
        const hs_config c = case_config(&CASES[i]);
        hs_model *m = random_model_of(&c, 7 + (uint64_t)i);
        hs_acts *a = NULL;
        hs_error err;
        assert_int_equal(hs_acts_create(&c, 1, T, 0, &a, &err), HS_OK);
        s.n = 0;
        const hs_observer obs = {see_fn, NULL, &s};
        assert_int_equal(hs_forward(m, a, tok, 1, T, &obs, &err), HS_OK);
        const int n = hs_hook_points(&c, pts, MAXPTS);
        /* hook_tokens is the first point of both (the list names it) */
        if (n != s.n) fail_msg("%s: %d points listed, the forward called %d", CASES[i].name, n, s.n);
        for (int k = 0; k < n; k++)
            if (strcmp(pts[k].name, s.names[k]) != 0)
                fail_msg("%s: point %d listed %s, called %s", CASES[i].name, k, pts[k].name, s.names[k]);
        /* what each switch adds or takes away */
        assert_int_equal(list_has(pts, n, "blocks.0.hook_resid_mid"), !c.parallel_attn_mlp && c.d_mlp > 0);
        assert_int_equal(list_has(pts, n, "blocks.1.mlp.hook_pre_linear"), c.gated_mlp);
        assert_int_equal(list_has(pts, n, "blocks.0.ln1.hook_scale"), c.ln1);
        if (c.norm_place == HS_NORM_POST) { /* ln1 after the attention's output */
            int at_out = -1, ln1 = -1;
            for (int k = 0; k < n; k++) {
                if (strcmp(pts[k].name, "blocks.0.hook_attn_out") == 0) at_out = k;
                if (strcmp(pts[k].name, "blocks.0.ln1.hook_scale") == 0) ln1 = k;
            }
            assert_true(at_out >= 0 && ln1 > at_out);
        }
        hs_acts_destroy(a);
        hs_model_destroy(m);
    }
}

/* ------------------------------------------------------------------------ */
/* Forward paths, checkpoints, tails                                         */

static int nothing_fn(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name, (void)shape, (void)ndim, (void)data, (void)ctx;
    return 0;
}

/* logits (B,T,V) of m with (observe 1) or without an observer */
static void logits_of(const hs_model *m, int observe, const int *tok, float *out)
{
    hs_acts *a = NULL;
    hs_error err;
    assert_int_equal(hs_acts_create(&m->cfg, B, T, 1, &a, &err), HS_OK);
    const hs_observer obs = {nothing_fn, NULL, NULL};
    if (hs_forward(m, a, tok, B, T, observe ? &obs : NULL, &err) != HS_OK) fail_msg("forward: %s", err.msg);
    memcpy(out, a->logits, sizeof(float) * B * T * V);
    hs_acts_destroy(a);
}

static void observed_fused_saved_and_tail_runs_agree(void **state)
{
    (void)state;
    int tok[B * T], tgt[B * T];
    tokens_of(tok, tgt);
    static float ref[B * T * V], got[B * T * V];
    const char *dir = getenv("HS_TEST_TMP") ? getenv("HS_TEST_TMP") : "/tmp";
    for (int i = 0; i < N_CASES; i++) {
        const hs_config c = case_config(&CASES[i]);
        hs_model *m = random_model_of(&c, 11 + (uint64_t)i);
        hs_error err;
        logits_of(m, 0, tok, ref);
        logits_of(m, 1, tok, got);
        if (memcmp(ref, got, sizeof ref) != 0) fail_msg("%s: the observed forward's logits differ", CASES[i].name);

        /* a checkpoint keeps the switches */
        char path[512];
        snprintf(path, sizeof path, "%s/test_block.%d.safetensors", dir, i);
        assert_int_equal(hs_checkpoint_save(m, NULL, path, &err), HS_OK);
        hs_model *r = NULL;
        if (hs_checkpoint_load(path, &r, NULL, NULL, &err) != HS_OK) fail_msg("%s: load: %s", CASES[i].name, err.msg);
        assert_int_equal(r->cfg.gated_mlp, c.gated_mlp);
        assert_int_equal(r->cfg.parallel_attn_mlp, c.parallel_attn_mlp);
        assert_int_equal(r->cfg.norm_place, c.norm_place);
        assert_int_equal(r->cfg.attn_replace, c.attn_replace);
        assert_int_equal(r->cfg.act, c.act);
        logits_of(r, 0, tok, got);
        if (memcmp(ref, got, sizeof ref) != 0) fail_msg("%s: the reloaded model's logits differ", CASES[i].name);
        hs_model_destroy(r);
        remove(path);

        /* the config JSON names a switch only when it is on */
        cJSON *tl = hs_config_to_json(&c, HS_CONFIG_JSON_TL), *sw = hs_config_to_json(&c, HS_CONFIG_JSON_SWITCHES);
        assert_int_equal(cJSON_GetObjectItem(tl, "gated_mlp") != NULL, c.gated_mlp);
        assert_int_equal(cJSON_GetObjectItem(tl, "parallel_attn_mlp") != NULL, c.parallel_attn_mlp);
        assert_int_equal(cJSON_GetObjectItem(sw, "norm_place") != NULL, c.norm_place == HS_NORM_POST);
        assert_int_equal(cJSON_GetObjectItem(sw, "attn_replace") != NULL, c.attn_replace);
        cJSON_Delete(tl);
        cJSON_Delete(sw);

        /* the logits at one position (acts->logit_pos, the engine's sweeps:
         * the last block from its attention output on at that row alone)
         * are the full run's there, to 1e-5 */
        for (int pos = 0; pos < T; pos += T - 1) {
            hs_acts *one = NULL;
            assert_int_equal(hs_acts_create(&c, B, T, 0, &one, &err), HS_OK);
            one->logit_pos = pos;
            assert_int_equal(hs_forward(m, one, tok, B, T, NULL, &err), HS_OK);
            for (int b = 0; b < B; b++)
                for (int v = 0; v < V; v++) {
                    const float a = one->logits[((size_t)b * T + pos) * V + v], want = ref[((size_t)b * T + pos) * V + v];
                    if (fabsf(a - want) > 1e-5f * (1.0f + fabsf(want)))
                        fail_msg("%s: logit_pos %d: logit %g, the full run's %g", CASES[i].name, pos, a, want);
                }
            hs_acts_destroy(one);
        }

        /* the tail from blocks.1 on (patch from a layer) is the full run */
        hs_acts *a = NULL;
        assert_int_equal(hs_acts_create(&c, B, T, 0, &a, &err), HS_OK);
        hs_cache cache;
        hs_cache_init(&cache);
        const char *filt[] = {"blocks.1.hook_resid_pre", "logits"};
        assert_int_equal(hs_run_with_cache(m, a, tok, B, T, filt, 2, NULL, &cache, &err), HS_OK);
        const hs_cache_entry *rp = hs_cache_get(&cache, "blocks.1.hook_resid_pre");
        const hs_cache_entry *lg = hs_cache_get(&cache, "logits");
        assert_non_null(rp);
        assert_non_null(lg);
        hs_model *tail = NULL;
        assert_int_equal(hs_model_tail(m, 1, &tail, &err), HS_OK);
        assert_int_equal(hs_run_tail_with_hooks(m, tail, 1, a, rp->data, tok, B, T, NULL, &err), HS_OK);
        if (memcmp(a->logits, lg->data, sizeof(float) * B * T * V) != 0)
            fail_msg("%s: the tail from blocks.1 differs from the full run", CASES[i].name);
        /* and a changed resid_pre changes it (the check could fail) */
        rp->data[0] += 1.0f;
        assert_int_equal(hs_run_tail_with_hooks(m, tail, 1, a, rp->data, tok, B, T, NULL, &err), HS_OK);
        assert_true(memcmp(a->logits, lg->data, sizeof(float) * T * V) != 0);
        free(tail);
        hs_cache_free(&cache);
        hs_acts_destroy(a);
        hs_model_destroy(m);
    }
}

/* The parameters' gradients of one training batch (B x T, which hs_backward
 * splits into parts) on `threads` workers, into g (n_params). */
static void grads_on(hs_model *m, int threads, const int *tok, const int *tgt, float *g)
{
    hs_acts *a = NULL;
    hs_error err;
    assert_int_equal(hs_acts_create(&m->cfg, B, T, 1, &a, &err), HS_OK);
    assert_int_equal(hs_acts_set_threads(a, threads, &err), HS_OK);
    assert_int_equal(hs_forward(m, a, tok, B, T, NULL, &err), HS_OK);
    (void)hs_cross_entropy(m, a, tgt, NULL);
    hs_zero_grad(m);
    hs_backward(m, a, tok, tgt, NULL);
    memcpy(g, m->grad_mem, m->n_params * sizeof(float));
    hs_acts_destroy(a);
}

static void gradients_do_not_depend_on_the_thread_count(void **state)
{
    (void)state;
    int tok[B * T], tgt[B * T];
    tokens_of(tok, tgt);
    for (int i = 0; i < N_CASES; i++) {
        const hs_config c = case_config(&CASES[i]);
        hs_model *m = random_model_of(&c, 41 + (uint64_t)i);
        hs_error err;
        assert_int_equal(hs_model_alloc_train(m, &err), HS_OK);
        float *g1 = malloc(m->n_params * sizeof(float)), *g2 = malloc(m->n_params * sizeof(float));
        grads_on(m, 1, tok, tgt, g1);
        grads_on(m, 2, tok, tgt, g2);
        if (memcmp(g1, g2, m->n_params * sizeof(float)) != 0)
            fail_msg("%s: gradients on 1 and 2 workers differ", CASES[i].name);
        double n2 = 0.0;
        for (size_t k = 0; k < m->n_params; k++) n2 += (double)g1[k] * g1[k];
        assert_true(n2 > 0.0);
        free(g1);
        free(g2);
        hs_model_destroy(m);
    }
}

/* TransformerLens' weight processing applies to a parallel block as to the
 * sequential one (the logits move by a constant per position), and refuses
 * post-norm, replacing and gated blocks naming why. */
static void tl_processing_follows_the_block(void **state)
{
    (void)state;
    int tok[B * T], tgt[B * T];
    tokens_of(tok, tgt);
    static float ref[B * T * V], got[B * T * V];
    int processed = 0;
    for (int i = 0; i < N_CASES; i++) {
        const hs_config c = case_config(&CASES[i]);
        hs_model *m = random_model_of(&c, 51 + (uint64_t)i);
        hs_error err;
        logits_of(m, 0, tok, ref);
        const hs_status st = hs_model_process_tl(m, &err);
        const char *why = c.norm_place == HS_NORM_POST ? "post-norm"
                          : c.attn_replace             ? "attn_replace"
                          : c.gated_mlp                ? "gated_mlp"
                                                       : NULL;
        if (why) {
            if (st != HS_ERR_INPUT || (c.norm == HS_NORM_LAYERNORM && c.bias && c.attn == HS_ATTN_SOFTMAX &&
                                       c.ln1 && strstr(err.msg, why) == NULL))
                fail_msg("%s: status %d, '%s' (want a refusal naming %s)", CASES[i].name, st, err.msg, why);
        } else if (c.norm == HS_NORM_LAYERNORM && c.bias) {
            if (st != HS_OK) fail_msg("%s: %s", CASES[i].name, err.msg);
            logits_of(m, 0, tok, got);
            double worst = 0.0, big = 0.0;
            for (int r = 0; r < B * T; r++) {
                double mr = 0.0, mg = 0.0;
                for (int v = 0; v < V; v++) mr += ref[r * V + v], mg += got[r * V + v];
                for (int v = 0; v < V; v++) {
                    const double a = ref[r * V + v] - mr / V, b = got[r * V + v] - mg / V;
                    if (fabs(a - b) > worst) worst = fabs(a - b);
                    if (fabs(a) > big) big = fabs(a);
                }
            }
            if (worst > 1e-5 * (1.0 + big)) fail_msg("%s: processed logits moved by %g", CASES[i].name, worst);
            processed++;
        }
        hs_model_destroy(m);
    }
    assert_int_equal(processed, 3); /* base, silu, parallel */
}

/* ------------------------------------------------------------------------ */
/* Decompositions and the circuit graph                                      */

static void decompositions_refuse_or_follow_the_block(void **state)
{
    (void)state;
    int tok[B * T], tgt[B * T];
    tokens_of(tok, tgt);
    for (int i = 0; i < N_CASES; i++) {
        const hs_config c = case_config(&CASES[i]);
        const char *why = hs_config_nonadditive(&c);
        hs_model *m = random_model_of(&c, 31 + (uint64_t)i);
        hs_acts *a = NULL;
        hs_error err;
        assert_int_equal(hs_acts_create(&c, 1, T, 0, &a, &err), HS_OK);
        hs_cache cache;
        hs_cache_init(&cache);
        assert_int_equal(hs_run_with_cache(m, a, tok, 1, T, NULL, 0, NULL, &cache, &err), HS_OK);
        hs_dla d;
        const hs_status st = hs_logit_attribution(m, &cache, 0, T - 1, 1, 2, &d, &err);
        hs_resid_stack rs;
        const hs_status st2 = hs_resid_decompose(m, &cache, 0, T - 1, &rs, &err);
        hs_graph g;
        const hs_status st3 = hs_graph_build(&c, &g, &err);
        if (why) {
            assert_int_equal(st, HS_ERR_INPUT);
            assert_int_equal(st2, HS_ERR_INPUT);
            assert_int_equal(st3, HS_ERR_INPUT);
            if (strstr(err.msg, why) == NULL) fail_msg("%s: '%s' does not name %s", CASES[i].name, err.msg, why);
        } else {
            /* the components sum to the logit (parallel too) */
            assert_int_equal(st, HS_OK);
            double sum = d.constant;
            for (int k = 0; k < d.n; k++) sum += d.attr[k];
            if (fabs(sum - d.target) > 1e-4 * (1.0 + fabs(d.target)))
                fail_msg("%s: DLA sums to %g, the logit difference is %g", CASES[i].name, sum, d.target);
            hs_dla_free(&d);
            assert_int_equal(st2, HS_OK);
            hs_resid_stack_free(&rs);
            assert_int_equal(st3, HS_OK);
            const size_t want = hs_graph_edge_count(c.n_layers, c.n_heads, c.d_mlp > 0) -
                                (c.parallel_attn_mlp ? (size_t)(c.n_layers * c.n_heads) : 0);
            assert_int_equal(g.n_edges, want);
            assert_int_equal(hs_graph_find_edge(&g, "a0.h1->m0") >= 0, !c.parallel_attn_mlp);
            assert_true(hs_graph_find_edge(&g, "a0.h1->m1") >= 0);
            /* graph.json: cfg says parallel_attn_mlp, read back only by its kind */
            double *sc = calloc(g.n_edges, sizeof *sc);
            unsigned char *in = calloc(g.n_edges, 1);
            memset(in, 1, g.n_edges);
            hs_buf b = {0};
            assert_int_equal(hs_graph_json_text(&g, &c, sc, in, &b, &err), HS_OK);
            assert_non_null(strstr(b.s, c.parallel_attn_mlp ? "\"parallel_attn_mlp\": true" : "\"parallel_attn_mlp\": false"));
            assert_int_equal(hs_graph_json_parse(&g, &c, b.s, b.len, "g.json", sc, in, &err), HS_OK);
            hs_config other = c;
            other.parallel_attn_mlp = !c.parallel_attn_mlp;
            assert_int_equal(hs_graph_json_parse(&g, &other, b.s, b.len, "g.json", sc, in, &err), HS_ERR_INPUT);
            assert_non_null(strstr(err.msg, "parallel attention and MLP"));
            free(b.s);
            free(sc);
            free(in);
            hs_graph_free(&g);
        }
        hs_cache_free(&cache);
        hs_acts_destroy(a);
        hs_model_destroy(m);
    }
}

/* ------------------------------------------------------------------------ */
/* The dump for tests/py/block_ref.py                                        */

typedef struct {
    hs_st_tensor t[MAXPTS];
    char names[MAXPTS][80];
    float *data[MAXPTS];
    int n;
} st_list;

static void st_add(st_list *l, const char *prefix, const char *name, const int64_t *shape, int ndim,
                   const float *data)
{
    HS_ASSERT(l->n < MAXPTS);
    size_t n = 1;
    for (int d = 0; d < ndim; d++) n *= (size_t)shape[d];
    const int k = l->n++;
    snprintf(l->names[k], sizeof l->names[k], "%s%s", prefix, name);
    l->data[k] = malloc(n * sizeof(float));
    memcpy(l->data[k], data, n * sizeof(float));
    for (size_t i = 0; i < n; i++) /* the masked scores (-inf): 0, safetensors holds finite values */
        if (!isfinite(l->data[k][i])) l->data[k][i] = 0.0f;
    l->t[k] = (hs_st_tensor){l->names[k], ndim, {0}, l->data[k]};
    for (int d = 0; d < ndim; d++) l->t[k].shape[d] = shape[d];
}

static void st_free(st_list *l)
{
    for (int i = 0; i < l->n; i++) free(l->data[i]);
    l->n = 0;
}

static int grad_fn(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    st_add(ctx, "grad:", name, shape, ndim, data);
    return 0;
}

static int dump_case(const char *dir, const block_case *bc, int idx, cJSON *out)
{
    static st_list acts_l, grads_l;
    hs_error err;
    int tok[B * T], tgt[B * T];
    tokens_of(tok, tgt);
    const hs_config c = case_config(bc);
    hs_model *m = random_model_of(&c, 101 + (uint64_t)idx);
    char path[512];
    snprintf(path, sizeof path, "%s/%s.safetensors", dir, bc->name);
    if (hs_checkpoint_save(m, NULL, path, &err) != HS_OK) return fprintf(stderr, "%s\n", err.msg), 1;
    if (hs_model_alloc_train(m, &err) != HS_OK) return fprintf(stderr, "%s\n", err.msg), 1;
    hs_acts *a = NULL;
    if (hs_acts_create(&c, B, T, 1, &a, &err) != HS_OK) return fprintf(stderr, "%s\n", err.msg), 1;

    /* every point, then the backward to them of the mean cross-entropy */
    hs_cache cache;
    hs_cache_init(&cache);
    if (hs_run_with_cache(m, a, tok, B, T, NULL, 0, NULL, &cache, &err) != HS_OK)
        return fprintf(stderr, "%s\n", err.msg), 1;
    for (int i = 0; i < cache.n; i++)
        st_add(&acts_l, "", cache.e[i].name, cache.e[i].shape, cache.e[i].ndim, cache.e[i].data);
    int n_valid = 0;
    const float loss = hs_cross_entropy(m, a, tgt, &n_valid);
    float *dlogits = calloc((size_t)B * T * V, sizeof(float));
    for (int i = 0; i < B * T; i++)
        if (tgt[i] >= 0) {
            for (int v = 0; v < V; v++) dlogits[i * V + v] = a->probs[i * V + v] / (float)n_valid;
            dlogits[i * V + tgt[i]] -= 1.0f / (float)n_valid;
        }
    const hs_observer go = {grad_fn, NULL, &acts_l};
    if (hs_backward_acts(m, a, dlogits, &go, &err) != HS_OK) return fprintf(stderr, "%s\n", err.msg), 1;
    free(dlogits);
    snprintf(path, sizeof path, "%s/%s.acts.safetensors", dir, bc->name);
    if (hs_safetensors_write(path, acts_l.t, acts_l.n, NULL, NULL, 0, &err) != HS_OK)
        return fprintf(stderr, "%s\n", err.msg), 1;
    st_free(&acts_l);
    hs_cache_free(&cache);

    /* the parameters' gradients: a forward without observer, hs_backward */
    if (hs_forward(m, a, tok, B, T, NULL, &err) != HS_OK) return fprintf(stderr, "%s\n", err.msg), 1;
    const float loss2 = hs_cross_entropy(m, a, tgt, NULL);
    hs_zero_grad(m);
    hs_backward(m, a, tok, tgt, NULL);
    for (int i = 0; i < m->n_tensors; i++) {
        const hs_tensor_info *ti = &m->tensors[i];
        int64_t sh[3] = {ti->shape[0], ti->shape[1], ti->shape[2]};
        st_add(&grads_l, "", ti->name, sh, ti->ndim, m->grad_mem + ti->offset);
    }
    snprintf(path, sizeof path, "%s/%s.grads.safetensors", dir, bc->name);
    if (hs_safetensors_write(path, grads_l.t, grads_l.n, NULL, NULL, 0, &err) != HS_OK)
        return fprintf(stderr, "%s\n", err.msg), 1;
    st_free(&grads_l);

    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", bc->name);
    cJSON_AddItemToObject(o, "config", hs_config_to_json(&c, HS_CONFIG_JSON_ALL));
    cJSON_AddItemToObject(o, "tokens", cJSON_CreateIntArray(tok, B * T));
    cJSON_AddItemToObject(o, "targets", cJSON_CreateIntArray(tgt, B * T));
    cJSON_AddNumberToObject(o, "batch", B);
    cJSON_AddNumberToObject(o, "loss", loss);
    cJSON_AddNumberToObject(o, "loss_fused", loss2);
    cJSON_AddItemToArray(out, o);
    hs_acts_destroy(a);
    hs_model_destroy(m);
    return 0;
}

static int dump(const char *dir)
{
    cJSON *root = cJSON_CreateObject(), *cases = cJSON_AddArrayToObject(root, "cases");
    for (int i = 0; i < N_CASES; i++)
        if (dump_case(dir, &CASES[i], i, cases)) return 1;
    char path[512];
    snprintf(path, sizeof path, "%s/block_dump.json", dir);
    char *text = cJSON_Print(root);
    FILE *fp = fopen(path, "w");
    if (!fp || fputs(text, fp) < 0 || fclose(fp) != 0) return fprintf(stderr, "cannot write %s\n", path), 1;
    free(text);
    cJSON_Delete(root);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--dump") == 0) return dump(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(undefined_combinations_are_refused),
        cmocka_unit_test(points_are_the_forwards_in_order),
        cmocka_unit_test(observed_fused_saved_and_tail_runs_agree),
        cmocka_unit_test(decompositions_refuse_or_follow_the_block),
        cmocka_unit_test(gradients_do_not_depend_on_the_thread_count),
        cmocka_unit_test(tl_processing_follows_the_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
