#!/usr/bin/env python3
"""Pins the headscope CLI's outputs byte for byte (tests/test_golden_cli.sh).

usage: golden_cli.py HEADSCOPE_BIN TESTS_DIR WORK_DIR [--write]

Runs every case of CASES below on the committed checkpoint
(tests/checkpoint/circuit_tiny.safetensors) and on two tiny models it trains
(a Winograd model and an induction model with every checkpoint kept), once
with --threads 1 and once with --threads 2, each in a folder of its own
(WORK_DIR/t1, WORK_DIR/t2) so every path a file records is the same relative
path. For each case it keeps the exit status, stdout, stderr and the size
and SHA-256 of every file the case wrote (output folders, pages,
checkpoints). Then:
  - the two thread counts must give the same record, the threads line of
    stderr aside ("threads: 1 of N CPUs" / "threads: 2 of N CPUs");
  - the record must equal tests/golden/cli_outputs.txt (with --write, that
    file is written instead).
Normalised before comparing: the CPU count of the machine ("of N CPUs") and
the speed a training run prints (steps/s, ETA). SOURCE_DATE_EPOCH is set, so
a PDF's creation date is fixed. The image files (PNG, SVG,
PDF) depend on the versions of the rendering libraries and the font
(cairo, freetype, harfbuzz, pixman, zlib, libpng, DejaVu): the golden file's
first line records them, and on a machine with other versions the images
and the hashes index.json records for them are left out of the comparison
(said on stderr); every other byte still counts.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

HS, TESTS, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
WRITE = "--write" in sys.argv[4:]
GOLDEN = os.path.join(TESTS, "golden", "cli_outputs.txt")
RENDER_PKGS = ["libcairo2", "libfreetype6", "libharfbuzz0b", "libpixman-1-0", "zlib1g",
               "libpng16-16", "fonts-dejavu-core", "libfontconfig1"]
IMAGE_EXT = (".png", ".svg", ".pdf")

TIRED = "the animal did not cross the street because it was too tired , so the"
WET = "the animal did not cross the street because it was too wet , so the"
M = "m.safetensors"

# (name, argv, takes --threads). Cases run in order in one folder, so a later
# case may read what an earlier one wrote (a model, an output folder).
CASES = [
    # the data the prompt-set commands read
    ("train_dataset", ["train", "--steps", "1", "--eval-every", "0", "--dataset", "ds.txt",
                       "--out", "ds.safetensors"], True),
    # inspect: every format, --vs, the query row, per-head rows
    ("inspect_all", ["inspect", "--model", M, "--sentence", TIRED, "--out", "i_all", "--vs",
                     "street", "--heads", "--format", "png,svg,pdf,json,html"], True),
    # the pair and the difference, on a page and in a column (--only)
    ("inspect_pair", ["inspect", "--model", M, "--sentence", TIRED, "--sentence", WET, "--out",
                      "i_pair", "--format", "png,svg,pdf,json"], True),
    ("inspect_pair_column", ["inspect", "--model", M, "--sentence", TIRED, "--sentence", WET,
                             "--out", "i_pcol", "--width", "column", "--only", "L1H1",
                             "--format", "png,pdf,json"], True),
    # a crop, a query position, a title
    ("inspect_crop", ["inspect", "--model", M, "--sentence", TIRED, "--out", "i_crop",
                      "--positions", "5:", "--position", "11", "--title", "a crop",
                      "--format", "png,svg,json"], True),
    # --only in the user's order, annotated, 300 dpi, no titles, upper case folded
    ("inspect_only", ["inspect", "--model", M, "--sentence", TIRED.replace("the animal", "The Animal"),
                      "--out", "i_only", "--only", "L1H0,L0H1", "--heads", "--annotate", "--dpi",
                      "300", "--no-title", "--top", "3", "--cmap", "greys"], True),
    ("inspect_page", ["inspect", "--model", M, "--sentence", WET, "--out", "i_page", "--format",
                      "json,html", "--position", "-2"], True),
    # the same folder again with other heads: what the first run wrote and
    # this one does not is removed, and said
    ("inspect_again", ["inspect", "--model", M, "--sentence", TIRED, "--out", "i_only", "--only",
                       "L0H0", "--format", "png,json"], True),
    ("weights", ["weights", "--model", M, "--out", "w", "--format", "png,svg,pdf,json,html"], False),
    ("weights_nofold", ["weights", "--model", M, "--out", "w_nofold", "--fold", "none",
                        "--comp-draws", "50", "--format", "json", "--range", "auto"], False),
    ("patch", ["patch", "--model", M, "--data", "pairs.jsonl", "--out", "p", "--format",
               "png,svg,pdf,json,html"], True),
    ("patch_json", ["patch", "--model", M, "--data", "pairs16.jsonl", "--acts", "z,resid_pre,pattern",
                    "--json"], True),
    ("ablate_mean", ["ablate", "--model", M, "--data", "pairs.jsonl", "--out", "a_mean", "--format",
                     "png,svg,json,html"], True),
    ("ablate_zero", ["ablate", "--model", M, "--data", "pairs16.jsonl", "--method", "zero"], True),
    ("ablate_resample", ["ablate", "--model", M, "--data", "pairs16.jsonl", "--method", "resample",
                         "--ref", "pairs.jsonl", "--json"], True),
    ("dla", ["dla", "--model", M, "--data", "pairs.jsonl", "--out", "d", "--format",
             "png,svg,pdf,json,html"], True),
    ("dla_by_position", ["dla", "--model", M, "--data", "pairs16.jsonl", "--by-position", "--out",
                         "d_pos", "--format", "png,json"], True),
    ("lens", ["lens", "--model", M, "--data", "pairs.jsonl", "--out", "l", "--format",
              "png,svg,json,html"], True),
    ("lens_sentence", ["lens", "--model", M, "--sentence", TIRED, "--json"], True),
    # the activation cache as a file: two kinds of points over a set
    ("cache", ["cache", "--model", M, "--data", "pairs.jsonl", "--names",
               "blocks.*.attn.hook_pattern,blocks.*.attn.hook_result", "--out", "cache.safetensors"], True),
    ("heads", ["heads", "--model", M, "--data", "pairs.jsonl", "--out", "h", "--format",
               "png,svg,pdf,json,html"], True),
    ("heads_target", ["heads", "--model", M, "--data", "pairs16.jsonl", "--target", "target.json",
                      "--metric", "abs", "--exclude-bos", "--exclude-current"], True),
    ("heads_sentence", ["heads", "--model", M, "--sentence", TIRED, "--json"], True),
    # circuit discovery: exact patching into a folder with a truth, ACDC with kl and EAP-IG as JSON, a graph.json
    # run again
    ("discover", ["discover", "--model", M, "--data", "pairs.jsonl", "--out", "disc", "--top", "12",
                  "--truth", "truth.txt"], True),
    ("discover_acdc", ["discover", "--model", M, "--data", "pairs16.jsonl", "--method", "acdc", "--metric", "kl",
                       "--tau", "0.02", "--json"], True),
    ("discover_eapig", ["discover", "--model", M, "--data", "pairs16.jsonl", "--method", "eap-ig", "--json"], False),
    ("faithfulness", ["faithfulness", "--model", M, "--data", "pairs16.jsonl", "--graph", "disc/graph.json",
                      "--ablation", "mean", "--out", "faith"], True),
    ("circuit", ["circuit", "--model", M, "--out", "c", "--format", "png,svg,pdf,json,html"], True),
    ("view_two", ["view", "i_all", "i_pair", "--out", "two.html"], False),
    ("view_folder", ["view", "i_crop"], False),
    ("eval", ["eval", "--model", M], False),
    ("eval_json", ["eval", "--model", M, "--split", "train", "--json"], False),
    # tokenize: the checkpoint's word list (case folded, said on stderr), JSON lines, decoding
    ("tokenize_text", ["tokenize", "--model", M, "--text", TIRED.replace("the animal", "The Animal")],
     False),
    ("tokenize_jsonl", ["tokenize", "--model", M, "--jsonl", "sentences.jsonl"], False),
    ("tokenize_decode", ["tokenize", "--model", M, "--decode", "--jsonl", "ids.jsonl"], False),
    # training: a Winograd model, and an induction model with its checkpoints kept
    ("train_winograd", ["train", "--steps", "40", "--layers", "1", "--d-model", "16", "--heads", "2",
                        "--batch", "8", "--eval-every", "20", "--out", "wg.safetensors"], True),
    ("train_induction", ["train", "--task", "induction", "--steps", "40", "--layers", "2", "--d-model",
                         "16", "--heads", "2", "--batch", "8", "--eval-every", "20",
                         "--checkpoint-every", "20", "--keep", "keep", "--save-optimizer",
                         "--out", "ind.safetensors"], True),
    ("train_resume", ["train", "--resume", "keep/step-000020.safetensors", "--out", "res.safetensors"],
     True),
    ("circuit_induction", ["circuit", "--model", "ind.safetensors", "--out", "ic", "--format",
                           "png,svg,json,html"], True),
    ("timeline", ["timeline", "keep", "--out", "tl", "--format", "png,svg,pdf,json,html"], False),
    ("timeline_json", ["timeline", "keep", "--json"], False),
    # user errors and usage errors: the message and the exit status
    ("err_no_args", [], False),
    ("err_unknown_command", ["frobnicate"], False),
    ("err_inspect_word", ["inspect", "--model", M, "--sentence", "the zebra did not"], False),
    ("err_inspect_missing", ["inspect", "--model", "nope.safetensors", "--sentence", TIRED], False),
    ("err_inspect_head", ["inspect", "--model", M, "--sentence", TIRED, "--only", "L5H0"], False),
    ("err_inspect_only_syntax", ["inspect", "--model", M, "--sentence", TIRED, "--only", "L1-H0"], False),
    ("err_inspect_vs", ["inspect", "--model", M, "--sentence", TIRED, "--vs", "dog cat"], False),
    ("err_inspect_position", ["inspect", "--model", M, "--sentence", TIRED, "--position", "99"], False),
    ("err_inspect_positions", ["inspect", "--model", M, "--sentence", TIRED, "--positions", "9:3"],
     False),
    ("err_inspect_pair_len", ["inspect", "--model", M, "--sentence", TIRED, "--sentence",
                              "the animal did not"], False),
    ("err_inspect_parent", ["inspect", "--model", M, "--sentence", TIRED, "--out", "no/such/dir"],
     False),
    ("err_inspect_file_out", ["inspect", "--model", M, "--sentence", TIRED, "--out", "ds.txt"], False),
    ("err_inspect_other_cmd", ["inspect", "--model", M, "--sentence", TIRED, "--out", "w"], False),
    ("err_inspect_width", ["inspect", "--model", M, "--sentence", TIRED, "--width", "1",
                           "--out", "i_narrow"], False),
    ("err_inspect_format", ["inspect", "--model", M, "--sentence", TIRED, "--format", "png,gif"], False),
    ("err_weights_fold", ["weights", "--model", M, "--fold", "maybe"], False),
    ("err_patch_nocorr", ["patch", "--model", M, "--data", "nocorr.jsonl"], False),
    ("err_patch_acts", ["patch", "--model", M, "--data", "pairs16.jsonl", "--acts", "z,zz"], False),
    ("err_patch_word", ["patch", "--model", M, "--data", "unknown.jsonl"], False),
    ("err_ablate_method", ["ablate", "--model", M, "--data", "pairs16.jsonl", "--method", "half"], False),
    ("err_dla_nodata", ["dla", "--model", M], False),
    ("err_lens_both", ["lens", "--model", M, "--data", "pairs16.jsonl", "--sentence", TIRED], False),
    ("err_heads_metric", ["heads", "--model", M, "--data", "pairs16.jsonl", "--metric", "max"], False),
    ("err_heads_target", ["heads", "--model", M, "--data", "pairs16.jsonl", "--target",
                          "target_small.json"], False),
    ("err_view_empty", ["view", "emptydir"], False),
    ("err_view_exists", ["view", "i_all", "--out", "ds.txt"], False),
    ("err_train_exists", ["train", "--steps", "1", "--out", "wg.safetensors"], False),
    ("err_train_layers", ["train", "--layers", "0", "--out", "x.safetensors"], False),
    ("err_timeline_empty", ["timeline", "emptydir"], False),
    ("err_eval_missing", ["eval", "--model", "nope.safetensors"], False),
    ("err_discover_eap_kl", ["discover", "--model", M, "--data", "pairs16.jsonl", "--method", "eap", "--metric",
                             "kl"], False),
    ("err_faithfulness_graph", ["faithfulness", "--model", M, "--data", "pairs16.jsonl", "--graph", "target.json"],
     False),
    ("err_tokenize_word", ["tokenize", "--model", M, "--jsonl", "unknown_word.jsonl"], False),
    ("err_circuit_induction_opts", ["circuit", "--model", "ind.safetensors", "--push-attn", "0.5"],
     False),
]


def prepare(d):
    """The inputs every folder starts with."""
    os.makedirs(d)
    shutil.copy(os.path.join(TESTS, "checkpoint", "circuit_tiny.safetensors"), os.path.join(d, M))
    os.makedirs(os.path.join(d, "emptydir"))
    with open(os.path.join(d, "nocorr.jsonl"), "w") as f:
        f.write('{"prompt": "the animal did not", "answer": "cross"}\n')
    with open(os.path.join(d, "unknown.jsonl"), "w") as f:
        f.write('{"prompt": "the zebra did not", "corrupted": "the cat did not", '
                '"answer": "animal", "wrong": "cat"}\n')
    t = 15  # a prompt of the pair set: positions 0..14
    rows = [[1.0 if j == max(i - 2, 0) else 0.0 for j in range(t)] for i in range(t)]
    with open(os.path.join(d, "target.json"), "w") as f:
        json.dump(rows, f)
    with open(os.path.join(d, "target_small.json"), "w") as f:
        json.dump([[1.0, 0.0], [0.5, 0.5]], f)
    with open(os.path.join(d, "truth.txt"), "w") as f:
        f.write("input->a0.h3<k>\na0.h3->a1.h3<q>\na1.h3->logits\nm1->logits\n")
    with open(os.path.join(d, "sentences.jsonl"), "w") as f:
        f.write(json.dumps(TIRED) + "\n" + json.dumps(WET) + "\n")
    with open(os.path.join(d, "ids.jsonl"), "w") as f:
        f.write("[0, 12, 1, 2, 3, 0, 13]\n[14, 8, 9]\n")
    with open(os.path.join(d, "unknown_word.jsonl"), "w") as f:
        f.write(json.dumps(TIRED) + "\n" + json.dumps("the zebra did not") + "\n")


def pairs(d):
    """The circuit's held-out pairs from the dataset dump (after train_dataset)."""
    subprocess.run(["/usr/bin/python3", os.path.join(TESTS, "py", "winograd_pairs.py"),
                    os.path.join(d, "ds.txt"), os.path.join(d, "pairs.jsonl")], check=True)
    with open(os.path.join(d, "pairs.jsonl")) as f:
        lines = f.readlines()
    with open(os.path.join(d, "pairs16.jsonl"), "w") as f:
        f.writelines(lines[:8] + lines[96:104])


