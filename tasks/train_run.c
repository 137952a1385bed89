/*
 * tasks/train_run.c -- one training run (tasks.h, "A training run"): the task
 * (or the run a checkpoint was saved from), the model, the checks of every
 * output before the first step, the held-out evaluations, the kept and
 * periodic checkpoints with their `train` metadata, and the final save.
 * `headscope train` and `headscope demo` call it and print what it hands
 * them.
 */
#define _POSIX_C_SOURCE 200809L
#include "tasks/tasks.h"
#include "model/checkpoint.h"
#include "tasks/text.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

void hs_train_job_default(hs_train_job *job)
{
    memset(job, 0, sizeof *job);
    job->kind = HS_TASK_WINOGRAD;
    job->ind = hs_ind_params_default();
    job->cfg = hs_config_default();
    job->cfg.d_head = 0;
    job->cfg.d_mlp = -1;
    job->init = HS_INIT_PYTORCH;
    job->train = hs_train_opts_default();
    job->train.steps = -1;
    job->train.opt.lr = 0.0f;
    job->log_every = 250;
    job->eval_every = 250;
    job->text = hs_text_params_default();
}

/* The task being trained: exactly one of wg / ind. */
typedef struct {
    hs_winograd *wg;
    hs_induction *ind;
    hs_text *txt;
    int threads;              /* the text task's evaluation workers (the run's) */
    const hs_tokenizer *vocab;
    hs_task_rng rng;          /* the batch stream */
} train_task;

static void fill_batch(void *ctx, int B, int T, int *tokens, int *targets)
{
    train_task *tt = ctx;
    if (tt->txt)
        hs_text_batch(tt->txt, &tt->rng, (size_t)B, T, tokens, targets);
    else if (tt->ind)
        hs_induction_batch(tt->ind, &tt->rng, (size_t)B, tokens, targets, NULL);
    else
        hs_winograd_batch(tt->wg, &tt->rng, (size_t)B, tokens, targets);
}

/* Held-out accuracy (and for induction the repeated-segment loss; for text
 * the perplexity in *loss, accuracy NAN). */
static hs_status eval_task(const train_task *tt, const hs_model *m, double *acc, double *loss,
                           hs_error *err)
{
    *loss = NAN;
    if (tt->txt) {
        hs_text_score sc;
        hs_status s = hs_text_perplexity(m, tt->txt->heldout, tt->txt->n_heldout,
                                         tt->txt->p.n_ctx, tt->threads, &sc, err);
        if (s != HS_OK) return s;
        *acc = NAN;
        *loss = sc.perplexity;
        return HS_OK;
    }
    if (tt->ind) {
        hs_ind_score sc;
        hs_status s = hs_induction_score(m, tt->ind, 0, NULL, &sc, err);
        if (s != HS_OK) return s;
        *acc = hs_ind_score_accuracy(&sc);
        *loss = sc.seg_loss;
        return HS_OK;
    }
    hs_wg_score sco;
    hs_status s = hs_winograd_score(m, tt->wg, HS_SPLIT_HELDOUT, NULL, &sco, err);
    if (s == HS_OK) *acc = hs_wg_score_accuracy(&sco);
    return s;
}

/* The run's state between steps. */
typedef struct {
    const hs_train_job *job;
    train_task *tt;
    int checkpoint_every;
    int save_opt;
    double last_acc, last_seg_loss;
    int last_acc_step;
    int first_full_step;
    unsigned long long seed;
    int batch;           /* recorded so a resumed run continues with the same batches */
    float lr;            /* peak learning rate, likewise */
    int warmup;          /* warmup steps, likewise */
    const char *init;
    char *vocab_json, *task_json;
} step_ctx;

