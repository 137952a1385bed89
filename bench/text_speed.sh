#!/usr/bin/env bash
# bench/text_speed.sh -- the training step of a text model (issue 31: a ladder
# row's step ahead of PyTorch) beside the PyTorch peer (bench/torch_peer.py
# --task tokens --impl fast, nanoGPT's layout), at the chapter's ladder shape:
# the "+ LayerNorm" row (one block, d_model 128, 4 heads of 32, MLP 512,
# LayerNorm, learned positions, vocabulary 1,024, windows of 128, batch 64).
# Data: real text, the fortunes corpus through headscope's BPE at 1,024
# (`headscope bpe`, then `headscope tokenize --jsonl`), 4 batches of random
# windows (numpy seed 0) as int32 rows of 129 tokens, read by both sides
# (bench_train --tokens, torch_peer.py --task tokens): the same inputs,
# targets, AdamW (1e-3, clip 1.0) and constant lr. Median step time of the
# timed steps, both sides at --threads each (default 2), in one run.
#
#   bench/text_speed.sh [--threads N] [--steps N]     (BUILD=build by default)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
THREADS=2
STEPS=30
while [ $# -gt 0 ]; do
    case $1 in
    --threads) THREADS=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    *) echo "usage: bench/text_speed.sh [--threads N] [--steps N]" >&2; exit 2 ;;
    esac
done
mapfile -t FILES < <(find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.*' | sort)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir "$TMP/tok"
"$BUILD/headscope" bpe --corpus "${FILES[@]}" --vocab-size 1024 --out "$TMP/tok/tokenizer.json" >/dev/null
/usr/bin/python3 - "$TMP/corpus.jsonl" "${FILES[@]}" <<'PYEOF'
import json, sys
with open(sys.argv[1], "w") as f:
    for p in sys.argv[2:]:
        f.write(json.dumps(open(p, "rb").read().decode("utf-8")) + "\n")
PYEOF
"$BUILD/headscope" tokenize --model "$TMP/tok" --jsonl "$TMP/corpus.jsonl" >"$TMP/ids.jsonl"
/usr/bin/python3 - "$TMP/ids.jsonl" "$TMP/tokens.bin" <<'PYEOF'
import json, sys
import numpy as np
ids = np.concatenate([np.array(json.loads(l)["ids"], dtype=np.int32) for l in open(sys.argv[1])])
rng = np.random.default_rng(0)
starts = rng.integers(0, len(ids) - 129, size=4 * 64)
np.stack([ids[s:s + 129] for s in starts]).astype("<i4").tofile(sys.argv[2])
PYEOF
SHAPE=(--d-model 128 --layers 1 --heads 4 --d-head 32 --d-mlp 512)
"$BUILD/bench_train" --threads "$THREADS" --steps "$STEPS" --warmup 3 --no-roofline \
    --tokens "$TMP/tokens.bin" --json "$TMP/hs.json" "${SHAPE[@]}" --ctx 128 --vocab 1024 >/dev/null
OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS /usr/bin/python3 bench/torch_peer.py \
    --task tokens --impl fast --tokens "$TMP/tokens.bin" --n-ctx 128 --vocab-size 1024 --batch 64 \
    --threads "$THREADS" --steps "$STEPS" --warmup 3 --quiet "${SHAPE[@]}" >"$TMP/peer.json"
/usr/bin/python3 - "$TMP/hs.json" "$TMP/peer.json" "$THREADS" <<'PYEOF'
import json, sys
h = json.load(open(sys.argv[1]))
p = json.load(open(sys.argv[2]))
load = open("/proc/loadavg").read().split()[:3]
print("text model step (1 block, d 128, 4 x 32, MLP 512, LN, V 1024, T 128, B 64), %s threads: "
      "headscope %.1f ms, PyTorch %.1f ms (peer / headscope %.2f); %.2f GFLOP a step; load %s"
      % (sys.argv[3], h["step_ms"], p["median_step_ms"], p["median_step_ms"] / h["step_ms"],
         h["gflop_per_step"], " ".join(load)))
PYEOF
