// Activation functions: Relu LeakyRelu Elu Selu Celu ThresholdedRelu
// HardSigmoid HardSwish Softplus Softsign Mish Gelu Shrink Swish, plus the
// two-input PRelu and the bounded Clip. All one-to-one. Before opset 6 most
// took `consumed_inputs` (no effect); before opset 7 PRelu's slope is shared
// or per channel.
#include "ops/elementwise_common.h"
#include "ops/op_attrs.h"

namespace tessera {

namespace {

using namespace ew;

constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kPi = 3.14159265358979323846;

template <class W>
bool is_negative(W v) {
  if constexpr (std::is_unsigned_v<W>) return false;
  else return v < W(0);
}

double softplus(double v) {
  // log(1 + exp(v)) without overflow for large |v|.
  return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
}

// A float activation whose function depends on the node's attributes: make(node)
// returns the double -> double function.
// min_opset 6: the op exists since opset 1, where it also took `consumed_inputs`
// (Relu LeakyRelu Elu Selu HardSigmoid).
template <unsigned Mask = kFloat, class Make>
void add_act(OpRegistry& r, const char* name, int64_t min_opset, std::vector<AttrSpec> attrs, Make make) {
  OpDef d{.name = name, .min_opset = min_opset, .mapping = MappingType::OneToOne, .infer = infer_unary<Mask>,
          .reference = [make](const KernelContext& c) { return map_unary<Mask>(c, make(op_attrs(c))); },
          .attributes = std::move(attrs)};
  r.add(min_opset == 6 ? with_consumed_inputs(std::move(d)) : std::move(d));
}

// ---------------------------------------------------------------- PRelu

// Before opset 7 the slope holds either one value shared by all elements or
// one value per channel (axis 1 of X), whatever its shape. Returns the dims
// the slope takes for broadcasting against X ({} or {C, 1, ..., 1}).
Dims legacy_slope_dims(const Node& n, const Dims& x, const Dims& s) {
  int64_t count = numel_of(s);
  if (count == 1) return {};
  TESSERA_CHECK(x.size() >= 2 && count == x[1], n.describe(), ": before opset 7 the slope ", dims_to_string(s),
                " must have 1 element or one per channel (axis 1) of the input ", dims_to_string(x));
  Dims d(x.size() - 1, 1);
  d[0] = count;
  return d;
}

void infer_prelu(InferContext& c) {
  check_removed_attr(c.node, c.opset, "consumed_inputs", 6);
  require_type(c.node, c.in(0).dtype, kNumeric);
  check_same_dtype(c.node, c.input_types);
  const TensorType& x = c.in(0);
  const TensorType& s = c.in(1);
  if (c.opset < 7) {
    if (x.rank_known && s.fully_known() && (numel_of(s.dims) == 1 || x.rank() < 2 || x.dims[1] >= 0))
      legacy_slope_dims(c.node, x.dims, s.dims);
  } else if (x.rank_known && s.rank_known) {
    TESSERA_CHECK(s.rank() <= x.rank(), c.node.describe(), ": slope ", s.to_string(),
                  " has a higher rank than the input ", x.to_string());
    Dims b = broadcast_dims(c.node, x.dims, s.dims);
    for (size_t i = 0; i < b.size(); ++i)
      TESSERA_CHECK(x.dims[i] < 0 || b[i] == x.dims[i], c.node.describe(), ": slope ", s.to_string(),
                    " does not broadcast to the input ", x.to_string());
  }
  c.out(0) = x;
}

std::vector<Tensor> prelu(const KernelContext& c) {
  check_removed_attr(c.node, c.opset, "consumed_inputs", 6);
  const Tensor& x = c.in(0);
  const Tensor s = c.opset < 7 ? c.in(1).reshaped(legacy_slope_dims(c.node, x.dims(), c.in(1).dims())) : c.in(1);
  TESSERA_CHECK(x.dtype() == s.dtype(), c.node.describe(), ": input and slope have different element types");
  TESSERA_CHECK(s.rank() <= x.rank() && broadcast_dims(c.node, x.dims(), s.dims()) == x.dims(), c.node.describe(),
                ": slope ", dims_to_string(s.dims()), " does not broadcast to the input ", dims_to_string(x.dims()));
  Tensor y(x.dtype(), x.dims());
  BroadcastIndexer is(s.dims(), x.dims());
  dispatch_mask<kNumeric>(c.node, x.dtype(), [&]<class T>() {
    const T* px = x.data<T>();
    const T* ps = s.data<T>();
    T* o = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      auto v = load(px[i]);
      if constexpr (std::is_floating_point_v<decltype(v)>) o[i] = store<T>(v < 0 ? v * load(ps[is(i)]) : v);
      else o[i] = is_negative(v) ? wrap_mul(v, load(ps[is(i)])) : px[i];
    }
  });
  return {y};
}

// ---------------------------------------------------------------- Clip

void infer_clip(InferContext& c) {
  require_type(c.node, c.in(0).dtype, c.opset < 11 ? kFloat : kNumeric);
  check_same_dtype(c.node, c.input_types);
  for (int i = 1; i < 3; ++i)
    if (c.has_input(i) && c.in(i).rank_known && c.in(i).fully_known())
      TESSERA_CHECK(numel_of(c.in(i).dims) == 1, c.node.describe(), ": ", i == 1 ? "min" : "max",
                    " must be a scalar, got ", c.in(i).to_string());
  c.out(0) = c.in(0);
}

std::vector<Tensor> clip(const KernelContext& c) {
  const Tensor& x = c.in(0);
  Tensor y(x.dtype(), x.dims());
  dispatch_mask<kNumeric>(c.node, x.dtype(), [&]<class T>() {
    using W = work_t<T>;
    W lo = std::numeric_limits<W>::lowest(), hi = std::numeric_limits<W>::max();
    if constexpr (std::is_floating_point_v<W>) {
      lo = -std::numeric_limits<W>::infinity();
      hi = std::numeric_limits<W>::infinity();
    }
    if (c.opset < 11) {
      TESSERA_CHECK((is_floatlike_v<T>), c.node.describe(), ": Clip before opset 11 needs a float input");
      lo = static_cast<W>(op_attrs(c).f("min"));
      hi = static_cast<W>(op_attrs(c).f("max"));
    } else {
      for (int i = 1; i < 3; ++i) {
        if (!c.has_input(i)) continue;
        const Tensor& b = c.in(i);
        TESSERA_CHECK(b.dtype() == x.dtype(), c.node.describe(), ": ", i == 1 ? "min" : "max",
                      " has element type ", dtype_name(b.dtype()), ", expected ", dtype_name(x.dtype()));
        TESSERA_CHECK(b.numel() == 1, c.node.describe(), ": ", i == 1 ? "min" : "max",
                      " must be a scalar, got shape ", dims_to_string(b.dims()));
        (i == 1 ? lo : hi) = load(b.data<T>()[0]);
      }
    }
    const T* px = x.data<T>();
    T* o = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      W v = load(px[i]);
      if (v < lo) v = lo;
      if (v > hi) v = hi;  // min > max: everything becomes max
      o[i] = store<T>(v);
    }
  });
  return {y};
}

}  // namespace

