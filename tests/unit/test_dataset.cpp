// Dataset collection (src/dataset, `tessera dataset`): networks and targets,
// the task index and its sampled schedules, a collection on two tiny
// networks whose records cover every (task, schedule, target) with the
// target's hardware description, a wrong candidate recorded and not fatal, a
// restart that measures nothing, ranks dealt tasks that together measure
// what one rank does (a 2-thread target never on two ranks at once where
// the CPUs are too few), the load guard (its verdicts, and a collection
// that measures disturbed records again and keeps them all), --repeats
// (in tasks.json and the records; a resume at other repeats refused), the
// merge (a guard's re-measures kept, duplicates dropped), and the same over
// `mpirun -np 2`.
// Collections start real measurement workers (the tessera CLI's tune-worker).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "cli_runner.h"
#include "temp_folder.h"
#include "dataset/collect.h"
#include "dataset/load_guard.h"
#include "dataset/merge.h"
#include "dataset/networks.h"
#include "dataset/targets.h"
#include "dataset/task_index.h"
#include "frontend/onnx_export.h"
#include "random_tensor.h"
#include "support/error.h"
#include "support/file_util.h"
#include "tune/model_config.h"
#include "tune/record.h"

using namespace tessera;
using namespace tessera::dataset;
using tessera::testing::random_f32;

namespace {

namespace fs = std::filesystem;
using Triple = std::tuple<std::string, std::string, std::string>;

// A folder per test process, removed when it exits (other checkouts' test
// runs on the machine must not share files with this one).
std::string temp_path(const std::string& name) {
  static const tessera::testing::TempFolder folder("dataset");
  return folder.path(name);
}

// x f32[1,8,10,10] -> Conv 16x3x3 (pad 1) -> Relu -> Conv 8x1x1: a few tasks
// (the blocks of the two Conv, on AVX-512 the blocked layout's reorders too).
// `seed` draws the weights and `prefix` names the nodes: networks of other
// names and weights have the same tasks (keys hash what is computed).
std::string tiny_net(const std::string& name, uint32_t seed, const std::string& prefix) {
  auto g = std::make_unique<Graph>();
  g->opset = 13;
  Value* x = g->add_input(prefix + "x", {DType::F32, {1, 8, 10, 10}, true});
  Value* w = g->add_constant(prefix + "w", random_f32({16, 8, 3, 3}, seed, -0.5f, 0.5f));
  AttrMap conv;
  conv["pads"] = Attribute::of_ints({1, 1, 1, 1});
  Value* c = g->add_node("Conv", {x, w}, {prefix + "c"}, conv, prefix + "conv")->outputs[0];
  Value* r = g->add_node("Relu", {c}, {prefix + "r"}, {}, prefix + "relu")->outputs[0];
  Value* w2 = g->add_constant(prefix + "w2", random_f32({8, 16, 1, 1}, seed + 1, -0.5f, 0.5f));
  Value* y = g->add_node("Conv", {r, w2}, {prefix + "y"}, {}, prefix + "conv2")->outputs[0];
  g->add_output(y);
  const std::string path = temp_path(name + ".onnx");
  if (!fs::exists(path)) export_onnx_file(*g, path);
  return path;
}

std::string two_networks() { return tiny_net("tiny_a", 3, "") + "," + tiny_net("tiny_b", 7, "b_"); }

CollectOptions quick(const std::string& dir) {
  CollectOptions o;
  o.networks = two_networks();
  o.out_dir = dir;
  o.per_task = 4;
  o.exe = TESSERA_CLI;
  o.progress = false;
  o.repeats = 2;
  o.timing.max_repeats = 3;
  o.timing.min_seconds = 0;
  o.guard.remeasures = 0;  // one record a schedule (the guard's test turns it on)
  return o;
}

DatasetIndex read_index(const std::string& dir) {
  const std::string path = dir + "/tasks.json";
  return DatasetIndex::from_json(read_file(path), path);
}

// Every (task, target text, schedule) the index asks for of the tasks
// i = rank mod size, on the targets of `threads` threads (0: every target).
std::set<Triple> expected(const DatasetIndex& d, size_t rank = 0, size_t size = 1, int threads = 0) {
  std::set<Triple> out;
  for (size_t i = rank; i < d.tasks.size(); i += size)
    for (const DatasetTarget& target : d.targets)
      if (const IsaTask* it = d.tasks[i].on(target); it && (threads == 0 || target.threads == threads))
        for (const std::string& s : it->schedules) out.insert({d.tasks[i].key, target.target.to_string(), s});
  return out;
}
std::set<Triple> triples(const std::vector<tune::Record>& records) {
  std::set<Triple> out;
  for (const tune::Record& r : records) out.insert({r.task_key, r.target, r.schedule});
  return out;
}

// Rank 0 of 2, run before rank 1 (barriers pass at once): it keeps what it
// broadcasts, which rank 1 receives in turn.
class FirstOfTwo final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  void barrier() override {}
  std::string broadcast(const std::string& text) override {
    sent.push_back(text);
    return text;
  }
  int64_t sum(int64_t v) override { return v; }
  void abort(int) override {}
  std::vector<std::string> sent;
};

