#!/usr/bin/python3
"""The Python package's cost over the C library, side by side in one run.

usage: PYTHONPATH=python bench/py_speed.py GPT2_DIR BUILD_DIR [--ctx T] [--threads N] [--runs R] [--rounds K]

  cache   model.run_with_cache(tokens) from Python (every hook point, numpy
          views of the library's buffers) on one sequence of T tokens (the
          xorshift tokens bench_gpt2 draws), median of R calls after two
          untimed ones, beside BUILD_DIR/bench_gpt2 --ctx T (hs_run_with_cache
          in C on the same folder, median of R), K rounds alternating the two;
          the ratio of the medians of the rounds (target: within 1.05x).
  hook    model.run_with_hooks with a no-op Python hook on every layer's
          attn.hook_z minus the same run without hooks (the two alternated
          call by call, R x K pairs), over the number of points: what one hooked point costs (the ctypes trampoline, the
          numpy view, and the registry's copy and comparison of the point in
          C), median of R (target: under 1 ms).
"""
import headscope  # first: it sets OPENBLAS_CORETYPE before OpenBLAS loads (as the CLI)

import argparse
import re
import statistics
import subprocess
import time

import numpy as np


def tokens(T, V):
    x = 88172645463325252
    out = []
    for _ in range(T):
        x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 7
        x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
        out.append(x % V)
    return np.array([out], np.int64)


def median_ms(fn, runs, warm=2):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gpt2")
    ap.add_argument("build")
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--hook-ctx", type=int, default=0, help="tokens of the hook measurement (default --ctx)")
    a = ap.parse_args()
    m = headscope.load(a.gpt2, threads=a.threads)
    tok = tokens(a.ctx, m.cfg.d_vocab)
    py, c = [], []

    def cached():
        logits, cache = m.run_with_cache(tok)
        return len(cache)

    for _ in range(a.rounds):
        py.append(median_ms(cached, a.runs))
        out = subprocess.run(["%s/bench_gpt2" % a.build, a.gpt2, "--threads", str(a.threads), "--runs",
                              str(a.runs), "--ctx", str(a.ctx)], capture_output=True, text=True, check=True).stdout
        c.append(float(re.search(r"tokens, \d+ threads: ([0-9.]+) ms", out).group(1)))
    n_points = cached()
    pm, cm = statistics.median(py), statistics.median(c)
    print("OpenBLAS core %s; run_with_cache at %d tokens (%d points), %d threads: Python %.1f ms, C %.1f ms: "
          "%.3fx (rounds: Python %s, C %s)" % (headscope.BLAS_CORE, a.ctx, n_points, a.threads, pm, cm, pm / cm,
                                          ["%.1f" % v for v in py], ["%.1f" % v for v in c]))

    def noop(x, hook):
        return None

    if a.hook_ctx:
        tok = tok[:, :a.hook_ctx]
    L = m.cfg.n_layers
    hooks = [("blocks.%d.attn.hook_z" % l, noop) for l in range(L)]
    # alternated call by call, so that the load of the machine falls on both
    base, hooked, diff = [], [], []
    for r in range(a.runs * a.rounds + 2):
        b = median_ms(lambda: m.run_with_hooks(tok, fwd_hooks=[]), 1, warm=0)
        h = median_ms(lambda: m.run_with_hooks(tok, fwd_hooks=hooks), 1, warm=0)
        if r >= 2:
            base.append(b), hooked.append(h), diff.append((h - b) / L)
    print("at %d tokens, a no-op Python hook on %d points: %.1f ms against %.1f ms without (medians of %d alternated "
          "calls): %.3f ms a point (median of the differences)" % (tok.shape[1], L, statistics.median(hooked),
                                                                   statistics.median(base), len(diff),
                                                                   statistics.median(diff)))


if __name__ == "__main__":
    main()
