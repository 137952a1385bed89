/*
 * tests/test_train_run.c -- the training run and the timeline as library
 * calls (tasks.h: hs_train_run, hs_timeline_run), on a tiny Winograd model
 * (1 layer, d_model 16, 2 heads, batch 8, 20 steps) kept every 10 steps:
 *   - the progress callback sees steps 1..20 in order, each with a finite
 *     loss, logged every 5th; on_start runs once, before the first step;
 *     the description comes as notes;
 *   - the saved model loads, its `train` metadata says 20 steps done, and
 *     the accuracy the run reports is hs_winograd_score's on it;
 *   - resuming from the step-10 checkpoint to 20 gives the parameters of the
 *     uninterrupted run, bit for bit;
 *   - an existing out is refused (force replaces it);
 *   - the timeline of the kept folder: 3 points at steps 0, 10, 20, each
 *     equal to hs_timeline_point_winograd on that checkpoint alone; the
 *     folder's index lists files that exist.
 * Working directory: tests/. Scratch: $HS_TEST_TMP.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "circuits/circuits.h"
#include "tasks/tasks.h"
#include "model/checkpoint.h"

static char g_tmp[512];

static char *tmp_path(const char *name)
{
    char *p = hs_path_join(g_tmp, name);
    assert_non_null(p);
    return p;
}

/* What the callbacks saw. */
typedef struct {
    int n_steps;            /* progress calls */
    int steps[64];          /* their steps */
    int logged[64];
    int bad_loss;           /* a loss that was not finite */
    int started;            /* on_start calls */
    int started_at;         /* progress calls before on_start */
    int n_notes;
    char notes[8][512];
} seen;

static void on_progress(void *ctx, const hs_train_progress *p)
{
    seen *s = ctx;
    if (s->n_steps < 64) {
        s->steps[s->n_steps] = p->step;
        s->logged[s->n_steps] = p->logged;
    }
    s->n_steps++;
    if (!isfinite(p->loss)) s->bad_loss = 1;
}

static void on_start(void *ctx)
{
    seen *s = ctx;
    s->started++;
    s->started_at = s->n_steps;
}

static void on_note(void *ctx, hs_note_kind kind, const char *line)
{
    seen *s = ctx;
    (void)kind;
    if (s->n_notes < 8) snprintf(s->notes[s->n_notes], sizeof s->notes[0], "%s", line);
    s->n_notes++;
}

/* The tiny model's job, writing out (and keeping into keep when not NULL). */
static hs_train_job tiny_job(const char *out, const char *keep, seen *s)
{
    hs_train_job j;
    hs_train_job_default(&j);
    j.cfg.n_layers = 1, j.cfg.d_model = 16, j.cfg.n_heads = 2;
    j.train.batch = 8, j.train.steps = 20, j.train.threads = 1;
    j.out = out, j.keep = keep;
    j.checkpoint_every = 10, j.eval_every = 10, j.log_every = 5;
    j.save_optimizer = 1;
    j.progress = on_progress, j.on_start = on_start, j.ctx = s;
    return j;
}

static void run_ok(const hs_train_job *j, seen *s, hs_train_result *r)
{
    hs_notes notes = {on_note, s};
    hs_error err = {0};
    if (hs_train_run(j, &notes, r, &err) != HS_OK) fail_msg("hs_train_run: %s", err.msg);
}

/* The uninterrupted run, made once by setup. */
static seen g_seen;
static hs_train_result g_r;

static int setup(void **state)
{
    (void)state;
    const char *t = getenv("HS_TEST_TMP");
    const char *base = t && t[0] ? t : "/tmp";
    mkdir(base, 0777);
    snprintf(g_tmp, sizeof g_tmp, "%s/train_run.%ld", base, (long)getpid());
    if (mkdir(g_tmp, 0777) != 0) return -1;
    char *out = hs_path_join(g_tmp, "a.safetensors"), *keep = hs_path_join(g_tmp, "keep");
    hs_train_job j = tiny_job(out, keep, &g_seen);
    hs_notes notes = {on_note, &g_seen};
    hs_error err = {0};
    hs_status st = hs_train_run(&j, &notes, &g_r, &err);
    if (st != HS_OK) fprintf(stderr, "setup: %s\n", err.msg);
    free(out);
    free(keep);
    return st == HS_OK ? 0 : -1;
}

