/*
 * viz/viz_html.c -- one self-contained HTML page around the JSON of one or
 * more output folders. The page's style, markup and script are the files in
 * viz/html/, turned into the C strings below at build time
 * (cmake/embed.cmake); this file only joins them with the data and the
 * colour tables of viz_color.c, read through the public hs_viz_cmap_rgb, so
 * the page and the PNG/SVG figures have one colour definition.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "viz/viz_internal.h"

/* generated from viz/html/ (build folder, generated/viz_html_assets.c) */
extern const char vz_html_css[];
extern const char vz_html_body[];
extern const char vz_html_graph_js[];
extern const char vz_html_report_js[];
extern const char vz_html_figs_js[];
extern const char vz_html_js[];
extern const char vz_html_graph_js_sha256[]; /* SHA-256 in hex of the four scripts */
extern const char vz_html_report_js_sha256[];
extern const char vz_html_figs_js_sha256[];
extern const char vz_html_js_sha256[];

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

/* ---- what a page may hold ---------------------------------------------- */

/* What the viewer (viz/html/viewer.js, renderRun) draws a run's file as, in
 * its order of tests: a circuit graph, an attention object, line plots, bars,
 * a matrix, the predictions table, the circuit report; anything else is
 * not drawn. */
typedef enum {
    PK_NONE = 0,
    PK_GRAPH,
    PK_ATTENTION,
    PK_LINES,
    PK_BARS,
    PK_MATRIX,
    PK_PREDICTIONS,
    PK_REPORT,
} page_kind;

static page_kind kind_of(const char *stem, const cJSON *f)
{
    const cJSON *v = cJSON_GetObjectItem(f, "values");
    if (cJSON_GetObjectItem(f, "cfg") && cJSON_GetObjectItem(f, "edges") &&
        cJSON_IsObject(cJSON_GetObjectItem(f, "nodes")))
        return PK_GRAPH;
    if (cJSON_GetObjectItem(f, "attention")) return PK_ATTENTION;
    if (strcmp(stem, "predictions") == 0)
        return cJSON_GetObjectItem(f, "predictions") ? PK_PREDICTIONS : PK_NONE;
    if (strcmp(stem, "report") == 0)
        return cJSON_GetObjectItem(f, "verdict") ? PK_REPORT : PK_NONE;
    if (cJSON_IsArray(cJSON_GetObjectItem(f, "x")) && cJSON_IsArray(cJSON_GetObjectItem(f, "panels")))
        return PK_LINES;
    if (cJSON_IsArray(v) && cJSON_IsArray(cJSON_GetObjectItem(f, "labels"))) return PK_BARS;
    if (cJSON_IsArray(v) && cJSON_IsArray(cJSON_GetArrayItem(v, 0))) return PK_MATRIX;
    return PK_NONE;
}

int hs_viz_page_draws(const char *stem, const cJSON *f) { return kind_of(stem, f) != PK_NONE; }

/* Entries of array a, or -1 when a is not an array. */
static long n_of(const cJSON *a) { return cJSON_IsArray(a) ? (long)cJSON_GetArraySize(a) : -1; }

/* 1 when a is an array of n strings. */
static int strings(const cJSON *a, long n)
{
    if (n_of(a) != n) return 0;
    for (const cJSON *e = a->child; e; e = e->next)
        if (!cJSON_IsString(e)) return 0;
    return 1;
}

static int finite_num(const cJSON *v) { return cJSON_IsNumber(v) && isfinite(v->valuedouble); }

/* A weight outside [0, 1] (or not finite) at [h][d][s]. */
static hs_status bad_weight(double v, size_t h, size_t d, size_t s, hs_error *err)
{
    char num[HS_F32_BUF];
    return hs_fail(err, HS_ERR_FORMAT, "\"attention\"[%zu][%zu][%zu] is %s, outside [0, 1]", h, d,
                   s, hs_fmt_f32(num, (float)v));
}

/* The packed form (hs_viz_attention_json_packed): its shape, its length and
 * every weight in [0, 1]; *H, *T its sizes. */
