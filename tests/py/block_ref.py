#!/usr/bin/python3
"""tests/py/block_ref.py -- an independent float64 reference of the model
core's block switches, compared with headscope's numbers.

usage: block_ref.py DIR

DIR is `test_block --dump DIR`'s output (tests/test_block.c): per case a
random model's checkpoint, every forward point and the backward to the points
of the mean cross-entropy (CASE.acts.safetensors, "grad:<point>"), and every
parameter's gradient (CASE.grads.safetensors, hs_backward on a batch it
splits into parts).

The model is written here from the semantics the switches name, not from
headscope's code:
  - TransformerLens' HookedTransformer block and hook points (row vectors,
    x @ W; split q/k/v inputs; LN's hook_scale = sqrt(var + eps),
    hook_normalized = (x - mean) / scale before w, b);
  - gated_mlp: TL's GatedMLP, hook_pre = x @ W_gate, hook_pre_linear =
    x @ W_in + b_in, hook_post = act(hook_pre) * hook_pre_linear
    (Llama's down(silu(gate x) * up x));
  - parallel_attn_mlp: resid_post = resid_pre + attn_out + mlp_out, the MLP
    reading ln2(resid_pre) (TL, GPT-NeoX use_parallel_residual), no
    hook_resid_mid;
  - norm_place post: x = LN1(x + attn(x)), x = LN2(x + mlp(x)) (Vaswani et
    al. 2017), the attention and the MLP reading the residual unnormalised;
  - attn_replace: resid_mid = attn_out (no skip);
  - silu: x sigmoid(x); gelu: x Phi(x) (erf); gelu_new: the tanh form.
The forward runs twice from the same definition: in numpy float64 (every
point and the logits must match headscope's to numpy.allclose(rtol=1e-5,
atol=1e-5 x the array's largest magnitude), and in torch float64 with
autograd (the loss; every parameter's gradient to rtol 1e-4, atol 1e-4 x the
largest; every point's gradient to rtol 1e-5 as the forward's). Prints the
worst error per kind; exits 1 on a mismatch.
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch

torch.set_default_dtype(torch.float64)
FAILS = []
WORST = {}


def read_st(path):
    with open(path, "rb") as fh:
        n = struct.unpack("<Q", fh.read(8))[0]
        header = json.loads(fh.read(n))
        data = fh.read()
    header.pop("__metadata__", None)
    out = {}
    for name, info in header.items():
        s, e = info["data_offsets"]
        out[name] = np.frombuffer(data[s:e], dtype="<f4").astype(np.float64).reshape(info["shape"])
    return out


class NumpyOps:
    def const(self, a):
        return a

    def bcast(self, a, shape):
        return np.broadcast_to(a, shape).copy()

    def erf(self, x):
        return np.vectorize(math.erf)(x)

    def exp(self, x):
        return np.exp(x)

    def tanh(self, x):
        return np.tanh(x)

    def sqrt(self, x):
        return np.sqrt(x)

    def mean(self, x):
        return x.mean(-1, keepdims=True)

    def einsum(self, s, *a):
        return np.einsum(s, *a)

    def expand_heads(self, x, H):
        return np.repeat(x[:, :, None, :], H, axis=2)

    def clone(self, x):
        return x.copy()

    def softmax_causal(self, s):
        T = s.shape[-1]
        mask = np.triu(np.ones((T, T), dtype=bool), 1)
        s = np.where(mask, -np.inf, s)
        e = np.exp(s - s.max(-1, keepdims=True))
        return s, e / e.sum(-1, keepdims=True)

    def keep(self, x):
        return x


class TorchOps:
    def const(self, a):
        return torch.from_numpy(a)

    def bcast(self, a, shape):
        return a.expand(*shape).clone().requires_grad_(True) if not a.requires_grad else a.expand(*shape).clone()

    def erf(self, x):
        return torch.erf(x)

    def exp(self, x):
        return torch.exp(x)

    def tanh(self, x):
        return torch.tanh(x)

    def sqrt(self, x):
        return torch.sqrt(x)

    def mean(self, x):
        return x.mean(-1, keepdim=True)

    def einsum(self, s, *a):
        return torch.einsum(s, *a)

    def expand_heads(self, x, H):
        return x.unsqueeze(2).expand(-1, -1, H, -1).clone()

    def clone(self, x):
        return x.clone()

    def softmax_causal(self, s):
        T = s.shape[-1]
        s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
        return s, torch.softmax(s, -1)

    def keep(self, x):
        if x.requires_grad:
            x.retain_grad()
        return x


def act(ops, c, x):
    a = c["act"]
    if a == "gelu":
        return 0.5 * x * (1.0 + ops.erf(x / math.sqrt(2.0)))
    if a == "gelu_new":
        return 0.5 * x * (1.0 + ops.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    if a == "relu":
        return x * (x > 0)
    if a == "silu":
        return x / (1.0 + ops.exp(-x))
    raise ValueError(a)


def forward(ops, P, c, tok):
    """logits and every point {name: tensor} of the model of config c with
    parameters P (arrays or leaves), tokens tok [B, T]."""
    pts = {}

    def hook(name, x):
        pts[name] = ops.keep(x)
        return x

    def norm(x, prefix, points=True):
        """TL's LayerNorm / RMSNorm with its two points."""
        if c["norm"] == "layernorm":
            x = x - ops.mean(x)
        scale = ops.sqrt(ops.mean(x * x) + c["eps"])
        y = x / scale
        if points:
            hook(prefix + ".hook_scale", scale)
            hook(prefix + ".hook_normalized", y)
        if prefix + ".w" in P:
            y = y * P[prefix + ".w"]
        if prefix + ".b" in P:
            y = y + P[prefix + ".b"]
        return y

    def bias(x, name):
        return x + P[name] if name in P else x

    B, T = tok.shape
    H, L, M = c["n_heads"], c["n_layers"], c["d_mlp"]
    has_norm = c["norm"] != "none"
    post = c.get("norm_place", "pre") == "post"
    par = c.get("parallel_attn_mlp", False)
    replace = c.get("attn_replace", False)
    softmax = c["attn"] == "softmax"
    scale = c.get("attn_scale", math.sqrt(c["d_head"]))
    x = hook("hook_embed", P["embed.W_E"][tok])
    if c["pos"] == "learned":
        x = x + hook("hook_pos_embed", ops.bcast(P["pos_embed.W_pos"][:T], x.shape))
    for l in range(L):
        p = "blocks.%d." % l
        resid = hook(p + "hook_resid_pre", x)
        attn_in = hook(p + "hook_attn_in", ops.expand_heads(resid, H))
        proj = {}
        ln1_front = c["ln1"] and has_norm and not post
        if ln1_front:  # its points on resid_pre [B, T, .]; each head's input normalised on its own
            norm(resid, p + "ln1")
        for k in ("qkv" if softmax else "v"):
            xin = hook(p + "hook_%s_input" % k, ops.clone(attn_in))
            if ln1_front:
                xin = norm(xin, p + "ln1", points=False)
            proj[k] = bias(ops.einsum("bthd,hde->bthe", xin, P[p + "attn.W_" + k.upper()]), p + "attn.b_" + k.upper())
        if softmax:
            q = hook(p + "attn.hook_q", proj["q"])
            k_ = hook(p + "attn.hook_k", proj["k"])
        v = hook(p + "attn.hook_v", proj["v"])
        if softmax:
            s, pattern = ops.softmax_causal(ops.einsum("bqhe,bkhe->bhqk", q, k_) / scale)
            hook(p + "attn.hook_attn_scores", s)
        else:  # the causal average: 1 / (i + 1) for j <= i
            i = np.arange(T)
            pattern = ops.bcast(ops.const((i[None, :] <= i[:, None]) / (i[:, None] + 1.0)), (B, H, T, T))
        pattern = hook(p + "attn.hook_pattern", pattern)
        z = hook(p + "attn.hook_z", ops.einsum("bhqk,bkhe->bqhe", pattern, v))
        result = hook(p + "attn.hook_result", ops.einsum("bthe,hed->bthd", z, P[p + "attn.W_O"]))
        attn_out = hook(p + "hook_attn_out", bias(result.sum(2), p + "attn.b_O"))
        x = attn_out if replace else resid + attn_out
        if post and c["ln1"]:
            x = norm(x, p + "ln1")
        if M:
            if not par:
                x = hook(p + "hook_resid_mid", x)
            h = hook(p + "hook_mlp_in", ops.clone(resid if par else x))
            if has_norm and not post:
                h = norm(h, p + "ln2")
            if c.get("gated_mlp", False):
                pre = hook(p + "mlp.hook_pre", h @ P[p + "mlp.W_gate"])
                lin = hook(p + "mlp.hook_pre_linear", bias(h @ P[p + "mlp.W_in"], p + "mlp.b_in"))
                hid = hook(p + "mlp.hook_post", act(ops, c, pre) * lin)
            else:
                pre = hook(p + "mlp.hook_pre", bias(h @ P[p + "mlp.W_in"], p + "mlp.b_in"))
                hid = hook(p + "mlp.hook_post", act(ops, c, pre))
            out = hook(p + "hook_mlp_out", bias(hid @ P[p + "mlp.W_out"], p + "mlp.b_out"))
            x = x + out
            if post:
                x = norm(x, p + "ln2")
        x = hook(p + "hook_resid_post", x)
    if c["ln_final"] and has_norm:
        x = norm(x, "ln_final")
    x = hook("unembed.hook_in", x)
    logits = hook("logits", bias(x @ P["unembed.W_U"], "unembed.b_U"))
    return logits, pts


