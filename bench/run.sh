#!/usr/bin/env bash
# bench/run.sh -- headscope's benchmarks side by side with the PyTorch CPU peer
# (issue 8), on this machine, in one go:
#
#   bash bench/run.sh
#
#  1. training: headscope's step time (bench_train: median after warm-up) and
#     a full default `headscope train` run (wall time, peak RSS, the step at
#     which held-out accuracy first reaches 100%, evaluated every 100 steps);
#     the same for both PyTorch peers of bench/torch_peer.py on the same data
#     (`headscope train --dataset`), steps, batch and optimiser, at the same
#     thread count: --impl tl (TransformerLens layout, headscope's numerical
#     twin) and --impl fast (PyTorch's own layout, fused Q/K/V: what a user
#     would write; bench/peer_equiv.py checks both give the same losses).
#     Every ratio is taken against the faster of the two.
#  2. roofline: FLOPs of a step, achieved GFLOP/s, this machine's rate of the
#     library's product (hs_sgemm: libxsmm or OpenBLAS) at the step's own
#     shapes (bench_sgemm, 1 and THREADS OpenBLAS threads).
#  3. latency + peak RSS (/usr/bin/time, median of RUNS processes): inspect on
#     the chapter's 18-token sentence with every default figure; circuit over
#     the held-out set (summary only, and with --out figures); patch; EAP and
#     EAP-IG in process beside their PyTorch peer (bench/eap_speed.sh); the 2x4 grid PNG
#     (bench_viz); loading a checkpoint (bench_load, and `headscope eval` =
#     load + held-out scoring); the PyTorch peer's peak RSS; the HTML viewer's
#     page at 12 layers x 12 heads x 256 tokens in chromium (bench/html_page.sh:
#     size, load time, longest hover frame -> bench/results/html_page.json).
#  4. a 5-seed sweep of the default model: PAR runs side by side at one
#     thread (or core) each, vs one after another at THREADS threads.
#  5. the scaling table (bench/scale.py): headscope vs the fast peer at
#     THREADS threads over 9 model sizes (d_model 64..512, layers 2..8,
#     context 18..256, batch 64, random tokens; one axis at a time around
#     d_model 128 x 4 layers x context 64, plus 512 x 8 x 256), with the
#     one-core sgemm roofline at each size's shapes and peak RSS of each side;
#     ~10 minutes on a quiet machine. Writes bench/results/scale.json,
#     scale.md and the figure scale_fig.png/.svg/.json (ms/step against FLOPs
#     per step, log-log, through viz: bench_plot).
#
# Prints a markdown table (machine, date, every figure) and writes every number
# to bench/results/bench.json. Exits non-zero when a stage fails.
#
# Environment (all optional):
#   BUILD=DIR           build folder (default build; built Release by scripts/build.sh)
#   BENCH_THREADS=N     threads of both headscope and PyTorch (default 2, or 1 on 1 CPU)
#   BENCH_STEPS=N       training steps of the full runs and the sweep (default:
#                       headscope train's default, 2000); small = a smoke test
#   BENCH_STEP_SAMPLES=N  bench_train's timed steps (default 300, warm-up 30)
#   BENCH_RUNS=N        processes per latency median (default 5)
#   BENCH_SWEEP=0       skip the 5-seed sweep
#   BENCH_SCALE=0       skip the scaling table (the slowest stage); quick = its
#                       tiny sizes (a smoke test) into the work folder instead
#                       of bench/results/
#   BENCH_SEEDS=N       sweep seeds 0..N-1 (default 5)
#   BENCH_OUT=FILE      JSON output (default bench/results/bench.json; a smoke run
#                       -- fewer steps, samples or runs than the defaults, or
#                       BENCH_SCALE=quick -- writes it and html_page.json into
#                       the work folder instead, leaving bench/results/ alone)
#   BENCH_WORK=DIR      scratch folder (default a new /tmp/headscope-bench.XXXXXX)
#   BENCH_DEPS=0        do not run scripts/deps.sh --bench
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
    sed -n '2,58p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
fi

