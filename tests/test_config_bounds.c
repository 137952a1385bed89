/*
 * tests/test_config_bounds.c -- one step either side of every numeric bound
 * the config readers check (model/checkpoint_tl.c: the TransformerLens
 * config and headscope_config; model/checkpoint_hf.c: Hugging Face GPT-2's
 * config.json): the value at the bound is accepted by the field's check, the
 * value one step over it (one for an integer, the next double or float for a
 * real) is refused with its exact message. The safetensors reader's bounds
 * are the bound_* rows of tests/checkpoint/corrupt_cases.tsv (test_checkpoint).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "model/checkpoint_internal.h"
#include "model/model.h"
#include "model/checkpoint.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* The base TL config: a small model; the case replaces or adds one field. */
static const char *const TL_BASE[][2] = {
    {"n_layers", "1"}, {"d_model", "8"}, {"n_ctx", "4"}, {"d_head", "4"},
    {"n_heads", "2"}, {"d_mlp", "16"}, {"act_fn", "\"gelu\""}, {"d_vocab", "5"},
};
static const char *const HF_BASE[][2] = {
    {"model_type", "\"gpt2\""}, {"n_embd", "8"}, {"n_head", "2"}, {"n_layer", "1"},
    {"n_positions", "4"}, {"vocab_size", "5"},
};

/* base (n rows) with key = value (replacing base's key), as JSON text. */
static void with(const char *const (*base)[2], size_t n, const char *key, const char *value, char *text,
                 size_t cap)
{
    size_t k = (size_t)snprintf(text, cap, "{");
    for (size_t i = 0; i < n; i++)
        if (strcmp(key, base[i][0]) != 0)
            k += (size_t)snprintf(text + k, cap - k, "\"%s\":%s,", base[i][0], base[i][1]);
    snprintf(text + k, cap - k, "\"%s\":%s}", key, value);
}

typedef struct {
    const char *key;
    const char *at;     /* the value at the bound: accepted */
    const char *over;   /* one step over it: refused */
    const char *msg;    /* the message after "FILE: " */
} bound_case;

static const bound_case TL[] = {
    {"n_layers", STR(HS_MAX_LAYERS), "49", "config field 'n_layers' must be an integer in [1, 48]"},
    {"n_layers", "1", "0", "config field 'n_layers' must be an integer in [1, 48]"},
    {"d_model", "1048576", "1048577", "config field 'd_model' must be an integer in [1, 1048576]"},
    {"d_model", "1", "0", "config field 'd_model' must be an integer in [1, 1048576]"},
    {"n_ctx", "1048576", "1048577", "config field 'n_ctx' must be an integer in [1, 1048576]"},
    {"n_ctx", "1", "0", "config field 'n_ctx' must be an integer in [1, 1048576]"},
    {"d_head", "1048576", "1048577", "config field 'd_head' must be an integer in [1, 1048576]"},
    {"d_head", "1", "0", "config field 'd_head' must be an integer in [1, 1048576]"},
    {"d_vocab", "1073741824", "1073741825", "config field 'd_vocab' must be an integer in [1, 1073741824]"},
    {"d_vocab", "1", "0", "config field 'd_vocab' must be an integer in [1, 1073741824]"},
    {"n_heads", "1048576", "1048577", "config field 'n_heads' must be an integer in [-1, 1048576]"},
    {"n_heads", "-1", "-2", "config field 'n_heads' must be an integer in [-1, 1048576]"},
    {"d_mlp", "1048576", "1048577", "config field 'd_mlp' must be an integer in [0, 1048576]"},
    {"d_mlp", "1", "-1", "config field 'd_mlp' must be an integer in [0, 1048576]"},
    {"d_vocab_out", "5", "1073741825", "config field 'd_vocab_out' must be an integer in [-1, 1073741824]"},
    {"d_vocab_out", "-1", "-2", "config field 'd_vocab_out' must be an integer in [-1, 1073741824]"},
    {"n_key_value_heads", "2", "1048577",
     "config field 'n_key_value_heads' must be an integer in [0, 1048576]"},
    {"n_key_value_heads", "2", "-1", "config field 'n_key_value_heads' must be an integer in [0, 1048576]"},
    /* a real: the smallest float above 0 (1.4e-45) and one that rounds to 0 as a float;
     * the largest float and the next one up (which is inf) */
    {"eps", "1.4e-45", "7e-46", "config eps must be a positive number"},
    {"eps", "3.4028235e38", "3.4028236e38", "config eps must be a positive number"},
    {"attn_scale", "1e30", "1.0000000000000002e30",
     "config attn_scale must be a positive number (or -1 = sqrt(d_head))"},
    {"attn_scale", "-1", "-1.0000000000000002", "config attn_scale must be a positive number (or -1 = sqrt(d_head))"},
};

