/*
 * tests/test_run_folders.c -- the library's workflows that write an output
 * folder (experiments/weights_run.c, experiments/figures.c,
 * tasks/circuit_figs.c), called from C on the committed checkpoint
 * (tests/checkpoint/circuit_tiny.safetensors: a Winograd model, 2 layers x 4
 * heads, d_model 32), each read back from the JSON it wrote:
 *   - hs_weights_run: a composition score in composition_K.json equals
 *     hs_composition_scores computed here; a full-OV cell equals W_E W_V W_O
 *     W_U multiplied out by hand (in double, fold none); the copying scores
 *     equal hs_copying_score; every file index.json lists exists; the id
 *     vocabulary's note reaches the caller's notes;
 *   - hs_heads_figures and hs_lens_figures: each figure's values are the
 *     report's matrix, its labels the layers / the sentence's tokens, its
 *     context the model's path and config;
 *   - hs_circuit_write: report.json's numbers are the report struct's, the
 *     patching and ablation figures hold the struct's values, index.json
 *     names the route.
 * Working directory: tests/. Scratch: $HS_TEST_TMP.
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

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "experiments/experiments.h"
#include "circuits/circuits.h"
#include "tasks/tasks.h"

#define MODEL "checkpoint/circuit_tiny.safetensors"
#define SENTENCE "the animal did not cross the street because it was too tired , so the"

static hs_loaded g_ld;

static int setup(void **state)
{
    (void)state;
    hs_error err = {0};
    if (hs_load(MODEL, HS_NEED_TASK, NULL, NULL, &g_ld, &err) != HS_OK) {
        fprintf(stderr, "setup: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    hs_loaded_free(&g_ld);
    return 0;
}

/* $HS_TEST_TMP/name (malloc'd). */
static char *scratch(const char *name)
{
    const char *t = getenv("HS_TEST_TMP");
    char *p = hs_path_join(t ? t : "/tmp", name);
    assert_non_null(p);
    return p;
}

/* dir/name parsed (the caller deletes it); fails the test when it is not JSON. */
static cJSON *read_json(const char *dir, const char *name)
{
    char *path = hs_path_join(dir, name);
    unsigned char *data = NULL;
    size_t n = 0;
    hs_error err = {0};
    assert_non_null(path);
    if (hs_read_file(path, &data, &n, &err) != HS_OK) fail_msg("%s", err.msg);
    cJSON *j = cJSON_Parse((const char *)data);
    if (!j) fail_msg("%s is not JSON", path);
    free(data);
    free(path);
    return j;
}

/* o[key] is v as far as JSON holds it: the one JSON printer writes a
 * float32's shortest text (common's hs_fmt_json_number; integers exactly),
 * so the number read back is v's float32, exactly. */
static void num_is(const cJSON *o, const char *key, double v)
{
    const cJSON *n = cJSON_GetObjectItem(o, key);
    if (!cJSON_IsNumber(n)) fail_msg("%s is not a number", key);
    if (!((float)n->valuedouble == (float)v))
        fail_msg("%s: %.17g in the JSON, %.17g in the report", key, n->valuedouble, v);
}

/* Figure options that write JSON only (no font, no images). */
static hs_figopts json_only(void)
{
    hs_figopts fo;
    hs_figopts_default(&fo, 72);
    fo.png = fo.svg = fo.pdf = 0;
    fo.json = 1;
    return fo;
}

/* Every file index.json lists is in dir. */
static void index_files_exist(const char *dir)
{
    cJSON *idx = read_json(dir, "index.json");
    const cJSON *f;
    int n = 0;
    cJSON_ArrayForEach(f, cJSON_GetObjectItem(idx, "files"))
    {
        char *p = hs_path_join(dir, cJSON_GetObjectItem(f, "file")->valuestring);
        struct stat st;
        assert_int_equal(stat(p, &st), 0);
        free(p);
        n++;
    }
    assert_true(n > 1);
    cJSON_Delete(idx);
}

