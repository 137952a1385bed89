/*
 * viz/viz_font.c -- finding DejaVu Sans (explicit path, $HS_FONT, fontconfig,
 * the Debian path) and measuring/drawing UTF-8 text with FreeType, upright
 * or rotated 90 degrees (reading bottom to top), alpha-blended into RGB.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include <ft2build.h>
#include FT_FREETYPE_H
#include <fontconfig/fontconfig.h>

#include "viz/viz_internal.h"

#define VZ_DEBIAN_FONT "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"

struct vz_font {
    FT_Library lib;
    FT_Face face;
    long size26; /* current char size, 26.6 */
};

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

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
                res = dup_str((const char *)file);
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
        *path = dup_str(p);
        return *path ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    *path = fontconfig_dejavu();
    if (*path) return HS_OK;
    if (access(VZ_DEBIAN_FONT, R_OK) == 0) {
        *path = dup_str(VZ_DEBIAN_FONT);
        return *path ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
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
    if (FT_Init_FreeType(&f->lib) != 0) {
        free(f);
        return hs_fail(err, HS_ERR_IO, "FreeType failed to initialise");
    }
    FT_Error e = FT_New_Face(f->lib, path, 0, &f->face);
    if (e != 0) {
        FT_Done_FreeType(f->lib);
        free(f);
        return hs_fail(err, HS_ERR_IO, "font %s: FreeType cannot open it (error %d)", path, e);
    }
    if (!FT_IS_SCALABLE(f->face)) {
        vz_font_close(f);
        return hs_fail(err, HS_ERR_IO, "font %s is not a scalable (TrueType/OpenType) font", path);
    }
    *out = f;
    return HS_OK;
}

void vz_font_close(vz_font *f)
{
    if (f == NULL) return;
    if (f->face) FT_Done_Face(f->face);
    if (f->lib) FT_Done_FreeType(f->lib);
    free(f);
}

static void set_size(vz_font *f, double px)
{
    long s = lround(px * 64.0);
    if (s < 64) s = 64;
    if (s != f->size26) {
        FT_Set_Char_Size(f->face, 0, (FT_F26Dot6)s, 72, 72);
        f->size26 = s;
    }
}

#define VZ_LOAD_FLAGS (FT_LOAD_DEFAULT | FT_LOAD_TARGET_LIGHT)

int vz_font_width(vz_font *f, const char *s, double px)
{
    set_size(f, px);
    long pen = 0, right = 0;
    const char *p = s;
    while (*p) {
        uint32_t cp = vz_utf8_next(&p);
        if (FT_Load_Char(f->face, cp, VZ_LOAD_FLAGS) != 0) continue;
        FT_GlyphSlot g = f->face->glyph;
        long ink = pen + g->metrics.horiBearingX + g->metrics.width;
        if (ink > right) right = ink;
        pen += g->advance.x;
    }
    if (pen > right) right = pen;
    return (int)((right + 63) / 64);
}

int vz_font_line(vz_font *f, double px)
{
    set_size(f, px);
    long a = f->face->size->metrics.ascender, d = f->face->size->metrics.descender;
    return (int)((a - d + 63) / 64);
}

int vz_font_ascender(vz_font *f, double px)
{
    set_size(f, px);
    return (int)((f->face->size->metrics.ascender + 63) / 64);
}

static void blend(unsigned char *rgb, int w, int h, int cx, int cy, unsigned a,
                  const unsigned char col[3])
{
    if (cx < 0 || cy < 0 || cx >= w || cy >= h || a == 0) return;
    unsigned char *p = rgb + ((size_t)cy * (size_t)w + (size_t)cx) * 3;
    for (int k = 0; k < 3; k++)
        p[k] = (unsigned char)((p[k] * (255u - a) + col[k] * a + 127u) / 255u);
}

void vz_font_draw(vz_font *f, unsigned char *rgb, int w, int h, const char *s, double px,
                  int x, int y, int rot, const unsigned char col[3])
{
    set_size(f, px);
    int asc = vz_font_ascender(f, px);
    int len = vz_font_width(f, s, px); /* box length along the text */
    long pen = 0;
    const char *p = s;
    while (*p) {
        uint32_t cp = vz_utf8_next(&p);
        if (FT_Load_Char(f->face, cp, VZ_LOAD_FLAGS | FT_LOAD_RENDER) != 0) continue;
        FT_GlyphSlot g = f->face->glyph;
        const FT_Bitmap *bm = &g->bitmap;
        int u0 = (int)((pen + 32) / 64) + g->bitmap_left;
        int v0 = asc - g->bitmap_top;
        for (unsigned gy = 0; gy < bm->rows; gy++) {
            const unsigned char *row = bm->buffer + (long)gy * bm->pitch;
            for (unsigned gx = 0; gx < bm->width; gx++) {
                unsigned a = row[gx];
                if (a == 0) continue;
                int u = u0 + (int)gx, v = v0 + (int)gy;
                if (rot == 90)
                    blend(rgb, w, h, x + v, y + (len - 1 - u), a, col);
                else
                    blend(rgb, w, h, x + u, y + v, a, col);
            }
        }
        pen += g->advance.x;
    }
}

hs_status hs_viz_font_path(const char *font_path, char **path, hs_error *err)
{
    return vz_font_find(font_path, path, err);
}
