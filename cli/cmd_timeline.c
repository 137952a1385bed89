/*
 * cli/cmd_timeline.c -- `headscope timeline DIR`: circuits over training.
 * For every checkpoint DIR/step-NNNNNN.safetensors (what `train --keep DIR`
 * writes) the loss, the task metric, every head's detector scores and the
 * circuit verdict (tasks/ hs_timeline_point_*, the same computation as
 * `circuit` on that checkpoint alone); line plots over steps and the numbers
 * as JSON. Holds no analysis.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "expout.h"

static const char TIMELINE_HELP[] =
    "usage: headscope timeline DIR [--out OUTDIR] [--json]\n"
    "\n"
    "Reads every checkpoint DIR/step-NNNNNN.safetensors (train --keep DIR) in step\n"
    "order and computes, for each, what `circuit` computes on it alone: the loss,\n"
    "the task metric (held-out accuracy: repeated-segment tokens for induction,\n"
    "the referent at 14 for Winograd), every head's previous-token and induction\n"
    "scores (and first-noun: attention at 14 on x, for Winograd) and the circuit's\n"
    "verdict. Reports the step of the largest jump of the best induction score\n"
    "and of the largest loss drop (induction), the first step where the circuit\n"
    "holds, and for Winograd the first step with decision heads.\n"
    "\n"
    "  --out OUTDIR   write timeline.json (every number) and the line plots\n"
    "                 timeline.{png,svg,json} (one line per head; the metric and\n"
    "                 loss on their own panels) into OUTDIR (created if missing)\n"
    "  --json         print timeline.json on stdout instead of the table\n";

typedef struct {
    int step;
    char *path;
} ckpt;

static int cmp_ckpt(const void *a, const void *b)
{
    return ((const ckpt *)a)->step - ((const ckpt *)b)->step;
}

/* The step-NNNNNN.safetensors files of dir, sorted. -1 after printing. */
static int list_ckpts(const char *dir, ckpt **out)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "headscope timeline: cannot open folder %s: %s (timeline takes the folder of "
                        "train --keep DIR)\n", dir, strerror(errno));
        return -1;
    }
    ckpt *v = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int step, len = 0;
        if (sscanf(e->d_name, "step-%d.safetensors%n", &step, &len) != 1 || e->d_name[len] != '\0' ||
            strlen(e->d_name) != strlen("step-000000.safetensors") || step < 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            ckpt *nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv) break;
            v = nv;
        }
        v[n].step = step;
        v[n].path = hs_path_join(dir, e->d_name);
        if (!v[n].path) break;
        n++;
    }
    closedir(d);
    qsort(v, (size_t)n, sizeof *v, cmp_ckpt);
    *out = v;
    return n;
}

static cJSON *farr(const float *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(hs_f32_shortest(v[i])));
    return a;
}

static void add_num(cJSON *o, const char *k, double v)
{
    if (isfinite(v)) cJSON_AddNumberToObject(o, k, v);
    else cJSON_AddNullToObject(o, k);
}

