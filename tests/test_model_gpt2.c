/*
 * tests/test_model_gpt2.c -- the model switches GPT-2 needs: gelu_new
 * (values and derivative against double tanh, the same bits at every vector
 * width), norm_pre (TransformerLens' LNPre: a LayerNorm with weight 1 and
 * bias 0, bit for bit), attn_scale_by_layer (layer l's scores / (l + 1): W_Q
 * and b_Q scaled by 1 / (l + 1) give the same patterns), and
 * hs_model_process_tl's refusals. (Its values: tests/test_checkpoint_hf.c;
 * the gradients: tests/test_model_grad.c.)
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
#include "model/model_internal.h" /* the gelu_new kernels */
#include "fixture.h"

static double gelu_new_d(double x) /* 0.5 x (1 + tanh(u)), HF NewGELUActivation */
{
    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); /* sqrt(2/pi) */
}

/* gelu_new and its derivative on 200,001 points of [-10, 10] and at the far
 * ends: the value to 2e-7 max(1, |x|), the derivative to 5e-7 of the double
 * central difference of the double formula; the inference kernel and the
 * backward kernel agree with the training forward bit for bit. */
static void gelu_new_matches_double_tanh(void **state)
{
    (void)state;
    const size_t n = 200001 + 4;
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float)), *d = malloc(n * sizeof(float));
    float *y2 = malloc(n * sizeof(float)), *g = malloc(n * sizeof(float)), *one = malloc(n * sizeof(float));
    assert_true(x && y && d && y2 && g && one);
    for (size_t i = 0; i + 4 < n; i++) x[i] = (float)(-10.0 + 1e-4 * (double)i);
    x[n - 4] = -40.0f;
    x[n - 3] = 40.0f;
    x[n - 2] = -1e30f;
    x[n - 1] = 1e30f;
    for (size_t i = 0; i < n; i++) one[i] = 1.0f;
    hs_gelu_new_forward(y, d, x, n);
    hs_gelu_new_forward(y2, NULL, x, n);
    hs_gelu_new_backward(g, one, x, n);
    assert_memory_equal(y, y2, n * sizeof(float));
    assert_memory_equal(d, g, n * sizeof(float));
    double worst_y = 0.0, worst_d = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double xv = x[i], h = 1e-5 * fmax(1.0, fabs(xv));
        const double want = fabs(xv) > 1e20 ? (xv > 0 ? xv : 0.0) : gelu_new_d(xv);
        const double dwant = fabs(xv) > 1e20 ? (xv > 0 ? 1.0 : 0.0)
                                             : (gelu_new_d(xv + h) - gelu_new_d(xv - h)) / (2 * h);
        const double ey = fabs(y[i] - want) / fmax(1.0, fabs(xv)), ed = fabs(d[i] - dwant);
        worst_y = fmax(worst_y, ey);
        worst_d = fmax(worst_d, ed);
        if (!(ey < 2e-7) || !(ed < 5e-7))
            fail_msg("x = %.9g: gelu_new %.9g (double %.9g), derivative %.9g (double %.9g)", xv, y[i],
                     want, d[i], dwant);
    }
    printf("  gelu_new: worst value error %.2e (relative to max(1,|x|)), derivative %.2e\n", worst_y, worst_d);
    /* every vector width gives the same bits */
    enum { N = 1001 };
    static float xs[N], yw[3][N], dw[3][N];
    for (int i = 0; i < N; i++) xs[i] = (float)((i * 37 % 1001) - 500) / 50.0f;
    int widths = 1;
    hs_gelu_new_forward_4(yw[0], dw[0], xs, N);
#ifdef HS_SIMD_X86
    if (__builtin_cpu_supports("avx2")) hs_gelu_new_forward_8(yw[widths], dw[widths], xs, N), widths++;
    if (__builtin_cpu_supports("avx512f")) hs_gelu_new_forward_16(yw[widths], dw[widths], xs, N), widths++;
#endif
    for (int w = 1; w < widths; w++) {
        assert_memory_equal(yw[0], yw[w], sizeof yw[0]);
        assert_memory_equal(dw[0], dw[w], sizeof dw[0]);
    }
    free(x);
    free(y);
    free(d);
    free(y2);
    free(g);
    free(one);
}

/* The logits of m on tokens (b = 2, t = 6), malloc'd. */
static float *logits_of(const hs_model *m, const int *tok, float **pat0)
{
    hs_acts *a = NULL;
    hs_error err;
    assert_int_equal(hs_acts_create(&m->cfg, 2, 6, 0, &a, &err), HS_OK);
    assert_int_equal(hs_forward(m, a, tok, 2, 6, NULL, &err), HS_OK);
    const size_t nl = (size_t)12 * m->cfg.d_vocab, np = (size_t)2 * m->cfg.n_heads * 36;
    float *out = malloc(nl * sizeof(float));
    memcpy(out, a->logits, nl * sizeof(float));
    if (pat0) { /* the last layer's pattern */
        *pat0 = malloc(np * sizeof(float));
        memcpy(*pat0, a->blocks[m->cfg.n_layers - 1].att, np * sizeof(float));
    }
    hs_acts_destroy(a);
    return out;
}

/* Copies every tensor of src that dst has (by name) into dst. */
static void copy_shared(hs_model *dst, const hs_model *src)
{
    for (int i = 0; i < dst->n_tensors; i++) {
        const hs_tensor_info *s = hs_model_find_tensor(src, dst->tensors[i].name);
        assert_non_null(s);
        memcpy(dst->param_mem + dst->tensors[i].offset, src->param_mem + s->offset, s->numel * sizeof(float));
    }
}

