/*
 * tests/test_inspect_lib.c -- inspect and view called from C, without the
 * CLI (experiments.h hs_inspect_run, output.h hs_view_run), on the committed
 * small Winograd checkpoint (tests/checkpoint/circuit_tiny.safetensors: 2
 * layers x 4 heads), into scratch folders under HS_TEST_TMP:
 *   - the report's rows equal the head average (then each head) of
 *     blocks.l.attn.hook_pattern at the query position, recomputed through
 *     hs_run_with_cache; its predictions are sorted and equal a softmax of the
 *     cached logits; its logit difference is the cached logits';
 *   - index.json lists every file in the folder, with its size, and the
 *     count the report gives; dla.json's bars sum to the cached logit;
 *   - a pair's pair_L<l>_mean.json holds sentence B's head average;
 *   - the notes arrive (the sentence folded to lower case);
 *   - a refused input (an --only head outside the model, a position beyond
 *     the sentence) returns HS_ERR_INPUT and creates no folder;
 *   - view: the page of the folder, listed in its index.json; an existing
 *     --out without force is refused.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "experiments/experiments.h"
#include "output/output.h"
#include "tasks/tasks.h"

#define TIRED "the animal did not cross the street because it was too tired , so the"
#define WET "the animal did not cross the street because it was too wet , so the"

static hs_loaded g_L;
static char g_tmp[512];

static int setup(void **state)
{
    (void)state;
    hs_error err = {0};
    if (hs_load("checkpoint/circuit_tiny.safetensors", HS_NEED_VOCAB, NULL, NULL, &g_L, &err) !=
        HS_OK) {
        fprintf(stderr, "setup: %s\n", err.msg);
        return -1;
    }
    const char *base = getenv("HS_TEST_TMP");
    snprintf(g_tmp, sizeof g_tmp, "%s/inspect_lib.%ld", base ? base : "/tmp", (long)getpid());
    mkdir(base ? base : "/tmp", 0755);
    return mkdir(g_tmp, 0755) == 0 ? 0 : -1;
}

/* Removes the plain files of dir, then dir. */
static void remove_folder(const char *dir)
{
    DIR *d = opendir(dir);
    for (struct dirent *de; d && (de = readdir(d)) != NULL;) {
        if (de->d_name[0] == '.') continue;
        char *p = hs_path_join(dir, de->d_name);
        if (p) unlink(p);
        free(p);
    }
    if (d) closedir(d);
    rmdir(dir);
}

static int teardown(void **state)
{
    (void)state;
    const char *sub[] = {"tired", "pair", "refused"};
    for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
        char *p = hs_path_join(g_tmp, sub[i]);
        remove_folder(p);
        free(p);
    }
    char *page = hs_path_join(g_tmp, "page.html");
    unlink(page);
    free(page);
    rmdir(g_tmp);
    hs_loaded_free(&g_L);
    return 0;
}

/* dir/name parsed (fails the test when it cannot be read). */
static cJSON *read_json(const char *dir, const char *name)
{
    char *path = hs_path_join(dir, name);
    unsigned char *data = NULL;
    size_t n = 0;
    hs_error err = {0};
    if (hs_read_file(path, &data, &n, &err) != HS_OK) fail_msg("%s", err.msg);
    cJSON *j = cJSON_ParseWithLength((const char *)data, n);
    free(data);
    free(path);
    assert_non_null(j);
    return j;
}

/* The notes a run says, one line after another. */
static void keep_note(void *ctx, hs_note_kind kind, const char *line)
{
    (void)kind;
    hs_buf_printf(ctx, "%s\n", line);
}

/* The sentence's [L, H, T, T] patterns and [T, V] logits, run here. */
static void run_cache(const char *sentence, hs_tokens *tk, hs_cache *c)
{
    static const char *const filters[] = {"blocks.*.attn.hook_pattern", "logits"};
    const hs_model *m = g_L.model;
    hs_error err = {0};
    hs_acts *acts = NULL;
    hs_cache_init(c);
    if (hs_tok_encode(g_L.vocab, sentence, (size_t)m->cfg.n_ctx, tk, &err) != HS_OK ||
        hs_acts_create(&m->cfg, 1, (int)tk->n, 0, &acts, &err) != HS_OK ||
        hs_run_with_cache(m, acts, tk->ids, 1, (int)tk->n, filters, 2, NULL, c, &err) != HS_OK)
        fail_msg("%s", err.msg);
    hs_acts_destroy(acts);
}

