#!/usr/bin/python3
"""bench/family_peer.py -- the plain-PyTorch peer of bench/family_speed.sh: the
GPT-NeoX (Pythia) and Llama (SmolLM) forwards written from the semantics of
transformers' models/gpt_neox/modeling_gpt_neox.py and models/llama/
modeling_llama.py (tests/py/ref_family.py has the same formulas in float64):

  gpt_neox  h = embed_in[ids]; per layer: qkv = LN(h) query_key_value^T + b,
            viewed [T, H, 3 dh] (per head q|k|v); rotate_half rotary on the
            first int(dh rotary_pct) dims of q and k (inv_freq 1 /
            base^(2i/r)); scores / sqrt(dh), causal, softmax; attn = merge(w v)
            dense^T + b; use_parallel_residual: h = h + attn + mlp(LN2(h)),
            mlp = gelu(x W1^T + b1) W2^T + b2 (exact erf gelu);
            logits = LN(h) embed_out^T
  llama     h = embed_tokens[ids]; per layer: a = RMSNorm(h); q, k, v
            projections (k, v on num_key_value_heads heads, repeat_kv: query
            head j reads kv head j // (H / H_kv)); rotate_half rotary on the
            whole head (rope_theta); scores / sqrt(dh), causal, softmax;
            h += merge(w v) o_proj^T; h += down(silu(gate x) * up x) of
            RMSNorm(h); logits = RMSNorm(h) lm_head^T (tied: embed_tokens)

in float32, every intermediate kept (TransformerLens' run_with_cache: the
tensors stay referenced), on torch.set_num_threads(THREADS), one sequence of
--ctx random tokens (seeded).

  family_peer.py DIR --threads T [--runs R] [--ctx N]

Prints one JSON object: model_type, load_ms (model.safetensors read into
tensors), forward_ctx_ms (the cached forward at --ctx tokens, median of R
after one untimed run), ctx_tokens, threads, torch.
"""
import json
import math
import struct
import sys
import time

import numpy as np
import torch


