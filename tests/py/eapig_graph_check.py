#!/usr/bin/env python3
"""A stand-in for EAP-IG's own graph reader (hannamw/eap-ig src/eap/graph.py:
Graph.from_model, Graph.from_json, Graph.to_json), written from that source
for where it cannot run (it needs torch and transformer_lens): the checks a
graph.json must pass to be read by Graph.from_json and to come back from
Graph.to_json byte for byte.

  * from_json: the keys "cfg", "nodes", "edges" (its assert); Graph.from_model
    (cfg) with n_layers, n_heads, parallel_attn_mlp; every node name but
    "logits" and every edge name indexes that graph (a KeyError otherwise);
    a node holds "in_graph" (and an optional "score", neurons not used here),
    an edge "score" and "in_graph".
  * from_model's names and insertion order: "input"; per layer the heads
    a{l}.h{h}, then m{l}; "logits" last. Edges (not parallel): per layer,
    every node of the residual stream so far into each head's <q>, <k>, <v>
    (node, then head, then letter); the heads join the stream; every node of
    the stream into m{l}; m{l} joins; at the end every node into logits.
  * to_json: json.dump (", ", ": ") of {"cfg": dict(cfg), "nodes": {name:
    {"in_graph": b} (+ "score" when node scores exist)}, "edges": {name:
    {"score": float32 score, "in_graph": b}}} in from_model's order; scores
    live in a float32 tensor, so a score comes back as its float32 value.

usage: eapig_graph_check.py GRAPH.json [--mlp 0|1]
--mlp 0: the model has no MLPs (headscope leaves out the m nodes EAP-IG
always makes; from_json reads such a file, to_json would add them back).
Exits 1 with a message on the first mismatch."""
import json
import struct
import sys


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def from_model(cfg, mlp=True):
    nodes, edges = ["input"], []
    stream = ["input"]
    for layer in range(cfg["n_layers"]):
        heads = ["a%d.h%d" % (layer, h) for h in range(cfg["n_heads"])]
        nodes += heads + (["m%d" % layer] if mlp else [])
        assert not cfg["parallel_attn_mlp"], "parallel_attn_mlp"
        for node in stream:
            for head in heads:
                for letter in "qkv":
                    edges.append("%s->%s<%s>" % (node, head, letter))
        stream += heads
        if mlp:
            for node in stream:
                edges.append("%s->m%d" % (node, layer))
            stream.append("m%d" % layer)
    nodes.append("logits")
    edges += ["%s->logits" % node for node in stream]
    return nodes, edges


def main():
    path = sys.argv[1]
    mlp = not (len(sys.argv) > 3 and sys.argv[2] == "--mlp" and sys.argv[3] == "0")
    text = open(path, encoding="utf-8").read()
    d = json.loads(text)
    assert all(k in d for k in ("cfg", "nodes", "edges")), "Bad input JSON format - Missing keys"
    nodes, edges = from_model(d["cfg"], mlp=True)
    known_nodes, known_edges = set(nodes), set(edges)
    for name, nd in d["nodes"].items():
        if name == "logits":
            continue
        assert name in known_nodes, "KeyError: node " + name
        assert isinstance(nd["in_graph"], bool), name
        assert "score" not in nd or isinstance(nd["score"], float), name
    for name, info in d["edges"].items():
        assert name in known_edges, "KeyError: edge " + name
        assert isinstance(info["score"], (int, float)) and isinstance(info["in_graph"], bool), name
    # what to_json writes after from_json, for a model whose graph is EAP-IG's
    mine_nodes, mine_edges = from_model(d["cfg"], mlp=mlp)
    assert list(d["nodes"]) == mine_nodes, "nodes out of from_model's order"
    assert list(d["edges"]) == mine_edges, "edges out of from_model's order"
    again = {"cfg": dict(d["cfg"]),
             "nodes": {n: {"in_graph": bool(v["in_graph"])} for n, v in d["nodes"].items()},
             "edges": {n: {"score": f32(v["score"]), "in_graph": bool(v["in_graph"])} for n, v in d["edges"].items()}}
    assert json.dumps(again) == text, "to_json would write other bytes"
    print("eap-ig stand-in: read %d nodes, %d edges (%d in the graph); to_json gives the same bytes"
          % (len(d["nodes"]), len(d["edges"]), sum(v["in_graph"] for v in d["edges"].values())))


if __name__ == "__main__":
    try:
        main()
    except (AssertionError, KeyError) as e:
        print("eap-ig stand-in: %s" % e, file=sys.stderr)
        sys.exit(1)
