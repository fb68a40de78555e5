// Shared machinery of the elementwise op family: element-type classes, typed
// element loops for unary, binary (broadcasting) and variadic ops, and the
// per-file registration functions called by register_elementwise_ops.
//
// Kernels work on a "work type": double for the float types (f16/bf16/f32/f64
// are widened exactly, the result is rounded once to the storage type) and the
// storage type itself for integers and bool, so integer ops stay exact.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/op_attrs.h"
#include "ops/op_helpers.h"

namespace tessera {

void register_ew_unary_ops(OpRegistry& r);       // elementwise_unary.cpp
void register_ew_activation_ops(OpRegistry& r);  // elementwise_activation.cpp
void register_ew_binary_ops(OpRegistry& r);      // elementwise_binary.cpp
void register_ew_variadic_ops(OpRegistry& r);    // elementwise_variadic.cpp
void register_ew_logic_ops(OpRegistry& r);       // elementwise_logic.cpp
void register_cast_ops(OpRegistry& r);           // cast.cpp
void register_quantize_ops(OpRegistry& r);       // quantize.cpp

namespace ew {

// ---------------------------------------------------------------- old opsets
// (elementwise_legacy.cpp) Each wrapper lowers the def's min_opset to 1, adds
// the legacy attributes to its list and keeps the newer semantics unchanged.

// Throws naming the node when it carries `attr` at an opset >= `removed_in`.
void check_removed_attr(const Node& n, int64_t opset, const char* attr, int64_t removed_in);
// Legacy (opset < 7) broadcasting of B to A: with broadcast=0 the shapes must
// be equal; with broadcast=1 B's dims are matched to A's starting at `axis`
// (default: suffix matching), each equal to A's or 1. Returns B's dims padded
// with 1s to A's rank (-1 dims are accepted for inference).
Dims legacy_broadcast_b_dims(const OpAttrs& attrs, const Dims& a, const Dims& b);
// Binary ops (Add Sub Mul Div Pow And Or Xor Equal Greater Less): before
// opset 7 `broadcast`/`axis` (legacy broadcasting, output = A's shape), before
// opset 6 also `consumed_inputs`.
OpDef with_legacy_broadcast(OpDef d);
// Variadic ops (Max Min Sum Mean): before `numpy_opset` all inputs must have
// equal shapes; `consumed_inputs` before opset 6.
OpDef with_equal_shapes_before(OpDef d, int64_t numpy_opset);
// Ops whose only change at opset 6 was dropping `consumed_inputs`.
OpDef with_consumed_inputs(OpDef d);

// Element-type classes, combined as bit masks.
enum : unsigned {
  kFloat = 1,     // f16, bf16, f32, f64
  kSigned = 2,    // i8 .. i64
  kUnsigned = 4,  // u8 .. u64
  kBool = 8,
  kInt = kSigned | kUnsigned,
  kNumeric = kFloat | kInt,
  kAny = kNumeric | kBool,
};

template <class T>
constexpr bool is_half_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <class T>
constexpr bool is_floatlike_v = std::is_floating_point_v<T> || is_half_v<T>;

template <class T>
constexpr unsigned class_of() {
  if constexpr (std::is_same_v<T, bool>) return kBool;
  else if constexpr (is_floatlike_v<T>) return kFloat;
  else if constexpr (std::is_signed_v<T>) return kSigned;
  else return kUnsigned;
}

inline unsigned class_of(DType t) {
  if (t == DType::Bool) return kBool;
  if (is_float(t)) return kFloat;
  if (is_integer(t)) return is_signed(t) ? kSigned : kUnsigned;
  return 0;
}

// Throws naming the node when `t` is not in `mask` (Undefined passes, for
// inference on values whose type is not known yet).
inline void require_type(const Node& n, DType t, unsigned mask, const char* role = "input") {
  if (t == DType::Undefined) return;
  TESSERA_CHECK(class_of(t) & mask, n.describe(), ": ", role, " element type ", dtype_name(t),
                " is not supported by ", n.op_type);
}

template <class T>
using work_t = std::conditional_t<is_floatlike_v<T>, double, T>;

template <class T>
inline work_t<T> load(T v) {
  if constexpr (is_half_v<T>) return static_cast<double>(static_cast<float>(v));
  else return static_cast<work_t<T>>(v);
}

// Converts a work value to storage type T. Float -> integer conversion
// truncates and saturates (NaN -> 0) instead of invoking undefined behaviour.
template <class T, class V>
inline T store(V v) {
  if constexpr (is_half_v<T>) {
    return T(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != V(0);
  } else if constexpr (std::is_integral_v<T> && std::is_floating_point_v<V>) {
    if (std::isnan(v)) return T(0);
    if (v <= static_cast<V>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    if (v >= static_cast<V>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

// max(a, b) and min(a, b) that return b when either is NaN: with the data as
// b, a NaN propagates as in torch (std::max(0.0, NaN) is 0). These are the
// loop IR's float Max/Min (x86 maxps/minps), so compiled kernels agree.
inline double max_keep_nan(double a, double b) { return a > b ? a : b; }
inline double min_keep_nan(double a, double b) { return a < b ? a : b; }

// Dispatches on `t` but only instantiates `f` for element types in Mask;
// other types throw naming the node.
template <unsigned Mask, class F>
void dispatch_mask(const Node& n, DType t, F&& f, const char* role = "input") {
  require_type(n, t, Mask, role);
  dispatch_dtype(t, [&]<class T>() {
    if constexpr ((class_of<T>() & Mask) != 0) f.template operator()<T>();
  });
}

// y = f(x) elementwise over input 0; f takes and returns the work type.
// Out = Undefined keeps the input type; DType::Bool stores f's result as bool.
template <unsigned Mask, class F>
std::vector<Tensor> map_unary(const KernelContext& c, F f, DType out = DType::Undefined) {
  const Tensor& x = c.in(0);
  Tensor y(out == DType::Undefined ? x.dtype() : out, x.dims());
  dispatch_mask<Mask>(c.node, x.dtype(), [&]<class T>() {
    const T* a = x.data<T>();
    if (out == DType::Bool) {
      bool* o = y.data<bool>();
      for (int64_t i = 0; i < x.numel(); ++i) o[i] = static_cast<bool>(f(load(a[i])));
    } else {
      T* o = y.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) o[i] = store<T>(f(load(a[i])));
    }
  });
  return {y};
}

// Broadcasting binary op over inputs 0 and 1 of the same element type;
// f(a, b) takes work values. Out: as in map_unary.
template <unsigned Mask, class F>
std::vector<Tensor> map_binary(const KernelContext& c, F f, DType out = DType::Undefined) {
  const Tensor& a = c.in(0);
  const Tensor& b = c.in(1);
  TESSERA_CHECK(a.dtype() == b.dtype(), c.node.describe(), ": inputs have different element types (",
                dtype_name(a.dtype()), " and ", dtype_name(b.dtype()), ")");
  Dims od = broadcast_dims(c.node, a.dims(), b.dims());
  Tensor y(out == DType::Undefined ? a.dtype() : out, od);
  BroadcastIndexer ia(a.dims(), od), ib(b.dims(), od);
  dispatch_mask<Mask>(c.node, a.dtype(), [&]<class T>() {
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    if (out == DType::Bool) {
      bool* o = y.data<bool>();
      for (int64_t i = 0; i < y.numel(); ++i) o[i] = static_cast<bool>(f(load(pa[ia(i)]), load(pb[ib(i)])));
    } else {
      T* o = y.data<T>();
      for (int64_t i = 0; i < y.numel(); ++i) o[i] = store<T>(f(load(pa[ia(i)]), load(pb[ib(i)])));
    }
  });
  return {y};
}

// Integer arithmetic that wraps around like numpy instead of overflowing.
template <class T>
inline T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <class T>
inline T wrap_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
}
template <class T>
inline T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  // Promote small types to unsigned int so the product itself cannot overflow int.
  using P = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
  return static_cast<T>(static_cast<U>(static_cast<P>(static_cast<U>(a)) * static_cast<P>(static_cast<U>(b))));
}

// Inference: output 0 = input 0's type after checking its element class.
template <unsigned Mask>
void infer_unary(InferContext& c) {
  require_type(c.node, c.in(0).dtype, Mask);
  c.out(0) = c.in(0);
}

// Inference: same-typed inputs broadcast, output dtype = input dtype (or `out`).
template <unsigned Mask, DType Out = DType::Undefined>
void infer_binary(InferContext& c) {
  for (int i = 0; i < c.num_inputs(); ++i)
    if (c.has_input(i)) require_type(c.node, c.in(i).dtype, Mask);
  check_same_dtype(c.node, c.input_types);
  TensorType t = broadcast_types(c.node, c.input_types);
  if constexpr (Out != DType::Undefined) t.dtype = Out;
  c.out(0) = t;
}

}  // namespace ew
}  // namespace tessera
