#!/usr/bin/env bash
# tests/test_discover_cli.sh -- `headscope discover` and `headscope
# faithfulness` as a user drives them, on the committed small checkpoint and
# circuit's 192 held-out crosser/crossed pairs: --help; the output folder
# (graph.json, faithfulness.json, circuit.dot, roc.json, all listed) whose
# graph.json passes the stand-in of EAP-IG's own reader (tests/py/
# eapig_graph_check.py: Graph.from_json's names and keys, to_json's bytes);
# the curve holds the empty circuit (f = 0) and the full one (f = 1); 1 and 2
# threads print the same JSON; `faithfulness` on discover's graph.json gives
# discover's circuit faithfulness; ACDC tries or skips every edge once; a set
# whose clean and corrupted prompts coincide says faithfulness is undefined
# (usable false, null, no NaN); EAP-IG into a folder (graph.json, the circuit
# and faithfulness_curve figures) agreeing with exact patching on the
# strongest edge; bad input one line each (kl with eap, --ig-steps misused,
# option clashes, a graph of unknown names or another shape, a truth file
# naming an edge the graph lacks, resample without corrupted prompts).
# Run as: bash tests/test_discover_cli.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_discover_cli.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_discover_cli.sh BUILD_DIR HEADSCOPE_BIN}
mkdir -p "${HS_TEST_TMP:-$BUILD_DIR/testtmp}"
TMP=$(mktemp -d "${HS_TEST_TMP:-$BUILD_DIR/testtmp}/discover_cli.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
PY=/usr/bin/python3
# shellcheck source=tests/cli_lib.sh
source "$(dirname "$0")/cli_lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)

M="$TMP/m.safetensors"
cp "$HERE/checkpoint/circuit_tiny.safetensors" "$M"
for cmd in discover faithfulness; do
    run 0 "help_$cmd" "$cmd" --help
    grep -q "^usage: headscope $cmd" "$TMP/help_$cmd.out" || fail "$cmd --help: no usage line"
done
run 0 ds train --steps 1 --eval-every 0 --dataset "$TMP/ds.txt" --out "$TMP/ds.safetensors"
"$PY" "$HERE/py/winograd_pairs.py" "$TMP/ds.txt" "$TMP/pairs.jsonl"
P="$TMP/pairs.jsonl"

# the folder, with a truth (the path-patching edges circuit reports at layer 0 -> 1, and the direct paths)
printf '# a hand-written circuit\na0.h3->a1.h3<q>\na0.h3->a1.h0<q>\ninput->a0.h3<k>\na1.h3->logits\nm1->logits\n' >"$TMP/truth.txt"
run 0 d1 discover --model "$M" --data "$P" --top 20 --truth "$TMP/truth.txt" --out "$TMP/d1"
check_folder "$TMP/d1" graph.json faithfulness.json circuit.dot roc.json
"$PY" "$HERE/py/eapig_graph_check.py" "$TMP/d1/graph.json" >/dev/null || fail "graph.json fails EAP-IG's reader"
grep -q '^digraph circuit {$' "$TMP/d1/circuit.dot" || fail "circuit.dot is not a digraph"
if command -v dot >/dev/null; then dot -Tsvg "$TMP/d1/circuit.dot" >/dev/null || fail "dot rejects circuit.dot"; fi
"$PY" - "$TMP/d1" <<'PYEOF' || fail "faithfulness.json / roc.json"
import json, sys
d = sys.argv[1]
f = json.load(open(d + "/faithfulness.json"))
pts = f["points"]
assert len(pts) == 11 and pts[0]["fraction"] == 0 and pts[0]["edges"] == 0 and pts[0]["faithfulness"] == 0, pts[0]
assert pts[-1]["fraction"] == 1 and pts[-1]["edges"] == 110 and pts[-1]["faithfulness"] == 1, pts[-1]
assert [p["top_n"] for p in pts[1:]] == [0, 0, 0, 1, 2, 5, 11, 22, 55, 110]
assert f["usable"] is True and 0 < f["cpr"] < 1.5 and f["cmd"] >= 0
cpr = sum((b["fraction"] - a["fraction"]) * (a["faithfulness"] + b["faithfulness"]) / 2 for a, b in zip(pts[1:], pts[2:]))
assert abs(cpr - f["cpr"]) < 1e-6, (cpr, f["cpr"])
assert f["circuit"]["edges"] <= 20 and f["circuit"]["chosen_by"] == "the top 20 edges by |score|"
r = json.load(open(d + "/roc.json"))
assert r["edges"]["positives"] == 5 and r["edges"]["negatives"] == 105
assert 0.5 < r["edges"]["auc"] <= 1 and r["edges"]["tpr"][0] == 0 and r["edges"]["fpr"][-1] == 1
g = json.load(open(d + "/graph.json"))
assert sum(e["in_graph"] for e in g["edges"].values()) == f["circuit"]["edges"]
PYEOF

# --json: 1 and 2 threads the same; faithfulness of discover's graph = discover's circuit
run 0 j1 discover --model "$M" --data "$P" --top 20 --json --threads 1
run 0 j2 discover --model "$M" --data "$P" --top 20 --json --threads 2
cmp -s "$TMP/j1.out" "$TMP/j2.out" || fail "discover --json differs between 1 and 2 threads"
run 0 f1 faithfulness --model "$M" --data "$P" --graph "$TMP/d1/graph.json" --json
run 0 f_out faithfulness --model "$M" --data "$P" --graph "$TMP/d1/graph.json" --out "$TMP/f1"
check_folder "$TMP/f1" faithfulness.json
"$PY" - "$TMP/j1.out" "$TMP/f1.out" <<'PYEOF' || fail "faithfulness differs from discover"
import json, sys
d, f = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert d["circuit"]["faithfulness"] == f["circuit"]["faithfulness"], (d["circuit"], f["circuit"])
assert d["circuit"]["edges"] == f["circuit"]["edges"] == f["circuit"]["edges_in_file"]
assert d["metric_full"] == f["metric_full"] and d["metric_empty"] == f["metric_empty"]
PYEOF

# EAP-IG into a folder: graph.json (EAP-IG's reader), the circuit and faithfulness_curve figures (PNG, SVG,
# JSON), faithfulness.json; its scores against EAP's and the exact ones (same edges, same signs at the top)
run 0 ig discover --model "$M" --data "$P" --method eap-ig --ig-steps 5 --out "$TMP/ig" --format png,svg,json
check_folder "$TMP/ig" graph.json faithfulness.json circuit.dot circuit.png circuit.svg circuit.json \
    faithfulness_curve.png faithfulness_curve.svg faithfulness_curve.json
"$PY" "$HERE/py/eapig_graph_check.py" "$TMP/ig/graph.json" >/dev/null || fail "eap-ig graph.json fails EAP-IG's reader"
grep -q '^EAP-IG (Hanna et al. 2024), 5 steps from the corrupted to the clean input (alphas k/m, k = 0..m-1): 36 forward and 30 backward passes$' \
    "$TMP/ig.out" || fail "no EAP-IG line (6 chunks of 32 prompts: a clean forward and 5 steps each)"
# --ablation zero | mean: EAP and EAP-IG score (a_ablated - a_clean), not the corrupted partners' difference;
# --ig-alphas right steps k = 1..m (one more forward a chunk: the corrupted run and the clean end)
for a in resample zero mean; do
    run 0 "eap_$a" discover --model "$M" --data "$P" --method eap --ablation "$a" --json
    run 0 "ig_$a" discover --model "$M" --data "$P" --method eap-ig --ig-steps 3 --ablation "$a" --json
done
run 0 ig_right discover --model "$M" --data "$P" --method eap-ig --ig-steps 3 --ig-alphas right --json
run 2 alphas_eap discover --model "$M" --data "$P" --method eap --ig-alphas right
one_line alphas_eap "--ig-alphas is for --method eap-ig"
run 2 alphas_bad discover --model "$M" --data "$P" --method eap-ig --ig-alphas middle
one_line alphas_bad "--ig-alphas takes left, right, not 'middle'"
"$PY" - "$TMP" <<'PYEOF' || fail "discover eap --ablation"
import json, sys
t = sys.argv[1]
j = {n: json.load(open("%s/%s.out" % (t, n))) for n in
     ("eap_resample", "eap_zero", "eap_mean", "ig_resample", "ig_zero", "ig_mean", "ig_right")}
top = lambda x: [(e["edge"], e["score"]) for e in x["strongest_edges"]]
for m in ("eap", "ig"):
    r, z, mu = (top(j["%s_%s" % (m, a)]) for a in ("resample", "zero", "mean"))
    assert r != z and r != mu and z != mu, (m, r[:2], z[:2], mu[:2])
    assert j["%s_zero" % m]["ablation"] == "zero"
assert j["eap_zero"]["forwards"] == 6 and j["eap_mean"]["forwards"] == 12 and j["eap_resample"]["forwards"] == 12
assert j["ig_zero"]["forwards"] == 6 * 4 and j["ig_mean"]["forwards"] == 6 * 5, (j["ig_zero"]["forwards"], j["ig_mean"]["forwards"])
assert j["ig_right"]["forwards"] == 6 * 5 and j["ig_right"]["ig_alphas"].startswith("right"), j["ig_right"]
assert j["ig_resample"]["ig_alphas"].startswith("left") and top(j["ig_right"]) != top(j["ig_resample"])
PYEOF
run 0 igj discover --model "$M" --data "$P" --method eap-ig --json --threads 1
run 0 eapj discover --model "$M" --data "$P" --method eap --json --threads 2
"$PY" - "$TMP/ig/graph.json" "$TMP/d1/graph.json" "$TMP/igj.out" "$TMP/eapj.out" "$TMP/ig/faithfulness.json" \
    "$TMP/ig/circuit.json" <<'PYEOF' || fail "eap-ig folder"
import json, struct, sys
ig, ex, rj, ej, fj, cj = (json.load(open(a)) for a in sys.argv[1:7])
assert rj["method"] == "eap-ig" and rj["ig_steps"] == 5 and rj["backwards"] == 5 * rj["forwards"] // 6, rj
assert ej["method"] == "eap" and "ig_steps" not in ej and ej["backwards"] * 2 == ej["forwards"], ej
assert set(ig["edges"]) == set(ex["edges"]) and len(ig["edges"]) == 110
top = lambda g: sorted(g["edges"], key=lambda k: -abs(g["edges"][k]["score"]))
# the folder's scores are the --json run's (1 thread vs 2 in the folder run; graph.json holds them in MIB's
# sign and scale, -score / 20, as float32, as EAP-IG's torch tensors do; the report prints float32's digits)
f32 = lambda x: struct.unpack("f", struct.pack("f", x))[0]
assert [e["edge"] for e in rj["strongest_edges"]] == top(ig)[:10]
for e in rj["strongest_edges"]:
    assert abs(ig["edges"][e["edge"]]["score"] - f32(-e["score"] / 20)) <= 1e-6 * abs(e["score"] / 20), e
# EAP-IG and exact patching agree on the strongest edge and its sign
t_ig, t_ex = top(ig)[0], top(ex)[0]
assert t_ig == t_ex and (ig["edges"][t_ig]["score"] > 0) == (ex["edges"][t_ex]["score"] > 0), (t_ig, t_ex)
assert fj["points"][0]["faithfulness"] == 0 and fj["points"][-1]["faithfulness"] == 1
assert cj["title"].startswith("EAP-IG circuit"), cj.get("title")
PYEOF

# ACDC: every edge tried once or skipped; its circuit is what it kept, pruned
run 0 acdc discover --model "$M" --data "$P" --method acdc --metric kl --tau 0.05 --json
"$PY" - "$TMP/acdc.out" <<'PYEOF' || fail "acdc report"
import json, sys
r = json.load(open(sys.argv[1]))
a = r["acdc"]
assert a["trials"] + a["skipped"] == 110 and a["forwards"] == 6 * a["trials"], a
assert r["circuit"]["edges"] <= a["kept"] and r["metric_full"] == 0, r["circuit"]
assert r["circuit"]["chosen_by"] == "ACDC with tau 0.05"
PYEOF
run 0 zero discover --model "$M" --data "$P" --ablation zero --metric prob-diff --threshold 0.01
run 0 mean faithfulness --model "$M" --data "$P" --graph "$TMP/d1/graph.json" --ablation mean --metric kl

# clean = corrupted: faithfulness undefined, said, no NaN
"$PY" -c "
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line); o['corrupted'] = o['prompt']; o['wrong'] = 'street' if o['answer'] != 'street' else 'animal'
    print(json.dumps(o))" "$P" >"$TMP/same.jsonl"
