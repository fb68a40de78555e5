// Tensor-expression definitions of the elementwise ops.
#include "ops/expr_util.h"

namespace tessera::ops {

namespace {

using Args = std::vector<Expr>;

ExprFn unary(std::function<Expr(const Expr&)> f) {
  return [f](ExprContext& c) { return std::vector<te::Tensor>{elementwise(c, [&](const Args& a) { return f(a[0]); })}; };
}
ExprFn binary(std::function<Expr(const Expr&, const Expr&)> f) {
  return [f](ExprContext& c) {
    return std::vector<te::Tensor>{elementwise(c, [&](const Args& a) { return f(a[0], a[1]); })};
  };
}

}  // namespace

void register_elementwise_exprs(OpRegistry& r) {
  r.set_expr("Add", "", binary([](const Expr& a, const Expr& b) { return a + b; }));
  r.set_expr("Sub", "", binary([](const Expr& a, const Expr& b) { return a - b; }));
  r.set_expr("Mul", "", binary([](const Expr& a, const Expr& b) { return a * b; }));
  r.set_expr("Relu", "", unary([](const Expr& x) { return loop::max(x, loop::make_zero(x.type())); }));
  r.set_expr("Exp", "", unary([](const Expr& x) { return loop::call("exp", {x}); }));
  r.set_expr("Tanh", "", unary([](const Expr& x) { return loop::call("tanh", {x}); }));
  r.set_expr("Sigmoid", "", unary([](const Expr& x) { return loop::call("sigmoid", {x}); }));
}

}  // namespace tessera::ops
