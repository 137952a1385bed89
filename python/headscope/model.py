"""A loaded model with TransformerLens' HookedTransformer interface: cfg,
to_tokens / to_str_tokens / to_string, the forward, run_with_cache,
run_with_hooks and the weights, every number computed by the C library."""
import ctypes
import json
import os
import sys

import numpy as np

from . import _lib
from .cache import ActivationCache, Spare, c_view, cache_arrays
from .errors import HeadscopeError


class Config:
    """TransformerLens' HookedTransformerConfig fields of the model (n_layers,
    d_model, n_heads, d_head, d_mlp (None when attention-only), n_ctx,
    d_vocab, d_vocab_out, act_fn, normalization_type ("LN", "LNPre", "RMS",
    "RMSPre" or None), eps, positional_embedding_type, attn_only,
    attention_dir, attn_scale, ...) as attributes; to_dict() gives them all.
    headscope's own names of every field are in cfg.headscope (a dict), and
    cfg.weights says which weights the model holds ("raw" or
    "tl-processed")."""

    def __init__(self, tl, all_fields, weights):
        d = dict(tl)
        d.setdefault("attn_scale", float(np.sqrt(d["d_head"])))
        d.setdefault("scale_attn_by_inverse_layer_idx", False)
        d.setdefault("default_prepend_bos", True)
        self.__dict__.update(d)
        self._fields = d
        self.headscope = all_fields
        self.weights = weights

    def to_dict(self):
        return dict(self._fields)

    def __repr__(self):
        return "HookedTransformerConfig(%s)" % ", ".join("%s=%r" % kv for kv in self._fields.items())


class HookPoint:
    """What a hook function gets as its second argument (TL's HookPoint):
    name, and layer() for a blocks.{l} point."""

    def __init__(self, name):
        self.name = name

    def layer(self):
        parts = self.name.split(".")
        if len(parts) < 2 or parts[0] != "blocks":
            raise HeadscopeError("%s is not a point of a layer" % self.name)
        return int(parts[1])

    def __repr__(self):
        return "HookPoint(%r)" % self.name


class _Acts:
    """One hs_api_acts: the activations runs use; a hook's view keeps it alive."""

    def __init__(self, h, B, T):
        p = ctypes.c_void_p()
        _lib.call(_lib.lib.hs_api_acts_create, h, B, T, ctypes.byref(p))
        self.ptr, self.B, self.T = p, B, T

    def __del__(self):
        if self.ptr:
            _lib.lib.hs_api_acts_free(self.ptr)
            self.ptr = None


_WEIGHTS = {  # TL attribute: (tensor name, per layer)
    "W_E": ("embed.W_E", False), "W_pos": ("pos_embed.W_pos", False), "W_U": ("unembed.W_U", False),
    "b_U": ("unembed.b_U", False), "W_Q": ("attn.W_Q", True), "W_K": ("attn.W_K", True),
    "W_V": ("attn.W_V", True), "W_O": ("attn.W_O", True), "b_Q": ("attn.b_Q", True),
    "b_K": ("attn.b_K", True), "b_V": ("attn.b_V", True), "b_O": ("attn.b_O", True),
    "W_in": ("mlp.W_in", True), "b_in": ("mlp.b_in", True), "W_out": ("mlp.W_out", True),
    "b_out": ("mlp.b_out", True),
}


