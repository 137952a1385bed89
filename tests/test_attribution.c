/*
 * tests/test_attribution.c -- the backward to the activations
 * (hs_backward_acts) and the attributions built on it (AtP, EAP, EAP-IG):
 *   - every gradient point of four random models (LayerNorm + GELU with
 *     biases; RMSNorm + ReLU, no biases, no final norm, an embedding norm;
 *     uniform attention without norms or positions, attention-only;
 *     LayerNorm without ln1, 4 heads of 2, scores divided by 1) against
 *     central differences of the metric along a random direction (the
 *     point's tensor edited by a forward observer; differences in double
 *     from float forwards, e 1e-3, or 2e-4 where every direction tried
 *     moves a ReLU across its kink);
 *   - the backward refuses activations it cannot use (an edited forward, no
 *     gradient scratch, logits at one position) and stops where asked;
 *   - AtP is exact where the metric is linear in the patched point (the last
 *     layer's resid_post and mlp_out without a final norm);
 *   - EAP-IG with one step is minus EAP with the clean and corrupted prompts
 *     swapped, bit for bit (k = 0 is the corrupted run: hannamw/EAP-IG's
 *     range(0, steps)); KL's EAP at the clean run is exactly 0;
 *   - EAP-IG with two steps is the mean of alpha 0's and alpha 1/2's
 *     attributions, both from plain EAP runs (a token embedded at the
 *     midpoint of the clean and corrupted tokens' embeddings);
 *   - 1 and 2 threads give identical bits (EAP, EAP-IG, AtP);
 *   - bad input: a graph of another shape, no corrupted prompts, steps out
 *     of range;
 *   - hs_model_ungrouped (grouped-query attention, 4 query heads on 2): the
 *     grouped model's logits, and an edit of one query head's key input
 *     moves that head's pattern alone (its group partner's stays bit for bit).
 * The comparison with an independent float64 torch autograd computation is
 * tests/test_attribution_torch.sh: run as `test_attribution --dump DIR` this
 * program writes DIR/attr_dump.json (and the random models' checkpoints)
 * with every gradient, AtP and EAP number it checks there
 * (tests/py/attribution_ref.py).
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
#include "tasks/tasks.h"
#include "fixture.h"
#include "model/checkpoint.h"

enum { N_PROMPTS = 40, T = 6, V = 11, N_CFG = 4 };

/* The four random models' configs, and the dump's grouped-query one (k = 4,
 * N_CFG: EAP, EAP-IG and exact edge patching only). */
static hs_config cfg_of(int k)
{
    hs_config c = hs_config_default();
    c.n_ctx = 8;
    c.d_vocab = V;
    c.d_model = 16;
    c.n_heads = 3;
    c.d_head = 4;
    c.d_mlp = 24;
    if (k == 1) { /* microGPT */
        c.norm = HS_NORM_RMSNORM;
        c.act = HS_ACT_RELU;
        c.bias = 0;
        c.ln_final = 0;
        c.embed_norm = 1;
        c.n_heads = 2;
    } else if (k == 2) { /* the uniform average, attention-only, no norm */
        c.attn = HS_ATTN_UNIFORM;
        c.norm = HS_NORM_NONE;
        c.pos = HS_POS_NONE;
        c.d_mlp = 0;
        c.n_layers = 3;
        c.n_heads = 2;
    } else if (k == 3) { /* no norm in front of attention, scores / 1 */
        c.ln1 = 0;
        c.attn_scale = 1.0f;
        c.n_heads = 4;
        c.d_head = 2;
    } else if (k == 4) { /* Llama-shaped: RMSNorm, rotary, SwiGLU, no biases, 4 query heads on 2 key/value heads */
        c.norm = HS_NORM_RMSNORM;
        c.pos = HS_POS_ROTARY;
        c.gated_mlp = 1;
        c.act = HS_ACT_SILU;
        c.bias = 0;
        c.n_heads = 4;
        c.n_key_value_heads = 2;
    }
    return c;
}

/* A random model of config k: the fixture's weights at 0.6 of their spread
 * (norm weights 1 + that), so its softmaxes are not all saturated. */
static hs_model *model_of(int k)
{
    hs_config c = cfg_of(k);
    hs_model *m = random_model_of(&c, 1000 + (uint64_t)k);
    for (int i = 0; i < m->n_tensors; i++) {
        const hs_tensor_info *ti = &m->tensors[i];
        const size_t n = strlen(ti->name);
        const int norm_w = n > 2 && strcmp(ti->name + n - 2, ".w") == 0;
        for (size_t j = 0; j < ti->numel; j++) {
            float *p = &m->param_mem[ti->offset + j];
            *p = norm_w ? 1.0f + 0.6f * (*p - 1.0f) : 0.6f * *p;
        }
    }
    return m;
}

/* A prompt set of N_PROMPTS random prompts of T tokens, each corrupted from
 * a random position on; answers, wrong answers and positions random. */
static void random_prompts(hs_prompts *p, uint64_t seed)
{
    memset(p, 0, sizeof *p);
    p->n = N_PROMPTS;
    p->t = T;
    p->clean = malloc(N_PROMPTS * T * sizeof(int));
    p->corr = malloc(N_PROMPTS * T * sizeof(int));
    p->answer = malloc(N_PROMPTS * sizeof(int));
    p->wrong = malloc(N_PROMPTS * sizeof(int));
    p->pos = malloc(N_PROMPTS * sizeof(int));
    p->line = malloc(N_PROMPTS * sizeof(int));
    rng_state = seed;
    for (int i = 0; i < N_PROMPTS; i++) {
        const int from = 1 + (int)((rnd() + 1.0) * 0.5 * (T - 2));
        for (int j = 0; j < T; j++) {
            const int tok = (int)((rnd() + 1.0) * 0.5 * V) % V;
            p->clean[i * T + j] = tok;
            p->corr[i * T + j] = j >= from ? (tok + 1 + (int)((rnd() + 1.0) * 0.5 * (V - 1)) % (V - 1)) % V : tok;
        }
        p->answer[i] = (int)((rnd() + 1.0) * 0.5 * V) % V;
        p->wrong[i] = (p->answer[i] + 1 + i % (V - 1)) % V;
        p->pos[i] = from + (int)((rnd() + 1.0) * 0.5 * (T - from)) % (T - from);
        p->line[i] = i + 1;
    }
}

