/*
 * common/common.h -- the base every headscope module may use: status codes,
 * error messages, atomic file writes, and text (a growable string buffer,
 * UTF-8 decoding, the one float format, the one JSON printer). It knows
 * nothing of models, tasks, probes or figures (DESIGN.md, Layout:
 * dependencies point one way).
 *
 * Error convention (STYLE.md 7): library functions return hs_status; on a
 * failure they fill a caller-owned hs_error with one line that names the
 * problem (and, where it helps, a HINT). Library code never prints and never
 * exits; only the CLI's main does.
 */
#ifndef HS_COMMON_H
#define HS_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Status codes. HS_OK is 0; every failure is non-zero. */
typedef enum {
    HS_OK = 0,
    HS_ERR_NOMEM,     /* an allocation failed */
    HS_ERR_IO,        /* open/read/write/rename/fsync failed (message has strerror) */
    HS_ERR_FORMAT,    /* a file's contents are malformed (checkpoint, JSON) */
    HS_ERR_CONFIG,    /* a config is invalid or inconsistent */
    HS_ERR_INPUT,     /* user input is invalid (unknown word, bad sentence, bad flag value) */
    HS_ERR_NUMERIC,   /* NaN/Inf where a finite number is required */
    HS_ERR_CALLBACK,  /* an observer/hook callback asked to abort */
} hs_status;

/* Short name of a status ("ok", "out of memory", ...). Static string, never NULL. */
const char *hs_status_str(hs_status st);

/* Caller-owned error buffer: one line, no trailing newline (hs_fail shows any
 * control byte in the formatted text as '?'). */
typedef struct {
    hs_status status;
    char msg[1024];
} hs_error;

/* Sets err (if not NULL) to status st and a printf-style message; returns st,
 * so `return hs_fail(err, HS_ERR_IO, "cannot open %s: %s", p, strerror(errno));`
 * works. Passing an err that is NULL is allowed (the message is dropped). */
hs_status hs_fail(hs_error *err, hs_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Notes: what a library call has to say beside its result (a note, a
 * warning: "note: folded the sentence to lower case"), handed to the
 * caller's function the moment it is known, in order. The library never
 * prints; the CLI's function prints each note as one line on stderr. A NULL
 * hs_notes (or fn) drops them. kind says how the line is shown:
 * HS_NOTE_CMD prefixed with the program and command ("headscope inspect:
 * note: DIR already holds ...": every note), HS_NOTE_PLAIN as it is (a
 * run's own report lines, e.g. train's "model: 2 layers, ..."). line is one
 * line without a newline, valid during the call only. */
typedef enum { HS_NOTE_CMD = 0, HS_NOTE_PLAIN = 1 } hs_note_kind;
typedef struct {
    void (*fn)(void *ctx, hs_note_kind kind, const char *line);
    void *ctx;
} hs_notes;

/* Formats a note (printf-style) and hands it to n->fn; does nothing when n
 * or n->fn is NULL. A note that cannot be formatted (out of memory) is
 * handed on as "(out of memory)". */
void hs_note(const hs_notes *n, hs_note_kind kind, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Programmer-error assertion, on in every build (STYLE.md 8): prints file:line
 * and aborts. Never used for user input; user input gets a status return. */
#define HS_ASSERT(cond)                                                           \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "%s:%d: internal error: assertion '%s' failed\n",     \
                    __FILE__, __LINE__, #cond);                                   \
            abort();                                                              \
        }                                                                         \
    } while (0)

/*
 * Atomic file writes: the bytes go to "<path>.tmp.<pid>" in the same folder,
 * are fsync'd, and the temp file is renamed over path; on any failure the temp
 * file is removed and whatever was at path before is left byte-identical.
 *
 * hs_check_out_path: refuses a path that exists and is not a regular file
 * (a device such as /dev/full, a FIFO, a socket, a folder), or whose parent
 * folder is missing. HS_ERR_IO with a message naming the path.
 */
hs_status hs_check_out_path(const char *path, hs_error *err);

/* A file a command would create: refused when something is already at path
 * (stat succeeds) and force is 0, since it is the user's data: HS_ERR_INPUT
 * "OPT PATH already exists; use --force to replace it" (opt: the option
 * naming it, "--out"), or, for a folder or other non-file that --force
 * would not replace either, "OPT PATH exists and is not a regular file;
 * name a file". Where it may be written is hs_check_out_path's. */
hs_status hs_check_new_file(const char *opt, const char *path, int force, hs_error *err);

/* An open atomic writer. fp is a normal FILE* to write into. */
typedef struct {
    FILE *fp;
    char *path;     /* final path (owned) */
    char *tmp;      /* temp path (owned) */
} hs_atomic_file;

/* Opens the temp file for path (after hs_check_out_path). On failure nothing
 * is created. */
