// Tensor expressions of the sampling-grid vision ops: GridSample (N-D,
// nearest / linear / cubic taps with zeros / border / reflection padding, an
// index formula over the tap product), AffineGrid (an index formula) and
// RoiAlign (an extern stage: the sample grid per roi depends on the roi's
// coordinates when sampling_ratio is 0). Values in f64 as the reference.
#include <cmath>

#include "opexpr/expr_misc.h"
#include "ops/op_attrs.h"
#include "support/error.h"

namespace tessera::ops {

namespace {

using loop::Stmt;
using loop::Var;
using misc::f64;
using misc::Scalar;
using misc::serial;
using misc::to_f64;

// Named sub-expressions bound with Let (shared values stay one node: the
// loop IR has no common-subexpression sharing).
struct Lets {
  std::vector<std::pair<Var, Expr>> binds;
  Expr bind(const std::string& name, Expr v) {
    Var var(name + std::to_string(binds.size()), v.type());
    binds.emplace_back(var, std::move(v));
    return var;
  }
  Expr wrap(Expr body) const {
    for (size_t i = binds.size(); i-- > 0;) body = loop::let(binds[i].first, binds[i].second, body);
    return body;
  }
  Stmt wrap(Stmt body) const {
    for (size_t i = binds.size(); i-- > 0;) body = loop::let_stmt(binds[i].first, binds[i].second, body);
    return body;
  }
};

Expr clampf(const Expr& x, const Expr& lo, const Expr& hi) {  // std::clamp
  return loop::select(x < lo, lo, loop::select(hi < x, hi, x));
}
Expr is_nan(const Expr& x) { return loop::ne(x, x); }
Expr is_even(const Expr& k) { return loop::eq(k % 2.0, 0.0); }

// ---------------------------------------------------------------- GridSample

enum class Mode { Nearest, Linear, Cubic };
enum class Pad { Zeros, Border, Reflection };

// Reflects x into [lo, hi] (the reference's bouncing rule); x must be a Let var.
Expr reflect(const Expr& x, double lo, double hi, Lets& lets) {
  const double rng = hi - lo;
  if (rng <= 0) return f64(lo);
  Expr dx1 = lets.bind("dxl", f64(lo) - x);
  Expr k1 = lets.bind("kl", loop::call("floor", {dx1 / f64(rng)}));
  Expr r1 = lets.bind("rl", dx1 - k1 * f64(rng));
  Expr dx2 = lets.bind("dxh", x - f64(hi));
  Expr k2 = lets.bind("kh", loop::call("floor", {dx2 / f64(rng)}));
  Expr r2 = lets.bind("rh", dx2 - k2 * f64(rng));
  Expr below = loop::select(is_even(k1), f64(lo) + r1, f64(hi) - r1);
  Expr above = loop::select(is_even(k2), f64(hi) - r2, f64(lo) + r2);
  return loop::select(x < f64(lo), below, loop::select(x > f64(hi), above, x));
}

Expr cubic_w(const Expr& x0, Lets& lets) {  // A = -0.75
  const double A = -0.75;
  Expr x = lets.bind("ax", loop::call("abs", {x0}));
  Expr near = ((f64(A + 2) * x - f64(A + 3)) * x) * x + f64(1.0);
  Expr far = ((f64(A) * x - f64(5 * A)) * x + f64(8 * A)) * x - f64(4 * A);
  return loop::select(x <= f64(1.0), near, loop::select(x < f64(2.0), far, f64(0.0)));
}

std::vector<te::Tensor> grid_sample_expr(ExprContext& c) {
  const te::Tensor& X = c.in(0);
  const te::Tensor& G = c.in(1);
  const Node& n = c.node;
  const int64_t R = X.rank() - 2;
  TESSERA_CHECK(R >= 1 && G.rank() == X.rank() && G.dim(G.rank() - 1) == R && G.dim(0) == X.dim(0), n.describe(),
                ": grid shape ", dims_to_string(G.shape()), " does not fit X shape ", dims_to_string(X.shape()));
  std::string ms = op_attrs(c).s("mode"), ps = op_attrs(c).s("padding_mode");
  Mode mode;
  if (ms == "nearest") mode = Mode::Nearest;
  else if (ms == "linear" || ms == "bilinear") mode = Mode::Linear;
  else if (ms == "cubic" || ms == "bicubic") mode = Mode::Cubic;
  else TESSERA_FAIL(n.describe(), ": unsupported mode '", ms, "'");
  Pad pad;
  if (ps == "zeros") pad = Pad::Zeros;
  else if (ps == "border") pad = Pad::Border;
  else if (ps == "reflection") pad = Pad::Reflection;
  else TESSERA_FAIL(n.describe(), ": unsupported padding_mode '", ps, "'");
  const bool align = op_attrs(c).i("align_corners") != 0;
  const TensorType& out = c.out(0);
  return {te::compute(out.dims, [&](const Indices& idx) {
    Lets lets;
    Expr b = idx[0], ch = idx[1];
    std::vector<Expr> gi = {b};
    for (int64_t d = 0; d < R; ++d) gi.push_back(idx[static_cast<size_t>(2 + d)]);
    gi.push_back(Expr());
    Expr nan_point = loop::bool_imm(false);
    // Per axis: tap indices and weights.
    std::vector<std::vector<std::pair<Expr, Expr>>> taps(static_cast<size_t>(R));
    for (int64_t d = 0; d < R; ++d) {
      const int64_t Li = X.dim(static_cast<int>(2 + d));
      const double L = static_cast<double>(Li);
      gi.back() = loop::int_imm(R - 1 - d);
      Expr gv = lets.bind("g", to_f64(G(gi)));
      Expr xc = align ? (gv + f64(1.0)) / f64(2.0) * f64(L - 1) : ((gv + f64(1.0)) * f64(L) - f64(1.0)) / f64(2.0);
      xc = lets.bind("xr", xc);
      Expr bad = is_nan(xc);
      if (pad == Pad::Reflection) bad = bad || loop::eq(loop::call("abs", {xc}), f64(INFINITY));
      bad = lets.bind("bad", bad);
      nan_point = nan_point || bad;
      xc = loop::select(bad, f64(0.0), xc);
      if (pad != Pad::Reflection) xc = clampf(xc, f64(-L - 4), f64(2 * L + 4));
      if (mode == Mode::Nearest) xc = loop::call("round", {xc});
      xc = lets.bind("xc", xc);
      const double lo = align ? 0 : -0.5, hi = align ? L - 1 : L - 0.5;
      if (pad == Pad::Border) {
        xc = loop::select(xc < f64(lo) || xc > f64(hi), clampf(xc, f64(0.0), f64(L - 1)), xc);
      } else if (pad == Pad::Reflection) {
        xc = reflect(xc, lo, hi, lets);
      }
      xc = lets.bind("xs", xc);
      std::vector<std::pair<Expr, Expr>> t;  // (i64 index, f64 weight)
      auto to_i = [](const Expr& e) { return cast_to(e, DType::I64); };
      if (mode == Mode::Nearest) {
        t.push_back({to_i(xc), f64(1.0)});
      } else if (mode == Mode::Linear) {
        Expr f = lets.bind("f", loop::call("floor", {xc}));
        t.push_back({to_i(f), f + f64(1.0) - xc});
        t.push_back({to_i(f) + int64_t{1}, xc - f});
      } else {
        Expr f = lets.bind("f", loop::call("floor", {xc}));
        Expr dx = lets.bind("dx", xc - f);
        for (int k = -1; k <= 2; ++k) t.push_back({to_i(f) + int64_t{k}, cubic_w(dx - f64(k), lets)});
      }
      for (auto& [i, w] : t) {
        Expr iv = lets.bind("ti", i);
        if (pad == Pad::Border) {
          i = clampf(iv, loop::int_imm(0), loop::int_imm(Li - 1));
        } else if (pad == Pad::Reflection) {
          Expr fi = lets.bind("tf", to_f64(iv));
          i = clampf(to_i(reflect(fi, lo, hi, lets)), loop::int_imm(0), loop::int_imm(Li - 1));
        } else {
          Expr outside = iv < int64_t{0} || iv >= Li;
          w = loop::select(outside, f64(0.0), w);
          i = loop::select(outside, loop::int_imm(0), iv);
        }
        i = lets.bind("ti", i);
        w = lets.bind("tw", w);
      }
      taps[static_cast<size_t>(d)] = t;
    }
    // Sum over the tap product, the last axis fastest, skipping zero weights.
    Expr acc = f64(0.0);
    std::vector<size_t> pick(static_cast<size_t>(R), 0);
    for (;;) {
      Expr w = f64(1.0);
      std::vector<Expr> xi = {b, ch};
      for (size_t d = 0; d < static_cast<size_t>(R); ++d) {
        w = w * taps[d][pick[d]].second;
        xi.push_back(taps[d][pick[d]].first);
      }
      Expr wv = lets.bind("w", w);
      acc = lets.bind("acc", acc + loop::select(loop::ne(wv, 0.0), wv * to_f64(X(xi)), f64(0.0)));
      bool done = true;
      for (size_t d = static_cast<size_t>(R); d-- > 0;) {
        if (++pick[d] < taps[d].size()) {
          done = false;
          break;
        }
        pick[d] = 0;
      }
      if (done) break;
    }
    Expr y = loop::select(nan_point, f64(NAN), acc);
    return cast_to(lets.wrap(y), out.dtype);
  }, c.stage_name(""), "gather")};
}

// ---------------------------------------------------------------- AffineGrid

std::vector<te::Tensor> affine_grid_expr(ExprContext& c) {
  const te::Tensor& th = c.in(0);
  const TensorType& out = c.out(0);
  const int64_t r = static_cast<int64_t>(out.dims.size()) - 2;
  TESSERA_CHECK(r == 2 || r == 3, c.node.describe(), ": size must have 4 or 5 values");
  TESSERA_CHECK(th.shape() == Dims({out.dims[0], r, r + 1}), c.node.describe(), ": theta must be [", out.dims[0], ", ",
                r, ", ", r + 1, "], got ", dims_to_string(th.shape()));
  const bool align = op_attrs(c).i("align_corners") != 0;
  return {te::compute(out.dims, [&](const Indices& idx) {
    Expr b = idx[0], k = idx.back();
    // coord = (x, y[, z], 1): x is the innermost spatial axis.
    std::vector<Expr> coord(static_cast<size_t>(r + 1));
    for (int64_t d = 0; d < r; ++d) {
      const int64_t L = out.dims[static_cast<size_t>(1 + d)];
      Expr i = to_f64(idx[static_cast<size_t>(1 + d)]);
      Expr base;
      if (align) base = L <= 1 ? f64(0.0) : f64(-1.0) + (f64(2.0) * i) / f64(static_cast<double>(L - 1));
      else base = f64(-1.0) + (f64(2.0) * i + f64(1.0)) / f64(static_cast<double>(L));
      coord[static_cast<size_t>(r - 1 - d)] = base;
    }
    coord[static_cast<size_t>(r)] = f64(1.0);
    Expr acc = f64(0.0);
    for (int64_t j = 0; j <= r; ++j) acc = acc + to_f64(th(b, k, j)) * coord[static_cast<size_t>(j)];
    return cast_to(acc, out.dtype);
  }, c.stage_name(""), te::OpClass::Elementwise)};
}

// ---------------------------------------------------------------- RoiAlign

std::vector<te::Tensor> roi_align_expr(ExprContext& c) {
  const Node& n = c.node;
  const te::Tensor& X = c.in(0);
  const te::Tensor& Rt = c.in(1);
  const te::Tensor& Bt = c.in(2);
  TESSERA_CHECK(X.rank() == 4, n.describe(), ": X must be 4-D");
  TESSERA_CHECK(Rt.rank() == 2 && Rt.dim(1) == 4, n.describe(), ": rois must be [num_rois, 4]");
  TESSERA_CHECK(Bt.rank() == 1 && Bt.dim(0) == Rt.dim(0), n.describe(), ": batch_indices must have one entry per roi");
  const std::string mode = op_attrs(c).s("mode");
  TESSERA_CHECK(mode == "avg" || mode == "max", n.describe(), ": unsupported mode '", mode, "'");
  const bool avg = mode == "avg";
  const std::string ctm =
      c.opset >= 16 ? op_attrs(c).s("coordinate_transformation_mode") : "output_half_pixel";
  TESSERA_CHECK(ctm == "half_pixel" || ctm == "output_half_pixel", n.describe(),
                ": unsupported coordinate_transformation_mode '", ctm, "'");
  const int64_t OH = op_attrs(c).i("output_height"), OW = op_attrs(c).i("output_width");
  const int64_t sr = op_attrs(c).i("sampling_ratio");
  const double ss = op_attrs(c).f("spatial_scale");
  TESSERA_CHECK(OH > 0 && OW > 0 && sr >= 0, n.describe(), ": output sizes must be positive and sampling_ratio >= 0");
  const int64_t N = X.dim(0), C = X.dim(1), H = X.dim(2), W = X.dim(3), R = Rt.dim(0);
  const double off = ctm == "half_pixel" ? 0.5 : 0.0;
  const DType dt = c.out(0).dtype;
  auto build = [=](const std::vector<loop::Buffer>& in, const std::vector<loop::Buffer>& o) {
    Var r("r"), ph("ph"), pw("pw"), ch("ch"), iy("iy"), ix("ix");
    Scalar acc("roi_acc");
    Lets roi;
    Expr b = roi.bind("b", loop::min(loop::max(cast_to(loop::load(in[2], r), DType::I64), int64_t{0}), N - 1));
    auto coord = [&](int k) { return roi.bind("c", to_f64(loop::load(in[1], r * int64_t{4} + int64_t{k})) * f64(ss) - f64(off)); };
    Expr sw = coord(0), sh = coord(1), ew = coord(2), eh = coord(3);
    Expr rw = ew - sw, rh = eh - sh;
    if (ctm == "output_half_pixel") {
      rw = loop::select(rw < f64(1.0), f64(1.0), rw);
      rh = loop::select(rh < f64(1.0), f64(1.0), rh);
    }
    rw = roi.bind("rw", rw);
    rh = roi.bind("rh", rh);
    Expr bh = roi.bind("bh", rh / f64(static_cast<double>(OH)));
    Expr bw = roi.bind("bw", rw / f64(static_cast<double>(OW)));
    auto grid = [&](const Expr& extent, int64_t bins) -> Expr {
      if (sr > 0) return loop::int_imm(sr);
      return cast_to(clampf(loop::call("ceil", {extent / f64(static_cast<double>(bins))}), f64(0.0), f64(1e7)),
                     DType::I64);
    };
    Expr gh = roi.bind("gh", grid(rh, OH)), gw = roi.bind("gw", grid(rw, OW));
    Expr count = roi.bind("count", to_f64(loop::max(gh * gw, int64_t{1})));
    // One sample: its four corner offsets and weights (zero outside [-1, size]).
    Lets smp;
    Expr yy0 = smp.bind("yy", (sh + to_f64(ph) * bh) + ((to_f64(iy) + f64(0.5)) * bh) / to_f64(gh));
    Expr xx0 = smp.bind("xx", (sw + to_f64(pw) * bw) + ((to_f64(ix) + f64(0.5)) * bw) / to_f64(gw));
    Expr valid = smp.bind("valid", !(yy0 < f64(-1.0) || yy0 > f64(static_cast<double>(H)) || xx0 < f64(-1.0) ||
                                     xx0 > f64(static_cast<double>(W))));
    Expr yy1 = smp.bind("yy", loop::select(yy0 < f64(0.0), f64(0.0), yy0));
    Expr xx1 = smp.bind("xx", loop::select(xx0 < f64(0.0), f64(0.0), xx0));
    Expr yl0 = smp.bind("yl", cast_to(yy1, DType::I64)), xl0 = smp.bind("xl", cast_to(xx1, DType::I64));
    Expr ytop = yl0 >= H - 1, xtop = xl0 >= W - 1;
    Expr yl = smp.bind("yl", loop::select(ytop, loop::int_imm(H - 1), yl0));
    Expr xl = smp.bind("xl", loop::select(xtop, loop::int_imm(W - 1), xl0));
    Expr yh = smp.bind("yh", loop::select(ytop, loop::int_imm(H - 1), yl0 + int64_t{1}));
    Expr xh = smp.bind("xh", loop::select(xtop, loop::int_imm(W - 1), xl0 + int64_t{1}));
    Expr yy = smp.bind("yy", loop::select(ytop, to_f64(yl), yy1));
    Expr xx = smp.bind("xx", loop::select(xtop, to_f64(xl), xx1));
    Expr ly = smp.bind("ly", yy - to_f64(yl)), lx = smp.bind("lx", xx - to_f64(xl));
    Expr hy = smp.bind("hy", f64(1.0) - ly), hx = smp.bind("hx", f64(1.0) - lx);
    Expr zero_i = loop::int_imm(0);
    Expr p[4] = {loop::select(valid, yl * W + xl, zero_i), loop::select(valid, yl * W + xh, zero_i),
                 loop::select(valid, yh * W + xl, zero_i), loop::select(valid, yh * W + xh, zero_i)};
    Expr w[4] = {hy * hx, hy * lx, ly * hx, ly * lx};
    Expr img = (b * C + ch) * (H * W);
    Expr v[4];
    for (int k = 0; k < 4; ++k) {
      Expr wk = loop::select(valid, w[k], f64(0.0));
      v[k] = smp.bind("v", wk * to_f64(loop::load(in[0], img + smp.bind("p", p[k]))));
    }
    Stmt update;
    if (avg) {
      update = acc.set(((acc.get() + v[0]) + v[1]) + v[2] + v[3]);
    } else {
      // std::max({...}) keeps the first of equal values; std::max(acc, v) likewise.
      Expr m = v[0];
      for (int k = 1; k < 4; ++k) m = smp.bind("m", loop::select(m < v[k], v[k], m));
      Expr first = loop::eq(iy, int64_t{0}) && loop::eq(ix, int64_t{0});
      update = acc.set(loop::select(first, m, loop::select(acc.get() < m, m, acc.get())));
    }
    Stmt samples = serial(iy, gh, serial(ix, gw, smp.wrap(update)));
    Expr result = avg ? acc.get() / count : acc.get();
    Expr oat = ((r * C + ch) * OH + ph) * OW + pw;
    Stmt per_ch = loop::block({acc.set(f64(0.0)), samples, loop::store(o[0], cast_to(result, dt), oat)});
    Stmt body = serial(ph, OH, serial(pw, OW, serial(ch, C, per_ch)));
    return loop::allocate(acc.buf, loop::int_imm(1), serial(r, R, roi.wrap(body)));
  };
  return te::extern_stage({c.out(0).dims}, {dt}, {X, Rt, Bt}, build, c.stage_name("roi_align"));
}

}  // namespace

void register_misc_vision_exprs(ExprRegistry& r) {
  r.set_expr("GridSample", "", grid_sample_expr);
  r.set_expr("AffineGrid", "", affine_grid_expr);
  r.set_expr("RoiAlign", "", roi_align_expr);
}

}  // namespace tessera::ops
