#!/usr/bin/env bash
# tests/test_text_policy.sh -- issue 16, text that cannot break a file or a
# terminal (docs/DESIGN.md, "Text policy"). One row per class of code point:
# a checkpoint whose vocabulary holds the word x<CP>y (tests/py/st_edit.py)
# either is refused at load with one line naming the problem (controls,
# noncharacters, surrogates written as UTF-8), or goes through
# `inspect --format png,svg,json --heads --vs x<CP>y`, and then
#   - every SVG passes `xmllint --noout`, every JSON parses with a strict
#     parser (no NaN/Infinity), every PNG passes pngcheck, the JSON holds the
#     exact word, and so does the HTML page's embedded data (strict JSON,
#     nothing that could close its <script> early);
#   - stdout and stderr hold no raw control, format, bidi, private-use or
#     non-ASCII space character (they show as <U+XXXX>);
# and a sentence with an unknown word holding the character is refused with a
# message naming it by code point and byte offset, nothing raw in it.
# Run as: bash tests/test_text_policy.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_text_policy.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_text_policy.sh BUILD_DIR HEADSCOPE_BIN}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
TMP=$(mktemp -d "${TMPDIR:-/tmp}/hs_text.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=tests/cli_lib.sh
. "$HERE/cli_lib.sh"

M="$TMP/m.safetensors"
run 0 train train --out "$M" --steps 5 --d-model 16 --heads 2 --eval-every 0
# the vocabulary id of "animal": the word every row replaces
ID=$("$PY" - "$M" <<'EOF'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
print(json.loads(json.loads(b[8:8 + n])["__metadata__"]["vocab"]).index("animal"))
EOF
)

# terminal_clean FILE: no raw control (but newline), format/bidi, private-use,
# non-ASCII space or noncharacter in FILE (decoded as UTF-8; a bad byte fails)
terminal_clean() {
    "$PY" - "$1" <<'EOF'
import sys, unicodedata
t = open(sys.argv[1], "rb").read().decode("utf-8")
for i, ch in enumerate(t):
    cp = ord(ch)
    cat = unicodedata.category(ch)
    bad = (cat in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp") and ch != "\n") or \
          (cat == "Zs" and ch != " ") or (0xFDD0 <= cp <= 0xFDEF) or (cp & 0xFFFE) == 0xFFFE
    if bad:
        sys.exit("raw U+%04X at character %d: %r" % (cp, i, t[max(0, i - 30):i + 30]))
EOF
}

# name | UTF-8 hex of the character | code point | expected: "ok" or a regex of the refusal
CASES=(
    "control-bel|07|0007|contains a control character"
    "control-c1-nel|c285|0085|contains a control character"
    "control-del|7f|007F|contains a control character"
    "nonchar-fffe|efbfbe|FFFE|contains U+FFFE, a Unicode noncharacter"
    "nonchar-fdd0|efb790|FDD0|contains U+FDD0, a Unicode noncharacter"
    "nonchar-1fffe|f09fbfbe|1FFFE|contains U+1FFFE, a Unicode noncharacter"
    "surrogate-d800|eda080|D800|is not valid UTF-8"
    "private-e000|ee8080|E000|ok"
    "private-plane15|f3b08080|F0000|ok"
    "format-zwsp|e2808b|200B|ok"
    "format-zwj|e2808d|200D|ok"
    "bidi-rlo|e280ae|202E|ok"
    "bidi-lri|e281a6|2066|ok"
    "format-bom|efbbbf|FEFF|ok"
    "format-shy|c2ad|00AD|ok"
    "format-tag|f3a08081|E0001|ok"
    "space-nbsp|c2a0|00A0|ok"
    "space-line-separator|e280a8|2028|ok"
    "space-ideographic|e38080|3000|ok"
    "plain-latin|c3a9|00E9|ok"
    "plain-cjk|e6bca2|6F22|ok"
)

for row in "${CASES[@]}"; do
    IFS='|' read -r name hex cp expect <<<"$row"
    V="$TMP/$name.safetensors"
    "$PY" "$HERE/py/st_edit.py" "$M" "$V" --word "$ID" "78${hex}79" --drop task
    word=$(printf 'x%by' "$(echo "$hex" | sed 's/../\\x&/g')")
    if [ "$expect" != ok ]; then
        run 1 "$name" inspect --model "$V" --sentence "the cat" --out "$TMP/$name.out.d"
        if [ "$name" = surrogate-d800 ]; then # raw ED A0 80 in the header: refused there, as the format's reader does
            one_line "$name" "the header's metadata holds invalid UTF-8"
        else
            one_line "$name" "vocab word $ID $expect"
        fi
        terminal_clean "$TMP/$name.err" || fail "$name: raw character in the message"
        [ ! -e "$TMP/$name.out.d" ] || fail "$name: refused, yet the output folder was made"
        echo "ok: $name refused at load: $(cat "$TMP/$name.err")"
        continue
    fi
    D="$TMP/$name.d"
    run 0 "$name" inspect --model "$V" --sentence "the $word did not cross" --out "$D" \
        --format png,svg,json,html --heads --vs "$word" --position 1
    check_folder "$D" attention_grid.svg attention_grid.json dla_vs.svg predictions.json
    "$PY" - "$D" "$word" <<'EOF' || fail "$name: JSON is not strict or lost the word"
import json, os, sys
d, word = sys.argv[1], sys.argv[2].encode("utf-8", "surrogateescape").decode("utf-8")
def no_constants(x):
    raise ValueError("non-standard JSON constant " + x)
for f in sorted(os.listdir(d)):
    if f.endswith(".json"):
        with open(os.path.join(d, f), encoding="utf-8") as fh:
            json.loads(fh.read(), parse_constant=no_constants)
g = json.load(open(os.path.join(d, "attention_grid.json"), encoding="utf-8"))
assert g["tokens"][1] == word, (g["tokens"], word)
p = json.load(open(os.path.join(d, "predictions.json"), encoding="utf-8"))
assert p["query_token"] == word, p["query_token"]
# the page: parses, its embedded data is strict JSON holding the exact word,
# and nothing in it could end the <script> element early
import html.parser, re
page = open(os.path.join(d, "index.html"), encoding="utf-8").read()
html.parser.HTMLParser().feed(page)
m = re.search(r'<script type="application/json" id="hs-data">(.*?)</script>', page, re.S)
assert m and "<" not in m.group(1), "page data missing or unescaped"
data = json.loads(m.group(1), parse_constant=no_constants)
assert word in json.dumps(data, ensure_ascii=False), "the page lost the word"
EOF
    grep -qF "$word" "$D/attention_grid.svg" || fail "$name: the SVG does not hold the exact word"
    terminal_clean "$TMP/$name.out" || fail "$name: raw character on stdout"
    terminal_clean "$TMP/$name.err" || fail "$name: raw character on stderr"
    case "$name" in
        plain-*) grep -qF "$word:" "$TMP/$name.out" || fail "$name: the word is not shown as is" ;;
        *) grep -qF "x<U+$cp>y:" "$TMP/$name.out" ||
               fail "$name: the terminal row does not show x<U+$cp>y: $(head -3 "$TMP/$name.out")" ;;
    esac
    # an unknown word holding the character: named by code point and byte offset
    run 1 "$name-unknown" inspect --model "$M" --sentence "the z${word#x}" --out "$TMP/$name.u"
    one_line "$name-unknown" "unknown word 'z.*y' at position 1 (it holds U+$cp at byte 5"
    terminal_clean "$TMP/$name-unknown.err" || fail "$name: raw character in the unknown-word message"
    echo "ok: $name: figures well-formed, terminal shows $(grep -o "^L0 .*" "$TMP/$name.out" | head -1 | cut -c1-60)"