def close(kind, label, got, ref, rtol, floor=0.0):
    got, ref = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    if got.shape != ref.shape:
        FAILS.append("%s %s: shape %s, reference %s" % (kind, label, got.shape, ref.shape))
        return
    inf = np.isinf(ref)
    if (np.isinf(got) != inf).any() or (got[inf] != ref[inf]).any():
        FAILS.append("%s %s: -inf at other places" % (kind, label))
        return
    got, ref = np.where(inf, 0.0, got), np.where(inf, 0.0, ref)
    big = max(np.abs(ref).max(), floor / rtol, 1e-30)
    err = (np.abs(got - ref) / (rtol * np.abs(ref) + rtol * big)).max()  # 1 = allclose's bound
    if err >= WORST.get(kind, (0.0, ""))[0]:
        WORST[kind] = (err, label)
    if not np.allclose(got, ref, rtol=rtol, atol=rtol * big):
        FAILS.append("%s %s: max |diff| %.3e (largest |ref| %.3e)" % (kind, label, np.abs(got - ref).max(), big))


def check_case(d, case):
    name, c = case["name"], case["config"]
    B = case["batch"]
    tok = np.array(case["tokens"]).reshape(B, -1)
    tgt = np.array(case["targets"]).reshape(B, -1)
    W = read_st(os.path.join(d, name + ".safetensors"))
    A = read_st(os.path.join(d, name + ".acts.safetensors"))
    G = read_st(os.path.join(d, name + ".grads.safetensors"))

    # the numpy forward: every point headscope cached
    logits, pts = forward(NumpyOps(), W, c, tok)
    n_pts = 0
    for k, got in A.items():
        if k.startswith("grad:") or k == "hook_tokens":
            continue
        if k not in pts:
            FAILS.append("%s: headscope has a point %s the reference does not" % (name, k))
            continue
        ref = pts[k]
        if k.endswith("hook_attn_scores"):  # the dump holds the masked -inf as 0
            ref = np.where(np.isinf(ref), 0.0, ref)
        close("forward", name + " " + k, got, ref, 1e-5)
        n_pts += 1
    missing = [k for k in pts if k not in A]
    if missing:
        FAILS.append("%s: the reference has points headscope did not offer: %s" % (name, missing[:4]))

    # torch autograd: the loss, every parameter's and every point's gradient
    P = {k: torch.from_numpy(v.copy()).requires_grad_(True) for k, v in W.items()}
    tl, tpts = forward(TorchOps(), P, c, torch.from_numpy(tok))
    valid = torch.from_numpy(tgt >= 0)
    lp = torch.log_softmax(tl, -1)
    picked = lp.gather(-1, torch.from_numpy(np.where(tgt >= 0, tgt, 0))[..., None])[..., 0]
    loss = -(picked * valid).sum() / valid.sum()
    loss.backward()
    close("loss", name, case["loss"], loss.item(), 1e-5)
    close("loss", name + " (fused forward)", case["loss_fused"], loss.item(), 1e-5)
    for k, v in P.items():
        # absolute floor 1e-7: b_K's gradient is 0 exactly (softmax ignores a
        # shift), headscope's float sums leave ~2e-8
        close("param grad", name + " " + k, G[k], v.grad.numpy(), 1e-4, floor=1e-7)
    n_grad = 0
    for k, got in A.items():
        if not k.startswith("grad:"):
            continue
        pt = k[5:]
        ref = tpts[pt].grad
        if ref is None:
            FAILS.append("%s: no torch gradient at %s" % (name, pt))
            continue
        close("point grad", name + " " + pt, got, ref.numpy(), 1e-5)
        n_grad += 1
    print("  %-24s %3d points, %2d parameter gradients, %3d point gradients, loss %.6f" %
          (name, n_pts, len(P), n_grad, loss.item()))


def main():
    d = sys.argv[1]
    dump = json.load(open(os.path.join(d, "block_dump.json")))
    for case in dump["cases"]:
        check_case(d, case)
    for kind, (err, label) in sorted(WORST.items()):
        print("worst %-10s %.3f of the tolerance (%s)" % (kind, err, label))
    if FAILS:
        print("\n".join(FAILS[:40]))
        print("%d mismatches" % len(FAILS))
        sys.exit(1)
    print("all %d cases agree" % len(dump["cases"]))


if __name__ == "__main__":
    main()
