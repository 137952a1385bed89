"""The headscope package against the CLI and an independent numpy forward
(tests/test_python.sh runs these in a fresh virtual environment)."""
import headscope  # first: before numpy loads OpenBLAS (headscope/_lib.py)

import json
import re
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import SENTENCE, read_safetensors, run_hs

FLT_MAX = np.float32(3.4028235e38)


def bits_equal(a, b):
    a = np.ascontiguousarray(a, np.float32)
    b = np.ascontiguousarray(b, np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def as_file(name, a):
    """A cache array as `headscope cache` writes it: the causal mask's -inf
    in hook_attn_scores as -FLT_MAX."""
    return np.where(np.isneginf(a), -FLT_MAX, a).astype(np.float32) if name.endswith("hook_attn_scores") else a


# --------------------------------------------------------------------------
# run_with_cache

def test_openblas_kernels_are_the_clis():
    core = run_hs("--version").stdout.split("OpenBLAS core ")[1].rstrip(")\n")
    assert headscope.BLAS_CORE == core
    # numpy first: the kernels OpenBLAS chose stay, and a warning says so when they are not the CLI's
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    r = subprocess.run([sys.executable, "-W", "always", "-c", "import numpy, headscope; print(headscope.BLAS_CORE)"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert (r.stdout.strip() != core) == ("older than the %s ones the headscope CLI runs" % core in r.stderr)


def test_cache_equals_cli_file_bit_for_bit(tiny, tiny_path, tmp_path):
    out = tmp_path / "one.safetensors"
    run_hs("cache", "--model", tiny_path, "--sentence", SENTENCE, "--out", out, "--threads", "1")
    ref, _ = read_safetensors(out)
    logits, cache = tiny.run_with_cache(tiny.to_tokens(SENTENCE))
    assert list(cache.keys()) == list(ref.keys())
    assert len(ref) == 53
    for name, want in ref.items():
        assert bits_equal(as_file(name, cache[name]), want), name
    assert bits_equal(logits, ref["logits"])
    assert cache["pattern", 0] is cache["blocks.0.attn.hook_pattern"]
    assert cache["blocks.1.attn.hook_pattern"].shape == (1, 4, 14, 14)
    assert ("z", 1) in cache and "blocks.1.attn.hook_z" in cache and "blocks.9.attn.hook_z" not in cache


def test_cache_batch_equals_cli_file(tiny, tiny_path, prompts, tmp_path):
    path, rows = prompts
    out = tmp_path / "set.safetensors"
    run_hs("cache", "--model", tiny_path, "--data", path, "--out", out, "--threads", "2")
    ref, _ = read_safetensors(out)
    _, cache = tiny.run_with_cache([r["prompt"] for r in rows])
    assert list(cache.keys()) == list(ref.keys())
    for name, want in ref.items():
        assert bits_equal(as_file(name, cache[name]), want), name


def test_names_filter(tiny):
    toks = tiny.to_tokens(SENTENCE)
    full_logits, full = tiny.run_with_cache(toks)
    logits, c = tiny.run_with_cache(toks, names_filter="blocks.*.attn.hook_z")
    assert list(c.keys()) == ["blocks.0.attn.hook_z", "blocks.1.attn.hook_z"]
    assert bits_equal(logits, full_logits) and bits_equal(c["z", 1], full["z", 1])
    _, c = tiny.run_with_cache(toks, names_filter=lambda n: n.endswith("hook_pattern"))
    assert list(c.keys()) == ["blocks.0.attn.hook_pattern", "blocks.1.attn.hook_pattern"]
    _, c = tiny.run_with_cache(toks, names_filter=["hook_embed", "logits"])
    assert list(c.keys()) == ["hook_embed", "logits"]
    _, c = tiny.run_with_cache(toks, names_filter=lambda n: False)
    assert len(c) == 0


def test_arrays_are_views_that_outlive_the_model(tiny_path):
    m = headscope.load(tiny_path)
    logits, cache = m.run_with_cache(SENTENCE)
    pat = cache["pattern", 1]
    assert not pat.flags.owndata and pat.base is not None
    keep = pat.copy()
    m.free()
    del cache, logits
    assert bits_equal(pat, keep)  # the view keeps its buffer alive
    with pytest.raises(headscope.HeadscopeError, match="the model was freed"):
        m(SENTENCE)


def test_cache_stacking_helpers(tiny):
    _, cache = tiny.run_with_cache(SENTENCE)
    final = cache["blocks.1.hook_resid_post"]
    parts, labels = cache.decompose_resid(return_labels=True)
    assert labels == ["embed", "pos_embed", "0_attn_out", "0_mlp_out", "1_attn_out", "1_mlp_out"]
    assert parts.shape == (6, 1, 14, 32)
    assert np.abs(parts.astype(np.float64).sum(0) - final).max() < 1e-5
    acc, labels = cache.accumulated_resid(incl_mid=True, return_labels=True)
    assert labels == ["0_pre", "0_mid", "1_pre", "1_mid", "final_post"] and bits_equal(acc[-1], final)
    assert bits_equal(cache.accumulated_resid(layer=1)[0], cache["resid_pre", 0])
    heads, labels = cache.stack_head_results(return_labels=True)
    assert labels[:2] == ["L0H0", "L0H1"] and heads.shape == (8, 1, 14, 32)
    b_O = tiny.b_O
    for l in range(2):
        got = heads[4 * l:4 * l + 4].astype(np.float64).sum(0) + b_O[l]
        assert np.abs(got - cache["attn_out", l]).max() < 1e-5
    # through the final norm with its cached scale, times its weight, plus its bias: what W_U reads
    w, b = tiny.get_weight("ln_final.w"), tiny.get_weight("ln_final.b")
    normed = cache.apply_ln_to_stack(final[None])[0] * w + b
    assert np.abs(normed - cache["unembed.hook_in"]).max() < 1e-5
    assert cache.decompose_resid(apply_ln=True, pos_slice=-1).shape == (6, 1, 32)


def test_model_call_equals_cache_logits(tiny):
    toks = tiny.to_tokens(SENTENCE)
    logits, _ = tiny.run_with_cache(toks)
    assert logits.dtype == np.float32 and logits.shape == (1, 14, 36)
    assert bits_equal(tiny(toks), logits)
    assert bits_equal(tiny(SENTENCE), logits)
    assert bits_equal(tiny(toks[0]), logits)


# --------------------------------------------------------------------------
# an independent float64 forward (weights read from the file by hand)

def _ln(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def reference_forward(W, cfg, tokens):
    erf = np.vectorize(math.erf)
    L, H, dh = cfg["n_layers"], cfg["n_heads"], cfg["d_head"]
    T = tokens.shape[1]
    g = {k: v.astype(np.float64) for k, v in W.items()}
    x = g["embed.W_E"][tokens] + g["pos_embed.W_pos"][:T][None]
    acts = {"hook_embed": g["embed.W_E"][tokens]}
    mask = np.triu(np.ones((T, T), bool), 1)
    for l in range(L):
        p = "blocks.%d." % l
        acts[p + "hook_resid_pre"] = x
        h = _ln(x, g[p + "ln1.w"], g[p + "ln1.b"])
        q = np.einsum("btd,hde->bthe", h, g[p + "attn.W_Q"]) + g[p + "attn.b_Q"]
        k = np.einsum("btd,hde->bthe", h, g[p + "attn.W_K"]) + g[p + "attn.b_K"]
        v = np.einsum("btd,hde->bthe", h, g[p + "attn.W_V"]) + g[p + "attn.b_V"]
        s = np.einsum("bqhe,bkhe->bhqk", q, k) / math.sqrt(dh)
        s = np.where(mask, -np.inf, s)
        a = np.exp(s - s.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        z = np.einsum("bhqk,bkhe->bqhe", a, v)
        attn_out = np.einsum("bqhe,hed->bqd", z, g[p + "attn.W_O"]) + g[p + "attn.b_O"]
        acts[p + "attn.hook_pattern"], acts[p + "attn.hook_z"] = a, z
        acts[p + "hook_attn_out"] = attn_out
        x = x + attn_out
        h = _ln(x, g[p + "ln2.w"], g[p + "ln2.b"])
        pre = h @ g[p + "mlp.W_in"] + g[p + "mlp.b_in"]
        post = 0.5 * pre * (1 + erf(pre / math.sqrt(2)))
        acts[p + "mlp.hook_post"] = post
        x = x + post @ g[p + "mlp.W_out"] + g[p + "mlp.b_out"]
        acts[p + "hook_resid_post"] = x
    logits = _ln(x, g["ln_final.w"], g["ln_final.b"]) @ g["unembed.W_U"] + g["unembed.b_U"]
    acts["logits"] = logits
    return acts


def test_cache_equals_float64_forward(tiny, tiny_path, prompts):
    W, meta = read_safetensors(tiny_path)
    cfg = json.loads(meta["config"])
    toks = tiny.to_tokens([r["prompt"] for r in prompts[1]])
    ref = reference_forward(W, cfg, toks)
    logits, cache = tiny.run_with_cache(toks)
    assert len(ref) == 14
    for name, want in ref.items():
        got = cache[name].astype(np.float64)
        err = np.abs(got - want).max()
        assert err <= 1e-5 * max(1.0, np.abs(want).max()), (name, err)


def test_weights_are_tl_shaped(tiny, tiny_path):
    W, _ = read_safetensors(tiny_path)
    assert tiny.W_Q.shape == (2, 4, 32, 8) and tiny.W_O.shape == (2, 4, 8, 32)
    assert bits_equal(tiny.W_K[1], W["blocks.1.attn.W_K"]) and bits_equal(tiny.b_V[0], W["blocks.0.attn.b_V"])
    assert bits_equal(tiny.W_in[1], W["blocks.1.mlp.W_in"]) and bits_equal(tiny.b_out[0], W["blocks.0.mlp.b_out"])
    for a, n in [("W_E", "embed.W_E"), ("W_pos", "pos_embed.W_pos"), ("W_U", "unembed.W_U"), ("b_U", "unembed.b_U")]:
        assert bits_equal(getattr(tiny, a), W[n]), a
    assert np.allclose(tiny.OV[1, 2].AB, W["blocks.1.attn.W_V"][2] @ W["blocks.1.attn.W_O"][2])
    assert np.allclose(np.asarray(tiny.QK[0, 3]), W["blocks.0.attn.W_Q"][3] @ W["blocks.0.attn.W_K"][3].T)
    assert tiny.OV.shape == (2, 4, 32, 32)
    assert not tiny.W_Q.flags.writeable
    assert bits_equal(tiny.get_weight("ln_final.w"), W["ln_final.w"])


def test_cfg_has_tl_names(tiny):
    c = tiny.cfg
    assert (c.n_layers, c.n_heads, c.d_model, c.d_head, c.d_mlp, c.d_vocab, c.n_ctx) == (2, 4, 32, 8, 64, 36, 18)
    assert c.act_fn == "gelu" and c.normalization_type == "LN" and c.eps == 1e-5
    assert c.positional_embedding_type == "standard" and c.attn_only is False
    assert c.weights == "raw" and c.to_dict()["d_vocab_out"] == 36


def test_process_tl(tiny_path):
    m = headscope.load(tiny_path, process="tl")
    assert m.cfg.normalization_type == "LNPre" and m.cfg.weights == "tl-processed"
    raw = headscope.load(tiny_path)
    _, a = m.run_with_cache(SENTENCE, names_filter="**hook_pattern")
    _, b = raw.run_with_cache(SENTENCE, names_filter="**hook_pattern")
    assert np.abs(a["pattern", 1] - b["pattern", 1]).max() < 1e-5
    assert not np.allclose(m.W_Q, raw.W_Q)


# --------------------------------------------------------------------------
# tokenizer

def test_to_tokens_equals_cli_tokenize(tiny, tiny_path, tmp_path):
    texts = [SENTENCE, "the dog waited , so it was too scared", "the   fox   .  it"]
    f = tmp_path / "t.jsonl"
    f.write_text("".join(json.dumps(s) + "\n" for s in texts))
    out = run_hs("tokenize", "--model", tiny_path, "--jsonl", f).stdout.splitlines()
    for s, line in zip(texts, out):
        want = json.loads(line)
        assert tiny.to_tokens(s)[0].tolist() == want["ids"]
        assert tiny.to_tokens(s).dtype == np.int64
        assert tiny.to_str_tokens(s) == want["tokens"]
    assert tiny.to_string(tiny.to_tokens(texts[0])[0]) == texts[0]
    assert tiny.to_string(tiny.to_tokens([texts[0]])) == [texts[0]]
    assert tiny.to_single_token("animal") == 12
    # one id, as a researcher passes logits[0, -1].argmax(): TL's list of one
    assert tiny.to_str_tokens(np.int64(12)) == ["animal"] == tiny.to_str_tokens(12)
    assert tiny.to_single_str_token(12) == "animal"
    with pytest.raises(headscope.HeadscopeError, match="one integer token id"):
        tiny.to_single_str_token([12])


def test_gpt2_bpe_tokens_and_weights(gpt2_dir, tmp_path):
    m = headscope.load(gpt2_dir)
    texts = ["Hello, world! When Mary and John went to the store,", " naïve café\n\tdone", "<|endoftext|> x"]
    f = tmp_path / "t.jsonl"
    f.write_text("".join(json.dumps(s) + "\n" for s in texts))
    for bos, extra in [(True, []), (False, ["--no-bos"])]:
        out = run_hs("tokenize", "--model", gpt2_dir, "--jsonl", f, *extra).stdout.splitlines()
        for s, line in zip(texts, out):
            want = json.loads(line)
            assert m.to_tokens(s, prepend_bos=bos)[0].tolist() == want["ids"]
            assert m.to_str_tokens(s, prepend_bos=bos) == want["tokens"]
    t = m.to_tokens(texts[0])
    assert t[0, 0] == 50256
    assert m.to_string(t[0, 1:]) == texts[0]
    # a Hugging Face folder's packed c_attn and tied lm_head, as TL's shapes
    W, _ = read_safetensors(os.path.join(gpt2_dir, "model.safetensors"))
    pre = "transformer." if "transformer.wte.weight" in W else ""
    D, H = m.cfg.d_model, m.cfg.n_heads
    dh = D // H
    c_attn = W[pre + "h.1.attn.c_attn.weight"].astype(np.float32)
    for i, a in enumerate(["W_Q", "W_K", "W_V"]):
        want = c_attn[:, i * D:(i + 1) * D].reshape(D, H, dh).transpose(1, 0, 2)
        assert bits_equal(getattr(m, a)[1], want), a
    assert bits_equal(m.W_U, W[pre + "wte.weight"].astype(np.float32).T)
    logits = m(t)
    assert logits.shape == (1, t.shape[1], 50257)
    # prompts ioi == the CLI's file
    out = tmp_path / "ioi.jsonl"
    run_hs("prompts", "ioi", "--model", gpt2_dir, "--n", "6", "--seed", "3", "--template", "0", "--out", out)
    rows = headscope.prompts_ioi(m, 6, seed=3, template=0)
    assert rows == [json.loads(l) for l in out.read_text().splitlines()]
    want = json.loads(run_hs("patch", "--model", gpt2_dir, "--data", out, "--acts", "z", "--by", "head",
                             "--json").stdout)
    assert headscope.patch(m, str(out), acts=["z"], by="head") == want
    with pytest.raises(headscope.HeadscopeError, match=r"n must be an integer in \[1, "):
        headscope.prompts_ioi(m, 0)


# --------------------------------------------------------------------------
# hooks

def _ld(logits, rows, tiny):
    a = [tiny.to_single_token(r["answer"]) for r in rows]
    w = [tiny.to_single_token(r["wrong"]) for r in rows]
    # as the library: each LD in double, summed in prompt order
    return sum(float(logits[i, -1, a[i]]) - float(logits[i, -1, w[i]]) for i in range(len(rows))) / len(rows)


def test_zero_hook_z_equals_ablate_zero(tiny, tiny_path, prompts):
    path, rows = prompts
    ref = json.loads(run_hs("ablate", "--model", tiny_path, "--data", path, "--method", "zero", "--json").stdout)
    toks = tiny.to_tokens([r["prompt"] for r in rows])
    comps = {c["component"]: c for c in ref["components"]}
    assert math.isclose(_ld(tiny(toks), rows, tiny), ref["metric_clean"], rel_tol=1e-6, abs_tol=1e-7)
    n_checked = 0
    for layer in range(2):
        for head in range(4):
            def zero(z, hook, head=head):
                z[:, :, head, :] = 0.0
            got = _ld(tiny.run_with_hooks(toks, fwd_hooks=[("blocks.%d.attn.hook_z" % layer, zero)]), rows, tiny)
            want = comps["L%dH%d" % (layer, head)]["metric"]
            assert math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-7), (layer, head, got, want)
            assert abs(got - ref["metric_clean"]) > 1e-4  # the edit does change the logits
            n_checked += 1
    assert n_checked == 8


def test_hook_return_and_inplace_agree(tiny):
    toks = tiny.to_tokens(SENTENCE)

    def inplace(z, hook):
        z[:, :, 1] *= 0.5

    def returned(z, hook):
        out = z.copy()
        out[:, :, 1] *= 0.5
        return out

    seen = []
    a = tiny.run_with_hooks(toks, fwd_hooks=[("blocks.0.attn.hook_z", inplace)])
    b = tiny.run_with_hooks(toks, fwd_hooks=[(lambda n: n == "blocks.0.attn.hook_z", returned),
                                             ("blocks.*.attn.hook_pattern", lambda p, h: seen.append(h.name))])
    assert bits_equal(a, b) and not bits_equal(a, tiny(toks))
    assert seen == ["blocks.0.attn.hook_pattern", "blocks.1.attn.hook_pattern"]
    _, cache = tiny.run_with_cache(toks, fwd_hooks=[("blocks.0.attn.hook_z", inplace)])
    assert bits_equal(cache["logits"], a)
    assert bits_equal(tiny(toks), tiny.run_with_hooks(toks, fwd_hooks=[]))


# --------------------------------------------------------------------------
# experiments == the CLI's JSON

def test_patch_equals_cli(tiny, tiny_path, prompts):
    path, rows = prompts
    want = json.loads(run_hs("patch", "--model", tiny_path, "--data", path, "--json").stdout)
    assert headscope.patch(tiny, path) == want
    assert headscope.patch(tiny, rows)["acts"] == want["acts"]
    want = json.loads(run_hs("patch", "--model", tiny_path, "--data", path, "--json", "--acts", "z,resid_pre",
                             "--by", "head").stdout)
    assert headscope.patch(tiny, path, acts=["z", "resid_pre"], by="head") == want
    want = json.loads(run_hs("patch", "--model", tiny_path, "--data", path, "--json", "--acts", "z",
                             "--method", "atp").stdout)
    assert headscope.patch(tiny, path, acts="z", method="atp") == want


def test_ablate_dla_lens_heads_equal_cli(tiny, tiny_path, prompts):
    path, rows = prompts
    for method in ("zero", "mean", "resample"):
        want = json.loads(run_hs("ablate", "--model", tiny_path, "--data", path, "--json", "--method", method).stdout)
        assert headscope.ablate(tiny, path, method=method) == want, method
    want = json.loads(run_hs("ablate", "--model", tiny_path, "--data", path, "--json", "--ref", path).stdout)
    assert headscope.ablate(tiny, path, ref=rows) == want
    want = json.loads(run_hs("dla", "--model", tiny_path, "--data", path, "--json").stdout)
    assert headscope.dla(tiny, path) == want
    want = json.loads(run_hs("dla", "--model", tiny_path, "--data", path, "--json", "--by-position").stdout)
    assert headscope.dla(tiny, rows, by_position=True)["components"] == want["components"]
    want = json.loads(run_hs("lens", "--model", tiny_path, "--data", path, "--json").stdout)
    assert headscope.lens(tiny, path) == want
    want = json.loads(run_hs("heads", "--model", tiny_path, "--data", path, "--json", "--metric", "abs",
                             "--exclude-bos").stdout)
    assert headscope.heads(tiny, path, metric="abs", exclude_bos=True) == want
    assert headscope.heads(tiny, path) != want


def test_discover_equals_cli(tiny, tiny_path, prompts, tmp_path):
    path, rows = prompts
    out = tmp_path / "disc"
    want = json.loads(run_hs("discover", "--model", tiny_path, "--data", path, "--method", "eap-ig", "--top", "6",
                             "--json").stdout)
    run_hs("discover", "--model", tiny_path, "--data", path, "--method", "eap-ig", "--top", "6", "--out", out,
           "--format", "json")
    d = headscope.discover(tiny, path, top=6)
    assert dict(d) == want
    assert d.graph_json == (out / "graph.json").read_text()
    assert len(d.circuit) == want["circuit"]["edges"] and d.faithfulness == want["circuit"]["faithfulness"]
    strongest = want["strongest_edges"]
    assert [e for e, _ in d.top(3)] == [e["edge"] for e in strongest[:3]]
    want = json.loads(run_hs("discover", "--model", tiny_path, "--data", path, "--method", "eap", "--ablation", "mean",
                             "--threshold", "0.05", "--json").stdout)
    assert dict(headscope.discover(tiny, rows, method="eap", ablation="mean", threshold=0.05)) == want
    # the circuit found, run again by faithfulness (== faithfulness --json on its graph.json)
    want = json.loads(run_hs("faithfulness", "--model", tiny_path, "--data", path, "--graph", out / "graph.json",
                             "--json").stdout)
    assert headscope.faithfulness(tiny, path, out / "graph.json") == want
    assert headscope.faithfulness(tiny, rows, d) == want
    assert want["circuit"]["faithfulness"] == pytest.approx(d.faithfulness, rel=1e-6)
    with pytest.raises(headscope.HeadscopeError, match="method takes exact, acdc, eap, eap-ig, not 'eap-xx'"):
        headscope.discover(tiny, path, method="eap-xx")


def test_attention_figures(tiny, tmp_path):
    import struct
    import xml.dom.minidom
    _, cache = tiny.run_with_cache(SENTENCE, names_filter="**hook_pattern")
    toks = tiny.to_str_tokens(SENTENCE)
    f = headscope.figures.attention(cache["pattern", 1][0, 0], toks, tmp_path / "a.png", width=3.5, title="L1H0")
    png = f._repr_png_()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", png[16:24])
    assert w == 1050 and 600 < h < 2000  # 3.5 in at 300 dpi
    grid = np.stack([cache["pattern", l][0] for l in range(2)])
    f = headscope.figures.attention(grid, toks, tmp_path / "g.svg", dpi=72)
    doc = xml.dom.minidom.parseString(f.svg())
    ids = {g.getAttribute("id") for g in doc.getElementsByTagName("g")}
    assert {"L0H0", "L1H3"} <= ids
    # one layer's heads named by their layer, or by none: never a made-up L0
    f = headscope.figures.attention(cache["pattern", 1][0], toks, layer=1, dpi=72)
    ids = {g.getAttribute("id") for g in xml.dom.minidom.parseString(f.svg()).getElementsByTagName("g")}
    assert {"L1H0", "L1H3"} <= ids and not any(i.startswith("L0") for i in ids)
    f = headscope.figures.attention(cache["pattern", 1][0], toks, dpi=72)
    ids = {g.getAttribute("id") for g in xml.dom.minidom.parseString(f.svg()).getElementsByTagName("g")}
    assert not any(i.startswith("L0") or i.startswith("L1") for i in ids)
    with pytest.raises(headscope.HeadscopeError, match="layer is a layer index >= 0"):
        headscope.figures.attention(cache["pattern", 1][0], toks, layer=-1)
    with pytest.raises(headscope.HeadscopeError, match=r"cannot show every label in 0.50 in .* needs 2.24 in"):
        headscope.figures.attention(cache["pattern", 1][0, 0], toks, tmp_path / "b.png", width=0.5)
    with pytest.raises(headscope.HeadscopeError, match="tokens are 14 strings"):
        headscope.figures.attention(cache["pattern", 1][0, 0], toks[:3], tmp_path / "b.png")
    with pytest.raises(headscope.HeadscopeError, match="written as .png, .svg or .pdf"):
        headscope.figures.attention(cache["pattern", 1][0, 0], toks, tmp_path / "b.gif")
    assert not (tmp_path / "b.png").exists()
    mem = headscope.figures.attention(cache["pattern", 1][0, 0], toks, width=3.5, title="L1H0")
    assert mem.path is None and mem._repr_png_() == png  # the same bytes, kept in memory


def _svg_fills(svg, kind):
    """The fill colours of the SVG's cells (kind "path", row by row) or bars ("rect" of class bar)."""
    if kind == "path":
        cells = svg[svg.index('class="cells"'):]
        cells = cells[:cells.index("</g>\n</g>")]
        return re.findall(r'<path d="[^"]*" fill="(#[0-9a-f]{6})"', cells)
    return [(int(w), c, int(r)) for w, c, r in re.findall(
        r'<rect x="\d+" y="\d+" width="(\d+)" height="\d+" fill="(#[0-9a-f]{6})" class="bar" data-row="(\d+)"', svg)]


def test_figures_bars_heatmap_grid(tiny, tmp_path):
    # bars: positive red to the right, negative blue, length by value (2 : 1)
    f = headscope.figures.bars([2.0, -1.0], ["a", "b"], title="t", xlabel="logit difference")
    (wa, ca, _), (wb, cb, _) = _svg_fills(f.svg(), "rect")
    assert (ca, cb) == ("#bf3338", "#2e77b5") and abs(wa - 2 * wb) <= 1
    assert f.save(tmp_path / "b.pdf") and (tmp_path / "b.pdf").read_bytes()[:5] == b"%PDF-"
    assert f.png()[:8] == b"\x89PNG\r\n\x1a\n" and f.size[0] == 975  # a column, 3.25 in at 300 dpi
    # a chart too tall for a page: the largest bars; add_up (DLA's terms of one sum) sums the rest
    # in one "other n" bar, else (separate runs, scores) the rest are "not shown" and have no bar
    v = [(((i * 37) % 101) - 50) / 1000.0 for i in range(172)]
    names = ["c%d" % i for i in range(172)]
    for add_up in (True, False):
        svg = headscope.figures.bars(v, names, title="t", add_up=add_up).svg()
        other = re.findall(r">other (\d+)<", svg)
        kept = len(re.findall(r">c\d+<", svg))
        assert 10 < kept < 172 and other == ([str(172 - kept)] if add_up else []), (add_up, other, kept)
        assert ("the other %d %s" % (172 - kept, "summed" if add_up else "not")) in svg, add_up
    # heatmap: signed = diverging around 0 (the largest |value| the darkest end), else viridis from 0
    m = np.array([[1.0, -0.5], [0.0, 0.25]], np.float32)
    fills = _svg_fills(headscope.figures.heatmap(m, ["r0", "r1"], ["c0", "c1"]).svg(), "path")
    assert fills[0] == "#67001f" and int(fills[1][5:7], 16) > int(fills[1][1:3], 16) and fills[2] == "#f7f6f6"
    fills = _svg_fills(headscope.figures.heatmap(abs(m), ["r0", "r1"], ["c0", "c1"], signed=False).svg(), "path")
    assert fills[0] == "#fde725" and fills[2] == "#440154"
    with pytest.raises(headscope.HeadscopeError, match="column labels are 2 strings, got 1"):
        headscope.figures.heatmap(m, ["r0", "r1"], ["c0"])
    with pytest.raises(headscope.HeadscopeError, match="not finite|non-finite|NaN"):
        headscope.figures.heatmap(m * np.nan, ["r0", "r1"], ["c0", "c1"])
    # the head grid and DLA's bars from the experiment's dict
    _, cache = tiny.run_with_cache(SENTENCE, names_filter="**hook_pattern")
    g = headscope.figures.grid(np.stack([cache["pattern", l][0] for l in range(2)]), tiny.to_str_tokens(SENTENCE))
    assert {"L0H0", "L1H3"} <= set(re.findall(r'<g id="(L\dH\d)"', g.svg()))


def test_figures_patch_dla_circuit(tiny, tiny_path, prompts, tmp_path):
    path, rows = prompts
    # DLA's bars and discover's circuit: the CLI's own figures, byte for byte
    run_hs("dla", "--model", tiny_path, "--data", path, "--out", tmp_path / "dla", "--format", "svg")
    d = headscope.dla(tiny, path)
    svg = headscope.figures.dla(d).svg()
    assert svg == (tmp_path / "dla" / "dla_bars.svg").read_text()
    bars = _svg_fills(svg, "rect")  # (a bar of width 0 has no rect)
    assert len(bars) >= 8 and all((c == "#bf3338") == (d["components"][r]["attribution"] > 0) for _, c, r in bars
                                  if r < len(d["components"]))
    run_hs("discover", "--model", tiny_path, "--data", path, "--method", "eap-ig", "--top", "6", "--out",
           tmp_path / "disc", "--format", "svg")
    found = headscope.discover(tiny, path, top=6)
    assert headscope.figures.circuit(tiny, found).svg() == (tmp_path / "disc" / "circuit.svg").read_text()
    p = headscope.patch(tiny, path, acts="resid_pre,z")
    f = headscope.figures.patch(p, "z", tmp_path / "z.svg")
    svg = (tmp_path / "z.svg").read_text()
    assert "patching z per head, all positions" in svg and "not usable" in svg  # the CLI's title; why, said
    fills = set(_svg_fills(svg, "path"))  # (cells of one colour share a path)
    v = np.array(p["acts"]["z"]["metric"]).ravel()
    # [-1, 1] as the CLI's: a value past 1 takes the map's end, red above 0 and blue below
    assert ("#67001f" in fills) == bool((v >= 1).any()) and ("#053061" in fills) == bool((v <= -1).any())
    red = {int(c[1:3], 16) > int(c[5:7], 16) + 40 for c in fills}
    assert (True in red) == bool((v > 0.1).any()) and (False in red) == bool((v < -0.1).any())
    with pytest.raises(headscope.HeadscopeError, match="has no act 'mlp_out'"):
        headscope.figures.patch(p, "mlp_out")
    d = found
    c = headscope.figures.circuit(tiny, d, tmp_path / "c.svg")
    ids = set(re.findall(r'<g id="(e-[^"]+)"', (tmp_path / "c.svg").read_text()))
    assert c.edges == len(d.circuit) == len(ids) > 0
    # every circuit edge is drawn: "a0.h1->a1.h0<v>" is the SVG's "e-a0_h1-a1_h0-v"
    want = {"e-%s-%s" % tuple(x.replace(".", "_") for x in re.sub(r"<([qkv])>$", r"-\1", n).split("->"))
            for n in d.circuit}
    assert want == ids
    assert c.save(tmp_path / "c.png").endswith("c.png") and (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(headscope.HeadscopeError, match="cfg n_layers is 3"):
        g = dict(d.graph, cfg=dict(d.graph["cfg"], n_layers=3))
        headscope.figures.circuit(tiny, json.dumps(g))


# --------------------------------------------------------------------------
# bad input: HeadscopeError with the library's message, never a crash

E = headscope.HeadscopeError


def test_bad_inputs(tiny, tiny_path, tmp_path, prompts):
    toks = tiny.to_tokens(SENTENCE)
    with pytest.raises(E, match="cannot open /nonexistent/m.safetensors: No such file"):
        headscope.load("/nonexistent/m.safetensors")
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}      ")
    with pytest.raises(E) as ei:
        headscope.load(str(bad))
    assert str(bad) in str(ei.value) and ei.value.status != 0
    with pytest.raises(E, match="process must be 'raw' or 'tl'"):
        headscope.load(tiny_path, process="folded")
    with pytest.raises(E, match="unknown word 'zebra' at position 1"):
        tiny.to_tokens("the zebra did not")
    with pytest.raises(E, match="sentence is empty"):
        tiny.to_tokens("")
    with pytest.raises(E, match="more than the model's context of 18"):
        tiny.to_tokens(" ".join(["the"] * 19))
    with pytest.raises(E, match="different numbers of tokens"):
        tiny.to_tokens(["the animal", "the animal did"])
    with pytest.raises(E, match=r"token id 36 at \[0, 2\] is outside the vocabulary \[0, 36\)"):
        tiny(np.array([[0, 1, 36]]))
    with pytest.raises(E, match="token id -1 is outside the vocabulary"):
        tiny.to_string(np.array([3, -1]))
    with pytest.raises(E, match="19 tokens, more than the model's context of 18"):
        tiny(np.zeros((1, 19), np.int64))
    with pytest.raises(E, match="integer token ids"):
        tiny(np.zeros((1, 3), np.float32))
    with pytest.raises(E, match="cache filter 'blocks.0.attn.hook_zz' matches no hook point"):
        tiny.run_with_cache(toks, names_filter="blocks.0.attn.hook_zz")
    with pytest.raises(E, match="'blocks.5.attn.hook_z' matches no hook point"):
        tiny.run_with_hooks(toks, fwd_hooks=[("blocks.5.attn.hook_z", lambda a, h: None)])
    with pytest.raises(E, match=r"returned float64 \[1, 14, 4, 8\]; the point is float32 \[1, 14, 4, 8\]"):
        tiny.run_with_hooks(toks, fwd_hooks=[("blocks.0.attn.hook_z", lambda a, h: a.astype(np.float64))])
    with pytest.raises(E, match=r"returned float32 \[1, 14, 32\]; the point is float32 \[1, 14, 4, 8\]"):
        tiny.run_with_hooks(toks, fwd_hooks=[("blocks.0.attn.hook_z", lambda a, h: np.zeros((1, 14, 32), np.float32))])
    with pytest.raises(E, match="returned list"):
        tiny.run_with_hooks(toks, fwd_hooks=[("blocks.0.attn.hook_z", lambda a, h: [1.0])])
    with pytest.raises(E, match="the model is busy"):
        tiny.run_with_hooks(toks, fwd_hooks=[("blocks.0.attn.hook_z", lambda a, h: tiny(toks))])
    with pytest.raises(ZeroDivisionError):
        tiny.run_with_hooks(toks, fwd_hooks=[("hook_embed", lambda a, h: 1 / 0)])
    with pytest.raises(E, match=r"hook_tokens: value 0.5 at index 0 is not a token id in \[0, 36\)"):
        tiny.run_with_hooks(toks, fwd_hooks=[("hook_tokens", lambda a, h: a + 0.5)])
    assert bits_equal(tiny(toks), tiny.run_with_cache(toks)[0])  # the model still works after each
    with pytest.raises(E, match="corrupted"):
        headscope.patch(tiny, _no_corrupted(tmp_path))
    with pytest.raises(E, match="unknown act 'zz'"):
        headscope.patch(tiny, prompts[0], acts="z,zz")
    with pytest.raises(E, match="method needs zero, mean or resample, got 'max'"):
        headscope.ablate(tiny, prompts[0], method="max")
    with pytest.raises(E, match=r"answer 'zebra' is not a token of the model's vocabulary"):
        headscope.dla(tiny, [{"prompt": "the animal did not", "answer": "zebra"}])
    with pytest.raises(E, match="cannot read /nonexistent.jsonl"):
        headscope.dla(tiny, "/nonexistent.jsonl")


def _no_corrupted(tmp_path):
    p = tmp_path / "set.jsonl"
    p.write_text('{"prompt": "the animal did not", "answer": "cross", "wrong": "not"}\n')
    return str(p)


def test_freed_model(tiny_path):
    m = headscope.load(tiny_path)
    m.free()
    m.free()
    for f in (lambda: m(np.zeros((1, 2), np.int64)), lambda: m.to_tokens("the"), lambda: m.W_Q,
              lambda: m.run_with_cache("the"), lambda: headscope.dla(m, [{"prompt": "the", "answer": "it"}])):
        with pytest.raises(E, match="the model was freed"):
            f()


# --------------------------------------------------------------------------
# memory

def _rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(os.environ.get("HS_ASAN") == "1",
                    reason="ASan's quarantine holds freed blocks back: the RSS of an ASan build is no leak measure")
def test_rss_flat_over_1000_run_with_cache(tiny):
    toks = tiny.to_tokens(SENTENCE)
    for _ in range(10):
        tiny.run_with_cache(toks)
    before = _rss_kb()
    for _ in range(1000):
        logits, cache = tiny.run_with_cache(toks)
        assert cache["pattern", 1].shape == (1, 4, 14, 14)
    del logits, cache
    grown = _rss_kb() - before
    assert grown < 5 * 1024, "RSS grew by %d kB over 1,000 run_with_cache calls" % grown
