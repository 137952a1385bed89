#!/usr/bin/env bash
# tests/test_progress_cli.sh -- progress of long work on a non-terminal stderr,
# and patch's --by cells. With HEADSCOPE_PROGRESS=0 (a line for every unit,
# at once) `patch`, `lens` and `ablate` print "CMD: WHAT DONE/TOTAL ETA ..."
# lines whose DONE runs 1..TOTAL in order, TOTAL the units of the work (patch
# --acts z --by head: one sweep per layer, its heads in one batch; lens: chunks of 32 prompts;
# ablate: one per component; discover: EAP's chunks, then its circuit runs; weights: one per head); by default (a quick run, stderr not a terminal)
# none. patch --by head gives the default run's all-position cells bit for
# bit and no per-position cells; --by head,position the per-position cells
# and no all-position ones; --by with --method atp is a usage error.
# Run as: bash tests/test_progress_cli.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_progress_cli.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_progress_cli.sh BUILD_DIR HEADSCOPE_BIN}
mkdir -p "${HS_TEST_TMP:-$BUILD_DIR/testtmp}"
TMP=$(mktemp -d "${HS_TEST_TMP:-$BUILD_DIR/testtmp}/progress_cli.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
PY=/usr/bin/python3
# shellcheck source=tests/cli_lib.sh
source "$(dirname "$0")/cli_lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)

M="$TMP/m.safetensors"
cp "$HERE/checkpoint/circuit_tiny.safetensors" "$M"
run 0 ds train --steps 1 --eval-every 0 --dataset "$TMP/ds.txt" --out "$TMP/ds.safetensors"
"$PY" "$HERE/py/winograd_pairs.py" "$TMP/ds.txt" "$TMP/pairs.jsonl"
head -40 "$TMP/pairs.jsonl" >"$TMP/p40.jsonl"

# progress_lines NAME CMD WHAT TOTAL: the lines of $TMP/NAME.err for CMD's
# WHAT count 1..TOTAL, one line each, in order
progress_lines() {
    "$PY" - "$TMP/$1.err" "$2" "$3" "$4" <<'PYEOF' || fail "$1: progress lines: $(cat "$TMP/$1.err")"
import re, sys
err, cmd, what, total = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
pat = re.compile(r"^%s: %s (\d+)/(\d+) ETA (\d+s|\?)$" % (re.escape(cmd), re.escape(what)))
done = []
for line in open(err):
    m = pat.match(line.rstrip("\n"))
    if m:
        assert int(m.group(2)) == total, (line, total)
        done.append(int(m.group(1)))
assert done == list(range(1, total + 1)), done
PYEOF
}

L=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['config']['n_layers'])" <("$HS" lens --model "$M" --data "$TMP/p40.jsonl" --json 2>/dev/null))
H=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['config']['n_heads'])" <("$HS" lens --model "$M" --data "$TMP/p40.jsonl" --json 2>/dev/null))

HEADSCOPE_PROGRESS=0 run 0 ph patch --model "$M" --data "$TMP/p40.jsonl" --acts z --by head --json
progress_lines ph patch "batches of patched runs (a cell, a layer's heads, or a group of heads)" "$L" # one per layer: its heads in one batch
HEADSCOPE_PROGRESS=0 run 0 lp lens --model "$M" --data "$TMP/p40.jsonl" --json
progress_lines lp lens "chunks of up to 32 prompts" 2
HEADSCOPE_PROGRESS=0 run 0 ap ablate --model "$M" --data "$TMP/p40.jsonl" --method zero --json
NC=$("$PY" -c "import json,sys; print(len(json.load(open(sys.argv[1]))['components']))" "$TMP/ap.out")
progress_lines ap ablate components "$NC"
HEADSCOPE_PROGRESS=0 run 0 dp discover --model "$M" --data "$TMP/p40.jsonl" --top 20 --method eap-ig --json
progress_lines dp discover "EAP-IG chunks of 32 prompts" 2
HEADSCOPE_PROGRESS=0 run 0 dx discover --model "$M" --data "$TMP/p40.jsonl" --top 20 --json
grep -q "^discover: circuits evaluated (circuits x chunks of 32 prompts) [0-9]*/[0-9]* ETA" "$TMP/dx.err" ||
    fail "discover: no progress of its circuit runs: $(head -3 "$TMP/dx.err")"
