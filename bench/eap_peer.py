#!/usr/bin/python3
"""bench/eap_peer.py -- EAP and EAP-IG in plain PyTorch (float32), the peer of
headscope's hs_eap_scores (bench/bench_eap.c) on the same model, prompts and
threads.

Written from the definitions (Syed et al. 2023; Hanna et al. 2024 and
hannamw/EAP-IG src/eap/attribute.py), as a PyTorch user would write them
with TransformerLens's split q/k/v inputs: the model's forward with each
head's query, key and value input [B,T,H,D] a tensor of its own (ln1 runs
per head); the senders' outputs (the embeddings, each head's z W_O, each MLP's
output) of the corrupted and the clean run as one difference tensor
[B,T,senders,D]; the gradient of the summed metric at every receiver input by
one torch.autograd.grad; per receiver group the scores as
einsum(difference[:, :, :senders read], gradient). EAP takes the gradient at
the clean run; EAP-IG averages it over hook_embed = e_corr + (k/m)(e_clean -
e_corr), k = 0..m-1, the clean run's logits as KL's reference. Scores are
means over the prompts of the metric per prompt (headscope's convention).

usage: eap_peer.py MODEL.safetensors PAIRS.jsonl [--threads N] [--runs R]
       [--warmup W] [--ig-steps M] [--batch B] [--metric logit-diff|prob-diff|kl]
       [--compare HEADSCOPE_SCORES.json]
MODEL: a headscope checkpoint of the default shape, or a TransformerLens-format
file of the same shape without vocabulary (tokens named by id, "#464", as
headscope names them: bench/eap_gpt2.sh's GPT-2-small-shaped model).
Prints one JSON object: median ms of EAP and EAP-IG over the whole set
(after W untimed runs, default 1), the peak RSS, and with --compare the largest difference from
headscope's scores relative to their largest magnitude, per method.
"""
import argparse
import json
import math
import resource
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


