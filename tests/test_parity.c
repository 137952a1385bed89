/*
 * tests/test_parity.c -- headscope's model against an independent PyTorch
 * implementation (STYLE.md 12).
 *
 * tests/py/make_parity_dump.py (run with /usr/bin/python3 and Debian's
 * python3-torch) builds the same architecture in PyTorch, computes it in
 * float64 and writes data/parity_gpt2.bin (LayerNorm, GELU, biases, final LN)
 * and data/parity_microgpt.bin (RMSNorm with weight only, ReLU, no biases,
 * embed norm, no final norm). The dumps are committed, so this test needs no
 * Python. For each dump it fills the model's parameters by name from the
 * tensor table, then checks:
 *   - logits and the mean cross-entropy (one target ignored);
 *   - every parameter gradient;
 *   - the losses and pre-clip gradient norms of 5 AdamW steps
 *     (torch.optim.AdamW, weight decay on matrices only, clip_grad_norm_ 1.0);
 *   - every parameter after those 5 steps.
 * check_close() prints the worst index with both values and the max
 * difference, and fails on any element beyond atol + rtol * |ref|.
 * Dump format: see the script's docstring.
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

/* ------------------------------------------------------------------------ */
/* The dump                                                                  */

typedef struct {
    char name[96];
    int ndim;
    uint32_t shape[4];
    size_t n;
    float *data;
} record;

typedef struct {
    int n;
    record *r;
} dump;

static uint32_t rd_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static float rd_f32(const unsigned char *p)
{
    uint32_t u = rd_u32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void dump_load(const char *path, dump *d)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) fail_msg("cannot open %s (run from tests/; regenerate with tests/py/make_parity_dump.py)", path);
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    assert_true(len > 16);
    unsigned char *buf = malloc((size_t)len);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)len, fp), (size_t)len);
    fclose(fp);
    assert_memory_equal(buf, "HSPARITY", 8);
    assert_int_equal(rd_u32(buf + 8), 1);
    d->n = (int)rd_u32(buf + 12);
    d->r = calloc((size_t)d->n, sizeof(record));
    assert_non_null(d->r);
    size_t off = 16;
    for (int i = 0; i < d->n; i++) {
        record *r = &d->r[i];
        assert_true(off + 3 <= (size_t)len);
        size_t nl = (size_t)buf[off] | (size_t)buf[off + 1] << 8;
        off += 2;
        assert_true(nl < sizeof r->name && off + nl + 1 <= (size_t)len);
        memcpy(r->name, buf + off, nl);
        off += nl;
        r->ndim = buf[off++];
        assert_true(r->ndim >= 1 && r->ndim <= 4 && off + 4 * (size_t)r->ndim <= (size_t)len);
        r->n = 1;
        for (int k = 0; k < r->ndim; k++) {
            r->shape[k] = rd_u32(buf + off);
            off += 4;
            r->n *= r->shape[k];
        }
        assert_true(off + 4 * r->n <= (size_t)len);
        r->data = malloc(r->n * sizeof(float));
        assert_non_null(r->data);
        for (size_t k = 0; k < r->n; k++) r->data[k] = rd_f32(buf + off + 4 * k);
        off += 4 * r->n;
    }
    assert_int_equal(off, (size_t)len); /* nothing left over */
    free(buf);
}

static void dump_free(dump *d)
{
    for (int i = 0; i < d->n; i++) free(d->r[i].data);
    free(d->r);
}

static const record *dump_get(const dump *d, const char *name)
{
    for (int i = 0; i < d->n; i++)
        if (strcmp(d->r[i].name, name) == 0) return &d->r[i];
    fail_msg("dump has no record '%s'", name);
    return NULL;
}

static int dump_count_prefix(const dump *d, const char *prefix)
{
    int n = 0;
    for (int i = 0; i < d->n; i++) n += strncmp(d->r[i].name, prefix, strlen(prefix)) == 0;
    return n;
}

