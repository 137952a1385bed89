#!/usr/bin/env bash
# scripts/test.sh -- the README's test command (CI runs it through .ci/run):
#   1. deps      scripts/deps.sh --test (apt installs on a fresh Debian 12)
#   2. build     -DHS_WERROR=ON into build/, then ctest
#   3. asan      -DHS_SANITIZE=ON (ASan + UBSan, -fno-sanitize-recover) into
#                build-asan/, then ctest again (minus tests labelled nosanitize;
#                test_html_browser and test_viz_print run every command and
#                figure but not Chromium, pdftoppm or rsvg-convert on them again,
#                test_tokenizer_json_reference and test_attribution_torch not
#                node's tokenizers or torch: the build stage checked the same
#                bytes; the training tests train 30 steps, not 300 (100, not
#                800), and leave the trained model's perplexity or accuracy to
#                the build stage: tests/cli_lib.sh's sanitized_build)
#   4. tsan      -DHS_TSAN=ON (ThreadSanitizer) into build-tsan/: the model's
#                2-thread unit test (test_model), then training with
#                --threads 2 and circuit --threads 2; any report fails
#   5. valgrind  one end-to-end run under valgrind --error-exitcode=99
#                --leak-check=full: train a tiny model, then eval it, and
#                inspect / circuit / weights it when this build has them, and
#                eval missing and corrupt files (JOBS runs at a time)
#   6. fuzz      clang -DHS_FUZZ=ON -DHS_SANITIZE=ON into build-fuzz/; every
#                tests/fuzz/fuzz_*.c runs HS_FUZZ_SECONDS (default 15) from its
#                seed corpus, FUZZ_JOBS (default JOBS) targets at a time; any
#                crash fails (the input is kept in build-fuzz/). The seed
#                corpora hold what a 60 s run of each target reached (merged
#                with -merge=1): 15 s from them ends at more coverage than 20 s
#                from the hand-written seeds alone did
# Prints the wall and CPU time of each stage. Environment:
#   HS_FUZZ_SECONDS=N   fuzz time per target (0 skips the stage)
#   HS_TEST_STAGES="build asan tsan valgrind fuzz"   which stages to run (deps always)
#   JOBS=N              parallel build/test jobs (default nproc)
#   FUZZ_JOBS=N         fuzz targets run at a time (default JOBS)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
JOBS=${JOBS:-$(nproc)}
FUZZ_SECONDS=${HS_FUZZ_SECONDS:-15}
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
# CPU_MS <- the CPU time (user + system, ms) of this shell's finished
# children so far (bash's `times`, second line "XmY.YYYs XmY.YYYs"; run in
# this shell, not in a $(...) subshell, which has no children). A stage's CPU
# time over 2 (JOBS) is about what it takes on a quiet 2-core machine,
# whatever else shares the machine while it runs.
TIMES_TXT=$(mktemp "${TMPDIR:-/tmp}/hs_times.XXXXXX")
cpu_now() {
    times >"$TIMES_TXT"
    CPU_MS=$(sed -n 2p "$TIMES_TXT" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); sub("s", "", a[2]); t += a[1] * 60 + a[2] } printf "%d", t * 1000 }')
}
stage_begin() {
    STAGE=$1
    T0=$(date +%s)
    cpu_now
    C0=$CPU_MS
    echo "==== stage $STAGE ($(date -u +%H:%M:%S))"
}
stage_end() {
    cpu_now
    local dt=$(($(date +%s) - T0)) dc=$(((CPU_MS - C0) / 1000))
    TIMES+=("$(printf '%-9s %4d s  (CPU %4d s)' "$STAGE" "$dt" "$dc")")
    echo "==== stage $STAGE: ${dt} s, CPU ${dc} s"
}
report() {
    local rc=$?
    echo "==== stage times"
    for t in "${TIMES[@]}"; do echo "  $t"; done
    if [ "$rc" -ne 0 ]; then echo "  FAILED in stage ${STAGE:-?} (exit $rc)"; fi
    cpu_now
    echo "  total     $(printf '%4d' $(($(date +%s) - T_ALL))) s  (CPU $(printf '%4d' $((CPU_MS / 1000))) s)"
    rm -f "$TIMES_TXT"
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
    # what ctest runs (the CLI and the test programs); the benches, which no
    # test runs, are built and warning-checked in the build stage
    BUILD=build-asan TARGETS="headscope headscope_shared $(cd tests && ls test_*.c | sed 's/\.c$//' | tr '\n' ' ')" \
        bash scripts/build.sh -DHS_WERROR=ON -DHS_SANITIZE=ON
    # detect_leaks: LeakSanitizer too; abort_on_error: a report is a failure.
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    # tests/lsan.supp: one leak inside cairo's own PDF font subsetting
    # (cairo_surface_finish of a PDF that embeds a CFF fallback font, Noto CJK)
    export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp}
    (cd build-asan && ctest --output-on-failure -j"$JOBS" -LE nosanitize)
    unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
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
    # exit 99 on a valgrind error: told apart from headscope's own exit 1,
    # which the missing and corrupt files below must give
    VG=(valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect
        --show-leak-kinds=definite,indirect --track-fds=no --quiet)
    vg() { echo "  valgrind: headscope $*" >&2; "${VG[@]}" "$HS" "$@"; }
    vg train --steps 4 --layers 1 --d-model 16 --heads 2 --batch 8 --eval-every 2 \
        --checkpoint-every 2 --out "$V/m.safetensors" >/dev/null
    # The runs below read the trained model and nothing of each other: JOBS
    # at a time (valgrind runs a program on one core), the longest first.
    # vg_job NAME OK_CODES ARGS...: headscope ARGS under valgrind, output in
    # $V/NAME.log; its exit code must be one of OK_CODES ("0", "1", "0 1").
    vg_job() {
        local name=$1 ok=$2 rc=0
        shift 2
        echo "  valgrind: headscope $*" >&2
        "${VG[@]}" "$HS" "$@" >"$V/$name.log" 2>&1 || rc=$?
        case " $ok " in *" $rc "*) echo ok >"$V/$name.status" ;; *) echo "exit $rc (expected $ok)" >"$V/$name.status" ;; esac
    }
    SENT="the animal did not cross the street because it was too tired , so the"
    running=0
    vg_start() {
        if [ "$running" -ge "$JOBS" ]; then wait -n || true; running=$((running - 1)); fi
        vg_job "$@" &
        running=$((running + 1))
    }
    names=()
    for c in circuit inspect weights; do
        if "$HS" "$c" --help >"$V/help" 2>&1 && ! grep -q "not available in this build" "$V/help"; then
            case "$c" in
                inspect) vg_start "$c" 0 inspect --model "$V/m.safetensors" --sentence "$SENT" --out "$V/$c" ;;
                *) vg_start "$c" 0 "$c" --model "$V/m.safetensors" --out "$V/$c" ;;
            esac
            names+=("$c")
        else
            echo "  valgrind: $c not in this build yet, skipped"
        fi
    done
    vg_start eval 0 eval --model "$V/m.safetensors"
    vg_start eval_train 0 eval --model "$V/m.safetensors" --split train --json
    # a user error path: unknown file, and a corrupt checkpoint
    vg_start eval_missing 1 eval --model "$V/nope.safetensors"
    names+=(eval eval_train eval_missing)
    k=0
    for f in $(ls tests/checkpoint/corpus/*.safetensors | head -8); do
        vg_start "corrupt$k" "0 1" eval --model "$f"
        names+=("corrupt$k")
        k=$((k + 1))
    done
    wait
    failed=0
    for n in "${names[@]}"; do
        st=$(cat "$V/$n.status" 2>/dev/null || echo "no status")
        if [ "$st" != ok ]; then
            echo "valgrind: $n: $st"
            tail -30 "$V/$n.log"
            failed=1
        fi
    done
    [ "$failed" -eq 0 ] || exit 1
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
    # FUZZ_JOBS targets at a time (default JOBS: one per core); each still
    # fuzzes FUZZ_SECONDS (-max_total_time) on its own single-threaded
    # process, so the check per target is unchanged and the stage takes
    # about ceil(targets / FUZZ_JOBS) x FUZZ_SECONDS.
    FUZZ_JOBS=${FUZZ_JOBS:-$JOBS}
    fuzz_one() {  # fuzz_one NAME: runs one target; its summary in build-fuzz/NAME.result
        local name=$1 seeds grown="" work regress t0 rc execs
        case "$name" in
            # the corrupt-checkpoint corpus, and what fuzzing grew from it
            fuzz_safetensors) seeds=tests/checkpoint/corpus grown=tests/fuzz/corpus_safetensors ;;
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
            "$work" "$seeds" ${grown:+"$grown"} ${regress:+"$regress"} >build-fuzz/"$name".log 2>&1 || rc=$?
        execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' build-fuzz/"$name".log | grep -o '[0-9]*$' || echo "?")
        echo "$rc $execs $(($(date +%s) - t0))" >build-fuzz/"$name".result
    }
    names=()
    for src in tests/fuzz/fuzz_*.c; do names+=("$(basename "$src" .c)"); done
    rm -f build-fuzz/*.result
    running=0
    for name in "${names[@]}"; do
        if [ "$running" -ge "$FUZZ_JOBS" ]; then wait -n || true; running=$((running - 1)); fi
        fuzz_one "$name" &
        running=$((running + 1))
    done
    wait
    failed=""
    for name in "${names[@]}"; do
        read -r rc execs secs <build-fuzz/"$name".result || { rc=1; execs="?"; secs="?"; }
        echo "  $name: $execs executions in $secs s, exit $rc"
        TIMES+=("$(printf '  %-18s %s execs' "$name" "$execs")")
        if [ "$rc" -ne 0 ]; then
            tail -40 build-fuzz/"$name".log
            echo "fuzz: $name failed; the input is in build-fuzz/artifacts/ (add it to tests/fuzz/regressions/${name#fuzz_}/)"
            failed="$failed $name"
        fi
    done
    [ -z "$failed" ] || exit 1
    stage_end
fi
echo "all stages passed"
