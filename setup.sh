#!/usr/bin/env bash
# Quick start, step 1: install dependencies, build Tessera (Release) and run
# the embedded ResNet-50 once.
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh
export CCACHE_BASEDIR="$PWD"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target tessera
./build/tessera run zoo:resnet50
