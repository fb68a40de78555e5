// Small helpers shared by the op-family files: common inference rules and
// element loops.
#pragma once

#include <cmath>
#include <vector>

#include "support/dtype_dispatch.h"
#include "ops/registry.h"
#include "support/error.h"

namespace tessera {

// Output 0 has input 0's type (unary elementwise ops).
void infer_same_as_input0(InferContext& c);
// Output 0 is the broadcast of all present inputs, with input 0's dtype.
void infer_broadcast(InferContext& c);
// Output 0 is the broadcast of all inputs, with dtype bool (comparisons).
void infer_broadcast_bool(InferContext& c);

// Index of the element of an input with dims `in` that broadcasts to output
// element `out_index` of `out` (both row-major).
class BroadcastIndexer {
 public:
  BroadcastIndexer(const Dims& in, const Dims& out);
  int64_t operator()(int64_t out_index) const;

 private:
  Dims out_strides_;
  Dims in_strides_;  // 0 where broadcast
  bool identity_ = false;
};

// Reads a constant int-vector input (shape, axes, pads ...) if known at
// inference time; returns false when the input is not a constant.
bool constant_ints(const InferContext& c, int i, std::vector<int64_t>& out);

// Requires all present inputs to have the same dtype; throws naming the node.
void check_same_dtype(const Node& n, const std::vector<const TensorType*>& ins);

}  // namespace tessera
