// A task's space of schedules, as the tuner searches it: the stages its
// default schedule schedules (in that order) with their rules' knobs.
//
// Points are written with stages by position ("#0 mr=4 nr=2"), not by name:
// stage names come from node names, and a record must apply to every task of
// its key, in any model. The empty point is the default schedule.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "compile/task.h"
#include "schedule/default_schedule.h"
#include "schedule/schedule.h"
#include "support/target.h"

namespace tessera::tune {

class TaskSpace {
 public:
  // The space of `task` on `machine`; throws when the default schedule
  // cannot be built (the task is not compilable).
  TaskSpace(const compile::Task& task, const Target& machine);

  const compile::Task& task() const { return *task_; }
  const std::vector<schedule::StageSpace>& stages() const { return stages_; }
  // Knobs with a choice (more than one value).
  int free_knobs() const;
  // log10 of the number of points (every combination of knob values).
  double log10_size() const;

  // The schedule at a positional point; nullopt when the point is invalid.
  std::optional<schedule::Schedule> schedule_at(const schedule::SchedulePoint& point) const;
  // A positional point with stage names, as schedule_at of default_schedule.h reads it.
  schedule::SchedulePoint named(const schedule::SchedulePoint& point) const;

  // Search moves (results may be invalid: check with schedule_at).
  // Every free knob uniform over its values.
  schedule::SchedulePoint random_point(std::mt19937_64& rng) const;
  // One free knob of `p` set to another of its values.
  schedule::SchedulePoint mutate(const schedule::SchedulePoint& p, std::mt19937_64& rng) const;
  // The default's one-knob neighbours: each free knob at the candidates
  // just below and just above its default, stage by stage, knob by knob.
  std::vector<schedule::SchedulePoint> neighbours() const;
  // Each stage's knobs from one parent or the other.
  schedule::SchedulePoint crossover(const schedule::SchedulePoint& a, const schedule::SchedulePoint& b,
                                    std::mt19937_64& rng) const;

 private:
  const compile::Task* task_;
  schedule::TargetInfo target_;
  std::vector<schedule::StageSpace> stages_;
};

// The positional name of the stage at `index` ("#3"); -1 for a name that is not one.
std::string stage_position(size_t index);
int stage_index(const std::string& name);

}  // namespace tessera::tune
