/*
 * tests/test_config_fields.c -- every pinned TransformerLens 3.x
 * HookedTransformerConfig field (tests/checkpoint/tl_config_fields.txt) and
 * every pinned Hugging Face GPT-2 config.json field
 * (tests/checkpoint/hf_gpt2_config_fields.txt) is either computed as the
 * reference computes it, inert (changes nothing in the forward) or refused in
 * one line naming field and value. The tables below say which, with a
 * non-default value to try; a pinned field missing from them fails the test,
 * so a new field cannot arrive unclassified.
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
    {"scale_attn_by_inverse_layer_idx", HS_TL_COMPUTED, "true"},
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
    {"tokenizer_name", HS_TL_INERT, "\"gpt2\""}, {"window_size", HS_TL_COMPUTED, "4"},
    {"attn_types", HS_TL_COMPUTED, "[\"global\"]"}, {"init_mode", HS_TL_INERT, "\"xavier_uniform\""},
    {"device", HS_TL_INERT, "\"cuda\""}, {"n_devices", HS_TL_INERT, "2"},
    {"seed", HS_TL_INERT, "7"}, {"initializer_range", HS_TL_INERT, "0.02"},
    {"init_weights", HS_TL_INERT, "false"}, {"n_params", HS_TL_INERT, "1234"},
    {"default_prepend_bos", HS_TL_INERT, "false"}, {"tokenizer_prepends_bos", HS_TL_INERT, "true"},
    {"rotary_dim", HS_TL_COMPUTED, "4"}, {"rotary_base", HS_TL_COMPUTED, "500000"},
    {"rotary_adjacent_pairs", HS_TL_COMPUTED, "true"}, {"use_NTK_by_parts_rope", HS_TL_COMPUTED, "true"},
    {"NTK_by_parts_low_freq_factor", HS_TL_COMPUTED, "2.0"},
    {"NTK_by_parts_high_freq_factor", HS_TL_COMPUTED, "8.0"},
    {"NTK_by_parts_factor", HS_TL_COMPUTED, "16.0"}, {"trust_remote_code", HS_TL_INERT, "true"},
    {"experts_per_token", HS_TL_INERT, "2"}, {"relative_attention_max_distance", HS_TL_INERT, "64"},
    {"relative_attention_num_buckets", HS_TL_INERT, "16"},
    {"decoder_start_token_id", HS_TL_INERT, "0"}, {"tie_word_embeddings", HS_TL_INERT, "true"},
    {"uses_rms_norm", HS_TL_INERT, "true"}, {"layer_norm_folding", HS_TL_INERT, "true"},
    {"rotary_base_local", HS_TL_INERT, "10000"}, {"rotary_scaling_factor", HS_TL_INERT, "8.0"},
    {"NTK_original_ctx_len", HS_TL_COMPUTED, "4096"}, {"use_yarn_rope", HS_TL_INERT, "true"},
    {"yarn_factor", HS_TL_INERT, "2.0"}, {"yarn_attention_factor", HS_TL_INERT, "1.5"},
    {"yarn_beta_fast", HS_TL_INERT, "16.0"}, {"yarn_beta_slow", HS_TL_INERT, "2.0"},
    {"yarn_original_max_position_embeddings", HS_TL_INERT, "2048"},
    {"norm_topk_prob", HS_TL_INERT, "true"},
    /* refused unless at their default */
    {"use_local_attn", HS_TL_COMPUTED, "false"}, {"use_qk_norm", HS_TL_REFUSED, "true"},
    {"final_rms", HS_TL_REFUSED, "true"}, {"parallel_attn_mlp", HS_TL_COMPUTED, "true"},
    {"gated_mlp", HS_TL_COMPUTED, "true"}, {"dtype", HS_TL_REFUSED, "\"torch.float16\""},
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
    /* TL 3.x GPT-2 after from_pretrained's processing: LNPre, gelu_new */
    assert_int_equal(parse_with("act_fn", "\"gelu_new\"", &c, &err), HS_OK);
    assert_int_equal(c.act, HS_ACT_GELU_NEW);
    assert_int_equal(parse_with("normalization_type", "\"LNPre\"", &c, &err), HS_OK);
    assert_true(c.norm == HS_NORM_LAYERNORM && c.norm_pre == 1);
    assert_int_equal(parse_with("normalization_type", "\"RMSPre\"", &c, &err), HS_OK);
    assert_true(c.norm == HS_NORM_RMSNORM && c.norm_pre == 1);
    assert_int_equal(parse_with("scale_attn_by_inverse_layer_idx", "true", &c, &err), HS_OK);
    assert_true(c.attn_scale_by_layer == 1 && hs_attn_scale_at(&c, 2) == 6.0f); /* 2 x (2 + 1) */
    /* the attention switches (model.h's group): TL's names land in their fields; a value
     * equal to the default (rotary_dim = d_head, rotary_base 10000, n_kv = n_heads) is 0 */
    assert_int_equal(parse_with("positional_embedding_type", "\"rotary\"", &c, &err), HS_OK);
    assert_int_equal(c.pos, HS_POS_ROTARY);
    assert_int_equal(parse_with("positional_embedding_type", "\"alibi\"", &c, &err), HS_OK);
    assert_int_equal(c.pos, HS_POS_ALIBI);
    assert_int_equal(parse_with("rotary_dim", "2", &c, &err), HS_OK);
    assert_true(c.rotary_dim == 2 && hs_rotary_dim(&c) == 2);
    assert_int_equal(parse_with("rotary_dim", "4", &c, &err), HS_OK);
    assert_true(c.rotary_dim == 0 && hs_rotary_dim(&c) == 4);
    assert_int_equal(parse_with("rotary_base", "500000", &c, &err), HS_OK);
    assert_true(c.rotary_base == 500000.0f);
    assert_int_equal(parse_with("rotary_base", "10000", &c, &err), HS_OK);
    assert_true(c.rotary_base == 0.0f);
    assert_int_equal(parse_with("rotary_adjacent_pairs", "true", &c, &err), HS_OK);
    assert_int_equal(c.rotary_adjacent_pairs, 1);
    assert_int_equal(parse_with("use_NTK_by_parts_rope", "true", &c, &err), HS_OK);
    assert_int_equal(c.use_NTK_by_parts_rope, 1);
    assert_int_equal(parse_with("NTK_by_parts_factor", "16.0", &c, &err), HS_OK);
    assert_true(c.NTK_by_parts_factor == 16.0f);
    assert_int_equal(parse_with("NTK_by_parts_low_freq_factor", "2.0", &c, &err), HS_OK);
    assert_true(c.NTK_by_parts_low_freq_factor == 2.0f);
    assert_int_equal(parse_with("NTK_by_parts_high_freq_factor", "8.0", &c, &err), HS_OK);
    assert_true(c.NTK_by_parts_high_freq_factor == 8.0f);
    assert_int_equal(parse_with("NTK_original_ctx_len", "4096", &c, &err), HS_OK);
    assert_int_equal(c.NTK_original_ctx_len, 4096);
    assert_int_equal(parse_with("n_key_value_heads", "1", &c, &err), HS_OK);
    assert_true(c.n_key_value_heads == 1 && hs_kv_heads(&c) == 1 && hs_kv_head(&c, 1) == 0);
    assert_int_equal(parse_with("n_key_value_heads", "2", &c, &err), HS_OK);
    assert_int_equal(c.n_key_value_heads, 0);
    /* window_size and attn_types are read with use_local_attn only */
    assert_int_equal(parse_with("window_size", "4", &c, &err), HS_OK);
    assert_int_equal(c.window_size, 0);
    assert_int_equal(parse_with("attn_types", "[\"local\"]", &c, &err), HS_OK);
    assert_int_equal(c.attn_local[0], 0);
    assert_int_equal(parse_with("use_local_attn", "false", &c, &err), HS_OK);
    static const struct {
        const char *key, *value, *named;
    } refused[] = {
        {"act_fn", "\"gelu_fast\"", "gelu_fast"},
        {"normalization_type", "\"LNPost\"", "LNPost"},
        {"scale_attn_by_inverse_layer_idx", "1", "scale_attn_by_inverse_layer_idx"},
        {"positional_embedding_type", "\"shortformer\"", "shortformer"},
        {"attention_dir", "\"bidirectional\"", "bidirectional"},
        {"n_key_value_heads", "3", "n_key_value_heads 3 does not divide n_heads 2"},
        {"rotary_base", "1.0", "rotary_base"},
        {"use_local_attn", "true", "use_local_attn needs window_size and attn_types"},
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

/* ------------------------------------------------------------------------ */
/* Hugging Face GPT-2 config.json                                            */

/* The computed and refused fields with a value to try (an alias: the base's
 * value, which it must agree with); every other pinned field must be inert. */
static const field_case HF_CASES[] = {
    {"model_type", HS_TL_COMPUTED, "\"gpt2\""}, {"n_embd", HS_TL_COMPUTED, "12"},
    {"hidden_size", HS_TL_COMPUTED, "8"}, {"n_head", HS_TL_COMPUTED, "4"},
    {"num_attention_heads", HS_TL_COMPUTED, "2"}, {"n_layer", HS_TL_COMPUTED, "3"},
    {"num_hidden_layers", HS_TL_COMPUTED, "1"}, {"n_positions", HS_TL_COMPUTED, "6"},
    {"max_position_embeddings", HS_TL_COMPUTED, "4"}, {"n_ctx", HS_TL_COMPUTED, "4"},
    {"n_inner", HS_TL_COMPUTED, "20"}, {"vocab_size", HS_TL_COMPUTED, "9"},
    {"layer_norm_epsilon", HS_TL_COMPUTED, "0.001"},
    {"activation_function", HS_TL_COMPUTED, "\"relu\""},
    {"scale_attn_weights", HS_TL_COMPUTED, "false"},
    {"scale_attn_by_inverse_layer_idx", HS_TL_COMPUTED, "true"},
    {"tie_word_embeddings", HS_TL_COMPUTED, "false"},
    {"add_cross_attention", HS_TL_REFUSED, "true"}, {"is_encoder_decoder", HS_TL_REFUSED, "true"},
    {"pruned_heads", HS_TL_REFUSED, "{\"0\":[1]}"},
    {"quantization_config", HS_TL_REFUSED, "{\"bits\":4}"},
};
enum { N_HF_CASES = sizeof HF_CASES / sizeof HF_CASES[0] };

static const char *const HF_BASE[][2] = {
    {"model_type", "\"gpt2\""}, {"n_embd", "8"}, {"n_head", "2"}, {"n_layer", "1"},
    {"n_positions", "4"}, {"vocab_size", "5"},
};

static hs_status hf_parse_with(const char *key, const char *value, hs_config *c, hs_error *err)
{
    char text[512];
    size_t n = (size_t)snprintf(text, sizeof text, "{");
    for (size_t i = 0; i < sizeof HF_BASE / sizeof HF_BASE[0]; i++)
        if (key == NULL || strcmp(key, HF_BASE[i][0]) != 0)
            n += (size_t)snprintf(text + n, sizeof text - n, "\"%s\":%s,", HF_BASE[i][0], HF_BASE[i][1]);
    if (key) n += (size_t)snprintf(text + n, sizeof text - n, "\"%s\":%s,", key, value);
    text[n - 1] = '}';
    return hs_checkpoint_hf_config_parse("m/config.json", text, NULL, c, err);
}

static void every_pinned_hf_field_is_classified(void **state)
{
    (void)state;
    FILE *fp = fopen("checkpoint/hf_gpt2_config_fields.txt", "r");
    assert_non_null(fp);
    char line[128];
    int n = 0, n_cases = 0;
    hs_config base, c;
    hs_error err;
    assert_int_equal(hf_parse_with(NULL, NULL, &base, &err), HS_OK);
    while (fgets(line, sizeof line, fp)) {
        if (line[0] == '#') continue;
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '\0') continue;
        n++;
        const int kind = hs_checkpoint_hf_field(line);
        if (kind < 0)
            fail_msg("pinned config.json field '%s' is neither computed, inert nor refused: add "
                     "it to model/checkpoint_hf.c HF_FIELDS", line);
        const field_case *fc = NULL;
        for (int i = 0; i < N_HF_CASES; i++)
            if (strcmp(HF_CASES[i].name, line) == 0) fc = &HF_CASES[i];
        if (fc == NULL) { /* inert: any value leaves the config as it was */
            if (kind != HS_TL_INERT) fail_msg("field '%s': the loader says %d, no case here", line, kind);
            assert_int_equal(hf_parse_with(line, "[7, \"x\"]", &c, &err), HS_OK);
            assert_memory_equal(&c, &base, sizeof c);
            continue;
        }
        n_cases++;
        if (kind != (int)fc->kind) fail_msg("field '%s': the loader says %d, the table %d", line, kind, (int)fc->kind);
        hs_status st = hf_parse_with(fc->name, fc->value, &c, &err);
        if (fc->kind == HS_TL_REFUSED) {
            char want[96];
            snprintf(want, sizeof want, "'%s' = %s", fc->name, fc->value);
            if (st != HS_ERR_CONFIG || !strstr(err.msg, want) || strchr(err.msg, '\n'))
                fail_msg("%s = %s: status %d, message '%s'", fc->name, fc->value, st, err.msg);
            assert_int_equal(hf_parse_with(fc->name, "null", &c, &err), HS_OK);
            assert_int_equal(hf_parse_with(fc->name, "false", &c, &err), HS_OK);
        } else if (st != HS_OK) {
            fail_msg("%s = %s refused: %s", fc->name, fc->value, err.msg);
        }
    }
    fclose(fp);
    assert_int_equal(n_cases, N_HF_CASES);
    assert_int_equal(n, 96);
    assert_int_equal(hs_checkpoint_hf_field("no_such_field"), -1);
}

