/*
 * cli/cmd_demo.c -- `headscope demo`: the main job in one command. Trains the
 * default two-block model (or reuses the one it trained before with the same
 * settings), inspects the chapter's two sentences, and verifies the two-step
 * referent circuit. Pure wiring over the other subcommands.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
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

/* 1 if path holds a model trained by `headscope train` with the defaults. */
static int reusable(const char *path)
{
    hs_model *m = NULL;
    hs_meta meta = {0};
    hs_error err;
    int ok = 0;
    if (hs_checkpoint_load(path, &m, &meta, NULL, &err) != HS_OK) return 0;
    hs_config want = hs_config_default();
    hs_train_opts to = hs_train_opts_default();
    const hs_config *c = &m->cfg;
    cJSON *train = meta.train ? cJSON_Parse(meta.train) : NULL;
    cJSON *task = meta.task ? cJSON_Parse(meta.task) : NULL;
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(train, "steps");
    const cJSON *done = cJSON_GetObjectItemCaseSensitive(train, "steps_done");
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(train, "seed");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(task, "name");
    const cJSON *split = cJSON_GetObjectItemCaseSensitive(task, "split_seed");
    if (c->n_layers == want.n_layers && c->d_model == want.d_model && c->n_heads == want.n_heads &&
        c->d_head == want.d_model / want.n_heads && c->d_mlp == 4 * want.d_model &&
        c->norm == want.norm && c->act == want.act && c->pos == want.pos && c->attn == want.attn &&
        c->ln1 && c->ln_final && !c->embed_norm && c->bias && c->seed == 0 &&
        cJSON_IsNumber(steps) && steps->valuedouble == to.steps && cJSON_IsNumber(done) &&
        done->valuedouble == to.steps && cJSON_IsNumber(seed) && seed->valuedouble == 0 &&
        cJSON_IsString(name) && strcmp(name->valuestring, "winograd") == 0 &&
        cJSON_IsNumber(split) && split->valuedouble == 0)
        ok = 1;
    cJSON_Delete(train);
    cJSON_Delete(task);
    hs_meta_free(&meta);
    hs_model_destroy(m);
    return ok;
}

int cmd_demo(int argc, char **argv)
{
    enum { O_OUT = 256, O_RETRAIN, O_HELP };
    static const struct option opts[] = {{"out", required_argument, 0, O_OUT},
                                         {"retrain", no_argument, 0, O_RETRAIN},
                                         {"help", no_argument, 0, O_HELP},
                                         {0, 0, 0, 0}};
    const char *C = "demo", *dir = "headscope-demo";
    int retrain = 0, c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_HELP: fputs(DEMO_HELP, stdout); return 0;
        case O_OUT: dir = optarg; break;
        case O_RETRAIN: retrain = 1; break;
        default: return cli_usage_error(C, "unknown or incomplete option '%s'", argv[optind - 1]);
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
    if (!retrain && reusable(model)) {
        printf("== reusing %s (trained with the default settings)\n", model);
    } else {
        if (!retrain && access(model, F_OK) == 0) {
            fprintf(stderr, "headscope demo: %s exists but cannot be read or was not trained with "
                            "the default settings; --retrain replaces it\n", model);
            goto done;
        }
        printf("== headscope train --out %s%s\n", model, retrain ? " --force" : "");
        fflush(stdout);
        char *a[] = {"train", "--out", model, retrain ? "--force" : NULL, NULL};
        if ((rc = cmd_train(retrain ? 4 : 3, a)) != 0) goto done;
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
