/*
 * viz/viz_font.c -- finding DejaVu Sans (explicit path, $HS_FONT, the Debian
 * path, fontconfig), shaping UTF-8 text with HarfBuzz (kerning and the font's
 * other default features, unhinted, so every output gets the same glyph
 * positions) and the cairo font face the renderers draw those glyphs with.
 * Characters the font lacks (CJK, Devanagari, emoji, ...) are shaped in the
 * fallback face fontconfig names for them (viz_fallback.c), each maximal
 * run of one face on its own, the runs side by side on one baseline.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cairo-ft.h>
#include <fontconfig/fontconfig.h>
#include <hb.h>

#include "viz/viz_internal.h"

#define VZ_DEBIAN_FONT "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"

/* Shaped runs by (text, size), shared by a font and every copy of it
 * (vz_font_share): a figure's layout is tried several times and its labels
 * repeat across figures (inspect: 5170 shapings of 294 distinct texts). A
 * run depends only on the font, the text and the size, so a copy out of the
 * cache is what shaping again would give. Open addressing, at most
 * SHAPE_CAP entries (then new texts are shaped but not kept). */
#define SHAPE_CAP 1024
#define SHAPE_SLOTS (2 * SHAPE_CAP) /* a power of two */
typedef struct {
    char *s;   /* owned; NULL = empty slot */
    double px;
    vz_run run;
} shape_entry;

typedef struct {
    pthread_mutex_t mu;
    atomic_int refs;
    size_t n;
    shape_entry slot[SHAPE_SLOTS];
} shape_cache;

static shape_cache *shape_cache_new(void)
{
    shape_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c);
        return NULL;
    }
    atomic_init(&c->refs, 1);
    return c;
}

