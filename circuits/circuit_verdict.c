/*
 * circuits/circuit_verdict.c -- the referent-circuit check's verdict rules
 * (circuits.h, "Verdicts"): candidate pushers, decision heads, steps 1 and 2 and
 * the route's features and name, each with the words that say why; and,
 * beside the rules, the verdict's report writers: its JSON section and its
 * summary lines.
 */
#include "circuits/circuits_internal.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Roles                                                                     */

static double max_drop(const double base[3], const double abl[3])
{
    double a = base[HS_CIRC_CROSSER] - abl[HS_CIRC_CROSSER];
    double b = base[HS_CIRC_CROSSED] - abl[HS_CIRC_CROSSED];
    return a > b ? a : b;
}

/* Largest mean weight (all held-out) a layer-0 head puts on target `on`. */
static double max_attn0(const hs_circuit_report *r, int on)
{
    double m = 0.0;
    for (int h = 0; h < r->H; h++)
        if (r->heads[h].attn[HS_CIRC_ALL][on] > m) m = r->heads[h].attn[HS_CIRC_ALL][on];
    return m;
}

void hs_circ_find_pushers(hs_circuit_report *r)
{
    for (int h = 0; h < r->H; h++) {
        hs_circuit_head *hd = &r->heads[h];
        if (hd->attn[HS_CIRC_ALL][HS_CIRC_ON_X] >= r->opts.push_attn &&
            hd->dla[HS_CIRC_ALL][HS_CIRC_DLA_X] >= r->opts.push_dla)
            hd->pusher |= 1;
        if (hd->attn[HS_CIRC_ALL][HS_CIRC_ON_Y] >= r->opts.push_attn &&
            hd->dla[HS_CIRC_ALL][HS_CIRC_DLA_Y] >= r->opts.push_dla)
            hd->pusher |= 2;
        if (hd->pusher) r->pushers[r->n_pushers++] = (hs_head){0, h};
    }
    for (int g = 0; g < 3; g++) r->acc_pushers[g] = NAN;
}

/* The normalised patching metric divides by LD_clean - LD_corr; when the
 * model does not separate the two roles (an untrained model) that is ~0 and
 * the metric is noise, so only ablation can make a decision head then. */
void hs_circ_find_decision(hs_circuit_report *r)
{
    const int L = r->L, H = r->H;
    r->patch_usable = fabs((double)r->ld_clean[HS_CIRC_PATCH_BOTH] - r->ld_corr[HS_CIRC_PATCH_BOTH]) >=
                      r->opts.min_ld_gap;
    for (int k = H; k < L * H; k++) {
        hs_circuit_head *hd = &r->heads[k];
        if (r->patch_usable && fabs(hd->patch_pos14[HS_CIRC_PATCH_BOTH]) >= r->opts.decide_patch)
            hd->decision |= 1;
        if (max_drop(r->acc, hd->acc_ablated) >= r->opts.decide_drop) hd->decision |= 2;
        if (hd->decision) r->decision[r->n_decision++] = (hs_head){hd->layer, hd->head};
    }
}

/* ------------------------------------------------------------------------ */
/* Steps 1 and 2                                                             */

/* Step 1 with no candidate pusher: what layer 0 does instead, into w. */
static void step1_no_pusher(const hs_circuit_report *r, hs_buf *w)
{
    const hs_circuit_opts *o = &r->opts;
    char pd[HS_FIXED_BUF];
    hs_buf_printf(w, "no layer-0 head puts >= %.2f on x or y at position 14 with DLA >= %s towards that noun "
             "(max weight on x %.2f, on y %.2f)",
             o->push_attn, hs_fmt_fixed(pd, o->push_dla, 2, 1), max_attn0(r, HS_CIRC_ON_X), max_attn0(r, HS_CIRC_ON_Y));
    int any = 0;
    for (int h = 0; h < r->H; h++) {
        const hs_circuit_head *hd = &r->heads[h];
        const double a0 = hd->attn[HS_CIRC_CROSSER][HS_CIRC_ON_ADJ], a1 = hd->attn[HS_CIRC_CROSSED][HS_CIRC_ON_ADJ];
        if (fabs(a0 - a1) < o->adj_key_diff) continue;
        char pt[HS_FIXED_BUF];
        hs_buf_printf(w, "%s %s %.2f on crosser / %.2f on crossed adjectives (patching it alone at 14: %s)",
                any ? "," : "; instead layer 0 fetches the adjective by its key:", hd->name, a0, a1,
                hs_fmt_fixed(pt, hd->patch_pos14[HS_CIRC_PATCH_BOTH], 2, 1));
        any = 1;
    }
    hs_buf_printf(w, "; mean-ablating layer 0's attention: held-out accuracy %.1f%% -> %.1f%%",
            100 * r->acc[HS_CIRC_ALL], 100 * r->acc_block_attn[0][HS_CIRC_ALL]);
}

