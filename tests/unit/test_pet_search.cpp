// PET's program optimizer (pet/search.h) and the pet pass: which candidates
// it keeps under a given cost, that the model it leaves computes what the
// original did (reference interpreter), its budget, its database, and the
// pass run by the compiled runtime with real measurements.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include "ops/registry.h"
#include "opt/passes.h"
#include "pet/search.h"
#include "pet/subprogram.h"
#include "graph_test_util.h"
#include "pet_test_util.h"
#include "runtime/executor.h"
#include "runtime/graph_timer.h"
#include "support/stopwatch.h"
#include "support/error.h"

namespace tessera::pet {
namespace {

using testing::pet::ModelBuilder;
using testing::pet::random_inputs;
using testing::pet::expect_same_outputs;
using testing::pet::dilation_averse;
using testing::pet::has_dilated_conv;
using testing::count_ops;

// A dilated chain like CSRNet's back end: conv (dilation 2), relu, conv
// (dilation 2), relu.
std::unique_ptr<Graph> dilated_chain() {
  ModelBuilder b;
  Value* x = b.input("x", {1, 4, 8, 8});
  Value* y = b.relu(b.conv(x, 4, 3, 3, {2, 2, 2, 2}, "c1", 1, 2), "r1");
  Value* z = b.relu(b.conv(y, 4, 3, 3, {2, 2, 2, 2}, "c2", 1, 2), "r2");
  b.g->add_output(z);
  infer_graph(*b.g);
  return std::move(b.g);
}

// The fake costs below decide alone: no candidate is dropped by the static
// estimate (which finds mutants of these tiny convs slower, as they are).
SearchOptions quiet() {
  SearchOptions o;
  o.budget_seconds = 60;
  o.rounds = 2;
  o.max_estimate_ratio = 0;
  return o;
}

TEST(PetSearch, KeepsTheCheapestVerifiedCandidateAndTheModelStillComputesTheSame) {
  std::unique_ptr<Graph> g = dilated_chain();
  std::unique_ptr<Graph> original = g->clone();
  PetDb db;
  int calls = 0;
  CostFn cost = [&](const Graph& c) {
    ++calls;
    return dilation_averse(c);
  };
  SearchReport r = optimize_program(*g, quiet(), cost, db, "test");
  EXPECT_EQ(r.subprograms, 2);
  EXPECT_EQ(r.applied, 2);
  EXPECT_GT(r.equivalent, 0);
  EXPECT_GT(calls, 2);
  EXPECT_FALSE(has_dilated_conv(*g)) << print_graph(*g);
  EXPECT_LT(r.cost_after, r.cost_before);
  // Applied candidates are marked, one per subprogram, each cheaper.
  int applied = 0;
  for (const CandidateRecord& c : r.candidates)
    if (c.applied) {
      ++applied;
      EXPECT_LT(c.seconds, c.original_seconds);
      EXPECT_NE(c.family.find("D2"), std::string::npos) << c.family;
    }
  EXPECT_EQ(applied, 2);
  // The nodes PET added carry its prefix (tessera viz marks them).
  int marked = 0;
  for (const auto& n : g->nodes()) marked += n->name.rfind(kPetNodePrefix, 0) == 0;
  EXPECT_GT(marked, 0);
  fold_constants(*g);
  verify_graph(*g);
  expect_same_outputs(*original, *g, random_inputs(*original, 3), 1e-5);
  const std::string text = r.to_text();
  EXPECT_NE(text.find("2 applied"), std::string::npos) << text;
  EXPECT_NE(text.find("Conv node 'c1'"), std::string::npos) << text;
}

TEST(PetSearch, TheOriginalStaysWhenNoMutantIsCheaper) {
  std::unique_ptr<Graph> g = dilated_chain();
  const uint64_t before = structural_hash(*g);
  PetDb db;
  // Every graph costs its node count: a mutant has more nodes than one Conv.
  CostFn cost = [](const Graph& c) { return static_cast<double>(c.nodes().size()); };
  SearchReport r = optimize_program(*g, quiet(), cost, db, "test");
  EXPECT_EQ(r.applied, 0);
  EXPECT_EQ(structural_hash(*g), before);
  EXPECT_EQ(r.cost_after, r.cost_before);
}

TEST(PetSearch, ASecondSearchReusesTheDatabaseAndMeasuresNothing) {
  const std::string path = ::testing::TempDir() + "/pet_search_db.tsv";
  std::filesystem::remove(path);
  std::unique_ptr<Graph> first = dilated_chain(), second = dilated_chain();
  int calls = 0;
  CostFn cost = [&](const Graph& c) {
    ++calls;
    return dilation_averse(c);
  };
  {
    PetDb db(path);
    optimize_program(*first, quiet(), cost, db, "test");
  }
  const int first_calls = calls;
  ASSERT_GT(first_calls, 0);
  PetDb db(path);  // read back from the file
  SearchReport r = optimize_program(*second, quiet(), cost, db, "test");
  EXPECT_EQ(calls, first_calls) << "the second search measured again";
  EXPECT_EQ(r.measured, 0);
  EXPECT_GT(r.db_hits, 0);
  EXPECT_EQ(r.applied, 2);
  EXPECT_EQ(structural_hash(*first), structural_hash(*second));
  // Another target trusts none of it.
  std::unique_ptr<Graph> third = dilated_chain();
  optimize_program(*third, quiet(), cost, db, "other-target");
  EXPECT_GT(calls, first_calls);
  std::filesystem::remove(path);
}

TEST(PetSearch, ABudgetOfZeroChangesNothingAndSaysSo) {
  std::unique_ptr<Graph> g = dilated_chain();
  const uint64_t before = structural_hash(*g);
  PetDb db;
  SearchOptions o = quiet();
  o.budget_seconds = 0;
  SearchReport r = optimize_program(*g, o, dilation_averse, db, "test");
  EXPECT_TRUE(r.budget_exhausted);
  EXPECT_EQ(r.applied, 0);
  EXPECT_EQ(structural_hash(*g), before);
  EXPECT_NE(r.to_text().find("budget spent"), std::string::npos);
}

TEST(PetSearch, AblationSwitchesKeepOnlyTheKindAsked) {
  // Fully equivalent mutants off: D2H (exact) cannot be used.
  std::unique_ptr<Graph> g = dilated_chain();
  PetDb db;
  SearchOptions o = quiet();
  o.equivalent = false;
  SearchReport r = optimize_program(*g, o, dilation_averse, db, "test");
  for (const CandidateRecord& c : r.candidates) EXPECT_TRUE(c.partial) << c.family;
  // Partial ones off: nothing measured is partial.
  std::unique_ptr<Graph> h = dilated_chain();
  PetDb db2;
  SearchOptions p = quiet();
  p.partial = false;
  SearchReport s = optimize_program(*h, p, dilation_averse, db2, "test");
  for (const CandidateRecord& c : s.candidates) EXPECT_FALSE(c.partial) << c.family;
  EXPECT_EQ(s.applied, 2);
}

TEST(PetSearch, AFailingMeasurementDropsTheCandidateNotTheSearch) {
  std::unique_ptr<Graph> g = dilated_chain();
  std::unique_ptr<Graph> original = g->clone();
  PetDb db;
  CostFn cost = [](const Graph& c) -> double {
    if (!has_dilated_conv(c) && c.nodes().size() > 3) throw Error("cannot compile this one");
    return dilation_averse(c);
  };
  SearchReport r = optimize_program(*g, quiet(), cost, db, "test");
  EXPECT_FALSE(r.notes.empty());
  fold_constants(*g);
  expect_same_outputs(*original, *g, random_inputs(*original, 5), 1e-5);
}

// The pass in the compiled runtime: candidates compiled and timed for real;
// whatever it picks, the compiled model computes what the interpreter does.
TEST(PetPass, CompiledModelWithPetMatchesTheInterpreter) {
  std::unique_ptr<Graph> g = dilated_chain();
  const std::vector<Tensor> ins = random_inputs(*g, 9);
  const std::vector<Tensor> want = interpret(*g, ins);
  runtime::ExecutorOptions eo;
  eo.pet = true;
  eo.passes.pet.budget_seconds = 20;
  eo.passes.pet_db = ::testing::TempDir() + "/pet_pass_db.tsv";
  std::filesystem::remove(eo.passes.pet_db);
  runtime::Executor ex(g->clone(), eo);
  const std::vector<Tensor> got = ex.run(ins);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_LE(testing::pet::max_scaled_diff(got[0], want[0]), 1e-5);
  std::filesystem::remove(eo.passes.pet_db);
}

TEST(PetPass, SkippedWithoutACostFunctionAndWithNoPet) {
  std::unique_ptr<Graph> g = dilated_chain();
  PassOptions o;
  std::vector<PassRecord> recs = run_passes(*g, {"pet"}, o, PassContext{});
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_FALSE(recs[0].ran);
  EXPECT_NE(recs[0].skipped.find("measuring"), std::string::npos) << recs[0].skipped;
  o.disable_flag("pet");
  PassContext c;
  c.measure = [](const Graph&) { return 1.0; };
  recs = run_passes(*g, {"pet"}, o, c);
  EXPECT_FALSE(recs[0].ran);
  EXPECT_NE(recs[0].skipped.find("--no-pet"), std::string::npos) << recs[0].skipped;
}

// The pet pass's options with an empty database of its own (the caller
// removes the file at the end), and a context whose `measure` is `m`.
PassOptions pass_options(const std::string& db_file) {
  PassOptions o;
  o.pet = quiet();
  o.pet_db = ::testing::TempDir() + "/" + db_file;
  std::filesystem::remove(o.pet_db);
  return o;
}
PassContext context(std::function<double(const Graph&)> m) {
  PassContext c;
  c.target_key = "test";
  c.measure = std::move(m);
  return c;
}

// The subprograms searched here hold no Relu: only a whole model has them.
bool whole_model(const Graph& g) { return count_ops(g, "Relu") >= 2; }

// The pass times the whole model with the search's choices against the
// original and undoes them when they do not pay, however well each
// replacement did alone; a second compile reads both times from the database.
TEST(PetPass, WholeModelCheckKeepsTheChoicesOnlyWhenTheyPay) {
  for (bool choices_pay : {false, true}) {
    SCOPED_TRACE(choices_pay ? "the choices pay" : "the choices do not pay");
    std::unique_ptr<Graph> original = dilated_chain();
    PassOptions o = pass_options("pet_model_check.tsv");
    int whole = 0;
    PassContext c = context([&](const Graph& g) {
      if (!whole_model(g)) return dilation_averse(g);  // each replacement is cheaper alone
      ++whole;
      return has_dilated_conv(g) == choices_pay ? 5.0 : 1.0;
    });
    for (int compile = 0; compile < 2; ++compile) {
      std::unique_ptr<Graph> g = original->clone();
      std::vector<PassRecord> recs = run_passes(*g, {"pet"}, o, c);
      ASSERT_EQ(recs.size(), 1u);
      EXPECT_TRUE(recs[0].ran);
      EXPECT_EQ(has_dilated_conv(*g), !choices_pay) << print_graph(*g);
      if (!choices_pay) {
        EXPECT_EQ(structural_hash(*g), structural_hash(*original));
      }
      EXPECT_EQ(recs[0].rewrites, choices_pay ? 2 : 0);
      EXPECT_EQ(whole, 2) << "compile " << compile << ": both whole models timed once, then read back";
      expect_same_outputs(*original, *g, random_inputs(*original, 3), 1e-5);
    }
    std::filesystem::remove(o.pet_db);
  }
}

// Dilated convs in `g`.
int dilated_convs(const Graph& g) {
  int dilated = 0;
  for (const auto& n : g.nodes()) {
    const Attribute* d = n->op_type == "Conv" ? n->attr("dilations") : nullptr;
    dilated += d && !d->ints.empty() && d->ints[0] > 1;
  }
  return dilated;
}

// With PassContext::compare_models (the runtime's: both models compiled as
// they will be deployed, timed in turns), the check asks it once, before
// against after, and never `measure` for the whole model; its times are
// kept apart from those `measure` gave, and a second compile reads them back.
TEST(PetPass, WholeModelCheckTimesTheModelAsDeployed) {
  std::unique_ptr<Graph> original = dilated_chain();
  PassOptions o = pass_options("pet_model_deployed.tsv");
  int measure_whole = 0, deployed_whole = 0;
  // Timed as candidates are, the choices would pay; as deployed they do not.
  PassContext c = context([&](const Graph& g) {
    if (!whole_model(g)) return dilation_averse(g);
    ++measure_whole;
    return has_dilated_conv(g) ? 5.0 : 1.0;
  });
  std::unique_ptr<Graph> g = original->clone();
  run_passes(*g, {"pet"}, o, c);
  EXPECT_FALSE(has_dilated_conv(*g)) << "measure alone: the choices pay";
  EXPECT_EQ(measure_whole, 2);
  c.compare_models = [&](const Graph& before, const Graph& after, double) {
    EXPECT_TRUE(whole_model(before));
    EXPECT_TRUE(whole_model(after));
    EXPECT_EQ(structural_hash(before), structural_hash(*original)) << "before is the model as it came";
    ++deployed_whole;
    const double b = has_dilated_conv(before) ? 1.0 : 5.0, a = has_dilated_conv(after) ? 1.0 : 5.0;
    return ModelComparison{b, a, a / b, a / b};
  };
  for (int compile = 0; compile < 2; ++compile) {
    g = original->clone();
    std::vector<PassRecord> recs = run_passes(*g, {"pet"}, o, c);
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(recs[0].rewrites, 0);
    EXPECT_EQ(structural_hash(*g), structural_hash(*original));
    EXPECT_EQ(deployed_whole, 1) << "compile " << compile
                                 << ": one comparison in turns, then read back; `measure`'s times are not the deployed model's";
    EXPECT_EQ(measure_whole, 2);
  }
  std::filesystem::remove(o.pet_db);
}

// The check decides by the median ratio of the rounds in turns, not by the
// two medians: a machine busy while one model ran moves both medians apart,
// while each round's ratio saw both under the same load.
TEST(PetPass, WholeModelCheckDecidesByTheRatioInTurns) {
  for (bool pays : {false, true}) {
    SCOPED_TRACE(pays ? "the ratio says the choices pay" : "the ratio says they do not");
    std::unique_ptr<Graph> original = dilated_chain();
    std::unique_ptr<Graph> g = original->clone();
    PassOptions o = pass_options("pet_model_ratio.tsv");
    PassContext c = context([](const Graph& m) { return dilation_averse(m); });
    // The medians say the opposite of the ratio.
    c.compare_models = [&](const Graph&, const Graph&, double) {
      return pays ? ModelComparison{1.0, 1.5, 0.8, 0.9} : ModelComparison{1.5, 1.0, 1.0, 1.1};
    };
    std::vector<PassRecord> recs = run_passes(*g, {"pet"}, o, c);
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(has_dilated_conv(*g), !pays) << print_graph(*g);
    std::filesystem::remove(o.pet_db);
  }
}

// When all the choices do not pay, the pass tries again with only those that
// saved much alone (SearchOptions::fallback_gain) and keeps them if they pay.
TEST(PetPass, WholeModelCheckFallsBackToTheChoicesThatSavedMuchAlone) {
  ModelBuilder b;
  Value* x = b.input("x", {1, 4, 8, 8});
  Value* y = b.relu(b.conv(x, 4, 3, 3, {2, 2, 2, 2}, "c1", 1, 2), "r1");
  b.g->add_output(b.relu(b.conv(y, 8, 3, 3, {2, 2, 2, 2}, "c2", 1, 2), "r2"));  // another structure
  infer_graph(*b.g);
  std::unique_ptr<Graph> original = b.g->clone();
  std::unique_ptr<Graph> g = original->clone();
  PassOptions o = pass_options("pet_model_fallback.tsv");
  int whole = 0;
  PassContext c = context([&](const Graph& m) {
    const int dilated = dilated_convs(m);
    if (whole_model(m)) {  // only c1 replaced pays
      ++whole;
      return dilated == 2 ? 3.0 : dilated == 1 ? 1.0 : 5.0;
    }
    if (dilated) return 100.0 + static_cast<double>(m.nodes().size());
    const bool c2 = m.outputs()[0]->type.dims[1] == 8;
    return c2 ? 95.0 : static_cast<double>(m.nodes().size());  // c2's candidates save 5% alone
  });
  std::vector<PassRecord> recs = run_passes(*g, {"pet"}, o, c);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].rewrites, 1);
  EXPECT_EQ(whole, 3);  // the original, all choices, the fallback's
  EXPECT_TRUE(has_dilated_conv(*g)) << print_graph(*g);  // c2 kept as it was
  expect_same_outputs(*original, *g, random_inputs(*original, 4), 1e-5);
  std::filesystem::remove(o.pet_db);
}

