/*
 * circuits/circuit_report.c -- the circuit report (hs_circuit_run's result) as
 * JSON (every number, the thresholds, verdicts, heads and roles, config) and
 * as the text summary `headscope circuit` prints, one writer per section in
 * the order they appear; the verdict's own section and lines are written
 * beside its rules (circuits/circuit_verdict.c). Also the JSON helpers the
 * circuit reports share (circuits_internal.h).
 */
#include "circuits/circuits_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* JSON helpers                                                              */

static const char *const GROUP_NAMES[3] = {"crosser", "crossed", "all"};
static const char *const PATCH_NAMES[3] = {"crosser_to_crossed", "crossed_to_crosser", "both"};

int hs_circ_json_add(cJSON *o, const char *key, cJSON *item)
{
    if (item == NULL) return 0;
    if (!cJSON_AddItemToObject(o, key, item)) {
        cJSON_Delete(item);
        return 0;
    }
    return 1;
}

int hs_circ_json_num(cJSON *o, const char *key, double v)
{
    return hs_circ_json_add(o, key, hs_json_num_or_null(v));
}

/* {names[0]: v[0], names[1]: v[1], names[2]: v[2]}; NULL on OOM. */
static cJSON *named3(const char *const names[3], const double v[3])
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL) return NULL;
    for (int g = 0; g < 3; g++)
        if (!hs_circ_json_num(o, names[g], v[g])) {
            cJSON_Delete(o);
            return NULL;
        }
    return o;
}

cJSON *hs_circ_json_groups3(const double v[3])
{
    return named3(GROUP_NAMES, v);
}

/* {"crosser_to_crossed": .., "crossed_to_crosser": .., "both": ..}. */
static cJSON *patch3(const double v[3])
{
    return named3(PATCH_NAMES, v);
}

/* The name string of head h of the report ("L1H2"); NULL on OOM. */
static cJSON *head_ref(const hs_circuit_report *r, hs_head h)
{
    return cJSON_CreateString(r->heads[h.layer * r->H + h.head].name);
}

cJSON *hs_circ_json_array_object(cJSON *a)
{
    cJSON *e = cJSON_CreateObject();
    if (!e || !cJSON_AddItemToArray(a, e)) {
        cJSON_Delete(e);
        return NULL;
    }
    return e;
}

