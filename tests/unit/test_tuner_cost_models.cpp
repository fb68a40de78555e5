// The auto-tuner with a cost model: the labels tune-fit's groups read from
// the records, and the searches the static, XGBoost and attention models
// rank (tuning runs start real workers on a small model, as in
// test_tuner.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cost/hardware.h"
#include "cost/program_features.h"
#include "cost/xgb_model.h"
#include "support/error.h"
#include "tune/cost_eval.h"
#include "tune/feature_dump.h"
#include "tune/model_config.h"
#include "tune/record.h"
#include "tune/task_space.h"
#include "tune/tuner.h"
#include "cli_runner.h"
#include "tuner_test_util.h"

using namespace tessera;
using namespace tessera::tune;
using tessera::testing::quick_options;
using tessera::testing::read_records;
using tessera::testing::small_net_file;
using tessera::testing::temp_path;

namespace {

// quick_options with a cost model, an empty records file, the host's ISA and
// the written-down description of a machine with that ISA.
TuneOptions model_options(const std::string& records, const std::string& cost_model) {
  std::filesystem::remove(records);
  TuneOptions o = quick_options(records);
  o.cost_model = cost_model;
  o.hardware = Target::for_isa(Isa::Host).isa == Isa::AVX512 ? "xeon-platinum-8272cl" : "xeon-e5-2673-v4";
  o.model.isa = Target::for_isa(Isa::Host).isa;
  return o;
}

}  // namespace

// Groups whose cost follows the stack spills per unit of float work, which
// the analytic estimate (noise here) ignores; the float work differs between
// groups by orders of magnitude.
std::vector<cost::FitGroup> spill_groups(uint64_t seed, int groups) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<cost::FitGroup> out;
  for (int g = 0; g < groups; ++g) {
    cost::FitGroup fg;
    fg.task = "tessera.ConvBlocked node 'c" + std::to_string(g) + "'";
    const double work = std::pow(10.0, 4 + g % 4);
    for (int i = 0; i < 16; ++i) {
      cost::StaticFeatures f;
      using F = cost::Feature;
      f[F::IrFlops] = work;
      f[F::Ghz] = 2;
      f[F::AsmAvailable] = 1;
      f[F::AsmFma] = work / 16;
      const double spills_per_work = 0.2 * u(rng);
      f[F::AsmSpills] = spills_per_work * work;
      f[F::EstSeconds] = 1e-3 * (1 + u(rng));
      f[F::OverheadSeconds] = 1e-7;
      fg.features.push_back(f);
      fg.seconds.push_back(work * 1e-9 * (1 + 5 * spills_per_work) * (1 + 0.01 * u(rng)));
      fg.schedules.push_back("#0 mr=" + std::to_string(i));
    }
    out.push_back(std::move(fg));
  }
  return out;
}

double number_after(const std::string& text, const std::string& word) {
  const size_t at = text.find(word);
  return at == std::string::npos ? -1 : std::stod(text.substr(at + word.size()));
}

// tune-fit fits and judges from feature dumps (no model, no records): the
// model fitted on one dump ranks another's groups, which it was not fitted
// on, better than the analytic estimate does.
TEST(TuneFit, FitsAndJudgesFeatureDumps) {
  const std::string train = temp_path("train.features.jsonl"), test = temp_path("test.features.jsonl"),
                    coefficients = temp_path("fit.coefficients.json");
  write_feature_dump(train, spill_groups(1, 8));
  write_feature_dump(test, spill_groups(2, 6));
  std::filesystem::remove(coefficients);
  const std::string common = " --isa avx2 --hardware xeon-e5-2673-v4 --coefficients " + coefficients;
  tessera::testing::CliResult fit = tessera::testing::cli("tune-fit --features " + train + common);
  ASSERT_EQ(fit.code, 0) << fit.out;
  EXPECT_NE(fit.out.find("8 tasks: fitted on"), std::string::npos) << fit.out;
  tessera::testing::CliResult judged = tessera::testing::cli("tune-fit --features " + test + common + " --judge");
  ASSERT_EQ(judged.code, 0) << judged.out;
  EXPECT_NE(judged.out.find("6 tasks, 96 candidates (none fitted on)"), std::string::npos) << judged.out;
  EXPECT_GT(number_after(judged.out, "pairwise "), 0.9) << judged.out;
  // The same groups under the analytic estimate alone: a coin toss.
  cost::StaticModel defaults(cost::find_hardware("xeon-e5-2673-v4"), 1);
  EXPECT_LT(judge(defaults, spill_groups(2, 6)).pairwise_fitted, 0.6);
  tessera::testing::CliResult none = tessera::testing::cli("tune-fit --isa avx2 --hardware xeon-e5-2673-v4");
  EXPECT_NE(none.code, 0);
  EXPECT_NE(none.out.find("needs at least one model"), std::string::npos) << none.out;
}

