#!/usr/bin/python3
"""tests/py/mib_interop_check.py -- headscope's graph.json read by EAP-IG's own
Graph.from_json and selected by its Graph.apply_topn (tests/py/eapig: graph.py
of hannamw/EAP-IG at 795f560, MIT, with stand-ins for einops and
transformer_lens) gives the circuit headscope chose (the file's in_graph
edges): MIB's evaluation default (signed scores, absolute=False, prune=True)
for a file headscope wrote with `--select signed`, and MIB's --absolute for
one written with the default `--select topn`.

usage: mib_interop_check.py GRAPH.json N signed|absolute [GRAPH.json N signed|absolute ...]
Prints each file's edge counts; exits 1 on the first mismatch."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "eapig", "shims"), os.path.join(HERE, "eapig")]
import json  # noqa: E402

from eap.graph import Graph  # noqa: E402


def circuit(g):
    return {name for name, e in g.edges.items() if e.in_graph}


def main():
    args = sys.argv[1:]
    if len(args) < 3 or len(args) % 3:
        sys.exit(__doc__)
    for path, n, kind in zip(args[::3], args[1::3], args[2::3]):
        n = int(n)
        assert kind in ("signed", "absolute"), kind
        edges = json.load(open(path))["edges"]
        want = {k for k, v in edges.items() if v["in_graph"]}
        g = Graph.from_json(path)
        assert circuit(g) == want, (path, "from_json changed in_graph")
        g.apply_topn(n, absolute=kind == "absolute", prune=True)
        got = circuit(g)
        if got != want:
            sys.exit("FAIL %s: apply_topn(%d, absolute=%s) selects %d edges, headscope's %d; only "
                     "EAP-IG's: %s; only headscope's: %s" % (path, n, kind == "absolute", len(got), len(want),
                                                             sorted(got - want)[:5], sorted(want - got)[:5]))
        raising = sum(1 for v in edges.values() if v["in_graph"] and v["score"] < 0)
        print("%s: top %d (%s), %d edges after pruning, %d of them raising the metric: the same circuit" %
              (path, n, kind, len(want), raising))

if __name__ == "__main__":
    main()
