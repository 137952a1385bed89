#!/usr/bin/python3
"""Two independent float64 forwards of headscope's attention switches -- numpy
(rotary as Meta's Llama reference writes it: each rotated pair a complex
number times e^(i p f)) and torch (transformers' rotate_half and GPT-J's
rotate_every_two) -- and torch's autograd (tests/test_attn_torch.sh).

For each case in DIR/cases.txt (written by `test_attn_switches --dump DIR`)
it reads the checkpoint DIR/<case>.safetensors (weights, and the config under
TransformerLens' HookedTransformerConfig names in its metadata) and the dump
DIR/<case>.dump.safetensors (tokens, targets, headscope's attention points,
logits, parameter gradients and the gradients at the points), rebuilds the
model in torch float64 from the papers' and transformers' modelling code:

  - rotary (Su et al. 2021): transformers' rotate_half form, q * cos +
    rotate_half(q) * sin on the first rotary_dim dims (GPT-NeoX's
    rotary_ndims, Llama's whole head), inv_freq = 1 / base^(arange(0, rd, 2)
    / rd); GPT-J's rotate_every_two for adjacent pairs (sin, cos
    repeat_interleave(2)); Llama 3's rope_scaling from
    _compute_llama3_parameters (torch.where on wavelengths);
  - sinusoidal (Vaswani et al. 2017, 3.5): PE[p, 2i] = sin(p / 10000^(2i/D)),
    PE[p, 2i+1] = cos(...), added to the embedding;
  - ALiBi (Press et al. 2022): their get_slopes (the recursive
    interpolation for H not a power of two), bias slope * (j - i) added to
    the scaled scores before the causal mask (TransformerLens);
  - grouped-query attention: transformers' repeat_kv (query head h reads
    key/value head h // (H / H_kv));
  - local attention (GPT-Neo): key j visible from query i when
    0 <= i - j < window_size;

and checks (against the numpy forward, which must agree with the torch one)
headscope's hook_q/k/v, hook_rot_q/k, hook_attn_scores,
hook_pattern, hook_z, hook_result, hook_pos_embed and logits against it (numpy.allclose, rtol
1e-5, atol 1e-5 of the array's largest magnitude), the gradient of the mean
cross-entropy to every parameter against autograd, and the gradients at the
attention points (hs_backward_acts) against autograd at the same tensors.
Prints one line per case; exits 1 on the first disagreement.

Usage: attn_ref.py DIR
"""
import json
import math
import struct
import sys

import numpy as np
import torch

torch.set_default_dtype(torch.float64)


