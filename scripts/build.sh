#!/usr/bin/env bash
# Configures and builds headscope into ${BUILD:-build} (extra cmake args pass
# through to the configure step; TARGETS="a b" builds only those targets).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
# shellcheck disable=SC2086
cmake --build "$BUILD" -j"${JOBS:-$(nproc)}" ${TARGETS:+--target $TARGETS}