BUILD="${BUILD:-build}"
case "$BUILD" in /*) BDIR="$BUILD" ;; *) BDIR="$ROOT/$BUILD" ;; esac
NPROC="$(nproc)"
THREADS="${BENCH_THREADS:-$([ "$NPROC" -ge 2 ] && echo 2 || echo 1)}"
RUNS="${BENCH_RUNS:-5}"
for v in THREADS RUNS; do
    case "${!v}" in ''|*[!0-9]*|0) echo "bench/run.sh: $v must be a positive integer" >&2; exit 2 ;; esac
done
SAMPLES="${BENCH_STEP_SAMPLES:-300}"
WARMUP=$(( SAMPLES / 10 > 30 ? 30 : SAMPLES / 10 ))
SWEEP="${BENCH_SWEEP:-1}"
SCALE="${BENCH_SCALE:-1}"
SEEDS="${BENCH_SEEDS:-5}"
PY=/usr/bin/python3
SENTENCE="the animal did not cross the street because it was too tired, so the animal waited."
WORK="${BENCH_WORK:-$(mktemp -d /tmp/headscope-bench.XXXXXX)}"
# a smoke run (fewer steps, samples or runs than the defaults, or the quick
# scaling sizes) keeps its numbers in WORK: bench/results/ holds full runs only
SMOKE=0
[ "${BENCH_STEPS:-2000}" -lt 2000 ] 2>/dev/null && SMOKE=1
[ "$SAMPLES" -lt 300 ] 2>/dev/null && SMOKE=1
[ "$RUNS" -lt 5 ] && SMOKE=1
[ "$SCALE" = quick ] && SMOKE=1
if [ "$SMOKE" = 1 ]; then
    OUT="${BENCH_OUT:-$WORK/bench.json}"
    export BENCH_HTML_OUT="${BENCH_HTML_OUT:-$WORK/html_page.json}"
else
    OUT="${BENCH_OUT:-$ROOT/bench/results/bench.json}"
fi
mkdir -p "$WORK" "$(dirname "$OUT")"

STAGE="setup"
T_START=$(date +%s.%N)
cut -d' ' -f1-3 /proc/loadavg > "$WORK/loadavg_start"
# shellcheck disable=SC2154  # rc is assigned inside the trap
trap 'rc=$?; [ $rc -ne 0 ] && echo "bench/run.sh: stage \"$STAGE\" failed (exit $rc); logs in $WORK" >&2' EXIT
log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
# timed CMD...: appends "wall_s peak_rss_kb" of one process to $TIMEFILE: the
# wall time read around /usr/bin/time by bash itself ($EPOCHREALTIME, to the
# microsecond; /usr/bin/time's own %e has 10 ms steps; this includes starting
# /usr/bin/time, ~1 ms), the peak RSS from /usr/bin/time. Decimal points:
# bash and awk write the locale's, report.py reads only '.'.
timed() {
    local t0 t1 rc=0
    t0=${EPOCHREALTIME/,/.}
    /usr/bin/time -f '%M' -o "$TIMEFILE.rss" "$@" || rc=$?
    t1=${EPOCHREALTIME/,/.}
    [ "$rc" -eq 0 ] || return "$rc"
    LC_ALL=C awk -v a="$t0" -v b="$t1" -v m="$(tail -n 1 "$TIMEFILE.rss")" \
        'BEGIN { printf "%.4f %s\n", b - a, m }' >> "$TIMEFILE"
    rm -f "$TIMEFILE.rss"
}

# ---- dependencies and build -------------------------------------------------
STAGE="deps"
if [ "${BENCH_DEPS:-1}" != 0 ]; then
    bash "$ROOT/scripts/deps.sh" --bench
fi
[ -x /usr/bin/time ] || { echo "bench/run.sh: /usr/bin/time missing" >&2; exit 1; }
"$PY" -c 'import torch' 2>/dev/null || { echo "bench/run.sh: python3-torch missing" >&2; exit 1; }

STAGE="build"
log "building Release into $BDIR"
BUILD="$BDIR" TARGETS="headscope bench_train bench_sgemm bench_viz bench_load bench_plot bench_eap" \
    bash "$ROOT/scripts/build.sh" > "$WORK/build.log" 2>&1 || { tail -20 "$WORK/build.log" >&2; exit 1; }
HS="$BDIR/headscope"
DEFAULT_STEPS="$("$HS" train --help | sed -n 's/.*--steps N.*(default \([0-9][0-9]*\)).*/\1/p' | head -1)"
STEPS="${BENCH_STEPS:-${DEFAULT_STEPS:-2000}}"
# `headscope train --threads N` when the CLI has it; else the library's auto
# (2 threads on 2+ CPUs), which is THREADS unless BENCH_THREADS says otherwise
if "$HS" train --help | grep -q -- '--threads'; then HS_TRAIN_THREADS=(--threads "$THREADS"); TFLAG=1
else HS_TRAIN_THREADS=(); TFLAG=0; fi

