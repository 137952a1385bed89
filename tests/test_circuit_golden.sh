#!/usr/bin/env bash
# tests/test_circuit_golden.sh -- circuit's report pinned byte for byte: on a
# committed small checkpoint (tests/checkpoint/circuit_tiny.safetensors: 2
# layers, d_model 32, d_mlp 64, 1500 steps, 100% held-out; made with
# `headscope train --d-model 32 --d-mlp 64 --steps 1500 --eval-every 0`),
# `circuit` writes exactly circuit_tiny.report.json (the "model" path aside)
# and prints exactly circuit_tiny.summary.txt (the folder aside), with 1 and
# with every CPU's worth of worker threads. --threads above the CPU count is
# refused naming the range; the thread count used is said on stderr. The
# patching table's '|' sits in one column for the head rows and the
# "L0 (all heads)" rows; --help names the routes the summary prints ("none"
# for an untrained model); weights and circuit give the same composition cell
# (one --comp-draws, one default). A change to the engine, the pool, the chunking or the
# report writers that moves one digit fails here.
# Run as: bash tests/test_circuit_golden.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_circuit_golden.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_circuit_golden.sh BUILD_DIR HEADSCOPE_BIN}
mkdir -p "${HS_TEST_TMP:-$BUILD_DIR/testtmp}"
TMP=$(mktemp -d "${HS_TEST_TMP:-$BUILD_DIR/testtmp}/circuit_golden.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
PY=/usr/bin/python3
# The pinned bytes are those of one kernel family for each product library
# (common/gemm.c): OpenBLAS's and libxsmm's kernels for different CPUs round
# differently (Prescott, Haswell and SkylakeX give other last digits), and
# headscope re-executes itself with the fastest OpenBLAS core the CPU has
# (hs_blas_core_advice); libxsmm picks its own. OpenBLAS's Prescott and
# libxsmm's sse3 run on every x86-64, so the golden holds on every machine;
# headscope keeps a user's OPENBLAS_CORETYPE.
export OPENBLAS_CORETYPE=Prescott LIBXSMM_TARGET=sse3
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
# one column for '|' in the patching table
awk '/^activation patching/{t=1; next} t && /\|/{print index($0, "|")} t && /^$/{exit}' "$TMP/c1.out" | sort -u >"$TMP/bars"
[ "$(wc -l <"$TMP/bars")" -eq 1 ] || fail "the patching table's rows are misaligned: '|' at columns $(tr '\n' ' ' <"$TMP/bars")"
grep -q 'L0 (all heads)' "$TMP/c1.out" || fail "no L0 (all heads) row"
# routes: the help names what the summary prints
run 0 help circuit --help
grep -q '"none" when step 2 does not' "$TMP/help.out" || fail "--help does not name route none"
grep -q '"other" when a decision head' "$TMP/help.out" || fail "--help does not say when the route is other"
run 0 u0 train --steps 1 --d-model 32 --d-mlp 64 --eval-every 0 --out "$TMP/u.safetensors"
# the threads line only when --threads was given (the default, all CPUs, is not news)
grep -q "threads:" "$TMP/u0.err" && fail "train says its threads without --threads: $(cat "$TMP/u0.err")"
run 0 u circuit --model "$TMP/u.safetensors"
grep -q "threads:" "$TMP/u.err" && fail "circuit says its threads without --threads: $(cat "$TMP/u.err")"
run 0 u1 circuit --model "$TMP/u.safetensors" --threads 1
grep -q "^headscope circuit: threads: 1 of $CPUS CPU" "$TMP/u1.err" || fail "circuit --threads 1 does not say its threads"
grep -q '^route: none' "$TMP/u.out" || fail "an untrained model: route is not none: $(grep '^route' "$TMP/u.out")"
# one composition default: weights' raw scores and baseline = circuit's
run 0 w weights --model "$M" --out "$TMP/w" --format json
"$PY" - "$TMP/w/composition_Q.json" "$TMP/c1/report.json" <<'PYEOF' || fail "weights and circuit disagree on a composition cell"
import json, sys
w = json.load(open(sys.argv[1]))
c = json.load(open(sys.argv[2]))["composition"]
assert w["n_draws"] == c["n_draws"] == 300, (w["n_draws"], c["n_draws"])
assert w["baseline"] == c["baseline"], (w["baseline"], c["baseline"])
H = 4
for p in c["pairs"]:
    s, r = p["sender"], p["receiver"]
    i = int(s[1]) * H + int(s[3]); j = int(r[1]) * H + int(r[3])
    assert w["scores"][i][j] == p["q"], (s, r, w["scores"][i][j], p["q"])
PYEOF
run 2 wd weights --model "$M" --draws 5
echo "ok"
