// Register-tiled contractions (GEMM, convolution) and pools: the output in
// mr x nr tiles accumulated in registers, with the elementwise epilogue that
// can finish each tile, the constant operand packed, and large products
// cache-blocked (gemm_schedule.h).
#pragma once

#include <vector>

#include "schedule/default_schedule.h"
#include "te/tensor_expr.h"

namespace tessera::schedule {

// The elementwise output that can finish a contraction tile by tile: the
// stages reading `st`, and those reading them in turn, are of its shape,
// without reductions, read each other only at their own output position
// (bias, activation, residual add, x * sigmoid(x)), and all end in one
// output stage, into which the others are inlined. Null when there is none.
const te::Stage* epilogue_of(const std::vector<te::Tensor>& outputs, const std::vector<te::StagePtr>& stages,
                             const te::Stage& st);

// Schedules `st` (a sum-reduction of class MatMul or a convolution, or a pool) as
// register tiles, finished by `epilogue` when not null; false when it is
// not such a stage or has no vector-wide tile.
bool schedule_contraction(Schedule& s, const te::Stage& st, const TargetInfo& target, const te::Stage* epilogue);

}  // namespace tessera::schedule
