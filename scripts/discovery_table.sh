#!/usr/bin/env bash
# scripts/discovery_table.sh -- issue 25's ground truth on trained models:
# circuit discovery (EAP-IG) beside the circuits `circuit` verifies by hand.
#   (2) the five induction models of the README's induction table (`headscope
#       train --task induction --d-mlp 0 --layers 2 --seed S`, S = 0..N-1):
#       are the previous-token -> induction-head edges `circuit` names in
#       EAP-IG's top 5 head->head edges, and has the circuit at MIB's 5 % of
#       the edges faithfulness >= 0.8? Both selections of the 5 % circuit:
#       top-n by |score| (MIB's) and grown greedily from logits (EAP-IG's
#       Graph.apply_greedy; the section's "circuit_greedy").
#   (3) the default Winograd model (`headscope train --seed 0`) over its
#       held-out crosser/crossed pairs: are EAP-IG's strongest head->head
#       edges the path-patching edges `circuit` reports?
# Each model is trained (or reused from --workdir), then `headscope circuit
# --json` (its report's "discovery" section: EAP-IG, 5 steps, on the check's
# own prompt set, with the edges its path patching names). On the Winograd
# model `headscope discover --method eap-ig` and `--method exact` also run on
# the held-out pairs (tests/py/winograd_pairs.py, the same 192 prompts): the
# command's EAP-IG ranking must be the circuit section's, and exact edge
# patching ranks the named edges without approximation. (The induction
# check's prompt set, corrupted partners built from held-out sequences, is
# not written to a file, so `discover` does not run on it here.) Writes
# bench/results/discovery_table.{json,md} and prints the markdown.
#
#   scripts/discovery_table.sh [--seeds N] [-j JOBS] [--workdir DIR] [--out DIR]
#
# Runs are independent processes, JOBS at a time (default 2), one thread each.
# A rerun with the same --workdir keeps the trained models and reruns the rest.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HEADSCOPE="${HEADSCOPE:-$ROOT/build/headscope}"
PY=/usr/bin/python3
SEEDS=5
JOBS=2
WORK=""
OUT="$ROOT/bench/results"
while [ $# -gt 0 ]; do
    case "$1" in
        --seeds) SEEDS="$2"; shift ;;
        -j) JOBS="$2"; shift ;;
        --workdir) WORK="$2"; shift ;;
        --out) OUT="$2"; shift ;;
        -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "discovery_table.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[ -x "$HEADSCOPE" ] || { echo "discovery_table.sh: $HEADSCOPE not built (bash scripts/build.sh)" >&2; exit 1; }
[ -n "$WORK" ] || WORK="$(mktemp -d /tmp/discovery_table.XXXXXX)"
mkdir -p "$WORK" "$OUT"

: > "$WORK/jobs.txt"
for ((s = 0; s < SEEDS; s++)); do echo "ind $s" >> "$WORK/jobs.txt"; done
echo "wg 0" >> "$WORK/jobs.txt"
cat > "$WORK/job.sh" <<EOF
#!/usr/bin/env bash
set -uo pipefail
kind=\$1; s=\$2; base="$WORK/\${kind}_s\${s}"
export OPENBLAS_NUM_THREADS=1
if [ ! -s "\$base.safetensors" ]; then
    if [ "\$kind" = ind ]; then args=(--task induction --d-mlp 0 --layers 2); else args=(); fi
    "$HEADSCOPE" train "\${args[@]}" --seed "\$s" --threads 1 --out "\$base.safetensors" \\
        > "\$base.train.out" 2> "\$base.train.log" || { echo "FAILED training \$base" >&2; exit 0; }
fi
"$HEADSCOPE" circuit --model "\$base.safetensors" --json --threads 1 > "\$base.circuit.json" 2> "\$base.circuit.err" \\
    || { echo "FAILED circuit \$base" >&2; exit 0; }
