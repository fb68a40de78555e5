// Tensor expressions of the matrix products: MatMul (numpy batching and
// broadcasting, 1-D operands), Gemm (transA/transB, alpha/beta, broadcast C),
// MatMulInteger and QLinearMatMul.
//
// The product is one reduction stage tagged "matmul" over the axes
// (batch..., i, j) and the reduce axis rk:
//   matmul[b..., i, j] = sum_rk a[b..., i, rk] * b[b..., rk, j]
// accumulated in the reference's type: f32 for f16/bf16, the element type
// itself otherwise (integer products wrap like the reference's), int32 for the
// quantized ops. Scaling, C and requantization are a separate elementwise
// stage, computed exactly as the reference does after the sum.
#include "opexpr/expr_nn.h"
#include "ops/nn_matmul.h"

namespace tessera::ops {

using namespace nn_expr;

namespace {

// Row / column of output index `idx` (0 for a 1-D operand).
Expr out_row(const MatMulShape& s, const std::vector<Expr>& idx) {
  return s.a_vec ? loop::int_imm(0) : idx[s.batch.size()];
}
Expr out_col(const MatMulShape& s, const std::vector<Expr>& idx) {
  return s.b_vec ? loop::int_imm(0) : idx.back();
}

// matmul[out] = sum_rk aval(row, a[..., row, rk]) * bval(col, b[..., rk, col]).
te::Tensor matmul_stage(ExprContext& c, const te::Tensor& a, const te::Tensor& b, const MatMulShape& s,
                        const std::function<Expr(const Expr&, const Expr&)>& aval,
                        const std::function<Expr(const Expr&, const Expr&)>& bval) {
  const size_t nb = s.batch.size();
  std::vector<std::string> names;
  for (size_t d = 0; d < nb; ++d) names.push_back("b" + std::to_string(d));
  if (!s.a_vec) names.push_back("i");
  if (!s.b_vec) names.push_back("j");
  auto batch_idx = [&](const Dims& own, const std::vector<Expr>& idx) {
    std::vector<Expr> r;
    for (size_t d = 0; d < own.size(); ++d)
      r.push_back(own[d] == 1 ? loop::int_imm(0) : idx[nb - own.size() + d]);
    return r;
  };
  return te::compute(s.out_dims, [&](const Indices& i) {
    std::vector<Expr> idx = as_exprs(i);
    loop::ReduceAxis rk = te::reduce_axis(s.K, "rk");
    Expr row = out_row(s, idx), col = out_col(s, idx);
    std::vector<Expr> ai = batch_idx(s.a_batch, idx), bi = batch_idx(s.b_batch, idx);
    if (!s.a_vec) ai.push_back(row);
    ai.push_back(rk.var);
    bi.push_back(rk.var);
    if (!s.b_vec) bi.push_back(col);
    return te::sum(aval(row, a(ai)) * bval(col, b(bi)), {rk});
  }, c.stage_name("matmul"), te::OpClass::MatMul, names);
}

DType check_numeric(const Node& n, DType t) {
  TESSERA_CHECK(t != DType::Bool && t != DType::String && t != DType::Undefined, n.describe(),
                ": unsupported element type ", dtype_name(t));
  return t;
}

// ---------------------------------------------------------------- MatMul

std::vector<te::Tensor> matmul_expr(ExprContext& c) {
  const te::Tensor& a = c.in(0);
  const te::Tensor& b = c.in(1);
  TESSERA_CHECK(a.dtype() == b.dtype(), c.node.describe(), ": inputs have different element types");
  const DType out = check_numeric(c.node, a.dtype()), acc = float_acc(out);
  MatMulShape s = matmul_shape(c.node, a.shape(), b.shape());
  auto conv = [&](const Expr&, const Expr& v) { return cast_to(v, acc); };
  te::Tensor y = matmul_stage(c, a, b, s, conv, conv);
  if (acc == out) return {y};
  return {te::compute(y.shape(), [&](const Indices& i) { return store_as(y(as_exprs(i)), out); }, c.stage_name(""),
                      te::OpClass::Elementwise)};
}

// ---------------------------------------------------------------- Gemm

std::vector<te::Tensor> gemm_expr(ExprContext& c) {
  const te::Tensor& a = c.in(0);
  const te::Tensor& b = c.in(1);
  const te::Tensor* ct = c.has_input(2) ? &c.in(2) : nullptr;
  TESSERA_CHECK(a.dtype() == b.dtype() && (!ct || ct->dtype() == a.dtype()), c.node.describe(),
                ": inputs have different element types");
  TESSERA_CHECK(a.rank() == 2 && b.rank() == 2, c.node.describe(), ": Gemm needs 2-D A and B");
  const GemmAttrs g = gemm_attrs(op_attrs(c));
  const bool ta = g.trans_a, tb = g.trans_b;
  const double alpha = g.alpha, beta = g.beta;
  const DType out = check_numeric(c.node, a.dtype()), acc = float_acc(out);
  const int64_t M = ta ? a.dim(1) : a.dim(0), K = ta ? a.dim(0) : a.dim(1), N = tb ? b.dim(0) : b.dim(1);
  TESSERA_CHECK((tb ? b.dim(1) : b.dim(0)) == K, c.node.describe(), ": inner dims differ");
  te::Tensor prod = te::compute({M, N}, [&](const Indices& i) {
    loop::ReduceAxis rk = te::reduce_axis(K, "rk");
    Expr av = ta ? a(rk.var, i[0]) : a(i[0], rk.var);
    Expr bv = tb ? b(i[1], rk.var) : b(rk.var, i[1]);
    return te::sum(cast_to(av, acc) * cast_to(bv, acc), {rk});
  }, c.stage_name("matmul"), te::OpClass::MatMul, {"i", "j"});
  const bool use_c = ct && beta != 0.0;
  if (is_float(out)) {
    if (alpha == 1.0 && !use_c && acc == out) return {prod};
    return {te::compute({M, N}, [&](const Indices& i) {
      std::vector<Expr> idx = as_exprs(i);
      Expr v = prod(idx);
      if (alpha != 1.0) v = loop::make_const({acc, 1}, alpha) * v;
      if (use_c) {
        Expr cv = cast_to(broadcast_read(*ct, idx), acc);
        v = v + (beta == 1.0 ? cv : loop::make_const({acc, 1}, beta) * cv);
      }
      return store_as(v, out);
    }, c.stage_name(""), te::OpClass::Elementwise, {"i", "j"})};
  }
  if (alpha == 1.0 && !use_c) return {prod};
  return {te::compute({M, N}, [&](const Indices& i) {
    std::vector<Expr> idx = as_exprs(i);
    Expr v = prod(idx);
    Expr cv = use_c ? broadcast_read(*ct, idx) : loop::make_zero({out, 1});
    if (alpha == 1.0 && (beta == 1.0 || beta == 0.0)) return v + cv;  // exact integer arithmetic
    const loop::Type F64{DType::F64, 1};
    return cast_to(loop::make_const(F64, alpha) * cast_to(v, DType::F64) +
                   loop::make_const(F64, beta) * cast_to(cv, DType::F64), out);
  }, c.stage_name(""), te::OpClass::Elementwise, {"i", "j"})};
}

// ---------------------------------------------------------------- MatMulInteger, QLinearMatMul

void check_q8(const Node& n, DType t, const char* what) {
  TESSERA_CHECK(t == DType::U8 || t == DType::I8, n.describe(), ": ", what, " must be uint8 or int8, got ",
                dtype_name(t));
}

// The int32 product of (a - azp[row]) and (b - bzp[col]).
te::Tensor int_matmul(ExprContext& c, int ai, int azi, int bi, int bzi, MatMulShape& s) {
  const te::Tensor& a = c.in(ai);
  const te::Tensor& b = c.in(bi);
  check_q8(c.node, a.dtype(), "A");
  check_q8(c.node, b.dtype(), "B");
  s = matmul_shape(c.node, a.shape(), b.shape());
  check_param_count(c, azi, s.M, "a_zero_point");
  check_param_count(c, bzi, s.N, "b_zero_point");
  auto val = [&](int zi) {
    return [&c, zi](const Expr& rc, const Expr& v) {
      Expr x = cast_to(v, DType::I32);
      return c.has_input(zi) ? x - cast_to(param_or_zero(c, zi, rc, DType::F64), DType::I32) : x;
    };
  };
  return matmul_stage(c, a, b, s, val(azi), val(bzi));
}

std::vector<te::Tensor> matmul_integer_expr(ExprContext& c) {
  MatMulShape s;
  return {int_matmul(c, 0, 2, 1, 3, s)};
}

std::vector<te::Tensor> qlinear_matmul_expr(ExprContext& c) {
  MatMulShape s;
  te::Tensor acc = int_matmul(c, 0, 2, 3, 5, s);
  const DType yt = c.in(7).dtype();
  check_q8(c.node, yt, "y_zero_point");
  check_param_count(c, 1, s.M, "a_scale");
  check_param_count(c, 4, s.N, "b_scale");
  check_param_count(c, 6, 1, "y_scale");
  check_param_count(c, 7, 1, "y_zero_point");
  const DType F64 = DType::F64;
  Expr zero = loop::int_imm(0);
  return {te::compute(acc.shape(), [&](const Indices& i) {
    std::vector<Expr> idx = as_exprs(i);
    Expr as = param_or_zero(c, 1, out_row(s, idx), F64), bs = param_or_zero(c, 4, out_col(s, idx), F64);
    Expr ys = param_or_zero(c, 6, zero, F64);
    Expr v = cast_to(acc(idx), F64) * ((as * bs) / ys);
    return requantize(v, param_or_zero(c, 7, zero, F64), yt);
  }, c.stage_name("requant"), te::OpClass::Elementwise)};
}

}  // namespace

void register_nn_gemm_exprs(ExprRegistry& r) {
  r.set_expr("MatMul", "", matmul_expr);
  r.set_expr("Gemm", "", gemm_expr);
  r.set_expr("MatMulInteger", "", matmul_integer_expr);
  r.set_expr("QLinearMatMul", "", qlinear_matmul_expr);
}

}  // namespace tessera::ops
