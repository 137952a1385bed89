/*
 * tasks/induction.c -- the induction task of tasks.h ("Induction task"):
 * sequence generator, held-out set (segments never trained on), training
 * batches, the `task` metadata JSON, and scoring (accuracy and loss on the
 * repeated segment, the in-context-learning score of Olsson et al. 2022).
 */
#include "tasks/tasks.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

hs_ind_params hs_ind_params_default(void)
{
    hs_ind_params p;
    p.n_symbols = 32;
    p.n_ctx = 32;
    p.seg_min = 4;
    p.seg_max = 8;
    p.gap_min = 0;
    p.gap_max = 16;
    p.split_seed = 0;
    p.n_heldout = 512;
    p.loss_all = 0;
    return p;
}

hs_status hs_ind_params_validate(const hs_ind_params *p, hs_error *err)
{
    if (p->n_symbols < 4 || p->n_symbols > HS_IND_MAX_SYMBOLS)
        return hs_fail(err, HS_ERR_CONFIG, "induction: n_symbols %d is not in [4, %d]",
                       p->n_symbols, HS_IND_MAX_SYMBOLS);
    if (p->n_ctx < 4 || p->n_ctx > 4096)
        return hs_fail(err, HS_ERR_CONFIG, "induction: n_ctx %d is not in [4, 4096]", p->n_ctx);
    if (p->seg_min < 2 || p->seg_min > p->seg_max)
        return hs_fail(err, HS_ERR_CONFIG, "induction: segment length range %d..%d needs 2 <= min <= max",
                       p->seg_min, p->seg_max);
    if (p->seg_max > p->n_symbols / 2)
        return hs_fail(err, HS_ERR_CONFIG, "induction: segment length %d is more than half the %d "
                       "symbols (the filler uses the symbols not in the segment)",
                       p->seg_max, p->n_symbols);
    if (p->gap_min < 0 || p->gap_min > p->gap_max)
        return hs_fail(err, HS_ERR_CONFIG, "induction: gap range %d..%d needs 0 <= min <= max",
                       p->gap_min, p->gap_max);
    if (2L * p->seg_max + p->gap_max > p->n_ctx)
        return hs_fail(err, HS_ERR_CONFIG, "induction: 2 x segment max %d + gap max %d = %ld does not "
                       "fit the context of %d", p->seg_max, p->gap_max,
                       2L * p->seg_max + p->gap_max, p->n_ctx);
    if (p->n_heldout < 1 || p->n_heldout > 100000)
        return hs_fail(err, HS_ERR_CONFIG, "induction: n_heldout %d is not in [1, 100000]",
                       p->n_heldout);
    /* distinct segments of the shortest length: V (V-1) ... (V-min+1) */
    double n_seg = 1.0;
    for (int k = 0; k < p->seg_min; k++) n_seg *= (double)(p->n_symbols - k);
    if ((double)p->n_heldout > n_seg / 4.0)
        return hs_fail(err, HS_ERR_CONFIG, "induction: %d held-out sequences leave too few segments "
                       "of length %d for training (%.0f possible; at most a quarter may be held out)",
                       p->n_heldout, p->seg_min, n_seg);
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* Generator                                                                 */

void hs_ind_generate(const hs_ind_params *p, hs_task_rng *r, int *tokens, hs_ind_seq *info)
{
    const int T = p->n_ctx, V = p->n_symbols;
    uint64_t used[HS_IND_MAX_SYMBOLS / 64];
    memset(used, 0, sizeof used);
    const int len = p->seg_min + (int)hs_task_rng_below(r, (uint64_t)(p->seg_max - p->seg_min + 1));
    const int gap = p->gap_min + (int)hs_task_rng_below(r, (uint64_t)(p->gap_max - p->gap_min + 1));
    HS_ASSERT(2 * len + gap <= T);
    const int start1 = (int)hs_task_rng_below(r, (uint64_t)(T - 2 * len - gap + 1));
    const int start2 = start1 + len + gap;
    for (int k = 0; k < len; k++) { /* distinct segment symbols */
        int s;
        do {
            s = (int)hs_task_rng_below(r, (uint64_t)V);
        } while (used[s >> 6] >> (s & 63) & 1);
        used[s >> 6] |= 1ull << (s & 63);
        tokens[start1 + k] = s;
        tokens[start2 + k] = s;
    }
    for (int i = 0; i < T; i++) {
        if ((i >= start1 && i < start1 + len) || (i >= start2 && i < start2 + len)) continue;
        int s;
        do {
            s = (int)hs_task_rng_below(r, (uint64_t)V);
        } while (used[s >> 6] >> (s & 63) & 1);
        tokens[i] = s;
    }
    if (info) {
        info->start1 = start1;
        info->start2 = start2;
        info->len = len;
    }
}

static uint64_t seg_hash(const int *seg, int len)
{
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)len;
    for (int k = 0; k < len; k++) {
        h ^= (uint64_t)(uint32_t)seg[k];
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h | 1; /* 0 marks an empty slot */
}

int hs_induction_is_heldout_segment(const hs_induction *t, const int *seg, int len)
{
    const uint64_t h = seg_hash(seg, len);
    for (size_t i = h & (t->hash_cap - 1);; i = (i + 1) & (t->hash_cap - 1)) {
        if (t->seg_hash[i] == 0) return 0;
        if (t->seg_hash[i] != h) continue;
        /* same hash: compare with the held-out segments themselves */
        for (int q = 0; q < t->p.n_heldout; q++) {
            const hs_ind_seq *s = &t->heldout[q];
            if (s->len == len &&
                memcmp(t->heldout_tokens + (size_t)q * t->p.n_ctx + s->start1, seg,
                       (size_t)len * sizeof(int)) == 0)
                return 1;
        }
        return 0;
    }
}

void hs_induction_batch(const hs_induction *t, hs_task_rng *r, size_t B, int *tokens,
                        int *targets, hs_ind_seq *info)
{
    const int T = t->p.n_ctx;
    for (size_t b = 0; b < B; b++) {
        int *tok = tokens + b * (size_t)T;
        hs_ind_seq s;
        do {
            hs_ind_generate(&t->p, r, tok, &s);
        } while (hs_induction_is_heldout_segment(t, tok + s.start1, s.len));
        if (info) info[b] = s;
        if (targets) {
            int *tg = targets + b * (size_t)T;
            for (int i = 0; i < T; i++) {
                const int scored = i >= s.start2 && i < s.start2 + s.len - 1;
                tg[i] = i + 1 < T && (t->p.loss_all || scored) ? tok[i + 1] : -1;
            }
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Task                                                                      */

void hs_induction_destroy(hs_induction *t)
{
    if (t == NULL) return;
    hs_tokenizer_destroy(t->vocab);
    free(t->heldout_tokens);
    free(t->heldout);
    free(t->seg_hash);
    free(t);
}

static hs_status make_vocab(int V, hs_tokenizer **out, hs_error *err)
{
    char (*names)[16] = calloc((size_t)V, sizeof *names);
    const char **ptr = calloc((size_t)V, sizeof *ptr);
    hs_status s;
    if (!names || !ptr) {
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    } else {
        for (int i = 0; i < V; i++) {
            snprintf(names[i], sizeof names[0], "s%d", i);
            ptr[i] = names[i];
        }
        s = hs_tokenizer_words(ptr, (size_t)V, out, err);
    }
    free(names);
    free(ptr);
    return s;
}

hs_status hs_induction_create(const hs_ind_params *p, const hs_tokenizer *vocab, hs_induction **out,
                              hs_error *err)
{
    *out = NULL;
    hs_status s = hs_ind_params_validate(p, err);
    if (s != HS_OK) return s;
    hs_induction *t = calloc(1, sizeof *t);
    if (!t) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    t->p = *p;
    if ((s = make_vocab(p->n_symbols, &t->vocab, err)) != HS_OK) goto fail;
    if (vocab) {
        int same = vocab->n == t->vocab->n;
        for (size_t i = 0; same && i < vocab->n; i++)
            same = strcmp(vocab->words[i], t->vocab->words[i]) == 0;
        if (!same) {
            s = hs_fail(err, HS_ERR_FORMAT, "induction: the vocabulary is not the task's %d symbols "
                        "s0..s%d in order", p->n_symbols, p->n_symbols - 1);
            goto fail;
        }
    }
    const size_t n = (size_t)p->n_heldout, T = (size_t)p->n_ctx;
    t->hash_cap = 16;
    while (t->hash_cap < 2 * n) t->hash_cap <<= 1;
    t->heldout_tokens = malloc(n * T * sizeof(int));
    t->heldout = malloc(n * sizeof *t->heldout);
    t->seg_hash = calloc(t->hash_cap, sizeof *t->seg_hash);
    if (!t->heldout_tokens || !t->heldout || !t->seg_hash) {
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory for %zu held-out sequences", n);
        goto fail;
    }
    hs_task_rng r;
    hs_task_rng_seed(&r, p->split_seed ^ 0x1D0C7105ull);
    for (size_t q = 0; q < n; q++) {
        int *tok = t->heldout_tokens + q * T;
        hs_ind_generate(p, &r, tok, &t->heldout[q]);
        const uint64_t h = seg_hash(tok + t->heldout[q].start1, t->heldout[q].len);
        size_t i = h & (t->hash_cap - 1);
        while (t->seg_hash[i] != 0 && t->seg_hash[i] != h) i = (i + 1) & (t->hash_cap - 1);
        t->seg_hash[i] = h;
    }
    *out = t;
    return HS_OK;
fail:
    hs_induction_destroy(t);
    return s;
}

hs_status hs_induction_task_json(const hs_induction *t, char **json, hs_error *err)
{
    *json = NULL;
    cJSON *o = cJSON_CreateObject();
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)t->p.split_seed);
    cJSON *seg = cJSON_CreateArray(), *gap = cJSON_CreateArray();
    int ok = o && seg && gap;
    if (ok) {
        cJSON_AddItemToArray(seg, cJSON_CreateNumber(t->p.seg_min));
        cJSON_AddItemToArray(seg, cJSON_CreateNumber(t->p.seg_max));
        cJSON_AddItemToArray(gap, cJSON_CreateNumber(t->p.gap_min));
        cJSON_AddItemToArray(gap, cJSON_CreateNumber(t->p.gap_max));
        ok = cJSON_AddStringToObject(o, "name", "induction") &&
             cJSON_AddNumberToObject(o, "n_symbols", t->p.n_symbols) &&
             cJSON_AddNumberToObject(o, "n_ctx", t->p.n_ctx) &&
             cJSON_AddItemToObject(o, "seg_len", seg) && (seg = NULL, 1) &&
             cJSON_AddItemToObject(o, "gap", gap) && (gap = NULL, 1) &&
             (t->p.split_seed <= (1ull << 53)
                  ? cJSON_AddNumberToObject(o, "split_seed", (double)t->p.split_seed) != NULL
                  : cJSON_AddStringToObject(o, "split_seed", seed) != NULL) &&
             cJSON_AddNumberToObject(o, "n_heldout", t->p.n_heldout) &&
             cJSON_AddStringToObject(o, "loss", t->p.loss_all ? "all" : "segment") &&
             cJSON_AddStringToObject(o, "filler", "symbols not in the segment");
    }
    if (ok) *json = cJSON_PrintUnformatted(o);
    cJSON_Delete(seg);
    cJSON_Delete(gap);
    cJSON_Delete(o);
    return *json ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
}

hs_status hs_task_json_name(const char *json, char **name, hs_error *err)
{
    *name = NULL;
    if (json == NULL || json[0] == '\0')
        return hs_fail(err, HS_ERR_FORMAT, "task metadata is missing");
    cJSON *o = cJSON_Parse(json);
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(o, "name");
    hs_status s = HS_OK;
    if (!cJSON_IsObject(o) || !cJSON_IsString(nm))
        s = hs_fail(err, HS_ERR_FORMAT, "task metadata is not a JSON object with a string 'name'");
    else if ((*name = hs_strdup(nm->valuestring)) == NULL)
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    cJSON_Delete(o);
    return s;
}

static int json_int(const cJSON *o, const char *key, int idx, long *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (idx >= 0) v = cJSON_IsArray(v) && cJSON_GetArraySize(v) == 2 ? cJSON_GetArrayItem(v, idx) : NULL;
    if (cJSON_IsString(v)) { /* large seeds are decimal strings */
        char *end;
        unsigned long long u = strtoull(v->valuestring, &end, 10);
        if (end == v->valuestring || *end || u > (unsigned long long)LONG_MAX) return -1;
        *out = (long)u;
        return 0;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 ||
        v->valuedouble > 9007199254740992.0)
        return -1;
    *out = (long)v->valuedouble;
    return 0;
}

hs_status hs_induction_from_task_json(const char *json, const hs_tokenizer *vocab, hs_induction **out,
                                      hs_error *err)
{
    *out = NULL;
    cJSON *o = json ? cJSON_Parse(json) : NULL;
    hs_status s = HS_OK;
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(o, "name");
    if (!cJSON_IsObject(o) || !cJSON_IsString(nm) || strcmp(nm->valuestring, "induction") != 0) {
        s = hs_fail(err, HS_ERR_FORMAT, "task metadata is not an induction task");
        goto done;
    }
    hs_ind_params p = hs_ind_params_default();
    long v[8];
    static const char *const keys[8] = {"n_symbols", "n_ctx", "seg_len", "seg_len",
                                        "gap", "gap", "split_seed", "n_heldout"};
    static const int idx[8] = {-1, -1, 0, 1, 0, 1, -1, -1};
    for (int i = 0; i < 8; i++)
        if (json_int(o, keys[i], idx[i], &v[i]) || (i != 6 && v[i] > 1000000)) {
            s = hs_fail(err, HS_ERR_FORMAT, "induction task metadata: '%s' is missing or not a "
                        "non-negative integer%s", keys[i], idx[i] >= 0 ? " pair" : "");
            goto done;
        }
    p.n_symbols = (int)v[0];
    p.n_ctx = (int)v[1];
    p.seg_min = (int)v[2];
    p.seg_max = (int)v[3];
    p.gap_min = (int)v[4];
    p.gap_max = (int)v[5];
    p.split_seed = (uint64_t)v[6];
    p.n_heldout = (int)v[7];
    const cJSON *lo = cJSON_GetObjectItemCaseSensitive(o, "loss");
    if (!cJSON_IsString(lo) || (strcmp(lo->valuestring, "all") && strcmp(lo->valuestring, "segment"))) {
        s = hs_fail(err, HS_ERR_FORMAT, "induction task metadata: 'loss' is not \"all\" or \"segment\"");
        goto done;
    }
    p.loss_all = strcmp(lo->valuestring, "all") == 0;
    s = hs_induction_create(&p, vocab, out, err);
done:
    cJSON_Delete(o);
    return s;
}

/* ------------------------------------------------------------------------ */
/* Scoring                                                                   */

double hs_ind_score_accuracy(const hs_ind_score *s)
{
    return s->n_scored ? (double)s->correct / (double)s->n_scored : 0.0;
}

hs_status hs_induction_score(const hs_model *m, const hs_induction *t, size_t n,
                             const hs_observer *observer, hs_ind_score *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    const int T = t->p.n_ctx, V = t->p.n_symbols;
    if (m->cfg.d_vocab != V || m->cfg.n_ctx < T)
        return hs_fail(err, HS_ERR_CONFIG, "induction: the model (d_vocab %d, n_ctx %d) does not fit "
                       "the task (%d symbols, context %d)", m->cfg.d_vocab, m->cfg.n_ctx, V, T);
    if (n == 0 || n > (size_t)t->p.n_heldout) n = (size_t)t->p.n_heldout;
    const int chunk = 64;
    hs_acts *acts = NULL;
    hs_status s = hs_acts_create(&m->cfg, chunk, T, 0, &acts, err);
    if (s != HS_OK) return s;
    double seg_sum = 0.0, all_sum = 0.0, early = 0.0, late = 0.0;
    size_t n_all = 0, n_early = 0, n_late = 0;
    const int e0 = T / 16, e1 = 3 * T / 16, l0 = T - 1 - T / 8, l1 = T - 1;
    for (size_t q0 = 0; q0 < n; q0 += (size_t)chunk) {
        const int b = (int)(n - q0 < (size_t)chunk ? n - q0 : (size_t)chunk);
        s = hs_forward(m, acts, t->heldout_tokens + q0 * (size_t)T, b, T, observer, err);
        if (s != HS_OK) goto done;
        for (int r = 0; r < b; r++) {
            const int *tok = t->heldout_tokens + (q0 + (size_t)r) * (size_t)T;
            const hs_ind_seq *sq = &t->heldout[q0 + (size_t)r];
            for (int i = 0; i + 1 < T; i++) {
                const float *lg = acts->logits + ((size_t)r * T + (size_t)i) * (size_t)V;
                float mx = lg[0];
                int am = 0;
                for (int v = 1; v < V; v++)
                    if (lg[v] > mx) mx = lg[v], am = v;
                if (isnan(mx)) {
                    s = hs_fail(err, HS_ERR_NUMERIC, "induction: NaN logit (sequence %zu, position %d)",
                                q0 + (size_t)r, i);
                    goto done;
                }
                double z = 0.0;
                for (int v = 0; v < V; v++) z += exp((double)lg[v] - (double)mx);
                const double loss = log(z) - ((double)lg[tok[i + 1]] - (double)mx);
                all_sum += loss;
                n_all++;
                if (i >= e0 && i < e1) early += loss, n_early++;
                if (i >= l0 && i < l1) late += loss, n_late++;
                if (i >= sq->start2 && i < sq->start2 + sq->len - 1) {
                    seg_sum += loss;
                    out->n_scored++;
                    out->correct += am == tok[i + 1];
                }
            }
        }
    }
    out->n_seqs = n;
    out->seg_loss = out->n_scored ? seg_sum / (double)out->n_scored : 0.0;
    out->loss = n_all ? all_sum / (double)n_all : 0.0;
    out->early_loss = n_early ? early / (double)n_early : 0.0;
    out->late_loss = n_late ? late / (double)n_late : 0.0;
    out->icl_score = out->late_loss - out->early_loss;
    out->chance = 1.0 / V;
done:
    hs_acts_destroy(acts);
    return s;
}
