"""Figures from the notebook, drawn by the C library's viz code (the CLI's
figures): PNG, SVG or PDF files, shown inline in Jupyter (_repr_png_)."""
import ctypes
import os
import tempfile

import numpy as np

from . import _lib
from .errors import HeadscopeError


class Figure:
    """A figure written to path (None: held in memory, data its PNG bytes);
    in Jupyter it displays inline (a PNG's bytes, or for an SVG its text)."""

    def __init__(self, path, data=None):
        self.path = path
        self.data = data

    def _repr_png_(self):
        if self.data is not None:
            return self.data
        if self.path.endswith(".png"):
            with open(self.path, "rb") as f:
                return f.read()
        return None

    def _repr_svg_(self):
        if self.path is not None and self.path.endswith(".svg"):
            with open(self.path, encoding="utf-8") as f:
                return f.read()
        return None

    def __repr__(self):
        return "<headscope figure %s>" % (self.path or "(in memory, %d bytes of PNG)" % len(self.data))


def attention(pattern, tokens, path=None, width=None, title=None, dpi=None):
    """An attention figure: pattern [dest, src] for one head, [n_heads, dest,
    src] for a row of heads, or [n_layers, n_heads, dest, src] for a grid
    (e.g. cache["pattern", 0][0] or np.stack of every layer's [0]); tokens:
    the T labels (model.to_str_tokens). path: a .png, .svg or .pdf file (None:
    a PNG kept in memory, figure.data); width in inches (None: the figure's
    default; a width the labels do not fit is a HeadscopeError naming one
    that does); dpi (None: 300). Returns a Figure (inline in Jupyter)."""
    p = np.ascontiguousarray(pattern, dtype=np.float32)
    if p.ndim not in (2, 3, 4) or p.shape[-1] != p.shape[-2]:
        raise HeadscopeError("pattern is [dest, src], [head, dest, src] or [layer, head, dest, src] with "
                             "dest == src, got %s" % list(p.shape))
    T = p.shape[-1]
    toks = list(tokens)
    if len(toks) != T or not all(isinstance(t, str) for t in toks):
        raise HeadscopeError("tokens are %d strings (one a position), got %d" % (T, len(toks)))
    if p.ndim == 2:
        L, H = 0, 1
    elif p.ndim == 3:
        L, H = 1, p.shape[0]
    else:
        L, H = p.shape[0], p.shape[1]
    arr, _keep = _lib.str_array(toks)

    def draw(to):
        _lib.call(_lib.lib.hs_api_attention_figure, p.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), L, H, T, arr,
                  None if title is None else _lib.enc(title), float(width or 0), float(dpi or 0), _lib.enc(to))

    if path is None:
        with tempfile.TemporaryDirectory(prefix="headscope-") as d:
            draw(os.path.join(d, "attention.png"))
            with open(os.path.join(d, "attention.png"), "rb") as f:
                return Figure(None, f.read())
    path = os.fspath(path)
    draw(path)
    return Figure(path)