static hs_config small(void)
{
    hs_config c = hs_config_default();
    c.n_layers = 3;
    c.d_model = 16;
    c.n_heads = 2;
    c.d_head = 8;
    c.d_mlp = 32;
    c.n_ctx = 8;
    c.d_vocab = 11;
    c.act = HS_ACT_GELU_NEW;
    return c;
}

static const int TOK[12] = {1, 4, 9, 2, 2, 7, 10, 0, 3, 3, 5, 8};

/* LNPre is LayerNorm with w = 1 and b = 0, bit for bit (x * 1 + 0 = x). */
static void norm_pre_is_layernorm_with_unit_weights(void **state)
{
    (void)state;
    hs_config c = small(), cp = small();
    cp.norm_pre = 1;
    hs_model *ln = random_model_of(&c, 5), *pre = random_model_of(&cp, 0);
    assert_true(pre->n_tensors == ln->n_tensors - 3 * 2 * 2 - 2);
    assert_null(pre->params.blocks[0].ln1_w);
    for (int i = 0; i < ln->n_tensors; i++) { /* the norms of ln: w 1, b 0 */
        const hs_tensor_info *t = &ln->tensors[i];
        const size_t k = strlen(t->name);
        if (strcmp(t->name + k - 2, ".w") == 0 || (strcmp(t->name + k - 2, ".b") == 0 && strstr(t->name, "ln")))
            for (size_t j = 0; j < t->numel; j++) ln->param_mem[t->offset + j] = t->name[k - 1] == 'w';
    }
    copy_shared(pre, ln);
    float *a = logits_of(ln, TOK, NULL), *b = logits_of(pre, TOK, NULL);
    assert_memory_equal(a, b, (size_t)12 * c.d_vocab * sizeof(float));
    cJSON *j = hs_config_to_json(&cp, HS_CONFIG_JSON_TL);
    assert_string_equal(cJSON_GetObjectItem(j, "normalization_type")->valuestring, "LNPre");
    assert_string_equal(cJSON_GetObjectItem(j, "act_fn")->valuestring, "gelu_new");
    cJSON_Delete(j);
    free(a);
    free(b);
    hs_model_destroy(ln);
    hs_model_destroy(pre);
}

/* Scores / (l + 1) equal the scores of W_Q, b_Q scaled by 1 / (l + 1). */
static void scores_divided_by_layer_plus_one(void **state)
{
    (void)state;
    hs_config c = small(), cs = small();
    cs.attn_scale_by_layer = 1;
    hs_model *m = random_model_of(&cs, 9), *ref = random_model_of(&c, 9);
    for (int l = 0; l < c.n_layers; l++) {
        hs_block_params *bp = &ref->params.blocks[l];
        for (size_t i = 0; i < (size_t)c.n_heads * c.d_model * c.d_head; i++) bp->W_Q[i] /= (float)(l + 1);
        for (size_t i = 0; i < (size_t)c.n_heads * c.d_head; i++) bp->b_Q[i] /= (float)(l + 1);
    }
    float *pa, *pb;
    float *a = logits_of(m, TOK, &pa), *b = logits_of(ref, TOK, &pb);
    double worst = 0.0;
    for (size_t i = 0; i < (size_t)2 * c.n_heads * 36; i++) worst = fmax(worst, fabs(pa[i] - pb[i]));
    assert_true(worst < 1e-6);
    /* and it changes them: without the switch the patterns differ */
    cs.attn_scale_by_layer = 0;
    m->cfg = cs;
    float *pc, *c2 = logits_of(m, TOK, &pc);
    worst = 0.0;
    for (size_t i = 0; i < (size_t)2 * c.n_heads * 36; i++) worst = fmax(worst, fabs(pa[i] - pc[i]));
    assert_true(worst > 1e-3);
    free(a);
    free(b);
    free(c2);
    free(pa);
    free(pb);
    free(pc);
    hs_model_destroy(m);
    hs_model_destroy(ref);
}

/* hs_model_process_tl refuses, in one line, what it does not apply to. */
static void processing_refuses_what_it_does_not_apply_to(void **state)
{
    (void)state;
    static const struct {
        int what;
        const char *named;
    } cases[] = {{0, "not LayerNorm"}, {1, "uniform"}, {2, "no biases"}, {3, "embedding norm"},
                 {4, "processed already"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hs_config c = small();
        if (cases[i].what == 0) c.norm = HS_NORM_RMSNORM;
        if (cases[i].what == 1) c.attn = HS_ATTN_UNIFORM;
        if (cases[i].what == 2) c.bias = 0;
        if (cases[i].what == 3) c.embed_norm = 1;
        hs_model *m = random_model_of(&c, 3);
        hs_error err;
        if (cases[i].what == 4) assert_int_equal(hs_model_process_tl(m, &err), HS_OK);
        float *before = malloc(m->n_params * sizeof(float));
        memcpy(before, m->param_mem, m->n_params * sizeof(float));
        assert_int_equal(hs_model_process_tl(m, &err), HS_ERR_INPUT);
        if (!strstr(err.msg, cases[i].named) || strchr(err.msg, '\n')) fail_msg("'%s'", err.msg);
        assert_memory_equal(before, m->param_mem, m->n_params * sizeof(float));
        free(before);
        hs_model_destroy(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gelu_new_matches_double_tanh),
        cmocka_unit_test(norm_pre_is_layernorm_with_unit_weights),
        cmocka_unit_test(scores_divided_by_layer_plus_one),
        cmocka_unit_test(processing_refuses_what_it_does_not_apply_to),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
