// Registration hooks of the reduction family (called from register_reduce_ops)
// and small helpers shared by its files.
#pragma once

#include <cmath>
#include <limits>

#include "ops/op_attrs.h"
#include "ops/registry.h"
#include <vector>

namespace tessera {

void register_reduce_arg_ops(OpRegistry& r);  // ArgMax, ArgMin, TopK
void register_reduce_cum_ops(OpRegistry& r);  // CumSum, CumProd
void register_reduce_det_ops(OpRegistry& r);  // Det

// The Reduce* ops' attributes, read once for inference, the reference and the
// tensor expression.
struct ReduceAttrs {
  std::vector<int64_t> axes;  // the attribute (opsets before axes became an input)
  bool keepdims = true;
  bool noop_with_empty_axes = false;
};
ReduceAttrs reduce_attrs(const OpAttrs& a);
// Normalised, sorted reduced axes of a rank-`rank` input from the written
// list (attribute or input); an empty list means every axis unless
// noop_with_empty_axes is set (then none: each element is reduced on its own,
// so Sum/Mean/Max/Min/Prod/LogSumExp return x, SumSquare x^2, L1/L2 |x| and
// LogSum log x — the reduction of a one-element set). Throws naming `n`.
std::vector<int64_t> resolve_reduce_axes(const Node& n, const ReduceAttrs& a, std::vector<int64_t> axes, int64_t rank);

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