// tune-fit's groups read each schedule's repeats as the label says: by
// default the least disturbed run (what the static model predicts; a busy
// machine only slows runs), the median on request. Two schedules of one task
// whose order the two labels reverse.
TEST(CostEval, FitGroupsReadTheRepeatsAsTheLabelSays) {
  ModelConfig c;
  c.model = small_net_file();
  c.threads = 1;
  c.isa = Isa::AVX2;
  TuningModel m = open_model(c);
  const Target machine = Target::for_isa(Isa::AVX2);
  const compile::Task* task = nullptr;
  std::string other;  // a schedule text besides the default's ("")
  for (const runtime::TaskUse& u : m.tasks) {
    TaskSpace space(*u.task, machine);
    std::mt19937_64 rng(3);
    for (int k = 0; k < 50 && other.empty(); ++k) {
      schedule::SchedulePoint p = space.random_point(rng);
      if (!p.to_text().empty() && space.schedule_at(p)) other = p.to_text();
    }
    if (!other.empty()) {
      task = u.task.get();
      break;
    }
  }
  ASSERT_NE(task, nullptr) << "no task of the small net has a schedule besides its default";
  const std::string path = temp_path("labels.jsonl");
  std::filesystem::remove(path);
  RecordFile f(path);
  auto record = [&](const std::string& schedule, std::vector<double> costs) {
    Record r;
    r.task_key = compile::key_text(task->key);
    r.task = task->describe();
    r.target = machine.to_string();
    r.schedule = schedule;
    r.costs = std::move(costs);
    f.append(r);
  };
  record("", {1e-3, 5e-3, 5e-3});  // once undisturbed, twice slowed
  record(other, {2e-3, 2e-3, 2e-3});
  const cost::StaticModel features(cost::find_hardware("xeon-e5-2673-v4"), 1);
  auto seconds = [&](std::optional<CostLabel> label) {
    std::vector<cost::FitGroup> gs =
        label ? measured_groups(m, f, machine.to_string(), Isa::AVX2, features, false, *label)
              : measured_groups(m, f, machine.to_string(), Isa::AVX2, features, false);
    std::map<std::string, double> out;
    for (const cost::FitGroup& g : gs)
      if (g.task == task->describe())
        for (size_t i = 0; i < g.schedules.size(); ++i) out[g.schedules[i]] = g.seconds[i];
    return out;
  };
  const std::map<std::string, double> by_min = seconds(CostLabel::Min), by_median = seconds(CostLabel::Median),
                                      by_default = seconds(std::nullopt);
  ASSERT_EQ(by_min.size(), 2u);
  EXPECT_DOUBLE_EQ(by_min.at(""), 1e-3);
  EXPECT_DOUBLE_EQ(by_min.at(other), 2e-3);
  ASSERT_EQ(by_median.size(), 2u);
  EXPECT_DOUBLE_EQ(by_median.at(""), 5e-3);
  EXPECT_DOUBLE_EQ(by_median.at(other), 2e-3);
  EXPECT_EQ(by_default, by_min);
}

namespace {

// Over the tasks a search tuned (not skipped): each one's best no slower
// than its default (which is finite), at most `most_measured` candidates
// measured or reused a task when given; at least one task tuned, and one
// record written per measurement. Returns the candidates the cost model ranked.
int check_tuned_tasks(const TuneReport& r, const std::string& records, int most_measured = -1) {
  int ranked = 0, tuned = 0;
  for (const TaskReport& t : r.tasks) {
    if (!t.skipped.empty()) continue;
    ++tuned;
    ranked += t.ranked;
    if (most_measured >= 0) {
      EXPECT_LE(t.measured + t.reused, most_measured) << t.description;
    }
    EXPECT_TRUE(std::isfinite(t.default_seconds)) << t.description;
    EXPECT_LE(t.best_seconds, t.default_seconds) << t.description;
  }
  EXPECT_GT(tuned, 0);
  EXPECT_EQ(static_cast<int>(read_records(records).size()), r.measured);
  return ranked;
}

}  // namespace

