/*
 * discovery/discovery.h -- circuit discovery: finding a circuit instead of
 * checking one written by hand. Over the head-level graph of
 * discovery/graph.h (MIB's names: input, a{l}.h{h} with separate <q>, <k>,
 * <v> receivers, m{l}, logits; circuits chosen from scores, ROC, graph.json
 * and .dot), the methods that run the model: edge scores by exact edge
 * patching, edge attribution patching (EAP; Syed et al. 2023) and EAP with
 * integrated gradients (EAP-IG; Hanna et al. 2024), ACDC's greedy pruning
 * (Conmy et al. 2023); running a circuit (every receiver reads its
 * in-circuit senders from the run and the rest from an ablated run) and its
 * normalised faithfulness over MIB's circuit sizes (CPR, CMD); the circuit
 * and its faithfulness curve as figures; the `discover` and `faithfulness`
 * commands (hs_discover_run, hs_faithfulness_run). docs/CIRCUITS.md,
 * "Circuit discovery", has every definition with its source and where
 * headscope differs. The module's one exception to one header by size:
 * graph.h (the graph and its I/O) and this (the methods), which includes it.
 *
 * May call: common/, model/ (hs_backward_acts), probe/ (hooks, the
 * experiment engine), tokenize/, output/ and viz/ (folders, figures),
 * experiments/ (prompt sets, ablation methods, the metrics and their
 * gradients at the read positions), cJSON. Never tasks/, circuits/ or cli/.
 * The library never prints and never exits: every failure is an hs_status
 * plus a one-line message in a caller-owned hs_error; notes go to the
 * caller's hs_notes.
 *
 * Dims legend: n prompts of t tokens, L layers, H heads a layer, D d_model,
 * V vocabulary; arrays over nodes, receivers or edges are in hs_graph's
 * canonical order. Ownership: graphs, reports and evaluators are freed with
 * their *_free / *_destroy (NULL and zeroed allowed); JSON is freed with
 * cJSON_Delete, hs_buf text with hs_buf_free.
 */
#ifndef HS_DISCOVERY_H
#define HS_DISCOVERY_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/common.h"
#include "discovery/graph.h"
#include "experiments/experiments.h"
#include "model/model.h"
#include "output/output.h"
#include "probe/probe.h"
#include "viz/viz.h"

/* ------------------------------------------------------------------------ */
/* Running a circuit (discovery/circuit_run.c)                             */
/*
 * A circuit C is a set of edges of the graph above: a mask in_circuit
 * [n_edges] in canonical edge order, 1 = in C. Running it on a prompt set
 * (EAP-IG evaluate_graph, hannamw/eap-ig src/eap/evaluate.py): the clean
 * prompts run on the engine, and every receiver v reads, beside that run's
 * residual stream, its missing senders' ablated outputs in place of their own:
 *     input_v += sum over senders u with u -> v not in C of (a_u,abl - a_u,run)
 * at v's hook point (blocks.l.hook_q_input / hook_k_input / hook_v_input
 * [:, :, h, :] for a head, blocks.l.hook_mlp_in for an MLP,
 * blocks.{L-1}.hook_resid_post for logits), a_u being what u sends (the graph
 * section: blocks.0.hook_resid_pre, hook_result [:, :, h, :], hook_mlp_out)
 * in this run and a_u,abl its ablated value, the ablation (hs_ablate_method):
 *   HS_ABLATE_RESAMPLE  u's output in the prompt's corrupted partner's run
 *                       (the set needs "corrupted"; EAP-IG's 'patching')
 *   HS_ABLATE_MEAN      u's position-wise mean over the set's clean prompts
 *                       (EAP-IG's 'mean-positional')
 *   HS_ABLATE_ZERO      0
 * The sum runs over senders in node order, in float, and an element of it
 * that is exactly 0 leaves the input as it was; a receiver missing no sender
 * is not touched, so the full circuit M is the clean run bit for bit (no hook
 * at all) and the empty circuit is the ablated run up to rounding. The input
 * node is the whole blocks.0.hook_resid_pre (token and position embeddings:
 * EAP-IG's input node is hook_embed alone, its position embeddings never
 * ablated). Uniform attention has no q and k: those receivers are never
 * touched. A run starts at the earliest layer holding a receiver that misses
 * a sender (hs_engine_sweep_from, bit-identical to a whole run); senders
 * before it take their values from the clean run's cache. The metric
 * (hs_metric_value at each prompt's position; kl against the clean run's
 * logits there) is averaged over the set, summed in prompt order in double.
 * When every prompt is read at one position, the runs compute the logits
 * there alone (hs_engine.read_pos; the last block there too when no hook
 * reads it): the same values. Every value is bit-identical for any thread
 * count. Memory: the clean run's
 * and the ablated run's sender outputs for the whole set ((L (H + 1) + 1) n t D
 * floats each, plus every layer's resid_pre) and, per worker, one chunk's
 * difference per sender.
 */
typedef struct hs_circeval hs_circeval;

