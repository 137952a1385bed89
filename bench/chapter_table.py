#!/usr/bin/python3
"""bench/chapter_table.py -- aggregate the runs of scripts/chapter_table.sh.

Reads WORK/rows.txt and WORK/runs/{hs,torch}_{row}_{seed}.{heldout,train}.json
(`headscope eval --json` output), .time, .train.out / .peer.json, and writes
OUT/chapter_table.json and OUT/chapter_table.md; prints the markdown table.
Standard library only.
"""
import argparse
import glob
import json
import os
import platform
import re
import subprocess
import time

# the chapter's figures and the design doc's PyTorch reference (DESIGN.md, issue 3)
REF = {
    "uniform_no_norm": ("uniform causal average, no norm in front (1 block)", "27.9%",
                        "28.1% (26.6-31.2), wrong noun 40.8%, train 43.6%"),
    "uniform_ln": ("uniform average, LayerNorm in front (1 block)", "-", "83-89%"),
    "uniform_ln_gpt2": ("uniform average, LayerNorm in front, GPT-2 init, 3000 steps (1 block)", "-", "83-89%"),
    "uniform_no_pos": ("uniform average, no positions (1 block)", "-", "0% (wrong noun every time)"),
    "one_block": ("one block", "92.7%", "100% (3/3 seeds)"),
    "two_blocks": ("two blocks (default)", "100%", "100%"),
    "category_uniform": ("category variant, uniform (1 block)", "100%", "100%"),
    "category_one_block": ("category variant, one block", "91.7%", "100%"),
}
ORDER = list(REF)


