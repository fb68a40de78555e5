// Windowed pooling: MaxPool (with Indices, storage_order, dilations,
// ceil_mode), AveragePool (count_include_pad) and LpPool, in 1-D, 2-D and 3-D,
// and 4-D whose last window dim is trivial (a blocked video's lanes,
// [N, Cb, D, H, W, b]: a 3-D pool per lane).
#include <cmath>
#include <limits>

#include "ops/nn_ops.h"
#include "ops/op_attrs.h"

namespace tessera {

namespace {

// Visits every output position o (row-major index) of one (n, c) plane,
// calling begin(o, padded) with the number of window taps inside the padded
// input, tap(o, off, colmajor_off) for each tap inside the input, then end(o).
template <class Begin, class Tap, class End>
void for_each_window(const Geom3& g, Begin&& begin, Tap&& tap, End&& end) {
  int64_t o = 0;
  for (int64_t od = 0; od < g.out[0]; ++od)
    for (int64_t oh = 0; oh < g.out[1]; ++oh)
      for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
        const int64_t pos0[3] = {od * g.s[0] - g.pb[0], oh * g.s[1] - g.pb[1], ow * g.s[2] - g.pb[2]};
        int64_t padded = 1;
        for (int dim = 0; dim < 3; ++dim) {
          int64_t cnt = 0;
          for (int64_t k = 0; k < g.k[dim]; ++k) {
            const int64_t pos = pos0[dim] + k * g.d[dim];
            cnt += pos >= -g.pb[dim] && pos < g.in[dim] + g.pe[dim];
          }
          padded *= cnt;
        }
        begin(o, padded);
        for (int64_t kd = 0; kd < g.k[0]; ++kd) {
          const int64_t id = pos0[0] + kd * g.d[0];
          if (id < 0 || id >= g.in[0]) continue;
          for (int64_t kh = 0; kh < g.k[1]; ++kh) {
            const int64_t ih = pos0[1] + kh * g.d[1];
            if (ih < 0 || ih >= g.in[1]) continue;
            for (int64_t kw = 0; kw < g.k[2]; ++kw) {
              const int64_t iw = pos0[2] + kw * g.d[2];
              if (iw < 0 || iw >= g.in[2]) continue;
              tap(o, (id * g.in[1] + ih) * g.in[2] + iw, (iw * g.in[1] + ih) * g.in[0] + id);
            }
          }
        }
        end(o);
      }
}

struct PoolSetup {
  WindowAttrs attrs;
  Dims out_dims;
  Geom3 geom;
  int64_t planes = 0;
  int64_t lanes = 1;  // innermost positions pooled alike (the 4-D form), 1 otherwise
};

// True when spatial dim `d` of the window is trivial: one tap, stride 1, no
// padding (so the output keeps the input's extent).
bool trivial_window_dim(const WindowAttrs& a, size_t d) {
  const size_t ns = static_cast<size_t>(a.nsp);
  return a.kernel[d] == 1 && a.strides[d] == 1 && a.pads[d] == 0 && a.pads[d + ns] == 0;
}

PoolSetup pool_setup(const OpAttrs& attrs, const Dims& x, bool need_geom) {
  const Node& n = attrs.node();
  TESSERA_CHECK(x.size() >= 3, n.describe(), ": input X must have rank >= 3 (N, C, spatial...), got rank ", x.size());
  PoolSetup p;
  p.attrs = read_window_attrs(attrs, static_cast<int64_t>(x.size()) - 2, {}, true);
  std::vector<int64_t> pads;
  Dims out = window_output_dims(n, p.attrs, spatial_dims(x), &pads);
  p.out_dims = {x[0], x[1]};
  p.out_dims.insert(p.out_dims.end(), out.begin(), out.end());
  if (need_geom) {
    p.planes = x[0] * x[1];
    Dims in = spatial_dims(x);
    WindowAttrs a = p.attrs;
    if (a.nsp == 4 && trivial_window_dim(a, 3)) {
      p.lanes = in.back();
      in.pop_back(), out.pop_back(), a.kernel.pop_back(), a.strides.pop_back(), a.dilations.pop_back();
      pads.erase(pads.begin() + 7), pads.erase(pads.begin() + 3);
      a.nsp = 3;
    }
    p.geom = make_geom3(n, a, in, out, pads);
  }
  return p;
}

bool max_pool_type(DType t) { return is_float(t) || t == DType::I8 || t == DType::U8; }

void infer_max_pool(InferContext& c) {
  const TensorType& x = c.in(0);
  TESSERA_CHECK(max_pool_type(x.dtype), c.node.describe(), ": unsupported element type ", dtype_name(x.dtype));
  PoolSetup p = pool_setup(op_attrs(c), x.dims, false);
  c.out(0) = TensorType{x.dtype, p.out_dims};
  if (c.num_outputs() > 1) c.out(1) = TensorType{DType::I64, p.out_dims};
}

std::vector<Tensor> run_max_pool(const KernelContext& c) {
  const Tensor& x = c.in(0);
  TESSERA_CHECK(max_pool_type(x.dtype()), c.node.describe(), ": unsupported element type ", dtype_name(x.dtype()));
  PoolSetup p = pool_setup(op_attrs(c), x.dims(), true);
  const int64_t order = op_attrs(c).i("storage_order");
  TESSERA_CHECK(order == 0 || order == 1, c.node.describe(), ": storage_order must be 0 or 1");
  TESSERA_CHECK(order == 0 || p.lanes == 1, c.node.describe(), ": storage_order 1 needs a window of 1 to 3 dims");
  Tensor y(x.dtype(), p.out_dims);
  Tensor ind(DType::I64, p.out_dims);
  const int64_t in_plane = p.geom.in_plane(), out_plane = p.geom.out_plane(), L = p.lanes;
  dispatch_dtype(x.dtype(), [&]<class T>() {
    using A = compute_t<T>;
    for (int64_t pl = 0; pl < p.planes * L; ++pl) {
      // Plane pl / L, lane pl % L: positions i of the plane at i * L + lane.
      const int64_t lane = pl % L, base = pl / L * in_plane * L + lane;
      const T* xpl = x.data<T>() + base;
      T* yp = y.data<T>() + pl / L * out_plane * L + lane;
      int64_t* ip = ind.data<int64_t>() + pl / L * out_plane * L + lane;
      A best{};
      int64_t bi = -1;
      for_each_window(
          p.geom,
          [&](int64_t, int64_t) {
            best = std::numeric_limits<A>::lowest();
            if constexpr (std::numeric_limits<A>::has_infinity) best = -std::numeric_limits<A>::infinity();
            bi = -1;
          },
          [&](int64_t, int64_t off, int64_t colmajor) {
            const A v = static_cast<A>(xpl[off * L]);
            if (bi < 0 || v > best || (std::isnan(static_cast<double>(v)) && !std::isnan(static_cast<double>(best)))) {
              best = v;
              bi = order == 1 ? colmajor : off * L;
            }
          },
          [&](int64_t o) {
            yp[o * L] = to_storage<T>(best);
            ip[o * L] = bi < 0 ? -1 : base + bi;
          });
    }
  });
  return {y, ind};
}

void infer_float_pool(InferContext& c) {
  const TensorType& x = c.in(0);
  TESSERA_CHECK(is_float(x.dtype), c.node.describe(), ": needs a float input, got ", dtype_name(x.dtype));
  c.out(0) = TensorType{x.dtype, pool_setup(op_attrs(c), x.dims, false).out_dims};
}

// Average or Lp pooling: acc over the valid taps, then finish(acc, taps, padded).
template <class Acc, class Fin>
Tensor float_pool(const KernelContext& c, Acc acc_fn, Fin fin) {
  const Tensor& x = c.in(0);
  TESSERA_CHECK(is_float(x.dtype()), c.node.describe(), ": needs a float input, got ", dtype_name(x.dtype()));
  PoolSetup p = pool_setup(op_attrs(c), x.dims(), true);
  Tensor y(x.dtype(), p.out_dims);
  const int64_t in_plane = p.geom.in_plane(), out_plane = p.geom.out_plane(), L = p.lanes;
  dispatch_float(x.dtype(), [&]<class T>() {
    for (int64_t pl = 0; pl < p.planes * L; ++pl) {
      // Plane pl / L, lane pl % L: positions i of the plane at i * L + lane.
      const T* xpl = x.data<T>() + pl / L * in_plane * L + pl % L;
      T* yp = y.data<T>() + pl / L * out_plane * L + pl % L;
      double acc = 0;
      int64_t taps = 0, padded = 0;
      for_each_window(
          p.geom,
          [&](int64_t, int64_t pc) {
            acc = 0;
            taps = 0;
            padded = pc;
          },
          [&](int64_t, int64_t off, int64_t) {
            acc += acc_fn(static_cast<double>(static_cast<compute_t<T>>(xpl[off * L])));
            ++taps;
          },
          [&](int64_t o) { yp[o * L] = to_storage<T>(static_cast<compute_t<T>>(fin(acc, taps, padded))); });
    }
  });
  return y;
}

std::vector<Tensor> run_average_pool(const KernelContext& c) {
  const int64_t cip = op_attrs(c).i("count_include_pad");
  TESSERA_CHECK(cip == 0 || cip == 1, c.node.describe(), ": count_include_pad must be 0 or 1");
  return {float_pool(c, [](double v) { return v; }, [cip](double acc, int64_t n, int64_t padded) {
    return acc / static_cast<double>(cip ? padded : n);
  })};
}

std::vector<Tensor> run_lp_pool(const KernelContext& c) {
  const double p = lp_order(op_attrs(c));
  return {float_pool(c, [p](double v) { return p == 2.0 ? v * v : std::pow(std::fabs(v), p); },
                     [p](double acc, int64_t, int64_t) { return p == 2.0 ? std::sqrt(acc) : std::pow(acc, 1.0 / p); })};
}

}  // namespace

