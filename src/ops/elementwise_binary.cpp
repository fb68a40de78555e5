// Binary arithmetic with numpy broadcasting: Add Sub Mul Div Pow Mod BitShift
// (legacy `broadcast`/`axis` broadcasting for Add..Pow before opset 7).
// Integer arithmetic is exact and wraps around on overflow like numpy; integer
// Div truncates toward zero (C semantics, as ONNX specifies); division by zero
// on integers is an error.
#include "ops/elementwise_common.h"
#include "ops/op_attrs.h"

namespace tessera {

namespace {

using namespace ew;

template <class W>
bool is_negative(W v) {
  if constexpr (std::is_unsigned_v<W>) return false;
  else return v < W(0);
}

// Add Sub Mul Div (and Pow) exist since opset 1 with legacy broadcasting
// before opset 7; min_opset >= 7 registers the op as is.
template <class F>
void add_binary(OpRegistry& r, const char* name, int64_t min_opset, std::vector<int> linear,
                std::vector<AttrSpec> attrs, F kernel, ValueCheckFn check = nullptr) {
  OpDef d{.name = name, .min_opset = min_opset, .mapping = MappingType::OneToOne, .broadcasts = true,
          .linear_inputs = std::move(linear), .infer = infer_binary<kNumeric>, .reference = kernel,
          .attributes = std::move(attrs), .value_check = std::move(check)};
  r.add(min_opset < 7 ? with_legacy_broadcast(std::move(d)) : std::move(d));
}

// ---------------------------------------------------------------- Div / Mod

// Integer Div and Mod by zero are errors (the compiled kernels would give 0).
ValueCheckFn nonzero_divisor(const char* what) {
  return [what](const Node& n, const std::vector<const Tensor*>& in) {
    if (in.size() < 2 || !in[1] || !is_integer(in[1]->dtype())) return;
    for (int64_t i = 0; i < in[1]->numel(); ++i)
      TESSERA_CHECK(in[1]->get_double(i) != 0, n.describe(), ": integer ", what, " by zero");
  };
}

std::vector<Tensor> div_kernel(const KernelContext& c) {
  return map_binary<kNumeric>(c, [&](auto a, auto b) {
    using W = decltype(a);
    if constexpr (std::is_floating_point_v<W>) {
      return a / b;
    } else {
      TESSERA_CHECK(b != 0, c.node.describe(), ": integer division by zero");
      if constexpr (std::is_signed_v<W>)
        if (a == std::numeric_limits<W>::min() && b == W(-1)) return a;  // wraps like numpy
      return static_cast<W>(a / b);
    }
  });
}

std::vector<Tensor> mod_kernel(const KernelContext& c) {
  int64_t fmod = op_attrs(c).i("fmod");
  TESSERA_CHECK(fmod == 0 || fmod == 1, c.node.describe(), ": fmod must be 0 or 1, got ", fmod);
  return map_binary<kNumeric>(c, [&](auto a, auto b) {
    using W = decltype(a);
    if constexpr (std::is_floating_point_v<W>) {
      W m = std::fmod(a, b);
      if (!fmod && m != 0 && ((m < 0) != (b < 0))) m += b;  // result takes the divisor's sign
      return m;
    } else {
      TESSERA_CHECK(b != 0, c.node.describe(), ": integer modulo by zero");
      if constexpr (std::is_signed_v<W>)
        if (b == W(-1)) return W(0);  // avoids min % -1 overflow
      W m = static_cast<W>(a % b);
      if (!fmod && m != 0 && (is_negative(m) != is_negative(b))) m = static_cast<W>(m + b);
      return m;
    }
  });
}

// ---------------------------------------------------------------- Pow

// Exact integer power with wrap-around; negative exponents truncate 1/b^e.
template <class W, class E>
W int_pow(W base, E e) {
  if (is_negative(e)) {
    if (base == W(1)) return W(1);
    if constexpr (std::is_signed_v<W>)
      if (base == W(-1)) return (e % 2 == 0) ? W(1) : W(-1);
    return W(0);
  }
  auto n = static_cast<uint64_t>(e);
  W result = W(1);
  while (n) {
    if (n & 1) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
    n >>= 1;
  }
  return result;
}

void infer_pow(InferContext& c) {
  require_type(c.node, c.in(0).dtype, kNumeric);
  require_type(c.node, c.in(1).dtype, kNumeric, "exponent");
  if (c.opset < 12) check_same_dtype(c.node, c.input_types);
  TensorType t = broadcast_types(c.node, c.input_types);
  t.dtype = c.in(0).dtype;
  c.out(0) = t;
}

std::vector<Tensor> pow_kernel(const KernelContext& c) {
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(1);
  Dims od = broadcast_dims(c.node, a.dims(), b.dims());
  Tensor y(a.dtype(), od);
  BroadcastIndexer ia(a.dims(), od), ib(b.dims(), od);
  dispatch_mask<kNumeric>(c.node, a.dtype(), [&]<class T>() {
    dispatch_mask<kNumeric>(c.node, b.dtype(), [&]<class E>() {
      const T* pa = a.data<T>();
      const E* pb = b.data<E>();
      T* o = y.data<T>();
      for (int64_t i = 0; i < y.numel(); ++i) {
        auto x = load(pa[ia(i)]);
        auto e = load(pb[ib(i)]);
        if constexpr (std::is_integral_v<decltype(x)> && std::is_integral_v<decltype(e)>)
          o[i] = int_pow(x, e);
        else
          o[i] = store<T>(std::pow(static_cast<double>(x), static_cast<double>(e)));
      }
    }, "exponent");
  });
  return {y};
}

// ---------------------------------------------------------------- BitShift

std::vector<Tensor> bitshift_kernel(const KernelContext& c) {
  const std::string& dir = op_attrs(c).s("direction");
  TESSERA_CHECK(dir == "LEFT" || dir == "RIGHT", c.node.describe(), ": direction must be LEFT or RIGHT, got '", dir,
                "'");
  bool left = dir == "LEFT";
  return map_binary<kUnsigned>(c, [left](auto v, auto s) {
    using W = decltype(v);
    if (s >= sizeof(W) * 8) return W(0);
    auto u = static_cast<uint64_t>(v);
    return static_cast<W>(left ? u << s : u >> s);
  });
}

}  // namespace

void register_ew_binary_ops(OpRegistry& r) {
  add_binary(r, "Add", 1, {}, {}, [](const KernelContext& c) {
    return map_binary<kNumeric>(c, [](auto a, auto b) {
      if constexpr (std::is_integral_v<decltype(a)>) return wrap_add(a, b);
      else return a + b;
    });
  });
  add_binary(r, "Sub", 1, {}, {}, [](const KernelContext& c) {
    return map_binary<kNumeric>(c, [](auto a, auto b) {
      if constexpr (std::is_integral_v<decltype(a)>) return wrap_sub(a, b);
      else return a - b;
    });
  });
  add_binary(r, "Mul", 1, {0, 1}, {}, [](const KernelContext& c) {
    return map_binary<kNumeric>(c, [](auto a, auto b) {
      if constexpr (std::is_integral_v<decltype(a)>) return wrap_mul(a, b);
      else return a * b;
    });
  });
  add_binary(r, "Div", 1, {0}, {}, div_kernel, nonzero_divisor("division"));
  add_binary(r, "Mod", 10, {}, {int_attr("fmod", 0)}, mod_kernel, nonzero_divisor("modulo"));
  r.add(with_legacy_broadcast({.name = "Pow", .min_opset = 7, .mapping = MappingType::OneToOne, .broadcasts = true,
                               .infer = infer_pow, .reference = pow_kernel}));
  r.add({.name = "BitShift", .min_opset = 11, .mapping = MappingType::OneToOne, .broadcasts = true, .infer = infer_binary<kUnsigned>,
         .reference = bitshift_kernel, .attributes = {string_attr("direction").required()}});
}

}  // namespace tessera
