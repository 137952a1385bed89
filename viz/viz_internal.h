/*
 * viz/viz_internal.h -- the figure's scene (rectangles + text items in pixel
 * units), the font helper and the colour tables, shared by the viz sources
 * and reached by tests (geometry checks). Not part of the public API.
 */
#ifndef HS_VIZ_INTERNAL_H
#define HS_VIZ_INTERNAL_H

#include <stdint.h>

#include "viz/viz.h"

/* Text roles (also the SVG class of each <text>). */
typedef enum {
    VZ_T_TITLE = 0,
    VZ_T_XTICK,   /* token/column label under a map (rotated 90) */
    VZ_T_YTICK,   /* token/row label left of a map */
    VZ_T_HEADER,  /* grid row/column header (L0, H3) */
    VZ_T_CBAR,    /* colour-bar / x-axis tick label */
    VZ_T_AXIS,    /* axis title */
    VZ_T_ANNOT,   /* value written inside a cell */
    VZ_T_LABEL,   /* bar label, legend text */
    VZ_T_VALUE,   /* value at a bar's end */
    VZ_T_NROLES
} vz_role;

typedef enum { VZ_A_START = 0, VZ_A_MIDDLE, VZ_A_END } vz_anchor;

/* A filled axis-aligned rectangle, integer pixels, [x, x+w) x [y, y+h). */
typedef struct {
    int x, y, w, h;
    unsigned char rgb[3];
    int kind;      /* 0 = plain, 1 = heatmap cell, 2 = masked cell */
    int panel;     /* heatmap panel index (layer * H + head), -1 otherwise */
    int row, col;  /* cell row/column in its panel, -1 otherwise */
} vz_rect;

/* A text item. (x, y, w, h) is its box on the canvas (after rotation): the
 * advance width and the font's line height (ascender - descender). rot is 0
 * or 90 (reads bottom to top). The anchor says which end of the text is
 * pinned (for SVG, whose renderer may use other font metrics). */
typedef struct {
    char *s;       /* UTF-8, owned */
    int x, y, w, h;
    int rot;
    double px;     /* font size in pixels (em) */
    vz_anchor anchor;
    vz_role role;
    unsigned char rgb[3];
} vz_text;

/* The font: FreeType face at one pixel size at a time. */
typedef struct vz_font vz_font;

struct hs_viz_figure {
    int width, height;
    double dpi;
    vz_rect *rects;
    size_t n_rects, cap_rects;
    vz_text *texts;
    size_t n_texts, cap_texts;
    char *font_file;   /* resolved font path (owned) */
    vz_font *font;
};

/* ---- colour (viz_color.c) ---- */
extern const unsigned char vz_viridis[256][3];
extern const unsigned char vz_diverging[256][3];

/* ---- font (viz_font.c) ---- */
/* Resolves the font path: explicit, $HS_FONT, fontconfig, Debian path.
 * *path malloc'd. */
hs_status vz_font_find(const char *explicit_path, char **path, hs_error *err);
hs_status vz_font_open(vz_font **f, const char *path, hs_error *err);
void vz_font_close(vz_font *f);
/* Advance width (px, rounded up) of UTF-8 s at size px; line height and
 * ascender (px) at that size. */
int vz_font_width(vz_font *f, const char *s, double px);
int vz_font_line(vz_font *f, double px);
int vz_font_ascender(vz_font *f, double px);
/* Draws s into rgb [h, w, 3] with its box's top-left at (x, y), rotated
 * rot (0 or 90), colour col, alpha-blended; clipped to the canvas. */
void vz_font_draw(vz_font *f, unsigned char *rgb, int w, int h, const char *s, double px,
                  int x, int y, int rot, const unsigned char col[3]);

/* ---- utf-8 (viz_layout.c) ---- */
/* 1 if s is valid UTF-8 (no overlongs/surrogates), else 0. */
int vz_utf8_valid(const char *s);
/* Decodes one code point at *s, advances *s; returns the code point. Assumes valid. */
uint32_t vz_utf8_next(const char **s);
/* Number of code points in valid UTF-8 s. */
size_t vz_utf8_len(const char *s);

/* ---- PNG (viz_png.c) ---- */
/* PNG encoder settings (the bench compares them; the library uses the defaults). */
typedef struct {
    int level;    /* zlib level 0..9 */
    int strategy; /* zlib strategy (Z_DEFAULT_STRATEGY, Z_RLE, ...) */
    int filter;   /* PNG_FILTER_* mask */
} vz_png_params;
extern const vz_png_params VZ_PNG_DEFAULT;
/* Writes rgb [h, w, 3] as a PNG with dpi in pHYs to path, atomically. */
hs_status vz_png_write_rgb(const char *path, const unsigned char *rgb, int w, int h, double dpi,
                           const vz_png_params *pp, hs_error *err);

/* ---- HTML (viz_html.c) ---- */
/* The page's packed form of attention [H, T, T] (hs_viz_attention_json_packed):
 * {"dtype": "float32", "shape": [H, T, T], "causal": bool, "base64": "..."},
 * the float32 values little-endian, base64 (RFC 4648); when every src > dest
 * value is exactly 0, causal is true and only the cells src <= dest are
 * stored, row by row (row d holds d + 1 values). NULL on OOM. */
cJSON *vz_attention_packed(const float *attention, size_t H, size_t T);

#endif /* HS_VIZ_INTERNAL_H */