if [ "\$kind" = wg ]; then
    rm -rf "\$base".eap-ig.* "\$base".exact.* "$WORK/ds.safetensors" "$WORK/ds.txt" "$WORK/pairs.jsonl"
    "$HEADSCOPE" train --steps 1 --eval-every 0 --dataset "$WORK/ds.txt" --out "$WORK/ds.safetensors" \\
        > /dev/null 2>&1 || { echo "FAILED dataset dump" >&2; exit 0; }
    "$PY" "$ROOT/tests/py/winograd_pairs.py" "$WORK/ds.txt" "$WORK/pairs.jsonl"
    for method in eap-ig exact; do
        for sel in topn greedy; do
            "$HEADSCOPE" discover --model "\$base.safetensors" --data "$WORK/pairs.jsonl" --method "\$method" \\
                --select "\$sel" --out "\$base.\$method.\$sel" --format json --threads 1 \\
                > "\$base.\$method.\$sel.out" 2>&1 || { echo "FAILED discover \$method \$sel \$base" >&2; exit 0; }
        done
    done
fi
echo "done \$kind seed \$s" >&2
EOF
chmod +x "$WORK/job.sh"
echo "discovery_table: $(wc -l < "$WORK/jobs.txt") models, $JOBS at a time, work dir $WORK" >&2
xargs -P "$JOBS" -L 1 "$WORK/job.sh" < "$WORK/jobs.txt"

"$PY" - "$WORK" "$OUT" "$ROOT" <<'PYEOF'
import glob, json, os, re, subprocess, sys
work, out, root = sys.argv[1:4]
HH = re.compile(r"^a\d+\.h\d+->a\d+\.h\d+<[qkv]>$")

def hh_ranking(graph):
    """head->head edges of a graph.json by |score| descending, ties in the file's (canonical) order"""
    e = [(k, v["score"]) for k, v in graph["edges"].items() if HH.match(k)]
    return [k for k, _ in sorted(e, key=lambda kv: -abs(kv[1]))]

def first_at(points, f_min):
    for p in points[1:]:
        if p["faithfulness"] is not None and p["faithfulness"] >= f_min:
            return p["fraction"]
    return None

rows = []
for rep in sorted(glob.glob(os.path.join(work, "*_s*.circuit.json"))):
    base = rep[:-len(".circuit.json")]
    kind, seed = re.search(r"(ind|wg)_s(\d+)$", base).groups()
    r = json.load(open(rep))
    d = r["discovery"]
    named = [e["edge"] for e in d["path_patching_edges"]["edges"]]
    pts = d["faithfulness_curve"]["points"]
    ag = d["agreement"]
    row = {
        "task": "induction" if kind == "ind" else "winograd", "seed": int(seed),
        "model": os.path.basename(base) + ".safetensors",
        "holds": r["holds"] if kind == "ind" else r["verdict"]["step2"]["holds"],
        "prompts": d["prompts"], "tokens": d["tokens"], "n_edges": d["n_edges"],
        "metric_full": d["metric_full"], "metric_empty": d["metric_empty"],
        "named_by": d["path_patching_edges"]["named_by"], "named": d["path_patching_edges"]["edges"],
        "eap_ig_head_to_head": d["head_to_head"], "agreement": ag,
        "circuit_5pct": d["circuit"], "circuit_5pct_greedy": d["circuit_greedy"], "faithfulness_points": pts,
        "cpr": d["faithfulness_curve"]["cpr"], "cmd": d["faithfulness_curve"]["cmd"],
        "first_size_f_ge_0.8": first_at(pts, 0.8),
        "faithfulness_points_greedy": d["faithfulness_curve_greedy"]["points"],
        "cpr_greedy": d["faithfulness_curve_greedy"]["cpr"],
        "first_size_f_ge_0.8_greedy": first_at(d["faithfulness_curve_greedy"]["points"], 0.8),
    }
    if kind == "ind":
        row["criterion_named_in_top5"] = ag["named"] > 0 and ag["agree"] == ag["named"]
        row["criterion_f5_ge_0.8"] = d["circuit"]["faithfulness"] is not None and d["circuit"]["faithfulness"] >= 0.8
        row["criterion_f5_greedy_ge_0.8"] = (d["circuit_greedy"]["faithfulness"] is not None and
                                             d["circuit_greedy"]["faithfulness"] >= 0.8)
    else:
        row["criterion_strongest_are_named"] = ag["named"] > 0 and ag["agree"] == ag["named"] == ag["top_k"]
        ig = json.load(open(base + ".eap-ig.topn/graph.json"))
        ex = json.load(open(base + ".exact.topn/graph.json"))
        ig_rank, ex_rank = hh_ranking(ig), hh_ranking(ex)
        top = [e["edge"] for e in d["head_to_head"]]
        row["discover_eap_ig_top_head_to_head"] = ig_rank[:len(top)]
        row["discover_matches_circuit_section"] = ig_rank[:len(top)] == top
        row["exact_head_to_head_rank_of_named"] = {e: ex_rank.index(e) + 1 for e in named}
        row["exact_top_head_to_head"] = ex_rank[:max(ag["top_k"], 1)]
        exf = json.load(open(base + ".exact.topn/faithfulness.json"))
        row["exact_ranking_5pct"] = next(p for p in exf["points"] if p["fraction"] == 0.05)
        row["exact_ranking_first_size_f_ge_0.8"] = first_at(exf["points"], 0.8)
        for m in ("eap-ig", "exact"):  # the greedy curves of `discover --select greedy`
            gf = json.load(open(base + "." + m + ".greedy/faithfulness.json"))
            assert gf["selection"] == "greedy"
            row[m + "_greedy_5pct"] = next(p for p in gf["points"] if p["fraction"] == 0.05)
            row[m + "_greedy_first_size_f_ge_0.8"] = first_at(gf["points"], 0.8)
            row[m + "_greedy_cpr"] = gf["cpr"]
    rows.append(row)
