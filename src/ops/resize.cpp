// Resize (opsets 10..19) and the deprecated Upsample (7, 9): separable
// nearest / linear / cubic interpolation following the ONNX reference: every
// coordinate_transformation_mode, nearest_mode, cubic_coeff_a,
// exclude_outside, extrapolation_value, antialias, axes and
// keep_aspect_ratio_policy. Each output element is the tensor product of
// per-axis 1-D interpolation weights, computed in double.
#include <algorithm>
#include <cmath>

#include "ops/nn_extra.h"
#include "ops/op_attrs.h"
#include "ops/op_helpers.h"
#include "ops/resize.h"

namespace tessera {
namespace {

bool is_upsample(const Node& n) { return n.op_type == "Upsample"; }

}  // namespace

// Mode, coordinate transform, nearest rounding, cubic / antialias options and the resized axes, all checked.
ResizeAttrs read_resize_attrs(const Node& n, int64_t opset, int64_t rank) {
  ResizeAttrs a;
  std::string mode = OpAttrs(n, opset).s("mode");
  if (mode == "nearest") {
    a.mode = ResizeMode::Nearest;
  } else if (mode == "linear" || (is_upsample(n) && mode == "bilinear")) {
    a.mode = ResizeMode::Linear;
  } else if (mode == "cubic" && !is_upsample(n) && opset >= 11) {
    a.mode = ResizeMode::Cubic;
  } else {
    TESSERA_FAIL(n.describe(), ": unsupported mode '", mode, "'");
  }
  a.legacy = is_upsample(n) || opset < 11;
  if (a.legacy) {
    a.coord = "asymmetric";
  } else {
    a.coord = OpAttrs(n, opset).s("coordinate_transformation_mode");
    static const std::vector<std::string> coords = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                                    "align_corners", "asymmetric", "tf_half_pixel_for_nn",
                                                    "tf_crop_and_resize"};
    TESSERA_CHECK(std::find(coords.begin(), coords.end(), a.coord) != coords.end(), n.describe(),
                  ": unsupported coordinate_transformation_mode '", a.coord, "'");
    a.nearest = OpAttrs(n, opset).s("nearest_mode");
    TESSERA_CHECK(a.nearest == "round_prefer_floor" || a.nearest == "round_prefer_ceil" || a.nearest == "floor" ||
                      a.nearest == "ceil",
                  n.describe(), ": unsupported nearest_mode '", a.nearest, "'");
    a.cubic_a = OpAttrs(n, opset).f("cubic_coeff_a");
    a.exclude_outside = OpAttrs(n, opset).i("exclude_outside") != 0;
    a.extrapolation = OpAttrs(n, opset).f("extrapolation_value");
    a.antialias = OpAttrs(n, opset).i("antialias") != 0;
    a.keep_aspect = OpAttrs(n, opset).s("keep_aspect_ratio_policy");
    TESSERA_CHECK(a.keep_aspect == "stretch" || a.keep_aspect == "not_larger" || a.keep_aspect == "not_smaller",
                  n.describe(), ": unsupported keep_aspect_ratio_policy '", a.keep_aspect, "'");
  }
  if (!a.legacy && n.has_attr("axes")) {
    for (int64_t ax : OpAttrs(n, opset).ints("axes")) {
      int64_t d = normalize_axis(n, ax, rank);
      TESSERA_CHECK(std::find(a.axes.begin(), a.axes.end(), d) == a.axes.end(), n.describe(),
                    ": axes has a repeated axis ", ax);
      a.axes.push_back(d);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d) a.axes.push_back(d);
  }
  return a;
}

