/*
 * tests/test_attn_switches.c -- the attention switches of the model core
 * (model.h's "attn" group: rotary, sinusoidal and ALiBi positions,
 * grouped-query attention, local attention, evaluation past n_ctx):
 *   - each switch's config survives a checkpoint (TransformerLens' names in
 *     "config", only off the default) and the reloaded model gives the same
 *     logits bit for bit;
 *   - the hook points a switch makes (hook_rot_q/k with rotary; hook_k/v
 *     [B,T,n_kv,dh] and no hook_attn_in with GQA) are listed and observed
 *     with those shapes;
 *   - hs_model_set_n_ctx: learned positions refuse a longer context in one
 *     line; the others run past it, and a long run's first positions give
 *     the short run's logits (causal attention, positions computed per
 *     index);
 *   - the known values: ALiBi's slopes for H = 4 and 6 (Press et al.'s
 *     code), NTK-by-parts' three wavelength regimes, and n_kv = n_heads
 *     giving the bits of the plain model;
 *   - a local window of 1 makes every head attend to itself alone;
 *   - a TransformerLens checkpoint's attn.mask of a local layer is its
 *     window's (a causal one there is refused in one line);
 *   - rotary + GQA + local and ALiBi + local models give the same logits and
 *     gradients bit for bit on one and two threads.
 * The comparison with an independent float64 torch forward and autograd is
 * tests/test_attn_torch.sh: run as `test_attn_switches --dump DIR` this
 * program writes, per case, DIR/<case>.safetensors (the checkpoint) and
 * DIR/<case>.dump.safetensors (tokens, targets, every observed attention
 * point, the logits, every parameter's gradient of the mean cross-entropy,
 * and the gradients at the attention points from hs_backward_acts), and
 * DIR/cases.txt (tests/py/attn_ref.py).
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
#include "model/train.h"
#include "model/checkpoint.h"
#include "model/model_internal.h"
#include "fixture.h"

enum { V = 11, NCTX = 8, B = 4 }; /* B 4 x T 8: the backward runs as two batch parts */

/* A small model: 2 layers, D 24, 4 heads of 6, MLP 32, n_ctx 8. */
static hs_config base_cfg(void)
{
    hs_config c = hs_config_default();
    c.n_layers = 2;
    c.d_model = 24;
    c.n_heads = 4;
    c.d_head = 6;
    c.d_mlp = 32;
    c.n_ctx = NCTX;
    c.d_vocab = V;
    return c;
}

typedef struct {
    const char *label;
    hs_config cfg;
    int T;      /* positions of the run (> NCTX: past the trained length) */
} attn_case;

/* Every case the torch reference checks. */
static int cases_of(attn_case *out)
{
    int n = 0;
    hs_config c;
#define CASE(lbl, t, ...)                                  \
    do {                                                   \
        c = base_cfg();                                    \
        __VA_ARGS__;                                       \
        out[n++] = (attn_case){lbl, c, t};                 \
    } while (0)
    CASE("rotary_quarter", NCTX, c.pos = HS_POS_ROTARY; c.d_head = 8; c.rotary_dim = 2);
    CASE("rotary_full", NCTX, c.pos = HS_POS_ROTARY);
    CASE("rotary_adjacent", NCTX, c.pos = HS_POS_ROTARY; c.d_head = 8; c.rotary_dim = 4;
         c.rotary_adjacent_pairs = 1; c.rotary_base = 500.0f);
    /* base 10000 over 8 dims: wavelengths 6.3, 63, 628, 6283; with original
     * context 64, low 1, high 4: one kept, one smoothed, two divided */
    CASE("rotary_ntk", NCTX, c.pos = HS_POS_ROTARY; c.d_head = 8; c.use_NTK_by_parts_rope = 1;
         c.NTK_by_parts_factor = 8.0f; c.NTK_by_parts_low_freq_factor = 1.0f;
         c.NTK_by_parts_high_freq_factor = 4.0f; c.NTK_original_ctx_len = 64);
    CASE("sinusoidal", NCTX, c.pos = HS_POS_SINUSOIDAL);
    CASE("alibi_h4", NCTX, c.pos = HS_POS_ALIBI);
    CASE("alibi_h6", NCTX, c.pos = HS_POS_ALIBI; c.n_heads = 6; c.d_head = 4);
    CASE("gqa_2groups", NCTX, c.n_heads = 8; c.d_head = 4; c.n_key_value_heads = 2);
    CASE("gqa_4groups", NCTX, c.n_heads = 8; c.d_head = 4; c.n_key_value_heads = 4);
    CASE("local_window3", NCTX, c.window_size = 3; c.attn_local[0] = 1; c.attn_scale = 1.0f);
    CASE("llama_like", NCTX, c.pos = HS_POS_ROTARY; c.norm = HS_NORM_RMSNORM; c.bias = 0;
         c.n_heads = 8; c.d_head = 4; c.n_key_value_heads = 2; c.act = HS_ACT_RELU);
    CASE("long_sinusoidal", 2 * NCTX, c.pos = HS_POS_SINUSOIDAL);
    CASE("long_rotary", 2 * NCTX, c.pos = HS_POS_ROTARY; c.d_head = 8; c.rotary_dim = 4);
    CASE("long_alibi", 2 * NCTX, c.pos = HS_POS_ALIBI; c.n_heads = 6; c.d_head = 4);
    CASE("long_local_rotary_gqa", 2 * NCTX, c.pos = HS_POS_ROTARY; c.window_size = 5;
         c.attn_local[1] = 1; c.n_key_value_heads = 2);
#undef CASE
    return n;
}
enum { MAX_CASES = 32 };

