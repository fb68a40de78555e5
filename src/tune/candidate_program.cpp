// Candidates compiled for cost models (see candidate_program.h).
#include "tune/candidate_program.h"

#include <limits>

#include "compile/node_kernel.h"

namespace tessera::tune {

std::optional<CandidateProgram> compile_candidate(const compile::Task& task, const schedule::Schedule& schedule,
                                                  Isa isa, bool machine_code) {
  CandidateProgram c;
  try {
    compile::LoweredProgram lp =
        compile::lower_program(task.name, task.params, task.constant, task.outs, schedule, Target::for_isa(isa));
    c.kernel = std::move(lp.kernel);
    if (machine_code) {
      codegen::JitOptions jo;
      jo.isa = isa;
      c.jit = codegen::jit_compile(c.kernel, jo);
    }
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return c;
}

std::vector<double> predict_schedules(const cost::CostModel& model, const compile::Task& task,
                                      const std::vector<schedule::Schedule>& schedules, Isa isa, bool machine_code) {
  std::vector<std::optional<CandidateProgram>> programs;
  std::vector<cost::Candidate> candidates;
  std::vector<size_t> where;
  programs.reserve(schedules.size());
  for (size_t i = 0; i < schedules.size(); ++i) {
    programs.push_back(compile_candidate(task, schedules[i], isa, machine_code));
    if (!programs.back()) continue;
    candidates.push_back(programs.back()->candidate());
    where.push_back(i);
  }
  std::vector<double> out(schedules.size(), std::numeric_limits<double>::infinity());
  if (candidates.empty()) return out;
  std::vector<double> p = model.predict(candidates);
  for (size_t k = 0; k < where.size(); ++k) out[where[k]] = p[k];
  return out;
}

}  // namespace tessera::tune
