/*
 * tasks/winograd.c -- the Winograd task of DESIGN.md: sentence generator,
 * seeded train/held-out splits (and the category variant), the dataset text
 * dump, the `task` metadata JSON, and training batches.
 */
#include "tasks/tasks.h"

#include <errno.h>
#include <string.h>

#include <cjson/cJSON.h>

/* ------------------------------------------------------------------------ */
/* Word lists                                                                */

const char *const hs_wg_nouns[HS_WG_N_NOUNS] = {
    "animal", "street", "dog",  "road", "cat", "river", "horse", "bridge",
    "fox",    "field",  "goat", "path", "cow", "lane",  "deer",  "creek",
};

const char *const hs_wg_adjectives[HS_WG_N_ADJS] = {
    "tired", "scared", "slow", "weak", /* crosser: it = x */
    "wet",   "wide",   "busy", "steep" /* crossed: it = y */
};

/* The template words in order of first appearance in the template. */
static const char *const template_words[] = {
    "the", "did", "not", "cross", "because", "it", "was", "too", ",", "so", "waited", ".",
};
#define N_TEMPLATE_WORDS (sizeof template_words / sizeof template_words[0])

hs_status hs_winograd_vocab(hs_tokenizer **out, hs_error *err)
{
    const char *words[N_TEMPLATE_WORDS + HS_WG_N_NOUNS + HS_WG_N_ADJS];
    size_t k = 0;
    for (size_t i = 0; i < N_TEMPLATE_WORDS; i++) words[k++] = template_words[i];
    for (size_t i = 0; i < HS_WG_N_NOUNS; i++) words[k++] = hs_wg_nouns[i];
    for (size_t i = 0; i < HS_WG_N_ADJS; i++) words[k++] = hs_wg_adjectives[i];
    return hs_tokenizer_words(words, k, out, err);
}

/* ------------------------------------------------------------------------ */
/* PRNG: splitmix64 (Steele, Lea, Flood 2014; Vigna's reference constants)   */

void hs_task_rng_seed(hs_task_rng *r, uint64_t seed)
{
    r->state = seed;
}

