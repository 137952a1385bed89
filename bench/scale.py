#!/usr/bin/python3
"""bench/scale.py -- the scaling table (issue 15): headscope's training step against the faster
PyTorch peer (bench/torch_peer.py --impl fast) over model sizes, at equal threads, on the same
data, optimiser and batch, with the sgemm roofline at each size's own shapes.

usage: /usr/bin/python3 bench/scale.py [--build DIR] [--threads N] [--peer fast|tl]
                                       [--out FILE.json] [--md FILE.md] [--fig PREFIX] [--quick]
                                       [--max-steps N] [--large-steps N] [--largest-first]

The sizes (batch 64, d_head 16 at d_model 64 and 32 above, 4x MLP, vocabulary 64, random tokens):
a middle point (d_model 128, 4 layers, context 64) and one axis varied at a time around it --
d_model 64/128/256/512, layers 2/4/8, context 18/64/256 -- plus the large corner (d_model 512,
8 layers, context 256; ~2.5 TFLOP a step). Nine models: each axis's effect alone, and the
largest size the issue names, in ~10 minutes on a quiet 2-core machine; the full 4x3x3 cross
product would take hours at the large end (tens of seconds a step, each side). Steps: 2 warm-up
and up to 30 timed, fewer as a step grows (at least 5 timed after 1 warm-up under 1 TFLOP a step,
3 above; timed_steps(). On a loaded machine: --max-steps N, at most 1 + N at every size;
--large-steps N, 1 + N from 1 TFLOP; --largest-first measures the largest sizes first, and the
rows measured so far are written after each size, marked partial, so a run cut short keeps them;
--max-gflop X measures the sizes up to X GFLOP a step only).

Data: per context, one file of 4 batches of random tokens (numpy default_rng(0), int32 rows of
context + 1), read by both sides (bench_train --tokens, torch_peer.py --task tokens); inputs the
first `context` tokens of a row, targets the next token at every position; AdamW 1e-3 0.9/0.999
eps 1e-8, weight decay 0.01 on the matrices, clip 1.0, constant lr. Threads: headscope
--threads N (its pool; OpenBLAS 1 per call); PyTorch torch.set_num_threads(N) with
OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=N. Each side is its own process under /usr/bin/time
(peak RSS, %M).

Per row: ms/step (median of the timed steps) both, peer / headscope, FLOPs per step (matmuls +
attention, bench/bench_shapes.h), achieved GFLOP/s, the one-core sgemm rate at the step's
shapes (bench_sgemm --threads 1 with the size's flags: the roofline = FLOPs / that rate) and the
two-core ideal (FLOPs / (2 x that rate)), step / two-core ideal for each side, peak RSS each,
and the buffers headscope's step allocates (bench_train's JSON: acts_mb + acts_grad_mb +
params_train_mb), the bulk of its peak.

Writes --out (default bench/results/scale.json: every number, machine, load average), --md
(default bench/results/scale.md: the table) and the figure --fig (default
bench/results/scale_fig: .png, .svg, .json; ms/step against FLOPs per step, log-log, both sides,
through headscope's viz: bench_plot). --quick: tiny sizes (a smoke test of the pipeline, not a
measurement). Builds nothing: run scripts/build.sh first (bench/run.sh does).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3"
BATCH = 64
VOCAB = 64
MIDDLE = {"d_model": 128, "layers": 4, "ctx": 64}
AXES = {"d_model": [64, 128, 256, 512], "layers": [2, 4, 8], "ctx": [18, 64, 256]}
CORNER = {"d_model": 512, "layers": 8, "ctx": 256}
QUICK_MIDDLE = {"d_model": 32, "layers": 1, "ctx": 8}
QUICK_AXES = {"d_model": [32, 64], "layers": [1, 2], "ctx": [8, 16]}
QUICK_CORNER = {"d_model": 64, "layers": 2, "ctx": 16}


def sizes(quick):
    """The table's models: the middle point, each axis varied alone around it, then the corner;
    each once, in that order, tagged with why it is there."""
    middle, axes, corner = (QUICK_MIDDLE, QUICK_AXES, QUICK_CORNER) if quick else (MIDDLE, AXES, CORNER)
    rows, seen = [], {}
    for axis, values in axes.items():
        for v in values:
            m = dict(middle, **{axis: v})
            key = (m["d_model"], m["layers"], m["ctx"])
            if key in seen:
                seen[key]["why"].append("%s axis" % axis)
                continue
            seen[key] = dict(m, why=["middle" if m == middle else "%s axis" % axis])
            rows.append(seen[key])
    key = (corner["d_model"], corner["layers"], corner["ctx"])
    if key not in seen:
        rows.append(dict(corner, why=["large corner"]))
    for r in rows:
        r["d_head"] = 16 if r["d_model"] <= 64 else 32
        r["heads"] = r["d_model"] // r["d_head"]
        r["d_mlp"] = 4 * r["d_model"]
        r["why"] = ", ".join(r["why"])
    return rows


def flops(r):
    """FLOPs of one step (bench/bench_shapes.h's count): matmuls 3x the forward's (forward, dinp,
    dW) and attention's q.k and pattern@v over the causal pairs (forward 2 products, backward 4)."""
    BT, D, HD, M, L, T = BATCH * r["ctx"], r["d_model"], r["heads"] * r["d_head"], r["d_mlp"], r["layers"], r["ctx"]
    fwd = L * (3 * 2 * BT * D * HD + 2 * BT * HD * D + 2 * 2 * BT * D * M) + 2 * BT * D * VOCAB
    attn = 2.0 * BATCH * r["heads"] * T * (T + 1) / 2 * r["d_head"] * 6 * L
    return 3.0 * fwd + attn


def timed_steps(f):
    """(warm-up, timed) steps for a step of f FLOPs: 2 + up to 30 timed while the timed steps
    stay ~200 GFLOP (2 s at 100 GFLOP/s); at least 1 + 5 under 1 TFLOP a step (a median of 3
    moved d_model 512 x 4 layers by 5% between runs), 1 + 3 above."""
    n = int(2e11 / f)
    if n >= 5:
        return (2, min(30, n))
    return (1, 5) if f < 1e12 else (1, 3)


def shape_flags(r):
    return ["--d-model", str(r["d_model"]), "--layers", str(r["layers"]), "--heads", str(r["heads"]),
            "--d-head", str(r["d_head"]), "--d-mlp", str(r["d_mlp"])]


def run_timed(cmd, work, name, env=None):
    """Runs cmd under /usr/bin/time; returns (stdout, peak RSS MB). Exits on failure."""
    tf = os.path.join(work, name + ".time")
    p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", tf] + cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-2000:])
        sys.exit("bench/scale.py: %s failed (exit %d): %s" % (name, p.returncode, " ".join(cmd)))
    with open(tf) as fh:
        rss_kb = int(fh.read().split()[-1])
    return p.stdout, rss_kb / 1024.0


def log(msg):
    sys.stderr.write("[scale %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def measure(r, a, work, tokens):
    warm, steps = timed_steps(r["gflop"] * 1e9)
    if a.max_steps:
        warm, steps = min(warm, 1), min(steps, a.max_steps)
    if a.large_steps and r["gflop"] >= 1e3:
        warm, steps = 1, min(steps, a.large_steps)
    r["warmup"], r["steps"] = warm, steps
    tag = "d%d_l%d_t%d" % (r["d_model"], r["layers"], r["ctx"])
    flags = shape_flags(r) + ["--ctx", str(r["ctx"]), "--vocab", str(VOCAB)]
    # headscope
    hj = os.path.join(work, tag + "_hs.json")
    _, r["hs_rss_mb"] = run_timed([os.path.join(a.build, "bench_train"), "--threads", str(a.threads),
                                   "--steps", str(steps), "--warmup", str(warm), "--no-roofline",
                                   "--tokens", tokens, "--json", hj] + flags, work, tag + "_hs")
    with open(hj) as fh:
        h = json.load(fh)
    r["hs_ms"], r["hs_min_ms"] = h["step_ms"], h["step_min_ms"]
    # the buffers headscope allocates (the peak's expected bulk; pages never touched do not count)
    r["hs_buffers_mb"] = h["acts_mb"] + h["acts_grad_mb"] + h["params_train_mb"]
    assert abs(h["gflop_per_step"] - r["gflop"]) < 1e-3 * r["gflop"], (h["gflop_per_step"], r["gflop"])
    # the peer, same threads
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), OPENBLAS_NUM_THREADS=str(a.threads))
    out, r["peer_rss_mb"] = run_timed([PY, os.path.join(HERE, "torch_peer.py"), "--task", "tokens",
                                       "--impl", a.peer, "--tokens", tokens, "--n-ctx", str(r["ctx"]),
                                       "--vocab-size", str(VOCAB), "--batch", str(BATCH),
                                       "--threads", str(a.threads), "--steps", str(steps),
                                       "--warmup", str(warm), "--quiet"] + shape_flags(r),
                                      work, tag + "_peer", env)
    p = json.loads(out)
    r["peer_ms"], r["peer_min_ms"] = p["median_step_ms"], p["min_step_ms"]
    # one-core sgemm at the step's shapes
    sj = os.path.join(work, tag + "_sgemm.json")
    run_timed([os.path.join(a.build, "bench_sgemm"), "--threads", "1", "--json", sj] + flags, work, tag + "_sgemm")
    with open(sj) as fh:
        s = json.load(fh)
    r["sgemm_1core_gflops"], r["sgemm_summed"] = s["step_gflops"], bool(s["step_summed"])
    g = r["gflop"]
    r["hs_gflops"], r["peer_gflops"] = g / r["hs_ms"] * 1e3, g / r["peer_ms"] * 1e3
    r["roofline_1core_ms"] = g / r["sgemm_1core_gflops"] * 1e3
    r["ideal_2core_ms"] = g / (a.threads * r["sgemm_1core_gflops"]) * 1e3
    r["peer_over_hs"] = r["peer_ms"] / r["hs_ms"]
    r["hs_over_ideal"] = r["hs_ms"] / r["ideal_2core_ms"]
    r["peer_over_ideal"] = r["peer_ms"] / r["ideal_2core_ms"]
    log("%s: headscope %.1f ms, peer %.1f ms (%.2fx), %.2f GFLOP, ideal %.1f ms" %
        (tag, r["hs_ms"], r["peer_ms"], r["peer_over_hs"], g, r["ideal_2core_ms"]))


