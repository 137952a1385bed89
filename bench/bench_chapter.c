/*
 * bench/bench_chapter.c -- the source chapter's tables that need no corpus
 * (issue 31; scripts/chapter.sh runs it), printed as markdown:
 *   varqk   Var(q.k) over 20,000 random pairs with unit-variance N(0,1) entries
 *           at d = 4, 16, 64, 256, 1024 (theory: Var = d, std = sqrt(d))
 *   softmax rows of 64 scores q.k_j (2,000 random rows per width): the mean
 *           effective tokens exp(entropy) and the mean Jacobian trace
 *           sum_j w_j (1 - w_j) = 1 - sum_j w_j^2, with and without the
 *           division by sqrt(d_k), and the fraction of frozen rows (trace
 *           under 0.02: about the top weight above 0.99, a row whose softmax
 *           passes almost no gradient)
 *   params  GPT-2 small's parameter count from headscope's own tensor table
 *           (hs_model_create: 12 blocks, d 768, 12 heads, 4d MLP, n_ctx
 *           1024, 50,257 tokens, learned positions, untied unembedding)
 *           beside the chapter's formula 12 d^2 + 13 d per block
 *   cost    one attention layer (hs_forward of a one-layer attention-only
 *           model, d 512, 8 heads, batch 1, float32) at doubling tokens:
 *           median CPU ms over 3 runs (process CPU time: steadier than the
 *           wall clock on a shared machine; --threads 1 makes it the work),
 *           the ratio to the row above (the chapter's "x4"), the attention matrix's
 *           MB (H T^2 floats), the peak RSS (MiB) after the run
 *   gradnorm  the gradient norm of each block's parameters at initialisation
 *           (hs_backward of the mean cross-entropy; PyTorch's init, seed 0),
 *           12 blocks, d 128, 4 heads, 4d MLP, 128 tokens, vocabulary 1,024,
 *           pre-norm against post-norm (norm_place post, no final norm), on
 *           one batch of 16 windows of uniform random tokens (the chapter's
 *           batch was text: the same architecture, another input)
 *   attnstats MODEL CORPUS...  a text model's attention on the first 16
 *           held-out windows of the corpus (split as its run did): the
 *           standard deviation of the scores q.k / scale over every visible
 *           (query, key) pair of every head (hook_attn_scores), the mean row
 *           entropy (nats) and the fraction of rows putting over 0.99 on one
 *           token (hook_pattern; rows of queries 1.., query 0 sees one key),
 *           one JSON line: the chapter's "training without the division"
 *           columns, on a checkpoint at initialisation and after training
 * usage: bench_chapter varqk|softmax|params|cost|gradnorm [--max-tokens N (2048)] [--threads N]
 *        bench_chapter attnstats MODEL CORPUS...
 * The random numbers: splitmix64 seeded 1, Box-Muller (not the chapter's torch
 * stream: the same distribution, other draws).
 */
#include "bench_util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "model/model.h"
#include "model/train.h"
#include "probe/probe.h"
#include "tasks/text.h"

static uint64_t rng_state = 1;