static hs_model *model_of(const attn_case *k, uint64_t seed)
{
    hs_model *m = random_model_of(&k->cfg, seed);
    hs_error err;
    if (k->T > m->cfg.n_ctx && hs_model_set_n_ctx(m, k->T, &err) != HS_OK)
        fail_msg("%s: set_n_ctx: %s", k->label, err.msg);
    return m;
}

static void tokens_of(int *tok, int *tgt, int n, uint64_t seed)
{
    rng_state = seed;
    for (int i = 0; i < n; i++) {
        tok[i] = (int)((rnd() + 1.0) * 0.5 * V) % V;
        tgt[i] = (int)((rnd() + 1.0) * 0.5 * V) % V;
    }
}

/* ------------------------------------------------------------------------ */
/* Points an observer saw                                                    */

typedef struct {
    char name[96];
    int ndim;
    int64_t shape[4];
    float *data;
} seen_point;

typedef struct {
    seen_point p[256];
    int n;
    const char *only; /* substring a point's name must hold (NULL = every one) */
} seen;

static int seen_fn(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    seen *s = ctx;
    if (s->only && !strstr(name, s->only)) return 0;
    if (s->n >= 256) fail_msg("too many points");
    seen_point *p = &s->p[s->n++];
    snprintf(p->name, sizeof p->name, "%s", name);
    p->ndim = ndim;
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        p->shape[i] = shape[i];
        n *= (size_t)shape[i];
    }
    p->data = malloc(n * sizeof(float));
    memcpy(p->data, data, n * sizeof(float));
    return 0;
}

static void seen_free(seen *s)
{
    for (int i = 0; i < s->n; i++) free(s->p[i].data);
    s->n = 0;
}

static const seen_point *seen_get(const seen *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->p[i].name, name) == 0) return &s->p[i];
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* C-side tests                                                              */

static float *run_logits(const hs_model *m, const int *tok, int b, int t)
{
    hs_error err;
    hs_acts *a = NULL;
    if (hs_acts_create(&m->cfg, b, t, 0, &a, &err) != HS_OK) fail_msg("acts: %s", err.msg);
    if (hs_forward(m, a, tok, b, t, NULL, &err) != HS_OK) fail_msg("forward: %s", err.msg);
    float *out = malloc((size_t)b * t * V * sizeof(float));
    memcpy(out, a->logits, (size_t)b * t * V * sizeof(float));
    hs_acts_destroy(a);
    return out;
}

