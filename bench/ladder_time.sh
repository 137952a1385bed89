#!/usr/bin/env bash
# bench/ladder_time.sh -- the whole `headscope ladder` at its default settings
# (issue 31's target: under 30 minutes on 2 cores), extrapolated from two
# short ladders on fortunes (BPE 1,024 trained once): --steps A and --steps B
# (10 and 40), every row, at --threads N (2). A ladder's time is a fixed part
# (reading and encoding the corpus for each row, each row's held-out
# evaluation, the figure) plus its steps; the difference of the two runs gives
# the time of one step of all nine rows, so
#   estimate(S) = t(A) + (S - A) * (t(B) - t(A)) / (B - A)
# for S = the default steps (or --steps S), in wall seconds and in CPU
# seconds / N (what the run takes on N otherwise idle cores when the threads
# scale). Prints the load average before and after: on a shared machine the
# wall estimate is an upper bound, the CPU one closer to a quiet machine's.
#
#   bench/ladder_time.sh [--threads N] [--steps S] [--batch B] [--short A,B]   (BUILD=build by default)
# (--batch: the ladder's --batch; default its own default)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
THREADS=2
STEPS=""
BATCH=()
A=10
B=40
while [ $# -gt 0 ]; do
    case $1 in
    --threads) THREADS=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --batch) BATCH=(--batch "$2"); shift 2 ;;
    --short) A=${2%,*}; B=${2#*,}; shift 2 ;;
    *) echo "usage: bench/ladder_time.sh [--threads N] [--steps S] [--batch B] [--short A,B]" >&2; exit 2 ;;
    esac
done
mapfile -t FILES < <(find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.*' | sort)
[ "${#FILES[@]}" -gt 0 ] || { echo "ladder_time: no fortunes corpus" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$BUILD/headscope" bpe --corpus "${FILES[@]}" --vocab-size 1024 --out "$TMP/tok.json" >/dev/null
# the default steps: the ladder's own, from its help
[ -n "$STEPS" ] || STEPS=$("$BUILD/headscope" ladder --help | sed -n 's/.*--steps N .*(default \([0-9]*\).*/\1/p')
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for s in "$A" "$B"; do
    /usr/bin/time -f "%e %U %S" -o "$TMP/t$s" "$BUILD/headscope" ladder --corpus "${FILES[@]}" \
        --tokenizer "$TMP/tok.json" --steps "$s" "${BATCH[@]}" --threads "$THREADS" --out "$TMP/l$s" >"$TMP/l$s.log" 2>&1
    read -r w u k <"$TMP/t$s"
    echo "ladder --steps $s ${BATCH[*]} --threads $THREADS: wall ${w} s, CPU $(echo "$u + $k" | bc) s"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$TMP/t$A" "$TMP/t$B" "$A" "$B" "$STEPS" "$THREADS" <<'PYEOF'
import sys
ta, tb = ([float(x) for x in open(p).read().split()] for p in sys.argv[1:3])
a, b, s, n = (int(x) for x in sys.argv[3:7])
for kind, va, vb in (("wall", ta[0], tb[0]), ("CPU / %d" % n, (ta[1] + ta[2]) / n, (tb[1] + tb[2]) / n)):
    step = (vb - va) / (b - a)
    est = va + (s - a) * step
    print("%-8s one step of all nine rows %.3f s, fixed part %.1f s; %d steps: %.1f min" % (kind, step, va - a * step, s, est / 60))
PYEOF
