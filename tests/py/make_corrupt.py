#!/usr/bin/python3
"""Builds the corrupt-checkpoint corpus tests/checkpoint/corpus/*.safetensors
and the table tests/checkpoint/corrupt_cases.tsv (stdlib only).

Each case starts from the TransformerLens-shaped reference checkpoint of
st_write_reference.py and breaks one thing. The table gives, per case: the
file, the status hs_checkpoint_load must return, the exact substring its
message must contain, and what was broken. tests/test_checkpoint.c loads
every row; the fuzz target uses the folder as its seed corpus.

Usage: make_corrupt.py [OUTDIR]   (default: tests/checkpoint)
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stlib  # noqa: E402
import st_write_reference as ref  # noqa: E402

CASES = []


def case(name, status, expect, what):
    def deco(fn):
        CASES.append((name, status, expect, what, fn))
        return fn
    return deco


def base(**kw):
    return stlib.build(ref.tensors(), ref.metadata(), **kw)


def with_config(**changes):
    cfg = dict(ref.CONFIG)
    for k, v in changes.items():
        if v is DROP:
            cfg.pop(k, None)
        else:
            cfg[k] = v
    return cfg


DROP = object()


def meta_with(cfg=None, **changes):
    m = ref.metadata(cfg or ref.CONFIG)
    for k, v in changes.items():
        if v is DROP:
            m.pop(k, None)
        else:
            m[k] = v
    return m


def replace_tensor(ts, name, new):
    return [new if t.name == name else t for t in ts]


def set_header_len(raw, n):
    return struct.pack("<Q", n) + raw[8:]


def edit_entry(name, **fields):
    def hook(h):
        for k, v in fields.items():
            if v is DROP:
                h[name].pop(k)
            else:
                h[name][k] = v
        return h
    return hook


def raw_header(text):
    """A file whose header is exactly text (padded), data from the reference."""
    good = base()
    (n,) = struct.unpack("<Q", good[:8])
    t = text + b" " * ((-len(text)) % 8)
    return struct.pack("<Q", len(t)) + t + good[8 + n:]


# ---- file-level -------------------------------------------------------------
@case("empty_file", "HS_ERR_FORMAT", "file is truncated: 0 bytes", "zero-byte file")
def _(): return b""


@case("truncated_in_length", "HS_ERR_FORMAT", "shorter than the 8-byte safetensors header length",
      "5 bytes: cut inside the length field")
def _(): return base()[:5]


@case("truncated_in_header", "HS_ERR_FORMAT", "is beyond the end of the file",
      "cut inside the JSON header")
def _(): return base()[:200]


@case("truncated_in_data", "HS_ERR_FORMAT", "is past the end of the data",
      "cut 100 bytes before the end (inside the data)")
def _(): return base()[:-100]


@case("header_len_beyond_file", "HS_ERR_FORMAT", "is beyond the end of the file",
      "length field 1000 bytes larger than the file")
def _():
    raw = base()
    return set_header_len(raw, len(raw) + 1000)


@case("header_len_absurd", "HS_ERR_FORMAT", "is absurd", "length field 2^40 (> 100 MB cap)")
def _(): return set_header_len(base(), 1 << 40)


@case("header_len_max", "HS_ERR_FORMAT", "is absurd", "length field 2^64-1")
def _(): return set_header_len(base(), (1 << 64) - 1)


@case("invalid_json", "HS_ERR_FORMAT", "header is not valid JSON", "header is '{\"a\": tru'")
def _(): return raw_header(b'{"a": tru')


@case("json_not_object", "HS_ERR_FORMAT", "header JSON is not an object", "header is a JSON list")
def _(): return raw_header(b"[1, 2, 3]")


@case("header_junk_after_json", "HS_ERR_FORMAT", "header has bytes other than the JSON object",
      "NUL bytes instead of spaces as header padding")
def _(): return base(pad_byte=b"\0", pad_to=16)


@case("metadata_not_object", "HS_ERR_FORMAT", "\"__metadata__\" is not an object",
      "__metadata__ is a string")
def _(): return base(header_hook=lambda h: dict(h, __metadata__="x"))


@case("metadata_value_not_string", "HS_ERR_FORMAT", "metadata value for key 'config' is not a string",
      "config given as a JSON object instead of a string")
def _():
    def hook(h):
        h["__metadata__"]["config"] = ref.CONFIG
        return h
    return base(header_hook=hook)


# ---- entries ----------------------------------------------------------------
@case("entry_not_object", "HS_ERR_FORMAT", "header entry for tensor 'ln_final.b' is not an object",
      "entry is a number")
def _():
    def hook(h):
        h["ln_final.b"] = 5
        return h
    return base(header_hook=hook)


@case("missing_dtype", "HS_ERR_FORMAT", "tensor 'ln_final.b' has no \"dtype\"", "no dtype key")
def _(): return base(header_hook=edit_entry("ln_final.b", dtype=DROP))


@case("missing_shape", "HS_ERR_FORMAT", "tensor 'ln_final.b' has no \"shape\"", "no shape key")
def _(): return base(header_hook=edit_entry("ln_final.b", shape=DROP))


@case("missing_offsets", "HS_ERR_FORMAT", "tensor 'ln_final.b' has no \"data_offsets\"",
      "no data_offsets key")
def _(): return base(header_hook=edit_entry("ln_final.b", data_offsets=DROP))


@case("wrong_dtype_f64", "HS_ERR_FORMAT",
      "tensor 'embed.W_E' has dtype F64; only F32, F16 and BF16 are supported",
      "W_E stored as F64 (right byte length for F64)")
def _():
    ts = ref.tensors()
    ts = replace_tensor(ts, "embed.W_E", stlib.Tensor("embed.W_E", "F64", [5, 8], b"\0" * 320))
    return stlib.build(ts, ref.metadata())


@case("unknown_dtype", "HS_ERR_FORMAT", "tensor 'ln_final.b' has unknown dtype 'Q4'", "dtype Q4")
def _(): return base(header_hook=edit_entry("ln_final.b", dtype="Q4"))


@case("shape_negative", "HS_ERR_FORMAT", "tensor 'ln_final.b': shape[0] is negative", "shape [-8]")
def _(): return base(header_hook=edit_entry("ln_final.b", shape=[-8]))


@case("shape_not_integer", "HS_ERR_FORMAT", "tensor 'ln_final.b': shape[0] is not a non-negative integer",
      "shape [8.5]")
def _(): return base(header_hook=edit_entry("ln_final.b", shape=[8.5]))


@case("shape_too_many_dims", "HS_ERR_FORMAT", "tensor 'ln_final.b' has 5 dimensions; at most 4",
      "shape [1,1,1,1,8]")
def _(): return base(header_hook=edit_entry("ln_final.b", shape=[1, 1, 1, 1, 8]))


@case("shape_overflow", "HS_ERR_FORMAT", "tensor 'ln_final.b': shape overflows",
      "shape [2^52, 2^52, 2^52]: element count overflows 64 bits")
def _(): return base(header_hook=edit_entry("ln_final.b", shape=[1 << 52, 1 << 52, 1 << 52]))


@case("offsets_not_list", "HS_ERR_FORMAT", "\"data_offsets\" is not a list [begin, end]",
      "data_offsets has three numbers")
def _(): return base(header_hook=edit_entry("ln_final.b", data_offsets=[0, 32, 64]))


@case("offsets_begin_after_end", "HS_ERR_FORMAT", "data_offsets begin 64 is after end 32",
      "data_offsets [64, 32]")
def _(): return base(header_hook=edit_entry("ln_final.b", data_offsets=[64, 32]))


@case("data_length_mismatch", "HS_ERR_FORMAT", "data length mismatch: data_offsets span 32 bytes but shape [9]",
      "ln_final.b shape [9] over 32 bytes")
def _(): return base(header_hook=edit_entry("ln_final.b", shape=[9]))


@case("offsets_past_end", "HS_ERR_FORMAT", "is past the end of the data",
      "last tensor's offsets moved 64 bytes past the data")
def _():
    def hook(h):
        last = max((k for k in h if k != "__metadata__"), key=lambda k: h[k]["data_offsets"][1])
        b, e = h[last]["data_offsets"]
        h[last]["data_offsets"] = [b + 64, e + 64]
        return h
    return base(header_hook=hook)


@case("offsets_overlap", "HS_ERR_FORMAT", "have overlapping data_offsets",
      "blocks.1.ln2.b points at blocks.0.ln1.b's bytes (same size)")
def _():
    def hook(h):
        h["blocks.1.ln2.b"]["data_offsets"] = list(h["blocks.0.ln1.b"]["data_offsets"])
        return h
    return base(header_hook=hook)


@case("offsets_hole", "HS_ERR_FORMAT", "hole of 4 bytes in the data between tensor",
      "4 bytes inserted between two tensors, later offsets shifted")
def _():
    order = sorted(t.name for t in ref.tensors())
    ts = {t.name: t for t in ref.tensors()}
    cut = sum(len(ts[n].data) for n in order[:10])

    def hook(h):
        for k, e in h.items():
            if k != "__metadata__" and e["data_offsets"][0] >= cut:
                e["data_offsets"] = [e["data_offsets"][0] + 4, e["data_offsets"][1] + 4]
        return h
    return base(header_hook=hook, data_hook=lambda d: d[:cut] + b"\0\0\0\0" + d[cut:])


@case("offsets_hole_at_start", "HS_ERR_FORMAT", "hole of 8 bytes in the data before the first tensor",
      "8 bytes before the first tensor, every offset shifted")
def _():
    def hook(h):
        for k, e in h.items():
            if k != "__metadata__":
                e["data_offsets"] = [e["data_offsets"][0] + 8, e["data_offsets"][1] + 8]
        return h
    return base(header_hook=hook, data_hook=lambda d: b"\0" * 8 + d)


@case("trailing_garbage", "HS_ERR_FORMAT", "16 bytes of trailing garbage after the last tensor",
      "16 bytes appended")
def _(): return base() + b"GARBAGEGARBAGE!!"


@case("duplicate_tensor_name", "HS_ERR_FORMAT", "tensor 'ln_final.b' appears twice in the header",
      "the JSON header names ln_final.b twice")
def _():
    good = base()
    (n,) = struct.unpack("<Q", good[:8])
    text = good[8:8 + n].rstrip(b" ")
    h = json.loads(text)
    dup = json.dumps({"ln_final.b": h["ln_final.b"]}, separators=(",", ":"))[1:-1].encode()
    return raw_header(text[:-1] + b"," + dup + b"}")


@case("nan_weight", "HS_ERR_NUMERIC", "tensor 'embed.W_E' has a non-finite value (NaN) at index 3",
      "W_E[3] = NaN")
def _():
    ts = ref.tensors()
    vals = [stlib.ref_value("embed.W_E", i) for i in range(40)]
    vals[3] = float("nan")
    return stlib.build(replace_tensor(ts, "embed.W_E", stlib.Tensor("embed.W_E", "F32", [5, 8],
                                                                   stlib.f32_bytes(vals))), ref.metadata())


@case("inf_weight", "HS_ERR_NUMERIC", "tensor 'blocks.1.mlp.W_out' has a non-finite value (+Inf) at index 17",
      "W_out[17] = +Inf")
def _():
    ts = ref.tensors()
    n = "blocks.1.mlp.W_out"
    vals = [stlib.ref_value(n, i) for i in range(128)]
    vals[17] = float("inf")
    return stlib.build(replace_tensor(ts, n, stlib.Tensor(n, "F32", [16, 8], stlib.f32_bytes(vals))),
                       ref.metadata())


# ---- one byte either side of every bound the reader checks --------------------
# (model/safetensors.c: hs_st_header_len, parse_entry, read_entries,
# check_layout). Each bound has the file one byte over it, refused with its
# exact message, and, where the file exactly at it is not the valid reference
# itself, that file too: accepted by this check, refused by the next one.
MAX_HEADER = 100 * 1024 * 1024  # HS_ST_MAX_HEADER


def sizes(raw):
    """(header length, data section size) of raw."""
    (n,) = struct.unpack("<Q", raw[:8])
    return n, len(raw) - 8 - n


def ref_offsets(name):
    h = json.loads(base()[8:8 + sizes(base())[0]])
    return h[name]["data_offsets"]


def last_tensor(h):
    return max((k for k in h if k != "__metadata__"), key=lambda k: h[k]["data_offsets"][1])


def sorted_by_offset(h):
    return sorted((k for k in h if k != "__metadata__"), key=lambda k: h[k]["data_offsets"][0])


REF_LEN, REF_DATA = sizes(base())
LAST = last_tensor(json.loads(base()[8:8 + REF_LEN]))
LN_B, LN_E = ref_offsets("ln_final.b")


@case("bound_file_7_bytes", "HS_ERR_FORMAT",
      "file is truncated: 7 bytes, shorter than the 8-byte safetensors header length", "the first 7 bytes")
def _(): return base()[:7]


@case("bound_file_8_bytes", "HS_ERR_FORMAT", "header is not valid JSON (error near byte 0 of 0)",
      "8 bytes: a length field of 0 (accepted), an empty header")
def _(): return struct.pack("<Q", 0)


def _first_non_space_after_json():
    """Where the reader's JSON parse stops when the data is read as header:
    the first byte above 32 (cJSON skips bytes <= 32) after the object."""
    raw = base()
    i = len(raw[8:8 + REF_LEN].rstrip(b" "))
    while raw[8 + i] <= 32:
        i += 1
    return i


@case("bound_header_len_at_end", "HS_ERR_FORMAT", "header is not valid JSON (error near byte %d of %d)"
      % (_first_non_space_after_json(), REF_LEN + REF_DATA),
      "length field = the bytes after it (accepted): the data read as header")
def _():
    raw = base()
    return set_header_len(raw, len(raw) - 8)


@case("bound_header_len_one_past", "HS_ERR_FORMAT",
      "header length %d is beyond the end of the file (%d bytes after the length field); truncated file?"
      % (REF_LEN + REF_DATA + 1, REF_LEN + REF_DATA),
      "length field one more than the bytes after it")
def _():
    raw = base()
    return set_header_len(raw, len(raw) - 7)


@case("bound_header_len_cap", "HS_ERR_FORMAT",
      "header length %d is beyond the end of the file (%d bytes after the length field); truncated file?"
      % (MAX_HEADER, REF_LEN + REF_DATA),
      "length field = the 100 MB cap (accepted), past the end")
def _(): return set_header_len(base(), MAX_HEADER)


@case("bound_header_len_cap_plus_1", "HS_ERR_FORMAT",
      "header length %d is absurd (cap %d bytes); not a safetensors file?" % (MAX_HEADER + 1, MAX_HEADER),
      "length field one over the 100 MB cap")
def _(): return set_header_len(base(), MAX_HEADER + 1)


@case("bound_truncated_one_byte", "HS_ERR_FORMAT",
      "tensor '%s': data_offsets end %d is past the end of the data (%d bytes); truncated file?"
      % (LAST, REF_DATA, REF_DATA - 1), "the last byte cut")
def _(): return base()[:-1]


@case("bound_offsets_one_past_end", "HS_ERR_FORMAT",
      "tensor '%s': data_offsets end %d is past the end of the data (%d bytes); truncated file?"
      % (LAST, REF_DATA + 1, REF_DATA), "the last tensor's offsets moved by one byte")
def _():
    def hook(h):
        b, e = h[LAST]["data_offsets"]
        h[LAST]["data_offsets"] = [b + 1, e + 1]
        return h
    return base(header_hook=hook)


@case("bound_offsets_begin_one_after_end", "HS_ERR_FORMAT",
      "tensor 'ln_final.b': data_offsets begin %d is after end %d" % (LN_E + 1, LN_E),
      "ln_final.b data_offsets [end + 1, end]")
def _(): return base(header_hook=edit_entry("ln_final.b", data_offsets=[LN_E + 1, LN_E]))


@case("bound_span_one_byte_long", "HS_ERR_FORMAT",
      "tensor 'ln_final.b': data length mismatch: data_offsets span 33 bytes but shape [8] of F32 needs 32",
      "ln_final.b's end one byte later")
def _(): return base(header_hook=edit_entry("ln_final.b", data_offsets=[LN_B, LN_E + 1]))


@case("bound_span_one_byte_short", "HS_ERR_FORMAT",
      "tensor 'ln_final.b': data length mismatch: data_offsets span 31 bytes but shape [8] of F32 needs 32",
      "ln_final.b's end one byte earlier")
def _(): return base(header_hook=edit_entry("ln_final.b", data_offsets=[LN_B, LN_E - 1]))


@case("bound_shape_4_dims", "HS_ERR_FORMAT", "tensor ln_final.b has shape [1,1,1,8], config expects [8]",
      "ln_final.b with 4 dimensions (accepted by the reader)")
def _(): return base(header_hook=edit_entry("ln_final.b", shape=[1, 1, 1, 8]))


@case("bound_shape_2_53", "HS_ERR_FORMAT",
      "tensor 'ln_final.b': data length mismatch: data_offsets span 32 bytes but shape [%d] of F32 needs %d"
      % (1 << 53, 4 << 53), "shape [2^53], the largest exact JSON integer (accepted)")
def _(): return base(header_hook=edit_entry("ln_final.b", shape=[1 << 53]))


@case("bound_shape_2_53_plus_2", "HS_ERR_FORMAT",
      "tensor 'ln_final.b': shape[0] is not a non-negative integer", "shape [2^53 + 2]")
def _(): return base(header_hook=edit_entry("ln_final.b", shape=[(1 << 53) + 2]))


@case("bound_offsets_2_53_plus_2", "HS_ERR_FORMAT",
      "tensor 'ln_final.b': data_offsets are not non-negative integers", "data_offsets end 2^53 + 2")
def _(): return base(header_hook=edit_entry("ln_final.b", data_offsets=[LN_B, (1 << 53) + 2]))


@case("bound_numel_2_64_minus_2_32", "HS_ERR_FORMAT",
      "tensor 'ln_final.b': shape overflows (byte size too large)",
      "shape [2^32, 2^32 - 1]: the element count fits 64 bits, its bytes do not")
def _(): return base(header_hook=edit_entry("ln_final.b", shape=[1 << 32, (1 << 32) - 1]))


@case("bound_numel_2_64", "HS_ERR_FORMAT", "tensor 'ln_final.b': shape overflows (element count too large)",
      "shape [2^32, 2^32]: the element count is 2^64")
def _(): return base(header_hook=edit_entry("ln_final.b", shape=[1 << 32, 1 << 32]))


@case("bound_bytes_2_64_minus_2_33", "HS_ERR_FORMAT",
      "tensor 'ln_final.b': data length mismatch: data_offsets span 32 bytes but shape [2147483648,2147483647] "
      "of F32 needs %d" % (4 * (1 << 31) * ((1 << 31) - 1)),
      "shape [2^31, 2^31 - 1]: the byte size fits 64 bits (accepted)")
def _(): return base(header_hook=edit_entry("ln_final.b", shape=[1 << 31, (1 << 31) - 1]))


@case("bound_bytes_2_64", "HS_ERR_FORMAT", "tensor 'ln_final.b': shape overflows (byte size too large)",
      "shape [2^31, 2^31]: the byte size is 2^64")
def _(): return base(header_hook=edit_entry("ln_final.b", shape=[1 << 31, 1 << 31]))


def shift_from(k, by):
    """The data with by zero bytes inserted before the k-th tensor in data
    order (offsets of it and later ones shifted), or, by < 0, the k-th
    tensor's offsets moved back over its predecessor's last bytes."""
    h0 = json.loads(base()[8:8 + REF_LEN])
    order = sorted_by_offset(h0)
    cut = h0[order[k]]["data_offsets"][0]

    def hook(h):
        for name in order[k:] if by > 0 else order[k:k + 1]:
            b, e = h[name]["data_offsets"]
            h[name]["data_offsets"] = [b + by, e + by]
        return h
    if by > 0:
        return base(header_hook=hook, data_hook=lambda d: d[:cut] + b"\0" * by + d[cut:]), order, cut
    return base(header_hook=hook), order, cut


_, ORDER, CUT10 = shift_from(10, 1)


@case("bound_hole_one_byte", "HS_ERR_FORMAT",
      "hole of 1 bytes in the data between tensor '%s' (ends at %d) and tensor '%s' (begins at %d)"
      % (ORDER[9], CUT10, ORDER[10], CUT10 + 1), "one byte inserted between two tensors, later offsets shifted")
def _(): return shift_from(10, 1)[0]


@case("bound_hole_one_byte_at_start", "HS_ERR_FORMAT",
      "hole of 1 bytes in the data before the first tensor '%s'" % ORDER[0],
      "one byte before the first tensor, every offset shifted")
def _(): return shift_from(0, 1)[0]


def _overlap_msg():
    h = json.loads(base()[8:8 + REF_LEN])
    a, b = ORDER[9], ORDER[10]
    (a0, a1), (b0, b1) = h[a]["data_offsets"], h[b]["data_offsets"]
    return "tensors '%s' [%d,%d) and '%s' [%d,%d) have overlapping data_offsets" % (a, a0, a1, b, b0 - 1, b1 - 1)


@case("bound_overlap_one_byte", "HS_ERR_FORMAT", _overlap_msg(),
      "a tensor's offsets moved back one byte, over its predecessor's last")
def _(): return shift_from(10, -1)[0]


@case("bound_trailing_one_byte", "HS_ERR_FORMAT",
      "1 bytes of trailing garbage after the last tensor (tensors end at %d, the data section has %d bytes)"
      % (REF_DATA, REF_DATA + 1), "one byte appended")
def _(): return base() + b"\0"


# ---- checkpoint level: config vs tensors --------------------------------------
@case("missing_config", "HS_ERR_FORMAT", "no 'config' in __metadata__", "metadata without config")
def _(): return stlib.build(ref.tensors(), meta_with(config=DROP))


@case("config_not_json", "HS_ERR_CONFIG", "metadata 'config' is not a JSON object", "config is '{n_layers: 2'")
def _(): return stlib.build(ref.tensors(), meta_with(config="{n_layers: 2"))


@case("config_field_type", "HS_ERR_CONFIG", "config field 'n_layers' must be an integer",
      "n_layers is the string \"2\"")
def _(): return stlib.build(ref.tensors(), meta_with(with_config(n_layers="2")))


@case("config_missing_d_vocab", "HS_ERR_CONFIG", "config has no 'd_vocab'", "no d_vocab")
def _(): return stlib.build(ref.tensors(), meta_with(with_config(d_vocab=DROP)))


@case("config_act_fn_unsupported", "HS_ERR_CONFIG", "config act_fn 'solu_ln' is not supported",
      "act_fn solu_ln")
def _(): return stlib.build(ref.tensors(), meta_with(with_config(act_fn="solu_ln")))


@case("config_rotary", "HS_ERR_CONFIG", "positional_embedding_type 'shortformer' is not supported",
      "shortformer positions (rotary and alibi are computed)")
def _(): return stlib.build(ref.tensors(), meta_with(with_config(positional_embedding_type="shortformer")))


@case("config_attn_only_inconsistent", "HS_ERR_CONFIG", "attn_only is true but d_mlp is 16",
      "attn_only true with d_mlp 16")
def _(): return stlib.build(ref.tensors(), meta_with(with_config(attn_only=True)))


@case("config_d_vocab_out", "HS_ERR_CONFIG", "config d_vocab_out 7 differs from d_vocab 5",
      "separate output vocabulary")
def _(): return stlib.build(ref.tensors(), meta_with(with_config(d_vocab_out=7)))


@case("config_too_big_for_file", "HS_ERR_CONFIG", "the config does not match the tensors",
      "config d_model 4096, d_vocab 2^20 over a few-KB file")
def _(): return stlib.build(ref.tensors(), meta_with(with_config(d_model=4096, d_vocab=1 << 20, d_vocab_out=-1)))


@case("headscope_config_unknown_field", "HS_ERR_CONFIG", "headscope_config has unknown field 'attention'",
      "misspelt switch")
def _(): return stlib.build(ref.tensors(), meta_with(headscope_config='{"attention": "uniform"}'))


@case("headscope_config_bad_value", "HS_ERR_CONFIG", "headscope_config attn 'average' is not known",
      "attn average")
def _(): return stlib.build(ref.tensors(), meta_with(headscope_config='{"attn": "average"}'))


@case("format_version_newer", "HS_ERR_FORMAT", "checkpoint format '2' is not 1", "headscope_format 2")
def _(): return stlib.build(ref.tensors(), meta_with(headscope_format="2"))


@case("missing_tensor", "HS_ERR_FORMAT", "missing tensor blocks.1.mlp.b_out [8]", "blocks.1.mlp.b_out left out")
def _(): return stlib.build([t for t in ref.tensors() if t.name != "blocks.1.mlp.b_out"], ref.metadata())


@case("extra_tensor", "HS_ERR_FORMAT", "unknown tensor 'blocks.0.attn.W_extra'", "an extra tensor")
def _(): return stlib.build(ref.tensors() + [stlib.ref_tensor("blocks.0.attn.W_extra", [2, 2])], ref.metadata())


@case("wrong_shape_for_config", "HS_ERR_FORMAT", "tensor blocks.0.attn.W_Q has shape [2,8,2], config expects [2,8,4]",
      "W_Q with d_head 2")
def _(): return stlib.build(replace_tensor(ref.tensors(), "blocks.0.attn.W_Q",
                                           stlib.ref_tensor("blocks.0.attn.W_Q", [2, 8, 2])), ref.metadata())


@case("config_inconsistent_d_vocab", "HS_ERR_FORMAT", "tensor embed.W_E has shape [5,8], config expects [7,8]",
      "config d_vocab 7 but W_E has 5 rows")
def _(): return stlib.build(ref.tensors(), meta_with(with_config(d_vocab=7, d_vocab_out=7)))


@case("config_inconsistent_n_layers", "HS_ERR_FORMAT", "missing tensor blocks.2.ln1.w",
      "config n_layers 3 over a 2-layer state dict")
def _(): return stlib.build(ref.tensors(), meta_with(with_config(n_layers=3)))


@case("config_inconsistent_attn_only", "HS_ERR_FORMAT", "unknown tensor 'blocks.0.ln2.w'",
      "config attn_only (d_mlp null) but MLP weights present")
def _(): return stlib.build(ref.tensors(), meta_with(with_config(attn_only=True, d_mlp=None)))


@case("vocab_length", "HS_ERR_FORMAT", "vocab has 4 words but config d_vocab is 5", "vocab of 4 words")
def _(): return stlib.build(ref.tensors(), ref.metadata(vocab=["the", "dog", "cat", "sat"]))


@case("vocab_duplicate", "HS_ERR_FORMAT", "vocab has the word 'dog' twice", "dog listed twice")
def _(): return stlib.build(ref.tensors(), ref.metadata(vocab=["the", "dog", "cat", "dog", "."]))


@case("vocab_not_list", "HS_ERR_FORMAT", "metadata 'vocab' is not a JSON list of strings", "vocab is an object")
def _(): return stlib.build(ref.tensors(), meta_with(vocab='{"the": 0}'))


@case("vocab_entry_not_string", "HS_ERR_FORMAT", "vocab entry 2 is not a string", "vocab [\"the\",\"dog\",3,...]")
def _(): return stlib.build(ref.tensors(), ref.metadata(vocab=["the", "dog", 3, "sat", "."]))


@case("task_not_json", "HS_ERR_FORMAT", "metadata 'task' is not valid JSON", "task is 'winograd'")
def _(): return stlib.build(ref.tensors(), meta_with(task="winograd"))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "checkpoint")
    corpus = os.path.join(outdir, "corpus")
    os.makedirs(corpus, exist_ok=True)
    names = set()
    rows = ["# case\tstatus\texpected message substring\twhat is broken "
            "(generated by tests/py/make_corrupt.py; files in corpus/<case>.safetensors)"]
    for name, status, expect, what, fn in CASES:
        assert name not in names, name
        names.add(name)
        with open(os.path.join(corpus, name + ".safetensors"), "wb") as f:
            f.write(fn())
        rows.append("\t".join([name, status, expect, what]))
    with open(os.path.join(corpus, "valid_tl_reference.safetensors"), "wb") as f:
        f.write(base())
    with open(os.path.join(outdir, "corrupt_cases.tsv"), "w") as f:
        f.write("\n".join(rows) + "\n")
    print("%d cases" % len(CASES))


if __name__ == "__main__":
    main()