uint64_t hs_task_rng_next(hs_task_rng *r)
{
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t hs_task_rng_below(hs_task_rng *r, uint64_t n)
{
    HS_ASSERT(n > 0);
    /* Rejection sampling: accept x below the largest multiple of n. */
    uint64_t limit = UINT64_MAX - (UINT64_MAX % n);
    uint64_t x;
    do {
        x = hs_task_rng_next(r);
    } while (x >= limit);
    return x % n;
}

/* ------------------------------------------------------------------------ */
/* Names                                                                     */

const char *hs_task_name(hs_task_kind k)
{
    switch (k) {
    case HS_TASK_WINOGRAD: return "winograd";
    case HS_TASK_WINOGRAD_CATEGORY: return "winograd-category";
    }
    return "unknown";
}

int hs_task_parse(const char *name)
{
    if (name == NULL) return -1;
    if (strcmp(name, "winograd") == 0) return HS_TASK_WINOGRAD;
    if (strcmp(name, "winograd-category") == 0) return HS_TASK_WINOGRAD_CATEGORY;
    return -1;
}

const char *hs_wg_role_name(hs_wg_role r)
{
    return r == HS_ROLE_CROSSER ? "crosser" : "crossed";
}

const char *hs_wg_split_name(hs_wg_split s)
{
    return s == HS_SPLIT_TRAIN ? "train" : "heldout";
}

int hs_wg_split_parse(const char *name)
{
    if (name == NULL) return -1;
    if (strcmp(name, "train") == 0) return HS_SPLIT_TRAIN;
    if (strcmp(name, "heldout") == 0 || strcmp(name, "held-out") == 0) return HS_SPLIT_HELDOUT;
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Generator                                                                 */

/* The template with slots: NULL marks x (1), y (6), adj (12), ref (15). */
static const char *const template_tokens[HS_WG_LEN] = {
    "the", NULL, "did", "not", "cross", "the", NULL, "because", "it",
    "was", "too", NULL, ",",  "so",  "the",   NULL, "waited", ".",
};

static int noun_index(const char *w)
{
    if (w == NULL) return -1;
    for (int i = 0; i < HS_WG_N_NOUNS; i++)
        if (strcmp(hs_wg_nouns[i], w) == 0) return i;
    return -1;
}

static int is_animal(int noun) { return noun % 2 == 0; }

static int pair_cmp(const void *a, const void *b)
{
    const int *p = a, *q = b;
    if (p[0] != q[0]) return p[0] < q[0] ? -1 : 1;
    if (p[1] != q[1]) return p[1] < q[1] ? -1 : 1;
    return 0;
}

void hs_winograd_destroy(hs_winograd *t)
{
    if (t == NULL) return;
    hs_tokenizer_destroy(t->vocab);
    free(t->train);
    free(t->heldout);
    free(t);
}

/* Chooses the held-out ordered pairs into t->heldout_pairs (sorted). */
static void choose_heldout(hs_winograd *t)
{
    hs_task_rng r;
    hs_task_rng_seed(&r, t->split_seed);
    int pairs[128][2];
    size_t np = 0, keep;
    if (t->kind == HS_TASK_WINOGRAD) {
        for (int i = 0; i < HS_WG_N_NOUNS; i++)
            for (int j = i + 1; j < HS_WG_N_NOUNS; j++) {
                pairs[np][0] = i;
                pairs[np][1] = j;
                np++;
            }
        keep = 24; /* of 120 unordered pairs */
    } else {
        for (int a = 0; a < HS_WG_N_NOUNS; a += 2)
            for (int p = 1; p < HS_WG_N_NOUNS; p += 2) {
                pairs[np][0] = a;
                pairs[np][1] = p;
                np++;
            }
        keep = 16; /* of 64 ordered (animal, place) pairs */
    }
    /* Fisher-Yates, from the end. */
    for (size_t i = np - 1; i > 0; i--) {
        size_t j = (size_t)hs_task_rng_below(&r, (uint64_t)i + 1);
        int a = pairs[i][0], b = pairs[i][1];
        pairs[i][0] = pairs[j][0];
        pairs[i][1] = pairs[j][1];
        pairs[j][0] = a;
        pairs[j][1] = b;
    }
    for (size_t k = 0; k < keep; k++) {
        int a = pairs[k][0], b = pairs[k][1];
        if (t->kind == HS_TASK_WINOGRAD && (hs_task_rng_next(&r) >> 63)) {
            int tmp = a;
            a = b;
            b = tmp;
        }
        t->heldout_pairs[k][0] = a;
        t->heldout_pairs[k][1] = b;
    }
    t->n_heldout_pairs = keep;
    qsort(t->heldout_pairs, keep, sizeof t->heldout_pairs[0], pair_cmp);
}

static int pair_held_out(const hs_winograd *t, int x, int y)
{
    for (size_t k = 0; k < t->n_heldout_pairs; k++)
        if (t->heldout_pairs[k][0] == x && t->heldout_pairs[k][1] == y) return 1;
    return 0;
}

static int pair_in_task(hs_task_kind kind, int x, int y)
{
    if (x == y) return 0;
    if (kind == HS_TASK_WINOGRAD_CATEGORY) return is_animal(x) && !is_animal(y);
    return 1;
}

/* Refuses given held-out pairs out of range, not of the task, or listed twice. */
static hs_status check_pairs(hs_task_kind kind, const int (*pairs)[2], size_t n_pairs_given, hs_error *err)
{
    if (n_pairs_given == 0 || n_pairs_given > HS_WG_MAX_HELDOUT_PAIRS)
        return hs_fail(err, HS_ERR_INPUT, "held-out pairs: %zu given, need 1 to %d",
                       n_pairs_given, HS_WG_MAX_HELDOUT_PAIRS);
    for (size_t k = 0; k < n_pairs_given; k++) {
        const int x = pairs[k][0], y = pairs[k][1];
        if (x < 0 || x >= HS_WG_N_NOUNS || y < 0 || y >= HS_WG_N_NOUNS)
            return hs_fail(err, HS_ERR_INPUT, "held-out pair %zu: noun index out of range", k);
        if (!pair_in_task(kind, x, y))
            return hs_fail(err, HS_ERR_INPUT, "held-out pair (%s, %s) is not a pair of the "
                           "%s task", hs_wg_nouns[x], hs_wg_nouns[y], hs_task_name(kind));
        for (size_t j = 0; j < k; j++)
            if (pairs[j][0] == x && pairs[j][1] == y)
                return hs_fail(err, HS_ERR_INPUT, "held-out pair (%s, %s) is listed twice",
                               hs_wg_nouns[x], hs_wg_nouns[y]);
    }
    return HS_OK;
}

/* The vocabulary ids of every word the task needs (-1 at the template's slots). */
typedef struct {
    int tmpl[HS_WG_LEN], noun[HS_WG_N_NOUNS], adj[HS_WG_N_ADJS];
} word_ids;

static hs_status find_word_ids(const hs_tokenizer *vocab, word_ids *id, hs_error *err)
{
    for (int p = 0; p < HS_WG_LEN; p++) {
        id->tmpl[p] = -1;
        if (template_tokens[p] == NULL) continue;
        id->tmpl[p] = hs_tok_id(vocab, template_tokens[p]);
        if (id->tmpl[p] < 0)
            return hs_fail(err, HS_ERR_FORMAT, "the vocabulary lacks the task word '%s'", template_tokens[p]);
    }
    for (int i = 0; i < HS_WG_N_NOUNS; i++) {
        id->noun[i] = hs_tok_id(vocab, hs_wg_nouns[i]);
        if (id->noun[i] < 0)
            return hs_fail(err, HS_ERR_FORMAT, "the vocabulary lacks the task word '%s'", hs_wg_nouns[i]);
    }
    for (int i = 0; i < HS_WG_N_ADJS; i++) {
        id->adj[i] = hs_tok_id(vocab, hs_wg_adjectives[i]);
        if (id->adj[i] < 0)
            return hs_fail(err, HS_ERR_FORMAT, "the vocabulary lacks the task word '%s'", hs_wg_adjectives[i]);
    }
    return HS_OK;
}

/* Every sentence of the task, in (x, y, adjective) order, into t->heldout
 * when its pair is held out, else t->train (both allocated to size). */
static void generate(hs_winograd *t, const word_ids *id)
{
    size_t ntr = 0, nho = 0;
    for (int x = 0; x < HS_WG_N_NOUNS; x++)
        for (int y = 0; y < HS_WG_N_NOUNS; y++) {
            if (!pair_in_task(t->kind, x, y)) continue;
            int ho = pair_held_out(t, x, y);
            for (int a = 0; a < HS_WG_N_ADJS; a++) {
                hs_wg_example *e;
                if (ho) {
                    HS_ASSERT(nho < t->n_heldout);
                    e = &t->heldout[nho++];
                } else {
                    HS_ASSERT(ntr < t->n_train);
                    e = &t->train[ntr++];
                }
                e->x = x;
                e->y = y;
                e->adj = a;
                e->role = a < HS_WG_N_CROSSER ? HS_ROLE_CROSSER : HS_ROLE_CROSSED;
                e->ref = e->role == HS_ROLE_CROSSER ? x : y;
                e->ref_id = id->noun[e->ref];
                e->other_id = id->noun[e->role == HS_ROLE_CROSSER ? y : x];
                e->held_out = ho;
                for (int p = 0; p < HS_WG_LEN; p++) e->tokens[p] = id->tmpl[p];
                e->tokens[HS_WG_POS_X] = id->noun[x];
                e->tokens[HS_WG_POS_Y] = id->noun[y];
                e->tokens[HS_WG_POS_ADJ] = id->adj[a];
                e->tokens[HS_WG_POS_REF] = e->ref_id;
            }
        }
    HS_ASSERT(ntr == t->n_train && nho == t->n_heldout);
}

/* The task with held-out pairs from the seed (pairs NULL) or given. */
static hs_status create_task(hs_task_kind kind, uint64_t split_seed, const int (*pairs)[2],
                             size_t n_pairs_given, const hs_tokenizer *vocab, hs_winograd **out,
                             hs_error *err)
{
    hs_status st = HS_OK;
    hs_winograd *t = NULL;
    word_ids id;
    *out = NULL;
    if (kind != HS_TASK_WINOGRAD && kind != HS_TASK_WINOGRAD_CATEGORY)
        return hs_fail(err, HS_ERR_INPUT, "unknown task kind %d", (int)kind);
    if (pairs && (st = check_pairs(kind, pairs, n_pairs_given, err)) != HS_OK) return st;
    t = calloc(1, sizeof *t);
    if (!t) goto nomem;
    t->kind = kind;
    t->split_seed = split_seed;
    if (vocab == NULL)
        st = hs_winograd_vocab(&t->vocab, err);
    else
        st = hs_tokenizer_words((const char *const *)vocab->words, vocab->n, &t->vocab, err);
    if (st == HS_OK) st = find_word_ids(t->vocab, &id, err);
    if (st != HS_OK) goto fail;
    if (pairs) {
        t->pairs_given = 1;
        t->n_heldout_pairs = n_pairs_given;
        memcpy(t->heldout_pairs, pairs, n_pairs_given * sizeof pairs[0]);
        qsort(t->heldout_pairs, n_pairs_given, sizeof t->heldout_pairs[0], pair_cmp);
    } else {
        choose_heldout(t);
    }
    size_t n_pairs = kind == HS_TASK_WINOGRAD ? 240 : 64;
    t->n_heldout = t->n_heldout_pairs * HS_WG_N_ADJS;
    t->n_train = n_pairs * HS_WG_N_ADJS - t->n_heldout;
    t->train = calloc(t->n_train, sizeof *t->train);
    t->heldout = calloc(t->n_heldout, sizeof *t->heldout);
    if (!t->train || !t->heldout) goto nomem;
    generate(t, &id);
    *out = t;
    return HS_OK;
nomem:
    st = hs_fail(err, HS_ERR_NOMEM, "out of memory generating the Winograd task");
fail:
    hs_winograd_destroy(t);
    return st;
}

hs_status hs_winograd_create(hs_task_kind kind, uint64_t split_seed, const hs_tokenizer *vocab,
                             hs_winograd **out, hs_error *err)
{
    return create_task(kind, split_seed, NULL, 0, vocab, out, err);
}

hs_status hs_winograd_create_pairs(hs_task_kind kind, const int (*pairs)[2], size_t n,
                                   const hs_tokenizer *vocab, hs_winograd **out, hs_error *err)
{
    *out = NULL;
    if (pairs == NULL) return hs_fail(err, HS_ERR_INPUT, "held-out pairs: none given");
    return create_task(kind, 0, pairs, n, vocab, out, err);
}

hs_status hs_wg_pairs_read(const char *path, int (*pairs)[2], size_t cap, size_t *n,
                           hs_error *err)
{
    *n = 0;
    unsigned char *data = NULL;
    size_t len = 0;
    hs_status st = hs_read_file(path, &data, &len, err);
    if (st != HS_OK) return st;
    char *text = (char *)data; /* NUL-terminated by hs_read_file */
    (void)len;
    size_t line_no = 0;
    for (char *line = text; *line && st == HS_OK;) {
        char *nl = strchr(line, '\n');
        char *next = nl ? nl + 1 : line + strlen(line);
        if (nl) *nl = '\0';
        line_no++;
        char *w[3] = {NULL, NULL, NULL};
        int nw = 0;
        for (char *p = line; *p && nw < 3;) { /* words split at spaces, tabs, '\r' */
            while (*p == ' ' || *p == '\t' || *p == '\r') *p++ = '\0';
            if (*p == '\0') break;
            w[nw++] = p;
            while (*p && *p != ' ' && *p != '\t' && *p != '\r') p++;
        }
        line = next;
        if (w[0] == NULL || w[0][0] == '#') continue;
        if (w[1] == NULL || w[2] != NULL) {
            st = hs_fail(err, HS_ERR_FORMAT, "%s:%zu: a pair is two noun words, e.g. 'animal street'",
                         path, line_no);
            break;
        }
        for (int k = 0; k < 2 && st == HS_OK; k++)
            if (noun_index(w[k]) < 0)
                st = hs_fail(err, HS_ERR_FORMAT, "%s:%zu: '%.32s' is not one of the task's 16 nouns",
                             path, line_no, w[k]);
        if (st != HS_OK) break;
        if (*n == cap) {
            st = hs_fail(err, HS_ERR_FORMAT, "%s:%zu: more than %zu pairs", path, line_no, cap);
            break;
        }
        pairs[*n][0] = noun_index(w[0]);
        pairs[*n][1] = noun_index(w[1]);
        (*n)++;
    }
    if (st == HS_OK && *n == 0) st = hs_fail(err, HS_ERR_FORMAT, "%s: no pairs in the file", path);
    free(text);
    return st;
}

const hs_wg_example *hs_winograd_examples(const hs_winograd *t, hs_wg_split split, size_t *n)
{
    if (split == HS_SPLIT_HELDOUT) {
        *n = t->n_heldout;
        return t->heldout;
    }
    *n = t->n_train;
    return t->train;
}

int hs_winograd_is_held_out(const hs_winograd *t, const char *x, const char *y)
{
    int xi = noun_index(x), yi = noun_index(y);
    if (xi < 0 || yi < 0) return -1;
    return pair_held_out(t, xi, yi);
}

size_t hs_winograd_sentence(const hs_winograd *t, const hs_wg_example *ex, char *buf, size_t cap)
{
    size_t need = 0;
    for (int p = 0; p < HS_WG_LEN; p++) {
        const char *w = hs_tok_str(t->vocab, ex->tokens[p]);
        if (w == NULL) w = "?";
        if (p > 0) {
            if (need + 1 < cap) buf[need] = ' ';
            need++;
        }
        for (size_t k = 0; w[k] != '\0'; k++, need++)
            if (need + 1 < cap) buf[need] = w[k];
    }
    if (cap > 0) buf[need < cap ? need : cap - 1] = '\0';
    return need;
}

/* ------------------------------------------------------------------------ */
/* Dataset dump                                                              */

static int write_examples(FILE *fp, const hs_winograd *t, const hs_wg_example *ex, size_t n,
                          const char *split)
{
    char *line = NULL; /* grows to the longest sentence: vocabulary words have no length limit */
    size_t cap = 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        size_t len = hs_winograd_sentence(t, &ex[i], line, cap);
        if (len >= cap) {
            char *g = realloc(line, len + 1);
            if (g == NULL) {
                errno = ENOMEM;
                rc = -1;
                break;
            }
            line = g;
            cap = len + 1;
            hs_winograd_sentence(t, &ex[i], line, cap);
        }
        if (fprintf(fp, "%s\t%s\t%s\t%s\n", split, hs_wg_role_name(ex[i].role), hs_wg_nouns[ex[i].ref],
                    line) < 0)
            rc = -1;
    }
    free(line);
    return rc;
}

hs_status hs_winograd_write_text(const hs_winograd *t, const char *path, hs_error *err)
{
    hs_atomic_file af;
    hs_status st = hs_atomic_open(&af, path, err);
    if (st != HS_OK) return st;
    FILE *fp = af.fp;
    int bad = 0;
    int chapter = hs_winograd_is_held_out(t, HS_WG_CHAPTER_X, HS_WG_CHAPTER_Y);
    bad |= fprintf(fp, "# headscope dataset: task %s, split seed %llu\n", hs_task_name(t->kind),
                   (unsigned long long)t->split_seed) < 0;
    bad |= fprintf(fp, "# %zu train sentences, %zu held-out sentences (%zu held-out ordered pairs "
                   "x %d adjectives)\n", t->n_train, t->n_heldout, t->n_heldout_pairs,
                   HS_WG_N_ADJS) < 0;
    bad |= fprintf(fp, "# held-out pairs (x, y):") < 0;
    for (size_t k = 0; k < t->n_heldout_pairs; k++)
        bad |= fprintf(fp, " (%s, %s)", hs_wg_nouns[t->heldout_pairs[k][0]],
                       hs_wg_nouns[t->heldout_pairs[k][1]]) < 0;
    bad |= fprintf(fp, "\n# the chapter's pair (%s, %s) is %s\n", HS_WG_CHAPTER_X, HS_WG_CHAPTER_Y,
                   chapter == 1 ? "held out" : "not held out") < 0;
    bad |= fprintf(fp, "# columns: split\trole\tref\tsentence\n") < 0;
    if (!bad) bad |= write_examples(fp, t, t->train, t->n_train, "train") != 0;
    if (!bad) bad |= write_examples(fp, t, t->heldout, t->n_heldout, "heldout") != 0;
    if (bad) {
        int e = errno;
        hs_atomic_abort(&af);
        return hs_fail(err, HS_ERR_IO, "cannot write %s: %s", path, strerror(e ? e : EIO));
    }
    return hs_atomic_commit(&af, err);
}

/* ------------------------------------------------------------------------ */
/* Task metadata JSON                                                        */

static cJSON *string_array(const char *const *s, int n)
{
    return cJSON_CreateStringArray(s, n);
}

hs_status hs_winograd_task_json(const hs_winograd *t, char **json, hs_error *err)
{
    *json = NULL;
    cJSON *o = cJSON_CreateObject();
    char *text = NULL;
    if (!o) goto nomem;
    if (!cJSON_AddStringToObject(o, "name", hs_task_name(t->kind))) goto nomem;
    if (t->split_seed <= (1ull << 53)) {
        if (!cJSON_AddNumberToObject(o, "split_seed", (double)t->split_seed)) goto nomem;
    } else {
        char b[32];
        snprintf(b, sizeof b, "%llu", (unsigned long long)t->split_seed);
        if (!cJSON_AddStringToObject(o, "split_seed", b)) goto nomem;
    }
    cJSON *nouns = string_array(hs_wg_nouns, HS_WG_N_NOUNS);
    if (!nouns || !cJSON_AddItemToObject(o, "nouns", nouns)) {
        cJSON_Delete(nouns);
        goto nomem;
    }
    cJSON *adjs = string_array(hs_wg_adjectives, HS_WG_N_ADJS);
    if (!adjs || !cJSON_AddItemToObject(o, "adjectives", adjs)) {
        cJSON_Delete(adjs);
        goto nomem;
    }
    cJSON *pairs = cJSON_AddArrayToObject(o, "heldout_pairs");
    if (!pairs) goto nomem;
    for (size_t k = 0; k < t->n_heldout_pairs; k++) {
        const char *xy[2] = {hs_wg_nouns[t->heldout_pairs[k][0]],
                             hs_wg_nouns[t->heldout_pairs[k][1]]};
        cJSON *p = string_array(xy, 2);
        if (!p || !cJSON_AddItemToArray(pairs, p)) {
            cJSON_Delete(p);
            goto nomem;
        }
    }
    if (!cJSON_AddNumberToObject(o, "n_train", (double)t->n_train)) goto nomem;
    if (!cJSON_AddNumberToObject(o, "n_heldout", (double)t->n_heldout)) goto nomem;
    text = cJSON_PrintUnformatted(o);
    if (!text) goto nomem;
    size_t n = strlen(text);
    *json = malloc(n + 1);
    if (*json) memcpy(*json, text, n + 1);
    cJSON_free(text);
    cJSON_Delete(o);
    if (!*json) return hs_fail(err, HS_ERR_NOMEM, "out of memory writing the task JSON");
    return HS_OK;
nomem:
    cJSON_Delete(o);
    return hs_fail(err, HS_ERR_NOMEM, "out of memory writing the task JSON");
}

/* Checks that list (if present) is exactly want[0..n). */
static hs_status check_list(const cJSON *list, const char *key, const char *const *want, int n,
                            hs_error *err)
{
    if (list == NULL) return HS_OK;
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) != n)
        return hs_fail(err, HS_ERR_FORMAT, "task metadata '%s' is not a list of %d words", key, n);
    for (int i = 0; i < n; i++) {
        const cJSON *it = cJSON_GetArrayItem(list, i);
        if (!cJSON_IsString(it) || strcmp(it->valuestring, want[i]) != 0)
            return hs_fail(err, HS_ERR_FORMAT,
                           "task metadata '%s' differs from headscope's at index %d (want '%s')",
                           key, i, want[i]);
    }
    return HS_OK;
}