double lp_order(const OpAttrs& attrs) {
  const double p = attrs.f("p");  // an int p widens exactly
  TESSERA_CHECK(p > 0, attrs.node().describe(), ": p must be positive, got ", p);
  return p;
}

void register_nn_pool_ops(OpRegistry& r) {
  // Pools read every input element of each window once: one op per tap.
  auto pool_flops = [](const Node& n, const std::vector<const TensorType*>&, const std::vector<TensorType>& outs) {
    double k = 1;
    for (int64_t v : OpAttrs(n, kAnyOpset).ints("kernel_shape")) k *= static_cast<double>(v);
    return prod_dims(outs[0].dims) * k;
  };
  r.add({.name = "MaxPool", .min_opset = 1, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_max_pool, .reference = run_max_pool, .flops = pool_flops,
         .attributes = {string_attr("auto_pad", "NOTSET"), int_attr("ceil_mode", 0), ints_attr("dilations", {}),
                        ints_attr("kernel_shape").required(), ints_attr("pads", {}), int_attr("storage_order", 0),
                        ints_attr("strides", {})}});
  r.add({.name = "AveragePool", .min_opset = 1, .mapping = MappingType::ManyToMany, .linear_inputs = {0},
         .infer = infer_float_pool, .reference = run_average_pool, .flops = pool_flops,
         .attributes = {string_attr("auto_pad", "NOTSET"), int_attr("ceil_mode", 0), int_attr("count_include_pad", 0),
                        ints_attr("dilations", {}), ints_attr("kernel_shape").required(), ints_attr("pads", {}),
                        ints_attr("strides", {})}});
  r.add({.name = "LpPool", .min_opset = 1, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_float_pool, .reference = run_lp_pool, .flops = pool_flops,
         .attributes = {string_attr("auto_pad", "NOTSET"), int_attr("ceil_mode", 0), ints_attr("dilations", {}),
                        ints_attr("kernel_shape").required(), float_attr("p", 2.0f), ints_attr("pads", {}),
                        ints_attr("strides", {})}});
}

}  // namespace tessera
