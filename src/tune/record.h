// Tuning records: one measurement of one schedule of one task on one
// machine, kept as a JSON line (the manner of Ansor's and TenSet's logs), so
// a tuning run appends as it goes, a restarted run re-measures nothing it
// already has, and compiling picks each task's best schedule for the machine
// it runs on. A record names its task by the task key (compile/task.h: a
// hash of what the program computes, not of node names) and its machine by
// Target::to_string(); records of another machine are never applied.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace tessera::tune {

// Why a measurement has no valid cost (the numbering is the file format's).
enum class MeasureError : int {
  None = 0,
  Lowering = 1,     // the schedule is invalid for the program
  Compile = 2,      // the JIT failed
  Run = 3,          // the kernel raised an error or crashed
  WrongOutput = 4,  // outputs differ from the default schedule's
  Timeout = 5,      // the per-candidate time limit passed
  // Not a measurement but a verdict (no costs): with this schedule the
  // whole model ran slower than with the default (the tuner's model guard,
  // model_guard.h). Its other records keep their costs; it is never chosen.
  SlowerInModel = 6,
};
std::string_view measure_error_name(MeasureError e);  // "none", "lowering", ...

struct Record {
  std::string task_key;       // compile::key_text of the task
  std::string task;           // the task as described in messages ("Conv 'c1' + Relu 'r1'")
  std::string target;         // Target::to_string() of the machine measured on
  std::string schedule;       // schedule::to_text of the candidate
  std::vector<double> costs;  // seconds, one per repeat (empty when error != None)
  // The default schedule's seconds in the run before each repeat (as many as
  // costs; empty in records written before paired timing).
  std::vector<double> baseline;
  MeasureError error = MeasureError::None;
  double seconds_spent = 0;   // wall time building and measuring
  int64_t timestamp = 0;      // Unix seconds
  // The measuring machine as a cost model sees it: cost::HardwareDesc's
  // text (hardware.h), for a model that learns across machines. Optional:
  // the tuner leaves it empty; dataset collection (src/dataset) fills it.
  std::string hardware;

  bool ok() const { return error == MeasureError::None && !costs.empty(); }
  // The median of the costs (robust to the odd run a busy or virtual
  // machine slows down); infinity unless ok().
  double cost() const;
  // True when every cost has its baseline.
  bool paired() const { return ok() && baseline.size() == costs.size(); }
};

// One JSON object, no newline.
std::string to_json(const Record& r);

// Which number of a schedule's repeated measurements a cost model learns
// from (RecordFile::label_cost). Min: the lowest repeat (interference only
// slows a run, so the least disturbed run is the steadiest estimate);
// Median: the median repeat; Ratio: the tuner's pooled cost (pooled_cost).
enum class CostLabel { Min, Median, Ratio };
// "min", "median", "ratio"; parse throws listing the names.
std::string_view cost_label_name(CostLabel l);
CostLabel parse_cost_label(const std::string& name);
// Parses one line; throws tessera::Error saying which field is wrong.
Record parse_record(std::string_view line);

// A records file: every record in it, appended to as measurements come.
// A last line cut short by an interrupted run is dropped (and overwritten by
// the next append); any other malformed line is an error naming the file
// and line.
class RecordFile {
 public:
  // Reads `path` if it exists (a missing file is an empty log).
  explicit RecordFile(std::string path);

  const std::string& path() const { return path_; }
  const std::vector<Record>& records() const { return records_; }
  int dropped_partial_lines() const { return dropped_; }

  // True when this schedule of this task was measured on this machine
  // (with or without an error): a resumed run skips it.
  bool has(const std::string& task_key, const std::string& target, const std::string& schedule) const;
  // That record (the last one written for it), or null.
  const Record* find(const std::string& task_key, const std::string& target, const std::string& schedule) const;
  // Appends one record and flushes it to the file.
  void append(const Record& r);
  // How many records the schedule has.
  int count(const std::string& task_key, const std::string& target, const std::string& schedule) const;
  // The cost of a schedule over all its records (a schedule measured again
  // — a tuner confirming its best — is judged on all of it); infinity when
  // it has no valid record or any record of it is an error (a schedule that
  // once crashed or computed a wrong output is never chosen). With paired
  // timing (every record of it paired): the median ratio of a repeat to its
  // baseline, times the task's reference (the median baseline of its first
  // paired record: fixed from then on, so costs written at different times
  // compare, and a resumed run sees the costs the first one saw). Otherwise
  // the median of every repeat. SlowerInModel verdicts are not measurements:
  // they leave the cost as the measurements give it.
  double pooled_cost(const std::string& task_key, const std::string& target, const std::string& schedule) const;
  // The schedule's cost as `label` reads its repeats, over all its records;
  // infinity when pooled_cost is. Ratio is pooled_cost.
  double label_cost(const std::string& task_key, const std::string& target, const std::string& schedule,
                    CostLabel label) const;
  // The task's reference seconds for paired records; 0 when it has none.
  double reference(const std::string& task_key, const std::string& target) const;
  // True when the schedule has a SlowerInModel verdict.
  bool rejected(const std::string& task_key, const std::string& target, const std::string& schedule) const;
  // The record (the last) of the task's schedule on this machine with the
  // lowest pooled cost, or null when none is valid; rejected schedules are
  // passed over.
  const Record* best(const std::string& task_key, const std::string& target) const;

 private:
  std::string path_;
  std::vector<Record> records_;
  // Every record of each (task, machine, schedule), in file order.
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<size_t>> all_;
  // The baseline median of the first paired record of each (task, machine).
  std::map<std::pair<std::string, std::string>, double> references_;
  void index(size_t record);
  int dropped_ = 0;
  bool truncate_tail_ = false;  // the file ends in a partial line to cut before appending
  uint64_t good_bytes_ = 0;     // bytes of the file up to the last complete line (truncate_tail_)
  bool needs_newline_ = false;  // the file's last record has no newline: the next append adds one
};

}  // namespace tessera::tune
