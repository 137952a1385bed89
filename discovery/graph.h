/*
 * discovery/graph.h -- the circuit graph of discovery and circuits as edge
 * sets over it: the head-level graph (MIB's names), choosing a circuit from
 * edge scores (top-n, threshold, EAP-IG's greedy, signed) and pruning it,
 * ROC against a true circuit, graph.json in EAP-IG's format (MIB's sign and
 * scale) and Graphviz .dot. Plain arrays over a graph: no model runs here.
 * Split out of discovery/discovery.h by size; discovery.h includes it, and
 * callers that only read, write or select graphs (graph.json, ROC) may
 * include this alone.
 *
 * May call: common/, model/ (hs_config), cJSON. Library code: never prints,
 * never exits; errors are an hs_status with one line in hs_error.
 *
 * Dims legend: arrays over nodes, receivers or edges are in hs_graph's
 * canonical order. Ownership: graphs and ROC curves are freed with their
 * *_free (NULL and zeroed allowed); JSON with cJSON_Delete, hs_buf text
 * with hs_buf_free.
 */
#ifndef HS_DISCOVERY_GRAPH_H
#define HS_DISCOVERY_GRAPH_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/common.h"
#include "model/model.h"

/* ------------------------------------------------------------------------ */
/* The circuit graph (discovery/graph.c): what circuit discovery scores    */
/*
 * The computational graph at head granularity, named as MIB (Mueller et al.
 * 2025) and EAP-IG (Hanna et al. 2024, hannamw/eap-ig src/eap/graph.py) name
 * it. Nodes, in forward order: "input", then for each layer l the heads
 * "a{l}.h{h}" (h = 0..H-1) and, when the model has MLPs, "m{l}", then
 * "logits". A node SENDS its output into the residual stream:
 *   input    blocks.0.hook_resid_pre (the embeddings, before any block)
 *   a{l}.h{h} blocks.l.attn.hook_result[:, :, h, :] (z W_O of that head)
 *   m{l}     blocks.l.hook_mlp_out
 * (b_O and the biases are the same in every run and belong to no node.) A
 * node RECEIVES the residual stream entering it: each head three times, as
 * separate receivers "a{l}.h{h}<q>", "<k>", "<v>" (blocks.l.hook_q_input /
 * hook_k_input / hook_v_input [:, :, h, :], before ln1), "m{l}" once
 * (blocks.l.hook_mlp_in = resid_mid, before ln2), "logits" once
 * (blocks.{L-1}.hook_resid_post, before ln_final). An edge u -> v runs from
 * every node u that writes before receiver v reads: input, every head and
 * MLP of an earlier layer, and for m{l} also the heads of its own layer
 * (not with parallel_attn_mlp, where m{l} reads resid_pre beside them);
 * named "u->v", e.g. "input->a0.h0<q>", "a0.h2->a1.h0<k>", "a1.h3->m1",
 * "m1->logits". A 2-layer model with 4 heads and MLPs has 110 edges, GPT-2
 * small (12 x 12) 32,491 (hs_graph_edge_count).
 *
 * Canonical order, which every array over nodes, receivers or edges follows:
 * nodes as above; receivers in forward order (for each layer: head 0's q, k,
 * v, head 1's q, k, v, ..., then the MLP; logits last); edges grouped by
 * receiver in that order, and within a receiver by sender in node order
 * (edges [recv_first_edge[r], recv_first_edge[r] + recv_n_edges[r]) are
 * receiver r's).
 */
typedef enum { HS_NODE_INPUT = 0, HS_NODE_HEAD, HS_NODE_MLP, HS_NODE_LOGITS } hs_node_kind;
typedef enum { HS_RECV_Q = 0, HS_RECV_K = 1, HS_RECV_V = 2, HS_RECV_WHOLE = 3 } hs_recv_kind;

