#!/usr/bin/python3
"""bench/peer_equiv.py -- the two PyTorch peers of bench/torch_peer.py compute the same
training run: --impl fast (PyTorch's layout, fused Q/K/V) starts from the TransformerLens-layout
peer's init mapped by fast_from_tl, both train on the same batches (random tokens from a fixed
seed) with the same optimiser and schedule, and every step's loss must agree to --rtol (default
1e-4) relative. Checks the default shape (2 layers, d_model 64, 4 heads x 16, vocab 36, batch
64 x 18) for --steps (default 50) and a second shape (d_model 64, 2 heads x 32, 3 layers,
context 24, vocab 50) for 20 steps.

usage: /usr/bin/python3 bench/peer_equiv.py [--steps N] [--threads N] [--rtol R]
Exit 0 when every step agrees, 1 (naming the first step that does not) otherwise. Needs
python3-torch and numpy; downloads nothing. Takes a few seconds.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_peer as tp  # noqa: E402


def losses(a, V, T, batches):
    model = tp.make_model(a, V, T)
    opt = tp.make_opt(model, a)
    params = list(model.parameters())
    return [tp.train_step(model, opt, params, b[:, :-1], b[:, 1:], tp.hs_train_lr(a.lr, s + 1, len(batches))).item()
            for s, b in enumerate(batches)]


def check(flags, V, T, steps, rtol):
    tl = tp.parse_args(flags + ["--impl", "tl"])
    fast = tp.parse_args(flags + ["--impl", "fast"])
    g = torch.Generator().manual_seed(7)
    batches = [torch.randint(0, V, (tl.batch, T + 1), generator=g) for _ in range(steps)]
    a, b = losses(tl, V, T, batches), losses(fast, V, T, batches)
    worst = max(abs(x - y) / abs(x) for x, y in zip(a, b))
    print("%s: %d steps, loss %.5f -> %.5f (tl) vs %.5f -> %.5f (fast), max relative difference %.2e"
          % (" ".join(flags) or "default shape", steps, a[0], a[-1], b[0], b[-1], worst))
    for s, (x, y) in enumerate(zip(a, b)):
        if abs(x - y) > rtol * abs(x):
            print("step %d: tl %.7f, fast %.7f (relative %.2e > %.0e)" % (s + 1, x, y, abs(x - y) / abs(x), rtol))
            return False
    return a[-1] < a[0]  # and the run trains (the loss falls), so agreeing means something


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1: a check, not a timing)")
    ap.add_argument("--rtol", type=float, default=1e-4)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    ok = check([], 36, 18, a.steps, a.rtol)
    ok = check(["--d-model", "64", "--heads", "2", "--d-head", "32", "--layers", "3"], 50, 24, 20, a.rtol) and ok
    print("ok: the peers agree" if ok else "FAIL: the peers differ")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
