// Timing a task's kernels inside the model (see model_timer.h).
#include "tune/model_timer.h"

#include <algorithm>
#include <chrono>

#include "support/error.h"
#include "support/thread_pool.h"

namespace tessera::tune {

namespace {

// Twice a core's private caches (L1d + L2): one pass evicts what the last
// run left there. The shared last level is kept: in a model, the kernel
// before just wrote this one's input, and caches that large (hundreds of
// MiB on some servers) would make every run a cold start from DRAM.
size_t flush_bytes() {
  const CacheSizes c = Target::host().caches;
  return static_cast<size_t>(std::clamp<int64_t>(2 * (c.l1d + c.l2), 1 << 20, 64 << 20));
}

}  // namespace

ModelTimer::ModelTimer(runtime::Executor& executor, std::vector<Tensor> inputs, TimerOptions options)
    : executor_(executor), inputs_(std::move(inputs)), options_(options) {
  for (const fusion::Block& b : executor_.partition().blocks) blocks_.push_back(b.nodes);
}

ModelTimer::~ModelTimer() = default;

void ModelTimer::flush() {
  if (!options_.flush_caches) return;
  // Every thread of the pool writes over a buffer of its own.
  ThreadPool& pool = ThreadPool::global();
  const size_t per_thread = flush_bytes();
  const size_t threads = static_cast<size_t>(pool.threads());
  if (flush_.size() != per_thread * threads) flush_.assign(per_thread * threads, 1);
  pool.parallel_for(static_cast<int64_t>(threads), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      char* p = flush_.data() + static_cast<size_t>(t) * per_thread;
      for (size_t i = 0; i < per_thread; i += 64) p[i] = static_cast<char>(p[i] + 1);
    }
  });
}

std::unique_ptr<runtime::Plan> ModelTimer::plan_with(uint64_t key,
                                                     const std::optional<schedule::Schedule>& schedule) const {
  runtime::ExecutorOptions o = executor_.options();
  o.schedule_providers.clear();
  o.compile_threads = 1;
  o.verbose = false;
  if (schedule) {
    auto given = std::make_shared<runtime::SavedSchedules>();
    given->by_key[key] = *schedule;
    o.schedule_providers.push_back(given);
  }
  return runtime::compile_plan(executor_.graph(), inputs_, o, nullptr, &blocks_);
}

double ModelTimer::run_once(runtime::Plan& plan, const std::vector<size_t>& steps) {
  flush();
  std::vector<double> step_seconds(plan.steps.size(), 0.0);
  // The run stops after the task's last kernel: later steps cannot change its time.
  runtime::run_plan(executor_.graph(), plan, inputs_, &step_seconds, steps.back() + 1);
  double s = 0;
  for (size_t i : steps) s += step_seconds[i];
  return s / static_cast<double>(steps.size());
}

TaskTiming ModelTimer::time_task(uint64_t key, const std::optional<schedule::Schedule>& schedule) {
  auto task_steps = [key](const runtime::Plan& p) {
    std::vector<size_t> steps;
    for (size_t i = 0; i < p.steps.size(); ++i)
      if (p.steps[i].compiled && p.steps[i].task_key == key) steps.push_back(i);
    return steps;
  };
  if (!default_plan_) {
    default_plan_ = plan_with(key, std::nullopt);
    runtime::run_plan(executor_.graph(), *default_plan_, inputs_);  // first touches, packed weights
  }
  const std::vector<size_t> base_steps = task_steps(*default_plan_);
  TESSERA_CHECK(!base_steps.empty(), "the model's default plan has no kernel of the task");
  std::unique_ptr<runtime::Plan> plan = plan_with(key, schedule);
  const std::vector<size_t> steps = task_steps(*plan);
  TESSERA_CHECK(!steps.empty(), "the model's plan has no kernel of the task with this schedule (its block ran apart)");
  TaskTiming t;
  runtime::run_plan(executor_.graph(), *plan, inputs_);  // warm-up: first touches, packed weights
  runtime::run_plan(executor_.graph(), *default_plan_, inputs_);  // and the default's memory back in place
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < options_.max_repeats; ++r) {
    if (r >= options_.min_repeats &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= options_.min_seconds)
      break;
    t.baseline.push_back(run_once(*default_plan_, base_steps));
    t.costs.push_back(run_once(*plan, steps));
  }
  return t;
}

}  // namespace tessera::tune
