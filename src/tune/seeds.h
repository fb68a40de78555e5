// Seed points: per schedule rule, a few partial knob assignments the search
// tries right after the default, before its one-knob neighbours and long
// before random points. They are the combinations a short budget would
// otherwise never reach: wins that need two or three knobs changed together
// (one output block with the widest run of pixels), or a knob's far end
// (the largest tile that fits) where random values over a wide range are
// mostly poor.
//
// A seed names knobs and values; a knob the stage does not have, or a value
// that is not among the knob's candidates, leaves the seed out for that
// stage, and a point the rule cannot build is left out too (the table may
// name knobs a rule does not have yet).
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "schedule/schedule_rule.h"
#include "tune/task_space.h"

namespace tessera::tune {

// A seed knob's value: a candidate value, or kLargestValid — the largest
// candidate for which the point is valid (at most one such knob a seed).
inline constexpr int64_t kLargestValid = std::numeric_limits<int64_t>::max();

struct SeedKnob {
  std::string_view knob;
  int64_t value = 0;
};

// A partial point of one stage scheduled by `rule`.
struct Seed {
  std::string_view rule;
  std::vector<SeedKnob> knobs;
};

// The seeds of every rule, in the order they are tried.
const std::vector<Seed>& seed_table();

// The seed points of `space`: each seed of the table applied to each stage
// its rule schedules (that stage alone, the others at their defaults), in
// stage order then table order; only valid points, each a positional point
// of the space. Duplicates (by schedule) are the caller's to drop.
std::vector<schedule::SchedulePoint> seed_points(const TaskSpace& space,
                                                 const std::vector<Seed>& table = seed_table());

}  // namespace tessera::tune
