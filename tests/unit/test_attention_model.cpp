// The attention cost model (attention_model.h): it learns a ranking it could
// not know otherwise (synthetic programs of one to three stores whose cost is
// a known function of one hidden column, judged on held-out groups), tells
// targets apart by their hardware vector, predicts exactly the same after a
// save and load and for the same seed, refuses files of other layouts, and
// fine-tuned on a few groups of a new target whose cost follows another
// column it ranks that target much better.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "cost/attention_model.h"
#include "cost/ranking_metrics.h"
#include "cost/value_features.h"
#include "support/error.h"
#include "temp_folder.h"

namespace tessera::cost {
namespace {

std::string temp_path(const std::string& name) {
  static const tessera::testing::TempFolder folder("attention");
  return folder.path(name);
}

HardwareDesc machine(Isa isa, int cores) {
  HardwareDesc hw;
  hw.isa = isa;
  hw.vector_bytes = isa == Isa::AVX512 ? 64 : 32;
  hw.vector_registers = isa == Isa::AVX512 ? 32 : 16;
  hw.cores = cores;
  return hw;
}

constexpr int kRandomColumns = 16;  // the others are zero, as most of a real row is

// `groups` groups of `per_group` programs on `hw`, each of 1..max_stores
// stores whose first kRandomColumns are uniform random raw values in
// [0, 100); a program costs
// sum over its stores of 1 + (x[column] / 100 - 0.3)^2.
std::vector<SampleGroup> synthetic(int groups, int per_group, uint64_t seed, const HardwareDesc& hw, int column,
                                   int max_stores = 3) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 100);
  std::uniform_int_distribution<int> stores(1, max_stores);
  std::vector<SampleGroup> out(static_cast<size_t>(groups));
  for (SampleGroup& g : out)
    for (int i = 0; i < per_group; ++i) {
      ProgramSample p;
      p.hardware = hardware_features(hw);
      double cost = 0;
      for (int s = stores(rng); s > 0; --s) {
        std::vector<double> row(kValueFeatureCount, 0.0);
        for (int c = 0; c < kRandomColumns; ++c) row[static_cast<size_t>(c)] = u(rng);
        const double d = row[static_cast<size_t>(column)] / 100 - 0.3;
        cost += 1 + d * d;
        p.values.push_back(std::move(row));
      }
      g.programs.push_back(std::move(p));
      g.seconds.push_back(cost);
    }
  return out;
}

double accuracy(const AttentionModel& m, const std::vector<SampleGroup>& groups) {
  CostGroups measured, predicted;
  for (const SampleGroup& g : groups) {
    measured.push_back(g.seconds);
    predicted.push_back(costs_from_scores(m.predict_samples(g.programs)));
  }
  return pairwise_accuracy(measured, predicted);
}

AttentionOptions small() {
  AttentionOptions o;
  o.dim = 32;
  o.heads = 2;
  o.epochs = 150;
  o.fine_tune_epochs = 100;
  o.threads = 1;
  return o;
}

const HardwareDesc kA = machine(Isa::AVX512, 1), kB = machine(Isa::AVX2, 2);

TEST(AttentionModel, LearnsASyntheticRankingOnHeldOutGroups) {
  AttentionModel m(kA, small());
  const std::vector<SampleGroup> train = synthetic(24, 40, 1, kA, 2), test = synthetic(10, 40, 2, kA, 2);
  EXPECT_FALSE(m.trained());
  EXPECT_DOUBLE_EQ(accuracy(m, test), 0.5);  // untrained: every pair a tie
  m.train(train);
  EXPECT_TRUE(m.trained());
  EXPECT_GT(accuracy(m, test), 0.9);
  // One store a program and the cost following another column: nothing it learned applies.
  EXPECT_LT(accuracy(m, synthetic(10, 40, 2, kA, 4, 1)), 0.7);
}

TEST(AttentionModel, TellsTargetsApartByTheirHardware) {
  // Target A's cost follows column 2, B's column 4 (single-store programs,
  // so the store count tells nothing): one model trained on both ranks each.
  std::vector<SampleGroup> train = synthetic(16, 40, 3, kA, 2, 1), b = synthetic(16, 40, 4, kB, 4, 1);
  train.insert(train.end(), b.begin(), b.end());
  AttentionModel m(kA, small());
  m.train(train);
  EXPECT_GT(accuracy(m, synthetic(8, 40, 5, kA, 2, 1)), 0.85);
  EXPECT_GT(accuracy(m, synthetic(8, 40, 6, kB, 4, 1)), 0.85);
}

