/* cli/expout.c -- see expout.h. */
#include "expout.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void cli_exp_init(cli_exp *x, const char *cmd)
{
    memset(x, 0, sizeof *x);
    x->cmd = cmd;
    hs_figopts_default(&x->fo, 300);
}

int cli_exp_open(cli_exp *x, int prompt_flags)
{
    hs_error err = {0};
    /* the pool first: the load splits its scan of the weights over it */
    if (hs_pool_create(x->threads, &x->pool, &err) != HS_OK) return cli_error(x->cmd, &err);
    x->from.pool = x->pool;
    int lrc = cli_load_src(x->cmd, x->model, HS_NEED_VOCAB, &x->from, &x->Ld);
    if (lrc) return lrc;
    const int n_ctx = x->Ld.model->cfg.n_ctx;
    hs_status st = x->data ? hs_prompts_load(x->data, x->Ld.vocab, n_ctx, prompt_flags, &x->p, &err)
                           : hs_prompts_sentence(x->sentence, x->Ld.vocab, n_ctx, &x->p, &err);
    if (st != HS_OK) return cli_error(x->cmd, &err);
    if (x->p.unspaced_line) { /* issue 34: "Mary" where a word before it makes GPT-2 predict " Mary" */
        const hs_notes notes = cli_notes(x->cmd);
        hs_note(&notes, HS_NOTE_CMD, "note: %s:%d: answer '%s' (token %d) has no leading space; "
                "' %s' is one token too (%d), the form that follows a word", x->data, x->p.unspaced_line,
                hs_tok_str(x->Ld.vocab, x->p.unspaced_id), x->p.unspaced_id,
                hs_tok_str(x->Ld.vocab, x->p.unspaced_id), x->p.spaced_id);
    }
    const char *inputs[] = {x->model, x->data, NULL};
    if (x->out && (cli_figopts_font(x->cmd, &x->fo) ||
                   cli_outdir_open(&x->od, x->cmd, x->out, &x->fo, inputs)))
        return 1;
    x->od.pool = x->pool; /* the figures are drawn on it too */
    cli_progress_init(&x->prog, x->cmd);
    hs_pool_set_progress(x->pool, cli_progress_print, &x->prog);
    return 0;
}

int cli_exp_finish(cli_exp *x, cJSON *json, const char *name, const char *shows, hs_buf *summary)
{
    cJSON *cfg = hs_config_to_json(&x->Ld.model->cfg, HS_CONFIG_JSON_ALL);
    if (!cfg || !cJSON_AddItemToObject(json, "config", cfg) || !cJSON_AddStringToObject(json, "model", x->model)) {
        if (cfg && !cJSON_GetObjectItem(json, "config")) cJSON_Delete(cfg);
        fprintf(stderr, "headscope %s: out of memory\n", x->cmd);
        return 1;
    }
    hs_model_destroy(x->Ld.model); /* nothing reads the weights again */
    x->Ld.model = NULL;
    if (x->out) {
        hs_error err = {0};
        cJSON *extra = cJSON_CreateObject();
        hs_status st = !extra || !cJSON_AddStringToObject(extra, "model", x->model)
                           ? hs_fail(&err, HS_ERR_NOMEM, "out of memory")
                           : hs_outdir_json(&x->od, name, json, shows, &err);
        if (st == HS_OK) st = hs_outdir_commit(&x->od, extra, &err);
        cJSON_Delete(extra);
        if (st != HS_OK) return cli_error(x->cmd, &err);
    }
    char *s = x->json ? hs_json_print(json) : NULL;
    hs_buf what = {0};
    if (x->out) hs_buf_printf(&what, "%s.json, figures", name);
    if ((x->json && !s) || what.oom) {
        free(s);
        hs_buf_free(&what);
        fprintf(stderr, "headscope %s: out of memory\n", x->cmd);
        return 1;
    }
    if (s) {
        printf("%s\n", s);
    } else {
        fputs(summary->s ? summary->s : "", stdout);
        if (x->out) {
            fputc('\n', stdout);
            cli_out_say_wrote(&x->od, what.s);
        }
    }
    free(s);
    hs_buf_free(&what);
    if (cli_stdout_done(x->cmd)) return 1;
    cli_say_threads(x->cmd, x->threads);
    return 0;
}