def read_st(path):
    """A safetensors file: ({name: float64 array}, metadata)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    base = 8 + n
    out = {}
    for name, e in header.items():
        assert e["dtype"] == "F32", (name, e["dtype"])
        a, b = e["data_offsets"]
        out[name] = np.frombuffer(raw[base + a:base + b], dtype="<f4").astype(np.float64).reshape(e["shape"])
    return out, meta


def config_of(meta):
    tl = json.loads(meta["config"])
    hs = json.loads(meta.get("headscope_config", "{}") or "{}")
    c = {
        "L": tl["n_layers"], "D": tl["d_model"], "H": tl["n_heads"], "dh": tl["d_head"],
        "M": tl.get("d_mlp") or 0, "V": tl["d_vocab"], "eps": tl.get("eps", 1e-5),
        "act": tl.get("act_fn", "gelu"), "norm": tl.get("normalization_type", "LN"),
        "scale": tl.get("attn_scale", math.sqrt(tl["d_head"])),
        "pos": {"standard": "learned", "rotary": "rotary", "alibi": "alibi"}[tl.get("positional_embedding_type", "standard")],
        "rd": tl.get("rotary_dim", tl["d_head"]), "base": tl.get("rotary_base", 10000.0),
        "adjacent": tl.get("rotary_adjacent_pairs", False),
        "ntk": tl.get("use_NTK_by_parts_rope", False),
        "ntk_factor": tl.get("NTK_by_parts_factor", 8.0), "ntk_low": tl.get("NTK_by_parts_low_freq_factor", 1.0),
        "ntk_high": tl.get("NTK_by_parts_high_freq_factor", 4.0), "ntk_ctx": tl.get("NTK_original_ctx_len", 8192),
        "Hkv": tl.get("n_key_value_heads") or tl["n_heads"],
        "local": [t == "local" for t in tl["attn_types"]] if tl.get("use_local_attn") else [False] * tl["n_layers"],
        "window": tl.get("window_size", 0),
    }
    if "pos" in hs:
        c["pos"] = hs["pos"]
    return c


# --- the position schemes, from the papers / transformers -------------------

def inv_freq_of(c):
    rd, base = c["rd"], c["base"]
    inv_freq = 1.0 / (base ** (torch.arange(0, rd, 2, dtype=torch.float64) / rd))
    if not c["ntk"]:
        return inv_freq
    # transformers modeling_rope_utils._compute_llama3_parameters
    factor, low, high, old = c["ntk_factor"], c["ntk_low"], c["ntk_high"], c["ntk_ctx"]
    low_freq_wavelen = old / low
    high_freq_wavelen = old / high
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium, smoothed, inv_freq_llama)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotate_every_two(x):  # GPT-J
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def apply_rotary(x, c):
    """x [B, T, h, dh]: the first rd dims rotated by position."""
    T, rd = x.shape[1], c["rd"]
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq_of(c))  # [T, rd/2]
    x_rot, x_pass = x[..., :rd], x[..., rd:]
    if c["adjacent"]:
        sin = torch.repeat_interleave(torch.sin(freqs), 2, dim=-1)[None, :, None, :]
        cos = torch.repeat_interleave(torch.cos(freqs), 2, dim=-1)[None, :, None, :]
        x_rot = x_rot * cos + rotate_every_two(x_rot) * sin
    else:
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = torch.cos(emb)[None, :, None, :], torch.sin(emb)[None, :, None, :]
        x_rot = x_rot * cos + rotate_half(x_rot) * sin
    return torch.cat((x_rot, x_pass), dim=-1)


def alibi_slopes(n):  # Press et al. (ofirpress/attention_with_linear_biases)
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][: n - closest]


def sinusoidal(T, D):
    pe = torch.zeros(T, D)
    pos = torch.arange(T, dtype=torch.float64)[:, None]
    div = 10000.0 ** (torch.arange(0, D, 2, dtype=torch.float64) / D)
    pe[:, 0::2] = torch.sin(pos / div)
    pe[:, 1::2] = torch.cos(pos / div)
    return pe


# --- the model --------------------------------------------------------------

def norm(x, w, b, c):
    if c["norm"] is None:
        return x
    if c["norm"] == "RMS":
        y = x / torch.sqrt((x * x).mean(-1, keepdim=True) + c["eps"])
    else:
        mu = x.mean(-1, keepdim=True)
        y = (x - mu) / torch.sqrt(((x - mu) ** 2).mean(-1, keepdim=True) + c["eps"])
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def act(x, c):
    if c["act"] == "relu":
        return torch.relu(x)
    if c["act"] == "gelu_new":
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def forward(P, c, tok, pts):
    """Logits [B, T, V]; pts gets every attention point (retained for grads)."""
    def g(name):
        return P.get(name)

    def keep(name, t):
        if not t.requires_grad:  # a table without parameters (sinusoidal)
            t.requires_grad_(True)
        t.retain_grad()
        pts[name] = t
        return t

    B, T = tok.shape
    x = P["embed.W_E"][tok]
    if c["pos"] == "learned":
        x = x + keep("hook_pos_embed", P["pos_embed.W_pos"][:T][None].expand(B, T, c["D"]).clone())
    elif c["pos"] == "sinusoidal":
        x = x + keep("hook_pos_embed", sinusoidal(T, c["D"])[None].expand(B, T, c["D"]).clone())
    H, Hkv, dh = c["H"], c["Hkv"], c["dh"]
    group = H // Hkv
    for l in range(c["L"]):
        pre = f"blocks.{l}."
        x = keep(pre + "hook_resid_pre", x)
        h = norm(x, g(pre + "ln1.w"), g(pre + "ln1.b"), c)
        q = torch.einsum("btd,hde->bthe", h, P[pre + "attn.W_Q"])
        k = torch.einsum("btd,hde->bthe", h, P[pre + "attn.W_K"])
        v = torch.einsum("btd,hde->bthe", h, P[pre + "attn.W_V"])
        if g(pre + "attn.b_Q") is not None:
            q, k, v = q + P[pre + "attn.b_Q"], k + P[pre + "attn.b_K"], v + P[pre + "attn.b_V"]
        q, k, v = keep(pre + "attn.hook_q", q), keep(pre + "attn.hook_k", k), keep(pre + "attn.hook_v", v)
        if c["pos"] == "rotary":
            q = keep(pre + "attn.hook_rot_q", apply_rotary(q, c))
            k = keep(pre + "attn.hook_rot_k", apply_rotary(k, c))
        # repeat_kv: query head h reads key/value head h // group
        kr = torch.repeat_interleave(k, group, dim=2)
        vr = torch.repeat_interleave(v, group, dim=2)
        scores = torch.einsum("bqhe,bkhe->bhqk", q, kr) / c["scale"]
        i = torch.arange(T)[:, None]
        j = torch.arange(T)[None, :]
        if c["pos"] == "alibi":
            slopes = torch.tensor(alibi_slopes(H))[:, None, None]
            scores = scores + slopes * (j - i)[None].double()
        masked = j > i
        if c["local"][l]:
            masked = masked | (i - j >= c["window"])
        scores = keep(pre + "attn.hook_attn_scores", scores.masked_fill(masked, float("-inf")))
        pattern = keep(pre + "attn.hook_pattern", torch.softmax(scores, dim=-1))
        z = keep(pre + "attn.hook_z", torch.einsum("bhqk,bkhe->bqhe", pattern, vr))
        result = keep(pre + "attn.hook_result", torch.einsum("bqhe,hed->bqhd", z, P[pre + "attn.W_O"]))
        out = result.sum(dim=2)
        if g(pre + "attn.b_O") is not None:
            out = out + P[pre + "attn.b_O"]
        x = x + out
        if c["M"] > 0:
            h2 = norm(x, g(pre + "ln2.w"), g(pre + "ln2.b"), c)
            m = act(h2 @ P[pre + "mlp.W_in"] + (P[pre + "mlp.b_in"] if g(pre + "mlp.b_in") is not None else 0), c)
            x = x + m @ P[pre + "mlp.W_out"] + (P[pre + "mlp.b_out"] if g(pre + "mlp.b_out") is not None else 0)
    x = norm(x, g("ln_final.w"), g("ln_final.b"), c)
    logits = x @ P["unembed.W_U"]
    if g("unembed.b_U") is not None:
        logits = logits + P["unembed.b_U"]
    return logits


WORST = [0.0]  # the largest |got - want| / max(|want|'s largest, floor) of a case


# --- the same model in numpy: rotary as complex multiplication ----------------

def np_rotary(x, c):
    """x [B, T, h, dh]: Meta's Llama reference form, each rotated pair a complex
    number times e^(i p f): pairs (2e, 2e+1) for adjacent pairs, (e, e + rd/2)
    for rotate-half."""
    T, rd = x.shape[1], c["rd"]
    f = inv_freq_of(c).numpy()
    rot = np.exp(1j * np.outer(np.arange(T), f))[None, :, None, :]  # [1, T, 1, rd/2]
    y = x.copy()
    if c["adjacent"]:
        z = (x[..., 0:rd:2] + 1j * x[..., 1:rd:2]) * rot
        y[..., 0:rd:2], y[..., 1:rd:2] = z.real, z.imag
    else:
        z = (x[..., : rd // 2] + 1j * x[..., rd // 2: rd]) * rot
        y[..., : rd // 2], y[..., rd // 2: rd] = z.real, z.imag
    return y


def np_norm(x, w, b, c):
    if c["norm"] is None:
        return x
    if c["norm"] == "RMS":
        y = x / np.sqrt((x * x).mean(-1, keepdims=True) + c["eps"])
    else:
        mu = x.mean(-1, keepdims=True)
        y = (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + c["eps"])
    return y * (w if w is not None else 1.0) + (b if b is not None else 0.0)


def np_act(x, c):
    if c["act"] == "relu":
        return np.maximum(x, 0.0)
    if c["act"] == "gelu_new":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def forward_np(W, c, tok):
    """(logits, {point: array}) in float64 numpy."""
    pts = {}
    B, T = tok.shape
    D, H, Hkv, dh = c["D"], c["H"], c["Hkv"], c["dh"]
    x = W["embed.W_E"][tok]
    if c["pos"] in ("learned", "sinusoidal"):
        if c["pos"] == "learned":
            pe = W["pos_embed.W_pos"][:T]
        else:  # Vaswani et al. 3.5
            p, i = np.arange(T)[:, None], np.arange(D // 2)[None, :]
            pe = np.zeros((T, D))
            pe[:, 0::2] = np.sin(p / 10000.0 ** (2 * i / D))
            pe[:, 1::2] = np.cos(p / 10000.0 ** (2 * i / D))
        pts["hook_pos_embed"] = np.broadcast_to(pe, (B, T, D))
        x = x + pe
    for l in range(c["L"]):
        pre = f"blocks.{l}."
        pts[pre + "hook_resid_pre"] = x
        h = np_norm(x, W.get(pre + "ln1.w"), W.get(pre + "ln1.b"), c)
        qkv = {}
        for n in "QKV":
            y = np.einsum("btd,hde->bthe", h, W[pre + "attn.W_" + n])
            if pre + "attn.b_" + n in W:
                y = y + W[pre + "attn.b_" + n]
            qkv[n] = pts[pre + "attn.hook_" + n.lower()] = y
        q, k, v = qkv["Q"], qkv["K"], qkv["V"]
        if c["pos"] == "rotary":
            q = pts[pre + "attn.hook_rot_q"] = np_rotary(q, c)
            k = pts[pre + "attn.hook_rot_k"] = np_rotary(k, c)
        kv = np.arange(H) // (H // Hkv)  # repeat_kv
        s = np.einsum("bqhe,bkhe->bhqk", q, k[:, :, kv]) / c["scale"]
        i, j = np.arange(T)[:, None], np.arange(T)[None, :]
        if c["pos"] == "alibi":
            s = s + np.array(alibi_slopes(H))[:, None, None] * (j - i)
        visible = (j <= i) & ((i - j < c["window"]) if c["local"][l] else True)
        s = pts[pre + "attn.hook_attn_scores"] = np.where(visible, s, -np.inf)
        e = np.exp(s - s.max(-1, keepdims=True))
        a = pts[pre + "attn.hook_pattern"] = e / e.sum(-1, keepdims=True)
        z = pts[pre + "attn.hook_z"] = np.einsum("bhqk,bkhe->bqhe", a, v[:, :, kv])
        r = pts[pre + "attn.hook_result"] = np.einsum("bqhe,hed->bqhd", z, W[pre + "attn.W_O"])
        x = x + r.sum(2) + W.get(pre + "attn.b_O", 0.0)
        if c["M"] > 0:
            h2 = np_norm(x, W.get(pre + "ln2.w"), W.get(pre + "ln2.b"), c)
            m = np_act(h2 @ W[pre + "mlp.W_in"] + W.get(pre + "mlp.b_in", 0.0), c)
            x = x + m @ W[pre + "mlp.W_out"] + W.get(pre + "mlp.b_out", 0.0)
    x = np_norm(x, W.get("ln_final.w"), W.get("ln_final.b"), c)
    return x @ W["unembed.W_U"] + W.get("unembed.b_U", 0.0), pts


def close(name, got, want, label, floor=0.0):
    got = np.asarray(got, dtype=np.float64)
    got = np.where(got <= -1e29, -np.inf, got)  # the dump's masked scores (-inf as -1e30)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        sys.exit(f"{label}: {name}: shape {got.shape} against the reference's {want.shape}")
    fin = np.isfinite(want)
    if not np.array_equal(fin, np.isfinite(got)) or not np.array_equal(got[~fin], want[~fin]):
        sys.exit(f"{label}: {name}: the masked (infinite) entries differ")
    big = np.abs(want[fin]).max() if fin.any() else 0.0
    if fin.any():
        WORST[0] = max(WORST[0], float(np.abs(got[fin] - want[fin]).max()) / max(big, floor, 1e-30))
    if not np.allclose(got[fin], want[fin], rtol=1e-5, atol=1e-5 * max(big, floor, 1e-30)):
        d = np.abs(got[fin] - want[fin]).max()
        sys.exit(f"{label}: {name}: differs from the float64 reference by up to {d:.3g} (largest |x| {big:.3g})")


def check(dirname, label):
    WORST[0] = 0.0
    W, meta = read_st(f"{dirname}/{label}.safetensors")
    dump, _ = read_st(f"{dirname}/{label}.dump.safetensors")
    c = config_of(meta)
    P = {k: torch.tensor(v, requires_grad=True) for k, v in W.items()}
    tok = torch.tensor(dump["tokens"].astype(np.int64))
    tgt = torch.tensor(dump["targets"].astype(np.int64))
    pts = {}
    logits = forward(P, c, tok, pts)
    # headscope's forward against the numpy one, which agrees with torch's
    np_logits, np_pts = forward_np(W, c, dump["tokens"].astype(np.int64))
    close("logits", dump["act.logits"], np_logits, label)
    close("torch logits", logits.detach().numpy(), np_logits, label + " (torch vs numpy)")
    n_act = 0
    for name, got in dump.items():
        if not name.startswith("act.") or name == "act.logits":
            continue
        point = name[4:]
        if point not in np_pts or point not in pts:
            sys.exit(f"{label}: headscope has {point}, the reference does not")
        close(point, got, np_pts[point], label)
        close(point, pts[point].detach().numpy(), np_pts[point], label + " (torch vs numpy)")
        n_act += 1
    for need in ["blocks.0.attn.hook_pattern", "blocks.0.attn.hook_k"] + (
            ["blocks.0.attn.hook_rot_q", "blocks.1.attn.hook_rot_k"] if c["pos"] == "rotary" else []) + (
            ["hook_pos_embed"] if c["pos"] in ("learned", "sinusoidal") else []):
        if "act." + need not in dump:
            sys.exit(f"{label}: headscope did not offer {need}")
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, c["V"]), tgt.reshape(-1))
    if abs(loss.item() - dump["loss"][0]) > 1e-5 * max(1.0, loss.item()):
        sys.exit(f"{label}: loss {dump['loss'][0]} against the reference's {loss.item()}")
    loss.backward()
    n_grad = 0
    # a gradient that is 0 in exact arithmetic (b_K's without rotary: it adds
    # a constant to a row of scores) is float rounding in headscope: measured
    # against the largest parameter gradient of the model
    gmax = max(np.abs(p.grad.numpy()).max() for p in P.values())
    for name, p in P.items():
        close("grad " + name, dump["grad." + name], p.grad.numpy(), label, floor=gmax)
        n_grad += 1
    n_dact = 0
    for name, got in dump.items():
        if not name.startswith("dact."):
            continue
        point = name[5:]
        if point not in pts or pts[point].grad is None:
            continue  # hook_attn_scores: headscope offers no gradient there
        g = pts[point].grad.numpy()
        if point.endswith("hook_pattern"):  # headscope's: dz v^T everywhere; autograd's: 0 where masked
            m = np.isfinite(pts[point.replace("hook_pattern", "hook_attn_scores")].detach().numpy())
            got, g = np.where(m, got, 0.0), np.where(m, g, 0.0)
        close("d " + point, got, g, label)
        n_dact += 1
    if n_dact == 0:
        sys.exit(f"{label}: no gradient at the attention points was compared")
    T = tok.shape[1]
    print(f"  {label:24s} T {T:2d}: {n_act} points, logits, loss, {n_grad} parameter gradients, "
          f"{n_dact} point gradients within 1e-5 (worst {WORST[0]:.1e} of the array's largest)")


def main(argv):
    dirname = argv[1]
    with open(f"{dirname}/cases.txt") as f:
        labels = [s.strip() for s in f if s.strip()]
    if len(labels) < 10:
        sys.exit(f"only {len(labels)} cases")
    for label in labels:
        check(dirname, label)
    print(f"{len(labels)} cases agree with the float64 reference")


if __name__ == "__main__":
    main(sys.argv)
