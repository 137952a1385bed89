#!/usr/bin/python3
"""The Python package's cost over the C library, side by side in one process.

usage: bench/py_speed.py GPT2_DIR BUILD_DIR [--ctx T] [--threads N] [--pairs P]
                         [--hook-pairs Q] [--with-bench-gpt2] [--json FILE]

(the package from the source tree: PYTHONPATH=python, the library BUILD_DIR's
libheadscope.so; /usr/bin/python3 has numpy)

Both sides run in this process on the same libheadscope.so, on one sequence of
T tokens (the xorshift tokens bench_gpt2 draws), interleaved call by call in
ABBA order (Python, C, C, Python, ...) so that the machine's load falls on both
alike; every figure is a median with its spread (p25-p75 and the minimum), and
the load average is printed before and after.

  cache   model.run_with_cache(tokens) (every hook point as numpy views of
          the library's buffers, the ActivationCache) against the C library's
          own forward with the full cache: hs_api_run called bare through
          ctypes (hs_run_with_cache in C on the same activations and pool,
          refilling its own cache as bench_gpt2 does; no numpy, no Python
          objects). Target: within 1.05x. Also the Python layer's own work,
          timed alone (building the views and the cache object from a finished
          run, many times): the overhead that does not depend on the load.
  hook    model.run_with_hooks(tokens, fwd_hooks=[(blocks.5.attn.hook_z,
          no-op)]) minus model.run_with_hooks(tokens) (the forward), Q ABBA
          pairs: one hooked point's cost (the ctypes trampoline, the numpy
          view, the registry's copy and comparison of the point in C); then a
          no-op on each of the 4 x n_layers points of that shape (q, k, v, z:
          the difference over 48 points, less noisy per point). Target:
          under 1 ms a point. The hook's Python side alone (trampoline to
          return, timed inside the run) is printed beside it.
  CPU     beside the wall clock, every figure as CPU time: the process's, or
          at --threads 1 the calling thread's, which is all the work and
          what the machine's load changes least (run both ways).
  --with-bench-gpt2: BUILD_DIR/bench_gpt2 --ctx T (a separate C process on the
          same folder) between the rounds, for reference.
"""
import headscope  # first: it sets OPENBLAS_CORETYPE before OpenBLAS loads (as the CLI)

import argparse
import ctypes
import json
import os
import re
import statistics
import subprocess
import time

import numpy as np

from headscope import _lib
from headscope.cache import ActivationCache, cache_arrays


def tokens(T, V):
    x = 88172645463325252
    out = []
    for _ in range(T):
        x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 7
        x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
        out.append(x % V)
    return np.array([out], np.int64)


def timed(fn):
    """(wall ms, CPU ms) of one call: the process's CPU time, or with
    THREAD_CPU the calling thread's (all the work at --threads 1, where
    neither the pool nor OpenBLAS starts a thread: the measure the machine's
    load changes least)."""
    clock = time.thread_time if THREAD_CPU else time.process_time
    w0, c0 = time.perf_counter(), clock()
    fn()
    return (time.perf_counter() - w0) * 1e3, (clock() - c0) * 1e3


THREAD_CPU = False


def spread(xs):
    """'median (p25-p75, min n)' of xs."""
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return "%.1f (p25-p75 %.1f-%.1f, min %.1f)" % (statistics.median(xs), q[0], q[2], min(xs))


def abba(fa, fb, pairs, warm=2):
    """fa and fb interleaved A B B A ...: ([wall a], [wall b], [cpu a], [cpu b])."""
    for _ in range(warm):
        fa(), fb()
    wa, wb, ca, cb = [], [], [], []
    for i in range(pairs):
        order = (fa, fb) if i % 2 == 0 else (fb, fa)
        res = {}
        for f in order:
            res[f] = timed(f)
        wa.append(res[fa][0]), wb.append(res[fb][0]), ca.append(res[fa][1]), cb.append(res[fb][1])
    return wa, wb, ca, cb


