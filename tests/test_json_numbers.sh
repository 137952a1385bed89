#!/usr/bin/env bash
# tests/test_json_numbers.sh -- one float format in JSON too: every number
# that `eval --json`, `patch --json`, `lens --json`, `circuit --json` print
# and that circuit's report.json and a figure JSON hold, on the committed
# tiny checkpoint, is an integer or the shortest text of a float32
# (tests/py/json_numbers.py), never a double's 17 digits such as
# 0.10416666666666667 (issue 26; common's hs_json_print).
# Run as: bash tests/test_json_numbers.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_json_numbers.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_json_numbers.sh BUILD_DIR HEADSCOPE_BIN}
mkdir -p "${HS_TEST_TMP:-$BUILD_DIR/testtmp}"
TMP=$(mktemp -d "${HS_TEST_TMP:-$BUILD_DIR/testtmp}/json_numbers.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
PY=/usr/bin/python3
# shellcheck source=tests/cli_lib.sh
source "$(dirname "$0")/cli_lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)

M="$TMP/m.safetensors"
cp "$HERE/checkpoint/circuit_tiny.safetensors" "$M"
run 0 ds train --steps 1 --eval-every 0 --dataset "$TMP/ds.txt" --out "$TMP/ds.safetensors"
"$PY" "$HERE/py/winograd_pairs.py" "$TMP/ds.txt" "$TMP/all.jsonl"
head -n 8 "$TMP/all.jsonl" >"$TMP/pairs.jsonl"

run 0 eval eval --model "$M" --split train --json
run 0 patch patch --model "$M" --data "$TMP/pairs.jsonl" --json
run 0 lens lens --model "$M" --data "$TMP/pairs.jsonl" --json
run 0 circuit circuit --model "$M" --json
run 0 circuit_out circuit --model "$M" --out "$TMP/c" --format json
figs=$(find "$TMP/c" -name '*.json' ! -name report.json ! -name index.json | sort | head -n 3)
[ -n "$figs" ] || fail "circuit --format json wrote no figure JSON"
# shellcheck disable=SC2086
"$PY" "$HERE/py/json_numbers.py" "$TMP/eval.out" "$TMP/patch.out" "$TMP/lens.out" \
    "$TMP/circuit.out" "$TMP/c/report.json" $figs ||
    fail "a JSON number is neither an integer nor a float32's shortest text"
echo "ok: every JSON number is an integer or a float32's shortest text"
