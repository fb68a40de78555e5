// The first phase of compiling a plan: the concrete type of every value of
// a graph for the types of one set of inputs, and for every node whether it
// can be a kernel and what its output shapes depend on. Types come from
// inference on types alone; where a shape depends on a value computed from
// the inputs (a Reshape to a shape read from an input, NonZero, a Loop), the
// values it needs are asked of the ValueOracle, small integer tensors first.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "runtime/value_oracle.h"

namespace tessera::runtime {

// What a node is in a plan.
struct NodeFacts {
  bool compilable = false;               // may be a kernel (or part of a fused one)
  std::string reason;                    // why not
  std::vector<const Value*> shape_deps;  // as a reference step: the values its output shapes depend on
};

class ConcreteTypes {
 public:
  // Infers every node of `g` in order; `inputs` are the graph inputs.
  ConcreteTypes(const Graph& g, const std::vector<Tensor>& inputs, ValueOracle& oracle);

  // The type of a graph input, constant or node output.
  TensorType type_of(const Value* v) const;
  const NodeFacts& facts(const Node& n) const { return facts_.at(&n); }

 private:
  void infer_node(const Node& n);
  const Graph& g_;
  ValueOracle& oracle_;
  std::unordered_map<const Value*, TensorType> type_;
  std::unordered_map<const Node*, NodeFacts> facts_;
};

}  // namespace tessera::runtime
