// Elementwise ops: unary math, binary arithmetic with broadcasting,
// comparisons and logic. All one-to-one (or one-to-many when broadcasting).
#include <cmath>

#include "ops/op_helpers.h"

namespace tessera {

namespace {

// Applies f to every element of input 0 (float types only).
template <class F>
std::vector<Tensor> unary_float(const KernelContext& c, F f) {
  const Tensor& x = c.in(0);
  Tensor y(x.dtype(), x.dims());
  dispatch_float(x.dtype(), [&]<class T>() {
    const T* a = x.data<T>();
    T* o = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      double v = static_cast<double>(static_cast<compute_t<T>>(a[i]));
      o[i] = to_storage<T>(static_cast<compute_t<T>>(f(v)));
    }
  }, c.node.op_type.c_str());
  return {y};
}

// Broadcasting binary op on any numeric type; f(a, b) in the compute type.
template <class F>
std::vector<Tensor> binary_numeric(const KernelContext& c, F f) {
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(1);
  TESSERA_CHECK(a.dtype() == b.dtype(), c.node.describe(), ": inputs have different element types");
  Dims od = broadcast_dims(c.node, a.dims(), b.dims());
  Tensor y(a.dtype(), od);
  BroadcastIndexer ia(a.dims(), od), ib(b.dims(), od);
  dispatch_dtype(a.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) {
      TESSERA_FAIL(c.node.describe(), ": bool inputs are not supported");
    } else {
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      T* o = y.data<T>();
      for (int64_t i = 0; i < y.numel(); ++i) {
        using C = compute_t<T>;
        o[i] = to_storage<T>(static_cast<C>(f(static_cast<C>(pa[ia(i)]), static_cast<C>(pb[ib(i)]))));
      }
    }
  });
  return {y};
}

}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  r.add({.name = "Add", .min_opset = 7, .mapping = MappingType::OneToOne, .linear_inputs = {},
         .infer = infer_broadcast,
         .reference = [](const KernelContext& c) { return binary_numeric(c, [](auto a, auto b) { return a + b; }); }});
  r.add({.name = "Relu", .min_opset = 6, .mapping = MappingType::OneToOne,
         .infer = infer_same_as_input0,
         .reference = [](const KernelContext& c) { return unary_float(c, [](double v) { return v > 0 ? v : 0.0; }); }});
}

}  // namespace tessera
