/*
 * tests/test_checkpoint_family.c -- Hugging Face gpt_neo, gpt_neox, llama,
 * qwen2 and mistral folders as their modeling files save them, against an
 * independent float64 forward.
 *
 * tests/py/make_hf_family.py writes random-weight folders (10 variants:
 * GPT-Neo's alternating global / local layers with windows shorter than the
 * prompt and no q/k/v biases, GPT-NeoX's interleaved query_key_value with
 * rotary_pct 0.25, 0.5 and 1.0, parallel and sequential residuals, Llama
 * grouped-query attention with 2 and 4 groups, head_dim not hidden / heads,
 * Llama 3's rope_scaling, attention_bias, Qwen2's q/k/v biases, Mistral's
 * sliding window; tied and untied; F32, F16, BF16; the buffers older
 * checkpoints carry) and tests/py/ref_family.py's float64 values at every
 * TransformerLens hook point it names (written from the modeling files'
 * semantics, not from headscope; checked against a torch float64 forward).
 * Every folder loads, and every one of those points headscope caches agrees
 * to 1e-5: patterns absolutely, every other point relative to its largest
 * |value| (logits: the row's), at least 1. Bad folders are refused in one
 * line naming the file and the problem.
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

#include "model/checkpoint_internal.h"
#include "model/model.h"
#include "probe/probe.h"

static char g_dir[512];
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
    snprintf(g_dir, sizeof g_dir, "%s/hf_family", tmp ? tmp : "/tmp");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 py/make_hf_family.py '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static hs_model *load(const char *name, hs_error *err, hs_status *st)
{
    char path[640];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    hs_model *m = NULL;
    hs_notes notes = {keep_note, NULL};
    g_notes[0] = '\0';
    *st = hs_checkpoint_load_notes(path, &notes, &m, NULL, NULL, err);
    return m;
}

/* Every point of the reference (all but "tokens") against headscope's cache
 * of the same tokens; returns the worst difference (as the header says). */
static double compare_variant(const char *name, const hs_model *m)
{
    char path[640];
    snprintf(path, sizeof path, "%s/%s.ref.safetensors", g_dir, name);
    hs_st_file ref;
    hs_error err;
    if (hs_safetensors_read(path, &ref, &err) != HS_OK) fail_msg("%s", err.msg);
    const int it = hs_st_find(&ref, "tokens");
    const int T = (int)ref.numel[it];
    int tok[64];
    assert_true(T <= 64);
    for (int i = 0; i < T; i++) tok[i] = (int)ref.data[it][i];
    const char **filt = calloc((size_t)ref.n, sizeof *filt);
    int nf = 0;
    for (int i = 0; i < ref.n; i++)
        if (i != it) filt[nf++] = ref.names[i];
    hs_acts *a = NULL;
    hs_cache c;
    hs_cache_init(&c);
    assert_int_equal(hs_acts_create(&m->cfg, 1, T, 0, &a, &err), HS_OK);
    if (hs_run_with_cache(m, a, tok, 1, T, filt, nf, NULL, &c, &err) != HS_OK)
        fail_msg("%s: %s", name, err.msg);
    double worst = 0.0;
    const char *worst_at = "";
    for (int i = 0; i < ref.n; i++) {
        if (i == it) continue;
        const hs_cache_entry *e = hs_cache_get(&c, ref.names[i]);
        if (e == NULL) fail_msg("%s: %s not cached", name, ref.names[i]);
        if (e->numel != ref.numel[i])
            fail_msg("%s: %s has %zu values, the reference %zu", name, ref.names[i], e->numel,
                     ref.numel[i]);
        const int pattern = strstr(ref.names[i], "hook_pattern") != NULL;
        const int logits = strcmp(ref.names[i], "logits") == 0;
        const size_t row = logits ? (size_t)m->cfg.d_vocab : e->numel;
        double here = 0.0;
        for (size_t r0 = 0; r0 < e->numel; r0 += row) {
            double scale = 1.0;
            for (size_t k = r0; k < r0 + row && !pattern; k++) scale = fmax(scale, fabs(ref.data[i][k]));
            for (size_t k = r0; k < r0 + row; k++) {
                const double d = fabs((double)e->data[k] - ref.data[i][k]) / scale;
                if (!(d <= here)) here = isnan(d) ? INFINITY : d;
                if (!(d <= worst)) {
                    worst = isnan(d) ? INFINITY : d;
                    worst_at = ref.names[i];
                }
            }
        }
        if (here > 1e-5) printf("    %s: %.3g\n", ref.names[i], here);
    }
    printf("  %-12s %3d points, worst rel diff %.2e (%s)\n", name, nf, worst, worst_at);
    hs_cache_free(&c);
    hs_acts_destroy(a);
    free(filt);
    hs_st_file_free(&ref);
    return worst;
}

