// Shared helpers for ops' tensor-expression definitions (src/ops/expr_*.cpp).
#pragma once

#include <functional>
#include <vector>

#include "opexpr/expr_registry.h"
#include "te/tensor_expr.h"

namespace tessera::ops {

using loop::Expr;
using te::Indices;

// Reads `t` at the numpy-broadcast position of output index `idx` (t's dims
// right-aligned with the output's; size-1 dims read index 0).
Expr broadcast_read(const te::Tensor& t, const std::vector<Expr>& idx);
std::vector<Expr> as_exprs(const Indices& idx);
// Converts e to dtype d (loop-IR cast semantics: saturating float->int as the evaluator).
Expr cast_to(const Expr& e, DType d);

// One output of the node's inferred type, each element f(inputs read at the
// broadcast position). Inputs that are absent are passed as undefined Exprs.
te::Tensor elementwise(ExprContext& c, const std::function<Expr(const std::vector<Expr>&)>& f,
                       const te::StageTag& tag = te::OpClass::Elementwise);

// Registration of each family's expressions (one file each).
void register_elementwise_exprs(ExprRegistry& r);
void register_tensor_exprs(ExprRegistry& r);
void register_nn_exprs(ExprRegistry& r);
void register_reduce_exprs(ExprRegistry& r);
void register_misc_exprs(ExprRegistry& r);

}  // namespace tessera::ops
