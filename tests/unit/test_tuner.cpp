// The auto-tuner: task spaces and their positional points, the task
// scheduler, measurement workers, records that resume a run, and the checks
// that keep a wrong candidate out of a compiled model. Tuning runs start real
// workers (the tessera CLI's tune-worker) on a small model.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>

#include <unistd.h>

#include "frontend/onnx_export.h"
#include "interp/interpreter.h"
#include "cli_runner.h"
#include "temp_folder.h"
#include "tune_test_options.h"
#include "random_tensor.h"
#include "support/error.h"
#include "tessera/runtime.h"
#include "codegen/llvm/jit.h"
#include "cost/hardware.h"
#include "tune/cost_eval.h"
#include "tune/measure.h"
#include "tune/model_config.h"
#include "tune/model_guard.h"
#include "tune/record.h"
#include "tune/record_schedules.h"
#include "tune/task_scheduler.h"
#include "tune/task_space.h"
#include "tune/tuner.h"

using namespace tessera;
using namespace tessera::tune;
using tessera::testing::random_f32;

namespace {

// x f32[1,8,12,12] -> Conv 16x3x3 (pad 1) -> Relu -> GlobalAveragePool ->
// Flatten -> Gemm 16->10: a contraction with a tiled rule, a reduction and a
// small product. `prefix` renames every node and value.
std::unique_ptr<Graph> small_net(const std::string& prefix = "") {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input(prefix + "x", {DType::F32, {1, 8, 12, 12}, true});
  Value* w = g->add_constant(prefix + "w", random_f32({16, 8, 3, 3}, 3, -0.5f, 0.5f));
  Value* fc = g->add_constant(prefix + "fc", random_f32({10, 16}, 4, -0.5f, 0.5f));
  AttrMap conv;
  conv["pads"] = Attribute::of_ints({1, 1, 1, 1});
  Value* c = g->add_node("Conv", {x, w}, {prefix + "c"}, conv, prefix + "conv")->outputs[0];
  Value* r = g->add_node("Relu", {c}, {prefix + "r"}, {}, prefix + "relu")->outputs[0];
  Value* p = g->add_node("GlobalAveragePool", {r}, {prefix + "p"}, {}, prefix + "pool")->outputs[0];
  Value* f = g->add_node("Flatten", {p}, {prefix + "f"}, {}, prefix + "flatten")->outputs[0];
  AttrMap gemm;
  gemm["transB"] = Attribute::of_int(1);
  Value* y = g->add_node("Gemm", {f, fc}, {prefix + "y"}, gemm, prefix + "gemm")->outputs[0];
  g->add_output(y);
  return g;
}

// A folder per test process, removed when it exits: test runs of other
// checkouts on the same machine (or ctest -j) must not write into each
// other's records files (with one shared folder, another checkout's run
// appending its "cheat" record is the likely cause of a record with costs
// seen by WrongOutputsAreRecordedAndNeverApplied).
std::string temp_path(const std::string& name) {
  static const tessera::testing::TempFolder folder("tuner");
  return folder.path(name);
}

std::string small_net_file() {
  static const std::string path = [] {
    std::string p = temp_path("small_net.onnx");
    export_onnx_file(*small_net(), p);
    return p;
  }();
  return path;
}

TuneOptions quick_options(const std::string& records) {
  TuneOptions o = tessera::testing::quick_tune_options(small_net_file(), records);
  // This process's own fusion profile: the tests open the model themselves
  // too, outside tune_model (whose private snapshot of the default profile
  // covers its run only), and other tests' profiling must not change that plan.
  o.model.fusion_db = temp_path("fusion_profile.tsv");
  return o;
}

std::vector<Record> read_records(const std::string& path) { return RecordFile(path).records(); }

// No schedule of a task has two records of one machine: nothing was measured twice.
void expect_each_measured_once(const std::vector<Record>& records) {
  std::set<std::tuple<std::string, std::string, std::string>> seen;
  for (const Record& r : records)
    EXPECT_TRUE(seen.insert({r.task_key, r.target, r.schedule}).second) << "measured twice: " << r.task << "\n" << r.schedule;
}

}  // namespace

