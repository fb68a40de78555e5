// Quantized convolution and matrix product: ConvInteger, QLinearConv,
// MatMulInteger, QLinearMatMul. Products are exact in int32; requantizing
// rounds half to even and saturates to the output type.
#include <cmath>

#include "ops/nn_conv.h"
#include "ops/nn_matmul.h"

namespace tessera {

namespace {

bool is_q8(DType t) { return t == DType::U8 || t == DType::I8; }

void check_q8(const Node& n, DType t, const char* what) {
  TESSERA_CHECK(is_q8(t), n.describe(), ": ", what, " must be uint8 or int8, got ", dtype_name(t));
}

// Every element of an 8-bit tensor as int32.
std::vector<int32_t> to_i32(const Tensor& t) {
  std::vector<int32_t> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = static_cast<int32_t>(t.get_int(i));
  return v;
}

// Zero points / scales of an optional input: `count` values (a scalar input is
// repeated), or zeros when the input is absent.
std::vector<double> per_channel(const KernelContext& c, int idx, int64_t count, const char* what) {
  if (!c.has_input(idx)) return std::vector<double>(static_cast<size_t>(count), 0.0);
  const Tensor& t = c.in(idx);
  TESSERA_CHECK(t.numel() == 1 || t.numel() == count, c.node.describe(), ": ", what, " must have 1 or ", count,
                " elements, got ", t.numel());
  std::vector<double> v = nn_to_doubles(t);
  if (v.size() == 1) v.assign(static_cast<size_t>(count), v[0]);
  return v;
}

// Rounds half to even, adds the zero point and saturates to dtype `t`.
double requantize(double v, double zp, DType t) {
  double r = std::nearbyint(v) + zp;
  double lo = t == DType::U8 ? 0 : -128, hi = t == DType::U8 ? 255 : 127;
  return std::min(hi, std::max(lo, r));
}

Tensor quantized_output(DType t, const Dims& dims, const std::vector<double>& vals) {
  Tensor y(t, dims);
  for (size_t i = 0; i < vals.size(); ++i) {
    if (t == DType::U8)
      y.data<uint8_t>()[i] = static_cast<uint8_t>(vals[i]);
    else
      y.data<int8_t>()[i] = static_cast<int8_t>(vals[i]);
  }
  return y;
}

// Integer convolution of (x - xzp) and (w - wzp[m]) plus optional int32 bias.
std::vector<int32_t> int_conv(const KernelContext& c, int xi, int xzi, int wi, int wzi, const Tensor* bias,
                              ConvShape& s, Geom3& g) {
  const Tensor& x = c.in(xi);
  const Tensor& w = c.in(wi);
  check_q8(c.node, x.dtype(), "x");
  check_q8(c.node, w.dtype(), "w");
  s = conv_shape(op_attrs(c), x.dims(), w.dims());
  g = make_geom3(c.node, s.attrs, spatial_dims(x.dims()), s.out_spatial, s.pads);
  std::vector<double> xzp = per_channel(c, xzi, 1, "x_zero_point");
  std::vector<double> wzp = per_channel(c, wzi, s.M, "w_zero_point");
  std::vector<int32_t> xa = to_i32(x), wa = to_i32(w);
  for (int32_t& v : xa) v -= static_cast<int32_t>(xzp[0]);
  const int64_t per_m = w.numel() / std::max<int64_t>(s.M, 1);
  for (int64_t m = 0; m < s.M; ++m)
    for (int64_t i = 0; i < per_m; ++i) wa[static_cast<size_t>(m * per_m + i)] -= static_cast<int32_t>(wzp[m]);
  const int64_t plane = g.out_plane();
  std::vector<int32_t> acc(static_cast<size_t>(numel_of(s.out_dims())), 0);
  if (bias) {
    TESSERA_CHECK(bias->dtype() == DType::I32 && bias->numel() == s.M, c.node.describe(), ": bias B must be int32 with ",
                  s.M, " elements");
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t m = 0; m < s.M; ++m)
        std::fill_n(acc.begin() + (n * s.M + m) * plane, plane, bias->data<int32_t>()[m]);
  }
  conv_direct<int32_t>(xa.data(), wa.data(), acc.data(), s.N, s.C, s.M, s.group, g);
  return acc;
}

// ---------------------------------------------------------------- convolution

void infer_conv_integer(InferContext& c) {
  check_q8(c.node, c.in(0).dtype, "x");
  check_q8(c.node, c.in(1).dtype, "w");
  c.out(0) = TensorType{DType::I32, conv_shape(op_attrs(c), c.in(0).dims, c.in(1).dims).out_dims()};
}

std::vector<Tensor> run_conv_integer(const KernelContext& c) {
  ConvShape s;
  Geom3 g;
  std::vector<int32_t> acc = int_conv(c, 0, 2, 1, 3, nullptr, s, g);
  return {Tensor::from<int32_t>(s.out_dims(), acc)};
}

void infer_qlinear_conv(InferContext& c) {
  check_q8(c.node, c.in(0).dtype, "x");
  check_q8(c.node, c.in(3).dtype, "w");
  check_q8(c.node, c.in(7).dtype, "y_zero_point");
  c.out(0) = TensorType{c.in(7).dtype, conv_shape(op_attrs(c), c.in(0).dims, c.in(3).dims).out_dims()};
}

std::vector<Tensor> run_qlinear_conv(const KernelContext& c) {
  ConvShape s;
  Geom3 g;
  std::vector<int32_t> acc = int_conv(c, 0, 2, 3, 5, c.has_input(8) ? &c.in(8) : nullptr, s, g);
  const double xs = per_channel(c, 1, 1, "x_scale")[0];
  std::vector<double> ws = per_channel(c, 4, s.M, "w_scale");
  const double ys = per_channel(c, 6, 1, "y_scale")[0];
  const double yzp = per_channel(c, 7, 1, "y_zero_point")[0];
  const DType yt = c.in(7).dtype();
  check_q8(c.node, yt, "y_zero_point");
  const int64_t plane = g.out_plane();
  std::vector<double> out(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t m = (static_cast<int64_t>(i) / plane) % s.M;
    out[i] = requantize(static_cast<double>(acc[i]) * (xs * ws[static_cast<size_t>(m)] / ys), yzp, yt);
  }
  return {quantized_output(yt, s.out_dims(), out)};
}

// ---------------------------------------------------------------- matrix product

// Integer matmul of (a - azp[row]) and (b - bzp[col]).
std::vector<int32_t> int_matmul(const KernelContext& c, int ai, int azi, int bi, int bzi, MatMulShape& s) {
  const Tensor& a = c.in(ai);
  const Tensor& b = c.in(bi);
  check_q8(c.node, a.dtype(), "A");
  check_q8(c.node, b.dtype(), "B");
  s = matmul_shape(c.node, a.dims(), b.dims());
  std::vector<double> azp = per_channel(c, azi, s.M, "a_zero_point");
  std::vector<double> bzp = per_channel(c, bzi, s.N, "b_zero_point");
  std::vector<int32_t> av = to_i32(a), bv = to_i32(b);
  for (size_t i = 0; i < av.size(); ++i) av[i] -= static_cast<int32_t>(azp[(i / static_cast<size_t>(s.K)) % static_cast<size_t>(s.M)]);
  for (size_t i = 0; i < bv.size(); ++i) bv[i] -= static_cast<int32_t>(bzp[i % static_cast<size_t>(s.N)]);
  std::vector<int32_t> acc(static_cast<size_t>(numel_of(s.out_dims)), 0);
  matmul_batched<int32_t>(av.data(), bv.data(), acc.data(), s);
  return acc;
}

void infer_matmul_integer(InferContext& c) {
  check_q8(c.node, c.in(0).dtype, "A");
  check_q8(c.node, c.in(1).dtype, "B");
  c.out(0) = TensorType{DType::I32, matmul_shape(c.node, c.in(0).dims, c.in(1).dims).out_dims};
}

std::vector<Tensor> run_matmul_integer(const KernelContext& c) {
  MatMulShape s;
  std::vector<int32_t> acc = int_matmul(c, 0, 2, 1, 3, s);
  return {Tensor::from<int32_t>(s.out_dims, acc)};
}

void infer_qlinear_matmul(InferContext& c) {
  check_q8(c.node, c.in(0).dtype, "a");
  check_q8(c.node, c.in(3).dtype, "b");
  check_q8(c.node, c.in(7).dtype, "y_zero_point");
  c.out(0) = TensorType{c.in(7).dtype, matmul_shape(c.node, c.in(0).dims, c.in(3).dims).out_dims};
}

std::vector<Tensor> run_qlinear_matmul(const KernelContext& c) {
  MatMulShape s;
  std::vector<int32_t> acc = int_matmul(c, 0, 2, 3, 5, s);
  std::vector<double> as = per_channel(c, 1, s.M, "a_scale");
  std::vector<double> bs = per_channel(c, 4, s.N, "b_scale");
  const double ys = per_channel(c, 6, 1, "y_scale")[0];
  const double yzp = per_channel(c, 7, 1, "y_zero_point")[0];
  const DType yt = c.in(7).dtype();
  std::vector<double> out(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) {
    const size_t col = i % static_cast<size_t>(s.N);
    const size_t row = (i / static_cast<size_t>(s.N)) % static_cast<size_t>(s.M);
    out[i] = requantize(static_cast<double>(acc[i]) * (as[row] * bs[col] / ys), yzp, yt);
  }
  return {quantized_output(yt, s.out_dims, out)};
}

}  // namespace