typedef struct {
    int n_layers, n_heads, has_mlp;
    int parallel;             /* 1 = parallel_attn_mlp: m{l} reads resid_pre, so no head of
                               * its own layer sends to it (EAP-IG's Graph.from_model with
                               * cfg parallel_attn_mlp): L H edges fewer */
    int n_nodes;              /* 1 + L (H + has_mlp) + 1 */
    int n_receivers;          /* L (3 H + has_mlp) + 1 */
    size_t n_edges;
    hs_node_kind *node_kind;  /* [n_nodes] */
    int *node_layer;          /* [n_nodes] layer (input -1, logits L) */
    int *node_head;           /* [n_nodes] head, or -1 */
    int *recv_node;           /* [n_receivers] the node receiving */
    hs_recv_kind *recv_kind;  /* [n_receivers] q, k, v of a head; WHOLE otherwise */
    size_t *recv_first_edge;  /* [n_receivers] its first edge */
    int *recv_n_edges;        /* [n_receivers] its edges (= its senders) */
    int *edge_src;            /* [n_edges] sending node */
    int *edge_dst;            /* [n_edges] receiver */
} hs_graph;

/* The graph of a model of config cfg (its layers, heads, and MLPs when
 * d_mlp > 0; with parallel_attn_mlp no edge a{l}.h -> m{l}). Free with
 * hs_graph_free. HS_ERR_CONFIG, HS_ERR_NOMEM; HS_ERR_INPUT for a model whose
 * residual stream is not the sum of the nodes' outputs (norm_place post,
 * attn_replace: hs_config_nonadditive), naming the switch. */
hs_status hs_graph_build(const hs_config *cfg, hs_graph *out, hs_error *err);
void hs_graph_free(hs_graph *g);
/* The edge count of that graph, from the formula (for tests and for sizes;
 * a parallel_attn_mlp graph has n_layers x n_heads fewer):
 * sum over layers l of 3 H (1 + l (H + m)) + m (1 + l (H + m) + H), plus
 * 1 + L (H + m) into logits, m = 1 with MLPs. */
size_t hs_graph_edge_count(int n_layers, int n_heads, int has_mlp);
/* Names into buf (cap >= 32 is enough for every name): "a1.h0", "a1.h0<q>",
 * "a0.h2->a1.h0<k>". */
void hs_graph_node_name(const hs_graph *g, int node, char *buf, size_t cap);
void hs_graph_receiver_name(const hs_graph *g, int r, char *buf, size_t cap);
void hs_graph_edge_name(const hs_graph *g, size_t e, char *buf, size_t cap);
/* The node / edge with that name, or -1 (an unknown name, or an edge the
 * graph does not have, e.g. between two heads of one layer). */
int hs_graph_find_node(const hs_graph *g, const char *name);
long hs_graph_find_edge(const hs_graph *g, const char *name);

/* ------------------------------------------------------------------------ */
/* Circuits from scores (discovery/acdc.c)                                  */

/* HS_ERR_NUMERIC naming the first edge whose score [n_edges] is not finite. */
hs_status hs_scores_finite(const hs_graph *g, const double *scores, hs_error *err);
/* order [n_edges] <- the edges by |score| descending, ties to the lower
 * canonical index (EAP-IG apply_topn, absolute=True). HS_ERR_NUMERIC for a
 * score that is not finite; HS_ERR_NOMEM. */
hs_status hs_edge_ranking(const hs_graph *g, const double *scores, size_t *order, hs_error *err);
/* Prunes dead ends in place: an edge u -> v stays only when it lies on a path
 * from input to logits over the circuit's edges (u reachable from input and
 * logits from v; the fixed point of EAP-IG's Graph.prune, which drops nodes
 * without an incoming or an outgoing edge until nothing changes). node_in
 * [n_nodes] (may be NULL): 1 for the nodes the pruned circuit touches, and
 * logits always (EAP-IG's LogitNode). n_kept (may be NULL): edges left.
 * HS_ERR_NOMEM. */
hs_status hs_circuit_prune(const hs_graph *g, unsigned char *in_circuit, unsigned char *node_in, size_t *n_kept,
                           hs_error *err);
/* in_circuit [n_edges] <- the top_n edges by |score| (top_n >= 0, ranked as
 * hs_edge_ranking) or, with top_n < 0, every edge with |score| >= threshold
 * (EAP-IG apply_topn / apply_threshold, absolute), then pruned; *n_kept the
 * edges left. HS_ERR_INPUT for top_n > n_edges or neither a top_n nor a
 * threshold >= 0; HS_ERR_NUMERIC for a score that is not finite. */
hs_status hs_circuit_select(const hs_graph *g, const double *scores, long top_n, double threshold,
                            unsigned char *in_circuit, size_t *n_kept, hs_error *err);
