/*
 * tests/test_checkpoint_map.c -- a Hugging Face GPT-2 folder's F32 weights
 * used in place from the file's read-only mapping (DESIGN.md "Checkpoint"),
 * not copied.
 *
 * On tests/py/make_hf_gpt2.py's "base" folder (tied unembedding) and
 * folders made from it here: every F32 view lies inside the mapping, and
 * c_attn is the block's packed W_QKV (no per-head W_Q); the tied unembedding
 * is W_E itself read transposed, and gives the same logits bit for bit as
 * an explicit lm_head.weight copy of wte; a file whose data offsets are not
 * 4-byte aligned is copied (nothing mapped) and gives the same logits bit
 * for bit; hs_model_own splits W_QKV and transposes W_U_T into exactly the
 * copied table; hs_model_process_tl on the mapped model equals processing
 * the copied one, byte for byte.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "model/model.h"
#include "model/checkpoint.h"
#include "probe/probe.h"

static char g_dir[512];

static int make_fixtures(void **state)
{
    (void)state;
    const char *tmp = getenv("HS_TEST_TMP");
    snprintf(g_dir, sizeof g_dir, "%s/hf_gpt2_map", tmp ? tmp : "/tmp");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 py/make_hf_gpt2.py '%s' > /dev/null", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static hs_model *load(const char *name)
{
    char path[640];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    hs_model *m = NULL;
    hs_error err;
    if (hs_checkpoint_load(path, &m, NULL, NULL, &err) != HS_OK) fail_msg("%s: %s", name, err.msg);
    return m;
}

/* Whole-file copy src -> dst, with `pad` spaces added at the end of the
 * header (its length field grown to match): pad 1 moves every data offset
 * off 4-byte alignment. */
static void copy_file(const char *src, const char *dst, int pad)
{
    FILE *f = fopen(src, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    uint64_t hl = 0;
    for (int i = 0; i < 8; i++) hl |= (uint64_t)b[i] << (8 * i);
    const uint64_t nl = hl + (uint64_t)pad;
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)(nl >> (8 * i));
    FILE *g = fopen(dst, "wb");
    assert_non_null(g);
    fwrite(len8, 1, 8, g);
    fwrite(b + 8, 1, (size_t)hl, g);
    for (int i = 0; i < pad; i++) fputc(' ', g);
    fwrite(b + 8 + hl, 1, (size_t)n - 8 - (size_t)hl, g);
    fclose(g);
    free(b);
}

/* A new folder dst (under g_dir) with base's config.json. */
static void make_folder(const char *dst)
{
    char a[700], b[700];
    snprintf(b, sizeof b, "%s/%s", g_dir, dst);
    mkdir(b, 0755);
    snprintf(a, sizeof a, "%s/base/config.json", g_dir);
    snprintf(b, sizeof b, "%s/%s/config.json", g_dir, dst);
    FILE *f = fopen(a, "rb"), *g = fopen(b, "wb");
    assert_non_null(f);
    assert_non_null(g);
    int ch;
    while ((ch = fgetc(f)) != EOF) fputc(ch, g);
    fclose(f);
    fclose(g);
}

/* The logits (T, V) of m on tokens 0..T-1 (mod V), a new array. */
static float *logits(const hs_model *m, int T)
{
    hs_acts *a = NULL;
    hs_error err;
    int tok[16];
    for (int i = 0; i < T; i++) tok[i] = (i * 7 + 3) % m->cfg.d_vocab;
    assert_int_equal(hs_acts_create(&m->cfg, 1, T, 0, &a, &err), HS_OK);
    hs_cache c;
    hs_cache_init(&c);
    static const char *const filt[] = {"logits"};
    if (hs_run_with_cache(m, a, tok, 1, T, filt, 1, NULL, &c, &err) != HS_OK) fail_msg("%s", err.msg);
    const hs_cache_entry *e = hs_cache_get(&c, "logits");
    float *out = malloc(e->numel * sizeof(float));
    memcpy(out, e->data, e->numel * sizeof(float));
    hs_cache_free(&c);
    hs_acts_destroy(a);
    return out;
}

static int in_maps(const hs_model *m, const void *p)
{
    for (int k = 0; k < m->n_maps; k++)
        if ((const char *)p >= (const char *)m->maps[k] &&
            (const char *)p < (const char *)m->maps[k] + m->map_lens[k])
            return 1;
    return 0;
}

/* Every table entry of a and b holds the same bytes (hs_model_tensor_data). */
static void same_tables(const hs_model *a, const hs_model *b)
{
    assert_int_equal(a->n_tensors, b->n_tensors);
    for (int i = 0; i < a->n_tensors; i++) {
        const float *x = hs_model_tensor_data(a, i), *y = hs_model_tensor_data(b, i);
        assert_non_null(x);
        assert_non_null(y);
        assert_string_equal(a->tensors[i].name, b->tensors[i].name);
        if (memcmp(x, y, a->tensors[i].numel * sizeof(float)) != 0)
            fail_msg("%s differs", a->tensors[i].name);
    }
}