static void progress_sees_every_step_in_order(void **state)
{
    (void)state;
    assert_int_equal(g_seen.n_steps, 20);
    for (int i = 0; i < 20; i++) {
        assert_int_equal(g_seen.steps[i], i + 1);
        assert_int_equal(g_seen.logged[i], (i + 1) % 5 == 0);
    }
    assert_false(g_seen.bad_loss);
    assert_int_equal(g_seen.started, 1);
    assert_int_equal(g_seen.started_at, 0);
    /* the description, as notes before training */
    assert_int_equal(g_seen.n_notes, 2);
    assert_non_null(strstr(g_seen.notes[0], "task winograd, split seed 0: "));
    assert_non_null(strstr(g_seen.notes[1], "model: 1 layer, d_model 16, 2 heads x 8, d_mlp 64"));
    assert_int_equal(g_r.steps, 20);
    assert_int_equal(g_r.accuracy_step, 20);
    assert_false(g_r.induction);
    assert_false(g_r.stopped);
}

static void saved_model_says_its_steps_and_accuracy(void **state)
{
    (void)state;
    char *out = tmp_path("a.safetensors");
    hs_loaded ld;
    hs_error err = {0};
    if (hs_load(out, HS_NEED_TASK, NULL, NULL, &ld, &err) != HS_OK) fail_msg("hs_load: %s", err.msg);
    cJSON *tm = cJSON_Parse(ld.meta.train);
    assert_non_null(tm);
    assert_int_equal((int)cJSON_GetObjectItemCaseSensitive(tm, "steps_done")->valuedouble, 20);
    assert_int_equal((int)cJSON_GetObjectItemCaseSensitive(tm, "heldout_accuracy_step")->valuedouble, 20);
    cJSON_Delete(tm);
    hs_wg_score sc;
    assert_int_equal(hs_winograd_score(ld.model, ld.task, HS_SPLIT_HELDOUT, NULL, &sc, &err), HS_OK);
    assert_true(hs_wg_score_accuracy(&sc) == g_r.accuracy);
    /* the kept ones: the init, every 10 steps, the last */
    static const char *const kept[3] = {"keep/step-000000.safetensors", "keep/step-000010.safetensors",
                                        "keep/step-000020.safetensors"};
    for (int i = 0; i < 3; i++) {
        char *k = tmp_path(kept[i]);
        hs_model *m = NULL;
        assert_int_equal(hs_checkpoint_load(k, &m, NULL, NULL, &err), HS_OK);
        assert_non_null(m->m_mem); /* save_optimizer */
        if (i == 2) assert_memory_equal(m->param_mem, ld.model->param_mem, m->n_params * sizeof(float));
        hs_model_destroy(m);
        free(k);
    }
    hs_loaded_free(&ld);
    free(out);
}

static void resume_from_step_10_gives_the_bits_of_the_run(void **state)
{
    (void)state;
    char *out = tmp_path("a.safetensors"), *out2 = tmp_path("b.safetensors");
    char *k10 = tmp_path("keep/step-000010.safetensors");
    seen s;
    memset(&s, 0, sizeof s);
    hs_train_job j = tiny_job(out2, NULL, &s);
    j.train.steps = -1; /* the checkpoint's budget */
    j.resume = k10;
    hs_train_result r;
    run_ok(&j, &s, &r);
    assert_int_equal(s.n_steps, 10);
    assert_int_equal(s.steps[0], 11);
    assert_int_equal(r.start_step, 10);
    assert_int_equal(r.steps, 20);
    assert_true(r.accuracy == g_r.accuracy);
    hs_model *a = NULL, *b = NULL;
    hs_error err = {0};
    assert_int_equal(hs_checkpoint_load(out, &a, NULL, NULL, &err), HS_OK);
    assert_int_equal(hs_checkpoint_load(out2, &b, NULL, NULL, &err), HS_OK);
    assert_int_equal(a->n_params, b->n_params);
    assert_memory_equal(a->param_mem, b->param_mem, a->n_params * sizeof(float));
    hs_model_destroy(a);
    hs_model_destroy(b);
    free(out);
    free(out2);
    free(k10);
}

