/*
 * cli/cmd_discover.c -- `headscope discover`: score every edge of the
 * head-level graph (exact edge patching, ACDC, EAP or EAP-IG), choose a
 * circuit, run it and the faithfulness curve, compare with a true circuit
 * (discovery/ hs_discover_run): a summary on stdout (or the JSON with
 * --json), and with --out DIR graph.json, faithfulness.json, circuit.dot
 * (and roc.json), the circuit and its faithfulness curve as figures in the
 * --format chosen, and with html the page.
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "expout.h"
#include "util.h"

static const char DISCOVER_HELP[] =
    "usage: headscope discover --model FILE --data FILE.jsonl [options]\n"
    "\n"
    "Finds a circuit in the head-level graph (MIB / EAP-IG names: input, a{l}.h{h}\n"
    "with inputs <q> <k> <v>, m{l}, logits; an edge from every earlier writer to\n"
    "every later reader). Every edge gets a score, metric(edge ablated) -\n"
    "metric(model): exact edge patching runs the set once per edge with that edge\n"
    "alone ablated; ACDC (Conmy et al. 2023) visits the edges as its code does\n"
    "(logits, then per layer from the top: the MLP, every head's v input, k, q, each\n"
    "from the newest sender to the input) and removes each edge whose removal\n"
    "lowers the metric less than tau (kl: grows it less than tau; signed, ACDC's\n"
    "default); EAP (Syed et al. 2023) estimates every edge's score at once,\n"
    "(a_u,ablated - a_u,clean) . d metric / d(input of v) at the clean run, a_u,ablated\n"
    "the --ablation's value (the corrupted run's, u's mean, or 0), and EAP-IG\n"
    "(Hanna et al. 2024) averages that gradient over m runs whose input (embeddings)\n"
    "steps from the ablated input to the clean prompt's, alpha = k/m for k = 0..m-1\n"
    "(hannamw/EAP-IG's code since 2025-02; --ig-alphas right: k = 1..m, the paper's\n"
    "and that code's before). A circuit is run as EAP-IG's\n"
    "evaluate_graph runs it: each receiver reads its missing senders' ablated\n"
    "outputs. Its normalised faithfulness is (m(C) - m(empty)) / (m(M) - m(empty));\n"
    "the curve runs the top edges at MIB's sizes (0.1 .. 100 % of the edges) with\n"
    "CPR and CMD: 10 circuit runs over every prompt, most of a GPT-2 run's time and\n"
    "memory (no option skips it; faithfulness --graph runs it alone).\n"
    "\n"
    "options:\n"
    "  --model PATH          a Hugging Face GPT-2 folder or a checkpoint (.safetensors)\n"
    CLI_VOCAB_HELP
    "  --data FILE           prompt set: JSONL with \"prompt\", \"answer\", and \"corrupted\"\n"
    "                        (resample) and \"wrong\" (logit-diff, prob-diff)\n"
    "  --method M            exact (default) | acdc | eap | eap-ig\n"
    "  --ig-steps N          EAP-IG's interpolation steps, 1..1000 (default 5)\n"
    "  --ig-alphas A         EAP-IG's alphas: left (default: k/m, k = 0..m-1, the\n"
    "                        ablated end included, hannamw/EAP-IG today) | right\n"
    "                        (k = 1..m, the clean end included: the paper's)\n"
    "  --metric M            logit-diff (default) | prob-diff | kl (KL of the model's\n"
    "                        next-token distribution to the circuit's; not with eap:\n"
    "                        its gradient at the clean run is 0)\n"
    "  --ablation A          resample (default: each prompt's corrupted partner) |\n"
    "                        mean (position-wise over the set) | zero\n"
    "  --top N               the circuit is the top N edges by |score| (pruned)\n"
    "  --threshold X         ... or every edge with |score| >= X (default: the top 5%)\n"
    "  --select S            how N edges are chosen (--top, the 5% default, the curve):\n"
    "                        topn (default: the N of largest |score|, MIB's --absolute)\n"
    "                        | greedy (EAP-IG's apply_greedy: grown from logits, each\n"
    "                        step the strongest edge into a node already in the circuit)\n"
    "                        | signed (the N whose ablation lowers the metric most:\n"
    "                        MIB's evaluation default on graph.json, signed scores)\n"
    "  --tau X               ACDC's threshold (default 0.01)\n"
    "  --abs-threshold       ACDC removes an edge when |metric change| < tau (ACDC's\n"
    "                        --abs-value-threshold; default: signed)\n"
    "  --acdc-order O        acdc (default: ACDC's reverse_topologically_sort_corr)\n"
    "                        | headscope (receivers in canonical order backwards,\n"
    "                        senders oldest first: headscope's order before 2026-12)\n"
    "  --truth FILE          the true circuit (one edge name a line, a JSON list of\n"
    "                        names, or a graph.json): ROC curves and AUC for edges\n"
    "                        and nodes, written as roc.json\n"
    "  --out DIR             write graph.json (EAP-IG's format), faithfulness.json,\n"
    "                        circuit.dot (and roc.json), and the figures circuit and\n"
    "                        faithfulness_curve in the --format chosen into DIR\n"
    "                        (created if missing; its parent must exist); with html\n"
    "                        also index.html (the circuit with a threshold slider;\n"
    "                        a click on a head shows its attention on the first\n"
    "                        prompt, attention.json)\n"
    "  --json                print every number as JSON instead of the summary\n"
    "  --threads N           worker threads, 0 = every CPU (default); the numbers\n"
    "                        are bit-identical for every count\n"
    "\n"
    "Exit status: 0 ok, 1 user error, 2 usage error.\n";

/* Parses the name of one of n names; -1 after printing a usage error. */
static int parse_named(const char *C, const char *opt, const char *arg, const char *const *names, int n)
{
    for (int k = 0; k < n; k++)
        if (strcmp(arg, names[k]) == 0) return k;
    hs_buf b = {0};
    for (int k = 0; k < n; k++) hs_buf_printf(&b, "%s%s", k ? ", " : "", names[k]);
    cli_usage_error(C, "%s takes %s, not '%s'", opt, b.s ? b.s : "", arg);
    hs_buf_free(&b);
    return -1;
}

