/*
 * discovery/graph_io.c -- a scored circuit as the files other tools read
 * (experiments.h, "graph.json and .dot"): graph.json in the bytes EAP-IG's
 * Graph.to_json writes (hannamw/eap-ig src/eap/graph.py: json.dump of
 * {"cfg", "nodes", "edges"} in Graph.from_model's insertion order, Python's
 * float repr), read back the way Graph.from_json reads it, and a Graphviz
 * .dot of the circuit.
 */
#include "discovery/graph.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Python's float repr                                                       */

void hs_py_float_repr(double x, char out[32])
{
    if (x == 0.0) {
        snprintf(out, 32, signbit(x) ? "-0.0" : "0.0");
        return;
    }
    char e[40];
    int p = 0;
    for (p = 0; p < 17; p++) { /* the shortest "%.*e" that reads back as x (repr's digits) */
        snprintf(e, sizeof e, "%.*e", p, x);
        if (strtod(e, NULL) == x) break;
    }
    /* e: [-]d[.ddd]e(+|-)XX */
    const int neg = e[0] == '-';
    char digits[24];
    int nd = 0;
    const char *s = e + neg;
    for (; *s && *s != 'e'; s++)
        if (*s != '.') digits[nd++] = *s;
    digits[nd] = '\0';
    const int exp10 = atoi(s + 1);
    char *o = out;
    if (neg) *o++ = '-';
    if (exp10 < -4 || exp10 >= 16) { /* d[.ddd]e(+|-)XX, at least two exponent digits */
        *o++ = digits[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, (size_t)nd - 1);
            o += nd - 1;
        }
        const int ax = exp10 < 0 ? -exp10 : exp10; /* |exponent| <= 324 */
        *o++ = 'e';
        *o++ = exp10 < 0 ? '-' : '+';
        if (ax >= 100) *o++ = (char)('0' + ax / 100);
        *o++ = (char)('0' + ax / 10 % 10);
        *o++ = (char)('0' + ax % 10);
        *o = '\0';
        return;
    }
    if (exp10 < 0) { /* 0.000ddd */
        *o++ = '0';
        *o++ = '.';
        for (int k = 0; k < -exp10 - 1; k++) *o++ = '0';
        memcpy(o, digits, (size_t)nd);
        o[nd] = '\0';
        return;
    }
    for (int k = 0; k <= exp10; k++) *o++ = k < nd ? digits[k] : '0';
    *o++ = '.';
    if (nd > exp10 + 1) {
        memcpy(o, digits + exp10 + 1, (size_t)(nd - exp10 - 1));
        o += nd - exp10 - 1;
    } else {
        *o++ = '0';
    }
    *o = '\0';
}

double hs_score_to_mib(double s)
{
    return -s / HS_MIB_BATCH + 0.0; /* + 0.0: a zero score is 0.0, not -0.0 */
}

