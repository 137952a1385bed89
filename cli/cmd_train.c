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
    "Trains a pre-norm transformer on the Winograd task (next-token loss on every\n"
    "position, AdamW, batch 64) and saves it as safetensors. The held-out split is\n"
    "the test set: it is reported, never used to stop or select.\n"
    "\n"
    "task and training:\n"
    "  --task NAME            winograd (default) | winograd-category\n"
    "  --split-seed S         which noun pairs are held out (default 0)\n"
    "  --steps N              step budget (default 2000)\n"
    "  --seed S               initialisation and batch-order seed (default 0)\n"
    "  --lr X                 peak learning rate (default 1e-3; cosine decay over the\n"
    "                         last 40% of steps to 5% of it)\n"
    "  --batch B              sequences per step (default 64)\n"
    "  --checkpoint-every N   also save to --out every N steps (atomic)\n"
    "  --log-every N          progress line every N steps when not a terminal (default 250)\n"
    "  --eval-every N         held-out accuracy every N steps (default 250; 0 = end only);\n"
    "                         logged with the first step at 100%, never used to stop\n"
    "  --dataset FILE         also write the train/held-out sentences as text\n"
    "  --force                replace --out (and --dataset) when the file exists;\n"
    "                         without it an existing file is refused, untouched\n"
    "  --threads N            worker threads, 0 = every CPU (default) up to the CPU\n"
    "                         count; the result\n"
    "                         is bit-identical for every thread count\n"
    "model (every switch of the model core):\n"
    "  --layers N             n_layers (default 2)\n"
    "  --n-ctx N              n_ctx, positions the model takes (default and minimum:\n"
    "                         the task's 18; training uses 18, longer inputs are for\n"
    "                         inspect, e.g. a viewer's scale test; up to 4096)\n"
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
    "After an interrupt (Ctrl-C) or a NaN, --out holds the last checkpoint that was\n"
    "completely written (with --checkpoint-every), or whatever it held before.\n";

static volatile sig_atomic_t g_interrupted = 0;
static void on_sigint(int sig)
{
    (void)sig;
    g_interrupted = 1;
}

typedef struct {
    const hs_winograd *task;
    hs_task_rng rng;
} batch_ctx;

static void fill_batch(void *ctx, int B, int T, int *tokens, int *targets)
{
    batch_ctx *bc = ctx;
    (void)T;
    hs_winograd_batch(bc->task, &bc->rng, (size_t)B, tokens, targets);
}

typedef struct {
    const hs_winograd *task;
    const hs_vocab *vocab;
    const char *out;
    long checkpoint_every, log_every, eval_every;
    int tty;
    double last_acc;
    int last_acc_step;
    int first_full_step;
    unsigned long long seed;
    char *vocab_json, *task_json;
} step_ctx;

static char *train_json(const step_ctx *sc, int step, int steps)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddNumberToObject(o, "steps", steps);
    cJSON_AddNumberToObject(o, "steps_done", step);
    cJSON_AddNumberToObject(o, "seed", (double)sc->seed);
    if (sc->last_acc_step > 0) {
        cJSON_AddNumberToObject(o, "heldout_accuracy", sc->last_acc);
        cJSON_AddNumberToObject(o, "heldout_accuracy_step", sc->last_acc_step);
    }
    cJSON_AddStringToObject(o, "headscope_version", HS_VERSION);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static hs_status save(step_ctx *sc, hs_model *m, int step, int steps, hs_error *err)
{
    char *tj = train_json(sc, step, steps);
    if (!tj) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    hs_meta meta = {sc->vocab_json, sc->task_json, tj, NULL};
    hs_status s = hs_checkpoint_save(m, &meta, sc->out, err);
    cJSON_free(tj);
    return s;
}