static void checkpoint_round_trip_keeps_config_and_bits(void **state)
{
    (void)state;
    attn_case ks[MAX_CASES];
    const int n = cases_of(ks);
    const char *tmp = getenv("HS_TEST_TMP");
    char path[512];
    snprintf(path, sizeof path, "%s/attn_switch_rt.safetensors", tmp ? tmp : "/tmp");
    for (int i = 0; i < n; i++) {
        hs_model *m = model_of(&ks[i], 100 + (uint64_t)i);
        hs_error err;
        if (hs_checkpoint_save(m, NULL, path, &err) != HS_OK) fail_msg("save: %s", err.msg);
        hs_model *r = NULL;
        if (hs_checkpoint_load(path, &r, NULL, NULL, &err) != HS_OK)
            fail_msg("%s: load: %s", ks[i].label, err.msg);
        const hs_config *a = &m->cfg, *b = &r->cfg;
        if (a->pos != b->pos || hs_rotary_dim(a) != hs_rotary_dim(b) ||
            a->rotary_base != b->rotary_base || a->rotary_adjacent_pairs != b->rotary_adjacent_pairs ||
            a->use_NTK_by_parts_rope != b->use_NTK_by_parts_rope ||
            (a->use_NTK_by_parts_rope &&
             (a->NTK_by_parts_factor != b->NTK_by_parts_factor ||
              a->NTK_by_parts_low_freq_factor != b->NTK_by_parts_low_freq_factor ||
              a->NTK_by_parts_high_freq_factor != b->NTK_by_parts_high_freq_factor ||
              a->NTK_original_ctx_len != b->NTK_original_ctx_len)) ||
            hs_kv_heads(a) != hs_kv_heads(b) || a->window_size != b->window_size ||
            memcmp(a->attn_local, b->attn_local, sizeof a->attn_local) != 0 ||
            a->attn_scale != b->attn_scale || a->n_ctx != b->n_ctx)
            fail_msg("%s: the config changed through the checkpoint", ks[i].label);
        const int T = ks[i].T;
        int tok[B * 2 * NCTX], tgt[B * 2 * NCTX];
        tokens_of(tok, tgt, B * T, 7);
        float *x = run_logits(m, tok, B, T), *y = run_logits(r, tok, B, T);
        if (memcmp(x, y, (size_t)B * T * V * sizeof(float)) != 0)
            fail_msg("%s: logits differ after the round trip", ks[i].label);
        free(x);
        free(y);
        hs_model_destroy(m);
        hs_model_destroy(r);
    }
    remove(path);
    /* a plain model's config texts carry none of the new keys */
    hs_config plain = base_cfg();
    cJSON *j = hs_config_to_json(&plain, HS_CONFIG_JSON_TL);
    char *txt = cJSON_PrintUnformatted(j);
    static const char *const keys[] = {"rotary", "n_key_value_heads", "window_size", "attn_types",
                                       "local", "NTK"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strstr(txt, keys[i])) fail_msg("plain config holds '%s': %s", keys[i], txt);
    assert_non_null(strstr(txt, "\"positional_embedding_type\":\"standard\""));
    cJSON_free(txt);
    cJSON_Delete(j);
}

/* Adds 1 to key/value head 0's hook_k_input of layer 0 ([B,T,2,D]). */
static int edit_k_input(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)ctx;
    if (strcmp(name, "blocks.0.hook_k_input") != 0) return 0;
    assert_true(ndim == 4 && shape[2] == 2);
    for (int64_t i = 0; i < shape[0] * shape[1]; i++)
        for (int64_t d = 0; d < shape[3]; d++) data[(i * 2 + 0) * shape[3] + d] += 1.0f;
    return 1;
}

static int wants_k_input(const char *name, void *ctx)
{
    (void)ctx;
    return strcmp(name, "blocks.0.hook_k_input") == 0;
}

