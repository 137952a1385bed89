#!/usr/bin/env bash
# tests/test_ladder_cli.sh -- `headscope ladder` on a short run where the
# effects are large (four fortunes files, 0.6 MB, a BPE of 512,
# width 32, windows of 32, batch 32, 300 steps at lr 3e-3; ~15 s): the folder
# (ladder.json, the figure, each row's model, the BPE, listed in index.json;
# the figure's rows named whole, the unigram baseline a labelled line),
# the parameter counts' differences exactly what each row adds (nothing for
# replacing or adding; the position table; Q and K with their biases; nothing
# for four heads; the MLP; three LayerNorms), the three "replacing" rows'
# configs carrying attn_replace, and the chapter's findings that a short run
# shows: uniform averaging (replacing, or added) is worse than no context;
# adding beats replacing (the average, and one learned head); a learned head
# beats the uniform average; four heads beat one; the MLP helps. `eval --corpus` on a row's model
# gives the perplexity ladder.json records for it. A tiny ladder at --threads
# 1 and 2 (rows one at a time, or two at once) gives the same bytes.
# Without fortunes the test is skipped (exit 77; a failure with CI set).
# In a sanitizer build (cli_lib.sh's sanitized_build) the ladder trains 30
# steps instead of 300, and everything but the perplexities' order (the
# chapter's findings, which need the 300 steps: the plain build's check) is
# asserted as above.
# Run as: bash tests/test_ladder_cli.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_ladder_cli.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_ladder_cli.sh BUILD_DIR HEADSCOPE_BIN}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
mkdir -p "$BUILD_DIR/testtmp"
TMP=$(cd "$(mktemp -d "$BUILD_DIR/testtmp/ladder.XXXXXX")" && pwd)
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=tests/cli_lib.sh
source "$HERE/cli_lib.sh"

FT=/usr/share/games/fortunes
[ -f "$FT/cookie" ] || skip_test "no fortunes corpus in $FT (bash scripts/deps.sh installs it)"
CORPUS=("$FT/cookie" "$FT/computers" "$FT/definitions" "$FT/men-women")

run 2 noout ladder --corpus "${CORPUS[@]}"
one_line noout "--out DIR is required"
STEPS=300
sanitized_build && STEPS=30
run 0 ladder ladder --corpus "${CORPUS[@]}" --vocab-size 512 --steps "$STEPS" --d-model 32 --ctx 32 \
    --batch 32 --lr 3e-3 --out "$TMP/lad"
check_folder "$TMP/lad" ladder.json ladder_perplexity.png ladder_perplexity.svg \
    ladder_perplexity.json tokenizer.json row-0.safetensors row-8.safetensors
grep -q "^+ LayerNorm " "$TMP/ladder.out" || fail "ladder: no table: $(cat "$TMP/ladder.out")"
# the figure: every row name whole and the unigram baseline as a labelled
# dashed line at its value (the chapter compares every row with it)
"$PY" - "$TMP/lad" "$STEPS" <<'PYEOF' || fail "ladder figure"
import json, re, sys
d = sys.argv[1]
j, fig = json.load(open(d + "/ladder.json")), json.load(open(d + "/ladder_perplexity.json"))
svg = open(d + "/ladder_perplexity.svg", encoding="utf-8").read()
texts = re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S)
for r in j["rows"]:
    assert r["row"] in texts, (r["row"], texts)
u = j["settings"]["unigram_perplexity"]
assert abs(fig["unigram_perplexity"] - u) < 1e-9, (fig["unigram_perplexity"], u)
assert "unigram baseline %.1f" % u in texts, texts
assert re.search(r'<g id="reference">', svg), "no reference line group"
# the title says which run it shows: its steps, batch, width, context and
# corpus (each number kept with its noun by a no-break space)
run = "(%s\u00a0steps of batch\u00a032, d_model\u00a032, context\u00a032; corpus 4\u00a0files)" % sys.argv[2]
assert run in fig["title"], fig["title"]
assert run in " ".join(texts), texts
PYEOF
# the rows' note says where the shared BPE came from (it said "given" when none was)
grep -q "BPE of 512 tokens (trained on the corpus)" "$TMP/ladder.err" || fail "ladder: BPE note: $(cat "$TMP/ladder.err")"
"$PY" - "$TMP/lad/ladder.json" "$STEPS" <<'PYEOF' || fail "ladder.json"
import json, sys
j = json.load(open(sys.argv[1]))
rows = j["rows"]
assert [r["row"] for r in rows] == ["no context", "uniform causal average", "+ positions",
    "average added, not replacing", "one learned head replacing", "one head added", "four heads",
    "+ MLP", "+ LayerNorm"], [r["row"] for r in rows]