static hs_status on_step(void *ctx, hs_model *m, const hs_train_info *in, hs_error *err)
{
    step_ctx *sc = ctx;
    int last = in->step == in->steps;
    if ((sc->eval_every > 0 && in->step % sc->eval_every == 0) || last) {
        hs_wg_score sco;
        hs_status s = hs_winograd_score(m, sc->task, HS_SPLIT_HELDOUT, NULL, &sco, err);
        if (s != HS_OK) return s;
        sc->last_acc = hs_wg_score_accuracy(&sco);
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
    if (sc->checkpoint_every > 0 && in->step % sc->checkpoint_every == 0 && !last) {
        hs_status s = save(sc, m, in->step, in->steps, err);
        if (s != HS_OK) return s;
    }
    if (g_interrupted)
        return hs_fail(err, HS_ERR_INPUT, "interrupted at step %d", in->step);
    return HS_OK;
}

int cmd_train(int argc, char **argv)
{
    enum { O_TASK = 256, O_SPLIT_SEED, O_STEPS, O_SEED, O_LR, O_BATCH, O_CKPT, O_LOG, O_EVAL,
           O_DATASET, O_THREADS, O_LAYERS, O_DMODEL, O_HEADS, O_DHEAD, O_DMLP, O_NORM, O_EPS, O_ACT, O_POS,
           O_ATTN, O_NO_LN1, O_NO_FINAL, O_EMBED_NORM, O_NO_BIAS, O_OUT, O_HELP, O_FORCE,
           O_NCTX };
    static const struct option opts[] = {
        {"task", required_argument, 0, O_TASK}, {"split-seed", required_argument, 0, O_SPLIT_SEED},
        {"steps", required_argument, 0, O_STEPS}, {"seed", required_argument, 0, O_SEED},
        {"lr", required_argument, 0, O_LR}, {"batch", required_argument, 0, O_BATCH},
        {"checkpoint-every", required_argument, 0, O_CKPT}, {"log-every", required_argument, 0, O_LOG},
        {"eval-every", required_argument, 0, O_EVAL}, {"dataset", required_argument, 0, O_DATASET},
        {"threads", required_argument, 0, O_THREADS},
        {"layers", required_argument, 0, O_LAYERS}, {"n-ctx", required_argument, 0, O_NCTX},
        {"d-model", required_argument, 0, O_DMODEL},
        {"heads", required_argument, 0, O_HEADS}, {"d-head", required_argument, 0, O_DHEAD},
        {"d-mlp", required_argument, 0, O_DMLP}, {"norm", required_argument, 0, O_NORM},
        {"eps", required_argument, 0, O_EPS}, {"act", required_argument, 0, O_ACT},
        {"pos", required_argument, 0, O_POS}, {"attn", required_argument, 0, O_ATTN},
        {"no-ln1", no_argument, 0, O_NO_LN1}, {"no-final-norm", no_argument, 0, O_NO_FINAL},
        {"embed-norm", no_argument, 0, O_EMBED_NORM}, {"no-bias", no_argument, 0, O_NO_BIAS},
        {"out", required_argument, 0, O_OUT}, {"help", no_argument, 0, O_HELP},
        {"force", no_argument, 0, O_FORCE}, {0, 0, 0, 0}};
    const char *C = "train";
    hs_config cfg = hs_config_default();
    hs_train_opts to = hs_train_opts_default();
    int task_kind = HS_TASK_WINOGRAD;
    unsigned long long split_seed = 0, seed = 0;
    int n_ctx = HS_WG_LEN;
    long d_head = -1, d_mlp = -1, ckpt_every = 0, log_every = 250, eval_every = 250;
    const char *out = NULL, *dataset = NULL;
    int force = 0; /* --force: replace an existing --out / --dataset */
    long v;
    double d;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_HELP: fputs(TRAIN_HELP, stdout); return 0;
        case O_TASK:
            if ((task_kind = hs_task_parse(optarg)) < 0)
                return cli_usage_error(C, "unknown task '%s' (winograd, winograd-category)", optarg);
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
            break;
        case O_LR:
            if (cli_parse_float(optarg, 1e-9, 10.0, &d)) return cli_usage_error(C, "--lr needs a number in (0, 10], got '%s'", optarg);
            to.opt.lr = (float)d;
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
        case O_NCTX:
            if (cli_parse_int(optarg, HS_WG_LEN, 4096, &v)) return cli_usage_error(C, "--n-ctx needs an integer in [%d, 4096], got '%s'", HS_WG_LEN, optarg);
            n_ctx = (int)v;
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
        case O_FORCE: force = 1; break;
        default:
            return cli_usage_error(C, "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) return cli_usage_error(C, "unexpected argument '%s'", argv[optind]);
    if (out == NULL) return cli_usage_error(C, "--out FILE.safetensors is required");
    cfg.d_head = d_head > 0 ? (int)d_head : (cfg.d_model / cfg.n_heads > 0 ? cfg.d_model / cfg.n_heads : 1);
    cfg.d_mlp = d_mlp >= 0 ? (int)d_mlp : 4 * cfg.d_model;
    cfg.seed = seed;
    if (d_head <= 0 && cfg.n_heads * cfg.d_head != cfg.d_model)
        fprintf(stderr, "headscope train: note: d_head = d_model / heads = %d, so the heads span %d of "
                        "d_model %d dimensions (set --d-head to choose)\n",
                cfg.d_head, cfg.n_heads * cfg.d_head, cfg.d_model);

    hs_error err = {0};
    /* Find out now, not after training, whether --out can be written: open
     * (and drop) the temp file the final save will use. A file already there
     * is data this run did not make: replaced only with --force. */
    hs_atomic_file probe;
    hs_status s = hs_atomic_open(&probe, out, &err);
    if (s != HS_OK) return cli_error(C, &err);
    hs_atomic_abort(&probe);
    if (dataset && hs_check_out_path(dataset, &err) != HS_OK) return cli_error(C, &err);
    struct stat st;
    if (!force && stat(out, &st) == 0) {
        fprintf(stderr, "headscope %s: --out %s already exists; use --force to replace it\n", C, out);
        return 1;
    }
    if (!force && dataset && stat(dataset, &st) == 0) {
        fprintf(stderr, "headscope %s: --dataset %s already exists; use --force to replace it\n", C,
                dataset);
        return 1;
    }

    int rc = 1;
    hs_winograd *task = NULL;
    hs_model *m = NULL;
    step_ctx sc;
    memset(&sc, 0, sizeof sc);
    if ((s = hs_winograd_create((hs_task_kind)task_kind, split_seed, NULL, &task, &err)) != HS_OK) goto fail;
    cfg.d_vocab = (int)task->vocab->n;
    cfg.n_ctx = n_ctx;
    if ((s = hs_model_create(&cfg, &m, &err)) != HS_OK) goto fail;
    hs_model_init(m);
    if (dataset && (s = hs_winograd_write_text(task, dataset, &err)) != HS_OK) goto fail;
    if ((s = hs_vocab_to_json(task->vocab, &sc.vocab_json, &err)) != HS_OK) goto fail;
    if ((s = hs_winograd_task_json(task, &sc.task_json, &err)) != HS_OK) goto fail;

    cli_say_threads(C, to.threads);
    int chapter_held = hs_winograd_is_held_out(task, HS_WG_CHAPTER_X, HS_WG_CHAPTER_Y);
    fprintf(stderr, "task %s, split seed %llu: %zu train / %zu held-out sentences; the chapter's pair "
                    "(animal, street) is %s\n",
            hs_task_name(task->kind), split_seed, task->n_train, task->n_heldout,
            chapter_held == 1 ? "held out" : "in training");
    fprintf(stderr, "model: %d layer%s, d_model %d, %d heads x %d, d_mlp %d, %s, %s, pos %s, attn %s%s%s%s%s; "
                    "%zu parameters; %d step%s, batch %d, seed %llu\n",
            cfg.n_layers, cfg.n_layers == 1 ? "" : "s", cfg.d_model, cfg.n_heads, cfg.d_head, cfg.d_mlp, hs_norm_name(cfg.norm),
            hs_act_name(cfg.act), hs_pos_name(cfg.pos), hs_attn_name(cfg.attn),
            cfg.ln1 ? "" : ", no ln1", cfg.ln_final ? "" : ", no final norm",
            cfg.embed_norm ? ", embed norm" : "", cfg.bias ? "" : ", no bias", m->n_params,
            to.steps, to.steps == 1 ? "" : "s", to.batch, seed);

    batch_ctx bc = {task, {0}};
    hs_task_rng_seed(&bc.rng, seed ^ 0x5DEECE66Dull);
    sc.task = task;
    sc.vocab = task->vocab;
    sc.out = out;
    sc.checkpoint_every = ckpt_every;
    sc.log_every = log_every;
    sc.eval_every = eval_every;
    sc.tty = isatty(2);
    sc.seed = seed;
    to.seq_len = HS_WG_LEN;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    s = hs_train(m, &to, fill_batch, &bc, on_step, &sc, &err);
    if (s != HS_OK) {
        if (sc.tty) fputc('\n', stderr);
        fprintf(stderr, "headscope train: %s; %s\n", err.msg,
                ckpt_every > 0 ? "--out keeps the last complete checkpoint"
                               : "nothing was written to --out");
        goto done;
    }
    if (to.steps == 0) {
        hs_wg_score sco;
        if ((s = hs_winograd_score(m, task, HS_SPLIT_HELDOUT, NULL, &sco, &err)) != HS_OK) goto fail;
        sc.last_acc = hs_wg_score_accuracy(&sco);
        sc.last_acc_step = 0;
    }
    if ((s = save(&sc, m, to.steps, to.steps, &err)) != HS_OK) goto fail;
    printf("held-out referent accuracy %.1f%% after %d step%s", 100.0 * sc.last_acc, to.steps,
           to.steps == 1 ? "" : "s");
    if (sc.first_full_step > 0) printf(" (first 100%% at step %d)", sc.first_full_step);
    printf("\nwrote %s\n", out);
    rc = 0;
    goto done;
fail:
    rc = cli_error(C, &err);
done:
    free(sc.vocab_json);
    free(sc.task_json);
    hs_model_destroy(m);
    hs_winograd_destroy(task);
    return rc;
}