static void points_and_shapes(void **state)
{
    (void)state;
    hs_config c = base_cfg();
    c.pos = HS_POS_ROTARY;
    c.n_heads = 8;
    c.d_head = 4;
    c.n_key_value_heads = 2;
    hs_hook_point pts[400];
    const int np = hs_hook_points(&c, pts, 400);
    int rot = 0, attn_in = 0;
    for (int i = 0; i < np; i++) {
        rot += strstr(pts[i].name, "hook_rot_") != NULL;
        attn_in += strstr(pts[i].name, "hook_attn_in") != NULL;
    }
    assert_int_equal(rot, 2 * c.n_layers);
    assert_int_equal(attn_in, 0);
    hs_model *m = random_model_of(&c, 3);
    /* hs_head_qkv takes a query head: W_K, W_V of its key/value head */
    for (int h = 0; h < 8; h++)
        for (int x = 0; x < 3; x++) {
            int ld;
            const float *W = hs_head_qkv(m, 1, x, h, &ld);
            const float *base = x == 0 ? m->params.blocks[1].W_Q : x == 1 ? m->params.blocks[1].W_K
                                                                           : m->params.blocks[1].W_V;
            assert_true(ld == 4 && W == base + (size_t)(x == 0 ? h : h / 4) * 24 * 4);
        }
    int tok[B * NCTX], tgt[B * NCTX];
    tokens_of(tok, tgt, B * NCTX, 9);
    hs_error err;
    hs_acts *a = NULL;
    assert_int_equal(hs_acts_create(&c, B, NCTX, 0, &a, &err), HS_OK);
    seen s = {.n = 0, .only = "blocks.0."};
    const hs_observer obs = {seen_fn, NULL, &s};
    assert_int_equal(hs_forward(m, a, tok, B, NCTX, &obs, &err), HS_OK);
    const seen_point *k = seen_get(&s, "blocks.0.attn.hook_k");
    const seen_point *rk = seen_get(&s, "blocks.0.attn.hook_rot_k");
    const seen_point *rq = seen_get(&s, "blocks.0.attn.hook_rot_q");
    const seen_point *kin = seen_get(&s, "blocks.0.hook_k_input");
    assert_non_null(k);
    assert_non_null(rk);
    assert_non_null(rq);
    assert_non_null(kin);
    assert_true(k->shape[2] == 2 && rk->shape[2] == 2 && rq->shape[2] == 8 && kin->shape[2] == 2);
    /* position 0 is not rotated; position 1 is (and its norm is kept per pair) */
    assert_memory_equal(k->data, rk->data, 2 * 4 * sizeof(float));
    const float *k1 = k->data + 1 * 2 * 4, *r1 = rk->data + 1 * 2 * 4;
    assert_true(memcmp(k1, r1, 4 * sizeof(float)) != 0);
    const double n0 = (double)k1[0] * k1[0] + (double)k1[2] * k1[2];
    const double n1 = (double)r1[0] * r1[0] + (double)r1[2] * r1[2];
    assert_true(fabs(n0 - n1) <= 1e-5 * (n0 + 1e-30));
    seen_free(&s);
    /* an edited hook_k_input of one key/value head changes the patterns of
     * its group alone (heads 0-3 read key head 0, heads 4-7 key head 1) */
    seen base = {.n = 0, .only = "blocks.0.attn.hook_pattern"};
    const hs_observer ob = {seen_fn, NULL, &base};
    assert_int_equal(hs_forward(m, a, tok, B, NCTX, &ob, &err), HS_OK);
    const hs_observer ed = {edit_k_input, wants_k_input, NULL};
    assert_int_equal(hs_forward(m, a, tok, B, NCTX, &ed, &err), HS_OK);
    const float *p0 = seen_get(&base, "blocks.0.attn.hook_pattern")->data;
    const float *p1 = a->blocks[0].att;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < 8; h++) {
            const size_t off = ((size_t)b * 8 + h) * NCTX * NCTX;
            const int same = memcmp(p0 + off, p1 + off, NCTX * NCTX * sizeof(float)) == 0;
            if (same != (h >= 4)) fail_msg("sequence %d head %d: pattern %s", b, h, same ? "unchanged" : "changed");
        }
    seen_free(&base);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

static void longer_context(void **state)
{
    (void)state;
    hs_error err;
    hs_config c = base_cfg();
    hs_model *m = random_model_of(&c, 5);
    assert_int_equal(hs_model_set_n_ctx(m, 2 * NCTX, &err), HS_ERR_INPUT);
    assert_string_equal(err.msg, "learned positions stop at n_ctx = 8 (asked for 16)");
    assert_int_equal(hs_model_set_n_ctx(m, 4, &err), HS_OK);
    assert_int_equal(m->cfg.n_ctx, NCTX); /* W_pos keeps its rows */
    hs_model_destroy(m);
    static const hs_pos kinds[] = {HS_POS_NONE, HS_POS_SINUSOIDAL, HS_POS_ROTARY, HS_POS_ALIBI};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        c = base_cfg();
        c.pos = kinds[i];
        m = random_model_of(&c, 6 + i);
        int tok[B * 4 * NCTX], tgt[B * 4 * NCTX];
        tokens_of(tok, tgt, B * 4 * NCTX, 11);
        hs_acts *a = NULL;
        assert_int_equal(hs_acts_create(&m->cfg, B, 4 * NCTX, 0, &a, &err), HS_ERR_INPUT);
        assert_int_equal(hs_model_set_n_ctx(m, 4 * NCTX, &err), HS_OK);
        assert_int_equal(m->cfg.n_ctx, 4 * NCTX);
        float *lo = run_logits(m, tok, 1, 4 * NCTX);
        float *sh = run_logits(m, tok, 1, NCTX);
        for (int p = 0; p < NCTX * V; p++)
            if (!(fabsf(lo[p] - sh[p]) <= 1e-5f * (1.0f + fabsf(sh[p]))))
                fail_msg("%s: position %d's logits differ in a longer run: %g vs %g",
                         hs_pos_name(kinds[i]), p / V, (double)lo[p], (double)sh[p]);
        free(lo);
        free(sh);
        hs_model_destroy(m);
    }
}

