// Evolutionary search over one task's space (see search.h).
#include "tune/search.h"

#include <algorithm>

#include "tune/seeds.h"

namespace tessera::tune {

TaskSearch::TaskSearch(const TaskSpace& space, uint64_t seed, SearchOptions options)
    : space_(space), rng_(seed), options_(options) {}

bool TaskSearch::accept(const schedule::SchedulePoint& p) {
  std::optional<schedule::Schedule> s = space_.schedule_at(p);
  return s && seen_.insert(schedule::to_text(*s)).second;
}

bool TaskSearch::breed(schedule::SchedulePoint& out) {
  std::uniform_real_distribution<double> u(0, 1);
  for (int attempt = 0; attempt < 64; ++attempt) {
    schedule::SchedulePoint p;
    const double r = u(rng_);
    if (population_.empty() || r < options_.random_share) {
      p = space_.random_point(rng_);
    } else {
      // Parents drawn with a bias to the best (the square of a uniform index).
      auto parent = [&]() -> const schedule::SchedulePoint& {
        double x = u(rng_);
        return population_[static_cast<size_t>(x * x * static_cast<double>(population_.size()))].second;
      };
      if (r < options_.random_share + options_.mutation || population_.size() < 2) p = space_.mutate(parent(), rng_);
      else p = space_.mutate(space_.crossover(parent(), parent(), rng_), rng_);
    }
    if (accept(p)) {
      out = std::move(p);
      return true;
    }
  }
  return false;
}

std::vector<schedule::SchedulePoint> TaskSearch::propose(int n) {
  std::vector<schedule::SchedulePoint> out;
  if (seen_.empty() && n > 0 && accept({})) out.push_back({});  // the default schedule first
  if (space_.free_knobs() == 0) {
    exhausted_ = true;
    return out;
  }
  if (!opened_ && options_.openings) {
    opened_ = true;
    openings_ = seed_points(space_);
    for (schedule::SchedulePoint& p : space_.neighbours()) openings_.push_back(std::move(p));
  }
  while (static_cast<int>(out.size()) < n && next_opening_ < openings_.size()) {
    const schedule::SchedulePoint& p = openings_[next_opening_++];
    if (accept(p)) out.push_back(p);
  }
  while (static_cast<int>(out.size()) < n) {
    schedule::SchedulePoint p;
    if (!breed(p)) {
      exhausted_ = out.empty();
      break;
    }
    out.push_back(std::move(p));
  }
  return out;
}

void TaskSearch::observe(const schedule::SchedulePoint& p, double cost) {
  if (cost < best_cost_) {
    best_cost_ = cost;
    best_point_ = p;
  }
  if (!(cost < std::numeric_limits<double>::infinity())) return;
  population_.emplace_back(cost, p);
  std::stable_sort(population_.begin(), population_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  if (static_cast<int>(population_.size()) > options_.population) population_.resize(static_cast<size_t>(options_.population));
}

}  // namespace tessera::tune
