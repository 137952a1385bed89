#!/usr/bin/env bash
# tests/test_fig_widths.sh -- every figure kind of inspect (a sentence with
#   --vs, the two-sentence pair, --only of 8 heads), circuit, weights and the
#   experiment commands (patch, ablate, dla, lens, heads, discover,
#   faithfulness) at --width column and --width page with the default font,
#   in PNG, SVG and PDF: the run succeeds; each figure is exactly the width
#   (PNG pHYs to the pixel per metre, SVG and PDF exactly; tests/py/
#   fig_widths.py), its smallest text >= 6 pt, every label of its JSON a text
#   of its SVG, an inspect run's labels at one size in all its figures; and the only figures skipped (a note naming their files) are
#   those that truly cannot fit: weights' full QK and OV circuits of the 36-word
#   vocabulary in a column (36 labels side by side at 6 pt need 3.45 in before
#   the token labels and the colour bar). Overlap and the smallest text of
#   each kind are checked on the layout in test_viz_print.
# Run as: bash tests/test_fig_widths.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_fig_widths.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_fig_widths.sh BUILD_DIR HEADSCOPE_BIN}
mkdir -p "${HS_TEST_TMP:-$BUILD_DIR/testtmp}"
TMP=$(mktemp -d "${HS_TEST_TMP:-$BUILD_DIR/testtmp}/fig_widths.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
PY=/usr/bin/python3
# shellcheck source=tests/cli_lib.sh
source "$(dirname "$0")/cli_lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
command -v pdfinfo >/dev/null || fail "pdfinfo (poppler-utils) is missing"

M="$TMP/m.safetensors"
cp "$HERE/checkpoint/circuit_tiny.safetensors" "$M"
run 0 ds train --steps 1 --eval-every 0 --dataset "$TMP/ds.txt" --out "$TMP/ds.safetensors"
"$PY" "$HERE/py/winograd_pairs.py" "$TMP/ds.txt" "$TMP/pairs_all.jsonl"
head -n 16 "$TMP/pairs_all.jsonl" >"$TMP/pairs.jsonl"
P="$TMP/pairs.jsonl"
TIRED="the animal did not cross the street because it was too tired , so the"
WET="the animal did not cross the street because it was too wet , so the"
FMT=(--format png,svg,pdf,json)

# check NAME WIDTH_IN [ALLOWED_NOTE_REGEX]: the run NAME's folder holds figures
# exactly WIDTH_IN wide; its stderr holds no note but those ALLOWED
check() {
    local name=$1 w=$2 allow=${3:-} one=()
    case $name in i_* | ip_* | io_*) one=(--one-size 1) ;; esac # an inspect run: one label size
    "$PY" "$HERE/py/fig_widths.py" "$TMP/$name" "$w" "${one[@]}" >"$TMP/$name.widths" ||
        fail "$name: $(tail -n 1 "$TMP/$name.widths")"
    grep -q '\.pdf Page size' "$TMP/$name.widths" || fail "$name: no PDF checked"
    local notes
    notes=$(grep 'note: .* not written' "$TMP/$name.err" || true)
    if [ -n "$allow" ]; then notes=$(echo "$notes" | grep -Ev "$allow" || true); fi
    [ -z "$notes" ] || fail "$name: figures skipped: $notes"
}

