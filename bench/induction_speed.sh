#!/usr/bin/env bash
# bench/induction_speed.sh -- training speed on the induction task, headscope
# beside its PyTorch peer (bench/torch_peer.py --task induction: the same
# model, optimiser, schedule, task distribution and loss; its own batch
# stream). Both train the task's default 2-layer attention-only model with
# the same thread count; reported: wall and CPU seconds of the whole process,
# median ms per step (PyTorch: its own timer; headscope: steps/s of its
# log), held-out repeated-segment accuracy and the first step at >= 95%.
# Writes bench/results/induction_speed.json. Run it on a quiet machine.
#
#   bench/induction_speed.sh [--steps N] [--threads T] [--out DIR]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HS="${HEADSCOPE:-$ROOT/build/headscope}"
PY=/usr/bin/python3
STEPS=1000
THREADS=1
OUT="$ROOT/bench/results"
while [ $# -gt 0 ]; do
    case "$1" in
        --steps) STEPS="$2"; shift ;;
        --threads) THREADS="$2"; shift ;;
        --out) OUT="$2"; shift ;;
        -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "induction_speed.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
W=$(mktemp -d /tmp/induction_speed.XXXXXX)
trap 'rm -rf "$W"' EXIT
export OPENBLAS_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS
load0=$(cut -d' ' -f1-3 /proc/loadavg)
/usr/bin/time -f "%e %U %S %M" -o "$W/hs.time" "$HS" train --task induction --d-mlp 0 --steps "$STEPS" \
    --threads "$THREADS" --eval-every 100 --log-every 100 --out "$W/hs.safetensors" > "$W/hs.out" 2> "$W/hs.log"
/usr/bin/time -f "%e %U %S %M" -o "$W/pt.time" "$PY" "$ROOT/bench/torch_peer.py" --task induction --d-mlp 0 \
    --lr 3e-3 --steps "$STEPS" --threads "$THREADS" --eval-every 100 --warmup 10 --quiet > "$W/pt.json" 2> "$W/pt.log"
load1=$(cut -d' ' -f1-3 /proc/loadavg)
mkdir -p "$OUT"
"$PY" - "$W" "$OUT/induction_speed.json" "$STEPS" "$THREADS" "$load0" "$load1" <<'PYEOF'
import json, re, sys
w, out, steps, threads, l0, l1 = sys.argv[1:7]
def tm(p):
    e, u, s, m = open(p).read().split()[-4:]
    return {"wall_s": float(e), "cpu_s": float(u) + float(s), "peak_rss_mb": int(m) / 1024.0}
hs, pt = tm(w + "/hs.time"), tm(w + "/pt.time")
log = open(w + "/hs.log").read()
curve = [(int(a), float(b)) for a, b in re.findall(r"step (\d+)/\d+ .*?held-out acc +([0-9.]+)%", log)]
sps = [float(x) for x in re.findall(r"([0-9.]+) steps/s", log)]
hs.update({"heldout_accuracy": curve[-1][1] / 100 if curve else None,
           "first_step_95": next((s for s, a in curve if a >= 95.0), None),
           "ms_per_step_from_log": 1000.0 / sps[-1] if sps and sps[-1] > 0 else None})
p = json.load(open(w + "/pt.json"))
pt.update({"heldout_accuracy": p["heldout_accuracy"], "first_step_95": p["first_step_95"],
           "median_step_ms": p["median_step_ms"]})
res = {"steps": int(steps), "threads": int(threads), "load_average_start": l0, "load_average_end": l1,
       "headscope": hs, "torch_peer": pt, "torch": p["torch"],
       "cpu_ratio_torch_over_headscope": pt["cpu_s"] / hs["cpu_s"] if hs["cpu_s"] > 0 else None}
json.dump(res, open(out, "w"), indent=1)
print(json.dumps(res, indent=1))
PYEOF
