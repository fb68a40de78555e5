// Splitting points and boxes (PET §5.1-5.2, inferSplittingPoints, Fig. 5).
//
// Each dim of every value carries sorted split points (0 and the dim's size
// included); the grid they cut is the value's boxes. The rules keep one
// invariant, which is what Theorem 1 needs: inside one box, every element is
// the same sum of products of inputs read at positions affine in the
// element's index (the same summation range, the same padding taps, the same
// operand tensors, each operand read inside one of its own boxes). The points
// start at the graph inputs ({0, size} per dim) and go forward op by op:
//   Conv/AveragePool: for every tap, the output positions where it starts or
//     stops reading padding and where it crosses an input point; output
//     channels split at group boundaries and at the weight's and bias' points.
//   ConvTranspose: the same per tap; with stride > 1 the taps alternate, so
//     every position of a spatial dim is a point.
//   Pad/Slice: the input points shifted (and divided by the step), plus where
//     the padding starts and stops. Concat: its offsets plus each input's points.
//   Split: the input points inside each piece. Transpose: permuted.
//   MatMul/Gemm: rows from the left operand, columns from the right, batch
//     dims from both. Elementwise: every input's points on dims it does not
//     broadcast along. Reductions: kept dims only.
//   Reshape (and Flatten, Squeeze, Unsqueeze): of a graph input, no points
//     (the output reads the input at its own flat index, affine in any shape).
//     Otherwise dims are grouped where the sizes match; a group that keeps one
//     dim keeps its points; a group that merges dims gets a point at every row
//     of its innermost input dim (plus that dim's points in each row) — the
//     conservative rule: merging is only affine inside one row; a group that
//     splits a dim gets, per point q of the merged dim, q's mixed-radix digits
//     (and digit+1 on the outer dims).
//   DepthToSpace (block > 1): every spatial position is a point (interleaved
//     channels are not affine along space). SpaceToDepth: channel points at
//     every block of input channels.
//   A constant read as data: a point wherever it changes along a dim (none
//     for a uniform constant).
// A missing point would make the verifier unsound; an extra point only costs
// time.
#pragma once

#include <cstdint>
#include <vector>

#include "pet/box.h"
#include "pet/linear_plan.h"

namespace tessera::pet {

using Points = std::vector<int64_t>;    // sorted, unique; 0 and the size included
using SplitPoints = std::vector<Points>;  // per dim

// Split points of every graph output, in output order (throws like plan_linear).
std::vector<SplitPoints> infer_splitting_points(const LinearPlan& plan);
std::vector<SplitPoints> infer_splitting_points(const Graph& g);

// Per dim, the union of two programs' points for one output (same rank).
SplitPoints union_points(const SplitPoints& a, const SplitPoints& b);

// The boxes of the grid, in row-major order of their lower corners (one box
// with no dims for a scalar).
std::vector<Box> boxes(const SplitPoints& s);
int64_t box_count(const SplitPoints& s);

}  // namespace tessera::pet