static char *train_json(const step_ctx *sc, int step, int steps)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    char rng[32];
    snprintf(rng, sizeof rng, "%llu", (unsigned long long)sc->tt->rng.state);
    cJSON_AddNumberToObject(o, "steps", steps);
    cJSON_AddNumberToObject(o, "steps_done", step);
    cJSON_AddNumberToObject(o, "seed", (double)sc->seed);
    cJSON_AddStringToObject(o, "init", sc->init);
    cJSON_AddNumberToObject(o, "batch", sc->batch);
    cJSON_AddNumberToObject(o, "lr", hs_f32_shortest(sc->lr));
    /* the batch stream's state after step steps_done (what a resumed run continues from) */
    cJSON_AddStringToObject(o, "batch_rng_state", rng);
    if (sc->warmup > 0) cJSON_AddNumberToObject(o, "warmup", sc->warmup);
    if (sc->tt->txt && (sc->last_acc_step > 0 || step == 0)) {
        cJSON_AddNumberToObject(o, "heldout_perplexity", sc->last_seg_loss);
        cJSON_AddNumberToObject(o, "heldout_perplexity_step", sc->last_acc_step);
    } else if (sc->last_acc_step > 0 || step == 0) {
        cJSON_AddNumberToObject(o, "heldout_accuracy", sc->last_acc);
        cJSON_AddNumberToObject(o, "heldout_accuracy_step", sc->last_acc_step);
        if (isfinite(sc->last_seg_loss))
            cJSON_AddNumberToObject(o, "heldout_segment_loss", sc->last_seg_loss);
    }
    cJSON_AddStringToObject(o, "headscope_version", HS_VERSION);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static hs_status save(step_ctx *sc, hs_model *m, const char *path, int step, int steps, hs_error *err)
{
    char *tj = train_json(sc, step, steps);
    if (!tj) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    hs_meta meta = {sc->vocab_json, sc->task_json, tj, NULL};
    hs_status s = hs_checkpoint_save_ex(m, &meta, sc->save_opt, path, err);
    cJSON_free(tj);
    return s;
}

/* dir/step-NNNNNN.safetensors, malloc'd (any length of dir); NULL out of memory. */
static char *keep_path(const char *dir, int step) { return hs_strfmt("%s/step-%06d.safetensors", dir, step); }

