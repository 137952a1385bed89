"""Figures from the notebook, laid out and drawn by the C library's viz code
(the code the CLI's figures use): each maker returns a Figure, shown inline
in Jupyter (_repr_png_) and written as PNG, SVG or PDF by save(path).

    fig = headscope.figures.attention(cache["pattern", 0][0, 3], model.to_str_tokens(text))
    fig.save("L0H3.pdf")
    headscope.figures.grid(np.stack([cache["pattern", l][0] for l in range(L)]), toks)  # every head
    headscope.figures.dla(headscope.dla(model, data))          # DLA bars
    headscope.figures.patch(headscope.patch(model, data), "resid_pre")   # patching heatmap
    headscope.figures.circuit(model, headscope.discover(model, data))   # the circuit graph
"""
import ctypes
import os
import tempfile

import numpy as np

from . import _lib
from .errors import HeadscopeError


class Figure:
    """A figure laid out by the library (its handle), drawn on demand:
    save(path) writes a .png, .svg or .pdf file (by the extension) and returns
    the path; png() gives the PNG's bytes (what Jupyter shows inline), svg()
    the SVG's text;
    size is (width, height) in pixels at dpi. Freed with the object."""

    def __init__(self, ptr, what):
        self._ptr = ptr
        self._what = what
        self._png = None
        w, h, d = ctypes.c_size_t(), ctypes.c_size_t(), ctypes.c_double()
        _lib.lib.hs_api_figure_size(ptr, ctypes.byref(w), ctypes.byref(h), ctypes.byref(d))
        self.size = (w.value, h.value)
        self.dpi = d.value
        self.path = None

    def __del__(self):
        p, self._ptr = getattr(self, "_ptr", None), None
        if p and _lib is not None and _lib.lib is not None:
            _lib.lib.hs_api_figure_free(p)

    def save(self, path):
        """Writes the figure to path: PNG, SVG or PDF by its extension
        (atomically). Returns path. HeadscopeError for another extension or
        a folder that cannot be written."""
        path = os.fspath(path)
        _lib.call(_lib.lib.hs_api_figure_save, self._ptr, _lib.enc(path))
        return path

    def png(self):
        """The figure as PNG bytes (drawn once, then kept)."""
        if self._png is None:
            with tempfile.TemporaryDirectory(prefix="headscope-") as d:
                with open(self.save(os.path.join(d, "figure.png")), "rb") as f:
                    self._png = f.read()
        return self._png

    def svg(self):
        """The figure as SVG text (a <g id> per panel, node or edge)."""
        with tempfile.TemporaryDirectory(prefix="headscope-") as d:
            with open(self.save(os.path.join(d, "figure.svg")), encoding="utf-8") as f:
                return f.read()

    def _repr_png_(self):
        return self.png()

    @property
    def data(self):
        """The PNG bytes (as png())."""
        return self.png()

    def __repr__(self):
        return "<headscope figure: %s, %d x %d px at %g dpi>" % (self._what, self.size[0], self.size[1], self.dpi)


def _make(fn, what, path, *args):
    """Figure from the maker fn(*args, &out); saved to path when one is given."""
    out = ctypes.c_void_p()
    _lib.call(fn, *args, ctypes.byref(out))
    fig = Figure(out, what)
    if path is not None:
        fig.path = fig.save(path)
    return fig


def _labels(labels, n, what):
    toks = list(labels)
    if len(toks) != n or not all(isinstance(t, str) for t in toks):
        raise HeadscopeError("%s are %d strings, got %d" % (what, n, len(toks)))
    return _lib.str_array(toks)


def _opt(s):
    return None if s is None else _lib.enc(s)


def _f32(a):
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_float))