/* Prepares circuit runs of the graph g (hs_graph_build of m's config) on
 * the prompts p (g and p are borrowed and must outlive ce) with metric and
 * ablation: the clean run's and the ablated run's sender outputs, then m(M)
 * (the full circuit, which also records the clean logits kl reads) and
 * m(empty) (the empty circuit). pool may be NULL. Errors (HS_ERR_INPUT, one
 * line): an empty set, a prompt without "answer", logit-diff or prob-diff
 * without "wrong", resample without "corrupted", a graph of another model,
 * a model with grouped-query attention (pass hs_model_ungrouped's view, as
 * hs_discover_run and hs_faithfulness_run do: the graph's <k> and <v>
 * receivers are per query head);
 * HS_ERR_NUMERIC when a prompt's metric is not finite in the clean or the
 * ablated run; the engine's errors. Free with hs_circeval_destroy. */
hs_status hs_circeval_create(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_graph *g,
                             hs_metric_kind metric, hs_ablate_method ablation, hs_circeval **out, hs_error *err);
/* As hs_circeval_create, with the clean run's and (resample ablation: then
 * and only then) the corrupted run's caches given instead of run: a caller
 * that cached the two runs already (circuit's phase A) saves two forward
 * passes of the set. clean: hs_engine_cache of p->clean (p->n rows of p->t
 * tokens, whole chunks) holding at least every layer's
 * blocks.l.hook_resid_pre, blocks.l.attn.hook_result and (a model with MLPs)
 * blocks.l.hook_mlp_out; corr: the same of p->corr with at least
 * blocks.0.hook_resid_pre and the same senders; other entries are ignored.
 * Borrowed: both must outlive ce. Caches of the engine's runs of these
 * tokens give every metric hs_circeval_create gives, bit for bit (the
 * forward computes the same values whatever else it caches). Errors as
 * hs_circeval_create's, and HS_ERR_INPUT for a cache of another shape or
 * without a sender's output. */
hs_status hs_circeval_create_cached(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_graph *g,
                                    hs_metric_kind metric, hs_ablate_method ablation, const hs_cache *clean,
                                    const hs_cache *corr, hs_circeval **out, hs_error *err);
void hs_circeval_destroy(hs_circeval *ce);
/* m(M), the full circuit's metric (the clean run; 0 exactly for kl), and
 * m(empty), the empty circuit's. */
double hs_circeval_full(const hs_circeval *ce);
double hs_circeval_empty(const hs_circeval *ce);
/* Forward passes of HS_ENGINE_CHUNK prompts the circuit runs made since
 * hs_circeval_create returned (one per chunk of the set and circuit). */
long hs_circeval_forwards(const hs_circeval *ce);
/* The graph and the metric ce was made with. */
const hs_graph *hs_circeval_graph(const hs_circeval *ce);
hs_metric_kind hs_circeval_metric_kind(const hs_circeval *ce);
/* The metric of each of n_circuits circuits in_circuit[k] ([n_edges] each)
 * into metric[k], the chunks of every circuit run as jobs on the pool. A
 * circuit whose metric is already known is not run again: the empty one
 * takes m(empty), the whole one m(M), and one among the last 32 run its
 * remembered metric (the same runs of the same code: the same bits).
 * HS_ERR_INPUT for no circuit; the engine's errors. */
hs_status hs_circeval_metrics(hs_circeval *ce, int n_circuits, const unsigned char *const *in_circuit,
                              double *metric, hs_error *err);
/*
 * Exact edge patching: scores[e] = m(every edge but e) - m(M) for every
 * edge e [n_edges]: the metric change when edge e alone is ablated (its
 * receiver reads that one sender's ablated output, every other input as in
 * the clean run): the reference edge attribution is judged against, with
 * the sign of hs_eap_scores (metric(edge ablated) - metric(clean)). Each run
 * starts at the receiver's layer and takes the sender's clean and ablated
 * outputs from the caches; n_edges runs over the set, on the pool.
 */
hs_status hs_edge_patch_scores(hs_circeval *ce, double *scores, hs_error *err);
/* Normalised faithfulness (EAP-IG results/pareto/plot_pareto_normalized.py;
 * MIB): (m_c - m_empty) / (m_full - m_empty); NAN when m_full == m_empty
 * (undefined: the clean and ablated metrics coincide). */
double hs_faithfulness(double m_c, double m_full, double m_empty);

/* ------------------------------------------------------------------------ */
/* ACDC (discovery/acdc.c)                                                  */

/*
 * ACDC (Conmy et al. 2023, sec. 3 and Algorithm 1;
 * ArthurConmy/Automatic-Circuit-Discovery acdc/TLACDCExperiment.py `step`):
 * starting from the full circuit, the edges in hs_acdc_order's order (ACDC's
 * by default) are tried removed (one circuit run, hs_circeval_metrics) and
 * removed for good when ACDC's loss (kl itself; -logit-diff, -prob-diff)
 * grew less than tau, signed, as ACDC does by default for every metric:
 *     kl:                    m_new - m_cur < tau
 *     logit-diff, prob-diff: m_cur - m_new < tau   (a removal that raises the
 *                                                   metric is always taken)
 * or, with abs_threshold (ACDC's --abs-value-threshold), |m_new - m_cur| <
 * tau; m_cur being the metric of the circuit as it stands (the last accepted
 * run).
 * A receiver whose node has no kept outgoing edge left is skipped and its
 * edges removed without a run (nothing reads the node; ACDC skips nodes that
 * are not connected). in_circuit [n_edges] <- the edges kept (not pruned);
 * scores [n_edges] <- each tried edge's m_new - m_cur (the metric's change
 * when it was tried, the sign convention of hs_edge_patch_scores), 0 for
 * edges skipped. HS_ERR_INPUT for tau < 0 or not finite; the runs' errors.
 */