/* The first 64 bytes of w into shown (68 bytes), control characters as '?'
 * (a message keeps to one line). Returns shown. */
static const char *shown_word(const char *w, char *shown)
{
    size_t k = 0;
    for (const char *c = w; *c && k < 64; c++, k++)
        shown[k] = (unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c;
    shown[k] = '\0';
    return shown;
}

/* Reads task metadata's split_seed (a whole number, or a decimal string above
 * 2^53) into *out. */
static hs_status seed_read(const cJSON *seed, uint64_t *out, hs_error *err)
{
    if (cJSON_IsNumber(seed)) {
        double d = seed->valuedouble;
        if (!(d >= 0 && d <= 9007199254740992.0) || d != (double)(uint64_t)d)
            return hs_fail(err, HS_ERR_FORMAT, "task metadata 'split_seed' is not a whole number >= 0");
        *out = (uint64_t)d;
        return HS_OK;
    }
    if (cJSON_IsString(seed)) {
        const char *s = seed->valuestring;
        char *end = NULL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno == ERANGE)
            return hs_fail(err, HS_ERR_FORMAT, "task metadata 'split_seed' is not a whole number >= 0");
        *out = (uint64_t)v;
        return HS_OK;
    }
    return hs_fail(err, HS_ERR_FORMAT, "task metadata has neither 'heldout_pairs' nor 'split_seed'");
}