def attention(pattern, tokens, path=None, width=None, title=None, dpi=None, layer=None):
    """An attention figure: pattern [dest, src] for one head, [n_heads, dest,
    src] for a row of heads, or [n_layers, n_heads, dest, src] for the grid
    of every head (e.g. cache["pattern", 0][0], or np.stack of every layer's
    [0]); src > dest drawn masked. tokens: the T labels
    (model.to_str_tokens). layer: the layer of a row of heads (its row reads
    "L<layer>", its heads L<layer>H0..), or of a grid's first row (default
    0); a row of heads without it is drawn with no layer name. path: also
    save to this .png, .svg or .pdf (None: not saved); width in inches
    (None: the figure's default; a width the labels do not fit is a
    HeadscopeError naming one that does); dpi (None: 300). Returns a Figure
    (inline in Jupyter)."""
    p = np.ascontiguousarray(pattern, dtype=np.float32)
    if p.ndim not in (2, 3, 4) or p.shape[-1] != p.shape[-2]:
        raise HeadscopeError("pattern is [dest, src], [head, dest, src] or [layer, head, dest, src] with "
                             "dest == src, got %s" % list(p.shape))
    if layer is not None and (isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or layer < 0):
        raise HeadscopeError("layer is a layer index >= 0, got %r" % (layer,))
    T = p.shape[-1]
    arr, _keep = _labels(tokens, T, "tokens")
    if p.ndim == 2:
        L, H = 0, 1
    elif p.ndim == 3:
        L, H = 1, p.shape[0]
    else:
        L, H = p.shape[0], p.shape[1]
    first = int(layer) if layer is not None else (0 if p.ndim == 4 else -1)
    return _make(_lib.lib.hs_api_figure_attention, "attention %s" % list(p.shape), path, _f32(p), L, H, T, arr,
                 first, _opt(title), float(width or 0), float(dpi or 0))


def grid(patterns, tokens, path=None, width=None, title=None, dpi=None):
    """The head grid: every head's attention pattern, patterns [n_layers,
    n_heads, dest, src] (np.stack([cache["pattern", l][0] for l in
    range(model.cfg.n_layers)])), rows L0.., columns H0.., one colour scale;
    a grid taller than a page is thinned as the CLI's (a note under the
    title says how). Arguments as attention()."""
    p = np.asarray(patterns)
    if p.ndim != 4:
        raise HeadscopeError("grid's patterns are [layer, head, dest, src], got %s" % list(p.shape))
    return attention(p, tokens, path=path, width=width, title=title, dpi=dpi)


def bars(values, labels, path=None, title=None, xlabel=None, note=None, width=None, dpi=None,
         add_up=False):
    """A horizontal bar chart (the CLI's DLA and ablation bars): values [N]
    with N labels; positive bars red to the right, negative blue to the left,
    each with its value; a chart taller than a page keeps the largest bars
    (said in its note). add_up: the bars are the terms of one sum (DLA), so
    the bars left out are drawn as one "other n" bar of their sum; False
    (separate runs or scores, whose sum means nothing): they are left out.
    note: a line in dark red under the title (e.g. why the numbers are not
    usable). Other arguments as attention()."""
    v = np.ascontiguousarray(values, dtype=np.float32)
    if v.ndim != 1 or v.size == 0:
        raise HeadscopeError("bars' values are one non-empty row [N], got %s" % list(v.shape))
    arr, _keep = _labels(labels, v.size, "labels")
    return _make(_lib.lib.hs_api_figure_bars, "bars [%d]" % v.size, path, _f32(v), v.size, arr, _opt(title),
                 _opt(xlabel), _opt(note), int(bool(add_up)), float(width or 0), float(dpi or 0))


def heatmap(matrix, row_labels, col_labels, path=None, signed=True, limit=None, title=None, xlabel=None,
            ylabel=None, value_label=None, note=None, width=None, dpi=None):
    """A matrix [R, C] with R row and C column labels (the CLI's patching
    and score heatmaps): signed=True a diverging map centred on 0 over
    [-limit, limit]; signed=False a sequential map over [0, limit]; limit
    None: the data's range (max |m| or max m); values past it take the map's
    end.
    value_label names the colour bar's quantity; note as bars(). Other
    arguments as attention()."""
    m = np.ascontiguousarray(matrix, dtype=np.float32)
    if m.ndim != 2 or m.size == 0:
        raise HeadscopeError("heatmap's matrix is [rows, columns], got %s" % list(m.shape))
    rl, _k1 = _labels(row_labels, m.shape[0], "row labels")
    cl, _k2 = _labels(col_labels, m.shape[1], "column labels")
    return _make(_lib.lib.hs_api_figure_heatmap, "heatmap %s" % list(m.shape), path, _f32(m), m.shape[0],
                 m.shape[1], rl, cl, _opt(title), _opt(xlabel), _opt(ylabel), 1 if signed else 0, float(limit or 0),
                 _opt(value_label), _opt(note), float(width or 0), float(dpi or 0))


