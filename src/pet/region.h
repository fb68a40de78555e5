// Region back-propagation for PET's corrector (pet/corrector.h): for a box of
// one output of a node, the region of each input that box needs and the op
// (with attributes adjusted) that computes the box from those regions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "pet/box.h"

namespace tessera::pet {

// One input of the restricted op.
struct Operand {
  enum class Kind { Region, Const, Absent };
  Kind kind = Kind::Absent;
  int input = -1;  // Region: index of the original node's input it is a region of
  Box box;         // Region: that region, in the input's coordinates
  Tensor value;    // Const: a parameter made for the restriction (pads, starts, shape)
  static Operand region(int input, Box box) { return {Kind::Region, input, std::move(box), {}}; }
  static Operand constant(Tensor t) { return {Kind::Const, -1, {}, std::move(t)}; }
  static Operand absent() { return {}; }
};

// How one box of one output of a node is computed from regions of its inputs.
struct RestrictPlan {
  // The op of the new node ("": the box is operand 0's region itself, no
  // node; "Fill": a constant tensor of fill_value, no operand).
  std::string op_type;
  std::vector<Operand> operands;
  AttrMap attrs;
  Box produced;          // the region of the output the new node yields (contains the box)
  float fill_value = 0;  // "Fill" only
  // Batching (Conv, MatMul, Gemm): boxes whose plans differ only in the
  // region of operand batch_operand (equal extents) may run as one node with
  // those regions concatenated on batch_axis of the operand; the output is
  // split on out_axis. -1: not batchable.
  int batch_operand = -1;
  int64_t batch_axis = -1, out_axis = -1;
};

// The plan for box `want` of output `output` of `n` (types inferred and
// static) at the graph's `opset`. Ops whose box cannot be restricted exactly
// (ConvTranspose, pools with ceil_mode, Reshapes that do not map the box to a
// box, windows entirely in padding, non-constant Pad modes) compute the whole
// output from whole inputs and the caller slices the box out of it.
// Throws an Error naming the node and op for an op it does not know.
RestrictPlan restrict_node(const Node& n, int output, const Box& want, int64_t opset);

// The box of a reshape's input that holds exactly the elements of `box` of
// its output (row-major), or nullopt when they are not a box.
std::optional<Box> box_through_reshape(const Dims& in, const Dims& out, const Box& box);

}  // namespace tessera::pet
