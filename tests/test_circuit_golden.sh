#!/usr/bin/env bash
# tests/test_circuit_golden.sh -- circuit's report pinned byte for byte: on a
# committed small checkpoint (tests/checkpoint/circuit_tiny.safetensors: 2
# layers, d_model 32, d_mlp 64, 1500 steps, 100% held-out; made with
# `headscope train --d-model 32 --d-mlp 64 --steps 1500 --eval-every 0`),
# `circuit` writes exactly circuit_tiny.report.json (the "model" path aside)
# and prints exactly circuit_tiny.summary.txt (the folder aside), with 1 and
# with every CPU's worth of worker threads. --threads above the CPU count is
# refused naming the range; the thread count used is said on stderr. A change to the engine, the pool, the chunking or the
# report writers that moves one digit fails here.
# Run as: bash tests/test_circuit_golden.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_circuit_golden.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_circuit_golden.sh BUILD_DIR HEADSCOPE_BIN}
mkdir -p "${HS_TEST_TMP:-$BUILD_DIR/testtmp}"
TMP=$(mktemp -d "${HS_TEST_TMP:-$BUILD_DIR/testtmp}/circuit_golden.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
PY=/usr/bin/python3
# shellcheck source=tests/cli_lib.sh
source "$(dirname "$0")/cli_lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)

M="$TMP/m.safetensors"
cp "$HERE/checkpoint/circuit_tiny.safetensors" "$M"
CPUS=$(nproc)
for th in 1 "$CPUS"; do
    run 0 "c$th" circuit --model "$M" --out "$TMP/c$th" --format json --threads "$th"
    "$PY" - "$TMP/c$th/report.json" "$HERE/checkpoint/circuit_tiny.report.json" "$M" <<'PYEOF' ||
import sys
got = open(sys.argv[1], "rb").read()
want = open(sys.argv[2], "rb").read().replace(b'"MODEL"', ('"%s"' % sys.argv[3]).encode(), 1)
if got != want:
    g, w = got.decode().splitlines(), want.decode().splitlines()
    for i, (a, b) in enumerate(zip(g, w)):
        if a != b:
            sys.exit("report.json line %d: got %r, expected %r" % (i + 1, a, b))
    sys.exit("report.json: %d lines, expected %d" % (len(g), len(w)))
PYEOF
        fail "threads $th: report.json differs from tests/checkpoint/circuit_tiny.report.json"
    sed "s#$TMP/c$th#OUT#g" "$TMP/c$th.out" | sed 's/wrote [0-9]* files/wrote N files/' >"$TMP/s$th.txt"
    sed 's/wrote [0-9]* files/wrote N files/' "$HERE/checkpoint/circuit_tiny.summary.txt" >"$TMP/want.txt"
    diff "$TMP/s$th.txt" "$TMP/want.txt" >&2 ||
        fail "threads $th: the summary differs from tests/checkpoint/circuit_tiny.summary.txt"
done
grep -q "^headscope circuit: threads: $CPUS of $CPUS CPU" "$TMP/c$CPUS.err" || fail "circuit does not say its threads"
run 2 toomany circuit --model "$M" --threads $((CPUS + 1))
one_line toomany "--threads needs an integer in \[0, $CPUS\] (0 = all $CPUS CPUs of this machine), got '$((CPUS + 1))'"
run 2 toomany_train train --out "$TMP/t.safetensors" --threads $((CPUS + 1))
one_line toomany_train "--threads needs an integer in \[0, $CPUS\]"
echo "ok"
