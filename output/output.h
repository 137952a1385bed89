/*
 * output/output.h -- where every command's files go, under one policy: the
 * figure options (formats, width, dpi, scales; what each kind of figure gets
 * from them), output folders (a run writes into a working folder and moves
 * its files in only when all are written, replacing only files an earlier
 * headscope run wrote and nobody changed since; index.json lists every file
 * with what it shows, its size and its FNV-1a 64), writing one figure in
 * every format asked for (PNG, SVG, PDF from one display list on the worker
 * pool; its JSON; its place in the folder's offline HTML page), and the HTML
 * page of folders written before (`headscope view`). docs/DESIGN.md,
 * "Outputs" and "Output folders".
 *
 * May call: common/ (files, pool, notes), viz/ (figures, JSON, the page),
 * cJSON. Knows no model, task or probe: what a figure's JSON should say
 * about its run (the model's path and config, the sentence) comes in as a
 * JSON object the caller builds (hs_outdir.context). The library never prints
 * and never exits: every failure is an hs_status plus a one-line message in a
 * caller-owned hs_error; what a run has to say beside that (a file replaced,
 * a figure written as JSON only) goes to the caller's hs_notes.
 *
 * Units: widths in inches, dpi in pixels per inch, font sizes in points.
 * Ownership: hs_figopts and hs_outdir are caller-owned structs (*_default /
 * *_open fill them, *_free / *_close release them; both accept a zeroed
 * struct); a figure handed to hs_outdir_figure is taken (and destroyed once
 * written); JSON handed in is only read unless a function says it consumes it.
 */
#ifndef HS_OUTPUT_H
#define HS_OUTPUT_H

#include <stddef.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "common/common.h"
#include "viz/viz.h"

/* ------------------------------------------------------------------------ */
/* Figure options                                                            */

/* The figure options of a command: viz's options for every figure, the
 * formats to write, which scale options the user set, and the font opened
 * once for every figure. */
typedef struct {
    hs_viz_options viz;      /* passed to every figure */
    int png, svg, pdf, json; /* formats to write (default: png, svg, json) */
    int html;                /* also index.html: one page of the folder's data */
    int range_set;           /* 1 if the range was set (--range) */
    int vmin_set, vmax_set;  /* 1 if vmin / vmax were set (values in viz) */
    char *font;              /* resolved font file (owned) */
    hs_viz_font *vfont;      /* that font opened once for every figure (owned; viz.font) */
    long font_ticket;        /* hs_figopts_font_start's job on a pool, or -1 */
    hs_status font_st;       /* its result, and its message */
    hs_error font_err;
} hs_figopts;

/* What a figure shows, for hs_figopts_for. */
typedef enum {
    HS_FIG_ATTENTION = 0, /* attention weights in [0, 1] */
    HS_FIG_SIGNED,        /* a signed matrix: diverging map centred on 0 */
    HS_FIG_NONNEG,        /* a non-negative matrix: sequential map from 0 */
    HS_FIG_BARS,          /* a bar chart */
    HS_FIG_BARS_MAGNITUDE, /* a bar chart of a quantity with no sign (perplexity, a loss):
                             grey bars, no "+" (hs_viz_options.magnitude) */
    HS_FIG_BARS_SUM,      /* a bar chart whose bars are the terms of one sum (DLA): bars
                             left out of a tall chart are summed in one bar
                             (hs_viz_options.bars_add_up) */
} hs_fig_kind;

/* Defaults: viz defaults at dpi (the command's choice), PNG + SVG + JSON. */
void hs_figopts_default(hs_figopts *fo, double dpi);
/* Resolves (fontconfig) and opens the font once for every figure (sets
 * viz.font_path and viz.font; owned by fo). Nothing is done when no image
 * format is asked for or the font is open already. HS_ERR_IO when no usable
 * font is found. */
hs_status hs_figopts_font_open(hs_figopts *fo, hs_error *err);
/* hs_figopts_font_open as a job on pool's lane, so the font is opened while
 * the caller loads and runs a model; hs_figopts_font_wait collects it. fo
 * must stay in place until then. With no pool it runs now. */
