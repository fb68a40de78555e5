// `tessera costmodel` on a small collection (one tiny network, AVX2 at one
// thread, 8 schedules a task): train on a split's train part and eval on
// its test part, the feature cache giving the same result as computing the
// rows, the dump of every sample's matrices, the columns listing, and clear
// errors for a bad model file, an unknown held-out target and a missing
// dataset directory; the label of a sample's repeats (--label); k-fold
// cross-validation in eval (--folds); the attention model trained, judged
// and transferred between two targets (the fine-tuned model written and
// loaded again), and the dataset pruned.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "temp_folder.h"
#include "cost/program_features.h"
#include "cost/value_features.h"
#include "dataset/collect.h"
#include "frontend/onnx_export.h"
#include "random_tensor.h"
#include "tune/record.h"

using namespace tessera;
using tessera::testing::cli;

namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  static const tessera::testing::TempFolder folder("costmodel");
  return folder.path(name);
}

// x f32[1,16,12,12] -> Conv 16x3x3 (pad 1) -> Relu: its tasks have spaces of many schedules.
std::string net() {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input("x", {DType::F32, {1, 16, 12, 12}, true});
  Value* w = g->add_constant("w", tessera::testing::random_f32({16, 16, 3, 3}, 5, -0.5f, 0.5f));
  AttrMap conv;
  conv["pads"] = Attribute::of_ints({1, 1, 1, 1});
  Value* c = g->add_node("Conv", {x, w}, {"c"}, conv, "conv")->outputs[0];
  Value* y = g->add_node("Relu", {c}, {"y"}, {}, "relu")->outputs[0];
  g->add_output(y);
  const std::string path = temp_path("net.onnx");
  export_onnx_file(*g, path);
  return path;
}

// A collection of the network on `targets`, 8 schedules a task, in DIR `name`.
std::string collect(const std::string& name, const std::vector<std::string>& targets) {
  dataset::CollectOptions o;
  o.networks = net();
  o.out_dir = temp_path(name);
  o.per_task = 8;
  o.targets = targets;
  o.exe = TESSERA_CLI;
  o.progress = false;
  o.repeats = 2;
  o.timing.max_repeats = 3;
  o.timing.min_seconds = 0;
  o.guard.remeasures = 0;  // one record a schedule: quick
  dataset::Local local;
  dataset::collect(o, local);
  return o.out_dir;
}

// The collection, made once per test process.
const std::string& collection() {
  static const std::string dir = collect("ds", {"avx2-t1"});
  return dir;
}

std::string data_args() {
  return " --records " + dataset::rank_records_path(collection(), 0) + " --dataset " + collection() + " -q";
}

}  // namespace

TEST(CostModelCli, TrainThenEvalOnTheSplit) {
  const std::string model = temp_path("m.json"), split = " --split within-task --test-share 0.3";
  auto r = cli("costmodel train --rounds 20 --out " + model + data_args() + split);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("trained xgb on"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(model));

  r = cli("costmodel eval --model-file " + model + data_args() + split);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("pairwise"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("avx2-t1"), std::string::npos) << r.out;

  // The same with a feature cache: written by the first run, read by the
  // second; the tables agree with the rows computed afresh.
  const std::string cache = temp_path("rows.jsonl");
  auto first = cli("costmodel eval --model-file " + model + data_args() + split + " --cache " + cache);
  ASSERT_EQ(first.code, 0) << first.out;
  ASSERT_TRUE(fs::exists(cache));
  const auto written = fs::last_write_time(cache);
  auto second = cli("costmodel eval --model-file " + model + data_args() + split + " --cache " + cache);
  ASSERT_EQ(second.code, 0) << second.out;
  EXPECT_EQ(fs::last_write_time(cache), written) << "every row was in the cache: nothing to write";
  EXPECT_EQ(second.out, r.out);
  EXPECT_EQ(first.out, r.out);
}