def snapshot(d):
    """{relative path: (bytes, sha256)} of every file under d."""
    out = {}
    for root, dirs, files in os.walk(d):
        dirs.sort()
        for name in files:
            p = os.path.join(root, name)
            data = open(p, "rb").read()
            out[os.path.relpath(p, d)] = (len(data), hashlib.sha256(data).hexdigest())
    return out


def normalise(text):
    text = re.sub(r"threads: (\d+) of \d+ CPUs?", r"threads: \1 of N CPUs", text)
    text = re.sub(r"\d+ steps/s ETA \S+", "S steps/s ETA E", text)
    return text


def run_all(th):
    d = os.path.join(WORK, "t%d" % th)
    prepare(d)
    env = dict(os.environ, OPENBLAS_CORETYPE="Prescott", LIBXSMM_TARGET="sse3", HEADSCOPE_PROGRESS="off",
               SOURCE_DATE_EPOCH="1700000000")
    records = []
    before = snapshot(d)
    for name, argv, threads in CASES:
        args = [HS] + argv + (["--threads", str(th)] if threads else [])
        p = subprocess.run(args, cwd=d, env=env, capture_output=True, stdin=subprocess.DEVNULL)
        now = snapshot(d)
        changed = {k: v for k, v in now.items() if before.get(k) != v}
        gone = sorted(k for k in before if k not in now)
        before = now
        records.append((name, p.returncode, normalise(p.stdout.decode("utf-8", "replace")),
                        normalise(p.stderr.decode("utf-8", "replace")), changed, gone))
        if name == "train_dataset":
            pairs(d)
            before = snapshot(d)
    return records


