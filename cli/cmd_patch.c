/*
 * cli/cmd_patch.c -- `headscope patch`: activation patching clean ->
 * corrupted over a prompt set (experiments/ hs_patch_run_method on the
 * experiment engine: the exact sweep, attribution patching, or both): tables on stdout (or the JSON with --json), and with --out DIR
 * patch.json and one figure per activation (and per head x position).
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "expout.h"
#include "figopts.h"
#include "util.h"

static const char PATCH_HELP[] =
    "usage: headscope patch --model FILE --data FILE.jsonl [options]\n"
    "\n"
    "Activation patching, as TransformerLens's patching.py (get_act_patch_*):\n"
    "each prompt's clean run is cached; then, one cell at a time, the clean value\n"
    "of one activation replaces the corrupted run's, and the logit difference\n"
    "LD = logit(answer) - logit(wrong) is read at each prompt's position. The\n"
    "value of a cell is the normalised LD over the set,\n"
    "  (LD_patched - LD_corrupted) / (LD_clean - LD_corrupted)\n"
    "(means over the prompts): 0 = no effect, 1 = the clean answer restored.\n"
    "Cells: layer x position for resid_pre, attn_out, mlp_out, resid_post\n"
    "(blocks.l.hook_*); head (all positions, and head x position) for z, q, k, v\n"
    "(blocks.l.attn.hook_*) and pattern (hook_pattern; the position is the\n"
    "destination row). Layers, heads and positions count from 0.\n"
    "\n"
    "--method atp estimates every cell from two forwards and one backward per\n"
    "chunk of prompts instead (attribution patching, Nanda 2023; Kramar et al.\n"
    "2024): LD_patched - LD_corrupted ~ (a_clean - a_corrupted) . dLD/da, the\n"
    "gradient taken at the corrupted run, which the patch changes; normalised\n"
    "as the exact cells. --method both prints each act's exact table, then its\n"
    "AtP table and Pearson's r between the two.\n"
    "\n"
    "options:\n"
    "  --model PATH          a Hugging Face GPT-2 folder or a checkpoint (.safetensors)\n"
    CLI_VOCAB_HELP
    "  --data FILE           prompt set: JSONL, one object a line with \"prompt\",\n"
    "                        \"corrupted\" (same number of tokens), \"answer\" and\n"
    "                        \"wrong\" (tokens of the vocabulary), optional\n"
    "                        \"position\" (default the last token); every prompt has\n"
    "                        the same number of tokens\n"
    "  --acts LIST           comma-separated: resid_pre,attn_out,mlp_out,resid_post,\n"
    "                        z,q,k,v,pattern (default: every one the model has)\n"
    "  --method M            exact (default: one patched run per cell), atp (the\n"
    "                        first-order estimate) or both (side by side, with\n"
    "                        their correlation per act)\n"
    "  --by CELLS            the cells of a head act (z, q, k, v, pattern): head\n"
    "                        (the head patched at every position at once, TL's\n"
    "                        get_act_patch_attn_head_out_all_pos), head,position\n"
    "                        (the head at one position, ..._by_pos) or both\n"
    "                        (default); exact method only\n"
    "  --out DIR             write patch.json and patch_<act>.{png,svg,json} (+\n"
    "                        patch_<act>_by_position for heads) into DIR (created\n"
    "                        if missing; its parent must exist)\n"
    "  --json                print every number as JSON instead of the tables\n"
    "  --threads N           worker threads, 0 = every CPU (default); the numbers\n"
    "                        are bit-identical for every count\n"
    "\n"
    "Prompt-set errors name the file and line (unknown word, a corrupted prompt\n"
    "of another length, an answer not in the vocabulary, a bad key).\n"
    "Exit status: 0 ok, 1 user error, 2 usage error.\n";

/* --acts LIST into bits; -1 on an unknown name (printed). */
static int parse_acts(const char *C, const char *s, unsigned *acts)
{
    *acts = 0;
    char *copy = hs_strdup(s), *save = NULL;
    if (copy == NULL) return -1;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int a = hs_patch_act_parse(t);
        if (a < 0) {
            cli_usage_error(C, "unknown activation '%s' in --acts (resid_pre, attn_out, mlp_out, resid_post, "
                               "z, q, k, v, pattern)", t);
            free(copy);
            return -1;
        }
        *acts |= 1u << a;
    }
    free(copy);
    if (*acts == 0) {
        cli_usage_error(C, "--acts is empty");
        return -1;
    }
    return 0;
}