class SecondOfTwo final : public Communicator {
 public:
  explicit SecondOfTwo(const FirstOfTwo& first) : first_(first) {}
  int rank() const override { return 1; }
  int size() const override { return 2; }
  void barrier() override {}
  std::string broadcast(const std::string&) override { return first_.sent.at(next_++); }
  int64_t sum(int64_t v) override { return v; }
  void abort(int) override {}

 private:
  const FirstOfTwo& first_;
  size_t next_ = 0;
};

}  // namespace

TEST(DatasetNetworks, ListsAndListFiles) {
  const std::string a = tiny_net("tiny_a", 3, ""), b = tiny_net("tiny_b", 7, "b_");
  std::vector<Network> n = parse_networks(a + ", " + b);
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0].name, "tiny_a");
  EXPECT_EQ(n[1].path, b);
  // A list file: paths relative to it, comments, a folder's model.onnx named by the folder.
  fs::create_directories(temp_path("lists/resnet_b4_240"));
  fs::copy_file(a, temp_path("lists/resnet_b4_240/model.onnx"), fs::copy_options::overwrite_existing);
  std::ofstream(temp_path("lists/nets.txt")) << "# networks\nresnet_b4_240/model.onnx\n\n" << b << "  # absolute\n";
  n = parse_networks(temp_path("lists/nets.txt"));
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[0].name, "resnet_b4_240");
  EXPECT_TRUE(fs::exists(n[0].path)) << n[0].path;
  EXPECT_EQ(n[1].name, "tiny_b");

  try {
    parse_networks(a + "," + temp_path("absent.onnx"));
    FAIL() << "a missing network file is an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("absent.onnx"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_networks(a + "," + a), Error) << "two networks of one name";
  EXPECT_THROW(parse_networks(" , "), Error) << "no networks";
}

TEST(DatasetTargets, EachTargetItsOwnMachineText) {
  std::vector<std::string> notes;
  std::vector<DatasetTarget> t = offered_targets(&notes);
  ASSERT_FALSE(t.empty());
  std::set<std::string> texts;
  for (const DatasetTarget& x : t) {
    EXPECT_EQ(x.target.cores, x.threads) << x.name;
    EXPECT_EQ(x.target.isa, x.isa) << x.name;
    EXPECT_EQ(x.name, std::string(isa_name(x.isa)) + "-t" + std::to_string(x.threads));
    EXPECT_TRUE(texts.insert(x.target.to_string()).second) << "two targets share a records target: " << x.name;
  }
  if (host_isa_detected() != Isa::AVX512) {
    ASSERT_FALSE(notes.empty());
    EXPECT_NE(notes[0].find("AVX-512"), std::string::npos) << "the missing ISA is said";
    EXPECT_THROW(select_targets({"avx512-t1"}, nullptr), Error);
  }
  EXPECT_EQ(select_targets({"avx2-t1"}, nullptr).size(), 1u);
  EXPECT_THROW(select_targets({"sse-t1"}, nullptr), Error);

  DatasetTarget one = select_targets({"avx2-t1"}, nullptr)[0];
  probe(one);
  EXPECT_EQ(one.hardware.isa, Isa::AVX2);
  EXPECT_EQ(one.hardware.cores, 1);
  EXPECT_EQ(one.hardware.name, "host-avx2-t1");
}