# both sides get the same thread count: PyTorch torch.set_num_threads(THREADS)
# with OpenMP and OpenBLAS (Debian's torch calls the system BLAS) at THREADS;
# headscope runs THREADS threads of its own (hs_acts_set_threads: the caller +
# a helper thread) and sets OpenBLAS to one thread per call itself.
export OPENBLAS_NUM_THREADS="$THREADS" OMP_NUM_THREADS="$THREADS"
# both sides on the same OpenBLAS kernels: the ones headscope picks for this
# CPU (hs_blas_core_advice: Debian's OpenBLAS 0.3.21 falls back to its SSE3
# Prescott kernels on CPUs newer than it; `headscope --version` names the
# core after its re-exec), unless OPENBLAS_CORETYPE is set already. The bench
# programs and PyTorch (which calls the system OpenBLAS) read it at start.
BLAS_CORE="$("$HS" --version | sed -n 's/.*OpenBLAS core \([A-Za-z0-9]*\)).*/\1/p')"
export OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-$BLAS_CORE}"
log "OpenBLAS kernels: ${OPENBLAS_CORETYPE:-as OpenBLAS chose}"

cat > "$WORK/config.json" <<EOF
{"threads": $THREADS, "steps": $STEPS, "default_steps": ${DEFAULT_STEPS:-null}, "step_samples": $SAMPLES,
 "step_warmup": $WARMUP, "openblas_coretype": "${OPENBLAS_CORETYPE:-}", "train_threads_flag": $TFLAG, "runs": $RUNS, "sweep": $SWEEP, "scale": "$SCALE", "seeds": $SEEDS, "build": "$BDIR",
 "sentence": "$SENTENCE", "work": "$WORK"}
EOF

# ---- 1. training step (headscope) and the sgemm roofline --------------------
STAGE="bench_train"
log "bench_train: $SAMPLES steps after $WARMUP warm-up, --threads $THREADS"
"$BDIR/bench_train" --steps "$SAMPLES" --warmup "$WARMUP" --threads "$THREADS" \
    --json "$WORK/bench_train.json" > "$WORK/bench_train.out"
STAGE="bench_sgemm"
log "bench_sgemm: OpenBLAS 1 thread and $THREADS threads"
"$BDIR/bench_sgemm" --threads 1 --json "$WORK/sgemm_1.json" > "$WORK/sgemm_1.out"
if [ "$THREADS" -gt 1 ]; then
    "$BDIR/bench_sgemm" --threads "$THREADS" --json "$WORK/sgemm_n.json" > "$WORK/sgemm_n.out"
fi

# ---- 1. full training runs: headscope, then the PyTorch peer ----------------
STAGE="headscope train"
log "headscope train: $STEPS steps (eval every 100)"
TIMEFILE="$WORK/hs_train.time"
timed "$HS" train --out "$WORK/hs.safetensors" --steps "$STEPS" --eval-every 100 --log-every 100 \
    "${HS_TRAIN_THREADS[@]}" \
    > "$WORK/hs_train.log" 2>&1 || { tail -5 "$WORK/hs_train.log" >&2; exit 1; }

STAGE="dataset"
"$HS" train --steps 0 --eval-every 0 --dataset "$WORK/dataset.txt" --out "$WORK/step0.safetensors" \
    > "$WORK/dataset.log" 2>&1 || { tail -5 "$WORK/dataset.log" >&2; exit 1; }

