/*
 * cli/cmd_train.c -- `headscope train`: build a task, train a model on it,
 * save it as .safetensors (atomically; periodically with --checkpoint-every).
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "util.h"

static const char TRAIN_HELP[] =
    "usage: headscope train --out FILE.safetensors [--force] [options]\n"
    "\n"
    "       headscope train --resume CKPT --out FILE.safetensors [--steps N] [--keep DIR]\n"
    "\n"
    "Trains a pre-norm transformer on a task (next-token loss on every position,\n"
    "AdamW, batch 64) and saves it as safetensors. The held-out split is the test\n"
    "set: it is reported, never used to stop or select.\n"
    "\n"
    "task and training:\n"
    "  --task NAME            winograd (default) | winograd-category | induction\n"
    "  --split-seed S         which noun pairs (induction: which sequences) are held out\n"
    "                         (default 0)\n"
    "  --steps N              step budget (default 2000; induction 1000)\n"
    "  --seed S               initialisation and batch-order seed (default 0)\n"
    "  --lr X                 peak learning rate (default 1e-3, induction 3e-3; cosine\n"
    "                         decay over the last 40% of steps to 5% of it)\n"
    "  --batch B              sequences per step (default 64)\n"
    "  --init NAME            pytorch (default: PyTorch's layer inits) | gpt2 (every\n"
    "                         matrix and embedding N(0, 0.02), biases 0)\n"
    "  --checkpoint-every N   also save to --out every N steps (atomic)\n"
    "  --keep DIR             keep every checkpoint: DIR/step-000000.safetensors (the\n"
    "                         init), one every --checkpoint-every steps (default 100)\n"
    "                         and the last; DIR is created, an existing step file refused\n"
    "  --save-optimizer       also save AdamW's moments and the batch stream's state\n"
    "                         in every checkpoint (3x the size), so --resume can go on\n"
    "  --resume CKPT          continue the run CKPT was saved from (with\n"
    "                         --save-optimizer): same task, model and budget (or\n"
    "                         --steps); bit-identical to a run never interrupted\n"
    "  --log-every N          progress line every N steps when not a terminal (default 250)\n"
    "  --eval-every N         held-out accuracy every N steps (default 250; 0 = end only);\n"
    "                         logged with the first step at 100%, never used to stop\n"
    "  --dataset FILE         also write the train/held-out sentences as text (Winograd)\n"
    "  --force                replace --out (and --dataset) when the file exists;\n"
    "                         without it an existing file is refused, untouched\n"
    "                         (with --resume an existing --out is replaced: the run goes on)\n"
    "  --threads N            worker threads, 0 = every CPU (default) up to the CPU\n"
    "                         count; the result is bit-identical for every thread count\n"
    "induction task (sequences of random symbols, a segment repeated after a gap):\n"
    "  --vocab-size N         symbols (default 32)\n"
    "  --seg-len MIN:MAX      repeated segment's length (default 4:8)\n"
    "  --gap MIN:MAX          tokens between the two occurrences (default 0:16)\n"
    "  --heldout N            held-out sequences (default 512; their segments are\n"
    "                         never trained on)\n"
    "  --loss-all             train on every next token (default: only the repeated\n"
    "                         segment's, the tokens induction can predict)\n"
    "model (every switch of the model core):\n"
    "  --layers N             n_layers (default 2)\n"
    "  --n-ctx N              n_ctx, positions the model takes (Winograd: default and\n"
    "                         minimum the task's 18; training uses 18, longer inputs are\n"
    "                         for inspect, e.g. a viewer's scale test; up to 4096;\n"
    "                         induction: the sequence length, default 32)\n"
    "  --d-model D            d_model (default 64)\n"
    "  --heads H              n_heads (default 4)\n"
    "  --d-head K             d_head (default d_model / heads)\n"
    "  --d-mlp M              d_mlp (default 4 x d_model; 0 = attention-only)\n"
    "  --norm NAME            layernorm (default) | rmsnorm | none\n"
    "  --eps X                norm epsilon (default 1e-5)\n"
    "  --act NAME             gelu (exact erf, default) | relu\n"
    "  --pos NAME             learned (default) | none\n"
    "  --attn NAME            softmax (default) | uniform (causal average, no Q/K)\n"
    "  --no-ln1               no norm in front of the attention\n"
    "  --no-final-norm        no norm before the unembedding\n"
    "  --embed-norm           a norm right after the embedding (microGPT)\n"
    "  --no-bias              no biases anywhere\n"
    "  e.g. the microGPT block: --norm rmsnorm --act relu --no-bias --embed-norm --no-final-norm\n"
    "\n"
    "The canonical induction pair: --task induction --d-mlp 0 --layers 2 (and 1).\n"
    "\n"
    "After an interrupt (Ctrl-C) or a NaN, --out holds the last checkpoint that was\n"
    "completely written (with --checkpoint-every), or whatever it held before.\n";

static volatile sig_atomic_t g_interrupted = 0;
static void on_sigint(int sig)
{
    (void)sig;
    g_interrupted = 1;
}

/* The task being trained: exactly one of wg / ind. */
typedef struct {
    hs_winograd *wg;
    hs_induction *ind;
    const hs_tokenizer *vocab;
    hs_task_rng rng;          /* the batch stream */
} train_task;