int hs_circ_json_head_list(cJSON *o, const char *key, const hs_head *h, int n)
{
    cJSON *a = cJSON_AddArrayToObject(o, key);
    if (!a) return 0;
    for (int i = 0; i < n; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "L%dH%d", h[i].layer, h[i].head);
        if (!cJSON_AddItemToArray(a, cJSON_CreateString(nm))) return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* JSON sections (each returns 0 on OOM)                                     */

/* The model, task, split, numbering, positions and thresholds. */
static int json_setup(cJSON *root, const hs_circuit_report *r, const char *model_path)
{
    const hs_circuit_opts *o = &r->opts;
    if (model_path && !cJSON_AddStringToObject(root, "model", model_path)) return 0;
    if (!hs_circ_json_add(root, "config", hs_config_to_json(&r->cfg, HS_CONFIG_JSON_ALL))) return 0;
    if (!cJSON_AddStringToObject(root, "task", hs_task_name(r->task))) return 0;
    const char *given = r->pairs_read ? "held-out pairs given (the checkpoint's task metadata)"
                                      : "held-out pairs given (--heldout-pairs)";
    if (r->pairs_given ? !cJSON_AddNullToObject(root, "split_seed") ||
                             !cJSON_AddStringToObject(root, "split", given)
                       : !cJSON_AddNumberToObject(root, "split_seed", (double)r->split_seed))
        return 0;
    if (!cJSON_AddBoolToObject(root, "chapter_pair_held_out", r->chapter_pair_held_out)) return 0;
    if (!cJSON_AddStringToObject(root, "numbering",
                                 "layers, heads and positions count from 0; the chapter's block 1 = layer 0, block 2 = layer 1"))
        return 0;
    cJSON *pos = cJSON_AddObjectToObject(root, "positions");
    if (!pos || !cJSON_AddNumberToObject(pos, "x", HS_WG_POS_X) ||
        !cJSON_AddNumberToObject(pos, "y", HS_WG_POS_Y) ||
        !cJSON_AddNumberToObject(pos, "adjective", HS_WG_POS_ADJ) ||
        !cJSON_AddNumberToObject(pos, "query", HS_WG_POS_QUERY) ||
        !cJSON_AddNumberToObject(pos, "ref", HS_WG_POS_REF))
        return 0;
    cJSON *th = cJSON_AddObjectToObject(root, "thresholds");
    return th && hs_circ_json_num(th, "push_attn", o->push_attn) && hs_circ_json_num(th, "push_dla", o->push_dla) &&
           hs_circ_json_num(th, "step1_drop", o->step1_drop) &&
           hs_circ_json_num(th, "decide_patch", o->decide_patch) &&
           hs_circ_json_num(th, "min_ld_gap", o->min_ld_gap) &&
           hs_circ_json_num(th, "decide_drop", o->decide_drop) &&
           hs_circ_json_num(th, "route_attn", o->route_attn) && hs_circ_json_num(th, "route_dla", o->route_dla) &&
           hs_circ_json_num(th, "adj_key_diff", o->adj_key_diff) &&
           cJSON_AddStringToObject(th, "ablate_ref", hs_wg_split_name(o->ablate_ref)) &&
           cJSON_AddNumberToObject(th, "comp_draws", o->comp_draws) &&
           cJSON_AddNumberToObject(th, "comp_seed", (double)o->comp_seed);
}

/* The held-out accuracy and the layer-0 invariant. */
static int json_heldout(cJSON *root, const hs_circuit_report *r)
{
    cJSON *ho = cJSON_AddObjectToObject(root, "heldout");
    if (!ho || !cJSON_AddNumberToObject(ho, "n", (double)r->n_heldout) ||
        !cJSON_AddNumberToObject(ho, "n_crosser", (double)r->n_role[0]) ||
        !cJSON_AddNumberToObject(ho, "n_crossed", (double)r->n_role[1]) ||
        !hs_circ_json_add(ho, "accuracy", hs_circ_json_groups3(r->acc)) ||
        !hs_circ_json_add(ho, "other_noun_rate", hs_circ_json_groups3(r->other_rate)))
        return 0;
    cJSON *inv = cJSON_AddObjectToObject(root, "invariant");
    return inv && cJSON_AddBoolToObject(inv, "applicable", r->inv_applicable) &&
           cJSON_AddStringToObject(inv, "what",
                                   "blocks.0.attn.hook_attn_scores row 14: max |difference| between two held-out "
                                   "sentences over the columns whose tokens are equal (all heads, columns 0..14)") &&
           cJSON_AddNumberToObject(inv, "pairs_same_nouns", (double)r->inv_pairs_same_nouns) &&
           cJSON_AddNumberToObject(inv, "pairs_other_nouns", (double)r->inv_pairs_other_nouns) &&
           cJSON_AddNumberToObject(inv, "cells_compared", (double)r->inv_cells) &&
           hs_circ_json_num(inv, "max_dev_same_nouns", r->inv_max_dev_same_nouns) &&
           hs_circ_json_num(inv, "max_dev_other_nouns", r->inv_max_dev_other_nouns) &&
           hs_circ_json_num(inv, "layer0_score_mean_abs", r->inv_score_mean_abs) &&
           hs_circ_json_num(inv, "layer1_mean_dev", r->inv_l1_mean_dev) &&
           hs_circ_json_num(inv, "layer1_max_dev", r->inv_l1_max_dev);
}

/* Head k's object, appended to heads. */
static int json_head(cJSON *heads, const hs_circuit_report *r, int k)
{
    static const char *const ON[4] = {"x", "y", "adjective", "elsewhere"};
    static const char *const DL[4] = {"x", "y", "x_minus_y", "ref_minus_other"};
    const hs_circuit_head *hd = &r->heads[k];
    cJSON *h = hs_circ_json_array_object(heads);
    if (!h || !cJSON_AddStringToObject(h, "name", hd->name) || !cJSON_AddNumberToObject(h, "layer", hd->layer) ||
        !cJSON_AddNumberToObject(h, "head", hd->head))
        return 0;
    cJSON *roles = cJSON_AddArrayToObject(h, "roles");
    if (!roles) return 0;
    if (hd->pusher & 1) cJSON_AddItemToArray(roles, cJSON_CreateString("candidate pusher (x)"));
    if (hd->pusher & 2) cJSON_AddItemToArray(roles, cJSON_CreateString("candidate pusher (y)"));
    if (hd->decision & 1) cJSON_AddItemToArray(roles, cJSON_CreateString("decision (patching)"));
    if (hd->decision & 2) cJSON_AddItemToArray(roles, cJSON_CreateString("decision (ablation)"));
    cJSON *at = cJSON_AddObjectToObject(h, "attention_at_14");
    cJSON *dl = cJSON_AddObjectToObject(h, "dla_at_14");
    if (!at || !dl) return 0;
    for (int g = 0; g < 3; g++) {
        cJSON *ag = cJSON_AddObjectToObject(at, GROUP_NAMES[g]);
        cJSON *dg = cJSON_AddObjectToObject(dl, GROUP_NAMES[g]);
        if (!ag || !dg) return 0;
        for (int i = 0; i < 4; i++)
            if (!hs_circ_json_num(ag, ON[i], hd->attn[g][i]) || !hs_circ_json_num(dg, DL[i], hd->dla[g][i]))
                return 0;
    }
    if (!hs_circ_json_num(h, "copying_score", hd->copying) ||
        !hs_circ_json_num(h, "copying_pos_frac", hd->copying_pos))
        return 0;
    cJSON *pt = cJSON_AddObjectToObject(h, "patching");
    if (!pt || !hs_circ_json_add(pt, "pos14", patch3(hd->patch_pos14)) ||
        !hs_circ_json_add(pt, "all_positions", patch3(hd->patch_all)))
        return 0;
    cJSON *ab = cJSON_AddObjectToObject(h, "mean_ablation");
    double drop[3];
    for (int g = 0; g < 3; g++) drop[g] = r->acc[g] - hd->acc_ablated[g];
    if (!ab || !hs_circ_json_add(ab, "accuracy", hs_circ_json_groups3(hd->acc_ablated)) ||
        !hs_circ_json_add(ab, "drop", hs_circ_json_groups3(drop)))
        return 0;
    cJSON *rows = cJSON_AddObjectToObject(h, "mean_pattern_row_14");
    if (!rows) return 0;
    for (int g = 0; g < 2; g++) {
        cJSON *a = cJSON_CreateFloatArray(r->attn_rows + ((size_t)k * 2 + g) * HS_CIRC_T, HS_CIRC_T);
        if (!hs_circ_json_add(rows, GROUP_NAMES[g], a)) return 0;
    }
    return 1;
}

/* Every head, then the head-averaged pattern rows of each layer. */
static int json_heads(cJSON *root, const hs_circuit_report *r)
{
    cJSON *heads = cJSON_AddArrayToObject(root, "heads");
    if (!heads) return 0;
    for (int k = 0; k < r->L * r->H; k++)
        if (!json_head(heads, r, k)) return 0;
    cJSON *avg = cJSON_AddArrayToObject(root, "layer_mean_pattern_row_14");
    if (!avg) return 0;
    for (int l = 0; l < r->L; l++) {
        cJSON *e = hs_circ_json_array_object(avg);
        if (!e || !cJSON_AddNumberToObject(e, "layer", l)) return 0;
        for (int g = 0; g < 2; g++)
            if (!hs_circ_json_add(e, GROUP_NAMES[g],
                                   cJSON_CreateFloatArray(r->attn_rows_avg + ((size_t)l * 2 + g) * HS_CIRC_T, HS_CIRC_T)))
                return 0;
    }
    return 1;
}

/* Each layer's attention and MLP mean-ablated, and the method. */
static int json_ablation(cJSON *root, const hs_circuit_report *r)
{
    cJSON *blk = cJSON_AddArrayToObject(root, "block_ablation");
    if (!blk) return 0;
    for (int l = 0; l < r->L; l++) {
        cJSON *e = hs_circ_json_array_object(blk);
        if (!e || !cJSON_AddNumberToObject(e, "layer", l) ||
            !hs_circ_json_add(e, "attention_accuracy", hs_circ_json_groups3(r->acc_block_attn[l])) ||
            !hs_circ_json_add(e, "mlp_accuracy", hs_circ_json_groups3(r->acc_block_mlp[l])))
            return 0;
    }
    return cJSON_AddStringToObject(root, "ablation_method",
                                   "mean ablation, position-wise means of hook_z (heads) / hook_mlp_out (MLP) over the reference split") &&
           cJSON_AddNumberToObject(root, "ablation_ref_sentences", (double)r->n_ablate_ref);
}

/* The activation patching's method, LDs and each whole layer at 14. */
static int json_patching(cJSON *root, const hs_circuit_report *r)
{
    cJSON *pm = cJSON_AddObjectToObject(root, "patching");
    if (!pm || !cJSON_AddStringToObject(pm, "method",
                                        "activation patching of hook_z at position 14 (pos14) or all positions; clean = "
                                        "crosser (resp. crossed) sentence, corrupted = the other-role sentence with the same "
                                        "nouns; LD = logit(ref_clean) - logit(ref_corr) at 14; metric = (LD_patched - LD_corr) "
                                        "/ (LD_clean - LD_corr)") ||
        !hs_circ_json_add(pm, "ld_clean", patch3(r->ld_clean)) || !hs_circ_json_add(pm, "ld_corr", patch3(r->ld_corr)) ||
        !cJSON_AddBoolToObject(pm, "usable", r->patch_usable))
        return 0;
    cJSON *pla = cJSON_AddArrayToObject(pm, "whole_layer_pos14");
    if (!pla) return 0;
    for (int l = 0; l < r->L; l++) {
        cJSON *e = hs_circ_json_array_object(pla);
        if (!e || !cJSON_AddNumberToObject(e, "layer", l) || !hs_circ_json_add(e, "metric", patch3(r->patch_layer[l])))
            return 0;
    }
    return 1;
}

/* The composition scores of every pair (sender layer < receiver layer). */
static int json_composition(cJSON *root, const hs_circuit_report *r)
{
    const int L = r->L, H = r->H;
    const hs_comp_scores *c = &r->comp;
    cJSON *cp = cJSON_AddObjectToObject(root, "composition");
    if (!cp || !hs_circ_json_num(cp, "baseline", c->baseline) || !hs_circ_json_num(cp, "baseline_std", c->baseline_std) ||
        !cJSON_AddNumberToObject(cp, "n_draws", c->n_draws) ||
        !cJSON_AddStringToObject(cp, "fold", "LN folded and centred (HS_FOLD_LN)"))
        return 0;
    cJSON *pairs = cJSON_AddArrayToObject(cp, "pairs");
    if (!pairs) return 0;
    if (c->q == NULL) return 1;
    for (int l1 = 0; l1 < L; l1++)
        for (int h1 = 0; h1 < H; h1++)
            for (int l2 = l1 + 1; l2 < L; l2++)
                for (int h2 = 0; h2 < H; h2++) {
                    size_t i = (((size_t)l1 * H + h1) * L + l2) * H + h2;
                    cJSON *e = hs_circ_json_array_object(pairs);
                    if (!e || !cJSON_AddStringToObject(e, "sender", r->heads[l1 * H + h1].name) ||
                        !cJSON_AddStringToObject(e, "receiver", r->heads[l2 * H + h2].name) ||
                        !hs_circ_json_num(e, "q", c->q[i]) || !hs_circ_json_num(e, "k", c->k[i]) ||
                        !hs_circ_json_num(e, "v", c->v[i]) ||
                        !hs_circ_json_num(e, "q_minus_baseline", c->q[i] - c->baseline) ||
                        !hs_circ_json_num(e, "k_minus_baseline", c->k[i] - c->baseline) ||
                        !hs_circ_json_num(e, "v_minus_baseline", c->v[i] - c->baseline))
                        return 0;
                }
    return 1;
}

/* Path patching from each layer-0 head into each decision head. */
static int json_paths(cJSON *root, const hs_circuit_report *r)
{
    cJSON *pp = cJSON_AddObjectToObject(root, "path_patching");
    if (!pp || !cJSON_AddStringToObject(pp, "method",
                                        "sender = layer-0 head, receiver = decision head's q, k or v input "
                                        "(receiver LN recomputed); both directions; normalised LD metric"))
        return 0;
    cJSON *pl = cJSON_AddArrayToObject(pp, "edges");
    if (!pl) return 0;
    for (int s = 0; s < r->H && r->path; s++)
        for (int d = 0; d < r->n_decision; d++) {
            cJSON *e = hs_circ_json_array_object(pl);
            const float *v = &r->path[((size_t)s * r->n_decision + d) * 3];
            if (!e || !cJSON_AddStringToObject(e, "sender", r->heads[s].name) ||
                !hs_circ_json_add(e, "receiver", head_ref(r, r->decision[d])) ||
                !hs_circ_json_num(e, "q", v[0]) || !hs_circ_json_num(e, "k", v[1]) ||
                !hs_circ_json_num(e, "v", v[2]))
                return 0;
        }
    return 1;
}

hs_status hs_circuit_report_json(const hs_circuit_report *r, const char *model_path,
                                 cJSON **json, hs_error *err)
{
    *json = NULL;
    cJSON *root = cJSON_CreateObject();
    if (!root || !json_setup(root, r, model_path) || !json_heldout(root, r) || !json_heads(root, r) ||
        !json_ablation(root, r) || !json_patching(root, r) || !json_composition(root, r) ||
        !json_paths(root, r) || (r->disc.ran && !hs_circ_discovery_json(root, &r->disc)) ||
        !hs_circ_verdict_json(root, r)) {
        cJSON_Delete(root);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory building the report JSON");
    }
    *json = root;
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* Text summary                                                              */

static const char *pct(char *b, size_t n, double v)
{
    if (isfinite(v)) snprintf(b, n, "%5.1f%%", 100 * v);
    else snprintf(b, n, "   n/a");
    return b;
}

/* v as " %+<width>.2f" with no sign on a value that rounds to zero
 * (hs_buf_fixed), or "n/a" when not finite; into b (n bytes). */
static const char *fmtv(char *b, size_t n, int width, double v)
{
    hs_buf t = {0};
    if (isfinite(v)) hs_buf_fixed(&t, v, width, 2, 1);
    snprintf(b, n, "%s", !isfinite(v) ? "n/a" : t.s ? t.s : "?");
    hs_buf_free(&t);
    return b;
}

/* The run, the model, the held-out accuracy, the numbering. */
static void sum_setup(hs_buf *s, const hs_circuit_report *r)
{
    char a[32], b[32], c3[32], d4[32];
    char split[48];
    if (r->pairs_given)
        snprintf(split, sizeof split, "held-out pairs given");
    else
        snprintf(split, sizeof split, "split seed %llu", (unsigned long long)r->split_seed);
    hs_buf_printf(s, "circuit: %s, %s, %zu held-out sentences (%zu crosser, %zu crossed); "
                  "the chapter's pair (animal, street) is %s\n",
              hs_task_name(r->task), split, r->n_heldout, r->n_role[0],
              r->n_role[1], r->chapter_pair_held_out ? "held out" : "in training");
    hs_buf_printf(s, "model: %d layer%s x %d heads (d_head %d), d_model %d, d_mlp %d, %s, %s attention\n", r->L,
              r->L > 1 ? "s" : "", r->H, r->cfg.d_head, r->cfg.d_model, r->cfg.d_mlp, hs_norm_name(r->cfg.norm),
              hs_attn_name(r->cfg.attn));
    hs_buf_printf(s, "held-out accuracy %s (crosser %s, crossed %s); other noun %s\n",
              pct(a, sizeof a, r->acc[2]), pct(b, sizeof b, r->acc[0]), pct(c3, sizeof c3, r->acc[1]),
              pct(d4, sizeof d4, r->other_rate[2]));
    hs_buf_printf(s, "layers, heads and positions count from 0 (block 1 = layer 0, block 2 = layer 1); "
                  "x = position 1, y = 6, adjective = 11, prediction at 14\n\n");
}

static void sum_invariant(hs_buf *s, const hs_circuit_report *r)
{
    hs_buf_printf(s, "invariant: layer-0 scores at position 14 differ only in columns whose tokens differ\n");
    if (!r->inv_applicable) {
        hs_buf_printf(s, "  not applicable: uniform attention has no scores\n\n");
        return;
    }
    hs_buf_printf(s, "  max |deviation| in equal-token columns: %.3g over %zu same-noun pairs, %.3g over %zu "
                  "other pairs (%zu cells; mean |score| %.3g)\n",
              r->inv_max_dev_same_nouns, r->inv_pairs_same_nouns, r->inv_max_dev_other_nouns,
              r->inv_pairs_other_nouns, r->inv_cells, r->inv_score_mean_abs);
    if (r->L > 1)
        hs_buf_printf(s, "  layer 1 in the same columns, for contrast: mean %.3g, max %.3g\n", r->inv_l1_mean_dev,
                  r->inv_l1_max_dev);
    hs_buf_printf(s, "\n");
}

/* The per-head table, then the head-averaged attention rows. */
static void sum_heads(hs_buf *s, const hs_circuit_report *r)
{
    char a[32], b[32], c3[32], d[5][32];
    hs_buf_printf(s, "per head at position 14 (means over the held-out sentences of each adjective role):\n");
    hs_buf_printf(s, "         attention crosser    | attention crossed    | DLA crosser | DLA crossed |       |"
                  " patch | ablated accuracy\n");
    hs_buf_printf(s, "          x    y  adj else |  x    y  adj else |    x     y  |    x     y  |  copy |   @14 |"
                  " crosser crossed\n");
    for (int k = 0; k < r->L * r->H; k++) {
        const hs_circuit_head *hd = &r->heads[k];
        if (k > 0 && hd->head == 0) hs_buf_printf(s, "\n");
        hs_buf_printf(s, "  %-5s %.2f %.2f %.2f %.2f | %.2f %.2f %.2f %.2f | %s %s | %s %s | %s | %s | %s %s",
                  hd->name, hd->attn[0][0], hd->attn[0][1], hd->attn[0][2], hd->attn[0][3], hd->attn[1][0],
                  hd->attn[1][1], hd->attn[1][2], hd->attn[1][3], fmtv(d[0], sizeof d[0], 5, hd->dla[0][0]),
                  fmtv(d[1], sizeof d[1], 5, hd->dla[0][1]), fmtv(d[2], sizeof d[2], 5, hd->dla[1][0]),
                  fmtv(d[3], sizeof d[3], 5, hd->dla[1][1]), fmtv(d[4], sizeof d[4], 0, hd->copying),
                  fmtv(a, sizeof a, 5, hd->patch_pos14[2]),
                  pct(b, sizeof b, hd->acc_ablated[0]), pct(c3, sizeof c3, hd->acc_ablated[1]));
        if (hd->pusher) hs_buf_printf(s, "  <- pusher (%s)", hd->pusher == 1 ? "x" : hd->pusher == 2 ? "y" : "x,y");
        if (hd->decision) hs_buf_printf(s, "  <- decision");
        hs_buf_printf(s, "\n");
    }
    hs_buf_printf(s, "\nhead-averaged attention at 14 (the chapter's rows; chapter: layer 0 0.70 on x for every "
                  "adjective; layer 1 crosser 1.00 on the adjective, crossed 0.49 on y):\n");
    for (int l = 0; l < r->L; l++)
        for (int g = 0; g < 2; g++) {
            const float *row = r->attn_rows_avg + ((size_t)l * 2 + g) * HS_CIRC_T;
            hs_buf_printf(s, "  L%d %-7s x %.2f  y %.2f  adj %.2f  elsewhere %.2f\n", l, GROUP_NAMES[g],
                      row[HS_WG_POS_X], row[HS_WG_POS_Y], row[HS_WG_POS_ADJ],
                      1.0 - row[HS_WG_POS_X] - row[HS_WG_POS_Y] - row[HS_WG_POS_ADJ]);
        }
}

static void sum_ablation(hs_buf *s, const hs_circuit_report *r)
{
    char a[32], b[32], c3[32];
    hs_buf_printf(s, "\nmean ablation (position-wise means over the %s split, %zu sentences): held-out accuracy "
                  "all / crosser / crossed\n",
              hs_wg_split_name(r->opts.ablate_ref), r->n_ablate_ref);
    hs_buf_printf(s, "  none            %s / %s / %s\n", pct(a, sizeof a, r->acc[2]), pct(b, sizeof b, r->acc[0]),
              pct(c3, sizeof c3, r->acc[1]));
    for (int l = 0; l < r->L; l++) {
        hs_buf_printf(s, "  L%d attention    %s / %s / %s\n", l, pct(a, sizeof a, r->acc_block_attn[l][2]),
                  pct(b, sizeof b, r->acc_block_attn[l][0]), pct(c3, sizeof c3, r->acc_block_attn[l][1]));
        if (r->cfg.d_mlp > 0)
            hs_buf_printf(s, "  L%d MLP          %s / %s / %s\n", l, pct(a, sizeof a, r->acc_block_mlp[l][2]),
                      pct(b, sizeof b, r->acc_block_mlp[l][0]), pct(c3, sizeof c3, r->acc_block_mlp[l][1]));
    }
    if (r->n_pushers > 0)
        hs_buf_printf(s, "  all pushers     %s / %s / %s\n", pct(a, sizeof a, r->acc_pushers[2]),
                  pct(b, sizeof b, r->acc_pushers[0]), pct(c3, sizeof c3, r->acc_pushers[1]));
}

/* The three pos14 cells of a patching row, under their headings (" %+6.2f"
 * each, no sign on a zero: hs_buf_fixed). */
static void patch_cells(hs_buf *s, const double v[3])
{
    hs_buf_fixed(s, v[0], 6, 2, 1);
    hs_buf_puts(s, "          ");
    hs_buf_fixed(s, v[1], 6, 2, 1);
    hs_buf_puts(s, "        ");
    hs_buf_fixed(s, v[2], 6, 2, 1);
}

static void sum_patching(hs_buf *s, const hs_circuit_report *r)
{
    char lc[HS_FIXED_BUF], lk[HS_FIXED_BUF];
    hs_buf_printf(s, "\nactivation patching (hook_z; clean = one role, corrupted = the other with the same nouns): "
                  "LD clean %s, corrupted %s\n",
              hs_fmt_fixed(lc, r->ld_clean[2], 2, 1), hs_fmt_fixed(lk, r->ld_corr[2], 2, 1));
    /* one label column (18 wide) for the head rows and the "L0 (all heads)" rows */
    hs_buf_printf(s, "       pos14: crosser->crossed crossed->crosser   both | all positions: both\n");
    for (int k = 0; k < r->L * r->H; k++) {
        const hs_circuit_head *hd = &r->heads[k];
        hs_buf_printf(s, "  %-16s", hd->name);
        patch_cells(s, hd->patch_pos14);
        hs_buf_puts(s, " |  ");
        hs_buf_fixed(s, hd->patch_all[2], 6, 2, 1);
        hs_buf_puts(s, "\n");
    }
    for (int l = 0; l < r->L; l++) {
        char lab[32];
        snprintf(lab, sizeof lab, "L%d (all heads)", l);
        hs_buf_printf(s, "  %-16s", lab);
        patch_cells(s, r->patch_layer[l]);
        hs_buf_puts(s, " |\n");
    }
}

/* Composition layer 0 -> layer 1, then path patching into the decision heads. */
static void sum_composition(hs_buf *s, const hs_circuit_report *r)
{
    const int L = r->L, H = r->H;
    char a[32], b[32], c3[32];
    if (L > 1) {
        hs_buf_printf(s, "\ncomposition scores minus the random baseline %.3f (+/- %.3f), layer 0 -> layer 1, Q / K / V:\n",
                  r->comp.baseline, r->comp.baseline_std);
        for (int h1 = 0; h1 < H; h1++) {
            hs_buf_printf(s, "  L0H%-2d ->", h1);
            for (int h2 = 0; h2 < H; h2++) {
                size_t i = (((size_t)0 * H + h1) * L + 1) * H + h2;
                hs_buf_printf(s, "  L1H%d %s/%s/%s", h2, fmtv(a, sizeof a, 0, r->comp.q[i] - r->comp.baseline),
                          fmtv(b, sizeof b, 0, r->comp.k[i] - r->comp.baseline),
                          fmtv(c3, sizeof c3, 0, r->comp.v[i] - r->comp.baseline));
            }
            hs_buf_printf(s, "\n");
        }
    }
    if (r->n_decision > 0 && r->path) {
        hs_buf_printf(s, "\npath patching layer-0 head -> decision head input (normalised LD, both directions), q / k / v:\n");
        for (int sd = 0; sd < H; sd++) {
            hs_buf_printf(s, "  L0H%-2d ->", sd);
            for (int d = 0; d < r->n_decision; d++) {
                const float *v = &r->path[((size_t)sd * r->n_decision + d) * 3];
                hs_buf_printf(s, "  %s %s/%s/%s", r->heads[r->decision[d].layer * H + r->decision[d].head].name,
                          fmtv(a, sizeof a, 0, v[0]), fmtv(b, sizeof b, 0, v[1]),
                          fmtv(c3, sizeof c3, 0, v[2]));
            }
            hs_buf_printf(s, "\n");
        }
    }
}

hs_status hs_circuit_summary(const hs_circuit_report *r, char **text, hs_error *err)
{
    *text = NULL;
    hs_buf s = {0};
    sum_setup(&s, r);
    sum_invariant(&s, r);
    sum_heads(&s, r);
    sum_ablation(&s, r);
    sum_patching(&s, r);
    sum_composition(&s, r);
    hs_circ_verdict_summary(&s, r);
    if (r->disc.ran) hs_circ_discovery_summary(&s, &r->disc);
    if ((*text = hs_buf_take(&s)) == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory writing the summary");
    return HS_OK;
}
