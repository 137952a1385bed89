/*
 * viz/viz_svg.c -- a figure as SVG from the same display list as the PNG and
 * the PDF (pixel units in the viewBox, physical size in inches from the
 * dpi): <title>/<desc>, one <g id> per group (a panel "L1H0", "colorbar",
 * "legend", "title", a graph's node or edge, ...), a panel's cells as
 * overlapping squares (write_cells), other rectangles as <rect>, curves
 * (a graph's edges) as <path>, masked cells hatched through one
 * <pattern>, the colour bar as one <linearGradient> (the map's entries
 * within 1/255), every label one <text>
 * (selectable, editable), XML-escaped.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "viz/viz_internal.h"

int hs_viz_xml_escape(hs_buf *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    for (size_t k = 0; k < n;) {
        uint32_t cp = 0;
        size_t len = hs_utf8_decode(p + k, n - k, &cp);
        hs_cp_class c = len ? hs_cp_classify(cp) : HS_CP_CONTROL;
        if (len == 0) len = 1;
        if (cp == '&') hs_buf_puts(b, "&amp;");
        else if (cp == '<') hs_buf_puts(b, "&lt;");
        else if (cp == '>') hs_buf_puts(b, "&gt;");
        else if (cp == '"') hs_buf_puts(b, "&quot;");
        else if (cp == '\'') hs_buf_puts(b, "&apos;");
        else if ((c == HS_CP_CONTROL && cp != '\t' && cp != '\n' && cp != '\r') ||
                 c == HS_CP_NONCHAR)
            hs_buf_puts(b, "\xEF\xBF\xBD"); /* U+FFFD */
        else hs_buf_append(b, s + k, len);
        k += len;
    }
    return b->oom ? -1 : 0;
}

static const char *role_class[VZ_T_NROLES] = {"title", "xtick", "ytick", "header", "cbar",
                                              "axis",  "annot", "label", "value"};

/* The id of masked rect r's hatch pattern: "hatch-<cell px>" on the lilac
 * fill, "hatch-<cell px>-<rrggbb>" on another (vz_mask_rgb). */
static void hatch_id(char *id, size_t n, const vz_rect *r)
{
    int cell = r->w < r->h ? r->w : r->h;
    if (memcmp(r->rgb, HS_VIZ_MASK_RGB, 3) == 0) snprintf(id, n, "hatch-%d", cell);
    else snprintf(id, n, "hatch-%d-%02x%02x%02x", cell, r->rgb[0], r->rgb[1], r->rgb[2]);
}

/* Do the entries k < m < j of c lie within 1 (of 255) of the straight line
 * from c[k] to c[j], in every channel? */
static int lerp_fits(const unsigned char c[][3], int k, int j)
{
    for (int m = k + 1; m < j; m++)
        for (int ch = 0; ch < 3; ch++) {
            double t = (double)(m - k) / (j - k), v = c[k][ch] + t * (c[j][ch] - c[k][ch]);
            if (fabs(v - c[m][ch]) > 1.0) return 0;
        }
    return 1;
}

/* <defs>: one gradient per colour map a colour bar uses, one hatch pattern
 * per masked-cell size and fill. Ids: "cbar-<2 * cmap + vertical>", hatch_id's. */