def arg(name, default):
    return type(default)(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def load(folder):
    cfg = json.load(open(folder + "/config.json"))
    with open(folder + "/model.safetensors", "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    hdr = json.loads(raw[8:8 + n])
    base = 8 + n
    wt = {}
    for k, v in hdr.items():
        if k == "__metadata__" or k.endswith("attention.bias") or "masked_bias" in k or "inv_freq" in k:
            continue
        assert v["dtype"] == "F32", (k, v["dtype"])
        a, b = v["data_offsets"]
        wt[k] = torch.frombuffer(bytearray(raw[base + a:base + b]), dtype=torch.float32).reshape(v["shape"])
    return cfg, wt


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rope(T, dim, base):
    inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    f = torch.outer(torch.arange(T, dtype=torch.float32), inv)
    e = torch.cat((f, f), dim=-1)
    return e.cos(), e.sin()


def attend(q, k, v, mask, cache, p):
    """q [H, T, dh], k/v [H, T, dh] (already repeated): the pattern and z."""
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    s = s.masked_fill(mask, float("-inf"))
    pat = torch.softmax(s, dim=-1)
    z = pat @ v
    cache[p + "attn_scores"], cache[p + "pattern"], cache[p + "z"] = s, pat, z
    return z


def forward_neox(cfg, wt, ids, cache):
    D, H, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg.get("layer_norm_eps", 1e-5)
    dh, T = D // H, len(ids)
    r = int(dh * cfg.get("rotary_pct", 0.25))
    cos, sin = rope(T, r, cfg.get("rotary_emb_base", 10000))
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    ln = torch.nn.functional.layer_norm
    x = wt["gpt_neox.embed_in.weight"][ids]
    for layer in range(cfg["num_hidden_layers"]):
        p = "gpt_neox.layers.%d." % layer
        cache[p + "resid_pre"] = x
        a = ln(x, (D,), wt[p + "input_layernorm.weight"], wt[p + "input_layernorm.bias"], eps)
        qkv = (a @ wt[p + "attention.query_key_value.weight"].T + wt[p + "attention.query_key_value.bias"])
        qkv = qkv.view(T, H, 3 * dh).transpose(0, 1)
        q, k, v = qkv[..., :dh], qkv[..., dh:2 * dh], qkv[..., 2 * dh:]
        q = torch.cat((q[..., :r] * cos + rotate_half(q[..., :r]) * sin, q[..., r:]), dim=-1)
        k = torch.cat((k[..., :r] * cos + rotate_half(k[..., :r]) * sin, k[..., r:]), dim=-1)
        cache[p + "q"], cache[p + "k"], cache[p + "v"] = q, k, v
        z = attend(q, k, v, mask, cache, p)
        ao = z.transpose(0, 1).reshape(T, D) @ wt[p + "attention.dense.weight"].T + wt[p + "attention.dense.bias"]
        m = ln(x, (D,), wt[p + "post_attention_layernorm.weight"], wt[p + "post_attention_layernorm.bias"], eps)
        pre = m @ wt[p + "mlp.dense_h_to_4h.weight"].T + wt[p + "mlp.dense_h_to_4h.bias"]
        post = torch.nn.functional.gelu(pre)
        mo = post @ wt[p + "mlp.dense_4h_to_h.weight"].T + wt[p + "mlp.dense_4h_to_h.bias"]
        cache[p + "attn_out"], cache[p + "mlp_pre"], cache[p + "mlp_post"], cache[p + "mlp_out"] = ao, pre, post, mo
        x = x + ao + mo  # use_parallel_residual (main() refuses the sequential form)
    x = ln(x, (D,), wt["gpt_neox.final_layer_norm.weight"], wt["gpt_neox.final_layer_norm.bias"], eps)
    return x @ wt["embed_out.weight"].T


def rms(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def forward_llama(cfg, wt, ids, cache):
    D, H = cfg["hidden_size"], cfg["num_attention_heads"]
    kv, eps = cfg.get("num_key_value_heads") or H, cfg.get("rms_norm_eps", 1e-6)
    dh, T = cfg.get("head_dim") or D // H, len(ids)
    cos, sin = rope(T, dh, cfg.get("rope_theta", 10000.0))
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    x = wt["model.embed_tokens.weight"][ids]
    for layer in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % layer
        cache[p + "resid_pre"] = x
        a = rms(x, wt[p + "input_layernorm.weight"], eps)
        q = (a @ wt[p + "self_attn.q_proj.weight"].T).view(T, H, dh).transpose(0, 1)
        k = (a @ wt[p + "self_attn.k_proj.weight"].T).view(T, kv, dh).transpose(0, 1)
        v = (a @ wt[p + "self_attn.v_proj.weight"].T).view(T, kv, dh).transpose(0, 1)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        cache[p + "q"], cache[p + "k"], cache[p + "v"] = q, k, v
        g = H // kv
        z = attend(q, k.repeat_interleave(g, dim=0), v.repeat_interleave(g, dim=0), mask, cache, p)
        ao = z.transpose(0, 1).reshape(T, H * dh) @ wt[p + "self_attn.o_proj.weight"].T
        x = x + ao
        cache[p + "attn_out"], cache[p + "resid_mid"] = ao, x
        m = rms(x, wt[p + "post_attention_layernorm.weight"], eps)
        pre, lin = m @ wt[p + "mlp.gate_proj.weight"].T, m @ wt[p + "mlp.up_proj.weight"].T
        post = torch.nn.functional.silu(pre) * lin
        mo = post @ wt[p + "mlp.down_proj.weight"].T
        cache[p + "mlp_pre"], cache[p + "mlp_pre_linear"], cache[p + "mlp_post"], cache[p + "mlp_out"] = \
            pre, lin, post, mo
        x = x + mo
    x = rms(x, wt["model.norm.weight"], eps)
    U = wt.get("lm_head.weight", wt["model.embed_tokens.weight"])
    return x @ U.T


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    folder, threads, runs, ctx = sys.argv[1], arg("--threads", 2), arg("--runs", 5), arg("--ctx", 1024)
    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    cfg, wt = load(folder)
    load_ms = (time.perf_counter() - t0) * 1e3
    kind = cfg["model_type"]
    assert kind in ("gpt_neox", "llama"), kind
    if kind == "gpt_neox":
        assert cfg.get("use_parallel_residual", True), "the peer writes the parallel residual only"
    fwd = forward_neox if kind == "gpt_neox" else forward_llama
    ids = torch.from_numpy(np.random.default_rng(0).integers(0, cfg["vocab_size"], ctx))
    ms = []
    with torch.no_grad():
        for r in range(runs + 1):
            cache = {}
            t0 = time.perf_counter()
            logits = fwd(cfg, wt, ids, cache)
            cache["logits"] = logits
            if r > 0:
                ms.append((time.perf_counter() - t0) * 1e3)
            assert torch.isfinite(logits).all()
            del cache, logits
    print(json.dumps({"model_type": kind, "torch": torch.__version__, "threads": threads, "load_ms": load_ms,
                      "ctx_tokens": ctx, "runs": runs, "forward_ctx_ms": float(np.median(ms))}))


if __name__ == "__main__":
    main()