// A median gain is not enough: the choices are kept only when three rounds
// in four or more had them faster (the rounds' ratios' upper quartile below
// 1), so a few lucky rounds on a noisy machine do not decide.
TEST(PetPass, WholeModelCheckWantsMostRoundsFaster) {
  for (double high : {0.97, 1.04}) {
    SCOPED_TRACE("upper quartile " + std::to_string(high));
    std::unique_ptr<Graph> original = dilated_chain();
    std::unique_ptr<Graph> g = original->clone();
    PassOptions o = pass_options("pet_model_quartile.tsv");
    PassContext c = context([](const Graph& m) { return dilation_averse(m); });
    c.compare_models = [&](const Graph&, const Graph&, double) { return ModelComparison{1.0, 0.9, 0.9, high}; };
    std::vector<PassRecord> recs = run_passes(*g, {"pet"}, o, c);
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(has_dilated_conv(*g), high >= 1) << print_graph(*g);
    std::filesystem::remove(o.pet_db);
  }
}

// A whole model the timer cannot run keeps no choice: they are unverified.
TEST(PetPass, WholeModelThatCannotBeTimedKeepsTheOriginal) {
  std::unique_ptr<Graph> original = dilated_chain();
  std::unique_ptr<Graph> g = original->clone();
  PassOptions o = pass_options("pet_model_check_throws.tsv");
  PassContext c = context([](const Graph& m) {
    if (whole_model(m)) TESSERA_FAIL("cannot time the whole model");
    return dilation_averse(m);
  });
  std::vector<PassRecord> recs = run_passes(*g, {"pet"}, o, c);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].rewrites, 0);
  EXPECT_EQ(structural_hash(*g), structural_hash(*original));
  std::filesystem::remove(o.pet_db);
}

