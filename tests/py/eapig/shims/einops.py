"""Stand-in for einops.einsum (two tensors and a pattern with named axes, as
graph.py calls it), on torch.einsum."""
import torch


def einsum(*args):
    *tensors, pattern = args
    lhs, rhs = pattern.split("->")
    letters = {}

    def axes(spec):
        return "".join(letters.setdefault(n, "abcdefghij"[len(letters)]) for n in spec.split())

    ins = ",".join(axes(s) for s in lhs.split(","))
    return torch.einsum(ins + "->" + axes(rhs), *tensors)
