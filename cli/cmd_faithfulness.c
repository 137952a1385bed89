/*
 * cli/cmd_faithfulness.c -- `headscope faithfulness`: a circuit found
 * elsewhere (a graph.json as EAP-IG and MIB write it) run on a prompt set
 * (experiments/ hs_faithfulness_run): its normalised faithfulness and the
 * curve of the file's scores on stdout (or the JSON with --json), and with
 * --out DIR faithfulness.json.
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "expout.h"
#include "util.h"

static const char FAITH_HELP[] =
    "usage: headscope faithfulness --model FILE --data FILE.jsonl --graph graph.json [options]\n"
    "\n"
    "Runs the circuit of a graph.json (its in_graph edges, dead ends pruned as\n"
    "EAP-IG's Graph.prune) on a prompt set, each receiver reading its missing\n"
    "senders' ablated outputs (EAP-IG's evaluate_graph), and reports its\n"
    "normalised faithfulness (m(C) - m(empty)) / (m(M) - m(empty)), then the\n"
    "curve of the file's scores at MIB's sizes with CPR and CMD.\n"
    "\n"
    "options:\n"
    "  --model PATH          a Hugging Face GPT-2 folder or a checkpoint (.safetensors)\n"
    CLI_VOCAB_HELP
    "  --data FILE           prompt set: JSONL with \"prompt\", \"answer\", and \"corrupted\"\n"
    "                        (resample) and \"wrong\" (logit-diff, prob-diff)\n"
    "  --graph FILE          the circuit: graph.json for this model's shape (once)\n"
    "  --metric M            logit-diff (default) | prob-diff | kl\n"
    "  --ablation A          resample (default) | mean | zero\n"
    "  --select S            how the curve chooses N edges from the file's scores:\n"
    "                        topn (default: the N of largest |score|) | greedy\n"
    "                        (EAP-IG's apply_greedy: grown from logits) | signed\n"
    "                        (the N whose ablation lowers the metric most: MIB's\n"
    "                        evaluation default)\n"
    "  --out DIR             write faithfulness.json and the figures circuit and\n"
    "                        faithfulness_curve (in --format) into DIR (created if\n"
    "                        missing; its parent must exist)\n"
    "  --json                print every number as JSON instead of the summary\n"
    "  --threads N           worker threads, 0 = every CPU (default)\n"
    "\n"
    "Exit status: 0 ok, 1 user error, 2 usage error.\n";

static int named(const char *arg, const char *const *names, int n)
{
    for (int k = 0; k < n; k++)
        if (strcmp(arg, names[k]) == 0) return k;
    return -1;
}

/* The report: its JSON or its summary, and the files written. */
static int print_report(const cli_exp *x, const char *out, const hs_faith_report *r)
{
    hs_buf b = {0};
    if (!x->json) hs_faith_summary(r, &b);
    return cli_exp_print_report(x, out, x->json ? hs_faith_report_json(r) : NULL, &b, r->n_files);
}

int cmd_faithfulness(int argc, char **argv)
{
    enum { O_GRAPH = 256, O_METRIC, O_ABLATION, O_SELECT };
    static const struct option opts[] = {{"graph", required_argument, 0, O_GRAPH},
                                         {"metric", required_argument, 0, O_METRIC},
                                         {"ablation", required_argument, 0, O_ABLATION},
                                         {"select", required_argument, 0, O_SELECT},
                                         CLI_HELP_OPT,
                                         CLI_EXP_LONGOPTS,
                                         {0, 0, 0, 0}};
    const char *C = "faithfulness";
    hs_faith_opts o = {NULL, HS_METRIC_LOGIT_DIFF, HS_ABLATE_RESAMPLE, NULL, NULL, NULL, HS_SELECT_TOPN, NULL};
    int c, k;
    cli_exp x;
    cli_exp_init(&x, C);
    cli_opts op = {.cmd = C, .help = FAITH_HELP, .exp = &x};
    while ((c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END) {
        switch (c) {
        case CLI_OPT_EXIT: return op.status;
        case O_GRAPH:
            if (o.graph)
                return cli_usage_error(C, "--graph given twice ('%s', '%s'): one graph a run (compare circuits "
                                       "with one run each)", o.graph, optarg);
            o.graph = optarg;
            break;
        case O_METRIC:
            if ((k = named(optarg, hs_metric_names, HS_METRIC_N)) < 0)
                return cli_usage_error(C, "--metric takes logit-diff, prob-diff or kl, not '%s'", optarg);
            o.metric = (hs_metric_kind)k;
            break;
        case O_ABLATION:
            if ((k = named(optarg, hs_ablate_method_names, 3)) < 0)
                return cli_usage_error(C, "--ablation takes resample, mean or zero, not '%s'", optarg);
            o.ablation = (hs_ablate_method)k;
            break;
        case O_SELECT:
            if ((k = named(optarg, hs_select_names, HS_SELECT_N)) < 0)
                return cli_usage_error(C, "--select takes topn, greedy or signed, not '%s'", optarg);
            o.select = (hs_select_kind)k;
            break;
        }
    }
    if (cli_exp_check(&x, argc, argv, 0)) return 2;
    if (o.graph == NULL) return cli_usage_error(C, "--graph FILE is required (a graph.json)");
    o.out = x.out;
    o.fo = &x.fo;
    o.model_path = x.model;
    o.data_path = x.data;
    x.out = NULL; /* the library writes the folder */
    hs_error err = {0};
    int rc = 1;
    hs_faith_report r = {0};
    if (cli_exp_open(&x, 0) == 0) {
        const hs_notes notes = cli_notes(C);
        if (hs_faithfulness_run(x.Ld.model, x.pool, &x.p, &o, &notes, &r, &err) != HS_OK) rc = cli_error(C, &err);
        else rc = print_report(&x, o.out, &r);
    }
    hs_faith_report_free(&r);
    cli_exp_close(&x);
    return rc;
}
