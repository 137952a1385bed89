/*
 * tests/test_config_fields.c -- every pinned TransformerLens
 * HookedTransformerConfig field (tests/checkpoint/tl_config_fields.txt) is
 * either computed as TransformerLens computes it, inert (changes nothing in
 * the forward) or refused in one line naming field and value. The table below
 * says which, with a non-default value to try; a pinned field missing from it
 * fails the test, so a new field cannot arrive unclassified.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "model/checkpoint_internal.h"
#include "model/model.h"

typedef struct {
    const char *name;
    hs_tl_field kind;
    const char *value; /* a JSON value other than the default */
} field_case;

static const field_case FIELDS[] = {
    /* computed: each also has a case in computed_fields_are_computed */
    {"n_layers", HS_TL_COMPUTED, "2"}, {"d_model", HS_TL_COMPUTED, "12"},
    {"n_ctx", HS_TL_COMPUTED, "6"}, {"d_head", HS_TL_COMPUTED, "3"},
    {"n_heads", HS_TL_COMPUTED, "3"}, {"d_mlp", HS_TL_COMPUTED, "20"},
    {"act_fn", HS_TL_COMPUTED, "\"relu\""}, {"d_vocab", HS_TL_COMPUTED, "7"},
    {"eps", HS_TL_COMPUTED, "0.001"}, {"use_attn_scale", HS_TL_COMPUTED, "false"},
    {"attn_scale", HS_TL_COMPUTED, "8.0"}, {"normalization_type", HS_TL_COMPUTED, "\"RMS\""},
    {"attention_dir", HS_TL_COMPUTED, "\"causal\""}, {"attn_only", HS_TL_COMPUTED, "false"},
    {"positional_embedding_type", HS_TL_COMPUTED, "\"standard\""},
    {"d_vocab_out", HS_TL_COMPUTED, "5"}, {"n_key_value_heads", HS_TL_COMPUTED, "2"},
    /* inert */
    {"model_name", HS_TL_INERT, "\"mine\""}, {"use_attn_result", HS_TL_INERT, "true"},
    {"use_split_qkv_input", HS_TL_INERT, "true"}, {"use_hook_mlp_in", HS_TL_INERT, "true"},
    {"use_attn_in", HS_TL_INERT, "true"}, {"use_hook_tokens", HS_TL_INERT, "true"},
    {"ungroup_grouped_query_attention", HS_TL_INERT, "true"},
    {"original_architecture", HS_TL_INERT, "\"GPT2LMHeadModel\""},
    {"from_checkpoint", HS_TL_INERT, "true"}, {"checkpoint_index", HS_TL_INERT, "3"},
    {"checkpoint_label_type", HS_TL_INERT, "\"step\""}, {"checkpoint_value", HS_TL_INERT, "100"},
    {"tokenizer_name", HS_TL_INERT, "\"gpt2\""}, {"window_size", HS_TL_INERT, "4"},
    {"attn_types", HS_TL_INERT, "[\"global\"]"}, {"init_mode", HS_TL_INERT, "\"xavier_uniform\""},
    {"device", HS_TL_INERT, "\"cuda\""}, {"n_devices", HS_TL_INERT, "2"},
    {"seed", HS_TL_INERT, "7"}, {"initializer_range", HS_TL_INERT, "0.02"},
    {"init_weights", HS_TL_INERT, "false"}, {"n_params", HS_TL_INERT, "1234"},
    {"default_prepend_bos", HS_TL_INERT, "false"}, {"tokenizer_prepends_bos", HS_TL_INERT, "true"},
    {"rotary_dim", HS_TL_INERT, "4"}, {"rotary_base", HS_TL_INERT, "500000"},
    {"rotary_adjacent_pairs", HS_TL_INERT, "true"}, {"use_NTK_by_parts_rope", HS_TL_INERT, "true"},
    {"NTK_by_parts_low_freq_factor", HS_TL_INERT, "2.0"},
    {"NTK_by_parts_high_freq_factor", HS_TL_INERT, "8.0"},
    {"NTK_by_parts_factor", HS_TL_INERT, "16.0"}, {"trust_remote_code", HS_TL_INERT, "true"},
    {"experts_per_token", HS_TL_INERT, "2"}, {"relative_attention_max_distance", HS_TL_INERT, "64"},
    {"relative_attention_num_buckets", HS_TL_INERT, "16"},
    {"decoder_start_token_id", HS_TL_INERT, "0"}, {"tie_word_embeddings", HS_TL_INERT, "true"},
    /* refused unless at their default */
    {"use_local_attn", HS_TL_REFUSED, "true"},
    {"scale_attn_by_inverse_layer_idx", HS_TL_REFUSED, "true"},
    {"final_rms", HS_TL_REFUSED, "true"}, {"parallel_attn_mlp", HS_TL_REFUSED, "true"},
    {"gated_mlp", HS_TL_REFUSED, "true"}, {"dtype", HS_TL_REFUSED, "\"torch.float16\""},
    {"post_embedding_ln", HS_TL_REFUSED, "true"}, {"load_in_4bit", HS_TL_REFUSED, "true"},
    {"num_experts", HS_TL_REFUSED, "4"}, {"use_normalization_before_and_after", HS_TL_REFUSED, "true"},
    {"attn_scores_soft_cap", HS_TL_REFUSED, "50"}, {"output_logits_soft_cap", HS_TL_REFUSED, "30"},
};
enum { N_FIELDS = sizeof FIELDS / sizeof FIELDS[0] };