typedef struct {
    char last[512];
    int n;
} note_log;

static void log_note(void *ctx, hs_note_kind kind, const char *line)
{
    note_log *l = ctx;
    (void)kind;
    snprintf(l->last, sizeof l->last, "%s", line);
    l->n++;
}

static void weights_json_equals_the_probe_and_a_hand_product(void **state)
{
    (void)state;
    const hs_model *m = g_ld.model;
    const hs_config *c = &m->cfg;
    const int NA = c->n_layers * c->n_heads, D = c->d_model, dh = c->d_head, V = c->d_vocab;
    char *dir = scratch("weights_run");
    hs_weights_opts o = hs_weights_opts_default();
    o.model_path = MODEL;
    o.out = dir;
    o.fold = HS_FOLD_NONE;
    o.comp_draws = 40;
    o.vocab_is_ids = 1; /* only says so: the labels stay the vocabulary's */
    hs_figopts fo = json_only();
    note_log log = {{0}, 0};
    const hs_notes notes = {log_note, &log};
    hs_weights_report r;
    hs_error err = {0};
    if (hs_weights_run(m, g_ld.vocab, &o, &fo, NULL, &notes, &r, &err) != HS_OK) fail_msg("%s", err.msg);
    assert_true(log.n >= 1);
    assert_non_null(strstr(log.last, "has no vocabulary; tokens are labelled by id"));
    assert_int_equal(r.L, 2);
    assert_int_equal(r.H, 4);
    assert_int_equal(r.skip_cross_layer, 0);
    index_files_exist(dir);

    /* composition: the JSON's raw score of every reported pair is the probe's */
    hs_comp_scores cs = {0};
    assert_int_equal(hs_composition_scores(m, HS_FOLD_NONE, 40, 0, NULL, &cs, &err), HS_OK);
    cJSON *ck = read_json(dir, "composition_K.json");
    const cJSON *scores = cJSON_GetObjectItem(ck, "scores");
    int reported = 0;
    for (int a = 0; a < NA; a++)
        for (int b = 0; b < NA; b++) {
            const cJSON *v = cJSON_GetArrayItem(cJSON_GetArrayItem(scores, a), b);
            const float want = cs.k[(size_t)a * NA + b];
            if (!isfinite(want)) {
                assert_true(cJSON_IsNull(v));
                continue;
            }
            assert_true(cJSON_IsNumber(v));
            assert_true((float)v->valuedouble == want);
            reported++;
        }
    assert_int_equal(reported, 16); /* layer-0 heads into layer-1 heads */
    num_is(ck, "baseline", cs.baseline);
    assert_string_equal(cJSON_GetObjectItem(ck, "fold")->valuestring, "none");
    assert_string_equal(cJSON_GetObjectItem(ck, "model")->valuestring, MODEL);
    cJSON_Delete(ck);

    /* full OV of L1H2 at (attended token 5, logit 17): W_E[5] W_V W_O W_U[:, 17] */
    const int l = 1, h = 2, t = 5, out = 17;
    const hs_block_params *bp = &m->params.blocks[l];
    double z[64] = {0}, cell = 0;
    assert_true(dh <= 64);
    for (int e = 0; e < dh; e++)
        for (int d = 0; d < D; d++) z[e] += (double)m->params.W_E[(size_t)t * D + d] * bp->W_V[((size_t)h * D + d) * dh + e];
    for (int d = 0; d < D; d++) {
        double w = 0;
        for (int e = 0; e < dh; e++) w += z[e] * bp->W_O[((size_t)h * dh + e) * D + d];
        cell += w * m->params.W_U[(size_t)d * V + out];
    }
    cJSON *ov = read_json(dir, "L1H2_OV.json");
    const double got = cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(ov, "values"), t), out)->valuedouble;
    assert_true(fabs(got - cell) <= 1e-4 * (fabs(cell) + 1e-3));
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(ov, "row_labels"), t)->valuestring,
                        hs_tok_str(g_ld.vocab, t));
    num_is(ov, "copying_score", r.copying[l * 4 + h]); /* float32's digits, as JSON holds it */
    cJSON_Delete(ov);

    /* copying scores: the probe's */
    for (int i = 0; i < NA; i++) {
        double sc, pos;
        const hs_head hh = {i / 4, i % 4};
        assert_int_equal(hs_copying_score(m, hh, HS_FOLD_NONE, &sc, &pos, &err), HS_OK);
        /* weights' 8 heads take the shared W_U W_E (probe/weights.c), one head
           the by-head product: the same K to the last bits */
        assert_true(fabs(sc - r.copying[i]) <= 1e-12 && pos == r.copying_pos[i]);
    }
    hs_comp_scores_free(&cs);
    hs_weights_report_free(&r);
    hs_figopts_free(&fo);
    free(dir);
}

