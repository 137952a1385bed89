"""Stand-in for transformer_lens: graph.py only tests isinstance against
these; the test builds graphs from dicts (Graph.from_json)."""


class HookedTransformer:
    pass


class HookedTransformerConfig:
    pass