/* Activations made for more positions than a run uses (inspect's, the
 * engine's) give the run's own values: the tables are per position. */
static void capacity_does_not_matter(void **state)
{
    (void)state;
    static const hs_pos kinds[] = {HS_POS_SINUSOIDAL, HS_POS_ROTARY, HS_POS_ALIBI};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        hs_config c = base_cfg();
        c.pos = kinds[i];
        c.n_ctx = 2 * NCTX;
        hs_model *m = random_model_of(&c, 30 + i);
        int tok[B * NCTX], tgt[B * NCTX];
        tokens_of(tok, tgt, B * NCTX, 13);
        hs_error err;
        hs_acts *a = NULL;
        assert_int_equal(hs_acts_create(&c, B, 2 * NCTX, 0, &a, &err), HS_OK);
        assert_int_equal(hs_forward(m, a, tok, B, NCTX, NULL, &err), HS_OK);
        float *exact = run_logits(m, tok, B, NCTX);
        if (memcmp(exact, a->logits, (size_t)B * NCTX * V * sizeof(float)) != 0)
            fail_msg("%s: a run of 8 positions on activations for 16 differs", hs_pos_name(kinds[i]));
        free(exact);
        hs_acts_destroy(a);
        hs_model_destroy(m);
    }
}

static void known_values(void **state)
{
    (void)state;
    double s[8];
    hs_alibi_slopes(4, s);
    for (int h = 0; h < 4; h++) assert_true(s[h] == pow(2.0, -2.0 * (h + 1)));
    hs_alibi_slopes(6, s); /* Press et al.: 4's slopes, then 8's at 0, 2 */
    const double want6[6] = {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125};
    for (int h = 0; h < 6; h++) assert_true(s[h] == want6[h]);
    hs_config c = base_cfg();
    c.pos = HS_POS_ROTARY;
    c.d_head = 8;
    double f[4], g[4];
    hs_rotary_inv_freq(&c, f);
    for (int i = 0; i < 4; i++) assert_true(fabs(f[i] - pow(10000.0, -i / 4.0)) < 1e-15 * f[i] + 1e-300);
    c.use_NTK_by_parts_rope = 1;
    c.NTK_original_ctx_len = 64;
    hs_rotary_inv_freq(&c, g);
    assert_true(g[0] == f[0]);                      /* wavelength 6.3 < 64 / 4: kept */
    assert_true(g[2] == f[2] / 8.0 && g[3] == f[3] / 8.0); /* > 64: divided by 8 */
    const double sm = (64.0 / (6.283185307179586 / f[1]) - 1.0) / 3.0; /* 63: smoothed */
    assert_true(fabs(g[1] - ((1 - sm) * f[1] / 8 + sm * f[1])) < 1e-15);
    /* n_kv = n_heads is the plain model, bit for bit */
    hs_config p = base_cfg(), q = base_cfg();
    q.n_key_value_heads = q.n_heads;
    hs_model *a = random_model_of(&p, 1), *b = random_model_of(&q, 1);
    int tok[B * NCTX], tgt[B * NCTX];
    tokens_of(tok, tgt, B * NCTX, 2);
    float *x = run_logits(a, tok, B, NCTX), *y = run_logits(b, tok, B, NCTX);
    assert_memory_equal(x, y, (size_t)B * NCTX * V * sizeof(float));
    free(x);
    free(y);
    hs_model_destroy(a);
    hs_model_destroy(b);
}