static hs_status save_keep(step_ctx *sc, hs_model *m, int step, int steps, hs_error *err)
{
    char *path = keep_path(sc->job->keep, step);
    if (path == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    hs_status s = save(sc, m, path, step, steps, err);
    free(path);
    return s;
}

static hs_status on_step(void *ctx, hs_model *m, const hs_train_info *in, hs_error *err)
{
    step_ctx *sc = ctx;
    const hs_train_job *job = sc->job;
    int last = in->step == in->steps;
    int kept = job->keep && (in->step % sc->checkpoint_every == 0 || last);
    if ((job->eval_every > 0 && in->step % job->eval_every == 0) || last || kept) {
        hs_status s = eval_task(sc->tt, m, &sc->last_acc, &sc->last_seg_loss, err);
        if (s != HS_OK) return s;
        sc->last_acc_step = in->step;
        if (!sc->tt->txt && sc->last_acc >= 1.0 && sc->first_full_step == 0)
            sc->first_full_step = in->step;
    }
    if (job->progress) {
        hs_train_progress p;
        p.step = in->step;
        p.steps = in->steps;
        p.loss = in->loss;
        p.lr = in->lr;
        p.accuracy = sc->last_acc;
        p.accuracy_step = sc->last_acc_step;
        p.perplexity = sc->tt->txt ? sc->last_seg_loss : NAN;
        p.steps_per_s = in->step / (in->seconds > 1e-9 ? in->seconds : 1e-9);
        p.eta_s = (in->steps - in->step) / p.steps_per_s;
        p.last = last;
        p.logged = last || (job->log_every > 0 && in->step % job->log_every == 0);
        job->progress(job->ctx, &p);
    }
    if (kept) {
        hs_status s = save_keep(sc, m, in->step, in->steps, err);
        if (s != HS_OK) return s;
    }
    if (sc->checkpoint_every > 0 && !job->keep && in->step % sc->checkpoint_every == 0 && !last) {
        hs_status s = save(sc, m, job->out, in->step, in->steps, err);
        if (s != HS_OK) return s;
    }
    if (job->interrupt && *job->interrupt)
        return hs_fail(err, HS_ERR_INPUT, "interrupted at step %d", in->step);
    return HS_OK;
}

/* What resuming the checkpoint at path needs from its train metadata: the
 * budget, steps done, seed, init, the batch stream's state, batch and lr. */
typedef struct {
    int steps, done, batch;
    unsigned long long seed;
    int init;
    uint64_t rng;
    float lr;
    int warmup;
} resume_state;

static hs_status read_resume_state(const char *path, const char *train, resume_state *r, hs_error *err)
{
    cJSON *o = train ? cJSON_Parse(train) : NULL;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "steps");
    const cJSON *dn = cJSON_GetObjectItemCaseSensitive(o, "steps_done");
    const cJSON *sd = cJSON_GetObjectItemCaseSensitive(o, "seed");
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(o, "init");
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(o, "batch_rng_state");
    const cJSON *bt = cJSON_GetObjectItemCaseSensitive(o, "batch");
    const cJSON *lr = cJSON_GetObjectItemCaseSensitive(o, "lr");
    const cJSON *wu = cJSON_GetObjectItemCaseSensitive(o, "warmup");
    int ok = cJSON_IsNumber(st) && cJSON_IsNumber(dn) && cJSON_IsNumber(sd) && cJSON_IsString(rs) &&
             cJSON_IsNumber(bt) && bt->valuedouble >= 1 && bt->valuedouble <= 4096 && cJSON_IsNumber(lr) &&
             lr->valuedouble > 0 && lr->valuedouble <= 10;
    if (ok) { /* the batch stream's state: decimal text (strtoull's syntax, no minus sign) */
        char *end;
        errno = 0;
        r->rng = strtoull(rs->valuestring, &end, 10);
        ok = rs->valuestring[0] != '-' && errno == 0 && end != rs->valuestring && *end == '\0';
    }
    if (ok) {
        r->steps = (int)st->valuedouble;
        r->done = (int)dn->valuedouble;
        r->seed = (unsigned long long)sd->valuedouble;
        r->init = cJSON_IsString(in) ? hs_init_parse(in->valuestring) : HS_INIT_PYTORCH;
        r->batch = (int)bt->valuedouble;
        r->lr = (float)lr->valuedouble;
        r->warmup = cJSON_IsNumber(wu) && wu->valuedouble >= 0 && wu->valuedouble <= 1e7
                        ? (int)wu->valuedouble : 0;
        ok = r->init >= 0 && r->done >= 0;
    }
    cJSON_Delete(o);
    if (!ok)
        return hs_fail(err, HS_ERR_FORMAT, "%s has no resumable 'train' metadata (steps, steps_done, "
                       "seed, batch_rng_state); it was not saved by a headscope that can resume", path);
    return HS_OK;
}

/* What the run holds from setup to the end. */
typedef struct {
    train_task tt;
    hs_model *m;
    hs_train_opts to;
    int start;
    unsigned long long seed;
    int init;
    uint64_t rng_state;
    hs_meta rmeta;
    hs_tokenizer *rvocab;
} run_state;

/* The checkpoint job->resume: its model with the optimizer state, budget,
 * batch stream and task. */