static hs_status check_packed(const cJSON *a, size_t *H, size_t *T, hs_error *err)
{
    const cJSON *sh = cJSON_GetObjectItem(a, "shape"), *b = cJSON_GetObjectItem(a, "base64");
    const cJSON *h = cJSON_GetArrayItem(sh, 0), *t = cJSON_GetArrayItem(sh, 1), *t2 = cJSON_GetArrayItem(sh, 2);
    if (n_of(sh) != 3 || !finite_num(h) || !finite_num(t) || !finite_num(t2) || h->valuedouble < 1 ||
        t->valuedouble < 1 || t->valuedouble != t2->valuedouble || h->valuedouble > 1e6 ||
        t->valuedouble > 1e6 || !cJSON_IsString(b))
        return hs_fail(err, HS_ERR_FORMAT, "\"attention\" is neither [head][dest][src] numbers nor "
                       "a packed {\"shape\": [H, T, T], \"base64\"}");
    *H = (size_t)h->valuedouble;
    *T = (size_t)t->valuedouble;
    const int causal = !cJSON_IsFalse(cJSON_GetObjectItem(a, "causal"));
    const size_t per = causal ? *T * (*T + 1) / 2 : *T * *T, n = *H * per;
    const char *p = b->valuestring;
    const size_t len = strlen(p);
    if (len != (n * 4 + 2) / 3 * 4)
        return hs_fail(err, HS_ERR_FORMAT, "\"attention\".base64 does not hold %zu float32 values "
                       "(shape [%zu, %zu, %zu])", n, *H, *T, *T);
    signed char val[256];
    memset(val, -1, sizeof val);
    for (int i = 0; i < 64; i++) val[(unsigned char)B64[i]] = (signed char)i;
    val['='] = 0;
    unsigned char *bytes = malloc(len / 4 * 3 + 3);
    if (!bytes) return hs_fail(err, HS_ERR_NOMEM, "out of memory checking the page's attention");
    size_t k = 0;
    for (size_t g = 0; g < len; g += 4) {
        const int c0 = val[(unsigned char)p[g]], c1 = val[(unsigned char)p[g + 1]];
        const int c2 = val[(unsigned char)p[g + 2]], c3 = val[(unsigned char)p[g + 3]];
        if (c0 < 0 || c1 < 0 || c2 < 0 || c3 < 0) {
            free(bytes);
            return hs_fail(err, HS_ERR_FORMAT, "\"attention\".base64 is not base64");
        }
        bytes[k++] = (unsigned char)(c0 << 2 | c1 >> 4);
        bytes[k++] = (unsigned char)((c1 & 15) << 4 | c2 >> 2);
        bytes[k++] = (unsigned char)((c2 & 3) << 6 | c3);
    }
    size_t hh = 0, d = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *q = bytes + 4 * i;
        const uint32_t u = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
        float f;
        memcpy(&f, &u, sizeof f);
        if (!(f >= 0.0f && f <= 1.0f)) {
            free(bytes);
            return bad_weight(f, hh, d, s, err);
        }
        if (++s == (causal ? d + 1 : *T)) {
            s = 0;
            if (++d == *T) {
                d = 0;
                hh++;
            }
        }
    }
    free(bytes);
    return HS_OK;
}

/* An attention object: [H][T][T] weights in [0, 1] (or packed), T "tokens",
 * H "attention_head_names" when given. */
