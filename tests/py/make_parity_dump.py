#!/usr/bin/python3
"""
tests/py/make_parity_dump.py -- the PyTorch reference for tests/test_parity.c.

Builds headscope's architecture independently in PyTorch (TransformerLens
conventions: row vectors x @ W, W_Q/W_K/W_V [H, D, dh], W_O [H, dh, D],
LayerNorm (x - mean)/sqrt(var + eps)*w + b with eps 1e-5, RMSNorm
x/sqrt(mean x^2 + eps)*w, exact erf GELU, causal mask -inf, scores / sqrt(dh),
pre-norm blocks), for two tiny configs:

  data/parity_gpt2.bin      LayerNorm, GELU, biases, final LN, learned positions
  data/parity_microgpt.bin  RMSNorm (weight only), ReLU, no biases, RMSNorm
                            right after the embedding, no final norm

Random weights come from a fixed torch seed (drawn in float32, so the C test
starts from the very same numbers); the reference itself is computed in
float64, so the C model (float32) is compared with the exact answer.

Each dump holds: the config, tokens, targets (one -1 ignored), logits, the
mean cross-entropy over valid positions, every parameter ("param.<name>", in
the model's tensor-table order) and its gradient ("grad.<name>"), the losses
and pre-clip gradient norms of 5 torch.optim.AdamW steps (lr 1e-3, betas
0.9/0.999, eps 1e-8, weight decay 0.01 on matrices only, clip_grad_norm_ 1.0),
and every parameter after those steps ("final.<name>").

Format (little-endian): b"HSPARITY", u32 version (1), u32 record count; then
per record: u16 name length, name bytes, u8 ndim, ndim x u32 dims, float32
data (product of dims values; integers such as tokens are stored as floats).

Run with Debian's python3-torch:  /usr/bin/python3 tests/py/make_parity_dump.py
(from the repository root or anywhere; writes next to this file's ../data).
"""
import math
import os
import struct

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "..", "data")

# hs_config enums (model/model.h)
NORM = {"layernorm": 0, "rmsnorm": 1, "none": 2}
ACT = {"gelu": 0, "relu": 1}


def param_specs(c):
    """(name, shape, kind) in headscope's tensor-table order (model/model.c)."""
    L, D, H, dh, M, V, C = c["L"], c["D"], c["H"], c["dh"], c["M"], c["V"], c["n_ctx"]
    norm_b = c["norm"] == "layernorm" and c["bias"]
    s = [("embed.W_E", (V, D), "mat"), ("pos_embed.W_pos", (C, D), "mat")]
    if c["embed_norm"]:
        s.append(("ln_embed.w", (D,), "normw"))
        if norm_b:
            s.append(("ln_embed.b", (D,), "bias"))
    for l in range(L):
        p = "blocks.%d." % l
        s.append((p + "ln1.w", (D,), "normw"))
        if norm_b:
            s.append((p + "ln1.b", (D,), "bias"))
        for n in ("W_Q", "W_K", "W_V"):
            s.append((p + "attn." + n, (H, D, dh), "mat"))
        s.append((p + "attn.W_O", (H, dh, D), "mat"))
        if c["bias"]:
            for n in ("b_Q", "b_K", "b_V"):
                s.append((p + "attn." + n, (H, dh), "bias"))
            s.append((p + "attn.b_O", (D,), "bias"))
        s.append((p + "ln2.w", (D,), "normw"))
        if norm_b:
            s.append((p + "ln2.b", (D,), "bias"))
        s.append((p + "mlp.W_in", (D, M), "mat"))
        if c["bias"]:
            s.append((p + "mlp.b_in", (M,), "bias"))
        s.append((p + "mlp.W_out", (M, D), "mat"))
        if c["bias"]:
            s.append((p + "mlp.b_out", (D,), "bias"))
    if c["ln_final"]:
        s.append(("ln_final.w", (D,), "normw"))
        if norm_b:
            s.append(("ln_final.b", (D,), "bias"))
    s.append(("unembed.W_U", (D, V), "mat"))
    if c["bias"]:
        s.append(("unembed.b_U", (V,), "bias"))
    return s


def make_params(c, gen):
    params = {}
    for name, shape, kind in param_specs(c):
        r = torch.randn(shape, generator=gen, dtype=torch.float32)
        if kind == "mat":
            v = 0.4 * r
        elif kind == "normw":
            v = 1.0 + 0.2 * r
        else:
            v = 0.2 * r
        params[name] = v.to(torch.float64).requires_grad_(True)
    return params


def norm(x, P, prefix, c):
    eps = c["eps"]
    w = P[prefix + ".w"]
    if c["norm"] == "layernorm":
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        y = (x - mu) / torch.sqrt(var + eps) * w
        b = P.get(prefix + ".b")
        return y + b if b is not None else y
    y = x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)
    return y * w


