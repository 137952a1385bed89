#!/usr/bin/env bash
# Installs what the tests need, builds, and runs the whole test suite (ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --test
bash scripts/build.sh -DHS_WERROR=ON
cd build && ctest --output-on-failure -j"$(nproc)"
