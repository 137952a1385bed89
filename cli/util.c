/* cli/util.c -- see util.h. */
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

int cli_error(const char *cmd, const hs_error *err)
{
    fprintf(stderr, "headscope %s: %s\n", cmd, err->msg);
    return 1;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "headscope %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (try: headscope %s --help)\n", cmd);
    return 2;
}

int cli_parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int cli_parse_u64(const char *s, unsigned long long *out)
{
    char *end;
    errno = 0;
    if (s[0] == '-') return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end != '\0') return -1;
    *out = v;
    return 0;
}

int cli_parse_float(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end != '\0' || !isfinite(v) || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

void cli_loaded_free(cli_loaded *l)
{
    hs_model_destroy(l->model);
    hs_vocab_destroy(l->vocab);
    hs_winograd_destroy(l->task);
    hs_meta_free(&l->meta);
    memset(l, 0, sizeof *l);
}

int cli_load(const char *cmd, const char *path, int need_task, cli_loaded *out)
{
    hs_error err = {0};
    memset(out, 0, sizeof *out);
    int skipped = 0;
    if (hs_checkpoint_load(path, &out->model, &out->meta, &skipped, &err) != HS_OK)
        return cli_error(cmd, &err);
    if (skipped > 0)
        fprintf(stderr, "headscope %s: note: skipped %d TransformerLens buffer tensor(s) "
                        "(blocks.*.attn.mask/IGNORE)\n", cmd, skipped);
    if (out->meta.vocab == NULL) {
        fprintf(stderr, "headscope %s: %s has no vocab metadata; headscope needs the word list "
                        "to read sentences\n", cmd, path);
        cli_loaded_free(out);
        return 1;
    }
    if (hs_vocab_from_json(out->meta.vocab, &out->vocab, &err) != HS_OK) {
        cli_loaded_free(out);
        return cli_error(cmd, &err);
    }
    if ((int)out->vocab->n != out->model->cfg.d_vocab) {
        fprintf(stderr, "headscope %s: %s: vocab has %zu words but d_vocab is %d\n", cmd, path,
                out->vocab->n, out->model->cfg.d_vocab);
        cli_loaded_free(out);
        return 1;
    }
    if (out->meta.task != NULL) {
        if (hs_winograd_from_task_json(out->meta.task, out->vocab, &out->task, &err) != HS_OK) {
            cli_loaded_free(out);
            return cli_error(cmd, &err);
        }
    } else if (need_task) {
        fprintf(stderr, "headscope %s: %s has no task metadata (which task and split it was "
                        "trained on); this command needs it\n", cmd, path);
        cli_loaded_free(out);
        return 1;
    }
    return 0;
}
