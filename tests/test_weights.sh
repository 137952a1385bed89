#!/usr/bin/env bash
# tests/test_weights.sh -- `headscope weights` driven as a user would:
#   train a small 2-layer model; every file in index.json exists and parses
#   (JSON: python, PNG: pngcheck, SVG: xmllint) and every file in the folder
#   is listed; one full QK and one full OV circuit per head, [V, V] with the
#   vocabulary as labels; the composition JSONs hold null exactly for the
#   pairs that are not reported (receiver not in a later layer) and numbers
#   elsewhere, with values = scores - baseline; the virtual-weight norms are
#   the Frobenius norms of the [d_head, d_head] products listed beside them;
#   copying scores are in [-1, 1] and match the printed table; a uniform-
#   attention model gets no QK figures and says so; a 1-layer model gets no
#   cross-layer files; errors: --out a file / /dev/null (1), bad --fold or
#   flag (2); --help (0).
# Run as: bash tests/test_weights.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_weights.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_weights.sh BUILD_DIR HEADSCOPE_BIN}
mkdir -p "$BUILD_DIR/testtmp"
TMP=$(mktemp -d "$BUILD_DIR/testtmp/weights.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
PY=/usr/bin/python3
shopt -s nullglob
# shellcheck source=tests/cli_lib.sh
source "$(dirname "$0")/cli_lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)

M="$TMP/m.safetensors"
run 0 train train --out "$M" --steps 60 --d-model 32 --eval-every 0
run 0 help weights --help
grep -q '^usage: headscope weights' "$TMP/help.out" || fail "--help: no usage line"

run 0 w weights --model "$M" --out "$TMP/w" --dpi 72
check_folder "$TMP/w"
"$PY" - "$TMP/w" "$TMP/w.out" <<'EOF' || fail "weights: numbers"
import json, math, os, sys
d, out = sys.argv[1], open(sys.argv[2]).read()
cfg = json.load(open(os.path.join(d, "copying.json")))["config"]
L, H, V, dh = cfg["n_layers"], cfg["n_heads"], cfg["d_vocab"], cfg["d_head"]
names = ["L%dH%d" % (l, h) for l in range(L) for h in range(H)]
for n in names:
    for c in ("QK", "OV"):
        for e in ("png", "svg", "json"):
            assert os.path.isfile(os.path.join(d, "%s_%s.%s" % (n, c, e))), (n, c, e)
        j = json.load(open(os.path.join(d, "%s_%s.json" % (n, c))))
        assert j["shape"] == [V, V] and len(j["values"]) == V
        assert len(j["row_labels"]) == V and j["row_labels"] == j["col_labels"]
        assert j["fold"] == "ln"
# composition: null exactly where the receiver is not in a later layer
for k in "QKV":
    j = json.load(open(os.path.join(d, "composition_%s.json" % k)))
    assert j["shape"] == [L * H, L * H]
    assert j["row_labels"] == names and j["col_labels"] == names
    b = j["baseline"]
    assert 0 < b < 1
    for a in range(L * H):
        for r in range(L * H):
            v, s = j["values"][a][r], j["scores"][a][r]
            if r // H <= a // H:
                assert v is None and s is None, ("reported within/backwards", k, a, r)
            else:
                assert v is not None and 0 <= s <= 1, (k, a, r, s)
                assert abs(v - (s - b)) < 1e-5, (k, a, r, v, s, b)
# Q, K and V share one colour scale: the largest |score - baseline| of the three
comp = [json.load(open(os.path.join(d, "composition_%s.json" % k))) for k in "QKV"]
lim = max(abs(v) for j in comp for row in j["values"] for v in row if v is not None)
for j in comp:
    assert abs(j["shared_color_limit"] - lim) < 1e-6, (j["shared_color_limit"], lim)
# virtual weights: norms are the products' Frobenius norms
vw = json.load(open(os.path.join(d, "virtual_weights.json")))
assert vw["shape"] == [(L - 1) * H, 3 * (L - 1) * H]
assert len(vw["products"]) == H * H * 3  # L = 2
for p in vw["products"]:
    m = p["values"]
    assert len(m) == dh and len(m[0]) == dh
    fro = math.sqrt(sum(x * x for row in m for x in row))
    a = names.index(p["sender"])
    col = vw["col_labels"].index(p["receiver"] + "." + p["product"][-1])
    assert abs(vw["values"][a][col] - fro) < 1e-4 * max(1, fro), (p["sender"], p["receiver"])
    assert abs(p["frobenius_norm"] - fro) < 1e-4 * max(1, fro)
# copying scores in [-1, 1] and printed
c = json.load(open(os.path.join(d, "copying.json")))
assert c["labels"] == names
for n, v, f in zip(names, c["values"], c["positive_fraction"]):
    assert -1 - 1e-6 <= v <= 1 + 1e-6, (n, v)
    assert 0 <= f <= 1
    assert ("%-6s %+7.3f" % (n, v)) in out, (n, v)
EOF

# --fold none and --format json: only JSON files
run 0 wn weights --model "$M" --out "$TMP/wn" --fold none --format json
check_folder "$TMP/wn"
ls "$TMP/wn" | has -E '\.(png|svg)$' && fail "--format json wrote images"
grep -q '"fold":[[:space:]]*"none"' "$TMP/wn/copying.json" || fail "--fold none not recorded"

# uniform attention: no QK, said so; 1 layer: no cross-layer files
U="$TMP/u.safetensors"
run 0 trainu train --out "$U" --steps 20 --d-model 32 --layers 1 --attn uniform --eval-every 0
run 0 wu weights --model "$U" --out "$TMP/wu" --format json,svg
check_folder "$TMP/wu"
grep -q 'uniform attention' "$TMP/wu.out" || fail "uniform: not said: $(cat "$TMP/wu.out")"
grep -q 'one layer' "$TMP/wu.out" || fail "1 layer: not said: $(cat "$TMP/wu.out")"
ls "$TMP/wu" | has '_QK\.' && fail "uniform: QK files written"
ls "$TMP/wu" | has -E '^(composition|virtual)' && fail "1 layer: cross-layer files written"
[ -f "$TMP/wu/L0H0_OV.json" ] || fail "uniform: no OV circuit"

# a reused --out folder: the first run's files go, a file the user put there stays
cp -r "$TMP/w" "$TMP/wr"
echo keep >"$TMP/wr/notes.txt"
run 0 wr weights --model "$U" --out "$TMP/wr" --format json
grep -q 'note: .*wr already holds 1 file headscope did not write; they are kept' "$TMP/wr.err" ||
    fail "reuse: no note about the user's file: $(cat "$TMP/wr.err")"
[ "$(cat "$TMP/wr/notes.txt")" = keep ] || fail "reuse: the user's file was changed"
rm "$TMP/wr/notes.txt"
check_folder "$TMP/wr"
ls "$TMP/wr" | has -E '^(composition|virtual)|\.(png|svg)$' && fail "reuse: stale files: $(ls "$TMP/wr")"

# a model of more than 16 heads (5 x 4): as inspect, no full circuit per head
# unless asked (--only, --all-heads), one note saying how; the whole-model
# files always
B="$TMP/b.safetensors"
run 0 trainb train --out "$B" --steps 1 --layers 5 --heads 4 --d-model 16 --eval-every 0
run 0 wb weights --model "$B" --out "$TMP/wb" --dpi 72 --format png,json
check_folder "$TMP/wb"
ls "$TMP/wb" | has -E '^L[0-9]+H[0-9]+_' && fail "20 heads: per-head files by default: $(ls "$TMP/wb")"
for f in copying.png copying.json composition_Q.json composition_K.json composition_V.json virtual_weights.json; do
    [ -f "$TMP/wb/$f" ] || fail "20 heads: no $f"
done
[ "$(grep -c '^headscope weights: note: 20 heads (over 16): no full QK/OV circuit files per head (L<l>H<h>_QK, _OV); ask for heads with --only L0H1,... or for all of them with --all-heads (40 figures)$' "$TMP/wb.err")" -eq 1 ] ||
    fail "20 heads: not one note saying so: $(cat "$TMP/wb.err")"
run 0 wbo weights --model "$B" --out "$TMP/wbo" --dpi 72 --format png,json --only L3H1,L0H2
check_folder "$TMP/wbo"
[ "$(ls "$TMP/wbo" | grep -E '^L[0-9]+H[0-9]+_' | tr '\n' ' ')" = "L0H2_OV.json L0H2_OV.png L0H2_QK.json L0H2_QK.png L3H1_OV.json L3H1_OV.png L3H1_QK.json L3H1_QK.png " ] ||
    fail "--only L3H1,L0H2: $(ls "$TMP/wbo")"
has 'note: 20 heads' "$TMP/wbo.err" && fail "--only: the default's note: $(cat "$TMP/wbo.err")"
"$PY" - "$TMP/wbo" "$TMP/wb" <<'EOF' || fail "--only: order or numbers"
import json, os, sys
d, base = sys.argv[1], sys.argv[2]
files = [f["file"] for f in json.load(open(os.path.join(d, "index.json")))["files"]]
heads = [f.split("_")[0] for f in files if f.startswith("L") and f.endswith("QK.json")]
assert heads == ["L3H1", "L0H2"], heads  # in --only's order
for f in ("copying.json", "composition_K.json"):  # the whole-model numbers as without --only
    a, b = json.load(open(os.path.join(d, f))), json.load(open(os.path.join(base, f)))
    assert a["values"] == b["values"], f
EOF
run 0 wba weights --model "$B" --out "$TMP/wba" --format json --all-heads
[ "$(ls "$TMP/wba" | grep -cE '^L[0-9]+H[0-9]+_(QK|OV)\.json$')" -eq 40 ] || fail "--all-heads: $(ls "$TMP/wba")"
run 1 wbx weights --model "$B" --out "$TMP/wbx" --only L5H0
one_line wbx "L5H0 is not a head of the model (5 layers x 4 heads: L0H0..L4H3)"
run 1 wbd weights --model "$B" --out "$TMP/wbd" --only L1H0,L1H0
one_line wbd "--only lists L1H0 twice"
run 2 wbs weights --model "$B" --out "$TMP/wbs" --only L1H
one_line wbs "--only takes heads like L1H0,L0H1, not 'L1H'"
run 2 wbb weights --model "$B" --out "$TMP/wbb" --only L1H0 --all-heads
one_line wbb "give --only LIST or --all-heads, not both"

# the note naming figures wider than their default: every one up to 8, else
# the first 6 and a summary of the rest (GPT-2's 288 were ~7,000 characters)
run 0 wn weights --model "$HERE/checkpoint/circuit_tiny.safetensors" --out "$TMP/wn" --format png --dpi 72
has -E '^headscope weights: note: 17 figures are wider than their default width so every label fits: L0H0_QK [0-9.]+ in, L0H0_OV [0-9.]+ in, L0H1_QK [0-9.]+ in, L0H1_OV [0-9.]+ in, L0H2_QK [0-9.]+ in, L0H2_OV [0-9.]+ in and 11 more \(4\.[0-9]+ to 6\.[0-9]+ in\); --width sets it$' "$TMP/wn.err" ||
    fail "17 wide figures: not summarised: $(cat "$TMP/wn.err")"
run 0 trainu12 train --out "$TMP/u12.safetensors" --steps 1 --d-model 24 --layers 1 --heads 12 --attn uniform --eval-every 0
run 0 wu12 weights --model "$TMP/u12.safetensors" --out "$TMP/wu12" --format png --dpi 72
has -E '^headscope weights: note: 12 figures are wider than their default width so every label fits: (L0H[0-5]_OV ([0-9.]+) in, ){5}L0H5_OV [0-9.]+ in and 6 more \([0-9.]+ in each\); --width sets it$' "$TMP/wu12.err" ||
    fail "12 wide figures of one width: not summarised: $(cat "$TMP/wu12.err")"
run 0 wu8 weights --model "$TMP/u12.safetensors" --out "$TMP/wu8" --format png --dpi 72 --only L0H0,L0H1,L0H2,L0H3,L0H4,L0H5,L0H6,L0H7
has -E '^headscope weights: note: 8 figures are wider than their default width so every label fits: (L0H[0-6]_OV [0-9.]+ in, ){7}L0H7_OV [0-9.]+ in; --width sets it$' "$TMP/wu8.err" ||
    fail "8 wide figures: not each named: $(cat "$TMP/wu8.err")"

# errors
echo x >"$TMP/regular"
run 1 outfile weights --model "$M" --out "$TMP/regular"
one_line outfile "not a folder"
run 1 devnull weights --model "$M" --out /dev/null
one_line devnull "/dev/null"
run 1 nomodel weights --model "$TMP/absent.safetensors"
one_line nomodel "absent.safetensors"
run 2 badfold weights --model "$M" --fold yes
one_line badfold "fold"
run 2 badflag weights --model "$M" --frobnicate
run 2 nomodel2 weights

echo "weights: ok"