class HookedTransformer:
    """A checkpoint loaded by headscope.load, with TransformerLens'
    HookedTransformer interface. Every number comes from the C library
    (libheadscope.so); arrays are numpy. Free the model's memory with free()
    (or a with block); any use after that raises HeadscopeError. A model
    serves one call at a time: a call while another runs (from a hook, or
    another thread) raises HeadscopeError "the model is busy" rather than
    waiting; load the model once per thread to run in parallel."""

    def __init__(self, path, process="raw", threads=0):
        self._h = None
        if process not in ("raw", "tl"):
            raise HeadscopeError("process must be 'raw' or 'tl', got %r" % (process,))
        if not isinstance(threads, int) or threads < 0:
            raise HeadscopeError("threads must be an int >= 0 (0 = every CPU), got %r" % (threads,))
        self.path = os.fspath(path)
        h = ctypes.c_void_p()
        _lib.call(_lib.lib.hs_api_load, _lib.enc(self.path), _lib.enc(process), threads, ctypes.byref(h))
        self._h = h
        self.notes = _lib.lib.hs_api_notes(h).decode("utf-8", "replace").splitlines()
        cj = json.loads(_lib.lib.hs_api_config_json(h).decode())
        self.cfg = Config(cj["tl"], cj["all"], cj["weights"])
        self._points = [_lib.lib.hs_api_hook_point(h, i).decode()
                        for i in range(_lib.lib.hs_api_n_hook_points(h))]
        self._acts = None
        self._spare = Spare()
        self._weights = {}

    # -- lifetime ---------------------------------------------------------
    def free(self):
        """Frees the model (the weights, the tokenizer, the worker pool).
        Arrays returned before stay valid (caches and weights own theirs)."""
        h, self._h = self._h, None
        self._acts = None
        if getattr(self, "_spare", None) is not None:
            self._spare.close()
        if h:
            _lib.lib.hs_api_free(h)

    def __del__(self):
        self.free()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()

    def _handle(self):
        if not self._h:
            raise HeadscopeError("the model was freed")
        return self._h

    @property
    def hook_points(self):
        """Every hook point name of this model, in forward order (docs/HOOKS.md)."""
        return list(self._points)

    def __repr__(self):
        return "<headscope model %s: %d layers, %d heads, d_model %d, d_vocab %d>" % (
            self.path, self.cfg.n_layers, self.cfg.n_heads, self.cfg.d_model, self.cfg.d_vocab)

    # -- tokenizer --------------------------------------------------------
    def _encode(self, text, prepend_bos):
        ids = ctypes.POINTER(ctypes.c_int)()
        n = ctypes.c_size_t()
        _lib.call(_lib.lib.hs_api_encode, self._handle(), _lib.enc(text), 1 if prepend_bos else 0,
                  ctypes.byref(ids), ctypes.byref(n))
        try:
            return np.ctypeslib.as_array(ids, (n.value,)).astype(np.int64) if n.value else \
                np.zeros(0, np.int64)
        finally:
            _lib.lib.hs_api_mem_free(ids)

    def to_tokens(self, input, prepend_bos=True):
        """The token ids of a text, or of a list of texts of the same number of
        tokens: numpy int64 [batch, pos]. GPT-2's BOS (<|endoftext|>, 50256)
        comes first unless prepend_bos=False (a word vocabulary has none).
        HeadscopeError for an empty text, an unknown word, a text longer than
        n_ctx, texts of different token counts."""
        texts = [input] if isinstance(input, str) else list(input)
        if not texts:
            raise HeadscopeError("to_tokens needs a text or a list of texts")
        rows = [self._encode(s, prepend_bos) for s in texts]
        if len({len(r) for r in rows}) != 1:
            raise HeadscopeError("the texts have different numbers of tokens (%s); headscope does not pad: "
                                 "give texts of one length" % ", ".join(str(len(r)) for r in rows))
        return np.stack(rows)

    def to_str_tokens(self, input, prepend_bos=True):
        """Each token's exact string: a list for a text, one id (an int or a
        0-d array: a list of one, as TL's), or a 1-D / [1, pos] array of ids,
        a list of lists for a list of texts (TL's to_str_tokens; bytes that
        are not UTF-8 on their own as U+FFFD)."""
        if isinstance(input, str):
            return self.to_str_tokens(self.to_tokens(input, prepend_bos)[0])
        if isinstance(input, (list, tuple)) and input and isinstance(input[0], str):
            return [self.to_str_tokens(s, prepend_bos) for s in input]
        ids = np.asarray(input)
        if ids.ndim == 0:
            ids = ids.reshape(1)
        if ids.ndim == 2:
            if ids.shape[0] != 1:
                raise HeadscopeError("to_str_tokens takes one sequence, got a batch of %d" % ids.shape[0])
            ids = ids[0]
        if ids.ndim != 1 or ids.dtype.kind not in "iu":
            raise HeadscopeError("to_str_tokens takes a text or integer token ids, got %s %s"
                                 % (ids.dtype, list(ids.shape)))
        h = self._handle()
        out = []
        for i in ids.tolist():
            s = _lib.lib.hs_api_token_str(h, int(i)) if -2**31 <= i < 2**31 else None
            if s is None:
                raise HeadscopeError("token id %d is outside the vocabulary [0, %d)" % (i, self.cfg.d_vocab))
            out.append(s.decode("utf-8"))
        return out

    def to_single_str_token(self, token):
        """The string of one token id (TL's to_single_str_token): an int or a
        0-d integer array. HeadscopeError for anything else or an id outside
        the vocabulary."""
        ids = np.asarray(token)
        if ids.ndim != 0 or ids.dtype.kind not in "iu":
            raise HeadscopeError("to_single_str_token takes one integer token id, got %s %s"
                                 % (ids.dtype, list(ids.shape)))
        return self.to_str_tokens(ids)[0]

    def to_string(self, tokens):
        """The text of token ids: a str for 1-D ids, a list of str for [batch,
        pos] (TL's to_string). HeadscopeError for an id out of range or ids
        whose bytes are not UTF-8 (they cut a character)."""
        ids = np.asarray(tokens)
        if ids.dtype.kind not in "iu" or ids.ndim not in (1, 2):
            raise HeadscopeError("to_string takes integer token ids [pos] or [batch, pos], got %s %s"
                                 % (ids.dtype, list(ids.shape)))
        if ids.ndim == 2:
            return [self.to_string(r) for r in ids]
        if ids.size and (ids.min() < 0 or ids.max() >= self.cfg.d_vocab):
            bad = int(ids[(ids < 0) | (ids >= self.cfg.d_vocab)][0])
            raise HeadscopeError("token id %d is outside the vocabulary [0, %d)" % (bad, self.cfg.d_vocab))
        arr = np.ascontiguousarray(ids, dtype=np.intc)
        text = ctypes.c_void_p()
        _lib.call(_lib.lib.hs_api_decode, self._handle(), arr.ctypes.data_as(ctypes.POINTER(ctypes.c_int)),
                  arr.size, ctypes.byref(text))
        try:
            raw = ctypes.string_at(text) if text.value else b""
        finally:
            _lib.lib.hs_api_mem_free(text)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise HeadscopeError("the ids decode to bytes that are not UTF-8 (they cut a character)") from None

    def to_single_token(self, s):
        """The id of a string that is one token (TL's to_single_token)."""
        ids = self._encode(s, False)
        if len(ids) != 1:
            raise HeadscopeError("%r is %d tokens, not one" % (s, len(ids)))
        return int(ids[0])

    # -- runs -------------------------------------------------------------
    def _tokens(self, input):
        if isinstance(input, str) or (isinstance(input, (list, tuple)) and input and isinstance(input[0], str)):
            return self.to_tokens(input)
        t = np.asarray(input)
        if t.ndim == 1:
            t = t[None, :]
        if t.ndim != 2 or t.dtype.kind not in "iu" or t.size == 0:
            raise HeadscopeError("input must be a text, a list of texts, or integer token ids [batch, pos]; got "
                                 "%s %s" % (t.dtype, list(t.shape)))
        if t.shape[1] > self.cfg.n_ctx:
            raise HeadscopeError("%d tokens, more than the model's context of %d (n_ctx)"
                                 % (t.shape[1], self.cfg.n_ctx))
        if t.dtype.kind == "u" and t.max() >= 2**63:
            raise HeadscopeError("token id %d is outside the vocabulary [0, %d)" % (t.max(), self.cfg.d_vocab))
        return np.ascontiguousarray(t, dtype=np.int64)

    def _acts_for(self, b, t):
        a = self._acts
        if a is None or a.B < b or a.T < t:
            # a hook may still hold a view of the old activations: they are
            # freed when it lets go (the view keeps them alive)
            a = self._acts = _Acts(self._handle(), max(b, a.B if a else 0), max(t, a.T if a else 0))
        return a

    def _filters(self, names_filter):
        if names_filter is None:
            return []
        if isinstance(names_filter, str):
            return [names_filter]
        if callable(names_filter):
            names = [n for n in self._points if names_filter(n)]
            return names if names else ["?" + "\x01none"]
        names = list(names_filter)
        if not all(isinstance(n, str) for n in names):
            raise HeadscopeError("names_filter is None, a name, a list of names or a function of a name")
        return names if names else ["?" + "\x01none"]

    def _run(self, input, filters, fwd_hooks):
        h = self._handle()
        tokens = self._tokens(input)
        b, t = tokens.shape
        acts = self._acts_for(b, t)
        patterns, fns = [], []
        for item in fwd_hooks or []:
            if not (isinstance(item, (tuple, list)) and len(item) == 2 and callable(item[1])):
                raise HeadscopeError("fwd_hooks holds (name or filter, function) pairs, got %r" % (item,))
            name, fn = item
            if callable(name):
                for p in self._points:
                    if name(p):
                        patterns.append(p)
                        fns.append(fn)
            elif isinstance(name, str):
                patterns.append(name)
                fns.append(fn)
            else:
                raise HeadscopeError("a hook's point is a name or a function of a name, got %r" % (name,))
        state = {"exc": None}

        def trampoline(cname, shape, ndim, data, ctx):
            try:
                return _call_hook(fns[ctx or 0], cname.decode(), [shape[i] for i in range(ndim)], data, acts)
            except BaseException as e:  # a Python error must not unwind through C
                state["exc"] = e
                return -1

        cb = _lib.HOOK_FN(trampoline) if fns else ctypes.cast(None, _lib.HOOK_FN)
        fil, _keep1 = _lib.str_array(filters)
        pat, _keep2 = _lib.str_array(patterns)
        ctxs = (ctypes.c_void_p * max(1, len(fns)))(*range(len(fns)))
        out = ctypes.c_void_p()
        err = _lib.HsError()
        st = _lib.lib.hs_api_run(h, acts.ptr, tokens.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)), b, t,
                                 fil, len(filters), pat, len(patterns), cb, ctxs, self._spare.take(),
                                 ctypes.byref(out), ctypes.byref(err))
        if state["exc"] is not None:
            raise state["exc"]
        if st != 0:
            raise HeadscopeError(err.msg.decode("utf-8", "replace"), st)
        return cache_arrays(out, self._spare)

    def __call__(self, input, return_type="logits"):
        """The logits of a run: float32 [batch, pos, d_vocab]. input: a text,
        a list of texts (to_tokens), or token ids [batch, pos] / [pos]."""
        return self.run_with_hooks(input, fwd_hooks=[], return_type=return_type)

    forward = __call__

    def run_with_cache(self, input, names_filter=None, fwd_hooks=None, return_type="logits"):
        """(logits, ActivationCache) of one run: every hook point, or those
        names_filter keeps (a name or pattern, a list of them, or a function of
        a name). fwd_hooks (as run_with_hooks) run first at each point: the
        cache holds the values after them. The arrays are views of the
        library's buffers (no copy); a name matching no point of the model is
        a HeadscopeError naming it."""
        _return_type(return_type)
        filters = self._filters(names_filter)
        want_logits = not filters or "logits" in filters or "unembed.hook_out" in filters
        arrays = self._run(input, filters + ([] if want_logits else ["logits"]), fwd_hooks)
        logits = arrays["logits"]
        if not want_logits:
            del arrays["logits"]
        return (logits if return_type == "logits" else None), ActivationCache(arrays, self)

    def run_with_hooks(self, input, fwd_hooks=(), return_type="logits"):
        """The logits of a run with hooks: fwd_hooks is a list of (name, fn)
        pairs, name a hook point (or a pattern, `*` within a dotted part, `**`
        across them) or a function of a point's name; fn(activation, hook) is
        called with the point's value, a float32 view of the library's buffer
        [batch, pos, ...] valid during the call (copy it to keep it), and
        hook.name. An in-place edit changes the run; so does returning a
        float32 array of the activation's shape. A wrong shape or dtype, or a
        name matching no point, is a HeadscopeError; an exception in fn stops
        the run and is raised as it is. A hook may not run the model it hooks."""
        _return_type(return_type)
        logits = self._run(input, ["logits"], fwd_hooks)["logits"]
        return logits if return_type == "logits" else None

    # -- weights ----------------------------------------------------------
    def _tensor(self, name):
        h = self._handle()
        nd = ctypes.c_int()
        shape = (ctypes.c_int64 * 3)()
        _lib.call(_lib.lib.hs_api_tensor_shape, h, _lib.enc(name), ctypes.byref(nd), shape)
        out = np.empty([shape[i] for i in range(nd.value)], np.float32)
        _lib.call(_lib.lib.hs_api_tensor_copy, h, _lib.enc(name),
                  out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), out.size)
        return out

    def get_weight(self, name):
        """A tensor by its TransformerLens state-dict name
        ("blocks.0.attn.W_Q", "ln_final.w", ...), as a float32 copy."""
        return self._tensor(name)

    @property
    def state_dict_names(self):
        h = self._handle()
        return [_lib.lib.hs_api_tensor_name(h, i).decode() for i in range(_lib.lib.hs_api_n_tensors(h))]

    def _weight(self, attr):
        if attr not in self._weights:
            name, per_layer = _WEIGHTS[attr]
            if per_layer:
                w = np.stack([self._tensor("blocks.%d.%s" % (l, name)) for l in range(self.cfg.n_layers)])
            else:
                w = self._tensor(name)
            w.setflags(write=False)
            self._weights[attr] = w
        return self._weights[attr]

    @property
    def QK(self):
        """TL's QK circuit as a FactoredMatrix: A = W_Q [n_layers, n_heads,
        d_model, d_head], B = W_K transposed; model.QK[l, h].AB is the
        [d_model, d_model] product (biases ignored)."""
        return FactoredMatrix(self._weight("W_Q"), np.swapaxes(self._weight("W_K"), -1, -2))

    @property
    def OV(self):
        """TL's OV circuit as a FactoredMatrix: A = W_V, B = W_O;
        model.OV[l, h].AB is W_V[l, h] @ W_O[l, h], [d_model, d_model]."""
        return FactoredMatrix(self._weight("W_V"), self._weight("W_O"))