/* The head average of layer l's pattern, row pos, source j. */
static float head_mean(const hs_cache *c, int l, int T, int pos, int j)
{
    const int H = g_L.model->cfg.n_heads;
    const float *p = hs_cache_getf(c, "blocks.%d.attn.hook_pattern", l)->data;
    double s = 0;
    for (int h = 0; h < H; h++) s += p[((size_t)h * T + pos) * T + j];
    return (float)(s / H);
}

static void report_matches_an_independent_run(void **state)
{
    (void)state;
    const hs_model *m = g_L.model;
    const int L = m->cfg.n_layers, H = m->cfg.n_heads, V = m->cfg.d_vocab;
    char *dir = hs_path_join(g_tmp, "tired");
    hs_inspect_opts o;
    hs_inspect_opts_default(&o);
    o.model_path = "checkpoint/circuit_tiny.safetensors";
    o.sentence = "The Animal did not cross the street because it was too tired , so the";
    o.out_dir = dir;
    o.vs = "street";
    o.head_rows = 1;
    o.top = 7;
    hs_figopts fo;
    hs_figopts_default(&fo, 72);
    hs_buf said = {0};
    const hs_notes notes = {keep_note, &said};
    hs_inspect_report r;
    hs_error err = {0};
    hs_status s = hs_inspect_run(m, g_L.vocab, &o, &fo, NULL, &notes, &r, &err);
    if (s != HS_OK) fail_msg("%s", err.msg);
    assert_non_null(said.s);
    assert_non_null(strstr(said.s, "note: folded the sentence to lower case\n"));

    hs_tokens tk = {0};
    hs_cache c;
    run_cache(TIRED, &tk, &c);
    const int T = (int)tk.n, pos = T - 1;
    assert_int_equal(r.n_tokens, T);
    assert_int_equal(r.pos, pos);
    for (int i = 0; i < T; i++) assert_string_equal(r.labels[i], tk.strs[i]);
    /* the rows: each layer's head average at pos, then every head */
    assert_int_equal(r.n_cols, pos + 1);
    assert_int_equal(r.n_rows, L + L * H);
    for (int l = 0; l < L; l++) {
        char want[16];
        snprintf(want, sizeof want, "L%d", l);
        assert_string_equal(r.row_labels[l], want);
        for (int j = 0; j <= pos; j++)
            assert_true(r.rows[(size_t)l * r.n_cols + j] == head_mean(&c, l, T, pos, j));
    }
    for (int k = 0; k < L * H; k++) {
        const int l = k / H, h = k % H;
        const float *p = hs_cache_getf(&c, "blocks.%d.attn.hook_pattern", l)->data;
        for (int j = 0; j <= pos; j++)
            assert_true(r.rows[(size_t)(L + k) * r.n_cols + j] == p[((size_t)h * T + pos) * T + j]);
    }
    /* the predictions: sorted, a softmax of the cached logits */
    const float *lg = hs_cache_get(&c, "logits")->data + (size_t)pos * V;
    double mx = -INFINITY, z = 0;
    for (int i = 0; i < V; i++) mx = fmax(mx, lg[i]);
    for (int i = 0; i < V; i++) z += exp((double)lg[i] - mx);
    assert_int_equal(r.n_top, 7);
    assert_int_equal(r.top_ids[0], hs_argmax(lg, (size_t)V));
    for (int i = 0; i < r.n_top; i++) {
        assert_true(fabs(r.top_probs[i] - exp((double)lg[r.top_ids[i]] - mx) / z) < 1e-12);
        if (i) assert_true(r.top_probs[i] <= r.top_probs[i - 1]);
    }
    const int vs = hs_tok_id(g_L.vocab, "street");
    assert_int_equal(r.vs_id, vs);
    assert_true(r.logit_diff == (double)lg[r.top_ids[0]] - lg[vs]);

    /* index.json lists every file in the folder, with its size */
    cJSON *idx = read_json(dir, "index.json");
    const cJSON *files = cJSON_GetObjectItem(idx, "files");
    assert_int_equal(cJSON_GetArraySize(files), r.n_files);
    int on_disk = 0;
    DIR *d = opendir(dir);
    for (struct dirent *de; d && (de = readdir(d)) != NULL;) {
        if (de->d_name[0] == '.') continue;
        on_disk++;
        int listed = 0;
        const cJSON *f;
        cJSON_ArrayForEach(f, files)
        {
            if (strcmp(cJSON_GetObjectItem(f, "file")->valuestring, de->d_name) != 0) continue;
            listed = 1;
            const cJSON *b = cJSON_GetObjectItem(f, "bytes");
            struct stat st;
            char *p = hs_path_join(dir, de->d_name);
            assert_int_equal(stat(p, &st), 0);
            free(p);
            if (b) assert_true(b->valuedouble == (double)st.st_size);
        }
        if (!listed) fail_msg("%s is in the folder but not in index.json", de->d_name);
    }
    if (d) closedir(d);
    assert_int_equal(on_disk, r.n_files);
    assert_true(r.n_files > 2 * (1 + 1 + L * H + L)); /* the grid, query row, heads, means */
    cJSON_Delete(idx);

    /* dla.json: the predicted token's logit, the bars summing to it */
    cJSON *dla = read_json(dir, "dla.json");
    assert_int_equal(cJSON_GetObjectItem(dla, "target_id")->valueint, r.top_ids[0]);
    const double logit = cJSON_GetObjectItem(dla, "logit")->valuedouble;
    /* JSON numbers are float32's shortest text (hs_fmt_json_number): the float, exactly */
    assert_true((float)logit == lg[r.top_ids[0]]);
    assert_true(fabs(cJSON_GetObjectItem(dla, "sum_of_values")->valuedouble - logit) < 1e-3);
    cJSON_Delete(dla);

    hs_cache_free(&c);
    hs_tokens_free(&tk);
    hs_inspect_report_free(&r);
    hs_figopts_free(&fo);
    hs_buf_free(&said);
    free(dir);
}

