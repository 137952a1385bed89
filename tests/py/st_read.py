#!/usr/bin/python3
"""Stdlib-only safetensors reader: opens a file (e.g. one headscope wrote) and
checks it against the format, independently of model/safetensors.c.

Usage: st_read.py FILE [--layout] [--expect-ref] [--tl-config FIELDS.txt]
                       [--meta KEY] [--summary]
  (always)      8-byte LE header length within the file, JSON object header,
                every entry has dtype/shape/data_offsets, byte lengths match
                dtype x shape, offsets tile the data section exactly (no
                overlap, no hole, no trailing bytes), metadata values are strings
  --layout      also headscope's writer layout: header length a multiple of 8,
                padded with spaces only, F32 only, offsets contiguous from 0 in
                header order, every value finite
  --expect-ref  every F32 tensor holds stlib.ref_value(name, i) exactly
  --tl-config F every key of __metadata__["config"] is a field named in F
  --meta KEY    print that metadata value
  --summary     print one line per tensor: name dtype shape sum
Exit 0 if every check passes; 1 with a message on stderr otherwise.
"""
import json
import math
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stlib  # noqa: E402


class Bad(Exception):
    pass


def read(path):
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise Bad("shorter than 8 bytes")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        raise Bad("header length %d beyond the file" % n)
    htext = raw[8:8 + n]
    try:
        header = json.loads(htext.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise Bad("header is not JSON: %s" % e)
    if not isinstance(header, dict):
        raise Bad("header is not an object")
    data = raw[8 + n:]
    meta = header.pop("__metadata__", None)
    if meta is not None:
        if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
            raise Bad("__metadata__ must map strings to strings")
    entries = []
    for name, e in header.items():
        if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
            raise Bad("entry %s malformed: %r" % (name, e))
        dt, shape, (b, en) = e["dtype"], e["shape"], e["data_offsets"]
        if dt not in stlib.DTYPE_SIZE:
            raise Bad("%s: unknown dtype %s" % (name, dt))
        if not all(isinstance(d, int) and d >= 0 for d in shape):
            raise Bad("%s: bad shape %r" % (name, shape))
        if not (isinstance(b, int) and isinstance(en, int) and 0 <= b <= en <= len(data)):
            raise Bad("%s: bad data_offsets %r" % (name, [b, en]))
        if en - b != stlib.numel(shape) * stlib.DTYPE_SIZE[dt]:
            raise Bad("%s: %d bytes for shape %r %s" % (name, en - b, shape, dt))
        entries.append((name, dt, shape, b, en))
    pos = 0
    for name, dt, shape, b, en in sorted(entries, key=lambda t: (t[3], t[4])):
        if b != pos:
            raise Bad("%s begins at %d, expected %d (overlap or hole)" % (name, b, pos))
        pos = en
    if pos != len(data):
        raise Bad("%d trailing bytes after the last tensor" % (len(data) - pos))
    return n, htext, meta or {}, entries, data


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    path, opts = argv[1], argv[2:]
    try:
        n, htext, meta, entries, data = read(path)
        if "--layout" in opts:
            if n % 8 != 0:
                raise Bad("header length %d is not a multiple of 8" % n)
            body = htext.rstrip(b" ")
            if not body.endswith(b"}") or len(htext) - len(body) >= 8:
                raise Bad("header padding is not 0-7 spaces after the JSON object")
            pos = 0
            for name, dt, shape, b, en in entries:  # header order
                if dt != "F32":
                    raise Bad("%s: dtype %s, headscope writes F32" % (name, dt))
                if b != pos:
                    raise Bad("%s: offsets not contiguous in header order (begins %d, expected %d)"
                              % (name, b, pos))
                pos = en
                for i, (v,) in enumerate(struct.iter_unpack("<f", data[b:en])):
                    if not math.isfinite(v):
                        raise Bad("%s[%d] is not finite" % (name, i))
        if "--expect-ref" in opts:
            for name, dt, shape, b, en in entries:
                if dt != "F32" or name.endswith((".attn.mask", ".attn.IGNORE")):
                    continue
                for i, (v,) in enumerate(struct.iter_unpack("<f", data[b:en])):
                    if v != stlib.ref_value(name, i):
                        raise Bad("%s[%d] = %r, expected %r" % (name, i, v, stlib.ref_value(name, i)))
        if "--tl-config" in opts:
            fields_path = opts[opts.index("--tl-config") + 1]
            with open(fields_path) as f:
                fields = {l.strip() for l in f if l.strip() and not l.startswith("#")}
            if "config" not in meta:
                raise Bad("no config in __metadata__")
            cfg = json.loads(meta["config"])
            extra = sorted(set(cfg) - fields)
            if extra:
                raise Bad("config keys not in the TransformerLens field list: %s" % ", ".join(extra))
        if "--meta" in opts:
            key = opts[opts.index("--meta") + 1]
            print(meta.get(key, ""))
        if "--summary" in opts:
            for name, dt, shape, b, en in entries:
                s = sum(v for (v,) in struct.iter_unpack("<f", data[b:en])) if dt == "F32" else 0
                print("%s %s %s %.9g" % (name, dt, shape, s))
    except (Bad, OSError) as e:
        print("st_read.py: %s: %s" % (path, e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
