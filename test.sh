#!/usr/bin/env bash
# Quick start, step 2: build everything and run the whole test suite (unit
# tests, per-op kernel tests, the importer fuzz target and the ONNX
# conformance suite).
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh
# Paths relative to the checkout, so ccache reuses objects across clones.
export CCACHE_BASEDIR="$PWD"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build
ctest --test-dir build --output-on-failure -j2 "$@"