/* Step 1: r->step1_holds, and why into w. */
static void step1(hs_circuit_report *r, hs_buf *w)
{
    const hs_circuit_opts *o = &r->opts;
    if (r->n_pushers == 0) {
        r->step1_holds = 0;
        step1_no_pusher(r, w);
        return;
    }
    double drop = r->acc[HS_CIRC_ALL] - r->acc_pushers[HS_CIRC_ALL];
    r->step1_holds = drop >= o->step1_drop;
    hs_buf_printf(w, "pusher%s", r->n_pushers > 1 ? "s" : "");
    for (int i = 0; i < r->n_pushers; i++) {
        const hs_circuit_head *hd = &r->heads[r->pushers[i].head];
        char dl[HS_FIXED_BUF];
        hs_buf_printf(w, " %s (%s%s%s: weight %.2f, DLA %s)", hd->name,
                (hd->pusher & 1) ? "x" : "", hd->pusher == 3 ? "," : "", (hd->pusher & 2) ? "y" : "",
                (hd->pusher & 1) ? hd->attn[HS_CIRC_ALL][HS_CIRC_ON_X] : hd->attn[HS_CIRC_ALL][HS_CIRC_ON_Y],
                hs_fmt_fixed(dl, (hd->pusher & 1) ? hd->dla[HS_CIRC_ALL][HS_CIRC_DLA_X] : hd->dla[HS_CIRC_ALL][HS_CIRC_DLA_Y],
                             2, 1));
    }
    hs_buf_printf(w, "; mean-ablating %s: held-out accuracy %.1f%% -> %.1f%% (drop %.1f points %s %.1f)",
            r->n_pushers > 1 ? "them" : "it", 100 * r->acc[HS_CIRC_ALL],
            100 * r->acc_pushers[HS_CIRC_ALL], 100 * drop, r->step1_holds ? ">=" : "<",
            100 * o->step1_drop);
}

/* Step 2: r->step2_applicable, r->step2_holds, and why into w. */
static void step2(hs_circuit_report *r, hs_buf *w)
{
    const hs_circuit_opts *o = &r->opts;
    r->step2_applicable = r->L >= 2;
    if (!r->step2_applicable) {
        hs_buf_printf(w, "not applicable: one layer");
    } else if (r->n_decision == 0 && !r->patch_usable) {
        hs_buf_printf(w, "patching cannot judge: the clean and corrupted logit differences differ by only %.2f "
                 "(< %.2f), so the model does not separate the roles; and no head's mean-ablation drops "
                 "a role's held-out accuracy by >= %.1f points",
                 fabs((double)r->ld_clean[HS_CIRC_PATCH_BOTH] - r->ld_corr[HS_CIRC_PATCH_BOTH]),
                 o->min_ld_gap, 100 * o->decide_drop);
    } else if (r->n_decision == 0) {
        hs_buf_printf(w, "no head in layer >= 1 moves the normalised logit difference by >= %.2f when patched at 14, "
                 "nor drops a role's held-out accuracy by >= %.1f points when mean-ablated",
                 o->decide_patch, 100 * o->decide_drop);
    } else {
        r->step2_holds = 1;
        hs_buf_printf(w, "decision head%s", r->n_decision > 1 ? "s" : "");
        for (int i = 0; i < r->n_decision; i++) {
            const hs_circuit_head *hd = &r->heads[r->decision[i].layer * r->H + r->decision[i].head];
            char pt[HS_FIXED_BUF], d0[HS_FIXED_BUF], d1[HS_FIXED_BUF];
            hs_buf_printf(w, "%s %s (patching %s, ablation drops crosser %s / crossed %s points)",
                    i ? ";" : "", hd->name, hs_fmt_fixed(pt, hd->patch_pos14[HS_CIRC_PATCH_BOTH], 2, 1),
                    hs_fmt_fixed(d0, 100 * (r->acc[0] - hd->acc_ablated[0]), 1, 0),
                    hs_fmt_fixed(d1, 100 * (r->acc[1] - hd->acc_ablated[1]), 1, 0));
        }
    }
}

/* ------------------------------------------------------------------------ */
/* The route                                                                 */

/* The route's name from its feature bits (a decision head exists): every
 * feature found is named (the chapter's pair as "chapter"), so a head that
 * fetches the referent in both roles reads "other-noun-fetch + referent-fetch". */
