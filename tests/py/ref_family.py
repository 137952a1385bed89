#!/usr/bin/python3
"""Independent float64 forwards of the Hugging Face families headscope reads
(numpy only), for its tests: gpt_neo, gpt_neox, llama, qwen2, mistral.

Written from transformers' modeling files (around v4.48) and their config
classes, not from headscope's C:

  gpt_neo   (models/gpt_neo/modeling_gpt_neo.py, configuration_gpt_neo.py)
    h = wte[ids] + wpe[0..T)
    per layer l (attention_layers[l] "global" or "local", expanded from
    attention_types [[[types...], n], ...]):
      a = LN(h; ln_1);  q, k, v = a q_proj^T, a k_proj^T, a v_proj^T  (nn.Linear
      [out, in], no bias);  w = q k^T  (NO 1/sqrt(dh) scaling, GPTNeoSelfAttention
      ._attn); causal mask, and on a local layer also masked where
      i - j >= window_size (bias = tril ^ tril(bias, -window_size)); softmax;
      h += merge(w v) out_proj^T + out_proj.b
      h += act(LN(h; ln_2) c_fc^T + c_fc.b) c_proj^T + c_proj.b
    logits = LN(h; ln_f) lm_head^T   (tied to wte by default)
  gpt_neox  (models/gpt_neox/modeling_gpt_neox.py, configuration_gpt_neox.py)
    h = embed_in[ids]
    per layer: qkv = LN(h; input_layernorm) query_key_value^T + b, viewed
      [T, H, 3 dh]: head h's q, k, v are its dh-wide slices in that order (per
      head interleaved); rotary on the first rotary_ndims = int(dh rotary_pct)
      dims of q and k (rotate_half: the halves of those dims); w = q k^T /
      sqrt(dh); causal; softmax; attn = merge(w v) dense^T + dense.b
      use_parallel_residual: h = h + attn + mlp(LN(h; post_attention_layernorm))
      else: h = h + attn; h = h + mlp(LN(h; post_attention_layernorm))
      mlp(x) = act(x dense_h_to_4h^T + b) dense_4h_to_h^T + b
    logits = LN(h; final_layer_norm) embed_out^T
  llama / qwen2 / mistral (models/llama/modeling_llama.py, qwen2/, mistral/,
    modeling_rope_utils.py)
    h = embed_tokens[ids]
    per layer: a = RMS(h; input_layernorm);  q = a q_proj^T (+ b), k, v likewise
      with num_key_value_heads heads (qwen2: q/k/v biases always; llama: all
      four with attention_bias); rotary on all head_dim dims (rotate_half),
      inv_freq = 1 / rope_theta^(2i/d), rescaled by rope_scaling "llama3"
      (_compute_llama3_parameters); query head h reads key/value head
      h // (H / H_kv) (repeat_kv); w = q k^T / sqrt(head_dim); causal (mistral's
      sliding_window: also masked where i - j >= sliding_window); softmax;
      h += merge(w v) o_proj^T (+ b)
      h += (silu(x gate^T) * (x up^T)) down^T,  x = RMS(h; post_attention_layernorm)
    logits = RMS(h; norm) lm_head^T   (tied to embed_tokens when tie_word_embeddings)
  LN(x) = (x - mean) / sqrt(var + eps) w + b (biased variance);
  RMS(x) = x / sqrt(mean(x^2) + eps) w  (LlamaRMSNorm);
  gelu (exact erf), gelu_new / gelu_pytorch_tanh (tanh approximation), relu, silu.

forward() returns the values at the points TransformerLens names, one
sequence (no batch axis): hook_embed [T, D], hook_pos_embed [T, D] (gpt_neo),
blocks.l.hook_resid_pre [T, D], attn.hook_q [T, H, dh], attn.hook_k /
hook_v [T, H_kv, dh] (before rotary), attn.hook_rot_q / hook_rot_k (rotary
families: after it, the pass-through dims included), attn.hook_pattern
[H, T, T], attn.hook_z [T, H, dh], hook_attn_out [T, D], hook_resid_mid [T, D]
(sequential blocks only), mlp.hook_pre [T, M] (the gate product for gated
MLPs), mlp.hook_pre_linear [T, M] (gated: the up product), mlp.hook_post
[T, M], hook_mlp_out [T, D], hook_resid_post [T, D], logits [T, V].

`ref_family.py --check-torch` runs a second, torch float64 forward written
separately with torch's own operations (F.layer_norm, F.linear,
torch.baddbmm / bmm and masked_fill, F.silu, F.gelu) on random
folders of each family and compares every point.
"""
import math
import sys