run 0 same discover --model "$M" --data "$TMP/same.jsonl" --json
grep -q 'note: faithfulness is undefined' "$TMP/same.err" || fail "no note for undefined faithfulness"
grep -qi 'nan' "$TMP/same.out" && fail "NaN in the JSON"
"$PY" - "$TMP/same.out" <<'PYEOF' || fail "undefined faithfulness"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["usable"] is False and "0 / 0" in r["why_not_usable"]
assert r["circuit"]["faithfulness"] is None and r["faithfulness_curve"]["cpr"] is None
PYEOF

# a gap small against the curve's spread (issue 34; patch's hs_patch_usable rule): the first 32 pairs, every
# other one with answer and wrong exchanged, give m(M) -0.0228 and m(empty) -0.0414 (a gap of 0.019) while the
# curve's m(C) spread over 0.055 (normalised, -1.26 to 1.69): not usable, with why, in the JSON, a note and the
# summary; no faithfulness number printed
"$PY" -c "
import json, sys
for k, line in enumerate(open(sys.argv[1]).readlines()[:32]):
    o = json.loads(line)
    if k % 2: o['answer'], o['wrong'] = o['wrong'], o['answer']
    print(json.dumps(o))" "$P" >"$TMP/near.jsonl"
run 0 near discover --model "$M" --data "$TMP/near.jsonl" --json
grep -q 'note: faithfulness is not usable: m(M) -0.0228 and m(empty) -0.0414 (mean logit-diff) are too close' \
    "$TMP/near.err" || fail "near: no note: $(cat "$TMP/near.err")"