/* ------------------------------------------------------------------------ */
/* Comparison                                                                */

/* Counts the elements with |a - b| > atol + rtol * |b| (b = reference; NaN
 * counts as a miss); *worst gets the index furthest beyond its bound, *maxdiff
 * the max abs difference. */
static size_t close_misses(const float *a, const float *b, size_t n, double atol, double rtol,
                           size_t *worst, double *maxdiff)
{
    double worst_excess = -INFINITY;
    size_t n_bad = 0;
    *worst = 0;
    *maxdiff = 0.0;
    for (size_t i = 0; i < n; i++) {
        double diff = fabs((double)a[i] - (double)b[i]);
        double bound = atol + rtol * fabs((double)b[i]);
        if (isnan(diff)) diff = INFINITY;
        if (!(diff <= bound)) n_bad++;
        if (diff > *maxdiff) *maxdiff = diff;
        if (diff - bound > worst_excess) {
            worst_excess = diff - bound;
            *worst = i;
        }
    }
    return n_bad;
}

/* Prints the worst element (index, both values) and the max abs difference;
 * fails the test if any element misses (close_misses). Returns maxdiff. */
static double check_close(const float *a, const float *b, size_t n, double atol, double rtol,
                          const char *label)
{
    size_t worst;
    double maxdiff;
    size_t n_bad = close_misses(a, b, n, atol, rtol, &worst, &maxdiff);
    printf("  %-34s n=%-5zu maxdiff %.3e  worst [%zu] c %.9g ref %.9g%s\n", label, n, maxdiff,
           worst, n ? (double)a[worst] : 0.0, n ? (double)b[worst] : 0.0, n_bad ? "  MISMATCH" : "");
    if (n_bad)
        fail_msg("%s: %zu of %zu values beyond atol %.1e rtol %.1e (index %zu: %.9g vs %.9g, maxdiff %.3e)",
                 label, n_bad, n, atol, rtol, worst, (double)a[worst], (double)b[worst], maxdiff);
    return maxdiff;
}

/* ------------------------------------------------------------------------ */
/* The test                                                                  */