def load(path):
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def stats(xs):
    if not xs:
        return None
    return {"mean": sum(xs) / len(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def pct(x):
    return "%.1f%%" % (100 * x)


def collect(work, kind, name):
    runs = []
    for ho_path in sorted(glob.glob(os.path.join(work, "runs", "%s_%s_*.heldout.json" % (kind, name)))):
        base = ho_path[:-len(".heldout.json")]
        seed = int(base.rsplit("_", 1)[1])
        ho, tr = load(ho_path), load(base + ".train.json")
        if ho is None or tr is None:
            continue
        r = {"seed": seed, "heldout_accuracy": ho["accuracy"], "heldout_other_noun_rate": ho["other_noun_rate"],
             "train_accuracy": tr["accuracy"], "train_other_noun_rate": tr["other_noun_rate"],
             "chapter_pair_held_out": ho.get("chapter_pair_held_out"),
             "heldout_by_adjective": {k: v["accuracy"] for k, v in ho.get("by_adjective", {}).items()},
             "heldout_other_by_adjective": {k: v["other_noun_rate"] for k, v in ho.get("by_adjective", {}).items()}}
        t = open(base + ".time").read().split() if os.path.exists(base + ".time") else None
        if t:
            r["train_wall_s"] = float(t[1]) - float(t[0])
        if kind == "hs":
            out = open(base + ".train.out").read() if os.path.exists(base + ".train.out") else ""
            m = re.search(r"first 100% at step (\d+)", out)
            r["first_full_heldout_step"] = int(m.group(1)) if m else None
        else:
            pj = load(base + ".peer.json") or {}
            r["first_full_heldout_step"] = pj.get("first_full_heldout_step")
            r["median_step_ms"] = pj.get("median_step_ms")
            # the peer scores itself too; it must agree with headscope eval on its checkpoint
            if pj and abs(pj.get("heldout_accuracy", -1) - ho["accuracy"]) > 1e-9:
                r["peer_self_score_mismatch"] = pj.get("heldout_accuracy")
        runs.append(r)
    if not runs:
        return None
    agg = {k: stats([r[k] for r in runs]) for k in
           ("heldout_accuracy", "heldout_other_noun_rate", "train_accuracy")}
    adjs = sorted({a for r in runs for a in r["heldout_by_adjective"]},
                  key=lambda a: list(runs[0]["heldout_by_adjective"]).index(a)
                  if a in runs[0]["heldout_by_adjective"] else 99)
    agg["heldout_by_adjective_mean"] = {
        a: sum(r["heldout_by_adjective"].get(a, 0) for r in runs) / len(runs) for a in adjs}
    agg["heldout_other_by_adjective_mean"] = {
        a: sum(r["heldout_other_by_adjective"].get(a, 0) for r in runs) / len(runs) for a in adjs}
    walls = [r["train_wall_s"] for r in runs if "train_wall_s" in r]
    agg["train_wall_s_mean"] = sum(walls) / len(walls) if walls else None
    agg["runs"] = runs
    return agg


def cell(a, with_other=True):
    if a is None:
        return "not run"
    h = a["heldout_accuracy"]
    s = "%s (%s-%s)" % (pct(h["mean"]), pct(h["min"])[:-1], pct(h["max"])[:-1])
    if with_other:
        s += ", wrong noun %s, train %s" % (pct(a["heldout_other_noun_rate"]["mean"]),
                                            pct(a["train_accuracy"]["mean"]))
    return s


def machine():
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = open("/proc/loadavg").read().split()[:3]
    except OSError:
        load = []
    return {"nproc": os.cpu_count(), "cpu": cpu, "kernel": platform.release(),
            "loadavg_at_end": load}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--work", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--seconds", type=float, default=None)
    p.add_argument("--jobs", default="?")
    p.add_argument("--split-seed", default="0")
    p.add_argument("--steps", default="default")
    p.add_argument("--headscope", default="headscope")
    a = p.parse_args()

    flags = {}
    for line in open(os.path.join(a.work, "rows.txt")):
        line = line.rstrip("\n")
        if line:
            name, f = line.split("|", 1)
            flags[name] = f.strip()
    rows = []
    for name in ORDER:
        if name not in flags:
            continue
        label, chapter, ref = REF[name]
        rows.append({"row": name, "label": label, "flags": flags[name], "chapter": chapter,
                     "pytorch_reference": ref,
                     "headscope": collect(a.work, "hs", name), "torch_peer": collect(a.work, "torch", name)})
    try:
        rev = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse", "--short",
                              "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        rev = "?"
    doc = {"generated": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "git": rev,
           "headscope_binary": a.headscope, "headscope_rev": os.environ.get("HEADSCOPE_REV") or rev,
           "machine": machine(),
           "script_seconds": a.seconds, "parallel_jobs": a.jobs, "split_seed": a.split_seed,
           "steps": a.steps, "scoring": "headscope eval --json, position 14, argmax over the whole vocabulary",
           "rows": rows}

    any_torch = any(r["torch_peer"] for r in rows)
    nh = max([len(r["headscope"]["runs"]) for r in rows if r["headscope"]] or [0])
    nt = max([len(r["torch_peer"]["runs"]) for r in rows if r["torch_peer"]] or [0])
    hdr = ("| row | `headscope train` flags | chapter | headscope, %d seeds: held-out mean (min-max), "
           "wrong noun, train |" % nh)
    sep = "|---|---|---|---|"
    if any_torch:
        hdr += " PyTorch peer here, %d seeds |" % nt
        sep += "---|"
    hdr += " PyTorch (design doc) |"
    sep += "---|"
    lines = [hdr, sep]
    for r in rows:
        f = "`%s`" % r["flags"] if r["flags"] else "(defaults)"
        line = "| %s | %s | %s | %s |" % (r["label"], f, r["chapter"], cell(r["headscope"]))
        if any_torch:
            line += " %s |" % cell(r["torch_peer"])
        line += " %s |" % r["pytorch_reference"]
        lines.append(line)
    m = doc["machine"]
    lines.append("")
    lines.append("Split seed %s, %s steps, seeds 0-%d (headscope) / 0-%d (peer); %s on %s cores (%s); "
                 "the whole script took %s with %s runs at a time."
                 % (a.split_seed, a.steps, nh - 1, nt - 1, "Linux " + m["kernel"], m["nproc"], m["cpu"],
                    "%.0f s" % a.seconds if a.seconds is not None else "?", a.jobs))
    md = "\n".join(lines) + "\n"

    # per-adjective breakdown (held-out accuracy, mean over seeds)
    adj_lines = []
    for r in rows:
        for kind in ("headscope", "torch_peer"):
            agg = r[kind]
            if not agg:
                continue
            by = agg["heldout_by_adjective_mean"]
            oth = agg["heldout_other_by_adjective_mean"]
            adj_lines.append("%-20s %-10s %s" % (r["row"], kind, "  ".join(
                "%s %s/%s" % (k, pct(v)[:-1], pct(oth[k])[:-1]) for k, v in by.items())))
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "chapter_table.json"), "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    with open(os.path.join(a.out, "chapter_table.md"), "w") as fh:
        fh.write(md)
    print(md)
    print("held-out accuracy / wrong-noun rate by adjective (mean over seeds, %):")
    print("\n".join(adj_lines))


if __name__ == "__main__":
    main()