TEST(TaskSpace, PositionalPointsApplyToTasksOfOtherNames) {
  ModelConfig a, b;
  auto ga = small_net("a_"), gb = small_net("b_");
  runtime::ExecutorOptions eo;
  eo.isa = Isa::AVX2;
  runtime::Executor ea(std::move(ga), eo), eb(std::move(gb), eo);
  std::vector<Tensor> in{random_f32({1, 8, 12, 12}, 1)};
  std::vector<runtime::TaskUse> ta = ea.tasks(in), tb = eb.tasks(in);
  ASSERT_EQ(ta.size(), tb.size());
  const Target machine = Target::for_isa(Isa::AVX2);
  int tried = 0;
  for (size_t i = 0; i < ta.size(); ++i) {
    ASSERT_EQ(ta[i].task->key, tb[i].task->key) << "task keys must not depend on names";
    TaskSpace sa(*ta[i].task, machine), sb(*tb[i].task, machine);
    std::mt19937_64 rng(7);
    for (int k = 0; k < 20; ++k) {
      schedule::SchedulePoint p = sa.random_point(rng);
      std::optional<schedule::Schedule> s1 = sa.schedule_at(p), s2 = sb.schedule_at(p);
      ASSERT_EQ(s1.has_value(), s2.has_value()) << p.to_text();
      if (!s1) continue;
      ++tried;
      // The same schedule, up to the names.
      ASSERT_EQ(s1->directives.size(), s2->directives.size());
      for (size_t d = 0; d < s1->directives.size(); ++d) EXPECT_EQ(s1->directives[d].kind, s2->directives[d].kind);
      for (const auto& [stage, values] : sa.named(p).stages) EXPECT_EQ(stage.rfind("a_", 0), 0u) << stage;
    }
  }
  EXPECT_GT(tried, 0);
}