static hs_status check_attention(const cJSON *f, hs_error *err)
{
    const cJSON *a = cJSON_GetObjectItem(f, "attention");
    size_t H = 0, T = 0;
    if (cJSON_IsObject(a)) {
        hs_status st = check_packed(a, &H, &T, err);
        if (st) return st;
    } else {
        H = (size_t)cJSON_GetArraySize(a);
        T = (size_t)n_of(cJSON_GetArrayItem(a, 0));
        if (!cJSON_IsArray(a) || H == 0 || n_of(cJSON_GetArrayItem(a, 0)) < 1)
            return hs_fail(err, HS_ERR_FORMAT, "\"attention\" is not a [head][dest][src] array");
        size_t h = 0;
        for (const cJSON *hh = a->child; hh; hh = hh->next, h++) {
            if (n_of(hh) != (long)T)
                return hs_fail(err, HS_ERR_FORMAT, "\"attention\"[%zu] has %ld rows, not %zu", h, n_of(hh), T);
            size_t d = 0;
            for (const cJSON *r0 = hh->child; r0; r0 = r0->next, d++) {
                /* a row may be raw JSON text (hs_viz_attention_json writes rows so) */
                cJSON *parsed = cJSON_IsRaw(r0) ? cJSON_Parse(r0->valuestring) : NULL;
                const cJSON *r = parsed ? parsed : r0;
                hs_status st = HS_OK;
                if (n_of(r) != (long)T)
                    st = hs_fail(err, HS_ERR_FORMAT, "\"attention\"[%zu][%zu] has %ld entries, not %zu",
                                 h, d, n_of(r), T);
                size_t s = 0;
                for (const cJSON *v = st ? NULL : r->child; v; v = v->next, s++)
                    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 1)) {
                        st = bad_weight(cJSON_IsNumber(v) ? v->valuedouble : NAN, h, d, s, err);
                        break;
                    }
                cJSON_Delete(parsed);
                if (st) return st;
            }
        }
    }
    if (T > HS_VIZ_PAGE_MAX_TOKENS)
        return hs_fail(err, HS_ERR_INPUT, "%zu tokens, over the page's limit of %d", T,
                       HS_VIZ_PAGE_MAX_TOKENS);
    const cJSON *tok = cJSON_GetObjectItem(f, "tokens"), *names = cJSON_GetObjectItem(f, "attention_head_names");
    if (!strings(tok, n_of(tok)))
        return hs_fail(err, HS_ERR_FORMAT, "\"tokens\" is not an array of strings");
    if (n_of(tok) != (long)T)
        return hs_fail(err, HS_ERR_FORMAT, "\"tokens\" has %ld entries, \"attention\" has %zu positions",
                       n_of(tok), T);
    if (names && !strings(names, (long)H))
        return hs_fail(err, HS_ERR_FORMAT, "\"attention_head_names\" is not %zu strings (\"attention\" "
                       "has %zu heads)", H, H);
    return HS_OK;
}

/* Bars: "values" and "labels" of one length, finite. */
static hs_status check_bars(const cJSON *f, hs_error *err)
{
    const cJSON *v = cJSON_GetObjectItem(f, "values"), *l = cJSON_GetObjectItem(f, "labels");
    if (!strings(l, n_of(l))) return hs_fail(err, HS_ERR_FORMAT, "\"labels\" is not an array of strings");
    if (n_of(v) != n_of(l))
        return hs_fail(err, HS_ERR_FORMAT, "\"values\" has %ld entries for %ld \"labels\"", n_of(v), n_of(l));
    if (n_of(v) > HS_VIZ_PAGE_MAX_BARS)
        return hs_fail(err, HS_ERR_INPUT, "%ld bars, over the page's limit of %d", n_of(v),
                       HS_VIZ_PAGE_MAX_BARS);
    long i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++)
        if (!finite_num(e)) return hs_fail(err, HS_ERR_FORMAT, "\"values\"[%ld] is not a finite number", i);
    return HS_OK;
}

