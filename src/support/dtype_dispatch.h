// Calls a templated lambda with the C++ element type of a runtime DType:
//   dispatch_dtype(t, [&]<class T>() { ... });
#pragma once

#include <stdexcept>
#include <string>

#include "tessera/dtype.h"

namespace tessera {

template <class F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::F32: return f.template operator()<float>();
    case DType::F64: return f.template operator()<double>();
    case DType::F16: return f.template operator()<Half>();
    case DType::BF16: return f.template operator()<BFloat16>();
    case DType::I8: return f.template operator()<int8_t>();
    case DType::I16: return f.template operator()<int16_t>();
    case DType::I32: return f.template operator()<int32_t>();
    case DType::I64: return f.template operator()<int64_t>();
    case DType::U8: return f.template operator()<uint8_t>();
    case DType::U16: return f.template operator()<uint16_t>();
    case DType::U32: return f.template operator()<uint32_t>();
    case DType::U64: return f.template operator()<uint64_t>();
    case DType::Bool: return f.template operator()<bool>();
    default:
      throw std::invalid_argument("unsupported element type " + std::string(dtype_name(t)));
  }
}

// Only the float types (f16, bf16, f32, f64); others throw naming `what`.
template <class F>
decltype(auto) dispatch_float(DType t, F&& f, const char* what = "this op") {
  switch (t) {
    case DType::F32: return f.template operator()<float>();
    case DType::F64: return f.template operator()<double>();
    case DType::F16: return f.template operator()<Half>();
    case DType::BF16: return f.template operator()<BFloat16>();
    default:
      throw std::invalid_argument(std::string(what) + " does not support element type " +
                                  std::string(dtype_name(t)));
  }
}

// Arithmetic type used to compute on T: float for half types, T otherwise.
template <class T> struct ComputeType { using type = T; };
template <> struct ComputeType<Half> { using type = float; };
template <> struct ComputeType<BFloat16> { using type = float; };
template <class T> using compute_t = typename ComputeType<T>::type;

// Converts a computed value back to storage type T.
template <class T, class V>
inline T to_storage(V v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
    return T(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

}  // namespace tessera
