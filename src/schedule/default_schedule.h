// Default schedules: for a tensor-expression program, the schedule each op
// class gets when nothing better (a tuned record) is known. Rules are chosen
// by the op class the stage declares (te::OpClass), with a generic
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
  // Cache sizes the blocking of large matrix products plans for: a core's
  // second level, and the share of the last level one product may count on.
  int64_t l2_bytes = int64_t{1} << 20;
  int64_t l3_bytes = int64_t{16} << 20;
};

// The default schedule for the program computing `outputs`.
Schedule default_schedule(const std::vector<te::Tensor>& outputs, const TargetInfo& target = {});

}  // namespace tessera::schedule
