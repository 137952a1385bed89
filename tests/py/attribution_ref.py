#!/usr/bin/python3
"""tests/py/attribution_ref.py -- an independent float64 torch autograd
computation of what headscope's backward to the activations, AtP, EAP and
EAP-IG return, compared with them.

usage: attribution_ref.py DUMP.json [--cli-atp PATCH.json PAIRS.jsonl CHECKPOINT]

DUMP.json is `test_attribution --dump DIR`'s output: for each model (four
random ones, whose checkpoints it saved, and tests/checkpoint/circuit_tiny)
its config, a prompt set and headscope's numbers. Here the model is rebuilt
from the checkpoint's tensors in float64, written from the model's
definition (docs/DESIGN.md "Model", TransformerLens's hook points with split
q/k/v inputs), and every number is recomputed with torch.autograd:
  - grads: d(sum over the first rows of prob-diff) / d(every hook point) at
    the clean run (retain_grad on the point's tensor);
  - atp: (a_clean - a_corr) . dLD/da at the corrupted run, summed over the
    cell, averaged over the prompts, / (LD_clean - LD_corr);
  - eap: (a_u,corr - a_u,clean) . dm/d(input of v), summed over positions,
    averaged over the prompts, the gradient at the clean run (ig_steps 0) or
    averaged over runs from hook_embed = e_corr + (k/m)(e_clean - e_corr),
    k = 0..m-1 (hannamw/EAP-IG src/eap/attribute.py; k = 1..m with "ig_right");
    with "ablation" zero or mean, a_u,corr is 0 or u's position-wise mean
    over the clean prompts and EAP-IG's runs interpolate the input from its
    ablated value: zero hook_embed and hook_pos_embed times k/m, mean
    hook_embed = e_mean + (k/m)(e_clean - e_mean); node scores with the
    gradient at each node's output.
The grouped-query model of the dump (Llama-shaped: RMSNorm, rotary, SwiGLU,
4 query heads on 2 key/value heads) is run ungrouped, as MIB runs
TransformerLens with ungroup_grouped_query_attention (W_K, W_V
repeat_interleave'd: every query head its own hook_k_input / hook_v_input
copy); for it EAP, EAP-IG and exact edge patching ("exact": each edge's
receiver reads the sender's corrupted output, m(that run) - m(clean),
logit-diff) are checked, not the grouped hook points' gradients and AtP.
Each array must match as numpy.allclose(rtol=1e-5, atol=1e-5 * its largest
magnitude). With --cli-atp the
JSON of `headscope patch --method atp --json` over PAIRS.jsonl must match the
AtP recomputed here the same way. Prints the worst relative error per kind;
exits 1 on a mismatch.
"""
import json
import math
import struct
import sys

import numpy as np
import torch

torch.set_default_dtype(torch.float64)
TOL = 1e-5
WORST = {}
FAILS = []


def read_checkpoint(path):
    with open(path, "rb") as fh:
        n = struct.unpack("<Q", fh.read(8))[0]
        header = json.loads(fh.read(n))
        data = fh.read()
    meta = header.pop("__metadata__", {})
    out = {}
    for name, info in header.items():
        s, e = info["data_offsets"]
        a = np.frombuffer(data[s:e], dtype="<f4").astype(np.float64).reshape(info["shape"])
        out[name] = torch.from_numpy(a.copy())
    return out, meta


