/*
 * tasks/ioi.c -- the indirect-object-identification (IOI) prompt set of
 * Wang et al. 2022 (arXiv 2211.00593), as the ACDC / Easy-Transformer code
 * builds it (ArthurConmy/Automatic-Circuit-Discovery acdc/ioi/ioi_dataset.py,
 * BABA_TEMPLATES, NAMES, PLACES, OBJECTS; tasks.h, hs_ioi_generate).
 */
#include "tasks/tasks.h"

#include <string.h>

#include <cjson/cJSON.h>

/* The BABA templates of ioi_dataset.py (BABA_TEMPLATES), each ending at the
 * indirect object, which the prompt leaves out (the model's answer). [B] is
 * the subject S, [A] the indirect object IO; the ABBA form swaps the first
 * [B] and the first [A] (ioi_dataset.py's ABBA_TEMPLATES). */
static const char *const TEMPLATES[HS_IOI_N_TEMPLATES] = {
    "Then, [B] and [A] went to the [PLACE]. [B] gave a [OBJECT] to",
    "Then, [B] and [A] had a lot of fun at the [PLACE]. [B] gave a [OBJECT] to",
    "Then, [B] and [A] were working at the [PLACE]. [B] decided to give a [OBJECT] to",
    "Then, [B] and [A] were thinking about going to the [PLACE]. [B] wanted to give a [OBJECT] to",
    "Then, [B] and [A] had a long argument, and afterwards [B] said to",
    "After [B] and [A] went to the [PLACE], [B] gave a [OBJECT] to",
    "When [B] and [A] got a [OBJECT] at the [PLACE], [B] decided to give it to",
    "When [B] and [A] got a [OBJECT] at the [PLACE], [B] decided to give the [OBJECT] to",
    "While [B] and [A] were working at the [PLACE], [B] gave a [OBJECT] to",
    "While [B] and [A] were commuting to the [PLACE], [B] gave a [OBJECT] to",
    "After the lunch, [B] and [A] went to the [PLACE]. [B] gave a [OBJECT] to",
    "Afterwards, [B] and [A] went to the [PLACE]. [B] gave a [OBJECT] to",
    "Then, [B] and [A] had a long argument. Afterwards [B] said to",
    "The [PLACE] [B] and [A] went to had a [OBJECT]. [B] gave it to",
    "Friends [B] and [A] found a [OBJECT] at the [PLACE]. [B] gave it to",
};

/* ioi_dataset.py's NAMES (99 first names, each one GPT-2 token with its
 * leading space), PLACES and OBJECTS. */
static const char *const NAMES[] = {
    "Michael", "Christopher", "Jessica", "Matthew", "Ashley", "Jennifer", "Joshua", "Amanda",
    "Daniel", "David", "James", "Robert", "John", "Joseph", "Andrew", "Ryan", "Brandon", "Jason",
    "Justin", "Sarah", "William", "Jonathan", "Stephanie", "Brian", "Nicole", "Nicholas",
    "Anthony", "Heather", "Eric", "Elizabeth", "Adam", "Megan", "Melissa", "Kevin", "Steven",
    "Thomas", "Timothy", "Christina", "Kyle", "Rachel", "Laura", "Lauren", "Amber", "Brittany",
    "Danielle", "Richard", "Kimberly", "Jeffrey", "Amy", "Crystal", "Michelle", "Tiffany",
    "Jeremy", "Benjamin", "Mark", "Emily", "Aaron", "Charles", "Rebecca", "Jacob", "Stephen",
    "Patrick", "Sean", "Erin", "Jamie", "Kelly", "Samantha", "Nathan", "Sara", "Dustin", "Paul",
    "Angela", "Tyler", "Scott", "Katherine", "Andrea", "Gregory", "Erica", "Mary", "Travis",
    "Lisa", "Kenneth", "Bryan", "Lindsey", "Kristen", "Jose", "Alexander", "Jesse", "Katie",
    "Lindsay", "Shannon", "Vanessa", "Courtney", "Christine", "Alicia", "Cody", "Allison",
    "Bradley", "Samuel",
};
static const char *const PLACES[] = {"store", "garden", "restaurant", "school",
                                     "hospital", "office", "house", "station"};
