#!/usr/bin/env bash
# Builds the fuzz target of every untrusted format (ONNX with external data,
# .npy, .tsr; see fuzz_import.cpp) with clang (ASan + libFuzzer) in its own
# build directory and fuzzes for a bounded time, seeded with real models.
# Usage: run_fuzz.sh SOURCE_DIR BUILD_DIR SECONDS
set -euo pipefail
src=$1 build=$2 secs=${3:-60}
# -O1 without debug info: the sanitizer needs no more, and it halves the build.
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1" \
  -DCMAKE_CXX_COMPILER=clang++ -DTESSERA_BUILD_FUZZ=ON -DTESSERA_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" --target fuzz_import
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
data="$src/../shared/onnx-backend-tests"
i=0
for m in "$data"/node/test_{add,conv_with_strides_padding,reshape_negative_dim,gemm_all_attributes,slice,maxpool_2d_pads,if,loop11,resize_upsample_scales_linear,layer_normalization_2d_axis0}/model.onnx \
         "$data"/simple/test_sign_model/model.onnx; do
  [ -f "$m" ] && cp "$m" "$corpus/seed_$((i++)).onnx"
done
# Hostile inputs (each once crashed, hung or misread: models, .npy files,
# artifacts) and a small artifact holding machine code: run first, as part
# of the corpus.
cp "$src"/tests/fuzz/regressions/* "$corpus/"
export ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1
"$build/fuzz_import" "$corpus" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 \
  -malloc_limit_mb=4096 -print_final_stats=1 2>&1 | tail -n 15
