/*
 * cli/cmd_demo.c -- `headscope demo`: the main job in one command. Trains the
 * default two-block model (or reuses the one it trained before with the same
 * settings), inspects the chapter's two sentences, and verifies the two-step
 * referent circuit. Pure wiring: the library's training run (hs_train_run,
 * shown as `train` shows it) and the inspect and circuit subcommands.
 */
#include <getopt.h>
#include <stdio.h>
#include <unistd.h>

#include "cli.h"
#include "expout.h"
#include "util.h"

static const char DEMO_HELP[] =
    "usage: headscope demo [--out DIR] [--retrain]\n"
    "\n"
    "Trains the default model (2 layers, 4 heads, d_model 64, winograd task, seed 0,\n"
    "the default step budget) into DIR/model.safetensors -- or reuses the one found\n"
    "there if it was trained with exactly these settings -- then runs\n"
    "  headscope inspect on the chapter's two sentences\n"
    "    \"the animal did not cross the street because it was too tired , so the\"\n"
    "    \"the animal did not cross the street because it was too wet , so the\"\n"
    "  into DIR/inspect-tired and DIR/inspect-wet, and\n"
    "  headscope circuit into DIR/circuit,\n"
    "and prints where everything was written.\n"
    "  --out DIR    where to write (default: headscope-demo)\n"
    "  --retrain    train again, replacing DIR/model.safetensors (needed when it\n"
    "               was not trained with the default settings)\n";

static const char *const SENTENCES[2][2] = {
    {"tired", "the animal did not cross the street because it was too tired , so the"},
    {"wet", "the animal did not cross the street because it was too wet , so the"},
};

int cmd_demo(int argc, char **argv)
{
    enum { O_OUT = CLI_OPT_OWN_FIRST, O_RETRAIN };
    static const struct option opts[] = {{"out", required_argument, 0, O_OUT},
                                         {"retrain", no_argument, 0, O_RETRAIN},
                                         CLI_HELP_OPT,
                                         {0, 0, 0, 0}};
    const char *C = "demo", *dir = "headscope-demo";
    int retrain = 0, c;
    cli_opts op = {.cmd = C, .help = DEMO_HELP};
    while ((c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END) {
        switch (c) {
        case CLI_OPT_EXIT: return op.status;
        case O_OUT: dir = optarg; break;
        case O_RETRAIN: retrain = 1; break;
        }
    }
    if (optind < argc) return cli_usage_error(C, "unexpected argument '%s'", argv[optind]);
    hs_error err = {0};
    if (hs_mkdir(dir, &err) != HS_OK) return cli_error(C, &err);
    char *model = hs_path_join(dir, "model.safetensors");
    char *sub[3] = {hs_path_join(dir, "inspect-tired"), hs_path_join(dir, "inspect-wet"),
                    hs_path_join(dir, "circuit")};
    int rc = 1;
    if (!model || !sub[0] || !sub[1] || !sub[2]) {
        fprintf(stderr, "headscope demo: out of memory\n");
        goto done;
    }
    if (!retrain && hs_train_is_default_run(model)) {
        printf("== reusing %s (trained with the default settings)\n", model);
    } else {
        if (!retrain && access(model, F_OK) == 0) {
            fprintf(stderr, "headscope demo: %s exists but cannot be read or was not trained with "
                            "the default settings; --retrain replaces it\n", model);
            goto done;
        }
        printf("== headscope train --out %s%s\n", model, retrain ? " --force" : "");
        fflush(stdout);
        hs_train_job job;
        hs_train_job_default(&job);
        job.out = model;
        job.force = retrain;
        if ((rc = cli_train("train", &job)) != 0) goto done;
    }
    for (int i = 0; i < 2; i++) {
        printf("\n== headscope inspect --model %s --sentence \"%s\" --out %s\n", model,
               SENTENCES[i][1], sub[i]);
        fflush(stdout);
        char *a[] = {"inspect", "--model", model, "--sentence", (char *)SENTENCES[i][1], "--out",
                     sub[i], NULL};
        if ((rc = cmd_inspect(7, a)) != 0) goto done;
    }
    printf("\n== headscope circuit --model %s --out %s\n", model, sub[2]);
    fflush(stdout);
    {
        char *a[] = {"circuit", "--model", model, "--out", sub[2], NULL};
        if ((rc = cmd_circuit(5, a)) != 0) goto done;
    }
    printf("\n== written:\n  %s  the trained model (safetensors)\n"
           "  %s/  attention grid, per-head figures, DLA, predictions (index.json lists them)\n"
           "  %s/  the same for the `wet` sentence\n"
           "  %s/  report.json and figures of the circuit check\n",
           model, sub[0], sub[1], sub[2]);
    rc = 0;
done:
    free(model);
    for (int i = 0; i < 3; i++) free(sub[i]);
    return rc;
}
