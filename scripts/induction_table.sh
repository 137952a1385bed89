#!/usr/bin/env bash
# scripts/induction_table.sh -- the README's induction table: `headscope train
# --task induction --d-mlp 0` with 2 and 1 layers over seeds 0..N-1 (task
# defaults otherwise), each run timed, then `headscope circuit --json` on it;
# writes bench/results/induction_table.{json,md} and prints the markdown.
#
#   scripts/induction_table.sh [--seeds N] [--layers "2 1"] [-j JOBS] [--workdir DIR] [--out DIR]
#                              [-- extra train flags]
#
# Runs are independent processes, JOBS at a time (default 1), one thread
# each. The held-out sequences are the test set: nothing stops or selects on
# them. A rerun with the same --workdir keeps the runs already finished.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HEADSCOPE="${HEADSCOPE:-$ROOT/build/headscope}"
PY=/usr/bin/python3
SEEDS=5
LAYERS="2 1"
JOBS=1
WORK=""
OUT="$ROOT/bench/results"
EXTRA=()
while [ $# -gt 0 ]; do
    case "$1" in
        --seeds) SEEDS="$2"; shift ;;
        --layers) LAYERS="$2"; shift ;;
        -j) JOBS="$2"; shift ;;
        --workdir) WORK="$2"; shift ;;
        --out) OUT="$2"; shift ;;
        --) shift; EXTRA=("$@"); break ;;
        -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "induction_table.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[ -x "$HEADSCOPE" ] || { echo "induction_table.sh: $HEADSCOPE not built (bash scripts/build.sh)" >&2; exit 1; }
[ -n "$WORK" ] || WORK="$(mktemp -d /tmp/induction_table.XXXXXX)"
mkdir -p "$WORK" "$OUT"

: > "$WORK/jobs.txt"
for l in $LAYERS; do for ((s = 0; s < SEEDS; s++)); do echo "$l $s" >> "$WORK/jobs.txt"; done; done
cat > "$WORK/job.sh" <<EOF
#!/usr/bin/env bash
set -uo pipefail
l=\$1; s=\$2; base="$WORK/L\${l}_s\${s}"
if [ -s "\$base.circuit.json" ] && [ -s "\$base.time" ]; then exit 0; fi
export OPENBLAS_NUM_THREADS=1
t0=\$(date +%s.%N)
"$HEADSCOPE" train --task induction --d-mlp 0 --layers "\$l" --seed "\$s" --threads 1 --log-every 100 \\
    --eval-every 100 ${EXTRA[*]:-} --out "\$base.safetensors" > "\$base.train.out" 2> "\$base.train.log" \\
    || { echo "FAILED \$base" >&2; exit 0; }
t1=\$(date +%s.%N)
"$HEADSCOPE" circuit --model "\$base.safetensors" --json > "\$base.circuit.json"
echo "\$t0 \$t1" > "\$base.time"
echo "done L\$l seed \$s (\$(echo "\$t1 - \$t0" | bc) s)" >&2
EOF
chmod +x "$WORK/job.sh"
echo "induction_table: $(wc -l < "$WORK/jobs.txt") runs, $JOBS at a time, work dir $WORK" >&2
xargs -P "$JOBS" -L 1 "$WORK/job.sh" < "$WORK/jobs.txt"

"$PY" - "$WORK" "$OUT" "$HEADSCOPE" <<'PYEOF'
import glob, json, os, re, subprocess, sys
work, out, hs = sys.argv[1:4]
rows = []
for path in sorted(glob.glob(os.path.join(work, "L*_s*.circuit.json"))):
    base = path[:-len(".circuit.json")]
    m = re.search(r"L(\d+)_s(\d+)$", base)
    r = json.load(open(path))
    t0, t1 = map(float, open(base + ".time").read().split())
    tr = open(base + ".train.out").read()
    acc = float(re.search(r"accuracy ([0-9.]+)%", tr).group(1)) / 100
    log = open(base + ".train.log").read()
    steps = [(int(a), float(b)) for a, b in re.findall(r"step (\d+)/\d+ .*?held-out acc +([0-9.]+)%", log)]
    first95 = next((s for s, a in steps if a >= 95.0), None)
    rows.append({"layers": int(m.group(1)), "seed": int(m.group(2)), "heldout_accuracy": acc,
                 "first_step_95": first95, "train_wall_s": t1 - t0, "circuit_holds": r["holds"],
                 "previous_token_head": r["previous_token_head"], "induction_head": r["induction_head"],
                 "verdict": r["verdict"], "icl_score": r["icl_score"], "chance": r["chance"],
                 "k_composition_minus_baseline": r["composition_k_minus_baseline"],
                 "path_patching": r["path_patching"],
                 "accuracy_previous_token_heads_ablated": r["accuracy_previous_token_heads_ablated"],
                 "accuracy_induction_heads_ablated": r["accuracy_induction_heads_ablated"],
                 "task_params": r["task_params"], "config": r["config"]})
rows.sort(key=lambda x: (-x["layers"], x["seed"]))
commit = subprocess.run(["git", "-C", os.path.dirname(os.path.dirname(os.path.abspath(hs))), "rev-parse",
                         "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
res = {"runs": rows, "commit": commit, "load_average": os.getloadavg()}
json.dump(res, open(os.path.join(out, "induction_table.json"), "w"), indent=1)
f = lambda v: "-" if v is None else "%.2f" % v
lines = ["| layers | seed | held-out accuracy (repeated segment) | first step >= 95% | circuit | previous-token -> induction head | K-comp - baseline | path patching q / k / v | acc. without prev / ind heads | ICL score | train time (s) |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
for x in rows:
    pp = x["path_patching"]
    lines.append("| %d | %d | %.1f%% | %s | %s | %s | %s | %s | %s | %+.2f | %.0f |" % (
        x["layers"], x["seed"], 100 * x["heldout_accuracy"], x["first_step_95"] or "-",
        "holds" if x["circuit_holds"] else "does not hold",
        ("%s -> %s" % (x["previous_token_head"], x["induction_head"])) if x["induction_head"] else
        ("one layer: no induction head can form" if x["verdict"].startswith("does not hold: one layer")
         else x["verdict"].replace("does not hold: ", "")[:60]),
        f(x["k_composition_minus_baseline"]),
        "-" if pp["k"] is None else "%.2f / %.2f / %.2f" % (pp["q"], pp["k"], pp["v"]),
        "-" if x["accuracy_induction_heads_ablated"] is None else "%.1f%% / %.1f%%" % (
            100 * x["accuracy_previous_token_heads_ablated"], 100 * x["accuracy_induction_heads_ablated"]),
        x["icl_score"], x["train_wall_s"]))
md = "\n".join(lines) + "\n"
open(os.path.join(out, "induction_table.md"), "w").write(md)
print(md)
PYEOF
