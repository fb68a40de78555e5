// Measuring schedules of one task, in this process: each candidate compiled,
// run on fresh random inputs and its outputs compared with the default
// schedule's on the same inputs, then timed by a Timer (inside the model:
// model_timer.h, which says why). The tuner runs this in a worker process
// (measure_worker.h), so a crashing or hanging candidate cannot take it down.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "compile/task.h"
#include "runtime/task_kernel.h"
#include "schedule/schedule.h"
#include "support/target.h"
#include "tune/model_timer.h"
#include "tune/record.h"

namespace tessera::tune {

struct MeasureOptions {
  Isa isa = Isa::Host;
  TimerOptions timing;  // how the timer (model_timer.h) repeats the model's runs
  uint64_t seed = 1;          // of the random inputs (each measurement draws fresh ones)
  // Largest relative difference from the default schedule's outputs
  // (max |a - b| over max |b|, per output) a candidate may have.
  double tolerance = 1e-4;
};

struct Measurement {
  MeasureError error = MeasureError::None;
  std::vector<double> costs;     // seconds per timed run
  std::vector<double> baseline;  // the default schedule's seconds in the run before each (model_timer.h)
  std::string message;           // what went wrong
};

// The record of one measurement: its costs, baseline and error, with the
// task, machine and schedule it measured, `seconds_spent` and the time now.
Record measured_record(const Measurement& m, std::string task_key, std::string task, std::string target,
                       std::string schedule, double seconds_spent);

// The value of a task input that is not a float (indices, masks, shapes):
// as the model computes it, so a candidate reads what it will read in the
// model. Null: random.
using InputValues = std::function<const Tensor*(const Value*)>;

// Times a schedule of the task (inside the model: model_timer.h): seconds
// per timed run, each paired with the default schedule's.
using Timer = std::function<TaskTiming(const std::optional<schedule::Schedule>&)>;

class TaskBench {
 public:
  // Compiles the default schedule of `task` (the reference every candidate
  // is compared with); throws when it cannot be compiled. Candidates are
  // checked here and timed by `timer`.
  TaskBench(const compile::Task& task, const MeasureOptions& options, InputValues values, Timer timer);
  ~TaskBench();

  // Measures the task at `schedule` (nullopt: the default schedule).
  // `corrupt_output` changes the candidate's first output before the check
  // (for tests: the check must catch it).
  Measurement measure(const std::optional<schedule::Schedule>& schedule, bool corrupt_output = false);

 private:
  struct Prepared;
  std::shared_ptr<const runtime::TaskKernel> compile(const std::optional<schedule::Schedule>& s, Measurement& m) const;
  // Fresh inputs for a kernel and buffers for everything else it writes.
  void prepare(const runtime::TaskKernel& k, Prepared& p);
  void run(const runtime::TaskKernel& k, Prepared& p) const;

  const compile::Task& task_;
  MeasureOptions options_;
  InputValues values_;
  Timer timer_;
  std::shared_ptr<const runtime::TaskKernel> reference_;
  std::mt19937_64 rng_;
};

// The largest relative difference between two outputs (max |a - b| over
// max |b|; exact comparison for integers and bools: 0 or infinity); NaN
// where one has NaN and the other not counts as infinity.
double relative_difference(const Tensor& a, const Tensor& b);
// The largest relative_difference(a[i], b[i]) over a model's outputs
// (infinity when the lists differ in length).
double max_relative_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b);

}  // namespace tessera::tune
