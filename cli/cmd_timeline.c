/*
 * cli/cmd_timeline.c -- `headscope timeline DIR`: circuits over training.
 * For every checkpoint DIR/step-NNNNNN.safetensors (what `train --keep DIR`
 * writes) the loss, the task metric, every head's detector scores and the
 * circuit verdict (tasks/ hs_timeline_run: the same computation as
 * `circuit` on that checkpoint alone); line plots over steps and the numbers
 * as JSON. `--models CKPT...` takes a list of checkpoints instead (Hugging
 * Face folders of a run's revisions: hs_timeline_run_models). Parses the
 * options and prints the report.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "expout.h"

static const char TIMELINE_HELP[] =
    "usage: headscope timeline DIR [--corpus FILE...] [--out OUTDIR] [--json]\n"
    "       headscope timeline --models CKPT... [--steps N,N,...] [--corpus FILE]... [--out OUTDIR] [--json]\n"
    "\n"
    "Reads every checkpoint DIR/step-NNNNNN.safetensors (train --keep DIR) in step\n"
    "order, or with --models the checkpoints given (files or Hugging Face folders,\n"
    "e.g. a run's revisions step1000/ step2000/ ...: each at the step in its name,\n"
    "the digits after its last \"step\", or at --steps, one per checkpoint in the\n"
    "order given; each carrying its task, as a converted headscope run does, or\n"
    "none, as Pythia's public revisions: then scored on 10 sequences of 50 random\n"
    "tokens of the model's vocabulary, each repeated once, BOS first),\n"
    "and computes, for each, what `circuit` computes on it alone: the loss,\n"
    "the task metric (held-out accuracy: repeated-segment tokens for induction,\n"
    "the referent at 14 for Winograd), every head's previous-token and induction\n"
    "scores (and first-noun: attention at 14 on x, for Winograd) and the circuit's\n"
    "verdict. Reports the step of the largest jump of the best induction score\n"
    "and of the largest loss drop (induction), the first step where the circuit\n"
    "holds, and for Winograd the first step with decision heads.\n"
    "Text checkpoints (train --task text) are scored as a checkpoint without a task\n"
    "(repeated random tokens of their BPE, no BOS); with --corpus (the run's files)\n"
    "drawn among the ids its training part holds, and the held-out loss and the\n"
    "in-context-learning score (loss at token n_ctx-1\n"
    "minus at n_ctx/10, nats; Olsson et al. 2022) and the step of its largest drop.\n"
    "\n"
    "  --corpus FILE...  text checkpoints: the corpus they trained on (files after\n"
    "                 DIR are corpus files too; with --models repeat --corpus)\n"
    "  --out OUTDIR   write timeline.json (every number) and the line plots\n"
    "                 timeline.{png,svg,json} (one line per head; the metric and\n"
    "                 loss on their own panels) into OUTDIR (created if missing)\n"
    "  --json         print timeline.json on stdout instead of the table\n"
    "  --models       the arguments are checkpoints, not one folder\n"
    "  --steps LIST   with --models: their steps, comma-separated, in the order given\n";

/* The report as a table on stdout. */
static void print_table(const hs_timeline_report *r, const char *dir, const char *out)
{
    const int ind = r->induction, txt = r->heldout_icl != NULL;
    printf("%s timeline of %s: %d checkpoints, %d layers x %d heads\n",
           r->text ? "text (repeated random tokens)" : r->repeated ? "induction (repeated random tokens)"
                   : ind ? "induction" : "winograd", dir, r->n, r->L, r->H);
    if (ind && r->n > 0 && r->points[0].n_heldout > r->points[0].n_seqs)
        printf("scored as circuit scores: on the first %d of the %d held-out sequences (train's accuracy "
               "is on all %d)\n", r->points[0].n_seqs, r->points[0].n_heldout, r->points[0].n_heldout);
    if (txt) printf("%8s %8s %9s ", "step", "text loss", "text ICL");
    else printf("%8s ", "step");
    printf("%8s %8s  %-14s %-10s %s\n", ind ? "seg loss" : "loss", "acc", ind ? "best ind." : "best 1st-noun",
           ind ? "holds" : "step 2", "heads / verdict");
    for (int i = 0; i < r->n; i++) {
        const hs_timeline_point *p = &r->points[i];
        char icl[HS_FIXED_BUF];
        if (txt) printf("%8d %9.4f %9s ", r->steps[i], r->heldout_loss[i], hs_fmt_fixed(icl, r->heldout_icl[i], 4, 0));
        else printf("%8d ", r->steps[i]);
        printf("%8.4f %7.1f%%  %-14.3f %-10s %s\n", ind ? p->seg_loss : p->loss, 100 * p->accuracy, r->best[i],
               p->holds ? "yes" : "no", p->holds ? p->heads : p->verdict);
    }
    if (r->jump >= 0) printf("largest induction-score jump: at step %d\n", r->steps[r->jump]);
    char d[HS_FIXED_BUF];
    if (r->icl_jump >= 0)
        printf("largest drop of the held-out ICL score (loss at token %d minus %d): at step %d (%s nats)\n",
               r->icl_late, r->icl_early, r->steps[r->icl_jump],
               hs_fmt_fixed(d, r->heldout_icl[r->icl_jump] - r->heldout_icl[r->icl_jump - 1], 4, 1));
    if (r->drop >= 0)
        printf("largest %s drop: at step %d\n", ind ? "repeated-segment loss" : "loss", r->steps[r->drop]);
    if (r->first_hold >= 0)
        printf(ind ? "circuit first holds at step %d\n"
                   : "step 2 (decision heads by patching) first holds at step %d; step 1 is "
                     "judged in each checkpoint's verdict\n",
               r->steps[r->first_hold]);
    if (!ind && r->first_decision >= 0)
        printf("decision heads first appear at step %d\n", r->steps[r->first_decision]);
    if (out) printf("wrote %d files to %s (listed in %s/index.json)\n", r->n_files, out, out);
}

