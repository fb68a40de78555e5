// Linear quantization: QuantizeLinear, DequantizeLinear (per-tensor, per-axis
// and blocked scales) and DynamicQuantizeLinear. Integer targets only
// (int8/uint8/int16/uint16/int32); float8 and int4 types are not represented.
//   QuantizeLinear:   y = saturate(round_half_even(x / scale) + zero_point)
//   DequantizeLinear: y = (x - zero_point) * scale
#include "ops/elementwise_common.h"
#include "ops/op_attrs.h"
#include "support/int_div.h"

namespace tessera {

namespace {

using namespace ew;

// How a scale (and zero point) tensor maps onto the elements of x.
struct QuantLayout {
  enum Kind { PerTensor, PerAxis, Blocked } kind = PerTensor;
  int64_t block = 0;  // block size along axis (Blocked)
  int64_t dim = 1;    // x.dims[axis]
  int64_t inner = 1;  // elements after axis
  int64_t sdim = 1;   // scale.dims[axis]

  int64_t scale_index(int64_t i) const {
    if (kind == PerTensor) return 0;
    int64_t a = (i / inner) % dim;
    if (kind == PerAxis) return a;
    int64_t outer = i / (dim * inner);
    return (outer * sdim + a / block) * inner + i % inner;
  }
};

// Validates the scale shape against x (dims may be -1 at inference time, in
// which case the checks that need them are skipped).
QuantLayout quant_layout(const OpAttrs& attrs, const Dims& x, const Dims& s) {
  const Node& n = attrs.node();
  QuantLayout l;
  int64_t block = attrs.i("block_size");
  TESSERA_CHECK(block >= 0, n.describe(), ": block_size must be >= 0, got ", block);
  bool s_known = std::all_of(s.begin(), s.end(), [](int64_t d) { return d >= 0; });
  if (block == 0 && s.size() <= 1 && (s.empty() || s[0] == 1)) return l;
  int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = normalize_axis(n, attrs.i("axis"), rank);
  auto ax = static_cast<size_t>(axis);
  l.dim = x[ax];
  l.inner = 1;
  for (size_t d = ax + 1; d < x.size(); ++d) l.inner *= x[d];
  if (block == 0) {
    TESSERA_CHECK(s.size() == 1, n.describe(), ": scale of shape ", dims_to_string(s),
                  " must be a scalar or 1-D (per-axis) without block_size");
    TESSERA_CHECK(s[0] < 0 || x[ax] < 0 || s[0] == x[ax], n.describe(), ": per-axis scale has ", s[0],
                  " elements but axis ", axis, " of the input has ", x[ax]);
    l.kind = QuantLayout::PerAxis;
    return l;
  }
  TESSERA_CHECK(static_cast<int64_t>(s.size()) == rank, n.describe(), ": blocked scale of shape ",
                dims_to_string(s), " must have the input's rank ", rank);
  for (size_t d = 0; d < x.size(); ++d) {
    if (s[d] < 0 || x[d] < 0) continue;
    int64_t want = d == ax ? ceil_div(x[d], block) : x[d];
    TESSERA_CHECK(s[d] == want, n.describe(), ": blocked scale of shape ", dims_to_string(s),
                  " does not match input ", dims_to_string(x), " with block_size ", block, " on axis ", axis);
  }
  l.kind = QuantLayout::Blocked;
  l.block = block;
  l.sdim = s_known ? s[ax] : -1;
  return l;
}

bool is_quant_int(DType t) {
  return t == DType::I8 || t == DType::U8 || t == DType::I16 || t == DType::U16 || t == DType::I32;
}

void check_zero_point(const Node& n, const TensorType* s, const TensorType* zp) {
  if (!zp || !s || !s->fully_known() || !zp->fully_known()) return;
  TESSERA_CHECK(zp->dims.size() == s->dims.size() || numel_of(zp->dims) == 1, n.describe(), ": zero point ",
                zp->to_string(), " and scale ", s->to_string(), " have different shapes");
}

// QuantizeLinear's output type: the zero point's, else output_dtype, else uint8.
DType quant_out_type(const OpAttrs& attrs, const TensorType* zp) {
  const Node& n = attrs.node();
  int64_t od = attrs.i("output_dtype");
  DType d = DType::U8;
  if (zp && zp->dtype != DType::Undefined) {
    d = zp->dtype;
    TESSERA_CHECK(od == 0 || od == static_cast<int64_t>(d), n.describe(), ": output_dtype ", od,
                  " differs from the zero point's type ", dtype_name(d));
  } else if (od != 0) {
    TESSERA_CHECK(od > 0 && od <= 0x7fffffff && dtype_supported(static_cast<int32_t>(od)), n.describe(),
                  ": output_dtype ", od, " is not supported");
    d = static_cast<DType>(od);
  }
  TESSERA_CHECK(is_quant_int(d), n.describe(), ": quantizing to ", dtype_name(d), " is not supported");
  return d;
}

// Rounds a double to the precision of float type p (the type x / scale is
// computed in).
double round_to(DType p, double v) {
  switch (p) {
    case DType::F32: return static_cast<float>(v);
    case DType::F16: return static_cast<float>(Half(static_cast<float>(v)));
    case DType::BF16: return static_cast<float>(BFloat16(static_cast<float>(v)));
    default: return v;
  }
}

// Reads any numeric tensor as doubles.
std::vector<double> as_doubles(const Node& n, const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  dispatch_mask<kNumeric>(n, t.dtype(), [&]<class T>() {
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = static_cast<double>(load(p[i]));
  });
  return v;
}

// Writes round_half_even(q) saturated to the integer type of y.
void store_saturated(const Node& n, Tensor& y, int64_t i, double q) {
  dispatch_mask<kInt>(n, y.dtype(), [&]<class T>() {
    double lo = static_cast<double>(std::numeric_limits<T>::min());
    double hi = static_cast<double>(std::numeric_limits<T>::max());
    y.data<T>()[i] = std::isnan(q) ? T(0) : static_cast<T>(std::min(hi, std::max(lo, q)));
  });
}

// ---------------------------------------------------------------- QuantizeLinear

void infer_quantize(InferContext& c) {
  const TensorType& x = c.in(0);
  const TensorType& s = c.in(1);
  TESSERA_CHECK(x.dtype == DType::Undefined || is_float(x.dtype) || x.dtype == DType::I32, c.node.describe(),
                ": input element type ", dtype_name(x.dtype), " is not supported");
  require_type(c.node, s.dtype, kFloat, "scale");
  const TensorType* zp = c.has_input(2) ? &c.in(2) : nullptr;
  check_zero_point(c.node, &s, zp);
  if (x.rank_known && s.rank_known) quant_layout(op_attrs(c), x.dims, s.dims);
  c.out(0) = x;
  c.out(0).dtype = quant_out_type(op_attrs(c), zp);
}

std::vector<Tensor> quantize(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& s = c.in(1);
  TESSERA_CHECK(is_float(x.dtype()) || x.dtype() == DType::I32, c.node.describe(), ": input element type ",
                dtype_name(x.dtype()), " is not supported");
  require_type(c.node, s.dtype(), kFloat, "scale");
  const Tensor* zp = c.has_input(2) ? &c.in(2) : nullptr;
  TensorType zpt = zp ? TensorType{zp->dtype(), zp->dims(), true} : TensorType{};
  DType out = quant_out_type(op_attrs(c), zp ? &zpt : nullptr);
  QuantLayout l = quant_layout(op_attrs(c), x.dims(), s.dims());
  if (zp)
    TESSERA_CHECK(zp->dims() == s.dims() || (zp->numel() == 1 && s.numel() == 1), c.node.describe(),
                  ": zero point shape ", dims_to_string(zp->dims()), " differs from scale shape ",
                  dims_to_string(s.dims()));
  // x / scale is computed in x's float type (numpy semantics); int32 x in double.
  int64_t prec_attr = op_attrs(c).i("precision");
  DType prec = prec_attr ? static_cast<DType>(prec_attr) : (x.dtype() == DType::I32 ? DType::F64 : x.dtype());
  TESSERA_CHECK(is_float(prec), c.node.describe(), ": precision ", prec_attr, " is not a supported float type");
  std::vector<double> xs = as_doubles(c.node, x), ss = as_doubles(c.node, s);
  std::vector<double> zs = zp ? as_doubles(c.node, *zp) : std::vector<double>(ss.size(), 0.0);
  Tensor y(out, x.dims());
  for (int64_t i = 0; i < x.numel(); ++i) {
    auto si = static_cast<size_t>(l.scale_index(i));
    double q = std::nearbyint(round_to(prec, xs[static_cast<size_t>(i)] / round_to(prec, ss[si])));
    store_saturated(c.node, y, i, q + zs[si]);
  }
  return {y};
}

// ---------------------------------------------------------------- DequantizeLinear

DType dequant_out_type(const OpAttrs& attrs, DType scale) {
  const Node& n = attrs.node();
  int64_t od = attrs.i("output_dtype");
  if (od == 0) return scale;
  TESSERA_CHECK(od > 0 && od <= 0x7fffffff && dtype_supported(static_cast<int32_t>(od)) &&
                    is_float(static_cast<DType>(od)),
                n.describe(), ": output_dtype ", od, " is not a supported float type");
  return static_cast<DType>(od);
}

void infer_dequantize(InferContext& c) {
  const TensorType& x = c.in(0);
  const TensorType& s = c.in(1);
  TESSERA_CHECK(x.dtype == DType::Undefined || is_quant_int(x.dtype), c.node.describe(), ": input element type ",
                dtype_name(x.dtype), " is not supported");
  require_type(c.node, s.dtype, kFloat, "scale");
  const TensorType* zp = c.has_input(2) ? &c.in(2) : nullptr;
  if (zp) check_same_dtype(c.node, {&x, zp});
  check_zero_point(c.node, &s, zp);
  if (x.rank_known && s.rank_known) quant_layout(op_attrs(c), x.dims, s.dims);
  c.out(0) = x;
  c.out(0).dtype = dequant_out_type(op_attrs(c), s.dtype);
}

std::vector<Tensor> dequantize(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const Tensor& s = c.in(1);
  TESSERA_CHECK(is_quant_int(x.dtype()), c.node.describe(), ": input element type ", dtype_name(x.dtype()),
                " is not supported");
  require_type(c.node, s.dtype(), kFloat, "scale");
  const Tensor* zp = c.has_input(2) ? &c.in(2) : nullptr;
  QuantLayout l = quant_layout(op_attrs(c), x.dims(), s.dims());
  if (zp) {
    TESSERA_CHECK(zp->dtype() == x.dtype(), c.node.describe(), ": zero point type ", dtype_name(zp->dtype()),
                  " differs from the input's ", dtype_name(x.dtype()));
    TESSERA_CHECK(zp->dims() == s.dims() || (zp->numel() == 1 && s.numel() == 1), c.node.describe(),
                  ": zero point shape ", dims_to_string(zp->dims()), " differs from scale shape ",
                  dims_to_string(s.dims()));
  }
  std::vector<double> xs = as_doubles(c.node, x), ss = as_doubles(c.node, s);
  std::vector<double> zs = zp ? as_doubles(c.node, *zp) : std::vector<double>(ss.size(), 0.0);
  Tensor y(dequant_out_type(op_attrs(c), s.dtype()), x.dims());
  dispatch_mask<kFloat>(c.node, y.dtype(), [&]<class T>() {
    T* o = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      auto si = static_cast<size_t>(l.scale_index(i));
      o[i] = store<T>((xs[static_cast<size_t>(i)] - zs[si]) * ss[si]);
    }
  });
  return {y};
}

// ---------------------------------------------------------------- DynamicQuantizeLinear

void infer_dynamic_quantize(InferContext& c) {
  require_type(c.node, c.in(0).dtype, kFloat);
  TESSERA_CHECK(c.in(0).dtype == DType::Undefined || c.in(0).dtype == DType::F32, c.node.describe(),
                ": input must be f32, got ", dtype_name(c.in(0).dtype));
  c.out(0) = c.in(0);
  c.out(0).dtype = DType::U8;
  c.out(1) = TensorType{DType::F32, {}, true};
  c.out(2) = TensorType{DType::U8, {}, true};
}

// Computed in float32 like the ONNX reference: the range always includes 0.
std::vector<Tensor> dynamic_quantize(const KernelContext& c) {
  const Tensor& x = c.in(0);
  TESSERA_CHECK(x.dtype() == DType::F32, c.node.describe(), ": input must be f32, got ", dtype_name(x.dtype()));
  const float* p = x.data<float>();
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    TESSERA_CHECK(!std::isnan(p[i]), c.node.describe(), ": input contains NaN");
    lo = std::min(lo, p[i]);
    hi = std::max(hi, p[i]);
  }
  float scale = (hi - lo) / 255.0f;
  float zp = 0;
  if (scale != 0) zp = std::nearbyint(std::min(255.0f, std::max(0.0f, 0.0f - lo / scale)));
  Tensor y(DType::U8, x.dims());
  uint8_t* o = y.data<uint8_t>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    float q = scale != 0 ? std::nearbyint(p[i] / scale) + zp : zp;
    o[i] = static_cast<uint8_t>(std::min(255.0f, std::max(0.0f, q)));
  }
  return {y, Tensor::scalar<float>(scale), Tensor::scalar<uint8_t>(static_cast<uint8_t>(zp))};
}

