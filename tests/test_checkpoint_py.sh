#!/usr/bin/env bash
# tests/test_checkpoint_py.sh BUILD_DIR HEADSCOPE_BIN -- the stdlib-only Python
# helpers: regenerating the TransformerLens-shaped fixture and the corrupt
# corpus gives exactly the committed files (so the C tests run without
# Python and the fixtures cannot drift from their generators), and the
# independent reader accepts the fixture and rejects a corrupt file. Without
# /usr/bin/python3: skipped (exit 77), a failure when CI is set.
set -euo pipefail
BUILD=${1:?build dir}
PY=/usr/bin/python3
cd "$(dirname "$0")"
# shellcheck source=tests/cli_lib.sh
. ./cli_lib.sh
if [ ! -x "$PY" ]; then skip_test "no $PY"; fi
OUT="$BUILD/testtmp/py_fixtures.$$"
rm -rf "$OUT"; mkdir -p "$OUT"
trap 'rm -rf "$OUT"' EXIT
"$PY" py/st_write_reference.py "$OUT/tl_reference.safetensors"
cmp "$OUT/tl_reference.safetensors" checkpoint/tl_reference.safetensors
"$PY" py/make_corrupt.py "$OUT" >/dev/null
cmp "$OUT/corrupt_cases.tsv" checkpoint/corrupt_cases.tsv
for f in "$OUT"/corpus/*.safetensors; do
  cmp "$f" "checkpoint/corpus/$(basename "$f")"
done
"$PY" py/st_read.py checkpoint/tl_reference.safetensors --expect-ref \
  --tl-config checkpoint/tl_config_fields.txt
if "$PY" py/st_read.py checkpoint/corpus/offsets_overlap.safetensors 2>/dev/null; then
  echo "st_read.py accepted overlapping offsets"; exit 1
fi
echo "ok: fixtures reproducible, reader agrees"
