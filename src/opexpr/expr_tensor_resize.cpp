// Tensor expressions of Resize (opsets 10..19) and Upsample (7, 9), following
// the reference (src/ops/resize.cpp) step by step, with its attributes, plan,
// tap window and identity-axis test (src/ops/resize.h): per resized axis the
// source coordinate is computed in f64 from the output index with the same
// operations, then nearest picks one clamped index, linear / cubic (with
// antialias, exclude_outside) weigh their taps, normalised by their sum —
// once per output index of the axis, into tables (stages of their own); the
// taps of all axes are combined in the reference's nesting and order, in f64
// (a float linear / cubic resize of several axes: one pass per axis instead,
// see separable_resize), and the result is stored like the reference (through f32 for f16/bf16,
// truncating and saturating for integers). tf_crop_and_resize positions
// outside the input give extrapolation_value.
#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "opexpr/expr_tensor.h"
#include "ops/resize.h"
#include "support/error.h"

namespace tessera::ops::tensor_expr {

namespace {

using Out = std::vector<te::Tensor>;
using Idx = std::vector<Expr>;
using loop::Var;

Expr f64(double v) { return loop::float_imm(v, {DType::F64, 1}); }

// Loop-IR form of one resized axis at output index o: the taps' indices and
// weights (weights undefined for nearest), let-bound.
struct AxisTaps {
  std::vector<Expr> index, weight;
  Expr extrap;  // crop mode: the coordinate is outside the input
};

class Builder {
 public:
  // Binds value to a fresh variable (the body is wrapped in lets at the end).
  Expr bind(const Expr& value, const std::string& name) {
    Var v(name, value.type());
    lets_.push_back({v, value});
    return v;
  }
  Expr wrap(Expr body) const {
    for (size_t i = lets_.size(); i-- > 0;) body = loop::let(lets_[i].first, lets_[i].second, body);
    return body;
  }

