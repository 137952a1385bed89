/*
 * cli/cmd_train.c -- `headscope train`: the options of a training run
 * (tasks.h, hs_train_run: build a task, train a model on it, save it as
 * .safetensors), its progress and result printed.
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "expout.h"
#include "util.h"

static const char TRAIN_HELP[] =
    "usage: headscope train --out FILE.safetensors [--force] [options]\n"
    "\n"
    "       headscope train --resume CKPT --out FILE.safetensors [--steps N] [--keep DIR]\n"
    "\n"
    "Trains a transformer (pre-norm by default) on a task (next-token loss on every\n"
    "position, AdamW, batch 64) and saves it as safetensors. The held-out split is\n"
    "the test set: it is reported, never used to stop or select.\n"
    "\n"
    "task and training:\n"
    "  --task NAME            winograd (default) | winograd-category | induction | text\n"
    "  --split-seed S         which noun pairs (induction: which sequences) are held out\n"
    "                         (default 0)\n"
    "  --steps N              step budget (default 2000; induction 1000; text 3000)\n"
    "  --seed S               initialisation and batch-order seed (default 0)\n"
    "  --lr X                 peak learning rate (default 1e-3, induction 3e-3; cosine\n"
    "                         decay over the last 40% of steps to 5% of it)\n"
    "  --warmup N             linear warmup: the rate rises from lr/N to lr over the\n"
    "                         first N steps (default 0: none)\n"
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
    "  --vocab-size N         symbols (default 32; text: the BPE's size)\n"
    "  --seg-len MIN:MAX      repeated segment's length (default 4:8)\n"
    "  --gap MIN:MAX          tokens between the two occurrences (default 0:16)\n"
    "  --heldout N            held-out sequences (default 512; their segments are\n"
    "                         never trained on)\n"
    "  --loss-all             train on every next token (default: only the repeated\n"
    "                         segment's, the tokens induction can predict)\n"
    "text task (next-token prediction on a corpus, perplexity on a held-out part):\n"
    "  --corpus FILE...       text files (UTF-8), read as they are\n"
    "  --tokenizer FILE       a byte-level BPE's tokenizer.json (headscope bpe writes\n"
    "                         one); default: a BPE of --vocab-size trained on the corpus\n"
    "  --vocab-size N         that BPE's vocabulary (default 1024, the chapter's)\n"
    "  --val-fraction X       held out: the last X of each file's tokens (default 0.1)\n"
    "  --repeat P             with probability P a window holds a span of itself (n_ctx/8\n"
    "                         to n_ctx/4 tokens) a second time later, at a random\n"
    "                         distance: text where induction pays; the held-out windows\n"
    "                         get theirs from a fixed seed (default 0: plain text)\n"
    "  --n-ctx N              window length in tokens (default 128); every position of\n"
    "                         a random window of the training part is a target\n"
    "                         held-out perplexity over the held-out part's consecutive\n"
    "                         windows, beside the unigram baseline's; the checkpoint\n"
    "                         carries its tokenizer (eval --corpus, generate read it)\n"
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
    "  --act NAME             gelu (exact erf, default) | relu | gelu_new (tanh) | silu\n"
    "  --pos NAME             learned (default) | none | sinusoidal | rotary | alibi\n"
    "  --rotary-dim N         rotary: rotate the first N dims of each head (even; default\n"
    "                         d_head; GPT-NeoX's rotary_pct x d_head)\n"
    "  --n-kv-heads N         grouped-query attention: N key/value heads (dividing heads;\n"
    "                         default heads)\n"
    "  --window N             local attention on every layer: key j visible from query i\n"
    "                         only when i - j < N (GPT-Neo's local layers)\n"
    "  --attn NAME            softmax (default) | uniform (causal average, no Q/K)\n"
    "  --no-ln1               no norm in front of the attention\n"
    "  --no-final-norm        no norm before the unembedding\n"
    "  --embed-norm           a norm right after the embedding (microGPT)\n"
    "  --no-bias              no biases anywhere\n"
    "  --gated-mlp            gated MLP (TransformerLens' gated_mlp, Llama's SwiGLU with\n"
    "                         --act silu): act(x W_gate) * (x W_in + b_in), then W_out\n"
    "  --parallel-attn-mlp    attention and MLP both read the block's input, each through\n"
    "                         its own norm, and add to it (GPT-NeoX / Pythia, GPT-J)\n"
    "  --norm-place NAME      pre (default) | post: x = LN(x + attn(x)), x = LN(x + mlp(x)),\n"
    "                         the original Transformer's (Vaswani et al. 2017), which has\n"
    "                         no final norm: post also turns the final norm off\n"
    "  --attn-replace         the attention's output replaces the residual instead of\n"
    "                         being added to it (the chapter's \"replace, not add\" rows)\n"
    "  --attn-scale X         scores are q.k / X (TransformerLens' attn_scale; default\n"
    "                         sqrt(d_head)); 1 = no division, as the chapter's ablation\n"
    "  e.g. the microGPT block: --norm rmsnorm --act relu --no-bias --embed-norm --no-final-norm\n"
    "\n"
    "The canonical induction pair: --task induction --d-mlp 0 --layers 2 (and 1).\n"
    "\n"
    "After an interrupt (Ctrl-C) or a NaN, --out holds the last checkpoint that was\n"
    "completely written (with --checkpoint-every), or whatever it held before.\n";

static volatile sig_atomic_t g_interrupted = 0;
static void on_signal(int sig)
{
    (void)sig;
    g_interrupted = 1;
}

/* From the first step on, SIGINT and SIGTERM stop the run after the step at hand. */
static void catch_signals(void *ctx)
{
    (void)ctx;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* One step's progress: on a terminal one line rewritten in place, else a
 * line every --log-every steps. ctx: 1 when stderr is a terminal. */
static void print_progress(void *ctx, const hs_train_progress *p)
{
    const int tty = *(const int *)ctx;
    char acc[64] = ""; /* nothing to say before the first evaluation */
    if (p->accuracy_step > 0 && isfinite(p->perplexity))
        snprintf(acc, sizeof acc, "held-out ppl %.3f (step %d)", p->perplexity, p->accuracy_step);
    else if (p->accuracy_step > 0)
        snprintf(acc, sizeof acc, "held-out acc %5.1f%% (step %d)", 100.0 * p->accuracy,
                 p->accuracy_step);
    if (tty) {
        fprintf(stderr, "\rstep %5d/%d  loss %.4f  %-30s  %6.0f steps/s  ETA %4.0fs ",
                p->step, p->steps, p->loss, acc, p->steps_per_s, p->eta_s);
        if (p->last) fputc('\n', stderr);
    } else if (p->logged) {
        fprintf(stderr, "step %d/%d loss %.4f lr %.2e %s%s%.0f steps/s ETA %.0fs\n", p->step,
                p->steps, p->loss, p->lr, acc, acc[0] ? " " : "", p->steps_per_s, p->eta_s);
    }
}

int cli_train(const char *cmd, const hs_train_job *job)
{
    int tty = isatty(2);
    hs_train_job j = *job;
    j.interrupt = &g_interrupted;
    j.progress = print_progress;
    j.on_start = catch_signals;
    j.ctx = &tty;
    const hs_notes notes = cli_notes(cmd);
    hs_train_result r;
    hs_error err = {0};
    if (hs_train_run(&j, &notes, &r, &err) != HS_OK) {
        if (!r.stopped) return cli_error(cmd, &err);
        if (tty) fputc('\n', stderr);
        fprintf(stderr, "headscope %s: %s; %s\n", cmd, err.msg,
                j.keep ? "--keep holds every checkpoint written so far"
                : j.checkpoint_every > 0 ? "--out keeps the last complete checkpoint"
                                         : "nothing was written to --out");
        return 1;
    }
    if (r.text)
        printf("held-out perplexity %.3f after %d step%s (unigram %.3f; %zu tokens in %zu windows "
               "of %d)", r.perplexity, r.steps, r.steps == 1 ? "" : "s", r.unigram_perplexity,
               r.text_windows * (size_t)r.cfg.n_ctx, r.text_windows, r.cfg.n_ctx);
    else
        printf("held-out %s accuracy %.1f%% after %d step%s", r.induction ? "repeated-segment" : "referent",
               100.0 * r.accuracy, r.steps, r.steps == 1 ? "" : "s");
    if (r.induction && isfinite(r.seg_loss)) printf(" (segment loss %.3f)", r.seg_loss);
    if (r.first_full_step > 0) printf(" (first 100%% at step %d)", r.first_full_step);
    printf("\nwrote %s\n", j.out);
    cli_say_threads(cmd, j.train.threads);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The options                                                               */

/* Where the options go: the job, and what is read into it after parsing. */
typedef struct {
    hs_train_job job;
    unsigned long long split_seed;
    int norm, act, pos, attn, init; /* the enum options, parsed */
    int window;                     /* --window: every layer local (0 = none) */
    int norm_place;                 /* --norm-place, parsed */
    int seg[2], gap[2];             /* --seg-len, --gap MIN:MAX */
    int n_ctx;                      /* --n-ctx; 0 = not given */
    int model_flag, task_flag;      /* a model or task option was given (refused with --resume) */
    int vocab_size;                 /* --vocab-size; 0 = not given */
    double val_fraction;            /* --val-fraction; 0 = not given */
    double repeat;                  /* --repeat; -1 = not given */
    const char **corpus;            /* --corpus values (argc of them at most) */
    int n_corpus;
} train_args;

typedef enum {
    K_INT,     /* an int in [lo, hi] */
    K_U64,     /* an unsigned long long */
    K_F32,     /* a float in [lo, hi] */
    K_STR,     /* the text */
    K_SET,     /* no value: the int becomes lo */
    K_ENUM,    /* an int from parse (names: the names it takes) */
    K_RANGE,   /* MIN:MAX into int[2], lo <= MIN <= MAX <= 4096 */
    K_TASK,    /* --task */
    K_THREADS, /* --threads */
    K_CORPUS,  /* --corpus: appended to the list */
    K_F64,     /* a double in [lo, hi] */
} opt_kind;

enum { G_MODEL = 1, G_TASK = 2 }; /* the option's group: --resume refuses both */

typedef struct {
    const char *name;
    opt_kind kind;
    int group;
    size_t off;          /* where the value goes in train_args */
    double lo, hi;
    const char *needs;   /* the usage error: "--NAME needs NEEDS, got 'V'" (K_INT: NULL =
                          * "an integer in [lo, hi]"); K_ENUM: "unknown --NAME 'V' (NEEDS)" */
    int (*parse)(const char *s);
} train_opt;

#define A(f) offsetof(train_args, f)
static const train_opt OPTS[] = {
    {"task", K_TASK, G_TASK, 0, 0, 0, NULL, NULL},
    {"split-seed", K_U64, G_TASK, A(split_seed), 0, 0, "a non-negative integer", NULL},
    {"steps", K_INT, 0, A(job.train.steps), 0, 10000000, NULL, NULL},
    {"seed", K_U64, G_TASK, A(job.seed), 0, 0, "a non-negative integer", NULL},
    {"lr", K_F32, G_MODEL, A(job.train.opt.lr), 1e-9, 10.0, "a number in (0, 10]", NULL},
    {"batch", K_INT, G_MODEL, A(job.train.batch), 1, 4096, NULL, NULL},
    {"checkpoint-every", K_INT, 0, A(job.checkpoint_every), 1, 10000000, "a positive integer", NULL},
    {"log-every", K_INT, 0, A(job.log_every), 1, 10000000, "a positive integer", NULL},
    {"eval-every", K_INT, 0, A(job.eval_every), 0, 10000000, "a non-negative integer", NULL},
    {"dataset", K_STR, G_TASK, A(job.dataset), 0, 0, NULL, NULL},
    {"threads", K_THREADS, 0, 0, 0, 0, NULL, NULL},
    {"layers", K_INT, G_MODEL, A(job.cfg.n_layers), 1, HS_MAX_LAYERS, NULL, NULL},
    {"d-model", K_INT, G_MODEL, A(job.cfg.d_model), 1, 4096, NULL, NULL},
    {"heads", K_INT, G_MODEL, A(job.cfg.n_heads), 1, 64, NULL, NULL},
    {"d-head", K_INT, G_MODEL, A(job.cfg.d_head), 1, 1024, NULL, NULL},
    {"d-mlp", K_INT, G_MODEL, A(job.cfg.d_mlp), 0, 16384, NULL, NULL},
    {"norm", K_ENUM, G_MODEL, A(norm), 0, 0, "layernorm, rmsnorm, none", hs_norm_parse},
    {"eps", K_F32, G_MODEL, A(job.cfg.eps), 1e-30, 1.0, "a number in (0, 1]", NULL},
    {"act", K_ENUM, G_MODEL, A(act), 0, 0, "gelu, relu, gelu_new, silu", hs_act_parse},
    {"pos", K_ENUM, G_MODEL, A(pos), 0, 0, "learned, none, sinusoidal, rotary, alibi", hs_pos_parse},
    {"rotary-dim", K_INT, G_MODEL, A(job.cfg.rotary_dim), 2, 1024, NULL, NULL},
    {"n-kv-heads", K_INT, G_MODEL, A(job.cfg.n_key_value_heads), 1, 64, NULL, NULL},
    {"window", K_INT, G_MODEL, A(window), 1, 4096, NULL, NULL},
    {"attn", K_ENUM, G_MODEL, A(attn), 0, 0, "softmax, uniform", hs_attn_parse},
    {"no-ln1", K_SET, G_MODEL, A(job.cfg.ln1), 0, 0, NULL, NULL},
    {"no-final-norm", K_SET, G_MODEL, A(job.cfg.ln_final), 0, 0, NULL, NULL},
    {"embed-norm", K_SET, G_MODEL, A(job.cfg.embed_norm), 1, 0, NULL, NULL},
    {"no-bias", K_SET, G_MODEL, A(job.cfg.bias), 0, 0, NULL, NULL},
    {"gated-mlp", K_SET, G_MODEL, A(job.cfg.gated_mlp), 1, 0, NULL, NULL},
    {"parallel-attn-mlp", K_SET, G_MODEL, A(job.cfg.parallel_attn_mlp), 1, 0, NULL, NULL},
    {"norm-place", K_ENUM, G_MODEL, A(norm_place), 0, 0, "pre, post", hs_norm_place_parse},
    {"attn-replace", K_SET, G_MODEL, A(job.cfg.attn_replace), 1, 0, NULL, NULL},
    {"attn-scale", K_F32, G_MODEL, A(job.cfg.attn_scale), 1e-6, 1e6, "a number in (0, 1e6]", NULL},
    {"out", K_STR, 0, A(job.out), 0, 0, NULL, NULL},
    {"init", K_ENUM, G_MODEL, A(init), 0, 0, "pytorch, gpt2", hs_init_parse},
    {"keep", K_STR, 0, A(job.keep), 0, 0, NULL, NULL},
    {"save-optimizer", K_SET, 0, A(job.save_optimizer), 1, 0, NULL, NULL},
    {"resume", K_STR, 0, A(job.resume), 0, 0, NULL, NULL},
    {"vocab-size", K_INT, G_TASK, A(vocab_size), 4, HS_BPE_TRAIN_MAX_VOCAB, NULL, NULL},
    {"corpus", K_CORPUS, G_TASK, 0, 0, 0, NULL, NULL},
    {"tokenizer", K_STR, G_TASK, A(job.tokenizer), 0, 0, NULL, NULL},
    {"val-fraction", K_F64, G_TASK, A(val_fraction), 0.01, 0.5, "a number in [0.01, 0.5]", NULL},
    {"repeat", K_F64, G_TASK, A(repeat), 0.0, 1.0, "a number in [0, 1]", NULL},
    {"warmup", K_INT, G_MODEL, A(job.train.warmup), 0, 10000000, NULL, NULL},
    {"n-ctx", K_INT, G_TASK, A(n_ctx), 4, 4096, NULL, NULL},
    {"seg-len", K_RANGE, G_TASK, A(seg), 2, 0, "MIN:MAX with 2 <= MIN <= MAX", NULL},
    {"gap", K_RANGE, G_TASK, A(gap), 0, 0, "MIN:MAX with 0 <= MIN <= MAX", NULL},
    {"heldout", K_INT, G_TASK, A(job.ind.n_heldout), 1, 100000, NULL, NULL},
    {"loss-all", K_SET, G_TASK, A(job.ind.loss_all), 1, 0, NULL, NULL},
    {"force", K_SET, 0, A(job.force), 1, 0, NULL, NULL},
};
#undef A
#define N_OPTS (sizeof OPTS / sizeof OPTS[0])

/* "MIN:MAX" with lo <= MIN <= MAX <= 4096 into v[2]; 0 ok. */
static int parse_range(const char *s, long lo, int *v)
{
    char buf[64];
    const char *colon = strchr(s, ':');
    if (!colon || (size_t)(colon - s) >= sizeof buf) return -1;
    memcpy(buf, s, (size_t)(colon - s));
    buf[colon - s] = '\0';
    long x, y;
    if (cli_parse_int(buf, lo, 4096, &x) || cli_parse_int(colon + 1, lo, 4096, &y) || x > y) return -1;
    v[0] = (int)x;
    v[1] = (int)y;
    return 0;
}

/* Reads the value of option o into a. 0 ok, else the exit status after
 * printing the usage error. */
static int read_option(const train_opt *o, const char *arg, train_args *a)
{
    const char *C = "train";
    void *at = (char *)a + o->off;
    long v;
    double d;
    int e;
    switch (o->kind) {
    case K_INT:
        if (cli_parse_int(arg, (long)o->lo, (long)o->hi, &v))
            return o->needs ? cli_usage_error(C, "--%s needs %s, got '%s'", o->name, o->needs, arg)
                            : cli_usage_error(C, "--%s needs an integer in [%ld, %ld], got '%s'", o->name,
                                              (long)o->lo, (long)o->hi, arg);
        *(int *)at = (int)v;
        return 0;
    case K_U64:
        if (cli_parse_u64(arg, (unsigned long long *)at))
            return cli_usage_error(C, "--%s needs %s, got '%s'", o->name, o->needs, arg);
        return 0;
    case K_F32:
        if (cli_parse_float(arg, o->lo, o->hi, &d))
            return cli_usage_error(C, "--%s needs %s, got '%s'", o->name, o->needs, arg);
        *(float *)at = (float)d;
        return 0;
    case K_STR: *(const char **)at = arg; return 0;
    case K_SET: *(int *)at = (int)o->lo; return 0;
    case K_ENUM:
        if ((e = o->parse(arg)) < 0) return cli_usage_error(C, "unknown --%s '%s' (%s)", o->name, arg, o->needs);
        *(int *)at = e;
        return 0;
    case K_RANGE:
        if (parse_range(arg, (long)o->lo, (int *)at))
            return cli_usage_error(C, "--%s needs %s, got '%s'", o->name, o->needs, arg);
        return 0;
    case K_TASK:
        a->job.text_task = strcmp(arg, "text") == 0;
        if (a->job.text_task) {
            a->job.induction = 0;
        } else if (strcmp(arg, "induction") == 0) {
            a->job.induction = 1;
        } else if ((e = hs_task_parse(arg)) < 0) {
            return cli_usage_error(C, "unknown task '%s' (winograd, winograd-category, induction, text)", arg);
        } else {
            a->job.induction = 0;
            a->job.kind = (hs_task_kind)e;
        }
        return 0;
    case K_THREADS: return cli_parse_threads(C, arg, &a->job.train.threads) ? 2 : 0;
    case K_CORPUS: a->corpus[a->n_corpus++] = arg; return 0;
    case K_F64:
        if (cli_parse_float(arg, o->lo, o->hi, &d))
            return cli_usage_error(C, "--%s needs %s, got '%s'", o->name, o->needs, arg);
        *(double *)at = d;
        return 0;
    }
    return 0;
}

/* The option loop: -1 to go on, else the exit status (0 after --help, 2
 * after a usage error, printed). */
static int parse_options(int argc, char **argv, train_args *a)
{
    struct option lo[N_OPTS + 2];
    for (size_t i = 0; i < N_OPTS; i++) {
        const int flag = OPTS[i].kind == K_SET;
        lo[i] = (struct option){OPTS[i].name, flag ? no_argument : required_argument, 0,
                                CLI_OPT_OWN_FIRST + (int)i};
    }
    lo[N_OPTS] = (struct option)CLI_HELP_OPT;
    lo[N_OPTS + 1] = (struct option){0, 0, 0, 0};
    cli_opts op = {.cmd = "train", .help = TRAIN_HELP};
    int c;
    while ((c = cli_opt_next(&op, argc, argv, lo)) != CLI_OPT_END) {
        if (c == CLI_OPT_EXIT) return op.status;
        const train_opt *o = &OPTS[c - CLI_OPT_OWN_FIRST];
        if (o->group == G_MODEL) a->model_flag = 1;
        if (o->group == G_TASK) a->task_flag = 1;
        const int rc = read_option(o, optarg, a);
        if (rc) return rc;
    }
    return -1;
}

/* Parses argv into job: -1 to go on, else the exit status (after --help, or
 * a usage error printed). */
static int train_job_of(int argc, char **argv, hs_train_job *job)
{
    const char *C = "train";
    train_args a;
    memset(&a, 0, sizeof a);
    hs_train_job_default(&a.job);
    const hs_ind_params ipd = a.job.ind;
    a.norm = a.job.cfg.norm;
    a.act = a.job.cfg.act;
    a.pos = a.job.cfg.pos;
    a.attn = a.job.cfg.attn;
    a.norm_place = a.job.cfg.norm_place;
    a.init = a.job.init;
    a.repeat = -1.0;
    a.seg[0] = ipd.seg_min, a.seg[1] = ipd.seg_max;
    a.gap[0] = ipd.gap_min, a.gap[1] = ipd.gap_max;
    a.corpus = calloc((size_t)argc + 1, sizeof *a.corpus);
    if (!a.corpus) return cli_usage_error(C, "out of memory");
    const int rc = parse_options(argc, argv, &a);
    if (rc >= 0) {
        free(a.corpus);
        return rc;
    }
    hs_train_job *j = &a.job;
    const char **files = NULL;
    int n_files = 0;
    if (j->text_task || a.n_corpus > 0) {
        n_files = cli_corpus_files(C, a.corpus, a.n_corpus, argc, argv, optind, &files);
        free(a.corpus);
        if (n_files < 0) return 2;
        if (!j->text_task) {
            free(files);
            return cli_usage_error(C, "--corpus is for --task text");
        }
        j->corpus = files;
        j->n_corpus = (size_t)n_files;
    } else {
        free(a.corpus);
    }
    if (!j->text_task && (j->tokenizer || a.val_fraction > 0 || a.repeat >= 0)) {
        return cli_usage_error(C, "--tokenizer, --val-fraction and --repeat are for --task text");
    }
    if (j->text_task && j->tokenizer && a.vocab_size > 0) {
        free(files);
        return cli_usage_error(C, "--vocab-size trains a BPE; --tokenizer gives one: not both");
    }
    if (j->text_task && a.vocab_size > 0 && a.vocab_size < 257) {
        free(files);
        return cli_usage_error(C, "--vocab-size needs an integer from 257 (the 256 bytes and one "
                               "merge) to %d for the text task, got %d", HS_BPE_TRAIN_MAX_VOCAB,
                               a.vocab_size);
    }
    if (j->induction && a.vocab_size > HS_IND_MAX_SYMBOLS)
        return cli_usage_error(C, "--vocab-size needs an integer in [4, %d] for the induction task, "
                               "got %d", HS_IND_MAX_SYMBOLS, a.vocab_size);
    if (j->text_task) {
        if (a.vocab_size > 0) j->text.vocab_size = a.vocab_size;
        if (a.val_fraction > 0) j->text.val_fraction = a.val_fraction;
        if (a.repeat >= 0) j->text.repeat = a.repeat;
        if (a.n_ctx > 0) j->text.n_ctx = a.n_ctx;
    } else if (a.vocab_size > 0) {
        j->ind.n_symbols = a.vocab_size;
    }
    if (optind < argc && !j->text_task) return cli_usage_error(C, "unexpected argument '%s'", argv[optind]);
    if (j->out == NULL) {
        free(files);
        return cli_usage_error(C, "--out FILE.safetensors is required");
    }
    if (j->resume && (a.model_flag || a.task_flag))
        return cli_usage_error(C, "--resume continues the checkpoint's own task, model, batch and "
                                  "learning rate; drop those flags");
    if (!j->induction && !j->resume &&
        (j->ind.n_symbols != ipd.n_symbols || a.seg[0] != ipd.seg_min || a.seg[1] != ipd.seg_max ||
         a.gap[0] != ipd.gap_min || a.gap[1] != ipd.gap_max || j->ind.n_heldout != ipd.n_heldout ||
         j->ind.loss_all))
        return cli_usage_error(C, "--vocab-size, --seg-len, --gap, --heldout and --loss-all are for --task induction");
    if (!j->induction && !j->text_task && a.n_ctx > 0 && a.n_ctx < HS_WG_LEN)
        return cli_usage_error(C, "--n-ctx needs an integer in [%d, 4096] for the Winograd task, got %d", HS_WG_LEN,
                               a.n_ctx);
    j->split_seed = a.split_seed;
    j->cfg.norm = (hs_norm)a.norm;
    j->cfg.act = (hs_act)a.act;
    j->cfg.pos = (hs_pos)a.pos;
    j->cfg.attn = (hs_attn)a.attn;
    if (a.window > 0) {
        j->cfg.window_size = a.window;
        for (int l = 0; l < j->cfg.n_layers; l++) j->cfg.attn_local[l] = 1;
    }
    j->cfg.norm_place = (hs_norm_place)a.norm_place;
    if (j->cfg.norm_place == HS_NORM_POST) j->cfg.ln_final = 0; /* as the original Transformer */
    j->init = (hs_init)a.init;
    j->ind.seg_min = a.seg[0], j->ind.seg_max = a.seg[1];
    j->ind.gap_min = a.gap[0], j->ind.gap_max = a.gap[1];
    if (a.n_ctx > 0 && !j->text_task) {
        if (j->induction) j->ind.n_ctx = a.n_ctx;
        else j->cfg.n_ctx = a.n_ctx;
    }
    *job = a.job;
    return -1;
}

int cmd_train(int argc, char **argv)
{
    hs_train_job job;
    const int rc = train_job_of(argc, argv, &job);
    if (rc >= 0) return rc;
    const int ret = cli_train("train", &job);
    free((void *)job.corpus);
    return ret;
}