typedef struct {
    long trials;     /* circuit runs (one per edge tried) */
    long skipped;    /* edges removed without a run (dead receivers) */
    long forwards;   /* forward passes those runs made */
    size_t kept;     /* edges kept */
    double metric;   /* m of the kept circuit (the last accepted run) */
} hs_acdc_stats;
typedef struct {
    double tau;           /* >= 0 */
    int abs_threshold;    /* 1: |change| < tau (ACDC's --abs-value-threshold); 0: ACDC's signed default */
    int headscope_order;  /* 1: headscope's order before issue 34 (hs_acdc_order); 0: ACDC's */
} hs_acdc_opts;
hs_status hs_acdc_run(hs_circeval *ce, const hs_acdc_opts *o, unsigned char *in_circuit, double *scores,
                      hs_acdc_stats *stats, hs_error *err);
/* order [n_edges] <- the edges in the order ACDC tries them. ACDC's
 * (headscope_order 0; TLACDCExperiment over reverse_topologically_sort_corr):
 * logits, then per layer from the last: its MLP, the v inputs of heads
 * H-1..0, their k inputs, their q inputs; each receiver's senders newest
 * first, the input last. headscope_order 1: the receivers in canonical order
 * backwards (logits, the last MLP, head H-1's v, k, q, head H-2's ...), each
 * one's senders oldest first. Every node's receivers come after all the
 * receivers reading it in both. HS_OK always (err unused). */
hs_status hs_acdc_order(const hs_graph *g, int headscope_order, size_t *order, hs_error *err);

/* ------------------------------------------------------------------------ */
/* Faithfulness and ground truth (discovery/faithfulness.c)                */

/* MIB's circuit sizes (MIB_circuit_track/evaluation.py): 0.1, 0.2, 0.5, 1, 2,
 * 5, 10, 20, 50, 100 % of the edges. */
#define HS_FAITH_N 10
/* The gap |m(M) - m(empty)| is small, and normalised faithfulness noise
 * divided by a small number, when the curve's m(C) (the empty circuit and M
 * included) spread over more than HS_FAITH_GAP_SPREAD times it: the rule of
 * patch's usable flag (HS_PATCH_GAP_SPREAD, experiments.h), the curve's
 * circuits standing for patch's cells. */
#define HS_FAITH_GAP_SPREAD 2.0
#define HS_FAITH_WHY 360 /* bytes of a why_not_usable */
extern const double hs_faith_fractions[HS_FAITH_N];
/* Edges asked for at fraction x of n_edges: MIB's int(x * n) (truncated). */
size_t hs_faith_top_n(double fraction, size_t n_edges);

typedef struct {
    size_t top_n;          /* edges asked for (hs_faith_top_n) */
    size_t edges;          /* edges in the circuit after pruning */
    double fraction;       /* the size asked for, 0..1 (0: the empty circuit) */
    double metric;         /* m(C) */
    double faithfulness;   /* hs_faithfulness; NAN when not usable */
} hs_faith_point;
typedef struct {
    size_t n_edges;
    double m_full, m_empty;
    int usable;            /* 0 when m(M) == m(empty) (faithfulness undefined) or the gap
                              is small against the curve's spread (hs_faith_curve_run) */
    char why[HS_FAITH_WHY];   /* why not usable ("" when usable) */
    hs_faith_point pt[HS_FAITH_N + 1]; /* [0] the empty circuit, [1..] MIB's sizes */
    double cpr, cmd;       /* NAN when not usable */
    hs_select_kind selection; /* how each size's circuit was chosen from the scores */
} hs_faith_curve;
/* usable <- m_full != m_empty, and when not, why (cap bytes): one line
 * saying that faithfulness is 0 / 0. */
void hs_faith_usable(double m_full, double m_empty, hs_metric_kind metric, int *usable, char *why, size_t cap);
/*
 * The faithfulness curve of a score ranking (MIB evaluate_area_under_curve):
 * not usable (every faithfulness NAN, why said) when m(M) == m(empty) or when
 * the gap is small against the spread of the curve's m(C)
 * (HS_FAITH_GAP_SPREAD).
 * at each of MIB's sizes the first hs_faith_top_n edges of
 * hs_edge_order(sel) (topn: the top edges by |score|, MIB's; greedy: grown
 * from logits, EAP-IG's apply_greedy), pruned, run (hs_circeval_metrics; the ten circuits'
 * chunks as jobs on the pool); f = hs_faithfulness with m(M) and m(empty) of
 * ce (the 100 % circuit is M: f = 1 exactly; the empty circuit f = 0
 * exactly; both asserted). CPR = sum over MIB's sizes of trapezoids of f,
 * CMD of |1 - f|, over the fraction asked for, from 0.001 to 1 (MIB; the
 * empty circuit normalises f and is outside the area). Errors: a score that
 * is not finite (HS_ERR_NUMERIC), the runs'.
 */