"$PY" - "$TMP/near.out" <<'PYEOF' || fail "small gap not flagged"
import json, sys
r = json.load(open(sys.argv[1]))
c = r["faithfulness_curve"]
ms = [p["metric"] for p in c["points"]]
gap = abs(r["metric_full"] - r["metric_empty"])
assert 0 < gap < 0.03 and max(ms) - min(ms) > 2 * gap, (gap, ms)  # the case the test is about
assert r["usable"] is False and "too close: a gap of 0.0186" in r["why_not_usable"], r.get("why_not_usable")
assert c["usable"] is False and c["cpr"] is None and all(p["faithfulness"] is None for p in c["points"]), c
assert r["circuit"]["faithfulness"] is None, r["circuit"]
PYEOF
run 0 near_txt discover --model "$M" --data "$TMP/near.jsonl"
# answer and wrong swapped on every prompt: m(M) below m(empty), said in a note (a new user's trial: a
# faithfulness of 1.05 and a curve to 1.66 came without a hint); none on the set the right way round
"$PY" -c "
import json, sys
for line in open(sys.argv[1]).readlines()[:32]:
    o = json.loads(line); o['answer'], o['wrong'] = o['wrong'], o['answer']
    print(json.dumps(o))" "$P" >"$TMP/swapped.jsonl"