static const char *const OBJECTS[] = {"ring", "kiss", "bone", "basketball",
                                      "computer", "necklace", "drink", "snack"};
#define N_OF(a) ((int)(sizeof a / sizeof a[0]))

void hs_ioi_set_free(hs_ioi_set *s)
{
    if (s == NULL) return;
    free(s->jsonl);
    memset(s, 0, sizeof *s);
}

/* Tokens of text with the tokenizer's BOS left out (-1 on an encode error:
 * every IOI text is encodable by a BPE, so only out of memory). */
static int n_tokens(const hs_tokenizer *t, const char *text, hs_status *st, hs_error *err)
{
    hs_tokens tk = {0};
    if ((*st = hs_tok_encode(t, text, 0, &tk, err)) != HS_OK) return -1;
    const int n = (int)tk.n - (hs_tok_bos(t) >= 0 ? 1 : 0);
    hs_tokens_free(&tk);
    return n;
}

/* Keeps in keep[] (their count returned, -1 on error) the words of list
 * whose " word" is one token of t (hs_tok_one). */
static int one_token_words(const hs_tokenizer *t, const char *const *list, int n, int *keep,
                           hs_status *st, hs_error *err)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        char s[64];
        snprintf(s, sizeof s, " %s", list[i]);
        /* one token as an answer is (hs_tok_one: as inside a prompt) */
        hs_error e1 = {0};
        int id;
        const hs_status s1 = hs_tok_one(t, s, &id, &e1);
        if (s1 == HS_OK) keep[k++] = i;
        else if (s1 != HS_ERR_INPUT) {
            *st = hs_fail(err, s1, "%s", e1.msg);
            return -1;
        }
    }
    return k;
}

/* What fills a template's slots (the template has their spaces): the names at
 * the indirect object IO, the subject's first mention S1 and its second S2,
 * the place and the object. */
typedef struct {
    const char *io, *s1, *s2, *place, *obj;
} ioi_fill;

/* Appends template tpl to b with f's words in its slots: [A] is IO, the
 * first [B] S1, the second [B] S2; abba swaps the first [B] and the first
 * [A] (ioi_dataset.py's ABBA_TEMPLATES), so IO is named first. */

static void fill(hs_buf *b, const char *tpl, int abba, const ioi_fill *f)
{
    int first_b = 1, first_a = 1;
    for (const char *p = tpl; *p;) {
        if (strncmp(p, "[A]", 3) == 0 || strncmp(p, "[B]", 3) == 0) {
            const int is_b = p[1] == 'B';
            const int first = is_b ? first_b : first_a;
            int io = !is_b;
            if (abba && first) io = is_b; /* ABBA: the first clause names IO first */
            if (is_b) first_b = 0;
            else first_a = 0;
            hs_buf_puts(b, io ? f->io : (is_b && !first ? f->s2 : f->s1));
            p += 3;
        } else if (strncmp(p, "[PLACE]", 7) == 0) {
            hs_buf_puts(b, f->place);
            p += 7;
        } else if (strncmp(p, "[OBJECT]", 8) == 0) {
            hs_buf_puts(b, f->obj);
            p += 8;
        } else {
            hs_buf_append(b, p++, 1);
        }
    }
}

/* Chooses the templates: p->template_id alone, or the largest group of
 * templates sharing one token length (ties: the group of the lowest
 * index). Fills out->templates, n_templates and n_tokens. */