static void window_of_one_attends_to_itself(void **state)
{
    (void)state;
    hs_config c = base_cfg();
    c.window_size = 1;
    c.attn_local[0] = c.attn_local[1] = 1;
    hs_model *m = random_model_of(&c, 4);
    int tok[B * NCTX], tgt[B * NCTX];
    tokens_of(tok, tgt, B * NCTX, 3);
    hs_error err;
    hs_acts *a = NULL;
    assert_int_equal(hs_acts_create(&c, B, NCTX, 0, &a, &err), HS_OK);
    assert_int_equal(hs_forward(m, a, tok, B, NCTX, NULL, &err), HS_OK);
    for (int l = 0; l < 2; l++)
        for (int r = 0; r < B * c.n_heads * NCTX; r++)
            for (int j = 0; j < NCTX; j++)
                assert_true(a->blocks[l].att[(size_t)r * NCTX + j] == (j == r % NCTX ? 1.0f : 0.0f));
    hs_acts_destroy(a);
    hs_model_destroy(m);
    /* the refusals, one line each */
    c = base_cfg();
    c.attn_local[1] = 1;
    assert_int_equal(hs_config_validate(&c, &err), HS_ERR_CONFIG);
    assert_string_equal(err.msg, "config: window_size 0 must be >= 1 with a local layer");
    c = base_cfg();
    c.n_key_value_heads = 3;
    assert_int_equal(hs_config_validate(&c, &err), HS_ERR_CONFIG);
    assert_string_equal(err.msg, "config: n_key_value_heads 3 does not divide n_heads 4");
}

/* Every switch at once (rotary + GQA + a local layer; ALiBi + a local
 * layer): a batch split over two workers (forward parts, the backward's two
 * parts) gives the bits of one thread. */
static void two_threads_give_the_bits_of_one(void **state)
{
    (void)state;
    for (int variant = 0; variant < 2; variant++) {
        hs_config c = base_cfg();
        c.n_heads = 8;
        c.d_head = 4;
        c.window_size = 3;
        c.attn_local[variant] = 1;
        if (variant == 0) {
            c.pos = HS_POS_ROTARY;
            c.n_key_value_heads = 2;
        } else {
            c.pos = HS_POS_ALIBI;
        }
        hs_model *m = random_model_of(&c, 21 + (uint64_t)variant);
        hs_error err;
        assert_int_equal(hs_model_alloc_train(m, &err), HS_OK);
        enum { BB = 12 };
        int tok[BB * NCTX], tgt[BB * NCTX];
        tokens_of(tok, tgt, BB * NCTX, 5);
        float *keep[2], *lg[2];
        for (int th = 0; th < 2; th++) {
            hs_acts *a = NULL;
            assert_int_equal(hs_acts_create(&c, BB, NCTX, 1, &a, &err), HS_OK);
            assert_int_equal(hs_acts_set_threads(a, th + 1, &err), HS_OK);
            hs_zero_grad(m);
            assert_int_equal(hs_forward(m, a, tok, BB, NCTX, NULL, &err), HS_OK);
            int nv = 0;
            hs_cross_entropy(m, a, tgt, &nv);
            hs_backward(m, a, tok, tgt, NULL);
            keep[th] = malloc(m->n_params * sizeof(float));
            memcpy(keep[th], m->grad_mem, m->n_params * sizeof(float));
            lg[th] = malloc((size_t)BB * NCTX * V * sizeof(float));
            memcpy(lg[th], a->logits, (size_t)BB * NCTX * V * sizeof(float));
            hs_acts_destroy(a);
        }
        assert_memory_equal(lg[0], lg[1], (size_t)BB * NCTX * V * sizeof(float));
        assert_memory_equal(keep[0], keep[1], m->n_params * sizeof(float));
        for (int th = 0; th < 2; th++) {
            free(keep[th]);
            free(lg[th]);
        }
        hs_model_destroy(m);
    }
}

/* A TransformerLens checkpoint's attn.mask buffers: a local layer's must be
 * its window's mask (TL: triu(tril(1), 1 - window)), a global layer's the
 * causal one; a causal mask on a local layer is refused in one line. */
