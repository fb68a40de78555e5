// Ansor's gradient task scheduler (see task_scheduler.h).
#include "tune/task_scheduler.h"

#include <cmath>
#include <limits>

namespace tessera::tune {

TaskScheduler::TaskScheduler(std::vector<double> weights, double alpha, int window)
    : weights_(std::move(weights)), alpha_(alpha), window_(window), history_(weights_.size()),
      best_(weights_.size(), std::numeric_limits<double>::infinity()), retired_(weights_.size(), false) {}

double TaskScheduler::gain(size_t t) const {
  const std::vector<double>& h = history_[t];
  const double b = best_[t];
  if (!std::isfinite(b)) return 0;
  const size_t n = h.size();
  // Backward: the fall of the best cost per round over the last `window` rounds.
  double backward = 0;
  if (n > 1) {
    size_t from = n > static_cast<size_t>(window_) ? n - 1 - static_cast<size_t>(window_) : 0;
    double before = h[from];
    if (std::isfinite(before)) backward = (before - b) / static_cast<double>(n - 1 - from);
  }
  // Forward: an optimistic share of the cost, shrinking as rounds add up.
  const double forward = b / static_cast<double>(n + 1);
  return weights_[t] * (alpha_ * backward + (1 - alpha_) * forward);
}

int TaskScheduler::next() {
  // First rounds: untried tasks, heaviest first (weight alone: nothing is measured yet).
  int pick = -1;
  for (size_t t = 0; t < weights_.size(); ++t)
    if (!retired_[t] && history_[t].empty() && (pick < 0 || weights_[t] > weights_[static_cast<size_t>(pick)]))
      pick = static_cast<int>(t);
  if (pick >= 0) return pick;
  double best_gain = -1;
  for (size_t t = 0; t < weights_.size(); ++t) {
    if (retired_[t]) continue;
    double g = gain(t);
    if (g > best_gain) {
      best_gain = g;
      pick = static_cast<int>(t);
    }
  }
  return pick;
}

void TaskScheduler::update(size_t t, double best_cost) {
  history_[t].push_back(best_cost);
  best_[t] = best_cost;
}

void TaskScheduler::retire(size_t t) { retired_[t] = true; }

double TaskScheduler::weighted_latency() const {
  double s = 0;
  for (size_t t = 0; t < weights_.size(); ++t)
    if (std::isfinite(best_[t])) s += weights_[t] * best_[t];
  return s;
}

}  // namespace tessera::tune
