#!/usr/bin/env bash
# Load time of a compiled artifact against ONNX Runtime's session creation,
# each in fresh processes, medians of N (default 7):
#   tessera: the "opened" line of `tessera run FILE.tsr --report` (the whole
#            CompiledModel::load: map, graph, plans, link), and its split;
#   ORT:     one InferenceSession.create per node process (bench/ort_session_time.js).
# Usage: bench/load_time.sh TESSERA_BINARY NAME=FILE.tsr:MODEL.onnx ...
# Needs bench/node_modules (cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm ci).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tessera=$1
shift
N=${N:-7}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '| model | tessera open (ms) | ORT create (ms) | tessera split (one run) |\n|---|---|---|---|\n'
for spec in "$@"; do
  name=${spec%%=*} files=${spec#*=}
  tsr=${files%%:*} onnx=${files#*:}
  t=$(for _ in $(seq "$N"); do "$tessera" run "$tsr" --report 2>/dev/null | awk '/^opened/ {print $2}'; done | median)
  split=$("$tessera" run "$tsr" --report 2>/dev/null | sed -n 's/^opened *[0-9.]* ms: //p')
  o=$(for _ in $(seq "$N"); do node "$here/ort_session_time.js" "$onnx" 1 2 | awk '{print $NF}'; done | median)
  printf '| %s | %s | %s | %s |\n' "$name" "$t" "$o" "$split"
done
