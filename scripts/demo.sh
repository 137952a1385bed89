#!/usr/bin/env bash
# Installs what headscope needs, builds it, and runs the main job:
# `headscope demo` (train the default model, inspect the chapter's two
# sentences, verify the two-step referent circuit). Output: ./headscope-demo/
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh
./build/headscope demo "$@"