/* Each computed field lands where the forward reads it (GPT2Config's
 * semantics); a bad value, an unknown field, another model_type: one line. */
static void hf_computed_fields_are_computed(void **state)
{
    (void)state;
    hs_config c;
    hs_error err;
    assert_int_equal(hf_parse_with(NULL, NULL, &c, &err), HS_OK);
    assert_true(c.d_model == 8 && c.n_heads == 2 && c.d_head == 4 && c.n_layers == 1 && c.n_ctx == 4 &&
                c.d_vocab == 5 && c.d_mlp == 32 && c.eps == 1e-5f && c.act == HS_ACT_GELU_NEW &&
                hs_attn_scale(&c) == 2.0f && !c.attn_scale_by_layer && c.norm == HS_NORM_LAYERNORM &&
                !c.norm_pre && c.bias && c.pos == HS_POS_LEARNED);
    assert_int_equal(hf_parse_with("n_inner", "null", &c, &err), HS_OK); /* 4 n_embd */
    assert_int_equal(c.d_mlp, 32);
    assert_int_equal(hf_parse_with("n_inner", "20", &c, &err), HS_OK);
    assert_int_equal(c.d_mlp, 20);
    assert_int_equal(hf_parse_with("hidden_size", "8", &c, &err), HS_OK);
    assert_int_equal(hf_parse_with("n_ctx", "4", &c, &err), HS_OK);
    assert_int_equal(hf_parse_with("layer_norm_epsilon", "0.001", &c, &err), HS_OK);
    assert_true(c.eps == 0.001f);
    assert_int_equal(hf_parse_with("scale_attn_weights", "false", &c, &err), HS_OK);
    assert_true(hs_attn_scale(&c) == 1.0f);
    assert_int_equal(hf_parse_with("scale_attn_by_inverse_layer_idx", "true", &c, &err), HS_OK);
    assert_true(hs_attn_scale_at(&c, 1) == 4.0f);
    static const struct {
        const char *act;
        hs_act want;
    } acts[] = {{"gelu_new", HS_ACT_GELU_NEW}, {"gelu_pytorch_tanh", HS_ACT_GELU_NEW},
                {"gelu", HS_ACT_GELU}, {"relu", HS_ACT_RELU}, {"silu", HS_ACT_SILU}};
    char v[40];
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
        snprintf(v, sizeof v, "\"%s\"", acts[i].act);
        assert_int_equal(hf_parse_with("activation_function", v, &c, &err), HS_OK);
        assert_int_equal(c.act, acts[i].want);
    }
    static const struct {
        const char *key, *value, *named;
    } bad[] = {
        {"model_type", "\"gpt_neo\"", "model_type 'gpt_neo'"},
        {"model_type", NULL, "no 'model_type'"},
        {"rope_theta", "10000", "'rope_theta'"},
        {"activation_function", "\"quick_gelu\"", "'quick_gelu'"},
        {"hidden_size", "16", "'n_embd' and 'hidden_size' differ"},
        {"n_ctx", "8", "n_positions 4 and n_ctx 8 differ"},
        {"n_head", "3", "not a multiple of n_head 3"},
        {"layer_norm_epsilon", "0", "layer_norm_epsilon"},
        {"scale_attn_weights", "1", "'scale_attn_weights' must be true or false"},
        {"n_layer", "2.5", "'n_layer' must be an integer"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hs_status st = bad[i].value ? hf_parse_with(bad[i].key, bad[i].value, &c, &err)
                                    : hs_checkpoint_hf_config_parse("m/config.json", "{\"n_embd\":8}", NULL, &c, &err);
        if (st != HS_ERR_CONFIG || !strstr(err.msg, bad[i].named) || !strstr(err.msg, "m/config.json") ||
            strchr(err.msg, '\n'))
            fail_msg("%s = %s: status %d, message '%s' (want '%s')", bad[i].key,
                     bad[i].value ? bad[i].value : "(absent)", st, err.msg, bad[i].named);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_pinned_field_is_classified),
        cmocka_unit_test(refused_fields_name_field_and_value_inert_ones_change_nothing),
        cmocka_unit_test(computed_fields_are_computed),
        cmocka_unit_test(every_pinned_hf_field_is_classified),
        cmocka_unit_test(hf_computed_fields_are_computed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