for i in range(9):
    assert rows[i]["config"].get("attn_replace", False) == (i in (1, 2, 4)), rows[i]["config"]
P = {i: rows[i]["params"] for i in range(9)}
ppl = {i: rows[i]["perplexity"] for i in P}
D, V = 32, 512
assert P[1] == P[0], P                 # the average over the prefix instead of one token
assert P[2] - P[1] == 32 * D, P        # learned positions, n_ctx 32 x D
assert P[3] == P[2], P                 # adding instead of replacing: no parameter
assert P[4] - P[2] == 2 * (D * D + D), P  # W_Q, W_K and their biases
assert P[5] == P[4], P
assert P[6] == P[5], P                 # four heads of d/4: the same parameters
assert P[7] - P[6] == 2 * D * 4 * D + 4 * D + D, P  # W_in, b_in, W_out, b_out
assert P[8] - P[7] == 3 * 2 * D, P     # ln1, ln2, ln_final
s = j["settings"]
assert s["steps"] == int(sys.argv[2]) and s["d_model"] == D and s["ctx"] == 32 and s["vocab"] == V, s
print("ladder: " + ", ".join("%s %.2f" % (rows[i]["row"], ppl[i]) for i in sorted(ppl)))
if sys.argv[2] != "300":
    sys.exit(0)  # a sanitizer build's short run: the order below is the plain build's check
assert ppl[1] > ppl[0], ("uniform averaging should be worse than no context", ppl)
assert ppl[3] > ppl[0], ("averaging (added) should be worse than no context", ppl)
assert ppl[3] < ppl[2], ("adding the average should beat replacing with it", ppl)
assert ppl[5] < ppl[4], ("adding the head should beat replacing with it", ppl)
assert ppl[4] < ppl[2], ("a learned head should beat the uniform average (replacing)", ppl)
assert ppl[5] < ppl[3], ("a learned head should beat the uniform average", ppl)
assert ppl[6] < ppl[5], ("four heads should beat one", ppl)
assert ppl[7] < ppl[6], ("the MLP should help", ppl)
assert all(ppl[i] < s["unigram_perplexity"] for i in (0, 3, 4, 5, 6, 7, 8)), (ppl, s)
PYEOF
run 0 eval eval --model "$TMP/lad/row-8.safetensors" --corpus "${CORPUS[@]}" --json
"$PY" -c '
import json, sys
e = json.load(open(sys.argv[1])); j = json.load(open(sys.argv[2]))
assert e["perplexity"] == j["rows"][8]["perplexity"], (e, j["rows"][8])
' "$TMP/eval.out" "$TMP/lad/ladder.json" || fail "eval on row 8 differs from ladder.json"
# rows train two at a time at --threads 2 (lanes, one thread each), one at a
# time at --threads 1: every row's model and ladder.json the same bytes
# (a row's values do not depend on what trains beside it); each row's notes
# and progress lines name it
for t in 1 2; do
    run 0 "tiny$t" ladder --corpus "$FT/men-women" --tokenizer "$TMP/lad/tokenizer.json" --steps 3 \
        --d-model 8 --ctx 8 --batch 4 --threads "$t" --out "$TMP/tiny$t"
done
for f in ladder.json row-0.safetensors row-3.safetensors row-5.safetensors row-6.safetensors \
    row-8.safetensors; do
    cmp "$TMP/tiny1/$f" "$TMP/tiny2/$f" >/dev/null || fail "ladder: $f differs between --threads 1 and 2"
done
grep "^row 7: model: 1 layer, d_model 8, 4 heads x 2, d_mlp 32" "$TMP/tiny2.err" >/dev/null ||
    fail "ladder: row 7's note does not name its row: $(cat "$TMP/tiny2.err")"
grep "^  row 4 step 3/3 loss " "$TMP/tiny2.err" >/dev/null ||
    fail "ladder: row 4's progress line does not name its row: $(cat "$TMP/tiny2.err")"
echo "PASS: test_ladder_cli"