/* The report's matrix [R, C] against a figure JSON's "values". */
static void values_equal(const cJSON *j, const double *want, int R, int C)
{
    const cJSON *vals = cJSON_GetObjectItem(j, "values");
    assert_int_equal(cJSON_GetArraySize(vals), R);
    for (int i = 0; i < R; i++) {
        const cJSON *row = cJSON_GetArrayItem(vals, i);
        assert_int_equal(cJSON_GetArraySize(row), C);
        for (int k = 0; k < C; k++)
            assert_true((float)cJSON_GetArrayItem(row, k)->valuedouble == (float)want[(size_t)i * C + k]);
    }
}

static void experiment_figures_hold_the_reports_matrices(void **state)
{
    (void)state;
    const hs_model *m = g_ld.model;
    hs_error err = {0};
    hs_prompts p = {0};
    assert_int_equal(hs_prompts_sentence(SENTENCE, g_ld.vocab, m->cfg.n_ctx, &p, &err), HS_OK);
    hs_heads_report *hr = calloc(1, sizeof *hr);
    hs_lens_report lr = {0};
    assert_non_null(hr);
    assert_int_equal(hs_heads_run(m, g_ld.vocab, NULL, &p, hs_wg_nouns, HS_WG_N_NOUNS, NULL,
                                  HS_DETECT_MUL, 0, 0, hr, &err), HS_OK);
    assert_int_equal(hs_lens_run(m, NULL, &p, &lr, &err), HS_OK);
    char *dir = scratch("experiment_figures");
    hs_figopts fo = json_only();
    hs_outdir od = {0};
    assert_int_equal(hs_outdir_open(&od, "heads", dir, &fo, NULL, NULL, NULL, &err), HS_OK);
    if (hs_heads_figures(hr, &m->cfg, MODEL, &od, &err) != HS_OK ||
        hs_lens_figures(&lr, &p, g_ld.vocab, &m->cfg, MODEL, &od, &err) != HS_OK ||
        hs_outdir_commit(&od, NULL, &err) != HS_OK)
        fail_msg("%s", err.msg);
    assert_null(od.context); /* restored */
    hs_outdir_close(&od);
    index_files_exist(dir);

    cJSON *j = read_json(dir, "heads_previous-token.json");
    values_equal(j, hr->score[HS_HEADS_PREV_TOKEN], hr->L, hr->H);
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "row_labels"), 1)->valuestring, "L1");
    assert_string_equal(cJSON_GetObjectItem(j, "model")->valuestring, MODEL);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "config"), "n_heads")->valueint, 4);
    cJSON_Delete(j);

    j = read_json(dir, "lens_final.json");
    values_equal(j, lr.p_final, lr.n_points, lr.t);
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "col_labels"), 1)->valuestring, "1 animal");
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "row_labels"), 2)->valuestring,
                        "L1 resid_post");
    cJSON_Delete(j);

    hs_figopts_free(&fo);
    hs_lens_report_free(&lr);
    hs_prompts_free(&p);
    free(hr);
    free(dir);
}

