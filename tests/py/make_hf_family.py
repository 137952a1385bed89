#!/usr/bin/python3
"""Random-weight model folders of the Hugging Face families headscope reads
(gpt_neo, gpt_neox, llama, qwen2, mistral), exactly as each family's
modeling_*.py saves them, with float64 references (tests/py/ref_family.py;
numpy only, no network, no real weights).

Usage:
  make_hf_family.py OUTDIR     every variant, its reference and the bad cases

Each variant OUTDIR/<name>/ holds config.json (the family's real field names,
as save_pretrained writes its config class's fields) and model.safetensors
(the real tensor names, nn.Linear weights [out, in], dtypes), and
OUTDIR/<name>.ref.safetensors holds "tokens" [T] and, under TransformerLens'
names, every point ref_family.forward computes (hook_embed,
blocks.l.attn.hook_pattern [H, T, T], ..., logits [T, V]; float64 values
stored F32) on the values the folder stores (after any F16 / BF16 rounding).
Variants (T = 12 tokens; every local window shorter than that):
  neo          gpt_neo, attention_types [[["global", "local"], 2]], window 5,
               "transformer." prefix, tied, attn.attention.bias / masked_bias
               buffers (a local layer's bias is its window mask), gelu_new
  neo_f16      gpt_neo F16, [[["local"], 1], [["global", "local"], 1]],
               window 3, intermediate_size 40, no buffers, relu
  neox         gpt_neox (Pythia), rotary_pct 0.25, parallel residual, untied
               embed_out, attention.bias / masked_bias / rotary_emb.inv_freq
               buffers, gelu
  neox_seq     gpt_neox F16, rotary_pct 1.0, use_parallel_residual false,
               tied, rotary_emb_base 500, the 4.48 aliases partial_rotary_factor
               and rope_theta, attention_bias false, gelu_new
  neox_bf16    gpt_neox BF16, rotary_pct 0.5, 8 heads of 8
  llama        llama, 4 heads over 2 key/value heads (2 groups), untied
  llama3       llama BF16, 8 heads over 2 (4 groups), head_dim 12 (not
               hidden / heads), tied, rope_theta 500000, rope_scaling llama3
               (original_max_position_embeddings 512: kept, blended and
               divided frequencies)
  llama_bias   llama F16, attention_bias (q, k, v, o biases), 4 heads of 4
               key/value heads, rms_norm_eps 1e-5
  qwen2        qwen2, q/k/v biases, 4 heads over 2, tied
  mistral      mistral, 4 heads over 1 (4 groups), sliding_window 4, untied
OUTDIR/bad/<case>/ and OUTDIR/bad/cases.tsv: folders the loader must refuse
in one line, and the text the message holds.
"""
import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_hf_gpt2 as st  # noqa: E402  (write_st, write_folder, stored)
import ref_family  # noqa: E402

T_PROMPT = 12
COMMON = {"torch_dtype": "float32", "transformers_version": "4.48.0", "use_cache": True}


# ---------------------------------------------------------------------------
# config.json as each config class saves it

def neo_config(d, h, types, v, npos, window, act="gelu_new", inner=None, **extra):
    layers = ref_family.neo_layers({"attention_types": types})
    c = {"activation_function": act, "architectures": ["GPTNeoForCausalLM"], "attention_dropout": 0.0,
         "attention_layers": layers, "attention_types": types, "bos_token_id": v - 1, "classifier_dropout": 0.1,
         "embed_dropout": 0.0, "eos_token_id": v - 1, "hidden_size": d, "initializer_range": 0.02,
         "intermediate_size": inner, "layer_norm_epsilon": 1e-05, "max_position_embeddings": npos,
         "model_type": "gpt_neo", "num_heads": h, "num_layers": len(layers), "resid_dropout": 0.0,
         "summary_activation": None, "summary_first_dropout": 0.1, "summary_proj_to_labels": True,
         "summary_type": "cls_index", "summary_use_proj": True, "vocab_size": v, "window_size": window}
    c.update(COMMON)
    c.update(extra)
    return c


