#!/bin/bash
# Compares the default schedules two tessera binaries give every zoo model's
# kernels (AVX-512 and AVX2, fused and one kernel per op): prints SAME or DIFF
# per model. Fusion profile decisions are shared through one cache directory,
# so both binaries see the same blocks.
#   scripts/compare_schedules.sh OLD_TESSERA NEW_TESSERA [WORKDIR]
# COMPARE_MODELS (space-separated zoo names or ONNX files) compares those
# models instead of the zoo's list below.
set -euo pipefail
old=$1 new=$2 work=${3:-$(mktemp -d)}
export TESSERA_CACHE_DIR=$work/cache
dump() {  # binary model isa flags... -> the schedule sections of --dump-ir
  local bin=$1 model=$2 isa=$3; shift 3
  nice -n 10 "$bin" compile "$model" --isa "$isa" --threads 1 --dump-ir "$@" -o "$work/x.tsr" 2>&1 >/dev/null |
    awk '/^--- /{on = /^--- schedule of kernel/} on'
}
for spec in ${COMPARE_MODELS:-resnet18 mobilenet_v2 squeezenet1_1 gpt2_tiny vit_b_16 resnet50 bert_base}; do
  case $spec in
    *.onnx) model=$spec tag=$(basename "$(dirname "$spec")") ;;  # bench/out/dataset/NAME/model.onnx -> NAME
    *) model=zoo:$spec tag=$spec ;;
  esac
  for isa in avx512 avx2; do
    for mode in fused no-fusion; do
      flags=(); [ $mode = no-fusion ] && flags=(--no-fusion)
      dump "$old" "$model" $isa "${flags[@]}" > "$work/old.$tag.$isa.$mode"
      dump "$new" "$model" $isa "${flags[@]}" > "$work/new.$tag.$isa.$mode"
      n=$(grep -c '^--- schedule' "$work/old.$tag.$isa.$mode" || true)
      if cmp -s "$work/old.$tag.$isa.$mode" "$work/new.$tag.$isa.$mode"; then echo "SAME $tag $isa $mode ($n kernels)"
      else echo "DIFF $tag $isa $mode ($n kernels): diff $work/old.$tag.$isa.$mode $work/new.$tag.$isa.$mode"; fi
    done
  done
done
