/*
 * model/safetensors.c -- generic safetensors reader and writer (DESIGN.md,
 * "Checkpoint: safetensors").
 *
 * Format: 8-byte little-endian u64 N, then N bytes of JSON header
 *   {"<name>": {"dtype": "F32", "shape": [d0, ...], "data_offsets": [begin, end]},
 *    ..., "__metadata__": {"<key>": "<string>", ...}}
 * then the data section; offsets are bytes relative to its first byte.
 *
 * Writer: F32 only, offsets contiguous from 0 in the caller's order, the
 * header padded with spaces to a multiple of 8, floats as little-endian bytes
 * whatever the host order, written atomically (common/: temp, fsync, rename).
 *
 * Reader: every size read from the file is checked before use (size_t
 * overflow, header length against the file and a 100 MB cap, offsets against
 * the data section); every failure has its own message naming the file, the
 * tensor and the numbers involved. The data section must be tiled exactly by
 * the tensors: no overlap, no holes, nothing after the last one (the format
 * allows space padding in the header, not gaps in the data).
 */
#include "model/model.h"
#include "model/checkpoint.h"
#include "model/checkpoint_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Small helpers                                                             */

/* Largest integer a JSON number (an IEEE double in cJSON) holds exactly. */
#define ST_MAX_JSON_INT 9007199254740992.0 /* 2^53 */
#define ST_MAX_DIMS 4

