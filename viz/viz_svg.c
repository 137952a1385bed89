/*
 * viz/viz_svg.c -- a figure as SVG: the same geometry as the PNG (pixel
 * units in the viewBox, physical size in inches from the dpi), cells as
 * <rect>, every label one <text> (selectable, editable), XML-escaped.
 */
#include <stdarg.h>
#include <string.h>

#include "viz/viz_internal.h"

typedef struct {
    char *buf;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->len + n + 1) nc *= 2;
        char *p = realloc(b->buf, nc);
        if (!p) { b->oom = 1; return; }
        b->buf = p;
        b->cap = nc;
    }
    memcpy(b->buf + b->len, s, n);
    b->len += n;
    b->buf[b->len] = '\0';
}

static void sb_printf(sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void sb_printf(sbuf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) { b->oom = 1; return; }
    sb_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

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

static void sb_escape(sbuf *b, const char *s)
{
    hs_buf e = {0};
    if (hs_viz_xml_escape(&e, s) != 0) b->oom = 1;
    else if (e.len) sb_put(b, e.s, e.len);
    hs_buf_free(&e);
}

static const char *role_class[VZ_T_NROLES] = {"title", "xtick", "ytick", "header", "cbar",
                                              "axis",  "annot", "label", "value"};

hs_status hs_viz_figure_svg(const hs_viz_figure *f, char **svg, size_t *len, hs_error *err)
{
    *svg = NULL;
    if (f == NULL) return hs_fail(err, HS_ERR_INPUT, "figure is NULL");
    sbuf b = {0};
    sb_printf(&b,
              "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
              "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
              "width=\"%.4fin\" height=\"%.4fin\" viewBox=\"0 0 %d %d\">\n",
              f->width / f->dpi, f->height / f->dpi, f->width, f->height);
    sb_printf(&b, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
              f->width, f->height);
    sb_printf(&b, "<g shape-rendering=\"crispEdges\">\n");
    for (size_t i = 0; i < f->n_rects && !b.oom; i++) {
        const vz_rect *r = &f->rects[i];
        sb_printf(&b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#%02x%02x%02x\"",
                  r->x, r->y, r->w, r->h, r->rgb[0], r->rgb[1], r->rgb[2]);
        if (r->kind == 1 || r->kind == 2)
            sb_printf(&b, " class=\"%s\" data-panel=\"%d\" data-row=\"%d\" data-col=\"%d\"",
                      r->kind == 2 ? "masked" : "cell", r->panel, r->row, r->col);
        sb_put(&b, "/>\n", 3);
    }
    sb_printf(&b, "</g>\n<g font-family=\"DejaVu Sans, Verdana, sans-serif\">\n");
    for (size_t i = 0; i < f->n_texts && !b.oom; i++) {
        const vz_text *t = &f->texts[i];
        int asc = vz_font_ascender(f->font, t->px);
        const char *anchor = t->anchor == VZ_A_START ? "start"
                             : t->anchor == VZ_A_MIDDLE ? "middle" : "end";
        int len_along = t->rot == 90 ? t->h : t->w;
        int ax = t->anchor == VZ_A_START ? 0 : t->anchor == VZ_A_MIDDLE ? len_along / 2 : len_along;
        sb_printf(&b, "<text class=\"%s\" font-size=\"%.2f\" fill=\"#%02x%02x%02x\" "
                      "text-anchor=\"%s\" ",
                  role_class[t->role], t->px, t->rgb[0], t->rgb[1], t->rgb[2], anchor);
        if (t->rot == 90)
            sb_printf(&b, "transform=\"translate(%d %d) rotate(-90)\" x=\"0\" y=\"0\">",
                      t->x + asc, t->y + t->h - ax);
        else
            sb_printf(&b, "x=\"%d\" y=\"%d\">", t->x + ax, t->y + asc);
        sb_escape(&b, t->s);
        sb_put(&b, "</text>\n", 8);
    }
    sb_put(&b, "</g>\n</svg>\n", 12);
    if (b.oom) {
        free(b.buf);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory writing SVG");
    }
    *svg = b.buf;
    *len = b.len;
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
