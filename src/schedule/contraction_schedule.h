// Register-tiled contractions (GEMM, convolution) and pools: the output in
// mr x nr tiles accumulated in registers (contraction_tile.h), with the
// elementwise epilogue that can finish each tile (tile_epilogue.h), the
// constant operand packed, and large products cache-blocked
// (gemm_schedule.h).
#pragma once

#include <memory>

#include "schedule/schedule_rule.h"

namespace tessera::schedule {

// The rule: `st` (a sum-reduction of class MatMul or a convolution, or a
// pool) as register tiles, finished by its epilogue when it has one; large
// products cache-blocked. Knobs in contraction_schedule.cpp.
std::unique_ptr<ScheduleRule> make_contraction_rule();

}  // namespace tessera::schedule