for wn in column page; do
    w=3.25
    [ "$wn" = page ] && w=6.75
    run 0 "i_$wn" inspect --model "$M" --sentence "$TIRED" --vs street --out "$TMP/i_$wn" --width "$wn" "${FMT[@]}"
    check "i_$wn" "$w"
    [ -e "$TMP/i_$wn/attention_grid.svg" ] || fail "i_$wn: no attention grid"
    run 0 "ip_$wn" inspect --model "$M" --sentence "$TIRED" --sentence "$WET" --out "$TMP/ip_$wn" --width "$wn" "${FMT[@]}"
    check "ip_$wn" "$w"
    run 0 "io_$wn" inspect --model "$M" --sentence "$TIRED" --only L0H0,L0H1,L0H2,L0H3,L1H0,L1H1,L1H2,L1H3 \
        --out "$TMP/io_$wn" --width "$wn" "${FMT[@]}"
    check "io_$wn" "$w"
    run 0 "c_$wn" circuit --model "$M" --out "$TMP/c_$wn" --width "$wn" "${FMT[@]}"
    check "c_$wn" "$w"
    allow=
    [ "$wn" = column ] && allow='^headscope weights: note: L[0-9]+H[0-9]+_(QK|OV)\.png, L[0-9]+H[0-9]+_(QK|OV)\.svg, L[0-9]+H[0-9]+_(QK|OV)\.pdf not written: .* cannot show every label in 3\.25 in at 6 pt'
    run 0 "w_$wn" weights --model "$M" --out "$TMP/w_$wn" --width "$wn" "${FMT[@]}"
    check "w_$wn" "$w" "$allow"
    # a title's subscripts never go under 6 pt, even at --font-size 6
    run 0 "w6_$wn" weights --model "$M" --out "$TMP/w6_$wn" --width "$wn" --font-size 6 "${FMT[@]}"
    check "w6_$wn" "$w" "$allow"
    # a note quotes a typeset title as text (W_E W_QK W_E^T), never its markup
    grep -q '_{' "$TMP/w_$wn.err" && fail "w_$wn: a note shows title markup: $(grep -m1 '_{' "$TMP/w_$wn.err")"
    for cmd in patch ablate dla lens heads; do
        run 0 "${cmd}_$wn" "$cmd" --model "$M" --data "$P" --out "$TMP/${cmd}_$wn" --width "$wn" "${FMT[@]}"
        check "${cmd}_$wn" "$w"
    done
    run 0 "d_$wn" discover --model "$M" --data "$P" --top 12 --out "$TMP/d_$wn" --width "$wn" "${FMT[@]}"
    check "d_$wn" "$w"
    run 0 "f_$wn" faithfulness --model "$M" --data "$P" --graph "$TMP/d_$wn/graph.json" --out "$TMP/f_$wn" \
        --width "$wn" "${FMT[@]}"
    check "f_$wn" "$w"
done
# the grid's arrangement, told by how often a token is drawn (left of each row
# of panels, under each column): the 2 x 4 grid of a 15-token sentence is 4 x 2
# in a column (each panel named), 2 x 4 on a page; --only of 8 heads with no
# width is 2 x 4 on a page (it was one row, 10.79 in); --layout 8x1 is drawn
# as asked; a --layout that is not ROWSxCOLS is a usage error
arrangement() { # NAME: "ROWSxCOLS" of NAME's attention_grid.svg
    "$PY" - "$TMP/$1/attention_grid.svg" <<'PYEOF'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
t = [e.get("class") for e in root.iter(ns + "text") if "".join(e.itertext()) == "because"]
print("%dx%d" % (t.count("ytick"), t.count("xtick")))
PYEOF
}
[ "$(arrangement i_column)" = 4x2 ] || fail "column grid is $(arrangement i_column), not 4x2"
grep -q '>L1H3</text>' "$TMP/i_column/attention_grid.svg" || fail "column grid: panels not named"
[ "$(arrangement i_page)" = 2x4 ] || fail "page grid is $(arrangement i_page), not 2x4"
run 0 only8 inspect --model "$M" --sentence "$TIRED" --only L0H0,L0H1,L0H2,L0H3,L1H0,L1H1,L1H2,L1H3 \
    --out "$TMP/only8" --format svg,json
grep -q 'width="6.7500in"' "$TMP/only8/attention_grid.svg" || fail "--only of 8 heads: the grid is not a page wide"
[ "$(arrangement only8)" = 2x4 ] || fail "--only of 8 heads is $(arrangement only8), not 2x4"
run 0 lay inspect --model "$M" --sentence "$TIRED" --layout 8x1 --width column --out "$TMP/lay" --format svg,pdf,json
check lay 3.25
[ "$(arrangement lay)" = 8x1 ] || fail "--layout 8x1 drew $(arrangement lay)"
run 2 laybad inspect --model "$M" --sentence "$TIRED" --layout 2by3
one_line laybad "--layout must be ROWSxCOLS (e.g. 4x2), not '2by3'"
# a layout that does not suit the panels stops the run in one line (it was a
# skipped grid with a note quoting a rule the layout met, and exit 0)
run 1 laynot inspect --model "$M" --sentence "$TIRED" --layout 1x9 --out "$TMP/laynot"
one_line laynot "--layout 1x9 does not suit 8 panels: rows x cols must hold them, with at most 8 rows and 8 columns and no row left empty"
[ -e "$TMP/laynot" ] && fail "--layout 1x9: the failed run left its folder"
echo "ok"