TEST(TaskSpace, MutationChangesOneKnob) {
  runtime::Executor e(small_net(), {});
  std::vector<runtime::TaskUse> tasks = e.tasks({random_f32({1, 8, 12, 12}, 1)});
  std::mt19937_64 rng(3);
  int checked = 0;
  for (const runtime::TaskUse& u : tasks) {
    TaskSpace s(*u.task, Target::for_isa(Isa::Host));
    if (s.free_knobs() == 0) continue;
    schedule::SchedulePoint p = s.random_point(rng);
    schedule::SchedulePoint q = s.mutate(p, rng);
    int differ = 0;
    for (const auto& [stage, values] : q.stages)
      for (const auto& [knob, v] : values) {
        auto st = p.stages.find(stage);
        differ += st == p.stages.end() || !st->second.count(knob) || st->second.at(knob) != v;
      }
    EXPECT_EQ(differ, 1) << p.to_text() << " -> " << q.to_text();
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// `tessera tune --show-space` lists each task's rules and knobs with their
// defaults marked, the same space TaskSpace gives, and measures nothing.
TEST(TaskSpace, ShowSpaceListsTheKnobsAndMeasuresNothing) {
  const std::string records = temp_path("show_space.jsonl");
  std::filesystem::remove(records);
  const tessera::testing::CliResult r =
      tessera::testing::cli("tune " + small_net_file() + " --records " + records + " --isa avx2 --show-space");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string& out = r.out;
  EXPECT_FALSE(std::filesystem::exists(records)) << "--show-space must not measure";
  ModelConfig config;
  config.model = small_net_file();
  config.isa = Isa::AVX2;
  const std::vector<runtime::TaskUse> tasks = open_model(config).tasks;
  ASSERT_FALSE(tasks.empty());
  EXPECT_NE(out.find(std::to_string(tasks.size()) + " tasks"), std::string::npos) << out;
  int knobs = 0;
  for (const runtime::TaskUse& u : tasks) {
    TaskSpace space(*u.task, Target::for_isa(Isa::AVX2));
    for (const schedule::StageSpace& st : space.stages()) {
      const size_t line = out.find(st.rule + " ");
      ASSERT_NE(line, std::string::npos) << st.rule << "\n" << out;
      ASSERT_NE(out.find(st.stage + ":"), std::string::npos) << st.stage << "\n" << out;
      for (const schedule::Knob& k : st.knobs) {
        // "name={v|*default|v}" after the stage's name: the default marked.
        const size_t at = out.find(" " + k.name + "={", out.find(st.stage + ":"));
        ASSERT_NE(at, std::string::npos) << k.name << "\n" << out;
        const std::string group = out.substr(at, out.find('}', at) - at);
        EXPECT_NE(group.find("*" + std::to_string(k.default_value)), std::string::npos) << group;
        ++knobs;
      }
    }
  }
  EXPECT_GT(knobs, 3) << "the small net's convolution and product have tiling knobs";
}

TEST(TaskScheduler, HeaviestFirstThenTheLargestWeightedGain) {
  TaskScheduler s({1, 3, 2});
  EXPECT_EQ(s.next(), 1);
  s.update(1, 1.0);
  EXPECT_EQ(s.next(), 2);
  s.update(2, 1.0);
  EXPECT_EQ(s.next(), 0);
  s.update(0, 1.0);
  // All tried: task 2's cost falls fast, task 1 stalls over many rounds; 0 is light.
  s.update(2, 0.5);
  for (int i = 0; i < 8; ++i) s.update(1, 1.0);
  EXPECT_EQ(s.next(), 2);
  s.retire(2);
  EXPECT_EQ(s.next(), 0) << "one round of a light task promises more than a ninth of a stalled one";
  s.retire(0);
  EXPECT_EQ(s.next(), 1);
  s.retire(1);
  EXPECT_EQ(s.next(), -1);
}

TEST(ModelConfig, JsonRoundTrip) {
  ModelConfig c;
  c.model = "zoo:resnet18";
  c.input_shapes["x"] = {1, 3, 64, 64};
  c.disabled_passes = {"winograd"};
  c.isa = Isa::AVX2;
  c.threads = 3;
  c.fusion = false;
  c.seed = 42;
  c.winograd_tiles["n1 c4x16 m4x16 r64 50x50->50x50 pads1,1,1,1"] = 2;
  c.fusion_db = "/tmp/profile.tsv";
  ModelConfig d = ModelConfig::from_json(c.to_json());
  EXPECT_EQ(d.to_json(), c.to_json());
  EXPECT_EQ(d.winograd_tiles, c.winograd_tiles);
  EXPECT_THROW(ModelConfig::from_json("{\"model\": 3}"), Error);
}

TEST(Measure, RelativeDifference) {
  Tensor a = random_f32({4, 4}, 1), b = a.clone();
  EXPECT_EQ(relative_difference(a, b), 0.0);
  b.data<float>()[3] += 0.5f * std::fabs(b.data<float>()[3]) + 1e-3f;
  EXPECT_GT(relative_difference(a, b), 1e-4);
  Tensor i(DType::I64, {3}), j(DType::I64, {3});
  i.data<int64_t>()[0] = j.data<int64_t>()[0] = 5;
  EXPECT_EQ(relative_difference(i, j), 0.0);
  j.data<int64_t>()[2] = 1;
  EXPECT_TRUE(std::isinf(relative_difference(i, j)));
}

// A restarted run finds what the first one measured in the records and
// measures none of it again; what it applies matches the interpreter, and
// its closing comparison runs the model with what it read and appended.
TEST(Tuner, ResumeMeasuresNothingTwiceAndRecordsApply) {
  const std::string records = temp_path("resume.jsonl");
  std::filesystem::remove(records);
  TuneReport first = tune_model(quick_options(records));
  const size_t n1 = read_records(records).size();
  ASSERT_GT(n1, 0u);
  EXPECT_EQ(first.measured, static_cast<int>(n1));
  TuneOptions again = quick_options(records);
  again.final_runs = 3;
  TuneReport second = tune_model(again);
  EXPECT_EQ(second.reused, static_cast<int>(n1)) << "the second run replays the first from the records";
  EXPECT_GT(second.model_default_ms, 0);
  EXPECT_GT(second.model_tuned_ms, 0);
  EXPECT_LE(second.output_difference, 1e-4);
  const std::vector<Record> all = read_records(records);
  expect_each_measured_once(all);
  for (const Record& r : all) {
    if (r.ok()) {
      EXPECT_TRUE(r.paired()) << "every repeat timed beside the default's: " << r.task;
    }
  }
  for (const TaskReport& t : second.tasks) {
    if (t.skipped.empty()) {
      EXPECT_LE(t.best_seconds, t.default_seconds) << t.description;
    }
  }

  CompileOptions co;
  co.records = records;
  co.threads = 1;
  CompiledModel m = CompiledModel::compile(small_net_file(), co);
  std::vector<Tensor> in{random_f32({1, 8, 12, 12}, 9)};
  std::vector<Tensor> got = m.run(in), want = m.run_reference(in);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_LE(relative_difference(got[0], want[0]), 1e-4);
}

// Graph choices come first, within their share of the budget: the small
// net's one 3x3 convolution gets its alternatives measured in the model,
// the closing table lists the geometry, and a resumed run re-measures
// nothing (neither a choice nor a schedule).
TEST(Tuner, GraphChoicesComeFirstAndResume) {
  const std::string records = temp_path("graph.jsonl");
  std::filesystem::remove(records);
  TuneOptions o = quick_options(records);
  o.graph_share = 0.5;
  o.graph_runs = 3;
  TuneReport first = tune_model(o);
  ASSERT_EQ(first.graph.choices.size(), 1u);
  EXPECT_GE(first.graph.measured, 1);
  EXPECT_NE(report_table(first).find("winograd " + first.graph.choices[0].geometry), std::string::npos)
      << report_table(first);
  TuneReport second = tune_model(o);
  EXPECT_EQ(second.graph.measured, 0);
  EXPECT_EQ(second.graph.reused, first.graph.measured);
  EXPECT_EQ(second.graph.applied, first.graph.applied);
  expect_each_measured_once(read_records(records));
}

// The best schedule of each task is measured again beside its default, at
// most confirm_rounds more times over all runs, and the report gives the
// pooled costs of what the records choose.
TEST(Tuner, ConfirmationMeasuresTheBestAgainAndPools) {
  const std::string records = temp_path("confirm.jsonl");
  std::filesystem::remove(records);
  TuneOptions o = quick_options(records);
  o.confirm_rounds = 2;
  o.confirm_share = 0.5;
  TuneReport r = tune_model(o);
  tune_model(o);  // resumed: no task gets more than confirm_rounds further records of its best
  RecordFile f(records);
  const std::string target = Target::for_isa(codegen::host_isa()).to_string();
  for (const TaskReport& t : r.tasks) {
    if (!t.skipped.empty()) continue;
    const Record* best = f.best(t.key, target);
    ASSERT_NE(best, nullptr) << t.description;
    const int n = f.count(t.key, target, best->schedule);
    EXPECT_LE(n, 1 + o.confirm_rounds) << t.description;
    // A best other than the default won against it measured again (the
    // confirmation runs after the search; the budget leaves it time).
    if (!best->schedule.empty()) {
      EXPECT_GE(n, 2) << t.description << ": its best was not confirmed";
    }
    EXPECT_LE(f.pooled_cost(t.key, target, best->schedule), f.pooled_cost(t.key, target, ""));
  }
}

// Every candidate's output is corrupted in the worker (the test hook of
// measure_worker.h): each is recorded as a wrong output, and compiling with
// the records applies none of them — even one written with the best cost.
TEST(Tuner, WrongOutputsAreRecordedAndNeverApplied) {
  const std::string records = temp_path("wrong.jsonl");
  std::filesystem::remove(records);
  ::setenv("TESSERA_TUNE_FAULT", "wrong-output:#", 1);
  TuneOptions o = quick_options(records);
  o.budget_seconds = 2;
  TuneReport r;
  EXPECT_NO_THROW(r = tune_model(o));
  ::unsetenv("TESSERA_TUNE_FAULT");
  int wrong = 0, defaults = 0;
  std::vector<Record> all = read_records(records);
  for (const Record& rec : all) {
    if (rec.schedule.empty()) {
      ++defaults;
      EXPECT_EQ(rec.error, MeasureError::None);
    } else {
      ++wrong;
      EXPECT_EQ(rec.error, MeasureError::WrongOutput) << rec.schedule;
      EXPECT_TRUE(rec.costs.empty());
    }
  }
  EXPECT_GT(wrong, 0);
  EXPECT_GT(defaults, 0);
  // A wrong record claiming the lowest cost.
  Record cheat = all.back();
  cheat.costs = {1e-12};
  RecordFile(records).append(cheat);
  runtime::Executor e(small_net(), {});
  const Target machine = Target::for_isa(Isa::Host);
  RecordSchedules provider(records, machine);
  for (const runtime::TaskUse& u : e.tasks({random_f32({1, 8, 12, 12}, 1)}))
    EXPECT_FALSE(provider.schedule_for(*u.task).has_value()) << u.task->describe();
}

namespace {

// x f32[1,256,28,28] -> Conv 256x256x1x1 -> Relu: one contraction that
// dominates the model, so a bad schedule of it shows end to end.
std::unique_ptr<Graph> one_conv_net() {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, 256, 28, 28}, true});
  Value* w = g->add_constant("w", random_f32({256, 256, 1, 1}, 5, -0.5f, 0.5f));
  Value* c = g->add_node("Conv", {x, w}, {"c"}, {}, "conv")->outputs[0];
  Value* y = g->add_node("Relu", {c}, {"y"}, {}, "relu")->outputs[0];
  g->add_output(y);
  return g;
}

}  // namespace