/* The gradient points hs_backward_acts offers among cfg's hook points. */
static int offered(const char *name)
{
    static const char *const not_offered[] = {"hook_tokens", "hook_scale", "hook_normalized",
                                              "hook_attn_scores", "logits"};
    for (size_t i = 0; i < sizeof not_offered / sizeof not_offered[0]; i++) {
        const size_t n = strlen(name), k = strlen(not_offered[i]);
        if (n >= k && strcmp(name + n - k, not_offered[i]) == 0) return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Observers                                                                 */

typedef struct {
    const char *name; /* the point (NULL: every offered one) */
    float *copy;      /* where its data go */
    size_t numel;
    int calls;
    char last[64];    /* the last name seen */
} grab;

static int grab_wants(const char *name, void *ctx)
{
    const grab *g = ctx;
    return g->name == NULL || strcmp(name, g->name) == 0;
}

static int grab_fn(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    grab *g = ctx;
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    if (g->copy) memcpy(g->copy, data, n * sizeof(float));
    g->numel = n;
    g->calls++;
    snprintf(g->last, sizeof g->last, "%s", name);
    return 0;
}

typedef struct {
    const char *name;
    const float *u;  /* direction */
    float e;
} nudge;

static int nudge_wants(const char *name, void *ctx)
{
    return strcmp(name, ((const nudge *)ctx)->name) == 0;
}

static int nudge_fn(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name;
    const nudge *d = ctx;
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    for (size_t i = 0; i < n; i++) data[i] += d->e * d->u[i];
    return 1;
}

/* Sum over the B rows of the metric at their positions (logit-diff or
 * prob-diff) after a forward with the observer obs (may be NULL). */
static double metric_sum(const hs_model *m, hs_acts *a, const hs_prompts *p, int B, hs_metric_kind k,
                         const hs_observer *obs)
{
    hs_error err;
    assert_int_equal(hs_forward(m, a, p->clean, B, T, obs, &err), HS_OK);
    double s = 0.0, scratch[2 * V];
    for (int b = 0; b < B; b++)
        s += hs_metric_value(k, a->logits + ((size_t)b * T + p->pos[b]) * V, V, p->answer[b], p->wrong[b], NULL,
                             scratch);
    return s;
}

/* dlogits (B, T, V) of metric_sum at the last forward on a. */
static void metric_dlogits(const hs_acts *a, const hs_prompts *p, int B, hs_metric_kind k, float *dl)
{
    double scratch[2 * V];
    memset(dl, 0, (size_t)B * T * V * sizeof(float));
    for (int b = 0; b < B; b++) {
        const size_t row = ((size_t)b * T + p->pos[b]) * V;
        hs_metric_grad(k, a->logits + row, V, p->answer[b], p->wrong[b], NULL, scratch, dl + row);
    }
}

/* ------------------------------------------------------------------------ */
/* The backward to the activations                                           */

/* The signs of every MLP pre-activation of the last forward on a (B rows),
 * with ReLU (else none): into out, how many. */
static size_t relu_signs(const hs_model *m, const hs_acts *a, int B, unsigned char *out)
{
    size_t n = 0;
    if (m->cfg.act != HS_ACT_RELU) return 0;
    for (int l = 0; l < m->cfg.n_layers; l++)
        for (size_t i = 0; i < (size_t)B * T * m->cfg.d_mlp; i++) out[n++] = a->blocks[l].mlp_pre[i] > 0.0f;
    return n;
}

static void backward_acts_matches_finite_differences(void **state)
{
    (void)state;
    enum { B = 3 };
    hs_error err;
    hs_prompts p;
    random_prompts(&p, 7);
    for (int k = 0; k < N_CFG; k++) {
        hs_model *m = model_of(k);
        hs_acts *a = NULL;
        assert_int_equal(hs_acts_create(&m->cfg, B, T, 1, &a, &err), HS_OK);
        hs_hook_point pts[256];
        const int np = hs_hook_points(&m->cfg, pts, 256);
        float dl[B * T * V], *g = malloc(B * T * 64 * 64 * sizeof(float)), *u = malloc(B * T * 64 * 64 * sizeof(float));
        unsigned char signs[2 * 2 * B * T * 24];
        _Static_assert(N_CFG == 4, "the checked counts below are the four configs'");
        int checked = 0;
        for (int i = 0; i < np; i++) {
            if (!offered(pts[i].name)) continue;
            const hs_metric_kind mk = i % 2 ? HS_METRIC_PROB_DIFF : HS_METRIC_LOGIT_DIFF;
            metric_sum(m, a, &p, B, mk, NULL);
            metric_dlogits(a, &p, B, mk, dl);
            grab gr = {pts[i].name, g, 0, 0, ""};
            const hs_observer go = {grab_fn, grab_wants, &gr};
            assert_int_equal(hs_backward_acts(m, a, dl, &go, &err), HS_OK);
            if (gr.calls != 1) fail_msg("%s: %d calls", pts[i].name, gr.calls);
            /* a direction whose +-e steps flip no ReLU (the derivative of a
             * kink is not defined; a few directions are tried, then smaller
             * steps) */
            double fd = 0.0, gu = 0.0;
            for (int attempt = 0; attempt < 8; attempt++) {
                const float e = attempt < 4 ? 1e-3f : 2e-4f;
                rng_state = 99 + (uint64_t)i + 1000 * (uint64_t)attempt;
                gu = 0.0;
                for (size_t j = 0; j < gr.numel; j++) {
                    u[j] = (float)rnd();
                    gu += (double)g[j] * u[j];
                }
                nudge nd = {pts[i].name, u, e};
                const hs_observer no = {nudge_fn, nudge_wants, &nd};
                const double fp = metric_sum(m, a, &p, B, mk, &no);
                const size_t kp = relu_signs(m, a, B, signs);
                nd.e = -e;
                const double fm = metric_sum(m, a, &p, B, mk, &no);
                fd = (fp - fm) / (2.0 * e);
                if (kp == 0 || relu_signs(m, a, B, signs + kp) == 0 || memcmp(signs, signs + kp, kp) == 0) break;
                if (attempt == 7) fail_msg("config %d %s: every direction crosses a ReLU kink", k, pts[i].name);
            }
            if (fabs(fd - gu) > 2e-2 * (fabs(fd) + fabs(gu)) + 2e-3)
                fail_msg("config %d %s: finite difference %.6g, gradient %.6g", k, pts[i].name, fd, gu);
            checked++;
        }
        assert_int_equal(checked, k == 2 ? 29 : 39);
        free(g);
        free(u);
        hs_acts_destroy(a);
        hs_model_destroy(m);
    }
    hs_prompts_free(&p);
}

static int refuse_edit(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    (void)name, (void)shape, (void)ndim, (void)ctx;
    data[0] += 1.0f;
    return 1;
}

static int wants_z(const char *name, void *ctx)
{
    (void)ctx;
    return strcmp(name, "blocks.1.attn.hook_z") == 0;
}

static void backward_acts_refuses_what_it_cannot_use_and_stops_where_asked(void **state)
{
    (void)state;
    hs_error err;
    hs_prompts p;
    random_prompts(&p, 8);
    hs_model *m = model_of(0);
    hs_acts *a = NULL, *nog = NULL;
    assert_int_equal(hs_acts_create(&m->cfg, 2, T, 1, &a, &err), HS_OK);
    assert_int_equal(hs_acts_create(&m->cfg, 2, T, 0, &nog, &err), HS_OK);
    float dl[2 * T * V];
    grab gr = {NULL, NULL, 0, 0, ""};
    const hs_observer go = {grab_fn, grab_wants, &gr};
    /* an edit after the embedding: refused; an edit of hook_embed: a forward from other inputs */
    const hs_observer ez = {refuse_edit, wants_z, NULL};
    assert_int_equal(hs_forward(m, a, p.clean, 2, T, &ez, &err), HS_OK);
    metric_dlogits(a, &p, 2, HS_METRIC_LOGIT_DIFF, dl);
    assert_int_equal(hs_backward_acts(m, a, dl, &go, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "changed a point after the embedding"));
    float u[2 * T * 16];
    for (int i = 0; i < 2 * T * 16; i++) u[i] = 0.01f * (float)(i % 7);
    nudge nd = {"hook_embed", u, 0.5f};
    const hs_observer ne = {nudge_fn, nudge_wants, &nd};
    assert_int_equal(hs_forward(m, a, p.clean, 2, T, &ne, &err), HS_OK);
    assert_int_equal(hs_backward_acts(m, a, dl, &go, &err), HS_OK);
    /* every offered point once, the embedding last */
    hs_hook_point pts[128];
    int n_offered = 0;
    for (int i = 0, n = hs_hook_points(&m->cfg, pts, 128); i < n; i++) n_offered += offered(pts[i].name);
    assert_int_equal(gr.calls, n_offered);
    assert_string_equal(gr.last, "hook_pos_embed");
    assert_int_equal(hs_forward(m, nog, p.clean, 2, T, NULL, &err), HS_OK);
    assert_int_equal(hs_backward_acts(m, nog, dl, &go, &err), HS_ERR_INPUT);
    a->logit_pos = 3;
    assert_int_equal(hs_forward(m, a, p.clean, 2, T, NULL, &err), HS_OK);
    assert_int_equal(hs_backward_acts(m, a, dl, &go, &err), HS_ERR_INPUT);
    a->logit_pos = -1;
    /* one point wanted: called once; the rest of the backward not run */
    assert_int_equal(hs_forward(m, a, p.clean, 2, T, NULL, &err), HS_OK);
    gr.calls = 0;
    const hs_observer gz = {grab_fn, wants_z, &gr};
    assert_int_equal(hs_backward_acts(m, a, dl, &gz, &err), HS_OK);
    assert_int_equal(gr.calls, 1);
    hs_acts_destroy(a);
    hs_acts_destroy(nog);
    hs_model_destroy(m);
    hs_prompts_free(&p);
}

/* ------------------------------------------------------------------------ */
/* AtP, EAP, EAP-IG                                                          */

static void atp_is_exact_where_the_metric_is_linear(void **state)
{
    (void)state;
    hs_error err;
    hs_prompts p;
    random_prompts(&p, 9);
    hs_model *m = model_of(1); /* no final norm: LD is linear in the last residual */
    const unsigned acts = 1u << HS_PATCH_RESID_POST | 1u << HS_PATCH_MLP_OUT;
    hs_patch_report ex, at;
    assert_int_equal(hs_patch_run_tokens(m, NULL, p.clean, p.corr, p.n, T, p.answer, p.wrong, p.pos, acts, &ex, &err),
                     HS_OK);
    assert_int_equal(hs_atp_run_tokens(m, NULL, p.clean, p.corr, p.n, T, p.answer, p.wrong, p.pos, acts, &at, &err),
                     HS_OK);
    assert_true(ex.ld_clean == at.ld_clean && ex.ld_corr == at.ld_corr);
    assert_int_equal(at.method, HS_PATCH_ATP);
    const int l = m->cfg.n_layers - 1;
    for (int a = HS_PATCH_MLP_OUT; a <= HS_PATCH_RESID_POST; a++)
        for (int q = 0; q < T; q++) {
            const double e = ex.metric[a][l * T + q], g = at.metric[a][l * T + q];
            if (fabs(e - g) > 1e-5 * (1.0 + fabs(e))) fail_msg("%s at %d: exact %.9g, AtP %.9g", hs_patch_act_names[a], q, e, g);
        }
    /* earlier, through the nonlinearities, it is only an estimate */
    double dev = 0.0;
    for (int q = 0; q < T; q++) dev += fabs(ex.metric[HS_PATCH_RESID_POST][q] - at.metric[HS_PATCH_RESID_POST][q]);
    assert_true(dev > 1e-3);
    hs_patch_report_free(&ex);
    hs_patch_report_free(&at);
    hs_model_destroy(m);
    hs_prompts_free(&p);
}

static void eap_ig_one_step_is_minus_eap_with_the_runs_swapped(void **state)
{
    (void)state;
    hs_error err;
    hs_prompts p, s;
    random_prompts(&p, 10);
    s = p;
    s.clean = p.corr;
    s.corr = p.clean;
    for (int k = 0; k < N_CFG; k++) {
        hs_model *m = model_of(k);
        hs_graph g;
        assert_int_equal(hs_graph_build(&m->cfg, &g, &err), HS_OK);
        double *a = malloc(g.n_edges * sizeof(double)), *b = malloc(g.n_edges * sizeof(double));
        for (int mk = HS_METRIC_LOGIT_DIFF; mk <= HS_METRIC_PROB_DIFF; mk++) {
            assert_int_equal(hs_eap_scores(m, NULL, &p, &g, (hs_metric_kind)mk, 1, a, &err), HS_OK);
            assert_int_equal(hs_eap_scores(m, NULL, &s, &g, (hs_metric_kind)mk, 0, b, &err), HS_OK);
            int nonzero = 0;
            for (size_t e = 0; e < g.n_edges; e++) {
                if (!(a[e] == -b[e])) fail_msg("config %d metric %d edge %zu: %.17g vs %.17g", k, mk, e, a[e], b[e]);
                nonzero += a[e] != 0.0;
            }
            /* uniform attention reads no queries or keys: those edges are 0 */
            assert_true(nonzero > (int)g.n_edges / (k == 2 ? 4 : 2));
        }
        /* KL at the clean run: its gradient is exactly 0 */
        assert_int_equal(hs_eap_scores(m, NULL, &p, &g, HS_METRIC_KL, 0, a, &err), HS_OK);
        for (size_t e = 0; e < g.n_edges; e++) assert_true(a[e] == 0.0);
        free(a);
        free(b);
        hs_graph_free(&g);
        hs_model_destroy(m);
    }
    hs_prompts_free(&p);
}

/* EAP-IG at 2 steps is the mean over alpha in {0, 1/2} of (a_corr - a_clean)
 * . dm/d(input) at the run whose embeddings are e_corr + alpha (e_clean -
 * e_corr) (discovery.h). The reference needs no interpolation: clean tokens
 * 0 and corrupted tokens 1 differ only where the prompt is corrupted, and
 * token 2's embedding is made their midpoint, so the run at alpha 1/2 is the
 * clean run of prompts R with 2 there. With EAP(P, Q) = (a_Q - a_P) . g(P):
 *   alpha 0:   (a_Q - a_P) . g(Q)  = -EAP(Q, P)
 *   alpha 1/2: (a_Q - a_P) . g(R)  = EAP(R, Q) - EAP(R, P)
 * plain EAP only (no alpha schedule in it). Equal to 1e-5 of the largest
 * score (float32 rounding of the midpoint); a schedule of (k+1)/m (alpha 1/2
 * and 1) is far off. */
static void eap_ig_two_steps_is_the_mean_at_alpha_0_and_one_half(void **state)
{
    (void)state;
    hs_error err;
    hs_prompts p;
    random_prompts(&p, 13);
    int *mid = malloc(N_PROMPTS * T * sizeof(int));
    for (int i = 0; i < N_PROMPTS * T; i++) {
        const int diff = p.clean[i] != p.corr[i];
        p.clean[i] = diff ? 0 : 3 + p.clean[i] % (V - 3);
        p.corr[i] = diff ? 1 : p.clean[i];
        mid[i] = diff ? 2 : p.clean[i];
    }
    hs_prompts swapped = p, r_q = p, r_p = p;
    swapped.clean = p.corr, swapped.corr = p.clean;
    r_q.clean = mid;
    r_p.clean = mid, r_p.corr = p.clean;
    for (int k = 0; k < N_CFG; k++) {
        hs_model *m = model_of(k);
        const int D = m->cfg.d_model;
        float *W_E = m->params.W_E;
        for (int d = 0; d < D; d++) W_E[2 * D + d] = 0.5f * (W_E[d] + W_E[D + d]);
        hs_graph g;
        assert_int_equal(hs_graph_build(&m->cfg, &g, &err), HS_OK);
        const size_t E = g.n_edges;
        double *ig = malloc(E * sizeof(double)), *a0 = malloc(E * sizeof(double)), *aq = malloc(E * sizeof(double)),
               *ap = malloc(E * sizeof(double));
        for (int mk = HS_METRIC_LOGIT_DIFF; mk <= HS_METRIC_PROB_DIFF; mk++) {
            assert_int_equal(hs_eap_scores(m, NULL, &p, &g, (hs_metric_kind)mk, 2, ig, &err), HS_OK);
            assert_int_equal(hs_eap_scores(m, NULL, &swapped, &g, (hs_metric_kind)mk, 0, a0, &err), HS_OK);
            assert_int_equal(hs_eap_scores(m, NULL, &r_q, &g, (hs_metric_kind)mk, 0, aq, &err), HS_OK);
            assert_int_equal(hs_eap_scores(m, NULL, &r_p, &g, (hs_metric_kind)mk, 0, ap, &err), HS_OK);
            double big = 0.0, half = 0.0;
            for (size_t e = 0; e < E; e++) big = fmax(big, fabs(ig[e]));
            if (!(big > 1e-5)) fail_msg("config %d metric %d: largest EAP-IG score %.3g", k, mk, big);
            for (size_t e = 0; e < E; e++) {
                const double want = 0.5 * (-a0[e] + (aq[e] - ap[e]));
                if (fabs(ig[e] - want) > 1e-5 * big)
                    fail_msg("config %d metric %d edge %zu: EAP-IG(2) %.9g, mean at alpha 0 and 1/2 %.9g", k, mk, e,
                             ig[e], want);
                half = fmax(half, fabs((aq[e] - ap[e]) + a0[e]));
            }
            /* alpha 1/2's gradient is not alpha 0's, so the test sees the schedule; but config 2 (uniform attention,
             * no norm, no MLP) is linear in its embeddings: its logit difference has one gradient everywhere */
            if (!(k == 2 && mk == HS_METRIC_LOGIT_DIFF) && !(half > 1e-2 * big))
                fail_msg("config %d metric %d: alpha 1/2 and 0 differ by %.3g only (largest score %.3g)", k, mk, half, big);
        }
        free(ig), free(a0), free(aq), free(ap);
        hs_graph_free(&g);
        hs_model_destroy(m);
    }
    free(mid);
    hs_prompts_free(&p);
}

static void thread_counts_give_identical_bits(void **state)
{
    (void)state;
    hs_error err;
    hs_prompts p;
    random_prompts(&p, 11);
    hs_model *m = model_of(0);
    hs_pool *pool = NULL;
    assert_int_equal(hs_pool_create(2, &pool, &err), HS_OK);
    hs_graph g;
    assert_int_equal(hs_graph_build(&m->cfg, &g, &err), HS_OK);
    double *a = malloc(g.n_edges * sizeof(double)), *b = malloc(g.n_edges * sizeof(double));
    for (int steps = 0; steps <= 3; steps += 3) {
        assert_int_equal(hs_eap_scores(m, NULL, &p, &g, HS_METRIC_KL, steps, a, &err), HS_OK);
        assert_int_equal(hs_eap_scores(m, pool, &p, &g, HS_METRIC_KL, steps, b, &err), HS_OK);
        assert_memory_equal(a, b, g.n_edges * sizeof(double));
    }
    hs_patch_report r1, r2;
    const unsigned all = (1u << HS_PATCH_N) - 1;
    assert_int_equal(hs_atp_run_tokens(m, NULL, p.clean, p.corr, p.n, T, p.answer, p.wrong, p.pos, all, &r1, &err), HS_OK);
    assert_int_equal(hs_atp_run_tokens(m, pool, p.clean, p.corr, p.n, T, p.answer, p.wrong, p.pos, all, &r2, &err), HS_OK);
    for (int k = 0; k < HS_PATCH_N; k++) {
        const size_t cells = hs_patch_act_is_head(k) ? (size_t)r1.L * r1.H : (size_t)r1.L * T;
        assert_memory_equal(r1.metric[k], r2.metric[k], cells * sizeof(double));
        if (hs_patch_act_is_head(k)) assert_memory_equal(r1.metric_pos[k], r2.metric_pos[k], cells * T * sizeof(double));
    }
    hs_patch_report_free(&r1);
    hs_patch_report_free(&r2);
    free(a);
    free(b);
    hs_graph_free(&g);
    hs_pool_destroy(pool);
    hs_model_destroy(m);
    hs_prompts_free(&p);
}

static void eap_refuses_bad_input(void **state)
{
    (void)state;
    hs_error err;
    hs_prompts p;
    random_prompts(&p, 12);
    hs_model *m = model_of(0), *m2 = model_of(1);
    hs_graph g, g2;
    assert_int_equal(hs_graph_build(&m->cfg, &g, &err), HS_OK);
    assert_int_equal(hs_graph_build(&m2->cfg, &g2, &err), HS_OK);
    double *s = malloc(g.n_edges * sizeof(double));
    assert_int_equal(hs_eap_scores(m, NULL, &p, &g2, HS_METRIC_LOGIT_DIFF, 0, s, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "is not the model's"));
    assert_int_equal(hs_eap_scores(m, NULL, &p, &g, HS_METRIC_LOGIT_DIFF, -1, s, &err), HS_ERR_INPUT);
    assert_int_equal(hs_eap_scores(m, NULL, &p, &g, HS_METRIC_LOGIT_DIFF, 1001, s, &err), HS_ERR_INPUT);
    int *corr = p.corr, *wrong = p.wrong;
    p.corr = NULL;
    assert_int_equal(hs_eap_scores(m, NULL, &p, &g, HS_METRIC_KL, 5, s, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "corrupted"));
    p.corr = corr;
    p.wrong = NULL;
    assert_int_equal(hs_eap_scores(m, NULL, &p, &g, HS_METRIC_PROB_DIFF, 5, s, &err), HS_ERR_INPUT);
    assert_int_equal(hs_eap_scores(m, NULL, &p, &g, HS_METRIC_KL, 2, s, &err), HS_OK); /* KL needs no answers */
    p.wrong = wrong;
    free(s);
    hs_graph_free(&g);
    hs_graph_free(&g2);
    hs_model_destroy(m);
    hs_model_destroy(m2);
    hs_prompts_free(&p);
}

/* hs_model_ungrouped: the grouped-query model (config N_CFG) with every query
 * head's own key and value. Its logits are the grouped model's (float32
 * rounding); an edit of blocks.1.hook_k_input[:, :, 0] changes query head 0's
 * pattern and leaves head 1's, which reads the same key/value head, bit for
 * bit as it was; a model without grouping is refused. */
typedef struct {
    int edit;        /* 1: add 0.5 to blocks.1.hook_k_input[:, :, 0, :] */
    float *pattern;  /* (B, H, T, T) blocks.1.attn.hook_pattern, copied */
} ungroup_obs;

static int ungroup_fn(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    ungroup_obs *o = ctx;
    (void)ndim;
    if (strcmp(name, "blocks.1.attn.hook_pattern") == 0) {
        memcpy(o->pattern, data, (size_t)(shape[0] * shape[1] * shape[2] * shape[3]) * sizeof(float));
        return 0;
    }
    if (!o->edit || strcmp(name, "blocks.1.hook_k_input") != 0) return 0;
    for (int64_t r = 0; r < shape[0] * shape[1]; r++) /* [B, T, H, D]: head 0 of every row */
        for (int64_t i = 0; i < shape[3]; i++) data[r * shape[2] * shape[3] + i] += 0.5f;
    return 1;
}

static int ungroup_wants(const char *name, void *ctx)
{
    (void)ctx;
    return strcmp(name, "blocks.1.attn.hook_pattern") == 0 || strcmp(name, "blocks.1.hook_k_input") == 0;
}

static void ungrouped_model_gives_each_query_head_its_own_key(void **state)
{
    (void)state;
    hs_error err;
    hs_model *m = model_of(N_CFG), *plain = model_of(0), *u = NULL;
    assert_int_equal(hs_model_ungrouped(plain, &u, &err), HS_ERR_INPUT);
    assert_null(u);
    assert_int_equal(hs_model_ungrouped(m, &u, &err), HS_OK);
    assert_int_equal(hs_kv_heads(&u->cfg), u->cfg.n_heads);
    hs_prompts p;
    random_prompts(&p, 7);
    const int B = 4, H = m->cfg.n_heads;
    hs_acts *a = NULL, *b = NULL;
    assert_int_equal(hs_acts_create(&m->cfg, B, T, 0, &a, &err), HS_OK);
    assert_int_equal(hs_acts_create(&u->cfg, B, T, 0, &b, &err), HS_OK);
    assert_int_equal(hs_forward(m, a, p.clean, B, T, NULL, &err), HS_OK);
    assert_int_equal(hs_forward(u, b, p.clean, B, T, NULL, &err), HS_OK);
    float big = 0.0f;
    for (int i = 0; i < B * T * V; i++) big = fmaxf(big, fabsf(a->logits[i]));
    for (int i = 0; i < B * T * V; i++) assert_true(fabsf(a->logits[i] - b->logits[i]) <= 1e-6f * big);
    const size_t np = (size_t)B * H * T * T;
    float *p0 = malloc(np * sizeof(float)), *p1 = malloc(np * sizeof(float));
    ungroup_obs o0 = {0, p0}, o1 = {1, p1};
    hs_observer obs0 = {ungroup_fn, ungroup_wants, &o0}, obs1 = {ungroup_fn, ungroup_wants, &o1};
    assert_int_equal(hs_forward(u, b, p.clean, B, T, &obs0, &err), HS_OK);
    assert_int_equal(hs_forward(u, b, p.clean, B, T, &obs1, &err), HS_OK);
    int head0_moved = 0;
    for (int bb = 0; bb < B; bb++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < T * T; i++) {
                const size_t k = ((size_t)bb * H + h) * T * T + i;
                if (h == 0) head0_moved |= p0[k] != p1[k];
                else assert_true(memcmp(&p0[k], &p1[k], sizeof(float)) == 0);
            }
    assert_true(head0_moved);
    free(p0);
    free(p1);
    hs_acts_destroy(a);
    hs_acts_destroy(b);
    free(u);
    hs_model_destroy(m);
    hs_model_destroy(plain);
    hs_prompts_free(&p);
}

/* ------------------------------------------------------------------------ */
/* The dump for tests/py/attribution_ref.py                                  */

static cJSON *ints(const int *v, int n)
{
    return cJSON_CreateIntArray(v, n);
}

static cJSON *doubles(const double *v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(isnan(v[i]) ? 0.0 : v[i]));
    return a;
}

/* Every offered gradient point after a forward of the first B prompts, the
 * metric prob-diff: {name: {"shape", "data"}}. */
typedef struct {
    cJSON *out;
} grad_dump;

static int dump_grad_fn(const char *name, const int64_t *shape, int ndim, float *data, void *ctx)
{
    grad_dump *d = ctx;
    cJSON *o = cJSON_CreateObject(), *sh = cJSON_CreateArray(), *v = cJSON_CreateArray();
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)shape[i]));
        n *= (size_t)shape[i];
    }
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(v, cJSON_CreateNumber(data[i]));
    cJSON_AddItemToObject(o, "shape", sh);
    cJSON_AddItemToObject(o, "data", v);
    cJSON_AddItemToObject(d->out, name, o);
    return 0;
}

