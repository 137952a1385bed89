#!/usr/bin/env bash
# bench/bpe_speed.sh -- `headscope bpe` (tokenize/bpe_train.c) on the fortunes
# corpus (every file of /usr/share/games/fortunes without a dot in its name:
# 43 files, 2.58 MB) at a vocabulary of 1,024 (the chapter's), beside the
# plain-Python reference trainer of the tests (tests/py/bpe_train_ref.py: the
# same merges, a max over a dict of pair counts each round). Wall time of the
# whole process (reading, pre-tokenizing with PCRE2, training, writing
# tokenizer.json), median of RUNS. Target (issue 31): under 10 s.
#
#   bench/bpe_speed.sh [--runs R] [--vocab N]     (BUILD=build by default)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RUNS=5
VOCAB=1024
while [ $# -gt 0 ]; do
    case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --vocab) VOCAB=$2; shift 2 ;;
    *) echo "usage: bench/bpe_speed.sh [--runs R] [--vocab N]" >&2; exit 2 ;;
    esac
done
mapfile -t FILES < <(find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.*' | sort)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
times=()
for ((r = 0; r < RUNS; r++)); do
    t0=$(date +%s.%N)
    "$BUILD/headscope" bpe --corpus "${FILES[@]}" --vocab-size "$VOCAB" --out "$TMP/tok.json" \
        --force >"$TMP/out.txt"
    t1=$(date +%s.%N)
    times+=("$(echo "$t1 - $t0" | bc)")
done
med=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")
cat "$TMP/out.txt"
t0=$(date +%s.%N)
/usr/bin/python3 tests/py/bpe_train_ref.py "$VOCAB" "$TMP/ref.json" "${FILES[@]}"
t1=$(date +%s.%N)
py=$(echo "$t1 - $t0" | bc)
printf 'bpe on fortunes, vocabulary %s: headscope %.3f s (median of %d: %s), Python reference %.2f s; load %s\n' \
    "$VOCAB" "$med" "$RUNS" "${times[*]}" "$py" "$(cut -d' ' -f1-3 /proc/loadavg)"