TEST(DatasetIndex, SampledSchedulesAreSeededDistinctAndStartWithTheDefault) {
  tune::ModelConfig c;
  c.model = tiny_net("tiny_a", 3, "");
  c.isa = Isa::AVX2;
  tune::TuningModel m = tune::open_model(c);
  ASSERT_FALSE(m.tasks.empty());
  const compile::Task& task = *m.tasks[0].task;
  tune::TaskSpace space(task, Target::for_isa(Isa::AVX2));
  const std::string key = compile::key_text(task.key);
  std::vector<std::string> a = sample_schedules(space, key, Isa::AVX2, 6, 7);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a[0], "") << "the default schedule first";
  EXPECT_EQ(std::set<std::string>(a.begin(), a.end()).size(), a.size()) << "distinct points";
  EXPECT_EQ(sample_schedules(space, key, Isa::AVX2, 6, 7), a) << "the same seed, the same schedules";
  if (space.log10_size() > 2) {
    EXPECT_NE(sample_schedules(space, key, Isa::AVX2, 6, 8), a) << "another seed, other schedules";
  }
  for (const std::string& s : a) EXPECT_TRUE(space.schedule_at(schedule::SchedulePoint::parse(s))) << s;
}

TEST(DatasetRecords, HardwareFieldRoundTripsAndIsOptional) {
  tune::Record r;
  r.task_key = "00ff";
  r.task = "Conv 'c'";
  r.target = Target::for_isa(Isa::AVX2).to_string();
  r.costs = {1e-3};
  r.hardware = cost::find_hardware("epyc-7452").to_string();
  tune::Record back = tune::parse_record(tune::to_json(r));
  EXPECT_EQ(back.hardware, r.hardware);
  EXPECT_EQ(cost::HardwareDesc::parse(back.hardware), cost::find_hardware("epyc-7452"));
  r.hardware.clear();
  EXPECT_EQ(tune::to_json(r).find("hardware"), std::string::npos) << "the tuner's records stay as they were";
  EXPECT_EQ(tune::parse_record(tune::to_json(r)).hardware, "");
}