static void route_name(hs_buf *rt, int f)
{
    int left = f;
    if (f & HS_ROUTE_ADJ_KEY) hs_buf_puts(rt, "adjective-key");
    left &= ~HS_ROUTE_ADJ_KEY;
    const int chapter = (f & HS_ROUTE_ADJ_READ) && (f & HS_ROUTE_OTHER_NOUN) && !(f & HS_ROUTE_REFERENT_FETCH);
    if (chapter) {
        hs_buf_printf(rt, "%schapter", rt->len ? " + " : "");
        left &= ~(HS_ROUTE_ADJ_READ | HS_ROUTE_OTHER_NOUN);
    }
    static const struct { int bit; const char *name; } names[] = {
        {HS_ROUTE_ADJ_READ, "adjective-read"},
        {HS_ROUTE_OTHER_NOUN, "other-noun-fetch"},
        {HS_ROUTE_REFERENT_FETCH, "referent-fetch"},
        {HS_ROUTE_SUPPRESSION, "suppression"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (left & names[i].bit) hs_buf_printf(rt, "%s%s", rt->len ? " + " : "", names[i].name);
    if (rt->len == 0) hs_buf_puts(rt, "other");
}

/* The route's features (circuits.h, "route features") into r->route_features
 * with the evidence into r->route_reason, and its name into r->route. */
static void route_features(hs_circuit_report *r)
{
    const hs_circuit_opts *o = &r->opts;
    const int H = r->H;
    hs_buf why = {0}, rt = {0};
    int f = 0;
    for (int h = 0; h < H; h++) {
        const hs_circuit_head *hd = &r->heads[h];
        double dif = hd->attn[HS_CIRC_CROSSER][HS_CIRC_ON_ADJ] - hd->attn[HS_CIRC_CROSSED][HS_CIRC_ON_ADJ];
        if (fabs(dif) >= o->adj_key_diff) {
            f |= HS_ROUTE_ADJ_KEY;
            hs_buf_printf(&why, "adjective-key: %s puts %.2f on crosser vs %.2f on crossed adjectives; ", hd->name,
                    hd->attn[HS_CIRC_CROSSER][HS_CIRC_ON_ADJ], hd->attn[HS_CIRC_CROSSED][HS_CIRC_ON_ADJ]);
        }
    }
    for (int k = 0; k < r->n_decision; k++) {
        const hs_circuit_head *hd = &r->heads[r->decision[k].layer * H + r->decision[k].head];
        const double (*A)[4] = hd->attn, (*Dl)[4] = hd->dla;
        char dl[HS_FIXED_BUF];
        if (A[HS_CIRC_CROSSER][HS_CIRC_ON_ADJ] >= o->route_attn) {
            f |= HS_ROUTE_ADJ_READ;
            hs_buf_printf(&why, "adjective-read: %s puts %.2f on crosser adjectives; ", hd->name,
                    A[HS_CIRC_CROSSER][HS_CIRC_ON_ADJ]);
        }
        /* DLA of (y - x) with crossed adjectives, (x - y) with crosser ones */
        const double dyx = -Dl[HS_CIRC_CROSSED][HS_CIRC_DLA_X_MINUS_Y], dxy = Dl[HS_CIRC_CROSSER][HS_CIRC_DLA_X_MINUS_Y];
        if (A[HS_CIRC_CROSSED][HS_CIRC_ON_Y] >= o->route_attn && dyx >= o->route_dla) {
            f |= HS_ROUTE_OTHER_NOUN;
            hs_buf_printf(&why, "other-noun-fetch: %s puts %.2f on y with crossed adjectives and raises y over x (DLA y-x %s); ",
                    hd->name, A[HS_CIRC_CROSSED][HS_CIRC_ON_Y], hs_fmt_fixed(dl, dyx, 2, 1));
        }
        if (A[HS_CIRC_CROSSER][HS_CIRC_ON_X] >= o->route_attn && dxy >= o->route_dla) {
            f |= HS_ROUTE_REFERENT_FETCH;
            hs_buf_printf(&why, "referent-fetch: %s puts %.2f on x with crosser adjectives and raises x over y (DLA x-y %s); ",
                    hd->name, A[HS_CIRC_CROSSER][HS_CIRC_ON_X], hs_fmt_fixed(dl, dxy, 2, 1));
        }
        for (int g = 0; g < 2; g++)
            for (int nn = 0; nn < 2; nn++) {
                const double a = A[g][nn == 0 ? HS_CIRC_ON_X : HS_CIRC_ON_Y];
                const double d = (nn == 0 ? 1.0 : -1.0) * Dl[g][HS_CIRC_DLA_X_MINUS_Y];
                if (a >= o->route_attn && d <= -o->route_dla) {
                    f |= HS_ROUTE_SUPPRESSION;
                    hs_buf_printf(&why, "suppression: %s puts %.2f on %s with %s adjectives and lowers it below %s (DLA %s); ",
                            hd->name, a, nn == 0 ? "x" : "y", hs_wg_role_name((hs_wg_role)g), nn == 0 ? "y" : "x",
                            hs_fmt_fixed(dl, d, 2, 1));
                }
            }
    }
    r->route_features = f;
    if (why.len >= 2 && why.s[why.len - 2] == ';') why.s[why.len -= 2] = '\0'; /* the last "; " */
    if (r->L < 2) {
        hs_buf_puts(&rt, "one-layer");
    } else if (!r->step2_holds) {
        hs_buf_puts(&rt, "none");
    } else {
        route_name(&rt, f);
    }
    r->route_reason = hs_buf_take(&why);
    r->route = hs_buf_take(&rt);
}

hs_status hs_circ_verdicts(hs_circuit_report *r, hs_error *err)
{
    hs_buf w1 = {0}, w2 = {0};
    step1(r, &w1);
    step2(r, &w2);
    r->step1_reason = hs_buf_take(&w1);
    r->step2_reason = hs_buf_take(&w2);
    route_features(r);
    if (!r->step1_reason || !r->step2_reason || !r->route || !r->route_reason)
        return hs_fail(err, HS_ERR_NOMEM, "out of memory writing the verdicts");
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* The verdict's report writers                                              */

int hs_circ_verdict_json(cJSON *root, const hs_circuit_report *r)
{
    cJSON *steps = cJSON_AddObjectToObject(root, "verdict");
    if (!steps) return 0;
    cJSON *s1 = cJSON_AddObjectToObject(steps, "step1");
    if (!s1 || !cJSON_AddBoolToObject(s1, "holds", r->step1_holds) ||
        !cJSON_AddStringToObject(s1, "reason", r->step1_reason) ||
        !hs_circ_json_add(s1, "accuracy_pushers_ablated", hs_circ_json_groups3(r->acc_pushers)))
        return 0;
    if (!hs_circ_json_head_list(s1, "pushers", r->pushers, r->n_pushers)) return 0;
    cJSON *s2 = cJSON_AddObjectToObject(steps, "step2");
    if (!s2 || !cJSON_AddBoolToObject(s2, "applicable", r->step2_applicable) ||
        !cJSON_AddBoolToObject(s2, "holds", r->step2_holds) || !cJSON_AddStringToObject(s2, "reason", r->step2_reason))
        return 0;
    if (!hs_circ_json_head_list(s2, "decision_heads", r->decision, r->n_decision)) return 0;
    cJSON *rt = cJSON_AddObjectToObject(steps, "route");
    cJSON *ft = rt ? cJSON_AddObjectToObject(rt, "features") : NULL;
    return ft && cJSON_AddStringToObject(rt, "name", r->route) &&
           cJSON_AddStringToObject(rt, "evidence", r->route_reason) &&
           cJSON_AddBoolToObject(rt, "chapter", strstr(r->route, "chapter") != NULL) &&
           cJSON_AddBoolToObject(ft, "adjective_read", r->route_features & HS_ROUTE_ADJ_READ) &&
           cJSON_AddBoolToObject(ft, "other_noun_fetch", r->route_features & HS_ROUTE_OTHER_NOUN) &&
           cJSON_AddBoolToObject(ft, "referent_fetch", r->route_features & HS_ROUTE_REFERENT_FETCH) &&
           cJSON_AddBoolToObject(ft, "suppression", r->route_features & HS_ROUTE_SUPPRESSION) &&
           cJSON_AddBoolToObject(ft, "adjective_key", r->route_features & HS_ROUTE_ADJ_KEY);
}

void hs_circ_verdict_summary(hs_buf *s, const hs_circuit_report *r)
{
    const hs_circuit_opts *o = &r->opts;
    hs_buf_printf(s, "\nstep 1 (candidate push, layer 0): %s -- %s\n", r->step1_holds ? "HOLDS" : "does not hold",
              r->step1_reason);
    if (!r->step2_applicable)
        hs_buf_printf(s, "step 2 (decision, layer >= 1): %s\n", r->step2_reason);
    else
        hs_buf_printf(s, "step 2 (decision, layer >= 1): %s -- %s\n", r->step2_holds ? "HOLDS" : "does not hold",
                  r->step2_reason);
    hs_buf_printf(s, "route: %s%s%s\n", r->route, r->route_reason && r->route_reason[0] ? " -- " : "", r->route_reason);
    char pd[HS_FIXED_BUF];
    hs_buf_printf(s, "thresholds: pusher attention >= %.2f and DLA >= %s; step 1 ablation drop >= %.0f points; "
                  "decision |patching| >= %.2f or a role's ablation drop >= %.0f points; route attention >= %.2f, "
                  "|DLA| >= %.2f, adjective-key role difference >= %.2f\n",
              o->push_attn, hs_fmt_fixed(pd, o->push_dla, 2, 1), 100 * o->step1_drop, o->decide_patch, 100 * o->decide_drop, o->route_attn,
              o->route_dla, o->adj_key_diff);
}