static const bound_case HF[] = {
    {"n_embd", "1048576", "1048577", "field 'n_embd' must be an integer in [1, 1048576]"},
    {"n_embd", "2", "0", "field 'n_embd' must be an integer in [1, 1048576]"},
    {"n_head", "1", "0", "field 'n_head' must be an integer in [1, 1048576]"},
    {"n_layer", "1048576", "1048577", "field 'n_layer' must be an integer in [1, 1048576]"},
    {"n_layer", "1", "0", "field 'n_layer' must be an integer in [1, 1048576]"},
    {"vocab_size", "1073741824", "1073741825", "field 'vocab_size' must be an integer in [1, 1073741824]"},
    {"vocab_size", "1", "0", "field 'vocab_size' must be an integer in [1, 1073741824]"},
    {"n_positions", "1048576", "1048577", "field 'n_positions' must be an integer in [1, 1048576]"},
    {"n_positions", "1", "0", "field 'n_positions' must be an integer in [1, 1048576]"},
    {"n_inner", "1048576", "1048577", "field 'n_inner' must be an integer in [1, 1048576]"},
    {"n_inner", "1", "0", "field 'n_inner' must be an integer in [1, 1048576]"},
    {"layer_norm_epsilon", "1.4e-45", "7e-46", "layer_norm_epsilon must be a positive number"},
    {"layer_norm_epsilon", "3.4028235e38", "3.4028236e38", "layer_norm_epsilon must be a positive number"},
};

static void check(const bound_case *b, int hf)
{
    char text[512], want[256];
    hs_config c = hs_config_default();
    hs_error err = {0};
    const char *fname = hf ? "m/config.json" : "t.safetensors";
    for (int over = 0; over < 2; over++) {
        const char *v = over ? b->over : b->at;
        if (hf) with(HF_BASE, sizeof HF_BASE / sizeof HF_BASE[0], b->key, v, text, sizeof text);
        else with(TL_BASE, sizeof TL_BASE / sizeof TL_BASE[0], b->key, v, text, sizeof text);
        hs_status st = hf ? hs_checkpoint_hf_config_parse(fname, text, NULL, &c, &err)
                          : hs_checkpoint_config_parse(fname, text, NULL, &c, &err);
        snprintf(want, sizeof want, "%s: %s", fname, b->msg);
        if (!over && st == HS_ERR_CONFIG && strcmp(err.msg, want) == 0)
            fail_msg("%s = %s (at the bound) refused by the bound's own check: %s", b->key, v, err.msg);
        if (over && (st != HS_ERR_CONFIG || strcmp(err.msg, want) != 0))
            fail_msg("%s = %s (one over): status %d, message '%s'; want '%s'", b->key, v, (int)st, err.msg, want);
    }
}

static void tl_config_bounds(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof TL / sizeof TL[0]; i++) check(&TL[i], 0);
}

static void hf_config_bounds(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof HF / sizeof HF[0]; i++) check(&HF[i], 1);
}

/* headscope_config's seed: a JSON number up to 2^53 (the largest exact
 * integer), or a string of up to 20 digits (leading zeros count) within 64
 * bits. */
static void headscope_config_seed_bounds(void **state)
{
    (void)state;
    static const struct {
        const char *value;
        int ok;
        uint64_t seed;
    } cases[] = {
        {"9007199254740992", 1, 9007199254740992ull},
        {"9007199254740994", 0, 0},
        {"\"18446744073709551615\"", 1, 18446744073709551615ull},
        {"\"18446744073709551616\"", 0, 0}, /* 2^64: 20 digits, over 64 bits */
        {"\"184467440737095516150\"", 0, 0},
        {"\"00000000000000000001\"", 1, 1},   /* 20 digits */
        {"\"000000000000000000001\"", 0, 0},  /* 21 digits */
        {"0", 1, 0},
        {"-1", 0, 0},
    };
    char tl[512], hs[128];
    with(TL_BASE, sizeof TL_BASE / sizeof TL_BASE[0], "n_layers", "1", tl, sizeof tl);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(hs, sizeof hs, "{\"seed\": %s}", cases[i].value);
        hs_config c = hs_config_default();
        hs_error err = {0};
        hs_status st = hs_checkpoint_config_parse("t.safetensors", tl, hs, &c, &err);
        if (cases[i].ok && (st != HS_OK || c.seed != cases[i].seed))
            fail_msg("seed %s: status %d (%s), seed %llu", cases[i].value, (int)st, err.msg,
                     (unsigned long long)c.seed);
        if (!cases[i].ok &&
            (st != HS_ERR_CONFIG ||
             strcmp(err.msg, "t.safetensors: headscope_config seed must be a non-negative integer") != 0))
            fail_msg("seed %s: status %d, message '%s'", cases[i].value, (int)st, err.msg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tl_config_bounds),
        cmocka_unit_test(hf_config_bounds),
        cmocka_unit_test(headscope_config_seed_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
