#!/usr/bin/env bash
# tests/test_attn_torch.sh BUILD_DIR HEADSCOPE_BIN -- the attention switches
# (rotary with rotary_dim d_head/4 and d_head, adjacent pairs, NTK-by-parts;
# sinusoidal; ALiBi with 4 and 6 heads; grouped-query attention with 2 and 4
# key/value heads; a local window shorter than the prompt; a Llama-like mix;
# 16 positions on models of n_ctx 8 for sinusoidal, rotary, ALiBi and a
# local + rotary + GQA mix) against independent float64 forwards (numpy, and
# torch, which must agree) and torch's autograd: `test_attn_switches --dump` writes each case's checkpoint and
# headscope's points, logits and gradients; tests/py/attn_ref.py rebuilds the
# model from the checkpoint alone and checks hook_q/k/v, hook_rot_q/k,
# hook_attn_scores, hook_pattern, hook_z, hook_pos_embed, the logits, the
# loss, every parameter's gradient and the gradients at those points to 1e-5
# (numpy.allclose, rtol 1e-5, atol 1e-5 of the array's largest).
# The train CLI's flags make those models: one step of each writes a
# checkpoint whose config says so.
# Without /usr/bin/python3 and torch the test is skipped (exit 77) unless CI
# is set, where it fails (cli_lib.sh's skip_test).
set -euo pipefail
BUILD=${1:?build dir}
HS=${2:?headscope binary}
PY=/usr/bin/python3
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE"
TMP="$BUILD/testtmp/attn_torch.$$"
rm -rf "$TMP"
mkdir -p "$TMP"
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=tests/cli_lib.sh
. "$HERE/cli_lib.sh"

# the train flags (no torch needed)
run 0 rot train --task induction --steps 1 --eval-every 0 --pos rotary --rotary-dim 4 --n-kv-heads 2 \
    --window 5 --out "$TMP/rot.safetensors"
"$PY" - "$TMP/rot.safetensors" <<'PYEOF' || fail "train's switches are not in the checkpoint's config"
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n, = struct.unpack("<Q", raw[:8])
tl = json.loads(json.loads(raw[8:8 + n])["__metadata__"]["config"])
assert tl["positional_embedding_type"] == "rotary" and tl["rotary_dim"] == 4, tl
assert tl["n_key_value_heads"] == 2 and tl["use_local_attn"] and tl["window_size"] == 5, tl
assert tl["attn_types"] == ["local", "local"], tl
PYEOF
for p in sinusoidal alibi none; do
    run 0 "pos_$p" train --task induction --steps 1 --eval-every 0 --pos "$p" --out "$TMP/$p.safetensors"
done
run 2 badpos train --task induction --steps 1 --pos sideways --out "$TMP/x.safetensors"
one_line badpos "unknown --pos 'sideways' (learned, none, sinusoidal, rotary, alibi)"
run 1 badkv train --task induction --steps 1 --n-kv-heads 3 --out "$TMP/x.safetensors"
one_line badkv "n_key_value_heads 3 does not divide n_heads 4"

if ! "$PY" -c "import numpy, torch" 2>/dev/null; then
    skip_test "no numpy/torch for $PY"
fi
"$BUILD/test_attn_switches" --dump "$TMP" >"$TMP/dump.out" 2>&1 || { cat "$TMP/dump.out"; fail "test_attn_switches --dump"; }
"$PY" py/attn_ref.py "$TMP" || fail "the float64 reference disagrees"
echo "ok"