// One rank: every (task, schedule, target) measured, with its target's
// hardware; a wrong candidate recorded as such; a restart measures nothing.
TEST(DatasetCollect, EveryTaskScheduleAndTargetThenResumeMeasuresNothing) {
  const std::string dir = temp_path("one_rank");
  // The schedules rank 0 will sample (the same seed, networks and ISA give
  // the same ones): a candidate of the first task is made wrong in the
  // workers (measure_worker.h's test hook).
  {
    CollectOptions probe_opts = quick(temp_path("sampling"));
    DatasetIndex d = build_index(parse_networks(probe_opts.networks), select_targets({"avx2-t1"}, nullptr),
                                 probe_opts.per_task, probe_opts.seed);
    ASSERT_FALSE(d.tasks.empty());
    const std::vector<std::string>& s = d.tasks[0].isas.at("avx2").schedules;
    ASSERT_GE(s.size(), 2u) << "the first task has knobs to sample";
    ::setenv("TESSERA_TUNE_FAULT", ("wrong-output:" + s[1]).c_str(), 1);
  }
  Local local;
  CollectReport r;
  try {
    r = collect(quick(dir), local);
  } catch (...) {
    ::unsetenv("TESSERA_TUNE_FAULT");
    throw;
  }
  ::unsetenv("TESSERA_TUNE_FAULT");

  const DatasetIndex d = read_index(dir);
  // Tasks are the ISA's (the blocked layout adds reorders where vectors are
  // 16 wide); the two networks have the same ones, deduplicated.
  ASSERT_GE(d.tasks.size(), 2u);
  EXPECT_EQ(d.targets.size(), offered_targets(nullptr).size());
  int full = 0;
  for (const DatasetTask& t : d.tasks)
    for (const auto& [isa, it] : t.isas) {
      EXPECT_EQ(it.network, "tiny_a") << t.description << ": measured in the first network that has it";
      EXPECT_EQ(it.weights, (std::map<std::string, int>{{"tiny_a", 1}, {"tiny_b", 1}})) << "weights per network";
      EXPECT_TRUE(it.skipped.empty()) << it.skipped;
      ASSERT_FALSE(it.schedules.empty());
      EXPECT_EQ(it.schedules[0], "");
      EXPECT_LE(it.schedules.size(), 4u) << t.description;
      full += it.schedules.size() == 4;
    }
  EXPECT_GT(full, 0) << "some task has 4 schedules to sample";

  const tune::RecordFile file(rank_records_path(dir, 0));
  const std::set<Triple> want = expected(d);
  EXPECT_EQ(static_cast<int64_t>(want.size()), d.measurements());
  EXPECT_EQ(triples(file.records()), want) << "a record for every (task, schedule, target)";
  EXPECT_EQ(file.records().size(), want.size()) << "each once";
  EXPECT_EQ(r.measured, static_cast<int64_t>(want.size()));
  EXPECT_EQ(r.earlier, 0);
  int wrong = 0;
  for (const tune::Record& rec : file.records()) {
    const DatasetTarget* target = nullptr;
    for (const DatasetTarget& t : d.targets)
      if (t.target.to_string() == rec.target) target = &t;
    ASSERT_TRUE(target) << rec.target;
    ASSERT_FALSE(rec.hardware.empty());
    const cost::HardwareDesc hw = cost::HardwareDesc::parse(rec.hardware);
    EXPECT_EQ(hw, target->hardware) << "the hardware description of the record's target";
    EXPECT_EQ(hw.isa, target->isa);
    EXPECT_EQ(hw.cores, target->threads);
    EXPECT_EQ(Target::parse(rec.target).cores, target->threads);
    if (rec.error == tune::MeasureError::WrongOutput) ++wrong;
    else EXPECT_TRUE(rec.ok() && rec.paired()) << rec.task << " " << rec.schedule << " error " << static_cast<int>(rec.error);
  }
  int avx2_targets = 0;
  for (const DatasetTarget& t : d.targets) avx2_targets += t.isa == Isa::AVX2;
  EXPECT_GE(wrong, avx2_targets) << "the wrong candidate is a record on every AVX2 target (where it was sampled)";
  EXPECT_EQ(r.errors, wrong);

  const auto size = fs::file_size(rank_records_path(dir, 0));
  CollectReport again = collect(quick(dir), local);
  EXPECT_EQ(again.measured, 0) << "a restart measures nothing";
  EXPECT_EQ(again.earlier, static_cast<int64_t>(want.size()));
  EXPECT_EQ(fs::file_size(rank_records_path(dir, 0)), size);
}