static void run_parity(const char *path)
{
    printf("%s\n", path);
    dump d;
    dump_load(path, &d);
    const record *cr = dump_get(&d, "config");
    assert_int_equal(cr->n, 18);
    const float *cv = cr->data;
    hs_config cfg = hs_config_default();
    cfg.n_layers = (int)cv[0];
    cfg.d_model = (int)cv[1];
    cfg.n_heads = (int)cv[2];
    cfg.d_head = (int)cv[3];
    cfg.d_mlp = (int)cv[4];
    cfg.n_ctx = (int)cv[5];
    cfg.d_vocab = (int)cv[6];
    cfg.norm = (hs_norm)(int)cv[7];
    cfg.eps = cv[8];
    cfg.act = (hs_act)(int)cv[9];
    cfg.pos = (hs_pos)(int)cv[10];
    cfg.attn = (hs_attn)(int)cv[11];
    cfg.ln1 = (int)cv[12];
    cfg.ln_final = (int)cv[13];
    cfg.embed_norm = (int)cv[14];
    cfg.bias = (int)cv[15];
    const int B = (int)cv[16], T = (int)cv[17], V = cfg.d_vocab;

    hs_error err;
    hs_model *m = NULL;
    if (hs_model_create(&cfg, &m, &err) != HS_OK) fail_msg("model_create: %s", err.msg);
    assert_int_equal(hs_model_alloc_train(m, &err), HS_OK);

    /* every dumped parameter is a tensor of the model and vice versa */
    assert_int_equal(dump_count_prefix(&d, "param."), m->n_tensors);
    for (int i = 0; i < m->n_tensors; i++) {
        const hs_tensor_info *t = &m->tensors[i];
        char nm[128];
        snprintf(nm, sizeof nm, "param.%s", t->name);
        const record *r = dump_get(&d, nm);
        if (r->ndim != t->ndim) fail_msg("%s: ndim %d in dump, %d in model", t->name, r->ndim, t->ndim);
        for (int k = 0; k < t->ndim; k++)
            if ((int64_t)r->shape[k] != t->shape[k])
                fail_msg("%s: dim %d is %u in dump, %lld in model", t->name, k, r->shape[k],
                         (long long)t->shape[k]);
        assert_int_equal(r->n, t->numel);
        memcpy(m->param_mem + t->offset, r->data, t->numel * sizeof(float));
    }

    const record *tr = dump_get(&d, "tokens"), *gr = dump_get(&d, "targets");
    assert_int_equal(tr->n, (size_t)B * T);
    int *tok = malloc((size_t)B * T * sizeof(int)), *tgt = malloc((size_t)B * T * sizeof(int));
    assert_non_null(tok);
    assert_non_null(tgt);
    int n_ignored = 0;
    for (int i = 0; i < B * T; i++) {
        tok[i] = (int)tr->data[i];
        tgt[i] = (int)gr->data[i];
        n_ignored += tgt[i] < 0;
    }
    assert_int_equal(n_ignored, 1);

    hs_acts *a = NULL;
    assert_int_equal(hs_acts_create(&m->cfg, B, T, 1, &a, &err), HS_OK);
    assert_int_equal(hs_forward(m, a, tok, B, T, NULL, &err), HS_OK);
    const record *lr = dump_get(&d, "logits");
    assert_int_equal(lr->n, (size_t)B * T * V);
    check_close(a->logits, lr->data, lr->n, 1e-5, 1e-4, "logits");
    int n_valid = 0;
    float loss = hs_cross_entropy(m, a, tgt, &n_valid);
    assert_int_equal(n_valid, B * T - 1);
    check_close(&loss, dump_get(&d, "loss")->data, 1, 1e-5, 1e-5, "loss");

    hs_zero_grad(m);
    hs_backward(m, a, tok, tgt, NULL);
    assert_int_equal(dump_count_prefix(&d, "grad."), m->n_tensors);
    double *grad_noise = calloc((size_t)m->n_tensors, sizeof(double));
    float *init = malloc(m->n_params * sizeof(float));
    assert_non_null(grad_noise);
    assert_non_null(init);
    memcpy(init, m->param_mem, m->n_params * sizeof(float));
    for (int i = 0; i < m->n_tensors; i++) {
        const hs_tensor_info *t = &m->tensors[i];
        char nm[128];
        snprintf(nm, sizeof nm, "grad.%s", t->name);
        const record *r = dump_get(&d, nm);
        assert_int_equal(r->n, t->numel);
        grad_noise[i] = check_close(m->grad_mem + t->offset, r->data, t->numel, 1e-5, 1e-3, nm);
    }

    /* 5 AdamW steps on the same batch */
    const record *sl = dump_get(&d, "step_losses"), *sn = dump_get(&d, "step_grad_norms");
    assert_int_equal(sl->n, 5);
    hs_adamw opt = hs_adamw_default();
    float losses[5], norms[5];
    for (int s = 0; s < 5; s++) {
        assert_int_equal(hs_forward(m, a, tok, B, T, NULL, &err), HS_OK);
        losses[s] = hs_cross_entropy(m, a, tgt, NULL);
        hs_zero_grad(m);
        hs_backward(m, a, tok, tgt, NULL);
        double gn = 0.0;
        assert_int_equal(hs_adamw_step(m, &opt, &gn, &err), HS_OK);
        norms[s] = (float)gn;
    }
    assert_true(sn->data[0] > opt.clip); /* the reference run exercises clipping */
    check_close(losses, sl->data, 5, 1e-5, 1e-5, "step losses");
    check_close(norms, sn->data, 5, 1e-5, 1e-4, "step grad norms (pre-clip)");
    assert_true(losses[4] < losses[0]);
    /* Parameters after 5 steps. Adam divides by sqrt(v): an element whose
     * gradient is at the float32 noise floor (|g| < 10 x its tensor's measured
     * gradient difference; e.g. b_K, whose true gradient is 0) moves by a
     * noise-driven O(lr) amount in both implementations. Those are only held
     * to Adam's step bound; every other element to 2e-6 + 1e-5 |ref|. */
    int n_noisy = 0;
    size_t n_checked = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        const hs_tensor_info *t = &m->tensors[i];
        char nm[128];
        snprintf(nm, sizeof nm, "final.%s", t->name);
        const record *r = dump_get(&d, nm);
        snprintf(nm, sizeof nm, "grad.%s", t->name);
        const record *g = dump_get(&d, nm);
        assert_int_equal(r->n, t->numel);
        float *got = malloc(t->numel * sizeof(float)), *ref = malloc(t->numel * sizeof(float));
        assert_non_null(got);
        assert_non_null(ref);
        size_t k = 0;
        for (size_t j = 0; j < t->numel; j++) {
            const float p = m->param_mem[t->offset + j];
            if (fabs((double)g->data[j]) < 10.0 * grad_noise[i]) {
                n_noisy++;
                if (fabs((double)p - init[t->offset + j]) > 5 * 3 * opt.lr)
                    fail_msg("%s[%zu] moved %.3e in 5 steps", t->name, j, (double)p - init[t->offset + j]);
                continue;
            }
            got[k] = p;
            ref[k++] = r->data[j];
        }
        n_checked += k;
        snprintf(nm, sizeof nm, "final.%s", t->name);
        check_close(got, ref, k, 2e-6, 1e-5, nm);
        free(got);
        free(ref);
    }
    printf("  final parameters: %zu checked to 2e-6, %d at the gradient noise floor\n", n_checked,
           n_noisy);
    assert_true(n_checked > m->n_params * 9 / 10);

    free(grad_noise);
    free(init);
    free(tok);
    free(tgt);
    hs_acts_destroy(a);
    hs_model_destroy(m);
    dump_free(&d);
}

