// The interface every cost model of the tuner implements: given the
// candidate programs of one task, a predicted cost for each, comparable only
// among candidates of that task (lower = faster). Behind it: the static model
// (Tuna: hardware description + loop IR + machine code, static_model.h) and,
// later, learned and measured ones.
#pragma once

#include <string>
#include <vector>

#include "codegen/llvm/jit.h"
#include "loop/stmt.h"

namespace tessera::cost {

// One candidate program of a task, as cost models see it.
struct Candidate {
  const loop::Kernel* kernel = nullptr;     // the lowered main kernel (loop IR), never null
  const codegen::JitKernel* jit = nullptr;  // its compiled code (machine-code features); null: loop-IR features only
};

// Ranks candidates of one task. predict returns one predicted cost per
// candidate (lower = faster), comparable only among candidates of the same task.
class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::string name() const = 0;  // "static", ...
  virtual std::vector<double> predict(const std::vector<Candidate>& candidates) const = 0;
};

}  // namespace tessera::cost
