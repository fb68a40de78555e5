// A fused block of graph nodes as one compiled kernel: each node's tensor
// expression is built on the expressions of the nodes before it in the block
// (reads of an internal value become reads of its producing stage, so
// elementwise, reorganize and shuffle ops turn into index formulas inlined
// where they are read), then the program is scheduled and lowered once.
// Inputs are the values the block reads from outside, outputs the values it
// produces that are read outside (or are graph outputs).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compile/node_kernel.h"
#include "compile/task.h"

namespace tessera::compile {

struct BlockKernel {
  loop::Kernel kernel;
  std::vector<const Value*> params;        // per kernel input: the block input it reads
  std::vector<const Value*> outputs;       // per kernel output: the value it writes
  std::vector<TensorType> output_types;
  std::vector<const Value*> values_used;   // block inputs whose values were compiled in
  schedule::Schedule schedule;
  std::string expr_text;
  std::optional<loop::Kernel> prepack;     // packing of constant params, run once
  std::vector<const Value*> prepack_inputs;
  std::vector<bool> in_place;              // per param: the output may be written over it (in_place_params)
  std::vector<loop::Buffer> scratch;       // whole intermediates: the kernel's last outputs, placed by the caller
  int64_t internal_bytes = 0;              // intermediates the kernel materializes (scratch and allocations outside loops)
};

struct BlockKernelOptions {
  Target target;  // what schedules plan for (AVX-512 unless set)
};

// Compiles `nodes` (in graph order) into one kernel writing `outputs`.
// `input` gives the tensor of every value read from outside the block (its
// type, and its value where an expression needs one); constants are packed
// when their layout calls for it. Throws a tessera::Error naming the first
// node when the block cannot be one kernel.
BlockKernel compile_block(int64_t opset, const std::vector<const Node*>& nodes,
                          const std::function<const Tensor*(const Value*)>& input,
                          const std::vector<const Value*>& outputs,
                          const std::optional<schedule::Schedule>& sched = std::nullopt,
                          const BlockKernelOptions& options = {});


}  // namespace tessera::compile
