// The elementwise epilogue that can finish a contraction's (or pool's)
// register tile: bias, activation, residual add, computed on the tile while
// its accumulators are in registers, instead of a pass of its own.
#pragma once

#include <vector>

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

}  // namespace tessera::schedule