static double uniform01(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

static double normal(void)
{
    return sqrt(-2.0 * log(uniform01())) * cos(6.283185307179586 * uniform01());
}

static const int DS[5] = {4, 16, 64, 256, 1024};

static void varqk(void)
{
    printf("| d | Var(q.k) | std |\n|---:|---:|---:|\n");
    for (int i = 0; i < 5; i++) {
        const int d = DS[i], n = 20000;
        double s = 0.0, s2 = 0.0;
        for (int p = 0; p < n; p++) {
            double x = 0.0;
            for (int k = 0; k < d; k++) x += normal() * normal();
            s += x;
            s2 += x * x;
        }
        const double var = (s2 - s * s / n) / (n - 1);
        printf("| %d | %.3f | %.3f |\n", d, var, sqrt(var));
    }
}

static void softmax_rows(void)
{
    printf("| d_k | eff. tokens /sqrt(d) | eff. tokens raw | trace /sqrt(d) | trace raw | frozen "
           "/sqrt(d) | frozen raw |\n|---:|---:|---:|---:|---:|---:|---:|\n");
    enum { N = 64, ROWS = 2000 };
    double sc[N], w[N];
    for (int i = 0; i < 5; i++) {
        const int d = DS[i];
        double eff[2] = {0}, tr[2] = {0}, frozen[2] = {0};
        for (int r = 0; r < ROWS; r++) {
            /* q.k_j of unit-variance entries is N(0, d) exactly in distribution */
            for (int j = 0; j < N; j++) sc[j] = normal() * sqrt((double)d);
            for (int div = 0; div < 2; div++) {
                const double f = div == 0 ? 1.0 / sqrt((double)d) : 1.0;
                double mx = -INFINITY, z = 0.0, h = 0.0, s2 = 0.0;
                for (int j = 0; j < N; j++) mx = fmax(mx, sc[j] * f);
                for (int j = 0; j < N; j++) z += (w[j] = exp(sc[j] * f - mx));
                for (int j = 0; j < N; j++) {
                    w[j] /= z;
                    if (w[j] > 0) h -= w[j] * log(w[j]);
                    s2 += w[j] * w[j];
                }
                eff[div] += exp(h);
                tr[div] += 1.0 - s2;
                frozen[div] += 1.0 - s2 < 0.02;
            }
        }
        printf("| %d | %.2f | %.2f | %.3f | %.3f | %.3f | %.3f |\n", d, eff[0] / ROWS, eff[1] / ROWS,
               tr[0] / ROWS, tr[1] / ROWS, frozen[0] / ROWS, frozen[1] / ROWS);
    }
}

static hs_config gpt2_small(void)
{
    hs_config c = hs_config_default();
    c.n_layers = 12;
    c.d_model = 768;
    c.n_heads = 12;
    c.d_head = 64;
    c.d_mlp = 3072;
    c.n_ctx = 1024;
    c.d_vocab = 50257;
    return c;
}

static int params(void)
{
    hs_config c = gpt2_small();
    hs_model *m = NULL;
    hs_error err = {0};
    if (hs_model_create(&c, &m, &err) != HS_OK) {
        fprintf(stderr, "bench_chapter: %s\n", err.msg);
        return 1;
    }
    const long d = c.d_model, block = 12 * d * d + 13 * d, emb = 50257 * d, pos = 1024 * d;
    printf("| part | parameters |\n|---|---:|\n");
    printf("| token embeddings 50,257 x 768 | %ld |\n| positions 1,024 x 768 | %ld |\n", emb, pos);
    printf("| one block, 12 d^2 + 13 d | %ld |\n| 12 blocks | %ld |\n", block, 12 * block);
    printf("| final LayerNorm + unembedding (untied) + its bias | %ld |\n", 2 * d + d * 50257 + 50257);
    printf("| headscope's tensor table (hs_model_create) | %zu |\n", m->n_params);
    printf("| the formula's total | %ld |\n", emb + pos + 12 * block + 2 * d + d * 50257 + 50257);
    printf("| with the unembedding tied to the embeddings, no unembedding bias (Hugging Face's "
           "124M) | %ld |\n", emb + pos + 12 * block + 2 * d);
    hs_model_destroy(m);
    return 0;
}

static int cost(int max_t, int threads)
{
    printf("| tokens | CPU ms | x prev | attention matrix MB | peak RSS MiB |\n|---:|---:|---:|---:|---:|\n");
    double prev = NAN;
    for (int T = 128; T <= max_t; T *= 2) {
        hs_config c = hs_config_default();
        c.n_layers = 1;
        c.d_model = 512;
        c.n_heads = 8;
        c.d_head = 64;
        c.d_mlp = 0;
        c.n_ctx = T;
        c.d_vocab = 16;
        hs_model *m = NULL;
        hs_acts *a = NULL;
        hs_error err = {0};
        int *tok = malloc((size_t)T * sizeof *tok);
        if (!tok || hs_model_create(&c, &m, &err) != HS_OK ||
            hs_acts_create(&m->cfg, 1, T, 0, &a, &err) != HS_OK ||
            (threads != 1 && hs_acts_set_threads(a, threads, &err) != HS_OK)) {
            fprintf(stderr, "bench_chapter: %s\n", tok ? err.msg : "out of memory");
            return 1;
        }
        hs_model_init(m);
        for (int i = 0; i < T; i++) tok[i] = i % 16;
        double ms[3];
        for (int r = 0; r < 3; r++) {
            const double t0 = bench_cpu_now();
            if (hs_forward(m, a, tok, 1, T, NULL, &err) != HS_OK) {
                fprintf(stderr, "bench_chapter: %s\n", err.msg);
                return 1;
            }
            ms[r] = 1e3 * (bench_cpu_now() - t0);
        }
        const double med = bench_median(ms, 3);
        char x4[16] = "-";
        if (isfinite(prev)) snprintf(x4, sizeof x4, "%.2f", med / prev);
        printf("| %d | %.3f | %s | %.1f | %.1f |\n", T, med, x4,
               8.0 * T * (double)T * 4.0 / (1024.0 * 1024.0), bench_peak_rss_mib());
        prev = med;
        hs_acts_destroy(a);
        hs_model_destroy(m);
        free(tok);
    }
    return 0;
}

/* sqrt of the sum of squares of every gradient whose tensor is blocks.l.* */
static double block_grad_norm(const hs_model *m, int l)
{
    char pre[32];
    snprintf(pre, sizeof pre, "blocks.%d.", l);
    double s = 0.0;
    for (int t = 0; t < m->n_tensors; t++) {
        const hs_tensor_info *ti = &m->tensors[t];
        if (strncmp(ti->name, pre, strlen(pre)) != 0) continue;
        for (size_t i = 0; i < ti->numel; i++) s += (double)m->grad_mem[ti->offset + i] * m->grad_mem[ti->offset + i];
    }
    return sqrt(s);
}

static int gradnorm(void)
{
    enum { L = 12, B = 16, T = 128, V = 1024 };
    double g[2][L];
    int *tok = malloc((size_t)B * (T + 1) * sizeof *tok), *in = malloc((size_t)B * T * sizeof *in),
        *tg = malloc((size_t)B * T * sizeof *tg);
    if (!tok || !in || !tg) return 1;
    for (int i = 0; i < B * (T + 1); i++) tok[i] = (int)(uniform01() * V) % V;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < T; i++) {
            in[b * T + i] = tok[b * (T + 1) + i];
            tg[b * T + i] = tok[b * (T + 1) + i + 1];
        }
    for (int post = 0; post < 2; post++) {
        hs_config c = hs_config_default();
        c.n_layers = L;
        c.d_model = 128;
        c.n_heads = 4;
        c.d_head = 32;
        c.d_mlp = 512;
        c.n_ctx = T;
        c.d_vocab = V;
        if (post) {
            c.norm_place = HS_NORM_POST;
            c.ln_final = 0;
        }
        hs_model *m = NULL;
        hs_acts *a = NULL;
        hs_error err = {0};
        if (hs_model_create(&c, &m, &err) != HS_OK || hs_model_alloc_train(m, &err) != HS_OK ||
            hs_acts_create(&m->cfg, B, T, 1, &a, &err) != HS_OK) {
            fprintf(stderr, "bench_chapter: %s\n", err.msg);
            return 1;
        }
        hs_model_init(m);
        hs_zero_grad(m);
        if (hs_forward(m, a, in, B, T, NULL, &err) != HS_OK) {
            fprintf(stderr, "bench_chapter: %s\n", err.msg);
            return 1;
        }
        (void)hs_cross_entropy(m, a, tg, NULL);
        hs_backward(m, a, in, tg, NULL);
        for (int l = 0; l < L; l++) g[post][l] = block_grad_norm(m, l);
        hs_acts_destroy(a);
        hs_model_destroy(m);
    }
    printf("| block | pre-norm | post-norm |\n|---:|---:|---:|\n");
    for (int l = 0; l < L; l++) printf("| %d | %.4f | %.4f |\n", l, g[0][l], g[1][l]);
    printf("| last / first | %.2f | %.2f |\n", g[0][L - 1] / g[0][0], g[1][L - 1] / g[1][0]);
    free(tok);
    free(in);
    free(tg);
    return 0;
}

