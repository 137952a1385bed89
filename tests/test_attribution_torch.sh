#!/usr/bin/env bash
# tests/test_attribution_torch.sh BUILD_DIR HEADSCOPE_BIN -- the gradients,
# AtP, EAP and EAP-IG against an independent float64 torch autograd
# computation, and `patch --method`:
#   - `patch --method exact` prints what `patch` prints; `--method atp` the
#     same tables and JSON arrays with AtP's values ("method": "atp");
#     `--method both` each act's exact and AtP cells and Pearson's r in
#     [-1, 1] (circuit_tiny over circuit's 192 held-out pairs);
#   - `test_attribution --dump` writes every gradient point, AtP cell, EAP
#     and EAP-IG edge score and node score of four random models and of
#     circuit_tiny, and a grouped-query Llama-shaped model's EAP, EAP-IG and
#     exact edge patching scores (run ungrouped, as MIB: per-query-head <k>
#     and <v> receivers); tests/py/attribution_ref.py rebuilds each model in torch
#     (float64) from its checkpoint, recomputes all of them with autograd and
#     checks them to 1e-5 (numpy.allclose, rtol 1e-5, atol 1e-5 of the
#     array's largest), and the CLI's `--method atp --json` the same way.
# Without /usr/bin/python3 and torch the torch part is skipped (exit 77,
# ctest's skip) unless CI is set, where it fails (cli_lib.sh's skip_test).
# In a sanitizer build (cli_lib.sh's sanitized_build) every headscope command
# and the dump run under ASan and UBSan, but the torch recomputation (Python
# alone, ~10 s) is the plain build's run of this test, on the same numbers.
set -euo pipefail
BUILD=${1:?build dir}
HS=${2:?headscope binary}
PY=/usr/bin/python3
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE"
TMP="$BUILD/testtmp/attr_torch.$$"
rm -rf "$TMP"
mkdir -p "$TMP"
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=tests/cli_lib.sh
. "$HERE/cli_lib.sh"
M=checkpoint/circuit_tiny.safetensors

run 0 ds train --steps 1 --eval-every 0 --dataset "$TMP/ds.txt" --out "$TMP/ds.safetensors"
"$PY" py/winograd_pairs.py "$TMP/ds.txt" "$TMP/pairs.jsonl"
run 0 plain patch --model "$M" --data "$TMP/pairs.jsonl" --acts resid_pre,z
run 0 exact patch --model "$M" --data "$TMP/pairs.jsonl" --acts resid_pre,z --method exact
cmp "$TMP/plain.out" "$TMP/exact.out" || fail "--method exact changed patch's output"
run 0 atp patch --model "$M" --data "$TMP/pairs.jsonl" --method atp --json
run 0 both patch --model "$M" --data "$TMP/pairs.jsonl" --method both --acts resid_post,z,pattern --json
run 0 both_text patch --model "$M" --data "$TMP/pairs.jsonl" --method both --acts z
grep -q "^z (blocks.l.attn.hook_z), AtP estimate, by head" "$TMP/both_text.out" || fail "no AtP table"
grep -q "^Pearson r, exact vs AtP: [+-]0\.[0-9]* over 8 cells; by position" "$TMP/both_text.out" || fail "no Pearson line"
run 2 badmethod patch --model "$M" --data "$TMP/pairs.jsonl" --method sideways
one_line badmethod "unknown --method 'sideways' (exact, atp, both)"
"$PY" - "$TMP/atp.out" "$TMP/both.out" <<'PYEOF' || fail "patch --method JSON"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert a["method"] == "atp" and "AtP" in a["metric"], a["metric"]
assert set(a["acts"]) == {"resid_pre", "attn_out", "mlp_out", "resid_post", "z", "q", "k", "v", "pattern"}
z = a["acts"]["z"]
for l in range(2):
    for h in range(4):  # a head's cell over every position is the sum of its positions' ([layer][pos][head])
        col = [row[h] for row in z["metric_by_position"][l]]
        s = sum(col)
        # JSON holds each number to float32's digits (hs_json_print): 16 roundings of 2^-24
        big = max(1.0, sum(abs(v) for v in col))
        assert abs(z["metric"][l][h] - s) <= 1e-6 * big, (l, h)
assert b["method"] == "both"
for name, x in b["acts"].items():
    assert -1.0 <= x["pearson"] <= 1.0, (name, x["pearson"])
    assert len(x["atp_metric"]) == len(x["metric"]), name
    if name != "resid_post":
        assert -1.0 <= x["pearson_by_position"] <= 1.0, name
        assert len(x["atp_metric_by_position"][1]) == 15 and len(x["atp_metric_by_position"][1][3]) == 4, name
# the exact cells of --method both are the exact sweep's
assert b["acts"]["z"]["metric"][1][3] != b["acts"]["z"]["atp_metric"][1][3]
PYEOF

if [ ! -x "$PY" ] || ! "$PY" -c 'import torch, numpy' 2>/dev/null; then skip_test "no $PY with torch and numpy"; fi
"$BUILD/test_attribution" --dump "$TMP" || fail "test_attribution --dump"
BUILD_DIR=$BUILD
if sanitized_build; then
    "$PY" -c 'import json, sys; json.load(open(sys.argv[1]))' "$TMP/attr_dump.json" || fail "the dump is not JSON"
    echo "sanitizer build: the dump ran; its torch comparison is the plain build's run"
    exit 0
fi
OMP_NUM_THREADS=1 "$PY" py/attribution_ref.py "$TMP/attr_dump.json" --cli-atp "$TMP/atp.out" "$TMP/pairs.jsonl" "$M"
