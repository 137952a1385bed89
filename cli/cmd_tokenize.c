/*
 * cli/cmd_tokenize.c -- `headscope tokenize`: a model's tokenizer on a text
 * or on one JSON string a line (TransformerLens' to_tokens /
 * to_str_tokens), and back (--decode, TL's to_string). Thin: opens the
 * tokenizer (tokenize/: a folder's GPT-2 BPE files, or a checkpoint's word
 * list read from its metadata without building the model), encodes or
 * decodes with it, prints.
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "tokenize/tokenize.h"
#include "util.h"

static const char TOKENIZE_HELP[] =
    "usage: headscope tokenize --model M (--text TEXT | --jsonl FILE) [--no-bos] [--no-special]\n"
    "       headscope tokenize --model M --decode --jsonl FILE\n"
    "\n"
    "Splits text into the model's tokens, as TransformerLens' to_tokens and\n"
    "to_str_tokens do.\n"
    "\n"
    "  --model M        a folder holding a BPE tokenizer's files (a Hugging Face model\n"
    "                   folder: tokenizer.json -- GPT-2, GPT-NeoX/Pythia, Llama 2/3,\n"
    "                   SmolLM, Qwen 2.5, TinyLlama, Mistral --, or GPT-2's\n"
    "                   vocab.json + merges.txt or encoder.json + vocab.bpe), or a\n"
    "                   headscope checkpoint (its word list)\n"
    "  --text TEXT      prints one line per token: position, id, and the token as\n"
    "                   figures show it (GPT-2: a leading space as `·`, a newline\n"
    "                   as `↵`, a tab as `→`, other controls as Control Pictures)\n"
    "  --jsonl FILE     reads one JSON string a line and writes one JSON object a\n"
    "                   line to stdout: {\"ids\": [...], \"tokens\": [...]}, the tokens\n"
    "                   as exact strings (a byte that is not UTF-8 on its own as\n"
    "                   U+FFFD: the ids are the exact form); FILE - is stdin\n"
    "  --no-bos         no BOS token first (GPT-2's <|endoftext|>, 50256, Llama's\n"
    "                   <s> or <|begin_of_text|>: TransformerLens prepends it by\n"
    "                   default; --text \"\" is then the BOS alone)\n"
    "  --no-special     special tokens in the text are ordinary text (their bytes),\n"
    "                   as OpenAI's encoder and Hugging Face's split_special_tokens;\n"
    "                   by default \"<|endoftext|>\" in a GPT-2 text is the one\n"
    "                   token 50256, as Hugging Face and TransformerLens have it\n"
    "  --decode         with --jsonl: reads one JSON list of ids a line and writes\n"
    "                   the text they decode to as one JSON string a line (ids\n"
    "                   that cut a character: U+FFFD, as Hugging Face's decode)\n"
    "\n"
    "A tokenizer.json is run as Hugging Face tokenizers runs it (normalizer,\n"
    "pre-tokenizers, BPE, decoder); GPT-2's text is split exactly as OpenAI's\n"
    "encoder does. Nothing is written when a line is refused.\n";

/* --text: "position<TAB>id<TAB>display form" a token (terminal policy). */
static int print_text(const char *C, const hs_tokenizer *t, const char *text)
{
    hs_tokens tk = {0};
    hs_error err = {0};
    if (hs_tok_encode(t, text, 0, &tk, &err) != HS_OK) return cli_error(C, &err);
    if (tk.folded) fprintf(stderr, "headscope %s: note: folded the text to lower case\n", C);
    int oom = 0;
    for (size_t i = 0; i < tk.n && !oom; i++) {
        hs_buf d = {0}, line = {0};
        hs_tok_display(t, tk.ids[i], &d);
        hs_buf_printf(&line, "%zu\t%d\t", i, tk.ids[i]);
        hs_buf_put_visible(&line, d.s ? d.s : "");
        oom = d.oom || line.oom;
        if (!oom) printf("%s\n", line.s);
        hs_buf_free(&d);
        hs_buf_free(&line);
    }
    hs_tokens_free(&tk);
    if (oom) {
        fprintf(stderr, "headscope %s: out of memory\n", C);
        return 1;
    }
    return cli_stdout_done(C);
}

/* One --jsonl line (NUL-terminated) to its output line appended to o;
 * *folded set when encoding folded case. */
