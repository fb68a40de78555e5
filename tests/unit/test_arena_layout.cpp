// The static memory planner: hand cases (chains reuse memory, in-place hints,
// zero sizes, alignment, invalid requests) and hundreds of seeded random
// request sets checked by an independent verifier (no two simultaneously
// live buffers share bytes unless one overwrites the other in place,
// alignment, lower bound <= arena <= memory without reuse).
#include "runtime/arena_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "support/error.h"

namespace tessera::runtime {
namespace {

BufferRequest req(int64_t size, int64_t first, int64_t last, int64_t inplace_of = -1, int64_t alignment = 64) {
  BufferRequest r;
  r.size_bytes = size;
  r.first_step = first;
  r.last_step = last;
  r.alignment = alignment;
  r.inplace_of = inplace_of;
  return r;
}

// Live bytes per step by brute force, an overwriting buffer counting zero
// while its target is live.
int64_t brute_lower_bound(const std::vector<BufferRequest>& rs, const std::vector<int64_t>& alias_of) {
  int64_t max_step = 0;
  for (const auto& r : rs) max_step = std::max(max_step, r.last_step);
  int64_t peak = 0;
  for (int64_t s = 0; s <= max_step; ++s) {
    int64_t live = 0;
    for (size_t i = 0; i < rs.size(); ++i) {
      if (s < rs[i].first_step || s > rs[i].last_step) continue;
      const int64_t t = alias_of[i];
      if (t >= 0 && s <= rs[static_cast<size_t>(t)].last_step) continue;
      live += rs[i].size_bytes;
    }
    peak = std::max(peak, live);
  }
  return peak;
}

// Checks every property a plan must have, recording a test failure for each
// one that does not hold.
void verify(const std::vector<BufferRequest>& rs, const ArenaLayout& plan) {
  const size_t n = rs.size();
  ASSERT_EQ(plan.offsets.size(), n);
  ASSERT_EQ(plan.alias_of.size(), n);
  int64_t total = 0, end = 0, honoured = 0;
  for (size_t i = 0; i < n; ++i) {
    total += rs[i].size_bytes;
    EXPECT_GE(plan.offsets[i], 0) << "buffer " << i;
    EXPECT_EQ(plan.offsets[i] % rs[i].alignment, 0) << "buffer " << i << " misaligned";
    if (rs[i].size_bytes > 0) end = std::max(end, plan.offsets[i] + rs[i].size_bytes);
    const int64_t t = plan.alias_of[i];
    if (t < 0) continue;
    ++honoured;
    // An honoured hint must be the request's own and feasible.
    ASSERT_EQ(t, rs[i].inplace_of) << "buffer " << i;
    const BufferRequest& tr = rs[static_cast<size_t>(t)];
    EXPECT_EQ(tr.last_step, rs[i].first_step) << "buffer " << i;
    EXPECT_LT(tr.first_step, rs[i].first_step) << "buffer " << i;
    EXPECT_LE(rs[i].size_bytes, tr.size_bytes) << "buffer " << i;
    EXPECT_EQ(plan.offsets[i], plan.offsets[static_cast<size_t>(t)]) << "buffer " << i;
    for (size_t k = 0; k < i; ++k) EXPECT_NE(plan.alias_of[k], t) << "target " << t << " overwritten twice";
  }
  EXPECT_EQ(plan.total_bytes, total);
  EXPECT_EQ(plan.arena_bytes, end);
  EXPECT_EQ(plan.inplace_honoured, honoured);
  EXPECT_EQ(plan.lower_bound_bytes, brute_lower_bound(rs, plan.alias_of));
  EXPECT_GE(plan.arena_bytes, plan.lower_bound_bytes);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const auto &a = rs[i], &b = rs[j];
      if (a.size_bytes == 0 || b.size_bytes == 0) continue;
      if (a.last_step < b.first_step || b.last_step < a.first_step) continue;
      const bool disjoint = plan.offsets[i] + a.size_bytes <= plan.offsets[j] ||
                            plan.offsets[j] + b.size_bytes <= plan.offsets[i];
      const bool partners = plan.alias_of[j] == static_cast<int64_t>(i) || plan.alias_of[i] == static_cast<int64_t>(j);
      EXPECT_TRUE(disjoint || partners) << "buffers " << i << " and " << j << " are live together and overlap";
    }
  }
}

TEST(ArenaLayout, EmptyProgram) {
  const ArenaLayout plan = layout_arena({});
  EXPECT_EQ(plan.arena_bytes, 0);
  EXPECT_EQ(plan.total_bytes, 0);
  EXPECT_EQ(plan.lower_bound_bytes, 0);
  EXPECT_TRUE(plan.offsets.empty());
}

TEST(ArenaLayout, ChainReusesMemory) {
  // A -> B -> C: A dies when C is written, so C takes A's place.
  const std::vector<BufferRequest> rs = {req(1024, 0, 1), req(1024, 1, 2), req(1024, 2, 3)};
  const ArenaLayout plan = layout_arena(rs);
  verify(rs, plan);
  EXPECT_EQ(plan.arena_bytes, 2048);
  EXPECT_EQ(plan.total_bytes, 3072);
  EXPECT_EQ(plan.lower_bound_bytes, 2048);
  EXPECT_EQ(plan.offsets[0], plan.offsets[2]);
  EXPECT_EQ(plan.inplace_honoured, 0);
}