int cmd_timeline(int argc, char **argv)
{
    enum { O_OUT = 256, O_JSON, O_MODELS, O_STEPS, O_CORPUS };
    static const struct option opts[] = {{"out", required_argument, 0, O_OUT},
                                         {"corpus", required_argument, 0, O_CORPUS},
                                         {"json", no_argument, 0, O_JSON},
                                         {"models", no_argument, 0, O_MODELS},
                                         {"steps", required_argument, 0, O_STEPS},
                                         CLI_HELP_OPT,
                                         CLI_FIGOPTS_LONGOPTS,
                                         {0, 0, 0, 0}};
    const char *C = "timeline", *out = NULL, *steps_arg = NULL;
    int json = 0, models = 0, c, n_corpus = 0;
    const char **corpus = calloc((size_t)argc + 1, sizeof *corpus);
    if (!corpus) return cli_usage_error(C, "out of memory");
    hs_figopts fo;
    hs_figopts_default(&fo, 150);
    cli_opts op = {.cmd = C, .help = TIMELINE_HELP, .fo = &fo};
    while ((c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END) {
        switch (c) {
        case CLI_OPT_EXIT: hs_figopts_free(&fo); free(corpus); return op.status;
        case O_CORPUS: corpus[n_corpus++] = optarg; break;
        case O_OUT: out = optarg; break;
        case O_JSON: json = 1; break;
        case O_MODELS: models = 1; break;
        case O_STEPS: steps_arg = optarg; break;
        }
    }
    /* timeline DIR --corpus F1 F2 ...: the arguments after DIR are corpus files */
    if (!models && n_corpus > 0) {
        for (int i = optind + 1; i < argc; i++) corpus[n_corpus++] = argv[i];
        if (argc > optind + 1) argc = optind + 1;
    }
    if (!models && optind + 1 != argc) {
        hs_figopts_free(&fo);
        free(corpus);
        return cli_usage_error(C, "needs exactly one folder of checkpoints (train --keep DIR), or "
                               "--models CKPT...");
    }
    if (models && optind >= argc) {
        hs_figopts_free(&fo);
        free(corpus);
        return cli_usage_error(C, "--models needs the checkpoints");
    }
    const int n = argc - optind;
    int *steps = NULL;
    if (steps_arg && !models) {
        hs_figopts_free(&fo);
        free(corpus);
        return cli_usage_error(C, "--steps goes with --models");
    }
    if (steps_arg) {
        steps = calloc((size_t)n, sizeof *steps);
        const char *p = steps_arg;
        int k = 0, bad = steps == NULL;
        while (!bad) {
            char *end;
            const long v = strtol(p, &end, 10);
            bad = end == p || v < 0 || v > 1000000000L || k >= n || (*end != ',' && *end != '\0');
            if (bad) break;
            steps[k++] = (int)v;
            if (*end == '\0') break;
            p = end + 1;
        }
        if (bad || k != n) {
            free(steps);
            free(corpus);
            hs_figopts_free(&fo);
            return cli_usage_error(C, "--steps needs one step per checkpoint (%d), comma-separated, "
                                   "got '%s'", n, steps_arg);
        }
    }
    const char *dir = models ? "--models" : argv[optind];
    const hs_notes notes = cli_notes(C);
    hs_timeline_report r;
    hs_error err = {0};
    int rc = 1;
    const hs_timeline_corpus tc = {corpus, (size_t)n_corpus};
    const hs_status st = models ? hs_timeline_run_models((const char *const *)argv + optind, steps, n, out,
                                                         &tc, &fo, NULL, &notes, &r, &err)
                                : hs_timeline_run(dir, out, &tc, &fo, NULL, &notes, &r, &err);
    free(steps);
    free(corpus);
    if (st != HS_OK) {
        rc = cli_error(C, &err);
    } else if (json) {
        char *t = hs_json_print(r.json);
        if (t) {
            puts(t);
            free(t);
            rc = cli_stdout_done(C);
        }
    } else {
        print_table(&r, dir, out);
        rc = cli_stdout_done(C);
    }
    hs_timeline_report_free(&r);
    hs_figopts_free(&fo);
    return rc;
}
