// Default schedules: for a tensor-expression program, the schedule the
// rules (schedule_rule.h) give at their default points — today's heuristics
// — when nothing better (a tuned record) is known; and the program's space
// of schedules for a tuner: its knobs, the schedule at a point, samples.
#pragma once

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "schedule/schedule_rule.h"
#include "schedule/target_info.h"
#include "te/tensor_expr.h"

namespace tessera::schedule {

// The default schedule for the program computing `outputs`.
Schedule default_schedule(const std::vector<te::Tensor>& outputs, const TargetInfo& target = {});

// One stage's place in a program's space: the rule that schedules it and its knobs.
struct StageSpace {
  std::string stage;
  std::string rule;
  std::vector<Knob> knobs;
};
// The knobs of every stage the default schedule of `outputs` schedules, in
// the order it schedules them.
std::vector<StageSpace> space_of(const std::vector<te::Tensor>& outputs, const TargetInfo& target);
// The schedule at `point`; nullopt when some value is invalid, or names a
// stage or knob the schedule does not have.
std::optional<Schedule> schedule_at(const std::vector<te::Tensor>& outputs, const TargetInfo& target,
                                    const SchedulePoint& point);
// `n` random valid points (each knob uniform over its values), the default
// point first, without repeats; fewer when the space is smaller or valid
// points are rare.
std::vector<SchedulePoint> schedule_candidates(const std::vector<te::Tensor>& outputs, const TargetInfo& target,
                                               int n, std::mt19937_64& rng);

}  // namespace tessera::schedule