/* A matrix: R rows of C numbers or null, R "row_labels", C "col_labels". */
static hs_status check_matrix(const cJSON *f, hs_error *err)
{
    const cJSON *v = cJSON_GetObjectItem(f, "values");
    const cJSON *rl = cJSON_GetObjectItem(f, "row_labels"), *cl = cJSON_GetObjectItem(f, "col_labels");
    const long R = n_of(v), C = n_of(cl);
    if (!strings(rl, n_of(rl)) || !strings(cl, C))
        return hs_fail(err, HS_ERR_FORMAT, "\"row_labels\" and \"col_labels\" are not arrays of strings");
    if (n_of(rl) != R)
        return hs_fail(err, HS_ERR_FORMAT, "\"row_labels\" has %ld entries, \"values\" has %ld rows",
                       n_of(rl), R);
    if (R > HS_VIZ_PAGE_MAX_SIDE || C > HS_VIZ_PAGE_MAX_SIDE || R * C > HS_VIZ_PAGE_MAX_CELLS)
        return hs_fail(err, HS_ERR_INPUT, "%ld x %ld cells, over the page's limit (%d a side, %d "
                       "cells)", R, C, HS_VIZ_PAGE_MAX_SIDE, HS_VIZ_PAGE_MAX_CELLS);
    long i = 0;
    for (const cJSON *r = v->child; r; r = r->next, i++) {
        if (n_of(r) != C)
            return hs_fail(err, HS_ERR_FORMAT, "\"values\"[%ld] has %ld entries, \"col_labels\" has %ld",
                           i, n_of(r), C);
        long j = 0;
        for (const cJSON *e = r->child; e; e = e->next, j++)
            if (!finite_num(e) && !cJSON_IsNull(e))
                return hs_fail(err, HS_ERR_FORMAT, "\"values\"[%ld][%ld] is neither a finite number "
                               "nor null", i, j);
    }
    return HS_OK;
}

/* Line plots: "x" numbers; every series' "y" as long, numbers or null. */
static hs_status check_lines(const cJSON *f, hs_error *err)
{
    const cJSON *x = cJSON_GetObjectItem(f, "x"), *panels = cJSON_GetObjectItem(f, "panels");
    const long N = n_of(x);
    long points = 0, p = 0;
    for (const cJSON *e = x->child; e; e = e->next)
        if (!finite_num(e)) return hs_fail(err, HS_ERR_FORMAT, "\"x\" is not an array of finite numbers");
    if (N < 1) return hs_fail(err, HS_ERR_FORMAT, "\"x\" is empty");
    for (const cJSON *pa = panels->child; pa; pa = pa->next, p++) {
        const cJSON *series = cJSON_GetObjectItem(pa, "series");
        if (!cJSON_IsArray(series))
            return hs_fail(err, HS_ERR_FORMAT, "\"panels\"[%ld] has no \"series\" array", p);
        long k = 0;
        for (const cJSON *se = series->child; se; se = se->next, k++) {
            const cJSON *y = cJSON_GetObjectItem(se, "y");
            if (n_of(y) != N || !cJSON_IsString(cJSON_GetObjectItem(se, "label")))
                return hs_fail(err, HS_ERR_FORMAT, "\"panels\"[%ld].series[%ld] has %ld \"y\" values, "
                               "\"x\" has %ld (and a \"label\")", p, k, n_of(y), N);
            for (const cJSON *e = y->child; e; e = e->next)
                if (!finite_num(e) && !cJSON_IsNull(e))
                    return hs_fail(err, HS_ERR_FORMAT, "\"panels\"[%ld].series[%ld].y holds a value "
                                   "that is neither a finite number nor null", p, k);
            points += N;
        }
    }
    if (points > HS_VIZ_PAGE_MAX_POINTS)
        return hs_fail(err, HS_ERR_INPUT, "%ld points, over the page's limit of %d", points,
                       HS_VIZ_PAGE_MAX_POINTS);
    return HS_OK;
}

