#!/usr/bin/env bash
# tests/test_hf_gpt2_cli.sh BUILD_DIR HEADSCOPE_BIN -- Hugging Face GPT-2
# folders on the command line (tests/py/make_hf_gpt2.py writes them, random
# weights, no network): `inspect` and `dla` read a folder as --model; with
# --process tl every DLA output says "weights": "tl-processed" (without it,
# "raw"), the patterns are the raw run's and DLA still sums to the logit
# difference; a bad folder (no config.json, a mismatched shape, another
# model_type, an unknown field, a truncated shard, a shard missing from the
# index or a tensor missing from it, ...) is refused in one line with exit 1
# and nothing written; --process takes tl or raw (else a usage error, 2);
# past the 128-token figure cap every JSON (and the HTML page) still holds
# every position and its token_ids.
set -euo pipefail
HS=${2:?usage: test_hf_gpt2_cli.sh BUILD_DIR HEADSCOPE_BIN}
PY=/usr/bin/python3
mkdir -p "${HS_TEST_TMP:-${1}/testtmp}"
TMP=$(mktemp -d "${HS_TEST_TMP:-${1}/testtmp}/hf_cli.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
HERE=$(cd "$(dirname "$0")" && pwd)
case "$HS" in /*) ;; *) HS="$PWD/$HS" ;; esac
# shellcheck source=cli_lib.sh
. "$HERE/cli_lib.sh"

"$PY" "$HERE/py/make_hf_gpt2.py" "$TMP/fx"
FX=$TMP/fx
words() { "$PY" -c "import sys; print('\n'.join('w%d' % i for i in range(int(sys.argv[1]))))" "$1"; }
words 41 >"$TMP/v41.txt"
words 13 >"$TMP/v13.txt"
words 19 >"$TMP/v19.txt"
printf '%s\n' '{"prompt": "w1 w2 w3 w4", "answer": "w5", "wrong": "w6"}' \
    '{"prompt": "w7 w2 w9 w4", "answer": "w5", "wrong": "w8"}' >"$TMP/set.jsonl"

# 1. inspect on a folder, raw and processed: the DLA JSONs say which weights
for w in raw tl; do
    run 0 "inspect_$w" inspect --model "$FX/base" --vocab "$TMP/v41.txt" --sentence "w1 w2 w3 w4 w5" \
        --vs w7 --out "$TMP/ins_$w" --format json --process "$w"
    check_folder "$TMP/ins_$w" dla.json dla_vs.json
done
"$PY" - "$TMP" <<'PYEOF' || fail "inspect --process tl"
import json, sys
t = sys.argv[1]
for w, want in (("raw", "raw"), ("tl", "tl-processed")):
    for f in ("dla", "dla_vs"):
        j = json.load(open("%s/ins_%s/%s.json" % (t, w, f)))
        assert j["weights"] == want, (w, f, j["weights"])
        assert abs(j["sum_of_values"] - j[j["metric"]]) < 1e-4 * max(1, abs(j[j["metric"]])), j
raw = json.load(open("%s/ins_raw/attention_grid.json" % t))
tl = json.load(open("%s/ins_tl/attention_grid.json" % t))
a, b = json.dumps(raw["attention"]), json.dumps(tl["attention"])
ra, rb = json.loads(a), json.loads(b)
flat = lambda x: [v for r in x for v in (flat(r) if isinstance(r, list) else [r])]
d = max(abs(x - y) for x, y in zip(flat(ra), flat(rb)))
assert d < 1e-5, d
lr = json.load(open("%s/ins_raw/dla_vs.json" % t))["logit_diff"]
lt = json.load(open("%s/ins_tl/dla_vs.json" % t))["logit_diff"]
assert abs(lr - lt) < 1e-4, (lr, lt)
PYEOF
grep -q 'note: weights processed as TransformerLens' "$TMP/inspect_tl.err" || fail "no processing note"

# 2. dla over a prompt set, a sharded folder, processed: its JSON says so
run 0 dla_tl dla --model "$FX/sharded" --vocab "$TMP/v19.txt" --data "$TMP/set.jsonl" --process tl --json
grep -q '"weights":	"tl-processed"' "$TMP/dla_tl.out" || fail "dla --json lacks weights tl-processed"
run 0 dla_raw dla --model "$FX/sharded" --vocab "$TMP/v19.txt" --data "$TMP/set.jsonl" --out "$TMP/dla_out"
grep -q '"weights":	"raw"' "$TMP/dla_out/dla.json" || fail "dla.json lacks weights raw"

# 2b. dla --process tl: the components, the norm's bias term and b_U sum to the raw run's logit
# difference (1e-5) on three folders (TL's processing moves ln_final's bias into b_U)
printf '%s\n' '{"prompt": "w1 w2 w3 w4", "answer": "w5", "wrong": "w6"}' \
    '{"prompt": "w7 w2 w9 w4", "answer": "w5", "wrong": "w8"}' '{"prompt": "w3 w1 w4 w1", "answer": "w2", "wrong": "w9"}' \
    >"$TMP/set3.jsonl"
for f in base:41 prefix:37 sharded:19; do
    words "${f#*:}" >"$TMP/vv.txt"
    for w in raw tl; do
        run 0 "dlasum_${f%:*}_$w" dla --model "$FX/${f%:*}" --vocab "$TMP/vv.txt" --data "$TMP/set3.jsonl" \
            --process "$w" --json
    done
    "$PY" - "$TMP/dlasum_${f%:*}_raw.out" "$TMP/dlasum_${f%:*}_tl.out" <<'PYEOF' || fail "dla --process tl on ${f%:*}"
import json, sys
raw, tl = (json.load(open(a)) for a in sys.argv[1:3])
ld = raw["target"]
for j in (raw, tl):
    s = sum(c["attribution"] for c in j["components"]) + j["constant"] + j.get("unembed_bias_term", 0.0)
    assert abs(s - ld) < 1e-5 * max(1, abs(ld)), (j["weights"], s, ld)
    assert abs(j["target"] - ld) < 1e-5 * max(1, abs(ld)), (j["weights"], j["target"], ld)
assert abs(tl["unembed_bias_term"]) > 1e-4, tl["unembed_bias_term"]  # the case the test is about
PYEOF
done

# 3. bad folders: one line, exit 1, nothing written
while IFS=$'\t' read -r case want; do
    run 1 "bad_$case" inspect --model "$FX/bad/$case" --vocab "$TMP/v13.txt" --sentence "w1 w2" \
        --out "$TMP/out_$case"
    [ "$(wc -l <"$TMP/bad_$case.err")" -eq 1 ] || fail "bad_$case: not one line: $(cat "$TMP/bad_$case.err")"
    grep -qF -- "$want" "$TMP/bad_$case.err" || fail "bad_$case: no '$want' in $(cat "$TMP/bad_$case.err")"
    [ ! -e "$TMP/out_$case" ] || fail "bad_$case: $TMP/out_$case was written"
done <"$FX/bad/cases.tsv"

# 3b. as transformers reads a folder: model.safetensors beside an index is what is read (said in a note);
# a safetensors header whose metadata holds invalid UTF-8 is refused (the format's reference reader does)
mkdir -p "$TMP/both" && cp "$FX/base/config.json" "$FX/base/model.safetensors" "$TMP/both/"
printf '{"metadata": {}, "weight_map": {"wte.weight": "missing-00001.safetensors"}}' \
    >"$TMP/both/model.safetensors.index.json"
run 0 both inspect --model "$TMP/both" --vocab "$TMP/v41.txt" --sentence "w1 w2" --out "$TMP/both_out" --format json
grep -q "read model.safetensors; model.safetensors.index.json beside it is not read" "$TMP/both.err" ||
    fail "both: no note naming the file read: $(cat "$TMP/both.err")"
mkdir -p "$TMP/badutf" && cp "$FX/base/config.json" "$TMP/badutf/"
"$PY" - "$FX/base/model.safetensors" "$TMP/badutf/model.safetensors" <<'PYEOF'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n])
h.pop("__metadata__", None)
body = json.dumps(h)[1:]  # the tensors, after "{"
hdr = b'{"__metadata__": {"format": "pt\xc3\x28"}, ' + body.encode()
hdr += b" " * (-len(hdr) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(hdr)) + hdr + raw[8 + n:])
PYEOF
run 1 badutf inspect --model "$TMP/badutf" --vocab "$TMP/v41.txt" --sentence "w1 w2" --out "$TMP/badutf_out"
one_line badutf "invalid UTF-8"

# 3c. a missing --model says headscope never downloads; a folder with only pytorch_model.bin says how to convert
run 1 nomodel inspect --model "$TMP/gpt2" --sentence "w1" --out "$TMP/nomodel_out"
one_line nomodel "No such file or directory; headscope never downloads: fetch the model folder first"
mkdir -p "$TMP/binonly" && cp "$FX/base/config.json" "$TMP/binonly/" && echo x >"$TMP/binonly/pytorch_model.bin"
run 1 binonly inspect --model "$TMP/binonly" --vocab "$TMP/v41.txt" --sentence "w1" --out "$TMP/binonly_out"
one_line binonly "only pytorch_model.bin, which headscope does not read (a pickle); convert it"

# 3d. config.json with NaN (Python's json writes it; JSON has none): said so, not "not a JSON object"
mkdir -p "$TMP/cfgnan" && cp "$FX/base/model.safetensors" "$TMP/cfgnan/"
sed 's/"layer_norm_epsilon": [^,}]*/"layer_norm_epsilon": NaN/' "$FX/base/config.json" >"$TMP/cfgnan/config.json"
grep -q '"layer_norm_epsilon": NaN' "$TMP/cfgnan/config.json" || fail "cfgnan: the fixture has no layer_norm_epsilon"
run 1 cfgnan inspect --model "$TMP/cfgnan" --vocab "$TMP/v41.txt" --sentence "w1" --out "$TMP/cfgnan_out"
one_line cfgnan "config.json: NaN at byte [0-9]* is not JSON"

# 4. --process takes tl or raw
run 2 process_bad inspect --model "$FX/base" --vocab "$TMP/v41.txt" --sentence "w1" --process fold
one_line process_bad "--process needs tl or raw, got 'fold'"
# 5. past the figure cap (HS_VIZ_MAX_TOKENS 128): every JSON holds all 150
# positions and their token_ids; the attention rows are causal distributions
"$PY" - "$HERE/py" "$TMP/fx" <<'PYEOF'
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import make_hf_gpt2 as mk
mk.make_variant(sys.argv[2], "long", dict(cfg=dict(d=16, h=2, layers=2, v=23, npos=160, act="gelu_new")),
                np.random.default_rng(5))
PYEOF
words 23 >"$TMP/v23.txt"
LONG=$("$PY" -c "print(' '.join('w%d' % (1 + (i * 7) % 22) for i in range(150)))")
run 0 inspect_long inspect --model "$FX/long" --vocab "$TMP/v23.txt" --sentence "$LONG" \
    --format png,json,html --out "$TMP/long"
grep -q 'over the figure caps' "$TMP/inspect_long.err" || fail "no note on the figure cap"
"$PY" - "$TMP/long" "$LONG" <<'PYEOF' || fail "inspect past 128 tokens"
import json, sys
import numpy as np
d, words = sys.argv[1], sys.argv[2].split()
ids = [int(w[1:]) for w in words]
for f in ("attention_grid", "L0H0", "L1H1", "L0_mean", "query_row", "dla", "predictions"):
    j = json.load(open("%s/%s.json" % (d, f)))
    assert j["tokens"] == words and j["token_ids"] == ids, f
    if "attention" in j:
        a = np.array(j["attention"])
        assert a.shape[1:] == (150, 150) and list(j["shape"][1:]) == [150, 150], (f, a.shape)
        assert np.allclose(a.sum(-1), 1, atol=1e-5) and not np.triu(a, 1).any(), f
q = np.array(json.load(open(d + "/query_row.json"))["values"])
assert q.shape == (4, 150), q.shape
assert np.array_equal(q[1], np.array(json.load(open(d + "/L0H1.json"))["attention"])[0, 149]), "query row"
html = open(d + "/index.html").read()
assert "w%d" % ids[-1] in html and len(html) > 4 * 150 * 150 * 4 / 3, len(html)
PYEOF
echo "hf gpt2 cli: ok"