static int attnstats(const char *path, char **files, int n_files)
{
    hs_error err = {0};
    hs_loaded ld;
    if (hs_load(path, HS_NEED_VOCAB, NULL, NULL, &ld, &err) != HS_OK) {
        fprintf(stderr, "bench_chapter: %s\n", err.msg);
        return 1;
    }
    hs_corpus c;
    hs_text *t = NULL;
    hs_acts *acts = NULL;
    hs_cache cache;
    hs_cache_init(&cache);
    hs_status st = ld.is_text && ld.meta.vocab ? HS_OK : hs_fail(&err, HS_ERR_INPUT, "%s is not a text model", path);
    if (st == HS_OK) st = hs_corpus_read((const char *const *)files, (size_t)n_files, &c, &err);
    if (st == HS_OK) {
        st = hs_text_create(&c, ld.meta.vocab, strlen(ld.meta.vocab), &ld.text, &t, &err);
        hs_corpus_free(&c);
    }
    const int T = ld.text.n_ctx, L = ld.model->cfg.n_layers, H = ld.model->cfg.n_heads;
    const int W = st == HS_OK ? (hs_text_windows(t, T) < 16 ? (int)hs_text_windows(t, T) : 16) : 0;
    if (st == HS_OK) st = hs_acts_create(&ld.model->cfg, W, T, 0, &acts, &err);
    static const char *const filt[2] = {"blocks.*.attn.hook_attn_scores", "blocks.*.attn.hook_pattern"};
    if (st == HS_OK) st = hs_run_with_cache(ld.model, acts, t->heldout, W, T, filt, 2, NULL, &cache, &err);
    double s1 = 0.0, s2 = 0.0, ent = 0.0, pairs = 0.0, rows = 0.0, onehot = 0.0;
    for (int l = 0; l < L && st == HS_OK; l++) {
        const hs_cache_entry *sc = hs_cache_getf(&cache, "blocks.%d.attn.hook_attn_scores", l);
        const hs_cache_entry *pa = hs_cache_getf(&cache, "blocks.%d.attn.hook_pattern", l);
        if (!sc || !pa) {
            st = hs_fail(&err, HS_ERR_NOMEM, "out of memory");
            break;
        }
        for (size_t r = 0; r < (size_t)W * H * T; r++) { /* rows of [W, H, T, T] */
            const int i = (int)(r % (size_t)T);
            const float *srow = sc->data + r * T, *prow = pa->data + r * T;
            double mx = 0.0, e = 0.0;
            for (int j = 0; j <= i; j++) {
                s1 += srow[j];
                s2 += (double)srow[j] * srow[j];
                if (prow[j] > 0.0f) e -= prow[j] * log(prow[j]);
                if (prow[j] > mx) mx = prow[j];
            }
            pairs += i + 1;
            if (i == 0) continue;
            ent += e;
            onehot += mx > 0.99;
            rows += 1.0;
        }
    }
    if (st == HS_OK) {
        const double mean = s1 / pairs;
        printf("{\"score_std\": %.6g, \"entropy\": %.6g, \"onehot_rows\": %.6g, \"windows\": %d, \"n_ctx\": %d, "
               "\"attn_scale\": %.6g}\n", sqrt(s2 / pairs - mean * mean), ent / rows, onehot / rows, W, T,
               hs_attn_scale(&ld.model->cfg));
    } else {
        fprintf(stderr, "bench_chapter: %s: %s\n", path, err.msg);
    }
    hs_cache_free(&cache);
    hs_acts_destroy(acts);
    hs_text_destroy(t);
    hs_loaded_free(&ld);
    return st == HS_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "attnstats")) return attnstats(argv[2], argv + 3, argc - 3);
    int max_t = 2048, threads = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--max-tokens") && i + 1 < argc) max_t = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else {
            fprintf(stderr, "bench_chapter: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    if (argc < 2) {
        fprintf(stderr, "usage: bench_chapter varqk|softmax|params|cost|gradnorm [--max-tokens N] [--threads N]\n");
        return 2;
    }
    if (!strcmp(argv[1], "varqk")) varqk();
    else if (!strcmp(argv[1], "softmax")) softmax_rows();
    else if (!strcmp(argv[1], "params")) return params();
    else if (!strcmp(argv[1], "cost")) return cost(max_t, threads);
    else if (!strcmp(argv[1], "gradnorm")) return gradnorm();
    else {
        fprintf(stderr, "bench_chapter: unknown table '%s'\n", argv[1]);
        return 2;
    }
    return 0;
}
