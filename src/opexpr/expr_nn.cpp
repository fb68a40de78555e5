// Tensor-expression definitions of the nn compute ops: registration and the
// helpers shared by expr_nn_conv.cpp, expr_nn_vision.cpp, expr_nn_gemm.cpp and
// expr_nn_pool.cpp.
#include "opexpr/expr_nn.h"

#include "support/error.h"

namespace tessera::ops {

namespace nn_expr {

DType float_acc(DType t) { return t == DType::F16 || t == DType::BF16 ? DType::F32 : t; }

Expr to_float_acc(const Expr& e) { return cast_to(e, float_acc(e.type().dtype)); }

Expr store_as(const Expr& e, DType out) {
  if (e.type().dtype == out) return e;
  if ((out == DType::F16 || out == DType::BF16) && e.type().dtype == DType::F64) return cast_to(cast_to(e, DType::F32), out);
  return cast_to(e, out);
}

Expr param_at(const te::Tensor& t, const Expr& flat) {
  std::vector<Expr> idx;
  if (numel_of(t.shape()) == 1) {
    for (int d = 0; d < t.rank(); ++d) idx.push_back(loop::int_imm(0));
    return t(idx);
  }
  Dims st = strides_of(t.shape());
  for (int d = 0; d < t.rank(); ++d) {
    Expr i = flat;
    if (st[static_cast<size_t>(d)] != 1) i = i / st[static_cast<size_t>(d)];
    if (d > 0) i = i % t.dim(d);
    idx.push_back(i);
  }
  return t(idx);
}

void check_param_count(ExprContext& c, int i, int64_t count, const char* what) {
  if (!c.has_input(i)) return;
  int64_t n = numel_of(c.in(i).shape());
  TESSERA_CHECK(n == 1 || n == count, c.node.describe(), ": ", what, " must have 1 or ", count, " elements, got ", n);
}

Expr param_or_zero(ExprContext& c, int i, const Expr& flat, DType t) {
  if (!c.has_input(i)) return loop::make_zero({t, 1});
  return cast_to(param_at(c.in(i), flat), t);
}

Expr requantize(const Expr& v, const Expr& zero_point_f64, DType yt) {
  TESSERA_CHECK(yt == DType::U8 || yt == DType::I8, "requantize: output must be uint8 or int8");
  Expr r = loop::call("round", {v}) + zero_point_f64;
  double lo = yt == DType::U8 ? 0 : -128, hi = yt == DType::U8 ? 255 : 127;
  // std::min(hi, std::max(lo, r)): NaN becomes lo, as in the reference.
  r = loop::max(r, loop::make_const(r.type(), lo));
  r = loop::min(r, loop::make_const(r.type(), hi));
  return cast_to(r, yt);
}

std::vector<std::string> spatial_axis_names(int64_t nsp, const std::string& prefix) {
  std::vector<std::string> n;
  if (nsp == 1) n = {"w"};
  else if (nsp == 2) n = {"h", "w"};
  else if (nsp == 3) n = {"d", "h", "w"};
  else
    for (int64_t i = 0; i < nsp; ++i) n.push_back("s" + std::to_string(i));
  for (auto& s : n) s = prefix + s;
  return n;
}

Expr guard(const Expr& cond, const Expr& t, const Expr& f) { return cond.defined() ? te::if_then_else(cond, t, f) : t; }

std::vector<loop::ReduceAxis> window_axes(const std::vector<int64_t>& extents) {
  std::vector<std::string> names;
  size_t n = extents.size();
  if (n == 1) names = {"rx"};
  else if (n == 2) names = {"ry", "rx"};
  else if (n == 3) names = {"rz", "ry", "rx"};
  else
    for (size_t i = 0; i < n; ++i) names.push_back("rk" + std::to_string(i));
  std::vector<loop::ReduceAxis> r;
  for (size_t i = 0; i < n; ++i) r.push_back(te::reduce_axis(extents[i], names[i]));
  return r;
}

}  // namespace nn_expr

void register_nn_exprs(ExprRegistry& r) {
  register_nn_conv_exprs(r);
  register_nn_vision_exprs(r);
  register_nn_gemm_exprs(r);
  register_nn_pool_exprs(r);
  register_blocked_conv_exprs(r);
  register_winograd_exprs(r);
}

}  // namespace tessera::ops