STAGE="torch peer"
log "torch_peer: $STEPS steps, --threads $THREADS (OpenBLAS/OpenMP $THREADS)"
TIMEFILE="$WORK/peer.time"
timed "$PY" "$ROOT/bench/torch_peer.py" --headscope "$HS" --dataset "$WORK/dataset.txt" \
    --steps "$STEPS" --batch 64 --threads "$THREADS" --eval-every 100 --warmup "$WARMUP" --quiet \
    > "$WORK/peer.json" 2> "$WORK/peer.log" || { tail -5 "$WORK/peer.log" >&2; exit 1; }

STAGE="torch peer (fast)"
log "torch_peer --impl fast: $STEPS steps, --threads $THREADS"
TIMEFILE="$WORK/peer_fast.time"
timed "$PY" "$ROOT/bench/torch_peer.py" --impl fast --headscope "$HS" --dataset "$WORK/dataset.txt" \
    --steps "$STEPS" --batch 64 --threads "$THREADS" --eval-every 100 --warmup "$WARMUP" --quiet \
    > "$WORK/peer_fast.json" 2> "$WORK/peer_fast.log" || { tail -5 "$WORK/peer_fast.log" >&2; exit 1; }

# ---- 3. latency and peak RSS ------------------------------------------------
# rep NAME CMD...: one untimed run (page cache), then RUNS timed processes
rep() {
    local name=$1; shift
    "$@" > "$WORK/$name.out" 2>&1 || { tail -5 "$WORK/$name.out" >&2; return 1; }
    TIMEFILE="$WORK/$name.time"
    : > "$TIMEFILE"
    for ((r = 0; r < RUNS; r++)); do
        timed "$@" > "$WORK/$name.out" 2>&1 || { tail -5 "$WORK/$name.out" >&2; return 1; }
    done
}
M="$WORK/hs.safetensors"
STAGE="inspect"
log "latency: inspect, circuit, patch, heads, grid PNG, load, eval ($RUNS runs each)"
rep inspect "$HS" inspect --model "$M" --sentence "$SENTENCE" --out "$WORK/inspect"
find "$WORK/inspect" -type f | wc -l > "$WORK/inspect.files"
STAGE="circuit"
rep circuit "$HS" circuit --model "$M"
STAGE="circuit --out"
rep circuit_out "$HS" circuit --model "$M" --out "$WORK/circuit"
STAGE="patch"
# circuit's 192 held-out pairs as a prompt set: patch by head x position
# (hook_z, every head at every position and at all positions), and heads
"$PY" "$ROOT/tests/py/winograd_pairs.py" "$WORK/dataset.txt" "$WORK/pairs.jsonl"
rep patch_z "$HS" patch --model "$M" --data "$WORK/pairs.jsonl" --acts z
STAGE="attribution"
# EAP and EAP-IG over the same pairs, headscope beside the PyTorch peer (bench/eap_speed.sh)
BUILD="$BDIR" bash "$ROOT/bench/eap_speed.sh" --model "$M" --threads "$THREADS" --rounds "$([ "$SMOKE" = 1 ] && echo 1 || echo 3)" \
    --out "$WORK" > "$WORK/eap_speed.md"
STAGE="heads"
rep heads "$HS" heads --model "$M" --data "$WORK/pairs.jsonl"
STAGE="grid PNG"
rep viz "$BDIR/bench_viz" 1 "$WORK"
"$BDIR/bench_viz" 21 "$WORK" > "$WORK/viz21.out"
STAGE="load"
rep load "$BDIR/bench_load" "$M" 1
"$BDIR/bench_load" "$M" 21 --json "$WORK/load.json" > "$WORK/load21.out"
STAGE="eval"
rep eval "$HS" eval --model "$M"
STAGE="html page"
log "HTML viewer page at 12 x 12 x 256 (bench/html_page.sh -> ${BENCH_HTML_OUT:-bench/results/html_page.json})"
BENCH_RUNS="$RUNS" bash "$ROOT/bench/html_page.sh" "$HS" > "$WORK/html_page.md"

