#!/usr/bin/env bash
# tests/test_mib_interop.sh BUILD_DIR HEADSCOPE_BIN -- graph.json as MIB reads
# it: `discover --top N --select topn|signed --out` on circuit_tiny's held-out
# pairs (exact, EAP, EAP-IG), each graph.json read by EAP-IG's own
# Graph.from_json and selected by its apply_topn: MIB's default (signed
# scores) gives the circuit `--select signed` gave, MIB's --absolute the one
# `--select topn` gave (tests/py/mib_interop_check.py,
# with EAP-IG's graph.py vendored under tests/py/eapig, MIT). Needs
# /usr/bin/python3 with torch: without, exit 77 (skip), a failure when CI is
# set.
set -euo pipefail
HS=${2:?usage: test_mib_interop.sh BUILD_DIR HEADSCOPE_BIN}
PY=/usr/bin/python3
mkdir -p "${HS_TEST_TMP:-${1}/testtmp}"
TMP=$(mktemp -d "${HS_TEST_TMP:-${1}/testtmp}/mib.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
HERE=$(cd "$(dirname "$0")" && pwd)
case "$HS" in /*) ;; *) HS="$PWD/$HS" ;; esac
# shellcheck source=cli_lib.sh
. "$HERE/cli_lib.sh"
if [ ! -x "$PY" ] || ! "$PY" -c 'import torch' 2>/dev/null; then
    skip_test "no $PY with torch"
fi
M="$HERE/checkpoint/circuit_tiny.safetensors"
run 0 ds train --steps 1 --eval-every 0 --dataset "$TMP/ds.txt" --out "$TMP/ds.safetensors"
"$PY" "$HERE/py/winograd_pairs.py" "$TMP/ds.txt" "$TMP/pairs.jsonl"
args=()
for m in exact eap eap-ig; do
    for n in 11 22 55; do
        # headscope's default (the top N by |score|) is MIB's --absolute; --select signed is MIB's
        # default (signed scores): at 55, half the graph, and in EAP's top 11 some edges raise the metric,
        # where the two selections differ
        for sel in topn signed; do
            run 0 "d_${m}_${n}_$sel" discover --model "$M" --data "$TMP/pairs.jsonl" --method "$m" --top "$n" \
                --select "$sel" --out "$TMP/d_${m}_${n}_$sel" --format json
            args+=("$TMP/d_${m}_${n}_$sel/graph.json" "$n" "$([ "$sel" = signed ] && echo signed || echo absolute)")
        done
    done
done
"$PY" "$HERE/py/mib_interop_check.py" "${args[@]}" || fail "MIB's selection differs from headscope's"
# the scale: graph.json's score = float32(-(headscope's score) / 20), MIB's batch of 20 (192 prompts here)
run 0 j_exact discover --model "$M" --data "$TMP/pairs.jsonl" --method exact --top 22 --json
"$PY" - "$TMP/j_exact.out" "$TMP/d_exact_22_topn/graph.json" <<'PYEOF' || fail "graph.json's scale"
import json, struct, sys
r, g = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
f32 = lambda x: struct.unpack("f", struct.pack("f", x))[0]
for e in r["strongest_edges"]:
    # the report prints float32's digits: 1e-6 relative
    assert abs(g["edges"][e["edge"]]["score"] - f32(-e["score"] / 20)) <= 1e-6 * abs(e["score"] / 20), (e, g["edges"][e["edge"]])
    assert e["score"] < 0 and g["edges"][e["edge"]]["score"] > 0, e  # the top edges lower the metric
PYEOF
echo "mib interop: ok"
