/*
 * cli/cmd_prompts.c -- `headscope prompts ioi`: writes a prompt set for
 * every command that reads one (patch, discover, ...). Thin: opens the model's tokenizer,
 * calls hs_ioi_generate (tasks/ioi.c), writes the file, says what went in.
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tasks/tasks.h"
#include "util.h"

static const char PROMPTS_HELP[] =
    "usage: headscope prompts ioi --model M --n N --out FILE [--force] [--seed S]\n"
    "                             [--corrupt s2|abc] [--template K]\n"
    "\n"
    "Writes an indirect-object-identification (IOI) prompt set (Wang et al. 2022,\n"
    "arXiv 2211.00593) as the ACDC code's ioi_dataset.py builds it: its 15\n"
    "templates in ABBA and BABA order (alternating), its 99 names, 8 places and\n"
    "8 objects, e.g.\n"
    "  {\"prompt\": \"Then, Mary and John went to the store. John gave a drink to\",\n"
    "   \"corrupted\": \"Then, Mary and John went to the store. Sara gave a drink to\",\n"
    "   \"answer\": \" Mary\", \"wrong\": \" John\"}\n"
    "ready for every command that reads a prompt set (--data): patch, ablate, dla,\n"
    "lens, heads, cache, discover and faithfulness (answer = the indirect object,\n"
    "wrong = the subject).\n"
    "\n"
    "  --model M          a folder with a BPE tokenizer (GPT-2's files or a\n"
    "                     tokenizer.json: Llama 2/3, Qwen 2.5, GPT-NeoX, ...); only\n"
    "                     names, places and objects that are one token with their\n"
    "                     leading space inside a prompt are used (Llama 2's\n"
    "                     '▁Mary'; the counts are printed)\n"
    "  --n N              prompts to write (1 .. 1000000)\n"
    "  --out FILE         the JSONL file (written whole or not at all); an existing\n"
    "                     file is refused, untouched, unless --force\n"
    "  --force            replace an existing --out FILE\n"
    "  --seed S           the draw's seed (default 0): same seed, same file\n"
    "  --corrupt s2       the corrupted prompt: the subject's second mention replaced\n"
    "                     by a third name (default)\n"
    "  --corrupt abc      all three names replaced by three others, all distinct (the\n"
    "                     \"ABC\" set ACDC patches from)\n"
    "  --template K       template K (0..14) only; default: every template of the most\n"
    "                     common token length (every prompt of a set has one length)\n";

/* The report on stdout: what went into the set. */
static void report(const hs_ioi_set *s, int n, const char *out)
{
    printf("wrote %d IOI prompts to %s: %d ABBA, %d BABA; %d tokens each (BOS included)\n", n, out,
           s->n_abba, s->n_baba, s->n_tokens);
    printf("templates drawn from:");
    for (int i = 0; i < s->n_templates; i++) printf(" %d", s->templates[i]);
    printf("\none token with a leading space: %d of %d names, %d of %d places, %d of %d objects\n",
           s->n_names, s->n_names_listed, s->n_places, s->n_places_listed, s->n_objects,
           s->n_objects_listed);
}

int cmd_prompts(int argc, char **argv)
{
    enum { O_MODEL = 1, O_N, O_SEED, O_OUT, O_CORRUPT, O_TEMPLATE, O_FORCE, O_HELP };
    static const struct option opts[] = {
        {"model", required_argument, 0, O_MODEL},     {"n", required_argument, 0, O_N},
        {"seed", required_argument, 0, O_SEED},       {"out", required_argument, 0, O_OUT},
        {"corrupt", required_argument, 0, O_CORRUPT}, {"template", required_argument, 0, O_TEMPLATE},
        {"force", no_argument, 0, O_FORCE},           {"help", no_argument, 0, O_HELP},
        {0, 0, 0, 0}};
    const char *C = "prompts", *model = NULL, *out = NULL;
    int force = 0;
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(PROMPTS_HELP, stdout);
        return 0;
    }
    if (argc < 2 || argv[1][0] == '-')
        return cli_usage_error(C, "give the kind of prompt set first: ioi (the only kind)");
    if (strcmp(argv[1], "ioi") != 0)
        return cli_usage_error(C, "unknown kind of prompt set '%s' (the only kind: ioi)", argv[1]);
    hs_ioi_params p = {.n = -1, .seed = 0, .corrupt = HS_IOI_CORRUPT_S2, .template_id = -1};
    long v;
    int c;
    optind = 1;
    opterr = 0;
    argc--, argv++;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_HELP: fputs(PROMPTS_HELP, stdout); return 0;
        case O_MODEL: model = optarg; break;
        case O_OUT: out = optarg; break;
        case O_FORCE: force = 1; break;
        case O_N:
            if (cli_parse_int(optarg, 1, HS_IOI_MAX_N, &v))
                return cli_usage_error(C, "--n must be an integer in [1, %d], not '%s'", HS_IOI_MAX_N, optarg);
            p.n = (int)v;
            break;
        case O_SEED: {
            unsigned long long s;
            if (cli_parse_u64(optarg, &s)) return cli_usage_error(C, "--seed must be an integer >= 0");
            p.seed = s;
            break;
        }
        case O_CORRUPT:
            if (strcmp(optarg, "s2") == 0) p.corrupt = HS_IOI_CORRUPT_S2;
            else if (strcmp(optarg, "abc") == 0) p.corrupt = HS_IOI_CORRUPT_ABC;
            else return cli_usage_error(C, "--corrupt takes s2 or abc, not '%s'", optarg);
            break;
        case O_TEMPLATE:
            if (cli_parse_int(optarg, 0, HS_IOI_N_TEMPLATES - 1, &v))
                return cli_usage_error(C, "--template must be an integer in [0, %d]", HS_IOI_N_TEMPLATES - 1);
            p.template_id = (int)v;
            break;
        default: return cli_usage_error(C, "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    int rc = cli_args_end(C, argc, argv, optind, model);
    if (rc) return rc;
    if (p.n < 0) return cli_usage_error(C, "give --n N, the number of prompts");
    if (out == NULL) return cli_usage_error(C, "give --out FILE");
    hs_tokenizer *t = NULL;
    hs_error err = {0};
    hs_ioi_set s = {0};
    if (hs_check_new_file("--out", out, force, &err) != HS_OK || hs_check_out_path(out, &err) != HS_OK ||
        cli_open_tokenizer(model, &t, &err) != HS_OK)
        return cli_error(C, &err);
    hs_status st = hs_ioi_generate(t, &p, &s, &err);
    hs_tokenizer_destroy(t);
    if (st == HS_OK) st = hs_write_file_atomic(out, s.jsonl, s.len, &err);
    if (st != HS_OK) {
        hs_ioi_set_free(&s);
        return cli_error(C, &err);
    }
    report(&s, p.n, out);
    hs_ioi_set_free(&s);
    return cli_stdout_done(C);
}
