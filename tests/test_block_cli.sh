#!/usr/bin/env bash
# tests/test_block_cli.sh BUILD_DIR HEADSCOPE_BIN -- the block switches from
# the command line: `train --gated-mlp --act silu`, `--parallel-attn-mlp`,
# `--norm-place post` (the final norm off with it), `--attn-replace` each
# train and save a checkpoint whose config says so (TransformerLens fields
# gated_mlp, parallel_attn_mlp, act_fn; headscope_config norm_place,
# attn_replace; none of them in a plain model's); bad values and undefined
# combinations are one-line usage or config errors; the residual
# decompositions (lens, dla) refuse a post-norm or replacing model in one line
# naming the switch and work on a parallel one; inspect notes the DLA figure
# it skips.
set -euo pipefail
BUILD=${1:?build dir}
HS=${2:?headscope binary}
PY=/usr/bin/python3
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE"
TMP="$BUILD/testtmp/block_cli.$$"
rm -rf "$TMP"
mkdir -p "$TMP"
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=tests/cli_lib.sh
. "$HERE/cli_lib.sh"
[ -x "$PY" ] || skip_test "no $PY"

T=(train --steps 20 --eval-every 0 --threads 1)
run 0 plain "${T[@]}" --out "$TMP/plain.safetensors"
run 0 gated "${T[@]}" --gated-mlp --act silu --norm rmsnorm --no-bias --out "$TMP/gated.safetensors"
run 0 par "${T[@]}" --parallel-attn-mlp --out "$TMP/par.safetensors"
run 0 post "${T[@]}" --norm-place post --out "$TMP/post.safetensors"
run 0 rep "${T[@]}" --attn-replace --d-mlp 0 --out "$TMP/rep.safetensors"
"$PY" - "$TMP" <<'PYEOF' || fail "checkpoint configs"
import json, struct, sys
d = sys.argv[1]
def meta(name):
    with open("%s/%s.safetensors" % (d, name), "rb") as fh:
        n = struct.unpack("<Q", fh.read(8))[0]
        h = json.loads(fh.read(n))
    m = h["__metadata__"]
    return json.loads(m["config"]), json.loads(m.get("headscope_config", "{}")), h
tl, hs, h = meta("plain")
for k in ("gated_mlp", "parallel_attn_mlp"):
    assert k not in tl, k
assert "norm_place" not in hs and "attn_replace" not in hs, hs
tl, hs, h = meta("gated")
assert tl["gated_mlp"] is True and tl["act_fn"] == "silu" and tl["normalization_type"] == "RMS", tl
assert h["blocks.0.mlp.W_gate"]["shape"] == [64, 256], h["blocks.0.mlp.W_gate"]
tl, hs, h = meta("par")
assert tl["parallel_attn_mlp"] is True, tl
tl, hs, h = meta("post")
assert hs["norm_place"] == "post" and hs["ln_final"] is False, hs
assert "ln_final.w" not in h
tl, hs, h = meta("rep")
assert hs["attn_replace"] is True, hs
PYEOF

run 2 badplace "${T[@]}" --norm-place sandwich --out "$TMP/x.safetensors"
one_line badplace "unknown --norm-place 'sandwich' (pre, post)"
run 2 badact "${T[@]}" --act swish --out "$TMP/x.safetensors"
one_line badact "unknown --act 'swish' (gelu, relu, gelu_new, silu)"
run 1 gated0 "${T[@]}" --gated-mlp --d-mlp 0 --out "$TMP/x.safetensors"
one_line gated0 "gated_mlp needs an MLP"
run 1 parpost "${T[@]}" --parallel-attn-mlp --norm-place post --out "$TMP/x.safetensors"
one_line parpost "parallel_attn_mlp with norm_place post is not defined"
[ ! -e "$TMP/x.safetensors" ] || fail "a refused run wrote its --out"

S="the animal did not cross the street because it was too tired"
printf '{"prompt": "%s", "answer": "animal"}\n' "the animal did not cross the street because it was too" >"$TMP/p.jsonl"
run 1 lenspost lens --model "$TMP/post.safetensors" --sentence "$S"
one_line lenspost "not .*with norm_place post"
run 1 dlarep dla --model "$TMP/rep.safetensors" --data "$TMP/p.jsonl"
one_line dlarep "not the sum of with attn_replace"
run 0 lenspar lens --model "$TMP/par.safetensors" --sentence "$S"
run 0 dlapar dla --model "$TMP/par.safetensors" --data "$TMP/p.jsonl"
grep -q "^  sum [+-][0-9.]* = logit [+-][0-9.]*" "$TMP/dlapar.out" || fail "dla on a parallel model: no sum line"
"$PY" - "$TMP/dlapar.out" <<'PYEOF' || fail "dla on a parallel model does not sum to the logit"
import re, sys
m = re.search(r"sum ([+-][0-9.]+) = logit ([+-][0-9.]+)", open(sys.argv[1]).read())
assert abs(float(m.group(1)) - float(m.group(2))) <= 2e-3, m.group(0)
PYEOF
run 0 inspost inspect --model "$TMP/post.safetensors" --sentence "$S" --out "$TMP/ins"
grep -q "note: no dla figure: the residual stream is not a sum of its writers with norm_place post" "$TMP/inspost.err" \
    || fail "inspect: no note about the skipped dla figure"
[ ! -e "$TMP/ins/dla.json" ] || fail "inspect wrote a dla figure for a post-norm model"
check_folder "$TMP/ins"
echo "ok"
