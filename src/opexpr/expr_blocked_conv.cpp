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

te::Tensor zero_padded(ExprContext& c, const te::Tensor& x, const std::vector<int64_t>& pads,
                       const std::vector<int64_t>& extents) {
  const size_t S = pads.size();
  bool same = true;
  for (size_t d = 0; d < S; ++d) same = same && pads[d] == 0 && extents[d] <= x.dim(static_cast<int>(d) + 2);
  if (same) return x;
  Dims shape = x.shape();
  for (size_t d = 0; d < S; ++d) shape[d + 2] = extents[d];
  std::vector<std::string> names{"n", "c"};
  if (S == 3) names.push_back("d");
  names.push_back("h");
  names.push_back("w");
  if (x.rank() == static_cast<int>(S) + 3) names.push_back("lane");
  return te::compute(shape, [&](const Indices& i) {
    std::vector<Expr> idx = as_exprs(i), conds;
    for (size_t d = 2; d < S + 2; ++d) {
      const int64_t pad = pads[d - 2], in = x.dim(static_cast<int>(d));
      Expr p = idx[d];
      if (pad > 0) {
        conds.push_back(p >= pad);
        p = p - pad;
      }
      if (shape[d] - pad > in) conds.push_back(p < in);
      idx[d] = p;
    }
    return guard(all_of(conds), x(idx), loop::make_zero({DType::F32, 1}));
  }, c.stage_name("pad"), "pad", names);
}

te::Tensor zero_padded(ExprContext& c, const te::Tensor& x, int64_t ph, int64_t pw, int64_t rows, int64_t cols) {
  return zero_padded(c, x, {ph, pw}, {rows, cols});
}

Expr group_block(const BlockGroups& g, const Expr& kb, const Expr& rb) {
  if (g.mul == 0) return rb;
  Expr first = (g.div == 1 ? kb : kb / g.div) * g.mul;
  if (g.last >= 0) first = loop::min(first, loop::int_imm(g.last));
  return first + rb;
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
  const bool video = g.spatial == 3;
  const te::Tensor* bias = c.has_input(2) ? &c.in(2) : nullptr;
  std::vector<int64_t> pads{g.ph, g.pw},
      extents{(g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1, (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1};
  if (video) pads.insert(pads.begin(), g.pd), extents.insert(extents.begin(), (g.od - 1) * g.sd + (g.kd - 1) * g.dd + 1);
  // Padding along the outermost spatial axis only (a temporal kx1x1
  // convolution, a 2-D kx1 one): its taps outside the input are left out by
  // a reduction condition, tested once per tap (loop/hoist_guards.h), and
  // the input is read as it is, with no padded copy of it.
  const std::vector<int64_t> dims(x.shape().begin() + 2, x.shape().end() - (g.plain_input ? 0 : 1));
  bool outer_only = !g.depthwise && !g.plain_input && (pads[0] > 0 || extents[0] > dims[0]);
  for (size_t d = 1; d < pads.size(); ++d) outer_only = outer_only && pads[d] == 0 && extents[d] <= dims[d];
  const int64_t outer_pad = outer_only ? pads[0] : 0, extents_outer = extents[0];
  if (outer_only) pads[0] = 0, extents[0] = dims[0];
  te::Tensor pad = zero_padded(c, x, pads, extents);
  te::OpClass tag = g.depthwise ? te::OpClass::DepthwiseConvBlocked : te::OpClass::ConvBlocked;
  std::vector<std::string> names{"n", "kb", "h", "w", "kc"};
  if (video) names.insert(names.begin() + 2, "d");
  return {te::compute(g.out_dims(), [&](const Indices& i) {
    std::vector<loop::ReduceAxis> axes;
    const size_t s = video ? 1 : 0;  // output axes shift by the depth
    Expr n = i[0], kb = i[1], oh = i[2 + s], ow = i[3 + s], kc = i[4 + s];
    // Reduction order: input block, lane (= input channel), kernel depth, row, column.
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
    Expr rz = video ? reduce_var(axes, g.kd, "rz") : Expr();
    Expr ry = reduce_var(axes, g.kh, "ry");
    Expr rx = reduce_var(axes, g.kw, "rx");
    if (axes.empty()) axes.push_back(te::reduce_axis(1, "rx"));  // 1x1 depthwise: one tap
    Expr h = oh * g.sh + ry * g.dh, wi = ow * g.sw + rx * g.dw;
    // Index lists with the depth (input position, kernel tap) when a video's.
    auto at = [&](std::vector<Expr> lead, const Expr& z, std::vector<Expr> tail) {
      if (video) lead.push_back(z);
      lead.insert(lead.end(), tail.begin(), tail.end());
      return lead;
    };
    Expr z = video ? Expr(i[2]) * g.sd + rz * g.dd : Expr();
    Expr inside;  // outer_only: the outer axis's taps within the input
    if (outer_only) {
      Expr& o = video ? z : h;
      o = o - outer_pad;
      const int64_t last = extents_outer - 1 - outer_pad;  // the largest index read
      std::vector<Expr> conds;
      if (outer_pad > 0) conds.push_back(o >= 0);
      if (last >= dims[0]) conds.push_back(o < dims[0]);
      inside = all_of(conds);
    }
    Expr src;
    if (g.depthwise) {
      src = w(at({kb}, rz, {ry, rx, kc})) * pad(at({n, kb}, z, {h, wi, kc}));
    } else if (g.plain_input) {
      src = w(at({kb, rb}, rz, {ry, rx, kc})) * pad(at({n, rb}, z, {h, wi}));
    } else {
      src = w(at({kb, rb}, rz, {ry, rx, ri, kc})) * pad(at({n, group_block(g.groups, kb, rb)}, z, {h, wi, ri}));
    }
    Expr start = bias ? (*bias)(kb, kc) : loop::make_zero({DType::F32, 1});
    return loop::reduce(loop::ReduceOp::Sum, src, axes, inside, start);
  }, c.stage_name("conv"), tag, names)};
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
