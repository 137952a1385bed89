"""Stdlib-only safetensors building blocks for headscope's tests.

Written from the format's description, independently of model/safetensors.c:
8-byte little-endian u64 header length N, N bytes of JSON (tensor name ->
{"dtype", "shape", "data_offsets": [begin, end]} relative to the data start,
optional "__metadata__" of string -> string), then the raw little-endian data.

Used by st_write_reference.py (the interop fixture) and make_corrupt.py (the
corrupt-case corpus). Nothing here imports numpy or torch.
"""
import json
import struct

DTYPE_SIZE = {"BOOL": 1, "U8": 1, "I8": 1, "F16": 2, "BF16": 2, "I16": 2,
              "F32": 4, "I32": 4, "F64": 8, "I64": 8}


def ref_value(name, i):
    """Known value of element i of tensor name: exact in float32 (k/64).
    tests/test_checkpoint.c computes the same formula."""
    h = sum(name.encode()) % 251
    return (((h + 7 * i) % 255) - 127) / 64.0


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def f32_bytes(values):
    return struct.pack("<%df" % len(values), *values)


class Tensor:
    def __init__(self, name, dtype, shape, data):
        self.name, self.dtype, self.shape, self.data = name, dtype, list(shape), data


def ref_tensor(name, shape):
    return Tensor(name, "F32", shape, f32_bytes([ref_value(name, i) for i in range(numel(shape))]))


def build(tensors, metadata=None, data_order=None, pad_to=8, pad_byte=b" ",
          header_hook=None, data_hook=None):
    """Returns the bytes of a safetensors file.

    tensors: header order. data_order: names in the order their bytes are laid
    out (default: sorted by name, as the reference safetensors writer does
    within one dtype). header_hook(dict) may edit the header dict before
    encoding; data_hook(bytes) may edit the data section."""
    order = data_order or sorted(t.name for t in tensors)
    by_name = {t.name: t for t in tensors}
    offsets, data, pos = {}, b"", 0
    for name in order:
        t = by_name[name]
        offsets[name] = [pos, pos + len(t.data)]
        data += t.data
        pos += len(t.data)
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    for t in tensors:
        header[t.name] = {"dtype": t.dtype, "shape": t.shape, "data_offsets": offsets[t.name]}
    if header_hook:
        header = header_hook(header)
    text = header if isinstance(header, bytes) else json.dumps(header, separators=(",", ":")).encode()
    if pad_to:
        text += pad_byte * ((-len(text)) % pad_to)
    if data_hook:
        data = data_hook(data)
    return struct.pack("<Q", len(text)) + text + data
