/*
 * cli/cmd_eval.c -- `headscope eval`: a Winograd model's referent accuracy at
 * position 14 on the train or held-out split, the wrong-noun rate, per role
 * and per adjective; a text model's perplexity on a corpus (--corpus).
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "expout.h"
#include "tasks/text.h"
#include "util.h"

static const char EVAL_HELP[] =
    "usage: headscope eval --model FILE [--split heldout|train] [--json] [--vocab FILE]\n"
    "                      [--split-seed S | --heldout-pairs FILE]\n"
    "       headscope eval --model FILE --corpus FILE... [--n-ctx N] [--split heldout|train]\n"
    "                      [--json] [--threads N]     (a text model)\n"
    "\n"
    "Scores the prediction at position 14 (`the` after `so`) of every sentence of\n"
    "a split of the task the model was trained on: referent accuracy (argmax over\n"
    "the whole vocabulary equals the referent), how often the other noun of the\n"
    "pair is predicted instead, by adjective role and by adjective.\n"
    "  --split NAME   heldout (default) | train\n"
    "  --json         print the numbers as one JSON object\n"
    "An induction-task model is refused (circuit and timeline score it); so is a\n"
    "pretrained folder (GPT-2: a prompt set from `headscope prompts`, then patch,\n"
    "ablate, dla or discover).\n"
    "\n"
    "A text model (train --task text): its perplexity on a corpus, split as its run\n"
    "split the training corpus (the last val_fraction of each file's tokens held out),\n"
    "in consecutive windows; on the training corpus the number the run printed.\n"
    "  --corpus FILE...  text files\n"
    "  --n-ctx N         window length (default: the trained one); past it for\n"
    "                    sinusoidal, rotary, ALiBi and no positions (up to 4096);\n"
    "                    learned positions stop at their table\n"
    "  --json            {\"perplexity\": ..., \"tokens\": ..., \"icl_score\": ..., ...}\n"
    "                    (icl_score: mean loss at position n_ctx - 1 minus at\n"
    "                    n_ctx / 10, nats; Olsson et al. 2022)\n"
    "\n"
    "A checkpoint without vocab or task metadata (written elsewhere):\n"
    CLI_VOCAB_HELP CLI_SPLIT_HELP;

/* k of n as a JSON number in the one float format (the shortest text of the
 * float32, hs_f32_shortest; DESIGN.md "Floats"); 0 when n is 0. */
static cJSON *rate(double k, double n)
{
    return cJSON_CreateNumber(n > 0 ? hs_f32_shortest((float)(k / n)) : 0.0);
}

