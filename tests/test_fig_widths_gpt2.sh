#!/usr/bin/env bash
# tests/test_fig_widths_gpt2.sh -- the paper figures of a GPT-2-small-shaped
#   model (issue 35): 12 layers x 12 heads, d_model 768, random weights
#   (tests/py/make_hf_gpt2_bpe.py --small, written once per build directory
#   into testtmp/gpt2_small_fig, 497 MB) with GPT-2's real tokenizer files, on
#   sentences of 13, 20 and 60 tokens (with the BOS). At --width column and
#   --width page: inspect (grid, layer means, DLA) at all three lengths; patch
#   (AtP: every act's figure) at 13; dla, lens and heads at 60; a pair's strip
#   and differences and --only at 20 (each command at one or two lengths
#   keeps the test short). Every figure is written; each one:
#     - is exactly the width (tests/py/fig_widths.py: PNG pHYs, SVG, PDF);
#     - is at most the 9 in height budget (the PDF's page);
#     - has its smallest text >= 6 pt and every label of its JSON drawn, or
#       says under its title what it thinned ("every 6th token label shown",
#       "no token labels: ...", "the 44 largest of 172 ...");
#     - has its PNG the PDF's size to a pixel, and its SVG the PDF's height,
#       at the run's dpi: 72 dpi at 13 tokens, 150 at 20, 300 at 60 (one
#       dpi per run keeps the test short), and the 20-token page grid at all
#       three.
#   Every inspect run's labels are at one font size in all its figures
#   (fig_widths.py --one-size); the query row of 144 heads is written (as
#   12 layers' blocks of 12 heads). The one note allowed: a head act by
#   position (144 heads x T positions, over the figure cap, JSON written).
#   Left out, with the reason: discover and faithfulness (EAP's curve of 11
#   circuit sizes costs over a minute of CPU here; discover's circuit graph of
#   12 heads a layer is refused in a column, "needs 6.30 in"), circuit (the Winograd toy's check: refused
#   without task metadata, shown below), ablate and weights (168 ablated
#   forwards, 144 x 144 composition scores: tens of CPU seconds each at this
#   size; their figures' shapes do not depend on the model's width).
#   Skipped (exit 77) without the tokenizer files unless CI is set.
# Run as: bash tests/test_fig_widths_gpt2.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_fig_widths_gpt2.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_fig_widths_gpt2.sh BUILD_DIR HEADSCOPE_BIN}
mkdir -p "${HS_TEST_TMP:-$BUILD_DIR/testtmp}"
TMP=$(mktemp -d "${HS_TEST_TMP:-$BUILD_DIR/testtmp}/fig_widths_gpt2.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/cli_lib.sh
source "$HERE/cli_lib.sh"
command -v pdfinfo >/dev/null || fail "pdfinfo (poppler-utils) is missing"
need_gpt2_tokenizer

# the model, once per build directory: rewritten when its generator changes
G="${HS_TEST_TMP:-$BUILD_DIR/testtmp}/gpt2_small_fig"
STAMP=$(cat "$HERE/py/make_hf_gpt2_bpe.py" "$HERE/py/make_hf_gpt2.py" | sha256sum | cut -c1-16)
if [ "$(cat "$G/stamp" 2>/dev/null)" != "$STAMP" ]; then
    rm -rf "$G" "$G.new"
    "$PY" "$HERE/py/make_hf_gpt2_bpe.py" "$G.new" "$ENC" --small
    echo "$STAMP" >"$G.new/stamp"
    mv "$G.new" "$G"
fi

S13="the animal did not cross the street because it was too tired"
S20="When Mary and John went to the store on a sunny day, John gave a cold drink to"
S60="When Mary and John went to the store on a sunny Saturday morning after a long week of work at the office in the city, they met a friend who told them about a new cafe by the river, and after they had walked there together and talked for an hour, John gave a drink to"
FMT=(--format png,svg,pdf,json)
# prompt sets of two prompts of n tokens: the sentence with other names and
# its last word the answer's name, corrupted to the wrong one (in a random
# model the direct path from the last token gives a logit difference that
# patching moves: the IOI form's differences are noise, and patch draws none)
data() { # N SENTENCE
    local s=$1 p
    for pair in "Mary John" "Anna Paul"; do
        set -- $pair
        p=${s//Mary/$1}
        p=${p//John/$2}
        p=${p% to}
        printf '{"prompt": "%s %s", "corrupted": "%s %s", "answer": " %s", "wrong": " %s"}\n' "$p" "$1" "$p" "$2" "$1" "$2"
    done
}
data "When Mary and John went out, John gave a drink to" >"$TMP/d13.jsonl"
data "$S20" >"$TMP/d20.jsonl"
data "$S60" >"$TMP/d60.jsonl"
for n in 13 20 60; do
    run 0 "tok$n" tokenize --model "$G" --text "$(head -n 1 "$TMP/d$n.jsonl" | sed 's/.*"prompt": "\([^"]*\)".*/\1/')"
    [ "$(wc -l <"$TMP/tok$n.out")" -eq "$n" ] || fail "the $n-token prompt is $(wc -l <"$TMP/tok$n.out") tokens"
done

# check NAME WIDTH_IN DPI [ALLOWED_NOTE_REGEX]; TALL_OK: a stem known over
# the height budget
check() {
    local name=$1 w=$2 dpi=$3 allow=${4:-}
    local one=()
    case $name in i[0-9]* | pair_* | only_* | g[0-9]*) one=(--one-size 1) ;; esac # inspect runs
    "$PY" "$HERE/py/fig_widths.py" "$TMP/$name" "$w" --dpi "$dpi" --max-height 9 --tall-ok "${TALL_OK:-}" \
        "${one[@]}" >"$TMP/$name.widths" ||
        fail "$name: $(tail -n 1 "$TMP/$name.widths")"
    if grep -q '\.png ' "$TMP/$name.widths"; then
        grep -q '\.pdf Page size' "$TMP/$name.widths" || fail "$name: no PDF checked"
    fi
    local notes
    notes=$(grep 'note: .*\(not written\|JSON only\)' "$TMP/$name.err" || true)
    if [ -n "$allow" ]; then notes=$(echo "$notes" | grep -Ev "$allow" || true); fi
    [ -z "$notes" ] || fail "$name: figures skipped: $notes"
}
BYPOS='^headscope patch: note: patch_(z|q|k|v|pattern)_by_position is 144 x [0-9]+, over the figure cap; writing its JSON only$'

for nd in 13:72 20:150 60:300; do
    n=${nd%%:*} dpi=${nd##*:}
    S=$(eval echo "\$S$n")
    for wn in column page; do
        w=3.25
        [ "$wn" = page ] && w=6.75
        o=(--width "$wn" --dpi "$dpi" "${FMT[@]}")
        run 0 "i${n}_$wn" inspect --model "$G" --sentence "$S" --out "$TMP/i${n}_$wn" "${o[@]}"
        check "i${n}_$wn" "$w" "$dpi"
        for f in attention_grid query_row dla L0_mean L11_mean; do
            [ -e "$TMP/i${n}_$wn/$f.pdf" ] || fail "i${n}_$wn: no $f.pdf"
        done
        [ "$n" = 20 ] && continue # the pair and --only below are at 20
        if [ "$n" = 13 ]; then run 0 "p${n}_$wn" patch --model "$G" --data "$TMP/d$n.jsonl" --method atp --out "$TMP/p${n}_$wn" "${o[@]}"
        check "p${n}_$wn" "$w" "$dpi" "$BYPOS"; continue; fi
        for c in dla lens heads; do
            run 0 "${c}${n}_$wn" "$c" --model "$G" --data "$TMP/d$n.jsonl" --out "$TMP/${c}${n}_$wn" "${o[@]}"
            check "${c}${n}_$wn" "$w" "$dpi"
        done
    done
done
# a pair's query rows and difference, --only: 20 tokens
for wn in column page; do
    w=3.25
    [ "$wn" = page ] && w=6.75
    o=(--width "$wn" --dpi 150 "${FMT[@]}")
    run 0 "pair_$wn" inspect --model "$G" --sentence "$S20" --sentence "${S20/cold/hot}" --out "$TMP/pair_$wn" "${o[@]}"
    # the pair's strip of 12 layer means x 3 within 9 in on a page (it was
    # 9.17 in), thinned in a column (it was refused), its bars as tall as
    # their blocks (tests/test_viz_checklist.c)
    check "pair_$wn" "$w" 150
    [ -e "$TMP/pair_$wn/query_row_pair.pdf" ] || fail "pair_$wn: no query_row_pair.pdf"
    run 0 "only_$wn" inspect --model "$G" --sentence "$S20" --only L0H0,L5H3,L9H9,L11H11 --out "$TMP/only_$wn" "${o[@]}"
    check "only_$wn" "$w" 150
done
# one figure at all three dpi: the 20-token grid at page width
for dpi in 72 300; do
    run 0 "g$dpi" inspect --model "$G" --sentence "$S20" --out "$TMP/g$dpi" --width page --dpi "$dpi" "${FMT[@]}"
    check "g$dpi" 6.75 "$dpi"
done
# circuit is the Winograd toy's check: on this model it is refused in one line
run 1 circ circuit --model "$G" --out "$TMP/circ"
one_line circ "has no task metadata"
echo "ok"
