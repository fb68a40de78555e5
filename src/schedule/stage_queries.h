// Questions the default schedules ask of a stage: is it an output, how many
// lanes its type has, how long its reduction is, which reads index with
// which variables.
#pragma once

#include <cstdint>
#include <vector>

#include "schedule/default_schedule.h"
#include "te/tensor_expr.h"

namespace tessera::schedule {

// True when `s` computes one of `outputs`.
bool is_output(const std::vector<te::Tensor>& outputs, const te::Stage* s);
// Lanes of a vector of `dtype` elements on the target.
int64_t lanes_of(const TargetInfo& target, DType dtype);
// Iterations of the stage's top-level reduction (1 without one; constant axes only).
int64_t reduce_extent(const te::Stage& s);
// True when some read of `in` in `st` has an index that uses `v`.
bool reads_use(const te::Stage& st, const te::Stage& in, const loop::Var& v);
// The dimension of `in` that every read of it in `st` indexes with exactly
// `v`; -1 when none does or the reads disagree.
int dim_indexed_by(const te::Stage& st, const te::Stage& in, const loop::Var& v);

}  // namespace tessera::schedule