def markdown(doc):
    L = ["Scaling: headscope vs the PyTorch peer (`torch_peer.py --impl %s`) at %d threads each, batch %d, "
         "vocabulary %d, random tokens (the same file for both), AdamW, %s; load average %s at the start, "
         "%s at the end." % (doc["peer"], doc["threads"], BATCH, VOCAB, doc["machine"], doc["loadavg_start"],
                             doc["loadavg_end"]),
         "", "Sizes: " + doc["design"], ""]
    caps = doc.get("steps_cap") or {}
    if caps.get("max_steps") or caps.get("large_steps"):
        L += ["Steps capped for a loaded machine: at most 1 warm-up + %s timed at every size%s." %
              (caps.get("max_steps") or "the usual", ", 1 + %d from 1 TFLOP a step" % caps["large_steps"]
               if caps.get("large_steps") else ""), ""]
    if doc.get("partial"):
        L += ["PARTIAL: the sizes measured so far.", ""]
    L += [
         "| d_model | heads x d_head | layers | context | why | GFLOP/step | steps | headscope ms | peer ms | "
         "peer / headscope | headscope GFLOP/s | peer GFLOP/s | sgemm 1-core GFLOP/s | 1-core roofline ms | "
         "%d-core ideal ms | headscope / ideal | peer / ideal | headscope RSS MB | peer RSS MB | "
         "headscope buffers MB |" % doc["threads"],
         "|" + "---:|" * 4 + "---|" + "---:|" * 15]
    for r in doc["rows"]:
        L.append("| %d | %d x %d | %d | %d | %s | %.2f | %d+%d | %.1f | %.1f | %.2fx | %.1f | %.1f | %.1f%s | %.1f | "
                 "%.1f | %.2fx | %.2fx | %.0f | %.0f | %.0f |" %
                 (r["d_model"], r["heads"], r["d_head"], r["layers"], r["ctx"], r["why"], r["gflop"], r["warmup"],
                  r["steps"], r["hs_ms"], r["peer_ms"], r["peer_over_hs"], r["hs_gflops"], r["peer_gflops"],
                  r["sgemm_1core_gflops"], "*" if r["sgemm_summed"] else "", r["roofline_1core_ms"],
                  r["ideal_2core_ms"], r["hs_over_ideal"], r["peer_over_ideal"], r["hs_rss_mb"], r["peer_rss_mb"],
                  r["hs_buffers_mb"]))
    L += ["", "steps: warm-up + timed; ms: median of the timed steps. *: sgemm rate from the per-product times "
          "summed (the step's products are too large to repeat back to back within the timer's budget). "
          "Ideal: FLOPs / (%d x the one-core sgemm rate at the step's shapes). RSS: peak, MB of 2^20 bytes "
          "(/usr/bin/time %%M). headscope buffers: what its step allocates (activations in hs_train's training "
          "layout, the backward's scratch and transposed weights, parameters with gradients, the second batch "
          "part's gradients and AdamW's moments; bench_train's JSON): the peak is these plus the process "
          "(libraries, OpenBLAS' buffers), less pages never touched (the transposed weights of products "
          "OpenBLAS runs as they lie)." % doc["threads"]]
    if doc.get("growth"):
        L += ["", "How cost grows (ms/step ratio over the axis's range, vs the FLOPs ratio): " + doc["growth"]]
    return "\n".join(L)