def load_avg():
    return "%.1f %.1f %.1f" % os.getloadavg()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gpt2")
    ap.add_argument("build")
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--hook-pairs", type=int, default=20)
    ap.add_argument("--hook-point", default="blocks.5.attn.hook_z")
    ap.add_argument("--with-bench-gpt2", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    global THREAD_CPU
    THREAD_CPU = a.threads == 1
    cpu_what = "the calling thread's CPU ms (all the work at 1 thread)" if THREAD_CPU else "process CPU ms"
    print("load average before: %s (%d CPUs); OpenBLAS core %s; %s" % (load_avg(), os.cpu_count(),
                                                                     headscope.BLAS_CORE, _lib.LIB_PATH))
    m = headscope.load(a.gpt2, threads=a.threads)
    tok = tokens(a.ctx, m.cfg.d_vocab)
    T = a.ctx
    res = {"tokens": T, "threads": a.threads, "load_before": os.getloadavg()}

    # -- cache: Python's run_with_cache against the bare library call -------
    def py_cache():
        logits, cache = m.run_with_cache(tok)
        return len(cache)

    acts = m._acts_for(1, T)
    c_cache = [None]

    def c_run():
        out = ctypes.c_void_p()
        err = _lib.HsError()
        st = _lib.lib.hs_api_run(m._h, acts.ptr, tok.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)), 1, T,
                                 None, 0, None, 0, ctypes.cast(None, _lib.HOOK_FN), None, c_cache[0],
                                 ctypes.byref(out), ctypes.byref(err))
        assert st == 0, err.msg
        c_cache[0] = out

    n_points = py_cache()
    wp, wc, cp, cc = abba(py_cache, c_run, a.pairs)
    ratios = [x / y for x, y in zip(wp, wc)]
    # the Python layer alone: views and the ActivationCache of a finished run
    # (the C cache's buffers, not freed: the owner is detached after each build)
    layer_ms = []
    for _ in range(200):
        t0 = time.perf_counter()
        arrs = cache_arrays(c_cache[0], None)
        ActivationCache(arrs, m)
        layer_ms.append((time.perf_counter() - t0) * 1e3)
        next(iter(arrs.values())).base._owner.ptr = None  # the buffers stay the C side's
        del arrs
    _lib.lib.hs_api_cache_free(c_cache[0])
    mb = sum(v.nbytes for v in m.run_with_cache(tok)[1].values()) / 1e6
    print("run_with_cache, GPT-2 small, %d tokens, %d points (%.0f MB), %d threads, %d ABBA pairs:" % (
        T, n_points, mb, a.threads, a.pairs))
    print("  Python run_with_cache wall ms: %s" % spread(wp))
    print("  C hs_api_run (bare)   wall ms: %s" % spread(wc))
    print("  ratio of the medians %.3fx; median of the pairs' ratios %.3fx (p25-p75 %s); ratio of the minima %.3fx"
          % (statistics.median(wp) / statistics.median(wc), statistics.median(ratios),
             "-".join("%.3f" % v for v in statistics.quantiles(ratios, n=4)[::2]), min(wp) / min(wc)))
    cr = [x / y for x, y in zip(cp, cc)]
    print("  %s: Python %s, C %s: ratio of the medians %.3fx, median of the pairs' ratios %.3fx" % (
        cpu_what, spread(cp), spread(cc), statistics.median(cp) / statistics.median(cc), statistics.median(cr)))
    print("  the Python layer alone (views + ActivationCache of %d points, 200 times): %.3f ms median (min %.3f): "
          "%.2f%% of the C forward's median" % (n_points, statistics.median(layer_ms), min(layer_ms),
                                                100 * statistics.median(layer_ms) / statistics.median(wc)))
    res.update(py_ms=statistics.median(wp), c_ms=statistics.median(wc), ratio=statistics.median(wp) /
               statistics.median(wc), pair_ratio=statistics.median(ratios), layer_ms=statistics.median(layer_ms),
               cpu_ratio=statistics.median(cp) / statistics.median(cc), cpu_pair_ratio=statistics.median(cr))

    if a.with_bench_gpt2:
        out = subprocess.run(["%s/bench_gpt2" % a.build, a.gpt2, "--threads", str(a.threads), "--runs", "7",
                              "--ctx", str(T)], capture_output=True, text=True, check=True).stdout
        b = float(re.search(r"tokens, \d+ threads: ([0-9.]+) ms", out).group(1))
        print("  bench_gpt2 (a C process, after the pairs): %.1f ms, median of 7" % b)
        res["bench_gpt2_ms"] = b

    # -- hook: one point --------------------------------------------------
    inside = []

    def noop(x, hook):
        return None

    def forward():
        m.run_with_hooks(tok, fwd_hooks=[])

    def hooked():
        m.run_with_hooks(tok, fwd_hooks=[(a.hook_point, noop)])

    wh, wf, ch, cf = abba(hooked, forward, a.hook_pairs)
    diff = [x - y for x, y in zip(wh, wf)]
    cdiff = [x - y for x, y in zip(ch, cf)]
    # every point of hook_z's shape [batch, pos, head, d_head] (q, k, v, z of
    # every layer: buffers the plain forward fills anyway), so that the
    # difference is n_points times larger than the noise allows for one
    L = m.cfg.n_layers
    every = [("blocks.%d.attn.hook_%s" % (l, x), noop) for l in range(L) for x in "qkvz"]
    wh2, wf2, ch2, cf2 = abba(lambda: m.run_with_hooks(tok, fwd_hooks=every), forward, a.hook_pairs)
    diff2 = [(x - y) / len(every) for x, y in zip(wh2, wf2)]
    cdiff2 = [(x - y) / len(every) for x, y in zip(ch2, cf2)]

    # the Python side of one hooked call, timed inside the run: the time from
    # the C callback's entry into Python to its return (_call_hook wrapped)
    from headscope import model as hm
    orig = hm._call_hook

    def timed_hook(*args):
        t0 = time.perf_counter()
        try:
            return orig(*args)
        finally:
            inside.append((time.perf_counter() - t0) * 1e3)

    hm._call_hook = timed_hook
    try:
        for _ in range(10):
            hooked()
    finally:
        hm._call_hook = orig
    shape = m.run_with_cache(tok, names_filter=a.hook_point)[1][a.hook_point].shape
    print("a no-op Python hook at %d tokens, %d ABBA pairs each:" % (T, a.hook_pairs))
    print("  on %s %s: run_with_hooks %s ms, forward %s ms; difference %s ms (wall), %s ms (%s)" % (
        a.hook_point, list(shape), spread(wh), spread(wf), spread(diff), spread(cdiff), cpu_what))
    print("  on the %d points of that shape (q, k, v, z of every layer): difference per point %s ms (wall), %s ms "
          "(%s)" % (len(every), spread(diff2), spread(cdiff2), cpu_what))
    # the registry's work in C for a hooked point: a copy of it before the
    # hooks, a comparison after (hs_hooks); here numpy's copy and == of an
    # array that size, as a yardstick (not the library's code)
    x = np.random.default_rng(0).random(shape, dtype=np.float32)
    y = np.empty_like(x)
    yard = []
    for _ in range(200):
        t0 = time.perf_counter()
        np.copyto(y, x)
        bool((x == y).all())
        yard.append((time.perf_counter() - t0) * 1e3)
    print("  the hook's Python side (trampoline entry to return, %d calls): %.3f ms median; a copy and a comparison "
          "of %s floats (numpy, the registry's work as a yardstick): %.3f ms median" % (
              len(inside), statistics.median(inside), list(shape), statistics.median(yard)))
    res.update(hook_ms=statistics.median(diff), hook_cpu_ms=statistics.median(cdiff),
               hook_every_ms=statistics.median(diff2), hook_every_cpu_ms=statistics.median(cdiff2),
               hook_python_ms=statistics.median(inside), load_after=os.getloadavg())
    print("load average after: %s" % load_avg())
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
