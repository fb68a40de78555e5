// A task's kernel: the task's program scheduled (by the first schedule
// provider that has one for it, else the op class's default rule), lowered
// and JIT-compiled, with the one binding of the kernel calling convention.
// Tasks are compiled in parallel; tasks with the same key share one kernel.
// A task whose kernel an artifact saved (saved_kernel.h) is linked instead:
// no lowering, no optimization.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/llvm/jit.h"
#include "compile/node_kernel.h"
#include "compile/task.h"
#include "schedule/schedule.h"

namespace tessera::runtime {

// Where schedules come from, in order (artifact or records, then a tuner):
// the first that has a schedule for a task gives it; none: the default rule.
class ScheduleProvider {
 public:
  virtual ~ScheduleProvider() = default;
  virtual std::optional<schedule::Schedule> schedule_for(const compile::Task& task) const = 0;
};

// Schedules by task key (an artifact's, or any fixed set).
class SavedSchedules final : public ScheduleProvider {
 public:
  std::map<uint64_t, schedule::Schedule> by_key;
  std::optional<schedule::Schedule> schedule_for(const compile::Task& task) const override;
};

struct SavedKernel;

struct TaskKernel {
  schedule::Schedule schedule;
  std::shared_ptr<codegen::JitKernel> kernel;
  std::shared_ptr<codegen::JitKernel> prepack;  // packs constant params once (null: none)
  std::vector<int> prepack_params;    // the params the prepack kernel reads, by position
  std::vector<loop::Buffer> packed;   // the prepack kernel's outputs
  // The prepack kernel's loop IR (its name left out): with the constants it
  // reads, what decides the packed bytes (steps of any plan with the same
  // program and constants share one packed copy).
  std::string prepack_program;
  std::vector<bool> reads;            // per task param: the main kernel reads it (else only prepack does)
  std::vector<loop::Buffer> scratch;  // whole intermediates the caller places (arena, this step only)
  std::vector<bool> in_place;         // per param: the output may be written over it
  std::vector<loop::Buffer> params;   // the kernel's parameters, in calling order
  int64_t internal_bytes = 0;

  // The calling convention, bound here only: the task's params, then the
  // packed constants, then the outputs, then the scratch buffers.
  template <class T>
  static std::vector<T> arguments(const std::vector<T>& params, const std::vector<T>& packed,
                                  const std::vector<T>& outputs, const std::vector<T>& scratch) {
    std::vector<T> a;
    a.reserve(params.size() + packed.size() + outputs.size() + scratch.size());
    for (const auto* part : {&params, &packed, &outputs, &scratch}) a.insert(a.end(), part->begin(), part->end());
    return a;
  }
};

struct KernelBuildOptions {
  codegen::Isa isa = codegen::Isa::Host;
  int threads = 0;  // compile threads; <= 0: one per core
  bool verbose = false;  // progress on stderr for every task (else only once compiling takes seconds)
  // Per task: its packed constants are given (an artifact's), so its
  // prepack kernel is compiled only if another task of its key needs it.
  std::vector<bool> prepacked;
  // Kernels an artifact saved, by task key (checked, for this ISA): a task
  // with one is linked, not compiled. Null: none.
  const std::map<uint64_t, std::shared_ptr<const SavedKernel>>* saved = nullptr;
};

// The result of compiling one task: its kernel, or the error that stopped it.
struct KernelResult {
  std::shared_ptr<const TaskKernel> kernel;
  std::string error;            // lowering or JIT failure (the message names the task)
  bool lowering_failed = false; // the lowering refused the program (a tessera::Error): a fused block may
                                // run unfused; any other failure (JIT, a fault) fails the plan
};

// Compiles the tasks (one kernel per distinct key), `threads` at a time;
// schedules from `providers` in order, else the default. Never throws for a
// task: failures are in the results.
std::vector<KernelResult> build_kernels(const std::vector<const compile::Task*>& tasks,
                                        const std::vector<const ScheduleProvider*>& providers,
                                        const KernelBuildOptions& options);

// Runs the prepack kernel of `k` on the constants of `params` (by position),
// returning the packed tensors.
std::vector<Tensor> pack_constants(const TaskKernel& k, const std::vector<const Tensor*>& params);

}  // namespace tessera::runtime