void hs_figopts_font_start(hs_figopts *fo, hs_pool *pool);
/* Waits for hs_figopts_font_start's job and returns its status (with its
 * message in err); opens the font now when no job was started. */
hs_status hs_figopts_font_wait(hs_figopts *fo, hs_pool *pool, hs_error *err);
/* Closes the font; leaves fo's other options. */
void hs_figopts_free(hs_figopts *fo);

/* The options of one figure of kind: signed figures keep the diverging map;
 * lim > 0 is a limit shared by the figures of a kind (signed and bars:
 * [-lim, lim]; non-negative: [0, lim]; lim rounded outward by
 * hs_viz_round_limit, so a colour bar ends at a round value) used unless
 * the range is auto;
 * vmin/vmax override both ends; bars without either are fitted to their
 * data; attention is [0, 1] unless vmin/vmax say otherwise. */
hs_viz_options hs_figopts_for(const hs_figopts *fo, hs_fig_kind kind, double lim);
/* Whether any image format (png, svg, pdf) is wanted (so a caller can skip the layout). */
int hs_figopts_images(const hs_figopts *fo);
/* Whether figure JSON is wanted: for the .json files or for the HTML page. */
int hs_figopts_data(const hs_figopts *fo);
/* Adds "colour_scale" to a figure's JSON j: the scale its PNG/SVG/PDF uses
 * (hs_figopts_for(fo, kind, lim)), so the HTML page draws the same:
 * {"cmap": "diverging"|"viridis"|"greys", "range": "fixed"|"auto", and for
 * fixed "vmin", "vmax"}. HS_ERR_NOMEM. */
hs_status hs_figopts_add_scale(cJSON *j, const hs_figopts *fo, hs_fig_kind kind, double lim,
                               hs_error *err);

/* ------------------------------------------------------------------------ */
/* Labels                                                                    */

/* The row and column labels of a figure: n strings, each formatted whole
 * (never cut, however long a token is), and the array of them the figure
 * calls take. */
typedef struct {
    char **s;          /* [n] malloc'd, NULL until set */
    const char **at;   /* [n] at[i] == s[i]: what a figure reads */
    size_t n;
    int oom;           /* hs_labels_init or a hs_labels_set ran out of memory */
} hs_labels;

/* n unset labels; on OOM l->oom is set (and sets do nothing), so a caller
 * checks once, after its sets. */