TEST(ArenaLayout, LongChainOfDifferentSizesNeedsTwoSlots) {
  // Sizes 1000, 3000, 1000, 3000, ...: at every step one big and one small
  // buffer are live, so the lower bound 4000 (rounded to alignment) is met.
  std::vector<BufferRequest> rs;
  for (int i = 0; i < 12; ++i) rs.push_back(req(i % 2 ? 3008 : 1024, i, i + 1));
  const ArenaLayout plan = layout_arena(rs);
  verify(rs, plan);
  EXPECT_EQ(plan.lower_bound_bytes, 4032);
  EXPECT_EQ(plan.arena_bytes, 4032);
}

TEST(ArenaLayout, InplaceHintsHonoured) {
  // A -> B -> C elementwise, each overwriting its input: one slot.
  const std::vector<BufferRequest> rs = {req(1024, 0, 1), req(1024, 1, 2, 0), req(512, 2, 3, 1)};
  const ArenaLayout plan = layout_arena(rs);
  verify(rs, plan);
  EXPECT_EQ(plan.inplace_honoured, 2);
  EXPECT_EQ(plan.alias_of, (std::vector<int64_t>{-1, 0, 1}));
  EXPECT_EQ(plan.offsets[0], plan.offsets[1]);
  EXPECT_EQ(plan.offsets[1], plan.offsets[2]);
  EXPECT_EQ(plan.arena_bytes, 1024);
  EXPECT_EQ(plan.lower_bound_bytes, 1024);
}

TEST(ArenaLayout, InplaceHintWithOtherLiveBuffers) {
  // X lives throughout; A is overwritten by B at step 2.
  const std::vector<BufferRequest> rs = {req(4096, 0, 5), req(1024, 1, 2), req(1024, 2, 4, 1)};
  const ArenaLayout plan = layout_arena(rs);
  verify(rs, plan);
  EXPECT_EQ(plan.alias_of[2], 1);
  EXPECT_EQ(plan.arena_bytes, 5120);
}

TEST(ArenaLayout, InfeasibleInplaceHintsIgnored) {
  const std::vector<BufferRequest> rs = {
      req(1024, 0, 1),        // 0
      req(2048, 1, 2, 0),     // 1: larger than its target
      req(1024, 0, 3),        // 2: still live after step 3
      req(1024, 2, 3, 2),     // 3: target 2 is read after step 2
      req(1024, 3, 4),        // 4
      req(1024, 4, 5, 4),     // 5: feasible, honoured
      req(1024, 4, 5, 4),     // 6: target 4 already overwritten by 5
      req(512, 4, 4),         // 7: written at step 4, dies at 4
      req(512, 4, 6, 7),      // 8: target written at the same step
  };
  const ArenaLayout plan = layout_arena(rs);
  verify(rs, plan);
  EXPECT_EQ(plan.alias_of, (std::vector<int64_t>{-1, -1, -1, -1, -1, 4, -1, -1, -1}));
  EXPECT_EQ(plan.inplace_honoured, 1);
}

TEST(ArenaLayout, InplaceHintToLaterIndexIsFine) {
  // Requests need not be in step order.
  const std::vector<BufferRequest> rs = {req(256, 3, 5, 1), req(256, 0, 3)};
  const ArenaLayout plan = layout_arena(rs);
  verify(rs, plan);
  EXPECT_EQ(plan.alias_of[0], 1);
  EXPECT_EQ(plan.arena_bytes, 256);
}

TEST(ArenaLayout, ZeroSizeBuffers) {
  const std::vector<BufferRequest> only_empty = {req(0, 0, 3), req(0, 1, 2), req(0, 2, 3, 1)};
  ArenaLayout plan = layout_arena(only_empty);
  verify(only_empty, plan);
  EXPECT_EQ(plan.arena_bytes, 0);
  EXPECT_EQ(plan.lower_bound_bytes, 0);

  const std::vector<BufferRequest> mixed = {req(0, 0, 9), req(128, 0, 1), req(0, 1, 2), req(128, 1, 2), req(0, 2, 2)};
  plan = layout_arena(mixed);
  verify(mixed, plan);
  EXPECT_EQ(plan.arena_bytes, 256);
  EXPECT_EQ(plan.total_bytes, 256);
}

TEST(ArenaLayout, Alignment) {
  // Three 1-byte buffers live together: each on its own aligned slot.
  const std::vector<BufferRequest> rs = {req(1, 0, 2, -1, 256), req(1, 0, 2, -1, 64), req(1, 0, 2, -1, 1),
                                         req(100, 0, 2, -1, 4096)};
  const ArenaLayout plan = layout_arena(rs);
  verify(rs, plan);
  EXPECT_EQ(plan.lower_bound_bytes, 103);
  EXPECT_GE(plan.arena_bytes, 103);
  EXPECT_LE(plan.arena_bytes, 4096 + 100);  // the 4096-aligned one fits at 0, the rest after it
}