static void circuit_folder_holds_the_reports_numbers(void **state)
{
    (void)state;
    hs_error err = {0};
    hs_circuit_report r;
    if (hs_circuit_run(g_ld.model, g_ld.task, NULL, &r, &err) != HS_OK) fail_msg("%s", err.msg);
    char *dir = scratch("circuit_write");
    hs_figopts fo = json_only();
    hs_outdir od = {0};
    assert_int_equal(hs_outdir_open(&od, "circuit", dir, &fo, NULL, NULL, NULL, &err), HS_OK);
    if (hs_circuit_write(&r, MODEL, &od, &err) != HS_OK) fail_msg("%s", err.msg);
    assert_null(od.context);
    hs_outdir_close(&od);

    /* report.json: the struct's numbers */
    cJSON *rep = read_json(dir, "report.json");
    assert_string_equal(cJSON_GetObjectItem(rep, "model")->valuestring, MODEL);
    const cJSON *acc = cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "heldout"), "accuracy");
    num_is(acc, "crosser", r.acc[HS_CIRC_CROSSER]);
    num_is(acc, "all", r.acc[HS_CIRC_ALL]);
    const cJSON *heads = cJSON_GetObjectItem(rep, "heads");
    assert_int_equal(cJSON_GetArraySize(heads), r.L * r.H);
    for (int k = 0; k < r.L * r.H; k++) {
        const cJSON *h = cJSON_GetArrayItem(heads, k);
        assert_string_equal(cJSON_GetObjectItem(h, "name")->valuestring, r.heads[k].name);
        num_is(h, "copying_score", r.heads[k].copying);
        const cJSON *p14 = cJSON_GetObjectItem(cJSON_GetObjectItem(h, "patching"), "pos14");
        if (isfinite(r.heads[k].patch_pos14[HS_CIRC_PATCH_BOTH]))
            num_is(p14, "both", r.heads[k].patch_pos14[HS_CIRC_PATCH_BOTH]);
    }
    num_is(cJSON_GetObjectItem(rep, "composition"), "baseline", r.comp.baseline);
    cJSON_Delete(rep);

    /* patching figure: [heads, 4], column 2 = pos14 both */
    cJSON *pf = read_json(dir, "patching.json");
    const cJSON *vals = cJSON_GetObjectItem(pf, "values");
    assert_int_equal(cJSON_GetArraySize(vals), r.L * r.H);
    for (int k = 0; k < r.L * r.H; k++) {
        const double v = r.heads[k].patch_pos14[HS_CIRC_PATCH_BOTH];
        const float want = isfinite(v) ? (float)v : 0.0f;
        assert_true((float)cJSON_GetArrayItem(cJSON_GetArrayItem(vals, k), 2)->valuedouble == want);
    }
    assert_string_equal(cJSON_GetObjectItem(pf, "model")->valuestring, MODEL);
    cJSON_Delete(pf);

    /* ablation bars: head k's crosser bar is its accuracy change in points */
    cJSON *ab = read_json(dir, "ablation.json");
    const cJSON *bars = cJSON_GetObjectItem(ab, "values");
    const float want = (float)(100.0 * (r.heads[3].acc_ablated[0] - r.acc[0]));
    assert_true((float)cJSON_GetArrayItem(bars, 6)->valuedouble == want);
    cJSON_Delete(ab);

    /* index.json: every file there, and the route */
    index_files_exist(dir);
    cJSON *idx = read_json(dir, "index.json");
    assert_string_equal(cJSON_GetObjectItem(idx, "route")->valuestring, r.route);
    assert_string_equal(cJSON_GetObjectItem(idx, "command")->valuestring, "circuit");
    cJSON_Delete(idx);

    hs_figopts_free(&fo);
    hs_circuit_report_free(&r);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(weights_json_equals_the_probe_and_a_hand_product),
        cmocka_unit_test(experiment_figures_hold_the_reports_matrices),
        cmocka_unit_test(circuit_folder_holds_the_reports_numbers),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