int cmd_timeline(int argc, char **argv)
{
    enum { O_OUT = 256, O_JSON };
    static const struct option opts[] = {{"out", required_argument, 0, O_OUT},
                                         {"json", no_argument, 0, O_JSON},
                                         CLI_HELP_OPT,
                                         CLI_FIGOPTS_LONGOPTS,
                                         {0, 0, 0, 0}};
    const char *C = "timeline", *out = NULL, *dir = NULL;
    int json = 0, c;
    hs_figopts fo;
    hs_figopts_default(&fo, 150);
    cli_opts op = {.cmd = C, .help = TIMELINE_HELP, .fo = &fo};
    while ((c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END) {
        switch (c) {
        case CLI_OPT_EXIT: hs_figopts_free(&fo); return op.status;
        case O_OUT: out = optarg; break;
        case O_JSON: json = 1; break;
        }
    }
    if (optind + 1 != argc) {
        hs_figopts_free(&fo);
        return cli_usage_error(C, "needs exactly one folder of checkpoints (train --keep DIR)");
    }
    dir = argv[optind];
    ckpt *ck = NULL;
    int n = list_ckpts(dir, &ck), rc = 1;
    hs_timeline_point *pts = NULL;
    int *steps = NULL, L = 0, H = 0, induction = -1;
    cJSON *root = NULL;
    hs_outdir od = {0};
    if (n < 0) goto done;
    if (n == 0) {
        fprintf(stderr, "headscope timeline: %s holds no step-NNNNNN.safetensors checkpoints (train --keep %s)\n",
                dir, dir);
        goto done;
    }
    pts = calloc((size_t)n, sizeof *pts);
    steps = calloc((size_t)n, sizeof *steps);
    if (!pts || !steps) {
        fprintf(stderr, "headscope timeline: out of memory\n");
        goto done;
    }
    if (out) {
        /* the checkpoints are inputs: never replaced or removed by the output folder */
        const char **inputs = calloc((size_t)n + 1, sizeof *inputs);
        if (!inputs) {
            fprintf(stderr, "headscope timeline: out of memory\n");
            goto done;
        }
        for (int i = 0; i < n; i++) inputs[i] = ck[i].path;
        int bad = cli_figopts_font(C, &fo) || cli_outdir_open(&od, C, out, &fo, inputs);
        free(inputs);
        if (bad) goto done;
    }
    for (int i = 0; i < n; i++) {
        hs_loaded ld;
        hs_error err = {0};
        if (cli_load(C, ck[i].path, 2, &ld)) goto done;
        int is_ind = ld.ind != NULL;
        if (induction >= 0 && (is_ind != induction || ld.model->cfg.n_layers != L || ld.model->cfg.n_heads != H)) {
            fprintf(stderr, "headscope timeline: %s is not from the same run (task or shape differs from the "
                            "first checkpoint)\n", ck[i].path);
            hs_loaded_free(&ld);
            goto done;
        }
        induction = is_ind;
        L = ld.model->cfg.n_layers;
        H = ld.model->cfg.n_heads;
        hs_status s = is_ind ? hs_timeline_point_induction(ld.model, ld.ind, &pts[i], &err)
                             : hs_timeline_point_winograd(ld.model, ld.task, &pts[i], &err);
        hs_loaded_free(&ld);
        if (s != HS_OK) {
            fprintf(stderr, "headscope timeline: %s: %s\n", ck[i].path, err.msg);
            goto done;
        }
        steps[i] = ck[i].step;
    }

    /* summary numbers */
    double *best_ind = calloc((size_t)n, sizeof *best_ind), *lossv = calloc((size_t)n, sizeof *lossv);
    if (!best_ind || !lossv) {
        free(best_ind);
        free(lossv);
        fprintf(stderr, "headscope timeline: out of memory\n");
        goto done;
    }
    int first_hold = -1, first_decision = -1;
    for (int i = 0; i < n; i++) {
        best_ind[i] = 0.0;
        for (int k = H; k < L * H; k++) best_ind[i] = fmax(best_ind[i], pts[i].ind[k]);
        lossv[i] = induction ? pts[i].seg_loss : pts[i].loss;
        if (pts[i].holds && first_hold < 0) first_hold = i;
        if (pts[i].n_decision > 0 && first_decision < 0) first_decision = i;
    }
    const int jump = induction && L > 1 ? hs_timeline_jump(best_ind, n, 1) : -1;
    const int drop = hs_timeline_jump(lossv, n, -1);
    free(best_ind);

    root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "dir", dir);
    cJSON_AddStringToObject(root, "task", induction ? "induction" : "winograd");
    cJSON_AddNumberToObject(root, "n_layers", L);
    cJSON_AddNumberToObject(root, "n_heads", H);
    cJSON *sum = cJSON_AddObjectToObject(root, "summary");
    if (jump >= 0) {
        cJSON_AddNumberToObject(sum, "induction_jump_step", steps[jump]);
    }
    if (drop >= 0) {
        cJSON_AddNumberToObject(sum, "loss_drop_step", steps[drop]);
        cJSON_AddNumberToObject(sum, "loss_drop", lossv[drop - 1] - lossv[drop]);
        cJSON_AddStringToObject(sum, "loss_drop_of", induction ? "repeated-segment loss" : "held-out loss");
    }
    add_num(sum, "first_step_circuit_holds", first_hold >= 0 ? steps[first_hold] : NAN);
    if (!induction) add_num(sum, "first_step_decision_heads", first_decision >= 0 ? steps[first_decision] : NAN);
    free(lossv);
    cJSON *arr = cJSON_AddArrayToObject(root, "checkpoints");
    for (int i = 0; i < n; i++) {
        const hs_timeline_point *p = &pts[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "file", ck[i].path);
        cJSON_AddNumberToObject(o, "step", steps[i]);
        add_num(o, "loss", p->loss);
        add_num(o, "accuracy", p->accuracy);
        if (induction) {
            add_num(o, "segment_loss", p->seg_loss);
            add_num(o, "icl_score", p->icl);
        }
        cJSON_AddItemToObject(o, "previous_token", farr(p->prev, L * H));
        cJSON_AddItemToObject(o, "induction", farr(p->ind, L * H));
        if (p->first_noun) cJSON_AddItemToObject(o, "first_noun", farr(p->first_noun, L * H));
        cJSON_AddBoolToObject(o, "holds", p->holds);
        if (!induction) cJSON_AddBoolToObject(o, "step1_holds", p->step1);
        cJSON_AddStringToObject(o, "heads", p->heads);
        cJSON_AddStringToObject(o, "verdict", p->verdict);
    }
    cJSON *names = cJSON_AddArrayToObject(root, "head_names");
    for (int k = 0; k < L * H; k++) {
        char nm[32];
        snprintf(nm, sizeof nm, "L%dH%d", k / H, k % H);
        cJSON_AddItemToArray(names, cJSON_CreateString(nm));
    }

    if (out) {
        /* panels: the task's head score per head, previous-token per head, metric, loss */
        const int LH = L * H;
        float *x = malloc((size_t)n * sizeof *x);
        float *y0 = malloc((size_t)LH * n * sizeof *y0), *y1 = malloc((size_t)LH * n * sizeof *y1);
        float *y2 = malloc((size_t)n * sizeof *y2), *y3 = malloc((size_t)n * 2 * sizeof *y3);
        char (*hn)[32] = calloc((size_t)LH, sizeof *hn);
        const char **hl = calloc((size_t)LH, sizeof *hl);
        int bad = !x || !y0 || !y1 || !y2 || !y3 || !hn || !hl;
        hs_viz_figure *f = NULL;
        cJSON *j = NULL;
        hs_error err = {0};
        if (!bad) {
            for (int k = 0; k < LH; k++) {
                snprintf(hn[k], sizeof hn[0], "L%dH%d", k / H, k % H);
                hl[k] = hn[k];
            }
            for (int i = 0; i < n; i++) {
                x[i] = (float)steps[i];
                for (int k = 0; k < LH; k++) {
                    y0[k * n + i] = induction ? pts[i].ind[k] : pts[i].first_noun[k];
                    y1[k * n + i] = pts[i].prev[k];
                }
                y2[i] = (float)pts[i].accuracy;
                y3[i] = (float)pts[i].loss;
                y3[n + i] = (float)(induction ? pts[i].seg_loss : NAN);
            }
            static const char *const ACC[1] = {"held-out accuracy"};
            static const char *const LOSS_I[2] = {"loss, every token", "loss, repeated segment"};
            static const char *const LOSS_W[1] = {"held-out loss"};
            hs_viz_panel P[4] = {
                {y0, (size_t)LH, hl, induction ? "induction score (second occurrence -> token after the first)"
                                               : "first-noun score (attention at 14 on x)",
                 "score", 0.0, 1.0, 0},
                {y1, (size_t)LH, hl, "previous-token score (TL mul)", "score", 0.0, 1.0, 0},
                {y2, 1, ACC, induction ? "repeated-segment accuracy (held-out)" : "referent accuracy at 14 (held-out)",
                 "accuracy", 0.0, 1.0, 0},
                {y3, induction ? 2u : 1u, induction ? LOSS_I : LOSS_W, "loss", "nats", 0.0, 0.0, 0}};
            double mark = NAN;
            char mlabel[96] = "";
            if (induction && jump >= 0) {
                mark = steps[jump];
                snprintf(mlabel, sizeof mlabel, "induction jump, step %d", steps[jump]);
            } else if (!induction && first_decision >= 0) {
                mark = steps[first_decision];
                snprintf(mlabel, sizeof mlabel, "decision heads, step %d", steps[first_decision]);
            }
            char title[160];
            snprintf(title, sizeof title, "%s over training (%d checkpoints)",
                     induction ? "induction circuit" : "referent circuit", n);
            hs_viz_options vo = hs_figopts_for(&fo, HS_FIG_SIGNED, 0.0);
            if (n > HS_VIZ_MAX_POINTS) {
                fprintf(stderr, "headscope timeline: %d checkpoints, over the plot's %d; writing timeline.json only\n",
                        n, HS_VIZ_MAX_POINTS);
            } else {
                if (hs_figopts_images(&fo) &&
                    hs_viz_lines_figure(&f, x, (size_t)n, P, 4, title, "training step", mark, mlabel, &vo,
                                        &err) != HS_OK)
                    bad = cli_error(C, &err) + 1;
                if (!bad && hs_figopts_data(&fo) && hs_viz_lines_json(&j, x, (size_t)n, P, 4, title, "training step", &err) != HS_OK)
                    bad = cli_error(C, &err) + 1;
                if (!bad)
                    bad = cli_out_figure(&od, "timeline", &f, j,
                                         "per-head scores, the task metric and the loss over training steps");
            }
        } else {
            fprintf(stderr, "headscope timeline: out of memory\n");
        }
        if (!bad)
            bad = cli_out_json(&od, "timeline_numbers", root,
                               "every checkpoint's loss, metric, per-head detector scores and circuit verdict; "
                               "the steps of the induction jump and the loss drop");
        if (!bad) {
            cJSON *extra = cJSON_CreateObject();
            cJSON_AddStringToObject(extra, "dir", dir);
            bad = cli_out_index(&od, extra);
            cJSON_Delete(extra);
        }
        cJSON_Delete(j);
        hs_viz_figure_destroy(f);
        free(x);
        free(y0);
        free(y1);
        free(y2);
        free(y3);
        free(hn);
        free(hl);
        if (bad) goto done;
    }

    if (json) {
        char *t = cJSON_Print(root);
        if (!t) goto done;
        puts(t);
        cJSON_free(t);
    } else {
        printf("%s timeline of %s: %d checkpoints, %d layers x %d heads\n", induction ? "induction" : "winograd",
               dir, n, L, H);
        printf("%8s %8s %8s  %-14s %-10s %s\n", "step", induction ? "seg loss" : "loss", "acc",
               induction ? "best ind." : "best 1st-noun", induction ? "holds" : "step 2",
               "heads / verdict");
        for (int i = 0; i < n; i++) {
            double b = 0;
            for (int k = induction ? H : 0; k < L * H; k++)
                b = fmax(b, induction ? pts[i].ind[k] : pts[i].first_noun[k]);
            printf("%8d %8.4f %7.1f%%  %-14.3f %-10s %s\n", steps[i], induction ? pts[i].seg_loss : pts[i].loss,
                   100 * pts[i].accuracy, b,
                   pts[i].holds ? "yes" : "no", pts[i].holds ? pts[i].heads : pts[i].verdict);
        }
        if (jump >= 0) printf("largest induction-score jump: at step %d\n", steps[jump]);
        if (drop >= 0) printf("largest %s drop: at step %d\n", induction ? "repeated-segment loss" : "loss",
                              steps[drop]);
        if (first_hold >= 0)
            printf(induction ? "circuit first holds at step %d\n"
                             : "step 2 (decision heads by patching) first holds at step %d; step 1 is "
                               "judged in each checkpoint's verdict\n",
                   steps[first_hold]);
        if (!induction && first_decision >= 0) printf("decision heads first appear at step %d\n", steps[first_decision]);
        if (out) cli_out_say_wrote(&od, NULL);
    }
    if (cli_stdout_done(C)) goto done;
    rc = 0;
done:
    cJSON_Delete(root);
    if (pts)
        for (int i = 0; i < n; i++) hs_timeline_point_free(&pts[i]);
    free(pts);
    free(steps);
    for (int i = 0; i < n; i++) free(ck[i].path);
    free(ck);
    hs_outdir_close(&od);
    hs_figopts_free(&fo);
    return rc;
}
