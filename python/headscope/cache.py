"""ActivationCache: a run's hook points as numpy views of the library's
buffers, under TransformerLens' names and shapes (docs/HOOKS.md)."""
import ctypes
import re

import numpy as np

from . import _lib
from .errors import HeadscopeError

_ACT_ALIAS = {"attn": "pattern", "attn_logits": "attn_scores", "key": "k", "query": "q", "value": "v",
              "mlp_pre": "pre", "mlp_mid": "mid", "mlp_post": "post"}
_LAYER_TYPE_ALIAS = {"a": "attn", "m": "mlp", "b": "", "block": "", "blocks": "", "attention": "attn"}
_ATTN = ("k", "v", "q", "z", "rot_k", "rot_q", "result", "pattern", "attn_scores")
_MLP = ("pre", "post", "mid", "pre_linear")


def get_act_name(name, layer=None, layer_type=None):
    """TransformerLens' utils.get_act_name: the full hook name of a short one.

    get_act_name("pattern", 0) == "blocks.0.attn.hook_pattern";
    ("resid_pre", 1) -> "blocks.1.hook_resid_pre"; ("scale", 0, "ln1") ->
    "blocks.0.ln1.hook_scale"; ("scale") -> "ln_final.hook_scale";
    ("embed") -> "hook_embed"; "attn0" -> "blocks.0.attn.hook_pattern". A
    full name (with a dot, or starting hook_) is returned as it is."""
    if ("." in name or name.startswith("hook_")) and layer is None and layer_type is None:
        return name
    m = re.match(r"([a-z]+)(\d+)([a-z]?.*)", name)
    if m is not None:
        name, layer, layer_type = m.group(1), int(m.group(2)), m.group(3) or None
    name = _ACT_ALIAS.get(name, name)
    full = "" if layer is None else "blocks.%d." % int(layer)
    if name in _ATTN:
        layer_type = "attn"
    elif name in _MLP:
        layer_type = "mlp"
    elif layer_type in _LAYER_TYPE_ALIAS:
        layer_type = _LAYER_TYPE_ALIAS[layer_type]
    if layer_type:
        full += layer_type + "."
    full += "hook_" + name
    if name in ("scale", "normalized") and layer is None:
        full = "ln_final." + full
    return full


class _CBuffer:
    """A C buffer numpy views point into, with the Python object keeping it
    alive (the view's base): numpy reads __array_interface__."""

    def __init__(self, owner, ptr, shape):
        self._owner = owner
        self.__array_interface__ = {"shape": tuple(int(s) for s in shape), "typestr": "<f4",
                                    "data": (int(ptr), False), "version": 3}


def c_view(owner, ptr, shape):
    """A float32 numpy view of shape at ptr, alive as long as owner."""
    return np.asarray(_CBuffer(owner, ptr, shape))


class Spare:
    """The model's one spare cache: the buffers of a cache whose views are all
    gone, which the next run fills again instead of faulting fresh pages
    (GPT-2 small's full cache at 256 tokens is ~0.5 GB)."""

    def __init__(self):
        self.ptr = None
        self.open = True

    def take(self):
        p, self.ptr = self.ptr, None
        return p

    def close(self):
        self.open = False
        p = self.take()
        if p:
            _lib.lib.hs_api_cache_free(p)


class _CCache:
    """Owns one hs_api_cache; when the last view of it goes it becomes the
    model's spare (or is freed when the model has one or is gone)."""

    def __init__(self, ptr, spare):
        self.ptr = ptr
        self.spare = spare

    def __del__(self):
        p, self.ptr = self.ptr, None
        if not p:
            return
        sp = self.spare
        if sp is not None and sp.open and sp.ptr is None:
            sp.ptr = p
        else:
            _lib.lib.hs_api_cache_free(p)


def cache_arrays(ptr, spare=None):
    """{name: view} of an hs_api_cache (taking ownership of ptr; spare: the
    model's Spare it returns to)."""
    owner = _CCache(ptr, spare)
    out = {}
    for i in range(_lib.lib.hs_api_cache_n(ptr)):
        name = _lib.lib.hs_api_cache_name(ptr, i).decode()
        nd = _lib.lib.hs_api_cache_ndim(ptr, i)
        shp = _lib.lib.hs_api_cache_shape(ptr, i)
        out[name] = c_view(owner, _lib.lib.hs_api_cache_data(ptr, i), [shp[k] for k in range(nd)])
    return out


class ActivationCache:
    """TransformerLens' ActivationCache over a run's hook points.

    cache["blocks.0.attn.hook_pattern"] is the [batch, head, dest, src] float32
    array; cache["pattern", 0] is the same (TL's shorthand, get_act_name);
    keys(), values(), items(), len, in and iteration as a dict. Every array is
    a numpy view of the buffer the library filled (no copy), valid as long as
    the array itself (the buffer is freed when no view of it remains). The
    logits are under "logits" only when the names filter asked for them."""

    def __init__(self, arrays, model):
        self.cache_dict = arrays
        self.model = model

    def _name(self, key):
        if isinstance(key, tuple):
            return get_act_name(*key)
        if isinstance(key, str):
            return key if key in self.cache_dict or key == "logits" else get_act_name(key)
        raise HeadscopeError("a cache key is a hook name or (name, layer[, layer_type]), got %r" % (key,))

    def __getitem__(self, key):
        name = self._name(key)
        if name == "unembed.hook_out":
            name = "logits"
        try:
            return self.cache_dict[name]
        except KeyError:
            raise KeyError("%s is not in the cache (%d points; the names filter kept these)"
                           % (name, len(self.cache_dict))) from None

    def __contains__(self, key):
        try:
            name = self._name(key)
        except HeadscopeError:
            return False
        return name in self.cache_dict or (name == "unembed.hook_out" and "logits" in self.cache_dict)

    def __iter__(self):
        return iter(self.cache_dict)

    def __len__(self):
        return len(self.cache_dict)

    def keys(self):
        return self.cache_dict.keys()

    def values(self):
        return self.cache_dict.values()

    def items(self):
        return self.cache_dict.items()

    def __repr__(self):
        return "ActivationCache with keys %s" % list(self.cache_dict)
