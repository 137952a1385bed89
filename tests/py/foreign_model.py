#!/usr/bin/env python3
"""A checkpoint from outside headscope: TransformerLens tensor names and a
`config` of HookedTransformerConfig fields only (no vocab, no task), written
by this file alone (numpy + the safetensors format by hand), plus what
headscope must reproduce, computed here by an independent numpy forward with
TransformerLens semantics (LayerNorm, scores / cfg.attn_scale, causal mask,
exact GELU, pre-norm blocks).

    foreign_model.py OUTDIR

writes OUTDIR/model.safetensors, vocab.txt (one token a line, in an order of
its own), heldout_pairs.txt (24 ordered noun pairs), expected.json (held-out
accuracy and other-noun rate, and the top predictions for one sentence).

The model is built by hand so that it does something: layer 0 head 0 attends
from position 14 to position 1 and copies the noun there into the logits, so
it predicts the first noun: right on "crosser" sentences, the other noun on
"crossed" ones. Small seeded noise everywhere else (including the MLPs and
layer 1) keeps every path of the forward in play. attn_scale is 6.0, not
sqrt(d_head) = 4: a reader that divides by 4 gets other numbers.
"""
import json
import os
import struct
import sys

import numpy as np

NOUNS = ["animal", "street", "dog", "road", "cat", "river", "horse", "bridge", "fox", "field",
         "goat", "path", "cow", "lane", "deer", "creek"]
ADJS = ["tired", "scared", "slow", "weak", "wet", "wide", "busy", "steep"]  # 4 crosser, 4 crossed
OTHER = ["the", "did", "not", "cross", "because", "it", "was", "too", ",", "so", "waited", "."]
T_LEN = 18
CFG = {
    "n_layers": 2, "d_model": 64, "n_ctx": T_LEN, "d_head": 16, "n_heads": 4, "d_mlp": 32,
    "act_fn": "gelu", "d_vocab": 36, "d_vocab_out": 36, "eps": 1e-5, "normalization_type": "LN",
    "positional_embedding_type": "standard", "attn_only": False, "attention_dir": "causal",
    "use_attn_scale": True, "attn_scale": 6.0, "model_name": "hand-built-copier",
    "original_architecture": None, "device": "cpu", "seed": 7, "init_weights": False,
    "use_attn_result": False, "use_split_qkv_input": False, "final_rms": False,
    "parallel_attn_mlp": False, "gated_mlp": False, "dtype": "torch.float32",
}


def vocabulary():
    words = OTHER + NOUNS + ADJS
    order = np.random.default_rng(3).permutation(len(words))
    return [words[i] for i in order]


def sentence(x, y, adj):
    ref = x if ADJS.index(adj) < 4 else y
    return ["the", x, "did", "not", "cross", "the", y, "because", "it", "was", "too", adj, ",",
            "so", "the", ref, "waited", "."]


def build(vocab):
    c = CFG
    D, H, dh, M, V, L = c["d_model"], c["n_heads"], c["d_head"], c["d_mlp"], c["d_vocab"], c["n_layers"]
    rng = np.random.default_rng(11)
    noise = lambda *shape: (0.02 * rng.standard_normal(shape)).astype(np.float32)  # noqa: E731
    p = {}
    W_E = noise(V, D)
    for v in range(V):
        W_E[v, v] += 4.0  # token v on dim v
    W_pos = noise(T_LEN, D)
    for t in range(T_LEN):
        W_pos[t, 36 + t] += 4.0  # position t on dim 36 + t
    p["embed.W_E"], p["pos_embed.W_pos"] = W_E, W_pos
    for l in range(L):
        b = "blocks.%d." % l
        p[b + "ln1.w"] = 1.0 + noise(D)
        p[b + "ln1.b"] = noise(D)
        W_Q, W_K, W_V, W_O = noise(H, D, dh), noise(H, D, dh), noise(H, D, dh), noise(H, dh, D)
        if l == 0:  # head 0: query at 14 -> key at 1, copy the noun there
            W_Q[0, 36 + 14, 0] += 1.0
            W_K[0, 36 + 1, 0] += 1.0
            for k, n in enumerate(NOUNS):
                W_V[0, vocab.index(n), k] += 1.0
                W_O[0, k, vocab.index(n)] += 10.0
        p[b + "attn.W_Q"], p[b + "attn.W_K"], p[b + "attn.W_V"], p[b + "attn.W_O"] = W_Q, W_K, W_V, W_O
        p[b + "attn.b_Q"], p[b + "attn.b_K"], p[b + "attn.b_V"] = noise(H, dh), noise(H, dh), noise(H, dh)
        p[b + "attn.b_O"] = noise(D)
        p[b + "ln2.w"], p[b + "ln2.b"] = 1.0 + noise(D), noise(D)
        p[b + "mlp.W_in"], p[b + "mlp.b_in"] = 5 * noise(D, M), noise(M)
        p[b + "mlp.W_out"], p[b + "mlp.b_out"] = 5 * noise(M, D), noise(D)
    p["ln_final.w"], p["ln_final.b"] = 1.0 + noise(D), noise(D)
    W_U = noise(D, V)
    for v in range(V):
        W_U[v, v] += 1.0
    p["unembed.W_U"], p["unembed.b_U"] = W_U, noise(V)
    return p