HEADSCOPE_PROGRESS=0 run 0 wp weights --model "$M" --out "$TMP/wp" --dpi 72 --format json
progress_lines wp weights "heads' full QK and OV circuits" $((L * H))
# every phase of weights that grows with the heads: the copying scores (one
# per head), the virtual weights and composition scores (one per sender and
# later layer), the baseline's draws and the heads' QK and OV files; on 2
# threads the same lines, and the same numbers and files as on 1
progress_lines wp weights "copying scores (heads)" $((L * H))
progress_lines wp weights "virtual weights (sender, layer)" $((H * L * (L - 1) / 2))
progress_lines wp weights "composition scores (sender, layer)" $((H * L * (L - 1) / 2))
progress_lines wp weights "composition baseline draws" 300
progress_lines wp weights "heads' full QK and OV files" $((2 * L * H))
HEADSCOPE_PROGRESS=0 run 0 wp1 weights --model "$M" --out "$TMP/wp1" --dpi 72 --format json --threads 1
HEADSCOPE_PROGRESS=0 run 0 wp2 weights --model "$M" --out "$TMP/wp2" --dpi 72 --format json --threads 2
progress_lines wp2 weights "composition scores (sender, layer)" $((H * L * (L - 1) / 2))
progress_lines wp2 weights "copying scores (heads)" $((L * H))
[ "$(sed "s|$TMP/wp1|OUT|g" "$TMP/wp1.out")" = "$(sed "s|$TMP/wp2|OUT|g" "$TMP/wp2.out")" ] ||
    fail "weights: stdout differs between --threads 1 and 2"
for f in "$TMP"/wp1/*.json; do
    b=$(basename "$f")
    [ "$b" = index.json ] && continue
    cmp -s "$f" "$TMP/wp2/$b" || fail "weights: $b differs between --threads 1 and 2"
done
run 2 wt weights --model "$M" --out "$TMP/wt" --threads -1
has "^headscope weights: --threads needs an integer in \[0, " "$TMP/wt.err" || fail "weights --threads -1: $(cat "$TMP/wt.err")"
# a quick run on a non-terminal stderr says nothing of its progress
run 0 pq patch --model "$M" --data "$TMP/p40.jsonl" --acts z --by head --json
grep -q "patched runs" "$TMP/pq.err" && fail "patch: progress lines on a quick run: $(cat "$TMP/pq.err")"

# --by: the cells asked for, equal to the default run's
run 0 pb patch --model "$M" --data "$TMP/p40.jsonl" --acts z --json
run 0 pp patch --model "$M" --data "$TMP/p40.jsonl" --acts z --by head,position --json
"$PY" - "$TMP/pb.out" "$TMP/pq.out" "$TMP/pp.out" <<'PYEOF' || fail "patch --by"
import json, sys
both, head, pos = (json.load(open(f))["acts"]["z"] for f in sys.argv[1:4])
assert head["metric"] == both["metric"] and head["ld"] == both["ld"]
assert "metric_by_position" not in head and "ld_by_position" not in head
assert pos["metric_by_position"] == both["metric_by_position"] and pos["ld_by_position"] == both["ld_by_position"]
assert "metric" not in pos and "ld" not in pos
assert any(v != 0 for row in head["metric"] for v in row)
PYEOF
run 2 patm patch --model "$M" --data "$TMP/p40.jsonl" --acts z --by head --method atp
one_line patm "--by is for --method exact"
run 2 pbad patch --model "$M" --data "$TMP/p40.jsonl" --by heads
one_line pbad "unknown --by 'heads'"
echo "ok: progress lines and patch --by"
