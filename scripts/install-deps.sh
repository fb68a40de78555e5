#!/usr/bin/env bash
# Installs Tessera's build and test dependencies from Debian's packages.
# Idempotent: does nothing when everything is already installed.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache   # compiler and build
  libprotobuf-dev protobuf-compiler          # ONNX files are protobuf
  libonnx-dev                                # onnx.proto's generated C++ classes
  libcli11-dev                               # the CLI's argument parsing
  nlohmann-json3-dev                         # tuning records as JSON lines
  libgtest-dev googletest                    # unit tests
  clang libclang-rt-14-dev                   # libFuzzer for the importer fuzz target
  llvm-14-dev                                # the JIT backend (ORC LLJIT, x86 codegen)
  graphviz                                   # tessera viz: graphs and fusion plans drawn by dot
  pybind11-dev python3-dev                   # the Python module `tessera` (Debian's, matched to /usr/bin/python3)
  python3-numpy python3-pytest               # its arrays and its test suite (Debian's packages, no PyPI)
  python3-pil                                # examples/classify_image.py reads images (run by the tests)
  python3-matplotlib                         # bench reports' charts (the bench_costmodel_tuning test draws one)
  libopenmpi-dev openmpi-bin                 # tessera dataset collect over mpirun ranks (and its test)
  libxgboost-dev libtorch-dev                # learned cost models (issue 21): XGBoost's C API (the xgb model),
                                             # libtorch (the attention model); configuring fails without them
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