import numpy as np

ACTS = {
    "gelu_new": lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3))),
    "gelu_pytorch_tanh": lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3))),
    "gelu": lambda x: 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0))),
    "relu": lambda x: np.maximum(x, 0.0),
    "silu": lambda x: x / (1.0 + np.exp(-x)),
}


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def rms_norm(x, w, eps):
    return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps) * w


def softmax_masked(w, visible):
    w = np.where(visible, w, -np.inf)
    w = np.exp(w - w.max(-1, keepdims=True))
    return w / w.sum(-1, keepdims=True)


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], -1)


def inv_freq(dim, base, scaling=None):
    """modeling_rope_utils: _compute_default_rope_parameters, and
    _compute_llama3_parameters for rope_type "llama3"."""
    f = 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    if not scaling:
        return f
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind == "default":
        return f
    assert kind == "llama3", kind
    factor, lo, hi = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old = scaling["original_max_position_embeddings"]
    lo_wl, hi_wl = old / lo, old / hi
    wl = 2 * math.pi / f
    out = np.where(wl > lo_wl, f / factor, f)
    smooth = (old / wl - lo) / (hi - lo)
    smoothed = (1 - smooth) * out / factor + smooth * out
    medium = ~(wl < hi_wl) & ~(wl > lo_wl)
    return np.where(medium, smoothed, out)


def rotary(x, n_rot, freqs):
    """x [T, heads, dh]: the first n_rot dims rotated (rotate_half), the rest kept."""
    T = x.shape[0]
    ang = np.arange(T, dtype=np.float64)[:, None] * freqs[None, :]
    emb = np.concatenate([ang, ang], -1)[:, None, :]  # [T, 1, n_rot]
    r = x[..., :n_rot]
    r = r * np.cos(emb) + rotate_half(r) * np.sin(emb)
    return np.concatenate([r, x[..., n_rot:]], -1)


def strip(wt, prefixes):
    out = {}
    for k, v in wt.items():
        for p in prefixes:
            if k.startswith(p):
                k = k[len(p):]
                break
        out[k] = v
    return out


def neo_layers(cfg):
    """GPTNeoConfig.expand_attention_types_params."""
    out = []
    for types, n in cfg["attention_types"]:
        for _ in range(n):
            out.extend(types)
    return out


def attend(q, k, v, scale, visible, groups):
    """q [T, H, dh], k / v [T, Hkv, dh]: pattern [H, T, T], z [T, H, dh]."""
    kk = np.repeat(k, groups, axis=1)  # repeat_kv: head h reads h // groups
    vv = np.repeat(v, groups, axis=1)
    w = np.einsum("ihd,jhd->hij", q, kk) * scale
    pat = softmax_masked(w, visible[None])
    z = np.einsum("hij,jhd->ihd", pat, vv)
    return pat, z


