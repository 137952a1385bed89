// tests/tokenizer/compare_hf.js -- headscope's tokens for a tokenizer.json
// against Hugging Face tokenizers itself (its Rust library through the Node
// binding @anush008/tokenizers), string by string
// (tests/test_tokenizer_json_reference.sh runs it).
//
// usage: node compare_hf.js TOKENIZER.json CORPUS.jsonl NOBOS.jsonl DECODED.jsonl BOS.jsonl BOS_ID
//   NOBOS     `headscope tokenize --no-bos --jsonl CORPUS`: {"ids", "tokens"} a line
//   DECODED   `headscope tokenize --decode --jsonl` of NOBOS's ids: one JSON string a line
//   BOS       `headscope tokenize --jsonl CORPUS` (the BOS on): {"ids", "tokens"} a line
//   BOS_ID    the BOS headscope must put first (TransformerLens' prepend_bos)
// Asserted, naming the first string that fails:
//   - headscope's ids == tokenizers' encode(s, addSpecialTokens: false), every string;
//   - headscope's decode of those ids == tokenizers' decode(ids, skipSpecialTokens: false);
//   - decode(encode(s)) == s wherever tokenizers' own round trip gives s back
//     (implied by the two above; counted and printed);
//   - with the BOS on: BOS_ID first, then the same ids, then the ids the
//     file's TemplateProcessing puts after $A (its special_tokens' ids; none
//     for most files); and where the post-processor puts a token first
//     (encode with addSpecialTokens: true), it is BOS_ID, and tokenizers'
//     encoding ends with those same ids after the text's.
'use strict';
const fs = require('fs');
const { Tokenizer } = require('@anush008/tokenizers');

const lines = (f) => fs.readFileSync(f, 'utf8').split('\n').filter((l, i, a) => i < a.length - 1 || l !== '');
const [tokF, corpusF, nobosF, decodedF, bosF, bosIdS] = process.argv.slice(2);
const bosId = Number(bosIdS);
const corpus = lines(corpusF).map((l) => JSON.parse(l));
const hs = lines(nobosF).map((l) => JSON.parse(l));
const decoded = lines(decodedF).map((l) => JSON.parse(l));
const bos = lines(bosF).map((l) => JSON.parse(l));
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

function fail(i, what, extra) {
  console.error(`FAIL: ${tokF}: corpus line ${i + 1} ${JSON.stringify(corpus[i])}: ${what}`);
  for (const [k, v] of Object.entries(extra || {})) console.error(`  ${k}: ${JSON.stringify(v)}`);
  process.exit(1);
}

// The ids TemplateProcessing's "single" puts after the sequence $A (read from
// the file, in a Sequence of processors too).
function suffixIds(json) {
  const procs = (p) => (!p ? [] : p.type === 'Sequence' ? p.processors.flatMap(procs) : [p]);
  const out = [];
  for (const p of procs(json.post_processor)) {
    if (p.type !== 'TemplateProcessing') continue;
    let after = false;
    for (const e of p.single) {
      if (!e.SpecialToken) after = true;
      else if (after) out.push(...p.special_tokens[e.SpecialToken.id].ids);
    }
  }
  return out;
}

(async () => {
  const tok = Tokenizer.fromFile(tokF);
  const suffix = suffixIds(JSON.parse(fs.readFileSync(tokF, 'utf8')));
  if (hs.length !== corpus.length || decoded.length !== corpus.length || bos.length !== corpus.length) {
    console.error(`FAIL: ${corpus.length} strings, ${hs.length} encoded, ${decoded.length} decoded, ${bos.length} with BOS`);
    process.exit(1);
  }
  let lossless = 0;
  for (let i = 0; i < corpus.length; i++) {
    const e = await tok.encode(corpus[i], null, { addSpecialTokens: false });
    const ids = Array.from(e.getIds());
    if (!same(ids, hs[i].ids)) fail(i, 'ids differ', { headscope: hs[i].ids, tokenizers: ids, tokens: e.getTokens() });
    const d = await tok.decode(ids, false);
    if (d !== decoded[i]) fail(i, 'decode differs', { headscope: decoded[i], tokenizers: d });
    if (d === corpus[i]) lossless++;
    if (bos[i].ids[0] !== bosId || !same(bos[i].ids.slice(1), ids.concat(suffix)))
      fail(i, `with the BOS: not ${bosId}, the same ids, then ${JSON.stringify(suffix)}`, { headscope: bos[i].ids });
    const w = Array.from((await tok.encode(corpus[i], null, { addSpecialTokens: true })).getIds());
    if (w.length > ids.length + suffix.length && w[0] !== ids[0] && w[0] !== bosId)
      fail(i, `the post-processor puts ${w[0]} first, headscope's BOS is ${bosId}`);
    if (!same(w.slice(w.length - ids.length - suffix.length), ids.concat(suffix)))
      fail(i, `tokenizers' encoding with special tokens does not end with the ids and ${JSON.stringify(suffix)}`,
           { tokenizers: w });
  }
  console.log(`${tokF}: ${corpus.length} strings: headscope's ids and decoding equal tokenizers'; ` +
              `${lossless} decode back to the string exactly` +
              (suffix.length ? `; ${JSON.stringify(suffix)} appended after the text, as tokenizers does` : ''));
})();