static cJSON *dump_model(const hs_model *m, const char *ckpt, const char *label, const hs_prompts *p)
{
    hs_error err;
    cJSON *o = cJSON_CreateObject(), *pr = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "label", label);
    cJSON_AddStringToObject(o, "checkpoint", ckpt);
    cJSON_AddItemToObject(o, "config", hs_config_to_json(&m->cfg, HS_CONFIG_JSON_ALL));
    cJSON_AddItemToObject(pr, "clean", ints(p->clean, p->n * p->t));
    cJSON_AddItemToObject(pr, "corrupted", ints(p->corr, p->n * p->t));
    cJSON_AddItemToObject(pr, "answer", ints(p->answer, p->n));
    cJSON_AddItemToObject(pr, "wrong", ints(p->wrong, p->n));
    cJSON_AddItemToObject(pr, "position", ints(p->pos, p->n));
    cJSON_AddNumberToObject(pr, "tokens", p->t);
    cJSON_AddItemToObject(o, "prompts", pr);
    const int B = 3, t = p->t, Vm = m->cfg.d_vocab;
    const int grouped = hs_kv_heads(&m->cfg) != m->cfg.n_heads;
    if (grouped) goto attribution; /* its grouped hook points and AtP are test_block's and patch's */
    /* gradients of the first 3 prompts' prob-diff at every point */
    hs_acts *a = NULL;
    assert_int_equal(hs_acts_create(&m->cfg, B, t, 1, &a, &err), HS_OK);
    assert_int_equal(hs_forward(m, a, p->clean, B, t, NULL, &err), HS_OK);
    float *dl = calloc((size_t)B * t * Vm, sizeof(float));
    double *scr = malloc(2 * (size_t)Vm * sizeof(double));
    for (int b = 0; b < B; b++) {
        const size_t row = ((size_t)b * t + p->pos[b]) * Vm;
        hs_metric_grad(HS_METRIC_PROB_DIFF, a->logits + row, Vm, p->answer[b], p->wrong[b], NULL, scr, dl + row);
    }
    grad_dump gd = {cJSON_CreateObject()};
    const hs_observer go = {dump_grad_fn, NULL, &gd};
    assert_int_equal(hs_backward_acts(m, a, dl, &go, &err), HS_OK);
    cJSON *gj = cJSON_CreateObject();
    cJSON_AddNumberToObject(gj, "rows", B);
    cJSON_AddStringToObject(gj, "metric", "prob-diff");
    cJSON_AddItemToObject(gj, "points", gd.out);
    cJSON_AddItemToObject(o, "grads", gj);
    free(dl);
    free(scr);
    hs_acts_destroy(a);
    /* AtP of every act the model has */
    unsigned acts = (1u << HS_PATCH_N) - 1;
    if (m->cfg.d_mlp == 0) acts &= ~(1u << HS_PATCH_MLP_OUT);
    if (m->cfg.attn != HS_ATTN_SOFTMAX) acts &= ~(1u << HS_PATCH_Q | 1u << HS_PATCH_K);
    hs_patch_report r;
    assert_int_equal(hs_atp_run_tokens(m, NULL, p->clean, p->corr, p->n, t, p->answer, p->wrong, p->pos, acts, &r, &err),
                     HS_OK);
    cJSON *aj = cJSON_CreateObject(), *ac = cJSON_CreateObject();
    cJSON_AddNumberToObject(aj, "ld_clean", r.ld_clean);
    cJSON_AddNumberToObject(aj, "ld_corr", r.ld_corr);
    for (int k = 0; k < HS_PATCH_N; k++) {
        if (!(acts & (1u << k))) continue;
        cJSON *x = cJSON_CreateObject();
        const int head = hs_patch_act_is_head(k);
        const size_t cells = head ? (size_t)r.L * r.H : (size_t)r.L * t;
        cJSON_AddItemToObject(x, "metric", doubles(r.metric[k], cells));
        if (head) cJSON_AddItemToObject(x, "metric_pos", doubles(r.metric_pos[k], cells * t));
        cJSON_AddItemToObject(ac, hs_patch_act_names[k], x);
    }
    cJSON_AddItemToObject(aj, "acts", ac);
    cJSON_AddItemToObject(o, "atp", aj);
    hs_patch_report_free(&r);