static void fill_batch(void *ctx, int B, int T, int *tokens, int *targets)
{
    train_task *tt = ctx;
    (void)T;
    if (tt->ind)
        hs_induction_batch(tt->ind, &tt->rng, (size_t)B, tokens, targets, NULL);
    else
        hs_winograd_batch(tt->wg, &tt->rng, (size_t)B, tokens, targets);
}

/* Held-out accuracy (and for induction the repeated-segment loss). */
static hs_status eval_task(const train_task *tt, const hs_model *m, double *acc, double *loss,
                           hs_error *err)
{
    *loss = NAN;
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

typedef struct {
    train_task *tt;
    const char *out, *keep;
    long checkpoint_every, log_every, eval_every;
    int tty, save_opt;
    double last_acc, last_seg_loss;
    int last_acc_step;
    int first_full_step;
    unsigned long long seed;
    int batch;           /* recorded so --resume continues with the same batches */
    float lr;            /* peak learning rate, likewise */
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
    /* the batch stream's state after step steps_done (what --resume continues from) */
    cJSON_AddStringToObject(o, "batch_rng_state", rng);
    if (sc->last_acc_step > 0 || step == 0) {
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
    char *path = keep_path(sc->keep, step);
    if (path == NULL) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    hs_status s = save(sc, m, path, step, steps, err);
    free(path);
    return s;
}

static hs_status on_step(void *ctx, hs_model *m, const hs_train_info *in, hs_error *err)
{
    step_ctx *sc = ctx;
    int last = in->step == in->steps;
    int kept = sc->keep && (in->step % sc->checkpoint_every == 0 || last);
    if ((sc->eval_every > 0 && in->step % sc->eval_every == 0) || last || kept) {
        hs_status s = eval_task(sc->tt, m, &sc->last_acc, &sc->last_seg_loss, err);
        if (s != HS_OK) return s;
        sc->last_acc_step = in->step;
        if (sc->last_acc >= 1.0 && sc->first_full_step == 0) sc->first_full_step = in->step;
    }
    double sps = in->step / (in->seconds > 1e-9 ? in->seconds : 1e-9);
    double eta = (in->steps - in->step) / sps;
    char acc[64] = ""; /* nothing to say before the first evaluation */
    if (sc->last_acc_step > 0)
        snprintf(acc, sizeof acc, "held-out acc %5.1f%% (step %d)", 100.0 * sc->last_acc,
                 sc->last_acc_step);
    if (sc->tty) {
        fprintf(stderr, "\rstep %5d/%d  loss %.4f  %-30s  %6.0f steps/s  ETA %4.0fs ",
                in->step, in->steps, in->loss, acc, sps, eta);
        if (last) fputc('\n', stderr);
    } else if (in->step % sc->log_every == 0 || last) {
        fprintf(stderr, "step %d/%d loss %.4f lr %.2e %s%s%.0f steps/s ETA %.0fs\n", in->step,
                in->steps, in->loss, in->lr, acc, acc[0] ? " " : "", sps, eta);
    }
    if (kept) {
        hs_status s = save_keep(sc, m, in->step, in->steps, err);
        if (s != HS_OK) return s;
    }
    if (sc->checkpoint_every > 0 && !sc->keep && in->step % sc->checkpoint_every == 0 && !last) {
        hs_status s = save(sc, m, sc->out, in->step, in->steps, err);
        if (s != HS_OK) return s;
    }
    if (g_interrupted)
        return hs_fail(err, HS_ERR_INPUT, "interrupted at step %d", in->step);
    return HS_OK;
}

/* "MIN:MAX" with both in [lo, hi]; 0 ok. */
static int parse_range(const char *s, long lo, long hi, int *a, int *b)
{
    char buf[64];
    const char *colon = strchr(s, ':');
    if (!colon || (size_t)(colon - s) >= sizeof buf) return -1;
    memcpy(buf, s, (size_t)(colon - s));
    buf[colon - s] = '\0';
    long x, y;
    if (cli_parse_int(buf, lo, hi, &x) || cli_parse_int(colon + 1, lo, hi, &y) || x > y) return -1;
    *a = (int)x;
    *b = (int)y;
    return 0;
}

/* Reads what --resume needs from a checkpoint's train metadata: steps,
 * steps_done, seed, init and the batch stream's state. 0 ok, 1 printed. */
static int resume_state(const char *C, const char *path, const char *train, int *steps, int *done,
                        unsigned long long *seed, int *init, uint64_t *rng, int *batch, float *lr)
{
    cJSON *o = train ? cJSON_Parse(train) : NULL;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "steps");
    const cJSON *dn = cJSON_GetObjectItemCaseSensitive(o, "steps_done");
    const cJSON *sd = cJSON_GetObjectItemCaseSensitive(o, "seed");
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(o, "init");
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(o, "batch_rng_state");
    const cJSON *bt = cJSON_GetObjectItemCaseSensitive(o, "batch");
    const cJSON *lr_ = cJSON_GetObjectItemCaseSensitive(o, "lr");
    int ok = cJSON_IsNumber(st) && cJSON_IsNumber(dn) && cJSON_IsNumber(sd) && cJSON_IsString(rs) &&
             cJSON_IsNumber(bt) && bt->valuedouble >= 1 && bt->valuedouble <= 4096 && cJSON_IsNumber(lr_) &&
             lr_->valuedouble > 0 && lr_->valuedouble <= 10;
    unsigned long long r = 0;
    if (ok) ok = cli_parse_u64(rs->valuestring, &r) == 0;
    if (ok) {
        *steps = (int)st->valuedouble;
        *done = (int)dn->valuedouble;
        *seed = (unsigned long long)sd->valuedouble;
        *init = cJSON_IsString(in) ? hs_init_parse(in->valuestring) : HS_INIT_PYTORCH;
        *rng = r;
        *batch = (int)bt->valuedouble;
        *lr = (float)lr_->valuedouble;
        ok = *init >= 0 && *done >= 0;
    }
    cJSON_Delete(o);
    if (!ok)
        fprintf(stderr, "headscope train: %s has no resumable 'train' metadata (steps, steps_done, "
                        "seed, batch_rng_state); it was not saved by a headscope that can resume\n",
                path);
    (void)C;
    return !ok;
}

int cmd_train(int argc, char **argv)
{
    enum { O_TASK = 256, O_SPLIT_SEED, O_STEPS, O_SEED, O_LR, O_BATCH, O_CKPT, O_LOG, O_EVAL,
           O_DATASET, O_THREADS, O_LAYERS, O_DMODEL, O_HEADS, O_DHEAD, O_DMLP, O_NORM, O_EPS, O_ACT, O_POS,
           O_ATTN, O_NO_LN1, O_NO_FINAL, O_EMBED_NORM, O_NO_BIAS, O_OUT, O_HELP, O_INIT, O_KEEP,
           O_SAVE_OPT, O_RESUME, O_VOCAB_SIZE, O_NCTX, O_SEGLEN, O_GAP, O_HELDOUT, O_LOSS_ALL, O_FORCE };
    static const struct option opts[] = {
        {"task", required_argument, 0, O_TASK}, {"split-seed", required_argument, 0, O_SPLIT_SEED},
        {"steps", required_argument, 0, O_STEPS}, {"seed", required_argument, 0, O_SEED},
        {"lr", required_argument, 0, O_LR}, {"batch", required_argument, 0, O_BATCH},
        {"checkpoint-every", required_argument, 0, O_CKPT}, {"log-every", required_argument, 0, O_LOG},
        {"eval-every", required_argument, 0, O_EVAL}, {"dataset", required_argument, 0, O_DATASET},
        {"threads", required_argument, 0, O_THREADS},
        {"layers", required_argument, 0, O_LAYERS}, {"d-model", required_argument, 0, O_DMODEL},
        {"heads", required_argument, 0, O_HEADS}, {"d-head", required_argument, 0, O_DHEAD},
        {"d-mlp", required_argument, 0, O_DMLP}, {"norm", required_argument, 0, O_NORM},
        {"eps", required_argument, 0, O_EPS}, {"act", required_argument, 0, O_ACT},
        {"pos", required_argument, 0, O_POS}, {"attn", required_argument, 0, O_ATTN},
        {"no-ln1", no_argument, 0, O_NO_LN1}, {"no-final-norm", no_argument, 0, O_NO_FINAL},
        {"embed-norm", no_argument, 0, O_EMBED_NORM}, {"no-bias", no_argument, 0, O_NO_BIAS},
        {"out", required_argument, 0, O_OUT}, {"help", no_argument, 0, O_HELP},
        {"init", required_argument, 0, O_INIT}, {"keep", required_argument, 0, O_KEEP},
        {"save-optimizer", no_argument, 0, O_SAVE_OPT}, {"resume", required_argument, 0, O_RESUME},
        {"vocab-size", required_argument, 0, O_VOCAB_SIZE}, {"n-ctx", required_argument, 0, O_NCTX},
        {"seg-len", required_argument, 0, O_SEGLEN}, {"gap", required_argument, 0, O_GAP},
        {"heldout", required_argument, 0, O_HELDOUT}, {"loss-all", no_argument, 0, O_LOSS_ALL},
        {"force", no_argument, 0, O_FORCE}, {0, 0, 0, 0}};
    const char *C = "train";
    hs_config cfg = hs_config_default();
    hs_train_opts to = hs_train_opts_default();
    hs_ind_params ip = hs_ind_params_default();
    int task_kind = HS_TASK_WINOGRAD, induction = 0, init = HS_INIT_PYTORCH, save_opt = 0;
    int steps_set = 0, lr_set = 0, model_flag = 0, task_flag = 0;
    unsigned long long split_seed = 0, seed = 0;
    long d_head = -1, d_mlp = -1, ckpt_every = 0, log_every = 250, eval_every = 250;
    const char *out = NULL, *dataset = NULL, *keep = NULL, *resume = NULL;
    int force = 0, n_ctx_set = 0; /* --force: replace an existing --out / --dataset */
    long v;
    double d;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if ((c >= O_LAYERS && c <= O_NO_BIAS) || c == O_INIT || c == O_LR || c == O_BATCH) model_flag = 1;
        if (c == O_TASK || c == O_SPLIT_SEED || c == O_SEED || (c >= O_VOCAB_SIZE && c <= O_LOSS_ALL) ||
            c == O_DATASET)
            task_flag = 1;
        switch (c) {
        case O_HELP: fputs(TRAIN_HELP, stdout); return 0;
        case O_TASK:
            if (strcmp(optarg, "induction") == 0) {
                induction = 1;
            } else if ((task_kind = hs_task_parse(optarg)) < 0) {
                return cli_usage_error(C, "unknown task '%s' (winograd, winograd-category, induction)", optarg);
            } else {
                induction = 0;
            }
            break;
        case O_SPLIT_SEED:
            if (cli_parse_u64(optarg, &split_seed)) return cli_usage_error(C, "--split-seed needs a non-negative integer, got '%s'", optarg);
            break;
        case O_SEED:
            if (cli_parse_u64(optarg, &seed)) return cli_usage_error(C, "--seed needs a non-negative integer, got '%s'", optarg);
            break;
        case O_STEPS:
            if (cli_parse_int(optarg, 0, 10000000, &v)) return cli_usage_error(C, "--steps needs an integer in [0, 10000000], got '%s'", optarg);
            to.steps = (int)v;
            steps_set = 1;
            break;
        case O_LR:
            if (cli_parse_float(optarg, 1e-9, 10.0, &d)) return cli_usage_error(C, "--lr needs a number in (0, 10], got '%s'", optarg);
            to.opt.lr = (float)d;
            lr_set = 1;
            break;
        case O_BATCH:
            if (cli_parse_int(optarg, 1, 4096, &v)) return cli_usage_error(C, "--batch needs an integer in [1, 4096], got '%s'", optarg);
            to.batch = (int)v;
            break;
        case O_CKPT:
            if (cli_parse_int(optarg, 1, 10000000, &ckpt_every)) return cli_usage_error(C, "--checkpoint-every needs a positive integer, got '%s'", optarg);
            break;
        case O_LOG:
            if (cli_parse_int(optarg, 1, 10000000, &log_every)) return cli_usage_error(C, "--log-every needs a positive integer, got '%s'", optarg);
            break;
        case O_EVAL:
            if (cli_parse_int(optarg, 0, 10000000, &eval_every)) return cli_usage_error(C, "--eval-every needs a non-negative integer, got '%s'", optarg);
            break;
        case O_DATASET: dataset = optarg; break;
        case O_THREADS:
            if (cli_parse_threads(C, optarg, &to.threads)) return 2;
            break;
        case O_LAYERS:
            if (cli_parse_int(optarg, 1, HS_MAX_LAYERS, &v)) return cli_usage_error(C, "--layers needs an integer in [1, %d], got '%s'", HS_MAX_LAYERS, optarg);
            cfg.n_layers = (int)v;
            break;
        case O_DMODEL:
            if (cli_parse_int(optarg, 1, 4096, &v)) return cli_usage_error(C, "--d-model needs an integer in [1, 4096], got '%s'", optarg);
            cfg.d_model = (int)v;
            break;
        case O_HEADS:
            if (cli_parse_int(optarg, 1, 64, &v)) return cli_usage_error(C, "--heads needs an integer in [1, 64], got '%s'", optarg);
            cfg.n_heads = (int)v;
            break;
        case O_DHEAD:
            if (cli_parse_int(optarg, 1, 1024, &d_head)) return cli_usage_error(C, "--d-head needs an integer in [1, 1024], got '%s'", optarg);
            break;
        case O_DMLP:
            if (cli_parse_int(optarg, 0, 16384, &d_mlp)) return cli_usage_error(C, "--d-mlp needs an integer in [0, 16384], got '%s'", optarg);
            break;
        case O_NORM:
            if ((v = hs_norm_parse(optarg)) < 0) return cli_usage_error(C, "unknown --norm '%s' (layernorm, rmsnorm, none)", optarg);
            cfg.norm = (hs_norm)v;
            break;
        case O_EPS:
            if (cli_parse_float(optarg, 1e-30, 1.0, &d)) return cli_usage_error(C, "--eps needs a number in (0, 1], got '%s'", optarg);
            cfg.eps = (float)d;
            break;
        case O_ACT:
            if ((v = hs_act_parse(optarg)) < 0) return cli_usage_error(C, "unknown --act '%s' (gelu, relu)", optarg);
            cfg.act = (hs_act)v;
            break;
        case O_POS:
            if ((v = hs_pos_parse(optarg)) < 0) return cli_usage_error(C, "unknown --pos '%s' (learned, none)", optarg);
            cfg.pos = (hs_pos)v;
            break;
        case O_ATTN:
            if ((v = hs_attn_parse(optarg)) < 0) return cli_usage_error(C, "unknown --attn '%s' (softmax, uniform)", optarg);
            cfg.attn = (hs_attn)v;
            break;
        case O_NO_LN1: cfg.ln1 = 0; break;
        case O_NO_FINAL: cfg.ln_final = 0; break;
        case O_EMBED_NORM: cfg.embed_norm = 1; break;
        case O_NO_BIAS: cfg.bias = 0; break;
        case O_OUT: out = optarg; break;
        case O_INIT:
            if ((init = hs_init_parse(optarg)) < 0) return cli_usage_error(C, "unknown --init '%s' (pytorch, gpt2)", optarg);
            break;
        case O_KEEP: keep = optarg; break;
        case O_SAVE_OPT: save_opt = 1; break;
        case O_RESUME: resume = optarg; break;
        case O_VOCAB_SIZE:
            if (cli_parse_int(optarg, 4, HS_IND_MAX_SYMBOLS, &v)) return cli_usage_error(C, "--vocab-size needs an integer in [4, %d], got '%s'", HS_IND_MAX_SYMBOLS, optarg);
            ip.n_symbols = (int)v;
            break;
        case O_NCTX:
            if (cli_parse_int(optarg, 4, 4096, &v)) return cli_usage_error(C, "--n-ctx needs an integer in [4, 4096], got '%s'", optarg);
            ip.n_ctx = (int)v;
            n_ctx_set = 1;
            break;
        case O_FORCE: force = 1; break;
        case O_SEGLEN:
            if (parse_range(optarg, 2, 4096, &ip.seg_min, &ip.seg_max)) return cli_usage_error(C, "--seg-len needs MIN:MAX with 2 <= MIN <= MAX, got '%s'", optarg);
            break;
        case O_GAP:
            if (parse_range(optarg, 0, 4096, &ip.gap_min, &ip.gap_max)) return cli_usage_error(C, "--gap needs MIN:MAX with 0 <= MIN <= MAX, got '%s'", optarg);
            break;
        case O_HELDOUT:
            if (cli_parse_int(optarg, 1, 100000, &v)) return cli_usage_error(C, "--heldout needs an integer in [1, 100000], got '%s'", optarg);
            ip.n_heldout = (int)v;
            break;
        case O_LOSS_ALL: ip.loss_all = 1; break;
        default:
            return cli_usage_error(C, "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) return cli_usage_error(C, "unexpected argument '%s'", argv[optind]);
    if (out == NULL) return cli_usage_error(C, "--out FILE.safetensors is required");
    if (resume && (model_flag || task_flag))
        return cli_usage_error(C, "--resume continues the checkpoint's own task, model, batch and "
                                  "learning rate; drop those flags");
    if (!induction && !resume &&
        (ip.n_symbols != 32 || ip.seg_min != 4 || ip.seg_max != 8 || ip.gap_min != 0 ||
         ip.gap_max != 16 || ip.n_heldout != 512 || ip.loss_all))
        return cli_usage_error(C, "--vocab-size, --seg-len, --gap, --heldout and --loss-all are for --task induction");
    if (!induction && n_ctx_set && ip.n_ctx < HS_WG_LEN)
        return cli_usage_error(C, "--n-ctx needs an integer in [%d, 4096] for the Winograd task, got %d", HS_WG_LEN,
                               ip.n_ctx);
    if (keep && ckpt_every == 0) ckpt_every = 100;
    if (induction && !steps_set) to.steps = 1000;
    if (induction && !lr_set) to.opt.lr = 3e-3f;
    cfg.d_head = d_head > 0 ? (int)d_head : (cfg.d_model / cfg.n_heads > 0 ? cfg.d_model / cfg.n_heads : 1);
    cfg.d_mlp = d_mlp >= 0 ? (int)d_mlp : 4 * cfg.d_model;
    cfg.seed = seed;
    if (!resume && d_head <= 0 && cfg.n_heads * cfg.d_head != cfg.d_model)
        fprintf(stderr, "headscope train: note: d_head = d_model / heads = %d, so the heads span %d of "
                        "d_model %d dimensions (set --d-head to choose)\n",
                cfg.d_head, cfg.n_heads * cfg.d_head, cfg.d_model);

    hs_error err = {0};
    /* Find out now, not after training, whether --out can be written: open
     * (and drop) the temp file the final save will use. */
    hs_atomic_file probe;
    hs_status s = hs_atomic_open(&probe, out, &err);
    if (s != HS_OK) return cli_error(C, &err);
    hs_atomic_abort(&probe);
    if (dataset && hs_check_out_path(dataset, &err) != HS_OK) return cli_error(C, &err);
    /* A file already there is data this run did not make: replaced only with
     * --force, or with --resume (the run it holds goes on). */
    struct stat st_out;
    if (!force && !resume && stat(out, &st_out) == 0) {
        fprintf(stderr, "headscope %s: --out %s already exists; use --force to replace it (or "
                        "--resume %s to continue the run it holds, if it was saved with "
                        "--save-optimizer)\n", C, out, out);
        return 1;
    }
    if (!force && dataset && stat(dataset, &st_out) == 0) {
        fprintf(stderr, "headscope %s: --dataset %s already exists; use --force to replace it\n", C,
                dataset);
        return 1;
    }

    int rc = 1, start = 0;
    train_task tt;
    memset(&tt, 0, sizeof tt);
    hs_model *m = NULL;
    hs_meta rmeta = {NULL, NULL, NULL, NULL};
    hs_tokenizer *rvocab = NULL;
    step_ctx sc;
    memset(&sc, 0, sizeof sc);
    sc.last_seg_loss = NAN;
    uint64_t rng_state = seed ^ 0x5DEECE66Dull;
    if (resume) {
        /* the checkpoint's task, model, optimizer state and batch stream */
        int r_steps = 0;
        if ((s = hs_checkpoint_load(resume, &m, &rmeta, NULL, &err)) != HS_OK) goto fail;
        if (!m->m_mem) {
            fprintf(stderr, "headscope train: %s has no optimizer state; only a checkpoint saved with "
                            "--save-optimizer can be resumed\n", resume);
            goto done;
        }
        if (resume_state(C, resume, rmeta.train, &r_steps, &start, &seed, &init, &rng_state, &to.batch,
                         &to.opt.lr))
            goto done;
        if (!steps_set) to.steps = r_steps;
        if (start > to.steps) {
            fprintf(stderr, "headscope train: %s is at step %d, past the budget of %d steps\n", resume,
                    start, to.steps);
            goto done;
        }
        if (start != m->adam_t)
            fprintf(stderr, "headscope train: note: %s: steps_done %d but AdamW took %ld steps\n", resume,
                    start, m->adam_t);
        if (!rmeta.vocab || !rmeta.task) {
            fprintf(stderr, "headscope train: %s has no vocab or task metadata to resume with\n", resume);
            goto done;
        }
        char *tname = NULL;
        if ((s = hs_tokenizer_from_json(rmeta.vocab, &rvocab, &err)) != HS_OK) goto fail;
        if ((s = hs_task_json_name(rmeta.task, &tname, &err)) != HS_OK) goto fail;
        const int is_ind = strcmp(tname, "induction") == 0;
        free(tname);
        if (is_ind) {
            induction = 1;
            if ((s = hs_induction_from_task_json(rmeta.task, rvocab, &tt.ind, &err)) != HS_OK) goto fail;
        } else if ((s = hs_winograd_from_task_json(rmeta.task, rvocab, &tt.wg, &err)) != HS_OK) {
            goto fail;
        }
        cfg = m->cfg;
        sc.last_acc_step = 0;
    } else {
        if (induction) {
            ip.split_seed = split_seed;
            if ((s = hs_induction_create(&ip, NULL, &tt.ind, &err)) != HS_OK) goto fail;
        } else if ((s = hs_winograd_create((hs_task_kind)task_kind, split_seed, NULL, &tt.wg, &err)) != HS_OK) {
            goto fail;
        }
    }
    tt.vocab = tt.ind ? tt.ind->vocab : tt.wg->vocab;
    hs_task_rng_seed(&tt.rng, rng_state);
    if (!resume) {
        cfg.d_vocab = (int)tt.vocab->n;
        cfg.n_ctx = tt.ind ? tt.ind->p.n_ctx : (n_ctx_set ? ip.n_ctx : HS_WG_LEN);
        if ((s = hs_model_create(&cfg, &m, &err)) != HS_OK) goto fail;
        hs_model_init_scheme(m, (hs_init)init);
    }
    if (dataset && tt.wg && (s = hs_winograd_write_text(tt.wg, dataset, &err)) != HS_OK) goto fail;
    if (dataset && tt.ind) {
        fprintf(stderr, "headscope train: --dataset writes Winograd sentences; the induction task "
                        "rebuilds its sequences from the checkpoint's task metadata\n");
        goto done;
    }
    if ((s = hs_tokenizer_to_json(tt.vocab, &sc.vocab_json, &err)) != HS_OK) goto fail;
    if (tt.ind ? (s = hs_induction_task_json(tt.ind, &sc.task_json, &err)) != HS_OK
               : (s = hs_winograd_task_json(tt.wg, &sc.task_json, &err)) != HS_OK)
        goto fail;
    if (keep) {
        /* DIR is created (its parent must exist); a step file there is never overwritten */
        struct stat kst;
        if (stat(keep, &kst) == 0 && !S_ISDIR(kst.st_mode)) {
            fprintf(stderr, "headscope train: --keep %s exists and is not a folder\n", keep);
            goto done;
        }
        if ((s = hs_mkdir(keep, &err)) != HS_OK) goto fail;
        for (int st = start; st <= to.steps; st++) {
            if (st != start && st != to.steps && st % ckpt_every != 0) continue;
            if (resume && st == start) continue;
            char *path = keep_path(keep, st);
            if (path == NULL) {
                s = hs_fail(&err, HS_ERR_NOMEM, "out of memory");
                goto fail;
            }
            int exists = access(path, F_OK) == 0;
            if (exists)
                fprintf(stderr, "headscope train: %s already exists (another run's checkpoint?); "
                                "choose another --keep folder\n", path);
            free(path);
            if (exists) goto done;
        }
    }

    if (tt.ind)
        fprintf(stderr, "task induction, split seed %llu: %d symbols, context %d, segment %d..%d, gap %d..%d; "
                        "%d held-out sequences (their segments never trained on)\n",
                (unsigned long long)tt.ind->p.split_seed, tt.ind->p.n_symbols, tt.ind->p.n_ctx,
                tt.ind->p.seg_min, tt.ind->p.seg_max, tt.ind->p.gap_min, tt.ind->p.gap_max,
                tt.ind->p.n_heldout);
    else
        fprintf(stderr, "task %s, split seed %llu: %zu train / %zu held-out sentences; the chapter's pair "
                        "(animal, street) is %s\n",
                hs_task_name(tt.wg->kind), (unsigned long long)tt.wg->split_seed, tt.wg->n_train,
                tt.wg->n_heldout,
                hs_winograd_is_held_out(tt.wg, HS_WG_CHAPTER_X, HS_WG_CHAPTER_Y) == 1 ? "held out" : "in training");
    fprintf(stderr, "model: %d layer%s, d_model %d, %d heads x %d, d_mlp %d, %s, %s, pos %s, attn %s%s%s%s%s; "
                    "%zu parameters; %d step%s, batch %d, seed %llu, init %s\n",
            cfg.n_layers, cfg.n_layers == 1 ? "" : "s", cfg.d_model, cfg.n_heads, cfg.d_head, cfg.d_mlp, hs_norm_name(cfg.norm),
            hs_act_name(cfg.act), hs_pos_name(cfg.pos), hs_attn_name(cfg.attn),
            cfg.ln1 ? "" : ", no ln1", cfg.ln_final ? "" : ", no final norm",
            cfg.embed_norm ? ", embed norm" : "", cfg.bias ? "" : ", no bias", m->n_params,
            to.steps, to.steps == 1 ? "" : "s", to.batch, seed, hs_init_name((hs_init)init));
    if (resume) fprintf(stderr, "resuming %s at step %d of %d\n", resume, start, to.steps);

    sc.tt = &tt;
    sc.out = out;
    sc.keep = keep;
    sc.save_opt = save_opt || resume != NULL;
    sc.checkpoint_every = ckpt_every;
    sc.log_every = log_every;
    sc.eval_every = eval_every;
    sc.tty = isatty(2);
    sc.seed = seed;
    sc.init = hs_init_name((hs_init)init);
    sc.batch = to.batch;
    sc.lr = to.opt.lr;
    to.seq_len = tt.ind ? tt.ind->p.n_ctx : HS_WG_LEN;
    to.start_step = start;
    if (keep && !resume) {
        if ((s = eval_task(&tt, m, &sc.last_acc, &sc.last_seg_loss, &err)) != HS_OK) goto fail;
        if ((s = hs_model_alloc_train(m, &err)) != HS_OK) goto fail;
        if ((s = save_keep(&sc, m, 0, to.steps, &err)) != HS_OK) goto fail;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    s = hs_train(m, &to, fill_batch, &tt, on_step, &sc, &err);
    if (s != HS_OK) {
        if (sc.tty) fputc('\n', stderr);
        fprintf(stderr, "headscope train: %s; %s\n", err.msg,
                keep ? "--keep holds every checkpoint written so far"
                : ckpt_every > 0 ? "--out keeps the last complete checkpoint"
                                 : "nothing was written to --out");
        goto done;
    }
    if (to.steps == start) {
        if ((s = eval_task(&tt, m, &sc.last_acc, &sc.last_seg_loss, &err)) != HS_OK) goto fail;
        sc.last_acc_step = start;
    }
    if ((s = save(&sc, m, out, to.steps, to.steps, &err)) != HS_OK) goto fail;
    printf("held-out %s accuracy %.1f%% after %d step%s", tt.ind ? "repeated-segment" : "referent",
           100.0 * sc.last_acc, to.steps, to.steps == 1 ? "" : "s");
    if (tt.ind && isfinite(sc.last_seg_loss)) printf(" (segment loss %.3f)", sc.last_seg_loss);
    if (sc.first_full_step > 0) printf(" (first 100%% at step %d)", sc.first_full_step);
    printf("\nwrote %s\n", out);
    cli_say_threads(C, to.threads);
    rc = 0;
    goto done;
fail:
    rc = cli_error(C, &err);
done:
    free(sc.vocab_json);
    free(sc.task_json);
    hs_model_destroy(m);
    hs_winograd_destroy(tt.wg);
    hs_induction_destroy(tt.ind);
    hs_tokenizer_destroy(rvocab);
    hs_meta_free(&rmeta);
    return rc;
}
