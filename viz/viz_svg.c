/*
 * viz/viz_svg.c -- a figure as SVG from the same display list as the PNG and
 * the PDF (pixel units in the viewBox, physical size in inches from the
 * dpi): <title>/<desc>, one <g id> per group (a panel "L1H0", "colorbar",
 * "legend", "title", a graph's node or edge, ...), cells as <rect>, curves
 * (a graph's edges) as <path>, masked cells hatched through one
 * <pattern>, the colour bar as one <linearGradient>, every label one <text>
 * (selectable, editable), XML-escaped.
 */
#include <math.h>
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

/* <defs>: one gradient per colour map a colour bar uses, one hatch pattern
 * per masked-cell size. Ids: "cbar-<2 * cmap + vertical>", "hatch-<cell px>". */
static void write_defs(hs_buf *b, const hs_viz_figure *f)
{
    hs_buf_puts(b, "<defs>\n");
    int seen_cmap[16] = {0};
    int hatch[16], n_hatch = 0;
    for (size_t i = 0; i < f->n_rects; i++) {
        const vz_rect *r = &f->rects[i];
        int gi = (int)r->cmap * 2 + (r->vertical != 0);
        if (r->kind == VZ_R_CBAR && gi >= 0 && gi < 16 && !seen_cmap[gi]) {
            seen_cmap[gi] = 1;
            hs_buf_printf(b, "<linearGradient id=\"cbar-%d\" x1=\"0\" y1=\"%d\" x2=\"%d\" y2=\"0\">\n",
                          gi, r->vertical ? 1 : 0, r->vertical ? 0 : 1);
            for (int k = 0; k < 256; k++) {
                unsigned char c[3];
                hs_viz_cmap_rgb(r->cmap, k / 255.0, c);
                hs_buf_printf(b, "<stop offset=\"%.4f\" stop-color=\"#%02x%02x%02x\"/>\n",
                              k / 255.0, c[0], c[1], c[2]);
            }
            hs_buf_puts(b, "</linearGradient>\n");
        }
        if (r->kind == VZ_R_MASKED) {
            int cell = r->w < r->h ? r->w : r->h, dup = 0;
            for (int k = 0; k < n_hatch && !dup; k++) dup = hatch[k] == cell;
            if (dup || n_hatch == 16) continue;
            hatch[n_hatch++] = cell;
            double sp, lw;
            vz_hatch_geometry(cell, &sp, &lw);
            /* lines x + y = k * sp, in canvas coordinates like the PNG's */
            hs_buf_printf(b,
                          "<pattern id=\"hatch-%d\" patternUnits=\"userSpaceOnUse\" x=\"0\" "
                          "y=\"0\" width=\"%.4f\" height=\"%.4f\">"
                          "<rect width=\"%.4f\" height=\"%.4f\" fill=\"#%02x%02x%02x\"/>"
                          "<path d=\"M%.4f,%.4f L%.4f,%.4f M0,%.4f L%.4f,0 M%.4f,%.4f L%.4f,%.4f\" "
                          "stroke=\"#%02x%02x%02x\" stroke-width=\"%.3f\" fill=\"none\"/>"
                          "</pattern>\n",
                          cell, sp, sp, sp, sp, HS_VIZ_MASK_RGB[0], HS_VIZ_MASK_RGB[1],
                          HS_VIZ_MASK_RGB[2], -lw, lw, lw, -lw, sp, sp, sp - lw, sp + lw, sp + lw,
                          sp - lw,
                          VZ_HATCH_RGB[0], VZ_HATCH_RGB[1], VZ_HATCH_RGB[2], lw);
        }
    }
    hs_buf_puts(b, "</defs>\n");
}

static void write_rect(hs_buf *b, const vz_rect *r)
{
    hs_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" ", r->x, r->y, r->w, r->h);
    if (r->kind == VZ_R_CBAR)
        hs_buf_printf(b, "fill=\"url(#cbar-%d)\" class=\"cbar\"",
                      (int)r->cmap * 2 + (r->vertical != 0));
    else if (r->kind == VZ_R_MASKED) /* a masked cell or the legend's swatch */
        hs_buf_printf(b, "fill=\"url(#hatch-%d)\"", r->w < r->h ? r->w : r->h);
    else
        hs_buf_printf(b, "fill=\"#%02x%02x%02x\"", r->rgb[0], r->rgb[1], r->rgb[2]);
    if (r->kind == VZ_R_CELL || (r->kind == VZ_R_MASKED && r->panel >= 0))
        hs_buf_printf(b, " class=\"%s\" data-panel=\"%d\" data-row=\"%d\" data-col=\"%d\"",
                      r->kind == VZ_R_MASKED ? "masked" : "cell", r->panel, r->row, r->col);
    else if (r->kind == VZ_R_BAR)
        hs_buf_printf(b, " class=\"bar\" data-row=\"%d\"", r->row);
    hs_buf_puts(b, "/>\n");
}

/* A curve as <path>: the same Bezier, width and dashes as the PNG's. */
static void write_curve(hs_buf *b, const vz_curve *k)
{
    hs_buf_printf(b,
                  "<path d=\"M%.2f %.2f C%.2f %.2f %.2f %.2f %.2f %.2f\" fill=\"none\" "
                  "stroke=\"#%02x%02x%02x\" stroke-width=\"%.3f\"",
                  k->x0, k->y0, k->x1, k->y1, k->x2, k->y2, k->x3, k->y3, k->rgb[0], k->rgb[1],
                  k->rgb[2], k->width);
    if (k->dash_on > 0) hs_buf_printf(b, " stroke-dasharray=\"%.3f %.3f\"", k->dash_on, k->dash_off);
    hs_buf_puts(b, "/>\n");
}

static void write_text(hs_buf *b, const hs_viz_figure *f, const vz_text *t)
{
    int asc = vz_font_ascender(f->font, t->px);
    hs_buf_printf(b, "<text class=\"%s\" font-size=\"%.2f\" fill=\"#%02x%02x%02x\" ",
                  role_class[t->role], t->px, t->rgb[0], t->rgb[1], t->rgb[2]);
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
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
                  "width=\"%.4fin\" height=\"%.4fin\" viewBox=\"0 0 %d %d\">\n",
                  f->width / vz_figure_ppi(f), f->height / vz_figure_ppi(f), f->width, f->height);
    hs_buf_puts(&b, "<title>");
    hs_viz_xml_escape(&b, f->title ? f->title : "headscope figure");
    hs_buf_puts(&b, "</title>\n<desc>");
    hs_viz_xml_escape(&b, f->desc ? f->desc : "made by headscope");
    hs_buf_puts(&b, "</desc>\n");
    write_defs(&b, f);
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
            for (size_t i = 0; i < f->n_rects; i++)
                if (f->rects[i].group == (int)g) write_rect(&b, &f->rects[i]);
            hs_buf_puts(&b, "</g>\n");
        }
        for (size_t i = 0; nc && i < f->n_curves; i++)
            if (f->curves[i].group == (int)g) write_curve(&b, &f->curves[i]);
        if (nt) {
            hs_buf_puts(&b, "<g font-family=\"DejaVu Sans, Verdana, sans-serif\">\n");
            for (size_t i = 0; i < f->n_texts; i++)
                if (f->texts[i].group == (int)g) write_text(&b, f, &f->texts[i]);
            hs_buf_puts(&b, "</g>\n");
        }
        hs_buf_puts(&b, "</g>\n");
    }
    hs_buf_puts(&b, "</svg>\n");
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
