#!/usr/bin/env bash
# tests/test_text_division_cli.sh -- the chapter's training without the
# division by sqrt(d_k) (issue 31), on a short run where the effect is large:
# one layer, one head of width 512 (d_model 32), no norm before the
# projections, 60 steps on two small fortunes files (BPE 300, windows of 64),
# with the division (the default) and without it (`train --attn-scale 1`).
# `cache` keeps the trained models' scores and patterns on a held-out-like
# sentence; here (numpy): without the division the rows put over 0.99 on one
# token far more often (asserted: over 0.5 of the rows, and over 3x the
# rows with it) and the scores' standard deviation is over 10x larger; the
# config records attn_scale 1. Without fortunes the test is skipped (exit 77;
# a failure with CI set).
# Run as: bash tests/test_text_division_cli.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_text_division_cli.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_text_division_cli.sh BUILD_DIR HEADSCOPE_BIN}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
# shellcheck source=tests/cli_lib.sh
source "$HERE/cli_lib.sh"
cli_tmp textdiv
fortunes_files goedel linuxcookie

run 2 badscale train --task text --corpus "${FILES[@]}" --attn-scale 0 --out "$TMP/x.safetensors"
one_line badscale "--attn-scale"
run 0 bpe bpe --corpus "${FILES[@]}" --vocab-size 300 --out "$TMP/tok.json"
for div in on off; do
    run 0 "train-$div" train --task text --corpus "${FILES[@]}" --tokenizer "$TMP/tok.json" --layers 1 \
        --heads 1 --d-model 32 --d-head 512 --no-ln1 --n-ctx 64 --batch 8 --steps 60 --lr 3e-3 \
        --eval-every 0 --out "$TMP/$div.safetensors" $([ "$div" = off ] && echo --attn-scale 1)
    run 0 "cache-$div" cache --model "$TMP/$div.safetensors" --names "blocks.0.attn.hook_attn_scores,blocks.0.attn.hook_pattern" \
        --sentence "Unix is a very good operating system for hackers and users." \
        --out "$TMP/$div.cache.safetensors"
done
"$PY" - "$TMP" <<'PYEOF' || fail "without the division the rows are not one-hot"
import json, struct, sys
import numpy as np
tmp = sys.argv[1]

def read(path):
    with open(path, "rb") as fh:
        n = struct.unpack("<Q", fh.read(8))[0]
        h = json.loads(fh.read(n))
        data = fh.read()
    meta = h.pop("__metadata__", {})
    return meta, {k: np.frombuffer(data[v["data_offsets"][0]:v["data_offsets"][1]], "<f4").reshape(v["shape"])
                  for k, v in h.items()}

res = {}
for div in ("on", "off"):
    _, c = read("%s/%s.cache.safetensors" % (tmp, div))
    s, p = c["blocks.0.attn.hook_attn_scores"][0, 0], c["blocks.0.attn.hook_pattern"][0, 0]
    T = p.shape[0]
    vis = np.tril(np.ones((T, T), bool))
    onehot = (p[1:].max(-1) > 0.99).mean()          # rows of queries 1.. (query 0 sees one key)
    res[div] = (onehot, s[vis].std())
    print("division %s: rows over 0.99 on one token %.3f, score std %.3f (%d tokens)" % (div, onehot, s[vis].std(), T))
meta, _ = read(tmp + "/off.safetensors")
assert json.loads(meta["config"]).get("attn_scale") == 1, meta["config"]
assert res["off"][0] > 0.5 and res["off"][0] > 3 * res["on"][0], res
assert res["off"][1] > 10 * res["on"][1], res
PYEOF
echo "PASS: test_text_division_cli"