namespace {

// `scales` or `sizes` (exactly one non-null); dims of `xd` may be -1 (then the
// matching outputs are -1).
ResizePlan make_plan(const Node& n, const ResizeAttrs& a, const Dims& xd, const std::vector<double>* scales,
                     const std::vector<int64_t>* sizes, const std::vector<double>* roi, bool need_roi = true) {
  const size_t rank = xd.size();
  const size_t na = a.axes.size();
  ResizePlan p;
  p.out = xd;
  p.scale.assign(rank, 1.0);
  p.roi_start.assign(rank, 0.0);
  p.roi_end.assign(rank, 1.0);
  if (scales) {
    TESSERA_CHECK(scales->size() == na, n.describe(), ": scales has ", scales->size(), " values but ", na,
                  " axes are resized");
    for (size_t k = 0; k < na; ++k) {
      double s = (*scales)[k];
      TESSERA_CHECK(s > 0 && std::isfinite(s), n.describe(), ": scales must be positive, got ", s);
      int64_t d = a.axes[k];
      p.scale[static_cast<size_t>(d)] = s;
      int64_t in = xd[static_cast<size_t>(d)];
      p.out[static_cast<size_t>(d)] = in < 0 ? -1 : static_cast<int64_t>(std::floor(static_cast<double>(in) * s));
    }
  } else {
    TESSERA_CHECK(sizes && sizes->size() == na, n.describe(), ": sizes has ", sizes ? sizes->size() : 0,
                  " values but ", na, " axes are resized");
    for (int64_t s : *sizes) TESSERA_CHECK(s >= 0, n.describe(), ": sizes must be non-negative, got ", s);
    if (a.keep_aspect == "stretch") {
      for (size_t k = 0; k < na; ++k) {
        size_t d = static_cast<size_t>(a.axes[k]);
        int64_t in = xd[d];
        p.out[d] = (*sizes)[k];
        p.scale[d] = in > 0 ? static_cast<double>((*sizes)[k]) / static_cast<double>(in) : 1.0;
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
  if (a.coord == "tf_crop_and_resize" && need_roi) {
    TESSERA_CHECK(roi, n.describe(), ": coordinate_transformation_mode 'tf_crop_and_resize' needs the roi input");
    TESSERA_CHECK(roi->size() == 2 * na, n.describe(), ": roi has ", roi->size(), " values, expected ", 2 * na);
    for (size_t k = 0; k < na; ++k) {
      size_t d = static_cast<size_t>(a.axes[k]);
      p.roi_start[d] = (*roi)[k];
      p.roi_end[d] = (*roi)[k + na];
    }
  }
  return p;
}

// Where the scales / sizes / roi inputs sit for this op and opset.
struct InputSlots {
  int roi = -1, scales = -1, sizes = -1;
};
InputSlots input_slots(const Node& n, int64_t opset) {
  if (is_upsample(n)) return {-1, opset >= 9 ? 1 : -1, -1};
  if (opset < 11) return {-1, 1, -1};
  return {1, 2, 3};
}

std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get_double(i);
  return v;
}

// Upsample-7 carries its scales as an attribute.
std::vector<double> attr_scales(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  TESSERA_CHECK(n.has_attr("scales"), n.describe(), ": missing required attribute 'scales'");
  std::vector<double> v;
  for (float f : attrs.floats("scales")) v.push_back(f);
  return v;
}

// Cubic convolution kernel with parameter A at distance |x|.
double cubic_kernel(double x, double A) {
  x = std::fabs(x);
  if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
  if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return 0.0;
}

void check_one_of(const Node& n, bool has_scales, bool has_sizes) {
  TESSERA_CHECK(!(has_scales && has_sizes), n.describe(), ": only one of 'scales' and 'sizes' may be given");
  TESSERA_CHECK(has_scales || has_sizes, n.describe(), ": one of 'scales' and 'sizes' must be given");
}

}  // namespace

// Reads scales (input or Upsample-7 attribute) or sizes, and roi, then plans the output.
ResizePlan resize_plan_from_inputs(const Node& n, int64_t opset, const ResizeAttrs& a, const Dims& xd,
                                   const std::function<const Tensor*(int)>& input) {
  InputSlots slots = input_slots(n, opset);
  auto get = [&](int i) -> const Tensor* {
    if (i < 0) return nullptr;
    const Tensor* t = input(i);
    return t && t->numel() > 0 ? t : nullptr;
  };
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  const Tensor* ts = get(slots.scales);
  const Tensor* tz = get(slots.sizes);
  const Tensor* tr = get(slots.roi);
  if (slots.scales < 0) {
    scales = attr_scales(OpAttrs(n, opset));
  } else {
    check_one_of(n, ts != nullptr, tz != nullptr);
    if (ts) scales = to_doubles(*ts);
  }
  if (tz) sizes = tz->to_int_vector();
  if (tr) roi = to_doubles(*tr);
  return make_plan(n, a, xd, tz ? nullptr : &scales, tz ? &sizes : nullptr, tr ? &roi : nullptr);
}

// The kernel's support (1 linear, 2 cubic) widened by 1 / scale when antialiasing a downscale.
ResizeWindow resize_tap_window(const ResizeAttrs& a, double scale) {
  const double support = a.mode == ResizeMode::Linear ? 1.0 : 2.0;
  const double s = a.antialias ? std::min(scale, 1.0) : 1.0;
  const int64_t start = static_cast<int64_t>(std::floor(-support / s)) + 1;
  return {start, 2 - start, s};
}

// Coordinate transform, then nearest index or normalised linear / cubic weights, per output index.
ResizeAxisTaps resize_axis_taps(const ResizeAttrs& a, int64_t in, int64_t out, double scale, double rs, double re) {
  ResizeAxisTaps t;
  t.taps.resize(static_cast<size_t>(out));
  t.extrap.assign(static_cast<size_t>(out), 0);
  const double in_w = static_cast<double>(in);
  const double out_w = scale * in_w;  // the reference uses the unrounded output length
  for (int64_t o = 0; o < out; ++o) {
    const double xo = static_cast<double>(o);
    double x = 0;
    const std::string& m = a.coord;
    if (m == "half_pixel") {
      x = (xo + 0.5) / scale - 0.5;
    } else if (m == "half_pixel_symmetric") {
      double adjustment = static_cast<double>(out) / out_w;
      double center = in_w / 2;
      x = center * (1 - adjustment) + (xo + 0.5) / scale - 0.5;
    } else if (m == "pytorch_half_pixel") {
      x = out > 1 ? (xo + 0.5) / scale - 0.5 : 0.0;
    } else if (m == "align_corners") {
      x = out_w == 1 ? 0.0 : xo * (in_w - 1) / (out_w - 1);
    } else if (m == "asymmetric") {
      x = xo / scale;
    } else if (m == "tf_half_pixel_for_nn") {
      x = (xo + 0.5) / scale;
    } else {  // tf_crop_and_resize
      x = out_w == 1 ? (re - rs) * (in_w - 1) / 2 : xo * (re - rs) * (in_w - 1) / (out_w - 1);
      x += rs * (in_w - 1);
      if (x < 0 || x > in_w - 1) {
        t.extrap[static_cast<size_t>(o)] = 1;
        t.identity = false;
        continue;
      }
    }
    auto& taps = t.taps[static_cast<size_t>(o)];
    const double x0 = std::floor(x);
    const double r = x - x0;
    // Clamps in floating point first so huge or NaN coordinates never overflow the cast.
    auto clampi = [&](double i) {
      return std::isnan(i) ? int64_t{0} : static_cast<int64_t>(std::clamp(i, 0.0, in_w - 1));
    };
    if (a.mode == ResizeMode::Nearest) {
      double idx;
      if (a.legacy) {
        idx = scale < 1 ? std::ceil(x) : x0;
      } else if (r == 0) {
        idx = x0;
      } else if (a.nearest == "round_prefer_floor") {
        idx = r <= 0.5 ? x0 : x0 + 1;
      } else if (a.nearest == "round_prefer_ceil") {
        idx = r < 0.5 ? x0 : x0 + 1;
      } else if (a.nearest == "floor") {
        idx = x0;
      } else {
        idx = x0 + 1;
      }
      taps.push_back({clampi(idx), 1.0});
    } else {
      const ResizeWindow win = resize_tap_window(a, scale);
      double sum = 0;
      std::vector<std::pair<double, double>> raw;  // (unclamped index, weight)
      for (int64_t i = win.start; i < win.end; ++i) {
        double arg = (static_cast<double>(i) - r) * win.arg_scale;
        double w = a.mode == ResizeMode::Linear ? std::clamp(1 - std::fabs(arg), 0.0, 1.0)
                                                : cubic_kernel(arg, a.cubic_a);
        double idx = x0 + static_cast<double>(i);
        if (a.exclude_outside && (idx < 0 || idx > in_w - 1)) w = 0;
        raw.push_back({idx, w});
        sum += w;
      }
      for (auto& [idx, w] : raw) {
        if (w == 0) continue;
        taps.push_back({clampi(idx), sum != 0 ? w / sum : w});
      }
    }
    if (taps.size() != 1 || taps[0].first != o || taps[0].second != 1.0) t.identity = false;
  }
  if (out != in) t.identity = false;
  return t;
}

namespace {

void infer_resize(InferContext& c) {
  const Node& n = c.node;
  const TensorType& x = c.in(0);
  ResizeAttrs a = read_resize_attrs(n, c.opset, x.rank());
  InputSlots slots = input_slots(n, c.opset);
  TensorType out;
  out.dtype = x.dtype;
  out.dims.assign(x.dims.size(), -1);
  // Each of scales / sizes: absent, known constant, or present but unknown.
  enum State { Absent, Known, Unknown };
  auto state_of = [&](int i, std::vector<double>& v) {
    if (i < 0 || !c.has_input(i)) return Absent;
    const TensorType& tt = c.in(i);
    if (tt.rank_known && tt.rank() == 1 && tt.dims[0] == 0) return Absent;
    const Tensor* t = c.value(i);
    if (!t) return Unknown;
    if (t->numel() == 0) return Absent;
    v = to_doubles(*t);
    return Known;
  };
  std::vector<double> scales, sizes_d, roi;
  State ss = Known;
  if (slots.scales < 0)
    scales = attr_scales(op_attrs(c));
  else
    ss = state_of(slots.scales, scales);
  State zs = state_of(slots.sizes, sizes_d);
  State rs = state_of(slots.roi, roi);
  if (ss != Unknown && zs != Unknown) {
    check_one_of(n, ss == Known, zs == Known);
    std::vector<int64_t> sizes(sizes_d.begin(), sizes_d.end());
    ResizePlan p = make_plan(c.node, a, x.dims, ss == Known ? &scales : nullptr, zs == Known ? &sizes : nullptr,
                             rs == Known ? &roi : nullptr, rs != Unknown);
    out.dims = p.out;
  }
  c.out(0) = out;
}

template <class T>
void resize_loop(const Tensor& x, Tensor& y, const std::vector<ResizeAxisTaps>& axes, double extrap) {
  const T* src = x.data<T>();
  T* dst = y.data<T>();
  const Dims& od = y.dims();
  const size_t rank = od.size();
  Dims istr = strides_of(x.dims());
  std::vector<size_t> active;
  for (size_t d = 0; d < rank; ++d)
    if (!axes[d].identity) active.push_back(d);
  std::vector<int64_t> idx(rank, 0);
  auto accumulate = [&](auto&& self, size_t k, int64_t off, double w) -> double {
    if (k == active.size()) return w * static_cast<double>(static_cast<compute_t<T>>(src[off]));
    size_t d = active[k];
    double acc = 0;
    for (const auto& [i, wi] : axes[d].taps[static_cast<size_t>(idx[d])])
      acc += self(self, k + 1, off + i * istr[d], w * wi);
    return acc;
  };
  for (int64_t e = 0; e < y.numel(); ++e) {
    bool ext = false;
    int64_t base = 0;
    for (size_t d = 0; d < rank; ++d) {
      if (axes[d].identity)
        base += idx[d] * istr[d];
      else if (axes[d].extrap[static_cast<size_t>(idx[d])])
        ext = true;
    }
    double v = ext ? extrap : accumulate(accumulate, 0, base, 1.0);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      // Like numpy's astype after interpolating in floating point: truncate, saturating.
      double lo = static_cast<double>(std::numeric_limits<T>::lowest());
      double hi = static_cast<double>(std::numeric_limits<T>::max());
      v = std::isnan(v) ? 0 : std::clamp(std::trunc(v), lo, hi);
    }
    dst[e] = to_storage<T>(static_cast<compute_t<T>>(v));
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < od[d]) break;
      idx[d] = 0;
    }
  }
}

