// The reference interpreter: runs a graph node by node with the registry's
// reference kernels. It is the oracle every optimization is checked against.
#pragma once

#include <functional>
#include <vector>

#include "ir/graph.h"

namespace tessera {

struct InterpreterOptions {
  // Check every produced tensor against the value's static type (catches
  // inference bugs). On by default: the oracle must be self-consistent.
  bool check_types = true;
  // Called after each node with its outputs (for dumps and debugging).
  std::function<void(const Node&, const std::vector<Tensor>&)> on_node;
  // For subgraph bodies: resolves the graph's captures (values of the
  // enclosing scope) by name.
  std::function<const Tensor*(const std::string&)> outer;
};

// Checks `inputs` against the graph's input signature (count, dtype, known
// dims); throws an Error naming the first mismatching input.
void check_inputs(const Graph& g, const std::vector<Tensor>& inputs);

// Runs `g` on `inputs` (in graph-input order) and returns the graph outputs.
std::vector<Tensor> interpret(const Graph& g, const std::vector<Tensor>& inputs,
                              const InterpreterOptions& opts = {});

}  // namespace tessera
