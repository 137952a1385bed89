#!/usr/bin/python3
"""The Python package's cost over the C library, side by side in one run.

usage: PYTHONPATH=python bench/py_speed.py GPT2_DIR BUILD_DIR [--ctx T] [--threads N] [--runs R] [--rounds K]

  cache   model.run_with_cache(tokens) from Python (every hook point, numpy
          views of the library's buffers) on one sequence of T tokens (the
          xorshift tokens bench_gpt2 draws), median of R calls after two
          untimed ones, beside BUILD_DIR/bench_gpt2 --ctx T (hs_run_with_cache
          in C on the same folder, median of R), K rounds alternating the two;
          the ratio of the medians of the rounds (target: within 1.05x).
  layer   model.run_with_cache against a bare ctypes call of hs_api_run (the
          library's hs_run_with_cache on the same activations, reusing the
          same cache: no numpy views, no Python objects), alternated call by
          call in this process (R x K pairs): what the Python layer adds,
          independent of the machine's load.
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
    pm, cm = statistics.median(py), max(statistics.median(c), 1e-3)
    print("OpenBLAS core %s; run_with_cache at %d tokens (%d points), %d threads: Python %.1f ms, C %.1f ms: "
          "%.3fx (rounds: Python %s, C %s)" % (headscope.BLAS_CORE, a.ctx, n_points, a.threads, pm, cm, pm / cm,
                                          ["%.1f" % v for v in py], ["%.1f" % v for v in c]))

    # the Python layer alone: alternated with the bare library call
    from headscope import _lib
    import ctypes
    acts = m._acts_for(1, a.ctx)
    reuse = [None]

    def bare():
        out = ctypes.c_void_p()
        err = _lib.HsError()
        st = _lib.lib.hs_api_run(m._h, acts.ptr, tok.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)), 1, a.ctx,
                                 None, 0, None, 0, ctypes.cast(None, _lib.HOOK_FN), None, reuse[0],
                                 ctypes.byref(out), ctypes.byref(err))
        assert st == 0, err.msg
        reuse[0] = out

    py2, bare_ms = [], []
    for r in range(a.runs * a.rounds + 2):
        p_ = median_ms(cached, 1, warm=0)
        b_ = median_ms(bare, 1, warm=0)
        if r >= 2:
            py2.append(p_), bare_ms.append(b_)
    _lib.lib.hs_api_cache_free(reuse[0])
    ratios = [x / y for x, y in zip(py2, bare_ms)]
    print("run_with_cache against the bare library call in this process (%d alternated pairs): %.1f ms against "
          "%.1f ms (medians), ratio %.3fx (median of the pairs' ratios)" % (len(ratios), statistics.median(py2),
                                                                           statistics.median(bare_ms),
                                                                           statistics.median(ratios)))

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
