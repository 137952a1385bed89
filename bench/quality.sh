#!/usr/bin/env bash
# bench/quality.sh -- how well attribution approximates exact patching (issue
# 25, "Approximation quality"): bench/bench_quality on the default model over
# circuit's 192 held-out crosser/crossed pairs (tests/py/winograd_pairs.py)
# and on the five 2-layer induction models of the README's table (`train
# --task induction --d-mlp 0 --layers 2 --seed 0..4`) over N of their
# held-out sequences (bench_quality --induction-pairs). Spearman's rho with
# exact patching of AtP (per head, `patch`'s z sweep), EAP and EAP-IG (per
# edge, hs_edge_patch_scores); the faithfulness curves of exact patching,
# EAP, EAP-IG and ACDC. Writes bench/results/quality.{json,md} (--out DIR) and
# the default model's curves as one figure, docs/img/faithfulness_methods.png
# (--img DIR; 150 dpi), and prints the markdown.
#
#   bench/quality.sh [--default FILE] [--induction "F0 F1 F2 F3 F4"] [--prompts N]
#                    [--threads T] [--out DIR] [--img DIR]
#
# Models not given are trained (default 2000 steps; induction 1000 each).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BDIR="${BUILD:-$ROOT/build}"
HS="$BDIR/headscope"
PY=/usr/bin/python3
DEFAULT=""
IND=""
PROMPTS=200
THREADS=2
OUT="$ROOT/bench/results"
IMG="$ROOT/docs/img"
while [ $# -gt 0 ]; do
    case "$1" in
        --default) DEFAULT="$2"; shift ;;
        --induction) IND="$2"; shift ;;
        --prompts) PROMPTS="$2"; shift ;;
        --threads) THREADS="$2"; shift ;;
        --out) OUT="$2"; shift ;;
        --img) IMG="$2"; shift ;;
        -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "quality.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[ -x "$BDIR/bench_quality" ] && [ -x "$HS" ] || { echo "quality.sh: build headscope and bench_quality into $BDIR" >&2; exit 1; }
W=$(mktemp -d /tmp/quality.XXXXXX)
trap 'rm -rf "$W"' EXIT
mkdir -p "$OUT" "$IMG"
export OPENBLAS_NUM_THREADS=1
if [ -z "$DEFAULT" ]; then
    DEFAULT="$W/default.safetensors"
    "$HS" train --out "$DEFAULT" --threads "$THREADS" --eval-every 0 > /dev/null 2>&1
fi
if [ -z "$IND" ]; then
    for s in 0 1 2 3 4; do
        "$HS" train --task induction --d-mlp 0 --layers 2 --seed "$s" --threads "$THREADS" \
            --out "$W/ind$s.safetensors" > /dev/null 2>&1
        IND="$IND $W/ind$s.safetensors"
    done
fi
"$HS" train --steps 0 --eval-every 0 --dataset "$W/dataset.txt" --out "$W/step0.safetensors" > /dev/null 2>&1
"$PY" "$ROOT/tests/py/winograd_pairs.py" "$W/dataset.txt" "$W/pairs.jsonl"
"$BDIR/bench_quality" "$DEFAULT" "$W/pairs.jsonl" --threads "$THREADS" --json "$W/q_default.json" \
    --figure "$W/fig" --dpi 150 --title "default model, 192 held-out pairs" >&2
cp "$W/fig.png" "$IMG/faithfulness_methods.png"
s=0
for f in $IND; do
    "$BDIR/bench_quality" --induction-pairs "$f" "$PROMPTS" "$W/ind$s.jsonl"
    "$BDIR/bench_quality" "$f" "$W/ind$s.jsonl" --threads "$THREADS" --json "$W/q_ind$s.json" >&2
    s=$((s + 1))
done
"$PY" - "$W" "$OUT" "$s" <<'PYEOF'
import json, sys
w, out, n_ind = sys.argv[1], sys.argv[2], int(sys.argv[3])
runs = [("default (Winograd)", json.load(open(w + "/q_default.json")))]
runs += [("induction, seed %d" % s, json.load(open("%s/q_ind%d.json" % (w, s)))) for s in range(n_ind)]
json.dump([dict(r, name=n) for n, r in runs], open(out + "/quality.json", "w"), indent=1)
f = lambda x: "-" if x is None else "%+.2f" % x
lines = ["Spearman's rho with exact patching (ranks, ties averaged; metric logit-diff, resample ablation). "
         "AtP: the 8 heads' exact `patch` of z (all positions) vs AtP's estimate. EAP, EAP-IG (%d steps): "
         "every edge's score vs hs_edge_patch_scores (the edge patched alone), signed and |score|; edges "
         "that are exactly 0 on both sides by construction (a receiver reading only positions where the "
         "clean and corrupted inputs agree) left out, n = edges compared. CPR: area under the "
         "faithfulness curve at MIB's sizes." % runs[0][1]["ig_steps"], "",
         "| model | prompts | AtP (heads) | EAP | EAP-IG | EAP, abs | EAP-IG, abs | n edges | CPR exact / EAP / EAP-IG / ACDC |",
         "|---|---|---|---|---|---|---|---|---|"]
for name, r in runs:
    a, e = r["atp"]["z"], r["edges"]
    cpr = " / ".join("%.2f" % r["faithfulness"][k]["cpr"] for k in ("exact", "eap", "eap_ig", "acdc"))
    lines.append("| %s | %d | %s | %s | %s | %s | %s | %d of %d | %s |" % (
        name, r["prompts"], f(a["spearman"]), f(e["eap"]["spearman"]), f(e["eap_ig"]["spearman"]),
        f(e["eap"]["spearman_abs"]), f(e["eap_ig"]["spearman_abs"]), e["eap"]["cells"], e["n_edges"], cpr))
d = runs[0][1]
lines += ["", "AtP per activation on the default model (Spearman's rho over the cells both sides do not leave "
          "exactly 0: layer x position, or head; head x position in brackets):", "",
          "| act | cells | rho | by position |", "|---|---|---|---|"]
for act, c in d["atp"].items():
    bp = c.get("by_position")
    lines.append("| %s | %d | %s | %s |" % (act, c["cells"], f(c["spearman"]),
                                           "%s (%d cells)" % (f(bp["spearman"]), bp["cells"]) if bp else "-"))
ac = d["faithfulness"]["acdc_circuit"]
lines += ["", "ACDC on the default model (tau %g): %d edges (%.1f%%), faithfulness %.3f, %d trials." %
          (ac["tau"], ac["edges"], ac["percent"], ac["faithfulness"], ac["trials"])]
open(out + "/quality.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PYEOF