static hs_status jsonl_line(const hs_tokenizer *t, const char *s, int decode, hs_buf *o,
                            int *folded, hs_error *err)
{
    hs_status st = HS_OK;
    cJSON *in = cJSON_Parse(s), *res = NULL;
    char *text = NULL;
    if (!decode) {
        hs_tokens tk = {0};
        if (!cJSON_IsString(in)) {
            st = hs_fail(err, HS_ERR_INPUT, "not one JSON string");
        } else if ((st = hs_tok_encode(t, in->valuestring, 0, &tk, err)) == HS_OK) {
            *folded |= tk.folded;
            res = cJSON_CreateObject();
            cJSON *ids = cJSON_AddArrayToObject(res, "ids"), *toks = cJSON_AddArrayToObject(res, "tokens");
            for (size_t i = 0; ids && toks && i < tk.n; i++) {
                cJSON_AddItemToArray(ids, cJSON_CreateNumber(tk.ids[i]));
                cJSON_AddItemToArray(toks, cJSON_CreateString(tk.strs[i]));
            }
        }
        hs_tokens_free(&tk);
    } else {
        const int n = cJSON_IsArray(in) ? cJSON_GetArraySize(in) : -1;
        int *ids = malloc(((size_t)(n > 0 ? n : 1)) * sizeof *ids), k = 0;
        const cJSON *list = cJSON_IsArray(in) ? in : NULL, *e;
        cJSON_ArrayForEach(e, list) {
            if (ids && cJSON_IsNumber(e) && e->valuedouble >= 0 && e->valuedouble < 1 << 30 &&
                e->valuedouble == (int)e->valuedouble)
                ids[k] = (int)e->valuedouble;
            else
                break;
            k++;
        }
        if (n < 0 || k != n)
            st = hs_fail(err, HS_ERR_INPUT, "not one JSON list of token ids (integers >= 0)");
        else st = hs_tok_decode(t, ids, (size_t)n, &text, err);
        /* ids that cut a character: each ill-formed part one U+FFFD, as
         * Hugging Face's decode (a JSON string holds valid UTF-8 only) */
        char *lossy = st == HS_OK ? hs_utf8_lossy_dup(text) : NULL;
        if (st == HS_OK && !lossy) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        if (st == HS_OK) res = cJSON_CreateString(lossy);
        free(lossy);
        free(ids);
    }
    char *j = res ? cJSON_PrintUnformatted(res) : NULL;
    if (st == HS_OK && !j) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (st == HS_OK) hs_buf_printf(o, "%s\n", j);
    cJSON_free(j);
    cJSON_Delete(res);
    cJSON_Delete(in);
    free(text);
    return st;
}

/* --jsonl FILE: every line converted first, then all printed. */
static int run_jsonl(const char *C, const hs_tokenizer *t, const char *path, int decode)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    hs_error err = {0};
    if (!f) {
        hs_fail(&err, HS_ERR_IO, "cannot read %s", path);
        return cli_error(C, &err);
    }
    hs_buf o = {0};
    char *line = NULL;
    size_t cap = 0, no = 0;
    ssize_t len;
    hs_status st = HS_OK;
    int folded = 0;
    while (st == HS_OK && (len = getline(&line, &cap, f)) >= 0) {
        no++;
        if (len > 0 && line[len - 1] == '\n') line[--len] = '\0';
        if (len > 0 && line[len - 1] == '\r') line[--len] = '\0';
        if (strlen(line) != (size_t)len) {
            st = hs_fail(&err, HS_ERR_INPUT, "a NUL byte");
        } else {
            st = jsonl_line(t, line, decode, &o, &folded, &err);
        }
        if (st != HS_OK) {
            hs_error e = err;
            hs_fail(&err, st, "%s:%zu: %s", path, no, e.msg);
        }
    }
    if (st == HS_OK && ferror(f)) st = hs_fail(&err, HS_ERR_IO, "cannot read %s", path);
    if (f != stdin) fclose(f);
    free(line);
    if (st == HS_OK && o.oom) st = hs_fail(&err, HS_ERR_NOMEM, "out of memory");
    if (st == HS_OK && folded)
        fprintf(stderr, "headscope %s: note: folded the text to lower case\n", C);
    if (st == HS_OK && o.len) fwrite(o.s, 1, o.len, stdout);
    hs_buf_free(&o);
    return st != HS_OK ? cli_error(C, &err) : cli_stdout_done(C);
}

int cmd_tokenize(int argc, char **argv)
{
    enum { O_MODEL = 1, O_TEXT, O_JSONL, O_NO_BOS, O_DECODE, O_HELP, O_NO_SPECIAL };
    static const struct option opts[] = {
        {"model", required_argument, 0, O_MODEL}, {"text", required_argument, 0, O_TEXT},
        {"jsonl", required_argument, 0, O_JSONL}, {"no-bos", no_argument, 0, O_NO_BOS},
        {"decode", no_argument, 0, O_DECODE},     {"help", no_argument, 0, O_HELP},
        {"no-special", no_argument, 0, O_NO_SPECIAL},
        {0, 0, 0, 0}};
    const char *C = "tokenize", *model = NULL, *text = NULL, *jsonl = NULL;
    int c, no_bos = 0, decode = 0, no_special = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_HELP: fputs(TOKENIZE_HELP, stdout); return 0;
        case O_MODEL: model = optarg; break;
        case O_TEXT: text = optarg; break;
        case O_JSONL: jsonl = optarg; break;
        case O_NO_BOS: no_bos = 1; break;
        case O_DECODE: decode = 1; break;
        case O_NO_SPECIAL: no_special = 1; break;
        default: return cli_usage_error(C, "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    int rc = cli_args_end(C, argc, argv, optind, model);
    if (rc) return rc;
    if ((text != NULL) == (jsonl != NULL)) return cli_usage_error(C, "give --text TEXT or --jsonl FILE");
    if (decode && !jsonl) return cli_usage_error(C, "--decode reads --jsonl FILE (lists of ids)");
    hs_tokenizer *t = NULL;
    hs_error err = {0};
    if (cli_open_tokenizer(model, &t, &err) != HS_OK) return cli_error(C, &err);
    if (no_bos) hs_tok_set_bos(t, 0);
    if (no_special) hs_tok_set_special(t, 0);
    rc = text ? print_text(C, t, text) : run_jsonl(C, t, jsonl, decode);
    hs_tokenizer_destroy(t);
    return rc;
}