std::vector<Tensor> run_resize(const KernelContext& c) {
  const Node& n = c.node;
  const Tensor& x = c.in(0);
  ResizeAttrs a = read_resize_attrs(n, c.opset, x.rank());
  ResizePlan p = resize_plan_from_inputs(n, c.opset, a, x.dims(), [&](int i) {
    return c.has_input(i) ? c.inputs[static_cast<size_t>(i)] : nullptr;
  });
  std::vector<ResizeAxisTaps> axes;
  for (size_t d = 0; d < p.out.size(); ++d) {
    int64_t in = x.dims()[d];
    TESSERA_CHECK(in > 0 || p.out[d] == 0, n.describe(), ": cannot resize an empty axis ", d, " to ", p.out[d]);
    axes.push_back(resize_axis_taps(a, in, p.out[d], p.scale[d], p.roi_start[d], p.roi_end[d]));
  }
  Tensor y(x.dtype(), p.out);
  dispatch_dtype(x.dtype(), [&]<class T>() { resize_loop<T>(x, y, axes, a.extrapolation); });
  return {y};
}

double resize_flops(const Node& n, const std::vector<const TensorType*>& ins, const std::vector<TensorType>& outs) {
  if (outs.empty() || !ins[0]) return 0;
  std::string mode = OpAttrs(n, kAnyOpset).s("mode");
  double per = 1;
  for (size_t d = 0; d < outs[0].dims.size() && d < ins[0]->dims.size(); ++d)
    if (outs[0].dims[d] != ins[0]->dims[d]) per *= mode == "cubic" ? 4 : mode == "nearest" ? 1 : 2;
  return static_cast<double>(numel_of(outs[0].dims)) * (mode == "nearest" ? 1 : 2 * per);
}

}  // namespace

void register_resize_ops(OpRegistry& r) {
  r.add({.name = "Resize", .min_opset = 10, .mapping = MappingType::OneToMany, .linear_inputs = {0},
         .infer = infer_resize, .reference = run_resize, .flops = resize_flops,
         .attributes = {int_attr("antialias", 0), ints_attr("axes"),
                        string_attr("coordinate_transformation_mode", "half_pixel"),
                        float_attr("cubic_coeff_a", -0.75f), int_attr("exclude_outside", 0),
                        float_attr("extrapolation_value", 0.0f), string_attr("keep_aspect_ratio_policy", "stretch"),
                        string_attr("mode", "nearest"), string_attr("nearest_mode", "round_prefer_floor")}});
  r.add({.name = "Upsample", .min_opset = 7, .mapping = MappingType::OneToMany, .linear_inputs = {0},
         .infer = infer_resize, .reference = run_resize, .flops = resize_flops,
         .attributes = {string_attr("mode", "nearest"), floats_attr("scales")}});
}

}  // namespace tessera
