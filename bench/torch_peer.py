#!/usr/bin/python3
"""bench/torch_peer.py -- a faithful PyTorch CPU peer of headscope's model and trainer.

Run with Debian's interpreter (/usr/bin/python3: python3-torch + numpy).

Same architecture as model/forward.c (pre-norm, TransformerLens-shaped
parameters W_Q/W_K/W_V [H,D,dh], W_O [H,dh,D], x @ W; LayerNorm eps 1e-5;
exact erf GELU; causal mask -inf; scores / sqrt(dh); learned positions; final
LN; unembedding with bias; switches --layers --d-model --heads --d-head
--d-mlp --attn softmax|uniform --no-ln1 --pos none), same data (the text
`headscope train --dataset FILE` writes), same batch (64 drawn with
replacement from the training sentences), same loss (next-token CE on every
position, the last ignored), same optimiser (AdamW 1e-3, 0.9/0.999, eps 1e-8,
weight decay 0.01 on W_* only, global grad-norm clip 1.0), same schedule
(model/train.c hs_train_lr), same init (model/model.c hs_model_init: PyTorch's
default layer inits -- W_E, W_pos N(0, 1), other matrices U(+-1/sqrt(fan_in)),
norm weights 1, biases 0; --init gpt2 gives every matrix and embedding N(0, 0.02),
headscope train --init gpt2, the recipe of the design notes' 83-89% figure).

The dataset (and, for --init headscope and --save, headscope's vocabulary and
checkpoint metadata) comes from running `headscope train --steps 0 --dataset`
with the same task, split seed, seed and model flags, unless --dataset is given.

--impl fast: the same model as a user would write it in PyTorch (nanoGPT's
layout): parameters in PyTorch's own layout (nn.Embedding, nn.LayerNorm,
nn.Linear with weight [out, in]), one fused nn.Linear for Q, K and V per
block, the explicit masked softmax (this torch, 1.13, has no
F.scaled_dot_product_attention), no per-step copies or permutes of any
parameter. Same maths, init (the TransformerLens-layout peer's, mapped:
fast_from_tl), optimiser (weight decay on the matrices, W_E and W_pos
included, as --impl tl), data and schedule; bench/peer_equiv.py checks the
two give the same loss curve. Default shape only: softmax attention, ln1,
learned positions, d_mlp > 0.

--task tokens: a fixed token stream instead of a task (bench/scale.py's
scaling table): --tokens FILE of little-endian int32 rows of n_ctx + 1
tokens (< --vocab-size), batch k = rows [k*B, (k+1)*B) cycled; inputs the
first n_ctx, targets the next token at every position; --warmup untimed
steps, then --steps timed ones, at a constant --lr (as bench_train). Reports
the median step time and the losses only.

Prints one JSON object on stdout: held-out referent accuracy at position 14
(argmax over the whole vocabulary == ref), other-noun rate, per adjective,
train accuracy, median step time (ms, after warm-up), wall time, the first
step (evaluated every --eval-every steps) with 100% held-out accuracy (logged,
never used to stop), peak RSS.
"""
import argparse
import json
import math
import os
import resource
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

# headscope's vocabulary order (tasks/vocab.c); used only when no checkpoint
# metadata is at hand.
DEFAULT_VOCAB = ("the did not cross because it was too , so waited . "
                 "animal street dog road cat river horse bridge fox field goat path cow lane deer creek "
                 "tired scared slow weak wet wide busy steep").split()
