#!/usr/bin/env bash
# scripts/readme_figs.sh -- redraws the README's GPT-2 figures (docs/img/gpt2_*.png)
#   from the code: the 12 x 12 attention grid at page width, DLA (the 44 largest
#   of 172 components and the rest summed) and an EAP circuit of IOI prompts,
#   on a GPT-2-small-shaped folder with RANDOM weights (tests/py/make_hf_gpt2.py
#   --bench plus the real tokenizer; see bench/gpt2_speed.sh): the figures show
#   the layout a paper gets at GPT-2's size, not GPT-2's mechanisms.
# Run as: bash scripts/readme_figs.sh HEADSCOPE_BIN GPT2_FOLDER [OUT_DIR]
#   e.g. bash scripts/readme_figs.sh build/headscope /work/gpt2/gpt2-small-random
# Writes docs/img/gpt2_random_{grid_page,dla_page,circuit_eap}.png (110 dpi,
# each < 300 KB) and leaves the full output folders in OUT_DIR (default a temp
# folder, removed). discover takes about 1 min of CPU (8 min on a loaded 2-core box).
set -euo pipefail
HS=${1:?usage: readme_figs.sh HEADSCOPE_BIN GPT2_FOLDER [OUT_DIR]}
M=${2:?usage: readme_figs.sh HEADSCOPE_BIN GPT2_FOLDER [OUT_DIR]}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
IMG="$ROOT/docs/img"
if [ -n "${3:-}" ]; then OUT=$3; mkdir -p "$OUT"; else OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT; fi

"$HS" inspect --model "$M" --sentence "When Mary and John went to the store, John gave a drink to" \
    --width page --dpi 110 --format png --out "$OUT/inspect" >/dev/null
"$HS" prompts ioi --model "$M" --n 8 --template 0 --force --out "$OUT/ioi.jsonl" >/dev/null
"$HS" discover --model "$M" --data "$OUT/ioi.jsonl" --method eap --top 40 --width page \
    --dpi 110 --format png --out "$OUT/discover" >/dev/null

cp "$OUT/inspect/attention_grid.png" "$IMG/gpt2_random_grid_page.png"
cp "$OUT/inspect/dla.png" "$IMG/gpt2_random_dla_page.png"
cp "$OUT/discover/circuit.png" "$IMG/gpt2_random_circuit_eap.png"
for f in grid_page dla_page circuit_eap; do
    n=$(stat -c %s "$IMG/gpt2_random_$f.png")
    [ "$n" -lt 300000 ] || { echo "readme_figs: gpt2_random_$f.png is $n bytes, over 300 KB" >&2; exit 1; }
    echo "docs/img/gpt2_random_$f.png  $n bytes"
done
