// Tensor expressions of Resize (opsets 10..19) and Upsample (7, 9), following
// the reference (src/ops/resize.cpp) step by step: per resized axis the
// source coordinate is computed in f64 from the output index with the same
// operations, then nearest picks one clamped index, linear / cubic (with
// antialias, exclude_outside) weigh their taps, normalised by their sum; the
// taps of all axes are combined in the reference's nesting and order, in f64,
// and the result is stored like the reference (through f32 for f16/bf16,
// truncating and saturating for integers). tf_crop_and_resize positions
// outside the input give extrapolation_value.
#include <algorithm>
#include <cmath>

#include "ops/expr_tensor.h"
#include "support/error.h"

namespace tessera::ops::tensor_expr {

namespace {

using Out = std::vector<te::Tensor>;
using Idx = std::vector<Expr>;
using loop::Var;

enum class Mode { Nearest, Linear, Cubic };

struct Attrs {
  Mode mode = Mode::Nearest;
  std::string coord = "half_pixel", nearest = "round_prefer_floor", keep_aspect = "stretch";
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false, antialias = false, legacy = false;
  std::vector<int64_t> axes;
};

Attrs read_attrs(const Node& n, int64_t opset, int64_t rank) {
  Attrs a;
  bool upsample = n.op_type == "Upsample";
  std::string mode = n.attr_string("mode", "nearest");
  if (mode == "nearest") a.mode = Mode::Nearest;
  else if (mode == "linear" || (upsample && mode == "bilinear")) a.mode = Mode::Linear;
  else if (mode == "cubic" && !upsample && opset >= 11) a.mode = Mode::Cubic;
  else TESSERA_FAIL(n.describe(), ": unsupported mode '", mode, "'");
  a.legacy = upsample || opset < 11;
  if (a.legacy) {
    a.coord = "asymmetric";
  } else {
    a.coord = n.attr_string("coordinate_transformation_mode", "half_pixel");
    static const char* coords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                   "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
    TESSERA_CHECK(std::find(std::begin(coords), std::end(coords), a.coord) != std::end(coords), n.describe(),
                  ": unsupported coordinate_transformation_mode '", a.coord, "'");
    a.nearest = n.attr_string("nearest_mode", "round_prefer_floor");
    TESSERA_CHECK(a.nearest == "round_prefer_floor" || a.nearest == "round_prefer_ceil" || a.nearest == "floor" ||
                      a.nearest == "ceil",
                  n.describe(), ": unsupported nearest_mode '", a.nearest, "'");
    a.cubic_a = n.attr_float("cubic_coeff_a", -0.75f);
    a.exclude_outside = n.attr_int("exclude_outside", 0) != 0;
    a.extrapolation = n.attr_float("extrapolation_value", 0.0f);
    a.antialias = n.attr_int("antialias", 0) != 0;
    a.keep_aspect = n.attr_string("keep_aspect_ratio_policy", "stretch");
  }
  if (!a.legacy && n.has_attr("axes")) {
    for (int64_t ax : n.attr_ints("axes")) a.axes.push_back(normalize_axis(n, ax, rank));
  } else {
    for (int64_t d = 0; d < rank; ++d) a.axes.push_back(d);
  }
  return a;
}

// Per dim: output size, scale and ROI of the coordinate transform.
struct Plan {
  Dims out;
  std::vector<double> scale, roi_start, roi_end;
};

Plan make_plan(const Node& n, const Attrs& a, const Dims& xd, const std::vector<double>* scales,
               const std::vector<int64_t>* sizes, const std::vector<double>* roi) {
  size_t rank = xd.size(), na = a.axes.size();
  Plan p{xd, std::vector<double>(rank, 1.0), std::vector<double>(rank, 0.0), std::vector<double>(rank, 1.0)};
  if (scales) {
    TESSERA_CHECK(scales->size() == na, n.describe(), ": scales has ", scales->size(), " values for ", na, " axes");
    for (size_t k = 0; k < na; ++k) {
      double s = (*scales)[k];
      TESSERA_CHECK(s > 0 && std::isfinite(s), n.describe(), ": scales must be positive, got ", s);
      size_t d = static_cast<size_t>(a.axes[k]);
      p.scale[d] = s;
      p.out[d] = static_cast<int64_t>(std::floor(static_cast<double>(xd[d]) * s));
    }
  } else {
    TESSERA_CHECK(sizes && sizes->size() == na, n.describe(), ": sizes must have one value per resized axis");
    if (a.keep_aspect == "stretch") {
      for (size_t k = 0; k < na; ++k) {
        size_t d = static_cast<size_t>(a.axes[k]);
        p.out[d] = (*sizes)[k];
        p.scale[d] = xd[d] > 0 ? static_cast<double>((*sizes)[k]) / static_cast<double>(xd[d]) : 1.0;
      }
    } else {
      bool known = true;
      double s = a.keep_aspect == "not_larger" ? INFINITY : 0.0;
      for (size_t k = 0; k < na; ++k) {
        int64_t in = xd[static_cast<size_t>(a.axes[k])];
        if (in <= 0) {
          known = false;
          continue;
        }
        double r = static_cast<double>((*sizes)[k]) / static_cast<double>(in);
        s = a.keep_aspect == "not_larger" ? std::min(s, r) : std::max(s, r);
      }
      for (size_t k = 0; k < na; ++k) {
        size_t d = static_cast<size_t>(a.axes[k]);
        p.scale[d] = known ? s : 1.0;
        p.out[d] = known ? static_cast<int64_t>(std::floor(s * static_cast<double>(xd[d]) + 0.5)) : -1;
      }
    }
  }
  if (a.coord == "tf_crop_and_resize") {
    TESSERA_CHECK(roi && roi->size() == 2 * na, n.describe(), ": tf_crop_and_resize needs an roi of ", 2 * na,
                  " values");
    for (size_t k = 0; k < na; ++k) {
      size_t d = static_cast<size_t>(a.axes[k]);
      p.roi_start[d] = (*roi)[k];
      p.roi_end[d] = (*roi)[k + na];
    }
  }
  return p;
}

// The reference's source coordinate of output index o (scalar double), for
// the identity test at compile time; extrap set when outside (crop mode).
double coordinate(const Attrs& a, double xo, int64_t in, int64_t out, double scale, double rs, double re,
                  bool& extrap) {
  const double in_w = static_cast<double>(in), out_w = scale * in_w;
  const std::string& m = a.coord;
  extrap = false;
  if (m == "half_pixel") return (xo + 0.5) / scale - 0.5;
  if (m == "half_pixel_symmetric") {
    double adjustment = static_cast<double>(out) / out_w, center = in_w / 2;
    return center * (1 - adjustment) + (xo + 0.5) / scale - 0.5;
  }
  if (m == "pytorch_half_pixel") return out > 1 ? (xo + 0.5) / scale - 0.5 : 0.0;
  if (m == "align_corners") return out_w == 1 ? 0.0 : xo * (in_w - 1) / (out_w - 1);
  if (m == "asymmetric") return xo / scale;
  if (m == "tf_half_pixel_for_nn") return (xo + 0.5) / scale;
  double x = out_w == 1 ? (re - rs) * (in_w - 1) / 2 : xo * (re - rs) * (in_w - 1) / (out_w - 1);
  x += rs * (in_w - 1);
  extrap = x < 0 || x > in_w - 1;
  return x;
}

double cubic_kernel(double x, double A) {
  x = std::fabs(x);
  if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
  if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return 0.0;
}

// The tap window [start, end) relative to floor(x) for linear / cubic.
std::pair<int64_t, int64_t> tap_window(const Attrs& a, double scale) {
  const double support = a.mode == Mode::Linear ? 1.0 : 2.0;
  const double s = a.antialias ? std::min(scale, 1.0) : 1.0;
  int64_t start = static_cast<int64_t>(std::floor(-support / s)) + 1;
  return {start, 2 - start};
}

// True when the axis maps every output index o to input o with weight 1 (the
// reference then skips it), computed exactly as the reference does.
bool identity_axis(const Attrs& a, int64_t in, int64_t out, double scale, double rs, double re) {
  if (in != out) return false;
  const double in_w = static_cast<double>(in);
  auto clampi = [&](double i) { return std::isnan(i) ? int64_t{0} : static_cast<int64_t>(std::clamp(i, 0.0, in_w - 1)); };
  for (int64_t o = 0; o < out; ++o) {
    bool ext = false;
    double x = coordinate(a, static_cast<double>(o), in, out, scale, rs, re, ext);
    if (ext) return false;
    double x0 = std::floor(x), r = x - x0;
    if (a.mode == Mode::Nearest) {
      double idx;
      if (a.legacy) idx = scale < 1 ? std::ceil(x) : x0;
      else if (r == 0) idx = x0;
      else if (a.nearest == "round_prefer_floor") idx = r <= 0.5 ? x0 : x0 + 1;
      else if (a.nearest == "round_prefer_ceil") idx = r < 0.5 ? x0 : x0 + 1;
      else if (a.nearest == "floor") idx = x0;
      else idx = x0 + 1;
      if (clampi(idx) != o) return false;
      continue;
    }
    auto [start, end] = tap_window(a, scale);
    const double s = a.antialias ? std::min(scale, 1.0) : 1.0;
    double sum = 0;
    std::vector<std::pair<double, double>> raw;
    for (int64_t i = start; i < end; ++i) {
      double arg = (static_cast<double>(i) - r) * s;
      double w = a.mode == Mode::Linear ? std::clamp(1 - std::fabs(arg), 0.0, 1.0) : cubic_kernel(arg, a.cubic_a);
      double idx = x0 + static_cast<double>(i);
      if (a.exclude_outside && (idx < 0 || idx > in_w - 1)) w = 0;
      raw.push_back({idx, w});
      sum += w;
    }
    int taps = 0;
    for (auto& [idx, w] : raw) {
      if (w == 0) continue;
      if (++taps > 1 || clampi(idx) != o || (sum != 0 ? w / sum : w) != 1.0) return false;
    }
    if (taps != 1) return false;
  }
  return true;
}

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

AxisTaps axis_taps(Builder& b, const Attrs& a, const Expr& o, int64_t in, int64_t out, double scale, double rs,
                   double re, const std::string& tag) {
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
  if (a.mode == Mode::Nearest) {
    Expr idx;
    if (a.legacy) idx = scale < 1 ? loop::call("ceil", {x}) : x0;
    else if (a.nearest == "round_prefer_floor") idx = loop::select(r <= f64(0.5), x0, x0 + f64(1.0));
    else if (a.nearest == "round_prefer_ceil") idx = loop::select(r < f64(0.5), x0, x0 + f64(1.0));
    else if (a.nearest == "floor") idx = x0;
    else idx = loop::select(loop::eq(r, f64(0.0)), x0, x0 + f64(1.0));
    t.index.push_back(b.bind(clampi(idx), "i" + tag));
    return t;
  }
  auto [start, end] = tap_window(a, scale);
  const double s = a.antialias ? std::min(scale, 1.0) : 1.0;
  std::vector<Expr> w, idx;
  Expr sum;
  for (int64_t i = start; i < end; ++i) {
    Expr arg = f64(static_cast<double>(i)) - r;
    if (s != 1.0) arg = arg * f64(s);
    Expr wi;
    if (a.mode == Mode::Linear) {
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

Out resize(ExprContext& c) {
  const Node& n = c.node;
  const te::Tensor& x = c.in(0);
  const Dims& xd = x.shape();
  Attrs a = read_attrs(n, c.opset, x.rank());
  // Input slots of roi / scales / sizes for this op and opset.
  int roi_i = -1, scales_i = -1, sizes_i = -1;
  if (n.op_type == "Upsample") scales_i = c.opset >= 9 ? 1 : -1;
  else if (c.opset < 11) scales_i = 1;
  else roi_i = 1, scales_i = 2, sizes_i = 3;
  auto get = [&](int i) -> const Tensor* {  // present and non-empty
    if (i < 0 || !c.has_input(i) || numel_of(c.in(i).shape()) == 0) return nullptr;
    return &c.value(i);
  };
  auto doubles = [](const Tensor& t) {
    std::vector<double> v;
    for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get_double(i));
    return v;
  };
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  const Tensor* tz = get(sizes_i);
  const Tensor* tr = get(roi_i);
  if (scales_i < 0) {
    for (float f : n.attr_floats("scales")) scales.push_back(f);
  } else if (!tz) {
    const Tensor* ts = get(scales_i);
    TESSERA_CHECK(ts, n.describe(), ": one of 'scales' and 'sizes' must be given");
    scales = doubles(*ts);
  }
  if (tz) {
    TESSERA_CHECK(!get(scales_i), n.describe(), ": only one of 'scales' and 'sizes' may be given");
    sizes = tz->to_int_vector();
  }
  if (tr && a.coord == "tf_crop_and_resize") roi = doubles(*tr);
  Plan p = make_plan(n, a, xd, tz ? nullptr : &scales, tz ? &sizes : nullptr, tr ? &roi : nullptr);
  const Dims& od = c.out(0).dims;
  TESSERA_CHECK(p.out == od, n.describe(), ": resize plan gives ", dims_to_string(p.out), " but inference says ",
                dims_to_string(od));
  std::vector<size_t> active;
  for (size_t d = 0; d < xd.size(); ++d) {
    TESSERA_CHECK(xd[d] > 0 || od[d] == 0, n.describe(), ": cannot resize an empty axis ", d, " to ", od[d]);
    if (numel_of(od) > 0 && !identity_axis(a, xd[d], od[d], p.scale[d], p.roi_start[d], p.roi_end[d]))
      active.push_back(d);
  }
  DType dt = x.dtype();
  return {te::compute(od, [&](const Indices& iv) {
    Idx o = as_exprs(iv);
    if (numel_of(od) == 0) return te::constant(dt, 0);
    Builder b;
    std::vector<AxisTaps> taps;
    Expr extrap;
    for (size_t d : active) {
      taps.push_back(axis_taps(b, a, o[d], xd[d], od[d], p.scale[d], p.roi_start[d], p.roi_end[d], std::to_string(d)));
      if (taps.back().extrap.defined()) extrap = extrap.defined() ? (extrap || taps.back().extrap) : taps.back().extrap;
    }
    Idx in = o;
    Expr v;
    if (a.mode == Mode::Nearest) {
      for (size_t k = 0; k < active.size(); ++k) in[active[k]] = taps[k].index[0];
      v = x(in);  // one tap of weight 1: the element itself (64-bit integers pass through f64 like the reference)
      if (dt == DType::I64 || dt == DType::U64) v = f64_to(cast_to(v, DType::F64), dt);
      if (extrap.defined()) v = loop::select(extrap, f64_to(f64(a.extrapolation), dt), v);
      return b.wrap(v);
    }
    // The reference's nesting: per active axis in order, a sum over its taps
    // (weights multiplied outside in), the element times the weight product
    // innermost; taps of weight 0 contribute nothing.
    std::function<Expr(size_t, const Expr&)> acc = [&](size_t k, const Expr& wprod) -> Expr {
      if (k == active.size()) return wprod * cast_to(x(in), DType::F64);
      Expr sum;
      for (size_t t = 0; t < taps[k].index.size(); ++t) {
        in[active[k]] = taps[k].index[t];
        const Expr& w = taps[k].weight[t];
        Expr term = acc(k + 1, wprod.defined() ? wprod * w : w);
        term = loop::select(loop::eq(w, f64(0.0)), f64(0.0), term);
        sum = sum.defined() ? sum + term : term;
      }
      return sum;
    };
    v = active.empty() ? cast_to(x(in), DType::F64) : acc(0, Expr());
    if (extrap.defined()) v = loop::select(extrap, f64(a.extrapolation), v);
    return b.wrap(f64_to(v, dt));
  }, c.stage_name(""), "resize")};
}

}  // namespace

void register_resize_exprs(OpRegistry& r) {
  set(r, "Resize", resize);
  set(r, "Upsample", resize);
}

}  // namespace tessera::ops::tensor_expr