// Two ranks (run one after the other here; over MPI below): the tasks dealt
// between them, their files together hold what one rank measures, and the
// merge joins them. The 1-thread target's tasks go to both ranks; the
// 2-thread target's to as many ranks as the machine has CPUs for two
// threads each (on 2 CPUs, rank 0 alone: two ranks measuring 2 threads
// each at once would share the CPUs).
TEST(DatasetCollect, RanksTogetherMeasureWhatOneRankDoes) {
  const std::string one = temp_path("ranks_one"), two = temp_path("ranks_two");
  CollectOptions o = quick(one);
  o.targets = {"avx2-t1", "avx2-t2"};
  Local local;
  collect(o, local);
  o.out_dir = two;
  FirstOfTwo first;
  CollectReport r0 = collect(o, first);
  SecondOfTwo second(first);
  CollectReport r1 = collect(o, second);
  const DatasetIndex d = read_index(two);
  const size_t pairs = std::clamp<size_t>(static_cast<size_t>(detect_cores()) / 2, 1, 2);  // ranks measuring 2 threads
  EXPECT_EQ(r0.tasks_mine, static_cast<int>((d.tasks.size() + 1) / 2 + (pairs == 1 ? d.tasks.size() / 2 : 0)));
  EXPECT_EQ(r1.tasks_mine, static_cast<int>(d.tasks.size() / 2));
  EXPECT_EQ(r0.measured + r1.measured, r0.total);
  std::set<Triple> want0 = expected(d, 0, 2, 1), want1 = expected(d, 1, 2, 1);
  for (const Triple& t : expected(d, 0, pairs, 2)) want0.insert(t);
  if (pairs == 2)
    for (const Triple& t : expected(d, 1, pairs, 2)) want1.insert(t);
  EXPECT_EQ(triples(tune::RecordFile(rank_records_path(two, 0)).records()), want0) << "tasks 0, 2, ...";
  EXPECT_EQ(triples(tune::RecordFile(rank_records_path(two, 1)).records()), want1) << "tasks 1, 3, ...";

  const MergeReport m1 = merge_records(one, temp_path("one.jsonl")), m2 = merge_records(two, temp_path("two.jsonl"));
  EXPECT_EQ(m2.files, 2);
  EXPECT_EQ(m2.duplicates, 0);
  EXPECT_EQ(triples(tune::RecordFile(temp_path("two.jsonl")).records()),
            triples(tune::RecordFile(temp_path("one.jsonl")).records()));
  EXPECT_EQ(m1.written, m2.written);
}

// The load guard's verdicts on hand-made records: baselines that spread
// past the threshold, or whose median is off the reference by more than
// the drift, are disturbed; steady ones, records without baselines and (for
// the drift) a task without a reference are not.
TEST(DatasetLoadGuard, SpreadOrDriftedBaselinesAreDisturbed) {
  const LoadGuard g;  // 10% and 10%
  auto rec = [](std::vector<double> baseline) {
    tune::Record r;
    r.task_key = "aa";
    r.target = "avx2";
    r.costs = std::vector<double>(baseline.size(), 2e-3);
    r.baseline = std::move(baseline);
    return r;
  };
  EXPECT_EQ(disturbed(rec({1.00e-3, 1.05e-3, 1.02e-3}), 1.0e-3, g), "") << "max/min 1.05, median on the reference";
  const std::string spread = disturbed(rec({1.00e-3, 1.25e-3, 1.02e-3}), 1.0e-3, g);
  EXPECT_NE(spread.find("spread 25%"), std::string::npos) << spread;
  const std::string over = disturbed(rec({1.15e-3, 1.16e-3, 1.15e-3}), 1.0e-3, g);
  EXPECT_NE(over.find("15% over"), std::string::npos) << over;
  const std::string under = disturbed(rec({0.85e-3, 0.86e-3, 0.85e-3}), 1.0e-3, g);
  EXPECT_NE(under.find("15% under"), std::string::npos) << under;
  EXPECT_EQ(disturbed(rec({1.15e-3, 1.16e-3, 1.15e-3}), 0, g), "") << "no reference yet: the spread alone judges";
  tune::Record error = rec({});
  error.costs.clear();
  error.error = tune::MeasureError::Timeout;
  EXPECT_EQ(disturbed(error, 1.0e-3, g), "");
  LoadGuard loose = g;
  loose.spread = 0.30;
  EXPECT_EQ(disturbed(rec({1.00e-3, 1.25e-3, 1.02e-3}), 1.0e-3, loose), "") << "the threshold is an option";

  // The reference: the first record that does not spread, kept from then on.
  GuardReferences refs(g);
  EXPECT_EQ(refs.of("aa", "avx2"), 0);
  refs.see(rec({1.0e-3, 2.0e-3, 1.5e-3}));
  EXPECT_EQ(refs.of("aa", "avx2"), 0) << "a spread record sets no reference";
  refs.see(rec({1.00e-3, 1.04e-3, 1.02e-3}));
  EXPECT_DOUBLE_EQ(refs.of("aa", "avx2"), 1.02e-3) << "its baseline median";
  refs.see(rec({2.00e-3, 2.04e-3, 2.02e-3}));
  EXPECT_DOUBLE_EQ(refs.of("aa", "avx2"), 1.02e-3) << "the first steady record's, kept";
  EXPECT_EQ(refs.of("aa", "avx512"), 0) << "per machine";
}