run 0 swapped discover --model "$M" --data "$TMP/swapped.jsonl" --method eap --json
has '^headscope discover: note: m(M) -[0-9.]* is below m(empty) [-+][0-9.]* (mean logit-diff): the full model favours' \
    "$TMP/swapped.err" || fail "swapped: no note: $(cat "$TMP/swapped.err")"
! has 'is below m(empty)' "$TMP/ig.err" || fail "ig: a wrong-way note on the right-way set"
grep -q '^m(M) -0.0228 (the model), m(empty) -0.0414 (every edge ablated); faithfulness not usable: ' \
    "$TMP/near_txt.out" || fail "near: summary line: $(head -3 "$TMP/near_txt.out")"
grep -q 'faithfulness undefined$' "$TMP/near_txt.out" || fail "near: a faithfulness number printed"

# --select greedy: the circuit in graph.json is EAP-IG's apply_greedy of its own scores (a Python heap here, ties
# to the canonical order), pruned; both curves say how they chose
run 0 greedy discover --model "$M" --data "$P" --method eap-ig --select greedy --top 7 --out "$TMP/greedy" --format json
run 0 fgreedy faithfulness --model "$M" --data "$P" --graph "$TMP/greedy/graph.json" --select greedy --json
"$PY" - "$TMP/greedy" "$TMP/fgreedy.out" <<'PYEOF' || fail "discover --select greedy"
import heapq, json, re, sys
d, fj = sys.argv[1], json.load(open(sys.argv[2]))
g = json.load(open(d + "/graph.json"))
L, H = g["cfg"]["n_layers"], g["cfg"]["n_heads"]
nodes = ["input"] + [n for l in range(L) for n in ["a%d.h%d" % (l, h) for h in range(H)] + ["m%d" % l]] + ["logits"]
recvs = [r for l in range(L) for r in ["a%d.h%d<%s>" % (l, h, x) for h in range(H) for x in "qkv"] + ["m%d" % l]]
recvs.append("logits")
edges = {}
for name, e in g["edges"].items():
    u, v = name.split("->")
    edges[name] = (-abs(e["score"]), recvs.index(v), nodes.index(u), u, re.sub("<.>$", "", v))