def neox_config(d, h, layers, v, npos, pct, act="gelu", inner=None, aliases=False, **extra):
    c = {"architectures": ["GPTNeoXForCausalLM"], "attention_bias": True, "attention_dropout": 0.0,
         "bos_token_id": 0, "classifier_dropout": 0.1, "eos_token_id": 0, "hidden_act": act,
         "hidden_dropout": 0.0, "hidden_size": d, "initializer_range": 0.02,
         "intermediate_size": inner or 4 * d, "layer_norm_eps": 1e-05, "max_position_embeddings": npos,
         "model_type": "gpt_neox", "num_attention_heads": h, "num_hidden_layers": layers,
         "rope_scaling": None, "rotary_emb_base": 10000, "rotary_pct": pct, "tie_word_embeddings": False,
         "use_parallel_residual": True, "vocab_size": v}
    c.update(COMMON)
    c.update(extra)
    if aliases:  # GPTNeoXConfig (4.47+) also keeps them under the rope utilities' names
        c["partial_rotary_factor"], c["rope_theta"] = c["rotary_pct"], c["rotary_emb_base"]
    return c


def llama_config(kind, d, h, kv, layers, v, npos, inner, **extra):
    c = {"architectures": [{"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",
                            "mistral": "MistralForCausalLM"}[kind]],
         "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
         "hidden_size": d, "initializer_range": 0.02, "intermediate_size": inner,
         "max_position_embeddings": npos, "model_type": kind, "num_attention_heads": h,
         "num_hidden_layers": layers, "num_key_value_heads": kv, "rms_norm_eps": 1e-06,
         "rope_theta": 10000.0, "tie_word_embeddings": False, "vocab_size": v}
    if kind == "llama":
        c.update({"attention_bias": False, "head_dim": d // h, "mlp_bias": False, "pretraining_tp": 1,
                  "rope_scaling": None})
    elif kind == "qwen2":
        c.update({"max_window_layers": layers, "rope_scaling": None, "sliding_window": None,
                  "use_sliding_window": False, "bos_token_id": v - 1, "eos_token_id": v - 1})
    else:
        c.update({"head_dim": d // h, "sliding_window": None})
    c.update(COMMON)
    c.update(extra)
    return c


# ---------------------------------------------------------------------------
# The weights, by the names the family saves

def neo_weights(rng, c, prefix="transformer."):
    D, V, P = c["hidden_size"], c["vocab_size"], c["max_position_embeddings"]
    M = c["intermediate_size"] or 4 * D
    n = lambda *s: rng.standard_normal(s) * 0.2  # noqa: E731
    w = {"wte.weight": rng.standard_normal((V, D)) * 0.5, "wpe.weight": rng.standard_normal((P, D)) * 0.3}
    for l in range(c["num_layers"]):
        p = "h.%d." % l
        w.update({p + "ln_1.weight": 1 + n(D), p + "ln_1.bias": n(D),
                  p + "attn.attention.k_proj.weight": n(D, D), p + "attn.attention.v_proj.weight": n(D, D),
                  p + "attn.attention.q_proj.weight": n(D, D), p + "attn.attention.out_proj.weight": n(D, D),
                  p + "attn.attention.out_proj.bias": n(D), p + "ln_2.weight": 1 + n(D), p + "ln_2.bias": n(D),
                  p + "mlp.c_fc.weight": n(M, D), p + "mlp.c_fc.bias": n(M),
                  p + "mlp.c_proj.weight": n(D, M), p + "mlp.c_proj.bias": n(D)})
    w["ln_f.weight"], w["ln_f.bias"] = 1 + n(D), n(D)
    return {prefix + k: v for k, v in w.items()}


def neo_buffers(c, prefix="transformer."):
    P = c["max_position_embeddings"]
    out = []
    for l, kind in enumerate(c["attention_layers"]):
        m = np.tril(np.ones((P, P), dtype=bool))
        if kind == "local":
            m = m ^ np.tril(m, -c["window_size"])
        out.append((prefix + "h.%d.attn.attention.bias" % l, "BOOL", m.reshape(1, 1, P, P)))
        out.append((prefix + "h.%d.attn.attention.masked_bias" % l, "F32", np.array(-1e9)))
    return out


def neox_weights(rng, c):
    D, V = c["hidden_size"], c["vocab_size"]
    M = c["intermediate_size"]
    n = lambda *s: rng.standard_normal(s) * 0.2  # noqa: E731
    w = {"gpt_neox.embed_in.weight": rng.standard_normal((V, D)) * 0.5}
    for l in range(c["num_hidden_layers"]):
        p = "gpt_neox.layers.%d." % l
        w.update({p + "input_layernorm.weight": 1 + n(D), p + "input_layernorm.bias": n(D),
                  p + "post_attention_layernorm.weight": 1 + n(D), p + "post_attention_layernorm.bias": n(D),
                  p + "attention.query_key_value.weight": n(3 * D, D)})
        if c.get("attention_bias", True):
            w[p + "attention.query_key_value.bias"] = n(3 * D)
        w[p + "attention.dense.weight"] = n(D, D)
        if c.get("attention_bias", True):
            w[p + "attention.dense.bias"] = n(D)
        w.update({p + "mlp.dense_h_to_4h.weight": n(M, D), p + "mlp.dense_h_to_4h.bias": n(M),
                  p + "mlp.dense_4h_to_h.weight": n(D, M), p + "mlp.dense_4h_to_h.bias": n(D)})
    w["gpt_neox.final_layer_norm.weight"], w["gpt_neox.final_layer_norm.bias"] = 1 + n(D), n(D)
    if not c.get("tie_word_embeddings", False):
        w["embed_out.weight"] = rng.standard_normal((V, D)) * 0.5
    return w


def neox_buffers(c):
    P, H = c["max_position_embeddings"], c["num_attention_heads"]
    dh = c["hidden_size"] // H
    rd = int(dh * c["rotary_pct"])
    out = []
    for l in range(c["num_hidden_layers"]):
        p = "gpt_neox.layers.%d.attention." % l
        out.append((p + "bias", "BOOL", np.tril(np.ones((P, P), dtype=bool)).reshape(1, 1, P, P)))
        out.append((p + "masked_bias", "F32", np.array(-1e9)))
        out.append((p + "rotary_emb.inv_freq", "F32", ref_family.inv_freq(rd, c["rotary_emb_base"])))
    return out


def llama_weights(rng, c):
    D, V, H, M = c["hidden_size"], c["vocab_size"], c["num_attention_heads"], c["intermediate_size"]
    kv = c.get("num_key_value_heads") or H
    dh = c.get("head_dim") or D // H
    qkv_bias = c["model_type"] == "qwen2" or c.get("attention_bias", False)
    n = lambda *s: rng.standard_normal(s) * 0.2  # noqa: E731
    w = {"model.embed_tokens.weight": rng.standard_normal((V, D)) * 0.5}
    for l in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % l
        w[p + "input_layernorm.weight"] = 1 + n(D)
        for name, rows in (("q", H * dh), ("k", kv * dh), ("v", kv * dh)):
            w[p + "self_attn.%s_proj.weight" % name] = n(rows, D)
            if qkv_bias:
                w[p + "self_attn.%s_proj.bias" % name] = n(rows)
        w[p + "self_attn.o_proj.weight"] = n(D, H * dh)
        if c.get("attention_bias", False):
            w[p + "self_attn.o_proj.bias"] = n(D)
        w.update({p + "post_attention_layernorm.weight": 1 + n(D), p + "mlp.gate_proj.weight": n(M, D),
                  p + "mlp.up_proj.weight": n(M, D), p + "mlp.down_proj.weight": n(D, M)})
    w["model.norm.weight"] = 1 + n(D)
    if not c.get("tie_word_embeddings", False):
        w["lm_head.weight"] = rng.standard_normal((V, D)) * 0.5
    return w


# ---------------------------------------------------------------------------

VARIANTS = {
    "neo": dict(cfg=lambda: neo_config(32, 4, [[["global", "local"], 2]], 41, 16, 5), buffers=True),
    "neo_f16": dict(cfg=lambda: neo_config(16, 2, [[["local"], 1], [["global", "local"], 1]], 29, 14, 3,
                                           act="relu", inner=40), dtype="F16", prefix=""),
    "neox": dict(cfg=lambda: neox_config(32, 4, 2, 37, 16, 0.25), buffers=True),
    "neox_seq": dict(cfg=lambda: neox_config(24, 2, 3, 31, 12, 1.0, act="gelu_new", aliases=True,
                                             use_parallel_residual=False, tie_word_embeddings=True,
                                             rotary_emb_base=500, attention_bias=False), dtype="F16"),
    "neox_bf16": dict(cfg=lambda: neox_config(64, 8, 2, 23, 12, 0.5, inner=96), dtype="BF16"),
    "llama": dict(cfg=lambda: llama_config("llama", 32, 4, 2, 2, 43, 64, 48)),
    "llama3": dict(cfg=lambda: llama_config(
        "llama", 32, 8, 2, 2, 37, 131072, 40, head_dim=12, tie_word_embeddings=True, rope_theta=500000.0,
        rope_scaling={"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                      "original_max_position_embeddings": 512, "rope_type": "llama3"}), dtype="BF16"),
    "llama_bias": dict(cfg=lambda: llama_config("llama", 16, 4, 4, 2, 29, 32, 24, attention_bias=True,
                                                rms_norm_eps=1e-05), dtype="F16"),
    "qwen2": dict(cfg=lambda: llama_config("qwen2", 32, 4, 2, 2, 47, 32768, 56, tie_word_embeddings=True)),
    "mistral": dict(cfg=lambda: llama_config("mistral", 32, 4, 1, 2, 33, 64, 48, sliding_window=4)),
}


def build(name, spec, rng):
    """(config, {name: stored float64 values}, token ids, [(name, dtype, values)]
    in save order (weights, then buffers))."""
    c = spec["cfg"]()
    kind = c["model_type"]
    if kind == "gpt_neo":
        w = neo_weights(rng, c, spec.get("prefix", "transformer."))
        if not c.get("tie_word_embeddings", True):
            w["lm_head.weight"] = rng.standard_normal((c["vocab_size"], c["hidden_size"])) * 0.5
    elif kind == "gpt_neox":
        w = neox_weights(rng, c)
    else:
        w = llama_weights(rng, c)
    dtype = spec.get("dtype", "F32")
    tensors = [(k, dtype, v) for k, v in w.items()]
    vals = {k: st.stored(v, dtype) for k, v in w.items()}
    if spec.get("buffers"):
        tensors += neo_buffers(c) if kind == "gpt_neo" else neox_buffers(c)
    c["torch_dtype"] = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype]
    ids = [int(i) for i in rng.integers(0, c["vocab_size"], T_PROMPT)]
    return c, vals, ids, tensors


def write_ref(path, ids, ref):
    ts = [("tokens", "F32", np.array(ids, dtype=np.float64))]
    ts += [(k, "F32", v) for k, v in sorted(ref.items())]
    st.write_st(path, ts)


def read_ref(path):
    """A reference file back: {name: float64 array} ("tokens" as ints)."""
    import struct
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    out = {}
    for k, e in json.loads(raw[8:8 + n]).items():
        if k == "__metadata__":
            continue
        b, en = e["data_offsets"]
        out[k] = np.frombuffer(raw[8 + n + b:8 + n + en], "<f4").astype(np.float64).reshape(e["shape"])
    out["tokens"] = [int(x) for x in out["tokens"]]
    return out


def bad_cases(out, rng):
    """Folders the loader must refuse in one line: (case, the text it says)."""
    bad = os.path.join(out, "bad")
    cases = []

    def folder(case, c, tensors, expect):
        st.write_folder(os.path.join(bad, case), c, tensors)
        cases.append((case, expect))

    def base(name):
        c, _, _, ts = build(name, VARIANTS[name], rng)
        return c, ts

    c, ts = base("neox")
    folder("neox_missing", c, [t for t in ts if t[0] != "gpt_neox.layers.1.mlp.dense_4h_to_h.bias"],
           "gpt_neox.layers.1.mlp.dense_4h_to_h.bias is missing")
    folder("neox_rope_scaling", dict(c, rope_scaling={"rope_type": "linear", "factor": 2.0}), ts,
           "rope_scaling type 'linear' is not supported")
    folder("neox_unknown_field", dict(c, rotary_emb_interleaved=True), ts,
           "field 'rotary_emb_interleaved' is not a field of model_type 'gpt_neox'")
    folder("neox_odd_rotary", dict(c, rotary_pct=0.375), ts, "rotary_pct 0.375 of head_dim 8 gives 3")
    folder("neox_pct_alias", dict(c, partial_rotary_factor=0.5), ts,
           "rotary_pct 0.25 and partial_rotary_factor 0.5 differ")
    c, ts = base("llama")
    folder("llama_shape", c, [(n, d, v[:-8] if n == "model.layers.1.self_attn.k_proj.weight" else v)
                              for n, d, v in ts],
           "tensor model.layers.1.self_attn.k_proj.weight has shape [8,32], config.json expects [16,32]")
    folder("llama_rope_unknown", dict(c, rope_scaling={"rope_type": "spline", "factor": 2.0}), ts,
           "unknown rope_scaling type 'spline'")
    folder("llama_rope_linear", dict(c, rope_scaling={"type": "linear", "factor": 2.0}), ts,
           "rope_scaling type 'linear' is not supported")
    folder("llama_kv_heads", dict(c, num_key_value_heads=3), ts,
           "num_key_value_heads 3 does not divide num_attention_heads 4")
    folder("llama_mlp_bias", dict(c, mlp_bias=True), ts, "'mlp_bias' = true is not supported")
    folder("llama_act", dict(c, hidden_act="gelu_fast"), ts, "hidden_act 'gelu_fast' is not supported")
    folder("llama_extra_tensor", c, ts + [("model.layers.0.self_attn.rotary_emb.cos", "F32", np.ones(4))],
           "unknown tensor 'model.layers.0.self_attn.rotary_emb.cos'")
    c, ts = base("qwen2")
    folder("qwen2_sliding", dict(c, use_sliding_window=True, sliding_window=4), ts,
           "'use_sliding_window' = true is not supported")
    folder("qwen2_no_bias", c, [t for t in ts if t[0] != "model.layers.0.self_attn.k_proj.bias"],
           "model.layers.0.self_attn.k_proj.bias is missing")
    c, ts = base("neo")
    folder("neo_types", dict(c, attention_types=[[["global", "local"], 1]]), ts,
           "attention_types give 2 layers, num_layers is 4")
    folder("neo_kind", dict(c, attention_types=[[["global", "sparse"], 2]],
                            attention_layers=["global", "sparse"] * 2), ts,
           "attention type 'sparse' (only \"global\" and \"local\")")
    flip = [(n, d, v.copy() if n.endswith("h.1.attn.attention.bias") else v) for n, d, v in ts]
    for n, d, v in flip:
        if n.endswith("h.1.attn.attention.bias"):
            v[0, 0, 9, 2] = True  # outside the local window of 5
    folder("neo_mask", c, flip, "h.1.attn.attention.bias is not the local (window 5) mask: row 9, column 2")
    c, ts = base("mistral")
    folder("mistral_type", dict(c, model_type="mixtral"), ts, "model_type 'mixtral' is not supported")
    with open(os.path.join(bad, "cases.tsv"), "w") as f:
        for case, expect in cases:
            f.write("%s\t%s\n" % (case, expect))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(33)
    for name, spec in VARIANTS.items():
        shutil.rmtree(os.path.join(out, name), ignore_errors=True)
        c, vals, ids, tensors = build(name, spec, rng)
        st.write_folder(os.path.join(out, name), c, tensors)
        write_ref(os.path.join(out, name + ".ref.safetensors"), ids,
                  ref_family.forward(c["model_type"], c, vals, ids))
    shutil.rmtree(os.path.join(out, "bad"), ignore_errors=True)
    bad_cases(out, rng)


if __name__ == "__main__":
    main()
