// A multi-linear subprogram with every op's index parameters resolved: the
// dims of each value and, per node, the pads, strides, dilations, slice starts
// and steps, permutation, offsets, reduced axes ... read once with the ONNX
// semantics of the node's opset. The exact evaluator (pet/field_eval.h) and the
// splitting-point inference (pet/boxes.h) both work from this plan, so they
// read an op the same way.
//
// Building a plan is where unsupported input is refused: an op that is not
// multi-linear ("pet: Relu 'r1' is not multi-linear"), a parameter input that
// is not a constant, a float constant used as data that does not hold
// integers, unknown dims, or a graph whose declared types disagree with the
// registry's inference. Every refusal is a tessera::Error naming the node.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tessera::pet {

// Ranks above this are refused (index arithmetic uses fixed arrays).
inline constexpr int kMaxRank = 8;

enum class LinOp {
  Copy,          // Identity, Reshape, Flatten, Squeeze, Unsqueeze: element i of the output is element i of the input
  Transpose,
  Add, Sub, Mul,  // numpy broadcasting
  Conv, ConvTranspose,
  MatMul, Gemm,
  Pad,           // constant 0
  Slice,
  Concat, Split,
  AvgPool,       // AveragePool and GlobalAveragePool
  Reduce,        // ReduceSum, ReduceMean
  DepthToSpace, SpaceToDepth,
};

// Sliding-window geometry, per spatial dim (Conv, ConvTranspose, AvgPool).
struct Window {
  std::vector<int64_t> k, s, d, pb, pe;  // kernel, strides, dilations, pads at begin and end
  int64_t group = 1;
  bool count_include_pad = false;  // AvgPool: divide by the taps inside the padded input
};

struct LinNode {
  const Node* node = nullptr;
  LinOp op = LinOp::Copy;
  std::vector<int> in;   // value ids of the data inputs in ONNX order (-1: absent optional)
  std::vector<int> out;  // value ids of the outputs
  Window win;
  std::vector<int64_t> perm;         // Transpose: output dim i is input dim perm[i]
  std::vector<int64_t> start, step;  // Slice and Pad, per dim: output i reads input start + i*step
  int64_t axis = 0;                  // Concat, Split
  std::vector<int64_t> offsets;      // Concat: per input, Split: per output, along axis
  std::vector<char> reduced;         // Reduce: per input dim
  bool keepdims = true;
  bool mean = false;                 // ReduceMean (else ReduceSum)
  bool trans_a = false, trans_b = false;  // Gemm
  int64_t block = 1;                 // DepthToSpace, SpaceToDepth
  bool dcr = true;                   // DepthToSpace mode
};

struct LinearPlan {
  std::vector<const Value*> values;  // by id
  std::vector<Dims> dims;            // by id
  std::vector<int> inputs;           // graph inputs, in order
  std::vector<int> outputs;          // graph outputs, in order
  std::vector<LinNode> nodes;        // in graph (topological) order
  std::vector<int> producer;         // by id: index into nodes, -1 for inputs and constants
  std::vector<int> producer_output;  // by id: which output of its producer
  std::map<int, std::vector<uint32_t>> constants;  // constants used as data, as field elements
  std::vector<int> input_index;      // by id: position among the graph inputs, -1 otherwise

  int64_t numel(int id) const { return numel_of(dims[static_cast<size_t>(id)]); }
};

// Resolves every node of `g`; throws an Error naming the first node it
// cannot take.
LinearPlan plan_linear(const Graph& g);

}  // namespace tessera::pet
