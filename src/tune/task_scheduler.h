// Which task gets the next round of the tuning budget: Ansor's gradient task
// scheduler. The model's latency is the sum over tasks of weight × best cost;
// each task's expected gain from one more round is estimated from how much
// its best cost fell over its last rounds (backward) and an optimistic
// guess that it keeps falling in proportion to its cost (forward), and the
// task with the largest weighted gain goes next. Every task gets one round
// first (its default measured), heaviest first.
#pragma once

#include <cstddef>
#include <vector>

namespace tessera::tune {

class TaskScheduler {
 public:
  // `weights`: how often each task runs in the model.
  explicit TaskScheduler(std::vector<double> weights, double alpha = 0.2, int window = 3);

  // The next task, or -1 when every task is done (exhausted).
  int next();
  // After a round of task `t`: its best cost so far (infinity: none valid).
  void update(size_t t, double best_cost);
  // No more rounds for task `t` (its space is used up).
  void retire(size_t t);

  double weighted_latency() const;  // sum of weight × best cost over tasks with one
  const std::vector<double>& best() const { return best_; }

 private:
  double gain(size_t t) const;

  std::vector<double> weights_;
  double alpha_;
  int window_;
  std::vector<std::vector<double>> history_;  // per task: best cost after each of its rounds
  std::vector<double> best_;
  std::vector<bool> retired_;
};

}  // namespace tessera::tune