attribution:;
    /* EAP and EAP-IG */
    hs_graph g;
    assert_int_equal(hs_graph_build(&m->cfg, &g, &err), HS_OK);
    cJSON *names = cJSON_CreateArray(), *runs = cJSON_CreateArray();
    for (size_t e = 0; e < g.n_edges; e++) {
        char nm[64];
        hs_graph_edge_name(&g, e, nm, sizeof nm);
        cJSON_AddItemToArray(names, cJSON_CreateString(nm));
    }
    cJSON_AddItemToObject(o, "edges", names);
    /* resample (both alpha schedules), zero and mean: EAP and EAP-IG */
    static const hs_eap_opts RUNS[] = {
        {HS_METRIC_LOGIT_DIFF, HS_ABLATE_RESAMPLE, 0, 0}, {HS_METRIC_LOGIT_DIFF, HS_ABLATE_RESAMPLE, 5, 0},
        {HS_METRIC_PROB_DIFF, HS_ABLATE_RESAMPLE, 0, 0},  {HS_METRIC_PROB_DIFF, HS_ABLATE_RESAMPLE, 2, 0},
        {HS_METRIC_KL, HS_ABLATE_RESAMPLE, 5, 0},         {HS_METRIC_LOGIT_DIFF, HS_ABLATE_RESAMPLE, 3, 1},
        {HS_METRIC_LOGIT_DIFF, HS_ABLATE_ZERO, 0, 0},     {HS_METRIC_LOGIT_DIFF, HS_ABLATE_ZERO, 3, 0},
        {HS_METRIC_PROB_DIFF, HS_ABLATE_ZERO, 2, 1},      {HS_METRIC_LOGIT_DIFF, HS_ABLATE_MEAN, 0, 0},
        {HS_METRIC_LOGIT_DIFF, HS_ABLATE_MEAN, 3, 0},     {HS_METRIC_KL, HS_ABLATE_MEAN, 2, 0}};
    double *s = malloc(g.n_edges * sizeof(double)), *ns = malloc((size_t)g.n_nodes * sizeof(double));
    for (size_t i = 0; i < sizeof RUNS / sizeof RUNS[0]; i++) {
        if (hs_eap_run(m, NULL, p, &g, &RUNS[i], s, &err) != HS_OK) fail_msg("eap run %zu: %s", i, err.msg);
        hs_eap_node_scores(&g, s, ns);
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "metric", hs_metric_names[RUNS[i].metric]);
        cJSON_AddNumberToObject(x, "ig_steps", RUNS[i].ig_steps);
        cJSON_AddStringToObject(x, "ablation", hs_ablate_method_names[RUNS[i].ablation]);
        cJSON_AddNumberToObject(x, "ig_right", RUNS[i].ig_right);
        cJSON_AddItemToObject(x, "scores", doubles(s, g.n_edges));
        cJSON_AddItemToObject(x, "node_scores", doubles(ns, (size_t)g.n_nodes - 1));
        cJSON_AddItemToArray(runs, x);
    }
    cJSON_AddItemToObject(o, "eap", runs);
    if (grouped) { /* exact edge patching through discover (the ungrouped view), resample, logit-diff */
        hs_discover_opts dopt = hs_discover_opts_default();
        hs_discover_report dr;
        if (hs_discover_run(m, NULL, p, &dopt, NULL, &dr, &err) != HS_OK) fail_msg("discover exact: %s", err.msg);
        cJSON_AddItemToObject(o, "exact", doubles(dr.scores, g.n_edges));
        cJSON_AddNumberToObject(o, "exact_full", dr.m_full);
        hs_discover_report_free(&dr);
    }
    free(s);
    free(ns);
    hs_graph_free(&g);
    return o;
}