/* Caps a circuit for drawing: in_circuit [n_edges] keeps, of its edges, the
 * cap strongest by |score| (ranked as hs_edge_ranking), or the first cap by
 * index when scores is NULL; unchanged when it has at most cap edges.
 * *n_kept (may be NULL): its edges after. HS_ERR_NUMERIC for a score that is
 * not finite; HS_ERR_NOMEM. (The figures' HS_VIZ_MAX_EDGES cap: discover's
 * circuit figure and the Python package's figures.circuit.) */
hs_status hs_circuit_keep_strongest(const hs_graph *g, const double *scores, unsigned char *in_circuit, size_t cap,
                                    size_t *n_kept, hs_error *err);

/*
 * How a circuit of n edges is chosen from edge scores (hs_edge_order):
 *   HS_SELECT_TOPN    the n edges of largest |score| (EAP-IG
 *                     Graph.apply_topn, absolute=True; MIB's circuits)
 *   HS_SELECT_GREEDY  grown from logits (EAP-IG Graph.apply_greedy,
 *                     absolute=True, hannamw/eap-ig src/eap/graph.py; Hanna
 *                     et al. 2024, arXiv 2403.17806): the circuit starts as
 *                     the logits node alone, and n times takes the edge of
 *                     largest |score| among the edges not yet taken whose
 *                     receiving node is in the circuit; when that edge's
 *                     sender is new to the circuit, the sender joins and
 *                     the edges into it (a head: into its q, k and v)
 *                     become candidates. Every edge taken thus reaches
 *                     logits, so pruning (hs_circuit_prune, as EAP-IG's
 *                     prune_dead_nodes after it) only drops what input does
 *                     not reach; top-n may instead pick strong edges into
 *                     heads that nothing links to logits, which pruning
 *                     then empties.
 *   HS_SELECT_SIGNED  the n edges whose ablation lowers the metric most
 *                     (score ascending, the lower index first on ties):
 *                     MIB's evaluation default (run_evaluation.py without
 *                     --absolute: EAP-IG Graph.apply_topn, absolute=False,
 *                     on graph.json's scores, which are -score / batch),
 *                     so it takes from headscope's graph.json what MIB
 *                     takes from it. Edges that raise the metric come last.
 * Each way the circuit of n edges is the first n of one order of all the
 * edges (greedy's n steps are the first n of its E steps), then pruned.
 */
typedef enum { HS_SELECT_TOPN = 0, HS_SELECT_GREEDY, HS_SELECT_SIGNED, HS_SELECT_N } hs_select_kind;
/* "topn", "greedy", "signed". */
extern const char *const hs_select_names[HS_SELECT_N];
/* The selection named s, or -1. */
int hs_select_parse(const char *s);
/*
 * order [n_edges] <- every edge in the order sel takes them: topn
 * hs_edge_ranking's; greedy the order apply_greedy takes them in, ties in
 * |score| to the lower canonical index (EAP-IG's Python sort and
 * heapq.merge break ties by its own edge order instead). Greedy keeps its
 * candidates in a binary heap: O(E log E) for E edges (every node sends
 * into logits, so every edge becomes a candidate and all E are taken).
 * HS_ERR_NUMERIC naming a score that is not finite; HS_ERR_INPUT for an
 * unknown sel; HS_ERR_NOMEM.
 */
hs_status hs_edge_order(const hs_graph *g, const double *scores, hs_select_kind sel, size_t *order, hs_error *err);
/* in_circuit [n_edges] <- the first n edges of hs_edge_order(sel), pruned
 * (hs_circuit_prune); *n_kept (may be NULL) the edges left. sel topn is
 * hs_circuit_select with top_n = n. HS_ERR_INPUT for n > n_edges or an
 * unknown sel; HS_ERR_NUMERIC for a score that is not finite; HS_ERR_NOMEM. */
hs_status hs_circuit_choose(const hs_graph *g, const double *scores, hs_select_kind sel, size_t n,
                            unsigned char *in_circuit, size_t *n_kept, hs_error *err);

/* ------------------------------------------------------------------------ */
/* ROC against a true circuit (discovery/faithfulness.c)                    */

/* A node's score [n_nodes]: the largest |score| of the edges touching it (in
 * or out), so thresholding edges at |score| >= x keeps exactly the nodes
 * whose score is >= x before pruning (ACDC's node ROC counts a node present
 * when an edge touching it is, acdc/acdc_utils.py get_present_nodes). */
