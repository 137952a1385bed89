#!/usr/bin/env bash
# tests/test_bpe_train.sh -- `headscope bpe` (tokenize/bpe_train.c) on the
# fortunes corpus (Debian's `fortunes`: every file of /usr/share/games/fortunes
# without a dot in its name, i.e. not the .dat indexes nor the .u8 links; 43
# files, 2.58 MB) at vocabulary 1,024:
#   - the same merges, vocabulary and corpus token count as an independent
#     Python trainer written from the algorithm (tests/py/bpe_train_ref.py:
#     most frequent pair, ties to the smallest pair of ids, Python's `regex`
#     for GPT-2's pattern);
#   - deterministic (two runs, the same bytes);
#   - decode(encode(text)) == text for every file, through `headscope
#     tokenize --jsonl` / `--decode` with the written tokenizer.json, and the
#     encoded length is the count `bpe` printed;
#   - Hugging Face tokenizers (npm @anush008/tokenizers, its Rust core) reads
#     the file and encodes 1,000 fortunes exactly as headscope does;
#   - refusals: a missing corpus file, a vocabulary under 257, an existing
#     --out without --force (left unchanged), a corpus that is not UTF-8.
# Without fortunes, python3-regex or node the test is skipped (exit 77; a
# failure with CI set). In a sanitizer build (cli_lib.sh's sanitized_build)
# every headscope command runs, but not the Python reference trainer nor
# tokenizers in node (no headscope code; ~6 s of Python): the plain build's
# run of this test compared them with the same bytes.
# Run as: bash tests/test_bpe_train.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_bpe_train.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_bpe_train.sh BUILD_DIR HEADSCOPE_BIN}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
mkdir -p "$BUILD_DIR/testtmp"
TMP=$(cd "$(mktemp -d "$BUILD_DIR/testtmp/bpetrain.XXXXXX")" && pwd)
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=tests/cli_lib.sh
source "$HERE/cli_lib.sh"

FORT=/usr/share/games/fortunes
[ -f "$FORT/cookie" ] || skip_test "no fortunes corpus in $FORT (bash scripts/deps.sh installs it)"
"$PY" -c 'import regex' 2>/dev/null || skip_test "no python3-regex"
HFTOK=$HERE/tokenizer/node_modules/@anush008/tokenizers
command -v node >/dev/null && [ -d "$HFTOK" ] || skip_test "no node or no $HFTOK"
mapfile -t FILES < <(find "$FORT" -maxdepth 1 -type f ! -name '*.*' | sort)
[ "${#FILES[@]}" -ge 40 ] || fail "expected the 43 fortunes files, found ${#FILES[@]}"

# refusals first (nothing written)
run 1 missing bpe --corpus "$TMP/nope.txt" --vocab-size 300 --out "$TMP/t.json"
one_line missing "nope.txt"
[ ! -e "$TMP/t.json" ] || fail "missing: wrote --out"
run 2 small bpe --corpus "${FILES[0]}" --vocab-size 256 --out "$TMP/t.json"
one_line small "257"
printf 'caf\xe9\n' >"$TMP/latin1.txt"
run 1 notutf8 bpe --corpus "$TMP/latin1.txt" --vocab-size 300 --out "$TMP/t.json"
one_line notutf8 "not valid UTF-8 at byte 3"
echo "the user's file" >"$TMP/mine.json"
run 1 exists bpe --corpus "${FILES[0]}" --vocab-size 300 --out "$TMP/mine.json"
one_line exists "already exists; use --force"
[ "$(cat "$TMP/mine.json")" = "the user's file" ] || fail "exists: --out changed"
run 0 force bpe --corpus "${FILES[0]}" --vocab-size 300 --out "$TMP/mine.json" --force
grep -q '"merges"' "$TMP/mine.json" || fail "force: --out not replaced"

# the corpus at 1,024, twice (--corpus then the rest as arguments: a glob works)
mkdir "$TMP/a" "$TMP/b"
run 0 train bpe --corpus "${FILES[@]}" --vocab-size 1024 --out "$TMP/a/tokenizer.json"
run 0 train2 bpe --vocab-size 1024 --out "$TMP/b/tokenizer.json" --corpus "${FILES[@]}"
cmp -s "$TMP/a/tokenizer.json" "$TMP/b/tokenizer.json" || fail "two runs wrote different files"
grep -q "^vocabulary 1024 (256 bytes + 768 merges): [0-9]* tokens, [0-9.]* characters per token" \
    "$TMP/train.out" || fail "train: summary: $(cat "$TMP/train.out")"
NTOK=$(sed -n 's/^vocabulary .*: \([0-9]*\) tokens,.*/\1/p' "$TMP/train.out")

# the reference trainer
SANITIZED=0
sanitized_build && SANITIZED=1
[ "$SANITIZED" = 1 ] || "$PY" "$HERE/py/bpe_train_ref.py" 1024 "$TMP/ref.json" "${FILES[@]}"
[ "$SANITIZED" = 1 ] || "$PY" - "$TMP/ref.json" "$TMP/a/tokenizer.json" "$NTOK" <<'PYEOF' || fail "reference trainer"
import json, sys
ref = json.load(open(sys.argv[1]))
tj = json.load(open(sys.argv[2]))
# GPT-2's bytes_to_unicode
bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
cs = bs[:]
n = 0
for b in range(256):
    if b not in bs:
        bs.append(b)
        cs.append(256 + n)
        n += 1