static hs_status choose_templates(const hs_tokenizer *t, const hs_ioi_params *p, const char *name,
                                  const char *place, const char *obj, hs_ioi_set *out, hs_error *err)
{
    int len[HS_IOI_N_TEMPLATES];
    hs_status st = HS_OK;
    const ioi_fill f = {name, name, name, place, obj};
    for (int i = 0; i < HS_IOI_N_TEMPLATES; i++) {
        hs_buf b = {0};
        fill(&b, TEMPLATES[i], 0, &f);
        len[i] = b.oom ? -1 : n_tokens(t, b.s, &st, err);
        const int oom = b.oom;
        hs_buf_free(&b);
        if (oom) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
        if (len[i] < 0) return st;
    }
    int best = p->template_id, best_n = 0;
    if (best < 0) {
        for (int i = 0; i < HS_IOI_N_TEMPLATES; i++) {
            int c = 0;
            for (int j = 0; j < HS_IOI_N_TEMPLATES; j++) c += len[j] == len[i];
            if (c > best_n) best = i, best_n = c;
        }
    }
    out->n_templates = 0;
    for (int i = 0; i < HS_IOI_N_TEMPLATES; i++)
        if (i == best || (p->template_id < 0 && len[i] == len[best]))
            out->templates[out->n_templates++] = i;
    out->n_tokens = len[best] + (hs_tok_bos(t) >= 0 ? 1 : 0);
    return HS_OK;
}

/* A name index of kept[0..n) differing from every one of avoid[0..k). */
static int draw_name(hs_task_rng *r, const int *kept, int n, const int *avoid, int k)
{
    for (;;) {
        const int c = kept[hs_task_rng_below(r, (uint64_t)n)];
        int ok = 1;
        for (int j = 0; j < k; j++) ok &= c != avoid[j];
        if (ok) return c;
    }
}


/* Draws prompt i (ABBA when i is even) and appends its line to o: prompt,
 * corrupted, answer (IO), wrong (S). *ok is 0 when the prompt or the
 * corrupted prompt is not out->n_tokens long (the caller draws again). */
static hs_status one_prompt(const hs_tokenizer *t, const hs_ioi_params *p, hs_task_rng *r, int i,
                            const int *names, int nn, const int *pl, int np, const int *ob, int no,
                            hs_ioi_set *out, hs_buf *o, int *ok, hs_error *err)
{
    const int abba = i % 2 == 0;
    const int tpl = out->templates[hs_task_rng_below(r, (uint64_t)out->n_templates)];
    int nm[5];
    nm[0] = draw_name(r, names, nn, NULL, 0);        /* IO */
    nm[1] = draw_name(r, names, nn, nm, 1);          /* S */
    nm[2] = draw_name(r, names, nn, nm, 2);          /* C (s2) or X (abc) */
    nm[3] = p->corrupt == HS_IOI_CORRUPT_ABC ? draw_name(r, names, nn, nm, 3) : -1; /* Y */
    nm[4] = p->corrupt == HS_IOI_CORRUPT_ABC ? draw_name(r, names, nn, nm, 4) : -1; /* Z */
    const char *place = PLACES[pl[hs_task_rng_below(r, (uint64_t)np)]];
    const char *obj = OBJECTS[ob[hs_task_rng_below(r, (uint64_t)no)]];
    const char *io = NAMES[nm[0]], *s = NAMES[nm[1]], *x = NAMES[nm[2]];
    const ioi_fill fc = {io, s, s, place, obj};
    const ioi_fill fr = p->corrupt == HS_IOI_CORRUPT_ABC
                            ? (ioi_fill){x, NAMES[nm[3]], NAMES[nm[4]], place, obj}
                            : (ioi_fill){io, s, x, place, obj};
    hs_buf bc = {0}, br = {0};
    fill(&bc, TEMPLATES[tpl], abba, &fc);
    fill(&br, TEMPLATES[tpl], abba, &fr);
    hs_status st = HS_OK;
    *ok = 0;
    if (bc.oom || br.oom) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto done;
    }
    const int bos = hs_tok_bos(t) >= 0 ? 1 : 0;
    const int lc = n_tokens(t, bc.s, &st, err), lr = lc < 0 ? -1 : n_tokens(t, br.s, &st, err);
    if (lc < 0 || lr < 0) goto done;
    if (lc + bos != out->n_tokens || lr != lc) goto done; /* redrawn */
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "prompt", bc.s);
    cJSON_AddStringToObject(j, "corrupted", br.s);
    char sa[64], sw[64]; /* the answers with their leading space, as GPT-2 reads them */
    snprintf(sa, sizeof sa, " %s", io);
    snprintf(sw, sizeof sw, " %s", s);
    cJSON_AddStringToObject(j, "answer", sa);
    cJSON_AddStringToObject(j, "wrong", sw);
    char *line = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (line == NULL) {
        st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto done;
    }
    hs_buf_printf(o, "%s\n", line);
    free(line);
    *ok = 1;
    if (abba) out->n_abba++;
    else out->n_baba++;