static void an_existing_out_is_refused(void **state)
{
    (void)state;
    char *out = tmp_path("a.safetensors");
    seen s;
    memset(&s, 0, sizeof s);
    hs_train_job j = tiny_job(out, NULL, &s);
    hs_train_result r;
    hs_error err = {0};
    assert_int_equal(hs_train_run(&j, NULL, &r, &err), HS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "already exists; use --force to replace it"));
    assert_int_equal(s.n_steps, 0);
    free(out);
}

static void timeline_points_equal_each_checkpoint_alone(void **state)
{
    (void)state;
    char *keep = tmp_path("keep"), *k10 = tmp_path("keep/step-000010.safetensors"), *tl = tmp_path("tl");
    hs_error err = {0};
    hs_figopts fo;
    hs_figopts_default(&fo, 150);
    fo.png = fo.svg = fo.pdf = 0; /* the numbers: no font needed */
    hs_timeline_report tr;
    if (hs_timeline_run(keep, tl, NULL, &fo, NULL, NULL, &tr, &err) != HS_OK) fail_msg("timeline: %s", err.msg);
    assert_int_equal(tr.n, 3);
    assert_int_equal(tr.steps[0], 0);
    assert_int_equal(tr.steps[1], 10);
    assert_int_equal(tr.steps[2], 20);
    assert_false(tr.induction);
    assert_int_equal(tr.L * tr.H, 2);
    hs_loaded l10;
    hs_timeline_point p;
    assert_int_equal(hs_load(k10, HS_NEED_ANY_TASK, NULL, NULL, &l10, &err), HS_OK);
    assert_int_equal(hs_timeline_point_winograd(l10.model, l10.task, &p, &err), HS_OK);
    assert_true(tr.points[1].loss == p.loss);
    assert_true(tr.points[1].accuracy == p.accuracy);
    assert_memory_equal(tr.points[1].first_noun, p.first_noun, 2 * sizeof(float));
    assert_true(tr.best[1] == fmax(0.0, fmax(p.first_noun[0], p.first_noun[1])));
    hs_timeline_point_free(&p);
    hs_loaded_free(&l10);
    assert_true(tr.points[2].accuracy == g_r.accuracy); /* the last point is the run's end */
    const cJSON *cks = cJSON_GetObjectItemCaseSensitive(tr.json, "checkpoints");
    assert_int_equal(cJSON_GetArraySize(cks), 3);
    assert_int_equal((int)cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cks, 1), "step")->valuedouble, 10);

    /* the folder: index.json lists timeline.json, timeline_numbers.json and itself, all there */
    char *ip = tmp_path("tl/index.json");
    unsigned char *buf = NULL;
    size_t nb = 0;
    assert_int_equal(hs_read_file(ip, &buf, &nb, &err), HS_OK);
    cJSON *idx = cJSON_Parse((const char *)buf);
    assert_non_null(idx);
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(idx, "files");
    assert_int_equal(tr.n_files, 3);
    assert_int_equal(cJSON_GetArraySize(files), tr.n_files);
    static const char *const want[3] = {"timeline.json", "timeline_numbers.json", "index.json"};
    for (int i = 0; i < 3; i++) {
        const char *name = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(files, i), "file")->valuestring;
        assert_string_equal(name, want[i]);
        char *fp = hs_path_join(tl, name);
        assert_int_equal(access(fp, F_OK), 0);
        free(fp);
    }
    cJSON_Delete(idx);
    free(buf);
    free(ip);
    hs_timeline_report_free(&tr);
    hs_figopts_free(&fo);
    free(keep);
    free(k10);
    free(tl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(progress_sees_every_step_in_order),
        cmocka_unit_test(saved_model_says_its_steps_and_accuracy),
        cmocka_unit_test(resume_from_step_10_gives_the_bits_of_the_run),
        cmocka_unit_test(an_existing_out_is_refused),
        cmocka_unit_test(timeline_points_equal_each_checkpoint_alone),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
