#!/usr/bin/env bash
# tests/test_experiments_cli.sh -- `headscope heads`, `patch`, `lens`, `ablate`, `dla` as a
# user drives them, on the committed small checkpoint: --help; the bad-input
# table (unknown token, empty file, corrupted of another length, prompts of
# different lengths, answer not in the vocabulary, missing wrong) refused with
# exit 1, one line naming file:line; --out folders whose files all parse and
# are all listed; --json parsed; patch over circuit's 192 held-out pairs gives
# circuit's per-head patching numbers (hook_z at 14 exactly, at every
# position to float32 rounding); heads' previous-token scores sit in [0, 1] with one per head.
# Run as: bash tests/test_experiments_cli.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_experiments_cli.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_experiments_cli.sh BUILD_DIR HEADSCOPE_BIN}
mkdir -p "${HS_TEST_TMP:-$BUILD_DIR/testtmp}"
TMP=$(mktemp -d "${HS_TEST_TMP:-$BUILD_DIR/testtmp}/experiments_cli.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
PY=/usr/bin/python3
shopt -s nullglob
# shellcheck source=tests/cli_lib.sh
source "$(dirname "$0")/cli_lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)

M="$TMP/m.safetensors"
cp "$HERE/checkpoint/circuit_tiny.safetensors" "$M"
for cmd in heads patch lens ablate dla; do
    run 0 "help_$cmd" "$cmd" --help
    grep -q "^usage: headscope $cmd" "$TMP/help_$cmd.out" || fail "$cmd --help: no usage line"
done
# every command that takes --vocab / --process / --no-bos / --no-special (a checkpoint written
# elsewhere) says so in its --help
for cmd in $("$HS" --help | sed -n 's/^  \([a-z]*\) .*/\1/p'); do
    for flag in --vocab --process --no-bos --no-special; do
        sub=""
        [ "$cmd" = prompts ] && sub=ioi # (its one kind comes first)
        "$HS" "$cmd" $sub "$flag" /nonexistent/x.txt >/dev/null 2>"$TMP/takes.err" || true
        # (getopt_long takes an abbreviation: train's --vocab is its --vocab-size)
        grep -q -e "unknown or incomplete option '$flag'" -e "$flag-" "$TMP/takes.err" && continue
        "$HS" "$cmd" --help >"$TMP/takes.out"
        grep -q -- "^  $flag " "$TMP/takes.out" || fail "$cmd takes $flag but its --help does not say so"
    done
done

# the bad-input table: file contents, the message each must give
S1='the animal did not'
bad() { # NAME CONTENT MESSAGE
    printf '%b' "$2" >"$TMP/$1.jsonl"
    for cmd in heads patch lens ablate dla; do
        run 1 "$1_$cmd" "$cmd" --model "$M" --data "$TMP/$1.jsonl"
        one_line "$1_$cmd" "$3"
    done
}
bad empty '' "$TMP/empty.jsonl: empty prompt set"
bad unknown '{"prompt": "the zebra did not", "corrupted": "the cat did not", "answer": "animal", "wrong": "cat"}\n' \
    "unknown.jsonl:1: prompt: unknown word 'zebra' at position 1"
bad corrlen "{\"prompt\": \"$S1\", \"corrupted\": \"the cat did\", \"answer\": \"cross\", \"wrong\": \"not\"}\n" \
    "corrlen.jsonl:1: the corrupted prompt has 3 tokens but the prompt has 4"
bad lengths "{\"prompt\": \"$S1\", \"corrupted\": \"$S1\", \"answer\": \"cross\", \"wrong\": \"not\"}\n\n{\"prompt\": \"the cat\", \"corrupted\": \"the dog\", \"answer\": \"cross\", \"wrong\": \"not\"}\n" \
    "lengths.jsonl:3: the prompt has 2 tokens but line 1's has 4"
bad answer "{\"prompt\": \"$S1\", \"corrupted\": \"$S1\", \"answer\": \"zebra\", \"wrong\": \"not\"}\n" \
    "answer.jsonl:1: answer 'zebra' is not a token of the model's vocabulary"
# patch needs what heads does not
printf '{"prompt": "%s", "answer": "cross"}\n' "$S1" >"$TMP/nocorr.jsonl"
run 1 nocorr patch --model "$M" --data "$TMP/nocorr.jsonl"
one_line nocorr 'no "corrupted" prompts'
run 0 nocorr_heads heads --model "$M" --data "$TMP/nocorr.jsonl" --json
run 2 noacts patch --model "$M" --data "$TMP/nocorr.jsonl" --acts z,zz
one_line noacts "unknown activation 'zz'"
run 2 nodata patch --model "$M"
run 2 both heads --model "$M" --data "$TMP/nocorr.jsonl" --sentence "$S1"

# a set whose clean and corrupted LDs coincide (corrupted = clean): the normalised LD is
# undefined; said in one line (never +nan), "usable": false in the JSON, no figure drawn
# (with a note), raw LDs kept, exit 0 (README: "said so ("usable": false), not NaN")
printf '{"prompt": "%s", "corrupted": "%s", "answer": "cross", "wrong": "not"}\n' "$S1" "$S1" >"$TMP/same.jsonl"
run 0 same patch --model "$M" --data "$TMP/same.jsonl" --acts resid_pre,z
grep -qi nan "$TMP/same.out" && fail "patch on coinciding LDs prints NaN: $(cat "$TMP/same.out")"
[ "$(grep -c "not usable: clean and corrupted logit differences coincide" "$TMP/same.out")" -eq 1 ] ||
    fail "patch on coinciding LDs: no one-line 'not usable': $(cat "$TMP/same.out")"
run 0 same_json patch --model "$M" --data "$TMP/same.jsonl" --acts resid_pre,z --json
run 0 same_out patch --model "$M" --data "$TMP/same.jsonl" --acts resid_pre,z --out "$TMP/same_o" --dpi 72
grep -q "note: no patch figures: the normalised logit difference is not usable" "$TMP/same_out.err" ||
    fail "patch --out on coinciding LDs: no note: $(cat "$TMP/same_out.err")"
check_folder "$TMP/same_o" patch.json
[ -z "$(find "$TMP/same_o" -name 'patch_*')" ] || fail "patch: a figure of undefined numbers was drawn"
"$PY" - "$TMP/same_json.out" "$TMP/same_o/patch.json" <<'PYEOF' || fail "patch JSON on coinciding LDs"
import json, sys
for f in sys.argv[1:]:
    t = open(f).read()
    assert "NaN" not in t and "nan" not in t, f
    p = json.loads(t)
    assert p["usable"] is False and "coincide" in p["why_not_usable"], p.get("why_not_usable")
    assert p["ld_clean"] == p["ld_corrupted"], (p["ld_clean"], p["ld_corrupted"])
    z = p["acts"]["z"]
    assert all(v is None for r in z["metric"] for v in r), z["metric"]
    assert all(v == p["ld_corrupted"] for r in z["ld"] for v in r), z["ld"]
PYEOF

# circuit's pairs (split seed 0, as the checkpoint's task) -> patch == circuit
run 0 ds train --steps 1 --eval-every 0 --dataset "$TMP/ds.txt" --out "$TMP/ds.safetensors"
"$PY" "$HERE/py/winograd_pairs.py" "$TMP/ds.txt" "$TMP/pairs.jsonl"
run 0 pz patch --model "$M" --data "$TMP/pairs.jsonl" --acts z --json
run 0 cj circuit --model "$M" --json
"$PY" - "$TMP/pz.out" "$TMP/cj.out" <<'PYEOF' || fail "patch differs from circuit"
import json, sys
p = json.load(open(sys.argv[1]))
c = json.load(open(sys.argv[2]))
z = p["acts"]["z"]
assert p["prompts"] == 192 and p["tokens"] == 15, (p["prompts"], p["tokens"])
assert "[layer][position][head]" in p["acts"]["z"]["by"], p["acts"]["z"]["by"]
assert p["ld_clean"] == c["patching"]["ld_clean"]["both"], (p["ld_clean"], c["patching"]["ld_clean"])
for h in c["heads"]:
    l, k = h["layer"], h["head"]
    # TransformerLens' get_act_patch_*_by_pos order: [layer][position][head]
    a, b = z["metric_by_position"][l][14][k], h["patching"]["pos14"]["both"]
    assert a == b, (h["name"], a, b)
    # every position at once: float32 rounding apart (patch runs the positions
    # from the pairs' first difference on, hs_forward_suffix; circuit whole rows)
    a, b = z["metric"][l][k], h["patching"]["all_positions"]["both"]
    assert abs(a - b) <= 1e-6 * (1 + abs(b)), (h["name"], a, b)
PYEOF

# folders
run 0 po patch --model "$M" --data "$TMP/pairs.jsonl" --acts resid_pre,z --out "$TMP/po" --dpi 72
check_folder "$TMP/po" patch.json patch_resid_pre.png patch_z.svg patch_z_by_position.json
grep -q "wrote 11 files to $TMP/po" "$TMP/po.out" || fail "patch: summary does not count its files"
grep '<text' "$TMP/po/patch_z.svg" | has -e 'gap of only' -e 'is below corrupted' &&
    fail "patch_z.svg: a gap warning on a set whose gap is wide"
# answer and wrong swapped: the clean LD below the corrupted one; the figures
# say so under their title as the terminal's note does
head -4 "$TMP/pairs.jsonl" | "$PY" -c '
import json, sys
for l in sys.stdin:
    d = json.loads(l); d["answer"], d["wrong"] = d["wrong"], d["answer"]; print(json.dumps(d))' >"$TMP/swap.jsonl"
run 0 swap patch --model "$M" --data "$TMP/swap.jsonl" --acts resid_pre --out "$TMP/swap" --format svg
has "note: the clean LD ([-+][0-9.]*) is below the corrupted LD" "$TMP/swap.out" ||
    fail "swap: no gap note in the summary: $(cat "$TMP/swap.out")"
has '<text[^>]*>[^<]*clean LD −[0-9.]* is below corrupted' "$TMP/swap/patch_resid_pre.svg" ||
    fail "swap: patch_resid_pre.svg does not say the clean LD is below the corrupted one"
run 0 ho heads --model "$M" --data "$TMP/pairs.jsonl" --out "$TMP/ho" --dpi 72
check_folder "$TMP/ho" heads.json heads_previous-token.png heads_first-noun.json
"$PY" - "$TMP/ho/heads.json" <<'PYEOF' || fail "heads.json"
import json, sys
h = json.load(open(sys.argv[1]))
assert h["prompts"] == 192 and h["metric"] == "mul"
assert h["detectors"] == ["previous-token", "duplicate-token", "induction", "first-noun"], h["detectors"]
s = h["scores"]["previous-token"]
assert len(s) == h["config"]["n_layers"] and all(len(r) == h["config"]["n_heads"] for r in s)
assert all(0.0 <= v <= 1.0 for r in s for v in r)
PYEOF
run 0 lo lens --model "$M" --data "$TMP/pairs.jsonl" --out "$TMP/lo" --dpi 72
check_folder "$TMP/lo" lens.json lens_final.png
# lens_final over 192 prompts: one statement of what is drawn (the mean, the
# positions named by the first prompt's tokens); the y title longer than the
# 3 rows are tall lies level over the row labels, not rotated past them
has -F '<title>logit lens: probability of the model&apos;s final prediction, mean over the prompts</title>' "$TMP/lo/lens_final.svg" &&
    has '<text[^>]*>position (labelled with the first prompt&apos;s tokens)</text>' "$TMP/lo/lens_final.svg" ||
    fail "lens_final.svg: the title and x label do not say mean over the prompts / first prompt's tokens"
has '<text [^>]*x="[0-9]*" y="[0-9]*">residual stream</text>' "$TMP/lo/lens_final.svg" ||
    fail "lens_final.svg: the y title is not level: $(grep 'residual stream' "$TMP/lo/lens_final.svg")"
"$PY" - "$TMP/lo/lens.json" "$TMP/pz.out" <<'PYEOF' || fail "lens.json"
import json, sys
l = json.load(open(sys.argv[1]))
p = json.load(open(sys.argv[2]))
pts = l["points"]
assert [x["point"] for x in pts] == ["blocks.0.hook_resid_pre", "blocks.1.hook_resid_pre", "blocks.1.hook_resid_post"]
assert pts[-1]["accuracy"] == 1.0 and pts[-1]["logit_diff"] == p["ld_clean"], (pts[-1], p["ld_clean"])
PYEOF
run 0 ao ablate --model "$M" --data "$TMP/pairs.jsonl" --method zero --out "$TMP/ao" --dpi 72
check_folder "$TMP/ao" ablate.json ablate_change.png
"$PY" - "$TMP/ao/ablate.json" <<'PYEOF' || fail "ablate.json"
import json, sys
a = json.load(open(sys.argv[1]))
assert a["method"] == "zero" and a["prompts"] == 192 and a["accuracy_clean"] == 1.0
names = [c["component"] for c in a["components"]]
assert names[:6] == ["L0H0", "L0H1", "L0H2", "L0H3", "L0_attn_out", "L0_mlp_out"], names
for c in a["components"]:  # each JSON number is a float32's digits (hs_json_print): 2^-24 apiece
    big = abs(c["metric_change"]) + abs(c["metric"]) + abs(a["metric_clean"])
    assert abs(c["metric_change"] - (c["metric"] - a["metric_clean"])) <= 2.4e-7 * big, c
PYEOF
run 2 abm ablate --model "$M" --data "$TMP/pairs.jsonl" --method median
one_line abm "--method needs zero, mean or resample"
run 0 do dla --model "$M" --data "$TMP/pairs.jsonl" --out "$TMP/do" --dpi 72
check_folder "$TMP/do" dla.json dla_bars.png
"$PY" - "$TMP/do/dla.json" <<'PYEOF' || fail "dla.json"
import json, sys
d = json.load(open(sys.argv[1]))
s = sum(c["attribution"] for c in d["components"]) + d["constant"] + d["unembed_bias_term"]
assert abs(s - d["target"]) < 1e-4, (s, d["target"])
assert "frozen" in d["final_norm"]
assert "by_position" not in d["components"][0]
# the bar chart names components in inspect's style, the norm's bias term as ln_final_b
import os, re
COMPONENT = re.compile(r"^(embed|pos_embed|L\d+H\d+|L\d+_b_O|L\d+_mlp_out|ln_final_b|b_U)$")
assert all(COMPONENT.match(c["component"]) for c in d["components"]), d["components"]
bars = json.load(open(os.path.join(os.path.dirname(sys.argv[1]), "dla_bars.json")))
assert all(COMPONENT.match(x) for x in bars["labels"]), bars["labels"]
assert bars["labels"][-2:] == ["ln_final_b", "b_U"], bars["labels"]
PYEOF
run 0 dp dla --model "$M" --data "$TMP/pairs.jsonl" --by-position --out "$TMP/dp" --dpi 72
check_folder "$TMP/dp" dla.json dla_bars.png dla_by_position.png
"$PY" - "$TMP/dp/dla.json" <<'PYEOF' || fail "dla.json --by-position"
import json, sys
d = json.load(open(sys.argv[1]))
for c in d["components"]:
    assert len(c["by_position"]) == 15 and c["by_position"][14] == c["attribution"], c
assert any(abs(c["by_position"][3]) > 1e-3 for c in d["components"])
PYEOF
run 0 ls lens --model "$M" --sentence "the animal did not cross the street because it was too tired , so the"
echo "ok"
