"""The CLI's experiments as functions returning plain Python data: the JSON
its command prints with --json (json.loads of the same text, "model" and
"config" included), computed by the same library calls."""
import ctypes
import json
import os
import tempfile

from . import _lib
from .errors import HeadscopeError


def _data_text(data, what="data"):
    """(JSONL text, the name messages use) of a path or a list of dicts."""
    if isinstance(data, (str, os.PathLike)):
        path = os.fspath(data)
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except OSError as e:
            raise HeadscopeError("cannot read %s: %s" % (path, e.strerror), 2) from None
        try:
            return raw.decode("utf-8"), path
        except UnicodeDecodeError as e:
            raise HeadscopeError("%s is not UTF-8 text (byte %d)" % (path, e.start), 3) from None
    if isinstance(data, (list, tuple)) and all(isinstance(d, dict) for d in data):
        return "".join(json.dumps(d) + "\n" for d in data), what
    raise HeadscopeError("%s is a JSONL path or a list of dicts ({'prompt': ..., 'answer': ...})" % what)


def _run(model, kind, data, opts):
    text, name = _data_text(data)
    keys = [k for k, v in opts.items() if v is not None]
    vals = [opts[k] for k in keys]
    kk, _a = _lib.str_array(keys)
    vv, _b = _lib.str_array(vals)
    out = ctypes.c_void_p()
    _lib.call(_lib.lib.hs_api_experiment, model._handle(), _lib.enc(kind), _lib.enc(text), _lib.enc(name),
              _lib.enc(model.path), kk, vv, len(keys), ctypes.byref(out))
    try:
        return json.loads(ctypes.string_at(out).decode("utf-8"))
    finally:
        _lib.lib.hs_api_mem_free(out)


def patch(model, data, acts=None, by="both", method="exact"):
    """Activation patching (`headscope patch --json`): the clean prompts'
    activations patched into the corrupted ones, cell by cell.

    data: a JSONL path or a list of dicts with "prompt", "corrupted",
    "answer", "wrong". acts: the activations, a list or comma-separated
    string of resid_pre, attn_out, mlp_out, resid_post, z, q, k, v, pattern
    (None = every one the model has). by: "head", "head,position" or "both"
    (the cells of the head acts, exact method only). method: "exact", "atp"
    (attribution patching) or "both". Returns the command's JSON as a dict."""
    if acts is not None and not isinstance(acts, str):
        acts = ",".join(acts)
    return _run(model, "patch", data, {"acts": acts, "by": by, "method": method})


def ablate(model, data, method="mean", ref=None):
    """Ablation of every head, attention layer and MLP (`headscope ablate
    --json`): method "zero", "mean" (position-wise over ref, default the set
    itself) or "resample". data (and ref): a JSONL path or a list of dicts
    with "prompt", "answer" (and "wrong"). Returns the command's JSON."""
    ref_text = None if ref is None else _data_text(ref, "ref")[0]
    return _run(model, "ablate", data, {"method": method, "ref": ref_text})


def dla(model, data, by_position=False):
    """Direct logit attribution over a prompt set (`headscope dla --json`):
    each component's mean contribution to answer - wrong (or the answer) at
    each prompt's position; by_position adds every source position. Returns
    the command's JSON."""
    return _run(model, "dla", data, {"by_position": "1" if by_position else None})


class Discovery(dict):
    """What headscope.discover found: the dict is `headscope discover --json`
    (method, metric, circuit, faithfulness curve, strongest edges, ...);
    graph is the circuit file as EAP-IG's Graph.to_json writes it ({"cfg",
    "nodes", "edges": {"u->v": {"score", "in_graph"}}}; graph_json its exact
    text, what `discover --out` writes as graph.json)."""

    def __init__(self, report, graph_json):
        super().__init__(report)
        self.graph_json = graph_json
        self.graph = json.loads(graph_json)

    def top(self, n):
        """The n edges of largest |score|, [(edge name, score)], the largest
        first (scores as the graph has them: EAP-IG's sign and scale)."""
        edges = sorted(self.graph["edges"].items(), key=lambda kv: -abs(kv[1]["score"]))
        return [(k, e["score"]) for k, e in edges[:n]]

    @property
    def circuit(self):
        """The edges in the circuit (in_graph), in the graph's order."""
        return [k for k, e in self.graph["edges"].items() if e["in_graph"]]

    @property
    def faithfulness(self):
        """The circuit's normalised faithfulness (None when not usable)."""
        return self["circuit"].get("faithfulness")


