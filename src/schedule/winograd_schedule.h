// Schedules of the Winograd transforms (ops/winograd.h): their per-point
// select chains fold only when the point loops are unrolled.
#pragma once

#include <memory>

#include "schedule/schedule_rule.h"

namespace tessera::schedule {

// Schedules the Winograd transform `st` (class WinogradInput or
// WinogradOutput); `tiled` is the stage whose loops write its values — st
// itself, or the sink of an elementwise epilogue st is inlined into. The
// input transform runs one tile of all 36 points per iteration (the point
// loop unrolled), the output transform one 4x4 tile (its rows and columns
// unrolled); the lanes are the vector and the tiles run in parallel when
// there are `parallel_grain` operations or more. False when the stage is
// not a transform whose last dim is one vector of `lanes`.
bool schedule_winograd_transform(Schedule& s, const te::Stage& st, const te::Stage& tiled, int64_t lanes,
                                 int64_t parallel_grain);

// The rule: the transforms as above, finished by their epilogue (a transform
// with none that is not an output is computed at root); no knobs.
std::unique_ptr<ScheduleRule> make_winograd_rule();

}  // namespace tessera::schedule
