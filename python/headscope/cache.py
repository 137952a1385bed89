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
        elif _lib is not None and _lib.lib is not None:  # (None at interpreter exit: the OS frees it)
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

    # -- TransformerLens' stacking helpers: the cached arrays, stacked --------
    def _n_layers(self, layer):
        L = self.model.cfg.n_layers
        if layer is None or layer == -1:
            return L
        if not 0 <= layer <= L:
            raise HeadscopeError("layer must be in [0, %d], got %d" % (L, layer))
        return layer

    def _finish(self, arrays, labels, apply_ln, layer, pos_slice, return_labels):
        if not arrays:
            raise HeadscopeError("nothing to stack before layer 0")
        stack = np.stack(arrays)
        if apply_ln:
            stack = self.apply_ln_to_stack(stack, layer)
        if pos_slice is not None:
            stack = stack[:, :, pos_slice]
        return (stack, labels) if return_labels else stack

    def accumulated_resid(self, layer=None, incl_mid=False, apply_ln=False, pos_slice=None, return_labels=False):
        """The residual stream entering each layer before `layer` (None: every
        layer, then the final resid_post): [components, batch, pos, d_model]
        with labels "0_pre", "0_mid" (incl_mid), ..., "final_post" (TL's
        accumulated_resid). apply_ln: through the final norm's cached scale
        (apply_ln_to_stack)."""
        n = self._n_layers(layer)
        arrays, labels = [], []
        for l in range(n):
            arrays.append(self["blocks.%d.hook_resid_pre" % l])
            labels.append("%d_pre" % l)
            if incl_mid:
                arrays.append(self["blocks.%d.hook_resid_mid" % l])
                labels.append("%d_mid" % l)
        if n == self.model.cfg.n_layers:
            arrays.append(self["blocks.%d.hook_resid_post" % (n - 1)])
            labels.append("final_post")
        return self._finish(arrays, labels, apply_ln, layer, pos_slice, return_labels)

    def decompose_resid(self, layer=None, apply_ln=False, pos_slice=None, incl_embeds=True, return_labels=False):
        """The residual stream before `layer` (None: the final one) as the
        outputs that sum to it: "embed", "pos_embed" (incl_embeds; learned
        positions), then each layer's "l_attn_out" (b_O included) and
        "l_mlp_out": [components, batch, pos, d_model] (TL's decompose_resid)."""
        n = self._n_layers(layer)
        arrays, labels = [], []
        if incl_embeds:
            for name in ("hook_embed", "hook_pos_embed"):
                if name in self.cache_dict:
                    arrays.append(self[name])
                    labels.append(name[5:])
        for l in range(n):
            arrays.append(self["blocks.%d.hook_attn_out" % l])
            labels.append("%d_attn_out" % l)
            if "blocks.%d.hook_mlp_out" % l in self.cache_dict:
                arrays.append(self["blocks.%d.hook_mlp_out" % l])
                labels.append("%d_mlp_out" % l)
        return self._finish(arrays, labels, apply_ln, layer, pos_slice, return_labels)

    def stack_head_results(self, layer=None, apply_ln=False, pos_slice=None, return_labels=False):
        """Every head's output z W_O (blocks.l.attn.hook_result, without b_O)
        of the layers before `layer` (None: all): [heads, batch, pos, d_model],
        labels "L0H0", ... (TL's stack_head_results; the cache must hold
        hook_result, as the full cache does)."""
        n = self._n_layers(layer)
        arrays, labels = [], []
        for l in range(n):
            r = self["blocks.%d.attn.hook_result" % l]
            for h in range(r.shape[2]):
                arrays.append(r[:, :, h])
                labels.append("L%dH%d" % (l, h))
        return self._finish(arrays, labels, apply_ln, layer, pos_slice, return_labels)

    def apply_ln_to_stack(self, residual_stack, layer=None):
        """A stack of residual components [..., batch, pos, d_model] through the
        norm the residual meets before `layer` (None: the final norm) with the
        scale this run cached there (hook_scale): centred over d_model for
        LayerNorm, then divided by the scale (TL's apply_ln_to_stack; the
        norm's weight and bias are not applied). Without that norm: as given."""
        n = self._n_layers(layer)
        name = "ln_final.hook_scale" if n == self.model.cfg.n_layers else "blocks.%d.ln1.hook_scale" % n
        x = np.asarray(residual_stack, dtype=np.float32)
        if name not in self.cache_dict:
            if self.model.cfg.normalization_type is None:
                return x
            raise HeadscopeError("%s is not in the cache (the names filter left it out)" % name)
        if self.model.cfg.normalization_type in ("LN", "LNPre"):
            x = x - x.mean(-1, keepdims=True)
        return x / self[name]
