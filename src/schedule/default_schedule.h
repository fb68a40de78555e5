// Default schedules: for a tensor-expression program, the schedule each op
// class gets when nothing better (a tuned record) is known. Rules are chosen
// by the stage's tag (elemwise, reduce, matmul, conv2d ...), with a generic
// rule for the rest.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "te/tensor_expr.h"

namespace tessera::schedule {

struct TargetInfo {
  int vector_bytes = 64;          // 64 for AVX-512, 32 for AVX2
  int64_t parallel_grain = 1 << 15;  // fewer operations than this stay on one thread
  std::set<std::string> constant_inputs;  // placeholder names whose values are fixed (weights: packed once)
};

// The default schedule for the program computing `outputs`.
Schedule default_schedule(const std::vector<te::Tensor>& outputs, const TargetInfo& target = {});

}  // namespace tessera::schedule
