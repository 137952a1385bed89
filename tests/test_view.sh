#!/usr/bin/env bash
# tests/test_view.sh -- `headscope view` on folders it did not write as they
# are (issue 26; the page in a browser is tests/test_html_browser.sh):
#   - inconsistent JSON is refused in one line naming the file and the field,
#     and no page is written: a shortened "tokens" list, 3 DLA values for 17
#     labels, attention weights 5.0 and -3.0, a matrix row one short, a line
#     plot's series one short;
#   - what a page may embed is bounded: a 100,000-value dla.json, and a page
#     whose data passes HS_VIZ_PAGE_MAX_BYTES (64 MiB), are refused in one
#     line naming the limit;
#   - a page embeds only what the viewer reads: the weights page holds no
#     virtual_weights "products" (1.77 of its 2.88 MB at 4 x 8 heads), and
#     still every matrix's values;
#   - a page replaces only a page headscope wrote that the user asked for:
#     `view A B` refuses A's own page without --force, as `--out FILE` refuses
#     an existing FILE; `view A` writes A's page again, and `view A B` run a
#     second time its page of A and B (index.json records a page's folders),
#     while `view A C` refuses it, naming A and B; the page's <title>
#     (its heading) says "headscope view" and every folder;
#   - a token <|endoftext|> comes with its display form ⟨bos⟩ (the page's
#     "shown", made by the figures' vz_display_label);
# Run as: bash tests/test_view.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_view.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_view.sh BUILD_DIR HEADSCOPE_BIN}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
mkdir -p "$BUILD_DIR/testtmp"
TMP=$(mktemp -d "$BUILD_DIR/testtmp/view.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=tests/cli_lib.sh
. "$HERE/cli_lib.sh"

M="$TMP/m.safetensors"
run 0 train train --out "$M" --steps 3 --d-model 16 --heads 2 --eval-every 0
S="the animal did not cross the street because it was too tired , so the"
run 0 base inspect --model "$M" --sentence "$S" --out "$TMP/base" --format json
run 0 base_view view "$TMP/base" --out "$TMP/base.html"
# --out may not be a file the page is made from, even with --force (it was
# replaced by the page, and the folder could not be read again)
cp "$TMP/base/index.json" "$TMP/base_index.bak"
run 1 own_index view "$TMP/base" --out "$TMP/base/index.json" --force
one_line own_index "is one of the files the page is made from"
cmp -s "$TMP/base/index.json" "$TMP/base_index.bak" || fail "view --out index.json --force changed it"
run 1 own_file view "$TMP/base" --out "$TMP/base/L0H0.json" --force
one_line own_file "is one of the files the page is made from"

# edit NAME FILE PYTHON: a copy of base as $TMP/NAME whose FILE (parsed as j)
# the Python statements change
edit() {
    local name=$1 file=$2 code=$3
    cp -r "$TMP/base" "$TMP/$name"
    "$PY" - "$TMP/$name/$file" "$code" <<'PYEOF'
import json, sys
p, code = sys.argv[1], sys.argv[2]
j = json.load(open(p))
exec(code)
json.dump(j, open(p, "w"))
PYEOF
}
# refused NAME REGEX: `view` of $TMP/NAME fails with one line matching REGEX, writes nothing
refused() {
    run 1 "$1" view "$TMP/$1" --out "$TMP/$1.html"
    one_line "$1" "$2"
    [ ! -e "$TMP/$1.html" ] || fail "$1: a page was written"
}

# inconsistent JSON: one line naming the file and the field
edit short attention_grid.json 'j["tokens"] = j["tokens"][:-1]'
refused short '^headscope view: .*/short/attention_grid.json: "tokens" has 14 entries, "attention" has 15 positions$'
edit dla3 dla.json 'j["values"] = j["values"][:3]'
refused dla3 '^headscope view: .*/dla3/dla.json: "values" has 3 entries for 12 "labels"$'
edit hot attention_grid.json 'j["attention"][1][4][2] = 5.0'
refused hot '^headscope view: .*/hot/attention_grid.json: "attention"\[1\]\[4\]\[2\] is 5, outside \[0, 1\]$'
edit cold attention_grid.json 'j["attention"][0][0][0] = -3.0'
refused cold '^headscope view: .*/cold/attention_grid.json: "attention"\[0\]\[0\]\[0\] is -3, outside \[0, 1\]$'
edit ragged query_row.json 'j["values"][2] = j["values"][2][:-1]'
refused ragged '^headscope view: .*/ragged/query_row.json: "values"\[2\] has 14 entries, "col_labels" has 15$'
edit rowlab query_row.json 'j["row_labels"] = j["row_labels"][:-1]'
refused rowlab '^headscope view: .*/rowlab/query_row.json: "row_labels" has 3 entries, "values" has 4 rows$'
# a figure's data missing what the page draws it from, or another file in its
# place, changed since headscope wrote it: refused (its section was dropped)
edit noatt attention_grid.json 'del j["attention"]'
refused noatt '^headscope view: .*/noatt/attention_grid.json: changed since headscope wrote it .* not a file the page can draw'
edit novals dla.json 'j["values"] = "abc"'
refused novals '^headscope view: .*/novals/dla.json: changed since headscope wrote it'
edit secret dla.json 'j.clear(); j["secret"] = 12345'
refused secret '^headscope view: .*/secret/dla.json: changed since headscope wrote it'
echo "ok: inconsistent JSON is refused in one line naming the file and field"

# bounds on what a page embeds
edit big dla.json 'j["values"] = [0.5] * 100000; j["labels"] = ["c%d" % i for i in range(100000)]'
refused big '^headscope view: .*/big/dla.json: 100000 bars, over the page'"'"'s limit of 1024$'
edit huge dla.json 'j["title"] = "x" * (64 << 20)'
refused huge "^headscope view: the page's data is 6[0-9.]* MiB, over its limit of 64 MiB"
echo "ok: a page embeds at most its limits, else one line says which"

# only what the viewer reads: weights' virtual_weights.products stay in the file
run 0 weights weights --model "$M" --out "$TMP/w" --format json
run 0 w_view view "$TMP/w" --out "$TMP/w.html"
"$PY" - "$TMP/w" "$TMP/w.html" <<'PYEOF' || fail "the weights page embeds what the viewer does not read"
import json, os, re, sys
d, page = sys.argv[1], open(sys.argv[2], encoding="utf-8").read()
m = re.search(r'<script type="application/json" id="hs-data">(.*?)</script>', page, re.S)
files = json.loads(m.group(1))["data"]["runs"][0]["files"]
vw = json.load(open(os.path.join(d, "virtual_weights.json")))
assert "products" in vw, "virtual_weights.json has no products to leave out"
assert "products" not in files["virtual_weights"], "the page embeds virtual_weights.products"
assert '"products"' not in m.group(1), "the page embeds some products"
for stem, f in files.items():
    j = json.load(open(os.path.join(d, stem + ".json")))
    assert f["values"] == j["values"], stem + ": values differ from its file"
print("weights page: %d bytes, virtual_weights.json %d bytes" % (len(page.encode()), os.path.getsize(os.path.join(d, "virtual_weights.json"))))
PYEOF
echo "ok: the page embeds only what the viewer reads"

# special tokens as the figures show them: the page carries each string's
# display form from the figures' own function (<|endoftext|> as ⟨bos⟩)
edit bos attention_grid.json 'j["tokens"][0] = "<|endoftext|>"'
run 0 bos_view view "$TMP/bos" --out "$TMP/bos.html"
"$PY" - "$TMP/bos.html" <<'PYEOF' || fail "the page does not show <|endoftext|> as the figures do"
import json, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r'<script type="application/json" id="hs-data">(.*?)</script>', page, re.S)
shown = json.loads(m.group(1))["shown"]
assert shown.get("<|endoftext|>") == "\u27e8bos\u27e9", shown
assert "the" not in shown and "animal" not in shown, shown
PYEOF
echo "ok: the page shows <|endoftext|> as the figures do"