TEST(CostModelCli, ColumnsAndErrors) {
  auto r = cli("costmodel columns");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const cost::ColumnDoc& c : cost::value_feature_columns()) EXPECT_NE(r.out.find(c.name), std::string::npos) << c.name;
  EXPECT_NE(r.out.find(cost::program_feature_columns().back().name), std::string::npos);

  const std::string bad = temp_path("bad.json");
  std::ofstream(bad) << "{}";
  r = cli("costmodel eval --model-file " + bad + data_args());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find(bad), std::string::npos) << r.out;

  r = cli("costmodel train --out " + temp_path("m2.json") + data_args() + " --split by-target --held-out avx512-t9");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("avx2-t1"), std::string::npos) << "the error lists the targets there are: " << r.out;

  r = cli("costmodel train --out " + temp_path("m3.json") + " --records " + bad + " --dataset " + temp_path("nowhere"));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("tasks.json"), std::string::npos) << r.out;
}

// The dump: a header naming the columns, then per sample its per-store
// matrix (rows of the value columns' width), hardware vector and program
// row, agreeing with the column tables.
TEST(CostModelCli, DumpWritesTheMatricesWithTheirColumns) {
  const std::string out = temp_path("dump.jsonl");
  auto r = cli("costmodel dump --out " + out + data_args());
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream f(out);
  std::string line;
  ASSERT_TRUE(std::getline(f, line));
  const nlohmann::json head = nlohmann::json::parse(line);
  ASSERT_EQ(head.at("value_columns").size(), cost::value_feature_columns().size());
  EXPECT_EQ(head.at("value_columns")[0], cost::value_feature_columns()[0].name);
  EXPECT_EQ(head.at("program_columns").size(), cost::program_feature_columns().size());
  int samples = 0;
  while (std::getline(f, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    ++samples;
    EXPECT_GT(j.at("seconds").get<double>(), 0);
    EXPECT_EQ(j.at("target"), "avx2-t1");
    ASSERT_FALSE(j.at("values").empty()) << "every kernel stores something";
    for (const auto& row : j.at("values")) EXPECT_EQ(row.size(), cost::value_feature_columns().size());
    EXPECT_EQ(j.at("hardware").size(), cost::hardware_feature_columns().size());
    ASSERT_EQ(j.at("program").size(), cost::program_feature_columns().size());
    // The program row's last column counts the matrix's rows.
    EXPECT_EQ(j.at("program").back().get<double>(), static_cast<double>(j.at("values").size()));
  }
  EXPECT_GT(samples, 1);
  EXPECT_NE(r.out.find(std::to_string(samples) + " samples"), std::string::npos) << r.out;
}

// --label: every sample's seconds in the dump (the dataset as train, eval,
// transfer and prune load it) is the min of its schedule's repeats (the
// default), counted here from the records file itself, or the tuner's
// pooled cost (ratio).
TEST(CostModelCli, LabelIsTheMinOfTheRepeatsOrThePooledCost) {
  const std::string records = dataset::rank_records_path(collection(), 0);
  tune::RecordFile rf(records);
  std::map<std::pair<std::string, std::string>, double> min_cost;  // (task, schedule) -> lowest repeat
  std::string target;
  for (const tune::Record& rec : rf.records()) {
    target = rec.target;  // one target in this collection
    for (double c : rec.costs) {
      auto [it, fresh] = min_cost.emplace(std::make_pair(rec.task_key, rec.schedule), c);
      if (!fresh) it->second = std::min(it->second, c);
    }
  }
  auto dump = [&](const std::string& label) {
    const std::string out = temp_path("label-" + label + ".jsonl");
    auto r = cli("costmodel dump --out " + out + data_args() + (label.empty() ? "" : " --label " + label));
    EXPECT_EQ(r.code, 0) << r.out;
    std::map<std::pair<std::string, std::string>, double> seconds;
    std::ifstream f(out);
    std::string line;
    std::getline(f, line);  // the column names
    while (std::getline(f, line)) {
      const nlohmann::json j = nlohmann::json::parse(line);
      seconds[{j.at("task"), j.at("schedule")}] = j.at("seconds");
    }
    return seconds;
  };
  const auto by_default = dump(""), by_min = dump("min"), by_ratio = dump("ratio");
  ASSERT_GT(by_min.size(), 1u);
  EXPECT_EQ(by_default, by_min);
  int differ = 0;
  for (const auto& [key, s] : by_min) {
    EXPECT_DOUBLE_EQ(s, min_cost.at(key)) << key.second;
    EXPECT_DOUBLE_EQ(by_ratio.at(key), rf.pooled_cost(key.first, target, key.second)) << key.second;
    differ += s != by_ratio.at(key);
  }
  EXPECT_GT(differ, 0) << "with 2-3 repeats, some schedule's min differs from its pooled cost";
  auto r = cli("costmodel dump --out " + temp_path("x.jsonl") + data_args() + " --label mean");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("mean"), std::string::npos) << r.out;
}