// The whole-model check runs within the pass's budget: the search leaves it
// its share (SearchOptions::model_check_share), the comparison's rounds are
// bounded by what is left, and no comparison starts when nothing is left
// (the fallback's, after a comparison that overran).
TEST(PetPass, WholeModelCheckRunsWithinTheBudget) {
  for (bool overrun : {false, true}) {
    SCOPED_TRACE(overrun ? "the comparison overruns its bound" : "the comparison fills its bound");
    std::unique_ptr<Graph> original = dilated_chain();
    std::unique_ptr<Graph> g = original->clone();
    PassOptions o = pass_options("pet_model_check_budget.tsv");
    o.pet.budget_seconds = 1.2;
    o.pet.model_check_share = 0.5;
    // Candidates take 0.2 s each to time: the search would spend the whole
    // budget if it were not stopped at its share.
    PassContext c = context([](const Graph& m) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      return dilation_averse(m);
    });
    std::vector<double> bounds, started;
    const Stopwatch pass;
    c.compare_models = [&](const Graph& before, const Graph& after, double max_seconds) {
      EXPECT_TRUE(whole_model(before));
      EXPECT_TRUE(whole_model(after));
      started.push_back(pass.seconds());
      bounds.push_back(max_seconds);
      const double sleep = overrun ? 2 * max_seconds + 0.05 : max_seconds;
      std::this_thread::sleep_for(std::chrono::duration<double>(sleep));
      // Filling its bound, the choices pay; overrunning, they do not (so the
      // fallback would be next, with no time left for it).
      const double b = 1.0 + 2.0 * dilated_convs(before), a = 1.0 + 2.0 * dilated_convs(after);
      return overrun ? ModelComparison{b, b, 1.0, 1.0} : ModelComparison{b, a, a / b, a / b};
    };
    std::vector<PassRecord> recs = run_passes(*g, {"pet"}, o, c);
    const double took = pass.seconds();
    ASSERT_EQ(recs.size(), 1u);
    ASSERT_EQ(bounds.size(), 1u) << "one comparison; none started with no time left";
    if (!overrun) {
      // The search stopped at its share, 0.6 s: at least 0.6 s were left.
      EXPECT_GE(bounds[0], 0.6 - 0.05);
      EXPECT_LE(bounds[0], 1.2 - started[0] + 1e-3);
      EXPECT_LT(took, 1.2 + 0.15) << "the pass ran past its budget";
      EXPECT_GE(recs[0].rewrites, 1) << "checked within the budget, the choices are kept";
      EXPECT_NE(structural_hash(*g), structural_hash(*original));
      expect_same_outputs(*original, *g, random_inputs(*original, 5), 1e-5);
    } else {
      EXPECT_EQ(recs[0].rewrites, 0);
      EXPECT_EQ(structural_hash(*g), structural_hash(*original));
    }
    std::filesystem::remove(o.pet_db);
  }
}