static void write_defs(hs_buf *b, const hs_viz_figure *f)
{
    hs_buf_puts(b, "<defs>\n");
    int seen_cmap[16] = {0};
    long hatch[16];
    int n_hatch = 0;
    for (size_t i = 0; i < f->n_rects; i++) {
        const vz_rect *r = &f->rects[i];
        int gi = (int)r->cmap * 2 + (r->vertical != 0);
        if (r->kind == VZ_R_CBAR && gi >= 0 && gi < 16 && !seen_cmap[gi]) {
            seen_cmap[gi] = 1;
            hs_buf_printf(b, "<linearGradient id=\"cbar-%d\" x1=\"0\" y1=\"%d\" x2=\"%d\" y2=\"0\">\n",
                          gi, r->vertical ? 1 : 0, r->vertical ? 0 : 1);
            unsigned char c[256][3];
            for (int k = 0; k < 256; k++) hs_viz_cmap_rgb(r->cmap, k / 255.0, c[k]);
            /* the map's 256 entries as the fewest stops whose linear
               interpolation meets every entry within 1 of 255 per channel */
            for (int k = 0; k < 256;) {
                hs_buf_printf(b, "<stop offset=\"%.4f\" stop-color=\"#%02x%02x%02x\"/>\n",
                              k / 255.0, c[k][0], c[k][1], c[k][2]);
                if (k == 255) break;
                int j = k + 1;
                while (j < 255 && lerp_fits(c, k, j + 1)) j++;
                k = j;
            }
            hs_buf_puts(b, "</linearGradient>\n");
        }
        if (r->kind == VZ_R_MASKED) {
            int cell = r->w < r->h ? r->w : r->h, dup = 0;
            long key = (long)cell << 24 | r->rgb[0] << 16 | r->rgb[1] << 8 | r->rgb[2];
            for (int k = 0; k < n_hatch && !dup; k++) dup = hatch[k] == key;
            if (dup || n_hatch == 16) continue;
            hatch[n_hatch++] = key;
            double sp, lw;
            vz_hatch_geometry(cell, &sp, &lw);
            char id[48];
            hatch_id(id, sizeof id, r);
            /* lines x + y = k * sp, in canvas coordinates like the PNG's */
            hs_buf_printf(b,
                          "<pattern id=\"%s\" patternUnits=\"userSpaceOnUse\" x=\"0\" "
                          "y=\"0\" width=\"%.4f\" height=\"%.4f\">"
                          "<rect width=\"%.4f\" height=\"%.4f\" fill=\"#%02x%02x%02x\"/>"
                          "<path d=\"M%.4f,%.4f L%.4f,%.4f M0,%.4f L%.4f,0 M%.4f,%.4f L%.4f,%.4f\" "
                          "stroke=\"#%02x%02x%02x\" stroke-width=\"%.3f\" fill=\"none\"/>"
                          "</pattern>\n",
                          id, sp, sp, sp, sp, r->rgb[0], r->rgb[1], r->rgb[2], -lw, lw, lw, -lw,
                          sp, sp, sp - lw, sp + lw, sp + lw, sp - lw,
                          VZ_HATCH_RGB[0], VZ_HATCH_RGB[1], VZ_HATCH_RGB[2], lw);
        }
    }
    hs_buf_puts(b, "</defs>\n");
}

static void write_rect(hs_buf *b, const vz_rect *r)
{
    hs_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" ", r->x, r->y, r->w, r->h);
    char id[48];
    hatch_id(id, sizeof id, r);
    if (r->kind == VZ_R_CBAR)
        hs_buf_printf(b, "fill=\"url(#cbar-%d)\" class=\"cbar\"",
                      (int)r->cmap * 2 + (r->vertical != 0));
    else if (r->kind == VZ_R_MASKED) /* a masked cell or the legend's swatch */
        hs_buf_printf(b, "fill=\"url(#%s)\"", id);
    else
        hs_buf_printf(b, "fill=\"#%02x%02x%02x\"", r->rgb[0], r->rgb[1], r->rgb[2]);
    if (r->kind == VZ_R_CELL || (r->kind == VZ_R_MASKED && r->panel >= 0))
        hs_buf_printf(b, " class=\"%s\" data-panel=\"%d\" data-row=\"%d\" data-col=\"%d\"",
                      r->kind == VZ_R_MASKED ? "masked" : "cell", r->panel, r->row, r->col);
    else if (r->kind == VZ_R_BAR)
        hs_buf_printf(b, " class=\"bar\" data-row=\"%d\"", r->row);
    hs_buf_puts(b, "/>\n");
}

/* A panel's grid: the cell at (row, col) of rects[first]'s group and panel,
 * 0 none, 1 plain, 2 masked; its index in f->rects. */
typedef struct {
    int x0, y0, side, R, C;
    unsigned char *kind; /* [R, C] */
    size_t *idx;         /* [R, C] */
} cell_grid;

/* Does the cell at (i, j) exist and come later than (r, c) in write_cells'
 * order (plain cells row by row, then masked cells row by row)? */
static int later(const cell_grid *g, int r, int c, int i, int j)
{
    if (i < 0 || j < 0 || i >= g->R || j >= g->C) return 0;
    int a = g->kind[(size_t)r * g->C + c], k = g->kind[(size_t)i * g->C + j];
    if (k == 0) return 0;
    if (k != a) return k == 2; /* masked after plain */
    return i > r || (i == r && j > c);
}

