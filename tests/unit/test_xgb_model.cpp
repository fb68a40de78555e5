// The XGBoost ranking model (xgb_model.h): it learns a ranking it could not
// know otherwise (synthetic tasks whose cost is a known function of one
// column among random ones, judged on held-out tasks), a saved and loaded
// model predicts exactly the same, files of other layouts are refused,
// online updates, and predictions of candidates through the tuner's interface.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "cost/program_features.h"
#include "cost/ranking_metrics.h"
#include "cost/xgb_model.h"
#include "support/error.h"

namespace tessera::cost {
namespace {

constexpr int kColumns = 6;

// `tasks` groups of `per_task` rows of uniform random columns; a row's cost
// is 1 + (x[column] - 0.3)^2 (fastest near 0.3: not monotonic in the column).
std::vector<RankGroup> synthetic(int tasks, int per_task, uint64_t seed, int column = 2) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<RankGroup> groups(static_cast<size_t>(tasks));
  for (RankGroup& g : groups)
    for (int i = 0; i < per_task; ++i) {
      std::vector<float> row(kColumns);
      for (float& x : row) x = u(rng);
      const double d = row[static_cast<size_t>(column)] - 0.3;
      g.rows.push_back(row);
      g.seconds.push_back(1 + d * d);
    }
  return groups;
}

// Pairwise accuracy of the model's scores (higher = faster) on the groups.
double accuracy(const XgbModel& m, const std::vector<RankGroup>& groups) {
  CostGroups measured, predicted;
  for (const RankGroup& g : groups) {
    measured.push_back(g.seconds);
    predicted.push_back(costs_from_scores(m.predict_rows(g.rows)));
  }
  return pairwise_accuracy(measured, predicted);
}

XgbOptions small() {
  XgbOptions o;
  o.rounds = 60;
  o.update_rounds = 20;
  o.threads = 1;
  return o;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("tessera_xgb_" + std::to_string(::getpid()) + "_" + name)).string();
}

TEST(XgbModel, LearnsASyntheticRankingOnHeldOutTasks) {
  XgbModel m(HardwareDesc{}, 1, small());
  const std::vector<RankGroup> train = synthetic(20, 40, 1), test = synthetic(10, 40, 2);
  // Untrained: no preference (every pair a tie: 0.5).
  EXPECT_FALSE(m.trained());
  EXPECT_DOUBLE_EQ(accuracy(m, test), 0.5);
  m.train(train);
  EXPECT_TRUE(m.trained());
  const double acc = accuracy(m, test);
  EXPECT_GT(acc, 0.9);
  // The same rows with the cost made a function of another column: the
  // model, fitted to column 2, has no idea (chance, far below).
  EXPECT_LT(accuracy(m, synthetic(10, 40, 2, 4)), 0.7);
}

TEST(XgbModel, SavedAndLoadedPredictsTheSame) {
  XgbModel m(HardwareDesc{}, 1, small());
  m.train(synthetic(10, 30, 3));
  const std::string path = temp_path("model.json");
  m.save(path);
  XgbModel loaded(HardwareDesc{}, 1, small());
  loaded.load(path);
  for (const RankGroup& g : synthetic(3, 30, 4)) EXPECT_EQ(loaded.predict_rows(g.rows), m.predict_rows(g.rows));

  // A model of another feature layout is refused, naming the file.
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  std::string other = text.str();
  const size_t at = other.find("sum_float_mad");
  ASSERT_NE(at, std::string::npos);
  other.replace(at, 13, "sum_float_xyz");
  const std::string bad = temp_path("other.json");
  std::ofstream(bad) << other;
  try {
    loaded.load(bad);
    ADD_FAILURE() << "a model of another layout loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("another feature layout"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
  std::ofstream(bad) << "not a model";
  EXPECT_THROW(loaded.load(bad), Error);
  EXPECT_THROW(loaded.load(temp_path("missing.json")), Error);
  XgbModel untrained(HardwareDesc{}, 1, small());
  EXPECT_THROW(untrained.save(bad), Error);
  std::filesystem::remove(path);
  std::filesystem::remove(bad);
}

TEST(XgbModel, UpdatesOnline) {
  // From nothing, update is training: the same trees as train() (seeded).
  const std::vector<RankGroup> first = synthetic(8, 30, 5);
  XgbModel a(HardwareDesc{}, 1, small()), b(HardwareDesc{}, 1, small());
  a.update({});  // nothing to learn: still untrained
  EXPECT_FALSE(a.trained());
  a.update(first);
  b.train(first);
  const std::vector<RankGroup> probe = synthetic(3, 30, 6);
  EXPECT_EQ(a.predict_rows(probe[0].rows), b.predict_rows(probe[0].rows));
  EXPECT_THROW(b.train({}), Error);

  // A model pre-trained on column 2, loaded, then updated with tasks whose
  // cost follows column 4: its trees on top learn the new ranking.
  const std::string path = temp_path("base.json");
  a.save(path);
  XgbModel c(HardwareDesc{}, 1, small());
  c.load(path);
  const std::vector<RankGroup> shifted = synthetic(20, 40, 7, 4), shifted_test = synthetic(10, 40, 8, 4);
  const double before = accuracy(c, shifted_test);
  c.update(shifted);
  EXPECT_GT(accuracy(c, shifted_test), before + 0.2);
  EXPECT_GT(accuracy(c, shifted_test), 0.8);
  std::filesystem::remove(path);
}

// Behind the tuner's interface: predict() on candidates is minus the score
// of their program rows, and a model trained on hand-written kernels with
// made-up costs ranks them as taught.
TEST(XgbModel, PredictsCandidatesFromTheirProgramRows) {
  using namespace loop;
  // Y[i] = X[i] * s over 4096 elements, `lanes` at a time.
  auto scale = [](int lanes) {
    Buffer X("X", DType::F32, {4096}), Y("Y", DType::F32, {4096});
    Var i("i");
    Expr idx = lanes > 1 ? ramp(i * lanes, int_imm(1), lanes) : Expr(i);
    Expr two = lanes > 1 ? broadcast(float_imm(2.0), lanes) : float_imm(2.0);
    return Kernel{"scale", {X}, {Y},
                  for_loop(i, int_imm(0), int_imm(4096 / lanes), ForKind::Serial, store(Y, load(X, idx) * two, idx))};
  };
  std::vector<Kernel> kernels{scale(1), scale(4), scale(8), scale(16)};
  HardwareDesc hw;
  RankGroup g;
  std::vector<Candidate> candidates;
  for (const Kernel& k : kernels) {
    candidates.push_back({&k, nullptr});
    g.rows.push_back(program_features(candidates.back(), hw, 1));
  }
  g.seconds = {8, 4, 2, 1};  // wider is faster (as taught)
  XgbModel m(hw, 1, small());
  EXPECT_EQ(m.predict(candidates), std::vector<double>(4, 0.0)) << "untrained: no preference";
  m.train({g});
  const std::vector<double> p = m.predict(candidates), s = m.predict_rows(g.rows);
  ASSERT_EQ(p.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(p[i], -s[i]);
  EXPECT_DOUBLE_EQ(pairwise_accuracy({g.seconds}, {p}), 1);
}

}  // namespace
}  // namespace tessera::cost