heap = [k for k in edges.values() if k[4] == "logits"]
heapq.heapify(heap)
joined, taken = {"logits"}, set()
for _ in range(7):  # apply_greedy(7)
    k = heapq.heappop(heap)
    taken.add(k)
    if k[3] not in joined:
        joined.add(k[3])
        for k2 in edges.values():
            if k2[4] == k[3]:
                heapq.heappush(heap, k2)
fwd, bwd = {"input"}, {"logits"}  # prune: on a path from input to logits
for k in sorted(taken, key=lambda k: k[1]):
    if k[3] in fwd: fwd.add(k[4])
for k in sorted(taken, key=lambda k: -k[1]):
    if k[4] in bwd: bwd.add(k[3])
want = {n for n, k in edges.items() if k in taken and k[3] in fwd and k[4] in bwd}
got = {n for n, e in g["edges"].items() if e["in_graph"]}
assert got == want and len(got) > 0, (got, want)
f = json.load(open(d + "/faithfulness.json"))
assert f["selection"] == "greedy" and f["circuit"]["edges"] == len(want), f["circuit"]
assert f["circuit"]["chosen_by"] == "7 edges grown greedily from logits by |score|", f["circuit"]
assert fj["selection"] == "greedy" and fj["points"][-1]["faithfulness"] == 1, fj["points"][-1]
PYEOF

