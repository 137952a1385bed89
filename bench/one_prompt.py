#!/usr/bin/python3
"""bench/one_prompt.py -- what one prompt costs against 32 (issue 30: `lens`
and `patch` on 1 prompt at most 1/20 of their time on 32 prompts).

On a GPT-2-small-shaped Hugging Face folder (tests/py/make_hf_gpt2.py
--bench), `headscope prompts ioi --n N --seed 0 --template 0` writes the
sets of 1 and 32 prompts (the first prompt the same in both); then `lens` and
`patch --acts z --by head` run on each, whole processes (load, outputs and
exit included), alternating 1 and 32 prompts, RUNS times each (defaults 5
and 3). Each run's wall time (time.perf_counter around the process) and CPU
time (user + system of the child, resource.getrusage); medians, and their
ratios 1 : 32. Before the runs the model file is dropped from the page cache
(posix_fadvise DONTNEED) and read back, as a downloaded file is after a
reboot: its pages then come back in large folios, which map in fewer page
table entries (what the earlier measurements in the issue notes did by hand).
Writes bench/results/one_prompt.json (--out DIR) and prints a table.

    bench/one_prompt.py --dir GPT2_DIR [--threads T] [--runs R] [--runs32 R]
                        [--out DIR]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def reread(path):
    """Drops path's pages from the page cache and reads it back."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while os.read(fd, 1 << 24):
            pass
    finally:
        os.close(fd)


def timed(cmd):
    """Runs cmd (stdout and stderr discarded); returns (wall s, cpu s)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit("one_prompt.py: %s failed (%d): %s" % (" ".join(cmd), r.returncode, r.stderr.decode()[-400:]))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True, help="a GPT-2-small-shaped Hugging Face folder")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5, help="runs of each command on 1 prompt")
    ap.add_argument("--runs32", type=int, default=3, help="runs of each command on 32 prompts")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    a = ap.parse_args()
    hs = os.path.join(os.environ.get("BUILD", os.path.join(ROOT, "build")), "headscope")
    if not os.access(hs, os.X_OK):
        sys.exit("one_prompt.py: build headscope into %s" % os.path.dirname(hs))
    model = os.path.join(a.dir, "model.safetensors")
    if not os.path.isfile(model):
        sys.exit("one_prompt.py: %s has no model.safetensors" % a.dir)
    work = tempfile.mkdtemp(prefix="hs_one_prompt_")
    sets = {}
    for n in (1, 32):
        sets[n] = os.path.join(work, "ioi%d.jsonl" % n)
        subprocess.run([hs, "prompts", "ioi", "--model", a.dir, "--n", str(n), "--seed", "0",
                        "--template", "0", "--out", sets[n]], check=True, stdout=subprocess.DEVNULL)
    reread(model)
    cmds = {"lens": ["lens"], "patch": ["patch", "--acts", "z", "--by", "head"]}
    res = {}
    for name, args in cmds.items():
        runs = {1: [], 32: []}
        for i in range(max(a.runs, a.runs32)):
            for n in (1, 32):
                if len(runs[n]) >= (a.runs if n == 1 else a.runs32):
                    continue
                out = os.path.join(work, "%s_%d_%d" % (name, n, i))
                runs[n].append(timed([hs] + args + ["--model", a.dir, "--data", sets[n], "--out", out,
                                                    "--threads", str(a.threads)]))
        med = {n: (statistics.median(w for w, _ in runs[n]), statistics.median(c for _, c in runs[n]))
               for n in (1, 32)}
        res[name] = {"wall_s": {str(n): round(med[n][0], 4) for n in (1, 32)},
                     "cpu_s": {str(n): round(med[n][1], 4) for n in (1, 32)},
                     "runs": {str(n): [[round(w, 4), round(c, 4)] for w, c in runs[n]] for n in (1, 32)},
                     "ratio_wall": round(med[32][0] / med[1][0], 2),
                     "ratio_cpu": round(med[32][1] / med[1][1], 2)}
    doc = {"what": "headscope lens and patch --acts z --by head on 1 and on 32 IOI prompts (GPT-2 small "
                   "shape, random weights), whole processes; ratio = time on 32 / time on 1 (target >= 20)",
           "threads": a.threads, "model": a.dir, "results": res}
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "one_prompt.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("| command | 1 prompt wall / CPU (s) | 32 prompts wall / CPU (s) | 32 : 1 wall | 32 : 1 CPU |")
    print("|---|---|---|---|---|")
    for name, r in res.items():
        print("| %s | %.3f / %.3f | %.2f / %.2f | %.1f | %.1f |" % (
            name, r["wall_s"]["1"], r["cpu_s"]["1"], r["wall_s"]["32"], r["cpu_s"]["32"],
            r["ratio_wall"], r["ratio_cpu"]))
    subprocess.run(["rm", "-rf", work], check=False)


if __name__ == "__main__":
    main()
