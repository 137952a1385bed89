/*
 * tasks/ladder.c -- the chapter's ablation ladder (tasks/text.h, "The ladder"):
 * one text run (hs_train_run, --task text) per row, each row adding one piece
 * to the row above, on one BPE shared by every row, with the parameters and
 * held-out perplexity of each. The "replacing" rows set attn_replace (the
 * attention's output replaces the residual instead of being added to it).
 */
#include "tasks/text.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Each row: its name, what it adds, and the model it trains. */
typedef struct {
    const char *row, *label, *adds; /* label: the figure's (short) */
    int replace;        /* 1: the attention replaces the residual (attn_replace) */
    int context;        /* 0: windows of one token (no context: a bigram) */
    hs_attn attn;
    int pos;            /* 1 learned positions, 0 none */
    int heads;          /* 1 or 4 */
    int mlp;            /* 1: d_mlp = 4 d_model */
    int norm;           /* 1: LayerNorm (ln1, ln2, final) */
} row_def;

static const row_def ROWS[HS_LADDER_ROWS] = {
    /* row, label, adds, replace, context, attn, pos, heads, mlp, norm */
    {"no context", "no context", "each token predicts the next alone (windows of one token)",
     0, 0, HS_ATTN_UNIFORM, 0, 1, 0, 0},
    {"uniform causal average", "uniform average", "the average of the prefix replaces the token",
     1, 1, HS_ATTN_UNIFORM, 0, 1, 0, 0},
    {"+ positions", "+ positions", "learned positions",
     1, 1, HS_ATTN_UNIFORM, 1, 1, 0, 0},
    {"average added, not replacing", "average added", "a residual connection",
     0, 1, HS_ATTN_UNIFORM, 1, 1, 0, 0},
    {"one learned head replacing", "one head replacing",
     "softmax attention (one head of width d) replacing",
     1, 1, HS_ATTN_SOFTMAX, 1, 1, 0, 0},
    {"one head added", "one head added", "the head added to the residual",
     0, 1, HS_ATTN_SOFTMAX, 1, 1, 0, 0},
    {"four heads", "four heads", "four heads of d/4",
     0, 1, HS_ATTN_SOFTMAX, 1, 4, 0, 0},
    {"+ MLP", "+ MLP", "an MLP of 4d (GELU)",
     0, 1, HS_ATTN_SOFTMAX, 1, 4, 1, 0},
    {"+ LayerNorm", "+ LayerNorm", "LayerNorm before attention, MLP and unembedding",
     0, 1, HS_ATTN_SOFTMAX, 1, 4, 1, 1},
};

const char *hs_ladder_row_name(int i) { return i >= 0 && i < HS_LADDER_ROWS ? ROWS[i].row : "?"; }

hs_ladder_opts hs_ladder_opts_default(void)
{
    hs_ladder_opts o;
    memset(&o, 0, sizeof o);
    o.steps = 3000;
    o.d_model = 128;
    o.ctx = 128;
    o.batch = 32; /* the chapter's 64: 28-32 min on 2 cores by CPU/2 under load (bench/ladder_time.sh) */
    o.lr = 1e-3f;
    o.val_fraction = 0.1;
    o.vocab_size = 1024;
    return o;
}

void hs_ladder_row_job(const hs_ladder_opts *o, int r, const char *tok, size_t tok_len,
                       const char *out, hs_train_job *j)
{
    const row_def *d = &ROWS[r];
    hs_train_job_default(j);
    j->text_task = 1;
    j->corpus = o->corpus;
    j->n_corpus = o->n_corpus;
    j->tokenizer_json = tok;
    j->tokenizer_json_len = tok_len;
    j->tokenizer_json_from = o->tokenizer ? o->tokenizer : "trained on the corpus";
    j->text.val_fraction = o->val_fraction;
    j->text.n_ctx = d->context ? o->ctx : 1;
    j->train.steps = o->steps;
    /* the same tokens per step: windows of one token come ctx times as many */
    j->train.batch = d->context ? o->batch : o->batch * o->ctx;
    j->train.opt.lr = o->lr;
    j->seed = o->seed;
    j->eval_every = 0;
    j->log_every = o->log_every > 0 ? o->log_every : 250;
    j->out = out;
    j->force = 1;
    hs_config *c = &j->cfg;
    c->n_layers = 1;
    c->d_model = o->d_model;
    c->n_heads = d->heads;
    c->d_head = o->d_model / d->heads > 0 ? o->d_model / d->heads : 1;
    c->d_mlp = d->mlp ? 4 * o->d_model : 0;
    c->attn = d->attn;
    c->attn_replace = d->replace;
    c->pos = d->pos ? HS_POS_LEARNED : HS_POS_NONE;
    c->norm = d->norm ? HS_NORM_LAYERNORM : HS_NORM_NONE;
    c->ln1 = d->norm;
    c->ln_final = d->norm;
}