# bad input, one line each
run 2 greedythr discover --model "$M" --data "$P" --select greedy --threshold 0.1
one_line greedythr "--select greedy chooses N edges (--top N), not a threshold"
run 2 selname faithfulness --model "$M" --data "$P" --graph "$TMP/d1/graph.json" --select best
one_line selname "--select takes topn, greedy or signed, not 'best'"
run 2 eapkl discover --model "$M" --data "$P" --method eap --metric kl
one_line eapkl "--metric kl with --method eap scores every edge 0 (the KL divergence's gradient at the clean run is exactly 0); use --method eap-ig"
run 2 igsteps discover --model "$M" --data "$P" --ig-steps 5
one_line igsteps "--ig-steps is for --method eap-ig"
run 2 igzero discover --model "$M" --data "$P" --method eap-ig --ig-steps 0
one_line igzero "--ig-steps needs a count in 1..1000, got '0'"
run 2 method discover --model "$M" --data "$P" --method greedy
one_line method "--method takes exact, acdc, eap, eap-ig, not 'greedy'"
run 2 both discover --model "$M" --data "$P" --top 3 --threshold 0.1
one_line both "give --top or --threshold, not both"
run 2 tau discover --model "$M" --data "$P" --tau 0.1
one_line tau "--tau is for --method acdc"
run 2 absthr discover --model "$M" --data "$P" --method eap --abs-threshold
one_line absthr "--abs-threshold and --acdc-order are for --method acdc"
run 2 acdcord discover --model "$M" --data "$P" --method acdc --acdc-order sideways
one_line acdcord "--acdc-order takes acdc, headscope, not 'sideways'"
run 0 acdc_old discover --model "$M" --data "$P" --method acdc --tau 0.05 --abs-threshold --acdc-order headscope --json
run 0 acdc_new discover --model "$M" --data "$P" --method acdc --tau 0.05 --json
"$PY" - "$TMP/acdc_old.out" "$TMP/acdc_new.out" <<'PYEOF' || fail "acdc rule and order in the report"
import json, sys
o, n = (json.load(open(a))["acdc"] for a in sys.argv[1:3])
assert o["order"] == "headscope" and o["rule"].startswith("remove when |change|"), o
assert n["order"] == "acdc" and "grows less than tau" in n["rule"], n
assert (o["kept"], n["kept"]) == (35, 37), (o["kept"], n["kept"])  # the order matters on circuit_tiny
PYEOF
run 2 acdctop discover --model "$M" --data "$P" --method acdc --top 3
one_line acdctop "ACDC's circuit is what it keeps"
run 2 twograph faithfulness --model "$M" --data "$P" --graph "$TMP/d1/graph.json" --graph "$TMP/ig/graph.json"
one_line twograph "--graph given twice"
run 2 nograph faithfulness --model "$M" --data "$P"
one_line nograph "--graph FILE is required"
sed 's/"a0.h1": {/"a0.h9": {/' "$TMP/d1/graph.json" >"$TMP/badnode.json"
run 1 badnode faithfulness --model "$M" --data "$P" --graph "$TMP/badnode.json"
one_line badnode "badnode.json: unknown node 'a0.h9' (this model: 2 layers x 4 heads, MLPs)"
sed 's/"n_heads": 4/"n_heads": 12/' "$TMP/d1/graph.json" >"$TMP/shape.json"
run 1 shape faithfulness --model "$M" --data "$P" --graph "$TMP/shape.json"
one_line shape "shape.json: the graph is for another model shape: cfg n_heads is 12, this model's 4"
printf 'input->a0.h3<k>\na0.h3->a0.h1<q>\n' >"$TMP/badtruth.txt"
run 1 badtruth discover --model "$M" --data "$P" --truth "$TMP/badtruth.txt"
one_line badtruth "badtruth.txt:2: 'a0.h3->a0.h1<q>' is not an edge of this model's graph"
printf '{"prompt": "the animal did not", "answer": "cross", "wrong": "not"}\n' >"$TMP/nocorr.jsonl"
run 1 nocorr discover --model "$M" --data "$TMP/nocorr.jsonl"
one_line nocorr 'resample ablation needs each prompt.s "corrupted" partner'
run 0 nocorr_mean discover --model "$M" --data "$TMP/nocorr.jsonl" --ablation mean --top 3
echo "test_discover_cli: ok"