# one policy for replacing a page: a page of other folders replaces the
# page there only with --force (A+B over A, A over A+B), as --out FILE is
# replaced only with --force; the same folders' page is simply rewritten
run 0 own1 view "$TMP/base"
run 0 own2 view "$TMP/base"
cp "$TMP/base/index.html" "$TMP/own.before"
cp -r "$TMP/base" "$TMP/b2" && rm "$TMP/b2/index.html"
run 1 two view "$TMP/base" "$TMP/b2"
one_line two "^headscope view: .*/base/index.html exists (the page of .*/base alone); the page of .*/base and .*/b2 replaces it only with --force (or choose a file with --out)$"
cmp -s "$TMP/own.before" "$TMP/base/index.html" || fail "two: view replaced a folder's own page without --force"
run 0 two_force view "$TMP/base" "$TMP/b2" --force
grep -q "<title>headscope view · $TMP/base, $TMP/b2</title>" "$TMP/base/index.html" ||
    fail "two_force: the page's title does not name both folders: $(grep -o '<title>.*</title>' "$TMP/base/index.html")"
check_folder "$TMP/base" index.html
# the same command run again replaces its own page (the README's `view A B`):
# index.json records the folders the page shows, as seen from base
run 0 two_again view "$TMP/base" "$TMP/b2"
has -F "<title>headscope view · $TMP/base, $TMP/b2</title>" "$TMP/base/index.html" ||
    fail "two_again: the page is not the page of both folders"
"$PY" - "$TMP/base/index.json" <<'PYEOF' || fail "two_again: index.json does not record the page's folders"
import json, sys
e = [f for f in json.load(open(sys.argv[1]))["files"] if f["file"] == "index.html"]
assert len(e) == 1 and e[0]["folders"] == [".", "../b2"], e
PYEOF
check_folder "$TMP/base" index.html
# other folders: refused, the message naming the folders of the page there
cp -r "$TMP/b2" "$TMP/b3"
cp "$TMP/base/index.html" "$TMP/two.before"
run 1 other view "$TMP/base" "$TMP/b3"
one_line other "^headscope view: .*/base/index.html exists (the page of .*/base and .*/b2); the page of .*/base and .*/b3 replaces it only with --force (or choose a file with --out)$"
cmp -s "$TMP/two.before" "$TMP/base/index.html" || fail "other: view replaced the page of base and b2 without --force"
# the same rule the other way: A's own page over the page of A and B
run 1 alone view "$TMP/base"
one_line alone "^headscope view: .*/base/index.html exists (the page of .*/base and .*/b2); the page of .*/base alone replaces it only with --force (or choose a file with --out)$"
cmp -s "$TMP/two.before" "$TMP/base/index.html" || fail "alone: view A replaced the page of A and B without --force"
run 0 alone_force view "$TMP/base" --force
has -F "<title>headscope view · $TMP/base</title>" "$TMP/base/index.html" ||
    fail "alone_force: the page is not base's own page"
check_folder "$TMP/base" index.html
run 0 alone_again view "$TMP/base"
echo "ok: a page replaces another only as the output-folder policy and --force say"
