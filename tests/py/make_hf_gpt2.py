#!/usr/bin/python3
"""Random-weight GPT-2 model folders in Hugging Face's layout, with their
float64 references (numpy only; no network, no real weights).

Usage:
  make_hf_gpt2.py OUTDIR            the test variants, their references and
                                    the bad cases (tests/test_checkpoint_hf.c)
  make_hf_gpt2.py OUTDIR --bench    one GPT-2-small-shaped folder (12 x 12,
                                    d_model 768, context 1024, vocabulary 50,257)
                                    in HF layout, and the same weights in
                                    TransformerLens layout with act_fn "gelu" and
                                    only the config fields headscope writes, so
                                    that an older headscope reads it too
                                    (bench/bench_load.c)

Each variant OUTDIR/<name>/ holds config.json and model.safetensors (or a
sharded model.safetensors.index.json with its shards), as save_pretrained
writes them; OUTDIR/<name>.ref.safetensors holds "tokens" [T], "patterns"
[L, H, T, T] and "logits" [T, V] of gpt2_ref.forward (float64, stored F32) on
the values the folder stores (after any F16 / BF16 rounding). Variants:
  base         F32, tied unembedding, gelu_new, F32 attn.bias buffers
  prefix       "transformer." prefix, lm_head.weight (tie_word_embeddings
               false), BOOL attn.bias and attn.masked_bias buffers, gelu
  f16          F16 weights and attn.bias buffers, n_inner 40, relu
  bf16         BF16 weights, gelu_new
  scale_layer  scale_attn_by_inverse_layer_idx, 3 layers, scale_attn_weights
               false, aliases hidden_size / num_attention_heads
  sharded      three shards and an index, gelu
  noncausal    base, with h.1.attn.bias not the causal mask (refused)
  noncausal2   h.0's and h.1's attn.bias both not the causal mask (refused,
               naming h.0)
  mask_values  a -0 and a 2.0 in the masks (the causal mask all the same)
OUTDIR/base_processed.safetensors is base converted to TransformerLens'
layout (weight_conversions/gpt2.py) and processed as from_pretrained does
(fold_ln, center_writing_weights, center_unembed, fold_value_biases), with a
complete TransformerLens 3.x config (normalization_type "LNPre", act_fn
"gelu_new"); its reference OUTDIR/base_processed.ref.safetensors: the same
patterns, logits centred over the vocabulary. OUTDIR/bad/<case>/ and
OUTDIR/bad/cases.tsv: folders every loader must refuse in one line, and the
text the message holds.
"""
import json
import math
import os
import shutil
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_ref  # noqa: E402