// eval --folds: k-fold cross-validation within task, every candidate judged
// once (the table's candidates are all the dataset's samples, counted from
// the dump), with pair counts, the interval and TenSet's per-task average.
TEST(CostModelCli, EvalFoldsJudgesEveryCandidateOnce) {
  const std::string out = temp_path("folds-dump.jsonl");
  ASSERT_EQ(cli("costmodel dump --out " + out + data_args()).code, 0);
  int samples = -1;  // less the header line
  std::ifstream f(out);
  for (std::string line; std::getline(f, line);) ++samples;
  auto r = cli("costmodel eval --folds 3 --rounds 5" + data_args());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("3-fold cross-validation within task, seed 1, label min: " + std::to_string(samples) +
                       " candidates"),
            std::string::npos)
      << r.out;
  for (const char* column : {"pairs", "ci95_lo", "ci95_hi", "per-task"})
    EXPECT_NE(r.out.find(column), std::string::npos) << column << " in " << r.out;
  EXPECT_EQ(cli("costmodel eval --folds 3 --rounds 5" + data_args()).out, r.out) << "deterministic for a seed";
  r = cli("costmodel eval --folds 3 --model-file " + temp_path("m.json") + data_args());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("reads no --model-file"), std::string::npos) << r.out;
  r = cli("costmodel eval" + data_args());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--folds K"), std::string::npos) << r.out;
}

namespace {

// The same network measured on two targets (AVX2 at one and two threads), for transfer.
const std::string& two_targets() {
  static const std::string dir = collect("ds2", {"avx2-t1", "avx2-t2"});
  return dir;
}

std::string two_target_args() {
  return " --records " + dataset::rank_records_path(two_targets(), 0) + " --dataset " + two_targets() + " -q";
}

}  // namespace

// The attention model through the command line: trained and judged, a file
// of the other kind refused, moved to a held-out target (every share and
// both baselines reported), and an unknown held-out target named.
TEST(CostModelCli, AttentionTrainEvalAndTransfer) {
  const std::string model = temp_path("a.pt"), split = " --split within-task --test-share 0.3";
  auto r = cli("costmodel train --model attention --epochs 3 --out " + model + two_target_args() + split);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("trained attention on"), std::string::npos) << r.out;
  r = cli("costmodel eval --model attention --model-file " + model + two_target_args() + split);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("avx2-t2"), std::string::npos) << r.out;
  const std::string xgb = temp_path("x.json");
  r = cli("costmodel train --rounds 5 --out " + xgb + two_target_args() + split);
  ASSERT_EQ(r.code, 0) << r.out;
  r = cli("costmodel eval --model attention --model-file " + xgb + two_target_args());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find(xgb), std::string::npos) << "the error names the file: " << r.out;

  r = cli("costmodel transfer --held-out avx2-t2 --fine-tune-share 0,0.5 --epochs 3 --rounds 5" + two_target_args());
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* row : {"other targets only (0%)", "fine-tuned on 50%", "attention, all of avx2-t2's training records",
                          "xgb, all of avx2-t2's training records"})
    EXPECT_NE(r.out.find(row), std::string::npos) << row << " in " << r.out;
  r = cli("costmodel transfer --held-out avx512-t9" + two_target_args());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("avx2-t1, avx2-t2"), std::string::npos) << "the error lists the targets: " << r.out;
}

