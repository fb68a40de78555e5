// Sampling-grid vision ops: GridSample (opset 16 names bilinear/bicubic,
// opset 20 N-D with linear/cubic) and AffineGrid (opset 20). GridSample is
// computed as a tensor product of per-axis 1-D taps (nearest: 1, linear: 2,
// cubic: 4 with A = -0.75) with zeros / border / reflection padding.
// RoiAlign, Col2Im and DeformConv live in vision_roi.cpp / vision_conv.cpp.
#include <algorithm>
#include <cmath>

#include "ops/nn_extra.h"
#include "ops/nn_extra_util.h"
#include "ops/op_attrs.h"

namespace tessera {
namespace {

// ---- GridSample --------------------------------------------------------------

enum class GsMode { Nearest, Linear, Cubic };
enum class GsPad { Zeros, Border, Reflection };

GsMode gs_mode(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  std::string m = attrs.s("mode");
  if (m == "nearest") return GsMode::Nearest;
  if (m == "linear" || m == "bilinear") return GsMode::Linear;
  if (m == "cubic" || m == "bicubic") return GsMode::Cubic;
  TESSERA_FAIL(n.describe(), ": unsupported mode '", m, "'");
}

GsPad gs_pad(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  std::string p = attrs.s("padding_mode");
  if (p == "zeros") return GsPad::Zeros;
  if (p == "border") return GsPad::Border;
  if (p == "reflection") return GsPad::Reflection;
  TESSERA_FAIL(n.describe(), ": unsupported padding_mode '", p, "'");
}

void infer_grid_sample(InferContext& c) {
  const Node& n = c.node;
  const TensorType& x = c.in(0);
  const TensorType& g = c.in(1);
  TESSERA_CHECK(x.rank() >= 3, n.describe(), ": X must have rank >= 3, got ", x.rank());
  TESSERA_CHECK(g.rank() == x.rank(), n.describe(), ": grid rank ", g.rank(), " must equal X rank ", x.rank());
  TESSERA_CHECK(is_float(g.dtype), n.describe(), ": grid must be a float tensor");
  const int64_t r = x.rank() - 2;
  TESSERA_CHECK(g.dims.back() < 0 || g.dims.back() == r, n.describe(), ": grid last dim must be ", r);
  gs_mode(op_attrs(c));
  gs_pad(op_attrs(c));
  Dims out = {x.dims[0] >= 0 ? x.dims[0] : g.dims[0], x.dims[1]};
  for (int64_t i = 0; i < r; ++i) out.push_back(g.dims[static_cast<size_t>(1 + i)]);
  c.out(0) = TensorType{x.dtype, out};
}

double cubic_w(double x) {  // cubic convolution kernel, A = -0.75
  const double A = -0.75;
  x = std::fabs(x);
  if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
  if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return 0;
}

// Reflects x into [lo, hi] by bouncing off the borders.
double reflect(double x, double lo, double hi) {
  double rng = hi - lo;
  if (rng <= 0) return lo;
  if (x < lo) {
    double dx = lo - x;
    double k = std::floor(dx / rng);
    double r = dx - k * rng;
    return std::fmod(k, 2.0) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi;
    double k = std::floor(dx / rng);
    double r = dx - k * rng;
    return std::fmod(k, 2.0) == 0 ? hi - r : lo + r;
  }
  return x;
}

std::vector<Tensor> run_grid_sample(const KernelContext& c) {
  const Node& n = c.node;
  const Tensor& X = c.in(0);
  const Tensor& G = c.in(1);
  const int64_t r = X.rank() - 2;
  TESSERA_CHECK(r >= 1 && G.rank() == X.rank() && G.dim(-1) == r && G.dim(0) == X.dim(0), n.describe(),
                ": grid shape ", dims_to_string(G.dims()), " does not fit X shape ", dims_to_string(X.dims()));
  TESSERA_CHECK(is_float(G.dtype()), n.describe(), ": grid must be a float tensor");
  const GsMode mode = gs_mode(op_attrs(c));
  const GsPad pad = gs_pad(op_attrs(c));
  const bool align = op_attrs(c).i("align_corners") != 0;
  const int64_t N = X.dim(0), C = X.dim(1);
  Dims in_sp(X.dims().begin() + 2, X.dims().end());
  Dims out_sp(G.dims().begin() + 1, G.dims().end() - 1);
  const int64_t in_sz = numel_of(in_sp), out_sz = numel_of(out_sp);
  Dims out_dims = {N, C};
  out_dims.insert(out_dims.end(), out_sp.begin(), out_sp.end());
  std::vector<double> x = numeric_values(X), g = float_values(G, "GridSample");
  std::vector<double> y(static_cast<size_t>(numel_of(out_dims)));
  Dims istr = strides_of(in_sp);
  const size_t R = static_cast<size_t>(r);
  std::vector<std::vector<std::pair<int64_t, double>>> taps(R);
  std::vector<size_t> pick(R);
  for (int64_t b = 0; b < N; ++b)
    for (int64_t o = 0; o < out_sz; ++o) {
      // Spatial axis d (0 = outermost) reads grid component r-1-d (grid holds x, y, z...).
      bool nan_point = false;
      for (size_t d = 0; d < R; ++d) {
        const double L = static_cast<double>(in_sp[d]);
        double gv = g[static_cast<size_t>((b * out_sz + o) * r + (r - 1 - static_cast<int64_t>(d)))];
        double xc = align ? (gv + 1) / 2 * (L - 1) : ((gv + 1) * L - 1) / 2;
        if (std::isnan(xc) || (pad == GsPad::Reflection && std::isinf(xc))) {
          nan_point = true;
          xc = 0;
        }
        // For zeros/border, far-outside coordinates behave like nearer out-of-range ones;
        // clamping keeps the integer casts in range (reflection folds them back itself).
        if (pad != GsPad::Reflection) xc = std::clamp(xc, -L - 4, 2 * L + 4);
        if (mode == GsMode::Nearest) xc = std::nearbyint(xc);
        const double lo = align ? 0 : -0.5, hi = align ? L - 1 : L - 0.5;
        if (xc < lo || xc > hi) {
          if (pad == GsPad::Border) xc = std::clamp(xc, 0.0, L - 1);
          else if (pad == GsPad::Reflection) xc = reflect(xc, lo, hi);
        }
        auto& t = taps[d];
        t.clear();
        if (mode == GsMode::Nearest) {
          t.push_back({static_cast<int64_t>(xc), 1.0});
        } else if (mode == GsMode::Linear) {
          double f = std::floor(xc);
          t.push_back({static_cast<int64_t>(f), f + 1 - xc});
          t.push_back({static_cast<int64_t>(f) + 1, xc - f});
        } else {
          double f = std::floor(xc), dx = xc - f;
          for (int k = -1; k <= 2; ++k) t.push_back({static_cast<int64_t>(f) + k, cubic_w(dx - k)});
        }
        // Integer tap indices follow the padding mode.
        for (auto& [i, w] : t) {
          if (pad == GsPad::Border) {
            i = std::clamp<int64_t>(i, 0, in_sp[d] - 1);
          } else if (pad == GsPad::Reflection) {
            i = static_cast<int64_t>(reflect(static_cast<double>(i), lo, hi));
            i = std::clamp<int64_t>(i, 0, in_sp[d] - 1);
          } else if (i < 0 || i >= in_sp[d]) {
            w = 0;
            i = 0;
          }
        }
      }
      for (int64_t ch = 0; ch < C; ++ch) {
        const double* img = &x[static_cast<size_t>((b * C + ch) * in_sz)];
        double acc = 0;
        std::fill(pick.begin(), pick.end(), 0);
        for (;;) {
          double w = 1;
          int64_t off = 0;
          for (size_t d = 0; d < R; ++d) {
            w *= taps[d][pick[d]].second;
            off += taps[d][pick[d]].first * istr[d];
          }
          if (w != 0) acc += w * img[off];
          bool done = true;
          for (size_t d = R; d-- > 0;) {
            if (++pick[d] < taps[d].size()) {
              done = false;
              break;
            }
            pick[d] = 0;
          }
          if (done) break;
        }
        y[static_cast<size_t>((b * C + ch) * out_sz + o)] = nan_point ? NAN : acc;
      }
    }
  return {numeric_tensor(X.dtype(), out_dims, y)};
}

// ---- AffineGrid --------------------------------------------------------------

void infer_affine_grid(InferContext& c) {
  const Node& n = c.node;
  const TensorType& th = c.in(0);
  TESSERA_CHECK(is_float(th.dtype), n.describe(), ": theta must be a float tensor");
  TESSERA_CHECK(th.rank() == 3, n.describe(), ": theta must be 3-D ([N, 2, 3] or [N, 3, 4])");
  std::vector<int64_t> size;
  if (constant_ints(c, 1, size)) {
    TESSERA_CHECK(size.size() == 4 || size.size() == 5, n.describe(), ": size must have 4 or 5 values");
    Dims out = {size[0]};
    out.insert(out.end(), size.begin() + 2, size.end());
    out.push_back(static_cast<int64_t>(size.size()) - 2);
    c.out(0) = TensorType{th.dtype, out};
    return;
  }
  int64_t r = th.dims[1] == 2 ? 2 : th.dims[1] == 3 ? 3 : -1;
  TensorType t{th.dtype, {}};
  if (r < 0) {
    t.rank_known = false;
  } else {
    t.dims.assign(static_cast<size_t>(r + 2), -1);
    t.dims[0] = th.dims[0];
    t.dims.back() = r;
  }
  c.out(0) = t;
}

std::vector<Tensor> run_affine_grid(const KernelContext& c) {
  const Node& n = c.node;
  const Tensor& th = c.in(0);
  std::vector<int64_t> size = c.in(1).to_int_vector();
  TESSERA_CHECK(size.size() == 4 || size.size() == 5, n.describe(), ": size must have 4 or 5 values");
  const int64_t r = static_cast<int64_t>(size.size()) - 2;
  const int64_t N = size[0];
  TESSERA_CHECK(th.dims() == Dims({N, r, r + 1}), n.describe(), ": theta must be [", N, ", ", r, ", ", r + 1,
                "], got ", dims_to_string(th.dims()));
  const bool align = op_attrs(c).i("align_corners") != 0;
  Dims sp(size.begin() + 2, size.end());
  for (int64_t s : sp) TESSERA_CHECK(s >= 0, n.describe(), ": negative size ", s);
  auto base = [&](int64_t i, int64_t L) {
    if (align) return L <= 1 ? 0.0 : -1 + 2.0 * static_cast<double>(i) / static_cast<double>(L - 1);
    return -1 + (2.0 * static_cast<double>(i) + 1) / static_cast<double>(L);
  };
  std::vector<double> t = float_values(th, "AffineGrid");
  const int64_t P = numel_of(sp);
  std::vector<double> out(static_cast<size_t>(N * P * r));
  Dims str = strides_of(sp);
  std::vector<double> coord(static_cast<size_t>(r + 1));
  for (int64_t b = 0; b < N; ++b)
    for (int64_t p = 0; p < P; ++p) {
      // coord = (x, y[, z], 1): x is the innermost spatial axis.
      for (int64_t d = 0; d < r; ++d) {
        int64_t idx = (p / str[static_cast<size_t>(d)]) % sp[static_cast<size_t>(d)];
        coord[static_cast<size_t>(r - 1 - d)] = base(idx, sp[static_cast<size_t>(d)]);
      }
      coord[static_cast<size_t>(r)] = 1;
      for (int64_t k = 0; k < r; ++k) {
        double acc = 0;
        for (int64_t j = 0; j <= r; ++j) acc += t[static_cast<size_t>((b * r + k) * (r + 1) + j)] * coord[static_cast<size_t>(j)];
        out[static_cast<size_t>((b * P + p) * r + k)] = acc;
      }
    }
  Dims od = {N};
  od.insert(od.end(), sp.begin(), sp.end());
  od.push_back(r);
  return {float_tensor(th.dtype(), od, out, "AffineGrid")};
}

}  // namespace

void register_vision_ops(OpRegistry& r) {
  r.add({.name = "GridSample", .min_opset = 16, .mapping = MappingType::ManyToMany, .linear_inputs = {0},
         .infer = infer_grid_sample, .reference = run_grid_sample,
         .flops = [](const Node& n, const std::vector<const TensorType*>& ins, const std::vector<TensorType>& outs) {
           double taps = 1;
           std::string m = OpAttrs(n, kAnyOpset).s("mode");
           for (size_t d = 2; d < outs[0].dims.size(); ++d) taps *= m == "nearest" ? 1 : (m == "cubic" || m == "bicubic") ? 4 : 2;
           return 2 * taps * static_cast<double>(numel_of(outs[0].dims));
         },
         .attributes = {int_attr("align_corners", 0), string_attr("mode", "linear"),
                        string_attr("padding_mode", "zeros")}});
  r.add({.name = "AffineGrid", .min_opset = 20, .mapping = MappingType::OneToMany, .linear_inputs = {0},
         .infer = infer_affine_grid, .reference = run_affine_grid,
         .flops = [](const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>& outs) {
           return outs.empty() ? 0.0 : 2.0 * static_cast<double>(numel_of(outs[0].dims)) * static_cast<double>(outs[0].dims.back() + 1);
         },
         .attributes = {int_attr("align_corners", 0)}});
  register_roi_align_ops(r);
  register_col2im_ops(r);
}

}  // namespace tessera
