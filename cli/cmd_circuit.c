/*
 * cli/cmd_circuit.c -- `headscope circuit`: the two-step referent-circuit
 * check (tasks/ hs_circuit_run) on the held-out set: a text summary on
 * stdout (or the report as JSON with --json), and with --out DIR the report
 * and its figures (PNG + SVG + JSON each, via viz/). Holds no analysis.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "expout.h"
#include "figopts.h"
#include "util.h"
#include "viz/viz.h"

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
    "  --vocab FILE, --split-seed S, --heldout-pairs FILE\n"
    "                        for a checkpoint without vocab or task metadata (as\n"
    "                        in eval --help)\n"
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

/* Template labels of positions 0..14. */
static const char *const POS_LABELS[HS_CIRC_T] = {"0 the", "1 x", "2 did", "3 not", "4 cross",
                                                   "5 the", "6 y", "7 because", "8 it", "9 was",
                                                   "10 too", "11 adj", "12 ,", "13 so", "14 the"};

/* report.json, the figures and index.json. 0 ok, 1 printed. */
static int write_outputs(const hs_circuit_report *r, const cJSON *rep, hs_outdir *od, const char *model)
{
    const int L = r->L, H = r->H, LH = L * H;
    const cli_fig_ctx x = {od, model, &r->cfg};
    const char *C = od->cmd;
    int rc = 1;
    float *m = NULL;
    char (*lab)[48] = NULL;
    const char **rl = NULL, **cl = NULL;
    const size_t n_lab = (size_t)LH * 3 + 16;
    lab = calloc(n_lab, sizeof *lab);
    rl = calloc(n_lab, sizeof *rl);
    cl = calloc(n_lab, sizeof *cl);
    m = calloc((size_t)n_lab * (size_t)(LH > HS_CIRC_T ? LH : HS_CIRC_T) * 4, sizeof *m);
    if (!lab || !rl || !cl || !m) {
        fprintf(stderr, "headscope %s: out of memory\n", C);
        goto done;
    }
    if (cli_out_json(od, "report", rep,
                     "every number of the circuit check: thresholds, verdicts, heads and roles, "
                     "held-out accuracy, invariant, attention, DLA, patching, ablation, composition, "
                     "path patching, model config"))
        goto done;

    /* mean attention rows at 14: rows = head x role, columns = positions 0..14 */
    for (int k = 0; k < LH; k++)
        for (int g = 0; g < 2; g++) {
            snprintf(lab[k * 2 + g], sizeof lab[0], "%s %s", r->heads[k].name, g ? "crossed" : "crosser");
            rl[k * 2 + g] = lab[k * 2 + g];
        }
    if (cli_out_fig(&x, HS_FIG_NONNEG, "attention_14", r->attn_rows, (size_t)LH * 2, HS_CIRC_T, rl,
                POS_LABELS, "mean attention at position 14 by head and adjective role (held-out)",
                "source position", "head, role", 1.0, "mean attention weight", NULL,
                "each head's attention row at position 14 averaged over the held-out sentences of each "
                "adjective role (x = 1, y = 6, adjective = 11)"))
        goto done;

    /* ablation: accuracy change in points */
    size_t nb = 0;
    for (int k = 0; k < LH; k++)
        for (int g = 0; g < 2; g++) {
            snprintf(lab[nb], sizeof lab[0], "%s %s", r->heads[k].name, g ? "crossed" : "crosser");
            m[nb++] = (float)(100.0 * (r->heads[k].acc_ablated[g] - r->acc[g]));
        }
    for (int l = 0; l < L; l++)
        for (int w = 0; w < (r->cfg.d_mlp > 0 ? 2 : 1); w++)
            for (int g = 0; g < 2; g++) {
                const double *acc = w ? r->acc_block_mlp[l] : r->acc_block_attn[l];
                snprintf(lab[nb], sizeof lab[0], "L%d %s %s", l, w ? "MLP" : "attn", g ? "crossed" : "crosser");
                m[nb++] = (float)(100.0 * (acc[g] - r->acc[g]));
            }
    if (r->n_pushers > 0)
        for (int g = 0; g < 2; g++) {
            snprintf(lab[nb], sizeof lab[0], "pushers %s", g ? "crossed" : "crosser");
            m[nb++] = (float)(100.0 * (r->acc_pushers[g] - r->acc[g]));
        }
    for (size_t i = 0; i < nb; i++) rl[i] = lab[i];
    if (cli_out_fig(&x, HS_FIG_BARS, "ablation", m, nb, 1, rl, NULL,
                "held-out accuracy change with mean ablation, by adjective role",
                "accuracy change, points (position-wise mean ablation)", NULL, 0.0, NULL, NULL,
                "held-out accuracy change (points) by role when each head, each layer's attention, "
                "each MLP and the pushers are mean-ablated"))
        goto done;

    /* patching matrix: rows = heads, columns = direction / positions */
    static const char *const PCOL[4] = {"pos14 crosser->crossed", "pos14 crossed->crosser", "pos14 both",
                                        "all positions both"};
    for (int k = 0; k < LH; k++) {
        const hs_circuit_head *hd = &r->heads[k];
        const double v[4] = {hd->patch_pos14[0], hd->patch_pos14[1], hd->patch_pos14[2], hd->patch_all[2]};
        for (int c = 0; c < 4; c++) m[k * 4 + c] = isfinite(v[c]) ? (float)v[c] : 0.0f;
        rl[k] = r->heads[k].name;
    }
    char why[200];
    snprintf(why, sizeof why, "not usable: clean and corrupted logit differences differ by only %.2f",
             fabs((double)r->ld_clean[HS_CIRC_PATCH_BOTH] - r->ld_corr[HS_CIRC_PATCH_BOTH]));
    if (cli_out_fig(&x, HS_FIG_SIGNED, "patching", m, (size_t)LH, 4, rl, PCOL,
                "patching hook_z: normalised LD (1 = clean answer restored)",
                "patched where / direction", "head", 1.0, "normalised logit difference",
                r->patch_usable ? NULL : why,
                "normalised logit-difference metric when one head's hook_z is patched from the clean "
                "(one role) into the corrupted (other role, same nouns) run"))
        goto done;

    /* composition: rows = layer-0 heads, columns = heads of layers >= 1 */
    if (L > 1 && r->comp.q) {
        const float *src[3] = {r->comp.q, r->comp.k, r->comp.v};
        const char *nm[3] = {"composition_Q", "composition_K", "composition_V"};
        const char *kind[3] = {"Q", "K", "V"};
        /* one scale for Q, K and V: the three are compared */
        double lim = 0;
        for (int w = 0; w < 3; w++) {
            if (r->cfg.attn != HS_ATTN_SOFTMAX && w < 2) continue;
            for (int h1 = 0; h1 < H; h1++)
                for (int k2 = H; k2 < LH; k2++) {
                    size_t i = (((size_t)0 * H + h1) * L + k2 / H) * H + k2 % H;
                    lim = fmax(lim, fabs(src[w][i] - r->comp.baseline));
                }
        }
        for (int w = 0; w < 3; w++) {
            if (r->cfg.attn != HS_ATTN_SOFTMAX && w < 2) continue; /* no Q/K: n/a */
            for (int h1 = 0; h1 < H; h1++) {
                rl[h1] = r->heads[h1].name;
                for (int k2 = H; k2 < LH; k2++) {
                    const int l2 = k2 / H, h2 = k2 % H;
                    size_t i = (((size_t)0 * H + h1) * L + l2) * H + h2;
                    m[h1 * (LH - H) + (k2 - H)] = (float)(src[w][i] - r->comp.baseline);
                    cl[k2 - H] = r->heads[k2].name;
                }
            }
            char title[160], shows[200];
            snprintf(title, sizeof title, "%s-composition score minus random baseline %.3f (LN folded)", kind[w],
                     r->comp.baseline);
            snprintf(shows, sizeof shows, "%s-composition scores (C3, LN folded) of layer-0 heads into later "
                     "heads, minus the random baseline", kind[w]);
            if (cli_out_fig(&x, HS_FIG_SIGNED, nm[w], m, (size_t)H, (size_t)(LH - H), rl, cl, title,
                        "receiver (later head)", "sender (layer 0)", lim,
                        "composition score - baseline", NULL, shows))
                goto done;
        }
    }
    /* path patching into the decision heads */
    if (r->n_decision > 0 && r->path) {
        size_t nc = 0;
        for (int d = 0; d < r->n_decision && nc + 3 <= n_lab; d++)
            for (int w = 0; w < 3; w++) {
                if (r->cfg.attn != HS_ATTN_SOFTMAX && w < 2) continue;
                const hs_circuit_head *hd = &r->heads[r->decision[d].layer * H + r->decision[d].head];
                snprintf(lab[nc], sizeof lab[0], "%s %c", hd->name, "qkv"[w]);
                cl[nc] = lab[nc];
                nc++;
            }
        for (int s = 0; s < H; s++) {
            rl[s] = r->heads[s].name;
            size_t c = 0;
            for (int d = 0; d < r->n_decision && c < nc; d++)
                for (int w = 0; w < 3; w++) {
                    if (r->cfg.attn != HS_ATTN_SOFTMAX && w < 2) continue;
                    float v = r->path[((size_t)s * r->n_decision + d) * 3 + w];
                    m[s * nc + c++] = isfinite(v) ? v : 0.0f;
                }
        }
        if (cli_out_fig(&x, HS_FIG_SIGNED, "path_patching", m, (size_t)H, nc, rl, cl,
                    "path patching layer-0 head -> decision head input: normalised logit difference",
                    "receiver input", "sender (layer 0)", 1.0, "normalised logit difference",
                    r->patch_usable ? NULL : why,
                    "normalised logit-difference metric when only the edge from a layer-0 head into a decision "
                    "head's q, k or v is patched (receiver LN recomputed)"))
            goto done;
    }
    {
        cJSON *extra = cJSON_CreateObject();
        cJSON *cfg = hs_config_to_json(&r->cfg, HS_CONFIG_JSON_ALL);
        int ok = extra && cfg && cJSON_AddItemToObject(extra, "config", cfg);
        if (!ok) cJSON_Delete(cfg); /* not attached: still ours */
        ok = ok && cJSON_AddStringToObject(extra, "model", model) && cJSON_AddStringToObject(extra, "route", r->route);
        if (cli_out_index_with(od, extra, ok)) goto done;
    }
    rc = 0;
done:
    free(m);
    free(lab);
    free(rl);
    free(cl);
    return rc;
}