// A record injected with a cost far below every other claims the conv
// task's best for a schedule that makes the model slower (one register row,
// the smallest reduction block, no unrolling: checked first, end to end).
// After a resumed run the model guard has rejected it: the records no
// longer choose it, and what the guard kept is not slower than the defaults.
TEST(Tuner, ModelGuardRejectsAChoiceThatMakesTheModelSlower) {
  const std::string model = temp_path("one_conv.onnx");
  export_onnx_file(*one_conv_net(), model);
  const std::string records = temp_path("guard.jsonl");
  std::filesystem::remove(records);
  TuneOptions o = quick_options(records);
  o.model.model = model;
  o.budget_seconds = 3;
  tune_model(o);  // the default and some candidates measured

  // The conv task and its slow point.
  TuningModel m = open_model(o.model);
  const Target machine = Target::for_isa(codegen::host_isa());
  const std::string target = machine.to_string();
  const compile::Task* conv = nullptr;
  for (const runtime::TaskUse& u : m.tasks)
    if (u.task->describe().find("conv") != std::string::npos) conv = u.task.get();
  ASSERT_NE(conv, nullptr);
  TaskSpace space(*conv, machine);
  ASSERT_FALSE(space.stages().empty());
  schedule::SchedulePoint slow;
  slow.stages[stage_position(0)] = {{"kb", 1}, {"mr", 1}, {"unroll", 0}};
  std::optional<schedule::Schedule> s = space.schedule_at(slow);
  ASSERT_TRUE(s) << "the conv's contraction has knobs kb, mr and unroll: " << space.stages()[0].rule;
  {
    runtime::ExecutorOptions eo = o.model.executor_options();
    auto given = std::make_shared<runtime::SavedSchedules>();
    given->by_key[conv->key] = *s;
    eo.schedule_providers.push_back(given);
    runtime::Executor with(load_model(model, o.model.load_options()), eo);
    const Interleaved t = time_interleaved(*m.executor, with, m.inputs, 15);
    ASSERT_GT(t.ratio, 1.5) << "the injected schedule must really be slower in the model: " << t.b_ms << " ms against "
                            << t.a_ms;
  }
  const std::string key = compile::key_text(conv->key);
  RecordFile f(records);
  const Record* def = f.find(key, target, "");
  ASSERT_NE(def, nullptr) << "the first run measured the default";
  Record cheat = *def;
  cheat.schedule = slow.to_text();
  for (double& c : cheat.costs) c *= 0.01;
  f.append(cheat);
  ASSERT_EQ(RecordFile(records).best(key, target)->schedule, slow.to_text());

  o.guard_runs = 15;
  TuneReport r = tune_model(o);
  EXPECT_GE(r.guard_choices, 1);
  EXPECT_GE(r.guard_dropped, 1);
  RecordFile after(records);
  EXPECT_TRUE(after.rejected(key, target, slow.to_text()));
  ASSERT_NE(after.best(key, target), nullptr);
  EXPECT_NE(after.best(key, target)->schedule, slow.to_text());
  RecordSchedules provider(records, machine);
  std::optional<schedule::Schedule> chosen = provider.schedule_for(*conv);
  EXPECT_TRUE(!chosen || schedule::to_text(*chosen) != schedule::to_text(*s));
  EXPECT_LE(r.guard_ratio, 1.0);
}

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

