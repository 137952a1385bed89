/*
 * cli/main.c -- the `headscope` program: dispatches to thin subcommands over
 * the library. Only this folder prints and exits (exit 0 success, 1 user
 * error with one line on stderr, 2 usage error).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} COMMANDS[] = {
    {"train", cmd_train, "train a model on a task and save it as .safetensors"},
    {"eval", cmd_eval, "score a model: Winograd referent accuracy, or a text model's perplexity"},
    {"inspect", cmd_inspect, "every head's attention on one sentence: figures, JSON, text rows"},
    {"circuit", cmd_circuit, "verify the two-step referent circuit on the held-out set"},
    {"weights", cmd_weights, "virtual weights: full QK/OV circuits, composition, copying"},
    {"view", cmd_view, "one offline HTML page to explore output folders (index.json + JSON)"},
    {"patch", cmd_patch, "activation patching clean -> corrupted over a prompt set (get_act_patch_*)"},
    {"ablate", cmd_ablate, "zero, mean or resample ablation of every head, attention and MLP on prompts"},
    {"dla", cmd_dla, "direct logit attribution averaged over a prompt set (final norm frozen)"},
    {"cache", cmd_cache, "TransformerLens' run_with_cache as a .safetensors file (every hook point)"},
    {"lens", cmd_lens, "the logit lens per layer on a sentence or a prompt set"},
    {"heads", cmd_heads, "every head's detector scores (previous-token, induction, ...) on prompts"},
    {"timeline", cmd_timeline, "circuits over training: scores and verdicts of every kept checkpoint"},
    {"discover", cmd_discover, "find a circuit: edge scores (exact patching, EAP, EAP-IG, ACDC), faithfulness, ROC"},
    {"faithfulness", cmd_faithfulness, "run a circuit from a graph.json: its faithfulness and the curve"},
    {"prompts", cmd_prompts, "write a prompt set: IOI (Wang et al. 2022) for a model's BPE tokenizer"},
    {"tokenize", cmd_tokenize, "a model's tokens of a text or of JSON lines (TL's to_tokens / to_str_tokens)"},
    {"generate", cmd_generate, "a text model continues a prompt (greedy, temperature, top-k; seeded)"},
    {"ladder", cmd_ladder, "the chapter's ablation ladder on a corpus: parameters and perplexity per row"},
    {"bpe", cmd_bpe, "train a byte-level BPE on a corpus and write its tokenizer.json"},
    {"demo", cmd_demo, "train the default model, inspect the chapter's sentences, run circuit"},
};
#define N_COMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static void usage(FILE *fp)
{
    fprintf(fp, "usage: headscope <command> [options]   (headscope <command> --help)\n\n"
                "headscope " HS_VERSION " -- see what each attention head of a small transformer does.\n\n"
                "commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(fp, "  %-8s  %s\n", COMMANDS[i].name, COMMANDS[i].summary);
    fprintf(fp, "\nExit status: 0 success, 1 user error (one line on stderr), 2 usage error.\n");
}

/* Starts this program again with OPENBLAS_CORETYPE set when OpenBLAS chose
 * kernels older than the CPU (hs_blas_core_advice); returns when there is
 * nothing to do or the exec fails (the run goes on, slower). Not under
 * valgrind (its preload in LD_PRELOAD): the new image would run outside it;
 * not when started through the dynamic loader. No loop: the new image has
 * the variable set, and the advice is then NULL. */
static void blas_core_reexec(char **argv)
{
    const char *core = hs_blas_core_advice();
    const char *pre = getenv("LD_PRELOAD");
    if (core == NULL || (pre && strstr(pre, "vgpreload"))) return;
    /* started through the dynamic loader (ld-linux... ./headscope): the
     * image is the loader, which would take argv[1] for the program */
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return;
    exe[n] = '\0';
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    if (strncmp(base, "ld-", 3) == 0 || strncmp(base, "ld.so", 5) == 0) return;
    if (setenv("OPENBLAS_CORETYPE", core, 1) != 0) return;
    execv("/proc/self/exe", argv);
    unsetenv("OPENBLAS_CORETYPE");
}

int main(int argc, char **argv)
{
    blas_core_reexec(argv);
    hs_blas_one_thread(); /* no OpenBLAS helper polling beside the command */
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("headscope %s (OpenBLAS core %s)\n", HS_VERSION, hs_blas_core());
        return 0;
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(argv[1], COMMANDS[i].name) == 0) return COMMANDS[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "headscope: unknown command '%s' (try: headscope --help)\n", argv[1]);
    return 2;
}