/* The predictions table: {"token", "prob" in [0, 1], "logit"} each. */
static hs_status check_predictions(const cJSON *f, hs_error *err)
{
    const cJSON *pr = cJSON_GetObjectItem(f, "predictions");
    if (!cJSON_IsArray(pr) || n_of(pr) > HS_VIZ_PAGE_MAX_BARS)
        return hs_fail(err, HS_ERR_FORMAT, "\"predictions\" is not an array of at most %d entries",
                       HS_VIZ_PAGE_MAX_BARS);
    long i = 0;
    for (const cJSON *e = pr->child; e; e = e->next, i++) {
        const cJSON *p = cJSON_GetObjectItem(e, "prob");
        if (!cJSON_IsString(cJSON_GetObjectItem(e, "token")) || !finite_num(p) || p->valuedouble < 0 ||
            p->valuedouble > 1 || !finite_num(cJSON_GetObjectItem(e, "logit")))
            return hs_fail(err, HS_ERR_FORMAT, "\"predictions\"[%ld] is not {\"token\", \"prob\" in "
                           "[0, 1], \"logit\"}", i);
    }
    return HS_OK;
}

/* Checks f (the run file stem) as the viewer will draw it. */
static hs_status check_file(const char *stem, const cJSON *f, hs_error *err)
{
    switch (kind_of(stem, f)) {
    case PK_ATTENTION: return check_attention(f, err);
    case PK_LINES: return check_lines(f, err);
    case PK_BARS: return check_bars(f, err);
    case PK_MATRIX: return check_matrix(f, err);
    case PK_PREDICTIONS: return check_predictions(f, err);
    default: return HS_OK;
    }
}

/* Every file of every run of data ({"runs": [{"dir", "files": {stem: JSON}}]}). */
static hs_status check_runs(const cJSON *data, hs_error *err)
{
    const cJSON *runs = cJSON_GetObjectItem(data, "runs");
    for (const cJSON *r = cJSON_IsArray(runs) ? runs->child : NULL; r; r = r->next) {
        const cJSON *dir = cJSON_GetObjectItem(r, "dir"), *files = cJSON_GetObjectItem(r, "files");
        for (const cJSON *f = cJSON_IsObject(files) ? files->child : NULL; f; f = f->next) {
            hs_error e = {0};
            if (check_file(f->string, f, &e) != HS_OK)
                return hs_fail(err, e.status, "%s/%s.json: %s",
                               cJSON_IsString(dir) ? dir->valuestring : ".", f->string, e.msg);
        }
    }
    return HS_OK;
}

/* The members the viewer reads of a file of each kind (viewer.js and
 * viewer_graph.js; keep in step with them): the page embeds only these, so
 * e.g. weights' virtual_weights.products (1.77 of a 2.88 MB page) stays in
 * its file. NULL: the whole file (the graph, the report); a file of no kind
 * the viewer draws is left out. */
static const char *const *kept_keys(page_kind k)
{
    static const char *const att[] = {"attention", "attention_head_names", "tokens", "config",
                                      "first_position", "query_position", "title", NULL};
    static const char *const lines[] = {"title", "x", "panels", "xlabel", "x_scale", "mark_y", NULL};
    static const char *const bars[] = {"title", "values", "labels", "xlabel", NULL};
    static const char *const matrix[] = {"title", "values", "row_labels", "col_labels", "xlabel",
                                         "ylabel", "colour_scale", NULL};
    static const char *const pred[] = {"predictions", "query_position", "query_token", NULL};
    switch (k) {
    case PK_ATTENTION: return att;
    case PK_LINES: return lines;
    case PK_BARS: return bars;
    case PK_MATRIX: return matrix;
    case PK_PREDICTIONS: return pred;
    default: return NULL;
    }
}

/* Adds to o a reference to item under key (item stays the caller's). */
static int add_ref(cJSON *o, const char *key, const cJSON *item)
{
    return cJSON_AddItemReferenceToObject(o, key, (cJSON *)item);
}

/* The page's view of data: the same object but every run's files reduced to
 * what the viewer reads (kept_keys), by reference (no value is copied); NULL
 * on OOM. */