QUERY_POS = 14  # the prediction made at position 14 (`the` after `so`) names the referent


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--task", default="winograd", choices=["winograd", "winograd-category", "induction", "tokens"])
    p.add_argument("--impl", default="tl", choices=["tl", "fast"],
                   help="tl: TransformerLens layout (numerical twin of headscope); fast: PyTorch's own layout, "
                        "fused Q/K/V (the fastest plain-PyTorch formulation)")
    p.add_argument("--tokens", help="--task tokens: int32 token file (rows of n_ctx + 1)")
    p.add_argument("--vocab-size", type=int, default=32, help="induction: symbols (headscope's default)")
    p.add_argument("--n-ctx", type=int, default=32, help="induction: sequence length")
    p.add_argument("--seg-len", default="4:8", help="induction: MIN:MAX repeated segment length")
    p.add_argument("--gap", default="0:16", help="induction: MIN:MAX tokens between the occurrences")
    p.add_argument("--split-seed", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=2000, help="default = headscope train's (2000)")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--d-head", type=int, default=0, help="default d_model / heads")
    p.add_argument("--d-mlp", type=int, default=-1, help="default 4 x d_model; 0 = attention-only")
    p.add_argument("--attn", default="softmax", choices=["softmax", "uniform"])
    p.add_argument("--no-ln1", action="store_true")
    p.add_argument("--pos", default="learned", choices=["learned", "none"])
    p.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    p.add_argument("--eval-every", type=int, default=100, help="held-out accuracy every N steps (0 = end only)")
    p.add_argument("--warmup", type=int, default=50, help="steps left out of the median step time")
    p.add_argument("--dataset", help="dataset text written by headscope train --dataset (else generated)")
    p.add_argument("--headscope", default=os.environ.get("HEADSCOPE", os.path.join(REPO, "build-table", "headscope")),
                   help="headscope binary used to write the dataset (default build-table/headscope or $HEADSCOPE)")
    p.add_argument("--init", default="pytorch", choices=["pytorch", "gpt2", "headscope"],
                   help="pytorch (default, = model/model.c hs_model_init since c4d919d): W_E, W_pos N(0,1) "
                        "(nn.Embedding), other matrices U(+-1/sqrt(fan_in)) (nn.Linear), norm weights 1, biases 0, "
                        "drawn from torch.Generator(seed); gpt2: every matrix and embedding N(0,0.02) (headscope --init gpt2); "
                        "headscope: headscope's own step-0 weights for this seed (bit-identical start)")
    p.add_argument("--save", help="write the trained model as headscope-compatible .safetensors")
    p.add_argument("--no-foreach", action="store_true", help="AdamW without the multi-tensor (foreach) path")
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    if a.d_head <= 0:
        a.d_head = a.d_model // a.heads
    if a.d_mlp < 0:
        a.d_mlp = 4 * a.d_model
    if a.impl == "fast" and (a.attn != "softmax" or a.no_ln1 or a.pos != "learned" or a.d_mlp == 0):
        p.error("--impl fast is the default shape only (softmax attention, ln1, learned positions, an MLP)")
    if a.impl == "fast" and a.save:
        p.error("--save writes the TransformerLens layout: use --impl tl")
    if a.task == "tokens" and not a.tokens:
        p.error("--task tokens needs --tokens FILE")
    return a


# ----------------------------------------------------------------------------
# data

def headscope_flags(a):
    f = ["--task", a.task, "--split-seed", str(a.split_seed), "--seed", str(a.seed),
         "--layers", str(a.layers), "--d-model", str(a.d_model), "--heads", str(a.heads),
         "--d-head", str(a.d_head), "--d-mlp", str(a.d_mlp), "--attn", a.attn, "--pos", a.pos]
    if a.no_ln1:
        f.append("--no-ln1")
    return f


def read_safetensors(path):
    with open(path, "rb") as fh:
        n = struct.unpack("<Q", fh.read(8))[0]
        header = json.loads(fh.read(n))
        data = fh.read()
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, info in header.items():
        assert info["dtype"] == "F32", name
        s, e = info["data_offsets"]
        tensors[name] = torch.from_numpy(np.frombuffer(data[s:e], dtype="<f4").copy()).reshape(info["shape"])
    return meta, tensors