static void local_masks_in_a_checkpoint(void **state)
{
    (void)state;
    hs_config c = base_cfg();
    c.window_size = 3;
    c.attn_local[0] = 1;
    hs_model *m = random_model_of(&c, 8);
    const char *tmp = getenv("HS_TEST_TMP");
    char path[512];
    snprintf(path, sizeof path, "%s/attn_switch_mask.safetensors", tmp ? tmp : "/tmp");
    hs_error err;
    assert_int_equal(hs_checkpoint_save(m, NULL, path, &err), HS_OK);
    hs_st_file f;
    assert_int_equal(hs_safetensors_read(path, &f, &err), HS_OK);
    float masks[2][NCTX * NCTX];
    for (int bad = 0; bad < 2; bad++) {
        for (int l = 0; l < 2; l++)
            for (int r = 0; r < NCTX; r++)
                for (int k = 0; k < NCTX; k++) {
                    const int local = l == 0 && !bad;
                    masks[l][r * NCTX + k] = k <= r && (!local || r - k < 3) ? 1.0f : 0.0f;
                }
        hs_st_tensor t[HS_MAX_TENSORS + 2];
        for (int i = 0; i < f.n; i++)
            t[i] = (hs_st_tensor){f.names[i], f.ndim[i], {f.shape[i][0], f.shape[i][1], f.shape[i][2], 0},
                                  f.data[i]};
        t[f.n] = (hs_st_tensor){"blocks.0.attn.mask", 2, {NCTX, NCTX, 0, 0}, masks[0]};
        t[f.n + 1] = (hs_st_tensor){"blocks.1.attn.mask", 2, {NCTX, NCTX, 0, 0}, masks[1]};
        assert_int_equal(hs_safetensors_write(path, t, f.n + 2, (const char *const *)f.meta_keys,
                                              (const char *const *)f.meta_vals, f.n_meta, &err),
                         HS_OK);
        hs_model *r = NULL;
        int skipped = 0;
        const hs_status st = hs_checkpoint_load(path, &r, NULL, &skipped, &err);
        if (!bad) {
            if (st != HS_OK) fail_msg("the local mask was refused: %s", err.msg);
            assert_int_equal(skipped, 2);
        } else {
            assert_int_equal(st, HS_ERR_FORMAT);
            assert_non_null(strstr(err.msg, "blocks.0.attn.mask is not the local (window 3) mask: row 3, "
                                            "column 0 is nonzero where a local (window 3) mask has 0"));
        }
        hs_model_destroy(r);
    }
    hs_st_file_free(&f);
    remove(path);
    hs_model_destroy(m);
}

/* ------------------------------------------------------------------------ */
/* The dump for tests/py/attn_ref.py                                         */

typedef struct {
    hs_st_tensor t[512];
    char names[512][96];
    float *data[512];
    int n;
} dump_set;

static void dump_add(dump_set *d, const char *name, int ndim, const int64_t *shape,
                     const float *data)
{
    if (d->n >= 512) fail_msg("dump: too many tensors");
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    const int k = d->n++;
    snprintf(d->names[k], sizeof d->names[k], "%s", name);
    d->data[k] = malloc(n * sizeof(float));
    memcpy(d->data[k], data, n * sizeof(float));
    d->t[k].name = d->names[k];
    d->t[k].ndim = ndim;
    for (int i = 0; i < 4; i++) d->t[k].shape[i] = i < ndim ? shape[i] : 0;
    d->t[k].data = d->data[k];
}

static int wants_attn(const char *name, void *ctx)
{
    (void)ctx;
    return strstr(name, "attn.hook_") != NULL || strstr(name, "hook_pos_embed") != NULL ||
           strstr(name, "hook_resid_pre") != NULL || strcmp(name, "logits") == 0;
}

typedef struct {
    dump_set *d;
    const char *prefix;
} dump_obs;

static int dump_fn(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    dump_obs *o = ctx;
    char nm[128];
    snprintf(nm, sizeof nm, "%s%s", o->prefix, name);
    dump_add(o->d, nm, ndim, shape, data);
    /* safetensors holds finite values: a masked score (-inf) as -1e30 */
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    float *mine = o->d->data[o->d->n - 1];
    for (size_t i = 0; i < n; i++)
        if (mine[i] == -INFINITY) mine[i] = -1e30f;
    return 0;
}