static void shape_cache_unref(shape_cache *c)
{
    if (c == NULL || atomic_fetch_sub(&c->refs, 1) != 1) return;
    for (size_t i = 0; i < SHAPE_SLOTS; i++) {
        free(c->slot[i].s);
        free(c->slot[i].run.g);
    }
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static size_t shape_hash(const char *s, double px)
{
    uint64_t h = hs_fnv1a64(s, strlen(s));
    h = hs_fnv1a64_more(h, &px, sizeof px);
    return (size_t)(h ^ (h >> 29));
}

/* A copy of run into *out (its glyphs malloc'd); 0 on OOM. */
static int run_copy(vz_run *out, const vz_run *run)
{
    *out = *run;
    out->g = NULL;
    if (run->n > 0) {
        out->g = malloc(run->n * sizeof *out->g);
        if (!out->g) return 0;
        memcpy(out->g, run->g, run->n * sizeof *out->g);
    }
    return 1;
}

/* The slot of (s, px): the entry holding it, or the empty slot where it goes. */
static shape_entry *shape_slot(shape_cache *c, const char *s, double px)
{
    size_t i = shape_hash(s, px) & (SHAPE_SLOTS - 1);
    while (c->slot[i].s && !(c->slot[i].px == px && strcmp(c->slot[i].s, s) == 0))
        i = (i + 1) & (SHAPE_SLOTS - 1);
    return &c->slot[i];
}

/* 1 with *run a copy of the cached run of (s, px); 0 when it is not cached. */
static int shape_cache_get(shape_cache *c, const char *s, double px, vz_run *run)
{
    pthread_mutex_lock(&c->mu);
    const shape_entry *e = shape_slot(c, s, px);
    int hit = e->s != NULL && run_copy(run, &e->run);
    pthread_mutex_unlock(&c->mu);
    return hit;
}

/* Keeps a copy of run for (s, px) (not when the cache is full or on OOM). */
static void shape_cache_put(shape_cache *c, const char *s, double px, const vz_run *run)
{
    pthread_mutex_lock(&c->mu);
    shape_entry *e = shape_slot(c, s, px);
    if (e->s == NULL && c->n < SHAPE_CAP) {
        vz_run r;
        char *k = hs_strdup(s);
        if (k && run_copy(&r, run)) {
            e->s = k;
            e->px = px;
            e->run = r;
            c->n++;
        } else {
            free(k);
        }
    }
    pthread_mutex_unlock(&c->mu);
}

struct hs_viz_font {
    char *path;          /* the font file (owned) */
    hb_blob_t *blob;
    hb_face_t *face;
    hb_font_t *font;     /* scale = units per em: positions are in font units */
    hb_buffer_t *buf;    /* reused for every shaping call */
    double upem;
    double asc, desc;    /* ascender (> 0) and descender (> 0, below the baseline), em */
    cairo_font_face_t *cairo; /* the same file for cairo (PNG, PDF) */
    shape_cache *shapes; /* shared with every copy (vz_font_share) */
    vz_fallbacks *fb;    /* the faces for what it lacks, shared with every copy */
};

/* fontconfig's match for "DejaVu Sans", or NULL when it has none whose
 * family is DejaVu Sans. Returned string is malloc'd. */
static char *fontconfig_dejavu(void)
{
    char *res = NULL;
    FcConfig *cfg = FcInitLoadConfigAndFonts();
    if (!cfg) return NULL;
    FcPattern *pat = FcNameParse((const FcChar8 *)"DejaVu Sans:style=Book");
    if (pat) {
        FcConfigSubstitute(cfg, pat, FcMatchPattern);
        FcDefaultSubstitute(pat);
        FcResult r;
        FcPattern *m = FcFontMatch(cfg, pat, &r);
        if (m) {
            FcChar8 *file = NULL, *fam = NULL;
            if (FcPatternGetString(m, FC_FILE, 0, &file) == FcResultMatch &&
                FcPatternGetString(m, FC_FAMILY, 0, &fam) == FcResultMatch &&
                strcmp((const char *)fam, "DejaVu Sans") == 0)
                res = hs_strdup((const char *)file);
            FcPatternDestroy(m);
        }
        FcPatternDestroy(pat);
    }
    FcConfigDestroy(cfg);
    return res;
}

hs_status vz_font_find(const char *explicit_path, char **path, hs_error *err)
{
    *path = NULL;
    const char *p = explicit_path;
    const char *why = "the font option";
    if (p == NULL || p[0] == '\0') {
        p = getenv("HS_FONT");
        why = "$HS_FONT";
    }
    if (p != NULL && p[0] != '\0') {
        if (access(p, R_OK) != 0)
            return hs_fail(err, HS_ERR_IO, "font %s (from %s): %s", p, why, strerror(errno));
        *path = hs_strdup(p);
        return *path ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    /* the Debian path first: the file fontconfig matches for DejaVu Sans
     * wherever fonts-dejavu-core put it there, opened without fontconfig
     * (its configuration parsed and caches read: ~3 ms of every command
     * that draws text, most of what `inspect` waits for before its figures) */
    if (access(VZ_DEBIAN_FONT, R_OK) == 0) {
        *path = hs_strdup(VZ_DEBIAN_FONT);
        return *path ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    *path = fontconfig_dejavu();
    if (*path) return HS_OK;
    return hs_fail(err, HS_ERR_IO,
                   "no DejaVu Sans font found (fontconfig has none and %s is missing); "
                   "HINT: install fonts-dejavu-core or set HS_FONT=/path/to/font.ttf",
                   VZ_DEBIAN_FONT);
}

hs_status vz_font_open(vz_font **out, const char *path, hs_error *err)
{
    *out = NULL;
    vz_font *f = calloc(1, sizeof *f);
    if (!f) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    f->path = hs_strdup(path);
    if (!f->path) {
        free(f);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    f->blob = hb_blob_create_from_file(path);
    if (hb_blob_get_length(f->blob) == 0) {
        vz_font_close(f);
        return hs_fail(err, HS_ERR_IO, "font %s: cannot read it", path);
    }
    f->face = hb_face_create(f->blob, 0);
    f->upem = hb_face_get_upem(f->face);
    if (hb_face_get_glyph_count(f->face) == 0 || !(f->upem > 0)) {
        vz_font_close(f);
        return hs_fail(err, HS_ERR_IO, "font %s is not a scalable (TrueType/OpenType) font",
                       path);
    }
    f->font = hb_font_create(f->face);
    hb_font_set_scale(f->font, (int)f->upem, (int)f->upem);
    f->buf = hb_buffer_create();
    f->shapes = shape_cache_new();
    f->fb = vz_fallbacks_new();
    hb_font_extents_t ext;
    hb_font_get_h_extents(f->font, &ext);
    f->asc = ext.ascender / f->upem;
    f->desc = -ext.descender / f->upem;
    FcPattern *pat = FcPatternCreate();
    if (!pat || !hb_buffer_allocation_successful(f->buf) || !f->shapes || !f->fb ||
        !FcPatternAddString(pat, FC_FILE, (const FcChar8 *)path) ||
        !FcPatternAddInteger(pat, FC_INDEX, 0)) {
        if (pat) FcPatternDestroy(pat);
        vz_font_close(f);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory opening font %s", path);
    }
    f->cairo = cairo_ft_font_face_create_for_pattern(pat);
    FcPatternDestroy(pat);
    if (cairo_font_face_status(f->cairo) != CAIRO_STATUS_SUCCESS) {
        vz_font_close(f);
        return hs_fail(err, HS_ERR_IO, "font %s: cairo cannot open it", path);
    }
    *out = f;
    return HS_OK;
}

hs_status vz_font_share(vz_font **out, const vz_font *src, hs_error *err)
{
    *out = NULL;
    vz_font *f = calloc(1, sizeof *f);
    if (!f || !(f->path = hs_strdup(src->path))) {
        free(f);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    f->buf = hb_buffer_create();
    if (!hb_buffer_allocation_successful(f->buf)) {
        vz_font_close(f);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    /* HarfBuzz's and cairo's objects are reference-counted and safe to use
       from several threads at once; only the shaping buffer is per copy */
    f->blob = hb_blob_reference(src->blob);
    f->face = hb_face_reference(src->face);
    f->font = hb_font_reference(src->font);
    f->cairo = cairo_font_face_reference(src->cairo);
    f->shapes = src->shapes;
    atomic_fetch_add(&f->shapes->refs, 1);
    f->fb = src->fb;
    vz_fallbacks_ref(f->fb);
    f->upem = src->upem;
    f->asc = src->asc;
    f->desc = src->desc;
    *out = f;
    return HS_OK;
}

const char *vz_font_file(const vz_font *f) { return f->path; }

void vz_font_close(vz_font *f)
{
    if (f == NULL) return;
    free(f->path);
    shape_cache_unref(f->shapes);
    vz_fallbacks_unref(f->fb);
    if (f->cairo) cairo_font_face_destroy(f->cairo);
    if (f->buf) hb_buffer_destroy(f->buf);
    if (f->font) hb_font_destroy(f->font);
    if (f->face) hb_face_destroy(f->face);
    if (f->blob) hb_blob_destroy(f->blob);
    free(f);
}

cairo_font_face_t *vz_font_cairo(const vz_font *f, int face)
{
    return face == 0 ? f->cairo : vz_fallbacks_cairo(f->fb, face);
}

const char *vz_font_family(const vz_font *f, int face)
{
    return face == 0 ? "DejaVu Sans" : vz_fallbacks_family(f->fb, face);
}

/* The face of each code point of s into face[] (one entry per byte, at the
 * code point's first byte): the primary font when it has the character,
 * else the face of the character before when that has it (marks, joiners
 * and spaces stay with their run), else the fallback for it (0 when none
 * has it: .notdef). Returns 1 when any is a fallback face. */
static int faces_of(vz_font *f, const char *s, size_t len, int *face)
{
    int any = 0, prev = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp = 0xfffd;
        size_t k = hs_utf8_decode((const unsigned char *)s + i, len - i, &cp);
        if (k == 0) k = 1;
        hb_codepoint_t gid;
        int fc = 0;
        if (prev > 0 && vz_fallbacks_has(f->fb, prev, cp)) fc = prev;
        else if (hb_font_get_nominal_glyph(f->font, cp, &gid)) fc = 0;
        else fc = vz_fallbacks_face(f->fb, cp);
        for (size_t j = 0; j < k; j++) face[i + j] = fc;
        any |= fc > 0;
        prev = fc;
        i += k;
    }
    return any;
}

/* Shapes bytes [start, start + n) of s (the rest is context) with face k
 * into b. */
static void shape_piece(vz_font *f, const char *s, size_t start, size_t n, int k)
{
    hb_buffer_t *b = f->buf;
    hb_buffer_clear_contents(b);
    hb_buffer_add_utf8(b, s, -1, (unsigned)start, (int)n);
    hb_buffer_guess_segment_properties(b);
    hb_shape(k == 0 ? f->font : vz_fallbacks_hb(f->fb, k), b, NULL, 0);
}

hs_status vz_font_shape(vz_font *f, const char *s, double px, vz_run *run)
{
    memset(run, 0, sizeof *run);
    if (shape_cache_get(f->shapes, s, px, run)) return HS_OK;
    size_t len = strlen(s);
    int *face = NULL;
    if (len > 0) {
        face = malloc(len * sizeof *face);
        if (!face) return HS_ERR_NOMEM;
    }
    /* without fallback faces, one piece: the whole string in the primary font */
    int mixed = len > 0 && faces_of(f, s, len, face);
    double pen = 0, l = INFINITY, r = -INFINITY, t = 0, d = 0; /* px */
    size_t cap = 0;
    for (size_t start = 0; start < len || (start == 0 && len == 0);) {
        size_t end = len;
        int k = 0;
        if (mixed) {
            k = face[start];
            for (end = start + 1; end < len && (face[end] == k || (s[end] & 0xc0) == 0x80); end++) {}
        }
        shape_piece(f, s, start, end - start, k);
        hb_buffer_t *b = f->buf;
        if (!hb_buffer_allocation_successful(b)) goto nomem;
        unsigned n = 0;
        const hb_glyph_info_t *gi = hb_buffer_get_glyph_infos(b, &n);
        const hb_glyph_position_t *gp = hb_buffer_get_glyph_positions(b, NULL);
        if (run->n + n > cap) {
            size_t nc = run->n + n;
            vz_glyph *g = realloc(run->g, nc * sizeof *g);
            if (!g) goto nomem;
            run->g = g;
            cap = nc;
        }
        hb_font_t *hf = k == 0 ? f->font : vz_fallbacks_hb(f->fb, k);
        double kk = px / (k == 0 ? f->upem : vz_fallbacks_upem(f->fb, k)), p = 0;
        for (unsigned i = 0; i < n; i++) {
            vz_glyph *g = &run->g[run->n + i];
            g->id = gi[i].codepoint;
            g->x = pen + (p + gp[i].x_offset) * kk;
            g->y = -gp[i].y_offset * kk;
            g->cluster = gi[i].cluster;
            g->face = k;
            hb_glyph_extents_t e;
            if (hb_font_get_glyph_extents(hf, gi[i].codepoint, &e) && e.width != 0) {
                /* in font units first, then scaled: one piece is what it always was */
                double u0 = p + gp[i].x_offset + e.x_bearing, ut = gp[i].y_offset + e.y_bearing;
                double x0 = pen + u0 * kk, x1 = pen + (u0 + e.width) * kk;
                double top = ut * kk, bot = -(ut + e.height) * kk;
                if (x0 < l) l = x0;
                if (x1 > r) r = x1;
                if (top > t) t = top;
                if (bot > d) d = bot;
            }
            p += gp[i].x_advance;
        }
        run->n += n;
        pen += p * kk;
        if (len == 0) break;
        start = end;
    }
    free(face);
    run->adv = pen;
    if (r < l) { l = 0; r = 0; } /* no ink (spaces only) */
    run->ink_l = l;
    run->ink_r = r;
    run->ink_t = t;
    run->ink_b = d;
    shape_cache_put(f->shapes, s, px, run);
    return HS_OK;
nomem:
    free(face);
    vz_run_free(run);
    return HS_ERR_NOMEM;
}

void vz_run_free(vz_run *run)
{
    free(run->g);
    run->g = NULL;
    run->n = 0;
}

int vz_font_width(vz_font *f, const char *s, double px)
{
    vz_run r;
    if (vz_font_shape(f, s, px, &r) != HS_OK) return (int)ceil(strlen(s) * px); /* over-estimate */
    double w = fmax(r.adv, r.ink_r);
    vz_run_free(&r);
    return (int)ceil(w - 1e-9);
}

int vz_font_line(vz_font *f, double px) { return (int)ceil((f->asc + f->desc) * px - 1e-9); }

int vz_font_ascender(vz_font *f, double px) { return (int)ceil(f->asc * px - 1e-9); }

hs_status hs_viz_font_path(const char *font_path, char **path, hs_error *err)
{
    return vz_font_find(font_path, path, err);
}

hs_status hs_viz_font_open(const char *font_path, hs_viz_font **out, hs_error *err)
{
    *out = NULL;
    char *path = NULL;
    hs_status s = vz_font_find(font_path, &path, err);
    if (s == HS_OK) s = vz_font_open(out, path, err);
    free(path);
    return s;
}

void hs_viz_font_close(hs_viz_font *f) { vz_font_close(f); }