def write_safetensors(path, tensors, meta):
    header, off, blobs = {"__metadata__": meta}, 0, []
    for name, t in tensors.items():
        b = t.detach().contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    hj = json.dumps(header, separators=(",", ":")).encode()
    hj += b" " * ((8 - len(hj) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as fh:
        fh.write(struct.pack("<Q", len(hj)))
        fh.write(hj)
        for b in blobs:
            fh.write(b)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def load_dataset(path):
    rows = {"train": [], "heldout": []}
    with open(path) as fh:
        for line in fh:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            split, role, ref, sent = line.split("\t")
            rows[split].append((role, ref, sent.split(" ")))
    return rows


def tensorise(rows, vocab):
    idx = {w: i for i, w in enumerate(vocab)}
    toks = torch.tensor([[idx[w] for w in s] for _, _, s in rows], dtype=torch.long)
    ref = torch.tensor([idx[r] for _, r, _ in rows], dtype=torch.long)
    # the other noun of the pair: x (position 1) or y (position 6), whichever is not ref
    other = torch.where(toks[:, 1] == ref, toks[:, 6], toks[:, 1])
    adj = [s[11] for _, _, s in rows]
    roles = [r for r, _, _ in rows]
    return toks, ref, other, adj, roles


# ----------------------------------------------------------------------------
# model

class Peer(torch.nn.Module):
    def __init__(self, a, V, C):
        super().__init__()
        self.a, self.V, self.C = a, V, C
        D, H, dh, M, L = a.d_model, a.heads, a.d_head, a.d_mlp, a.layers
        P = torch.nn.Parameter
        self.names = []  # headscope tensor order

        def add(name, *shape):
            t = P(torch.empty(*shape))
            self.register_parameter(name.replace(".", "__"), t)
            self.names.append(name)
            return t

        add("embed.W_E", V, D)
        if a.pos == "learned":
            add("pos_embed.W_pos", C, D)
        for l in range(L):
            b = "blocks.%d." % l
            if not a.no_ln1:
                add(b + "ln1.w", D); add(b + "ln1.b", D)
            if a.attn == "softmax":
                add(b + "attn.W_Q", H, D, dh); add(b + "attn.W_K", H, D, dh)
            add(b + "attn.W_V", H, D, dh); add(b + "attn.W_O", H, dh, D)
            if a.attn == "softmax":
                add(b + "attn.b_Q", H, dh); add(b + "attn.b_K", H, dh)
            add(b + "attn.b_V", H, dh); add(b + "attn.b_O", D)
            if M > 0:
                add(b + "ln2.w", D); add(b + "ln2.b", D)
                add(b + "mlp.W_in", D, M); add(b + "mlp.b_in", M)
                add(b + "mlp.W_out", M, D); add(b + "mlp.b_out", D)
        add("ln_final.w", D); add("ln_final.b", D)
        add("unembed.W_U", D, V); add("unembed.b_U", V)
        # constant attention helpers
        mask = torch.ones(C, C, dtype=torch.bool).triu(1)
        self.register_buffer("mask", mask, persistent=False)
        unif = (~mask).float() / torch.arange(1, C + 1, dtype=torch.float32)[:, None]
        self.register_buffer("uniform", unif, persistent=False)

    def p(self, name):
        return getattr(self, name.replace(".", "__"))

    def decay_split(self):
        """Weight decay on W_* (headscope's rule), none on norms and biases."""
        named = self.named()
        return ([t for n, t in named if n.rsplit(".", 1)[-1].startswith("W_")],
                [t for n, t in named if not n.rsplit(".", 1)[-1].startswith("W_")])

    def named(self):
        return [(n, self.p(n)) for n in self.names]

    def init_(self, seed, scheme):
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for n, t in self.named():
                leaf = n.rsplit(".", 1)[-1]
                if leaf.startswith("W_") and scheme == "gpt2":
                    t.normal_(0.0, 0.02, generator=g)
                elif leaf in ("W_E", "W_pos"):  # nn.Embedding
                    t.normal_(0.0, 1.0, generator=g)
                elif leaf.startswith("W_"):  # nn.Linear: kaiming-uniform(a=sqrt 5) = U(+-1/sqrt(fan_in))
                    if t.dim() == 3:  # W_Q/W_K/W_V [H,D,dh]: fan_in D; W_O [H,dh,D]: fan_in H*dh
                        fan_in = t.shape[0] * t.shape[1] if leaf == "W_O" else t.shape[1]
                    else:  # W_in [D,M], W_out [M,D], W_U [D,V]
                        fan_in = t.shape[0]
                    bound = 1.0 / math.sqrt(fan_in)
                    t.uniform_(-bound, bound, generator=g)
                elif leaf == "w":
                    t.fill_(1.0)
                else:
                    t.zero_()

    def forward(self, tok):
        a = self.a
        B, T = tok.shape
        D, H, dh = a.d_model, a.heads, a.d_head
        x = F.embedding(tok, self.p("embed.W_E"))
        if a.pos == "learned":
            x = x + self.p("pos_embed.W_pos")[:T]
        for l in range(a.layers):
            b = "blocks.%d." % l
            h = x if a.no_ln1 else F.layer_norm(x, (D,), self.p(b + "ln1.w"), self.p(b + "ln1.b"), 1e-5)
            # all heads in one matmul: [H,D,dh] -> [D, H*dh] (a view-copy of a 64x64 matrix)
            Wv = self.p(b + "attn.W_V").permute(1, 0, 2).reshape(D, H * dh)
            v = (h @ Wv + self.p(b + "attn.b_V").reshape(H * dh)).view(B, T, H, dh).transpose(1, 2)
            if a.attn == "softmax":
                Wq = self.p(b + "attn.W_Q").permute(1, 0, 2).reshape(D, H * dh)
                Wk = self.p(b + "attn.W_K").permute(1, 0, 2).reshape(D, H * dh)
                q = (h @ Wq + self.p(b + "attn.b_Q").reshape(H * dh)).view(B, T, H, dh).transpose(1, 2)
                k = (h @ Wk + self.p(b + "attn.b_K").reshape(H * dh)).view(B, T, H, dh).transpose(1, 2)
                s = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
                s = s.masked_fill(self.mask[:T, :T], float("-inf"))
                att = torch.softmax(s, dim=-1)
                z = att @ v  # [B,H,T,dh]
            else:
                z = self.uniform[:T, :T] @ v
            z = z.transpose(1, 2).reshape(B, T, H * dh)
            x = x + z @ self.p(b + "attn.W_O").reshape(H * dh, D) + self.p(b + "attn.b_O")
            if a.d_mlp > 0:
                h = F.layer_norm(x, (D,), self.p(b + "ln2.w"), self.p(b + "ln2.b"), 1e-5)
                h = F.gelu(torch.addmm(self.p(b + "mlp.b_in"), h.reshape(B * T, D), self.p(b + "mlp.W_in")))
                x = x + torch.addmm(self.p(b + "mlp.b_out"), h, self.p(b + "mlp.W_out")).view(B, T, D)
        x = F.layer_norm(x, (D,), self.p("ln_final.w"), self.p("ln_final.b"), 1e-5)
        return torch.addmm(self.p("unembed.b_U"), x.reshape(B * T, D), self.p("unembed.W_U")).view(B, T, self.V)


class FastBlock(torch.nn.Module):
    """One pre-norm block as nanoGPT writes it: fused Q/K/V, weights [out, in]."""

    def __init__(self, a):
        super().__init__()
        D, H, dh, M = a.d_model, a.heads, a.d_head, a.d_mlp
        self.H, self.dh, self.scale = H, dh, math.sqrt(dh)
        self.ln1 = torch.nn.LayerNorm(D, eps=1e-5)
        self.qkv = torch.nn.Linear(D, 3 * H * dh)
        self.proj = torch.nn.Linear(H * dh, D)
        self.ln2 = torch.nn.LayerNorm(D, eps=1e-5)
        self.fc = torch.nn.Linear(D, M)
        self.fc2 = torch.nn.Linear(M, D)

    def forward(self, x, mask):
        B, T, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(self.H * self.dh, dim=2)
        q = q.view(B, T, self.H, self.dh).transpose(1, 2)  # [B,H,T,dh]
        k = k.view(B, T, self.H, self.dh).transpose(1, 2)
        v = v.view(B, T, self.H, self.dh).transpose(1, 2)
        s = (q @ k.transpose(-1, -2)) / self.scale
        att = torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1)
        z = (att @ v).transpose(1, 2).reshape(B, T, self.H * self.dh)
        x = x + self.proj(z)
        return x + self.fc2(F.gelu(self.fc(self.ln2(x))))


class FastPeer(torch.nn.Module):
    """--impl fast: the same model in PyTorch's own layout (see the module docstring)."""

    def __init__(self, a, V, C):
        super().__init__()
        D = a.d_model
        self.V = V
        self.wte = torch.nn.Embedding(V, D)
        self.wpe = torch.nn.Embedding(C, D)
        self.blocks = torch.nn.ModuleList([FastBlock(a) for _ in range(a.layers)])
        self.ln_f = torch.nn.LayerNorm(D, eps=1e-5)
        self.head = torch.nn.Linear(D, V)
        self.register_buffer("mask", torch.ones(C, C, dtype=torch.bool).triu(1), persistent=False)

    def forward(self, tok):
        T = tok.shape[1]
        x = self.wte(tok) + self.wpe.weight[:T]
        mask = self.mask[:T, :T]
        for blk in self.blocks:
            x = blk(x, mask)
        return self.head(self.ln_f(x))

    def decay_split(self):
        """Weight decay on the matrices (embeddings included, as --impl tl's W_*)."""
        ps = list(self.parameters())
        return [t for t in ps if t.dim() >= 2], [t for t in ps if t.dim() < 2]


@torch.no_grad()
def fast_from_tl(tl, a):
    """A FastPeer holding exactly tl's (a Peer's) parameters, mapped to PyTorch's layout:
    W_Q/W_K/W_V [H,D,dh] -> rows of qkv.weight [3*H*dh, D]; W_O [H,dh,D] -> proj.weight
    [D, H*dh]; W_in [D,M], W_out [M,D], W_U [D,V] transposed."""
    fast = FastPeer(a, tl.V, tl.C)
    H, D, dh = a.heads, a.d_model, a.d_head
    P = tl.p
    fast.wte.weight.copy_(P("embed.W_E"))
    fast.wpe.weight.copy_(P("pos_embed.W_pos"))
    for l, blk in enumerate(fast.blocks):
        b = "blocks.%d." % l
        blk.ln1.weight.copy_(P(b + "ln1.w")); blk.ln1.bias.copy_(P(b + "ln1.b"))
        blk.qkv.weight.copy_(torch.cat([P(b + "attn.W_" + w).permute(0, 2, 1).reshape(H * dh, D) for w in "QKV"]))
        blk.qkv.bias.copy_(torch.cat([P(b + "attn.b_" + w).reshape(H * dh) for w in "QKV"]))
        blk.proj.weight.copy_(P(b + "attn.W_O").reshape(H * dh, D).t()); blk.proj.bias.copy_(P(b + "attn.b_O"))
        blk.ln2.weight.copy_(P(b + "ln2.w")); blk.ln2.bias.copy_(P(b + "ln2.b"))
        blk.fc.weight.copy_(P(b + "mlp.W_in").t()); blk.fc.bias.copy_(P(b + "mlp.b_in"))
        blk.fc2.weight.copy_(P(b + "mlp.W_out").t()); blk.fc2.bias.copy_(P(b + "mlp.b_out"))
    fast.ln_f.weight.copy_(P("ln_final.w")); fast.ln_f.bias.copy_(P("ln_final.b"))
    fast.head.weight.copy_(P("unembed.W_U").t()); fast.head.bias.copy_(P("unembed.b_U"))
    return fast


def make_model(a, V, C, init_tensors=None):
    """The peer --impl asks for, initialised as --init says (init_tensors: headscope's step-0
    weights by TransformerLens name, for --init headscope); --impl fast maps the same init."""
    torch.manual_seed(a.seed)
    model = Peer(a, V, C)
    model.init_(a.seed, "gpt2" if a.init == "gpt2" else "pytorch")
    if init_tensors is not None:
        with torch.no_grad():
            for n, t in model.named():
                t.copy_(init_tensors[n])
    return fast_from_tl(model, a) if a.impl == "fast" else model


def make_opt(model, a):
    """AdamW 0.9/0.999, eps 1e-8, weight decay 0.01 on the matrices only."""
    decay, no_decay = model.decay_split()
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=a.lr, betas=(0.9, 0.999), eps=1e-8, foreach=not a.no_foreach)


