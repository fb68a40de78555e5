// Tensor expressions of the convolutions: Conv, ConvTranspose, ConvInteger and
// QLinearConv, N-D (1-D, 2-D, 3-D ...), with groups (depthwise included),
// strides, dilations, pads and every auto_pad mode.
//
// A forward convolution is two stages: the padded input
//   pad[n, c, p...] = inside ? x[n, c, p - pb] : 0     (inlined by default)
// and the reduction over (rc, ry, rx)
//   conv[n, k, h, w] = bias[k] + sum w[k, rc, ry, rx] * pad[n, g*Cg + rc, h*sh + ry*dh, w*sw + rx*dw]
// tagged conv1d / conv2d / conv3d (depthwise_conv2d when every group has one
// input channel). The bias is the reduction's initial value: the reference
// pre-fills the output with it and accumulates the taps in (c, ky, kx) order,
// so this is its exact arithmetic. Float convolutions accumulate in the
// reference's compute type (f32 for f16/bf16, f64 for f64); the integer ones
// in int32.
#include "opexpr/expr_nn.h"
#include "ops/nn_conv.h"

namespace tessera::ops {

using namespace nn_expr;

namespace {

// Spatial geometry of a forward window: input and output sizes, kernel,
// strides, dilations and leading pads.
struct Window {
  int64_t nsp = 0;
  Dims in, out, k, s, d, pb;
};

Window conv_window(const ConvShape& cs, const Dims& x) {
  Window g;
  g.nsp = cs.attrs.nsp;
  g.in = spatial_dims(x);
  g.out = cs.out_spatial;
  g.k = cs.attrs.kernel;
  g.s = cs.attrs.strides;
  g.d = cs.attrs.dilations;
  for (int64_t i = 0; i < g.nsp; ++i) g.pb.push_back(cs.pads[static_cast<size_t>(i)]);
  return g;
}

te::StageTag conv_tag(int64_t nsp, bool depthwise) {
  if (depthwise && nsp == 2) return {te::OpClass::Conv, "depthwise_conv2d"};
  return {te::OpClass::Conv, "conv" + std::to_string(nsp) + "d"};
}

// pad[n, c, p...] = inside ? val(x[n, c, p - pb]) : 0, over the extent the windows read.
te::Tensor padded_input(ExprContext& c, const te::Tensor& x, const Window& g,
                        const std::function<Expr(const Expr&)>& val, DType acc) {
  Dims shape{x.dim(0), x.dim(1)};
  for (int64_t i = 0; i < g.nsp; ++i) {
    size_t u = static_cast<size_t>(i);
    shape.push_back(g.out[u] > 0 ? (g.out[u] - 1) * g.s[u] + (g.k[u] - 1) * g.d[u] + 1 : 0);
  }
  std::vector<std::string> names{"n", "c"};
  for (const auto& s : spatial_axis_names(g.nsp, "p")) names.push_back(s);
  return te::compute(shape, [&](const Indices& i) {
    std::vector<Expr> idx{i[0], i[1]}, conds;
    for (int64_t d = 0; d < g.nsp; ++d) {
      size_t u = static_cast<size_t>(d);
      Expr p = i[u + 2];
      if (g.pb[u] > 0) {
        conds.push_back(p >= g.pb[u]);
        p = p - g.pb[u];
      }
      if (shape[u + 2] - g.pb[u] > g.in[u]) conds.push_back(p < g.in[u]);
      idx.push_back(p);
    }
    return guard(all_of(conds), val(x(idx)), loop::make_zero({acc, 1}));
  }, c.stage_name("pad"), "pad", names);
}

// conv[n, m, o...] = init(m) + sum_{rc, rk} wval(m, w[m, rc, rk]) * pad[n, grp*Cg + rc, o*s + rk*d].
te::Tensor conv_stage(ExprContext& c, const te::Tensor& pad, const te::Tensor& w, const Window& g, int64_t M,
                      int64_t group, const std::function<Expr(const Expr&, const Expr&)>& wval,
                      const std::function<Expr(const Expr&)>& init, DType acc) {
  const int64_t N = pad.dim(0), C = pad.dim(1), Cg = C / group, Mg = M / group;
  Dims shape{N, M};
  shape.insert(shape.end(), g.out.begin(), g.out.end());
  std::vector<std::string> names{"n", "k"};
  for (const auto& s : spatial_axis_names(g.nsp)) names.push_back(s);
  const bool depthwise = group > 1 && Cg == 1;
  return te::compute(shape, [&](const Indices& i) {
    std::vector<loop::ReduceAxis> axes;
    Expr rc = loop::int_imm(0);
    if (Cg > 1) {
      axes.push_back(te::reduce_axis(Cg, "rc"));
      rc = axes.back().var;
    }
    std::vector<loop::ReduceAxis> rk = window_axes(g.k);
    axes.insert(axes.end(), rk.begin(), rk.end());
    Expr m = i[1];
    Expr ch = rc;
    if (group > 1) ch = (Mg == 1 ? m : m / Mg) * Cg + rc;
    std::vector<Expr> widx{m, rc}, xidx{i[0], ch};
    for (int64_t d = 0; d < g.nsp; ++d) {
      size_t u = static_cast<size_t>(d);
      Expr k = rk[u].var;
      widx.push_back(k);
      xidx.push_back(Expr(i[u + 2]) * g.s[u] + k * g.d[u]);
    }
    Expr src = wval(m, w(widx)) * pad(xidx);
    Expr start = init ? init(m) : loop::make_zero({acc, 1});
    return loop::reduce(loop::ReduceOp::Sum, src, axes, {}, start);
  }, c.stage_name("conv"), conv_tag(g.nsp, depthwise), names);
}

// A separate elementwise stage converting `t` to `out` (f32 -> f16 ...).
te::Tensor cast_stage(ExprContext& c, const te::Tensor& t, DType out, const std::string& suffix = "") {
  return te::compute(t.shape(), [&](const Indices& i) { return store_as(t(as_exprs(i)), out); },
                     c.stage_name(suffix), te::OpClass::Elementwise);
}

// ---------------------------------------------------------------- Conv

std::vector<te::Tensor> conv_expr(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const te::Tensor& w = c.in(1);
  ConvShape cs = conv_shape(op_attrs(c), x.shape(), w.shape());
  Window g = conv_window(cs, x.shape());
  const DType out = c.out(0).dtype, acc = float_acc(out);
  TESSERA_CHECK(w.dtype() == x.dtype(), c.node.describe(), ": X and W have different element types");
  const te::Tensor* b = c.has_input(2) ? &c.in(2) : nullptr;
  if (b)
    TESSERA_CHECK(b->dtype() == x.dtype() && numel_of(b->shape()) == cs.M, c.node.describe(),
                  ": bias B must have ", cs.M, " elements of X's type");
  te::Tensor pad = padded_input(c, x, g, [&](const Expr& v) { return cast_to(v, acc); }, acc);
  std::function<Expr(const Expr&)> init;
  if (b) init = [&](const Expr& m) { return cast_to((*b)(std::vector<Expr>{m}), acc); };
  te::Tensor y = conv_stage(c, pad, w, g, cs.M, cs.group, [&](const Expr&, const Expr& v) { return cast_to(v, acc); },
                            init, acc);
  if (acc != out) y = cast_stage(c, y, out);
  return {y};
}

// ---------------------------------------------------------------- ConvInteger, QLinearConv

void check_q8(const Node& n, DType t, const char* what) {
  TESSERA_CHECK(t == DType::U8 || t == DType::I8, n.describe(), ": ", what, " must be uint8 or int8, got ",
                dtype_name(t));
}

// The int32 convolution of (x - xzp) and (w - wzp[m]) plus an optional int32 bias.
te::Tensor int_conv(ExprContext& c, int xi, int xzi, int wi, int wzi, int bi, ConvShape& cs) {
  const te::Tensor& x = c.in(xi);
  const te::Tensor& w = c.in(wi);
  check_q8(c.node, x.dtype(), "x");
  check_q8(c.node, w.dtype(), "w");
  cs = conv_shape(op_attrs(c), x.shape(), w.shape());
  Window g = conv_window(cs, x.shape());
  check_param_count(c, xzi, 1, "x_zero_point");
  check_param_count(c, wzi, cs.M, "w_zero_point");
  const DType I32 = DType::I32;
  Expr xzp = param_or_zero(c, xzi, loop::int_imm(0), DType::F64);
  te::Tensor pad = padded_input(c, x, g, [&](const Expr& v) {
    return c.has_input(xzi) ? cast_to(v, I32) - cast_to(xzp, I32) : cast_to(v, I32);
  }, I32);
  std::function<Expr(const Expr&)> init;
  if (bi >= 0 && c.has_input(bi)) {
    const te::Tensor& b = c.in(bi);
    TESSERA_CHECK(b.dtype() == I32 && numel_of(b.shape()) == cs.M, c.node.describe(), ": bias B must be int32 with ",
                  cs.M, " elements");
    init = [&](const Expr& m) { return param_at(b, m); };
  }
  return conv_stage(c, pad, w, g, cs.M, cs.group, [&](const Expr& m, const Expr& v) {
    if (!c.has_input(wzi)) return cast_to(v, I32);
    // The zero point goes through double and int32 like the reference's.
    return cast_to(v, I32) - cast_to(param_or_zero(c, wzi, m, DType::F64), I32);
  }, init, I32);
}

std::vector<te::Tensor> conv_integer_expr(ExprContext& c) {
  ConvShape cs;
  return {int_conv(c, 0, 2, 1, 3, -1, cs)};
}

std::vector<te::Tensor> qlinear_conv_expr(ExprContext& c) {
  ConvShape cs;
  te::Tensor acc = int_conv(c, 0, 2, 3, 5, 8, cs);
  const DType yt = c.in(7).dtype();
  check_q8(c.node, yt, "y_zero_point");
  check_param_count(c, 1, 1, "x_scale");
  check_param_count(c, 4, cs.M, "w_scale");
  check_param_count(c, 6, 1, "y_scale");
  check_param_count(c, 7, 1, "y_zero_point");
  const DType F64 = DType::F64;
  Expr zero = loop::int_imm(0);
  return {te::compute(acc.shape(), [&](const Indices& i) {
    Expr m = i[1];
    Expr xs = param_or_zero(c, 1, zero, F64), ws = param_or_zero(c, 4, m, F64), ys = param_or_zero(c, 6, zero, F64);
    Expr v = cast_to(acc(as_exprs(i)), F64) * ((xs * ws) / ys);
    return requantize(v, param_or_zero(c, 7, zero, F64), yt);
  }, c.stage_name("requant"), te::OpClass::Elementwise)};
}

// ---------------------------------------------------------------- ConvTranspose

// X [N, C, in...], W [C, M/group, k...] -> Y [N, M, out...]: the geometry of
// the reference's ConvTranspose (output_shape, output_padding, auto_pad).
struct ConvTGeom {
  int64_t N = 0, C = 0, M = 0, group = 1, nsp = 0;
  Dims in, out, k, s, d, pb;
};

ConvTGeom convt_geom(const OpAttrs& attrs, const Dims& x, const Dims& w) {
  ConvTShape sh = convt_shape(attrs, x, w);
  ConvTGeom g;
  g.N = sh.N;
  g.C = sh.C;
  g.M = sh.M;
  g.group = sh.group;
  g.nsp = static_cast<int64_t>(x.size()) - 2;
  g.in = spatial_dims(x);
  g.out = sh.out_spatial;
  g.k = sh.attrs.kernel;
  g.s = sh.attrs.strides;
  g.d = sh.attrs.dilations;
  g.pb.assign(sh.pads.begin(), sh.pads.begin() + g.nsp);
  return g;
}

// y[n, m, o] = bias[m] + sum_{rc, rk} x[n, grp*Cg + rc, (o + pb - rk*d) / s] * w[grp*Cg + rc, m % Mg, rk]
// over the taps where (o + pb - rk*d) is a multiple of s inside the input:
// the reference's scatter, gathered per output in its (c, k) order.
std::vector<te::Tensor> conv_transpose_expr(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const te::Tensor& w = c.in(1);
  TESSERA_CHECK(w.dtype() == x.dtype(), c.node.describe(), ": X and W have different element types");
  ConvTGeom g = convt_geom(op_attrs(c), x.shape(), w.shape());
  const DType out = c.out(0).dtype, acc = float_acc(out);
  const int64_t Cg = g.C / g.group, Mg = g.M / g.group;
  const te::Tensor* b = c.has_input(2) ? &c.in(2) : nullptr;
  if (b)
    TESSERA_CHECK(b->dtype() == x.dtype() && numel_of(b->shape()) == g.M, c.node.describe(), ": bias B must have ",
                  g.M, " elements of X's type");
  Dims shape{g.N, g.M};
  shape.insert(shape.end(), g.out.begin(), g.out.end());
  std::vector<std::string> names{"n", "k"};
  for (const auto& s : spatial_axis_names(g.nsp)) names.push_back(s);
  te::Tensor y = te::compute(shape, [&](const Indices& i) {
    std::vector<loop::ReduceAxis> axes;
    Expr rc = loop::int_imm(0);
    if (Cg > 1) {
      axes.push_back(te::reduce_axis(Cg, "rc"));
      rc = axes.back().var;
    }
    std::vector<loop::ReduceAxis> rk = window_axes(g.k);
    axes.insert(axes.end(), rk.begin(), rk.end());
    Expr m = i[1];
    Expr ch = rc, mm = m;
    if (g.group > 1) {
      ch = (m / Mg) * Cg + rc;
      mm = m % Mg;
    }
    std::vector<Expr> widx{ch, mm}, xidx{i[0], ch}, conds;
    for (int64_t d = 0; d < g.nsp; ++d) {
      size_t u = static_cast<size_t>(d);
      Expr k = rk[u].var;
      widx.push_back(k);
      Expr t = Expr(i[u + 2]) - k * g.d[u];
      if (g.pb[u] != 0) t = t + g.pb[u];
      conds.push_back(t >= 0);
      if (g.s[u] > 1) {
        conds.push_back(eq(t % g.s[u], 0));
        t = t / g.s[u];
      }
      conds.push_back(t < g.in[u]);
      xidx.push_back(t);
    }
    Expr src = guard(all_of(conds), cast_to(w(widx), acc) * cast_to(x(xidx), acc), loop::make_zero({acc, 1}));
    Expr start = b ? cast_to((*b)(std::vector<Expr>{m}), acc) : loop::make_zero({acc, 1});
    return loop::reduce(loop::ReduceOp::Sum, src, axes, {}, start);
  }, c.stage_name("conv_transpose"), te::StageTag(te::OpClass::Conv, "conv" + std::to_string(g.nsp) + "d_transpose"), names);
  if (acc != out) y = cast_stage(c, y, out);
  return {y};
}

}  // namespace

void register_nn_conv_exprs(ExprRegistry& r) {
  r.set_expr("Conv", "", conv_expr);
  r.set_expr("ConvTranspose", "", conv_transpose_expr);
  r.set_expr("ConvInteger", "", conv_integer_expr);
  r.set_expr("QLinearConv", "", qlinear_conv_expr);
}

}  // namespace tessera::ops
