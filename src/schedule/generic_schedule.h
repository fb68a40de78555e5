// The rules for stages that are not tiled: the generic rule (fused spatial
// loops, a vector-wide inner loop, a parallel outer loop), row reductions
// (rfactor into vector-wide partial results) and lane reductions (vectors
// of outputs accumulated across outer axes).
#pragma once

#include <memory>
#include <string>

#include "schedule/schedule_rule.h"

namespace tessera::schedule {

// The generic rule's knobs for `st`: rows (each row split into vectors,
// rather than the fused loop), vec (vector length in vectors), parallel,
// tile (rows of a 2-D tile over the last two axes, vectors of the last axis
// across; 0, the default, for none) and, for a stage whose guard cuts test
// one axis (a concatenation, unswitch_guards.h), partition (the loops split
// after that axis; on by default).
std::vector<Knob> generic_knobs(const te::Stage& st, const TargetInfo& target);
// Schedules `st` by the generic rule at `values` (see generic_knobs);
// returns the outermost loop it leaves ("" for a stage without loops).
// The values must be valid (generic_valid).
std::string schedule_generic(Schedule& s, const te::Stage& st, const TargetInfo& target, const KnobValues& values = {});
bool generic_valid(const te::Stage& st, const TargetInfo& target, const KnobValues& values);

// Fuses the stage's first `count` axes into one loop; returns its name.
std::string fuse_leading(Schedule& s, const te::Stage& st, size_t count);
// The vector-wide partial results of an rfactor'ed reduction (stage.rf):
// computed inside the stage's `loop` ("" : at root), its other reduction
// axes outside the split last one, the lanes vectorized.
void place_partials(Schedule& s, const te::Stage& st, const std::string& loop);

std::unique_ptr<ScheduleRule> make_generic_rule();
std::unique_ptr<ScheduleRule> make_row_reduction_rule();
std::unique_ptr<ScheduleRule> make_lane_reduction_rule();

}  // namespace tessera::schedule
