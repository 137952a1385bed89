#!/usr/bin/env bash
# tests/test_fig_titles.sh -- a reviewer's checklist (issue 35): every
# program-written title and label on a figure writes a minus as U+2212 and an
# arrow as U+2192, never ASCII "-" before a number or "->". Runs weights and
# circuit on the Winograd fixture (tests/checkpoint/circuit_tiny.safetensors),
# trains a 2-layer induction model with a checkpoint kept, runs circuit and
# timeline on it, all as SVG, and scans the <text> of every SVG written
# (titles, axis titles, labels; the models' tokens hold neither).
# Run as: bash tests/test_fig_titles.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_fig_titles.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_fig_titles.sh BUILD_DIR HEADSCOPE_BIN}
mkdir -p "$BUILD_DIR/testtmp"
TMP=$(mktemp -d "$BUILD_DIR/testtmp/fig_titles.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/cli_lib.sh
source "$HERE/cli_lib.sh"

M="$HERE/checkpoint/circuit_tiny.safetensors"
run 0 weights weights --model "$M" --out "$TMP/w" --format svg --dpi 72
run 0 circuit circuit --model "$M" --out "$TMP/c" --format svg --dpi 72
run 0 train train --task induction --steps 40 --layers 2 --d-model 16 --heads 2 --batch 8 \
    --eval-every 20 --checkpoint-every 20 --keep "$TMP/keep" --out "$TMP/ind.safetensors"
run 0 circuit_ind circuit --model "$TMP/ind.safetensors" --out "$TMP/ic" --format svg --dpi 72
run 0 timeline timeline "$TMP/keep" --out "$TMP/tl" --format svg --dpi 72

"$PY" - "$TMP/w" "$TMP/c" "$TMP/ic" "$TMP/tl" <<'PYEOF' || fail "ASCII minus or arrow in a figure's text"
import glob, os, re, sys
import xml.etree.ElementTree as ET
bad, n_svg, n_text, seen = [], 0, 0, set()
for d in sys.argv[1:]:
    for path in sorted(glob.glob(os.path.join(d, "*.svg"))):
        n_svg += 1
        for el in ET.parse(path).getroot().iter():
            if not el.tag.endswith("}text") and el.tag != "text":
                continue
            s = "".join(el.itertext())
            n_text += 1
            seen.add(os.path.basename(path))
            # "->" as an arrow; "-" as a minus or a range's start: before a
            # digit and not inside a word ("layer-0", "L1-2" are words)
            if "->" in s or re.search(r"(?<![A-Za-z0-9])-[0-9]", s):
                bad.append("%s: %r" % (os.path.relpath(path, os.path.dirname(d)), s))
print("%d SVGs, %d texts" % (n_svg, n_text))
for b in bad:
    print("ASCII minus or arrow:", b)
# the figures whose titles had them, so the scan cannot pass by missing them
for want in ("copying.svg", "path_patching.svg"):
    assert want in seen, "no %s written" % want
assert n_svg >= 10, n_svg
sys.exit(1 if bad else 0)
PYEOF
echo "PASS: test_fig_titles"
