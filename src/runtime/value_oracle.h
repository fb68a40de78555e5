// The values a compilation needs: compiling a graph for concrete input types
// runs nothing, except where an output's shape, or a constant an expression
// bakes into its kernel, depends on the value of something computed from the
// inputs (a Reshape to a shape read from an input, NonZero, a Loop). Those
// values, and the values they depend on, are computed on request by the
// reference kernels, once each, for the inputs of the compilation.
#pragma once

#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace tessera::runtime {

class ValueOracle {
 public:
  ValueOracle(const Graph& g, const std::vector<Tensor>& inputs);

  // The value of `v`: a graph input's or a constant's, else computed with
  // every value it depends on. Throws naming the node whose kernel fails.
  const Tensor& value(const Value* v);
  // The outputs of `n` (absent ones undefined), computing them if need be.
  const std::vector<Tensor>& outputs(const Node& n);
  // Nodes run so far.
  int64_t nodes_run() const { return static_cast<int64_t>(outputs_.size()); }

 private:
  void compute(const Node& n);  // runs n and every node it depends on not run yet
  const Graph& g_;
  std::unordered_map<const Value*, const Tensor*> inputs_;
  std::unordered_map<const Node*, size_t> index_;
  std::unordered_map<const Node*, std::vector<Tensor>> outputs_;
  std::unordered_map<const Value*, const Tensor*> known_;
};

}  // namespace tessera::runtime
