/*
 * viz/viz_markup.c -- subscripts and superscripts in a title a program
 * writes (hs_viz_options.title_markup): "W_{E} W_{QK} W_{E}^{T}" is drawn as
 * runs, each its own shaped text item: the base text at the title's size, a
 * subscript at 0.7x lowered 0.25 em, a superscript at 0.7x raised 0.35 em
 * (the em of the title's size), close to TeX's (The TeXbook, appendix G,
 * rule 18 and the font parameters sigma13-sigma17: script size 7/10 of the
 * text; Computer Modern's cmsy10 lowers a subscript sub2 = 0.247 em and
 * raises a superscript sup3..sup1 = 0.289..0.413 em), never under the
 * 6 pt floor (HS_VIZ_FONT_FLOOR_PT). Every output (PNG, PDF, SVG) draws the
 * runs the layout placed.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "viz/viz_internal.h"

#define SCRIPT_SCALE 0.7
#define SUB_DROP 0.25
#define SUP_RISE 0.35

/* Does a script "_{...}" or "^{...}" with its closing brace start at p? */
static int script_at(const char *p)
{
    return (p[0] == '_' || p[0] == '^') && p[1] == '{' && strchr(p + 2, '}') != NULL;
}

/* One piece of a marked-up string from p: its text [*b, *e) and shift (0
 * base, -1 subscript, +1 superscript); returns where the next piece starts. */
static const char *piece(const char *p, const char **b, const char **e, int *shift)
{
    if (script_at(p)) {
        *b = p + 2;
        *e = strchr(p + 2, '}');
        *shift = p[0] == '_' ? -1 : 1;
        return *e + 1;
    }
    const char *q = p + 1;
    while (*q && !script_at(q)) q++;
    *b = p;
    *e = q;
    *shift = 0;
    return q;
}

char *hs_viz_title_plain(const char *title)
{
    hs_buf b = {0};
    hs_buf_puts(&b, "");
    for (const char *p = title ? title : "", *s, *e; *p;) {
        int shift;
        p = piece(p, &s, &e, &shift);
        if (shift) hs_buf_append(&b, shift < 0 ? "_" : "^", 1);
        hs_buf_append(&b, s, (size_t)(e - s));
    }
    if (b.oom) {
        hs_buf_free(&b);
        return NULL;
    }
    return b.s;
}

/* Walks s's pieces at base size px from pen x0 (px) with the baseline at
 * y_base: adds each as a text item when add (its box's top at the baseline
 * less its ascender), and returns the width (px, rounded up: the last
 * piece's advance or its ink's right end), or -1 when out of memory. */
static int walk(vz_ctx *c, const char *s, double px, double x0, int y_base, int add, vz_role role,
                const unsigned char rgb[3])
{
    char *tmp = malloc(strlen(s) + 1);
    if (!tmp) return -1;
    double pen = x0, end = x0;
    int ok = 1;
    for (const char *p = s, *b, *e; *p && ok;) {
        int shift;
        p = piece(p, &b, &e, &shift);
        if (e == b) continue;
        memcpy(tmp, b, (size_t)(e - b));
        tmp[e - b] = '\0';
        /* a script is 0.7x its title, never under the 6 pt floor (nor above the title) */
        const double floor_px = fmin(px, HS_VIZ_FONT_FLOOR_PT * c->o.dpi / 72.0);
        const double ppx = shift ? fmax(SCRIPT_SCALE * px, floor_px) : px;
        vz_run r;
        if (vz_font_shape(c->f->font, tmp, ppx, &r) != HS_OK) {
            ok = 0;
            break;
        }
        if (add) {
            const double dy = shift < 0 ? SUB_DROP * px : shift > 0 ? -SUP_RISE * px : 0;
            const int top = y_base + (int)lround(dy) - vz_font_ascender(c->f->font, ppx);
            ok = vz_add_text(c, tmp, ppx, 0, (int)lround(pen), top, VZ_A_START, role, rgb) == HS_OK;
        }
        end = pen + fmax(r.adv, r.ink_r);
        pen += r.adv;
        vz_run_free(&r);
    }
    free(tmp);
    return ok ? (int)ceil(end - x0 - 1e-9) : -1;
}

int vz_markup_width(vz_ctx *c, const char *s, double px)
{
    int w = walk(c, s, px, 0, 0, 0, VZ_T_TITLE, VZ_BLACK);
    return w < 0 ? 0 : w;
}

hs_status vz_add_markup(vz_ctx *c, const char *s, double px, int x, int y, vz_role role,
                        const unsigned char rgb[3])
{
    const int base = y + vz_font_ascender(c->f->font, px);
    return walk(c, s, px, x, base, 1, role, rgb) < 0 ? HS_ERR_NOMEM : HS_OK;
}