/* The report: its JSON or its summary, and the files written. */
static int print_report(const cli_exp *x, const char *out, const hs_discover_report *r)
{
    hs_buf b = {0};
    if (!x->json) hs_discover_summary(r, &b);
    return cli_exp_print_report(x, out, x->json ? hs_discover_json(r) : NULL, &b, r->n_files);
}

int cmd_discover(int argc, char **argv)
{
    enum { O_METHOD = 256, O_IG_STEPS, O_METRIC, O_ABLATION, O_TOP, O_THRESHOLD, O_TAU, O_TRUTH, O_SELECT, O_IG_ALPHAS,
           O_ABS_THR, O_ACDC_ORDER };
    static const struct option opts[] = {{"method", required_argument, 0, O_METHOD},
                                         {"ig-steps", required_argument, 0, O_IG_STEPS},
                                         {"ig-alphas", required_argument, 0, O_IG_ALPHAS},
                                         {"metric", required_argument, 0, O_METRIC},
                                         {"ablation", required_argument, 0, O_ABLATION},
                                         {"top", required_argument, 0, O_TOP},
                                         {"threshold", required_argument, 0, O_THRESHOLD},
                                         {"tau", required_argument, 0, O_TAU},
                                         {"abs-threshold", no_argument, 0, O_ABS_THR},
                                         {"acdc-order", required_argument, 0, O_ACDC_ORDER},
                                         {"truth", required_argument, 0, O_TRUTH},
                                         {"select", required_argument, 0, O_SELECT},
                                         CLI_HELP_OPT,
                                         CLI_EXP_LONGOPTS,
                                         {0, 0, 0, 0}};
    const char *C = "discover";
    hs_discover_opts o = hs_discover_opts_default();
    int c, k;
    long v;
    cli_exp x;
    cli_exp_init(&x, C);
    cli_opts op = {.cmd = C, .help = DISCOVER_HELP, .exp = &x};
    while ((c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END) {
        switch (c) {
        case CLI_OPT_EXIT: return op.status;
        case O_METHOD:
            if ((k = parse_named(C, "--method", optarg, hs_discover_method_names, HS_DISCOVER_N)) < 0) return 2;
            o.method = (hs_discover_method)k;
            break;
        case O_IG_STEPS:
            if (cli_parse_int(optarg, 1, 1000, &v)) return cli_usage_error(C, "--ig-steps needs a count in 1..1000, got '%s'", optarg);
            o.ig_steps = (int)v;
            break;
        case O_IG_ALPHAS: {
            static const char *const alphas[2] = {"left", "right"};
            if ((k = parse_named(C, "--ig-alphas", optarg, alphas, 2)) < 0) return 2;
            o.ig_right = k;
            break;
        }
        case O_METRIC:
            if ((k = parse_named(C, "--metric", optarg, hs_metric_names, HS_METRIC_N)) < 0) return 2;
            o.metric = (hs_metric_kind)k;
            break;
        case O_ABLATION:
            if ((k = parse_named(C, "--ablation", optarg, hs_ablate_method_names, 3)) < 0) return 2;
            o.ablation = (hs_ablate_method)k;
            break;
        case O_TOP:
            if (cli_parse_int(optarg, 0, 1L << 40, &v)) return cli_usage_error(C, "--top needs a count >= 0, got '%s'", optarg);
            o.top_n = v;
            break;
        case O_THRESHOLD:
            if (cli_parse_float(optarg, 0, HUGE_VAL, &o.threshold))
                return cli_usage_error(C, "--threshold needs a number >= 0, got '%s'", optarg);
            break;
        case O_TAU:
            if (cli_parse_float(optarg, 0, HUGE_VAL, &o.tau))
                return cli_usage_error(C, "--tau needs a number >= 0, got '%s'", optarg);
            break;
        case O_TRUTH: o.truth = optarg; break;
        case O_ABS_THR: o.acdc_abs = 1; break;
        case O_ACDC_ORDER: {
            static const char *const orders[2] = {"acdc", "headscope"};
            if ((k = parse_named(C, "--acdc-order", optarg, orders, 2)) < 0) return 2;
            o.acdc_headscope_order = k;
            break;
        }
        case O_SELECT:
            if ((k = parse_named(C, "--select", optarg, hs_select_names, HS_SELECT_N)) < 0) return 2;
            o.select = (hs_select_kind)k;
            break;
        }
    }
    if (cli_exp_check(&x, argc, argv, 0)) return 2;
    if (o.top_n >= 0 && !isnan(o.threshold)) return cli_usage_error(C, "give --top or --threshold, not both");
    if (o.method == HS_DISCOVER_ACDC && (o.top_n >= 0 || !isnan(o.threshold)))
        return cli_usage_error(C, "--top and --threshold choose from scores; ACDC's circuit is what it keeps (--tau)");
    if (o.method != HS_DISCOVER_ACDC && !isnan(o.tau)) return cli_usage_error(C, "--tau is for --method acdc");
    if (o.method != HS_DISCOVER_ACDC && (o.acdc_abs || o.acdc_headscope_order))
        return cli_usage_error(C, "--abs-threshold and --acdc-order are for --method acdc");
    if (o.select != HS_SELECT_TOPN && !isnan(o.threshold))
        return cli_usage_error(C, "--select %s chooses N edges (--top N), not a threshold", hs_select_names[o.select]);
    if (o.method != HS_DISCOVER_EAP_IG && o.ig_steps) return cli_usage_error(C, "--ig-steps is for --method eap-ig");
    if (o.method != HS_DISCOVER_EAP_IG && o.ig_right) return cli_usage_error(C, "--ig-alphas is for --method eap-ig");
    if (o.method == HS_DISCOVER_EAP && o.metric == HS_METRIC_KL)
        return cli_usage_error(C, "--metric kl with --method eap scores every edge 0 (the KL divergence's gradient "
                               "at the clean run is exactly 0); use --method eap-ig");
    o.out = x.out;
    o.model_path = x.model;
    o.data_path = x.data;
    o.fo = &x.fo;
    x.out = NULL; /* the library writes the folder */
    hs_error err = {0};
    int rc = 1;
    hs_discover_report r = {0};
    if (cli_exp_open(&x, 0) == 0) {
        const hs_notes notes = cli_notes(C);
        o.tok = x.Ld.vocab;
        if (hs_discover_run(x.Ld.model, x.pool, &x.p, &o, &notes, &r, &err) != HS_OK) rc = cli_error(C, &err);
        else rc = print_report(&x, o.out, &r);
    }
    hs_discover_report_free(&r);
    cli_exp_close(&x);
    return rc;
}
