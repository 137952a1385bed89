/*
 * cli/cmd_bpe.c -- `headscope bpe`: trains a byte-level BPE on a corpus
 * (hs_corpus_read + hs_bpe_train, tokenize/bpe_train.c) and writes its
 * tokenizer.json (checked by reading it back with hs_tokenizer_from_hf_json
 * before it is written). Thin: parses, calls, prints.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "expout.h"
#include "tokenize/tokenize.h"
#include "util.h"

static const char BPE_HELP[] =
    "usage: headscope bpe --corpus FILE... --vocab-size N --out tokenizer.json [--force]\n"
    "\n"
    "Trains a byte-level BPE (GPT-2's scheme) on the corpus and writes it as a\n"
    "Hugging Face tokenizer.json, which `train --task text --tokenizer`,\n"
    "`tokenize --model DIR` and Hugging Face tokenizers read.\n"
    "\n"
    "  --corpus FILE...   text files (UTF-8), read as they are; merges never cross\n"
    "                     GPT-2's pre-tokens or a file's end\n"
    "  --vocab-size N     tokens: the 256 bytes (ids 0..255) and the merges' tokens\n"
    "                     (257 to 1000000; the chapter's is 1024)\n"
    "  --out FILE         the tokenizer.json to write\n"
    "  --force            replace --out when the file exists\n"
    "\n"
    "Each round merges the most frequent adjacent pair of tokens (counted over\n"
    "every position of every pre-token), ties to the smallest pair of ids (left,\n"
    "then right). Deterministic. Prints the corpus's characters per token.\n";

int cmd_bpe(int argc, char **argv)
{
    enum { O_CORPUS = 256, O_VOCAB, O_OUT, O_FORCE };
    static const struct option opts[] = {{"corpus", required_argument, 0, O_CORPUS},
                                         {"vocab-size", required_argument, 0, O_VOCAB},
                                         {"out", required_argument, 0, O_OUT},
                                         {"force", no_argument, 0, O_FORCE},
                                         CLI_HELP_OPT,
                                         {0, 0, 0, 0}};
    const char *C = "bpe", *out = NULL;
    const char **given = calloc((size_t)argc + 1, sizeof *given);
    int n_given = 0, force = 0, c;
    long vocab = -1;
    if (!given) return cli_usage_error(C, "out of memory");
    cli_opts op = {.cmd = C, .help = BPE_HELP};
    while ((c = cli_opt_next(&op, argc, argv, opts)) != CLI_OPT_END) {
        switch (c) {
        case CLI_OPT_EXIT: free(given); return op.status;
        case O_CORPUS: given[n_given++] = optarg; break;
        case O_VOCAB:
            if (cli_parse_int(optarg, 257, HS_BPE_TRAIN_MAX_VOCAB, &vocab)) {
                free(given);
                return cli_usage_error(C, "--vocab-size needs an integer from 257 (the 256 bytes "
                                       "and one merge) to %d, got '%s'", HS_BPE_TRAIN_MAX_VOCAB,
                                       optarg);
            }
            break;
        case O_OUT: out = optarg; break;
        case O_FORCE: force = 1; break;
        }
    }
    const char **files = NULL;
    const int n = cli_corpus_files(C, given, n_given, argc, argv, optind, &files);
    free(given);
    if (n < 0) return 2;
    if (vocab < 0 || out == NULL) {
        free(files);
        return cli_usage_error(C, "%s is required", vocab < 0 ? "--vocab-size N" : "--out FILE");
    }
    hs_error err = {0};
    hs_corpus corpus = {0};
    hs_bpe_trained b = {0};
    hs_tokenizer *tok = NULL;
    const hs_notes notes = cli_notes(C);
    hs_status st = hs_check_new_file("--out", out, force, &err);
    if (st == HS_OK) st = hs_corpus_read(files, (size_t)n, &corpus, &err);
    if (st == HS_OK) st = hs_bpe_train(&corpus, (int)vocab, &notes, &b, &err);
    if (st == HS_OK) st = hs_tokenizer_from_hf_json(b.json, b.json_len, out, &tok, &err);
    if (st == HS_OK) st = hs_write_file_atomic(out, b.json, b.json_len, &err);
    free(files);
    if (st != HS_OK) {
        hs_bpe_trained_free(&b);
        hs_corpus_free(&corpus);
        return cli_error(C, &err);
    }
    printf("corpus: %zu file%s, %zu bytes, %zu characters, %zu pre-tokens (%zu distinct)\n",
           corpus.n, corpus.n == 1 ? "" : "s", b.bytes, b.chars, b.pieces, b.unique_pieces);
    printf("vocabulary %zu (256 bytes + %zu merges): %zu tokens, %.3f characters per token, "
           "%.3f bytes per token\n", b.V, b.n_merges, b.tokens,
           b.tokens ? (double)b.chars / (double)b.tokens : 0.0,
           b.tokens ? (double)b.bytes / (double)b.tokens : 0.0);
    printf("wrote %s\n", out);
    hs_tokenizer_destroy(tok);
    hs_bpe_trained_free(&b);
    hs_corpus_free(&corpus);
    return cli_stdout_done(C);
}