namespace {

// The whitespace-separated words of the first line of `out` starting with `start`; empty when none does.
std::vector<std::string> row_words(const std::string& out, const std::string& start) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(start, 0) == 0) {
      std::istringstream w(line.substr(start.size()));
      std::vector<std::string> words;
      for (std::string x; w >> x;) words.push_back(x);
      return words;
    }
  return {};
}

}  // namespace

// --fine-tuned-out writes the copy fine-tuned on the largest share (here
// listed first), --out the source model. Each file, loaded by another process
// (costmodel eval on the same within-task split: the held-out target's row is
// the transfer's test part), scores exactly what the transfer printed for its
// row: pairwise accuracy, peak@5 and recall@5, on as many candidates.
TEST(CostModelCli, TransferWritesTheFineTunedModel) {
  const std::string source = temp_path("source.pt"), tuned = temp_path("tuned.pt"), split = " --test-share 0.5";
  auto r = cli("costmodel transfer --held-out avx2-t2 --fine-tune-share 0.5,0 --epochs 3 --rounds 5 --out " + source +
               " --fine-tuned-out " + tuned + split + two_target_args());
  ASSERT_EQ(r.code, 0) << r.out;
  ASSERT_TRUE(fs::exists(source) && fs::exists(tuned)) << r.out;
  auto bytes = [](const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  EXPECT_NE(bytes(source), bytes(tuned)) << "fine-tuning on half the records moves the weights";
  // "judged on N of its M records"
  const std::vector<std::string> head = row_words(r.out, "transfer to avx2-t2:");
  const auto judged = std::find(head.begin(), head.end(), "judged");
  ASSERT_TRUE(judged != head.end() && judged + 2 < head.end()) << r.out;
  const std::string test_n = *(judged + 2);

  for (const auto& [file, row] : {std::pair{tuned, std::string("attention, fine-tuned on 50%")},
                                  std::pair{source, std::string("attention, other targets only (0%)")}}) {
    const std::vector<std::string> t = row_words(r.out, row);  // records share pairwise peak@5 recall@5
    ASSERT_EQ(t.size(), 5u) << row << " in " << r.out;
    auto e = cli("costmodel eval --model attention --model-file " + file + " --split within-task" + split +
                 two_target_args());
    ASSERT_EQ(e.code, 0) << e.out;
    // tasks candidates pairs pairwise ci95_lo ci95_hi per-task recall@1 recall@5 peak@1 peak@5
    const std::vector<std::string> v = row_words(e.out, "avx2-t2 ");
    ASSERT_EQ(v.size(), 11u) << e.out;
    EXPECT_EQ(v[1], test_n) << e.out;
    EXPECT_EQ(v[3], t[2]) << file << ": pairwise\n" << r.out << e.out;
    EXPECT_EQ(v[10], t[3]) << file << ": peak@5\n" << r.out << e.out;
    EXPECT_EQ(v[8], t[4]) << file << ": recall@5\n" << r.out << e.out;
  }
  // --source-model starts from the written source model instead of training
  // one: every row the same as the run that trained it.
  auto again = cli("costmodel transfer --held-out avx2-t2 --fine-tune-share 0.5,0 --epochs 3 --rounds 5 "
                   "--source-model " + source + split + two_target_args());
  ASSERT_EQ(again.code, 0) << again.out;
  for (const std::string row : {"attention, fine-tuned on 50%", "attention, other targets only (0%)",
                                "attention, all of avx2-t2", "xgb, all of avx2-t2"}) {
    EXPECT_FALSE(row_words(r.out, row).empty()) << row << " in " << r.out;
    EXPECT_EQ(row_words(again.out, row), row_words(r.out, row)) << row << "\n" << r.out << again.out;
  }
  auto both = cli("costmodel transfer --held-out avx2-t2 --source-model " + source + " --out " +
                  temp_path("other.pt") + two_target_args());
  EXPECT_NE(both.code, 0);
  EXPECT_NE(both.out.find("--source-model"), std::string::npos) << both.out;

  r = cli("costmodel transfer --held-out avx2-t2 --fine-tuned-out " + temp_path("no-dir/m.pt") +
          " --fine-tune-share 0 --epochs 1 --rounds 2" + two_target_args());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("no-dir/m.pt"), std::string::npos) << "the error names the file: " << r.out;
}

