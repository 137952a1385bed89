#!/usr/bin/env bash
# tests/test_block_torch.sh BUILD_DIR HEADSCOPE_BIN -- the block switches
# (gated_mlp, parallel_attn_mlp, norm_place post, attn_replace, act silu and
# a Llama-like block: RMSNorm, SiLU, gated, parallel, no biases) against an
# independent float64 reference: `test_block --dump DIR` writes one random
# model per switch with every forward point, the backward to the points and
# every parameter's gradient of the mean cross-entropy; tests/py/block_ref.py
# recomputes them in numpy (forward, to 1e-5) and torch autograd (gradients,
# parameters to 1e-4, points to 1e-5).
# Without /usr/bin/python3 and torch it is skipped (exit 77, ctest's skip)
# unless CI is set, where it fails (cli_lib.sh's skip_test).
set -euo pipefail
BUILD=${1:?build dir}
PY=/usr/bin/python3
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE"
TMP="$BUILD/testtmp/block_torch.$$"
rm -rf "$TMP"
mkdir -p "$TMP"
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=tests/cli_lib.sh
. "$HERE/cli_lib.sh"
if [ ! -x "$PY" ] || ! "$PY" -c 'import torch, numpy' 2>/dev/null; then skip_test "no $PY with torch and numpy"; fi
"$BUILD/test_block" --dump "$TMP" || fail "test_block --dump failed"
"$PY" py/block_ref.py "$TMP" || fail "the block switches differ from the float64 reference"
echo "ok"