void hs_ladder_report_free(hs_ladder_report *r)
{
    if (r == NULL) return;
    free(r->tokenizer_json);
    memset(r, 0, sizeof *r);
}

/* Rows run in lanes (hs_ladder_run): a row's notes say which row they are
 * about, as two rows' notes interleave. */
typedef struct {
    const hs_notes *up;
    const hs_ladder_opts *o;
    int row;
} row_ctx;

static void row_note(void *ctx, hs_note_kind kind, const char *line)
{
    const row_ctx *rc = ctx;
    hs_note(rc->up, kind, "row %d: %s", rc->row, line);
}

static void row_progress(void *ctx, const hs_train_progress *p)
{
    const row_ctx *rc = ctx;
    rc->o->progress(rc->o->ctx_cb, rc->row, p);
}

typedef struct {
    const hs_ladder_opts *o;
    hs_ladder_report *out;
    int lanes, row_threads;
    row_ctx rc[HS_LADDER_ROWS];
    double unigram[HS_LADDER_ROWS];
} lanes_job;

/* The rows by cost, the dearest first (the MLP's rows, the heads', the
 * averages', the bigram's), so that two lanes end close together. */
static const int LANE_ORDER[HS_LADDER_ROWS] = {8, 7, 6, 5, 4, 3, 2, 1, 0};

/* Job j of the lanes: one row's run, alone on its worker. */
static hs_status row_run(void *ctx, int j, int worker, hs_error *err)
{
    (void)worker;
    lanes_job *L = ctx;
    const hs_ladder_opts *o = L->o;
    const int r = L->lanes > 1 ? LANE_ORDER[j] : j;
    hs_ladder_row *row = &L->out->rows[r];
    const hs_notes notes = {row_note, &L->rc[r]};
    char *path = hs_strfmt("%s/row-%d.safetensors", o->models_dir, r);
    if (!path) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    hs_train_job tj;
    hs_ladder_row_job(o, r, L->out->tokenizer_json, L->out->tokenizer_json_len, path, &tj);
    tj.train.threads = L->row_threads;
    tj.progress = o->progress ? row_progress : NULL;
    tj.ctx = &L->rc[r];
    hs_note(&notes, HS_NOTE_CMD, "%s", row->name);
    hs_train_result tr;
    hs_status s = hs_train_run(&tj, &notes, &tr, err);
    free(path);
    if (s != HS_OK) return s;
    row->n_params = tr.n_params;
    row->perplexity = tr.perplexity;
    row->cfg = tr.cfg;
    row->batch = tj.train.batch;
    row->heldout_tokens = tr.text_windows * (size_t)tr.cfg.n_ctx;
    L->unigram[r] = tr.unigram_perplexity;
    return HS_OK;
}

