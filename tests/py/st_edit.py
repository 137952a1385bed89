#!/usr/bin/python3
"""Edits a safetensors checkpoint for the CLI tests (stdlib only).

Usage: st_edit.py IN OUT [--word ID HEX] [--drop KEY] [--meta KEY TEXT]
                        [--set TENSOR INDEX VALUE]...

  --word ID HEX           replaces vocabulary word ID (the `vocab` metadata) by
                          the bytes HEX (any bytes, written raw into the header,
                          so a test can put invalid UTF-8 there too)
  --drop KEY              removes metadata KEY (e.g. task, whose words a changed
                          vocabulary no longer holds)
  --meta KEY TEXT         sets metadata KEY to the string TEXT (e.g. a task
                          JSON written elsewhere)
  --set TENSOR INDEX VALUE  sets element INDEX of F32 (or BOOL: VALUE != 0) tensor
                          TENSOR to VALUE

The header is re-encoded (padded with spaces to 8 bytes); the data section is
kept, so every tensor keeps its offsets.
"""
import json
import struct
import sys


def main(argv):
    src, dst, args = argv[1], argv[2], argv[3:]
    b = open(src, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    data = bytearray(b[8 + n:])
    words = {}
    i = 0
    while i < len(args):
        if args[i] == "--word":
            words[int(args[i + 1])] = bytes.fromhex(args[i + 2])
            i += 3
        elif args[i] == "--drop":
            header["__metadata__"].pop(args[i + 1], None)
            i += 2
        elif args[i] == "--meta":
            header.setdefault("__metadata__", {})[args[i + 1]] = args[i + 2]
            i += 3
        elif args[i] == "--set":
            name, k, v = args[i + 1], int(args[i + 2]), float(args[i + 3])
            t = header[name]
            assert t["dtype"] in ("F32", "BOOL"), t
            size, raw = (4, struct.pack("<f", v)) if t["dtype"] == "F32" else (1, bytes([v != 0]))
            off = t["data_offsets"][0] + size * k
            assert off + size <= t["data_offsets"][1], "index out of range"
            data[off:off + size] = raw
            i += 4
        else:
            raise SystemExit("unknown argument " + args[i])
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=True).encode()
    if words:
        # the vocab metadata is a JSON text inside a JSON string: rebuild it
        # with placeholders, then swap in the raw bytes (escaped for both
        # levels only where JSON needs it: quotes and backslashes)
        vocab = json.loads(header["__metadata__"]["vocab"])
        for k in words:
            vocab[k] = "@@WORD%d@@" % k
        header["__metadata__"]["vocab"] = json.dumps(vocab, separators=(",", ":"))
        text = json.dumps(header, separators=(",", ":"), ensure_ascii=True).encode()
        for k, raw in words.items():
            esc = b""
            for c in raw:  # JSON escapes for both levels where JSON needs them
                if c < 0x20:
                    esc += b"\\\\u%04x" % c
                elif c in b'"\\':
                    esc += b"\\\\\\" + bytes([c])
                else:
                    esc += bytes([c])
            text = text.replace(("@@WORD%d@@" % k).encode(), esc)
    text += b" " * ((-len(text)) % 8)
    open(dst, "wb").write(struct.pack("<Q", len(text)) + text + bytes(data))


if __name__ == "__main__":
    main(sys.argv)
