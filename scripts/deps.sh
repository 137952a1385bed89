#!/usr/bin/env bash
# Installs headscope's Debian 12 dependencies when they are missing.
# Runs as root with no standard input (CI); uses sudo when not root.
set -euo pipefail
PKGS=(build-essential cmake pkg-config
      libopenblas-dev liblapacke-dev libpng-dev zlib1g-dev
      libfreetype-dev libfontconfig-dev fonts-dejavu-core
      libcairo2-dev libharfbuzz-dev
      libcjson-dev libcmocka-dev)
# test: viz checks (pngcheck, xmllint; poppler-utils' pdfinfo, pdffonts,
# pdftoppm, pdftotext; rsvg-convert), libFuzzer (clang + its runtime), valgrind (needs libc6-dbg), Python fixtures, setpriv (util-linux) and
# mount (the output-safety test's nobody and tmpfs cases).
TEST_PKGS=(pngcheck libxml2-utils poppler-utils librsvg2-bin
           clang libclang-rt-14-dev valgrind libc6-dbg
           python3 python3-numpy util-linux mount)
want=("${PKGS[@]}")
if [ "${1:-}" = "--test" ]; then want+=("${TEST_PKGS[@]}"); fi
if [ "${1:-}" = "--bench" ]; then want+=("${TEST_PKGS[@]}" python3-torch time); fi
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq </dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >/dev/null
