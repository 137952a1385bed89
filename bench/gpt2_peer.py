#!/usr/bin/python3
"""bench/gpt2_peer.py -- the plain-PyTorch peer of bench/gpt2_speed.sh: a
GPT-2 forward written from the semantics of transformers'
models/gpt2/modeling_gpt2.py (Conv1D y = x W + b with W [in, out]; c_attn
split into q, k, v; scores / sqrt(d_head) (scale_attn_weights), causal mask,
softmax; gelu_new = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); LayerNorm
with config.json's layer_norm_epsilon; lm_head tied to wte when absent), in
float32, every intermediate kept (TransformerLens' run_with_cache: the
tensors stay referenced), on torch.set_num_threads(THREADS).

  gpt2_peer.py DIR --threads T [--runs R] [--ctx N] [--short N] [--patch IDS.jsonl]
               [--patch-timeout S]

Prints one JSON object: load_ms (model.safetensors read into tensors),
forward_short_ms (the cached forward at --short tokens, median of R),
forward_ctx_ms (at --ctx tokens, median of max(R // 2, 1)), and with --patch
(one {"ids": [...]} object a line for the clean prompt, then one for its
corrupted prompt, alternating; answer and wrong ids in "answer"/"wrong"):
patch_z_heads_ms, activation patching of hook_z by head (every position at
once; the clean value into the corrupted run, one batched run of all prompts
per head, TransformerLens' get_act_patch_attn_head_out_all_pos), and its
normalised logit difference per head; the heads done when it stops at
--patch-timeout seconds (patch_heads_done of n_layer x n_head).
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
        if k == "__metadata__" or ".attn.bias" in k or "masked_bias" in k:
            continue
        assert v["dtype"] == "F32", (k, v["dtype"])
        a, b = v["data_offsets"]
        t = torch.frombuffer(bytearray(raw[base + a:base + b]), dtype=torch.float32)
        wt[k[len("transformer."):] if k.startswith("transformer.") else k] = t.reshape(v["shape"])
    wt.setdefault("lm_head.weight", wt["wte.weight"])
    return cfg, wt


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def forward(cfg, wt, ids, hook=None):
    """logits [B, T, V] and the cache {name: tensor}; hook(name, t) may
    return a replacement (used for hook_z)."""
    eps, H, D = cfg.get("layer_norm_epsilon", 1e-5), cfg["n_head"], cfg["n_embd"]
    dh = D // H
    B, T = ids.shape
    cache = {}
    x = wt["wte.weight"][ids] + wt["wpe.weight"][:T]
    cache["hook_embed"] = x
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
    for layer in range(cfg["n_layer"]):
        p = "h.%d." % layer
        cache[p + "resid_pre"] = x
        h = torch.nn.functional.layer_norm(x, (D,), wt[p + "ln_1.weight"], wt[p + "ln_1.bias"], eps)
        qkv = h @ wt[p + "attn.c_attn.weight"] + wt[p + "attn.c_attn.bias"]
        q, k, v = (t.view(B, T, H, dh).transpose(1, 2) for t in qkv.split(D, dim=2))
        s = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
        s = s.masked_fill(mask, float("-inf"))
        pat = torch.softmax(s, dim=-1)
        z = pat @ v
        if hook is not None:
            z = hook(layer, z)
        cache.update({p + "q": q, p + "k": k, p + "v": v, p + "attn_scores": s, p + "pattern": pat,
                      p + "z": z})
        a = z.transpose(1, 2).reshape(B, T, D) @ wt[p + "attn.c_proj.weight"] + wt[p + "attn.c_proj.bias"]
        x = x + a
        cache[p + "attn_out"], cache[p + "resid_mid"] = a, x
        h = torch.nn.functional.layer_norm(x, (D,), wt[p + "ln_2.weight"], wt[p + "ln_2.bias"], eps)
        pre = h @ wt[p + "mlp.c_fc.weight"] + wt[p + "mlp.c_fc.bias"]
        post = gelu_new(pre)
        m = post @ wt[p + "mlp.c_proj.weight"] + wt[p + "mlp.c_proj.bias"]
        x = x + m
        cache.update({p + "mlp_pre": pre, p + "mlp_post": post, p + "mlp_out": m, p + "resid_post": x})
    h = torch.nn.functional.layer_norm(x, (D,), wt["ln_f.weight"], wt["ln_f.bias"], eps)
    logits = h @ wt["lm_head.weight"].T
    cache["ln_final"], cache["logits"] = h, logits
    return logits, cache


def median_ms(fn, runs):
    fn()
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(ts))


def patch_heads(cfg, wt, path, budget_s):
    rows = [json.loads(line) for line in open(path)]
    clean = torch.tensor([r["ids"] for r in rows[0::2]])
    corr = torch.tensor([r["ids"] for r in rows[1::2]])
    ans = torch.tensor([r["answer"] for r in rows[0::2]])
    wrong = torch.tensor([r["wrong"] for r in rows[0::2]])

    def ld(logits):
        last = logits[:, -1]
        return (last.gather(1, ans[:, None]) - last.gather(1, wrong[:, None])).mean().item()

    t0 = time.perf_counter()
    with torch.no_grad():
        lc, cc = forward(cfg, wt, clean)
        lx, _ = forward(cfg, wt, corr)
        base, top = ld(lx), ld(lc)
        out = np.zeros((cfg["n_layer"], cfg["n_head"]))
        done = 0
        for layer in range(cfg["n_layer"]):
            for h in range(cfg["n_head"]):
                if time.perf_counter() - t0 > budget_s:
                    break
                def hook(li, z, layer=layer, h=h):
                    if li != layer:
                        return z
                    z = z.clone()
                    z[:, h] = cc["h.%d.z" % layer][:, h]
                    return z
                lp, _ = forward(cfg, wt, corr, hook)
                out[layer, h] = (ld(lp) - base) / (top - base)
                done += 1
    return (time.perf_counter() - t0) * 1e3, len(rows) // 2, done, out.round(4).tolist()


def main():
    folder = sys.argv[1]
    threads, runs = arg("--threads", 2), arg("--runs", 5)
    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    cfg, wt = load(folder)
    res = {"torch": torch.__version__, "threads": threads, "load_ms": (time.perf_counter() - t0) * 1e3}
    g = torch.Generator().manual_seed(0)
    short, ctx = arg("--short", 20), arg("--ctx", cfg["n_positions"])
    with torch.no_grad():
        ids = torch.randint(0, cfg["vocab_size"], (1, short), generator=g)
        res["forward_short_ms"] = median_ms(lambda: forward(cfg, wt, ids), runs)
        res["short_tokens"] = short
        ids = torch.randint(0, cfg["vocab_size"], (1, ctx), generator=g)
        res["forward_ctx_ms"] = median_ms(lambda: forward(cfg, wt, ids), max(runs // 2, 1))
        res["ctx_tokens"] = ctx
    if "--patch" in sys.argv:
        ms, n, done, out = patch_heads(cfg, wt, arg("--patch", ""), arg("--patch-timeout", 1e9))
        res.update({"patch_z_heads_ms": ms, "patch_prompts": n, "patch_heads_done": done,
                    "patch_z_heads": out})
    print(json.dumps(res))


if __name__ == "__main__":
    main()