rows.sort(key=lambda x: (x["task"], x["seed"]))
commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
json.dump({"runs": rows, "commit": commit}, open(os.path.join(out, "discovery_table.json"), "w"), indent=1)

f3 = lambda v: "-" if v is None else "%.3f" % v
md_cell = lambda t: t.replace("|", "\\|")
pct = lambda v: "-" if v is None else "%g%%" % (100 * v)
yes = lambda b: "yes" if b else "**no**"
lines = ["Issue 25's ground truth on trained models (`scripts/discovery_table.sh`, commit %s): EAP-IG (5 steps, "
         "logit difference, resample ablation) on each `circuit` check's own prompt set (its report's \"discovery\" "
         "section)." % commit, "",
         "Induction models (`train --task induction --d-mlp 0 --layers 2 --seed S`; 128 held-out sequences, "
         "81 edges):", "",
         "| seed | circuit | edges circuit names (path patching; rank among EAP-IG's head->head edges) | EAP-IG's top 5 head->head edges (score) | named in top 5 "
         "| f at 5 %, top-n (edges asked / kept) | f at 5 %, greedy (edges asked / kept) | f >= 0.8 at 5 %: top-n / greedy "
         "| first size with f >= 0.8: top-n / greedy | CPR: top-n / greedy |",
         "|---|---|---|---|---|---|---|---|---|---|"]
for x in rows:
    if x["task"] != "induction":
        continue
    ag, c5, g5 = x["agreement"], x["circuit_5pct"], x["circuit_5pct_greedy"]
    named = ", ".join("%s %+.2f (EAP-IG rank %d)" % (e["edge"], e["path_patching"], e["head_to_head_rank"])
                      for e in x["named"]) or "none"
    top = ", ".join("%s %+.3f" % (e["edge"], e["score"]) for e in x["eap_ig_head_to_head"][:5])
    lines.append("| %d | %s | %s | %s | %s (%d of %d) | %s (%d / %d) | %s (%d / %d) | %s / %s | %s / %s | %s / %s |" % (
        x["seed"], "holds" if x["holds"] else "does not hold", named, top, yes(x["criterion_named_in_top5"]),
        ag["agree"], ag["named"], f3(c5["faithfulness"]), c5["top_n"], c5["edges"], f3(g5["faithfulness"]),
        g5["top_n"], g5["edges"], yes(x["criterion_f5_ge_0.8"]), yes(x["criterion_f5_greedy_ge_0.8"]),
        pct(x["first_size_f_ge_0.8"]), pct(x["first_size_f_ge_0.8_greedy"]), f3(x["cpr"]), f3(x["cpr_greedy"])))