def forward(P, tok, c):
    B, T = tok.shape
    H, dh = c["H"], c["dh"]
    x = P["embed.W_E"][tok] + P["pos_embed.W_pos"][:T].unsqueeze(0)
    if c["embed_norm"]:
        x = norm(x, P, "ln_embed", c)
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    for l in range(c["L"]):
        p = "blocks.%d." % l
        h = norm(x, P, p + "ln1", c)
        q = torch.einsum("btd,hde->bthe", h, P[p + "attn.W_Q"])
        k = torch.einsum("btd,hde->bthe", h, P[p + "attn.W_K"])
        v = torch.einsum("btd,hde->bthe", h, P[p + "attn.W_V"])
        if c["bias"]:
            q = q + P[p + "attn.b_Q"]
            k = k + P[p + "attn.b_K"]
            v = v + P[p + "attn.b_V"]
        scores = torch.einsum("bqhe,bkhe->bhqk", q, k) / math.sqrt(dh)
        scores = scores.masked_fill(mask, float("-inf"))
        pattern = torch.softmax(scores, dim=-1)
        z = torch.einsum("bhqk,bkhe->bqhe", pattern, v)
        attn_out = torch.einsum("bqhe,hed->bqd", z, P[p + "attn.W_O"])
        if c["bias"]:
            attn_out = attn_out + P[p + "attn.b_O"]
        x = x + attn_out
        h2 = norm(x, P, p + "ln2", c)
        pre = h2 @ P[p + "mlp.W_in"]
        if c["bias"]:
            pre = pre + P[p + "mlp.b_in"]
        post = F.gelu(pre) if c["act"] == "gelu" else F.relu(pre)  # F.gelu default = exact erf
        mlp_out = post @ P[p + "mlp.W_out"]
        if c["bias"]:
            mlp_out = mlp_out + P[p + "mlp.b_out"]
        x = x + mlp_out
    if c["ln_final"]:
        x = norm(x, P, "ln_final", c)
    logits = x @ P["unembed.W_U"]
    if c["bias"]:
        logits = logits + P["unembed.b_U"]
    return logits


def loss_fn(logits, tgt):
    V = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1), ignore_index=-1)


class Dump:
    def __init__(self):
        self.records = []

    def add(self, name, t):
        t = torch.as_tensor(t).detach().to(torch.float32).contiguous()
        shape = tuple(t.shape) if t.dim() > 0 else (1,)
        self.records.append((name, shape, t.reshape(-1).tolist()))

    def write(self, path):
        out = bytearray(b"HSPARITY")
        out += struct.pack("<II", 1, len(self.records))
        for name, shape, vals in self.records:
            nb = name.encode()
            out += struct.pack("<H", len(nb)) + nb
            out += struct.pack("<B", len(shape))
            out += struct.pack("<%dI" % len(shape), *shape)
            out += struct.pack("<%df" % len(vals), *vals)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(out)
        return len(out)


def make_dump(c, seed, path):
    gen = torch.Generator().manual_seed(seed)
    P = make_params(c, gen)
    B, T, V = c["B"], c["T"], c["V"]
    tok = torch.randint(0, V, (B, T), generator=gen)
    tgt = torch.randint(0, V, (B, T), generator=gen)
    tgt[1, 2] = -1  # one ignored position

    d = Dump()
    cfg_vals = [c["L"], c["D"], c["H"], c["dh"], c["M"], c["n_ctx"], V, NORM[c["norm"]],
                c["eps"], ACT[c["act"]], 0, 0, 1, int(c["ln_final"]), int(c["embed_norm"]),
                int(c["bias"]), B, T]
    # n_layers d_model n_heads d_head d_mlp n_ctx d_vocab norm eps act pos(learned)
    # attn(softmax) ln1 ln_final embed_norm bias B T
    d.add("config", torch.tensor(cfg_vals, dtype=torch.float64))
    d.add("tokens", tok)
    d.add("targets", tgt)

    logits = forward(P, tok, c)
    loss = loss_fn(logits, tgt)
    loss.backward()
    d.add("logits", logits)
    d.add("loss", loss)
    names = [n for n, _, _ in param_specs(c)]
    for n in names:
        d.add("param." + n, P[n])
    for n in names:
        d.add("grad." + n, P[n].grad)

    # 5 AdamW steps on the same batch, weight decay on matrices only.
    for n in names:
        P[n].grad = None
    decay = [P[n] for n in names if n.split(".")[-1].startswith("W_")]
    no_decay = [P[n] for n in names if not n.split(".")[-1].startswith("W_")]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    losses, norms = [], []
    for _ in range(5):
        opt.zero_grad()
        l = loss_fn(forward(P, tok, c), tgt)
        l.backward()
        gn = torch.nn.utils.clip_grad_norm_([P[n] for n in names], 1.0)
        opt.step()
        losses.append(l.item())
        norms.append(float(gn))
    d.add("step_losses", torch.tensor(losses, dtype=torch.float64))
    d.add("step_grad_norms", torch.tensor(norms, dtype=torch.float64))
    for n in names:
        d.add("final." + n, P[n])
    size = d.write(path)
    print("%s: %d bytes, loss %.6f, step losses %s, grad norms %s" % (
        os.path.relpath(path), size, loss.item(), ["%.6f" % x for x in losses],
        ["%.3f" % x for x in norms]))


def main():
    torch.set_default_dtype(torch.float64)
    base = dict(L=2, D=16, H=2, dh=8, M=32, V=11, n_ctx=6, B=3, T=6, eps=1e-5)
    gpt2 = dict(base, norm="layernorm", act="gelu", bias=True, ln_final=True, embed_norm=False)
    micro = dict(base, norm="rmsnorm", act="relu", bias=False, ln_final=False, embed_norm=True)
    make_dump(gpt2, 1234, os.path.join(OUT_DIR, "parity_gpt2.bin"))
    make_dump(micro, 4321, os.path.join(OUT_DIR, "parity_microgpt.bin"))


if __name__ == "__main__":
    main()
