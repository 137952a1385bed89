"""Checks a headscope output folder's figures against a width (tests/test_fig_widths.sh).

Usage: fig_widths.py DIR WIDTH_IN [--dpi D] [--max-height IN [--tall-ok STEM]] [--one-size 1]

For every PNG, SVG and PDF the folder's index.json lists: the PNG's pHYs
states WIDTH_IN to the nearest pixel per metre (|w / ppm - W| <= half a pixel),
the SVG is exactly WIDTH_IN wide ("%.4fin"), the PDF's media box exactly
WIDTH_IN x 72 pt wide (pdfinfo); the SVG's smallest text is >= 6 pt; and every
label its JSON (stem.json) lists (a bar chart's labels, a matrix's row_labels
and col_labels, else an attention figure's tokens) is a <text> of its SVG (figures shorten labels over 24 code points to 23 and
"...", and show a special token <|NAME|> as its symbol: <|endoftext|> as U+27E8 bos U+27E9, also after a position, "0 <|endoftext|>"), unless the figure says under its title what it thinned ("every 3rd
token label shown", "no token labels: ...", "the 44 largest of 172 ...").
With --dpi D: each figure's PNG is its PDF's size at D dpi to a pixel in width
and height, and its SVG the PDF's size (PNG, PDF and SVG of one layout). With
--max-height IN: no PDF is taller than IN inches (the height budget). With
--one-size 1: every label of every SVG in the folder is at one font size (one
size per run).
Prints one line per file checked; exits 1 naming the first failure.
"""
import json
import re
import os
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

d, W = sys.argv[1], float(sys.argv[2])
opt = dict(zip(sys.argv[3::2], sys.argv[4::2]))
DPI = float(opt["--dpi"]) if "--dpi" in opt else None
MAXH = float(opt["--max-height"]) if "--max-height" in opt else None
TALL_OK = opt.get("--tall-ok")  # a stem known over the budget (an open item the caller names)
THINNED = re.compile(r"(every [0-9]+(st|nd|rd|th) (token )?label shown|no token labels: |the [0-9]+ largest of )")
sizes = {}  # stem -> {ext: (width_in, height_in)}
# one font size per run (a reviewer's checklist): every label, tick, header,
# axis title and note of every SVG in the folder at one size (titles 1.2x and
# values 0.8x of it are other classes)
LABEL_CLASSES = ("xtick", "ytick", "header", "cbar", "axis", "label")
label_pt = {}  # size in pt -> the first SVG with a label at it
idx = json.load(open(os.path.join(d, "index.json")))
files = [f["file"] for f in idx["files"]]
bad = []


ALIAS = {"endoftext": "bos", "begin_of_text": "bos", "startoftext": "bos", "end_of_text": "eos", "eot_id": "eot"}


def shown(s):
    # a special token <|NAME|> as its short symbol, also after a position "N "
    # (viz_layout.c special_short)
    m = re.fullmatch(r"([0-9]{1,8} )?<\|([A-Za-z0-9_]{1,24})\|>", s)
    if m:
        return "%s\u27e8%s\u27e9" % (m.group(1) or "", ALIAS.get(m.group(2), m.group(2)))
    return s if len(s) <= 24 else s[:23] + "\u2026"


for name in files:
    p = os.path.join(d, name)
    stem, ext = os.path.splitext(name)
    if ext == ".png":
        b = open(p, "rb").read()
        w, h = struct.unpack(">II", b[16:24])
        i = b.find(b"pHYs")
        ppm = struct.unpack(">I", b[i + 4:i + 8])[0]
        win = w / (ppm * 0.0254)
        if abs(win - W) > 0.5 / (ppm * 0.0254) + 1e-9:
            bad.append("%s: %.4f in wide, not %.4f" % (name, win, W))
        sizes.setdefault(stem, {})["png"] = (w, h)
        print("%s %d x %d px %.4f in" % (name, w, h, win))
    elif ext == ".svg":
        root = ET.parse(p).getroot()
        ns = "{http://www.w3.org/2000/svg}"
        wa = root.get("width")
        if wa != "%.4fin" % W:
            bad.append("%s: width %s, not %.4fin" % (name, wa, W))
        vb = [float(v) for v in root.get("viewBox").split()]
        ppi = vb[2] / W
        sizes.setdefault(stem, {})["svg"] = (W, vb[3] / ppi)
        texts, small = set(), 99.0
        for t in root.iter(ns + "text"):
            texts.add("".join(t.itertext()))
            small = min(small, float(t.get("font-size")) * 72.0 / ppi)
            if t.get("class") in LABEL_CLASSES:
                label_pt.setdefault(round(float(t.get("font-size")) * 72.0 / ppi, 2), name)
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
            thinned = any(THINNED.search(t) for t in texts)
            for key in keys:
                for lab in j.get(key) or []:
                    # a query row's head L1H2 in layers x heads blocks: its block L1, its row H2
                    lh = re.fullmatch(r"(L[0-9]+)(H[0-9]+)", lab) if isinstance(lab, str) else None
                    if lh and lh.group(1) in texts and lh.group(2) in texts:
                        continue
                    if isinstance(lab, str) and shown(lab) not in texts and not thinned:
                        bad.append("%s: no label %r (%s)" % (name, lab, key))
        print("%s smallest text %.2f pt" % (name, small))
    elif ext == ".pdf":
        info = subprocess.run(["pdfinfo", p], capture_output=True, text=True, check=True).stdout
        size = [l for l in info.splitlines() if l.startswith("Page size:")][0]
        wpt, hpt = float(size.split()[2]), float(size.split()[4])
        sizes.setdefault(stem, {})["pdf"] = (wpt / 72.0, hpt / 72.0)
        if MAXH is not None and hpt > MAXH * 72.0 + 0.01 and stem != TALL_OK:
            bad.append("%s: %.2f in tall, over the %.2f in budget" % (name, hpt / 72.0, MAXH))
        if abs(wpt - W * 72.0) > 0.01:
            bad.append("%s: %s, not %.2f pt wide" % (name, size, W * 72.0))
        print("%s %s" % (name, size))
if DPI is not None:
    for stem, z in sorted(sizes.items()):
        if "pdf" not in z:
            continue
        pw, ph = z["pdf"][0] * DPI, z["pdf"][1] * DPI
        if "png" in z and (abs(z["png"][0] - pw) > 1 or abs(z["png"][1] - ph) > 1):
            bad.append("%s: PNG %d x %d px, PDF %.1f x %.1f px at %g dpi" % (stem, *z["png"], pw, ph, DPI))
        if "svg" in z and abs(z["svg"][1] * DPI - ph) > 1:
            bad.append("%s: SVG %.1f px tall, PDF %.1f px at %g dpi" % (stem, z["svg"][1] * DPI, ph, DPI))
        print("%s: PNG, PDF and SVG agree at %g dpi" % (stem, DPI))
if "--one-size" in opt and len(label_pt) > 1:
    bad.append("labels at %s pt in one run" % ", ".join("%g (%s)" % (k, v) for k, v in sorted(label_pt.items())))
if bad:
    print("FAIL: " + "; ".join(bad[:5]), file=sys.stderr)
    sys.exit(1)
