#!/usr/bin/python3
"""Checks a `headscope cache` file against other commands' numbers, reading
it the way a TransformerLens user would: numpy by hand (the 8-byte header
length, the JSON header, np.frombuffer of the data), and torch
(torch.frombuffer) where the safetensors package is absent.

Usage:
  cache_check.py pattern CACHE INSPECT_DIR
      every blocks.l.attn.hook_pattern [1, H, T, T] equals the attention of
      inspect's attention_grid.json ([L*H, T, T], float32 printed exactly) to
      1e-6, hook_tokens equals its token_ids, the shapes are TL's.
  cache_check.py dla CACHE MODEL DLA_JSON
      each head's direct logit attribution computed here from the cache
      (hook_result at the last position, centred, divided by
      ln_final.hook_scale, times ln_final.w, dotted with W_U[:, answer] -
      W_U[:, wrong]; TL's apply_ln_to_stack + logit_attrs), averaged over
      the batch, equals `dla --json`'s component to 1e-6 (relative 1e-5).
      answer / wrong: the token ids given after DLA_JSON.
  cache_check.py names CACHE NAME...
      the file holds exactly these tensors, in this order.
  cache_check.py rows CACHE_SET CACHE_ONE ROW
      every tensor of CACHE_ONE (batch 1) is bit-identical to row ROW of
      CACHE_SET's.
Exit 0 when every check passes; an AssertionError otherwise.
"""
import json
import struct
import sys

import numpy as np


def read_numpy(path):
    """{name: float32 array}, metadata, in file order."""
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    out = {}
    for name, e in header.items():
        assert e["dtype"] == "F32", (name, e["dtype"])
        b, en = e["data_offsets"]
        out[name] = np.frombuffer(data[b:en], dtype="<f4").reshape(e["shape"])
    return out, meta


def read_torch(path):
    """The same tensors through torch (what safetensors.torch.load_file gives)."""
    try:
        from safetensors.torch import load_file
        return {k: v.numpy() for k, v in load_file(path).items()}
    except ImportError:
        import torch
        raw = bytearray(open(path, "rb").read())
        n = struct.unpack("<Q", raw[:8])[0]
        header = json.loads(bytes(raw[8:8 + n]))
        header.pop("__metadata__", None)
        out = {}
        for name, e in header.items():
            b, en = e["data_offsets"]
            t = torch.frombuffer(raw, dtype=torch.float32, count=(en - b) // 4, offset=8 + n + b)
            out[name] = t.reshape(e["shape"]).numpy()
        return out


def load(path):
    c, meta = read_numpy(path)
    assert meta["generator"].startswith("headscope ") and meta["generator"].endswith(" cache"), meta
    t = read_torch(path)
    assert list(t) == list(c), "torch and numpy see other tensors"
    for k in c:
        assert np.array_equal(t[k], c[k]), k
    b, p = int(meta["batch"]), int(meta["pos"])
    assert c["hook_tokens"].shape == (b, p), c["hook_tokens"].shape
    return c, meta


def check_pattern(cache, inspect_dir):
    c, _ = load(cache)
    grid = json.load(open(inspect_dir + "/attention_grid.json"))
    att = np.array(grid["attention"], dtype=np.float64)
    cfg = grid["config"]
    L, H, T = cfg["n_layers"], cfg["n_heads"], len(grid["tokens"])
    assert np.array_equal(c["hook_tokens"][0], np.array(grid["token_ids"], dtype=np.float32))
    for l in range(L):
        p = c["blocks.%d.attn.hook_pattern" % l]
        assert p.shape == (1, H, T, T), p.shape
        z = c["blocks.%d.attn.hook_z" % l]
        assert z.shape == (1, T, H, cfg["d_head"]), z.shape
        d = np.abs(p[0].astype(np.float64) - att[l * H:(l + 1) * H]).max()
        assert d <= 1e-6, "layer %d: pattern differs from inspect's by %g" % (l, d)
    print("pattern: %d layers x %d heads x %d x %d equal to inspect's" % (L, H, T, T))


def check_dla(cache, model, dla_json, answer, wrong):
    c, _ = load(cache)
    w, _ = read_numpy(model)
    comps = {x["component"]: x["attribution"] for x in json.load(open(dla_json))["components"]}
    direction = w["unembed.W_U"][:, answer].astype(np.float64) - w["unembed.W_U"][:, wrong]
    gain = w["ln_final.w"].astype(np.float64)
    scale = c["ln_final.hook_scale"].astype(np.float64)  # [B, T, 1]
    n = 0
    for l in range(1000):
        key = "blocks.%d.attn.hook_result" % l
        if key not in c:
            break
        r = c[key].astype(np.float64)[:, -1]  # [B, H, D] at the last position
        r = r - r.mean(axis=-1, keepdims=True)
        r = r / scale[:, -1][:, None, :]
        attr = ((r * gain) @ direction).mean(axis=0)  # [H]
        for h, a in enumerate(attr):
            want = comps["L%dH%d" % (l, h)]
            assert abs(a - want) <= 1e-6 + 1e-5 * abs(want), "L%dH%d: %r here, %r in dla" % (l, h, a, want)
            n += 1
    assert n > 0
    print("dla: %d heads equal to dla's" % n)


def check_names(cache, names):
    c, _ = load(cache)
    assert list(c) == names, list(c)


def check_rows(cache_set, cache_one, row):
    s, _ = load(cache_set)
    o, _ = load(cache_one)
    assert list(s) == list(o)
    for k in o:
        assert np.array_equal(s[k][row], o[k][0]), k
    print("rows: row %d of %d tensors bit-identical" % (row, len(o)))


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "pattern":
        check_pattern(sys.argv[2], sys.argv[3])
    elif what == "dla":
        check_dla(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]))
    elif what == "names":
        check_names(sys.argv[2], sys.argv[3:])
    elif what == "rows":
        check_rows(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        sys.exit("unknown check " + what)
