// Register-tiled contractions (GEMM, convolution) and pools: the output in
// mr x nr tiles accumulated in registers, with the elementwise epilogue that
// can finish each tile, the constant operand packed, and large products
// cache-blocked (gemm_schedule.h).
#pragma once

#include <memory>
#include <vector>

#include "schedule/schedule_rule.h"
#include "te/tensor_expr.h"

namespace tessera::schedule {

// The elementwise output that can finish a contraction tile by tile: the
// stages reading `st`, and those reading them in turn, are of its shape,
// without reductions (but a pool's finish over a small window: MaxPool's NaN
// check), read each other only at their own output position
// (bias, activation, residual add, x * sigmoid(x)), and all end in one
// output stage, into which the others are inlined; only that output may be
// read by stages outside the chain. Null when there is none.
const te::Stage* epilogue_of(const std::vector<te::Tensor>& outputs, const std::vector<te::StagePtr>& stages,
                             const te::Stage& st);

// The rule: `st` (a sum-reduction of class MatMul or a convolution, or a
// pool) as register tiles, finished by its epilogue when it has one; large
// products cache-blocked. Knobs in contraction_schedule.cpp.
std::unique_ptr<ScheduleRule> make_contraction_rule();

}  // namespace tessera::schedule