int cmd_circuit(int argc, char **argv)
{
    enum { O_MODEL = 256, O_OUT, O_JSON, O_PA, O_PD, O_S1, O_DP, O_DD, O_RA, O_RD, O_AK, O_REF, O_CD, O_THREADS };
    static const struct option opts[] = {{"model", required_argument, 0, O_MODEL},
                                         {"out", required_argument, 0, O_OUT},
                                         {"json", no_argument, 0, O_JSON},
                                         CLI_HELP_OPT,
                                         {"push-attn", required_argument, 0, O_PA},
                                         {"push-dla", required_argument, 0, O_PD},
                                         {"step1-drop", required_argument, 0, O_S1},
                                         {"decide-patch", required_argument, 0, O_DP},
                                         {"decide-drop", required_argument, 0, O_DD},
                                         {"route-attn", required_argument, 0, O_RA},
                                         {"route-dla", required_argument, 0, O_RD},
                                         {"adj-key-diff", required_argument, 0, O_AK},
                                         {"ablate-ref", required_argument, 0, O_REF},
                                         {"comp-draws", required_argument, 0, O_CD},
                                         {"threads", required_argument, 0, O_THREADS},
                                         CLI_VOCAB_OPT,
                                         CLI_SPLIT_OPTS,
                                         CLI_FIGOPTS_LONGOPTS,
                                         {0, 0, 0, 0}};
    const char *C = "circuit", *model = NULL, *out = NULL;
    int json = 0, c, comp_draws = 0;
    hs_load_source from = {0};
    hs_circuit_opts o = hs_circuit_opts_default();
    hs_figopts fo;
    hs_figopts_default(&fo, 300);
    cli_opts op = {.cmd = C, .help = CIRCUIT_HELP, .src = &from, .fo = &fo};
    while ((c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END) {
        double v;
        long n;
        switch (c) {
        case CLI_OPT_EXIT: return op.status;
        case O_MODEL: model = optarg; break;
        case O_OUT: out = optarg; break;
        case O_JSON: json = 1; break;
#define FLT(opt, name, lo, hi, dst, scale)                                                        \
    case opt:                                                                                     \
        if (cli_parse_float(optarg, lo, hi, &v))                                                  \
            return cli_usage_error(C, "--%s needs a number in [%g, %g], got '%s'", name, lo, hi, optarg); \
        dst = v * (scale);                                                                        \
        break;
        FLT(O_PA, "push-attn", 0.0, 1.0, o.push_attn, 1.0)
        FLT(O_PD, "push-dla", 0.0, 1000.0, o.push_dla, 1.0)
        FLT(O_S1, "step1-drop", 0.0, 100.0, o.step1_drop, 0.01)
        FLT(O_DP, "decide-patch", 0.0, 1000.0, o.decide_patch, 1.0)
        FLT(O_DD, "decide-drop", 0.0, 100.0, o.decide_drop, 0.01)
        FLT(O_RA, "route-attn", 0.0, 1.0, o.route_attn, 1.0)
        FLT(O_RD, "route-dla", 0.0, 1000.0, o.route_dla, 1.0)
        FLT(O_AK, "adj-key-diff", 0.0, 1.0, o.adj_key_diff, 1.0)
#undef FLT
        case O_REF: {
            int s = hs_wg_split_parse(optarg);
            if (s < 0) return cli_usage_error(C, "unknown --ablate-ref '%s' (train, heldout)", optarg);
            o.ablate_ref = (hs_wg_split)s;
            break;
        }
        case O_CD:
            if (cli_parse_int(optarg, 2, 100000, &n))
                return cli_usage_error(C, "--comp-draws needs an integer in [2, 100000], got '%s'", optarg);
            o.comp_draws = (int)n;
            comp_draws = (int)n;
            break;
        case O_THREADS:
            if (cli_parse_threads(C, optarg, &o.threads)) return 2;
            break;
        }
    }
    int rest = cli_args_end(C, argc, argv, optind, model);
    if (rest) return rest;
    hs_error err = {0};
    hs_loaded Ld;
    int lrc = cli_load_src(C, model, HS_NEED_ANY_TASK, &from, &Ld);
    if (lrc) {
        hs_figopts_free(&fo);
        return lrc;
    }
    hs_outdir od = {0};
    const char *const inputs[] = {model, NULL}; /* never replaced or removed */
    if (out && (cli_figopts_font(C, &fo) || cli_outdir_open(&od, C, out, &fo, inputs))) {
        hs_outdir_close(&od);
        hs_loaded_free(&Ld);
        hs_figopts_free(&fo);
        return 1;
    }
    if (Ld.ind) { /* an induction-task model: its own check (cmd_circuit_induction.c) */
        int irc = cli_circuit_induction(C, model, &Ld, json, out ? &od : NULL, comp_draws);
        hs_outdir_close(&od);
        hs_loaded_free(&Ld);
        hs_figopts_free(&fo);
        return irc;
    }
    hs_circuit_report r;
    if (hs_circuit_run(Ld.model, Ld.task, &o, &r, &err) != HS_OK) {
        hs_outdir_close(&od);
        hs_loaded_free(&Ld);
        hs_figopts_free(&fo);
        return cli_error(C, &err);
    }
    int rc = 0;
    char *text = NULL;
    cJSON *rep = NULL;
    if (hs_circuit_report_json(&r, model, &rep, &err) != HS_OK) {
        rc = cli_error(C, &err);
    } else if (json) {
        if ((text = cJSON_Print(rep)) == NULL) {
            fprintf(stderr, "headscope %s: out of memory\n", C);
            rc = 1;
        }
    } else if (hs_circuit_summary(&r, &text, &err) != HS_OK) {
        rc = cli_error(C, &err);
    }
    if (rc == 0 && out && write_outputs(&r, rep, &od, model)) rc = 1;
    if (rc == 0) {
        fputs(text, stdout);
        if (json) fputc('\n', stdout);
        else if (out) {
            fputc('\n', stdout);
            cli_out_say_wrote(&od, "report.json, figures");
        }
        rc = cli_stdout_done(C);
        if (rc == 0) cli_say_threads(C, o.threads);
    }
    free(text);
    cJSON_Delete(rep);
    hs_outdir_close(&od);
    hs_figopts_free(&fo);
    hs_circuit_report_free(&r);
    hs_loaded_free(&Ld);
    return rc;
}