static cJSON *page_view(const cJSON *data)
{
    cJSON *o = cJSON_CreateObject();
    for (const cJSON *it = data->child; o && it; it = it->next) {
        if (!it->string) continue;
        if (strcmp(it->string, "runs") != 0 || !cJSON_IsArray(it)) {
            if (!add_ref(o, it->string, it)) goto oom;
            continue;
        }
        cJSON *runs = cJSON_AddArrayToObject(o, "runs");
        if (!runs) goto oom;
        for (const cJSON *r = it->child; r; r = r->next) {
            cJSON *run = cJSON_CreateObject();
            if (!run || !cJSON_AddItemToArray(runs, run)) {
                cJSON_Delete(run);
                goto oom;
            }
            for (const cJSON *m = r->child; m; m = m->next) {
                if (!m->string) continue;
                if (strcmp(m->string, "files") != 0 || !cJSON_IsObject(m)) {
                    if (!add_ref(run, m->string, m)) goto oom;
                    continue;
                }
                cJSON *files = cJSON_AddObjectToObject(run, "files");
                if (!files) goto oom;
                for (const cJSON *f = m->child; f; f = f->next) {
                    const page_kind k = kind_of(f->string, f);
                    const char *const *keys = kept_keys(k);
                    if (k == PK_NONE) continue;
                    if (!keys) {
                        if (!add_ref(files, f->string, f)) goto oom;
                        continue;
                    }
                    cJSON *kept = cJSON_AddObjectToObject(files, f->string);
                    if (!kept) goto oom;
                    for (const cJSON *e = f->child; e; e = e->next)
                        for (size_t i = 0; e->string && keys[i]; i++)
                            if (strcmp(e->string, keys[i]) == 0 && !add_ref(kept, e->string, e)) goto oom;
                }
            }
        }
    }
    return o;
oom:
    cJSON_Delete(o);
    return NULL;
}

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

/* Appends the CSP hash source of a script (its SHA-256 in hex, from the
 * build): 'sha256-<base64 of the 32 bytes>' (CSP Level 3, "hash-source");
 * 0 on OOM. */
static int put_hash_source(hs_buf *b, const char *hex)
{
    unsigned char d[32];
    for (int i = 0; i < 32; i++) {
        unsigned v;
        const int got = sscanf(hex + 2 * i, "%2x", &v);
        HS_ASSERT(got == 1); /* cmake/embed.cmake wrote 64 hex digits */
        d[i] = (unsigned char)v;
    }
    char *b64 = vz_base64(d, sizeof d);
    if (!b64) return 0;
    hs_buf_printf(b, "'sha256-%s'", b64);
    free(b64);
    return 1;
}

/* Adds to shown every string of node (arrays and objects walked, depth at
 * most 16) whose display form differs from it: {string: as the figures show
 * it} (vz_display_label, the one function for both: `<|endoftext|>` as
 * `⟨bos⟩`, a control character as '?') of at most HS_VIZ_MAX_LABEL code
 * points (a longer one the page shortens as the figures do: the first
 * HS_VIZ_MAX_LABEL - 1 and "…"). 0 when out of memory. */
static int add_shown(cJSON *shown, const cJSON *node, int depth)
{
    if (cJSON_IsString(node)) {
        const char *s = node->valuestring;
        if (strlen(s) > 4 * HS_VIZ_MAX_LABEL || !hs_utf8_valid(s) || vz_utf8_len(s) > HS_VIZ_MAX_LABEL ||
            cJSON_GetObjectItemCaseSensitive(shown, s))
            return 1; /* longer: the page shortens it as vz_display_label does */
        char *d = vz_display_label(s);
        if (!d) return 0;
        int ok = strcmp(d, s) == 0 || cJSON_AddStringToObject(shown, s, d) != NULL;
        free(d);
        return ok;
    }
    if (depth >= 16 || !(cJSON_IsArray(node) || cJSON_IsObject(node))) return 1;
    for (const cJSON *c = node->child; c; c = c->next)
        if (!add_shown(shown, c, depth + 1)) return 0;
    return 1;
}