void hs_node_scores(const hs_graph *g, const double *scores, double *node_score);

/* One ROC curve: the items ranked by |score| descending, one point after
 * each group of equal |score| (a group holding true and false items moves
 * diagonally), from (0, 0) to (1, 1); TPR = TP / (TP + FN), FPR = FP / (FP +
 * TN) (ACDC notebooks/roc_plot_generator.py). auc: trapezoids (the
 * Mann-Whitney statistic, ties counting one half); auc_step: ACDC's
 * pessimistic step area sum (1 - fpr_i)(tpr_i - tpr_{i-1})
 * (acdc/acdc_graphics.py pessimistic_auc). With a circuit: its own point
 * (tpr, fpr) and circuit_auc_step = (1 - fpr) tpr, the pessimistic area of
 * (0,0), (fpr,tpr), (1,1) (one ACDC run as one point). Not usable (NANs, why)
 * when no item or every item is true. */
typedef struct {
    size_t n_pts;
    double *fpr_pts, *tpr_pts;   /* [n_pts] */
    size_t n_pos, n_neg;
    int usable;
    char why[80];
    double auc, auc_step;
    double tpr, fpr, circuit_auc_step;
} hs_roc_curve;
typedef struct {
    hs_roc_curve edges;          /* every edge of the graph */
    hs_roc_curve nodes;          /* the heads and MLPs (input and logits are in every circuit):
                                  * hs_node_scores, true when a true edge touches the node */
    int has_circuit;
} hs_roc;
/* The ROC curves of scores [n_edges] against truth [n_edges] (1 = in the true
 * circuit), with circuit [n_edges]'s points when it is not NULL. Free with
 * hs_roc_free. HS_ERR_NOMEM. */
hs_status hs_roc_run(const hs_graph *g, const double *scores, const unsigned char *truth, const unsigned char *circuit,
                     hs_roc *out, hs_error *err);
void hs_roc_free(hs_roc *r);
/* {"edges": {"fpr": [...], "tpr": [...], "positives", "negatives", "usable",
 * "auc", "auc_pessimistic", "circuit": {"tpr", "fpr", "auc_pessimistic"}},
 * "nodes": {...}, "ranking", "nodes_are"}; NULL on OOM. */
cJSON *hs_roc_json(const hs_roc *r);
/* The true circuit from path into truth [n_edges]: a graph.json (its
 * in_graph edges, read as hs_graph_json_parse reads it), a JSON array of edge
 * names, or text with one edge name a line ('#' lines and blank lines
 * skipped). Errors (HS_ERR_INPUT, one line): "FILE:LINE: 'x->y' is not an
 * edge of this model's graph (...)", a JSON array item that is not a string,
 * a file naming no edge, hs_graph_json_parse's; HS_ERR_IO. */
hs_status hs_truth_load(const hs_graph *g, const hs_config *cfg, const char *path, unsigned char *truth, hs_error *err);

/* ------------------------------------------------------------------------ */
/* graph.json and .dot (discovery/graph_io.c)                              */

/* x as Python's repr(float) writes it (the shortest digits that read back
 * as x; fixed notation for exponents -4..15 with at least one digit after
 * the point, else d.ddde+XX): the numbers of json.dump. */
void hs_py_float_repr(double x, char out[32]);
/*
 * graph.json's scores in MIB's sign and scale (MIB's circuit track
 * run_attribution.py: EAP-IG's attribute with the metric as a loss,
 * loss=True, i.e. -metric, its batch mean, batches of 20): an edge whose
 * ablation lowers the metric scores positive there, and EAP-IG's
 * back-propagated batch mean divides once more by the batch size. So
 * hs_score_to_mib(s) = -s / HS_MIB_BATCH for headscope's s = m(edge ablated)
 * - m(clean) (a mean over prompts): the score MIB's own attribution writes
 * for the same model, data and metric when the set's size is a multiple of
 * 20 (a last, smaller batch of b items weighs its items 20 / b times more
 * there). MIB's evaluation selects by signed score by default
 * (run_evaluation.py without --absolute; EAP-IG's apply_topn(absolute=False)):
 * it then takes the edges whose ablation lowers the metric most, headscope's
 * most negative; headscope's own top n (|score|) is the same circuit when
 * those are its top n by |score| (the usual case: a circuit's edges carry the
 * metric), and MIB's --absolute always gives it. hs_score_from_mib is the
 * inverse, applied to every graph.json read (headscope's or MIB's).
 * docs/CIRCUITS.md "graph.json".
 */
