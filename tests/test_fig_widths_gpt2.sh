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
#   discover (on a toy of GPT-2's 12 x 12 heads) and weights (on GPT-2's
#   vocabulary), cheaply: see their case below.
#   Left out, with the reason: faithfulness (EAP's curve of 11 circuit sizes
#   costs over a minute of CPU here; its figures are discover's), circuit
#   (the Winograd toy's check: refused without task metadata, shown below),
#   ablate (168 ablated forwards: tens of CPU seconds at this size; its
#   figure is a bar chart of 168 components, the kind dla's 172 are).
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
# discover and weights at GPT-2's shapes, cheaply (issue 35; their GPT-2
# runs cost 40-60 CPU seconds each here, in the scores, not the figures):
# - discover on a toy of GPT-2's 12 layers x 12 heads (d_model 24; the graph
#   is GPT-2's, 32,491 edges, and its default 5% circuit over the figure's
#   cap of 1,024 edges): the circuit drawn at both widths, in a column each
#   layer's heads on two rows of 6 (it was refused, "needs 6.30 in"), with
#   the cap's one note (and no other);
# - weights --top-tokens 200 on a 2 x 2 model with GPT-2's vocabulary (the
#   QK/OV figures are GPT-2's: 128 x 128 of its tokens): every head's QK and
#   OV written with the first 128 tokens and one summary note (it was 8
#   notes here, 292 on GPT-2, and no QK/OV image).
# The circuit keeps to the height budget: the strongest edges that fit and
# their nodes alone, said under its title (1,024 edges on 38 rows were 18 in
# tall in a column).
# one_note NAME REGEX: NAME's only note (a progress line aside) matches REGEX
one_note() {
    [ "$(grep -c 'note: ' "$TMP/$1.err")" -eq 1 ] || fail "$1: not one note: $(cat "$TMP/$1.err")"
    has -- "$2" "$TMP/$1.err" || fail "$1: no note matches '$2': $(cat "$TMP/$1.err")"
}
run 0 t12 train --out "$TMP/t12.safetensors" --steps 1 --layers 12 --heads 12 --d-model 24 --seed 1 --eval-every 0
printf '%s\n' '{"prompt": "the animal did not cross the street because it was too tired , so the", "corrupted": "the animal did not cross the street because it was too wet , so the", "answer": "animal", "wrong": "street"}' \
    '{"prompt": "the dog did not cross the road because it was too slow , so the", "corrupted": "the dog did not cross the road because it was too wide , so the", "answer": "dog", "wrong": "road"}' >"$TMP/toy.jsonl"
CAP='^headscope discover: note: the circuit has 16[0-9][0-9] edges, over the figure'"'"'s cap of 1024; circuit draws its [0-9]* strongest by |score|, as many as fit the height (circuit.json the 1024 strongest, graph.json every edge)$'
"$PY" "$HERE/py/make_hf_gpt2_bpe.py" "$TMP/gv" "$ENC"
for wn in column page; do
    w=3.25
    [ "$wn" = page ] && w=6.75
    o=(--width "$wn" --dpi 72 --format png,svg,pdf,json)
    run 0 "disc_$wn" discover --model "$TMP/t12.safetensors" --data "$TMP/toy.jsonl" --method eap --out "$TMP/disc_$wn" "${o[@]}"
    one_note "disc_$wn" "$CAP"
    # the note's count is what the figure draws (one <g id="e-..."> per edge)
    k=$(sed -n 's/.*circuit draws its \([0-9]*\) strongest.*/\1/p' "$TMP/disc_$wn.err")
    [ "$k" -eq "$(grep -o '<g id="e-' "$TMP/disc_$wn/circuit.svg" | wc -l)" ] ||
        fail "disc_$wn: the note says $k edges drawn, circuit.svg has $(grep -o '<g id="e-' "$TMP/disc_$wn/circuit.svg" | wc -l)"
    check "disc_$wn" "$w" 72
    for f in circuit faithfulness_curve; do
        [ -e "$TMP/disc_$wn/$f.pdf" ] || fail "disc_$wn: no $f.pdf"
    done
    run 0 "wts_$wn" weights --model "$TMP/gv" --top-tokens 200 --out "$TMP/wts_$wn" --width "$wn" --dpi 72 --format png,svg,pdf,json
    one_note "wts_$wn" '^headscope weights: note: 200 tokens, over the figure cap of 128 a side: the QK and OV figures of the 4 heads show the first 128 (their JSON holds all 200)$'
    check "wts_$wn" "$w" 72
    for f in L0H0_QK L1H1_OV; do
        [ -e "$TMP/wts_$wn/$f.pdf" ] || fail "wts_$wn: no $f.pdf"
        "$PY" -c 'import json, sys; j = json.load(open(sys.argv[1])); assert len(j["values"]) == 200, len(j["values"])' "$TMP/wts_$wn/$f.json" ||
            fail "wts_$wn: $f.json does not hold the 200 tokens"
    done
done
# circuit is the Winograd toy's check: on this model it is refused in one line
run 1 circ circuit --model "$G" --out "$TMP/circ"
one_line circ "has a BPE tokenizer and no task metadata; this command needs a model trained on the Winograd"
echo "ok"
