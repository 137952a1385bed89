#!/usr/bin/env bash
# tests/test_peer_equiv.sh BUILD_DIR HEADSCOPE_BIN -- bench/torch_peer.py's two
# PyTorch peers (--impl tl, TransformerLens layout; --impl fast, PyTorch's own
# layout with fused Q/K/V) give the same loss at every step of 50 (default
# shape) and 20 (a second shape) steps from the same init on the same batches,
# to 1e-4 relative (bench/peer_equiv.py; about 10 s at one thread, no
# downloads). Skipped (exit 77) without /usr/bin/python3 and torch, a
# failure then when CI is set.
set -euo pipefail
PY=/usr/bin/python3
# shellcheck source=tests/cli_lib.sh
. "$(dirname "$0")/cli_lib.sh"
if [ ! -x "$PY" ] || ! "$PY" -c 'import torch, numpy' 2>/dev/null; then skip_test "no $PY with torch and numpy"; fi
cd "$(dirname "$0")/.."
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$PY" bench/peer_equiv.py --threads 1
