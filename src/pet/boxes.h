// Splitting points and boxes (PET §5.1-5.2, inferSplittingPoints, Fig. 5).
//
// Each dim of every value is a list of factors ("atoms", outer to inner, their
// sizes multiplying to the dim's size: H = 56 may be (28, 2) after a reshape
// that split it), and each atom carries sorted split points (0 and its size
// included). The grid the points cut, over all atoms of all dims, is the
// value's boxes. The rules keep one invariant, which is what Theorem 1 needs:
// inside one box, every element is the same sum of products of inputs read at
// positions affine in the element's atom coordinates (the same summation
// range, the same padding taps, the same operand tensors, each operand read
// inside one of its own boxes). The points start at the graph inputs (one atom
// per dim, {0, size}) and go forward op by op:
//   Reshape (Flatten, Squeeze, Unsqueeze), DepthToSpace, SpaceToDepth: a
//     relabelling of atoms, exact: an atom that straddles a new dim boundary
//     is split in two (a point q becomes its two digits, and digit + 1 on the
//     outer one). Only when the sizes do not factor that way (a [2, 3] to
//     [3, 2] reshape) is a dim flattened: a point at every row of its innermost
//     atom, plus that atom's points in each row — merging is only provably
//     affine inside one row. A reshape of a graph input needs no points at
//     all: it reads the input at its own flat index.
//   Conv/AveragePool: for every tap, the output positions where it starts or
//     stops reading padding and where it crosses an input point (of the
//     flattened input dim); output channels split at group boundaries and at
//     the weight's and bias' points. ConvTranspose: the same per tap; with
//     stride > 1 the taps alternate, so every position is a point.
//   Pad/Slice: the input points shifted (and divided by the step), plus where
//     the padding starts and stops; a dim they leave alone keeps its atoms.
//   Concat: its offsets plus each input's points. Split: the input points
//     inside each piece. Transpose: permuted.
//   MatMul/Gemm: rows from the left operand, columns from the right, batch
//     dims from both. Elementwise: every input's points on dims it does not
//     broadcast along. Reductions: kept dims only.
//   A constant read as data: a point wherever it changes along a dim (none
//     for a uniform constant).
// Where two sources meet on one dim with different atoms, both are refined to
// a common factorization, or flattened when there is none. A missing point
// would make the verifier unsound; an extra point only costs time.
#pragma once

#include <cstdint>
#include <vector>

#include "pet/box.h"
#include "pet/linear_plan.h"

namespace tessera::pet {

using Points = std::vector<int64_t>;  // sorted, unique; 0 and the size included

struct Atom {
  int64_t size = 1;
  Points points;
  bool operator==(const Atom&) const = default;
};
using DimSplit = std::vector<Atom>;  // a dim's atoms, outer to inner
using Splits = std::vector<DimSplit>;  // per dim

// Splits of every graph output, in output order (throws like plan_linear).
std::vector<Splits> infer_splitting_points(const LinearPlan& plan);
std::vector<Splits> infer_splitting_points(const Graph& g);

// Per dim, the common refinement of two programs' splits of one output.
Splits union_splits(const Splits& a, const Splits& b);

// A dim's points when its atoms are flattened into one (exact for one atom).
Points dim_points(const DimSplit& d);

// A box of the atom grid: [lo, hi) per atom, the atoms of all dims in order.
struct AtomBox {
  std::vector<int64_t> lo, hi;
  int64_t volume() const;
};
int64_t box_count(const Splits& s);
std::vector<AtomBox> atom_boxes(const Splits& s);
// Theorem 1's positions of a box, as output multi-indices: its lower corner,
// then one step along each atom it is wider than 1 in.
std::vector<std::vector<int64_t>> box_positions(const Splits& s, const AtomBox& b);
// The box's elements as contiguous boxes of the output (one when every atom
// but the outermost of each dim is whole).
std::vector<Box> to_boxes(const Splits& s, const AtomBox& b);

}  // namespace tessera::pet