hs_status hs_viz_html_page(char **html, size_t *len, const cJSON *data, const char *title,
                           hs_error *err)
{
    *html = NULL;
    *len = 0;
    if (title && !hs_utf8_valid(title))
        return hs_fail(err, HS_ERR_INPUT, "page title is not valid UTF-8");
    hs_status st = data ? check_runs(data, err) : HS_OK;
    if (st) return st;
    cJSON *top = cJSON_CreateObject();
    cJSON *maps = colormaps();
    cJSON *ref = data ? page_view(data) : cJSON_CreateObject();
    int ok = top && maps && ref && cJSON_AddStringToObject(top, "generator", "headscope " HS_VERSION) &&
             cJSON_AddNumberToObject(top, "max_label", HS_VIZ_MAX_LABEL); /* labels shortened past it */
    if (ok && cJSON_AddItemToObject(top, "colormaps", maps)) maps = NULL;
    else ok = 0;
    cJSON *shown = ok ? cJSON_AddObjectToObject(top, "shown") : NULL; /* the figures' display forms */
    ok = shown && add_shown(shown, ref, 0);
    if (ok && cJSON_AddItemToObject(top, "data", ref)) ref = NULL;
    else ok = 0;
    hs_buf jb = {0}; /* the one JSON printer, without white space */
    char *j = ok && hs_json_print_buf(&jb, top, 0) ? hs_buf_take(&jb) : NULL;
    hs_buf_free(&jb);
    cJSON_Delete(maps);
    cJSON_Delete(ref);
    cJSON_Delete(top);
    if (!j) return hs_fail(err, HS_ERR_NOMEM, "out of memory building the page's data");
    const size_t jn = strlen(j);
    if (jn > HS_VIZ_PAGE_MAX_BYTES) {
        free(j);
        return hs_fail(err, HS_ERR_INPUT, "the page's data is %.1f MiB, over its limit of %d MiB",
                       (double)jn / (1 << 20), HS_VIZ_PAGE_MAX_BYTES >> 20);
    }

    /* no request, no form, no <base>; only the page's own three scripts run
       (pinned by their hashes: an injected inline script or handler does not) */
    hs_buf b = {0};
    hs_buf_puts(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                    "script-src ");
    int hashed = put_hash_source(&b, vz_html_graph_js_sha256);
    hs_buf_puts(&b, " ");
    hashed = hashed && put_hash_source(&b, vz_html_report_js_sha256);
    hs_buf_puts(&b, " ");
    hashed = hashed && put_hash_source(&b, vz_html_figs_js_sha256);
    hs_buf_puts(&b, " ");
    hashed = hashed && put_hash_source(&b, vz_html_js_sha256);
    hs_buf_puts(&b, "; style-src 'unsafe-inline'; img-src data:; form-action 'none'; base-uri 'none'\">\n"
                    "<title>");
    hs_viz_xml_escape(&b, title ? title : "headscope"); /* the one XML/HTML escaping */
    hs_buf_puts(&b, "</title>\n<style>\n");
    hs_buf_puts(&b, vz_html_css);
    hs_buf_puts(&b, "</style>\n</head>\n<body>\n");
    hs_buf_puts(&b, vz_html_body);
    hs_buf_puts(&b, "<script type=\"application/json\" id=\"hs-data\">");
    put_script_json(&b, j);
    free(j);
    /* each script element holds exactly its file, the bytes its hash is of */
    hs_buf_puts(&b, "</script>\n<script>");
    hs_buf_puts(&b, vz_html_graph_js); /* defines hsCircuitView, which viewer.js calls */
    hs_buf_puts(&b, "</script>\n<script>");
    hs_buf_puts(&b, vz_html_report_js); /* defines hsCircuitReport, which viewer.js calls */
    hs_buf_puts(&b, "</script>\n<script>");
    hs_buf_puts(&b, vz_html_figs_js); /* defines hsFigures, which viewer.js calls */
    hs_buf_puts(&b, "</script>\n<script>");
    hs_buf_puts(&b, vz_html_js);
    hs_buf_puts(&b, "</script>\n</body>\n</html>\n");
    size_t n = b.len;
    char *out = hs_buf_take(&b);
    if (!out || !hashed) {
        free(out);
        return hs_fail(err, HS_ERR_NOMEM, "out of memory building the page");
    }
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
