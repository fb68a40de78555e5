// Tensor expressions of the Winograd ops (winograd.h). The transforms are
// written per point: a chain of selects on the point's index whose arms are
// the nonzero terms of B^T d B (input) or A^T M A (output) for that point;
// the schedule unrolls the point loops (src/schedule/winograd_schedule.cpp),
// so every select folds and each point is its own short sum of loads with
// dyadic coefficients (support/winograd_transform.h). The product is a blocked 1x1 convolution per point
// (tag conv2d_blocked: tiled like one, tiles of runs of tiles by lanes).
#include "ops/blocked_conv.h"
#include "opexpr/expr_nn.h"
#include "ops/winograd.h"

namespace tessera::ops {

using namespace nn_expr;

namespace {

// coef * v, as an addition or subtraction when coef is +-1.
Expr add_term(const Expr& acc, float coef, const Expr& v) {
  if (!acc.defined()) return coef == 1.0f ? v : loop::float_imm(coef) * v;
  if (coef == 1.0f) return acc + v;
  if (coef == -1.0f) return acc - v;
  return acc + loop::float_imm(coef) * v;
}

// select(index == 0, arm(0), select(index == 1, arm(1), ... arm(count - 1))).
template <class Arm>
Expr select_chain(const Expr& index, int count, Arm arm) {
  Expr e = arm(count - 1);
  for (int k = count - 2; k >= 0; --k) e = loop::select(loop::eq(index, loop::int_imm(k)), arm(k), e);
  return e;
}

std::vector<te::Tensor> input_expr(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const WinogradGeom g = winograd_input_geom(op_attrs(c), x.shape());
  const WinogradTransform& tf = g.transform();
  const int a = tf.alpha;
  te::Tensor pad = zero_padded(c, x, g.ph, g.pw, g.m * g.TH + 2, g.m * g.TW + 2);
  return {te::compute({tf.num_points(), g.Cb, g.T, g.b}, [&](const Indices& i) {
    Expr p = i[0], cb = i[1], t = i[2], l = i[3];
    Expr n = t / (g.TH * g.TW), h0 = t / g.TW % g.TH * g.m, w0 = t % g.TW * g.m;
    return select_chain(p, tf.num_points(), [&](int pt) {
      Expr sum;
      for (int r = 0; r < a; ++r)
        for (int q = 0; q < a; ++q) {
          const float coef = tf.BT(pt / a, r) * tf.BT(pt % a, q);
          if (coef != 0.0f) sum = add_term(sum, coef, pad(n, cb, h0 + r, w0 + q, l));
        }
      return sum;
    });
  }, c.stage_name("winograd_in"), te::OpClass::WinogradInput, {"p", "cb", "t", "l"})};
}

std::vector<te::Tensor> gemm_expr(ExprContext& c) {
  const te::Tensor& v = c.in(0);
  const te::Tensor& u = c.in(1);
  const WinogradGeom g = winograd_gemm_geom(op_attrs(c), v.shape(), u.shape());
  return {te::compute({v.shape()[0], g.Mb, g.T, g.b}, [&](const Indices& i) {
    Expr p = i[0], kb = i[1], t = i[2], kc = i[3];
    std::vector<loop::ReduceAxis> axes;
    if (g.R > 1) axes.push_back(te::reduce_axis(g.R, "rb"));
    axes.push_back(te::reduce_axis(g.b, "ri"));
    Expr rb = g.R > 1 ? Expr(axes[0].var) : loop::int_imm(0), ri = axes.back().var;
    Expr product = u(p, kb, rb, ri, kc) * v(p, group_block(g.groups, kb, rb), t, ri);
    return loop::reduce(loop::ReduceOp::Sum, product, axes, {}, loop::make_zero({DType::F32, 1}));
  }, c.stage_name("winograd_gemm"), te::OpClass::ConvBlocked, {"p", "kb", "t", "kc"})};
}

std::vector<te::Tensor> output_expr(ExprContext& c) {
  const te::Tensor& m = c.in(0);
  const WinogradGeom g = winograd_output_geom(op_attrs(c), m.shape());
  const te::Tensor* bias = c.has_input(1) ? &c.in(1) : nullptr;
  const WinogradTransform& tf = g.transform();
  const int a = tf.alpha;
  return {te::compute({g.N, g.Mb, g.OH, g.OW, g.b}, [&](const Indices& i) {
    Expr n = i[0], kb = i[1], oh = i[2], ow = i[3], kc = i[4];
    Expr t = (n * g.TH + oh / g.m) * g.TW + ow / g.m;
    return select_chain(oh % g.m, g.m, [&](int row) {
      return select_chain(ow % g.m, g.m, [&](int col) {
        Expr sum = bias ? (*bias)(kb, kc) : Expr();
        for (int r = 0; r < a; ++r)
          for (int q = 0; q < a; ++q) {
            const float coef = tf.AT(row, r) * tf.AT(col, q);
            if (coef != 0.0f) sum = add_term(sum, coef, m(r * a + q, kb, t, kc));
          }
        return sum;
      });
    });
  }, c.stage_name("winograd_out"), te::OpClass::WinogradOutput, {"n", "kb", "h", "w", "kc"})};
}

}  // namespace

void register_winograd_exprs(ExprRegistry& r) {
  r.set_expr("WinogradInput", kBlockedDomain, input_expr);
  r.set_expr("WinogradGemm", kBlockedDomain, gemm_expr);
  r.set_expr("WinogradOutput", kBlockedDomain, output_expr);
}

}  // namespace tessera::ops
