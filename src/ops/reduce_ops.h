// Registration hooks of the reduction family (called from register_reduce_ops)
// and small helpers shared by its files.
#pragma once

#include <cmath>
#include <limits>

#include "ops/registry.h"

namespace tessera {

void register_reduce_arg_ops(OpRegistry& r);  // ArgMax, ArgMin, TopK
void register_reduce_cum_ops(OpRegistry& r);  // CumSum, CumProd
void register_reduce_det_ops(OpRegistry& r);  // Det

// Converts a computed double to storage type T: floats round, integers
// truncate toward zero with NaN -> 0 and out-of-range values saturating (so no
// undefined behaviour on -inf, huge or NaN results).
template <class T>
T saturate_cast(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return T(0);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return static_cast<T>(v);
  } else {
    return T(static_cast<float>(v));  // Half, BFloat16
  }
}

}  // namespace tessera