static int mul_size(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a) return 0;
    *out = a * b;
    return 1;
}

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static uint64_t load_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static void store_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static float load_le_f32(const unsigned char *p)
{
    uint32_t u = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
                 ((uint32_t)p[3] << 24);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void store_le_f32(unsigned char *p, float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    p[0] = (unsigned char)u;
    p[1] = (unsigned char)(u >> 8);
    p[2] = (unsigned char)(u >> 16);
    p[3] = (unsigned char)(u >> 24);
}

/* Formats shape as "[a,b,c]" into buf. */
static void shape_str(char *buf, size_t cap, const int64_t *shape, int ndim)
{
    size_t k = 0;
    buf[0] = '\0';
    k += (size_t)snprintf(buf + k, cap - k, "[");
    for (int i = 0; i < ndim && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? "," : "", (long long)shape[i]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

/* Element size in bytes of a safetensors dtype name; 0 if unknown. */
static size_t dtype_size(const char *dt)
{
    static const struct { const char *name; size_t size; } table[] = {
        {"BOOL", 1}, {"U8", 1}, {"I8", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1},
        {"I16", 2}, {"U16", 2}, {"F16", 2}, {"BF16", 2},
        {"I32", 4}, {"U32", 4}, {"F32", 4},
        {"F64", 8}, {"I64", 8}, {"U64", 8},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(dt, table[i].name) == 0) return table[i].size;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* hs_st_file                                                                */

void hs_st_file_free(hs_st_file *f)
{
    if (f == NULL) return;
    for (int i = 0; i < f->n; i++) {
        if (f->names) free(f->names[i]);
        if (f->data) free(f->data[i]);
    }
    for (int i = 0; i < f->n_meta; i++) {
        if (f->meta_keys) free(f->meta_keys[i]);
        if (f->meta_vals) free(f->meta_vals[i]);
    }
    free(f->names);
    free(f->ndim);
    free(f->shape);
    free(f->data);
    free(f->numel);
    free(f->meta_keys);
    free(f->meta_vals);
    memset(f, 0, sizeof *f);
}

int hs_st_find(const hs_st_file *f, const char *name)
{
    if (f == NULL || name == NULL) return -1;
    for (int i = 0; i < f->n; i++)
        if (f->names[i] && strcmp(f->names[i], name) == 0) return i;
    return -1;
}

const char *hs_st_meta(const hs_st_file *f, const char *key)
{
    if (f == NULL || key == NULL) return NULL;
    for (int i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta_keys[i], key) == 0) return f->meta_vals[i];
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Reader                                                                    */

typedef struct {
    const char *name;     /* points into the cJSON tree */
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    size_t numel;
    size_t elsize;
    hs_st_dtype dtype;
    size_t begin, end;    /* byte offsets into the data section */
    int skip;
} st_entry;

/* Reads a non-negative integer JSON number (<= 2^53). Returns 0 if item is
 * not one; *negative is set when it is a negative integer. */
static int json_uint(const cJSON *item, uint64_t *out, int *negative)
{
    *negative = 0;
    if (!cJSON_IsNumber(item)) return 0;
    double d = item->valuedouble;
    if (!isfinite(d) || floor(d) != d) return 0;
    if (d < 0) {
        *negative = 1;
        return 0;
    }
    if (d > ST_MAX_JSON_INT) return 0;
    *out = (uint64_t)d;
    return 1;
}

static int cmp_entry_offset(const void *a, const void *b)
{
    const st_entry *x = *(const st_entry *const *)a, *y = *(const st_entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

static int cmp_entry_name(const void *a, const void *b)
{
    const st_entry *x = *(const st_entry *const *)a, *y = *(const st_entry *const *)b;
    return strcmp(x->name, y->name);
}

/* Fills e from the header entry obj (name already set). */
static hs_status parse_entry(const char *fname, const cJSON *obj, st_entry *e,
                             hs_st_skip_fn skip, void *skip_ctx, int half_ok, hs_error *err)
{
    if (!cJSON_IsObject(obj))
        return hs_fail(err, HS_ERR_FORMAT, "%s: header entry for tensor '%s' is not an object",
                       fname, e->name);
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(obj, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(obj, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(obj, "data_offsets");
    if (dtype == NULL)
        return hs_fail(err, HS_ERR_FORMAT, "%s: tensor '%s' has no \"dtype\"", fname, e->name);
    if (shape == NULL)
        return hs_fail(err, HS_ERR_FORMAT, "%s: tensor '%s' has no \"shape\"", fname, e->name);
    if (offs == NULL)
        return hs_fail(err, HS_ERR_FORMAT, "%s: tensor '%s' has no \"data_offsets\"", fname,
                       e->name);
    if (!cJSON_IsString(dtype))
        return hs_fail(err, HS_ERR_FORMAT, "%s: tensor '%s': \"dtype\" is not a string", fname,
                       e->name);

    e->skip = skip != NULL && skip(e->name, skip_ctx);
    e->elsize = dtype_size(dtype->valuestring);
    if (e->elsize == 0)
        return hs_fail(err, HS_ERR_FORMAT, "%s: tensor '%s' has unknown dtype '%.32s'", fname,
                       e->name, dtype->valuestring);
    e->dtype = strcmp(dtype->valuestring, "F32") == 0    ? HS_ST_F32
               : strcmp(dtype->valuestring, "F16") == 0  ? HS_ST_F16
               : strcmp(dtype->valuestring, "BF16") == 0 ? HS_ST_BF16
                                                         : HS_ST_OTHER;
    if (!e->skip && e->dtype != HS_ST_F32 && !(half_ok && e->dtype != HS_ST_OTHER))
        return hs_fail(err, HS_ERR_FORMAT,
                       "%s: tensor '%s' has dtype %s; only %s supported "
                       "(HINT: convert the weights to float32 before saving)",
                       fname, e->name, dtype->valuestring,
                       half_ok ? "F32, F16 and BF16 are" : "F32 is");

    if (!cJSON_IsArray(shape))
        return hs_fail(err, HS_ERR_FORMAT, "%s: tensor '%s': \"shape\" is not a list", fname,
                       e->name);
    int nd = cJSON_GetArraySize(shape);
    if (nd > ST_MAX_DIMS)
        return hs_fail(err, HS_ERR_FORMAT, "%s: tensor '%s' has %d dimensions; at most %d are "
                       "supported", fname, e->name, nd, ST_MAX_DIMS);
    e->ndim = nd;
    e->numel = 1;
    int i = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, shape) {
        uint64_t v;
        int neg;
        if (!json_uint(d, &v, &neg)) {
            if (neg)
                return hs_fail(err, HS_ERR_FORMAT, "%s: tensor '%s': shape[%d] is negative",
                               fname, e->name, i);
            return hs_fail(err, HS_ERR_FORMAT,
                           "%s: tensor '%s': shape[%d] is not a non-negative integer", fname,
                           e->name, i);
        }
        e->shape[i] = (int64_t)v;
        if (v > SIZE_MAX || !mul_size(e->numel, (size_t)v, &e->numel))
            return hs_fail(err, HS_ERR_FORMAT, "%s: tensor '%s': shape overflows (element "
                           "count too large)", fname, e->name);
        i++;
    }

    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2)
        return hs_fail(err, HS_ERR_FORMAT,
                       "%s: tensor '%s': \"data_offsets\" is not a list [begin, end]", fname,
                       e->name);
    uint64_t b, en;
    int nb, ne;
    if (!json_uint(cJSON_GetArrayItem(offs, 0), &b, &nb) ||
        !json_uint(cJSON_GetArrayItem(offs, 1), &en, &ne) || b > SIZE_MAX || en > SIZE_MAX)
        return hs_fail(err, HS_ERR_FORMAT,
                       "%s: tensor '%s': data_offsets are not non-negative integers", fname,
                       e->name);
    e->begin = (size_t)b;
    e->end = (size_t)en;
    if (e->begin > e->end)
        return hs_fail(err, HS_ERR_FORMAT,
                       "%s: tensor '%s': data_offsets begin %zu is after end %zu", fname,
                       e->name, e->begin, e->end);
    size_t need;
    if (!mul_size(e->numel, e->elsize, &need))
        return hs_fail(err, HS_ERR_FORMAT, "%s: tensor '%s': shape overflows (byte size too "
                       "large)", fname, e->name);
    if (e->end - e->begin != need) {
        char sh[128];
        shape_str(sh, sizeof sh, e->shape, e->ndim);
        return hs_fail(err, HS_ERR_FORMAT,
                       "%s: tensor '%s': data length mismatch: data_offsets span %zu bytes but "
                       "shape %s of %s needs %zu", fname, e->name, e->end - e->begin, sh,
                       dtype->valuestring, need);
    }
    return HS_OK;
}

static hs_status parse_metadata(const char *fname, const cJSON *meta, hs_st_file *out,
                                hs_error *err)
{
    if (!cJSON_IsObject(meta))
        return hs_fail(err, HS_ERR_FORMAT, "%s: \"__metadata__\" is not an object", fname);
    int n = cJSON_GetArraySize(meta);
    out->meta_keys = calloc((size_t)n + 1, sizeof *out->meta_keys);
    out->meta_vals = calloc((size_t)n + 1, sizeof *out->meta_vals);
    if (!out->meta_keys || !out->meta_vals)
        return hs_fail(err, HS_ERR_NOMEM, "%s: out of memory", fname);
    const cJSON *kv;
    cJSON_ArrayForEach(kv, meta) {
        if (!cJSON_IsString(kv))
            return hs_fail(err, HS_ERR_FORMAT,
                           "%s: metadata value for key '%.64s' is not a string (the format "
                           "requires string values)", fname, kv->string ? kv->string : "");
        if (!hs_utf8_valid(kv->string) || !hs_utf8_valid(kv->valuestring))
            return hs_fail(err, HS_ERR_FORMAT, "%s: the header's metadata holds invalid UTF-8 (%s); the "
                           "format's reference reader refuses the file", fname,
                           hs_utf8_valid(kv->string) ? "a value" : "a key");
        for (int j = 0; j < out->n_meta; j++)
            if (strcmp(out->meta_keys[j], kv->string) == 0)
                return hs_fail(err, HS_ERR_FORMAT, "%s: metadata key '%.64s' appears twice",
                               fname, kv->string);
        int k = out->n_meta;
        out->meta_keys[k] = hs_strdup(kv->string);
        out->meta_vals[k] = hs_strdup(kv->valuestring);
        if (!out->meta_keys[k] || !out->meta_vals[k]) {
            free(out->meta_keys[k]);
            free(out->meta_vals[k]);
            out->meta_keys[k] = out->meta_vals[k] = NULL;
            return hs_fail(err, HS_ERR_NOMEM, "%s: out of memory", fname);
        }
        out->n_meta++;
    }
    return HS_OK;
}

/* The reader's state between its steps (hs_safetensors_parse_ex). */
typedef struct {
    const char *fname;           /* for messages */
    char *hdr;                   /* the header's JSON, NUL-terminated, trailing spaces cut */
    cJSON *root;                 /* its parse; the entries' names point into it */
    const unsigned char *data;   /* the data section */
    size_t data_size;
    st_entry *ents;              /* (ne) in header order */
    st_entry **order;            /* (ne) the same, sorted by a step */
    int ne;
    int half_ok;                 /* 1: F16 and BF16 weights pass (hs_st_index_parse) */
} st_reader;

hs_status hs_st_header_len(const unsigned char *b8, uint64_t file_size, const char *fname,
                           uint64_t *hlen, hs_error *err)
{
    if (file_size < 8)
        return hs_fail(err, HS_ERR_FORMAT, "%s: file is truncated: %llu bytes, shorter than the "
                       "8-byte safetensors header length", fname, (unsigned long long)file_size);
    *hlen = load_le64(b8);
    if (*hlen > HS_ST_MAX_HEADER)
        return hs_fail(err, HS_ERR_FORMAT, "%s: header length %llu is absurd (cap %llu bytes); "
                       "not a safetensors file?", fname, (unsigned long long)*hlen,
                       (unsigned long long)HS_ST_MAX_HEADER);
    if (*hlen > file_size - 8)
        return hs_fail(err, HS_ERR_FORMAT, "%s: header length %llu is beyond the end of the "
                       "file (%llu bytes after the length field); truncated file?", fname,
                       (unsigned long long)*hlen, (unsigned long long)(file_size - 8));
    return HS_OK;
}

/* The header's hn bytes (after the length): r->hdr, r->root (a JSON object
 * and nothing else but its space padding). */
static hs_status read_header_json(st_reader *r, const unsigned char *h, size_t hn, hs_error *err)
{
    const char *fname = r->fname;
    /* JSON: trailing space padding allowed; parse a NUL-terminated copy. */
    size_t trimmed = hn;
    while (trimmed > 0 && h[trimmed - 1] == ' ') trimmed--;
    r->hdr = malloc(trimmed + 1);
    if (!r->hdr) return hs_fail(err, HS_ERR_NOMEM, "%s: out of memory", fname);
    memcpy(r->hdr, h, trimmed);
    r->hdr[trimmed] = '\0';
    const char *end = NULL;
    r->root = cJSON_ParseWithLengthOpts(r->hdr, trimmed + 1, &end, 1);
    if (r->root == NULL) {
        const char *hdr = r->hdr;
        size_t at = (end != NULL && end >= hdr && end <= hdr + trimmed) ? (size_t)(end - hdr) : 0;
        return hs_fail(err, HS_ERR_FORMAT, "%s: header is not valid JSON (error near byte %zu "
                       "of %zu)", fname, at, hn);
    }
    if (!cJSON_IsObject(r->root))
        return hs_fail(err, HS_ERR_FORMAT, "%s: header JSON is not an object", fname);
    if (r->hdr[0] != '{' || r->hdr[trimmed - 1] != '}')
        return hs_fail(err, HS_ERR_FORMAT, "%s: header has bytes other than the JSON object and "
                       "its space padding", fname);
    return HS_OK;
}

/* The 8-byte length, then the header: r->hdr, r->root, r->data, r->data_size. */
static hs_status read_header(st_reader *r, const unsigned char *buf, size_t n, hs_error *err)
{
    uint64_t hlen;
    hs_status s = hs_st_header_len(buf, n, r->fname, &hlen, err);
    if (s != HS_OK) return s;
    size_t hn = (size_t)hlen;
    r->data = buf + 8 + hn;
    r->data_size = n - 8 - hn;
    return read_header_json(r, buf + 8, hn, err);
}

/* Every header item in order: "__metadata__" (once) into out, each tensor
 * entry into r->ents (and r->order), inside the data section. */
static hs_status read_entries(st_reader *r, hs_st_skip_fn skip, void *skip_ctx, hs_st_file *out,
                              hs_error *err)
{
    const char *fname = r->fname;
    int n_items = cJSON_GetArraySize(r->root);
    r->ents = calloc((size_t)n_items + 1, sizeof *r->ents);
    r->order = calloc((size_t)n_items + 1, sizeof *r->order);
    if (!r->ents || !r->order) return hs_fail(err, HS_ERR_NOMEM, "%s: out of memory", fname);
    int have_meta = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, r->root) {
        if (strcmp(item->string, "__metadata__") == 0) {
            if (have_meta)
                return hs_fail(err, HS_ERR_FORMAT, "%s: \"__metadata__\" appears twice", fname);
            have_meta = 1;
            hs_status s = parse_metadata(fname, item, out, err);
            if (s != HS_OK) return s;
            continue;
        }
        st_entry *e = &r->ents[r->ne];
        e->name = item->string;
        hs_status s = parse_entry(fname, item, e, skip, skip_ctx, r->half_ok, err);
        if (s != HS_OK) return s;
        if (e->end > r->data_size)
            return hs_fail(err, HS_ERR_FORMAT, "%s: tensor '%s': data_offsets end %zu is past "
                           "the end of the data (%zu bytes); truncated file?", fname, e->name,
                           e->end, r->data_size);
        r->order[r->ne] = e;
        r->ne++;
    }
    return HS_OK;
}

/* No name twice (cJSON keeps both), and the tensors tile the data section
 * exactly: no overlap, no hole, nothing after the last one. */
static hs_status check_layout(st_reader *r, hs_error *err)
{
    const char *fname = r->fname;
    st_entry **order = r->order;
    const int ne = r->ne;
    qsort(order, (size_t)ne, sizeof *order, cmp_entry_name);
    for (int i = 1; i < ne; i++)
        if (strcmp(order[i - 1]->name, order[i]->name) == 0)
            return hs_fail(err, HS_ERR_FORMAT, "%s: tensor '%s' appears twice in the header",
                           fname, order[i]->name);

    qsort(order, (size_t)ne, sizeof *order, cmp_entry_offset);
    size_t pos = 0;
    const st_entry *prev = NULL;
    for (int i = 0; i < ne; i++) {
        const st_entry *e = order[i];
        if (e->begin < pos)
            return hs_fail(err, HS_ERR_FORMAT, "%s: tensors '%s' [%zu,%zu) and '%s' [%zu,%zu) "
                           "have overlapping data_offsets", fname, prev->name, prev->begin,
                           prev->end, e->name, e->begin, e->end);
        if (e->begin > pos) {
            if (prev)
                return hs_fail(err, HS_ERR_FORMAT, "%s: hole of %zu bytes in the data between "
                               "tensor '%s' (ends at %zu) and tensor '%s' (begins at %zu)",
                               fname, e->begin - pos, prev->name, pos, e->name, e->begin);
            return hs_fail(err, HS_ERR_FORMAT, "%s: hole of %zu bytes in the data before the "
                           "first tensor '%s'", fname, e->begin, e->name);
        }
        prev = e;
        pos = e->end;
    }
    if (pos != r->data_size)
        return hs_fail(err, HS_ERR_FORMAT, "%s: %zu bytes of trailing garbage after the last "
                       "tensor (tensors end at %zu, the data section has %zu bytes)", fname,
                       r->data_size - pos, pos, r->data_size);
    return HS_OK;
}

/* The kept tensors, in header order, decoded into out: F32 values, each
 * finite. *skipped gets the number of skipped ones. */
static hs_status decode_tensors(const st_reader *r, hs_st_file *out, int *skipped,
                                hs_error *err)
{
    const char *fname = r->fname;
    int n_keep = 0;
    for (int i = 0; i < r->ne; i++) n_keep += !r->ents[i].skip;
    out->names = calloc((size_t)n_keep + 1, sizeof *out->names);
    out->ndim = calloc((size_t)n_keep + 1, sizeof *out->ndim);
    out->shape = calloc((size_t)n_keep + 1, sizeof *out->shape);
    out->data = calloc((size_t)n_keep + 1, sizeof *out->data);
    out->numel = calloc((size_t)n_keep + 1, sizeof *out->numel);
    if (!out->names || !out->ndim || !out->shape || !out->data || !out->numel)
        return hs_fail(err, HS_ERR_NOMEM, "%s: out of memory", fname);
    *skipped = 0;
    for (int i = 0; i < r->ne; i++) {
        const st_entry *e = &r->ents[i];
        if (e->skip) {
            (*skipped)++;
            continue;
        }
        int k = out->n;
        out->names[k] = hs_strdup(e->name);
        out->data[k] = malloc(e->numel ? e->numel * sizeof(float) : 1);
        out->n++; /* so hs_st_file_free releases both */
        if (!out->names[k] || !out->data[k])
            return hs_fail(err, HS_ERR_NOMEM, "%s: out of memory (tensor '%s', %zu floats)",
                           fname, e->name, e->numel);
        out->ndim[k] = e->ndim;
        for (int d = 0; d < ST_MAX_DIMS; d++) out->shape[k][d] = d < e->ndim ? e->shape[d] : 0;
        out->numel[k] = e->numel;
        const unsigned char *p = r->data + e->begin;
        float *dst = out->data[k];
        for (size_t j = 0; j < e->numel; j++) {
            float v = load_le_f32(p + 4 * j);
            if (!isfinite(v))
                return hs_fail(err, HS_ERR_NUMERIC, "%s: tensor '%s' has a non-finite value (%s) "
                               "at index %zu", fname, e->name,
                               isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf"), j);
            dst[j] = v;
        }
    }
    return HS_OK;
}

hs_status hs_safetensors_parse_ex(const unsigned char *buf, size_t n, const char *name,
                                  hs_st_skip_fn skip, void *skip_ctx, hs_st_file *out,
                                  int *n_skipped, hs_error *err)
{
    st_reader r = {name ? name : "<buffer>", NULL, NULL, NULL, 0, NULL, NULL, 0, 0};
    int skipped = 0;

    memset(out, 0, sizeof *out);
    if (n_skipped) *n_skipped = 0;
    hs_status s = read_header(&r, buf, n, err);
    if (s == HS_OK) s = read_entries(&r, skip, skip_ctx, out, err);
    if (s == HS_OK) s = check_layout(&r, err);
    if (s == HS_OK) s = decode_tensors(&r, out, &skipped, err);
    free(r.order);
    free(r.ents);
    cJSON_Delete(r.root);
    free(r.hdr);
    if (s != HS_OK) {
        hs_st_file_free(out);
        return s;
    }
    if (n_skipped) *n_skipped = skipped;
    return HS_OK;
}

void hs_st_index_free(hs_st_index *x)
{
    if (x == NULL) return;
    hs_st_file_free(&x->st);
    hs_st_file_free(&x->bufs);
    free(x->loc);
    free(x->buf_loc);
    memset(x, 0, sizeof *x);
}

/* The entries of r into x: the kept ones into x->st / x->loc, the skipped
 * ones into x->bufs / x->buf_loc, in header order (names copied). */
static hs_status index_entries(const st_reader *r, uint64_t data_offset, hs_st_index *x,
                               hs_error *err)
{
    int nk = 0;
    for (int i = 0; i < r->ne; i++) nk += !r->ents[i].skip;
    hs_st_file *fs[2] = {&x->st, &x->bufs};
    const int cap[2] = {nk, r->ne - nk};
    for (int w = 0; w < 2; w++) {
        fs[w]->names = calloc((size_t)cap[w] + 1, sizeof *fs[w]->names);
        fs[w]->ndim = calloc((size_t)cap[w] + 1, sizeof *fs[w]->ndim);
        fs[w]->shape = calloc((size_t)cap[w] + 1, sizeof *fs[w]->shape);
        fs[w]->numel = calloc((size_t)cap[w] + 1, sizeof *fs[w]->numel);
    }
    x->loc = calloc((size_t)nk + 1, sizeof *x->loc);
    x->buf_loc = calloc((size_t)(r->ne - nk) + 1, sizeof *x->buf_loc);
    for (int w = 0; w < 2; w++)
        if (!fs[w]->names || !fs[w]->ndim || !fs[w]->shape || !fs[w]->numel)
            return hs_fail(err, HS_ERR_NOMEM, "%s: out of memory", r->fname);
    if (!x->loc || !x->buf_loc) return hs_fail(err, HS_ERR_NOMEM, "%s: out of memory", r->fname);
    for (int i = 0; i < r->ne; i++) {
        const st_entry *e = &r->ents[i];
        hs_st_file *f = e->skip ? &x->bufs : &x->st;
        hs_st_loc *l = e->skip ? &x->buf_loc[f->n] : &x->loc[f->n];
        const int k = f->n;
        f->names[k] = hs_strdup(e->name);
        if (!f->names[k]) return hs_fail(err, HS_ERR_NOMEM, "%s: out of memory", r->fname);
        f->n++;
        f->ndim[k] = e->ndim;
        for (int d = 0; d < ST_MAX_DIMS; d++) f->shape[k][d] = d < e->ndim ? e->shape[d] : 0;
        f->numel[k] = e->numel;
        l->shard = 0;
        l->dtype = e->dtype;
        l->elsize = e->elsize;
        l->offset = data_offset + e->begin;
    }
    return HS_OK;
}

hs_status hs_st_index_parse(const unsigned char *hdr, size_t hn, uint64_t data_size,
                            uint64_t data_offset, const char *name, hs_st_skip_fn skip,
                            void *skip_ctx, hs_st_index *out, hs_error *err)
{
    st_reader r = {name ? name : "<buffer>", NULL, NULL, NULL, 0, NULL, NULL, 0, 1};
    memset(out, 0, sizeof *out);
    if (data_size > SIZE_MAX)
        return hs_fail(err, HS_ERR_FORMAT, "%s: %llu bytes of data is more than this machine "
                       "addresses", r.fname, (unsigned long long)data_size);
    r.data_size = (size_t)data_size;
    hs_status s = read_header_json(&r, hdr, hn, err);
    if (s == HS_OK) s = read_entries(&r, skip, skip_ctx, &out->st, err);
    if (s == HS_OK) s = check_layout(&r, err);
    if (s == HS_OK) s = index_entries(&r, data_offset, out, err);
    free(r.order);
    free(r.ents);
    cJSON_Delete(r.root);
    free(r.hdr);
    if (s != HS_OK) hs_st_index_free(out);
    return s;
}

hs_status hs_safetensors_parse(const unsigned char *buf, size_t n, const char *name,
                               hs_st_file *out, hs_error *err)
{
    return hs_safetensors_parse_ex(buf, n, name, NULL, NULL, out, NULL, err);
}

hs_status hs_safetensors_read(const char *path, hs_st_file *out, hs_error *err)
{
    unsigned char *buf = NULL;
    size_t n = 0;
    memset(out, 0, sizeof *out);
    hs_status s = hs_read_file(path, &buf, &n, err);
    if (s != HS_OK) return s;
    s = hs_safetensors_parse(buf, n, path, out, err);
    free(buf);
    return s;
}

/* ------------------------------------------------------------------------ */
/* Writer                                                                    */

/* Adds a JSON integer written exactly (cJSON prints large doubles as 1e+15). */
static int add_uint_raw(cJSON *arr, unsigned long long v)
{
    char num[32];
    snprintf(num, sizeof num, "%llu", v);
    cJSON *r = cJSON_CreateRaw(num);
    if (!r) return 0;
    return cJSON_AddItemToArray(arr, r) ? 1 : 0;
}

/* Builds the header JSON (unpadded, malloc'd) or returns NULL with err set. */
static char *build_header(const hs_st_tensor *tensors, int n, const size_t *nbytes,
                          const char *const *meta_keys, const char *const *meta_vals,
                          int n_meta, hs_error *err)
{
    char *text = NULL;
    cJSON *root = cJSON_CreateObject();
    if (!root) goto oom;
    if (n_meta > 0) {
        cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
        if (!meta) goto oom;
        for (int i = 0; i < n_meta; i++)
            if (!cJSON_AddStringToObject(meta, meta_keys[i], meta_vals[i])) goto oom;
    }
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        cJSON *t = cJSON_AddObjectToObject(root, tensors[i].name);
        if (!t || !cJSON_AddStringToObject(t, "dtype", "F32")) goto oom;
        cJSON *shape = cJSON_AddArrayToObject(t, "shape");
        if (!shape) goto oom;
        for (int d = 0; d < tensors[i].ndim; d++)
            if (!add_uint_raw(shape, (unsigned long long)tensors[i].shape[d])) goto oom;
        cJSON *offs = cJSON_AddArrayToObject(t, "data_offsets");
        if (!offs || !add_uint_raw(offs, off) || !add_uint_raw(offs, off + nbytes[i]))
            goto oom;
        off += nbytes[i];
    }
    text = cJSON_PrintUnformatted(root);
    if (!text) goto oom;
    cJSON_Delete(root);
    return text;
oom:
    cJSON_Delete(root);
    hs_fail(err, HS_ERR_NOMEM, "out of memory building the safetensors header");
    return NULL;
}

/* Checks the caller's tensors and metadata; fills nbytes[i]. */
static hs_status check_write_args(const hs_st_tensor *tensors, int n, size_t *nbytes,
                                  const char *const *meta_keys, const char *const *meta_vals,
                                  int n_meta, hs_error *err)
{
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        const hs_st_tensor *t = &tensors[i];
        if (t->name == NULL || t->name[0] == '\0' || strcmp(t->name, "__metadata__") == 0)
            return hs_fail(err, HS_ERR_INPUT, "tensor %d has an empty or reserved name", i);
        for (int j = 0; j < i; j++)
            if (strcmp(tensors[j].name, t->name) == 0)
                return hs_fail(err, HS_ERR_INPUT, "tensor '%s' is given twice", t->name);
        if (t->ndim < 0 || t->ndim > ST_MAX_DIMS)
            return hs_fail(err, HS_ERR_INPUT, "tensor '%s' has %d dimensions (0..%d allowed)",
                           t->name, t->ndim, ST_MAX_DIMS);
        size_t numel = 1;
        for (int d = 0; d < t->ndim; d++) {
            if (t->shape[d] < 0 || (uint64_t)t->shape[d] > (uint64_t)SIZE_MAX ||
                !mul_size(numel, (size_t)t->shape[d], &numel))
                return hs_fail(err, HS_ERR_INPUT, "tensor '%s' has an invalid shape", t->name);
        }
        if (!mul_size(numel, sizeof(float), &nbytes[i]) || total > SIZE_MAX - nbytes[i] ||
            (double)(total + nbytes[i]) > ST_MAX_JSON_INT)
            return hs_fail(err, HS_ERR_INPUT, "tensor '%s' is too large", t->name);
        total += nbytes[i];
        if (numel > 0 && t->data == NULL)
            return hs_fail(err, HS_ERR_INPUT, "tensor '%s' has no data", t->name);
        for (size_t j = 0; j < numel; j++)
            if (!isfinite(t->data[j]))
                return hs_fail(err, HS_ERR_NUMERIC, "tensor '%s' has a non-finite value at index "
                               "%zu; refusing to write it", t->name, j);
    }
    for (int i = 0; i < n_meta; i++) {
        if (meta_keys[i] == NULL || meta_vals[i] == NULL)
            return hs_fail(err, HS_ERR_INPUT, "metadata entry %d has a NULL key or value", i);
        for (int j = 0; j < i; j++)
            if (strcmp(meta_keys[j], meta_keys[i]) == 0)
                return hs_fail(err, HS_ERR_INPUT, "metadata key '%s' is given twice",
                               meta_keys[i]);
    }
    return HS_OK;
}

hs_status hs_safetensors_write(const char *path, const hs_st_tensor *tensors, int n,
                               const char *const *meta_keys, const char *const *meta_vals,
                               int n_meta, hs_error *err)
{
    hs_status s = HS_OK;
    size_t *nbytes = NULL;
    char *header = NULL;
    unsigned char *chunk = NULL;
    hs_atomic_file af;
    memset(&af, 0, sizeof af);

    if (n < 0 || n_meta < 0 || (n > 0 && tensors == NULL) ||
        (n_meta > 0 && (meta_keys == NULL || meta_vals == NULL)))
        return hs_fail(err, HS_ERR_INPUT, "hs_safetensors_write: invalid arguments");
    nbytes = calloc((size_t)n + 1, sizeof *nbytes);
    if (!nbytes) return hs_fail(err, HS_ERR_NOMEM, "out of memory");
    s = check_write_args(tensors, n, nbytes, meta_keys, meta_vals, n_meta, err);
    if (s != HS_OK) goto fail;
    header = build_header(tensors, n, nbytes, meta_keys, meta_vals, n_meta, err);
    if (!header) {
        s = HS_ERR_NOMEM;
        goto fail;
    }
    size_t hl = strlen(header);
    size_t padded = (hl + 7) / 8 * 8;
    enum { CHUNK = 4096 };
    chunk = malloc(CHUNK * sizeof(float));
    if (!chunk) {
        s = hs_fail(err, HS_ERR_NOMEM, "out of memory");
        goto fail;
    }

    s = hs_atomic_open(&af, path, err);
    if (s != HS_OK) goto fail;
    int ok = 1;
    unsigned char lenb[8];
    store_le64(lenb, (uint64_t)padded);
    ok = ok && fwrite(lenb, 1, 8, af.fp) == 8;
    ok = ok && fwrite(header, 1, hl, af.fp) == hl;
    for (size_t i = hl; ok && i < padded; i++) ok = fputc(' ', af.fp) != EOF;
    const int le = host_is_little_endian();
    for (int i = 0; ok && i < n; i++) {
        size_t numel = nbytes[i] / sizeof(float);
        const float *src = tensors[i].data;
        if (le) {
            ok = numel == 0 || fwrite(src, sizeof(float), numel, af.fp) == numel;
            continue;
        }
        for (size_t j = 0; ok && j < numel; j += CHUNK) {
            size_t m = numel - j < CHUNK ? numel - j : CHUNK;
            for (size_t k = 0; k < m; k++) store_le_f32(chunk + 4 * k, src[j + k]);
            ok = fwrite(chunk, 4, m, af.fp) == m;
        }
    }
    if (!ok) {
        int e = errno;
        s = hs_fail(err, HS_ERR_IO, "cannot write %s: %s", path, strerror(e ? e : EIO));
        hs_atomic_abort(&af);
        goto fail;
    }
    s = hs_atomic_commit(&af, err);

fail:
    free(chunk);
    free(header);
    free(nbytes);
    return s;
}
