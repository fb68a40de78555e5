// Evolutionary search over one task's space (see search.h).
#include "tune/search.h"

#include <algorithm>
#include <numeric>

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

std::vector<schedule::SchedulePoint> TaskSearch::propose(int n, const Ranker& rank) {
  std::vector<schedule::SchedulePoint> out;
  if (seen_.empty() && n > 0 && accept({})) out.push_back({});  // the default schedule first
  if (space_.free_knobs() == 0) {
    exhausted_ = true;
    return out;
  }
  const int want = n - static_cast<int>(out.size());
  const int pool_size = rank ? want * options_.pool_factor : want;
  std::vector<schedule::SchedulePoint> pool;
  for (int i = 0; i < pool_size; ++i) {
    schedule::SchedulePoint p;
    if (!breed(p)) {
      exhausted_ = pool.empty() && out.empty();
      break;
    }
    pool.push_back(std::move(p));
  }
  if (!rank || static_cast<int>(pool.size()) <= want) {
    for (auto& p : pool) out.push_back(std::move(p));
    return out;
  }
  std::vector<double> score = rank(pool);
  std::vector<size_t> order(pool.size());
  std::iota(order.begin(), order.end(), 0);
  if (score.size() == pool.size())
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score[a] < score[b]; });
  // The best predicted, and a few at random from the rest (the model may be wrong).
  const int explore = static_cast<int>(options_.explore * want);
  for (int i = 0; i < want - explore; ++i) out.push_back(pool[order[static_cast<size_t>(i)]]);
  std::vector<size_t> rest(order.begin() + (want - explore), order.end());
  std::shuffle(rest.begin(), rest.end(), rng_);
  for (int i = 0; i < explore && i < static_cast<int>(rest.size()); ++i) out.push_back(pool[rest[static_cast<size_t>(i)]]);
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
