#!/usr/bin/python3
"""tests/py/mib_interop_check.py -- headscope's graph.json read by EAP-IG's own
Graph.from_json and selected by its Graph.apply_topn (tests/py/eapig: graph.py
of hannamw/EAP-IG at 795f560, MIT, with stand-ins for einops and
transformer_lens) the way MIB's evaluation does by default (signed scores,
prune=True) gives the circuit headscope's own top-n gave (the file's in_graph
edges) when headscope's top n by |score| are edges whose ablation lowers the
metric (all of them positive in MIB's sign, as MIB's own attribution would
write them; asserted for the files marked "signed", checked where it holds
for those marked "auto"), and absolute selection (MIB's --absolute) gives it
always.

usage: mib_interop_check.py GRAPH.json N signed|auto [GRAPH.json N signed|auto ...]
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
        edges = json.load(open(path))["edges"]
        want = {k for k, v in edges.items() if v["in_graph"]}
        # headscope's top n by |score| all lower the metric: positive in MIB's sign
        top = sorted(edges.values(), key=lambda v: -abs(v["score"]))[:n]
        lowering = all(v["score"] > 0 for v in top)
        assert lowering or kind != "signed", (path, n, "a top edge raises the metric, or the sign is not MIB's")
        for absolute in ((False, True) if lowering else (True,)):
            g = Graph.from_json(path)
            assert circuit(g) == want, (path, "from_json changed in_graph")
            g.apply_topn(n, absolute=absolute, prune=True)
            got = circuit(g)
            if got != want:
                sys.exit("FAIL %s: apply_topn(%d, absolute=%s) selects %d edges, headscope's top %d %d; only "
                         "EAP-IG's: %s; only headscope's: %s" % (path, n, absolute, len(got), n, len(want),
                                                                 sorted(got - want)[:5], sorted(want - got)[:5]))
        print("%s: top %d, %d edges after pruning, the same with %s selection" %
              (path, n, len(want), "signed and absolute" if lowering else
               "absolute (a top edge raises the metric: MIB's signed default takes another)"))


if __name__ == "__main__":
    main()
