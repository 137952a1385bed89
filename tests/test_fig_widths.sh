#!/usr/bin/env bash
# tests/test_fig_widths.sh -- every figure kind of inspect (a sentence with
#   --vs, the two-sentence pair, --only of 8 heads), circuit, weights and the
#   experiment commands (patch, ablate, dla, lens, heads, discover,
#   faithfulness) at --width column and --width page with the default font,
#   in PNG, SVG and PDF: the run succeeds; each figure is exactly the width
#   (PNG pHYs to the pixel per metre, SVG and PDF exactly; tests/py/
#   fig_widths.py), its smallest text >= 6 pt, every label of its JSON a text
#   of its SVG; and the only figures skipped (a note naming their files) are
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
    local name=$1 w=$2 allow=${3:-}
    "$PY" "$HERE/py/fig_widths.py" "$TMP/$name" "$w" >"$TMP/$name.widths" ||
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
# the 2 x 4 grid of a 15-token sentence: 4 x 2 in a column, 2 x 4 on a page
grep -c '>L1H3</text>' "$TMP/i_column/attention_grid.svg" >/dev/null || fail "column grid: panels not named"
echo "ok"
