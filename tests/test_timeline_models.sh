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
done

run 0 orig timeline "$TMP/keep" --json
run 0 models timeline --models "$TMP"/neox/step* --json
run 0 models_out timeline --models "$TMP"/neox/step* --out "$TMP/tl" --format json
check_folder "$TMP/tl" timeline.json timeline_numbers.json
"$PY" - "$TMP/orig.out" "$TMP/models.out" "$TMP/tl/timeline_numbers.json" <<'PYEOF' || fail "timeline --models differs"
import json, sys
a, b, c = (json.load(open(p)) for p in sys.argv[1:4])
assert b["checkpoints"] == c["checkpoints"] and b["summary"] == c["summary"], "printed and written differ"
assert a["summary"] == b["summary"], (a["summary"], b["summary"])
# the run forms its circuit inside the window (else the test shows little)
assert a["summary"]["induction_jump_step"] == 1000 and a["summary"]["first_step_circuit_holds"] == 1000, a["summary"]
assert [x["step"] for x in a["checkpoints"]] == [x["step"] for x in b["checkpoints"]] == list(range(0, 1501, 250))
for x, y in zip(a["checkpoints"], b["checkpoints"]):
    assert y["file"].endswith("/step%d" % x["step"]), y["file"]
    for k in x:
        if k != "file":
            assert x[k] == y[k], (x["step"], k, x[k], y[k])
PYEOF

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