TEST(AttentionModel, SavedAndLoadedPredictsTheSame) {
  AttentionOptions o = small();
  o.epochs = 5;
  AttentionModel m(kA, o), again(kA, o);
  const std::vector<SampleGroup> train = synthetic(8, 20, 7, kA, 2);
  m.train(train);
  again.train(train);
  const std::vector<SampleGroup> probe = synthetic(2, 20, 8, kA, 2);
  EXPECT_EQ(again.predict_samples(probe[0].programs), m.predict_samples(probe[0].programs)) << "same seed, same model";
  const std::string path = temp_path("model.pt");
  m.save(path);
  AttentionModel loaded(kA, o);
  loaded.load(path);
  EXPECT_TRUE(loaded.trained());
  for (const SampleGroup& g : probe) EXPECT_EQ(loaded.predict_samples(g.programs), m.predict_samples(g.programs));

  const std::string bad = temp_path("bad.pt");
  std::ofstream(bad) << "not a model";
  try {
    loaded.load(bad);
    ADD_FAILURE() << "a file that is no model loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
  EXPECT_THROW(loaded.load(temp_path("missing.pt")), Error);
  AttentionModel untrained(kA, o);
  EXPECT_THROW(untrained.save(bad), Error);
  EXPECT_THROW(untrained.train({}), Error);
  // Rows of the wrong width are refused, not read past.
  ProgramSample wrong;
  wrong.values = {{1.0, 2.0}};
  wrong.hardware = hardware_features(kA);
  EXPECT_THROW(m.predict_samples({wrong}), Error);
}

TEST(AttentionModel, FineTuningOnANewTargetImprovesItsRanking) {
  // Trained on target A (cost follows column 2), saved and loaded; target
  // B's cost follows column 4: a few groups of B fine-tune it.
  AttentionModel source(kA, small());
  source.train(synthetic(24, 40, 9, kA, 2, 1));
  const std::string path = temp_path("source.pt");
  source.save(path);
  AttentionModel m(kB, small());
  m.load(path);
  const std::vector<SampleGroup> few = synthetic(6, 40, 10, kB, 4, 1), test = synthetic(10, 40, 11, kB, 4, 1);
  const double before = accuracy(m, test);
  m.update(few);
  const double after = accuracy(m, test);
  EXPECT_GT(after, before + 0.2) << "before " << before;
  EXPECT_GT(after, 0.85);
  // update() starts from the loaded weights each time: the same groups again give the same model.
  const std::vector<double> once = m.predict_samples(test[0].programs);
  m.update(few);
  EXPECT_EQ(m.predict_samples(test[0].programs), once);
}

// Behind the tuner's interface: hand-written kernels with made-up costs,
// ranked as taught; predict() is minus the samples' scores.
TEST(AttentionModel, PredictsCandidatesFromTheirLoopIr) {
  using namespace loop;
  auto scale = [](int lanes) {
    Buffer X("X", DType::F32, {4096}), Y("Y", DType::F32, {4096});
    Var i("i");
    Expr idx = lanes > 1 ? ramp(i * lanes, int_imm(1), lanes) : Expr(i);
    Expr two = lanes > 1 ? broadcast(float_imm(2.0), lanes) : float_imm(2.0);
    return Kernel{"scale", {X}, {Y},
                  for_loop(i, int_imm(0), int_imm(4096 / lanes), ForKind::Serial, store(Y, load(X, idx) * two, idx))};
  };
  std::vector<Kernel> kernels{scale(1), scale(4), scale(8), scale(16)};
  SampleGroup g;
  std::vector<Candidate> candidates;
  for (const Kernel& k : kernels) {
    candidates.push_back({&k, nullptr});
    g.programs.push_back(AttentionModel::sample_of(candidates.back(), kA));
  }
  g.seconds = {8, 4, 2, 1};  // wider is faster (as taught)
  AttentionModel m(kA, small());
  EXPECT_EQ(m.predict(candidates), std::vector<double>(4, 0.0)) << "untrained: no preference";
  m.train({g});
  const std::vector<double> p = m.predict(candidates), s = m.predict_samples(g.programs);
  ASSERT_EQ(p.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(p[i], -s[i]);
  EXPECT_DOUBLE_EQ(pairwise_accuracy({g.seconds}, {p}), 1);
}

}  // namespace
}  // namespace tessera::cost