class Model:
    """The transformer of DESIGN.md with TransformerLens's hook points."""

    def __init__(self, params, cfg):
        self.P, self.c = params, cfg
        self.L, self.H = cfg["n_layers"], cfg["n_heads"]
        self.softmax = cfg["attn"] == "softmax"
        self.scale = cfg.get("attn_scale", math.sqrt(cfg["d_head"]))
        # grouped-query attention run ungrouped (TransformerLens'
        # ungroup_grouped_query_attention, as MIB / EAP-IG run it): W_K, W_V
        # repeat_interleave'd so every query head has its own key/value input
        self.group = self.H // (cfg.get("n_key_value_heads") or self.H)

    def w(self, name):
        """A weight with the head axis ungrouped (W_K, W_V, b_K, b_V)."""
        x = self.P[name]
        if self.group > 1 and name.split(".")[-1] in ("W_K", "W_V", "b_K", "b_V"):
            x = x.repeat_interleave(self.group, dim=0)
        return x

    def rotary(self, x):
        """Rotate-half rotary on the first rotary_dim dims of each head
        (GPT-NeoX / Llama: pairs (i, i + rd/2), theta_i = base^(-2i/rd)), x
        [B, T, H, dh] at positions 0..T-1."""
        c = self.c
        rd = c.get("rotary_dim") or c["d_head"]
        base = c.get("rotary_base", 10000.0)
        T = x.shape[1]
        inv = 1.0 / (base ** (torch.arange(0, rd, 2, dtype=torch.float64) / rd))
        ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
        cos = torch.cat([ang.cos(), ang.cos()], -1)[None, :, None, :]
        sin = torch.cat([ang.sin(), ang.sin()], -1)[None, :, None, :]
        xr, rest = x[..., :rd], x[..., rd:]
        half = torch.cat([-xr[..., rd // 2:], xr[..., :rd // 2]], -1)
        return torch.cat([xr * cos + half * sin, rest], -1)

    def norm(self, x, prefix):
        c = self.c
        if c["norm"] == "none":
            return x
        w, b = self.P[prefix + ".w"], self.P.get(prefix + ".b")
        if c["norm"] == "layernorm":
            x = x - x.mean(-1, keepdim=True)
        y = x / torch.sqrt((x * x).mean(-1, keepdim=True) + c["eps"]) * w
        return y + b if b is not None else y

    def forward(self, tok, edits=None, keep=True):
        """logits and the hook points (each retaining its gradient); edits:
        {name: fn(tensor) -> tensor} applied at the point."""
        P, c, H = self.P, self.c, self.H
        edits = edits or {}
        pts = {}

        def hook(name, x):
            if name in edits:
                x = edits[name](x)
            if keep and x.requires_grad:
                x.retain_grad()
            pts[name] = x
            return x

        B, T = tok.shape
        embed = hook("hook_embed", P["embed.W_E"][tok].clone().requires_grad_(True))
        x = embed
        if c["pos"] == "learned":
            x = x + hook("hook_pos_embed", P["pos_embed.W_pos"][:T].expand(B, T, -1).clone().requires_grad_(True))
        if c["embed_norm"]:
            x = self.norm(x, "ln_embed")
        for l in range(self.L):
            p = "blocks.%d." % l
            resid = hook(p + "hook_resid_pre", x)
            attn_in = hook(p + "hook_attn_in", resid.unsqueeze(2).expand(B, T, H, -1).clone())
            ln = lambda y: self.norm(y, p + "ln1") if c["ln1"] else y
            proj = {}
            for k in ("qkv" if self.softmax else "v"):
                xin = hook(p + "hook_%s_input" % k, attn_in.clone())
                y = torch.einsum("bthd,hde->bthe", ln(xin), self.w(p + "attn.W_" + k.upper()))
                if p + "attn.b_" + k.upper() in P:
                    y = y + self.w(p + "attn.b_" + k.upper())
                proj[k] = y
            if self.softmax:
                q = hook(p + "attn.hook_q", proj["q"])
                k_ = hook(p + "attn.hook_k", proj["k"])
                if c["pos"] == "rotary":
                    q = hook(p + "attn.hook_rot_q", self.rotary(q))
                    k_ = hook(p + "attn.hook_rot_k", self.rotary(k_))
                s = torch.einsum("bqhe,bkhe->bhqk", q, k_) / self.scale
                s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
                pattern = torch.softmax(s, -1)
            else:
                i = torch.arange(T)
                pattern = ((i[None, :] <= i[:, None]).double() / (i[:, None] + 1.0)).expand(B, H, T, T).clone()
                pattern.requires_grad_(True)
            v = hook(p + "attn.hook_v", proj["v"])
            pattern = hook(p + "attn.hook_pattern", pattern)
            z = hook(p + "attn.hook_z", torch.einsum("bhqk,bkhe->bqhe", pattern, v))
            result = hook(p + "attn.hook_result", torch.einsum("bthe,hed->bthd", z, P[p + "attn.W_O"]))
            attn_out = result.sum(2)
            if p + "attn.b_O" in P:
                attn_out = attn_out + P[p + "attn.b_O"]
            x = resid + hook(p + "hook_attn_out", attn_out)
            if c["d_mlp"]:
                x = hook(p + "hook_resid_mid", x)
                h2 = self.norm(hook(p + "hook_mlp_in", x.clone()), p + "ln2")
                pre = h2 @ P[p + "mlp.W_in"]
                if p + "mlp.b_in" in P:
                    pre = pre + P[p + "mlp.b_in"]
                if c.get("gated_mlp"):  # TL's GatedMLP: act(x W_gate) * (x W_in + b_in)
                    lin = hook(p + "mlp.hook_pre_linear", pre)
                    pre = hook(p + "mlp.hook_pre", h2 @ P[p + "mlp.W_gate"])
                    post = hook(p + "mlp.hook_post", torch.nn.functional.silu(pre) * lin)
                else:
                    pre = hook(p + "mlp.hook_pre", pre)
                    post = hook(p + "mlp.hook_post",
                                torch.nn.functional.gelu(pre) if c["act"] == "gelu" else torch.relu(pre))
                out = post @ P[p + "mlp.W_out"]
                if p + "mlp.b_out" in P:
                    out = out + P[p + "mlp.b_out"]
                x = x + hook(p + "hook_mlp_out", out)
            x = hook(p + "hook_resid_post", x)
        if c["ln_final"]:
            x = self.norm(x, "ln_final")
        x = hook("unembed.hook_in", x)
        logits = x @ P["unembed.W_U"]
        if "unembed.b_U" in P:
            logits = logits + P["unembed.b_U"]
        return logits, pts


def metric(kind, logits, answer, wrong, pos, ref=None):
    """Sum over the prompts of the metric at each one's position."""
    z = logits[torch.arange(len(pos)), pos]
    if kind == "logit-diff":
        return (z[torch.arange(len(pos)), answer] - z[torch.arange(len(pos)), wrong]).sum()
    if kind == "prob-diff":
        pr = torch.softmax(z, -1)
        return (pr[torch.arange(len(pos)), answer] - pr[torch.arange(len(pos)), wrong]).sum()
    lp = torch.log_softmax(ref, -1)
    return (lp.exp() * (lp - torch.log_softmax(z, -1))).sum()


def close(kind, label, got, ref):
    """got equals ref as numpy.allclose(got, ref, rtol=TOL, atol=TOL * max|ref|):
    every |got - ref| <= TOL (|ref| + max|ref|) (float32 computations cannot
    meet a relative bar on values far below the array's largest)."""
    got, ref = np.asarray(got, dtype=np.float64).ravel(), np.asarray(ref, dtype=np.float64).ravel()
    if got.shape != ref.shape:
        raise SystemExit("FAIL %s %s: %d values, reference %d" % (label, kind, got.size, ref.size))
    if ref.size == 0:
        return
    scale = float(np.max(np.abs(ref)))
    den = np.abs(ref) + scale
    rel = np.where(den > 0, np.abs(got - ref) / np.where(den > 0, den, 1.0), np.abs(got - ref))
    worst = float(np.max(rel))
    WORST[kind] = max(WORST.get(kind, 0.0), worst)
    if worst > TOL:
        i = int(np.argmax(rel))
        FAILS.append("FAIL %s %s: |diff| %.3g at %d (%.9g vs %.9g; array's largest %.3g): %.3g > %g"
                     % (label, kind, abs(got[i] - ref[i]), i, got[i], ref[i], scale, worst, TOL))


def check_grads(m, d, pr):
    g = d["grads"]
    rows = g["rows"]
    tok = pr["clean"][:rows]
    logits, pts = m.forward(tok)
    metric(g["metric"], logits, pr["answer"][:rows], pr["wrong"][:rows], pr["position"][:rows]).backward()
    for name, x in g["points"].items():
        t = pts[name]
        ref = t.grad if t.grad is not None else torch.zeros_like(t)
        if list(ref.shape) != x["shape"]:
            raise SystemExit("FAIL %s grad %s: shape %s, reference %s" % (d["label"], name, x["shape"], list(ref.shape)))
        close("gradient", d["label"] + " " + name, x["data"], ref.numpy())
    offered = set(g["points"])
    missing = [n for n in pts if n not in offered and pts[n].requires_grad]
    if missing:
        raise SystemExit("FAIL %s: no gradient dumped at %s" % (d["label"], missing))


PATCH_HOOK = {"resid_pre": "hook_resid_pre", "attn_out": "hook_attn_out", "mlp_out": "hook_mlp_out",
              "resid_post": "hook_resid_post", "z": "attn.hook_z", "q": "attn.hook_q", "k": "attn.hook_k",
              "v": "attn.hook_v", "pattern": "attn.hook_pattern"}


def atp(m, pr, acts):
    """{act: (metric (cells), metric_pos (L H t) or None)}, ld_clean, ld_corr."""
    ans, wr, pos = pr["answer"], pr["wrong"], pr["position"]
    with torch.no_grad():
        lc, pc = m.forward(pr["clean"], keep=False)
    ld = lambda lg: (lg[torch.arange(len(pos)), pos, ans] - lg[torch.arange(len(pos)), pos, wr])
    ldc = ld(lc).mean().item()
    lr, pd = m.forward(pr["corrupted"])
    ldr = ld(lr)
    ldr.sum().backward()
    ldr = ldr.mean().item()
    den = ldc - ldr
    n, T, L, H = len(pos), pr["clean"].shape[1], m.L, m.H
    out = {}
    for a in acts:
        est_pos = []
        for l in range(L):
            name = "blocks.%d.%s" % (l, PATCH_HOOK[a])
            diff, g = (pc[name] - pd[name]).detach(), pd[name].grad
            if a in ("resid_pre", "attn_out", "mlp_out", "resid_post"):
                est_pos.append((diff * g).sum(-1).mean(0))                      # [T]
            elif a == "pattern":
                est_pos.append((diff * g).sum(-1).mean(0))                      # [H, T(dest)]
            else:
                est_pos.append((diff * g).sum(-1).mean(0).transpose(0, 1))      # [T,H] -> [H,T]
        e = torch.stack(est_pos)
        if a in ("resid_pre", "attn_out", "mlp_out", "resid_post"):
            out[a] = ((e / den).reshape(-1).numpy(), None)
        else:
            out[a] = ((e.sum(-1) / den).reshape(-1).numpy(), (e / den).reshape(-1).numpy())
    return out, ldc, ldr


def check_atp(m, d, pr):
    ref, ldc, ldr = atp(m, pr, list(d["atp"]["acts"]))
    close("atp", d["label"] + " ld_clean", [d["atp"]["ld_clean"]], [ldc])
    close("atp", d["label"] + " ld_corr", [d["atp"]["ld_corr"]], [ldr])
    for a, x in d["atp"]["acts"].items():
        close("atp", "%s %s" % (d["label"], a), x["metric"], ref[a][0])
        if ref[a][1] is not None:
            close("atp", "%s %s by position" % (d["label"], a), x["metric_pos"], ref[a][1])


def node_tensor(m, pts, name):
    """What node `name` sends: [n, T, D]."""
    if name == "input":
        return pts["blocks.0.hook_resid_pre"]
    if name.startswith("m"):
        return pts["blocks.%s.hook_mlp_out" % name[1:]]
    l, h = name[1:].split(".h")
    return pts["blocks.%s.attn.hook_result" % l][:, :, int(h)]


def recv_grad(m, pts, name):
    """The gradient at what receiver `name` reads: [n, T, D] (zeros where the
    model does not read it: uniform attention's q and k)."""
    if name == "logits":
        t = pts["blocks.%d.hook_resid_post" % (m.L - 1)]
        return t.grad
    if name.startswith("m"):
        return pts["blocks.%s.hook_mlp_in" % name[1:]].grad
    node, x = name[:-3], name[-2]
    l, h = node[1:].split(".h")
    key = "blocks.%s.hook_%s_input" % (l, x)
    if key not in pts:
        return torch.zeros_like(pts["blocks.%s.hook_resid_pre" % l])
    return pts[key].grad[:, :, int(h)]


def node_grad(m, pts, name):
    if name == "input":
        return pts["blocks.0.hook_resid_pre"].grad
    if name.startswith("m"):
        return pts["blocks.%s.hook_mlp_out" % name[1:]].grad
    l, h = name[1:].split(".h")
    return pts["blocks.%s.attn.hook_result" % l].grad[:, :, int(h)]


def eap(m, d, pr, run):
    kind, steps = run["metric"], run["ig_steps"]
    abl, right = run.get("ablation", "resample"), run.get("ig_right", 0)
    ans, wr, pos = pr["answer"], pr["wrong"], pr["position"]
    n = len(pos)
    with torch.no_grad():
        lc, pc = m.forward(pr["clean"], keep=False)
        _, pr_ = m.forward(pr["corrupted"], keep=False)
    ref = lc[torch.arange(n), pos]
    senders = sorted({e.split("->")[0] for e in d["edges"]}, key=lambda s: d["nodes"].index(s))
    # the ablated value of what each node sends: the corrupted run's, 0, or the
    # position-wise mean over the clean prompts
    if abl == "resample":
        ablated = lambda u: node_tensor(m, pr_, u)  # noqa: E731
    elif abl == "zero":
        ablated = lambda u: torch.zeros_like(node_tensor(m, pc, u))  # noqa: E731
    else:
        ablated = lambda u: node_tensor(m, pc, u).mean(0, keepdim=True).expand_as(node_tensor(m, pc, u))  # noqa: E731
    diff = {u: ablated(u) - node_tensor(m, pc, u) for u in senders}
    grads, ngrads = {}, {}
    runs = [None] if steps == 0 else [k + right for k in range(steps)]
    for k in runs:
        if k is None:
            edits = {}
        elif abl == "resample":
            ec, er = pc["hook_embed"], pr_["hook_embed"]
            edits = {"hook_embed": lambda x, k=k: (er + (k / steps) * (ec - er)).requires_grad_(True)}
        elif abl == "zero":  # the input hook_embed + hook_pos_embed from 0
            edits = {"hook_embed": lambda x, k=k: ((k / steps) * x.detach()).requires_grad_(True),
                     "hook_pos_embed": lambda x, k=k: ((k / steps) * x.detach()).requires_grad_(True)}
        else:  # hook_embed from its position-wise mean (the positions are every prompt's)
            em = pc["hook_embed"].mean(0, keepdim=True)
            edits = {"hook_embed": lambda x, k=k: (em + (k / steps) * (x.detach() - em)).requires_grad_(True)}
        logits, pts = m.forward(pr["clean"], edits)
        metric(kind, logits, ans, wr, pos, ref).backward()
        for v in sorted({e.split("->")[1] for e in d["edges"]}):
            grads[v] = grads.get(v, 0) + recv_grad(m, pts, v).detach()
        for u in senders:
            ngrads[u] = ngrads.get(u, 0) + node_grad(m, pts, u).detach()
    scores = [(diff[e.split("->")[0]] * grads[e.split("->")[1]]).sum().item() / (n * len(runs)) for e in d["edges"]]
    nodes = [(diff[u] * ngrads[u]).sum().item() / (n * len(runs)) for u in d["nodes"][:-1]]
    return scores, nodes


def check_eap(m, d, pr):
    d["nodes"] = ["input"] + [x for l in range(m.L) for x in
                              ["a%d.h%d" % (l, h) for h in range(m.H)] + (["m%d" % l] if m.c["d_mlp"] else [])] + ["logits"]
    for run in d["eap"]:
        s, ns = eap(m, d, pr, run)
        what = "eap" if run["ig_steps"] == 0 else "eap-ig"
        label = "%s %s %s steps %d %s%s" % (d["label"], what, run["metric"], run["ig_steps"],
                                            run.get("ablation", "resample"), " right" if run.get("ig_right") else "")
        close(what, label, run["scores"], s)
        close("node scores", label, run["node_scores"], ns)


RECV_HOOK = {"q": "hook_q_input", "k": "hook_k_input", "v": "hook_v_input"}


def check_exact(m, d, pr):
    """Exact edge patching (resample, logit-diff): for each edge u -> v the
    clean run with v's input read with u's corrupted output in place of its
    clean one, m(that run) - m(clean), means over the prompts."""
    ans, wr, pos = pr["answer"], pr["wrong"], pr["position"]
    n = len(pos)
    with torch.no_grad():
        lc, pc = m.forward(pr["clean"], keep=False)
        _, pd = m.forward(pr["corrupted"], keep=False)
        full = metric("logit-diff", lc, ans, wr, pos).item() / n
        close("exact", d["label"] + " m(M)", [d["exact_full"]], [full])
        got = []
        for e in d["edges"]:
            u, v = e.split("->")
            diff = node_tensor(m, pd, u) - node_tensor(m, pc, u)
            if v == "logits":
                name, idx = "blocks.%d.hook_resid_post" % (m.L - 1), None
            elif v.startswith("m"):
                name, idx = "blocks.%s.hook_mlp_in" % v[1:], None
            else:
                l, h = v[1:-3].split(".h")
                name, idx = "blocks.%s.%s" % (l, RECV_HOOK[v[-2]]), int(h)

            def edit(x, diff=diff, idx=idx):
                x = x.clone()
                if idx is None:
                    x += diff
                else:
                    x[:, :, idx] += diff
                return x
            lg, _ = m.forward(pr["clean"], {name: edit}, keep=False)
            got.append(metric("logit-diff", lg, ans, wr, pos).item() / n - full)
    close("exact", d["label"] + " edge scores", d["exact"], got)


def prompts(d):
    p = d["prompts"]
    t = p["tokens"]
    out = {k: torch.tensor(p[k]).reshape(-1, t) for k in ("clean", "corrupted")}
    for k in ("answer", "wrong", "position"):
        out[k] = torch.tensor(p[k])
    return out


def model_of(path, cfg):
    params, _ = read_checkpoint(path)
    return Model(params, cfg)


def check_cli_atp(patch_json, pairs, ckpt):
    params, meta = read_checkpoint(ckpt)
    tl = json.loads(meta["config"])
    cfg = {"n_layers": tl["n_layers"], "n_heads": tl["n_heads"], "d_head": tl["d_head"], "d_mlp": tl["d_mlp"] or 0,
           "norm": {"LN": "layernorm", "RMS": "rmsnorm", None: "none"}[tl["normalization_type"]], "eps": tl["eps"],
           "act": tl["act_fn"], "pos": "learned", "attn": "softmax", "ln1": 1, "ln_final": 1, "embed_norm": 0}
    vocab = json.loads(meta["vocab"])
    rows = [json.loads(line) for line in open(pairs) if line.strip()]
    ids = lambda s: [vocab.index(w) for w in s.split()]
    pr = {"clean": torch.tensor([ids(r["prompt"]) for r in rows]),
          "corrupted": torch.tensor([ids(r["corrupted"]) for r in rows]),
          "answer": torch.tensor([vocab.index(r["answer"]) for r in rows]),
          "wrong": torch.tensor([vocab.index(r["wrong"]) for r in rows])}
    pr["position"] = torch.full((len(rows),), pr["clean"].shape[1] - 1)
    got = json.load(open(patch_json))
    assert got["method"] == "atp", got.get("method")
    ref, ldc, ldr = atp(Model(params, cfg), pr, list(got["acts"]))
    close("cli atp", "ld_clean", [got["ld_clean"]], [ldc])
    for a, x in got["acts"].items():
        close("cli atp", a, x["metric"], ref[a][0])
        if ref[a][1] is not None:
            # the JSON's [layer][position][head] (TransformerLens' by_pos order); ref[a][1] is (L, H, T)
            got = np.asarray(x["metric_by_position"], dtype=np.float64).transpose(0, 2, 1)
            close("cli atp", a + " by position", got, ref[a][1])


def main():
    dump = json.load(open(sys.argv[1]))
    for d in dump["models"]:
        m = model_of(d["checkpoint"], d["config"])
        pr = prompts(d)
        if "grads" in d:
            check_grads(m, d, pr)
        if "atp" in d:
            check_atp(m, d, pr)
        check_eap(m, d, pr)
        if "exact" in d:
            check_exact(m, d, pr)
    if len(sys.argv) == 6 and sys.argv[2] == "--cli-atp":
        check_cli_atp(sys.argv[3], sys.argv[4], sys.argv[5])
    for k in sorted(WORST):
        print("%-12s worst |diff| / (|ref| + max|ref|) %.2e (bar %g)" % (k, WORST[k], TOL))
    if FAILS:
        print("\n".join(FAILS))
        sys.exit(1)
    print("ok: gradients, AtP, EAP, EAP-IG and node scores equal torch autograd's")


if __name__ == "__main__":
    main()
