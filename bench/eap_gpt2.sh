#!/usr/bin/env bash
# bench/eap_gpt2.sh -- EAP-IG at GPT-2 small's size (issue 25): headscope's
# hs_eap_scores (bench/bench_eap) beside the plain-PyTorch peer
# (bench/eap_peer.py) on one GPT-2-small-shaped model with random weights
# (tests/py/make_hf_gpt2.py --bench: 12 layers x 12 heads, d_model 768,
# vocabulary 50,257, 32,491 edges; both read its TransformerLens-format file,
# so both run the same weights and token ids), over 100 prompts of 15 random
# token ids (seed 0; the corrupted prompt replaces the first 5; answer and
# wrong random ids; read at the last position), logit-diff, the same threads.
# Each side: EAP and EAP-IG (--ig-steps, default 5), RUNS timed calls after
# WARMUP untimed ones (defaults 1 and 0: a call takes minutes), its peak RSS;
# the peer runs BATCH prompts a forward (default 25) and checks its scores
# against headscope's. Writes bench/results/eap_gpt2.json (--out DIR), prints
# a markdown table.
#
#   bench/eap_gpt2.sh [--dir DIR] [--threads T] [--runs R] [--warmup W] [--batch B]
#                     [--ig-steps M] [--out DIR]
#
# DIR holds (or gets) gpt2-small-random-tl.safetensors.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BDIR="${BUILD:-$ROOT/build}"
PY=/usr/bin/python3
DIR=""
THREADS=2
RUNS=1
WARMUP=0
BATCH=25
IG=5
OUT="$ROOT/bench/results"
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) DIR="$2"; shift ;;
        --threads) THREADS="$2"; shift ;;
        --runs) RUNS="$2"; shift ;;
        --warmup) WARMUP="$2"; shift ;;
        --batch) BATCH="$2"; shift ;;
        --ig-steps) IG="$2"; shift ;;
        --out) OUT="$2"; shift ;;
        -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "eap_gpt2.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[ -x "$BDIR/bench_eap" ] || { echo "eap_gpt2.sh: build bench_eap into $BDIR" >&2; exit 1; }
W=$(mktemp -d /tmp/eap_gpt2.XXXXXX)
trap 'rm -rf "$W"' EXIT
if [ -z "$DIR" ]; then
    DIR="$W"
    "$PY" "$ROOT/tests/py/make_hf_gpt2.py" "$DIR" --bench
fi
MODEL="$DIR/gpt2-small-random-tl.safetensors"
export OPENBLAS_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS
# both on the OpenBLAS kernels headscope picks for this CPU (bench/run.sh):
# bench_eap does not re-execute itself as headscope does
if [ -z "${OPENBLAS_CORETYPE:-}" ] && [ -x "$BDIR/headscope" ]; then
    BLAS_CORE="$("$BDIR/headscope" --version | sed -n 's/.*OpenBLAS core \([A-Za-z0-9]*\)).*/\1/p')"
    [ -z "$BLAS_CORE" ] || export OPENBLAS_CORETYPE="$BLAS_CORE"
fi
"$PY" - "$W/pairs.jsonl" <<'PYEOF'
import json, random, sys
r = random.Random(0)
ids = lambda v: " ".join("#%d" % x for x in v)  # noqa: E731
with open(sys.argv[1], "w") as f:
    for _ in range(100):
        clean = [r.randrange(50257) for _ in range(15)]
        corr = [r.randrange(50257) for _ in range(5)] + clean[5:]
        a, w = r.sample(range(50257), 2)
        f.write(json.dumps({"prompt": ids(clean), "corrupted": ids(corr), "answer": "#%d" % a, "wrong": "#%d" % w}) + "\n")
PYEOF
load0=$(cut -d' ' -f1-3 /proc/loadavg)
"$BDIR/bench_eap" "$MODEL" "$W/pairs.jsonl" --threads "$THREADS" --runs "$RUNS" --warmup "$WARMUP" \
    --ig-steps "$IG" --json "$W/hs.json" --scores "$W/scores.json" >&2
"$PY" "$ROOT/bench/eap_peer.py" "$MODEL" "$W/pairs.jsonl" --threads "$THREADS" --runs "$RUNS" --warmup "$WARMUP" \
    --ig-steps "$IG" --batch "$BATCH" --compare "$W/scores.json" > "$W/pt.json"
load1=$(cut -d' ' -f1-3 /proc/loadavg)
mkdir -p "$OUT"
"$PY" - "$W" "$OUT/eap_gpt2.json" "$load0" "$load1" <<'PYEOF'
import json, sys
w, out, load0, load1 = sys.argv[1:5]
hs, pt = json.load(open(w + "/hs.json")), json.load(open(w + "/pt.json"))
res = {"what": "EAP and EAP-IG on a GPT-2-small-shaped model (random weights) over 100 prompts of 15 random "
               "token ids: median ms of a call, peak RSS; headscope (hs_eap_scores) and plain PyTorch "
               "(bench/eap_peer.py)", "loadavg_start": load0, "loadavg_end": load1, "headscope": hs, "pytorch": pt}
json.dump(res, open(out, "w"), indent=1)
print("| GPT-2-small shape, %d prompts x %d tokens, %d edges, %d threads | EAP s | EAP-IG (%d steps) s | peak RSS MiB |"
      % (hs["prompts"], hs["tokens"], hs["edges"], hs["threads"], hs["ig_steps"]))
print("|---|---|---|---|")
print("| headscope (CPU s: %.0f / %.0f) | %.1f | %.1f | %.0f |" % (hs["eap_cpu_ms"] / 1e3, hs["eap_ig_cpu_ms"] / 1e3,
      hs["eap_ms"] / 1e3, hs["eap_ig_ms"] / 1e3, hs["peak_rss_mib"]))
print("| PyTorch %s (batch %d) | %.1f | %.1f | %.0f |" % (pt["torch"], pt["batch"], pt["eap_ms"] / 1e3,
      pt["eap_ig_ms"] / 1e3, pt["peak_rss_mib"]))
print("scores: PyTorch vs headscope, largest difference / largest score: EAP %.1e, EAP-IG %.1e; load %s -> %s"
      % (pt["eap_max_rel_diff"], pt["eap_ig_max_rel_diff"], load0, load1))
PYEOF
