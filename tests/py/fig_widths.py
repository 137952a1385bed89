"""Checks a headscope output folder's figures against a width (tests/test_fig_widths.sh).

Usage: fig_widths.py DIR WIDTH_IN

For every PNG, SVG and PDF the folder's index.json lists: the PNG's pHYs
states WIDTH_IN to the nearest pixel per metre (|w / ppm - W| <= half a pixel),
the SVG is exactly WIDTH_IN wide ("%.4fin"), the PDF's media box exactly
WIDTH_IN x 72 pt wide (pdfinfo); the SVG's smallest text is >= 6 pt; and every
label its JSON (stem.json) lists (a bar chart's labels, a matrix's row_labels
and col_labels, else an attention figure's tokens) is a <text> of its SVG (figures shorten labels over 24 code points to 23 and
"..."). Prints one line per file checked; exits 1 naming the first failure.
"""
import json
import os
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

d, W = sys.argv[1], float(sys.argv[2])
idx = json.load(open(os.path.join(d, "index.json")))
files = [f["file"] for f in idx["files"]]
bad = []


def shown(s):
    return s if len(s) <= 24 else s[:23] + "\u2026"


for name in files:
    p = os.path.join(d, name)
    stem, ext = os.path.splitext(name)
    if ext == ".png":
        b = open(p, "rb").read()
        w = struct.unpack(">I", b[16:20])[0]
        i = b.find(b"pHYs")
        ppm = struct.unpack(">I", b[i + 4:i + 8])[0]
        win = w / (ppm * 0.0254)
        if abs(win - W) > 0.5 / (ppm * 0.0254) + 1e-9:
            bad.append("%s: %.4f in wide, not %.4f" % (name, win, W))
        print("%s %d px %.4f in" % (name, w, win))
    elif ext == ".svg":
        root = ET.parse(p).getroot()
        ns = "{http://www.w3.org/2000/svg}"
        wa = root.get("width")
        if wa != "%.4fin" % W:
            bad.append("%s: width %s, not %.4fin" % (name, wa, W))
        vb = [float(v) for v in root.get("viewBox").split()]
        ppi = vb[2] / W
        texts, small = set(), 99.0
        for t in root.iter(ns + "text"):
            texts.add("".join(t.itertext()))
            small = min(small, float(t.get("font-size")) * 72.0 / ppi)
        if small < 6.0 - 0.01:
            bad.append("%s: text of %.2f pt" % (name, small))
        jp = os.path.join(d, stem + ".json")
        if os.path.exists(jp):
            j = json.load(open(jp))
            # a bar chart's labels; else a matrix's rows and columns; else
            # an attention figure's tokens (a bar chart's "tokens" are its
            # prompt's, not drawn)
            keys = ("labels",) if "labels" in j else ("row_labels", "col_labels") \
                if "row_labels" in j else ("tokens",)
            for key in keys:
                for lab in j.get(key) or []:
                    if isinstance(lab, str) and shown(lab) not in texts:
                        bad.append("%s: no label %r (%s)" % (name, lab, key))
        print("%s smallest text %.2f pt" % (name, small))
    elif ext == ".pdf":
        info = subprocess.run(["pdfinfo", p], capture_output=True, text=True, check=True).stdout
        size = [l for l in info.splitlines() if l.startswith("Page size:")][0]
        wpt = float(size.split()[2])
        if abs(wpt - W * 72.0) > 0.01:
            bad.append("%s: %s, not %.2f pt wide" % (name, size, W * 72.0))
        print("%s %s" % (name, size))
if bad:
    print("FAIL: " + "; ".join(bad[:5]), file=sys.stderr)
    sys.exit(1)
