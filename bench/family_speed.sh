#!/usr/bin/env bash
# bench/family_speed.sh -- headscope's forward on a Pythia-160M-shaped
# (gpt_neox: 12 x 12 heads, d_model 768, rotary_pct 0.25, parallel attention
# and MLP, untied, vocabulary 50,304) and a SmolLM-135M-shaped (llama: 30
# layers, 9 query heads on 3 key/value heads, d_model 576, SwiGLU 1536, tied,
# vocabulary 49,152) random folder (tests/py/make_hf_family.py --bench) beside
# the plain-PyTorch peer bench/family_peer.py (each family's modeling file's
# semantics, float32, every intermediate kept, same thread count), in one run,
# at --ctx tokens (default 1024):
#   headscope  bench_gpt2: hs_run_with_cache with every hook point copied
#              (TransformerLens' run_with_cache), median of RUNS after one
#              untimed call; and the forward keeping the last position's
#              logits only;
#   peer       the cached forward, median of RUNS after one untimed run.
# Target (issue 33): headscope's cached forward ahead of PyTorch's on both.
#
#   bench/family_speed.sh [--dir DIR] [--threads T] [--runs R] [--ctx T]
#
# DIR holds pythia-160m-random/ and smollm-135m-random/ (written there when
# missing); without --dir a temporary directory (~1.2 GB, removed after).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BDIR="${BUILD:-$ROOT/build}"
HS="$BDIR/headscope"
PY=/usr/bin/python3
DIR=""
THREADS=2
RUNS=5
CTX=1024
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) DIR="$2"; shift ;;
        --threads) THREADS="$2"; shift ;;
        --runs) RUNS="$2"; shift ;;
        --ctx) CTX="$2"; shift ;;
        -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "family_speed.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
for b in headscope bench_gpt2; do
    [ -x "$BDIR/$b" ] || { echo "family_speed.sh: build $b into $BDIR" >&2; exit 1; }
done
W=$(mktemp -d /tmp/family_speed.XXXXXX)
trap 'rm -rf "$W"' EXIT
export OPENBLAS_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS
# both sides on the OpenBLAS kernels headscope picks for this CPU (as gpt2_speed.sh)
BLAS_CORE="$("$HS" --version | sed -n 's/.*OpenBLAS core \([A-Za-z0-9]*\)).*/\1/p')"
export OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-$BLAS_CORE}"
[ -n "$DIR" ] || DIR="$W"
if [ ! -f "$DIR/pythia-160m-random/model.safetensors" ] || [ ! -f "$DIR/smollm-135m-random/model.safetensors" ]; then
    "$PY" "$ROOT/tests/py/make_hf_family.py" "$DIR" --bench >/dev/null
fi
echo "# OpenBLAS kernels: ${OPENBLAS_CORETYPE:-as OpenBLAS chose} (both sides); $THREADS threads; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for m in pythia-160m-random smollm-135m-random; do
    "$BDIR/bench_gpt2" "$DIR/$m" --threads "$THREADS" --runs "$RUNS" --ctx "$CTX" --json "$W/$m.hs.json" >/dev/null
    "$PY" "$ROOT/bench/family_peer.py" "$DIR/$m" --threads "$THREADS" --runs "$RUNS" --ctx "$CTX" >"$W/$m.peer.json"
    "$PY" - "$m" "$W/$m.hs.json" "$W/$m.peer.json" <<'PYEOF'
import json, sys
m, h, p = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
print("%s at %d tokens: headscope cached forward %.1f ms (%d points, %.0f MB), last-position logits %.1f ms; "
      "PyTorch %s cached forward %.1f ms: headscope %.2fx faster (cached)" % (
          m, h["tokens"], h["forward_cache_ms"], h["cache_points"], h["cache_mb"], h["forward_last_ms"],
          p["torch"], p["forward_ctx_ms"], p["forward_ctx_ms"] / h["forward_cache_ms"]))
PYEOF
done
