// Integer division rounded down or up (C++'s `/` truncates toward zero), for
// sizes and offsets that may be negative: window positions before a padded
// edge, phases of a dilation, tiles of an extent.
#pragma once

#include <cstdint>

namespace tessera {

// floor(a / b) and ceil(a / b) for any signs; b must not be 0.
constexpr int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
constexpr int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

}  // namespace tessera
