// A collection's load guard (see load_guard.h).
#include "dataset/load_guard.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "runtime/latency_stats.h"

namespace tessera::dataset {

namespace {

std::string percent(double share) {
  char s[32];
  std::snprintf(s, sizeof s, "%.0f%%", share * 100);
  return s;
}

// The record's baselines when they can judge the machine: positive, finite.
bool judged(const tune::Record& r) {
  if (!r.paired() || r.baseline.empty()) return false;
  return std::all_of(r.baseline.begin(), r.baseline.end(), [](double b) { return std::isfinite(b) && b > 0; });
}

// max/min - 1 of the baselines.
double spread_of(const tune::Record& r) {
  const auto [lo, hi] = std::minmax_element(r.baseline.begin(), r.baseline.end());
  return *hi / *lo - 1;
}

}  // namespace

std::string disturbed(const tune::Record& r, double reference, const LoadGuard& g) {
  if (!judged(r)) return "";
  if (const double s = spread_of(r); s > g.spread) return "baselines spread " + percent(s);
  if (reference > 0) {
    const double off = runtime::percentile(r.baseline, 50) / reference - 1;
    if (std::abs(off) > g.drift)
      return "baseline median " + percent(std::abs(off)) + (off > 0 ? " over" : " under") + " the task's reference";
  }
  return "";
}

void GuardReferences::see(const tune::Record& r) {
  if (!judged(r) || spread_of(r) > guard_.spread) return;
  ref_.emplace(std::make_pair(r.task_key, r.target), runtime::percentile(r.baseline, 50));
}

double GuardReferences::of(const std::string& task_key, const std::string& target) const {
  auto it = ref_.find({task_key, target});
  return it == ref_.end() ? 0 : it->second;
}

}  // namespace tessera::dataset
