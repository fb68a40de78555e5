// Tuning records (src/tune/record.h): the JSON line round-trips, a reopened
// file knows what was measured (resume) and picks the best valid record for
// the machine asked about, a line cut short by an interrupted run is dropped
// and overwritten, and malformed records are errors naming the line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "support/error.h"
#include "support/file_util.h"
#include "tune/record.h"

namespace tessera::tune {
namespace {

namespace fs = std::filesystem;

Record make(std::string key, std::string target, std::string sched, std::vector<double> costs,
            MeasureError err = MeasureError::None) {
  Record r;
  r.task_key = std::move(key);
  r.task = "Conv 'c1' + Relu 'r1'";
  r.target = std::move(target);
  r.schedule = std::move(sched);
  r.costs = std::move(costs);
  r.error = err;
  r.seconds_spent = 0.25;
  r.timestamp = 1790000000;
  return r;
}

class Records : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() / ("tessera_records_" + std::to_string(::getpid()) + ".jsonl")).string();
    fs::remove(path_);
  }
  void TearDown() override { fs::remove(path_); }
  std::string path_;
};

const std::string kAvx512 = "avx512 vector_bytes=64";
const std::string kAvx2 = "avx2 vector_bytes=32";

TEST(Record, JsonLineRoundTrips) {
  Record r = make("00ab", kAvx512, "c1 mr=4 nr=2\nsplit c1 x 16", {1.5e-3, 1.25e-3});
  r.baseline = {1.75e-3, 1.5e-3};
  r.task = "MatMul \"q\" \\ tab\t";
  std::string line = to_json(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);  // one line, whatever the schedule holds
  Record back = parse_record(line);
  EXPECT_EQ(back.task_key, r.task_key);
  EXPECT_EQ(back.task, r.task);
  EXPECT_EQ(back.target, r.target);
  EXPECT_EQ(back.schedule, r.schedule);
  EXPECT_EQ(back.costs, r.costs);
  EXPECT_EQ(back.baseline, r.baseline);
  EXPECT_TRUE(back.paired());
  EXPECT_EQ(back.error, r.error);
  EXPECT_EQ(back.seconds_spent, r.seconds_spent);
  EXPECT_EQ(back.timestamp, r.timestamp);
  EXPECT_DOUBLE_EQ(back.cost(), 1.375e-3);
  Record bad = make("00ab", kAvx512, "s", {}, MeasureError::WrongOutput);
  Record bad_back = parse_record(to_json(bad));
  EXPECT_EQ(bad_back.error, MeasureError::WrongOutput);
  EXPECT_FALSE(bad_back.ok());
  EXPECT_TRUE(std::isinf(bad_back.cost()));
}