void register_nn_quant_ops(OpRegistry& r) {
  auto conv_fl = [](int wi) {
    return [wi](const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>& outs) {
      return conv_flops(*ins[0], *ins[static_cast<size_t>(wi)], outs[0]);
    };
  };
  auto mm_fl = [](int bi) {
    return [bi](const Node& n, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
      MatMulShape s = matmul_shape(n, ins[0]->dims, ins[static_cast<size_t>(bi)]->dims);
      return 2.0 * prod_dims(s.batch) * static_cast<double>(s.M) * static_cast<double>(s.K) * static_cast<double>(s.N);
    };
  };
  const std::vector<AttrSpec> conv_attrs = {string_attr("auto_pad", "NOTSET"), ints_attr("dilations", {}),
                                            int_attr("group", 1), ints_attr("kernel_shape"), ints_attr("pads", {}),
                                            ints_attr("strides", {})};
  r.add({.name = "ConvInteger", .min_opset = 10, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_conv_integer, .reference = run_conv_integer, .flops = conv_fl(1), .attributes = conv_attrs});
  r.add({.name = "QLinearConv", .min_opset = 10, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_qlinear_conv, .reference = run_qlinear_conv, .flops = conv_fl(3), .attributes = conv_attrs});
  r.add({.name = "MatMulInteger", .min_opset = 10, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_matmul_integer, .reference = run_matmul_integer, .flops = mm_fl(1), .attributes = {}});
  r.add({.name = "QLinearMatMul", .min_opset = 10, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = infer_qlinear_matmul, .reference = run_qlinear_matmul, .flops = mm_fl(3), .attributes = {}});
}

}  // namespace tessera
