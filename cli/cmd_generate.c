/*
 * cli/cmd_generate.c -- `headscope generate`: a text model continues a prompt
 * (hs_text_generate, tasks/text.c). Thin: loads, encodes, calls, decodes,
 * prints.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "expout.h"
#include "tasks/text.h"
#include "util.h"

static const char GENERATE_HELP[] =
    "usage: headscope generate --model M --prompt TEXT [--max-new-tokens N]\n"
    "                          [--temperature T] [--top-k K] [--seed S] [--json]\n"
    "\n"
    "Continues TEXT with a model's tokenizer and weights, one token at a time (each a\n"
    "forward of the last n_ctx tokens), and prints the prompt and its continuation\n"
    "(without the BOS token a BPE tokenizer prepends, e.g. GPT-2's <|endoftext|>).\n"
    "  --max-new-tokens N  tokens to add (default 100)\n"
    "  --temperature T     softmax temperature (default 1; 0 = greedy)\n"
    "  --top-k K           draw among the K most likely tokens (default 0: all;\n"
    "                      1 = greedy: the argmax, ties to the lowest id)\n"
    "  --seed S            the draws' seed (default 0): the same seed, the same text\n"
    "  --json              {\"prompt_ids\", \"ids\", \"text\"}: ids the exact form, the\n"
    "                      prepended BOS first in both; text without it\n";

int cmd_generate(int argc, char **argv)
{
    enum { O_MODEL = 256, O_PROMPT, O_MAX, O_TEMP, O_TOPK, O_SEED, O_JSON };
    static const struct option opts[] = {{"model", required_argument, 0, O_MODEL},
                                         {"prompt", required_argument, 0, O_PROMPT},
                                         {"max-new-tokens", required_argument, 0, O_MAX},
                                         {"temperature", required_argument, 0, O_TEMP},
                                         {"top-k", required_argument, 0, O_TOPK},
                                         {"seed", required_argument, 0, O_SEED},
                                         {"json", no_argument, 0, O_JSON},
                                         CLI_HELP_OPT,
                                         {0, 0, 0, 0}};
    const char *C = "generate", *model = NULL, *prompt = NULL;
    hs_gen_opts go = {100, 1.0, 0, 0};
    int json = 0, c;
    long v;
    double d;
    unsigned long long seed = 0;
    cli_opts op = {.cmd = C, .help = GENERATE_HELP};
    while ((c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END) {
        switch (c) {
        case CLI_OPT_EXIT: return op.status;
        case O_MODEL: model = optarg; break;
        case O_PROMPT: prompt = optarg; break;
        case O_MAX:
            if (cli_parse_int(optarg, 0, 1000000, &v))
                return cli_usage_error(C, "--max-new-tokens needs an integer in [0, 1000000], got '%s'", optarg);
            go.max_new = (int)v;
            break;
        case O_TEMP:
            if (cli_parse_float(optarg, 0.0, 1000.0, &d))
                return cli_usage_error(C, "--temperature needs a number in [0, 1000], got '%s'", optarg);
            go.temperature = d;
            break;
        case O_TOPK:
            if (cli_parse_int(optarg, 0, 10000000, &v))
                return cli_usage_error(C, "--top-k needs a non-negative integer, got '%s'", optarg);
            go.top_k = (int)v;
            break;
        case O_SEED:
            if (cli_parse_u64(optarg, &seed))
                return cli_usage_error(C, "--seed needs a non-negative integer, got '%s'", optarg);
            go.seed = seed;
            break;
        case O_JSON: json = 1; break;
        }
    }
    int rest = cli_args_end(C, argc, argv, optind, model);
    if (rest) return rest;
    if (prompt == NULL) return cli_usage_error(C, "--prompt TEXT is required");
    hs_loaded L;
    int rc = cli_load_src(C, model, HS_NEED_VOCAB, NULL, &L);
    if (rc) return rc;
    hs_error err = {0};
    hs_tokens tk = {0};
    int *ids = NULL;
    size_t n = 0;
    char *text = NULL;
    hs_status st = hs_tok_encode(L.vocab, prompt, 0, &tk, &err);
    if (st == HS_OK) st = hs_text_generate(L.model, tk.ids, tk.n, &go, &ids, &n, &err);
    /* the text leaves out the BOS encode prepended, as TL's generate returns
     * its string (the ids keep it: the exact form the model read) */
    const size_t skip = tk.n > 0 && hs_tok_bos(L.vocab) >= 0 && tk.ids[0] == hs_tok_bos(L.vocab);
    if (st == HS_OK) st = hs_tok_decode(L.vocab, ids + skip, n - skip, &text, &err);
    /* printed and in JSON as valid UTF-8: ids that cut a character give an
     * ill-formed part, shown as U+FFFD as Hugging Face's decode does (the ids
     * are the exact form) */
    char *lossy = NULL;
    if (st == HS_OK && (lossy = hs_utf8_lossy_dup(text)) == NULL)
        st = hs_fail(&err, HS_ERR_NOMEM, "out of memory");
    if (lossy != NULL) {
        free(text);
        text = lossy;
    }
    if (st != HS_OK) {
        hs_tokens_free(&tk);
        free(ids);
        hs_loaded_free(&L);
        return cli_error(C, &err);
    }
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON *pi = cJSON_AddArrayToObject(o, "prompt_ids"), *ai = cJSON_AddArrayToObject(o, "ids");
        for (size_t i = 0; i < tk.n; i++) cJSON_AddItemToArray(pi, cJSON_CreateNumber(tk.ids[i]));
        for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(ai, cJSON_CreateNumber(ids[i]));
        cJSON_AddStringToObject(o, "text", text);
        char *out = hs_json_print(o);
        if (out) puts(out);
        free(out);
        cJSON_Delete(o);
    } else {
        fputs(text, stdout);
        fputc('\n', stdout);
    }
    free(text);
    hs_tokens_free(&tk);
    free(ids);
    hs_loaded_free(&L);
    return cli_stdout_done(C);
}
