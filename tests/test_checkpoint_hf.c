/*
 * tests/test_checkpoint_hf.c -- Hugging Face GPT-2 folders as downloaded, and
 * TransformerLens' weight processing, against an independent float64
 * forward.
 *
 * tests/py/make_hf_gpt2.py writes random-weight folders (the "transformer."
 * prefix, lm_head.weight, F16, BF16, scale_attn_by_inverse_layer_idx,
 * shards with an index, attn.bias buffers of F32 and BOOL, gelu_new, gelu,
 * relu) and, for each, tests/py/gpt2_ref.py's float64 patterns and logits
 * (written from modeling_gpt2.py's semantics, not from headscope). Every
 * folder loads, and every attention pattern and every logit agrees to 1e-5
 * (relative to the row's largest logit). hs_model_process_tl keeps the
 * patterns and the logit differences, gives the weights gpt2_ref.tl_process
 * gives (TransformerLens' from_pretrained processing in numpy), and direct
 * logit attribution then sums to the logit difference; the processed model
 * written by the script in TransformerLens' layout with a complete TL 3.x
 * config (LNPre, gelu_new) loads and agrees. Bad folders are refused in one
 * line naming the file.
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

#include "model/model.h"
#include "model/checkpoint.h"
#include "probe/probe.h"

static char g_dir[512];

/* The notes a load said, one after the other. */
static char g_notes[4096];
static void keep_note(void *ctx, hs_note_kind kind, const char *line)
{
    (void)ctx;
    (void)kind;
    size_t n = strlen(g_notes);
    snprintf(g_notes + n, sizeof g_notes - n, "%s\n", line);
}