def train_step(model, opt, params, tok, tgt, lr):
    """One step: mean next-token cross-entropy (targets -100 ignored), backward, global-norm
    clip 1.0, AdamW at lr. Returns the loss tensor."""
    logits = model(tok)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), ignore_index=-100)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    for g in opt.param_groups:
        g["lr"] = lr
    opt.step()
    return loss


def hs_train_lr(lr, step, steps, decay_start=0.6, lo=0.05):
    """model/train.c hs_train_lr: constant, then cosine over the last 40% to 5% of peak."""
    start = decay_start * steps
    if step <= start or steps <= 1:
        return lr
    frac = min((step - start) / (steps - start), 1.0)
    return lr * (lo + (1.0 - lo) * 0.5 * (1.0 + math.cos(math.pi * frac)))


@torch.no_grad()
def score(model, data):
    toks, ref, other, adj, roles = data
    pred = model(toks[:, :QUERY_POS + 1])[:, QUERY_POS].argmax(-1)
    ok = (pred == ref)
    wrong = (pred == other)
    by_adj = {}
    for j, name in enumerate(adj):
        d = by_adj.setdefault(name, {"role": roles[j], "n": 0, "correct": 0, "other": 0})
        d["n"] += 1
        d["correct"] += int(ok[j])
        d["other"] += int(wrong[j])
    by_adj = {k: {"role": v["role"], "n": v["n"], "accuracy": v["correct"] / v["n"],
                  "other_noun_rate": v["other"] / v["n"]} for k, v in by_adj.items()}
    n = len(adj)
    return {"n": n, "accuracy": ok.sum().item() / n, "other_noun_rate": wrong.sum().item() / n,
            "by_adjective": by_adj}


