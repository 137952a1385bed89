#!/usr/bin/env bash
# tests/test_cache_cli.sh -- `headscope cache` as a user drives it, on the
# committed small checkpoint, the file read back with numpy by hand and with
# torch (tests/py/cache_check.py): --help; usage errors; a sentence's
# hook_pattern equals inspect's attention_grid.json and its hook_tokens
# inspect's token_ids; a prompt set's hook_result gives dla --json's per-head
# numbers (to 1e-6); --names keeps exactly the matched points; --out is
# refused when it exists (one line), and with --force unless headscope wrote
# it (the model file is left as it was); a Hugging Face GPT-2 folder with
# --vocab and --process tl gives inspect's patterns too.
# Run as: bash tests/test_cache_cli.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_cache_cli.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_cache_cli.sh BUILD_DIR HEADSCOPE_BIN}
mkdir -p "${HS_TEST_TMP:-$BUILD_DIR/testtmp}"
TMP=$(mktemp -d "${HS_TEST_TMP:-$BUILD_DIR/testtmp}/cache_cli.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
PY=/usr/bin/python3
# shellcheck source=tests/cli_lib.sh
source "$(dirname "$0")/cli_lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
CHECK="$HERE/py/cache_check.py"

M="$TMP/m.safetensors"
cp "$HERE/checkpoint/circuit_tiny.safetensors" "$M"
S='the animal did not cross the street because it was too tired . it'

run 0 help cache --help
grep -q '^usage: headscope cache' "$TMP/help.out" || fail "cache --help: no usage line"
run 2 neither cache --model "$M" --out "$TMP/x.safetensors"
one_line neither 'give exactly one of --sentence "..." and --data FILE'
run 2 noout cache --model "$M" --sentence "$S"
one_line noout 'give --out FILE.safetensors'
run 2 emptyname cache --model "$M" --sentence "$S" --names 'blocks.*.attn.hook_z,' --out "$TMP/x.safetensors"
one_line emptyname "--names has an empty name in 'blocks.\*.attn.hook_z,'"

# a sentence: the patterns and tokens inspect shows
run 0 inspect inspect --model "$M" --sentence "$S" --out "$TMP/ins" --format json
run 0 one cache --model "$M" --sentence "$S" --out "$TMP/one.safetensors"
grep -q "^wrote 53 tensors (batch 1, 14 positions; 37772 float32 values) to $TMP/one.safetensors\$" \
    "$TMP/one.out" || fail "cache: $(cat "$TMP/one.out")"
"$PY" "$CHECK" pattern "$TMP/one.safetensors" "$TMP/ins" || fail "pattern check"

# a prompt set: each head's direct logit attribution as dla computes it
for adj in tired wet tired; do
    printf '{"prompt": "the animal did not cross the street because it was too %s . it", "answer": "animal", "wrong": "street"}\n' "$adj"
done >"$TMP/set.jsonl"
run 0 dla dla --model "$M" --data "$TMP/set.jsonl" --json --threads 1
run 0 set cache --model "$M" --data "$TMP/set.jsonl" --out "$TMP/set.safetensors" --threads 2
A=$("$PY" "$HERE/py/st_read.py" "$M" --meta vocab |
    "$PY" -c "import json,sys; v=json.load(sys.stdin); print(v.index('animal'), v.index('street'))")
# shellcheck disable=SC2086
"$PY" "$CHECK" dla "$TMP/set.safetensors" "$M" "$TMP/dla.out" $A || fail "dla check"

# --names: exactly the matched points, the tokens first
run 0 names cache --model "$M" --sentence "$S" --names 'blocks.*.attn.hook_z,**hook_pattern' \
    --out "$TMP/names.safetensors"
"$PY" "$CHECK" names "$TMP/names.safetensors" hook_tokens blocks.0.attn.hook_pattern blocks.0.attn.hook_z \
    blocks.1.attn.hook_pattern blocks.1.attn.hook_z || fail "names check"
run 1 badname cache --model "$M" --sentence "$S" --names 'blocks.*.attn.hook_zz' --out "$TMP/bad.safetensors"
one_line badname "cache filter 'blocks.\*.attn.hook_zz' matches no hook point of this model"
[ ! -e "$TMP/bad.safetensors" ] || fail "badname: a file was written"

# the output policy
run 1 exists cache --model "$M" --sentence "$S" --out "$TMP/one.safetensors"
one_line exists "--out $TMP/one.safetensors already exists; use --force to replace it"
run 0 force cache --model "$M" --sentence "the animal did" --out "$TMP/one.safetensors" --force
one_line force "replaced $TMP/one.safetensors, a cache an earlier run wrote"
before=$(sha256sum "$M")
run 1 model cache --model "$M" --sentence "$S" --out "$M" --force
one_line model "--out $M is not an activation cache headscope wrote, or it changed since; refusing to replace it"
[ "$(sha256sum "$M")" = "$before" ] || fail "the model file changed"

# a model trained elsewhere: a Hugging Face GPT-2 folder with --vocab, as
# TransformerLens' from_pretrained processes it (--process tl)
"$PY" "$HERE/py/make_hf_gpt2.py" "$TMP/fx"
"$PY" -c "print('\\n'.join('w%d' % i for i in range(41)))" >"$TMP/v41.txt"
run 0 hf_inspect inspect --model "$TMP/fx/base" --vocab "$TMP/v41.txt" --process tl --sentence "w1 w2 w3 w4 w5" \
    --out "$TMP/hf_ins" --format json
run 0 hf_cache cache --model "$TMP/fx/base" --vocab "$TMP/v41.txt" --process tl --sentence "w1 w2 w3 w4 w5" \
    --out "$TMP/hf.safetensors" --threads 1
"$PY" "$CHECK" pattern "$TMP/hf.safetensors" "$TMP/hf_ins" || fail "HF pattern check"
echo "cache CLI: ok"
