#!/usr/bin/env bash
# tests/test_inspect.sh -- `headscope inspect` driven as a user would:
#   train a small model; inspect the chapter's `tired` and `wet` sentences;
#   every file in index.json exists and parses (JSON: python, PNG: pngcheck,
#   SVG: xmllint) and every file in the folder is listed; attention JSON rows
#   sum to 1 with zeros above the diagonal and the sentence's tokens; the
#   printed L0 row (and per-head rows) equal the JSON's numbers at the query
#   position to 2 decimals; the DLA bars sum to the logit / logit difference
#   the JSON reports, which equals predictions.json's logit; predictions are
#   sorted probabilities; --threads 1 and 2 write the same bytes (every format
#   but PDF's date, 300 dpi); --only, --format, --position; every user error exits
#   1 with one line naming the problem (and writes nothing), usage errors 2,
#   --help 0.
# Run as: bash tests/test_inspect.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_inspect.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_inspect.sh BUILD_DIR HEADSCOPE_BIN}
mkdir -p "$BUILD_DIR/testtmp"
TMP=$(mktemp -d "$BUILD_DIR/testtmp/inspect.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
PY=/usr/bin/python3
shopt -s nullglob
# shellcheck source=tests/cli_lib.sh
source "$(dirname "$0")/cli_lib.sh"


M="$TMP/m.safetensors"
run 0 train train --out "$M" --steps 60 --d-model 32 --eval-every 0
TIRED="the animal did not cross the street because it was too tired , so the"
WET="the animal did not cross the street because it was too wet , so the"

# --help
run 0 help inspect --help
grep -q '^usage: headscope inspect' "$TMP/help.out" || fail "--help: no usage line"
grep -q -- '--only' "$TMP/help.out" || fail "--help does not document --only"
grep -q -- '--dpi' "$TMP/help.out" || fail "--help does not document --dpi"
grep -q -- '--threads' "$TMP/help.out" || fail "--help does not document --threads"

# the chapter's sentence, every default figure, --vs and per-head rows
run 0 tired inspect --model "$M" --sentence "$TIRED" --out "$TMP/tired" --vs street --heads
run 0 wet inspect --model "$M" --sentence "$WET" --out "$TMP/wet"
# an operator minus in a figure's title and axis is U+2212, as in its numbers
grep -q "logit difference &apos;[a-z]*&apos; − &apos;street&apos; at position" "$TMP/tired/dla_vs.svg" ||
    fail "dla_vs.svg: the title's minus is not U+2212"
grep '<text' "$TMP/tired/dla_vs.svg" | has ' - ' && fail "dla_vs.svg: a hyphen-minus as an operator"
# the query row's red-orange frame is named in the legend (grid and one head)
for f in attention_grid L1H1; do
    awk '/<g id="legend">/{p=1} /<g id="title">/{p=0} p' "$TMP/tired/$f.svg" >"$TMP/legend.svg"
    has '>query row</text>' "$TMP/legend.svg" && has 'fill="#ff4500"' "$TMP/legend.svg" ||
        fail "$f.svg: no query-row frame in the legend"
done
# stderr: at most the one note naming the figures wider than their default
grep -v '^headscope inspect: note: [0-9]* figures\? \(is\|are\) wider than' "$TMP/tired.err" | has . &&
    fail "tired: unexpected stderr: $(cat "$TMP/tired.err")"
[ "$(wc -l <"$TMP/tired.err")" -le 1 ] || fail "tired: more than one note: $(cat "$TMP/tired.err")"

check_folder "$TMP/tired"
check_folder "$TMP/wet"

# figures are written on the worker pool: one thread gives the same folder,
# byte for byte (PNG strips fixed by the image size, index in call order),
# also with every format and a 300 dpi grid of several PNG strips
run 0 tired1 inspect --model "$M" --sentence "$TIRED" --out "$TMP/tired1" --vs street --heads \
    --threads 1
diff -r "$TMP/tired" "$TMP/tired1" >/dev/null || fail "--threads 1 wrote other files than the default"
run 0 pdf2 inspect --model "$M" --sentence "$TIRED" --out "$TMP/pdf2" --format png,svg,pdf,json \
    --dpi 300 --threads 2
run 0 pdf1 inspect --model "$M" --sentence "$TIRED" --out "$TMP/pdf1" --format png,svg,pdf,json \
    --dpi 300 --threads 1
check_folder "$TMP/pdf2"
for f in "$TMP"/pdf2/*; do
    b=$(basename "$f")
    case "$b" in *.pdf | index.json) continue ;; esac # a PDF carries its creation date
    cmp -s "$f" "$TMP/pdf1/$b" || fail "--threads 1 vs 2: $b differs"
done
run 2 badthreads inspect --model "$M" --sentence "$TIRED" --threads -1

# the default file set of a 2 x 4 model
for f in attention_grid L0H0 L0H3 L1H0 L1H3 L0_mean L1_mean dla dla_vs; do
    for e in png svg json; do
        [ -f "$TMP/tired/$f.$e" ] || fail "tired: missing $f.$e"
    done
done
[ -f "$TMP/tired/predictions.json" ] || fail "tired: missing predictions.json"
[ ! -e "$TMP/wet/dla_vs.json" ] || fail "wet: dla_vs written without --vs"

# the numbers
"$PY" - "$TMP/tired" "$TMP/tired.out" "$TIRED" <<'EOF' || fail "tired: numbers"
import json, math, os, sys
d, out_path, sentence = sys.argv[1], sys.argv[2], sys.argv[3]
toks = sentence.split()
T = len(toks)
g = json.load(open(os.path.join(d, "attention_grid.json")))
L, H = g["config"]["n_layers"], g["config"]["n_heads"]
assert g["tokens"] == toks, g["tokens"]
assert g["shape"] == [L * H, T, T], g["shape"]
assert g["attention_head_names"] == ["L%dH%d" % (l, h) for l in range(L) for h in range(H)]
A = g["attention"]
for k in range(L * H):
    for i in range(T):
        s = sum(A[k][i])
        assert abs(s - 1) < 1e-5, ("row sum", k, i, s)
        for j in range(i + 1, T):
            assert A[k][i][j] == 0, ("above diagonal", k, i, j, A[k][i][j])
q = g["query_position"]
assert q == T - 1
# per-head file = the grid's head
for l in range(L):
    for h in range(H):
        ph = json.load(open(os.path.join(d, "L%dH%d.json" % (l, h))))
        assert ph["attention"][0] == A[l * H + h], ("per-head file differs", l, h)
        assert ph["attention_head_names"] == ["L%dH%d" % (l, h)]
# printed rows: L<l> = head average at the query position; L<l>H<h> = the head
rows = {}
for line in open(out_path):
    parts = line.split()
    if parts and (parts[0].startswith("L")) and ":" in (parts[1] if len(parts) > 1 else ""):
        rows[parts[0]] = [(p.rsplit(":", 1)[0], float(p.rsplit(":", 1)[1])) for p in parts[1:]]
assert "L0" in rows and "L1" in rows, rows.keys()
for l in range(L):
    r = rows["L%d" % l]
    assert [t for t, _ in r] == toks[: q + 1], r
    for j, (_, v) in enumerate(r):
        mean = sum(A[l * H + h][q][j] for h in range(H)) / H
        assert abs(v - mean) <= 0.005 + 1e-6, ("L%d" % l, j, v, mean)
    mj = json.load(open(os.path.join(d, "L%d_mean.json" % l)))
    for j in range(T):
        mean = sum(A[l * H + h][q][j] for h in range(H)) / H
        assert abs(mj["attention"][0][q][j] - mean) < 1e-6
    for h in range(H):
        r = rows["L%dH%d" % (l, h)]
        for j, (_, v) in enumerate(r):
            assert abs(v - A[l * H + h][q][j]) <= 0.005 + 1e-6, ("L%dH%d" % (l, h), j, v)
# predictions: sorted, probabilities, printed
p = json.load(open(os.path.join(d, "predictions.json")))
pr = p["predictions"]
assert len(pr) == 5
assert all(0 < e["prob"] <= 1 for e in pr)
assert all(pr[i]["prob"] >= pr[i + 1]["prob"] for i in range(len(pr) - 1))
assert sum(e["prob"] for e in pr) <= 1 + 1e-9
text = open(out_path).read()
assert "top predictions at position %d" % q in text
assert pr[0]["token"] in text
# DLA: the bars sum to the logit; the logit is the prediction's
dla = json.load(open(os.path.join(d, "dla.json")))
assert dla["target_token"] == pr[0]["token"]
assert dla["metric"] == "logit"
s = sum(dla["values"])
assert abs(s - dla["logit"]) < 1e-3 * max(1, abs(dla["logit"])), (s, dla["logit"])
assert abs(dla["logit"] - pr[0]["logit"]) < 1e-4, (dla["logit"], pr[0]["logit"])
labels = dla["labels"]
for l in range(L):
    for h in range(H):
        assert "L%dH%d" % (l, h) in labels
assert "embed" in labels and "L0_mlp_out" in labels
assert len(labels) == len(dla["values"]) == dla["shape"][0]
# one naming style for components (TransformerLens' decompose_resid, layer-prefixed with
# underscores), the final norm's bias and the unembedding bias included
import re
COMPONENT = re.compile(r"^(embed|pos_embed|L\d+H\d+|L\d+_b_O|L\d+_mlp_out|ln_final_b|b_U)$")
assert all(COMPONENT.match(x) for x in labels), labels
assert labels[-2:] == ["ln_final_b", "b_U"], labels
vs = json.load(open(os.path.join(d, "dla_vs.json")))
assert all(COMPONENT.match(x) for x in vs["labels"]), vs["labels"]
assert vs["metric"] == "logit_diff" and vs["vs_token"] == "street"
s = sum(vs["values"])
assert abs(s - vs["logit_diff"]) < 1e-3 * max(1, abs(vs["logit_diff"])), (s, vs["logit_diff"])
assert ("logit difference %s - street" % pr[0]["token"]) in text
# every figure JSON carries the config and the tokens
for f in os.listdir(d):
    if f.endswith(".json") and f != "index.json":
        j = json.load(open(os.path.join(d, f)))
        assert j["config"]["n_layers"] == L, f
        assert j["tokens"] == toks, f
EOF

# the printed rows: one per layer without --heads
grep -c '^L[0-9] ' "$TMP/wet.out" | has -x 2 || fail "wet: expected 2 layer rows: $(cat "$TMP/wet.out")"
grep -q '^L0H0 ' "$TMP/wet.out" && fail "wet: per-head rows without --heads"

# --only: just those heads' figures, and a grid of them in that order
run 0 only inspect --model "$M" --sentence "$TIRED" --out "$TMP/only" --only L1H0,L0H1 --heads
check_folder "$TMP/only"
ls "$TMP/only" | grep -E '^L[0-9]H[0-9]\.' | sed 's/\..*//' | sort -u | tr '\n' ' ' |
    grep -qx 'L0H1 L1H0 ' || fail "--only: per-head files are $(ls "$TMP/only")"
"$PY" - "$TMP/only/attention_grid.json" <<'EOF' || fail "--only grid"
import json, sys
g = json.load(open(sys.argv[1]))
assert g["attention_head_names"] == ["L1H0", "L0H1"], g["attention_head_names"]
assert g["shape"][0] == 2
EOF
grep -q '"title":[[:space:]]*"attention of L1H0, L0H1"' "$TMP/only/attention_grid.json" ||
    fail "--only: the grid title does not name the heads"
grep -q '^L1H0 ' "$TMP/only.out" || fail "--only --heads: no L1H0 row"
run 0 one inspect --model "$M" --sentence "$TIRED" --out "$TMP/one" --only L1H1 --format json
grep -q '"title":[[:space:]]*"L1H1 attention"' "$TMP/one/attention_grid.json" ||
    fail "--only one head: the grid title does not name it"
grep -q '^L0H0 ' "$TMP/only.out" && fail "--only --heads: printed an unselected head"
# no --width and labels too wide for the default: the figures grow, and one
# note line names each with its width (the PNG's width is that, at 300 dpi)
run 0 wide inspect --model "$M" --sentence "$TIRED" --out "$TMP/wide" --only L1H1,L0H2 --dpi 300 \
    --annotate --format png
[ "$(grep -c '^headscope inspect: note: ' "$TMP/wide.err")" -eq 1 ] || fail "wide: $(cat "$TMP/wide.err")"
W=$("$PY" -c 'import struct,sys; print("%.2f" % (struct.unpack(">I", open(sys.argv[1], "rb").read()[16:20])[0] / 300))' "$TMP/wide/L1H1.png")
grep -q "^headscope inspect: note: .* wider than their default width so every label fits: .*L1H1 $W in.*--width sets it" \
    "$TMP/wide.err" || fail "wide: note does not name L1H1 $W in: $(cat "$TMP/wide.err")"
awk -v w="$W" 'BEGIN { exit !(w > 3.25) }' || fail "wide: L1H1 is $W in, expected wider than 3.25"
run 0 narrow inspect --model "$M" --sentence "$TIRED" --out "$TMP/narrow" --only L1H1 --format png
grep -q '^headscope inspect: note: ' "$TMP/narrow.err" && fail "narrow: a note without a grown figure"

# a reused --out folder: the first run's files go, a file the user put there stays
run 0 reuse1 inspect --model "$M" --sentence "$TIRED" --out "$TMP/reuse"
n1=$(ls "$TMP/reuse" | wc -l)
echo keep >"$TMP/reuse/notes.txt"
# (--only L1H1 as PNG writes 7 files: its figure is L1H1.png, no attention_grid.png)
run 0 reuse2 inspect --model "$M" --sentence "$WET" --out "$TMP/reuse" --only L1H1 --format png
grep -q 'note: .*reuse already holds 1 file headscope did not write; they are kept' "$TMP/reuse2.err" ||
    fail "reuse2: no note about the user's file: $(cat "$TMP/reuse2.err")"
grep -q "note: removed $((n1 - 7)) files an earlier run wrote in .*reuse (unchanged since, per its index.json) that this run does not write: " \
    "$TMP/reuse2.err" || fail "reuse2: no note of what was removed: $(cat "$TMP/reuse2.err")"
[ "$(wc -l <"$TMP/reuse2.err")" -eq 2 ] || fail "reuse2: expected 2 notes: $(cat "$TMP/reuse2.err")"

[ "$(cat "$TMP/reuse/notes.txt")" = keep ] || fail "reuse: the user's file was changed"
rm "$TMP/reuse/notes.txt"
check_folder "$TMP/reuse"
n2=$(ls "$TMP/reuse" | wc -l)
[ "$n2" -lt "$n1" ] || fail "reuse: $n2 files after the smaller run, $n1 before"
[ ! -e "$TMP/reuse/L0H0.png" ] || fail "reuse: L0H0.png from the first run is still there"
# a rerun that writes the same bytes leaves those files in place (same inode:
# replacing one frees its blocks, a discard each on a `discard` mount), the
# staged copies gone; a file whose bytes changed is replaced
ino() { stat -c %i "$1"; }
i1=$(ino "$TMP/one/attention_grid.json")
x1=$(ino "$TMP/one/index.json")
run 0 one_again inspect --model "$M" --sentence "$TIRED" --out "$TMP/one" --only L1H1 --format json
[ "$(ino "$TMP/one/attention_grid.json")" = "$i1" ] && [ "$(ino "$TMP/one/index.json")" = "$x1" ] ||
    fail "rerun: a file holding the same bytes was replaced"
check_folder "$TMP/one"
run 0 one_wet inspect --model "$M" --sentence "$WET" --out "$TMP/one" --only L1H1 --format json
[ "$(ino "$TMP/one/attention_grid.json")" != "$i1" ] && grep -q '"wet"' "$TMP/one/attention_grid.json" ||
    fail "rerun: a file whose bytes changed was not replaced"
check_folder "$TMP/one"
# an index entry that leaves the folder is never followed
mkdir "$TMP/evil"
echo x >"$TMP/victim"
echo '{"generator":"headscope 0.1.0 inspect","command":"inspect","files":[{"file":"../victim","bytes":2,"fnv1a64":"0"},{"file":"sub/x"}]}' >"$TMP/evil/index.json"
run 0 evil inspect --model "$M" --sentence "$TIRED" --out "$TMP/evil" --format json --only L0H0
[ "$(cat "$TMP/victim")" = x ] || fail "reuse: deleted a file outside the folder"
check_folder "$TMP/evil"

# --format json: no images; --position: shorter rows; figure options
run 0 fmt inspect --model "$M" --sentence "$TIRED" --out "$TMP/fmt" --format json --position 6
check_folder "$TMP/fmt"
ls "$TMP/fmt" | has -E '\.(png|svg)$' && fail "--format json wrote images"
row=$(grep '^L0 ' "$TMP/fmt.out")
[ "$(echo "$row" | wc -w)" -eq 8 ] || fail "--position 6: L0 row should have 7 items: $row"
echo "$row" | has 'street:' || fail "--position 6: row should end at street: $row"
# a width that cannot hold every label (and every value) at the font size asked:
# each such figure is skipped with one note naming its files and the width that
# fits, and the rest of the run is written (one unfit figure cancelled it all);
# then that width (a page) works
run 0 narrow6 inspect --model "$M" --sentence "$TIRED" --out "$TMP/narrow6" --format png,svg \
    --dpi 72 --width 6 --font-size 10 --cmap greys --range auto --annotate --only L0H0
grep -q "^headscope inspect: note: L0H0.png, L0H0.svg not written: attention pattern cannot show every label in 6.00 in at 10 pt: it needs [0-9.]* in; HINT: --width" \
    "$TMP/narrow6.err" || fail "narrow: no note naming L0H0.png, L0H0.svg: $(cat "$TMP/narrow6.err")"
grep -v '^headscope inspect: note: [A-Za-z0-9_]*\.png, [A-Za-z0-9_]*\.svg not written: ' "$TMP/narrow6.err" | has . &&
    fail "narrow: stderr holds more than the notes: $(cat "$TMP/narrow6.err")"
check_folder "$TMP/narrow6" dla.png dla.svg predictions.json
[ -e "$TMP/narrow6/L0H0.png" ] && fail "narrow: the figure that does not fit was written"
run 0 paper inspect --model "$M" --sentence "$TIRED" --out "$TMP/paper" --format png,svg,pdf \
    --dpi 72 --width page --font-size 10 --cmap greys --range auto --annotate --only L0H0
check_folder "$TMP/paper" L0H0.pdf dla.pdf  # one --only head: L0H0 is its picture
pngcheck -v "$TMP/paper/L0H0.png" | has 'pHYs' || fail "--dpi: no pHYs chunk"
grep -q 'width="6.75' "$TMP/paper/L0H0.svg" || fail "--width page: the SVG is not 6.75 in wide"
pdfinfo "$TMP/paper/L0H0.pdf" | has 'Page size: *486 x' || fail "--width page: PDF not 486 pt wide"
# a paper's build is reproducible: the PDF's creation date is SOURCE_DATE_EPOCH
# (reproducible-builds.org) when set, not the time of writing
export SOURCE_DATE_EPOCH=86400
run 0 sde inspect --model "$M" --sentence "$TIRED" --out "$TMP/sde" --format pdf --only L1H1
unset SOURCE_DATE_EPOCH
TZ=UTC pdfinfo "$TMP/sde/L1H1.pdf" | has '^CreationDate: *Fri Jan  2 00:00:00 1970' ||
    fail "SOURCE_DATE_EPOCH=86400: the PDF's CreationDate is not 1970-01-02: $(TZ=UTC pdfinfo "$TMP/sde/L1H1.pdf" | grep Date)"

# the figures papers show: the tired / wet pair and its difference, cropped
# positions, the query row strip, no titles
run 0 pair inspect --model "$M" --sentence "$TIRED" --sentence "$WET" --out "$TMP/pair" \
    --positions 2:12 --no-title --format svg,json
check_folder "$TMP/pair" pair_L1_mean.svg diff_L1_mean.svg query_row.svg pair_L0_mean.json
"$PY" - "$TMP/pair" <<'EOF' || fail "pair: numbers"
import json, os, sys
d = sys.argv[1]
p = json.load(open(os.path.join(d, "pair_L1_mean.json")))
toks = p["tokens"]
assert toks == ["did", "not", "cross", "the", "street", "because", "it", "was", "too", "tired/wet"], toks
assert p["first_position"] == 2
a, b = p["attention"]
q = json.load(open(os.path.join(d, "diff_L1_mean.json")))
for i in range(10):
    for j in range(10):
        v = q["values"][i][j]
        if j > i:
            assert v is None
        else:
            assert abs(v - (b[i][j] - a[i][j])) < 1e-5, (i, j, v)
r = json.load(open(os.path.join(d, "query_row.json")))
assert r["shape"] == [8, 10] and r["first_position"] == 2, r["shape"]  # the crop
for f in os.listdir(d):
    if f.endswith(".svg"):
        assert 'class="title"' not in open(os.path.join(d, f)).read(), f
EOF
# cropped with titles: the figure says so under its title (rows need not sum to 1)
run 0 crop inspect --model "$M" --sentence "$TIRED" --out "$TMP/crop" --only L1H1 --positions 6: \
    --format svg
grep -q 'positions 6\.\.14 of 0\.\.14: rows shown need not sum to 1' "$TMP/crop/L1H1.svg" ||
    fail "crop: L1H1.svg does not say it is cropped"
grep -q 'need not sum' "$TMP/only/L1H0.svg" && fail "only: an uncropped figure says it is cropped"
run 1 pairlen inspect --model "$M" --sentence "$TIRED" --sentence "the animal was tired" --out "$TMP/e0"
one_line pairlen "same number"

# case folding: a note, exit 0
run 0 fold inspect --model "$M" --sentence "The Animal did not cross the street because it was too tired, so the" --out "$TMP/fold" --format json
one_line fold 'lower case'

# over the figure caps (33 heads): what fits is drawn, the rest is JSON with a note, exit 0
M33="$TMP/m33.safetensors"
run 0 train33 train --out "$M33" --layers 1 --heads 33 --d-head 2 --d-mlp 0 --steps 2 --eval-every 0
run 0 over inspect --model "$M33" --sentence "the animal" --out "$TMP/over" --format png,json --all-heads
check_folder "$TMP/over" attention_grid.json L0H32.png
[ ! -e "$TMP/over/attention_grid.png" ] || fail "over the caps: drew the grid"
grep -q 'attention_grid.*over the figure caps' "$TMP/over.err" || fail "over the caps: no note"
grep -q 'no figure per head' "$TMP/over.err" && fail "--all-heads: said it skipped the per-head figures"
# over 16 heads in all (HS_INSPECT_PER_HEAD_MAX): no per-head files by default, with a note;
# the layer mean and the grid's JSON still written; --only's heads get theirs
run 0 many inspect --model "$M33" --sentence "the animal" --out "$TMP/many" --format png,json
check_folder "$TMP/many" attention_grid.json L0_mean.png L0_mean.json
ls "$TMP/many" | has '^L0H[0-9]*\.' && fail "33 heads: wrote per-head files by default"
grep -q '33 heads (over 16): no figure per head.*--only.*--all-heads' "$TMP/many.err" ||
    fail "33 heads: no note saying the per-head figures were skipped"
run 0 manyonly inspect --model "$M33" --sentence "the animal" --out "$TMP/manyonly" --format png,json --only L0H7
check_folder "$TMP/manyonly" L0H7.png L0H7.json
grep -q 'no figure per head' "$TMP/manyonly.err" && fail "--only: said it skipped the per-head figures"
[ "$(ls "$TMP/over" | grep -c '^L0H[0-9]*\.png$')" = 33 ] || fail "--all-heads: not 33 per-head PNGs"

# user errors: exit 1, one line naming the problem, nothing written
run 1 unknown inspect --model "$M" --sentence "the zebra did not cross" --out "$TMP/e1"
one_line unknown "unknown word 'zebra' at position 1"
grep -q 'vocabulary' "$TMP/unknown.err" || fail "unknown word: vocabulary not listed"
[ ! -e "$TMP/e1" ] || fail "unknown word: created the output folder"
long=$(printf 'the %.0s' $(seq 1 40))
run 1 long inspect --model "$M" --sentence "$long" --out "$TMP/e2"
one_line long "more than the model's context"
run 1 empty inspect --model "$M" --sentence "" --out "$TMP/e3"
one_line empty "empty"
run 1 spaces inspect --model "$M" --sentence "   " --out "$TMP/e3"
one_line spaces "only spaces"
run 1 bytes inspect --model "$M" --sentence $'the \xff animal' --out "$TMP/e3"
one_line bytes "UTF-8"
run 1 vsword inspect --model "$M" --sentence "$TIRED" --vs zebra --out "$TMP/e3"
one_line vsword "zebra"
run 1 pos inspect --model "$M" --sentence "$TIRED" --position 15 --out "$TMP/e3"
one_line pos "position 15"
run 1 head inspect --model "$M" --sentence "$TIRED" --only L2H0 --out "$TMP/e3"
one_line head "L2H0"
[ ! -e "$TMP/e3" ] || fail "user errors created the output folder"
echo x >"$TMP/regular"
run 1 outfile inspect --model "$M" --sentence "$TIRED" --out "$TMP/regular"
one_line outfile "not a folder"
[ "$(cat "$TMP/regular")" = x ] || fail "--out FILE: the file was changed"
run 1 devnull inspect --model "$M" --sentence "$TIRED" --out /dev/null
one_line devnull "/dev/null"
run 1 noparent inspect --model "$M" --sentence "$TIRED" --out "$TMP/no/such/dir"
one_line noparent "$TMP/no/such/dir"
run 1 nomodel inspect --model "$TMP/absent.safetensors" --sentence "$TIRED" --out "$TMP/e4"
one_line nomodel "absent.safetensors"

# usage errors: exit 2
run 2 badflag inspect --model "$M" --sentence "$TIRED" --frobnicate
one_line badflag "frobnicate"
run 2 nosent inspect --model "$M"
run 2 nomodel2 inspect --sentence "$TIRED"
run 2 badonly inspect --model "$M" --sentence "$TIRED" --only L1-H0
run 2 duponly inspect --model "$M" --sentence "$TIRED" --only L1H1,L1H1 --out "$TMP/e5"
one_line duponly "L1H1 twice"
[ ! -e "$TMP/e5" ] || fail "--only duplicate: created the output folder"
run 2 badfmt inspect --model "$M" --sentence "$TIRED" --format png,gif
one_line badfmt "gif"
run 2 baddpi inspect --model "$M" --sentence "$TIRED" --dpi 5
run 2 badcmap inspect --model "$M" --sentence "$TIRED" --cmap jet

echo "inspect: ok"
