/*
 * cli/cmd_cache.c -- `headscope cache`: TransformerLens' run_with_cache as a
 * safetensors file. Thin: parses the options, loads the checkpoint, runs
 * hs_cache_run (experiments/cache.c) and prints what it wrote.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "expout.h"
#include "experiments/experiments.h"
#include "util.h"

static const char CACHE_HELP[] =
    "usage: headscope cache --model FILE (--sentence S | --data FILE.jsonl) --out FILE.safetensors\n"
    "                       [--names LIST] [--force] [options]\n"
    "\n"
    "TransformerLens' run_with_cache, written to a file: runs the model and keeps\n"
    "every hook point (or those --names matches) with TransformerLens' names and\n"
    "batched shapes ([batch, pos, ...]; hook_pattern [batch, head, dest, src]), as\n"
    "float32 tensors of one safetensors file, with hook_tokens (the token ids\n"
    "[batch, pos] as float32) always among them. Read it with\n"
    "safetensors.numpy.load_file or safetensors.torch.load_file, or by hand (an\n"
    "8-byte header length, a JSON header, the raw data). The causal mask's -inf\n"
    "in hook_attn_scores is written as -3.4028235e38 (the same softmax). docs/HOOKS.md\n"
    "lists the points and what each holds.\n"
    "\n"
    "  --model FILE           checkpoint (.safetensors with its vocabulary, or a\n"
    "                         Hugging Face GPT-2 folder)\n"
    CLI_VOCAB_HELP
    "  --sentence S           one sentence (batch 1)\n"
    "  --data FILE            a prompt set, JSONL, one {\"prompt\": ...} a line, every\n"
    "                         prompt the same number of tokens (batch = its prompts)\n"
    "  --names LIST           comma-separated hook names or patterns: `*` matches within\n"
    "                         one dotted part, `**` across them, e.g.\n"
    "                         'blocks.*.attn.hook_z,blocks.*.attn.hook_pattern'\n"
    "                         (default: every hook point)\n"
    "  --out FILE             the .safetensors file to write (its folder must exist)\n"
    "  --force                replace --out when it is a cache headscope wrote and\n"
    "                         nobody changed since (any other file is refused)\n"
    "  --threads N            worker threads, 0 = every CPU (default); the file is the\n"
    "                         same for any N\n"
    "\n"
    "Exit status: 0 ok, 1 user error, 2 usage error.\n";

#define MAX_NAMES 256

/* The command line. */
typedef struct {
    hs_cache_opts o;
    hs_load_source from;
    char *names_buf;              /* --names split in place (owned) */
    const char *names[MAX_NAMES];
    int threads;
} cache_args;

/* --names "a,b" into a->names; 0 ok, 2 after the usage error. */
static int parse_names(const char *C, const char *arg, cache_args *a)
{
    free(a->names_buf);
    a->names_buf = hs_strdup(arg);
    if (a->names_buf == NULL) return cli_error(C, &(hs_error){HS_ERR_NOMEM, "out of memory"});
    a->o.n_names = 0;
    for (char *s = a->names_buf, *comma;; s = comma + 1) {
        comma = strchr(s, ',');
        if (comma) *comma = '\0';
        if (s[0] == '\0') return cli_usage_error(C, "--names has an empty name in '%s'", arg);
        if (a->o.n_names == MAX_NAMES) return cli_usage_error(C, "--names takes at most %d names", MAX_NAMES);
        a->names[a->o.n_names++] = s;
        if (comma == NULL) break;
    }
    a->o.names = a->names;
    return 0;
}

/* -1 to run, else the exit status (0 after --help, 2 after a usage error). */
static int parse_args(int argc, char **argv, cache_args *a)
{
    enum { O_MODEL = 256, O_SENT, O_DATA, O_NAMES, O_OUT, O_FORCE, O_THREADS };
    static const struct option opts[] = {{"model", required_argument, 0, O_MODEL},
                                         {"sentence", required_argument, 0, O_SENT},
                                         {"data", required_argument, 0, O_DATA},
                                         {"names", required_argument, 0, O_NAMES},
                                         {"out", required_argument, 0, O_OUT},
                                         {"force", no_argument, 0, O_FORCE},
                                         {"threads", required_argument, 0, O_THREADS},
                                         CLI_HELP_OPT,
                                         CLI_VOCAB_OPT,
                                         {0, 0, 0, 0}};
    const char *C = "cache";
    int c, r = 0;
    cli_opts op = {.cmd = C, .help = CACHE_HELP, .src = &a->from};
    while (r == 0 && (c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END) {
        switch (c) {
        case CLI_OPT_EXIT: return op.status;
        case O_MODEL: a->o.model_path = optarg; break;
        case O_SENT:
            if (a->o.sentence) return cli_usage_error(C, "--sentence takes one sentence (--data for more)");
            a->o.sentence = optarg;
            break;
        case O_DATA: a->o.data_path = optarg; break;
        case O_NAMES: r = parse_names(C, optarg, a); break;
        case O_OUT: a->o.out_path = optarg; break;
        case O_FORCE: a->o.force = 1; break;
        case O_THREADS: r = cli_parse_threads(C, optarg, &a->threads); break;
        }
    }
    if (r) return r;
    int rest = cli_args_end(C, argc, argv, optind, a->o.model_path);
    if (rest) return rest;
    if ((a->o.sentence == NULL) == (a->o.data_path == NULL))
        return cli_usage_error(C, "give exactly one of --sentence \"...\" and --data FILE");
    if (a->o.out_path == NULL) return cli_usage_error(C, "give --out FILE.safetensors");
    return -1;
}

int cmd_cache(int argc, char **argv)
{
    const char *C = "cache";
    cache_args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0) {
        free(a.names_buf);
        return rc;
    }
    hs_error err = {0};
    hs_pool *pool = NULL;
    hs_loaded L;
    rc = cli_load_src(C, a.o.model_path, HS_NEED_VOCAB, &a.from, &L);
    if (rc == 0) {
        const hs_notes notes = cli_notes(C);
        hs_cache_report r;
        if (hs_pool_create(a.threads, &pool, &err) != HS_OK ||
            hs_cache_run(L.model, L.vocab, pool, &a.o, &notes, &r, &err) != HS_OK) {
            rc = cli_error(C, &err);
        } else {
            printf("wrote %d tensors (batch %d, %d positions; %zu float32 values) to %s\n", r.n_tensors,
                   r.batch, r.pos, r.floats, a.o.out_path);
            rc = cli_stdout_done(C);
        }
        hs_loaded_free(&L);
    }
    hs_pool_destroy(pool);
    free(a.names_buf);
    return rc;
}