static void every_variant_matches_the_float64_forward(void **state)
{
    (void)state;
    static const struct {
        const char *name, *note; /* a note the load must say ("" = none) */
    } V[] = {
        {"neo", ""},
        {"neo_f16", "tensor(s) stored as F16 converted to float32"},
        {"neox", ""},
        {"neox_seq", "tensor(s) stored as F16 converted to float32"},
        {"neox_bf16", "tensor(s) stored as BF16 converted to float32"},
        {"llama", ""},
        {"llama3", "tensor(s) stored as BF16 converted to float32"},
        {"llama_bias", "tensor(s) stored as F16 converted to float32"},
        {"qwen2", ""},
        {"mistral", ""},
    };
    for (size_t i = 0; i < sizeof V / sizeof V[0]; i++) {
        hs_error err;
        hs_status st;
        hs_model *m = load(V[i].name, &err, &st);
        if (st != HS_OK) fail_msg("%s: %s", V[i].name, err.msg);
        if (!strstr(g_notes, V[i].note)) fail_msg("%s: notes '%s' lack '%s'", V[i].name, g_notes, V[i].note);
        const double worst = compare_variant(V[i].name, m);
        if (!(worst <= 1e-5)) fail_msg("%s: worst relative difference %.3g (tolerance 1e-5)", V[i].name, worst);
        hs_model_destroy(m);
    }
}

/* The switches each family's config.json turns on land in hs_config. */
static void configs_map_onto_the_switches(void **state)
{
    (void)state;
    hs_error err;
    hs_status st;
    hs_model *m = load("neo", &err, &st);
    if (st != HS_OK) fail_msg("%s", err.msg);
    assert_true(m->cfg.attn_scale == 1.0f && m->cfg.window_size == 5 && m->cfg.pos == HS_POS_LEARNED);
    assert_true(!m->cfg.attn_local[0] && m->cfg.attn_local[1] && !m->cfg.attn_local[2] && m->cfg.attn_local[3]);
    /* F32: the embedding used in place from the mapped file, the tied unembedding read as W_E^T */
    assert_true(m->n_maps == 1 && m->params.W_U_T == m->params.W_E && m->params.W_U == NULL);
    assert_true(m->params.W_E != m->param_mem + hs_model_find_tensor(m, "embed.W_E")->offset);
    hs_model_destroy(m);
    m = load("neox", &err, &st);
    if (st != HS_OK) fail_msg("%s", err.msg);
    assert_true(m->cfg.pos == HS_POS_ROTARY && m->cfg.rotary_dim == 2 && m->cfg.parallel_attn_mlp &&
                m->cfg.norm == HS_NORM_LAYERNORM && m->cfg.act == HS_ACT_GELU);
    /* untied: embed_out [V, D] in place as W_U_T */
    assert_true(m->params.W_U_T != NULL && m->params.W_U_T != m->params.W_E && m->params.W_U == NULL);
    hs_model_destroy(m);
    m = load("llama3", &err, &st);
    if (st != HS_OK) fail_msg("%s", err.msg);
    assert_true(m->cfg.norm == HS_NORM_RMSNORM && m->cfg.gated_mlp && m->cfg.act == HS_ACT_SILU &&
                m->cfg.n_key_value_heads == 2 && m->cfg.d_head == 12 && m->cfg.use_NTK_by_parts_rope &&
                m->cfg.NTK_original_ctx_len == 512 && m->cfg.rotary_base == 500000.0f &&
                m->cfg.n_ctx == 4096);
    hs_model_destroy(m);
    m = load("mistral", &err, &st);
    if (st != HS_OK) fail_msg("%s", err.msg);
    assert_true(m->cfg.window_size == 4 && m->cfg.attn_local[0] && m->cfg.attn_local[1] &&
                m->cfg.n_key_value_heads == 1);
    hs_model_destroy(m);
}

