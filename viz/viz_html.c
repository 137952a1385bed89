/*
 * viz/viz_html.c -- one self-contained HTML page around the JSON of one or
 * more output folders. The page's style, markup and script are the files in
 * viz/html/, turned into the C strings below at build time
 * (cmake/embed.cmake); this file only joins them with the data and the
 * colour tables of viz_color.c, read through the public hs_viz_cmap_rgb, so
 * the page and the PNG/SVG figures have one colour definition.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "viz/viz_internal.h"

/* generated from viz/html/ (build folder, generated/viz_html_assets.c) */
extern const char vz_html_css[];
extern const char vz_html_body[];
extern const char vz_html_graph_js[];
extern const char vz_html_js[];

/* ---- packed attention -------------------------------------------------- */

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *vz_base64(const unsigned char *p, size_t n)
{
    size_t out_n = (n + 2) / 3 * 4;
    char *o = malloc(out_n + 1);
    if (!o) return NULL;
    size_t k = 0, i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        o[k++] = B64[v >> 18 & 63];
        o[k++] = B64[v >> 12 & 63];
        o[k++] = B64[v >> 6 & 63];
        o[k++] = B64[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
        o[k++] = B64[v >> 18 & 63];
        o[k++] = B64[v >> 12 & 63];
        o[k++] = i + 1 < n ? B64[v >> 6 & 63] : '=';
        o[k++] = '=';
    }
    o[k] = '\0';
    return o;
}

/* Appends f as 4 little-endian bytes. */
static void put_f32(unsigned char *p, float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    p[0] = (unsigned char)(u & 0xff);
    p[1] = (unsigned char)(u >> 8 & 0xff);
    p[2] = (unsigned char)(u >> 16 & 0xff);
    p[3] = (unsigned char)(u >> 24 & 0xff);
}

