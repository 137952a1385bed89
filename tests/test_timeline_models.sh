#!/usr/bin/env bash
# tests/test_timeline_models.sh BUILD_DIR HEADSCOPE_BIN -- `timeline --models`
# over Hugging Face folders of a run's revisions, as Pythia publishes them
# (step0/, step250/, ...): a GPT-NeoX-shaped induction run (rotary on a
# quarter of each head, parallel attention and MLP, no biases) trained with
# --keep, each kept checkpoint converted to a GPT-NeoX folder by
# tests/py/to_hf_neox.py (the task kept in its metadata), gives the same
# numbers, verdicts and steps (induction jump, loss drop, first step the
# circuit holds) as `timeline` over the original checkpoints, every one
# equal; --steps orders folders without a step in their name; a folder
# without one and without --steps, two folders at one step, a --steps list
# of the wrong length: refused in one line (exit 1; the list: usage, 2).
# The same folders without headscope's task metadata (as Pythia's public
# revisions are): scored on repeated random tokens (TL's and Olsson et al.'s
# standard), the induction jump and the circuit's first step still 1000 with
# the same heads, and every score and loss of one folder equal to an
# independent numpy float64 computation (ref_family.forward) on the
# sequences the report lists.
set -euo pipefail
HS=${2:?usage: test_timeline_models.sh BUILD_DIR HEADSCOPE_BIN}
PY=/usr/bin/python3
mkdir -p "${HS_TEST_TMP:-${1}/testtmp}"
TMP=$(mktemp -d "${HS_TEST_TMP:-${1}/testtmp}/timeline_models.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
HERE=$(cd "$(dirname "$0")" && pwd)
case "$HS" in /*) ;; *) HS="$PWD/$HS" ;; esac
# shellcheck source=cli_lib.sh
. "$HERE/cli_lib.sh"

run 0 train train --task induction --layers 2 --d-model 32 --heads 2 --d-mlp 64 --vocab-size 16 --n-ctx 24 \
    --seg-len 3:6 --gap 0:8 --heldout 64 --batch 16 --eval-every 0 --pos rotary --rotary-dim 4 \
    --parallel-attn-mlp --no-bias --act gelu --steps 1500 --seed 3 --keep "$TMP/keep" --checkpoint-every 250 \
    --out "$TMP/final.safetensors"
for f in "$TMP"/keep/step-*.safetensors; do
    s=$(basename "$f" .safetensors)
    s=${s#step-}
    s=$((10#$s))
    "$PY" "$HERE/py/to_hf_neox.py" "$f" "$TMP/neox/step$s"
    "$PY" "$HERE/py/to_hf_neox.py" "$f" "$TMP/bare/step$s" --bare
done

run 0 orig timeline "$TMP/keep" --json
run 0 models timeline --models "$TMP"/neox/step* --json
run 0 models_out timeline --models "$TMP"/neox/step* --out "$TMP/tl" --format json
check_folder "$TMP/tl" timeline.json timeline_numbers.json
# equal to the bit on OpenBLAS' AVX-512 kernel families, where the folders'
# other layout (a tied or transposed unembedding: OpenBLAS' A B^T against
# libxsmm's A B) sums in the same order; its Haswell and Zen kernels do not
# (common.h, hs_blas_split_exact): there to 1e-6 relative
CORE=$("$HS" --version | sed -n 's/.*OpenBLAS core \([A-Za-z0-9]*\).*/\1/p')
"$PY" - "$TMP/orig.out" "$TMP/models.out" "$TMP/tl/timeline_numbers.json" "$CORE" <<'PYEOF' || fail "timeline --models differs"
import json, sys
a, b, c = (json.load(open(p)) for p in sys.argv[1:4])
exact = sys.argv[4].lower() in ("skylakex", "cooperlake", "sapphirerapids")
def same(u, v):
    if exact or not (isinstance(u, float) and isinstance(v, float)):
        return u == v
    return abs(u - v) <= 1e-6 * max(1.0, abs(u), abs(v))
assert b["checkpoints"] == c["checkpoints"] and b["summary"] == c["summary"], "printed and written differ"
assert a["summary"] == b["summary"], (a["summary"], b["summary"])
# the run forms its circuit inside the window (else the test shows little)
assert a["summary"]["induction_jump_step"] == 1000 and a["summary"]["first_step_circuit_holds"] == 1000, a["summary"]
assert [x["step"] for x in a["checkpoints"]] == [x["step"] for x in b["checkpoints"]] == list(range(0, 1501, 250))
for x, y in zip(a["checkpoints"], b["checkpoints"]):
    assert y["file"].endswith("/step%d" % x["step"]), y["file"]
    for k in x:
        if k != "file":
            assert same(x[k], y[k]), (x["step"], k, x[k], y[k])
PYEOF

# no task metadata: repeated random tokens
run 0 bare timeline --models "$TMP"/bare/step* --json
"$PY" - "$TMP/bare.out" "$TMP/orig.out" "$TMP/bare/step1000" "$HERE/py" <<'PYEOF' || fail "timeline --models without a task"
import json, sys, os
import numpy as np
r, a = (json.load(open(p)) for p in sys.argv[1:3])
sys.path.insert(0, sys.argv[4])
import ref_family
assert r["task"] == "repeated random tokens", r["task"]
assert r["summary"]["induction_jump_step"] == 1000 and r["summary"]["first_step_circuit_holds"] == 1000, r["summary"]
byst = {x["step"]: x for x in r["checkpoints"]}
assert byst[1000]["heads"] == {x["step"]: x for x in a["checkpoints"]}[1000]["heads"] == "L0H0 -> L1H1"
assert byst[0]["holds"] is False and byst[1500]["icl_score"] < -1.0 < byst[0]["icl_score"], byst
seqs = np.array(r["repeated_tokens"])
assert seqs.shape == (10, 24), seqs.shape  # no BOS (no tokenizer), 12 + 12 of n_ctx 24
n = 12
assert (seqs[:, :n] == seqs[:, n:]).all() and seqs.min() >= 0 and seqs.max() < 16
# the folder's weights, read with numpy (F32 safetensors)
d = sys.argv[3]
raw = open(os.path.join(d, "model.safetensors"), "rb").read()
hl = int.from_bytes(raw[:8], "little")
hdr = json.loads(raw[8:8 + hl])
wt = {k: np.frombuffer(raw[8 + hl + v["data_offsets"][0]:8 + hl + v["data_offsets"][1]], "<f4")
      .reshape(v["shape"]).astype(np.float64) for k, v in hdr.items() if k != "__metadata__"}
cfg = json.load(open(os.path.join(d, "config.json")))
L, H = 2, 2
ind = np.zeros(L * H); prev = np.zeros(L * H); early = late = allce = 0.0; hits = 0
for t in seqs:
    o = ref_family.forward("gpt_neox", cfg, wt, t)
    lg = o["logits"]
    lp = lg - lg.max(1, keepdims=True)
    lp = lp - np.log(np.exp(lp).sum(1, keepdims=True))
    ce = -lp[np.arange(2 * n - 1), t[1:]]
    early += ce[0:n - 1].sum(); late += ce[n:2 * n - 1].sum(); allce += ce.sum()
    hits += (lg[n:2 * n - 1].argmax(1) == t[n + 1:]).sum()
    for l in range(L):
        A = o["blocks.%d.attn.hook_pattern" % l]  # [H, dest, src]
        for h in range(H):
            ind[l * H + h] += np.mean([A[h, n + k, k + 1] for k in range(n)])
            prev[l * H + h] += np.mean([A[h, p, p - 1] for p in range(1, 2 * n)])
ns = 10 * (n - 1)
got = byst[1000]
want = {"induction": ind / 10, "previous_token": prev / 10}
for k, w in want.items():
    g = np.array(got[k])
    assert np.abs(g - w).max() < 1e-5, (k, g, w)
for k, w in (("segment_loss", late / ns), ("icl_score", (late - early) / ns), ("loss", allce / (10 * (2 * n - 1))),
             ("accuracy", hits / ns)):
    assert abs(got[k] - w) < 1e-5 * max(1.0, abs(w)), (k, got[k], w)
print("repeated random tokens: scores and losses equal numpy's (step1000)")
PYEOF
run 1 mixed timeline --models "$TMP/neox/step250" "$TMP/bare/step500"
one_line mixed "is not from the same run"

# --steps: folders named without a step
mkdir -p "$TMP/named"
cp -r "$TMP/neox/step1000" "$TMP/named/late" && cp -r "$TMP/neox/step250" "$TMP/named/early"
run 0 steps timeline --models "$TMP/named/late" "$TMP/named/early" --steps 1000,250 --json
"$PY" - "$TMP/steps.out" "$TMP/orig.out" <<'PYEOF' || fail "--steps"
import json, sys
s, a = (json.load(open(p)) for p in sys.argv[1:3])
assert [x["step"] for x in s["checkpoints"]] == [250, 1000], s["checkpoints"]
assert s["checkpoints"][0]["file"].endswith("/early")
want = {x["step"]: x for x in a["checkpoints"]}
for x in s["checkpoints"]:
    assert x["induction"] == want[x["step"]]["induction"] and x["verdict"] == want[x["step"]]["verdict"]
PYEOF

# refusals
run 1 nostep timeline --models "$TMP/named/late" "$TMP/neox/step0"
one_line nostep "named/late: no training step in its name (e.g. step1000); give --steps"
cp -r "$TMP/neox/step250" "$TMP/named/step250"
run 1 twice timeline --models "$TMP/neox/step250" "$TMP/named/step250"
one_line twice "are both step 250"
run 2 steps_len timeline --models "$TMP/neox/step250" "$TMP/neox/step500" --steps 1
one_line steps_len "--steps needs one step per checkpoint (2)"
run 2 steps_alone timeline "$TMP/keep" --steps 1
one_line steps_alone "--steps goes with --models"
echo "timeline --models: ok"