/* Every bad folder: refused, one line naming the file and the problem. */
static void bad_folders_are_refused_in_one_line(void **state)
{
    (void)state;
    char path[640], line[512];
    snprintf(path, sizeof path, "%s/bad/cases.tsv", g_dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *tab = strchr(line, '\t');
        assert_non_null(tab);
        *tab = '\0';
        char name[600];
        snprintf(name, sizeof name, "bad/%s", line);
        hs_error err;
        hs_status st;
        hs_model *m = load(name, &err, &st);
        if (st == HS_OK || m != NULL) fail_msg("%s: loaded", line);
        if (!strstr(err.msg, tab + 1) || strchr(err.msg, '\n') || !strstr(err.msg, line))
            fail_msg("%s: '%s' lacks '%s' (or the folder's name, or is not one line)", line, err.msg, tab + 1);
        n++;
    }
    fclose(f);
    assert_true(n >= 18);
}

/* Every field of each family's config class the loader knows: computed
 * fields change the config, inert ones leave it as it was, refused ones are
 * refused in one line naming field and value; one unknown field refused. */
static const struct {
    const char *variant, *field, *value;
    int kind; /* HS_TL_COMPUTED, HS_TL_INERT, HS_TL_REFUSED */
} FIELD_CASES[] = {
    {"neo", "vocab_size", "53", 0}, {"neo", "hidden_size", "48", 0}, {"neo", "num_heads", "8", 0},
    {"neo", "window_size", "7", 0}, {"neo", "activation_function", "\"gelu\"", 0},
    {"neo", "layer_norm_epsilon", "0.001", 0}, {"neo", "intermediate_size", "20", 0},
    {"neo", "max_position_embeddings", "20", 0}, 
    {"neo", "resid_dropout", "0.5", 1}, {"neo", "embed_dropout", "0.5", 1}, {"neo", "attention_dropout", "0.5", 1},
    {"neo", "classifier_dropout", "0.5", 1}, {"neo", "summary_type", "\"mean\"", 1},
    {"neo", "initializer_range", "0.5", 1}, {"neo", "use_cache", "false", 1},
    {"neo", "bos_token_id", "3", 1}, {"neo", "gradient_checkpointing", "true", 1},
    {"neo", "pruned_heads", "{\"0\": [1]}", 2}, {"neo", "add_cross_attention", "true", 2},
    {"neox", "rotary_pct", "0.5", 0}, {"neox", "rotary_emb_base", "500", 0},
    {"neox", "use_parallel_residual", "false", 0}, {"neox", "layer_norm_eps", "0.001", 0},
    {"neox", "hidden_act", "\"relu\"", 0}, {"neox", "intermediate_size", "20", 0},
{"neox", "hidden_dropout", "0.5", 1},
    {"neox", "classifier_dropout", "0.5", 1}, {"neox", "attention_dropout", "0.5", 1},
    {"neox", "quantization_config", "{\"bits\": 4}", 2},
    {"llama", "num_key_value_heads", "4", 0}, {"llama", "head_dim", "16", 0},
    {"llama", "rms_norm_eps", "0.001", 0}, {"llama", "rope_theta", "500", 0},
    {"llama", "partial_rotary_factor", "0.5", 0}, 
    {"llama", "max_position_embeddings", "100", 0},
    {"llama", "rope_scaling", "{\"rope_type\": \"llama3\", \"factor\": 8, \"low_freq_factor\": 1, "
                              "\"high_freq_factor\": 4, \"original_max_position_embeddings\": 16}", 0},
    {"llama", "pretraining_tp", "2", 1}, {"llama", "attention_dropout", "0.5", 1},
    {"llama", "mlp_bias", "true", 2},
    {"qwen2", "sliding_window", "4", 1}, {"qwen2", "max_window_layers", "1", 1},
    {"qwen2", "use_sliding_window", "true", 2}, {"qwen2", "use_mrope", "true", 2},
    {"mistral", "sliding_window", "3", 0}, {"mistral", "num_key_value_heads", "2", 0},
};