def read_checkpoint(path):
    with open(path, "rb") as fh:
        n = struct.unpack("<Q", fh.read(8))[0]
        header = json.loads(fh.read(n))
        data = fh.read()
    meta = header.pop("__metadata__", {})
    out = {}
    for name, info in header.items():
        s, e = info["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(data[s:e], dtype="<f4").copy()).reshape(info["shape"])
    return out, meta


class Peer:
    """headscope's default-shaped transformer (LayerNorm, GELU, learned
    positions, softmax attention, biases) with split q/k/v inputs."""

    def __init__(self, P, cfg):
        self.P, self.L, self.H = P, cfg["n_layers"], cfg["n_heads"]
        self.dh, self.eps = cfg["d_head"], cfg["eps"]
        self.mlp = bool(cfg.get("d_mlp"))
        self.n_send = 1 + self.L * (self.H + self.mlp)

    def ln(self, x, p):
        return F.layer_norm(x, x.shape[-1:], self.P[p + ".w"], self.P[p + ".b"], self.eps)

    def forward(self, tok, embed=None, grad=False):
        """logits, senders [B,T,n_send,D], receiver inputs (grad: requiring it)."""
        P, H, B, T = self.P, self.H, tok.shape[0], tok.shape[1]
        e = P["embed.W_E"][tok] if embed is None else embed
        x = e + P["pos_embed.W_pos"][:T]
        sends, recv = [x], []
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        for l in range(self.L):
            p = "blocks.%d." % l
            ins = []
            for k in "QKV":
                xi = x.unsqueeze(2).expand(B, T, H, x.shape[-1]).clone()
                if grad:
                    xi.requires_grad_(True)
                ins.append(xi)
            recv += ins
            q, k, v = (torch.einsum("bthd,hde->bthe", self.ln(xi, p + "ln1"), P[p + "attn.W_" + n]) + P[p + "attn.b_" + n]
                       for xi, n in zip(ins, "QKV"))
            s = torch.einsum("bqhe,bkhe->bhqk", q, k) / math.sqrt(self.dh)
            a = torch.softmax(s.masked_fill(mask, float("-inf")), -1)
            z = torch.einsum("bhqk,bkhe->bqhe", a, v)
            res = torch.einsum("bthe,hed->bthd", z, P[p + "attn.W_O"])
            sends += list(res.unbind(2))
            x = x + res.sum(2) + P[p + "attn.b_O"]
            if self.mlp:
                mi = x.clone()
                if grad:
                    mi.requires_grad_(True)
                recv.append(mi)
                out = F.gelu(self.ln(mi, p + "ln2") @ P[p + "mlp.W_in"] + P[p + "mlp.b_in"]) @ P[p + "mlp.W_out"] \
                    + P[p + "mlp.b_out"]
                sends.append(out)
                x = x + out
        if grad:
            x = x.clone().requires_grad_(True)
        recv.append(x)
        logits = self.ln(x, "ln_final") @ P["unembed.W_U"] + P["unembed.b_U"]
        return logits, torch.stack(sends, 2), recv, e


def metric(kind, logits, ans, wr, ref):
    z = logits[:, -1]
    i = torch.arange(z.shape[0])
    if kind == "logit-diff":
        return (z[i, ans] - z[i, wr]).sum()
    if kind == "prob-diff":
        p = torch.softmax(z, -1)
        return (p[i, ans] - p[i, wr]).sum()
    lp = torch.log_softmax(ref, -1)
    return (lp.exp() * (lp - torch.log_softmax(z, -1))).sum()


def scores(peer, clean, corr, ans, wr, kind, steps):
    """EAP (steps 0) or EAP-IG scores [n_send, receivers] summed over the batch."""
    L, H = peer.L, peer.H
    with torch.no_grad():
        _, s_corr, _, e_corr = peer.forward(corr)
        lc, s_clean, _, e_clean = peer.forward(clean)
    diff = s_corr - s_clean
    ref = lc[:, -1]
    per = 3 * H + peer.mlp                       # receiver tensors a layer
    out = torch.zeros(peer.n_send, L * per + 1)
    for k in ([None] if steps == 0 else range(steps)):
        emb = None if k is None else e_corr + (k / steps) * (e_clean - e_corr)
        logits, _, recv, _ = peer.forward(clean, emb, grad=True)
        grads = torch.autograd.grad(metric(kind, logits, ans, wr, ref), recv)
        for l in range(L):
            n = 1 + l * (H + peer.mlp)           # senders before layer l
            for x in range(3):                   # columns 3 h + x: head h's q, k, v
                out[:n, l * per + x: l * per + 3 * H: 3] += torch.einsum("btsd,bthd->sh", diff[:, :, :n], grads[l * (3 + peer.mlp) + x])
            if peer.mlp:
                out[:n + H, l * per + 3 * H] += torch.einsum("btsd,btd->s", diff[:, :, :n + H], grads[l * 4 + 3])
        out[:, -1] += torch.einsum("btsd,btd->s", diff, grads[-1])
    return out / max(steps, 1)


def edge_names(peer):
    """hs_graph's canonical edge order, with each edge's (sender, column)."""
    L, H, m = peer.L, peer.H, peer.mlp
    nodes = ["input"] + [n for l in range(L) for n in ["a%d.h%d" % (l, h) for h in range(H)] + (["m%d" % l] if m else [])]
    per, names = 3 * H + m, []
    for l in range(L):
        for h in range(H):
            for x, c in enumerate("qkv"):
                names += [("%s->a%d.h%d<%s>" % (nodes[u], l, h, c), u, l * per + 3 * h + x) for u in range(1 + l * (H + m))]
        if m:
            names += [("%s->m%d" % (nodes[u], l), u, l * per + 3 * H) for u in range(1 + l * (H + m) + H)]
    names += [("%s->logits" % nodes[u], u, L * per) for u in range(len(nodes))]
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("pairs")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs first")
    ap.add_argument("--ig-steps", type=int, default=5)
    ap.add_argument("--batch", type=int, default=0, help="prompts a forward (0 = the whole set)")
    ap.add_argument("--metric", default="logit-diff", choices=["logit-diff", "prob-diff", "kl"])
    ap.add_argument("--compare")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    P, meta = read_checkpoint(a.model)
    cfg = json.loads(meta["config"])
    if cfg.get("normalization_type") != "LN" or cfg.get("act_fn") != "gelu" or json.loads(meta.get("headscope_config") or "{}"):
        sys.exit("eap_peer.py: the default model's shape only (LayerNorm, GELU, every switch at its default)")
    # without vocab metadata (a TransformerLens-format file) tokens are named by id, "#464", as headscope does
    vocab = json.loads(meta["vocab"]) if "vocab" in meta else ["#%d" % i for i in range(cfg["d_vocab"])]
    index = {w: i for i, w in enumerate(vocab)}
    rows = [json.loads(line) for line in open(a.pairs) if line.strip()]
    ids = lambda s: [index[w] for w in s.split()]  # noqa: E731
    clean = torch.tensor([ids(r["prompt"]) for r in rows])
    corr = torch.tensor([ids(r["corrupted"]) for r in rows])
    ans = torch.tensor([index[r["answer"]] for r in rows])
    wr = torch.tensor([index[r["wrong"]] for r in rows])
    peer, n = Peer(P, cfg), len(rows)
    bs = a.batch or n

    def run(steps):
        tot = 0
        for i in range(0, n, bs):
            tot = tot + scores(peer, clean[i:i + bs], corr[i:i + bs], ans[i:i + bs], wr[i:i + bs], a.metric, steps)
        return tot / n

    res = {"peak_rss_mib": 0, "prompts": n, "tokens": clean.shape[1], "threads": a.threads, "batch": bs, "runs": a.runs,
           "ig_steps": a.ig_steps, "metric": a.metric, "torch": torch.__version__}
    names = edge_names(peer)
    for key, steps in (("eap", 0), ("eap_ig", a.ig_steps)):
        t = []
        for r in range(a.warmup + a.runs):
            t0 = time.perf_counter()
            sc = run(steps)
            if r >= a.warmup:
                t.append((time.perf_counter() - t0) * 1e3)
        res[key + "_ms"] = float(np.median(t))
        if a.compare:
            hs = json.load(open(a.compare))
            assert hs["edges"] == [e[0] for e in names], "edge order differs from hs_graph's"
            mine = np.array([sc[u, col].item() for _, u, col in names])
            theirs = np.array(hs[key])
            res[key + "_max_rel_diff"] = float(np.max(np.abs(mine - theirs)) / np.max(np.abs(theirs)))
    res["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(res))


if __name__ == "__main__":
    main()
