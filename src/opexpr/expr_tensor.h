// Shared helpers of the tensor / layout / shape family's tensor expressions
// (src/ops/expr_tensor*.cpp) and the per-file registration functions.
#pragma once

#include <string>
#include <vector>

#include "opexpr/expr_util.h"

namespace tessera::ops::tensor_expr {

using loop::Expr;

// Registers fn for op (default domain) behind a guard that rejects string
// tensors (the loop IR has no strings) with an error naming the node.
void set(ExprRegistry& r, const std::string& op, ExprFn fn);

// The value of input i as integers when it is present (recording the
// dependency); empty when absent.
std::vector<int64_t> value_ints(ExprContext& c, int i);
// Records the dependency on input i's value when it is known (for inputs
// whose value only fixes the output type, which the expression reads from
// the inferred output type instead).
void note_value(ExprContext& c, int i);

// Integer index (any integer dtype) as i64.
Expr as_index(const Expr& e);
// A gathered index for an axis of size dim: negative values count from the
// end (like the reference), then clamped into [0, dim - 1] so that no read
// leaves the tensor (the reference throws on out-of-range indices; a kernel
// cannot). dim must be positive.
Expr wrap_clamp_index(const Expr& v, int64_t dim);
// Reads t at all-zero indices (a one-element tensor of any rank).
Expr read_first(const te::Tensor& t);
// The indices into a tensor of dims `in` of the element at row-major
// position given by indices `o` into dims `out` (same element count): a
// reshape. Size-1 dims read 0; groups of dims with matching products are
// mapped without div/mod when they are equal.
std::vector<Expr> reshape_indices(const Dims& in, const Dims& out, const std::vector<Expr>& o);
// Row-major multi-index of linear position `lin` in dims.
std::vector<Expr> unravel(const Expr& lin, const Dims& dims);
// Element i of a (constant) tensor as a loop-IR constant of its dtype (exact
// for 64-bit integers).
Expr element_const(const Tensor& t, int64_t i);
// table[k] for k in [0, table.size()) as an expression of k: runs where
// table[k] - k is constant become k + offset, chosen by a balanced select tree.
Expr int_table(const std::vector<int64_t>& table, const Expr& k);
// f64 value converted to dtype d the way the references store computed
// doubles: through f32 for f16/bf16, truncating and saturating for integers.
Expr f64_to(const Expr& v, DType d);

// Per-file registration.
void register_shape_exprs(ExprRegistry& r);    // Reshape, Flatten, Squeeze, Unsqueeze, Identity, Shape, Size,
                                             // Transpose, DepthToSpace, SpaceToDepth, Trilu, ReverseSequence
void register_slice_exprs(ExprRegistry& r);    // Concat, Split, Slice, Pad, CenterCropPad, Expand, Tile
void register_gather_exprs(ExprRegistry& r);   // Gather*, Compress, Scatter*, TensorScatter, NonZero, Unique
void register_gen_exprs(ExprRegistry& r);      // Constant, ConstantOfShape, Range, EyeLike, OneHot
void register_resize_exprs(ExprRegistry& r);   // Resize, Upsample

}  // namespace tessera::ops::tensor_expr
