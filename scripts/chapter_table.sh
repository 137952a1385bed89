#!/usr/bin/env bash
# scripts/chapter_table.sh -- regenerate the README's chapter table (issue 3):
# every row of the ablation ladder trained with `headscope train` over 5 seeds
# (and, with --torch, bench/torch_peer.py over 3 seeds), scored with
# `headscope eval --json` on both splits, printed as markdown beside the
# chapter's figure and the design doc's PyTorch reference, and written to
# bench/results/chapter_table.json (+ .md).
#
#   scripts/chapter_table.sh [--torch] [--seeds N] [--torch-seeds N] [--steps N]
#                            [--split-seed S] [-j JOBS] [--rows a,b,...] [--workdir DIR]
#
# Runs are independent processes, JOBS at a time (default: nproc), each one
# single-threaded (OPENBLAS_NUM_THREADS=1, torch threads 1): on this 2-core
# machine two one-thread runs side by side beat one two-thread run at a time.
# The held-out split is the test set: every run trains to its full budget,
# nothing is stopped or selected on it. A rerun with the same --workdir skips
# the runs already finished (resume after an interrupt).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HEADSCOPE="${HEADSCOPE:-$ROOT/build-table/headscope}"
PY="${TORCH_PYTHON:-/usr/bin/python3}"
SEEDS=5
TSEEDS=3
TORCH=0
STEPS=""
SPLIT=0
JOBS="$(nproc)"
ROWS=""
WORK=""
OUT="$ROOT/bench/results"

while [ $# -gt 0 ]; do
    case "$1" in
        --torch) TORCH=1 ;;
        --seeds) SEEDS="$2"; shift ;;
        --torch-seeds) TSEEDS="$2"; shift ;;
        --steps) STEPS="$2"; shift ;;
        --split-seed) SPLIT="$2"; shift ;;
        -j) JOBS="$2"; shift ;;
        --rows) ROWS="$2"; shift ;;
        --workdir) WORK="$2"; shift ;;
        --out) OUT="$2"; shift ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "chapter_table.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

if [ ! -x "$HEADSCOPE" ]; then
    echo "chapter_table.sh: $HEADSCOPE not built; run: BUILD=build-table bash scripts/build.sh" >&2
    exit 1
fi
[ -n "$WORK" ] || WORK="$(mktemp -d /tmp/chapter_table.XXXXXX)"
mkdir -p "$WORK/runs" "$OUT"

# name | exact `headscope train` flags (the torch peer takes the same switches)
ROW_DEFS='uniform_no_norm|--layers 1 --attn uniform --no-ln1
uniform_ln|--layers 1 --attn uniform
uniform_ln_gpt2|--layers 1 --attn uniform --init gpt2 --steps 3000
uniform_no_pos|--layers 1 --attn uniform --no-ln1 --pos none
one_block|--layers 1
two_blocks|
category_uniform|--task winograd-category --layers 1 --attn uniform --no-ln1
category_one_block|--task winograd-category --layers 1'

printf '%s\n' "$ROW_DEFS" > "$WORK/rows.txt"
if [ -n "$ROWS" ]; then
    grep -E "^($(echo "$ROWS" | tr ',' '|'))\|" "$WORK/rows.txt" > "$WORK/rows.sel" || true
    mv "$WORK/rows.sel" "$WORK/rows.txt"
fi

STEPFLAG=""
[ -n "$STEPS" ] && STEPFLAG="--steps $STEPS"

# One job line per run: kind name seed flags...   (longest first: two blocks, then the rest)
: > "$WORK/jobs.txt"
awk 1 "$WORK/rows.txt" | awk -F'|' '{print ($1=="two_blocks"?0:1) "|" $0}' | sort -s -t"|" -k1,1n |
    cut -d'|' -f2- > "$WORK/rows.order"
# headscope runs first (the table's main columns), then the PyTorch peer's
while IFS='|' read -r name flags; do
    for ((s = 0; s < SEEDS; s++)); do echo "hs $name $s${flags:+ $flags}" >> "$WORK/jobs.txt"; done
done < "$WORK/rows.order"
if [ "$TORCH" = 1 ]; then
    while IFS='|' read -r name flags; do
        for ((s = 0; s < TSEEDS; s++)); do echo "torch $name $s${flags:+ $flags}" >> "$WORK/jobs.txt"; done
    done < "$WORK/rows.order"
fi

cat > "$WORK/job.sh" <<EOF
#!/usr/bin/env bash
# one run: \$1 = hs|torch, \$2 = row, \$3 = seed, rest = flags
set -uo pipefail
kind=\$1; name=\$2; seed=\$3; shift 3
base="$WORK/runs/\${kind}_\${name}_\${seed}"
# a rerun with the same --workdir keeps finished runs
if [ -s "\$base.time" ] && [ -s "\$base.heldout.json" ] && [ -s "\$base.train.json" ]; then exit 0; fi
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
t0=\$(date +%s.%N)
if [ "\$kind" = hs ]; then
    "$HEADSCOPE" train "\$@" --seed "\$seed" --split-seed $SPLIT $STEPFLAG --eval-every 100 --log-every 100 \\
        --force --out "\$base.safetensors" > "\$base.train.out" 2> "\$base.train.log" || { echo "FAILED \$base" >&2; exit 0; }
else
    HEADSCOPE="$HEADSCOPE" "$PY" "$ROOT/bench/torch_peer.py" "\$@" --seed "\$seed" --split-seed $SPLIT $STEPFLAG \\
        --threads 1 --eval-every 100 --quiet --save "\$base.safetensors" > "\$base.peer.json" 2> "\$base.train.log" \\
        || { echo "FAILED \$base" >&2; exit 0; }
fi
t1=\$(date +%s.%N)
"$HEADSCOPE" eval --model "\$base.safetensors" --split heldout --json > "\$base.heldout.json"
"$HEADSCOPE" eval --model "\$base.safetensors" --split train --json > "\$base.train.json"
echo "\$t0 \$t1" > "\$base.time"
rm -f "\$base.safetensors"
echo "done \$kind \$name seed \$seed (\$(echo "\$t1 - \$t0" | bc) s)" >&2
EOF
chmod +x "$WORK/job.sh"

echo "chapter_table: $(wc -l < "$WORK/jobs.txt") runs, $JOBS at a time, work dir $WORK" >&2
T0=$(date +%s.%N)
xargs -P "$JOBS" -L 1 "$WORK/job.sh" < "$WORK/jobs.txt"
T1=$(date +%s.%N)

"$PY" "$ROOT/bench/chapter_table.py" --work "$WORK" --out "$OUT" --seconds "$(echo "$T1 - $T0" | bc)" \
    --jobs "$JOBS" --split-seed "$SPLIT" --steps "${STEPS:-default}" --headscope "$HEADSCOPE"
