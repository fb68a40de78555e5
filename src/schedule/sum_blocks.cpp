// A contraction's reduction summed in blocks (see sum_blocks.h).
#include "schedule/sum_blocks.h"

#include <algorithm>

namespace tessera::schedule {

namespace {

// Terms a block of the reduction sums before it joins the total: one chain
// over thousands of terms (a 3x3 convolution over 512 channels sums 4,608)
// rounds off about sqrt(terms) times as much as blocks of a few hundred. On
// by default wherever it applies: it brings every model of bench/RESULTS.md
// to ONNX Runtime's accuracy (bench/ACCURACY.md), whose kernels sum in
// blocks too.
constexpr int64_t kSumBlockTerms = 256;

// The constant extent of the reduction axis `name` (1 for no such axis).
int64_t reduce_axis_extent(const te::Stage& st, const std::string& name) {
  for (const auto& a : st.body.as<loop::ReduceNode>()->axes)
    if (a.var.name() == name) return *loop::as_const_int(a.extent);
  return 1;
}

}  // namespace

// Whether summing in blocks applies: a sum over constant extents longer than
// two blocks.
bool can_sum_blocks(const te::Stage& st) {
  const auto* red = st.body.as<loop::ReduceNode>();
  if (!red || red->op != loop::ReduceOp::Sum) return false;
  int64_t terms = 1;
  for (const auto& a : red->axes) {
    const int64_t* n = loop::as_const_int(a.extent);
    if (!n) return false;
    terms *= *n;
  }
  return terms >= 2 * kSumBlockTerms;
}

// Splits the local stage's reduction (loops `order`, outermost first, the
// first `reduce` of them reduction loops) into blocks of about
// kSumBlockTerms terms; returns the loop whose iterations are one block's
// terms (the accumulate loop), "" when the reduction is one block.
std::string sum_block_loop(Schedule& s, const te::Stage& st, const std::string& local, std::vector<std::string>& order,
                           size_t reduce) {
  int64_t inner = 1;
  for (size_t k = 1; k < reduce; ++k) inner *= reduce_axis_extent(st, order[k]);
  const int64_t outer = reduce_axis_extent(st, order[0]);
  int64_t f = std::max<int64_t>(1, kSumBlockTerms / inner);
  if (f >= outer) return reduce > 1 ? order[1] : "";
  while (outer % f != 0) --f;  // whole blocks: no guards in the reduction
  if (f == 1) return reduce > 1 ? order[1] : "";
  const std::string r = order[0];
  s.split(local, r, f);
  order[0] = outer_name(r);
  order.insert(order.begin() + 1, inner_name(r));
  return inner_name(r);
}

}  // namespace tessera::schedule