cJSON *vz_attention_packed(const float *a, size_t H, size_t T)
{
    int causal = 1;
    for (size_t h = 0; causal && h < H; h++)
        for (size_t d = 0; causal && d < T; d++)
            for (size_t s = d + 1; s < T; s++)
                if (a[(h * T + d) * T + s] != 0.0f) {
                    causal = 0;
                    break;
                }
    size_t per_head = causal ? T * (T + 1) / 2 : T * T;
    unsigned char *bytes = malloc(H * per_head * 4 + 1);
    if (!bytes) return NULL;
    size_t k = 0;
    for (size_t h = 0; h < H; h++)
        for (size_t d = 0; d < T; d++)
            for (size_t s = 0; s < (causal ? d + 1 : T); s++, k += 4)
                put_f32(bytes + k, a[(h * T + d) * T + s]);
    char *b64 = vz_base64(bytes, k);
    free(bytes);
    cJSON *o = cJSON_CreateObject();
    const int dims[3] = {(int)H, (int)T, (int)T};
    cJSON *shape = cJSON_CreateIntArray(dims, 3);
    cJSON *str = b64 ? cJSON_CreateString(b64) : NULL;
    free(b64);
    if (!o || !shape || !str || !cJSON_AddStringToObject(o, "dtype", "float32") ||
        !cJSON_AddItemToObject(o, "shape", shape) ||
        !cJSON_AddBoolToObject(o, "causal", causal)) {
        cJSON_Delete(o);
        if (!o || !cJSON_GetObjectItem(o, "shape")) cJSON_Delete(shape);
        cJSON_Delete(str);
        return NULL;
    }
    if (!cJSON_AddItemToObject(o, "base64", str)) {
        cJSON_Delete(str);
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* Reads a [H][T][T] number array into a malloc'd float block; 0 = not that shape. */
static int read_cube(const cJSON *a, float **out, size_t *H, size_t *T)
{
    *out = NULL;
    if (!cJSON_IsArray(a)) return 0;
    size_t h = (size_t)cJSON_GetArraySize(a);
    const cJSON *h0 = cJSON_GetArrayItem(a, 0);
    if (h == 0 || !cJSON_IsArray(h0)) return 0;
    size_t t = (size_t)cJSON_GetArraySize(h0);
    if (t == 0) return 0;
    float *f = malloc(h * t * t * sizeof *f);
    if (!f) return -1;
    size_t k = 0, rows = 0;
    for (const cJSON *hh = a->child; hh; hh = hh->next) {
        if (!cJSON_IsArray(hh) || (size_t)cJSON_GetArraySize(hh) != t) goto bad;
        for (const cJSON *r = hh->child; r; r = r->next, rows++) {
            if (!cJSON_IsArray(r) || (size_t)cJSON_GetArraySize(r) != t) goto bad;
            for (const cJSON *v = r->child; v; v = v->next) {
                if (!cJSON_IsNumber(v)) goto bad;
                f[k++] = (float)v->valuedouble;
            }
        }
    }
    if (rows != h * t) goto bad;
    *out = f;
    *H = h;
    *T = t;
    return 1;
bad:
    free(f);
    return 0;
}

static hs_status pack_walk(cJSON *node, hs_error *err)
{
    for (cJSON *it = node ? node->child : NULL; it; it = it->next) {
        if (it->string && strcmp(it->string, "attention") == 0 && cJSON_IsArray(it)) {
            float *f;
            size_t H, T;
            int r = read_cube(it, &f, &H, &T);
            if (r < 0) return hs_fail(err, HS_ERR_NOMEM, "out of memory packing attention");
            if (r == 0)
                return hs_fail(err, HS_ERR_INPUT,
                               "an \"attention\" member is not a [head][dest][src] array of numbers");
            cJSON *p = vz_attention_packed(f, H, T);
            free(f);
            if (!p || !cJSON_ReplaceItemInObjectCaseSensitive(node, "attention", p)) {
                cJSON_Delete(p);
                return hs_fail(err, HS_ERR_NOMEM, "out of memory packing attention");
            }
            it = p;
            continue;
        }
        if (cJSON_IsObject(it) || cJSON_IsArray(it)) {
            hs_status s = pack_walk(it, err);
            if (s) return s;
        }
    }
    return HS_OK;
}

hs_status hs_viz_html_pack(cJSON *data, hs_error *err) { return pack_walk(data, err); }

/* ---- the page ------------------------------------------------------------ */

/* The colour tables as {"viridis": "440154...", ...}: 256 x "rrggbb" each,
 * "series": the line plots' 10 series colours, "masked": one. */
static cJSON *colormaps(void)
{
    static const struct {
        const char *name;
        hs_viz_cmap cmap;
    } maps[] = {{"viridis", HS_VIZ_CMAP_VIRIDIS},
                {"greys", HS_VIZ_CMAP_GREYS},
                {"diverging", HS_VIZ_CMAP_DIVERGING}};
    cJSON *o = cJSON_CreateObject();
    char hex[256 * 6 + 1];
    for (size_t m = 0; o && m < sizeof maps / sizeof maps[0]; m++) {
        for (int i = 0; i < 256; i++) {
            unsigned char rgb[3];
            hs_viz_cmap_rgb(maps[m].cmap, i / 255.0, rgb);
            snprintf(hex + 6 * i, 7, "%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
        }
        if (!cJSON_AddStringToObject(o, maps[m].name, hex)) {
            cJSON_Delete(o);
            return NULL;
        }
    }
    for (int i = 0; i < 10; i++) { /* line plots' series colours (one cycle of tab10) */
        unsigned char rgb[3];
        hs_viz_series_rgb((size_t)i, rgb);
        snprintf(hex + 6 * i, 7, "%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
    }
    if (o && !cJSON_AddStringToObject(o, "series", hex)) {
        cJSON_Delete(o);
        return NULL;
    }
    snprintf(hex, 7, "%02x%02x%02x", HS_VIZ_MASK_RGB[0], HS_VIZ_MASK_RGB[1], HS_VIZ_MASK_RGB[2]);
    if (o && !cJSON_AddStringToObject(o, "masked", hex)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* Appends JSON text with the characters that could end or confuse a <script>
 * element escaped: '<' '>' '&' and U+2028/U+2029 (they occur only inside
 * strings, where \\uXXXX means the same character). */
static void put_script_json(hs_buf *b, const char *j)
{
    const char *run = j;
    for (const char *p = j; *p; p++) {
        const unsigned char c = (unsigned char)*p;
        const char *esc = NULL;
        size_t skip = 1;
        if (c == '<') esc = "\\u003c";
        else if (c == '>') esc = "\\u003e";
        else if (c == '&') esc = "\\u0026";
        else if (c == 0xe2 && (unsigned char)p[1] == 0x80 &&
                 ((unsigned char)p[2] == 0xa8 || (unsigned char)p[2] == 0xa9)) {
            esc = (unsigned char)p[2] == 0xa8 ? "\\u2028" : "\\u2029";
            skip = 3;
        }
        if (!esc) continue;
        hs_buf_append(b, run, (size_t)(p - run));
        hs_buf_puts(b, esc);
        p += skip - 1;
        run = p + 1;
    }
    hs_buf_puts(b, run);
}

hs_status hs_viz_html_page(char **html, size_t *len, const cJSON *data, const char *title,
                           hs_error *err)
{
    *html = NULL;
    *len = 0;
    if (title && !hs_utf8_valid(title))
        return hs_fail(err, HS_ERR_INPUT, "page title is not valid UTF-8");
    cJSON *top = cJSON_CreateObject();
    cJSON *maps = colormaps();
    cJSON *ref = data ? cJSON_CreateObjectReference(data->child) : cJSON_CreateObject();
    int ok = top && maps && ref && cJSON_AddStringToObject(top, "generator", "headscope " HS_VERSION);
    if (ok && cJSON_AddItemToObject(top, "colormaps", maps)) maps = NULL;
    else ok = 0;
    if (ok && cJSON_AddItemToObject(top, "data", ref)) ref = NULL;
    else ok = 0;
    char *j = ok ? cJSON_PrintUnformatted(top) : NULL;
    cJSON_Delete(maps);
    cJSON_Delete(ref);
    cJSON_Delete(top);
    if (!j) return hs_fail(err, HS_ERR_NOMEM, "out of memory building the page's data");

    hs_buf b = {0};
    hs_buf_puts(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                    "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n"
                    "<title>");
    hs_viz_xml_escape(&b, title ? title : "headscope"); /* the one XML/HTML escaping */
    hs_buf_puts(&b, "</title>\n<style>\n");
    hs_buf_puts(&b, vz_html_css);
    hs_buf_puts(&b, "</style>\n</head>\n<body>\n");
    hs_buf_puts(&b, vz_html_body);
    hs_buf_puts(&b, "<script type=\"application/json\" id=\"hs-data\">");
    put_script_json(&b, j);
    free(j);
    hs_buf_puts(&b, "</script>\n<script>\n");
    hs_buf_puts(&b, vz_html_graph_js); /* defines hsCircuitView, which viewer.js calls */
    hs_buf_puts(&b, vz_html_js);
    hs_buf_puts(&b, "</script>\n</body>\n</html>\n");
    size_t n = b.len;
    char *out = hs_buf_take(&b);
    if (!out) return hs_fail(err, HS_ERR_NOMEM, "out of memory building the page");
    *html = out;
    *len = n;
    return HS_OK;
}

hs_status hs_viz_write_html(const cJSON *data, const char *title, const char *path, hs_error *err)
{
    char *html;
    size_t n;
    hs_status s = hs_viz_html_page(&html, &n, data, title, err);
    if (s) return s;
    s = hs_write_file_atomic(path, html, n, err);
    free(html);
    return s;
}