/* eval on a text model (hs_text_eval). */
static int eval_text(const char *C, const char *model, const char **given, int n_given, int argc,
                     char **argv, int n_ctx, int heldout, int json, int threads,
                     const hs_load_source *from)
{
    if (model == NULL) return cli_usage_error(C, "--model is required");
    const char **files = NULL;
    const int n = cli_corpus_files(C, given, n_given, argc, argv, optind, &files);
    if (n < 0) return 2;
    hs_loaded L;
    int rc = cli_load_src(C, model, HS_NEED_VOCAB, from, &L);
    if (rc) {
        free(files);
        return rc;
    }
    hs_error err = {0};
    hs_text_eval_result r;
    hs_status st = L.is_text ? HS_OK
                             : hs_fail(&err, HS_ERR_INPUT, "%s is not a text model (train --task "
                                       "text); --corpus and --n-ctx are for text models", model);
    /* past the trained length where the positions allow (learned: refused) */
    if (st == HS_OK && n_ctx > L.model->cfg.n_ctx) st = hs_model_set_n_ctx(L.model, n_ctx, &err);
    if (st == HS_OK)
        st = hs_text_eval(L.model, L.meta.vocab, &L.text, files, (size_t)n, heldout, n_ctx,
                          threads, &r, &err);
    free(files);
    if (st != HS_OK) {
        hs_loaded_free(&L);
        return cli_error(C, &err);
    }
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "perplexity", hs_f32_shortest((float)r.score.perplexity));
        cJSON_AddNumberToObject(o, "tokens", (double)r.score.tokens);
        cJSON_AddNumberToObject(o, "loss", hs_f32_shortest((float)r.score.loss));
        cJSON_AddNumberToObject(o, "windows", (double)r.score.windows);
        cJSON_AddNumberToObject(o, "n_ctx", r.n_ctx);
        if (isfinite(r.score.icl_score)) {
            cJSON_AddNumberToObject(o, "icl_score", hs_f32_shortest((float)r.score.icl_score));
            cJSON_AddNumberToObject(o, "icl_early", r.score.icl_early);
            cJSON_AddNumberToObject(o, "icl_late", r.score.icl_late);
        }
        cJSON_AddStringToObject(o, "split", heldout ? "heldout" : "train");
        cJSON_AddNumberToObject(o, "unigram_perplexity", hs_f32_shortest((float)r.unigram_ppl));
        char *txt = hs_json_print(o);
        puts(txt);
        free(txt);
        cJSON_Delete(o);
    } else {
        printf("%s perplexity %.3f on %zu tokens (%zu windows of %d; the unigram's %.3f)\n",
               heldout ? "held-out" : "train", r.score.perplexity, r.score.tokens,
               r.score.windows, r.n_ctx, r.unigram_ppl);
    }
    hs_loaded_free(&L);
    cli_say_threads(C, threads);
    return cli_stdout_done(C);
}

int cmd_eval(int argc, char **argv)
{
    enum { O_MODEL = 256, O_SPLIT, O_JSON, O_CORPUS, O_NCTX, O_THREADS };
    static const struct option opts[] = {{"model", required_argument, 0, O_MODEL},
                                         {"split", required_argument, 0, O_SPLIT},
                                         {"json", no_argument, 0, O_JSON},
                                         {"corpus", required_argument, 0, O_CORPUS},
                                         {"n-ctx", required_argument, 0, O_NCTX},
                                         {"threads", required_argument, 0, O_THREADS},
                                         CLI_VOCAB_OPT,
                                         CLI_SPLIT_OPTS,
                                         CLI_HELP_OPT,
                                         {0, 0, 0, 0}};
    const char *C = "eval", *model = NULL;
    int split = HS_SPLIT_HELDOUT, json = 0, c, n_given = 0, threads = 0;
    long n_ctx = 0;
    const char **given = calloc((size_t)argc + 1, sizeof *given);
    if (!given) return cli_usage_error(C, "out of memory");
    hs_load_source from = {0};
    cli_opts op = {.cmd = C, .help = EVAL_HELP, .src = &from};
    while ((c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END) {
        switch (c) {
        case CLI_OPT_EXIT: free(given); return op.status;
        case O_MODEL: model = optarg; break;
        case O_CORPUS: given[n_given++] = optarg; break;
        case O_NCTX:
            if (cli_parse_int(optarg, 1, 65536, &n_ctx)) {
                free(given);
                return cli_usage_error(C, "--n-ctx needs an integer in [1, 65536], got '%s'", optarg);
            }
            break;
        case O_THREADS:
            if (cli_parse_threads(C, optarg, &threads)) {
                free(given);
                return 2;
            }
            break;
        case O_SPLIT:
            if ((split = hs_wg_split_parse(optarg)) < 0)
                return cli_usage_error(C, "unknown --split '%s' (heldout, train)", optarg);
            break;
        case O_JSON: json = 1; break;
        }
    }
    if (n_given > 0 || n_ctx > 0) {
        const int rc = eval_text(C, model, given, n_given, argc, argv, (int)n_ctx,
                                 split == HS_SPLIT_HELDOUT, json, threads, &from);
        free(given);
        return rc;
    }
    free(given);
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