/* Reads task metadata's heldout_pairs ([[x, y] noun words]) into pairs (noun
 * indices, up to HS_WG_MAX_HELDOUT_PAIRS), naming the first bad entry. */
static hs_status pairs_json_read(const cJSON *list, int (*pairs)[2], size_t *n, hs_error *err)
{
    *n = 0;
    if (!cJSON_IsArray(list))
        return hs_fail(err, HS_ERR_FORMAT, "task metadata 'heldout_pairs' is not a list of [x, y] noun pairs");
    const cJSON *it;
    cJSON_ArrayForEach(it, list) {
        const cJSON *x = cJSON_GetArrayItem(it, 0), *y = cJSON_GetArrayItem(it, 1);
        if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 2 || !cJSON_IsString(x) || !cJSON_IsString(y))
            return hs_fail(err, HS_ERR_FORMAT, "task metadata 'heldout_pairs'[%zu] is not an [x, y] "
                           "pair of noun words", *n);
        if (*n == HS_WG_MAX_HELDOUT_PAIRS)
            return hs_fail(err, HS_ERR_FORMAT, "task metadata 'heldout_pairs' has more than %d pairs",
                           HS_WG_MAX_HELDOUT_PAIRS);
        const cJSON *w[2] = {x, y};
        for (int k = 0; k < 2; k++) {
            char shown[68];
            if ((pairs[*n][k] = noun_index(w[k]->valuestring)) < 0)
                return hs_fail(err, HS_ERR_FORMAT, "task metadata 'heldout_pairs'[%zu]: '%s' is not "
                               "one of the task's 16 nouns", *n, shown_word(w[k]->valuestring, shown));
        }
        (*n)++;
    }
    return HS_OK;
}

