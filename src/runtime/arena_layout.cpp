#include "runtime/arena_layout.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <limits>
#include <numeric>
#include <utility>

#include "support/error.h"
#include "support/int_div.h"

namespace tessera::runtime {

namespace {

// Bounds that keep every offset computation far from int64 overflow.
constexpr int64_t kMaxSize = int64_t{1} << 56;
constexpr int64_t kMaxTotal = int64_t{1} << 60;
constexpr int64_t kMaxAlignment = int64_t{1} << 30;

bool lifetimes_overlap(const BufferRequest& a, const BufferRequest& b) {
  return a.first_step <= b.last_step && b.first_step <= a.last_step;
}

void validate(const std::vector<BufferRequest>& requests, int64_t* total) {
  const auto n = static_cast<int64_t>(requests.size());
  *total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const BufferRequest& r = requests[static_cast<size_t>(i)];
    TESSERA_CHECK(r.size_bytes >= 0 && r.size_bytes <= kMaxSize, "arena layout: buffer ", i, " has size ",
                  r.size_bytes, " (must be in [0, 2^56])");
    TESSERA_CHECK(r.first_step >= 0 && r.last_step >= r.first_step &&
                      r.last_step < std::numeric_limits<int64_t>::max(),
                  "arena layout: buffer ", i, " has live range [", r.first_step, ", ", r.last_step,
                  "] (need 0 <= first_step <= last_step)");
    TESSERA_CHECK(r.alignment >= 1 && r.alignment <= kMaxAlignment && (r.alignment & (r.alignment - 1)) == 0,
                  "arena layout: buffer ", i, " has alignment ", r.alignment,
                  " (must be a power of two, at most 2^30)");
    TESSERA_CHECK(r.inplace_of == -1 || (r.inplace_of >= 0 && r.inplace_of < n && r.inplace_of != i),
                  "arena layout: buffer ", i, " names in-place target ", r.inplace_of, " (must be -1 or another of the ",
                  n, " buffers)");
    *total += r.size_bytes;
    TESSERA_CHECK(*total <= kMaxTotal, "arena layout: total size of the buffers exceeds 2^60 bytes");
  }
}

// Resolves the in-place hints: alias_of[j] = i for every honoured hint.
std::vector<int64_t> resolve_inplace(const std::vector<BufferRequest>& requests) {
  const size_t n = requests.size();
  std::vector<int64_t> alias_of(n, -1);
  std::vector<bool> overwritten(n, false);
  for (size_t j = 0; j < n; ++j) {
    const BufferRequest& r = requests[j];
    if (r.inplace_of < 0) continue;
    const auto i = static_cast<size_t>(r.inplace_of);
    const BufferRequest& t = requests[i];
    if (t.last_step == r.first_step && t.first_step < r.first_step && r.size_bytes <= t.size_bytes &&
        !overwritten[i]) {
      alias_of[j] = static_cast<int64_t>(i);
      overwritten[i] = true;
    }
  }
  return alias_of;
}

// A chain of buffers sharing one offset: a buffer that overwrites no other,
// then each buffer that overwrites the previous one.
struct Unit {
  std::vector<size_t> members;
  int64_t alignment = 1;
  int64_t max_size = 0;
  int64_t area = 0;  // sum of size * live steps: how much it constrains others
  size_t root = 0;
};

std::vector<Unit> build_units(const std::vector<BufferRequest>& requests, const std::vector<int64_t>& alias_of) {
  const size_t n = requests.size();
  std::vector<int64_t> next(n, -1);
  for (size_t j = 0; j < n; ++j)
    if (alias_of[j] >= 0) next[static_cast<size_t>(alias_of[j])] = static_cast<int64_t>(j);
  std::vector<Unit> units;
  for (size_t root = 0; root < n; ++root) {
    if (alias_of[root] >= 0) continue;
    Unit u;
    u.root = root;
    for (int64_t m = static_cast<int64_t>(root); m >= 0; m = next[static_cast<size_t>(m)]) {
      const BufferRequest& r = requests[static_cast<size_t>(m)];
      u.members.push_back(static_cast<size_t>(m));
      u.alignment = std::max(u.alignment, r.alignment);
      u.max_size = std::max(u.max_size, r.size_bytes);
      // Saturating: only an ordering key.
      const double steps = static_cast<double>(r.last_step - r.first_step) + 1.0;
      const double a = static_cast<double>(u.area) + static_cast<double>(r.size_bytes) * steps;
      u.area = a > 9e18 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(a);
    }
    units.push_back(std::move(u));
  }
  return units;
}

struct Placed {
  size_t index;  // request index
  int64_t offset;
  int64_t end;   // offset + size
};

enum class Fit { kBest, kFirst };

// Picks an offset for the unit given the buffers placed so far. Offsets o in
// [p.offset - s + 1, p.end - 1] are forbidden for each placed p, where s is
// the largest member whose lifetime overlaps p's.
int64_t choose_offset(const std::vector<BufferRequest>& requests, const Unit& u, const std::vector<Placed>& placed,
                      Fit fit) {
  std::vector<std::pair<int64_t, int64_t>> forbidden;
  for (const Placed& p : placed) {
    const BufferRequest& pr = requests[p.index];
    int64_t s = 0;
    for (size_t m : u.members) {
      const BufferRequest& mr = requests[m];
      if (mr.size_bytes > s && lifetimes_overlap(mr, pr)) s = mr.size_bytes;
    }
    if (s > 0) forbidden.emplace_back(p.offset - s + 1, p.end - 1);
  }
  std::sort(forbidden.begin(), forbidden.end());
  const int64_t a = u.alignment;
  int64_t cursor = 0;  // lowest offset not yet known to be forbidden
  int64_t best = -1, best_slack = 0;
  for (const auto& [lo, hi] : forbidden) {
    if (lo > cursor) {
      // Allowed region [cursor, lo - 1].
      const int64_t o = round_up(cursor, a);
      if (o <= lo - 1) {
        if (fit == Fit::kFirst) return o;
        const int64_t slack = lo - 1 - cursor;
        if (best < 0 || slack < best_slack) {
          best = o;
          best_slack = slack;
        }
      }
    }
    cursor = std::max(cursor, hi + 1);
  }
  return best >= 0 ? best : round_up(cursor, a);
}

// Places the units in the given order; returns the arena size.
int64_t place_units(const std::vector<BufferRequest>& requests, const std::vector<Unit>& units,
                    const std::vector<size_t>& order, Fit fit, std::vector<int64_t>& offsets) {
  std::vector<Placed> placed;
  int64_t arena = 0;
  for (size_t k : order) {
    const Unit& u = units[k];
    const int64_t o = u.max_size == 0 ? 0 : choose_offset(requests, u, placed, fit);
    for (size_t m : u.members) {
      offsets[m] = o;
      const int64_t size = requests[m].size_bytes;
      if (size == 0) continue;
      placed.push_back({m, o, o + size});
      arena = std::max(arena, o + size);
    }
  }
  return arena;
}

// Every unit after the previous one, in request order: no reuse between
// units, so the planned arena is never worse than this.
int64_t place_sequential(const std::vector<BufferRequest>& requests, const std::vector<Unit>& units,
                         std::vector<int64_t>& offsets) {
  int64_t cursor = 0;
  for (const Unit& u : units) {
    const int64_t o = u.max_size == 0 ? 0 : round_up(cursor, u.alignment);
    for (size_t m : u.members) offsets[m] = o;
    if (u.max_size > 0) cursor = o + u.max_size;
  }
  return cursor;
}

int64_t lower_bound(const std::vector<BufferRequest>& requests, const std::vector<int64_t>& alias_of) {
  std::vector<std::pair<int64_t, int64_t>> events;  // (step, delta)
  for (size_t i = 0; i < requests.size(); ++i) {
    const BufferRequest& r = requests[i];
    if (r.size_bytes == 0) continue;
    events.emplace_back(r.first_step, r.size_bytes);
    events.emplace_back(r.last_step + 1, -r.size_bytes);
    // Overwriting a live target takes no new bytes at the handover step.
    if (alias_of[i] >= 0) {
      events.emplace_back(r.first_step, -r.size_bytes);
      events.emplace_back(r.first_step + 1, r.size_bytes);
    }
  }
  std::sort(events.begin(), events.end());
  int64_t live = 0, peak = 0;
  for (size_t e = 0; e < events.size(); ++e) {
    live += events[e].second;
    if (e + 1 == events.size() || events[e + 1].first != events[e].first) peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace

ArenaLayout layout_arena(const std::vector<BufferRequest>& requests) {
  ArenaLayout plan;
  validate(requests, &plan.total_bytes);
  plan.alias_of = resolve_inplace(requests);
  plan.inplace_honoured =
      std::count_if(plan.alias_of.begin(), plan.alias_of.end(), [](int64_t a) { return a >= 0; });
  plan.lower_bound_bytes = lower_bound(requests, plan.alias_of);

  const std::vector<Unit> units = build_units(requests, plan.alias_of);
  std::vector<size_t> by_size(units.size());
  std::iota(by_size.begin(), by_size.end(), size_t{0});
  std::vector<size_t> by_area = by_size;
  std::stable_sort(by_size.begin(), by_size.end(), [&](size_t a, size_t b) {
    return units[a].max_size > units[b].max_size;
  });
  std::stable_sort(by_area.begin(), by_area.end(), [&](size_t a, size_t b) {
    return units[a].area > units[b].area;
  });

  plan.offsets.assign(requests.size(), 0);
  plan.arena_bytes = place_sequential(requests, units, plan.offsets);
  std::vector<int64_t> offsets(requests.size(), 0);
  for (const auto* order : {&by_size, &by_area}) {
    for (Fit fit : {Fit::kBest, Fit::kFirst}) {
      const int64_t arena = place_units(requests, units, *order, fit, offsets);
      if (arena < plan.arena_bytes) {
        plan.arena_bytes = arena;
        plan.offsets = offsets;
      }
    }
  }
  return plan;
}

std::string describe(const ArenaLayout& plan) {
  return "peak " + format_bytes(plan.arena_bytes) + " (no reuse: " + format_bytes(plan.total_bytes) +
         ", lower bound " + format_bytes(plan.lower_bound_bytes) + ")";
}

}  // namespace tessera::runtime