hs_status hs_faith_curve_run(hs_circeval *ce, const double *scores, hs_select_kind sel, hs_faith_curve *out,
                             hs_error *err);
/* As JSON: {"selection": "topn" | "greedy" (hs_select_names), "points":
 * [{"edges", "fraction", "faithfulness" (null when not usable), "top_n",
 * "metric"}] (the empty circuit first), "cpr", "cmd" (null
 * when not usable), "usable", "why_not_usable" (when not), "metric_full",
 * "metric_empty", "n_edges", "area"}; NULL on OOM (cJSON_Delete). */
cJSON *hs_faith_curve_json(const hs_faith_curve *c);

/* ------------------------------------------------------------------------ */
/* Circuit discovery (discovery/discover.c, discover_report.c;             */
/* `headscope discover` and `headscope faithfulness`)                        */

/* How the edges are scored: exact edge patching (hs_edge_patch_scores),
 * ACDC (hs_acdc_run), EAP or EAP-IG (hs_eap_run). */
typedef enum { HS_DISCOVER_EXACT = 0, HS_DISCOVER_ACDC, HS_DISCOVER_EAP, HS_DISCOVER_EAP_IG, HS_DISCOVER_N } hs_discover_method;
/* "exact", "acdc", "eap", "eap-ig". */
extern const char *const hs_discover_method_names[HS_DISCOVER_N];
/* The method named s, or -1. */
int hs_discover_method_parse(const char *s);
/* ACDC's tau when none is given. */
#define HS_ACDC_TAU 0.01
/* EAP-IG's interpolation steps when none is given (EAP-IG's examples, MIB). */
#define HS_EAP_IG_STEPS 5

typedef struct {
    hs_discover_method method;  /* default exact */
    hs_metric_kind metric;      /* default logit-diff */
    hs_ablate_method ablation;  /* default resample (the corrupted partners) */
    long top_n;                 /* >= 0: the circuit is the top_n edges by |score|; -1 (default): unset */
    double threshold;           /* >= 0: the edges with |score| >= threshold; NAN (default): unset.
                                 * Neither set: the top hs_faith_top_n(0.05, n_edges) (MIB's 5 %), >= 1 */
    double tau;                 /* ACDC's threshold; NAN (default): HS_ACDC_TAU */
    int acdc_abs;               /* ACDC removes when |change| < tau (else its signed default; hs_acdc_opts) */
    int acdc_headscope_order;   /* ACDC visits edges in headscope's earlier order (hs_acdc_order) */
    int ig_steps;               /* EAP-IG's steps, 1..1000; 0 (default): HS_EAP_IG_STEPS */
    int ig_right;               /* EAP-IG's alphas k/m: 0 (default) k = 0..m-1 (hannamw/EAP-IG's code), 1 k = 1..m
                                 * (the paper) */
    const char *truth;          /* the true circuit (hs_truth_load), or NULL */
    const char *out;            /* the output folder, or NULL: nothing written */
    const char *model_path, *data_path; /* inputs of the folder (never replaced), index.json's "model" */
    hs_figopts *fo;             /* the folder's formats and figure options (its font is opened
                                 * here); NULL: hs_figopts_default at 300 dpi */
    const hs_tokenizer *tok;    /* the attention file's token labels (html), or NULL: "#id" */
    hs_select_kind select;      /* how a number of edges is chosen from the scores (the top_n circuit,
                                 * MIB's 5 %, the curve): topn (default) or greedy (hs_edge_order);
                                 * greedy takes no threshold */
} hs_discover_opts;
hs_discover_opts hs_discover_opts_default(void);

typedef struct {
    hs_discover_method method;
    hs_metric_kind metric;
    hs_ablate_method ablation;
    int n_prompts;
    hs_graph g;                 /* the model's graph */
    double *scores;             /* [n_edges] the method's edge scores, metric(edge ablated) - metric(clean) */
    unsigned char *in_circuit;  /* [n_edges] the circuit, pruned */
    size_t n_kept;              /* its edges */
    char chosen_by[64];         /* "the top 5 edges by |score|", "the 5 edges lowering the metric most", "5 edges grown greedily from logits by
                                 * |score|", "|score| >= 0.1", "ACDC with tau 0.01" */
    double tau;                 /* ACDC's tau (the default when none was given) */
    int acdc_abs, acdc_headscope_order; /* ACDC's rule and order (method acdc; else 0) */
    int ig_steps;               /* EAP-IG's steps (method eap-ig; else 0) */
    int ig_right;               /* EAP-IG's alphas k = 1..m (else k = 0..m-1) */
    hs_acdc_stats acdc;         /* ACDC's runs (method acdc) */
    long forwards;              /* forward passes of HS_ENGINE_CHUNK prompts the scoring made */
    long backwards;             /* backward passes of as many prompts (eap, eap-ig; else 0) */
    double m_full, m_empty;     /* m(M), m(empty) */
    double m_circuit;           /* m(C) of the circuit */
    double faithfulness;        /* its normalised faithfulness (NAN when not usable) */
    int usable;                 /* m(M) != m(empty), and the gap not small against the curve's
                                   spread (curve.usable; hs_faith_curve_run) */
    char why[HS_FAITH_WHY];     /* why not usable */
    hs_faith_curve curve;       /* the curve of the scores' ranking */
    hs_select_kind select;      /* the selection the circuit (unless ACDC's or a threshold's) and curve use */
    int has_roc;                /* a truth was given: */
    hs_roc roc;                 /* the ROC curves against it */
    int n_files;                /* files the folder's index.json lists (with out) */
} hs_discover_report;