static hs_status open_resume(const hs_train_job *job, const hs_notes *notes, run_state *r, hs_error *err)
{
    const char *path = job->resume;
    resume_state rs;
    memset(&rs, 0, sizeof rs);
    hs_status s = hs_checkpoint_load(path, &r->m, &r->rmeta, NULL, err);
    if (s != HS_OK) return s;
    if (!r->m->m_mem)
        return hs_fail(err, HS_ERR_INPUT, "%s has no optimizer state; only a checkpoint saved with "
                       "--save-optimizer can be resumed", path);
    if ((s = read_resume_state(path, r->rmeta.train, &rs, err)) != HS_OK) return s;
    r->start = rs.done;
    r->seed = rs.seed;
    r->init = rs.init;
    r->rng_state = rs.rng;
    r->to.batch = rs.batch;
    r->to.opt.lr = rs.lr;
    r->to.warmup = rs.warmup;
    if (job->train.steps < 0) r->to.steps = rs.steps;
    if (r->start > r->to.steps)
        return hs_fail(err, HS_ERR_INPUT, "%s is at step %d, past the budget of %d steps", path,
                       r->start, r->to.steps);
    if (r->start != r->m->adam_t)
        hs_note(notes, HS_NOTE_CMD, "note: %s: steps_done %d but AdamW took %ld steps", path, r->start,
                r->m->adam_t);
    if (!r->rmeta.vocab || !r->rmeta.task)
        return hs_fail(err, HS_ERR_INPUT, "%s has no vocab or task metadata to resume with", path);
    char *tname = NULL;
    if ((s = hs_tokenizer_from_json(r->rmeta.vocab, &r->rvocab, err)) != HS_OK) return s;
    if ((s = hs_task_json_name(r->rmeta.task, &tname, err)) != HS_OK) return s;
    const int is_ind = strcmp(tname, "induction") == 0, is_text = strcmp(tname, "text") == 0;
    free(tname);
    if (is_text)
        return hs_fail(err, HS_ERR_INPUT, "%s is a text model: a text run does not resume (the "
                       "checkpoint does not hold its corpus)", path);
    if (is_ind) return hs_induction_from_task_json(r->rmeta.task, r->rvocab, &r->tt.ind, err);
    return hs_winograd_from_task_json(r->rmeta.task, r->rvocab, &r->tt.wg, err);
}

/* The text task of a new run: the corpus, its tokenizer (job->tokenizer's
 * file, or a BPE trained on the corpus), the split. */
static hs_status create_text(const hs_train_job *job, const hs_notes *notes, run_state *r,
                             hs_train_result *out, hs_error *err)
{
    hs_corpus c;
    hs_status s = hs_corpus_read(job->corpus, job->n_corpus, &c, err);
    if (s != HS_OK) return s;
    unsigned char *tj = NULL;
    size_t n = 0;
    hs_bpe_trained b = {0};
    if (job->tokenizer_json) {
        tj = malloc(job->tokenizer_json_len + 1);
        if (tj) memcpy(tj, job->tokenizer_json, job->tokenizer_json_len);
        n = job->tokenizer_json_len;
        s = tj ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
        out->tokenizer_from = job->tokenizer_json_from ? job->tokenizer_json_from : "given";
    } else if (job->tokenizer) {
        s = hs_read_file(job->tokenizer, &tj, &n, err);
        out->tokenizer_from = job->tokenizer;
    } else {
        s = hs_bpe_train(&c, job->text.vocab_size, notes, &b, err);
        out->tokenizer_from = "trained on the corpus";
        if (s == HS_OK) {
            tj = (unsigned char *)b.json;
            n = b.json_len;
            b.json = NULL;
        }
    }
    if (s == HS_OK) s = hs_text_create(&c, (const char *)tj, n, &job->text, &r->tt.txt, err);
    if (s != HS_OK && job->tokenizer && err && strncmp(err->msg, "the tokenizer: ", 15) == 0) {
        hs_error inner = *err;
        s = hs_fail(err, inner.status, "--tokenizer %s: %s", job->tokenizer, inner.msg + 15);
    }
    free(tj);
    hs_bpe_trained_free(&b);
    hs_corpus_free(&c);
    return s;
}

/* A new run: job's task, then its model, initialised. */
static hs_status create_run(const hs_train_job *job, const hs_config *cfg_in, const hs_notes *notes,
                            run_state *r, hs_train_result *out, hs_error *err)
{
    hs_status s;
    if (job->text_task) {
        s = create_text(job, notes, r, out, err);
    } else if (job->induction) {
        hs_ind_params ip = job->ind;
        ip.split_seed = job->split_seed;
        s = hs_induction_create(&ip, NULL, &r->tt.ind, err);
    } else {
        s = hs_winograd_create(job->kind, job->split_seed, NULL, &r->tt.wg, err);
    }
    if (s != HS_OK) return s;
    hs_config cfg = *cfg_in;
    cfg.d_vocab = (int)(r->tt.txt ? r->tt.txt->tok : r->tt.ind ? r->tt.ind->vocab : r->tt.wg->vocab)->n;
    cfg.n_ctx = r->tt.txt ? r->tt.txt->p.n_ctx : r->tt.ind ? r->tt.ind->p.n_ctx
              : (cfg.n_ctx > 0 ? cfg.n_ctx : HS_WG_LEN);
    if (!r->tt.ind && !r->tt.txt && cfg.n_ctx < HS_WG_LEN)
        return hs_fail(err, HS_ERR_CONFIG, "n_ctx %d is below the Winograd task's %d positions",
                       cfg.n_ctx, HS_WG_LEN);
    if ((s = hs_model_create(&cfg, &r->m, err)) != HS_OK) return s;
    hs_model_init_scheme(r->m, (hs_init)r->init);
    return HS_OK;
}

