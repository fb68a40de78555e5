// Whole-plane pooling (GlobalAveragePool, GlobalMaxPool, GlobalLpPool) and
// MaxUnpool, which scatters pooled values back to their argmax positions.
#include <cmath>
#include <limits>

#include "ops/nn_ops.h"

namespace tessera {

namespace {

Dims global_out(const Node& n, const Dims& x) {
  TESSERA_CHECK(x.size() >= 2, n.describe(), ": input X must have rank >= 2 (N, C, spatial...), got rank ", x.size());
  Dims d = x;
  for (size_t i = 2; i < d.size(); ++i) d[i] = 1;
  return d;
}

void infer_global(InferContext& c) {
  const TensorType& x = c.in(0);
  TESSERA_CHECK(is_float(x.dtype), c.node.describe(), ": needs a float input, got ", dtype_name(x.dtype));
  c.out(0) = TensorType{x.dtype, global_out(c.node, x.dims)};
}

enum class GlobalKind { Avg, Max, Lp };

std::vector<Tensor> run_global(const KernelContext& c, GlobalKind kind) {
  const Tensor& x = c.in(0);
  Dims od = global_out(c.node, x.dims());
  Tensor y(x.dtype(), od);
  const int64_t planes = x.dims()[0] * x.dims()[1];
  const int64_t plane = planes == 0 ? 0 : x.numel() / planes;
  const double p = kind == GlobalKind::Lp ? lp_order(op_attrs(c)) : 2.0;
  dispatch_float(x.dtype(), [&]<class T>() {
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    for (int64_t pl = 0; pl < planes; ++pl) {
      const T* q = xp + pl * plane;
      double acc = kind == GlobalKind::Max ? -std::numeric_limits<double>::infinity() : 0.0;
      for (int64_t i = 0; i < plane; ++i) {
        double v = static_cast<double>(static_cast<compute_t<T>>(q[i]));
        if (kind == GlobalKind::Max)
          acc = (v > acc || std::isnan(v)) && !std::isnan(acc) ? v : acc;
        else if (kind == GlobalKind::Avg)
          acc += v;
        else
          acc += p == 2.0 ? v * v : std::pow(std::fabs(v), p);
      }
      if (kind == GlobalKind::Avg) acc /= static_cast<double>(plane);
      if (kind == GlobalKind::Lp) acc = p == 2.0 ? std::sqrt(acc) : std::pow(acc, 1.0 / p);
      yp[pl] = to_storage<T>(static_cast<compute_t<T>>(acc));
    }
  }, c.node.op_type.c_str());
  return {y};
}

// ---------------------------------------------------------------- MaxUnpool

// The unpooled shape implied by the attributes: (in-1)*s + k - pads.
Dims unpool_default_dims(const OpAttrs& attrs, const Dims& x, WindowAttrs& a) {
  const Node& n = attrs.node();
  TESSERA_CHECK(x.size() >= 3, n.describe(), ": input X must have rank >= 3 (N, C, spatial...), got rank ", x.size());
  const size_t ns = x.size() - 2;
  a = read_window_attrs(attrs, static_cast<int64_t>(ns), {}, false);
  TESSERA_CHECK(a.auto_pad == "NOTSET", n.describe(), ": MaxUnpool has no auto_pad");
  Dims d{x[0], x[1]};
  for (size_t i = 0; i < ns; ++i) {
    int64_t in = x[i + 2];
    d.push_back(in < 0 ? -1 : (in - 1) * a.strides[i] + a.kernel[i] - a.pads[i] - a.pads[i + ns]);
    TESSERA_CHECK(d.back() != 0 && d.back() >= -1, n.describe(), ": unpooled spatial dim ", i, " would be ", d.back());
  }
  return d;
}

void infer_max_unpool(InferContext& c) {
  const TensorType& x = c.in(0);
  TESSERA_CHECK(is_float(x.dtype), c.node.describe(), ": needs a float input, got ", dtype_name(x.dtype));
  TESSERA_CHECK(c.in(1).dtype == DType::I64, c.node.describe(), ": indices I must be int64");
  WindowAttrs a;
  Dims d = unpool_default_dims(op_attrs(c), x.dims, a);
  if (c.has_input(2)) {
    std::vector<int64_t> shape;
    if (constant_ints(c, 2, shape)) {
      TESSERA_CHECK(shape.size() == d.size(), c.node.describe(), ": output_shape has ", shape.size(),
                    " values, expected ", d.size());
      d = shape;
    } else {
      d.assign(d.size(), -1);
    }
  }
  c.out(0) = TensorType{x.dtype, d};
}

std::vector<Tensor> run_max_unpool(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& ind = c.in(1);
  TESSERA_CHECK(ind.dtype() == DType::I64 && ind.dims() == x.dims(), c.node.describe(),
                ": indices I must be int64 with X's shape ", dims_to_string(x.dims()));
  WindowAttrs a;
  Dims d = unpool_default_dims(op_attrs(c), x.dims(), a);
  Dims od = d;
  if (c.has_input(2)) {
    od = c.in(2).to_int_vector();
    TESSERA_CHECK(od.size() == d.size(), c.node.describe(), ": output_shape has ", od.size(), " values, expected ",
                  d.size());
    for (int64_t v : od) TESSERA_CHECK(v >= 0, c.node.describe(), ": output_shape must be non-negative");
  }
  // Indices address the default-shaped result; with a different output_shape
  // each element keeps its coordinates (padding or cropping at the ends).
  const int64_t total = numel_of(d);
  Tensor y(x.dtype(), od);
  const Dims dstr = strides_of(d), ostr = strides_of(od);
  dispatch_float(x.dtype(), [&]<class T>() {
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    const int64_t* ip = ind.data<int64_t>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t idx = ip[i];
      TESSERA_CHECK(idx >= 0 && idx < total, c.node.describe(), ": index ", idx, " is out of range [0, ", total, ")");
      int64_t rem = idx, off = 0;
      bool inside = true;
      for (size_t k = 0; k < d.size(); ++k) {
        int64_t q = rem / dstr[k];
        rem -= q * dstr[k];
        if (q >= od[k]) inside = false;
        off += q * ostr[k];
      }
      if (inside) yp[off] = xp[i];
    }
  }, "MaxUnpool");
  return {y};
}

}  // namespace

void register_nn_global_pool_ops(OpRegistry& r) {
  auto in_flops = [](const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
    return prod_dims(ins[0]->dims);
  };
  r.add({.name = "GlobalAveragePool", .min_opset = 1, .mapping = MappingType::ManyToMany, .linear_inputs = {0},
         .infer = infer_global, .reference = [](const KernelContext& c) { return run_global(c, GlobalKind::Avg); },
         .flops = in_flops, .attributes = {}});
  r.add({.name = "GlobalMaxPool", .min_opset = 1, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_global, .reference = [](const KernelContext& c) { return run_global(c, GlobalKind::Max); },
         .flops = in_flops, .attributes = {}});
  r.add({.name = "GlobalLpPool", .min_opset = 1, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_global, .reference = [](const KernelContext& c) { return run_global(c, GlobalKind::Lp); },
         .flops = in_flops, .attributes = {float_attr("p", 2.0f)}});
  r.add({.name = "MaxUnpool", .min_opset = 9, .mapping = MappingType::ManyToMany, .linear_inputs = {0},
         .infer = infer_max_unpool, .reference = run_max_unpool,
         .attributes = {ints_attr("kernel_shape").required(), ints_attr("pads", {}), ints_attr("strides", {})}});
}

}  // namespace tessera
