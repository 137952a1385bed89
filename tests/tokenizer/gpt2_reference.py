#!/usr/bin/env python3
"""GPT-2's own encoding algorithm, as a third reference for headscope's BPE.

usage: gpt2_reference.py ENCODER.json VOCAB.bpe CORPUS.jsonl OUT.jsonl

Written from the semantics of openai/gpt-2 src/encoder.py (bytes_to_unicode,
get_pairs, Encoder.bpe: merge every occurrence of the lowest-ranked pair,
Encoder.encode: the pattern through the `regex` module, then BPE per piece),
with Debian's python3-regex: the same module GPT-2 uses, so \\s means what it
meant when GPT-2 was trained (Unicode White_Space, U+0085 in, U+FEFF out),
which the JavaScript encoders of the test cannot say. Writes one JSON list of
ids a line for the corpus's strings.
"""
import json
import sys

import regex

PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def byte_map():
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = keep[:], 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(keep, chars)}


def bpe(word, ranks):
    parts = list(word)
    while len(parts) > 1:
        pairs = {(parts[i], parts[i + 1]) for i in range(len(parts) - 1)}
        best = min(pairs, key=lambda p: ranks.get(p, float("inf")))
        if best not in ranks:
            break
        out, i = [], 0
        while i < len(parts):
            if i < len(parts) - 1 and (parts[i], parts[i + 1]) == best:
                out.append(parts[i] + parts[i + 1])
                i += 2
            else:
                out.append(parts[i])
                i += 1
        parts = out
    return parts


def main():
    encoder = json.load(open(sys.argv[1], encoding="utf-8"))
    merges = open(sys.argv[2], encoding="utf-8").read().split("\n")[1:-1]
    ranks = {tuple(m.split(" ")): i for i, m in enumerate(merges)}
    bmap = byte_map()
    pat = regex.compile(PATTERN)
    cache = {}
    with open(sys.argv[4], "w") as out:
        for line in open(sys.argv[3], encoding="utf-8"):
            text = json.loads(line)
            ids = []
            for piece in pat.findall(text):
                sym = "".join(bmap[b] for b in piece.encode("utf-8"))
                if sym not in cache:
                    cache[sym] = [encoder[t] for t in bpe(sym, ranks)]
                ids.extend(cache[sym])
            out.write(json.dumps(ids) + "\n")


main()
