#!/usr/bin/env bash
# tests/test_circuit_cli.sh -- `headscope circuit` driven as a user would:
#   train a small 2-layer model; circuit --out DIR exits 0, prints the summary
#   (invariant, steps, route); every file in index.json exists and parses (JSON:
#   python, PNG: pngcheck, SVG: xmllint) and every file in DIR is listed;
#   report.json's held-out accuracy equals `headscope eval --json`'s, its
#   verdicts follow from its numbers and thresholds, layers count from 0;
#   --json prints the same report; threshold flags reach the report; a 1-layer
#   model gets "step 2 not applicable: one layer" (exit 0); a uniform-attention
#   model gets Q/K composition n/a; errors: no --model (2), bad flag value (2),
#   --out a regular file (1, one line), missing file (1); --help (0).
# Run as: bash tests/test_circuit_cli.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_circuit_cli.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_circuit_cli.sh BUILD_DIR HEADSCOPE_BIN}
mkdir -p "${HS_TEST_TMP:-$BUILD_DIR/testtmp}"
TMP=$(mktemp -d "${HS_TEST_TMP:-$BUILD_DIR/testtmp}/circuit_cli.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
PY=/usr/bin/python3
shopt -s nullglob
# shellcheck source=tests/cli_lib.sh
source "$(dirname "$0")/cli_lib.sh"
# files every circuit report folder must list
CIRCUIT_FILES=(report.json attention_14.png attention_14.svg attention_14.json ablation.png
               patching.png patching.json)

M="$TMP/m.safetensors"
run 0 train train --out "$M" --steps 300 --d-model 32 --seed 1 --eval-every 0
run 0 help circuit --help
grep -q '^usage: headscope circuit' "$TMP/help.out" || fail "--help: no usage line"
grep -q 'decide-patch' "$TMP/help.out" || fail "--help does not document the thresholds"
# the route features under the names the summary prints; no file outside the repo
for f in chapter referent-fetch adjective-read other-noun-fetch suppression adjective-key; do
    grep -q -- "$f" "$TMP/help.out" || fail "--help does not name the route feature $f"
done
grep -q 'DESIGN.md' "$TMP/help.out" && fail "--help cites DESIGN.md, which is not in the repo"
grep -q 'composition_{Q,K,V}' "$TMP/help.out" || fail "--help: composition file names"

run 0 c circuit --model "$M" --out "$TMP/c" --dpi 72
check_folder "$TMP/c" "${CIRCUIT_FILES[@]}"
for s in "invariant:" "step 1 (candidate push, layer 0)" "step 2 (decision, layer >= 1)" "route: " "thresholds:"; do
    grep -qF "$s" "$TMP/c.out" || fail "summary lacks '$s'"
done
run 0 eval eval --model "$M" --json
# eval --json numbers in the one float format (the shortest text of a float32, DESIGN.md
# "Floats"), not 17-digit doubles: a one-step model's rates are not round (20 of 192, ...)
run 0 t1 train --out "$TMP/t1.safetensors" --steps 1 --eval-every 0
run 0 eval1 eval --model "$TMP/t1.safetensors" --json
"$PY" - "$TMP/eval1.out" <<'EOF1' || fail "eval --json numbers are not in the one float format: $(head -c 600 "$TMP/eval1.out")"
import json, re, struct, sys
text = open(sys.argv[1]).read()
nums = re.findall(r":\s*(-?[0-9][0-9.eE+-]*)", text)
def f32_shortest(x):
    f = struct.unpack("<f", struct.pack("<f", x))[0]
    for p in range(1, 10):
        t = "%.*g" % (p, f)
        if struct.unpack("<f", struct.pack("<f", float(t)))[0] == f:
            return t
rates = [t for t in nums if "." in t]
assert rates, nums
for t in nums:
    assert float(t) == float(f32_shortest(float(t))), (t, f32_shortest(float(t)))
e = json.loads(text)
assert abs(e["accuracy"] * e["n"] - round(e["accuracy"] * e["n"])) < 1e-3, e["accuracy"]
EOF1
"$PY" - "$TMP/c/report.json" "$TMP/eval.out" <<'EOF' || fail "report numbers"
import json, math, sys
r = json.load(open(sys.argv[1]))
e = json.load(open(sys.argv[2]))
assert abs(r["heldout"]["accuracy"]["all"] - e["accuracy"]) < 6e-8, (r["heldout"]["accuracy"], e["accuracy"])  # eval: float32
for role in ("crosser", "crossed"):
    assert abs(r["heldout"]["accuracy"][role] - e["by_role"][role]["accuracy"]) < 6e-8
assert r["chapter_pair_held_out"] == e["chapter_pair_held_out"]
assert r["config"]["n_layers"] == 2 and r["config"]["d_model"] == 32
th = r["thresholds"]
heads = r["heads"]
assert [h["name"] for h in heads] == ["L%dH%d" % (l, h) for l in range(2) for h in range(4)]
assert heads[0]["layer"] == 0 and heads[4]["layer"] == 1
acc = r["heldout"]["accuracy"]
pushers, decision = [], []
for h in heads:
    a, d = h["attention_at_14"]["all"], h["dla_at_14"]["all"]
    for g in ("crosser", "crossed"):
        s = sum(h["attention_at_14"][g].values())
        assert abs(s - 1) < 1e-4, (h["name"], g, s)
        assert len(h["mean_pattern_row_14"][g]) == 15
    if h["layer"] == 0 and ((a["x"] >= th["push_attn"] and d["x"] >= th["push_dla"]) or
                            (a["y"] >= th["push_attn"] and d["y"] >= th["push_dla"])):
        pushers.append(h["name"])
    drop = h["mean_ablation"]["drop"]
    usable = abs(r["patching"]["ld_clean"]["both"] - r["patching"]["ld_corr"]["both"]) >= th["min_ld_gap"]
    assert r["patching"]["usable"] == usable
    # the patching figure's JSON says so too when its numbers are not usable
    pj = json.load(open(sys.argv[1].replace("report.json", "patching.json")))
    assert pj.get("usable", True) == usable and (usable or pj["why_not_usable"].startswith("not usable"))
    if h["layer"] >= 1 and ((usable and abs(h["patching"]["pos14"]["both"]) >= th["decide_patch"]) or
                            max(drop["crosser"], drop["crossed"]) >= th["decide_drop"]):
        decision.append(h["name"])
v = r["verdict"]
assert v["step1"]["pushers"] == pushers, (v["step1"]["pushers"], pushers)
assert v["step2"]["decision_heads"] == decision, (v["step2"]["decision_heads"], decision)
assert v["step2"]["applicable"] is True and v["step2"]["holds"] == bool(decision)
if not pushers:
    assert v["step1"]["holds"] is False
else:
    dropped = acc["all"] - v["step1"]["accuracy_pushers_ablated"]["all"]
    assert v["step1"]["holds"] == (dropped >= th["step1_drop"])
assert r["invariant"]["applicable"] is True
assert r["invariant"]["max_dev_same_nouns"] < 1e-5 and r["invariant"]["max_dev_other_nouns"] < 1e-5
assert r["invariant"]["pairs_same_nouns"] == 672
assert len(r["path_patching"]["edges"]) == 4 * len(decision)
assert v["route"]["name"] != ""
EOF
# index.json records the route the report names
"$PY" -c "import json,sys; i=json.load(open('$TMP/c/index.json')); r=json.load(open('$TMP/c/report.json')); assert i['route']==r['verdict']['route']['name']" \
    || fail "index.json route"

# --json prints the report; thresholds reach it
run 0 j circuit --model "$M" --json --decide-patch 0.3 --push-attn 0.4 --step1-drop 10 --ablate-ref heldout
"$PY" - "$TMP/j.out" <<'EOF' || fail "--json report"
import json, sys
r = json.load(open(sys.argv[1]))
t = r["thresholds"]
assert t["decide_patch"] == 0.3 and t["push_attn"] == 0.4 and abs(t["step1_drop"] - 0.1) < 1e-12, t
assert t["ablate_ref"] == "heldout" and r["ablation_ref_sentences"] == 192
EOF
# --no-discovery: the same verdict and numbers, without the discovery section
run 0 jn circuit --model "$M" --json --decide-patch 0.3 --push-attn 0.4 --step1-drop 10 --ablate-ref heldout \
    --no-discovery
"$PY" - "$TMP/j.out" "$TMP/jn.out" <<'EOF' || fail "--no-discovery"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert "discovery" in a and "discovery" not in b, (list(a), list(b))
a.pop("discovery")
assert a == b, [k for k in a if a[k] != b.get(k)]
EOF

# one layer: a report, step 2 not applicable
M1="$TMP/m1.safetensors"
run 0 train1 train --out "$M1" --steps 30 --d-model 32 --layers 1 --eval-every 0
run 0 c1 circuit --model "$M1" --out "$TMP/c1" --dpi 72
grep -q "not applicable: one layer" "$TMP/c1.out" || fail "1 layer: no 'not applicable: one layer'"
check_folder "$TMP/c1" "${CIRCUIT_FILES[@]}"
"$PY" -c "import json; r=json.load(open('$TMP/c1/report.json')); v=r['verdict']; assert v['step2']['applicable'] is False and v['route']['name']=='one-layer' and r['invariant']['layer1_mean_dev'] is None" \
    || fail "1 layer report"
[ ! -e "$TMP/c1/composition_Q.png" ] || fail "1 layer: composition figure written"

# a reused --out folder: the 2-layer run's files (composition, path patching)
# go when a 1-layer run writes there; a file the user put there stays
cp -r "$TMP/c" "$TMP/cr"
echo keep >"$TMP/cr/notes.txt"
run 0 cr circuit --model "$M1" --out "$TMP/cr" --dpi 72 --format json
grep -q 'note: .*cr already holds 1 file headscope did not write; they are kept' "$TMP/cr.err" ||
    fail "reuse: no note about the user's file: $(cat "$TMP/cr.err")"
[ "$(cat "$TMP/cr/notes.txt")" = keep ] || fail "reuse: the user's file was changed"
rm "$TMP/cr/notes.txt"
check_folder "$TMP/cr" report.json
ls "$TMP/cr" | has -E '^composition_|\.(png|svg)$' && fail "reuse: stale files: $(ls "$TMP/cr")"

# uniform attention: no scores, no Q/K composition
MU="$TMP/mu.safetensors"
run 0 trainu train --out "$MU" --steps 30 --d-model 32 --attn uniform --eval-every 0
run 0 cu circuit --model "$MU" --out "$TMP/cu" --dpi 72
grep -q "not applicable: uniform attention" "$TMP/cu.out" || fail "uniform: invariant not n/a"
check_folder "$TMP/cu" "${CIRCUIT_FILES[@]}"
[ -e "$TMP/cu/composition_V.json" ] || fail "uniform: no V composition"
[ ! -e "$TMP/cu/composition_Q.json" ] || fail "uniform: Q composition written"
"$PY" -c "import json; r=json.load(open('$TMP/cu/report.json')); p=r['composition']['pairs'][0]; assert p['q'] is None and p['k'] is None and p['v'] is not None; assert r['invariant']['applicable'] is False" \
    || fail "uniform report"

# errors
run 2 nomodel circuit --out "$TMP/x"
one_line nomodel "model"
run 2 badflag circuit --model "$M" --push-attn 2
one_line badflag "push-attn"
run 2 badref circuit --model "$M" --ablate-ref test
one_line badref "ablate-ref"
touch "$TMP/afile"
run 1 outfile circuit --model "$M" --out "$TMP/afile"
one_line outfile "afile"
run 1 missing circuit --model "$TMP/nope.safetensors"
one_line missing "nope"
# an untrained model: patching cannot judge, and its figure and JSON say so
M0="$TMP/m0.safetensors"
run 0 train0 train --out "$M0" --steps 0 --d-model 32 --eval-every 0
run 0 c0 circuit --model "$M0" --out "$TMP/c0" --dpi 72 --format svg,json
"$PY" - "$TMP/c0" <<'EOF' || fail "untrained: usable"
import json, os, sys
d = sys.argv[1]
r = json.load(open(os.path.join(d, "report.json")))
p = json.load(open(os.path.join(d, "patching.json")))
assert r["patching"]["usable"] is False
assert p["usable"] is False and p["why_not_usable"].startswith("not usable"), p.get("usable")
assert "not usable: clean and corrupted" in open(os.path.join(d, "patching.svg")).read()
EOF
echo "circuit_cli: ok"