hs_status hs_winograd_from_task_json(const char *json, const hs_tokenizer *vocab,
                                     hs_winograd **out, hs_error *err)
{
    hs_status st;
    *out = NULL;
    if (json == NULL || json[0] == '\0')
        return hs_fail(err, HS_ERR_FORMAT, "task metadata is missing");
    cJSON *o = cJSON_ParseWithOpts(json, NULL, 1);
    if (!o || !cJSON_IsObject(o)) {
        st = hs_fail(err, HS_ERR_FORMAT, "task metadata is not a JSON object");
        goto done;
    }
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
    if (!cJSON_IsString(name)) {
        st = hs_fail(err, HS_ERR_FORMAT, "task metadata has no 'name'");
        goto done;
    }
    int kind = hs_task_parse(name->valuestring);
    if (kind < 0) {
        char shown[68];
        st = hs_fail(err, HS_ERR_FORMAT, "task metadata names an unknown task '%s'",
                     shown_word(name->valuestring, shown));
        goto done;
    }
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(o, "split_seed");
    const cJSON *jpairs = cJSON_GetObjectItemCaseSensitive(o, "heldout_pairs");
    uint64_t split_seed = 0;
    if (seed != NULL || jpairs == NULL) {
        st = seed_read(seed, &split_seed, err);
        if (st != HS_OK) goto done;
    }
    st = check_list(cJSON_GetObjectItemCaseSensitive(o, "nouns"), "nouns", hs_wg_nouns,
                    HS_WG_N_NOUNS, err);
    if (st != HS_OK) goto done;
    st = check_list(cJSON_GetObjectItemCaseSensitive(o, "adjectives"), "adjectives",
                    hs_wg_adjectives, HS_WG_N_ADJS, err);
    if (st != HS_OK) goto done;
    if (jpairs == NULL) {
        st = hs_winograd_create((hs_task_kind)kind, split_seed, vocab, out, err);
        goto done;
    }
    int pairs[HS_WG_MAX_HELDOUT_PAIRS][2];
    size_t n = 0;
    st = pairs_json_read(jpairs, pairs, &n, err);
    if (st == HS_OK) st = create_task((hs_task_kind)kind, split_seed, (const int(*)[2])pairs, n,
                                      vocab, out, err);
    if (st != HS_OK) goto done;
    (*out)->pairs_read = 1;
    if (seed != NULL) { /* the pairs a seed draws are that seed's split, as headscope writes */
        hs_winograd drawn = {.kind = (hs_task_kind)kind, .split_seed = split_seed};
        choose_heldout(&drawn);
        (*out)->pairs_given = drawn.n_heldout_pairs != n ||
                              memcmp(drawn.heldout_pairs, (*out)->heldout_pairs, n * sizeof pairs[0]) != 0;
    }
done:
    cJSON_Delete(o);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Batches                                                                   */

void hs_winograd_batch(const hs_winograd *t, hs_task_rng *r, size_t B, int *tokens, int *targets)
{
    HS_ASSERT(B > 0 && t->n_train > 0 && tokens != NULL && targets != NULL);
    for (size_t b = 0; b < B; b++) {
        const hs_wg_example *e = &t->train[hs_task_rng_below(r, t->n_train)];
        int *tok = tokens + b * HS_WG_LEN;
        int *tgt = targets + b * HS_WG_LEN;
        for (int p = 0; p < HS_WG_LEN; p++) {
            tok[p] = e->tokens[p];
            tgt[p] = p + 1 < HS_WG_LEN ? e->tokens[p + 1] : -1;
        }
    }
}