/* The base config: a small model; parse_with replaces or adds one field. */
static const char *const BASE[][2] = {
    {"n_layers", "1"}, {"d_model", "8"}, {"n_ctx", "4"}, {"d_head", "4"},
    {"n_heads", "2"}, {"d_mlp", "16"}, {"act_fn", "\"gelu\""}, {"d_vocab", "5"},
};

static hs_status parse_with(const char *key, const char *value, hs_config *c, hs_error *err)
{
    char text[512];
    size_t n = (size_t)snprintf(text, sizeof text, "{");
    for (size_t i = 0; i < sizeof BASE / sizeof BASE[0]; i++)
        if (key == NULL || strcmp(key, BASE[i][0]) != 0)
            n += (size_t)snprintf(text + n, sizeof text - n, "\"%s\":%s,", BASE[i][0], BASE[i][1]);
    if (key) n += (size_t)snprintf(text + n, sizeof text - n, "\"%s\":%s,", key, value);
    text[n - 1] = '}';
    *c = hs_config_default();
    return hs_checkpoint_config_parse("t.safetensors", text, NULL, c, err);
}

static const field_case *find_case(const char *name)
{
    for (int i = 0; i < N_FIELDS; i++)
        if (strcmp(FIELDS[i].name, name) == 0) return &FIELDS[i];
    return NULL;
}

static void every_pinned_field_is_classified(void **state)
{
    (void)state;
    FILE *fp = fopen("checkpoint/tl_config_fields.txt", "r");
    assert_non_null(fp);
    char line[128];
    int n = 0;
    while (fgets(line, sizeof line, fp)) {
        if (line[0] == '#') continue;
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '\0') continue;
        const field_case *fc = find_case(line);
        if (fc == NULL)
            fail_msg("pinned TransformerLens field '%s' is neither computed nor refused: add it "
                     "to model/checkpoint_tl.c TL_FIELDS and to this table", line);
        if (hs_checkpoint_tl_field(line) != (int)fc->kind)
            fail_msg("field '%s': the loader says %d, the table %d", line,
                     hs_checkpoint_tl_field(line), (int)fc->kind);
        n++;
    }
    fclose(fp);
    assert_int_equal(n, N_FIELDS);
    assert_int_equal(hs_checkpoint_tl_field("no_such_field"), -1);
}

