/* cli/util.c -- see util.h. */
#define _POSIX_C_SOURCE 200809L
#include "util.h"
#include "model/checkpoint.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <utf8proc.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

/* Prints "headscope CMD: MSG" with every character that could change how the
 * line displays shown as <U+XXXX> (hs_buf_put_visible): messages may quote
 * what the user typed or a checkpoint holds. */
static void print_visible(const char *cmd, const char *msg, const char *tail)
{
    hs_buf b = {0};
    hs_buf_put_visible(&b, msg);
    fprintf(stderr, "headscope %s: %s%s\n", cmd, b.oom ? "(out of memory)" : b.s ? b.s : "", tail);
    hs_buf_free(&b);
}

int cli_error(const char *cmd, const hs_error *err)
{
    print_visible(cmd, err->msg, "");
    return 1;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    hs_buf b = {0};
    va_list ap;
    va_start(ap, fmt);
    hs_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    char *msg = hs_buf_take(&b);
    char *tail = hs_strfmt(" (try: headscope %s --help)", cmd);
    if (msg && tail)
        print_visible(cmd, msg, tail);
    else
        fprintf(stderr, "headscope %s: out of memory\n", cmd);
    free(msg);
    free(tail);
    return 2;
}

int cli_args_end(const char *cmd, int argc, char **argv, int next, const char *model)
{
    if (next < argc) return cli_usage_error(cmd, "unexpected argument '%s'", argv[next]);
    if (!model) return cli_usage_error(cmd, "--model FILE is required");
    return 0;
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

int cli_source_opt(const char *cmd, int c, const char *arg, hs_load_source *src)
{
    switch (c) {
    case CLI_O_VOCAB: src->vocab = arg; return 1;
    case CLI_O_PROCESS:
        if (strcmp(arg, "tl") != 0 && strcmp(arg, "raw") != 0) {
            cli_usage_error(cmd, "--process needs tl or raw, got '%s'", arg);
            return -1;
        }
        src->process = arg;
        return 1;
    case CLI_O_NO_BOS: src->no_bos = 1; return 1;
    case CLI_O_NO_SPECIAL: src->no_special = 1; return 1;
    case CLI_O_HELDOUT_PAIRS: src->heldout_pairs = arg; return 1;
    case CLI_O_SPLIT_SEED:
        if (cli_parse_u64(arg, &src->split_seed)) {
            cli_usage_error(cmd, "--split-seed needs a whole number >= 0, got '%s'", arg);
            return -1;
        }
        src->has_split_seed = 1;
        return 1;
    default: return 0;
    }
}

int cli_load_src(const char *cmd, const char *path, int need, const hs_load_source *src,
                 hs_loaded *out)
{
    hs_error err = {0};
    const hs_notes notes = cli_notes(cmd);
    if (src && src->has_split_seed && src->heldout_pairs) {
        memset(out, 0, sizeof *out);
        return cli_usage_error(cmd, "give --split-seed or --heldout-pairs, not both");
    }
    struct stat sb;
    if (path && stat(path, &sb) != 0 && errno == ENOENT) {
        memset(out, 0, sizeof *out);
        /* a file's name (a checkpoint headscope wrote) is a typo or a moved
           file; a bare name ("gpt2") is a model the user hoped we would fetch */
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        if (strchr(base, '.'))
            hs_fail(&err, HS_ERR_IO, "cannot open %s: No such file or directory", path);
        else
            hs_fail(&err, HS_ERR_IO, "cannot open %s: No such file or directory; headscope never downloads: fetch "
                    "the model folder first (e.g. `git clone https://huggingface.co/openai-community/gpt2`) and "
                    "give its path", path);
        return cli_error(cmd, &err);
    }
    return hs_load(path, need, src, &notes, out, &err) != HS_OK ? cli_error(cmd, &err) : 0;
}

static void print_note(void *ctx, hs_note_kind kind, const char *line)
{
    if (kind == HS_NOTE_CMD) fprintf(stderr, "headscope %s: %s\n", (const char *)ctx, line);
    else fprintf(stderr, "%s\n", line);
}

hs_notes cli_notes(const char *cmd)
{
    hs_notes n = {print_note, (void *)(uintptr_t)cmd};
    return n;
}

int cli_parse_threads(const char *cmd, const char *s, int *out)
{
    long v;
    const int cpus = hs_pool_cpus();
    if (cli_parse_int(s, 0, cpus, &v))
        return cli_usage_error(cmd, "--threads needs an integer in [0, %d] (0 = all %d CPUs of this machine), got '%s'",
                               cpus, cpus, s);
    *out = (int)v;
    return 0;
}

int cli_parse_heads(const char *s, hs_head *sel, int *n)
{
    *n = 0;
    const char *p = s;
    while (1) {
        int l, h, used = 0;
        if (sscanf(p, "L%dH%d%n", &l, &h, &used) != 2 || used == 0 || l < 0 || h < 0) return -1;
        /* no signs or spaces inside a name */
        for (int k = 0; k < used; k++)
            if (p[k] == '-' || p[k] == '+' || p[k] == ' ') return -1;
        if (*n >= CLI_MAX_HEADS) return -1;
        sel[*n].layer = l;
        sel[*n].head = h;
        (*n)++;
        p += used;
        if (*p == '\0') return 0;
        if (*p != ',') return -1;
        p++;
    }
}

void cli_say_threads(const char *cmd, int threads)
{
    if (threads <= 0) return; /* the default, every CPU: nothing to say */
    const int cpus = hs_pool_cpus();
    fprintf(stderr, "headscope %s: threads: %d of %d CPU%s\n", cmd, threads, cpus, cpus == 1 ? "" : "s");
}

int cli_stdout_done(const char *cmd)
{
    if (fflush(stdout) == 0 && !ferror(stdout)) return 0;
    fprintf(stderr, "headscope %s: cannot write to stdout\n", cmd);
    return 1;
}

hs_status cli_open_tokenizer(const char *m, hs_tokenizer **out, hs_error *err)
{
    struct stat sb;
    *out = NULL;
    if (stat(m, &sb) == 0 && S_ISDIR(sb.st_mode)) return hs_tokenizer_load_dir(m, out, err);
    hs_st_file f = {0};
    hs_status st = hs_safetensors_read(m, &f, err);
    if (st != HS_OK) return st;
    const char *vocab = hs_st_meta(&f, "vocab");
    if (vocab == NULL)
        st = hs_fail(err, HS_ERR_INPUT, "%s has no vocab metadata (no word list); a model "
                     "folder holds its tokenizer files", m);
    else if ((st = hs_tokenizer_from_json(vocab, out, err)) != HS_OK) {
        const hs_error inner = *err;
        st = hs_fail(err, st, "%s: %s", m, inner.msg);
    }
    hs_st_file_free(&f);
    return st;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cli_progress_init(cli_progress *p, const char *cmd)
{
    memset(p, 0, sizeof *p);
    p->cmd = cmd;
    p->tty = isatty(2);
    p->every = 5.0;
    const char *e = getenv("HEADSCOPE_PROGRESS");
    if (e && strcmp(e, "off") == 0) p->every = -1.0;
    else if (e && *e) {
        char *end = NULL;
        const double v = strtod(e, &end);
        if (end && *end == '\0' && v >= 0.0 && v < 1e6) p->every = v;
    }
    p->t0 = now_s();
}

void cli_progress_print(void *ctx, const char *what, long done, long total)
{
    cli_progress *p = ctx;
    if (p->every < 0.0) return; /* HEADSCOPE_PROGRESS=off */
    const double t = now_s();
    /* a new phase: another name, or the same counting again from the start */
    if (strncmp(p->what, what, sizeof p->what - 1) != 0 || done <= p->d_last) {
        if (p->shown && p->tty) fputc('\n', stderr);
        snprintf(p->what, sizeof p->what, "%s", what);
        p->t_what = t;
        p->d_what = done;
        p->shown = 0;
    }
    p->d_last = done;
    const int end = done >= total;
    /* seconds left at the rate since the phase's first report */
    const double el = t - p->t_what;
    const double eta = done > p->d_what ? el / (double)(done - p->d_what) * (double)(total - done) : -1.0;
    char eta_s[32];
    if (eta >= 0.0) snprintf(eta_s, sizeof eta_s, "%.0fs", eta);
    else snprintf(eta_s, sizeof eta_s, "?");
    if (p->tty) {
        /* nothing in the first 2 s (HEADSCOPE_PROGRESS=0: at once); at most 10 redraws a second */
        if (p->every > 0.0 && t - p->t0 < 2.0 && !p->shown) return;
        if (!end && p->shown && t - p->last < 0.1) return;
        char bar[21];
        const int fill = total > 0 ? (int)(20 * done / total) : 20;
        for (int i = 0; i < 20; i++) bar[i] = i < fill ? '#' : '.';
        bar[20] = '\0';
        fprintf(stderr, "\r%s: %s %ld/%ld [%s] %3.0f%% ETA %s ", p->cmd, what, done, total, bar,
                total > 0 ? 100.0 * (double)done / (double)total : 100.0, eta_s);
        if (end) fputc('\n', stderr);
        p->shown = !end;
        p->last = t;
        return;
    }
    /* plain lines: one every `every` seconds (the first `every` seconds after
     * the start), and the end of a phase that had one */
    const int due = t - (p->last > 0.0 ? p->last : p->t0) >= p->every;
    if (!due && !(end && p->shown)) return;
    fprintf(stderr, "%s: %s %ld/%ld ETA %s\n", p->cmd, what, done, total, eta_s);
    p->last = t;
    p->shown = !end;
}

int cli_corpus_files(const char *cmd, const char **given, int n_given, int argc, char **argv,
                     int next, const char ***files)
{
    *files = NULL;
    if (n_given == 0) {
        if (next < argc) cli_usage_error(cmd, "unexpected argument '%s'", argv[next]);
        else cli_usage_error(cmd, "--corpus FILE... is required");
        return -1;
    }
    const int n = n_given + (argc - next);
    *files = calloc((size_t)n + 1, sizeof **files); /* NULL-terminated too (hs_outdir's inputs) */
    if (*files == NULL) {
        cli_usage_error(cmd, "out of memory");
        return -1;
    }
    for (int i = 0; i < n_given; i++) (*files)[i] = given[i];
    for (int i = next; i < argc; i++) (*files)[n_given + i - next] = argv[i];
    return n;
}

size_t cli_term_prefix(const char *s, size_t max_cols, size_t *cols)
{
    size_t i = 0, w = 0;
    const size_t len = strlen(s);
    while (i < len) {
        utf8proc_int32_t cp;
        const utf8proc_ssize_t step = utf8proc_iterate((const utf8proc_uint8_t *)s + i,
                                                       (utf8proc_ssize_t)(len - i), &cp);
        const size_t cw = step > 0 ? (size_t)utf8proc_charwidth(cp) : 1;
        if (w + cw > max_cols) break;
        w += cw;
        i += step > 0 ? (size_t)step : 1;
    }
    *cols = w;
    return i;
}