void register_ew_activation_ops(OpRegistry& r) {
  add_act<kFloat | kSigned>(r, "Relu", 6, {}, [](const OpAttrs&) {
    return [](auto v) { return v < 0 ? decltype(v)(0) : v; };  // NaN stays NaN, as in torch
  });
  add_act(r, "LeakyRelu", 6, {float_attr("alpha", 0.01f)}, [](const OpAttrs& at) {
    double a = at.f("alpha");
    return [a](double v) { return v >= 0 ? v : a * v; };
  });
  add_act(r, "Elu", 6, {float_attr("alpha", 1.0f)}, [](const OpAttrs& at) {
    double a = at.f("alpha");
    return [a](double v) { return v >= 0 ? v : a * std::expm1(v); };
  });
  const std::vector<AttrSpec> selu = {float_attr("alpha", 1.67326319217681884765625f),
                                      float_attr("gamma", 1.05070102214813232421875f)};
  add_act(r, "Selu", 6, selu, [](const OpAttrs& at) {
    double a = at.f("alpha");
    double g = at.f("gamma");
    return [a, g](double v) { return v > 0 ? g * v : g * (a * std::exp(v) - a); };
  });
  add_act(r, "Celu", 12, {float_attr("alpha", 1.0f)}, [](const OpAttrs& at) {
    double a = at.f("alpha");
    TESSERA_CHECK(a != 0, at.node().describe(), ": alpha must be non-zero");
    return [a](double v) { return max_keep_nan(0.0, v) + min_keep_nan(0.0, a * std::expm1(v / a)); };
  });
  // Opsets 1-9 had the same op as an experimental one.
  add_act(r, "ThresholdedRelu", 1, {float_attr("alpha", 1.0f)}, [](const OpAttrs& at) {
    double a = at.f("alpha");
    return [a](double v) { return v > a ? v : 0.0; };
  });
  add_act(r, "HardSigmoid", 6, {float_attr("alpha", 0.2f), float_attr("beta", 0.5f)}, [](const OpAttrs& at) {
    double a = at.f("alpha"), b = at.f("beta");
    return [a, b](double v) { return max_keep_nan(0.0, min_keep_nan(1.0, a * v + b)); };
  });
  add_act(r, "HardSwish", 14, {}, [](const OpAttrs&) {
    return [](double v) { return v * max_keep_nan(0.0, min_keep_nan(1.0, v / 6.0 + 0.5)); };
  });
  add_act(r, "Softplus", 1, {}, [](const OpAttrs&) { return [](double v) { return softplus(v); }; });
  add_act(r, "Softsign", 1, {}, [](const OpAttrs&) { return [](double v) { return v / (1.0 + std::fabs(v)); }; });
  add_act(r, "Mish", 18, {}, [](const OpAttrs&) { return [](double v) { return v * std::tanh(softplus(v)); }; });
  add_act(r, "Gelu", 20, {string_attr("approximate", "none")}, [](const OpAttrs& at) {
    std::string ap = at.s("approximate");
    TESSERA_CHECK(ap == "none" || ap == "tanh", at.node().describe(), ": approximate must be 'none' or 'tanh', got '",
                  ap, "'");
    bool tanh_form = ap == "tanh";
    return [tanh_form](double v) {
      if (tanh_form) return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / kPi) * (v + 0.044715 * v * v * v)));
      return 0.5 * v * (1.0 + std::erf(v / kSqrt2));
    };
  });
  add_act<kNumeric>(r, "Shrink", 9, {float_attr("bias", 0.0f), float_attr("lambd", 0.5f)}, [](const OpAttrs& at) {
    double bias = at.f("bias"), lambd = at.f("lambd");
    return [bias, lambd](auto w) {
      double v = static_cast<double>(w);
      return v < -lambd ? v + bias : (v > lambd ? v - bias : 0.0);
    };
  });
  add_act(r, "Swish", 24, {float_attr("alpha", 1.0f)}, [](const OpAttrs& at) {
    double a = at.f("alpha");
    return [a](double v) { return v / (1.0 + std::exp(-a * v)); };
  });

  r.add({.name = "PRelu", .min_opset = 1, .mapping = MappingType::OneToOne, .broadcasts = true, .infer = infer_prelu,
         .reference = prelu, .attributes = {ints_attr("consumed_inputs")}});
  r.add(with_consumed_inputs({.name = "Clip", .min_opset = 6, .mapping = MappingType::OneToOne, .infer = infer_clip,
                              .reference = clip,
                              .attributes = {float_attr("min", -std::numeric_limits<float>::infinity()),
                                             float_attr("max", std::numeric_limits<float>::infinity())}}));
}

}  // namespace tessera