/*
 * Discovers a circuit of m on the prompt set p: the graph, the true circuit
 * (o->truth, read before anything runs), hs_circeval_create, the method's
 * edge scores (exact: hs_edge_patch_scores; acdc: hs_acdc_run; eap and
 * eap-ig: hs_eap_run with o->ablation, 0 or o->ig_steps steps and o->ig_right, its forward and
 * backward passes counted in forwards and backwards), the circuit (ACDC: its
 * kept edges; otherwise top-n, threshold or MIB's 5 % of the scores),
 * pruned, run for its faithfulness, the faithfulness curve of the scores
 * (hs_faith_curve_run; o->select chooses the top-n and MIB's 5 % circuits
 * and the curve's, hs_circuit_choose) and, with a truth, hs_roc_run with the circuit's
 * point. A model with grouped-query attention is scored and run through
 * hs_model_ungrouped's view (every query head its own <k> and <v>
 * receiver, TransformerLens' ungroup_grouped_query_attention as MIB runs
 * it); hs_faithfulness_run does the same. With o->out, then, the folder (hs_outdir, command "discover", the
 * formats of o->fo): graph.json (hs_graph_json_write: on the page with
 * html), faithfulness.json (hs_discover_curve_json), circuit.dot
 * (hs_circuit_dot), roc.json (hs_roc_json) with a truth, the circuit as a
 * figure (stem "circuit", hs_graph_figure_write) and its faithfulness curve
 * (stem "faithfulness_curve", hs_faith_figure_write; left out with a note
 * when faithfulness is undefined), with html attention.json, the attention
 * of p's first prompt (hs_prompt_attention_json), which the page's circuit
 * view shows on a click on a head, and index.json (with "method", "metric",
 * "ablation", "model"); a failed run leaves the folder as it was. Notes:
 * faithfulness undefined (with why), the folder's. Errors (HS_ERR_INPUT, one
 * line): --top or --threshold with acdc, --tau without it, --ig-steps
 * without eap-ig or outside 1..1000, --select greedy with a threshold, an
 * unknown selection, kl with eap (the KL divergence's
 * gradient at the clean run is exactly 0, so every EAP score would be 0),
 * both --top and --threshold, a threshold or tau < 0 or not finite, and
 * those of hs_truth_load, hs_circeval_create, the method, the figures and
 * the folder. Fills *out (zeroed first; free with hs_discover_report_free,
 * also after a failure).
 */
hs_status hs_discover_run(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_discover_opts *o,
                          const hs_notes *notes, hs_discover_report *out, hs_error *err);
void hs_discover_report_free(hs_discover_report *r);
/* faithfulness.json of a discovery: hs_faith_curve_json's object plus
 * "circuit": {"edges", "chosen_by", "metric", "faithfulness"}, "method",
 * "metric_name", "ablation"; NULL on OOM (cJSON_Delete). */
cJSON *hs_discover_curve_json(const hs_discover_report *r);
/* The report as JSON: {"method", "metric", "ablation", "prompts", "n_edges",
 * "metric_full", "metric_empty", "usable", "why_not_usable" (when not),
 * "circuit": {...}, "acdc": {"tau", "trials", "skipped", "forwards", "kept",
 * "metric"} (acdc), "ig_steps" (eap-ig), "forwards", "backwards" (eap,
 * eap-ig), "faithfulness_curve": {...}, "roc": {...}
 * (with a truth), "strongest_edges": [{"edge", "score", "in_circuit"}] (the
 * ten largest |score|)}; NULL on OOM. */
cJSON *hs_discover_json(const hs_discover_report *r);
/* The text summary appended to b. */
void hs_discover_summary(const hs_discover_report *r, hs_buf *b);

/* `headscope faithfulness`: a circuit found elsewhere (a graph.json) run on
 * a prompt set. */