void hs_labels_init(hs_labels *l, size_t n);
/* Label i (< n) becomes the printf-style fmt, whole. */
void hs_labels_set(hs_labels *l, size_t i, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Frees every label and both arrays; leaves l zeroed (safe to call twice). */
void hs_labels_free(hs_labels *l);

/* ------------------------------------------------------------------------ */
/* Output folders                                                            */

/*
 * A run writes into a working folder `DIR/.headscope.tmp.<pid>` (DIR is
 * created if missing; its parent folder must exist: headscope creates one
 * level, never parents). Only when every file is written does
 * hs_outdir_commit move them into DIR, index.json last; a run that fails
 * calls hs_outdir_close without committing, which removes the working folder
 * (and DIR if this run created it), so DIR is as it was before the run.
 *
 * index.json records {"generator": "headscope <version> <command>",
 * "command", ..., "files": [{"file", "format", "shows", "bytes",
 * "fnv1a64"}]} (FNV-1a 64 of the bytes, hs_fnv1a64). A later run replaces or
 * removes a file in DIR only when that index is headscope's (has the
 * generator) and lists the file with the size and hash it still has, and
 * the file is not an input of the run (same device and inode); it says in a
 * note what it replaced and removed. A name this run writes that is taken by
 * any other file (the user's, one changed since, an input, an index.json
 * headscope did not write) is refused before anything in DIR changes. Files
 * no index vouches for are kept, with a note. A file the index says another
 * command wrote (its entry's "by": the page `headscope view` adds) is never
 * removed, and stays listed (out_others_kept) while it is unchanged. A file
 * the run would replace by the same bytes (a rerun) is left in place, and the
 * run's copy removed before it reaches the disk.
 */

/* The files a command reads (compared by device and inode). */
#define HS_OUT_MAX_INPUTS 4
typedef struct {
    int n;
    dev_t dev[HS_OUT_MAX_INPUTS];
    ino_t ino[HS_OUT_MAX_INPUTS];
} hs_out_inputs;

struct hs_out_pending;

/* The figures a note names when more than HS_OUT_WIDE_LIST + 2 are wider than
 * their default width: the first HS_OUT_WIDE_LIST, then "and N more (W in
 * each)" or "(W1 to W2 in)" (288 of GPT-2's per-head figures were ~7,000
 * characters on one line). */
#define HS_OUT_WIDE_LIST 6

/* An output folder and the index of what was written into it. Read dir,
 * files and page; the rest is the folder's own. */
typedef struct {
    const char *cmd;      /* the command writing it (index.json's "command"; borrowed) */
    const char *dir;      /* the folder (borrowed) */
    const hs_figopts *fo; /* the formats and options (borrowed) */
    const cJSON *context; /* keys added to every figure JSON of hs_outdir_matrix, or NULL
                           * (borrowed; e.g. {"config", "model"}) */
    hs_notes notes;       /* where notes go */
    hs_pool *pool;        /* figures are written on it (borrowed; may be NULL) */
    cJSON *files;         /* [{"file", "format", "shows", "bytes", "fnv1a64"}] */
    cJSON *page;          /* {stem: JSON} that index.html shows (html), else NULL */
    hs_out_inputs inputs; /* the files the command reads: never replaced or removed */
    char *stage_name;     /* ".headscope.tmp.<pid>" (owned) */
    char *stage;          /* DIR/stage_name: where the run's files go until committed (owned) */
    int created;          /* 1 when this run created DIR */
    int stage_fd;         /* the working folder, open from before the first file; -1 */
    hs_buf wide;          /* "stem W in, ..." of the first HS_OUT_WIDE_LIST + 2 figures wider
                           * than their default (the note lists them all up to that) */
    int n_wide;           /* figures wider than their default */
    size_t wide_cut;      /* wide's length after the first HS_OUT_WIDE_LIST */
    double wide_min, wide_max; /* the widths (in) of those after the first HS_OUT_WIDE_LIST */
    struct hs_out_pending **pend; /* figures hs_outdir_figure took, until committed */
    int n_pend, cap_pend;
} hs_outdir;

/* Opens dir for command cmd: creates it if missing (its parent must exist),
 * refuses a path that is not a folder or a folder holding another command's
 * output ("DIR holds the output of `headscope inspect` (its index.json);
 * choose another --out, or move that folder away"), removes (with a note)
 * any working folder a killed run left in it (".headscope.tmp.<pid>" whose
 * process is gone, emptied of its plain files), and starts the run's
 * working folder. inputs: the files the command reads, NULL-terminated (may
 * be NULL). pool: where figures are written (may be NULL). notes may be
 * NULL. Errors (the folder untouched): HS_ERR_INPUT ("--out is empty",
 * "DIR exists and is not a folder", another command's folder), HS_ERR_IO
 * ("cannot create folder DIR: its parent folder does not exist ...",
 * "cannot write into folder DIR: Permission denied"), HS_ERR_NOMEM. */
hs_status hs_outdir_open(hs_outdir *o, const char *cmd, const char *dir, const hs_figopts *fo,
                         const char *const *inputs, hs_pool *pool, const hs_notes *notes,
                         hs_error *err);
/* Discards whatever was not committed (a failed run leaves dir as it was),
 * pending figures included, and frees o. Safe on a zeroed or committed o. */
void hs_outdir_close(hs_outdir *o);

/* Writes stem.png / stem.svg / stem.pdf from *fig and stem.json from json,
 * in the formats chosen (*fig may be NULL when no image is wanted; json may
 * be NULL when JSON is not wanted), lists each in the index with `shows`, in
 * that order, and adds json to the page (html). Takes the figure (*fig is
 * set to NULL; it is destroyed once written, also on failure). Its image
 * files are written by one thread, in order, while the caller goes on: a job
 * on the pool's lane, or, for what the lane has not reached by then, a job
 * of hs_outdir_commit's parallel-for; with no pool or one worker, at once.
 * The files do not depend on the pool. JSON is written at once. A figure
 * wider than its default width is named in a note at commit. Errors:
 * HS_ERR_IO (naming DIR/file), HS_ERR_NOMEM. */
hs_status hs_outdir_figure(hs_outdir *o, const char *stem, hs_viz_figure **fig,
                           const cJSON *json, const char *shows, hs_error *err);
/* Writes a data file name.json whatever the formats say; listed in the
 * index and added to the page (html). */
hs_status hs_outdir_json(hs_outdir *o, const char *name, const cJSON *json, const char *shows,
                         hs_error *err);
/* Writes a file of another format (len bytes of data, e.g. a Graphviz .dot)
 * under name into the folder, listed in the index with format and shows;
 * not on the page. Errors: HS_ERR_IO (naming DIR/name), HS_ERR_NOMEM. */
hs_status hs_outdir_file(hs_outdir *o, const char *name, const char *format, const void *data, size_t len,
                         const char *shows, hs_error *err);
/* Whether the page (html) would show stem (hs_page_keeps) and has not got it yet. */
int hs_outdir_page_wants(const hs_outdir *o, const char *stem);
/* Adds data (consumed) to the page under stem, unless the page has stem
 * already or does not want it; a no-op without html. For data built in the
 * page's packed form (hs_viz_attention_json_packed) before hs_outdir_figure
 * adds the file's form. HS_ERR_NOMEM. */
hs_status hs_outdir_page(hs_outdir *o, const char *stem, cJSON *data, hs_error *err);

/* One matrix or bar figure with its JSON: stem.{png,svg,pdf,json} in the
 * formats chosen. kind: HS_FIG_SIGNED (R x C, diverging), HS_FIG_BARS (R
 * values), HS_FIG_BARS_MAGNITUDE (R values of a quantity with no sign, grey
 * bars; a negative value is HS_ERR_INPUT), HS_FIG_BARS_SUM (R values that are
 * the terms of one sum), HS_FIG_NONNEG (R x C, sequential from 0). m: [R, C] row-major
 * (bars: [R]); rl: R row labels, cl: C column labels (NULL for bars). lim:
 * a limit shared by the figures of a kind (hs_figopts_for). q: the quantity
 * the colour bar (or bar axis) shows, with its unit. note: a line on the
 * figure (and "usable": false, "why_not_usable" in its JSON) saying why its
 * numbers are not usable, or NULL. The JSON is viz's (hs_viz_signed_json /
 * hs_viz_bars_json) with "colour_scale" (not for bars), o->context's keys
 * and the note. A figure over the viz caps gets its JSON only, with a note
 * ("STEM is R x C, over the figure cap; writing its JSON only"). */
hs_status hs_outdir_matrix(hs_outdir *o, hs_fig_kind kind, const char *stem, const float *m,
                           size_t R, size_t C, const char *const *rl, const char *const *cl,
                           const char *title, const char *xl, const char *yl, double lim,
                           const char *q, const char *note, const char *shows, hs_error *err);

/* Finishes the run: writes every pending figure, index.json ({"generator",
 * "command"} plus the keys of extra (may be NULL; only read), "files"), with
 * html first index.html (the page of everything the folder holds, listed in
 * index.json), makes everything durable with one sync, then moves every file
 * of the run into DIR under the policy above and removes the working folder.
 * Notes: the figures wider than their default width, the files removed, the
 * files kept. Errors: a name taken ("DIR/F exists and headscope did not
 * write it ...; nothing was changed: move it away or choose another --out";
 * DIR unchanged), HS_ERR_IO, HS_ERR_NOMEM. Call it last; then
 * hs_outdir_close. */
hs_status hs_outdir_commit(hs_outdir *o, const cJSON *extra, hs_error *err);

/* Files the index lists (after hs_outdir_commit: every file of the run). */
int hs_outdir_n_files(const hs_outdir *o);

/* 1 when DIR/index.json is headscope's and lists name with the size and
 * FNV-1a the file has now (a file a later run may replace), else 0. */
int hs_out_owns(const char *dir, const char *name);

/* Size in bytes and FNV-1a 64 (16 lower-case hex digits) of the file at
 * path, read in pieces; 0 ok, -1 (errno set) when it cannot be read or is
 * not a regular file. */
int hs_out_digest(const char *path, double *bytes, char hex[17]);

/* ------------------------------------------------------------------------ */
/* The HTML page                                                             */

/* Whether the page of command cmd shows the JSON named stem: every file but
 * inspect's per-head and per-layer-mean patterns (L<l>H<h>, L<l>_mean), which
 * its attention_grid holds. */
int hs_page_keeps(const char *cmd, const char *stem);

/* The page's data for runs (an array of {"dir", "command", "index",
 * "files"}, consumed): {"runs", "cmap"}; NULL on OOM. */
cJSON *hs_page_data(cJSON *runs, hs_viz_cmap cmap);

/* ------------------------------------------------------------------------ */
/* The page of folders written before (output/page.c; `headscope view`)      */

/* What hs_view_run wrote. Free with hs_view_report_free. */
typedef struct {
    char *path;   /* the page (malloc'd) */
} hs_view_report;

/* One offline HTML page (hs_viz_write_html) of the n >= 1 output folders
 * dirs[0..n): each folder's index.json and the JSON files it lists (those
 * hs_page_keeps shows, packed with hs_viz_html_pack), the attention drawn in
 * cmap. The page goes to out_file, or with out_file NULL to
 * dirs[0]/index.html, which is then listed in dirs[0]/index.json with its
 * size and FNV-1a 64 (so a later run there may replace it). Errors, before
 * anything is written: a folder's index.json or a file it lists that cannot
 * be read (HS_ERR_IO) or is not JSON ("P is not valid JSON"), an index
 * without "command" and "files" ("DIR/index.json is not an index headscope
 * wrote ..."), a file the page cannot take ("DIR/F: ..."), dirs[0]/index.html
 * that its index does not list with the size and hash it has ("... not
 * overwriting it (choose a file with --out)"), dirs[0]/index.html existing
 * without force as a page of other folders than dirs (the page of A and B
 * over A's own page, or A's own page over the page of A and B: "DIR/index.html
 * exists (the page of A and B); the page of A alone replaces it only with
 * --force ..."; the page of the same folders is written again), out_file existing without force ("--out F already exists; use
 * --force to replace it"), out_file one of the files the page is made from
 * (a folder's index.json or a file it lists, same device and inode: refused
 * even with force: "--out F is one of the files the page is made from ...");
 * then the
 * page's and the index's writes (HS_ERR_IO), HS_ERR_NOMEM. Fills *out (free
 * it also after a failure). */
hs_status hs_view_run(const char *const *dirs, int n, const char *out_file, int force,
                      hs_viz_cmap cmap, hs_view_report *out, hs_error *err);
/* Frees r's page path; NULL and zeroed reports allowed. */
void hs_view_report_free(hs_view_report *r);

/* ------------------------------------------------------------------------ */
/* A figure that cannot be drawn (output/figopts.c)                          */

/* What a run does when a figure's layout (an hs_viz_*_figure call or
 * hs_graph_figure) returned s with message fe: HS_ERR_INPUT (its labels do
 * not fit the width at 6 pt even in a one-column layout, or it is over a
 * figure cap) becomes one note naming the files not written ("note:
 * L0H0_QK.png, L0H0_QK.pdf not written: <fe>"), and HS_OK, so that figure's
 * JSON and the rest of the run are written; any other status is the run's
 * error (fe copied into err). HS_OK passes through. stem: the figure's file
 * name without extension. */
hs_status hs_outdir_unfit(hs_outdir *o, const char *stem, hs_status s, const hs_error *fe,
                          hs_error *err);

#endif /* HS_OUTPUT_H */