def layer_norm(x, w, b, eps):
    x = x - x.mean(-1, keepdims=True)
    scale = np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return x / scale * w + b


def gelu(x):
    from math import erf, sqrt
    return x * 0.5 * (1.0 + np.vectorize(lambda v: erf(v / sqrt(2.0)))(x))


def forward(p, tokens):
    """logits (T, V) in float64 from float32 weights, TransformerLens order."""
    c = CFG
    q = {k: v.astype(np.float64) for k, v in p.items()}
    T = len(tokens)
    x = q["embed.W_E"][tokens] + q["pos_embed.W_pos"][:T]
    mask = np.triu(np.ones((T, T), dtype=bool), 1)
    for l in range(c["n_layers"]):
        b = "blocks.%d." % l
        h = layer_norm(x, q[b + "ln1.w"], q[b + "ln1.b"], c["eps"])
        Q = np.einsum("td,hde->hte", h, q[b + "attn.W_Q"]) + q[b + "attn.b_Q"][:, None, :]
        K = np.einsum("td,hde->hte", h, q[b + "attn.W_K"]) + q[b + "attn.b_K"][:, None, :]
        Vv = np.einsum("td,hde->hte", h, q[b + "attn.W_V"]) + q[b + "attn.b_V"][:, None, :]
        s = np.einsum("hie,hje->hij", Q, K) / c["attn_scale"]
        s[:, mask] = -np.inf
        s = np.exp(s - s.max(-1, keepdims=True))
        a = s / s.sum(-1, keepdims=True)
        z = np.einsum("hij,hje->hie", a, Vv)
        x = x + np.einsum("hte,hed->td", z, q[b + "attn.W_O"]) + q[b + "attn.b_O"]
        h = layer_norm(x, q[b + "ln2.w"], q[b + "ln2.b"], c["eps"])
        pre = h @ q[b + "mlp.W_in"] + q[b + "mlp.b_in"]
        x = x + gelu(pre) @ q[b + "mlp.W_out"] + q[b + "mlp.b_out"]
    h = layer_norm(x, q["ln_final.w"], q["ln_final.b"], c["eps"])
    return h @ q["unembed.W_U"] + q["unembed.b_U"]


def write_safetensors(path, tensors, metadata):
    header, data, pos = {}, b"", 0
    for name, arr in tensors:
        raw = np.ascontiguousarray(arr).astype("<f4" if arr.dtype != np.bool_ else "u1").tobytes()
        header[name] = {"dtype": "BOOL" if arr.dtype == np.bool_ else "F32",
                        "shape": list(arr.shape), "data_offsets": [pos, pos + len(raw)]}
        data += raw
        pos += len(raw)
    header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    vocab = vocabulary()
    p = build(vocab)
    # TransformerLens state-dict order, with its attention buffers
    tensors = [("embed.W_E", p["embed.W_E"]), ("pos_embed.W_pos", p["pos_embed.W_pos"])]
    for l in range(CFG["n_layers"]):
        b = "blocks.%d." % l
        for k in ["ln1.w", "ln1.b", "ln2.w", "ln2.b", "attn.W_Q", "attn.W_O", "attn.b_Q", "attn.b_O",
                  "attn.W_K", "attn.W_V", "attn.b_K", "attn.b_V"]:
            tensors.append((b + k, p[b + k]))
        tensors.append((b + "attn.mask", np.tril(np.ones((T_LEN, T_LEN), dtype=bool))))
        tensors.append((b + "attn.IGNORE", np.array(-1e5, dtype=np.float32)))
        for k in ["mlp.W_in", "mlp.b_in", "mlp.W_out", "mlp.b_out"]:
            tensors.append((b + k, p[b + k]))
    for k in ["ln_final.w", "ln_final.b", "unembed.W_U", "unembed.b_U"]:
        tensors.append((k, p[k]))
    write_safetensors(os.path.join(out, "model.safetensors"), tensors,
                      {"format": "pt", "config": json.dumps(CFG)})
    with open(os.path.join(out, "vocab.txt"), "w") as f:
        f.write("\n".join(vocab) + "\n")
    # 24 held-out ordered pairs of a split of our own
    pairs = [(x, y) for x in NOUNS for y in NOUNS if x != y]
    pick = np.random.default_rng(5).permutation(len(pairs))[:24]
    held = sorted(pairs[i] for i in pick)
    with open(os.path.join(out, "heldout_pairs.txt"), "w") as f:
        f.write("# x y: held out with all 8 adjectives\n")
        f.writelines("%s %s\n" % xy for xy in held)
    right = other = n = 0
    for x, y in held:
        for adj in ADJS:
            s = sentence(x, y, adj)
            logits = forward(p, [vocab.index(w) for w in s])
            top = vocab[int(np.argmax(logits[14]))]
            ref = s[15]
            right += top == ref
            other += top == (y if ref == x else x)
            n += 1
    sent = "the animal did not cross the street because it was too tired , so the".split()
    lg = forward(p, [vocab.index(w) for w in sent])[len(sent) - 1]
    prob = np.exp(lg - lg.max())
    prob /= prob.sum()
    top5 = [[vocab[i], float(prob[i])] for i in np.argsort(-prob)[:5]]
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump({"n": n, "accuracy": right / n, "other_noun_rate": other / n,
                   "sentence": " ".join(sent), "top": top5}, f, indent=1)


if __name__ == "__main__":
    main()