/* circuit_tiny's 192 held-out pairs as a prompt set (circuit's order). */
static hs_model *circuit_tiny(hs_prompts *p)
{
    hs_error err = {0};
    hs_meta meta = {0};
    hs_model *m = NULL;
    hs_tokenizer *v = NULL;
    hs_winograd *w = NULL;
    if (hs_checkpoint_load("checkpoint/circuit_tiny.safetensors", &m, &meta, NULL, &err) != HS_OK ||
        hs_tokenizer_from_json(meta.vocab, &v, &err) != HS_OK ||
        hs_winograd_from_task_json(meta.task, v, &w, &err) != HS_OK)
        fail_msg("circuit_tiny: %s", err.msg);
    hs_meta_free(&meta);
    size_t nh;
    const hs_wg_example *ho = hs_winograd_examples(w, HS_SPLIT_HELDOUT, &nh);
    const int t = HS_WG_POS_QUERY + 1;
    memset(p, 0, sizeof *p);
    p->t = t;
    p->clean = malloc(nh * t * sizeof(int));
    p->corr = malloc(nh * t * sizeof(int));
    p->answer = malloc(nh * sizeof(int));
    p->wrong = malloc(nh * sizeof(int));
    p->pos = malloc(nh * sizeof(int));
    p->line = malloc(nh * sizeof(int));
    for (int dir = 0; dir < 2; dir++)
        for (size_t i = 0; i < nh; i++) {
            if (ho[i].role != HS_ROLE_CROSSER) continue;
            for (size_t j = 0; j < nh; j++)
                if (ho[j].x == ho[i].x && ho[j].y == ho[i].y && ho[j].adj == ho[i].adj + HS_WG_N_CROSSER) {
                    const hs_wg_example *cl = dir ? &ho[j] : &ho[i], *co = dir ? &ho[i] : &ho[j];
                    memcpy(p->clean + (size_t)p->n * t, cl->tokens, t * sizeof(int));
                    memcpy(p->corr + (size_t)p->n * t, co->tokens, t * sizeof(int));
                    p->answer[p->n] = cl->ref_id;
                    p->wrong[p->n] = co->ref_id;
                    p->pos[p->n] = t - 1;
                    p->line[p->n] = p->n + 1;
                    p->n++;
                }
        }
    hs_winograd_destroy(w);
    hs_tokenizer_destroy(v);
    return m;
}