done

# the no-break space between two words (issue 16): code point, byte, why
run 1 nbsp inspect --model "$M" --sentence "$(printf 'the\xc2\xa0animal did not cross')" --out "$TMP/nb"
one_line nbsp "unknown word 'the<U+00A0>animal' at position 0 (it holds U+00A0 at byte 3; only ASCII whitespace separates words)"
# a typo: the nearest vocabulary word
run 1 typo inspect --model "$M" --sentence "the anmial did not cross" --out "$TMP/ty"
one_line typo "unknown word 'anmial' at position 1; nearest vocabulary word: 'animal'; the vocabulary is:"
run 1 far inspect --model "$M" --sentence "the zebra did not cross" --out "$TMP/far"
grep -q nearest "$TMP/far.err" && fail "far: suggested a word for 'zebra': $(cat "$TMP/far.err")"
echo "ok: unknown-word messages name the code point, the byte and the nearest word"
# messages quoting what the user typed show format/bidi characters escaped too
RLO=$(printf '\xe2\x80\xae')
run 2 only_bidi inspect --model "$M" --sentence "the cat" --only "L1${RLO}H0"
one_line only_bidi "not 'L1<U+202E>H0' (try: headscope inspect --help)$"
terminal_clean "$TMP/only_bidi.err" || fail "only_bidi: raw character in the message"
run 1 model_bidi inspect --model "$TMP/a${RLO}b" --sentence "the cat"
one_line model_bidi "cannot open .*/a<U+202E>b: No such file or directory; headscope never downloads"
terminal_clean "$TMP/model_bidi.err" || fail "model_bidi: raw character in the message"
echo "ok: messages quoting user input escape format/bidi characters"
echo "text policy: all classes pass"