def induction_batch(a, rng, B):
    """headscope's induction distribution (tasks/tasks.h): len, gap uniform; len distinct segment
    symbols at start1 and start2 = start1 + len + gap; filler from the other symbols; targets only
    on the repeated segment after its first token (-100 elsewhere). numpy's stream, not headscope's."""
    V, T = a.vocab_size, a.n_ctx
    s0, s1 = map(int, a.seg_len.split(":"))
    g0, g1 = map(int, a.gap.split(":"))
    tok = np.empty((B, T), dtype=np.int64)
    tgt = np.full((B, T), -100, dtype=np.int64)
    for b in range(B):
        n = rng.integers(s0, s1 + 1)
        gap = rng.integers(g0, g1 + 1)
        st1 = rng.integers(0, T - 2 * n - gap + 1)
        st2 = st1 + n + gap
        perm = rng.permutation(V)
        seg, rest = perm[:n], perm[n:]
        tok[b] = rest[rng.integers(0, len(rest), T)]
        tok[b, st1:st1 + n] = seg
        tok[b, st2:st2 + n] = seg
        tgt[b, st2:st2 + n - 1] = seg[1:]
    return torch.from_numpy(tok), torch.from_numpy(tgt)


def main_induction(a):
    """The induction task: same model, optimiser and schedule; held-out accuracy on the repeated
    segment over 512 sequences of its own (seed 12345)."""
    t_start = time.perf_counter()
    model = make_model(a, a.vocab_size, a.n_ctx)
    opt = make_opt(model, a)
    params = list(model.parameters())
    rng = np.random.default_rng(a.seed)
    held_tok, held_tgt = induction_batch(a, np.random.default_rng(12345), 512)

    @torch.no_grad()
    def held_acc():
        pred = model(held_tok).argmax(-1)
        m = held_tgt != -100
        return (pred[m] == held_tgt[m]).float().mean().item()

    step_ms, curve, first95 = [], [], None
    t_train = time.perf_counter()
    for step in range(1, a.steps + 1):
        t0 = time.perf_counter()
        tok, tgt = induction_batch(a, rng, a.batch)
        loss = train_step(model, opt, params, tok, tgt, hs_train_lr(a.lr, step, a.steps))
        step_ms.append((time.perf_counter() - t0) * 1e3)
        if (a.eval_every and step % a.eval_every == 0) or step == a.steps:
            acc = held_acc()
            curve.append([step, loss.item(), acc])
            if acc >= 0.95 and first95 is None:
                first95 = step
            if not a.quiet:
                print("step %d/%d loss %.4f held-out acc %.1f%% %.1f ms/step" %
                      (step, a.steps, loss.item(), 100 * acc, float(np.median(step_ms[-a.eval_every or 1:]))),
                      file=sys.stderr, flush=True)
    warm = step_ms[a.warmup:] if len(step_ms) > a.warmup else step_ms
    out = {"tool": "torch_peer", "impl": a.impl, "torch": torch.__version__, "threads": a.threads, "task": "induction",
           "seed": a.seed, "steps": a.steps, "batch": a.batch, "init": a.init,
           "task_params": {"n_symbols": a.vocab_size, "n_ctx": a.n_ctx, "seg_len": a.seg_len, "gap": a.gap},
           "config": {"n_layers": a.layers, "d_model": a.d_model, "n_heads": a.heads, "d_head": a.d_head,
                      "d_mlp": a.d_mlp},
           "heldout_accuracy": curve[-1][2] if curve else None, "first_step_95": first95,
           "median_step_ms": float(np.median(warm)) if warm else None,
           "train_wall_s": time.perf_counter() - t_train, "wall_s": time.perf_counter() - t_start,
           "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, "curve": curve}
    json.dump(out, sys.stdout, indent=1)
    print()


def read_tokens(path, T, V):
    """--tokens FILE: little-endian int32 rows of T + 1 tokens, each in [0, V)."""
    flat = np.fromfile(path, dtype="<i4")
    if flat.size == 0 or flat.size % (T + 1) or flat.min() < 0 or flat.max() >= V:
        sys.exit("torch_peer: %s is not rows of %d tokens in [0, %d)" % (path, T + 1, V))
    return torch.from_numpy(flat.astype(np.int64).reshape(-1, T + 1))


def main_tokens(a):
    """--task tokens: the step time on a fixed token stream (no evaluation)."""
    t_start = time.perf_counter()
    rows = read_tokens(a.tokens, a.n_ctx, a.vocab_size)
    nb = rows.shape[0] // a.batch
    if nb < 1:
        sys.exit("torch_peer: %s holds fewer than one batch of %d rows" % (a.tokens, a.batch))
    model = make_model(a, a.vocab_size, a.n_ctx)
    opt = make_opt(model, a)
    params = list(model.parameters())
    step_ms, losses = [], []
    for step in range(1, a.warmup + a.steps + 1):
        k = (step - 1) % nb
        batch = rows[k * a.batch:(k + 1) * a.batch]
        t0 = time.perf_counter()
        loss = train_step(model, opt, params, batch[:, :-1], batch[:, 1:], a.lr)
        step_ms.append((time.perf_counter() - t0) * 1e3)
        losses.append(loss.item())
    timed = step_ms[a.warmup:]
    out = {"tool": "torch_peer", "impl": a.impl, "torch": torch.__version__, "threads": a.threads,
           "task": "tokens", "batch": a.batch, "steps": a.steps, "warmup": a.warmup,
           "config": {"n_layers": a.layers, "d_model": a.d_model, "n_heads": a.heads, "d_head": a.d_head,
                      "d_mlp": a.d_mlp, "n_ctx": a.n_ctx, "d_vocab": a.vocab_size},
           "median_step_ms": float(np.median(timed)), "min_step_ms": float(np.min(timed)),
           "step_ms": timed, "losses": losses, "wall_s": time.perf_counter() - t_start,
           "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}
    json.dump(out, sys.stdout, indent=1)
    print()


def main():
    a = parse_args()
    if a.task in ("induction", "tokens"):
        torch.set_num_threads(a.threads)
        return main_induction(a) if a.task == "induction" else main_tokens(a)
    torch.set_num_threads(a.threads)
    t_start = time.perf_counter()

    tmpdir = None
    meta = None
    init_tensors = None
    if a.dataset is None or a.init == "headscope" or a.save:
        tmpdir = tempfile.TemporaryDirectory(prefix="torch_peer.")
        ds = a.dataset or os.path.join(tmpdir.name, "dataset.txt")
        ck = os.path.join(tmpdir.name, "step0.safetensors")
        cmd = [a.headscope, "train", "--steps", "0", "--eval-every", "0", "--out", ck] + headscope_flags(a)
        if a.dataset is None:
            cmd += ["--dataset", ds]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        meta, init_tensors = read_safetensors(ck)
        a.dataset = ds
    vocab = json.loads(meta["vocab"]) if meta else list(DEFAULT_VOCAB)
    rows = load_dataset(a.dataset)
    train = tensorise(rows["train"], vocab)
    held = tensorise(rows["heldout"], vocab)
    train_tok = train[0]
    T = train_tok.shape[1]
    N = train_tok.shape[0]

    model = make_model(a, len(vocab), T, init_tensors if a.init == "headscope" else None)
    opt = make_opt(model, a)
    params = list(model.parameters())
    gen = torch.Generator().manual_seed(a.seed)
    inputs = train_tok
    targets = train_tok[:, 1:]

    step_ms = []
    curve = []
    first_full = None
    t_train = time.perf_counter()
    for step in range(1, a.steps + 1):
        t0 = time.perf_counter()
        idx = torch.randint(0, N, (a.batch,), generator=gen)
        logits = model(inputs[idx])
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), targets[idx].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        lr = hs_train_lr(a.lr, step, a.steps)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()
        step_ms.append((time.perf_counter() - t0) * 1e3)
        if (a.eval_every and step % a.eval_every == 0) or step == a.steps:
            acc = score(model, held)["accuracy"]
            lv = loss.item()
            curve.append([step, lv, acc])
            if acc >= 1.0 and first_full is None:
                first_full = step
            if not a.quiet:
                print("step %d/%d loss %.4f lr %.2e held-out acc %.1f%% %.1f ms/step" %
                      (step, a.steps, lv, lr, 100 * acc, float(np.median(step_ms[-a.eval_every or 1:]))),
                      file=sys.stderr, flush=True)
    train_wall = time.perf_counter() - t_train

    ho = score(model, held)
    tr = score(model, train)
    if a.save:
        m = dict(meta)
        m["train"] = json.dumps({"steps": a.steps, "steps_done": a.steps, "seed": a.seed,
                                 "tool": "bench/torch_peer.py", "torch": torch.__version__})
        write_safetensors(a.save, {n: t for n, t in model.named()}, m)
    warm = step_ms[a.warmup:] if len(step_ms) > a.warmup else step_ms
    out = {
        "tool": "torch_peer", "impl": a.impl, "torch": torch.__version__, "threads": a.threads,
        "task": a.task, "split_seed": a.split_seed, "seed": a.seed, "steps": a.steps,
        "batch": a.batch, "init": a.init,
        "config": {"n_layers": a.layers, "d_model": a.d_model, "n_heads": a.heads, "d_head": a.d_head,
                   "d_mlp": a.d_mlp, "attn": a.attn, "ln1": not a.no_ln1, "pos": a.pos},
        "n_params": sum(t.numel() for t in params),
        "heldout": ho, "train": {k: tr[k] for k in ("n", "accuracy", "other_noun_rate")},
        "heldout_accuracy": ho["accuracy"], "heldout_other_noun_rate": ho["other_noun_rate"],
        "train_accuracy": tr["accuracy"],
        "final_loss": curve[-1][1] if curve else None,
        "first_full_heldout_step": first_full, "eval_every": a.eval_every,
        "median_step_ms": float(np.median(warm)) if warm else None,
        "train_wall_s": train_wall,
        "wall_s": time.perf_counter() - t_start,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "curve": curve,
    }
    if tmpdir:
        tmpdir.cleanup()
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