// A collection with the guard at 0% spread and one re-measure: every
// record whose baselines differ at all is measured again, and both records
// are kept (the second is not measured again: one re-measure); a record
// with equal baselines, or an error, is not. --repeats lands in tasks.json
// and in every record's runs; a resume asking for other repeats is refused,
// and one with the same measures nothing more.
TEST(DatasetCollect, GuardMeasuresDisturbedRecordsAgainAndRepeatsAreKept) {
  const std::string dir = temp_path("guard");
  CollectOptions o = quick(dir);
  o.targets = {"avx2-t1"};
  o.per_task = 3;
  o.repeats = 3;  // more than quick's timer allows (3 at most): the repeats raise it
  o.timing.max_repeats = 2;
  o.guard.spread = 0;
  o.guard.drift = 1e9;  // the spread alone judges here
  o.guard.remeasures = 1;
  Local local;
  const CollectReport r = collect(o, local);
  EXPECT_EQ(read_index(dir).repeats, 3);

  const tune::RecordFile file(rank_records_path(dir, 0));
  std::map<Triple, std::vector<const tune::Record*>> by_triple;
  for (const tune::Record& rec : file.records()) by_triple[{rec.task_key, rec.target, rec.schedule}].push_back(&rec);
  EXPECT_EQ(static_cast<int64_t>(by_triple.size()), r.measured);
  int64_t again = 0;
  for (const auto& [triple, recs] : by_triple) {
    const tune::Record& first = *recs[0];
    const bool spread = first.paired() && *std::max_element(first.baseline.begin(), first.baseline.end()) >
                                              *std::min_element(first.baseline.begin(), first.baseline.end());
    EXPECT_EQ(recs.size(), spread ? 2u : 1u) << std::get<2>(triple);
    again += static_cast<int64_t>(recs.size()) - 1;
    for (const tune::Record* rec : recs)
      if (rec->ok()) {
        EXPECT_EQ(rec->costs.size(), 3u) << "--repeats 3";
        EXPECT_EQ(rec->baseline.size(), 3u);
      }
  }
  EXPECT_EQ(r.remeasured, again);
  EXPECT_GT(again, 0) << "three runs of real kernels: some baselines differ";

  CollectOptions other = o;
  other.repeats = 4;
  try {
    collect(other, local);
    ADD_FAILURE() << "a resume at other repeats was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--repeats 3"), std::string::npos) << e.what();
  }
  const CollectReport resumed = collect(o, local);
  EXPECT_EQ(resumed.measured, 0);
  EXPECT_EQ(resumed.remeasured, 0) << "records of a finished collection are not measured again";
  EXPECT_EQ(tune::RecordFile(rank_records_path(dir, 0)).records().size(), file.records().size());
}

TEST(DatasetMerge, SortedDuplicatesDroppedCutLinesSkipped) {
  const std::string dir = temp_path("merge");
  fs::create_directories(dir);
  auto rec = [](std::string key, std::string schedule, int64_t when) {
    tune::Record r;
    r.task_key = std::move(key);
    r.task = "t";
    r.target = "avx2";
    r.schedule = std::move(schedule);
    r.costs = {1e-3};
    r.timestamp = when;
    return tune::to_json(r);
  };
  std::ofstream(dir + "/records.rank0.jsonl") << rec("bb", "", 5) << "\n" << rec("aa", "#0 x=2", 3) << "\n";
  // Rank 1 measured "#0 x=2" first and again (the load guard's re-measure);
  // rank 0 measured it too (a duplicate).
  std::ofstream(dir + "/records.rank1.jsonl") << rec("aa", "", 4) << "\n" << rec("aa", "#0 x=2", 1) << "\n"
                                              << rec("aa", "#0 x=2", 2) << "\n"
                                              << "{\"v\": 1, \"task_k";  // a rank stopped mid-line
  std::ofstream(dir + "/records.rankx.jsonl") << "not a rank file\n";
  const MergeReport m = merge_records(dir, dir + "/all.jsonl");
  EXPECT_EQ(m.files, 2);
  EXPECT_EQ(m.read, 5);
  EXPECT_EQ(m.written, 4);
  EXPECT_EQ(m.duplicates, 1);
  EXPECT_EQ(m.partial, 1);
  const std::vector<tune::Record> all = tune::RecordFile(dir + "/all.jsonl").records();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(std::tie(all[0].task_key, all[0].schedule), std::make_tuple(std::string("aa"), std::string("")));
  EXPECT_EQ(all[1].schedule, "#0 x=2");
  EXPECT_EQ(all[1].timestamp, 1) << "of a triple measured by two files, the earliest record's file is kept";
  EXPECT_EQ(all[2].schedule, "#0 x=2");
  EXPECT_EQ(all[2].timestamp, 2) << "and its re-measure in that file with it";
  EXPECT_EQ(all[3].task_key, "bb");
  EXPECT_THROW(merge_records(temp_path("no_such_dir"), dir + "/x.jsonl"), Error);
}