def render(records, th_free=True):
    lines = []
    for name, rc, out, err, changed, gone in records:
        if th_free:
            err = re.sub(r"threads: \d+ of", "threads: T of", err)
        lines.append("== %s: exit %d" % (name, rc))
        lines.append("-- stdout")
        lines.extend(out.splitlines())
        lines.append("-- stderr")
        lines.extend(err.splitlines())
        lines.append("-- files")
        for k in sorted(changed):
            lines.append("%s %d %s" % (k, changed[k][0], changed[k][1]))
        for k in gone:
            lines.append("%s removed" % k)
    return lines


def versions():
    got = []
    for p in RENDER_PKGS:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", p], capture_output=True, text=True)
        got.append("%s=%s" % (p, r.stdout.strip() if r.returncode == 0 else "?"))
    return "# rendering: " + " ".join(got)


def images_out(lines):
    """lines without image files and without index.json's hashes of them."""
    keep = []
    for ln in lines:
        f = ln.split(" ")[0]
        if f.endswith(IMAGE_EXT) or f.endswith("index.json") or f.endswith(".html"):
            continue
        keep.append(ln)
    return keep


def main():
    if os.path.exists(WORK):
        shutil.rmtree(WORK)
    os.makedirs(WORK)
    r1 = render(run_all(1))
    r2 = render(run_all(2))
    if r1 != r2:
        for i, (a, b) in enumerate(zip(r1, r2)):
            if a != b:
                sys.exit("threads 1 and 2 differ at record line %d:\n  1: %s\n  2: %s" % (i + 1, a, b))
        sys.exit("threads 1 and 2 differ in length: %d and %d lines" % (len(r1), len(r2)))
    head = versions()
    if WRITE:
        with open(GOLDEN, "w") as f:
            f.write(head + "\n" + "\n".join(r1) + "\n")
        print("wrote %s (%d lines)" % (GOLDEN, len(r1) + 1))
        return
    want = open(GOLDEN).read().split("\n")
    if want and want[-1] == "":
        want.pop()
    got = r1
    if want[0] != head:
        sys.stderr.write("note: the rendering libraries differ from the golden file's:\n  golden: %s\n"
                         "  here:   %s\n  images (and index.json, pages) left out of the comparison\n"
                         % (want[0], head))
        want, got = images_out(want[1:]), images_out(got)
    else:
        want = want[1:]
    case = "?"
    for i, (a, b) in enumerate(zip(got, want)):
        if a.startswith("== "):
            case = a
        if a != b:
            sys.exit("differs from tests/golden/cli_outputs.txt in case %s:\n  got:      %s\n"
                     "  expected: %s" % (case, a, b))
    if len(got) != len(want):
        sys.exit("record has %d lines, tests/golden/cli_outputs.txt %d" % (len(got), len(want)))
    print("ok: %d cases x threads 1, 2" % len(CASES))


main()