hs_status hs_atomic_open(hs_atomic_file *af, const char *path, hs_error *err);
/* Flushes, fsyncs (unless deferred: hs_atomic_defer_sync), closes and
 * renames the temp file over path. Checks every write/flush/close error (a
 * full disk shows up here). On failure the temp file is removed and the old
 * file at path is untouched. Frees af's strings. */
hs_status hs_atomic_commit(hs_atomic_file *af, hs_error *err);
/* Abandons the write: closes and removes the temp file. Safe on a zeroed af. */
void hs_atomic_abort(hs_atomic_file *af);
/* For a program that writes many files into a private working folder and
 * publishes them together (the CLI's output folders): on = 1 makes
 * hs_atomic_commit skip its fsync in this process (one fsync costs ~3-5 ms on
 * a disk that honours it; inspect writes 41 files), and the caller then makes
 * everything durable with one hs_sync_fs (on a folder it opened before the
 * writes) before it moves the files where readers look. Process-wide; set it from one thread, not while other
 * threads write. */
void hs_atomic_defer_sync(int on);
/* syncfs(2) of the file system holding fd, an open folder (path names it in
 * messages): every file written there is on disk when it returns. Open fd
 * before the files are written: Linux (5.8 and later) then reports a
 * write-back error of any of them since, as their own fsync would have;
 * older kernels report none. It flushes every process's data on that file
 * system, so on a disk busy with other writes it waits for them too.
 * HS_ERR_IO naming path on failure. */
hs_status hs_sync_fs(int fd, const char *path, hs_error *err);
/* One-shot: writes n bytes atomically to path. */
hs_status hs_write_file_atomic(const char *path, const void *data, size_t n, hs_error *err);

/* Reads a whole file into a malloc'd buffer (caller frees); *n gets its size.
 * A terminating NUL is appended (not counted) so text can be parsed in place. */
hs_status hs_read_file(const char *path, unsigned char **data, size_t *n, hs_error *err);

/* Creates folder path if missing (one level; the parent must exist: "cannot
 * create folder P: its parent folder does not exist ..."). Refuses a path
 * that exists and is not a folder. */
hs_status hs_mkdir(const char *path, hs_error *err);

/* Joins dir and name with '/', into a malloc'd string (caller frees); NULL on OOM. */
char *hs_path_join(const char *dir, const char *name);


/* ------------------------------------------------------------------------ */
/* Text: one growable string buffer, one string duplicate, one UTF-8        */
/* decoder, one float format. Every module uses these; none writes its own. */

/* A growable string buffer: appends never truncate. On an allocation failure
 * the buffer keeps what it had, sets oom, and every later append is a no-op
 * (so a caller checks once, at the end, with hs_buf_take or b.oom).
 * Zero-initialised ({0}) or hs_buf_init'd is an empty buffer; s is NULL until
 * the first append, then always NUL-terminated. The buffer owns s. */
typedef struct {
    char *s;     /* the text, NUL-terminated (NULL while empty and never grown) */
    size_t len;  /* bytes of text, not counting the NUL */
    size_t cap;  /* bytes allocated at s */
    int oom;     /* 1 after an allocation failed (sticky) */
} hs_buf;

/* Makes b an empty buffer (no allocation). */
void hs_buf_init(hs_buf *b);
/* Appends n bytes of s (which need not be NUL-terminated). Returns 0, or -1
 * (and sets b->oom) when memory ran out or b->oom was already set. */
int hs_buf_append(hs_buf *b, const char *s, size_t n);
/* Appends the NUL-terminated string s. Same returns as hs_buf_append. */
int hs_buf_puts(hs_buf *b, const char *s);
/* Appends printf-style formatted text, growing as needed (never truncates).
 * Same returns as hs_buf_append. */