static void gpt2_config_matches_pytorch(void **state)
{
    (void)state;
    run_parity("data/parity_gpt2.bin");
}

static void microgpt_config_matches_pytorch(void **state)
{
    (void)state;
    run_parity("data/parity_microgpt.bin");
}

/* The comparison itself must be able to fail: a perturbed copy is caught. */
static void tolerance_catches_a_small_error(void **state)
{
    (void)state;
    float ref[4] = {1.0f, -2.0f, 30.0f, 0.0f}, got[4];
    size_t worst;
    double maxdiff;
    memcpy(got, ref, sizeof got);
    assert_int_equal(close_misses(got, ref, 4, 1e-5, 1e-4, &worst, &maxdiff), 0);
    assert_true(maxdiff == 0.0);
    got[2] = 30.0f * (1.0f + 3e-4f); /* beyond rtol 1e-4 */
    assert_int_equal(close_misses(got, ref, 4, 1e-5, 1e-4, &worst, &maxdiff), 1);
    assert_int_equal(worst, 2);
    assert_true(maxdiff > 8e-3 && maxdiff < 1e-2);
    got[2] = 30.0f;
    got[3] = NAN;
    assert_int_equal(close_misses(got, ref, 4, 1e-5, 1e-4, &worst, &maxdiff), 1);
    assert_int_equal(worst, 3);
    got[3] = 2e-5f; /* beyond atol at a zero reference */
    assert_int_equal(close_misses(got, ref, 4, 1e-5, 1e-4, &worst, &maxdiff), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpt2_config_matches_pytorch),
        cmocka_unit_test(microgpt_config_matches_pytorch),
        cmocka_unit_test(tolerance_catches_a_small_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