/* Refused: one line naming field and value. Inert: the same config as without. */
static void refused_fields_name_field_and_value_inert_ones_change_nothing(void **state)
{
    (void)state;
    hs_config base, c;
    hs_error err;
    assert_int_equal(parse_with(NULL, NULL, &base, &err), HS_OK);
    for (int i = 0; i < N_FIELDS; i++) {
        const field_case *fc = &FIELDS[i];
        hs_status st = parse_with(fc->name, fc->value, &c, &err);
        if (fc->kind == HS_TL_REFUSED) {
            if (st != HS_ERR_CONFIG) fail_msg("%s = %s was accepted", fc->name, fc->value);
            char want[96];
            snprintf(want, sizeof want, "'%s' = %s", fc->name, fc->value);
            if (strstr(err.msg, want) == NULL || strchr(err.msg, '\n') != NULL)
                fail_msg("%s: message '%s' does not name it", fc->name, err.msg);
            /* the default value is accepted */
            const char *off = strcmp(fc->name, "dtype") == 0 ? "\"torch.float32\"" : "null";
            assert_int_equal(parse_with(fc->name, off, &c, &err), HS_OK);
        } else if (fc->kind == HS_TL_INERT) {
            if (st != HS_OK) fail_msg("%s = %s refused: %s", fc->name, fc->value, err.msg);
            assert_memory_equal(&c, &base, sizeof c);
        }
    }
    assert_int_equal(parse_with("use_fancy_thing", "true", &c, &err), HS_ERR_CONFIG);
    assert_non_null(strstr(err.msg, "'use_fancy_thing'"));
}

/* Computed: each value lands where the forward reads it, or is refused by value. */
static void computed_fields_are_computed(void **state)
{
    (void)state;
    hs_config c;
    hs_error err;
    assert_int_equal(parse_with("attn_scale", "8.0", &c, &err), HS_OK);
    assert_true(c.attn_scale == 8.0f && hs_attn_scale(&c) == 8.0f);
    assert_int_equal(parse_with("attn_scale", "-1", &c, &err), HS_OK);
    assert_true(hs_attn_scale(&c) == 2.0f); /* sqrt(d_head 4) */
    assert_int_equal(parse_with("use_attn_scale", "false", &c, &err), HS_OK);
    assert_true(hs_attn_scale(&c) == 1.0f);
    assert_int_equal(parse_with("attn_scale", "0", &c, &err), HS_ERR_CONFIG);
    assert_int_equal(parse_with("normalization_type", "\"RMS\"", &c, &err), HS_OK);
    assert_int_equal(c.norm, HS_NORM_RMSNORM);
    assert_int_equal(parse_with("normalization_type", "null", &c, &err), HS_OK);
    assert_int_equal(c.norm, HS_NORM_NONE);
    assert_int_equal(parse_with("act_fn", "\"relu\"", &c, &err), HS_OK);
    assert_int_equal(c.act, HS_ACT_RELU);
    assert_int_equal(parse_with("eps", "0.001", &c, &err), HS_OK);
    assert_true(c.eps == 0.001f);
    assert_int_equal(parse_with("d_mlp", "20", &c, &err), HS_OK);
    assert_int_equal(c.d_mlp, 20);
    static const struct {
        const char *key, *value, *named;
    } refused[] = {
        {"act_fn", "\"gelu_new\"", "gelu_new"},
        {"normalization_type", "\"LNPre\"", "LNPre"},
        {"positional_embedding_type", "\"rotary\"", "rotary"},
        {"attention_dir", "\"bidirectional\"", "bidirectional"},
        {"n_key_value_heads", "1", "n_key_value_heads 1"},
        {"d_vocab_out", "7", "d_vocab_out 7"},
        {"attn_only", "true", "attn_only"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        assert_int_equal(parse_with(refused[i].key, refused[i].value, &c, &err), HS_ERR_CONFIG);
        if (strstr(err.msg, refused[i].named) == NULL)
            fail_msg("%s = %s: '%s' does not name the value", refused[i].key, refused[i].value,
                     err.msg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_pinned_field_is_classified),
        cmocka_unit_test(refused_fields_name_field_and_value_inert_ones_change_nothing),
        cmocka_unit_test(computed_fields_are_computed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
