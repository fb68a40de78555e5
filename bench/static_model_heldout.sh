#!/bin/bash
# The static cost model judged on networks it was not fitted on, from the cost-model dataset
# (bench/out/dataset, `tessera dataset collect`): the static features of each network's
# 1-thread records are dumped once per ISA (`tessera tune-fit --dump-features`, pinned to one
# CPU so that the machine's target is the dataset's 1-thread one; a few minutes a network),
# then the model is fitted on some networks' dumps and judged on the others' (`--features`,
# no compilation): squeezenet1_1+resnet18+mobilenet_v2 against resnet50+bert_base both ways,
# and each network left out of a fit on the other four (pooled: pairs weigh the pairwise
# accuracy, tasks the peak scores).
#
# usage: bench/static_model_heldout.sh [OUT_DIR] [-- tune-fit options, e.g. --hidden-units 4]
#   TESSERA (default build/tessera), DATASET (default bench/out/dataset), ISAS (default "avx512 avx2")
set -euo pipefail
OUT=${1:-bench/out/static_heldout}
shift || true
[ "${1:-}" = "--" ] && shift
TESSERA=${TESSERA:-build/tessera}
DATASET=${DATASET:-bench/out/dataset}
ISAS=${ISAS:-avx512 avx2}
NETS="squeezenet1_1 resnet18 mobilenet_v2 resnet50 bert_base"
# Any known description names the coefficients' entry: the features already hold the probed estimate.
KEY="--hardware xeon-e5-2673-v4"
mkdir -p "$OUT"

dump() {  # dump ISA NET: the features of the network's 1-thread records on this machine
  local isa=$1 net=$2 file="$OUT/features.$2.$1.jsonl"
  [ -s "$file" ] && return
  echo "dumping $net ($isa) ..." >&2
  taskset -c 0 "$TESSERA" tune-fit "$DATASET/${net}_b1_"*/model.onnx --records "$DATASET/all.jsonl" --isa "$isa" \
    --threads 1 --coefficients "$OUT/dump.coefficients.json" --dump-features "$file" > "$OUT/dump.$net.$isa.txt" 2>&1
}

features() {  # features ISA NET...: --features flags
  local isa=$1; shift
  for n in "$@"; do echo -n " --features $OUT/features.$n.$isa.jsonl"; done
}

pool() {  # pools judge reports: the by-op table's pairs weigh the pairwise accuracy, tasks the peaks
  awk '/tasks, .* candidates/ { T += $1; t = $1 }
       /pairwise .* peak@1/ { P1 += t * $4; P5 += t * $6 }
       /^  [^ ]+ +[0-9]+ +[0-9.]+ +[0-9.]+$/ { d += $2 * $3; f += $2 * $4; n += $2 }
       END { printf "%d tasks, %d pairs: pairwise %.3f (default %.3f)   peak@1 %.3f   peak@5 %.3f\n",
             T, n, f / n, d / n, P1 / T, P5 / T }' "$@"
}

fit_judge() {  # fit_judge ISA NAME "FIT NETS" "JUDGE NETS" [options]: the judge report in $OUT/judge.NAME.ISA.txt
  local isa=$1 name=$2 fit=$3 judge=$4; shift 4
  local c="$OUT/coefficients.$name.$isa.json"
  rm -f "$c"
  # shellcheck disable=SC2046
  "$TESSERA" tune-fit $(features "$isa" $fit) --isa "$isa" $KEY --coefficients "$c" "$@" > "$OUT/fit.$name.$isa.txt" 2>&1
  # shellcheck disable=SC2046
  "$TESSERA" tune-fit $(features "$isa" $judge) --isa "$isa" $KEY --coefficients "$c" --judge \
    > "$OUT/judge.$name.$isa.txt" 2>&1
}

for isa in $ISAS; do
  for n in $NETS; do dump "$isa" "$n"; done
  A="squeezenet1_1 resnet18 mobilenet_v2" B="resnet50 bert_base"
  fit_judge "$isa" A_to_B "$A" "$B" "$@"
  fit_judge "$isa" B_to_A "$B" "$A" "$@"
  for n in $NETS; do
    fit_judge "$isa" "without_$n" "$(echo $NETS | tr ' ' '\n' | grep -vx "$n" | tr '\n' ' ')" "$n" "$@"
  done
  echo "## $isa"
  echo "fit on $A, judged on $B:   $(pool "$OUT/judge.A_to_B.$isa.txt")"
  echo "fit on $B, judged on $A:   $(pool "$OUT/judge.B_to_A.$isa.txt")"
  for n in $NETS; do echo "  $n left out: $(pool "$OUT/judge.without_$n.$isa.txt")"; done
  echo "each network left out, pooled:   $(pool "$OUT"/judge.without_*."$isa".txt)"
done