static void dump_case(const attn_case *k, int idx, const char *dir, FILE *list)
{
    hs_error err;
    hs_model *m = model_of(k, 1000 + (uint64_t)idx);
    char path[600];
    snprintf(path, sizeof path, "%s/%s.safetensors", dir, k->label);
    if (hs_checkpoint_save(m, NULL, path, &err) != HS_OK) fail_msg("save: %s", err.msg);
    const int T = k->T;
    int tok[B * 2 * NCTX], tgt[B * 2 * NCTX];
    tokens_of(tok, tgt, B * T, 77 + (uint64_t)idx);
    dump_set *d = calloc(1, sizeof *d);
    float ft[B * 2 * NCTX];
    const int64_t bt[2] = {B, T};
    for (int i = 0; i < B * T; i++) ft[i] = (float)tok[i];
    dump_add(d, "tokens", 2, bt, ft);
    for (int i = 0; i < B * T; i++) ft[i] = (float)tgt[i];
    dump_add(d, "targets", 2, bt, ft);
    /* the observed forward: the attention points and the logits */
    hs_acts *a = NULL;
    if (hs_acts_create(&m->cfg, B, T, 1, &a, &err) != HS_OK) fail_msg("acts: %s", err.msg);
    dump_obs fo = {d, "act."};
    const hs_observer obs = {dump_fn, wants_attn, &fo};
    if (hs_forward(m, a, tok, B, T, &obs, &err) != HS_OK) fail_msg("forward: %s", err.msg);
    /* the training backward (an unobserved forward, as training runs it) */
    if (hs_model_alloc_train(m, &err) != HS_OK) fail_msg("train: %s", err.msg);
    if (hs_forward(m, a, tok, B, T, NULL, &err) != HS_OK) fail_msg("forward: %s", err.msg);
    int nv = 0;
    const float loss = hs_cross_entropy(m, a, tgt, &nv);
    const int64_t one = 1;
    dump_add(d, "loss", 1, &one, &loss);
    hs_zero_grad(m);
    hs_backward(m, a, tok, tgt, NULL);
    for (int i = 0; i < m->n_tensors; i++) {
        const hs_tensor_info *ti = &m->tensors[i];
        char nm[128];
        snprintf(nm, sizeof nm, "grad.%s", ti->name);
        dump_add(d, nm, ti->ndim, ti->shape, m->grad_mem + ti->offset);
    }
    /* the gradients at the points (hs_backward_acts) of the same loss */
    const size_t n = (size_t)B * T * V;
    float *dl = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) dl[i] = a->probs[i] / (float)nv;
    for (int i = 0; i < B * T; i++) dl[(size_t)i * V + tgt[i]] -= 1.0f / (float)nv;
    dump_obs go = {d, "dact."};
    const hs_observer gobs = {dump_fn, wants_attn, &go};
    if (hs_backward_acts(m, a, dl, &gobs, &err) != HS_OK) fail_msg("backward_acts: %s", err.msg);
    free(dl);
    snprintf(path, sizeof path, "%s/%s.dump.safetensors", dir, k->label);
    if (hs_safetensors_write(path, d->t, d->n, NULL, NULL, 0, &err) != HS_OK)
        fail_msg("dump: %s", err.msg);
    fprintf(list, "%s\n", k->label);
    for (int i = 0; i < d->n; i++) free(d->data[i]);
    free(d);
    hs_acts_destroy(a);
    hs_model_destroy(m);
}

static int dump(const char *dir)
{
    attn_case ks[MAX_CASES];
    const int n = cases_of(ks);
    char path[600];
    snprintf(path, sizeof path, "%s/cases.txt", dir);
    FILE *list = fopen(path, "w");
    if (list == NULL) {
        fprintf(stderr, "cannot write %s\n", path);
        return 1;
    }
    for (int i = 0; i < n; i++) dump_case(&ks[i], i, dir, list);
    fclose(list);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--dump") == 0) return dump(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(checkpoint_round_trip_keeps_config_and_bits),
        cmocka_unit_test(points_and_shapes),
        cmocka_unit_test(longer_context),
        cmocka_unit_test(capacity_does_not_matter),
        cmocka_unit_test(known_values),
        cmocka_unit_test(window_of_one_attends_to_itself),
        cmocka_unit_test(local_masks_in_a_checkpoint),
        cmocka_unit_test(two_threads_give_the_bits_of_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