double quant_flops(const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>& outs) {
  return 2.0 * static_cast<double>(numel_of(outs.at(0).dims));
}

}  // namespace

void register_quantize_ops(OpRegistry& r) {
  r.add({.name = "QuantizeLinear", .min_opset = 10, .mapping = MappingType::OneToOne, .infer = infer_quantize,
         .reference = quantize, .flops = quant_flops,
         .attributes = {int_attr("axis", 1), int_attr("block_size", 0), int_attr("output_dtype", 0),
                        int_attr("saturate", 1), int_attr("precision", 0)}});
  r.add({.name = "DequantizeLinear", .min_opset = 10, .mapping = MappingType::OneToOne, .infer = infer_dequantize,
         .reference = dequantize, .flops = quant_flops,
         .attributes = {int_attr("axis", 1), int_attr("block_size", 0), int_attr("output_dtype", 0)}});
  r.add({.name = "DynamicQuantizeLinear", .min_opset = 11, .mapping = MappingType::ManyToMany,
         .infer = infer_dynamic_quantize, .reference = dynamic_quantize,
         .flops = [](const Node&, const std::vector<const TensorType*>& ins, const std::vector<TensorType>&) {
           return 4.0 * static_cast<double>(numel_of(ins.at(0)->dims));
         }});
}

}  // namespace tessera
