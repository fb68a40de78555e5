// Small helpers shared by the nn_extra op files (resize, attention, RNNs,
// losses, signal, vision): whole-tensor conversion to and from double.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/op_helpers.h"

namespace tessera {

// Every element of a float tensor as double (throws naming `what` otherwise).
inline std::vector<double> float_values(const Tensor& t, const char* what) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  dispatch_float(t.dtype(), [&]<class T>() {
    const T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(static_cast<compute_t<T>>(p[i]));
  }, what);
  return v;
}

// A float tensor of the given dtype and dims holding `v` (rounded to the dtype).
inline Tensor float_tensor(DType dt, const Dims& dims, const std::vector<double>& v, const char* what) {
  Tensor t(dt, dims);
  dispatch_float(dt, [&]<class T>() {
    T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = to_storage<T>(static_cast<compute_t<T>>(v[i]));
  }, what);
  return t;
}

// Every element of a numeric tensor (any dtype but string) as double.
inline std::vector<double> numeric_values(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  dispatch_dtype(t.dtype(), [&]<class T>() {
    const T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(static_cast<compute_t<T>>(p[i]));
  });
  return v;
}

// A tensor of any numeric dtype holding `v`; integer types truncate toward zero and
// saturate (NaN becomes 0), as numpy's astype after a float computation.
inline Tensor numeric_tensor(DType dt, const Dims& dims, const std::vector<double>& v) {
  Tensor t(dt, dims);
  dispatch_dtype(dt, [&]<class T>() {
    T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) {
      double x = v[i];
      if constexpr (std::is_same_v<T, bool>) {
        p[i] = x != 0;
      } else if constexpr (std::is_integral_v<T>) {
        x = std::isnan(x) ? 0.0
                          : std::clamp(std::trunc(x), static_cast<double>(std::numeric_limits<T>::lowest()),
                                       static_cast<double>(std::numeric_limits<T>::max()));
        p[i] = static_cast<T>(x);
      } else {
        p[i] = to_storage<T>(static_cast<compute_t<T>>(x));
      }
    }
  });
  return t;
}

// Product of dims where all are known, -1 otherwise.
inline int64_t known_product(std::initializer_list<int64_t> ds) {
  int64_t p = 1;
  for (int64_t d : ds) {
    if (d < 0) return -1;
    p *= d;
  }
  return p;
}

}  // namespace tessera
