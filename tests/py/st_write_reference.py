#!/usr/bin/python3
"""Writes a small TransformerLens-shaped checkpoint with known values, the
interop fixture tests/checkpoint/tl_reference.safetensors (stdlib only).

It plays "a model trained elsewhere": TransformerLens parameter names and
state-dict order, a config of HookedTransformerConfig fields (including some
headscope ignores), the attention buffers blocks.{l}.attn.mask (BOOL, causal
lower triangle) and blocks.{l}.attn.IGNORE (F32 scalar -inf) that a
TransformerLens state dict carries, data laid out in name order (not header
order), header padded with spaces. Values: stlib.ref_value(name, i).

Usage: st_write_reference.py [OUT]   (default: tests/checkpoint/tl_reference.safetensors)
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stlib  # noqa: E402

CONFIG = {
    "n_layers": 2, "d_model": 8, "n_ctx": 6, "d_head": 4, "n_heads": 2, "d_mlp": 16,
    "act_fn": "gelu", "d_vocab": 5, "d_vocab_out": 5, "eps": 1e-05,
    "normalization_type": "LN", "positional_embedding_type": "standard",
    "attn_only": False, "model_name": "reference", "default_prepend_bos": False,
    "use_attn_scale": True, "attention_dir": "causal", "init_mode": "gpt2",
}
VOCAB = ["the", "dog", "cat", "sat", "."]


def tensors(cfg=CONFIG):
    L, D, H, dh, M = cfg["n_layers"], cfg["d_model"], cfg["n_heads"], cfg["d_head"], cfg["d_mlp"]
    C, V = cfg["n_ctx"], cfg["d_vocab"]
    ts = [stlib.ref_tensor("embed.W_E", [V, D]), stlib.ref_tensor("pos_embed.W_pos", [C, D])]
    for l in range(L):
        p = "blocks.%d." % l
        ts += [stlib.ref_tensor(p + "ln1.w", [D]), stlib.ref_tensor(p + "ln1.b", [D]),
               stlib.ref_tensor(p + "ln2.w", [D]), stlib.ref_tensor(p + "ln2.b", [D]),
               stlib.ref_tensor(p + "attn.W_Q", [H, D, dh]), stlib.ref_tensor(p + "attn.W_O", [H, dh, D]),
               stlib.ref_tensor(p + "attn.b_Q", [H, dh]), stlib.ref_tensor(p + "attn.b_O", [D]),
               stlib.ref_tensor(p + "attn.W_K", [H, D, dh]), stlib.ref_tensor(p + "attn.W_V", [H, D, dh]),
               stlib.ref_tensor(p + "attn.b_K", [H, dh]), stlib.ref_tensor(p + "attn.b_V", [H, dh])]
        mask = bytes(1 if j <= i else 0 for i in range(C) for j in range(C))
        ts += [stlib.Tensor(p + "attn.mask", "BOOL", [C, C], mask),
               stlib.Tensor(p + "attn.IGNORE", "F32", [], struct.pack("<f", float("-inf")))]
        ts += [stlib.ref_tensor(p + "mlp.W_in", [D, M]), stlib.ref_tensor(p + "mlp.b_in", [M]),
               stlib.ref_tensor(p + "mlp.W_out", [M, D]), stlib.ref_tensor(p + "mlp.b_out", [D])]
    ts += [stlib.ref_tensor("ln_final.w", [D]), stlib.ref_tensor("ln_final.b", [D]),
           stlib.ref_tensor("unembed.W_U", [D, V]), stlib.ref_tensor("unembed.b_U", [V])]
    return ts


def metadata(cfg=CONFIG, vocab=VOCAB):
    return {"format": "pt", "config": json.dumps(cfg), "vocab": json.dumps(vocab),
            "task": json.dumps({"name": "reference"}), "train": json.dumps({"by": "st_write_reference.py"})}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "checkpoint", "tl_reference.safetensors")
    with open(out, "wb") as f:
        f.write(stlib.build(tensors(), metadata()))


if __name__ == "__main__":
    main()