static int make_fixtures(void **state)
{
    (void)state;
    const char *tmp = getenv("HS_TEST_TMP");
    snprintf(g_dir, sizeof g_dir, "%s/hf_gpt2", tmp ? tmp : "/tmp");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 py/make_hf_gpt2.py '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int g_skipped; /* the last load's *n_skipped */

/* name's folder loaded; with pool (NULL: none) its masks checked over it */
static hs_model *load_pool(const char *name, hs_pool *pool, hs_error *err, hs_status *st)
{
    char path[640];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    hs_model *m = NULL;
    hs_notes notes = {keep_note, NULL};
    g_notes[0] = '\0';
    *st = hs_checkpoint_load_pool(path, &notes, pool, &m, NULL, &g_skipped, err);
    return m;
}

static hs_model *load(const char *name, hs_error *err, hs_status *st)
{
    return load_pool(name, NULL, err, st);
}

/* The reference of a variant: tokens, patterns [L,H,T,T], logits [T,V]. */
typedef struct {
    hs_st_file f;
    int T, tok[64];
    const float *pat, *logits;
} ref_t;

static void read_ref(const char *name, ref_t *r)
{
    char path[640];
    snprintf(path, sizeof path, "%s/%s.ref.safetensors", g_dir, name);
    hs_error err;
    if (hs_safetensors_read(path, &r->f, &err) != HS_OK) fail_msg("%s", err.msg);
    const int it = hs_st_find(&r->f, "tokens");
    r->T = (int)r->f.numel[it];
    assert_true(r->T <= 64);
    for (int i = 0; i < r->T; i++) r->tok[i] = (int)r->f.data[it][i];
    r->pat = r->f.data[hs_st_find(&r->f, "patterns")];
    r->logits = r->f.data[hs_st_find(&r->f, "logits")];
}

/* The model's patterns and logits on the reference's tokens. */
static void run(const hs_model *m, const ref_t *r, hs_cache *cache)
{
    hs_acts *a = NULL;
    hs_error err;
    static const char *const filt[] = {"blocks.*.attn.hook_pattern", "logits", "hook_embed",
                                       "?hook_pos_embed", "blocks.*.hook_resid_pre",
                                       "blocks.*.attn.hook_z", "?blocks.*.hook_mlp_out",
                                       "?ln_final.hook_scale"};
    assert_int_equal(hs_acts_create(&m->cfg, 1, r->T, 0, &a, &err), HS_OK);
    hs_cache_init(cache);
    if (hs_run_with_cache(m, a, r->tok, 1, r->T, filt, 8, NULL, cache, &err) != HS_OK)
        fail_msg("%s", err.msg);
    hs_acts_destroy(a);
}

/* Patterns of every layer and head to tol; logits to tol times the row's
 * largest |logit|, after removing each row's mean from both when centred. */
static void compare(const char *label, const hs_model *m, const hs_cache *c, const float *pat,
                    const float *logits, int T, int centred, double tol)
{
    const int L = m->cfg.n_layers, H = m->cfg.n_heads, V = m->cfg.d_vocab;
    double worst_p = 0.0, worst_l = 0.0;
    for (int l = 0; l < L; l++) {
        const hs_cache_entry *e = hs_cache_getf(c, "blocks.%d.attn.hook_pattern", l);
        for (size_t i = 0; i < (size_t)H * T * T; i++) {
            const double d = fabs((double)e->data[i] - pat[(size_t)l * H * T * T + i]);
            if (d > worst_p) worst_p = d;
        }
    }
    const float *lg = hs_cache_get(c, "logits")->data;
    for (int t = 0; t < T; t++) {
        double ma = 0.0, mb = 0.0, scale = 1.0;
        for (int v = 0; v < V && centred; v++) {
            ma += lg[(size_t)t * V + v];
            mb += logits[(size_t)t * V + v];
        }
        ma /= V;
        mb /= V;
        for (int v = 0; v < V; v++) scale = fmax(scale, fabs(logits[(size_t)t * V + v] - mb));
        for (int v = 0; v < V; v++) {
            const double d = fabs((lg[(size_t)t * V + v] - ma) - (logits[(size_t)t * V + v] - mb)) / scale;
            if (d > worst_l) worst_l = d;
        }
    }
    printf("  %-28s patterns max |diff| %.2e, logits max rel diff %.2e\n", label, worst_p, worst_l);
    if (!(worst_p <= tol) || !(worst_l <= tol))
        fail_msg("%s: patterns %.3g, logits %.3g (tolerance %.1g)", label, worst_p, worst_l, tol);
}

static void every_variant_matches_the_float64_forward(void **state)
{
    (void)state;
    static const struct {
        const char *name, *note; /* a note the load must say ("" = none) */
        int skipped;             /* the buffers it skips, counted and not noted */
    } V[] = {
        {"base", "", 2},
        {"prefix", "", 4},
        {"f16", "tensor(s) stored as F16 converted to float32", -1},
        {"bf16", "tensor(s) stored as BF16 converted to float32", -1},
        {"scale_layer", "", -1},
        {"sharded", "", -1},
        {"deep", "", -1}, /* 24 layers, as GPT-2 medium */
        {"mask_values", "", 2}, /* a -0 and a 2.0 in its masks: still causal */
    };
    for (size_t i = 0; i < sizeof V / sizeof V[0]; i++) {
        hs_error err;
        hs_status st;
        hs_model *m = load(V[i].name, &err, &st);
        if (st != HS_OK) fail_msg("%s: %s", V[i].name, err.msg);
        if (!strstr(g_notes, V[i].note)) fail_msg("%s: notes '%s' lack '%s'", V[i].name, g_notes, V[i].note);
        if (V[i].skipped >= 0 && g_skipped != V[i].skipped)
            fail_msg("%s: %d buffers skipped, expected %d", V[i].name, g_skipped, V[i].skipped);
        if (strstr(g_notes, "buffer")) fail_msg("%s: a buffer note: '%s'", V[i].name, g_notes); /* issue 34 */
        ref_t r;
        read_ref(V[i].name, &r);
        hs_cache c;
        run(m, &r, &c);
        compare(V[i].name, m, &c, r.pat, r.logits, r.T, 0, 1e-5);
        hs_cache_free(&c);
        hs_st_file_free(&r.f);
        hs_model_destroy(m);
    }
    /* the weights file itself: config.json is read from its folder */
    hs_error err;
    hs_status st;
    hs_model *m = load("base/model.safetensors", &err, &st);
    if (st != HS_OK) fail_msg("%s", err.msg);
    assert_int_equal(m->cfg.n_layers, 2);
    hs_model_destroy(m);
}

/* hs_model_process_tl: patterns and logit differences as before, the
 * weights of gpt2_ref.tl_process, DLA summing to the logit difference. */
static void processing_keeps_patterns_and_logit_differences(void **state)
{
    (void)state;
    hs_error err;
    hs_status st;
    hs_model *m = load("base", &err, &st);
    assert_int_equal(st, HS_OK);
    ref_t r;
    read_ref("base", &r);
    hs_cache raw, proc;
    run(m, &r, &raw);
    const hs_cache_entry *rl = hs_cache_get(&raw, "logits");
    float *raw_pat = NULL;
    size_t np = 0;
    for (int l = 0; l < m->cfg.n_layers; l++) np += hs_cache_getf(&raw, "blocks.%d.attn.hook_pattern", l)->numel;
    raw_pat = malloc(np * sizeof(float));
    for (int l = 0, o = 0; l < m->cfg.n_layers; l++) {
        const hs_cache_entry *e = hs_cache_getf(&raw, "blocks.%d.attn.hook_pattern", l);
        memcpy(raw_pat + o, e->data, e->numel * sizeof(float));
        o += (int)e->numel;
    }
    assert_string_equal(hs_model_weights_name(m), "raw");
    assert_int_equal(hs_model_process_tl(m, &err), HS_OK);
    assert_string_equal(hs_model_weights_name(m), "tl-processed");
    assert_true(m->cfg.norm_pre && m->tl_processed);
    assert_null(hs_model_find_tensor(m, "blocks.0.ln1.w"));
    assert_null(hs_model_find_tensor(m, "ln_final.b"));
    run(m, &r, &proc);
    compare("processed vs raw run", m, &proc, raw_pat, rl->data, r.T, 1, 2e-6);
    compare("processed vs float64", m, &proc, r.pat, r.logits, r.T, 1, 1e-5);

    /* the weights TransformerLens' processing gives (numpy, float64) */
    char path[640];
    snprintf(path, sizeof path, "%s/base_processed.safetensors", g_dir);
    hs_st_file tl;
    assert_int_equal(hs_safetensors_read(path, &tl, &err), HS_OK);
    assert_int_equal(tl.n, m->n_tensors);
    for (int i = 0; i < tl.n; i++) {
        const hs_tensor_info *t = hs_model_find_tensor(m, tl.names[i]);
        if (t == NULL || t->numel != tl.numel[i]) fail_msg("%s: not in the processed model", tl.names[i]);
        double scale = 1e-3, worst = 0.0;
        for (size_t k = 0; k < t->numel; k++) scale = fmax(scale, fabs(tl.data[i][k]));
        for (size_t k = 0; k < t->numel; k++)
            worst = fmax(worst, fabs(m->param_mem[t->offset + k] - tl.data[i][k]) / scale);
        if (worst > 2e-6) fail_msg("%s: %.3g from TransformerLens' processing", tl.names[i], worst);
    }
    hs_st_file_free(&tl);

    /* DLA sums to the logit difference, at every position */
    const int V = m->cfg.d_vocab;
    const float *lg = hs_cache_get(&proc, "logits")->data;
    for (int pos = 0; pos < r.T; pos++) {
        const int a = (pos * 7 + 3) % V, b = (pos * 5 + 1) % V;
        hs_dla d;
        if (hs_logit_attribution(m, &proc, 0, pos, a, b, &d, &err) != HS_OK) fail_msg("%s", err.msg);
        double sum = d.constant;
        for (int k = 0; k < d.n; k++) sum += d.attr[k];
        const double ld = (double)lg[(size_t)pos * V + a] - lg[(size_t)pos * V + b];
        const double bu = (double)m->params.b_U[a] - m->params.b_U[b];
        if (fabs(sum + bu - ld) > 1e-4 * fmax(1.0, fabs(ld)))
            fail_msg("position %d: DLA sums to %.7g + b_U %.7g, the logit difference is %.7g", pos,
                     sum, bu, ld);
        hs_dla_free(&d);
    }
    /* saved in TransformerLens' layout (LNPre, gelu_new), it reads back the same */
    snprintf(path, sizeof path, "%s/processed_saved.safetensors", g_dir);
    assert_int_equal(hs_checkpoint_save(m, NULL, path, &err), HS_OK);
    hs_model *back = NULL;
    assert_int_equal(hs_checkpoint_load(path, &back, NULL, NULL, &err), HS_OK);
    assert_true(back->cfg.norm_pre && back->cfg.act == HS_ACT_GELU_NEW && back->n_params == m->n_params);
    assert_memory_equal(back->param_mem, m->param_mem, m->n_params * sizeof(float));
    hs_model_destroy(back);
    free(raw_pat);
    hs_cache_free(&raw);
    hs_cache_free(&proc);
    hs_st_file_free(&r.f);
    hs_model_destroy(m);
}

/* The processed model in TransformerLens' layout (a complete TL 3.x config,
 * LNPre and gelu_new) loads and agrees with the reference. */
static void transformerlens_processed_gpt2_loads_and_agrees(void **state)
{
    (void)state;
    hs_error err;
    hs_status st;
    hs_model *m = load("base_processed.safetensors", &err, &st);
    if (st != HS_OK) fail_msg("%s", err.msg);
    assert_true(m->cfg.norm_pre && m->cfg.norm == HS_NORM_LAYERNORM && m->cfg.act == HS_ACT_GELU_NEW);
    ref_t r;
    read_ref("base_processed", &r);
    hs_cache c;
    run(m, &r, &c);
    compare("TL-format processed", m, &c, r.pat, r.logits, r.T, 0, 1e-5);
    hs_cache_free(&c);
    hs_st_file_free(&r.f);
    hs_model_destroy(m);
}

/* An attn.bias buffer that is not the causal mask (h.1's row 2 sees column
 * 5) is refused in one line naming it and the first position that differs:
 * headscope computes causal attention only. */
static void a_noncausal_attn_bias_is_refused(void **state)
{
    (void)state;
    hs_error err = {HS_OK, ""};
    hs_status st;
    hs_model *m = load("noncausal", &err, &st);
    assert_int_equal(st, HS_ERR_FORMAT);
    assert_null(m);
    if (!strstr(err.msg, "h.1.attn.bias is not the causal mask: row 2, column 5 is nonzero where a causal "
                         "mask has 0") || strchr(err.msg, '\n'))
        fail_msg("message '%s'", err.msg);
}

/* The masks checked over a pool of 2 (hs_ckpt_check_masks, one job a
 * mask): the same message, and with two masks wrong the first one's (h.0's,
 * whichever worker finds its error first), as checked one after the other;
 * a -0 and a 2.0 pass there as well. */
static void masks_over_a_pool_say_what_one_thread_says(void **state)
{
    (void)state;
    hs_pool *pool = NULL;
    hs_error err = {HS_OK, ""};
    assert_int_equal(hs_pool_create(2, &pool, &err), HS_OK);
    static const char *const WANT[2][2] = {
        {"noncausal", "h.1.attn.bias is not the causal mask: row 2, column 5 is nonzero where a causal mask has 0"},
        {"noncausal2", "h.0.attn.bias is not the causal mask: row 4, column 1 is 0 where a causal mask has 1"},
    };
    for (int k = 0; k < 2; k++)
        for (int p = 0; p < 2; p++) {
            hs_status st;
            err = (hs_error){HS_OK, ""};
            hs_model *m = load_pool(WANT[k][0], p ? pool : NULL, &err, &st);
            if (st != HS_ERR_FORMAT || m != NULL || !strstr(err.msg, WANT[k][1]))
                fail_msg("%s (pool %d): status %d, message '%s'", WANT[k][0], p, st, err.msg);
        }
    hs_status st;
    hs_model *m = load_pool("mask_values", pool, &err, &st);
    if (st != HS_OK) fail_msg("mask_values over the pool: %s", err.msg);
    hs_model_destroy(m);
    hs_pool_destroy(pool);
}

/* Every bad folder: refused, one line naming the file and the problem. */
static void bad_folders_are_refused_in_one_line(void **state)
{
    (void)state;
    char path[640], line[512];
    snprintf(path, sizeof path, "%s/bad/cases.tsv", g_dir);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    int n = 0;
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\n")] = '\0';
        char *tab = strchr(line, '\t');
        assert_non_null(tab);
        *tab = '\0';
        char name[600];
        snprintf(name, sizeof name, "bad/%s", line);
        hs_error err = {HS_OK, ""};
        hs_status st;
        hs_model *m = load(name, &err, &st);
        if (st == HS_OK || m != NULL || !strstr(err.msg, tab + 1) || !strstr(err.msg, line) ||
            strchr(err.msg, '\n'))
            fail_msg("%s: status %d, message '%s' (want '%s')", line, st, err.msg, tab + 1);
        printf("  %-16s %s\n", line, err.msg);
        n++;
    }
    fclose(fp);
    assert_true(n >= 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_variant_matches_the_float64_forward),
        cmocka_unit_test(processing_keeps_patterns_and_logit_differences),
        cmocka_unit_test(transformerlens_processed_gpt2_loads_and_agrees),
        cmocka_unit_test(bad_folders_are_refused_in_one_line),
        cmocka_unit_test(a_noncausal_attn_bias_is_refused),
        cmocka_unit_test(masks_over_a_pool_say_what_one_thread_says),
    };
    return cmocka_run_group_tests(tests, make_fixtures, NULL);
}