/* The panel of cells of rects[first] as vector squares, plain cells first
 * (a <path> in cell units for each run of one colour in a row) then masked
 * ones (hatched <rect class="masked">), each square grown by half a cell
 * under its neighbours drawn after it: two anti-aliased edges never meet over the background,
 * so no renderer (browsers, librsvg, CairoSVG, Inkscape) draws seams between
 * cells, and every renderer shows the PNG's picture (an image of a pixel a
 * cell would be smoothed by librsvg and CairoSVG, which ignore
 * image-rendering). Its cells marked in done. 0 when they are not one grid
 * (the caller writes them one by one); out of memory sets b->oom. */
static int write_cells(hs_buf *b, const hs_viz_figure *f, size_t first, unsigned char *done)
{
    const vz_rect *r0 = &f->rects[first];
    const int side = r0->w;
    int xa = INT32_MAX, ya = INT32_MAX, xb = INT32_MIN, yb = INT32_MIN;
    for (size_t i = first; i < f->n_rects; i++) {
        const vz_rect *r = &f->rects[i];
        if (r->group != r0->group || r->panel != r0->panel ||
            (r->kind != VZ_R_CELL && r->kind != VZ_R_MASKED))
            continue;
        if (r->w != side || r->h != side) return 0;
        xa = r->x < xa ? r->x : xa;
        ya = r->y < ya ? r->y : ya;
        xb = r->x + side > xb ? r->x + side : xb;
        yb = r->y + side > yb ? r->y + side : yb;
    }
    if (side < 1 || (xb - xa) % side || (yb - ya) % side) return 0;
    cell_grid g = {xa, ya, side, (yb - ya) / side, (xb - xa) / side, NULL, NULL};
    g.kind = calloc((size_t)g.R * g.C, 1);
    g.idx = malloc((size_t)g.R * g.C * sizeof *g.idx);
    if (!g.kind || !g.idx) {
        free(g.kind);
        free(g.idx);
        return 0;
    }
    for (size_t i = first; i < f->n_rects; i++) {
        const vz_rect *r = &f->rects[i];
        if (r->group != r0->group || r->panel != r0->panel ||
            (r->kind != VZ_R_CELL && r->kind != VZ_R_MASKED))
            continue;
        size_t k = (size_t)((r->y - ya) / side) * g.C + (size_t)((r->x - xa) / side);
        g.kind[k] = r->kind == VZ_R_CELL ? 1 : 2;
        g.idx[k] = i;
        done[i] = 1;
    }
    hs_buf_printf(b, "<g class=\"cells\" data-panel=\"%d\" data-rows=\"%d\" data-cols=\"%d\">\n"
                     "<g transform=\"translate(%d %d) scale(%d)\">\n",
                  r0->panel, g.R, g.C, xa, ya, side);
    /* plain cells in cell units, a run of one colour in a row as one
       rectangle, grown by half a cell under later neighbours */
    for (int r = 0; r < g.R; r++) {
        for (int c = 0; c < g.C;) {
            if (g.kind[(size_t)r * g.C + c] != 1) {
                c++;
                continue;
            }
            const unsigned char *rgb = f->rects[g.idx[(size_t)r * g.C + c]].rgb;
            int k = 1;
            while (c + k < g.C && g.kind[(size_t)r * g.C + c + k] == 1 &&
                   memcmp(f->rects[g.idx[(size_t)r * g.C + c + k]].rgb, rgb, 3) == 0)
                k++;
            int el = later(&g, r, c, r, c - 1), er = later(&g, r, c + k - 1, r, c + k);
            int eu = 1, ed = 1;
            for (int j = c - el; j < c + k + er; j++) {
                eu &= later(&g, r, c, r - 1, j);
                ed &= later(&g, r, c, r + 1, j);
            }
            hs_buf_printf(b, "<path d=\"M%g %gh%gv%gh%gz\" fill=\"#%02x%02x%02x\"/>", c - 0.5 * el,
                          r - 0.5 * eu, k + 0.5 * (el + er), 1 + 0.5 * (eu + ed),
                          -(k + 0.5 * (el + er)), rgb[0], rgb[1], rgb[2]);
            c += k;
        }
        hs_buf_puts(b, "\n");
    }
    hs_buf_puts(b, "</g>\n");
    /* masked cells in canvas units (the hatch is in canvas units), after the plain ones */
    const int e = side / 2 > 0 ? side / 2 : 1;
    for (int r = 0; r < g.R; r++)
        for (int c = 0; c < g.C; c++) {
            if (g.kind[(size_t)r * g.C + c] != 2) continue;
            const vz_rect *cr = &f->rects[g.idx[(size_t)r * g.C + c]];
            int el = later(&g, r, c, r, c - 1), er = later(&g, r, c, r, c + 1);
            int eu = 1, ed = 1;
            for (int j = c - el; j <= c + er; j++) {
                eu &= later(&g, r, c, r - 1, j);
                ed &= later(&g, r, c, r + 1, j);
            }
            char id[48];
            hatch_id(id, sizeof id, cr);
            hs_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                             "fill=\"url(#%s)\" class=\"masked\" data-panel=\"%d\" "
                             "data-row=\"%d\" data-col=\"%d\"/>\n",
                          cr->x - e * el, cr->y - e * eu, side + e * (el + er),
                          side + e * (eu + ed), id, cr->panel, cr->row, cr->col);
        }
    hs_buf_puts(b, "</g>\n");
    free(g.kind);
    free(g.idx);
    return 1;
}

