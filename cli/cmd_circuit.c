/*
 * cli/cmd_circuit.c -- `headscope circuit`: the two-step referent-circuit
 * check (tasks/ hs_circuit_run) on the held-out set: a text summary on
 * stdout (or the report as JSON with --json), and with --out DIR the report
 * and its figures (tasks/ hs_circuit_write). On an induction-task model the
 * induction-circuit check instead (hs_ind_circuit_run, hs_ind_circuit_write).
 * Holds no analysis and writes no figure itself.
 */
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "expout.h"
#include "figopts.h"
#include "util.h"

static const char CIRCUIT_HELP[] =
    "usage: headscope circuit --model FILE [--out DIR] [--json] [thresholds]\n"
    "\n"
    "On a model trained with --task induction it checks the induction circuit\n"
    "instead (previous-token head -> induction head; tasks.h, \"Induction circuit\n"
    "check\"): detector scores, K-composition, path patching into keys / queries /\n"
    "values, OV copying, ablation; the thresholds flags below are Winograd's.\n"
    "\n"
    "Verifies the two-step referent circuit of the Winograd task on the held-out\n"
    "set, finding each head's role from evidence (the design notes, \"The\n"
    "two-step referent circuit\"). Layers, heads and positions count from 0:\n"
    "the chapter's block 1 is layer 0, block 2 is layer 1; x is position 1, y 6,\n"
    "the adjective 11, and the prediction is made at 14.\n"
    "\n"
    "Evidence: the exact invariant (layer-0 scores at 14 differ between two\n"
    "sentences only in columns whose tokens differ: max deviation over every pair\n"
    "of held-out sentences); per head, attention at 14 on x / y / adjective /\n"
    "elsewhere by adjective role, direct logit attribution towards x and y (final\n"
    "norm frozen), the OV copying score; activation patching of each head's hook_z\n"
    "at position 14 between matched crosser/crossed sentences with the same nouns\n"
    "(normalised LD, LD = logit(ref_clean) - logit(ref_corr)); mean ablation\n"
    "(position-wise means over the training split) of each head, each layer's\n"
    "attention, each MLP and the pushers, with held-out accuracy by role;\n"
    "composition scores (LN folded) minus the random baseline; path patching from\n"
    "each layer-0 head into each decision head's q, k, v.\n"
    "\n"
    "Verdicts (defaults tuned on five seeds of the default model):\n"
    "  candidate pusher: layer-0 head with mean weight >= PUSH_ATTN on x (or y) at\n"
    "    14 and mean DLA >= PUSH_DLA towards that noun;\n"
    "  step 1 holds: a pusher exists and mean-ablating the pushers drops held-out\n"
    "    accuracy by >= STEP1_DROP points;\n"
    "  decision head: head in layer >= 1 whose patching at 14 moves the normalised\n"
    "    LD by >= DECIDE_PATCH, or whose mean-ablation drops one role's accuracy by\n"
    "    >= DECIDE_DROP points; step 2 holds when one exists (one layer: n/a);\n"
    "  route: \"chapter\" when a decision head puts >= ROUTE_ATTN on the adjective\n"
    "    with crosser adjectives and one puts >= ROUTE_ATTN on y with crossed ones\n"
    "    while raising y (DLA >= ROUTE_DLA); else the features found, joined by\n"
    "    \" + \": suppression (attends a noun, DLA <= -ROUTE_DLA towards it),\n"
    "    referent-fetch (attends the referent, raises it), adjective-read,\n"
    "    other-noun-fetch, adjective-key (a layer-0 head's weight on the adjective\n"
    "    differs between roles by >= ADJ_KEY_DIFF); \"other\" when a decision head\n"
    "    exists but none of these features is found, \"none\" when step 2 does not\n"
    "    hold (no decision head), \"one-layer\" for a one-layer model.\n"
    "\n"
    "options:\n"
    "  --model FILE          checkpoint (.safetensors) with its vocab and task\n"
    CLI_VOCAB_HELP CLI_SPLIT_HELP
    "  --out DIR             write report.json and figures into DIR (created if\n"
    "                        missing, its parent must exist). Only files an earlier\n"
    "                        run wrote and nobody changed are replaced; a failed run\n"
    "                        changes nothing\n"
    "  --json                print the report JSON on stdout instead of the summary\n"
    "  --push-attn X         default 0.25\n"
    "  --push-dla X          default 1.0 (logits)\n"
    "  --step1-drop P        default 25 (points)\n"
    "  --decide-patch X      default 0.1 (the design notes began at 0.5; trained models share\n"
    "                        the decision among 2-4 layer-1 heads of 0.15-0.52 each)\n"
    "  --decide-drop P       default 25 (points)\n"
    "  --route-attn X        default 0.25\n"
    "  --route-dla X         default 1.0 (logits)\n"
    "  --adj-key-diff X      default 0.25\n"
    "  --ablate-ref SPLIT    train (default) | heldout: where ablation means come from\n"
    "  --comp-draws N        random-baseline draws for composition scores (default 300)\n"
    "  --no-discovery        leave out the discovery section (EAP-IG's circuit on the\n"
    "                        check's prompt set, its faithfulness, the agreement with\n"
    "                        the path-patching edges): the verdict alone, about half\n"
    "                        the time\n"
    "  --threads N           worker threads, 0 = every CPU (default); the report is\n"
    "                        bit-identical for every count\n"
    "\n"
    "Files in DIR: report.json (every number, thresholds, verdicts, heads and\n"
    "roles, config); attention_14.{png,svg,json} (mean attention row at 14 per\n"
    "head and role); ablation.* (accuracy change per mean ablation, by role);\n"
    "patching.* (normalised patching metric per head); composition_{Q,K,V}.*\n"
    "(layer-0 heads into later heads, minus the baseline); path_patching.*\n"
    "(layer-0 heads into the decision heads' q/k/v) when a decision head exists.\n"
    "Exit status: 0 ok, 1 user error, 2 usage error.\n";