def dla(result, path=None, title=None, width=None, dpi=None):
    """The bars of headscope.dla's result as `headscope dla --out` draws them
    (dla_bars): each component's mean attribution, then the final norm's bias
    term (ln_final_b, when there is one) and b_U's, which sum to the target.
    Arguments as attention()."""
    comps = result.get("components") if isinstance(result, dict) else None
    if not comps:
        raise HeadscopeError("dla() draws the dict headscope.dla returns (with its 'components')")
    values = [c["attribution"] for c in comps]
    labels = [c["component"] for c in comps]
    if result.get("constant") is not None:
        values.append(result["constant"])
        labels.append("ln_final_b")
    values.append(result.get("unembed_bias_term", 0.0))
    labels.append("b_U")
    wrong = "wrong" in result.get("direction", "")
    return bars(values, labels, path=path,
                title=title if title is not None else
                "direct logit attribution (final norm frozen), mean over the prompts",
                xlabel="logit difference answer \u2212 wrong" if wrong else "answer logit", width=width, dpi=dpi,
                add_up=True)  # they sum to the target: a tall chart sums the rest in one bar


def patch(result, act, path=None, tokens=None, title=None, width=None, dpi=None):
    """One act's heatmap of headscope.patch's result as `headscope patch
    --out` draws it (patch_<act>): the normalised logit difference by layer
    and position, or by layer and head for a head act, diverging over
    [-1, 1] (1 = the clean run restored); a result that is not usable says
    why under the title (the CLI draws none). tokens: the position labels
    (default "0", "1", ...; the CLI's are the first prompt's tokens).
    Arguments as attention()."""
    acts = result.get("acts") if isinstance(result, dict) else None
    if not acts:
        raise HeadscopeError("patch() draws the dict headscope.patch returns (with its 'acts')")
    if act not in acts:
        raise HeadscopeError("the result has no act %r (it has %s)" % (act, ", ".join(acts)))
    a = acts[act]
    if "metric" not in a:
        raise HeadscopeError("act %r has no per-%s table (patched with by='head,position')" % (act, "head"))
    m = np.asarray(a["metric"], dtype=np.float32)
    if m.ndim != 2:
        raise HeadscopeError("act %r's metric is %s, not a [layer, column] table" % (act, list(m.shape)))
    head = a.get("by", "").startswith("head")
    if head:
        cols = ["H%d" % i for i in range(m.shape[1])]
    else:
        cols = list(tokens) if tokens is not None else [str(i) for i in range(m.shape[1])]
    why = result.get("why_not_usable", "")
    note = None if result.get("usable", True) else "not usable: %s" % why.split(" (")[0]
    how = "AtP estimate of patching" if result.get("method") == "atp" else "patching"
    if title is None:  # experiments/figures.c's
        title = "%s %s%s: normalised LD (1 = clean restored)" % (how, act, " per head, all positions" if head else "")
    return heatmap(m, ["L%d" % l for l in range(m.shape[0])], cols, path=path, signed=True, limit=1.0, title=title,
                   xlabel="head" if head else "position", ylabel="layer", value_label="normalised logit difference",
                   note=note, width=width, dpi=dpi)


_METHOD_TITLES = {"exact": "exact patching", "acdc": "ACDC", "eap": "EAP", "eap-ig": "EAP-IG"}


def circuit(model, discovery, path=None, title=None, width=None, dpi=None):
    """The circuit graph figure of headscope.discover's result (or of a
    graph.json text or path, EAP-IG's to_json) on model's graph, as
    `headscope discover --out` draws it: layers bottom to top, the circuit's
    edges by |score| in width, by sign in colour, each into its head's q, k
    or v (the strongest 1,024 when there are more). Returns a Figure;
    figure.edges is how many edges it draws."""
    text = getattr(discovery, "graph_json", None)
    if text is None and isinstance(discovery, (str, os.PathLike)):
        s = os.fspath(discovery)
        if s.lstrip().startswith("{"):
            text = s
        else:
            try:
                with open(s, encoding="utf-8") as f:
                    text = f.read()
            except OSError as e:
                raise HeadscopeError("cannot read %s: %s" % (s, e.strerror)) from None
    if text is None:
        raise HeadscopeError("circuit() draws headscope.discover's result, or a graph.json (text or path)")
    if title is None and isinstance(discovery, dict) and "circuit" in discovery:
        # discover --out's title (discovery/discover.c)
        c, f = discovery["circuit"], discovery["circuit"].get("faithfulness")
        title = "%s circuit (%s, then pruned): %d of %d edges, faithfulness %s" % (
            _METHOD_TITLES.get(discovery.get("method"), discovery.get("method")), c.get("chosen_by"),
            c.get("edges", 0), discovery.get("n_edges", 0), "undefined" if f is None else "%.2f" % f)
    n = ctypes.c_int()
    fig = _make(_lib.lib.hs_api_figure_circuit, "circuit", None, model._handle(), _lib.enc(text), _opt(title),
                float(width or 0), float(dpi or 0), ctypes.byref(n))
    fig.edges = n.value
    if path is not None:
        fig.path = fig.save(path)
    return fig