 private:
  std::vector<std::pair<Var, Expr>> lets_;
};

AxisTaps axis_taps(Builder& b, const ResizeAttrs& a, const Expr& o, int64_t in, int64_t out, double scale,
                   double rs, double re, const std::string& tag) {
  AxisTaps t;
  const double in_w = static_cast<double>(in), out_w = scale * in_w;
  const std::string& m = a.coord;
  Expr xo = cast_to(o, DType::F64), x;
  if (m == "half_pixel") {
    x = (xo + f64(0.5)) / f64(scale) - f64(0.5);
  } else if (m == "half_pixel_symmetric") {
    double adjustment = static_cast<double>(out) / out_w, center = in_w / 2;
    x = f64(center * (1 - adjustment)) + (xo + f64(0.5)) / f64(scale) - f64(0.5);
  } else if (m == "pytorch_half_pixel") {
    x = out > 1 ? (xo + f64(0.5)) / f64(scale) - f64(0.5) : f64(0.0);
  } else if (m == "align_corners") {
    x = out_w == 1 ? f64(0.0) : xo * f64(in_w - 1) / f64(out_w - 1);
  } else if (m == "asymmetric") {
    x = xo / f64(scale);
  } else if (m == "tf_half_pixel_for_nn") {
    x = (xo + f64(0.5)) / f64(scale);
  } else {  // tf_crop_and_resize
    x = out_w == 1 ? f64((re - rs) * (in_w - 1) / 2) : xo * f64(re - rs) * f64(in_w - 1) / f64(out_w - 1);
    x = x + f64(rs * (in_w - 1));
  }
  x = b.bind(x, "x" + tag);
  if (m == "tf_crop_and_resize") t.extrap = x < f64(0.0) || x > f64(in_w - 1);
  Expr x0 = b.bind(loop::call("floor", {x}), "x0" + tag);
  Expr r = b.bind(x - x0, "r" + tag);
  // Clamped in floating point, then converted (the coordinate is finite).
  auto clampi = [&](const Expr& i) { return cast_to(loop::max(loop::min(i, f64(in_w - 1)), f64(0.0)), DType::I64); };
  if (a.mode == ResizeMode::Nearest) {
    Expr idx;
    if (a.legacy) idx = scale < 1 ? loop::call("ceil", {x}) : x0;
    else if (a.nearest == "round_prefer_floor") idx = loop::select(r <= f64(0.5), x0, x0 + f64(1.0));
    else if (a.nearest == "round_prefer_ceil") idx = loop::select(r < f64(0.5), x0, x0 + f64(1.0));
    else if (a.nearest == "floor") idx = x0;
    else idx = loop::select(loop::eq(r, f64(0.0)), x0, x0 + f64(1.0));
    t.index.push_back(b.bind(clampi(idx), "i" + tag));
    return t;
  }
  const ResizeWindow win = resize_tap_window(a, scale);
  const int64_t start = win.start;
  std::vector<Expr> w, idx;
  Expr sum;
  for (int64_t i = start; i < win.end; ++i) {
    Expr arg = f64(static_cast<double>(i)) - r;
    if (win.arg_scale != 1.0) arg = arg * f64(win.arg_scale);
    Expr wi;
    if (a.mode == ResizeMode::Linear) {
      Expr v = b.bind(f64(1.0) - loop::call("abs", {arg}), "l" + tag + "_" + std::to_string(i - start));
      wi = loop::select(v < f64(0.0), f64(0.0), loop::select(f64(1.0) < v, f64(1.0), v));
    } else {
      double A = a.cubic_a;
      Expr ax = b.bind(loop::call("abs", {arg}), "a" + tag + "_" + std::to_string(i - start));
      Expr near = ((f64(A + 2) * ax - f64(A + 3)) * ax) * ax + f64(1.0);
      Expr far = ((f64(A) * ax - f64(5 * A)) * ax + f64(8 * A)) * ax - f64(4 * A);
      wi = loop::select(ax <= f64(1.0), near, loop::select(ax < f64(2.0), far, f64(0.0)));
    }
    Expr id = b.bind(x0 + f64(static_cast<double>(i)), "t" + tag + "_" + std::to_string(i - start));
    if (a.exclude_outside) wi = loop::select(id < f64(0.0) || id > f64(in_w - 1), f64(0.0), wi);
    wi = b.bind(wi, "w" + tag + "_" + std::to_string(i - start));
    sum = sum.defined() ? sum + wi : wi;
    w.push_back(wi);
    idx.push_back(id);
  }
  sum = b.bind(sum, "sum" + tag);
  for (size_t i = 0; i < w.size(); ++i) {
    t.weight.push_back(b.bind(loop::select(loop::ne(sum, f64(0.0)), w[i] / sum, w[i]), "n" + tag + "_" + std::to_string(i)));
    t.index.push_back(b.bind(clampi(idx[i]), "i" + tag + "_" + std::to_string(i)));
  }
  return t;
}

// One resized axis as tables over its output index, each a stage of its
// own: the taps' clamped input indices, their normalised weights (linear,
// cubic) and the extrapolation flag (crop mode). Computed once per output
// index instead of once per element: the resize reads them as it runs along
// the last axis (index and weight vectors) or broadcasts them (outer axes).
struct AxisTables {
  std::vector<te::Tensor> index, weight;
  std::optional<te::Tensor> extrap;
};

AxisTables axis_tables(ExprContext& c, const ResizeAttrs& a, int64_t in, int64_t out, double scale, double rs,
                       double re, size_t d) {
  const std::string tag = std::to_string(d);
  // Stage k of kind `what`: table entry `pick(taps)` of every output index.
  auto table = [&](const std::string& what, size_t k, const std::function<Expr(const AxisTaps&)>& pick) {
    return te::compute({out}, [&](const Indices& i) {
      Builder b;
      AxisTaps t = axis_taps(b, a, i[0], in, out, scale, rs, re, tag);
      return b.wrap(pick(t));
    }, c.stage_name(what + tag + "_" + std::to_string(k)), "resize_taps", {"o"});
  };
  AxisTables r;
  Builder probe;
  const AxisTaps shape = axis_taps(probe, a, loop::int_imm(0), in, out, scale, rs, re, tag);
  for (size_t k = 0; k < shape.index.size(); ++k) {
    r.index.push_back(table("index", k, [k](const AxisTaps& t) { return t.index[k]; }));
    if (k < shape.weight.size()) r.weight.push_back(table("weight", k, [k](const AxisTaps& t) { return t.weight[k]; }));
  }
  if (shape.extrap.defined()) r.extrap = table("outside", 0, [](const AxisTaps& t) { return t.extrap; });
  return r;
}

// A float linear / cubic resize of several axes as one pass per axis, the
// last axis first: each pass a stage summing its axis's taps in f64 (taps of
// weight 0 adding nothing, as in the reference), the last one rounding to
// f32. The weights are separable, so this is the reference's sum of
// weight-product terms regrouped (equal up to f64 rounding); an upsampling
// then gathers only along the small first pass, and the passes over the
// other axes read whole rows of the pass before.
te::Tensor separable_resize(ExprContext& c, const te::Tensor& x, const Dims& od, const std::vector<size_t>& active,
                            const std::vector<AxisTables>& tables) {
  te::Tensor cur = x;
  Dims shape = x.shape();
  for (size_t k = active.size(); k-- > 0;) {
    const size_t d = active[k];
    shape[d] = od[d];
    const te::Tensor prev = cur;
    cur = te::compute(shape, [&](const Indices& iv) {
      Idx o = as_exprs(iv), in = o;
      Expr sum;
      for (size_t t = 0; t < tables[k].index.size(); ++t) {
        in[d] = tables[k].index[t](o[d]);
        const Expr w = tables[k].weight[t](o[d]);
        Expr v = prev(in);
        if (prev.dtype() != DType::F64) v = cast_to(v, DType::F64);
        Expr term = loop::select(loop::eq(w, f64(0.0)), f64(0.0), w * v);
        sum = sum.defined() ? sum + term : term;
      }
      return k == 0 ? f64_to(sum, DType::F32) : sum;
    }, c.stage_name(k == 0 ? "" : "axis" + std::to_string(d)), "resize");
  }
  return cur;
}

Out resize(ExprContext& c) {
  const Node& n = c.node;
  const te::Tensor& x = c.in(0);
  const Dims& xd = x.shape();
  ResizeAttrs a = read_resize_attrs(n, c.opset, x.rank());
  ResizePlan p = resize_plan_from_inputs(n, c.opset, a, xd, [&](int i) -> const Tensor* {
    // Present and non-empty (reading a value makes the kernel depend on it).
    return c.has_input(i) && numel_of(c.in(i).shape()) > 0 ? &c.value(i) : nullptr;
  });
  const Dims& od = c.out(0).dims;
  TESSERA_CHECK(p.out == od, n.describe(), ": resize plan gives ", dims_to_string(p.out), " but inference says ",
                dims_to_string(od));
  std::vector<size_t> active;
  for (size_t d = 0; d < xd.size(); ++d) {
    TESSERA_CHECK(xd[d] > 0 || od[d] == 0, n.describe(), ": cannot resize an empty axis ", d, " to ", od[d]);
    if (numel_of(od) > 0 && !resize_axis_taps(a, xd[d], od[d], p.scale[d], p.roi_start[d], p.roi_end[d]).identity)
      active.push_back(d);
  }
  std::vector<AxisTables> tables;
  bool extrapolates = false;
  for (size_t d : active) {
    tables.push_back(axis_tables(c, a, xd[d], od[d], p.scale[d], p.roi_start[d], p.roi_end[d], d));
    extrapolates |= tables.back().extrap.has_value();
  }
  DType dt = x.dtype();
  if (dt == DType::F32 && a.mode != ResizeMode::Nearest && active.size() > 1 && !extrapolates)
    return {separable_resize(c, x, od, active, tables)};
  return {te::compute(od, [&](const Indices& iv) {
    Idx o = as_exprs(iv);
    if (numel_of(od) == 0) return te::constant(dt, 0);
    Expr extrap;
    for (size_t k = 0; k < active.size(); ++k)
      if (tables[k].extrap) {
        Expr e = (*tables[k].extrap)(o[active[k]]);
        extrap = extrap.defined() ? (extrap || e) : e;
      }
    Idx in = o;
    Expr v;
    if (a.mode == ResizeMode::Nearest) {
      for (size_t k = 0; k < active.size(); ++k) in[active[k]] = tables[k].index[0](o[active[k]]);
      v = x(in);  // one tap of weight 1: the element itself (64-bit integers pass through f64 like the reference)
      if (dt == DType::I64 || dt == DType::U64) v = f64_to(cast_to(v, DType::F64), dt);
      if (extrap.defined()) v = loop::select(extrap, f64_to(f64(a.extrapolation), dt), v);
      return v;
    }
    // The reference's nesting: per active axis in order, a sum over its taps
    // (weights multiplied outside in), the element times the weight product
    // innermost; taps of weight 0 contribute nothing.
    std::function<Expr(size_t, const Expr&)> acc = [&](size_t k, const Expr& wprod) -> Expr {
      if (k == active.size()) return wprod * cast_to(x(in), DType::F64);
      const Expr& ok = o[active[k]];
      Expr sum;
      for (size_t t = 0; t < tables[k].index.size(); ++t) {
        in[active[k]] = tables[k].index[t](ok);
        const Expr w = tables[k].weight[t](ok);
        Expr term = acc(k + 1, wprod.defined() ? wprod * w : w);
        term = loop::select(loop::eq(w, f64(0.0)), f64(0.0), term);
        sum = sum.defined() ? sum + term : term;
      }
      return sum;
    };
    v = active.empty() ? cast_to(x(in), DType::F64) : acc(0, Expr());
    if (extrap.defined()) v = loop::select(extrap, f64(a.extrapolation), v);
    return f64_to(v, dt);
  }, c.stage_name(""), "resize")};
}

}  // namespace

void register_resize_exprs(ExprRegistry& r) {
  set(r, "Resize", resize);
  set(r, "Upsample", resize);
}

}  // namespace tessera::ops::tensor_expr
