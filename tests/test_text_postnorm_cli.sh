#!/usr/bin/env bash
# tests/test_text_postnorm_cli.sh -- the chapter's post-norm finding (issue
# 31) on a short run: twelve blocks of width 32 (two heads, MLP 64), windows
# of 32, batch 8, lr 4e-3, 300 steps on two small fortunes files (BPE 300),
# seed 0, the warmup over the first fifth of the steps (the chapter's 200 of
# 1,000). Post-norm without warmup does not train: it ends at the unigram
# model's perplexity (asserted: at least 0.95x the unigram's, and over 1.4x
# post-norm with the warmup; here 74.58 against 37.89, unigram 75.18), and
# pre-norm without warmup beats post-norm with it (asserted: under 0.95x;
# here 34.23): pre-norm needs none. Seeds 1-4 give 74.82/41.87/33.68,
# 75.13/41.66/33.05, 75.24/51.84/34.62, 75.15/41.42/33.37 (post-norm cold /
# warm / pre-norm cold); at lr 3e-3 or 150 steps the cold post-norm run
# sometimes trains (seed 0 at 300 steps: 39.83), so the finding is asserted
# where it holds for every seed tried. Without fortunes the test is skipped
# (exit 77; a failure with CI set). In a sanitizer build (cli_lib.sh's
# sanitized_build) the three runs train 30 steps and the finding, which
# needs the 300, is the plain build's check.
# Run as: bash tests/test_text_postnorm_cli.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_text_postnorm_cli.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_text_postnorm_cli.sh BUILD_DIR HEADSCOPE_BIN}
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/cli_lib.sh
source "$HERE/cli_lib.sh"
cli_tmp textpost
fortunes_files goedel linuxcookie
STEPS=300
sanitized_build && STEPS=30
LR=4e-3

run 0 bpe bpe --corpus "${FILES[@]}" --vocab-size 300 --out "$TMP/tok.json"
ppl() { sed -n 's/^held-out perplexity \([0-9.]*\) .*/\1/p' "$TMP/train-$1.out"; }
for v in post-cold post-warm pre-cold; do
    place=${v%%-*}
    warm=1; [ "${v#*-}" = warm ] && warm=$((STEPS / 5))
    run 0 "train-$v" train --task text --corpus "${FILES[@]}" --tokenizer "$TMP/tok.json" --layers 12 \
        --heads 2 --d-model 32 --d-mlp 64 --n-ctx 32 --batch 8 --steps "$STEPS" --lr "$LR" \
        --warmup "$warm" --norm-place "$place" --eval-every 0 --out "$TMP/$v.safetensors"
done
uni=$(sed -n 's/.*unigram perplexity \([0-9.]*\).*/\1/p' "$TMP/train-post-cold.err" | head -1)
if [ "$STEPS" -ne 300 ]; then
    echo "PASS: test_text_postnorm_cli (sanitizer build: $STEPS steps, the finding is the plain build's check)"
    exit 0
fi
echo "held-out perplexity: post-norm no warmup $(ppl post-cold), post-norm warmup $(ppl post-warm), pre-norm no warmup $(ppl pre-cold); unigram $uni"
awk -v pc="$(ppl post-cold)" -v pw="$(ppl post-warm)" -v pr="$(ppl pre-cold)" -v u="$uni" \
    'BEGIN { exit !(u > 0 && pc >= 0.95 * u && pc > 1.4 * pw && pr < 0.95 * pw) }' ||
    fail "post-norm without warmup trains (or is not far worse than with it), or pre-norm does not beat both"
echo "PASS: test_text_postnorm_cli"
