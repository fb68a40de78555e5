// What schedules know of where a kernel runs and of its program: the Target
// (ISA, vector width, registers, caches) and the inputs whose values are
// fixed.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "support/target.h"

namespace tessera::schedule {

struct TargetInfo : Target {
  TargetInfo() = default;
  TargetInfo(const Target& t) : Target(t) {}  // NOLINT: a Target is a TargetInfo without program facts
  int64_t parallel_grain = 1 << 15;       // fewer operations than this stay on one thread
  std::set<std::string> constant_inputs;  // placeholder names whose values are fixed (weights: packed once)
};

}  // namespace tessera::schedule