/* The threshold flags: --NAME X, X in [lo, hi], sets the hs_circuit_opts
 * field at off to X * scale (points become fractions). */
typedef struct {
    const char *name;
    double lo, hi, scale;
    size_t off;
} circ_threshold;
static const circ_threshold THRESHOLDS[] = {
    {"push-attn", 0.0, 1.0, 1.0, offsetof(hs_circuit_opts, push_attn)},
    {"push-dla", 0.0, 1000.0, 1.0, offsetof(hs_circuit_opts, push_dla)},
    {"step1-drop", 0.0, 100.0, 0.01, offsetof(hs_circuit_opts, step1_drop)},
    {"decide-patch", 0.0, 1000.0, 1.0, offsetof(hs_circuit_opts, decide_patch)},
    {"decide-drop", 0.0, 100.0, 0.01, offsetof(hs_circuit_opts, decide_drop)},
    {"route-attn", 0.0, 1.0, 1.0, offsetof(hs_circuit_opts, route_attn)},
    {"route-dla", 0.0, 1000.0, 1.0, offsetof(hs_circuit_opts, route_dla)},
    {"adj-key-diff", 0.0, 1.0, 1.0, offsetof(hs_circuit_opts, adj_key_diff)},
};
#define N_THRESHOLDS (sizeof THRESHOLDS / sizeof THRESHOLDS[0])

enum { O_MODEL = 256, O_OUT, O_JSON, O_REF, O_CD, O_NODISC, O_THREADS, O_THRESHOLD };

/* What the command line says. */
typedef struct {
    const char *model, *out;
    int json;
    int comp_draws;        /* --comp-draws, 0 when not given */
    int no_discovery;      /* --no-discovery */
    hs_load_source from;
    hs_circuit_opts o;
    hs_figopts fo;
} circ_args;

/* One of the command's own options into a. 0 ok, 2 after a usage error. */
static int own_option(const char *C, int c, circ_args *a)
{
    long n;
    if (c >= O_THRESHOLD) {
        const circ_threshold *t = &THRESHOLDS[c - O_THRESHOLD];
        double v;
        if (cli_parse_float(optarg, t->lo, t->hi, &v))
            return cli_usage_error(C, "--%s needs a number in [%g, %g], got '%s'", t->name, t->lo,
                                   t->hi, optarg);
        *(double *)((char *)&a->o + t->off) = v * t->scale;
        return 0;
    }
    switch (c) {
    case O_MODEL: a->model = optarg; return 0;
    case O_OUT: a->out = optarg; return 0;
    case O_JSON: a->json = 1; return 0;
    case O_REF: {
        int s = hs_wg_split_parse(optarg);
        if (s < 0) return cli_usage_error(C, "unknown --ablate-ref '%s' (train, heldout)", optarg);
        a->o.ablate_ref = (hs_wg_split)s;
        return 0;
    }
    case O_CD:
        if (cli_parse_int(optarg, 2, 100000, &n))
            return cli_usage_error(C, "--comp-draws needs an integer in [2, 100000], got '%s'", optarg);
        a->o.comp_draws = (int)n;
        a->comp_draws = (int)n;
        return 0;
    case O_NODISC:
        a->o.discover = 0;
        a->no_discovery = 1;
        return 0;
    default: /* O_THREADS */
        return cli_parse_threads(C, optarg, &a->o.threads) ? 2 : 0;
    }
}

/* The option loop: -1 to go on, else the exit status (0 after --help, 2
 * after a usage error, printed). */
