/*
 * viz/viz_fallback.c -- the fonts a label's characters fall back to when the
 * primary font (DejaVu Sans) lacks them: CJK, Devanagari, most emoji, ...
 * fontconfig names, for a code point, the fonts that have it, best first
 * (FcFontSort on "sans-serif" with that character); the first scalable,
 * monochrome one is taken (a colour font only when no other has it: emoji
 * then stay glyph outlines in PDF and SVG, as the text beside them). On
 * Debian: fonts-noto-core, fonts-noto-cjk, fonts-symbola (scripts/deps.sh).
 * Faces are opened once per set and shared by every copy of the font; the
 * choice of each code point is remembered.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <cairo-ft.h>
#include <fontconfig/fontconfig.h>
#include <hb.h>

#include "viz/viz_internal.h"

#define FB_MAX 16          /* faces per set (then further scripts draw .notdef) */
#define FB_SLOTS 2048      /* remembered code points (a power of two) */

typedef struct {
    char *file, *family;   /* owned */
    int index;             /* face index in the file (a .ttc collection) */
    hb_blob_t *blob;
    hb_face_t *face;
    hb_font_t *font;       /* scale = units per em */
    double upem;
    cairo_font_face_t *cairo;
} fb_face;

struct vz_fallbacks {
    pthread_mutex_t mu;
    atomic_int refs;
    FcConfig *cfg;          /* loaded at the first code point looked up */
    int n;
    fb_face face[FB_MAX];   /* face k of a glyph is face[k - 1] */
    uint32_t key[FB_SLOTS]; /* code point + 1; 0 = empty slot */
    unsigned char val[FB_SLOTS]; /* its face k, 0 = no font has it */
    size_t n_keys;
};

vz_fallbacks *vz_fallbacks_new(void)
{
    vz_fallbacks *fb = calloc(1, sizeof *fb);
    if (!fb) return NULL;
    if (pthread_mutex_init(&fb->mu, NULL) != 0) {
        free(fb);
        return NULL;
    }
    atomic_init(&fb->refs, 1);
    return fb;
}

void vz_fallbacks_ref(vz_fallbacks *fb) { atomic_fetch_add(&fb->refs, 1); }

static void face_free(fb_face *x)
{
    free(x->file);
    free(x->family);
    if (x->cairo) cairo_font_face_destroy(x->cairo);
    if (x->font) hb_font_destroy(x->font);
    if (x->face) hb_face_destroy(x->face);
    if (x->blob) hb_blob_destroy(x->blob);
    memset(x, 0, sizeof *x);
}

void vz_fallbacks_unref(vz_fallbacks *fb)
{
    if (fb == NULL || atomic_fetch_sub(&fb->refs, 1) != 1) return;
    for (int i = 0; i < fb->n; i++) face_free(&fb->face[i]);
    if (fb->cfg) FcConfigDestroy(fb->cfg);
    pthread_mutex_destroy(&fb->mu);
    free(fb);
}

/* Opens file's face index as face x; 0 when it cannot be read or lacks cp. */
static int face_open(fb_face *x, const char *file, int index, const char *family, uint32_t cp)
{
    memset(x, 0, sizeof *x);
    x->file = hs_strdup(file);
    x->family = hs_strdup(family ? family : "");
    x->index = index;
    x->blob = hb_blob_create_from_file(file);
    if (!x->file || !x->family || hb_blob_get_length(x->blob) == 0) goto fail;
    x->face = hb_face_create(x->blob, (unsigned)index);
    x->upem = hb_face_get_upem(x->face);
    if (!(x->upem > 0)) goto fail;
    x->font = hb_font_create(x->face);
    hb_font_set_scale(x->font, (int)x->upem, (int)x->upem);
    hb_codepoint_t gid;
    if (!hb_font_get_nominal_glyph(x->font, cp, &gid)) goto fail;
    FcPattern *pat = FcPatternCreate();
    if (!pat || !FcPatternAddString(pat, FC_FILE, (const FcChar8 *)file) ||
        !FcPatternAddInteger(pat, FC_INDEX, index)) {
        if (pat) FcPatternDestroy(pat);
        goto fail;
    }
    x->cairo = cairo_ft_font_face_create_for_pattern(pat);
    FcPatternDestroy(pat);
    if (cairo_font_face_status(x->cairo) != CAIRO_STATUS_SUCCESS) goto fail;
    return 1;
fail:
    face_free(x);
    return 0;
}

/* fontconfig's best scalable font having cp (monochrome first): its file,
 * index and family (borrowed from *set, which the caller destroys), or 0. */