// time_graph's bound: once max_seconds have passed, no further run starts;
// one timed run is the least (a compile alone outlasts a bound of 1 us).
TEST(PetPass, GraphTimerRunsEndByTheBound) {
  std::unique_ptr<Graph> g = dilated_chain();
  runtime::ExecutorOptions eo;
  eo.release_weights = false;
  EXPECT_EQ(runtime::time_graph(*g, eo, 1e-6).runs, 1);
  // Unbounded: at least 3 timed runs (7 when the first run is under 25 ms,
  // which a loaded machine may not give).
  EXPECT_GE(runtime::time_graph(*g, eo).runs, 3);
}

// The search asks for the whole-model check's reserve once, before its
// first measurement, and keeps it out of its budget from then: a reserve
// past the budget leaves no measurement; a search the database answers
// measures nothing and does not ask.
TEST(PetSearch, KeepsTheCheckReserveOutOfItsBudget) {
  for (double reserve : {0.0, 100.0}) {
    SCOPED_TRACE("reserve " + std::to_string(reserve) + " s");
    ModelBuilder b;
    Value* x = b.input("x", {1, 4, 8, 8});
    Value* y = b.relu(b.conv(x, 4, 3, 3, {2, 2, 2, 2}, "c1", 1, 2), "r1");
    b.g->add_output(b.relu(b.conv(y, 8, 3, 3, {2, 2, 2, 2}, "c2", 1, 2), "r2"));  // another structure
    infer_graph(*b.g);
    std::unique_ptr<Graph> original = b.g->clone();
    SearchOptions o = quiet();
    o.budget_seconds = 20;
    int asked = 0, measured = 0;
    o.check_reserve = [&] {
      ++asked;
      EXPECT_EQ(measured, 0) << "asked before the first measurement";
      return reserve;
    };
    CostFn cost = [&](const Graph& g) {
      ++measured;
      return dilation_averse(g);
    };
    const std::string path = ::testing::TempDir() + "/pet_check_reserve.tsv";
    std::filesystem::remove(path);
    PetDb db(path);
    SearchReport r = optimize_program(*b.g, o, cost, db, "test");
    EXPECT_EQ(r.subprograms, 2);
    EXPECT_EQ(asked, 1);
    EXPECT_EQ(r.check_reserve_seconds, reserve);
    if (reserve > 0) {
      EXPECT_EQ(measured, 0);
      EXPECT_TRUE(r.budget_exhausted);
      EXPECT_EQ(r.applied, 0);
      EXPECT_EQ(structural_hash(*b.g), structural_hash(*original));
    } else {
      EXPECT_GT(measured, 0);
      EXPECT_FALSE(r.budget_exhausted);
      EXPECT_EQ(r.searched, 2);
      EXPECT_GT(r.applied, 0);
      asked = measured = 0;
      std::unique_ptr<Graph> again = original->clone();
      optimize_program(*again, o, cost, db, "test");
      EXPECT_EQ(measured, 0);
      EXPECT_EQ(asked, 0) << "nothing to measure: the model is not compiled for a check";
      EXPECT_EQ(structural_hash(*again), structural_hash(*b.g));
    }
    std::filesystem::remove(path);
  }
}