int hs_buf_printf(hs_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* hs_buf_printf with a va_list (ap is consumed as by vprintf). */
int hs_buf_vprintf(hs_buf *b, const char *fmt, va_list ap);
/* Hands the text to the caller (who frees it with free()) and leaves b empty.
 * Returns "" (malloc'd) for an empty buffer; NULL when b->oom is set (b is
 * freed either way). */
char *hs_buf_take(hs_buf *b);
/* Frees b's text and leaves it empty. Safe on an empty or zeroed buffer. */
void hs_buf_free(hs_buf *b);

/* printf-style formatted text, malloc'd (caller frees): never truncates.
 * NULL when memory ran out. */
char *hs_strfmt(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* malloc'd copy of s (caller frees); NULL when s is NULL or memory ran out. */
char *hs_strdup(const char *s);

/* Decodes one UTF-8 sequence at s (n >= 1 bytes available). Returns its length
 * (1..4) and the code point in *cp, or 0 when the bytes are not valid UTF-8
 * (bad lead byte, truncated, bad continuation, overlong form, a surrogate
 * U+D800..U+DFFF, or above U+10FFFF); *cp is then unchanged. RFC 3629. */
size_t hs_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
/* 1 when the NUL-terminated s is entirely valid UTF-8 (hs_utf8_decode), else 0. */
int hs_utf8_valid(const char *s);
/* The number of bytes at s (n >= 1 available) that are one U+FFFD of a
 * lossy decoding (the maximal subpart of an ill-formed sequence, Unicode 15
 * section 3.9, as Python's errors="replace" and Rust's from_utf8_lossy
 * count), when s does not start a valid sequence (hs_utf8_decode gives 0). */
size_t hs_utf8_bad_len(const unsigned char *s, size_t n);
/* A malloc'd copy of the NUL-terminated s (caller frees) that is valid UTF-8:
 * each ill-formed part (hs_utf8_bad_len) replaced by one U+FFFD, as Python's
 * bytes.decode("utf-8", errors="replace") and so Hugging Face tokenizers'
 * decode do; valid s comes back byte for byte. NULL on OOM. */
char *hs_utf8_lossy_dup(const char *s);
/* Appends code point cp (<= U+10FFFF, not a surrogate) to b as UTF-8 (1..4
 * bytes, RFC 3629). Same returns as hs_buf_append. */
int hs_utf8_put(hs_buf *b, uint32_t cp);

/* Appends v as printf's "%<+><width>.<decimals>f" (plus != 0: the + flag)
 * writes it, except that a value that rounds to zero at that precision has
 * no sign ("-0.00" and "+0.00" -> "0.00", padded to width): the one rule of
 * every table and text line that rounds to fixed decimals (figures: viz's
 * labels, the same rule). JSON keeps the exact float. decimals 0..9
 * (HS_FIXED_MAX_DEC). Same returns as hs_buf_append. */
int hs_buf_fixed(hs_buf *b, double v, int width, int decimals, int plus);
/* The same text as hs_buf_fixed (width 0) written into out (at least
 * HS_FIXED_BUF bytes, room for any finite double at 0..HS_FIXED_MAX_DEC
 * decimals; decimals outside that range are clamped to it), for a line that
 * printf formats as a whole ("clean %s, corrupted %s"); returns out. */
#define HS_FIXED_MAX_DEC 9
#define HS_FIXED_BUF 328
char *hs_fmt_fixed(char out[HS_FIXED_BUF], double v, int decimals, int plus);

/* Code-point classes of the text policy (docs/DESIGN.md, "Text that cannot
 * break a file or a terminal"): what a vocabulary may hold and how each
 * output shows it. */
typedef enum {
    HS_CP_PLAIN = 0,   /* shown as is everywhere */
    HS_CP_CONTROL,     /* C0 (U+0000..U+001F), DEL, C1 (U+0080..U+009F) */
    HS_CP_NONCHAR,     /* U+FDD0..U+FDEF and U+xxFFFE/U+xxFFFF (not allowed in XML) */
    HS_CP_PRIVATE,     /* private use: U+E000..U+F8FF, planes 15 and 16 */
    HS_CP_FORMAT,      /* format, bidi and zero-width characters, variation selectors,
                        * the other default-ignorable code points (U+00AD, U+200B..U+200F,
                        * U+202A..U+202E, U+2066..U+2069, U+FEFF, ...) */
    HS_CP_SPACE,       /* whitespace outside ASCII: U+00A0, U+1680, U+2000..U+200A,
                        * U+2028, U+2029, U+202F, U+205F, U+3000 */
} hs_cp_class;

/* The class of code point cp (a valid scalar value; surrogates cannot be
 * decoded, see hs_utf8_decode). */
hs_cp_class hs_cp_classify(uint32_t cp);
/* Short English name of a class ("a control character", ...). Static string. */
const char *hs_cp_class_name(hs_cp_class c);

/* Appends s as a terminal line or a message may show it: ASCII space and
 * every HS_CP_PLAIN code point as is; ASCII whitespace other than space and
 * every other class as "<U+XXXX>" (at least 4 hex digits); a byte that is not
 * UTF-8 as "<0xXX>". The result holds no control, format or bidi character,
 * so it cannot change how the rest of a line displays. Same returns as
 * hs_buf_append. */
int hs_buf_put_visible(hs_buf *b, const char *s);
/* A malloc'd hs_buf_put_visible copy of s (caller frees); NULL on OOM. */
char *hs_visible_dup(const char *s);

/* FNV-1a, 64 bits (offset basis 14695981039346656037, prime 1099511628211;
 * Fowler, Noll, Vo, draft-eastlake-fnv): the hash index.json records for
 * every file headscope writes. Not cryptographic: it proves a file is
 * unchanged since headscope wrote it, not that nobody forged it. */
uint64_t hs_fnv1a64(const void *data, size_t n);
/* The FNV-1a 64 of bytes B followed by data [n], given h = the hash of B
 * (hs_fnv1a64, or HS_FNV1A64_BASIS for none): hashes a file read in pieces. */
#define HS_FNV1A64_BASIS 14695981039346656037ull
uint64_t hs_fnv1a64_more(uint64_t h, const void *data, size_t n);

/* The one float format of every text, JSON and terminal output: the shortest
 * decimal (1..9 significant digits, %g style) that reads back as the same
 * float32, e.g. 1e-05f -> "1e-05", 0.1f -> "0.1". Writes into out (at least
 * HS_F32_BUF bytes) and returns out. Non-finite values print as "nan", "inf",
 * "-inf". */
#define HS_F32_BUF 32
char *hs_fmt_f32(char out[HS_F32_BUF], float x);
/* The double nearest the text hs_fmt_f32 writes for x: what a JSON writer
 * (cJSON_CreateNumber) should store so its output reads back as x. */
double hs_f32_shortest(float x);
/* The text "%1.15g" gives for v (what cJSON's print_number writes), into out,
 * when v is a value hs_f32_shortest returns (a float's shortest text as a
 * double) other than 0, found without printf; returns out, or NULL for any
 * other v (the caller prints it itself). E.g. hs_f32_shortest(0.1f) -> "0.1",
 * 1e6 -> "1000000", 1e-05 -> "1e-05". */
char *hs_fmt_f32_json(char out[HS_F32_BUF], double v);

struct cJSON;
/* A JSON number holding v, or JSON null when v is NaN or infinite (JSON has
 * no such numbers): the one way reports write a value that may be missing.
 * NULL when memory ran out. Caller owns it (cJSON_Delete, or add it to an
 * object or array). */
struct cJSON *hs_json_num_or_null(double v);

/* Adds a deep copy of every member of src (a JSON object; NULL adds nothing)
 * to the object dst, in src's order, under the same keys: how a folder's
 * context ("model", "threads", ...) opens every document written into it.
 * Returns 1, or 0 when memory ran out (dst may then hold some of them). */
int hs_json_add_copies(struct cJSON *dst, const struct cJSON *src);

/* Index of the largest of x[0..n-1], ties to the lowest index; -1 when any
 * value is NaN (n >= 1). The one argmax (scoring, circuit, experiments). */
int hs_argmax(const float *x, size_t n);

/* ------------------------------------------------------------------------ */
/* The matrix product                                                         */

/* C (M, N) = alpha op(A) op(B) + beta C, row-major single precision, as
 * cblas_sgemm(CblasRowMajor, ...): op(A) is (M, K) -- A itself with row
 * stride lda, or A^T when ta != 0 (A stored (K, M)) -- and op(B) is (K, N)
 * likewise with tb and ldb; C has row stride ldc. The one product every
 * module calls (common/gemm.c): libxsmm's JIT kernels where they beat
 * OpenBLAS (alpha 1, beta 0 or 1; A B with B at most 256 K elements, or
 * A^T B with M N and K (M + N) at most 256 K each: every product of the
 * default training step), OpenBLAS's cblas_sgemm otherwise. Which one runs
 * depends on the shape only. An NN product's row gets the same bits whatever
 * rows share its call as long as calls start on 16-row units (rows in blocks
 * of 64, or of 16 padded for outputs whose last 64-column block is 1-16
 * wide, where libxsmm's AVX-512 kernel sums with more accumulators in short
 * blocks), so results do not depend on how a batch is split over threads.
 * An NN product of at most 64 rows whose B is past libxsmm's limit (a few
 * positions against GPT-2's weights) runs on libxsmm too, reading B as it
 * lies instead of packing a copy of it, in OpenBLAS' own K blocks, with
 * OpenBLAS' bits (where a probe at a K's first use finds those blocks, and
 * only with OpenBLAS at one thread a call; common/gemm.c, few_rows: 16 x
 * 2,304 x 768 30.6 -> 21.1 ms for 24 weights, one thread).
 * beta 0 ignores what C held (NaN included). M or N <= 0
 * does nothing. Runs on the calling thread; safe from any number of threads
 * at once (a shape's kernel is generated at its first use, under a mutex, and
 * kept until the process ends: a few KB each; LIBXSMM_TARGET picks an older
 * instruction set, as for libxsmm itself). No errors: a kernel libxsmm cannot
 * make (no JIT for the CPU, no executable memory) leaves the shape to
 * OpenBLAS for the rest of the process. */
void hs_sgemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc);

/* 1 when hs_sgemm runs NN products of few rows whose inner dimension is K
 * on libxsmm in OpenBLAS' K blocks (see hs_sgemm; probing K at its first
 * call): OpenBLAS at one thread a call and a kernel family whose blocked
 * sums libxsmm's kernels reproduce (SkylakeX and Cooperlake in 0.3.21, not
 * Haswell). 0: such products stay on OpenBLAS. For tests and benches. */
int hs_sgemm_few_rows_k(int K);

/* OpenBLAS 0.3.21's kernels by a product's multiply-adds (M N K): an NN
 * product with alpha 1 and beta 0 of fewer than HS_BLAS_DIRECT_MACS runs on
 * its SkylakeX direct kernel (one FMA chain over all of K;
 * sgemm_direct_performant.c), any product of fewer than HS_BLAS_SMALL_MACS
 * on its small-matrix kernels (sgemm_small_kernel_permit_skylakex.c), the
 * rest on its blocked path, which sums K in blocks: where bits depend on
 * which one runs (hs_sgemm's few-row products, column splits). */
#define HS_BLAS_DIRECT_MACS (28L * 512 * 512)
#define HS_BLAS_SMALL_MACS (100L * 100 * 100 + 1)

/* 1 when an NN product whose B is (K, N) is small enough for libxsmm
 * (alpha 1, beta 0 or 1, whatever its rows; a CPU without JIT still goes to
 * OpenBLAS): where a caller with B^T at hand gains by transposing it once
 * into B (the backward's input gradients); elsewhere OpenBLAS takes the
 * transposed operand as it lies. */
int hs_sgemm_nn_jit(int N, int K);

/* dst <- src (n floats, the same bits; the ranges do not overlap), dst
 * written with streaming (non-temporal) stores where the CPU has them (SSE2),
 * else memcpy: for buffers nothing reads soon (an activation cache's
 * entries, the split inputs), whose lines then need not be read before
 * they are written nor evict what the next kernel reads. Fenced: the
 * stores are visible to other threads once it returns. */
void hs_copy_streaming(float *dst, const float *src, size_t n);
/* hs_copy_streaming without its fence: for many short rows (a causal
 * block's rows of an attention tile written to a cache entry) followed by
 * one hs_streaming_fence before anyone else reads them. */
void hs_store_streaming(float *dst, const float *src, size_t n);
/* hs_store_streaming of src's first ns floats (ns <= n) into dst, then
 * dst[ns..n) = fill, with no store to src and no read beyond ns: a causal
 * row of an attention tile (its scores -inf, its weights 0 above the
 * diagonal) written to a cache entry without filling the row first. */
void hs_store_streaming_fill(float *dst, const float *src, size_t ns, float fill, size_t n);
/* Orders this thread's streaming stores before its later stores (sfence):
 * after hs_store_streaming, before the work is handed to another thread. */
void hs_streaming_fence(void);

/* Float arrays for the products (common/common.c): n floats, zeroed, on a
 * 64-byte boundary (a cache line), so a row that starts a multiple of 16
 * floats from there is read and written by whole-line vector loads and
 * stores. calloc gives a large block 16 bytes past a page boundary, where
 * every 64-byte load of libxsmm's kernels spans two lines: measured one
 * thread, AVX-512, 8192 rows, 512 x 512 weights 152 -> 173 GFLOP/s, 64 x 256
 * 143 -> 167 aligned.
 * A block of 2 MiB or more is an anonymous mapping of its own starting on a
 * 2 MiB boundary, advised huge (madvise MADV_HUGEPAGE: transparent huge
 * pages in the kernel's "madvise" mode; a hint) over its whole 2 MiB pages,
 * and over its tail too when that is 1 MiB or more (at most 1 MiB resident
 * beyond the block), so the first write faults once per 2 MiB instead of
 * once per 4 KiB: a large model's parameter table (GPT-2 small: 160,000
 * faults, most of its load time) and the activations an experiment
 * allocates per call (EAP over the default model's 192 held-out pairs:
 * ~10 MB a worker, 5,300 faults a call at 2 threads before, 660 after).
 * Smaller blocks are calloc's.
 * Pages are zeroed as calloc's are (a large block's pages are touched only
 * when written; a reused one, below, has its resident pages cleared).
 * Returns NULL when n is 0, too large, or memory runs out.
 * The caller frees it with hs_floats_free (never free); NULL is ignored.
 * hs_floats_free keeps a mapping it is given (at most 16 of them, 32 MiB in
 * all, process-wide and thread-safe: the most that stays resident beyond
 * what is allocated) for the next block of the same mapped length, which
 * reuses its resident pages (cleared) instead of faulting in fresh ones
 * (circuit's engines, made and freed one after another: 30 MB of fresh
 * pages). */
float *hs_floats_alloc(size_t n);
void hs_floats_free(float *p);

/* n rounded up to a multiple of 16 floats (64 bytes): where an array laid
 * out inside an hs_floats_alloc block starts so that it too is aligned. */
static inline size_t hs_floats_round(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

/* A product's kernels chosen once for many calls of one shape on other
 * operands (the attention's per-(batch, head) tiles: ~1,000 products of
 * 18 x 18 a layer, where looking the kernel up on each call cost 3% of a
 * training step). Fields are hs_sgemm's arguments and what hs_sgemm_plan_init found;
 * read-only after it. */
typedef void (*hs_sgemm_kernel)(void);
typedef struct {
    int ta, tb, M, N, K, lda, ldb, ldc;
    float alpha, beta;
    int xsmm;                    /* 1: libxsmm's kernels below; 0: OpenBLAS */
    int rows, pad;               /* NN: rows a kernel call takes; 1: the rest padded to them */
    hs_sgemm_kernel full, rest;  /* NN: rows in full blocks / the rest; TN: full */
} hs_sgemm_plan;

/* Fills p for hs_sgemm_run with hs_sgemm's arguments less the matrices (the
 * same choice of library and kernels as hs_sgemm makes). No errors. */
void hs_sgemm_plan_init(hs_sgemm_plan *p, int ta, int tb, int M, int N, int K, float alpha,
                        int lda, int ldb, float beta, int ldc);
/* hs_sgemm with p's shape on A, B, C (the same bits as hs_sgemm, but for an
 * output whose last 64-column block is 1-16 wide: a plan's calls all have its
 * M rows, so it keeps libxsmm's 64-row blocks there). p may be used by any
 * number of threads at once. */
void hs_sgemm_run(const hs_sgemm_plan *p, const float *A, const float *B, float *C);

struct hs_pool;
/* hs_sgemm(0, tb, M, N, K, ...) with C's COLUMNS in one part per worker of
 * pool (each part starting on a multiple of 64 columns, one single-threaded
 * hs_sgemm on its worker, which packs only its columns of B), then bias (N
 * floats; NULL: none) added to every row of C, each part its own columns (the
 * bits of hs_sgemm then a row-by-row add). For a product with few rows and
 * a wide B (the unembedding of a few positions: 208 x 50,257 x 768 at GPT-2
 * small), where a split of the rows (model/ hs_sgemm_pool) has every worker
 * pack all of B. Split only when every part has at least 64 columns and 4 M
 * elements of op(B): such parts, and the whole, take OpenBLAS' blocked path
 * (or hs_sgemm's few-row products, which have its bits), and only where
 * hs_blas_split_exact() says each element is then the same sum whatever
 * columns share its call, so the bits equal one call's (test_gemm: GPT-2's
 * W_U, NN and NT, SkylakeX and Cooperlake kernels); else one call on this thread (as
 * with pool NULL or one worker). Not from inside a job of pool (hs_pool_for
 * is not reentrant). No errors. */
void hs_sgemm_cols_pool(struct hs_pool *pool, int tb, int M, int N, int K, float alpha,
                        const float *A, int lda, const float *B, int ldb, float beta, float *C,
                        int ldc, const float *bias);

/* ------------------------------------------------------------------------ */
/* The worker pool: the one mechanism every parallel part of the library     */
/* uses (the trainer's batch split and weight-gradient lane, the experiment  */
/* engine's jobs). ggml-style: an object created once and passed to what     */
/* runs in parallel. Results never depend on the thread count: a job writes   */
/* only its own outputs, and sums that cross jobs are made in job order       */
/* (hs_pool_ordered_begin/end, like OpenMP's `ordered`).                      */

typedef struct hs_pool hs_pool;

/* The kernel family OpenBLAS runs its products on (openblas_get_corename():
 * "Haswell", "SkylakeX", "Prescott", ...). Static string; never NULL. */
const char *hs_blas_core(void);

/* 1 when OpenBLAS' kernel family gives each element of a product the bits
 * of one call whatever rows or columns share the call (on its blocked path
 * for columns), so a split of a product's rows or of a few-row product's
 * columns over a pool (model/ hs_sgemm_pool_fill, hs_sgemm_cols_pool)
 * leaves results independent of the thread count: its AVX-512 families in
 * 0.3.21 (SkylakeX, Cooperlake, SapphireRapids; test_gemm and test_model
 * check GPT-2 small's shapes and a 300-row forward). Not Haswell or Zen,
 * whose sums depend on where a column's or row's block starts (16 x 2,304 x
 * 768 split at column 1,152: 160 columns differ in the last bits), nor the
 * others (not checked): there the products OpenBLAS runs are not split
 * (libxsmm's are: their rows are exact by construction, hs_sgemm). */
int hs_blas_split_exact(void);

/* The OPENBLAS_CORETYPE this process should have been started with, or NULL
 * when OpenBLAS's choice is right. Debian 12's OpenBLAS 0.3.21 does not know
 * CPUs newer than it (Intel family 6 model 207, Emerald Rapids, seen here)
 * and falls back to "Prescott", SSE3 kernels that run a step's products 4.4
 * times slower than the AVX-512 ones the CPU has (bench_sgemm, quiet: 32.7
 * against 145 GFLOP/s). Returns "SkylakeX" when the CPU and OS have AVX-512 F, CD,
 * BW, DQ and VL, "Haswell" when they have AVX2 and FMA, and only when
 * OpenBLAS runs one of its pre-AVX2 Intel cores (Prescott, Core2, Nehalem,
 * Sandybridge, ...; names compared without case) and OPENBLAS_CORETYPE is
 * unset (a user's own setting is kept). OpenBLAS reads the variable once, when it is loaded,
 * so only a new process image can use the advice: headscope's main() execs
 * itself with it set (cli/main.c); a program linking the library can set it
 * in its environment. */
const char *hs_blas_core_advice(void);

/* Online CPUs of this machine (sysconf), at least 1: what threads = 0 means. */
int hs_pool_cpus(void);

/* Sets OpenBLAS to one thread per call (process wide) and stops its idle
 * helper threads: the pthread build starts CPUs - 1 of them when it loads,
 * and they poll with sched_yield for ~2^28 cycles before sleeping (a core
 * taken for the first ~0.1 s of every process: 10% of `inspect`'s samples).
 * headscope never asks OpenBLAS for threads (hs_pool_create leaves the
 * count alone when it is 1 already): any later openblas_set_num_threads
 * call starts them again. Nothing with an OpenBLAS built without threads
 * (no helper to stop). */
void hs_blas_one_thread(void);

/* OpenBLAS at n threads per call for the products that follow (n <= 1: back
 * to one, helpers stopped: hs_blas_one_thread). OpenBLAS splits a product's
 * rows and columns over its threads, never the inner dimension, so each
 * value is the same sum in the same order: the bits do not depend on n
 * (GPT-2 small's logits at 1,024 tokens, 1 and 2 threads: identical).
 * Process wide: not for forwards running concurrently on pools of their
 * own. The forward calls it with 1 only: a one-part forward splits its
 * products' rows over its own pool (model/ hs_sgemm_pool), whose workers
 * sleep between jobs where OpenBLAS' helpers spin. */
void hs_blas_threads(int n);

/* Creates a pool of `threads` workers: the caller's thread is worker 0 and
 * threads - 1 helper pthreads wait for work (no spinning). threads = 0 means
 * hs_pool_cpus(); 1 means everything runs on the caller's thread (no helper
 * is started). Also sets OpenBLAS to one thread per call (process wide): at
 * headscope's small shapes its own threading loses (bench_sgemm), and one
 * sgemm's values do not depend on the pool. Caller frees with
 * hs_pool_destroy. HS_ERR_INPUT when threads < 0 or > 1024; HS_ERR_NOMEM when
 * a thread cannot start. */
hs_status hs_pool_create(int threads, hs_pool **out, hs_error *err);
/* Waits for every queued job, stops the helpers, frees. NULL ok. */
void hs_pool_destroy(hs_pool *p);
/* Workers of p (1 for NULL). */
int hs_pool_threads(const hs_pool *p);

/* One job of hs_pool_for: job index j in [0, n_jobs), run on worker
 * `worker` in [0, hs_pool_threads) (index per-worker scratch with it); a
 * failure returns its status and fills err. */
typedef hs_status (*hs_pool_job)(void *ctx, int j, int worker, hs_error *err);

/* Runs jobs 0..n_jobs-1 on every worker (the caller's thread included),
 * handed out in index order, and returns when all have finished. After a job
 * fails no new job starts; the error returned is the lowest failed job's.
 * p NULL runs them in order on the caller's thread. Not reentrant: a job must
 * not call hs_pool_for on the same pool. */
hs_status hs_pool_for(hs_pool *p, int n_jobs, hs_pool_job fn, void *ctx, hs_error *err);

/* Inside an hs_pool_for job running on `worker`: waits until the ordered
 * sections with keys 0..key-1 have ended (keys count from 0 in each hs_pool_for and must grow
 * with the job index), so what the section adds to a shared sum is added in
 * key order whatever the thread count. HS_ERR_INPUT (and no section) when
 * a job before this one failed. Every begin that returns HS_OK is paired with
 * hs_pool_ordered_end. p NULL: returns HS_OK at once. */
hs_status hs_pool_ordered_begin(hs_pool *p, int worker, int key, hs_error *err);
void hs_pool_ordered_end(hs_pool *p);

/* The pool's one asynchronous lane: fn(arg) runs on worker 1, jobs one at a
 * time in submission order (so two lane jobs never run together), while the
 * caller goes on. The lane copies `size` bytes of arg (size <= HS_POOL_ARG)
 * and hands fn the copy. Returns a ticket for hs_pool_wait. With fewer than 2
 * workers (or p NULL) fn runs at once on the caller's thread and the ticket
 * is 0. Used by the backward's weight gradients and the forward's split. */
#define HS_POOL_ARG 160
long hs_pool_async(hs_pool *p, void (*fn)(void *arg), const void *arg, size_t size);
/* Waits until the lane job with this ticket, and every one before it, has
 * finished. p NULL or ticket 0: returns at once. */
void hs_pool_wait(hs_pool *p, long ticket);
/* Waits until every lane job submitted so far has finished. */
void hs_pool_wait_all(hs_pool *p);
/* 1 when the lane job with this ticket has finished (p NULL or ticket 0:
 * 1), without waiting: for a caller with other work to do meanwhile. */
int hs_pool_done(hs_pool *p, long ticket);

/* Progress of long work run on a pool: the caller (the CLI) sets a function
 * on the pool; the library's long loops (the experiment engine's jobs,
 * probe.h hs_engine.progress) report through hs_pool_progress: `what` names
 * the phase ("cells", "prompts"), `done` of `total` units finished, with
 * done growing by one per call within a phase and reaching total at its end.
 * Calls come from any worker, never two at once (hs_pool_progress holds a
 * lock of the pool's). The library never prints: only the function does. */
typedef void (*hs_progress_fn)(void *ctx, const char *what, long done, long total);
/* Sets (fn NULL: clears) the pool's progress function. p NULL: nothing. */
void hs_pool_set_progress(hs_pool *p, hs_progress_fn fn, void *ctx);
/* 1 when p has a progress function. */
int hs_pool_has_progress(const hs_pool *p);
/* Reports progress to p's function, if any (p NULL: nothing). */
void hs_pool_progress(hs_pool *p, const char *what, long done, long total);

/* One phase's units counted from any worker: set {pool, what, 0, total}
 * before the jobs; hs_pool_count_step adds one to done and reports it, under
 * the pool's progress lock (so done reaches the function in order, one more
 * a call). Nothing to free; without a pool or a progress function, nothing. */
typedef struct {
    hs_pool *pool;
    const char *what;
    long done, total;
} hs_pool_count;
void hs_pool_count_step(hs_pool_count *c);

/* ------------------------------------------------------------------------ */
/* JSON: the one printer (json.c). Every JSON headscope writes (figure and  */
/* report files, index.json) or prints (--json) goes through it.           */

/* The text hs_json_print writes for the JSON number d, into out (at least
 * HS_F32_BUF bytes); returns out. The number policy, one float format in
 * JSON as everywhere (hs_fmt_f32), float32 being the precision the model
 * computes in, so digits past a float's are noise whatever double held them:
 *   - an integer (|d| < 2^53 and d == floor(d)): its digits ("%.0f"), e.g.
 *     3 -> "3", 2^53 - 1 -> "9007199254740991", -0.0 -> "-0";
 *   - any other finite d with FLT_MIN <= |d| <= FLT_MAX: the shortest text
 *     that reads back as the float32 (float)d (hs_fmt_f32's digits, laid out
 *     as cJSON's "%1.15g" lays them out), e.g. 0.1 -> "0.1", 1/3. ->
 *     "0.33333334", 1e30 -> "1e+30", 2^53 -> "9.007199e+15";
 *   - a finite d outside float32's normal range: "%.9g", e.g. 1e-60 ->
 *     "1e-60";
 *   - NaN and infinities: "null" (JSON has no such numbers).
 * Reports keep their doubles (commands compare them exactly with each
 * other); only the printed digits are cut, here, in one place. */
char *hs_fmt_json_number(char out[HS_F32_BUF], double d);
/* Appends json to b laid out as cJSON_Print (pretty 1: a key per line,
 * tab-indented, ":\t" after keys, ", " between array items) or as
 * cJSON_PrintUnformatted (pretty 0: no white space) lays it out, with
 * cJSON's string escapes and its numbers as hs_fmt_json_number writes them.
 * Returns 1, or 0 when json is NULL or holds an item cJSON cannot print (raw
 * item without text, unknown type); out of memory shows as b->oom. */
int hs_json_print_buf(hs_buf *b, const struct cJSON *json, int pretty);
/* hs_json_print_buf (pretty) into a new string (malloc'd; the caller frees
 * it with free). NULL when json cannot be printed or memory ran out. */
char *hs_json_print(const struct cJSON *json);

#endif /* HS_COMMON_H */