static int fc_pick(FcConfig *cfg, uint32_t cp, FcFontSet **set, const char **file, int *index,
                   const char **family)
{
    *set = NULL;
    FcPattern *pat = FcNameParse((const FcChar8 *)"sans-serif");
    FcCharSet *cs = FcCharSetCreate();
    int found = 0;
    if (pat && cs && FcCharSetAddChar(cs, cp) && FcPatternAddCharSet(pat, FC_CHARSET, cs)) {
        FcConfigSubstitute(cfg, pat, FcMatchPattern);
        FcDefaultSubstitute(pat);
        FcResult r;
        *set = FcFontSort(cfg, pat, FcFalse, NULL, &r);
    }
    if (cs) FcCharSetDestroy(cs);
    if (pat) FcPatternDestroy(pat);
    for (int pass = 0; *set && pass < 2 && !found; pass++)
        for (int i = 0; i < (*set)->nfont && !found; i++) {
            FcPattern *m = (*set)->fonts[i];
            FcCharSet *has = NULL;
            FcBool outline = FcFalse, color = FcFalse;
            FcChar8 *fl = NULL, *fam = NULL;
            if (FcPatternGetCharSet(m, FC_CHARSET, 0, &has) != FcResultMatch ||
                !FcCharSetHasChar(has, cp) ||
                FcPatternGetString(m, FC_FILE, 0, &fl) != FcResultMatch)
                continue;
            FcPatternGetBool(m, FC_OUTLINE, 0, &outline);
            FcPatternGetBool(m, FC_COLOR, 0, &color);
            if (!outline && !color) continue; /* bitmap-only fonts do not scale */
            if (pass == 0 && color) continue;
            *index = 0;
            FcPatternGetInteger(m, FC_INDEX, 0, index);
            FcPatternGetString(m, FC_FAMILY, 0, &fam);
            *file = (const char *)fl;
            *family = (const char *)fam;
            found = 1;
        }
    return found;
}

/* The face k (>= 1) for cp, opening it when new; 0 when none has it. Under fb->mu. */
static int lookup(vz_fallbacks *fb, uint32_t cp)
{
    if (!fb->cfg) fb->cfg = FcInitLoadConfigAndFonts();
    if (!fb->cfg) return 0;
    FcFontSet *set = NULL;
    const char *file = NULL, *family = NULL;
    int index = 0, k = 0;
    if (fc_pick(fb->cfg, cp, &set, &file, &index, &family)) {
        for (int i = 0; i < fb->n && !k; i++)
            if (fb->face[i].index == index && strcmp(fb->face[i].file, file) == 0) {
                hb_codepoint_t gid;
                k = hb_font_get_nominal_glyph(fb->face[i].font, cp, &gid) ? i + 1 : -1;
            }
        if (k == 0 && fb->n < FB_MAX && face_open(&fb->face[fb->n], file, index, family, cp))
            k = ++fb->n;
    }
    if (set) FcFontSetDestroy(set);
    return k > 0 ? k : 0;
}

int vz_fallbacks_face(vz_fallbacks *fb, uint32_t cp)
{
    pthread_mutex_lock(&fb->mu);
    size_t i = ((size_t)cp * 2654435761u) & (FB_SLOTS - 1);
    while (fb->key[i] && fb->key[i] != cp + 1) i = (i + 1) & (FB_SLOTS - 1);
    int k;
    if (fb->key[i]) {
        k = fb->val[i];
    } else {
        k = lookup(fb, cp);
        if (fb->n_keys < FB_SLOTS / 2) {
            fb->key[i] = cp + 1;
            fb->val[i] = (unsigned char)k;
            fb->n_keys++;
        }
    }
    pthread_mutex_unlock(&fb->mu);
    return k;
}

/* A face's fields stay as they were opened, so they are read without the lock
 * by whoever got k from vz_fallbacks_face. */
int vz_fallbacks_has(const vz_fallbacks *fb, int k, uint32_t cp)
{
    hb_codepoint_t gid;
    return hb_font_get_nominal_glyph(fb->face[k - 1].font, cp, &gid);
}

hb_font_t *vz_fallbacks_hb(const vz_fallbacks *fb, int k) { return fb->face[k - 1].font; }

double vz_fallbacks_upem(const vz_fallbacks *fb, int k) { return fb->face[k - 1].upem; }

cairo_font_face_t *vz_fallbacks_cairo(const vz_fallbacks *fb, int k)
{
    return fb->face[k - 1].cairo;
}

const char *vz_fallbacks_family(const vz_fallbacks *fb, int k) { return fb->face[k - 1].family; }