static void a_pair_holds_sentence_b(void **state)
{
    (void)state;
    const int L = g_L.model->cfg.n_layers;
    char *dir = hs_path_join(g_tmp, "pair");
    hs_inspect_opts o;
    hs_inspect_opts_default(&o);
    o.model_path = "checkpoint/circuit_tiny.safetensors";
    o.sentence = TIRED;
    o.sentence2 = WET;
    o.out_dir = dir;
    hs_figopts fo;
    hs_figopts_default(&fo, 72);
    fo.png = fo.svg = 0;
    hs_pool *pool = NULL;
    hs_error err = {0};
    assert_int_equal(hs_pool_create(2, &pool, &err), HS_OK);
    hs_inspect_report r;
    if (hs_inspect_run(g_L.model, g_L.vocab, &o, &fo, pool, NULL, &r, &err) != HS_OK)
        fail_msg("%s", err.msg);
    hs_tokens tk = {0};
    hs_cache c;
    run_cache(WET, &tk, &c);
    const int T = (int)tk.n;
    for (int l = 0; l < L; l++) {
        char name[32];
        snprintf(name, sizeof name, "pair_L%d_mean.json", l);
        cJSON *j = read_json(dir, name);
        const cJSON *b = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "attention"), 1);
        for (int i = 0; i < T; i++)
            for (int k = 0; k <= i; k++) {
                const cJSON *v = cJSON_GetArrayItem(cJSON_GetArrayItem(b, i), k);
                assert_true((float)v->valuedouble == head_mean(&c, l, T, i, k));
            }
        cJSON_Delete(j);
        snprintf(name, sizeof name, "diff_L%d_mean.json", l);
        cJSON_Delete(read_json(dir, name));
    }
    hs_cache_free(&c);
    hs_tokens_free(&tk);
    hs_inspect_report_free(&r);
    hs_pool_destroy(pool);
    hs_figopts_free(&fo);
    free(dir);
}

