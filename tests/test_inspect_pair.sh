#!/usr/bin/env bash
# tests/test_inspect_pair.sh -- the figures of `headscope inspect` a paper
# prints, driven as a user would (issue 26): the two-sentence pair's
# differences share one symmetric scale recorded in their JSON (--diff-max
# sets it alone) and are titled by the words that differ ("wet − tired").
# Run as: bash tests/test_inspect_pair.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_inspect_pair.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_inspect_pair.sh BUILD_DIR HEADSCOPE_BIN}
mkdir -p "$BUILD_DIR/testtmp"
TMP=$(mktemp -d "$BUILD_DIR/testtmp/inspect_pair.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
PY=/usr/bin/python3
# shellcheck source=tests/cli_lib.sh
source "$(dirname "$0")/cli_lib.sh"

M="$TMP/m.safetensors"
run 0 train train --out "$M" --steps 60 --d-model 32 --eval-every 0
TIRED="the animal did not cross the street because it was too tired , so the"
WET="the animal did not cross the street because it was too wet , so the"

# 1. the differences of one run share one symmetric scale, in their JSON;
#    --diff-max sets it without touching attention's [0, 1]
run 0 pair inspect --model "$M" --sentence "$TIRED" --sentence "$WET" --out "$TMP/pair" \
    --only L0H1,L1H1 --format svg,json
run 0 dmax inspect --model "$M" --sentence "$TIRED" --sentence "$WET" --out "$TMP/dmax" \
    --only L1H1 --diff-max 0.3 --format svg,json
"$PY" - "$TMP/pair" "$TMP/dmax" <<'PYEOF' || fail "pair: the differences' scale"
import json, os, sys
d, dm = sys.argv[1:3]
diffs = sorted(f for f in os.listdir(d) if f.startswith("diff_") and f.endswith(".json"))
assert len(diffs) == 4, diffs  # L0_mean, L1_mean, L0H1, L1H1
lims, biggest = set(), 0.0
for f in diffs:
    j = json.load(open(os.path.join(d, f)))
    cs = j["colour_scale"]
    assert cs["cmap"] == "diverging" and cs["range"] == "fixed", cs
    assert cs["vmin"] == -cs["vmax"], cs
    lims.add(cs["vmax"])
    for row in j["values"]:
        biggest = max([biggest] + [abs(v) for v in row if v is not None])
    assert "wet \u2212 tired" in j["title"], j["title"]
    svg = open(os.path.join(d, f[:-5] + ".svg")).read()
    assert "wet \u2212 tired" in svg and "B - A" not in svg, f
assert len(lims) == 1, lims
lim = lims.pop()
# the shared scale holds every difference, rounded up to a multiple of 0.05
assert biggest <= lim < biggest + 0.05 + 1e-9, (biggest, lim)
assert abs(lim * 20 - round(lim * 20)) < 1e-9, lim
j = json.load(open(os.path.join(dm, "diff_L1H1.json")))
assert j["colour_scale"]["vmax"] == 0.3 and j["colour_scale"]["vmin"] == -0.3, j["colour_scale"]
p = json.load(open(os.path.join(dm, "pair_L1H1.json")))
assert "colour_scale" not in p or p["colour_scale"]["vmax"] == 1, p.get("colour_scale")
PYEOF
grep -q 'attention weight, wet − tired' "$TMP/dmax/diff_L1H1.svg" || fail "dmax: colour bar label"
grep -q '>0.30<\|>+0.30<\|>0.3<' "$TMP/dmax/diff_L1H1.svg" || fail "--diff-max 0.3: no 0.3 on the bar"
# several words differ: each named, still short
run 0 two inspect --model "$M" --sentence "the animal was tired" --sentence "the street was wet" \
    --out "$TMP/two" --format json
grep -q '"title":.*(street, wet) − (animal, tired)' "$TMP/two/diff_L1_mean.json" ||
    fail "two words: title $(grep title "$TMP/two/diff_L1_mean.json")"
run 2 baddmax inspect --model "$M" --sentence "$TIRED" --sentence "$WET" --diff-max 0
one_line baddmax "diff-max"

# 2. query_row_pair: the query rows of both sentences and their difference as
#    one strip, in every format, cropped with --positions
run 0 strip inspect --model "$M" --sentence "$TIRED" --sentence "$WET" --out "$TMP/strip" \
    --format png,svg,pdf,json
check_folder "$TMP/strip" query_row_pair.png query_row_pair.svg query_row_pair.pdf \
    query_row_pair.json
run 0 stripc inspect --model "$M" --sentence "$TIRED" --sentence "$WET" --out "$TMP/stripc" \
    --only L1H1,L0H1 --positions 6: --format svg,json
"$PY" - "$TMP/strip" "$TMP/stripc" <<'PYEOF' || fail "query_row_pair: numbers"
import json, os, sys
d, dc = sys.argv[1:3]
j = json.load(open(os.path.join(d, "query_row_pair.json")))
assert j["shape"] == [4, 15], j["shape"]
assert j["row_labels"] == ["L0 tired", "L0 wet", "L1 tired", "L1 wet"], j["row_labels"]
assert j["difference"]["row_labels"] == ["L0 wet \u2212 tired", "L1 wet \u2212 tired"]
for l in range(2):
    m = json.load(open(os.path.join(d, "pair_L%d_mean.json" % l)))
    a, b = m["attention"]
    for s in range(15):
        assert abs(j["values"][2 * l][s] - a[14][s]) < 1e-6
        assert abs(j["values"][2 * l + 1][s] - b[14][s]) < 1e-6
        assert abs(j["difference"]["values"][l][s] - (b[14][s] - a[14][s])) < 1e-6
q = json.load(open(os.path.join(d, "diff_L1_mean.json")))
assert j["difference"]["colour_scale"] == q["colour_scale"], (j["difference"]["colour_scale"], q["colour_scale"])
c = json.load(open(os.path.join(dc, "query_row_pair.json")))
assert c["shape"] == [4, 9] and c["first_position"] == 6, (c["shape"], c.get("first_position"))
assert c["row_labels"][0] == "L1H1 tired", c["row_labels"]
assert c["col_labels"][5] == "tired/wet", c["col_labels"]
h = json.load(open(os.path.join(dc, "pair_L1H1.json")))
a, b = h["attention"]
assert abs(c["values"][0][0] - a[8][0]) < 1e-6
PYEOF
grep -q 'id="difference"' "$TMP/strip/query_row_pair.svg" || fail "query_row_pair.svg: no difference group"
# the rows' colour bar is titled in one line beside the 4 rows ("attention
# weight" wrapped onto two beside them)
has '>attention</text>' "$TMP/strip/query_row_pair.svg" &&
    ! has '>weight</text>' "$TMP/strip/query_row_pair.svg" ||
    fail "query_row_pair.svg: the rows' colour bar title is not one line 'attention'"

# 3. typography: U+2212 for negative numbers, titles a reader wants, colour
#    bar labels at round values with one precision (also under --range auto)
run 0 typo inspect --model "$M" --sentence "$TIRED" --sentence "$WET" --out "$TMP/typo" \
    --only L1H1 --range auto --annotate --format svg
"$PY" - "$TMP/typo" <<'PYEOF' || fail "typography"
import os, re, sys
d = sys.argv[1]
for f in sorted(os.listdir(d)):
    if not f.endswith(".svg"):
        continue
    svg = open(os.path.join(d, f)).read()
    nums = re.findall(r'<text class="(?:cbar|annot)"[^>]*>([^<]*)<', svg)
    assert not [n for n in nums if n.startswith("-")], (f, "hyphen-minus", nums)
    texts = re.findall(r'<text[^>]*>([^<]*)<', svg)  # ticks, bar values too (dla)
    assert not [n for n in texts if re.match(r"[+]?-[\d.]", n)], (f, "hyphen-minus", texts)
    assert "hook_pattern" not in svg, f
    for part in svg.split('id="colorbar')[1:]:  # each colour bar
        bar = re.findall(r'<text class="cbar"[^>]*>([^<]*)<', part.split("<g id=")[0])
        decs = {len(n.split(".")[1]) if "." in n else 0 for n in bar}
        assert len(decs) == 1, (f, "mixed precision", bar)
        for n in bar:  # round: at most two significant digits
            digits = n.replace("\u2212", "").replace(".", "").lstrip("0")
            assert len(digits.rstrip("0")) <= 2, (f, n, bar)
neg = open(os.path.join(d, "diff_L1H1.svg")).read()
assert re.search(r'class="cbar"[^>]*>\u2212\d', neg), "no U+2212 on the difference's bar"
assert "<title>L1H1 attention (tired)</title>" in open(os.path.join(d, "L1H1.svg")).read()
PYEOF

# 5. --positions is a Python slice: half-open, negatives, open ends; the
#    query-row strip honours it
run 0 help inspect --help
grep -q 'a Python slice: half-open' "$TMP/help.out" || fail "--help: --positions is not said to be a Python slice"
for spec in "8:12 8 11" "8: 8 14" ":5 0 4" "8:-1 8 13" "-4: 11 14" "-6:-2 9 12" "3:40 3 14"; do
    set -- $spec
    run 0 "sl$2$3" inspect --model "$M" --sentence "$TIRED" --out "$TMP/sl" --only L1H1 \
        --positions "$1" --format json
    "$PY" - "$TMP/sl" "$2" "$3" <<'PYEOF' || fail "--positions $1: not positions $2..$3"
import json, os, sys
d, a, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
h = json.load(open(os.path.join(d, "L1H1.json")))
assert h.get("first_position", 0) == a and h["shape"] == [1, b - a + 1, b - a + 1], (h.get("first_position"), h["shape"])
q = json.load(open(os.path.join(d, "query_row.json")))
assert q["shape"] == [1, b - a + 1] and q.get("first_position", 0) == a, (q["shape"], q.get("first_position"))
assert q["col_labels"] == h["tokens"], (q["col_labels"], h["tokens"])
PYEOF
done
run 1 slempty inspect --model "$M" --sentence "$TIRED" --out "$TMP/e5" --positions 9:3
one_line slempty "positions 9:3 selects no position"
run 2 slbad inspect --model "$M" --sentence "$TIRED" --out "$TMP/e5" --positions 1:2:3
one_line slbad "Python slice"

# a cropped query-row strip says so under its title, as every cropped figure
run 0 qcrop inspect --model "$M" --sentence "$TIRED" --out "$TMP/qcrop" --positions 3:8 --format svg
grep -q 'sources 3..7 of 0..14: rows shown need not sum to 1' "$TMP/qcrop/query_row.svg" ||
    fail "--positions 3:8: query_row does not say it is cropped"
run 0 qcrop2 inspect --model "$M" --sentence "$TIRED" --sentence "$WET" --out "$TMP/qcrop2" \
    --positions 8: --format svg
grep -q 'sources 8..14 of 0..14' "$TMP/qcrop2/query_row_pair.svg" ||
    fail "--positions 8:: query_row_pair does not say it is cropped"

# 6. --cmap greys: the accents follow the map (masked cells' fill, the query
#    row's frame): every colour a greys figure names is a grey
run 0 greys inspect --model "$M" --sentence "$TIRED" --out "$TMP/greys" --only L1H1,L0H1 --cmap greys \
    --format svg
"$PY" - "$TMP/greys" <<'PYEOF' || fail "--cmap greys: a colour that is not grey"
import os, re, sys
d = sys.argv[1]
for f in ("L1H1.svg", "attention_grid.svg", "L0_mean.svg"):
    svg = open(os.path.join(d, f)).read()
    assert "hatch-" in svg and "masked" in svg, f
    cols = set(re.findall(r'(?:fill|stroke|stop-color)="#([0-9a-f]{6})"', svg))
    bad = [c for c in cols if not (c[0:2] == c[2:4] == c[4:6])]
    assert not bad, (f, bad)
PYEOF
#    and in a pair's difference figures, whose cells stay blue-white-red
#    (a signed difference), every accent is grey: the masked cells' hatch
#    pattern (its fill and its lines) and nothing lilac
run 0 greys2 inspect --model "$M" --sentence "$TIRED" --sentence "$WET" --out "$TMP/greys2" \
    --only L1H1 --cmap greys --format svg
"$PY" - "$TMP/greys2" <<'PYEOF' || fail "--cmap greys: a difference figure's accent is not grey"
import os, re, sys
d = sys.argv[1]
for f in ("diff_L1H1.svg", "diff_L1_mean.svg"):
    svg = open(os.path.join(d, f)).read()
    pats = re.findall(r'<pattern id="hatch-[^"]*".*?</pattern>', svg, re.S)
    assert pats and 'class="masked"' in svg, f
    cols = set(c for p in pats for c in re.findall(r'(?:fill|stroke)="#([0-9a-f]{6})"', p))
    bad = [c for c in cols if not (c[0:2] == c[2:4] == c[4:6])]
    assert not bad, (f, "hatch", bad)
    assert "e4c8f0" not in svg, (f, "lilac")
PYEOF

# 7. --title is the main figure's: the grid's, or under one --only head that
#    head's figure (the grid is then its JSON alone: no second picture of it)
run 0 title1 inspect --model "$M" --sentence "$TIRED" --out "$TMP/title1" --only L1H1 \
    --title "Figure 3" --format svg,json
grep -q '<title>Figure 3</title>' "$TMP/title1/L1H1.svg" || fail "--title --only L1H1: not on L1H1"
[ ! -e "$TMP/title1/attention_grid.svg" ] || fail "--only L1H1: attention_grid.svg repeats L1H1.svg"
check_folder "$TMP/title1" attention_grid.json L1H1.svg
run 0 title2 inspect --model "$M" --sentence "$TIRED" --out "$TMP/title2" --only L1H1,L0H1 \
    --title "Figure 3" --format svg
grep -q '<title>Figure 3</title>' "$TMP/title2/attention_grid.svg" || fail "--title: not on the grid"
grep -q '<title>Figure 3</title>' "$TMP/title2/L1H1.svg" && fail "--title: on L1H1 beside the grid"

# 8. a pair prints both sentences' rows, each under its name, and names
#    sentence A's own figures as its
run 0 rows2 inspect --model "$M" --sentence "$TIRED" --sentence "$WET" --out "$TMP/rows2" \
    --only L1H1 --heads --format svg,json
grep -q '^sentence A (tired):$' "$TMP/rows2.out" || fail "pair: no sentence A heading"
grep -q '^sentence B (wet):$' "$TMP/rows2.out" || fail "pair: no sentence B heading"
"$PY" - "$TMP/rows2" "$TMP/rows2.out" <<'PYEOF' || fail "pair: the printed rows"
import json, os, sys
d, out = sys.argv[1], open(sys.argv[2]).read().splitlines()
b = out[out.index("sentence B (wet):") + 1:]
l1 = [l for l in b if l.startswith("L1H1 ")][0]
assert " wet:" in l1 and " tired:" not in l1, l1
p = json.load(open(os.path.join(d, "pair_L1H1.json")))
row = p["attention"][1][14]
got = [float(it.rsplit(":", 1)[1]) for it in l1.split()[1:]]
assert all(abs(g - v) <= 0.005 + 1e-9 for g, v in zip(got, row)), (got, row)
for f in ("L1H1.svg", "L0_mean.svg", "query_row.svg"):
    assert "(tired)</title>" in open(os.path.join(d, f)).read(), f
assert not os.path.exists(os.path.join(d, "attention_grid.svg"))
PYEOF

# 9. a pair prints each sentence's top predictions under its name, and
#    predictions.json holds both: B's are those of B run alone
run 0 predb inspect --model "$M" --sentence "$WET" --out "$TMP/predb" --format json
"$PY" - "$TMP/rows2" "$TMP/rows2.out" "$TMP/predb" "$TMP/predb.out" <<'PYEOF' || fail "pair: B's predictions"
import json, os, sys
out, alone = open(sys.argv[2]).read().splitlines(), open(sys.argv[4]).read().splitlines()
def top(lines):  # "top predictions at position P:" and its 5 lines (--top's default)
    i = [k for k, l in enumerate(lines) if l.startswith("top predictions at position")][0]
    return lines[i:i + 6]
ia, ib = out.index("sentence A (tired):"), out.index("sentence B (wet):")
a_tops = [l for l in out[ia:ib] if l.startswith("top predictions")]
b_tops = [l for l in out[ib:] if l.startswith("top predictions")]
assert len(a_tops) == 1 and len(b_tops) == 1, out
assert top(out[ib:]) == top(alone), (top(out[ib:]), top(alone))
p = json.load(open(os.path.join(sys.argv[1], "predictions.json")))
q = json.load(open(os.path.join(sys.argv[3], "predictions.json")))
assert p["predictions_b"] == q["predictions"] and p["query_token_b"] == q["query_token"], p
assert p["sentence_b"] == q["sentence"] and p["predictions"] != p["predictions_b"], p
PYEOF

echo "inspect_pair: ok"