static void f32_weights_are_views_into_the_file(void **state)
{
    (void)state;
    hs_model *m = load("base");
    const hs_config *c = &m->cfg;
    assert_true(m->n_maps == 1);
    assert_true(in_maps(m, m->params.W_E) && in_maps(m, m->params.W_pos));
    assert_true(in_maps(m, m->params.ln_final_w) && in_maps(m, m->params.ln_final_b));
    for (int l = 0; l < c->n_layers; l++) {
        const hs_block_params *bp = &m->params.blocks[l];
        assert_true(in_maps(m, bp->W_QKV) && in_maps(m, bp->W_O) && in_maps(m, bp->W_in) &&
                    in_maps(m, bp->W_out) && in_maps(m, bp->b_Q) && in_maps(m, bp->b_V) &&
                    in_maps(m, bp->ln1_w) && in_maps(m, bp->ln2_b));
        assert_null(bp->W_Q);
        assert_null(bp->W_K);
        assert_null(bp->W_V);
        assert_true(bp->b_K == bp->b_Q + c->n_heads * c->d_head); /* c_attn.bias as it lies */
        /* head 1's W_K: c_attn columns H dh + dh .., rows 3 H dh apart */
        int ld;
        const float *wk = hs_head_qkv(m, l, 1, 1, &ld);
        assert_int_equal(ld, 3 * c->n_heads * c->d_head);
        assert_ptr_equal(wk, bp->W_QKV + c->n_heads * c->d_head + c->d_head);
    }
    /* tied: W_U is W_E read transposed, no second copy */
    assert_null(m->params.W_U);
    assert_ptr_equal(m->params.W_U_T, m->params.W_E);
    assert_true(hs_unembed_at(m, 2, 5) == m->params.W_E[5 * c->d_model + 2]);
    /* the untied "prefix" folder's lm_head.weight is read in place too */
    hs_model *p = load("prefix");
    assert_true(in_maps(p, p->params.W_U_T) && p->params.W_U_T != p->params.W_E);
    hs_model_destroy(p);
    hs_model_destroy(m);
}

static void tied_unembedding_equals_an_explicit_lm_head(void **state)
{
    (void)state;
    /* "explicit": base's tensors plus lm_head.weight = a copy of wte */
    char path[700];
    snprintf(path, sizeof path, "%s/base/model.safetensors", g_dir);
    hs_st_file f;
    hs_error err;
    if (hs_safetensors_read(path, &f, &err) != HS_OK) fail_msg("%s", err.msg);
    hs_st_tensor *ts = calloc((size_t)f.n + 1, sizeof *ts);
    int n = 0, wte = -1;
    for (int i = 0; i < f.n; i++) {
        ts[n].name = f.names[i];
        ts[n].ndim = f.ndim[i];
        for (int d = 0; d < f.ndim[i]; d++) ts[n].shape[d] = f.shape[i][d];
        ts[n++].data = f.data[i];
        if (strcmp(f.names[i], "wte.weight") == 0) wte = i;
    }
    assert_true(wte >= 0);
    ts[n] = ts[wte];
    ts[n++].name = "lm_head.weight";
    make_folder("explicit");
    snprintf(path, sizeof path, "%s/explicit/model.safetensors", g_dir);
    if (hs_safetensors_write(path, ts, n, NULL, NULL, 0, &err) != HS_OK) fail_msg("%s", err.msg);
    free(ts);
    hs_st_file_free(&f);

    hs_model *tied = load("base"), *ex = load("explicit");
    assert_true(ex->params.W_U_T != NULL && ex->params.W_U_T != ex->params.W_E);
    const int T = 9;
    float *a = logits(tied, T), *b = logits(ex, T);
    assert_memory_equal(a, b, (size_t)T * tied->cfg.d_vocab * sizeof(float));
    free(a);
    free(b);
    hs_model_destroy(tied);
    hs_model_destroy(ex);
}

static void misaligned_offsets_are_copied_and_agree(void **state)
{
    (void)state;
    char a[700], b[700];
    make_folder("misaligned");
    snprintf(a, sizeof a, "%s/base/model.safetensors", g_dir);
    snprintf(b, sizeof b, "%s/misaligned/model.safetensors", g_dir);
    copy_file(a, b, 1);
    hs_model *m = load("base"), *c = load("misaligned");
    assert_int_equal(c->n_maps, 0); /* every offset is 1 mod 4: nothing used in place */
    assert_non_null(c->params.blocks[0].W_Q);
    assert_null(c->params.blocks[0].W_QKV);
    const int T = 11;
    float *x = logits(m, T), *y = logits(c, T);
    assert_memory_equal(x, y, (size_t)T * m->cfg.d_vocab * sizeof(float));
    free(x);
    free(y);

    /* processing the mapped model = processing the copied one */
    hs_error err;
    assert_int_equal(hs_model_process_tl(m, &err), HS_OK);
    assert_int_equal(hs_model_process_tl(c, &err), HS_OK);
    assert_int_equal(m->n_maps, 0);
    same_tables(m, c);
    hs_model_destroy(m);
    hs_model_destroy(c);

    /* hs_model_own: W_QKV split per head, W_U_T transposed = the copied table */
    m = load("base");
    c = load("misaligned");
    assert_int_equal(hs_model_own(m, &err), HS_OK);
    assert_int_equal(m->n_maps, 0);
    assert_null(m->params.W_U_T);
    assert_null(m->params.blocks[1].W_QKV);
    assert_int_equal(hs_model_own(c, &err), HS_OK); /* its W_U: W_E transposed */
    same_tables(m, c);
    for (int i = 0; i < m->n_tensors; i++) /* every view in param_mem again */
        assert_ptr_equal(hs_model_tensor_data(m, i), m->param_mem + m->tensors[i].offset);
    hs_model_destroy(m);
    hs_model_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(f32_weights_are_views_into_the_file),
        cmocka_unit_test(tied_unembedding_equals_an_explicit_lm_head),
        cmocka_unit_test(misaligned_offsets_are_copied_and_agree),
    };
    return cmocka_run_group_tests(tests, make_fixtures, NULL);
}
