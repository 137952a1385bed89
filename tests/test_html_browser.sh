#!/usr/bin/env bash
# tests/test_html_browser.sh -- the HTML viewer in a real browser: Debian's
# chromium, headless, driven over the DevTools protocol by puppeteer-core
# (tests/browser/check_page.js; `scripts/deps.sh --test` installs both).
#   - inspect --format html on the chapter's tired sentence: the page opens
#     from file:// with every non-file request failed (none made), no console
#     error; known (head, dest, src) cells of the large head view have the
#     colour of attention_grid.json's value through viridis; hovering a token
#     shades the source tokens with exactly its attention row; arrow keys move
#     the selected head;
#   - on the tired page, every destination token hovered and clicked after
#     moving from another (far, then its neighbour) is the one chosen: nothing
#     moves under the pointer (tests/browser/check_viewer.js --tokens);
#   - the focus outline of the large head and of a matrix figure is drawn
#     on all four sides (not clipped), and the cell under the arrow keys'
#     cursor is framed (check_viewer.js --focus);
#   - a token holding U+202E (a copy of tired's folder through `view`) does
#     not reorder the numbers after it in the status lines, and every title
#     and label isolates it (check_viewer.js --bidi);
#   - a 250-byte word (token 3 of that copy) is shown shortened, whole in
#     its title, and moves the head's pattern at most 200 px from where a
#     page of short words has it (check_viewer.js --long);
#   - the tired page with an inline script and two inline handlers injected
#     on purpose: the CSP (the viewer's scripts pinned by their SHA-256)
#     blocks all three and the page still works (check_viewer.js --csp);
#   - the token list is one Tab stop (arrows inside), and the large head's
#     status names the head shown after a switch (check_viewer.js --keys);
#   - `view tired wet` refuses tired's own page without --force; with it, the
#     page's heading names both folders (check_viewer.js --heading);
#   - a circuit whose route has an adjective-key head: that head's roles cell
#     says so, and ablation drops are in points (check_viewer.js --circuit);
#   - view tired wet_only other (wet_only: inspect --only L1H1,L0H2; other: a
#     1 x 2 model): selecting, then pinning, L1H1 shows L1H1 in tired's and wet_only's compare
#     panels, L0H0 says wet_only has none; other is compared with
#     neither, and the page names both models (check_viewer.js --select,
#     --pin, --models);
#   - view DIR DIR (tired + wet) makes one page that passes the same checks,
#     and index.html is listed in the first folder's index.json;
#   - circuit --format html: every patching cell is its value through the
#     figure's diverging map on [-1, 1]; the evidence table sorts;
#   - circuit on an induction model: the report's verdict and criteria, each
#     head's detector scores in the evidence table, the named heads by name;
#   - inspect's query_row on its figure's fixed [0, 1] scale;
#   - timeline --format html draws its line plots;
#   - a circuit page (a hand-written graph.json of a 2 x 4 model and the
#     attention of its prompt, through `view`): the threshold slider changes
#     the number of edges drawn, a positive and a negative edge have viz's
#     diverging ends as the browser computes them, a click or Enter on a head
#     shows its pattern in viridis; its faithfulness curve on a log x axis;
#   - the same circuit's folder without its attention, beside a folder of the
#     same model (2 x 4, d_model 16) holding it: the head's click draws it;
#   - 12 layers x 12 heads x 256 tokens (a model trained 2 steps): the page
#     loads, 30 token hovers, 30 grid hovers and 6 clicks run without a page
#     error (its load time and longest frame, input to paint, are measured by
#     bench/html_page.sh against the 100 ms target, not timed here);
#   - with /usr/bin/firefox-esr present, the tired page's checks in Firefox too
#     (the token row by keyboard focus: puppeteer's pointer over WebDriver
#     BiDi sometimes lands one token off after a scroll).
# Screenshots are kept in BUILD_DIR/browser-artefacts/. In a sanitizer build
# (HS_SANITIZE) the commands run but no page is opened (see check() below).
# Without chromium (or the npm driver) the test is skipped (exit 77) unless
# CI is set, where it fails (cli_lib.sh's skip_test).
# Run as: bash tests/test_html_browser.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_html_browser.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_html_browser.sh BUILD_DIR HEADSCOPE_BIN}
HERE=$(cd "$(dirname "$0")" && pwd)
CHROMIUM=${HS_CHROMIUM:-/usr/bin/chromium}
missing=""
[ -x "$CHROMIUM" ] || missing="chromium ($CHROMIUM)"
command -v node >/dev/null 2>&1 || missing="${missing:+$missing, }node"
[ -d "$HERE/browser/node_modules/puppeteer-core" ] || missing="${missing:+$missing, }puppeteer-core (npm ci in tests/browser)"
# shellcheck source=tests/cli_lib.sh
. "$HERE/cli_lib.sh"
[ -z "$missing" ] || skip_test "missing $missing"

