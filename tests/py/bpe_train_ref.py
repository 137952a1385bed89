#!/usr/bin/python3
"""tests/py/bpe_train_ref.py -- an independent byte-level BPE trainer, written
from the algorithm (Sennrich et al. 2016 on GPT-2's pre-tokens), to check
`headscope bpe` against (tests/test_bpe_train.sh).

  bpe_train_ref.py VOCAB_SIZE OUT.json FILE...

Each file is split by GPT-2's pattern with Python's `regex` module (the
module GPT-2's encoder.py uses); the distinct pieces are counted. Tokens are
byte strings: the 256 bytes first (id = byte value). Each round takes the most
frequent adjacent pair of ids over all pieces (every position counts, times
the piece's count), ties to the smallest (left id, right id); it is merged in
every piece left to right without overlap; the new token is the two byte
strings joined, a new id unless those bytes are already a token. Until the
vocabulary has VOCAB_SIZE tokens or no pair is left.

Counts are kept in a dict and updated per changed piece (subtract the piece's
old pairs, add its new ones); the best pair is a max over the dict each round
(no heap: independent of headscope's bookkeeping). Writes
{"merges": [[a, b], ...], "tokens": [hex bytes per id], "n_tokens": corpus
tokens}.
"""
import collections
import json
import sys

import regex

PAT = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


def main():
    vocab_size = int(sys.argv[1])
    out = sys.argv[2]
    counts = collections.Counter()
    for path in sys.argv[3:]:
        text = open(path, "rb").read().decode("utf-8")
        for piece in PAT.findall(text):
            counts[piece.encode("utf-8")] += 1
    words = [list(w) for w in counts]
    wcnt = list(counts.values())
    tokens = [bytes([b]) for b in range(256)]
    tok_id = {t: i for i, t in enumerate(tokens)}
    pairs = collections.Counter()
    holders = collections.defaultdict(set)
    for i, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pairs[(a, b)] += wcnt[i]
            holders[(a, b)].add(i)
    merges = []
    while len(tokens) < vocab_size:
        best = None
        for p, c in pairs.items():
            if c <= 0:
                continue
            if best is None or c > best[0] or (c == best[0] and p < best[1]):
                best = (c, p)
        if best is None:
            break
        a, b = best[1]
        nb = tokens[a] + tokens[b]
        if nb not in tok_id:
            tok_id[nb] = len(tokens)
            tokens.append(nb)
        m = tok_id[nb]
        merges.append([a, b])
        for i in sorted(holders.pop((a, b))):
            w = words[i]
            for x, y in zip(w, w[1:]):
                pairs[(x, y)] -= wcnt[i]
            new = []
            k = 0
            while k < len(w):
                if k + 1 < len(w) and w[k] == a and w[k + 1] == b:
                    new.append(m)
                    k += 2
                else:
                    new.append(w[k])
                    k += 1
            words[i] = new
            for x, y in zip(new, new[1:]):
                pairs[(x, y)] += wcnt[i]
                holders[(x, y)].add(i)
        for p in [p for p, c in pairs.items() if c == 0]:
            del pairs[p]
    n_tokens = sum(len(w) * c for w, c in zip(words, wcnt))
    json.dump({"merges": merges, "tokens": [t.hex() for t in tokens], "n_tokens": n_tokens},
              open(out, "w"))


if __name__ == "__main__":
    main()