# ---- 4. the seed sweep ----------------------------------------------------------
if [ "$SWEEP" != 0 ]; then
    STAGE="sweep"
    PAR=$(( NPROC < SEEDS ? NPROC : SEEDS ))
    [ "$PAR" -ge 1 ] || PAR=1
    # one thread per run: `headscope train --threads 1` when the CLI has it,
    # else each run pinned to its own core (taskset; the library's helper
    # thread then shares that core)
    if [ "$TFLAG" = 1 ]; then PMODE=threads1; else PMODE=pinned; fi
    read -r -a CORES <<< "$("$PY" -c 'import os; print(*sorted(os.sched_getaffinity(0)))')"
    mkdir -p "$WORK/sweep"
    cat > "$WORK/sweep/job.sh" <<EOF
#!/usr/bin/env bash
# \$1 = mode (seq|par), \$2 = seed, \$3 = core (par)
set -euo pipefail
mode=\$1; seed=\$2; base="$WORK/sweep/\${mode}_\${seed}"
if [ "\$mode" = par ]; then
    export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
    if [ "$PMODE" = threads1 ]; then
        pre=(); extra=(--threads 1)
    else
        pre=(taskset -c "\$3"); extra=()
    fi
else
    pre=(); extra=(${HS_TRAIN_THREADS[*]})
fi
t0=\$(date +%s.%N)
/usr/bin/time -f '%e %M' -o "\$base.time" "\${pre[@]}" "$HS" train --seed "\$seed" --steps $STEPS \\
    --eval-every 100 --log-every 100 "\${extra[@]}" --out "\$base.safetensors" > "\$base.log" 2>&1
echo "\$t0 \$(date +%s.%N)" > "\$base.span"
rm -f "\$base.safetensors"
EOF
    chmod +x "$WORK/sweep/job.sh"
    log "sweep: $SEEDS seeds one after another at $THREADS threads"
    t0=$(now)
    for ((s = 0; s < SEEDS; s++)); do "$WORK/sweep/job.sh" seq "$s"; done
    t1=$(now)
    log "sweep: $SEEDS seeds, $PAR at a time, 1 thread each ($PMODE)"
    # PAR workers side by side; worker k (core k) runs seeds k, k+PAR, ...
    pids=()
    for ((k = 0; k < PAR; k++)); do
        ( for ((s = k; s < SEEDS; s += PAR)); do "$WORK/sweep/job.sh" par "$s" "${CORES[k % ${#CORES[@]}]}"; done ) &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    t2=$(now)
    printf '{"seq_wall_s": %s, "par_wall_s": %s, "par_jobs": %d, "par_mode": "%s", "seq_threads": %d}\n' \
        "$(elapsed "$t0" "$t1")" "$(elapsed "$t1" "$t2")" "$PAR" "$PMODE" "$THREADS" \
        > "$WORK/sweep.json"
fi

# ---- 5. the scaling table -------------------------------------------------------
if [ "$SCALE" != 0 ]; then
    STAGE="scale"
    if [ "$SCALE" = quick ]; then
        log "scaling table: tiny sizes (BENCH_SCALE=quick) into $WORK/scale"
        SOUT="$WORK/scale/scale"; QUICK=(--quick)
    else
        log "scaling table: 9 sizes, ~10 min (bench/scale.py; BENCH_SCALE=0 skips)"
        SOUT="$ROOT/bench/results/scale"; QUICK=()
    fi
    mkdir -p "$WORK/scale"
    "$PY" "$ROOT/bench/scale.py" --build "$BDIR" --threads "$THREADS" --peer fast "${QUICK[@]}" \
        --out "$SOUT.json" --md "$SOUT.md" --fig "${SOUT}_fig" --work "$WORK/scale" > "$WORK/scale.out"
    cp "$SOUT.json" "$WORK/scale.json"
fi

# ---- report -------------------------------------------------------------------
STAGE="report"
cut -d' ' -f1-3 /proc/loadavg > "$WORK/loadavg_end"
T_END=$(now)
"$PY" "$ROOT/bench/report.py" --work "$WORK" --out "$OUT" --seconds "$(elapsed "$T_START" "$T_END")"
log "done in $(elapsed "$T_START" "$T_END") s; JSON $OUT; logs $WORK"