// With PassContext::model_cost the pass compiles the model as it came before
// the search's first measurement and keeps the check's need out of the
// search's budget: the other model's compile and first run (a quarter
// longer than the first's), a warm-up and at least two rounds; the comparison then gets at least that
// and the pass ends within its budget.
TEST(PetPass, WholeModelCheckReserveIsSizedFromTheModel) {
  std::unique_ptr<Graph> original = dilated_chain();
  std::unique_ptr<Graph> g = original->clone();
  PassOptions o = pass_options("pet_model_check_cost.tsv");
  o.pet.budget_seconds = 2.0;
  int measures = 0, costs = 0;
  PassContext c = context([&](const Graph& m) {
    ++measures;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return dilation_averse(m);
  });
  // Compile 0.2 s, first run 0.1 s, a run 0.1 s: the reserve is 1.25 x (0.2
  // + 0.1) for the other model, then 0.2 s a round: a warm-up and two.
  c.model_cost = [&](const Graph& before) {
    EXPECT_EQ(structural_hash(before), structural_hash(*original)) << "the model as it came";
    EXPECT_EQ(measures, 0) << "before the first measurement";
    ++costs;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return ModelCost{0.2, 0.1, 0.1};
  };
  std::vector<double> bounds;
  const Stopwatch pass;
  c.compare_models = [&](const Graph& before, const Graph& after, double max_seconds) {
    bounds.push_back(max_seconds);
    std::this_thread::sleep_for(std::chrono::duration<double>(max_seconds));
    const double b = 1.0 + 2.0 * dilated_convs(before), a = 1.0 + 2.0 * dilated_convs(after);
    return ModelComparison{b, a, a / b, a / b};
  };
  std::vector<PassRecord> recs = run_passes(*g, {"pet"}, o, c);
  const double took = pass.seconds();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(costs, 1);
  ASSERT_EQ(bounds.size(), 1u);
  // One measurement may start just before the reserve is reached (0.1 s).
  EXPECT_GE(bounds[0], 0.975 - 0.1 - 0.05);
  EXPECT_LT(took, 2.0 + 0.15) << "the pass ran past its budget";
  EXPECT_GE(recs[0].rewrites, 1);
  expect_same_outputs(*original, *g, random_inputs(*original, 5), 1e-5);
  std::filesystem::remove(o.pet_db);
}

