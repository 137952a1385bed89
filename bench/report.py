#!/usr/bin/python3
"""bench/report.py -- gather the pieces bench/run.sh left in its work folder
into one JSON file (every number) and print the markdown table.

usage: report.py --work DIR --out FILE.json [--seconds S]
Standard library only.
"""
import argparse
import glob
import json
import os
import platform
import re
import statistics
import subprocess
import time


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def load_json(path):
    text = read(path)
    return json.loads(text) if text else None


def times(path):
    """A /usr/bin/time -f '%e %M' file: one 'wall_s rss_kb' line per process."""
    rows = []
    for line in (read(path) or "").splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                rows.append((float(parts[0]), int(parts[1])))
            except ValueError:
                pass  # "Command exited with non-zero status" lines
    return rows


def lat(path):
    rows = times(path)
    if not rows:
        return None
    walls = [r[0] for r in rows]
    rss = [r[1] for r in rows]
    return {"runs": len(rows), "median_ms": 1e3 * statistics.median(walls), "min_ms": 1e3 * min(walls),
            "peak_rss_mb": statistics.median(rss) / 1024.0, "max_rss_mb": max(rss) / 1024.0,
            "wall_s": walls, "rss_kb": rss}


def train_log(path):
    text = read(path) or ""
    out = {"first_full_heldout_step": None, "heldout_accuracy": None}
    m = re.search(r"first 100% at step (\d+)", text)
    if m:
        out["first_full_heldout_step"] = int(m.group(1))
    m = re.search(r"held-out referent accuracy ([\d.]+)%", text)
    if m:
        out["heldout_accuracy"] = float(m.group(1)) / 100.0
    return out


def machine():
    cpu = None
    for line in (read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    blas = None
    for pkg in ("libopenblas0-pthread", "libopenblas0", "libopenblas-dev"):
        try:
            v = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True,
                               text=True).stdout.strip()
        except OSError:
            v = ""
        if v:
            blas = "%s %s" % (pkg, v)
            break
    try:
        commit = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse",
                                 "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = ""
    return {"cpu": cpu, "nproc": os.cpu_count(), "openblas": blas, "kernel": platform.release(),
            "date": time.strftime("%Y-%m-%d %H:%M %Z"), "commit": commit or None}


