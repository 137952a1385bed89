#!/usr/bin/env bash
# tests/test_foreign_model.sh -- the README's "Bring your own model" example,
# end to end: tests/py/foreign_model.py (numpy only, independent of
# headscope) writes a checkpoint with TransformerLens tensor names and a
# `config` only (attn_scale 6, not sqrt(d_head) = 4; TL's attention buffers
# included), a vocabulary file in an order of its own and held-out pairs of
# its own, and computes with its own forward what headscope must find. Then:
#   weights  runs without any vocabulary (tokens labelled by id) and says so;
#   inspect  --vocab: the top-5 predictions and probabilities equal numpy's;
#   eval     --vocab --heldout-pairs: n, accuracy and other-noun rate equal
#            numpy's (the hand-built model copies the first noun: 50% / 50%);
#            --split-seed works too, with a note that the split is headscope's;
#   circuit  --vocab --heldout-pairs: finds the hand-built copying head L0H0;
#   heads    --vocab: L0H0 has the highest first-noun score;
#   errors   no --vocab (inspect/eval), no split (eval/circuit), both split
#            flags, a vocabulary with an empty line or the wrong size, an
#            unknown noun in the pairs file, an attn.mask that is not causal:
#            one line each, naming the problem.
# Run as: bash tests/test_foreign_model.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail
BUILD_DIR=${1:?usage: test_foreign_model.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_foreign_model.sh BUILD_DIR HEADSCOPE_BIN}
PY=/usr/bin/python3
mkdir -p "$BUILD_DIR/testtmp"
TMP=$(mktemp -d "$BUILD_DIR/testtmp/foreign.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=tests/cli_lib.sh
source "$(dirname "$0")/cli_lib.sh"

F="$TMP/foreign"
"$PY" "$(dirname "$0")/py/foreign_model.py" "$F"
M="$F/model.safetensors"
SENT="the animal did not cross the street because it was too tired , so the"

run 0 weights weights --model "$M" --out "$TMP/w"
grep -q "has no vocabulary; tokens are labelled by id" "$TMP/weights.err" || fail "weights: no id note"
check_folder "$TMP/w"

run 0 inspect inspect --model "$M" --vocab "$F/vocab.txt" --sentence "$SENT" --out "$TMP/i"
"$PY" - "$TMP/i/predictions.json" "$F/expected.json" <<'PYEOF' || fail "inspect predictions differ from numpy's"
import json, sys
got = json.load(open(sys.argv[1]))["predictions"]
want = json.load(open(sys.argv[2]))["top"]
assert [p["token"] for p in got[:5]] == [w for w, _ in want], (got, want)
for p, (_, q) in zip(got, want):
    assert abs(p["prob"] - q) < 2e-6, (p, q)
PYEOF

run 0 eval eval --model "$M" --vocab "$F/vocab.txt" --heldout-pairs "$F/heldout_pairs.txt" --json
"$PY" - "$TMP/eval.out" "$F/expected.json" <<'PYEOF' || fail "eval differs from numpy's"
import json, sys
got, want = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert got["n"] == want["n"] == 192, got
assert got["accuracy"] == want["accuracy"] == 0.5, (got, want)
assert got["other_noun_rate"] == want["other_noun_rate"] == 0.5, (got, want)
PYEOF
run 0 eval_seed eval --model "$M" --vocab "$F/vocab.txt" --split-seed 3 --json
grep -q '"n":[[:space:]]*192' "$TMP/eval_seed.out" || fail "eval --split-seed: not 192 sentences"
# a split derived from a seed is headscope's, not the model's: said every time, naming its pairs
grep -q "eval: note: the held-out split is headscope's own for --split-seed 3 (24 pairs: (.*), not read from the checkpoint" \
    "$TMP/eval_seed.err" || fail "eval --split-seed: no note naming headscope's split: $(cat "$TMP/eval_seed.err")"
run 0 circuit_seed circuit --model "$M" --vocab "$F/vocab.txt" --split-seed 0 --format json --out "$TMP/cs"
grep -q "circuit: note: the held-out split is headscope's own for --split-seed 0" "$TMP/circuit_seed.err" ||
    fail "circuit --split-seed: no note naming headscope's split"

run 0 circuit circuit --model "$M" --vocab "$F/vocab.txt" --heldout-pairs "$F/heldout_pairs.txt" \
    --out "$TMP/c" --format json
"$PY" - "$TMP/c/report.json" <<'PYEOF' || fail "circuit did not find the hand-built head"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["split_seed"] is None and r["split"].startswith("held-out pairs given"), r["split"]
v = r["verdict"]["step1"]
assert v["holds"] and v["pushers"] == ["L0H0"], v
PYEOF

run 0 heads heads --model "$M" --vocab "$F/vocab.txt" --json \
    --sentence "the animal did not cross the street because it was too tired , so the animal waited ."
"$PY" - "$TMP/heads.out" <<'PYEOF' || fail "heads: L0H0 is not the first-noun head"
import json, sys
s = json.load(open(sys.argv[1]))["scores"]["first-noun"]
best = max((v, l, h) for l, row in enumerate(s) for h, v in enumerate(row))
assert best[1:] == (0, 0), best
PYEOF

# errors: one line each (besides the note on TL's buffers), naming what to do
err_line() {
    grep -v ': note: skipped' "$TMP/$1.err" >"$TMP/$1.err1" || true
    local n
    n=$(wc -l <"$TMP/$1.err1")
    [ "$n" -eq 1 ] || fail "$1: $n error lines, expected 1: $(cat "$TMP/$1.err")"
    grep -q -- "$2" "$TMP/$1.err1" || fail "$1: '$(cat "$TMP/$1.err1")' does not match '$2'"
}
run 1 no_vocab inspect --model "$M" --sentence "$SENT" --out "$TMP/x"
err_line no_vocab "has no vocab metadata.*--vocab FILE"
run 1 no_split eval --model "$M" --vocab "$F/vocab.txt"
err_line no_split "has no task metadata.*--split-seed S or --heldout-pairs FILE"
run 1 no_split_c circuit --model "$M" --vocab "$F/vocab.txt"
err_line no_split_c "has no task metadata"
run 2 both_split eval --model "$M" --vocab "$F/vocab.txt" --split-seed 1 --heldout-pairs "$F/heldout_pairs.txt"
err_line both_split "not both"
run 2 bad_seed eval --model "$M" --vocab "$F/vocab.txt" --split-seed -1
printf 'the\n\nanimal\n' >"$TMP/gap.txt"
run 1 vocab_gap inspect --model "$M" --vocab "$TMP/gap.txt" --sentence "$SENT" --out "$TMP/x"
err_line vocab_gap "gap.txt:2: empty line"
head -n 35 "$F/vocab.txt" >"$TMP/short.txt"
run 1 vocab_short inspect --model "$M" --vocab "$TMP/short.txt" --sentence "$SENT" --out "$TMP/x"
err_line vocab_short "has 35 words but d_vocab is 36"
"$PY" -c "import json,sys; print(json.dumps(open(sys.argv[1]).read().split()))" "$F/vocab.txt" >"$TMP/vocab.json"
run 0 vocab_json eval --model "$M" --vocab "$TMP/vocab.json" --heldout-pairs "$F/heldout_pairs.txt" --json
cmp -s <(grep -v '"model"' "$TMP/eval.out") <(grep -v '"model"' "$TMP/vocab_json.out") || fail "JSON vocabulary gives another eval"
printf 'animal street\nunicorn road\n' >"$TMP/pairs.txt"
run 1 pairs_bad eval --model "$M" --vocab "$F/vocab.txt" --heldout-pairs "$TMP/pairs.txt"
err_line pairs_bad "pairs.txt:2: 'unicorn' is not one of the task's 16 nouns"
printf 'animal animal\n' >"$TMP/pairs2.txt"
run 1 pairs_same eval --model "$M" --vocab "$F/vocab.txt" --heldout-pairs "$TMP/pairs2.txt"
err_line pairs_same "(animal, animal) is not a pair"
# task metadata written elsewhere naming its held-out pairs (3 of them, no seed): read (24
# sentences, as --heldout-pairs with those 3 gives), no note; with a seed beside them (as
# headscope writes both) the pairs still win; --heldout-pairs is then refused
grep -v '^#' "$F/heldout_pairs.txt" | head -n 3 >"$TMP/pairs3.txt"
TASK=$("$PY" -c 'import json,sys; print(json.dumps({"name": "winograd", "heldout_pairs": [l.split() for l in open(sys.argv[1])]}))' "$TMP/pairs3.txt")
"$PY" "$(dirname "$0")/py/st_edit.py" "$M" "$TMP/with_pairs.safetensors" --meta task "$TASK"
"$PY" "$(dirname "$0")/py/st_edit.py" "$M" "$TMP/with_both.safetensors" --meta task "${TASK%\}}, \"split_seed\": 0}"
run 0 eval_pairs3 eval --model "$M" --vocab "$F/vocab.txt" --heldout-pairs "$TMP/pairs3.txt" --json
grep -q '"n":[[:space:]]*24,' "$TMP/eval_pairs3.out" || fail "eval --heldout-pairs (3 pairs): not 24 sentences"
for t in pairs both; do
    run 0 eval_meta_$t eval --model "$TMP/with_$t.safetensors" --vocab "$F/vocab.txt" --json
    cmp -s <(grep -v '"model"' "$TMP/eval_pairs3.out") <(grep -v '"model"' "$TMP/eval_meta_$t.out") ||
        fail "task metadata's heldout_pairs not read ($t): $(cat "$TMP/eval_meta_$t.out" "$TMP/eval_meta_$t.err")"
    grep -q "held-out split" "$TMP/eval_meta_$t.err" && fail "eval: a note on a split read from the checkpoint"
done
run 1 meta_and_flag eval --model "$TMP/with_pairs.safetensors" --vocab "$F/vocab.txt" --heldout-pairs "$TMP/pairs3.txt"
err_line meta_and_flag "names its task and split in its metadata"

# TransformerLens' attn.mask buffers are read: a causal one passes (every run above); a
# local-window mask (row 5 no longer sees column 0) or one that sees the future is refused in
# one line naming the tensor and the first position that differs
T_LEN=$("$PY" -c 'import json,struct,sys; b=open(sys.argv[1],"rb").read(); h=json.loads(b[8:8+struct.unpack("<Q",b[:8])[0]]); print(h["blocks.1.attn.mask"]["shape"][0])' "$M")
"$PY" "$(dirname "$0")/py/st_edit.py" "$M" "$TMP/local.safetensors" --set blocks.1.attn.mask $((5 * T_LEN)) 0
run 1 mask_local eval --model "$TMP/local.safetensors" --vocab "$F/vocab.txt" --heldout-pairs "$F/heldout_pairs.txt"
err_line mask_local "local.safetensors: blocks.1.attn.mask is not the causal mask: row 5, column 0 is 0 where a causal mask has 1"
"$PY" "$(dirname "$0")/py/st_edit.py" "$M" "$TMP/future.safetensors" --set blocks.0.attn.mask 3 1
run 1 mask_future inspect --model "$TMP/future.safetensors" --vocab "$F/vocab.txt" --sentence "$SENT" --out "$TMP/x"
err_line mask_future "blocks.0.attn.mask is not the causal mask: row 0, column 3 is nonzero where a causal mask has 0"

echo "ok: foreign checkpoint through weights, inspect, eval, circuit"