TEST(ArenaLayout, InvalidRequestsThrow) {
  EXPECT_THROW(layout_arena({req(-1, 0, 1)}), Error);
  EXPECT_THROW(layout_arena({req(8, 2, 1)}), Error);
  EXPECT_THROW(layout_arena({req(8, -1, 1)}), Error);
  EXPECT_THROW(layout_arena({req(8, 0, 1, -1, 48)}), Error);
  EXPECT_THROW(layout_arena({req(8, 0, 1, -1, 0)}), Error);
  EXPECT_THROW(layout_arena({req(8, 0, 1, 0)}), Error);  // names itself
  EXPECT_THROW(layout_arena({req(8, 0, 1, 5)}), Error);
  EXPECT_THROW(layout_arena({req(8, 0, 1, -2)}), Error);
  try {
    layout_arena({req(8, 0, 1), req(8, 0, 1, -1, 3)});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("buffer 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("alignment 3"), std::string::npos) << e.what();
  }
}

std::vector<BufferRequest> random_requests(std::mt19937_64& rng, bool uniform_alignment) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const int64_t n = pick(1, 60);
  const int64_t steps = pick(1, 40);
  static const int64_t kAligns[] = {1, 16, 64, 256};
  std::vector<BufferRequest> rs;
  for (int64_t i = 0; i < n; ++i) {
    BufferRequest r;
    r.first_step = pick(0, steps - 1);
    r.last_step = std::min(steps, r.first_step + (pick(0, 3) == 0 ? pick(0, steps) : pick(0, 4)));
    r.alignment = uniform_alignment ? 64 : kAligns[pick(0, 3)];
    switch (pick(0, 4)) {
      case 0: r.size_bytes = 0; break;
      case 1: r.size_bytes = pick(1, 100); break;
      default: r.size_bytes = pick(0, 64) * r.alignment; break;
    }
    if (uniform_alignment) r.size_bytes = r.size_bytes / 64 * 64;
    rs.push_back(r);
  }
  // In-place hints: mostly to buffers that die where this one is written,
  // some infeasible.
  for (int64_t j = 0; j < n; ++j) {
    if (pick(0, 2) == 0) continue;
    std::vector<int64_t> candidates;
    for (int64_t i = 0; i < n; ++i)
      if (i != j && rs[static_cast<size_t>(i)].last_step == rs[static_cast<size_t>(j)].first_step)
        candidates.push_back(i);
    if (!candidates.empty() && pick(0, 4) != 0) {
      rs[static_cast<size_t>(j)].inplace_of = candidates[static_cast<size_t>(pick(0, candidates.size() - 1))];
    } else {
      const int64_t t = pick(0, n - 1);
      if (t != j) rs[static_cast<size_t>(j)].inplace_of = t;
    }
  }
  return rs;
}

TEST(ArenaLayout, RandomRequestSets) {
  std::mt19937_64 rng(20240611);
  int64_t honoured = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const bool uniform = trial % 2 == 0;
    const std::vector<BufferRequest> rs = random_requests(rng, uniform);
    const ArenaLayout plan = layout_arena(rs);
    SCOPED_TRACE("trial " + std::to_string(trial));
    verify(rs, plan);
    honoured += plan.inplace_honoured;
    if (uniform) {
      // Sizes are multiples of the one alignment: no padding needed.
      EXPECT_LE(plan.arena_bytes, plan.total_bytes);
    } else {
      int64_t padded = 0;
      for (const auto& r : rs) padded += r.size_bytes + r.alignment - 1;
      EXPECT_LE(plan.arena_bytes, padded);
    }
    if (HasFailure()) break;
  }
  EXPECT_GT(honoured, 1000);  // the generator does exercise the hints
}

TEST(ArenaLayout, Deterministic) {
  std::mt19937_64 rng(7);
  const std::vector<BufferRequest> rs = random_requests(rng, false);
  const ArenaLayout a = layout_arena(rs), b = layout_arena(rs);
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_EQ(a.arena_bytes, b.arena_bytes);
}

TEST(ArenaLayout, FormatBytes) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.0 KiB");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(1024 * 1024 - 1), "1.0 MiB");
  EXPECT_EQ(format_bytes(int64_t{5} << 30), "5.0 GiB");
  EXPECT_EQ(format_bytes(int64_t{12897485}), "12.3 MiB");
}

TEST(ArenaLayout, Describe) {
  ArenaLayout plan;
  plan.arena_bytes = 12897485;           // 12.3 MiB
  plan.total_bytes = int64_t{42048307};  // 40.1 MiB
  plan.lower_bound_bytes = 12478054;     // 11.9 MiB
  EXPECT_EQ(describe(plan), "peak 12.3 MiB (no reuse: 40.1 MiB, lower bound 11.9 MiB)");
}

}  // namespace
}  // namespace tessera::runtime
