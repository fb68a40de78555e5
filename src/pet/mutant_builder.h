// Building mutants: a graph with the original subprogram's inputs, written
// op by op with inferred types (ProgramBuilder), and a copy of a subprogram
// with some of its nodes rewritten (rewrite_nodes). Every generator family
// (pet/mutants_*.cpp) writes its programs through these.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tessera::pet {

// Emits nodes into a fresh graph whose inputs copy `original`'s (names, types,
// order). Each emitter adds one node, infers its output types (throwing
// tessera::Error naming the node when the op rejects its inputs) and returns
// its output. Integer parameters become constants of the graph.
class ProgramBuilder {
 public:
  explicit ProgramBuilder(const Graph& original);

  Graph& graph() { return *g_; }
  Value* input(size_t i) const { return g_->inputs().at(i); }

  // A node of any op; returns its outputs.
  std::vector<Value*> op(const std::string& op_type, std::vector<Value*> ins, AttrMap attrs = {},
                         int num_outputs = 1);
  Value* op1(const std::string& op_type, std::vector<Value*> ins, AttrMap attrs = {}) {
    return op(op_type, std::move(ins), std::move(attrs), 1)[0];
  }
  Value* ints(const std::vector<int64_t>& v);        // an int64 1-D constant
  Value* floats(const Tensor& t);                     // a float constant (masks, 1/count)
  Value* reshape(Value* x, const Dims& dims);
  Value* transpose(Value* x, const std::vector<int64_t>& perm);
  // PET's R/T op: reshape to `mid`, transpose by `perm`, reshape to `out`
  // (an empty `out` skips the last reshape).
  Value* rt(Value* x, const Dims& mid, const std::vector<int64_t>& perm, const Dims& out);
  // Zero padding, ONNX order: begins of every axis, then ends (negative crops).
  Value* pad(Value* x, const std::vector<int64_t>& pads);
  Value* slice(Value* x, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
               const std::vector<int64_t>& axes);
  Value* concat(const std::vector<Value*>& xs, int64_t axis);
  std::vector<Value*> split(Value* x, int64_t axis, const std::vector<int64_t>& sizes);
  // Conv with explicit attributes (kernel_shape is taken from the weight).
  Value* conv(Value* x, Value* w, Value* b, const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
              const std::vector<int64_t>& dilations, int64_t group);

  // Sets the outputs, checks them against `original`'s (count, dtype, dims)
  // and the graph's well-formedness; returns the finished graph.
  std::shared_ptr<Graph> finish(const std::vector<Value*>& outputs);

 private:
  const Graph& original_;
  std::shared_ptr<Graph> g_;
  int counter_ = 0;
};

// The emitter of a rewrite: given the builder and, per target node, its inputs
// as values of the new graph, returns, per target node, its outputs' new
// values (null: that output is not used).
using RewriteFn = std::function<std::vector<std::vector<Value*>>(ProgramBuilder&,
                                                                 const std::vector<std::vector<Value*>>&)>;

// A copy of `original` with the `targets` (nodes of it) replaced by what
// `emit` writes: the other nodes are copied in order, the rewrite is emitted
// once every target's inputs exist. Throws tessera::Error when the rewrite
// does not fit (an op rejecting its inputs, outputs of other types).
std::shared_ptr<Graph> rewrite_nodes(const Graph& original, const std::vector<const Node*>& targets,
                                     const RewriteFn& emit);

// Attribute readers with ONNX's defaults, for the families' checks.
std::vector<int64_t> ints_attr_or(const Node& n, const char* key, std::vector<int64_t> def);
int64_t int_attr_or(const Node& n, const char* key, int64_t def);

}  // namespace tessera::pet
