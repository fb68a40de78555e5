// Evolutionary search over one task's space (task_space.h): a population of
// the best points measured so far, from which each round's candidates are
// bred — a knob changed (mutation), stages mixed from two parents
// (crossover), now and then a fresh random point — deduplicated by the
// schedule they give. The caller measures them (or predicts their costs)
// and reports back. The default schedule comes first, so the best is never
// worse than it; then the openings: the rules' seed points (seeds.h) and the
// default's one-knob neighbours, before anything bred or random (a short
// budget gives a task about ten candidates).
#pragma once

#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tune/task_space.h"

namespace tessera::tune {

struct SearchOptions {
  int population = 24;        // best points kept to breed from
  double mutation = 0.75;     // share of children made by mutation (the rest: crossover / random)
  double random_share = 0.1;  // of children drawn fresh
  bool openings = true;       // seeds and the default's neighbours before the rest (off: random samples)
};

class TaskSearch {
 public:
  TaskSearch(const TaskSpace& space, uint64_t seed, SearchOptions options = {});

  // Up to `n` valid points not proposed before (fewer when the space is
  // used up): the default point, the openings, then bred and random points.
  std::vector<schedule::SchedulePoint> propose(int n);
  // The cost of a proposed point, measured or predicted (infinity: an error).
  void observe(const schedule::SchedulePoint& p, double cost);

  double best_cost() const { return best_cost_; }
  // The best points observed, best first (at most SearchOptions::population).
  const std::vector<std::pair<double, schedule::SchedulePoint>>& population() const { return population_; }
  const schedule::SchedulePoint& best_point() const { return best_point_; }
  int proposed() const { return static_cast<int>(seen_.size()); }
  bool exhausted() const { return exhausted_; }

 private:
  // A bred or random point, valid and new (by its schedule's text); false after many tries.
  bool breed(schedule::SchedulePoint& out);
  bool accept(const schedule::SchedulePoint& p);

  const TaskSpace& space_;
  std::mt19937_64 rng_;
  SearchOptions options_;
  std::vector<std::pair<double, schedule::SchedulePoint>> population_;  // best first
  std::set<std::string> seen_;  // schedules proposed, by text
  std::vector<schedule::SchedulePoint> openings_;  // seeds then neighbours, made at the first propose
  size_t next_opening_ = 0;
  bool opened_ = false;
  double best_cost_ = std::numeric_limits<double>::infinity();
  schedule::SchedulePoint best_point_;
  bool exhausted_ = false;
};

}  // namespace tessera::tune