def ratio(a, b):
    return a / b if a and b else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=float)
    a = ap.parse_args()
    W = lambda name: os.path.join(a.work, name)

    cfg = load_json(W("config.json")) or {}
    T = cfg.get("threads")
    mach = machine()
    mach["loadavg_start"] = (read(W("loadavg_start")) or "").strip() or None
    mach["loadavg_end"] = (read(W("loadavg_end")) or "").strip() or None

    # ---- training ---------------------------------------------------------
    bt = load_json(W("bench_train.json")) or {}
    hs_tr = times(W("hs_train.time"))
    hs_log = train_log(W("hs_train.log"))
    peer = load_json(W("peer.json")) or {}
    peer_t = times(W("peer.time"))
    fast = load_json(W("peer_fast.json")) or {}
    fast_t = times(W("peer_fast.time"))
    hs = {
        "step_ms": bt.get("step_ms"), "step_min_ms": bt.get("step_min_ms"),
        "phases_ms": {k: bt.get(k + "_ms") for k in ("forward", "cross_entropy", "zero_grad",
                                                     "backward", "adamw")},
        "threads": bt.get("threads"), "blas_threads": bt.get("blas_threads"),
        "step_samples": bt.get("steps"), "step_warmup": bt.get("warmup"),
        "train_wall_s": hs_tr[-1][0] if hs_tr else None,
        "train_peak_rss_mb": hs_tr[-1][1] / 1024.0 if hs_tr else None,
        "first_full_heldout_step": hs_log["first_full_heldout_step"],
        "heldout_accuracy": hs_log["heldout_accuracy"],
    }
    def peer_side(js, tm, impl):
        return {
            "impl": impl, "torch": js.get("torch"), "threads": js.get("threads"),
            "step_ms": js.get("median_step_ms"),
            "train_wall_s": tm[-1][0] if tm else None,
            "train_loop_s": js.get("train_wall_s"),
            "train_peak_rss_mb": tm[-1][1] / 1024.0 if tm else None,
            "self_reported_rss_mb": js.get("peak_rss_mb"),
            "first_full_heldout_step": js.get("first_full_heldout_step"),
            "heldout_accuracy": js.get("heldout_accuracy"),
        }
    pt = peer_side(peer, peer_t, "tl")
    pf = peer_side(fast, fast_t, "fast")
    # every ratio against the faster peer (by median step)
    best = pf if pf["step_ms"] and (not pt["step_ms"] or pf["step_ms"] < pt["step_ms"]) else pt
    training = {
        "steps": cfg.get("steps"), "batch": peer.get("batch", 64), "eval_every": 100,
        "threads": T,
        "thread_policy": ("same thread count T on both sides: torch.set_num_threads(T), "
                          "OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=T; headscope runs T threads of "
                          "its own (hs_acts_set_threads: caller + helper) with OpenBLAS at 1 "
                          "thread per call (set by the library)"),
        "headscope": hs, "torch": pt, "torch_fast": pf, "faster_peer": best["impl"],
        "step_ratio_tl_peer_over_headscope": ratio(pt["step_ms"], hs["step_ms"]),
        "step_ratio_fast_peer_over_headscope": ratio(pf["step_ms"], hs["step_ms"]),
        "step_ratio_torch_over_headscope": ratio(best["step_ms"], hs["step_ms"]),
        "wall_ratio_torch_over_headscope": ratio(best["train_wall_s"], hs["train_wall_s"]),
        "rss_ratio_torch_over_headscope": ratio(best["train_peak_rss_mb"], hs["train_peak_rss_mb"]),
    }

    # ---- roofline ---------------------------------------------------------
    s1 = load_json(W("sgemm_1.json")) or {}
    sn = load_json(W("sgemm_n.json")) or {}
    gflop = bt.get("gflop_per_step")
    g1 = s1.get("step_gflops")
    gn = sn.get("step_gflops") if sn else None
    best = max(x for x in (g1, gn, 0.0) if x is not None) or None
    roof = {
        "gflop_per_step": gflop, "gemm_gflop": bt.get("gemm_gflop"), "attn_gflop": bt.get("attn_gflop"),
        "achieved_gflops": bt.get("achieved_gflops"),
        "sgemm_1thread_gflops": g1, "sgemm_threads": sn.get("threads") if sn else None,
        "sgemm_nthreads_gflops": gn,
        "roofline_1thread_ms": 1e3 * gflop / g1 if gflop and g1 else None,
        "roofline_best_measured_ms": 1e3 * gflop / best if gflop and best else None,
        "roofline_ideal_split_ms": (1e3 * gflop / (g1 * T)) if gflop and g1 and T else None,
        "sgemm_shapes_1thread": s1.get("shapes"), "sgemm_shapes_nthreads": sn.get("shapes") if sn else None,
    }
    st = hs["step_ms"]
    for k in ("1thread", "best_measured", "ideal_split"):
        r = roof["roofline_%s_ms" % k]
        roof["step_over_roofline_%s" % k] = st / r if st and r else None
    roof["achieved_over_sgemm_best"] = ratio(roof["achieved_gflops"], best)

    # ---- latency ----------------------------------------------------------
    viz = read(W("viz21.out")) or ""
    m = re.search(r"median of (\d+) runs: ([\d.]+) ms to PNG \(layout ([\d.]+) ms, rasterise ([\d.]+) ms\)", viz)
    m2 = re.search(r"(\d+) dpi: (\d+) x (\d+) px, (\d+) bytes", viz)
    ld = load_json(W("load.json")) or {}
    files = (read(W("inspect.files")) or "").strip()
    latency = {
        "inspect": dict(lat(W("inspect.time")) or {}, what="headscope inspect, 18-token chapter "
                        "sentence, every default figure (process: load + forward with cache + figures)",
                        files=int(files) if files.isdigit() else None),
        "circuit": dict(lat(W("circuit.time")) or {}, what="headscope circuit over the held-out "
                        "set, summary on stdout (process)"),
        "circuit_out": dict(lat(W("circuit_out.time")) or {}, what="headscope circuit --out DIR "
                            "(+ report.json and every figure)"),
        "patch_z": dict(lat(W("patch_z.time")) or {}, what="headscope patch --acts z over circuit's 192 "
                        "held-out pairs: every head at every position and at all positions (128 sweeps)"),
        "heads": dict(lat(W("heads.time")) or {}, what="headscope heads over the same 192 prompts "
                      "(previous-token, duplicate-token, induction, first-noun)"),
        "grid_png": {"what": "2x4 attention grid to PNG, in process (bench_viz: layout + rasterise "
                     "+ encode + write)",
                     "runs": int(m.group(1)) if m else None,
                     "median_ms": float(m.group(2)) if m else None,
                     "layout_ms": float(m.group(3)) if m else None,
                     "rasterise_ms": float(m.group(4)) if m else None,
                     "dpi": int(m2.group(1)) if m2 else None,
                     "px": [int(m2.group(2)), int(m2.group(3))] if m2 else None,
                     "png_bytes": int(m2.group(4)) if m2 else None,
                     "process": lat(W("viz.time")),
                     "process_what": "bench_viz 1: one grid + 6 encoder settings (RSS is the figure's)"},
        "load": {"what": "hs_checkpoint_load in process, file in page cache (bench_load); full = + "
                 "vocabulary and task (what every command pays first)",
                 "checkpoint_ms": ld.get("checkpoint_ms"), "full_ms": ld.get("full_ms"),
                 "runs": ld.get("runs"), "process": lat(W("load.time")),
                 "process_what": "bench_load FILE 1 (process start + 3 loads)"},
        "eval": dict(lat(W("eval.time")) or {}, what="headscope eval: load + held-out scoring (192 sentences)"),
        "attribution": load_json(W("eap_speed.json")),
        "torch_peer_rss_mb": pt["train_peak_rss_mb"],
        "headscope_train_rss_mb": hs["train_peak_rss_mb"],
    }

    # ---- sweep ------------------------------------------------------------
    sweep = None
    sw = load_json(W("sweep.json"))
    if sw:
        runs = {}
        for mode in ("seq", "par"):
            rs = []
            for tf in sorted(glob.glob(W("sweep/%s_*.time" % mode))):
                seed = int(re.search(r"_(\d+)\.time$", tf).group(1))
                t = times(tf)
                lg = train_log(tf[:-5] + ".log")
                rs.append({"seed": seed, "wall_s": t[-1][0] if t else None,
                           "peak_rss_mb": t[-1][1] / 1024.0 if t else None, **lg})
            runs[mode] = sorted(rs, key=lambda r: r["seed"])
        sweep = dict(sw, runs=runs, faster=("par" if sw["par_wall_s"] < sw["seq_wall_s"] else "seq"),
                     speedup=sw["seq_wall_s"] / sw["par_wall_s"] if sw["par_wall_s"] else None)

    # ---- scaling table (bench/scale.py's JSON, copied into the work folder) ----
    scale = load_json(W("scale.json"))

    doc = {"bench": "headscope bench/run.sh", "machine": mach, "config": cfg, "training": training,
           "roofline": roof, "latency": latency, "sweep": sweep, "scale": scale, "total_s": a.seconds}
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, a.out)
    print(markdown(doc))


