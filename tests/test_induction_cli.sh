#!/usr/bin/env bash
# End to end, induction task and circuits over training (small and fast):
#  - train --task induction --keep DIR --save-optimizer keeps step-000000 and
#    every --checkpoint-every step; --resume from the middle one gives a model
#    whose parameters are byte-identical to the uninterrupted run's (Winograd
#    too), and refuses a checkpoint without optimizer state;
#  - circuit on an induction model: report.json parses and names its verdict;
#    on a one-layer model it does not hold, with the reason;
#  - timeline DIR: timeline_numbers.json parses, one entry per checkpoint, and
#    each checkpoint's numbers equal `circuit --json` on that checkpoint alone.
set -euo pipefail
BUILD=$1
HS=$2
PY=/usr/bin/python3
TMP=$(mktemp -d "$BUILD/testtmp/ind.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=tests/cli_lib.sh
. "$(dirname "$0")/cli_lib.sh"

SMALL=(--task induction --d-mlp 0 --d-model 32 --heads 2 --vocab-size 16 --n-ctx 24 --seg-len 3:6
       --gap 0:8 --heldout 64 --batch 16 --eval-every 0)

# straight: 40 steps, every 20 kept with the optimizer state
run 0 straight train "${SMALL[@]}" --steps 40 --seed 3 --keep "$TMP/keep" --checkpoint-every 20 \
    --save-optimizer --out "$TMP/straight.safetensors"
for s in 000000 000020 000040; do [ -f "$TMP/keep/step-$s.safetensors" ] || fail "missing step-$s"; done
# resumed from step 20 to 40
run 0 resumed train --resume "$TMP/keep/step-000020.safetensors" --out "$TMP/resumed.safetensors"
grep -q "resuming .* at step 20 of 40" "$TMP/resumed.err" || fail "no resume line: $(cat "$TMP/resumed.err")"
"$PY" - "$TMP/straight.safetensors" "$TMP/resumed.safetensors" "$TMP/keep/step-000020.safetensors" <<'PY'
import json, struct, sys
def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    out = {}
    for k, v in h.items():
        if k == "__metadata__" or k.startswith("optimizer."):
            continue
        s, e = v["data_offsets"]
        out[k] = b[8 + n + s: 8 + n + e]
    return out, h["__metadata__"]
a, ma = tensors(sys.argv[1])
b, mb = tensors(sys.argv[2])
m, _ = tensors(sys.argv[3])
assert a.keys() == b.keys() and len(a) > 5
diff = [k for k in a if a[k] != b[k]]
assert not diff, "resumed parameters differ from the uninterrupted run's: %s" % diff
assert any(m[k] != a[k] for k in a), "step 20 already equals step 40: the test would prove nothing"
assert json.loads(ma["train"])["steps_done"] == 40 and json.loads(mb["train"])["steps_done"] == 40
assert json.loads(ma["task"])["name"] == "induction"
PY
# a checkpoint without optimizer state cannot be resumed; task flags are refused with --resume
run 0 plain train "${SMALL[@]}" --steps 2 --out "$TMP/plain.safetensors"
run 1 noopt train --resume "$TMP/plain.safetensors" --out "$TMP/x.safetensors"
grep -q "no optimizer state" "$TMP/noopt.err" || fail "noopt: $(cat "$TMP/noopt.err")"
run 2 flags train --resume "$TMP/keep/step-000020.safetensors" --layers 3 --out "$TMP/x.safetensors"
# the same --keep folder again: its step files are never overwritten
run 1 again train "${SMALL[@]}" --steps 40 --keep "$TMP/keep" --checkpoint-every 20 --out "$TMP/y.safetensors"
one_line again "already exists"

# Winograd resumes bit-identically too
run 0 wg train --steps 30 --layers 1 --d-model 16 --heads 2 --d-mlp 32 --eval-every 0 --keep "$TMP/wg" \
    --checkpoint-every 15 --save-optimizer --out "$TMP/wg.safetensors"
run 0 wgr train --resume "$TMP/wg/step-000015.safetensors" --out "$TMP/wgr.safetensors"
"$PY" - "$TMP/wg/step-000030.safetensors" "$TMP/wgr.safetensors" <<'PY'
import json, struct, sys
def params(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    return {k: b[8 + n + v["data_offsets"][0]: 8 + n + v["data_offsets"][1]]
            for k, v in h.items() if k != "__metadata__" and not k.startswith("optimizer.")}
a, b = params(sys.argv[1]), params(sys.argv[2])
assert a == b, [k for k in a if a[k] != b.get(k)]
PY

# circuit on an induction model (2 layers) and on a one-layer model
run 0 circ circuit --model "$TMP/straight.safetensors" --out "$TMP/circ"
# all 64 held-out sequences scored: said plainly; of 200, the circuit's first 128,
# said in circuit's and timeline's output (train's accuracy is on all 200)
has -F "on 64 held-out sequences (" "$TMP/circ.out" || fail "circ: $(head -n 1 "$TMP/circ.out")"
run 0 sub train "${SMALL[@]}" --heldout 200 --steps 2 --keep "$TMP/subk" --checkpoint-every 2 \
    --out "$TMP/sub.safetensors"
run 0 circsub circuit --model "$TMP/sub.safetensors"
has -F "on the first 128 of the 200 held-out sequences (train's accuracy: all 200; " "$TMP/circsub.out" ||
    fail "circsub: $(head -n 1 "$TMP/circsub.out")"
run 0 tlsub timeline "$TMP/subk"
has -F "on the first 128 of the 200 held-out sequences (train's accuracy is on all 200)" "$TMP/tlsub.out" ||
    fail "tlsub: $(head -n 2 "$TMP/tlsub.out")"
check_folder "$TMP/circ" report.json heads.png ablation.json
run 0 one train "${SMALL[@]}" --layers 1 --steps 5 --out "$TMP/one.safetensors"
run 0 circ1 circuit --model "$TMP/one.safetensors" --json
"$PY" - "$TMP/circ1.out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["task"] == "induction" and r["holds"] is False, r["verdict"]
assert r["verdict"].startswith("does not hold: one layer"), r["verdict"]
assert r["induction_head"] is None and r["path_patching"]["k"] is None
PY
# eval refuses an induction model in one line (it scores Winograd sentences)
run 1 ev eval --model "$TMP/one.safetensors"
one_line ev "induction-task model; this command scores a Winograd-task model's referent accuracy, or with --corpus FILE... a text model's (train --task text) perplexity (an induction model's held-out accuracy: circuit or timeline)"

# timeline: one entry per checkpoint, equal to circuit on each checkpoint alone
run 0 tl timeline "$TMP/keep" --out "$TMP/tl" --format png,svg,json
check_folder "$TMP/tl" timeline.png timeline.svg timeline.json timeline_numbers.json
for s in 000000 000020 000040; do
    run 0 "c$s" circuit --model "$TMP/keep/step-$s.safetensors" --json
done
"$PY" - "$TMP/tl/timeline_numbers.json" "$TMP"/c0000*.out <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
cks = t["checkpoints"]
assert [c["step"] for c in cks] == [0, 20, 40], [c["step"] for c in cks]
assert t["task"] == "induction" and len(t["head_names"]) == 4
for c, path in zip(cks, sys.argv[2:]):
    r = json.load(open(path))
    assert c["accuracy"] == r["accuracy"] and c["loss"] == r["loss"], (c["accuracy"], r["accuracy"])
    assert c["segment_loss"] == r["segment_loss"] and c["icl_score"] == r["icl_score"]
    for k, h in enumerate(r["heads"]):
        assert abs(c["previous_token"][k] - h["previous_token_score"]) <= 1e-6 * max(1, abs(h["previous_token_score"]))
        assert abs(c["induction"][k] - h["induction_score"]) <= 1e-6 * max(1, abs(h["induction_score"]))
    assert c["holds"] == r["holds"]
PY
echo "ok"