/* Every field of two configs equal (padding aside). */
static int cfg_same(const hs_config *a, const hs_config *b)
{
    int same = a->n_layers == b->n_layers && a->d_model == b->d_model && a->n_heads == b->n_heads &&
               a->d_head == b->d_head && a->d_mlp == b->d_mlp && a->n_ctx == b->n_ctx &&
               a->d_vocab == b->d_vocab && a->norm == b->norm && a->eps == b->eps && a->act == b->act &&
               a->pos == b->pos && a->attn == b->attn && a->ln1 == b->ln1 && a->ln_final == b->ln_final &&
               a->embed_norm == b->embed_norm && a->bias == b->bias && a->attn_scale == b->attn_scale &&
               a->norm_pre == b->norm_pre && a->attn_scale_by_layer == b->attn_scale_by_layer &&
               a->rotary_dim == b->rotary_dim && a->rotary_base == b->rotary_base &&
               a->rotary_adjacent_pairs == b->rotary_adjacent_pairs &&
               a->use_NTK_by_parts_rope == b->use_NTK_by_parts_rope &&
               a->NTK_by_parts_factor == b->NTK_by_parts_factor &&
               a->NTK_by_parts_low_freq_factor == b->NTK_by_parts_low_freq_factor &&
               a->NTK_by_parts_high_freq_factor == b->NTK_by_parts_high_freq_factor &&
               a->NTK_original_ctx_len == b->NTK_original_ctx_len &&
               a->n_key_value_heads == b->n_key_value_heads && a->window_size == b->window_size &&
               a->gated_mlp == b->gated_mlp && a->parallel_attn_mlp == b->parallel_attn_mlp &&
               a->norm_place == b->norm_place && a->attn_replace == b->attn_replace;
    return same && memcmp(a->attn_local, b->attn_local, sizeof a->attn_local) == 0;
}

/* config.json of variant with field set to value (JSON text), parsed. */
static hs_status parse_with(const char *variant, const char *field, const char *value, hs_config *c,
                            hs_error *err)
{
    char path[640];
    snprintf(path, sizeof path, "%s/%s/config.json", g_dir, variant);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char text[8192];
    const size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    cJSON *o = cJSON_Parse(text);
    assert_non_null(o);
    if (field) {
        cJSON_DeleteItemFromObjectCaseSensitive(o, field);
        cJSON_AddItemToObject(o, field, cJSON_Parse(value));
    }
    char *t = cJSON_PrintUnformatted(o);
    hs_status s = hs_checkpoint_hf_config_parse(path, t, NULL, c, err);
    cJSON_free(t);
    cJSON_Delete(o);
    return s;
}

static void every_family_field_is_computed_inert_or_refused(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof FIELD_CASES / sizeof FIELD_CASES[0]; i++) {
        hs_config base, c;
        hs_error err;
        assert_int_equal(parse_with(FIELD_CASES[i].variant, NULL, NULL, &base, &err), HS_OK);
        const hs_status s = parse_with(FIELD_CASES[i].variant, FIELD_CASES[i].field, FIELD_CASES[i].value, &c, &err);
        char named[96];
        snprintf(named, sizeof named, "'%s' = ", FIELD_CASES[i].field);
        if (FIELD_CASES[i].kind == 2) {
            if (s != HS_ERR_CONFIG || !strstr(err.msg, named) || strchr(err.msg, '\n'))
                fail_msg("%s %s: status %d '%s', want refused", FIELD_CASES[i].variant, FIELD_CASES[i].field, s,
                         s ? err.msg : "");
            continue;
        }
        if (s != HS_OK) fail_msg("%s %s = %s: %s", FIELD_CASES[i].variant, FIELD_CASES[i].field, FIELD_CASES[i].value, err.msg);
        const int same = cfg_same(&base, &c);
        if (same != (FIELD_CASES[i].kind == 1))
            fail_msg("%s %s = %s: the config %s", FIELD_CASES[i].variant, FIELD_CASES[i].field,
                     FIELD_CASES[i].value, same ? "did not change (computed?)" : "changed (inert?)");
        assert_int_equal(hs_checkpoint_family_field(HS_HF_GPT_NEO, "no_such_field"), -1);
    }
    hs_config c;
    hs_error err;
    assert_int_equal(parse_with("llama", "rope_type", "\"llama3\"", &c, &err), HS_ERR_CONFIG);
    assert_non_null(strstr(err.msg, "field 'rope_type' is not a field of model_type 'llama'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_variant_matches_the_float64_forward),
        cmocka_unit_test(configs_map_onto_the_switches),
        cmocka_unit_test(bad_folders_are_refused_in_one_line),
        cmocka_unit_test(every_family_field_is_computed_inert_or_refused),
    };
    return cmocka_run_group_tests(tests, make_fixtures, NULL);
}