/* Curve i and the curves joined to it as one <path>: the same Beziers,
 * width and dashes as the PNG's (a filled one closed and filled). */
static void write_curve(hs_buf *b, const hs_viz_figure *f, size_t i)
{
    const vz_curve *k = &f->curves[i];
    hs_buf_printf(b, "<path d=\"M%.2f %.2f", k->x0, k->y0);
    for (size_t j = i; j < f->n_curves && (j == i || f->curves[j].joined); j++) {
        const vz_curve *q = &f->curves[j];
        hs_buf_printf(b, " C%.2f %.2f %.2f %.2f %.2f %.2f", q->x1, q->y1, q->x2, q->y2, q->x3, q->y3);
    }
    if (k->filled) { /* an arrowhead: closed and filled */
        hs_buf_printf(b, " Z\" fill=\"#%02x%02x%02x\"/>\n", k->rgb[0], k->rgb[1], k->rgb[2]);
        return;
    }
    hs_buf_printf(b, "\" fill=\"none\" stroke=\"#%02x%02x%02x\" stroke-width=\"%.3f\"", k->rgb[0],
                  k->rgb[1], k->rgb[2], k->width);
    if (k->joined == 0 && i + 1 < f->n_curves && f->curves[i + 1].joined)
        hs_buf_puts(b, " stroke-linejoin=\"round\"");
    if (k->dash_on > 0) hs_buf_printf(b, " stroke-dasharray=\"%.3f %.3f\"", k->dash_on, k->dash_off);
    hs_buf_puts(b, "/>\n");
}

static void write_text(hs_buf *b, const hs_viz_figure *f, const vz_text *t)
{
    int asc = vz_font_ascender(f->font, t->px);
    hs_buf_printf(b, "<text class=\"%s\" font-size=\"%.2f\" fill=\"#%02x%02x%02x\" ",
                  role_class[t->role], t->px, t->rgb[0], t->rgb[1], t->rgb[2]);
    /* characters the font lacks: the fallback families the PNG and PDF drew
       them in, after the figure's font */
    int seen[8], n_seen = 0;
    for (size_t i = 0; i < t->run.n; i++) {
        int k = t->run.g[i].face, dup = 0;
        for (int j = 0; j < n_seen; j++) dup |= seen[j] == k;
        if (k == 0 || dup || n_seen == 8) continue;
        if (n_seen == 0) hs_buf_puts(b, "font-family=\"DejaVu Sans");
        seen[n_seen++] = k;
        hs_buf_puts(b, ", ");
        hs_viz_xml_escape(b, vz_font_family(f->font, k));
    }
    if (n_seen > 0) hs_buf_puts(b, ", sans-serif\" ");
    /* pinned at the start, with the length HarfBuzz gave the layout: a renderer
       with other metrics still fits the text into its box */
    if (t->rot == 90)
        hs_buf_printf(b, "transform=\"translate(%d %d) rotate(-90)\" x=\"0\" y=\"0\">",
                      t->x + asc, t->y + t->h);
    else
        hs_buf_printf(b, "x=\"%d\" y=\"%d\">", t->x, t->y + asc);
    hs_viz_xml_escape(b, t->s);
    hs_buf_puts(b, "</text>\n");
}

