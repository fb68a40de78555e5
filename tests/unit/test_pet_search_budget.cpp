// What keeps PET's search (pet/search.h) within its budget, as properties:
// the hard budget (no measurement ends past it, what was found is kept and
// the model still computes what it did), subprograms without a mutant cost no
// measurement, identical subprograms searched once with the same choices as
// searched one by one, a mutant estimated to lose neither verified nor
// measured, and the Verifier (the original planned once) agreeing with
// verify(). Outputs are checked by the reference interpreter.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "ops/registry.h"
#include "opt/passes.h"
#include "pet/mutants.h"
#include "pet/search.h"
#include "pet/subprogram.h"
#include "pet/verifier.h"
#include "pet_test_util.h"
#include "support/stopwatch.h"

namespace tessera::pet {
namespace {

using testing::pet::ModelBuilder;
using testing::pet::expect_same_outputs;
using testing::pet::random_inputs;
using testing::pet::dilation_averse;
using testing::pet::has_dilated_conv;

// `n` dilated 3x3 convs with relus between on 8x8 maps: with `distinct`
// false every conv is `channels` -> `channels` (n subprograms of one
// structure), else conv i has channels + i + 1 outputs (n structures).
std::unique_ptr<Graph> dilated_chain(int n, int64_t channels = 4, bool distinct = false) {
  ModelBuilder b;
  Value* x = b.input("x", {1, channels, 8, 8});
  for (int i = 0; i < n; ++i)
    x = b.relu(b.conv(x, distinct ? channels + i + 1 : channels, 3, 3, {2, 2, 2, 2}, "c" + std::to_string(i), 1, 2),
               "r" + std::to_string(i));
  b.g->add_output(x);
  infer_graph(*b.g);
  return std::move(b.g);
}

SearchOptions options() {
  SearchOptions o;
  o.rounds = 2;
  o.max_estimate_ratio = 0;  // the fake costs decide alone
  o.stop_after_losers = 0;
  o.progress_after_seconds = 1e9;
  return o;
}

TEST(PetSearchBudget, NoMeasurementEndsPastTheBudgetAndWhatWasFoundIsKept) {
  std::unique_ptr<Graph> g = dilated_chain(6, 4, /*distinct=*/true);  // nothing shared
  std::unique_ptr<Graph> original = g->clone();
  PetDb db;
  SearchOptions o = options();
  o.rounds = 1;
  o.budget_seconds = 1.0;  // a subprogram takes its generation and 5 measurements: about 0.5 s
  constexpr double kMeasure = 0.1;
  Stopwatch watch;  // started just before the search (its own watch starts a moment later)
  std::vector<double> ends;
  CostFn cost = [&](const Graph& c) {
    std::this_thread::sleep_for(std::chrono::duration<double>(kMeasure));
    ends.push_back(watch.seconds());
    return dilation_averse(c);
  };
  const SearchReport r = optimize_program(*g, o, cost, db, "test");
  EXPECT_TRUE(r.budget_exhausted);
  EXPECT_NE(r.budget_note.find("ended the search"), std::string::npos) << r.budget_note;
  EXPECT_NE(r.to_text().find("budget: the budget of 1.0 s ended the search"), std::string::npos) << r.to_text();
  EXPECT_LT(r.searched, r.subprograms);
  ASSERT_FALSE(ends.empty());
  // A measurement starts only when the ones before say it ends in time: a
  // sleep that overruns by scheduling is all the slack allowed.
  for (double e : ends) EXPECT_LE(e, o.budget_seconds + 0.5 * kMeasure) << "a measurement ended past the budget";
  EXPECT_LE(r.seconds, o.budget_seconds + 2 * kMeasure);
  // The first subprogram's D2H family was found in time and kept.
  EXPECT_GE(r.applied, 1);
  fold_constants(*g);
  verify_graph(*g);
  expect_same_outputs(*original, *g, random_inputs(*original, 3), 1e-5);
}

TEST(PetSearchBudget, ASubprogramWithoutMutantsCostsNoMeasurement) {
  std::unique_ptr<Graph> g = dilated_chain(2, 4, /*distinct=*/true);
  const uint64_t before = structural_hash(*g);
  PetDb db;
  SearchOptions o = options();
  o.only_family = "no-such-family";  // every mutant filtered out
  int calls = 0;
  CostFn cost = [&](const Graph& c) {
    ++calls;
    return dilation_averse(c);
  };
  const SearchReport r = optimize_program(*g, o, cost, db, "test");
  EXPECT_EQ(calls, 0) << "the original was measured with nothing to compare it to";
  EXPECT_EQ(r.searched, 2);
  EXPECT_EQ(r.without_mutants, 2);
  EXPECT_EQ(r.verified, 0);
  EXPECT_EQ(r.applied, 0);
  EXPECT_EQ(structural_hash(*g), before);
}

TEST(PetSearchBudget, IdenticalSubprogramsAreSearchedOnceWithTheSameChoices) {
  std::unique_ptr<Graph> shared_g = dilated_chain(4), alone_g = dilated_chain(4);
  std::unique_ptr<Graph> original = shared_g->clone();
  int shared_calls = 0, alone_calls = 0;
  SearchOptions o = options();
  PetDb db1, db2;
  const SearchReport shared = optimize_program(
      *shared_g, o, [&](const Graph& c) { return ++shared_calls, dilation_averse(c); }, db1, "test");
  o.share_by_structure = false;
  const SearchReport alone = optimize_program(
      *alone_g, o, [&](const Graph& c) { return ++alone_calls, dilation_averse(c); }, db2, "test");
  EXPECT_EQ(shared.subprograms, 4);
  EXPECT_EQ(shared.shared, 3);
  EXPECT_EQ(alone.shared, 0);
  // Searched once: the others neither generate, verify nor measure. Without
  // sharing they are answered by the database the first one's search filled
  // (its chosen graph rebuilt: no generation, verification or measurement
  // either).
  EXPECT_EQ(alone.rebuilt, 3);
  EXPECT_EQ(shared.verified, alone.verified);
  EXPECT_EQ(shared.mutants, alone.mutants);
  EXPECT_LE(shared_calls, alone_calls);
  // The same choices: every conv replaced by the same family, the same model.
  EXPECT_EQ(shared.applied, 4);
  EXPECT_EQ(alone.applied, 4);
  std::vector<std::string> a, b;
  for (const CandidateRecord& c : shared.candidates)
    if (c.applied) a.push_back(c.family);
  for (const CandidateRecord& c : alone.candidates)
    if (c.applied) b.push_back(c.family);
  EXPECT_EQ(a, b);
  EXPECT_EQ(structural_hash(*shared_g), structural_hash(*alone_g));
  EXPECT_FALSE(has_dilated_conv(*shared_g));
  // The report says which subprogram's result was reused.
  EXPECT_NE(shared.to_text().find("[as subprogram 1, same structure]"), std::string::npos) << shared.to_text();
  fold_constants(*shared_g);
  expect_same_outputs(*original, *shared_g, random_inputs(*original, 4), 1e-5);
}

TEST(PetSearchBudget, MutantsEstimatedToLoseAreNeitherVerifiedNorMeasured) {
  std::unique_ptr<Graph> g = dilated_chain(1, 8);
  PetDb db1, db2;
  SearchOptions all = options();
  all.rounds = 1;
  all.max_measured = 1000;  // every usable mutant verified and measured
  int calls_all = 0, calls_limited = 0;
  const SearchReport r_all =
      optimize_program(*g->clone(), all, [&](const Graph& c) { return ++calls_all, dilation_averse(c); }, db1, "test");
  SearchOptions limited = all;
  limited.max_estimate_ratio = 1.5;
  limited.max_measured = 2;
  const SearchReport r_limited = optimize_program(
      *g->clone(), limited, [&](const Graph& c) { return ++calls_limited, dilation_averse(c); }, db2, "test");
  EXPECT_EQ(r_all.mutants, r_limited.mutants);
  EXPECT_LT(r_limited.verified, r_all.verified);
  EXPECT_LE(calls_limited, 1 + limited.max_measured);  // the original and at most max_measured
  EXPECT_GT(calls_all, calls_limited);
}

// Measurements stop once candidates in a row lost clearly to the original:
// under a cost of one per node every mutant (more nodes than the one Conv)
// loses by 2x or more.
TEST(PetSearchBudget, MeasuringStopsAfterClearLosers) {
  std::unique_ptr<Graph> g = dilated_chain(1, 8);
  const uint64_t before = structural_hash(*g);
  PetDb db;
  SearchOptions o = options();
  o.stop_after_losers = 2;
  o.max_measured = 4;
  int calls = 0;
  CostFn cost = [&](const Graph& c) {
    ++calls;
    return static_cast<double>(c.nodes().size());
  };
  const SearchReport r = optimize_program(*g, o, cost, db, "test");
  EXPECT_EQ(calls, 1 + 2);  // the original, then two losers
  EXPECT_EQ(r.applied, 0);
  EXPECT_EQ(structural_hash(*g), before);
}

// The Verifier (the original planned once, its exact values kept) gives
// every mutant the verdict and boxes verify() gives it.
TEST(PetVerifierReuse, AgreesWithVerifyOnEveryMutant) {
  ModelBuilder b;
  Value* x = b.input("x", {2, 3, 6, 6});
  Value* y = b.conv(x, 4, 3, 3, {1, 1, 1, 1}, "c");
  b.g->add_output(y);
  infer_graph(*b.g);
  std::vector<Subprogram> sps = find_subprograms(*b.g);
  ASSERT_EQ(sps.size(), 1u);
  const Subprogram& sp = sps[0];
  std::vector<Mutant> ms = generate_mutants(sp);
  ASSERT_GT(ms.size(), 3u);
  VerifyOptions vo;
  vo.seed = 77;
  Verifier v(*sp.graph, vo);
  int partial = 0;
  for (const Mutant& m : ms) {
    SCOPED_TRACE(m.family);
    const VerifyResult want = verify(*sp.graph, *m.graph, vo);
    const VerifyResult got = v.check(*m.graph);
    EXPECT_EQ(got.verdict, want.verdict);
    EXPECT_EQ(got.reason, want.reason);
    EXPECT_EQ(got.wrong_elements(), want.wrong_elements());
    ASSERT_EQ(got.outputs.size(), want.outputs.size());
    for (size_t o = 0; o < got.outputs.size(); ++o) {
      ASSERT_EQ(got.outputs[o].wrong.size(), want.outputs[o].wrong.size());
      for (size_t k = 0; k < got.outputs[o].wrong.size(); ++k) {
        EXPECT_EQ(got.outputs[o].wrong[k].lo, want.outputs[o].wrong[k].lo);
        EXPECT_EQ(got.outputs[o].wrong[k].hi, want.outputs[o].wrong[k].hi);
      }
    }
    partial += got.verdict == Verdict::Partial;
  }
  EXPECT_GT(partial, 0);
  // With a limit on wrong elements a partial mutant is given up early: still
  // partial, flagged, its list cut short; within the limit nothing changes.
  for (const Mutant& m : ms) {
    const VerifyResult full = verify(*sp.graph, *m.graph, vo);
    if (full.verdict != Verdict::Partial) continue;
    VerifyOptions strict = vo;
    strict.max_wrong_elements = 0;
    const VerifyResult cut = Verifier(*sp.graph, strict).check(*m.graph);
    EXPECT_EQ(cut.verdict, Verdict::Partial);
    EXPECT_TRUE(cut.gave_up);
    EXPECT_LE(cut.wrong_boxes(), full.wrong_boxes());
    VerifyOptions loose = vo;
    loose.max_wrong_elements = full.wrong_elements();
    const VerifyResult same = Verifier(*sp.graph, loose).check(*m.graph);
    EXPECT_FALSE(same.gave_up);
    EXPECT_EQ(same.wrong_elements(), full.wrong_elements());
    break;
  }
  // A graph of another signature is different, and the Verifier still works after it.
  ModelBuilder other;
  Value* z = other.input("z", {1, 3, 6, 6});
  other.g->add_output(other.conv(z, 4, 3, 3, {1, 1, 1, 1}, "c"));
  infer_graph(*other.g);
  EXPECT_EQ(v.check(*other.g).verdict, Verdict::Different);
  EXPECT_EQ(v.check(*ms[0].graph).verdict, verify(*sp.graph, *ms[0].graph, vo).verdict);
}

// The generator stops at its deadline: none built past it, the report says
// so; without one the same subprogram gives its mutants.
TEST(PetSearchBudget, TheGeneratorBuildsNothingPastItsDeadline) {
  std::unique_ptr<Graph> g = dilated_chain(1, 8);
  const std::vector<Subprogram> sps = find_subprograms(*g, SubprogramOptions{});
  ASSERT_EQ(sps.size(), 1u);
  MutantReport all, none;
  EXPECT_GT(generate_mutants(sps[0], MutantOptions{}, &all).size(), 3u);
  EXPECT_FALSE(all.out_of_time);
  MutantOptions past;
  past.deadline = std::chrono::steady_clock::now();
  EXPECT_TRUE(generate_mutants(sps[0], past, &none).empty());
  EXPECT_TRUE(none.out_of_time);
  EXPECT_EQ(none.dfs_states, 0);
}

// A tiny budget on a model of many subprograms (32 distinct dilated convs,
// 48 channels, 48x48: searched in full, about half a second): the search
// ends within the budget plus the slack pet/search.h states, one mutant's
// build, verification and correction (about a millisecond at this size), and
// measures nothing (no measurement starts once the budget is spent). 0.1 s
// of slack covers a loaded machine. The generator's own deadline is
// TheGeneratorBuildsNothingPastItsDeadline's.
TEST(PetSearchBudget, ATinyBudgetEndsTheSearchWithinItsSlack) {
  ModelBuilder b;
  Value* x = b.input("x", {1, 48, 48, 48});
  for (int i = 0; i < 32; ++i)
    x = b.relu(b.conv(x, 48 + i, 3, 3, {2, 2, 2, 2}, "c" + std::to_string(i), 1, 2), "r" + std::to_string(i));
  b.g->add_output(x);
  infer_graph(*b.g);
  const uint64_t before = structural_hash(*b.g);
  constexpr double kSlack = 0.1;
  for (double budget : {0.0, 0.005, 0.02}) {
    std::unique_ptr<Graph> g = b.g->clone();
    PetDb db;
    SearchOptions o = options();
    o.budget_seconds = budget;
    int calls = 0;
    const SearchReport r = optimize_program(*g, o, [&](const Graph& c) { return ++calls, dilation_averse(c); }, db, "test");
    EXPECT_TRUE(r.budget_exhausted) << budget;
    EXPECT_LE(r.seconds, budget + kSlack) << "budget " << budget << ": " << r.to_text();
    EXPECT_EQ(calls, 0) << budget;
    EXPECT_EQ(r.applied, 0);
    EXPECT_EQ(structural_hash(*g), before);
  }
  // The same search unbounded takes much longer than the largest budget and
  // the slack: the bound above is the budget's doing.
  PetDb db;
  const SearchReport full = optimize_program(*b.g->clone(), options(), dilation_averse, db, "test");
  EXPECT_FALSE(full.budget_exhausted);
  EXPECT_GT(full.seconds, 2 * (0.02 + kSlack)) << full.to_text();
}

}  // namespace
}  // namespace tessera::pet
