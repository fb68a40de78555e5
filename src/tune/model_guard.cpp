// The model guard (see model_guard.h).
#include "tune/model_guard.h"

#include <algorithm>
#include <deque>

namespace tessera::tune {

namespace {

std::vector<size_t> joined(std::vector<size_t> a, const std::vector<size_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

GuardResult guard_choices(std::vector<GuardChoice> choices, const CompareChoices& compare,
                          const GuardOptions& options) {
  GuardResult r;
  if (choices.empty()) return r;
  std::stable_sort(choices.begin(), choices.end(),
                   [](const GuardChoice& a, const GuardChoice& b) { return a.claimed_gain > b.claimed_gain; });
  std::vector<size_t> all;
  for (const GuardChoice& c : choices) all.push_back(c.task);
  auto judge = [&](const std::vector<size_t>& with, const std::vector<size_t>& base) {
    ++r.comparisons;
    return compare(with, base);
  };
  r.ratio = judge(all, {});
  if (r.ratio < 1) {
    r.kept = all;
    return r;
  }
  if (all.size() == 1) {  // judged already
    r.dropped = all;
    r.ratio = 1;
    return r;
  }
  // Groups of consecutive choices (by claimed gain), judged in order; at
  // least two (one group would be all of them, judged already).
  const size_t n_groups = std::clamp<size_t>(static_cast<size_t>(std::max(options.groups, 2)), 2, all.size());
  std::deque<std::vector<size_t>> pending;
  for (size_t g = 0; g < n_groups; ++g)
    pending.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(g * all.size() / n_groups),
                         all.begin() + static_cast<std::ptrdiff_t>((g + 1) * all.size() / n_groups));
  std::vector<size_t> kept;
  // One comparison is held back for the closing one.
  while (!pending.empty() && r.comparisons + 1 < options.max_comparisons) {
    std::vector<size_t> group = std::move(pending.front());
    pending.pop_front();
    if (judge(joined(kept, group), kept) < 1) {
      kept = joined(kept, group);
    } else if (group.size() > 1) {
      const auto half = group.begin() + static_cast<std::ptrdiff_t>(group.size() / 2);
      pending.emplace_front(half, group.end());
      pending.emplace_front(group.begin(), half);
    } else {
      r.dropped.push_back(group[0]);
    }
  }
  for (const std::vector<size_t>& g : pending) r.dropped.insert(r.dropped.end(), g.begin(), g.end());
  r.ratio = 1;
  if (!kept.empty()) {
    r.ratio = judge(kept, {});
    if (r.ratio >= 1) {
      r.dropped.insert(r.dropped.end(), kept.begin(), kept.end());
      kept.clear();
      r.ratio = 1;
    }
  }
  r.kept = std::move(kept);
  return r;
}

}  // namespace tessera::tune