def f(x, fmt="%.1f", none="-"):
    return none if x is None else fmt % x


def pct(x):
    return "-" if x is None else "%.1f%%" % (100 * x)


# A size of the scaling table counts as large from this many GFLOP a step
# (the d_model 512 rows: each sgemm well past OpenBLAS' packing overheads).
LARGE_GFLOP = 100.0


def targets(d):
    """Issue 15's targets as (what, value, format, met: True/False/None = not measured)."""
    tr, rf, lt, sc = d["training"], d["roofline"], d["latency"], d.get("scale")

    def cmp(v, ok):
        return None if v is None else ok(v)
    ideal = rf.get("step_over_roofline_ideal_split")
    speed = tr.get("step_ratio_torch_over_headscope")
    rss = tr["headscope"].get("train_peak_rss_mb")
    out = [("default step / two-core ideal <= 1.25", ideal, "%.2fx", cmp(ideal, lambda v: v <= 1.25)),
           ("faster PyTorch peer / default step >= 4", speed, "%.2fx", cmp(speed, lambda v: v >= 4.0)),
           ("peak RSS training the default model < 40 MB", rss, "%.1f", cmp(rss, lambda v: v < 40.0))]
    if sc and sc.get("rows"):
        worst = min(r["peer_over_hs"] for r in sc["rows"])
        out.append(("scaling: ahead of the peer at every size (least peer / headscope)", worst, "%.2fx", worst > 1.0))
        mem = max(r["hs_rss_mb"] / r["peer_rss_mb"] for r in sc["rows"])
        out.append(("scaling: peak RSS at or below the peer's at every size (largest headscope / peer, issue 30)",
                    mem, "%.2fx", mem <= 1.0))
        large = [r["hs_over_ideal"] for r in sc["rows"] if r["gflop"] >= LARGE_GFLOP]
        far = max(large) if large else None
        out.append(("scaling: within 1.3x of the two-core ideal from %.0f GFLOP/step (worst)" % LARGE_GFLOP, far,
                    "%.2fx", cmp(far, lambda v: v <= 1.3)))
    at = lt.get("attribution") or {}
    for key, name, lim in (("eap_ms", "EAP over the 192 held-out pairs, ms < 50", 50.0),
                           ("eap_ig_ms", "EAP-IG (5 steps) over them, ms < 200", 200.0)):
        v = (at.get("headscope") or {}).get(key)
        out.append((name, v, "%.1f", cmp(v, lambda x, lim=lim: x < lim)))
    for key, name, lim in (("inspect", "`inspect`, every default figure, ms < 50", 50.0),
                           ("circuit", "`circuit` over the held-out set, ms < 300", 300.0),
                           ("grid_png", "2x4 grid PNG at 300 dpi, ms < 30", 30.0)):
        v = (lt.get(key) or {}).get("median_ms")
        out.append((name, v, "%.1f", cmp(v, lambda x, lim=lim: x < lim)))
    return out