int cmd_patch(int argc, char **argv)
{
    enum { O_ACTS = 256, O_METHOD, O_BY };
    static const struct option opts[] = {{"acts", required_argument, 0, O_ACTS},
                                         {"method", required_argument, 0, O_METHOD},
                                         {"by", required_argument, 0, O_BY},
                                         CLI_HELP_OPT,
                                         CLI_EXP_LONGOPTS,
                                         {0, 0, 0, 0}};
    const char *C = "patch";
    unsigned acts = 0;
    int c, method = HS_PATCH_EXACT, by = HS_PATCH_BY_BOTH;
    cli_exp x;
    cli_exp_init(&x, C);
    cli_opts op = {.cmd = C, .help = PATCH_HELP, .exp = &x};
    while ((c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END) {
        switch (c) {
        case CLI_OPT_EXIT: return op.status;
        case O_ACTS:
            if (parse_acts(C, optarg, &acts)) return 2;
            break;
        case O_METHOD:
            if ((method = hs_patch_method_parse(optarg)) < 0) {
                cli_usage_error(C, "unknown --method '%s' (exact, atp, both)", optarg);
                return 2;
            }
            break;
        case O_BY:
            if ((by = hs_patch_by_parse(optarg)) < 0) {
                cli_usage_error(C, "unknown --by '%s' (one of: 'head', 'head,position', 'both')", optarg);
                return 2;
            }
            break;
        }
    }
    if (cli_exp_check(&x, argc, argv, 0)) return 2;
    if (by != HS_PATCH_BY_BOTH && method != HS_PATCH_EXACT) {
        cli_usage_error(C, "--by is for --method exact (AtP estimates every cell at once)");
        return 2;
    }
    hs_error err = {0};
    int rc = 1;
    cJSON *j = NULL;
    hs_buf text = {0};
    hs_patch_report r = {0};
    if (cli_exp_open(&x, 0)) goto done;
    if (acts == 0) { /* every act the model produces */
        const hs_config *cfg = &x.Ld.model->cfg;
        for (int a = 0; a < HS_PATCH_N; a++) acts |= 1u << a;
        if (cfg->d_mlp == 0) acts &= ~(1u << HS_PATCH_MLP_OUT);
        if (cfg->attn != HS_ATTN_SOFTMAX) acts &= ~((1u << HS_PATCH_Q) | (1u << HS_PATCH_K));
        if (hs_kv_heads(cfg) != cfg->n_heads) /* k, v per key/value head: hs_patch_check */
            acts &= ~((1u << HS_PATCH_K) | (1u << HS_PATCH_V));
    }
    if (hs_patch_run_by(x.Ld.model, x.pool, &x.p, acts, (hs_patch_method)method, (hs_patch_by)by, &r, &err) !=
        HS_OK) {
        rc = cli_error(C, &err);
        goto done;
    }
    if ((j = hs_patch_json(&r)) == NULL) {
        fprintf(stderr, "headscope %s: out of memory\n", C);
        goto done;
    }
    if (x.out && hs_patch_figures(&r, &x.p, x.Ld.vocab, &x.Ld.model->cfg, x.model, &x.od, &err) != HS_OK) {
        rc = cli_error(C, &err);
        goto done;
    }
    hs_patch_summary(&r, &text);
    rc = cli_exp_finish(&x, j, "patch",
                        "every patching number: normalised and raw logit differences per activation, layer, "
                        "head and position, LD clean and corrupted", &text);
done:
    hs_buf_free(&text);
    cJSON_Delete(j);
    hs_patch_report_free(&r);
    cli_exp_close(&x);
    return rc;
}