typedef struct {
    const char *graph;          /* the graph.json (hs_graph_json_load) */
    hs_metric_kind metric;
    hs_ablate_method ablation;
    const char *out;            /* the output folder, or NULL */
    const char *model_path, *data_path;
    hs_select_kind select;      /* how the curve chooses edges from the file's scores (default topn) */
    hs_figopts *fo;             /* the figures' options (NULL: hs_figopts_default at 300 dpi) */
} hs_faith_opts;
typedef struct {
    hs_metric_kind metric;
    hs_ablate_method ablation;
    int n_prompts;
    hs_graph g;
    double *scores;             /* [n_edges] the file's scores (0 for edges it does not name) */
    unsigned char *in_circuit;  /* [n_edges] its in_graph edges, pruned */
    size_t n_in_file, n_kept;   /* in_graph edges in the file; left after pruning */
    double m_full, m_empty, m_circuit, faithfulness;
    int usable;                 /* as hs_discover_report's */
    char why[HS_FAITH_WHY];
    hs_faith_curve curve;       /* the curve of the file's scores */
    int n_files;
} hs_faith_report;
/* Reads o->graph for m, prunes its circuit (a note says how many in_graph
 * edges pruning left out), runs it (hs_circeval_create with o's metric and
 * ablation) for its faithfulness, and the faithfulness curve of the file's
 * scores (o->select's selection; HS_ERR_INPUT for an unknown one). With o->out, the folder (command "faithfulness"):
 * faithfulness.json (hs_faith_report_json), the figures "circuit" (the pruned
 * circuit, hs_graph_figure_write) and "faithfulness_curve" (when defined) in
 * o->fo's formats, and index.json. Errors: those of
 * hs_graph_json_load (unknown names, another model shape: one line),
 * hs_circeval_create, the folder. Notes: pruning, faithfulness undefined,
 * the folder's. Free out with hs_faith_report_free (also after a failure). */
hs_status hs_faithfulness_run(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_faith_opts *o,
                              const hs_notes *notes, hs_faith_report *out, hs_error *err);
void hs_faith_report_free(hs_faith_report *r);
/* hs_faith_curve_json's object plus "circuit": {"edges", "edges_in_file",
 * "metric", "faithfulness"}, "metric_name", "ablation", "prompts"; NULL on OOM. */
cJSON *hs_faith_report_json(const hs_faith_report *r);
/* The text summary appended to b. */
void hs_faith_summary(const hs_faith_report *r, hs_buf *b);

/* Circuit figures (discovery/graph_fig.c): the found circuit and its       */
/* faithfulness curve through viz/                                           */

/* The circuit of g as viz's graph figure and its JSON (viz.h, "The circuit
 * graph"): every node of g under its MIB name ("input", "a1.h0", "m1",
 * "logits"), input on the bottom row, layer l's heads side by side on the
 * row above the layer before, its MLP in the last column on the row above
 * its heads (it reads them), logits on top; the edges with in_graph[e]
 * nonzero (in_graph [n_edges], NULL = every edge: over HS_VIZ_MAX_EDGES is
 * refused), each into its receiver's q, k or v (a head) or its one input,
 * with scores[e] (scores [n_edges] in g's edge order, NULL = 1 each) for
 * its width and colour. title may be NULL; o: the figure's options (NULL =
 * defaults). *fig (when fig is not NULL) and *json (when json is not NULL)
 * are new (hs_viz_figure_destroy, cJSON_Delete); on failure both are NULL.
 * The figure keeps to the height budget as the bar charts do (o's
 * max_height_in, HS_VIZ_MAX_HEIGHT_IN by default): when every edge makes it
 * taller (GPT-2's 1,024 strongest on 12 layers of 12 heads), it draws the
 * largest k strongest edges by |score| that fit and only the nodes they
 * touch (rows and a layer's heads closed up, names unchanged), its note under
 * the title saying "drawn: its k strongest edges by |score| and their nodes"
 * (the title gives the circuit's size);
 * *json keeps every in_graph edge and every node. *drawn (when drawn is not
 * NULL): the edges the figure draws (0 without fig or after a failure).
 * Errors: hs_viz_graph_figure's (a score not finite: HS_ERR_NUMERIC; the
 * width promise: HS_ERR_INPUT), HS_ERR_NOMEM. */
hs_status hs_graph_figure(const hs_graph *g, const double *scores, const unsigned char *in_graph,
                          const char *title, const hs_viz_options *o, hs_viz_figure **fig,
                          cJSON **json, size_t *drawn, hs_error *err);

/* The faithfulness curve: faithfulness (y) over circuit size (x, percent of
 * the graph's edges on a log10 axis: MIB's 0.1, 0.2, 0.5, ... 100), one line
 * per method with a legend (methods: n_methods names, e.g. "EAP", "EAP-IG",
 * "ACDC"); the y axis covers [min(0, f), max(1, f)] and a dashed line marks
 * f = 1 ("full model"). percent [n] > 0, increasing (the empty circuit,
 * f = 0 by definition, has no place on a log axis); f [n_methods, n], NaN =
 * not measured there. viz's line plot (hs_viz_lines_figure with o's width,
 * dpi and fonts) and its JSON (hs_viz_lines_json, with "x_scale": "log" and
 * "mark_y": 1, which the HTML page draws). *fig and *json as in
 * hs_graph_figure. Errors: hs_viz_lines_figure's, HS_ERR_NOMEM. */
hs_status hs_faithfulness_figure(const double *percent, size_t n, const double *f,
                                 const char *const *methods, size_t n_methods, const char *title,
                                 const hs_viz_options *o, hs_viz_figure **fig, cJSON **json,
                                 hs_error *err);