class FactoredMatrix:
    """A product A @ B kept as its factors (TL's FactoredMatrix, the part
    headscope needs): indexing slices the leading dimensions of both, AB
    makes the product, np.asarray(f) is AB."""

    def __init__(self, A, B):
        self.A, self.B = A, B

    def __getitem__(self, idx):
        return FactoredMatrix(self.A[idx], self.B[idx])

    @property
    def AB(self):
        return self.A @ self.B

    @property
    def shape(self):
        return self.A.shape[:-1] + self.B.shape[-1:]

    def __array__(self, dtype=None):
        return self.AB if dtype is None else self.AB.astype(dtype)

    def __repr__(self):
        return "FactoredMatrix(shape=%s)" % (self.shape,)


def _weight_property(attr):
    per_layer = _WEIGHTS[attr][1]
    doc = "%s as TransformerLens shapes it (%s), float32, read-only." % (
        attr, "stacked over layers: [n_layers, ...]" if per_layer else "one tensor")
    return property(lambda self: self._weight(attr), doc=doc)


for _a in _WEIGHTS:
    setattr(HookedTransformer, _a, _weight_property(_a))


def _return_type(rt):
    if rt not in ("logits", None):
        raise HeadscopeError("return_type is 'logits' or None, got %r" % (rt,))