hs_status hs_viz_figure_svg(const hs_viz_figure *f, char **svg, size_t *len, hs_error *err)
{
    *svg = NULL;
    if (f == NULL) return hs_fail(err, HS_ERR_INPUT, "figure is NULL");
    if (f->vec) f = f->vec; /* laid out at VZ_VECTOR_DPI: the same size at every dpi */
    hs_buf b = {0};
    /* exactly the width asked; the height in the same scale */
    hs_buf_printf(&b,
                  "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" "
                  "xmlns:xlink=\"http://www.w3.org/1999/xlink\" version=\"1.1\" "
                  "width=\"%.4fin\" height=\"%.4fin\" viewBox=\"0 0 %d %d\">\n",
                  f->width / vz_figure_ppi(f), f->height / vz_figure_ppi(f), f->width, f->height);
    hs_buf_puts(&b, "<title>");
    hs_viz_xml_escape(&b, f->title ? f->title : "headscope figure");
    hs_buf_puts(&b, "</title>\n<desc>");
    hs_viz_xml_escape(&b, f->desc ? f->desc : "made by headscope");
    hs_buf_puts(&b, "</desc>\n");
    write_defs(&b, f);
    unsigned char *done = calloc(f->n_rects ? f->n_rects : 1, 1); /* NULL: cell by cell */
    hs_buf_printf(&b, "<rect id=\"background\" x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" "
                      "fill=\"#ffffff\"/>\n", f->width, f->height);
    for (size_t g = 0; g < f->n_groups; g++) {
        size_t nr = 0, nt = 0, nc = 0;
        for (size_t i = 0; i < f->n_rects; i++) nr += f->rects[i].group == (int)g;
        for (size_t i = 0; i < f->n_texts; i++) nt += f->texts[i].group == (int)g;
        for (size_t i = 0; i < f->n_curves; i++) nc += f->curves[i].group == (int)g;
        if (nr + nt + nc == 0) continue;
        hs_buf_puts(&b, "<g id=\"");
        hs_viz_xml_escape(&b, f->groups[g]);
        hs_buf_puts(&b, "\">\n");
        if (nr) {
            hs_buf_puts(&b, "<g shape-rendering=\"crispEdges\">\n");
            for (size_t i = 0; i < f->n_rects; i++) {
                const vz_rect *r = &f->rects[i];
                if (r->group != (int)g || (done && done[i])) continue;
                if (done && (r->kind == VZ_R_CELL || r->kind == VZ_R_MASKED) && r->panel >= 0 &&
                    write_cells(&b, f, i, done))
                    continue;
                write_rect(&b, r);
            }
            hs_buf_puts(&b, "</g>\n");
        }
        for (size_t i = 0; nc && i < f->n_curves; i++)
            if (f->curves[i].group == (int)g && !f->curves[i].joined) write_curve(&b, f, i);
        if (nt) {
            hs_buf_puts(&b, "<g font-family=\"DejaVu Sans, Verdana, sans-serif\">\n");
            for (size_t i = 0; i < f->n_texts; i++)
                if (f->texts[i].group == (int)g) write_text(&b, f, &f->texts[i]);
            hs_buf_puts(&b, "</g>\n");
        }
        hs_buf_puts(&b, "</g>\n");
    }
    hs_buf_puts(&b, "</svg>\n");
    free(done);
    size_t n = b.len;
    char *s = hs_buf_take(&b);
    if (!s) return hs_fail(err, HS_ERR_NOMEM, "out of memory writing SVG");
    *svg = s;
    *len = n;
    return HS_OK;
}

hs_status hs_viz_figure_write_svg(const hs_viz_figure *f, const char *path, hs_error *err)
{
    char *svg;
    size_t n;
    hs_status s = hs_check_out_path(path, err);
    if (s != HS_OK) return s;
    s = hs_viz_figure_svg(f, &svg, &n, err);
    if (s != HS_OK) return s;
    s = hs_write_file_atomic(path, svg, n, err);
    free(svg);
    return s;
}
