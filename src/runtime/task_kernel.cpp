// Compiling tasks into kernels, in parallel, one per distinct key.
#include "runtime/task_kernel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>

#include "loop/printer.h"
#include "loop/visitor.h"
#include "runtime/executor.h"
#include "runtime/saved_kernel.h"
#include "support/error.h"
#include "support/memory_trace.h"

namespace tessera::runtime {

std::optional<schedule::Schedule> SavedSchedules::schedule_for(const compile::Task& task) const {
  auto it = by_key.find(task.key);
  if (it == by_key.end()) return std::nullopt;
  return it->second;
}

namespace {

using Clock = std::chrono::steady_clock;

KernelResult compile_task(const compile::Task& t, const std::vector<const ScheduleProvider*>& providers,
                          const KernelBuildOptions& options, bool with_prepack) {
  KernelResult r;
  std::optional<schedule::Schedule> sched;
  try {
    for (const ScheduleProvider* p : providers)
      if ((sched = p->schedule_for(t))) break;
  } catch (const std::exception& e) {  // this runs on a compile thread: nothing may escape
    r.error = t.describe() + ": schedule provider failed: " + e.what();
    return r;
  }
  compile::LoweredProgram lp;
  try {
    lp = compile::lower_program(t.name, t.params, t.constant, t.outs, sched, Target::for_isa(options.isa));
  } catch (const Error& e) {  // a program the lowering refuses (a fused block may run unfused)
    r.error = t.describe() + ": lowering failed: " + e.what();
    r.lowering_failed = true;
    return r;
  } catch (const std::exception& e) {  // a fault in the lowering: reported, never a silent fallback
    r.error = t.describe() + ": internal error in lowering: " + e.what();
    return r;
  }
  auto k = std::make_shared<TaskKernel>();
  codegen::JitOptions jo;
  jo.isa = options.isa;
  try {
    k->kernel = codegen::jit_compile(lp.kernel, jo);
  } catch (const std::exception& e) {
    r.error = t.describe() + ": JIT compilation failed: " + e.what();
    return r;
  }
  for (size_t i = 0; i < t.params.size() && i < lp.kernel.inputs.size(); ++i)
    k->reads.push_back(loop::uses_buffer(lp.kernel.body, lp.kernel.inputs[i]));
  if (lp.prepack) {
    loop::Kernel unnamed = *lp.prepack;
    unnamed.name.clear();
    k->prepack_program = loop::to_string(unnamed);
    k->packed = lp.prepack->outputs;
    k->prepack_params = lp.prepack_params;
    if (with_prepack) {
      try {
        k->prepack = codegen::jit_compile(*lp.prepack, jo);
      } catch (const std::exception& e) {
        r.error = t.describe() + ": JIT compilation of the weight-packing kernel failed: " + e.what();
        return r;
      }
    }
  }
  k->schedule = std::move(lp.schedule);
  k->scratch = std::move(lp.scratch);
  k->in_place = std::move(lp.in_place);
  k->params = lp.kernel.params();
  k->internal_bytes = lp.internal_bytes;
  r.kernel = std::move(k);
  return r;
}

// The task's saved kernel, linked; errors name the task. None when the
// task's schedule (from the providers: an artifact's schedule, edited say)
// is not the one the code was lowered with: the task is then compiled.
std::optional<KernelResult> link_task(const compile::Task& t, const SavedKernel& saved,
                                      const std::vector<const ScheduleProvider*>& providers,
                                      const KernelBuildOptions& options, bool with_prepack) {
  KernelResult r;
  try {
    std::optional<schedule::Schedule> sched;
    for (const ScheduleProvider* p : providers)
      if ((sched = p->schedule_for(t))) break;
    if (!sched || schedule::to_text(*sched) != saved.schedule) return std::nullopt;
    TESSERA_CHECK(saved.in_place.size() == t.params.size(), "the saved kernel has ", saved.in_place.size(),
                  " inputs, the task ", t.params.size());
    for (int i : saved.prepack_params)
      TESSERA_CHECK(i < static_cast<int>(t.params.size()), "the saved kernel packs input ", i, " of ",
                    t.params.size());
    r.kernel = link_saved_kernel(saved, options.isa, with_prepack);
  } catch (const std::exception& e) {
    r.error = t.describe() + ": " + kLinkFailed + ": " + e.what();
  }
  return r;
}

}  // namespace

std::vector<KernelResult> build_kernels(const std::vector<const compile::Task*>& tasks,
                                        const std::vector<const ScheduleProvider*>& providers,
                                        const KernelBuildOptions& options) {
  // One compilation per distinct key, by its first task.
  std::map<uint64_t, size_t> first;
  std::vector<size_t> rep_of(tasks.size()), reps;
  std::vector<bool> needs_prepack(tasks.size(), false);
  for (size_t i = 0; i < tasks.size(); ++i) {
    auto [it, fresh] = first.emplace(tasks[i]->key, i);
    if (fresh) reps.push_back(i);
    rep_of[i] = it->second;
    bool given = i < options.prepacked.size() && options.prepacked[i];
    if (!given) needs_prepack[it->second] = true;
  }
  std::vector<KernelResult> built(tasks.size());
  std::atomic<size_t> next{0};
  std::mutex progress_mu;
  const auto start = Clock::now();
  auto last_progress = start;
  size_t done = 0;
  auto work = [&] {
    for (;;) {
      size_t r = next.fetch_add(1);
      if (r >= reps.size()) return;
      const compile::Task& t = *tasks[reps[r]];
      const SavedKernel* saved = nullptr;
      if (options.saved) {
        auto it = options.saved->find(t.key);
        if (it != options.saved->end()) saved = it->second.get();
      }
      // Linked unless weights must be packed now and no packing kernel was saved.
      std::optional<KernelResult> linked;
      if (saved && !(needs_prepack[reps[r]] && !saved->packed.empty() && saved->prepack_object.empty()))
        linked = link_task(t, *saved, providers, options, needs_prepack[reps[r]]);
      bool link = linked.has_value();
      built[reps[r]] = link ? std::move(*linked) : compile_task(t, providers, options, needs_prepack[reps[r]]);
      if (!link) release_free_heap();
      std::lock_guard<std::mutex> lock(progress_mu);
      ++done;
      auto now = Clock::now();
      bool show = options.verbose || (std::chrono::duration<double>(now - start).count() > 3.0 &&
                                      std::chrono::duration<double>(now - last_progress).count() > 1.0);
      if (!show) continue;
      last_progress = now;
      std::fprintf(stderr, "%s %zu/%zu kernels (%zu tasks): %s\n", link ? "linked" : "compiled", done, reps.size(),
                   tasks.size(), t.describe().c_str());
    }
  };
  size_t threads = options.threads > 0 ? static_cast<size_t>(options.threads)
                                       : std::max(1u, std::thread::hardware_concurrency());
  threads = std::min(threads, reps.size());
  std::vector<std::thread> pool;
  for (size_t i = 1; i < threads; ++i) pool.emplace_back(work);
  work();
  for (std::thread& th : pool) th.join();
  release_free_heap();
  for (size_t i = 0; i < tasks.size(); ++i)
    if (rep_of[i] != i) built[i] = built[rep_of[i]];
  return built;
}

std::vector<Tensor> pack_constants(const TaskKernel& k, const std::vector<const Tensor*>& params) {
  TESSERA_CHECK(k.prepack, "pack_constants: the kernel has no weight-packing kernel");
  std::vector<void*> args;
  for (int i : k.prepack_params) args.push_back(const_cast<void*>(params.at(static_cast<size_t>(i))->raw()));
  std::vector<Tensor> packed;
  for (const loop::Buffer& b : k.packed) packed.emplace_back(b.dtype(), b.dims());
  for (Tensor& t : packed) args.push_back(t.raw());
  k.prepack->run(args);
  return packed;
}

}  // namespace tessera::runtime