lines += ["", "The path-patching value is the check's: all previous-token heads' output patched into the named induction "
          "head's keys together, normalised (one number per model). The circuit at a size is n edges chosen from "
          "EAP-IG's scores, dead ends pruned: top-n is the n of largest |score| (EAP-IG's apply_topn, MIB's); "
          "greedy grows the circuit from logits, each step the strongest edge into a node already in it "
          "(EAP-IG's apply_greedy). MIB's 5 % of 81 edges is n = 4."]
for x in rows:
    if x["task"] != "winograd":
        continue
    ag, c5, g5 = x["agreement"], x["circuit_5pct"], x["circuit_5pct_greedy"]
    gi, ge = x["eap-ig_greedy_5pct"], x["exact_greedy_5pct"]
    lines += ["", "Default Winograd model (`train --seed 0`; its %d held-out crosser/crossed prompts, %d edges):"
              % (x["prompts"], x["n_edges"]), "",
              "| | edges |", "|---|---|",
              "| path-patching edges `circuit` names (%s) | %s |" % (md_cell(x["named_by"]), ", ".join(
                  "%s %+.2f" % (e["edge"], e["path_patching"]) for e in x["named"]) or "none"),
              "| EAP-IG's strongest %d head->head edges (circuit's section) | %s |" % (ag["top_k"], ", ".join(
                  "%s %+.3f" % (e["edge"], e["score"]) for e in x["eap_ig_head_to_head"][:ag["top_k"]])),
              "| the same from `discover --method eap-ig` on the held-out pairs | %s (%s) |" % (
                  ", ".join(x["discover_eap_ig_top_head_to_head"][:ag["top_k"]]),
                  "matches" if x["discover_matches_circuit_section"] else "**differs**"),
              "| exact edge patching's strongest %d head->head edges | %s |" % (ag["top_k"], ", ".join(
                  x["exact_top_head_to_head"])),
              "| strongest = named | %s (%d of %d named among the top %d) |" % (
                  yes(x["criterion_strongest_are_named"]), ag["agree"], ag["named"], ag["top_k"]),
              "| f at 5 %% (edges asked / kept): EAP-IG / exact ranking | %s (%d / %d) / %s (%d / %d) |" % (
                  f3(c5["faithfulness"]), c5["top_n"], c5["edges"], f3(x["exact_ranking_5pct"]["faithfulness"]),
                  x["exact_ranking_5pct"]["top_n"], x["exact_ranking_5pct"]["edges"]),
              "| f at 5 %%, greedy (edges asked / kept): EAP-IG (circuit's section) / EAP-IG (`discover --select "
              "greedy`) / exact | %s (%d / %d) / %s (%d / %d) / %s (%d / %d) |" % (
                  f3(g5["faithfulness"]), g5["top_n"], g5["edges"], f3(gi["faithfulness"]), gi["top_n"], gi["edges"],
                  f3(ge["faithfulness"]), ge["top_n"], ge["edges"]),
              "| first size with f >= 0.8: EAP-IG / exact ranking, top-n | %s / %s |" % (
                  pct(x["first_size_f_ge_0.8"]), pct(x["exact_ranking_first_size_f_ge_0.8"])),
              "| first size with f >= 0.8: EAP-IG / exact, greedy | %s / %s |" % (
                  pct(x["eap-ig_greedy_first_size_f_ge_0.8"]), pct(x["exact_greedy_first_size_f_ge_0.8"])),
              "| CPR, greedy: EAP-IG / exact | %s / %s |" % (f3(x["eap-ig_greedy_cpr"]), f3(x["exact_greedy_cpr"])),
              "| CPR, CMD (EAP-IG) | %s, %s |" % (f3(x["cpr"]), f3(x["cmd"]))]
md = "\n".join(lines) + "\n"
open(os.path.join(out, "discovery_table.md"), "w").write(md)
print(md)
PYEOF