def _call_hook(fn, name, shape, data, acts):
    """One Python hook at one point: 0 = unchanged (the registry still
    compares), 1 = changed, after checking what fn returned."""
    if name == "hook_tokens":
        # the library's token buffer lives for the call only: a copy, written back
        act = np.array(np.ctypeslib.as_array(data, tuple(shape)))
        r = fn(act, HookPoint(name))
        view = np.ctypeslib.as_array(data, tuple(shape))
        np.copyto(view, act if r is None else _checked(r, act, name))
        return 1
    act = c_view(acts, ctypes.cast(data, ctypes.c_void_p).value, shape)
    r = fn(act, HookPoint(name))
    if r is None:
        return 0
    if r is act:
        return 1
    np.copyto(act, _checked(r, act, name))
    return 1


def _checked(r, act, name):
    if not isinstance(r, np.ndarray):
        raise HeadscopeError("the hook at %s returned %s; it must return None or a float32 array %s"
                             % (name, type(r).__name__, list(act.shape)))
    if r.shape != act.shape or r.dtype != np.float32:
        raise HeadscopeError("the hook at %s returned %s %s; the point is float32 %s"
                             % (name, r.dtype, list(r.shape), list(act.shape)))
    return r


def load(path, process="raw", threads=0):
    """Loads a checkpoint as every headscope command does: a headscope or
    TransformerLens .safetensors (with its word list), or a Hugging Face GPT-2
    folder (config.json, model.safetensors and the tokenizer files).

    process="tl" applies TransformerLens' default weight processing (fold_ln,
    centring, fold_value_biases), as HookedTransformer.from_pretrained does;
    "raw" keeps the weights as stored. threads: worker threads (0 = every
    CPU); the numbers do not depend on it. Returns a HookedTransformer; the
    loader's notes are in model.notes. HeadscopeError with the library's
    message when the checkpoint cannot be loaded."""
    return HookedTransformer(path, process=process, threads=threads)