def markdown(d):
    m, tr, rf, lt, sw = d["machine"], d["training"], d["roofline"], d["latency"], d["sweep"]
    hs, pt, T = tr["headscope"], tr["torch"], tr["threads"]
    L = []
    core = (d.get("config") or {}).get("openblas_coretype") or "OpenBLAS's own choice"
    L.append("**Machine:** %s, %s CPUs, %s (kernels: %s, both sides), Linux %s; %s (commit %s; "
             "load average at start %s, at end %s)" % (m["cpu"], m["nproc"], m["openblas"], core,
                                                       m["kernel"], m["date"], m["commit"],
                                                       m["loadavg_start"], m["loadavg_end"]))
    try:
        busy = float((m["loadavg_start"] or "0").split()[0]) >= 0.5
    except ValueError:
        busy = False
    if busy:
        L.append("")
        L.append("**Warning:** the machine was not quiet when the bench started (1-minute load "
                 "average >= 0.5): every figure below is noisy, PyTorch's OpenMP threads most of all.")
    L.append("")
    L.append("Training, default model (2 blocks, d_model 64, batch %s x 18), %s steps, %s threads each "
             "(PyTorch %s: torch.set_num_threads(%s), OMP/OpenBLAS %s; headscope: %s threads, OpenBLAS 1 per call)"
             % (tr["batch"], tr["steps"], T, pt["torch"], T, T, hs["threads"]))
    L.append("")
    pf = tr.get("torch_fast") or {}
    L.append("| | headscope | PyTorch peer, TL layout (`--impl tl`) | PyTorch peer, own layout (`--impl fast`) "
             "| faster peer (%s) / headscope |" % tr.get("faster_peer", "tl"))
    L.append("|---|---:|---:|---:|---:|")
    L.append("| training step, median ms | %s | %s | %s | %s |" %
             (f(hs["step_ms"], "%.2f"), f(pt["step_ms"], "%.2f"), f(pf.get("step_ms"), "%.2f"),
              f(tr["step_ratio_torch_over_headscope"], "%.2fx")))
    L.append("| full training run, wall s (process) | %s | %s | %s | %s |" %
             (f(hs["train_wall_s"], "%.1f"), f(pt["train_wall_s"], "%.1f"), f(pf.get("train_wall_s"), "%.1f"),
              f(tr["wall_ratio_torch_over_headscope"], "%.2fx")))
    L.append("| first step with 100%% held-out (every 100) | %s | %s | %s | |" %
             (f(hs["first_full_heldout_step"], "%d", "never"), f(pt["first_full_heldout_step"], "%d", "never"),
              f(pf.get("first_full_heldout_step"), "%d", "never")))
    L.append("| held-out accuracy at the end | %s | %s | %s | |" % (pct(hs["heldout_accuracy"]), pct(pt["heldout_accuracy"]),
                                                                pct(pf.get("heldout_accuracy"))))
    L.append("| peak RSS while training, MB | %s | %s | %s | %s |" %
             (f(hs["train_peak_rss_mb"]), f(pt["train_peak_rss_mb"]), f(pf.get("train_peak_rss_mb")),
              f(tr["rss_ratio_torch_over_headscope"], "%.1fx")))
    L.append("")
    L.append("Roofline: a step is %s GFLOP (matmul %s, attention %s); headscope achieves %s GFLOP/s. "
             "The library's product (hs_sgemm: libxsmm's kernels where they win, OpenBLAS otherwise) at the "
             "step's shapes, back to back: %s GFLOP/s at 1 thread, %s with OpenBLAS at %s threads."
             % (f(rf["gflop_per_step"], "%.3f"), f(rf["gemm_gflop"], "%.3f"), f(rf["attn_gflop"], "%.3f"),
                f(rf["achieved_gflops"]), f(rf["sgemm_1thread_gflops"]), f(rf["sgemm_nthreads_gflops"]),
                f(rf["sgemm_threads"], "%d")))
    L.append("")
    L.append("| roofline (step FLOPs at that sgemm rate) | ms/step | headscope step / roofline |")
    L.append("|---|---:|---:|")
    L.append("| sgemm, 1 thread | %s | %s |" % (f(rf["roofline_1thread_ms"], "%.2f"), f(rf["step_over_roofline_1thread"], "%.2fx")))
    L.append("| best measured sgemm (1 or %s threads) | %s | %s |" %
             (f(rf["sgemm_threads"], "%d", "1"), f(rf["roofline_best_measured_ms"], "%.2f"), f(rf["step_over_roofline_best_measured"], "%.2fx")))
    L.append("| %s cores x the 1-thread rate (ideal split) | %s | %s |" %
             (T, f(rf["roofline_ideal_split_ms"], "%.2f"), f(rf["step_over_roofline_ideal_split"], "%.2fx")))
    L.append("")
    L.append("| latency (median of processes unless noted) | median ms | min ms | peak RSS MB |")
    L.append("|---|---:|---:|---:|")

    def row(name, r):
        if r and r.get("median_ms") is not None:
            L.append("| %s | %s | %s | %s |" % (name, f(r["median_ms"]), f(r.get("min_ms")), f(r.get("peak_rss_mb"))))
    row("`inspect`, 18-token sentence, every default figure (%s files)" % lt["inspect"].get("files"), lt["inspect"])
    row("`circuit`, whole held-out set (summary)", lt["circuit"])
    row("`circuit --out` (+ report.json, figures)", lt["circuit_out"])
    row("`patch --acts z`, 192 prompts, head x position", lt["patch_z"])
    at = lt.get("attribution")
    if at:
        for key, name in (("eap_ms", "EAP"), ("eap_ig_ms", "EAP-IG (%d steps)" % at["ig_steps"])):
            L.append("| %s, %d pairs, %d edges, in process (PyTorch peer: %s ms) | %s | | |" %
                     (name, at["prompts"], at["edges"], f(at["pytorch"][key]), f(at["headscope"][key])))
    row("`heads`, 192 prompts, 4 detectors", lt["heads"])
    g = lt["grid_png"]
    L.append("| 2x4 grid to PNG, %s dpi (in process, median of %s) | %s | | %s |" %
             (f(g["dpi"], "%d"), f(g["runs"], "%d"), f(g["median_ms"]), f((g["process"] or {}).get("peak_rss_mb"))))
    ld = lt["load"]
    L.append("| load checkpoint (in process: checkpoint / + vocab and task) | %s / %s | | %s |" %
             (f(ld["checkpoint_ms"], "%.2f"), f(ld["full_ms"], "%.2f"), f((ld["process"] or {}).get("peak_rss_mb"))))
    row("`eval` (load + held-out scoring)", lt["eval"])
    L.append("| PyTorch peer, whole training process | | | %s |" % f(lt["torch_peer_rss_mb"]))
    if sw:
        L.append("")
        seq_ok = sum(1 for r in sw["runs"]["seq"] if r["heldout_accuracy"] == 1.0)
        par_ok = sum(1 for r in sw["runs"]["par"] if r["heldout_accuracy"] == 1.0)
        n = len(sw["runs"]["seq"])
        mode = ("`--threads 1`" if sw["par_mode"] == "threads1" else
                "each pinned to one core with taskset")
        L.append("| %d-seed sweep, %s steps | wall s | seeds at 100%% held-out |" % (n, tr["steps"]))
        L.append("|---|---:|---:|")
        L.append("| one after another, %d threads each | %s | %d/%d |" % (sw["seq_threads"], f(sw["seq_wall_s"]), seq_ok, n))
        L.append("| %d at a time, 1 thread each (%s) | %s | %d/%d |" % (sw["par_jobs"], mode, f(sw["par_wall_s"]), par_ok, n))
        L.append("")
        L.append("Fastest sweep: %s (%.2fx)." % ("side by side" if sw["faster"] == "par" else "one after another",
                                                 max(sw["speedup"], 1 / sw["speedup"]) if sw["speedup"] else 0))
    sc = d.get("scale")
    if sc:
        L.append("")
        where = "the work folder's scale/" if sc.get("quick") else "bench/results/"
        L.append("Scaling table (bench/scale.py, %d threads, peer `--impl %s`%s; full table in "
                 "%sscale.md, figure scale_fig.png):" % (sc["threads"], sc["peer"], ", QUICK sizes" if sc.get("quick") else "", where))
        L.append("")
        L.append("| d_model | layers | context | GFLOP/step | headscope ms | peer ms | peer / headscope "
                 "| headscope / %d-core ideal | RSS MB headscope / peer |" % sc["threads"])
        L.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in sc["rows"]:
            L.append("| %d | %d | %d | %.2f | %.1f | %.1f | %.2fx | %.2fx | %.0f / %.0f |" %
                     (r["d_model"], r["layers"], r["ctx"], r["gflop"], r["hs_ms"], r["peer_ms"], r["peer_over_hs"],
                      r["hs_over_ideal"], r["hs_rss_mb"], r["peer_rss_mb"]))
    L.append("")
    L.append("| target (issue 15) | measured | |")
    L.append("|---|---:|---|")
    for name, value, fmt, ok in targets(d):
        L.append("| %s | %s | %s |" % (name, f(value, fmt), "-" if ok is None else "met" if ok else "not met"))
    if d.get("total_s"):
        L.append("")
        L.append("Whole bench: %.0f s." % d["total_s"])
    return "\n".join(L)


if __name__ == "__main__":
    main()
