#!/usr/bin/env bash
# tests/test_golden_cli.sh -- every command's outputs pinned byte for byte
# (tests/py/golden_cli.py; the record is tests/golden/cli_outputs.txt): inspect
# in every format (the pair and difference on a page and in a column, a crop,
# --only, the query row, --vs, a rerun into its own folder), weights, patch,
# ablate (zero, mean, resample), dla (and --by-position), lens, heads (a
# target pattern), circuit on a Winograd and an induction model, view, eval,
# train (a dataset dump, --keep, --resume), timeline, and a table of user and
# usage errors: exit status, stdout, stderr and the SHA-256 of every file
# written, with --threads 1 and 2 (which must agree). A change that moves one
# byte of any output or message fails here. After an intended change,
# regenerate the record with
#   /usr/bin/python3 tests/py/golden_cli.py "$PWD/build/headscope" "$PWD/tests" /tmp/golden --write
# and say in the commit why the bytes moved.
# Run as: bash tests/test_golden_cli.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail
BUILD_DIR=${1:?usage: test_golden_cli.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_golden_cli.sh BUILD_DIR HEADSCOPE_BIN}
mkdir -p "${HS_TEST_TMP:-$BUILD_DIR/testtmp}"
TMP=$(mktemp -d "${HS_TEST_TMP:-$BUILD_DIR/testtmp}/golden_cli.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
HERE=$(cd "$(dirname "$0")" && pwd)
case "$HS" in /*) ;; *) HS="$PWD/$HS" ;; esac
/usr/bin/python3 "$HERE/py/golden_cli.py" "$HS" "$HERE" "$TMP/work"