// With the static model the search measures nothing: it ranks candidates
// (compiled, never run) and afterwards measures only the default and the
// best few predicted of each task.
TEST(Tuner, StaticModelSearchMeasuresOnlyTheBestPredicted) {
  const std::string records = temp_path("static.jsonl");
  TuneOptions o = model_options(records, "static");
  o.validate_top = 2;
  o.budget_seconds = 6;
  TuneReport r = tune_model(o);
  int ranked = 0, tuned = 0;
  for (const TaskReport& t : r.tasks) {
    if (!t.skipped.empty()) continue;
    ++tuned;
    ranked += t.ranked;
    EXPECT_LE(t.measured + t.reused, 1 + o.validate_top) << t.description;
    EXPECT_TRUE(std::isfinite(t.default_seconds)) << t.description;
    EXPECT_LE(t.best_seconds, t.default_seconds) << t.description;
  }
  EXPECT_GT(tuned, 0);
  EXPECT_GT(ranked, r.measured) << "the model ranked more candidates than were measured";
  EXPECT_EQ(static_cast<int>(read_records(records).size()), r.measured);
}

// With XGBoost trained online each round measures at most per_round of the
// four times as many candidates proposed; once a task has measurements of
// different cost the model ranks its proposals (more are ranked than measured).
TEST(Tuner, XgbModelPicksWhatIsMeasuredAndLearnsOnline) {
  const std::string records = temp_path("xgb.jsonl");
  TuneOptions o = model_options(records, "xgb");
  o.budget_seconds = 8;
  TuneReport r = tune_model(o);
  int ranked = 0, tuned = 0;
  for (const TaskReport& t : r.tasks) {
    if (!t.skipped.empty()) continue;
    ++tuned;
    ranked += t.ranked;
    EXPECT_TRUE(std::isfinite(t.default_seconds)) << t.description;
    EXPECT_LE(t.best_seconds, t.default_seconds) << t.description;
  }
  EXPECT_GT(tuned, 0);
  EXPECT_GT(ranked, 0) << "the model never ranked a round's proposals";
  EXPECT_EQ(static_cast<int>(read_records(records).size()), r.measured);

  o.cost_model_file = temp_path("absent-model.json");
  EXPECT_THROW(tune_model(o), Error);
  o.cost_model = "none";
  EXPECT_THROW(tune_model(o), Error);
}

// The attention model behind the same search: it ranks proposals once a
// task has measurements of different cost, and a file that is no attention
// model is refused.
TEST(Tuner, AttentionModelPicksWhatIsMeasuredAndLearnsOnline) {
  const std::string records = temp_path("attention.jsonl");
  TuneOptions o = model_options(records, "attention");
  o.budget_seconds = 8;
  TuneReport r = tune_model(o);
  int ranked = 0, tuned = 0;
  for (const TaskReport& t : r.tasks) {
    if (!t.skipped.empty()) continue;
    ++tuned;
    ranked += t.ranked;
    EXPECT_LE(t.best_seconds, t.default_seconds) << t.description;
  }
  EXPECT_GT(tuned, 0);
  EXPECT_GT(ranked, 0) << "the model never ranked a round's proposals";
  EXPECT_EQ(static_cast<int>(read_records(records).size()), r.measured);
  const std::string bad = temp_path("not-attention.pt");
  std::ofstream(bad) << "{}";
  o.cost_model_file = bad;
  EXPECT_THROW(tune_model(o), Error);
}