// Pruning through the command line: the file written keeps, of every task
// group of the records (counted here from the records themselves), the
// share asked rounded up and at least a pair; twins keeps a schedule of both
// targets on one of them; --eval reports every method.
TEST(CostModelCli, PruneWritesTheKeptRecordsOfEveryGroup) {
  const std::string out = temp_path("pruned.jsonl");
  auto r = cli("costmodel prune --method cluster --keep 0.5 --out " + out + two_target_args());
  ASSERT_EQ(r.code, 0) << r.out;
  auto schedules = [](const std::string& path) {
    std::map<std::pair<std::string, std::string>, std::set<std::string>> g;  // (task, target) -> valid schedules
    tune::RecordFile rf(path);
    for (const tune::Record& rec : rf.records())
      if (std::isfinite(rf.pooled_cost(rec.task_key, rec.target, rec.schedule)))
        g[{rec.task_key, rec.target}].insert(rec.schedule);
    return g;
  };
  const auto before = schedules(dataset::rank_records_path(two_targets(), 0)), after = schedules(out);
  ASSERT_FALSE(before.empty());
  EXPECT_EQ(after.size(), before.size()) << "no task group dropped whole";
  for (const auto& [key, kept] : after) {
    const size_t n = before.at(key).size();
    EXPECT_EQ(kept.size(), std::min(n, std::max<size_t>(2, (n + 1) / 2))) << key.first << " on " << key.second;
    for (const std::string& s : kept) EXPECT_TRUE(before.at(key).count(s));
  }
  // Twins: the records' two targets are AVX2 at one and two threads, so a
  // schedule measured validly on both is kept on exactly one at keep 0.5.
  r = cli("costmodel prune --method twins --keep 0.5 --out " + out + two_target_args());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto twins = schedules(out);
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> by_task;  // task -> (target, group key)
  for (const auto& [key, kept] : before) by_task[key.first].push_back(key);
  size_t shared = 0;
  for (const auto& [task, keys] : by_task) {
    if (keys.size() != 2) continue;
    for (const std::string& s : before.at(keys[0])) {
      if (!before.at(keys[1]).count(s)) continue;
      ++shared;
      auto kept_in = [&](const auto& key) { return twins.count(key) ? twins.at(key) : std::set<std::string>{}; };
      const int copies = static_cast<int>(kept_in(keys[0]).count(s) + kept_in(keys[1]).count(s));
      const bool small = kept_in(keys[0]).size() <= 2 || kept_in(keys[1]).size() <= 2;  // a pair topped up
      EXPECT_TRUE(copies == 1 || (small && copies == 2)) << s << " of " << task << " kept " << copies << " times";
    }
  }
  EXPECT_GE(shared, 8u) << "the two targets measure the same schedules";
  EXPECT_EQ(twins.size(), before.size()) << "no task group dropped whole";
  r = cli("costmodel prune --eval --method random,cluster,loss,twins --keep 0.5 --rounds 5" + two_target_args());
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* m : {"all ", "random ", "cluster ", "loss ", "twins "})
    EXPECT_NE(r.out.find(m), std::string::npos) << m << r.out;
  r = cli("costmodel prune --method cluster,loss --keep 0.5 --out " + out + two_target_args());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("one --method"), std::string::npos) << r.out;
}