// A search the budget cut short, checked with the model's measured cost: a
// second compile with the same budget measures nothing, compiles nothing for
// a check, and leaves the model as the first did (the budget the database
// keeps for the cut is the one given, whatever the pass spent before the
// search).
TEST(PetPass, ASecondCompileWithTheSameBudgetMeasuresNothing) {
  ModelBuilder b;
  Value* x = b.input("x", {1, 4, 8, 8});
  Value* y = b.relu(b.conv(x, 4, 3, 3, {2, 2, 2, 2}, "c1", 1, 2), "r1");
  b.g->add_output(b.relu(b.conv(y, 8, 3, 3, {2, 2, 2, 2}, "c2", 1, 2), "r2"));  // another structure
  infer_graph(*b.g);
  PassOptions o = pass_options("pet_second_compile.tsv");
  o.pet.budget_seconds = 0.75;  // the check's reserve about 0.43 s: the search is cut after a few measurements
  int measures = 0, costs = 0, compares = 0;
  PassContext c = context([&](const Graph& m) {
    ++measures;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return dilation_averse(m);
  });
  c.model_cost = [&](const Graph&) {
    ++costs;
    return ModelCost{0.05, 0.05, 0.05};
  };
  c.compare_models = [&](const Graph& before, const Graph& after, double) {
    ++compares;
    const double r = (1.0 + 2.0 * dilated_convs(after)) / (1.0 + 2.0 * dilated_convs(before));
    return ModelComparison{1.0, r, r, r};
  };
  std::unique_ptr<Graph> first = b.g->clone();
  std::vector<PassRecord> recs = run_passes(*first, {"pet"}, o, c);
  ASSERT_EQ(recs.size(), 1u);
  ASSERT_GT(measures, 0);
  ASSERT_LT(measures, 6) << "the budget cut the first search short";
  measures = costs = compares = 0;
  std::unique_ptr<Graph> second = b.g->clone();
  run_passes(*second, {"pet"}, o, c);
  EXPECT_EQ(measures, 0);
  EXPECT_EQ(costs, 0);
  EXPECT_EQ(compares, 0) << "the check's verdict read back";
  EXPECT_EQ(structural_hash(*second), structural_hash(*first));
  std::filesystem::remove(o.pet_db);
}

