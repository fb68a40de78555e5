// Tensor expressions of the channel-blocked ops (blocked_conv.h): the
// reorders between NCHW and NCHWc, and the blocked convolutions as one
// reduction each over a padded input (materialized by the schedule). The
// default schedule tiles a blocked convolution's output with the channel
// lanes (kc) as the vector and a run of output pixels along the width as the
// rows: every tap broadcasts one input value into mr FMAs against one vector
// of packed weights, and every row of a tile is stored as one vector.
#include "ops/blocked_conv.h"
#include "opexpr/expr_nn.h"

namespace tessera::ops {

namespace nn_expr {

te::Tensor zero_padded(ExprContext& c, const te::Tensor& x, int64_t ph, int64_t pw, int64_t rows, int64_t cols) {
  const int64_t in[2] = {x.dim(2), x.dim(3)}, pad[2] = {ph, pw};
  if (ph == 0 && pw == 0 && rows <= in[0] && cols <= in[1]) return x;
  Dims shape = x.shape();
  shape[2] = rows;
  shape[3] = cols;
  std::vector<std::string> names{"n", "c", "h", "w"};
  if (x.rank() == 5) names.push_back("lane");
  return te::compute(shape, [&](const Indices& i) {
    std::vector<Expr> idx = as_exprs(i), conds;
    for (size_t d = 2; d < 4; ++d) {
      Expr p = idx[d];
      if (pad[d - 2] > 0) {
        conds.push_back(p >= pad[d - 2]);
        p = p - pad[d - 2];
      }
      if (shape[d] - pad[d - 2] > in[d - 2]) conds.push_back(p < in[d - 2]);
      idx[d] = p;
    }
    return guard(all_of(conds), x(idx), loop::make_zero({DType::F32, 1}));
  }, c.stage_name("pad"), "pad", names);
}

Expr group_block(const BlockGroups& g, const Expr& kb, const Expr& rb) {
  if (g.mul == 0) return rb;
  return (g.div == 1 ? kb : kb / g.div) * g.mul + rb;
}

}  // namespace nn_expr

using namespace nn_expr;

namespace {

// A reduce axis, or the constant 0 (no axis) when its extent is 1.
Expr reduce_var(std::vector<loop::ReduceAxis>& axes, int64_t extent, const std::string& name) {
  if (extent == 1) return loop::int_imm(0);
  axes.push_back(te::reduce_axis(extent, name));
  return axes.back().var;
}

std::vector<te::Tensor> blocked_conv_expr(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const te::Tensor& w = c.in(1);
  const BlockedConvGeom g = blocked_conv_geom(op_attrs(c), x.shape(), w.shape());
  const te::Tensor* bias = c.has_input(2) ? &c.in(2) : nullptr;
  te::Tensor pad = zero_padded(c, x, g.ph, g.pw, (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1,
                               (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1);
  te::OpClass tag = g.depthwise ? te::OpClass::DepthwiseConvBlocked : te::OpClass::ConvBlocked;
  return {te::compute(g.out_dims(), [&](const Indices& i) {
    std::vector<loop::ReduceAxis> axes;
    Expr n = i[0], kb = i[1], oh = i[2], ow = i[3], kc = i[4];
    // Reduction order: input block, lane (= input channel), kernel row, column.
    Expr rb, ri;
    if (g.depthwise) {
    } else if (!g.plain_input && g.rin < g.R * g.b) {
      // Only the real channels of a padded last block: one axis over them.
      Expr rc = reduce_var(axes, g.rin, "rc");
      rb = rc / g.b;
      ri = rc % g.b;
    } else {
      rb = reduce_var(axes, g.R, g.plain_input ? "rc" : "rb");
      if (!g.plain_input) ri = reduce_var(axes, g.b, "ri");
    }
    Expr ry = reduce_var(axes, g.kh, "ry");
    Expr rx = reduce_var(axes, g.kw, "rx");
    if (axes.empty()) axes.push_back(te::reduce_axis(1, "rx"));  // 1x1 depthwise: one tap
    Expr h = oh * g.sh + ry * g.dh, wi = ow * g.sw + rx * g.dw;
    Expr src;
    if (g.depthwise) {
      src = w(kb, ry, rx, kc) * pad(n, kb, h, wi, kc);
    } else if (g.plain_input) {
      src = w(kb, rb, ry, rx, kc) * pad(n, rb, h, wi);
    } else {
      src = w(kb, rb, ry, rx, ri, kc) * pad(n, group_block(g.groups, kb, rb), h, wi, ri);
    }
    Expr start = bias ? (*bias)(kb, kc) : loop::make_zero({DType::F32, 1});
    return loop::reduce(loop::ReduceOp::Sum, src, axes, {}, start);
  }, c.stage_name("conv"), tag, {"n", "kb", "h", "w", "kc"})};
}

std::vector<te::Tensor> to_blocked_expr(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const Dims& out = c.out(0).dims;
  const int64_t C = x.dim(1), b = out.back();
  return {te::compute(out, [&](const Indices& i) {
    std::vector<Expr> o = as_exprs(i);
    Expr ch = o[1] * b + o.back();
    std::vector<Expr> idx(o.begin(), o.end() - 1);
    idx[1] = ch;
    if (C % b == 0) return x(idx);
    return guard(ch < C, x(idx), loop::make_zero({x.dtype(), 1}));
  }, c.stage_name(""), "shuffle")};
}

std::vector<te::Tensor> from_blocked_expr(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const int64_t b = x.shape().back();
  return {te::compute(c.out(0).dims, [&](const Indices& i) {
    std::vector<Expr> idx = as_exprs(i);
    Expr ch = idx[1];
    idx[1] = ch / b;
    idx.push_back(ch % b);
    return x(idx);
  }, c.stage_name(""), "shuffle")};
}

}  // namespace

void register_blocked_conv_exprs(ExprRegistry& r) {
  r.set_expr("ConvBlocked", kBlockedDomain, blocked_conv_expr);
  r.set_expr("DepthwiseConvBlocked", kBlockedDomain, blocked_conv_expr);
  r.set_expr("ReorderToBlocked", kBlockedDomain, to_blocked_expr);
  r.set_expr("ReorderFromBlocked", kBlockedDomain, from_blocked_expr);
}

}  // namespace tessera::ops
