#!/usr/bin/env python3
"""Writes the held-out matched crosser/crossed pairs of a Winograd dataset
dump (`headscope train --dataset FILE`) as a headscope prompt set (JSONL), in
the order `headscope circuit` uses: first every crosser sentence (held-out
order) patched into its crossed partner (same nouns, the crossed adjective of
the same index), then every crossed partner into its crosser sentence. Each
prompt is positions 0..14 ("the x did not cross the y because it was too adj
, so the"), the answer the clean sentence's referent, wrong the corrupted
one's. usage: winograd_pairs.py DATASET.txt OUT.jsonl"""
import json
import sys

CROSSER = ["tired", "scared", "slow", "weak"]
CROSSED = ["wet", "wide", "busy", "steep"]


def main():
    held = []
    for line in open(sys.argv[1], encoding="utf-8"):
        if line.startswith("#") or not line.strip():
            continue
        split, role, ref, sentence = line.rstrip("\n").split("\t")
        if split == "heldout":
            held.append((role, ref, sentence.split(" ")))
    crosser = [h for h in held if h[0] == "crosser"]
    pairs = []
    for role, ref, w in crosser:
        adj = CROSSED[CROSSER.index(w[11])]
        partner = [h for h in held if h[2][1] == w[1] and h[2][6] == w[6] and h[2][11] == adj]
        assert len(partner) == 1, w
        pairs.append(((ref, w), (partner[0][1], partner[0][2])))
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        for direction in (0, 1):
            for a, b in pairs:
                clean, corr = (a, b) if direction == 0 else (b, a)
                f.write(json.dumps({"prompt": " ".join(clean[1][:15]), "corrupted": " ".join(corr[1][:15]),
                                    "answer": clean[0], "wrong": corr[0]}) + "\n")


if __name__ == "__main__":
    main()