TEST(DatasetCli, BadInputIsAClearError) {
  using tessera::testing::cli;
  auto r = cli("dataset collect --networks " + temp_path("missing.onnx") + " --out " + temp_path("cli_bad"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("missing.onnx"), std::string::npos) << r.out;
  r = cli("dataset merge " + temp_path("cli_nothing") + " -o " + temp_path("x.jsonl"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("cli_nothing"), std::string::npos) << r.out;
}

// `mpirun -np 2` collects the same (task, schedule, target) set as one
// process (timings differ), each rank its own file; the merge joins them.
// Skipped only where mpirun is missing (scripts/install-deps.sh installs it).
TEST(DatasetMpi, TwoRanksCollectWhatOneProcessDoes) {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "mpirun is missing (scripts/install-deps.sh installs Debian's openmpi-bin)";
  using tessera::testing::cli;
  const std::string one = temp_path("mpi_one"), two = temp_path("mpi_two");
  const std::string args =
      " --networks " + two_networks() + " --per-task 3 --targets avx2-t1,avx2-t2 --repeats 3 --remeasures 1 -q";
  auto r = cli("dataset collect --out " + one + args);
  ASSERT_EQ(r.code, 0) << r.out;
  // As root mpirun needs --allow-run-as-root; --bind-to none leaves each rank
  // both CPUs (a 2-thread target); --oversubscribe allows more ranks than cores.
  // Under AddressSanitizer (scripts/sanitizers.sh) the ranks keep every check
  // but the leak check at exit: Open MPI 4.1 itself leaks (a program doing
  // nothing but MPI_Init and MPI_Finalize, built with ASan, reports ~120 KB in
  // ~3,300 allocations), which would fail every rank.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string asan_options = std::string(asan ? asan : "") + (asan && *asan ? ":" : "") + "detect_leaks=0";
  const std::string mpirun = "env ASAN_OPTIONS=" + asan_options + " mpirun -x ASAN_OPTIONS " +
                             (::geteuid() == 0 ? "--allow-run-as-root " : "") + "--oversubscribe --bind-to none -np 2 " +
                             TESSERA_CLI;
  const std::string cmd = mpirun + " dataset collect --out " + two + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_TRUE(p);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ASSERT_EQ(pclose(p), 0) << cmd << "\n" << out;
  EXPECT_NE(out.find("on 2 ranks"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(rank_records_path(two, 0)) && fs::exists(rank_records_path(two, 1))) << out;
  r = cli("dataset merge " + one + " -o " + temp_path("mpi_one.jsonl"));
  ASSERT_EQ(r.code, 0) << r.out;
  r = cli("dataset merge " + two + " -o " + temp_path("mpi_two.jsonl"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("merged 2 rank files"), std::string::npos) << r.out;
  const std::set<Triple> a = triples(tune::RecordFile(temp_path("mpi_one.jsonl")).records());
  EXPECT_EQ(a, expected(read_index(one)));
  EXPECT_EQ(triples(tune::RecordFile(temp_path("mpi_two.jsonl")).records()), a);
}