static int parse_args(const char *C, int argc, char **argv, circ_args *a)
{
    static const struct option HEAD[] = {{"model", required_argument, 0, O_MODEL},
                                         {"out", required_argument, 0, O_OUT},
                                         {"json", no_argument, 0, O_JSON},
                                         CLI_HELP_OPT};
    static const struct option TAIL[] = {{"ablate-ref", required_argument, 0, O_REF},
                                         {"comp-draws", required_argument, 0, O_CD},
                                         {"no-discovery", no_argument, 0, O_NODISC},
                                         {"threads", required_argument, 0, O_THREADS},
                                         CLI_VOCAB_OPT,
                                         CLI_SPLIT_OPTS,
                                         CLI_FIGOPTS_LONGOPTS,
                                         {0, 0, 0, 0}};
    enum { N_HEAD = sizeof HEAD / sizeof HEAD[0], N_TAIL = sizeof TAIL / sizeof TAIL[0] };
    struct option opts[N_HEAD + N_THRESHOLDS + N_TAIL];
    memcpy(opts, HEAD, sizeof HEAD);
    for (size_t i = 0; i < N_THRESHOLDS; i++) {
        const struct option t = {THRESHOLDS[i].name, required_argument, 0, O_THRESHOLD + (int)i};
        opts[N_HEAD + i] = t;
    }
    memcpy(opts + N_HEAD + N_THRESHOLDS, TAIL, sizeof TAIL);
    int c;
    cli_opts op = {.cmd = C, .help = CIRCUIT_HELP, .src = &a->from, .fo = &a->fo};
    while ((c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END) {
        if (c == CLI_OPT_EXIT) return op.status;
        int r = own_option(C, c, a);
        if (r) return r;
    }
    int rest = cli_args_end(C, argc, argv, optind, a->model);
    return rest ? rest : -1;
}

/* The end of a run: the summary or the JSON text, and the files written. */
static int print_result(const char *C, const char *text, int json, const hs_outdir *od)
{
    fputs(text, stdout);
    if (json) fputc('\n', stdout);
    else if (od) {
        fputc('\n', stdout);
        cli_out_say_wrote(od, "report.json, figures");
    }
    return cli_stdout_done(C);
}

/* The two-step referent-circuit check of a Winograd model. */
static int run_winograd(const char *C, const circ_args *a, const hs_loaded *ld, hs_outdir *od)
{
    hs_error err = {0};
    hs_circuit_report r;
    if (hs_circuit_run(ld->model, ld->task, &a->o, &r, &err) != HS_OK) return cli_error(C, &err);
    int rc = 0;
    char *text = NULL;
    cJSON *rep = NULL;
    if (a->json) {
        if (hs_circuit_report_json(&r, a->model, &rep, &err) != HS_OK) {
            rc = cli_error(C, &err);
        } else if ((text = hs_json_print(rep)) == NULL) {
            fprintf(stderr, "headscope %s: out of memory\n", C);
            rc = 1;
        }
    } else if (hs_circuit_summary(&r, &text, &err) != HS_OK) {
        rc = cli_error(C, &err);
    }
    if (rc == 0 && od && hs_circuit_write(&r, a->model, od, &err) != HS_OK) rc = cli_error(C, &err);
    if (rc == 0) {
        rc = print_result(C, text, a->json, od);
        if (rc == 0) cli_say_threads(C, a->o.threads);
    }
    free(text);
    cJSON_Delete(rep);
    hs_circuit_report_free(&r);
    return rc;
}

/* The induction-circuit check of an induction model (the Winograd
 * thresholds do not apply; --comp-draws does). */
static int run_induction(const char *C, const circ_args *a, const hs_loaded *ld, hs_outdir *od)
{
    hs_error err = {0};
    hs_ind_circuit_opts o = hs_ind_circuit_opts_default();
    if (a->comp_draws > 0) o.comp_draws = a->comp_draws;
    if (a->no_discovery) o.discover = 0;
    hs_ind_circuit_report r;
    if (hs_ind_circuit_run(ld->model, ld->ind, &o, &r, &err) != HS_OK) return cli_error(C, &err);
    char *text = NULL;
    int rc = 0;
    if ((a->json ? hs_ind_circuit_report_json(&r, a->model, &text, &err)
                 : hs_ind_circuit_summary(&r, &text, &err)) != HS_OK)
        rc = cli_error(C, &err);
    if (!rc && od && hs_ind_circuit_write(&r, ld->ind, a->model, od, &err) != HS_OK)
        rc = cli_error(C, &err);
    if (!rc) rc = print_result(C, text, a->json, od);
    free(text);
    hs_ind_circuit_report_free(&r);
    return rc;
}

int cmd_circuit(int argc, char **argv)
{
    const char *C = "circuit";
    circ_args a = {0};
    a.o = hs_circuit_opts_default();
    hs_figopts_default(&a.fo, 300);
    int rc = parse_args(C, argc, argv, &a);
    if (rc >= 0) return rc;
    hs_loaded Ld;
    hs_outdir od = {0};
    rc = cli_load_src(C, a.model, HS_NEED_ANY_TASK, &a.from, &Ld);
    if (rc) {
        hs_figopts_free(&a.fo);
        return rc;
    }
    const char *const inputs[] = {a.model, NULL}; /* never replaced or removed */
    if (a.out && (cli_figopts_font(C, &a.fo) || cli_outdir_open(&od, C, a.out, &a.fo, inputs)))
        rc = 1;
    else if (Ld.ind)
        rc = run_induction(C, &a, &Ld, a.out ? &od : NULL);
    else
        rc = run_winograd(C, &a, &Ld, a.out ? &od : NULL);
    hs_outdir_close(&od);
    hs_loaded_free(&Ld);
    hs_figopts_free(&a.fo);
    return rc;
}
