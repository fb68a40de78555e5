// One graph node as a compiled kernel: the op's tensor expression built for
// the node's concrete input types (and the values of inputs that shape the
// result), scheduled (the op class's default schedule unless one is given)
// and lowered to a loop-IR kernel ready for the JIT.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "loop/stmt.h"
#include "schedule/schedule.h"
#include "schedule/target_info.h"
#include "support/target.h"
#include "te/tensor_expr.h"

namespace tessera::compile {

struct NodeKernel {
  loop::Kernel kernel;
  std::vector<int> param_inputs;  // for each kernel input: the node input it is
  std::vector<bool> value_used;   // per node input: its value was compiled into the kernel
  schedule::Schedule schedule;
  std::string expr_text;          // the tensor-expression program, printed
  // Stages computed from constant inputs only (weight packing): run once,
  // reading the node inputs prepack_inputs; its outputs are passed to
  // `kernel` as extra inputs after the param_inputs.
  std::optional<loop::Kernel> prepack;
  std::vector<int> prepack_inputs;
  // Whole intermediates the kernel materializes: its last outputs, after the
  // node's, for the caller to place (contents on entry do not matter).
  std::vector<loop::Buffer> scratch;
  std::vector<bool> in_place;  // per node input: the output may be written over it
};

struct NodeKernelOptions {
  Target target;                        // what schedules plan for (AVX-512 unless set)
  std::vector<bool> constant_inputs;    // per node input: a constant (weights): packing may be hoisted
};

// Compiles `n`, a node of a graph with inferred types, as a one-node task
// (node_task: inputs at their graph types, graph constants' values known).
// Throws a tessera::Error naming the node when the op has no expression, a
// type is not static, or the expression disagrees with inference.
NodeKernel compile_node(const Node& n, int64_t opset, const std::optional<schedule::Schedule>& sched = std::nullopt,
                        const NodeKernelOptions& options = {});

// A tensor-expression program scheduled (the default schedule unless one is
// given) and lowered; constant params (weights) may get a prepack kernel.
struct LoweredProgram {
  loop::Kernel kernel;   // its last outputs are the `scratch` buffers
  std::vector<loop::Buffer> scratch;  // whole intermediates the caller provides (placed in its arena)
  schedule::Schedule schedule;
  std::optional<loop::Kernel> prepack;
  std::vector<int> prepack_params;  // the params the prepack kernel reads, by position
  std::vector<bool> in_place;       // per param: the output may be written over it (in_place_params)
  int64_t internal_bytes = 0;       // intermediates materialized inside (scratch and allocations outside loops)
};
// What schedules of a program plan for on `machine`: the machine, and which
// params are constants (weights: packed once). Default schedules, the
// tuner's spaces and lowering read the same one.
schedule::TargetInfo program_target(const std::vector<te::Tensor>& params, const std::vector<bool>& constant,
                                    const Target& machine);
LoweredProgram lower_program(const std::string& name, const std::vector<te::Tensor>& params,
                             const std::vector<bool>& constant, const std::vector<te::Tensor>& outs,
                             const std::optional<schedule::Schedule>& sched, const Target& target);

// Per param: true when the program has one output and every stage that
// depends on the param (up to the output) is elementwise of the output's
// shape, reading what it depends on only at its own position — so writing
// an output element never clobbers a param element still to be read, and the
// output may share the param's memory. Ops that move elements (a reversing
// Slice, a shifting Pad, Concat/Slice pairs in a fused block) are not.
std::vector<bool> in_place_params(const std::vector<te::Tensor>& params, const std::vector<te::Tensor>& outs);

// Kernel outputs must be distinct computed stages: outputs that are
// placeholders or repeat an earlier output become copies named stage_name(i).
void materialize_outputs(std::vector<te::Tensor>& outs, const std::function<std::string(size_t)>& stage_name);

// A name usable as a kernel / buffer name: letters, digits, '_' and '.'.
std::string sanitize_name(const std::string& s);

}  // namespace tessera::compile
