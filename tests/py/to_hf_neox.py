#!/usr/bin/python3
"""A headscope checkpoint as a Hugging Face GPT-NeoX (Pythia) folder, as
GPTNeoXForCausalLM.save_pretrained writes one (numpy only).

Usage: to_hf_neox.py CHECKPOINT.safetensors OUTDIR

The checkpoint must be GPT-NeoX-shaped: rotary positions (rotate-half),
parallel attention and MLP, LayerNorm, exact GELU, an MLP, and no biases
(`train --pos rotary --rotary-dim R --parallel-attn-mlp --act gelu
--no-bias`): GPT-NeoX has no unembedding bias, and its zero biases then
compute what the bias-free model computes. The tensors, by
models/gpt_neox/modeling_gpt_neox.py's names and shapes (nn.Linear [out,
in]): query_key_value [3 H dh, D] per head q|k|v (row h 3dh + p dh + e holds
W_p[h][:, e]), dense [D, H dh] = W_O^T, dense_h_to_4h = W_in^T,
dense_4h_to_h = W_out^T, embed_out = W_U^T, the LayerNorm and q/k/v biases
zeros. The checkpoint's "vocab" and "task" metadata are kept in
model.safetensors' __metadata__, so `timeline --models` knows the task.
"""
import json
import os
import struct
import sys

import numpy as np


def read_st(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + n])
    meta = hdr.pop("__metadata__", {})
    out = {}
    for k, e in hdr.items():
        assert e["dtype"] == "F32", (k, e["dtype"])
        b, en = e["data_offsets"]
        out[k] = np.frombuffer(raw[8 + n + b:8 + n + en], "<f4").reshape(e["shape"])
    return out, meta


def write_st(path, tensors, meta):
    header, off = {"__metadata__": meta}, 0
    for name, a in tensors:
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + a.size * 4]}
        off += a.size * 4
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for _, a in tensors:
            np.ascontiguousarray(a, dtype="<f4").tofile(f)


def convert(src, out):
    w, meta = read_st(src)
    cfg = json.loads(meta["config"])
    assert cfg["positional_embedding_type"] == "rotary" and cfg.get("parallel_attn_mlp"), cfg
    assert cfg["act_fn"] == "gelu" and cfg["normalization_type"] == "LN" and cfg["d_mlp"], cfg
    assert not any(k.endswith(("b_Q", "b_O", "b_in", "ln1.b", "b_U")) for k in w), "a model with biases"
    D, H, dh, L = cfg["d_model"], cfg["n_heads"], cfg["d_head"], cfg["n_layers"]
    V, M = cfg["d_vocab"], cfg["d_mlp"]
    assert H * dh == D, "GPT-NeoX needs n_heads * d_head = d_model"
    z = lambda *s: np.zeros(s, np.float32)  # noqa: E731
    ts = [("gpt_neox.embed_in.weight", w["embed.W_E"])]
    for l in range(L):
        b, p = "blocks.%d." % l, "gpt_neox.layers.%d." % l
        qkv = np.stack([w[b + "attn.W_" + x] for x in "QKV"], 1)  # (H, 3, D, dh)
        ts += [(p + "input_layernorm.weight", w[b + "ln1.w"]), (p + "input_layernorm.bias", z(D)),
               (p + "post_attention_layernorm.weight", w[b + "ln2.w"]),
               (p + "post_attention_layernorm.bias", z(D)),
               (p + "attention.query_key_value.weight", qkv.transpose(0, 1, 3, 2).reshape(3 * D, D)),
               (p + "attention.query_key_value.bias", z(3 * D)),
               (p + "attention.dense.weight", w[b + "attn.W_O"].reshape(H * dh, D).T),
               (p + "attention.dense.bias", z(D)),
               (p + "mlp.dense_h_to_4h.weight", w[b + "mlp.W_in"].T), (p + "mlp.dense_h_to_4h.bias", z(M)),
               (p + "mlp.dense_4h_to_h.weight", w[b + "mlp.W_out"].T), (p + "mlp.dense_4h_to_h.bias", z(D))]
    ts += [("gpt_neox.final_layer_norm.weight", w["ln_final.w"]), ("gpt_neox.final_layer_norm.bias", z(D)),
           ("embed_out.weight", w["unembed.W_U"].T)]
    hf = {"architectures": ["GPTNeoXForCausalLM"], "attention_bias": True, "attention_dropout": 0.0,
          "bos_token_id": 0, "classifier_dropout": 0.1, "eos_token_id": 0, "hidden_act": "gelu",
          "hidden_dropout": 0.0, "hidden_size": D, "initializer_range": 0.02, "intermediate_size": M,
          "layer_norm_eps": cfg["eps"], "max_position_embeddings": cfg["n_ctx"], "model_type": "gpt_neox",
          "num_attention_heads": H, "num_hidden_layers": L, "rope_scaling": None,
          "rotary_emb_base": cfg.get("rotary_base", 10000), "rotary_pct": cfg.get("rotary_dim", dh) / dh,
          "tie_word_embeddings": False, "torch_dtype": "float32", "transformers_version": "4.48.0",
          "use_cache": True, "use_parallel_residual": True, "vocab_size": V}
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(hf, f, indent=2)
    keep = {k: meta[k] for k in ("vocab", "task") if k in meta}
    write_st(os.path.join(out, "model.safetensors"), ts, dict(keep, format="pt"))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    convert(sys.argv[1], sys.argv[2])
