#!/usr/bin/env bash
# tests/test_text_postnorm_cli.sh -- the chapter's post-norm finding (issue
# 31) on a short run: twelve blocks of width 32 (two heads, MLP 64), windows
# of 32, batch 8, lr 3e-3, 150 steps on two small fortunes files (BPE 300),
# seed 0. Post-norm without warmup ends worse than post-norm with a warmup
# over the first half of the steps (asserted: a held-out perplexity over 1.1x;
# here 64.36 against 54.92), and pre-norm without warmup beats both (asserted:
# under 0.9x post-norm with warmup; here 45.42): pre-norm needs none. Seeds
# 1-3 give 75.65/63.47/47.71, 70.69/58.92/45.75, 75.44/72.85/51.14: the order
# holds, the warmup's margin varies (1.03x to 1.20x). Without fortunes the
# test is skipped (exit 77; a failure with CI set).
# Run as: bash tests/test_text_postnorm_cli.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_text_postnorm_cli.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_text_postnorm_cli.sh BUILD_DIR HEADSCOPE_BIN}
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/cli_lib.sh
source "$HERE/cli_lib.sh"
cli_tmp textpost
fortunes_files goedel linuxcookie
STEPS=150
LR=3e-3

run 0 bpe bpe --corpus "${FILES[@]}" --vocab-size 300 --out "$TMP/tok.json"
ppl() { sed -n 's/^held-out perplexity \([0-9.]*\) .*/\1/p' "$TMP/train-$1.out"; }
for v in post-cold post-warm pre-cold; do
    place=${v%%-*}
    warm=1; [ "${v#*-}" = warm ] && warm=$((STEPS / 2))
    run 0 "train-$v" train --task text --corpus "${FILES[@]}" --tokenizer "$TMP/tok.json" --layers 12 \
        --heads 2 --d-model 32 --d-mlp 64 --n-ctx 32 --batch 8 --steps "$STEPS" --lr "$LR" \
        --warmup "$warm" --norm-place "$place" --eval-every 0 --out "$TMP/$v.safetensors"
done
echo "held-out perplexity: post-norm no warmup $(ppl post-cold), post-norm warmup $(ppl post-warm), pre-norm no warmup $(ppl pre-cold)"
awk -v pc="$(ppl post-cold)" -v pw="$(ppl post-warm)" -v pr="$(ppl pre-cold)" \
    'BEGIN { exit !(pc > 1.1 * pw && pr < 0.9 * pw) }' ||
    fail "post-norm without warmup is not worse than with it, or pre-norm does not beat both"
echo "PASS: test_text_postnorm_cli"