def growth(rows, quick):
    """Per axis, headscope's and the peer's ms/step at the axis's ends against the FLOPs ratio."""
    middle, axes = (QUICK_MIDDLE, QUICK_AXES) if quick else (MIDDLE, AXES)
    out = []
    for axis, values in axes.items():
        ends = []
        for v in (values[0], values[-1]):
            m = dict(middle, **{axis: v})
            ends += [r for r in rows if all(r[k] == m[k] for k in middle)]
        if len(ends) == 2:
            a, b = ends
            out.append("%s %s -> %s: FLOPs x%.1f, headscope x%.1f, peer x%.1f" %
                       (axis, values[0], values[-1], b["gflop"] / a["gflop"], b["hs_ms"] / a["hs_ms"],
                        b["peer_ms"] / a["peer_ms"]))
    return "; ".join(out) + "."


def write_doc(a, rows, load0, t0, partial=False):
    """Writes --out (every number) and --md (the table) for these rows; returns the document."""
    with open("/proc/loadavg") as fh:
        load1 = " ".join(fh.read().split()[:3])
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    doc = {"bench": "headscope bench/scale.py", "date": time.strftime("%Y-%m-%d %H:%M %Z"),
           "machine": "%s, %d CPUs" % (cpu, os.cpu_count()), "loadavg_start": load0, "loadavg_end": load1,
           "threads": a.threads, "peer": a.peer, "batch": BATCH, "vocab": VOCAB, "quick": a.quick,
           "steps_cap": {"max_steps": a.max_steps, "large_steps": a.large_steps}, "partial": partial,
           "design": ("a middle point (d_model %(d_model)d, %(layers)d layers, context %(ctx)d) with one axis varied "
                      "at a time around it (d_model, layers, context), plus the large corner; each axis's effect "
                      "alone and the largest size within ~10 minutes, where the full cross product would take "
                      "hours" % (QUICK_MIDDLE if a.quick else MIDDLE)),
           "rows": rows, "seconds": time.time() - t0}
    doc["growth"] = growth(rows, a.quick)
    for path in (a.out, a.md):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(a.out + ".tmp", "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    os.replace(a.out + ".tmp", a.out)
    with open(a.md, "w") as fh:
        fh.write(markdown(doc) + "\n")
    return doc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--peer", default="fast", choices=["fast", "tl"])
    ap.add_argument("--out", default=os.path.join(HERE, "results", "scale.json"))
    ap.add_argument("--md", default=os.path.join(HERE, "results", "scale.md"))
    ap.add_argument("--fig", default=os.path.join(HERE, "results", "scale_fig"))
    ap.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test, not a measurement")
    ap.add_argument("--max-steps", type=int, default=0,
                    help="at most 1 warm-up + N timed steps at every size (a loaded machine)")
    ap.add_argument("--largest-first", action="store_true",
                    help="measure the sizes from the most FLOPs down (the table keeps its order); with the "
                         "rows measured so far written after each size, a run cut short keeps the large ones")
    ap.add_argument("--max-gflop", type=float, default=0,
                    help="measure only the sizes up to this many GFLOP a step (the corner apart, on a machine "
                         "with too little memory free for it)")
    ap.add_argument("--large-steps", type=int, default=0,
                    help="at most 1 warm-up + N timed steps at sizes of 1 TFLOP a step and up (a loaded "
                         "machine, where one corner step takes minutes; peak RSS does not depend on it)")
    ap.add_argument("--work", help="scratch folder (default a new temporary one, removed at the end)")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    if os.path.abspath(a.fig + ".json") == os.path.abspath(a.out):
        sys.exit("bench/scale.py: --fig %s would write its numbers over --out %s" % (a.fig, a.out))
    for prog in ("bench_train", "bench_sgemm", "bench_plot"):
        if not os.access(os.path.join(a.build, prog), os.X_OK):
            sys.exit("bench/scale.py: %s/%s missing: build first (scripts/build.sh)" % (a.build, prog))
    tmp = None if a.work else tempfile.TemporaryDirectory(prefix="headscope-scale.")
    work = a.work or tmp.name
    os.makedirs(work, exist_ok=True)
    with open("/proc/loadavg") as fh:
        load0 = " ".join(fh.read().split()[:3])
    t0 = time.time()
    rows = sizes(a.quick)
    for r in rows:
        r["gflop"] = flops(r) * 1e-9
    if a.max_gflop:
        rows = [r for r in rows if r["gflop"] <= a.max_gflop]
    token_files = {}
    for T in sorted({r["ctx"] for r in rows}):
        path = os.path.join(work, "tokens_t%d.i32" % T)
        np.random.default_rng(0).integers(0, VOCAB, (4 * BATCH, T + 1), dtype=np.int32).astype("<i4").tofile(path)
        token_files[T] = path
    log("%d sizes, %d threads, peer --impl %s (work %s)" % (len(rows), a.threads, a.peer, work))
    order = sorted(rows, key=lambda r: -r["gflop"]) if a.largest_first else rows
    for i, r in enumerate(order):
        measure(r, a, work, token_files[r["ctx"]])
        if i + 1 < len(order):  # the rows so far, marked partial, in case the run is cut short
            write_doc(a, [x for x in rows if "hs_ms" in x], load0, t0, partial=True)
    doc = write_doc(a, rows, load0, t0)
    md = markdown(doc)
    # the figure: ms/step against FLOPs per step, log-log; sizes with equal FLOPs keep the first
    pts = sorted(rows, key=lambda r: r["gflop"])
    tsv = os.path.join(work, "scale.tsv")
    with open(tsv, "w") as fh:
        fh.write("FLOPs per step\theadscope\tPyTorch (--impl %s)\tideal, %d cores\n"
                 % (a.peer, a.threads))
        last = None
        for r in pts:
            if last is not None and r["gflop"] * 1e9 <= last * (1 + 1e-6):
                continue
            last = r["gflop"] * 1e9
            fh.write("%.6g\t%.6g\t%.6g\t%.6g\n" % (last, r["hs_ms"], r["peer_ms"], r["ideal_2core_ms"]))
    # markers only: the points are models of other shapes, not samples of one curve
    subprocess.run([os.path.join(a.build, "bench_plot"), tsv, a.fig, "--log-x", "--log-y", "--markers-only",
                    "--title", "training step time against FLOPs per step, one point a model size "
                    "(%d threads, batch %d)" % (a.threads, BATCH),
                    "--xlabel", "FLOPs per step", "--ylabel", "ms per step"], check=True, stdout=subprocess.DEVNULL)
    print(md)
    log("done in %.0f s: %s, %s, %s.png" % (time.time() - t0, a.out, a.md, a.fig))
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    main()