def forward(model_type, cfg, wt, ids):
    ids = np.asarray(ids)
    T = len(ids)
    causal = np.tril(np.ones((T, T), dtype=bool))
    diff = np.arange(T)[:, None] - np.arange(T)[None, :]
    out = {}
    if model_type == "gpt_neo":
        w = strip(wt, ["transformer."])
        D, H, L = cfg["hidden_size"], cfg["num_heads"], cfg["num_layers"]
        dh, eps = D // H, cfg.get("layer_norm_epsilon", 1e-5)
        act = ACTS[cfg.get("activation_function", "gelu_new")]
        kinds = neo_layers(cfg)
        out["hook_embed"] = w["wte.weight"][ids]
        out["hook_pos_embed"] = w["wpe.weight"][:T]
        h = out["hook_embed"] + out["hook_pos_embed"]
        for l in range(L):
            p, b = "h.%d." % l, "blocks.%d." % l
            out[b + "hook_resid_pre"] = h
            a = layer_norm(h, w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
            q, k, v = (a @ w[p + "attn.attention.%s_proj.weight" % n].T for n in "qkv")
            q, k, v = (x.reshape(T, H, dh) for x in (q, k, v))
            vis = causal & (diff < cfg.get("window_size", 256)) if kinds[l] == "local" else causal
            pat, z = attend(q, k, v, 1.0, vis, 1)
            ao = z.reshape(T, D) @ w[p + "attn.attention.out_proj.weight"].T + w[p + "attn.attention.out_proj.bias"]
            out.update({b + "attn.hook_q": q, b + "attn.hook_k": k, b + "attn.hook_v": v,
                        b + "attn.hook_pattern": pat, b + "attn.hook_z": z, b + "hook_attn_out": ao})
            h = h + ao
            out[b + "hook_resid_mid"] = h
            m = layer_norm(h, w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
            pre = m @ w[p + "mlp.c_fc.weight"].T + w[p + "mlp.c_fc.bias"]
            post = act(pre)
            mo = post @ w[p + "mlp.c_proj.weight"].T + w[p + "mlp.c_proj.bias"]
            out.update({b + "mlp.hook_pre": pre, b + "mlp.hook_post": post, b + "hook_mlp_out": mo})
            h = h + mo
            out[b + "hook_resid_post"] = h
        h = layer_norm(h, w["ln_f.weight"], w["ln_f.bias"], eps)
        U = w.get("lm_head.weight") if not cfg.get("tie_word_embeddings", True) else None
        out["logits"] = h @ (U if U is not None else w["wte.weight"]).T
        return out
    if model_type == "gpt_neox":
        w = strip(wt, ["gpt_neox."])
        D, H, L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
        dh, eps = D // H, cfg.get("layer_norm_eps", 1e-5)
        act = ACTS[cfg.get("hidden_act", "gelu")]
        n_rot = int(dh * cfg.get("rotary_pct", 0.25))
        freqs = inv_freq(n_rot, cfg.get("rotary_emb_base", 10000))
        out["hook_embed"] = w["embed_in.weight"][ids]
        h = out["hook_embed"]
        for l in range(L):
            p, b = "layers.%d." % l, "blocks.%d." % l
            out[b + "hook_resid_pre"] = h
            a = layer_norm(h, w[p + "input_layernorm.weight"], w[p + "input_layernorm.bias"], eps)
            qkv = a @ w[p + "attention.query_key_value.weight"].T
            if p + "attention.query_key_value.bias" in w:
                qkv = qkv + w[p + "attention.query_key_value.bias"]
            qkv = qkv.reshape(T, H, 3 * dh)
            q, k, v = qkv[..., :dh], qkv[..., dh:2 * dh], qkv[..., 2 * dh:]
            rq, rk = rotary(q, n_rot, freqs), rotary(k, n_rot, freqs)
            pat, z = attend(rq, rk, v, dh ** -0.5, causal, 1)
            ao = z.reshape(T, D) @ w[p + "attention.dense.weight"].T
            if p + "attention.dense.bias" in w:
                ao = ao + w[p + "attention.dense.bias"]
            out.update({b + "attn.hook_q": q, b + "attn.hook_k": k, b + "attn.hook_v": v,
                        b + "attn.hook_rot_q": rq, b + "attn.hook_rot_k": rk,
                        b + "attn.hook_pattern": pat, b + "attn.hook_z": z, b + "hook_attn_out": ao})
            parallel = cfg.get("use_parallel_residual", True)
            if not parallel:
                out[b + "hook_resid_mid"] = h + ao
            x = h if parallel else h + ao
            m = layer_norm(x, w[p + "post_attention_layernorm.weight"], w[p + "post_attention_layernorm.bias"], eps)
            pre = m @ w[p + "mlp.dense_h_to_4h.weight"].T + w[p + "mlp.dense_h_to_4h.bias"]
            post = act(pre)
            mo = post @ w[p + "mlp.dense_4h_to_h.weight"].T + w[p + "mlp.dense_4h_to_h.bias"]
            out.update({b + "mlp.hook_pre": pre, b + "mlp.hook_post": post, b + "hook_mlp_out": mo})
            h = h + ao + mo
            out[b + "hook_resid_post"] = h
        h = layer_norm(h, w["final_layer_norm.weight"], w["final_layer_norm.bias"], eps)
        U = w["embed_in.weight"] if cfg.get("tie_word_embeddings", False) else w["embed_out.weight"]
        out["logits"] = h @ U.T
        return out
    assert model_type in ("llama", "qwen2", "mistral"), model_type
    w = strip(wt, ["model."])
    D, H, L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
    Hkv = cfg.get("num_key_value_heads") or H
    dh = cfg.get("head_dim") or D // H
    eps = cfg.get("rms_norm_eps", 1e-6)
    act = ACTS[cfg.get("hidden_act", "silu")]
    n_rot = int(dh * cfg.get("partial_rotary_factor", 1.0))
    freqs = inv_freq(n_rot, cfg.get("rope_theta", 10000.0), cfg.get("rope_scaling"))
    vis = causal
    if model_type == "mistral" and cfg.get("sliding_window") is not None:
        vis = causal & (diff < cfg["sliding_window"])
    out["hook_embed"] = w["embed_tokens.weight"][ids]
    h = out["hook_embed"]
    for l in range(L):
        p, b = "layers.%d." % l, "blocks.%d." % l
        out[b + "hook_resid_pre"] = h
        a = rms_norm(h, w[p + "input_layernorm.weight"], eps)
        qkv = []
        for n, nh in (("q", H), ("k", Hkv), ("v", Hkv)):
            x = a @ w[p + "self_attn.%s_proj.weight" % n].T
            if p + "self_attn.%s_proj.bias" % n in w:
                x = x + w[p + "self_attn.%s_proj.bias" % n]
            qkv.append(x.reshape(T, nh, dh))
        q, k, v = qkv
        rq, rk = rotary(q, n_rot, freqs), rotary(k, n_rot, freqs)
        pat, z = attend(rq, rk, v, dh ** -0.5, vis, H // Hkv)
        ao = z.reshape(T, H * dh) @ w[p + "self_attn.o_proj.weight"].T
        if p + "self_attn.o_proj.bias" in w:
            ao = ao + w[p + "self_attn.o_proj.bias"]
        out.update({b + "attn.hook_q": q, b + "attn.hook_k": k, b + "attn.hook_v": v,
                    b + "attn.hook_rot_q": rq, b + "attn.hook_rot_k": rk,
                    b + "attn.hook_pattern": pat, b + "attn.hook_z": z, b + "hook_attn_out": ao})
        h = h + ao
        out[b + "hook_resid_mid"] = h
        m = rms_norm(h, w[p + "post_attention_layernorm.weight"], eps)
        pre = m @ w[p + "mlp.gate_proj.weight"].T
        lin = m @ w[p + "mlp.up_proj.weight"].T
        post = act(pre) * lin
        mo = post @ w[p + "mlp.down_proj.weight"].T
        out.update({b + "mlp.hook_pre": pre, b + "mlp.hook_pre_linear": lin, b + "mlp.hook_post": post,
                    b + "hook_mlp_out": mo})
        h = h + mo
        out[b + "hook_resid_post"] = h
    h = rms_norm(h, w["norm.weight"], eps)
    U = w["embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) else wt["lm_head.weight"]
    out["logits"] = h @ U.T
    return out


# ---------------------------------------------------------------------------
# A second forward in torch (float64), written with torch's own operations, to
# check the numpy one above.

def torch_forward(model_type, cfg, wt, ids):
    import torch
    import torch.nn.functional as F
    t = {k: torch.tensor(v, dtype=torch.float64) for k, v in wt.items()}
    T = len(ids)
    ids = torch.tensor(ids)
    pos = torch.arange(T, dtype=torch.float64)
    out = {}

    def rope(x, n_rot, freqs):  # x [T, heads, dh]; cos/sin over the duplicated frequencies
        ang = torch.outer(pos, freqs)
        cos, sin = torch.cat([ang, ang], -1).cos()[:, None], torch.cat([ang, ang], -1).sin()[:, None]
        r, keep = x[..., :n_rot], x[..., n_rot:]
        x1, x2 = r[..., :n_rot // 2], r[..., n_rot // 2:]
        return torch.cat([r * cos + torch.cat([-x2, x1], -1) * sin, keep], -1)

    def sdpa(q, k, v, mask, scale, groups):  # [T, heads, dh] -> pattern [heads, T, T], z [T, heads, dh]
        q, k, v = (x.transpose(0, 1) for x in (q, k, v))
        k = k.repeat_interleave(groups, 0)
        v = v.repeat_interleave(groups, 0)
        s = torch.baddbmm(torch.zeros(1, dtype=q.dtype), q, k.transpose(1, 2), beta=0.0, alpha=scale)
        pat = torch.softmax(s.masked_fill(~mask, float("-inf")), -1)
        return pat, torch.bmm(pat, v).transpose(0, 1)

    causal = torch.ones(T, T, dtype=torch.bool).tril()
    if model_type == "gpt_neo":
        g = {k[len("transformer."):] if k.startswith("transformer.") else k: v for k, v in t.items()}
        D, H, L = cfg["hidden_size"], cfg["num_heads"], cfg["num_layers"]
        dh = D // H
        eps = cfg.get("layer_norm_epsilon", 1e-5)
        kinds = neo_layers(cfg)
        act = {"gelu_new": lambda x: F.gelu(x, approximate="tanh"), "gelu": F.gelu, "relu": F.relu}[
            cfg.get("activation_function", "gelu_new")]
        h = F.embedding(ids, g["wte.weight"]) + g["wpe.weight"][:T]
        for l in range(L):
            p, b = "h.%d." % l, "blocks.%d." % l
            out[b + "hook_resid_pre"] = h
            a = F.layer_norm(h, (D,), g[p + "ln_1.weight"], g[p + "ln_1.bias"], eps)
            q, k, v = (F.linear(a, g[p + "attn.attention.%s_proj.weight" % n]).view(T, H, dh) for n in "qkv")
            mask = causal
            if kinds[l] == "local":
                mask = causal ^ torch.tril(causal, -cfg.get("window_size", 256))
            pat, z = sdpa(q, k, v, mask, 1.0, 1)
            ao = F.linear(z.reshape(T, D), g[p + "attn.attention.out_proj.weight"], g[p + "attn.attention.out_proj.bias"])
            out.update({b + "attn.hook_pattern": pat, b + "attn.hook_z": z, b + "hook_attn_out": ao})
            h = h + ao
            m = F.layer_norm(h, (D,), g[p + "ln_2.weight"], g[p + "ln_2.bias"], eps)
            mo = F.linear(act(F.linear(m, g[p + "mlp.c_fc.weight"], g[p + "mlp.c_fc.bias"])),
                          g[p + "mlp.c_proj.weight"], g[p + "mlp.c_proj.bias"])
            out[b + "hook_mlp_out"] = mo
            h = h + mo
            out[b + "hook_resid_post"] = h
        h = F.layer_norm(h, (D,), g["ln_f.weight"], g["ln_f.bias"], eps)
        U = g["lm_head.weight"] if not cfg.get("tie_word_embeddings", True) else g["wte.weight"]
        out["logits"] = F.linear(h, U)
    elif model_type == "gpt_neox":
        g = {k[len("gpt_neox."):] if k.startswith("gpt_neox.") else k: v for k, v in t.items()}
        D, H, L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
        dh = D // H
        eps = cfg.get("layer_norm_eps", 1e-5)
        n_rot = int(dh * cfg.get("rotary_pct", 0.25))
        base = cfg.get("rotary_emb_base", 10000)
        freqs = 1.0 / base ** (torch.arange(0, n_rot, 2, dtype=torch.float64) / n_rot)
        act = {"gelu_new": lambda x: F.gelu(x, approximate="tanh"), "gelu": F.gelu, "relu": F.relu}[
            cfg.get("hidden_act", "gelu")]
        h = F.embedding(ids, g["embed_in.weight"])
        for l in range(L):
            p, b = "layers.%d." % l, "blocks.%d." % l
            out[b + "hook_resid_pre"] = h
            a = F.layer_norm(h, (D,), g[p + "input_layernorm.weight"], g[p + "input_layernorm.bias"], eps)
            qkv = F.linear(a, g[p + "attention.query_key_value.weight"], g.get(p + "attention.query_key_value.bias"))
            q, k, v = qkv.view(T, H, 3 * dh).chunk(3, -1)
            pat, z = sdpa(rope(q, n_rot, freqs), rope(k, n_rot, freqs), v, causal, dh ** -0.5, 1)
            ao = F.linear(z.reshape(T, D), g[p + "attention.dense.weight"], g.get(p + "attention.dense.bias"))
            out.update({b + "attn.hook_pattern": pat, b + "attn.hook_z": z, b + "hook_attn_out": ao})
            x = h if cfg.get("use_parallel_residual", True) else h + ao
            m = F.layer_norm(x, (D,), g[p + "post_attention_layernorm.weight"],
                             g[p + "post_attention_layernorm.bias"], eps)
            mo = F.linear(act(F.linear(m, g[p + "mlp.dense_h_to_4h.weight"], g[p + "mlp.dense_h_to_4h.bias"])),
                          g[p + "mlp.dense_4h_to_h.weight"], g[p + "mlp.dense_4h_to_h.bias"])
            out[b + "hook_mlp_out"] = mo
            h = h + ao + mo
            out[b + "hook_resid_post"] = h
        h = F.layer_norm(h, (D,), g["final_layer_norm.weight"], g["final_layer_norm.bias"], eps)
        out["logits"] = F.linear(h, g["embed_in.weight"] if cfg.get("tie_word_embeddings", False)
                                 else g["embed_out.weight"])
    else:
        g = {k[len("model."):] if k.startswith("model.") else k: v for k, v in t.items()}
        D, H, L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
        Hkv = cfg.get("num_key_value_heads") or H
        dh = cfg.get("head_dim") or D // H
        eps = cfg.get("rms_norm_eps", 1e-6)
        base = cfg.get("rope_theta", 10000.0)
        freqs = 1.0 / base ** (torch.arange(0, dh, 2, dtype=torch.float64) / dh)
        sc = cfg.get("rope_scaling")
        if sc:  # llama3: per wavelength, kept (short), divided by factor (long), or blended
            wl = 2 * math.pi / freqs
            lo_wl = sc["original_max_position_embeddings"] / sc["low_freq_factor"]
            hi_wl = sc["original_max_position_embeddings"] / sc["high_freq_factor"]
            t_s = (sc["original_max_position_embeddings"] / wl - sc["low_freq_factor"]) / (
                sc["high_freq_factor"] - sc["low_freq_factor"])
            blended = (1 - t_s) * freqs / sc["factor"] + t_s * freqs
            freqs = torch.where(wl < hi_wl, freqs, torch.where(wl > lo_wl, freqs / sc["factor"], blended))
        mask = causal
        if model_type == "mistral" and cfg.get("sliding_window") is not None:
            mask = causal & ~torch.tril(causal, -cfg["sliding_window"])

        def rms(x, wgt):
            return wgt * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))

        h = F.embedding(ids, g["embed_tokens.weight"])
        for l in range(L):
            p, b = "layers.%d." % l, "blocks.%d." % l
            out[b + "hook_resid_pre"] = h
            a = rms(h, g[p + "input_layernorm.weight"])
            q, k, v = (F.linear(a, g[p + "self_attn.%s_proj.weight" % n], g.get(p + "self_attn.%s_proj.bias" % n))
                       .view(T, nh, dh) for n, nh in (("q", H), ("k", Hkv), ("v", Hkv)))
            pat, z = sdpa(rope(q, dh, freqs), rope(k, dh, freqs), v, mask, dh ** -0.5, H // Hkv)
            ao = F.linear(z.reshape(T, H * dh), g[p + "self_attn.o_proj.weight"], g.get(p + "self_attn.o_proj.bias"))
            out.update({b + "attn.hook_pattern": pat, b + "attn.hook_z": z, b + "hook_attn_out": ao})
            h = h + ao
            m = rms(h, g[p + "post_attention_layernorm.weight"])
            mo = F.linear(F.silu(F.linear(m, g[p + "mlp.gate_proj.weight"])) * F.linear(m, g[p + "mlp.up_proj.weight"]),
                          g[p + "mlp.down_proj.weight"])
            out[b + "hook_mlp_out"] = mo
            h = h + mo
            out[b + "hook_resid_post"] = h
        h = rms(h, g["norm.weight"])
        out["logits"] = F.linear(h, g["embed_tokens.weight"] if cfg.get("tie_word_embeddings", False)
                                 else g["lm_head.weight"])
    return {k: v.numpy() for k, v in out.items()}


def check_torch(outdir):
    """Every variant make_hf_family.py writes: the numpy forward against the
    torch one, at every point the torch one has; returns the worst relative
    difference."""
    import make_hf_family as mk
    worst = 0.0
    for name, spec in mk.VARIANTS.items():
        cfg, vals, ids, _ = mk.build(name, spec, np.random.default_rng(1))
        a = forward(cfg["model_type"], cfg, vals, ids)
        b = torch_forward(cfg["model_type"], cfg, vals, ids)
        for k, v in b.items():
            d = np.abs(a[k] - v).max() / max(1.0, np.abs(v).max())
            worst = max(worst, d)
            assert d < 1e-12, (name, k, d)
        print("  %-14s %d points agree (max rel diff %.1e)" % (name, len(b), worst))
    return worst


if __name__ == "__main__":
    if "--check-torch" in sys.argv[1:]:
        import os
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        w = check_torch(None)
        print("ref_family: numpy and torch float64 forwards agree (max rel diff %.1e)" % w)
    else:
        sys.exit(__doc__)