double hs_score_from_mib(double s)
{
    return -s * HS_MIB_BATCH;
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */

static void put_node(hs_buf *b, const hs_graph *g, int v, const unsigned char *node_in, int *first)
{
    char name[32];
    hs_graph_node_name(g, v, name, sizeof name);
    hs_buf_printf(b, "%s\"%s\": {\"in_graph\": %s}", *first ? "" : ", ", name, node_in[v] ? "true" : "false");
    *first = 0;
}

static void put_edge(hs_buf *b, const hs_graph *g, size_t e, const double *scores, const unsigned char *in_circuit,
                     int *first)
{
    char name[96], num[32];
    hs_graph_edge_name(g, e, name, sizeof name);
    /* MIB's sign and scale (HS_MIB_BATCH); EAP-IG's scores are a float32 tensor */
    hs_py_float_repr((double)(float)hs_score_to_mib(scores[e]), num);
    hs_buf_printf(b, "%s\"%s\": {\"score\": %s, \"in_graph\": %s}", *first ? "" : ", ", name, num,
                  in_circuit[e] ? "true" : "false");
    *first = 0;
}

/* The edge from node u into receiver (node v, kind x). */
static size_t edge_of(const hs_graph *g, const int *recv_of, int u, int v, int x)
{
    const int r = recv_of[v * 3 + x];
    for (size_t e = g->recv_first_edge[r];; e++)
        if (g->edge_src[e] == u) return e;
}

hs_status hs_graph_json_text(const hs_graph *g, const hs_config *cfg, const double *scores,
                             const unsigned char *in_circuit, hs_buf *out, hs_error *err)
{
    const int N = g->n_nodes, H = g->n_heads, L = g->n_layers, per = H + g->has_mlp;
    unsigned char *keep = malloc(g->n_edges ? g->n_edges : 1), *node_in = malloc((size_t)N);
    int *recv_of = malloc((size_t)N * 3 * sizeof *recv_of);
    hs_status st = keep && node_in && recv_of ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (st == HS_OK) st = hs_scores_finite(g, scores, err);
    if (st == HS_OK) {
        memcpy(keep, in_circuit, g->n_edges);
        st = hs_circuit_prune(g, keep, node_in, NULL, err);
    }
    if (st == HS_OK) {
        for (int r = 0; r < g->n_receivers; r++)
            recv_of[g->recv_node[r] * 3 + (g->recv_kind[r] == HS_RECV_WHOLE ? 0 : (int)g->recv_kind[r])] = r;
        hs_buf_printf(out, "{\"cfg\": {\"n_layers\": %d, \"n_heads\": %d, \"parallel_attn_mlp\": %s, "
                           "\"d_model\": %d}, \"nodes\": {", cfg->n_layers, cfg->n_heads,
                      g->parallel ? "true" : "false", cfg->d_model);
        int first = 1;
        for (int v = 0; v < N; v++) put_node(out, g, v, node_in, &first);
        hs_buf_puts(out, "}, \"edges\": {");
        first = 1;
        /* Graph.from_model's order: per layer, every earlier node into every head's q, k, v; then into the MLP */
        for (int l = 0; l < L; l++) {
            const int n_before = 1 + l * per;
            for (int u = 0; u < n_before; u++)
                for (int h = 0; h < H; h++)
                    for (int x = 0; x < 3; x++) put_edge(out, g, edge_of(g, recv_of, u, n_before + h, x), scores, in_circuit, &first);
            if (g->has_mlp) /* parallel: the MLP reads what the heads read */
                for (int u = 0; u < n_before + (g->parallel ? 0 : H); u++) put_edge(out, g, edge_of(g, recv_of, u, n_before + H, 0), scores, in_circuit, &first);
        }
        for (int u = 0; u < N - 1; u++) put_edge(out, g, edge_of(g, recv_of, u, N - 1, 0), scores, in_circuit, &first);
        hs_buf_puts(out, "}}");
        if (out->oom) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    free(keep);
    free(node_in);
    free(recv_of);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */

/* An MLP name ("m3", "a0.h1->m3", "m3->logits") in a file for a model
 * without MLPs: EAP-IG's Graph.from_model always has them. */
static int absent_mlp(const hs_graph *g, const char *name)
{
    if (g->has_mlp) return 0;
    const char *s = name;
    for (;;) {
        const char *m = strchr(s, 'm');
        if (m == NULL) return 0;
        int l, n = 0;
        if ((m == name || m[-1] == '>') && sscanf(m, "m%d%n", &l, &n) == 1 && l >= 0 && l < g->n_layers &&
            (m[n] == '\0' || m[n] == '-'))
            return 1;
        s = m + 1;
    }
}

static hs_status check_cfg(const cJSON *c, const hs_config *cfg, const char *name, hs_error *err)
{
    if (!cJSON_IsObject(c)) return hs_fail(err, HS_ERR_INPUT, "%s: \"cfg\" is not an object", name);
    static const char *const keys[] = {"n_layers", "n_heads", "d_model"};
    const int want[] = {cfg->n_layers, cfg->n_heads, cfg->d_model};
    for (int k = 0; k < 3; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, keys[k]);
        if (v == NULL && k == 2) continue; /* EAP-IG needs n_layers and n_heads; d_model only for neurons */
        if (cJSON_IsNumber(v) && v->valuedouble == want[k]) continue;
        char got[40];
        if (v == NULL) snprintf(got, sizeof got, "missing");
        else if (!cJSON_IsNumber(v)) snprintf(got, sizeof got, "not a number");
        else snprintf(got, sizeof got, "%.6g", v->valuedouble);
        return hs_fail(err, HS_ERR_INPUT, "%s: the graph is for another model shape: cfg %s is %s, this model's %d "
                       "(%d layers x %d heads, d_model %d)", name, keys[k], got, want[k], cfg->n_layers,
                       cfg->n_heads, cfg->d_model);
    }
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(c, "parallel_attn_mlp");
    const int par = p && !cJSON_IsFalse(p) && !cJSON_IsNull(p);
    if (par != (cfg->parallel_attn_mlp && cfg->d_mlp > 0))
        return hs_fail(err, HS_ERR_INPUT, "%s: the graph is for a model %s parallel attention and MLP; "
                       "this model's blocks run them %s", name, par ? "with" : "without",
                       par ? "in turn" : "in parallel");
    return HS_OK;
}

static hs_status read_nodes(const hs_graph *g, const cJSON *nodes, const char *name, hs_error *err)
{
    if (!cJSON_IsObject(nodes)) return hs_fail(err, HS_ERR_INPUT, "%s: \"nodes\" is not an object", name);
    for (const cJSON *it = nodes->child; it; it = it->next) {
        const int v = hs_graph_find_node(g, it->string);
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(it, "in_graph");
        if (v < 0 && !(absent_mlp(g, it->string) && cJSON_IsFalse(in)))
            return hs_fail(err, HS_ERR_INPUT, "%s: unknown node '%.40s' (this model: %d layers x %d heads%s)", name,
                           it->string, g->n_layers, g->n_heads, g->has_mlp ? ", MLPs" : ", no MLPs");
        if (!cJSON_IsObject(it) || !cJSON_IsBool(in))
            return hs_fail(err, HS_ERR_INPUT, "%s: node '%s' is not {\"in_graph\": true|false, ...}", name, it->string);
        for (const cJSON *k = it->child; k; k = k->next) {
            if (strcmp(k->string, "in_graph") == 0 || (strcmp(k->string, "score") == 0 && cJSON_IsNumber(k))) continue;
            return hs_fail(err, HS_ERR_INPUT, "%s: node '%s' has %s\"%.24s\" (headscope reads in_graph and a score; "
                           "neuron-level circuits are not supported)", name, it->string,
                           strcmp(k->string, "score") == 0 ? "a non-number " : "", k->string);
        }
    }
    return HS_OK;
}

static hs_status read_edges(const hs_graph *g, const cJSON *edges, const char *name, double *scores,
                            unsigned char *in_circuit, hs_error *err)
{
    if (!cJSON_IsObject(edges)) return hs_fail(err, HS_ERR_INPUT, "%s: \"edges\" is not an object", name);
    for (const cJSON *it = edges->child; it; it = it->next) {
        const long e = hs_graph_find_edge(g, it->string);
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(it, "score");
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(it, "in_graph");
        if (e < 0 && !(absent_mlp(g, it->string) && cJSON_IsFalse(in)))
            return hs_fail(err, HS_ERR_INPUT, "%s: unknown edge '%.60s' (this model: %d layers x %d heads%s)", name,
                           it->string, g->n_layers, g->n_heads, g->has_mlp ? ", MLPs" : ", no MLPs");
        if (!cJSON_IsObject(it) || !cJSON_IsNumber(sc) || !isfinite(sc->valuedouble) || !cJSON_IsBool(in) ||
            cJSON_GetArraySize(it) != 2)
            return hs_fail(err, HS_ERR_INPUT, "%s: edge '%s' is not {\"score\": a finite number, \"in_graph\": "
                           "true|false}", name, it->string);
        if (e < 0) continue;
        scores[e] = hs_score_from_mib(sc->valuedouble);
        in_circuit[e] = cJSON_IsTrue(in);
    }
    return HS_OK;
}

hs_status hs_graph_json_parse(const hs_graph *g, const hs_config *cfg, const char *text, size_t len, const char *name,
                              double *scores, unsigned char *in_circuit, hs_error *err)
{
    for (size_t e = 0; e < g->n_edges; e++) scores[e] = 0.0; /* Graph.from_model's zeros */
    memset(in_circuit, 0, g->n_edges);
    cJSON *j = cJSON_ParseWithLength(text, len);
    hs_status st = HS_OK;
    if (!cJSON_IsObject(j)) st = hs_fail(err, HS_ERR_INPUT, "%s: not a JSON object (a graph.json)", name);
    static const char *const keys[] = {"cfg", "nodes", "edges"};
    for (int k = 0; k < 3 && st == HS_OK; k++)
        if (!cJSON_GetObjectItemCaseSensitive(j, keys[k]))
            st = hs_fail(err, HS_ERR_INPUT, "%s: not a graph.json: no \"%s\" (EAP-IG's Graph.to_json writes cfg, "
                         "nodes and edges)", name, keys[k]);
    if (st == HS_OK) st = check_cfg(cJSON_GetObjectItemCaseSensitive(j, "cfg"), cfg, name, err);
    if (st == HS_OK) st = read_nodes(g, cJSON_GetObjectItemCaseSensitive(j, "nodes"), name, err);
    if (st == HS_OK) st = read_edges(g, cJSON_GetObjectItemCaseSensitive(j, "edges"), name, scores, in_circuit, err);
    cJSON_Delete(j);
    return st;
}

hs_status hs_graph_json_load(const hs_graph *g, const hs_config *cfg, const char *path, double *scores,
                             unsigned char *in_circuit, hs_error *err)
{
    unsigned char *text = NULL;
    size_t len = 0;
    hs_status st = hs_read_file(path, &text, &len, err);
    if (st == HS_OK) st = hs_graph_json_parse(g, cfg, (const char *)text, len, path, scores, in_circuit, err);
    free(text);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Graphviz                                                                  */

hs_status hs_circuit_dot(const hs_graph *g, const double *scores, const unsigned char *in_circuit, hs_buf *out,
                         hs_error *err)
{
    unsigned char *node_in = malloc((size_t)g->n_nodes), *keep = malloc(g->n_edges ? g->n_edges : 1);
    hs_status st = node_in && keep ? HS_OK : hs_fail(err, HS_ERR_NOMEM, "out of memory");
    if (st == HS_OK) {
        memcpy(keep, in_circuit, g->n_edges);
        st = hs_circuit_prune(g, keep, node_in, NULL, err);
    }
    double lo = INFINITY, hi = 0.0;
    for (size_t e = 0; e < g->n_edges; e++) {
        lo = fmin(lo, fabs(scores[e]));
        hi = fmax(hi, fabs(scores[e]));
    }
    if (st == HS_OK) {
        hs_buf_puts(out, "// the circuit: layers bottom to top; edge width |score| (EAP-IG to_image: 0.6 to 5), "
                         "colour its sign (blue +, red -)\ndigraph circuit {\n  rankdir=BT;\n"
                         "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#f0f0f0\", fontname=\"Helvetica\"];\n");
        for (int l = -1; l <= g->n_layers; l++) {
            int any = 0;
            for (int v = 0; v < g->n_nodes; v++) {
                if (!node_in[v] || g->node_layer[v] != l) continue;
                char name[32];
                hs_graph_node_name(g, v, name, sizeof name);
                hs_buf_printf(out, "%s\"%s\";", any ? " " : "  { rank=same; ", name);
                any = 1;
            }
            if (any) hs_buf_puts(out, " }\n");
        }
        for (size_t e = 0; e < g->n_edges; e++) {
            if (!keep[e]) continue;
            char u[32], v[32], w[32];
            hs_graph_node_name(g, g->edge_src[e], u, sizeof u);
            hs_graph_node_name(g, g->recv_node[g->edge_dst[e]], v, sizeof v);
            const double norm = hi > lo ? (fabs(scores[e]) - lo) / (hi - lo) : fabs(scores[e]);
            snprintf(w, sizeof w, "%.2f", fmax(0.6, norm * 5.0));
            const hs_recv_kind x = g->recv_kind[g->edge_dst[e]];
            hs_buf_printf(out, "  \"%s\" -> \"%s\" [penwidth=%s, color=\"%s\"%s%s%s];\n", u, v, w,
                          scores[e] < 0 ? "#b2182b" : "#2166ac", x == HS_RECV_WHOLE ? "" : ", label=\"",
                          x == HS_RECV_WHOLE ? "" : x == HS_RECV_Q ? "q" : x == HS_RECV_K ? "k" : "v",
                          x == HS_RECV_WHOLE ? "" : "\"");
        }
        hs_buf_puts(out, "}\n");
        if (out->oom) st = hs_fail(err, HS_ERR_NOMEM, "out of memory");
    }
    free(node_in);
    free(keep);
    return st;
}