mkdir -p "$BUILD_DIR/testtmp"
TMP=$(mktemp -d "$BUILD_DIR/testtmp/html.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
ART="$BUILD_DIR/browser-artefacts"
mkdir -p "$ART"
PY=/usr/bin/python3
shopt -s nullglob
# In a sanitizer build (scripts/test.sh's asan stage) every headscope command
# below runs, under ASan and UBSan, but the pages are not opened in a browser:
# their bytes are the plain build's (test_golden_cli pins every page byte for
# byte in both builds), whose run of this test checked them in Chromium; the
# browser part is most of this test's time and would be the same run again.
SANITIZED=0
grep -q '^HS_SANITIZE:BOOL=ON' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null && SANITIZED=1
check() {
    [ "$SANITIZED" = 0 ] || return 0
    node "$HERE/browser/check_page.js" --exe "$CHROMIUM" "$@" || fail "browser check: $*"
}
viewer() {
    [ "$SANITIZED" = 0 ] || return 0
    node "$HERE/browser/check_viewer.js" --exe "$CHROMIUM" "$@" || fail "viewer check: $*"
}

M="$TMP/m.safetensors"
run 0 train train --out "$M" --steps 150 --eval-every 0
TIRED="the animal did not cross the street because it was too tired , so the"
WET="the animal did not cross the street because it was too wet , so the"
run 0 tired inspect --model "$M" --sentence "$TIRED" --out "$TMP/tired" --format json,html
run 0 wet inspect --model "$M" --sentence "$WET" --out "$TMP/wet" --format json
check_folder "$TMP/tired" index.html attention_grid.json
check --page "$TMP/tired/index.html" --json "$TMP/tired/attention_grid.json" --shot "$ART/inspect_tired.png" \
    --matrix "query_row:$TMP/tired/query_row.json"
# every token, aimed at where it is drawn and hovered after another, then
# clicked, is the one chosen (the status line above the list moves nothing);
# the keyboard focus on the large head and a matrix is seen whole, with the
# cell the arrow keys reach framed
viewer --page "$TMP/tired/index.html" --tokens --focus
# the token list is one Tab stop; the head's status follows the head shown
viewer --page "$TMP/tired/index.html" --keys

# the same page in Firefox, when Debian's firefox-esr is installed (not by
# deps.sh: an optional check that no Chromium-only API crept in)
if [ -x /usr/bin/firefox-esr ] && [ "$SANITIZED" = 0 ]; then
    node "$HERE/browser/check_page.js" --browser firefox --exe /usr/bin/firefox-esr \
        --page "$TMP/tired/index.html" --json "$TMP/tired/attention_grid.json" \
        --hover focus --shot "$ART/inspect_tired_firefox.png" || fail "the page in firefox-esr"
fi

# hostile words: a copy of tired whose token 1 holds U+202E (RIGHT-TO-LEFT
# OVERRIDE) and token 3 is 250 bytes long, in every file that names tokens
mkdir "$TMP/odd" && cp "$TMP/tired/"*.json "$TMP/odd/"
"$PY" - "$TMP/odd" <<'PYEOF'
import json, os, sys
d = sys.argv[1]
RLO, LONG = "abc\u202e", "\u00e9" * 125  # a 250-byte word
idx = json.load(open(os.path.join(d, "index.json")))
idx["files"] = [f for f in idx["files"] if f["file"] != "index.html"]
json.dump(idx, open(os.path.join(d, "index.json"), "w"))
for name in ("attention_grid.json", "query_row.json"):
    p = os.path.join(d, name)
    j = json.load(open(p))
    for k in ("tokens", "col_labels"):
        if k in j:
            j[k][1], j[k][3] = RLO, LONG
    json.dump(j, open(p, "w"))
PYEOF
run 0 odd view "$TMP/odd"
# the numbers after a U+202E word keep their order; titles isolate it
viewer --page "$TMP/odd/index.html" --bidi 1
# a 250-byte word is shortened for display, whole in its title, and moves the
# large head's pattern no further than a short word does
viewer --page "$TMP/odd/index.html" --long 3 --ref "$TMP/tired/index.html" --max-shift 200

# the Content-Security-Policy: a copy of the tired page with an inline script,
# an onerror and an onclick handler injected on purpose (as if escaping had
# failed): the page's own scripts run, the injected ones are blocked
sed 's|<main id="hs-app"|<script>document.body.dataset.pwned = "script"</script><img src="data:," onerror="document.body.dataset.pwned = \x27onerror\x27"><p id="hs-injected" onclick="document.body.dataset.pwned = \x27onclick\x27">injected</p>&|' \
    "$TMP/tired/index.html" >"$TMP/injected.html"
grep -q 'id="hs-injected"' "$TMP/injected.html" || fail "the injection did not take"
viewer --page "$TMP/injected.html" --csp

# view: two sentences in one page; index.html joins the first folder's index
run 1 view_own view "$TMP/tired" "$TMP/wet"
one_line view_own "index.html exists (the page of .*/tired alone); the page of .*/tired and .*/wet replaces it only with --force"
run 0 view view "$TMP/tired" "$TMP/wet" --force
viewer --page "$TMP/tired/index.html" --heading "headscope view · $TMP/tired, $TMP/wet"
check_folder "$TMP/wet"
run 0 view2 view "$TMP/wet" "$TMP/tired"
check_folder "$TMP/wet" index.html
check --page "$TMP/wet/index.html" --json "$TMP/wet/attention_grid.json" --shot "$ART/view_wet_tired.png"
# heads compared by name: wet with only L1H1 and L0H2 beside tired (2 x 4):
# selecting, then pinning, L1H1 shows wet's L1H1, L0H0 says wet has none
# (never wet's second pattern, L0H2, at L1H1's clamped position); a folder of another model (1 x 2, 2 steps)
# is compared with neither, and the page names the two models
run 0 wet_only inspect --model "$M" --sentence "$WET" --only L1H1,L0H2 --out "$TMP/wet_only" --format json
run 0 other_train train --out "$TMP/o.safetensors" --layers 1 --heads 2 --d-model 16 --steps 2 --eval-every 0
run 0 other inspect --model "$TMP/o.safetensors" --sentence "$WET" --out "$TMP/other" --format json
run 0 by_name view "$TMP/tired" "$TMP/wet_only" "$TMP/other" --out "$TMP/by_name.html"
viewer --page "$TMP/by_name.html" --select "L1H1;L0H0,missing:1" --pin "L1H1;L0H0,missing:1" --models 2 --shot "$ART/view_by_name.png"
# a file headscope did not write is not overwritten
mkdir "$TMP/f" && cp "$TMP/tired/"*.json "$TMP/f/" && echo "mine" >"$TMP/f/index.html"
"$PY" - "$TMP/f/index.json" <<'PYEOF'
import json, sys
p = sys.argv[1]
j = json.load(open(p))
j["files"] = [f for f in j["files"] if f["file"] != "index.html"]
json.dump(j, open(p, "w"))
PYEOF
run 1 foreign view "$TMP/f"
one_line foreign "index.html exists and .* does not list it"
[ "$(cat "$TMP/f/index.html")" = "mine" ] || fail "view overwrote a file it did not write"
# nor one listed but changed since (the user edited it)
cp -r "$TMP/wet" "$TMP/wet2"
echo "<!-- mine -->" >>"$TMP/wet2/index.html"
run 1 changed view "$TMP/wet2"
one_line changed "index.html exists and .* does not list it"
grep -q "<!-- mine -->" "$TMP/wet2/index.html" || fail "view overwrote a page changed since it wrote it"
run 2 view_none view
run 1 view_missing view "$TMP/nope"

# circuit: matrices on their figures' scales, sortable evidence
run 0 circuit circuit --model "$M" --out "$TMP/circuit" --format json,html
check --page "$TMP/circuit/index.html" --matrix "patching:$TMP/circuit/patching.json" --shot "$ART/circuit.png"
# a copy whose route has an adjective-key head (L0H1's weight on the
# adjective differs by 0.5 between the roles): its roles cell says so, and
# the ablation drops are in points, as the verdicts give them
cp -r "$TMP/circuit" "$TMP/circuit_key"
rm "$TMP/circuit_key/index.html"
"$PY" - "$TMP/circuit_key/report.json" <<'PYEOF'
import json, sys
p = sys.argv[1]
r = json.load(open(p))
r["verdict"]["route"]["features"]["adjective_key"] = True
for h in r["heads"]:
    a = h["attention_at_14"]
    if h["name"] == "L0H1":
        a["crosser"]["adjective"], a["crossed"]["adjective"] = 0.6, 0.1
    elif abs(a["crosser"]["adjective"] - a["crossed"]["adjective"]) >= r["thresholds"]["adj_key_diff"]:
        a["crossed"]["adjective"] = a["crosser"]["adjective"]
json.dump(r, open(p, "w"))
PYEOF
run 0 circuit_key view "$TMP/circuit_key"
viewer --page "$TMP/circuit_key/index.html" --circuit "$TMP/circuit_key/report.json"

# the induction circuit: its verdict and criteria, per-head scores, the two
# named heads' patterns under their own names (a small model that forms the
# circuit in 700 steps, ~4 s)
run 0 ind_train train --task induction --d-mlp 0 --d-model 32 --heads 2 --vocab-size 16 --n-ctx 24 \
    --seg-len 3:6 --gap 0:8 --heldout 64 --batch 32 --steps 700 --eval-every 0 --out "$TMP/ind.safetensors"
run 0 ind_circuit circuit --model "$TMP/ind.safetensors" --out "$TMP/ind" --format json,html --comp-draws 20
check --page "$TMP/ind/index.html" --report "$TMP/ind/report.json" --json "$TMP/ind/attention.json" \
    --shot "$ART/circuit_induction.png"

# timeline: line plots (every checkpoint of a short run)
run 0 keep train --out "$TMP/k.safetensors" --steps 20 --checkpoint-every 10 --keep "$TMP/keep" --eval-every 0
run 0 timeline timeline "$TMP/keep" --out "$TMP/tl" --format json,html
check --page "$TMP/tl/index.html" --shot "$ART/timeline.png"

# a circuit page: a hand-written graph.json of a 2 x 4 model with MLPs (MIB's
# 110 edges, ten in the circuit, both signs) and the attention of its prompt,
# in a folder `view` makes a page of
mkdir "$TMP/graph"
"$PY" - "$TMP/graph" <<'PYEOF'
import json, os, sys
d = sys.argv[1]
L, H = 2, 4
layer = [["a%d.h%d" % (l, h) for h in range(H)] + ["m%d" % l] for l in range(L)]
edges = []
for l in range(L):
    before = ["input"] + [n for k in range(l) for n in layer[k]]
    for h in range(H):
        edges += ["%s->a%d.h%d<%s>" % (u, l, h, x) for x in "qkv" for u in before]
    edges += ["%s->m%d" % (u, l) for u in before + layer[l][:H]]
edges += ["%s->logits" % u for u in ["input"] + [n for k in range(L) for n in layer[k]]]
assert len(edges) == 110, len(edges)
circuit = {"input->a0.h1<k>": 0.3, "input->a0.h1<q>": 0.12, "a0.h1->a1.h2<k>": 1.2, "input->a1.h2<q>": 0.45,
           "input->a1.h2<v>": 0.8, "a1.h2->logits": 0.9, "a0.h3->m0": -0.6, "m0->a1.h0<v>": 0.05,
           "input->a0.h3<q>": -0.2, "a1.h0->logits": -0.3}
E = {e: {"score": circuit.get(e, ((i * 37) % 23 - 11) / 400.0), "in_graph": e in circuit} for i, e in enumerate(edges)}
nodes = {n: {"in_graph": any(n in (e.split("->")[0], e.split("->")[1].split("<")[0]) for e in circuit)}
         for n in ["input"] + [n for k in range(L) for n in layer[k]] + ["logits"]}
cfg = {"n_layers": L, "n_heads": H, "parallel_attn_mlp": False, "d_model": 16}
json.dump({"cfg": cfg, "nodes": nodes, "edges": E}, open(os.path.join(d, "graph.json"), "w"))
toks = ["the", "cat", "sat", "on", "the", "mat"]
T = len(toks)
att = []
for k in range(L * H):
    rows = []
    for q in range(T):
        w = [1 + (k * 7 + q * 3 + s * 5) % 9 if s <= q else 0 for s in range(T)]
        rows.append([x / sum(w) for x in w])
    att.append(rows)
json.dump({"title": "prompt 0", "shape": [L * H, T, T], "tokens": toks, "attention": att,
           "attention_head_names": ["L%dH%d" % (k // H, k % H) for k in range(L * H)],
           "config": {"n_layers": L, "n_heads": H}}, open(os.path.join(d, "attention.json"), "w"))
pct = [0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100]
curve = {"title": "faithfulness", "xlabel": "circuit size (% of the graph's edges)", "x": pct,
         "panels": [{"ylabel": "faithfulness", "series": [
             {"label": m, "y": [round(1 - 0.9 ** (3 * (i + 1) * (k + 1)), 4) for i in range(10)]}
             for k, m in enumerate(["EAP", "EAP-IG", "ACDC"])]}],
         "x_scale": "log", "mark_y": 1}
json.dump(curve, open(os.path.join(d, "faithfulness_curve.json"), "w"))
json.dump({"generator": "headscope test discover", "command": "discover",
           "files": [{"file": "graph.json", "format": "json", "shows": "the circuit"},
                     {"file": "attention.json", "format": "json", "shows": "attention of prompt 0"},
                     {"file": "faithfulness_curve.json", "format": "json", "shows": "faithfulness"}]},
          open(os.path.join(d, "index.json"), "w"))
PYEOF
run 0 graph_view view "$TMP/graph" --out "$TMP/graph.html"
check --page "$TMP/graph.html" --graph "$TMP/graph/graph.json" --json "$TMP/graph/attention.json" \
    --shot "$ART/circuit_graph.png"
# the same circuit with its attention in another folder of the same model
# (2 x 4, d_model 16) on the page: a head's click finds it there
mkdir "$TMP/graph_only" "$TMP/graph_att"
cp "$TMP/graph/graph.json" "$TMP/graph/faithfulness_curve.json" "$TMP/graph_only/"
cp "$TMP/graph/attention.json" "$TMP/graph_att/"
"$PY" - "$TMP/graph" "$TMP/graph_only" "$TMP/graph_att" <<'PYEOF'
import json, os, sys
src, only, att = sys.argv[1:4]
idx = json.load(open(os.path.join(src, "index.json")))
files = [f for f in idx["files"] if f["file"] != "attention.json"]
json.dump(dict(idx, files=files), open(os.path.join(only, "index.json"), "w"))
json.dump({"generator": "headscope test inspect", "command": "inspect",
           "config": {"n_layers": 2, "n_heads": 4, "d_model": 16},
           "files": [{"file": "attention.json", "format": "json", "shows": "attention of prompt 0"}]},
          open(os.path.join(att, "index.json"), "w"))
PYEOF
run 0 graph_elsewhere view "$TMP/graph_only" "$TMP/graph_att" --out "$TMP/graph2.html"
check --page "$TMP/graph2.html" --graph "$TMP/graph/graph.json" --json "$TMP/graph_att/attention.json" \
    --shot "$ART/circuit_graph_elsewhere.png"

# 12 layers x 12 heads x 256 tokens
B="$TMP/big.safetensors"
run 0 big_train train --out "$B" --layers 12 --heads 12 --d-model 96 --n-ctx 256 --steps 2 --eval-every 0
LONG=$("$PY" -c "
w = '$TIRED'.split()
print(' '.join(w[(7 * i) % len(w)] for i in range(256)))")
run 0 big inspect --model "$B" --sentence "$LONG" --out "$TMP/big" --format html
check --page "$TMP/big/index.html" --shot "$ART/big_12x12x256.png" --perf
if [ "$SANITIZED" = 1 ]; then echo "sanitizer build: every command ran; the browser checks are the plain build's run"
else echo "browser checks passed; screenshots in $ART"; fi
