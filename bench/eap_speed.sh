#!/usr/bin/env bash
# bench/eap_speed.sh -- edge attribution speed: headscope's EAP and EAP-IG
# (bench/bench_eap: hs_eap_scores in process, median of RUNS calls after one
# untimed call; wall and CPU time) beside the plain-PyTorch peer
# (bench/eap_peer.py: the same definitions, model, prompts, metric, steps and
# thread count; float32, the whole set as one batch), on the default model over circuit's 192 held-out
# crosser/crossed pairs (tests/py/winograd_pairs.py). The two alternate
# ROUNDS times and each side's best round median is kept (the machine is
# shared); the peer also checks its scores against headscope's (largest
# difference relative to the largest score). Issue 25's targets: EAP < 50 ms,
# EAP-IG (5 steps) < 200 ms. Writes bench/results/eap_speed.json (--out DIR)
# and prints a markdown table. Run it on a quiet machine.
#
#   bench/eap_speed.sh [--model FILE] [--threads T] [--runs R] [--rounds N] [--out DIR]
#
# Without --model it trains the default model (`headscope train`, 2000 steps).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BDIR="${BUILD:-$ROOT/build}"
HS="$BDIR/headscope"
PY=/usr/bin/python3
MODEL=""
THREADS=2
RUNS=11
ROUNDS=3
OUT="$ROOT/bench/results"
while [ $# -gt 0 ]; do
    case "$1" in
        --model) MODEL="$2"; shift ;;
        --threads) THREADS="$2"; shift ;;
        --runs) RUNS="$2"; shift ;;
        --rounds) ROUNDS="$2"; shift ;;
        --out) OUT="$2"; shift ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "eap_speed.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[ -x "$BDIR/bench_eap" ] && [ -x "$HS" ] || { echo "eap_speed.sh: build headscope and bench_eap into $BDIR" >&2; exit 1; }
W=$(mktemp -d /tmp/eap_speed.XXXXXX)
trap 'rm -rf "$W"' EXIT
export OPENBLAS_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS
# both on the OpenBLAS kernels headscope picks for this CPU (bench/run.sh)
BLAS_CORE="$("$HS" --version | sed -n 's/.*OpenBLAS core \([A-Za-z0-9]*\)).*/\1/p')"
export OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-$BLAS_CORE}"
if [ -z "$MODEL" ]; then
    MODEL="$W/default.safetensors"
    "$HS" train --out "$MODEL" --threads "$THREADS" --eval-every 0 > "$W/train.log" 2>&1
fi
"$HS" train --steps 0 --eval-every 0 --dataset "$W/dataset.txt" --out "$W/step0.safetensors" > /dev/null 2>&1
"$PY" "$ROOT/tests/py/winograd_pairs.py" "$W/dataset.txt" "$W/pairs.jsonl"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 0; r < ROUNDS; r++)); do
    "$BDIR/bench_eap" "$MODEL" "$W/pairs.jsonl" --threads "$THREADS" --runs "$RUNS" --json "$W/hs_$r.json" \
        --scores "$W/scores.json" > /dev/null
    "$PY" "$ROOT/bench/eap_peer.py" "$MODEL" "$W/pairs.jsonl" --threads "$THREADS" --runs "$RUNS" \
        --compare "$W/scores.json" > "$W/pt_$r.json"
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
mkdir -p "$OUT"
"$PY" - "$W" "$OUT/eap_speed.json" "$ROUNDS" "$load0" "$load1" <<'PYEOF'
import json, sys
w, out, rounds, load0, load1 = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
hs = [json.load(open("%s/hs_%d.json" % (w, r))) for r in range(rounds)]
pt = [json.load(open("%s/pt_%d.json" % (w, r))) for r in range(rounds)]
best = lambda rs, k: min(r[k] for r in rs)
res = {"what": "EAP and EAP-IG over circuit's held-out pairs of the default model: median ms of a call "
               "(best of the rounds), headscope (hs_eap_scores) and plain PyTorch (bench/eap_peer.py)",
       "prompts": hs[0]["prompts"], "tokens": hs[0]["tokens"], "edges": hs[0]["edges"],
       "threads": hs[0]["threads"], "ig_steps": hs[0]["ig_steps"], "metric": hs[0]["metric"],
       "runs": hs[0]["runs"], "rounds": rounds, "loadavg_start": load0, "loadavg_end": load1,
       "headscope": {"eap_ms": best(hs, "eap_ms"), "eap_ig_ms": best(hs, "eap_ig_ms"),
                     "eap_cpu_ms": best(hs, "eap_cpu_ms"), "eap_ig_cpu_ms": best(hs, "eap_ig_cpu_ms"),
                     "rounds": [{k: r[k] for k in ("eap_ms", "eap_ig_ms", "eap_min_ms", "eap_ig_min_ms", "eap_cpu_ms",
                                                   "eap_ig_cpu_ms")} for r in hs]},
       "pytorch": {"eap_ms": best(pt, "eap_ms"), "eap_ig_ms": best(pt, "eap_ig_ms"), "batch": pt[0]["batch"],
                   "torch": pt[0]["torch"],
                   "rounds": [{"eap_ms": r["eap_ms"], "eap_ig_ms": r["eap_ig_ms"]} for r in pt],
                   "max_rel_diff_from_headscope": {"eap": max(r["eap_max_rel_diff"] for r in pt),
                                                   "eap_ig": max(r["eap_ig_max_rel_diff"] for r in pt)}},
       "targets_ms": {"eap": 50, "eap_ig": 200}}
json.dump(res, open(out, "w"), indent=1)
h, p = res["headscope"], res["pytorch"]
print("| %d prompts x %d tokens, %d edges, %d threads | EAP ms | EAP-IG (%d steps) ms |" %
      (res["prompts"], res["tokens"], res["edges"], res["threads"], res["ig_steps"]))
print("|---|---|---|")
print("| headscope | %.1f | %.1f |" % (h["eap_ms"], h["eap_ig_ms"]))
print("| headscope, CPU ms a call (every thread) | %.1f | %.1f |" % (h["eap_cpu_ms"], h["eap_ig_cpu_ms"]))
print("| PyTorch %s (batch %d) | %.1f | %.1f |" % (p["torch"], p["batch"], p["eap_ms"], p["eap_ig_ms"]))
print("| target | < 50 | < 200 |")
print("scores: PyTorch vs headscope, largest difference / largest score: EAP %.1e, EAP-IG %.1e; load %s -> %s"
      % (p["max_rel_diff_from_headscope"]["eap"], p["max_rel_diff_from_headscope"]["eap_ig"], load0, load1))
PYEOF