b2u = {b: chr(c) for b, c in zip(bs, cs)}
toks = [bytes.fromhex(h) for h in ref["tokens"]]
s = lambda i: "".join(b2u[x] for x in toks[i])
vocab = {s(i): i for i in range(len(toks))}
assert len(vocab) == 1024, len(vocab)
assert tj["model"]["vocab"] == vocab, "vocabulary differs"
merges = [s(a) + " " + s(b) for a, b in ref["merges"]]
got = tj["model"]["merges"]
for r, (x, y) in enumerate(zip(merges, got)):
    assert x == y, "merge %d: reference %r, headscope %r" % (r, x, y)
assert len(merges) == len(got) == 768, (len(merges), len(got))
assert ref["n_tokens"] == int(sys.argv[3]), (ref["n_tokens"], sys.argv[3])
print("reference: %d merges, %d tokens: identical" % (len(got), ref["n_tokens"]))
PYEOF

# decode(encode(file)) == file for the whole corpus; the encoded length is
# the count bpe printed
"$PY" - "$TMP/files.jsonl" "${FILES[@]}" <<'PYEOF'
import json, sys
with open(sys.argv[1], "w") as f:
    for p in sys.argv[2:]:
        f.write(json.dumps(open(p, "rb").read().decode("utf-8")) + "\n")
PYEOF
run 0 enc tokenize --model "$TMP/a" --jsonl "$TMP/files.jsonl"
"$PY" -c '
import json, sys
with open(sys.argv[2], "w") as f:
    for line in open(sys.argv[1]):
        f.write(json.dumps(json.loads(line)["ids"]) + "\n")
' "$TMP/enc.out" "$TMP/ids.jsonl"
run 0 dec tokenize --model "$TMP/a" --decode --jsonl "$TMP/ids.jsonl"
"$PY" - "$TMP/files.jsonl" "$TMP/dec.out" "$TMP/ids.jsonl" "$NTOK" <<'PYEOF' || fail "round trip"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
ids = [json.loads(l) for l in open(sys.argv[3])]
assert len(a) == len(b) >= 40
for i, (x, y) in enumerate(zip(a, b)):
    assert x == y, "file %d: decode(encode(text)) differs" % i
assert max(max(v) for v in ids) == 1023
n = sum(len(v) for v in ids)
assert n == int(sys.argv[4]), (n, sys.argv[4])
print("round trip: %d files, %d characters, %d tokens" % (len(a), sum(map(len, a)), n))
PYEOF

# Hugging Face tokenizers on 1,000 fortunes (the entries between "%" lines,
# spread over every file)
"$PY" - "$TMP/strings.jsonl" "${FILES[@]}" <<'PYEOF'
import json, re, sys
entries = []
for p in sys.argv[2:]:
    text = open(p, "rb").read().decode("utf-8")
    entries += [e for e in re.split(r"^%\n", text, flags=re.M) if e.strip()]
step = len(entries) / 1000.0
pick = [entries[int(i * step)] for i in range(1000)]
with open(sys.argv[1], "w") as f:
    for e in pick:
        f.write(json.dumps(e) + "\n")
PYEOF
run 0 enc1000 tokenize --model "$TMP/a" --jsonl "$TMP/strings.jsonl"
[ "$SANITIZED" = 1 ] || node - "$HFTOK" "$TMP/a/tokenizer.json" "$TMP/strings.jsonl" "$TMP/enc1000.out" <<'JSEOF' || fail "Hugging Face tokenizers"
const fs = require('fs');
const [hf, tj, strs, ours] = process.argv.slice(2);
const { Tokenizer } = require(hf);
(async () => {
  const t = Tokenizer.fromFile(tj);
  const lines = fs.readFileSync(strs, 'utf8').trim().split('\n').map(JSON.parse);
  const got = fs.readFileSync(ours, 'utf8').trim().split('\n').map(l => JSON.parse(l).ids);
  if (lines.length !== 1000 || got.length !== 1000) throw new Error('expected 1000 strings');
  let toks = 0;
  for (let i = 0; i < lines.length; i++) {
    const e = await t.encode(lines[i], null, { addSpecialTokens: false });
    const ids = Array.from(e.getIds());
    toks += ids.length;
    if (JSON.stringify(ids) !== JSON.stringify(got[i]))
      throw new Error(`string ${i} ${JSON.stringify(lines[i]).slice(0, 80)}: tokenizers ${ids.slice(0, 20)}, headscope ${got[i].slice(0, 20)}`);
  }
  console.log(`tokenizers: 1000 strings, ${toks} tokens: identical`);
})().catch(e => { console.error(e.message); process.exit(1); });
JSEOF
echo "PASS: test_bpe_train"