hs_status hs_ladder_run(const hs_ladder_opts *o, const hs_notes *notes, hs_ladder_report *out,
                        hs_error *err)
{
    memset(out, 0, sizeof *out);
    out->opts = *o;
    if (o->steps < 1 || o->d_model < 4 || o->ctx < 2 || o->batch < 1 || !(o->lr > 0))
        return hs_fail(err, HS_ERR_INPUT, "ladder: steps, d_model (>= 4), ctx (>= 2), batch and lr "
                       "must be positive");
    if (o->models_dir == NULL) return hs_fail(err, HS_ERR_INPUT, "ladder: no folder for the models");
    if (o->threads < 0) return hs_fail(err, HS_ERR_INPUT, "ladder: threads must be >= 0");
    hs_corpus c;
    hs_status s = hs_corpus_read(o->corpus, o->n_corpus, &c, err);
    if (s != HS_OK) return s;
    hs_bpe_trained b = {0};
    if (o->tokenizer) {
        unsigned char *t = NULL;
        size_t n = 0;
        s = hs_read_file(o->tokenizer, &t, &n, err);
        out->tokenizer_json = (char *)t;
        out->tokenizer_json_len = n;
    } else {
        s = hs_bpe_train(&c, o->vocab_size, notes, &b, err);
        if (s == HS_OK) {
            out->tokenizer_json = b.json;
            out->tokenizer_json_len = b.json_len;
            b.json = NULL;
        }
    }
    hs_bpe_trained_free(&b);
    hs_corpus_free(&c);
    lanes_job L;
    memset(&L, 0, sizeof L);
    L.o = o;
    L.out = out;
    const int threads = o->threads > 0 ? o->threads : hs_pool_cpus();
    L.lanes = threads < HS_LADDER_ROWS ? threads : HS_LADDER_ROWS;
    L.row_threads = L.lanes > 1 ? 1 : threads;
    for (int r = 0; r < HS_LADDER_ROWS; r++) {
        out->rows[r].name = ROWS[r].row;
        out->rows[r].label = ROWS[r].label;
        out->rows[r].adds = ROWS[r].adds;
        out->rows[r].perplexity = NAN;
        L.rc[r] = (row_ctx){notes, o, r};
    }
    hs_pool *lanes = NULL;
    if (s == HS_OK && L.lanes > 1) s = hs_pool_create(L.lanes, &lanes, err);
    if (s == HS_OK) s = hs_pool_for(lanes, HS_LADDER_ROWS, row_run, &L, err);
    hs_pool_destroy(lanes);
    if (s == HS_OK) {
        out->unigram_perplexity = L.unigram[HS_LADDER_ROWS - 1];
        out->V = (size_t)out->rows[HS_LADDER_ROWS - 1].cfg.d_vocab;
    }
    if (s != HS_OK) hs_ladder_report_free(out);
    return s;
}

cJSON *hs_ladder_json(const hs_ladder_report *r)
{
    cJSON *o = cJSON_CreateObject(), *rows = cJSON_AddArrayToObject(o, "rows");
    const hs_ladder_opts *p = &r->opts;
    for (int i = 0; i < HS_LADDER_ROWS; i++) {
        const hs_ladder_row *w = &r->rows[i];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "row", w->name);
        cJSON_AddStringToObject(x, "adds", w->adds);
        cJSON_AddNumberToObject(x, "params", (double)w->n_params);
        cJSON_AddNumberToObject(x, "perplexity", hs_f32_shortest((float)w->perplexity));
        cJSON_AddNumberToObject(x, "heldout_tokens", (double)w->heldout_tokens);
        cJSON_AddNumberToObject(x, "n_ctx", w->cfg.n_ctx);
        cJSON_AddNumberToObject(x, "batch", w->batch);
        cJSON_AddItemToObject(x, "config", hs_config_to_json(&w->cfg, HS_CONFIG_JSON_ALL));
        cJSON_AddItemToArray(rows, x);
    }
    cJSON *s = cJSON_AddObjectToObject(o, "settings");
    cJSON_AddNumberToObject(s, "steps", p->steps);
    cJSON_AddNumberToObject(s, "d_model", p->d_model);
    cJSON_AddNumberToObject(s, "ctx", p->ctx);
    cJSON_AddNumberToObject(s, "batch", p->batch);
    cJSON_AddNumberToObject(s, "lr", hs_f32_shortest(p->lr));
    cJSON_AddNumberToObject(s, "seed", (double)p->seed);
    cJSON_AddNumberToObject(s, "val_fraction", p->val_fraction);
    cJSON_AddNumberToObject(s, "vocab", (double)r->V);
    cJSON_AddStringToObject(s, "tokenizer", p->tokenizer ? p->tokenizer : "trained on the corpus");
    cJSON *files = cJSON_AddArrayToObject(s, "corpus");
    for (size_t i = 0; i < p->n_corpus; i++) cJSON_AddItemToArray(files, cJSON_CreateString(p->corpus[i]));
    if (isfinite(r->unigram_perplexity))
        cJSON_AddNumberToObject(s, "unigram_perplexity", hs_f32_shortest((float)r->unigram_perplexity));
    return o;
}