#define HS_MIB_BATCH 20
double hs_score_to_mib(double s);
double hs_score_from_mib(double s);
/*
 * graph.json as EAP-IG's Graph.to_json writes it (hannamw/eap-ig
 * src/eap/graph.py; MIB's circuit files), appended to out: json.dump's bytes
 * (one line, ", " and ": ") of
 *   {"cfg": {"n_layers", "n_heads", "parallel_attn_mlp": false, "d_model"},
 *    "nodes": {name: {"in_graph": b}, ...},
 *    "edges": {"u->v": {"score": s, "in_graph": b}, ...}}
 * nodes in node order; edges in Graph.from_model's order (per layer: every
 * earlier node into each head's q, k, v, then every earlier node and the
 * layer's heads into its MLP; last every node into logits). An edge's
 * score is hs_score_to_mib(scores[e]) rounded to float32 (EAP-IG keeps
 * scores in a float32 tensor; written as Python writes that float), in_graph
 * in_circuit[e]; a
 * node is in the graph when the pruned circuit touches it (input: has an
 * edge out; logits always). No node scores: EAP-IG's to_json cannot write
 * one for logits (its node-score tensor ends before it: IndexError), so an
 * edge-level graph has none. A model without MLPs has no m nodes (EAP-IG's
 * graph always has them; Graph.from_json leaves what a file does not name
 * at 0 and false). Read back by Graph.from_json, re-written by its to_json
 * byte for byte (checked here with EAP-IG's code). HS_ERR_NUMERIC for a
 * score that is not finite; HS_ERR_NOMEM.
 */
hs_status hs_graph_json_text(const hs_graph *g, const hs_config *cfg, const double *scores,
                             const unsigned char *in_circuit, hs_buf *out, hs_error *err);
/*
 * Reads graph.json text (len bytes; `name` stands for the file in messages)
 * as Graph.from_json does: scores [n_edges] <- hs_score_from_mib(each named
 * edge's "score") (headscope's sign and scale), in_circuit [n_edges] <- its "in_graph" (edges the file does not name: 0,
 * not in). Node entries are checked, not used (Graph.prune recomputes nodes
 * from edges). Errors (HS_ERR_INPUT, one line naming the file and the first
 * offender): not a JSON object; no "cfg", "nodes" or "edges"; a cfg of
 * another model shape ("cfg n_layers is 3, this model's 2 (...)"; n_layers,
 * n_heads, and d_model when given) or whose parallel_attn_mlp is not the
 * model's (the writer gives cfg's, and a parallel model's graph has no edge
 * a{l}.h -> m{l}, as EAP-IG's Graph.from_model); an
 * unknown node or edge name (a model without MLPs accepts EAP-IG's m nodes
 * and edges when not in the graph); a node that is not {"in_graph": bool,
 * "score"?: number} (neuron-level entries are refused); an edge that is not
 * {"score": finite number, "in_graph": bool}.
 */
hs_status hs_graph_json_parse(const hs_graph *g, const hs_config *cfg, const char *text, size_t len, const char *name,
                              double *scores, unsigned char *in_circuit, hs_error *err);
/* The same from a file (HS_ERR_IO when it cannot be read). */
hs_status hs_graph_json_load(const hs_graph *g, const hs_config *cfg, const char *path, double *scores,
                             unsigned char *in_circuit, hs_error *err);
/* The circuit (pruned) as a Graphviz digraph, appended to out: bottom to top
 * (rankdir=BT), one rank per layer (input, each layer's heads and MLP,
 * logits), edge penwidth from |score| as EAP-IG's to_image (0.6 up to 5,
 * scaled between the smallest and largest |score| of the graph), colour by
 * sign (blue >= 0, red < 0), a head's input labelled q, k or v. HS_ERR_NOMEM. */
hs_status hs_circuit_dot(const hs_graph *g, const double *scores, const unsigned char *in_circuit, hs_buf *out,
                         hs_error *err);

#endif /* HS_DISCOVERY_GRAPH_H */
