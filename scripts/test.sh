#!/usr/bin/env bash
# scripts/test.sh -- the README's test command (CI runs it through .ci/run):
#   1. deps      scripts/deps.sh --test (apt installs on a fresh Debian 12)
#   2. build     -DHS_WERROR=ON into build/, then ctest
#   3. asan      -DHS_SANITIZE=ON (ASan + UBSan, -fno-sanitize-recover) into
#                build-asan/, then ctest again (minus tests labelled nosanitize)
#   4. tsan      -DHS_TSAN=ON (ThreadSanitizer) into build-tsan/: the model's
#                2-thread unit test (test_model), then training with
#                --threads 2 and circuit --threads 2; any report fails
#   5. valgrind  one end-to-end run under valgrind --error-exitcode=1
#                --leak-check=full: train a tiny model, eval it, and inspect /
#                circuit / weights it when this build has them
#   6. fuzz      clang -DHS_FUZZ=ON -DHS_SANITIZE=ON into build-fuzz/; every
#                tests/fuzz/fuzz_*.c runs HS_FUZZ_SECONDS (default 60) from its
#                seed corpus; any crash fails (the input is kept in build-fuzz/)
# Prints the time of each stage. Environment:
#   HS_FUZZ_SECONDS=N   fuzz time per target (0 skips the stage)
#   HS_TEST_STAGES="build asan tsan valgrind fuzz"   which stages to run (deps always)
#   JOBS=N              parallel build/test jobs (default nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
JOBS=${JOBS:-$(nproc)}
FUZZ_SECONDS=${HS_FUZZ_SECONDS:-60}
STAGES=${HS_TEST_STAGES:-build asan tsan valgrind fuzz}
for s in $STAGES; do  # a misspelt stage must not pass by running nothing
    case "$s" in
        build | asan | tsan | valgrind | fuzz) ;;
        *) echo "scripts/test.sh: unknown stage '$s' in HS_TEST_STAGES (build asan tsan valgrind fuzz)" >&2; exit 2 ;;
    esac
done
# Root in CI: the output-safety test must really run its nobody/tmpfs cases.
if [ "$(id -u)" -eq 0 ]; then export HS_REQUIRE_ROOT_CASES=${HS_REQUIRE_ROOT_CASES:-1}; fi

T_ALL=$(date +%s)
TIMES=()
stage_begin() {
    STAGE=$1
    T0=$(date +%s)
    echo "==== stage $STAGE ($(date -u +%H:%M:%S))"
}
stage_end() {
    local dt=$(($(date +%s) - T0))
    TIMES+=("$(printf '%-9s %4d s' "$STAGE" "$dt")")
    echo "==== stage $STAGE: ${dt} s"
}
report() {
    local rc=$?
    echo "==== stage times"
    for t in "${TIMES[@]}"; do echo "  $t"; done
    if [ "$rc" -ne 0 ]; then echo "  FAILED in stage ${STAGE:-?} (exit $rc)"; fi
    echo "  total     $(printf '%4d' $(($(date +%s) - T_ALL))) s"
}
trap report EXIT
want() { case " $STAGES " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

stage_begin deps
bash scripts/deps.sh --test
stage_end

if want build; then
    stage_begin build
    BUILD=build bash scripts/build.sh -DHS_WERROR=ON
    (cd build && ctest --output-on-failure -j"$JOBS")
    stage_end
fi

if want asan; then
    stage_begin asan
    BUILD=build-asan bash scripts/build.sh -DHS_WERROR=ON -DHS_SANITIZE=ON
    # detect_leaks: LeakSanitizer too; abort_on_error: a report is a failure.
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    (cd build-asan && ctest --output-on-failure -j"$JOBS" -LE nosanitize)
    unset ASAN_OPTIONS UBSAN_OPTIONS
    stage_end
fi

if want tsan; then
    stage_begin tsan
    BUILD=build-tsan TARGETS="headscope test_model" bash scripts/build.sh -DHS_WERROR=ON -DHS_TSAN=ON
    export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:abort_on_error=1}
    (cd tests && ../build-tsan/test_model)
    V=$(mktemp -d "${TMPDIR:-/tmp}/hs_tsan.XXXXXX")
    # batch 32 x 15 positions: the forward splits across the two threads
    build-tsan/headscope train --steps 4 --layers 1 --d-model 16 --heads 2 --batch 32 \
        --threads 2 --eval-every 2 --out "$V/m.safetensors" >/dev/null
    build-tsan/headscope circuit --model "$V/m.safetensors" --threads 2 --out "$V/c" >/dev/null
    unset TSAN_OPTIONS
    rm -rf "$V"
    stage_end
