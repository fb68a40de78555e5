// Timing a task's kernels where they run: inside the model. A candidate
// schedule of one task is compiled into a plan of the whole model (the other
// tasks keep their kernels, found again in the JIT's cache), the model is
// run, and the cost is the time of the steps running that task's kernel.
// The candidate's outputs are checked apart (measure.h), on fresh inputs.
// Each run of the candidate's plan follows a run of the default plan (every
// task at its default schedule, compiled once), timed the same way: the
// pairs' ratios cancel what the machine does to both — a virtual machine's
// slow phases last minutes, long enough to distort single candidates' times.
// Measured apart, on buffers of its own, a kernel meets other cache contents,
// other thread states and other buffer placements than in the model, and a
// schedule that wins apart can lose inside it (fused Concat blocks do).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/executor.h"
#include "schedule/schedule.h"

namespace tessera::tune {

struct TimerOptions {
  int min_repeats = 5, max_repeats = 30;
  double min_seconds = 0.05;   // model runs continue until this much time passed
  bool flush_caches = true;    // each core's private caches before every run
};

// Seconds per run of the task's kernel: the candidate's and, paired run by
// run, the default plan's (measured just before each of the candidate's).
struct TaskTiming {
  std::vector<double> costs, baseline;
};

class ModelTimer {
 public:
  // `executor` holds the model (its graph and fusion plan); `inputs` are run.
  ModelTimer(runtime::Executor& executor, std::vector<Tensor> inputs, TimerOptions options);
  ~ModelTimer();

  // Seconds one kernel of task `key` takes in the model (its steps' time in
  // a run over their number), one per run, with `schedule` for the task
  // (nullopt: the default), and paired with each the default plan's.
  // Throws when the plan has no compiled step of the task (the block could
  // not be lowered with the schedule).
  TaskTiming time_task(uint64_t key, const std::optional<schedule::Schedule>& schedule);

 private:
  void flush();
  std::unique_ptr<runtime::Plan> plan_with(uint64_t key, const std::optional<schedule::Schedule>& schedule) const;
  // The task's kernel seconds in one run of `plan` (its `steps`), after a flush.
  double run_once(runtime::Plan& plan, const std::vector<size_t>& steps);
  std::unique_ptr<runtime::Plan> default_plan_;
  runtime::Executor& executor_;
  std::vector<Tensor> inputs_;
  TimerOptions options_;
  std::vector<std::vector<int>> blocks_;
  std::vector<char> flush_;
};

}  // namespace tessera::tune