int cli_exp_print_report(const cli_exp *x, const char *out, cJSON *json, hs_buf *summary, int n_files)
{
    char *s = x->json && json ? hs_json_print(json) : NULL;
    cJSON_Delete(json);
    const int oom = x->json ? s == NULL : summary->oom;
    if (!oom && s) printf("%s\n", s);
    if (!oom && !s) {
        fputs(summary->s ? summary->s : "", stdout);
        if (out) printf("wrote %d files to %s (listed in %s/index.json)\n", n_files, out, out);
    }
    free(s);
    hs_buf_free(summary);
    if (oom) return cli_error(x->cmd, &(hs_error){HS_ERR_NOMEM, "out of memory"});
    if (cli_stdout_done(x->cmd)) return 1;
    cli_say_threads(x->cmd, x->threads);
    return 0;
}

void cli_exp_close(cli_exp *x)
{
    hs_outdir_close(&x->od);
    hs_pool_destroy(x->pool);
    hs_prompts_free(&x->p);
    hs_loaded_free(&x->Ld);
    hs_figopts_free(&x->fo);
}

int cli_exp_option(cli_exp *x, int code, const char *arg, const char *bad)
{
    switch (code) {
    case CLI_EXP_MODEL: x->model = arg; return 0;
    case CLI_EXP_DATA: x->data = arg; return 0;
    case CLI_EXP_SENTENCE: x->sentence = arg; return 0;
    case CLI_EXP_OUT: x->out = arg; return 0;
    case CLI_EXP_JSON: x->json = 1; return 0;
    case CLI_EXP_THREADS: return cli_parse_threads(x->cmd, arg, &x->threads) ? 2 : 0;
    default: return cli_command_option(x->cmd, code, arg, bad, &x->from, &x->fo);
    }
}

int cli_exp_check(const cli_exp *x, int argc, char **argv, int sentence_ok)
{
    int rest = cli_args_end(x->cmd, argc, argv, optind, x->model);
    if (rest) return rest;
    if (!sentence_ok && !x->data) return cli_usage_error(x->cmd, "--data FILE is required (a JSONL prompt set)");
    if (sentence_ok && !x->data == !x->sentence)
        return cli_usage_error(x->cmd, "give one of --data FILE or --sentence S");
    return 0;
}

int cli_opt_next(cli_opts *o, int argc, char **argv, const struct option *opts)
{
    if (!o->started) {
        optind = 1;
        opterr = 0;
        o->started = 1;
    }
    for (;;) {
        const int c = getopt_long(argc, argv, "", opts, NULL);
        if (c == -1) return CLI_OPT_END;
        if (c >= CLI_OPT_OWN_FIRST && c < CLI_OPT_OWN_END) return c;
        const char *given = argv[optind - 1];
        if (c == CLI_O_HELP && o->help) {
            fputs(o->help, stdout);
            if (o->fo || o->exp) fputs(CLI_FIGOPTS_HELP, stdout);
            o->status = 0;
            return CLI_OPT_EXIT;
        }
        if (o->exp) o->status = cli_exp_option(o->exp, c, optarg, given) ? 2 : 0;
        else if (o->src) o->status = cli_command_option(o->cmd, c, optarg, given, o->src, o->fo);
        else if (o->fo) o->status = cli_figopts_option(o->cmd, c, optarg, given, o->fo);
        else o->status = cli_usage_error(o->cmd, "unknown or incomplete option '%s'", given);
        if (o->status) return CLI_OPT_EXIT;
    }
}
