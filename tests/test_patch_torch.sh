#!/usr/bin/env bash
# tests/test_patch_torch.sh BUILD_DIR HEADSCOPE_BIN -- `patch --acts z --by
# head` on a small random Hugging Face GPT-2 folder (tests/py/make_hf_gpt2.py)
# against PyTorch patching head by head with full forwards (bench/gpt2_peer.py's
# forward, float32; TransformerLens' get_act_patch_attn_head_out_all_pos): the
# clean and corrupted LDs and every head's normalised cell agree to 1e-4
# relative; the cells of 20 prompts (read from one position, whole chunk
# padding rule) and of 17 (a short chunk) are the same as those of each set's
# head run alone through the default --by (bit for bit).
set -euo pipefail
HS=${2:?usage: test_patch_torch.sh BUILD_DIR HEADSCOPE_BIN}
PY=/usr/bin/python3
mkdir -p "${HS_TEST_TMP:-${1}/testtmp}"
TMP=$(mktemp -d "${HS_TEST_TMP:-${1}/testtmp}/patch_torch.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
HERE=$(cd "$(dirname "$0")" && pwd)
case "$HS" in /*) ;; *) HS="$PWD/$HS" ;; esac
# shellcheck source=cli_lib.sh
. "$HERE/cli_lib.sh"
"$PY" -c "import torch" 2>/dev/null || { echo "skip: no torch for $PY"; exit 0; }

"$PY" "$HERE/py/make_hf_gpt2.py" "$TMP/fx"
FX=$TMP/fx/base
"$PY" -c "import sys; print('\n'.join('w%d' % i for i in range(41)))" >"$TMP/v41.txt"
# 20 prompts of 6 words, the corrupted one differing in its 3rd and 5th word
"$PY" - "$TMP/set.jsonl" <<'PYEOF'
import json, random, sys
r = random.Random(3)
with open(sys.argv[1], "w") as f:
    for i in range(20):
        w = ["w%d" % r.randrange(1, 41) for _ in range(6)]
        c = list(w)
        c[2], c[4] = "w%d" % r.randrange(1, 41), "w%d" % r.randrange(1, 41)
        a, b = r.sample(range(1, 41), 2)
        f.write(json.dumps({"prompt": " ".join(w), "corrupted": " ".join(c), "answer": "w%d" % a,
                            "wrong": "w%d" % b}) + "\n")
PYEOF
head -17 "$TMP/set.jsonl" >"$TMP/set17.jsonl"
V=(--vocab "$TMP/v41.txt")
run 0 ph patch --model "$FX" "${V[@]}" --data "$TMP/set.jsonl" --acts z --by head --json
run 0 pb patch --model "$FX" "${V[@]}" --data "$TMP/set.jsonl" --acts z --json
run 0 ph17 patch --model "$FX" "${V[@]}" --data "$TMP/set17.jsonl" --acts z --by head --json --threads 1
run 0 pb17 patch --model "$FX" "${V[@]}" --data "$TMP/set17.jsonl" --acts z --json --threads 2
"$PY" - "$HERE/../bench" "$FX" "$TMP" <<'PYEOF' || fail "patch --by head differs from PyTorch"
import json, sys
sys.path.insert(0, sys.argv[1])
import torch
import gpt2_peer as peer
torch.set_num_threads(1)
cfg, wt = peer.load(sys.argv[2])
t = sys.argv[3]
# a word vocabulary: id = the word's line ("wN" -> N), no BOS
rows = [json.loads(l) for l in open(t + "/set.jsonl")]
ids = lambda s: [int(w[1:]) for w in s.split()]
clean = torch.tensor([ids(r["prompt"]) for r in rows]); corr = torch.tensor([ids(r["corrupted"]) for r in rows])
ans = torch.tensor([ids(r["answer"])[0] for r in rows]); wrong = torch.tensor([ids(r["wrong"])[0] for r in rows])
def ld(lg):
    last = lg[:, -1].double()
    return (last.gather(1, ans[:, None]) - last.gather(1, wrong[:, None])).mean().item()
with torch.no_grad():
    lc, cc = peer.forward(cfg, wt, clean)
    lx, _ = peer.forward(cfg, wt, corr)
    top, base = ld(lc), ld(lx)
    h = json.load(open(t + "/ph.out"))
    assert abs(h["ld_clean"] - top) <= 1e-4 * max(1.0, abs(top)), (h["ld_clean"], top)
    assert abs(h["ld_corrupted"] - base) <= 1e-4 * max(1.0, abs(base)), (h["ld_corrupted"], base)
    z = h["acts"]["z"]["metric"]
    L, H = cfg["n_layer"], cfg["n_head"]
    worst, moved = 0.0, 0
    for layer in range(L):
        for hh in range(H):
            def hook(li, zz, layer=layer, hh=hh):
                if li != layer:
                    return zz
                zz = zz.clone()
                zz[:, hh] = cc["h.%d.z" % layer][:, hh]
                return zz
            lp, _ = peer.forward(cfg, wt, corr, hook)
            want = (ld(lp) - base) / (top - base)
            got = z[layer][hh]
            moved += abs(want) > 1e-3
            worst = max(worst, abs(got - want) / max(abs(want), 1e-2))
    assert moved > 0, "no head moved the metric: the comparison would be empty"
    assert worst < 1e-4, worst
print("ok: %d heads, largest relative difference %.2e" % (L * H, worst))
PYEOF
"$PY" - "$TMP" <<'PYEOF' || fail "patch --by head differs from the default run's cells"
import json, sys
t = sys.argv[1]
for a, b in (("ph", "pb"), ("ph17", "pb17")):
    x, y = json.load(open("%s/%s.out" % (t, a))), json.load(open("%s/%s.out" % (t, b)))
    assert x["acts"]["z"]["metric"] == y["acts"]["z"]["metric"], (a, b)
    # the LDs reported: --by head's from the two read columns alone (its base
    # runs make no logits), the default's from every logit: float32 rounding
    for k in ("ld_clean", "ld_corrupted"):
        assert abs(x[k] - y[k]) <= 1e-6 * max(1.0, abs(y[k])), (a, b, k, x[k], y[k])
PYEOF
echo "ok: patch --by head equals PyTorch's head-by-head patching"