/* ------------------------------------------------------------------------ */
/* Edge attribution (discovery/eap.c): EAP, EAP-IG                         */
/*
 * The gradients are the model's own backward (hs_backward_acts, model.h) at
 * the receivers' inputs, through experiments' hs_attr_backward; every run
 * goes chunk by chunk on the experiment engine and its sums over prompts
 * are made in double in chunk order, so every number is bit-identical for
 * any thread count.
 *
 * EAP (Syed et al. 2023, "Attribution patching outperforms automated circuit
 * discovery"; Hanna et al. 2024, "Have faith in faithfulness", sec.
 * 2): for an edge u -> v of hs_graph (receiver v reads sender u's output),
 *   score(u -> v) = mean over the prompts of the sum over positions of
 *                   (a_u,corr - a_u,clean) . dm/d(input of v) at the clean run
 * with a_u what u sends and "input of v" what v reads (hs_graph's comment):
 * the first-order estimate of m(the clean run with edge u -> v corrupted) -
 * m(clean), so an edge whose corruption lowers the metric scores negative.
 * m is hs_metric_kind's metric of each prompt's logits at its position (kl:
 * against the clean run's distribution, whose gradient at the clean run is
 * exactly 0: with kl use EAP-IG).
 * EAP-IG on the inputs (Hanna et al. 2024, sec. 3; hannamw/EAP-IG,
 * src/eap/attribute.py get_scores_eap_ig, read at commit 795f560): the
 * gradient above is replaced by its mean over k = 0 .. m-1 of the gradient at
 * a run whose input embeddings (hook_embed, EAP-IG's input node's out_hook)
 * are e_corr + (k/m) (e_clean - e_corr): the corrupted end included, the
 * clean end left out, as that code's `for step in range(0, steps)` (its
 * node-level twin, attribute_node.py, runs k = 1 .. m); the kl reference stays
 * the clean run's logits. So m = 1 is the gradient at the corrupted run
 * alone: EAP-IG(1) of (clean, corrupted) = -EAP of (corrupted, clean) for
 * logit-diff and prob-diff. The positions are the same in both runs, so this
 * interpolates the summed input x0 too; with an embedding norm the norm
 * runs on it.
 * Where headscope's EAP differs from EAP-IG's code: scores are means over
 * the prompts of each prompt's metric (EAP-IG back-propagates its batch's
 * mean metric and divides by the item count again, and its examples
 * minimise -metric, loss=True: its scores are these times -1/batch size);
 * the input node sends blocks.0.hook_resid_pre (hs_graph), hook_embed's
 * difference without an embedding norm.
 * Grouped-query attention (n_key_value_heads < n_heads): the scores are
 * those of hs_model_ungrouped's view of the model, as MIB and EAP-IG run
 * TransformerLens with ungroup_grouped_query_attention: each query head's
 * <k> and <v> receiver is its own copy of its key/value head's input, the
 * gradient there d m / d (that copy), so an edge into a{l}.h{h}<k> patches
 * head h's key alone, not the group's.
 */

/* EAP (ig_steps 0) or EAP-IG with ig_steps interpolation steps (1 .. 1000;
 * 5 in EAP-IG's examples and MIB) over the prompts of p ("corrupted"
 * needed; "answer" and "wrong" for logit-diff and prob-diff): scores
 * [g->n_edges] in hs_graph's canonical order, each the estimate of m(that
 * edge corrupted) - m(clean) defined above. Per chunk: EAP one corrupted
 * forward, one clean forward and one backward; EAP-IG one clean forward and
 * ig_steps forwards and backwards (k = 0 is the corrupted run). At each
 * receiver point of the backward (a layer's q, k or v inputs, an MLP's
 * input, the final residual) every prompt's sums over positions and d_model
 * are one hs_sgemm of the senders that point's receivers read, [senders,
 * t*D], by its gradient, [t*D, receivers], added in double. g: the graph of
 * m's shape (hs_graph_build(&m->cfg)); a grouped-query model runs
 * ungrouped (hs_model_ungrouped, above). HS_ERR_INPUT: a graph of another
 * shape, an empty set, no corrupted prompts, no answer or wrong answer where
 * the metric needs them, ig_steps outside 0 .. 1000; HS_ERR_NOMEM. */
hs_status hs_eap_scores(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_graph *g,
                        hs_metric_kind metric, int ig_steps, double *scores, hs_error *err);
/* hs_eap_scores (EAP-IG: ig_steps >= 1) with the clean run given instead of
 * run once per chunk: clean, an engine cache of p->clean (p->n rows of p->t
 * positions, as hs_engine_cache makes it) holding hook_embed, logits,
 * blocks.0.hook_resid_pre, every blocks.l.attn.hook_result and (with MLPs)
 * blocks.l.hook_mlp_out; other entries are ignored. Borrowed. The forward
 * gives a row the same values whatever else it caches or however many rows
 * run beside it, so the scores are hs_eap_scores's bit for bit. Errors as
 * hs_eap_scores's; HS_ERR_INPUT for ig_steps 0, a grouped-query model, or a
 * cache lacking an entry or of another shape. */
hs_status hs_eap_scores_cached(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_graph *g,
                               hs_metric_kind metric, int ig_steps, const hs_cache *clean, double *scores,
                               hs_error *err);