/* Before anything is made: out can be written, dataset's path, and neither
 * replaces a file it should not. */
static hs_status check_outputs(const hs_train_job *job, hs_error *err)
{
    if (job->out == NULL) return hs_fail(err, HS_ERR_INPUT, "--out FILE.safetensors is required");
    /* Find out now, not after training, whether out can be written: open
     * (and drop) the temp file the final save will use. */
    hs_atomic_file probe;
    hs_status s = hs_atomic_open(&probe, job->out, err);
    if (s != HS_OK) return s;
    hs_atomic_abort(&probe);
    if (job->dataset && strcmp(job->dataset, job->out) == 0)
        return hs_fail(err, HS_ERR_INPUT, "--dataset and --out are the same file, %s: the model would "
                       "replace the dataset", job->out);
    if (job->dataset && (s = hs_check_out_path(job->dataset, err)) != HS_OK) return s;
    /* A file already there is data this run did not make: replaced only with
     * force, or with resume (the run it holds goes on). */
    struct stat st;
    if (!job->force && !job->resume && stat(job->out, &st) == 0)
        return hs_fail(err, HS_ERR_INPUT, "--out %s already exists; use --force to replace it (or "
                       "--resume %s to continue the run it holds, if it was saved with "
                       "--save-optimizer)", job->out, job->out);
    return job->dataset ? hs_check_new_file("--dataset", job->dataset, job->force, err) : HS_OK;
}

