/*
 * cli/cmd_eval.c -- `headscope eval`: referent accuracy at position 14 on the
 * train or held-out split, the wrong-noun rate, per role and per adjective.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "expout.h"
#include "util.h"

static const char EVAL_HELP[] =
    "usage: headscope eval --model FILE [--split heldout|train] [--json] [--vocab FILE]\n"
    "                      [--split-seed S | --heldout-pairs FILE]\n"
    "\n"
    "Scores the prediction at position 14 (`the` after `so`) of every sentence of\n"
    "a split of the task the model was trained on: referent accuracy (argmax over\n"
    "the whole vocabulary equals the referent), how often the other noun of the\n"
    "pair is predicted instead, by adjective role and by adjective.\n"
    "  --split NAME   heldout (default) | train\n"
    "  --json         print the numbers as one JSON object\n"
    "\n"
    "A checkpoint without vocab or task metadata (written elsewhere):\n"
    CLI_VOCAB_HELP CLI_SPLIT_HELP;

/* k of n as a JSON number in the one float format (the shortest text of the
 * float32, hs_f32_shortest; DESIGN.md "Floats"); 0 when n is 0. */
static cJSON *rate(double k, double n)
{
    return cJSON_CreateNumber(n > 0 ? hs_f32_shortest((float)(k / n)) : 0.0);
}

int cmd_eval(int argc, char **argv)
{
    enum { O_MODEL = 256, O_SPLIT, O_JSON };
    static const struct option opts[] = {{"model", required_argument, 0, O_MODEL},
                                         {"split", required_argument, 0, O_SPLIT},
                                         {"json", no_argument, 0, O_JSON},
                                         CLI_VOCAB_OPT,
                                         CLI_SPLIT_OPTS,
                                         CLI_HELP_OPT,
                                         {0, 0, 0, 0}};
    const char *C = "eval", *model = NULL;
    int split = HS_SPLIT_HELDOUT, json = 0, c;
    hs_load_source from = {0};
    cli_opts op = {.cmd = C, .help = EVAL_HELP, .src = &from};
    while ((c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END) {
        switch (c) {
        case CLI_OPT_EXIT: return op.status;
        case O_MODEL: model = optarg; break;
        case O_SPLIT:
            if ((split = hs_wg_split_parse(optarg)) < 0)
                return cli_usage_error(C, "unknown --split '%s' (heldout, train)", optarg);
            break;
        case O_JSON: json = 1; break;
        }
    }
    int rest = cli_args_end(C, argc, argv, optind, model);
    if (rest) return rest;
    hs_loaded L;
    int rc = cli_load_src(C, model, HS_NEED_TASK, &from, &L);
    if (rc) return rc;
    hs_error err = {0};
    hs_wg_score s;
    if (hs_winograd_score(L.model, L.task, (hs_wg_split)split, NULL, &s, &err) != HS_OK) {
        hs_loaded_free(&L);
        return cli_error(C, &err);
    }
    int held = hs_winograd_is_held_out(L.task, HS_WG_CHAPTER_X, HS_WG_CHAPTER_Y);
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "model", model);
        cJSON_AddStringToObject(o, "task", hs_task_name(L.task->kind));
        cJSON_AddStringToObject(o, "split", hs_wg_split_name((hs_wg_split)split));
        cJSON_AddNumberToObject(o, "n", (double)s.n);
        cJSON_AddItemToObject(o, "accuracy", cJSON_CreateNumber(hs_f32_shortest((float)hs_wg_score_accuracy(&s))));
        cJSON_AddItemToObject(o, "other_noun_rate",
                              cJSON_CreateNumber(hs_f32_shortest((float)hs_wg_score_other_rate(&s))));
        cJSON_AddBoolToObject(o, "chapter_pair_held_out", held == 1);
        cJSON *roles = cJSON_AddObjectToObject(o, "by_role");
        for (int r = 0; r < 2; r++) {
            cJSON *ro = cJSON_AddObjectToObject(roles, hs_wg_role_name((hs_wg_role)r));
            cJSON_AddNumberToObject(ro, "n", (double)s.n_role[r]);
            cJSON_AddItemToObject(ro, "accuracy", rate((double)s.correct_role[r], (double)s.n_role[r]));
            cJSON_AddItemToObject(ro, "other_noun_rate", rate((double)s.other_role[r], (double)s.n_role[r]));
        }
        cJSON *adjs = cJSON_AddObjectToObject(o, "by_adjective");
        for (int a = 0; a < HS_WG_N_ADJS; a++) {
            cJSON *ao = cJSON_AddObjectToObject(adjs, hs_wg_adjectives[a]);
            cJSON_AddStringToObject(ao, "role", a < HS_WG_N_CROSSER ? "crosser" : "crossed");
            cJSON_AddNumberToObject(ao, "n", (double)s.n_adj[a]);
            cJSON_AddItemToObject(ao, "accuracy", rate((double)s.correct_adj[a], (double)s.n_adj[a]));
            cJSON_AddItemToObject(ao, "other_noun_rate", rate((double)s.other_adj[a], (double)s.n_adj[a]));
        }
        char *txt = hs_json_print(o);
        puts(txt);
        free(txt);
        cJSON_Delete(o);
    } else {
        printf("%s, %s split (%zu sentences; the chapter's pair (animal, street) is %s)\n",
               hs_task_name(L.task->kind), hs_wg_split_name((hs_wg_split)split), s.n,
               held == 1 ? "held out" : "in training");
        printf("referent accuracy  %6.1f%%   other noun of the pair %5.1f%%\n",
               100.0 * hs_wg_score_accuracy(&s), 100.0 * hs_wg_score_other_rate(&s));
        for (int r = 0; r < 2; r++)
            printf("  %-8s         %6.1f%%                          %5.1f%%   (%zu)\n",
                   hs_wg_role_name((hs_wg_role)r),
                   s.n_role[r] ? 100.0 * s.correct_role[r] / s.n_role[r] : 0.0,
                   s.n_role[r] ? 100.0 * s.other_role[r] / s.n_role[r] : 0.0, s.n_role[r]);
        printf("by adjective:\n");
        for (int a = 0; a < HS_WG_N_ADJS; a++)
            printf("  %-7s (%s)  %6.1f%%                          %5.1f%%   (%zu)\n",
                   hs_wg_adjectives[a], a < HS_WG_N_CROSSER ? "crosser" : "crossed",
                   s.n_adj[a] ? 100.0 * s.correct_adj[a] / s.n_adj[a] : 0.0,
                   s.n_adj[a] ? 100.0 * s.other_adj[a] / s.n_adj[a] : 0.0, s.n_adj[a]);
    }
    hs_loaded_free(&L);
    return cli_stdout_done(C);
}