/* EAP and EAP-IG under any ablation (hs_ablate_method) and either alpha
 * schedule. With resample, ig_right 0 it is hs_eap_scores bit for bit. The
 * activation difference is (a_u,abl - a_u,clean) with a_u,abl the circuit
 * runs' ablated value (hs_circeval): resample the corrupted partner's, mean
 * u's position-wise mean over the set's clean prompts (hs_engine_means),
 * zero 0; so the score estimates m(edge ablated) - m(clean) for that
 * ablation. EAP-IG interpolates from the ablated input, x0 = hook_embed (+
 * hook_pos_embed) = x0_abl + alpha (x0_clean - x0_abl): resample as above
 * (hook_embed from e_corr to e_clean), zero hook_embed and hook_pos_embed
 * times alpha (x0_abl = 0), mean hook_embed from its position-wise mean over
 * the clean prompts (x0_abl = x0's mean: the positions are every prompt's);
 * with an embedding norm the norm runs on the interpolated x0, so its
 * ablated end is norm(x0_abl), not the input node's ablated value (the
 * backward takes edits at the embedding only). alpha = k/m for k = 0..m-1
 * (ig_right 0: hannamw/EAP-IG's code since 13c0033) or k = 1..m (ig_right 1:
 * the paper, Hanna et al. 2024, and that code before). zero and mean need no
 * "corrupted" prompts. Errors as hs_eap_scores, and an unknown ablation. */
typedef struct {
    hs_metric_kind metric;
    hs_ablate_method ablation;
    int ig_steps;  /* 0: EAP; 1 .. 1000: EAP-IG's m */
    int ig_right;  /* 1: alphas k/m, k = 1..m; 0: k = 0..m-1 */
} hs_eap_opts;
hs_status hs_eap_run(const hs_model *m, hs_pool *pool, const hs_prompts *p, const hs_graph *g,
                     const hs_eap_opts *o, double *scores, hs_error *err);

/* Node scores [g->n_nodes] from edge scores [g->n_edges]: node u's is the
 * sum of its outgoing edges' scores in edge order, logits (which sends
 * nothing) NAN. EAP-IG's node attribution (src/eap/attribute_node.py) dots
 * (a_u,corr - a_u,clean) with the gradient at u's output, which is the sum
 * of the gradients at every input reading u (the residual stream adds): the
 * same number. */
void hs_eap_node_scores(const hs_graph *g, const double *edge_scores, double *node_scores);

/* ------------------------------------------------------------------------ */
/* A found circuit in an output folder (discovery/discover_figs.c): what     */
/* `discover` and `circuit` write                                            */

/* graph.json (hs_graph_json_text's bytes, listed with `shows`) into od and,
 * when od's page wants it (html), its parsed object on the page under stem
 * "graph": the run file the viewer's circuit view draws. Errors: those of
 * hs_graph_json_text, the folder's (HS_ERR_IO), HS_ERR_NOMEM. */
hs_status hs_graph_json_write(hs_outdir *od, const hs_graph *g, const hs_config *cfg, const double *scores,
                              const unsigned char *in_circuit, const char *shows, hs_error *err);

/* The circuit as a figure into od: stem.{png,svg,pdf} from hs_graph_figure
 * with od->fo's viz options and stem.json (its JSON with od->context's keys)
 * in the formats od->fo chooses; arguments as hs_graph_figure, every edge of
 * in_graph drawn. A circuit of more than HS_VIZ_MAX_EDGES edges is drawn
 * with its HS_VIZ_MAX_EDGES strongest by |score| (the first in edge order
 * without scores), with a note to od's notes saying so and how many the
 * figure draws (fewer when they do not fit the height: hs_graph_figure). Errors: hs_graph_figure's (the width
 * promise: HS_ERR_INPUT naming the width that fits), the folder's. */
hs_status hs_graph_figure_write(hs_outdir *od, const char *stem, const hs_graph *g, const double *scores,
                                const unsigned char *in_graph, const char *title, const char *shows,
                                hs_error *err);

/* Faithfulness curves as one figure into od (stem.{png,svg,pdf,json} as
 * above): curves[k] (n_methods of them) at MIB's sizes, drawn by
 * hs_faithfulness_figure with methods[k] in the legend; a curve that is not
 * usable draws nothing (NaN). Errors: hs_faithfulness_figure's, the
 * folder's. */
hs_status hs_faith_figure_write(hs_outdir *od, const char *stem, const hs_faith_curve *const *curves,
                                const char *const *methods, size_t n_methods, const char *title,
                                const char *shows, hs_error *err);

/* The attention of one prompt (tokens [t]) in hs_viz_attention_json's shape
 * over [L*H, t, t] (every layer's heads in order, named "L{l}H{h}"), the
 * tokens labelled by tok (hs_tok_str; NULL: "#id"), title (may be NULL), and
 * hs_run_context(&m->cfg, model_path)'s "config" and "model"; packed: the
 * page's packed form (hs_viz_attention_json_packed), else the file's nested
 * arrays. *out new (cJSON_Delete). Errors: the forward's, hs_viz's,
 * HS_ERR_NOMEM. */
hs_status hs_prompt_attention_json(const hs_model *m, const int *tokens, int t, const hs_tokenizer *tok,
                                   const char *title, const char *model_path, int packed, cJSON **out,
                                   hs_error *err);

#endif /* HS_DISCOVERY_H */