static void a_refused_input_creates_no_folder(void **state)
{
    (void)state;
    char *dir = hs_path_join(g_tmp, "refused");
    const hs_head bad = {5, 0};
    hs_inspect_opts o;
    hs_inspect_opts_default(&o);
    o.model_path = "checkpoint/circuit_tiny.safetensors";
    o.sentence = TIRED;
    o.out_dir = dir;
    o.only = &bad;
    o.n_only = 1;
    hs_figopts fo;
    hs_figopts_default(&fo, 72);
    hs_inspect_report r;
    hs_error err = {0};
    struct stat st;
    assert_int_equal(hs_inspect_run(g_L.model, g_L.vocab, &o, &fo, NULL, NULL, &r, &err),
                     HS_ERR_INPUT);
    assert_string_equal(err.msg, "head L5H0 is not in the model (2 layers x 4 heads: L0H0..L1H3)");
    assert_int_not_equal(stat(dir, &st), 0);
    hs_inspect_report_free(&r);
    o.only = NULL;
    o.n_only = 0;
    o.has_position = 1;
    o.position = 99;
    assert_int_equal(hs_inspect_run(g_L.model, g_L.vocab, &o, &fo, NULL, NULL, &r, &err),
                     HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "--position 99 is outside the sentence's"));
    assert_int_not_equal(stat(dir, &st), 0);
    hs_inspect_report_free(&r);
    hs_figopts_free(&fo);
    free(dir);
}

static void view_makes_the_folders_page(void **state)
{
    (void)state;
    char *dir = hs_path_join(g_tmp, "tired"), *page = hs_path_join(dir, "index.html");
    const char *dirs[] = {dir};
    hs_view_report r;
    hs_error err = {0};
    if (hs_view_run(dirs, 1, NULL, 0, HS_VIZ_CMAP_VIRIDIS, &r, &err) != HS_OK)
        fail_msg("%s", err.msg);
    assert_string_equal(r.path, page);
    hs_view_report_free(&r);
    /* listed in the folder's index with the size it has, so a later run may replace it */
    struct stat st;
    assert_int_equal(stat(page, &st), 0);
    assert_true(st.st_size > 0);
    assert_int_equal(hs_out_owns(dir, "index.html"), 1);
    /* an existing --out without force is refused and left alone */
    char *out = hs_path_join(g_tmp, "page.html");
    assert_int_equal(hs_write_file_atomic(out, "mine", 4, &err), HS_OK);
    const char *two[] = {dir, dir};
    assert_int_equal(hs_view_run(two, 2, out, 0, HS_VIZ_CMAP_GREYS, &r, &err), HS_ERR_INPUT);
    assert_null(r.path);
    assert_int_equal(stat(out, &st), 0);
    assert_int_equal((int)st.st_size, 4);
    assert_int_equal(hs_view_run(two, 2, out, 1, HS_VIZ_CMAP_GREYS, &r, &err), HS_OK);
    assert_int_equal(stat(out, &st), 0);
    assert_true(st.st_size > 4);
    hs_view_report_free(&r);
    /* inspect run again into the folder keeps view's page (another command's
       file) and lists it again, so view may still replace it */
    hs_inspect_opts o;
    hs_inspect_opts_default(&o);
    o.model_path = "checkpoint/circuit_tiny.safetensors";
    o.sentence = TIRED;
    o.out_dir = dir;
    hs_figopts fo;
    hs_figopts_default(&fo, 72);
    hs_buf said = {0};
    const hs_notes notes = {keep_note, &said};
    hs_inspect_report ir;
    const off_t page_bytes = stat(page, &st) == 0 ? st.st_size : -1;
    if (hs_inspect_run(g_L.model, g_L.vocab, &o, &fo, NULL, &notes, &ir, &err) != HS_OK)
        fail_msg("%s", err.msg);
    hs_inspect_report_free(&ir);
    hs_figopts_free(&fo);
    assert_int_equal(stat(page, &st), 0);
    assert_int_equal((long)st.st_size, (long)page_bytes);
    assert_int_equal(hs_out_owns(dir, "index.html"), 1);
    if (said.s && strstr(said.s, "index.html")) fail_msg("inspect said: %s", said.s);
    hs_buf_free(&said);
    cJSON *idx = read_json(dir, "index.json");
    const cJSON *f, *by = NULL;
    cJSON_ArrayForEach(f, cJSON_GetObjectItem(idx, "files"))
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(f, "file")), "index.html") == 0)
            by = cJSON_GetObjectItem(f, "by");
    assert_string_equal(cJSON_GetStringValue(by), "view");
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(idx, "command")), "inspect");
    cJSON_Delete(idx);
    free(out);
    free(page);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(report_matches_an_independent_run),
        cmocka_unit_test(a_pair_holds_sentence_b),
        cmocka_unit_test(a_refused_input_creates_no_folder),
        cmocka_unit_test(view_makes_the_folders_page),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