// With the static model the search measures nothing: it ranks candidates
// (compiled, never run) and afterwards measures only the default and the
// best few predicted of each task.
TEST(Tuner, StaticModelSearchMeasuresOnlyTheBestPredicted) {
  const std::string records = temp_path("static.jsonl");
  TuneOptions o = model_options(records, "static");
  o.validate_top = 2;
  o.budget_seconds = 6;
  TuneReport r = tune_model(o);
  EXPECT_GT(check_tuned_tasks(r, records, 1 + o.validate_top), r.measured)
      << "the model ranked more candidates than were measured";
}

// With XGBoost trained online each round measures at most per_round of the
// four times as many candidates proposed; once a task has measurements of
// different cost the model ranks its proposals (more are ranked than measured).
TEST(Tuner, XgbModelPicksWhatIsMeasuredAndLearnsOnline) {
  const std::string records = temp_path("xgb.jsonl");
  TuneOptions o = model_options(records, "xgb");
  o.budget_seconds = 8;
  TuneReport r = tune_model(o);
  EXPECT_GT(check_tuned_tasks(r, records), 0) << "the model never ranked a round's proposals";

  o.cost_model_file = temp_path("absent-model.json");
  EXPECT_THROW(tune_model(o), Error);
  o.cost_model = "none";
  EXPECT_THROW(tune_model(o), Error);
}

// A pre-trained model (here XGBoost fitted to random rows: its ranks are
// arbitrary) fine-tuned online beside the model as loaded: once fine-tuned,
// both score every round's proposals, the pairs measured after are judged
// for both, one of them ranks each round, and the closing table says which.
TEST(Tuner, PreTrainedModelIsJudgedBesideItsFineTunedSelf) {
  const std::string records = temp_path("pretrained.jsonl"), file = temp_path("pretrained-xgb.json");
  TuneOptions o = model_options(records, "xgb");
  {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<float> u(0, 1);
    std::vector<cost::RankGroup> groups(4);
    for (cost::RankGroup& g : groups)
      for (int i = 0; i < 16; ++i) {
        std::vector<float> row(cost::program_feature_columns().size());
        for (float& x : row) x = u(rng);
        g.seconds.push_back(1 + row[0]);
        g.rows.push_back(std::move(row));
      }
    cost::XgbOptions xo;
    xo.rounds = 10;
    cost::XgbModel m(cost::find_hardware(o.hardware), 1, xo);
    m.train(groups);
    m.save(file);
  }
  o.cost_model_file = file;
  o.budget_seconds = 8;
  const TuneReport r = tune_model(o);
  check_tuned_tasks(r, records);
  const PrequentialTally& p = r.prequential;
  EXPECT_GT(p.rounds, 0) << "no round scored by both models";
  EXPECT_GT(p.pairs, 0);
  EXPECT_LE(p.loaded_ranked, p.rounds);
  EXPECT_LE(p.online_right, static_cast<double>(p.pairs));
  EXPECT_LE(p.loaded_right, static_cast<double>(p.pairs));
  EXPECT_NE(report_table(r).find("pre-trained model: of "), std::string::npos) << report_table(r);
}

// The attention model behind the same search: it ranks proposals once a
// task has measurements of different cost, and a file that is no attention
// model is refused.
TEST(Tuner, AttentionModelPicksWhatIsMeasuredAndLearnsOnline) {
  const std::string records = temp_path("attention.jsonl");
  TuneOptions o = model_options(records, "attention");
  o.budget_seconds = 8;
  TuneReport r = tune_model(o);
  EXPECT_GT(check_tuned_tasks(r, records), 0) << "the model never ranked a round's proposals";
  const std::string bad = temp_path("not-attention.pt");
  std::ofstream(bad) << "{}";
  o.cost_model_file = bad;
  EXPECT_THROW(tune_model(o), Error);
}