/* keep is created (its parent must exist); a step file there is never overwritten. */
static hs_status check_keep(const hs_train_job *job, const run_state *r, int every, hs_error *err)
{
    struct stat kst;
    if (stat(job->keep, &kst) == 0 && !S_ISDIR(kst.st_mode))
        return hs_fail(err, HS_ERR_INPUT, "--keep %s exists and is not a folder", job->keep);
    hs_status s = hs_mkdir(job->keep, err);
    if (s != HS_OK) return s;
    for (int st = r->start; st <= r->to.steps; st++) {
        if (st != r->start && st != r->to.steps && st % every != 0) continue;
        if (job->resume && st == r->start) continue;
        char *path = keep_path(job->keep, st);
        if (path == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
        int exists = access(path, F_OK) == 0;
        if (exists)
            s = hs_fail(err, HS_ERR_INPUT, "%s already exists (another run's checkpoint?); "
                        "choose another --keep folder", path);
        free(path);
        if (exists) return s;
    }
    return HS_OK;
}

/* The task and model the run trains, into out and as notes. */
static void describe(const hs_train_job *job, const run_state *r, const hs_notes *notes, hs_train_result *out)
{
    const hs_config *c = &r->m->cfg;
    out->induction = r->tt.ind != NULL;
    out->cfg = *c;
    out->n_params = r->m->n_params;
    out->steps = r->to.steps;
    out->start_step = r->start;
    out->batch = r->to.batch;
    out->lr = r->to.opt.lr;
    out->seed = r->seed;
    out->init = (hs_init)r->init;
    if (r->tt.txt) {
        const hs_text *t = r->tt.txt;
        out->text = 1;
        out->unigram_perplexity = t->unigram_ppl;
        out->text_train_tokens = t->n_train;
        out->text_heldout_tokens = t->n_heldout;
        out->text_windows = hs_text_windows(t, t->p.n_ctx);
        hs_note(notes, HS_NOTE_PLAIN, "task text: %zu file%s, %zu bytes; BPE of %zu tokens (%s); "
                "%zu train / %zu held-out tokens (the last %g of each file); %zu held-out windows "
                "of %d; unigram perplexity %.2f", t->n_files, t->n_files == 1 ? "" : "s", t->bytes,
                t->tok->n, out->tokenizer_from, t->n_train, t->n_heldout, t->p.val_fraction,
                out->text_windows, t->p.n_ctx, t->unigram_ppl);
        if (t->p.repeat > 0.0)
            hs_note(notes, HS_NOTE_PLAIN, "repeats: a window holds a span of %d to %d of its tokens "
                    "twice with probability %g (held-out windows too, seed %u)",
                    t->p.n_ctx / 8 > 2 ? t->p.n_ctx / 8 : 2, t->p.n_ctx / 4 > 2 ? t->p.n_ctx / 4 : 2,
                    t->p.repeat, HS_TEXT_REPEAT_SEED);
    } else if (r->tt.ind) {
        const hs_ind_params *p = &r->tt.ind->p;
        out->ind = *p;
        out->split_seed = p->split_seed;
        hs_note(notes, HS_NOTE_PLAIN, "task induction, split seed %llu: %d symbols, context %d, segment "
                "%d..%d, gap %d..%d; %d held-out sequences (their segments never trained on)",
                (unsigned long long)p->split_seed, p->n_symbols, p->n_ctx, p->seg_min, p->seg_max,
                p->gap_min, p->gap_max, p->n_heldout);
    } else {
        const hs_winograd *t = r->tt.wg;
        out->kind = t->kind;
        out->split_seed = t->split_seed;
        out->n_train = t->n_train;
        out->n_heldout = t->n_heldout;
        out->chapter_held_out = hs_winograd_is_held_out(t, HS_WG_CHAPTER_X, HS_WG_CHAPTER_Y) == 1;
        hs_note(notes, HS_NOTE_PLAIN, "task %s, split seed %llu: %zu train / %zu held-out sentences; the "
                "chapter's pair (animal, street) is %s", hs_task_name(t->kind),
                (unsigned long long)t->split_seed, t->n_train, t->n_heldout,
                out->chapter_held_out ? "held out" : "in training");
    }
    /* the attention switches, when on (model.h's "attn" group) */
    char sw[128] = "";
    int n_local = 0;
    for (int l = 0; l < c->n_layers; l++) n_local += c->attn_local[l];
    if (c->pos == HS_POS_ROTARY)
        snprintf(sw + strlen(sw), sizeof sw - strlen(sw), " (rotary_dim %d)", hs_rotary_dim(c));
    if (hs_kv_heads(c) != c->n_heads)
        snprintf(sw + strlen(sw), sizeof sw - strlen(sw), ", %d key/value heads", hs_kv_heads(c));
    if (n_local)
        snprintf(sw + strlen(sw), sizeof sw - strlen(sw), ", window %d on %d layer%s", c->window_size,
                 n_local, n_local == 1 ? "" : "s");
    hs_note(notes, HS_NOTE_PLAIN, "model: %d layer%s, d_model %d, %d heads x %d, d_mlp %d, %s, %s, pos %s%s, "
            "attn %s%s%s%s%s%s%s%s%s; %zu parameters; %d step%s, batch %d, seed %llu, init %s",
            c->n_layers, c->n_layers == 1 ? "" : "s", c->d_model, c->n_heads, c->d_head, c->d_mlp,
            hs_norm_name(c->norm), hs_act_name(c->act), hs_pos_name(c->pos), sw, hs_attn_name(c->attn),
            c->ln1 ? "" : ", no ln1", c->ln_final ? "" : ", no final norm",
            c->embed_norm ? ", embed norm" : "", c->bias ? "" : ", no bias",
            c->gated_mlp ? ", gated MLP" : "", c->parallel_attn_mlp ? ", parallel attn + MLP" : "",
            c->norm_place == HS_NORM_POST ? ", post-norm" : "", c->attn_replace ? ", attention replaces" : "",
            r->m->n_params,
            r->to.steps, r->to.steps == 1 ? "" : "s", r->to.batch, r->seed, hs_init_name((hs_init)r->init));
    if (job->resume)
        hs_note(notes, HS_NOTE_PLAIN, "resuming %s at step %d of %d", job->resume, r->start, r->to.steps);
}

/* Everything before the first step: the model and task (new or resumed),
 * the dataset dump, the metadata every checkpoint carries, the keep folder,
 * the description. */
static hs_status setup(const hs_train_job *job, const hs_notes *notes, run_state *r, step_ctx *sc,
                       hs_train_result *out, hs_error *err)
{
    hs_config cfg = job->cfg;
    if (!job->resume && cfg.d_head <= 0 && cfg.n_heads > 0) { /* (n_heads <= 0: hs_model_create refuses it) */
        cfg.d_head = cfg.d_model / cfg.n_heads > 0 ? cfg.d_model / cfg.n_heads : 1;
        if (cfg.n_heads * cfg.d_head != cfg.d_model)
            hs_note(notes, HS_NOTE_CMD, "note: d_head = d_model / heads = %d, so the heads span %d of "
                    "d_model %d dimensions (set --d-head to choose)",
                    cfg.d_head, cfg.n_heads * cfg.d_head, cfg.d_model);
    }
    if (cfg.d_mlp < 0) cfg.d_mlp = 4 * cfg.d_model;
    cfg.seed = job->seed;
    hs_status s = check_outputs(job, err);
    if (s != HS_OK) return s;
    r->to = job->train;
    if (r->to.steps < 0)
        r->to.steps = job->text_task ? 3000 : job->induction ? 1000 : hs_train_opts_default().steps;
    if (r->to.opt.lr <= 0.0f) r->to.opt.lr = job->induction ? 3e-3f : hs_train_opts_default().opt.lr;
    r->seed = job->seed;
    r->init = job->init;
    r->rng_state = job->seed ^ 0x5DEECE66Dull;
    s = job->resume ? open_resume(job, notes, r, err) : create_run(job, &cfg, notes, r, out, err);
    if (s != HS_OK) return s;
    r->tt.vocab = r->tt.txt ? r->tt.txt->tok : r->tt.ind ? r->tt.ind->vocab : r->tt.wg->vocab;
    r->tt.threads = r->to.threads;
    hs_task_rng_seed(&r->tt.rng, r->rng_state);
    if (job->dataset && r->tt.wg && (s = hs_winograd_write_text(r->tt.wg, job->dataset, err)) != HS_OK)
        return s;
    if (job->dataset && (r->tt.ind || r->tt.txt))
        return hs_fail(err, HS_ERR_INPUT, "--dataset writes Winograd sentences; the %s task "
                       "rebuilds its data from the checkpoint's task metadata",
                       r->tt.txt ? "text" : "induction");
    if (r->tt.txt) {
        if ((sc->vocab_json = hs_strdup(r->tt.txt->tok_json)) == NULL)
            return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    } else if ((s = hs_tokenizer_to_json(r->tt.vocab, &sc->vocab_json, err)) != HS_OK) {
        return s;
    }
    s = r->tt.txt ? hs_text_task_json(r->tt.txt, &sc->task_json, err)
      : r->tt.ind ? hs_induction_task_json(r->tt.ind, &sc->task_json, err)
                  : hs_winograd_task_json(r->tt.wg, &sc->task_json, err);
    if (s != HS_OK) return s;
    sc->checkpoint_every = job->keep && job->checkpoint_every <= 0 ? 100 : job->checkpoint_every;
    if (job->keep && (s = check_keep(job, r, sc->checkpoint_every, err)) != HS_OK) return s;
    describe(job, r, notes, out);
    sc->job = job;
    sc->tt = &r->tt;
    sc->save_opt = job->save_optimizer || job->resume != NULL;
    sc->seed = r->seed;
    sc->init = hs_init_name((hs_init)r->init);
    sc->batch = r->to.batch;
    sc->lr = r->to.opt.lr;
    sc->warmup = r->to.warmup;
    r->to.seq_len = r->tt.txt ? r->tt.txt->p.n_ctx : r->tt.ind ? r->tt.ind->p.n_ctx : HS_WG_LEN;
    r->to.start_step = r->start;
    return HS_OK;
}

hs_status hs_train_run(const hs_train_job *job, const hs_notes *notes, hs_train_result *out,
                       hs_error *err)
{
    run_state r;
    step_ctx sc;
    memset(&r, 0, sizeof r);
    memset(&sc, 0, sizeof sc);
    memset(out, 0, sizeof *out);
    out->seg_loss = NAN;
    sc.last_seg_loss = NAN;
    hs_status s = setup(job, notes, &r, &sc, out, err);
    if (s != HS_OK) goto done;
    if (job->keep && !job->resume) {
        if ((s = eval_task(&r.tt, r.m, &sc.last_acc, &sc.last_seg_loss, err)) != HS_OK) goto done;
        if ((s = hs_model_alloc_train(r.m, err)) != HS_OK) goto done;
        if ((s = save_keep(&sc, r.m, 0, r.to.steps, err)) != HS_OK) goto done;
    }
    if (job->on_start) job->on_start(job->ctx);
    s = hs_train(r.m, &r.to, fill_batch, &r.tt, on_step, &sc, err);
    if (s != HS_OK) {
        out->stopped = 1;
        goto done;
    }
    if (r.to.steps == r.start) {
        if ((s = eval_task(&r.tt, r.m, &sc.last_acc, &sc.last_seg_loss, err)) != HS_OK) goto done;
        sc.last_acc_step = r.start;
    }
    if ((s = save(&sc, r.m, job->out, r.to.steps, r.to.steps, err)) != HS_OK) goto done;
    out->accuracy = sc.last_acc;
    out->accuracy_step = sc.last_acc_step;
    out->seg_loss = sc.last_seg_loss;
    out->first_full_step = sc.first_full_step;
    if (r.tt.txt) {
        out->perplexity = sc.last_seg_loss;
        out->accuracy = NAN;
        out->seg_loss = NAN;
    }
done:
    free(sc.vocab_json);
    free(sc.task_json);
    hs_model_destroy(r.m);
    hs_winograd_destroy(r.tt.wg);
    hs_induction_destroy(r.tt.ind);
    hs_text_destroy(r.tt.txt);
    hs_tokenizer_destroy(r.rvocab);
    hs_meta_free(&r.rmeta);
    return s;
}

int hs_train_is_default_run(const char *path)
{
    hs_model *m = NULL;
    hs_meta meta = {0};
    hs_error err;
    int ok = 0;
    if (hs_checkpoint_load(path, &m, &meta, NULL, &err) != HS_OK) return 0;
    hs_config want = hs_config_default();
    hs_train_opts to = hs_train_opts_default();
    const hs_config *c = &m->cfg;
    cJSON *train = meta.train ? cJSON_Parse(meta.train) : NULL;
    cJSON *task = meta.task ? cJSON_Parse(meta.task) : NULL;
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(train, "steps");
    const cJSON *done = cJSON_GetObjectItemCaseSensitive(train, "steps_done");
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(train, "seed");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(task, "name");
    const cJSON *split = cJSON_GetObjectItemCaseSensitive(task, "split_seed");
    if (c->n_layers == want.n_layers && c->d_model == want.d_model && c->n_heads == want.n_heads &&
        c->d_head == want.d_model / want.n_heads && c->d_mlp == 4 * want.d_model &&
        c->norm == want.norm && c->act == want.act && c->pos == want.pos && c->attn == want.attn &&
        c->ln1 && c->ln_final && !c->embed_norm && c->bias && c->seed == 0 && !c->gated_mlp &&
        !c->parallel_attn_mlp && c->norm_place == HS_NORM_PRE && !c->attn_replace &&
        cJSON_IsNumber(steps) && steps->valuedouble == to.steps && cJSON_IsNumber(done) &&
        done->valuedouble == to.steps && cJSON_IsNumber(seed) && seed->valuedouble == 0 &&
        cJSON_IsString(name) && strcmp(name->valuestring, "winograd") == 0 &&
        cJSON_IsNumber(split) && split->valuedouble == 0)
        ok = 1;
    cJSON_Delete(train);
    cJSON_Delete(task);
    hs_meta_free(&meta);
    hs_model_destroy(m);
    return ok;
}