def discover(model, data, method="eap-ig", metric=None, ablation=None, top=None, threshold=None,
             ig_steps=None, select=None, tau=None):
    """Circuit discovery (`headscope discover --json`, no folder): edge
    scores by method ("eap-ig" here by default, "eap", "exact", "acdc"),
    metric ("logit-diff", "prob-diff", "kl"), ablation ("resample" by
    default: the corrupted partners, "mean", "zero"), the circuit of the top
    `top` edges, those with |score| >= threshold, or MIB's 5 % (select
    "topn", "greedy" or "signed": MIB's evaluation default); ig_steps for EAP-IG, tau for ACDC. data: a JSONL
    path or a list of dicts with "prompt", "corrupted", "answer", "wrong".
    Returns a Discovery (the report dict with .graph, .top(n), .circuit,
    .faithfulness)."""
    opts = {"method": method, "metric": metric, "ablation": ablation, "select": select,
            "top": None if top is None else str(int(top)),
            "threshold": None if threshold is None else repr(float(threshold)),
            "tau": None if tau is None else repr(float(tau)),
            "ig_steps": None if ig_steps is None else str(int(ig_steps))}
    out = _run(model, "discover", data, opts)
    return Discovery(out["report"], out["graph"])


def lens(model, data):
    """The logit lens over a prompt set (`headscope lens --json`): the
    model's output head on the residual stream before every layer and after
    the last. data: a JSONL path or a list of dicts with "prompt" ("answer",
    "wrong" optional). Returns the command's JSON."""
    return _run(model, "lens", data, {})


def heads(model, data, metric="mul", exclude_bos=False, exclude_current=False):
    """Every head's detector scores (`headscope heads --json`; TL's
    detect_head): previous-token, duplicate-token, induction and first-noun
    over the prompts of data (a JSONL path or a list of {"prompt": ...});
    metric "mul" or "abs". Returns the command's JSON."""
    return _run(model, "heads", data, {"metric": metric, "exclude_bos": "1" if exclude_bos else None,
                                       "exclude_current": "1" if exclude_current else None})


def prompts_ioi(model, n, seed=0, corrupt="s2", template=None):
    """An indirect-object-identification prompt set for a GPT-2-vocabulary
    model (`headscope prompts ioi`: Wang et al. 2022's templates as ACDC's
    ioi_dataset.py builds them): a list of n dicts {"prompt", "corrupted",
    "answer", "wrong"}, ready for patch, ablate, dla or discover. corrupt:
    "s2" (the subject's second mention replaced) or "abc" (three other
    names); template: one template's index (None: every template of the
    commonest length). The same seed gives the same set."""
    if corrupt not in ("s2", "abc"):
        raise HeadscopeError("corrupt takes s2 or abc, not %r" % (corrupt,))
    out = ctypes.c_void_p()
    _lib.call(_lib.lib.hs_api_ioi, model._handle(), int(n), int(seed), 1 if corrupt == "abc" else 0,
              -1 if template is None else int(template), ctypes.byref(out))
    try:
        text = ctypes.string_at(out).decode("utf-8")
    finally:
        _lib.lib.hs_api_mem_free(out)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def faithfulness(model, data, graph, metric=None, ablation=None, select=None):
    """A circuit found elsewhere run on a prompt set (`headscope faithfulness
    --json`): graph is a graph.json path (EAP-IG's / MIB's circuit file), a
    Discovery, or a dict in Graph.to_json's shape; metric, ablation and
    select as discover's. Returns the command's JSON (the circuit's
    normalised faithfulness and the curve of the file's scores)."""
    if isinstance(graph, Discovery):
        text = graph.graph_json
    elif isinstance(graph, dict):
        text = json.dumps(graph)
    else:
        text = None
        path = os.fspath(graph)
    if text is not None:
        with tempfile.TemporaryDirectory(prefix="headscope-") as d:
            path = os.path.join(d, "graph.json")
            with open(path, "w") as f:
                f.write(text)
            return _run(model, "faithfulness", data, {"graph": path, "metric": metric, "ablation": ablation,
                                                      "select": select})
    return _run(model, "faithfulness", data, {"graph": path, "metric": metric, "ablation": ablation,
                                              "select": select})
