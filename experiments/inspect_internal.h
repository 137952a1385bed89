/*
 * experiments/inspect_internal.h -- what the two files of an inspect run
 * share and nothing else includes: the run's state (inspect.c fills it, and
 * writes the DLA, predictions and index) and the attention figure writers
 * (inspect_figs.c).
 */
#ifndef HS_INSPECT_INTERNAL_H
#define HS_INSPECT_INTERNAL_H

#include "experiments/experiments.h"

/* One inspect run, read by the figure writers. T = tokens of a sentence,
 * L layers, H heads a layer. */
typedef struct {
    const hs_model *m;
    const hs_tokenizer *tok;
    const hs_inspect_opts *o;
    const hs_notes *notes;
    hs_outdir *od;              /* the open output folder */
    hs_figopts *fo;             /* its options: the first figure drawn pins the run's label
                                   size in them (insp_pin_font), hs_inspect_run restores them */
    const hs_tokens *ta;        /* sentence A */
    const char *const *lab;     /* [T] A's tokens as figures show them */
    const char *const *lab2;    /* [T] B's, or NULL without a pair */
    const int *ids2;            /* [T] B's token ids, or NULL */
    const hs_tokens *tb;        /* sentence B, or NULL */
    const float *logits2;       /* [d_vocab] B's logits at pos, or NULL */
    const hs_cache *cache;      /* A's run: patterns, components, logits */
    const float *pats, *pats2;  /* [L, H, T, T] hook_pattern of A, of B (or NULL) */
    int L, H, T;
    int pos;                    /* the query position */
    int a, b;                   /* attention figures show positions a..b */
    int pred, vs_id;            /* the predicted token at pos; vs's id or -1 */
    const char *tag;            /* what the titles of sentence A's own figures end with:
                                 * " (tired)" in a pair, NULL alone (insp_figures sets it) */
} insp_run;

/* Adds the context every JSON of the run carries: "config", "model",
 * "sentence", with_tokens "tokens" (exact strings), "token_ids",
 * "query_position". 0 when memory ran out. */
int insp_context(cJSON *o, const insp_run *x, int with_tokens);

/* Token id as every title, note and message of inspect quotes it: its
 * display form (hs_tok_display, as the axes and the terminal show it: GPT-2's
 * " Mary" as `·Mary`, a padding id as "#id") with any character that could
 * change the line as <U+XXXX> (hs_visible_dup). Malloc'd; NULL on OOM. */
char *insp_tok_shown(const hs_tokenizer *t, int id);

/* The title a figure gets: dflt, the user's title for the main figure
 * (main_fig), none with no_title. */
const char *insp_title(const insp_run *x, const char *dflt, int main_fig);

/* Writes the run's attention figures into x->od, in this order:
 * attention_grid, query_row, L<l>H<h>, L<l>_mean, with a pair pair_* /
 * diff_* per layer mean and per only head and query_row_pair. Under one only
 * head, attention_grid is its JSON alone (its picture is L<l>H<h>'s, which is
 * the main figure then); in a pair, sentence A's own figures say so in their
 * titles ("L1H1 attention (tired)"). */
hs_status insp_figures(const insp_run *x, hs_error *err);

/* A pair's sentences named by the words where they differ: "tired" and
 * "wet"; up to three words in parentheses ("(animal, tired)"); else
 * "sentence 1" and "sentence 2". Into *na, *nb (malloc'd; NULL on OOM). */
void insp_pair_names(const insp_run *x, char **na, char **nb);

#endif
