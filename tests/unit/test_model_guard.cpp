// The tuner's model guard (src/tune/model_guard.h) deciding which tasks'
// choices to keep, against a model whose time is a sum of each choice's
// effect written down here (plus interactions), so the right answer is
// known: choices that slow the model are dropped however much they claim,
// the rest are kept, and the model with what is kept is never slower.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "tune/model_guard.h"

namespace tessera::tune {
namespace {

// A model of 100 ms whose time changes by `effect` ms per task chosen, and
// by `together` when all of a set are chosen at once.
struct FakeModel {
  std::map<size_t, double> effect;
  std::vector<std::pair<std::set<size_t>, double>> together;
  int calls = 0;
  double ms(const std::vector<size_t>& chosen) const {
    double t = 100;
    for (size_t c : chosen) t += effect.at(c);
    for (const auto& [set, extra] : together)
      if (std::all_of(set.begin(), set.end(), [&](size_t s) { return std::count(chosen.begin(), chosen.end(), s); }))
        t += extra;
    return t;
  }
  CompareChoices compare() {
    return [this](const std::vector<size_t>& with, const std::vector<size_t>& base) {
      ++calls;
      return ms(with) / ms(base);
    };
  }
};

std::set<size_t> as_set(const std::vector<size_t>& v) { return {v.begin(), v.end()}; }

TEST(ModelGuard, AllKeptWhenTheModelIsFasterWithAll) {
  FakeModel m{{{0, -2}, {1, -1}, {2, +0.5}}, {}};
  GuardResult r = guard_choices({{0, 1}, {1, 1}, {2, 1}}, m.compare());
  EXPECT_EQ(as_set(r.kept), (std::set<size_t>{0, 1, 2}));
  EXPECT_TRUE(r.dropped.empty());
  EXPECT_EQ(r.comparisons, 1);
  EXPECT_DOUBLE_EQ(r.ratio, 97.5 / 100);
}

// Task 7 claims the largest gain (an injected record) but slows the model;
// task 3 slows it a little. Task 7 goes whatever the grouping; judged one
// by one, task 3 goes too; the model with what is kept is faster.
TEST(ModelGuard, ChoicesThatSlowTheModelAreDroppedWhateverTheyClaim) {
  FakeModel m{{{7, +5}, {1, -1}, {2, -0.5}, {3, +0.1}}, {}};
  for (int groups : {1, 2, 4}) {
    m.calls = 0;
    GuardOptions o;
    o.groups = groups;
    GuardResult r = guard_choices({{1, 3}, {7, 10}, {3, 1}, {2, 2}}, m.compare(), o);
    EXPECT_EQ(as_set(r.dropped).count(7), 1u) << groups << " groups";
    EXPECT_EQ(r.kept.size() + r.dropped.size(), 4u) << groups << " groups";
    EXPECT_LT(m.ms(r.kept), m.ms({})) << groups << " groups";
    EXPECT_DOUBLE_EQ(r.ratio, m.ms(r.kept) / 100);
    EXPECT_EQ(r.comparisons, m.calls);
    EXPECT_LE(r.comparisons, o.max_comparisons);
    if (groups == 4) {
      EXPECT_EQ(as_set(r.kept), (std::set<size_t>{1, 2}));
      EXPECT_EQ(as_set(r.dropped), (std::set<size_t>{3, 7}));
    }
  }
}

// Two choices each faster alone but slower together: only the first (the
// greater claimed gain) is kept.
TEST(ModelGuard, ChoicesThatClashKeepTheGreaterClaim) {
  FakeModel m{{{0, -1}, {1, -1}}, {{{0, 1}, +3}}};
  GuardResult r = guard_choices({{0, 1}, {1, 2}}, m.compare());
  EXPECT_EQ(r.kept, (std::vector<size_t>{1}));
  EXPECT_EQ(r.dropped, (std::vector<size_t>{0}));
}

// A comparison that never favours the choices (a noisy machine, or none
// pays): nothing is kept, and the bound on comparisons holds.
TEST(ModelGuard, NothingKeptWhenNothingMeasuresFaster) {
  std::vector<GuardChoice> choices;
  for (size_t t = 0; t < 40; ++t) choices.push_back({t, 1.0 + static_cast<double>(t)});
  int calls = 0;
  GuardOptions o;
  o.max_comparisons = 9;
  GuardResult r = guard_choices(choices, [&](const std::vector<size_t>&, const std::vector<size_t>&) {
    ++calls;
    return 1.0;
  }, o);
  EXPECT_TRUE(r.kept.empty());
  EXPECT_EQ(r.dropped.size(), choices.size());
  EXPECT_EQ(r.ratio, 1.0);
  EXPECT_EQ(calls, r.comparisons);
  EXPECT_LE(calls, o.max_comparisons);
}

// What is kept is compared with the defaults at the end: choices that each
// paid against those kept before them but not together are all dropped.
TEST(ModelGuard, ClosingComparisonWithTheDefaults) {
  // Judged against the previous set each looks faster; against the
  // defaults the set is slower (a drift the closing comparison catches).
  int calls = 0;
  GuardOptions o;
  o.groups = 2;
  GuardResult r = guard_choices({{0, 2}, {1, 1}}, [&](const std::vector<size_t>& with, const std::vector<size_t>& base) {
    ++calls;
    return base.empty() && with.size() != 1 ? 1.01 : 0.99;
  }, o);
  // All (2) against none: 1.01. Group {0} against none: 0.99, kept; {1}
  // against {0}: 0.99, kept; the closing {0, 1} against none: 1.01.
  EXPECT_TRUE(r.kept.empty());
  EXPECT_EQ(as_set(r.dropped), (std::set<size_t>{0, 1}));
  EXPECT_EQ(calls, 4);
}

}  // namespace
}  // namespace tessera::tune
