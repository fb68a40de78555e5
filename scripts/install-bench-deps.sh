#!/usr/bin/env bash
# Installs what the benchmark harnesses in bench/ need (not the build or the
# tests): the peers Tessera is compared with and the tools to export models
# and draw charts. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  python3-torch python3-torchvision   # model exports and the torch eager / TorchScript peers
  libopenblas0-openmp                 # torch's matrix products (else the reference BLAS)
  python3-onnx                        # node counts of ONNX Runtime's optimized graphs (FUSION.md)
  python3-opencv                      # the OpenCV DNN peer
  python3-matplotlib                  # bench/results.png
  libdnnl-dev g++                     # bench/kernel_bench.py: oneDNN, the kernel peer (its C++ API, built
                                      # with plain g++ outside the project's CMake, which keeps the build free of it)
)
# ONNX Runtime runs in node (onnxruntime-node from npm): Debian's nodejs and
# npm, unless a node with its own npm is already there (a NodeSource nodejs
# bundles npm and conflicts with Debian's package).
command -v npm >/dev/null 2>&1 || PACKAGES+=(nodejs npm)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# onnxruntime-node's install script would fetch GPU files from outside: skipped.
if [ ! -d bench/node_modules/onnxruntime-node ]; then
  (cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm ci)
fi