done:
    hs_buf_free(&bc);
    hs_buf_free(&br);
    return st;
}

hs_status hs_ioi_generate(const hs_tokenizer *t, const hs_ioi_params *p, hs_ioi_set *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    if (p->n < 1 || p->n > HS_IOI_MAX_N)
        return hs_fail(err, HS_ERR_INPUT, "the number of IOI prompts must be in [1, %d], not %d",
                       HS_IOI_MAX_N, p->n);
    if (p->template_id < -1 || p->template_id >= HS_IOI_N_TEMPLATES)
        return hs_fail(err, HS_ERR_INPUT, "IOI template %d does not exist (0..%d)", p->template_id,
                       HS_IOI_N_TEMPLATES - 1);
    if (t->kind != HS_TOKENIZER_BPE)
        return hs_fail(err, HS_ERR_INPUT,
                       "IOI prompts need a byte-level BPE tokenizer (GPT-2's) that has the names as "
                       "single tokens; this model has a word-level vocabulary of %zu words", t->n);
    int names[N_OF(NAMES)], pl[N_OF(PLACES)], ob[N_OF(OBJECTS)];
    hs_status st = HS_OK;
    const int nn = one_token_words(t, NAMES, N_OF(NAMES), names, &st, err);
    const int np = nn < 0 ? -1 : one_token_words(t, PLACES, N_OF(PLACES), pl, &st, err);
    const int no = np < 0 ? -1 : one_token_words(t, OBJECTS, N_OF(OBJECTS), ob, &st, err);
    if (no < 0) return st;
    const int need = p->corrupt == HS_IOI_CORRUPT_ABC ? 5 : 3;
    if (nn < need || np < 1 || no < 1)
        return hs_fail(err, HS_ERR_INPUT,
                       "the tokenizer has too few of the IOI words as one token with a leading space: "
                       "%d of %d names (%d needed), %d of %d places, %d of %d objects (1 needed each)",
                       nn, N_OF(NAMES), need, np, N_OF(PLACES), no, N_OF(OBJECTS));
    out->n_names = nn, out->n_places = np, out->n_objects = no;
    out->n_names_listed = N_OF(NAMES), out->n_places_listed = N_OF(PLACES), out->n_objects_listed = N_OF(OBJECTS);
    if ((st = choose_templates(t, p, NAMES[names[0]], PLACES[pl[0]], OBJECTS[ob[0]], out, err)) != HS_OK)
        return st;
    hs_task_rng r;
    hs_task_rng_seed(&r, p->seed);
    hs_buf o = {0};
    for (int i = 0; i < p->n && st == HS_OK;) {
        int ok = 0;
        st = one_prompt(t, p, &r, i, names, nn, pl, np, ob, no, out, &o, &ok, err);
        if (st == HS_OK && !ok && ++out->n_redrawn > 100 * p->n)
            st = hs_fail(err, HS_ERR_INPUT, "IOI prompts: %d draws in a row gave a corrupted prompt or a "
                         "prompt of another length than %d tokens", out->n_redrawn, out->n_tokens);
        i += ok;
    }
    if (st == HS_OK && o.oom) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (st != HS_OK) {
        hs_buf_free(&o);
        hs_ioi_set_free(out);
        return st;
    }
    out->jsonl = o.s;
    out->len = o.len;
    return HS_OK;
}
