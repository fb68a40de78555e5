// A candidate schedule of a task compiled for a cost model to read — its
// loop-IR kernel and, when asked, its machine code — and never run. What
// the static model (cost/static_model.h) ranks during a search that
// measures nothing.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "codegen/llvm/jit.h"
#include "compile/task.h"
#include "cost/cost_model.h"
#include "loop/stmt.h"
#include "schedule/schedule.h"

namespace tessera::tune {

struct CandidateProgram {
  loop::Kernel kernel;
  std::shared_ptr<codegen::JitKernel> jit;  // null unless compiled
  cost::Candidate candidate() const { return {&kernel, jit.get()}; }
};

// Lowers the task at `schedule` (and JIT-compiles it when `machine_code`);
// nullopt when either fails.
std::optional<CandidateProgram> compile_candidate(const compile::Task& task, const schedule::Schedule& schedule,
                                                  Isa isa, bool machine_code);

// Predicted costs of schedules of one task (infinity where one does not
// compile).
std::vector<double> predict_schedules(const cost::CostModel& model, const compile::Task& task,
                                      const std::vector<schedule::Schedule>& schedules, Isa isa, bool machine_code);

}  // namespace tessera::tune