DT = {"F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2), "BOOL": ("|u1", 1), "U8": ("|u1", 1)}


def to_bf16(x):
    """float32 -> bfloat16 bits, round to nearest even (torch's conversion)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def stored(x, dtype):
    """The float64 values a tensor holds once stored as dtype."""
    if dtype == "F16":
        return x.astype(np.float16).astype(np.float64)
    if dtype == "BF16":
        return (to_bf16(x).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return x.astype(np.float32).astype(np.float64)


def raw(x, dtype):
    if dtype == "BF16":
        return to_bf16(x)
    return np.ascontiguousarray(x, dtype=DT[dtype][0])


def write_st(path, tensors, metadata=None):
    """tensors: [(name, dtype, array)], data in this order; streamed to path."""
    header, off = {}, 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, a in tensors:
        n = a.size * DT[dtype][1]
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [off, off + n]}
        off += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((-len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for name, dtype, a in tensors:
            raw(a, dtype).tofile(f)


def hf_config(d, h, layers, v, npos, act, **extra):
    cfg = {"activation_function": act, "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
           "bos_token_id": v - 1, "embd_pdrop": 0.1, "eos_token_id": v - 1,
           "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
           "n_ctx": npos, "n_embd": d, "n_head": h, "n_inner": None, "n_layer": layers,
           "n_positions": npos, "reorder_and_upcast_attn": False, "resid_pdrop": 0.1,
           "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True,
           "summary_activation": None, "summary_first_dropout": 0.1,
           "summary_proj_to_labels": True, "summary_type": "cls_index", "summary_use_proj": True,
           "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}},
           "torch_dtype": "float32", "transformers_version": "4.44.2", "use_cache": True,
           "vocab_size": v}
    cfg.update(extra)
    return cfg


def weights(rng, cfg, std=0.2, lm_head=False):
    """Random float64 weights of cfg by Hugging Face name (Conv1D [in, out])."""
    D, H, dh, L = gpt2_ref.dims(cfg)
    V, P = cfg["vocab_size"], cfg["n_positions"]
    M = cfg.get("n_inner") or 4 * D
    n = lambda *s: rng.standard_normal(s) * std  # noqa: E731
    wt = {"wte.weight": rng.standard_normal((V, D)) * 0.5, "wpe.weight": rng.standard_normal((P, D)) * 0.3}
    for layer in range(L):
        p = "h.%d." % layer
        wt[p + "ln_1.weight"], wt[p + "ln_1.bias"] = 1 + n(D), n(D)
        wt[p + "attn.c_attn.weight"], wt[p + "attn.c_attn.bias"] = n(D, 3 * D), n(3 * D)
        wt[p + "attn.c_proj.weight"], wt[p + "attn.c_proj.bias"] = n(D, D), n(D)
        wt[p + "ln_2.weight"], wt[p + "ln_2.bias"] = 1 + n(D), n(D)
        wt[p + "mlp.c_fc.weight"], wt[p + "mlp.c_fc.bias"] = n(D, M), n(M)
        wt[p + "mlp.c_proj.weight"], wt[p + "mlp.c_proj.bias"] = n(M, D), n(D)
    wt["ln_f.weight"], wt["ln_f.bias"] = 1 + n(D), n(D)
    if lm_head:
        wt["lm_head.weight"] = rng.standard_normal((V, D)) * 0.5
    return wt


def causal_mask(P, dtype, flip=None, sets=()):
    m = np.tril(np.ones((P, P))).reshape(1, 1, P, P)
    if flip:
        m[0, 0, flip[0], flip[1]] = 1 - m[0, 0, flip[0], flip[1]]
    for r, c, v in sets:
        m[0, 0, r, c] = v
    return m


def tensor_list(wt, cfg, dtype="F32", prefix="", buffers="F32", masked_bias=False, flip=None, sets=()):
    """[(name, dtype, values)] as a folder stores them, and the stored values.
    flip: (layer, row, col) or a list of them, where a layer's mask holds the
    other value; sets: (layer, row, col, value), a value put there."""
    flips = [flip] if flip and isinstance(flip[0], int) else list(flip or [])
    out, vals = [], {}
    for name, a in wt.items():
        full = name if name == "lm_head.weight" else prefix + name
        out.append((full, dtype, a))
        vals[name] = stored(a, dtype)
    L, P = cfg["n_layer"], cfg["n_positions"]
    for layer in range(L if buffers else 0):
        f = [x[1:] for x in flips if x[0] == layer]
        v = [x[1:] for x in sets if x[0] == layer]
        out.append((prefix + "h.%d.attn.bias" % layer, buffers, causal_mask(P, buffers, f[0] if f else None, v)))
        if masked_bias:
            out.append((prefix + "h.%d.attn.masked_bias" % layer, "F32", np.array(-1e4)))
    return out, vals


def write_folder(path, cfg, tensors, shards=1):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    if shards == 1:
        write_st(os.path.join(path, "model.safetensors"), tensors, {"format": "pt"})
        return
    per = -(-len(tensors) // shards)
    wmap, total = {}, 0
    for s in range(shards):
        fname = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
        part = tensors[s * per:(s + 1) * per]
        write_st(os.path.join(path, fname), part, {"format": "pt"})
        for name, dtype, a in part:
            wmap[name] = fname
            total += a.size * DT[dtype][1]
    with open(os.path.join(path, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": wmap}, f, indent=2)


def write_ref(path, ids, pats, logits):
    write_st(path, [("tokens", "F32", np.array(ids, dtype=np.float64)), ("patterns", "F32", pats),
                    ("logits", "F32", logits)])


def tl3_config(cfg):
    """A complete TransformerLens 3.x HookedTransformerConfig (v3.5.1's 79
    fields after __post_init__) for a processed GPT-2 of cfg."""
    D, H, dh, L = gpt2_ref.dims(cfg)
    V, P = cfg["vocab_size"], cfg["n_positions"]
    return {
        "d_model": D, "d_head": dh, "n_layers": L, "n_ctx": P, "n_heads": H, "d_mlp": 4 * D,
        "d_vocab": V, "device": "cpu", "use_attn_result": False, "use_split_qkv_input": False,
        "default_prepend_bos": True, "positional_embedding_type": "standard",
        "n_key_value_heads": None, "attn_only": False, "gated_mlp": False, "uses_rms_norm": False,
        "eps": 1e-05, "layer_norm_folding": False, "act_fn": "gelu_new",
        "normalization_type": "LNPre", "num_experts": None, "experts_per_token": None,
        "final_rms": False, "dtype": "torch.float32", "model_name": "gpt2-random",
        "use_attn_scale": True, "attn_scale": math.sqrt(dh), "use_hook_mlp_in": False,
        "use_attn_in": False, "use_qk_norm": False, "use_local_attn": False,
        "ungroup_grouped_query_attention": False, "original_architecture": "GPT2LMHeadModel",
        "from_checkpoint": False, "checkpoint_index": None, "checkpoint_label_type": None,
        "checkpoint_value": None, "tokenizer_name": "gpt2", "window_size": None,
        "attn_types": None, "init_mode": "gpt2", "n_devices": 1, "attention_dir": "causal",
        "seed": None, "initializer_range": 0.8 / math.sqrt(D), "init_weights": True,
        "scale_attn_by_inverse_layer_idx": False, "d_vocab_out": V, "parallel_attn_mlp": False,
        "rotary_dim": None, "n_params": L * (4 * D * D + 2 * D * 4 * D), "use_hook_tokens": False,
        "tokenizer_prepends_bos": False, "post_embedding_ln": False, "rotary_base": 10000,
        "rotary_base_local": None, "rotary_scaling_factor": 1.0, "trust_remote_code": False,
        "rotary_adjacent_pairs": False, "load_in_4bit": False,
        "relative_attention_max_distance": None, "relative_attention_num_buckets": None,
        "decoder_start_token_id": None, "tie_word_embeddings": False,
        "use_normalization_before_and_after": False, "attn_scores_soft_cap": -1.0,
        "output_logits_soft_cap": -1.0, "use_NTK_by_parts_rope": False,
        "NTK_by_parts_low_freq_factor": 1.0, "NTK_by_parts_high_freq_factor": 4.0,
        "NTK_by_parts_factor": 8.0, "NTK_original_ctx_len": 8192, "use_yarn_rope": False,
        "yarn_factor": 1.0, "yarn_attention_factor": 1.0, "yarn_beta_fast": 32.0,
        "yarn_beta_slow": 1.0, "yarn_original_max_position_embeddings": 4096,
        "norm_topk_prob": False,
    }


VARIANTS = {
    "base": dict(cfg=dict(d=32, h=4, layers=2, v=41, npos=16, act="gelu_new")),
    "prefix": dict(cfg=dict(d=24, h=3, layers=2, v=37, npos=12, act="gelu", tie_word_embeddings=False),
                   lm_head=True, prefix="transformer.", buffers="BOOL", masked_bias=True),
    "f16": dict(cfg=dict(d=16, h=2, layers=2, v=29, npos=10, act="relu", n_inner=40), dtype="F16",
                buffers="F16"),
    "bf16": dict(cfg=dict(d=16, h=4, layers=1, v=23, npos=8, act="gelu_new"), dtype="BF16", buffers=None),
    "scale_layer": dict(cfg=dict(d=24, h=2, layers=3, v=31, npos=12, act="gelu_new",
                                 scale_attn_by_inverse_layer_idx=True, scale_attn_weights=False)),
    "sharded": dict(cfg=dict(d=16, h=2, layers=3, v=19, npos=9, act="gelu"), shards=3),
    "noncausal": dict(cfg=dict(d=16, h=2, layers=2, v=17, npos=8, act="gelu_new"), flip=(1, 2, 5)),
    "deep": dict(cfg=dict(d=16, h=2, layers=24, v=17, npos=8, act="gelu_new")),  # GPT-2 medium's depth
}
# made after the bad cases, from a generator of their own (the variants above
# and the bad cases keep their values)
MASK_VARIANTS = {
    # h.0's and h.1's masks both wrong: the first is the one named
    "noncausal2": dict(cfg=dict(d=16, h=2, layers=2, v=17, npos=8, act="gelu_new"),
                       flip=[(0, 4, 1), (1, 2, 5)]),
    # a -0 where the mask has 0 and a 2 where it has 1: still the causal mask
    "mask_values": dict(cfg=dict(d=16, h=2, layers=2, v=17, npos=8, act="gelu_new"),
                        sets=[(0, 3, 6, -0.0), (1, 5, 2, 2.0)]),
}


def make_variant(out, name, spec, rng):
    c = dict(spec["cfg"])
    cfg = hf_config(c.pop("d"), c.pop("h"), c.pop("layers"), c.pop("v"), c.pop("npos"), c.pop("act"), **c)
    if name == "scale_layer":  # the attribute_map aliases instead of the names
        cfg["hidden_size"], cfg["num_attention_heads"] = cfg.pop("n_embd"), cfg.pop("n_head")
    ref_cfg = dict(cfg, n_embd=cfg.get("n_embd", cfg.get("hidden_size")),
                   n_head=cfg.get("n_head", cfg.get("num_attention_heads")))
    wt = weights(rng, ref_cfg, lm_head=spec.get("lm_head", False))
    tensors, vals = tensor_list(wt, ref_cfg, spec.get("dtype", "F32"), spec.get("prefix", ""),
                                spec.get("buffers", "F32"), spec.get("masked_bias", False), spec.get("flip"),
                                spec.get("sets", ()))
    write_folder(os.path.join(out, name), cfg, tensors, spec.get("shards", 1))
    T = min(ref_cfg["n_positions"], 12)
    ids = [int(i) for i in rng.integers(0, ref_cfg["vocab_size"], T)]
    pats, logits = gpt2_ref.forward(vals, ref_cfg, ids)
    write_ref(os.path.join(out, name + ".ref.safetensors"), ids, pats, logits)
    return cfg, vals, ids, pats, logits


def make_processed(out, cfg, vals, ids, pats, logits):
    sd = gpt2_ref.tl_process(gpt2_ref.hf_to_tl(vals, cfg), cfg["n_layer"])
    meta = {"format": "pt", "config": json.dumps(tl3_config(cfg))}
    write_st(os.path.join(out, "base_processed.safetensors"), [(k, "F32", v) for k, v in sd.items()], meta)
    write_ref(os.path.join(out, "base_processed.ref.safetensors"), ids, pats,
              logits - logits.mean(-1, keepdims=True))


def bad_cases(out, rng):
    """Folders the loader must refuse in one line: (case, the text it says)."""
    bad = os.path.join(out, "bad")
    cfg = hf_config(16, 2, 2, 13, 8, "gelu_new")
    wt = weights(rng, cfg)
    tensors, _ = tensor_list(wt, cfg)
    cases = []

    def folder(case, c=cfg, ts=tensors, shards=1, expect=""):
        write_folder(os.path.join(bad, case), c, ts, shards)
        cases.append((case, expect))
        return os.path.join(bad, case)

    os.remove(os.path.join(folder("no_config", expect="no config.json"), "config.json"))
    folder("shape_mismatch", ts=[(n, d, a[:, :12] if n == "h.1.mlp.c_fc.weight" else a) for n, d, a in tensors],
           expect="tensor h.1.mlp.c_fc.weight has shape [16,12], config.json expects [16,64]")
    folder("model_type", c=dict(cfg, model_type="gptj"), expect="model_type 'gptj' is not supported")
    folder("unknown_field", c=dict(cfg, rotary_pct=0.25), expect="field 'rotary_pct' is not a GPT-2 config field")
    folder("cross_attention", c=dict(cfg, add_cross_attention=True), expect="'add_cross_attention' = true")
    path = folder("truncated_shard", shards=2, expect="truncated file?")
    shard = os.path.join(path, "model-00002-of-00002.safetensors")
    with open(shard, "r+b") as f:
        f.truncate(os.path.getsize(shard) - 100)
    path = folder("shard_missing", shards=2, expect="model-00002-of-00002.safetensors")
    os.remove(os.path.join(path, "model-00002-of-00002.safetensors"))
    path = folder("not_in_index", shards=2, expect="is not in the index's weight_map")
    idx = os.path.join(path, "model.safetensors.index.json")
    with open(idx) as f:
        j = json.load(f)
    del j["weight_map"]["h.1.ln_2.bias"]
    with open(idx, "w") as f:
        json.dump(j, f)
    folder("no_weights", expect="no model.safetensors or model.safetensors.index.json")
    os.remove(os.path.join(bad, "no_weights", "model.safetensors"))
    folder("nan_weight", ts=[(n, d, np.where(np.arange(a.size).reshape(a.shape) == 3, np.nan, a)
                              if n == "wpe.weight" else a) for n, d, a in tensors],
           expect="tensor 'wpe.weight' has a non-finite value (NaN) at index 3")
    # wte (13 x 16 = 208 values): -inf at 200, past the loader's last whole
    # 64-value block (its scalar tail), the values before it finite
    folder("inf_weight", ts=[(n, d, np.where(np.arange(a.size).reshape(a.shape) == 200, -np.inf, a)
                              if n == "wte.weight" else a) for n, d, a in tensors],
           expect="tensor 'wte.weight' has a non-finite value (-Inf) at index 200")
    folder("mask_hole", ts=[(n, d, causal_mask(8, d, (3, 1)) if n == "h.0.attn.bias" else a)
                            for n, d, a in tensors],
           expect="h.0.attn.bias is not the causal mask: row 3, column 1 is 0 where a causal mask has 1")
    # a tensor the config expects and the file lacks is named as the file
    # would name it (with its prefix), never by headscope's table name
    folder("layer_missing", c=dict(cfg, n_layer=3), expect="missing tensor h.2.ln_1.weight [16] (config.json's n_layer 3")
    folder("tensor_missing", ts=[t for t in tensors if t[0] != "h.1.ln_2.bias"],
           expect="missing tensor h.1.ln_2.bias [16]")
    folder("prefixed_missing", ts=[t for t in tensor_list(wt, cfg, prefix="transformer.")[0]
                                   if t[0] != "transformer.h.0.attn.c_attn.weight"],
           expect="missing tensor transformer.h.0.attn.c_attn.weight [16,48]")
    with open(os.path.join(bad, "cases.tsv"), "w") as f:
        for case, expect in cases:
            f.write("%s\t%s\n" % (case, expect))


def bench(out):
    """GPT-2 small's shape (124 M parameters, tied unembedding), N(0, 0.02)
    weights as float32, the causal-mask buffers as F32 (as the Hub's file holds
    them): OUTDIR/gpt2-small-random/ and OUTDIR/gpt2-small-random-tl.safetensors."""
    rng = np.random.default_rng(2024)
    cfg = hf_config(768, 12, 12, 50257, 1024, "gelu_new")
    D, L, V, P = 768, 12, 50257, 1024
    g = lambda *s: (rng.standard_normal(s, dtype=np.float32) * np.float32(0.02))  # noqa: E731
    one = lambda n: np.ones(n, np.float32)  # noqa: E731
    wt = {"wte.weight": g(V, D), "wpe.weight": g(P, D)}
    for layer in range(L):
        p = "h.%d." % layer
        wt.update({p + "ln_1.weight": one(D), p + "ln_1.bias": g(D), p + "attn.c_attn.weight": g(D, 3 * D),
                   p + "attn.c_attn.bias": g(3 * D), p + "attn.c_proj.weight": g(D, D),
                   p + "attn.c_proj.bias": g(D), p + "ln_2.weight": one(D), p + "ln_2.bias": g(D),
                   p + "mlp.c_fc.weight": g(D, 4 * D), p + "mlp.c_fc.bias": g(4 * D),
                   p + "mlp.c_proj.weight": g(4 * D, D), p + "mlp.c_proj.bias": g(D)})
    wt["ln_f.weight"], wt["ln_f.bias"] = one(D), g(D)
    ts = [(k, "F32", v) for k, v in wt.items()]
    ts += [("h.%d.attn.bias" % layer, "F32", np.tril(np.ones((P, P), np.float32)).reshape(1, 1, P, P))
           for layer in range(L)]
    write_folder(os.path.join(out, "gpt2-small-random"), cfg, ts)
    sd = gpt2_ref.hf_to_tl(wt, cfg)
    # the fields headscope itself writes, act_fn "gelu": an older headscope reads it too
    tl = {"n_layers": L, "d_model": D, "n_heads": 12, "d_head": 64, "d_mlp": 4 * D, "n_ctx": P,
          "d_vocab": V, "d_vocab_out": V, "act_fn": "gelu", "normalization_type": "LN", "eps": 1e-05,
          "positional_embedding_type": "standard", "attn_only": False, "attention_dir": "causal"}
    write_st(os.path.join(out, "gpt2-small-random-tl.safetensors"),
             [(k, "F32", v.astype(np.float32)) for k, v in sd.items()],
             {"format": "pt", "config": json.dumps(tl)})


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    if "--bench" in sys.argv[2:]:
        bench(out)
        return
    rng = np.random.default_rng(7)
    for name, spec in VARIANTS.items():
        shutil.rmtree(os.path.join(out, name), ignore_errors=True)
        got = make_variant(out, name, spec, rng)
        if name == "base":
            make_processed(out, *got)
    shutil.rmtree(os.path.join(out, "bad"), ignore_errors=True)
    bad_cases(out, rng)
    rng = np.random.default_rng(8)
    for name, spec in MASK_VARIANTS.items():
        shutil.rmtree(os.path.join(out, name), ignore_errors=True)
        make_variant(out, name, spec, rng)


if __name__ == "__main__":
    main()
