// Lowering: a tensor-expression program and its schedule become one loop-IR
// kernel. The readable pipeline:
//   1. program steps: cache_write / cache_read / rfactor add stages; placements
//      are noted
//   2. placement: outputs, reductions, extern inputs and cache stages are
//      materialized, other compute stages are inlined unless scheduled
//   3. inline: formulas substituted into their consumers
//   4. root stages: each a loop nest (loop steps applied) over its full domain
//   5. compute_at stages, consumers first: the region each needs is inferred
//      from the reads inside the target loop, and its nest is built there
//   6. guard chains (a concat's input boundaries) are decided around the
//      loops they do not vary in (unswitch_guards.h); then
//      flatten: multi-dimensional reads become loads at storage offsets
//      (layouts, padding, regions); reads under an if_then_else branch are
//      predicated (a plain select reads both sides)
//   7. reductions inside formulas become explicit accumulation; simplify
// Kernel parameters are the inputs (placeholders) then the outputs, as flat
// row-major buffers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "loop/stmt.h"
#include "schedule/schedule.h"
#include "te/tensor_expr.h"

namespace tessera::schedule {

struct LowerOptions {
  bool simplify = true;
  // Turn vectorized / unrolled loops into vector code / copies (else they stay annotated).
  bool vectorize = true;
  bool unroll = true;
  // Per input: its value is the same on every run (weights). Root stages that
  // read only such inputs (weight packing) move to a separate prepack kernel.
  std::vector<bool> constant_inputs;
};

// A kernel and, when some stages depend on constant inputs only, the kernel
// that precomputes them once: prepack reads a subset of main's inputs (the
// same buffers) and writes buffers main takes as extra inputs after the
// program's inputs (prepack->outputs == main.inputs[inputs.size():]).
struct LoweredKernels {
  loop::Kernel main;
  std::optional<loop::Kernel> prepack;
};

// Lowers the program computing `outputs` from the placeholders `inputs`.
// Throws tessera::Error naming the step for a schedule that does not apply.
loop::Kernel lower(const std::string& name, const std::vector<te::Tensor>& inputs,
                   const std::vector<te::Tensor>& outputs, const Schedule& schedule = {},
                   const LowerOptions& options = {});
// Lowering with constant-only stages split into a prepack kernel.
LoweredKernels lower_with_prepack(const std::string& name, const std::vector<te::Tensor>& inputs,
                                  const std::vector<te::Tensor>& outputs, const Schedule& schedule,
                                  const LowerOptions& options);

}  // namespace tessera::schedule
