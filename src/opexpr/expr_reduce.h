// Shared helpers of the reduction, normalization and attention expressions
// (src/ops/expr_reduce*.cpp, expr_norm.cpp, expr_einsum.cpp, expr_attention.cpp)
// and their registration hooks, called from register_reduce_exprs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "opexpr/expr_util.h"

namespace tessera::ops {

void register_reduce_arg_exprs(ExprRegistry& r);   // ArgMax, ArgMin, CumSum, CumProd, Det
void register_norm_exprs(ExprRegistry& r);         // Softmax family, Batch/Instance/Group/Layer/RMS/MVN/Lp norms, LRN
void register_einsum_exprs(ExprRegistry& r);       // Einsum
void register_attention_exprs(ExprRegistry& r);    // Attention, RotaryEmbedding, LinearAttention, FlexAttention, CausalConvWithState

namespace red {

// Terms a row statistic (a Sum or Mean reduction, Softmax's sum,
// LayerNormalization's mean and variance) adds in the compute type at most;
// longer sums add in double. The row rules split such a sum into
// vector-wide partial sums (each of an eighth or a sixteenth of the row), and
// an f32 sum of a few thousand terms rounds off near 1e-6 of the sum of
// their magnitudes, where double would halve the lanes and convert every term.
constexpr int64_t kF32RowTerms = 4096;

// The type arithmetic runs in: f32 for f16 / bf16 (as the references do), else the type itself.
inline DType compute_dtype(DType t) { return (t == DType::F16 || t == DType::BF16) ? DType::F32 : t; }
inline Expr f64(const Expr& e) { return cast_to(e, DType::F64); }
inline Expr is_nan(const Expr& e) { return loop::ne(e, e); }
inline Expr fconst(DType t, double v) { return te::constant(t, v); }

// Reduction of `axes` (sorted, distinct) of an input of dims `in`; `keep`
// keeps them as size-1 dims.
struct AxisPlan {
  Dims in;
  std::vector<int64_t> axes;
  bool keep = true;

  Dims out_dims() const;
  bool reduced(int64_t d) const;
  int64_t count() const;  // elements per reduction
  // Fresh reduce axes (one per reduced dim, named r0, r1 ...).
  std::vector<loop::ReduceAxis> make_axes(const std::string& prefix = "r") const;
  // The input index of output index `out` and reduce vars `rv` (one per axis).
  std::vector<Expr> input_index(const std::vector<Expr>& out, const std::vector<loop::ReduceAxis>& rv) const;
  // The output (keepdims or not) index read for input index `in_idx`.
  std::vector<Expr> stat_index(const std::vector<Expr>& in_idx) const;
  // Row-major position of the reduce vars inside one reduction.
  Expr flat_position(const std::vector<loop::ReduceAxis>& rv) const;
};

// op over the plan's axes of src(input index), as an expression at output index `out`.
// With no axes, the combiner applied to the identity and the one element.
Expr reduce_at(const AxisPlan& p, loop::ReduceOp op, const std::function<Expr(const std::vector<Expr>&)>& src,
               const std::vector<Expr>& out, const std::function<Expr(const std::vector<Expr>&)>& cond = nullptr);
// A stage (materialized: it holds a reduction) of the plan's output dims.
te::Tensor reduce_stage(const AxisPlan& p, loop::ReduceOp op, const std::function<Expr(const std::vector<Expr>&)>& src,
                        const std::string& name, const te::StageTag& tag = te::OpClass::Reduce,
                        const std::function<Expr(const std::vector<Expr>&)>& cond = nullptr);
// A compute stage that lowering materializes (a reduction over one point):
// for per-row / per-channel values that consumers would otherwise recompute.
te::Tensor materialize(const Dims& shape, const std::function<Expr(const std::vector<Expr>&)>& f,
                       const std::string& name, const te::StageTag& tag);
// Reads t at row-major flat position `flat` (t's own dims).
Expr read_flat(const te::Tensor& t, const Expr& flat);
// Normalised axis; throws naming the node.
int64_t norm_axis(const Node& n, int64_t axis, int64_t rank);

}  // namespace red
}  // namespace tessera::ops
