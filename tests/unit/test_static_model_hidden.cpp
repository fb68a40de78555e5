// The static model's hidden units (terms that interact, fitted pairwise)
// and the feature dumps tune-fit fits and judges from: a held-out ranking
// the linear model cannot learn, coefficient files with hidden units, and
// dumps read back as written.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

#include "cost/hardware.h"
#include "cost/ranking_metrics.h"
#include "cost/static_model.h"
#include "support/error.h"
#include "tune/feature_dump.h"

namespace tessera::cost {
namespace {

// Groups whose measured cost follows the product of two centred quantities,
// the spill count's and the gather count's: candidates high in both or low
// in both are slow, mixed ones fast. No sum of functions of one term each
// ranks them; the analytic estimate is noise.
std::vector<FitGroup> interaction_groups(uint64_t seed, int groups, int per_group) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1), c(-1, 1);
  std::vector<FitGroup> out;
  for (int g = 0; g < groups; ++g) {
    FitGroup fg;
    fg.task = "MatMul node 'g" + std::to_string(g) + "'";
    for (int i = 0; i < per_group; ++i) {
      StaticFeatures f;
      f[Feature::Ghz] = 2;
      f[Feature::AsmAvailable] = 1;
      f[Feature::AsmFma] = 1000;
      f[Feature::AsmLoads] = 1000;
      const double x = c(rng), y = c(rng);
      f[Feature::AsmSpills] = 1000 * (1.5 + x);
      f[Feature::AsmGathers] = 1000 * (1.5 + y);
      f[Feature::ComputeCycles] = 1e6;
      f[Feature::FrontEndCycles] = 1e5;
      f[Feature::L1Cycles] = 1e5;
      f[Feature::OverheadSeconds] = 1e-7;
      f[Feature::ParallelBalance] = 1;
      f[Feature::EstSeconds] = 1e-3 * (1 + u(rng));
      fg.features.push_back(f);
      fg.seconds.push_back(1e-3 * std::exp(0.8 * x * y) * (1 + 0.02 * u(rng)));
      fg.schedules.push_back("#0 mr=" + std::to_string(i));
    }
    out.push_back(std::move(fg));
  }
  return out;
}

double accuracy(const StaticModel& m, const std::vector<FitGroup>& gs) {
  CostGroups y, p;
  for (const FitGroup& g : gs) {
    y.push_back(g.seconds);
    p.push_back(m.predict_features(g.features));
  }
  return pairwise_accuracy(y, p);
}

HardwareDesc hw() { return find_hardware("xeon-e5-2673-v4"); }

TEST(StaticModelHidden, LearnsAnInteractionTheLinearModelCannot) {
  const std::vector<FitGroup> train = interaction_groups(1, 10, 24), test = interaction_groups(2, 10, 24);
  StaticModel defaults(hw(), 4), linear(hw(), 4), hidden(hw(), 4);
  FitOptions o;
  linear.fit(train, o);
  o.hidden_units = 8;
  hidden.fit(train, o);
  EXPECT_TRUE(linear.hidden().empty());
  ASSERT_EQ(hidden.hidden().size(), 8u);
  const double by_default = accuracy(defaults, test), by_linear = accuracy(linear, test),
               by_hidden = accuracy(hidden, test);
  EXPECT_LT(by_default, 0.6);
  EXPECT_LT(by_linear, 0.65);
  EXPECT_GT(by_hidden, 0.8);  // on groups it was not fitted on
  EXPECT_GT(by_hidden, by_linear + 0.15);
  // A fit starts from the defaults: fitting the linear form again forgets the units.
  hidden.fit(train, FitOptions{});
  EXPECT_TRUE(hidden.hidden().empty());
  EXPECT_EQ(hidden.coefficients(), linear.coefficients());
  hidden.reset();
  EXPECT_EQ(hidden.coefficients(), StaticModel::default_coefficients());
  EXPECT_DOUBLE_EQ(accuracy(hidden, test), by_default);
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + std::to_string(::getpid()))).string();
}

TEST(StaticModelHidden, CoefficientFileKeepsTheUnits) {
  const std::string path = temp_path("tessera_static_hidden_") + ".json";
  std::filesystem::remove(path);
  const std::vector<FitGroup> train = interaction_groups(3, 6, 16), test = interaction_groups(4, 3, 16);
  StaticModel a(hw(), 4);
  FitOptions o;
  o.hidden_units = 3;
  o.iterations = 50;
  a.fit(train, o);
  a.save(path);
  StaticModel b(hw(), 4);
  b.load(path);
  ASSERT_EQ(b.hidden().size(), 3u);
  EXPECT_EQ(b.coefficients(), a.coefficients());
  for (const FitGroup& g : test)
    for (const StaticFeatures& f : g.features) EXPECT_DOUBLE_EQ(b.predict_log(f), a.predict_log(f));

  // A linear file loads without units, over a model that had some.
  StaticModel linear(find_hardware("epyc-7452"), 4);
  linear.save(path);
  StaticModel c(find_hardware("epyc-7452"), 4);
  c.set_hidden(a.hidden(), std::vector<double>(kTermCount, 0.0), std::vector<double>(kTermCount, 1.0));
  c.load(path);
  EXPECT_TRUE(c.hidden().empty());

  // A unit without one of its weights is refused, naming the term.
  std::string text = a.coefficients_json();
  const std::string key = "\"" + term_name(static_cast<int>(Term::GatherRatio)) + "\"";
  const size_t hidden_at = text.find("\"hidden\"");
  ASSERT_NE(hidden_at, std::string::npos);
  const size_t at = text.find(key, hidden_at);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, key.size(), "\"not_a_term\"");
  {
    std::ofstream f(path);
    f << text;
  }
  StaticModel d(hw(), 4);
  try {
    d.load(path);
    ADD_FAILURE() << "loaded a hidden unit without its gather_ratio weight";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lacks hidden weight 'gather_ratio'"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(StaticModelHidden, FeatureDumpReadsBackAsWritten) {
  const std::string path = temp_path("tessera_feature_dump_") + ".jsonl";
  std::vector<FitGroup> groups = interaction_groups(5, 3, 5);
  groups[1].features[2][Feature::IrFlops] = 123456789.25;
  tune::write_feature_dump(path, groups);
  const std::vector<FitGroup> back = tune::read_feature_dump(path);
  ASSERT_EQ(back.size(), groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    EXPECT_EQ(back[g].task, groups[g].task);
    EXPECT_EQ(back[g].seconds, groups[g].seconds);
    EXPECT_EQ(back[g].schedules, groups[g].schedules);
    ASSERT_EQ(back[g].features.size(), groups[g].features.size());
    for (size_t i = 0; i < groups[g].features.size(); ++i) EXPECT_EQ(back[g].features[i].v, groups[g].features[i].v);
  }

  // A dump of other features, or a line that is not a candidate, is refused by name.
  std::string text;
  {
    std::ifstream in(path);
    std::getline(in, text);
  }
  {
    std::ofstream f(path);
    f << "{\"features\":[\"ir_flops\"]}\n";
  }
  try {
    tune::read_feature_dump(path);
    ADD_FAILURE() << "read a dump of one feature";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dump it again"), std::string::npos) << e.what();
  }
  {
    std::ofstream f(path);
    f << text << "\n{\"group\": 0, \"seconds\": 1e-3, \"f\": [1, 2]}\n";
  }
  try {
    tune::read_feature_dump(path);
    ADD_FAILURE() << "read a candidate of two features";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tessera::cost