static int dump(const char *dir)
{
    hs_error err;
    cJSON *root = cJSON_CreateObject(), *models = cJSON_CreateArray();
    cJSON_AddItemToObject(root, "models", models);
    for (int k = 0; k < N_CFG; k++) {
        char path[512], label[32];
        snprintf(path, sizeof path, "%s/attr_model_%d.safetensors", dir, k);
        snprintf(label, sizeof label, "random config %d", k);
        hs_model *m = model_of(k);
        if (hs_checkpoint_save(m, NULL, path, &err) != HS_OK) fail_msg("%s", err.msg);
        hs_prompts p;
        random_prompts(&p, 20 + (uint64_t)k);
        cJSON_AddItemToArray(models, dump_model(m, path, label, &p));
        hs_prompts_free(&p);
        hs_model_destroy(m);
    }
    { /* the grouped-query model */
        char path[512];
        snprintf(path, sizeof path, "%s/attr_model_gqa.safetensors", dir);
        hs_model *m = model_of(N_CFG);
        if (hs_checkpoint_save(m, NULL, path, &err) != HS_OK) fail_msg("%s", err.msg);
        hs_prompts p;
        random_prompts(&p, 20 + N_CFG);
        cJSON_AddItemToArray(models, dump_model(m, path, "grouped-query llama-shaped", &p));
        hs_prompts_free(&p);
        hs_model_destroy(m);
    }
    hs_prompts p;
    hs_model *m = circuit_tiny(&p);
    cJSON_AddItemToArray(models, dump_model(m, "checkpoint/circuit_tiny.safetensors", "circuit_tiny", &p));
    hs_prompts_free(&p);
    hs_model_destroy(m);
    char path[512];
    snprintf(path, sizeof path, "%s/attr_dump.json", dir);
    char *text = cJSON_PrintUnformatted(root);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        return 1;
    }
    free(text);
    cJSON_Delete(root);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--dump") == 0) return dump(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(backward_acts_matches_finite_differences),
        cmocka_unit_test(backward_acts_refuses_what_it_cannot_use_and_stops_where_asked),
        cmocka_unit_test(atp_is_exact_where_the_metric_is_linear),
        cmocka_unit_test(eap_ig_one_step_is_minus_eap_with_the_runs_swapped),
        cmocka_unit_test(eap_ig_two_steps_is_the_mean_at_alpha_0_and_one_half),
        cmocka_unit_test(thread_counts_give_identical_bits),
        cmocka_unit_test(eap_refuses_bad_input),
        cmocka_unit_test(ungrouped_model_gives_each_query_head_its_own_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