TEST(Record, MalformedRecordsSayWhatIsWrong) {
  auto error_of = [](const std::string& line) {
    try {
      parse_record(line);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string good = to_json(make("k", kAvx512, "s", {1e-3}));
  EXPECT_NE(error_of("{not json").find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_of("{}").find("no field 'v'"), std::string::npos);
  std::string v2 = good;
  v2.replace(v2.find("\"v\":1"), 5, "\"v\":2");
  EXPECT_NE(error_of(v2).find("format version 2"), std::string::npos);
  std::string code = good;
  code.replace(code.find("\"error\":0"), 9, "\"error\":42");
  EXPECT_NE(error_of(code).find("unknown error code 42"), std::string::npos);
  std::string neg = good;
  neg.replace(neg.find("[0.001]"), 7, "[-1.0]");
  EXPECT_NE(error_of(neg).find("non-negative"), std::string::npos);
  std::string empty = good;
  empty.replace(empty.find("[0.001]"), 7, "[]");
  EXPECT_NE(error_of(empty).find("no error and no costs"), std::string::npos);
  std::string pairs = good;
  pairs.replace(pairs.find("\"baseline\":[]"), 13, "\"baseline\":[0.001,0.002]");
  EXPECT_NE(error_of(pairs).find("2 baseline times for 1 costs"), std::string::npos) << error_of(pairs);
  std::string key = good;
  key.replace(key.find("\"task_key\":\"k\""), 14, "\"task_key\":7");
  EXPECT_NE(error_of(key).find("'task_key' is not a string"), std::string::npos);
}

// Paired records (each repeat beside a run of the default schedule) are
// compared by their ratios, scaled by the task's first baseline: a schedule
// measured while the machine ran at half speed is not judged by its raw
// times. Records without baselines (older files) keep their medians.
TEST_F(Records, PairedCostsCancelTheMachinesSlowPhases) {
  auto paired = [](std::string sched, double cost, double base) {
    Record r = make("t1", kAvx512, std::move(sched), {cost, cost, cost});
    r.baseline = {base, base, base};
    return r;
  };
  {
    RecordFile f(path_);
    f.append(paired("", 1.0e-3, 1.0e-3));        // the default: the task's reference is 1 ms
    f.append(paired("slow", 1.8e-3, 2.0e-3));    // a slow phase: 0.9 of the default
    f.append(paired("steady", 0.95e-3, 1.0e-3));  // 0.95 of the default
    f.append(make("t1", kAvx512, "old", {0.92e-3}));  // unpaired: its median
    EXPECT_DOUBLE_EQ(f.reference("t1", kAvx512), 1.0e-3);
    EXPECT_DOUBLE_EQ(f.pooled_cost("t1", kAvx512, "slow"), 0.9e-3);
    EXPECT_DOUBLE_EQ(f.pooled_cost("t1", kAvx512, "old"), 0.92e-3);
    ASSERT_NE(f.best("t1", kAvx512), nullptr);
    EXPECT_EQ(f.best("t1", kAvx512)->schedule, "slow");
    // Measured again in a fast phase, the reference stays the first baseline's.
    f.append(paired("", 0.5e-3, 0.5e-3));
    EXPECT_DOUBLE_EQ(f.reference("t1", kAvx512), 1.0e-3);
    EXPECT_DOUBLE_EQ(f.pooled_cost("t1", kAvx512, ""), 1.0e-3);
  }
  RecordFile again(path_);
  EXPECT_EQ(again.best("t1", kAvx512)->schedule, "slow");
  EXPECT_DOUBLE_EQ(again.pooled_cost("t1", kAvx512, "steady"), 0.95e-3);
  EXPECT_DOUBLE_EQ(again.reference("t2", kAvx512), 0.0);
}

// A cost model's label of a schedule, over all its records' repeats: the
// min, the median, or the pooled cost (ratio). One slow repeat moves none of
// min and median; errors make every label infinite as they do the pooled cost.
TEST_F(Records, CostLabelsReadTheRepeats) {
  RecordFile f(path_);
  Record d = make("t1", kAvx512, "", {1.0e-3, 1.0e-3});
  d.baseline = {1.0e-3, 1.0e-3};  // the reference: 1 ms
  f.append(d);
  Record a = make("t1", kAvx512, "a", {2.0e-3, 1.0e-3, 9.0e-3});  // one slow repeat
  a.baseline = {2.0e-3, 1.25e-3, 1.0e-3};                        // ratios 1, 0.8, 9
  f.append(a);
  Record again = make("t1", kAvx512, "a", {1.2e-3, 1.1e-3});  // measured again
  again.baseline = {1.0e-3, 1.0e-3};                          // ratios 1.2, 1.1
  f.append(again);
  // Repeats 2, 1, 9, 1.2, 1.1 ms: min 1, median 1.2; ratios 0.8 1 1.1 1.2 9: median 1.1, times 1 ms.
  EXPECT_DOUBLE_EQ(f.label_cost("t1", kAvx512, "a", CostLabel::Min), 1.0e-3);
  EXPECT_DOUBLE_EQ(f.label_cost("t1", kAvx512, "a", CostLabel::Median), 1.2e-3);
  EXPECT_DOUBLE_EQ(f.label_cost("t1", kAvx512, "a", CostLabel::Ratio), 1.1e-3);
  EXPECT_DOUBLE_EQ(f.pooled_cost("t1", kAvx512, "a"), 1.1e-3);
  f.append(make("t1", kAvx512, "b", {0.5e-3}));
  f.append(make("t1", kAvx512, "b", {}, MeasureError::WrongOutput));
  for (CostLabel l : {CostLabel::Min, CostLabel::Median, CostLabel::Ratio}) {
    EXPECT_TRUE(std::isinf(f.label_cost("t1", kAvx512, "b", l))) << cost_label_name(l);
    EXPECT_TRUE(std::isinf(f.label_cost("t1", kAvx512, "none", l))) << cost_label_name(l);
    EXPECT_EQ(parse_cost_label(std::string(cost_label_name(l))), l);
  }
  EXPECT_THROW(parse_cost_label("mean"), Error);
}

TEST_F(Records, ReopenedFileResumesAndPicksTheBestForItsMachine) {
  {
    RecordFile f(path_);
    EXPECT_TRUE(f.records().empty());  // a missing file is an empty log
    f.append(make("k1", kAvx512, "a", {3e-3, 3e-3}));
    f.append(make("k1", kAvx512, "b", {2e-3, 2.2e-3}));
    f.append(make("k1", kAvx512, "c", {}, MeasureError::WrongOutput));  // fastest of all never counts
    f.append(make("k1", kAvx2, "d", {1e-3}));                          // another machine's
    f.append(make("k2", kAvx512, "a", {5e-3}));
  }
  RecordFile f(path_);
  ASSERT_EQ(f.records().size(), 5u);
  EXPECT_TRUE(f.has("k1", kAvx512, "a"));
  EXPECT_TRUE(f.has("k1", kAvx512, "c"));  // measured with an error: not measured again
  EXPECT_FALSE(f.has("k1", kAvx2, "a"));
  EXPECT_FALSE(f.has("k3", kAvx512, "a"));
  const Record* b = f.best("k1", kAvx512);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->schedule, "b");
  ASSERT_TRUE(f.best("k1", kAvx2));
  EXPECT_EQ(f.best("k1", kAvx2)->schedule, "d");
  EXPECT_EQ(f.best("k1", "generic vector_bytes=16"), nullptr);
  EXPECT_EQ(f.best("k9", kAvx512), nullptr);
}

// The model guard's verdict: a schedule slower in the model is never
// chosen again (the next best is), its measured cost stands, and the
// verdict survives reopening.
TEST_F(Records, SlowerInModelVerdictIsNeverChosenAndKeepsTheCost) {
  {
    RecordFile f(path_);
    f.append(make("k1", kAvx512, "", {3e-3}));
    f.append(make("k1", kAvx512, "a", {1e-3}));
    f.append(make("k1", kAvx512, "b", {2e-3}));
    ASSERT_EQ(f.best("k1", kAvx512)->schedule, "a");
    f.append(make("k1", kAvx512, "a", {}, MeasureError::SlowerInModel));
    f.append(make("k1", kAvx512, "b", {}, MeasureError::SlowerInModel));
  }
  RecordFile f(path_);
  ASSERT_EQ(f.records().size(), 5u);
  EXPECT_EQ(f.records()[3].error, MeasureError::SlowerInModel);
  EXPECT_TRUE(f.rejected("k1", kAvx512, "a"));
  EXPECT_FALSE(f.rejected("k1", kAvx512, ""));
  EXPECT_FALSE(f.rejected("k1", kAvx2, "a"));
  EXPECT_DOUBLE_EQ(f.pooled_cost("k1", kAvx512, "a"), 1e-3);
  ASSERT_TRUE(f.best("k1", kAvx512));
  EXPECT_EQ(f.best("k1", kAvx512)->schedule, "") << "both faster schedules rejected: the default is chosen";
  EXPECT_EQ(measure_error_name(MeasureError::SlowerInModel), "slower in the model");
}

TEST_F(Records, InterruptedLastLineIsDroppedAndOverwritten) {
  {
    RecordFile f(path_);
    f.append(make("k1", kAvx512, "a", {3e-3}));
  }
  std::string half = to_json(make("k1", kAvx512, "b", {2e-3}));
  {
    std::ofstream out(path_, std::ios::app);
    out << half.substr(0, half.size() / 2);  // the run stopped mid-write
  }
  RecordFile f(path_);
  EXPECT_EQ(f.records().size(), 1u);
  EXPECT_EQ(f.dropped_partial_lines(), 1);
  EXPECT_FALSE(f.has("k1", kAvx512, "b"));
  f.append(make("k1", kAvx512, "b", {2e-3}));
  RecordFile again(path_);
  EXPECT_EQ(again.dropped_partial_lines(), 0);
  ASSERT_EQ(again.records().size(), 2u);
  EXPECT_EQ(again.best("k1", kAvx512)->schedule, "b");
  EXPECT_EQ(read_file(path_).back(), '\n');
}

TEST_F(Records, LastRecordWithoutNewlineIsKeptAndFollowed) {
  {
    std::ofstream out(path_);
    out << to_json(make("k1", kAvx512, "a", {3e-3}));  // written by hand, no newline
  }
  RecordFile f(path_);
  EXPECT_EQ(f.records().size(), 1u);
  EXPECT_EQ(f.dropped_partial_lines(), 0);
  f.append(make("k1", kAvx512, "b", {2e-3}));
  RecordFile again(path_);
  ASSERT_EQ(again.records().size(), 2u);
  EXPECT_TRUE(again.has("k1", kAvx512, "a"));
  EXPECT_TRUE(again.has("k1", kAvx512, "b"));
}

TEST_F(Records, MalformedCompleteLineIsAnErrorNamingIt) {
  {
    RecordFile f(path_);
    f.append(make("k1", kAvx512, "a", {3e-3}));
  }
  {
    std::ofstream out(path_, std::ios::app);
    out << "{\"v\": 1}\n";
  }
  try {
    RecordFile f(path_);
    FAIL() << "a malformed line was accepted";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("line 2"), std::string::npos) << m;
    EXPECT_NE(m.find("no field"), std::string::npos) << m;
  }
  fs::create_directories(path_ + ".d");
  EXPECT_THROW(RecordFile(path_ + ".d"), Error);
  fs::remove(path_ + ".d");
}

}  // namespace
}  // namespace tessera::tune
