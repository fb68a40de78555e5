// Tensor expressions of the convolution-shaped vision ops: Col2Im (N-D) and
// DeformConv (2-D). Both compute in f64 like their references.
#include "opexpr/expr_nn.h"
#include "ops/op_attrs.h"
#include "ops/vision_conv.h"
#include "support/error.h"

namespace tessera::ops {

using namespace nn_expr;

namespace {

// ---------------------------------------------------------------- Col2Im

// y[b, c, pos...] = sum over block offsets rk of x[b, c*prod(block) + flat(rk), flat(l)]
// where each l_d = (pos_d + pad_d - rk_d*dil_d) / stride_d is an exact, in-range
// block position: the reference's scatter-add gathered per pixel in its
// (block offset) order, summed in f64 and converted like the reference.
std::vector<te::Tensor> col2im_expr(ExprContext& c) {
  const te::Tensor& x = c.in(0);
  const Col2ImShape g = col2im_shape(op_attrs(c), x.shape(), c.value(1).to_int_vector(), c.value(2).to_int_vector());
  const size_t r = g.rank();
  const int64_t N = g.N, C = g.C, bp = g.bp;
  Dims shape{N, C};
  shape.insert(shape.end(), g.image.begin(), g.image.end());
  std::vector<std::string> names{"n", "c"};
  for (const auto& s : spatial_axis_names(static_cast<int64_t>(r))) names.push_back(s);
  const DType F64 = DType::F64, out = c.out(0).dtype;
  te::Tensor acc = te::compute(shape, [&](const Indices& i) {
    std::vector<loop::ReduceAxis> rk = window_axes(g.block);
    std::vector<Expr> conds;
    Expr kflat = loop::int_imm(0), lflat = loop::int_imm(0);
    for (size_t d = 0; d < r; ++d) {
      Expr t = Expr(i[d + 2]) - Expr(rk[d].var) * g.dil[d];
      if (g.pads[d]) t = t + g.pads[d];
      conds.push_back(t >= 0);
      if (g.str[d] > 1) {
        conds.push_back(eq(t % g.str[d], 0));
        t = t / g.str[d];
      }
      conds.push_back(t < g.nb[d]);
      kflat = kflat * g.block[d] + rk[d].var;
      lflat = lflat * g.nb[d] + t;
    }
    Expr ch = bp == 1 ? Expr(i[1]) : Expr(i[1]) * bp + kflat;
    Expr v = guard(all_of(conds), cast_to(x(i[0], ch, lflat), F64), loop::make_zero({F64, 1}));
    return te::sum(v, rk);
  }, c.stage_name("col2im"), "col2im", names);
  if (out == F64) return {acc};
  return {te::compute(shape, [&](const Indices& i) { return store_as(acc(as_exprs(i)), out); }, c.stage_name(""),
                      te::OpClass::Elementwise, names)};
}

// ---------------------------------------------------------------- DeformConv

// Two stages in f64:
//   sample[b, ch, ky, kx, oy, ox]: X bilinearly sampled at the offset position
//     of tap (ky, kx), summed over the four corners rq in the reference's order;
//   conv[b, k, oy, ox] = bias[k] + sum_{rc, ry, rx} W[k, rc, ry, rx] * (sample * mask).
std::vector<te::Tensor> deform_conv_expr(ExprContext& c) {
  const Node& n = c.node;
  const te::Tensor& X = c.in(0);
  const te::Tensor& W = c.in(1);
  const te::Tensor& O = c.in(2);
  const te::Tensor* B = c.has_input(3) ? &c.in(3) : nullptr;
  const te::Tensor* Mk = c.has_input(4) ? &c.in(4) : nullptr;
  const DeformConvShape g = deform_conv_shape(op_attrs(c), X.shape(), W.shape(), O.shape(), Mk ? &Mk->shape() : nullptr,
                                              B ? &B->shape() : nullptr);
  const int64_t kh = g.kh, kw = g.kw, oh = g.oh, ow = g.ow, H = g.H, Wd = g.W, N = g.N, C = g.C, OC = g.OC;
  const int64_t group = g.group, og = g.offset_group;
  for (const te::Tensor* t : {&X, &W, &O, B, Mk})
    if (t) TESSERA_CHECK(is_float(t->dtype()), n.describe(), ": DeformConv needs float inputs");
  const DType F64 = DType::F64;
  const int64_t cpg = C / group, ocpg = OC / group, cpo = C / og;
  auto f64 = [&](const Expr& e) { return cast_to(e, F64); };
  auto fconst = [&](double v) { return loop::make_const({F64, 1}, v); };

  te::Tensor sample = te::compute({N, C, kh, kw, oh, ow}, [&](const Indices& i) {
    Expr b = i[0], ch = i[1], ki = i[2], kj = i[3], oy = i[4], ox = i[5];
    Expr o = cpo == C ? loop::int_imm(0) : ch / cpo;
    Expr dyc = g.offset_channel(o, ki * kw + kj);
    Expr dy = f64(O(b, dyc, oy, ox)), dx = f64(O(b, dyc + 1, oy, ox));
    Expr yy = f64(g.sample_y(oy, ki)) + dy;
    Expr xx = f64(g.sample_x(ox, kj)) + dx;
    Expr inside = yy > fconst(-1) && yy < fconst(static_cast<double>(H)) && xx > fconst(-1) &&
                  xx < fconst(static_cast<double>(Wd));
    Expr fy = loop::call("floor", {yy}), fx = loop::call("floor", {xx});
    Expr ly = yy - fy, lx = xx - fx;
    loop::ReduceAxis rq = te::reduce_axis(4, "rq");
    Expr cy = rq.var / 2, cx = rq.var % 2;
    Expr wy = loop::select(eq(cy, 1), ly, fconst(1) - ly), wx = loop::select(eq(cx, 1), lx, fconst(1) - lx);
    Expr yi = cast_to(fy, DType::I64) + cy, xi = cast_to(fx, DType::I64) + cx;
    Expr pix = te::if_then_else(yi >= 0 && yi < H && xi >= 0 && xi < Wd, f64(X(b, ch, yi, xi)), fconst(0));
    return te::sum(te::if_then_else(inside, (wy * wx) * pix, fconst(0)), {rq});
  }, c.stage_name("sample"), "gather", {"n", "c", "ky", "kx", "oh", "ow"});

  te::Tensor conv = te::compute({N, OC, oh, ow}, [&](const Indices& i) {
    Expr b = i[0], oc = i[1], oy = i[2], ox = i[3];
    std::vector<loop::ReduceAxis> axes;
    Expr rc = loop::int_imm(0);
    if (cpg > 1) {
      axes.push_back(te::reduce_axis(cpg, "rc"));
      rc = axes.back().var;
    }
    loop::ReduceAxis ry = te::reduce_axis(kh, "ry"), rx = te::reduce_axis(kw, "rx");
    axes.push_back(ry);
    axes.push_back(rx);
    Expr ch = group == 1 ? rc : (oc / ocpg) * cpg + rc;
    Expr col = sample(b, ch, ry.var, rx.var, oy, ox);
    if (Mk) {
      Expr o = cpo == C ? loop::int_imm(0) : ch / cpo;
      col = col * f64((*Mk)(b, g.mask_channel(o, Expr(ry.var) * kw + rx.var), oy, ox));
    }
    Expr start = B ? f64((*B)(std::vector<Expr>{oc})) : fconst(0);
    return loop::reduce(loop::ReduceOp::Sum, f64(W(oc, rc, ry.var, rx.var)) * col, axes, {}, start);
  }, c.stage_name("conv"), te::StageTag(te::OpClass::Conv, "conv2d"), {"n", "k", "h", "w"});
  const DType out = c.out(0).dtype;
  if (out == F64) return {conv};
  return {te::compute(conv.shape(), [&](const Indices& i) { return store_as(conv(as_exprs(i)), out); },
                      c.stage_name(""), te::OpClass::Elementwise, {"n", "k", "h", "w"})};
}

}  // namespace

void register_nn_vision_exprs(ExprRegistry& r) {
  r.set_expr("Col2Im", "", col2im_expr);
  r.set_expr("DeformConv", "", deform_conv_expr);
}

}  // namespace tessera::ops