// compare_graphs: both graphs compiled and run in turns on the same inputs;
// at most kCompareRounds rounds, two at least however small the bound; a
// second graph that takes other inputs is an error naming it.
TEST(PetPass, CompareGraphsTimesInTurnsWithinTheBound) {
  std::unique_ptr<Graph> g = dilated_chain();
  runtime::ExecutorOptions eo;
  eo.release_weights = false;
  const runtime::Interleaved bounded = runtime::compare_graphs(*g, *g, eo, 1e-6);
  EXPECT_EQ(bounded.rounds, 2);
  EXPECT_GT(bounded.a_ms, 0);
  EXPECT_GT(bounded.b_ms, 0);
  EXPECT_GT(bounded.ratio, 0);
  EXPECT_EQ(runtime::compare_graphs(*g, *g, eo).rounds, runtime::kCompareRounds);
  ModelBuilder b;
  b.g->add_output(b.relu(b.input("x", {1, 4, 8, 8}), "r"));
  Value* extra = b.input("y", {1, 4, 8, 8});
  (void)extra;
  infer_graph(*b.g);
  b.g->name = "two-inputs";
  try {
    runtime::compare_graphs(*g, *b.g, eo);
    ADD_FAILURE() << "a graph with other inputs was compared";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("two-inputs"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera::pet