fi

if want valgrind; then
    stage_begin valgrind
    [ -x build/headscope ] || BUILD=build bash scripts/build.sh -DHS_WERROR=ON
    V=$(mktemp -d "${TMPDIR:-/tmp}/hs_valgrind.XXXXXX")
    HS="$ROOT/build/headscope"
    # OpenBLAS threads confuse nothing under valgrind but cost time: one thread.
    export OPENBLAS_NUM_THREADS=1
    VG=(valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect
        --show-leak-kinds=definite,indirect --track-fds=no --quiet)
    vg() { echo "  valgrind: headscope $*" >&2; "${VG[@]}" "$HS" "$@"; }
    vg train --steps 4 --layers 1 --d-model 16 --heads 2 --batch 8 --eval-every 2 \
        --checkpoint-every 2 --out "$V/m.safetensors" >/dev/null
    vg eval --model "$V/m.safetensors" >/dev/null
    vg eval --model "$V/m.safetensors" --split train --json >/dev/null
    # a user error path: unknown file, and a corrupt checkpoint
    rc=0; "${VG[@]}" "$HS" eval --model "$V/nope.safetensors" 2>/dev/null || rc=$?
    [ "$rc" -eq 1 ] || { echo "valgrind: eval of a missing file exited $rc (valgrind errors?)"; exit 1; }
    for f in $(ls tests/checkpoint/corpus/*.safetensors | head -8); do
        rc=0; "${VG[@]}" "$HS" eval --model "$f" >/dev/null 2>&1 || rc=$?
        [ "$rc" -eq 1 ] || [ "$rc" -eq 0 ] || { echo "valgrind: eval --model $f exited $rc"; exit 1; }
    done
    SENT="the animal did not cross the street because it was too tired , so the"
    for c in inspect circuit weights; do
        if "$HS" "$c" --help >"$V/help" 2>&1 && ! grep -q "not available in this build" "$V/help"; then
            case "$c" in
                inspect) vg inspect --model "$V/m.safetensors" --sentence "$SENT" --out "$V/$c" >/dev/null ;;
                *) vg "$c" --model "$V/m.safetensors" --out "$V/$c" >/dev/null ;;
            esac
        else
            echo "  valgrind: $c not in this build yet, skipped"
        fi
    done
    unset OPENBLAS_NUM_THREADS
    rm -rf "$V"
    stage_end
fi

if want fuzz && [ "$FUZZ_SECONDS" -gt 0 ]; then
    stage_begin fuzz
    # libFuzzer needs clang; the library is instrumented with fuzzer-no-link.
    CC=clang BUILD=build-fuzz TARGETS="$(cd tests/fuzz && ls fuzz_*.c | sed 's/\.c$//' | tr '\n' ' ')" \
        bash scripts/build.sh -DHS_FUZZ=ON -DHS_SANITIZE=ON
    mkdir -p build-fuzz/artifacts
    for src in tests/fuzz/fuzz_*.c; do
        name=$(basename "$src" .c)
        case "$name" in
            fuzz_safetensors) seeds=tests/checkpoint/corpus ;;
            *) seeds=tests/fuzz/corpus_${name#fuzz_} ;;
        esac
        work=build-fuzz/corpus_$name
        mkdir -p "$work"
        # regression inputs join the seeds so they are re-run every time
        regress=tests/fuzz/regressions/${name#fuzz_}
        [ -d "$regress" ] || regress=""
        t0=$(date +%s)
        rc=0
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 "build-fuzz/$name" \
            -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
            -artifact_prefix=build-fuzz/artifacts/"$name"- \
            "$work" "$seeds" ${regress:+"$regress"} >build-fuzz/"$name".log 2>&1 || rc=$?
        execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' build-fuzz/"$name".log | grep -o '[0-9]*$' || echo "?")
        echo "  $name: $execs executions in $(($(date +%s) - t0)) s, exit $rc"
        TIMES+=("$(printf '  %-18s %s execs' "$name" "$execs")")
        if [ "$rc" -ne 0 ]; then
            tail -40 build-fuzz/"$name".log
            echo "fuzz: $name failed; the input is in build-fuzz/artifacts/ (add it to tests/fuzz/regressions/${name#fuzz_}/)"
            exit 1
        fi
    done
    stage_end
fi
echo "all stages passed"
