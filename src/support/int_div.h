// Integer division rounded down or up (C++'s `/` truncates toward zero), for
// sizes and offsets that may be negative: window positions before a padded
// edge, phases of a dilation, tiles of an extent; and rounding up or down to
// a multiple (tiles, alignments, pages).
#pragma once

#include <concepts>
#include <cstdint>
#include <type_traits>

namespace tessera {

// floor(a / b) and ceil(a / b) for any signs; b must not be 0.
constexpr int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
constexpr int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// x rounded up to a multiple of m (m > 0): the least multiple of m not below
// x, for any sign of a signed x; sizes and addresses keep their unsigned type.
template <std::integral T>
constexpr T round_up(T x, std::type_identity_t<T> m) {
  if constexpr (std::is_signed_v<T>) return static_cast<T>(ceil_div(x, m) * m);
  else return (x + m - 1) / m * m;
}

// x rounded down to a multiple of m (m > 0): the greatest multiple of m not
// above x, for any sign of a signed x.
template <std::integral T>
constexpr T round_down(T x, std::type_identity_t<T> m) {
  if constexpr (std::is_signed_v<T>) return static_cast<T>(floor_div(x, m) * m);
  else return x / m * m;
}

}  // namespace tessera
